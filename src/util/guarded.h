#pragma once
// Guarded<T>: shared state reachable only through its lock, never through a mutex beside a field.
//   auto q = queue_.lock();   // q behaves like a T*, the mutex is held while q lives.

#include <mutex>
#include <utility>

namespace isolane {

template <typename T>
class Guarded {
 public:
  template <typename... Args>
  explicit Guarded(Args&&... args) : value_(std::forward<Args>(args)...) {}

  class Locked {
   public:
    Locked(std::mutex& m, T& v) : lock_(m), value_(v) {}
    T* operator->() { return &value_; }
    T& operator*() { return value_; }
    // For condition variables that wait on this guard's mutex.
    std::unique_lock<std::mutex>& unique() { return lock_; }

   private:
    std::unique_lock<std::mutex> lock_;
    T& value_;
  };

  // Safe from any thread.
  Locked lock() { return Locked(mutex_, value_); }

 private:
  std::mutex mutex_;
  T value_;
};

}  // namespace isolane
