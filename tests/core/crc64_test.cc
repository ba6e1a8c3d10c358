#include "core/crc64.h"

#include <gtest/gtest.h>

#include <string>

namespace shardis::core {
namespace {

TEST(Crc64, RedisCheckValue) {
  // Redis' crc64 test (crc64.c): crc64(0, "123456789") == 0xe9c6d914c4b8d9ca.
  EXPECT_EQ(Crc64(0, "123456789"), 0xe9c6d914c4b8d9caull);
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
