#include "server/script_run.h"

#include <glog/logging.h>

#include "core/list.h"
#include "core/rdb_dump.h"
#include "core/string_util.h"
#include "core/value_object.h"
#include "core/zset.h"
#include "server/command_keys.h"
#include "server/command_stats.h"
#include "server/subcommand.h"
#include "server/server_state.h"
#include "shard/shard_set.h"

namespace shardis::server {

namespace {

// The largest string a run copies before writing it; a larger one makes a declared-mode run
// abort and go global instead (the copy would cost more than the parallelism gains).
constexpr size_t kMaxUndoStringBytes = 1 << 20;
// Lists up to this many elements are copied; other collections only in their packed encodings
// (listpack, intset), which their size limits keep small.
constexpr size_t kMaxUndoListElements = 128;

bool CheapToCopy(const core::CompactValue& v) {
  switch (v.type()) {
    case core::ValueType::kString:
      return v.StringSize() <= kMaxUndoStringBytes;
    case core::ValueType::kList:
      return static_cast<const core::List*>(v.object())->size() <= kMaxUndoListElements;
    case core::ValueType::kHash:
    case core::ValueType::kSet:
    case core::ValueType::kZSet: {
      const std::string_view encoding = core::EncodingName(v);
      return encoding == "listpack" || encoding == "intset";
    }
    case core::ValueType::kStream:
      return false;
  }
  return false;
}

}  // namespace

ScriptRun::ScriptRun(ConnectionState& caller, shard::Transaction& tx, Mode mode,
                     std::span<const std::string_view> keys, bool read_only,
                     shard::JournalUnit* unit)
    : caller_(caller),
      tx_(tx),
      mode_(mode),
      declared_(keys.begin(), keys.end()),
      read_only_(read_only),
      unit_(unit),
      db_(caller.db) {}

std::string ScriptRun::Refusal(const CommandSpec* spec, std::span<const std::string_view> args,
                               uint32_t* flags) const {
  if (spec == nullptr) return "ERR Unknown Redis command called from script";
  if (!ArityOk(spec->arity, args.size())) {
    return "ERR Wrong number of args calling Redis command from script";
  }
  *flags = spec->flags;
  if (spec->container != nullptr && args.size() > 1) {
    const SubCommand* sub = FindSub(*spec->container, args[1]);
    if (sub == nullptr) return "ERR Unknown Redis command called from script";
    if (!ArityOk(sub->arity, args.size())) {
      return "ERR Wrong number of args calling Redis command from script";
    }
    *flags = sub->flags;
  }
  if (*flags & kNoScript) return "ERR This Redis command is not allowed from script";
  if (read_only_ && (*flags & kWrite)) {
    return "ERR Write commands are not allowed from read-only scripts.";
  }
  return {};
}

bool ScriptRun::AllDeclared(const CommandSpec& spec, uint32_t flags,
                            std::span<const std::string_view> args,
                            std::vector<int>* positions) const {
  if (!CommandKeyPositions(spec, args, positions)) return false;
  if (positions->empty()) {
    // A keyless command that reads or writes data (DBSIZE, KEYS, FLUSHDB, ...) needs every shard.
    return !(flags & (kWrite | kReadOnly));
  }
  if (db_ != tx_.db_index()) return false;
  for (int i : *positions) {
    if (!declared_.contains(args[i])) return false;
  }
  return true;
}

core::ScriptHost::CallResult ScriptRun::Call(std::span<const std::string_view> args,
                                             CallOptions options, std::string* reply) {
  reply->clear();
  const CommandSpec* spec = Registry().Find(args[0]);
  uint32_t flags = 0;
  if (std::string refusal = Refusal(spec, args, &flags); !refusal.empty()) {
    core::ReplyBuilder(reply).Error(refusal);
    return CallResult::kReplied;
  }
  const bool write = flags & kWrite;
  if (mode_ == Mode::kDeclared) {
    std::vector<int> positions;
    if (!AllDeclared(*spec, flags, args, &positions)) return CallResult::kAbort;
    if (write && spec->on_shard == nullptr) {
      // A multi-key write: save every key it may change first, each on its shard.
      bool too_large = false;
      for (int i : positions) {
        const uint64_t hash = core::HashBytes(args[i]);
        tx_.RunOn(shard::shard_set->ShardOf(args[i], hash), [&](shard::TxShard& t) {
          too_large |= !SaveForUndo(t, args[i], hash);
        });
      }
      if (too_large) return CallResult::kAbort;
    }
  }
  ConnectionState& conn = caller_;
  conn.last_command = spec->name;
  const uint64_t start = CommandClockNow();
  if (spec->on_shard != nullptr) {
    bool too_large = false;
    RunOnShard(*spec, args, write, options.resp3, options.propagate, reply, &too_large);
    if (too_large) return CallResult::kAbort;
  } else {
    RunInConnection(*spec, args, options.resp3, options.propagate, reply);
  }
  // Each command a script runs counts in its own statistics, as in Redis.
  RecordCall(*spec, StatsIdOf(*spec, args), CommandClockNow() - start, IsErrorReply(*reply, 0),
             args, conn);
  return CallResult::kReplied;
}

void ScriptRun::RunOnShard(const CommandSpec& spec, std::span<const std::string_view> args,
                           bool write, bool resp3, bool propagate, std::string* reply,
                           bool* too_large) {
  const uint64_t hash = core::HashBytes(args[1]);
  const unsigned sid = shard::shard_set->ShardOf(args[1], hash);
  shard::JournalUnit* unit = propagate ? unit_ : &discarded_;
  tx_.RunOn(sid, [&](shard::TxShard& t) {
    if (write && mode_ == Mode::kDeclared && !SaveForUndo(t, args[1], hash)) {
      *too_large = true;
      return;
    }
    core::ReplyBuilder rb(reply);
    rb.set_resp3(resp3);
    ShardContext sctx{t.shard, t.shard.db(db_), rb, t.now_ms, hash};
    sctx.journal_unit = unit;
    RunShardCommand(spec, args, sctx);
  });
}

void ScriptRun::RunInConnection(const CommandSpec& spec, std::span<const std::string_view> args,
                                bool resp3, bool propagate, std::string* reply) {
  ConnectionState& client = ScriptClient();
  client.db = db_;
  client.resp3 = resp3;
  core::ReplyBuilder rb(reply);
  rb.set_resp3(resp3);
  ConnContext ctx{client, rb};
  // The handler's own transactions run inside the run's, as EXEC's queued commands do.
  shard::Transaction* previous = shard::Transaction::CurrentExec();
  shard::Transaction::SetCurrentExec(&tx_);
  shard::JournalEffect& effect = shard::CurrentJournalCommand()->effect;
  effect.Clear();
  const uint64_t dirty = tx_.dirty_count();
  const int db = db_;
  spec.on_conn(args, ctx);
  shard::JournalUnit* unit = propagate ? unit_ : &discarded_;
  if (effect.set()) {
    unit->Add(db, effect.commands());
  } else if (tx_.dirty_count() != dirty) {
    unit->Add(db, args);
  }
  effect.Clear();
  shard::Transaction::SetCurrentExec(previous);
  db_ = client.db;  // SELECT inside a script changes the script's database only
}

ConnectionState& ScriptRun::ScriptClient() {
  if (!script_client_) {
    ConnectionState& c = script_client_.emplace();
    c.id = caller_.id;
    c.thread = caller_.thread;
    c.addr = caller_.addr;
    c.name = caller_.name;
    c.in_script = true;
  }
  return *script_client_;
}

bool ScriptRun::SaveForUndo(shard::TxShard& t, std::string_view key, uint64_t hash) {
  std::string id = core::Concat(db_, ":", key);
  if (saved_keys_.contains(id)) return true;
  shard::Db& db = t.shard.db(db_);
  shard::Db::Iterator it = db.Find(key, hash, t.now_ms);
  UndoEntry entry{.sid = t.shard.id(), .db = db_, .key = std::string(key)};
  if (shard::Db::Found(it)) {
    const core::CompactValue& v = it.value();
    if (!CheapToCopy(v)) return false;
    entry.existed = true;
    entry.is_string = v.IsString();
    // A copy made of plain bytes (the process allocator), not of this shard's heap: the entry
    // lives on the script's thread and may be dropped there.
    entry.bytes = v.IsString() ? v.ToString() : core::CreateDumpPayload(v, false);
    entry.expire_at_ms = db.ExpireAt(it, key, hash);
  }
  undo_.push_back(std::move(entry));
  saved_keys_.insert(std::move(id));
  return true;
}

void ScriptRun::Undo() {
  // Newest first, though each key has one entry: the value before the run's first write.
  for (auto e = undo_.rbegin(); e != undo_.rend(); ++e) {
    tx_.RunOn(e->sid, [&](shard::TxShard& t) {
      shard::Db& db = t.shard.db(e->db);
      const uint64_t hash = core::HashBytes(e->key);
      if (!e->existed) {
        db.Erase(e->key, hash, t.now_ms);
        return;
      }
      core::CompactValue value;
      if (e->is_string) {
        value = core::CompactValue::FromString(e->bytes);
      } else {
        const absl::Status decoded = core::DecodeDumpPayload(e->bytes, &value, false);
        CHECK(decoded.ok()) << "undo of a script's write: " << decoded;
      }
      db.Store(e->key, hash, std::move(value), e->expire_at_ms, t.now_ms);
    });
  }
  undo_.clear();
  saved_keys_.clear();
}

void LogFromScript(int level, std::string_view message) {
  // Redis' default verbosity (notice) drops debug and verbose messages.
  if (level >= 3) {
    LOG(WARNING) << message;
  } else if (level == 2) {
    LOG(INFO) << message;
  }
}

void ScriptRun::Log(int level, std::string_view message) { LogFromScript(level, message); }

int ScriptRun::CheckCommandPermission(std::span<const std::string_view> args) {
  // Every user may run every command until ACLs come (issue 18).
  return Registry().Find(args[0]) != nullptr ? 1 : -1;
}

core::LuaInterpreter& ThreadLua() {
  // Redis' REDIS_VERSION_NUM for kRedisVersion (0x00MMmmpp).
  constexpr int64_t kRedisVersionNum = 0x0007000f;
  static thread_local std::unique_ptr<core::LuaInterpreter> lua;
  if (!lua) lua = std::make_unique<core::LuaInterpreter>(kRedisVersion, kRedisVersionNum);
  return *lua;
}

bool RunScriptAtomically(ConnContext& ctx, std::span<const std::string_view> keys,
                         bool read_only, bool global, std::span<const std::string_view> args,
                         ScriptRunFn run_fn) {
  ConnectionState& conn = ctx.conn;
  if (shard::Transaction* exec = shard::Transaction::CurrentExec()) {
    // Inside EXEC, which holds every shard for a script: its commands join the EXEC's, and the
    // EXEC's journal unit takes their effects instead of the command itself.
    shard::JournalCommand* journal = shard::CurrentJournalCommand();
    ScriptRun run(conn, *exec, ScriptRun::Mode::kGlobal, keys, read_only, journal->exec_unit);
    run_fn(run, ctx.rb);
    journal->effect.None();
    return false;
  }

  ScriptRun::Mode mode = global ? ScriptRun::Mode::kGlobal : ScriptRun::Mode::kDeclared;
  for (;;) {
    // The script's writes are journaled by their effects, as one unit (Redis 7 wraps them in
    // MULTI/EXEC), which the transaction hands to the journal when it concludes.
    shard::JournalUnit unit;
    shard::JournalCommand journal{conn.db, args, &unit};
    shard::JournalCommandScope journal_scope(&journal);
    const auto tx_mode = read_only ? shard::Transaction::kRead : shard::Transaction::kWrite;
    std::optional<shard::Transaction> tx;
    if (mode == ScriptRun::Mode::kGlobal) {
      tx.emplace(conn.db, shard::Transaction::AllShards{}, tx_mode);
    } else {
      tx.emplace(conn.db, keys, tx_mode);
    }
    ScriptRun run(conn, *tx, mode, keys, read_only, &unit);
    std::string reply;
    core::ReplyBuilder rb(&reply);
    rb.set_resp3(conn.resp3);
    if (run_fn(run, rb) == core::LuaInterpreter::RunStatus::kAborted) {
      // Undo what it wrote while the transaction still holds its keys, then run it again over
      // every shard. Nothing of the aborted run reaches the journal or the client.
      run.Undo();
      tx->set_journaled(false);
      tx->Conclude();
      mode = ScriptRun::Mode::kGlobal;
      continue;
    }
    tx->Conclude();
    ctx.rb.output()->append(reply);
    return mode == ScriptRun::Mode::kGlobal && !global;
  }
}

}  // namespace shardis::server
