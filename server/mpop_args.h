// The arguments that LMPOP, ZMPOP, BLMPOP and BZMPOP share (Redis' lmpop/zmpop parsing):
//   numkeys key [key ...] <where> [COUNT count]
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "core/number.h"
#include "core/reply_builder.h"
#include "server/arg_parser.h"
#include "server/command.h"

namespace shardis::server {

struct MPopArgs {
  std::span<const std::string_view> keys;
  bool second_where = false;  // args named where1 (RIGHT / MAX) rather than where0
  int64_t count = 1;
};

// args[numkeys_index] is numkeys; where0/where1 are the two words accepted after the keys
// ("LEFT"/"RIGHT", "MIN"/"MAX"). Replies Redis' error and returns false for invalid arguments.
inline bool ParseMPopArgs(ArgSlice args, size_t numkeys_index, std::string_view where0,
                          std::string_view where1, MPopArgs* out, core::ReplyBuilder& rb) {
  int64_t numkeys;
  if (!core::ParseInt64(args[numkeys_index], &numkeys) || numkeys < 1) {
    rb.Error("ERR numkeys should be greater than 0");
    return false;
  }
  const uint64_t where_index = numkeys_index + 1 + uint64_t(numkeys);
  if (where_index >= args.size()) {
    rb.Error(kSyntaxErr);
    return false;
  }
  ArgParser p(args, where_index);
  if (p.Check(where0)) {
    out->second_where = false;
  } else if (p.Check(where1)) {
    out->second_where = true;
  } else {
    p.Fail(kSyntaxErr);
  }
  int64_t count = -1;
  while (p.HasNext()) {
    if (count == -1 && p.Check("COUNT", 1)) {
      count = p.NextInRange(1, INT64_MAX, "ERR count should be greater than 0");
    } else {
      p.Fail(kSyntaxErr);
    }
  }
  if (p.ReplyError(rb)) return false;
  out->keys = args.subspan(numkeys_index + 1, size_t(numkeys));
  out->count = count == -1 ? 1 : count;
  return true;
}

}  // namespace shardis::server
