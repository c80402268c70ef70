// Runs the JavaScript tests of the web APIs (tests/web/*.test.js) in real isolates, as apps see
// them: each file becomes an app module (harness + tests + a fetch handler that runs one test per
// request) served by a real Executor, and each JavaScript `test(name, fn)` becomes one GoogleTest
// case, WebJs/<file>.<name>.

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <future>
#include <sstream>

#include "worker/executor.h"

namespace isolane {
namespace {

namespace fs = std::filesystem;

const char* const kFooter = R"JS(
;export default {
  async fetch(request) {
    const url = new URL(request.url);
    if (url.pathname === '/__list') return Response.json(globalThis.__tests.map((t) => t.name));
    const i = Number(url.searchParams.get('i'));
    try {
      await globalThis.__runTest(i);
      return Response.json({ ok: true });
    } catch (e) {
      return Response.json({ ok: false, error: String((e && e.stack) || e) });
    }
  },
};
)JS";

std::string readFile(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class NullLog final : public LogSink {
 public:
  void write(std::string_view, std::string_view, std::string_view, std::string_view) override {}
};

NullLog gLog;
Executor* gExecutor = nullptr;

std::string call(const std::string& app, const std::string& path) {
  std::promise<AppResponse> answer;
  RequestJob job{AppRequest{app, "t", "GET", "http://test.local" + path, {}, ""},
                 [&](AppResponse r) { answer.set_value(std::move(r)); }};
  if (!gExecutor->submit(job)) return "submit refused";
  AppResponse r = answer.get_future().get();
  if (r.failure != FailureKind::kNone) {
    return std::string(failureCode(r.failure)) + ": " + r.failureDetail;
  }
  return r.body;
}

// Minimal JSON string-array parse of what /__list returns (names are [A-Za-z0-9_ ]).
std::vector<std::string> parseNames(const std::string& json) {
  std::vector<std::string> names;
  std::size_t i = 0;
  while ((i = json.find('"', i)) != std::string::npos) {
    std::size_t j = json.find('"', i + 1);
    names.push_back(json.substr(i + 1, j - i - 1));
    i = j + 1;
  }
  return names;
}

class JsTest : public ::testing::Test {
 public:
  JsTest(std::string app, int index) : app_(std::move(app)), index_(index) {}
  void TestBody() override {
    std::string body = call(app_, "/__run?i=" + std::to_string(index_));
    EXPECT_EQ(body, R"({"ok":true})");
  }

 private:
  std::string app_;
  int index_;
};

std::string testName(std::string name) {
  for (char& c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return name;
}

}  // namespace
}  // namespace isolane

extern "C" int isolaneTestMain(int argc, char** argv) {
  using namespace isolane;
  ::testing::InitGoogleTest(&argc, argv);
  ExecutorOptions options;
  options.loop.wallTimeout = std::chrono::milliseconds(10'000);
  Executor executor(options, gLog);
  gExecutor = &executor;

  fs::path dir = fs::path(ISOLANE_TEST_FIXTURES).parent_path() / "web";
  fs::path work = fs::temp_directory_path() / ("isolane-webjs-" + std::to_string(getpid()));
  fs::create_directories(work);
  std::string harness = readFile(dir / "harness.js");
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(dir)) {
    std::string name = entry.path().filename().string();
    if (name.size() > 8 && name.substr(name.size() - 8) == ".test.js")
      files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  int failures = 0;
  for (const fs::path& file : files) {
    std::string suite = file.filename().string();
    suite = suite.substr(0, suite.size() - 8);
    fs::path module = work / (suite + ".mjs");
    std::ofstream(module) << harness << "\n;\n" << readFile(file) << kFooter;
    AppSpec spec{suite, module.string(), {}};
    spec.testHooks = true;
    if (Status s = executor.loadApp(spec); !s) {
      std::cerr << "cannot load " << file << ": " << s.error() << "\n";
      ++failures;
      continue;
    }
    std::string listing = call(suite, "/__list");
    std::vector<std::string> names = parseNames(listing);
    if (listing.empty() || listing.front() != '[' || names.empty()) {
      // A suite that cannot say its tests (or has none) fails: it must not pass by running none.
      std::cerr << "cannot list the tests of " << file << ": " << listing << "\n";
      ++failures;
      continue;
    }
    for (std::size_t i = 0; i < names.size(); ++i) {
      ::testing::RegisterTest(
          ("WebJs/" + testName(suite)).c_str(), testName(names[i]).c_str(), nullptr, nullptr,
          __FILE__, __LINE__,
          [suite, i]() -> ::testing::Test* { return new JsTest(suite, static_cast<int>(i)); });
    }
  }
  int rc = RUN_ALL_TESTS();
  executor.stop();
  fs::remove_all(work);
  return rc != 0 || failures != 0 ? 1 : 0;
}
