#pragma once
// ExecutorSet: the M executor threads of one process (a worker, or the server in process), and
// which of them runs a request: the least loaded thread that already hosts the request's app and
// is not inside a long turn; a thread without the app's isolate only when the ones that have it
// are busier (it then makes one). Controls (cancel, credit, body) follow a request's cancel key to
// the thread that runs it.
//
// Thread rule: every method is safe from any thread.

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "util/guarded.h"
#include "worker/executor.h"

namespace isolane {

class ExecutorSet {
 public:
  // A thread working this long without a pause (wall time; a long turn, or a big isolate's
  // disposal) is busy: new requests go elsewhere.
  // The status page records a turn this long as long when it ends: the same measure.
  static constexpr std::chrono::milliseconds kLongTurn = kLongTurnMark;

  // `page`: where the threads publish what they do, for the master (a worker's status page).
  // `reserve`: one more thread, which takes a request only when every other thread is inside a
  // long turn of another app than the request's (the pool has one thread: one app's long turns
  // must not hold up the others; the OS time-slices the two). It publishes on the page after
  // the others.
  // `moveQueued`: a request that waits, unstarted, behind a thread's long turn moves to a thread
  // that is free (as soon as the turn has lasted kLongTurn, or when a thread comes free), if the
  // router would send it there; one with a streamed body stays (and executions wait in a queue
  // of their own, never moved). Off where the submitter moves requests itself (the in-process
  // backend withdraws and places them again).
  ExecutorSet(std::size_t threads, const ExecutorOptions& options, LogSink& log,
              const Clock& clock = SystemClock::instance(), StatusPage* page = nullptr,
              bool reserve = false, bool moveQueued = false);
  ~ExecutorSet();
  ExecutorSet(const ExecutorSet&) = delete;
  ExecutorSet& operator=(const ExecutorSet&) = delete;

  // Loads the app: its isolate is made on the first thread (the load's errors and code cache are
  // that one's); the others make theirs when the router first sends them its work.
  Status loadApp(const AppSpec& spec, AppLoadReport* report = nullptr);

  // False when the chosen thread's queue is full or it is stopping (`job` untouched).
  bool submit(RequestJob& job);
  // The same, on the thread the caller chose (< size()).
  bool submitTo(std::size_t thread, RequestJob& job);
  // A code-mode execution, on the least loaded thread (false: no room, `job` untouched).
  bool submitExecution(ExecutionJob& job);
  void cancel(std::uint64_t key);
  void withdraw(std::uint64_t key);
  void credit(std::uint64_t key, std::size_t bytes);
  void requestBody(std::uint64_t key, std::string piece, bool end, std::string error);
  void toolAnswer(std::uint64_t key, std::uint64_t call, bool ok, std::string text);
  void stop();

  // Thread `thread` (< size(): not the reserve) reads `inbox` itself from now on, between its
  // passes, and true; false when there is no such thread. A request read from it runs on that
  // thread (submitTo), unless it waits behind a long turn there (moveQueued).
  bool attachInbox(std::size_t thread, ExecutorInbox* inbox);

  // The threads requests are spread over (the reserve not counted); thread indexes go up to
  // size(), which is the reserve's when there is one.
  std::size_t size() const { return regular_; }
  bool hasReserve() const { return executors_.size() > regular_; }
  std::size_t pending() const;
  std::size_t pending(std::size_t thread) const { return executors_[thread]->pending(); }
  Executor::Stats stats() const;  // summed over the threads

  // Which thread a request for `app` would go to now (where the submitter does not choose: the
  // in-process backend, executions, a worker whose threads share one socket).
  std::size_t pick(const std::string& app) const;

 private:
  class RoutedSink;
  // With a reserve: whether it takes a request of `app` now (pick's last word).
  bool reserveTakes(const std::string& app, std::chrono::steady_clock::time_point now) const;
  Executor* routeOf(std::uint64_t key);
  void forget(std::uint64_t key);
  // moveQueued: thread `from` has been in one turn for kLongTurn; what waits behind it (or only
  // the request of cancel key `onlyKey`, just placed there) goes where pick() sends it, if that
  // thread is free. From any thread.
  void moveQueuedOff(std::size_t from, std::uint64_t onlyKey = 0);
  // moveQueued: thread `self` is about to wait for work; it takes what waits behind the others'
  // long turns. On that executor thread.
  void takeOverLongTurns(std::size_t self);
  bool workingLong(std::size_t thread, std::chrono::steady_clock::time_point now) const;
  // The threads other than `from` neither working for long nor inside a turn.
  std::size_t othersFree(std::size_t from, std::chrono::steady_clock::time_point now) const;
  // moveQueued: at most this many requests go to one thread per scan.
  static constexpr std::size_t kMoveBatch = 16;

  // Cancel key -> thread, from submit until the answer (or its streamed body) ends. Declared
  // first: the executors' last answers (on stop) still forget their routes. A cancel reaches
  // its thread under this lock, and a request moves under it: one comes first, whole.
  Guarded<std::unordered_map<std::uint64_t, std::size_t>> routes_;
  std::vector<std::unique_ptr<Executor>> executors_;
  std::size_t regular_ = 0;  // executors_ before the reserve
  // One thread: every request and control goes to it, with no route kept and nothing to move.
  bool single_ = false;
  bool moveQueued_ = false;
  std::atomic<bool> ready_{false};  // every executor is made: the hooks may move requests
  // Per thread: what its last scan that moved nothing saw (the other threads free, its pending
  // count); pending 0: none. Not repeated until one of the two has changed.
  struct Futile {
    std::atomic<std::size_t> free{0};
    std::atomic<std::uint64_t> pending{0};
  };
  std::array<Futile, StatusPage::kMaxThreads> futile_{};
  // The apps seen in a long turn while every thread was (by appTag), and when: the reserve
  // takes none of them for kHeavyMemory. Bounded by the apps the worker runs.
  static constexpr std::chrono::seconds kHeavyMemory{5};
  mutable std::mutex longTurnsMu_;
  mutable std::unordered_map<std::uint64_t, std::chrono::steady_clock::time_point> longTurns_;
};

}  // namespace isolane
