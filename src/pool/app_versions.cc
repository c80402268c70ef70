#include "pool/app_versions.h"

#include <memory>

#include "obs/log.h"
#include "util/sha256.h"

namespace isolane {

std::string appContentVersion(const AppModules& modules) {
  // Paths count relative to the entry's directory (every file read is beneath it): the same app
  // deployed elsewhere has the same version.
  std::string root;
  if (!modules.files.empty()) {
    const std::string& entry = modules.files.front().path;
    root = entry.substr(0, entry.rfind('/') + 1);
  }
  auto relative = [&root](const std::string& path) {
    return !root.empty() && path.compare(0, root.size(), root) == 0 ? path.substr(root.size())
                                                                    : path;
  };
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
    field(relative(f.path));
    field(f.error);
    field(f.source);
    // How its imports resolved (a file, or why none): the same files linked otherwise are
    // another app.
    field(std::to_string(f.imports.size()));
    for (const ModuleFile::Import& im : f.imports) {
      field(im.specifier);
      field(relative(im.path));
      field(im.error);
    }
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
    if (info && !app.version.empty()) info->with({app.name, app.version}).set(1);
  }
}

}  // namespace isolane
