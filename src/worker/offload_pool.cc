#include "worker/offload_pool.h"

namespace isolane {

OffloadPool::~OffloadPool() {
  {
    auto s = state_.lock();
    s->stop = true;
    s->queue.clear();
  }
  cv_.notify_one();
  if (thread_.joinable()) thread_.join();
}

void OffloadPool::post(std::uint64_t op, OffloadWork work) {
  state_.lock()->queue.emplace_back(op, std::move(work));
  if (!thread_.joinable()) thread_ = std::thread([this] { run(); });
  cv_.notify_one();
}

void OffloadPool::drop(std::uint64_t op) {
  auto s = state_.lock();
  for (auto it = s->queue.begin(); it != s->queue.end(); ++it) {
    if (it->first == op) {
      s->queue.erase(it);
      return;
    }
  }
}

std::deque<std::pair<std::uint64_t, OffloadResult>> OffloadPool::collect() {
  auto s = state_.lock();
  std::deque<std::pair<std::uint64_t, OffloadResult>> out;
  out.swap(s->done);
  s->doneCount = 0;
  return out;
}

void OffloadPool::run() {
  for (;;) {
    std::pair<std::uint64_t, OffloadWork> job;
    {
      auto s = state_.lock();
      cv_.wait(s.unique(), [&] { return s->stop || !s->queue.empty(); });
      if (s->stop) return;
      job = std::move(s->queue.front());
      s->queue.pop_front();
    }
    OffloadResult result = job.second();
    {
      auto s = state_.lock();
      s->done.emplace_back(job.first, std::move(result));
      ++s->doneCount;
    }
    wake_.ring();
  }
}

}  // namespace isolane
