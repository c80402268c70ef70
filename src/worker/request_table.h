#pragma once
// RequestTable: the requests in flight in one isolate, by id, and their deadlines in order.
//
// A request's id is the one it came with (its submitter's: the master's id for it, unique on the
// thread), so one id names it from the master's frames to JavaScript and back. A request without
// one (a service call, `isolane run`) gets one of the table's own, from kOwnIds up: apart from
// the submitters' counters, and still exact as a JavaScript number (below 2^53).
//
// Each request has one deadline at a time (its wall timeout, then its stream's limits), or none
// while its clock is paused (a code-mode tool call). The table keeps them ordered so that the
// loop finds what is due, and when it must next wake, without looking at every request.
// Bookkeeping only: what a missed deadline means is the loop's (tests/request_table_test.cc
// exercises it with plain structs, without an isolate).
//
// `Request` has the fields `std::uint64_t id` and `SteadyTime deadline`, which the table sets.
// Thread rule: one thread (its isolate's executor thread).

#include <cstddef>
#include <cstdint>
#include <optional>
#include <set>
#include <unordered_map>
#include <utility>
#include <vector>

#include "util/clock.h"

namespace isolane {

template <typename Request>
class RequestTable {
 public:
  static constexpr std::uint64_t kOwnIds = std::uint64_t{1} << 52;
  static constexpr SteadyTime kNoDeadline = SteadyTime::max();

  // A submitter's id (nonzero and below kOwnIds): anything else never names a request of theirs.
  static bool isSubmitterId(std::uint64_t id) { return id != 0 && id < kOwnIds; }
  // An id of the table's own, for a request that came without one.
  std::uint64_t ownId() { return nextOwnId_++; }

  bool contains(std::uint64_t id) const { return requests_.count(id) != 0; }
  Request* find(std::uint64_t id) {
    auto it = requests_.find(id);
    return it == requests_.end() ? nullptr : &it->second;
  }
  const Request* find(std::uint64_t id) const {
    auto it = requests_.find(id);
    return it == requests_.end() ? nullptr : &it->second;
  }
  // The request `id`, which the caller knows to be in flight.
  Request& at(std::uint64_t id) { return requests_.at(id); }
  std::size_t size() const { return requests_.size(); }
  std::vector<std::uint64_t> ids() const {
    std::vector<std::uint64_t> out;
    out.reserve(requests_.size());
    for (const auto& entry : requests_) out.push_back(entry.first);
    return out;
  }

  // Adds `request` as `id` (not in flight: the caller checked) with its first deadline.
  Request& add(std::uint64_t id, Request request, SteadyTime deadline) {
    request.id = id;
    request.deadline = deadline;
    auto [it, added] = requests_.emplace(id, std::move(request));
    (void)added;
    if (deadline != kNoDeadline) deadlines_.emplace(deadline, id);
    return it->second;
  }
  // Removes the request `id` and its deadline; nullopt when it is not in flight.
  std::optional<Request> take(std::uint64_t id) {
    auto node = requests_.extract(id);
    if (node.empty()) return std::nullopt;
    deadlines_.erase({node.mapped().deadline, id});
    return std::move(node.mapped());
  }

  void setDeadline(Request& request, SteadyTime deadline) {
    deadlines_.erase({request.deadline, request.id});
    request.deadline = deadline;
    if (deadline != kNoDeadline) deadlines_.emplace(deadline, request.id);
  }
  // No deadline until the next setDeadline (its clock is paused).
  void clearDeadline(Request& request) { setDeadline(request, kNoDeadline); }

  // The earliest deadline of any request in flight.
  std::optional<SteadyTime> nextDeadline() const {
    if (deadlines_.empty()) return std::nullopt;
    return deadlines_.begin()->first;
  }
  // The id of a request whose deadline is at or before `now`, that deadline removed (the request
  // stays, with none: the caller ends it); 0 when none is due.
  std::uint64_t takeDue(SteadyTime now) {
    while (!deadlines_.empty() && deadlines_.begin()->first <= now) {
      std::uint64_t id = deadlines_.begin()->second;
      deadlines_.erase(deadlines_.begin());
      if (Request* r = find(id)) {
        r->deadline = kNoDeadline;
        return id;
      }
    }
    return 0;
  }

 private:
  std::unordered_map<std::uint64_t, Request> requests_;
  std::set<std::pair<SteadyTime, std::uint64_t>> deadlines_;  // (deadline, request id)
  std::uint64_t nextOwnId_ = kOwnIds;
};

}  // namespace isolane
