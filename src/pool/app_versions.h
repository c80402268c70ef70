#pragma once
// An app's version is the content hash of its modules: the SHA-256 of every file of its import
// graph (ipc/app_modules.h), each with its path relative to the app's directory, how its imports
// resolved, and what could not be read. The backends read
// each app's graph once, when they start, and every worker and every isolate made later runs
// those bytes: a worker respawned, or an isolate made again after it idled, never picks up a
// file changed on disk meanwhile, so the pool never serves two versions of an app by accident.
//
// Thread rule: pure functions of their arguments and the filesystem; safe from any thread.

#include <cstddef>
#include <string>
#include <vector>

#include "ipc/app_modules.h"
#include "ipc/app_spec.h"
#include "obs/metrics.h"

namespace isolane {

// The version of the graph (64 hex digits; "" if OpenSSL fails): the same files give the same
// version wherever the app's directory is.
std::string appContentVersion(const AppModules& modules);

// isolane_app_version_info{app,version}: 1 for the version each app serves.
Family<Gauge>& appVersionInfo(MetricsRegistry& metrics);

// Reads the modules of each app that has none yet (at most `maxModuleBytes` each) and sets its
// version; logs each app's version, and sets it in `info` when given.
void readAppVersions(std::vector<AppSpec>& apps, std::size_t maxModuleBytes,
                     Family<Gauge>* info);

}  // namespace isolane
