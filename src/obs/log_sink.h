#pragma once
// LogSink: where an app's console output goes. An interface of its own, so the parts of the
// server that never run JavaScript can name it without V8's headers.

#include <string_view>

namespace isolane {

// `requestId` is empty outside a request (module top level).
class LogSink {
 public:
  virtual ~LogSink() = default;
  virtual void write(std::string_view level, std::string_view app, std::string_view requestId,
                     std::string_view text) = 0;
};

}  // namespace isolane
