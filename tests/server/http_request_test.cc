// The HTTP request head reader behind /metrics and /healthz: sniffing, the request line and
// basic auth, on the bytes a client sends.
#include "server/http_request.h"

#include <gtest/gtest.h>

#include <string>

namespace shardis::server {
namespace {

TEST(HttpRequestTest, SniffTellsHttpFromInlineResp) {
  EXPECT_EQ(SniffHttp("GET /metrics HTTP/1.1\r\n"), HttpSniff::kHttp);
  EXPECT_EQ(SniffHttp("HEAD / HTTP/1.0\n"), HttpSniff::kHttp);
  EXPECT_EQ(SniffHttp("GET key\r\n"), HttpSniff::kNotHttp);
  EXPECT_EQ(SniffHttp("GE"), HttpSniff::kNeedMore);
  EXPECT_EQ(SniffHttp("GET /metrics HT"), HttpSniff::kNeedMore);
  EXPECT_EQ(SniffHttp("POST / HTTP/1.1\r\n"), HttpSniff::kNotHttp);
  EXPECT_EQ(SniffHttp("POST / HTTP/1.1\r\n", /*any_method=*/true), HttpSniff::kHttp);
  EXPECT_EQ(SniffHttp("post / HTTP/1.1\r\n", /*any_method=*/true), HttpSniff::kNotHttp);
  EXPECT_EQ(SniffHttp(std::string(kMaxHttpHead, 'x'), /*any_method=*/true), HttpSniff::kNotHttp);
}

TEST(HttpRequestTest, HeadEndsAtAnEmptyLine) {
  EXPECT_TRUE(HttpHeadComplete("GET / HTTP/1.1\r\nHost: a\r\n\r\n"));
  EXPECT_TRUE(HttpHeadComplete("GET / HTTP/1.1\n\n"));
  EXPECT_FALSE(HttpHeadComplete("GET / HTTP/1.1\r\nHost: a\r\n"));
}

TEST(HttpRequestTest, RequestLineDropsTheQuery) {
  HttpRequestLine line = ParseHttpRequestLine("GET /metrics?name=x HTTP/1.1\r\n\r\n");
  EXPECT_TRUE(line.ok);
  EXPECT_EQ(line.method, "GET");
  EXPECT_EQ(line.path, "/metrics");
  line = ParseHttpRequestLine("HEAD /healthz\r\n\r\n");
  EXPECT_FALSE(line.ok);
  EXPECT_EQ(line.method, "HEAD");  // a 400 to HEAD has no body either
}

TEST(HttpRequestTest, BasicAuth) {
  std::string user, password;
  // base64("default:s3cret:x") - the password may hold ':'.
  ASSERT_TRUE(ParseBasicAuth(
      "GET / HTTP/1.1\r\nauthorization:  basic ZGVmYXVsdDpzM2NyZXQ6eA== \r\n\r\n", &user,
      &password));
  EXPECT_EQ(user, "default");
  EXPECT_EQ(password, "s3cret:x");
  EXPECT_FALSE(ParseBasicAuth("GET / HTTP/1.1\r\nAuthorization: Bearer abc\r\n\r\n", &user,
                              &password));
  EXPECT_FALSE(ParseBasicAuth("GET / HTTP/1.1\r\nAuthorization: Basic !!!\r\n\r\n", &user,
                              &password));
  EXPECT_FALSE(ParseBasicAuth("GET / HTTP/1.1\r\nAuthorization: Basic bm9jb2xvbg==\r\n\r\n",
                              &user, &password));  // "nocolon"
  EXPECT_FALSE(ParseBasicAuth("GET / HTTP/1.1\r\nHost: a\r\n\r\n", &user, &password));
}

}  // namespace
}  // namespace shardis::server
