#pragma once
// ConsoleLog: where an app's console output goes in a server: the server log, one line per
// call, tagged with the app and the request id.

#include <spdlog/spdlog.h>

#include "runtime/context_state.h"

namespace isolane {

class ConsoleLog final : public LogSink {
 public:
  // Safe from any thread (spdlog's loggers are).
  void write(std::string_view level, std::string_view app, std::string_view requestId,
             std::string_view text) override {
    auto lvl = level == "error"  ? spdlog::level::err
               : level == "warn" ? spdlog::level::warn
               : level == "debug" ? spdlog::level::debug
                                  : spdlog::level::info;
    spdlog::log(lvl, "console.{} app={} request={} {}", level, app,
                requestId.empty() ? std::string_view("-") : requestId, text);
  }
};

}  // namespace isolane
