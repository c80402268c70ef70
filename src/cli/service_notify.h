#pragma once
// ServiceNotifier: tells a service manager when `isolane serve` is ready and when it stops, over
// systemd's notification protocol (a datagram to the socket named by $NOTIFY_SOCKET: what
// `Type=notify` units wait for). Without NOTIFY_SOCKET it does nothing.
//
// Written by hand, not with libsystemd's sd_notify: the protocol is one datagram of
// "KEY=value" lines, which sd_notify(3) documents as stable for reimplementation, and
// libsystemd (with its compression and crypto libraries) would also be linked into the engine,
// which runs inside node and carries this code (cli/ is in both).
//
// Thread rule: constructed and used on the thread that runs `serve`; it owns one watcher thread.

#include <atomic>
#include <functional>
#include <string>
#include <thread>

namespace isolane {

class ServiceNotifier {
 public:
  // Watches `ready` (polled every 50 ms from a thread of its own) and sends READY=1 the first
  // time it holds.
  explicit ServiceNotifier(std::function<bool()> ready);
  ~ServiceNotifier();
  ServiceNotifier(const ServiceNotifier&) = delete;
  ServiceNotifier& operator=(const ServiceNotifier&) = delete;

  // Sends STOPPING=1 (the drain has begun) and stops watching.
  void stopping();

  // One notification to $NOTIFY_SOCKET (a path, or "@name" for the abstract namespace). False
  // when there is no such socket or the send failed.
  static bool notify(const std::string& state);

 private:
  std::atomic<bool> done_{false};
  std::thread watcher_;
};

}  // namespace isolane
