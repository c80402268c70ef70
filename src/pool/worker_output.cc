#include "pool/worker_output.h"

#include <algorithm>
#include <nlohmann/json.hpp>

namespace isolane {
namespace {

Level levelOf(const nlohmann::ordered_json& line) {
  auto it = line.find("level");
  if (it == line.end() || !it->is_string()) return Level::kInfo;
  const std::string& name = it->get_ref<const std::string&>();
  return name == "error" ? Level::kError
         : name == "warn" ? Level::kWarn
         : name == "debug" ? Level::kDebug
                           : Level::kInfo;
}

}  // namespace

WorkerOutput::Rewritten WorkerOutput::rewrite(std::string_view line) const {
  constexpr auto kReplace = nlohmann::json::error_handler_t::replace;
  if (!line.empty() && line.front() == '{') {
    auto json = nlohmann::ordered_json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (json.is_object()) {
      auto process = json.find("process");
      bool named = process != json.end() && process->is_string() &&
                   process->get_ref<const std::string&>().rfind("worker", 0) == 0;
      if (!named) json["process"] = "worker";
      json["pid"] = static_cast<std::int64_t>(pid_);
      return {levelOf(json), json.dump(-1, ' ', false, kReplace)};
    }
  }
  nlohmann::ordered_json wrapped;
  wrapped["ts"] = logTimestamp();
  wrapped["level"] = "warn";
  wrapped["msg"] = "worker output";
  wrapped["process"] = "worker";
  wrapped["pid"] = static_cast<std::int64_t>(pid_);
  wrapped["line"] = line;
  return {Level::kWarn, wrapped.dump(-1, ' ', false, kReplace)};
}

void WorkerOutput::emit(std::string_view line) {
  if (line.empty()) return;
  SteadyTime now = clock_.now();
  double seconds = std::chrono::duration<double>(now - refilled_).count();
  refilled_ = now;
  lineTokens_ = std::min(kLinesPerSecond * 4, lineTokens_ + seconds * kLinesPerSecond);
  byteTokens_ = std::min(kBytesPerSecond * 4, byteTokens_ + seconds * kBytesPerSecond);
  auto bytes = static_cast<double>(line.size());
  bool allowed = lineTokens_ >= 1 && byteTokens_ >= bytes;
  if (allowed) {
    lineTokens_ -= 1;
    byteTokens_ -= bytes;
  } else {
    ++droppedLines_;
    droppedBytes_ += line.size();
  }
  if (droppedLines_ > 0 && (allowed || now - reported_ >= std::chrono::seconds(1))) {
    reported_ = now;
    nlohmann::ordered_json report;
    report["ts"] = logTimestamp();
    report["level"] = "warn";
    report["msg"] = "worker output dropped: the worker writes faster than its limit";
    report["process"] = "server";
    report["pid"] = static_cast<std::int64_t>(pid_);
    report["lines"] = droppedLines_;
    report["bytes"] = droppedBytes_;
    sink_(Level::kWarn, report.dump());
    droppedLines_ = 0;
    droppedBytes_ = 0;
  }
  if (!allowed) return;
  Rewritten out = rewrite(line);
  sink_(out.level, out.json);
}

void WorkerOutput::feed(const char* data, std::size_t size) {
  std::string_view in(data, size);
  while (!in.empty()) {
    std::size_t eol = in.find('\n');
    std::string_view piece = in.substr(0, eol);
    if (!cutting_) {
      std::size_t room = kMaxWorkerLineBytes - partial_.size();
      partial_.append(piece.substr(0, room));
      if (piece.size() > room) cutting_ = true;  // the rest of this line is not kept
    }
    if (eol == std::string_view::npos) return;
    if (cutting_) partial_ += "... [line cut]";
    emit(partial_);
    partial_.clear();
    cutting_ = false;
    in.remove_prefix(eol + 1);
  }
}

void WorkerOutput::finish() {
  if (!partial_.empty()) emit(partial_);
  partial_.clear();
}

}  // namespace isolane
