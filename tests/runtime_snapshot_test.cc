// The web runtime's startup snapshot (web/runtime_snapshot.h): the build installs one this engine
// uses, a context made from it is the context the bundle makes when it runs from source, and
// nothing of one context (or of the snapshot's maker) leaks into another. The web-API tests run
// on contexts from the snapshot too (web_js_test, and web_js_test_from_source without it).

#include "web/runtime_snapshot.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>

#include "runtime/engine_key.h"
#include "runtime/js_errors.h"
#include "runtime/js_scope.h"
#include "runtime/js_values.h"
#include "web/web_context.h"

namespace isolane {
namespace {

// Runs `source` in `web`'s context; returns its string value or "threw: ...".
std::string run(IsolateOwner& owner, WebContext& web, const char* source) {
  JsScope js(owner, web.context);
  v8::TryCatch tryCatch(js.isolate());
  v8::Local<v8::Script> script;
  v8::Local<v8::Value> result;
  if (!v8::Script::Compile(js.context(), js.str(source)).ToLocal(&script) ||
      !script->Run(js.context()).ToLocal(&result)) {
    return "threw: " + describeException(js, tryCatch);
  }
  return toUtf8(js, result);
}

// One context with the web runtime, and what it needs to live.
struct Runtime {
  explicit Runtime(IsolateOwner& owner) {
    state.createdAt = std::chrono::steady_clock::now();
    state.timeOriginMs = std::chrono::duration<double, std::milli>(
                             std::chrono::system_clock::now().time_since_epoch())
                             .count();
    std::string error;
    ok = createWebContext(owner, state, &web, &error);
    EXPECT_TRUE(ok) << error;
  }
  ContextState state;
  WebContext web;
  bool ok = false;
};

// What a context shows of the runtime: every global's name and type, and what the natives give.
const char* const kProbe = R"JS(
  JSON.stringify({
    globals: Object.getOwnPropertyNames(globalThis).sort().map((k) => k + ':' + typeof globalThis[k]),
    host: typeof globalThis.__isolane_host,
    sab: typeof SharedArrayBuffer === 'function' && new SharedArrayBuffer(8).byteLength,
    encoded: Array.from(new TextEncoder().encode('é')).join(),
    url: new URL('../b?x=1#h', 'http://example.com/a/c').href,
    headers: [...new Headers({ B: '2', a: '1' })].join(';'),
    clock: Math.abs(performance.timeOrigin - Date.now()) < 60000 && performance.now() < 60000,
    // The runtime's source, read back from the bytes embedded in the engine (an external string).
    source: String(Headers).slice(0, 60),
  })
)JS";

TEST(RuntimeSnapshot, TheBuildInstallsOneThisEngineUses) {
  ASSERT_NE(runtimeSnapshot(), nullptr) << runtimeSnapshotProblem();
  EXPECT_EQ(runtimeSnapshotProblem(), "");
}

TEST(RuntimeSnapshot, AContextFromItIsTheContextTheBundleMakes) {
  ASSERT_NE(runtimeSnapshot(), nullptr) << runtimeSnapshotProblem();
  IsolateOwner fromSnapshot(IsolateLimits{}, {}, runtimeSnapshot());
  IsolateOwner fromSource(IsolateLimits{});
  Runtime a(fromSnapshot), b(fromSource);
  ASSERT_TRUE(a.ok && b.ok);
  std::string shown = run(fromSnapshot, a.web, kProbe);
  EXPECT_EQ(shown, run(fromSource, b.web, kProbe));
  EXPECT_NE(shown.find("\"clock\":true"), std::string::npos) << shown;
  EXPECT_NE(shown.find("\"host\":\"undefined\""), std::string::npos) << shown;
  EXPECT_NE(shown.find("\"sab\":8"), std::string::npos) << shown;
  EXPECT_NE(shown.find("fetch:function"), std::string::npos) << shown;
  EXPECT_NE(shown.find("\"source\":\"class _Headers {"), std::string::npos) << shown;
}

TEST(RuntimeSnapshot, ContextsFromItShareNothing) {
  IsolateOwner owner(IsolateLimits{}, {}, runtimeSnapshot());
  Runtime a(owner), b(owner);
  ASSERT_TRUE(a.ok && b.ok);
  EXPECT_EQ(run(owner, a.web,
                "globalThis.leak = 1; Headers.prototype.get = () => 'hijacked'; "
                "Array.prototype.push = null; 'set'"),
            "set");
  EXPECT_EQ(
      run(owner, b.web, "String([typeof leak, new Headers({a: '1'}).get('a'), typeof [].push])"),
      "undefined,1,function");
}

TEST(RuntimeSnapshot, RandomnessIsNotReplayedFromIt) {
  // Math.random's state and V8's hash seed are reseeded per isolate, not restored from the blob.
  IsolateOwner one(IsolateLimits{}, {}, runtimeSnapshot());
  IsolateOwner two(IsolateLimits{}, {}, runtimeSnapshot());
  Runtime a(one), b(two);
  ASSERT_TRUE(a.ok && b.ok);
  const char* draw = "String([Math.random(), Math.random(), crypto.randomUUID()])";
  EXPECT_NE(run(one, a.web, draw), run(two, b.web, draw));
}

TEST(RuntimeSnapshot, AFileOfAnotherEngineOrBundleIsRefused) {
  std::string path = testing::TempDir() + "/snapshot-" + std::to_string(getpid());
  auto write = [&](const std::string& bytes) {
    std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
  };
  write("isolane runtime snapshot 2\nv8 1.0 node v0 options runtime 00\nblob");
  Result<IsolateSnapshot> other = mapRuntimeSnapshot(path);
  ASSERT_FALSE(other);
  EXPECT_NE(other.error().find("another engine"), std::string::npos) << other.error();

  // The right key line but no blob after it, and a file cut inside its header.
  Result<IsolateSnapshot> real = mapRuntimeSnapshot(runtimeSnapshotPath());
  ASSERT_TRUE(real) << real.error();
  std::string header = "isolane runtime snapshot 2\n";
  std::ifstream in(runtimeSnapshotPath(), std::ios::binary);
  std::string line1, line2;
  std::getline(in, line1);
  std::getline(in, line2);
  EXPECT_EQ(line2.rfind(engineKey(), 0), 0u) << line2;
  write(header + line2 + "\n");
  EXPECT_FALSE(mapRuntimeSnapshot(path));
  write(header.substr(0, 10));
  EXPECT_FALSE(mapRuntimeSnapshot(path));
  EXPECT_FALSE(mapRuntimeSnapshot(path + ".missing"));
  std::remove(path.c_str());
}

}  // namespace
}  // namespace isolane
