#include "front/router.h"

#include <algorithm>
#include <cctype>

namespace isolane {
namespace {

std::string normalizePrefix(std::string p) {
  if (p.empty() || p[0] != '/') p.insert(p.begin(), '/');
  while (p.size() > 1 && p.back() == '/') p.pop_back();
  return p;
}

bool hostMatches(std::string_view want, std::string_view host) {
  if (want.empty()) return true;
  if (auto colon = host.rfind(':'); colon != std::string_view::npos && host.find(']') == host.npos) {
    host = host.substr(0, colon);
  }
  return want.size() == host.size() &&
         std::equal(want.begin(), want.end(), host.begin(), [](char a, char b) {
           return std::tolower(static_cast<unsigned char>(a)) ==
                  std::tolower(static_cast<unsigned char>(b));
         });
}

}  // namespace

Router::Router(std::vector<Mount> mounts) : mounts_(std::move(mounts)) {
  for (Mount& m : mounts_) m.prefix = normalizePrefix(m.prefix);
  std::stable_sort(mounts_.begin(), mounts_.end(), [](const Mount& a, const Mount& b) {
    if (a.prefix.size() != b.prefix.size()) return a.prefix.size() > b.prefix.size();
    return !a.host.empty() && b.host.empty();
  });
}

std::optional<Route> Router::resolve(std::string_view host, std::string_view target) const {
  std::string_view path = target.substr(0, target.find('?'));
  for (const Mount& m : mounts_) {
    if (!hostMatches(m.host, host)) continue;
    bool match = m.prefix == "/" ||
                 (path.substr(0, m.prefix.size()) == m.prefix &&
                  (path.size() == m.prefix.size() || path[m.prefix.size()] == '/'));
    if (!match) continue;
    if (!m.stripPrefix || m.prefix == "/") return Route{&m, std::string(target)};
    std::string rest(target.substr(m.prefix.size()));
    if (rest.empty() || rest[0] != '/') rest.insert(rest.begin(), '/');
    return Route{&m, rest};
  }
  return std::nullopt;
}

}  // namespace isolane
