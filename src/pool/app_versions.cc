#include "pool/app_versions.h"

#include <memory>

#include "obs/log.h"
#include "util/sha256.h"

namespace isolane {

std::string appContentVersion(const AppModules& modules) {
  // Each field with its length before it: no two different graphs give the same stream.
  std::string stream;
  stream.reserve(modules.bytes() + 64 * modules.files.size() + modules.error.size());
  auto field = [&stream](const std::string& s) {
    stream += std::to_string(s.size());
    stream += ':';
    stream += s;
  };
  field(modules.error);
  for (const ModuleFile& f : modules.files) {
    field(f.path);
    field(f.error);
    field(f.source);
  }
  return sha256Hex(stream);
}

Family<Gauge>& appVersionInfo(MetricsRegistry& metrics) {
  return metrics.gauge("isolane_app_version_info",
                       "The version each app serves: the SHA-256 of its modules' bytes",
                       {"app", "version"});
}

void readAppVersions(std::vector<AppSpec>& apps, std::size_t maxModuleBytes,
                     Family<Gauge>* info) {
  for (AppSpec& app : apps) {
    if (!app.modules) {
      app.modules =
          std::make_shared<const AppModules>(readAppModules(app.modulePath, maxModuleBytes));
    }
    app.version = appContentVersion(*app.modules);
    logEvent(Level::kInfo, "app version",
             {{"app", app.name},
              {"version", app.version},
              {"files", static_cast<std::int64_t>(app.modules->files.size())},
              {"bytes", static_cast<std::int64_t>(app.modules->bytes())}});
    if (info) info->with({app.name, app.version}).set(1);
  }
}

}  // namespace isolane
