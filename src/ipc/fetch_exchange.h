#pragma once
// An outbound fetch() as plain data: what a worker asks the master to do (FetchCall) and what
// comes back (FetchEvent). The network half runs in worker/fetch_client.h: inside the master
// for a worker process (pool/egress.h), inside the executor's process in process.

#include <cstdint>
#include <string>

#include "ipc/http_exchange.h"

namespace isolane {

struct FetchEvent {
  enum class Kind { kHead, kChunk, kEnd, kError };
  std::uint64_t op = 0;
  Kind kind = Kind::kError;
  int status = 0;
  std::string statusText;
  HeaderList headers;
  std::string data;       // kChunk: bytes; kError: message
  std::string errorKind;  // kError: policy | network | timeout | too-large | aborted
};

struct FetchCall {
  enum class Action { kStart, kPull, kAbort };
  std::uint64_t op = 0;
  Action action = Action::kStart;
  // kStart:
  std::string app;  // whose fetch_allow applies
  std::string method;
  std::string url;
  HeaderList headers;
  std::string body;
  std::uint32_t timeoutMs = 0;
};

}  // namespace isolane
