// Reading an HTTP/1.1 request head (the request line and the headers) as the metrics and health
// endpoints need it: pure functions over the bytes a client sent, so that they are unit tested
// and fuzzed (tests/fuzz/http_fuzz.cc) without sockets. http_connection.cc does the I/O.
#pragma once

#include <string>
#include <string_view>

namespace shardis::server {

enum class HttpSniff { kHttp, kNotHttp, kNeedMore };

// Whether the first bytes a client sent are an HTTP request line: "GET " or "HEAD " (any method
// in upper case with any_method), a target, and " HTTP/1.x" before the end of the first line.
// Inline RESP ("GET key") has no such version, so it stays RESP. kNeedMore while the line is
// incomplete and could still be one.
HttpSniff SniffHttp(std::string_view head, bool any_method = false);

// The longest request head read (request line and headers); a larger one is refused.
inline constexpr size_t kMaxHttpHead = 16 * 1024;

// Whether `head` holds a whole request head: it has the empty line that ends the headers.
bool HttpHeadComplete(std::string_view head);

// The request line of a head: "METHOD target HTTP/1.x". The path is the target without its
// query ("/metrics?x=1" -> "/metrics"). Views into head; ok is false for a line without two
// spaces (400 Bad Request), which still has its method (the first word).
struct HttpRequestLine {
  bool ok = false;
  std::string_view method;
  std::string_view path;
};
HttpRequestLine ParseHttpRequestLine(std::string_view head);

// The user and password of an "Authorization: Basic <base64 of user:password>" header (the name
// in any case), from the first Authorization header of the head. False when there is none, or it
// is not Basic, or its value is not base64 of "user:password".
bool ParseBasicAuth(std::string_view head, std::string* user, std::string* password);

}  // namespace shardis::server
