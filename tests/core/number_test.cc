#include "core/number.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <utility>

namespace shardis::core {
namespace {

using namespace std::string_literals;

bool Int(std::string_view s, int64_t expected) {
  int64_t v = 12345;
  return ParseInt64(s, &v) && v == expected;
}
bool NotInt(std::string_view s) {
  int64_t v;
  return !ParseInt64(s, &v);
}

TEST(NumberTest, ParseInt64) {
  EXPECT_TRUE(Int("0", 0));
  EXPECT_TRUE(Int("1", 1));
  EXPECT_TRUE(Int("-1", -1));
  EXPECT_TRUE(Int("1234567890", 1234567890));
  EXPECT_TRUE(Int("9223372036854775807", std::numeric_limits<int64_t>::max()));
  EXPECT_TRUE(Int("-9223372036854775808", std::numeric_limits<int64_t>::min()));
  for (const char* bad : {"", "-", "+1", " 1", "1 ", "01", "-0", "00", "-01", "1a", "0x10", "1.0",
                          "9223372036854775808", "-9223372036854775809", "18446744073709551616",
                          "99999999999999999999", "1e3"}) {
    EXPECT_TRUE(NotInt(bad)) << bad;
  }
  EXPECT_TRUE(NotInt("1\0"s));
}

// Redis' parseScanCursorOrReply is strtoul over the whole argument.
TEST(NumberTest, ParseScanCursor) {
  uint64_t v = 7;
  EXPECT_TRUE(ParseScanCursor("", &v) && v == 0);
  EXPECT_TRUE(ParseScanCursor("+5", &v) && v == 5);
  EXPECT_TRUE(ParseScanCursor("007", &v) && v == 7);
  EXPECT_TRUE(ParseScanCursor("-1", &v) && v == UINT64_MAX);
  EXPECT_TRUE(ParseScanCursor("18446744073709551615", &v) && v == UINT64_MAX);
  EXPECT_FALSE(ParseScanCursor("18446744073709551616", &v));
  EXPECT_FALSE(ParseScanCursor(" 1", &v));
  EXPECT_FALSE(ParseScanCursor("1 ", &v));
  EXPECT_FALSE(ParseScanCursor("+", &v));
  EXPECT_FALSE(ParseScanCursor("x", &v));
}

TEST(NumberTest, FormatInt64RoundTrips) {
  std::mt19937_64 rng(1);
  std::vector<int64_t> values = {0,
                                 1,
                                 -1,
                                 9,
                                 10,
                                 99,
                                 100,
                                 -100,
                                 std::numeric_limits<int64_t>::max(),
                                 std::numeric_limits<int64_t>::min()};
  for (int i = 0; i < 100000; ++i) values.push_back(static_cast<int64_t>(rng() >> (rng() % 64)));
  for (int64_t v : values) {
    char buf[kInt64BufSize];
    const std::string s(buf, FormatInt64(v, buf));
    ASSERT_EQ(s, std::to_string(v));
    ASSERT_EQ(Int64ToString(v), s);
    int64_t back;
    ASSERT_TRUE(ParseInt64(s, &back));
    ASSERT_EQ(back, v);
  }
}

bool Dbl(std::string_view s, double expected) {
  double v = 12345;
  return ParseDouble(s, &v) && (v == expected || (std::isinf(v) && v == expected)) &&
         std::signbit(v) == std::signbit(expected);
}
bool NotDbl(std::string_view s) {
  double v;
  return !ParseDouble(s, &v);
}

TEST(NumberTest, ParseDouble) {
  EXPECT_TRUE(Dbl("0", 0));
  EXPECT_TRUE(Dbl("-0", -0.0));
  EXPECT_TRUE(Dbl("1.5", 1.5));
  EXPECT_TRUE(Dbl("+1.5", 1.5));
  EXPECT_TRUE(Dbl(".5", 0.5));
  EXPECT_TRUE(Dbl("5.", 5));
  EXPECT_TRUE(Dbl("1e3", 1000));
  EXPECT_TRUE(Dbl("0x10", 16));  // strtod accepts hex, so does Redis
  EXPECT_TRUE(Dbl("inf", HUGE_VAL));
  EXPECT_TRUE(Dbl("+inf", HUGE_VAL));
  EXPECT_TRUE(Dbl("-inf", -HUGE_VAL));
  EXPECT_TRUE(Dbl("-Infinity", -HUGE_VAL));
  EXPECT_TRUE(Dbl("4.9e-324", 4.9e-324));                         // a denormal is kept
  EXPECT_TRUE(Dbl("0." + std::string(500, '0') + "1e500", 0.1));  // longer than the stack copy
  for (const char* bad : {"", " 1", "\t1", "1 ", "abc", "1.5x", "nan", "NaN", "-nan", "1e400",
                          "-1e400", "1e-400", "--1", "."}) {
    EXPECT_TRUE(NotDbl(bad)) << bad;
  }
  EXPECT_TRUE(NotDbl("1\0"s));
}

TEST(NumberTest, ParseLongDouble) {
  long double v;
  ASSERT_TRUE(ParseLongDouble("1.5", &v));
  EXPECT_EQ(v, 1.5L);
  ASSERT_TRUE(ParseLongDouble("1e400", &v));  // in range for an x87 long double
  EXPECT_EQ(v, 1e400L);
  ASSERT_TRUE(ParseLongDouble("-inf", &v));
  EXPECT_TRUE(std::isinf(v) && v < 0);
  for (const char* bad : {"", " 1", "1 ", "abc", "nan", "1e5000", "-1e5000", "1e-5000", "0x"}) {
    EXPECT_FALSE(ParseLongDouble(bad, &v)) << bad;
  }
  // MAX_LONG_DOUBLE_CHARS: 5119 characters are fine, 5120 are not.
  EXPECT_TRUE(ParseLongDouble("1." + std::string(5117, '0'), &v));
  EXPECT_FALSE(ParseLongDouble("1." + std::string(5118, '0'), &v));
}

// ZSCAN of a skiplist-encoded zset (ld2string LD_STR_AUTO), redis-server 7.0.15 and 7.2.4 alike.
TEST(NumberTest, FormatLongDoubleAutoMatchesRedis) {
  const std::pair<double, const char*> cases[] = {
      {0.1, "0.10000000000000001"},
      {-0.0, "-0"},
      {0.0, "0"},
      {12345678901234567.0, "12345678901234568"},
      {1e300, "1.0000000000000001e+300"},
      {1e-300, "1e-300"},
      {123.456, "123.456"},
      {4503599627370495.5, "4503599627370495.5"},
      {1e16, "10000000000000000"},
      {1e17, "1e+17"},
      {1e18, "1e+18"},
      {0.30000000000000004, "0.30000000000000004"},
      {2.5, "2.5"},
      {HUGE_VAL, "inf"},
      {-HUGE_VAL, "-inf"},
  };
  for (const auto& [in, out] : cases) EXPECT_EQ(FormatLongDoubleAuto(in), out) << in;
  EXPECT_EQ(FormatLongDoubleAuto(std::nan("")), "nan");
}

// INCRBYFLOAT k <in> on a missing key, redis-server 7.0.15.
TEST(NumberTest, FormatLongDoubleMatchesRedis) {
  const std::pair<const char*, const char*> cases[] = {
      {"10.5", "10.5"},
      {"5.0e3", "5000"},
      {"3.0e-17", "0.00000000000000003"},
      {"2e-17", "0.00000000000000002"},
      {"1e-18", "0"},
      {"-1e-18", "0"},  // "-0.00000000000000000" -> "-0" -> "0"
      {"-0", "0"},
      {"1e20", "100000000000000000000"},
      {"0.1", "0.1"},
      {"1.1", "1.1"},
      {"-3.25", "-3.25"},
      {"123456789.123456789", "123456789.12345678899873747"},
  };
  for (const auto& [in, out] : cases) {
    long double v;
    ASSERT_TRUE(ParseLongDouble(in, &v)) << in;
    EXPECT_EQ(FormatLongDouble(v), out) << in;
  }
  // SET k 0.1; INCRBYFLOAT k 0.2 -> "0.3" (long double arithmetic, then 17 decimals).
  EXPECT_EQ(FormatLongDouble(0.1L + 0.2L), "0.3");
  // Huge values print every digit, beyond the stack buffer.
  long double big;
  ASSERT_TRUE(ParseLongDouble("1e308", &big));
  EXPECT_EQ(FormatLongDouble(big).size(), 308u);
  EXPECT_EQ(FormatLongDouble(big).substr(0, 40), "9999999999999999999668587965584564566056");
  EXPECT_EQ(FormatLongDouble(1e4932L).substr(0, 60),
            "100000000000000000000601894938796389132383777425453311477378");
  EXPECT_EQ(FormatLongDouble(HUGE_VALL), "inf");
  EXPECT_EQ(FormatLongDouble(-HUGE_VALL), "-inf");
}


TEST(NumberTest, ParseCLongPrefixReadsLikeStrtol) {
  EXPECT_EQ(ParseCLongPrefix("42"), 42);
  EXPECT_EQ(ParseCLongPrefix(" \t\v+42abc"), 42);
  EXPECT_EQ(ParseCLongPrefix("-7\r\n"), -7);
  EXPECT_EQ(ParseCLongPrefix(""), 0);
  EXPECT_EQ(ParseCLongPrefix("abc"), 0);
  EXPECT_EQ(ParseCLongPrefix("- 1"), 0);
  EXPECT_EQ(ParseCLongPrefix("9223372036854775807"), INT64_MAX);
  EXPECT_EQ(ParseCLongPrefix("9223372036854775808"), INT64_MAX);
  EXPECT_EQ(ParseCLongPrefix("-9223372036854775808"), INT64_MIN);
  EXPECT_EQ(ParseCLongPrefix("-99999999999999999999999"), INT64_MIN);
  EXPECT_EQ(ParseCLongPrefix(std::string_view("12\0" "3", 4)), 12);
}

}  // namespace
}  // namespace shardis::core
