#pragma once
// FetchRouter: one egress channel (to the master, or a FetchClient of the thread's own) shared by
// every app isolate of an executor thread. Each operation is started on behalf of an inbox (the
// EventLoop's); route() hands every event the channel produced to the inbox of its operation.
//
// Thread rule: the executor thread only (as the FetchClient calls it makes).

#include <cstdint>
#include <deque>
#include <memory>
#include <unordered_map>

#include "worker/fetch_client.h"

namespace isolane {

class FetchRouter {
 public:
  explicit FetchRouter(std::unique_ptr<EgressChannel> channel) : client_(std::move(channel)) {}

  std::uint64_t start(FetchInit init, std::deque<FetchEvent>& inbox) {
    std::uint64_t op = client_->start(std::move(init));
    inboxes_[op] = &inbox;
    return op;
  }
  void pull(std::uint64_t op) { client_->pull(op); }
  void abort(std::uint64_t op) { client_->abort(op); }

  // Moves the client's events to their inboxes; an event of a forgotten operation is dropped.
  void route() {
    client_->drainInto(scratch_);
    for (FetchEvent& event : scratch_) {
      auto it = inboxes_.find(event.op);
      if (it == inboxes_.end()) continue;
      std::deque<FetchEvent>* inbox = it->second;
      if (event.kind == FetchEvent::Kind::kEnd || event.kind == FetchEvent::Kind::kError) {
        inboxes_.erase(it);
      }
      inbox->push_back(std::move(event));
    }
    scratch_.clear();
  }

  // The inbox's owner goes away: its operations are aborted and their events dropped.
  void forget(const std::deque<FetchEvent>& inbox) {
    for (auto it = inboxes_.begin(); it != inboxes_.end();) {
      if (it->second == &inbox) {
        client_->abort(it->first);
        it = inboxes_.erase(it);
      } else {
        ++it;
      }
    }
  }

 private:
  std::unique_ptr<EgressChannel> client_;
  std::unordered_map<std::uint64_t, std::deque<FetchEvent>*> inboxes_;
  std::deque<FetchEvent> scratch_;
};

}  // namespace isolane
