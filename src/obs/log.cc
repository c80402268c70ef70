#include "obs/log.h"

#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <cstdlib>
#include <ctime>
#include <mutex>

namespace isolane {
namespace {

std::string timestamp() {
  auto now = std::chrono::system_clock::now();
  std::time_t t = std::chrono::system_clock::to_time_t(now);
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()) % 1000;
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[40];
  std::size_t n = std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  std::snprintf(buf + n, sizeof buf - n, ".%03dZ", static_cast<int>(ms.count()));
  return buf;
}

spdlog::level::level_enum toSpdlog(Level level) {
  switch (level) {
    case Level::kDebug:
      return spdlog::level::debug;
    case Level::kInfo:
      return spdlog::level::info;
    case Level::kWarn:
      return spdlog::level::warn;
    case Level::kError:
      return spdlog::level::err;
  }
  return spdlog::level::info;
}

const char* name(Level level) {
  switch (level) {
    case Level::kDebug:
      return "debug";
    case Level::kInfo:
      return "info";
    case Level::kWarn:
      return "warn";
    case Level::kError:
      return "error";
  }
  return "info";
}

std::string& processName() {
  static std::string name = "server";
  return name;
}

}  // namespace

void logEvent(Level level, std::string_view message, std::initializer_list<LogField> fields) {
  auto lvl = toSpdlog(level);
  if (!spdlog::should_log(lvl)) return;
  nlohmann::ordered_json line;
  line["ts"] = timestamp();
  line["level"] = name(level);
  line["msg"] = message;
  line["process"] = processName();
  for (const auto& [key, value] : fields) line[std::string(key)] = value;
  // Replace invalid UTF-8 (app output may hold any bytes) instead of throwing.
  spdlog::log(lvl, "{}", line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

void logLine(Level level, std::string_view line) {
  auto lvl = toSpdlog(level);
  if (spdlog::should_log(lvl)) spdlog::log(lvl, "{}", line);
}

std::string logTimestamp() { return timestamp(); }

namespace {

void setUpLogger(std::string_view process, spdlog::level::level_enum fallback) {
  processName() = std::string(process);
  auto logger = spdlog::stderr_logger_mt("isolane");
  spdlog::set_default_logger(logger);
  spdlog::set_pattern("%v");
  const char* level = std::getenv("ISOLANE_LOG_LEVEL");
  spdlog::set_level(level ? spdlog::level::from_str(level) : fallback);
}

}  // namespace

void initLogging(std::string_view process) { setUpLogger(process, spdlog::level::info); }

void initLoggingForLibrary(std::string_view process) {
  static std::once_flag once;
  std::call_once(once, [&] {
    if (spdlog::get("isolane")) return;  // the program set it up itself
    setUpLogger(process, spdlog::level::warn);
  });
}

}  // namespace isolane
