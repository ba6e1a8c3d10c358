// ScriptRun: one run of a script, the ScriptHost its redis.call commands go through. The run holds
// a shard::Transaction for its whole life, so the script is atomic: no other client's command
// touches its keys until it ends (docs/scripting.md, "Atomicity").
//
// Two modes:
//   - declared: the transaction holds the script's KEYS only, so scripts on other keys run in
//     parallel. A command on any other key (or one that needs the whole keyspace, or another
//     database) cannot run atomically in it: the run aborts, and the caller reruns the script in
//     global mode. To make an abort after writes leave no trace, the first write to each key
//     saves the key's value (an undo entry); a value too large to copy cheaply aborts the run
//     before it is written, as an undeclared key does.
//   - global: the transaction holds every shard, as Redis runs every script. Nothing aborts.
// Commands run as EXEC runs its queued commands (multi_family.cc): single-key ones with RunOn on
// their shard, others through their handler with the run's transaction as the enclosing one.
#pragma once

#include <absl/container/flat_hash_set.h>
#include <absl/functional/function_ref.h>

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/lua_interpreter.h"
#include "server/command.h"
#include "server/connection_state.h"
#include "shard/journal.h"
#include "shard/transaction.h"

namespace shardis::server {

class ScriptRun : public core::ScriptHost {
 public:
  enum class Mode { kDeclared, kGlobal };
  // caller: the client running the script. tx: the transaction the run holds (over `keys` in
  // declared mode, over every shard in global mode, or the enclosing EXEC's). unit: where the
  // effects go for the journal (null when the AOF is off). read_only: EVAL_RO or no-writes.
  ScriptRun(ConnectionState& caller, shard::Transaction& tx, Mode mode,
            std::span<const std::string_view> keys, bool read_only, shard::JournalUnit* unit);

  CallResult Call(std::span<const std::string_view> args, CallOptions options,
                  std::string* reply) override;
  void Log(int level, std::string_view message) override;
  int CheckCommandPermission(std::span<const std::string_view> args) override;

  // After an aborted run: puts back every key the run wrote, as it was before.
  void Undo();

 private:
  // A key's value before the run first wrote it: a string's bytes, or a DUMP payload.
  struct UndoEntry {
    unsigned sid;
    int db;
    std::string key;
    bool existed = false;
    bool is_string = false;
    std::string bytes;
    int64_t expire_at_ms = 0;
  };

  // Why a command cannot run here, as Redis' scriptCall says it (empty: it can).
  std::string Refusal(const CommandSpec* spec, std::span<const std::string_view> args,
                      uint32_t* flags) const;
  // Declared mode: the command's keys are all declared (in the transaction's database).
  bool AllDeclared(const CommandSpec& spec, uint32_t flags,
                   std::span<const std::string_view> args, std::vector<int>* positions) const;
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
  absl::flat_hash_set<std::string_view> declared_;
  bool read_only_;
  shard::JournalUnit* unit_;
  shard::JournalUnit discarded_;  // where the effects of redis.set_repl(REPL_NONE) calls go
  int db_;                        // SELECT inside the script changes it, not the caller's
  std::vector<UndoEntry> undo_;
  absl::flat_hash_set<std::string> saved_keys_;  // "db:key" of the undo entries
  // The client the connection-level commands see (Redis' Lua client): the caller's database and
  // identity, the script's protocol, and nothing blocks.
  std::optional<ConnectionState> script_client_;
};

// This thread's Lua interpreter (one per thread, made on first use): EVAL's scripts and the
// function libraries run in it.
core::LuaInterpreter& ThreadLua();

// redis.log at Redis' default verbosity (notice): debug and verbose messages are dropped.
void LogFromScript(int level, std::string_view message);

// Runs a script (an EVAL body, a function) atomically for the client of ctx; `run` makes one run
// of it with the ScriptRun given and writes its reply to the builder given. Inside EXEC the run
// joins the EXEC's transaction. Otherwise it starts in declared mode over `keys` (in global mode
// when `global`); a declared run that aborts is undone and run again over every shard. Returns
// true when that happened, so that the caller starts the script's next runs in global mode.
// args: the command, for the journal.
using ScriptRunFn =
    absl::FunctionRef<core::LuaInterpreter::RunStatus(ScriptRun& run, core::ReplyBuilder& rb)>;
bool RunScriptAtomically(ConnContext& ctx, std::span<const std::string_view> keys,
                         bool read_only, bool global, std::span<const std::string_view> args,
                         ScriptRunFn run);

}  // namespace shardis::server
