// Redis' packed blobs as the RDB codec builds and reads them: listpack (against bytes taken from
// redis-server 7.0's DUMP output), ziplist and zipmap (assembled by hand from the format facts in
// ziplist.h: Redis 7.0 no longer writes them), and Redis' intset.
#include "core/listpack.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "core/rdb_intset.h"
#include "tests/core/rdb_test_util.h"
#include "core/ziplist.h"

namespace shardis::core {
namespace {

using testing::Hex;
using testing::ToHex;

std::vector<std::string> ReadAll(std::string_view lp) {
  std::vector<std::string> out;
  ListpackReader r(lp);
  PackedEntry e;
  char scratch[32];
  while (r.Next(&e)) out.emplace_back(e.Str(scratch));
  return out;
}

// The listpack inside redis-server 7.0's DUMP of HSET h a 1 b hello -5 300.
constexpr std::string_view kRedisHashListpack =
    "1c0000000600816102010181620285"
    "68656c6c6f06dffb02c12c02ff";

TEST(Listpack, BuildsRedisBytes) {
  ListpackBuilder b;
  for (std::string_view s : {"a", "1", "b", "hello", "-5", "300"}) b.Append(s);
  EXPECT_EQ(b.bytes(), 28u);
  EXPECT_EQ(ToHex(b.Finish()), kRedisHashListpack);
}

TEST(Listpack, ReadsRedisBytes) {
  const std::string lp = Hex(kRedisHashListpack);
  uint32_t count = 0;
  std::string why;
  ASSERT_TRUE(ValidateListpack(lp, &count, &why)) << why;
  EXPECT_EQ(count, 6u);
  EXPECT_EQ(ReadAll(lp), (std::vector<std::string>{"a", "1", "b", "hello", "-5", "300"}));
}

TEST(Listpack, EveryEncodingRoundTrips) {
  std::vector<std::string> values = {"0", "127", "128", "-1", "4095", "-4096", "4096", "32767",
                                     "-32768", "8388607", "-8388608", "8388608", "2147483647",
                                     "-2147483648", "2147483648", "9223372036854775807",
                                     "-9223372036854775808", "01", "-0", "+1", "1.5", "",
                                     std::string(63, 'x'), std::string(64, 'y'),
                                     std::string(4095, 'z'), std::string(4096, 'w'),
                                     std::string(70000, 'v')};
  ListpackBuilder b;
  size_t expected = ListpackBuilder::kHeaderSize + 1;
  for (const std::string& v : values) {
    b.Append(v);
    expected += ListpackBuilder::EntrySize(v);
  }
  EXPECT_EQ(b.bytes(), expected);
  const std::string lp = b.Finish();
  EXPECT_EQ(lp.size(), expected);
  uint32_t count;
  std::string why;
  ASSERT_TRUE(ValidateListpack(lp, &count, &why)) << why;
  EXPECT_EQ(count, values.size());
  EXPECT_EQ(ReadAll(lp), values);
  // Canonical integers are stored as integers, the rest as strings.
  ListpackReader r(lp);
  PackedEntry e;
  ASSERT_TRUE(r.Next(&e));
  EXPECT_TRUE(e.is_int);
  for (int i = 0; i < 17; ++i) ASSERT_TRUE(r.Next(&e));
  EXPECT_FALSE(e.is_int);  // "01"
}

TEST(Listpack, ManyEntriesCountUnknown) {
  ListpackBuilder b;
  for (int i = 0; i < 70000; ++i) b.AppendInt(i);
  const std::string lp = b.Finish();
  EXPECT_EQ(static_cast<uint8_t>(lp[4]), 0xff);
  EXPECT_EQ(static_cast<uint8_t>(lp[5]), 0xff);
  uint32_t count;
  std::string why;
  ASSERT_TRUE(ValidateListpack(lp, &count, &why)) << why;
  EXPECT_EQ(count, 70000u);
}

TEST(Listpack, ValidationRefusesCorruption) {
  const std::string good = Hex(kRedisHashListpack);
  uint32_t count;
  std::string why;
  // Every truncation and every single-bit flip is refused or still reads as a valid listpack;
  // never a read outside the blob (checked under ASan).
  for (size_t n = 0; n < good.size(); ++n) {
    EXPECT_FALSE(ValidateListpack(good.substr(0, n), &count, &why)) << n;
  }
  for (size_t i = 0; i < good.size(); ++i) {
    for (int bit = 0; bit < 8; ++bit) {
      std::string bad = good;
      bad[i] = static_cast<char>(bad[i] ^ (1 << bit));
      if (ValidateListpack(bad, &count, &why)) ReadAll(bad);
    }
  }
  std::string bad = good;
  bad[4] = 5;  // count
  EXPECT_FALSE(ValidateListpack(bad, &count, &why));
  EXPECT_NE(why.find("counts 5"), std::string::npos) << why;
  bad = good;
  bad[8] = 3;  // the backlen of "a"
  EXPECT_FALSE(ValidateListpack(bad, &count, &why));
  bad = good;
  bad[6] = static_cast<char>(0xf7);  // not an encoding
  EXPECT_FALSE(ValidateListpack(bad, &count, &why));
}

// ---- Ziplist: assembled by hand.

// A ziplist of the given raw entries (each "<encoding+data>"), with prevlens filled in.
std::string MakeZiplist(const std::vector<std::string>& entries) {
  std::string body;
  size_t prev = 0, tail = 10;
  for (const std::string& e : entries) {
    std::string entry;
    if (prev < 254) {
      entry.push_back(static_cast<char>(prev));
    } else {
      entry.push_back(static_cast<char>(0xfe));
      for (int i = 0; i < 4; ++i) entry.push_back(static_cast<char>((prev >> (8 * i)) & 0xff));
    }
    entry += e;
    tail = 10 + body.size();
    body += entry;
    prev = entry.size();
  }
  std::string zl(10, '\0');
  const uint32_t total = static_cast<uint32_t>(10 + body.size() + 1);
  for (int i = 0; i < 4; ++i) zl[i] = static_cast<char>((total >> (8 * i)) & 0xff);
  for (int i = 0; i < 4; ++i) zl[4 + i] = static_cast<char>((tail >> (8 * i)) & 0xff);
  zl[8] = static_cast<char>(entries.size() & 0xff);
  zl[9] = static_cast<char>(entries.size() >> 8);
  return zl + body + "\xff";
}

std::vector<std::string> ReadZiplist(std::string_view zl) {
  std::vector<std::string> out;
  ZiplistReader r(zl);
  PackedEntry e;
  char scratch[32];
  while (r.Next(&e)) out.emplace_back(e.Str(scratch));
  return out;
}

TEST(Ziplist, ReadsEveryEncoding) {
  const std::string big(300, 'q');  // makes the next prevlen take 5 bytes
  const std::string zl = MakeZiplist({
      std::string("\x05hello", 6),                             // 6-bit string
      std::string("\x41\x2c", 2) + big,                        // 14-bit string (300)
      std::string("\x80\x00\x00\x00\x03" "abc", 8),            // 32-bit string
      std::string("\xc0\x39\x30", 3),                          // int16 12345
      std::string("\xd0\xfe\xff\xff\xff", 5),                  // int32 -2
      std::string("\xe0\x00\x00\x00\x00\x01\x00\x00\x00", 9),  // int64 2^32
      std::string("\xf0\x70\x11\x01", 4),                      // int24 70000
      std::string("\xfe\x80", 2),                              // int8 -128
      std::string("\xf1", 1),                                  // immediate 0
      std::string("\xfd", 1),                                  // immediate 12
  });
  uint32_t count;
  std::string why;
  ASSERT_TRUE(ValidateZiplist(zl, &count, &why)) << why;
  EXPECT_EQ(count, 10u);
  EXPECT_EQ(ReadZiplist(zl), (std::vector<std::string>{"hello", big, "abc", "12345", "-2",
                                                      "4294967296", "70000", "-128", "0", "12"}));
}

TEST(Ziplist, ValidationRefusesCorruption) {
  const std::string good = MakeZiplist({std::string("\x01" "a", 2), std::string("\xc0\x01\x00", 3),
                                        std::string("\x02" "bc", 3)});
  uint32_t count;
  std::string why;
  ASSERT_TRUE(ValidateZiplist(good, &count, &why)) << why;
  for (size_t n = 0; n < good.size(); ++n) EXPECT_FALSE(ValidateZiplist(good.substr(0, n), &count, &why));
  for (size_t i = 0; i < good.size(); ++i) {
    for (int bit = 0; bit < 8; ++bit) {
      std::string bad = good;
      bad[i] = static_cast<char>(bad[i] ^ (1 << bit));
      if (ValidateZiplist(bad, &count, &why)) ReadZiplist(bad);
    }
  }
  std::string bad = good;
  bad[13] = 9;  // the second entry's prevlen
  EXPECT_FALSE(ValidateZiplist(bad, &count, &why));
  bad = good;
  bad[4] = 10;  // tail offset at the first entry
  EXPECT_FALSE(ValidateZiplist(bad, &count, &why));
  EXPECT_NE(why.find("tail"), std::string::npos);
  bad = good;
  bad[8] = 2;
  EXPECT_FALSE(ValidateZiplist(bad, &count, &why));
}

TEST(Zipmap, ReadsAndValidates) {
  // Two pairs: "a" -> "1" (one free byte after it), "bb" -> "xyz"; count byte 2.
  const std::string zm("\x02\x01" "a" "\x01\x01" "1" "Z" "\x02" "bb" "\x03\x00" "xyz" "\xff", 16);
  std::string why;
  ASSERT_TRUE(ValidateZipmap(zm, &why)) << why;
  ZipmapReader r(zm);
  std::string_view f, v;
  ASSERT_TRUE(r.Next(&f, &v));
  EXPECT_EQ(f, "a");
  EXPECT_EQ(v, "1");
  ASSERT_TRUE(r.Next(&f, &v));
  EXPECT_EQ(f, "bb");
  EXPECT_EQ(v, "xyz");
  EXPECT_FALSE(r.Next(&f, &v));
  for (size_t n = 0; n < zm.size(); ++n) EXPECT_FALSE(ValidateZipmap(zm.substr(0, n), &why));
  std::string bad = zm;
  bad[0] = 3;
  EXPECT_FALSE(ValidateZipmap(bad, &why));
}

// ---- Redis' intset.

TEST(RedisIntset, RedisBytes) {
  // redis-server 7.0's DUMP of SADD si 1 5 -3 carries this blob (16-bit values).
  EXPECT_EQ(ToHex(EncodeRedisIntset({-3, 1, 5})),
            "0200000003000000fdff01000500");
  std::vector<int64_t> v;
  std::string why;
  ASSERT_TRUE(DecodeRedisIntset(Hex("0200000003000000fdff01000500"), &v, &why)) << why;
}

TEST(RedisIntset, WidthsAndValidation) {
  for (const std::vector<int64_t>& values : std::vector<std::vector<int64_t>>{
           {1, 2}, {-70000, 3}, {INT64_MIN, 0, INT64_MAX}, {INT32_MIN, INT32_MAX}}) {
    const std::string blob = EncodeRedisIntset(values);
    std::vector<int64_t> back;
    std::string why;
    ASSERT_TRUE(DecodeRedisIntset(blob, &back, &why)) << why;
    EXPECT_EQ(back, values);
  }
  EXPECT_EQ(EncodeRedisIntset({1, 70000})[0], 4);
  EXPECT_EQ(EncodeRedisIntset({1, int64_t{1} << 40})[0], 8);
  std::vector<int64_t> back;
  std::string why;
  EXPECT_FALSE(DecodeRedisIntset(EncodeRedisIntset({}), &back, &why));          // empty
  EXPECT_FALSE(DecodeRedisIntset(Hex("0200000002000000050001"), &back, &why));  // short
  EXPECT_FALSE(DecodeRedisIntset(Hex("020000000200000005000500"), &back, &why));  // duplicate
  EXPECT_FALSE(DecodeRedisIntset(Hex("020000000200000005000400"), &back, &why));  // descending
  EXPECT_FALSE(DecodeRedisIntset(Hex("030000000100000005000000"), &back, &why));  // width 3
}

}  // namespace
}  // namespace shardis::core
