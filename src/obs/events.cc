#include "obs/events.h"

#include <deque>
#include <mutex>

namespace isolane {

namespace {

struct Ring {
  std::mutex mutex;  // guards events
  std::deque<PoolEvent> events;
};

Ring& ring() {
  static Ring* r = new Ring();  // never destroyed: threads may record during exit
  return *r;
}

}  // namespace

void recordEvent(std::string kind, int slot, std::int64_t pid, std::string detail) {
  // A detail may carry an app's own words (a load error is its exception's message): bounded, so
  // that the ring stays small whatever an app throws.
  if (detail.size() > kMaxEventDetail) {
    detail.resize(kMaxEventDetail);
    detail += "...";
  }
  if (kind.size() > 64) kind.resize(64);
  PoolEvent e{std::chrono::system_clock::now(), std::move(kind), slot, pid, std::move(detail)};
  Ring& r = ring();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.events.push_back(std::move(e));
  while (r.events.size() > kRecentEvents) r.events.pop_front();
}

std::vector<PoolEvent> recentEvents() {
  Ring& r = ring();
  std::lock_guard<std::mutex> lock(r.mutex);
  return {r.events.begin(), r.events.end()};
}

}  // namespace isolane
