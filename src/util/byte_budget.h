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

  // False (nothing reserved) when `bytes` would pass the cap. Never over the cap, even for an
  // instant (a compare-and-swap loop): one reservation cannot make another fail spuriously.
  bool tryReserve(std::size_t bytes) {
    std::size_t used = used_.load(std::memory_order_relaxed);
    do {
      if (bytes > cap_ || used > cap_ - bytes) return false;
    } while (!used_.compare_exchange_weak(used, used + bytes, std::memory_order_relaxed));
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
// budget (made by default, or from a null budget) grants everything and counts nothing; a
// refused one keeps its budget (it charges nothing, and a later resize is counted as ever).
class ByteCharge {
 public:
  ByteCharge() = default;
  // A charge of `bytes`, or an empty, ungranted one (false) when the budget has not got them.
  static ByteCharge take(std::shared_ptr<ByteBudget> budget, std::size_t bytes) {
    ByteCharge charge;
    bool granted = !budget || budget->tryReserve(bytes);
    charge.budget_ = std::move(budget);
    charge.bytes_ = granted ? bytes : 0;
    charge.granted_ = granted;
    return charge;
  }

  ByteCharge(ByteCharge&& other) noexcept { *this = std::move(other); }
  ByteCharge& operator=(ByteCharge&& other) noexcept {
    if (this != &other) {
      reset();
      budget_ = std::move(other.budget_);
      other.budget_.reset();
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
  // Gives back what is charged (the charge stays on its budget: a later resize counts).
  void reset() {
    if (budget_) budget_->release(bytes_);
    bytes_ = 0;
  }

 private:
  std::shared_ptr<ByteBudget> budget_;
  std::size_t bytes_ = 0;
  bool granted_ = false;
};

}  // namespace isolane
