// The embedding API (include/isolane/pool.h), as a C++ program uses it: apps in, requests in,
// responses out, with the server's typed errors; and examples/embed, built by the suite, run as a
// user would.

#include <gtest/gtest.h>
#include <isolane/pool.h>

#include <cstdio>
#include <memory>
#include <string>

namespace isolane {
namespace {

const std::string kApps = ISOLANE_TEST_FIXTURES "/apps/";

TEST(Embed, APoolAnswersWithTheAppsResponseOrATypedError) {
  PoolConfig config;
  config.workers = 1;
  config.requestCpu = std::chrono::milliseconds(200);
  Pool pool(config);
  ASSERT_EQ(pool.start({{"hello", kApps + "hello.js", {}, {}},
                        {"spin", kApps + "spin.js", {}, {}},
                        {"stream", kApps + "stream.js", {}, {}}}),
            "");
  PoolResponse hello = pool.fetch(PoolRequest{"hello", "GET", "http://localhost/x", {}, ""});
  EXPECT_EQ(hello.error, "") << hello.detail;
  EXPECT_EQ(hello.status, 200);
  EXPECT_EQ(hello.body, "hello /x");
  PoolResponse spin = pool.fetch(PoolRequest{"spin", "GET", "http://localhost/?ms=2000", {}, ""});
  EXPECT_EQ(spin.error, "CPU_LIMIT");
  EXPECT_EQ(spin.status, 500);
  EXPECT_FALSE(spin.retryable);
  // A streamed body arrives whole.
  PoolResponse sse =
      pool.fetch(PoolRequest{"stream", "GET", "http://localhost/sse?n=3&ms=10", {}, ""});
  EXPECT_EQ(sse.error, "") << sse.detail;
  EXPECT_EQ(sse.body, ": open\n\ndata: 0\n\ndata: 1\n\ndata: 2\n\n");
  PoolResponse unknown = pool.fetch(PoolRequest{"nope", "GET", "http://localhost/", {}, ""});
  EXPECT_EQ(unknown.error, "UNKNOWN_APP");
  EXPECT_EQ(unknown.status, 404);
  pool.stop();
  PoolResponse stopped = pool.fetch(PoolRequest{"hello", "GET", "http://localhost/", {}, ""});
  EXPECT_EQ(stopped.error, "SHUTTING_DOWN");
}

TEST(Embed, ABrokenModuleIsAnErrorNamingFileAndLine) {
  PoolConfig config;
  config.workers = 1;
  Pool pool(config);
  std::string error = pool.start({{"broken", kApps + "syntax_error.js", {}, {}}});
  EXPECT_NE(error.find("syntax_error.js:3"), std::string::npos) << error;
}

TEST(Embed, TheExampleProgramRuns) {
  std::string cmd = std::string(ISOLANE_EMBED_EXAMPLE) + " " + kApps + "hello.js /from-cxx 2>&1";
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(cmd.c_str(), "r"), pclose);
  std::string out;
  char buf[4096];
  while (pipe && fgets(buf, sizeof buf, pipe.get())) out += buf;
  EXPECT_NE(out.find("status 200"), std::string::npos) << out;
  EXPECT_NE(out.find("hello /from-cxx"), std::string::npos) << out;
}

}  // namespace
}  // namespace isolane
