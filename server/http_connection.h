// HTTP/1.1 for operators and their tools: GET /metrics (Prometheus text format) and GET /healthz.
// Served on the RESP port, where a connection whose first line is an HTTP request line
// ("GET /path HTTP/1.1") is handed over here instead of to the RESP parser, and on --admin_port,
// which speaks only HTTP. One request per connection (the reply says Connection: close).
#pragma once

#include <string_view>

#include "io/proactor.h"
#include "io/stream.h"

namespace shardis::server {

enum class HttpSniff { kHttp, kNotHttp, kNeedMore };

// Whether the first bytes a client sent are an HTTP request line: "GET " or "HEAD " (any method
// in upper case with any_method), a target, and " HTTP/1.x" before the end of the first line.
// Inline RESP ("GET key") has no such version, so it stays RESP. kNeedMore while the line is
// incomplete and could still be one.
HttpSniff SniffHttp(std::string_view head, bool any_method = false);

// On the RESP port: reads the rest of the request's head from the stream (bytes already received
// are in its input), replies and returns; the caller closes the connection. Runs in the
// connection's fiber.
// While the default user has a password, /metrics answers 401 unless the request has HTTP basic
// auth with user "default" and that password; /healthz stays open.
void ServeHttp(io::Stream* stream);

// A connection accepted on --admin_port (for operators: /metrics without auth), then close.
void ServeHttpConnection(io::Proactor* proactor, int fd);

}  // namespace shardis::server
