// What the sorted-set family shares with other command families: the pop of ZPOPMIN/ZPOPMAX/ZMPOP,
// for the blocking variants (BZPOPMIN, BZPOPMAX, BZMPOP) that wake up on a write; ZADD and the
// store of a computed set, for the geo commands (sorted sets of geohash scores).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/reply_builder.h"
#include "core/zset.h"
#include "server/command.h"
#include "shard/db.h"

namespace shardis::server {

// The reply shapes of Redis 7.0's genericZpopCommand.
enum class ZPopReply : uint8_t {
  kFlat,         // ZPOPMIN/ZPOPMAX without a count, or in RESP2: [m1, s1, m2, s2, ...]
  kNested,       // ZPOPMIN/ZPOPMAX with a count in RESP3: [[m1, s1], [m2, s2], ...]
  kFlatWithKey,  // BZPOPMIN/BZPOPMAX: [key, m1, s1]
  kKeyNested,    // ZMPOP/BZMPOP: [key, [[m1, s1], ...]] (RESP2 and RESP3)
};

// The sorted set of `it`, a live entry of type kZSet (the geo commands' sets too).
inline core::ZSet* AsZSet(shard::Db::Iterator it) {
  return static_cast<core::ZSet*>(it.value().object());
}

// Pops up to `count` (>= 1) members with the lowest scores (from_max: the highest) from the sorted
// set at `it` (a live entry of type kZSet whose key is `key`, with hash `hash`, in `db`), replies
// them on rb in `shape` (scores as doubles), deletes the key when the set becomes empty and marks
// the key modified for WATCH. Returns how many members were popped. Runs on the key's shard.
size_t ZPopAndReply(shard::Db& db, shard::Db::Iterator it, std::string_view key, uint64_t hash,
                    bool from_max, int64_t count, ZPopReply shape, core::ReplyBuilder& rb);

// ZADD/ZINCRBY (base_flags core::kZAddIncr) on ctx's key args[1]: "ZADD key [options] score member
// ...". GEOADD rewrites its arguments into this form, as Redis does.
void ZAddGeneric(ArgSlice args, ShardContext& ctx, unsigned base_flags);

// Stores `items` as a new sorted set at key (replacing any value and TTL, as Redis' setKey), or
// deletes the key when there is nothing to store. Marks the key modified when it changed. Returns
// the size of the stored set. Runs on the key's shard (the destination of a *STORE command).
// Counts the changes on `shard` as Redis does: a delete counts one; a store counts one, or one per
// member with count_each_member (GEORADIUS STORE, GEOSEARCHSTORE). Publishes the keyspace event
// `event` (the command's, e.g. "zunionstore") for a store, "del" for a delete.
size_t StoreZSet(shard::Shard& shard, shard::Db& db, std::string_view key, uint64_t hash,
                 int64_t now_ms, const std::vector<std::pair<std::string, double>>& items,
                 bool count_each_member, std::string_view event);

}  // namespace shardis::server
