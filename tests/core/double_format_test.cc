#include "core/double_format.h"

#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <utility>

#include "core/number.h"

namespace shardis::core {
namespace {

std::string Grisu2(double d) {
  char buf[kDoubleBufSize];
  return std::string(buf, FormatDoubleGrisu2(d, buf));
}

double FromBits(uint64_t bits) {
  double d;
  std::memcpy(&d, &bits, sizeof(d));
  return d;
}

constexpr double kTwo62 = 4611686018427387904.0;

// d2string of Redis 7.2.4 (its fpconv_dtoa.c and util.c built outside this repository and fed
// the same doubles); the comment says which rule of the layout, or of Grisu2, a case covers.
TEST(DoubleFormatTest, FormatDoubleMatchesRedis72) {
  const std::pair<double, const char*> cases[] = {
      // Integers in [-2^62, 2^62] go through the integer printer.
      {3.0, "3"},
      {-7.0, "-7"},
      {1e18, "1000000000000000000"},
      {kTwo62, "4611686018427387904"},
      {-kTwo62, "-4611686018427387904"},
      // Past 2^62: Grisu2 digits, then up to 7 zeros, or scientific beyond.
      {kTwo62 + 1024, "4611686018427389000"},
      {-kTwo62 - 1024, "-4611686018427389000"},
      {9223372036854775808.0, "9223372036854776000"},  // 2^63
      {1.2345678901234569e+23, "123456789012345690000000"},
      {1e23, "99999999999999990000000"},  // Grisu2's digits for the double nearest 1e23
      {-1.2345678901234567e23, "-123456789012345670000000"},  // the longest: kDoubleBufSize
      {1e19, "1e+19"},
      {1e21, "1e+21"},
      // Plain decimals: at most 6 places after the point, or the first digit within 3 of it.
      {0.1, "0.1"},
      {0.30000000000000004, "0.30000000000000004"},
      {123.456, "123.456"},
      {1234567.125, "1234567.125"},
      {12345678901234.566, "12345678901234.566"},
      {0.5, "0.5"},
      {1e-6, "0.000001"},
      {2.5e-5, "0.000025"},
      {0.00123456789012345, "0.00123456789012345"},
      {-1.2345678901234567e-3, "-0.0012345678901234567"},
      // Scientific, with an exponent of 1 to 3 digits and no leading zero.
      {0.000123456789012345, "1.23456789012345e-4"},
      {1.5e-6, "1.5e-6"},
      {1e-7, "1e-7"},
      {1.5e-7, "1.5e-7"},
      {1e100, "1e+100"},
      {1e105, "1e+105"},
      {1e-105, "1e-105"},
      {1e300, "1e+300"},
      {-1.5e300, "-1.5e+300"},
      {1e-300, "1e-300"},
      {DBL_MAX, "1.7976931348623157e+308"},
      // Subnormals, and the smallest normal double (whose lower boundary fpconv takes closer).
      {5e-324, "5e-324"},
      {5e-310, "5e-310"},
      {2.2250738585072009e-308, "2.225073858507201e-308"},
      {DBL_MIN, "2.2250738585072014e-308"},
      // Grisu2 is not always shortest: std::to_chars gives 686.234879582264, 5308.628085071236,
      // 3.766057128870604e-302 and 1.559062720930599e-05 for these.
      {686.23487958226406, "686.2348795822641"},
      {5308.6280850712355, "5308.6280850712355"},
      {3.7660571288706037e-302, "3.7660571288706037e-302"},
      {1.5590627209305988e-05, "1.5590627209305988e-5"},
      // Specials.
      {0.0, "0"},
      {-0.0, "-0"},
      {HUGE_VAL, "inf"},
      {-HUGE_VAL, "-inf"},
      {std::nan(""), "nan"},
      {std::copysign(std::nan(""), -1.0), "nan"},
  };
  for (const auto& [in, out] : cases) {
    EXPECT_EQ(FormatDouble(in), out) << in;
    char buf[kDoubleBufSize];
    EXPECT_EQ(std::string(buf, FormatDouble(in, buf)), out) << in;
  }
}

// fpconv_dtoa on its own (redis.call's numeric arguments that are not integers): integers keep
// at most 7 zeros, a set sign bit is written even for zero and NaN.
TEST(DoubleFormatTest, Grisu2MatchesRedis72) {
  const std::pair<double, const char*> cases[] = {
      {3.0, "3"},
      {100.0, "100"},
      {12345678.0, "12345678"},
      {1e7, "10000000"},
      {1e8, "1e+8"},
      {1e9, "1e+9"},
      {0.1, "0.1"},
      {-0.0, "-0"},
      {0.0, "0"},
      {HUGE_VAL, "inf"},
      {-HUGE_VAL, "-inf"},
      {std::nan(""), "nan"},
      {std::copysign(std::nan(""), -1.0), "-nan"},
  };
  for (const auto& [in, out] : cases) EXPECT_EQ(Grisu2(in), out) << in;
}

TEST(DoubleFormatTest, DoubleToInt64Exact) {
  int64_t v = 1;
  EXPECT_TRUE(DoubleToInt64Exact(-0.0, &v));
  EXPECT_EQ(v, 0);
  EXPECT_TRUE(DoubleToInt64Exact(kTwo62, &v));
  EXPECT_EQ(v, int64_t{1} << 62);
  EXPECT_TRUE(DoubleToInt64Exact(-kTwo62, &v));
  EXPECT_EQ(v, -(int64_t{1} << 62));
  EXPECT_FALSE(DoubleToInt64Exact(kTwo62 + 1024, &v));
  EXPECT_FALSE(DoubleToInt64Exact(0.5, &v));
  EXPECT_FALSE(DoubleToInt64Exact(std::nan(""), &v));
  EXPECT_FALSE(DoubleToInt64Exact(HUGE_VAL, &v));
}

// Every double's text but NaN's fits the buffer and reads back as the same double (the same
// bits: -0 stays negative).
TEST(DoubleFormatTest, RandomDoublesRoundTrip) {
  std::mt19937_64 rng(17);
  for (int i = 0; i < 1000000; ++i) {
    uint64_t bits = rng();
    if (i % 4 == 1) bits &= (uint64_t{1} << 52) - 1;  // subnormal
    if (i % 4 == 2) {  // between 1 and 2^70: decimals, integers and the 2^62 edge
      bits = (bits & ~(uint64_t{0x7ff} << 52)) | (static_cast<uint64_t>(1023 + i % 70) << 52);
    }
    const double d = FromBits(bits);
    if (std::isnan(d)) continue;
    char buf[kDoubleBufSize + 1];
    const size_t len = FormatDouble(d, buf);
    ASSERT_LE(len, kDoubleBufSize);
    double back;
    ASSERT_TRUE(ParseDouble(std::string_view(buf, len), &back)) << std::string_view(buf, len);
    ASSERT_EQ(std::memcmp(&back, &d, sizeof(d)), 0) << std::string_view(buf, len);
  }
}

}  // namespace
}  // namespace shardis::core
