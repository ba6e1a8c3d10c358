// ScriptRun: one run of a script, the ScriptHost its redis.call commands go through. The run holds
// a shard::Transaction for its whole life, so the script is atomic: no other client's command
// touches its keys until it ends (docs/scripting.md, "Atomicity").
//
// Two modes:
//   - declared: the transaction holds the script's KEYS only (and the keys earlier attempts of
//     the same call found), so scripts on other keys run in parallel. A command on another key
//     adds it to the transaction when that is safe (Transaction::TryAddKey: before the first
//     command, or a key no one wants on a shard the transaction holds); otherwise it cannot run
//     atomically here: the run aborts, and the caller reruns the script holding that key too. One that needs the whole keyspace, another database, or a value too large
//     to copy makes the caller rerun it in global mode. To make an abort after writes leave no
//     trace, the first write to each key saves the key's value (an undo entry).
//   - global: the transaction holds every shard, as Redis runs every script. Nothing aborts.
// Commands run as EXEC runs its queued commands (multi_family.cc): single-key ones with RunOn on
// their shard, others through their handler with the run's transaction as the enclosing one.
#pragma once

#include <absl/functional/function_ref.h>

#include <absl/container/flat_hash_set.h>

#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/lua_interpreter.h"
#include "server/command.h"
#include "server/connection_state.h"
#include "server/script_stats.h"
#include "shard/journal.h"
#include "shard/transaction.h"

namespace shardis::server {

// busy-reply-threshold (lua-time-limit): after this many milliseconds a running script is busy:
// it lets its thread serve other clients between slices of its work, every command but the
// allow_busy ones gets -BUSY on every thread, and SCRIPT KILL may stop it.
int64_t BusyReplyThresholdMs();
void SetBusyReplyThresholdMs(int64_t ms);
// Whether some script is busy now (one relaxed load; true only while one is), and the -BUSY
// reply for the others (naming SCRIPT KILL, or FUNCTION KILL when only functions are busy).
bool ScriptsBusy();
std::string_view BusyScriptError();
// The -BUSY text that names FUNCTION KILL (function) or SCRIPT KILL.
std::string_view BusyErrorFor(bool function);
// SCRIPT KILL (functions = false) or FUNCTION KILL (true): stops the busy scripts of that kind
// that have not written, on every thread, and replies as Redis does (OK, UNKILLABLE, BUSY for a
// busy script of the other kind, NOTBUSY).
void KillBusyScripts(bool functions, core::ReplyBuilder& rb);
// A busy script on this thread, for FUNCTION STATS' running_script (the first one found).
struct BusyScriptInfo {
  bool is_function = false;
  std::vector<std::string> command;  // the EVAL/FCALL as the client sent it
  int64_t duration_ms = 0;
};
std::optional<BusyScriptInfo> ThisThreadBusyScript();
// At shutdown, on each thread: stops this thread's busy scripts, written or not, and keeps what
// they did out of the journal (SHUTDOWN NOSAVE must not wait for a script that never ends).
void KillBusyScriptsForShutdown();

// Redis' checks before a script with flags (a shebang, a function; not an EVAL of Redis 6's kind,
// core::kScriptEvalCompat) runs: a script that may write is refused while writes fail on disk
// (MISCONF) and by the *_RO commands, and one without allow-oom over maxmemory. The error reply,
// or "" to run it.
std::string RefuseScriptRun(uint32_t script_flags, bool read_only_command);

// Redis' evalGetCommandFlags / fcallGetCommandFlags, for what CLIENT PAUSE WRITE holds back: a
// script with flags (a shebang, or a function) writes unless it declares no-writes, whatever the
// command's own flags say. command: "eval", "evalsha", "fcall" or their _ro forms; script: their
// args[1] (the body, the SHA, the function's name). nullopt when the script has no flags (Redis
// 6's EVAL) or is not known: the command's own flags decide.
std::optional<bool> ScriptDeclaresWrites(std::string_view command, std::string_view script);

class ScriptRun : public core::ScriptHost {
 public:
  enum class Mode { kDeclared, kGlobal };
  // caller: the client running the script. tx: the transaction the run holds (over `keys` in
  // declared mode, over every shard in global mode, or the enclosing EXEC's). unit: where the
  // effects go for the journal (null when the AOF is off). read_only: EVAL_RO or no-writes.
  ScriptRun(ConnectionState& caller, shard::Transaction& tx, Mode mode,
            std::span<const std::string_view> keys, bool read_only, shard::JournalUnit* unit,
            bool is_function);

  ~ScriptRun() override;

  CallResult Call(std::span<const std::string_view> args, CallOptions options,
                  std::string* reply) override;
  Stop CheckStop() override;
  void Log(int level, std::string_view message) override;
  int CheckCommandPermission(std::span<const std::string_view> args) override;

  // The command that runs the script (EVAL, FCALL, ...), for FUNCTION STATS.
  void set_command(std::span<const std::string_view> command) { command_ = command; }
  // The script's allow-oom flag: its deny-oom commands run even over maxmemory.
  void set_allow_oom(bool allow_oom) { allow_oom_ = allow_oom; }
  static std::optional<BusyScriptInfo> FirstBusy();

  // KillBusyScripts on this thread: the kinds of busy runs it found.
  struct KillOutcome {
    bool killed = false;
    bool unkillable = false;
    bool other_kind = false;
  };
  static void KillBusy(bool functions, KillOutcome* outcome);
  static void KillAllBusy();
  // Killed by a shutdown: the run's effects must not reach the journal.
  bool killed_for_shutdown() const { return killed_for_shutdown_; }
  // The MONITOR lines of the run's commands, for the caller's thread to feed after the caller's
  // own line: a run in a worker on another thread would otherwise feed them through that
  // thread's ring to the monitors, which may deliver them before the caller's line.
  std::string TakeMonitorLines() { return std::move(monitor_lines_); }

  // After an aborted run: puts back every key the run wrote, as it was before.
  void Undo();
  // Why the run aborted: keys it was not given (a rerun holding them too may succeed), or
  // something only a run over every shard can do.
  const std::vector<std::string>& undeclared_keys() const { return undeclared_; }
  bool needs_every_shard() const { return needs_every_shard_; }

 private:
  // A key's value before the run first wrote it: a string's bytes, or a DUMP payload.
  struct UndoEntry {
    unsigned sid;
    int db;
    std::string key;
    bool existed = false;
    bool is_string = false;
    std::string bytes = {};
    int64_t expire_at_ms = 0;
  };

  // Why a command cannot run here, as Redis' scriptCall says it (empty: it can).
  std::string Refusal(const CommandSpec* spec, std::span<const std::string_view> args,
                      uint32_t* flags) const;
  // Declared mode: whether the transaction covers the command (its keys are declared, in the
  // transaction's database). When not, records why (undeclared_ or needs_every_shard_).
  bool Covered(const CommandSpec& spec, uint32_t flags, std::span<const std::string_view> args,
               std::vector<int>* positions);
  // Declared mode, before a write: saves the key's value unless saved already. False when the
  // value is too large to copy (the run must abort). On the key's shard.
  bool SaveForUndo(shard::TxShard& t, std::string_view key, uint64_t hash);
  void RunOnShard(const CommandSpec& spec, std::span<const std::string_view> args, bool write,
                  bool resp3, bool propagate, std::string* reply, bool* too_large);
  void RunInConnection(const CommandSpec& spec, std::span<const std::string_view> args,
                       bool resp3, bool propagate, std::string* reply);
  ConnectionState& ScriptClient();

  ConnectionState& caller_;
  shard::Transaction& tx_;
  Mode mode_;
  // The keys the transaction holds: the declared ones, then those added on the way. Usually few,
  // so a linear search (a run must not pay for building a hash set); a set past kLinearKeys.
  static constexpr size_t kLinearKeys = 16;
  std::span<const std::string_view> keys_;
  bool IsHeld(std::string_view key);
  absl::flat_hash_set<std::string_view> key_set_;
  bool read_only_;
  shard::JournalUnit* unit_;
  shard::JournalUnit discarded_;  // where the effects of redis.set_repl(REPL_NONE) calls go
  int db_;                        // SELECT inside the script changes it, not the caller's
  std::vector<UndoEntry> undo_;
  absl::flat_hash_set<std::string> undo_keys_;  // "db:key" of undo_, past kLinearKeys entries
  std::vector<std::string> undeclared_;
  std::vector<int> positions_;  // a command's key positions (reused by the run's calls)
  // Keys the transaction took on the way (TryAddKey); their addresses stay put.
  std::vector<std::unique_ptr<std::string>> added_keys_;
  bool needs_every_shard_ = false;
  bool wrote_ = false;          // a write command ran (Redis' SCRIPT_WRITE_DIRTY)
  bool allow_oom_ = false;      // the script's allow-oom flag
  bool skip_memory_check_ = false;  // for the running command: allow-oom, or wrote_ before it
  // When the run started, on the cycle clock (the busy check reads it every 100,000 Lua
  // instructions; a vDSO clock_gettime per run was ~1% of a pipelined EVALSHA).
  uint64_t start_tick_;
  int64_t ElapsedMs() const;
  bool is_function_;            // FCALL (else EVAL): which KILL stops it, which -BUSY text
  bool busy_ = false;           // in this thread's busy list
  bool kill_requested_ = false;  // SCRIPT KILL
  bool killed_for_shutdown_ = false;
  std::span<const std::string_view> command_;
  // The client the connection-level commands see (Redis' Lua client): the caller's database and
  // identity, the script's protocol, and nothing blocks.
  std::optional<ConnectionState> script_client_;
  // The MONITOR lines of the commands the run made ("[0 lua] ..."), fed when it ends unless
  // taken (TakeMonitorLines) or undone (an aborted run is rerun: its commands show once, from the
  // run that stands).
  std::string monitor_lines_;
};

// This thread's Lua interpreter (one per thread, made on first use): EVAL's scripts and the
// function libraries run in it.
core::LuaInterpreter& ThreadLua();

// redis.log at Redis' default verbosity (notice): debug and verbose messages are dropped.
void LogFromScript(int level, std::string_view message);

// Runs a script (an EVAL body, a function) atomically for the client of ctx; `run` makes one run
// of it with the ScriptRun given and writes its reply to the builder given, on whatever thread
// calls it (so it must use that thread's interpreter). Inside EXEC the run joins the EXEC's
// transaction. Otherwise it starts in declared mode over `keys` (in global mode when `global`),
// on the keys' shard's thread when they all live on one; a declared run that aborts is undone
// and run again holding the keys it met too, or over every shard. Returns true when it ended
// over every shard, so that the caller starts the script's next runs in global mode. args: the
// command, for the journal.
// For CommandSpec::script_shard: the shard that owns every key an EVAL/FCALL-style call declares
// (args[2] is numkeys, the keys follow), or -1 when they are on several shards, there are none, or
// numkeys is not valid (the command replies with its error).
int DeclaredKeysShard(ArgSlice args);

using ScriptRunFn =
    absl::FunctionRef<core::LuaInterpreter::RunStatus(ScriptRun& run, core::ReplyBuilder& rb)>;
bool RunScriptAtomically(ConnContext& ctx, std::span<const std::string_view> keys,
                         bool read_only, bool global, std::span<const std::string_view> args,
                         bool is_function, ScriptRunFn run);

}  // namespace shardis::server
