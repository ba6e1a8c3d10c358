#include "core/double_format.h"

#include <glog/logging.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/number.h"

namespace shardis::core {

namespace {

// A number f * 2^e with a 64-bit significand: Loitsch's "do-it-yourself floating point".
struct DiyFp {
  uint64_t f;
  int e;
};

// The product's upper 64 bits, rounded to nearest with ties up (Loitsch's multiplication). The
// rounding is part of the result: Redis' digits depend on it.
DiyFp Multiply(DiyFp a, DiyFp b) {
  const unsigned __int128 product = static_cast<unsigned __int128>(a.f) * b.f;
  const unsigned __int128 half = static_cast<unsigned __int128>(1) << 63;
  return {static_cast<uint64_t>((product + half) >> 64), a.e + b.e + 64};
}

// Shifts x left until its top bit is set.
DiyFp Normalized(DiyFp x) {
  const int shift = __builtin_clzll(x.f);
  return {x.f << shift, x.e - shift};
}

// 10^k for k = -348, -340, ..., 340 as f * 2^e with f rounded to nearest 64 bits, top bit set.
// Made once with exact rational arithmetic in Python:
//   from fractions import Fraction
//   for k in range(-348, 341, 8):
//     v = Fraction(10) ** k
//     e = v.numerator.bit_length() - v.denominator.bit_length() - 64
//     while v / Fraction(2) ** e >= 2 ** 64: e += 1
//     while v / Fraction(2) ** e < 2 ** 63: e -= 1
//     print(f"{{0x{round(v / Fraction(2) ** e):016X}, {e}, {k}}},")
// (no value of the table is a tie, so Python's rounding of halves does not matter).
struct CachedPower {
  uint64_t f;
  int e;
  int k;
};
constexpr CachedPower kCachedPowers[] = {
    {0xFA8FD5A0081C0288, -1220, -348},
    {0xBAAEE17FA23EBF76, -1193, -340},
    {0x8B16FB203055AC76, -1166, -332},
    {0xCF42894A5DCE35EA, -1140, -324},
    {0x9A6BB0AA55653B2D, -1113, -316},
    {0xE61ACF033D1A45DF, -1087, -308},
    {0xAB70FE17C79AC6CA, -1060, -300},
    {0xFF77B1FCBEBCDC4F, -1034, -292},
    {0xBE5691EF416BD60C, -1007, -284},
    {0x8DD01FAD907FFC3C, -980, -276},
    {0xD3515C2831559A83, -954, -268},
    {0x9D71AC8FADA6C9B5, -927, -260},
    {0xEA9C227723EE8BCB, -901, -252},
    {0xAECC49914078536D, -874, -244},
    {0x823C12795DB6CE57, -847, -236},
    {0xC21094364DFB5637, -821, -228},
    {0x9096EA6F3848984F, -794, -220},
    {0xD77485CB25823AC7, -768, -212},
    {0xA086CFCD97BF97F4, -741, -204},
    {0xEF340A98172AACE5, -715, -196},
    {0xB23867FB2A35B28E, -688, -188},
    {0x84C8D4DFD2C63F3B, -661, -180},
    {0xC5DD44271AD3CDBA, -635, -172},
    {0x936B9FCEBB25C996, -608, -164},
    {0xDBAC6C247D62A584, -582, -156},
    {0xA3AB66580D5FDAF6, -555, -148},
    {0xF3E2F893DEC3F126, -529, -140},
    {0xB5B5ADA8AAFF80B8, -502, -132},
    {0x87625F056C7C4A8B, -475, -124},
    {0xC9BCFF6034C13053, -449, -116},
    {0x964E858C91BA2655, -422, -108},
    {0xDFF9772470297EBD, -396, -100},
    {0xA6DFBD9FB8E5B88F, -369, -92},
    {0xF8A95FCF88747D94, -343, -84},
    {0xB94470938FA89BCF, -316, -76},
    {0x8A08F0F8BF0F156B, -289, -68},
    {0xCDB02555653131B6, -263, -60},
    {0x993FE2C6D07B7FAC, -236, -52},
    {0xE45C10C42A2B3B06, -210, -44},
    {0xAA242499697392D3, -183, -36},
    {0xFD87B5F28300CA0E, -157, -28},
    {0xBCE5086492111AEB, -130, -20},
    {0x8CBCCC096F5088CC, -103, -12},
    {0xD1B71758E219652C, -77, -4},
    {0x9C40000000000000, -50, 4},
    {0xE8D4A51000000000, -24, 12},
    {0xAD78EBC5AC620000, 3, 20},
    {0x813F3978F8940984, 30, 28},
    {0xC097CE7BC90715B3, 56, 36},
    {0x8F7E32CE7BEA5C70, 83, 44},
    {0xD5D238A4ABE98068, 109, 52},
    {0x9F4F2726179A2245, 136, 60},
    {0xED63A231D4C4FB27, 162, 68},
    {0xB0DE65388CC8ADA8, 189, 76},
    {0x83C7088E1AAB65DB, 216, 84},
    {0xC45D1DF942711D9A, 242, 92},
    {0x924D692CA61BE758, 269, 100},
    {0xDA01EE641A708DEA, 295, 108},
    {0xA26DA3999AEF774A, 322, 116},
    {0xF209787BB47D6B85, 348, 124},
    {0xB454E4A179DD1877, 375, 132},
    {0x865B86925B9BC5C2, 402, 140},
    {0xC83553C5C8965D3D, 428, 148},
    {0x952AB45CFA97A0B3, 455, 156},
    {0xDE469FBD99A05FE3, 481, 164},
    {0xA59BC234DB398C25, 508, 172},
    {0xF6C69A72A3989F5C, 534, 180},
    {0xB7DCBF5354E9BECE, 561, 188},
    {0x88FCF317F22241E2, 588, 196},
    {0xCC20CE9BD35C78A5, 614, 204},
    {0x98165AF37B2153DF, 641, 212},
    {0xE2A0B5DC971F303A, 667, 220},
    {0xA8D9D1535CE3B396, 694, 228},
    {0xFB9B7CD9A4A7443C, 720, 236},
    {0xBB764C4CA7A44410, 747, 244},
    {0x8BAB8EEFB6409C1A, 774, 252},
    {0xD01FEF10A657842C, 800, 260},
    {0x9B10A4E5E9913129, 827, 268},
    {0xE7109BFBA19C0C9D, 853, 276},
    {0xAC2820D9623BF429, 880, 284},
    {0x80444B5E7AA7CF85, 907, 292},
    {0xBF21E44003ACDD2D, 933, 300},
    {0x8E679C2F5E44FF8F, 960, 308},
    {0xD433179D9C8CB841, 986, 316},
    {0x9E19DB92B4E31BA9, 1013, 324},
    {0xEB96BF6EBADF77D9, 1039, 332},
    {0xAF87023B9BF0EE6B, 1066, 340},
};
constexpr int kCachedPowersCount = sizeof(kCachedPowers) / sizeof(kCachedPowers[0]);
constexpr int kFirstCachedK = -348;
constexpr int kCachedKStep = 8;

// The scaled value's binary exponent must lie in [-60, -32]: then its integer part fits 32 bits
// and is at least 8 (there is a first digit), and its fraction, below 2^60, can be multiplied by
// 10 without overflow. For some exponents two table entries qualify; Redis' fpconv takes the
// smaller power of ten, and the choice changes the digits, so that is the rule here too.
constexpr int kMinScaledExp = -60;
constexpr int kMaxScaledExp = -32;

const CachedPower& CachedPowerFor(int e) {
  const auto reaches_min = [e](int i) { return e + kCachedPowers[i].e + 64 >= kMinScaledExp; };
  // 10^k * 2^e reaches 2^kMinScaledExp * 2^63 when k >= (kMinScaledExp - 1 - e) * log10(2):
  // start there and let the table's own exponents settle the last step.
  const double k = std::ceil((kMinScaledExp - 1 - e) * 0.30102999566398114);
  int i = std::clamp(static_cast<int>(std::ceil((k - kFirstCachedK) / kCachedKStep)), 0,
                     kCachedPowersCount - 1);
  while (i > 0 && reaches_min(i - 1)) --i;
  while (!reaches_min(i)) ++i;
  DCHECK_LE(e + kCachedPowers[i].e + 64, kMaxScaledExp);
  return kCachedPowers[i];
}

constexpr uint64_t kPowersOfTen[] = {1,
                                     10,
                                     100,
                                     1000,
                                     10000,
                                     100000,
                                     1000000,
                                     10000000,
                                     100000000,
                                     1000000000};

// Grisu2's last step: the digits so far name a number `rest` below the scaled upper boundary
// (in units where one step of the last digit is `unit`), and `to_value` is how far the scaled
// value lies below that boundary. While one more step down stays inside the interval and brings
// the number closer to the value, take it.
void MoveLastDigitTowardValue(char* digits, int n, uint64_t delta, uint64_t rest, uint64_t unit,
                              uint64_t to_value) {
  while (rest < to_value && delta - rest >= unit &&
         (rest + unit < to_value || to_value - rest > rest + unit - to_value)) {
    --digits[n - 1];
    rest += unit;
  }
}

// Grisu2 of a positive finite double: writes its digits (no leading zero) and returns their
// count; the value is digits * 10^*exp10.
int Grisu2Digits(double d, char* digits, int* exp10) {
  uint64_t bits;
  std::memcpy(&bits, &d, sizeof(bits));
  const uint64_t mantissa = bits & ((uint64_t{1} << 52) - 1);
  const int biased_exp = static_cast<int>(bits >> 52) & 0x7ff;
  constexpr uint64_t kHiddenBit = uint64_t{1} << 52;
  const DiyFp v = biased_exp != 0 ? DiyFp{mantissa | kHiddenBit, biased_exp - 1075}
                                  : DiyFp{mantissa, -1074};

  // The boundaries: halfway to the neighbouring doubles. The one below is closer when v is a
  // power of two; fpconv takes it so for the smallest normal double too (its neighbour below is
  // a subnormal one ulp away), which narrows the interval there, and so do we.
  const DiyFp upper = Normalized({(v.f << 1) + 1, v.e - 1});
  const bool closer_below = v.f == kHiddenBit;
  DiyFp lower = closer_below ? DiyFp{(v.f << 2) - 1, v.e - 2} : DiyFp{(v.f << 1) - 1, v.e - 1};
  lower = {lower.f << (lower.e - upper.e), upper.e};

  const CachedPower& c = CachedPowerFor(upper.e);
  const DiyFp cached{c.f, c.e};
  const DiyFp w = Multiply(Normalized(v), cached);
  // The products are off by at most one unit: shrink the interval so it holds only numbers
  // that are surely inside the real one.
  DiyFp high = Multiply(upper, cached);
  DiyFp low = Multiply(lower, cached);
  --high.f;
  ++low.f;

  // Digits of `high`, stopping as soon as what remains is inside the interval (below delta).
  const int shift = -high.e;
  const uint64_t one = uint64_t{1} << shift;
  uint32_t integral = static_cast<uint32_t>(high.f >> shift);
  uint64_t fraction = high.f & (one - 1);
  uint64_t delta = high.f - low.f;
  const uint64_t to_value = high.f - w.f;
  int n = 0;
  // Integral part: 10 positions, 10^9 down to 10^0 (leading zeros are not written).
  for (int kappa = 9; kappa >= 0; --kappa) {
    const uint64_t divisor = kPowersOfTen[kappa];
    const uint32_t digit = static_cast<uint32_t>(integral / divisor);
    integral -= static_cast<uint32_t>(digit * divisor);
    if (digit != 0 || n != 0) digits[n++] = static_cast<char>('0' + digit);
    const uint64_t rest = (uint64_t{integral} << shift) + fraction;
    if (rest <= delta) {
      *exp10 = -c.k + kappa;
      MoveLastDigitTowardValue(digits, n, delta, rest, divisor << shift, to_value);
      return n;
    }
  }
  // Fractional part, one digit at a time; `scale` is 10^(digits after the point).
  uint64_t scale = 1;
  for (int kappa = -1;; --kappa) {
    fraction *= 10;
    delta *= 10;
    scale *= 10;
    const uint32_t digit = static_cast<uint32_t>(fraction >> shift);
    if (digit != 0 || n != 0) digits[n++] = static_cast<char>('0' + digit);
    fraction &= one - 1;
    if (fraction < delta) {
      *exp10 = -c.k + kappa;
      MoveLastDigitTowardValue(digits, n, delta, fraction, one, to_value * scale);
      return n;
    }
  }
}

// Writes the exponent's magnitude without leading zeros (1 to 3 digits).
size_t WriteExponent(int x, char* out) {
  size_t len = 0;
  if (x >= 100) out[len++] = static_cast<char>('0' + x / 100);
  if (x >= 10) out[len++] = static_cast<char>('0' + x / 10 % 10);
  out[len++] = static_cast<char>('0' + x % 10);
  return len;
}

// fpconv's layout of digits * 10^exp10 (see FormatDoubleGrisu2). Grisu2 gives a double at most
// 17 digits (fpconv would cut an 18th in scientific form: it never comes).
size_t LayOut(const char* digits, int n, int exp10, char* out) {
  DCHECK_LE(n, 17);
  const int sci_exp = exp10 + n - 1;  // the exponent in d.ddd form
  const int sci_abs = sci_exp < 0 ? -sci_exp : sci_exp;
  if (exp10 >= 0 && exp10 <= 7) {  // an integer with at most 7 zeros after the digits
    std::memcpy(out, digits, n);
    std::memset(out + n, '0', exp10);
    return n + exp10;
  }
  if (exp10 < 0 && (exp10 > -7 || sci_abs < 4)) {  // a plain decimal
    const int before_point = n + exp10;
    if (before_point <= 0) {
      const int zeros = -before_point;
      out[0] = '0';
      out[1] = '.';
      std::memset(out + 2, '0', zeros);
      std::memcpy(out + 2 + zeros, digits, n);
      return 2 + zeros + n;
    }
    std::memcpy(out, digits, before_point);
    out[before_point] = '.';
    std::memcpy(out + before_point + 1, digits + before_point, n - before_point);
    return n + 1;
  }
  // Scientific: "d.ddd" (or "d"), 'e', the exponent's sign and magnitude.
  size_t len = 0;
  out[len++] = digits[0];
  if (n > 1) {
    out[len++] = '.';
    std::memcpy(out + len, digits + 1, n - 1);
    len += n - 1;
  }
  out[len++] = 'e';
  out[len++] = sci_exp < 0 ? '-' : '+';
  return len + WriteExponent(sci_abs, out + len);
}

}  // namespace

size_t FormatDoubleGrisu2(double d, char* buf) {
  size_t len = 0;
  if (std::signbit(d)) buf[len++] = '-';
  if (d == 0) {
    buf[len] = '0';
    return len + 1;
  }
  if (!std::isfinite(d)) {
    std::memcpy(buf + len, std::isnan(d) ? "nan" : "inf", 3);
    return len + 3;
  }
  char digits[18];
  int exp10 = 0;
  const int n = Grisu2Digits(std::fabs(d), digits, &exp10);
  return len + LayOut(digits, n, exp10, buf + len);
}

bool DoubleToInt64Exact(double d, int64_t* out) {
  constexpr double kLimit = 4611686018427387904.0;  // 2^62
  if (!(d >= -kLimit && d <= kLimit)) return false;  // NaN too
  const auto i = static_cast<int64_t>(d);
  if (static_cast<double>(i) != d) return false;
  *out = i;
  return true;
}

size_t FormatDouble(double d, char* buf) {
  if (std::isnan(d)) {  // whatever its sign bit
    std::memcpy(buf, "nan", 3);
    return 3;
  }
  // Zeros keep their sign ("-0"), which the integer path would drop.
  if (d == 0 || std::isinf(d)) return FormatDoubleGrisu2(d, buf);
  int64_t i;
  if (DoubleToInt64Exact(d, &i)) return FormatInt64(i, buf);
  return FormatDoubleGrisu2(d, buf);
}

std::string FormatDouble(double d) {
  char buf[kDoubleBufSize];
  return std::string(buf, FormatDouble(d, buf));
}

}  // namespace shardis::core
