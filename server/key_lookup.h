// Key lookups with Redis' semantics, shared by every command family: reads count keyspace hits
// and misses (lookupKeyRead), writes do not (lookupKeyWrite); both expire the key lazily. The
// typed forms answer WRONGTYPE for a key of another type, so a family handler reads:
//
//   bool wrong_type;
//   Db::Iterator it = FindTyped(ctx, args[1], core::ValueType::kList, kForRead, &wrong_type);
//   if (wrong_type) return;        // WRONGTYPE was replied
//   if (!Db::Found(it)) return ctx.rb.Integer(0);
#pragma once

#include <absl/functional/function_ref.h>

#include <string_view>

#include "core/compact_value.h"
#include "server/command.h"
#include "server/connection_state.h"
#include "shard/db.h"
#include "shard/keyspace_events.h"
#include "shard/shard.h"
#include "shard/transaction.h"

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

// For a subcommand that inspects a key (OBJECT ENCODING key, MEMORY USAGE key: args[2]): runs
// fn on the key's shard with its entry if it exists, without counting a keyspace hit or miss and
// without touching its access clock, as Redis' OBJECT and MEMORY do. Returns whether the key
// exists.
inline bool InspectSubKey(ArgSlice args, ConnContext& ctx,
                          absl::FunctionRef<void(const shard::Db::Iterator&)> fn) {
  shard::Transaction tx(ctx.conn.db, args.subspan(2, 1), shard::Transaction::kRead);
  bool found = false;
  tx.Run(
      [&](shard::TxShard& t) {
        shard::Db::Iterator it = t.db.Peek(tx.key(0), tx.hash(0), t.now_ms);
        found = shard::Db::Found(it);
        if (found) fn(it);
      },
      /*conclude=*/true);
  return found;
}

}  // namespace shardis::server
