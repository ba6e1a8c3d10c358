// The RESP request parser (core/resp_parser.h) on arbitrary client bytes, cut into chunks at
// random points: besides memory errors and UB, the requests and the error it finds must not
// depend on where the bytes were cut (the parser resumes from stored offsets).
#include <fuzzer/FuzzedDataProvider.h>

#include <string>
#include <vector>

#include "core/resp_parser.h"
#include "tests/fuzz/chunked_feed.h"

namespace shardis::fuzz {
namespace {

using core::RespParser;

// What a client would see: each request's arguments, then the error if one closed the
// connection.
struct Outcome {
  std::vector<std::vector<std::string>> requests;
  std::string error;
  bool operator==(const Outcome&) const = default;
};

Outcome Parse(std::string_view wire, const std::vector<size_t>& cuts, int64_t max_bulk_len) {
  Outcome out;
  RespParser parser;
  parser.set_max_bulk_len(max_bulk_len);
  FeedInChunks(wire, cuts, [&](const char* data, size_t len) {
    switch (parser.Parse(data, len)) {
      case RespParser::Result::kNeedMore:
        // What it asks for must be more than it has, or a caller waiting for it would hang.
        if (parser.bytes_needed() != 0 && parser.bytes_needed() <= len) abort();
        return kNeedMore;
      case RespParser::Result::kError:
        out.error = parser.error();
        return kStop;
      case RespParser::Result::kDone:
        break;
    }
    if (parser.consumed() == 0) abort();  // a request of no bytes: the caller would spin
    out.requests.emplace_back(parser.args().begin(), parser.args().end());
    const size_t used = parser.consumed();
    parser.Reset();
    return used;
  });
  return out;
}

}  // namespace
}  // namespace shardis::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider in(data, size);
  // A small proto-max-bulk-len now and then, to reach its error.
  const int64_t max_bulk_len = in.ConsumeBool() ? in.ConsumeIntegralInRange<int64_t>(0, 64)
                                                : shardis::core::RespParser::kDefaultMaxBulkLen;
  const std::string wire = in.ConsumeRandomLengthString(size);
  const std::vector<size_t> cuts = shardis::fuzz::ChooseCuts(in, wire.size());
  const auto whole = shardis::fuzz::Parse(wire, {}, max_bulk_len);
  const auto chunked = shardis::fuzz::Parse(wire, cuts, max_bulk_len);
  if (!(whole == chunked)) abort();
  return 0;
}
