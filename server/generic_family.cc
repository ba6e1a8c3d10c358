// Keyspace commands: DEL, UNLINK, EXISTS, TOUCH, the EXPIRE family, TTL, PERSIST, TYPE, KEYS,
// SCAN, RANDOMKEY, OBJECT, DUMP, RESTORE.
//
// Commands over many keys run as one transaction (shard/transaction.h): every shard involved
// counts its part in parallel, atomically with respect to other commands; the connection sums.
#include <absl/random/random.h>
#include <absl/strings/match.h>
#include <glog/logging.h>

#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/access_clock.h"
#include "core/glob.h"
#include "core/number.h"
#include "core/rdb_dump.h"
#include "core/string_util.h"
#include "server/arg_parser.h"
#include "server/collection_args.h"
#include "server/command.h"
#include "server/connection_state.h"
#include "core/value_object.h"
#include "server/key_lookup.h"
#include "server/persistence_config.h"
#include "server/subcommand.h"
#include "shard/access_clock.h"
#include "shard/lazy_free.h"
#include "shard/shard_set.h"
#include "shard/transaction.h"

namespace shardis::server {

namespace {

using shard::Db;

// Runs `fn(shard, db, key, hash, now)` for every key in args[1..] on the key's shard, as one
// transaction, and returns how many calls returned true. Each shard writes only its own counter.
template <typename Fn>
int64_t CountOverKeys(ArgSlice args, ConnContext& ctx, shard::Transaction::Mode mode, Fn&& fn) {
  shard::Transaction tx(ctx.conn.db, args.subspan(1), mode);
  std::vector<int64_t> counts(shard::shard_set->size(), 0);
  tx.Run(
      [&](shard::TxShard& t) {
        int64_t n = 0;
        for (uint32_t i : t.keys) n += fn(t.shard, t.db, tx.key(i), tx.hash(i), t.now_ms) ? 1 : 0;
        counts[t.shard.id()] = n;
      },
      /*conclude=*/true);
  int64_t total = 0;
  for (int64_t c : counts) total += c;
  return total;
}

// DEL and UNLINK: the same but for when the values are freed. UNLINK hands those costly to free
// to their shard's lazy-free queue (shard/lazy_free.h), and so does DEL under
// lazyfree-lazy-user-del, as in Redis.
void DeleteKeys(ArgSlice args, ConnContext& ctx, bool lazy) {
  ctx.rb.Integer(CountOverKeys(args, ctx, shard::Transaction::kWrite,
                               [lazy](shard::Shard& shard, Db& db, std::string_view key,
                                      uint64_t hash, int64_t now) {
                                 if (!db.Erase(key, hash, now, lazy)) return false;
                                 db.NoteModified(key);
                                 shard.AddDirty();
                                 shard::NotifyKeyspaceEvent(kNotifyGeneric, "del", key,
                                                            db.index());
                                 return true;
                               }));
}
void CmdDel(ArgSlice args, ConnContext& ctx) {
  DeleteKeys(args, ctx, shard::LazyFreeOn(shard::LazyFreePath::kUserDel));
}
void CmdUnlink(ArgSlice args, ConnContext& ctx) { DeleteKeys(args, ctx, /*lazy=*/true); }

// EXISTS and TOUCH: a key given twice counts twice. EXISTS leaves the access clocks alone (as
// Redis 7.2); TOUCH sets them even for a CLIENT NO-TOUCH client.
void CmdExists(ArgSlice args, ConnContext& ctx) {
  ctx.rb.Integer(
      CountOverKeys(args, ctx, shard::Transaction::kRead,
                    [](shard::Shard& s, Db& db, std::string_view key, uint64_t hash, int64_t now) {
                      return Db::Found(LookupRead(s, db, key, hash, now, kNoTouch));
                    }));
}
void CmdTouch(ArgSlice args, ConnContext& ctx) {
  ctx.rb.Integer(
      CountOverKeys(args, ctx, shard::Transaction::kRead,
                    [](shard::Shard& s, Db& db, std::string_view key, uint64_t hash, int64_t now) {
                      Db::Iterator it = LookupRead(s, db, key, hash, now, kNoTouch);
                      if (!Db::Found(it)) return false;
                      db.SetAccessClock(it, shard::TouchedAccessClock(db.AccessClock(it), now));
                      return true;
                    }));
}

// --- EXPIRE, PEXPIRE, EXPIREAT, PEXPIREAT key time [NX | XX | GT | LT]

enum ExpireFlag : unsigned { kNx = 1, kXx = 2, kGt = 4, kLt = 8 };

template <bool kMillis, bool kAbsolute>
void CmdExpire(ArgSlice args, ShardContext& ctx) {
  constexpr std::string_view kName =
      kMillis ? (kAbsolute ? "pexpireat" : "pexpire") : (kAbsolute ? "expireat" : "expire");
  unsigned flags = 0;
  ArgParser p(args, 3);
  while (p.HasNext()) {
    if (p.Check("NX")) {
      flags |= kNx;
    } else if (p.Check("XX")) {
      flags |= kXx;
    } else if (p.Check("GT")) {
      flags |= kGt;
    } else if (p.Check("LT")) {
      flags |= kLt;
    } else {
      p.Fail(core::Concat("ERR Unsupported option ", p.Peek()));
    }
  }
  if (p.ReplyError(ctx.rb)) return;
  if ((flags & kNx) && (flags & (kXx | kGt | kLt))) {
    return ctx.rb.Error("ERR NX and XX, GT or LT options at the same time are not compatible");
  }
  if ((flags & kGt) && (flags & kLt)) {
    return ctx.rb.Error("ERR GT and LT options at the same time are not compatible");
  }

  int64_t when;
  if (!core::ParseInt64(args[2], &when)) return ctx.rb.Error(kNotIntegerErr);
  auto invalid = [&] {
    ctx.rb.Error(core::Concat("ERR invalid expire time in '", kName, "' command"));
  };
  // Negative times are allowed (they delete the key); only overflow is an error.
  if (!kMillis) {
    constexpr int64_t kMax = std::numeric_limits<int64_t>::max() / 1000;
    constexpr int64_t kMin = std::numeric_limits<int64_t>::min() / 1000;
    if (when > kMax || when < kMin) return invalid();
    when *= 1000;
  }
  const int64_t base = kAbsolute ? 0 : ctx.now_ms;
  if (when > std::numeric_limits<int64_t>::max() - base) return invalid();
  when += base;

  Db::Iterator it = ctx.db.Find(args[1], ctx.hash, ctx.now_ms);
  if (!Db::Found(it)) return ctx.rb.Integer(0);
  // A key without expiry has an infinite TTL: GT never beats it, LT always does.
  const int64_t current = ctx.db.ExpireAt(it, args[1], ctx.hash);
  if (((flags & kNx) && current != 0) || ((flags & kXx) && current == 0) ||
      ((flags & kGt) && (current == 0 || when <= current)) ||
      ((flags & kLt) && current != 0 && when >= current)) {
    ctx.unchanged = true;
    return ctx.rb.Integer(0);
  }

  if (when <= ctx.now_ms) {
    // A deadline already passed deletes the key (lazily under lazyfree-lazy-expire, as Redis 7.2).
    ctx.db.Erase(it, args[1], ctx.hash, shard::LazyFreeOn(shard::LazyFreePath::kExpire));
    NotifyKeyspaceEvent(ctx, kNotifyGeneric, "del", args[1]);
  } else {
    ctx.db.SetExpire(it, args[1], ctx.hash, when);
    NotifyKeyspaceEvent(ctx, kNotifyGeneric, "expire", args[1]);
  }
  ctx.shard.AddDirty();
  ctx.rb.Integer(1);
}

// TTL, PTTL (remaining time) and EXPIRETIME, PEXPIRETIME (absolute deadline):
// -2 for a missing key, -1 for a key without expiry. As in Redis, asking leaves the key's access
// clock (OBJECT IDLETIME, LRU/LFU eviction) as it was.
template <bool kMillis, bool kAbsolute>
void CmdTtl(ArgSlice args, ShardContext& ctx) {
  Db::Iterator it = LookupRead(ctx.shard, ctx.db, args[1], ctx.hash, ctx.now_ms, kNoTouch);
  if (!Db::Found(it)) return ctx.rb.Integer(-2);
  const int64_t at_ms = ctx.db.ExpireAt(it, args[1], ctx.hash);
  if (at_ms == 0) return ctx.rb.Integer(-1);
  int64_t ttl = kAbsolute ? at_ms : at_ms - ctx.now_ms;
  if (ttl < 0) ttl = 0;
  ctx.rb.Integer(kMillis ? ttl : (ttl + 500) / 1000);
}

void CmdPersist(ArgSlice args, ShardContext& ctx) {
  Db::Iterator it = ctx.db.Find(args[1], ctx.hash, ctx.now_ms);
  if (!Db::Found(it) || ctx.db.ExpireAt(it, args[1], ctx.hash) == 0) {
    ctx.unchanged = true;
    return ctx.rb.Integer(0);
  }
  ctx.db.SetExpire(it, args[1], ctx.hash, 0);
  ctx.shard.AddDirty();
  NotifyKeyspaceEvent(ctx, kNotifyGeneric, "persist", args[1]);
  ctx.rb.Integer(1);
}

// TYPE's names, as Redis spells them.
std::string_view TypeName(core::ValueType type) {
  switch (type) {
    case core::ValueType::kString:
      return "string";
    case core::ValueType::kList:
      return "list";
    case core::ValueType::kHash:
      return "hash";
    case core::ValueType::kSet:
      return "set";
    case core::ValueType::kZSet:
      return "zset";
    case core::ValueType::kStream:
      return "stream";
  }
  return "none";
}

void CmdType(ArgSlice args, ShardContext& ctx) {
  Db::Iterator it = LookupRead(ctx.shard, ctx.db, args[1], ctx.hash, ctx.now_ms, kNoTouch);
  if (!Db::Found(it)) return ctx.rb.SimpleString("none");
  ctx.rb.SimpleString(TypeName(it.value().type()));
}

// KEYS pattern: every shard matches its own keys in parallel; the order is unspecified, as in
// Redis.
void CmdKeys(ArgSlice args, ConnContext& ctx) {
  std::string_view pattern = args[1];
  const bool all = pattern == "*";  // "*" also matches the empty key, unlike the glob itself
  std::vector<std::vector<std::string>> found(shard::shard_set->size());
  shard::Transaction tx(ctx.conn.db, shard::Transaction::AllShards{}, shard::Transaction::kRead);
  tx.Run(
      [&](shard::TxShard& t) {
        std::vector<std::string>& out = found[t.shard.id()];
        t.db.ForEachLive(t.now_ms, [&](std::string_view key, Db::Iterator) {
          if (all || core::GlobMatch(pattern, key)) out.emplace_back(key);
        });
      },
      /*conclude=*/true);
  size_t total = 0;
  for (const auto& v : found) total += v.size();
  ctx.rb.ArrayHeader(total);
  for (const auto& v : found) {
    for (const std::string& key : v) ctx.rb.Bulk(key);
  }
}

// SCAN cursor [MATCH pattern] [COUNT count] [TYPE type]
//
// The cursor walks the shards one after the other: its bits 30 and up are the shard, the bits
// below are that shard's table cursor (DashTable cursors stay below 2^kCursorBits). Each call hops
// to one shard, or to the next ones while it has fewer than COUNT keys, so a key present for the
// whole scan is returned at least once, as in Redis.
constexpr unsigned kScanShardShift = shard::PrimeTable::kCursorBits;

void CmdScan(ArgSlice args, ConnContext& ctx) {
  uint64_t cursor;
  if (!core::ParseScanCursor(args[1], &cursor)) return ctx.rb.Error(kInvalidCursorErr);
  ScanOptions opts;
  if (!ParseScanOptions(args, 2, ScanTarget::kKeyspace, ctx.rb, &opts)) return;
  const unsigned nshards = shard::shard_set->size();
  uint64_t sid = cursor >> kScanShardShift;
  uint64_t table_cursor = cursor & ((uint64_t{1} << kScanShardShift) - 1);
  std::vector<std::string> keys;
  const int db_index = ctx.conn.db;
  while (sid < nshards && keys.size() < opts.count) {
    shard::shard_set->Await(unsigned(sid), [&](shard::Shard& s) {
      table_cursor = s.db(db_index).Scan(
          table_cursor, opts.count - keys.size(), shard::NowMs(),
          [&](std::string_view key, Db::Iterator it) {
            if (opts.use_type && !core::EqualsIgnoreCase(opts.type, TypeName(it.value().type()))) {
              return;
            }
            if (!opts.Matches(key)) return;
            keys.emplace_back(key);
          });
    });
    if (table_cursor == 0) ++sid;  // this shard is done: the next one starts at its beginning
  }
  const uint64_t next = sid >= nshards ? 0 : (sid << kScanShardShift) | table_cursor;
  ctx.rb.ArrayHeader(2);
  ctx.rb.Bulk(core::Concat(next));
  ctx.rb.ArrayHeader(keys.size());
  for (const std::string& key : keys) ctx.rb.Bulk(key);
}

// RANDOMKEY: starts at a random shard and takes the first that has a live key.
void CmdRandomKey(ArgSlice, ConnContext& ctx) {
  thread_local absl::BitGen rng;
  const unsigned nshards = shard::shard_set->size();
  const unsigned first = absl::Uniform(rng, 0u, nshards);
  const int db_index = ctx.conn.db;
  for (unsigned i = 0; i < nshards; ++i) {
    std::optional<std::string> key;
    const uint64_t bits = absl::Uniform<uint64_t>(rng);
    shard::shard_set->Await((first + i) % nshards, [&](shard::Shard& s) {
      key = s.db(db_index).RandomKey(bits, shard::NowMs());
    });
    if (key) return ctx.rb.Bulk(*key);
  }
  ctx.rb.Null();
}

// --- DUMP key, and RESTORE key ttl serialized-value [REPLACE] [ABSTTL] [IDLETIME seconds]
// [FREQ frequency]: Redis' payload (core/rdb_dump.h). Both run on the key's shard, so RESTORE
// builds the value on the heap of the shard that keeps it.

void CmdDump(ArgSlice args, ShardContext& ctx) {
  Db::Iterator it = LookupRead(ctx, args[1]);
  if (!Db::Found(it)) return ctx.rb.Null();
  // As Redis: rdbcompression decides whether long strings in the payload are LZF-compressed.
  ctx.rb.Bulk(core::CreateDumpPayload(it.value(), RdbCompression()));
}

// The journal's form of EXPIRE and its kin (Redis propagates PEXPIREAT with the absolute time,
// or DEL when a deadline in the past deleted the key).
bool JournalExpire(ArgSlice args, ShardContext& ctx, std::vector<std::string>* form) {
  return PexpireatForm(args[1], ctx, form);
}

// RESTORE with a relative TTL: the absolute deadline it set, with ABSTTL (as Redis propagates).
bool JournalRestore(ArgSlice args, ShardContext& ctx, std::vector<std::string>* form) {
  bool absttl = false;
  for (size_t i = 4; i < args.size(); ++i) absttl |= core::EqualsIgnoreCase(args[i], "absttl");
  if (absttl || args[2] == "0") return false;
  const int64_t at = KeyDeadlineAfterWrite(args[1], ctx);
  if (at < 0) {
    *form = {"DEL", std::string(args[1])};
    return true;
  }
  form->assign(args.begin(), args.end());
  (*form)[2] = std::to_string(at);
  form->push_back("ABSTTL");
  return true;
}

// Redis 7.0's restoreCommand, checks in its order: options, BUSYKEY, TTL, payload.
void CmdRestore(ArgSlice args, ShardContext& ctx) {
  bool replace = false, absttl = false, idletime = false, freq = false;
  int64_t idle_seconds = -1, frequency = -1;
  ArgParser p(args, 4);
  while (p.HasNext()) {
    if (p.Check("REPLACE")) {
      replace = true;
    } else if (p.Check("ABSTTL")) {
      absttl = true;
    } else if (!freq && p.Check("IDLETIME", 1)) {  // IDLETIME and FREQ exclude each other
      idletime = true;
      idle_seconds = p.Next<int64_t>();
      if (idle_seconds < 0) p.Fail("ERR Invalid IDLETIME value, must be >= 0");
    } else if (!idletime && p.Check("FREQ", 1)) {
      freq = true;
      frequency = p.Next<int64_t>();
      if (frequency < 0 || frequency > 255) {
        p.Fail("ERR Invalid FREQ value, must be >= 0 and <= 255");
      }
    } else {
      p.Fail(kSyntaxErr);
    }
  }
  if (p.ReplyError(ctx.rb)) return;

  Db::Iterator it = ctx.db.Find(args[1], ctx.hash, ctx.now_ms);
  if (!replace && Db::Found(it)) return ctx.rb.Error("BUSYKEY Target key name already exists.");
  int64_t ttl;
  if (!core::ParseInt64(args[2], &ttl)) return ctx.rb.Error(kNotIntegerErr);
  if (ttl < 0) return ctx.rb.Error("ERR Invalid TTL value, must be >= 0");

  core::CompactValue value;
  if (absl::Status s = core::DecodeDumpPayload(args[3], &value); !s.ok()) {
    VLOG(1) << "RESTORE refused a payload: " << s.message();
    return ctx.rb.Error(absl::StartsWith(s.message(), "Bad data format")
                            ? "ERR Bad data format"
                            : "ERR DUMP payload version or checksum are wrong");
  }

  // A relative TTL that overflows wraps negative in Redis (long long arithmetic), so the key is
  // taken as expired; the same here without the undefined behaviour.
  if (ttl != 0 && !absttl && __builtin_add_overflow(ttl, ctx.now_ms, &ttl)) ttl = -1;
  if (ttl != 0 && ttl <= ctx.now_ms) {
    // A deadline already passed: the key is not created, but REPLACE still deletes the old one
    // (RunWatchedWrite sees it gone and signals its watchers).
    if (Db::Found(it)) {
      ctx.db.Erase(it, args[1], ctx.hash, shard::LazyFreeOn(shard::LazyFreePath::kServerDel));
      ctx.shard.AddDirty();
      NotifyKeyspaceEvent(ctx, kNotifyGeneric, "del", args[1]);
    }
    return ctx.rb.Ok();
  }
  Db::Iterator stored = ctx.db.Store(args[1], ctx.hash, std::move(value), ttl, ctx.now_ms);
  uint32_t clock;
  if (shard::RestoredAccessClock(frequency, idle_seconds, ctx.now_ms, &clock)) {
    ctx.db.SetAccessClock(stored, clock);
  }
  ctx.shard.AddDirty();
  NotifyKeyspaceEvent(ctx, kNotifyGeneric, "restore", args[1]);
  ctx.rb.Ok();
}

// --- OBJECT ENCODING | REFCOUNT | IDLETIME | FREQ | HELP <key>.

enum class ObjectQuery { kEncoding, kRefCount, kIdleTime, kFreq };

// Looks the key (args[2]) up on its shard, without counting a keyspace hit or miss, and replies
// nil when it is missing.
template <ObjectQuery kQuery>
void ObjectSub(ArgSlice args, ConnContext& ctx) {
  std::string_view encoding;
  int64_t refcount = 1;
  uint32_t clock = 0;
  int64_t now_ms = 0;
  const bool found = InspectSubKey(args, ctx, [&](const Db::Iterator& it) {
    clock = it.access_clock();
    now_ms = shard::NowMs();
    const core::CompactValue& v = it.value();
    encoding = core::EncodingName(v);  // a literal: outlives the phase
    refcount = core::ObjectRefCount(v);
  });
  if (!found) return ctx.rb.Null();
  switch (kQuery) {
    case ObjectQuery::kEncoding:
      return ctx.rb.Bulk(encoding);
    case ObjectQuery::kRefCount:
      return ctx.rb.Integer(refcount);
    case ObjectQuery::kIdleTime:
      if (shard::IsLfuPolicy(shard::MemoryLimit::policy())) {
        return ctx.rb.Error(
            "ERR An LFU maxmemory policy is selected, idle time not tracked. Please note that "
            "when switching between policies at runtime LRU and LFU data will take some time to "
            "adjust.");
      }
      return ctx.rb.Integer(core::LruIdleMs(clock, now_ms) / 1000);
    case ObjectQuery::kFreq:
      if (!shard::IsLfuPolicy(shard::MemoryLimit::policy())) {
        return ctx.rb.Error(
            "ERR An LFU maxmemory policy is not selected, access frequency not tracked. Please "
            "note that when switching between policies at runtime LRU and LFU data will take "
            "some time to adjust.");
      }
      return ctx.rb.Integer(
          core::LfuDecayedCounter(clock, now_ms, shard::MemoryLimit::lfu_decay_time()));
  }
}

void ObjectHelp(ArgSlice, ConnContext& ctx) {
  ReplyHelp(ctx.rb, "OBJECT",
            {"ENCODING <key>",
             "    Return the kind of internal representation used in order to store the value",
             "    associated with a <key>.",
             "FREQ <key>",
             "    Return the access frequency index of the <key>. The returned integer is",
             "    proportional to the logarithm of the recent access frequency of the key.",
             "IDLETIME <key>",
             "    Return the idle time of the <key>, that is the approximated number of",
             "    seconds elapsed since the last access to the key.",
             "REFCOUNT <key>",
             "    Return the number of references of the value associated with the specified",
             "    <key>."});
}

constexpr std::string_view kObjectAcl = "keyspace read slow";

constexpr SubCommand kObjectSubs[] = {
    {.name = "encoding", .arity = 3, .flags = kReadOnly, .keys = kSubKey,
     .acl_categories = kObjectAcl, .handler = ObjectSub<ObjectQuery::kEncoding>,
     .docs = {.group = "generic", .since = "2.2.3", .complexity = "O(1)",
              .summary = "Returns the internal encoding of a Redis object.",
              .tips = "nondeterministic_output"}},
    {.name = "freq", .arity = 3, .flags = kReadOnly, .keys = kSubKey, .acl_categories = kObjectAcl,
     .handler = ObjectSub<ObjectQuery::kFreq>,
     .docs = {.group = "generic", .since = "4.0.0", .complexity = "O(1)",
              .summary = "Returns the logarithmic access frequency counter of a Redis object.",
              .tips = "nondeterministic_output"}},
    {.name = "idletime", .arity = 3, .flags = kReadOnly, .keys = kSubKey,
     .acl_categories = kObjectAcl, .handler = ObjectSub<ObjectQuery::kIdleTime>,
     .docs = {.group = "generic", .since = "2.2.3", .complexity = "O(1)",
              .summary = "Returns the time since the last access to a Redis object.",
              .tips = "nondeterministic_output"}},
    {.name = "refcount", .arity = 3, .flags = kReadOnly, .keys = kSubKey,
     .acl_categories = kObjectAcl, .handler = ObjectSub<ObjectQuery::kRefCount>,
     .docs = {.group = "generic", .since = "2.2.3", .complexity = "O(1)",
              .summary = "Returns the reference count of a value of a key.",
              .tips = "nondeterministic_output"}},
    {.name = "help", .arity = 2, .flags = kLoading | kStale, .acl_categories = "keyspace slow",
     .handler = ObjectHelp,
     .docs = {.group = "generic", .since = "6.2.0", .complexity = "O(1)",
              .summary = "Returns helpful text about the different subcommands."}},
};

constexpr Container kObject = {"object", kObjectSubs};

void CmdObject(ArgSlice args, ConnContext& ctx) { DispatchSub(kObject, args, ctx); }

}  // namespace

void RegisterGenericFamily(CommandRegistry* r) {
  constexpr uint32_t kW = kWrite, kR = kReadOnly, kF = kFast;
  r->Register({.name = "del", .arity = -2, .flags = kW, .keys = kAllKeys,
               .acl_categories = "keyspace write slow", .on_conn = CmdDel,
               .docs = {.group = "generic", .since = "1.0.0",
                        .complexity = "O(N) where N is the number of keys that will be removed. "
                                      "When a key to remove holds a value other than a string, the "
                                      "individual complexity for this key is O(M) where M is the "
                                      "number of elements in the list, set, sorted set or hash. "
                                      "Removing a single key that holds a string value is O(1).",
                        .summary = "Deletes keys.", .key_flags = "RM delete",
                        .tips = "request_policy:multi_shard response_policy:agg_sum"}});
  r->Register({.name = "unlink", .arity = -2, .flags = kW | kF, .keys = kAllKeys,
               .acl_categories = "keyspace write fast", .on_conn = CmdUnlink,
               .docs = {.group = "generic", .since = "4.0.0",
                        .complexity = "O(1) for each key removed regardless of its size. Then the "
                                      "command does O(N) work in a different thread in order to "
                                      "reclaim memory, where N is the number of allocations the "
                                      "deleted objects where composed of.",
                        .summary = "Deletes keys.", .key_flags = "RM delete",
                        .tips = "request_policy:multi_shard response_policy:agg_sum"}});
  r->Register({.name = "exists", .arity = -2, .flags = kR | kF, .keys = kAllKeys,
               .acl_categories = "keyspace read fast", .on_conn = CmdExists,
               .docs = {.group = "generic", .since = "1.0.0",
                        .complexity = "O(N) where N is the number of keys to check.",
                        .summary = "Counts how many of the given keys exist.", .key_flags = "RO",
                        .tips = "request_policy:multi_shard response_policy:agg_sum"}});
  r->Register({.name = "touch", .arity = -2, .flags = kR | kF, .keys = kAllKeys,
               .acl_categories = "keyspace read fast", .on_conn = CmdTouch,
               .docs = {.group = "generic", .since = "3.2.1",
                        .complexity = "O(N) where N is the number of keys that will be touched.",
                        .summary = "Counts the given keys that exist, updating their access time.",
                        .key_flags = "RO",
                        .tips = "request_policy:multi_shard response_policy:agg_sum"}});

  r->Register({.name = "expire", .arity = -3, .flags = kW | kF, .keys = kOneKey,
               .acl_categories = "keyspace write fast", .on_shard = CmdExpire<false, false>,
               .journal_rewrite = JournalExpire,
               .docs = {.group = "generic", .since = "1.0.0", .complexity = "O(1)",
                        .summary = "Sets the expiry of a key in seconds.",
                        .key_flags = "RW update"}});
  r->Register({.name = "pexpire", .arity = -3, .flags = kW | kF, .keys = kOneKey,
               .acl_categories = "keyspace write fast", .on_shard = CmdExpire<true, false>,
               .journal_rewrite = JournalExpire,
               .docs = {.group = "generic", .since = "2.6.0", .complexity = "O(1)",
                        .summary = "Sets the expiry of a key in milliseconds.",
                        .key_flags = "RW update"}});
  r->Register({.name = "expireat", .arity = -3, .flags = kW | kF, .keys = kOneKey,
               .acl_categories = "keyspace write fast", .on_shard = CmdExpire<false, true>,
               .journal_rewrite = JournalExpire,
               .docs = {.group = "generic", .since = "1.2.0", .complexity = "O(1)",
                        .summary = "Sets the expiry of a key to a Unix time in seconds.",
                        .key_flags = "RW update"}});
  r->Register({.name = "pexpireat", .arity = -3, .flags = kW | kF, .keys = kOneKey,
               .acl_categories = "keyspace write fast", .on_shard = CmdExpire<true, true>,
               .journal_rewrite = JournalExpire,
               .docs = {.group = "generic", .since = "2.6.0", .complexity = "O(1)",
                        .summary = "Sets the expiry of a key to a Unix time in milliseconds.",
                        .key_flags = "RW update"}});
  r->Register({.name = "ttl", .arity = 2, .flags = kR | kF, .keys = kOneKey,
               .acl_categories = "keyspace read fast", .on_shard = CmdTtl<false, false>,
               .docs = {.group = "generic", .since = "1.0.0", .complexity = "O(1)",
                        .summary = "Returns the remaining time to live of a key in seconds.",
                        .key_flags = "RO access", .tips = "nondeterministic_output"}});
  r->Register({.name = "pttl", .arity = 2, .flags = kR | kF, .keys = kOneKey,
               .acl_categories = "keyspace read fast", .on_shard = CmdTtl<true, false>,
               .docs = {.group = "generic", .since = "2.6.0", .complexity = "O(1)",
                        .summary = "Returns the remaining time to live of a key in milliseconds.",
                        .key_flags = "RO access", .tips = "nondeterministic_output"}});
  r->Register({.name = "expiretime", .arity = 2, .flags = kR | kF, .keys = kOneKey,
               .acl_categories = "keyspace read fast", .on_shard = CmdTtl<false, true>,
               .docs = {.group = "generic", .since = "7.0.0", .complexity = "O(1)",
                        .summary = "Returns the expiry of a key as a Unix time in seconds.",
                        .key_flags = "RO access"}});
  r->Register({.name = "pexpiretime", .arity = 2, .flags = kR | kF, .keys = kOneKey,
               .acl_categories = "keyspace read fast", .on_shard = CmdTtl<true, true>,
               .docs = {.group = "generic", .since = "7.0.0", .complexity = "O(1)",
                        .summary = "Returns the expiry of a key as a Unix time in milliseconds.",
                        .key_flags = "RO access"}});
  r->Register({.name = "persist", .arity = 2, .flags = kW | kF, .keys = kOneKey,
               .acl_categories = "keyspace write fast", .on_shard = CmdPersist,
               .docs = {.group = "generic", .since = "2.2.0", .complexity = "O(1)",
                        .summary = "Removes the expiry of a key.", .key_flags = "RW update"}});
  r->Register({.name = "type", .arity = 2, .flags = kR | kF, .keys = kOneKey,
               .acl_categories = "keyspace read fast", .on_shard = CmdType,
               .docs = {.group = "generic", .since = "1.0.0", .complexity = "O(1)",
                        .summary = "Returns the type of the value stored at a key.",
                        .key_flags = "RO"}});

  r->Register({.name = "keys", .arity = 2, .flags = kR, .keys = kNoKeys,
               .acl_categories = "keyspace read slow dangerous", .on_conn = CmdKeys,
               .docs = {.group = "generic", .since = "1.0.0",
                        .complexity = "O(N) with N being the number of keys in the database, under "
                                      "the assumption that the key names in the database and the "
                                      "given pattern have limited length.",
                        .summary = "Returns the keys matching a glob-style pattern.",
                        .tips = "request_policy:all_shards nondeterministic_output_order"}});
  r->Register({.name = "scan", .arity = -2, .flags = kR, .keys = kNoKeys,
               .acl_categories = "keyspace read slow", .on_conn = CmdScan,
               .docs = {.group = "generic", .since = "2.8.0",
                        .complexity = "O(1) for every call. O(N) for a complete iteration, "
                                      "including enough command calls for the cursor to return "
                                      "back to 0. N is the number of elements inside the "
                                      "collection.",
                        .summary = "Walks the keys of the database a few at a time with a cursor.",
                        .tips = "nondeterministic_output request_policy:special"}});
  r->Register({.name = "randomkey", .arity = 1, .flags = kR, .keys = kNoKeys,
               .acl_categories = "keyspace read slow", .on_conn = CmdRandomKey,
               .docs = {.group = "generic", .since = "1.0.0", .complexity = "O(1)",
                        .summary = "Returns a key of the database chosen at random.",
                        .tips = "request_policy:all_shards nondeterministic_output"}});
  r->Register({.name = "dump", .arity = 2, .flags = kR, .keys = kOneKey,
               .acl_categories = "keyspace read slow", .on_shard = CmdDump,
               .docs = {.group = "generic", .since = "2.6.0",
                        .complexity = "O(1) to access the key and additional O(N*M) to serialize "
                                      "it, where N is the number of Redis objects composing the "
                                      "value and M their average size. For small string values "
                                      "the time complexity is thus O(1)+O(1*M) where M is small, "
                                      "so simply O(1).",
                        .summary = "Returns the value of a key in Redis' serialized form.",
                        .key_flags = "RO access", .tips = "nondeterministic_output"}});
  r->Register({.name = "restore", .arity = -4, .flags = kW | kDenyOom, .keys = kOneKey,
               .acl_categories = "keyspace write slow dangerous", .on_shard = CmdRestore,
               .journal_rewrite = JournalRestore,
               .docs = {.group = "generic", .since = "2.6.0",
                        .complexity = "O(1) to create the new key and additional O(N*M) to "
                                      "reconstruct the serialized value, where N is the number of "
                                      "Redis objects composing the value and M their average "
                                      "size. For small string values the time complexity is thus "
                                      "O(1)+O(1*M) where M is small, so simply O(1). However for "
                                      "sorted set values the complexity is O(N*M*log(N)) because "
                                      "inserting values into sorted sets is O(log(N)).",
                        .summary = "Creates a key from a value serialized by DUMP.",
                        .key_flags = "OW update"}});
  r->Register({.name = "object", .arity = -2, .flags = 0, .keys = kNoKeys, .acl_categories = "slow",
               .on_conn = CmdObject,
               .docs = {.group = "generic", .since = "2.2.3",
                        .complexity = "Depends on subcommand.",
                        .summary = "Commands about how the value of a key is stored."},
               .container = &kObject});
}

}  // namespace shardis::server
