// HTTP/1.1 for operators and their tools: GET /metrics (Prometheus text format) and GET /healthz.
// Served on the RESP port, where a connection whose first line is an HTTP request line
// ("GET /path HTTP/1.1") is handed over here instead of to the RESP parser, and on --admin_port,
// which speaks only HTTP. One request per connection (the reply says Connection: close).
#pragma once

#include <string_view>

#include "io/proactor.h"
#include "io/stream.h"
#include "io/tls_session.h"
#include "server/http_request.h"

namespace shardis::server {

// On the RESP port: reads the rest of the request's head from the stream (bytes already received
// are in its input), replies and returns; the caller closes the connection. Runs in the
// connection's fiber.
// While the default user has a password, /metrics answers 401 unless the request has HTTP basic
// auth with user "default" and that password; /healthz stays open.
void ServeHttp(io::Stream* stream);

// A connection accepted on --admin_port (for operators: /metrics without auth), then close.
// tls: the session when the port speaks TLS (--admin_tls), or nullptr.
void ServeHttpConnection(io::Proactor* proactor, int fd, std::unique_ptr<io::TlsSession> tls);

}  // namespace shardis::server
