// ipc/app_modules.h: the master reads an app's modules for a worker, which reads no file. The
// app's source chooses what is read, so the reader is tested as a hostile app would use it.

#include "ipc/app_modules.h"
#include "pool/app_versions.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace isolane {
namespace {

namespace fs = std::filesystem;

TEST(ImportSpecifiers, FindsStaticImportsAndSkipsCommentsAndStrings) {
  std::string source = R"js(
import a from './a.js';
import { b } from "./b.js";
export * from './c.js';
import './d.js';
import/* comment */ e /* x */ from /* y */ './e.js';
const dynamic = import('./f.js');
// import g from './not-g.js';
/* import h from './not-h.js'; */
const text = "import i from './not-i.js'";
const tpl = `from './not-j.js'`;
obj.from('./not-k.js');
)js";
  std::vector<std::string> found = importSpecifiers(source);
  std::vector<std::string> expected = {"./a.js", "./b.js", "./c.js", "./d.js", "./e.js", "./f.js"};
  EXPECT_EQ(found, expected);
}

TEST(ImportSpecifiers, AnUnterminatedCommentEndsTheScanInOnePass) {
  // "import//" over and over, with no line break: each comment runs to the end. A scan that
  // restarted after each would take hours on this; one pass takes a moment.
  std::string source;
  for (int i = 0; i < 1'000'000; ++i) source += "import//";
  EXPECT_TRUE(importSpecifiers(source).empty());
  std::string open;
  for (int i = 0; i < 1'000'000; ++i) open += "from/*";
  EXPECT_TRUE(importSpecifiers(open).empty());
}

class AppModulesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = (fs::path(testing::TempDir()) / ("app-modules-" + std::to_string(getpid())))
                .lexically_normal()
                .string();
    fs::remove_all(root_);
    fs::create_directories(root_ + "/app/lib");
    write("/outside.js", "export const x = 1;\n");
  }
  void TearDown() override { fs::remove_all(root_); }
  void write(const std::string& path, const std::string& text) {
    std::ofstream(root_ + path) << text;
  }
  const ModuleFile::Import* importOf(const AppModules& m, const std::string& specifier) {
    for (const ModuleFile::Import& im : m.files.front().imports) {
      if (im.specifier == specifier) return &im;
    }
    return nullptr;
  }
  std::string root_;
};

TEST_F(AppModulesTest, ReadsWhatTheImportsReachBeneathTheAppsDirectoryOnly) {
  fs::create_symlink("/etc/passwd", root_ + "/app/lib/passwd.js");
  write("/app/app.js",
        "import './lib/a.js';\n"
        "import '../outside.js';\n"
        "import '/etc/passwd';\n"
        "import '/proc/self/environ';\n"
        "import './lib/passwd.js';\n"
        "import './missing.js';\n");
  write("/app/lib/a.js", "import './b.js';\nexport const a = 1;\n");
  write("/app/lib/b.js", "export const b = 2;\n");
  AppModules m = readAppModules(root_ + "/app/app.js", 1 << 20);
  ASSERT_TRUE(m.error.empty()) << m.error;
  ASSERT_EQ(m.files.size(), 3u);  // app.js, lib/a.js, lib/b.js
  EXPECT_EQ(m.files[0].path, root_ + "/app/app.js");
  EXPECT_EQ(m.files[1].path, root_ + "/app/lib/a.js");
  EXPECT_EQ(m.files[2].source, "export const b = 2;\n");
  EXPECT_EQ(importOf(m, "./lib/a.js")->path, root_ + "/app/lib/a.js");
  for (const char* refused : {"../outside.js", "/etc/passwd", "./lib/passwd.js"}) {
    const ModuleFile::Import* im = importOf(m, refused);
    ASSERT_NE(im, nullptr) << refused;
    EXPECT_TRUE(im->path.empty()) << refused;
    EXPECT_NE(im->error.find("outside the app's directory"), std::string::npos) << im->error;
  }
  EXPECT_NE(importOf(m, "/proc/self/environ")->error.find("not a file an app may import"),
            std::string::npos);
  EXPECT_NE(importOf(m, "./missing.js")->error.find("no such file"), std::string::npos);
  for (const ModuleFile& f : m.files) {
    EXPECT_EQ(f.source.find("root:"), std::string::npos) << "a file outside was read: " << f.path;
  }
}

TEST_F(AppModulesTest, NoFileIsReadPastWhatIsLeftOfTheBound) {
  write("/app/app.js", "import './big.js';\n");
  write("/app/big.js", std::string(10'000, 'x'));
  AppModules m = readAppModules(root_ + "/app/app.js", 4096);
  ASSERT_EQ(m.files.size(), 1u);
  EXPECT_NE(m.files[0].imports[0].error.find("larger than"), std::string::npos)
      << m.files[0].imports[0].error;
  AppModules entry = readAppModules(root_ + "/app/big.js", 4096);
  EXPECT_NE(entry.files[0].error.find("larger than"), std::string::npos) << entry.files[0].error;
}

TEST_F(AppModulesTest, AnEntryThatCannotBeReadSaysWhy) {
  AppModules m = readAppModules(root_ + "/app/none.js", 1 << 20);
  ASSERT_EQ(m.files.size(), 1u);
  EXPECT_EQ(m.files[0].error, "cannot read module " + root_ + "/app/none.js: no such file");
}

// An app's version (pool/app_versions.h) follows the bytes of every file its imports reach.
TEST_F(AppModulesTest, TheVersionChangesWithAnyFileOfTheGraphAndOnlyThen) {
  write("/app/app.js", "import { x } from './lib/a.js';\nexport default x;\n");
  write("/app/lib/a.js", "export const x = 1;\n");
  std::string first = appContentVersion(readAppModules(root_ + "/app/app.js", 1 << 20));
  EXPECT_EQ(first.size(), 64u);
  EXPECT_EQ(appContentVersion(readAppModules(root_ + "/app/app.js", 1 << 20)), first);
  write("/app/lib/a.js", "export const x = 2;\n");
  std::string second = appContentVersion(readAppModules(root_ + "/app/app.js", 1 << 20));
  EXPECT_NE(second, first);
  write("/app/lib/a.js", "export const x = 1;\n");
  EXPECT_EQ(appContentVersion(readAppModules(root_ + "/app/app.js", 1 << 20)), first);
  // The same files elsewhere: the same version.
  fs::copy(root_ + "/app", root_ + "/copy", fs::copy_options::recursive);
  EXPECT_EQ(appContentVersion(readAppModules(root_ + "/copy/app.js", 1 << 20)), first);
}

}  // namespace
}  // namespace isolane
