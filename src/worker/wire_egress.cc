#include "worker/wire_egress.h"

#include "ipc/fetch_codec.h"
#include "worker/fetch_client.h"

namespace isolane {

class WireEgressHub::Channel final : public EgressChannel {
 public:
  Channel(WireEgressHub& hub, Doorbell& wake) : hub_(hub), inbox_(std::make_shared<Inbox>()) {
    inbox_->wake = &wake;
  }
  ~Channel() override { hub_.forget(inbox_.get()); }

  std::uint64_t start(FetchInit init) override {
    FetchCall call;
    call.op = hub_.nextOp_++;
    call.action = FetchCall::Action::kStart;
    call.app = std::move(init.app);
    call.method = std::move(init.method);
    call.url = std::move(init.url);
    call.headers = std::move(init.headers);
    call.body = std::move(init.body);
    call.timeoutMs = static_cast<std::uint32_t>(init.timeout.count());
    hub_.send(call, inbox_, std::move(init.bodyHold));
    return call.op;
  }
  void pull(std::uint64_t op) override { hub_.send(control(op, FetchCall::Action::kPull), {}); }
  void abort(std::uint64_t op) override { hub_.send(control(op, FetchCall::Action::kAbort), {}); }
  void drainInto(std::deque<FetchEvent>& out) override {
    auto events = inbox_->events.lock();
    for (FetchEvent& e : *events) out.push_back(std::move(e));
    events->clear();
  }

 private:
  static FetchCall control(std::uint64_t op, FetchCall::Action action) {
    FetchCall call;
    call.op = op;
    call.action = action;
    return call;
  }
  WireEgressHub& hub_;
  const std::shared_ptr<Inbox> inbox_;
};

std::unique_ptr<EgressChannel> WireEgressHub::channel(Doorbell& wake) {
  return std::make_unique<Channel>(*this, wake);
}

void WireEgressHub::send(const FetchCall& call, const std::shared_ptr<Inbox>& inbox,
                         std::shared_ptr<const void> hold) {
  if (inbox) ops_.lock()->emplace(call.op, inbox);
  Result<std::string> frame = encodeFetchCall(call, max_);
  if (!frame) {
    // Over the frame ceiling (a request body of tens of MiB): an error for this fetch alone.
    deliver(FetchEvent{call.op,
                       FetchEvent::Kind::kError,
                       0,
                       {},
                       {},
                       "the request is too large to send: " + frame.error(),
                       "too-large"});
    return;
  }
  out_.sendBytes(std::move(frame.value()), std::move(hold));
}

void WireEgressHub::deliver(FetchEvent event) {
  std::shared_ptr<Inbox> inbox;
  {
    auto ops = ops_.lock();
    auto it = ops->find(event.op);
    if (it == ops->end()) return;
    inbox = it->second;
    if (event.kind == FetchEvent::Kind::kEnd || event.kind == FetchEvent::Kind::kError) {
      ops->erase(it);
    }
  }
  inbox->events.lock()->push_back(std::move(event));
  inbox->wake->ring();
}

void WireEgressHub::forget(const Inbox* inbox) {
  auto ops = ops_.lock();
  for (auto it = ops->begin(); it != ops->end();) {
    it = it->second.get() == inbox ? ops->erase(it) : std::next(it);
  }
}

}  // namespace isolane
