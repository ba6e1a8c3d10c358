// The command stream of an AOF file (Redis 7.0): what an incr file holds, a base file in AOF
// format, or the tail after the RDB preamble of an old single-file AOF. Each command is a RESP
// array of bulk strings ("*2\r\n$3\r\nDEL\r\n$1\r\nk\r\n"); lines starting with '#' between
// commands are annotations ("#TS:1700000000\r\n", a timestamp), skipped on load.
//
// The reader follows Redis' loadSingleAppendOnlyFile check for check, so that a file is clean,
// truncated or malformed here exactly when it is for Redis:
//  - lines are read as fgets() reads them into Redis' 1024-byte buffer: at most 1023 bytes, a
//    longer line goes on as the next "line" (an annotation that long is a format error);
//  - the count after '*' and the length after '$' are read like atoi()/strtol() (leading spaces
//    and trailing bytes are accepted); a count below 1 is a format error;
//  - the two bytes after a bulk string are taken as its CRLF without looking at them (Redis'
//    loader does not check them; redis-check-aof does);
//  - the end of the data inside a command is a truncation: the valid prefix ends after the last
//    complete command (Redis' aof-load-truncated cuts the file there, annotations after that
//    command included). The end of the data with a MULTI that has no EXEC is a truncation too,
//    whose valid prefix ends before the MULTI.
//    One deliberate difference: when a command is cut short inside an open MULTI, Redis 7.0 cuts
//    after the last complete command (inside the transaction) and only the next load, finding
//    the MULTI unfinished, cuts before it; here the valid prefix ends before the MULTI at once,
//    so that nothing appended after the cut joins a transaction that has no EXEC.
// Where Redis would crash or allocate without bound, the reader reports a format error or reads
// incrementally instead: a negative bulk length is a format error (Redis aborts on the
// allocation), and neither the argument count nor a bulk length is allocated before the bytes
// arrive, so a huge declared length costs no more memory than the file has bytes.
//
// No I/O: bytes come from an RdbSource (the server's file, a test's string).
#pragma once

#include <absl/status/status.h>
#include <absl/status/statusor.h>

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/rdb_encoding.h"

namespace shardis::core {

// Redis' AOF_ANNOTATION_LINE_MAX_LEN: the loader's line buffer, NUL included.
inline constexpr size_t kAofLineBufferSize = 1024;

// The text Redis logs for a malformed AOF; every format error's message contains it.
inline constexpr std::string_view kAofBadFormat = "Bad file format reading the append only file";

struct AofCommand {
  std::vector<std::string> args;
  uint64_t offset = 0;  // where its '*' line starts
};

class AofReader {
 public:
  // How the data ended (after Next returned false).
  enum class End { kClean, kTruncated };

  // start_offset: the offset in the file of the source's first byte (the end of an RDB preamble
  // for the tail of an old single-file AOF), so that every offset reported is a file offset.
  explicit AofReader(RdbSource* source, uint64_t start_offset = 0);

  // The next command into *cmd (true), or false at the end of the data: see end() and
  // valid_up_to(). Errors: DataLoss "at byte N: Bad file format reading the append only file:
  // <what>" for a malformed file, or the source's own status for an I/O error. The reader is
  // not usable after false or an error.
  //
  // MULTI, the commands after it and EXEC are handed out as they come; like Redis, the caller
  // queues the commands between MULTI and EXEC and runs them at EXEC. At a truncated end with
  // the MULTI still open (in_multi()), it drops that queue.
  absl::StatusOr<bool> Next(AofCommand* cmd);

  End end() const { return result_; }
  // After the end: where the valid prefix ends. kClean: the end of the data. kTruncated: where
  // aof-load-truncated truncates the file: after the last complete command, or before the MULTI
  // that was left open.
  uint64_t valid_up_to() const { return valid_up_to_; }
  // After a kTruncated end: what was missing ("at byte N: unexpected end of file reading ...").
  const std::string& truncation() const { return truncation_; }
  // A MULTI was read and its EXEC not yet.
  bool in_multi() const { return in_multi_; }
  // Bytes consumed so far, as a file offset.
  uint64_t offset() const { return base_offset_ + pos_; }

 private:
  // fgets(buf, kAofLineBufferSize): up to and including '\n', at most kAofLineBufferSize - 1
  // bytes. False when nothing is left. *hit_eof: the read stopped at the end of the data
  // (fgets' feof()).
  absl::StatusOr<bool> ReadLine(std::string* line, bool* hit_eof);
  // Appends up to n bytes to *out (fewer only at the end of the data); returns how many.
  absl::StatusOr<uint64_t> ReadBytes(uint64_t n, std::string* out);
  // Makes at least one unread byte available; false at the end of the data.
  absl::StatusOr<bool> Fill();

  absl::StatusOr<bool> Truncated(uint64_t at, std::string_view what);
  absl::Status BadFormat(uint64_t at, std::string_view what, std::string_view found);

  RdbSource* source_;
  std::vector<char> buf_;
  size_t pos_ = 0, end_ = 0;  // unread bytes are buf_[pos_, end_)
  uint64_t base_offset_;      // file offset of buf_[0]
  bool eof_ = false;

  bool done_ = false;
  End result_ = End::kClean;
  uint64_t valid_up_to_;
  uint64_t valid_before_multi_;
  bool in_multi_ = false;
  std::string truncation_;
};

// ---- Writing.

// Appends a command as Redis' catAppendOnlyGenericCommand writes it into the AOF: a RESP array of
// bulk strings, "*<argc>\r\n" then "$<len>\r\n<arg>\r\n" for each argument.
void AppendRespCommand(std::string* out, std::span<const std::string_view> args);
void AppendRespCommand(std::string* out, const std::vector<std::string>& args);
// The same in two steps, for a caller that puts it after a header of its own in one write: the
// exact size, then the bytes at p (returns their end).
size_t RespCommandSize(std::span<const std::string_view> args);
char* PutRespCommand(char* p, std::span<const std::string_view> args);

// Appends a timestamp annotation "#TS:<unix seconds>\r\n", which Redis (aof-timestamp-enabled)
// writes before the commands of each new second.
void AppendAofTimestamp(std::string* out, int64_t unix_seconds);

}  // namespace shardis::core
