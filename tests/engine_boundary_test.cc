// What crosses between the engine and the process that hosts it. The engine
// (libisolane_engine.so) is loaded into the pinned node, which exports V8, OpenSSL, zlib and
// libuv: the engine must need nothing but the C and C++ runtimes, take OpenSSL from node (never
// Debian's copy), and the master must not load V8 at all (it may use Debian's OpenSSL: it is not
// a node process).

#include <gtest/gtest.h>

#include <cstdio>
#include <memory>
#include <set>
#include <sstream>
#include <string>

#include "e2e/subprocess.h"
#include "server/engine_command.h"

namespace isolane {
namespace {

std::string command(const std::string& cmd) {
  std::string out;
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(cmd.c_str(), "r"), pclose);
  char buf[4096];
  while (pipe && fgets(buf, sizeof buf, pipe.get())) out += buf;
  return out;
}

const std::string kEngine = ISOLANE_ENGINE_PATH;
const std::string kBin = ISOLANE_BINARY;

TEST(EngineBoundary, TheEngineNeedsOnlyTheCAndCxxRuntimes) {
  std::string dynamic = command("readelf -d " + kEngine);
  std::set<std::string> needed;
  std::istringstream lines(dynamic);
  for (std::string line; std::getline(lines, line);) {
    auto at = line.find("Shared library: [");
    if (at != std::string::npos) needed.insert(line.substr(at + 17, line.find(']', at) - at - 17));
  }
  // And libseccomp, for the worker sandbox, and prometheus-cpp's core, for the in-process
  // backend's metrics: node bundles no copy of either (and neither needs anything but the C and
  // C++ runtimes), so nothing can bind to the wrong one.
  std::set<std::string> allowed = {"libc.so.6",
                                   "libm.so.6",
                                   "libstdc++.so.6",
                                   "libgcc_s.so.1",
                                   "ld-linux-x86-64.so.2",
                                   "libseccomp.so.2",
                                   "libprometheus-cpp-core.so.1.0"};
#ifdef ISOLANE_SANITIZE
  allowed.insert("libubsan.so.1");  // `make test SANITIZE=1` builds the engine with UBSan
#endif
  ASSERT_FALSE(needed.empty()) << dynamic;
  for (const std::string& lib : needed)
    EXPECT_TRUE(allowed.count(lib)) << "the engine needs " << lib;
}

TEST(EngineBoundary, OpenSslComesFromNodeAndDebiansIsNeverLoaded) {
  // A request that hashes and draws random bytes, run with the dynamic linker reporting every
  // binding: EVP_Digest and RAND_bytes bind to node, and no Debian libssl, libcrypto or libz is
  // ever mapped into the engine's process.
  // node started as the master starts it, not through `isolane run`: the master, which links
  // Debian's libcrypto, would report its own bindings before it becomes the engine.
  std::string app = ISOLANE_TEST_FIXTURES "/apps/digest.js";
  std::string line;
  for (const std::string& word : engineCommand({"run", app}, kEngine)) line += "'" + word + "' ";
  std::string out = command("LD_DEBUG=bindings " + line + " 2>&1");
  EXPECT_NE(out.find("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"),
            std::string::npos)
      << out.substr(out.size() > 2000 ? out.size() - 2000 : 0);
  for (const char* symbol : {"`EVP_Digest'", "`RAND_bytes'"}) {
    auto at = out.find(symbol);
    ASSERT_NE(at, std::string::npos) << symbol;
    std::string line = out.substr(out.rfind('\n', at) + 1, at - out.rfind('\n', at));
    EXPECT_NE(line.find("libisolane_engine.so"), std::string::npos) << line;
    EXPECT_NE(line.find("/bin/node"), std::string::npos) << line;
  }
  for (const char* lib : {"libssl.so", "libcrypto.so", "libz.so"}) {
    EXPECT_EQ(out.find(lib), std::string::npos) << lib << " was loaded";
  }
}

TEST(EngineBoundary, TheMasterLinksNoV8) {
  std::string dynamic = command("readelf -d " + kBin);
  EXPECT_EQ(dynamic.find("libnode"), std::string::npos) << dynamic;
  std::string undefined = command("nm -D --undefined-only " + kBin);
  EXPECT_EQ(undefined.find("_ZN2v8"), std::string::npos) << "the master references V8";
  EXPECT_EQ(undefined.find("napi_"), std::string::npos) << "the master references node";
}

}  // namespace
}  // namespace isolane
