// HyperLogLog: PFADD, PFCOUNT, PFMERGE (and PFDEBUG), on plain string values in Redis' own sparse/dense format
// (core/hyperloglog.h), so HLL strings move between redis-server and shardis unchanged.
//
// PFADD runs on the key's shard: a dense HLL is updated in place in the value's heap block; a
// sparse one (at most hll_sparse_max_bytes) is edited in a copy, since its opcodes move. PFCOUNT
// of one key refreshes the cached cardinality in the value, as Redis does (so it is a write for
// WATCH). PFCOUNT of several keys and PFMERGE run over one transaction: every shard max-merges
// the registers of its own keys into a raw array, the coordinator combines the arrays, and
// PFMERGE then writes the result on the destination's shard.
#include <absl/random/random.h>
#include <gflags/gflags.h>

#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "core/hyperloglog.h"
#include "core/string_util.h"
#include "server/command.h"
#include "server/connection_state.h"
#include "server/key_lookup.h"
#include "shard/shard_set.h"
#include "shard/transaction.h"

DEFINE_uint64(hll_sparse_max_bytes, shardis::core::hll::kSparseMaxBytesDefault,
              "largest sparse HyperLogLog (header included) before it turns dense, as Redis' "
              "hll-sparse-max-bytes");

namespace shardis::server {

namespace {

using core::CompactValue;
using core::ValueType;
using shard::Db;
namespace hll = core::hll;

constexpr std::string_view kNotHllErr = "WRONGTYPE Key is not a valid HyperLogLog string value.";
constexpr std::string_view kCorruptedErr = "INVALIDOBJ Corrupted HLL object detected";

// What a read phase found at one key.
enum class KeyState : uint8_t { kMissing, kOk, kWrongType, kNotHll, kCorrupted };

void ReplyState(core::ReplyBuilder& rb, KeyState s) {
  switch (s) {
    case KeyState::kWrongType:
      return rb.Error(kWrongTypeErr);
    case KeyState::kNotHll:
      return rb.Error(kNotHllErr);
    case KeyState::kCorrupted:
      return rb.Error(kCorruptedErr);
    default:
      break;
  }
}

// PFADD key [element ...]
// Writes an HLL's bytes into its cell. Redis' HLLs are raw strings whatever their size (made by
// createHLLObject, changed in place after dbUnshareStringValue): OBJECT ENCODING says raw.
void StoreHll(CompactValue& cell, std::string_view h) {
  cell.SetString(h);
  cell.set_raw();
}

void CmdPfAdd(ArgSlice args, ShardContext& ctx) {
  bool wrong_type;
  Db::Iterator it = FindTyped(ctx, args[1], ValueType::kString, kForWrite, &wrong_type);
  if (wrong_type) return;
  const size_t max_bytes = hll::SparseMaxBytes();
  ArgSlice elements = args.subspan(2);
  if (!Db::Found(it)) {
    std::string h = hll::NewSparse();
    int updated = 1;  // created: counts as an update even with no element
    for (std::string_view e : elements) updated += std::max(hll::Add(&h, e, max_bytes), 0);
    hll::InvalidateCache(h.data());
    bool inserted;
    it = ctx.db.FindOrInsert(args[1], ctx.hash, ctx.now_ms, &inserted);
    StoreHll(it.value(), h);
    ctx.shard.AddDirty(updated);  // Redis counts each element that changed a register
    NotifyKeyspaceEvent(ctx, kNotifyString, "pfadd", args[1]);
    return ctx.rb.Integer(1);
  }
  CompactValue& cell = it.value();
  char scratch[CompactValue::kScratchSize];
  const std::string_view cur = cell.GetString(scratch);
  if (!hll::IsValid(cur)) return ctx.rb.Error(kNotHllErr);
  int updated = 0;
  if (hll::EncodingOf(cur) == hll::kDense) {
    // In place: a dense HLL never changes size.
    cell.EditBytes(0, [&](char* p, size_t) {
      for (std::string_view e : elements) updated += hll::DenseAdd(p, e);
      if (updated) hll::InvalidateCache(p);
    });
    ctx.shard.AddDirty(updated);
    if (updated) NotifyKeyspaceEvent(ctx, kNotifyString, "pfadd", args[1]);
    return ctx.rb.Integer(updated ? 1 : 0);
  }
  std::string h(cur);
  for (std::string_view e : elements) {
    const int r = hll::Add(&h, e, max_bytes);
    if (r < 0) {
      if (updated) StoreHll(cell, h);  // what was added before stays, as in Redis
      return ctx.rb.Error(kCorruptedErr);
    }
    updated += r;
  }
  if (updated) {
    hll::InvalidateCache(h.data());
    StoreHll(cell, h);
    NotifyKeyspaceEvent(ctx, kNotifyString, "pfadd", args[1]);
  }
  ctx.shard.AddDirty(updated);
  ctx.rb.Integer(updated ? 1 : 0);
}

// A read phase over keys [from, n) of tx: each shard merges the registers of its valid HLLs into
// its own raw array (raws[sid]) and records the state of each key (and whether it is dense).
void MergePhase(shard::Transaction& tx, uint32_t from, std::vector<std::vector<uint8_t>>& raws,
                std::vector<KeyState>& states, std::vector<uint8_t>& dense) {
  for (unsigned sid : tx.shards()) raws[sid].assign(hll::kRegisters, 0);
  tx.Run([&](shard::TxShard& t) {
    uint8_t* raw = raws[t.shard.id()].data();
    for (uint32_t i : t.keys) {
      if (i < from) continue;
      Db::Iterator it = LookupRead(t.shard, t.db, tx.key(i), tx.hash(i), t.now_ms);
      if (!Db::Found(it)) continue;
      if (it.value().type() != ValueType::kString) {
        states[i] = KeyState::kWrongType;
        continue;
      }
      char scratch[CompactValue::kScratchSize];
      const std::string_view s = it.value().GetString(scratch);
      if (!hll::IsValid(s)) {
        states[i] = KeyState::kNotHll;
      } else if (!hll::MergeInto(raw, s)) {
        states[i] = KeyState::kCorrupted;
      } else {
        states[i] = KeyState::kOk;
        dense[i] = hll::EncodingOf(s) == hll::kDense;
      }
    }
  });
}

// The first error in key order (Redis checks the keys one by one), or kOk.
KeyState FirstError(const std::vector<KeyState>& states) {
  for (KeyState s : states) {
    if (s != KeyState::kMissing && s != KeyState::kOk) return s;
  }
  return KeyState::kOk;
}

// The per-shard raw arrays of MergePhase, max-combined.
std::vector<uint8_t> CombineRaws(const shard::Transaction& tx,
                                 const std::vector<std::vector<uint8_t>>& raws) {
  std::vector<uint8_t> max(hll::kRegisters, 0);
  for (unsigned sid : tx.shards()) {
    const std::vector<uint8_t>& r = raws[sid];
    for (size_t i = 0; i < hll::kRegisters; ++i) max[i] = std::max(max[i], r[i]);
  }
  return max;
}

// PFCOUNT of one key: the cached cardinality, or a fresh count that is then cached in the value.
void PfCountOne(ArgSlice args, ConnContext& ctx) {
  shard::Transaction tx(ctx.conn.db, args.subspan(1, 1), shard::Transaction::kWrite);
  KeyState state = KeyState::kMissing;
  uint64_t card = 0;
  tx.Run(
      [&](shard::TxShard& t) {
        Db::Iterator it = LookupRead(t.shard, t.db, tx.key(0), tx.hash(0), t.now_ms);
        if (!Db::Found(it)) return;
        CompactValue& cell = it.value();
        if (cell.type() != ValueType::kString) {
          state = KeyState::kWrongType;
          return;
        }
        char scratch[CompactValue::kScratchSize];
        const std::string_view s = cell.GetString(scratch);
        if (!hll::IsValid(s)) {
          state = KeyState::kNotHll;
          return;
        }
        if (hll::CacheValid(s)) {
          state = KeyState::kOk;
          card = hll::CachedCardinality(s);
          return;
        }
        if (!hll::Count(s, &card)) {
          state = KeyState::kCorrupted;
          return;
        }
        state = KeyState::kOk;
        cell.EditBytes(0, [&](char* p, size_t) { hll::SetCachedCardinality(p, card); });
        t.db.NoteModified(tx.key(0));
        t.shard.AddDirty();  // the cache is part of the value: Redis counts its refresh
      },
      /*conclude=*/true);
  if (state == KeyState::kOk || state == KeyState::kMissing) return ctx.rb.Integer(int64_t(card));
  ReplyState(ctx.rb, state);
}

// PFCOUNT key [key ...]
void CmdPfCount(ArgSlice args, ConnContext& ctx) {
  if (args.size() == 2) return PfCountOne(args, ctx);
  ArgSlice keys = args.subspan(1);
  shard::Transaction tx(ctx.conn.db, keys, shard::Transaction::kRead);
  std::vector<std::vector<uint8_t>> raws(shard::shard_set->size());
  std::vector<KeyState> states(keys.size(), KeyState::kMissing);
  std::vector<uint8_t> dense(keys.size(), 0);
  MergePhase(tx, 0, raws, states, dense);
  tx.Conclude();
  if (KeyState e = FirstError(states); e != KeyState::kOk) return ReplyState(ctx.rb, e);
  const std::vector<uint8_t> max = CombineRaws(tx, raws);
  ctx.rb.Integer(int64_t(hll::CountRaw(max.data())));
}

// PFMERGE destkey [sourcekey ...]: the destination is a source too.
void CmdPfMerge(ArgSlice args, ConnContext& ctx) {
  ArgSlice keys = args.subspan(1);
  shard::Transaction tx(ctx.conn.db, keys, shard::Transaction::kWrite);
  std::vector<std::vector<uint8_t>> raws(shard::shard_set->size());
  std::vector<KeyState> states(keys.size(), KeyState::kMissing);
  std::vector<uint8_t> dense(keys.size(), 0);
  MergePhase(tx, 0, raws, states, dense);
  if (KeyState e = FirstError(states); e != KeyState::kOk) {
    tx.Conclude();
    return ReplyState(ctx.rb, e);
  }
  const std::vector<uint8_t> max = CombineRaws(tx, raws);
  // Any dense input makes the destination dense right away (no sparse steps on the way).
  const bool use_dense = std::any_of(dense.begin(), dense.end(), [](uint8_t d) { return d; });
  bool corrupted = false;
  const size_t max_bytes = hll::SparseMaxBytes();
  tx.RunOn(tx.shard_of(0), [&](shard::TxShard& t) {
    bool inserted;
    Db::Iterator it = t.db.FindOrInsert(tx.key(0), tx.hash(0), t.now_ms, &inserted);
    std::string h = inserted ? hll::NewSparse() : it.value().ToString();
    if (use_dense && !hll::SparseToDense(&h)) {
      corrupted = true;
      if (inserted) t.db.Erase(it, tx.key(0), tx.hash(0));
      return;
    }
    for (size_t j = 0; j < hll::kRegisters; ++j) {
      if (max[j] == 0) continue;
      if (hll::EncodingOf(h) == hll::kDense) {
        hll::DenseSet(reinterpret_cast<uint8_t*>(h.data()) + hll::kHeaderSize, j, max[j]);
      } else {
        hll::SparseSet(&h, j, max[j], max_bytes);
      }
    }
    hll::InvalidateCache(h.data());
    StoreHll(it.value(), h);
    t.db.NoteModified(tx.key(0));
    t.shard.AddDirty();
    // Redis announces PFMERGE as a PFADD (a mass add of elements).
    shard::NotifyKeyspaceEvent(kNotifyString, "pfadd", tx.key(0), t.db.index());
  });
  tx.Conclude();
  if (corrupted) return ctx.rb.Error(kCorruptedErr);
  ctx.rb.Ok();
}

// PFDEBUG GETREG|DECODE|ENCODING|TODENSE key: Redis' debugging view of an HLL. GETREG and
// TODENSE convert a sparse HLL to dense, as in Redis.
void CmdPfDebug(ArgSlice args, ConnContext& ctx) {
  const std::string_view sub = args[1];
  enum class Sub { kGetReg, kDecode, kEncoding, kToDense, kUnknown } op = Sub::kUnknown;
  if (core::EqualsIgnoreCase(sub, "getreg")) {
    op = Sub::kGetReg;
  } else if (core::EqualsIgnoreCase(sub, "decode")) {
    op = Sub::kDecode;
  } else if (core::EqualsIgnoreCase(sub, "encoding")) {
    op = Sub::kEncoding;
  } else if (core::EqualsIgnoreCase(sub, "todense")) {
    op = Sub::kToDense;
  }
  shard::Transaction tx(ctx.conn.db, args.subspan(2, 1), shard::Transaction::kWrite);
  std::string error;
  std::string h;  // the HLL as it is after the command
  bool converted = false;
  tx.Run(
      [&](shard::TxShard& t) {
        Db::Iterator it = t.db.Find(tx.key(0), tx.hash(0), t.now_ms);
        if (!Db::Found(it)) {
          error = "ERR The specified key does not exist";
          return;
        }
        if (it.value().type() != ValueType::kString) {
          error = kWrongTypeErr;
          return;
        }
        h = it.value().ToString();
        if (!hll::IsValid(h)) {
          error = kNotHllErr;
          return;
        }
        if ((op == Sub::kGetReg || op == Sub::kToDense) && hll::EncodingOf(h) == hll::kSparse) {
          if (!hll::SparseToDense(&h)) {
            error = kCorruptedErr;
            return;
          }
          StoreHll(it.value(), h);
          t.db.NoteModified(tx.key(0));
          t.shard.AddDirty();  // an encoding change is a change for Redis too
          converted = true;
        }
      },
      /*conclude=*/true);
  if (!error.empty()) return ctx.rb.Error(error);
  switch (op) {
    case Sub::kGetReg: {
      const uint8_t* regs = reinterpret_cast<const uint8_t*>(h.data()) + hll::kHeaderSize;
      ctx.rb.ArrayHeader(hll::kRegisters);
      for (size_t i = 0; i < hll::kRegisters; ++i) ctx.rb.Integer(hll::DenseGet(regs, i));
      return;
    }
    case Sub::kDecode:
      if (hll::EncodingOf(h) != hll::kSparse) return ctx.rb.Error("ERR HLL encoding is not sparse");
      return ctx.rb.Bulk(hll::DecodeSparse(h));
    case Sub::kEncoding:
      return ctx.rb.SimpleString(hll::EncodingOf(h) == hll::kDense ? "dense" : "sparse");
    case Sub::kToDense:
      return ctx.rb.Integer(converted ? 1 : 0);
    case Sub::kUnknown:
      break;
  }
  ctx.rb.Error(core::Concat("ERR Unknown PFDEBUG subcommand '", sub, "'"));
}

// PFSELFTEST: core::hll::SelfTest, +OK or its TESTFAILED error. Runs for about a second (10^7
// elements, as Redis), on the client's thread: a test command, not for production traffic.
void CmdPfSelfTest(ArgSlice, ConnContext& ctx) {
  const std::string failed = core::hll::SelfTest(absl::Uniform<uint64_t>(absl::BitGen()),
                                                 core::hll::SparseMaxBytes());
  if (!failed.empty()) return ctx.rb.Error(failed);
  ctx.rb.Ok();
}

}  // namespace

void RegisterHllFamily(CommandRegistry* r) {
  constexpr uint32_t kW = kWrite, kR = kReadOnly, kD = kDenyOom, kF = kFast;
  r->Register({.name = "pfadd", .arity = -2, .flags = kW | kD | kF, .keys = kOneKey,
               .acl_categories = "write hyperloglog fast", .on_shard = CmdPfAdd,
               .docs = {.group = "hyperloglog", .since = "2.8.9",
                        .complexity = "O(1) to add every element.",
                        .summary = "Adds elements to a HyperLogLog.", .key_flags = "RW insert"}});
  r->Register({.name = "pfcount", .arity = -2, .flags = kR | kMayReplicate, .keys = kAllKeys,
               .acl_categories = "read hyperloglog slow", .on_conn = CmdPfCount,
               .docs = {.group = "hyperloglog", .since = "2.8.9",
                        .complexity = "O(1) with a very small average constant time when called "
                                      "with a single key. O(N) with N being the number of keys, "
                                      "and much bigger constant times, when called with multiple "
                                      "keys.",
                        .summary = "Returns the estimated number of distinct elements seen by one "
                                   "or more HyperLogLogs.", .key_flags = "RW access"}});
  r->Register({.name = "pfmerge", .arity = -2, .flags = kW | kD, .keys = kAllKeys,
               .acl_categories = "write hyperloglog slow", .on_conn = CmdPfMerge,
               .docs = {.group = "hyperloglog", .since = "2.8.9",
                        .complexity = "O(N) to merge N HyperLogLogs, but with high constant times.",
                        .summary = "Merges HyperLogLogs into a destination key.",
                        .key_flags = "RW access insert",
                        .other_key_flags = "RO access"}});
  r->Register({.name = "pfdebug", .arity = 3, .flags = kW | kD | kAdmin,
               .keys = {.first = 2, .last = 2, .step = 1},
               .acl_categories = "write hyperloglog admin slow dangerous", .on_conn = CmdPfDebug,
               .docs = {.group = "hyperloglog", .since = "2.8.9", .complexity = "N/A",
                        .summary = "Shows or changes the internal representation of a HyperLogLog "
                                   "(for tests).", .key_flags = "RW access"}});
  r->Register({.name = "pfselftest", .arity = 1, .flags = kAdmin, .keys = kNoKeys,
               .acl_categories = "hyperloglog admin slow dangerous", .on_conn = CmdPfSelfTest,
               .docs = {.group = "hyperloglog", .since = "2.8.9", .complexity = "N/A",
                        .summary = "An internal command for testing HyperLogLog values."}});
}

}  // namespace shardis::server
