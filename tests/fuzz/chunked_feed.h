// Feeds bytes to an incremental parser the way a connection does: they arrive in chunks cut at
// points the fuzzer chooses, each call sees only the unparsed bytes, and each call gets them in a
// freshly allocated buffer of exactly that size (so ASan reports any read past the end, and a
// parser that kept a pointer into an old buffer reads freed memory).
#pragma once

#include <fuzzer/FuzzedDataProvider.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace shardis::fuzz {

// What a parse step returns: bytes of a finished item, or one of these.
inline constexpr size_t kNeedMore = 0;
inline constexpr size_t kStop = SIZE_MAX;  // the parser gave up (error or close)

// Up to 16 cut points in [0, size], ascending, taken from the fuzzer's data.
inline std::vector<size_t> ChooseCuts(FuzzedDataProvider& in, size_t size) {
  std::vector<size_t> cuts;
  const size_t n = in.ConsumeIntegralInRange<size_t>(0, 16);
  for (size_t i = 0; i < n && in.remaining_bytes() > 0; ++i) {
    cuts.push_back(in.ConsumeIntegralInRange<size_t>(0, size));
  }
  std::sort(cuts.begin(), cuts.end());
  return cuts;
}

// Delivers `wire` cut at `cuts`. parse(data, len) returns the bytes it consumed (> 0 and <= len),
// kNeedMore or kStop; it is called again on what is left after each consumed item.
template <typename ParseFn>
void FeedInChunks(std::string_view wire, const std::vector<size_t>& cuts, ParseFn parse) {
  std::string pending;
  size_t at = 0;
  for (size_t i = 0; i <= cuts.size(); ++i) {
    const size_t end = i < cuts.size() ? cuts[i] : wire.size();
    pending.append(wire.substr(at, end - at));
    at = end;
    while (!pending.empty()) {
      std::unique_ptr<char[]> exact(new char[pending.size()]);
      memcpy(exact.get(), pending.data(), pending.size());
      const size_t used = parse(exact.get(), pending.size());
      if (used == kStop) return;
      if (used == kNeedMore) break;
      if (used > pending.size()) abort();  // consumed more than it was given
      pending.erase(0, used);
    }
  }
}

}  // namespace shardis::fuzz
