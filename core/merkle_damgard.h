// The padding and output shared by SHA-1 and SHA-256 (FIPS 180-4 §5.1.1, §6): the message in
// 64-byte blocks, then a 0x80 byte, zeros and the message's length in bits (big-endian) in one or
// two final blocks; the digest is the state's words, big-endian.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace shardis::core::internal {

// Runs block(state, 64 bytes) over data and its padding; returns the state's N words as bytes.
template <size_t N, typename BlockFn>
std::array<uint8_t, 4 * N> MerkleDamgard(uint32_t (&state)[N], std::string_view data,
                                          BlockFn block) {
  const auto* p = reinterpret_cast<const uint8_t*>(data.data());
  size_t left = data.size();
  for (; left >= 64; left -= 64, p += 64) block(state, p);
  uint8_t tail[128] = {};
  std::memcpy(tail, p, left);
  tail[left] = 0x80;
  const size_t blocks = left + 9 > 64 ? 2 : 1;
  const uint64_t bits = uint64_t(data.size()) * 8;
  for (int i = 0; i < 8; ++i) tail[blocks * 64 - 1 - i] = uint8_t(bits >> (8 * i));
  for (size_t i = 0; i < blocks; ++i) block(state, tail + 64 * i);
  std::array<uint8_t, 4 * N> out;
  for (size_t i = 0; i < N; ++i) {
    for (size_t j = 0; j < 4; ++j) out[4 * i + j] = uint8_t(state[i] >> (24 - 8 * j));
  }
  return out;
}

// A big-endian 32-bit word of a block.
inline uint32_t BigEndianWord(const uint8_t* p) {
  return uint32_t(p[0]) << 24 | uint32_t(p[1]) << 16 | uint32_t(p[2]) << 8 | uint32_t(p[3]);
}

// Lower-case hex of a digest.
template <size_t M>
std::string DigestHex(const std::array<uint8_t, M>& digest) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string hex;
  hex.reserve(2 * M);
  for (uint8_t b : digest) {
    hex.push_back(kHex[b >> 4]);
    hex.push_back(kHex[b & 15]);
  }
  return hex;
}

}  // namespace shardis::core::internal
