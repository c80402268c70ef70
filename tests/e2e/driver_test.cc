// Many requests per isolate (one worker, one isolate): timers and outbound fetches interleave,
// a CPU-bound request delays the others only for its own turn, idle workers use no CPU, a client
// that goes away aborts its handler's fetch, the fetch policy refuses private addresses, service
// bindings and ctx.waitUntil.

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <thread>

#include "e2e/http_client.h"
#include "e2e/metrics_page.h"
#include "e2e/ready_workers.h"
#include "e2e/subprocess.h"
#include "e2e/test_apps.h"
#include "e2e/upstream.h"
#include "pool/subprocess_backend.h"
#include "server/server.h"
#include "worker/fetch_policy.h"

namespace isolane {
namespace {

using namespace std::chrono_literals;
using test::get;
using test::HttpConnection;
using test::Response;
using test::Upstream;

using test::kApps;

AppConfig app(const std::string& name, const std::string& file, const std::string& route) {
  return test::fixtureApp(name, file, route);
}

class DriverTest : public ::testing::Test {
 protected:
  void start(std::vector<AppConfig> apps, std::size_t workers = 1) {
    ServerConfig config;
    config.listenPort = 0;
    config.adminPort = 0;
    config.workerBinary = ISOLANE_BINARY;
    config.pool.size = workers;
    config.apps = std::move(apps);
    server_ = std::make_unique<Server>(std::move(config));
    Status s = server_->start();
    ASSERT_TRUE(s) << s.error();
    port_ = server_->port();
    test::waitForEveryWorker(*server_);  // start() returns once one is ready
  }

 public:  // for helpers outside the fixture
  void startApps(std::vector<AppConfig> apps) { start(std::move(apps)); }
  std::uint16_t port() const { return port_; }

 protected:
  AppConfig fetcher(const Upstream& upstream, bool allowLoopback = true) {
    AppConfig a = app("fetcher", "fetcher.js", "/f");
    a.vars = {{"UPSTREAM", upstream.base()}};
    if (allowLoopback) a.fetchAllow = {"127.0.0.1"};
    return a;
  }
  // Sends `n` requests on `n` connections at once; returns the time until the last answer.
  std::chrono::milliseconds concurrently(int n, const std::string& target,
                                         const std::string& expectBody) {
    std::vector<std::unique_ptr<HttpConnection>> conns;
    for (int i = 0; i < n; ++i) conns.push_back(std::make_unique<HttpConnection>(port_));
    auto t0 = std::chrono::steady_clock::now();
    for (auto& c : conns) c->send("GET " + target + " HTTP/1.1\r\nHost: x\r\n\r\n");
    for (auto& c : conns) {
      Response r = c->read();
      EXPECT_EQ(r.result_int(), 200) << r.body();
      if (!expectBody.empty()) {
        EXPECT_EQ(r.body(), expectBody);
      }
    }
    return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() -
                                                                 t0);
  }
  void TearDown() override {
    if (server_) server_->stop();
  }

  std::unique_ptr<Server> server_;
  std::uint16_t port_ = 0;
};

TEST_F(DriverTest, TwoHundredTimerRequestsInterleaveOnOneIsolate) {
  start({app("slow", "slow.js", "/")});
  auto took = concurrently(200, "/?ms=50", "done");
  EXPECT_LT(took, 1000ms) << "200 x 50 ms timers on one isolate took " << took.count() << " ms";
}

TEST_F(DriverTest, TwoHundredUpstreamFetchesInterleaveOnOneIsolate) {
  Upstream upstream(50ms);
  start({fetcher(upstream)});
  auto took = concurrently(200, "/f/item", "upstream /item");
  EXPECT_LT(took, 1000ms) << "200 x 50 ms fetches on one isolate took " << took.count() << " ms";
  EXPECT_EQ(upstream.requests(), 200);
}

TEST_F(DriverTest, ACpuBoundRequestDelaysOthersOnlyForItsOwnTurn) {
  start({app("slow", "slow.js", "/t"), app("spin", "spin.js", "/s")});
  std::vector<std::unique_ptr<HttpConnection>> timers;
  for (int i = 0; i < 20; ++i) timers.push_back(std::make_unique<HttpConnection>(port_));
  auto t0 = std::chrono::steady_clock::now();
  for (auto& c : timers) c->send("GET /t/?ms=100 HTTP/1.1\r\nHost: x\r\n\r\n");
  HttpConnection spin(port_);
  spin.send("GET /s/?ms=300 HTTP/1.1\r\nHost: x\r\n\r\n");
  for (auto& c : timers) EXPECT_EQ(c->read().body(), "done");
  auto timersDone = std::chrono::steady_clock::now() - t0;
  EXPECT_EQ(spin.read().body(), "true");
  // Serialised they would take 20 x 100 ms; interleaved, at most the one 300 ms turn in between.
  EXPECT_LT(timersDone, 900ms);
}

std::uint64_t cpuTicks(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  std::getline(stat, line);
  std::istringstream rest(line.substr(line.rfind(')') + 2));
  std::string field;
  std::uint64_t utime = 0, stime = 0;
  for (int i = 3; i <= 15 && rest >> field; ++i) {
    if (i == 14) utime = std::stoull(field);
    if (i == 15) stime = std::stoull(field);
  }
  return utime + stime;
}

TEST_F(DriverTest, IdleWorkersUseNoMeasurableCpu) {
  start({app("hello", "hello.js", "/")}, 2);
  EXPECT_EQ(get(port_, "/").result_int(), 200);
  auto& pool = dynamic_cast<SubprocessBackend&>(server_->backend());
  std::vector<pid_t> pids;
  for (const WorkerInfo& w : pool.workers()) pids.push_back(w.pid);
  std::vector<std::uint64_t> before;
  for (pid_t p : pids) before.push_back(cpuTicks(p));
  std::this_thread::sleep_for(2s);  // the measurement window itself: idle is what is measured
  long hz = sysconf(_SC_CLK_TCK);
  for (std::size_t i = 0; i < pids.size(); ++i) {
    double seconds = static_cast<double>(cpuTicks(pids[i]) - before[i]) / static_cast<double>(hz);
    EXPECT_LT(seconds, 0.04) << "worker " << i << " used " << seconds << " s of CPU in 2 s idle";
  }
}

TEST_F(DriverTest, AClientThatGoesAwayAbortsItsHandlersFetch) {
  Upstream upstream(10s);
  start({fetcher(upstream)});
  {
    HttpConnection c(port_);
    c.send("GET /f/abortable HTTP/1.1\r\nHost: x\r\n\r\n");
    // Its request whole, not only its connection: a hang-up before the upstream has read the
    // head closes the connection there too, but the upstream does not count that as early.
    ASSERT_TRUE([&] {
      for (int i = 0; i < 2000 && upstream.requests() == 0; ++i) std::this_thread::sleep_for(1ms);
      return upstream.requests() == 1 && upstream.open() == 1;
    }()) << "the handler's fetch reached the upstream";
  }  // the client hangs up
  // Up to 8 s (the upstream answers at 10): the abort crosses the worker and the master, which
  // is slow on a loaded machine under the sanitizers.
  for (int i = 0; i < 8000 && upstream.closedEarly() == 0; ++i) std::this_thread::sleep_for(1ms);
  EXPECT_EQ(upstream.closedEarly(), 1) << "the upstream saw its connection closed";
  // The handler failed because its client left (its fetch was aborted): counted as the client's
  // leaving (499), not as the app's failure (500).
  std::string page;
  auto counted = [&](const char* status) {
    return test::sample(page, std::string(R"(isolane_requests_total{app="fetcher",status=")") +
                                  status + "\"}");
  };
  for (int i = 0; i < 400; ++i) {
    page = get(server_->adminPort(), "/metrics").body();
    if (counted("499") + counted("500") > 0) break;
    std::this_thread::sleep_for(10ms);
  }
  EXPECT_EQ(counted("499"), 1) << page;
  EXPECT_EQ(counted("500"), 0) << page;
  // The isolate serves on.
  Upstream fast(1ms);
  EXPECT_EQ(get(port_, "/f/x?url=" + fast.base() + "/ok").body(), "upstream /ok");
}

TEST_F(DriverTest, AClientThatOnlyStopsSendingStillGetsItsAnswer) {
  // A half-close looks like a client leaving (the fetch is aborted, and the handler fails), but
  // the client still reads: it gets the failure, which is counted as its leaving (499).
  Upstream upstream(10s);
  start({fetcher(upstream)});
  HttpConnection c(port_);
  c.send("GET /f/abortable HTTP/1.1\r\nHost: x\r\n\r\n");
  for (int i = 0; i < 2000 && upstream.requests() == 0; ++i) std::this_thread::sleep_for(1ms);
  ::shutdown(c.native(), SHUT_WR);
  Response r = c.read();
  EXPECT_EQ(r.result_int(), 500) << r.body();
  std::string page = get(server_->adminPort(), "/metrics").body();
  EXPECT_EQ(test::sample(page, R"(isolane_requests_total{app="fetcher",status="499"})"), 1) << page;
}

TEST_F(DriverTest, PolicyRefusesPrivateAddressesWithATypeError) {
  Upstream upstream(1ms);
  start({fetcher(upstream, /*allowLoopback=*/false)});
  for (const std::string& url :
       {upstream.base() + "/", std::string("http://10.1.2.3/"),
        std::string("http://169.254.169.254/latest/meta-data"), std::string("http://[::1]:9/")}) {
    Response r = get(port_, "/f/policy?url=" + url);
    EXPECT_EQ(r.result_int(), 200);
    EXPECT_NE(r.body().find(R"("refused":true)"), std::string::npos) << url << ": " << r.body();
    EXPECT_NE(r.body().find(R"("name":"TypeError")"), std::string::npos) << r.body();
  }
  EXPECT_NE(get(port_, "/f/policy?url=" + upstream.base() + "/").body().find("loopback"),
            std::string::npos);
  EXPECT_EQ(upstream.requests(), 0) << "nothing reached the refused upstream";
}

TEST_F(DriverTest, ServiceBindingCallsTheOtherAppWithoutANetworkHop) {
  AppConfig a = app("caller", "caller.js", "/a");
  a.services = {{"B", "echo"}};
  start({a, app("echo", "echo.js", "/b")});
  Response r = get(port_, "/a/");
  EXPECT_EQ(r.result_int(), 200) << r.body();
  EXPECT_NE(r.body().find(R"("method":"POST")"), std::string::npos) << r.body();
  EXPECT_NE(r.body().find(R"("body":"ping")"), std::string::npos) << r.body();
  EXPECT_NE(r.body().find(R"("x-from":"caller")"), std::string::npos) << r.body();
  EXPECT_NE(r.body().find(R"("url":"http://b.internal/echo?from=caller")"), std::string::npos);
}

TEST_F(DriverTest, AServiceBindingCycleIsCutAndTheServerServesOn) {
  AppConfig loop = app("loop", "self_caller.js", "/loop");
  loop.services = {{"SELF", "loop"}};
  start({loop, app("hello", "hello.js", "/h")});
  Response r = get(port_, "/loop/");
  EXPECT_EQ(r.result_int(), 508) << r.body();
  EXPECT_NE(r.body().find("nested more than 16 deep"), std::string::npos) << r.body();
  EXPECT_EQ(get(port_, "/h/x").body(), "hello /x");
}

TEST_F(DriverTest, WaitUntilWorkGoesOnAfterTheResponse) {
  Upstream upstream(1ms);
  start({fetcher(upstream)});
  Response r = get(port_, "/f/wait-until");
  EXPECT_EQ(r.body(), "answered");
  EXPECT_EQ(upstream.requests(), 0) << "the response went out before the waitUntil work";
  for (int i = 0; i < 3000 && upstream.requests() == 0; ++i) std::this_thread::sleep_for(1ms);
  ASSERT_EQ(upstream.requests(), 1);
  EXPECT_EQ(upstream.paths()[0], "/late");
}

// A free loopback port (bound and released; the test binds it again at once).
std::uint16_t freePort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  socklen_t len = sizeof addr;
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  close(fd);
  return ntohs(addr.sin_port);
}

// An app's fetch() of a TLS upstream (openssl s_server, from Debian, with a self-signed
// certificate for localhost): what the app saw ("ok", or the error and its cause). With
// `trusted`, the master trusts the certificate (SSL_CERT_FILE, read by OpenSSL's default
// verify paths when the server starts).
std::string fetchFromTlsUpstream(DriverTest& t, const std::string& name, bool trusted) {
  std::string dir = ::testing::TempDir();
  test::ChildProcess gen({"/usr/bin/openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                          "ec_paramgen_curve:prime256v1", "-nodes", "-subj", "/CN=localhost",
                          "-addext", "subjectAltName=DNS:localhost", "-days", "1", "-keyout",
                          dir + "/" + name + ".key", "-out", dir + "/" + name + ".crt"});
  EXPECT_EQ(gen.wait(30s), 0) << gen.err();
  std::uint16_t port = freePort();
  test::ChildProcess tls({"/usr/bin/openssl", "s_server", "-accept", std::to_string(port), "-cert",
                          dir + "/" + name + ".crt", "-key", dir + "/" + name + ".key", "-www"});
  if (trusted) setenv("SSL_CERT_FILE", (dir + "/" + name + ".crt").c_str(), 1);
  AppConfig a = app("f", "fetch_error.js", "/");
  a.fetchAllow = {"localhost", "127.0.0.1"};
  t.startApps({a});
  std::string body;
  for (int i = 0; i < 100; ++i) {  // until s_server listens
    body = get(t.port(), "/?url=https://localhost:" + std::to_string(port) + "/").body();
    if (body.find("connect") == std::string::npos) break;
    std::this_thread::sleep_for(20ms);
  }
  unsetenv("SSL_CERT_FILE");
  return body;
}

TEST_F(DriverTest, HttpsVerifiesTheUpstreamCertificate) {
  // Not trusted: refused by verification, with the reason as the error's cause.
  std::string body = fetchFromTlsUpstream(*this, "untrusted", false);
  EXPECT_NE(body.find("fetch failed"), std::string::npos) << body;
  EXPECT_NE(body.find("certificate verify failed"), std::string::npos) << body;
}

TEST_F(DriverTest, HttpsReachesAnUpstreamWhoseCertificateIsTrusted) {
  EXPECT_EQ(fetchFromTlsUpstream(*this, "trusted", true), "ok");
}

TEST(FetchPolicy, NamesTheRangeOfEveryNonPublicAddress) {
  auto range = [](const char* a) {
    return FetchPolicy::reservedRange(boost::asio::ip::make_address(a)).value_or("public");
  };
  EXPECT_EQ(range("127.0.0.1"), "loopback (127.0.0.0/8)");
  EXPECT_EQ(range("10.9.8.7"), "private (10.0.0.0/8)");
  EXPECT_EQ(range("172.20.0.1"), "private (172.16.0.0/12)");
  EXPECT_EQ(range("192.168.1.1"), "private (192.168.0.0/16)");
  EXPECT_EQ(range("169.254.169.254"), "link-local and cloud metadata (169.254.0.0/16)");
  EXPECT_EQ(range("100.64.0.1"), "carrier-grade NAT (100.64.0.0/10)");
  EXPECT_EQ(range("0.0.0.0"), "unspecified (0.0.0.0/8)");
  EXPECT_EQ(range("::1"), "loopback (::1)");
  EXPECT_EQ(range("fe80::1"), "link-local (fe80::/10)");
  EXPECT_EQ(range("fd00::1"), "unique local (fc00::/7)");
  EXPECT_EQ(range("::ffff:10.0.0.1"), "private (10.0.0.0/8)");
  EXPECT_EQ(range("93.184.216.34"), "public");
  EXPECT_EQ(range("2606:4700::1111"), "public");
}

// Every IPv6 form that embeds an IPv4 address is judged by the address it embeds, and every
// block outside global unicast is reserved, whatever its name.
TEST(FetchPolicy, EmbeddedAndDeprecatedIpv6FormsAreNotPublic) {
  auto range = [](const char* a) {
    return FetchPolicy::reservedRange(boost::asio::ip::make_address(a)).value_or("public");
  };
  EXPECT_EQ(range("::127.0.0.1"), "IPv4-compatible (::/96, deprecated)");
  EXPECT_EQ(range("::8.8.8.8"), "IPv4-compatible (::/96, deprecated)");
  EXPECT_EQ(range("::ffff:0:127.0.0.1"), "IPv4-translated (::ffff:0:0:0/96)");
  EXPECT_EQ(range("::ffff:127.0.0.1"), "loopback (127.0.0.0/8)");
  EXPECT_EQ(range("::ffff:169.254.169.254"), "link-local and cloud metadata (169.254.0.0/16)");
  EXPECT_EQ(range("2002:7f00:1::1"), "6to4 (2002::/16) of loopback (127.0.0.0/8)");
  EXPECT_EQ(range("2002:a9fe:a9fe::1"),
            "6to4 (2002::/16) of link-local and cloud metadata (169.254.0.0/16)");
  EXPECT_EQ(range("2002:5db8:d822::1"), "public");  // 6to4 of 93.184.216.34
  EXPECT_EQ(range("64:ff9b::127.0.0.1"), "NAT64 (64:ff9b::/96) of loopback (127.0.0.0/8)");
  EXPECT_EQ(range("64:ff9b::10.0.0.1"), "NAT64 (64:ff9b::/96) of private (10.0.0.0/8)");
  EXPECT_EQ(range("64:ff9b::93.184.216.34"), "public");
  EXPECT_EQ(range("64:ff9b:1::1"), "local NAT64 (64:ff9b:1::/48)");
  EXPECT_EQ(range("fec0::1"), "site-local (fec0::/10, deprecated)");
  EXPECT_EQ(range("ff02::1"), "multicast (ff00::/8)");
  EXPECT_EQ(range("100::1"), "discard-only (100::/64)");
  EXPECT_EQ(range("4000::1"), "reserved (outside global unicast 2000::/3)");
  EXPECT_EQ(range("::2"), "IPv4-compatible (::/96, deprecated)");
  EXPECT_EQ(range("2001::1"), "IETF protocol assignments (2001::/23)");  // Teredo
  EXPECT_EQ(range("2001:db8::1"), "documentation (2001:db8::/32)");
  EXPECT_EQ(range("3fff::1"), "documentation (3fff::/20)");
  EXPECT_EQ(range("192.88.99.1"), "6to4 relay anycast (192.88.99.0/24, deprecated)");
  EXPECT_EQ(range("2a00:1450:4001::1"), "public");
}

TEST(FetchPolicy, AllowListNamesExceptions) {
  auto loopback = boost::asio::ip::make_address("127.0.0.1");
  EXPECT_TRUE(FetchPolicy().refuse("localhost", 80, loopback).has_value());
  EXPECT_FALSE(FetchPolicy({"127.0.0.1"}).refuse("localhost", 80, loopback).has_value());
  EXPECT_FALSE(FetchPolicy({"localhost:80"}).refuse("localhost", 80, loopback).has_value());
  EXPECT_TRUE(FetchPolicy({"localhost:81"}).refuse("localhost", 80, loopback).has_value());
  EXPECT_FALSE(FetchPolicy({"*"}).refuse("x", 1, loopback).has_value());
  auto mapped = boost::asio::ip::make_address("::ffff:127.0.0.1");
  EXPECT_TRUE(FetchPolicy().refuse("x", 80, mapped).has_value());
  EXPECT_FALSE(FetchPolicy({"127.0.0.1"}).refuse("x", 80, mapped).has_value());
  EXPECT_TRUE(FetchPolicy({"127.0.0.1"}).refuse("x", 80,
                                               boost::asio::ip::make_address("::127.0.0.1"))
                  .has_value());
}

}  // namespace
}  // namespace isolane
