// LEB128 varints (7 bits per byte, low bits first, high bit = more follows): the length and
// number prefix of every packed encoding (packed strings, zset blocks, stream nodes, the string
// table). Callers guarantee the bytes are there: these read what the same process wrote.
#pragma once

#include <cstddef>
#include <cstdint>

namespace shardis::core {

inline size_t VarintSize(uint64_t v) {
  size_t n = 1;
  while (v >= 0x80) {
    v >>= 7;
    ++n;
  }
  return n;
}

// Writes v at p; returns the byte after it.
inline char* PutVarint(char* p, uint64_t v) {
  while (v >= 0x80) {
    *p++ = static_cast<char>((v & 0x7f) | 0x80);
    v >>= 7;
  }
  *p++ = static_cast<char>(v);
  return p;
}

// Reads a varint at p into *v; returns the byte after it.
inline const char* GetVarint(const char* p, uint64_t* v) {
  uint64_t r = 0;
  int shift = 0;
  for (;;) {
    const uint8_t b = static_cast<uint8_t>(*p++);
    r |= uint64_t(b & 0x7f) << shift;
    if (b < 0x80) break;
    shift += 7;
  }
  *v = r;
  return p;
}

}  // namespace shardis::core
