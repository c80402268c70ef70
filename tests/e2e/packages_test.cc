// Apps built on npm packages (tests/packages, bundled at build time from the lockfile), served
// by the real server and spoken to over HTTP; each expectation is the package's documented
// behaviour: Hono's cors, requestId, etag, compress, basicAuth, jwt, parseBody and streamSSE;
// itty-router, zod, preact-render-to-string and jose.

#include <gtest/gtest.h>
#include <zlib.h>

#include <memory>
#include <string>

#include "e2e/http_client.h"
#include "e2e/ready_workers.h"
#include "server/server.h"

namespace isolane {
namespace {

using test::HttpConnection;
using test::Response;

std::string gunzip(const std::string& in) {
  z_stream z{};
  if (inflateInit2(&z, 15 + 16) != Z_OK) return "<inflateInit2 failed>";
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  z.avail_in = static_cast<uInt>(in.size());
  std::string out;
  char buf[16384];
  int rc = Z_OK;
  while (rc == Z_OK) {
    z.next_out = reinterpret_cast<Bytef*>(buf);
    z.avail_out = sizeof buf;
    rc = inflate(&z, Z_NO_FLUSH);
    out.append(buf, sizeof buf - z.avail_out);
  }
  inflateEnd(&z);
  return rc == Z_STREAM_END ? out : "<corrupt gzip>";
}

class PackagesTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    ServerConfig config;
    config.listenPort = 0;
    config.adminPort = 0;
    config.workerBinary = ISOLANE_BINARY;
    config.pool.size = 1;
    config.requestCpuLimit = std::chrono::milliseconds(10'000);  // RSA key generation (jose)
    auto app = [](const std::string& name, const std::string& route) {
      AppConfig a;
      a.name = name;
      a.module = std::string(ISOLANE_PACKAGE_APPS) + "/" + name + "/dist/app.js";
      a.route = route;
      return a;
    };
    config.apps = {app("hono", "/"), app("libraries", "/lib")};
    server_ = new Server(std::move(config));
    Status s = server_->start();
    if (!s) {
      startError_ = s.error();
      return;
    }
    test::waitForEveryWorker(*server_);
  }
  // Every test fails (rather than being skipped) when the apps did not start.
  void SetUp() override { ASSERT_TRUE(startError_.empty()) << startError_; }
  static void TearDownTestSuite() {
    if (server_) server_->stop();
    delete server_;
    server_ = nullptr;
  }
  Response request(const std::string& method, const std::string& target,
                   const std::string& headers = "", const std::string& body = "") {
    HttpConnection c(server_->port());
    return c.request(method, target, body, headers);
  }

  static Server* server_;
  static std::string startError_;
};

Server* PackagesTest::server_ = nullptr;
std::string PackagesTest::startError_;

TEST_F(PackagesTest, HonoCorsAnswersThePreflightAndMarksResponses) {
  Response pre = request("OPTIONS", "/api/data",
                         "Origin: https://app.example\r\nAccess-Control-Request-Method: POST\r\n");
  EXPECT_EQ(pre.result_int(), 204);
  EXPECT_EQ(pre["access-control-allow-origin"], "https://app.example");
  EXPECT_EQ(pre["access-control-allow-methods"], "GET,POST");
  EXPECT_EQ(pre["access-control-max-age"], "600");
  Response r = request("GET", "/api/data", "Origin: https://app.example\r\n");
  EXPECT_EQ(r.body(), R"({"ok":true})");
  EXPECT_EQ(r["access-control-allow-origin"], "https://app.example");
  EXPECT_EQ(r["vary"], "Origin");
}

TEST_F(PackagesTest, HonoRequestIdReachesTheClientUnreplaced) {
  Response adopted = request("GET", "/id/echo", "X-Request-Id: client-chosen-1\r\n");
  EXPECT_EQ(adopted.body(), "client-chosen-1");
  EXPECT_EQ(adopted["x-request-id"], "client-chosen-1");
  Response made = request("GET", "/id/echo");
  EXPECT_EQ(made.body().size(), 36u) << "a UUID made by Hono: " << made.body();
  EXPECT_EQ(made["x-request-id"], made.body());
}

TEST_F(PackagesTest, HonoEtagAnswers304ToAMatchingIfNoneMatch) {
  Response first = request("GET", "/etag/doc");
  std::string tag(first["etag"]);
  ASSERT_FALSE(tag.empty());
  EXPECT_EQ(first.body(), "a document whose etag is stable");
  Response again = request("GET", "/etag/doc", "If-None-Match: " + tag + "\r\n");
  EXPECT_EQ(again.result_int(), 304);
  EXPECT_TRUE(again.body().empty());
}

TEST_F(PackagesTest, HonoCompressGzipsForClientsThatAcceptIt) {
  std::string expected;
  for (int i = 0; i < 2000; ++i) expected += "compress me please ";
  Response gz = request("GET", "/big/text", "Accept-Encoding: gzip\r\n");
  EXPECT_EQ(gz["content-encoding"], "gzip");
  EXPECT_LT(gz.body().size(), expected.size() / 20);
  EXPECT_EQ(gunzip(gz.body()), expected);
  Response plain = request("GET", "/big/text");
  EXPECT_EQ(plain["content-encoding"], "");
  EXPECT_EQ(plain.body(), expected);
}

TEST_F(PackagesTest, HonoBasicAuthChallengesAndAdmits) {
  Response none = request("GET", "/admin/panel");
  EXPECT_EQ(none.result_int(), 401);
  EXPECT_EQ(none["www-authenticate"], "Basic realm=\"Secure Area\"");
  // ada:lovelace and ada:wrong
  EXPECT_EQ(request("GET", "/admin/panel", "Authorization: Basic YWRhOmxvdmVsYWNl\r\n").body(),
            "welcome, ada");
  EXPECT_EQ(request("GET", "/admin/panel", "Authorization: Basic YWRhOndyb25n\r\n").result_int(),
            401);
}

TEST_F(PackagesTest, HonoJwtSignsAndVerifiesHs256) {
  Response issued =
      request("POST", "/token", "Content-Type: application/json\r\n", R"({"sub":"ada"})");
  ASSERT_EQ(issued.result_int(), 200) << issued.body();
  std::string body = issued.body();
  auto start = body.find(":\"") + 2;
  std::string token = body.substr(start, body.rfind('"') - start);
  EXPECT_EQ(std::count(token.begin(), token.end(), '.'), 2) << token;
  Response me = request("GET", "/private/me", "Authorization: Bearer " + token + "\r\n");
  EXPECT_EQ(me.body(), R"({"sub":"ada"})");
  EXPECT_EQ(request("GET", "/private/me").result_int(), 401);
  // One character inside the signature changed: not the last, whose low bits base64url leaves
  // unused (changing only those would leave the signature's bytes as they were).
  std::string tampered = token;
  char& c = tampered[tampered.size() - 10];
  c = c == 'A' ? 'g' : 'A';
  EXPECT_EQ(
      request("GET", "/private/me", "Authorization: Bearer " + tampered + "\r\n").result_int(),
      401);
}

TEST_F(PackagesTest, HonoParseBodyReadsUrlencodedAndMultipartForms) {
  Response form = request("POST", "/form", "Content-Type: application/x-www-form-urlencoded\r\n",
                          "a=1&a=2&b=x");
  EXPECT_EQ(form.body(), R"({"a":["1","2"],"b":"x"})");
  std::string multipart =
      "--XB\r\nContent-Disposition: form-data; name=\"title\"\r\n\r\nT\r\n"
      "--XB\r\nContent-Disposition: form-data; name=\"upload\"; filename=\"n.txt\"\r\n"
      "Content-Type: text/plain\r\n\r\nfile text\r\n--XB--\r\n";
  Response upload =
      request("POST", "/form", "Content-Type: multipart/form-data; boundary=XB\r\n", multipart);
  EXPECT_EQ(
      upload.body(),
      R"({"title":"T","upload":{"file":"n.txt","type":"text/plain","size":9,"text":"file text"}})");
  Response broken =
      request("POST", "/form", "Content-Type: multipart/form-data; boundary=XB\r\n", "--XB\r\nno");
  EXPECT_GE(broken.result_int(), 400) << "a malformed form fails the request, not the server";
  EXPECT_EQ(request("GET", "/api/data").result_int(), 200);
}

TEST_F(PackagesTest, AFormDataResponseIsMultipart) {
  Response r = request("GET", "/form-out");
  std::string type(r["content-type"]);
  ASSERT_EQ(type.rfind("multipart/form-data; boundary=", 0), 0u) << type;
  std::string boundary = type.substr(type.find('=') + 1);
  EXPECT_NE(r.body().find("--" + boundary +
                          "\r\nContent-Disposition: form-data; name=\"greeting\"\r\n\r\nhello\r\n"),
            std::string::npos)
      << r.body();
  EXPECT_NE(r.body().find("filename=\"a.txt\"\r\nContent-Type: text/plain\r\n\r\nfile body\r\n"),
            std::string::npos);
  EXPECT_NE(r.body().find("--" + boundary + "--\r\n"), std::string::npos);
}

TEST_F(PackagesTest, HonoStreamSseSendsEachEvent) {
  Response r = request("GET", "/sse");
  EXPECT_EQ(r["content-type"], "text/event-stream");
  EXPECT_EQ(r.body(),
            "event: tick\ndata: message 1\nid: 1\n\n"
            "event: tick\ndata: message 2\nid: 2\n\n"
            "event: tick\ndata: message 3\nid: 3\n\n");
}

TEST_F(PackagesTest, IttyRouterRoutesWithParamsQueryAndErrors) {
  EXPECT_EQ(request("GET", "/lib/itty/items/7?sort=asc").body(), R"({"id":"7","sort":"asc"})");
  Response missing = request("GET", "/lib/itty/missing");
  EXPECT_EQ(missing.result_int(), 404);
  EXPECT_EQ(missing.body(), R"({"status":404,"error":"nothing here"})");
  EXPECT_EQ(request("GET", "/lib/nowhere").body(), R"({"status":404,"error":"Not Found"})");
}

TEST_F(PackagesTest, ZodAcceptsAValidBodyAndListsTheIssuesOfAnInvalidOne) {
  Response ok =
      request("POST", "/lib/zod/users", "", R"({"name":"Ada","age":36,"email":"ada@example.com"})");
  EXPECT_EQ(ok.body(), R"({"created":"Ada"})");
  Response bad = request("POST", "/lib/zod/users", "", R"({"name":"A","age":-1,"email":"nope"})");
  EXPECT_EQ(bad.result_int(), 400);
  EXPECT_EQ(bad.body(), R"({"issues":["name","age","email"]})");
}

TEST_F(PackagesTest, PreactRendersAComponentTreeWithEscaping) {
  Response r = request("GET", "/lib/preact");
  EXPECT_EQ(r["content-type"], "text/html; charset=utf-8");
  EXPECT_EQ(r.body(),
            "<!doctype html><html><body><h1>Fish &amp; &lt;chips></h1>"
            "<ul><li>cod</li><li>haddock</li></ul></body></html>");
}

TEST_F(PackagesTest, JoseSignsAndVerifiesJwtsOfEachAlgorithm) {
  EXPECT_EQ(
      request("GET", "/lib/jose/HS256").body(),
      R"({"alg":"HS256","sub":"ada","role":"tester","jwkKty":null,"spki":null,"tamperedRejected":true})");
  EXPECT_EQ(
      request("GET", "/lib/jose/ES256").body(),
      R"({"alg":"ES256","sub":"ada","role":"tester","jwkKty":"EC","spki":true,"tamperedRejected":true})");
  EXPECT_EQ(
      request("GET", "/lib/jose/RS256").body(),
      R"({"alg":"RS256","sub":"ada","role":"tester","jwkKty":"RSA","spki":true,"tamperedRejected":true})");
  EXPECT_EQ(
      request("GET", "/lib/jose/EdDSA").body(),
      R"({"alg":"EdDSA","sub":"ada","role":"tester","jwkKty":"OKP","spki":true,"tamperedRejected":true})");
}

}  // namespace
}  // namespace isolane
