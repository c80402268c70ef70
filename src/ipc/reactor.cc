#include "ipc/reactor.h"

#include <pthread.h>

#include <exception>

#include "obs/log.h"

namespace isolane {

Reactor::Reactor(std::size_t threads, std::string name, OnEscape onEscape)
    : work_(io_.get_executor()), name_(std::move(name)), onEscape_(std::move(onEscape)) {
  if (threads == 0) threads = 1;
  threads_.reserve(threads);
  for (std::size_t i = 0; i < threads; ++i) threads_.emplace_back([this] { run(); });
}

Reactor::~Reactor() { stop(); }

void Reactor::stop() {
  if (threads_.empty()) return;
  work_.reset();
  io_.stop();
  for (auto& t : threads_) t.join();
  threads_.clear();
}

void Reactor::run() {
  pthread_setname_np(pthread_self(), name_.substr(0, 15).c_str());
  // Handlers guard themselves; this is the last line: a handler that still throws is logged and
  // the reactor goes on with the others.
  for (;;) {
    try {
      io_.run();
      return;
    } catch (const std::exception& e) {
      logEvent(Level::kError, "unexpected exception on a reactor thread", {{"error", e.what()}});
    } catch (...) {
      logEvent(Level::kError, "unexpected exception on a reactor thread", {});
    }
    if (onEscape_) onEscape_();
  }
}

}  // namespace isolane
