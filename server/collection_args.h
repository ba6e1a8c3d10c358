// Argument parsing shared by the SCAN commands (SCAN, HSCAN, SSCAN, ZSCAN; HRANDFIELD,
// SRANDMEMBER counts), with Redis 7.0's exact acceptance rules and error texts, and the
// per-thread random generator their random picks use.
#pragma once

#include <cstdint>
#include <random>
#include <string_view>

#include "core/glob.h"
#include "core/number.h"
#include "core/reply_builder.h"
#include "server/arg_parser.h"
#include "server/command.h"

namespace shardis::server {

inline constexpr std::string_view kInvalidCursorErr = "ERR invalid cursor";

// The options after the cursor of SCAN, HSCAN, SSCAN and ZSCAN (Redis' scanGenericCommand); the
// cursor itself is core::ParseScanCursor's.
struct ScanOptions {
  size_t count = 10;
  std::string_view pattern;
  bool use_pattern = false;
  std::string_view type;  // SCAN's TYPE
  bool use_type = false;
  bool no_values = false;  // HSCAN's NOVALUES (Redis 7.4): fields only

  bool Matches(std::string_view s) const { return !use_pattern || core::GlobMatch(pattern, s); }
};

// What a SCAN command walks: the options TYPE and NOVALUES belong to one kind each.
enum class ScanTarget { kKeyspace, kHash, kSetOrZSet };

// Parses args[from..]; on error replies it and returns false.
inline bool ParseScanOptions(ArgSlice args, size_t from, ScanTarget target, core::ReplyBuilder& rb,
                             ScanOptions* opts) {
  ArgParser p(args, from);
  while (p.HasNext()) {
    if (p.Check("COUNT", 1)) {
      const int64_t count = p.Next<int64_t>();
      if (p.ok() && count < 1) p.Fail(kSyntaxErr);
      opts->count = static_cast<size_t>(count);
    } else if (p.Check("MATCH", 1)) {
      opts->pattern = p.Next();
      opts->use_pattern = opts->pattern != "*";
    } else if (target == ScanTarget::kKeyspace && p.Check("TYPE", 1)) {
      opts->type = p.Next();
      opts->use_type = true;
    } else if (p.Check("NOVALUES")) {
      if (target != ScanTarget::kHash) p.Fail("ERR NOVALUES option can only be used in HSCAN");
      opts->no_values = true;
    } else {
      p.Fail(kSyntaxErr);
    }
  }
  return !p.ReplyError(rb);
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
    rb.Error(kOutOfLongRangeErr);
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
