#pragma once
// HostOpTable: the host operations in flight in one isolate (outbound fetches, service-binding
// calls, work offloaded to the helper thread, code-mode tool calls): for each, the app context
// that started it, the request it works for (0: none), the JavaScript callbacks that take its
// events and its kind; and how many each request has in flight (bounded per request by the
// loop). Bookkeeping only: it holds the callbacks but never calls them, and what ending an
// operation takes (aborting a fetch, dropping offloaded work) is the caller's, told through
// `onRemoved`, so its rules are tested without an isolate (tests/host_op_table_test.cc).
//
// Thread rule: one thread (its isolate's executor thread).

#include <cstddef>
#include <cstdint>
#include <optional>
#include <unordered_map>
#include <utility>

namespace isolane {

enum class HostOpKind {
  kFetch,    // an outbound fetch: the fetch client has it, and aborts it
  kService,  // a service-binding call or offloaded work: nothing to abort
  kTool,     // a code-mode tool call: the caller answers it; its wait pauses the request's clock
};

template <typename Owner, typename Callbacks>
class HostOpTable {
 public:
  struct Op {
    Owner* owner;
    std::uint64_t request;
    Callbacks callbacks;
    HostOpKind kind;
  };

  // `id` is the caller's (the fetch client's, or from a range of the loop's own): unique among
  // the operations in flight.
  void add(std::uint64_t id, Owner* owner, std::uint64_t request, Callbacks callbacks,
           HostOpKind kind) {
    ops_.emplace(id, Op{owner, request, std::move(callbacks), kind});
    if (request != 0) ++perRequest_[request];
  }

  // The operation, or null once it is gone (its request ended, or it completed).
  Op* find(std::uint64_t id) {
    auto it = ops_.find(id);
    return it == ops_.end() ? nullptr : &it->second;
  }

  // Removes the operation and hands it over (its last event is being delivered).
  std::optional<Op> take(std::uint64_t id) {
    auto it = ops_.find(id);
    if (it == ops_.end()) return std::nullopt;
    Op op = std::move(it->second);
    erase(it);
    return op;
  }

  // How many operations `request` has in flight.
  std::size_t countOf(std::uint64_t request) const {
    auto it = perRequest_.find(request);
    return it == perRequest_.end() ? 0 : it->second;
  }
  std::size_t size() const { return ops_.size(); }

  // Calls f(id, op) for each operation of `request` (it must not add or remove any).
  template <typename F>
  void forEachOfRequest(std::uint64_t request, F&& f) {
    if (countOf(request) == 0) return;
    for (auto& [id, op] : ops_) {
      if (op.request == request) f(id, op);
    }
  }

  // Removes every operation of `request`, calling onRemoved(id, op) for each first. A request
  // with none costs no scan.
  template <typename F>
  void removeOfRequest(std::uint64_t request, F&& onRemoved) {
    if (countOf(request) == 0) return;
    removeIf([request](const Op& op) { return op.request == request; }, onRemoved);
  }

  // Removes every operation `owner` started, calling onRemoved(id, op) for each first.
  template <typename F>
  void removeOfOwner(const Owner* owner, F&& onRemoved) {
    removeIf([owner](const Op& op) { return op.owner == owner; }, onRemoved);
  }

  // Forgets every operation (their callbacks go before the isolate does).
  void clearAll() {
    ops_.clear();
    perRequest_.clear();
  }

 private:
  using Ops = std::unordered_map<std::uint64_t, Op>;

  typename Ops::iterator erase(typename Ops::iterator it) {
    if (std::uint64_t request = it->second.request; request != 0) {
      auto count = perRequest_.find(request);
      if (count != perRequest_.end() && --count->second == 0) perRequest_.erase(count);
    }
    return ops_.erase(it);
  }

  template <typename Pred, typename F>
  void removeIf(Pred&& pred, F&& onRemoved) {
    for (auto it = ops_.begin(); it != ops_.end();) {
      if (pred(it->second)) {
        onRemoved(it->first, it->second);
        it = erase(it);
      } else {
        ++it;
      }
    }
  }

  Ops ops_;
  std::unordered_map<std::uint64_t, std::size_t> perRequest_;
};

}  // namespace isolane
