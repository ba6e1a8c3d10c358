#include "server/http_connection.h"

#include <string>

#include "core/string_util.h"
#include "server/acl_user.h"
#include "server/acl_users.h"
#include "server/auth.h"
#include "server/command.h"
#include "server/metrics.h"
#include "server/server_state.h"

namespace shardis::server {

namespace {

struct Response {
  int status = 200;
  std::string_view reason = "OK";
  std::string_view content_type = "text/plain; charset=utf-8";
  std::string body;
  std::string_view extra_headers = "";  // whole "Name: value\r\n" lines
};

// Whether the request head carries HTTP basic auth of a user that `AUTH user password` would
// accept and that may run INFO: /metrics tells what INFO tells, so it asks for the same right.
bool BasicAuthOk(std::string_view head) {
  std::string user, password;
  if (!ParseBasicAuth(head, &user, &password) || !CheckPassword(user, password)) return false;
  const AclUserPtr acl_user = FindAclUser(user);
  const CommandSpec* info = Registry().Find("info");
  const std::string_view args[] = {"info"};
  return acl_user != nullptr && info != nullptr &&
         CheckAclCommand(*acl_user, *info, nullptr, ArgSlice(args)).denial == AclDenial::kNone;
}

// `guarded`: /metrics needs the credentials of a user allowed to run INFO when the default user
// has a password (the RESP port, which anyone who may send commands can reach; --admin_port is
// for operators and stays open).
// /healthz stays open everywhere: probes carry no credentials and it says nothing about the data.
Response Route(std::string_view method, std::string_view path, std::string_view head,
               bool guarded) {
  if (method != "GET" && method != "HEAD") {
    return {405, "Method Not Allowed", "text/plain; charset=utf-8", "Method Not Allowed\n"};
  }
  if (path == "/healthz") return {200, "OK", "text/plain; charset=utf-8", "OK"};
  if (path == "/metrics") {
    if (guarded && AuthRequired() && !BasicAuthOk(head)) {
      return {401, "Unauthorized", "text/plain; charset=utf-8", "Unauthorized\n",
              "WWW-Authenticate: Basic realm=\"shardis\"\r\n"};
    }
    const MetricsSnapshot m = GatherMetrics(kGatherThreads | kGatherCommands);
    return {200, "OK", "text/plain; version=0.0.4; charset=utf-8", RenderPrometheus(m)};
  }
  return {404, "Not Found", "text/plain; charset=utf-8", "Not Found\n"};
}

void ServeRequest(io::Stream* stream, bool guarded) {
  const io::InputBuffer* in = &stream->input();
  // Read the whole head (the request line and the headers, up to the empty line).
  while (true) {
    const std::string_view head(in->unparsed(), in->unparsed_size());
    if (HttpHeadComplete(head)) break;
    if (head.size() > kMaxHttpHead) {
      constexpr std::string_view kTooLarge =
          "HTTP/1.1 431 Request Header Fields Too Large\r\nContent-Length: 0\r\n"
          "Connection: close\r\n\r\n";
      stream->SendAndWait(kTooLarge);
      return;
    }
    if (!stream->Read()) return;
  }
  const std::string_view head(in->unparsed(), in->unparsed_size());
  const HttpRequestLine line = ParseHttpRequestLine(head);
  Response r = line.ok ? Route(line.method, line.path, head, guarded)
                       : Response{400, "Bad Request", "text/plain; charset=utf-8", "Bad Request\n"};
  std::string out = core::Concat("HTTP/1.1 ", r.status, " ", r.reason,
                                 "\r\nContent-Type: ", r.content_type,
                                 "\r\nContent-Length: ", r.body.size(), "\r\n",
                                 r.extra_headers, "Connection: close\r\n\r\n");
  if (line.method != "HEAD") out += r.body;
  stream->SendAndWait(out);
}

}  // namespace

void ServeHttp(io::Stream* stream) { ServeRequest(stream, /*guarded=*/true); }

void ServeHttpConnection(io::Proactor* proactor, int fd, std::unique_ptr<io::TlsSession> tls) {
  ThreadStats& stats = ServerThreadState::current().stats();
  io::Stream stream(proactor, fd, &stats.net);
  if (tls != nullptr) stream.set_tls(std::move(tls));
  const io::InputBuffer& in = stream.input();
  HttpSniff sniff = HttpSniff::kNeedMore;
  while (sniff == HttpSniff::kNeedMore && stream.Read()) {
    sniff = SniffHttp({in.unparsed(), in.unparsed_size()}, /*any_method=*/true);
  }
  if (sniff == HttpSniff::kHttp) {
    ServeRequest(&stream, /*guarded=*/false);
  } else if (sniff == HttpSniff::kNotHttp) {
    constexpr std::string_view kBadRequest =
        "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
    stream.SendAndWait(kBadRequest);
  }
}

}  // namespace shardis::server
