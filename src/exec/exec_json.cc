#include "exec/exec_json.h"

namespace isolane {
namespace {

Result<std::uint32_t> number(const nlohmann::ordered_json& j, const char* key,
                             std::uint32_t fallback) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return fallback;
  if (!it->is_number_integer() || it->get<std::int64_t>() < 1 ||
      it->get<std::int64_t>() > 0xffffffffLL) {
    return Error{std::string(key) + " must be a positive integer"};
  }
  return static_cast<std::uint32_t>(it->get<std::int64_t>());
}

}  // namespace

bool jsonDepthWithin(std::string_view text, std::size_t max) {
  std::size_t depth = 0;
  bool inString = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (inString) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        inString = false;
      }
    } else if (c == '"') {
      inString = true;
    } else if (c == '[' || c == '{') {
      if (++depth > max) return false;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return true;
}

Result<ExecutionSpec> parseExecution(const nlohmann::ordered_json& j, const ExecDefaults& d,
                                     bool allowTools) {
  if (!j.is_object()) return Error{"an execution must be a JSON object"};
  ExecutionSpec spec;
  auto code = j.find("code");
  if (code == j.end() || !code->is_string()) {
    return Error{"code must be a string: the source of an async arrow function"};
  }
  spec.code = code->get<std::string>();
  if (auto modules = j.find("modules"); modules != j.end() && !modules->is_null()) {
    if (!modules->is_object()) return Error{"modules must be an object of name -> source"};
    for (const auto& [name, source] : modules->items()) {
      if (source.is_string()) {
        spec.modules.push_back(GuestModule{name, source.get<std::string>(), false});
      } else {
        spec.modules.push_back(GuestModule{name, source.dump(), true});  // a JSON module
      }
    }
  }
  if (auto tools = j.find("tools"); tools != j.end() && !tools->is_null()) {
    if (!allowTools) {
      return Error{"tools need a caller to answer them: use the WebSocket at /v1/session"};
    }
    if (!tools->is_object()) return Error{"tools must be an object of provider -> [tool names]"};
    for (const auto& [provider, names] : tools->items()) {
      if (!names.is_array()) return Error{"tools." + provider + " must be an array of names"};
      ToolProvider p{provider, {}};
      for (const auto& name : names) {
        if (!name.is_string()) return Error{"tools." + provider + " must hold strings"};
        p.tools.push_back(name.get<std::string>());
      }
      spec.tools.push_back(std::move(p));
    }
  }
  Result<std::uint32_t> timeout = number(j, "timeout_ms", d.timeoutMs);
  if (!timeout) return Error{timeout.error()};
  Result<std::uint32_t> memory = number(j, "memory_mb", d.memoryMb);
  if (!memory) return Error{memory.error()};
  spec.timeoutMs = timeout.value();
  spec.memoryMb = memory.value();
  if (spec.timeoutMs > d.maxTimeoutMs) {
    return Error{"timeout_ms " + std::to_string(spec.timeoutMs) +
                 " is over this executor's bound of " + std::to_string(d.maxTimeoutMs)};
  }
  if (spec.memoryMb > d.maxMemoryMb) {
    return Error{"memory_mb " + std::to_string(spec.memoryMb) +
                 " is over this executor's bound of " + std::to_string(d.maxMemoryMb)};
  }
  if (auto outbound = j.find("outbound"); outbound != j.end() && !outbound->is_null()) {
    if (*outbound == "native") {
      spec.outbound = OutboundMode::kNative;
    } else if (*outbound != "disabled") {
      return Error{"outbound must be \"disabled\" or \"native\""};
    }
  }
  spec.payloadLimit = d.payloadLimit;
  spec.resultLimit = d.resultLimit;
  spec.consoleLimit = d.consoleLimit;
  if (auto problem = validateExecutionSpec(spec)) return Error{*problem};
  return spec;
}

nlohmann::json errorObject(ExecErrorCode code, const std::string& message,
                           const std::string& stack) {
  nlohmann::json e = {
      {"code", execErrorName(code)}, {"retryable", execErrorRetryable(code)}, {"message", message}};
  if (!stack.empty()) e["stack"] = stack;
  return e;
}

std::string outcomeMembers(const ExecutionOutcome& o) {
  constexpr auto kReplace = nlohmann::json::error_handler_t::replace;
  if (!o.ok())
    return "\"error\":" + errorObject(o.error, o.message, o.stack).dump(-1, ' ', false, kReplace);
  nlohmann::json logs = o.logs;
  nlohmann::json stats = {{"duration_ms", static_cast<double>(o.durationUs) / 1000.0},
                          {"cpu_ms", static_cast<double>(o.cpuUs) / 1000.0},
                          {"tool_calls", o.toolCalls},
                          {"logs_truncated", o.logsTruncated}};
  std::string out = "\"result\":";
  out += o.resultJson.empty() ? "null" : o.resultJson;
  out += ",\"logs\":" + logs.dump(-1, ' ', false, kReplace);
  out += ",\"stats\":" + stats.dump();
  return out;
}

int outcomeStatus(const ExecutionOutcome& o) {
  switch (o.error) {
    case ExecErrorCode::kNone:
      return 200;
    case ExecErrorCode::kQueueOverflow:
    case ExecErrorCode::kConnectionBroken:
      return 503;
    case ExecErrorCode::kWorkerCrashed:
      return 502;
    case ExecErrorCode::kSyntaxError:
      return 400;
    case ExecErrorCode::kInternal:
      return 500;
    default:
      return 422;  // the code ran and failed: TIMEOUT, CPU, MEMORY, PAYLOAD, GUEST
  }
}

}  // namespace isolane
