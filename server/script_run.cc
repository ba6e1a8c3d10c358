#include "server/acl_users.h"
#include "server/script_run.h"

#include "server/client_tracking.h"

#include <boost/fiber/operations.hpp>
#include <glog/logging.h>

#include <atomic>
#include <cstring>

#include "core/cycle_clock.h"
#include "core/list.h"
#include "core/number.h"
#include "core/rdb_dump.h"
#include "core/string_util.h"
#include "core/value_object.h"
#include "core/zset.h"
#include "io/proactor.h"
#include "server/command_keys.h"
#include "server/command_stats.h"
#include "server/monitor.h"
#include "server/persistence_status.h"
#include "server/snapshot.h"
#include "server/subcommand.h"
#include "server/server_state.h"
#include "shard/eviction.h"
#include "shard/memory_limit.h"
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

std::atomic<int64_t> g_busy_threshold_ms{5000};
// Busy scripts (EVAL's and functions) on every thread; written only when a script becomes busy
// or ends busy.
std::atomic<int> g_busy_evals{0};
std::atomic<int> g_busy_functions{0};
std::atomic<int>& BusyCounter(bool function) { return function ? g_busy_functions : g_busy_evals; }
// This thread's busy runs (SCRIPT KILL reaches them by a hop to each thread).
thread_local std::vector<ScriptRun*> tl_busy_runs;


}  // namespace

int64_t BusyReplyThresholdMs() { return g_busy_threshold_ms.load(std::memory_order_relaxed); }
void SetBusyReplyThresholdMs(int64_t ms) { g_busy_threshold_ms.store(ms); }
bool ScriptsBusy() {
  return g_busy_evals.load(std::memory_order_relaxed) +
             g_busy_functions.load(std::memory_order_relaxed) >
         0;
}

std::string_view BusyErrorFor(bool function) {
  return function ? "BUSY Redis is busy running a script. You can only call FUNCTION KILL or "
                    "SHUTDOWN NOSAVE."
                  : "BUSY Redis is busy running a script. You can only call SCRIPT KILL or "
                    "SHUTDOWN NOSAVE.";
}

std::string_view BusyScriptError() {
  return BusyErrorFor(g_busy_evals.load(std::memory_order_relaxed) == 0);
}

void KillBusyScripts(bool functions, core::ReplyBuilder& rb) {
  std::vector<ScriptRun::KillOutcome> outcomes(shard::shard_set->size());
  shard::shard_set->AwaitAll(
      [&](shard::Shard& s) { ScriptRun::KillBusy(functions, &outcomes[s.id()]); });
  ScriptRun::KillOutcome all;
  for (const ScriptRun::KillOutcome& o : outcomes) {
    all.killed |= o.killed;
    all.unkillable |= o.unkillable;
    all.other_kind |= o.other_kind;
  }
  if (all.killed) return rb.Ok();
  if (all.unkillable) {
    return rb.Error(
        "UNKILLABLE Sorry the script already executed write commands against the dataset. You "
        "can either wait the script termination or kill the server in a hard way using the "
        "SHUTDOWN NOSAVE command.");
  }
  if (all.other_kind) {
    return rb.Error(BusyErrorFor(!functions));
  }
  rb.Error("NOTBUSY No scripts in execution right now.");
}

std::string RefuseScriptRun(uint32_t flags, bool read_only_command) {
  if (flags & core::kScriptEvalCompat) return {};
  // Redis gives such a script the denyoom flag, so its command is refused as any denyoom one,
  // first (processCommand, before the script's own checks; the text of its own OOM check is never
  // seen).
  if (!(flags & (core::kScriptAllowOom | core::kScriptNoWrites)) &&
      shard::MemoryLimit::maxmemory() != 0 && !shard::AdmitUnderMaxMemory()) {
    return std::string(shard::kOomError);
  }
  if (!(flags & core::kScriptNoWrites)) {
    if (PersistenceGateClosed()) {
      if (const int error = Persistence().aof_write_errno.load(); error != 0) {
        return core::Concat(
            "MISCONF Redis is configured to persist data to AOF, but it's currently unable to "
            "persist to disk. Writable scripts are blocked. Use 'no-writes' flag for read only "
            "scripts. AOF error: ",
            strerror(error));
      }
      if (!WritesDeniedByDiskError().empty()) {
        return "MISCONF Redis is configured to save RDB snapshots, but it's currently unable to "
               "persist to disk. Writable scripts are blocked. Use 'no-writes' flag for read "
               "only scripts.";
      }
    }
    if (read_only_command) {
      return "ERR Can not execute a script with write flag using *_ro command.";
    }
  }
  return {};
}

ScriptRun::ScriptRun(ConnectionState& caller, shard::Transaction& tx, Mode mode,
                     std::span<const std::string_view> keys, bool read_only,
                     shard::JournalUnit* unit, bool is_function)
    : caller_(caller),
      tx_(tx),
      mode_(mode),
      keys_(keys),
      read_only_(read_only),
      unit_(unit),
      db_(caller.db),
      start_tick_(core::CycleClock::Now()),
      is_function_(is_function) {}

ScriptRun::~ScriptRun() {
  if (!monitor_lines_.empty()) [[unlikely]] {
    FeedMonitorLines(monitor_lines_);
    FlushMonitorFeed();
  }
  if (!busy_) return;
  std::erase(tl_busy_runs, this);
  BusyCounter(is_function_).fetch_sub(1);
}

int64_t ScriptRun::ElapsedMs() const {
  return int64_t(core::CycleClock::ToNs(core::CycleClock::Now() - start_tick_) / 1'000'000);
}

core::ScriptHost::Stop ScriptRun::CheckStop() {
  const int64_t threshold = BusyReplyThresholdMs();
  if (!busy_) {
    if (threshold <= 0 || ElapsedMs() < threshold) return Stop::kNo;
    busy_ = true;
    tl_busy_runs.push_back(this);
    BusyCounter(is_function_).fetch_add(1);
    LOG(WARNING) << "Slow script detected: still in execution after " << ElapsedMs()
                 << " milliseconds. You can try killing the script using the SCRIPT KILL command.";
  }
  // Busy: let the thread's other fibers run (their clients get -BUSY, SCRIPT KILL gets in).
  boost::this_fiber::yield();
  return kill_requested_ ? Stop::kKill : Stop::kNo;
}

void KillBusyScriptsForShutdown() { ScriptRun::KillAllBusy(); }

std::optional<BusyScriptInfo> ThisThreadBusyScript() { return ScriptRun::FirstBusy(); }

std::optional<BusyScriptInfo> ScriptRun::FirstBusy() {
  if (tl_busy_runs.empty()) return std::nullopt;
  const ScriptRun* run = tl_busy_runs.front();
  BusyScriptInfo info;
  info.is_function = run->is_function_;
  info.command.assign(run->command_.begin(), run->command_.end());
  info.duration_ms = run->ElapsedMs();
  return info;
}

void ScriptRun::KillAllBusy() {
  for (ScriptRun* run : tl_busy_runs) {
    run->kill_requested_ = true;
    run->killed_for_shutdown_ = true;
  }
}

void ScriptRun::KillBusy(bool functions, KillOutcome* outcome) {
  for (ScriptRun* run : tl_busy_runs) {
    if (run->wrote_) {
      outcome->unkillable = true;
    } else if (run->is_function_ != functions) {
      outcome->other_kind = true;
    } else {
      run->kill_requested_ = true;
      outcome->killed = true;
    }
  }
}

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
  if (caller_.user != nullptr && !caller_.user->unrestricted) [[unlikely]] {
    // The script runs as its caller's user (Redis' scriptVerifyACL); the AOF's client has none.
    const SubCommand* sub =
        spec->container != nullptr && args.size() > 1 ? FindSub(*spec->container, args[1]) : nullptr;
    if (std::string denial = CheckAclCall(caller_, *spec, sub, args, AclLogContext::kLua);
        !denial.empty()) {
      return core::Concat("ERR ACL failure in script: ", denial);
    }
  }
  // Redis' scriptVerifyWriteCommandAllow: a may-replicate command (PUBLISH, PFCOUNT) is a write
  // here too, so CLIENT PAUSE WRITE can let a read-only script run.
  if (read_only_ && (*flags & (kWrite | kMayReplicate))) {
    return "ERR Write commands are not allowed from read-only scripts.";
  }
  return {};
}

bool ScriptRun::IsHeld(std::string_view key) {
  if (keys_.size() + added_keys_.size() <= kLinearKeys) {
    for (std::string_view k : keys_) {
      if (k == key) return true;
    }
    for (const auto& k : added_keys_) {
      if (*k == key) return true;
    }
    return false;
  }
  if (key_set_.empty()) {
    key_set_.insert(keys_.begin(), keys_.end());
    for (const auto& k : added_keys_) key_set_.insert(*k);
  }
  return key_set_.contains(key);
}

bool ScriptRun::Covered(const CommandSpec& spec, uint32_t flags,
                        std::span<const std::string_view> args, std::vector<int>* positions) {
  // Keys a key finder cannot parse, keys found only while the command runs, a keyless command
  // that reads or writes data (DBSIZE, KEYS, FLUSHDB, ...) and another database need every shard.
  if (!CommandKeyPositions(spec, args, positions) ||
      (spec.keys_found_while_running != nullptr && spec.keys_found_while_running(args)) ||
      (positions->empty() && (flags & (kWrite | kReadOnly))) ||
      (!positions->empty() && db_ != tx_.db_index())) {
    needs_every_shard_ = true;
    return false;
  }
  for (int i : *positions) {
    if (IsHeld(args[i])) continue;
    auto key = std::make_unique<std::string>(args[i]);
    if (tx_.TryAddKey(db_, *key)) {
      if (!key_set_.empty()) key_set_.insert(*key);
      added_keys_.push_back(std::move(key));
    } else {
      undeclared_.emplace_back(args[i]);
    }
  }
  return undeclared_.empty();
}

core::ScriptHost::CallResult ScriptRun::Call(std::span<const std::string_view> args,
                                             CallOptions options, std::string* reply) {
  reply->clear();
  const CommandSpec* spec = Registry().Find(args[0]);
  uint32_t flags = 0;
  if (std::string refusal = Refusal(spec, args, &flags); !refusal.empty()) {
    core::ReplyBuilder(reply).UncountedError(refusal);
    return CallResult::kRefused;
  }
  const bool write = flags & kWrite;
  if (write && PersistenceGateClosed()) [[unlikely]] {
    if (const std::string denial = WritesDeniedByDiskError(); !denial.empty()) {
      core::ReplyBuilder(reply).UncountedError(core::Concat("MISCONF ", denial));
      return CallResult::kRefused;
    }
  }
  skip_memory_check_ = allow_oom_ || wrote_;
  wrote_ |= write;
  if (mode_ == Mode::kDeclared) {
    std::vector<int>& positions = positions_;
    positions.clear();
    if (!Covered(*spec, flags, args, &positions)) return CallResult::kAbort;
    if (write && !RunsOnShard(*spec, args)) {
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
  const uint64_t start = CommandClockNow();
  if (RunsOnShard(*spec, args)) {
    bool too_large = false;
    RunOnShard(*spec, args, write, options.resp3, options.propagate, reply, &too_large);
    if (too_large) return CallResult::kAbort;
  } else {
    RunInConnection(*spec, args, options.resp3, options.propagate, reply);
  }
  // Each command a script runs counts in its own statistics and shows in SLOWLOG and MONITOR as
  // the script client's, as in Redis.
  // The script client is made only for SLOWLOG or MONITOR: most calls need none.
  auto client_of = [this]() -> ConnectionState& {
    ConnectionState& client = ScriptClient();
    client.db = db_;  // MONITOR shows the database after the command (a SELECT's new one)
    return client;
  };
  RecordCallOf(*spec, StatsIdOf(*spec, args), CommandClockNow() - start, *reply, 0, args,
               client_of);
  if (MonitorsActive()) [[unlikely]] monitor_lines_ += MonitorLine(client_of(), args);
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
    // The caller waits for the script meanwhile: its tracking state holds still.
    sctx.reader = TrackingReaderOf(caller_);
    sctx.skip_memory_check = skip_memory_check_;
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
  // The handler's transactions run as the caller, and a read remembers its keys for the caller's
  // tracking, as Redis tracks the keys a script's read-only commands read.
  shard::CurrentCommandClient() =
      caller_.AsCommandClient((spec.flags & kReadOnly) ? TrackingReaderOf(caller_) : nullptr);
  spec.on_conn(args, ctx);
  shard::CurrentCommandClient() = {};
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
    c.user = caller_.user;
    c.in_script = true;
  }
  return *script_client_;
}

bool ScriptRun::SaveForUndo(shard::TxShard& t, std::string_view key, uint64_t hash) {
  if (undo_.size() <= kLinearKeys) {
    for (const UndoEntry& e : undo_) {
      if (e.db == db_ && e.key == key) return true;
    }
  } else {
    if (undo_keys_.empty()) {
      for (const UndoEntry& e : undo_) undo_keys_.insert(core::Concat(e.db, ":", e.key));
    }
    if (undo_keys_.contains(core::Concat(db_, ":", key))) return true;
  }
  shard::Db& db = t.shard.db(db_);
  shard::Db::Iterator it = db.Find(key, hash, t.now_ms);
  UndoEntry entry{.sid = t.shard.id(), .db = db_, .key = std::string(key)};
  if (shard::Db::Found(it)) {
    const core::CompactValue& v = it.value();
    if (!CheapToCopy(v)) {
      needs_every_shard_ = true;
      return false;
    }
    entry.existed = true;
    entry.is_string = v.IsString();
    // A copy made of plain bytes (the process allocator), not of this shard's heap: the entry
    // lives on the script's thread and may be dropped there.
    entry.bytes = v.IsString() ? v.ToString() : core::CreateDumpPayload(v, false);
    entry.expire_at_ms = db.ExpireAt(it, key, hash);
  }
  if (!undo_keys_.empty()) undo_keys_.insert(core::Concat(entry.db, ":", entry.key));
  undo_.push_back(std::move(entry));
  return true;
}

void ScriptRun::Undo() {
  monitor_lines_.clear();  // an aborted run's commands did not happen
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
  undo_keys_.clear();
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
  // redis.acl_check_cmd: whether the caller's user may run the command line (not logged).
  const CommandSpec* spec = Registry().Find(args[0]);
  if (spec == nullptr) return -1;
  const SubCommand* sub =
      spec->container != nullptr && args.size() > 1 ? FindSub(*spec->container, args[1]) : nullptr;
  if (caller_.user == nullptr) return 1;  // the AOF's client
  return CheckAclCommand(*caller_.user, *spec, sub, args).denial == AclDenial::kNone ? 1 : 0;
}

namespace {
thread_local std::unique_ptr<core::LuaInterpreter> tl_lua;
}  // namespace

core::LuaInterpreter& ThreadLua() {
  if (!tl_lua) tl_lua = std::make_unique<core::LuaInterpreter>(kRedisVersion, kRedisVersionNum);
  return *tl_lua;
}

size_t ThreadLuaMemory() { return tl_lua ? tl_lua->memory_bytes() : 0; }

namespace {

// A call whose runs keep finding keys they were not given runs over every shard after this many
// attempts with the keys found so far.
constexpr int kMaxKeyDiscoveries = 3;

// The shard that owns every key, or -1 when they are on several shards (or there are none).
int SoleShard(std::span<const std::string_view> keys) {
  int owner = -1;
  for (std::string_view key : keys) {
    const int sid = int(shard::shard_set->ShardOf(key));
    if (owner != -1 && sid != owner) return -1;
    owner = sid;
  }
  return owner;
}

}  // namespace

int DeclaredKeysShard(ArgSlice args) {
  int64_t numkeys = 0;
  if (!core::ParseInt64(args[2], &numkeys) || numkeys < 1 || numkeys > int64_t(args.size()) - 3) {
    return -1;
  }
  return SoleShard(args.subspan(3, size_t(numkeys)));
}

namespace {

// The runs of one call, each over its own transaction: declared mode first (the keys, then also
// those aborted runs met), else global. Writes the reply to *out and the MONITOR lines of the
// run that stands to *monitor_lines. Returns true when the call ended in global mode though asked
// for declared mode.
bool RunOverTransactions(ConnectionState& conn, std::span<const std::string_view> keys,
                         bool read_only, bool global, std::span<const std::string_view> args,
                         bool is_function, ScriptRunFn run_fn, std::string* out,
                         std::string* monitor_lines) {
  ScriptRun::Mode mode = global ? ScriptRun::Mode::kGlobal : ScriptRun::Mode::kDeclared;
  std::vector<std::string> found;  // undeclared keys that aborted runs of this call met
  std::vector<std::string_view> with_found;
  // Every command of the call sees this time, as in Redis 7 (reruns included: nobody saw the
  // aborted runs).
  const int64_t now_ms = shard::NowMs();
  for (int attempt = 0;; ++attempt) {
    std::span<const std::string_view> lock_keys = keys;
    if (!found.empty()) {
      with_found.assign(keys.begin(), keys.end());
      with_found.insert(with_found.end(), found.begin(), found.end());
      lock_keys = with_found;
    }
    // The script's writes are journaled by their effects, as one unit (Redis 7 wraps them in
    // MULTI/EXEC), which the transaction hands to the journal when it concludes.
    shard::JournalUnit unit;
    shard::JournalCommand journal{conn.db, args, &unit};
    shard::JournalCommandScope journal_scope(&journal);
    const auto tx_mode = read_only ? shard::Transaction::kRead : shard::Transaction::kWrite;
    // The run's writes are the caller's (NOLOOP tracking); set here, as this fiber may be a
    // worker on another thread.
    shard::CurrentCommandClient() = conn.AsCommandClient();
    std::optional<shard::Transaction> tx;
    if (mode == ScriptRun::Mode::kGlobal) {
      tx.emplace(conn.db, shard::Transaction::AllShards{}, tx_mode);
    } else {
      tx.emplace(conn.db, lock_keys, tx_mode);
    }
    tx->set_now_ms(now_ms);
    ScriptRun run(conn, *tx, mode, lock_keys, read_only, &unit, is_function);
    run.set_command(args);
    std::string reply;
    core::ReplyBuilder rb(&reply);
    rb.set_resp3(conn.resp3);
    if (run_fn(run, rb) == core::LuaInterpreter::RunStatus::kAborted) {
      // Undo what it wrote while the transaction still holds its keys, then run it again holding
      // the keys it met too, or every shard. Nothing of the aborted run reaches the journal or
      // the client.
      run.Undo();
      tx->set_journaled(false);
      tx->Conclude();
      if (run.needs_every_shard() || attempt + 1 >= kMaxKeyDiscoveries) {
        mode = ScriptRun::Mode::kGlobal;
      } else {
        found.insert(found.end(), run.undeclared_keys().begin(), run.undeclared_keys().end());
      }
      continue;
    }
    if (run.killed_for_shutdown()) {
      run.Undo();
      tx->set_journaled(false);
    }
    tx->Conclude();
    out->append(reply);
    *monitor_lines = run.TakeMonitorLines();
    return mode == ScriptRun::Mode::kGlobal && !global;
  }
}

}  // namespace

bool RunScriptAtomically(ConnContext& ctx, std::span<const std::string_view> keys,
                         bool read_only, bool global, std::span<const std::string_view> args,
                         bool is_function, ScriptRunFn run_fn) {
  ConnectionState& conn = ctx.conn;
  if (shard::Transaction* exec = shard::Transaction::CurrentExec()) {
    // Inside EXEC, which holds every shard for a script: its commands join the EXEC's, and the
    // EXEC's journal unit takes their effects instead of the command itself.
    shard::JournalCommand* journal = shard::CurrentJournalCommand();
    ScriptRun run(conn, *exec, ScriptRun::Mode::kGlobal, keys, read_only, journal->exec_unit,
                  is_function);
    run.set_command(args);
    run_fn(run, ctx.rb);
    journal->effect.None();
    return false;
  }
  // A script whose keys all live on another shard runs there, in a worker fiber of that thread:
  // its commands then need no hop each (one hop there and back in all), and scripts on keys of
  // different shards run on different threads. It only reads the caller's state meanwhile.
  // With one shard, declared mode would buy no parallelism (there is no other thread to run
  // scripts on) and costs its undo copies and key locks: the run holds the shard, as Redis runs
  // every script.
  if (shard::shard_set->size() == 1) global = true;
  const int owner = global ? -1 : SoleShard(keys);
  bool escalated = false;
  std::string monitor_lines;
  if (owner >= 0 && unsigned(owner) != io::Proactor::current()->index()) {
    shard::shard_set->AwaitInWorker(unsigned(owner), [&](shard::Shard&) {
      escalated = RunOverTransactions(conn, keys, read_only, global, args, is_function, run_fn,
                                      ctx.rb.output(), &monitor_lines);
    });
  } else {
    escalated = RunOverTransactions(conn, keys, read_only, global, args, is_function, run_fn,
                                    ctx.rb.output(), &monitor_lines);
  }
  // Back on the caller's thread, after the caller's own line.
  if (!monitor_lines.empty()) [[unlikely]] FeedMonitorLines(monitor_lines);
  // Unless a pipeline's run brought this whole call to the keys' thread: then
  // Connection::FlushQueued logs them.
  if (!conn.deferred_acl_denials.empty()) [[unlikely]] LogDeferredAclDenials(conn);
  return escalated;
}

}  // namespace shardis::server
