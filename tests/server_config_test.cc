// The config file and the environment: what operators write, and the errors they get.

#include <gtest/gtest.h>

#include <cstdlib>

#include "server/config.h"

namespace isolane {
namespace {

TEST(Config, ParsesServerAndApps) {
  auto c = parseConfig(R"(
[server]
listen = "0.0.0.0:9000"
max_body_bytes = 2048
request_cpu_ms = 500

[[app]]
name = "a"
module = "a/app.js"
route = "/a"
host = "a.example"
strip_prefix = false
[app.vars]
KEY = "value"

[[app]]
name = "b"
module = "/abs/b.js"
)",
                       "/base", "test.toml");
  ASSERT_TRUE(c) << c.error();
  EXPECT_EQ(c->listenHost, "0.0.0.0");
  EXPECT_EQ(c->listenPort, 9000);
  EXPECT_EQ(c->maxBodyBytes, 2048u);
  EXPECT_EQ(c->requestCpuLimit.count(), 500);
  ASSERT_EQ(c->apps.size(), 2u);
  EXPECT_EQ(c->apps[0].module, "/base/a/app.js");
  EXPECT_EQ(c->apps[0].route, "/a");
  EXPECT_EQ(c->apps[0].host, "a.example");
  EXPECT_FALSE(c->apps[0].stripPrefix);
  ASSERT_EQ(c->apps[0].vars.size(), 1u);
  EXPECT_EQ(c->apps[0].vars[0].second, "value");
  EXPECT_EQ(c->apps[1].module, "/abs/b.js");
  EXPECT_EQ(c->apps[1].route, "/");
}

// process = "own": the app gets worker processes of its own; `workers` says how many. A service
// binding calls an app of the same process, so none may cross to or from such an app.
TEST(Config, AnAppMayHaveProcessesOfItsOwn) {
  auto c = parseConfig(R"(
[[app]]
name = "pay"
module = "/pay.js"
process = "own"
workers = 2

[[app]]
name = "site"
module = "/site.js"
)",
                       "/", "own.toml");
  ASSERT_TRUE(c) << c.error();
  EXPECT_TRUE(c->apps[0].ownProcess);
  EXPECT_EQ(c->apps[0].ownWorkers, 2u);
  EXPECT_FALSE(c->apps[1].ownProcess);

  auto bad =
      parseConfig("[[app]]\nname='a'\nmodule='/a.js'\nprocess='mine'\n", "/", "x.toml");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().find("'process' is"), std::string::npos) << bad.error();
  auto workers = parseConfig("[[app]]\nname='a'\nmodule='/a.js'\nworkers=2\n", "/", "x.toml");
  ASSERT_FALSE(workers);
  EXPECT_NE(workers.error().find("process = \"own\""), std::string::npos) << workers.error();
  auto crossing = parseConfig(R"(
[[app]]
name = "pay"
module = "/pay.js"
process = "own"
[[app]]
name = "site"
module = "/site.js"
[app.services]
PAY = "pay"
)",
                              "/", "x.toml");
  ASSERT_FALSE(crossing);
  EXPECT_NE(crossing.error().find("processes of its own"), std::string::npos) << crossing.error();
}

TEST(Config, ErrorsNameTheProblem) {
  auto syntax = parseConfig("[server\nlisten=1", "/", "bad.toml");
  ASSERT_FALSE(syntax);
  EXPECT_NE(syntax.error().find("bad.toml:1"), std::string::npos) << syntax.error();

  auto noApps = parseConfig("[server]\n", "/", "x.toml");
  ASSERT_FALSE(noApps);
  EXPECT_NE(noApps.error().find("[[app]]"), std::string::npos);

  auto noModule = parseConfig("[[app]]\nname='a'\n", "/", "x.toml");
  ASSERT_FALSE(noModule);
  EXPECT_NE(noModule.error().find("'module' is required"), std::string::npos);

  auto dup =
      parseConfig("[[app]]\nname='a'\nmodule='x'\n[[app]]\nname='a'\nmodule='y'\n", "/", "x.toml");
  ASSERT_FALSE(dup);
  EXPECT_NE(dup.error().find("duplicate"), std::string::npos);

  auto range =
      parseConfig("[server]\nmax_body_bytes=-1\n[[app]]\nname='a'\nmodule='x'\n", "/", "x.toml");
  ASSERT_FALSE(range);
  EXPECT_NE(range.error().find("max_body_bytes"), std::string::npos);
}

TEST(Config, ListenForms) {
  ServerConfig c;
  ASSERT_TRUE(parseListen("127.0.0.1:0", c));
  EXPECT_EQ(c.listenPort, 0);
  ASSERT_TRUE(parseListen("[::1]:8081", c));
  EXPECT_EQ(c.listenHost, "::1");
  ASSERT_TRUE(parseListen(":8082", c));
  EXPECT_EQ(c.listenHost, "127.0.0.1");
  EXPECT_FALSE(parseListen("localhost", c));
  EXPECT_FALSE(parseListen("h:70000", c));
}

TEST(Config, EnvironmentOverrides) {
  ServerConfig c;
  setenv("ISOLANE_MAX_BODY_BYTES", "77", 1);
  setenv("ISOLANE_REQUEST_CPU_MS", "123", 1);
  setenv("ISOLANE_REACTOR_THREADS", "2", 1);
  ASSERT_TRUE(applyEnvironment(c));
  EXPECT_EQ(c.maxBodyBytes, 77u);
  EXPECT_EQ(c.requestCpuLimit.count(), 123);
  EXPECT_EQ(c.reactorThreads, 2u);
  setenv("ISOLANE_REACTOR_THREADS", "0", 1);
  EXPECT_FALSE(applyEnvironment(c));
  unsetenv("ISOLANE_REACTOR_THREADS");
  setenv("ISOLANE_REQUEST_CPU_MS", "abc", 1);
  Status bad = applyEnvironment(c);
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().find("ISOLANE_REQUEST_CPU_MS"), std::string::npos);
  unsetenv("ISOLANE_MAX_BODY_BYTES");
  unsetenv("ISOLANE_REQUEST_CPU_MS");
}

TEST(Config, ResilienceSettings) {
  ServerConfig defaults;
  EXPECT_EQ(defaults.pool.wedgedTurn.count(), 50);
  EXPECT_EQ(defaults.pool.shedDelay.count(), 50);
  EXPECT_EQ(defaults.pool.quarantine.count(), 5000);
  EXPECT_EQ(defaults.pool.maxWedgedShare, 1.0);
  EXPECT_TRUE(defaults.pool.reserveThread);
  auto c = parseConfig(R"(
[pool]
wedged_turn_ms = 0
shed_delay_ms = 80
max_wedged_share = 0.5
reserve_thread = false
quarantine_ms = 2000
crash_budget = 3
crash_window_ms = 10000
crash_cooldown_ms = 20000

[[app]]
name = "a"
module = "a.js"
)",
                       "/base", "test.toml");
  ASSERT_TRUE(c) << c.error();
  EXPECT_EQ(c->pool.wedgedTurn.count(), 0);
  EXPECT_EQ(c->pool.shedDelay.count(), 80);
  EXPECT_EQ(c->pool.maxWedgedShare, 0.5);
  EXPECT_FALSE(c->pool.reserveThread);
  EXPECT_EQ(c->pool.quarantine.count(), 2000);
  EXPECT_EQ(c->pool.crashBudget.maxCrashes, 3);
  EXPECT_EQ(c->pool.crashBudget.window.count(), 10000);
  EXPECT_EQ(c->pool.crashBudget.cooldown.count(), 20000);
  auto bad = parseConfig("[pool]\nquarantine_ms = 100\n[[app]]\nname = \"a\"\nmodule = \"a.js\"\n",
                         "/base", "test.toml");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().find("quarantine_ms"), std::string::npos) << bad.error();
  setenv("ISOLANE_SHED_DELAY_MS", "0", 1);
  setenv("ISOLANE_WEDGED_TURN_MS", "99999", 1);
  ServerConfig e;
  ASSERT_TRUE(applyEnvironment(e));
  EXPECT_EQ(e.pool.shedDelay.count(), 0);
  EXPECT_EQ(e.pool.wedgedTurn.count(), 60000);  // clamped
  unsetenv("ISOLANE_SHED_DELAY_MS");
  unsetenv("ISOLANE_WEDGED_TURN_MS");
  auto share = parseConfig("[pool]\nmax_wedged_share = 2\n[[app]]\nname = \"a\"\nmodule = \"a.js\"\n",
                           "/base", "test.toml");
  ASSERT_FALSE(share);
  EXPECT_NE(share.error().find("max_wedged_share"), std::string::npos) << share.error();
  setenv("ISOLANE_MAX_WEDGED_SHARE", "0.25", 1);
  ServerConfig w;
  ASSERT_TRUE(applyEnvironment(w));
  EXPECT_EQ(w.pool.maxWedgedShare, 0.25);
  setenv("ISOLANE_MAX_WEDGED_SHARE", "x", 1);
  EXPECT_FALSE(applyEnvironment(w));
  unsetenv("ISOLANE_MAX_WEDGED_SHARE");
  setenv("ISOLANE_RESERVE_THREAD", "0", 1);
  ASSERT_TRUE(applyEnvironment(w));
  EXPECT_FALSE(w.pool.reserveThread);
  setenv("ISOLANE_RESERVE_THREAD", "maybe", 1);
  EXPECT_FALSE(applyEnvironment(w));
  unsetenv("ISOLANE_RESERVE_THREAD");
}

TEST(Config, StreamingSettings) {
  auto c = parseConfig(R"(
[server]
stream_idle_timeout_ms = 1500
stream_max_ms = 90000

[pool]
size = 4
stream_max_inflight = 300
streaming_lane = 2

[[app]]
name = "feed"
module = "feed.js"
streaming = true

[[app]]
name = "site"
module = "site.js"
route = "/site"
)",
                       "/base", "test.toml");
  ASSERT_TRUE(c) << c.error();
  EXPECT_EQ(c->streamIdleTimeout.count(), 1500);
  EXPECT_EQ(c->streamMaxDuration.count(), 90000);
  EXPECT_EQ(c->pool.streamMaxInflight, 300u);
  EXPECT_EQ(c->pool.streamingLane, 2u);
  EXPECT_TRUE(c->apps[0].streaming);
  EXPECT_FALSE(c->apps[1].streaming);
  // max_connections left at 0: room for every stream, every short request, and 1,024 idle.
  EXPECT_EQ(c->maxConnections, 0u);
  EXPECT_EQ(effectiveMaxConnections(*c), 300u + c->pool.maxInflight + 1024u);
  ServerConfig defaults;
  EXPECT_EQ(effectiveMaxConnections(defaults), 10'000u + 1024u + 1024u);

  setenv("ISOLANE_STREAM_MAX_INFLIGHT", "20000", 1);
  setenv("ISOLANE_STREAMING_LANE", "99", 1);  // clamped, as the pool numbers are
  setenv("ISOLANE_STREAM_IDLE_TIMEOUT_MS", "250", 1);
  setenv("ISOLANE_STREAM_MAX_MS", "5000", 1);
  ASSERT_TRUE(applyEnvironment(*c));
  EXPECT_EQ(c->pool.streamMaxInflight, 20000u);
  EXPECT_EQ(c->pool.streamingLane, 15u);
  EXPECT_EQ(c->streamIdleTimeout.count(), 250);
  EXPECT_EQ(c->streamMaxDuration.count(), 5000);
  for (const char* name : {"ISOLANE_STREAM_MAX_INFLIGHT", "ISOLANE_STREAMING_LANE",
                           "ISOLANE_STREAM_IDLE_TIMEOUT_MS", "ISOLANE_STREAM_MAX_MS"}) {
    unsetenv(name);
  }
}

TEST(Config, TrustedProxiesAreAddresses) {
  const std::string app = "\n[[app]]\nname = \"a\"\nmodule = \"a.js\"\nroute = \"/\"\n";
  auto ok =
      parseConfig("[server]\ntrusted_proxies = [\"10.0.0.1\", \"::1\"]\n" + app, "/b", "t.toml");
  ASSERT_TRUE(ok) << ok.error();
  EXPECT_EQ(ok->trustedProxies, (std::vector<std::string>{"10.0.0.1", "::1"}));
  auto none = parseConfig("[server]\n" + app, "/b", "t.toml");
  ASSERT_TRUE(none) << none.error();
  EXPECT_TRUE(none->trustedProxies.empty());
  auto range = parseConfig("[server]\ntrusted_proxies = [\"10.0.0.0/8\"]\n" + app, "/b", "t.toml");
  ASSERT_FALSE(range);
  EXPECT_NE(range.error().find("trusted_proxies: '10.0.0.0/8' is not an IPv4 or IPv6 address"),
            std::string::npos)
      << range.error();
  auto scalar = parseConfig("[server]\ntrusted_proxies = \"10.0.0.1\"\n" + app, "/b", "t.toml");
  ASSERT_FALSE(scalar);
  EXPECT_NE(scalar.error().find("expected an array"), std::string::npos);
}

}  // namespace
}  // namespace isolane
