// Persistence commands: SAVE, BGSAVE, LASTSAVE, SHUTDOWN (server/snapshot.h does the saving).
#include <glog/logging.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <optional>

#include <absl/cleanup/cleanup.h>

#include "core/string_util.h"
#include "server/client_pause.h"
#include "server/command.h"
#include "server/connection_state.h"
#include "server/persistence_config.h"
#include "server/aof.h"
#include "server/persistence_status.h"
#include "server/rdb_load.h"
#include "server/shutdown.h"
#include "server/snapshot.h"
#include "shard/shard_set.h"
#include "shard/transaction.h"

namespace shardis::server {

namespace {

std::atomic<bool> g_shutdown_prepared{false};
// Writes are paused for the final save; the process exits well before this.
constexpr int64_t kShutdownPauseMs = 24 * 3600 * 1000;

void CmdSave(ArgSlice, ConnContext& ctx) {
  if (SaveInProgress()) return ctx.rb.Error("ERR Background save already in progress");
  Persistence().saves.fetch_add(1, std::memory_order_relaxed);
  const absl::Status status = SaveSnapshot(RdbFilename());
  if (status.ok()) return ctx.rb.Ok();
  // Redis answers a bare "-ERR" (shared.err); the reason is in the log.
  ctx.rb.Error("ERR");
}

// BGSAVE [SCHEDULE]
void CmdBgsave(ArgSlice args, ConnContext& ctx) {
  if (args.size() > 2 || (args.size() == 2 && !core::EqualsIgnoreCase(args[1], "schedule"))) {
    return ctx.rb.Error(kSyntaxErr);
  }
  if (SaveInProgress()) return ctx.rb.Error("ERR Background save already in progress");
  // Inside EXEC the save must not cut the transaction: it starts once EXEC is over.
  if (shard::Transaction::CurrentExec() != nullptr) {
    ScheduleBackgroundSave();
    return ctx.rb.SimpleString("Background saving scheduled");
  }
  if (!StartBackgroundSave()) return ctx.rb.Error("ERR");
  ctx.rb.SimpleString("Background saving started");
}

void CmdLastSave(ArgSlice, ConnContext& ctx) {
  ctx.rb.Integer(Persistence().last_save_time.load(std::memory_order_relaxed));
}

// SHUTDOWN [NOSAVE | SAVE] [NOW] [FORCE] [ABORT]
void CmdShutdown(ArgSlice args, ConnContext& ctx) {
  ShutdownOptions options;
  bool abort = false, now = false;
  for (size_t i = 1; i < args.size(); ++i) {
    if (core::EqualsIgnoreCase(args[i], "nosave")) {
      options.nosave = true;
    } else if (core::EqualsIgnoreCase(args[i], "save")) {
      options.save = true;
    } else if (core::EqualsIgnoreCase(args[i], "now")) {
      now = true;  // no replicas to wait for: NOW changes nothing here
    } else if (core::EqualsIgnoreCase(args[i], "force")) {
      options.force = true;
    } else if (core::EqualsIgnoreCase(args[i], "abort")) {
      abort = true;
    } else {
      return ctx.rb.Error(kSyntaxErr);
    }
  }
  if ((abort && (options.save || options.nosave || now || options.force)) ||
      (options.save && options.nosave)) {
    return ctx.rb.Error(kSyntaxErr);
  }
  // Without replicas a shutdown never waits, so there is never one to abort.
  if (abort) return ctx.rb.Error("ERR No shutdown in progress.");
  LOG(WARNING) << "User requested shutdown...";
  if (!PrepareShutdown(options).ok()) {
    return ctx.rb.Error("ERR Errors trying to SHUTDOWN. Check logs.");
  }
  // No reply: the connection closes and the process exits (main drains the other clients).
  MarkShutdownPrepared();
  ctx.conn.close_after_reply = true;
  kill(getpid(), SIGTERM);
}

// BGREWRITEAOF, with Redis 7.0's replies.
void CmdBgRewriteAof(ArgSlice, ConnContext& ctx) {
  switch (StartAofRewrite()) {
    case RewriteStart::kStarted:
      return ctx.rb.SimpleString("Background append only file rewriting started");
    case RewriteStart::kScheduled:
      return ctx.rb.SimpleString("Background append only file rewriting scheduled");
    case RewriteStart::kAlreadyRunning:
      return ctx.rb.Error("ERR Background append only file rewriting already in progress");
    case RewriteStart::kFailed:
      break;
  }
  ctx.rb.Error(
      "ERR Can't execute an AOF background rewriting. Please check the server logs for more "
      "information.");
}

}  // namespace

void DebugReload(ArgSlice args, ConnContext& ctx) {
  bool merge = false, flush = true, save = true;
  for (size_t i = 2; i < args.size(); ++i) {
    if (core::EqualsIgnoreCase(args[i], "merge")) {
      merge = true;
    } else if (core::EqualsIgnoreCase(args[i], "noflush")) {
      flush = false;
    } else if (core::EqualsIgnoreCase(args[i], "nosave")) {
      save = false;
    } else {
      return ctx.rb.Error("ERR DEBUG RELOAD only supports the MERGE, NOFLUSH and NOSAVE options.");
    }
  }
  // Redis runs the save, the flush and the load in one go. Here the reload holds every shard
  // from before its save to the end of its load (inside an EXEC, the EXEC's hold does): no write
  // comes between the save and the flush (it would be acknowledged, then lost), and no other
  // reload either (two loads into one dataset met each other's keys: "duplicated key"). The
  // transactions of the save's cut and of the flush nest in the hold.
  std::optional<shard::Transaction> hold;
  if (shard::Transaction::CurrentExec() == nullptr) {
    for (;;) {
      // Redis saves in the foreground even while its child saves; here one save waits for the
      // other, before the hold: a save takes its cut with a transaction over every shard.
      if (save) WaitWhileSaving();
      hold.emplace(0, shard::Transaction::AllShards{}, shard::Transaction::kWrite);
      hold->Run([](shard::TxShard&) {});  // every shard is held once the (empty) step ran
      if (!save || !SaveInProgress()) break;
      hold.reset();  // a save that began meanwhile may be waiting for our shards to take its cut
    }
    shard::Transaction::SetCurrentExec(&*hold);
  }
  const absl::Cleanup unhold = [&] {
    if (hold) shard::Transaction::SetCurrentExec(nullptr);
  };
  if (save && !SaveSnapshot(RdbFilename()).ok()) return ctx.rb.Error("ERR");
  // From here until the load ends, other clients get -LOADING: nobody sees the empty dataset.
  BeginLoading(0);
  if (flush) {
    shard::Transaction tx(0, shard::Transaction::AllShards{}, shard::Transaction::kWrite);
    tx.Run(
        [&](shard::TxShard& t) {
          for (int i = 0; i < shard::Shard::kNumDbs; ++i) t.shard.db(i).Clear();
        },
        /*conclude=*/true);
  }
  LoadResult result;
  const absl::Status status = LoadSnapshot(RdbFilename(), merge, &result);
  if (!status.ok()) {
    EndLoading();  // Redis too serves what was loaded until the error
    LOG(WARNING) << "DEBUG RELOAD: " << status.message();
    return ctx.rb.Error("ERR Error trying to load the RDB dump");
  }
  EndLoading();
  LOG(WARNING) << "DB reloaded by DEBUG RELOAD";
  ctx.rb.Ok();
}

absl::Status PrepareShutdown(const ShutdownOptions& options) {
  // A dataset half loaded must not overwrite the file it comes from.
  const bool loading = Persistence().loading.load();
  const bool save = !loading && !options.nosave && (options.save || !SaveRules().empty());
  HoldAofRewrites(true);
  AbortAndHoldSaves();  // a save in progress (or an AOF rewrite's) would race the final one
  const bool aof = !loading && AppendOnlyOn();
  if (!save && !aof) return absl::OkStatus();  // rewrites stay held: the process ends
  // Writes wait from here on: none is acknowledged after the AOF's last write or the snapshot's
  // cut and then lost at exit (Redis, single-threaded, serves nobody meanwhile).
  PauseClients(shard::NowMs() + kShutdownPauseMs, PauseType::kWrite);
  if (aof) {
    LOG(INFO) << "Calling fsync() on the AOF file.";
    FlushAppendOnly();
  }
  if (!save) return absl::OkStatus();
  LOG(INFO) << "Saving the final RDB snapshot before exiting.";
  absl::Status status = SaveSnapshot(RdbFilename(), /*for_shutdown=*/true);
  if (status.ok()) return status;
  if (aof) ResumeAppendOnly();
  ReleaseSaves();  // first: a rewrite let go meanwhile would retry its refused save in a loop
  HoldAofRewrites(false);
  UnpauseClients();
  if (options.force) {
    LOG(WARNING) << "Error trying to save the DB. Exit anyway.";
    return absl::OkStatus();
  }
  LOG(WARNING) << "Error trying to save the DB, can't exit.";
  return status;
}

void MarkShutdownPrepared() { g_shutdown_prepared.store(true); }
bool ShutdownPrepared() { return g_shutdown_prepared.load(); }

void RegisterPersistenceFamily(CommandRegistry* r) {
  r->Register({.name = "save", .arity = 1,
               .flags = kAdmin | kNoScript | kNoAsyncLoading | kNoMulti, .keys = kNoKeys,
               .acl_categories = "admin slow dangerous", .on_conn = CmdSave,
               .docs = {.group = "server", .since = "1.0.0",
                        .complexity = "O(N) where N is the total number of keys in all databases",
                        .summary = "Writes a point-in-time snapshot of every database to the RDB "
                                   "file and waits for it."}});
  r->Register({.name = "bgsave", .arity = -1, .flags = kAdmin | kNoScript | kNoAsyncLoading,
               .keys = kNoKeys,
               .acl_categories = "admin slow dangerous", .on_conn = CmdBgsave,
               .docs = {.group = "server", .since = "1.0.0", .complexity = "O(1)",
                        .summary = "Starts writing a point-in-time snapshot of every database to "
                                   "the RDB file while clients go on."}});
  r->Register({.name = "bgrewriteaof", .arity = 1,
               .flags = kAdmin | kNoScript | kNoAsyncLoading, .keys = kNoKeys,
               .acl_categories = "admin slow dangerous", .on_conn = CmdBgRewriteAof,
               .docs = {.group = "server", .since = "1.0.0", .complexity = "O(1)",
                        .summary = "Writes a new base snapshot of the append-only file while "
                                   "clients go on."}});
  r->Register({.name = "lastsave", .arity = 1, .flags = kLoading | kStale | kFast,
               .keys = kNoKeys, .acl_categories = "admin fast dangerous", .on_conn = CmdLastSave,
               .docs = {.group = "server", .since = "1.0.0", .complexity = "O(1)",
                        .summary = "Returns the Unix time of the last successful save.",
                        .tips = "nondeterministic_output"}});
  r->Register({.name = "shutdown", .arity = -1,
               .flags = kAdmin | kNoScript | kLoading | kStale | kNoMulti | kAllowBusy,
               .keys = kNoKeys,
               .acl_categories = "admin slow dangerous", .on_conn = CmdShutdown,
               .docs = {.group = "server", .since = "1.0.0",
                        .complexity = "O(N) when saving, where N is the total number of keys in "
                                      "all databases when saving data, otherwise O(1)",
                        .summary = "Saves the dataset (when asked or scheduled) and stops the "
                                   "server."}});
}

}  // namespace shardis::server
