#include "core/lzf.h"

#include <gtest/gtest.h>

#include <random>
#include <string>

namespace shardis::core {
namespace {

std::string Compress(std::string_view in, size_t cap) {
  std::string out(cap, '\0');
  size_t n = LzfCompress(in, out.data(), cap);
  out.resize(n);
  return out;
}

std::string RoundTrip(std::string_view in) {
  std::string c = Compress(in, in.size() + in.size() / 16 + 64);
  EXPECT_GT(c.size(), 0u);
  std::string back(in.size(), '\0');
  EXPECT_TRUE(LzfDecompress(c, back.data(), back.size()));
  return back;
}

TEST(Lzf, KnownVectorsDecompress) {
  // Hand-assembled streams from the format: a literal run of 3 ("abc"), then a back reference of
  // length 1+2 = 3 at distance 2+1 = 3 (control 0x20, offset byte 0x02): "abcabc".
  const std::string a("\x02"
                      "abc\x20\x02",
                      6);
  std::string out(6, '\0');
  ASSERT_TRUE(LzfDecompress(a, out.data(), 6));
  EXPECT_EQ(out, "abcabc");
  // An overlapping reference repeats one byte: "a" then length 7+3+2 = 12 at distance 1
  // (control 0xe0, extra length byte 3, offset byte 0): 13 'a's.
  const std::string b("\x00"
                      "a\xe0\x03\x00",
                      5);
  std::string out2(13, '\0');
  ASSERT_TRUE(LzfDecompress(b, out2.data(), 13));
  EXPECT_EQ(out2, std::string(13, 'a'));
}

TEST(Lzf, RedisCompressedBytes) {
  // What Redis 7.0's lzf_compress makes of 40 'a's (from redis-server 7.0's DUMP of SET k <40 x
  // a>: c3 09 28 then these 9 bytes): literal "aa", a reference of 7+27+2 = 36 bytes at distance
  // 1, literal "aa".
  const std::string redis("\x01"
                          "aa\xe0\x1b\x00\x01"
                          "aa",
                          9);
  std::string out(40, '\0');
  ASSERT_TRUE(LzfDecompress(redis, out.data(), 40));
  EXPECT_EQ(out, std::string(40, 'a'));
  EXPECT_FALSE(LzfDecompress(redis, out.data(), 39));
}

TEST(Lzf, RefusesMalformedStreams) {
  std::string out(16, '\0');
  // Literal run longer than the input.
  EXPECT_FALSE(LzfDecompress(std::string("\x05" "ab", 3), out.data(), 6));
  // Reference before the start of the output.
  EXPECT_FALSE(LzfDecompress(std::string("\x00" "a\x20\x05", 4), out.data(), 4));
  // Truncated reference.
  EXPECT_FALSE(LzfDecompress(std::string("\x00" "a\x20", 3), out.data(), 4));
  // Output longer than the room.
  EXPECT_FALSE(LzfDecompress(std::string("\x03" "abcd", 5), out.data(), 3));
  // Output shorter than promised.
  EXPECT_FALSE(LzfDecompress(std::string("\x01" "ab", 3), out.data(), 4));
}

TEST(Lzf, RoundTrips) {
  std::mt19937_64 rng(42);
  std::vector<std::string> inputs = {"a", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
                                     std::string(100000, 'x')};
  std::string text;
  for (int i = 0; i < 5000; ++i) text += "key:" + std::to_string(i % 97) + " value ";
  inputs.push_back(text);
  std::string random(70000, '\0');
  for (char& c : random) c = static_cast<char>(rng());
  inputs.push_back(random);
  std::string mixed;
  for (int i = 0; i < 20000; ++i) mixed.push_back(static_cast<char>(rng() % 4 + 'a'));
  inputs.push_back(mixed);
  for (const std::string& in : inputs) EXPECT_EQ(RoundTrip(in), in) << in.size();
}

TEST(Lzf, CompressesRepetitiveAndGivesUpOnRandom) {
  std::string text;
  for (int i = 0; i < 1000; ++i) text += "hello world ";
  std::string c = Compress(text, text.size() - 4);
  EXPECT_GT(c.size(), 0u);
  EXPECT_LT(c.size(), text.size() / 10);
  std::mt19937_64 rng(7);
  std::string random(1000, '\0');
  for (char& ch : random) ch = static_cast<char>(rng());
  // Redis asks for 4 bytes saved: random bytes cannot give that.
  EXPECT_EQ(Compress(random, random.size() - 4).size(), 0u);
}

TEST(Lzf, NeverWritesPastCapacity) {
  std::string text;
  for (int i = 0; i < 300; ++i) text += std::to_string(i * 31 % 17);
  std::string full = Compress(text, text.size() * 2);
  ASSERT_GT(full.size(), 0u);
  for (size_t cap = 0; cap < full.size() + 3; ++cap) {
    std::string out(cap + 8, '\x55');
    size_t n = LzfCompress(text, out.data(), cap);
    EXPECT_TRUE(n == 0 || n <= cap) << cap;
    for (size_t i = cap; i < out.size(); ++i) ASSERT_EQ(out[i], '\x55') << cap;
    if (n > 0) {
      std::string back(text.size(), '\0');
      EXPECT_TRUE(LzfDecompress(std::string_view(out.data(), n), back.data(), back.size()));
      EXPECT_EQ(back, text);
    }
  }
}

}  // namespace
}  // namespace shardis::core
