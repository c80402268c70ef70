#pragma once
// A bounded multi-producer queue. Full is an answer, not a wait: tryPush returns false and the
// producer takes its stated action (reject with a typed error, or shed with 503).

#include <cstddef>
#include <deque>
#include <iterator>
#include <utility>
#include <vector>

#include "util/guarded.h"

namespace isolane {

template <typename T>
class BoundedQueue {
 public:
  explicit BoundedQueue(std::size_t capacity) : capacity_(capacity) {}

  // Safe from any thread. False when the queue is at its bound or closed; `item` is then
  // untouched.
  bool tryPush(T& item) {
    auto q = items_.lock();
    if (q->closed || q->items.size() >= capacity_) return false;
    q->items.push_back(std::move(item));
    return true;
  }

  // Safe from any thread. Every later tryPush fails, so a consumer that closes and then drains
  // knows it has seen every item.
  void close() { items_.lock()->closed = true; }

  // Safe from any thread (a snapshot: it may change at once).
  std::size_t size() { return items_.lock()->items.size(); }

  // Safe from any thread. Moves the oldest item into `out`; false when there is none.
  bool tryPop(T& out) {
    auto q = items_.lock();
    if (q->items.empty()) return false;
    out = std::move(q->items.front());
    q->items.pop_front();
    return true;
  }

  // Safe from any thread. Moves every item `matches` into `out` (appended), oldest first.
  template <typename Pred>
  void takeAllIf(Pred matches, std::vector<T>& out) {
    auto q = items_.lock();
    for (auto it = q->items.begin(); it != q->items.end();) {
      if (matches(*it)) {
        out.push_back(std::move(*it));
        it = q->items.erase(it);
      } else {
        ++it;
      }
    }
  }

  // Safe from any thread. Moves into `out` the item with the least `score` among the oldest
  // `window` (the oldest of those on a tie); false when the queue is empty. `tookOldest`, when
  // given, says whether it was the oldest of all (none older stays behind).
  template <typename Score>
  bool takeLeast(Score score, std::size_t window, T& out, bool* tookOldest = nullptr) {
    auto q = items_.lock();
    if (q->items.empty()) return false;
    auto best = q->items.begin();
    if (q->items.size() > 1) {
      auto bestScore = score(*best);
      std::size_t seen = 1;
      for (auto it = std::next(best); it != q->items.end() && seen < window; ++it, ++seen) {
        auto s = score(*it);
        if (s < bestScore) {
          best = it;
          bestScore = s;
        }
      }
    }
    if (tookOldest) *tookOldest = best == q->items.begin();
    out = std::move(*best);
    q->items.erase(best);
    return true;
  }

  // Safe from any thread. Moves every queued item into `out` (appended), oldest first.
  void drainInto(std::deque<T>& out) {
    auto q = items_.lock();
    while (!q->items.empty()) {
      out.push_back(std::move(q->items.front()));
      q->items.pop_front();
    }
  }

 private:
  const std::size_t capacity_;
  struct State {
    std::deque<T> items;
    bool closed = false;
  };
  Guarded<State> items_;
};

}  // namespace isolane
