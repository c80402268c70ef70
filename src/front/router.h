#pragma once
// Router: which app answers a request, by path prefix and optionally by host. The longest
// matching prefix wins; a prefix matches whole path segments only ("/api" matches "/api" and
// "/api/x", never "/apix"). Immutable after construction, so any reactor thread may use it.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace isolane {

struct Mount {
  std::string app;
  std::string prefix = "/";  // path prefix, starting with '/'
  std::string host;          // empty: any host; otherwise matched without the port, case-blind
  bool stripPrefix = true;   // the app sees paths relative to its mount
  bool streaming = false;    // its requests are admitted against the stream cap
};

struct Route {
  const Mount* mount;
  std::string path;  // what the app sees: the target with the prefix removed when stripping
};

class Router {
 public:
  explicit Router(std::vector<Mount> mounts);

  // `target` is the origin-form request target ("/path?query").
  std::optional<Route> resolve(std::string_view host, std::string_view target) const;

 private:
  std::vector<Mount> mounts_;  // longest prefix first, host-specific before any-host
};

}  // namespace isolane
