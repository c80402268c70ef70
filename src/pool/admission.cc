#include "pool/admission.h"

#include <algorithm>

namespace isolane {

Admission::Admission(AdmissionOptions options)
    : options_(options), admitted_(options.maxInflight), streams_(options.streamMaxInflight) {}

bool Admission::toStream() {
  if (!streams_.tryTake()) return false;
  admitted_.give();
  return true;
}

void Admission::countApp(const std::string& app, bool up) {
  std::lock_guard<std::mutex> lock(mu_);
  inFlight_.count(app, up);
}

bool Admission::overFairShare(const std::string& app) const {
  // Equal shares among the apps with requests in flight. (When nothing at all is in flight the
  // queue the figures speak of has drained.)
  std::lock_guard<std::mutex> lock(mu_);
  return inFlight_.atLeastEqualShare(app);
}

WaitOutcome Admission::waitOrShed(WaitingRequest& w, const Unplaced& why) {
  bool stream = w.request.streaming;
  std::string reason = !why.admitted  ? (stream ? "stream-full" : "queue-full")
                       : why.confined  ? "app-overloaded"
                       : why.allWedged ? "all-wedged"
                       : why.anyReady  ? "worker-full"
                                       : "no-worker";
  // With no worker ready but one starting (the rest of the pool's start, a respawn), or with
  // every worker inside a long turn (one comes free within the CPU limit), an admitted request
  // waits, up to queue_timeout_ms, instead of failing: as many as its cap admits, even when
  // max_queue is 0. So does a confined heavy app's, behind its own.
  std::size_t room = options_.maxQueue;
  if (why.admitted && ((!why.anyReady && why.anyStarting) || why.allWedged || why.confined)) {
    room = std::max(room, cap(stream).cap());
  }
  const std::string& app = w.request.app;
  WaitOutcome out;
  std::lock_guard<std::mutex> lock(mu_);
  auto mine = queues_.find(app);
  std::size_t mineWaiting = mine == queues_.end() ? 0 : mine->second.size();
  // A heavy app whose queue stands (its oldest has waited past shed_delay_ms) is shed at once:
  // its requests would only wait out their timeout behind its own long turns.
  if (why.confined && why.fresh && mineWaiting > 0 && options_.shedDelay.count() > 0 &&
      why.now - mine->second.front().arrived > options_.shedDelay) {
    out.shed = "app-overloaded";
    return out;
  }
  if (waiting_.load(std::memory_order_relaxed) >= room) {
    // Full: the app with the most waiting gives its newest place up, if it has more than this
    // one's would be.
    auto longest = queues_.end();
    for (auto it = queues_.begin(); it != queues_.end(); ++it) {
      if (longest == queues_.end() || it->second.size() > longest->second.size()) longest = it;
    }
    if (room == 0 || longest == queues_.end() || longest->second.size() <= mineWaiting + 1) {
      out.shed = reason;
      return out;
    }
    out.displaced = std::move(longest->second.back());
    longest->second.pop_back();
    --waitingCount_;
    if (longest->second.empty()) {
      std::erase(turn_, longest->first);
      queues_.erase(longest);
    }
  }
  std::deque<WaitingRequest>& q = queues_[app];
  if (q.empty()) turn_.push_back(app);
  q.push_back(std::move(w));
  ++waitingCount_;
  waiting_.store(waitingCount_, std::memory_order_release);
  return out;
}

std::vector<WaitingRequest> Admission::takeReady(
    const std::function<bool(const WaitingRequest&)>& fits) {
  std::vector<WaitingRequest> ready;
  std::lock_guard<std::mutex> lock(mu_);
  // Rounds over the apps in turn: each app whose oldest fits gives one and goes to the back;
  // one whose oldest does not is done for this call (it keeps its place in the turn).
  std::vector<std::string> done;
  std::deque<std::string> next;
  bool progress = true;
  while (progress) {
    progress = false;
    std::size_t n = turn_.size();
    for (std::size_t i = 0; i < n; ++i) {
      std::string app = std::move(turn_.front());
      turn_.pop_front();
      std::deque<WaitingRequest>& q = queues_[app];
      if (!fits(q.front())) {
        done.push_back(std::move(app));
        continue;
      }
      ready.push_back(std::move(q.front()));
      q.pop_front();
      progress = true;
      if (q.empty()) {
        queues_.erase(app);
      } else {
        turn_.push_back(std::move(app));
      }
    }
  }
  // The apps that could not go keep their turn ahead of the ones served this time.
  for (auto it = done.rbegin(); it != done.rend(); ++it) turn_.push_front(std::move(*it));
  waitingCount_ -= ready.size();
  waiting_.store(waitingCount_, std::memory_order_release);
  return ready;
}

std::vector<WaitingRequest> Admission::expire(SteadyTime now) {
  std::vector<WaitingRequest> expired;
  std::lock_guard<std::mutex> lock(mu_);
  for (auto it = queues_.begin(); it != queues_.end();) {
    std::deque<WaitingRequest>& q = it->second;
    while (!q.empty() && now - q.front().arrived > options_.queueTimeout) {
      expired.push_back(std::move(q.front()));
      q.pop_front();
    }
    if (q.empty()) {
      std::erase(turn_, it->first);
      it = queues_.erase(it);
    } else {
      ++it;
    }
  }
  waitingCount_ -= expired.size();
  waiting_.store(waitingCount_, std::memory_order_release);
  return expired;
}

std::vector<WaitingRequest> Admission::takeAll() {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<WaitingRequest> all;
  for (auto& [app, q] : queues_) {
    for (WaitingRequest& w : q) all.push_back(std::move(w));
  }
  queues_.clear();
  turn_.clear();
  waitingCount_ = 0;
  waiting_.store(0, std::memory_order_release);
  return all;
}

std::optional<WaitingRequest> Admission::cancelWaiting(std::uint64_t id) {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto qit = queues_.begin(); qit != queues_.end(); ++qit) {
    std::deque<WaitingRequest>& q = qit->second;
    auto it = std::find_if(q.begin(), q.end(), [&](const WaitingRequest& w) { return w.id == id; });
    if (it == q.end()) continue;
    WaitingRequest w = std::move(*it);
    q.erase(it);
    if (q.empty()) {
      std::erase(turn_, qit->first);
      queues_.erase(qit);
    }
    --waitingCount_;
    waiting_.store(waitingCount_, std::memory_order_release);
    return w;
  }
  return std::nullopt;
}

std::uint64_t Admission::nextId() { return nextId_.fetch_add(1, std::memory_order_relaxed); }

void Admission::collect(Scrape& out) const {
  out.family("isolane_queue_depth", "Requests waiting for room", "gauge");
  out.sample({}, static_cast<double>(waiting()));
  out.family("isolane_pool_inflight", "Requests admitted and not answered", "gauge");
  out.sample({}, static_cast<double>(admitted_.taken()));
}

AppResponse Admission::shed(const std::string& reason) {
  return AppResponse::shed(reason, "shed: " + reason);
}

AppResponse Admission::queueTimeout() const {
  return AppResponse::shed("queue-timeout", "waited longer than " +
                                                std::to_string(options_.queueTimeout.count()) +
                                                " ms in the queue");
}

AppResponse Admission::overloaded() const {
  return AppResponse::shed("overloaded", "shed: every worker has a standing queue over " +
                                             std::to_string(options_.shedDelay.count()) +
                                             " ms (shed_delay_ms)");
}

}  // namespace isolane
