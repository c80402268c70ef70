#include "ipc/exec_types.h"

namespace isolane {
namespace {

bool badName(const std::string& name) {
  if (name.empty() || name.size() > ExecLimits::kMaxNameBytes) return true;
  for (unsigned char c : name) {
    if (c < 0x20 || c == 0x7f) return true;  // no control characters in names
  }
  return false;
}

}  // namespace

std::optional<std::string> validateExecutionSpec(const ExecutionSpec& spec) {
  std::size_t bytes = spec.code.size();
  if (spec.modules.size() > ExecLimits::kMaxModules) {
    return "too many modules: at most " + std::to_string(ExecLimits::kMaxModules);
  }
  for (std::size_t i = 0; i < spec.modules.size(); ++i) {
    const GuestModule& m = spec.modules[i];
    if (badName(m.name)) {
      return "a module name must be 1-" + std::to_string(ExecLimits::kMaxNameBytes) +
             " bytes without control characters";
    }
    for (std::size_t j = 0; j < i; ++j) {
      if (spec.modules[j].name == m.name) return "the module '" + m.name + "' is given twice";
    }
    bytes += m.source.size();
  }
  if (bytes > ExecLimits::kMaxCodeBytes) {
    return "code and modules are " + std::to_string(bytes) + " bytes, over the bound of " +
           std::to_string(ExecLimits::kMaxCodeBytes);
  }
  std::size_t tools = 0;
  for (std::size_t i = 0; i < spec.tools.size(); ++i) {
    const ToolProvider& p = spec.tools[i];
    if (badName(p.name)) return "a tool provider's name must be 1-256 bytes, no control characters";
    for (std::size_t j = 0; j < i; ++j) {
      if (spec.tools[j].name == p.name) return "the provider '" + p.name + "' is given twice";
    }
    for (const std::string& t : p.tools) {
      if (badName(t)) return "a tool's name must be 1-256 bytes, no control characters";
    }
    tools += p.tools.size();
  }
  if (tools > ExecLimits::kMaxTools) {
    return "too many tools: at most " + std::to_string(ExecLimits::kMaxTools);
  }
  if (spec.timeoutMs == 0 || spec.timeoutMs > ExecLimits::kMaxTimeoutMs) {
    return "timeout_ms must be 1-" + std::to_string(ExecLimits::kMaxTimeoutMs);
  }
  if (spec.memoryMb < ExecLimits::kMinMemoryMb || spec.memoryMb > ExecLimits::kMaxMemoryMb) {
    return "memory_mb must be " + std::to_string(ExecLimits::kMinMemoryMb) + "-" +
           std::to_string(ExecLimits::kMaxMemoryMb);
  }
  return std::nullopt;
}

}  // namespace isolane
