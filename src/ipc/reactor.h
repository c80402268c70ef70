#pragma once
// Reactor: an io_context and the threads that run it. `serve` makes one and shares it between the
// HTTP front and the master's ends of the worker sockets, so that a worker's answer is read, and
// written to its client, by the same thread with no hand-off (by default the reactor has one
// thread). A pool or a front made without one makes its own.
//
// Thread rule: io() is safe from any thread; stop() from any thread but the reactor's own (it
// joins them).

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace isolane {

class Reactor {
 public:
  // Called when a handler let an exception out (it is logged by the reactor, which goes on).
  using OnEscape = std::function<void()>;
  // `name` names its threads (at most 15 characters are kept).
  Reactor(std::size_t threads, std::string name, OnEscape onEscape = {});
  ~Reactor();  // stop()
  Reactor(const Reactor&) = delete;
  Reactor& operator=(const Reactor&) = delete;

  boost::asio::io_context& io() { return io_; }
  // Stops the threads and joins them; handlers still queued do not run (they are destroyed with
  // the reactor). Idempotent.
  void stop();

 private:
  void run();

  boost::asio::io_context io_;
  std::optional<boost::asio::executor_work_guard<boost::asio::io_context::executor_type>> work_;
  const std::string name_;
  const OnEscape onEscape_;
  std::vector<std::thread> threads_;
};

// The reactor a component runs on: the one it was given, or one of its own, made when none was
// (a pool or front used alone, as code mode and tests use them). Declare it before whatever has
// handlers on it: an own reactor must outlive them.
class ReactorRef {
 public:
  ReactorRef(Reactor* given, std::size_t threads, std::string name,
             Reactor::OnEscape onEscape = {})
      : own_(given ? nullptr
                   : std::make_unique<Reactor>(threads, std::move(name), std::move(onEscape))),
        reactor_(given ? *given : *own_) {}

  boost::asio::io_context& io() { return reactor_.io(); }
  // Stops an own reactor (a given one goes on: others run on it).
  void stopIfOwned() {
    if (own_) own_->stop();
  }

 private:
  std::unique_ptr<Reactor> own_;
  Reactor& reactor_;
};

}  // namespace isolane
