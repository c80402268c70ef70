#include "ipc/exec_codec.h"

#include "ipc/frame_codec.h"

namespace isolane {
namespace {

using flatbuffers::FlatBufferBuilder;

std::string str(const flatbuffers::String* s) { return s ? s->str() : std::string(); }

}  // namespace

Result<std::string> encodeExecute(std::uint64_t id, const ExecutionSpec& spec, std::size_t max) {
  FlatBufferBuilder fbb(1024 + spec.code.size());
  std::vector<flatbuffers::Offset<wire::GuestModule>> modules;
  for (const GuestModule& m : spec.modules) {
    modules.push_back(
        wire::CreateGuestModule(fbb, fbb.CreateString(m.name), fbb.CreateString(m.source), m.json));
  }
  std::vector<flatbuffers::Offset<wire::ToolProvider>> tools;
  for (const ToolProvider& p : spec.tools) {
    tools.push_back(wire::CreateToolProvider(fbb, fbb.CreateString(p.name),
                                             fbb.CreateVectorOfStrings(p.tools)));
  }
  auto m = wire::CreateExecute(fbb, id, fbb.CreateString(spec.code), fbb.CreateVector(modules),
                               fbb.CreateVector(tools), spec.timeoutMs, spec.memoryMb,
                               static_cast<std::uint8_t>(spec.outbound), spec.payloadLimit,
                               spec.resultLimit, spec.consoleLimit);
  return finishFrame(fbb, wire::Message::Execute, m.Union(), max);
}

ExecutionSpec decodeExecute(const wire::Execute& m) {
  ExecutionSpec spec;
  spec.code = str(m.code());
  if (m.modules()) {
    for (const wire::GuestModule* g : *m.modules()) {
      spec.modules.push_back(GuestModule{str(g->name()), str(g->source()), g->json()});
    }
  }
  if (m.tools()) {
    for (const wire::ToolProvider* p : *m.tools()) {
      ToolProvider provider{str(p->name()), {}};
      if (p->tools()) {
        for (const flatbuffers::String* t : *p->tools()) provider.tools.push_back(t->str());
      }
      spec.tools.push_back(std::move(provider));
    }
  }
  spec.timeoutMs = m.timeout_ms();
  spec.memoryMb = m.memory_mb();
  spec.outbound = m.outbound() == static_cast<std::uint8_t>(OutboundMode::kNative)
                      ? OutboundMode::kNative
                      : OutboundMode::kDisabled;
  spec.payloadLimit = m.payload_limit();
  spec.resultLimit = m.result_limit();
  spec.consoleLimit = m.console_limit();
  return spec;
}

Result<std::string> encodeToolCall(std::uint64_t id, std::uint64_t call,
                                   const std::string& provider, const std::string& tool,
                                   const std::string& argsJson, std::size_t max) {
  FlatBufferBuilder fbb(256 + argsJson.size());
  auto m = wire::CreateToolCall(fbb, id, call, fbb.CreateString(provider), fbb.CreateString(tool),
                                fbb.CreateString(argsJson));
  return finishFrame(fbb, wire::Message::ToolCall, m.Union(), max);
}

Result<std::string> encodeToolAnswer(std::uint64_t id, std::uint64_t call, bool ok,
                                     const std::string& text, std::size_t max) {
  FlatBufferBuilder fbb(128 + text.size());
  auto m = wire::CreateToolAnswer(fbb, id, call, ok, fbb.CreateString(text));
  return finishFrame(fbb, wire::Message::ToolAnswer, m.Union(), max);
}

std::string encodeExecResult(std::uint64_t id, const ExecutionOutcome& o, std::size_t max) {
  FlatBufferBuilder fbb(512 + o.resultJson.size());
  auto m = wire::CreateExecResult(fbb, id, static_cast<std::uint8_t>(o.error),
                                  fbb.CreateString(o.message), fbb.CreateString(o.stack),
                                  fbb.CreateString(o.resultJson), fbb.CreateVectorOfStrings(o.logs),
                                  o.logsTruncated, o.durationUs, o.cpuUs, o.toolCalls);
  Result<std::string> frame = finishFrame(fbb, wire::Message::ExecResult, m.Union(), max);
  if (frame) return std::move(frame.value());
  ExecutionOutcome over = ExecutionOutcome::failed(
      ExecErrorCode::kPayloadLimit,
      "the execution's result and logs do not fit one frame (" + frame.error() + ")");
  over.durationUs = o.durationUs;
  over.cpuUs = o.cpuUs;
  over.toolCalls = o.toolCalls;
  FlatBufferBuilder small(512);
  auto n = wire::CreateExecResult(small, id, static_cast<std::uint8_t>(over.error),
                                  small.CreateString(over.message), 0, 0, 0, false, over.durationUs,
                                  over.cpuUs, over.toolCalls);
  return finishFrame(small, wire::Message::ExecResult, n.Union(), max).value();
}

ExecutionOutcome decodeExecResult(const wire::ExecResult& m) {
  ExecutionOutcome o;
  o.error = m.code() <= static_cast<std::uint8_t>(kLastExecErrorCode)
                ? static_cast<ExecErrorCode>(m.code())
                : ExecErrorCode::kInternal;
  o.message = str(m.message());
  o.stack = str(m.stack());
  o.resultJson = str(m.result_json());
  if (m.logs()) {
    for (const flatbuffers::String* line : *m.logs()) o.logs.push_back(line->str());
  }
  o.logsTruncated = m.logs_truncated();
  o.durationUs = m.duration_us();
  o.cpuUs = m.cpu_us();
  o.toolCalls = m.tool_calls();
  return o;
}

}  // namespace isolane
