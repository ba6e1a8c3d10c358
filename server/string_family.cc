// String commands: GET, SET and its variants, counters, APPEND, ranges, MGET/MSET.
//
// Single-key commands run on the shard that owns the key (ShardHandler) and reuse the key's hash
// the connection computed (ctx.hash). MGET and MSET fan out: each key is hashed once, the key
// indices are grouped per owning shard and every shard involved handles its group in one hop, in
// parallel (their cross-shard atomicity is the transaction layer's job, not yet here).
//
// Values are core::CompactValue cells: a string that is the canonical form of an int64 is stored
// as that integer, so the counters work on it directly, and replies format it back (GetString).
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "core/number.h"
#include "core/string_util.h"
#include "server/arg_parser.h"
#include "server/client_buffers.h"
#include "server/command.h"
#include "server/connection_state.h"
#include "server/key_lookup.h"
#include "shard/shard_set.h"
#include "shard/transaction.h"

namespace shardis::server {

namespace {

using core::CompactValue;
using shard::Db;

constexpr std::string_view kStringTooLongErr =
    "ERR string exceeds maximum allowed size (proto-max-bulk-len)";

// Replies the string value of a cell.
void ReplyValue(core::ReplyBuilder& rb, const CompactValue& v) {
  char scratch[CompactValue::kScratchSize];
  rb.Bulk(v.GetString(scratch));
}

// Replaces the value of the entry `it` of ctx's key (args[1]) with a string. Unless keep_ttl, the
// expiry becomes at_ms (0: none), as Redis' setKey removes the TTL of a key it overwrites.
void OverwriteString(ShardContext& ctx, Db::Iterator it, std::string_view key,
                     std::string_view value, bool keep_ttl, int64_t at_ms) {
  ctx.db.ReleaseOldValue(it);  // lazyfree-lazy-server-del, for a collection overwritten
  it.value().SetString(value);
  if (!keep_ttl) ctx.db.SetExpire(it, key, ctx.hash, at_ms);
}

// Stores a string value at ctx's key (args[1]), whether or not it exists.
void StoreString(ShardContext& ctx, std::string_view key, std::string_view value, bool keep_ttl,
                 int64_t at_ms) {
  bool inserted;
  Db::Iterator it = ctx.db.FindOrInsert(key, ctx.hash, ctx.now_ms, &inserted);
  OverwriteString(ctx, it, key, value, keep_ttl, at_ms);
}

// Redis' events of a SET: "set", then "expire" when the command gave the key a deadline.
void NotifySet(ShardContext& ctx, std::string_view key, bool with_deadline) {
  NotifyKeyspaceEvent(ctx, kNotifyString, "set", key);
  if (with_deadline) NotifyKeyspaceEvent(ctx, kNotifyGeneric, "expire", key);
}

// --- SET / GETEX option parsing (Redis' parseExtendedStringArgumentsOrReply).

enum SetFlag : unsigned {
  kSetNx = 1 << 0,
  kSetXx = 1 << 1,
  kSetGet = 1 << 2,
  kKeepTtl = 1 << 3,
  kPersist = 1 << 4,
  kEx = 1 << 5,
  kPx = 1 << 6,
  kExAt = 1 << 7,
  kPxAt = 1 << 8,
};
constexpr unsigned kAnyExpire = kEx | kPx | kExAt | kPxAt;

struct SetOptions {
  unsigned flags = 0;
  std::string_view expire;  // the argument after EX/PX/EXAT/PXAT
};

enum class OptionsFor { kSet, kGetEx };

// EX, PX, EXAT or PXAT, consumed when a value follows it; 0 when the next argument is none of
// them.
unsigned CheckExpireOption(ArgParser& p) {
  if (p.Check("EX", 1)) return kEx;
  if (p.Check("PX", 1)) return kPx;
  if (p.Check("EXAT", 1)) return kExAt;
  if (p.Check("PXAT", 1)) return kPxAt;
  return 0;
}

// Parses args[start..]. Returns false on a syntax error (the caller replies it). Like Redis, a
// repeated expiry option of the same kind is accepted and the last one wins.
bool ParseSetOptions(ArgSlice args, size_t start, OptionsFor cmd, SetOptions* opts) {
  unsigned& f = opts->flags;
  const bool is_set = cmd == OptionsFor::kSet;
  ArgParser p(args, start);
  while (p.HasNext()) {
    if (is_set && !(f & kSetXx) && p.Check("NX")) {
      f |= kSetNx;
    } else if (is_set && !(f & kSetNx) && p.Check("XX")) {
      f |= kSetXx;
    } else if (is_set && p.Check("GET")) {
      f |= kSetGet;
    } else if (is_set && !(f & (kPersist | kAnyExpire)) && p.Check("KEEPTTL")) {
      f |= kKeepTtl;
    } else if (!is_set && !(f & (kKeepTtl | kAnyExpire)) && p.Check("PERSIST")) {
      f |= kPersist;
    } else if (const unsigned expire = CheckExpireOption(p)) {
      if (f & (kKeepTtl | kPersist | (kAnyExpire & ~expire))) return false;
      f |= expire;
      opts->expire = p.Next();
    } else {
      return false;
    }
  }
  return true;
}

void ReplyInvalidExpire(core::ReplyBuilder& rb, std::string_view command) {
  rb.Error(core::Concat("ERR invalid expire time in '", command, "' command"));
}

// Turns an EX/PX/EXAT/PXAT argument into an absolute deadline in ms (Redis'
// getExpireMillisecondsOrReply): it must be a positive integer, and the result must not overflow.
// Replies the error and returns false otherwise.
bool ParseExpireDeadline(std::string_view arg, unsigned flags, int64_t now_ms,
                         std::string_view command, core::ReplyBuilder& rb, int64_t* at_ms) {
  int64_t v;
  if (!core::ParseInt64(arg, &v)) {
    rb.Error(kNotIntegerErr);
    return false;
  }
  const bool seconds = flags & (kEx | kExAt);
  if (v <= 0 || (seconds && v > std::numeric_limits<int64_t>::max() / 1000)) {
    ReplyInvalidExpire(rb, command);
    return false;
  }
  if (seconds) v *= 1000;
  if ((flags & (kEx | kPx)) && __builtin_add_overflow(v, now_ms, &v)) {
    ReplyInvalidExpire(rb, command);
    return false;
  }
  *at_ms = v;
  return true;
}

// --- GET and SET family.

void CmdGet(ArgSlice args, ShardContext& ctx) {
  Db::Iterator it = LookupRead(ctx, args[1]);
  if (!Db::Found(it)) return ctx.rb.Null();
  if (!it.value().IsString()) return ctx.rb.Error(kWrongTypeErr);
  ReplyValue(ctx.rb, it.value());
}

// The journal's form of a write that set `value` with a relative or absolute expiry: SET key
// value PXAT <ms> (as Redis propagates SET with EX/PX/EXAT, SETEX and PSETEX), or DEL when the
// deadline had passed and the key went.
bool SetWithDeadlineForm(std::string_view key, std::string_view value, ShardContext& ctx,
                         std::vector<std::string>* form) {
  const int64_t at = KeyDeadlineAfterWrite(key, ctx);
  if (at == 0) return false;
  if (at < 0) {
    *form = {"DEL", std::string(key)};
  } else {
    *form = {"SET", std::string(key), std::string(value), "PXAT", std::to_string(at)};
  }
  return true;
}

bool JournalSet(ArgSlice args, ShardContext& ctx, std::vector<std::string>* form) {
  bool expiry = false;
  for (size_t i = 3; i < args.size(); ++i) {
    for (std::string_view opt : {"ex", "px", "exat", "pxat"}) expiry |= core::EqualsIgnoreCase(args[i], opt);
  }
  return expiry && SetWithDeadlineForm(args[1], args[2], ctx, form);
}

bool JournalSetEx(ArgSlice args, ShardContext& ctx, std::vector<std::string>* form) {
  return SetWithDeadlineForm(args[1], args[3], ctx, form);
}

// GETEX with EX/PX/EXAT/PXAT: PEXPIREAT <ms> (PERSIST is journaled as sent).
bool JournalGetEx(ArgSlice args, ShardContext& ctx, std::vector<std::string>* form) {
  if (args.size() > 2 && core::EqualsIgnoreCase(args[2], "persist")) return false;
  return PexpireatForm(args[1], ctx, form);
}

// SET key value [NX | XX] [GET] [EX s | PX ms | EXAT s | PXAT ms | KEEPTTL]
void CmdSet(ArgSlice args, ShardContext& ctx) {
  std::string_view key = args[1], value = args[2];
  SetOptions opts;
  if (!ParseSetOptions(args, 3, OptionsFor::kSet, &opts)) return ctx.rb.Error(kSyntaxErr);
  const unsigned f = opts.flags;
  int64_t at_ms = 0;
  if ((f & kAnyExpire) && !ParseExpireDeadline(opts.expire, f, ctx.now_ms, "set", ctx.rb, &at_ms)) {
    return;
  }
  const bool keep_ttl = f & kKeepTtl;
  if (!(f & (kSetNx | kSetXx | kSetGet))) {  // the common case: one table probe
    StoreString(ctx, key, value, keep_ttl, at_ms);
    ctx.shard.AddDirty();
    NotifySet(ctx, key, f & kAnyExpire);
    return ctx.rb.Ok();
  }

  Db::Iterator it;
  if (f & kSetGet) {
    // The old value is the reply, whether or not NX/XX then let the write happen.
    it = LookupRead(ctx, key);
    if (Db::Found(it)) {
      if (!it.value().IsString()) return ctx.rb.Error(kWrongTypeErr);
      ReplyValue(ctx.rb, it.value());
    } else {
      ctx.rb.Null();
    }
  } else {
    it = LookupWrite(ctx, key);
  }
  const bool found = Db::Found(it);
  if (((f & kSetNx) && found) || ((f & kSetXx) && !found)) {
    if (!(f & kSetGet)) ctx.rb.Null();
    ctx.unchanged = true;
    return;
  }
  if (found) {
    OverwriteString(ctx, it, key, value, keep_ttl, at_ms);
  } else {
    StoreString(ctx, key, value, keep_ttl, at_ms);
  }
  ctx.shard.AddDirty();
  NotifySet(ctx, key, f & kAnyExpire);
  if (!(f & kSetGet)) ctx.rb.Ok();
}

void CmdSetNx(ArgSlice args, ShardContext& ctx) {
  bool inserted;
  Db::Iterator it = ctx.db.FindOrInsert(args[1], ctx.hash, ctx.now_ms, &inserted);
  if (!inserted) {
    ctx.unchanged = true;
    return ctx.rb.Integer(0);
  }
  it.value().SetString(args[2]);  // a new entry: no TTL to clear
  ctx.shard.AddDirty();
  NotifySet(ctx, args[1], false);
  ctx.rb.Integer(1);
}

// SETEX key seconds value / PSETEX key milliseconds value.
template <bool kMillis>
void CmdSetEx(ArgSlice args, ShardContext& ctx) {
  int64_t at_ms;
  if (!ParseExpireDeadline(args[2], kMillis ? kPx : kEx, ctx.now_ms, kMillis ? "psetex" : "setex",
                           ctx.rb, &at_ms)) {
    return;
  }
  StoreString(ctx, args[1], args[3], false, at_ms);
  ctx.shard.AddDirty();
  NotifySet(ctx, args[1], true);
  ctx.rb.Ok();
}

void CmdGetSet(ArgSlice args, ShardContext& ctx) {
  Db::Iterator it = LookupRead(ctx, args[1]);
  if (!Db::Found(it)) {
    ctx.rb.Null();
    StoreString(ctx, args[1], args[2], false, 0);
    ctx.shard.AddDirty();
    return NotifySet(ctx, args[1], false);
  }
  if (!it.value().IsString()) return ctx.rb.Error(kWrongTypeErr);
  ReplyValue(ctx.rb, it.value());  // copied into the reply before the value changes
  OverwriteString(ctx, it, args[1], args[2], false, 0);
  ctx.shard.AddDirty();
  NotifySet(ctx, args[1], false);
}

void CmdGetDel(ArgSlice args, ShardContext& ctx) {
  Db::Iterator it = LookupRead(ctx, args[1]);
  if (!Db::Found(it)) return ctx.rb.Null();
  if (!it.value().IsString()) return ctx.rb.Error(kWrongTypeErr);
  ReplyValue(ctx.rb, it.value());
  ctx.db.Erase(it, args[1], ctx.hash);
  ctx.shard.AddDirty();
  NotifyKeyspaceEvent(ctx, kNotifyGeneric, "del", args[1]);
}

// GETEX key [EX s | PX ms | EXAT s | PXAT ms | PERSIST]
void CmdGetEx(ArgSlice args, ShardContext& ctx) {
  SetOptions opts;
  if (!ParseSetOptions(args, 2, OptionsFor::kGetEx, &opts)) return ctx.rb.Error(kSyntaxErr);
  const unsigned f = opts.flags;
  Db::Iterator it = LookupRead(ctx, args[1]);
  if (!Db::Found(it)) return ctx.rb.Null();
  if (!it.value().IsString()) return ctx.rb.Error(kWrongTypeErr);
  int64_t at_ms = 0;
  if ((f & kAnyExpire) &&
      !ParseExpireDeadline(opts.expire, f, ctx.now_ms, "getex", ctx.rb, &at_ms)) {
    return;
  }
  ReplyValue(ctx.rb, it.value());
  if ((f & (kExAt | kPxAt)) && at_ms <= ctx.now_ms) {
    ctx.db.Erase(it, args[1], ctx.hash);  // an absolute deadline already in the past
    NotifyKeyspaceEvent(ctx, kNotifyGeneric, "del", args[1]);
  } else if (f & kAnyExpire) {
    ctx.db.SetExpire(it, args[1], ctx.hash, at_ms);
    NotifyKeyspaceEvent(ctx, kNotifyGeneric, "expire", args[1]);
  } else if ((f & kPersist) && ctx.db.ExpireAt(it, args[1], ctx.hash) != 0) {
    ctx.db.SetExpire(it, args[1], ctx.hash, 0);
    NotifyKeyspaceEvent(ctx, kNotifyGeneric, "persist", args[1]);
  } else {
    ctx.unchanged = true;  // a plain read, or PERSIST of a key without TTL
    return;
  }
  ctx.shard.AddDirty();
}

// --- Counters.

// The integer a string value holds, as Redis' getLongLongFromObject reads it. A cell that holds
// the canonical form of an int64 is int-encoded, so the parse is only a safety net: every other
// string ("01", " 1", "1.0", ...) is rejected, as Redis rejects it.
bool ValueAsInt(const CompactValue& v, int64_t* out) {
  if (v.IsInt()) {
    *out = v.AsInt();
    return true;
  }
  char scratch[CompactValue::kScratchSize];
  return core::ParseInt64(v.GetString(scratch), out);
}

// INCR, DECR, INCRBY, DECRBY: one probe; a missing key counts from 0 (and cannot overflow). The
// TTL stays, as in Redis.
void IncrBy(ShardContext& ctx, std::string_view key, int64_t incr) {
  bool inserted;
  Db::Iterator it = ctx.db.FindOrInsert(key, ctx.hash, ctx.now_ms, &inserted);
  CompactValue& cell = it.value();
  int64_t value = 0;
  if (!inserted) {
    if (!cell.IsString()) return ctx.rb.Error(kWrongTypeErr);
    if (!ValueAsInt(cell, &value)) return ctx.rb.Error(kNotIntegerErr);
    if (__builtin_add_overflow(value, incr, &value)) return ctx.rb.Error(kOverflowErr);
  } else {
    value = incr;
  }
  cell.SetInt(value);
  ctx.shard.AddDirty();
  NotifyKeyspaceEvent(ctx, kNotifyString, "incrby", key);
  ctx.rb.Integer(value);
}

void CmdIncr(ArgSlice args, ShardContext& ctx) { IncrBy(ctx, args[1], 1); }
void CmdDecr(ArgSlice args, ShardContext& ctx) { IncrBy(ctx, args[1], -1); }

void CmdIncrBy(ArgSlice args, ShardContext& ctx) {
  int64_t incr;
  if (!core::ParseInt64(args[2], &incr)) return ctx.rb.Error(kNotIntegerErr);
  IncrBy(ctx, args[1], incr);
}

void CmdDecrBy(ArgSlice args, ShardContext& ctx) {
  int64_t decr;
  if (!core::ParseInt64(args[2], &decr)) return ctx.rb.Error(kNotIntegerErr);
  if (decr == std::numeric_limits<int64_t>::min()) {
    return ctx.rb.Error("ERR decrement would overflow");
  }
  IncrBy(ctx, args[1], -decr);
}

void CmdIncrByFloat(ArgSlice args, ShardContext& ctx) {
  Db::Iterator it = LookupWrite(ctx, args[1]);
  long double value = 0, incr;
  if (Db::Found(it)) {
    if (!it.value().IsString()) return ctx.rb.Error(kWrongTypeErr);
    char scratch[CompactValue::kScratchSize];
    if (!core::ParseLongDouble(it.value().GetString(scratch), &value)) {
      return ctx.rb.Error(kNotFloatErr);
    }
  }
  if (!core::ParseLongDouble(args[2], &incr)) return ctx.rb.Error(kNotFloatErr);
  value += incr;
  if (std::isnan(value) || std::isinf(value)) {
    return ctx.rb.Error("ERR increment would produce NaN or Infinity");
  }
  std::string text = core::FormatLongDouble(value);
  if (Db::Found(it)) {
    it.value().SetString(text);  // the TTL stays, as in Redis
  } else {
    StoreString(ctx, args[1], text, false, 0);
  }
  ctx.shard.AddDirty();
  NotifyKeyspaceEvent(ctx, kNotifyString, "incrbyfloat", args[1]);
  ctx.rb.Bulk(text);
}

// --- Byte-level string commands.

void CmdAppend(ArgSlice args, ShardContext& ctx) {
  bool inserted;
  Db::Iterator it = ctx.db.FindOrInsert(args[1], ctx.hash, ctx.now_ms, &inserted);
  CompactValue& cell = it.value();
  if (inserted) {
    cell.SetString(args[2]);  // a new key, even for an empty string, as in Redis
  } else {
    if (!cell.IsString()) return ctx.rb.Error(kWrongTypeErr);
    if (int64_t(cell.StringSize() + args[2].size()) > ProtoMaxBulkLen()) {
      return ctx.rb.Error(kStringTooLongErr);
    }
    cell.Append(args[2]);
  }
  ctx.shard.AddDirty();  // even for an empty suffix, as in Redis
  NotifyKeyspaceEvent(ctx, kNotifyString, "append", args[1]);
  ctx.rb.Integer(int64_t(cell.StringSize()));
}

void CmdStrLen(ArgSlice args, ShardContext& ctx) {
  Db::Iterator it = LookupRead(ctx, args[1]);
  if (!Db::Found(it)) return ctx.rb.Integer(0);
  if (!it.value().IsString()) return ctx.rb.Error(kWrongTypeErr);
  ctx.rb.Integer(int64_t(it.value().StringSize()));
}

// GETRANGE key start end (and its old name SUBSTR): inclusive, negative indices count from the end.
void CmdGetRange(ArgSlice args, ShardContext& ctx) {
  int64_t start, end;
  if (!core::ParseInt64(args[2], &start) || !core::ParseInt64(args[3], &end)) {
    return ctx.rb.Error(kNotIntegerErr);
  }
  Db::Iterator it = LookupRead(ctx, args[1]);
  if (!Db::Found(it)) return ctx.rb.Bulk("");
  if (!it.value().IsString()) return ctx.rb.Error(kWrongTypeErr);
  char scratch[CompactValue::kScratchSize];
  const std::string_view str = it.value().GetString(scratch);
  const int64_t len = int64_t(str.size());
  if (start < 0 && end < 0 && start > end) return ctx.rb.Bulk("");
  if (start < 0) start += len;
  if (end < 0) end += len;
  if (start < 0) start = 0;
  if (end < 0) end = 0;
  if (end >= len) end = len - 1;
  if (start > end || len == 0) return ctx.rb.Bulk("");
  ctx.rb.Bulk(str.substr(size_t(start), size_t(end - start + 1)));
}

void CmdSetRange(ArgSlice args, ShardContext& ctx) {
  int64_t offset;
  if (!core::ParseInt64(args[2], &offset)) return ctx.rb.Error(kNotIntegerErr);
  if (offset < 0) return ctx.rb.Error("ERR offset is out of range");
  std::string_view value = args[3];
  // Redis' checkStringLength, overflow included.
  const int64_t max_len = ProtoMaxBulkLen();
  auto too_long = [&] { return offset > max_len || int64_t(value.size()) > max_len - offset; };
  Db::Iterator it = LookupWrite(ctx, args[1]);
  if (!Db::Found(it)) {
    if (value.empty()) return ctx.rb.Integer(0);
    if (too_long()) return ctx.rb.Error(kStringTooLongErr);
    bool inserted;
    it = ctx.db.FindOrInsert(args[1], ctx.hash, ctx.now_ms, &inserted);  // an empty string
  } else {
    if (!it.value().IsString()) return ctx.rb.Error(kWrongTypeErr);
    if (value.empty()) return ctx.rb.Integer(int64_t(it.value().StringSize()));
    if (too_long()) return ctx.rb.Error(kStringTooLongErr);
  }
  ctx.shard.AddDirty();
  const size_t length = it.value().SetRange(size_t(offset), value);
  NotifyKeyspaceEvent(ctx, kNotifyString, "setrange", args[1]);
  ctx.rb.Integer(int64_t(length));
}

// --- Multi-key commands: one transaction over all their keys (see shard/transaction.h), so that
// no client sees half of an MSET, even from another thread.

void CmdMGet(ArgSlice args, ConnContext& ctx) {
  const size_t n = args.size() - 1;
  shard::Transaction tx(ctx.conn.db, args.subspan(1), shard::Transaction::kRead);
  // Each shard fills the slots of its own keys only: no two threads write the same element.
  std::vector<std::string> values(n);
  std::vector<uint8_t> found(n, 0);
  tx.Run(
      [&](shard::TxShard& t) {
        for (uint32_t i : t.keys) {
          Db::Iterator it = LookupRead(t.shard, t.db, tx.key(i), tx.hash(i), t.now_ms);
          if (!Db::Found(it) || !it.value().IsString()) continue;  // nil for other types
          it.value().AppendTo(&values[i]);
          found[i] = 1;
        }
      },
      /*conclude=*/true);
  ctx.rb.ArrayHeader(n);
  for (size_t i = 0; i < n; ++i) {
    if (found[i]) {
      ctx.rb.Bulk(values[i]);
    } else {
      ctx.rb.Null();
    }
  }
}

// The keys of MSET-like commands: args[1], args[3], ...
std::vector<std::string_view> PairKeys(ArgSlice args) {
  std::vector<std::string_view> keys;
  keys.reserve(args.size() / 2);
  for (size_t i = 1; i < args.size(); i += 2) keys.push_back(args[i]);
  return keys;
}

void CmdMSet(ArgSlice args, ConnContext& ctx) {
  if (args.size() % 2 == 0) return ctx.rb.Error(WrongArgsError("mset"));
  std::vector<std::string_view> keys = PairKeys(args);
  shard::Transaction tx(ctx.conn.db, keys, shard::Transaction::kWrite);
  tx.Run(
      [&](shard::TxShard& t) {
        // In argument order: with a key given twice, the last value wins.
        for (uint32_t i : t.keys) {
          bool inserted;
          Db::Iterator it = t.db.FindOrInsert(tx.key(i), tx.hash(i), t.now_ms, &inserted);
          t.db.ReleaseOldValue(it);
          it.value().SetString(args[2 * i + 2]);
          t.db.SetExpire(it, tx.key(i), tx.hash(i), 0);  // MSET clears the TTL, as SET does
          t.db.NoteModified(tx.key(i));
          shard::NotifyKeyspaceEvent(kNotifyString, "set", tx.key(i), t.db.index());
        }
        t.shard.AddDirty(t.keys.size());  // one per key given, repeated keys too, as in Redis
      },
      /*conclude=*/true);
  ctx.rb.Ok();
}

// MSETNX: a read phase checks that no key exists anywhere, then a write phase sets them all;
// the transaction holds every key in between, so the check still holds when the writes happen.
void CmdMSetNx(ArgSlice args, ConnContext& ctx) {
  if (args.size() % 2 == 0) return ctx.rb.Error(WrongArgsError("msetnx"));
  std::vector<std::string_view> keys = PairKeys(args);
  shard::Transaction tx(ctx.conn.db, keys, shard::Transaction::kWrite);
  std::vector<uint8_t> any_exists(shard::shard_set->size(), 0);
  tx.Run([&](shard::TxShard& t) {
    for (uint32_t i : t.keys) {
      if (Db::Found(t.db.Find(tx.key(i), tx.hash(i), t.now_ms))) any_exists[t.shard.id()] = 1;
    }
  });
  for (uint8_t e : any_exists) {
    if (e) {
      tx.Conclude();
      return ctx.rb.Integer(0);
    }
  }
  tx.Run(
      [&](shard::TxShard& t) {
        for (uint32_t i : t.keys) {
          bool inserted;
          Db::Iterator it = t.db.FindOrInsert(tx.key(i), tx.hash(i), t.now_ms, &inserted);
          it.value().SetString(args[2 * i + 2]);
          t.db.NoteModified(tx.key(i));
          shard::NotifyKeyspaceEvent(kNotifyString, "set", tx.key(i), t.db.index());
        }
        t.shard.AddDirty(t.keys.size());
      },
      /*conclude=*/true);
  ctx.rb.Integer(1);
}

// LCS key1 key2 [LEN] [IDX] [MINMATCHLEN len] [WITHMATCHLEN]: the longest common subsequence
// of two strings (Redis' dynamic-programming table, walked back from the end so that the ranges
// come out last-first, as Redis emits them). Both keys are read in one transaction; the table is
// built here, on the connection's thread.
void CmdLcs(ArgSlice args, ConnContext& ctx) {
  shard::Transaction tx(ctx.conn.db, args.subspan(1, 2), shard::Transaction::kRead);
  std::string ab[2];
  uint8_t wrong_type[2] = {0, 0};
  tx.Run(
      [&](shard::TxShard& t) {
        for (uint32_t i : t.keys) {
          Db::Iterator it = LookupRead(t.shard, t.db, tx.key(i), tx.hash(i), t.now_ms);
          if (!Db::Found(it)) continue;
          if (!it.value().IsString()) {
            wrong_type[i] = 1;
          } else {
            it.value().AppendTo(&ab[i]);
          }
        }
      },
      /*conclude=*/true);
  if (wrong_type[0] || wrong_type[1]) {
    return ctx.rb.Error("ERR The specified keys must contain string values");
  }
  bool get_len = false, get_idx = false, with_match_len = false;
  int64_t min_match_len = 0;
  ArgParser p(args, 3);
  while (p.HasNext()) {
    if (p.Check("IDX")) {
      get_idx = true;
    } else if (p.Check("LEN")) {
      get_len = true;
    } else if (p.Check("WITHMATCHLEN")) {
      with_match_len = true;
    } else if (p.Check("MINMATCHLEN", 1)) {
      min_match_len = std::max<int64_t>(p.Next<int64_t>(), 0);
    } else {
      p.Fail(kSyntaxErr);
    }
  }
  if (p.ReplyError(ctx.rb)) return;
  if (get_idx && get_len) {
    return ctx.rb.Error("ERR If you want both the length and indexes, please just use IDX.");
  }
  const std::string& a = ab[0];
  const std::string& b = ab[1];
  if (a.size() >= UINT32_MAX - 1 || b.size() >= UINT32_MAX - 1) {
    return ctx.rb.Error("ERR String too long for LCS");
  }
  const uint64_t alen = a.size(), blen = b.size();
  const uint64_t cells = (alen + 1) * (blen + 1);
  if (cells * sizeof(uint32_t) > uint64_t(ProtoMaxBulkLen())) {
    return ctx.rb.Error(
        "ERR Insufficient memory, transient memory for LCS exceeds proto-max-bulk-len");
  }
  std::vector<uint32_t> table(cells, 0);
  auto at = [&](uint64_t i, uint64_t j) -> uint32_t& { return table[j + i * (blen + 1)]; };
  for (uint64_t i = 1; i <= alen; ++i) {
    for (uint64_t j = 1; j <= blen; ++j) {
      at(i, j) = a[i - 1] == b[j - 1] ? at(i - 1, j - 1) + 1 : std::max(at(i - 1, j), at(i, j - 1));
    }
  }
  const uint32_t total = at(alen, blen);
  if (get_len) return ctx.rb.Integer(total);

  struct Match {
    uint32_t a_start, a_end, b_start, b_end;
  };
  std::vector<Match> matches;
  std::string result(total, '\0');
  uint32_t idx = total;
  // a_start == alen means "no range open".
  uint32_t a_start = uint32_t(alen), a_end = 0, b_start = 0, b_end = 0;
  uint64_t i = alen, j = blen;
  while (i > 0 && j > 0) {
    bool emit = false;
    if (a[i - 1] == b[j - 1]) {
      result[idx - 1] = a[i - 1];
      if (a_start == alen) {
        a_start = a_end = uint32_t(i - 1);
        b_start = b_end = uint32_t(j - 1);
      } else if (a_start == i && b_start == j) {
        --a_start;  // the range grows backwards
        --b_start;
      } else {
        emit = true;
      }
      if (a_start == 0 || b_start == 0) emit = true;
      --idx;
      --i;
      --j;
    } else {
      if (at(i - 1, j) > at(i, j - 1)) {
        --i;
      } else {
        --j;
      }
      if (a_start != alen) emit = true;
    }
    if (emit) {
      const uint32_t len = a_end - a_start + 1;
      if (min_match_len == 0 || len >= uint64_t(min_match_len)) {
        matches.push_back({a_start, a_end, b_start, b_end});
      }
      a_start = uint32_t(alen);
    }
  }
  if (!get_idx) return ctx.rb.Bulk(result);
  ctx.rb.MapHeader(2);
  ctx.rb.Bulk("matches");
  ctx.rb.ArrayHeader(matches.size());
  for (const Match& m : matches) {
    ctx.rb.ArrayHeader(with_match_len ? 3 : 2);
    ctx.rb.ArrayHeader(2);
    ctx.rb.Integer(m.a_start);
    ctx.rb.Integer(m.a_end);
    ctx.rb.ArrayHeader(2);
    ctx.rb.Integer(m.b_start);
    ctx.rb.Integer(m.b_end);
    if (with_match_len) ctx.rb.Integer(m.a_end - m.a_start + 1);
  }
  ctx.rb.Bulk("len");
  ctx.rb.Integer(total);
}

}  // namespace

void RegisterStringFamily(CommandRegistry* r) {
  constexpr uint32_t kW = kWrite, kR = kReadOnly, kD = kDenyOom, kF = kFast;
  r->Register({.name = "get", .arity = 2, .flags = kR | kF, .keys = kOneKey,
               .acl_categories = "read string fast", .on_shard = CmdGet,
               .docs = {.group = "string", .since = "1.0.0", .complexity = "O(1)",
                        .summary = "Returns the string value of a key.",
                        .key_flags = "RO access"}});
  r->Register({.name = "set", .arity = -3, .flags = kW | kD, .keys = kOneKey,
               .acl_categories = "write string slow", .on_shard = CmdSet,
               .journal_rewrite = JournalSet,
               .docs = {.group = "string", .since = "1.0.0", .complexity = "O(1)",
                        .summary = "Sets the string value of a key, optionally with an expiry, a "
                                   "condition or the old value.",
                        .key_flags = "RW access update variable_flags"}});
  r->Register({.name = "setnx", .arity = 3, .flags = kW | kD | kF, .keys = kOneKey,
               .acl_categories = "write string fast", .on_shard = CmdSetNx,
               .docs = {.group = "string", .since = "1.0.0", .complexity = "O(1)",
                        .summary = "Sets a key only when it does not exist.",
                        .key_flags = "OW insert"}});
  r->Register({.name = "setex", .arity = 4, .flags = kW | kD, .keys = kOneKey,
               .acl_categories = "write string slow", .on_shard = CmdSetEx<false>,
               .journal_rewrite = JournalSetEx,
               .docs = {.group = "string", .since = "2.0.0", .complexity = "O(1)",
                        .summary = "Sets a key with an expiry in seconds.",
                        .key_flags = "OW update"}});
  r->Register({.name = "psetex", .arity = 4, .flags = kW | kD, .keys = kOneKey,
               .acl_categories = "write string slow", .on_shard = CmdSetEx<true>,
               .journal_rewrite = JournalSetEx,
               .docs = {.group = "string", .since = "2.6.0", .complexity = "O(1)",
                        .summary = "Sets a key with an expiry in milliseconds.",
                        .key_flags = "OW update"}});
  r->Register({.name = "getset", .arity = 3, .flags = kW | kD | kF, .keys = kOneKey,
               .acl_categories = "write string fast", .on_shard = CmdGetSet,
               .docs = {.group = "string", .since = "1.0.0", .complexity = "O(1)",
                        .summary = "Sets a key and returns its previous value.",
                        .key_flags = "RW access update"}});
  r->Register({.name = "getdel", .arity = 2, .flags = kW | kF, .keys = kOneKey,
               .acl_categories = "write string fast", .on_shard = CmdGetDel,
               .docs = {.group = "string", .since = "6.2.0", .complexity = "O(1)",
                        .summary = "Returns the value of a key and deletes it.",
                        .key_flags = "RW access delete"}});
  r->Register({.name = "getex", .arity = -2, .flags = kW | kF, .keys = kOneKey,
               .acl_categories = "write string fast", .on_shard = CmdGetEx,
               .journal_rewrite = JournalGetEx,
               .docs = {.group = "string", .since = "6.2.0", .complexity = "O(1)",
                        .summary = "Returns the value of a key and changes its expiry.",
                        .key_flags = "RW access update"}});
  r->Register({.name = "incr", .arity = 2, .flags = kW | kD | kF, .keys = kOneKey,
               .acl_categories = "write string fast", .on_shard = CmdIncr,
               .docs = {.group = "string", .since = "1.0.0", .complexity = "O(1)",
                        .summary = "Adds one to the integer value of a key.",
                        .key_flags = "RW access update"}});
  r->Register({.name = "decr", .arity = 2, .flags = kW | kD | kF, .keys = kOneKey,
               .acl_categories = "write string fast", .on_shard = CmdDecr,
               .docs = {.group = "string", .since = "1.0.0", .complexity = "O(1)",
                        .summary = "Subtracts one from the integer value of a key.",
                        .key_flags = "RW access update"}});
  r->Register({.name = "incrby", .arity = 3, .flags = kW | kD | kF, .keys = kOneKey,
               .acl_categories = "write string fast", .on_shard = CmdIncrBy,
               .docs = {.group = "string", .since = "1.0.0", .complexity = "O(1)",
                        .summary = "Adds an integer to the integer value of a key.",
                        .key_flags = "RW access update"}});
  r->Register({.name = "decrby", .arity = 3, .flags = kW | kD | kF, .keys = kOneKey,
               .acl_categories = "write string fast", .on_shard = CmdDecrBy,
               .docs = {.group = "string", .since = "1.0.0", .complexity = "O(1)",
                        .summary = "Subtracts an integer from the integer value of a key.",
                        .key_flags = "RW access update"}});
  r->Register({.name = "incrbyfloat", .arity = 3, .flags = kW | kD | kF, .keys = kOneKey,
               .acl_categories = "write string fast", .on_shard = CmdIncrByFloat,
               .docs = {.group = "string", .since = "2.6.0", .complexity = "O(1)",
                        .summary = "Adds a float to the numeric value of a key.",
                        .key_flags = "RW access update"}});
  r->Register({.name = "append", .arity = 3, .flags = kW | kD | kF, .keys = kOneKey,
               .acl_categories = "write string fast", .on_shard = CmdAppend,
               .docs = {.group = "string", .since = "2.0.0",
                        .complexity = "O(1). The amortized time complexity is O(1) assuming the "
                                      "appended value is small and the already present value is of "
                                      "any size, since the dynamic string library used by Redis "
                                      "will double the free space available on every reallocation.",
                        .summary = "Appends a string to the value of a key.",
                        .key_flags = "RW insert"}});
  r->Register({.name = "strlen", .arity = 2, .flags = kR | kF, .keys = kOneKey,
               .acl_categories = "read string fast", .on_shard = CmdStrLen,
               .docs = {.group = "string", .since = "2.2.0", .complexity = "O(1)",
                        .summary = "Returns the length of a string value.", .key_flags = "RO"}});
  r->Register({.name = "getrange", .arity = 4, .flags = kR, .keys = kOneKey,
               .acl_categories = "read string slow", .on_shard = CmdGetRange,
               .docs = {.group = "string", .since = "2.4.0",
                        .complexity = "O(N) where N is the length of the returned string. The "
                                      "complexity is ultimately determined by the returned length, "
                                      "but because creating a substring from an existing string is "
                                      "very cheap, it can be considered O(1) for small strings.",
                        .summary = "Returns a substring of a string value.",
                        .key_flags = "RO access"}});
  r->Register({.name = "substr", .arity = 4, .flags = kR, .keys = kOneKey,
               .acl_categories = "read string slow", .on_shard = CmdGetRange,
               .docs = {.group = "string", .since = "1.0.0",
                        .complexity = "O(N) where N is the length of the returned string. The "
                                      "complexity is ultimately determined by the returned length, "
                                      "but because creating a substring from an existing string is "
                                      "very cheap, it can be considered O(1) for small strings.",
                        .summary = "Returns a substring of a string value (old name of GETRANGE).",
                        .key_flags = "RO access"}});
  r->Register({.name = "setrange", .arity = 4, .flags = kW | kD, .keys = kOneKey,
               .acl_categories = "write string slow", .on_shard = CmdSetRange,
               .docs = {.group = "string", .since = "2.2.0",
                        .complexity = "O(1), not counting the time taken to copy the new string in "
                                      "place. Usually, this string is very small so the amortized "
                                      "complexity is O(1). Otherwise, complexity is O(M) with M "
                                      "being the length of the value argument.",
                        .summary = "Overwrites part of a string value from an offset.",
                        .key_flags = "RW update"}});

  r->Register({.name = "mget", .arity = -2, .flags = kR | kF, .keys = kAllKeys,
               .acl_categories = "read string fast", .on_conn = CmdMGet,
               .docs = {.group = "string", .since = "1.0.0",
                        .complexity = "O(N) where N is the number of keys to retrieve.",
                        .summary = "Returns the values of several keys.", .key_flags = "RO access",
                        .tips = "request_policy:multi_shard"}});
  r->Register({.name = "mset", .arity = -3, .flags = kW | kD,
               .keys = {.first = 1, .last = -1, .step = 2}, .acl_categories = "write string slow",
               .on_conn = CmdMSet,
               .docs = {.group = "string", .since = "1.0.1",
                        .complexity = "O(N) where N is the number of keys to set.",
                        .summary = "Sets several keys at once.", .key_flags = "OW update",
                        .tips = "request_policy:multi_shard response_policy:all_succeeded"}});
  r->Register({.name = "lcs", .arity = -3, .flags = kR, .keys = kTwoKeys,
               .acl_categories = "read string slow", .on_conn = CmdLcs,
               .docs = {.group = "string", .since = "7.0.0",
                        .complexity = "O(N*M) where N and M are the lengths of s1 and s2, "
                                      "respectively",
                        .summary = "Returns the longest common subsequence of two strings, or its "
                                   "length or matches.", .key_flags = "RO access"}});
  r->Register({.name = "msetnx", .arity = -3, .flags = kW | kD,
               .keys = {.first = 1, .last = -1, .step = 2}, .acl_categories = "write string slow",
               .on_conn = CmdMSetNx,
               .docs = {.group = "string", .since = "1.0.1",
                        .complexity = "O(N) where N is the number of keys to set.",
                        .summary = "Sets several keys at once only when none of them exists.",
                        .key_flags = "OW insert",
                        .tips = "request_policy:multi_shard response_policy:agg_min"}});
}

}  // namespace shardis::server
