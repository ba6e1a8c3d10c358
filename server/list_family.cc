// List commands: LPUSH/RPUSH(X), LPOP/RPOP, LLEN, LRANGE, LINDEX, LSET, LINSERT, LREM, LTRIM,
// LPOS, and the multi-key LMOVE, RPOPLPUSH, LMPOP. The list itself is core::List (core/list.h);
// the pieces the blocking commands reuse are declared in list_family.h.
//
// Argument errors are checked in Redis' order (some commands parse their numbers before the key
// lookup, others after), because clients see which error wins.
#include "server/list_family.h"

#include <gflags/gflags.h>

#include <array>
#include <limits>
#include <string>
#include <vector>

#include "core/number.h"
#include "core/string_util.h"
#include "core/value_object.h"
#include "server/arg_parser.h"
#include "server/blocking_family.h"
#include "server/command_keys.h"
#include "server/connection_state.h"
#include "server/key_lookup.h"
#include "server/mpop_args.h"
#include "shard/transaction.h"

DEFINE_int32(list_max_listpack_size, shardis::core::kListMaxListpackSizeDefault,
             "Redis' list-max-listpack-size: -1..-5 = list nodes of at most 4..64 KiB, N > 0 = "
             "at most N elements per node");

namespace shardis::server {

namespace {

using core::List;
using core::ListEnd;
using shard::Db;

constexpr std::string_view kIndexOutOfRangeErr = "ERR index out of range";
constexpr std::string_view kRankZeroErr =
    "ERR RANK can't be zero: use 1 to start from the first match, 2 from the second ... or use "
    "negative to start from the end of the list";

List* ListOf(Db::Iterator it) { return static_cast<List*>(it.value().object()); }

// Redis' list events: lpush/rpush for a push at either end, lpop/rpop for a pop, and "del" when
// the pop (or LREM, LTRIM) emptied the list and removed the key.
void NotifyPushed(Db& db, std::string_view key, ListEnd end) {
  shard::NotifyKeyspaceEvent(kNotifyList, end == ListEnd::kHead ? "lpush" : "rpush", key,
                             db.index());
}
void NotifyListEvent(Db& db, std::string_view key, std::string_view event, bool deleted) {
  shard::NotifyKeyspaceEvent(kNotifyList, event, key, db.index());
  if (deleted) shard::NotifyKeyspaceEvent(kNotifyGeneric, "del", key, db.index());
}
void NotifyPopped(Db& db, std::string_view key, ListEnd end, bool deleted) {
  NotifyListEvent(db, key, end == ListEnd::kHead ? "lpop" : "rpop", deleted);
}

// After elements left the list: an emptied list's key goes; a remaining list may turn back into
// a listpack (Redis 7.2's label, see List::ConvertAfterShrinking).
void EraseOrShrink(Db& db, Db::Iterator it, std::string_view key, uint64_t hash, bool emptied) {
  if (emptied) {
    db.Erase(it, key, hash);
  } else {
    ListOf(it)->ConvertAfterShrinking();
  }
}

// ---- Single-key commands (on the key's shard).

template <ListEnd kEnd, bool kOnlyIfExists>
void CmdPush(ArgSlice args, ShardContext& ctx) {
  bool wrong_type;
  Db::Iterator it = FindTyped(ctx, args[1], core::ValueType::kList, kForWrite, &wrong_type);
  if (wrong_type) return;
  if (!Db::Found(it)) {
    if (kOnlyIfExists) return ctx.rb.Integer(0);
    bool inserted;
    it = ctx.db.FindOrInsert(args[1], ctx.hash, ctx.now_ms, &inserted);
    it.value().SetObject(core::ValueType::kList, core::ShardNew<List>(),
                         List::kEncodingQuicklist);
  }
  List* list = ListOf(it);
  size_t add_bytes = 0;
  for (size_t i = 2; i < args.size(); ++i) add_bytes += args[i].size();
  list->ConvertBeforeGrowing(add_bytes, args.size() - 2);
  for (size_t i = 2; i < args.size(); ++i) list->Push(kEnd, args[i]);
  ctx.shard.AddDirty(args.size() - 2);
  NotifyPushed(ctx.db, args[1], kEnd);
  ctx.rb.Integer(static_cast<int64_t>(list->size()));
}

template <ListEnd kEnd>
void CmdPop(ArgSlice args, ShardContext& ctx) {
  if (args.size() > 3) {
    return ctx.rb.Error(WrongArgsError(kEnd == ListEnd::kHead ? "lpop" : "rpop"));
  }
  const bool has_count = args.size() == 3;
  ArgParser p(args, 2);
  const int64_t count = has_count ? p.NextInRange(0, INT64_MAX, kMustBePositiveErr) : 1;
  if (p.ReplyError(ctx.rb)) return;
  bool wrong_type;
  Db::Iterator it = FindTyped(ctx, args[1], core::ValueType::kList, kForWrite, &wrong_type);
  if (wrong_type) return;
  if (!Db::Found(it)) return has_count ? ctx.rb.NullArray() : ctx.rb.Null();
  if (has_count && count == 0) return ctx.rb.ArrayHeader(0);
  ctx.shard.AddDirty(PopFromList(ctx.db, it, args[1], ctx.hash, kEnd, static_cast<size_t>(count),
                                 has_count ? PopReply::kArray : PopReply::kBulk, ctx.rb));
}

void CmdLLen(ArgSlice args, ShardContext& ctx) {
  bool wrong_type;
  Db::Iterator it = FindTyped(ctx, args[1], core::ValueType::kList, kForRead, &wrong_type);
  if (wrong_type) return;
  ctx.rb.Integer(Db::Found(it) ? static_cast<int64_t>(ListOf(it)->size()) : 0);
}

void CmdLRange(ArgSlice args, ShardContext& ctx) {
  int64_t start, stop;
  if (!core::ParseInt64(args[2], &start) || !core::ParseInt64(args[3], &stop)) {
    return ctx.rb.Error(kNotIntegerErr);
  }
  bool wrong_type;
  Db::Iterator it = FindTyped(ctx, args[1], core::ValueType::kList, kForRead, &wrong_type);
  if (wrong_type) return;
  size_t first, count;
  if (!Db::Found(it) || !ListOf(it)->NormalizeRange(start, stop, &first, &count)) {
    return ctx.rb.ArrayHeader(0);
  }
  ctx.rb.ArrayHeader(count);
  ListOf(it)->ForRange(first, count, [&](std::string_view v) { ctx.rb.Bulk(v); });
}

void CmdLIndex(ArgSlice args, ShardContext& ctx) {
  bool wrong_type;
  Db::Iterator it = FindTyped(ctx, args[1], core::ValueType::kList, kForRead, &wrong_type);
  if (wrong_type) return;
  if (!Db::Found(it)) return ctx.rb.Null();
  int64_t index;
  if (!core::ParseInt64(args[2], &index)) return ctx.rb.Error(kNotIntegerErr);
  List::Iterator pos = ListOf(it)->At(index);
  if (!pos.Valid()) return ctx.rb.Null();
  char scratch[core::kInt64BufSize];
  ctx.rb.Bulk(pos.Get(scratch));
}

void CmdLSet(ArgSlice args, ShardContext& ctx) {
  bool wrong_type;
  Db::Iterator it = FindTyped(ctx, args[1], core::ValueType::kList, kForWrite, &wrong_type);
  if (wrong_type) return;
  if (!Db::Found(it)) return ctx.rb.Error(kNoSuchKeyErr);
  int64_t index;
  if (!core::ParseInt64(args[2], &index)) return ctx.rb.Error(kNotIntegerErr);
  // As Redis: the label may turn quicklist even when the index then turns out out of range.
  List* list = ListOf(it);
  list->ConvertBeforeGrowing(args[3].size(), 1);
  if (!list->Set(index, args[3])) return ctx.rb.Error(kIndexOutOfRangeErr);
  list->ConvertAfterShrinking();  // the new element may be smaller
  ctx.shard.AddDirty();
  NotifyKeyspaceEvent(ctx, kNotifyList, "lset", args[1]);
  ctx.rb.Ok();
}

void CmdLInsert(ArgSlice args, ShardContext& ctx) {
  bool after;
  if (core::EqualsIgnoreCase(args[2], "after")) {
    after = true;
  } else if (core::EqualsIgnoreCase(args[2], "before")) {
    after = false;
  } else {
    return ctx.rb.Error(kSyntaxErr);
  }
  bool wrong_type;
  Db::Iterator it = FindTyped(ctx, args[1], core::ValueType::kList, kForWrite, &wrong_type);
  if (wrong_type) return;
  if (!Db::Found(it)) return ctx.rb.Integer(0);
  List* list = ListOf(it);
  list->ConvertBeforeGrowing(args[4].size(), 1);  // as Redis: before looking for the pivot
  if (!list->Insert(args[3], args[4], after)) return ctx.rb.Integer(-1);
  ctx.shard.AddDirty();
  NotifyKeyspaceEvent(ctx, kNotifyList, "linsert", args[1]);
  ctx.rb.Integer(static_cast<int64_t>(list->size()));
}

void CmdLRem(ArgSlice args, ShardContext& ctx) {
  int64_t count;
  if (!core::ParseInt64(args[2], &count)) return ctx.rb.Error(kNotIntegerErr);
  bool wrong_type;
  Db::Iterator it = FindTyped(ctx, args[1], core::ValueType::kList, kForWrite, &wrong_type);
  if (wrong_type) return;
  if (!Db::Found(it)) return ctx.rb.Integer(0);
  const size_t removed = ListOf(it)->Remove(args[3], count);
  const bool emptied = ListOf(it)->empty();
  if (removed > 0) EraseOrShrink(ctx.db, it, args[1], ctx.hash, emptied);
  ctx.shard.AddDirty(removed);  // one per element removed
  if (removed > 0) NotifyListEvent(ctx.db, args[1], "lrem", emptied);
  ctx.rb.Integer(static_cast<int64_t>(removed));
}

void CmdLTrim(ArgSlice args, ShardContext& ctx) {
  int64_t start, stop;
  if (!core::ParseInt64(args[2], &start) || !core::ParseInt64(args[3], &stop)) {
    return ctx.rb.Error(kNotIntegerErr);
  }
  bool wrong_type;
  Db::Iterator it = FindTyped(ctx, args[1], core::ValueType::kList, kForWrite, &wrong_type);
  if (wrong_type) return;
  if (Db::Found(it)) {
    const size_t before = ListOf(it)->size();
    ListOf(it)->Trim(start, stop);
    ctx.shard.AddDirty(before - ListOf(it)->size());  // one per element trimmed away
    const bool emptied = ListOf(it)->empty();
    EraseOrShrink(ctx.db, it, args[1], ctx.hash, emptied);
    NotifyListEvent(ctx.db, args[1], "ltrim", emptied);
  }
  ctx.rb.Ok();
}

// LPOS key element [RANK rank] [COUNT num-matches] [MAXLEN len]
void CmdLPos(ArgSlice args, ShardContext& ctx) {
  int64_t rank = 1, count = -1, maxlen = 0;  // count -1: no COUNT, a single reply
  ArgParser p(args, 3);
  while (p.HasNext()) {
    if (p.Check("RANK", 1)) {
      rank = p.Next<int64_t>();
      // Redis 7.2 refuses LONG_MIN, whose negation would overflow.
      if (p.ok() && rank == INT64_MIN) p.Fail(kOutOfLongRangeErr);
      if (p.ok() && rank == 0) p.Fail(kRankZeroErr);
    } else if (p.Check("COUNT", 1)) {
      count = p.NextInRange(0, INT64_MAX, "ERR COUNT can't be negative");
    } else if (p.Check("MAXLEN", 1)) {
      maxlen = p.NextInRange(0, INT64_MAX, "ERR MAXLEN can't be negative");
    } else {
      p.Fail(kSyntaxErr);
    }
  }
  if (p.ReplyError(ctx.rb)) return;
  bool wrong_type;
  Db::Iterator it = FindTyped(ctx, args[1], core::ValueType::kList, kForRead, &wrong_type);
  if (wrong_type) return;
  std::vector<size_t> matches;
  if (Db::Found(it)) {
    const size_t limit = count < 0 ? 1 : static_cast<size_t>(count);
    ListOf(it)->Pos(args[2], rank, limit, static_cast<size_t>(maxlen),
                    [&](size_t i) { matches.push_back(i); });
  }
  if (count < 0) {
    if (matches.empty()) return ctx.rb.Null();
    return ctx.rb.Integer(static_cast<int64_t>(matches[0]));
  }
  ctx.rb.ArrayHeader(matches.size());
  for (size_t i : matches) ctx.rb.Integer(static_cast<int64_t>(i));
}

// ---- Multi-key commands (in the connection, over a transaction).

void CmdLMove(ArgSlice args, ConnContext& ctx) {
  ListEnd from, to;
  if (!ParseListEnd(args[3], &from) || !ParseListEnd(args[4], &to)) {
    return ctx.rb.Error(kSyntaxErr);
  }
  if (!ListMove(ctx, args[1], args[2], from, to)) ctx.rb.Null();
}

void CmdRPopLPush(ArgSlice args, ConnContext& ctx) {
  if (!ListMove(ctx, args[1], args[2], ListEnd::kTail, ListEnd::kHead)) {
    ctx.rb.Null();
  }
}

// LMPOP numkeys key [key ...] LEFT|RIGHT [COUNT count]: the first key that exists decides.
void CmdLMPop(ArgSlice args, ConnContext& ctx) {
  MPopArgs a;
  if (!ParseMPopArgs(args, 1, "left", "right", &a, ctx.rb)) return;
  const ListEnd end = a.second_where ? ListEnd::kTail : ListEnd::kHead;
  auto pop = [&](Db& db, Db::Iterator it, std::string_view key, uint64_t hash,
                 core::ReplyBuilder& rb) {
    return PopFromList(db, it, key, hash, end, size_t(a.count), PopReply::kKeyArray, rb);
  };
  FinishPopReply(PopFirst(ctx, a.keys, core::ValueType::kList, pop, /*waiter=*/nullptr), ctx.rb);
}

// The state of one key as seen by a multi-key list command's first phase.
enum class KeyState : uint8_t { kMissing, kWrongType, kList };

KeyState StateOf(Db& db, std::string_view key, uint64_t hash, int64_t now_ms) {
  Db::Iterator it = db.Find(key, hash, now_ms);
  if (!Db::Found(it)) return KeyState::kMissing;
  return it.value().type() == core::ValueType::kList ? KeyState::kList : KeyState::kWrongType;
}

}  // namespace

// ---- list_family.h

size_t PopFromList(Db& db, Db::Iterator it, std::string_view key, uint64_t hash, ListEnd end,
                   size_t count, PopReply shape, core::ReplyBuilder& rb) {
  List* list = ListOf(it);
  DCHECK(!list->empty());
  if (shape == PopReply::kBulk || shape == PopReply::kKeyElement) count = 1;
  const size_t n = std::min(count, list->size());
  switch (shape) {
    case PopReply::kBulk:
      break;
    case PopReply::kArray:
      rb.ArrayHeader(n);
      break;
    case PopReply::kKeyArray:
      rb.ArrayHeader(2);
      rb.Bulk(key);
      rb.ArrayHeader(n);
      break;
    case PopReply::kKeyElement:
      rb.ArrayHeader(2);
      rb.Bulk(key);
      break;
  }
  list->PopN(end, n, [&](std::string_view v) { rb.Bulk(v); });
  const bool emptied = list->empty();
  EraseOrShrink(db, it, key, hash, emptied);
  db.NoteModified(key);
  NotifyPopped(db, key, end, emptied);
  return n;
}

size_t PushToList(Db& db, std::string_view key, uint64_t hash, int64_t now_ms, ListEnd end,
                  std::string_view value) {
  bool inserted;
  Db::Iterator it = db.FindOrInsert(key, hash, now_ms, &inserted);
  if (inserted) {
    it.value().SetObject(core::ValueType::kList, core::ShardNew<List>(),
                         List::kEncodingQuicklist);
  }
  DCHECK(it.value().type() == core::ValueType::kList);
  List* list = ListOf(it);
  list->ConvertBeforeGrowing(value.size(), 1);
  list->Push(end, value);
  db.NoteModified(key);
  NotifyPushed(db, key, end);
  return list->size();
}

bool ParseListEnd(std::string_view arg, ListEnd* end) {
  if (core::EqualsIgnoreCase(arg, "left")) {
    *end = ListEnd::kHead;
  } else if (core::EqualsIgnoreCase(arg, "right")) {
    *end = ListEnd::kTail;
  } else {
    return false;
  }
  return true;
}

MoveResult MoveOnShard(shard::Shard& shard, Db& db, std::string_view src, uint64_t src_hash,
                       std::string_view dst, uint64_t dst_hash, int64_t now_ms, ListEnd from,
                       ListEnd to, std::string* value) {
  const KeyState src_state = StateOf(db, src, src_hash, now_ms);
  if (src_state == KeyState::kMissing) return MoveResult::kMissing;
  if (src_state == KeyState::kWrongType) return MoveResult::kWrongType;
  if (StateOf(db, dst, dst_hash, now_ms) == KeyState::kWrongType) {
    // The source keeps its element: a BLMOVE woken for it passes it to the next waiter.
    db.NoteReady(src);
    return MoveResult::kWrongType;
  }
  // Looked up again: the destination's lookup may have expired (erased) a key.
  Db::Iterator it = db.Find(src, src_hash, now_ms);
  List* list = ListOf(it);
  list->Pop(from, value);
  shard.AddDirty();
  if (src == dst) {
    // A rotation: the list never empties. Redis' label checks: the push's, then the pop's.
    list->ConvertBeforeGrowing(value->size(), 1);
    list->Push(to, *value);
    list->ConvertAfterShrinking();
    db.NoteModified(src);
    NotifyPushed(db, src, to);  // Redis' order: the push, then the pop
    NotifyPopped(db, src, from, false);
    return MoveResult::kMoved;
  }
  const bool emptied = list->empty();
  EraseOrShrink(db, it, src, src_hash, emptied);
  db.NoteModified(src);
  PushToList(db, dst, dst_hash, now_ms, to, *value);
  NotifyPopped(db, src, from, emptied);
  return MoveResult::kMoved;
}

bool ReplyMove(MoveResult result, std::string_view value, core::ReplyBuilder& rb) {
  if (result == MoveResult::kMissing) return false;
  if (result == MoveResult::kWrongType) {
    rb.Error(kWrongTypeErr);
  } else {
    rb.Bulk(value);
  }
  return true;
}

bool ListMove(ConnContext& ctx, std::string_view src, std::string_view dst, ListEnd from,
              ListEnd to) {
  const std::array<std::string_view, 2> keys = {src, dst};
  shard::Transaction tx(ctx.conn.db, keys, shard::Transaction::kWrite);
  KeyState src_state = KeyState::kMissing, dst_state = KeyState::kMissing;
  std::string value;

  if (tx.shard_of(0) == tx.shard_of(1)) {
    // One shard: check, pop and push in one phase.
    MoveResult result = MoveResult::kMissing;
    tx.Run(
        [&](shard::TxShard& t) {
          result = MoveOnShard(t.shard, t.db, src, tx.hash(0), dst, tx.hash(1), t.now_ms, from, to,
                               &value);
        },
        /*conclude=*/true);
    return ReplyMove(result, value, ctx.rb);
  }
  // Two shards. Phase 1, on both: the source's state and a copy of the element that will move;
  // the destination's type. Nothing changes yet, so a WRONGTYPE destination pops nothing.
  tx.Run([&](shard::TxShard& t) {
    for (uint32_t i : t.keys) {
      if (i == 0) {
        src_state = StateOf(t.db, src, tx.hash(0), t.now_ms);
        if (src_state != KeyState::kList) continue;
        Db::Iterator it = t.db.Find(src, tx.hash(0), t.now_ms);
        ListOf(it)->Index(from == ListEnd::kHead ? 0 : -1, &value);
        // Should the destination be WRONGTYPE, the element stays: a BLMOVE woken for it then
        // passes it to the next waiter (served once the transaction lets the key go).
        t.db.NoteReady(src);
      } else {
        dst_state = StateOf(t.db, dst, tx.hash(1), t.now_ms);
      }
    }
  });
  if (src_state == KeyState::kList && dst_state != KeyState::kWrongType) {
    // Phase 2, on both in parallel: pop on the source, push the copy on the destination.
    // The keys stayed locked since phase 1, so the element popped is the one copied.
    tx.Run(
        [&](shard::TxShard& t) {
          for (uint32_t i : t.keys) {
            if (i == 0) {
              Db::Iterator it = t.db.Find(src, tx.hash(0), t.now_ms);
              std::string popped;
              ListOf(it)->Pop(from, &popped);
              DCHECK_EQ(popped, value);
              t.shard.AddDirty();
              const bool emptied = ListOf(it)->empty();
              EraseOrShrink(t.db, it, src, tx.hash(0), emptied);
              t.db.NoteModified(src);
              NotifyPopped(t.db, src, from, emptied);
            } else {
              PushToList(t.db, dst, tx.hash(1), t.now_ms, to, value);
            }
          }
        },
        /*conclude=*/true);
  }
  // Redis' order: a missing source wins over everything, then the source's type, then the
  // destination's.
  if (src_state == KeyState::kMissing) return false;
  const bool wrong_type =
      src_state == KeyState::kWrongType || dst_state == KeyState::kWrongType;
  return ReplyMove(wrong_type ? MoveResult::kWrongType : MoveResult::kMoved, value, ctx.rb);
}

void RegisterListFamily(CommandRegistry* r) {
  constexpr uint32_t kW = kWrite, kR = kReadOnly, kD = kDenyOom, kF = kFast;
  constexpr ListEnd kLeft = ListEnd::kHead, kRight = ListEnd::kTail;
  r->Register({.name = "lpush", .arity = -3, .flags = kW | kD | kF, .keys = kOneKey,
               .acl_categories = "write list fast", .on_shard = CmdPush<kLeft, false>,
               .docs = {.group = "list", .since = "1.0.0",
                        .complexity = "O(1) for each element added, so O(N) to add N elements when "
                                      "the command is called with multiple arguments.",
                        .summary = "Adds elements to the head of a list, creating it when needed.",
                        .key_flags = "RW insert"}});
  r->Register({.name = "rpush", .arity = -3, .flags = kW | kD | kF, .keys = kOneKey,
               .acl_categories = "write list fast", .on_shard = CmdPush<kRight, false>,
               .docs = {.group = "list", .since = "1.0.0",
                        .complexity = "O(1) for each element added, so O(N) to add N elements when "
                                      "the command is called with multiple arguments.",
                        .summary = "Adds elements to the tail of a list, creating it when needed.",
                        .key_flags = "RW insert"}});
  r->Register({.name = "lpushx", .arity = -3, .flags = kW | kD | kF, .keys = kOneKey,
               .acl_categories = "write list fast", .on_shard = CmdPush<kLeft, true>,
               .docs = {.group = "list", .since = "2.2.0",
                        .complexity = "O(1) for each element added, so O(N) to add N elements when "
                                      "the command is called with multiple arguments.",
                        .summary = "Adds elements to the head of a list only when the list exists.",
                        .key_flags = "RW insert"}});
  r->Register({.name = "rpushx", .arity = -3, .flags = kW | kD | kF, .keys = kOneKey,
               .acl_categories = "write list fast", .on_shard = CmdPush<kRight, true>,
               .docs = {.group = "list", .since = "2.2.0",
                        .complexity = "O(1) for each element added, so O(N) to add N elements when "
                                      "the command is called with multiple arguments.",
                        .summary = "Adds elements to the tail of a list only when the list exists.",
                        .key_flags = "RW insert"}});
  r->Register({.name = "lpop", .arity = -2, .flags = kW | kF, .keys = kOneKey,
               .acl_categories = "write list fast", .on_shard = CmdPop<kLeft>,
               .docs = {.group = "list", .since = "1.0.0",
                        .complexity = "O(N) where N is the number of elements returned",
                        .summary = "Removes and returns elements from the head of a list.",
                        .key_flags = "RW access delete"}});
  r->Register({.name = "rpop", .arity = -2, .flags = kW | kF, .keys = kOneKey,
               .acl_categories = "write list fast", .on_shard = CmdPop<kRight>,
               .docs = {.group = "list", .since = "1.0.0",
                        .complexity = "O(N) where N is the number of elements returned",
                        .summary = "Removes and returns elements from the tail of a list.",
                        .key_flags = "RW access delete"}});
  r->Register({.name = "llen", .arity = 2, .flags = kR | kF, .keys = kOneKey,
               .acl_categories = "read list fast", .on_shard = CmdLLen,
               .docs = {.group = "list", .since = "1.0.0", .complexity = "O(1)",
                        .summary = "Returns the number of elements of a list.",
                        .key_flags = "RO"}});
  r->Register({.name = "lrange", .arity = 4, .flags = kR, .keys = kOneKey,
               .acl_categories = "read list slow", .on_shard = CmdLRange,
               .docs = {.group = "list", .since = "1.0.0",
                        .complexity = "O(S+N) where S is the distance of start offset from HEAD "
                                      "for small lists, from nearest end (HEAD or TAIL) for large "
                                      "lists; and N is the number of elements in the specified "
                                      "range.",
                        .summary = "Returns the elements of a list between two indexes.",
                        .key_flags = "RO access"}});
  r->Register({.name = "lindex", .arity = 3, .flags = kR, .keys = kOneKey,
               .acl_categories = "read list slow", .on_shard = CmdLIndex,
               .docs = {.group = "list", .since = "1.0.0",
                        .complexity = "O(N) where N is the number of elements to traverse to get "
                                      "to the element at index. This makes asking for the first or "
                                      "the last element of the list O(1).",
                        .summary = "Returns the element of a list at an index.",
                        .key_flags = "RO access"}});
  r->Register({.name = "lset", .arity = 4, .flags = kW | kD, .keys = kOneKey,
               .acl_categories = "write list slow", .on_shard = CmdLSet,
               .docs = {.group = "list", .since = "1.0.0",
                        .complexity = "O(N) where N is the length of the list. Setting either the "
                                      "first or the last element of the list is O(1).",
                        .summary = "Replaces the element of a list at an index.",
                        .key_flags = "RW update"}});
  r->Register({.name = "linsert", .arity = 5, .flags = kW | kD, .keys = kOneKey,
               .acl_categories = "write list slow", .on_shard = CmdLInsert,
               .docs = {.group = "list", .since = "2.2.0",
                        .complexity = "O(N) where N is the number of elements to traverse before "
                                      "seeing the value pivot. This means that inserting somewhere "
                                      "on the left end on the list (head) can be considered O(1) "
                                      "and inserting somewhere on the right end (tail) is O(N).",
                        .summary = "Inserts an element into a list before or after a given "
                                   "element.", .key_flags = "RW insert"}});
  r->Register({.name = "lrem", .arity = 4, .flags = kW, .keys = kOneKey,
               .acl_categories = "write list slow", .on_shard = CmdLRem,
               .docs = {.group = "list", .since = "1.0.0",
                        .complexity = "O(N+M) where N is the length of the list and M is the "
                                      "number of elements removed.",
                        .summary = "Removes elements equal to a value from a list.",
                        .key_flags = "RW delete"}});
  r->Register({.name = "ltrim", .arity = 4, .flags = kW, .keys = kOneKey,
               .acl_categories = "write list slow", .on_shard = CmdLTrim,
               .docs = {.group = "list", .since = "1.0.0",
                        .complexity = "O(N) where N is the number of elements to be removed by the "
                                      "operation.",
                        .summary = "Keeps only the elements of a list between two indexes.",
                        .key_flags = "RW delete"}});
  r->Register({.name = "lpos", .arity = -3, .flags = kR, .keys = kOneKey,
               .acl_categories = "read list slow", .on_shard = CmdLPos,
               .docs = {.group = "list", .since = "6.0.6",
                        .complexity = "O(N) where N is the number of elements in the list, for the "
                                      "average case. When searching for elements near the head or "
                                      "the tail of the list, or when the MAXLEN option is "
                                      "provided, the command may run in constant time.",
                        .summary = "Returns the indexes of the elements of a list equal to a "
                                   "value.", .key_flags = "RO access"}});
  r->Register({.name = "lmove", .arity = 5, .flags = kW | kD, .keys = kTwoKeys,
               .acl_categories = "write list slow", .on_conn = CmdLMove,
               .docs = {.group = "list", .since = "6.2.0", .complexity = "O(1)",
                        .summary = "Moves an element from one end of a list to an end of another.",
                        .key_flags = "RW access delete",
                        .other_key_flags = "RW insert"}});
  r->Register({.name = "rpoplpush", .arity = 3, .flags = kW | kD, .keys = kTwoKeys,
               .acl_categories = "write list slow", .on_conn = CmdRPopLPush,
               .docs = {.group = "list", .since = "1.2.0", .complexity = "O(1)",
                        .summary = "Moves the last element of a list to the head of another (old "
                                   "form of LMOVE).", .key_flags = "RW access delete",
                        .other_key_flags = "RW insert"}});
  // Redis reports 0 0 0 and "movablekeys": the keys follow numkeys.
  r->Register({.name = "lmpop", .arity = -4, .flags = kW, .keys = kNoKeys,
               .acl_categories = "write list slow", .on_conn = CmdLMPop, .key_finder = NumKeysFirst,
               .docs = {.group = "list", .since = "7.0.0",
                        .complexity = "O(N+M) where N is the number of provided keys and M is the "
                                      "number of elements returned.",
                        .summary = "Pops elements from the first non-empty list of several.",
                        .key_flags = "RW access delete"}});
}

}  // namespace shardis::server
