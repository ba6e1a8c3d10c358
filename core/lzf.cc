#include "core/lzf.h"

#include <cstdint>
#include <cstring>
#include <array>

namespace shardis::core {

namespace {

constexpr size_t kMaxLiteral = 32;
constexpr size_t kMaxOffset = 8192;
constexpr size_t kMinMatch = 3;
constexpr size_t kMaxMatch = 264;  // 2 + 7 + 255
constexpr int kHashBits = 14;

inline uint32_t Hash3(const unsigned char* p) {
  uint32_t v = uint32_t{p[0]} << 16 | uint32_t{p[1]} << 8 | p[2];
  return (v * 2654435761u) >> (32 - kHashBits);
}

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "MatchLength reads words little-endian");

// How far a[len..] and b[len..] go on being equal, up to max_len: 8 bytes at a time (b may
// overlap a's bytes; both are only read).
inline size_t MatchLength(const unsigned char* a, const unsigned char* b, size_t len, size_t max_len) {
  while (len + 8 <= max_len) {
    uint64_t x, y;
    std::memcpy(&x, a + len, 8);
    std::memcpy(&y, b + len, 8);
    if (x != y) return len + size_t(__builtin_ctzll(x ^ y)) / 8;  // little-endian: first byte low
    len += 8;
  }
  while (len < max_len && a[len] == b[len]) ++len;
  return len;
}

}  // namespace

size_t LzfCompress(std::string_view input, char* output, size_t out_cap) {
  const auto* in = reinterpret_cast<const unsigned char*>(input.data());
  auto* out = reinterpret_cast<unsigned char*>(output);
  const size_t n = input.size();
  if (n == 0 || out_cap == 0) return 0;
  // Positions + 1 of the last occurrence of each 3-byte hash. A greedy single-probe matcher, as
  // liblzf's. Like liblzf, the table is not cleared between calls (64 KiB per string would cost
  // more than compressing a short one): a stale slot can only point at or after ip, which the
  // distance check refuses, or at earlier bytes of this input, which memcmp checks.
  thread_local std::array<uint32_t, size_t{1} << kHashBits> table;

  size_t ip = 0, op = 0;
  size_t lit = 0;        // literals in the current run
  size_t ctrl = op++;    // where the current literal run's control byte goes
  if (op > out_cap) return 0;
  auto close_literals = [&] {
    if (lit > 0) {
      out[ctrl] = static_cast<unsigned char>(lit - 1);
    } else {
      --op;  // the reserved control byte was not needed
    }
  };

  while (ip < n) {
    if (ip + kMinMatch <= n) {
      const uint32_t h = Hash3(in + ip);
      const uint32_t ref1 = table[h];
      table[h] = static_cast<uint32_t>(ip + 1);
      if (ref1 != 0 && ref1 <= ip) {  // ref1 - 1 < ip: an earlier byte of this input
        const size_t ref = ref1 - 1;
        const size_t off = ip - ref - 1;
        if (off < kMaxOffset && std::memcmp(in + ref, in + ip, kMinMatch) == 0) {
          const size_t max_len = n - ip < kMaxMatch ? n - ip : kMaxMatch;
          const size_t len = MatchLength(in + ref, in + ip, kMinMatch, max_len);
          close_literals();
          const size_t l = len - 2;
          if (op + (l >= 7 ? 3 : 2) + 1 > out_cap) return 0;  // + the next run's control byte
          if (l < 7) {
            out[op++] = static_cast<unsigned char>((l << 5) | (off >> 8));
          } else {
            out[op++] = static_cast<unsigned char>((7 << 5) | (off >> 8));
            out[op++] = static_cast<unsigned char>(l - 7);
          }
          out[op++] = static_cast<unsigned char>(off & 0xff);
          // Index the match's last two positions, as liblzf does, so that a repeat that goes on
          // past it is found. (Indexing every position of a match made a value of one repeated
          // byte cost a hash per byte: LZF was 62% of an AOF rewrite of 128-byte such values.)
          for (size_t k = ip + len - 2; k < ip + len && k + kMinMatch <= n; ++k) {
            table[Hash3(in + k)] = static_cast<uint32_t>(k + 1);
          }
          ip += len;
          lit = 0;
          ctrl = op++;
          continue;
        }
      }
    }
    if (op >= out_cap) return 0;
    out[op++] = in[ip++];
    if (++lit == kMaxLiteral) {
      out[ctrl] = static_cast<unsigned char>(kMaxLiteral - 1);
      lit = 0;
      ctrl = op++;
      if (op > out_cap) return 0;
    }
  }
  close_literals();
  return op;
}

bool LzfDecompress(std::string_view input, char* output, size_t out_len) {
  const auto* ip = reinterpret_cast<const unsigned char*>(input.data());
  const auto* const in_end = ip + input.size();
  auto* out = reinterpret_cast<unsigned char*>(output);
  size_t op = 0;
  while (ip < in_end) {
    const unsigned c = *ip++;
    if (c < 32) {
      const size_t len = c + 1;
      if (static_cast<size_t>(in_end - ip) < len || out_len - op < len) return false;
      std::memcpy(out + op, ip, len);
      ip += len;
      op += len;
      continue;
    }
    size_t len = c >> 5;
    if (len == 7) {
      if (ip >= in_end) return false;
      len += *ip++;
    }
    if (ip >= in_end) return false;
    const size_t back = ((c & 0x1f) << 8 | *ip++) + 1;
    len += 2;
    if (back > op || out_len - op < len) return false;
    // Byte by byte: the source may overlap what is being written (a run of one byte repeats it).
    const unsigned char* ref = out + op - back;
    for (size_t k = 0; k < len; ++k) out[op + k] = ref[k];
    op += len;
  }
  return op == out_len;
}

}  // namespace shardis::core
