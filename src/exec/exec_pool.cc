// ExecPool: leases, the queue, tool calls and settling (workers: exec_pool_workers.cc).
#include "exec/exec_pool.h"

#include <signal.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "exec/exec_pool_state.h"
#include "ipc/exec_codec.h"
#include "ipc/frame_codec.h"
#include "obs/events.h"
#include "obs/log.h"

namespace isolane {
namespace {

double secondsBetween(SteadyTime from, SteadyTime to) {
  return std::chrono::duration<double>(to - from).count();
}

bool isJson(const std::string& text) { return nlohmann::json::accept(text); }

}  // namespace

void ExecPool::emitLocked(Level level, std::string_view name,
                          std::initializer_list<LogField> fields) {
  logEvent(level, name, fields);
  if (name.starts_with("worker.")) {  // a worker's transition: for the dashboard too
    int worker = -1;
    std::int64_t pid = 0;
    std::string detail;
    for (const auto& [key, value] : fields) {
      if (key == "worker" && value.is_number_integer()) worker = value.get<int>();
      if (key == "pid" && value.is_number_integer()) pid = value.get<std::int64_t>();
      if (key == "reason" && value.is_string()) detail = value.get<std::string>();
    }
    recordEvent(std::string(name.substr(7)), worker, pid, std::move(detail));
  }
  if (!options_.onEvent) return;
  nlohmann::ordered_json event;
  event["event"] = name;
  for (const auto& [key, value] : fields) event[std::string(key)] = value;
  options_.onEvent(event);
}

void ExecPool::After::run() {
  for (auto& [proc, frame] : frames) std::ignore = proc->send(std::move(frame));
  frames.clear();
  for (auto& call : calls) {
    // A caller's callback (done, a dispatcher) that throws must not end the pool's thread.
    try {
      call();
    } catch (const std::exception& e) {
      logEvent(Level::kError, "a code-mode callback threw", {{"error", e.what()}});
    } catch (...) {
      logEvent(Level::kError, "a code-mode callback threw");
    }
  }
}

void ExecPool::cancel(std::uint64_t id) {
  After after;
  {
    std::lock_guard lock(mu_);
    auto it = executions_.find(id);
    if (it == executions_.end()) return;
    Execution& e = *it->second;
    if (e.worker == 0) {
      queue_.erase(std::remove(queue_.begin(), queue_.end(), id), queue_.end());
      for (auto& [wid, w] : workers_) {
        w->reserved.erase(std::remove(w->reserved.begin(), w->reserved.end(), id),
                          w->reserved.end());
      }
    } else if (auto w = workers_.find(e.worker); w != workers_.end()) {
      w->second->cancelled.insert(id);
      after.frames.emplace_back(w->second->proc, encodeCancel(id, options_.maxFrameBytes).value());
    }
    settleLocked(id,
                 ExecutionOutcome::failed(ExecErrorCode::kConnectionBroken,
                                          "The caller went away; the execution was cancelled."),
                 after);
    serveQueueLocked(after);
  }
  after.run();
}

ExecPool::ExecPool(ExecPoolOptions options, MetricsRegistry& metrics, const Clock& clock,
                   Supervision supervision)
    : options_(std::move(options)),
      clock_(clock),
      manual_(supervision == Supervision::kManual),
      reactor_(options_.reactor, 1, "isolane-xio"),
      executionsTotal_(metrics.counter("isolane_executions_total",
                                       "Code-mode executions by outcome (ok or an error code).",
                                       {"outcome"})),
      workerEvents_(metrics.counter(
          "isolane_exec_worker_events_total",
          "Code-mode worker transitions: spawn, retire, crash, spawn_failed, backoff (the crash "
          "budget was spent: no spawn for a while).",
          {"event"})),
      queueDepth_(metrics.gauge("isolane_exec_queue_depth",
                                "Executions waiting for a worker, as of the last lease.")),
      queueWait_(metrics.histogram("isolane_exec_queue_wait_seconds",
                                   "Time from an execution's arrival to its start on a worker.", {},
                                   latencyBuckets())),
      toolDuration_(metrics.histogram(
          "isolane_exec_tool_call_seconds",
          "Time from a guest's tool call leaving its worker to the caller's answer.", {},
          latencyBuckets())),
      executionDuration_(metrics.histogram("isolane_exec_duration_seconds",
                                           "Time an execution ran on its worker.", {},
                                           latencyBuckets())),
      egress_(FetchClientOptions{}, options_.maxFrameBytes) {
  egress_.setApps({AppSpec{std::string(kCodeModeEgressApp), "", {}}});
  crashBudget_ = CrashBudget(options_.crashBudget);
  backoff_ = FloorBackoff(options_.crashBudget);
  if (!manual_) supervisor_ = std::thread([this] { superviseLoop(); });
}

ExecPool::~ExecPool() {
  shutdown(std::chrono::milliseconds(0));
  if (supervisor_.joinable()) supervisor_.join();
  std::vector<std::shared_ptr<WorkerChannel>> dead;
  {
    std::lock_guard lock(mu_);
    dead.swap(graveyard_);
    for (auto& [proc, at] : ending_) dead.push_back(proc);
    ending_.clear();
    for (auto& [id, w] : workers_) dead.push_back(w->proc);
    workers_.clear();
  }
  for (auto& p : dead) {
    if (p) p->kill(SIGKILL);
  }
}

bool ExecPool::stopping() const {
  std::lock_guard lock(mu_);
  return shuttingDown_;
}

ExecPool::Stats ExecPool::stats() const {
  std::lock_guard lock(mu_);
  Stats s;
  s.workers = workers_.size();
  for (const auto& [id, w] : workers_) {
    if (w->life.ready() || w->life.state() == WorkerState::kDraining) ++s.ready;
    s.running += w->running.size();
  }
  s.queued = queue_.size();
  return s;
}

std::vector<ExecPool::WorkerView> ExecPool::workerViews() const {
  std::lock_guard lock(mu_);
  std::vector<WorkerView> views;
  for (const auto& [id, w] : workers_) {
    WorkerView v;
    v.id = id;
    v.pid = w->proc ? w->proc->pid() : 0;
    switch (w->life.state()) {
      case WorkerState::kResting:  // (a worker resting is no longer in workers_)
      case WorkerState::kSpawning:
      case WorkerState::kLoading:
        v.state = "starting";
        break;
      case WorkerState::kDraining:
        v.state = "draining";
        break;
      case WorkerState::kKilling:
        v.state = "killing";
        break;
      case WorkerState::kReady:
        v.state = w->running.empty() ? "idle" : "busy";
        break;
    }
    v.running = w->running.size();
    v.executions = w->executions;
    v.rssBytes = w->rssBytes;
    views.push_back(v);
  }
  return views;
}

std::uint64_t ExecPool::execute(ExecutionSpec spec, ToolDispatch dispatch,
                                std::function<void(ExecutionOutcome)> done) {
  After after;
  std::uint64_t id;
  {
    std::lock_guard lock(mu_);
    id = nextExecution_++;
    auto refuse = [&](ExecErrorCode code, std::string message) {
      executionsTotal_.with({std::string(execErrorName(code))}).inc();
      emitLocked(Level::kInfo, "execution.reject",
                 {{"execution", id}, {"code", execErrorName(code)}, {"message", message}});
      after.calls.push_back([done = std::move(done), code, message = std::move(message)] {
        done(ExecutionOutcome::failed(code, message));
      });
    };
    // Every lease publishes the depth it found, so the series exists from the first execution.
    queueDepth_.with({}).set(static_cast<double>(queue_.size()));
    if (shuttingDown_) {
      refuse(ExecErrorCode::kConnectionBroken, "The pool is shutting down.");
    } else if (stalledLocked()) {
      refuse(ExecErrorCode::kWorkerCrashed, stalledWhy());
    } else if (auto problem = validateExecutionSpec(spec)) {
      refuse(ExecErrorCode::kInternal, "The execution was refused: " + *problem + ".");
    } else {
      auto e = std::make_unique<Execution>();
      e->id = id;
      e->spec = std::move(spec);
      e->timeoutMs = e->spec.timeoutMs;
      e->dispatch = std::move(dispatch);
      e->done = std::move(done);
      e->arrived = clock_.now();
      Execution& exec = *e;
      if (Worker* w = pickLocked()) {
        executions_.emplace(id, std::move(e));
        startLocked(exec, *w, after);
      } else if (maySpawnLocked()) {
        executions_.emplace(id, std::move(e));
        spawnLocked(after).reserved.push_back(id);
      } else if (queue_.size() < options_.maxQueue) {
        executions_.emplace(id, std::move(e));
        queue_.push_back(id);
      } else {
        done = std::move(e->done);
        refuse(ExecErrorCode::kQueueOverflow, "The queue is at its bound of " +
                                                  std::to_string(options_.maxQueue) +
                                                  ". Retry when a running execution settles.");
      }
    }
  }
  after.run();
  return id;
}

ExecPool::Worker* ExecPool::pickLocked() {
  Worker* best = nullptr;
  for (auto& [id, w] : workers_) {  // in spawn order: the earliest wins a tie
    if (!w->life.ready()) continue;
    if (w->running.size() >= options_.executionsPerWorker) continue;
    if (!best || w->running.size() < best->running.size()) best = w.get();
  }
  return best;
}

void ExecPool::startLocked(Execution& e, Worker& w, After& after) {
  SteadyTime now = clock_.now();
  e.worker = w.id;
  e.started = now;
  e.killAt = now + std::chrono::milliseconds(e.timeoutMs) + options_.executionGrace +
             options_.terminationDelay;
  w.running.insert(e.id);
  Result<std::string> frame = encodeExecute(e.id, e.spec, options_.maxFrameBytes);
  e.tools = std::move(e.spec.tools);
  e.nativeOutbound = e.spec.outbound == OutboundMode::kNative;
  if (e.nativeOutbound) ++w.nativeOutbound;
  e.spec = ExecutionSpec{};  // the worker has it now
  queueWait_.with({}).observe(secondsBetween(e.arrived, now));
  emitLocked(
      Level::kInfo, "execution.start",
      {{"execution", e.id},
       {"worker", w.id},
       {"queue_wait_ms", std::chrono::duration<double, std::milli>(now - e.arrived).count()}});
  if (!frame) {
    settleLocked(e.id,
                 ExecutionOutcome::failed(ExecErrorCode::kPayloadLimit,
                                          "The execution does not fit one frame: " + frame.error()),
                 after);
    return;
  }
  after.frames.emplace_back(w.proc, std::move(frame.value()));
  wake_.notify_all();  // its termination schedule
}

void ExecPool::serveQueueLocked(After& after) {
  while (!queue_.empty()) {
    Worker* w = pickLocked();
    if (!w) {
      if (maySpawnLocked()) {
        Worker& spawned = spawnLocked(after);
        spawned.reserved.push_back(queue_.front());
        queue_.pop_front();
        continue;
      }
      break;
    }
    std::uint64_t id = queue_.front();
    queue_.pop_front();
    auto it = executions_.find(id);
    if (it != executions_.end()) startLocked(*it->second, *w, after);
  }
}

void ExecPool::failOneWaitingLocked(const std::string& why, After& after) {
  if (queue_.empty()) return;
  std::uint64_t id = queue_.front();
  queue_.pop_front();
  settleLocked(id, ExecutionOutcome::failed(ExecErrorCode::kWorkerCrashed, why), after);
}

void ExecPool::settleLocked(std::uint64_t id, ExecutionOutcome outcome, After& after) {
  auto node = executions_.extract(id);
  if (node.empty()) return;
  Execution& e = *node.mapped();
  SteadyTime now = clock_.now();
  Worker* w = nullptr;
  if (e.worker != 0) {
    if (auto it = workers_.find(e.worker); it != workers_.end()) w = it->second.get();
  }
  if (w) {
    w->running.erase(id);
    ++w->executions;
    if (e.nativeOutbound && w->nativeOutbound) --w->nativeOutbound;
  }
  std::string outcomeName = outcome.ok() ? "ok" : std::string(execErrorName(outcome.error));
  executionsTotal_.with({outcomeName}).inc();
  if (e.worker == 0) {
    // Refused before it started (a failed spawn, a shutdown emptying the queue): no settle.
    emitLocked(Level::kInfo, "execution.reject",
               {{"execution", id}, {"code", outcomeName}, {"message", outcome.message}});
  } else {
    executionDuration_.with({}).observe(secondsBetween(e.started, now));
  }
  if (e.worker != 0)
    emitLocked(Level::kInfo, "execution.settle",
               {{"execution", id},
                {"worker", e.worker},
                {"outcome", outcomeName},
                {"tool_calls", outcome.toolCalls},
                {"duration_ms", static_cast<double>(outcome.durationUs) / 1000.0}});
  after.calls.push_back([done = std::move(e.done), outcome = std::move(outcome)]() mutable {
    done(std::move(outcome));
  });
  wake_.notify_all();  // a shutdown may wait for the last one
  if (w) retireIfDueLocked(*w, after);
}

void ExecPool::onToolCall(Worker& w, const wire::ToolCall& m, After& after) {
  auto it = executions_.find(m.id());
  if (it == executions_.end() && w.cancelled.count(m.id())) return;  // cancelled: moot
  if (it == executions_.end() || it->second->worker != w.id) {
    killLocked(w, "a ToolCall for an execution it does not run");
    return;
  }
  Execution& e = *it->second;
  std::uint64_t call = m.call();
  ToolCallRequest request{e.id, m.provider() ? m.provider()->str() : "",
                          m.tool() ? m.tool()->str() : "",
                          m.args_json() ? m.args_json()->str() : "null"};
  // Only what the caller granted this execution reaches the caller, and only so many at once:
  // a worker that asks for more is not the runtime we started.
  bool granted = false;
  for (const ToolProvider& p : e.tools) {
    if (p.name != request.provider) continue;
    for (const std::string& t : p.tools) granted = granted || t == request.tool;
  }
  if (!granted || e.toolWaits >= kMaxToolCallsInFlight) {
    killLocked(w, granted ? "more tool calls in flight than any execution may make"
                          : "a call of a tool its execution was not given");
    return;
  }
  if (e.toolWaits++ == 0) {  // the caller's wait pauses the termination schedule
    SteadyTime now = clock_.now();
    e.pausedLeft = e.killAt > now ? e.killAt - now : std::chrono::nanoseconds(0);
    e.killAt = SteadyTime::max();
  }
  SteadyTime askedAt = clock_.now();
  std::uint64_t workerId = w.id;
  std::uint64_t id = e.id;
  // What the worker sent is checked here too: an answer never goes to the caller unchecked.
  if (!isJson(request.argsJson) || request.provider.empty() || request.tool.empty()) {
    after.calls.push_back([this, workerId, id, call, askedAt] {
      answerTool(workerId, id, call, false, "the tool call's arguments are not JSON", askedAt);
    });
    return;
  }
  if (!e.dispatch) {
    after.calls.push_back([this, workerId, id, call, askedAt] {
      answerTool(workerId, id, call, false, "this execution has no tool dispatcher", askedAt);
    });
    return;
  }
  // The dispatcher may answer at once, on this thread: only after mu_ is released.
  after.calls.push_back(
      [this, dispatch = e.dispatch, request = std::move(request), workerId, id, call, askedAt] {
        // Answers once; a reply the dispatcher drops without calling answers for it (the guest's
        // call rejects instead of holding the execution's clock paused for ever).
        struct Once {
          ExecPool* pool;
          std::uint64_t workerId, id, call;
          SteadyTime askedAt;
          std::atomic<bool> answered{false};
          void answer(bool ok, std::string text) {
            if (!answered.exchange(true)) {
              pool->answerTool(workerId, id, call, ok, std::move(text), askedAt);
            }
          }
          ~Once() { answer(false, "the tool dispatcher dropped the call without answering"); }
        };
        auto once = std::make_shared<Once>();
        once->pool = this;
        once->workerId = workerId;
        once->id = id;
        once->call = call;
        once->askedAt = askedAt;
        dispatch(request, [once](bool ok, std::string text) { once->answer(ok, std::move(text)); });
      });
}

void ExecPool::answerTool(std::uint64_t workerId, std::uint64_t id, std::uint64_t call, bool ok,
                          std::string text, SteadyTime askedAt) {
  if (ok && !isJson(text)) {
    ok = false;
    text = "the tool's answer is not JSON";
  }
  After after;
  {
    std::lock_guard lock(mu_);
    auto it = executions_.find(id);
    auto w = workers_.find(workerId);
    if (it == executions_.end() || it->second->worker != workerId || w == workers_.end()) return;
    Execution& e = *it->second;
    if (e.toolWaits > 0 && --e.toolWaits == 0) {
      // The worker's clock paused a little longer than ours (the frames' transit): that slack.
      e.killAt = clock_.now() + e.pausedLeft + std::chrono::milliseconds(5);
      wake_.notify_all();
    }
    toolDuration_.with({}).observe(secondsBetween(askedAt, clock_.now()));
    Result<std::string> frame = encodeToolAnswer(id, call, ok, text, options_.maxFrameBytes);
    if (!frame) {
      frame = encodeToolAnswer(id, call, false,
                               "the tool's answer does not fit one frame (" + frame.error() + ")",
                               options_.maxFrameBytes);
    }
    after.frames.emplace_back(w->second->proc, std::move(frame.value()));
  }
  after.run();
}

}  // namespace isolane
