// An app isolate made again after it idled runs the version the server started with, in both
// backends (pool/app_versions.h): the bytes are read once, at start, never when an isolate is
// made.

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "e2e/http_client.h"
#include "e2e/ready_workers.h"
#include "e2e/test_apps.h"
#include "server/server.h"

namespace isolane {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

void write(const fs::path& path, const std::string& text) {
  std::ofstream(path, std::ios::trunc) << text;
}

class AppVersionBackendsTest : public ::testing::TestWithParam<std::string> {
 protected:
  void TearDown() override {
    if (server_) server_->stop();
    if (!dir_.empty()) fs::remove_all(dir_);
  }
  fs::path dir_;
  std::unique_ptr<Server> server_;
};

TEST_P(AppVersionBackendsTest, AnIsolateMadeAgainAfterItIdledServesTheVersionOfTheStart) {
  dir_ = fs::temp_directory_path() /
         ("isolane-version-" + GetParam() + "-" + std::to_string(::getpid()));
  fs::create_directories(dir_);
  // The count says which isolate answers: 1 from one just made.
  write(dir_ / "app.js",
        "import { word } from './word.js';\n"
        "let n = 0;\n"
        "export default { fetch() { return new Response(word + ':' + ++n); } };\n");
  write(dir_ / "word.js", "export const word = 'first';\n");
  ServerConfig config = test::testServer(GetParam());
  config.pool.size = 1;
  config.isolateIdleTimeout = 100ms;
  AppConfig app;
  app.name = "words";
  app.module = (dir_ / "app.js").string();
  app.route = "/";
  config.apps = {app};
  server_ = test::startServer(std::move(config));
  ASSERT_TRUE(server_);
  EXPECT_EQ(test::get(server_->port(), "/").body(), "first:1");
  write(dir_ / "word.js", "export const word = 'second';\n");
  // Past the idle bound the app's isolate is disposed, and the next request makes one again
  // (":1"); on a loaded machine the old one may still answer (":2" and on): then again, later.
  std::string body;
  for (int i = 0; i < 40; ++i) {
    std::this_thread::sleep_for(300ms);
    body = test::get(server_->port(), "/").body();
    if (body.size() > 2 && body.compare(body.size() - 2, 2, ":1") == 0) break;
  }
  EXPECT_EQ(body, "first:1");
}

INSTANTIATE_TEST_SUITE_P(Backends, AppVersionBackendsTest,
                         ::testing::Values("subprocess", "inprocess"));

}  // namespace
}  // namespace isolane
