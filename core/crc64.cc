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

// The CRC is linear over GF(2): with initial value 0 and no final xor,
// crc(a + b) = crc(a) * x^(8 |b|) + crc(b) (mod the polynomial). Appending n zero bits to a CRC
// register is a 64x64 bit matrix; kZeroShifts.m[k] is the matrix for 2^k zero bytes, so
// shifting by any length takes one matrix-vector product per set bit of the length.
struct ZeroShifts {
  // A matrix is 64 columns: column i is the image of the register with only bit i set.
  using Matrix = std::array<uint64_t, 64>;
  std::array<Matrix, 64> m{};

  static constexpr uint64_t Times(const Matrix& mat, uint64_t vec) {
    uint64_t sum = 0;
    for (int i = 0; vec != 0; ++i, vec >>= 1) {
      if (vec & 1) sum ^= mat[i];
    }
    return sum;
  }
  static constexpr Matrix Square(const Matrix& mat) {
    Matrix out{};
    for (int i = 0; i < 64; ++i) out[i] = Times(mat, mat[i]);
    return out;
  }
  ZeroShifts() {
    Matrix one_bit{};  // one zero bit: shift right, folding in the polynomial for the low bit
    one_bit[0] = kReflectedPoly;
    for (int i = 1; i < 64; ++i) one_bit[i] = uint64_t{1} << (i - 1);
    Matrix mat = Square(Square(Square(one_bit)));  // 8 bits: one zero byte
    for (Matrix& slot : m) {
      slot = mat;
      mat = Square(mat);
    }
  }
};

}  // namespace

uint64_t Crc64Combine(uint64_t crc_a, uint64_t crc_b, uint64_t len_b) {
  static const ZeroShifts shifts;  // 32 KiB, built on first use
  for (int k = 0; len_b != 0; ++k, len_b >>= 1) {
    if (len_b & 1) crc_a = ZeroShifts::Times(shifts.m[k], crc_a);
  }
  return crc_a ^ crc_b;
}

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
