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

std::size_t ForegroundTasks::runDue(v8::Isolate* isolate) {
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
  std::size_t ran = 0;
  while (!due.empty() && !isolate->IsExecutionTerminating()) {
    std::unique_ptr<v8::Task> task = std::move(due.front());
    due.pop_front();
    task->Run();
    ++ran;
  }
  if (!due.empty()) {  // a task was terminated: the others run on the next call
    auto q = queues_.lock();
    while (!due.empty()) {
      q->ready.push_front(std::move(due.back()));
      due.pop_back();
    }
  }
  return ran;
}

std::optional<ForegroundTasks::Clock::time_point> ForegroundTasks::nextDue() {
  auto q = queues_.lock();
  if (!q->ready.empty()) return Clock::now();
  if (!q->delayed.empty()) return q->delayed.top().due;
  return std::nullopt;
}

void ForegroundTasks::clear() {
  // Destroyed outside the lock: a task's destructor is V8's code and may post.
  Queues dropped;
  {
    auto q = queues_.lock();
    std::swap(dropped.ready, q->ready);
    std::swap(dropped.delayed, q->delayed);
  }
}

TaskDelegate::TaskDelegate(std::shared_ptr<ForegroundTasks> tasks) : tasks_(std::move(tasks)) {}
TaskDelegate::~TaskDelegate() = default;
std::shared_ptr<v8::TaskRunner> TaskDelegate::GetForegroundTaskRunner() { return tasks_; }
bool TaskDelegate::IdleTasksEnabled() { return false; }

}  // namespace isolane
