// An app's version is the content hash of its modules, read once when the server starts
// (pool/app_versions.h): a worker respawned after its module files changed on disk serves what
// the others serve, not the new bytes, and /metrics names the version.

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "e2e/http_client.h"
#include "e2e/ready_workers.h"
#include "eventually.h"
#include "pool/app_versions.h"
#include "pool/subprocess_backend.h"
#include "server/server.h"

namespace isolane {
namespace {

namespace fs = std::filesystem;
using test::get;

void write(const fs::path& path, const std::string& text) {
  std::ofstream(path, std::ios::trunc) << text;
}

class AppVersionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("isolane-version-" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    write(dir_ / "app.js",
          "import { word } from './word.js';\n"
          "export default { fetch() { return new Response(word); } };\n");
    write(dir_ / "word.js", "export const word = 'first';\n");
  }
  void TearDown() override {
    if (server_) server_->stop();
    fs::remove_all(dir_);
  }
  void start() {
    ServerConfig config;
    config.listenPort = 0;
    config.adminPort = 0;
    config.workerBinary = ISOLANE_BINARY;
    config.pool.size = 2;
    AppConfig app;
    app.name = "words";
    app.module = (dir_ / "app.js").string();
    app.route = "/";
    config.apps = {app};
    server_ = std::make_unique<Server>(std::move(config));
    Status s = server_->start();
    ASSERT_TRUE(s) << s.error();
    test::waitForEveryWorker(*server_);
  }

  fs::path dir_;
  std::unique_ptr<Server> server_;
};

TEST_F(AppVersionTest, ARespawnedWorkerServesTheVersionTheServerStartedWith) {
  ASSERT_NO_FATAL_FAILURE(start());
  EXPECT_EQ(get(server_->port(), "/").body(), "first");
  write(dir_ / "word.js", "export const word = 'second';\n");  // an import, not the entry
  auto& pool = dynamic_cast<SubprocessBackend&>(server_->backend());
  // Both workers die and are replaced (a worker that crashed lately is the scheduler's last
  // choice: with one of the old ones left, it alone would answer).
  pid_t first = pool.workers()[0].pid;
  pid_t second = pool.workers()[1].pid;
  ASSERT_EQ(::kill(first, SIGKILL), 0);
  ASSERT_EQ(::kill(second, SIGKILL), 0);
  ASSERT_TRUE(test::eventually([&] {
    auto workers = pool.workers();
    return workers[0].pid != first && workers[1].pid != second && workers[0].pid != 0 &&
           workers[1].pid != 0 && workers[0].state == WorkerState::kReady &&
           workers[1].state == WorkerState::kReady;
  }));
  // The new workers answer with the bytes read at start.
  for (int i = 0; i < 20; ++i) {
    test::Response r = get(server_->port(), "/");
    ASSERT_EQ(r.result_int(), 200);
    EXPECT_EQ(r.body(), "first") << "request " << i;
  }
}

TEST_F(AppVersionTest, TheMetricsNameTheVersionTheContentHashOfTheModules) {
  ASSERT_NO_FATAL_FAILURE(start());
  AppModules modules = readAppModules((dir_ / "app.js").string(), kMaxAppModuleBytes);
  std::string version = appContentVersion(modules);
  ASSERT_EQ(version.size(), 64u);
  std::string metrics = get(server_->adminPort(), "/metrics").body();
  EXPECT_NE(metrics.find("isolane_app_version_info{app=\"words\",version=\"" + version + "\"} 1"),
            std::string::npos)
      << metrics.substr(0, 2000);
}

}  // namespace
}  // namespace isolane
