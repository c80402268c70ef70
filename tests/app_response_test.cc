// What C++ accepts from JavaScript as an app's response head (worker/app_response.h): values of
// the exact types expected, the HTTP grammar, and the limits, with nothing of the app's run while
// they are read. Each case builds the values in a real V8 context, as a hostile app could.

#include "worker/app_response.h"

#include <gtest/gtest.h>

#include <string>

#include "ipc/response_check.h"
#include "runtime/isolate_owner.h"
#include "runtime/js_errors.h"
#include "runtime/js_scope.h"

namespace isolane {
namespace {

class AppResponseTest : public ::testing::Test {
 protected:
  AppResponseTest() : owner_(IsolateLimits{}) {
    v8::Isolate::Scope scope(owner_.isolate());
    v8::HandleScope handles(owner_.isolate());
    context_.Reset(owner_.isolate(), v8::Context::New(owner_.isolate()));
  }

  // Evaluates `setup` (may define globals), then `[status, statusText, headers, body]` and reads
  // them as the respond native does.
  Result<AppResponse> read(const std::string& parts, const std::string& setup = "") {
    JsScope js(owner_, context_);
    v8::TryCatch tryCatch(js.isolate());
    auto eval = [&](const std::string& source) -> v8::Local<v8::Value> {
      v8::Local<v8::Script> script;
      v8::Local<v8::Value> value;
      if (!v8::Script::Compile(js.context(), js.str(source)).ToLocal(&script) ||
          !script->Run(js.context()).ToLocal(&value)) {
        ADD_FAILURE() << describeException(js, tryCatch);
        return v8::Undefined(js.isolate());
      }
      return value;
    };
    if (!setup.empty()) eval(setup);
    auto array = eval(parts).As<v8::Array>();
    auto at = [&](std::uint32_t i) { return array->Get(js.context(), i).ToLocalChecked(); };
    return readAppResponse(js, at(0), at(1), at(2), at(3));
  }

  // A global the test's traps set when they run; they must not.
  std::string global(const std::string& name) {
    JsScope js(owner_, context_);
    v8::Local<v8::Value> v =
        js.context()->Global()->Get(js.context(), js.str(name)).ToLocalChecked();
    return toUtf8(js, v);
  }

  IsolateOwner owner_;
  v8::Global<v8::Context> context_;
};

TEST_F(AppResponseTest, AcceptsAWellFormedHead) {
  auto r = read(
      "[201, 'Made', ['content-type', 'text/plain', 'x-latin', '\\xe9'], "
      "new Uint8Array([104, 105])]");
  ASSERT_TRUE(r) << r.error();
  EXPECT_EQ(r->status, 201);
  EXPECT_EQ(r->statusText, "Made");
  ASSERT_EQ(r->headers.size(), 2u);
  EXPECT_EQ(r->headers[1].second, "\xe9");  // a ByteString goes out byte for byte
  EXPECT_EQ(r->body, "hi");
}

TEST_F(AppResponseTest, StatusMustBeAnIntegerIn200To599) {
  for (const char* status : {"70000", "101", "199", "600", "-1", "0"}) {
    auto r = read(std::string("[") + status + ", '', [], null]");
    ASSERT_FALSE(r) << status;
    EXPECT_NE(r.error().find("outside 200-599"), std::string::npos) << r.error();
  }
  for (const char* status : {"200.5", "'200'", "null", "NaN", "2**40"}) {
    auto r = read(std::string("[") + status + ", '', [], null]");
    ASSERT_FALSE(r) << status;
    EXPECT_NE(r.error().find("not an integer"), std::string::npos) << r.error();
  }
}

TEST_F(AppResponseTest, ObjectsAreRefusedWithoutCallingTheirConversions) {
  std::string setup =
      "globalThis.trapped = 'no';"
      "globalThis.sneaky = { valueOf() { trapped = 'valueOf'; return 200; },"
      "                      toString() { trapped = 'toString'; return 'x'; } };";
  EXPECT_FALSE(read("[sneaky, '', [], null]", setup));
  EXPECT_FALSE(read("[200, sneaky, [], null]", setup));
  EXPECT_FALSE(read("[200, '', ['x-a', sneaky], null]", setup));
  EXPECT_FALSE(read("[200, '', [sneaky, 'v'], null]", setup));
  EXPECT_FALSE(read("[200, '', [], sneaky]", setup));
  EXPECT_EQ(global("trapped"), "no");
}

TEST_F(AppResponseTest, HeaderLinesFollowTheGrammar) {
  struct Case {
    const char* headers;
    const char* expect;
  } cases[] = {
      {"['x-a', 'evil\\r\\nSet-Cookie: pwned=1']", "forbidden character"},
      {"['x-a', 'a\\nb']", "forbidden character"},
      {"['x-a', 'a\\0b']", "forbidden character"},
      {"['x-a', 'a\\x7fb']", "forbidden character"},
      {"['x a', 'v']", "invalid header name"},
      {"['x:a', 'v']", "invalid header name"},
      {"['', 'v']", "invalid header name"},
      {"['x-a\\r\\n', 'v']", "invalid header name"},
      {"['x-a', '\\u0100']", "byte strings"},
      {"['x-a']", "odd length"},
      {"['x-a', 42]", "byte strings"},
      {"'x-a: v'", "not an array"},
  };
  for (const Case& c : cases) {
    auto r = read(std::string("[200, '', ") + c.headers + ", null]");
    ASSERT_FALSE(r) << c.headers;
    EXPECT_NE(r.error().find(c.expect), std::string::npos) << c.headers << ": " << r.error();
  }
  auto tab = read("[200, '', ['x-a', 'a\\tb \\xff'], null]");
  EXPECT_TRUE(tab) << tab.error();
}

TEST_F(AppResponseTest, ReasonPhraseFollowsTheGrammar) {
  EXPECT_FALSE(read("[200, 'OK\\r\\nX-Injected: 1', [], null]"));
  EXPECT_FALSE(read("[200, 'x'.repeat(513), [], null]"));
  EXPECT_TRUE(read("[200, 'x'.repeat(512), [], null]"));
}

TEST_F(AppResponseTest, HeaderCountAndSizeAreBounded) {
  auto many =
      read("[200, '', Array.from({ length: 1002 }, (_, i) => i % 2 ? 'v' : 'x-' + i), null]");
  ASSERT_FALSE(many);
  EXPECT_NE(many.error().find("501 header lines"), std::string::npos) << many.error();
  EXPECT_TRUE(
      read("[200, '', Array.from({ length: 1000 }, (_, i) => i % 2 ? 'v' : 'x-' + i), null]"));
  auto big = read("[200, '', ['x-a', 'v'.repeat(40000), 'x-b', 'v'.repeat(40000)], null]");
  ASSERT_FALSE(big);
  EXPECT_NE(big.error().find("exceed 65536 bytes"), std::string::npos) << big.error();
}

TEST_F(AppResponseTest, HolesAreNotLookedUpOnThePrototype) {
  std::string setup =
      "globalThis.trapped = 'no';"
      "Object.defineProperty(Array.prototype, 1, { get() { trapped = 'getter'; return 'v'; },"
      "                                             configurable: true });";
  auto r = read("(() => { const a = ['x-a']; a.length = 2; return [200, '', a, null]; })()", setup);
  EXPECT_FALSE(r);
  EXPECT_EQ(global("trapped"), "no");
}

TEST(ResponseCheck, NamesWhatIsWrong) {
  EXPECT_FALSE(checkResponseHead(200, "OK", {{"content-type", "text/plain"}}));
  EXPECT_TRUE(checkResponseHead(70000, "", {}));
  EXPECT_TRUE(checkResponseHead(4464, "", {}));  // 70000 truncated to 16 bits on the wire
  auto bad = checkResponseHead(200, "", {{"x-a", "1"}, {"set-cookie", "a\r\nb"}});
  ASSERT_TRUE(bad);
  EXPECT_NE(bad->find("\"set-cookie\""), std::string::npos) << *bad;
  EXPECT_TRUE(checkRequestHead("GET\r\nX: y", {}));
  EXPECT_TRUE(checkRequestHead("GET", {{"host", "a\r\nb"}}));
  EXPECT_FALSE(checkRequestHead("PATCH", {{"x-a", "b"}}));
}

}  // namespace
}  // namespace isolane
