#pragma once
// ExecPool's bookkeeping: a worker and an execution as the pool sees them. Internal to exec/.
//
// Thread rule: guarded by ExecPool::mu_.

#include <set>

#include "exec/exec_pool.h"
#include "pool/worker_lifecycle.h"

namespace isolane {

struct ExecPool::Worker {
  std::uint64_t id = 0;
  std::shared_ptr<WorkerChannel> proc;
  // Its state, heartbeats and deadlines (pool/worker_lifecycle.h): loading is the wait for its
  // first heartbeat's answer; draining, for its running executions to settle before it retires.
  WorkerLifecycle life{LifecycleOptions{}, nullptr};
  std::set<std::uint64_t> running;     // executions on it now
  std::set<std::uint64_t> cancelled;   // cancelled while running: their results are moot
  std::deque<std::uint64_t> reserved;  // leases waiting for it to come up
  std::uint64_t executions = 0;        // settled on it
  std::uint64_t rssBytes = 0;          // from its last heartbeat
  const char* retireReason = nullptr;  // "executions" or "memory", once draining
  std::shared_ptr<const Egress::Reply> egressReply;
  std::size_t nativeOutbound = 0;  // running executions that may fetch() (outbound: native)
};

struct ExecPool::Execution {
  std::uint64_t id = 0;
  ExecutionSpec spec;  // sent with Execute, then cleared but for what the checks below need
  std::vector<ToolProvider> tools;  // what the worker may ask the caller for, and nothing else
  bool nativeOutbound = false;
  ToolDispatch dispatch;
  std::function<void(ExecutionOutcome)> done;
  SteadyTime arrived{};
  std::uint64_t worker = 0;  // 0 while queued
  SteadyTime started{};
  std::uint32_t timeoutMs = 0;
  // The termination schedule: the worker is killed at killAt, unless tool calls wait on the
  // caller (then it is paused with `pausedLeft` remaining).
  SteadyTime killAt = SteadyTime::max();
  std::size_t toolWaits = 0;  // tool calls waiting on the caller (at most kMaxToolCallsInFlight)
  std::chrono::nanoseconds pausedLeft{0};
};

}  // namespace isolane
