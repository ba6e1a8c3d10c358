#include "core/crc64.h"

#include <array>
#include <cstring>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

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

uint64_t Crc64Portable(uint64_t crc, std::string_view data) {
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

#if defined(__x86_64__)

namespace {

// Carry-less multiplication folding (the method of Intel's "Fast CRC Computation for Generic
// Polynomials Using PCLMULQDQ Instruction", reflected variant), with constants derived below.
//
// Notation: a 64-bit lane A stands for the polynomial sum A_i x^(63-i) (bit 0 is the highest
// power, as in the reflected CRC register), a 128-bit register X for sum X_i x^(127-i), so its
// low qword holds the high powers. Then clmul(A, B) stands for x * A * B: the product of two
// reflected 64-bit lanes comes out one bit short of the 128-bit frame. The constants absorb
// that factor x.
//
// The CRC of a message M is M * x^64 mod P; only M mod P matters, so the data can be folded:
// a register X followed by D more bits becomes X * x^D, reduced to 128 bits with two clmuls.

// Polynomials of degree < 64 in the normal form (bit i is x^i); P = x^64 + kPoly.
constexpr uint64_t kPoly = 0xad93d23594c935a9ull;

constexpr uint64_t Reverse(uint64_t v) {
  uint64_t r = 0;
  for (int i = 0; i < 64; ++i, v >>= 1) r = (r << 1) | (v & 1);
  return r;
}
static_assert(Reverse(kPoly) == kReflectedPoly);

// x^n mod P, as a reflected lane.
constexpr uint64_t XPowModP(int n) {
  uint64_t r = 1;
  for (int i = 0; i < n; ++i) r = (r >> 63) ? (r << 1) ^ kPoly : r << 1;
  return Reverse(r);
}

// A polynomial of degree 64 (P, and mu below; `low64` is all but the x^64 term) as the lane that
// clmul turns into the polynomial itself, the factor x included: bit i holds x^(64-i). The x^0
// term does not fit; for mu it never reaches the bits kept, for P it is added back by hand.
constexpr uint64_t Lane65(uint64_t low64) { return Reverse((low64 >> 1) | (uint64_t{1} << 63)); }

// mu = floor(x^128 / P), by long division; its x^64 term is always set, its low 64 bits are
// returned.
constexpr uint64_t BarrettMu() {
  uint64_t rem = 0, quot = 0;
  for (int i = 128; i >= 0; --i) {
    const bool top = rem >> 63;  // the x^64 term of the window once bit i is shifted in
    rem = (rem << 1) | (i == 128 ? 1 : 0);
    if (top) {
      rem ^= kPoly;
      if (i < 64) quot |= uint64_t{1} << i;
    }
  }
  return quot;
}

// Folding X = L x^64 + H forward by D bits: L * (x^(64+D) mod P) + H * (x^D mod P), each
// constant one power lower for the x of clmul. The low qword multiplies L, the high one H.
struct FoldConstants {
  uint64_t low, high;
};
constexpr FoldConstants FoldBy(int bits) { return {XPowModP(bits + 63), XPowModP(bits - 1)}; }

constexpr FoldConstants kFold1024 = FoldBy(8 * 128);  // the main loop: eight 16-byte lanes
constexpr FoldConstants kFold128 = FoldBy(128);       // one 16-byte block
// The 128 -> 64 bit step: L * x^128 + H * x^64, which is congruent to X * x^64 and below x^128.
constexpr uint64_t kX127 = XPowModP(127);
static_assert(kX127 == kFold128.high);
constexpr uint64_t kMu = Lane65(BarrettMu());
constexpr uint64_t kP = Lane65(kPoly);

__attribute__((target("pclmul,sse4.1"))) inline __m128i Fold(__m128i x, __m128i k,
                                                                __m128i next) {
  return _mm_xor_si128(_mm_xor_si128(_mm_clmulepi64_si128(x, k, 0x00),
                                     _mm_clmulepi64_si128(x, k, 0x11)),
                       next);
}

__attribute__((target("pclmul,sse4.1"))) inline __m128i Load(const unsigned char* p) {
  return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
}

// Needs at least 16 bytes.
__attribute__((target("pclmul,sse4.1"))) uint64_t Crc64Clmul(uint64_t crc, const unsigned char* p,
                                                            size_t n) {
  const __m128i k128 = _mm_set_epi64x(static_cast<long long>(kFold128.high),
                                      static_cast<long long>(kFold128.low));
  // The starting CRC lines up with the first 64 message bits, as in the table loop.
  const __m128i start = _mm_cvtsi64_si128(static_cast<long long>(crc));
  __m128i x;
  if (n >= 128) {
    // Eight independent lanes keep several clmuls in flight instead of waiting on one chain.
    const __m128i k1024 = _mm_set_epi64x(static_cast<long long>(kFold1024.high),
                                         static_cast<long long>(kFold1024.low));
    __m128i lane[8];
    for (int i = 0; i < 8; ++i) lane[i] = Load(p + 16 * i);
    lane[0] = _mm_xor_si128(lane[0], start);
    p += 128;
    n -= 128;
    for (; n >= 128; p += 128, n -= 128) {
      for (int i = 0; i < 8; ++i) lane[i] = Fold(lane[i], k1024, Load(p + 16 * i));
    }
    x = lane[0];
    for (int i = 1; i < 8; ++i) x = Fold(x, k128, lane[i]);
  } else {
    x = _mm_xor_si128(Load(p), start);
    p += 16;
    n -= 16;
  }
  for (; n >= 16; p += 16, n -= 16) x = Fold(x, k128, Load(p));

  // U = L * (x^128 mod P) + H * x^64, congruent to X * x^64 (the CRC so far) and below x^128.
  const __m128i u = _mm_xor_si128(_mm_clmulepi64_si128(x, k128, 0x10), _mm_srli_si128(x, 8));
  // Barrett: q = floor(floor(U / x^64) * mu / x^64) = floor(U / P), and U mod P = U - q * P,
  // whose low 64 bits are all that is left. The x^0 term of P left out of kP adds q.
  const __m128i consts = _mm_set_epi64x(static_cast<long long>(kP), static_cast<long long>(kMu));
  const __m128i q = _mm_clmulepi64_si128(u, consts, 0x00);
  const __m128i qp = _mm_clmulepi64_si128(q, consts, 0x10);
  crc = static_cast<uint64_t>(_mm_extract_epi64(u, 1)) ^
        static_cast<uint64_t>(_mm_extract_epi64(qp, 1)) ^
        static_cast<uint64_t>(_mm_cvtsi128_si64(q));
  return Crc64Portable(crc, std::string_view(reinterpret_cast<const char*>(p), n));
}

bool HasClmul() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("pclmul") && __builtin_cpu_supports("sse4.1");
}

}  // namespace

uint64_t Crc64(uint64_t crc, std::string_view data) {
  static const bool clmul = HasClmul();
  // Below a few blocks the setup and the final reduction cost more than the table loop.
  if (clmul && data.size() >= 64) {
    return Crc64Clmul(crc, reinterpret_cast<const unsigned char*>(data.data()), data.size());
  }
  return Crc64Portable(crc, data);
}

#else

uint64_t Crc64(uint64_t crc, std::string_view data) { return Crc64Portable(crc, data); }

#endif

}  // namespace shardis::core
