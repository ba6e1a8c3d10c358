// MULTI, EXEC, DISCARD, WATCH, UNWATCH.
//
// EXEC runs its queued commands as one shard::Transaction over all their keys (and the WATCHed
// ones): no other client's command on those keys runs in between, on any shard. The transaction
// locks the whole keyspace instead when a queued command's keys cannot be known from its
// arguments alone (a keyless command that reads or writes data such as FLUSHDB or DBSIZE, a
// multi-key command, or SELECT). WATCH registers the key with its shard's WatchTable; any write
// to it (command, transaction, expiry, FLUSHDB) marks the connection dirty, and EXEC then replies
// a null array without running anything.
#include "server/acl_users.h"
#include "server/multi_family.h"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/string_util.h"
#include "server/client_tracking.h"
#include "server/command_stats.h"
#include "server/key_lookup.h"
#include "shard/shard_set.h"
#include "server/monitor.h"
#include "server/subcommand.h"
#include "shard/transaction.h"

namespace shardis::server {

namespace {

constexpr std::string_view kExecAbortErr =
    "EXECABORT Transaction discarded because of previous errors.";

}  // namespace

void DiscardMulti(ConnectionState& conn) {
  conn.multi.active = false;
  conn.multi.aborted = false;
  conn.multi.queue.clear();
}

namespace {

bool IsDataCommand(const MultiState::Queued& q) {
  // A container's flags are its subcommand's: XGROUP CREATE touches data, XGROUP HELP does not.
  // A script may touch any key. DEBUG (RELOAD) saves and replaces the whole dataset with
  // transactions over every shard, which nest only in an EXEC that holds every shard.
  return (CallFlags(*q.spec, q.args.size() > 1 ? q.args[1] : "") &
          (kWrite | kReadOnly | kScript)) ||
         q.spec->name == "debug";
}

void CmdMulti(ArgSlice, ConnContext& ctx) {
  if (ctx.conn.multi.active) return ctx.rb.Error("ERR MULTI calls can not be nested");
  ctx.conn.multi.active = true;
  ctx.rb.Ok();
}

void CmdDiscard(ArgSlice, ConnContext& ctx) {
  if (!ctx.conn.multi.active) return ctx.rb.Error("ERR DISCARD without MULTI");
  DiscardMulti(ctx.conn);
  UnwatchAll(ctx.conn);
  ctx.rb.Ok();
}

// "" when the connection's user may still run a queued command, else Redis' error for EXEC's
// reply (logged in ACL LOG in the MULTI context).
std::string RecheckQueuedAcl(const ConnectionState& conn, const CommandSpec& spec, ArgSlice args) {
  const SubCommand* sub =
      spec.container != nullptr && args.size() > 1 ? FindSub(*spec.container, args[1]) : nullptr;
  const AclCheck check = CheckAclCommand(*conn.user, spec, sub, args);
  if (check.denial == AclDenial::kNone) return "";
  AddAclLogEntry(conn, check.denial, AclLogContext::kMulti,
                 check.denial == AclDenial::kCommand ? AclCommandName(spec, sub)
                                                     : args[check.arg],
                 conn.user->name);
  const std::string_view reason =
      check.denial == AclDenial::kCommand ? "no permission to execute the command or subcommand"
      : check.denial == AclDenial::kKey   ? "no permission to touch the specified keys"
                                          : "no permission to access one of the channels used as "
                                            "arguments";
  return core::Concat(
      "NOPERM ACLs rules changed between the moment the transaction was accumulated and the "
      "EXEC call. This command is no longer allowed for the following reason: ",
      reason);
}

// Runs the queued commands inside tx, each reply an element of EXEC's array.
void RunQueued(shard::Transaction& tx, ConnContext& ctx) {
  ConnectionState& conn = ctx.conn;
  const auto& queue = conn.multi.queue;
  ctx.rb.ArrayHeader(queue.size());
  shard::Transaction::SetCurrentExec(&tx);
  std::vector<std::string_view> args;
  std::string reply;
  // The queued commands' journal records go into the EXEC's unit (see CmdExec).
  shard::JournalUnit* unit = shard::CurrentJournalCommand()->exec_unit;
  const bool journal_on = shard::Shard::current()->journal().on();
  for (const MultiState::Queued& q : queue) {
    args.assign(q.args.begin(), q.args.end());
    if (conn.user != nullptr && !conn.user->unrestricted) [[unlikely]] {
      // The user's rules may have changed since the command was queued (Redis' execCommand).
      if (std::string denial = RecheckQueuedAcl(conn, *q.spec, args); !denial.empty()) {
        ctx.rb.Error(denial);
        continue;
      }
    }
    conn.last_command = q.spec->name;
    conn.last_subcommand = {};
    // Each queued command counts in its own statistics (and SLOWLOG), as in Redis.
    const size_t reply_at = ctx.rb.output()->size();
    // EVAL & co. (skip_monitor) show before the commands their script runs, the others after.
    const bool monitor_first = MonitorsActive() && (q.spec->flags & kSkipMonitor);
    if (monitor_first) [[unlikely]] FeedMonitors(conn, args);
    const uint64_t start = CommandClockNow();
    if (RunsOnShard(*q.spec, args)) {
      const uint64_t hash = core::HashBytes(args[1]);
      const unsigned sid = shard::shard_set->ShardOf(args[1], hash);
      reply.clear();
      const int db_index = conn.db;
      const bool resp3 = conn.resp3;
      tx.RunOn(sid, [&](shard::TxShard& t) {
        core::ReplyBuilder rb;
        rb.set_output(&reply);
        rb.set_resp3(resp3);
        ShardContext sctx{t.shard, t.shard.db(db_index), rb, t.now_ms, hash};
        sctx.journal_unit = unit;
        sctx.reader = TrackingReaderOf(conn);  // the connection waits for the EXEC meanwhile
        // As in Redis, the queued commands neither evict nor meet the OOM check: EXEC itself did
        // both, before its reply began (an invalidation pushed now would land inside its array).
        sctx.skip_memory_check = true;
        RunShardCommand(*q.spec, args, sctx);
      });
      ctx.rb.output()->append(reply);
    } else {
      const uint64_t dirty = tx.dirty_count();
      const int db_index = conn.db;
      shard::JournalEffect& effect = shard::CurrentJournalCommand()->effect;
      effect.Clear();
      shard::CurrentCommandClient() =
          conn.AsCommandClient((q.spec->flags & kReadOnly) ? TrackingReaderOf(conn) : nullptr);
      q.spec->on_conn(args, ctx);
      shard::CurrentCommandClient() = {};
      if (journal_on && effect.set()) {
        unit->Add(db_index, effect.commands());
      } else if (journal_on && tx.dirty_count() != dirty) {
        unit->Add(db_index, args);
      }
    }
    RecordCall(*q.spec, StatsIdOf(*q.spec, ArgSlice(args)), CommandClockNow() - start,
               *ctx.rb.output(), reply_at, args, conn);
    if (MonitorsActive() && !monitor_first) [[unlikely]] FeedMonitors(conn, args);
  }
  shard::Transaction::SetCurrentExec(nullptr);
}

void CmdExec(ArgSlice, ConnContext& ctx) {
  ConnectionState& conn = ctx.conn;
  if (!conn.multi.active) return ctx.rb.Error("ERR EXEC without MULTI");
  if (conn.multi.aborted) {
    DiscardMulti(conn);
    UnwatchAll(conn);
    return ctx.rb.Error(kExecAbortErr);
  }
  // The keys to hold: those of single-key commands, unless some command needs the whole keyspace.
  bool global = false;
  std::vector<std::string_view> keys;
  std::vector<std::string_view> args;
  for (const MultiState::Queued& q : conn.multi.queue) {
    args.assign(q.args.begin(), q.args.end());
    if (RunsOnShard(*q.spec, args)) {
      keys.push_back(q.args[1]);
    } else if (IsDataCommand(q) || core::EqualsIgnoreCase(q.spec->name, "select")) {
      global = true;
    }
  }
  const int db_index = conn.db;
  // The journal replays the EXEC as one unit: its commands collect in `unit`, which the EXEC's
  // transaction hands to the journal when it concludes (Transaction::SendJournalPayload).
  shard::JournalUnit unit;
  shard::JournalCommand journal{db_index, {}, &unit};
  shard::JournalCommandScope journal_scope(&journal);
  // The EXEC's writes are the client's.
  shard::CurrentCommandClient() = conn.AsCommandClient();
  std::optional<shard::Transaction> tx;
  if (global) {
    tx.emplace(db_index, shard::Transaction::AllShards{}, shard::Transaction::kWrite);
  } else {
    tx.emplace(db_index, keys, shard::Transaction::kWrite);
  }
  std::vector<std::string_view> watched;
  for (const auto& [db, key] : conn.watched) {
    if (db == db_index) watched.push_back(key);
  }
  tx->AddReadLocks(db_index, watched);

  if (!conn.watched.empty()) {
    // Once the transaction holds its shards, nothing else can write the watched keys; a watched
    // key that expired since WATCH counts as modified (the lookup expires it, which touches it).
    tx->Run([&](shard::TxShard& t) {
      for (const auto& [db, key] : conn.watched) {
        if (shard::shard_set->ShardOf(key) != t.shard.id()) continue;
        t.shard.db(db).Find(key, core::HashBytes(key), t.now_ms);
      }
    });
    if (conn.watch->dirty.load(std::memory_order_relaxed)) {
      tx->Conclude();
      DiscardMulti(conn);
      UnwatchAll(conn);
      return ctx.rb.NullArray();
    }
  }
  // Queued commands are not rejected any more than Redis does: a runtime error is an element of
  // the reply and the other commands still run (no rollback).
  if (conn.multi.queue.empty()) {
    ctx.rb.ArrayHeader(0);
  } else {
    RunQueued(*tx, ctx);
  }
  tx->Conclude();
  DiscardMulti(conn);
  UnwatchAll(conn);
}

void CmdWatch(ArgSlice args, ConnContext& ctx) {
  ConnectionState& conn = ctx.conn;
  if (conn.multi.active) return ctx.rb.Error("ERR WATCH inside MULTI is not allowed");
  if (!conn.watch) conn.watch = std::make_unique<shard::WatchState>();
  shard::WatchState* w = conn.watch.get();
  const int db_index = conn.db;
  for (size_t i = 1; i < args.size(); ++i) {
    std::string_view key = args[i];
    bool known = false;
    for (const auto& [db, k] : conn.watched) known |= db == db_index && k == key;
    if (known) continue;
    shard::shard_set->Await(shard::shard_set->ShardOf(key), [&](shard::Shard& s) {
      shard::Db& db = s.db(db_index);
      db.watches().Add(key, w, db.IsExpired(key, shard::NowMs()));
    });
    conn.watched.emplace_back(db_index, std::string(key));
  }
  ctx.rb.Ok();
}

void CmdUnwatch(ArgSlice, ConnContext& ctx) {
  UnwatchAll(ctx.conn);
  ctx.rb.Ok();
}

}  // namespace

void UnwatchAll(ConnectionState& conn) {
  if (!conn.watch) return;
  shard::WatchState* w = conn.watch.get();
  for (const auto& [db, key] : conn.watched) {
    // Structured bindings are captured by name (clang 14 cannot capture them implicitly).
    shard::shard_set->Await(shard::shard_set->ShardOf(key),
                            [&, db = db, &key = key](shard::Shard& s) {
                              s.db(db).watches().Remove(key, w);
                            });
  }
  conn.watched.clear();
  w->dirty.store(false, std::memory_order_relaxed);
}

bool QueueInMulti(const CommandSpec* spec, ArgSlice args, ConnContext& ctx) {
  const std::string_view name = spec->name;
  if (name == "exec" || name == "discard" || name == "multi" || name == "watch" ||
      name == "quit" || name == "reset") {
    return false;
  }
  if (spec->flags & kNoMulti) {
    ctx.conn.multi.aborted = true;
    ctx.rb.Error("ERR Command not allowed inside a transaction");
    return true;
  }
  ctx.conn.multi.queue.push_back({spec, std::vector<std::string>(args.begin(), args.end())});
  ctx.rb.SimpleString("QUEUED");
  return true;
}

void RegisterMultiFamily(CommandRegistry* r) {
  constexpr uint32_t kTx = kNoScript | kLoading | kStale;
  r->Register({.name = "multi", .arity = 1, .flags = kTx | kFast | kAllowBusy, .keys = kNoKeys,
               .acl_categories = "fast transaction", .on_conn = CmdMulti,
               .docs = {.group = "transactions", .since = "1.2.0", .complexity = "O(1)",
                        .summary = "Starts a transaction: the commands that follow are queued "
                                   "until EXEC."}});
  r->Register({.name = "exec", .arity = 1, .flags = kTx | kSkipSlowlog, .keys = kNoKeys,
               .acl_categories = "slow transaction", .on_conn = CmdExec,
               .docs = {.group = "transactions", .since = "1.2.0",
                        .complexity = "Depends on commands in the transaction",
                        .summary = "Runs the commands queued since MULTI as one atomic "
                                   "transaction."}});
  r->Register({.name = "discard", .arity = 1, .flags = kTx | kFast | kAllowBusy, .keys = kNoKeys,
               .acl_categories = "fast transaction", .on_conn = CmdDiscard,
               .docs = {.group = "transactions", .since = "2.0.0",
                        .complexity = "O(N), when N is the number of queued commands",
                        .summary = "Drops the commands queued since MULTI and leaves the "
                                   "transaction."}});
  r->Register({.name = "watch", .arity = -2, .flags = kTx | kFast | kAllowBusy, .keys = kAllKeys,
               .acl_categories = "fast transaction", .on_conn = CmdWatch,
               .docs = {.group = "transactions", .since = "2.2.0",
                        .complexity = "O(1) for every key.",
                        .summary = "Marks keys so that the next EXEC fails if any of them changes "
                                   "first.", .key_flags = "RO"}});
  r->Register({.name = "unwatch", .arity = 1, .flags = kTx | kFast | kAllowBusy, .keys = kNoKeys,
               .acl_categories = "fast transaction", .on_conn = CmdUnwatch,
               .docs = {.group = "transactions", .since = "2.2.0", .complexity = "O(1)",
                        .summary = "Forgets every key WATCH marked for this connection."}});
}

}  // namespace shardis::server
