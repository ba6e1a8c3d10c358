// PackedStrings: a sequence of short strings in ONE contiguous heap block, the small encoding of
// hashes (field, value, field, value, ...) and of sets of strings, like Redis' listpack.
//
// Block layout: a 8-byte header {uint32 used bytes (header included), uint32 element count},
// then each element as a varint length (1 byte below 128) and its bytes. The block's capacity is
// its usable size on the ShardHeap (no field for it): appends grow it geometrically.
//
// Every operation is a linear walk, which is what makes small collections cheap in memory; the
// owners keep them small (by default, as Redis: hashes of at most 512 fields, sets of at most 128
// members, each string at most 64 bytes) so the walk stays short. Functions that can grow the
// block return the (possibly moved) block.
#pragma once

#include <cstdint>
#include <cstring>
#include <string_view>

#include "core/varint.h"

namespace shardis::core {

class PackedStrings {
 public:
  static constexpr uint32_t kHeader = 8;
  static constexpr uint32_t kNpos = UINT32_MAX;

  // An empty block with room for about `reserve` bytes of elements.
  static char* New(size_t reserve = 0);
  static void Free(char* buf);
  static char* Clone(const char* buf);

  static uint32_t Count(const char* buf) { return Load(buf + 4); }
  static uint32_t Bytes(const char* buf) { return Load(buf); }
  // Offsets of elements: the first is kHeader, the end is Bytes(buf).
  static uint32_t Begin() { return kHeader; }
  static uint32_t End(const char* buf) { return Bytes(buf); }
  // The element at *off; advances *off past it.
  static std::string_view Next(const char* buf, uint32_t* off) {
    uint64_t len;
    const char* data = GetVarint(buf + *off, &len);
    std::string_view s(data, len);
    *off = static_cast<uint32_t>(data + len - buf);
    return s;
  }
  // The offset of the first element equal to s among elements 0, stride, 2*stride, ...
  // (stride 2: the fields of a hash), or kNpos.
  static uint32_t Find(const char* buf, std::string_view s, uint32_t stride);
  // Appends one element.
  static char* Append(char* buf, std::string_view s);
  // Replaces the element at off with s.
  static char* Replace(char* buf, uint32_t off, std::string_view s);
  // Removes n elements starting at off.
  static void Erase(char* buf, uint32_t off, uint32_t n);
  // The offset of element i (a walk).
  static uint32_t OffsetOf(const char* buf, uint32_t i);

 private:
  static uint32_t Load(const char* p) {
    uint32_t v;
    std::memcpy(&v, p, 4);
    return v;
  }
  static void Store(char* p, uint32_t v) { std::memcpy(p, &v, 4); }
  // Makes room for `need` more bytes; returns the (possibly new) block.
  static char* Reserve(char* buf, size_t need);
};

}  // namespace shardis::core
