// MIGRATE host port key|"" destination-db timeout [COPY] [REPLACE] [AUTH password]
// [AUTH2 username password] [KEYS key ...]: moves keys to another server, as Redis 7.2's
// migrateCommand (src/cluster.c). The keys are DUMPed under one transaction that holds them for
// the whole call, so no other client changes them between the DUMP and the delete; the target
// gets [AUTH], [SELECT] and one RESTORE per key in one write; a key is deleted here (unless COPY)
// only once the target acknowledged its RESTORE. The connection is MigrateTarget's.
#include <cerrno>
#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/aof_reader.h"
#include "core/number.h"
#include "core/rdb_dump.h"
#include "core/string_util.h"
#include "server/arg_parser.h"
#include "server/command.h"
#include "server/command_keys.h"
#include "server/connection_state.h"
#include "server/key_lookup.h"
#include "server/migrate_target.h"
#include "server/persistence_config.h"
#include "shard/journal.h"
#include "shard/keyspace_events.h"
#include "shard/shard_set.h"
#include "shard/transaction.h"

namespace shardis::server {

namespace {

using shard::Db;

struct MigrateOptions {
  bool copy = false;
  bool replace = false;
  std::optional<std::string_view> username;
  std::optional<std::string_view> password;
  ArgSlice keys;
};

// Redis' option loop: returns the error to reply, or nullopt.
std::optional<std::string_view> ParseOptions(ArgSlice args, MigrateOptions* opts) {
  opts->keys = args.subspan(3, 1);
  for (size_t j = 6; j < args.size(); ++j) {
    const size_t more = args.size() - 1 - j;
    if (core::EqualsIgnoreCase(args[j], "copy")) {
      opts->copy = true;
    } else if (core::EqualsIgnoreCase(args[j], "replace")) {
      opts->replace = true;
    } else if (core::EqualsIgnoreCase(args[j], "auth")) {
      if (more < 1) return kSyntaxErr;
      opts->username.reset();
      opts->password = args[++j];
    } else if (core::EqualsIgnoreCase(args[j], "auth2")) {
      if (more < 2) return kSyntaxErr;
      opts->username = args[++j];
      opts->password = args[++j];
    } else if (core::EqualsIgnoreCase(args[j], "keys")) {
      if (!args[3].empty()) {
        return "ERR When using MIGRATE KEYS option, the key argument must be set to the empty "
               "string";
      }
      opts->keys = args.subspan(j + 1);
      break;
    } else {
      return kSyntaxErr;
    }
  }
  return std::nullopt;
}

// One key as DUMPed: its payload and the TTL its RESTORE carries (0: none).
struct DumpedKey {
  bool found = false;
  std::string payload;
  int64_t ttl_ms = 0;
};

// The request for the target: [AUTH], [SELECT db], one RESTORE per found key.
std::string BuildRequest(const MigrateOptions& opts, bool select, std::string_view db,
                         const std::vector<DumpedKey>& dumped) {
  std::string out;
  if (opts.password) {
    if (opts.username) {
      core::AppendRespCommand(&out, std::vector<std::string_view>{"AUTH", *opts.username,
                                                                  *opts.password});
    } else {
      core::AppendRespCommand(&out, std::vector<std::string_view>{"AUTH", *opts.password});
    }
  }
  if (select) core::AppendRespCommand(&out, std::vector<std::string_view>{"SELECT", db});
  for (size_t i = 0; i < dumped.size(); ++i) {
    if (!dumped[i].found) continue;
    const std::string ttl = std::to_string(dumped[i].ttl_ms);
    std::vector<std::string_view> restore{"RESTORE", opts.keys[i], ttl, dumped[i].payload};
    if (opts.replace) restore.push_back("REPLACE");
    core::AppendRespCommand(&out, restore);
  }
  return out;
}

// What the exchange with the target came to.
struct Exchange {
  std::vector<bool> acked;       // per key: the target restored it
  std::string target_error;      // the first error the target replied, without its '-'
  bool socket_error = false;     // the connection failed part-way
  bool write_error = false;      // ... while writing (else while reading)
  bool nothing_read = false;     // ... before any RESTORE reply came (Redis may then retry)
  int error = 0;                 // -errno of the failure
};

// Sends the request and reads its replies, as Redis: AUTH's and SELECT's replies first, then one
// per RESTORE; an error from AUTH or SELECT is reported at the first RESTORE reply.
Exchange Talk(MigrateTarget& target, const MigrateOptions& opts, bool select,
              std::string_view request, const std::vector<DumpedKey>& dumped,
              std::chrono::milliseconds timeout) {
  Exchange ex;
  ex.acked.assign(dumped.size(), false);
  std::string auth_reply, select_reply, reply;
  if (!target.Write(request, timeout)) {
    ex.socket_error = ex.write_error = ex.nothing_read = true;
  } else if ((opts.password && !target.ReadLine(&auth_reply, timeout)) ||
             (select && !target.ReadLine(&select_reply, timeout))) {
    ex.socket_error = ex.nothing_read = true;
  }
  if (ex.socket_error) {
    ex.error = target.last_error();
    return ex;
  }
  bool first = true;
  for (size_t i = 0; i < dumped.size(); ++i) {
    if (!dumped[i].found) continue;
    if (!target.ReadLine(&reply, timeout)) {
      ex.socket_error = true;
      ex.nothing_read = first;
      ex.error = target.last_error();
      break;
    }
    first = false;
    const std::string* failed = auth_reply.starts_with('-')     ? &auth_reply
                                : select_reply.starts_with('-') ? &select_reply
                                : reply.starts_with('-')        ? &reply
                                                                : nullptr;
    if (failed == nullptr) {
      ex.acked[i] = true;
    } else if (ex.target_error.empty()) {
      ex.target_error = failed->substr(1);
    }
  }
  return ex;
}

void CmdMigrate(ArgSlice args, ConnContext& ctx) {
  MigrateOptions opts;
  if (std::optional<std::string_view> err = ParseOptions(args, &opts)) return ctx.rb.Error(*err);
  int64_t timeout_ms, dbid;
  if (!core::ParseInt64(args[5], &timeout_ms) || !core::ParseInt64(args[4], &dbid)) {
    return ctx.rb.Error(kNotIntegerErr);
  }
  if (timeout_ms <= 0) timeout_ms = 1000;
  const std::chrono::milliseconds timeout(timeout_ms);

  // Held until the end of the call: the DUMP, the exchange and the delete are one step for
  // every other client.
  shard::Transaction tx(ctx.conn.db, opts.keys, shard::Transaction::kWrite);
  std::vector<DumpedKey> dumped(opts.keys.size());
  bool any = false;
  tx.Run([&](shard::TxShard& t) {
    for (uint32_t i : t.keys) {
      Db::Iterator it = LookupRead(t.shard, t.db, tx.key(i), tx.hash(i), t.now_ms);
      if (!Db::Found(it)) continue;
      DumpedKey& d = dumped[i];
      if (const int64_t at = t.db.ExpireAt(it, tx.key(i), tx.hash(i)); at != 0) {
        d.ttl_ms = std::max<int64_t>(at - t.now_ms, 1);  // Redis sends at least 1 ms
      }
      d.payload = core::CreateDumpPayload(it.value(), RdbCompression());
      d.found = true;
    }
  });
  for (const DumpedKey& d : dumped) any |= d.found;
  shard::JournalCommand* journal = shard::CurrentJournalCommand();
  if (!any) {
    ctx.rb.SimpleString("NOKEY");
    return;
  }

  // As Redis: a cached connection that fails before anything was processed (the target closed
  // it while idle) is replaced by a new one once, unless the failure was a timeout.
  Exchange ex;
  for (bool may_retry = true;; may_retry = false) {
    std::unique_ptr<MigrateTarget> target = MigrateTarget::Get(args[1], args[2], timeout);
    if (target == nullptr) {
      return ctx.rb.Error("IOERR error or timeout connecting to the client");
    }
    const bool select = target->selected_db() != dbid;
    const std::string request = BuildRequest(opts, select, std::to_string(dbid), dumped);
    ex = Talk(*target, opts, select, request, dumped, timeout);
    if (ex.socket_error && ex.nothing_read && ex.target_error.empty() && may_retry &&
        ex.error != -ETIMEDOUT) {
      continue;
    }
    if (!ex.socket_error) {
      // On an error from the target, the database it has selected is no longer sure.
      target->set_selected_db(ex.target_error.empty() ? dbid : -1);
      MigrateTarget::Return(std::move(target));
    }
    break;
  }

  // Delete what the target acknowledged (unless COPY), and journal it as DEL, as Redis
  // propagates it.
  std::vector<std::string> del{"DEL"};
  if (!opts.copy) {
    for (size_t i = 0; i < ex.acked.size(); ++i) {
      if (ex.acked[i]) del.emplace_back(opts.keys[i]);
    }
  }
  if (del.size() > 1) {
    tx.Run([&](shard::TxShard& t) {
      for (uint32_t i : t.keys) {
        if (!ex.acked[i] || !t.db.Erase(tx.key(i), tx.hash(i), t.now_ms)) continue;
        t.db.NoteModified(tx.key(i));
        t.shard.AddDirty();
        shard::NotifyKeyspaceEvent(kNotifyGeneric, "del", tx.key(i), t.db.index());
      }
    });
    if (journal != nullptr) journal->effect.Replace(std::move(del));
  }
  tx.Conclude();

  if (!ex.target_error.empty()) {
    return ctx.rb.Error(core::Concat("ERR Target instance replied with error: ",
                                     ex.target_error));
  }
  if (ex.socket_error) {
    return ctx.rb.Error(core::Concat("IOERR error or timeout ",
                                     ex.write_error ? "writing" : "reading",
                                     " to target instance"));
  }
  ctx.rb.Ok();
}

}  // namespace

void RegisterMigrateFamily(CommandRegistry* r) {
  r->Register({.name = "migrate", .arity = -6, .flags = kWrite, .keys = {3, 3, 1},
               .acl_categories = "keyspace write slow dangerous", .on_conn = CmdMigrate,
               .key_finder = MigrateKeys,
               .docs = {.group = "generic", .since = "2.6.0",
                        .complexity = "This command actually executes a DUMP+DEL in the source "
                                      "instance, and a RESTORE in the target instance. See the "
                                      "pages of these commands for time complexity. Also an O(N) "
                                      "data transfer between the two instances is performed.",
                        .summary = "Atomically transfers a key from one Redis instance to "
                                   "another.",
                        .key_flags = "RW access delete",
                        .tips = "nondeterministic_output"}});
}

}  // namespace shardis::server
