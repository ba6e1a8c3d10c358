#include "core/resp_parser.h"

#include "core/aof_reader.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <utility>
#include <vector>

// Counts heap allocations so the test can prove the steady state allocates nothing.
namespace {
std::atomic<long> g_allocations{0};
}  // namespace

// GCC flags free() on memory from operator new even when operator new itself is malloc-based.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
void* operator new(size_t n) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(n == 0 ? 1 : n)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }
#pragma GCC diagnostic pop

namespace shardis::core {
namespace {

using Result = RespParser::Result;
using Args = std::vector<std::string>;

// A heap copy of exactly the given bytes: reading past the end trips ASan, and since every call
// gets a fresh copy (the previous one freed), a parser that kept a pointer would read freed memory.
class ExactBuffer {
 public:
  explicit ExactBuffer(std::string_view s) : size_(s.size()), data_(new char[s.size()]) {
    std::memcpy(data_.get(), s.data(), s.size());
  }
  const char* data() const { return data_.get(); }
  size_t size() const { return size_; }

 private:
  size_t size_;
  std::unique_ptr<char[]> data_;
};

Args ToStrings(const std::vector<std::string_view>& args) { return Args(args.begin(), args.end()); }

std::string Multibulk(const Args& args) {
  std::string out = "*" + std::to_string(args.size()) + "\r\n";
  for (const std::string& a : args) out += "$" + std::to_string(a.size()) + "\r\n" + a + "\r\n";
  return out;
}

struct Sample {
  std::string wire;
  Args args;
};

std::vector<Sample> Samples() {
  using namespace std::string_literals;
  return {
      {"*1\r\n$4\r\nPING\r\n", {"PING"}},
      {"*3\r\n$3\r\nSET\r\n$3\r\nkey\r\n$5\r\nvalue\r\n", {"SET", "key", "value"}},
      {"*2\r\n$4\r\nECHO\r\n$0\r\n\r\n", {"ECHO", ""}},  // zero-length bulk
      {"*2\r\n$4\r\nECHO\r\n$7\r\na\r\nb\0\r\n\r\n"s, {"ECHO", "a\r\nb\0\r\n"s}},  // binary body
      {Multibulk({"MSET", "k1", std::string(300, 'x'), "k2", "\r\n\r\n"}),
       {"MSET", "k1", std::string(300, 'x'), "k2", "\r\n\r\n"}},
      {Multibulk({"RPUSH", "l", "1", "2", "3", "4", "5", "6", "7", "8", "9", "10"}),
       {"RPUSH", "l", "1", "2", "3", "4", "5", "6", "7", "8", "9", "10"}},  // 2-digit count
      {"*0\r\n", {}},
      {"*-1\r\n", {}},
      {"*-7\r\n", {}},
      {"PING\r\n", {"PING"}},
      {"PING\n", {"PING"}},
      {"SET k v\r\n", {"SET", "k", "v"}},
      {"  SET \t k\t\tv  \r\n", {"SET", "k", "v"}},
      {"\r\n", {}},
      {"\n", {}},
      {" \t \r\n", {}},
      {"SET \"a b\" 'c d'\r\n", {"SET", "a b", "c d"}},
      {"ECHO \"\\x41\\x4g\\n\\r\\t\\b\\a\\\\\\\"\\q\"\r\n", {"ECHO", "Ax4g\n\r\t\b\a\\\"q"}},
      {"ECHO \"\\x00\\xfF\"\r\n"s, {"ECHO", "\0\xff"s}},
      {"ECHO 'a\\'b' 'c\\nd'\r\n", {"ECHO", "a'b", "c\\nd"}},
      {"ECHO a\"b c\"\r\n", {"ECHO", "ab c"}},  // quotes may start mid-argument
      {"ECHO \"\" ''\r\n", {"ECHO", "", ""}},
      {"ECHO a\vb \"x\"\v\r\n", {"ECHO", "a\vb", "x"}},  // \v is inside an argument, \f too
      {"ECHO a\rb\r\n", {"ECHO", "a", "b"}},             // a lone \r separates arguments
      {"ECHO a\0b\r\n"s, {"ECHO", "a\0b"s}},             // NUL is an ordinary byte here
  };
}

// Parses `wire` from a fresh exact-size copy that lives until the next call: like a connection
// buffer that moves whenever more bytes arrive, so args() stay readable until then.
Result ParseOnce(RespParser* p, std::string_view wire) {
  static std::unique_ptr<ExactBuffer> last;
  auto next = std::make_unique<ExactBuffer>(wire);
  const Result r = p->Parse(next->data(), next->size());
  last = std::move(next);  // frees the previous copy only now, so addresses always differ
  return r;
}

TEST(RespParserTest, SamplesWhole) {
  for (const Sample& s : Samples()) {
    SCOPED_TRACE(testing::PrintToString(s.wire));
    RespParser p;
    ExactBuffer buf(s.wire);
    ASSERT_EQ(p.Parse(buf.data(), buf.size()), Result::kDone);
    EXPECT_EQ(ToStrings(p.args()), s.args);
    EXPECT_EQ(p.consumed(), s.wire.size());
  }
}

// canonical() is the request's bytes exactly when they are what AppendRespCommand makes of its
// arguments (the journal records them as they are); otherwise it is empty.
TEST(RespParserTest, CanonicalIsTheRequestWhenItIsPlainResp) {
  for (const Sample& s : Samples()) {
    SCOPED_TRACE(testing::PrintToString(s.wire));
    RespParser p;
    ExactBuffer buf(s.wire);
    ASSERT_EQ(p.Parse(buf.data(), buf.size()), Result::kDone);
    if (p.args().empty()) continue;  // skipped by the caller
    std::string encoded;
    AppendRespCommand(&encoded, p.args());
    if (!p.canonical().empty()) {
      EXPECT_EQ(p.canonical(), encoded);
      EXPECT_EQ(p.canonical().data(), buf.data());
    } else {
      EXPECT_NE(s.wire, encoded);
    }
  }
  const std::string_view plain = "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$5\r\nv\r\nxy\r\n";
  const std::string_view not_plain[] = {
      "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$5\r\nv\r\nxyAB",    // not CRLF after a body
      "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$5\rXv\r\nxy\r\n",  // not LF after a length
      "*3\rX$3\r\nSET\r\n$1\r\nk\r\n$5\r\nv\r\nxy\r\n",  // not LF after the count
  };
  RespParser p;
  ExactBuffer buf(plain);
  ASSERT_EQ(p.Parse(buf.data(), buf.size()), Result::kDone);
  EXPECT_EQ(p.canonical(), plain);
  for (std::string_view wire : not_plain) {
    SCOPED_TRACE(testing::PrintToString(wire));
    p.Reset();
    ExactBuffer other(wire);
    ASSERT_EQ(p.Parse(other.data(), other.size()), Result::kDone);
    EXPECT_EQ(ToStrings(p.args()), (std::vector<std::string>{"SET", "k", "v\r\nxy"}));
    EXPECT_TRUE(p.canonical().empty());
  }
  p.Reset();
  EXPECT_TRUE(p.canonical().empty());
}

// A prefix of any length is incomplete; the whole request, in a new buffer, completes it.
TEST(RespParserTest, SamplesSplitAtEveryByte) {
  for (const Sample& s : Samples()) {
    for (size_t k = 0; k < s.wire.size(); ++k) {
      SCOPED_TRACE(testing::PrintToString(s.wire) + " split at " + std::to_string(k));
      RespParser p;
      ASSERT_EQ(ParseOnce(&p, std::string_view(s.wire).substr(0, k)), Result::kNeedMore);
      ExactBuffer whole(s.wire);
      ASSERT_EQ(p.Parse(whole.data(), whole.size()), Result::kDone);
      EXPECT_EQ(ToStrings(p.args()), s.args);
      EXPECT_EQ(p.consumed(), s.wire.size());
    }
  }
}

// One byte more per call, each time in a freshly allocated buffer (the old one freed).
TEST(RespParserTest, SamplesByteByByteInMovingBuffer) {
  for (const Sample& s : Samples()) {
    SCOPED_TRACE(testing::PrintToString(s.wire));
    RespParser p;
    for (size_t k = 1; k < s.wire.size(); ++k) {
      ASSERT_EQ(ParseOnce(&p, std::string_view(s.wire).substr(0, k)), Result::kNeedMore) << k;
    }
    ExactBuffer whole(s.wire);
    ASSERT_EQ(p.Parse(whole.data(), whole.size()), Result::kDone);
    EXPECT_EQ(ToStrings(p.args()), s.args);
    EXPECT_EQ(p.consumed(), s.wire.size());
  }
}

// Drives the parser the way a connection does: bytes arrive in chunks into a buffer that is
// reallocated on every arrival, and every complete request in it is parsed (pipelining).
std::vector<Args> FeedInChunks(const std::string& wire, const std::vector<size_t>& cuts) {
  std::vector<Args> out;
  RespParser p;
  std::unique_ptr<ExactBuffer> buf;
  size_t start = 0;
  for (size_t cut : cuts) {
    buf = std::make_unique<ExactBuffer>(std::string_view(wire).substr(0, cut));
    while (start < buf->size()) {
      Result r = p.Parse(buf->data() + start, buf->size() - start);
      if (r == Result::kNeedMore) break;
      EXPECT_EQ(r, Result::kDone) << p.error();
      if (r != Result::kDone) return out;
      out.push_back(ToStrings(p.args()));
      start += p.consumed();
      p.Reset();
    }
  }
  EXPECT_EQ(start, wire.size());
  return out;
}

TEST(RespParserTest, PipelineInAnyChunking) {
  std::string wire;
  std::vector<Args> expected;
  for (const Sample& s : Samples()) {
    wire += s.wire;
    expected.push_back(s.args);
  }
  // Two chunks, split at every byte.
  for (size_t k = 0; k <= wire.size(); ++k) {
    ASSERT_EQ(FeedInChunks(wire, {k, wire.size()}), expected) << "split at " << k;
  }
  // Fixed chunk sizes, down to one byte per read.
  for (size_t chunk : {1, 2, 3, 5, 7, 13, 64, 1000}) {
    std::vector<size_t> cuts;
    for (size_t c = chunk; c < wire.size(); c += chunk) cuts.push_back(c);
    cuts.push_back(wire.size());
    ASSERT_EQ(FeedInChunks(wire, cuts), expected) << "chunk " << chunk;
  }
}

TEST(RespParserTest, ArgsPointIntoLatestBufferAndArena) {
  std::string wire = "*2\r\n$3\r\nGET\r\n$3\r\nkey\r\n";
  RespParser p;
  ExactBuffer part(std::string_view(wire).substr(0, 10));
  ASSERT_EQ(p.Parse(part.data(), part.size()), Result::kNeedMore);
  ExactBuffer whole(wire);
  ASSERT_EQ(p.Parse(whole.data(), whole.size()), Result::kDone);
  EXPECT_EQ(p.args()[1].data(), whole.data() + 17);  // a view, not a copy

  // Unquoted inline arguments are views too; quoted ones live in the parser's arena.
  p.Reset();
  ExactBuffer in("SET plain \"quo ted\"\r\n");
  ASSERT_EQ(p.Parse(in.data(), in.size()), Result::kDone);
  EXPECT_EQ(p.args()[1].data(), in.data() + 4);
  EXPECT_EQ(p.args()[2], "quo ted");
}

TEST(RespParserTest, LargeBulkReportsBytesNeeded) {
  const std::string body(100000, 'v');
  const std::string wire = Multibulk({"SET", "k", body});
  const size_t header = wire.size() - body.size() - 2;  // up to the body
  RespParser p;
  EXPECT_EQ(ParseOnce(&p, std::string_view(wire).substr(0, 3)), Result::kNeedMore);
  EXPECT_EQ(p.bytes_needed(), 0u);  // still in a header: unknown
  EXPECT_EQ(ParseOnce(&p, std::string_view(wire).substr(0, header + 10)), Result::kNeedMore);
  EXPECT_EQ(p.bytes_needed(), wire.size());
  EXPECT_EQ(ParseOnce(&p, std::string_view(wire).substr(0, wire.size() - 1)), Result::kNeedMore);
  EXPECT_EQ(p.bytes_needed(), wire.size());
  ASSERT_EQ(ParseOnce(&p, wire), Result::kDone);
  EXPECT_EQ(p.args()[2], body);
}

// Like Redis, the byte after '\r' and the two bytes after a bulk body are skipped unchecked
// (verified against redis-server 7.0.15: both requests below answer PONG).
TEST(RespParserTest, ByteAfterCrIsNotCheckedLikeRedis) {
  RespParser p;
  ASSERT_EQ(ParseOnce(&p, "*1\rx$4\r\nPING\r\n"), Result::kDone);
  EXPECT_EQ(ToStrings(p.args()), Args{"PING"});
  p.Reset();
  ASSERT_EQ(ParseOnce(&p, "*1\r\n$4\r\nPINGxy"), Result::kDone);
  EXPECT_EQ(p.consumed(), 14u);
}

TEST(RespParserTest, ResultIsStickyUntilReset) {
  RespParser p;
  ASSERT_EQ(ParseOnce(&p, "*abc\r\n"), Result::kError);
  EXPECT_EQ(ParseOnce(&p, "PING\r\n"), Result::kError);
  p.Reset();
  ASSERT_EQ(ParseOnce(&p, "PING\r\n"), Result::kDone);
  EXPECT_EQ(ParseOnce(&p, "PING\r\n"), Result::kDone);
  EXPECT_EQ(p.error(), "");
}

struct Malformed {
  std::string wire;
  std::string error;
};

// Error texts as redis-server 7.0.15 sends them (checked over a raw socket).
std::vector<Malformed> MalformedSamples() {
  const std::string kCount = "ERR Protocol error: invalid multibulk length";
  const std::string kBulk = "ERR Protocol error: invalid bulk length";
  const std::string kQuotes = "ERR Protocol error: unbalanced quotes in request";
  return {
      {"*abc\r\n", kCount},
      {"*\r\n", kCount},
      {"*-0\r\n", kCount},
      {"*+1\r\n", kCount},
      {"*01\r\n", kCount},
      {"* 1\r\n", kCount},
      {"*1 \r\n", kCount},
      {"*1048577\r\n", kCount},
      {"*99999999999999999999\r\n", kCount},
      {"*1\r\nX3\r\n", "ERR Protocol error: expected '$', got 'X'"},
      {"*2\r\n$1\r\na\r\n:1\r\n", "ERR Protocol error: expected '$', got ':'"},
      {"*1\r\n\r\n", "ERR Protocol error: expected '$', got ' '"},  // CR shown as a space
      {"*1\r\n\n\r\n", "ERR Protocol error: expected '$', got ' '"},
      {"*1\r\n$-1\r\n", kBulk},
      {"*1\r\n$\r\n", kBulk},
      {"*1\r\n$abc\r\n", kBulk},
      {"*1\r\n$+1\r\n", kBulk},
      {"*1\r\n$01\r\n", kBulk},
      {"*1\r\n$-0\r\n", kBulk},
      {"*1\r\n$536870913\r\n", kBulk},
      {"*1\r\n$1234567890\r\n", kBulk},
      {"*1\r\n$12345678901\r\n", kBulk},
      {"*1\r\n$00\r\n", kBulk},
      {"*2\r\n$1\r\na\r\n$1x\r\n", kBulk},
      {std::string("*1\r\n$1\0\r\n", 9), kBulk},  // NUL is a bad digit, not a stall
      {"PING \"a\r\n", kQuotes},
      {"ECHO \"a\"b\r\n", kQuotes},
      {"ECHO 'a'b\r\n", kQuotes},
      {"ECHO a\"b c\"d\r\n", kQuotes},  // ...but must end it
      {"ECHO 'a\r\n", kQuotes},
      {"ECHO \"a\\\"\r\n", kQuotes},
      {"ECHO \"a\"\"b\"\r\n", kQuotes},
      {"ECHO \"a\\\r\n", kQuotes},
  };
}

TEST(RespParserTest, MalformedWhole) {
  for (const Malformed& m : MalformedSamples()) {
    SCOPED_TRACE(testing::PrintToString(m.wire));
    RespParser p;
    ASSERT_EQ(ParseOnce(&p, m.wire), Result::kError);
    EXPECT_EQ(p.error(), m.error);
  }
}

// Fed a byte at a time, a malformed request never completes and ends in the same error.
TEST(RespParserTest, MalformedByteByByte) {
  for (const Malformed& m : MalformedSamples()) {
    SCOPED_TRACE(testing::PrintToString(m.wire));
    RespParser p;
    Result r = Result::kNeedMore;
    for (size_t k = 1; k <= m.wire.size(); ++k) {
      r = ParseOnce(&p, std::string_view(m.wire).substr(0, k));
      ASSERT_NE(r, Result::kDone) << k;
    }
    ASSERT_EQ(r, Result::kError);
    EXPECT_EQ(p.error(), m.error);
  }
}

TEST(RespParserTest, MultibulkCountLimit) {
  RespParser p;
  EXPECT_EQ(ParseOnce(&p, "*1048576\r\n"), Result::kNeedMore);
  p.Reset();
  EXPECT_EQ(ParseOnce(&p, "*1048577\r\n"), Result::kError);
}

TEST(RespParserTest, BulkLengthLimit) {
  RespParser p;
  EXPECT_EQ(ParseOnce(&p, "*1\r\n$536870912\r\n"), Result::kNeedMore);
  EXPECT_EQ(p.bytes_needed(), 16u + 536870912u + 2u);
  p.Reset();
  EXPECT_EQ(ParseOnce(&p, "*1\r\n$536870913\r\n"), Result::kError);
  EXPECT_EQ(p.error(), "ERR Protocol error: invalid bulk length");
}

// A client yet to authenticate has Redis' limits: 10 arguments, bulks of 16 KiB; at the limits a
// request parses (the whole-request fast path too), past them it is refused from its header on.
TEST(RespParserTest, UnauthenticatedLimits) {
  RespParser p;
  p.set_unauthenticated(true);
  const Args at_limits(10, std::string(RespParser::kUnauthenticatedBulkLen, 'x'));
  ASSERT_EQ(ParseOnce(&p, Multibulk(at_limits)), Result::kDone);
  EXPECT_EQ(ToStrings(p.args()), at_limits);

  const std::string many = "*11\r\n";
  const std::string long_bulk = "*2\r\n$4\r\nECHO\r\n$16385\r\n";
  const std::string_view unauth_count = "ERR Protocol error: unauthenticated multibulk length";
  const std::string_view unauth_bulk = "ERR Protocol error: unauthenticated bulk length";
  const std::pair<std::string, std::string_view> refused[] = {
      {many, unauth_count},
      {Multibulk(Args(11, "a")), unauth_count},
      {long_bulk, unauth_bulk},
      {Multibulk({"ECHO", std::string(16385, 'x')}), unauth_bulk},
      // Redis' order: what is invalid for anyone says so; a count up to INT_MAX (past our own
      // cap) is an unauthenticated one.
      {"*2147483648\r\n", "ERR Protocol error: invalid multibulk length"},
      {"*2147483647\r\n", unauth_count},
      {"*1\r\n$-1\r\n", "ERR Protocol error: invalid bulk length"},
  };
  for (const auto& [wire, error] : refused) {
    SCOPED_TRACE(testing::PrintToString(wire.substr(0, 40)));
    p.Reset();
    ASSERT_EQ(ParseOnce(&p, wire), Result::kError);
    EXPECT_EQ(p.error(), error);
  }
  // Inline requests are bounded by their line length only, as in Redis.
  p.Reset();
  ASSERT_EQ(ParseOnce(&p, "ECHO a b c d e f g h i j k\r\n"), Result::kDone);
  EXPECT_EQ(p.args().size(), 12u);

  // Once authenticated, the same headers are fine.
  p.set_unauthenticated(false);
  for (const std::string& wire : {many, long_bulk}) {
    p.Reset();
    EXPECT_EQ(ParseOnce(&p, wire), Result::kNeedMore);
  }
}

// Header lines: without any '\r' buffered, 64 KiB are tolerated and one byte more is an error.
TEST(RespParserTest, MultibulkHeaderLineLimit) {
  const std::string line = "*" + std::string(RespParser::kMaxInlineSize - 1, '1');  // 64 KiB
  RespParser p;
  EXPECT_EQ(ParseOnce(&p, line), Result::kNeedMore);
  EXPECT_EQ(ParseOnce(&p, line + "1"), Result::kError);  // same parser: resumed scan
  EXPECT_EQ(p.error(), "ERR Protocol error: too big mbulk count string");

  // A '\r' in the buffer suspends the limit (Redis too); the line then fails as a number.
  p.Reset();
  EXPECT_EQ(ParseOnce(&p, line + "1\r"), Result::kNeedMore);
  EXPECT_EQ(ParseOnce(&p, line + "1\r\n"), Result::kError);
  EXPECT_EQ(p.error(), "ERR Protocol error: invalid multibulk length");
}

TEST(RespParserTest, BulkHeaderLineLimit) {
  const std::string line = "*1\r\n$" + std::string(RespParser::kMaxInlineSize - 1, '1');
  RespParser p;
  EXPECT_EQ(ParseOnce(&p, line), Result::kNeedMore);
  EXPECT_EQ(ParseOnce(&p, line + "1"), Result::kError);
  EXPECT_EQ(p.error(), "ERR Protocol error: too big bulk count string");

  // The size check comes before the '$' check, as in Redis.
  p.Reset();
  EXPECT_EQ(ParseOnce(&p, "*1\r\nX" + std::string(RespParser::kMaxInlineSize, 'x')),
            Result::kError);
  EXPECT_EQ(p.error(), "ERR Protocol error: too big bulk count string");
}

TEST(RespParserTest, InlineLimit) {
  const std::string line(RespParser::kMaxInlineSize, 'a');
  RespParser p;
  EXPECT_EQ(ParseOnce(&p, line), Result::kNeedMore);
  EXPECT_EQ(ParseOnce(&p, line + "a"), Result::kError);
  EXPECT_EQ(p.error(), "ERR Protocol error: too big inline request");

  // The limit only applies while no newline is buffered.
  for (std::string end : {"\n", "\r\n"}) {
    p.Reset();
    ASSERT_EQ(ParseOnce(&p, line + end), Result::kDone);
    EXPECT_EQ(ToStrings(p.args()), Args{line});
  }
}

TEST(RespParserTest, SteadyStateDoesNotAllocate) {
  std::string wire;
  for (const Sample& s : Samples()) wire += s.wire;
  ExactBuffer buf(wire);
  RespParser p;
  auto parse_all = [&] {
    int done = 0;
    for (size_t start = 0; start < buf.size();) {
      if (p.Parse(buf.data() + start, buf.size() - start) != Result::kDone) break;
      ++done;
      start += p.consumed();
      p.Reset();
    }
    return done;
  };
  const int requests = static_cast<int>(Samples().size());
  ASSERT_EQ(parse_all(), requests);  // warm-up: vectors and arena reach their sizes
  const long before = g_allocations.load();
  const int done = parse_all();
  const long allocations = g_allocations.load() - before;
  EXPECT_EQ(done, requests);
  EXPECT_EQ(allocations, 0);
}

}  // namespace
}  // namespace shardis::core
