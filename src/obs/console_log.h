#pragma once
// ConsoleLog: where an app's console output goes in a server: the server log, one line per
// call, tagged with the app and the request id.


#include <string>
#include <string_view>

#include "obs/log.h"
#include "obs/log_sink.h"

namespace isolane {

class ConsoleLog final : public LogSink {
 public:
  // Safe from any thread (spdlog's loggers are).
  void write(std::string_view level, std::string_view app, std::string_view requestId,
             std::string_view text) override {
    Level lvl = level == "error"   ? Level::kError
                : level == "warn"  ? Level::kWarn
                : level == "debug" ? Level::kDebug
                                   : Level::kInfo;
    logEvent(lvl, text,
             {{"source", "console." + std::string(level)}, {"app", app}, {"request", requestId}});
  }
};

}  // namespace isolane
