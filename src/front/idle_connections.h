#pragma once
// IdleConnections: the client connections waiting for a request (a new one that has sent nothing
// yet, or a keep-alive one between requests), oldest first. When the connection limit is
// reached, the acceptor closes the oldest of them to make room, so that idle sockets (even ten
// thousand of them) cannot lock out clients that have something to ask. During a stop, the ones
// idle for drain_idle_ms are closed (HttpServer::stop).

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>

#include "util/guarded.h"

namespace isolane {

// A connection that can be told to close if it is still idle when the message arrives.
class IdleConnection {
 public:
  virtual ~IdleConnection() = default;
  // Safe from any thread. Closes the connection on its own strand unless it has started reading
  // a request by then.
  virtual void reclaim() = 0;
};

class IdleConnections {
 public:
  // Safe from any thread. Returns the key to remove it with.
  std::uint64_t add(std::weak_ptr<IdleConnection> connection) {
    auto entries = entries_.lock();
    std::uint64_t key = ++entries->next;
    entries->byAge.emplace(key, Entry{std::move(connection), Clock::now()});
    return key;
  }

  // Safe from any thread. Unknown keys (already taken) are ignored.
  void remove(std::uint64_t key) { entries_.lock()->byAge.erase(key); }

  // Safe from any thread. The oldest idle connection still alive, no longer listed; null if none.
  std::shared_ptr<IdleConnection> takeOldest() { return takeIdleSince(Clock::time_point::max()); }

  // Safe from any thread. The oldest idle connection still alive that has been idle since
  // `cutoff` or earlier, no longer listed; null if none.
  std::shared_ptr<IdleConnection> takeIdleSince(std::chrono::steady_clock::time_point cutoff) {
    auto entries = entries_.lock();
    while (!entries->byAge.empty() && entries->byAge.begin()->second.since <= cutoff) {
      auto node = entries->byAge.extract(entries->byAge.begin());
      if (auto connection = node.mapped().connection.lock()) return connection;
    }
    return nullptr;
  }

 private:
  using Clock = std::chrono::steady_clock;
  struct Entry {
    std::weak_ptr<IdleConnection> connection;
    Clock::time_point since;
  };
  struct Entries {
    std::uint64_t next = 0;
    std::map<std::uint64_t, Entry> byAge;  // keys grow with time, and so do their `since`
  };
  Guarded<Entries> entries_;
};

}  // namespace isolane
