// Incremental parser for client requests: RESP multibulk ("*2\r\n$3\r\nGET\r\n$1\r\nk\r\n") and
// inline commands ("GET k\r\n", as typed in telnet), with Redis 7.0's limits and error texts.

#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace shardis::core {

// Parses one request at a time. Usage, per request:
//
//   parser.Reset();
//   while ((r = parser.Parse(buf + start, filled - start)) == Result::kNeedMore) { read more }
//   if (r == Result::kDone) { run(parser.args()); start += parser.consumed(); }
//   else { reply parser.error(), then close the connection (as Redis does) }
//
// Between calls for the same request the caller may move or grow its buffer: the parser stores
// offsets from the request start, never pointers, and resumes where it stopped, so a bulk body is
// never scanned twice and a slow client costs no rescans. Steady state allocates nothing: the
// vectors and the inline arena keep their capacity across Reset().
//
// As in Redis, the byte after a header's '\r' and the two bytes after a bulk body are skipped
// without being checked to be "\n" and "\r\n".
// Deliberate differences from Redis 7.0 (which finds line ends with strchr and stalls on a NUL
// byte in a header line or inline request): NUL bytes are ordinary bytes here, so such a header
// is rejected as a bad number and an inline argument may contain NUL. And the multibulk count is
// capped at kMaxMultibulkLen, where Redis 7.0 accepts up to INT_MAX.
class RespParser {
 public:
  enum class Result { kDone, kNeedMore, kError };

  static constexpr int64_t kMaxMultibulkLen = 1024 * 1024;
  static constexpr int64_t kDefaultMaxBulkLen = 512 * 1024 * 1024;  // proto-max-bulk-len's
  static constexpr size_t kMaxInlineSize = 64 * 1024;        // Redis PROTO_INLINE_MAX_SIZE
  static constexpr size_t kRetainedArgs = 4096;
  // Redis' limits for a client that has not authenticated yet (its authRequired(), the fix of
  // CVE-2021-32675): such a client cannot make the server buffer a large request.
  static constexpr int64_t kUnauthenticatedMultibulkLen = 10;
  static constexpr int64_t kUnauthenticatedBulkLen = 16384;

  // Parses the request that begins at data[0]; len counts all buffered bytes from there (it may
  // include later pipelined requests). After kDone or kError, further calls return the same
  // result until Reset().
  Result Parse(const char* data, size_t len);

  // After kDone: bytes of this request, including its final line ending.
  size_t consumed() const { return consumed_; }
  // After kDone: the arguments. They point into the `data` of the last Parse call, or, for quoted
  // inline arguments, into this parser; valid until the next Reset(). A request "*0\r\n",
  // "*-1\r\n" or a blank inline line yields no arguments: the caller skips it.
  const std::vector<std::string_view>& args() const { return args_; }
  // After kDone: the request's bytes (`consumed` of them from `data`) when they are exactly what
  // AppendRespCommand makes of args() (a multibulk with plain decimal counts and lengths and every
  // line ending "\r\n": what clients send), else empty. The journal records them as they are.
  std::string_view canonical() const { return canonical_; }
  // After kError: the whole Redis error text, e.g. "ERR Protocol error: invalid bulk length".
  std::string_view error() const { return error_; }
  // After kNeedMore: total bytes from the request start that are known to be needed (the end of
  // the bulk being read), or 0 if unknown. Lets the caller grow its buffer once for a large value.
  size_t bytes_needed() const { return bytes_needed_; }

  // The longest bulk string accepted (Redis' proto-max-bulk-len); a longer one is a protocol
  // error before any of it is buffered. Takes effect from the next bulk header.
  void set_max_bulk_len(int64_t n) { max_bulk_len_ = n; }
  // Whether the client has yet to authenticate: a multibulk count or a bulk length above the
  // kUnauthenticated* limits is then a protocol error ("unauthenticated multibulk length",
  // "unauthenticated bulk length"), as in Redis. Takes effect from the next count or length.
  void set_unauthenticated(bool on) { unauthenticated_ = on; }

  // Bytes the parser keeps allocated between requests (CLIENT LIST's tot-mem).
  size_t retained_bytes() const {
    return spans_.capacity() * sizeof(Span) + args_.capacity() * sizeof(std::string_view) +
           arena_.capacity();
  }

  // Prepares for the next request. Keeps the capacity of its vectors (up to kRetainedArgs
  // arguments) and of the inline arena.
  void Reset();

 private:
  enum class State : uint8_t { kStart, kCount, kBulkHeader, kBulkBody, kInline, kDone, kError };

  // An argument before its view exists: offset into data_ or into arena_.
  struct Span {
    size_t offset;
    size_t len;
    bool in_arena;
  };

  // The common case in one pass, straight into args_: a multibulk request that is all in the
  // buffer, with plain decimal counts and lengths. False for anything else (incomplete, empty,
  // unusual or malformed), which the state machine then parses from the start, errors included.
  bool ParseWholeMultibulk(const char* data, size_t len);
  Result ParseMultibulk(const char* data, size_t len);
  Result ParseInline(const char* data, size_t len);
  // Splits data[0, end) like Redis' sdssplitargs into spans_. False on unbalanced quotes.
  bool SplitInline(const char* data, size_t end);
  // Looks for the '\r' ending the line that starts at pos_. Returns its offset, or SIZE_MAX if
  // the line (and the '\n' after it) is not complete yet.
  size_t FindLineEnd(const char* data, size_t len);
  Result Done(const char* data, size_t consumed);
  Result Fail(std::string_view msg);

  State state_ = State::kStart;
  size_t pos_ = 0;         // start of the line or bulk body being parsed
  size_t scan_ = 0;        // where the search for a line end resumes (>= pos_): no rescans
  int64_t remaining_ = 0;  // multibulk elements still to read
  int64_t bulk_len_ = 0;   // length of the bulk body at pos_ (state kBulkBody)
  int64_t max_bulk_len_ = kDefaultMaxBulkLen;
  bool unauthenticated_ = false;
  size_t consumed_ = 0;
  std::string_view canonical_;
  size_t bytes_needed_ = 0;
  std::vector<Span> spans_;
  std::vector<std::string_view> args_;
  std::string arena_;  // unescaped quoted inline arguments
  std::string error_;
};

// Redis' sdssplitargs on one line without '\n' or NUL bytes (AOF manifests, a function
// library's first line). False on unbalanced quotes or a closing quote not followed by a space.
bool SplitArgs(std::string_view line, std::vector<std::string>* out);

}  // namespace shardis::core
