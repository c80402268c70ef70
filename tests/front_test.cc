// Router: which app answers which host and path.

#include <gtest/gtest.h>

#include "front/request_id.h"
#include "front/router.h"

namespace isolane {
namespace {

Router makeRouter() {
  return Router({Mount{"root", "/", "", true}, Mount{"api", "/api", "", true},
                 Mount{"apiv2", "/api/v2/", "", true}, Mount{"raw", "/raw", "", false},
                 Mount{"hosted", "/api", "example.com", true}});
}

TEST(Router, LongestPrefixWins) {
  Router r = makeRouter();
  EXPECT_EQ(r.resolve("x", "/api/v2/users")->mount->app, "apiv2");
  EXPECT_EQ(r.resolve("x", "/api/users")->mount->app, "api");
  EXPECT_EQ(r.resolve("x", "/other")->mount->app, "root");
}

TEST(Router, PrefixMatchesWholeSegments) {
  Router r = makeRouter();
  EXPECT_EQ(r.resolve("x", "/apix")->mount->app, "root");
  EXPECT_EQ(r.resolve("x", "/api")->mount->app, "api");
  EXPECT_EQ(r.resolve("x", "/api?x=1")->mount->app, "api");
}

TEST(Router, StripsThePrefixUnlessToldNot) {
  Router r = makeRouter();
  EXPECT_EQ(r.resolve("x", "/api/users?a=1")->path, "/users?a=1");
  EXPECT_EQ(r.resolve("x", "/api")->path, "/");
  EXPECT_EQ(r.resolve("x", "/api?q")->path, "/?q");
  EXPECT_EQ(r.resolve("x", "/raw/file")->path, "/raw/file");
}

TEST(Router, HostSpecificMountsWinAndIgnoreThePort) {
  Router r = makeRouter();
  EXPECT_EQ(r.resolve("Example.COM:8080", "/api/x")->mount->app, "hosted");
  EXPECT_EQ(r.resolve("other.com", "/api/x")->mount->app, "api");
}

TEST(Router, NoMountNoRoute) {
  Router r({Mount{"only", "/only", "", true}});
  EXPECT_FALSE(r.resolve("x", "/").has_value());
  EXPECT_FALSE(r.resolve("x", "/onlyx").has_value());
}

TEST(RequestId, UniqueAndSixteenHexDigits) {
  std::string a = newRequestId(), b = newRequestId();
  EXPECT_EQ(a.size(), 16u);
  EXPECT_NE(a, b);
  EXPECT_EQ(a.find_first_not_of("0123456789abcdef"), std::string::npos);
}

}  // namespace
}  // namespace isolane
