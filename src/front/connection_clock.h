#pragma once
// ConnectionClock: a connection's two deadlines (the read under way, the write under way) kept on
// one timer that is re-armed lazily.
//
// A deadline moves with every request (a keep-alive connection's next head, each answer's send
// bound), and almost always later. Arming a timer for each, and cancelling it when the read or
// write completes, cost each request two waits, two cancels and two cancelled completions run on
// the reactor. Here a deadline is a field: setting a later one than the timer is armed for
// changes nothing, clearing one changes nothing, and when the timer fires early it finds nothing
// due and waits again for the earliest deadline still set. The timer is re-armed only when a
// deadline comes earlier than the one it waits for (about once per send_timeout per connection).
//
// Thread rule: on the connection's strand only. `due` runs there, from the timer's completion;
// it may set, clear and stop.

#include <array>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>

#include "front/session_socket.h"

namespace isolane {

class ConnectionClock {
 public:
  using Clock = std::chrono::steady_clock;
  enum class Deadline { kRead = 0, kWrite = 1 };
  using Due = std::function<void(Deadline)>;

  ConnectionClock(const SessionStrand& strand, Due due);
  ConnectionClock(const ConnectionClock&) = delete;
  ConnectionClock& operator=(const ConnectionClock&) = delete;

  // What `due` belongs to (the clock lives inside it): a completion that finds it gone does
  // nothing. Given once, before the first set(): the owner's weak_from_this() is not there yet
  // while it is being built.
  void setOwner(std::weak_ptr<void> owner) {
    owner_ = std::move(owner);
    hasOwner_ = true;
  }

  void set(Deadline which, Clock::time_point at);
  void clear(Deadline which) { due_[index(which)] = kNever; }
  bool isSet(Deadline which) const { return due_[index(which)] != kNever; }
  // No deadline fires again; the pending wait is cancelled (it holds no strong reference).
  void stop();

  // Waits begun so far (tests count the re-arms).
  std::uint64_t waits() const { return waits_; }

 private:
  static constexpr Clock::time_point kNever = Clock::time_point::max();
  static constexpr std::size_t index(Deadline d) { return static_cast<std::size_t>(d); }
  void arm();
  void onTimer(std::uint64_t generation, bool cancelled);

  SessionTimer timer_;
  std::weak_ptr<void> owner_;
  bool hasOwner_ = false;  // setOwner() ran (checked when a wait begins)
  Due dueCallback_;
  std::array<Clock::time_point, 2> due_{kNever, kNever};
  bool armed_ = false;             // a wait is pending, for armedAt_
  Clock::time_point armedAt_{};
  std::uint64_t generation_ = 0;   // of the wait pending; an older completion is stale
  std::uint64_t waits_ = 0;
  bool stopped_ = false;
};

}  // namespace isolane
