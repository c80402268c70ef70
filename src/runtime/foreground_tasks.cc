#include "runtime/foreground_tasks.h"

namespace isolane {

void ForegroundTasks::post(std::unique_ptr<v8::Task> task, double delaySeconds) {
  {
    auto q = queues_.lock();
    if (delaySeconds <= 0) {
      q->ready.push_back(std::move(task));
    } else {
      auto delay =
          std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(delaySeconds));
      q->delayed.push(Delayed{Clock::now() + delay, q->seq++, std::move(task)});
    }
  }
  if (wake_) wake_();
}

void ForegroundTasks::PostTaskImpl(std::unique_ptr<v8::Task> task, const v8::SourceLocation&) {
  post(std::move(task), 0);
}
void ForegroundTasks::PostNonNestableTaskImpl(std::unique_ptr<v8::Task> task,
                                              const v8::SourceLocation&) {
  post(std::move(task), 0);  // we never run tasks while JavaScript runs: none nest
}
void ForegroundTasks::PostDelayedTaskImpl(std::unique_ptr<v8::Task> task, double delaySeconds,
                                          const v8::SourceLocation&) {
  post(std::move(task), delaySeconds);
}
void ForegroundTasks::PostNonNestableDelayedTaskImpl(std::unique_ptr<v8::Task> task,
                                                     double delaySeconds,
                                                     const v8::SourceLocation&) {
  post(std::move(task), delaySeconds);
}

std::size_t ForegroundTasks::runDue() {
  std::deque<std::unique_ptr<v8::Task>> due;
  {
    auto q = queues_.lock();
    due.swap(q->ready);
    Clock::time_point now = Clock::now();
    while (!q->delayed.empty() && q->delayed.top().due <= now) {
      due.push_back(std::move(q->delayed.top().task));
      q->delayed.pop();
    }
  }
  for (auto& task : due) task->Run();
  return due.size();
}

std::optional<ForegroundTasks::Clock::time_point> ForegroundTasks::nextDue() {
  auto q = queues_.lock();
  if (!q->ready.empty()) return Clock::now();
  if (!q->delayed.empty()) return q->delayed.top().due;
  return std::nullopt;
}

void ForegroundTasks::clear() {
  auto q = queues_.lock();
  q->ready.clear();
  while (!q->delayed.empty()) q->delayed.pop();
}

}  // namespace isolane
