// Key lookups with Redis' semantics, shared by every command family: reads count keyspace hits
// and misses (lookupKeyRead), writes do not (lookupKeyWrite); both expire the key lazily. The
// typed forms answer WRONGTYPE for a key of another type, so a family handler reads:
//
//   bool wrong_type;
//   Db::Iterator it = FindTyped(ctx, args[1], core::ValueType::kList, kForRead, &wrong_type);
//   if (wrong_type) return;        // WRONGTYPE was replied
//   if (!Db::Found(it)) return ctx.rb.Integer(0);
#pragma once

#include <string_view>

#include "core/compact_value.h"
#include "server/command.h"
#include "shard/db.h"
#include "shard/keyspace_events.h"
#include "shard/shard.h"

namespace shardis::server {

// Redis' notifyKeyspaceEvent for a key of ctx's database (shard/keyspace_events.h): one load and
// one branch while no class is selected.
inline void NotifyKeyspaceEvent(ShardContext& ctx, uint32_t type, std::string_view event,
                                std::string_view key) {
  shard::NotifyKeyspaceEvent(type, event, key, ctx.db.index());
}
using shard::kNotifyGeneric;
using shard::kNotifyHash;
using shard::kNotifyList;
using shard::kNotifySet;
using shard::kNotifyStream;
using shard::kNotifyString;
using shard::kNotifyZset;

enum LookupMode : bool { kForWrite = false, kForRead = true };

// kNoTouch: Redis' LOOKUP_NOTOUCH (the key's access clock stays as it was).
enum TouchMode : bool { kNoTouch = false, kTouch = true };

inline shard::Db::Iterator LookupRead(shard::Shard& shard, shard::Db& db, std::string_view key,
                                      uint64_t hash, int64_t now_ms, TouchMode touch = kTouch) {
  shard::Db::Iterator it = touch ? db.Find(key, hash, now_ms) : db.Peek(key, hash, now_ms);
  if (shard::Db::Found(it)) {
    ++shard.stats().keyspace_hits;
  } else {
    ++shard.stats().keyspace_misses;
    shard::NotifyKeyspaceEvent(shard::kNotifyKeyMiss, "keymiss", key, db.index());
  }
  return it;
}

// For ctx's own key (args[1], whose hash is ctx.hash).
inline shard::Db::Iterator LookupRead(ShardContext& ctx, std::string_view key) {
  return LookupRead(ctx.shard, ctx.db, key, ctx.hash, ctx.now_ms);
}
inline shard::Db::Iterator LookupWrite(ShardContext& ctx, std::string_view key) {
  return ctx.db.Find(key, ctx.hash, ctx.now_ms);
}

// The entry of `key` (with hash `hash`) if it exists and holds `type`. A key of another type
// replies WRONGTYPE on rb, sets *wrong_type and returns a not-found iterator.
inline shard::Db::Iterator FindTyped(shard::Shard& shard, shard::Db& db, core::ReplyBuilder& rb,
                                     std::string_view key, uint64_t hash, int64_t now_ms,
                                     core::ValueType type, LookupMode mode, bool* wrong_type) {
  shard::Db::Iterator it =
      mode == kForRead ? LookupRead(shard, db, key, hash, now_ms) : db.Find(key, hash, now_ms);
  *wrong_type = shard::Db::Found(it) && it.value().type() != type;
  if (*wrong_type) {
    rb.Error(kWrongTypeErr);
    return shard::Db::Iterator();
  }
  return it;
}
// For ctx's own key.
inline shard::Db::Iterator FindTyped(ShardContext& ctx, std::string_view key,
                                     core::ValueType type, LookupMode mode, bool* wrong_type) {
  return FindTyped(ctx.shard, ctx.db, ctx.rb, key, ctx.hash, ctx.now_ms, type, mode, wrong_type);
}

}  // namespace shardis::server
