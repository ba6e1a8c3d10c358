// Set commands: SADD, SREM, SISMEMBER, SMISMEMBER, SCARD, SMEMBERS, SPOP, SRANDMEMBER, SSCAN on
// one key (run on its shard), and the multi-key SINTER, SINTERCARD, SUNION, SDIFF, their *STORE
// forms and SMOVE as shard::Transactions: a read phase on every shard holding a source key
// collects the members into the coordinator, which computes the result; the *STORE forms and
// SMOVE then write on the destination's shard (RunOn) while the transaction still holds every
// key, so no client sees an intermediate state. Replies and errors follow Redis 7.0.15 (t_set.c).
#include <absl/container/flat_hash_set.h>

#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "core/set_object.h"
#include "core/string_util.h"
#include "server/collection_args.h"
#include "server/arg_parser.h"
#include "server/command.h"
#include "server/command_keys.h"
#include "server/connection_state.h"
#include "server/key_lookup.h"
#include "shard/transaction.h"

namespace shardis::server {

namespace {

using core::SetRef;
using core::ValueType;
using shard::Db;


// --- Single-key commands.

// Redis' events of a removal from a set (srem, spop), then "del" when it emptied the set.
void NotifySetChange(Db& db, std::string_view key, std::string_view event, bool emptied) {
  shard::NotifyKeyspaceEvent(kNotifySet, event, key, db.index());
  if (emptied) shard::NotifyKeyspaceEvent(kNotifyGeneric, "del", key, db.index());
}

void CmdSAdd(ArgSlice args, ShardContext& ctx) {
  bool wrong_type;
  Db::Iterator it = FindTyped(ctx, args[1], ValueType::kSet, kForWrite, &wrong_type);
  if (wrong_type) return;
  if (!Db::Found(it)) {
    bool inserted;
    it = ctx.db.FindOrInsert(args[1], ctx.hash, ctx.now_ms, &inserted);
    SetRef::InitCell(&it.value(), args[2]);
  }
  SetRef s(it.value());
  int64_t added = 0;
  for (size_t i = 2; i < args.size(); ++i) added += s.Add(args[i]) ? 1 : 0;
  ctx.shard.AddDirty(added);
  if (added > 0) NotifyKeyspaceEvent(ctx, kNotifySet, "sadd", args[1]);
  ctx.rb.Integer(added);
}

void CmdSRem(ArgSlice args, ShardContext& ctx) {
  bool wrong_type;
  Db::Iterator it = FindTyped(ctx, args[1], ValueType::kSet, kForWrite, &wrong_type);
  if (wrong_type) return;
  if (!Db::Found(it)) return ctx.rb.Integer(0);
  SetRef s(it.value());
  int64_t removed = 0;
  bool emptied = false;
  for (size_t i = 2; i < args.size(); ++i) {
    removed += s.Remove(args[i]) ? 1 : 0;
    if (s.Size() == 0) {
      ctx.db.Erase(it, args[1], ctx.hash);
      emptied = true;
      break;
    }
  }
  ctx.shard.AddDirty(removed);
  if (removed > 0) NotifySetChange(ctx.db, args[1], "srem", emptied);
  ctx.rb.Integer(removed);
}

void CmdSIsMember(ArgSlice args, ShardContext& ctx) {
  bool wrong_type;
  Db::Iterator it = FindTyped(ctx, args[1], ValueType::kSet, kForRead, &wrong_type);
  if (wrong_type) return;
  ctx.rb.Integer(Db::Found(it) && SetRef(it.value()).Contains(args[2]) ? 1 : 0);
}

void CmdSMIsMember(ArgSlice args, ShardContext& ctx) {
  bool wrong_type;
  Db::Iterator it = FindTyped(ctx, args[1], ValueType::kSet, kForRead, &wrong_type);
  if (wrong_type) return;
  ctx.rb.ArrayHeader(args.size() - 2);
  for (size_t i = 2; i < args.size(); ++i) {
    ctx.rb.Integer(Db::Found(it) && SetRef(it.value()).Contains(args[i]) ? 1 : 0);
  }
}

void CmdSCard(ArgSlice args, ShardContext& ctx) {
  bool wrong_type;
  Db::Iterator it = FindTyped(ctx, args[1], ValueType::kSet, kForRead, &wrong_type);
  if (wrong_type) return;
  ctx.rb.Integer(Db::Found(it) ? int64_t(SetRef(it.value()).Size()) : 0);
}

void ReplyWholeSet(core::ReplyBuilder& rb, SetRef s) {
  rb.SetHeader(s.Size());
  s.ForEach([&](std::string_view m) { rb.Bulk(m); });
}

void CmdSMembers(ArgSlice args, ShardContext& ctx) {
  bool wrong_type;
  Db::Iterator it = FindTyped(ctx, args[1], ValueType::kSet, kForRead, &wrong_type);
  if (wrong_type) return;
  if (!Db::Found(it)) return ctx.rb.SetHeader(0);
  ReplyWholeSet(ctx.rb, SetRef(it.value()));
}

// SPOP key [count]
void CmdSPop(ArgSlice args, ShardContext& ctx) {
  if (args.size() > 3) return ctx.rb.Error(kSyntaxErr);
  ArgParser p(args, 2);
  // No count: one member as a bulk string.
  const int64_t count = args.size() == 3 ? p.NextInRange(0, INT64_MAX, kMustBePositiveErr) : -1;
  if (p.ReplyError(ctx.rb)) return;
  bool wrong_type;
  Db::Iterator it = FindTyped(ctx, args[1], ValueType::kSet, kForWrite, &wrong_type);
  if (wrong_type) return;
  if (!Db::Found(it)) return count < 0 ? ctx.rb.Null() : ctx.rb.SetHeader(0);
  SetRef s(it.value());
  auto& rng = ThreadRng();
  // The journal replays the draw, not a new one: SREM of the members drawn, or DEL when the
  // whole set went (as Redis propagates SPOP).
  const bool journal = ctx.journaling();
  std::vector<std::string>* srem = nullptr;
  if (journal) {
    ctx.journal_effect.Replace({"SREM", std::string(args[1])});
    srem = &ctx.journal_effect.last();
  }
  if (count < 0) {
    const std::string m = s.Random(rng);
    s.Remove(m);
    if (journal) srem->push_back(m);
    const bool emptied = s.Size() == 0;
    if (emptied) ctx.db.Erase(it, args[1], ctx.hash);
    ctx.shard.AddDirty();
    NotifySetChange(ctx.db, args[1], "spop", emptied);
    return ctx.rb.Bulk(m);
  }
  if (count == 0) return ctx.rb.SetHeader(0);
  ctx.shard.AddDirty(std::min<uint64_t>(uint64_t(count), s.Size()));  // one per member popped
  if (uint64_t(count) >= s.Size()) {
    if (journal) ctx.journal_effect.Replace({"DEL", std::string(args[1])});
    ReplyWholeSet(ctx.rb, s);
    ctx.db.Erase(it, args[1], ctx.hash);
    NotifySetChange(ctx.db, args[1], "spop", true);
    return;
  }
  NotifySetChange(ctx.db, args[1], "spop", false);
  ctx.rb.SetHeader(count);
  for (int64_t i = 0; i < count; ++i) {
    const std::string m = s.Random(rng);
    s.Remove(m);
    if (journal) srem->push_back(m);
    ctx.rb.Bulk(m);
  }
}

// SRANDMEMBER key [count] (Redis' srandmemberWithCountCommand).
void CmdSRandMember(ArgSlice args, ShardContext& ctx) {
  if (args.size() > 3) return ctx.rb.Error(kSyntaxErr);
  auto& rng = ThreadRng();
  if (args.size() == 2) {
    bool wrong_type;
    Db::Iterator it = FindTyped(ctx, args[1], ValueType::kSet, kForRead, &wrong_type);
    if (wrong_type) return;
    if (!Db::Found(it)) return ctx.rb.Null();
    return ctx.rb.Bulk(SetRef(it.value()).Random(rng));
  }
  int64_t l;
  if (!ParseRandomCount(args[2], ctx.rb, &l)) return;
  bool wrong_type;
  Db::Iterator it = FindTyped(ctx, args[1], ValueType::kSet, kForRead, &wrong_type);
  if (wrong_type) return;
  if (!Db::Found(it) || l == 0) return ctx.rb.ArrayHeader(0);
  SetRef s(it.value());
  const size_t size = s.Size();
  if (l < 0) {
    ctx.rb.ArrayHeader(uint64_t(-l));
    for (int64_t i = 0; i < -l; ++i) ctx.rb.Bulk(s.Random(rng));
    return;
  }
  const uint64_t count = uint64_t(l);
  if (count >= size) {
    ctx.rb.ArrayHeader(size);
    s.ForEach([&](std::string_view m) { ctx.rb.Bulk(m); });
    return;
  }
  ctx.rb.ArrayHeader(count);
  if (count * 3 > size) {
    std::vector<std::string> all;
    all.reserve(size);
    s.ForEach([&](std::string_view m) { all.emplace_back(m); });
    for (uint64_t i = 0; i < count; ++i) {
      std::swap(all[i], all[i + rng() % (size - i)]);
      ctx.rb.Bulk(all[i]);
    }
    return;
  }
  absl::flat_hash_set<std::string> seen;
  while (seen.size() < count) {
    std::string m = s.Random(rng);
    if (seen.insert(m).second) ctx.rb.Bulk(m);
  }
}

// SSCAN key cursor [MATCH pattern] [COUNT count]
void CmdSScan(ArgSlice args, ShardContext& ctx) {
  uint64_t cursor;
  if (!core::ParseScanCursor(args[2], &cursor)) return ctx.rb.Error(kInvalidCursorErr);
  bool wrong_type;
  Db::Iterator it = FindTyped(ctx, args[1], ValueType::kSet, kForRead, &wrong_type);
  if (wrong_type) return;
  if (!Db::Found(it)) return ReplyEmptyScan(ctx.rb);
  ScanOptions opts;
  if (!ParseScanOptions(args, 3, ScanTarget::kSetOrZSet, ctx.rb, &opts)) return;
  // Copies: an intset's members are formatted into a scratch buffer.
  std::vector<std::string> found;
  cursor = SetRef(it.value()).Scan(cursor, opts.count, [&](std::string_view m) {
    if (opts.Matches(m)) found.emplace_back(m);
  });
  ctx.rb.ArrayHeader(2);
  ctx.rb.Bulk(std::to_string(cursor));
  ctx.rb.ArrayHeader(found.size());
  for (const std::string& m : found) ctx.rb.Bulk(m);
}

// --- Multi-key commands.

enum class SetOp { kInter, kUnion, kDiff };

// The event of a *STORE that stored a set.
constexpr std::string_view StoreEventOf(SetOp op) {
  return op == SetOp::kInter ? "sinterstore" : (op == SetOp::kUnion ? "sunionstore" : "sdiffstore");
}

// What the read phase learnt about each source key (indexed like the transaction's keys; each
// shard writes only the slots of its own keys).
struct SourceSets {
  std::vector<std::vector<std::string>> members;
  std::vector<uint8_t> exists;
  std::vector<uint8_t> wrong_type;

  explicit SourceSets(size_t n) : members(n), exists(n, 0), wrong_type(n, 0) {}
  bool AnyWrongType() const {
    return std::find(wrong_type.begin(), wrong_type.end(), 1) != wrong_type.end();
  }
};

// The read phase: for the keys with index >= first, the members of those that are sets.
// Write lookups (no hit/miss counts) for the *STORE forms, as Redis does.
void ReadSources(shard::Transaction& tx, uint32_t first, bool for_store, SourceSets* out) {
  tx.Run([&](shard::TxShard& t) {
    for (uint32_t i : t.keys) {
      if (i < first) continue;
      Db::Iterator it = for_store ? t.db.Find(tx.key(i), tx.hash(i), t.now_ms)
                                  : LookupRead(t.shard, t.db, tx.key(i), tx.hash(i), t.now_ms);
      if (!Db::Found(it)) continue;
      if (it.value().type() != ValueType::kSet) {
        out->wrong_type[i] = 1;
        continue;
      }
      out->exists[i] = 1;
      SetRef s(it.value());
      std::vector<std::string>& v = out->members[i];
      v.reserve(s.Size());
      s.ForEach([&](std::string_view m) { v.emplace_back(m); });
    }
  });
}

// The result of op over the sources [first, n). Members are distinct.
std::vector<std::string> Combine(SetOp op, SourceSets& src, uint32_t first, size_t limit = 0) {
  const uint32_t n = static_cast<uint32_t>(src.members.size());
  std::vector<std::string> result;
  if (op == SetOp::kInter) {
    // Any missing key makes it empty; else probe the smallest set against the others.
    for (uint32_t i = first; i < n; ++i) {
      if (!src.exists[i]) return result;
    }
    uint32_t smallest = first;
    for (uint32_t i = first; i < n; ++i) {
      if (src.members[i].size() < src.members[smallest].size()) smallest = i;
    }
    std::vector<absl::flat_hash_set<std::string_view>> others;
    for (uint32_t i = first; i < n; ++i) {
      if (i == smallest) continue;
      others.emplace_back(src.members[i].begin(), src.members[i].end());
    }
    for (std::string& m : src.members[smallest]) {
      bool in_all = true;
      for (const auto& o : others) {
        if (!o.contains(m)) {
          in_all = false;
          break;
        }
      }
      if (!in_all) continue;
      result.push_back(std::move(m));
      if (limit != 0 && result.size() >= limit) break;
    }
    return result;
  }
  if (op == SetOp::kUnion) {
    absl::flat_hash_set<std::string> all;
    for (uint32_t i = first; i < n; ++i) {
      for (std::string& m : src.members[i]) all.insert(std::move(m));
    }
    result.reserve(all.size());
    for (auto it = all.begin(); it != all.end();) {
      auto next = std::next(it);
      result.push_back(std::move(all.extract(it).value()));
      it = next;
    }
    return result;
  }
  // Diff: the first set minus every other.
  absl::flat_hash_set<std::string_view> removed;
  for (uint32_t i = first + 1; i < n; ++i) {
    removed.insert(src.members[i].begin(), src.members[i].end());
  }
  for (std::string& m : src.members[first]) {
    if (!removed.contains(m)) result.push_back(std::move(m));
  }
  return result;
}

// SINTER / SUNION / SDIFF key [key ...]
template <SetOp kOp>
void CmdSetOp(ArgSlice args, ConnContext& ctx) {
  shard::Transaction tx(ctx.conn.db, args.subspan(1), shard::Transaction::kRead);
  SourceSets src(tx.key_count());
  ReadSources(tx, 0, /*for_store=*/false, &src);
  tx.Conclude();
  if (src.AnyWrongType()) return ctx.rb.Error(kWrongTypeErr);
  std::vector<std::string> result = Combine(kOp, src, 0);
  ctx.rb.SetHeader(result.size());
  for (const std::string& m : result) ctx.rb.Bulk(m);
}

// SINTERSTORE / SUNIONSTORE / SDIFFSTORE destination key [key ...]
template <SetOp kOp>
void CmdSetOpStore(ArgSlice args, ConnContext& ctx) {
  shard::Transaction tx(ctx.conn.db, args.subspan(1), shard::Transaction::kWrite);
  SourceSets src(tx.key_count());
  ReadSources(tx, 1, /*for_store=*/true, &src);
  if (src.AnyWrongType()) {
    tx.Conclude();
    return ctx.rb.Error(kWrongTypeErr);
  }
  const std::vector<std::string> result = Combine(kOp, src, 1);
  // The write phase, on the destination's shard only: replace whatever it held.
  tx.RunOn(tx.shard_of(0), [&](shard::TxShard& t) {
    const std::string_view key = tx.key(0);
    Db::Iterator it = t.db.Find(key, tx.hash(0), t.now_ms);
    const bool existed = Db::Found(it);
    // The old value goes to the lazy-free queue under lazyfree-lazy-server-del (Redis' setKey
    // and dbDelete).
    if (existed) t.db.ReleaseOldValue(it);
    if (result.empty()) {
      if (existed) t.db.Erase(it, key, tx.hash(0));
    } else {
      // Redis' setKey: an existing key is overwritten (no "new" event) and loses its TTL.
      bool inserted;
      it = t.db.FindOrInsert(key, tx.hash(0), t.now_ms, &inserted);
      if (!inserted) t.db.SetExpire(it, key, tx.hash(0), 0);
      SetRef::InitCell(&it.value(), result.front());
      SetRef s(it.value());
      for (const std::string& m : result) s.Add(m);
    }
    if (existed || !result.empty()) {
      t.db.NoteModified(key);
      t.shard.AddDirty();  // one for the store or the delete, as in Redis
    }
    if (!result.empty()) {
      shard::NotifyKeyspaceEvent(kNotifySet, StoreEventOf(kOp), key, t.db.index());
    } else if (existed) {
      shard::NotifyKeyspaceEvent(kNotifyGeneric, "del", key, t.db.index());
    }
  });
  tx.Conclude();
  ctx.rb.Integer(int64_t(result.size()));
}

// SINTERCARD numkeys key [key ...] [LIMIT limit]
void CmdSInterCard(ArgSlice args, ConnContext& ctx) {
  int64_t numkeys;
  if (!core::ParseInt64(args[1], &numkeys) || numkeys < 1) {
    return ctx.rb.Error("ERR numkeys should be greater than 0");
  }
  if (uint64_t(numkeys) > args.size() - 2) {
    return ctx.rb.Error("ERR Number of keys can't be greater than number of args");
  }
  int64_t limit = 0;
  ArgParser p(args, 2 + numkeys);
  while (p.HasNext()) {
    if (p.Check("LIMIT", 1)) {
      limit = p.NextInRange(0, INT64_MAX, "ERR LIMIT can't be negative");
    } else {
      p.Fail(kSyntaxErr);
    }
  }
  if (p.ReplyError(ctx.rb)) return;
  shard::Transaction tx(ctx.conn.db, args.subspan(2, numkeys), shard::Transaction::kRead);
  SourceSets src(tx.key_count());
  ReadSources(tx, 0, /*for_store=*/false, &src);
  tx.Conclude();
  if (src.AnyWrongType()) return ctx.rb.Error(kWrongTypeErr);
  ctx.rb.Integer(int64_t(Combine(SetOp::kInter, src, 0, size_t(limit)).size()));
}

// SMOVE source destination member: the destination's type is checked before anything is
// removed from the source.
void CmdSMove(ArgSlice args, ConnContext& ctx) {
  const std::string_view member = args[3];
  shard::Transaction tx(ctx.conn.db, args.subspan(1, 2), shard::Transaction::kWrite);
  uint8_t exists[2] = {0, 0}, wrong[2] = {0, 0}, has_member = 0;
  tx.Run([&](shard::TxShard& t) {
    for (uint32_t i : t.keys) {
      Db::Iterator it = t.db.Find(tx.key(i), tx.hash(i), t.now_ms);
      if (!Db::Found(it)) continue;
      exists[i] = 1;
      if (it.value().type() != ValueType::kSet) {
        wrong[i] = 1;
      } else if (i == 0) {
        has_member = SetRef(it.value()).Contains(member) ? 1 : 0;
      }
    }
  });
  if (!exists[0]) {
    tx.Conclude();
    return ctx.rb.Integer(0);
  }
  if (wrong[0] || wrong[1]) {
    tx.Conclude();
    return ctx.rb.Error(kWrongTypeErr);
  }
  if (tx.key(0) == tx.key(1) || !has_member) {
    tx.Conclude();
    return ctx.rb.Integer(has_member);
  }
  tx.Run(
      [&](shard::TxShard& t) {
        for (uint32_t i : t.keys) {
          const std::string_view key = tx.key(i);
          if (i == 0) {
            // Found unless its TTL ran out between the phases (then it is gone anyway).
            Db::Iterator it = t.db.Find(key, tx.hash(i), t.now_ms);
            if (Db::Found(it)) {
              SetRef s(it.value());
              s.Remove(member);
              const bool emptied = s.Size() == 0;
              if (emptied) t.db.Erase(it, key, tx.hash(i));
              NotifySetChange(t.db, key, "srem", emptied);
            }
            t.db.NoteModified(key);
            t.shard.AddDirty();
          } else {
            bool inserted;
            Db::Iterator it = t.db.FindOrInsert(key, tx.hash(i), t.now_ms, &inserted);
            if (inserted) SetRef::InitCell(&it.value(), member);
            if (SetRef(it.value()).Add(member)) {
              t.db.NoteModified(key);
              t.shard.AddDirty();  // Redis counts the add apart from the removal
              shard::NotifyKeyspaceEvent(kNotifySet, "sadd", key, t.db.index());
            }
          }
        }
      },
      /*conclude=*/true);
  ctx.rb.Integer(1);
}

}  // namespace

void RegisterSetFamily(CommandRegistry* r) {
  constexpr uint32_t kW = kWrite, kR = kReadOnly, kD = kDenyOom, kF = kFast;
  r->Register({.name = "sadd", .arity = -3, .flags = kW | kD | kF, .keys = kOneKey,
               .acl_categories = "write set fast", .on_shard = CmdSAdd,
               .docs = {.group = "set", .since = "1.0.0",
                        .complexity = "O(1) for each element added, so O(N) to add N elements when "
                                      "the command is called with multiple arguments.",
                        .summary = "Adds members to a set, creating it when needed.",
                        .key_flags = "RW insert"}});
  r->Register({.name = "srem", .arity = -3, .flags = kW | kF, .keys = kOneKey,
               .acl_categories = "write set fast", .on_shard = CmdSRem,
               .docs = {.group = "set", .since = "1.0.0",
                        .complexity = "O(N) where N is the number of members to be removed.",
                        .summary = "Removes members from a set.", .key_flags = "RW delete"}});
  r->Register({.name = "sismember", .arity = 3, .flags = kR | kF, .keys = kOneKey,
               .acl_categories = "read set fast", .on_shard = CmdSIsMember,
               .docs = {.group = "set", .since = "1.0.0", .complexity = "O(1)",
                        .summary = "Tells whether a value is a member of a set.",
                        .key_flags = "RO"}});
  r->Register({.name = "smismember", .arity = -3, .flags = kR | kF, .keys = kOneKey,
               .acl_categories = "read set fast", .on_shard = CmdSMIsMember,
               .docs = {.group = "set", .since = "6.2.0",
                        .complexity = "O(N) where N is the number of elements being checked for "
                                      "membership",
                        .summary = "Tells for each of several values whether it is a member of a "
                                   "set.", .key_flags = "RO access"}});
  r->Register({.name = "scard", .arity = 2, .flags = kR | kF, .keys = kOneKey,
               .acl_categories = "read set fast", .on_shard = CmdSCard,
               .docs = {.group = "set", .since = "1.0.0", .complexity = "O(1)",
                        .summary = "Returns the number of members of a set.", .key_flags = "RO"}});
  r->Register({.name = "smembers", .arity = 2, .flags = kR, .keys = kOneKey,
               .acl_categories = "read set slow", .on_shard = CmdSMembers,
               .docs = {.group = "set", .since = "1.0.0",
                        .complexity = "O(N) where N is the set cardinality.",
                        .summary = "Returns every member of a set.", .key_flags = "RO access",
                        .tips = "nondeterministic_output_order"}});
  r->Register({.name = "spop", .arity = -2, .flags = kW | kF, .keys = kOneKey,
               .acl_categories = "write set fast", .on_shard = CmdSPop,
               .docs = {.group = "set", .since = "1.0.0",
                        .complexity = "Without the count argument O(1), otherwise O(N) where N is "
                                      "the value of the passed count.",
                        .summary = "Removes and returns random members of a set.",
                        .key_flags = "RW access delete", .tips = "nondeterministic_output"}});
  r->Register({.name = "srandmember", .arity = -2, .flags = kR, .keys = kOneKey,
               .acl_categories = "read set slow", .on_shard = CmdSRandMember,
               .docs = {.group = "set", .since = "1.0.0",
                        .complexity = "Without the count argument O(1), otherwise O(N) where N is "
                                      "the absolute value of the passed count.",
                        .summary = "Returns random members of a set without removing them.",
                        .key_flags = "RO access", .tips = "nondeterministic_output"}});
  r->Register({.name = "sscan", .arity = -3, .flags = kR, .keys = kOneKey,
               .acl_categories = "read set slow", .on_shard = CmdSScan,
               .docs = {.group = "set", .since = "2.8.0",
                        .complexity = "O(1) for every call. O(N) for a complete iteration, "
                                      "including enough command calls for the cursor to return "
                                      "back to 0. N is the number of elements inside the "
                                      "collection..",
                        .summary = "Walks the members of a set a few at a time with a cursor.",
                        .key_flags = "RO access", .tips = "nondeterministic_output"}});

  r->Register({.name = "sinter", .arity = -2, .flags = kR, .keys = kAllKeys,
               .acl_categories = "read set slow", .on_conn = CmdSetOp<SetOp::kInter>,
               .docs = {.group = "set", .since = "1.0.0",
                        .complexity = "O(N*M) worst case where N is the cardinality of the "
                                      "smallest set and M is the number of sets.",
                        .summary = "Returns the members common to every given set.",
                        .key_flags = "RO access", .tips = "nondeterministic_output_order"}});
  r->Register({.name = "sunion", .arity = -2, .flags = kR, .keys = kAllKeys,
               .acl_categories = "read set slow", .on_conn = CmdSetOp<SetOp::kUnion>,
               .docs = {.group = "set", .since = "1.0.0",
                        .complexity = "O(N) where N is the total number of elements in all given "
                                      "sets.",
                        .summary = "Returns the members of any of the given sets.",
                        .key_flags = "RO access", .tips = "nondeterministic_output_order"}});
  r->Register({.name = "sdiff", .arity = -2, .flags = kR, .keys = kAllKeys,
               .acl_categories = "read set slow", .on_conn = CmdSetOp<SetOp::kDiff>,
               .docs = {.group = "set", .since = "1.0.0",
                        .complexity = "O(N) where N is the total number of elements in all given "
                                      "sets.",
                        .summary = "Returns the members of the first set that are in none of the "
                                   "others.", .key_flags = "RO access",
                        .tips = "nondeterministic_output_order"}});
  r->Register({.name = "sinterstore", .arity = -3, .flags = kW | kD, .keys = kAllKeys,
               .acl_categories = "write set slow", .on_conn = CmdSetOpStore<SetOp::kInter>,
               .docs = {.group = "set", .since = "1.0.0",
                        .complexity = "O(N*M) worst case where N is the cardinality of the "
                                      "smallest set and M is the number of sets.",
                        .summary = "Stores the members common to every given set in a key.",
                        .key_flags = "RW update",
                        .other_key_flags = "RO access"}});
  r->Register({.name = "sunionstore", .arity = -3, .flags = kW | kD, .keys = kAllKeys,
               .acl_categories = "write set slow", .on_conn = CmdSetOpStore<SetOp::kUnion>,
               .docs = {.group = "set", .since = "1.0.0",
                        .complexity = "O(N) where N is the total number of elements in all given "
                                      "sets.",
                        .summary = "Stores the members of any of the given sets in a key.",
                        .key_flags = "OW update",
                        .other_key_flags = "RO access"}});
  r->Register({.name = "sdiffstore", .arity = -3, .flags = kW | kD, .keys = kAllKeys,
               .acl_categories = "write set slow", .on_conn = CmdSetOpStore<SetOp::kDiff>,
               .docs = {.group = "set", .since = "1.0.0",
                        .complexity = "O(N) where N is the total number of elements in all given "
                                      "sets.",
                        .summary = "Stores the members of the first set that are in none of the "
                                   "others in a key.", .key_flags = "OW update",
                        .other_key_flags = "RO access"}});
  // Keys after numkeys (movable keys): no legacy key range, as in Redis.
  r->Register({.name = "sintercard", .arity = -3, .flags = kR, .keys = kNoKeys,
               .acl_categories = "read set slow", .on_conn = CmdSInterCard,
               .key_finder = NumKeysFirst,
               .docs = {.group = "set", .since = "7.0.0",
                        .complexity = "O(N*M) worst case where N is the cardinality of the "
                                      "smallest set and M is the number of sets.",
                        .summary = "Returns how many members are common to every given set, "
                                   "optionally up to a limit.", .key_flags = "RO access"}});
  r->Register({.name = "smove", .arity = 4, .flags = kW | kF, .keys = kTwoKeys,
               .acl_categories = "write set fast", .on_conn = CmdSMove,
               .docs = {.group = "set", .since = "1.0.0", .complexity = "O(1)",
                        .summary = "Moves a member from one set to another.",
                        .key_flags = "RW access delete",
                        .other_key_flags = "RW insert"}});
}

}  // namespace shardis::server
