#pragma once
// Structured logs: one JSON object a line on stderr, with a timestamp, level, message and fields
// (app, request id, worker, ...). Safe from any thread (spdlog's loggers are).

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <utility>

namespace isolane {

enum class Level { kDebug, kInfo, kWarn, kError };

using LogField = std::pair<std::string_view, nlohmann::ordered_json>;

void logEvent(Level level, std::string_view message, std::initializer_list<LogField> fields = {});

// A line another process of the server wrote (a worker's, already one JSON object: see
// pool/worker_output.h), written as it is at `level`. Safe from any thread.
void logLine(Level level, std::string_view line);
// The timestamp logEvent gives a line (UTC, milliseconds).
std::string logTimestamp();

// Sets up the process's logger: JSON lines on stderr, level from ISOLANE_LOG_LEVEL.
void initLogging(std::string_view process);
// For a program that embeds isolane's C++ API: the same, unless the program set one up already,
// and at warn level unless ISOLANE_LOG_LEVEL says otherwise. Safe to call more than once.
void initLoggingForLibrary(std::string_view process);

}  // namespace isolane
