#include "core/resp_parser.h"

#include <glog/logging.h>

#include <algorithm>
#include <cstring>

#include "core/number.h"
#include "core/string_util.h"

namespace shardis::core {

namespace {

constexpr size_t kNotFound = static_cast<size_t>(-1);

// What ends an unquoted inline argument. Narrower than IsCSpace on purpose: Redis keeps \v and
// \f inside an argument ("a\vb" is one argument) although it skips them between arguments.
bool EndsToken(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

char Unescape(char c) {
  switch (c) {
    case 'n':
      return '\n';
    case 'r':
      return '\r';
    case 't':
      return '\t';
    case 'b':
      return '\b';
    case 'a':
      return '\a';
    default:
      return c;  // \\ \" and any other escaped character stand for themselves
  }
}

}  // namespace

void RespParser::Reset() {
  // Keep capacity for ordinary requests (no allocation in the steady state), but do not let one
  // huge MSET pin tens of MB on an idle connection for its whole life.
  if (spans_.capacity() > kRetainedArgs) {
    std::vector<Span>().swap(spans_);
    std::vector<std::string_view>().swap(args_);
  }
  state_ = State::kStart;
  pos_ = 0;
  scan_ = 0;
  remaining_ = 0;
  bulk_len_ = 0;
  consumed_ = 0;
  canonical_ = {};
  bytes_needed_ = 0;
  spans_.clear();
  args_.clear();
  arena_.clear();
  error_.clear();
}

RespParser::Result RespParser::Parse(const char* data, size_t len) {
  switch (state_) {
    case State::kDone:
      return Result::kDone;
    case State::kError:
      return Result::kError;
    case State::kStart:
      if (len == 0) return Result::kNeedMore;
      if (data[0] == '*' && ParseWholeMultibulk(data, len)) return Result::kDone;
      state_ = data[0] == '*' ? State::kCount : State::kInline;
      break;
    default:
      break;
  }
  DCHECK_GE(len, scan_) << "the buffer shrank between calls";
  bytes_needed_ = 0;
  return state_ == State::kInline ? ParseInline(data, len) : ParseMultibulk(data, len);
}

size_t RespParser::FindLineEnd(const char* data, size_t len) {
  const void* cr = std::memchr(data + scan_, '\r', len - scan_);
  if (cr == nullptr) {
    scan_ = len;
    return kNotFound;
  }
  scan_ = static_cast<const char*>(cr) - data;  // found again at once if the '\n' is late
  // Redis only requires a byte after the '\r' and skips it unchecked; so do we.
  return scan_ + 1 < len ? scan_ : kNotFound;
}

namespace {

// A count or length as the common case writes it: 1 to 10 decimal digits without a sign or a
// leading zero (or the single digit 0), then '\r' and one more byte. On success *pos is past that
// byte.
inline bool ReadPlainNumber(const char* data, size_t len, size_t* pos, int64_t* value) {
  size_t p = *pos;
  if (p >= len || data[p] < '0' || data[p] > '9') return false;
  int64_t v = data[p] - '0';
  ++p;
  if (v != 0) {
    const size_t max_end = p + 9;
    while (p < len && p < max_end && data[p] >= '0' && data[p] <= '9') {
      v = v * 10 + (data[p] - '0');
      ++p;
    }
  }
  if (p + 1 >= len || data[p] != '\r') return false;
  *pos = p + 2;
  *value = v;
  return true;
}

}  // namespace

bool RespParser::ParseWholeMultibulk(const char* data, size_t len) {
  size_t pos = 1;
  int64_t count;
  if (!ReadPlainNumber(data, len, &pos, &count) || count == 0 || count > kMaxMultibulkLen ||
      (unauthenticated_ && count > kUnauthenticatedMultibulkLen)) {
    return false;
  }
  args_.clear();
  // Whether every line ends in "\r\n", which Redis does not check (after the '\r' of a count or
  // length, after a body): then the request is canonical RESP (canonical()).
  bool crlf = data[pos - 1] == '\n';
  for (int64_t i = 0; i < count; ++i) {
    if (pos >= len || data[pos] != '$') return false;
    ++pos;
    int64_t n;
    if (!ReadPlainNumber(data, len, &pos, &n) || n > max_bulk_len_ ||
        (unauthenticated_ && n > kUnauthenticatedBulkLen)) {
      return false;
    }
    if (len - pos < size_t(n) + 2) return false;
    args_.emplace_back(data + pos, size_t(n));
    crlf &= data[pos - 1] == '\n' && data[pos + size_t(n)] == '\r' && data[pos + size_t(n) + 1] == '\n';
    pos += size_t(n) + 2;  // like Redis, the CRLF after a body is not looked at
  }
  consumed_ = pos;
  if (crlf) canonical_ = std::string_view(data, pos);
  state_ = State::kDone;
  return true;
}

RespParser::Result RespParser::ParseMultibulk(const char* data, size_t len) {
  if (state_ == State::kCount) {
    const size_t cr = FindLineEnd(data, len);
    if (cr == kNotFound) {
      // Redis applies the limit only while no '\r' is buffered at all.
      if (scan_ == len && len - pos_ > kMaxInlineSize) {
        return Fail("ERR Protocol error: too big mbulk count string");
      }
      return Result::kNeedMore;
    }
    int64_t count;
    // Redis' order: a count past INT_MAX is invalid, then a client yet to authenticate is held
    // to its limit, then our own cap (below Redis' INT_MAX) applies.
    if (!ParseInt64(std::string_view(data + 1, cr - 1), &count) || count > INT32_MAX) {
      return Fail("ERR Protocol error: invalid multibulk length");
    }
    if (unauthenticated_ && count > kUnauthenticatedMultibulkLen) {
      return Fail("ERR Protocol error: unauthenticated multibulk length");
    }
    if (count > kMaxMultibulkLen) return Fail("ERR Protocol error: invalid multibulk length");
    pos_ = scan_ = cr + 2;
    if (count <= 0) return Done(data, pos_);  // "*0" and "*-1": an empty request, skipped
    remaining_ = count;
    // Trust the announced count only so far: a client could claim a million args and send none.
    spans_.reserve(static_cast<size_t>(std::min<int64_t>(count, 1024)));
    state_ = State::kBulkHeader;
  }

  while (true) {
    if (state_ == State::kBulkHeader) {
      const size_t cr = FindLineEnd(data, len);
      if (cr == kNotFound) {
        if (scan_ == len && len - pos_ > kMaxInlineSize) {
          return Fail("ERR Protocol error: too big bulk count string");
        }
        return Result::kNeedMore;
      }
      if (data[pos_] != '$') {
        // Redis' addReplyErrorFormat turns CR/LF into spaces; match its text exactly.
        const char got = (data[pos_] == '\r' || data[pos_] == '\n') ? ' ' : data[pos_];
        error_ = "ERR Protocol error: expected '$', got ' '";
        error_[error_.size() - 2] = got;
        state_ = State::kError;
        return Result::kError;
      }
      int64_t n;
      if (!ParseInt64(std::string_view(data + pos_ + 1, cr - pos_ - 1), &n) || n < 0 ||
          n > max_bulk_len_) {
        return Fail("ERR Protocol error: invalid bulk length");
      }
      if (unauthenticated_ && n > kUnauthenticatedBulkLen) {
        return Fail("ERR Protocol error: unauthenticated bulk length");
      }
      pos_ = scan_ = cr + 2;
      bulk_len_ = n;
      state_ = State::kBulkBody;
    }

    // The body is skipped by its length, never scanned: it may contain "\r\n" or any byte. Like
    // Redis, the two bytes after it are taken as the CRLF without looking at them.
    const size_t end = pos_ + static_cast<size_t>(bulk_len_) + 2;
    if (len < end) {
      bytes_needed_ = end;
      return Result::kNeedMore;
    }
    spans_.push_back({pos_, static_cast<size_t>(bulk_len_), false});
    pos_ = scan_ = end;
    if (--remaining_ == 0) return Done(data, pos_);
    state_ = State::kBulkHeader;
  }
}

RespParser::Result RespParser::ParseInline(const char* data, size_t len) {
  const void* nl = std::memchr(data + scan_, '\n', len - scan_);
  if (nl == nullptr) {
    scan_ = len;
    if (len > kMaxInlineSize) return Fail("ERR Protocol error: too big inline request");
    return Result::kNeedMore;
  }
  const size_t at = static_cast<const char*>(nl) - data;
  const size_t end = (at > 0 && data[at - 1] == '\r') ? at - 1 : at;
  if (!SplitInline(data, end)) return Fail("ERR Protocol error: unbalanced quotes in request");
  return Done(data, at + 1);
}

bool RespParser::SplitInline(const char* data, size_t end) {
  // Unescaping never makes text longer, so this capacity is enough and the arena does not move
  // while we fill it (views are only made afterwards anyway, in Done()).
  arena_.clear();
  arena_.reserve(end);

  size_t i = 0;
  while (true) {
    while (i < end && IsCSpace(data[i])) ++i;
    if (i == end) return true;

    // Fast path: an argument without quotes is a plain slice of the request.
    const size_t start = i;
    while (i < end && !EndsToken(data[i]) && data[i] != '"' && data[i] != '\'') ++i;
    if (i == end || EndsToken(data[i])) {
      spans_.push_back({start, i - start, false});
      continue;
    }

    // Quotes may start mid-argument (a"b c" is "ab c"), so copy the unquoted prefix too.
    const size_t arena_start = arena_.size();
    arena_.append(data + start, i - start);
    enum class Mode { kPlain, kDouble, kSingle } mode = Mode::kPlain;
    bool done = false;
    while (!done) {
      if (mode == Mode::kPlain) {
        if (i == end || EndsToken(data[i])) {
          done = true;
        } else if (data[i] == '"') {
          mode = Mode::kDouble;
        } else if (data[i] == '\'') {
          mode = Mode::kSingle;
        } else {
          arena_.push_back(data[i]);
        }
      } else if (i == end) {
        return false;  // unterminated quotes
      } else if (mode == Mode::kDouble) {
        const char c = data[i];
        if (c == '\\' && i + 3 < end && data[i + 1] == 'x' && HexValue(data[i + 2]) >= 0 &&
            HexValue(data[i + 3]) >= 0) {
          arena_.push_back(static_cast<char>(HexValue(data[i + 2]) * 16 + HexValue(data[i + 3])));
          i += 3;
        } else if (c == '\\' && i + 1 < end) {
          arena_.push_back(Unescape(data[++i]));
        } else if (c == '"') {
          // The closing quote must end the argument: "a"b is an error, not "ab".
          if (i + 1 < end && !IsCSpace(data[i + 1])) return false;
          done = true;
        } else {
          arena_.push_back(c);
        }
      } else {  // Mode::kSingle: only \' is an escape
        const char c = data[i];
        if (c == '\\' && i + 1 < end && data[i + 1] == '\'') {
          arena_.push_back('\'');
          ++i;
        } else if (c == '\'') {
          if (i + 1 < end && !IsCSpace(data[i + 1])) return false;
          done = true;
        } else {
          arena_.push_back(c);
        }
      }
      if (i < end) ++i;
    }
    spans_.push_back({arena_start, arena_.size() - arena_start, true});
  }
}

RespParser::Result RespParser::Done(const char* data, size_t consumed) {
  args_.clear();
  for (const Span& s : spans_) {
    args_.emplace_back((s.in_arena ? arena_.data() : data) + s.offset, s.len);
  }
  consumed_ = consumed;
  state_ = State::kDone;
  return Result::kDone;
}

RespParser::Result RespParser::Fail(std::string_view msg) {
  error_.assign(msg);
  state_ = State::kError;
  return Result::kError;
}

bool SplitArgs(std::string_view line, std::vector<std::string>* out) {
  // The inline-request parser splits exactly like sdssplitargs; the leading space keeps a line
  // that starts with '*' from being read as a multibulk header.
  RespParser parser;
  std::string request = " ";
  request.append(line).append("\r\n");
  if (parser.Parse(request.data(), request.size()) != RespParser::Result::kDone) return false;
  out->assign(parser.args().begin(), parser.args().end());
  return true;
}

}  // namespace shardis::core
