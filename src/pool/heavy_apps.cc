#include "pool/heavy_apps.h"

namespace isolane {

void HeavyApps::setApps(const std::vector<std::string>& apps) {
  std::lock_guard<std::mutex> lock(mu_);
  byTag_.clear();
  for (const std::string& app : apps) byTag_.emplace(appTag(app), app);
}

void HeavyApps::observe(const StatusPage& page, Time now, std::chrono::milliseconds wedgeAfter,
                        const std::function<bool(const std::string&)>& serves) {
  if (wedgeAfter.count() <= 0) return;
  std::uint64_t tags[StatusPage::kMaxThreads];
  std::size_t n = wedgedAppTags(page, now, wedgeAfter, tags);
  if (n == 0) return;
  std::lock_guard<std::mutex> lock(mu_);
  for (std::size_t i = 0; i < n; ++i) {
    auto it = byTag_.find(tags[i]);
    if (it != byTag_.end() && (!serves || serves(it->second))) lastSeen_[it->second] = now;
  }
}

bool HeavyApps::heavy(const std::string& app, Time now) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = lastSeen_.find(app);
  return it != lastSeen_.end() && now - it->second < kMemory;
}

}  // namespace isolane
