#pragma once
// CrashBudget: how many deaths a slot may have before it rests. Past `maxCrashes` deaths within
// `window`, the slot stays empty for `cooldown` and the pool serves on the others. Pure logic with
// time as a parameter, so tests drive it with any clock.
//
// Thread rule: guarded by the pool's lock.

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <deque>

#include "util/clock.h"

namespace isolane {

struct CrashBudgetOptions {
  int maxCrashes = 5;
  std::chrono::milliseconds window{60'000};
  std::chrono::milliseconds cooldown{60'000};
};

class CrashBudget {
 public:
  explicit CrashBudget(CrashBudgetOptions options = {}) : options_(options) {}

  // Records a death at `now`. Returns the earliest time the slot may be respawned: `now`, or
  // the end of a cooldown when the budget is spent (the window then starts afresh).
  SteadyTime recordCrash(SteadyTime now) {
    crashes_.push_back(now);
    while (!crashes_.empty() && now - crashes_.front() > options_.window) crashes_.pop_front();
    if (static_cast<int>(crashes_.size()) >= options_.maxCrashes) {
      crashes_.clear();
      ++cooldowns_;
      return now + options_.cooldown;
    }
    return now;
  }

  int recentCrashes() const { return static_cast<int>(crashes_.size()); }
  int cooldowns() const { return cooldowns_; }

 private:
  CrashBudgetOptions options_;
  std::deque<SteadyTime> crashes_;
  int cooldowns_ = 0;
};

// The floor's backoff: what must keep a worker (the last slot of a lane; code mode's pool, which
// has no other) never rests for a whole cooldown once its budget is spent: it spawns again after
// a backoff that doubles each time in a row (from kFirst; in a row: within the budget's window
// of the last), up to the cooldown.
class FloorBackoff {
 public:
  static constexpr std::chrono::milliseconds kFirst{500};

  explicit FloorBackoff(CrashBudgetOptions options = {}) : options_(options) {}

  // The backoff of a budget spent at `now`.
  std::chrono::milliseconds next(SteadyTime now) {
    if (now - last_ > options_.window) level_ = 0;
    auto backoff = std::min<std::chrono::milliseconds>(
        options_.cooldown, kFirst * (std::int64_t{1} << std::min(level_, 16)));
    ++level_;
    last_ = now;
    return backoff;
  }

 private:
  CrashBudgetOptions options_;
  int level_ = 0;
  SteadyTime last_{};
};

}  // namespace isolane
