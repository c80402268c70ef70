#pragma once
// ByteBudget: a cap on bytes held on someone's behalf, charged and released from any thread,
// and ByteCharge, the bytes one holder has charged (released when it goes). Two uses:
// - an app isolate's memory outside its V8 heap (runtime/memory_budget.h): its ArrayBuffers and
//   every native copy of its bytes the host keeps;
// - the master's bytes held for clients (front/client_buffers.h): answers waiting to be written,
//   request bodies waiting to be read.
//
// Thread rule: every member of both classes is safe from any thread except that one ByteCharge
// is used by one thread at a time (it may move between threads). A budget is shared
// (std::shared_ptr), so a charge may outlive whatever made the budget.

#include <atomic>
#include <cstddef>
#include <memory>
#include <utility>

namespace isolane {

class ByteBudget {
 public:
  explicit ByteBudget(std::size_t capBytes) : cap_(capBytes) {}
  ByteBudget(const ByteBudget&) = delete;
  ByteBudget& operator=(const ByteBudget&) = delete;

  // False (nothing reserved) when `bytes` would pass the cap.
  bool tryReserve(std::size_t bytes) {
    std::size_t before = used_.fetch_add(bytes, std::memory_order_relaxed);
    if (before + bytes > cap_ || before + bytes < before) {
      used_.fetch_sub(bytes, std::memory_order_relaxed);
      return false;
    }
    return true;
  }
  void release(std::size_t bytes) { used_.fetch_sub(bytes, std::memory_order_relaxed); }
  std::size_t used() const { return used_.load(std::memory_order_relaxed); }
  std::size_t cap() const { return cap_; }

 private:
  const std::size_t cap_;
  std::atomic<std::size_t> used_{0};
};

// Bytes charged to a budget for as long as this object lives. Move-only. A charge with no
// budget (made by default, or from a null budget) grants everything and counts nothing.
class ByteCharge {
 public:
  ByteCharge() = default;
  // A charge of `bytes`, or an empty, ungranted one (false) when the budget has not got them.
  static ByteCharge take(std::shared_ptr<ByteBudget> budget, std::size_t bytes) {
    ByteCharge charge;
    if (budget && !budget->tryReserve(bytes)) return charge;
    charge.budget_ = std::move(budget);
    charge.bytes_ = bytes;
    charge.granted_ = true;
    return charge;
  }

  ByteCharge(ByteCharge&& other) noexcept { *this = std::move(other); }
  ByteCharge& operator=(ByteCharge&& other) noexcept {
    if (this != &other) {
      reset();
      budget_ = std::move(other.budget_);
      bytes_ = std::exchange(other.bytes_, 0);
      granted_ = std::exchange(other.granted_, false);
    }
    return *this;
  }
  ByteCharge(const ByteCharge&) = delete;
  ByteCharge& operator=(const ByteCharge&) = delete;
  ~ByteCharge() { reset(); }

  // Granted by take().
  explicit operator bool() const { return granted_; }
  std::size_t bytes() const { return bytes_; }
  // Charges `bytes` in all instead of bytes(): shrinking always succeeds; growing fails (and
  // changes nothing) when the budget has not got the difference.
  bool resize(std::size_t bytes) {
    if (!budget_) {
      bytes_ = bytes;
      return true;
    }
    if (bytes > bytes_ && !budget_->tryReserve(bytes - bytes_)) return false;
    if (bytes < bytes_) budget_->release(bytes_ - bytes);
    bytes_ = bytes;
    return true;
  }
  void reset() {
    if (budget_) budget_->release(bytes_);
    budget_.reset();
    bytes_ = 0;
    granted_ = false;
  }

 private:
  std::shared_ptr<ByteBudget> budget_;
  std::size_t bytes_ = 0;
  bool granted_ = false;
};

}  // namespace isolane
