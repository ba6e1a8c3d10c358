// RENAME, RENAMENX, COPY, MOVE: commands that move or copy a value from one key to another.
//
// Each runs as one shard::Transaction over both keys, so no client ever sees the value in both
// places or in neither. When both keys live on one shard, one phase does everything and a rename
// moves the cell without copying it. Across shards a value never changes hands between threads
// (each shard frees only what its own heap allocated): the source's shard reads the value (a
// string's bytes, or a pointer to the object, which the transaction keeps unchanged), the
// destination's shard builds its own copy, and for RENAME the source's shard then deletes the
// original.
#include <string>
#include <string_view>
#include <vector>

#include "core/number.h"
#include "core/string_util.h"
#include "core/value_object.h"
#include "server/arg_parser.h"
#include "server/command.h"
#include "server/connection_state.h"
#include "shard/keyspace_events.h"
#include "shard/lazy_free.h"
#include "shard/shard_set.h"
#include "shard/transaction.h"

namespace shardis::server {

namespace {

using core::CompactValue;
using shard::Db;

constexpr std::string_view kSameObjectErr = "ERR source and destination objects are the same";

// What the destination needs of the source value, read on the source's shard.
struct SourceValue {
  bool found = false;
  int64_t expire_at_ms = 0;
  uint32_t access_clock = 0;  // a moved key keeps its LRU/LFU clock, as Redis keeps the object
  std::string bytes;          // a string's bytes
  // An object: read (never written or freed) by the destination's thread.
  bool is_object = false;
  bool raw = false;  // a string changed in place (CompactValue::raw)
  core::ValueType type = core::ValueType::kString;
  void* object = nullptr;
  uint8_t encoding = 0;
};

SourceValue ReadSource(Db& db, std::string_view key, int64_t now_ms) {
  SourceValue src;
  const uint64_t hash = core::HashBytes(key);
  Db::Iterator it = db.Find(key, hash, now_ms);
  if (!Db::Found(it)) return src;
  src.found = true;
  src.expire_at_ms = db.ExpireAt(it, key, hash);
  src.access_clock = db.AccessClock(it);
  const CompactValue& v = it.value();
  if (v.IsString()) {
    v.AppendTo(&src.bytes);
    src.raw = v.raw();
  } else {
    src.is_object = true;
    src.type = v.type();
    src.object = v.object();
    src.encoding = v.object_encoding();
  }
  return src;
}

// A string value with these bytes on the calling thread's heap, raw if the source was: Redis
// moves the object (RENAME, MOVE) or duplicates it as it is (COPY).
CompactValue StringCopy(std::string_view bytes, bool raw) {
  CompactValue copy = CompactValue::FromString(bytes);
  if (raw) copy.set_raw();
  return copy;
}

// A copy of the source value on the calling thread's heap.
CompactValue CopyOf(const SourceValue& src) {
  if (!src.is_object) return StringCopy(src.bytes, src.raw);
  return core::CloneForeignObject(src.type, src.object, src.encoding);
}

bool Exists(Db& db, std::string_view key, int64_t now_ms) {
  return Db::Found(db.Find(key, core::HashBytes(key), now_ms));
}

// Redis' events of a transfer, one per side, each sent by the shard of its key: RENAME's
// rename_from/rename_to, MOVE's move_from/move_to (in their own databases), COPY's copy_to.
void NotifySourceGone(std::string_view src, int src_db, int dst_db) {
  const std::string_view event = src_db == dst_db ? "rename_from" : "move_from";
  shard::NotifyKeyspaceEvent(shard::kNotifyGeneric, event, src, src_db);
}
void NotifyTargetSet(std::string_view dst, int src_db, int dst_db, bool delete_source) {
  const std::string_view event =
      !delete_source ? "copy_to" : (src_db == dst_db ? "rename_to" : "move_to");
  shard::NotifyKeyspaceEvent(shard::kNotifyGeneric, event, dst, dst_db);
}

// Puts value at dst as Redis' dbDelete + dbAdd do: a key replaced is a new key (its "new" event),
// its old value freed lazily under lazyfree-lazy-server-del. Returns the entry.
Db::Iterator StoreReplacing(Db& to, std::string_view dst, uint64_t dst_hash, CompactValue value,
                            int64_t expire_at, int64_t now_ms) {
  to.Erase(dst, dst_hash, now_ms, shard::LazyFreeOn(shard::LazyFreePath::kServerDel));
  return to.Store(dst, dst_hash, std::move(value), expire_at, now_ms);
}

// The outcome of a transfer.
enum class Outcome { kNoSource, kTargetExists, kDone };

// Moves (delete_source) or copies src (in src_db) to dst (in dst_db). With replace false an
// existing destination stops it. The caller has ruled out src == dst in the same database.
Outcome Transfer(ConnContext& ctx, int src_db, std::string_view src, int dst_db,
                 std::string_view dst, bool replace, bool delete_source) {
  std::vector<std::string_view> keys{src};
  if (src_db == dst_db) keys.push_back(dst);
  shard::Transaction tx(src_db, keys, shard::Transaction::kWrite);
  if (src_db != dst_db) tx.AddReadLocks(dst_db, std::span(&dst, 1));  // a write lock: see there
  const unsigned src_sid = shard::shard_set->ShardOf(src);
  const unsigned dst_sid = shard::shard_set->ShardOf(dst);
  Outcome outcome = Outcome::kNoSource;

  if (src_sid == dst_sid) {
    // One shard: one phase that also releases the keys (a single hop, no scheduling round).
    tx.Run([&](shard::TxShard& t) {
      Db& from = t.shard.db(src_db);
      Db& to = t.shard.db(dst_db);
      const uint64_t src_hash = core::HashBytes(src), dst_hash = core::HashBytes(dst);
      Db::Iterator it = from.Find(src, src_hash, t.now_ms);
      if (!Db::Found(it)) return;
      if (!replace && Exists(to, dst, t.now_ms)) {
        outcome = Outcome::kTargetExists;
        return;
      }
      int64_t expire_at;
      if (delete_source) {
        // The same heap: move the cell itself, and its access clock.
        const uint32_t clock = from.AccessClock(it);
        CompactValue value = from.Take(it, src, src_hash, &expire_at);
        from.NoteModified(src);
        to.SetAccessClock(StoreReplacing(to, dst, dst_hash, std::move(value), expire_at, t.now_ms),
                          clock);
      } else {
        expire_at = from.ExpireAt(it, src, src_hash);
        CompactValue copy = it.value().IsString()
                                ? StringCopy(it.value().ToString(), it.value().raw())
                                : core::CloneObject(it.value());
        StoreReplacing(to, dst, dst_hash, std::move(copy), expire_at, t.now_ms);
      }
      to.NoteModified(dst);
      t.shard.AddDirty();  // one change for RENAME, COPY and MOVE alike, as in Redis
      if (delete_source) NotifySourceGone(src, src_db, dst_db);
      NotifyTargetSet(dst, src_db, dst_db, delete_source);
      outcome = Outcome::kDone;
    }, /*conclude=*/true);
    return outcome;
  }

  SourceValue value;
  tx.RunOn(src_sid, [&](shard::TxShard& t) { value = ReadSource(t.shard.db(src_db), src, t.now_ms); });
  if (!value.found) return Outcome::kNoSource;
  tx.RunOn(dst_sid, [&](shard::TxShard& t) {
    Db& to = t.shard.db(dst_db);
    if (!replace && Exists(to, dst, t.now_ms)) {
      outcome = Outcome::kTargetExists;
      return;
    }
    Db::Iterator stored = StoreReplacing(to, dst, core::HashBytes(dst), CopyOf(value),
                                         value.expire_at_ms, t.now_ms);
    if (delete_source) to.SetAccessClock(stored, value.access_clock);  // COPY makes a new key
    to.NoteModified(dst);
    t.shard.AddDirty();  // the whole transfer counts once, here
    NotifyTargetSet(dst, src_db, dst_db, delete_source);
    outcome = Outcome::kDone;
  });
  if (outcome == Outcome::kDone && delete_source) {
    tx.RunOn(src_sid, [&](shard::TxShard& t) {
      Db& from = t.shard.db(src_db);
      from.Erase(src, core::HashBytes(src), t.now_ms);
      from.NoteModified(src);
      NotifySourceGone(src, src_db, dst_db);
    });
  }
  return outcome;
}

// RENAME key newkey / RENAMENX key newkey
template <bool kNx>
void CmdRename(ArgSlice args, ConnContext& ctx) {
  const int db = ctx.conn.db;
  if (args[1] == args[2]) {
    // Nothing moves; only the source's existence matters (and NX answers 0).
    bool found = false;
    shard::Transaction tx(db, args.subspan(1, 1), shard::Transaction::kRead);
    tx.Run([&](shard::TxShard& t) { found = Exists(t.db, args[1], t.now_ms); }, true);
    if (!found) return ctx.rb.Error(kNoSuchKeyErr);
    return kNx ? ctx.rb.Integer(0) : ctx.rb.Ok();
  }
  switch (Transfer(ctx, db, args[1], db, args[2], /*replace=*/!kNx, /*delete_source=*/true)) {
    case Outcome::kNoSource:
      return ctx.rb.Error(kNoSuchKeyErr);
    case Outcome::kTargetExists:
      return ctx.rb.Integer(0);
    case Outcome::kDone:
      return kNx ? ctx.rb.Integer(1) : ctx.rb.Ok();
  }
}

// COPY source destination [DB destination-db] [REPLACE]
void CmdCopy(ArgSlice args, ConnContext& ctx) {
  int dst_db = ctx.conn.db;
  bool replace = false;
  ArgParser p(args, 3);
  while (p.HasNext()) {
    if (p.Check("replace")) {
      replace = true;
    } else if (p.Check("db", 1)) {
      dst_db = ReadDbIndex(p);
    } else {
      p.Fail(kSyntaxErr);
    }
  }
  if (p.ReplyError(ctx.rb)) return;
  if (dst_db == ctx.conn.db && args[1] == args[2]) return ctx.rb.Error(kSameObjectErr);
  const Outcome outcome =
      Transfer(ctx, ctx.conn.db, args[1], dst_db, args[2], replace, /*delete_source=*/false);
  ctx.rb.Integer(outcome == Outcome::kDone ? 1 : 0);
}

// MOVE key db
void CmdMove(ArgSlice args, ConnContext& ctx) {
  ArgParser p(args, 2);
  const int dst_db = ReadDbIndex(p);
  if (p.ReplyError(ctx.rb)) return;
  if (dst_db == ctx.conn.db) return ctx.rb.Error(kSameObjectErr);
  const Outcome outcome =
      Transfer(ctx, ctx.conn.db, args[1], dst_db, args[1], /*replace=*/false, /*delete_source=*/true);
  ctx.rb.Integer(outcome == Outcome::kDone ? 1 : 0);
}

}  // namespace

void RegisterRenameFamily(CommandRegistry* r) {
  r->Register({.name = "rename", .arity = 3, .flags = kWrite, .keys = kTwoKeys,
               .acl_categories = "keyspace write slow", .on_conn = CmdRename<false>,
               .docs = {.group = "generic", .since = "1.0.0", .complexity = "O(1)",
                        .summary = "Gives a key a new name, replacing any key of that name.",
                        .key_flags = "RW access delete",
                        .other_key_flags = "OW update"}});
  r->Register({.name = "renamenx", .arity = 3, .flags = kWrite | kFast, .keys = kTwoKeys,
               .acl_categories = "keyspace write fast", .on_conn = CmdRename<true>,
               .docs = {.group = "generic", .since = "1.0.0", .complexity = "O(1)",
                        .summary = "Gives a key a new name only when no key has that name.",
                        .key_flags = "RW access delete",
                        .other_key_flags = "OW insert"}});
  r->Register({.name = "copy", .arity = -3, .flags = kWrite | kDenyOom, .keys = kTwoKeys,
               .acl_categories = "keyspace write slow", .on_conn = CmdCopy,
               .docs = {.group = "generic", .since = "6.2.0",
                        .complexity = "O(N) worst case for collections, where N is the number of "
                                      "nested items. O(1) for string values.",
                        .summary = "Copies the value of a key to another key, possibly in another "
                                   "database.", .key_flags = "RO access",
                        .other_key_flags = "OW update"}});
  r->Register({.name = "move", .arity = 3, .flags = kWrite | kFast, .keys = kOneKey,
               .acl_categories = "keyspace write fast", .on_conn = CmdMove,
               .docs = {.group = "generic", .since = "1.0.0", .complexity = "O(1)",
                        .summary = "Moves a key to another database.",
                        .key_flags = "RW access update"}});
}

}  // namespace shardis::server
