#pragma once
// HeavyApps: which apps have lately held an executor thread inside one long synchronous turn
// (longer than wedged_turn_ms), as the workers' status pages say (ipc/status_page.h: each thread
// publishes the appTag of the app whose turn it is). The scheduler confines a heavy app to all
// workers but one (pool/scheduler.h), so its long turns never hold every thread while another
// app waits. An app stays heavy for kMemory after it was last seen in a long turn: a flood of
// long requests is still heavy between its turns.
//
// Nothing read from a page is trusted beyond this: a worker that lies can only make the apps it
// runs look heavy (or not), which moves where their requests go and nothing else; an app it
// does not run is never taken from its page.
//
// Thread rule: every method is safe from any thread.

#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "ipc/status_page.h"

namespace isolane {

class HeavyApps {
 public:
  static constexpr std::chrono::seconds kMemory{5};
  using Time = std::chrono::steady_clock::time_point;  // the status pages' clock

  // The apps it may name (a tag on a page that names none of them is ignored).
  void setApps(const std::vector<std::string>& apps);
  // Reads the page at `now`: the apps of its wedged threads are heavy from now, those of them
  // `serves` says the page's worker runs (a worker names only its own apps: one compromised
  // cannot make an app of another group's workers look heavy); none: the page's threads run
  // every app (in process).
  void observe(const StatusPage& page, Time now, std::chrono::milliseconds wedgeAfter,
               const std::function<bool(const std::string&)>& serves = {});
  bool heavy(const std::string& app, Time now) const;

 private:
  mutable std::mutex mu_;  // guards the maps
  std::unordered_map<std::uint64_t, std::string> byTag_;
  std::unordered_map<std::string, Time> lastSeen_;
};

}  // namespace isolane
