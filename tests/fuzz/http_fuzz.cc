// The HTTP request reader of the metrics and health endpoints (server/http_request.h) on
// arbitrary bytes, as they arrive on the RESP port and on --admin_port: besides memory errors and
// UB, the sniffer's verdict on a prefix, once it has one, must not change as more bytes arrive.
#include <fuzzer/FuzzedDataProvider.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "server/http_request.h"
#include "tests/fuzz/chunked_feed.h"

namespace {

using shardis::server::HttpSniff;

// The sniffer's verdict on the whole head and on every cut prefix agree, as far as the prefix
// could tell.
void CheckSniff(std::string_view head, const std::vector<size_t>& cuts, bool any_method) {
  const HttpSniff whole = shardis::server::SniffHttp(head, any_method);
  for (size_t cut : cuts) {
    const HttpSniff part = shardis::server::SniffHttp(head.substr(0, cut), any_method);
    if (part != HttpSniff::kNeedMore && part != whole) abort();
  }
}

bool Within(std::string_view part, std::string_view whole) {
  return part.empty() ||
         (part.data() >= whole.data() && part.data() + part.size() <= whole.data() + whole.size());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider in(data, size);
  const std::string head = in.ConsumeRandomLengthString(2 * shardis::server::kMaxHttpHead);
  const std::vector<size_t> cuts = shardis::fuzz::ChooseCuts(in, head.size());
  CheckSniff(head, cuts, /*any_method=*/false);
  CheckSniff(head, cuts, /*any_method=*/true);
  if (!shardis::server::HttpHeadComplete(head)) return 0;

  const shardis::server::HttpRequestLine line = shardis::server::ParseHttpRequestLine(head);
  if (!Within(line.method, head) || !Within(line.path, head)) abort();
  if (line.path.find('?') != std::string_view::npos) abort();
  std::string user, password;
  shardis::server::ParseBasicAuth(head, &user, &password);
  return 0;
}
