// The parts of the list commands (list_family.cc) that the blocking commands reuse: BLPOP/BRPOP
// pop like LPOP, BLMOVE/BRPOPLPUSH move like LMOVE. Each function here does
// exactly what the non-blocking command does once data is there, and reports "nothing to pop"
// without replying, so a blocking caller can park instead.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "core/list.h"
#include "core/reply_builder.h"
#include "server/command.h"
#include "shard/db.h"

namespace shardis::server {

// The shape of a pop's reply.
enum class PopReply : uint8_t {
  kBulk,        // LPOP key: the element
  kArray,       // LPOP key count: [element, ...]
  kKeyArray,    // LMPOP / BLMPOP: [key, [element, ...]]
  kKeyElement,  // BLPOP / BRPOP: [key, element]
};

// On the key's shard. Pops up to `count` (>= 1; kBulk and kKeyElement pop one) elements from
// `end` of the list held by `it` (a found list cell of db, for key/hash), writes the reply to rb,
// deletes the key when the list empties, and marks the key modified (WATCH). Returns how many
// elements were popped (at least one: the list is never empty).
size_t PopFromList(shard::Db& db, shard::Db::Iterator it, std::string_view key, uint64_t hash,
                   core::ListEnd end, size_t count, PopReply shape, core::ReplyBuilder& rb);

// On the key's shard: pushes value at `end` of the list at key, creating the key when missing,
// and marks it modified. The key must not hold another type (check first). Returns the new length.
size_t PushToList(shard::Db& db, std::string_view key, uint64_t hash, int64_t now_ms,
                  core::ListEnd end, std::string_view value);

// "LEFT"/"RIGHT" (any case) into *end; false for anything else (the caller replies syntax error).
bool ParseListEnd(std::string_view arg, core::ListEnd* end);

// LMOVE's work, as one transaction over src and dst (one phase when both are on the same shard;
// else a check phase on both shards, then pop and push in parallel). Replies as LMOVE does
// (the moved element, or WRONGTYPE; a WRONGTYPE destination is detected before anything is
// popped) and returns true, except when the source is missing: then it replies nothing and
// returns false (LMOVE replies null, BLMOVE blocks). A move counts one change (Redis' dirty),
// also for a BLMOVE woken by a push (Redis 7.2 runs the command again; 7.0 counted none).
enum class MoveResult { kMissing, kWrongType, kMoved };

// On the shard of both keys: LMOVE's work in one step (LMOVE with both keys on one shard, and a
// blocked BLMOVE served there). Moves *value when the source is a list and the destination is not
// of another type; with a WRONGTYPE destination nothing moves and the source is marked ready
// again (a blocked BLMOVE passes the element to the next waiter). Counts one change, as ListMove.
MoveResult MoveOnShard(shard::Shard& shard, shard::Db& db, std::string_view src, uint64_t src_hash,
                       std::string_view dst, uint64_t dst_hash, int64_t now_ms,
                       core::ListEnd from, core::ListEnd to, std::string* value);
// LMOVE's reply for a result: the element or WRONGTYPE, and true; nothing and false when the
// source is missing.
bool ReplyMove(MoveResult result, std::string_view value, core::ReplyBuilder& rb);

bool ListMove(ConnContext& ctx, std::string_view src, std::string_view dst, core::ListEnd from,
              core::ListEnd to);


}  // namespace shardis::server
