#include "core/reply_builder.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <string>

namespace shardis::core {
namespace {

// Runs fn on a fresh builder and returns what it wrote, in RESP2 or RESP3.
std::string Write(bool resp3, const std::function<void(ReplyBuilder&)>& fn) {
  std::string out;
  ReplyBuilder rb(&out);
  rb.set_resp3(resp3);
  fn(rb);
  return out;
}
std::string R2(const std::function<void(ReplyBuilder&)>& fn) { return Write(false, fn); }
std::string R3(const std::function<void(ReplyBuilder&)>& fn) { return Write(true, fn); }

TEST(ReplyBuilderTest, Scalars) {
  EXPECT_EQ(R2([](auto& rb) { rb.SimpleString("PONG"); }), "+PONG\r\n");
  EXPECT_EQ(R2([](auto& rb) { rb.Ok(); }), "+OK\r\n");
  EXPECT_EQ(R2([](auto& rb) { rb.Integer(0); }), ":0\r\n");
  EXPECT_EQ(R2([](auto& rb) { rb.Integer(-42); }), ":-42\r\n");
  EXPECT_EQ(R2([](auto& rb) { rb.Integer(std::numeric_limits<int64_t>::min()); }),
            ":-9223372036854775808\r\n");
  EXPECT_EQ(R2([](auto& rb) { rb.Integer(std::numeric_limits<int64_t>::max()); }),
            ":9223372036854775807\r\n");
  EXPECT_EQ(R2([](auto& rb) { rb.Bulk(""); }), "$0\r\n\r\n");
  EXPECT_EQ(R2([](auto& rb) { rb.Bulk(std::string_view("a\r\n\0b", 5)); }),
            std::string("$5\r\na\r\n\0b\r\n", 11));
  EXPECT_EQ(R2([](auto& rb) { rb.Bulk(std::string(1000, 'x')); }),
            "$1000\r\n" + std::string(1000, 'x') + "\r\n");
}

TEST(ReplyBuilderTest, Errors) {
  EXPECT_EQ(R2([](auto& rb) { rb.Error("ERR unknown command"); }), "-ERR unknown command\r\n");
  EXPECT_EQ(R2([](auto& rb) { rb.Error("WRONGTYPE Operation"); }), "-WRONGTYPE Operation\r\n");
  // CR/LF cannot appear inside an error line: trimmed at the ends, spaces inside.
  EXPECT_EQ(R2([](auto& rb) { rb.Error("ERR a\r\nb\nc\r\n"); }), "-ERR a  b c\r\n");
  EXPECT_EQ(R2([](auto& rb) { rb.Error("\nERR x"); }), "-ERR x\r\n");
  EXPECT_EQ(R2([](auto& rb) { rb.Error("\r\n"); }), "-\r\n");
}

TEST(ReplyBuilderTest, NullsAndAggregates) {
  EXPECT_EQ(R2([](auto& rb) { rb.Null(); }), "$-1\r\n");
  EXPECT_EQ(R3([](auto& rb) { rb.Null(); }), "_\r\n");
  EXPECT_EQ(R2([](auto& rb) { rb.NullArray(); }), "*-1\r\n");
  EXPECT_EQ(R3([](auto& rb) { rb.NullArray(); }), "_\r\n");
  EXPECT_EQ(R2([](auto& rb) { rb.ArrayHeader(3); }), "*3\r\n");
  EXPECT_EQ(R3([](auto& rb) { rb.ArrayHeader(0); }), "*0\r\n");
  EXPECT_EQ(R2([](auto& rb) { rb.MapHeader(2); }), "*4\r\n");
  EXPECT_EQ(R3([](auto& rb) { rb.MapHeader(2); }), "%2\r\n");
  EXPECT_EQ(R2([](auto& rb) { rb.SetHeader(5); }), "*5\r\n");
  EXPECT_EQ(R3([](auto& rb) { rb.SetHeader(5); }), "~5\r\n");
  EXPECT_EQ(R2([](auto& rb) { rb.PushHeader(3); }), "*3\r\n");
  EXPECT_EQ(R3([](auto& rb) { rb.PushHeader(3); }), ">3\r\n");
  EXPECT_EQ(R2([](auto& rb) { rb.Bool(true); }), ":1\r\n");
  EXPECT_EQ(R2([](auto& rb) { rb.Bool(false); }), ":0\r\n");
  EXPECT_EQ(R3([](auto& rb) { rb.Bool(true); }), "#t\r\n");
  EXPECT_EQ(R3([](auto& rb) { rb.Bool(false); }), "#f\r\n");
  EXPECT_EQ(R2([](auto& rb) {
              rb.BulkArray({"a", "", "bc"});
            }),
            "*3\r\n$1\r\na\r\n$0\r\n\r\n$2\r\nbc\r\n");
  EXPECT_EQ(R2([](auto& rb) { rb.BulkArray({}); }), "*0\r\n");
}

TEST(ReplyBuilderTest, Verbatim) {
  EXPECT_EQ(R2([](auto& rb) { rb.Verbatim("hello"); }), "$5\r\nhello\r\n");
  EXPECT_EQ(R3([](auto& rb) { rb.Verbatim("hello"); }), "=9\r\ntxt:hello\r\n");
  EXPECT_EQ(R3([](auto& rb) { rb.Verbatim("# x\r\n", "mkd"); }), "=9\r\nmkd:# x\r\n\r\n");
}

// Redis 7.2's addReplyDouble (d2string; core/double_format_test.cc has the formatter's cases).
TEST(ReplyBuilderTest, DoubleMatchesRedis72) {
  EXPECT_EQ(R2([](auto& rb) { rb.Double(0.1); }), "$3\r\n0.1\r\n");
  EXPECT_EQ(R2([](auto& rb) { rb.Double(1.5); }), "$3\r\n1.5\r\n");
  EXPECT_EQ(R2([](auto& rb) { rb.Double(3); }), "$1\r\n3\r\n");
  EXPECT_EQ(R2([](auto& rb) { rb.Double(-0.0); }), "$2\r\n-0\r\n");
  EXPECT_EQ(R2([](auto& rb) { rb.Double(1e20); }), "$5\r\n1e+20\r\n");
  EXPECT_EQ(R2([](auto& rb) { rb.Double(1e18); }), "$19\r\n1000000000000000000\r\n");
  EXPECT_EQ(R2([](auto& rb) { rb.Double(12345678901234567.0); }), "$17\r\n12345678901234568\r\n");
  EXPECT_EQ(R2([](auto& rb) { rb.Double(HUGE_VAL); }), "$3\r\ninf\r\n");
  EXPECT_EQ(R2([](auto& rb) { rb.Double(-HUGE_VAL); }), "$4\r\n-inf\r\n");
  EXPECT_EQ(R3([](auto& rb) { rb.Double(0.1); }), ",0.1\r\n");
  EXPECT_EQ(R3([](auto& rb) { rb.Double(1.5e-7); }), ",1.5e-7\r\n");
  EXPECT_EQ(R3([](auto& rb) { rb.Double(HUGE_VAL); }), ",inf\r\n");
  EXPECT_EQ(R3([](auto& rb) { rb.Double(-HUGE_VAL); }), ",-inf\r\n");
  EXPECT_EQ(R3([](auto& rb) { rb.Double(std::nan("")); }), ",nan\r\n");
  EXPECT_EQ(R3([](auto& rb) { rb.Double(-7); }), ",-7\r\n");
}

// GEOPOS coordinates as redis-server 7.0 sends them (addReplyHumanLongDouble).
TEST(ReplyBuilderTest, HumanLongDoubleMatchesRedis) {
  EXPECT_EQ(R2([](auto& rb) { rb.HumanLongDouble(13.361389338970184); }),
            "$20\r\n13.36138933897018433\r\n");
  EXPECT_EQ(R2([](auto& rb) { rb.HumanLongDouble(180.0); }), "$3\r\n180\r\n");
  EXPECT_EQ(R3([](auto& rb) { rb.HumanLongDouble(38.115556395496299); }),
            ",38.11555639549629859\r\n");
}

TEST(ReplyBuilderTest, AppendsAndRedirects) {
  std::string a = "x";
  std::string b;
  ReplyBuilder rb(&a);
  rb.Integer(1);
  rb.set_output(&b);
  EXPECT_EQ(rb.output(), &b);
  rb.Ok();
  EXPECT_EQ(a, "x:1\r\n");
  EXPECT_EQ(b, "+OK\r\n");
  EXPECT_FALSE(rb.resp3());
}

}  // namespace
}  // namespace shardis::core
