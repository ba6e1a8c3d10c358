// Incremental parser for the memcached text protocol (as memcached 1.6 speaks it): one command at
// a time from a byte buffer, no I/O, so it is tested on its own like RespParser.
//
// What it accepts and rejects follows the Debian memcached 1.6.18 server, not only protocol.txt:
// - a command line ends at '\n' (a '\r' before it is dropped); tokens are split on spaces, runs of
//   spaces count as one; command names are case-sensitive ("GET" is unknown: ERROR);
// - keys are at most 250 bytes; like memcached, other bytes (even control characters) are allowed
//   in keys, since the server splits on spaces only;
// - a storage command's data block is exactly <bytes> bytes plus two that must be "\r\n", else
//   "CLIENT_ERROR bad data chunk" (the bytes+2 are consumed either way and parsing goes on after
//   them); a value larger than the item size limit is swallowed and answered
//   "SERVER_ERROR object too large for cache" (memcached also deletes the key then);
// - a bad command line ("CLIENT_ERROR bad command line format") does not swallow the data block:
//   its lines are parsed as commands next, as memcached does;
// - exptime values wrap to 32 bits as in memcached (3000000000 is negative: expired at once);
// - `noreply` (the last token) silences every reply of that command, errors included;
// - a line with no '\n' after 2048 bytes closes the connection, except a long `get`/`gets` line,
//   which may grow up to kMaxGetLine.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace shardis::core {

class MemcacheParser {
 public:
  enum class Result { kDone, kNeedMore, kClose };

  enum class Op : uint8_t {
    kError,  // reply `error` (unless noreply) and go on
    kSkip,   // swallowed bytes of a too-large value: no reply
    kSet, kAdd, kReplace, kAppend, kPrepend, kCas,
    kGet, kGets, kGat, kGats,
    kDelete, kIncr, kDecr, kTouch,
    kFlushAll, kVersion, kVerbosity, kStats, kQuit,
  };

  static constexpr size_t kMaxKeyLength = 250;
  static constexpr size_t kMaxLine = 2048;             // memcached's limit before a '\n'
  static constexpr size_t kMaxGetLine = 1024 * 1024;   // a multiget line may be longer
  // memcached's default item size limit (-I 1m) counts its item header (~48 bytes), the CAS
  // (8), the key and its NUL, and the value with its "\r\n".
  static constexpr size_t kMaxItemSize = 1024 * 1024;
  static constexpr size_t kItemOverhead = 48 + 8 + 1 + 2;

  struct Command {
    Op op = Op::kError;
    bool noreply = false;
    std::string_view error;  // Op::kError: the whole reply line without "\r\n"
    std::vector<std::string_view> keys;
    uint32_t flags = 0;
    int64_t exptime = 0;      // storage commands, touch, gat/gats, flush_all (its delay)
    uint64_t cas_unique = 0;  // cas
    uint64_t delta = 0;       // incr/decr; verbosity's level
    std::string_view data;    // storage commands
    bool too_large = false;   // a storage command whose value was swallowed: SERVER_ERROR
    std::string_view stats_arg;  // "stats <arg>"
  };

  // Parses the command that begins at data[0]; len counts every buffered byte from there. After
  // kDone, command() is valid (views into the data of the last call) and consumed() bytes belong
  // to it. kClose: the client sent garbage memcached would drop the connection for. Between
  // calls for one command the caller may move or grow its buffer (offsets are kept, not
  // pointers).
  Result Parse(const char* data, size_t len);

  const Command& command() const { return cmd_; }
  size_t consumed() const { return consumed_; }
  // After kNeedMore: total bytes from the command start known to be needed (0 if unknown).
  size_t bytes_needed() const { return bytes_needed_; }

  void Reset();

 private:
  Result ParseLine(const char* data, size_t line_end, size_t next);
  Result Error(std::string_view msg, size_t consumed);

  Command cmd_;
  std::vector<std::string_view> tokens_;
  size_t scanned_ = 0;   // bytes of the line already searched for '\n'
  size_t line_len_ = 0;  // after the line of a storage command: where its data begins
  size_t data_len_ = 0;  // its <bytes>
  size_t key_offset_ = 0, key_len_ = 0;  // its key, from the command start
  bool in_data_ = false;
  size_t consumed_ = 0;
  size_t bytes_needed_ = 0;
  uint64_t swallow_ = 0;  // bytes of a too-large value still to drop (kept across Reset)
};

}  // namespace shardis::core
