#include "server/http_request.h"

#include <absl/strings/escaping.h>

#include "core/string_util.h"

namespace shardis::server {

namespace {

std::string_view Trim(std::string_view s) {
  constexpr std::string_view kSpace = " \t\r";
  const size_t begin = s.find_first_not_of(kSpace);
  if (begin == std::string_view::npos) return {};
  return s.substr(begin, s.find_last_not_of(kSpace) - begin + 1);
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
    return head.size() < kMaxHttpHead ? HttpSniff::kNeedMore : HttpSniff::kNotHttp;
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

bool HttpHeadComplete(std::string_view head) {
  return head.find("\r\n\r\n") != std::string_view::npos ||
         head.find("\n\n") != std::string_view::npos;
}

HttpRequestLine ParseHttpRequestLine(std::string_view head) {
  std::string_view line = head.substr(0, head.find('\n'));
  if (line.ends_with('\r')) line.remove_suffix(1);
  const size_t sp1 = line.find(' ');
  const size_t sp2 = line.rfind(' ');
  HttpRequestLine r;
  r.method = line.substr(0, sp1);
  if (!(sp1 < sp2)) return r;
  const std::string_view target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  r.ok = true;
  r.path = target.substr(0, target.find('?'));
  return r;
}

bool ParseBasicAuth(std::string_view head, std::string* user, std::string* password) {
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
    *user = decoded.substr(0, sep);
    *password = decoded.substr(sep + 1);
    return true;
  }
  return false;
}

}  // namespace shardis::server
