#include "core/compact_value.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <string_view>
#include <unordered_set>
#include <utility>
#include <vector>

#include "core/number.h"
#include "core/shard_heap.h"

namespace shardis::core {
namespace {

using Enc = CompactValue::Encoding;
using namespace std::string_literals;

// 16 or 17 bytes, all 7-bit ASCII: packed inside the cell.
bool Packable(std::string_view s) {
  return (s.size() == 16 || s.size() == 17) &&
         std::all_of(s.begin(), s.end(), [](char c) { return static_cast<uint8_t>(c) < 0x80; });
}

// The one encoding a key (FromKey) must have.
Enc ExpectedKeyEncoding(std::string_view s) {
  if (s.size() <= CompactValue::kInlineMax) return Enc::kInline;
  return Packable(s) ? Enc::kPacked : Enc::kHeap;
}

// The one encoding a string must have.
Enc ExpectedEncoding(std::string_view s) {
  int64_t v;
  if (ParseInt64(s, &v)) return Enc::kInt;
  return ExpectedKeyEncoding(s);
}

std::string Get(const CompactValue& cv) {
  char scratch[CompactValue::kScratchSize];
  return std::string(cv.GetString(scratch));
}

// Checks everything a string cell promises about s.
void CheckString(const CompactValue& cv, std::string_view s) {
  SCOPED_TRACE(testing::Message() << "string \"" << s << "\" (" << s.size() << " bytes)");
  ASSERT_TRUE(cv.IsString());
  EXPECT_EQ(cv.type(), ValueType::kString);
  EXPECT_EQ(cv.encoding(), ExpectedEncoding(s));
  EXPECT_EQ(Get(cv), s);
  EXPECT_EQ(cv.ToString(), s);
  std::string appended = "prefix:";
  cv.AppendTo(&appended);
  EXPECT_EQ(appended, "prefix:" + std::string(s));
  EXPECT_EQ(cv.StringSize(), s.size());
  EXPECT_TRUE(cv.EqualsString(s));
  EXPECT_EQ(cv.Hash(), HashBytes(s));
  if (cv.IsHeap()) {
    EXPECT_GE(cv.HeapBytes(), s.size());
    EXPECT_NE(cv.HeapData(), nullptr);
  } else {
    EXPECT_EQ(cv.HeapBytes(), 0u);
    EXPECT_EQ(cv.HeapData(), nullptr);
  }
}

// Counts the fallback heap's bytes and blocks around a test: every test must give back what it
// took (under ASan, LeakSanitizer checks the blocks themselves).
class CompactValueTest : public testing::Test {
 protected:
  void SetUp() override {
    bytes_before_ = ShardHeap::Current()->used_bytes();
    blocks_before_ = ShardHeap::Current()->live_blocks();
  }
  void TearDown() override {
    EXPECT_EQ(ShardHeap::Current()->used_bytes(), bytes_before_);
    EXPECT_EQ(ShardHeap::Current()->live_blocks(), blocks_before_);
  }
  size_t HeapUsed() const { return ShardHeap::Current()->used_bytes() - bytes_before_; }
  size_t HeapBlocks() const { return ShardHeap::Current()->live_blocks() - blocks_before_; }

  size_t bytes_before_ = 0;
  size_t blocks_before_ = 0;
};

TEST_F(CompactValueTest, Layout) {
  static_assert(sizeof(CompactValue) == 16);
  static_assert(alignof(CompactValue) == 8);
  static_assert(std::is_nothrow_move_constructible_v<CompactValue>);
  static_assert(!std::is_copy_constructible_v<CompactValue>);
  CompactValue empty;
  unsigned char raw[16];
  std::memcpy(raw, &empty, 16);
  for (unsigned char b : raw) EXPECT_EQ(b, 0) << "the empty string is all zeros";
  CheckString(empty, "");
}

TEST_F(CompactValueTest, EveryLengthAroundTheInlineLimit) {
  for (size_t n = 0; n <= 40; ++n) {
    for (char c : {'x', '\0', '\xff', '9'}) {
      std::string s(n, c);
      if (c == '9' && n > 0) s[0] = 'a';  // digits after a letter: never an int
      CompactValue cv = CompactValue::FromString(s);
      CheckString(cv, s);
      const bool packed = (n == 16 || n == 17) && c != '\xff';
      EXPECT_EQ(cv.IsInline(), n <= 15) << n;
      EXPECT_EQ(cv.IsPacked(), packed) << n;
      EXPECT_EQ(cv.IsHeap(), n >= 16 && !packed) << n;
      if (cv.IsHeap()) {
        EXPECT_EQ(cv.HeapBytes(), ShardHeap::GoodSize(n));
      }
      EXPECT_EQ(HeapBlocks(), cv.IsHeap() ? 1u : 0u);
    }
  }
  EXPECT_TRUE(CompactValue::FromString(std::string(14, 'a')).IsInline());
  EXPECT_TRUE(CompactValue::FromString(std::string(15, 'a')).IsInline());
  EXPECT_TRUE(CompactValue::FromString(std::string(16, 'a')).IsPacked());
  EXPECT_TRUE(CompactValue::FromString(std::string(17, 'a')).IsPacked());
  EXPECT_TRUE(CompactValue::FromString(std::string(18, 'a')).IsHeap());
}

// 16 and 17 ASCII bytes are packed in the cell; one byte >= 0x80 anywhere sends them to the heap.
TEST_F(CompactValueTest, PackedAsciiRoundTrips) {
  std::mt19937_64 rng(7);
  for (size_t n : {15, 16, 17, 18}) {
    for (int round = 0; round < 2000; ++round) {
      std::string s(n, ' ');
      // Every ASCII byte, 0x00 and 0x7f included, in every position over the rounds.
      for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>((round * 31 + i * 7 + rng()) & 0x7f);
      if (round == 0) s.assign(n, '\0');
      if (round == 1) s.assign(n, '\x7f');
      if (round == 2) s = ("key:" + std::string(n - 4, '0'));
      CompactValue cv = CompactValue::FromString(s);
      CheckString(cv, s);
      CompactValue key = CompactValue::FromKey(s);
      CheckString(key, s);
      EXPECT_EQ(key.encoding(), ExpectedKeyEncoding(s));
      EXPECT_EQ(HeapBlocks(), (cv.IsHeap() ? 1u : 0u) + (key.IsHeap() ? 1u : 0u));
      EXPECT_TRUE(key == cv);
      // Any one byte >= 0x80: not packable.
      std::string high = s;
      high[rng() % n] |= static_cast<char>(0x80);
      CompactValue h = CompactValue::FromString(high);
      CheckString(h, high);
      EXPECT_EQ(h.IsInline(), n <= 15);
      EXPECT_EQ(h.IsHeap(), n >= 16);
      EXPECT_FALSE(cv.EqualsString(high));
      EXPECT_FALSE(h.EqualsString(s));
      EXPECT_FALSE(cv == h);
    }
  }
}

// A packed cell equals a probe exactly when the bytes are equal: every single-bit change of the
// probe (bit 7 included, which makes it unpackable) and every length change is told apart.
TEST_F(CompactValueTest, PackedEqualsProbe) {
  for (const std::string& s :
       {"key:000000000042"s, "key:000000000042x"s, "\0\x7f\x01" "abcdefghijklmn"s,
        "\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0"s}) {
    CompactValue cv = CompactValue::FromKey(s);
    ASSERT_TRUE(cv.IsPacked()) << s;
    EXPECT_TRUE(cv.EqualsString(s));
    EXPECT_TRUE(cv.EqualsString(std::string(s)));  // another buffer
    for (size_t i = 0; i < s.size(); ++i) {
      for (int bit = 0; bit < 8; ++bit) {
        std::string probe = s;
        probe[i] ^= static_cast<char>(1 << bit);
        EXPECT_FALSE(cv.EqualsString(probe)) << i << " " << bit;
        EXPECT_FALSE(cv == CompactValue::FromKey(probe)) << i << " " << bit;
        EXPECT_NE(cv.Hash(), HashBytes(probe));
      }
    }
    EXPECT_FALSE(cv.EqualsString(s.substr(0, s.size() - 1)));
    EXPECT_FALSE(cv.EqualsString(s + "\0"s));
    EXPECT_FALSE(cv.EqualsString(s + "a"));
    EXPECT_EQ(cv.Hash(), HashBytes(s));
    // Flags are not part of the string.
    CompactValue flagged = CompactValue::FromKey(s);
    flagged.set_flags(CompactValue::kFlagMask);
    EXPECT_TRUE(flagged == cv);
    EXPECT_TRUE(flagged.EqualsString(s));
    EXPECT_EQ(flagged.Hash(), cv.Hash());
    EXPECT_EQ(flagged.ToString(), s);
    EXPECT_EQ(flagged.flags(), CompactValue::kFlagMask);
  }
  // Different lengths never compare equal, even when the packed bits would be ("...\0").
  CompactValue a = CompactValue::FromKey("0123456789abcdef");
  CompactValue b = CompactValue::FromKey("0123456789abcdef\0"s);
  EXPECT_FALSE(a == b);
  EXPECT_FALSE(a.EqualsString("0123456789abcdef\0"s));
  EXPECT_FALSE(b.EqualsString("0123456789abcdef"));
  EXPECT_NE(a.Hash(), b.Hash());
}

// APPEND, SETRANGE, SETSTRING and EditBytes into, out of and between the packed lengths.
TEST_F(CompactValueTest, PackedGrowsAndConverts) {
  CompactValue cv = CompactValue::FromString("fifteen-bytes-x");
  cv.set_flags(CompactValue::kFlag1);
  EXPECT_EQ(cv.Append("y"), 16u);  // inline -> packed 16
  EXPECT_TRUE(cv.IsPacked());
  CheckString(cv, "fifteen-bytes-xy");
  EXPECT_EQ(cv.Append("z"), 17u);  // packed 16 -> packed 17
  EXPECT_TRUE(cv.IsPacked());
  CheckString(cv, "fifteen-bytes-xyz");
  EXPECT_EQ(cv.Append("!"), 18u);  // packed 17 -> heap
  EXPECT_TRUE(cv.IsHeap());
  CheckString(cv, "fifteen-bytes-xyz!");
  EXPECT_EQ(cv.flags(), CompactValue::kFlag1);

  CompactValue p = CompactValue::FromString("0123456789abcdef");
  EXPECT_EQ(p.Append("\x80"), 17u);  // a high byte: heap
  EXPECT_TRUE(p.IsHeap());
  CheckString(p, "0123456789abcdef\x80");
  EXPECT_EQ(p.SetRange(16, "Z"), 17u);  // back to ASCII: packed again, block freed
  EXPECT_TRUE(p.IsPacked());
  CheckString(p, "0123456789abcdefZ");
  EXPECT_EQ(HeapBlocks(), 1u);  // cv's
  EXPECT_EQ(p.SetRange(3, "\xff"), 17u);  // packed -> heap
  CheckString(p, "012\xff" "456789abcdefZ");
  EXPECT_EQ(p.SetRange(0, "abc\x7f"), 17u);  // heap -> packed
  CheckString(p, "abc\x7f" "456789abcdefZ");
  EXPECT_EQ(p.SetRange(30, "w"), 31u);  // packed -> heap, zero padded
  CheckString(p, "abc\x7f" "456789abcdefZ"s + std::string(13, '\0') + "w");

  // A packed string that becomes a canonical int, and an int that becomes packed.
  CompactValue d = CompactValue::FromString("x234567890123456");
  ASSERT_TRUE(d.IsPacked());
  d.SetRange(0, "1");
  EXPECT_TRUE(d.IsInt());
  CheckString(d, "1234567890123456");
  d.SetRange(0, "0");
  EXPECT_TRUE(d.IsPacked());
  CheckString(d, "0234567890123456");
  d.EditBytes(17, [](char* b, size_t n) {
    ASSERT_EQ(n, 17u);
    b[16] = 'q';
  });
  EXPECT_TRUE(d.IsPacked());
  CheckString(d, "0234567890123456q");
  d.EditBytes(0, [](char* b, size_t) { b[0] = '\x90'; });
  EXPECT_TRUE(d.IsHeap());
  CheckString(d, "\x90" "234567890123456q");

  // SetString over a heap block: a packable string never reuses the block.
  CompactValue s = CompactValue::FromString("\xe9" + std::string(15, 'a'));
  ASSERT_TRUE(s.IsHeap());
  s.SetString(std::string(16, 'b'));
  EXPECT_TRUE(s.IsPacked());
  CheckString(s, std::string(16, 'b'));
  s.SetString(s.ToString());
  CheckString(s, std::string(16, 'b'));
  s.SetString("\xe9" + std::string(16, 'c'));
  CheckString(s, "\xe9" + std::string(16, 'c'));
  EXPECT_EQ(HeapBlocks(), 4u);  // cv, p, d and s
  // Appending its own (unpacked) bytes.
  CompactValue own = CompactValue::FromString("0123456789abcdef");
  char scratch[CompactValue::kScratchSize];
  own.Append(own.GetString(scratch));
  CheckString(own, "0123456789abcdef0123456789abcdef");
}

TEST_F(CompactValueTest, HeapStringIsOneBlockOfItsSize) {
  const std::string s(128, 'v');
  CompactValue cv = CompactValue::FromString(s);
  EXPECT_EQ(HeapBlocks(), 1u);
  EXPECT_EQ(HeapUsed(), 128u);  // mimalloc's 128-byte size class, nothing else
  EXPECT_EQ(cv.HeapBytes(), 128u);
  CheckString(cv, s);

  const std::string big(1 << 20, 'b');
  CompactValue large = CompactValue::FromString(big);
  EXPECT_EQ(HeapBlocks(), 2u);
  EXPECT_EQ(HeapUsed(), 128u + large.HeapBytes());
  EXPECT_GE(large.HeapBytes(), big.size());
  CheckString(large, big);
}

TEST_F(CompactValueTest, CanonicalIntegers) {
  const std::vector<std::pair<std::string, int64_t>> ints = {
      {"0", 0},
      {"1", 1},
      {"-1", -1},
      {"42", 42},
      {"-42", -42},
      {"100", 100},
      {"999999999999999", 999999999999999},      // 15 digits
      {"1000000000000000", 1000000000000000},    // 16 digits: would not fit inline
      {"-100000000000000", -100000000000000},    // 15 bytes
      {"-1000000000000000", -1000000000000000},  // 16 bytes
      {"9223372036854775807", std::numeric_limits<int64_t>::max()},
      {"-9223372036854775808", std::numeric_limits<int64_t>::min()},
      {"9223372036854775806", std::numeric_limits<int64_t>::max() - 1},
      {"-9223372036854775807", std::numeric_limits<int64_t>::min() + 1},
  };
  for (const auto& [s, v] : ints) {
    CompactValue cv = CompactValue::FromString(s);
    ASSERT_TRUE(cv.IsInt()) << s;
    EXPECT_EQ(cv.AsInt(), v);
    CheckString(cv, s);
    EXPECT_EQ(HeapBlocks(), 0u);
    CompactValue from_int = CompactValue::FromInt(v);
    EXPECT_TRUE(from_int == cv);
    CheckString(from_int, s);
  }
}

TEST_F(CompactValueTest, NonCanonicalIntegersStayStrings) {
  for (std::string s : {"007",
                        "00",
                        "-0",
                        "+1",
                        "+0",
                        " 1",
                        "1 ",
                        "1\n",
                        "-",
                        "--1",
                        "0x10",
                        "1e3",
                        "1.0",
                        "12a",
                        "-01",
                        "9223372036854775808",
                        "-9223372036854775809",
                        "18446744073709551616",
                        "99999999999999999999",
                        "09223372036854775807",
                        "123456789012345678901",
                        "\xef\xbc\x91" /* fullwidth 1 */}) {
    CompactValue cv = CompactValue::FromString(s);
    EXPECT_FALSE(cv.IsInt()) << s;
    CheckString(cv, s);
  }
  CompactValue with_nul = CompactValue::FromString("1\0"s);
  EXPECT_FALSE(with_nul.IsInt());
  CheckString(with_nul, "1\0"s);
}

TEST_F(CompactValueTest, EveryInt64RoundTrips) {
  std::mt19937_64 rng(7);
  std::vector<int64_t> values;
  for (int shift = 0; shift < 64; ++shift) {
    const uint64_t p = uint64_t{1} << shift;
    for (uint64_t d : {p - 1, p, p + 1}) {
      values.push_back(static_cast<int64_t>(d));
      values.push_back(static_cast<int64_t>(0 - d));  // unsigned negation: no overflow
    }
  }
  int64_t pow10 = 1;
  for (int i = 0; i < 19; ++i) {  // 10^0 .. 10^18
    if (i > 0) pow10 *= 10;
    for (int64_t d : {pow10 - 1, pow10, pow10 + 1}) {
      values.push_back(d);
      values.push_back(-d);
    }
  }
  for (int i = 0; i < 10000; ++i) values.push_back(static_cast<int64_t>(rng() >> (rng() % 64)));
  for (int64_t v : values) {
    const std::string s = Int64ToString(v);
    CompactValue cv = CompactValue::FromString(s);
    ASSERT_TRUE(cv.IsInt()) << s;
    ASSERT_EQ(cv.AsInt(), v);
    ASSERT_EQ(Get(cv), s);
    ASSERT_EQ(cv.StringSize(), s.size());
    ASSERT_EQ(cv.Hash(), HashBytes(s));
    ASSERT_TRUE(cv.EqualsString(s));
  }
}

TEST_F(CompactValueTest, RandomStringsRoundTrip) {
  // Biased towards digits and '-' so that ints and near-ints are common.
  std::mt19937_64 rng(1);
  const std::string alphabet = "0123456789-0123456789+a \x00\xff"s;
  for (int i = 0; i < 100000; ++i) {
    std::string s(rng() % 24, ' ');
    for (char& c : s) c = alphabet[rng() % alphabet.size()];
    if (rng() % 4 == 0 && !s.empty() && s[0] == '0') s[0] = '1';
    CompactValue cv = CompactValue::FromString(s);
    ASSERT_EQ(cv.encoding(), ExpectedEncoding(s)) << s;
    ASSERT_EQ(Get(cv), s);
    ASSERT_TRUE(cv.EqualsString(s));
    ASSERT_EQ(cv.Hash(), HashBytes(s));
  }
}

TEST_F(CompactValueTest, EqualityAndHashAcrossEncodings) {
  std::vector<std::string> strings = {"",
                                      "a",
                                      "12",
                                      "012",
                                      "-0",
                                      "12 ",
                                      "120",
                                      "1",
                                      "-1",
                                      std::string(14, 'k'),
                                      std::string(15, 'k'),
                                      std::string(16, 'k'),
                                      std::string(17, 'k'),
                                      "9223372036854775807",
                                      "9223372036854775808",
                                      "-9223372036854775808",
                                      "1000000000000000",
                                      "100000000000000a",
                                      std::string(100, 'z'),
                                      std::string(99, 'z') + "y"};
  std::vector<CompactValue> cells;
  for (const std::string& s : strings) cells.push_back(CompactValue::FromString(s));
  std::unordered_set<uint64_t> hashes;
  for (size_t i = 0; i < strings.size(); ++i) {
    hashes.insert(cells[i].Hash());
    CompactValue again = CompactValue::FromString(strings[i]);
    EXPECT_TRUE(again == cells[i]) << strings[i];
    EXPECT_EQ(again.Hash(), cells[i].Hash());
    for (size_t j = 0; j < strings.size(); ++j) {
      EXPECT_EQ(cells[i].EqualsString(strings[j]), i == j) << strings[i] << " vs " << strings[j];
      EXPECT_EQ(cells[i] == cells[j], i == j) << strings[i] << " vs " << strings[j];
    }
  }
  EXPECT_EQ(hashes.size(), strings.size());
  // Flags are not part of the string.
  CompactValue flagged = CompactValue::FromString("12");
  flagged.set_flags(CompactValue::kFlagMask);
  EXPECT_TRUE(flagged == cells[2]);
  EXPECT_EQ(flagged.Hash(), cells[2].Hash());
  EXPECT_TRUE(flagged.EqualsString("12"));
}

TEST_F(CompactValueTest, EqualsStringOnAPrefixOrExtension) {
  for (size_t n : {1, 14, 15, 16, 17, 64}) {
    const std::string s(n, 'q');
    CompactValue cv = CompactValue::FromString(s);
    EXPECT_FALSE(cv.EqualsString(s.substr(0, n - 1)));
    EXPECT_FALSE(cv.EqualsString(s + "q"));
    std::string last = s;
    last.back() = 'r';
    EXPECT_FALSE(cv.EqualsString(last));
    std::string first = s;
    first.front() = 'r';
    EXPECT_FALSE(cv.EqualsString(first));
  }
  CompactValue i = CompactValue::FromInt(-5);
  EXPECT_FALSE(i.EqualsString("-05"));
  EXPECT_FALSE(i.EqualsString("5"));
  EXPECT_FALSE(i.EqualsString(""));
  EXPECT_FALSE(i.EqualsString(std::string(30, '1')));
  EXPECT_TRUE(i.EqualsString("-5"));
}

TEST_F(CompactValueTest, KeysAreNeverInts) {
  for (std::string s : {"0", "123", "-1", "999999999999999", "1000000000000000",
                        "10000000000000000", "-1000000000000000", "-9223372036854775808", "007",
                        "abc", "", "sixteen-bytes-xx"}) {
    CompactValue key = CompactValue::FromKey(s);
    CompactValue value = CompactValue::FromString(s);
    EXPECT_FALSE(key.IsInt()) << s;
    EXPECT_EQ(key.encoding(), ExpectedKeyEncoding(s)) << s;
    EXPECT_EQ(Get(key), s);
    EXPECT_TRUE(key.EqualsString(s));
    EXPECT_EQ(key.Hash(), value.Hash());
    EXPECT_TRUE(key == value) << s;
    EXPECT_TRUE(value == key) << s;
    EXPECT_FALSE(key == CompactValue::FromString(s + "1")) << s;
    EXPECT_FALSE(CompactValue::FromString(s + "1") == key) << s;
  }
  EXPECT_FALSE(CompactValue::FromKey("12") == CompactValue::FromInt(13));
  EXPECT_FALSE(CompactValue::FromInt(12) == CompactValue::FromKey("12345678901234567"));
}

TEST_F(CompactValueTest, MovesStealTheBlock) {
  const std::string s(200, 'm');
  CompactValue a = CompactValue::FromString(s);
  a.set_flags(CompactValue::kFlag1);
  const void* block = a.HeapData();
  const size_t used = HeapUsed();

  CompactValue b(std::move(a));
  EXPECT_EQ(b.HeapData(), block);
  EXPECT_EQ(b.flags(), CompactValue::kFlag1);
  CheckString(b, s);
  CheckString(a, "");  // NOLINT(bugprone-use-after-move): moved-from is the empty string
  EXPECT_EQ(a.flags(), 0);
  EXPECT_EQ(HeapUsed(), used);
  EXPECT_EQ(HeapBlocks(), 1u);

  CompactValue c = CompactValue::FromString(std::string(300, 'c'));
  EXPECT_EQ(HeapBlocks(), 2u);
  c = std::move(b);  // frees c's own block
  EXPECT_EQ(HeapBlocks(), 1u);
  EXPECT_EQ(HeapUsed(), used);
  EXPECT_EQ(c.HeapData(), block);
  CheckString(c, s);

  CompactValue& alias = c;
  c = std::move(alias);  // self-move keeps the value
  CheckString(c, s);

  std::vector<CompactValue> cells;
  for (int i = 0; i < 1000; ++i)
    cells.push_back(CompactValue::FromString(std::string(20 + i, 'v')));
  EXPECT_EQ(HeapBlocks(), 1001u);  // vector growth moved cells without copying blocks
  for (int i = 0; i < 1000; ++i) ASSERT_TRUE(cells[i].EqualsString(std::string(20 + i, 'v')));
}

TEST_F(CompactValueTest, SetStringTransitionsAndBlockReuse) {
  CompactValue cv;
  cv.set_flags(CompactValue::kFlag0 | CompactValue::kFlag1);
  const std::vector<std::string> sequence = {"short",
                                             std::string(128, 'a'),
                                             std::string(120, 'b'),
                                             std::string(128, 'c'),
                                             "12345",
                                             std::string(16, 'd'),
                                             "-9223372036854775808",
                                             std::string(1000, 'e'),
                                             std::string(15, 'f'),
                                             "",
                                             std::string(17, 'g'),
                                             "9223372036854775808"};
  for (const std::string& s : sequence) {
    cv.SetString(s);
    CheckString(cv, s);
    EXPECT_EQ(cv.flags(), CompactValue::kFlag0 | CompactValue::kFlag1) << "SetString keeps flags";
    EXPECT_EQ(HeapUsed(), cv.HeapBytes());
    EXPECT_EQ(HeapBlocks(), cv.IsHeap() ? 1u : 0u);
  }

  // Same size class: the block is kept.
  cv.SetString(std::string(128, 'x'));
  const void* block = cv.HeapData();
  cv.SetString(std::string(125, 'y'));
  if (ShardHeap::kUsesMimalloc) {  // (ASan's malloc has exact sizes: no shared class)
    EXPECT_EQ(cv.HeapData(), block);
  }
  CheckString(cv, std::string(125, 'y'));
  EXPECT_EQ(HeapUsed(), cv.HeapBytes());
  cv.SetString(std::string(4096, 'z'));  // a different class: a new block of the right size
  CheckString(cv, std::string(4096, 'z'));
  EXPECT_EQ(HeapUsed(), ShardHeap::GoodSize(4096));

  cv.SetInt(77);
  CheckString(cv, "77");
  EXPECT_EQ(HeapBlocks(), 0u);
  cv.SetString(std::string(50, 'h'));
  cv.SetInt(std::numeric_limits<int64_t>::min());
  CheckString(cv, "-9223372036854775808");
  EXPECT_EQ(HeapBlocks(), 0u);
  EXPECT_EQ(cv.flags(), CompactValue::kFlag0 | CompactValue::kFlag1);
  cv.Reset();
  CheckString(cv, "");
  EXPECT_EQ(cv.flags(), 0);
}

TEST_F(CompactValueTest, SetStringFromItsOwnBytes) {
  CompactValue cv = CompactValue::FromString("inline-string");
  char scratch[CompactValue::kScratchSize];
  cv.SetString(cv.GetString(scratch).substr(7));
  CheckString(cv, "string");

  cv.SetString(std::string(40, 'a') + std::string(40, 'b'));
  cv.SetString(cv.GetString(scratch).substr(30));  // same block, overlapping move
  CheckString(cv, std::string(10, 'a') + std::string(40, 'b'));
  cv.SetString(cv.GetString(scratch).substr(45));  // heap -> inline from its own block
  CheckString(cv, std::string(5, 'b'));
  cv.SetString(std::string(300, 'p'));
  cv.SetString(cv.GetString(scratch).substr(0, 20));  // heap -> smaller heap block
  CheckString(cv, std::string(20, 'p'));
}

TEST_F(CompactValueTest, Flags) {
  CompactValue cv = CompactValue::FromString(std::string(15, 'f'));
  EXPECT_EQ(cv.flags(), 0);
  cv.SetFlag(CompactValue::kFlag1, true);
  EXPECT_FALSE(cv.HasFlag(CompactValue::kFlag0));
  EXPECT_TRUE(cv.HasFlag(CompactValue::kFlag1));
  cv.SetFlag(CompactValue::kFlag0, true);
  EXPECT_EQ(cv.flags(), CompactValue::kFlagMask);
  CheckString(cv, std::string(15, 'f'));  // the longest inline string and all flags coexist
  cv.SetFlag(CompactValue::kFlag0, false);
  EXPECT_EQ(cv.flags(), CompactValue::kFlag1);

  cv.Append("ggggg");
  EXPECT_EQ(cv.flags(), CompactValue::kFlag1);
  cv.SetRange(0, "h");
  EXPECT_EQ(cv.flags(), CompactValue::kFlag1);
  cv.SetInt(3);
  EXPECT_EQ(cv.flags(), CompactValue::kFlag1);
  int obj = 0;
  cv.SetObject(ValueType::kHash, &obj);
  EXPECT_EQ(cv.flags(), CompactValue::kFlag1);
  EXPECT_EQ(cv.object(), &obj);
  cv.set_flags(0);
  EXPECT_EQ(cv.flags(), 0);
  EXPECT_EQ(cv.type(), ValueType::kHash);
  EXPECT_EQ(cv.ReleaseObject(), &obj);  // a fake object: the cell must not free it
}

// Redis' raw encoding: APPEND, SETRANGE and the bit commands (EditBytes) leave a raw string,
// whatever it holds, until a writer of a whole value replaces it. The flags are not touched.
TEST_F(CompactValueTest, RawAfterInPlaceChanges) {
  CompactValue cv = CompactValue::FromString("1");
  cv.set_flags(CompactValue::kFlag0);
  EXPECT_FALSE(cv.raw());
  cv.Append("2");
  EXPECT_TRUE(cv.raw());
  EXPECT_TRUE(cv.IsInt());  // still stored as the int it is: INCR reads it as one
  CheckString(cv, "12");
  cv.set_flags(0);  // the shard's flags leave the raw bit alone, and the other way round
  EXPECT_TRUE(cv.raw());
  cv.set_flags(CompactValue::kFlag0);
  EXPECT_EQ(cv.flags(), CompactValue::kFlag0);
  cv.SetInt(13);
  EXPECT_FALSE(cv.raw());
  EXPECT_EQ(cv.flags(), CompactValue::kFlag0);

  cv.Append("");  // even an empty append, as Redis unshares the value anyway
  EXPECT_TRUE(cv.raw());
  cv.SetString("13");  // the same value, set as a whole
  EXPECT_FALSE(cv.raw());
  cv.SetRange(0, "");  // an empty SETRANGE changes nothing, as in Redis
  EXPECT_FALSE(cv.raw());
  cv.SetRange(1, "x");
  EXPECT_TRUE(cv.raw());
  CheckString(cv, "1x");
  cv.SetString(std::string(100, 'h'));
  EXPECT_FALSE(cv.raw());
  cv.Append("i");  // a heap string
  EXPECT_TRUE(cv.raw());
  CompactValue moved = std::move(cv);
  EXPECT_TRUE(moved.raw());
  EXPECT_FALSE(cv.raw());
  moved.Reset();
  EXPECT_FALSE(moved.raw());

  for (size_t min_size : {size_t{1}, size_t{40}}) {  // re-encoded short, and in its block
    CompactValue bits = CompactValue::FromString("");
    bits.EditBytes(min_size, [](char* p, size_t) { p[0] = '7'; });
    EXPECT_TRUE(bits.raw()) << min_size;
    bits.EditBytes(0, [](char* p, size_t) { p[0] = '8'; });
    EXPECT_TRUE(bits.raw()) << min_size;
  }
  CompactValue copy = CompactValue::FromString("5");
  copy.set_raw();
  EXPECT_TRUE(copy.raw());
  EXPECT_TRUE(copy == CompactValue::FromString("5"));  // not part of the string
  int obj = 0;
  copy.SetObject(ValueType::kHash, &obj);
  EXPECT_FALSE(copy.raw());
  EXPECT_EQ(copy.ReleaseObject(), &obj);
}

TEST_F(CompactValueTest, Objects) {
  struct FakeList {
    int items = 3;
  };
  FakeList list;
  CompactValue cv = CompactValue::FromObject(ValueType::kList, &list, 7);
  EXPECT_FALSE(cv.IsString());
  EXPECT_EQ(cv.encoding(), Enc::kObject);
  EXPECT_EQ(cv.type(), ValueType::kList);
  EXPECT_EQ(cv.object(), &list);
  EXPECT_EQ(cv.object_encoding(), 7);
  EXPECT_EQ(cv.HeapData(), &list);
  EXPECT_EQ(cv.HeapBytes(), 0u);
  cv.set_object_encoding(9);
  EXPECT_EQ(cv.object_encoding(), 9);
  EXPECT_EQ(cv.type(), ValueType::kList);
  EXPECT_FALSE(cv.EqualsString(""));
  CompactValue same = CompactValue::FromObject(ValueType::kList, &list);
  CompactValue other_type = CompactValue::FromObject(ValueType::kSet, &list);
  EXPECT_TRUE(cv == same);
  EXPECT_FALSE(cv == other_type);
  same.ReleaseObject();
  other_type.ReleaseObject();
  EXPECT_FALSE(cv == CompactValue());

  for (ValueType t : {ValueType::kHash, ValueType::kSet, ValueType::kZSet, ValueType::kStream}) {
    cv.ReleaseObject();  // fake objects: taken back before the cell would free them
    cv.SetObject(t, &list);
    EXPECT_EQ(cv.type(), t);
  }
  cv.set_flags(CompactValue::kFlag1);
  EXPECT_EQ(cv.ReleaseObject(), &list);
  CheckString(cv, "");
  EXPECT_EQ(cv.flags(), CompactValue::kFlag1);
  // A heap string is freed when an object replaces it.
  CompactValue s = CompactValue::FromString(std::string(64, 's'));
  EXPECT_EQ(HeapBlocks(), 1u);
  s.SetObject(ValueType::kZSet, &list);
  EXPECT_EQ(HeapBlocks(), 0u);
  CompactValue moved = std::move(s);
  EXPECT_EQ(moved.object(), &list);
  moved.ReleaseObject();
  moved.SetString("back to a string");
  CheckString(moved, "back to a string");
  EXPECT_EQ(list.items, 3);
}

// APPEND and SETRANGE against a std::string model, checking the canonical encoding each time.
TEST_F(CompactValueTest, AppendMatchesModel) {
  CompactValue cv;
  std::string model;
  EXPECT_EQ(cv.Append("1"), 1u);
  model += "1";
  EXPECT_TRUE(cv.IsInt());
  EXPECT_EQ(cv.Append("2"), 2u);
  model += "2";
  EXPECT_TRUE(cv.IsInt());
  EXPECT_EQ(cv.AsInt(), 12);
  EXPECT_EQ(cv.Append("a"), 3u);
  model += "a";
  CheckString(cv, model);
  EXPECT_EQ(cv.Append(""), 3u);
  for (const std::string& piece :
       std::vector<std::string>{"bcdefghijkl", "mno", "p", std::string(100, 'q'), "", "r"}) {
    EXPECT_EQ(cv.Append(piece), model.size() + piece.size());
    model += piece;
    CheckString(cv, model);
  }
  // From a 20-digit int to a 21-byte heap string.
  CompactValue i = CompactValue::FromInt(std::numeric_limits<int64_t>::min());
  i.Append("5");
  CheckString(i, "-92233720368547758085");
  // Appending its own bytes.
  char scratch[CompactValue::kScratchSize];
  const std::string before = cv.ToString();
  cv.Append(cv.GetString(scratch));
  CheckString(cv, before + before);
}

TEST_F(CompactValueTest, RepeatedAppendIsAmortised) {
  CompactValue cv = CompactValue::FromString(std::string(16, 'a'));
  std::string model(16, 'a');
  int moves = 0;
  for (int i = 0; i < 100000; ++i) {
    const void* block = cv.HeapData();
    cv.Append("b");
    model += 'b';
    if (cv.HeapData() != block) ++moves;
    ASSERT_EQ(HeapUsed(), cv.HeapBytes());
  }
  EXPECT_EQ(cv.ToString(), model);
  EXPECT_LT(moves, 40) << "appends should grow the block geometrically";
  EXPECT_LE(cv.HeapBytes(), model.size() * 2);
}

TEST_F(CompactValueTest, SetRange) {
  CompactValue cv = CompactValue::FromString("Hello World");
  EXPECT_EQ(cv.SetRange(6, "Redis"), 11u);
  CheckString(cv, "Hello Redis");
  CompactValue empty;
  EXPECT_EQ(empty.SetRange(5, "x"), 6u);
  CheckString(empty, "\0\0\0\0\0x"s);
  EXPECT_EQ(empty.SetRange(100, ""), 6u);  // an empty write changes nothing
  CheckString(empty, "\0\0\0\0\0x"s);
  // A string that becomes a canonical int and back.
  CompactValue n = CompactValue::FromString("a23");
  n.SetRange(0, "1");
  EXPECT_TRUE(n.IsInt());
  CheckString(n, "123");
  n.SetRange(0, "0");
  CheckString(n, "023");
  // A 16-byte heap string that becomes an int.
  CompactValue h = CompactValue::FromString("\xff" "111111111111111");
  ASSERT_TRUE(h.IsHeap());
  h.SetRange(0, "1");
  EXPECT_TRUE(h.IsInt());
  CheckString(h, "1111111111111111");
}

TEST_F(CompactValueTest, RandomOpsMatchModel) {
  std::mt19937_64 rng(42);
  constexpr int kCells = 64;
  std::vector<CompactValue> cells(kCells);
  std::vector<std::string> model(kCells);
  auto random_string = [&](size_t max_len) {
    std::string s(rng() % (max_len + 1), ' ');
    for (char& c : s) c = "0123456789-ab"[rng() % 13];
    return s;
  };
  for (int step = 0; step < 200000; ++step) {
    const size_t i = rng() % kCells;
    CompactValue& cv = cells[i];
    std::string& m = model[i];
    switch (rng() % 6) {
      case 0: {
        const size_t max = std::vector<size_t>{5, 20, 40, 300}[rng() % 4];
        m = random_string(max);
        cv.SetString(m);
        break;
      }
      case 1: {
        const int64_t v = static_cast<int64_t>(rng()) >> (rng() % 64);
        m = Int64ToString(v);
        cv.SetInt(v);
        break;
      }
      case 2: {
        const std::string s = random_string(rng() % 2 ? 4 : 40);
        ASSERT_EQ(cv.Append(s), m.size() + s.size());
        m += s;
        break;
      }
      case 3: {
        const size_t offset = rng() % (m.size() + 8);
        const std::string s = random_string(rng() % 2 ? 3 : 30);
        if (!s.empty()) {
          if (m.size() < offset + s.size()) m.resize(offset + s.size(), '\0');
          m.replace(offset, s.size(), s);
        }
        ASSERT_EQ(cv.SetRange(offset, s), m.size());
        break;
      }
      case 4: {
        const size_t j = rng() % kCells;
        if (j != i) {
          cv = std::move(cells[j]);
          m = std::move(model[j]);
          model[j].clear();
        }
        break;
      }
      case 5:
        if (m.size() > 200) {  // keep the strings small
          cv.Reset();
          m.clear();
        }
        break;
    }
    ASSERT_EQ(cv.encoding(), ExpectedEncoding(m)) << "step " << step;
    ASSERT_EQ(Get(cv), m) << "step " << step;
    ASSERT_TRUE(cv.EqualsString(m));
    ASSERT_EQ(cv.Hash(), HashBytes(m));
  }
  size_t heap_bytes = 0, heap_cells = 0;
  for (const CompactValue& cv : cells) {
    heap_bytes += cv.HeapBytes();
    heap_cells += cv.IsHeap();
  }
  EXPECT_EQ(HeapUsed(), heap_bytes);
  EXPECT_EQ(HeapBlocks(), heap_cells);
}

TEST_F(CompactValueTest, CountsOnAnInstalledShardHeap) {
  ShardHeap* fallback = ShardHeap::Current();
  const size_t fallback_before = fallback->used_bytes();
  ShardHeap heap;
  heap.Install();
  {
    std::vector<CompactValue> values;
    size_t expected = 0;
    for (int i = 0; i < 10000; ++i) {
      values.push_back(CompactValue::FromString(std::string(i % 300, 'k')));
      expected += values.back().HeapBytes();
    }
    EXPECT_EQ(heap.used_bytes(), expected);
    EXPECT_EQ(fallback->used_bytes(), fallback_before) << "the fallback heap was not used";
    for (size_t i = 0; i < values.size(); i += 2) values[i].Reset();
    expected = 0;
    for (const CompactValue& v : values) expected += v.HeapBytes();
    EXPECT_EQ(heap.used_bytes(), expected);
  }
  EXPECT_EQ(heap.used_bytes(), 0u);
  EXPECT_EQ(heap.live_blocks(), 0u);
  heap.Uninstall();
}

// ---- HashBytes.

TEST(HashBytesTest, DeterministicAndLengthSensitive) {
  EXPECT_EQ(HashBytes("foo"), HashBytes(std::string("foo")));
  // Every prefix of a string (the short paths overlap their loads) hashes differently.
  const std::string s(200, 'a');
  std::unordered_set<uint64_t> seen;
  for (size_t n = 0; n <= s.size(); ++n) seen.insert(HashBytes(std::string_view(s).substr(0, n)));
  EXPECT_EQ(seen.size(), s.size() + 1);
  // Only the bytes in the view count, not what follows them.
  const std::string a = "key:1xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx";
  const std::string b = "key:1yyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyy";
  for (size_t n = 0; n <= 5; ++n) EXPECT_EQ(HashBytes(a.substr(0, n)), HashBytes(b.substr(0, n)));
}

TEST(HashBytesTest, NoCollisionsOnSequentialKeys) {
  constexpr int kKeys = 1000000;
  std::vector<uint64_t> full;
  std::vector<uint32_t> low32;
  for (int i = 0; i < kKeys; ++i) {
    const uint64_t h = HashBytes("key:" + std::to_string(i));
    full.push_back(h);
    low32.push_back(static_cast<uint32_t>(h));
  }
  auto distinct = [](auto v) {
    std::sort(v.begin(), v.end());
    return static_cast<size_t>(std::unique(v.begin(), v.end()) - v.begin());
  };
  EXPECT_EQ(distinct(full), size_t{kKeys});
  // 10^6 random 32-bit values collide ~116 times; a bad low half would collide far more.
  EXPECT_GT(distinct(low32), size_t{kKeys} - 400);
}

// Flipping any one input bit flips each output bit with probability close to 1/2. The hash is
// seeded per process, so this runs against a different seed each time: the bounds are six
// standard deviations of an ideal hash's sampling error (a false alarm is ~1 in 10^4 runs).
void CheckAvalanche(size_t len, const std::vector<std::string>& inputs, size_t independent) {
  std::vector<int> flips(64 * len * 8, 0);
  for (std::string s : inputs) {
    const uint64_t h = HashBytes(s);
    for (size_t bit = 0; bit < len * 8; ++bit) {
      s[bit / 8] ^= static_cast<char>(1 << (bit % 8));
      const uint64_t d = h ^ HashBytes(s);
      s[bit / 8] ^= static_cast<char>(1 << (bit % 8));
      for (int o = 0; o < 64; ++o) flips[bit * 64 + o] += (d >> o) & 1;
    }
  }
  double worst = 0;
  for (int f : flips) worst = std::max(worst, std::abs(f / double(inputs.size()) - 0.5));
  EXPECT_LT(worst, 6 * 0.5 / std::sqrt(double(independent))) << "length " << len;
}

TEST(HashBytesTest, Avalanche) {
  // 1 and 2 bytes: every input (x and x^bit make the same pair: half as many independent ones).
  for (size_t len : {1, 2}) {
    std::vector<std::string> all;
    for (uint32_t x = 0; x < (1u << (8 * len)); ++x)
      all.emplace_back(reinterpret_cast<char*>(&x), len);
    CheckAvalanche(len, all, all.size() / 2);
  }
  std::mt19937_64 rng(3);
  for (size_t len : {3, 4, 7, 8, 12, 15, 16, 17, 24, 32, 48, 49, 100, 200}) {
    std::vector<std::string> inputs(1000, std::string(len, ' '));
    for (std::string& s : inputs) {
      for (char& c : s) c = static_cast<char>(rng());
    }
    CheckAvalanche(len, inputs, inputs.size());
  }
}

TEST(HashBytesTest, BucketsAreEven) {
  // Low bits (table buckets) and high bits (fingerprints, shard routing) of typical keys.
  constexpr int kBuckets = 1024, kKeys = 1024 * 200;
  std::vector<int> low(kBuckets), high(kBuckets);
  for (int i = 0; i < kKeys; ++i) {
    const uint64_t h = HashBytes("memtier-" + std::to_string(i));
    ++low[h % kBuckets];
    ++high[h >> 54];
  }
  // Chi-square with 1023 degrees of freedom: mean 1023, sd ~45.
  auto chi2 = [&](const std::vector<int>& counts) {
    double sum = 0, expected = double(kKeys) / kBuckets;
    for (int c : counts) sum += (c - expected) * (c - expected) / expected;
    return sum;
  };
  EXPECT_LT(chi2(low), 1023 + 6 * 45);
  EXPECT_LT(chi2(high), 1023 + 6 * 45);
}

// EditBytes (SETBIT, BITFIELD, dense HLL updates): in place in a heap block, zero-padded growth,
// and short results re-encoded (they may be ints or inline strings again).
TEST_F(CompactValueTest, EditBytesInPlaceGrowAndReencode) {
  CompactValue cv = CompactValue::FromString(std::string(100, 'a'));
  const void* block = cv.HeapData();
  EXPECT_EQ(cv.EditBytes(10, [](char* p, size_t n) {
    EXPECT_EQ(n, 100u);
    p[5] = 'b';
  }), 100u);
  EXPECT_EQ(cv.HeapData(), block);  // the same block
  EXPECT_EQ(cv.ToString(), std::string(5, 'a') + "b" + std::string(94, 'a'));

  EXPECT_EQ(cv.EditBytes(200, [](char* p, size_t n) {
    EXPECT_EQ(n, 200u);
    EXPECT_EQ(p[150], '\0');
    p[199] = 'z';
  }), 200u);
  EXPECT_EQ(cv.StringSize(), 200u);
  EXPECT_EQ(cv.ToString().substr(100, 99), std::string(99, '\0'));
  EXPECT_EQ(cv.ToString().back(), 'z');

  // "1" -> "3": an int stays an int.
  CompactValue n = CompactValue::FromInt(1);
  n.EditBytes(1, [](char* p, size_t) { p[0] = '3'; });
  EXPECT_TRUE(n.IsInt());
  EXPECT_EQ(n.AsInt(), 3);
  // An int grown to 4 bytes is an inline string.
  n.EditBytes(4, [](char*, size_t) {});
  EXPECT_EQ(n.encoding(), CompactValue::Encoding::kInline);
  EXPECT_EQ(n.ToString(), "3\0\0\0"s);
  // A short string grown past 20 bytes lands on the heap; flags are kept.
  n.set_flags(CompactValue::kFlag1);
  n.EditBytes(30, [](char* p, size_t) { p[29] = 'x'; });
  EXPECT_TRUE(n.IsHeap());
  EXPECT_EQ(n.StringSize(), 30u);
  EXPECT_TRUE(n.HasFlag(CompactValue::kFlag1));
  // A 16..20-byte heap string edited into a canonical int becomes an int.
  CompactValue h = CompactValue::FromString("12345678901234567x");
  ASSERT_TRUE(h.IsHeap());
  h.EditBytes(0, [](char* p, size_t) { p[17] = '9'; });
  EXPECT_TRUE(h.IsInt());
  EXPECT_EQ(h.AsInt(), 123456789012345679);
}

}  // namespace
}  // namespace shardis::core
