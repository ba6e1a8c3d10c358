#include "core/aof_reader.h"

#include <absl/strings/match.h>

#include <algorithm>
#include <cstring>

#include "core/number.h"
#include "core/string_util.h"

namespace shardis::core {

namespace {

constexpr size_t kBufferSize = 64 * 1024;
// How much of a bad line an error message shows.
constexpr size_t kShownBytes = 40;

}  // namespace

AofReader::AofReader(RdbSource* source, uint64_t start_offset)
    : source_(source),
      base_offset_(start_offset),
      valid_up_to_(start_offset),
      valid_before_multi_(start_offset) {}

absl::StatusOr<bool> AofReader::Fill() {
  if (pos_ < end_) return true;
  if (eof_) return false;
  if (buf_.empty()) buf_.resize(kBufferSize);
  base_offset_ += pos_;
  pos_ = end_ = 0;
  absl::StatusOr<size_t> n = source_->Read(buf_.data(), buf_.size());
  if (!n.ok()) return n.status();
  end_ = *n;
  eof_ = end_ == 0;
  return !eof_;
}

absl::StatusOr<bool> AofReader::ReadLine(std::string* line, bool* hit_eof) {
  line->clear();
  *hit_eof = false;
  while (line->size() < kAofLineBufferSize - 1) {
    absl::StatusOr<bool> more = Fill();
    if (!more.ok()) return more.status();
    if (!*more) {
      *hit_eof = true;
      break;
    }
    const size_t n = std::min(end_ - pos_, kAofLineBufferSize - 1 - line->size());
    const char* start = buf_.data() + pos_;
    if (const void* nl = std::memchr(start, '\n', n)) {
      const size_t k = static_cast<const char*>(nl) - start + 1;
      line->append(start, k);
      pos_ += k;
      break;
    }
    line->append(start, n);
    pos_ += n;
  }
  return !line->empty();
}

absl::StatusOr<uint64_t> AofReader::ReadBytes(uint64_t n, std::string* out) {
  uint64_t read = 0;
  while (read < n) {
    absl::StatusOr<bool> more = Fill();
    if (!more.ok()) return more.status();
    if (!*more) break;
    const size_t k = static_cast<size_t>(std::min<uint64_t>(n - read, end_ - pos_));
    out->append(buf_.data() + pos_, k);
    pos_ += k;
    read += k;
  }
  return read;
}

absl::StatusOr<bool> AofReader::Truncated(uint64_t at, std::string_view what) {
  done_ = true;
  result_ = End::kTruncated;
  if (in_multi_) valid_up_to_ = valid_before_multi_;
  truncation_ = Concat("at byte ", at, ": unexpected end of file reading ", what);
  return false;
}

absl::Status AofReader::BadFormat(uint64_t at, std::string_view what, std::string_view found) {
  done_ = true;
  std::string message =
      Concat("at byte ", at, ": ", kAofBadFormat, ": expected ", what, ", found ");
  AppendRepr(&message, found.substr(0, kShownBytes));
  if (found.size() > kShownBytes) message += "...";
  return absl::DataLossError(message);
}

absl::StatusOr<bool> AofReader::Next(AofCommand* cmd) {
  if (done_) return false;
  std::string line;
  bool hit_eof = false;
  uint64_t at = offset();
  // The '*' line, after any annotations.
  while (true) {
    at = offset();
    absl::StatusOr<bool> got = ReadLine(&line, &hit_eof);
    if (!got.ok()) return got.status();
    if (!*got) {
      if (in_multi_) return Truncated(at, "the EXEC of an open MULTI");
      done_ = true;
      result_ = End::kClean;
      valid_up_to_ = offset();
      return false;
    }
    if (line[0] != '#') break;
  }
  if (line[0] != '*') return BadFormat(at, "'*' or '#' at the start of a command", line);
  if (line.size() == 1 || line[1] == '\0') {
    // Redis: a read error, which is a short read at the end of the file.
    if (hit_eof) return Truncated(at, "the argument count of a command");
    return BadFormat(at, "an argument count after '*'", line);
  }
  // atoi(): strtol's value cut to an int.
  const int argc = static_cast<int>(ParseCLongPrefix(std::string_view(line).substr(1)));
  if (argc < 1) return BadFormat(at, "an argument count of at least 1", line);

  cmd->offset = at;
  cmd->args.clear();
  // Not argc: the count is not trusted before the arguments are there.
  cmd->args.reserve(std::min(argc, 64));
  std::string crlf;
  for (int j = 0; j < argc; ++j) {
    const uint64_t header_at = offset();
    absl::StatusOr<bool> got = ReadLine(&line, &hit_eof);
    if (!got.ok()) return got.status();
    if (!*got) return Truncated(header_at, "the length of a bulk string");
    if (line[0] != '$') return BadFormat(header_at, "'$' and the length of a bulk string", line);
    const int64_t len = ParseCLongPrefix(std::string_view(line).substr(1));
    if (len < 0) return BadFormat(header_at, "a bulk string length of at least 0", line);

    std::string& arg = cmd->args.emplace_back();
    const uint64_t body_at = offset();
    absl::StatusOr<uint64_t> n = ReadBytes(static_cast<uint64_t>(len), &arg);
    if (!n.ok()) return n.status();
    if (*n < static_cast<uint64_t>(len)) {
      return Truncated(body_at, Concat("a bulk string of ", len, " bytes"));
    }
    // The CRLF, not checked (as in Redis' loader).
    const uint64_t crlf_at = offset();
    crlf.clear();
    n = ReadBytes(2, &crlf);
    if (!n.ok()) return n.status();
    if (*n < 2) return Truncated(crlf_at, "the CRLF after a bulk string");
  }

  // A complete command. Redis notes where the file was valid before a MULTI (to cut an
  // unfinished transaction away) and after each command.
  if (absl::EqualsIgnoreCase(cmd->args[0], "multi")) {
    valid_before_multi_ = valid_up_to_;
    in_multi_ = true;
  } else if (absl::EqualsIgnoreCase(cmd->args[0], "exec")) {
    in_multi_ = false;
  }
  valid_up_to_ = offset();
  return true;
}

namespace {

// "<prefix><n>\r\n" at p, without a formatting library (the journal writes one per argument of
// every write); returns the end.
char* PutHeader(char* p, char prefix, size_t n) {
  char digits[20];
  char* d = digits + sizeof(digits);
  do {
    *--d = char('0' + n % 10);
    n /= 10;
  } while (n != 0);
  *p++ = prefix;
  const size_t len = size_t(digits + sizeof(digits) - d);
  std::memcpy(p, d, len);
  p += len;
  *p++ = '\r';
  *p++ = '\n';
  return p;
}

size_t DecimalDigits(size_t n) {
  size_t digits = 1;
  while (n >= 10) {
    n /= 10;
    ++digits;
  }
  return digits;
}

template <typename Args>
size_t RespSize(const Args& args) {
  size_t size = 3 + DecimalDigits(args.size());
  for (const auto& arg : args) size += 5 + DecimalDigits(arg.size()) + arg.size();
  return size;
}

template <typename Args>
char* PutResp(char* p, const Args& args) {
  p = PutHeader(p, '*', args.size());
  for (const auto& arg : args) {
    p = PutHeader(p, '$', arg.size());
    std::memcpy(p, arg.data(), arg.size());
    p += arg.size();
    *p++ = '\r';
    *p++ = '\n';
  }
  return p;
}

template <typename Args>
void AppendResp(std::string* out, const Args& args) {
  // The exact size first, then one resize and plain stores: one capacity check per command
  // instead of one per piece.
  const size_t size = RespSize(args);
  const size_t at = out->size();
  // Growing geometrically (resize alone may grow exactly).
  if (out->capacity() - at < size) out->reserve(std::max(at + size, 2 * out->capacity()));
  out->resize(at + size);
  PutResp(out->data() + at, args);
}

}  // namespace

void AppendRespCommand(std::string* out, std::span<const std::string_view> args) {
  AppendResp(out, args);
}

void AppendRespCommand(std::string* out, const std::vector<std::string>& args) {
  AppendResp(out, args);
}

size_t RespCommandSize(std::span<const std::string_view> args) { return RespSize(args); }

char* PutRespCommand(char* p, std::span<const std::string_view> args) { return PutResp(p, args); }

void AppendAofTimestamp(std::string* out, int64_t unix_seconds) {
  Append(out, "#TS:", unix_seconds, "\r\n");
}

}  // namespace shardis::core
