// The master's store of V8 code caches (pool/code_cache_store.h): keyed by module bytes and
// engine, written atomically, never replaced, and closed to what a worker could smuggle in.

#include "pool/code_cache_store.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "ipc/app_spec.h"

namespace isolane {
namespace {

namespace fs = std::filesystem;

class CodeCacheStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = testing::TempDir() + "/code-cache-" + std::to_string(getpid()) + "-" +
           testing::UnitTest::GetInstance()->current_test_info()->name();
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::size_t filesIn(const std::string& dir) {
    std::size_t n = 0;
    for (auto& e : fs::recursive_directory_iterator(dir)) n += e.is_regular_file();
    return n;
  }
  std::string dir_;
  const std::string hash_ = std::string(64, 'a');
};

TEST_F(CodeCacheStoreTest, HashesAFilesBytes) {
  std::string file = dir_ + ".abc";
  std::ofstream(file) << "abc";
  EXPECT_EQ(CodeCacheStore::fileSha256(file),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(CodeCacheStore::fileSha256(file + ".missing"), "");
  fs::remove(file);
}

// Two apps whose entry modules have the same bytes (one copied the other's, to reach its cache)
// never share a cache, and a rejection of a cache nobody offered removes nothing.
TEST_F(CodeCacheStoreTest, AnAppNeverGetsNorReplacesAnotherAppsCache) {
  CodeCacheStore store(dir_);
  AppLoadReport made{CodeCacheUse::kNone, hash_, "made by a worker of a"};
  ASSERT_TRUE(store.settle("e", "a", made, /*offered=*/false).value());
  EXPECT_EQ(store.find(CodeCacheStore::scope("e", "a"), hash_), "made by a worker of a");
  EXPECT_EQ(store.find(CodeCacheStore::scope("e", "b"), hash_), "") << "b read a's cache";
  AppLoadReport forged{CodeCacheUse::kRejected, hash_, "made by b"};
  ASSERT_TRUE(store.settle("e", "b", forged, /*offered=*/false).value());  // b's own, apart
  EXPECT_EQ(store.find(CodeCacheStore::scope("e", "a"), hash_), "made by a worker of a");
  AppLoadReport unoffered{CodeCacheUse::kRejected, hash_, ""};
  store.settle("e", "a", unoffered, /*offered=*/false);
  EXPECT_EQ(store.find(CodeCacheStore::scope("e", "a"), hash_), "made by a worker of a")
      << "a rejection of a cache that was not offered removed it";
  store.settle("e", "a", unoffered, /*offered=*/true);
  EXPECT_EQ(store.find(CodeCacheStore::scope("e", "a"), hash_), "");
}

TEST_F(CodeCacheStoreTest, KeepsAndFindsPerEngine) {
  CodeCacheStore store(dir_);
  EXPECT_EQ(store.find("engine A", hash_), "");
  ASSERT_TRUE(store.keep("engine A", hash_, "bytes of A").value());
  EXPECT_EQ(store.find("engine A", hash_), "bytes of A");
  EXPECT_EQ(store.find("engine B", hash_), "") << "another engine never reads it";
  EXPECT_EQ(store.find("engine A", std::string(64, 'b')), "");
  EXPECT_EQ(filesIn(dir_), 1u) << "no temporary file is left behind";
}

TEST_F(CodeCacheStoreTest, AStoredCacheIsNeverReplacedButDroppedWhenRejected) {
  CodeCacheStore store(dir_);
  ASSERT_TRUE(store.keep("e", hash_, "first").value());
  EXPECT_FALSE(store.keep("e", hash_, "second, from another worker").value());
  EXPECT_EQ(store.find("e", hash_), "first");
  store.drop("e", hash_);
  EXPECT_EQ(store.find("e", hash_), "");
  ASSERT_TRUE(store.keep("e", hash_, "remade").value());
  EXPECT_EQ(store.find("e", hash_), "remade");
}

TEST_F(CodeCacheStoreTest, WhatAWorkerSendsCannotNameAnotherPathOrBeTooLarge) {
  CodeCacheStore store(dir_);
  for (const std::string& bad :
       {std::string("../../etc/passwd"), std::string(64, 'A'), std::string(63, 'a'),
        std::string(64, 'a') + "/x", std::string(32, 'a') + "/.." + std::string(28, 'a'),
        std::string()}) {
    EXPECT_FALSE(store.keep("e", bad, "x").value());  // refused: nothing is written
    EXPECT_EQ(store.find("e", bad), "");
  }
  EXPECT_FALSE(store.keep("e", hash_, std::string(kMaxCodeCacheBytes + 1, 'x')).value());
  EXPECT_EQ(store.find("e", hash_), "");
  EXPECT_FALSE(fs::exists(dir_) && filesIn(dir_) > 0);
  EXPECT_FALSE(CodeCacheStore::isSha256("../" + std::string(61, 'a')));
  EXPECT_TRUE(CodeCacheStore::isSha256(hash_));
}

TEST_F(CodeCacheStoreTest, ADamagedFileIsNotHandedOutAndIsRemoved) {
  CodeCacheStore store(dir_);
  ASSERT_TRUE(store.keep("e", hash_, "a cache of some length").value());
  std::string path;
  for (auto& e : fs::recursive_directory_iterator(dir_)) {
    if (e.is_regular_file()) path = e.path().string();
  }
  {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(-3, std::ios::end);
    f.put('X');  // one byte of the cache
  }
  EXPECT_EQ(store.find("e", hash_), "");
  EXPECT_FALSE(fs::exists(path));
  ASSERT_TRUE(store.keep("e", hash_, "short").value());
  fs::resize_file(path, 10);  // cut inside its header
  EXPECT_EQ(store.find("e", hash_), "");
}

TEST_F(CodeCacheStoreTest, AStoreWithNoDirectoryKeepsNothing) {
  CodeCacheStore off("");
  EXPECT_FALSE(off.enabled());
  EXPECT_FALSE(off.keep("e", hash_, "x").value());
  EXPECT_EQ(off.find("e", hash_), "");
}

TEST_F(CodeCacheStoreTest, AnUnwritableDirectoryIsAnErrorNotACrash) {
  std::string file = dir_ + ".file";
  std::ofstream(file) << "not a directory";
  CodeCacheStore store(file + "/cache");
  Result<bool> s = store.keep("e", hash_, "x");
  EXPECT_FALSE(s);
  EXPECT_NE(s.error().find("cannot create"), std::string::npos) << s.error();
  fs::remove(file);
}

}  // namespace
}  // namespace isolane
