#pragma once
// StreamSink: where the event loop sends a streamed response body, piece by piece, after the
// head went out through RequestJob::done. The submitter provides it: frames to the master in a
// worker process, a BodyPipe to the front in the in-process backend.
//
// Flow control: the loop sends at most kStreamWindowBytes (plus one piece) beyond the credit the
// consumer granted back through Executor::credit. The sink never blocks.
//
// Thread rule: called only on the executor thread that runs the request.

#include <string>
#include <string_view>

#include "ipc/http_exchange.h"

namespace isolane {

class StreamSink {
 public:
  virtual ~StreamSink() = default;
  // One piece of at most kStreamPieceBytes.
  virtual void piece(std::string_view bytes) = 0;
  // The body is complete.
  virtual void end() = 0;
  // The body cannot be completed: the consumer cuts the response (the client sees it incomplete).
  virtual void abort(FailureKind kind, const std::string& detail) = 0;
};

}  // namespace isolane
