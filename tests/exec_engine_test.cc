// Code mode on the executor (worker/execution_job.h, worker/event_loop_exec.cc): an execution
// runs its code and modules in a fresh isolate; `tools` reach the caller and answer with JSON;
// every way a guest can end (result, throw, syntax error, CPU, memory, timeout, payload limits,
// its caller leaving, its executor stopping) is a typed outcome, given exactly once, and the next
// execution on the same thread is unaffected.

#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "worker/execution_job.h"
#include "worker/executor.h"
#include "worker/executor_set.h"

namespace isolane {
namespace {

using namespace std::chrono_literals;

class NullLog final : public LogSink {
 public:
  void write(std::string_view, std::string_view, std::string_view, std::string_view) override {}
};

// A tool call the guest made, waiting for the test's answer.
struct Call {
  std::uint64_t call;
  std::string provider, tool, args;
};

class ExecEngine : public ::testing::Test {
 protected:
  ExecEngine() : executor_(options(), log_) {}

  static ExecutorOptions options() {
    ExecutorOptions o;
    o.loop.limits.arrayBufferMb = 64;
    return o;
  }

  // Runs `spec`; tool calls are answered by `answer` (on a thread of the test's: the executor's
  // callback must not block), null: never answered.
  ExecutionOutcome run(ExecutionSpec spec,
                       std::function<std::pair<bool, std::string>(const Call&)> answer = nullptr,
                       std::chrono::milliseconds answerDelay = 0ms) {
    std::uint64_t key = nextKey_++;
    auto promise = std::make_shared<std::promise<ExecutionOutcome>>();
    auto future = promise->get_future();
    Executor* executor = &executor_;
    ExecutionJob job = makeExecutionJob(
        key, std::move(spec),
        [executor, key, answer, answerDelay](std::uint64_t call, const std::string& provider,
                                             const std::string& tool, const std::string& args) {
          if (!answer) return;
          Call c{call, provider, tool, args};
          std::thread([executor, key, answer, answerDelay, c] {
            std::this_thread::sleep_for(answerDelay);
            auto [ok, text] = answer(c);
            executor->toolAnswer(key, c.call, ok, text);
          }).detach();
        },
        [promise](ExecutionOutcome o) { promise->set_value(std::move(o)); });
    EXPECT_TRUE(executor_.submitExecution(job));
    EXPECT_EQ(future.wait_for(30s), std::future_status::ready);
    return future.get();
  }

  static ExecutionSpec code(std::string text) {
    ExecutionSpec spec;
    spec.code = std::move(text);
    spec.timeoutMs = 2000;
    return spec;
  }

  // The next execution on the same thread still works, and sees nothing of the last.
  void expectHealthy() {
    ExecutionOutcome o = run(code("async () => typeof globalThis.leftover"));
    EXPECT_EQ(o.error, ExecErrorCode::kNone) << o.message;
    EXPECT_EQ(o.resultJson, "\"undefined\"");
  }

  NullLog log_;
  Executor executor_;
  std::uint64_t nextKey_ = 1;
};

TEST_F(ExecEngine, AFunctionsValueComesBackAsJsonText) {
  ExecutionOutcome o = run(code("async () => 1"));
  EXPECT_EQ(o.error, ExecErrorCode::kNone) << o.message;
  EXPECT_EQ(o.resultJson, "1");
  o = run(code("async () => { await null; return { a: [1, 'x', null], b: true } }"));
  EXPECT_EQ(o.resultJson, R"({"a":[1,"x",null],"b":true})");
  o = run(code("async () => undefined"));
  EXPECT_EQ(o.resultJson, "null");
}

TEST_F(ExecEngine, PrototypeKeysAndAModuleNamedToStringRoundTrip) {
  ExecutionSpec spec = code(
      "import { from } from 'toString'\n"
      "async () => ({ ordinary: 1, constructor: 2, toString: 3, valueOf: 4, from })");
  spec.modules.push_back(GuestModule{"toString", "export const from = 'a module named toString'"});
  ExecutionOutcome o = run(spec);
  ASSERT_EQ(o.error, ExecErrorCode::kNone) << o.message;
  EXPECT_EQ(
      o.resultJson,
      R"({"ordinary":1,"constructor":2,"toString":3,"valueOf":4,"from":"a module named toString"})");
}

TEST_F(ExecEngine, JsonModulesAreParsedByTheEngineNotTheGuestsJson) {
  ExecutionSpec spec = code("import data from 'data.json'\nimport './evil'\nasync () => data");
  spec.modules.push_back(GuestModule{"data.json", R"({"__proto__": {"x": 1}, "n": [1, 2]})", true});
  spec.modules.push_back(GuestModule{"./evil", "JSON.parse = () => 'hacked'"});
  ExecutionOutcome o = run(spec);
  ASSERT_EQ(o.error, ExecErrorCode::kNone) << o.message;
  EXPECT_EQ(o.resultJson, R"({"__proto__":{"x":1},"n":[1,2]})");
}

TEST_F(ExecEngine, ToolCallsReachTheCallerAndTheirAnswersComeBackParsed) {
  ExecutionSpec spec = code(
      "async () => { const a = await tools.math.add({ a: 2, b: 3 });"
      " const b = await tools.math.add({ a: a, b: 10 }); return [a, b] }");
  spec.tools.push_back(ToolProvider{"math", {"add"}});
  std::mutex mu;
  std::vector<std::string> seen;
  ExecutionOutcome o = run(spec, [&](const Call& c) {
    std::lock_guard lock(mu);
    seen.push_back(c.provider + "." + c.tool + " " + c.args);
    return std::pair{true, seen.size() == 1 ? std::string("5") : std::string("15")};
  });
  ASSERT_EQ(o.error, ExecErrorCode::kNone) << o.message;
  EXPECT_EQ(o.resultJson, "[5,15]");
  EXPECT_EQ(o.toolCalls, 2u);
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0], R"(math.add {"a":2,"b":3})");
}

TEST_F(ExecEngine, AnUnknownToolRejectsInsideTheGuestAndTheExecutionGoesOn) {
  ExecutionSpec spec = code(
      "async () => { const out = [];"
      " for (const f of [() => tools.math.sub(1), () => tools.nope.x(), () => tools.math.add(1)]) {"
      "   try { out.push(await f()) } catch (e) { out.push(e.code + ': ' + e.message) } }"
      " return out }");
  spec.tools.push_back(ToolProvider{"math", {"add"}});
  ExecutionOutcome o = run(spec, [](const Call&) { return std::pair{true, std::string("7")}; });
  ASSERT_EQ(o.error, ExecErrorCode::kNone) << o.message;
  EXPECT_EQ(o.resultJson, R"(["NOT_FOUND: no tool named math.sub was given to this execution",)"
                          R"("NOT_FOUND: no tool named nope.x was given to this execution",7])");
  EXPECT_EQ(o.toolCalls, 1u);
}

TEST_F(ExecEngine, AToolErrorRejectsInsideTheGuest) {
  ExecutionSpec spec = code(
      "async () => { try { await tools.t.f() } catch (e) { return e.code + ': ' + e.message } }");
  spec.tools.push_back(ToolProvider{"t", {"f"}});
  ExecutionOutcome o = run(spec, [](const Call&) {
    return std::pair{false, std::string("no such repo")};
  });
  EXPECT_EQ(o.resultJson, R"("TOOL_ERROR: no such repo")");
}

TEST_F(ExecEngine, TheClockPausesWhileAToolCallWaitsOnTheCaller) {
  ExecutionSpec spec = code("async () => await tools.slow.answer()");
  spec.timeoutMs = 300;
  spec.tools.push_back(ToolProvider{"slow", {"answer"}});
  ExecutionOutcome o = run(
      spec,
      [](const Call&) {
        return std::pair{true, std::string("42")};
      },
      800ms);
  ASSERT_EQ(o.error, ExecErrorCode::kNone) << o.message;
  EXPECT_EQ(o.resultJson, "42");
  EXPECT_GE(o.durationUs, 800'000u);
}

TEST_F(ExecEngine, PayloadLimitsAreEnforcedBothWays) {
  ExecutionSpec spec = code(
      "async () => { const out = [];"
      " try { await tools.t.f('x'.repeat(2000)) } catch (e) { out.push(e.code) }"
      " try { await tools.t.f('small') } catch (e) { out.push(e.code + ' ' + e.message) }"
      " return out }");
  spec.payloadLimit = 1000;
  spec.tools.push_back(ToolProvider{"t", {"f"}});
  ExecutionOutcome o = run(spec, [](const Call&) {
    return std::pair{true, "\"" + std::string(5000, 'y') + "\""};
  });
  ASSERT_EQ(o.error, ExecErrorCode::kNone) << o.message;
  EXPECT_EQ(
      o.resultJson,
      R"(["PAYLOAD_LIMIT","PAYLOAD_LIMIT the answer to the tool call is 5002 bytes of JSON, over the payload limit of 1000 bytes"])");
}

TEST_F(ExecEngine, AHugeResultIsAPayloadLimit) {
  ExecutionSpec spec = code("async () => 'x'.repeat(100 * 1024 * 1024)");
  spec.memoryMb = 1024;
  ExecutionOutcome o = run(spec);
  EXPECT_EQ(o.error, ExecErrorCode::kPayloadLimit) << o.message;
  EXPECT_NE(o.message.find("result limit of 4194304 bytes"), std::string::npos) << o.message;
  expectHealthy();
}

TEST_F(ExecEngine, ASyntaxErrorNamesTheCallersLineAndColumn) {
  ExecutionOutcome o = run(code("async () => {\n  return 1 +;\n}"));
  EXPECT_EQ(o.error, ExecErrorCode::kSyntaxError);
  EXPECT_NE(o.message.find("code, line 2, column 13"), std::string::npos) << o.message;
  o = run(code("async () => 1 +"));
  EXPECT_EQ(o.error, ExecErrorCode::kSyntaxError) << o.message;
  ExecutionSpec spec = code("import { x } from 'm'\nasync () => x");
  spec.modules.push_back(GuestModule{"m", "export const x = ;"});
  o = run(spec);
  EXPECT_EQ(o.error, ExecErrorCode::kSyntaxError);
  EXPECT_NE(o.message.find("module 'm', line 1, column 18"), std::string::npos) << o.message;
  expectHealthy();
}

TEST_F(ExecEngine, AGuestErrorCarriesItsMessageAndOnlyTheGuestsFrames) {
  ExecutionOutcome o = run(code(
      "async () => {\n  function inner() { throw new RangeError('bad input') }\n  inner()\n}"));
  EXPECT_EQ(o.error, ExecErrorCode::kGuestError);
  EXPECT_EQ(o.message, "RangeError: bad input");
  EXPECT_NE(o.stack.find("at inner (<code>:2:"), std::string::npos) << o.stack;
  EXPECT_EQ(o.stack.find("isolane:"), std::string::npos) << o.stack;
  o = run(code("async () => { throw new Error('first line') }"));
  EXPECT_NE(o.stack.find("(<code>:1:21)"), std::string::npos) << o.stack;  // the caller's column
  o = run(code("async () => { throw 'plain' }"));
  EXPECT_EQ(o.error, ExecErrorCode::kGuestError);
  EXPECT_EQ(o.message, "Uncaught plain");
  o = run(code("42"));
  EXPECT_EQ(o.error, ExecErrorCode::kGuestError);
  EXPECT_NE(o.message.find("async function expression"), std::string::npos) << o.message;
}

TEST_F(ExecEngine, AnImportOfAModuleNotInTheMapIsAGuestError) {
  ExecutionOutcome o = run(code("import x from 'missing'\nasync () => x"));
  EXPECT_EQ(o.error, ExecErrorCode::kGuestError);
  EXPECT_NE(o.message.find("cannot import 'missing'"), std::string::npos) << o.message;
  expectHealthy();
}

TEST_F(ExecEngine, AnInfiniteLoopIsACpuLimit) {
  ExecutionSpec spec = code("async () => { globalThis.leftover = 1; for (;;) {} }");
  spec.timeoutMs = 300;
  ExecutionOutcome o = run(spec);
  EXPECT_EQ(o.error, ExecErrorCode::kCpuLimit) << o.message;
  EXPECT_NE(o.message.find("300 ms"), std::string::npos) << o.message;
  expectHealthy();
}

TEST_F(ExecEngine, AHeapBombIsAMemoryLimit) {
  ExecutionSpec spec =
      code("async () => { const a = []; for (;;) a.push(new Array(1e5).fill(1)) }");
  spec.memoryMb = 32;
  spec.timeoutMs = 20'000;
  ExecutionOutcome o = run(spec);
  EXPECT_EQ(o.error, ExecErrorCode::kMemoryLimit) << o.message;
  EXPECT_NE(o.message.find("32 MiB"), std::string::npos) << o.message;
  expectHealthy();
}

TEST_F(ExecEngine, CodeThatNeverSettlesTimesOut) {
  ExecutionSpec spec = code("async () => new Promise(() => {})");
  spec.timeoutMs = 200;
  ExecutionOutcome o = run(spec);
  EXPECT_EQ(o.error, ExecErrorCode::kTimeout) << o.message;
  EXPECT_NE(o.message.find("timeout of 200 ms"), std::string::npos) << o.message;
  expectHealthy();
}

TEST_F(ExecEngine, AGuestThatRewritesTheBuiltinsStillGetsItsResultSerialized) {
  ExecutionOutcome o = run(
      code("async () => { JSON.stringify = () => 'hacked'; JSON.parse = null;"
           " Object.defineProperty(Object.prototype, 'x', { set() { throw new Error('x') } });"
           " Array.prototype.push = null; Promise.prototype.then = null; Promise.resolve = null;"
           " globalThis.leftover = 1; return { a: 1 } }"));
  EXPECT_EQ(o.error, ExecErrorCode::kNone) << o.message;
  EXPECT_EQ(o.resultJson, R"({"a":1})");
  expectHealthy();
}

TEST_F(ExecEngine, ConsoleOutputIsCapturedAndBounded) {
  ExecutionSpec spec = code(
      "async () => { console.log('hello', { a: 1 }); console.error('oops');"
      " for (let i = 0; i < 1000; i++) console.log('x'.repeat(100)); return 1 }");
  spec.consoleLimit = 2000;
  ExecutionOutcome o = run(spec);
  ASSERT_EQ(o.error, ExecErrorCode::kNone) << o.message;
  ASSERT_GE(o.logs.size(), 3u);
  EXPECT_EQ(o.logs[0], "log: hello { a: 1 }");
  EXPECT_EQ(o.logs[1], "error: oops");
  EXPECT_TRUE(o.logsTruncated);
  EXPECT_EQ(o.logs.back(), "[console output truncated at 2000 bytes]");
  EXPECT_LT(o.logs.size(), 25u);
}

TEST_F(ExecEngine, FetchIsRefusedUnlessOutboundIsNative) {
  ExecutionOutcome o = run(code(
      "async () => { try { await fetch('http://127.0.0.1:1/') } catch (e) { return e.message } }"));
  EXPECT_EQ(o.resultJson, R"x("fetch() is disabled for this execution (outbound: \"disabled\")")x");
}

TEST_F(ExecEngine, AToolCallFloodIsBoundedAndTheNextExecutionIsFine) {
  ExecutionSpec spec = code(
      "async () => { let refused = 0; const all = [];"
      " for (let i = 0; i < 5000; i++) all.push(tools.t.f(i).catch((e) => { refused++ }));"
      " await Promise.all(all); return refused }");
  spec.tools.push_back(ToolProvider{"t", {"f"}});
  ExecutionOutcome o = run(spec, [](const Call&) { return std::pair{true, std::string("0")}; });
  ASSERT_EQ(o.error, ExecErrorCode::kNone) << o.message;
  EXPECT_EQ(o.resultJson, "4000");  // 1000 in flight at most
  EXPECT_EQ(o.toolCalls, 1000u);
  expectHealthy();
}

TEST_F(ExecEngine, AtomicsWaitAndWebAssemblyAreNotThere) {
  ExecutionOutcome o =
      run(code("async () => { Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0) }"));
  EXPECT_EQ(o.error, ExecErrorCode::kGuestError) << o.message;
  EXPECT_NE(o.message.find("TypeError"), std::string::npos) << o.message;
  EXPECT_EQ(run(code("async () => typeof WebAssembly")).resultJson, "\"undefined\"");
  expectHealthy();
}

TEST_F(ExecEngine, APoisonedPromiseSpeciesIsTheGuestsOwnBusiness) {
  ExecutionOutcome o =
      run(code("async () => { Object.defineProperty(Promise, Symbol.species, { get() { throw new "
               "Error('sp') } }); Promise.prototype.then = function () { throw new Error('then') "
               "}; return 1 }"));
  EXPECT_EQ(o.error, ExecErrorCode::kNone) << o.message;
  EXPECT_EQ(o.resultJson, "1");
}

TEST_F(ExecEngine, AResultThatIsNotWellFormedUnicodeIsATypedError) {
  ExecutionOutcome o = run(code("async () => ({ s: 'a\\ud800b' })"));
  EXPECT_EQ(o.error, ExecErrorCode::kGuestError);
  EXPECT_NE(o.message.find("lone surrogate"), std::string::npos) << o.message;
  o = run(code("async () => ['\\ud83d\\ude00', '\\\\ud800']"));  // a pair; an escaped backslash
  EXPECT_EQ(o.error, ExecErrorCode::kNone) << o.message;
}

TEST_F(ExecEngine, OneSynchronousStretchMayNotHoldTheThreadPastItsBound) {
  ExecutionSpec spec =
      code("async () => { const end = Date.now() + 3000; while (Date.now() < end) {} }");
  spec.timeoutMs = 10'000;
  ExecutionOutcome o = run(spec);
  EXPECT_EQ(o.error, ExecErrorCode::kCpuLimit);
  EXPECT_NE(o.message.find("one synchronous stretch"), std::string::npos) << o.message;
  // Stretches under the bound, with awaits between them, add up to more than it.
  spec = code(
      "async () => { for (let i = 0; i < 3; i++) { const end = Date.now() + 500;"
      " while (Date.now() < end) {} await new Promise((r) => setTimeout(r, 0)) } return 'done' }");
  spec.timeoutMs = 10'000;
  EXPECT_EQ(run(spec).resultJson, "\"done\"");
}

TEST_F(ExecEngine, TimersTheModulesSetAreChargedToTheExecution) {
  ExecutionSpec spec =
      code("import 'busy'\nasync () => { await new Promise((r) => setTimeout(r, 200)); return 1 }");
  spec.modules.push_back(GuestModule{"busy", "setTimeout(() => { for (;;) {} }, 5)"});
  spec.timeoutMs = 300;
  ExecutionOutcome o = run(spec);
  EXPECT_EQ(o.error, ExecErrorCode::kCpuLimit) << o.message;
  expectHealthy();
}

// An execution submitted without waiting for it: its outcome, how many times it settled, and
// its tool calls as they come (answered by the test through toolAnswer).
struct Started {
  std::future<ExecutionOutcome> outcome;
  std::shared_ptr<std::atomic<int>> settled = std::make_shared<std::atomic<int>>(0);
  std::shared_ptr<std::promise<std::uint64_t>> firstCall =
      std::make_shared<std::promise<std::uint64_t>>();
  std::future<std::uint64_t> called = firstCall->get_future();
  bool accepted = false;
};

template <typename Target>
Started submitTo(Target& target, std::uint64_t key, ExecutionSpec spec) {
  Started s;
  auto promise = std::make_shared<std::promise<ExecutionOutcome>>();
  s.outcome = promise->get_future();
  auto first = s.firstCall;
  auto seen = std::make_shared<std::atomic<bool>>(false);
  ExecutionJob job = makeExecutionJob(
      key, std::move(spec),
      [first, seen](std::uint64_t call, const std::string&, const std::string&,
                    const std::string&) {
        if (!seen->exchange(true)) first->set_value(call);
      },
      [promise, count = s.settled](ExecutionOutcome o) {
        if (count->fetch_add(1) == 0) promise->set_value(std::move(o));
      });
  s.accepted = target.submitExecution(job);
  return s;
}

ExecutionSpec neverSettling() {
  ExecutionSpec spec;
  spec.code = "async () => new Promise(() => {})";
  spec.timeoutMs = 10'000;
  return spec;
}

ExecutionSpec waitingOnATool(std::uint32_t timeoutMs = 10'000) {
  ExecutionSpec spec;
  spec.code = "async () => await tools.t.wait()";
  spec.timeoutMs = timeoutMs;
  spec.tools.push_back(ToolProvider{"t", {"wait"}});
  return spec;
}

TEST_F(ExecEngine, ACallerThatLeavesEndsItsExecutionAtOnceAndOnce) {
  Started s = submitTo(executor_, 501, waitingOnATool());
  ASSERT_TRUE(s.accepted);
  ASSERT_EQ(s.called.wait_for(10s), std::future_status::ready);
  executor_.cancel(501);
  ASSERT_EQ(s.outcome.wait_for(10s), std::future_status::ready);
  ExecutionOutcome o = s.outcome.get();
  EXPECT_EQ(o.error, ExecErrorCode::kConnectionBroken) << o.message;
  EXPECT_TRUE(o.resultJson.empty());
  // A late answer to its tool call finds nothing, and settles nothing again.
  executor_.toolAnswer(501, s.called.get(), true, "1");
  expectHealthy();
  EXPECT_EQ(s.settled->load(), 1);
}

TEST_F(ExecEngine, AnExecutionWithTheIdOfOneInFlightIsRefusedAndTheFirstGoesOn) {
  EXPECT_FALSE(submitTo(executor_, 0, code("async () => 1")).accepted);  // no id, no tool answers
  Started first = submitTo(executor_, 502, waitingOnATool());
  ASSERT_EQ(first.called.wait_for(10s), std::future_status::ready);
  Started second = submitTo(executor_, 502, code("async () => 2"));
  ASSERT_EQ(second.outcome.wait_for(10s), std::future_status::ready);
  ExecutionOutcome refused = second.outcome.get();
  EXPECT_EQ(refused.error, ExecErrorCode::kInternal);
  EXPECT_NE(refused.message.find("already in flight"), std::string::npos) << refused.message;
  executor_.toolAnswer(502, first.called.get(), true, "\"first\"");
  ASSERT_EQ(first.outcome.wait_for(10s), std::future_status::ready);
  ExecutionOutcome o = first.outcome.get();
  EXPECT_EQ(o.error, ExecErrorCode::kNone) << o.message;
  EXPECT_EQ(o.resultJson, "\"first\"");
  EXPECT_EQ(first.settled->load(), 1);
  EXPECT_EQ(second.settled->load(), 1);
}

TEST(ExecEngineStop, EveryExecutionSettlesOnceWhenItsExecutorStops) {
  NullLog log;
  Executor executor(ExecutorOptions{}, log);
  std::vector<Started> started;
  for (std::uint64_t key = 1; key <= 6; ++key) {
    started.push_back(submitTo(executor, key, neverSettling()));
    ASSERT_TRUE(started.back().accepted);
  }
  executor.stop();  // some are running, some may still wait in the queue
  for (Started& s : started) {
    ASSERT_EQ(s.outcome.wait_for(10s), std::future_status::ready);
    ExecutionOutcome o = s.outcome.get();
    EXPECT_EQ(o.error, ExecErrorCode::kConnectionBroken) << o.message;
    EXPECT_EQ(s.settled->load(), 1);
  }
  EXPECT_FALSE(submitTo(executor, 7, neverSettling()).accepted);
}

TEST(ExecEngineSet, ExecutionsSpreadOverThreadsGetTheirToolAnswersWhereTheyRun) {
  NullLog log;
  ExecutorSet set(2, ExecutorOptions{}, log);
  std::vector<Started> started;
  for (std::uint64_t key = 1; key <= 4; ++key) {
    started.push_back(submitTo(set, key, waitingOnATool()));
    ASSERT_TRUE(started.back().accepted);
  }
  for (std::uint64_t key = 1; key <= 4; ++key) {
    Started& s = started[key - 1];
    ASSERT_EQ(s.called.wait_for(10s), std::future_status::ready);
    set.toolAnswer(key, s.called.get(), true, std::to_string(key * 10));
  }
  for (std::uint64_t key = 1; key <= 4; ++key) {
    Started& s = started[key - 1];
    ASSERT_EQ(s.outcome.wait_for(10s), std::future_status::ready);
    ExecutionOutcome o = s.outcome.get();
    EXPECT_EQ(o.error, ExecErrorCode::kNone) << o.message;
    EXPECT_EQ(o.resultJson, std::to_string(key * 10));
  }
  set.stop();
}

}  // namespace
}  // namespace isolane
