#pragma once
// WireEgress: a worker's outbound fetches, performed by the master. A worker runs untrusted
// JavaScript; the address policy and fetch_allow must hold even if that code escapes V8, so the
// worker opens no connection itself: each executor thread's channel sends FetchCall frames and
// receives FetchEvent frames (the head, one body piece per pull, up to four
// owed at once, the end or an error), which the
// worker's reader hands to the thread that started the operation.
//
// Thread rule: WireEgressHub is safe from any thread; a channel belongs to one executor thread.

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <unordered_map>

#include "ipc/frame_outbox.h"
#include "util/doorbell.h"
#include "util/guarded.h"
#include "worker/egress_channel.h"

namespace isolane {

class WireEgressHub {
 public:
  WireEgressHub(FrameOutbox& out, std::size_t maxFrameBytes) : out_(out), max_(maxFrameBytes) {}

  // The channel of one executor thread; `wake` is its doorbell.
  std::unique_ptr<EgressChannel> channel(Doorbell& wake);
  // From the thread that reads the master's socket: an event from the master. One for an
  // operation no thread waits for (it was aborted and forgotten) is dropped.
  void deliver(FetchEvent event);

 private:
  class Channel;
  struct Inbox {
    Guarded<std::deque<FetchEvent>> events;
    Doorbell* wake;
  };
  // `hold` is let go of once the frame is written (FetchInit::bodyHold).
  void send(const FetchCall& call, const std::shared_ptr<Inbox>& inbox,
            std::shared_ptr<const void> hold = {});
  void forget(const Inbox* inbox);

  FrameOutbox& out_;
  const std::size_t max_;
  std::atomic<std::uint64_t> nextOp_{1};
  Guarded<std::unordered_map<std::uint64_t, std::shared_ptr<Inbox>>> ops_;
};

}  // namespace isolane
