#pragma once
// TimerQueue: the timers of one isolate (setTimeout, setInterval): their ids, when each is due
// (a heap of due times), whose each is (its owner, the app context that set it, and the request
// it was set for, 0 for none) and how many each owner has. Bookkeeping only: it holds each
// timer's callback but never calls it (EventLoop runs it in a turn), so its rules are tested
// without an isolate (tests/timer_queue_test.cc).
//
// A cleared timer leaves its heap entry until it comes up, where it is skipped; once stale
// entries outnumber live timers the heap is rebuilt from the live ones, so set-and-clear loops
// cannot grow it (a cleared 24-day timer would otherwise stay that long).
//
// Thread rule: one thread (its isolate's executor thread).

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <queue>
#include <unordered_map>
#include <utility>
#include <vector>

#include "util/clock.h"

namespace isolane {

template <typename Owner, typename Callback>
class TimerQueue {
 public:
  // A timer that came due, handed over to run.
  struct Fired {
    std::uint32_t id;
    Owner* owner;
    std::uint64_t request;
    Callback callback;
  };

  // Ids continue after `lastId` (tests start near the wrap-around).
  explicit TimerQueue(std::uint32_t lastId = 0) : nextId_(lastId) {}

  // Sets a timer due at `now + interval`, and every `interval` after that when `repeat`. Its id
  // is never 0 and unique among the live timers (ids wrap around, past those still in use).
  std::uint32_t add(Owner* owner, std::uint64_t request, Callback callback,
                    std::chrono::nanoseconds interval, bool repeat, SteadyTime now) {
    do {
      if (++nextId_ == 0) nextId_ = 1;
    } while (timers_.count(nextId_));
    std::uint32_t id = nextId_;
    std::uint64_t generation = ++seq_;
    timers_.emplace(id, Timer{owner, request, std::move(callback), interval, repeat, generation});
    ++perOwner_[owner];
    heap_.push(Entry{now + interval, generation, id});
    return id;
  }

  // Clears timer `id` if `owner` set it (an app cannot clear another's). True when it did.
  bool clear(std::uint32_t id, const Owner* owner) {
    auto it = timers_.find(id);
    if (it == timers_.end() || it->second.owner != owner) return false;
    erase(it);
    compact();
    return true;
  }

  // Clears those of `ids` that `request` set (some may be gone already). Only these: a scan of
  // every timer would make each answer cost O(timers).
  void clearOfRequest(const std::vector<std::uint32_t>& ids, std::uint64_t request) {
    for (std::uint32_t id : ids) {
      auto it = timers_.find(id);
      if (it != timers_.end() && it->second.request == request) erase(it);
    }
    compact();
  }

  // Clears every timer `owner` set.
  void clearOfOwner(const Owner* owner) {
    for (auto it = timers_.begin(); it != timers_.end();) {
      it = it->second.owner == owner ? erase(it) : std::next(it);
    }
    compact();
  }

  // Clears every timer (their callbacks go before the isolate does).
  void clearAll() {
    timers_.clear();
    perOwner_.clear();
    heap_ = {};
  }

  // The timers `owner` set outside any request become `request`'s; `adopted(id)` for each.
  template <typename Adopted>
  void adopt(const Owner* owner, std::uint64_t request, Adopted&& adopted) {
    for (auto& [id, timer] : timers_) {
      if (timer.owner == owner && timer.request == 0) {
        timer.request = request;
        adopted(id);
      }
    }
  }

  bool has(std::uint32_t id) const { return timers_.count(id) != 0; }
  std::size_t size() const { return timers_.size(); }
  std::size_t countOf(const Owner* owner) const {
    auto it = perOwner_.find(owner);
    return it == perOwner_.end() ? 0 : it->second;
  }
  // Heap entries, live and stale (for tests of the compaction).
  std::size_t heapSize() const { return heap_.size(); }

  // When the earliest timer is due. It may be one cleared since: waking early is harmless.
  std::optional<SteadyTime> nextDue() const {
    if (heap_.empty()) return std::nullopt;
    return heap_.top().due;
  }

  // A timer due at or before `now`, earliest first (in the order they were set, among equal
  // times). A one-shot timer is removed and its callback handed over; a repeating one stays,
  // due again at now + interval (so never again in a pass that keeps the same `now`), and
  // `copy(callback)` is handed over.
  template <typename Copy>
  std::optional<Fired> popDue(SteadyTime now, Copy&& copy) {
    while (!heap_.empty() && heap_.top().due <= now) {
      Entry entry = heap_.top();
      heap_.pop();
      auto it = timers_.find(entry.id);
      if (it == timers_.end() || it->second.generation != entry.generation) continue;  // cleared
      Timer& timer = it->second;
      Fired fired{entry.id, timer.owner, timer.request, Callback{}};
      if (timer.repeat) {
        timer.generation = ++seq_;
        heap_.push(Entry{now + timer.interval, timer.generation, entry.id});
        fired.callback = copy(timer.callback);
      } else {
        fired.callback = std::move(timer.callback);
        erase(it);
      }
      return fired;
    }
    return std::nullopt;
  }

 private:
  struct Timer {
    Owner* owner;
    std::uint64_t request;  // 0: set outside any request (a module's top level)
    Callback callback;
    std::chrono::nanoseconds interval;
    bool repeat;
    std::uint64_t generation;  // matches its live heap entry
  };
  struct Entry {
    SteadyTime due;
    std::uint64_t generation;  // also the order among equal due times
    std::uint32_t id;
    bool operator>(const Entry& o) const {
      return due != o.due ? due > o.due : generation > o.generation;
    }
  };
  using Timers = std::unordered_map<std::uint32_t, Timer>;

  typename Timers::iterator erase(typename Timers::iterator it) {
    auto owner = perOwner_.find(it->second.owner);
    if (owner != perOwner_.end() && --owner->second == 0) perOwner_.erase(owner);
    return timers_.erase(it);
  }

  void compact() {
    if (heap_.size() <= 2 * timers_.size() + kStaleAllowance) return;
    std::vector<Entry> live;
    live.reserve(timers_.size());
    while (!heap_.empty()) {
      const Entry& e = heap_.top();
      auto it = timers_.find(e.id);
      if (it != timers_.end() && it->second.generation == e.generation) live.push_back(e);
      heap_.pop();
    }
    heap_ = decltype(heap_)(std::greater<>(), std::move(live));
  }

  static constexpr std::size_t kStaleAllowance = 1024;

  Timers timers_;
  std::unordered_map<const Owner*, std::size_t> perOwner_;
  std::priority_queue<Entry, std::vector<Entry>, std::greater<>> heap_;
  std::uint32_t nextId_;
  std::uint64_t seq_ = 0;
};

}  // namespace isolane
