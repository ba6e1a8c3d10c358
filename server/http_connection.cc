#include "server/http_connection.h"

#include <string>

#include <absl/strings/escaping.h>

#include "core/string_util.h"
#include "server/auth.h"
#include "server/metrics.h"
#include "server/server_state.h"

namespace shardis::server {

namespace {

// The longest request head we read (request line and headers); a larger one is refused.
constexpr size_t kMaxHead = 16 * 1024;

struct Response {
  int status = 200;
  std::string_view reason = "OK";
  std::string_view content_type = "text/plain; charset=utf-8";
  std::string body;
  std::string_view extra_headers = "";  // whole "Name: value\r\n" lines
};

std::string_view Trim(std::string_view s) {
  constexpr std::string_view kSpace = " \t\r";
  const size_t begin = s.find_first_not_of(kSpace);
  if (begin == std::string_view::npos) return {};
  return s.substr(begin, s.find_last_not_of(kSpace) - begin + 1);
}

// Whether the request head carries "Authorization: Basic <base64 of user:password>" with the
// password of the default user and the user name "default" (as `AUTH default <password>`).
bool BasicAuthOk(std::string_view head) {
  size_t pos = head.find('\n');
  while (pos != std::string_view::npos && pos + 1 < head.size()) {
    const size_t next = head.find('\n', pos + 1);
    std::string_view line = head.substr(pos + 1, next == std::string_view::npos
                                                     ? std::string_view::npos
                                                     : next - pos - 1);
    pos = next;
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos ||
        !core::EqualsIgnoreCase(line.substr(0, colon), "authorization")) {
      continue;
    }
    const std::string_view value = Trim(line.substr(colon + 1));
    constexpr std::string_view kBasic = "basic ";
    if (value.size() <= kBasic.size() ||
        !core::EqualsIgnoreCase(value.substr(0, kBasic.size()), kBasic)) {
      return false;
    }
    std::string decoded;
    if (!absl::Base64Unescape(core::ToAbsl(Trim(value.substr(kBasic.size()))), &decoded)) {
      return false;
    }
    const size_t sep = decoded.find(':');
    if (sep == std::string::npos) return false;
    return CheckPassword(std::string_view(decoded).substr(0, sep),
                         std::string_view(decoded).substr(sep + 1));
  }
  return false;
}

// `guarded`: /metrics needs the default user's password when it has one (the RESP port, which
// anyone who may send commands can reach; --admin_port is for operators and stays open).
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

}  // namespace

HttpSniff SniffHttp(std::string_view head, bool any_method) {
  std::string_view method;
  if (any_method) {
    size_t n = 0;
    while (n < head.size() && n < 16 && head[n] >= 'A' && head[n] <= 'Z') ++n;
    if (n == head.size() && n < 16) return HttpSniff::kNeedMore;
    if (n == 0 || n == 16 || head[n] != ' ') return HttpSniff::kNotHttp;
    method = head.substr(0, n + 1);
  } else if (head.starts_with("GET ")) {
    method = "GET ";
  } else if (head.starts_with("HEAD ")) {
    method = "HEAD ";
  } else if (std::string_view("GET ").starts_with(head) ||
             std::string_view("HEAD ").starts_with(head)) {
    return HttpSniff::kNeedMore;  // too short to tell
  } else {
    return HttpSniff::kNotHttp;
  }
  size_t eol = head.find('\n');
  if (eol == std::string_view::npos) {
    return head.size() < kMaxHead ? HttpSniff::kNeedMore : HttpSniff::kNotHttp;
  }
  std::string_view line = head.substr(0, eol);
  if (line.ends_with('\r')) line.remove_suffix(1);
  // "METHOD target HTTP/1.x": the target is one word, the version the last one.
  const size_t sp = line.rfind(' ');
  if (sp <= method.size()) return HttpSniff::kNotHttp;
  const std::string_view target = line.substr(method.size(), sp - method.size());
  const std::string_view version = line.substr(sp + 1);
  if (target.find(' ') != std::string_view::npos || !version.starts_with("HTTP/1.") ||
      version.size() != 8) {
    return HttpSniff::kNotHttp;
  }
  return HttpSniff::kHttp;
}

namespace {

void ServeRequest(io::Stream* stream, bool guarded) {
  const io::InputBuffer* in = &stream->input();
  // Read the whole head (the request line and the headers, up to the empty line).
  while (true) {
    const std::string_view head(in->unparsed(), in->unparsed_size());
    if (head.find("\r\n\r\n") != std::string_view::npos ||
        head.find("\n\n") != std::string_view::npos) {
      break;
    }
    if (head.size() > kMaxHead) {
      constexpr std::string_view kTooLarge =
          "HTTP/1.1 431 Request Header Fields Too Large\r\nContent-Length: 0\r\n"
          "Connection: close\r\n\r\n";
      stream->SendAndWait(kTooLarge);
      return;
    }
    if (!stream->Read()) return;
  }
  const std::string_view head(in->unparsed(), in->unparsed_size());
  std::string_view line = head.substr(0, head.find('\n'));
  if (line.ends_with('\r')) line.remove_suffix(1);
  const size_t sp1 = line.find(' ');
  const size_t sp2 = line.rfind(' ');
  std::string_view method = line.substr(0, sp1);
  std::string_view path = sp1 < sp2 ? line.substr(sp1 + 1, sp2 - sp1 - 1) : std::string_view();
  path = path.substr(0, path.find('?'));
  Response r = sp1 < sp2 ? Route(method, path, head, guarded)
                         : Response{400, "Bad Request", "text/plain; charset=utf-8",
                                    "Bad Request\n"};
  std::string out = core::Concat("HTTP/1.1 ", r.status, " ", r.reason,
                                 "\r\nContent-Type: ", r.content_type,
                                 "\r\nContent-Length: ", r.body.size(), "\r\n",
                                 r.extra_headers, "Connection: close\r\n\r\n");
  if (method != "HEAD") out += r.body;
  stream->SendAndWait(out);
}

}  // namespace

void ServeHttp(io::Stream* stream) { ServeRequest(stream, /*guarded=*/true); }

void ServeHttpConnection(io::Proactor* proactor, int fd) {
  ThreadStats& stats = ServerThreadState::current().stats();
  io::Stream stream(proactor, fd, &stats.net_input_bytes, &stats.net_output_bytes);
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
