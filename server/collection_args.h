// Argument parsing shared by the collection families (HSCAN, SSCAN, ZSCAN; HRANDFIELD,
// SRANDMEMBER counts), with Redis 7.0's exact acceptance rules and error texts, and the
// per-thread random generator their random picks use.
#pragma once

#include <cctype>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <random>
#include <string>
#include <string_view>

#include "core/glob.h"
#include "core/number.h"
#include "core/reply_builder.h"
#include "core/string_util.h"
#include "server/command.h"

namespace shardis::server {

inline constexpr std::string_view kInvalidCursorErr = "ERR invalid cursor";

// Redis' parseScanCursorOrReply: strtoul over the whole argument (so "", "+5" and "-1" are
// accepted, the last as 2^64-1), no leading space, no overflow.
inline bool ParseScanCursor(std::string_view arg, uint64_t* cursor) {
  const std::string s(arg);
  if (!s.empty() && std::isspace(static_cast<unsigned char>(s[0]))) return false;
  char* end = nullptr;
  errno = 0;
  *cursor = std::strtoul(s.c_str(), &end, 10);
  return *end == '\0' && errno != ERANGE;
}

// The options after the cursor of HSCAN/SSCAN/ZSCAN (Redis' scanGenericCommand).
struct ScanOptions {
  size_t count = 10;
  std::string_view pattern;
  bool use_pattern = false;

  bool Matches(std::string_view s) const { return !use_pattern || core::GlobMatch(pattern, s); }
};

// Parses args[from..]; on error replies it and returns false.
inline bool ParseScanOptions(ArgSlice args, size_t from, core::ReplyBuilder& rb,
                             ScanOptions* opts) {
  for (size_t i = from; i < args.size();) {
    const size_t left = args.size() - i;
    if (core::EqualsIgnoreCase(args[i], "count") && left >= 2) {
      int64_t count;
      if (!core::ParseInt64(args[i + 1], &count)) {
        rb.Error(kNotIntegerErr);
        return false;
      }
      if (count < 1) {
        rb.Error(kSyntaxErr);
        return false;
      }
      opts->count = static_cast<size_t>(count);
      i += 2;
    } else if (core::EqualsIgnoreCase(args[i], "match") && left >= 2) {
      opts->pattern = args[i + 1];
      opts->use_pattern = opts->pattern != "*";
      i += 2;
    } else {
      rb.Error(kSyntaxErr);
      return false;
    }
  }
  return true;
}

// The reply of a SCAN over a missing key: cursor 0, no elements.
inline void ReplyEmptyScan(core::ReplyBuilder& rb) {
  rb.ArrayHeader(2);
  rb.Bulk("0");
  rb.ArrayHeader(0);
}

// Redis' getRangeLongFromObjectOrReply(-LONG_MAX, LONG_MAX): the counts of HRANDFIELD and
// SRANDMEMBER. Replies the error and returns false on a bad argument.
inline bool ParseRandomCount(std::string_view arg, core::ReplyBuilder& rb, int64_t* count) {
  if (!core::ParseInt64(arg, count)) {
    rb.Error(kNotIntegerErr);
    return false;
  }
  if (*count == INT64_MIN) {
    rb.Error(
        "ERR value is out of range, value must between -9223372036854775807 and "
        "9223372036854775807");
    return false;
  }
  return true;
}

// The shard thread's generator for random picks (SPOP, SRANDMEMBER, HRANDFIELD).
inline std::mt19937_64& ThreadRng() {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  return rng;
}

}  // namespace shardis::server
