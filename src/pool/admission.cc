#include "pool/admission.h"

#include <algorithm>
#include <set>

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
  if (up) {
    ++appInFlight_[app];
    return;
  }
  auto it = appInFlight_.find(app);
  if (it == appInFlight_.end()) return;
  if (--it->second == 0) appInFlight_.erase(it);
}

bool Admission::overFairShare(const std::string& app) const {
  std::lock_guard<std::mutex> lock(mu_);
  // Equal shares among the apps with requests in flight.
  std::size_t total = 0, apps = 0, mine = 0;
  for (const auto& [name, n] : appInFlight_) {
    if (n == 0) continue;
    total += n;
    ++apps;
    if (name == app) mine = n;
  }
  // An app with nothing in flight is under any share (and when nothing at all is in flight the
  // queue the figures speak of has drained).
  return mine > 0 && mine * apps >= total;
}

std::optional<std::string> Admission::waitOrShed(WaitingRequest& w, const Unplaced& why) {
  bool stream = w.request.streaming;
  std::string reason = !why.admitted  ? (stream ? "stream-full" : "queue-full")
                       : why.allWedged ? "all-wedged"
                       : why.anyReady  ? "worker-full"
                                       : "no-worker";
  // With no worker ready but one starting (the rest of the pool's start, a respawn), or with
  // every worker inside a long turn (one comes free within the CPU limit), an admitted request
  // waits, up to queue_timeout_ms, instead of failing: as many as its cap admits, even when
  // max_queue is 0.
  std::size_t room = options_.maxQueue;
  if (why.admitted && ((!why.anyReady && why.anyStarting) || why.allWedged)) {
    room = std::max(room, cap(stream).cap());
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (queue_.size() >= room) return reason;
  queue_.push_back(std::move(w));
  waiting_.store(queue_.size(), std::memory_order_release);
  return std::nullopt;
}

std::vector<WaitingRequest> Admission::takeReady(
    const std::function<Fit(const WaitingRequest&)>& fits) {
  std::vector<WaitingRequest> ready;
  std::set<std::string> blocked;
  std::lock_guard<std::mutex> lock(mu_);
  for (auto it = queue_.begin(); it != queue_.end();) {
    Fit fit = fits(*it);
    if (!fit.fits || blocked.count(fit.key)) {
      blocked.insert(fit.key);
      ++it;
      continue;
    }
    ready.push_back(std::move(*it));
    it = queue_.erase(it);
  }
  waiting_.store(queue_.size(), std::memory_order_release);
  return ready;
}

std::vector<WaitingRequest> Admission::expire(SteadyTime now) {
  std::vector<WaitingRequest> expired;
  std::lock_guard<std::mutex> lock(mu_);
  while (!queue_.empty() && now - queue_.front().arrived > options_.queueTimeout) {
    expired.push_back(std::move(queue_.front()));
    queue_.pop_front();
  }
  waiting_.store(queue_.size(), std::memory_order_release);
  return expired;
}

std::vector<WaitingRequest> Admission::takeAll() {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<WaitingRequest> all(std::make_move_iterator(queue_.begin()),
                                  std::make_move_iterator(queue_.end()));
  queue_.clear();
  waiting_.store(0, std::memory_order_release);
  return all;
}

std::optional<WaitingRequest> Admission::cancelWaiting(std::uint64_t id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = std::find_if(queue_.begin(), queue_.end(),
                         [&](const WaitingRequest& w) { return w.id == id; });
  if (it == queue_.end()) return std::nullopt;
  WaitingRequest w = std::move(*it);
  queue_.erase(it);
  waiting_.store(queue_.size(), std::memory_order_release);
  return w;
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

AppResponse Admission::overloaded(std::chrono::milliseconds shedDelay) {
  return AppResponse::shed("overloaded", "shed: every worker has a standing queue over " +
                                             std::to_string(shedDelay.count()) +
                                             " ms (shed_delay_ms)");
}

}  // namespace isolane
