// The byte-level RDB encodings against known bytes (Redis' rdbSaveLen/rdbSaveRawString rules, and
// string payloads taken from redis-server 7.0's DUMP output), and RdbInput's errors.
#include "core/rdb_encoding.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "core/crc64.h"
#include "tests/core/rdb_test_util.h"

namespace shardis::core {
namespace {

using testing::Hex;
using testing::ToHex;

std::string Len(uint64_t v) {
  std::string out;
  rdb::AppendLength(&out, v);
  return ToHex(out);
}

std::string Str(std::string_view s, bool compress = true) {
  std::string out;
  rdb::AppendString(&out, s, compress);
  return ToHex(out);
}

TEST(RdbEncoding, Lengths) {
  EXPECT_EQ(Len(0), "00");
  EXPECT_EQ(Len(63), "3f");
  EXPECT_EQ(Len(64), "4040");
  EXPECT_EQ(Len(16383), "7fff");
  EXPECT_EQ(Len(16384), "8000004000");
  EXPECT_EQ(Len(UINT32_MAX), "80ffffffff");
  EXPECT_EQ(Len(uint64_t{1} << 32), "810000000100000000");
}

TEST(RdbEncoding, StringsAsRedisWritesThem) {
  // The value part of redis-server 7.0's DUMP payloads of SET k <value>.
  EXPECT_EQ(Str("12345"), "c13930");             // int16
  EXPECT_EQ(Str("-129"), "c17fff");              // int16
  EXPECT_EQ(Str("70000"), "c270110100");         // int32
  EXPECT_EQ(Str("123456789012"), "0c313233343536373839303132");  // too wide: plain
  EXPECT_EQ(Str("7"), "c007");                   // int8
  EXPECT_EQ(Str("007"), "03303037");             // not canonical: plain
  EXPECT_EQ(Str(""), "00");
  // More than 20 bytes and compressible: LZF (the exact bytes are our compressor's).
  const std::string a40(40, 'a');
  std::string out;
  rdb::AppendString(&out, a40, true);
  EXPECT_EQ(static_cast<uint8_t>(out[0]), 0xc3);
  EXPECT_LT(out.size(), 20u);
  EXPECT_EQ(Str(a40, false), "28" + ToHex(a40));
  // Not compressible enough: plain.
  EXPECT_EQ(Str("abcdefghijklmnopqrstuvwxyz"), "1a" + ToHex("abcdefghijklmnopqrstuvwxyz"));
}

TEST(RdbEncoding, IntStrings) {
  std::string out;
  rdb::AppendIntString(&out, -1);
  rdb::AppendIntString(&out, int64_t{1} << 40);
  EXPECT_EQ(ToHex(out), "c0ff0d31303939353131363237373736");
}

TEST(RdbEncoding, DoublesAndTimes) {
  std::string out;
  rdb::AppendBinaryDouble(&out, 1.5);
  rdb::AppendMillis(&out, 0x0102030405060708);
  rdb::AppendRawStreamId(&out, 1, 2);
  EXPECT_EQ(ToHex(out),
            "000000000000f83f"
            "0807060504030201"
            "00000000000000010000000000000002");
}

TEST(RdbInput, ReadsWhatTheWriterWrote) {
  std::string data;
  std::vector<std::string> strings = {"", "x", "12345", "-9223372036854775808", "007",
                                      std::string(100000, 'z'), std::string(20000, 'q') + "end"};
  for (const std::string& s : strings) rdb::AppendString(&data, s, true);
  for (uint64_t v : {uint64_t{0}, uint64_t{64}, uint64_t{70000}, uint64_t{1} << 40}) {
    rdb::AppendLength(&data, v);
  }
  rdb::AppendBinaryDouble(&data, -0.25);
  rdb::AppendMillis(&data, -5);
  data += Hex("03") + "1.5" + Hex("fe");  // string doubles: "1.5", +inf
  StringSource src(data);
  RdbInput in(&src);
  for (const std::string& s : strings) {
    std::string got;
    ASSERT_TRUE(in.ReadString(&got).ok());
    EXPECT_EQ(got, s);
  }
  for (uint64_t v : {uint64_t{0}, uint64_t{64}, uint64_t{70000}, uint64_t{1} << 40}) {
    uint64_t got;
    ASSERT_TRUE(in.ReadLength(&got).ok());
    EXPECT_EQ(got, v);
  }
  double d;
  ASSERT_TRUE(in.ReadBinaryDouble(&d).ok());
  EXPECT_EQ(d, -0.25);
  int64_t ms;
  ASSERT_TRUE(in.ReadMillis(&ms).ok());
  EXPECT_EQ(ms, -5);
  ASSERT_TRUE(in.ReadStringDouble(&d).ok());
  EXPECT_EQ(d, 1.5);
  ASSERT_TRUE(in.ReadStringDouble(&d).ok());
  EXPECT_TRUE(std::isinf(d));
  EXPECT_EQ(in.offset(), data.size());
  EXPECT_EQ(in.crc(), Crc64(0, data));
}

TEST(RdbInput, ReadsRedisLzf) {
  // redis-server 7.0's DUMP of SET k <40 x 'a'>, value part.
  const std::string data = Hex("c30928016161e01b0001616100");
  StringSource src(data);
  RdbInput in(&src);
  std::string got;
  ASSERT_TRUE(in.ReadString(&got).ok());
  EXPECT_EQ(got, std::string(40, 'a'));
}

TEST(RdbInput, ErrorsSayWhereAndWhat) {
  {
    const std::string data = Hex("0a");
    StringSource src(data);
    RdbInput in(&src);
    uint8_t b;
    ASSERT_TRUE(in.ReadByte(&b, "x").ok());
    uint64_t len;
    absl::Status s = in.ReadLength(&len);
    EXPECT_EQ(s.message(), "at byte 1: expected a length, found end of file");
  }
  {
    const std::string data = Hex("0568656c");
    StringSource src(data);  // a 5-byte string with 3 bytes
    RdbInput in(&src);
    std::string out;
    absl::Status s = in.ReadString(&out, "a key");
    EXPECT_EQ(s.message(), "at byte 1: expected a key, found end of file");
  }
  {
    const std::string data = Hex("c4");
    StringSource src(data);  // string encoding 4 does not exist
    RdbInput in(&src);
    std::string out;
    EXPECT_EQ(in.ReadString(&out).message(), "at byte 0: unknown string encoding 4");
  }
  {
    const std::string data = Hex("c3" "01" "8100000001000000000000");
    StringSource src(data);  // LZF claiming 2^40 bytes
    RdbInput in(&src);
    std::string out;
    absl::Status s = in.ReadString(&out);
    EXPECT_FALSE(s.ok());
    EXPECT_NE(s.message().find("at byte 0: LZF string"), std::string::npos) << s.message();
  }
  {
    const std::string data = Hex("810000000100000000");
    StringSource src(data);  // a 2^32-byte string, then nothing
    RdbInput in(&src);
    std::string out;
    EXPECT_EQ(in.ReadString(&out).message(), "at byte 9: expected a string, found end of file");
  }
  {
    const std::string data = Hex("c3050528016161ff00");
    StringSource src(data);  // LZF stream that is not valid
    RdbInput in(&src);
    std::string out;
    EXPECT_EQ(in.ReadString(&out).message(), "at byte 0: invalid LZF compressed string");
  }
}

}  // namespace
}  // namespace shardis::core
