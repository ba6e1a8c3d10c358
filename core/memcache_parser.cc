#include "core/memcache_parser.h"

#include "core/number.h"

#include <cstring>

namespace shardis::core {

namespace {

constexpr std::string_view kBadFormat = "CLIENT_ERROR bad command line format";
constexpr std::string_view kBadExptime = "CLIENT_ERROR invalid exptime argument";

// memcached's safe_strtoull: a negative value fails ("-0" passes, as strtoull gives 0).
bool ParseU64(std::string_view s, uint64_t* out) {
  bool neg;
  uint64_t v;
  if (!ParseSignedDigits(s, &neg, &v) || (neg && v != 0)) return false;
  *out = v;
  return true;
}

// memcached's safe_strtol (a 64-bit long).
bool ParseI64(std::string_view s, int64_t* out) {
  bool neg;
  uint64_t v;
  if (!ParseSignedDigits(s, &neg, &v)) return false;
  if (v > (neg ? uint64_t(INT64_MAX) + 1 : uint64_t(INT64_MAX))) return false;
  *out = neg ? int64_t(0 - v) : int64_t(v);
  return true;
}

// An exptime: memcached parses a long and keeps it in an int32_t, so larger values wrap (and
// 3000000000 is a negative time: expired at once).
bool ParseExptime(std::string_view s, int64_t* out) {
  int64_t v;
  if (!ParseI64(s, &v)) return false;
  *out = int32_t(uint32_t(uint64_t(v)));
  return true;
}

}  // namespace

void MemcacheParser::Reset() {
  cmd_.op = Op::kError;
  cmd_.noreply = false;
  cmd_.error = {};
  cmd_.keys.clear();
  cmd_.flags = 0;
  cmd_.exptime = 0;
  cmd_.cas_unique = 0;
  cmd_.delta = 0;
  cmd_.data = {};
  cmd_.too_large = false;
  cmd_.stats_arg = {};
  tokens_.clear();
  scanned_ = 0;
  line_len_ = 0;
  data_len_ = 0;
  in_data_ = false;
  consumed_ = 0;
  bytes_needed_ = 0;
}

MemcacheParser::Result MemcacheParser::Error(std::string_view msg, size_t consumed) {
  cmd_.op = Op::kError;
  cmd_.error = msg;
  consumed_ = consumed;
  return Result::kDone;
}

MemcacheParser::Result MemcacheParser::Parse(const char* data, size_t len) {
  bytes_needed_ = 0;
  if (swallow_ > 0) {
    if (len == 0) return Result::kNeedMore;
    consumed_ = size_t(std::min<uint64_t>(swallow_, len));
    swallow_ -= consumed_;
    cmd_.op = Op::kSkip;
    return Result::kDone;
  }
  if (in_data_) {
    const size_t total = line_len_ + data_len_ + 2;
    if (len < total) {
      bytes_needed_ = total;
      return Result::kNeedMore;
    }
    if (data[line_len_ + data_len_] != '\r' || data[line_len_ + data_len_ + 1] != '\n') {
      cmd_.keys.clear();
      return Error("CLIENT_ERROR bad data chunk", total);
    }
    cmd_.data = std::string_view(data + line_len_, data_len_);
    // The buffer may have moved since the line was parsed: the key is an offset into it.
    cmd_.keys.assign(1, std::string_view(data + key_offset_, key_len_));
    consumed_ = total;
    return Result::kDone;
  }
  const void* nl = len > scanned_ ? std::memchr(data + scanned_, '\n', len - scanned_) : nullptr;
  if (nl == nullptr) {
    scanned_ = len;
    if (len > kMaxLine) {
      // Only a multiget may be that long (memcached: leading spaces, then "get " or "gets ").
      size_t i = 0;
      while (i < len && data[i] == ' ') ++i;
      std::string_view rest(data + i, len - i);
      const bool get = i <= 100 && (rest.starts_with("get ") || rest.starts_with("gets "));
      if (!get || len > kMaxGetLine) return Result::kClose;
    }
    return Result::kNeedMore;
  }
  const size_t nl_pos = size_t(static_cast<const char*>(nl) - data);
  size_t line_end = nl_pos;
  if (line_end > 0 && data[line_end - 1] == '\r') --line_end;
  Result r = ParseLine(data, line_end, nl_pos + 1);
  if (in_data_) return Parse(data, len);
  return r;
}

MemcacheParser::Result MemcacheParser::ParseLine(const char* data, size_t line_end, size_t next) {
  tokens_.clear();
  size_t s = 0;
  for (size_t e = 0; e <= line_end; ++e) {
    if (e == line_end || data[e] == ' ') {
      if (e > s) tokens_.emplace_back(data + s, e - s);
      s = e + 1;
    }
  }
  const size_t n = tokens_.size();
  if (n == 0) return Error("ERROR", next);
  const std::string_view name = tokens_[0];
  auto noreply_maybe = [&] {
    cmd_.noreply = n > 1 && tokens_[n - 1] == "noreply";
    return cmd_.noreply;
  };
  auto key_ok = [&](std::string_view key) { return key.size() <= kMaxKeyLength; };

  Op op = Op::kError;
  bool storage = true;
  if (name == "set") op = Op::kSet;
  else if (name == "add") op = Op::kAdd;
  else if (name == "replace") op = Op::kReplace;
  else if (name == "append") op = Op::kAppend;
  else if (name == "prepend") op = Op::kPrepend;
  else if (name == "cas") op = Op::kCas;
  else storage = false;

  if (storage) {
    const bool cas = op == Op::kCas;
    if (n != (cas ? 6u : 5u) && n != (cas ? 7u : 6u)) return Error("ERROR", next);
    noreply_maybe();
    if (!key_ok(tokens_[1])) return Error(kBadFormat, next);
    uint64_t flags;
    int64_t vlen;
    if (!ParseU64(tokens_[2], &flags) || !ParseExptime(tokens_[3], &cmd_.exptime) ||
        !ParseI64(tokens_[4], &vlen)) {
      return Error(kBadFormat, next);
    }
    if (cas && !ParseU64(tokens_[5], &cmd_.cas_unique)) return Error(kBadFormat, next);
    if (vlen < 0 || vlen > INT32_MAX - 2) return Error(kBadFormat, next);
    cmd_.op = op;
    cmd_.flags = uint32_t(flags);  // memcached truncates to its 32-bit field
    cmd_.keys.push_back(tokens_[1]);
    if (size_t(vlen) + 2 + tokens_[1].size() + kItemOverhead > kMaxItemSize) {
      // Answered at once; the value is dropped as it arrives (see kSkip).
      cmd_.too_large = true;
      swallow_ = uint64_t(vlen) + 2;
      consumed_ = next;
      return Result::kDone;
    }
    in_data_ = true;
    key_offset_ = size_t(tokens_[1].data() - data);
    key_len_ = tokens_[1].size();
    line_len_ = next;
    data_len_ = size_t(vlen);
    return Result::kNeedMore;  // Parse goes on with the data block
  }

  if (name == "get" || name == "gets" || name == "gat" || name == "gats") {
    const bool touch = name[1] == 'a';
    op = name == "get" ? Op::kGet : name == "gets" ? Op::kGets : name == "gat" ? Op::kGat
                                                                               : Op::kGats;
    if (n < 2) return Error("ERROR", next);
    size_t first = 1;
    if (touch) {
      if (!ParseExptime(tokens_[1], &cmd_.exptime)) return Error(kBadExptime, next);
      first = 2;
    }
    for (size_t i = first; i < n; ++i) {
      if (!key_ok(tokens_[i])) {
        cmd_.keys.clear();
        return Error(kBadFormat, next);
      }
      cmd_.keys.push_back(tokens_[i]);
    }
    cmd_.op = op;
    consumed_ = next;
    return Result::kDone;
  }
  if (name == "delete") {
    if (n < 2 || n > 4) return Error("ERROR", next);
    if (n > 2) {
      const bool hold_is_zero = tokens_[2] == "0";
      const bool sets_noreply = noreply_maybe();
      const bool valid = (n == 3 && (hold_is_zero || sets_noreply)) ||
                         (n == 4 && hold_is_zero && sets_noreply);
      if (!valid) {
        return Error("CLIENT_ERROR bad command line format.  Usage: delete <key> [noreply]", next);
      }
    }
    if (!key_ok(tokens_[1])) return Error(kBadFormat, next);
    cmd_.op = Op::kDelete;
  } else if (name == "incr" || name == "decr") {
    if (n != 3 && n != 4) return Error("ERROR", next);
    noreply_maybe();
    if (!key_ok(tokens_[1])) return Error(kBadFormat, next);
    if (!ParseU64(tokens_[2], &cmd_.delta)) {
      return Error("CLIENT_ERROR invalid numeric delta argument", next);
    }
    cmd_.op = name == "incr" ? Op::kIncr : Op::kDecr;
  } else if (name == "touch") {
    if (n != 3 && n != 4) return Error("ERROR", next);
    noreply_maybe();
    if (!key_ok(tokens_[1])) return Error(kBadFormat, next);
    if (!ParseExptime(tokens_[2], &cmd_.exptime)) return Error(kBadExptime, next);
    cmd_.op = Op::kTouch;
  } else if (name == "flush_all") {
    if (n > 3) return Error("ERROR", next);
    noreply_maybe();
    const size_t args = n - 1 - (cmd_.noreply ? 1 : 0);
    if (args > 1) return Error("ERROR", next);
    if (args == 1 && !ParseExptime(tokens_[1], &cmd_.exptime)) return Error(kBadExptime, next);
    cmd_.op = Op::kFlushAll;
  } else if (name == "version") {
    if (n != 1) return Error("ERROR", next);
    cmd_.op = Op::kVersion;
  } else if (name == "verbosity") {
    if (n != 2 && n != 3) return Error("ERROR", next);
    noreply_maybe();
    if (!ParseU64(tokens_[1], &cmd_.delta)) return Error(kBadFormat, next);
    cmd_.op = Op::kVerbosity;
  } else if (name == "stats") {
    if (n > 2) return Error("ERROR", next);
    if (n == 2) {
      if (tokens_[1] != "reset") return Error("ERROR", next);
      cmd_.stats_arg = tokens_[1];
    }
    cmd_.op = Op::kStats;
  } else if (name == "quit") {
    if (n != 1) return Error("ERROR", next);
    cmd_.op = Op::kQuit;
  } else {
    return Error("ERROR", next);
  }
  if (op == Op::kError && n > 1 && cmd_.op != Op::kFlushAll && cmd_.op != Op::kVersion &&
      cmd_.op != Op::kVerbosity && cmd_.op != Op::kStats && cmd_.op != Op::kQuit) {
    cmd_.keys.push_back(tokens_[1]);
  }
  consumed_ = next;
  return Result::kDone;
}

}  // namespace shardis::core
