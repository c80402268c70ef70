#include "pool/egress.h"

#include <pthread.h>

#include <algorithm>

#include "ipc/exec_types.h"
#include "ipc/fetch_codec.h"
#include "obs/log.h"

namespace isolane {

Egress::Egress(FetchClientOptions options, std::size_t maxFrameBytes)
    : maxFrameBytes_(maxFrameBytes), client_(wake_, options), thread_([this] { run(); }) {}

Egress::~Egress() {
  stopping_ = true;
  wake_.ring();
  thread_.join();
}

void Egress::setApps(const std::vector<AppSpec>& apps) {
  auto policies = policies_.lock();
  policies->clear();
  for (const AppSpec& app : apps) policies->insert_or_assign(app.name, FetchPolicy(app.fetchAllow));
}

void Egress::fail(const Reply& reply, std::uint64_t workerOp, const std::string& message,
                  const std::string& kind) {
  FetchEvent event{workerOp, FetchEvent::Kind::kError, 0, {}, {}, message, kind};
  if (auto frame = encodeFetchEvent(event, maxFrameBytes_)) (void)reply(frame.value());
}

std::shared_ptr<const Egress::Reply> Egress::replyTo(const std::shared_ptr<WorkerChannel>& worker) {
  std::weak_ptr<WorkerChannel> weak = worker;
  return std::make_shared<const Reply>([weak](const std::string& frame) {
    auto p = weak.lock();
    return p && p->send(frame).ok();
  });
}

void Egress::call(std::uint64_t owner, const std::shared_ptr<const Reply>& reply, FetchCall call) {
  if (call.action != FetchCall::Action::kStart) {
    std::uint64_t op = 0;
    {
      auto table = table_.lock();
      auto it = table->byWorker.find({owner, call.op});
      if (it == table->byWorker.end()) return;  // ended already, or never its own
      op = it->second;
    }
    if (call.action == FetchCall::Action::kPull) {
      client_.pull(op);
    } else {
      client_.abort(op);
    }
    return;
  }
  FetchInit init;
  {
    auto policies = policies_.lock();
    auto it = policies->find(call.app);
    if (it == policies->end()) {
      return fail(*reply, call.op, "no app named '" + call.app + "' may fetch", "policy");
    }
    init.policy = it->second;
  }
  // The master chooses whom a connection is shared with, never the worker: the app it names
  // (whose policy this is), and code-mode executions with nobody.
  init.poolKey = call.app == kCodeModeEgressApp ? std::string() : call.app;
  init.app = std::move(call.app);
  init.method = std::move(call.method);
  init.url = std::move(call.url);
  init.headers = std::move(call.headers);
  init.body = std::move(call.body);
  if (call.timeoutMs > 0) {
    init.timeout = std::min(std::chrono::milliseconds(call.timeoutMs),
                            std::chrono::milliseconds(kMaxTimeout));
  }
  {
    auto table = table_.lock();
    if (table->byWorker.count({owner, call.op})) {
      return fail(*reply, call.op, "operation id reused", "network");
    }
    std::shared_ptr<ByteBudget>& bodies = table->bodies[owner];
    if (!bodies) bodies = std::make_shared<ByteBudget>(kMaxBodyBytesPerWorker);
    ByteCharge charge = ByteCharge::take(bodies, init.body.size());
    if (!charge) {
      return fail(*reply, call.op,
                  "the worker's outbound request bodies in flight are over " +
                      std::to_string(kMaxBodyBytesPerWorker >> 20) + " MiB",
                  "too-large");
    }
    init.bodyHold = std::make_shared<ByteCharge>(std::move(charge));
    std::size_t& count = table->perOwner[owner];
    if (count >= kMaxOpsPerWorker) {
      return fail(*reply, call.op,
                  "too many fetches in flight (" + std::to_string(kMaxOpsPerWorker) + ")",
                  "network");
    }
    ++count;
    // Registered before it starts, under the lock: its first event cannot outrun the entry.
    std::uint64_t op = client_.start(std::move(init));
    table->ops.emplace(op, Op{owner, call.op, reply});
    table->byWorker.emplace(std::make_pair(owner, call.op), op);
  }
}

void Egress::forget(std::uint64_t owner) {
  std::vector<std::uint64_t> aborted;
  {
    auto table = table_.lock();
    for (auto it = table->ops.begin(); it != table->ops.end();) {
      if (it->second.owner == owner) {
        aborted.push_back(it->first);
        table->byWorker.erase({owner, it->second.workerOp});
        it = table->ops.erase(it);
      } else {
        ++it;
      }
    }
    table->perOwner.erase(owner);
    table->bodies.erase(owner);  // what its operations still hold goes with them
  }
  for (std::uint64_t op : aborted) client_.abort(op);
}

void Egress::run() {
  pthread_setname_np(pthread_self(), "isolane-egress");
  std::deque<FetchEvent> events;
  while (!stopping_) {
    client_.drainInto(events);
    for (FetchEvent& event : events) {
      std::shared_ptr<const Reply> reply;
      {
        auto table = table_.lock();
        auto it = table->ops.find(event.op);
        if (it == table->ops.end()) continue;  // its worker is gone
        reply = it->second.reply;
        std::uint64_t clientOp = event.op;
        event.op = it->second.workerOp;
        if (event.kind == FetchEvent::Kind::kEnd || event.kind == FetchEvent::Kind::kError) {
          table->byWorker.erase({it->second.owner, it->second.workerOp});
          if (auto n = table->perOwner.find(it->second.owner); n != table->perOwner.end()) {
            if (--n->second == 0) table->perOwner.erase(n);
          }
          table->ops.erase(clientOp);
        }
      }
      Result<std::string> frame = encodeFetchEvent(event, maxFrameBytes_);
      if (!frame) {
        logEvent(Level::kError, "cannot encode a fetch event", {{"error", frame.error()}});
        continue;
      }
      // A failed send means the worker is dying: forget() follows from its death.
      (void)(*reply)(frame.value());
    }
    events.clear();
    wake_.wait();
  }
}

}  // namespace isolane
