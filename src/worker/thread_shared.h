#pragma once
// What the app isolates of one executor thread share: the CPU watchdog, the outbound-fetch
// client, and the way to the thread's other apps (service bindings call them).
//
// Thread rule: the executor thread only.

#include <string>

#include "worker/fetch_router.h"
#include "worker/request_job.h"
#include "worker/watchdog.h"

namespace isolane {

// The executor's directory of apps, for a service binding's call to another app.
class LocalApps {
 public:
  virtual ~LocalApps() = default;
  virtual bool knows(const std::string& app) const = 0;
  // Starts `job` in its app's isolate on this thread (made if need be), outside any turn.
  virtual void start(RequestJob job) = 0;
};

struct ThreadShared {
  Watchdog& watchdog;
  FetchRouter& fetch;
  LocalApps& apps;
};

}  // namespace isolane
