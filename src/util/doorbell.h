#pragma once
// A capacity-one wake-up: any number of ring() calls before the sleeper looks coalesce into one
// wake. It carries no data; what to do is in bounded queues the sleeper drains after waking
// (executor-reactor rule: a wake is a doorbell, data stays in bounded queues).

#include <chrono>
#include <condition_variable>
#include <mutex>

namespace isolane {

class Doorbell {
 public:
  // Safe from any thread.
  void ring() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (rung_) return;
      rung_ = true;
    }
    cv_.notify_one();
  }

  // Waits until rung or until `deadline`; consumes the ring. Returns true if it was rung.
  // Only the owning (sleeping) thread calls this.
  template <typename Clock, typename Duration>
  bool waitUntil(std::chrono::time_point<Clock, Duration> deadline) {
    std::unique_lock<std::mutex> lock(mutex_);
    cv_.wait_until(lock, deadline, [this] { return rung_; });
    bool was = rung_;
    rung_ = false;
    return was;
  }

  void wait() {
    std::unique_lock<std::mutex> lock(mutex_);
    cv_.wait(lock, [this] { return rung_; });
    rung_ = false;
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  bool rung_ = false;
};

}  // namespace isolane
