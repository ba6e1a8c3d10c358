// Hash commands: HSET, HSETNX, HMSET, HGET, HMGET, HDEL, HLEN, HEXISTS, HSTRLEN, HINCRBY,
// HINCRBYFLOAT, HGETALL, HKEYS, HVALS, HRANDFIELD, HSCAN.
//
// Every command has one key (args[1]) and runs on its shard. The value is a core::HashRef over
// the cell (core/hash_object.h), which switches from the packed to the table encoding by itself.
// Replies, error texts and the order of checks follow Redis 7.0.15 (t_hash.c).
#include <absl/container/flat_hash_set.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/hash_object.h"
#include "core/number.h"
#include "core/string_util.h"
#include "server/collection_args.h"
#include "server/command.h"
#include "server/key_lookup.h"

namespace shardis::server {

namespace {

using core::HashRef;
using core::ValueType;
using shard::Db;

constexpr std::string_view kHashNotIntErr = "ERR hash value is not an integer";
constexpr std::string_view kHashNotFloatErr = "ERR hash value is not a float";

// The hash at ctx's key for a write, created empty when missing (the caller must add to it).
// Null iterator after replying WRONGTYPE.
Db::Iterator FindOrCreateHash(ShardContext& ctx, std::string_view key) {
  bool wrong_type;
  Db::Iterator it = FindTyped(ctx, key, ValueType::kHash, kForWrite, &wrong_type);
  if (wrong_type || Db::Found(it)) return it;
  bool inserted;
  it = ctx.db.FindOrInsert(key, ctx.hash, ctx.now_ms, &inserted);
  HashRef::InitCell(&it.value());
  return it;
}

// Deletes ctx's key when a removal emptied its hash (Redis deletes empty collections), with
// Redis' "del" event.
void EraseIfEmpty(ShardContext& ctx, Db::Iterator it, std::string_view key) {
  if (HashRef(it.value()).Size() != 0) return;
  ctx.db.Erase(it, key, ctx.hash);
  NotifyKeyspaceEvent(ctx, kNotifyGeneric, "del", key);
}

// HSET key field value [field value ...] / HMSET: the count of new fields, or OK.
template <bool kMulti>
void CmdHSet(ArgSlice args, ShardContext& ctx) {
  if (args.size() % 2 == 1) return ctx.rb.Error(WrongArgsError(kMulti ? "hmset" : "hset"));
  Db::Iterator it = FindOrCreateHash(ctx, args[1]);
  if (!Db::Found(it)) return;
  HashRef h(it.value());
  int64_t added = 0;
  for (size_t i = 2; i < args.size(); i += 2) added += h.Set(args[i], args[i + 1]) ? 1 : 0;
  ctx.shard.AddDirty((args.size() - 2) / 2);  // one per field given, new or not, as in Redis
  NotifyKeyspaceEvent(ctx, kNotifyHash, "hset", args[1]);
  if (kMulti) return ctx.rb.Ok();
  ctx.rb.Integer(added);
}

void CmdHSetNx(ArgSlice args, ShardContext& ctx) {
  Db::Iterator it = FindOrCreateHash(ctx, args[1]);
  if (!Db::Found(it)) return;
  const bool added = HashRef(it.value()).Set(args[2], args[3], /*overwrite=*/false);
  if (added) {
    ctx.shard.AddDirty();
    NotifyKeyspaceEvent(ctx, kNotifyHash, "hset", args[1]);
  }
  ctx.rb.Integer(added ? 1 : 0);
}

void CmdHGet(ArgSlice args, ShardContext& ctx) {
  bool wrong_type;
  Db::Iterator it = FindTyped(ctx, args[1], ValueType::kHash, kForRead, &wrong_type);
  if (wrong_type) return;
  std::string_view v;
  if (!Db::Found(it) || !HashRef(it.value()).Get(args[2], &v)) return ctx.rb.Null();
  ctx.rb.Bulk(v);
}

void CmdHMGet(ArgSlice args, ShardContext& ctx) {
  bool wrong_type;
  Db::Iterator it = FindTyped(ctx, args[1], ValueType::kHash, kForRead, &wrong_type);
  if (wrong_type) return;
  ctx.rb.ArrayHeader(args.size() - 2);
  for (size_t i = 2; i < args.size(); ++i) {
    std::string_view v;
    if (Db::Found(it) && HashRef(it.value()).Get(args[i], &v)) {
      ctx.rb.Bulk(v);
    } else {
      ctx.rb.Null();
    }
  }
}

void CmdHDel(ArgSlice args, ShardContext& ctx) {
  bool wrong_type;
  Db::Iterator it = FindTyped(ctx, args[1], ValueType::kHash, kForWrite, &wrong_type);
  if (wrong_type) return;
  if (!Db::Found(it)) return ctx.rb.Integer(0);
  HashRef h(it.value());
  int64_t deleted = 0;
  for (size_t i = 2; i < args.size(); ++i) {
    deleted += h.Delete(args[i]) ? 1 : 0;
    if (h.Size() == 0) break;
  }
  if (deleted > 0) NotifyKeyspaceEvent(ctx, kNotifyHash, "hdel", args[1]);
  EraseIfEmpty(ctx, it, args[1]);
  ctx.shard.AddDirty(deleted);
  ctx.rb.Integer(deleted);
}

void CmdHLen(ArgSlice args, ShardContext& ctx) {
  bool wrong_type;
  Db::Iterator it = FindTyped(ctx, args[1], ValueType::kHash, kForRead, &wrong_type);
  if (wrong_type) return;
  ctx.rb.Integer(Db::Found(it) ? int64_t(HashRef(it.value()).Size()) : 0);
}

void CmdHExists(ArgSlice args, ShardContext& ctx) {
  bool wrong_type;
  Db::Iterator it = FindTyped(ctx, args[1], ValueType::kHash, kForRead, &wrong_type);
  if (wrong_type) return;
  ctx.rb.Integer(Db::Found(it) && HashRef(it.value()).Contains(args[2]) ? 1 : 0);
}

void CmdHStrLen(ArgSlice args, ShardContext& ctx) {
  bool wrong_type;
  Db::Iterator it = FindTyped(ctx, args[1], ValueType::kHash, kForRead, &wrong_type);
  if (wrong_type) return;
  std::string_view v;
  ctx.rb.Integer(Db::Found(it) && HashRef(it.value()).Get(args[2], &v) ? int64_t(v.size()) : 0);
}

void CmdHIncrBy(ArgSlice args, ShardContext& ctx) {
  int64_t incr;
  if (!core::ParseInt64(args[3], &incr)) return ctx.rb.Error(kNotIntegerErr);
  bool wrong_type;
  Db::Iterator it = FindTyped(ctx, args[1], ValueType::kHash, kForWrite, &wrong_type);
  if (wrong_type) return;
  int64_t value = 0;
  std::string_view old;
  if (Db::Found(it) && HashRef(it.value()).Get(args[2], &old)) {
    if (!core::ParseInt64(old, &value)) return ctx.rb.Error(kHashNotIntErr);
  }
  if ((incr < 0 && value < 0 && incr < INT64_MIN - value) ||
      (incr > 0 && value > 0 && incr > INT64_MAX - value)) {
    return ctx.rb.Error(kOverflowErr);
  }
  value += incr;
  if (!Db::Found(it)) it = FindOrCreateHash(ctx, args[1]);
  char buf[core::kInt64BufSize];
  HashRef(it.value()).Set(args[2], std::string_view(buf, core::FormatInt64(value, buf)));
  ctx.shard.AddDirty();
  NotifyKeyspaceEvent(ctx, kNotifyHash, "hincrby", args[1]);
  ctx.rb.Integer(value);
}

void CmdHIncrByFloat(ArgSlice args, ShardContext& ctx) {
  long double incr;
  if (!core::ParseLongDouble(args[3], &incr)) return ctx.rb.Error(kNotFloatErr);
  if (std::isnan(incr) || std::isinf(incr)) return ctx.rb.Error("ERR value is NaN or Infinity");
  bool wrong_type;
  Db::Iterator it = FindTyped(ctx, args[1], ValueType::kHash, kForWrite, &wrong_type);
  if (wrong_type) return;
  long double value = 0;
  std::string_view old;
  if (Db::Found(it) && HashRef(it.value()).Get(args[2], &old)) {
    if (!core::ParseLongDouble(old, &value)) return ctx.rb.Error(kHashNotFloatErr);
  }
  value += incr;
  if (std::isnan(value) || std::isinf(value)) {
    return ctx.rb.Error("ERR increment would produce NaN or Infinity");
  }
  const std::string text = core::FormatLongDouble(value);
  if (!Db::Found(it)) it = FindOrCreateHash(ctx, args[1]);
  HashRef(it.value()).Set(args[2], text);
  ctx.shard.AddDirty();
  NotifyKeyspaceEvent(ctx, kNotifyHash, "hincrbyfloat", args[1]);
  ctx.rb.Bulk(text);
}

enum class GetAll { kKeys, kValues, kBoth };

template <GetAll kWhat>
void CmdHGetAll(ArgSlice args, ShardContext& ctx) {
  bool wrong_type;
  Db::Iterator it = FindTyped(ctx, args[1], ValueType::kHash, kForRead, &wrong_type);
  if (wrong_type) return;
  const size_t n = Db::Found(it) ? HashRef(it.value()).Size() : 0;
  if (kWhat == GetAll::kBoth) {
    ctx.rb.MapHeader(n);
  } else {
    ctx.rb.ArrayHeader(n);
  }
  if (n == 0) return;
  HashRef(it.value()).ForEach([&](std::string_view f, std::string_view v) {
    if (kWhat != GetAll::kValues) ctx.rb.Bulk(f);
    if (kWhat != GetAll::kKeys) ctx.rb.Bulk(v);
  });
}

// One HRANDFIELD element: the field, or with values a pair (an array of two in RESP3, two
// flat elements in RESP2).
void ReplyField(core::ReplyBuilder& rb, bool with_values, std::string_view f, std::string_view v) {
  if (with_values && rb.resp3()) rb.ArrayHeader(2);
  rb.Bulk(f);
  if (with_values) rb.Bulk(v);
}

// HRANDFIELD key [count [WITHVALUES]] (Redis' hrandfieldWithCountCommand).
void CmdHRandField(ArgSlice args, ShardContext& ctx) {
  auto& rng = ThreadRng();
  if (args.size() == 2) {
    bool wrong_type;
    Db::Iterator it = FindTyped(ctx, args[1], ValueType::kHash, kForRead, &wrong_type);
    if (wrong_type) return;
    if (!Db::Found(it)) return ctx.rb.Null();
    std::string_view f, v;
    HashRef(it.value()).Random(rng, &f, &v);
    return ctx.rb.Bulk(f);
  }
  int64_t l;
  if (!ParseRandomCount(args[2], ctx.rb, &l)) return;
  bool with_values = false;
  if (args.size() > 4 || (args.size() == 4 && !core::EqualsIgnoreCase(args[3], "withvalues"))) {
    return ctx.rb.Error(kSyntaxErr);
  }
  if (args.size() == 4) {
    with_values = true;
    if (l < -INT64_MAX / 2 || l > INT64_MAX / 2) return ctx.rb.Error("ERR value is out of range");
  }
  bool wrong_type;
  Db::Iterator it = FindTyped(ctx, args[1], ValueType::kHash, kForRead, &wrong_type);
  if (wrong_type) return;
  if (!Db::Found(it) || l == 0) return ctx.rb.ArrayHeader(0);
  HashRef h(it.value());
  const size_t size = h.Size();
  const bool unique = l > 0;
  const uint64_t count = unique ? uint64_t(l) : uint64_t(-l);
  const size_t flat = with_values && !ctx.rb.resp3() ? 2 : 1;
  std::string_view f, v;
  if (!unique || count == 1) {
    // Repetitions allowed: count independent picks.
    ctx.rb.ArrayHeader(count * flat);
    for (uint64_t i = 0; i < count; ++i) {
      h.Random(rng, &f, &v);
      ReplyField(ctx.rb, with_values, f, v);
    }
    return;
  }
  if (count >= size) {
    ctx.rb.ArrayHeader(size * flat);
    h.ForEach([&](std::string_view f, std::string_view v) {
      ReplyField(ctx.rb, with_values, f, v);
    });
    return;
  }
  ctx.rb.ArrayHeader(count * flat);
  if (count * 3 > size) {
    // Many of them: a partial shuffle of every entry.
    std::vector<std::pair<std::string_view, std::string_view>> all;
    all.reserve(size);
    h.ForEach([&](std::string_view f, std::string_view v) { all.emplace_back(f, v); });
    for (uint64_t i = 0; i < count; ++i) {
      std::swap(all[i], all[i + rng() % (size - i)]);
      ReplyField(ctx.rb, with_values, all[i].first, all[i].second);
    }
    return;
  }
  // A few of many: random picks, skipping repeats.
  absl::flat_hash_set<std::string> seen;
  while (seen.size() < count) {
    h.Random(rng, &f, &v);
    if (seen.emplace(f).second) ReplyField(ctx.rb, with_values, f, v);
  }
}

// HSCAN key cursor [MATCH pattern] [COUNT count] [NOVALUES]
void CmdHScan(ArgSlice args, ShardContext& ctx) {
  uint64_t cursor;
  if (!core::ParseScanCursor(args[2], &cursor)) return ctx.rb.Error(kInvalidCursorErr);
  bool wrong_type;
  Db::Iterator it = FindTyped(ctx, args[1], ValueType::kHash, kForRead, &wrong_type);
  if (wrong_type) return;
  if (!Db::Found(it)) return ReplyEmptyScan(ctx.rb);
  ScanOptions opts;
  if (!ParseScanOptions(args, 3, ScanTarget::kHash, ctx.rb, &opts)) return;
  std::vector<std::pair<std::string_view, std::string_view>> found;
  // Views into the hash: nothing changes it before the reply is written.
  HashRef h(it.value());
  cursor = h.Scan(cursor, opts.count, [&](std::string_view f, std::string_view v) {
    if (opts.Matches(f)) found.emplace_back(f, v);
  });
  ctx.rb.ArrayHeader(2);
  ctx.rb.Bulk(std::to_string(cursor));
  ctx.rb.ArrayHeader(found.size() * (opts.no_values ? 1 : 2));
  for (const auto& [f, v] : found) {
    ctx.rb.Bulk(f);
    if (!opts.no_values) ctx.rb.Bulk(v);
  }
}

}  // namespace

void RegisterHashFamily(CommandRegistry* r) {
  constexpr uint32_t kW = kWrite, kR = kReadOnly, kD = kDenyOom, kF = kFast;
  r->Register({.name = "hset", .arity = -4, .flags = kW | kD | kF, .keys = kOneKey,
               .acl_categories = "write hash fast", .on_shard = CmdHSet<false>,
               .docs = {.group = "hash", .since = "2.0.0",
                        .complexity = "O(1) for each field/value pair added, so O(N) to add N "
                                      "field/value pairs when the command is called with multiple "
                                      "field/value pairs.",
                        .summary = "Sets fields of a hash to values, creating the hash when "
                                   "needed.", .key_flags = "RW update"}});
  r->Register({.name = "hmset", .arity = -4, .flags = kW | kD | kF, .keys = kOneKey,
               .acl_categories = "write hash fast", .on_shard = CmdHSet<true>,
               .docs = {.group = "hash", .since = "2.0.0",
                        .complexity = "O(N) where N is the number of fields being set.",
                        .summary = "Sets several fields of a hash (old form of HSET).",
                        .key_flags = "RW update"}});
  r->Register({.name = "hsetnx", .arity = 4, .flags = kW | kD | kF, .keys = kOneKey,
               .acl_categories = "write hash fast", .on_shard = CmdHSetNx,
               .docs = {.group = "hash", .since = "2.0.0", .complexity = "O(1)",
                        .summary = "Sets a field of a hash only when the field does not exist.",
                        .key_flags = "RW insert"}});
  r->Register({.name = "hget", .arity = 3, .flags = kR | kF, .keys = kOneKey,
               .acl_categories = "read hash fast", .on_shard = CmdHGet,
               .docs = {.group = "hash", .since = "2.0.0", .complexity = "O(1)",
                        .summary = "Returns the value of a field of a hash.",
                        .key_flags = "RO access"}});
  r->Register({.name = "hmget", .arity = -3, .flags = kR | kF, .keys = kOneKey,
               .acl_categories = "read hash fast", .on_shard = CmdHMGet,
               .docs = {.group = "hash", .since = "2.0.0",
                        .complexity = "O(N) where N is the number of fields being requested.",
                        .summary = "Returns the values of several fields of a hash.",
                        .key_flags = "RO access"}});
  r->Register({.name = "hdel", .arity = -3, .flags = kW | kF, .keys = kOneKey,
               .acl_categories = "write hash fast", .on_shard = CmdHDel,
               .docs = {.group = "hash", .since = "2.0.0",
                        .complexity = "O(N) where N is the number of fields to be removed.",
                        .summary = "Deletes fields from a hash.", .key_flags = "RW delete"}});
  r->Register({.name = "hlen", .arity = 2, .flags = kR | kF, .keys = kOneKey,
               .acl_categories = "read hash fast", .on_shard = CmdHLen,
               .docs = {.group = "hash", .since = "2.0.0", .complexity = "O(1)",
                        .summary = "Returns the number of fields of a hash.", .key_flags = "RO"}});
  r->Register({.name = "hexists", .arity = 3, .flags = kR | kF, .keys = kOneKey,
               .acl_categories = "read hash fast", .on_shard = CmdHExists,
               .docs = {.group = "hash", .since = "2.0.0", .complexity = "O(1)",
                        .summary = "Tells whether a hash has a field.", .key_flags = "RO"}});
  r->Register({.name = "hstrlen", .arity = 3, .flags = kR | kF, .keys = kOneKey,
               .acl_categories = "read hash fast", .on_shard = CmdHStrLen,
               .docs = {.group = "hash", .since = "3.2.0", .complexity = "O(1)",
                        .summary = "Returns the length of the value of a field of a hash.",
                        .key_flags = "RO"}});
  r->Register({.name = "hincrby", .arity = 4, .flags = kW | kD | kF, .keys = kOneKey,
               .acl_categories = "write hash fast", .on_shard = CmdHIncrBy,
               .docs = {.group = "hash", .since = "2.0.0", .complexity = "O(1)",
                        .summary = "Adds an integer to the integer value of a field of a hash.",
                        .key_flags = "RW access update"}});
  r->Register({.name = "hincrbyfloat", .arity = 4, .flags = kW | kD | kF, .keys = kOneKey,
               .acl_categories = "write hash fast", .on_shard = CmdHIncrByFloat,
               .docs = {.group = "hash", .since = "2.6.0", .complexity = "O(1)",
                        .summary = "Adds a float to the numeric value of a field of a hash.",
                        .key_flags = "RW access update"}});
  r->Register({.name = "hgetall", .arity = 2, .flags = kR, .keys = kOneKey,
               .acl_categories = "read hash slow", .on_shard = CmdHGetAll<GetAll::kBoth>,
               .docs = {.group = "hash", .since = "2.0.0",
                        .complexity = "O(N) where N is the size of the hash.",
                        .summary = "Returns every field of a hash with its value.",
                        .key_flags = "RO access", .tips = "nondeterministic_output_order"}});
  r->Register({.name = "hkeys", .arity = 2, .flags = kR, .keys = kOneKey,
               .acl_categories = "read hash slow", .on_shard = CmdHGetAll<GetAll::kKeys>,
               .docs = {.group = "hash", .since = "2.0.0",
                        .complexity = "O(N) where N is the size of the hash.",
                        .summary = "Returns the names of every field of a hash.",
                        .key_flags = "RO access", .tips = "nondeterministic_output_order"}});
  r->Register({.name = "hvals", .arity = 2, .flags = kR, .keys = kOneKey,
               .acl_categories = "read hash slow", .on_shard = CmdHGetAll<GetAll::kValues>,
               .docs = {.group = "hash", .since = "2.0.0",
                        .complexity = "O(N) where N is the size of the hash.",
                        .summary = "Returns the values of every field of a hash.",
                        .key_flags = "RO access", .tips = "nondeterministic_output_order"}});
  r->Register({.name = "hrandfield", .arity = -2, .flags = kR, .keys = kOneKey,
               .acl_categories = "read hash slow", .on_shard = CmdHRandField,
               .docs = {.group = "hash", .since = "6.2.0",
                        .complexity = "O(N) where N is the number of fields returned",
                        .summary = "Returns random fields of a hash, optionally with their values.",
                        .key_flags = "RO access", .tips = "nondeterministic_output"}});
  r->Register({.name = "hscan", .arity = -3, .flags = kR, .keys = kOneKey,
               .acl_categories = "read hash slow", .on_shard = CmdHScan,
               .docs = {.group = "hash", .since = "2.8.0",
                        .complexity = "O(1) for every call. O(N) for a complete iteration, "
                                      "including enough command calls for the cursor to return "
                                      "back to 0. N is the number of elements inside the "
                                      "collection..",
                        .summary = "Walks the fields and values of a hash a few at a time with a "
                                   "cursor.", .key_flags = "RO access",
                        .tips = "nondeterministic_output"}});
}

}  // namespace shardis::server
