#include "server/arg_parser.h"

#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

namespace shardis::server {
namespace {

// SCAN-like options: the loop every converted handler has.
struct Opts {
  int64_t count = 10;
  std::string_view match;
  bool nx = false;
};

std::string Parse(std::vector<std::string_view> args, Opts* o) {
  ArgParser p(args, 1);
  while (p.HasNext()) {
    if (p.Check("NX")) {
      o->nx = true;
    } else if (p.Check("COUNT", 1)) {
      o->count = p.Next<int64_t>();
    } else if (p.Check("MATCH", 1)) {
      o->match = p.Next();
    } else {
      p.Fail(kSyntaxErr);
    }
  }
  return std::string(p.error());
}

TEST(ArgParserTest, ReadsOptionsCaseInsensitively) {
  Opts o;
  EXPECT_EQ(Parse({"x", "count", "5", "Match", "a*", "nX"}, &o), "");
  EXPECT_EQ(o.count, 5);
  EXPECT_EQ(o.match, "a*");
  EXPECT_TRUE(o.nx);
}

TEST(ArgParserTest, OptionWithoutItsValueIsASyntaxError) {
  Opts o;
  EXPECT_EQ(Parse({"x", "count"}, &o), kSyntaxErr);
  EXPECT_EQ(Parse({"x", "nx", "match"}, &o), kSyntaxErr);
  EXPECT_EQ(Parse({"x", "bogus"}, &o), kSyntaxErr);
}

TEST(ArgParserTest, NumbersHaveRedisErrors) {
  Opts o;
  EXPECT_EQ(Parse({"x", "count", "1.5"}, &o), kNotIntegerErr);
  EXPECT_EQ(Parse({"x", "count", "+1"}, &o), kNotIntegerErr);
  EXPECT_EQ(Parse({"x", "count", "99999999999999999999"}, &o), kNotIntegerErr);
  std::vector<std::string_view> args = {"x", "1.5", "nan", "abc"};
  ArgParser p(args);
  EXPECT_EQ(p.Next<double>(), 1.5);
  EXPECT_TRUE(p.ok());
  p.Next<double>();
  EXPECT_EQ(p.error(), kNotFloatErr);
}

TEST(ArgParserTest, NextInRangeHasTheCallersError) {
  std::vector<std::string_view> args = {"x", "0", "-1"};
  ArgParser p(args);
  EXPECT_EQ(p.NextInRange(0, INT64_MAX, "ERR COUNT can't be negative"), 0);
  EXPECT_TRUE(p.ok());
  p.NextInRange(0, INT64_MAX, "ERR COUNT can't be negative");
  EXPECT_EQ(p.error(), "ERR COUNT can't be negative");
  std::vector<std::string_view> bad = {"x", "one"};
  ArgParser q(bad);
  q.NextInRange(0, 10, "ERR LIMIT can't be negative");
  EXPECT_EQ(q.error(), "ERR LIMIT can't be negative");
}

TEST(ArgParserTest, FirstErrorWinsAndStopsTheWalk) {
  std::vector<std::string_view> args = {"x", "a", "b"};
  ArgParser p(args);
  p.Fail("ERR first");
  p.Fail("ERR second");
  EXPECT_EQ(p.error(), "ERR first");
  EXPECT_FALSE(p.HasNext());
  EXPECT_FALSE(p.Check("a"));
  EXPECT_EQ(p.Next(), "");
  EXPECT_EQ(p.Next<int64_t>(), 0);
}

TEST(ArgParserTest, NextPastTheEndIsASyntaxError) {
  std::vector<std::string_view> args = {"x", "a"};
  ArgParser p(args);
  EXPECT_EQ(p.Peek(), "a");
  EXPECT_EQ(p.Remaining(), 1u);
  EXPECT_EQ(p.Next(), "a");
  EXPECT_FALSE(p.HasNext());
  EXPECT_EQ(p.Peek(), "");
  EXPECT_EQ(p.Next(), "");
  EXPECT_EQ(p.error(), kSyntaxErr);
}

TEST(ArgParserTest, ReplyErrorWritesTheErrorOnce) {
  std::vector<std::string_view> args = {"x"};
  ArgParser p(args);
  std::string out;
  core::ReplyBuilder rb(&out);
  EXPECT_FALSE(p.ReplyError(rb));
  p.Fail(kSyntaxErr);
  EXPECT_TRUE(p.ReplyError(rb));
  EXPECT_EQ(out, "-ERR syntax error\r\n");
}

TEST(ArgParserTest, NextInt64KeepsItsMessage) {
  std::vector<std::string_view> args = {"x", "-9223372036854775808", "1.5"};
  ArgParser p(args);
  EXPECT_EQ(p.NextInt64("ERR Invalid client ID"), INT64_MIN);
  EXPECT_TRUE(p.ok());
  p.NextInt64("ERR Invalid client ID");
  EXPECT_EQ(p.error(), "ERR Invalid client ID");
}

TEST(ArgParserTest, NextInt32IsRedisGetIntFromObject) {
  std::vector<std::string_view> args = {"x", "-2147483648", "2147483648", "y"};
  ArgParser p(args);
  EXPECT_EQ(p.NextInt32(), INT32_MIN);
  p.NextInt32();
  EXPECT_EQ(p.error(), "ERR value is out of range, value must between -2147483648 and 2147483647");
  ArgParser q(args, 3);
  q.NextInt32();
  EXPECT_EQ(q.error(), kNotIntegerErr);
}

TEST(ArgParserTest, ReadDbIndexChecksTheRange) {
  std::vector<std::string_view> args = {"x", "15", "16", "-1"};
  ArgParser p(args);
  EXPECT_EQ(ReadDbIndex(p), 15);
  EXPECT_TRUE(p.ok());
  ReadDbIndex(p);
  EXPECT_EQ(p.error(), "ERR DB index is out of range");
  ArgParser q(args, 3);
  ReadDbIndex(q);
  EXPECT_EQ(q.error(), "ERR DB index is out of range");
}

}  // namespace
}  // namespace shardis::server
