#include "front/connection_clock.h"

#include <algorithm>
#include <stdexcept>

namespace isolane {

ConnectionClock::ConnectionClock(const SessionStrand& strand, Due due)
    : timer_(strand), dueCallback_(std::move(due)) {}

void ConnectionClock::set(Deadline which, Clock::time_point at) {
  due_[index(which)] = at;
  arm();
}

void ConnectionClock::stop() {
  stopped_ = true;
  due_ = {kNever, kNever};
  if (armed_) timer_.cancel();
}

void ConnectionClock::arm() {
  Clock::time_point next = std::min(due_[0], due_[1]);
  if (stopped_ || next == kNever) return;
  // Waiting for no later than needed: when it fires, it waits again from there.
  if (armed_ && armedAt_ <= next) return;
  // Without an owner no completion could ever run onTimer, and armed_ would stay set for good:
  // a deadline set before setOwner() is a bug of ours, thrown (the session's guard logs it).
  if (!hasOwner_) throw std::logic_error("ConnectionClock: a deadline set before setOwner()");
  armed_ = true;
  armedAt_ = next;
  ++waits_;
  // A wait still pending completes as cancelled, and its generation is then stale.
  timer_.expires_at(next);
  std::uint64_t generation = ++generation_;
  timer_.async_wait([this, owner = owner_, generation](const boost::system::error_code& ec) {
    auto alive = owner.lock();
    if (alive) onTimer(generation, static_cast<bool>(ec));
  });
}

void ConnectionClock::onTimer(std::uint64_t generation, bool cancelled) {
  if (generation != generation_) return;  // re-armed since: the newer wait decides
  armed_ = false;
  if (cancelled || stopped_) return;
  Clock::time_point now = Clock::now();
  for (Deadline which : {Deadline::kWrite, Deadline::kRead}) {
    if (due_[index(which)] > now) continue;
    due_[index(which)] = kNever;
    dueCallback_(which);
    if (stopped_) return;
  }
  arm();
}

}  // namespace isolane
