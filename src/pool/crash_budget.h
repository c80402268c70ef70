#pragma once
// CrashBudget: how many deaths a slot may have before it rests. Past `maxCrashes` deaths within
// `window`, the slot stays empty for `cooldown` and the pool serves on the others. Pure logic with
// time as a parameter, so tests drive it with any clock.
//
// Thread rule: guarded by the pool's lock.

#include <chrono>
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

}  // namespace isolane
