// EventLoop: code mode. An execution's context holds its code and modules (in memory), `tools`,
// its outbound mode and a console that is captured, not logged; the runtime's codemode.js runs
// the function and answers through three natives: settleExecution, failExecution and callTool.
// Nothing they receive is trusted: ids must name the calling context's execution while it runs,
// values must be strings within their bounds, tools must be among those the execution was given.
#include <cctype>
#include <tuple>

#include "obs/log.h"
#include "runtime/guest_source.h"
#include "runtime/js_errors.h"
#include "runtime/js_scope.h"
#include "runtime/js_values.h"
#include "worker/event_loop.h"
#include "worker/event_loop_turn.h"

namespace isolane {
namespace {

constexpr const char* kEntryName = "<code>";
constexpr std::size_t kMaxErrorText = 16 * 1024;  // a guest error's message, and its stack

// The console of an execution: into its outcome, up to its console limit.
class SessionConsole final : public LogSink {
 public:
  explicit SessionConsole(ExecutionSession& session) : session_(session) {}
  void write(std::string_view level, std::string_view, std::string_view,
             std::string_view text) override {
    session_.capture(level, text);
  }

 private:
  ExecutionSession& session_;
};

std::string bounded(std::string text) {
  if (text.size() > kMaxErrorText) {
    text.resize(kMaxErrorText);
    text += "... [truncated]";
  }
  return text;
}

// A stack line's "<code>:LINE:COLUMN" as the caller's code has it (the wrap shifted the
// function's first line).
std::string callersColumns(std::string_view line, int functionLine) {
  std::string out(line);
  std::string mark = std::string(kEntryName) + ":" + std::to_string(functionLine) + ":";
  std::size_t at = out.find(mark);
  if (at == std::string::npos) return out;
  std::size_t digits = at + mark.size();
  std::size_t end = digits;
  while (end < out.size() && std::isdigit(static_cast<unsigned char>(out[end]))) ++end;
  if (end == digits) return out;
  int column = std::stoi(out.substr(digits, end - digits));
  if (column > kWrapColumns)
    out.replace(digits, end - digits, std::to_string(column - kWrapColumns));
  return out;
}

// The guest's frames of a stack: the runtime's own frames (the function's caller, tools) go.
std::string guestFrames(const std::string& stack, int functionLine) {
  std::string out;
  std::size_t at = 0;
  while (at < stack.size()) {
    std::size_t end = stack.find('\n', at);
    if (end == std::string::npos) end = stack.size();
    std::string_view line(stack.data() + at, end - at);
    if (line.find("isolane:web-runtime.js") == std::string_view::npos) {
      if (!out.empty()) out += '\n';
      out += callersColumns(line, functionLine);
    }
    at = end + 1;
  }
  return bounded(std::move(out));
}

// Whether JSON text holds an escaped lone surrogate ("\ud800" without its pair), which
// JSON.stringify makes of a string that is not well-formed and which strict JSON parsers (the
// caller's, the master's) refuse.
bool hasLoneSurrogate(std::string_view json) {
  auto hex = [&](std::size_t at, unsigned* out) {
    if (at + 4 > json.size()) return false;
    unsigned v = 0;
    for (std::size_t i = at; i < at + 4; ++i) {
      char c = json[i];
      int d = c >= '0' && c <= '9'   ? c - '0'
              : c >= 'a' && c <= 'f' ? c - 'a' + 10
              : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                     : -1;
      if (d < 0) return false;
      v = v * 16 + static_cast<unsigned>(d);
    }
    *out = v;
    return true;
  };
  for (std::size_t i = 0; i + 1 < json.size(); ++i) {
    if (json[i] != '\\') continue;
    if (json[i + 1] != 'u') {
      ++i;  // an escaped character: skip it (a "\\" is not the start of an escape)
      continue;
    }
    unsigned unit = 0;
    if (!hex(i + 2, &unit)) continue;
    if (unit >= 0xDC00 && unit <= 0xDFFF) return true;  // a low half with no high half before
    if (unit >= 0xD800 && unit <= 0xDBFF) {
      unsigned low = 0;
      if (i + 7 >= json.size() || json[i + 6] != '\\' || json[i + 7] != 'u' || !hex(i + 8, &low) ||
          low < 0xDC00 || low > 0xDFFF) {
        return true;
      }
      i += 11;
      continue;
    }
    i += 5;
  }
  return false;
}

v8::Local<v8::Value> refusal(JsScope& js, const char* code, const std::string& message) {
  v8::Local<v8::Value> pair[] = {js.str(code), js.str(message)};
  return v8::Array::New(js.isolate(), pair, 2);
}

}  // namespace

bool EventLoop::prepareExecution() {
  if (prepared_) return true;
  auto app = std::make_unique<App>();
  app->state.timers = this;
  app->state.ops = this;
  app->state.modules = &app->modules;
  std::string error;
  if (!createWebContext(owner_, app->state, &app->web, &error)) {
    logEvent(Level::kError, "cannot make an execution's context", {{"error", error}});
    return false;
  }
  prepared_ = std::move(app);
  return true;
}

Status EventLoop::loadExecution(const std::string& name,
                                std::shared_ptr<ExecutionSession> session) {
  if (apps_.count(name)) return Error{"an execution named '" + name + "' is already loaded"};
  // The context made ahead (prepareExecution), or one made now.
  if (!prepared_ && !prepareExecution()) {
    session->outcome =
        ExecutionOutcome::failed(ExecErrorCode::kInternal, "cannot make the execution's context");
    return Error{session->outcome.message};
  }
  std::unique_ptr<App> app = std::move(prepared_);
  app->spec.name = name;
  app->spec.modulePath = kEntryName;
  app->execution = session;
  app->console = std::make_unique<SessionConsole>(*session);
  app->state.appName = name;
  app->state.log = app->console.get();
  appByState_[&app->state] = app.get();
  app->state.createdAt = std::chrono::steady_clock::now();
  app->state.timeOriginMs =
      std::chrono::duration<double, std::milli>(std::chrono::system_clock::now().time_since_epoch())
          .count();
  std::string error;

  const ExecutionSpec& spec = session->spec;
  GuestSource source = wrapGuestCode(spec.code);
  session->functionLine = source.functionLine;  // for the columns of a guest's stack
  ModuleGraph::ErrorLocation where;
  bool loaded = false;
  loadBudget_ = std::chrono::milliseconds(spec.timeoutMs);  // the module's top level counts too
  turn(*app, 0, [&](JsScope& js, v8::TryCatch&) {
    v8::Isolate* isolate = js.isolate();
    v8::Local<v8::Object> natives;
    if (!makeNatives(js, &natives) || !makeExecutionNatives(js, natives)) {
      error = "out of memory while preparing the execution";
      return;
    }
    app->natives.Reset(isolate, natives);
    // Which tools exist is C++'s business (callTool checks each call against the session).
    v8::Local<v8::Value> install =
        getOwn(js, app->web.host.Get(isolate), js.str("installCodeMode"));
    v8::Local<v8::Value> argv[] = {
        natives, v8::Boolean::New(isolate, spec.outbound == OutboundMode::kNative)};
    if (install.IsEmpty() || !install->IsFunction() ||
        install.As<v8::Function>()->Call(js.context(), v8::Undefined(isolate), 2, argv).IsEmpty()) {
      error = "the runtime could not prepare the execution's globals";
      return;
    }
    v8::Local<v8::Object> ns;
    if (!app->modules.loadInMemory(js, kEntryName, source.module, spec.modules, &error, &where)
             .ToLocal(&ns)) {
      return;
    }
    v8::Local<v8::Value> fn;
    if (!ns->Get(js.context(), js.str("default")).ToLocal(&fn) || !fn->IsFunction()) {
      error = "the code must be an async function expression, such as: async () => 1";
      return;
    }
    app->handler.Reset(isolate, fn.As<v8::Object>());
    loaded = true;
  });
  loadBudget_ = {};
  if (loaded) {
    apps_.emplace(name, std::move(app));
    return Status::success();
  }
  ExecutionOutcome& outcome = session->outcome;
  if (error.empty() || error == "execution terminated") {
    outcome = heapLimitHit_
                  ? ExecutionOutcome::failed(
                        ExecErrorCode::kMemoryLimit,
                        "the execution's memory limit (" + std::to_string(spec.memoryMb) +
                            " MiB, memory_mb) was reached while its modules were evaluated")
                  : ExecutionOutcome::failed(
                        ExecErrorCode::kCpuLimit,
                        "the modules' top-level code used more than the timeout of " +
                            std::to_string(spec.timeoutMs) + " ms of CPU time");
  } else if (where.syntax) {
    int column =
        where.file == kEntryName ? guestColumn(source, where.line, where.column) : where.column;
    // describeException's text starts with the place; say it with the caller's column.
    std::string text = error;
    if (std::size_t colon = text.find(": "); colon != std::string::npos)
      text = text.substr(colon + 2);
    std::string file = where.file == kEntryName ? "code" : "module '" + where.file + "'";
    outcome = ExecutionOutcome::failed(ExecErrorCode::kSyntaxError,
                                       bounded(file + ", line " + std::to_string(where.line) +
                                               ", column " + std::to_string(column) + ": " + text));
  } else {
    outcome = ExecutionOutcome::failed(ExecErrorCode::kGuestError, bounded(error));
  }
  discardApp(std::move(app));
  return Error{outcome.message};
}

bool EventLoop::makeExecutionNatives(JsScope& js, v8::Local<v8::Object> natives) {
  const Native kNatives[] = {{"settleExecution", &EventLoop::settleExecutionCallback, 2},
                             {"failExecution", &EventLoop::failExecutionCallback, 3},
                             {"callTool", &EventLoop::callToolCallback, 4}};
  return addNatives(js, natives, kNatives, std::size(kNatives));
}

void EventLoop::startExecution(const std::string& name, ExecutionJob job) {
  // Its loop is its own, fresh (AppIsolates checks the id against the thread's other loops).
  auto found = apps_.find(name);
  std::uint64_t id = job.key;
  if (found == apps_.end() || !Requests::isSubmitterId(id)) {
    job.settle(FailureKind::kInternal, found == apps_.end()
                                           ? "the execution's code is not loaded"
                                           : "execution id " + std::to_string(id) +
                                                 " is out of range");
    return;
  }
  App& app = *found->second;
  Request req{0, RequestJob{}, &app, {}, {}, false, {}, {}, 0};
  req.exec = std::move(job);
  SteadyTime deadline = clock_.now() + wallTimeoutOf(req);
  requests_.add(id, std::move(req), deadline);
  runExecution(app, id);
}

void EventLoop::runExecution(App& app, std::uint64_t id) {
  // Timers the modules set while they loaded are the execution's: charged to it, ended with it.
  Request& req = requests_.at(id);
  timers_.adopt(&app, id, [&req](std::uint32_t timer) { req.timers.push_back(timer); });
  turn(app, id, [&](JsScope& js, v8::TryCatch& tryCatch) {
    v8::Isolate* isolate = js.isolate();
    v8::Local<v8::Value> run = getOwn(js, app.web.host.Get(isolate), js.str("runExecution"));
    v8::Local<v8::Value> argv[] = {v8::Number::New(isolate, static_cast<double>(id)),
                                   app.handler.Get(isolate), app.natives.Get(isolate)};
    if (run.IsEmpty() || !run->IsFunction() ||
        run.As<v8::Function>()->Call(js.context(), v8::Undefined(isolate), 3, argv).IsEmpty()) {
      if (!tryCatch.HasTerminated()) {
        fail(id, FailureKind::kInternal,
             "the runtime could not start the execution: " + describeException(js, tryCatch));
      }
    }
  });
}

ExecutionSession* EventLoop::callingExecution(const v8::FunctionCallbackInfo<v8::Value>& info,
                                              std::uint64_t* id) {
  *id = callingRequest(info, Expect::kUnanswered);
  if (*id == 0) return nullptr;
  return requests_.at(*id).exec.session.get();
}

// settleExecution(id, resultJson)
void EventLoop::settleExecutionCallback(const v8::FunctionCallbackInfo<v8::Value>& info) {
  EventLoop* self = loopOf(info);
  std::uint64_t id = 0;
  ExecutionSession* running = self->callingExecution(info, &id);
  if (!running) return;
  ExecutionSession& session = *running;
  JsScope js(info);
  std::string text;
  std::size_t size = 0;
  if (!stringValue(js, info[1], &text, session.spec.resultLimit, &size)) {
    if (size > session.spec.resultLimit) {
      session.outcome.error = ExecErrorCode::kPayloadLimit;
      session.outcome.message = "the result is " + std::to_string(size) +
                                " bytes of JSON, over the result limit of " +
                                std::to_string(session.spec.resultLimit) + " bytes";
    } else {
      session.outcome.error = ExecErrorCode::kInternal;
      session.outcome.message = "the runtime settled the execution without a result";
    }
    self->fail(id, FailureKind::kHandlerError, session.outcome.message);
    return;
  }
  if (hasLoneSurrogate(text)) {
    session.outcome.error = ExecErrorCode::kGuestError;
    session.outcome.message =
        "the result holds a string with a lone surrogate (not well-formed Unicode), which JSON "
        "cannot carry to the caller; use String.prototype.toWellFormed()";
    self->fail(id, FailureKind::kHandlerError, session.outcome.message);
    return;
  }
  session.outcome.resultJson = std::move(text);
  self->settleExecution(self->requests_.at(id), FailureKind::kNone, {});
  self->finalize(id);
}

// failExecution(id, message, stack): the guest threw or rejected.
void EventLoop::failExecutionCallback(const v8::FunctionCallbackInfo<v8::Value>& info) {
  EventLoop* self = loopOf(info);
  std::uint64_t id = 0;
  ExecutionSession* running = self->callingExecution(info, &id);
  if (!running) return;
  ExecutionSession& session = *running;
  JsScope js(info);
  std::string message = "the guest failed";
  std::string stack;
  // The runtime cut both to kMaxErrorText characters; anything longer is not the runtime's.
  // (Each is left as it is when the value is not such a string.)
  std::ignore = stringValue(js, info[1], &message, kMaxErrorText * 4);
  std::ignore = stringValue(js, info[2], &stack, kMaxErrorText * 4);
  session.outcome.error = ExecErrorCode::kGuestError;
  session.outcome.message = bounded(std::move(message));
  session.outcome.stack = guestFrames(stack, session.functionLine);
  self->fail(id, FailureKind::kHandlerError, session.outcome.message);
}

// callTool(provider, tool, argsJson, callbacks) -> undefined when the call went out, else
// [code, message] for the guest's rejection.
void EventLoop::callToolCallback(const v8::FunctionCallbackInfo<v8::Value>& info) {
  EventLoop* self = loopOf(info);
  JsScope js(info);
  ContextState* state = ContextState::from(js.context());
  auto app = self->appByState_.find(state);
  if (app == self->appByState_.end() || !app->second->execution) return;
  auto* req = self->requests_.find(self->owningRequest(*state));
  if (!req || req->responded || !req->isExecution()) {
    info.GetReturnValue().Set(refusal(js, "ENDED", "the execution has ended"));
    return;
  }
  ExecutionSession& session = *req->exec.session;
  std::string provider, tool, args;
  std::size_t argsSize = 0;
  if (!stringValue(js, info[0], &provider, ExecLimits::kMaxNameBytes) ||
      !stringValue(js, info[1], &tool, ExecLimits::kMaxNameBytes) || !info[3]->IsObject()) {
    info.GetReturnValue().Set(refusal(js, "NOT_FOUND", "no such tool"));
    return;
  }
  if (!session.allows(provider, tool)) {
    info.GetReturnValue().Set(
        refusal(js, "NOT_FOUND",
                "no tool named " + provider + "." + tool + " was given to this execution"));
    return;
  }
  if (!stringValue(js, info[2], &args, session.spec.payloadLimit, &argsSize)) {
    info.GetReturnValue().Set(refusal(js, "PAYLOAD_LIMIT",
                                      "the arguments of " + provider + "." + tool + " are " +
                                          std::to_string(argsSize) +
                                          " bytes of JSON, over the payload limit of " +
                                          std::to_string(session.spec.payloadLimit) + " bytes"));
    return;
  }
  if (hasLoneSurrogate(args)) {
    info.GetReturnValue().Set(
        refusal(js, "TypeError",
                "the arguments of " + provider + "." + tool +
                    " hold a string with a lone surrogate, which JSON cannot carry to the caller"));
    return;
  }
  if (self->hostOps_.countOf(req->id) >= self->options_.maxHostOpsPerRequest) {
    info.GetReturnValue().Set(refusal(js, "TOO_MANY_CALLS",
                                      "too many tool calls in flight (" +
                                          std::to_string(self->options_.maxHostOpsPerRequest) +
                                          "); await some before making more"));
    return;
  }
  std::uint64_t op =
      self->registerOp(*state, info[3].As<v8::Object>(), HostOpKind::kTool, self->nextServiceOp_++);
  ++session.outcome.toolCalls;
  self->pauseClock(*req);
  if (session.callTool) session.callTool(op, provider, tool, args);
}

void EventLoop::toolAnswer(std::uint64_t id, std::uint64_t call, bool ok, std::string text) {
  auto* it = requests_.find(id);
  if (!it) return;
  auto* op = hostOps_.find(call);
  if (!op || op->kind != HostOpKind::kTool || op->request != id) return;
  Request& req = *it;
  resumeClock(req);
  const char* code = "TOOL_ERROR";
  if (ok && req.isExecution() && text.size() > req.exec.session->spec.payloadLimit) {
    ok = false;
    code = "PAYLOAD_LIMIT";
    text = "the answer to the tool call is " + std::to_string(text.size()) +
           " bytes of JSON, over the payload limit of " +
           std::to_string(req.exec.session->spec.payloadLimit) + " bytes";
  }
  turn(*op->owner, id, [&](JsScope& js, v8::TryCatch&) {
    if (ok) {
      v8::Local<v8::Value> argv[] = {js.str(text)};
      callBack(js, call, "resolve", 1, argv, true);
    } else {
      v8::Local<v8::Value> argv[] = {js.str(code), js.str(bounded(std::move(text)))};
      callBack(js, call, "reject", 2, argv, true);
    }
  });
}

void EventLoop::pauseClock(Request& req) {
  if (req.toolWaits++ > 0) return;
  SteadyTime now = clock_.now();
  req.pausedLeft = req.deadline > now ? req.deadline - now : std::chrono::nanoseconds(0);
  requests_.clearDeadline(req);
}

void EventLoop::resumeClock(Request& req) {
  if (req.toolWaits == 0 || --req.toolWaits > 0) return;
  requests_.setDeadline(req, clock_.now() + req.pausedLeft);
}

}  // namespace isolane
