// The memcached text-protocol parser (core/memcache_parser.h) on arbitrary client bytes, cut
// into chunks at random points: the commands it finds must not depend on where the bytes were
// cut, and every key is 1 to 250 bytes.
#include <fuzzer/FuzzedDataProvider.h>

#include <string>
#include <vector>

#include "core/memcache_parser.h"
#include "tests/fuzz/chunked_feed.h"

namespace shardis::fuzz {
namespace {

using core::MemcacheParser;

// A command with its views copied out, comparable.
struct Parsed {
  MemcacheParser::Op op;
  bool noreply, too_large;
  std::string error, data, stats_arg;
  std::vector<std::string> keys;
  uint32_t flags;
  int64_t exptime;
  uint64_t cas_unique, delta;
  bool operator==(const Parsed&) const = default;
};

struct Outcome {
  std::vector<Parsed> commands;
  bool closed = false;
  bool operator==(const Outcome&) const = default;
};

Outcome Parse(std::string_view wire, const std::vector<size_t>& cuts) {
  Outcome out;
  MemcacheParser parser;
  FeedInChunks(wire, cuts, [&](const char* data, size_t len) {
    switch (parser.Parse(data, len)) {
      case MemcacheParser::Result::kNeedMore:
        if (parser.bytes_needed() != 0 && parser.bytes_needed() <= len) abort();
        return kNeedMore;
      case MemcacheParser::Result::kClose:
        out.closed = true;
        return kStop;
      case MemcacheParser::Result::kDone:
        break;
    }
    const MemcacheParser::Command& c = parser.command();
    if (parser.consumed() == 0) abort();
    for (std::string_view k : c.keys) {
      if (k.empty() || k.size() > MemcacheParser::kMaxKeyLength) abort();
    }
    // The bytes of a too-large value are dropped as they come, in as many pieces as they arrive
    // in: those steps have no reply and depend on the cuts, so they are not compared.
    if (c.op != MemcacheParser::Op::kSkip) {
      out.commands.push_back({c.op, c.noreply, c.too_large, std::string(c.error),
                              std::string(c.data), std::string(c.stats_arg),
                              {c.keys.begin(), c.keys.end()}, c.flags, c.exptime, c.cas_unique,
                              c.delta});
    }
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
  const std::string wire = in.ConsumeRandomLengthString(size);
  const std::vector<size_t> cuts = shardis::fuzz::ChooseCuts(in, wire.size());
  if (!(shardis::fuzz::Parse(wire, {}) == shardis::fuzz::Parse(wire, cuts))) abort();
  return 0;
}
