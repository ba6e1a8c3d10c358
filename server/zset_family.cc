// Sorted-set commands (Redis 7.0 semantics, replies and error texts; t_zset.c is the reference).
//
// Single-key commands run on the key's shard over core::ZSet. The commands over several keys
// (ZUNION/ZINTER/ZDIFF[STORE], ZINTERCARD, ZRANGESTORE, ZMPOP) run as one shard::Transaction: a
// read phase copies the sources on their shards, the coordinator computes, and a RunOn on the
// destination's shard stores the result, atomically with respect to every other command.
#include "server/zset_family.h"

#include <absl/container/flat_hash_map.h>
#include <absl/container/flat_hash_set.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/double_format.h"
#include "core/glob.h"
#include "core/number.h"
#include "core/string_util.h"
#include "core/value_object.h"
#include "core/set_object.h"
#include "core/zset.h"
#include "server/arg_parser.h"
#include "server/collection_args.h"
#include "server/command.h"
#include "server/command_keys.h"
#include "server/connection_state.h"
#include "server/blocking_family.h"
#include "server/key_lookup.h"
#include "server/mpop_args.h"
#include "shard/transaction.h"

namespace shardis::server {

using core::ZSet;
using shard::Db;

namespace {

constexpr std::string_view kNanErr = "ERR resulting score is not a number (NaN)";
constexpr std::string_view kScoreRangeErr = "ERR min or max is not a float";
constexpr std::string_view kLexRangeErr = "ERR min or max not valid string range item";

// A member and its score; views into a ZSet (valid until it changes) or into owned strings.
using ViewEntry = std::pair<std::string_view, double>;
using OwnedEntry = std::pair<std::string, double>;

// Members with or without scores, as Redis 7.0 replies them: WITHSCORES is a flat array in RESP2
// and an array of [member, score] pairs in RESP3.
template <typename Entries>
void ReplyEntries(core::ReplyBuilder& rb, const Entries& entries, bool withscores) {
  const bool nested = withscores && rb.resp3();
  rb.ArrayHeader(withscores && !nested ? entries.size() * 2 : entries.size());
  for (const auto& [member, score] : entries) {
    if (nested) rb.ArrayHeader(2);
    rb.Bulk(member);
    if (withscores) rb.Double(score);
  }
}

// Removes the key when its set became empty (Redis deletes empty collections); returns whether it
// did.
bool EraseIfEmpty(Db& db, Db::Iterator it, std::string_view key, uint64_t hash) {
  if (AsZSet(it)->size() != 0) return false;
  db.Erase(it, key, hash);
  return true;
}

// Redis' events of a removal from a sorted set (zrem, zremrangebyscore, zpopmin, ...), then "del"
// when it emptied the set.
void NotifyZSetRemoval(Db& db, std::string_view key, std::string_view event, bool emptied) {
  shard::NotifyKeyspaceEvent(kNotifyZset, event, key, db.index());
  if (emptied) shard::NotifyKeyspaceEvent(kNotifyGeneric, "del", key, db.index());
}

}  // namespace

// Stores `items` as a new sorted set at key (replacing any value and TTL, as Redis' setKey), or
// deletes the key when there is nothing to store. Marks the key modified when it changed. Returns
// the size of the stored set.
size_t StoreZSet(shard::Shard& shard, Db& db, std::string_view key, uint64_t hash,
                 int64_t now_ms, const std::vector<OwnedEntry>& items, bool count_each_member,
                 std::string_view event) {
  if (items.empty()) {
    if (db.Erase(key, hash, now_ms)) {
      db.NoteModified(key);
      shard.AddDirty();
      shard::NotifyKeyspaceEvent(kNotifyGeneric, "del", key, db.index());
    }
    return 0;
  }
  // Starts packed and converts when a limit is crossed: the encoding Redis ends with.
  ZSet* z = core::ShardNew<ZSet>(ZSet::kPacked);
  for (const auto& [member, score] : items) z->Add(member, score, 0, nullptr);
  bool inserted;
  Db::Iterator it = db.FindOrInsert(key, hash, now_ms, &inserted);
  it.value().SetObject(core::ValueType::kZSet, z);
  if (!inserted) db.SetExpire(it, key, hash, 0);
  db.NoteModified(key);
  shard.AddDirty(count_each_member ? z->size() : 1);
  shard::NotifyKeyspaceEvent(kNotifyZset, event, key, db.index());
  return z->size();
}

// --- ZADD / ZINCRBY

void ZAddGeneric(ArgSlice args, ShardContext& ctx, unsigned base_flags) {
  unsigned flags = base_flags;
  bool ch = false;
  ArgParser p(args, 2);
  while (p.HasNext()) {
    if (p.Check("NX")) {
      flags |= core::kZAddNx;
    } else if (p.Check("XX")) {
      flags |= core::kZAddXx;
    } else if (p.Check("CH")) {
      ch = true;
    } else if (p.Check("INCR")) {
      flags |= core::kZAddIncr;
    } else if (p.Check("GT")) {
      flags |= core::kZAddGt;
    } else if (p.Check("LT")) {
      flags |= core::kZAddLt;
    } else {
      break;  // the score-member pairs
    }
  }
  const size_t idx = p.pos(), rest = p.Remaining();
  if (rest == 0 || rest % 2 != 0) return ctx.rb.Error(kSyntaxErr);
  const size_t elements = rest / 2;
  const bool incr = flags & core::kZAddIncr, nx = flags & core::kZAddNx,
             xx = flags & core::kZAddXx, gt = flags & core::kZAddGt, lt = flags & core::kZAddLt;
  if (nx && xx) return ctx.rb.Error("ERR XX and NX options at the same time are not compatible");
  if ((gt && nx) || (lt && nx) || (gt && lt)) {
    return ctx.rb.Error("ERR GT, LT, and/or NX options at the same time are not compatible");
  }
  if (incr && elements > 1) {
    return ctx.rb.Error("ERR INCR option supports a single increment-element pair");
  }
  std::vector<double> scores(elements);
  for (size_t j = 0; j < elements && p.ok(); ++j) {
    scores[j] = p.Next<double>();
    p.Next();  // the member
  }
  if (p.ReplyError(ctx.rb)) return;

  bool wrong_type;
  Db::Iterator it = FindTyped(ctx, args[1], core::ValueType::kZSet, kForWrite, &wrong_type);
  if (wrong_type) return;
  int64_t added = 0, updated = 0, processed = 0;
  double score = 0;
  if (!Db::Found(it)) {
    if (xx) return incr ? ctx.rb.Null() : ctx.rb.Integer(0);
    bool inserted;
    it = ctx.db.FindOrInsert(args[1], ctx.hash, ctx.now_ms, &inserted);
    it.value().SetObject(core::ValueType::kZSet,
                         core::ShardNew<ZSet>(ZSet::StartsLarge(args[idx + 1].size())));
  }
  ZSet* z = AsZSet(it);
  for (size_t j = 0; j < elements; ++j) {
    double new_score = 0;
    const unsigned out = z->Add(args[idx + 2 * j + 1], scores[j], flags, &new_score);
    if (out & core::kZAddOutNan) {
      EraseIfEmpty(ctx.db, it, args[1], ctx.hash);
      return ctx.rb.Error(kNanErr);
    }
    if (out & core::kZAddOutAdded) ++added;
    if (out & core::kZAddOutUpdated) ++updated;
    if (!(out & core::kZAddOutNop)) {
      ++processed;
      score = new_score;
    }
  }
  ctx.shard.AddDirty(added + updated);  // a member whose score stayed is no change
  if (added + updated > 0) NotifyKeyspaceEvent(ctx, kNotifyZset, incr ? "zincr" : "zadd", args[1]);
  if (incr) return processed ? ctx.rb.Double(score) : ctx.rb.Null();
  ctx.rb.Integer(ch ? added + updated : added);
}

namespace {

void CmdZAdd(ArgSlice args, ShardContext& ctx) { ZAddGeneric(args, ctx, 0); }
void CmdZIncrBy(ArgSlice args, ShardContext& ctx) { ZAddGeneric(args, ctx, core::kZAddIncr); }

// --- Point reads

void CmdZCard(ArgSlice args, ShardContext& ctx) {
  bool wrong_type;
  Db::Iterator it = FindTyped(ctx, args[1], core::ValueType::kZSet, kForRead, &wrong_type);
  if (wrong_type) return;
  ctx.rb.Integer(Db::Found(it) ? int64_t(AsZSet(it)->size()) : 0);
}

void CmdZScore(ArgSlice args, ShardContext& ctx) {
  bool wrong_type;
  Db::Iterator it = FindTyped(ctx, args[1], core::ValueType::kZSet, kForRead, &wrong_type);
  if (wrong_type) return;
  double score;
  if (!Db::Found(it) || !AsZSet(it)->Score(args[2], &score)) return ctx.rb.Null();
  ctx.rb.Double(score);
}

void CmdZMScore(ArgSlice args, ShardContext& ctx) {
  bool wrong_type;
  Db::Iterator it = FindTyped(ctx, args[1], core::ValueType::kZSet, kForRead, &wrong_type);
  if (wrong_type) return;
  const ZSet* z = Db::Found(it) ? AsZSet(it) : nullptr;
  ctx.rb.ArrayHeader(args.size() - 2);
  for (size_t j = 2; j < args.size(); ++j) {
    double score;
    if (z != nullptr && z->Score(args[j], &score)) {
      ctx.rb.Double(score);
    } else {
      ctx.rb.Null();
    }
  }
}

// ZRANK/ZREVRANK key member [WITHSCORE] (Redis 7.2's zrankGenericCommand).
template <bool kReverse>
void CmdZRank(ArgSlice args, ShardContext& ctx) {
  if (args.size() > 4) return ctx.rb.Error(WrongArgsError(args[0]));
  const bool withscore = args.size() == 4;
  if (withscore && !core::EqualsIgnoreCase(args[3], "withscore")) {
    return ctx.rb.Error(kSyntaxErr);
  }
  bool wrong_type;
  Db::Iterator it = FindTyped(ctx, args[1], core::ValueType::kZSet, kForRead, &wrong_type);
  if (wrong_type) return;
  double score = 0;
  const int64_t rank = Db::Found(it) ? AsZSet(it)->Rank(args[2], kReverse, &score) : -1;
  if (rank < 0) return withscore ? ctx.rb.NullArray() : ctx.rb.Null();
  if (!withscore) return ctx.rb.Integer(rank);
  ctx.rb.ArrayHeader(2);
  ctx.rb.Integer(rank);
  ctx.rb.Double(score);
}

void CmdZCount(ArgSlice args, ShardContext& ctx) {
  core::ZScoreRange range;
  if (!core::ParseScoreRange(args[2], args[3], &range)) return ctx.rb.Error(kScoreRangeErr);
  bool wrong_type;
  Db::Iterator it = FindTyped(ctx, args[1], core::ValueType::kZSet, kForRead, &wrong_type);
  if (wrong_type) return;
  ctx.rb.Integer(Db::Found(it) ? int64_t(AsZSet(it)->CountByScore(range)) : 0);
}

void CmdZLexCount(ArgSlice args, ShardContext& ctx) {
  core::ZLexRange range;
  if (!core::ParseLexRange(args[2], args[3], &range)) return ctx.rb.Error(kLexRangeErr);
  bool wrong_type;
  Db::Iterator it = FindTyped(ctx, args[1], core::ValueType::kZSet, kForRead, &wrong_type);
  if (wrong_type) return;
  ctx.rb.Integer(Db::Found(it) ? int64_t(AsZSet(it)->CountByLex(range)) : 0);
}

// --- ZRANGE and its older forms (Redis' zrangeGenericCommand).

enum class RangeType { kAuto, kRank, kScore, kLex };
enum class Direction { kAuto, kForward, kReverse };

struct RangeSpec {
  RangeType type = RangeType::kAuto;
  bool reverse = false;
  bool withscores = false;
  int64_t start = 0, end = 0;  // ranks
  int64_t offset = 0, limit = -1;
  core::ZScoreRange score;
  core::ZLexRange lex;
};

// Parses `<src> <min> <max> [options]` starting at args[src]. Replies the error and returns false.
bool ParseRange(ArgSlice args, size_t src, bool store, RangeType type, Direction dir,
                core::ReplyBuilder& rb, RangeSpec* spec) {
  ArgParser p(args, src + 3);
  while (p.HasNext()) {
    if (!store && p.Check("WITHSCORES")) {
      spec->withscores = true;
    } else if (p.Check("LIMIT", 2)) {
      spec->offset = p.Next<int64_t>();
      spec->limit = p.Next<int64_t>();
    } else if (dir == Direction::kAuto && p.Check("REV")) {
      dir = Direction::kReverse;
    } else if (type == RangeType::kAuto && p.Check("BYLEX")) {
      type = RangeType::kLex;
    } else if (type == RangeType::kAuto && p.Check("BYSCORE")) {
      type = RangeType::kScore;
    } else {
      p.Fail(kSyntaxErr);
    }
  }
  if (p.ReplyError(rb)) return false;
  if (dir == Direction::kAuto) dir = Direction::kForward;
  if (type == RangeType::kAuto) type = RangeType::kRank;
  if (spec->limit != -1 && type == RangeType::kRank) {
    rb.Error(
        "ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX");
    return false;
  }
  if (spec->withscores && type == RangeType::kLex) {
    rb.Error("ERR syntax error, WITHSCORES not supported in combination with BYLEX");
    return false;
  }
  spec->type = type;
  spec->reverse = dir == Direction::kReverse;
  size_t min_idx = src + 1, max_idx = src + 2;
  if (spec->reverse && type != RangeType::kRank) std::swap(min_idx, max_idx);  // [max, min]
  switch (type) {
    case RangeType::kAuto:
    case RangeType::kRank:
      if (!core::ParseInt64(args[min_idx], &spec->start) ||
          !core::ParseInt64(args[max_idx], &spec->end)) {
        rb.Error(kNotIntegerErr);
        return false;
      }
      break;
    case RangeType::kScore:
      if (!core::ParseScoreRange(args[min_idx], args[max_idx], &spec->score)) {
        rb.Error(kScoreRangeErr);
        return false;
      }
      break;
    case RangeType::kLex:
      if (!core::ParseLexRange(args[min_idx], args[max_idx], &spec->lex)) {
        rb.Error(kLexRangeErr);
        return false;
      }
      break;
  }
  return true;
}

// The members a parsed range selects, in reply order.
void CollectRange(const ZSet& z, const RangeSpec& spec, std::vector<ViewEntry>* out) {
  auto add = [out](std::string_view m, double s) { out->emplace_back(m, s); };
  const int64_t len = int64_t(z.size());
  switch (spec.type) {
    case RangeType::kAuto:
    case RangeType::kRank: {
      int64_t start = spec.start, end = spec.end;
      if (start < 0) start += len;
      if (end < 0) end += len;
      if (start < 0) start = 0;
      if (start > end || start >= len) return;
      if (end >= len) end = len - 1;
      out->reserve(size_t(end - start + 1));
      z.RangeByRank(size_t(start), size_t(end), spec.reverse, add);
      return;
    }
    case RangeType::kScore:
      // A negative offset walks off the end in Redis' loop: nothing.
      if (spec.offset < 0 || (spec.offset > 0 && spec.offset >= len)) return;
      z.RangeByScore(spec.score, spec.reverse, size_t(spec.offset), spec.limit, add);
      return;
    case RangeType::kLex:
      if (spec.offset < 0) return;
      z.RangeByLex(spec.lex, spec.reverse, size_t(spec.offset), spec.limit, add);
      return;
  }
}

template <RangeType kType, Direction kDir>
void CmdZRange(ArgSlice args, ShardContext& ctx) {
  RangeSpec spec;
  if (!ParseRange(args, 1, false, kType, kDir, ctx.rb, &spec)) return;
  bool wrong_type;
  Db::Iterator it = FindTyped(ctx, args[1], core::ValueType::kZSet, kForRead, &wrong_type);
  if (wrong_type) return;
  if (!Db::Found(it)) return ctx.rb.ArrayHeader(0);
  std::vector<ViewEntry> entries;
  CollectRange(*AsZSet(it), spec, &entries);
  ReplyEntries(ctx.rb, entries, spec.withscores);
}

// ZRANGESTORE dst src min max [BYSCORE | BYLEX] [REV] [LIMIT offset count]
void CmdZRangeStore(ArgSlice args, ConnContext& ctx) {
  RangeSpec spec;
  if (!ParseRange(args, 2, true, RangeType::kAuto, Direction::kAuto, ctx.rb, &spec)) return;
  const std::array<std::string_view, 2> keys = {args[1], args[2]};
  shard::Transaction tx(ctx.conn.db, keys, shard::Transaction::kWrite);
  bool wrong_type = false;
  std::vector<OwnedEntry> items;
  tx.Run([&](shard::TxShard& t) {
    for (uint32_t i : t.keys) {
      if (i != 1) continue;
      Db::Iterator it = LookupRead(t.shard, t.db, tx.key(i), tx.hash(i), t.now_ms);
      if (!Db::Found(it)) return;
      if (it.value().type() != core::ValueType::kZSet) {
        wrong_type = true;
        return;
      }
      std::vector<ViewEntry> view;
      CollectRange(*AsZSet(it), spec, &view);
      items.reserve(view.size());
      for (const auto& [m, s] : view) items.emplace_back(std::string(m), s);
    }
  });
  if (wrong_type) {
    tx.Conclude();
    return ctx.rb.Error(kWrongTypeErr);
  }
  size_t stored = 0;
  tx.RunOn(tx.shard_of(0), [&](shard::TxShard& t) {
    stored = StoreZSet(t.shard, t.db, tx.key(0), tx.hash(0), t.now_ms, items,
                       /*count_each_member=*/false, "zrangestore");
  });
  tx.Conclude();
  ctx.rb.Integer(int64_t(stored));
}

// --- Removal

void CmdZRem(ArgSlice args, ShardContext& ctx) {
  bool wrong_type;
  Db::Iterator it = FindTyped(ctx, args[1], core::ValueType::kZSet, kForWrite, &wrong_type);
  if (wrong_type) return;
  if (!Db::Found(it)) return ctx.rb.Integer(0);
  ZSet* z = AsZSet(it);
  int64_t deleted = 0;
  for (size_t j = 2; j < args.size(); ++j) {
    if (z->Erase(args[j])) ++deleted;
    if (z->size() == 0) break;
  }
  const bool emptied = EraseIfEmpty(ctx.db, it, args[1], ctx.hash);
  ctx.shard.AddDirty(deleted);
  if (deleted > 0) NotifyZSetRemoval(ctx.db, args[1], "zrem", emptied);
  ctx.rb.Integer(deleted);
}

template <RangeType kType>
void CmdZRemRange(ArgSlice args, ShardContext& ctx) {
  int64_t start = 0, end = 0;
  core::ZScoreRange score;
  core::ZLexRange lex;
  if constexpr (kType == RangeType::kRank) {
    if (!core::ParseInt64(args[2], &start) || !core::ParseInt64(args[3], &end)) {
      return ctx.rb.Error(kNotIntegerErr);
    }
  } else if constexpr (kType == RangeType::kScore) {
    if (!core::ParseScoreRange(args[2], args[3], &score)) return ctx.rb.Error(kScoreRangeErr);
  } else {
    if (!core::ParseLexRange(args[2], args[3], &lex)) return ctx.rb.Error(kLexRangeErr);
  }
  bool wrong_type;
  Db::Iterator it = FindTyped(ctx, args[1], core::ValueType::kZSet, kForWrite, &wrong_type);
  if (wrong_type) return;
  if (!Db::Found(it)) return ctx.rb.Integer(0);
  ZSet* z = AsZSet(it);
  size_t removed = 0;
  if constexpr (kType == RangeType::kRank) {
    const int64_t len = int64_t(z->size());
    if (start < 0) start += len;
    if (end < 0) end += len;
    if (start < 0) start = 0;
    if (start > end || start >= len) return ctx.rb.Integer(0);
    if (end >= len) end = len - 1;
    removed = z->EraseRangeByRank(size_t(start), size_t(end));
  } else if constexpr (kType == RangeType::kScore) {
    removed = z->EraseRangeByScore(score);
  } else {
    removed = z->EraseRangeByLex(lex);
  }
  const bool emptied = EraseIfEmpty(ctx.db, it, args[1], ctx.hash);
  ctx.shard.AddDirty(removed);
  if (removed > 0) {
    NotifyZSetRemoval(ctx.db, args[1],
                      kType == RangeType::kRank    ? "zremrangebyrank"
                      : kType == RangeType::kScore ? "zremrangebyscore"
                                                   : "zremrangebylex",
                      emptied);
  }
  ctx.rb.Integer(int64_t(removed));
}

// --- Pops

// ZPOPMIN/ZPOPMAX key [count]
template <bool kMax>
void CmdZPop(ArgSlice args, ShardContext& ctx) {
  if (args.size() > 3) return ctx.rb.Error(kSyntaxErr);
  ArgParser p(args, 2);
  // -1: no count given, one member is popped.
  const int64_t count = args.size() == 3 ? p.NextInRange(0, INT64_MAX, kMustBePositiveErr) : -1;
  if (p.ReplyError(ctx.rb)) return;
  bool wrong_type;
  Db::Iterator it = FindTyped(ctx, args[1], core::ValueType::kZSet, kForWrite, &wrong_type);
  if (wrong_type) return;
  if (!Db::Found(it) || count == 0) return ctx.rb.ArrayHeader(0);
  const ZPopReply shape = ctx.rb.resp3() && count != -1 ? ZPopReply::kNested : ZPopReply::kFlat;
  ctx.shard.AddDirty(
      ZPopAndReply(ctx.db, it, args[1], ctx.hash, kMax, count == -1 ? 1 : count, shape, ctx.rb));
}

// ZMPOP numkeys key [key ...] MIN|MAX [COUNT count]: the first key that exists decides.
void CmdZMPop(ArgSlice args, ConnContext& ctx) {
  MPopArgs a;
  if (!ParseMPopArgs(args, 1, "min", "max", &a, ctx.rb)) return;
  auto pop = [&](Db& db, Db::Iterator it, std::string_view key, uint64_t hash,
                 core::ReplyBuilder& rb) {
    return ZPopAndReply(db, it, key, hash, a.second_where, a.count, ZPopReply::kKeyNested, rb);
  };
  FinishPopReply(PopFirst(ctx, a.keys, core::ValueType::kZSet, pop, /*waiter=*/nullptr), ctx.rb);
}

// --- ZRANDMEMBER key [count [WITHSCORES]]

void CmdZRandMember(ArgSlice args, ShardContext& ctx) {
  int64_t l = 0;
  bool withscores = false;
  if (args.size() >= 3) {
    if (!core::ParseInt64(args[2], &l)) return ctx.rb.Error(kNotIntegerErr);
    if (l == std::numeric_limits<int64_t>::min()) {
      return ctx.rb.Error(kOutOfLongRangeErr);
    }
    if (args.size() > 4 || (args.size() == 4 && !core::EqualsIgnoreCase(args[3], "withscores"))) {
      return ctx.rb.Error(kSyntaxErr);
    }
    if (args.size() == 4) {
      withscores = true;
      constexpr int64_t kHalf = std::numeric_limits<int64_t>::max() / 2;
      if (l < -kHalf || l > kHalf) return ctx.rb.Error("ERR value is out of range");
    }
  }
  bool wrong_type;
  Db::Iterator it = FindTyped(ctx, args[1], core::ValueType::kZSet, kForRead, &wrong_type);
  if (wrong_type) return;
  auto& rng = ThreadRng();
  if (args.size() == 2) {
    if (!Db::Found(it)) return ctx.rb.Null();
    const ZSet& z = *AsZSet(it);
    std::string_view m;
    double s;
    z.At(std::uniform_int_distribution<size_t>(0, z.size() - 1)(rng), &m, &s);
    return ctx.rb.Bulk(m);
  }
  if (!Db::Found(it) || l == 0) return ctx.rb.ArrayHeader(0);
  const ZSet& z = *AsZSet(it);
  const size_t size = z.size();
  std::vector<ViewEntry> all;  // every member, when that is the cheap way to pick
  auto entry = [&](size_t rank) -> ViewEntry {
    if (!all.empty()) return all[rank];
    ViewEntry e;
    z.At(rank, &e.first, &e.second);
    return e;
  };
  if (z.encoding() == ZSet::kPacked) {
    all.reserve(size);
    z.RangeByRank(0, size - 1, false,
                  [&](std::string_view m, double s) { all.emplace_back(m, s); });
  }
  std::uniform_int_distribution<size_t> pick(0, size - 1);
  const bool nested = withscores && ctx.rb.resp3();
  auto emit = [&](const ViewEntry& e) {
    if (nested) ctx.rb.ArrayHeader(2);
    ctx.rb.Bulk(e.first);
    if (withscores) ctx.rb.Double(e.second);
  };
  if (l < 0 || l == 1) {  // with repetitions, in random order
    const size_t count = l < 0 ? size_t(-l) : 1;
    ctx.rb.ArrayHeader(withscores && !nested ? count * 2 : count);
    for (size_t i = 0; i < count; ++i) emit(entry(pick(rng)));
    return;
  }
  const size_t count = size_t(l);
  if (count >= size) {
    // The whole set, from the highest score down: Redis' zuiNext walks a set from its tail.
    std::vector<ViewEntry> desc;
    desc.reserve(size);
    z.RangeByRank(0, size - 1, true,
                  [&](std::string_view m, double s) { desc.emplace_back(m, s); });
    return ReplyEntries(ctx.rb, desc, withscores);
  }
  std::vector<size_t> ranks;
  if (count * 3 > size) {  // remove random members from the whole set
    ranks.resize(size);
    for (size_t i = 0; i < size; ++i) ranks[i] = i;
    std::shuffle(ranks.begin(), ranks.end(), rng);
    ranks.resize(count);
  } else {  // draw until there are enough distinct ones
    absl::flat_hash_set<size_t> seen;
    while (ranks.size() < count) {
      const size_t r = pick(rng);
      if (seen.insert(r).second) ranks.push_back(r);
    }
  }
  ctx.rb.ArrayHeader(withscores && !nested ? count * 2 : count);
  for (size_t r : ranks) emit(entry(r));
}

// --- ZSCAN key cursor [MATCH pattern] [COUNT count]

void CmdZScan(ArgSlice args, ShardContext& ctx) {
  uint64_t cursor;
  if (!core::ParseScanCursor(args[2], &cursor)) return ctx.rb.Error(kInvalidCursorErr);
  bool wrong_type;
  Db::Iterator it = FindTyped(ctx, args[1], core::ValueType::kZSet, kForRead, &wrong_type);
  if (wrong_type) return;
  if (!Db::Found(it)) return ReplyEmptyScan(ctx.rb);
  ScanOptions opts;
  if (!ParseScanOptions(args, 3, ScanTarget::kSetOrZSet, ctx.rb, &opts)) return;
  std::vector<ViewEntry> found;
  const uint64_t next = AsZSet(it)->Scan(cursor, opts.count, [&](std::string_view m, double s) {
    if (opts.Matches(m)) found.emplace_back(m, s);
  });
  ctx.rb.ArrayHeader(2);
  ctx.rb.Bulk(core::Concat(next));
  ctx.rb.ArrayHeader(found.size() * 2);
  // Redis scans a small (listpack) set's stored text, its d2string of the score ("0.1"), and
  // formats a skiplist set's scores with ld2string's "%.17Lg" ("0.10000000000000001").
  const bool packed = AsZSet(it)->encoding() == core::ZSet::kPacked;
  for (const auto& [m, s] : found) {
    ctx.rb.Bulk(m);
    ctx.rb.Bulk(packed ? core::FormatDouble(s) : core::FormatLongDoubleAuto(s));
  }
}

// --- ZUNION, ZINTER, ZDIFF, their STORE forms and ZINTERCARD (zunionInterDiffGenericCommand).

enum class SetOp { kUnion, kInter, kDiff };
enum class Aggregate { kSum, kMin, kMax };

void AggregateInto(double* target, double v, Aggregate agg) {
  switch (agg) {
    case Aggregate::kSum:
      *target += v;
      if (std::isnan(*target)) *target = 0;  // inf + -inf
      break;
    case Aggregate::kMin:
      *target = v < *target ? v : *target;
      break;
    case Aggregate::kMax:
      *target = v > *target ? v : *target;
      break;
  }
}

// One input of the operation, copied from its shard.
struct Source {
  std::vector<OwnedEntry> items;
  double weight = 1;
};

// Copies the members of a source key (a sorted set, or a plain set whose members count with score
// 1). Returns false for another type.
bool ReadSource(const core::CompactValue& v, Source* src) {
  switch (v.type()) {
    case core::ValueType::kZSet: {
      const ZSet& z = *static_cast<const ZSet*>(v.object());
      src->items.reserve(z.size());
      if (z.size() > 0) {
        z.RangeByRank(0, z.size() - 1, false,
                      [&](std::string_view m, double s) { src->items.emplace_back(m, s); });
      }
      return true;
    }
    case core::ValueType::kSet: {
      // Plain sets are valid inputs: every member has score 1 (Redis' zuiNext over a set).
      // SetRef only reads here (ForEach is const); it takes the cell by reference.
      const core::SetRef set(const_cast<core::CompactValue&>(v));
      src->items.reserve(set.Size());
      set.ForEach([&](std::string_view m) { src->items.emplace_back(m, 1.0); });
      return true;
    }
    default:
      return false;
  }
}

bool SortedLess(const OwnedEntry& a, const OwnedEntry& b) {
  if (a.second != b.second) return a.second < b.second;
  return a.first < b.first;  // std::string compares bytes as unsigned: memcmp order
}

template <SetOp kOp, bool kStore, bool kCardOnly>
void CmdZSetOp(ArgSlice args, ConnContext& ctx) {
  const size_t numkeys_idx = kStore ? 2 : 1;
  int64_t setnum;
  if (!core::ParseInt64(args[numkeys_idx], &setnum)) return ctx.rb.Error(kNotIntegerErr);
  if (setnum < 1) {
    return ctx.rb.Error(core::Concat("ERR at least 1 input key is needed for '",
                                     core::ToLower(args[0]), "' command"));
  }
  if (setnum > int64_t(args.size() - (numkeys_idx + 1))) return ctx.rb.Error(kSyntaxErr);
  const size_t n = size_t(setnum);

  // Options. Redis looks the keys up (and answers WRONGTYPE) before it parses them, so an option
  // error is kept and replied only when every key has a usable type.
  std::vector<double> weights(n, 1.0);
  Aggregate agg = Aggregate::kSum;
  bool withscores = false;
  int64_t limit = 0;
  // Parsed before the keys are read, replied after: Redis reports a wrong type first.
  ArgParser opts(args, numkeys_idx + 1 + n);
  while (opts.HasNext()) {
    if (kOp != SetOp::kDiff && !kCardOnly && opts.Check("WEIGHTS", n)) {
      for (size_t i = 0; i < n && opts.ok(); ++i) {
        if (!core::ParseDouble(opts.Next(), &weights[i])) {
          opts.Fail("ERR weight value is not a float");
        }
      }
    } else if (kOp != SetOp::kDiff && !kCardOnly && opts.Check("AGGREGATE", 1)) {
      std::string_view a = opts.Next();
      if (core::EqualsIgnoreCase(a, "sum")) {
        agg = Aggregate::kSum;
      } else if (core::EqualsIgnoreCase(a, "min")) {
        agg = Aggregate::kMin;
      } else if (core::EqualsIgnoreCase(a, "max")) {
        agg = Aggregate::kMax;
      } else {
        opts.Fail(kSyntaxErr);
      }
    } else if (!kStore && !kCardOnly && opts.Check("WITHSCORES")) {
      withscores = true;
    } else if (kCardOnly && opts.Check("LIMIT", 1)) {
      limit = opts.NextInRange(0, INT64_MAX, "ERR LIMIT can't be negative");
    } else {
      opts.Fail(kSyntaxErr);
    }
  }

  // The transaction's keys: the destination first (index 0) for the STORE forms.
  std::vector<std::string_view> keys;
  keys.reserve(n + 1);
  if (kStore) keys.push_back(args[1]);
  for (size_t i = 0; i < n; ++i) keys.push_back(args[numkeys_idx + 1 + i]);
  const uint32_t first_src = kStore ? 1 : 0;
  shard::Transaction tx(ctx.conn.db, keys,
                        kStore ? shard::Transaction::kWrite : shard::Transaction::kRead);
  std::vector<Source> srcs(n);
  std::vector<uint8_t> wrong(n, 0);
  tx.Run(
      [&](shard::TxShard& t) {
        for (uint32_t i : t.keys) {
          if (i < first_src) continue;
          Db::Iterator it = LookupRead(t.shard, t.db, tx.key(i), tx.hash(i), t.now_ms);
          if (Db::Found(it) && !ReadSource(it.value(), &srcs[i - first_src])) {
            wrong[i - first_src] = 1;
          }
        }
      },
      /*conclude=*/!kStore);
  auto fail = [&](std::string_view err) {
    if (kStore) tx.Conclude();
    ctx.rb.Error(err);
  };
  if (std::find(wrong.begin(), wrong.end(), 1) != wrong.end()) return fail(kWrongTypeErr);
  if (!opts.ok()) return fail(opts.error());
  for (size_t i = 0; i < n; ++i) srcs[i].weight = weights[i];

  std::vector<OwnedEntry> result;
  int64_t cardinality = 0;
  if constexpr (kOp != SetOp::kDiff) {
    // Smallest first, as Redis (its qsort is a stable merge sort in glibc): the order in which
    // scores are summed is the same.
    std::stable_sort(srcs.begin(), srcs.end(), [](const Source& a, const Source& b) {
      return a.items.size() < b.items.size();
    });
  }
  if constexpr (kOp == SetOp::kInter) {
    if (!srcs[0].items.empty()) {
      std::vector<absl::flat_hash_map<std::string_view, double, core::StringHash, core::StringEq>>
          index(n);
      for (size_t j = 1; j < n; ++j) {
        index[j].reserve(srcs[j].items.size());
        for (const auto& [m, s] : srcs[j].items) index[j].emplace(m, s);
      }
      for (const auto& [m, s] : srcs[0].items) {
        double score = srcs[0].weight * s;
        if (std::isnan(score)) score = 0;
        size_t j = 1;
        for (; j < n; ++j) {
          auto found = index[j].find(m);
          if (found == index[j].end()) break;
          AggregateInto(&score, found->second * srcs[j].weight, agg);
        }
        if (j < n) continue;
        if (kCardOnly) {
          ++cardinality;
          if (limit && cardinality >= limit) break;
        } else {
          result.emplace_back(m, score);
        }
      }
    }
  } else if constexpr (kOp == SetOp::kUnion) {
    absl::flat_hash_map<std::string_view, double, core::StringHash, core::StringEq> acc;
    for (const Source& src : srcs) {
      for (const auto& [m, s] : src.items) {
        double score = src.weight * s;
        if (std::isnan(score)) score = 0;
        auto [slot, inserted] = acc.try_emplace(m, score);
        if (!inserted) AggregateInto(&slot->second, score, agg);
      }
    }
    result.reserve(acc.size());
    for (const auto& [m, s] : acc) result.emplace_back(std::string(m), s);
  } else {
    absl::flat_hash_set<std::string_view, core::StringHash, core::StringEq> others;
    for (size_t j = 1; j < n; ++j) {
      for (const auto& [m, s] : srcs[j].items) others.insert(m);
    }
    for (const auto& [m, s] : srcs[0].items) {
      if (!others.contains(m)) result.emplace_back(m, s);
    }
  }

  if constexpr (kCardOnly) {
    ctx.rb.Integer(cardinality);
  } else if constexpr (kStore) {
    std::sort(result.begin(), result.end(), SortedLess);
    size_t stored = 0;
    tx.RunOn(tx.shard_of(0), [&](shard::TxShard& t) {
      stored = StoreZSet(t.shard, t.db, tx.key(0), tx.hash(0), t.now_ms, result,
                         /*count_each_member=*/false,
                         kOp == SetOp::kUnion   ? "zunionstore"
                         : kOp == SetOp::kInter ? "zinterstore"
                                                : "zdiffstore");
    });
    tx.Conclude();
    ctx.rb.Integer(int64_t(stored));
  } else {
    std::sort(result.begin(), result.end(), SortedLess);
    ReplyEntries(ctx.rb, result, withscores);
  }
}

}  // namespace

size_t ZPopAndReply(Db& db, Db::Iterator it, std::string_view key, uint64_t hash, bool from_max,
                    int64_t count, ZPopReply shape, core::ReplyBuilder& rb) {
  ZSet* z = AsZSet(it);
  const size_t n = std::min<size_t>(size_t(count), z->size());
  const bool nested = shape == ZPopReply::kNested || shape == ZPopReply::kKeyNested;
  switch (shape) {
    case ZPopReply::kFlat:
      rb.ArrayHeader(n * 2);
      break;
    case ZPopReply::kNested:
      rb.ArrayHeader(n);
      break;
    case ZPopReply::kFlatWithKey:
      rb.ArrayHeader(n * 2 + 1);
      rb.Bulk(key);
      break;
    case ZPopReply::kKeyNested:
      rb.ArrayHeader(2);
      rb.Bulk(key);
      rb.ArrayHeader(n);
      break;
  }
  if (n > 0) {
    z->RangeByRank(0, n - 1, from_max, [&](std::string_view m, double s) {
      if (nested) rb.ArrayHeader(2);
      rb.Bulk(m);
      rb.Double(s);
    });
    const size_t size = z->size();
    if (from_max) {
      z->EraseRangeByRank(size - n, size - 1);
    } else {
      z->EraseRangeByRank(0, n - 1);
    }
  }
  const bool emptied = z->size() == 0;
  if (emptied) db.Erase(it, key, hash);
  db.NoteModified(key);
  if (n > 0) NotifyZSetRemoval(db, key, from_max ? "zpopmax" : "zpopmin", emptied);
  return n;
}

void RegisterZSetFamily(CommandRegistry* r) {
  constexpr uint32_t kW = kWrite, kR = kReadOnly, kD = kDenyOom, kF = kFast;
  r->Register({.name = "zadd", .arity = -4, .flags = kW | kD | kF, .keys = kOneKey,
               .acl_categories = "write sortedset fast", .on_shard = CmdZAdd,
               .docs = {.group = "sorted-set", .since = "1.2.0",
                        .complexity = "O(log(N)) for each item added, where N is the number of "
                                      "elements in the sorted set.",
                        .summary = "Adds members with scores to a sorted set, or updates their "
                                   "scores.", .key_flags = "RW update"}});
  r->Register({.name = "zincrby", .arity = 4, .flags = kW | kD | kF, .keys = kOneKey,
               .acl_categories = "write sortedset fast", .on_shard = CmdZIncrBy,
               .docs = {.group = "sorted-set", .since = "1.2.0",
                        .complexity = "O(log(N)) where N is the number of elements in the sorted "
                                      "set.",
                        .summary = "Adds a number to the score of a member of a sorted set.",
                        .key_flags = "RW access update"}});
  r->Register({.name = "zcard", .arity = 2, .flags = kR | kF, .keys = kOneKey,
               .acl_categories = "read sortedset fast", .on_shard = CmdZCard,
               .docs = {.group = "sorted-set", .since = "1.2.0", .complexity = "O(1)",
                        .summary = "Returns the number of members of a sorted set.",
                        .key_flags = "RO"}});
  r->Register({.name = "zscore", .arity = 3, .flags = kR | kF, .keys = kOneKey,
               .acl_categories = "read sortedset fast", .on_shard = CmdZScore,
               .docs = {.group = "sorted-set", .since = "1.2.0", .complexity = "O(1)",
                        .summary = "Returns the score of a member of a sorted set.",
                        .key_flags = "RO access"}});
  r->Register({.name = "zmscore", .arity = -3, .flags = kR | kF, .keys = kOneKey,
               .acl_categories = "read sortedset fast", .on_shard = CmdZMScore,
               .docs = {.group = "sorted-set", .since = "6.2.0",
                        .complexity = "O(N) where N is the number of members being requested.",
                        .summary = "Returns the scores of several members of a sorted set.",
                        .key_flags = "RO access"}});
  r->Register({.name = "zrank", .arity = -3, .flags = kR | kF, .keys = kOneKey,
               .acl_categories = "read sortedset fast", .on_shard = CmdZRank<false>,
               .docs = {.group = "sorted-set", .since = "2.0.0", .complexity = "O(log(N))",
                        .summary = "Returns the rank of a member of a sorted set, lowest score "
                                   "first.", .key_flags = "RO access"}});
  r->Register({.name = "zrevrank", .arity = -3, .flags = kR | kF, .keys = kOneKey,
               .acl_categories = "read sortedset fast", .on_shard = CmdZRank<true>,
               .docs = {.group = "sorted-set", .since = "2.0.0", .complexity = "O(log(N))",
                        .summary = "Returns the rank of a member of a sorted set, highest score "
                                   "first.", .key_flags = "RO access"}});
  r->Register({.name = "zcount", .arity = 4, .flags = kR | kF, .keys = kOneKey,
               .acl_categories = "read sortedset fast", .on_shard = CmdZCount,
               .docs = {.group = "sorted-set", .since = "2.0.0",
                        .complexity = "O(log(N)) with N being the number of elements in the sorted "
                                      "set.",
                        .summary = "Counts the members of a sorted set with scores in a range.",
                        .key_flags = "RO access"}});
  r->Register({.name = "zlexcount", .arity = 4, .flags = kR | kF, .keys = kOneKey,
               .acl_categories = "read sortedset fast", .on_shard = CmdZLexCount,
               .docs = {.group = "sorted-set", .since = "2.8.9",
                        .complexity = "O(log(N)) with N being the number of elements in the sorted "
                                      "set.",
                        .summary = "Counts the members of a sorted set between two names (all "
                                   "scores equal).", .key_flags = "RO access"}});
  r->Register({.name = "zrange", .arity = -4, .flags = kR, .keys = kOneKey,
               .acl_categories = "read sortedset slow",
               .on_shard = CmdZRange<RangeType::kAuto, Direction::kAuto>,
               .docs = {.group = "sorted-set", .since = "1.2.0",
                        .complexity = "O(log(N)+M) with N being the number of elements in the "
                                      "sorted set and M the number of elements returned.",
                        .summary = "Returns the members of a sorted set in a range of ranks, "
                                   "scores or names.", .key_flags = "RO access"}});
  r->Register({.name = "zrevrange", .arity = -4, .flags = kR, .keys = kOneKey,
               .acl_categories = "read sortedset slow",
               .on_shard = CmdZRange<RangeType::kRank, Direction::kReverse>,
               .docs = {.group = "sorted-set", .since = "1.2.0",
                        .complexity = "O(log(N)+M) with N being the number of elements in the "
                                      "sorted set and M the number of elements returned.",
                        .summary = "Returns the members of a sorted set between two ranks, highest "
                                   "score first.", .key_flags = "RO access"}});
  r->Register({.name = "zrangebyscore", .arity = -4, .flags = kR, .keys = kOneKey,
               .acl_categories = "read sortedset slow",
               .on_shard = CmdZRange<RangeType::kScore, Direction::kForward>,
               .docs = {.group = "sorted-set", .since = "1.0.5",
                        .complexity = "O(log(N)+M) with N being the number of elements in the "
                                      "sorted set and M the number of elements being returned. If "
                                      "M is constant (e.g. always asking for the first 10 elements "
                                      "with LIMIT), you can consider it O(log(N)).",
                        .summary = "Returns the members of a sorted set with scores in a range "
                                   "(old form of ZRANGE BYSCORE).", .key_flags = "RO access"}});
  r->Register({.name = "zrevrangebyscore", .arity = -4, .flags = kR, .keys = kOneKey,
               .acl_categories = "read sortedset slow",
               .on_shard = CmdZRange<RangeType::kScore, Direction::kReverse>,
               .docs = {.group = "sorted-set", .since = "2.2.0",
                        .complexity = "O(log(N)+M) with N being the number of elements in the "
                                      "sorted set and M the number of elements being returned. If "
                                      "M is constant (e.g. always asking for the first 10 elements "
                                      "with LIMIT), you can consider it O(log(N)).",
                        .summary = "Returns the members of a sorted set with scores in a range, "
                                   "highest first.", .key_flags = "RO access"}});
  r->Register({.name = "zrangebylex", .arity = -4, .flags = kR, .keys = kOneKey,
               .acl_categories = "read sortedset slow",
               .on_shard = CmdZRange<RangeType::kLex, Direction::kForward>,
               .docs = {.group = "sorted-set", .since = "2.8.9",
                        .complexity = "O(log(N)+M) with N being the number of elements in the "
                                      "sorted set and M the number of elements being returned. If "
                                      "M is constant (e.g. always asking for the first 10 elements "
                                      "with LIMIT), you can consider it O(log(N)).",
                        .summary = "Returns the members of a sorted set between two names (old "
                                   "form of ZRANGE BYLEX).", .key_flags = "RO access"}});
  r->Register({.name = "zrevrangebylex", .arity = -4, .flags = kR, .keys = kOneKey,
               .acl_categories = "read sortedset slow",
               .on_shard = CmdZRange<RangeType::kLex, Direction::kReverse>,
               .docs = {.group = "sorted-set", .since = "2.8.9",
                        .complexity = "O(log(N)+M) with N being the number of elements in the "
                                      "sorted set and M the number of elements being returned. If "
                                      "M is constant (e.g. always asking for the first 10 elements "
                                      "with LIMIT), you can consider it O(log(N)).",
                        .summary = "Returns the members of a sorted set between two names, in "
                                   "reverse order.", .key_flags = "RO access"}});
  r->Register({.name = "zrem", .arity = -3, .flags = kW | kF, .keys = kOneKey,
               .acl_categories = "write sortedset fast", .on_shard = CmdZRem,
               .docs = {.group = "sorted-set", .since = "1.2.0",
                        .complexity = "O(M*log(N)) with N being the number of elements in the "
                                      "sorted set and M the number of elements to be removed.",
                        .summary = "Removes members from a sorted set.",
                        .key_flags = "RW delete"}});
  r->Register({.name = "zremrangebyrank", .arity = 4, .flags = kW, .keys = kOneKey,
               .acl_categories = "write sortedset slow", .on_shard = CmdZRemRange<RangeType::kRank>,
               .docs = {.group = "sorted-set", .since = "2.0.0",
                        .complexity = "O(log(N)+M) with N being the number of elements in the "
                                      "sorted set and M the number of elements removed by the "
                                      "operation.",
                        .summary = "Removes the members of a sorted set between two ranks.",
                        .key_flags = "RW delete"}});
  r->Register({.name = "zremrangebyscore", .arity = 4, .flags = kW, .keys = kOneKey,
               .acl_categories = "write sortedset slow",
               .on_shard = CmdZRemRange<RangeType::kScore>,
               .docs = {.group = "sorted-set", .since = "1.2.0",
                        .complexity = "O(log(N)+M) with N being the number of elements in the "
                                      "sorted set and M the number of elements removed by the "
                                      "operation.",
                        .summary = "Removes the members of a sorted set with scores in a range.",
                        .key_flags = "RW delete"}});
  r->Register({.name = "zremrangebylex", .arity = 4, .flags = kW, .keys = kOneKey,
               .acl_categories = "write sortedset slow", .on_shard = CmdZRemRange<RangeType::kLex>,
               .docs = {.group = "sorted-set", .since = "2.8.9",
                        .complexity = "O(log(N)+M) with N being the number of elements in the "
                                      "sorted set and M the number of elements removed by the "
                                      "operation.",
                        .summary = "Removes the members of a sorted set between two names.",
                        .key_flags = "RW delete"}});
  r->Register({.name = "zpopmin", .arity = -2, .flags = kW | kF, .keys = kOneKey,
               .acl_categories = "write sortedset fast", .on_shard = CmdZPop<false>,
               .docs = {.group = "sorted-set", .since = "5.0.0",
                        .complexity = "O(log(N)*M) with N being the number of elements in the "
                                      "sorted set, and M being the number of elements popped.",
                        .summary = "Removes and returns the lowest scored members of a sorted set.",
                        .key_flags = "RW access delete"}});
  r->Register({.name = "zpopmax", .arity = -2, .flags = kW | kF, .keys = kOneKey,
               .acl_categories = "write sortedset fast", .on_shard = CmdZPop<true>,
               .docs = {.group = "sorted-set", .since = "5.0.0",
                        .complexity = "O(log(N)*M) with N being the number of elements in the "
                                      "sorted set, and M being the number of elements popped.",
                        .summary = "Removes and returns the highest scored members of a sorted "
                                   "set.", .key_flags = "RW access delete"}});
  r->Register({.name = "zrandmember", .arity = -2, .flags = kR, .keys = kOneKey,
               .acl_categories = "read sortedset slow", .on_shard = CmdZRandMember,
               .docs = {.group = "sorted-set", .since = "6.2.0",
                        .complexity = "O(N) where N is the number of elements returned",
                        .summary = "Returns random members of a sorted set, optionally with their "
                                   "scores.", .key_flags = "RO access",
                        .tips = "nondeterministic_output"}});
  r->Register({.name = "zscan", .arity = -3, .flags = kR, .keys = kOneKey,
               .acl_categories = "read sortedset slow", .on_shard = CmdZScan,
               .docs = {.group = "sorted-set", .since = "2.8.0",
                        .complexity = "O(1) for every call. O(N) for a complete iteration, "
                                      "including enough command calls for the cursor to return "
                                      "back to 0. N is the number of elements inside the "
                                      "collection..",
                        .summary = "Walks the members and scores of a sorted set a few at a time "
                                   "with a cursor.", .key_flags = "RO access",
                        .tips = "nondeterministic_output"}});

  r->Register({.name = "zrangestore", .arity = -5, .flags = kW | kD, .keys = kTwoKeys,
               .acl_categories = "write sortedset slow", .on_conn = CmdZRangeStore,
               .docs = {.group = "sorted-set", .since = "6.2.0",
                        .complexity = "O(log(N)+M) with N being the number of elements in the "
                                      "sorted set and M the number of elements stored into the "
                                      "destination key.",
                        .summary = "Stores the members of a sorted set in a range of ranks, scores "
                                   "or names in a key.", .key_flags = "OW update",
                        .other_key_flags = "RO access"}});
  // Commands whose keys follow a numkeys argument (Redis' movablekeys: legacy range 0 0 0, or the
  // destination only for the STORE forms).
  r->Register({.name = "zmpop", .arity = -4, .flags = kW, .keys = kNoKeys,
               .acl_categories = "write sortedset slow", .on_conn = CmdZMPop,
               .key_finder = NumKeysFirst,
               .docs = {.group = "sorted-set", .since = "7.0.0",
                        .complexity = "O(K) + O(M*log(N)) where K is the number of provided keys, "
                                      "N being the number of elements in the sorted set, and M "
                                      "being the number of elements popped.",
                        .summary = "Pops the lowest or highest scored members of the first "
                                   "non-empty sorted set of several.",
                        .key_flags = "RW access delete"}});
  r->Register({.name = "zunion", .arity = -3, .flags = kR, .keys = kNoKeys,
               .acl_categories = "read sortedset slow",
               .on_conn = CmdZSetOp<SetOp::kUnion, false, false>, .key_finder = NumKeysFirst,
               .docs = {.group = "sorted-set", .since = "6.2.0",
                        .complexity = "O(N)+O(M*log(M)) with N being the sum of the sizes of the "
                                      "input sorted sets, and M being the number of elements in "
                                      "the resulting sorted set.",
                        .summary = "Returns the members of any of the given sorted sets, with "
                                   "combined scores.", .key_flags = "RO access"}});
  r->Register({.name = "zinter", .arity = -3, .flags = kR, .keys = kNoKeys,
               .acl_categories = "read sortedset slow",
               .on_conn = CmdZSetOp<SetOp::kInter, false, false>, .key_finder = NumKeysFirst,
               .docs = {.group = "sorted-set", .since = "6.2.0",
                        .complexity = "O(N*K)+O(M*log(M)) worst case with N being the smallest "
                                      "input sorted set, K being the number of input sorted sets "
                                      "and M being the number of elements in the resulting sorted "
                                      "set.",
                        .summary = "Returns the members common to every given sorted set, with "
                                   "combined scores.", .key_flags = "RO access"}});
  r->Register({.name = "zdiff", .arity = -3, .flags = kR, .keys = kNoKeys,
               .acl_categories = "read sortedset slow",
               .on_conn = CmdZSetOp<SetOp::kDiff, false, false>, .key_finder = NumKeysFirst,
               .docs = {.group = "sorted-set", .since = "6.2.0",
                        .complexity = "O(L + (N-K)log(N)) worst case where L is the total number "
                                      "of elements in all the sets, N is the size of the first "
                                      "set, and K is the size of the result set.",
                        .summary = "Returns the members of the first sorted set that are in none "
                                   "of the others.", .key_flags = "RO access"}});
  r->Register({.name = "zintercard", .arity = -3, .flags = kR, .keys = kNoKeys,
               .acl_categories = "read sortedset slow",
               .on_conn = CmdZSetOp<SetOp::kInter, false, true>, .key_finder = NumKeysFirst,
               .docs = {.group = "sorted-set", .since = "7.0.0",
                        .complexity = "O(N*K) worst case with N being the smallest input sorted "
                                      "set, K being the number of input sorted sets.",
                        .summary = "Returns how many members are common to every given sorted set, "
                                   "optionally up to a limit.", .key_flags = "RO access"}});
  r->Register({.name = "zunionstore", .arity = -4, .flags = kW | kD, .keys = kOneKey,
               .acl_categories = "write sortedset slow",
               .on_conn = CmdZSetOp<SetOp::kUnion, true, false>,
               .key_finder = DestinationThenNumKeys,
               .docs = {.group = "sorted-set", .since = "2.0.0",
                        .complexity = "O(N)+O(M log(M)) with N being the sum of the sizes of the "
                                      "input sorted sets, and M being the number of elements in "
                                      "the resulting sorted set.",
                        .summary = "Stores the members of any of the given sorted sets, with "
                                   "combined scores, in a key.", .key_flags = "OW update",
                        .other_key_flags = "RO access"}});
  r->Register({.name = "zinterstore", .arity = -4, .flags = kW | kD, .keys = kOneKey,
               .acl_categories = "write sortedset slow",
               .on_conn = CmdZSetOp<SetOp::kInter, true, false>,
               .key_finder = DestinationThenNumKeys,
               .docs = {.group = "sorted-set", .since = "2.0.0",
                        .complexity = "O(N*K)+O(M*log(M)) worst case with N being the smallest "
                                      "input sorted set, K being the number of input sorted sets "
                                      "and M being the number of elements in the resulting sorted "
                                      "set.",
                        .summary = "Stores the members common to every given sorted set, with "
                                   "combined scores, in a key.", .key_flags = "OW update",
                        .other_key_flags = "RO access"}});
  r->Register({.name = "zdiffstore", .arity = -4, .flags = kW | kD, .keys = kOneKey,
               .acl_categories = "write sortedset slow",
               .on_conn = CmdZSetOp<SetOp::kDiff, true, false>,
               .key_finder = DestinationThenNumKeys,
               .docs = {.group = "sorted-set", .since = "6.2.0",
                        .complexity = "O(L + (N-K)log(N)) worst case where L is the total number "
                                      "of elements in all the sets, N is the size of the first "
                                      "set, and K is the size of the result set.",
                        .summary = "Stores the members of the first sorted set that are in none of "
                                   "the others in a key.", .key_flags = "OW update",
                        .other_key_flags = "RO access"}});
}

}  // namespace shardis::server
