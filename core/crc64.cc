#include "core/crc64.h"

#include <array>
#include <cstring>

namespace shardis::core {

namespace {

// The polynomial with its bits reversed, for the reflected (LSB-first) form of the CRC.
constexpr uint64_t kReflectedPoly = 0x95ac9329ac4bc9b5ull;

// Slicing-by-8: table[k][b] is the CRC of byte b followed by k zero bytes, so eight input bytes
// fold in with eight lookups instead of eight dependent shift steps.
struct Tables {
  std::array<std::array<uint64_t, 256>, 8> t{};
  constexpr Tables() {
    for (uint64_t i = 0; i < 256; ++i) {
      uint64_t crc = i;
      for (int bit = 0; bit < 8; ++bit) crc = (crc & 1) ? (crc >> 1) ^ kReflectedPoly : crc >> 1;
      t[0][i] = crc;
    }
    for (int k = 1; k < 8; ++k) {
      for (int i = 0; i < 256; ++i) t[k][i] = (t[k - 1][i] >> 8) ^ t[0][t[k - 1][i] & 0xff];
    }
  }
};

constexpr Tables kTables;

}  // namespace

uint64_t Crc64(uint64_t crc, std::string_view data) {
  const auto& t = kTables.t;
  const auto* p = reinterpret_cast<const unsigned char*>(data.data());
  size_t n = data.size();
  while (n >= 8) {
    uint64_t w;
    std::memcpy(&w, p, 8);  // little-endian host (checked in compact_value.h)
    crc ^= w;
    crc = t[7][crc & 0xff] ^ t[6][(crc >> 8) & 0xff] ^ t[5][(crc >> 16) & 0xff] ^
          t[4][(crc >> 24) & 0xff] ^ t[3][(crc >> 32) & 0xff] ^ t[2][(crc >> 40) & 0xff] ^
          t[1][(crc >> 48) & 0xff] ^ t[0][crc >> 56];
    p += 8;
    n -= 8;
  }
  while (n-- > 0) crc = t[0][(crc ^ *p++) & 0xff] ^ (crc >> 8);
  return crc;
}

}  // namespace shardis::core
