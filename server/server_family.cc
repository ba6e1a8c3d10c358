// Server commands: DBSIZE, FLUSHDB, FLUSHALL, SWAPDB, DEBUG, WAIT, TIME.
//
// Whatever spans the process (key counts, the databases) is reached with one hop to every thread
// (shard_set->AwaitAll): each thread works on its own Shard and writes its own slot of a vector the
// calling fiber owns, then the fiber merges the slots.
#include <sys/time.h>

#include <algorithm>
#include <boost/fiber/operations.hpp>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "core/access_clock.h"
#include "core/list.h"
#include "core/number.h"
#include "core/rdb_writer.h"
#include "core/string_util.h"
#include "core/value_object.h"
#include "io/proactor.h"
#include "server/arg_parser.h"
#include "server/blocked_client.h"
#include "server/client_tracking.h"
#include "server/command.h"
#include "server/connection_state.h"
#include "server/key_lookup.h"
#include "server/persistence_config.h"
#include "server/snapshot.h"
#include "server/subcommand.h"
#include "shard/lazy_free.h"
#include "shard/shard_set.h"
#include "shard/transaction.h"

namespace shardis::server {

namespace {

using shard::Shard;

// ------------------------------------------------------------------------------------------------
// DBSIZE, FLUSHDB, FLUSHALL

void CmdDbSize(ArgSlice, ConnContext& ctx) {
  std::vector<int64_t> sizes(shard::shard_set->size(), 0);
  shard::Transaction tx(ctx.conn.db, shard::Transaction::AllShards{}, shard::Transaction::kRead);
  tx.Run([&](shard::TxShard& t) { sizes[t.shard.id()] = int64_t(t.db.size()); },
         /*conclude=*/true);
  int64_t total = 0;
  for (int64_t n : sizes) total += n;
  ctx.rb.Integer(total);
}

// FLUSHDB / FLUSHALL [ASYNC | SYNC], shard by shard in parallel. SYNC frees every value in the
// command; ASYNC hands each database's tables to its shard's lazy-free queue (shard/lazy_free.h),
// so the keys are gone at once and their memory follows; no mode means ASYNC under
// lazyfree-lazy-user-flush, as in Redis.
template <bool kAll>
void CmdFlush(ArgSlice args, ConnContext& ctx) {
  bool lazy = shard::LazyFreeOn(shard::LazyFreePath::kUserFlush);
  if (args.size() == 2 && core::EqualsIgnoreCase(args[1], "sync")) {
    lazy = false;
  } else if (args.size() == 2 && core::EqualsIgnoreCase(args[1], "async")) {
    lazy = true;
  } else if (args.size() != 1) {
    return ctx.rb.Error(kSyntaxErr);
  }
  // One transaction over every shard: no client sees some shards flushed and others not.
  shard::Transaction tx(ctx.conn.db, shard::Transaction::AllShards{}, shard::Transaction::kWrite);
  tx.Run(
      [&](shard::TxShard& t) {
        // Redis counts one change per key removed (those expired but not yet reclaimed too).
        if (kAll) {
          // As Redis kills its saving child: a snapshot of what is being flushed is not needed.
          AbortShardSnapshot(t.shard);
          for (int i = 0; i < Shard::kNumDbs; ++i) t.shard.AddDirty(t.shard.db(i).size());
          for (int i = 0; i < Shard::kNumDbs; ++i) t.shard.db(i).Clear(lazy);
          for (int i = 0; i < Shard::kNumDbs; ++i) t.shard.blocking().NoteDbReady(i);
        } else {
          t.shard.AddDirty(t.db.size());
          t.db.Clear(lazy);
          t.shard.blocking().NoteDbReady(ctx.conn.db);
        }
        // Blocked clients get a look: an XREADGROUP waiter fails once its stream is gone.
        // Tracking clients hear that every key changed (Redis does so for FLUSHDB too).
        InvalidateTrackingOnFlush(t.shard);
      },
      /*conclude=*/true);
  if (kAll) {
    // Redis' FLUSHALL saves the (now empty) dataset when a save schedule is set, so the file on
    // disk does not bring the flushed keys back at the next start.
    if (!SaveRules().empty()) {
      if (shard::Transaction::CurrentExec() != nullptr) {
        // Inside EXEC a save could wait for a background save whose cut waits for this EXEC:
        // the save follows the EXEC instead.
        ScheduleBackgroundSave();
      } else {
        WaitWhileSaving();
        (void)SaveSnapshot(RdbFilename());
      }
    }
  }
  ctx.rb.Ok();
}

// SWAPDB index1 index2: one transaction over every shard, so no client sees some shards swapped
// and others not. As in Redis, a watched key of either database that exists in either one before
// or after the swap is modified, unless it stays expired or gone for a watcher that saw it
// expired (Db::TouchWatchedBeforeReplace).
void CmdSwapDb(ArgSlice args, ConnContext& ctx) {
  int64_t a, b;
  if (!core::ParseInt64(args[1], &a) || a < INT32_MIN || a > INT32_MAX) {
    return ctx.rb.Error("ERR invalid first DB index");
  }
  if (!core::ParseInt64(args[2], &b) || b < INT32_MIN || b > INT32_MAX) {
    return ctx.rb.Error("ERR invalid second DB index");
  }
  if (a < 0 || a >= Shard::kNumDbs || b < 0 || b >= Shard::kNumDbs) {
    return ctx.rb.Error("ERR DB index is out of range");
  }
  if (a != b) {
    shard::Transaction tx(ctx.conn.db, shard::Transaction::AllShards{},
                          shard::Transaction::kWrite);
    tx.Run(
        [&](shard::TxShard& t) {
          shard::Db& da = t.shard.db(int(a));
          shard::Db& db = t.shard.db(int(b));
          da.TouchWatchedBeforeReplace(&db, t.now_ms);
          db.TouchWatchedBeforeReplace(&da, t.now_ms);
          da.SwapContents(db);
          // Clients blocked on keys of either database may find data there now.
          t.shard.blocking().NoteDbReady(int(a));
          t.shard.blocking().NoteDbReady(int(b));
        },
        /*conclude=*/true);
  }
  // One change, even for a database swapped with itself (as Redis counts it), on the connection's
  // own shard: this fiber runs on that shard's thread.
  Shard::current()->AddDirty();
  ctx.rb.Ok();
}

// ------------------------------------------------------------------------------------------------
// DEBUG POPULATE / SLEEP / HELP

// DEBUG POPULATE count [prefix] [size]: creates "<prefix>:<i>" = "value:<i>" for i in [0, count),
// skipping keys that exist. Every shard walks the whole range in its own fiber, in parallel, and
// keeps the keys it owns; it yields now and then so that its clients are still served (no table
// iterator is held across a yield).
void DebugPopulate(ArgSlice args, ConnContext& ctx) {
  ArgParser p(args, 2);
  const int64_t count = p.NextInRange(0, INT64_MAX, kMustBePositiveErr);
  const std::string prefix(p.HasNext() ? p.Next() : std::string_view("key"));
  const int64_t size = p.HasNext() ? p.NextInRange(0, INT64_MAX, kMustBePositiveErr) : 0;
  if (p.ReplyError(ctx.rb)) return;
  const int db_index = ctx.conn.db;
  constexpr int64_t kYieldEvery = 4096;
  constexpr size_t kMaxKeyLen = 127;  // Redis formats into a 128-byte buffer
  shard::shard_set->AwaitAllInFibers([&](Shard& s) {
    shard::Db& db = s.db(db_index);
    const unsigned sid = s.id();
    std::string key = prefix + ":";
    const size_t base = key.size();
    std::string value = "value:";
    char num[core::kInt64BufSize];
    int64_t now = shard::NowMs();
    for (int64_t j = 0; j < count; ++j) {
      if (j % kYieldEvery == kYieldEvery - 1) {
        boost::this_fiber::yield();
        now = shard::NowMs();
      }
      std::string_view digits(num, core::FormatInt64(j, num));
      key.resize(base);
      key.append(digits);
      if (key.size() > kMaxKeyLen) key.resize(kMaxKeyLen);
      const uint64_t hash = core::HashBytes(key);
      if (shard::shard_set->ShardOf(key, hash) != sid) continue;
      bool inserted;
      shard::Db::Iterator it = db.FindOrInsert(key, hash, now, &inserted);
      if (!inserted) continue;  // an existing key keeps its value (and TTL)
      value.resize(6);
      value.append(digits);
      // With a size, the value is cut to it or padded with zero bytes.
      if (size > 0) value.resize(size_t(size), '\0');
      it.value().SetString(value);
    }
  });
  ctx.rb.Ok();
}

// DEBUG SLEEP seconds: sleeps this client only (the threads keep serving everyone else).
void DebugSleep(ArgSlice args, ConnContext& ctx) {
  const double seconds = strtod(std::string(args[2]).c_str(), nullptr);
  if (seconds > 0) {
    io::Proactor::current()->SleepFor(std::chrono::nanoseconds(int64_t(seconds * 1e9)));
  }
  ctx.rb.Ok();
}

// DEBUG ERROR message: the message as an error reply, no "ERR" added, so clients can simulate
// LOADING, READONLY, OOM... Line breaks become spaces, as in Redis.
void DebugError(ArgSlice args, ConnContext& ctx) {
  std::string msg(args[2]);
  std::replace(msg.begin(), msg.end(), '\r', ' ');
  std::replace(msg.begin(), msg.end(), '\n', ' ');
  ctx.rb.Error(msg);
}

// DEBUG OBJECT key: Redis' one-line summary of a value, without touching its access clock.
// "Value at" is the value's address (the object's, or the cell's for a string), serializedlength
// the size of its RDB serialization, lru the 24-bit access clock (core/access_clock.h). A list
// labelled quicklist adds Redis' ql_* fields, counted on shardis' own nodes (List::listpack()):
// ql_uncompressed_size is the listpack bytes Redis' nodes would hold.
void DebugObject(ArgSlice args, ConnContext& ctx) {
  std::string line;
  const bool found = InspectSubKey(args, ctx, [&](const shard::Db::Iterator& it) {
    const core::CompactValue& v = it.value();
    std::string serialized;
    core::AppendRdbValue(&serialized, v, RdbCompression());
    const bool object = v.encoding() == core::CompactValue::Encoding::kObject;
    const uint32_t clock = it.access_clock();
    char buf[256];
    snprintf(buf, sizeof buf,
             "Value at:%p refcount:%lld encoding:%s serializedlength:%zu lru:%u "
             "lru_seconds_idle:%lld",
             object ? v.object() : static_cast<const void*>(&v),
             static_cast<long long>(core::ObjectRefCount(v)),
             std::string(core::EncodingName(v)).c_str(), serialized.size(), clock,
             static_cast<long long>(core::LruIdleMs(clock, shard::NowMs()) / 1000));
    line = buf;
    if (v.type() != core::ValueType::kList) return;
    const auto* list = static_cast<const core::List*>(v.object());
    if (list->listpack()) return;
    // Redis clamps the fill it stores to -5..32768 (quicklistSetFill).
    const int fill = std::clamp(core::ListMaxListpackSize(), -5, 1 << 15);
    const size_t nodes = list->node_count();
    // Every node but one adds its own listpack header and terminator.
    const size_t packed =
        list->packed_bytes() + (core::ListpackBuilder::kHeaderSize + 1) * (nodes - 1);
    snprintf(buf, sizeof buf,
             " ql_nodes:%zu ql_avg_node:%.2f ql_listpack_max:%d ql_compressed:%d "
             "ql_uncompressed_size:%zu",
             nodes, static_cast<double>(list->size()) / static_cast<double>(nodes), fill,
             core::ListCompressDepth() != 0 ? 1 : 0, packed);
    line += buf;
  });
  if (!found) return ctx.rb.Error(kNoSuchKeyErr);
  ctx.rb.SimpleString(line);
}

// DEBUG PROTOCOL type: a fixed reply of each RESP3 type, for clients to test their parsers;
// in RESP2 each downgrades as every reply does (an attribute is left out, a push is refused).
void DebugProtocol(ArgSlice args, ConnContext& ctx) {
  const std::string_view name = args[2];
  core::ReplyBuilder& rb = ctx.rb;
  auto is = [&](std::string_view type) { return core::EqualsIgnoreCase(name, type); };
  if (is("string")) {
    rb.Bulk("Hello World");
  } else if (is("integer")) {
    rb.Integer(12345);
  } else if (is("double")) {
    rb.Double(3.141);
  } else if (is("bignum")) {
    rb.BigNumber("1234567999999999999999999999999999999");
  } else if (is("null")) {
    rb.Null();
  } else if (is("array") || is("set")) {
    is("array") ? rb.ArrayHeader(3) : rb.SetHeader(3);
    for (int j = 0; j < 3; ++j) rb.Integer(j);
  } else if (is("map")) {
    rb.MapHeader(3);
    for (int j = 0; j < 3; ++j) {
      rb.Integer(j);
      rb.Bool(j == 1);
    }
  } else if (is("attrib")) {
    if (rb.resp3()) {
      rb.AttributeHeader(1);
      rb.Bulk("key-popularity");
      rb.ArrayHeader(2);
      rb.Bulk("key:123");
      rb.Integer(90);
    }
    rb.Bulk("Some real reply following the attribute");
  } else if (is("push")) {
    if (!rb.resp3()) return rb.Error("ERR RESP2 is not supported by this command");
    rb.PushHeader(2);
    rb.Bulk("server-cpu-usage");
    rb.Integer(42);
    // The push is out of band: a normal reply follows, for clients that skip pushes.
    rb.Bulk("Some real reply following the push reply");
  } else if (is("true") || is("false")) {
    rb.Bool(is("true"));
  } else if (is("verbatim")) {
    rb.Verbatim("This is a verbatim\nstring", "txt");
  } else {
    rb.Error(
        "ERR Wrong protocol type name. Please use one of the following: "
        "string|integer|double|bignum|null|array|set|map|attrib|push|verbatim|true|false");
  }
}

void DebugHelp(ArgSlice, ConnContext& ctx) {
  ReplyHelp(ctx.rb, "DEBUG",
            {"POPULATE <count> [<prefix>] [<size>]",
             "    Create <count> string keys named <prefix>:<num> ('key' by default) holding",
             "    value:<num>, cut or zero-padded to <size> bytes when given.", "ERROR <string>",
             "    Return a Redis protocol error with <string> as message.",
             "SET-ACTIVE-EXPIRE <0|1>",
             "    Setting it to 0 disables expiring keys in background when they are not",
             "    accessed (otherwise the Redis behavior). Setting it to 1 reenables back the",
             "    default.",
             "OBJECT <key>",
             "    Show low-level information about the value of <key>.",
             "PROTOCOL <type>",
             "    Reply with a fixed value of a RESP3 type: string, integer, double, bignum,",
             "    null, array, set, map, attrib, push, verbatim, true or false.",
             "SLEEP <seconds>", "    Sleep this connection for <seconds>. Decimals allowed."});
}

void CmdDebug(ArgSlice args, ConnContext& ctx) {
  std::string_view sub = args[1];
  if (core::EqualsIgnoreCase(sub, "populate") && args.size() >= 3 && args.size() <= 5) {
    return DebugPopulate(args, ctx);
  }
  if (core::EqualsIgnoreCase(sub, "sleep") && args.size() == 3) return DebugSleep(args, ctx);
  if (core::EqualsIgnoreCase(sub, "error") && args.size() == 3) return DebugError(args, ctx);
  if (core::EqualsIgnoreCase(sub, "object") && args.size() == 3) return DebugObject(args, ctx);
  if (core::EqualsIgnoreCase(sub, "protocol") && args.size() == 3) return DebugProtocol(args, ctx);
  if (core::EqualsIgnoreCase(sub, "set-active-expire") && args.size() == 3) {
    // Redis reads the flag with atoi; here anything but a non-zero integer turns it off.
    int64_t on = 0;
    if (!core::ParseInt64(args[2], &on)) on = 0;
    shard::shard_set->set_active_expire(on != 0);
    return ctx.rb.Ok();
  }
  if (core::EqualsIgnoreCase(sub, "reload")) return DebugReload(args, ctx);
  if (core::EqualsIgnoreCase(sub, "help") && args.size() == 2) return DebugHelp(args, ctx);
  ctx.rb.Error(SubcommandSyntaxError(args));
}

// ------------------------------------------------------------------------------------------------
// WAIT, TIME

// A client in WAIT: no key serves it; its timeout, a hang-up or CLIENT UNBLOCK end the wait.
class ReplicaAckWaiter final : public BlockedClient {
 public:
  explicit ReplicaAckWaiter(ConnContext& ctx) : BlockedClient(ctx, {}) {}
  Offer TryServe(shard::Shard&, shard::Db&, std::string_view) override { return Offer::kGone; }
};

// WAIT numreplicas timeout: there are no replicas, so the answer is 0 - after the timeout when
// replicas were asked for, as Redis does (a timeout of 0, "forever", answers at once). The wait
// is a blocked client's (INFO blocked_clients, CLIENT UNBLOCK); inside MULTI or a script it does
// not wait, as in Redis.
void CmdWait(ArgSlice args, ConnContext& ctx) {
  int64_t replicas, timeout_ms;
  if (!core::ParseInt64(args[1], &replicas)) return ctx.rb.Error(kNotIntegerErr);
  if (!core::ParseInt64(args[2], &timeout_ms)) {
    return ctx.rb.Error("ERR timeout is not an integer or out of range");
  }
  if (timeout_ms < 0) return ctx.rb.Error("ERR timeout is negative");
  if (replicas > 0 && timeout_ms > 0 && ctx.conn.may_block()) {
    ReplicaAckWaiter waiter(ctx);
    waiter.Wait(shard::NowMs() + timeout_ms);
    if (waiter.ReplyIfUnblockedWithError(ctx.rb)) return;
  }
  ctx.rb.Integer(0);
}

void CmdTime(ArgSlice, ConnContext& ctx) {
  timeval tv;
  gettimeofday(&tv, nullptr);
  char sec[core::kInt64BufSize], usec[core::kInt64BufSize];
  ctx.rb.ArrayHeader(2);
  ctx.rb.Bulk(std::string_view(sec, core::FormatInt64(tv.tv_sec, sec)));
  ctx.rb.Bulk(std::string_view(usec, core::FormatInt64(tv.tv_usec, usec)));
}

}  // namespace

void RegisterServerFamily(CommandRegistry* r) {
  constexpr uint32_t kW = kWrite, kR = kReadOnly, kF = kFast;
  r->Register({.name = "dbsize", .arity = 1, .flags = kR | kF, .keys = kNoKeys,
               .acl_categories = "keyspace read fast", .on_conn = CmdDbSize,
               .docs = {.group = "server", .since = "1.0.0", .complexity = "O(1)",
                        .summary = "Returns the number of keys in the database.",
                        .tips = "request_policy:all_shards response_policy:agg_sum"}});
  r->Register({.name = "flushdb", .arity = -1, .flags = kW, .keys = kNoKeys,
               .acl_categories = "keyspace write slow dangerous", .on_conn = CmdFlush<false>,
               .docs = {.group = "server", .since = "1.0.0",
                        .complexity = "O(N) where N is the number of keys in the selected database",
                        .summary = "Removes all keys from the current database.",
                        .tips = "request_policy:all_shards response_policy:all_succeeded"}});
  r->Register({.name = "flushall", .arity = -1, .flags = kW, .keys = kNoKeys,
               .acl_categories = "keyspace write slow dangerous", .on_conn = CmdFlush<true>,
               .docs = {.group = "server", .since = "1.0.0",
                        .complexity = "O(N) where N is the total number of keys in all databases",
                        .summary = "Removes all keys from all databases.",
                        .tips = "request_policy:all_shards response_policy:all_succeeded"}});
  r->Register({.name = "swapdb", .arity = 3, .flags = kW | kF, .keys = kNoKeys,
               .acl_categories = "keyspace write fast dangerous", .on_conn = CmdSwapDb,
               .docs = {.group = "server", .since = "4.0.0",
                        .complexity = "O(N) where N is the count of clients watching or blocking "
                                      "on keys from both databases.",
                        .summary = "Exchanges the contents of two databases."}});
  r->Register({.name = "debug", .arity = -2, .flags = kAdmin | kNoScript | kLoading | kStale,
               .keys = kNoKeys, .acl_categories = "admin slow dangerous", .on_conn = CmdDebug,
               .docs = {.group = "server", .since = "1.0.0", .complexity = "Depends on subcommand.",
                        .summary = "Commands for debugging and testing."}});
  r->Register({.name = "wait", .arity = 3, .flags = 0, .keys = kNoKeys,
               .acl_categories = "slow connection", .on_conn = CmdWait,
               .docs = {.group = "generic", .since = "3.0.0", .complexity = "O(1)",
                        .summary = "Waits for writes to be acknowledged by replicas (there are "
                                   "none).",
                        .tips = "request_policy:all_shards response_policy:agg_min"}});
  r->Register({.name = "time", .arity = 1, .flags = kLoading | kStale | kF, .keys = kNoKeys,
               .acl_categories = "fast", .on_conn = CmdTime,
               .docs = {.group = "server", .since = "2.6.0", .complexity = "O(1)",
                        .summary = "Returns the server time.", .tips = "nondeterministic_output"}});
}

}  // namespace shardis::server
