// What the sorted-set family shares with other command families: the pop of ZPOPMIN/ZPOPMAX/ZMPOP,
// for the blocking variants (BZPOPMIN, BZPOPMAX, BZMPOP) that wake up on a write.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "core/reply_builder.h"
#include "shard/db.h"

namespace shardis::server {

// The reply shapes of Redis 7.0's genericZpopCommand.
enum class ZPopReply : uint8_t {
  kFlat,         // ZPOPMIN/ZPOPMAX without a count, or in RESP2: [m1, s1, m2, s2, ...]
  kNested,       // ZPOPMIN/ZPOPMAX with a count in RESP3: [[m1, s1], [m2, s2], ...]
  kFlatWithKey,  // BZPOPMIN/BZPOPMAX: [key, m1, s1]
  kKeyNested,    // ZMPOP/BZMPOP: [key, [[m1, s1], ...]] (RESP2 and RESP3)
};

// Pops up to `count` (>= 1) members with the lowest scores (from_max: the highest) from the sorted
// set at `it` (a live entry of type kZSet whose key is `key`, with hash `hash`, in `db`), replies
// them on rb in `shape` (scores as doubles), deletes the key when the set becomes empty and marks
// the key modified for WATCH. Returns how many members were popped. Runs on the key's shard.
size_t ZPopAndReply(shard::Db& db, shard::Db::Iterator it, std::string_view key, uint64_t hash,
                    bool from_max, int64_t count, ZPopReply shape, core::ReplyBuilder& rb);

}  // namespace shardis::server
