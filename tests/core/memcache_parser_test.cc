#include "core/memcache_parser.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace shardis::core {
namespace {

using Op = MemcacheParser::Op;
using Result = MemcacheParser::Result;

// One parsed command, copied out of the parser.
struct Parsed {
  Op op;
  bool noreply;
  std::string error;
  std::vector<std::string> keys;
  uint32_t flags;
  int64_t exptime;
  uint64_t cas, delta;
  std::string data;
  bool too_large;
};

// Parses a whole stream, feeding it in pieces split at `cut` (0: all at once), the way a
// connection does: unconsumed bytes stay in the buffer and more are appended.
std::vector<Parsed> ParseAll(const std::string& input, size_t cut = 0, bool* closed = nullptr) {
  MemcacheParser p;
  std::vector<Parsed> out;
  std::string buf;
  size_t fed = 0;
  size_t start = 0;
  while (true) {
    if (fed < input.size()) {
      size_t take = cut == 0 ? input.size() : std::min(input.size() - fed, fed == 0 ? cut : 1);
      buf.append(input, fed, take);
      fed += take;
    }
    bool progress = false;
    while (start < buf.size()) {
      Result r = p.Parse(buf.data() + start, buf.size() - start);
      if (r == Result::kNeedMore) break;
      if (r == Result::kClose) {
        if (closed) *closed = true;
        return out;
      }
      const auto& c = p.command();
      if (c.op != Op::kSkip) {
        Parsed q{c.op, c.noreply, std::string(c.error), {}, c.flags, c.exptime, c.cas_unique,
                 c.delta, std::string(c.data), c.too_large};
        for (auto k : c.keys) q.keys.emplace_back(k);
        out.push_back(std::move(q));
      }
      start += p.consumed();
      p.Reset();
      progress = true;
    }
    if (fed == input.size() && !progress) break;
  }
  return out;
}

TEST(MemcacheParser, Set) {
  auto v = ParseAll("set k 5 100 3\r\nabc\r\n");
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].op, Op::kSet);
  EXPECT_EQ(v[0].keys, std::vector<std::string>{"k"});
  EXPECT_EQ(v[0].flags, 5u);
  EXPECT_EQ(v[0].exptime, 100);
  EXPECT_EQ(v[0].data, "abc");
  EXPECT_FALSE(v[0].noreply);
}

TEST(MemcacheParser, StorageAndNoreply) {
  auto v = ParseAll(
      "add a 1 0 1 noreply\r\nx\r\nreplace a 0 0 0\r\n\r\nappend a 0 0 2\r\n\r\n\r\n"
      "prepend a 0 0 1\nz\r\ncas a 7 -1 1 42 noreply\r\nq\r\nset a 0 0 1 foo\r\nz\r\n");
  ASSERT_EQ(v.size(), 6u);
  EXPECT_EQ(v[0].op, Op::kAdd);
  EXPECT_TRUE(v[0].noreply);
  EXPECT_EQ(v[1].op, Op::kReplace);
  EXPECT_EQ(v[1].data, "");
  EXPECT_EQ(v[2].op, Op::kAppend);
  EXPECT_EQ(v[2].data, "\r\n");
  EXPECT_EQ(v[3].op, Op::kPrepend);
  EXPECT_EQ(v[4].op, Op::kCas);
  EXPECT_EQ(v[4].cas, 42u);
  EXPECT_EQ(v[4].exptime, -1);
  EXPECT_TRUE(v[4].noreply);
  EXPECT_EQ(v[5].op, Op::kSet);  // an unknown 6th token is ignored, as memcached does
  EXPECT_FALSE(v[5].noreply);
}

TEST(MemcacheParser, Retrieval) {
  auto v = ParseAll("get a b  c\r\ngets x\r\ngat 10 a b\r\ngats -1 a\r\ngat 10\r\n");
  ASSERT_EQ(v.size(), 5u);
  EXPECT_EQ(v[0].op, Op::kGet);
  EXPECT_EQ(v[0].keys, (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(v[1].op, Op::kGets);
  EXPECT_EQ(v[2].op, Op::kGat);
  EXPECT_EQ(v[2].exptime, 10);
  EXPECT_EQ(v[2].keys, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(v[3].op, Op::kGats);
  EXPECT_EQ(v[4].keys.size(), 0u);
}

TEST(MemcacheParser, OtherCommands) {
  auto v = ParseAll(
      "delete a\r\ndelete a 0\r\ndelete a noreply\r\ndelete a 0 noreply\r\nincr a 5\r\n"
      "decr a 18446744073709551615 noreply\r\ntouch a 10\r\nflush_all\r\nflush_all 5 noreply\r\n"
      "version\r\nverbosity 1 noreply\r\nstats\r\nstats reset\r\nquit\r\n");
  ASSERT_EQ(v.size(), 14u);
  EXPECT_EQ(v[0].op, Op::kDelete);
  EXPECT_EQ(v[0].keys, std::vector<std::string>{"a"});
  EXPECT_FALSE(v[1].noreply);
  EXPECT_TRUE(v[2].noreply);
  EXPECT_TRUE(v[3].noreply);
  EXPECT_EQ(v[4].op, Op::kIncr);
  EXPECT_EQ(v[4].delta, 5u);
  EXPECT_EQ(v[5].op, Op::kDecr);
  EXPECT_EQ(v[5].delta, UINT64_MAX);
  EXPECT_TRUE(v[5].noreply);
  EXPECT_EQ(v[6].op, Op::kTouch);
  EXPECT_EQ(v[6].exptime, 10);
  EXPECT_EQ(v[7].op, Op::kFlushAll);
  EXPECT_EQ(v[8].exptime, 5);
  EXPECT_TRUE(v[8].noreply);
  EXPECT_EQ(v[9].op, Op::kVersion);
  EXPECT_EQ(v[10].op, Op::kVerbosity);
  EXPECT_EQ(v[11].op, Op::kStats);
  EXPECT_EQ(v[12].op, Op::kStats);
  EXPECT_EQ(v[13].op, Op::kQuit);
}

TEST(MemcacheParser, Errors) {
  const std::string k251(251, 'k'), k250(250, 'k');
  auto v = ParseAll(
      "GET a\r\n\r\nget\r\nset a 0 0\r\nset a x 0 1\r\nset a 0 0 -1\r\nset " + k251 +
      " 0 0 1\r\nget a " + k251 + "\r\nincr a x\r\nincr a -1\r\ndelete a 1\r\ntouch a x\r\n"
      "gat x a\r\nflush_all x\r\nverbosity x\r\nstats foo\r\ncas a 0 0 1 x\r\nset " + k250 +
      " 4294967296 0 0\r\n\r\nset a -1 0 1 noreply\r\n");
  std::vector<std::string> errors;
  for (auto& p : v) errors.push_back(p.op == Op::kError ? p.error : "ok");
  const std::string bad = "CLIENT_ERROR bad command line format";
  EXPECT_EQ(errors, (std::vector<std::string>{
                        "ERROR", "ERROR", "ERROR", "ERROR", bad, bad, bad, bad,
                        "CLIENT_ERROR invalid numeric delta argument",
                        "CLIENT_ERROR invalid numeric delta argument",
                        "CLIENT_ERROR bad command line format.  Usage: delete <key> [noreply]",
                        "CLIENT_ERROR invalid exptime argument",
                        "CLIENT_ERROR invalid exptime argument",
                        "CLIENT_ERROR invalid exptime argument", bad, "ERROR", bad, "ok", bad}));
  EXPECT_EQ(v[17].flags, 0u);  // truncated to 32 bits, as memcached
  EXPECT_TRUE(v[18].noreply);  // errors are silenced too
}

TEST(MemcacheParser, BadDataChunk) {
  // bytes+2 are consumed; what follows is parsed as commands ("\n" alone: ERROR).
  auto v = ParseAll("set a 0 0 1 noreply\r\nxy\r\nget a\r\n");
  ASSERT_EQ(v.size(), 3u);
  EXPECT_EQ(v[0].error, "CLIENT_ERROR bad data chunk");
  EXPECT_TRUE(v[0].noreply);
  EXPECT_EQ(v[1].error, "ERROR");
  EXPECT_EQ(v[2].op, Op::kGet);
}

TEST(MemcacheParser, TooLargeIsSwallowed) {
  const size_t n = 2 * 1024 * 1024;
  std::string input = "set big 0 0 " + std::to_string(n) + "\r\n" + std::string(n, 'x') +
                      "\r\nget a\r\n";
  for (size_t cut : {size_t(0), size_t(5), size_t(30)}) {
    auto v = ParseAll(input, cut == 0 ? 0 : cut);
    ASSERT_EQ(v.size(), 2u);
    EXPECT_EQ(v[0].op, Op::kSet);
    EXPECT_TRUE(v[0].too_large);
    EXPECT_EQ(v[1].op, Op::kGet);
  }
  // Just under the limit is stored.
  const size_t ok = MemcacheParser::kMaxItemSize - MemcacheParser::kItemOverhead - 2 - 1;
  auto v = ParseAll("set k 0 0 " + std::to_string(ok) + "\r\n" + std::string(ok, 'y') + "\r\n");
  ASSERT_EQ(v.size(), 1u);
  EXPECT_FALSE(v[0].too_large);
  EXPECT_EQ(v[0].data.size(), ok);
}

TEST(MemcacheParser, LongLines) {
  bool closed = false;
  ParseAll(std::string(3000, 'x'), 0, &closed);
  EXPECT_TRUE(closed);
  closed = false;
  std::string get = "get";
  for (int i = 0; i < 1500; ++i) get += " k" + std::to_string(i);
  auto v = ParseAll(get + "\r\n", 0, &closed);
  EXPECT_FALSE(closed);
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].keys.size(), 1500u);
}

TEST(MemcacheParser, EveryByteBoundary) {
  const std::string input =
      "set a 1 0 3\r\nabc\r\nget a b\r\ncas a 0 0 2 9 noreply\r\nxy\r\nset a 0 0 1\r\nxy\r\n"
      "incr a 1\r\ndelete a\nbogus\r\nversion\r\n";
  const auto whole = ParseAll(input);
  ASSERT_EQ(whole.size(), 9u);
  for (size_t cut = 1; cut < input.size(); ++cut) {
    auto v = ParseAll(input, cut);
    ASSERT_EQ(v.size(), whole.size()) << "cut " << cut;
    for (size_t i = 0; i < v.size(); ++i) {
      EXPECT_EQ(v[i].op, whole[i].op) << "cut " << cut << " cmd " << i;
      EXPECT_EQ(v[i].keys, whole[i].keys);
      EXPECT_EQ(v[i].data, whole[i].data);
      EXPECT_EQ(v[i].error, whole[i].error);
      EXPECT_EQ(v[i].noreply, whole[i].noreply);
    }
  }
}

}  // namespace
}  // namespace shardis::core
