#pragma once
// AppCounts: how many requests each app has somewhere (in flight in the pool, on one worker, on
// one executor thread), kept by count up and down; an app whose count falls to 0 is forgotten,
// so the map holds only the apps that have some.
//
// Thread rule: none of its own; its owner's lock guards it.

#include <cstddef>
#include <string>
#include <unordered_map>

namespace isolane {

class AppCounts {
 public:
  void add(const std::string& app) { ++counts_[app]; }
  void remove(const std::string& app) {
    auto it = counts_.find(app);
    if (it != counts_.end() && --it->second == 0) counts_.erase(it);
  }
  void count(const std::string& app, bool up) { up ? add(app) : remove(app); }
  bool has(const std::string& app) const { return counts_.count(app) != 0; }
  void clear() { counts_.clear(); }

  // True when `app` holds at least an equal share of the total, shares being equal among the
  // apps counted. An app with none is under any share.
  bool atLeastEqualShare(const std::string& app) const {
    std::size_t total = 0, mine = 0;
    for (const auto& [name, n] : counts_) {
      total += n;
      if (name == app) mine = n;
    }
    return mine > 0 && mine * counts_.size() >= total;
  }

 private:
  std::unordered_map<std::string, std::size_t> counts_;
};

}  // namespace isolane
