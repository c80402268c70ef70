#pragma once
// A request handed to an executor, with the function that takes its answer.

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>

#include "ipc/http_exchange.h"
#include "worker/stream_sink.h"

namespace isolane {

struct RequestJob {
  AppRequest request;
  // Called exactly once, on the executor thread (or, for a request answered before it started,
  // on the thread that took it out of the queue: a withdrawal, a move); must not block (post to
  // your own thread).
  std::function<void(AppResponse)> done;
  // Names the request for Executor::cancel; 0: not cancellable.
  std::uint64_t cancelKey = 0;
  // When the executor accepted it: its wall-clock deadline counts from here, so time spent
  // waiting behind another request's turn counts too.
  std::chrono::steady_clock::time_point received{};
  // Service-binding calls between this request and the client's (0 for a client's request).
  int depth = 0;
  // Where a streamed body goes. Null: the caller wants every body whole in the AppResponse
  // (service-binding calls, `isolane run`), and a stream body is read to its end first.
  std::shared_ptr<StreamSink> sink = {};
  // The request body arrives after the request, through Executor::requestBody (`request.body` is
  // empty). `bodyConsumed(n)` is called on the executor thread as the app reads n bytes of it (or
  // as the host gathers them for an app that reads the body whole): the submitter sends that much
  // more.
  bool bodyStreamed = false;
  std::function<void(std::size_t bytes)> bodyConsumed = {};
  // The request's own bounds, over the loop's (0: the loop's): wall time to its answer (time
  // waiting on tool calls not counted) and CPU time of its JavaScript.
  std::chrono::milliseconds wallTimeout{0};
  std::chrono::milliseconds cpuLimit{0};
};

}  // namespace isolane
