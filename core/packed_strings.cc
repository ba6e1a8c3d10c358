#include "core/packed_strings.h"

#include <glog/logging.h>

#include <algorithm>

#include "core/shard_heap.h"
#include "core/varint.h"

namespace shardis::core {


char* PackedStrings::New(size_t reserve) {
  char* buf = static_cast<char*>(ShardHeap::Current()->Allocate(kHeader + reserve));
  Store(buf, kHeader);
  Store(buf + 4, 0);
  return buf;
}

void PackedStrings::Free(char* buf) { ShardHeap::Current()->Free(buf); }

char* PackedStrings::Clone(const char* buf) {
  char* copy = static_cast<char*>(ShardHeap::Current()->Allocate(Bytes(buf)));
  std::memcpy(copy, buf, Bytes(buf));
  return copy;
}

char* PackedStrings::Reserve(char* buf, size_t need) {
  const size_t used = Bytes(buf);
  const size_t cap = ShardHeap::UsableSize(buf);
  if (used + need <= cap) return buf;
  // Growth by an eighth (about one mimalloc size class) keeps the slack of a packed collection
  // under ~12% (memory is the point of this encoding) while a sequence of appends still copies
  // each byte O(8) times on average.
  const size_t want = std::max(used + need, cap + cap / 8);
  char* grown = static_cast<char*>(ShardHeap::Current()->Allocate(want));
  std::memcpy(grown, buf, used);
  ShardHeap::Current()->Free(buf);
  return grown;
}

uint32_t PackedStrings::Find(const char* buf, std::string_view s, uint32_t stride) {
  uint32_t off = kHeader;
  const uint32_t end = End(buf);
  while (off < end) {
    const uint32_t at = off;
    std::string_view e = Next(buf, &off);
    if (e.size() == s.size() && std::memcmp(e.data(), s.data(), s.size()) == 0) return at;
    for (uint32_t k = 1; k < stride; ++k) Next(buf, &off);
  }
  return kNpos;
}

char* PackedStrings::Append(char* buf, std::string_view s) {
  const uint32_t add = VarintSize(s.size()) + s.size();
  buf = Reserve(buf, add);
  char* p = PutVarint(buf + Bytes(buf), s.size());
  if (!s.empty()) std::memcpy(p, s.data(), s.size());
  Store(buf, Bytes(buf) + add);
  Store(buf + 4, Count(buf) + 1);
  return buf;
}

char* PackedStrings::Replace(char* buf, uint32_t off, std::string_view s) {
  uint32_t next = off;
  Next(buf, &next);
  const uint32_t old_size = next - off;
  const uint32_t new_size = VarintSize(s.size()) + s.size();
  if (new_size > old_size) {
    // s may not point into buf (callers pass client arguments), so growing is safe.
    buf = Reserve(buf, new_size - old_size);
  }
  const uint32_t used = Bytes(buf);
  std::memmove(buf + off + new_size, buf + next, used - next);
  char* p = PutVarint(buf + off, s.size());
  if (!s.empty()) std::memcpy(p, s.data(), s.size());
  Store(buf, used - old_size + new_size);
  return buf;
}

void PackedStrings::Erase(char* buf, uint32_t off, uint32_t n) {
  uint32_t next = off;
  for (uint32_t i = 0; i < n; ++i) Next(buf, &next);
  const uint32_t used = Bytes(buf);
  std::memmove(buf + off, buf + next, used - next);
  Store(buf, used - (next - off));
  Store(buf + 4, Count(buf) - n);
}

uint32_t PackedStrings::OffsetOf(const char* buf, uint32_t i) {
  DCHECK_LT(i, Count(buf));
  uint32_t off = kHeader;
  while (i-- > 0) Next(buf, &off);
  return off;
}

}  // namespace shardis::core
