#include "core/crc64.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>

namespace shardis::core {
namespace {

TEST(Crc64, RedisCheckValue) {
  // Redis' crc64 test (crc64.c): crc64(0, "123456789") == 0xe9c6d914c4b8d9ca.
  EXPECT_EQ(Crc64(0, "123456789"), 0xe9c6d914c4b8d9caull);
}

TEST(Crc64, PortableCheckValue) {
  EXPECT_EQ(Crc64Portable(0, "123456789"), 0xe9c6d914c4b8d9caull);
}

std::string RandomBytes(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::string s(n, '\0');
  for (char& c : s) c = static_cast<char>(rng());
  return s;
}

// Crc64 takes the carry-less multiplication path where the CPU has it; every length around its
// block sizes (16, 128) and its cut-over from the table must give the table's CRC, from any
// alignment and starting CRC.
TEST(Crc64, FastPathEqualsTableEveryLength) {
  const std::string s = RandomBytes(600 + 16, 1);
  for (size_t len = 0; len <= 600; ++len) {
    for (size_t offset : {size_t{0}, size_t{1}, size_t{7}, size_t{13}}) {
      const std::string_view v(s.data() + offset, len);
      for (uint64_t crc : {uint64_t{0}, uint64_t{0xe9c6d914c4b8d9ca}, ~uint64_t{0}}) {
        ASSERT_EQ(Crc64(crc, v), Crc64Portable(crc, v)) << len << " " << offset << " " << crc;
      }
    }
  }
}

TEST(Crc64, FastPathEqualsTableLarge) {
  const std::string s = RandomBytes((size_t{1} << 20) + 200, 2);
  for (size_t len : {size_t{1} << 20, (size_t{1} << 20) + 1, (size_t{1} << 20) - 17,
                     size_t{100003}, size_t{65535}}) {
    for (size_t offset : {size_t{0}, size_t{3}, size_t{8}, size_t{101}}) {
      const std::string_view v(s.data() + offset, len);
      EXPECT_EQ(Crc64(0, v), Crc64Portable(0, v)) << len << " " << offset;
      EXPECT_EQ(Crc64(0x0123456789abcdef, v), Crc64Portable(0x0123456789abcdef, v))
          << len << " " << offset;
    }
  }
  // All zero and all one bytes, the extremes of the folded registers.
  for (char fill : {'\0', '\xff'}) {
    const std::string same(size_t{1} << 20, fill);
    EXPECT_EQ(Crc64(0, same), Crc64Portable(0, same));
    EXPECT_EQ(Crc64(~uint64_t{0}, same), Crc64Portable(~uint64_t{0}, same));
  }
}

TEST(Crc64, RedisLongerVector) {
  // The second vector of Redis' crc64 test: the classic "Lorem ipsum" paragraph with its
  // terminating NUL (Redis passes sizeof of the char array).
  const std::string li =
      "Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor incididunt "
      "ut labore et dolore magna aliqua. Ut enim ad minim veniam, quis nostrud exercitation "
      "ullamco laboris nisi ut aliquip ex ea commodo consequat. Duis aute irure dolor in "
      "reprehenderit in voluptate velit esse cillum dolore eu fugiat nulla pariatur. Excepteur "
      "sint occaecat cupidatat non proident, sunt in culpa qui officia deserunt mollit anim id "
      "est laborum.";
  EXPECT_EQ(Crc64(0, std::string_view(li.c_str(), li.size() + 1)), 0xc7794709e69683b3ull);
  EXPECT_EQ(Crc64(0, ""), 0u);
}

TEST(Crc64, IncrementalEqualsWhole) {
  std::string s;
  for (int i = 0; i < 1000; ++i) s.push_back(static_cast<char>(i * 7 + 3));
  const uint64_t whole = Crc64(0, s);
  for (size_t cut : {size_t{0}, size_t{1}, size_t{7}, size_t{8}, size_t{9}, size_t{500}, s.size()}) {
    EXPECT_EQ(Crc64(Crc64(0, std::string_view(s).substr(0, cut)), std::string_view(s).substr(cut)),
              whole)
        << cut;
  }
}

TEST(Crc64, CombineEqualsWhole) {
  std::string s;
  for (int i = 0; i < 70000; ++i) s.push_back(static_cast<char>((i * 131) ^ (i >> 5)));
  const std::string_view v(s);
  const uint64_t whole = Crc64(0, v);
  for (size_t cut : {size_t{0}, size_t{1}, size_t{8}, size_t{1000}, size_t{65536}, s.size() - 1,
                     s.size()}) {
    EXPECT_EQ(Crc64Combine(Crc64(0, v.substr(0, cut)), Crc64(0, v.substr(cut)), s.size() - cut),
              whole)
        << cut;
  }
  // Three parts, combined left to right, as the snapshot's chunks are.
  const uint64_t ab = Crc64Combine(Crc64(0, v.substr(0, 100)), Crc64(0, v.substr(100, 900)), 900);
  EXPECT_EQ(Crc64Combine(ab, Crc64(0, v.substr(1000)), s.size() - 1000), whole);
}

}  // namespace
}  // namespace shardis::core
