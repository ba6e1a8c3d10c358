// IntSet: a set of int64 as one sorted array in a single heap block, each value in the smallest
// width (2, 4 or 8 bytes) that fits every member, like Redis' intset. Lookups are binary
// searches; inserts and removals move the tail. Sets of integer members up to
// set-max-intset-entries (512) use it.
//
// Block layout: {uint32 width in bytes, uint32 count} then count values of that width, ascending.
#pragma once

#include <cstdint>
#include <cstring>

namespace shardis::core {

class IntSet {
 public:
  static constexpr uint32_t kHeader = 8;

  static char* New();
  static void Free(char* buf);
  static char* Clone(const char* buf);

  static uint32_t Count(const char* buf) { return Load32(buf + 4); }
  static uint32_t Width(const char* buf) { return Load32(buf); }
  static int64_t Get(const char* buf, uint32_t i);
  static bool Contains(const char* buf, int64_t v);
  // Inserts v (moving the block when it grows); *added tells whether it was new.
  static char* Insert(char* buf, int64_t v, bool* added);
  // Removes v; false when absent.
  static bool Remove(char* buf, int64_t v);
  // Removes the value at index i.
  static void RemoveAt(char* buf, uint32_t i);
  static size_t Bytes(const char* buf) { return kHeader + size_t{Width(buf)} * Count(buf); }

 private:
  static uint32_t Load32(const char* p) {
    uint32_t v;
    std::memcpy(&v, p, 4);
    return v;
  }
  static void Store32(char* p, uint32_t v) { std::memcpy(p, &v, 4); }
  // Index of v, or of where it would go (with *found false).
  static uint32_t Search(const char* buf, int64_t v, bool* found);
  static void Set(char* buf, uint32_t width, uint32_t i, int64_t v);
};

}  // namespace shardis::core
