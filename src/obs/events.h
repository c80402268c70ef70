#pragma once
// Recent events: the pool's transitions (a worker spawned, ready, crashed, killed, cooling down;
// the server draining...) kept in a small ring, newest last, for the dashboard. One ring per
// process, like the log: an event is recorded where it is logged, by the part that causes it.
//
// Thread rule: every function is safe from any thread (one mutex, held for a copy).

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace isolane {

struct PoolEvent {
  std::chrono::system_clock::time_point time;
  std::string kind;  // spawn, ready, crash, kill, cooldown, backoff, retire, drain, ...
  int slot = -1;     // -1: not about one worker
  std::int64_t pid = 0;
  std::string detail;
};

// The ring keeps this many; older ones are dropped. A longer detail is cut to this many bytes.
inline constexpr std::size_t kRecentEvents = 100;
inline constexpr std::size_t kMaxEventDetail = 512;

void recordEvent(std::string kind, int slot = -1, std::int64_t pid = 0, std::string detail = {});
// The events kept, oldest first.
std::vector<PoolEvent> recentEvents();

}  // namespace isolane
