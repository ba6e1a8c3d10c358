// LuaInterpreter: the Lua 5.1 state a thread runs scripts in, with the environment Redis 7.0
// gives them (docs/scripting.md): the sandbox, the `redis` library, cjson, bit, struct and
// cmsgpack, and the conversions between Lua values and RESP replies.
//
// One interpreter per thread; nothing here is thread-safe. A script's redis.call may wait for
// other threads (its command's key lives on another shard), and while it waits other fibers of
// the thread may run other scripts in the same interpreter. So every run has its own Lua thread
// (coroutine) and its own KEYS and ARGV, which the compiled chunk receives as locals instead of
// the globals Redis sets: two runs never share mutable state.
//
// The interpreter knows nothing of commands or shards: a run's redis.call goes to its
// ScriptHost, which runs the command and hands back its RESP reply.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/reply_builder.h"

struct lua_State;

namespace shardis::core {

// Redis' script flags (the shebang's `flags=`, FUNCTION's flags).
enum ScriptFlag : uint32_t {
  kScriptNoWrites = 1 << 0,
  kScriptAllowOom = 1 << 1,
  kScriptAllowStale = 1 << 2,
  kScriptNoCluster = 1 << 3,
  kScriptAllowCrossSlot = 1 << 4,
  // No shebang: an EVAL script of Redis 6 style, whose flags come from the commands it runs.
  kScriptEvalCompat = 1 << 5,
};

// Redis' names of the script flags, in the order FUNCTION LIST shows them.
struct ScriptFlagName {
  ScriptFlag flag;
  std::string_view name;
};
inline constexpr ScriptFlagName kScriptFlagNames[] = {
    {kScriptNoWrites, "no-writes"},   {kScriptAllowOom, "allow-oom"},
    {kScriptAllowStale, "allow-stale"}, {kScriptNoCluster, "no-cluster"},
    {kScriptAllowCrossSlot, "allow-cross-slot-keys"}};

// A function a library registered with redis.register_function.
struct LuaFunctionInfo {
  std::string name;
  std::optional<std::string> description;
  uint32_t flags = 0;  // ScriptFlag bits
};

// Parses the "#!lua flags=..." line of an EVAL body. Returns the flags and sets *body_offset to
// where the Lua code starts (0 without a shebang); on a bad shebang, sets *error to Redis'
// message and returns 0.
uint32_t ParseScriptShebang(std::string_view body, size_t* body_offset, std::string* error);

// What a run needs from the server.
class ScriptHost {
 public:
  enum class CallResult {
    kReplied,  // *reply holds the command's RESP reply (an error reply included, counted)
    kRefused,  // *reply holds an error, not counted: the command did not run (the script's
               // reply counts it, if the script fails with it)
    kAbort,    // the run must stop now and leave no trace (the server reruns the script)
  };
  virtual ~ScriptHost() = default;
  // redis.call / redis.pcall: runs the command and writes its reply, in RESP3 when resp3 (the
  // script's redis.setresp), to *reply. A command the script may not run gets an error reply
  // "-ERR ..." as any failing command.
  // propagate: redis.set_repl allows the journal (REPL_AOF is set).
  struct CallOptions {
    bool resp3 = false;
    bool propagate = true;
  };
  virtual CallResult Call(std::span<const std::string_view> args, CallOptions options,
                          std::string* reply) = 0;
  // redis.log at a level (0 debug .. 3 warning) the server keeps.
  virtual void Log(int level, std::string_view message) = 0;
  // redis.acl_check_cmd: 1 when the caller may run the command, 0 when not, -1 when there is
  // no such command.
  virtual int CheckCommandPermission(std::span<const std::string_view> args) = 0;
  // Called every 100,000 Lua instructions (Redis' busy-script check).
  enum class Stop { kNo, kKill, kAbort };
  virtual Stop CheckStop() { return Stop::kNo; }
};

class LuaInterpreter {
 public:
  // version: what redis.REDIS_VERSION says ("7.0.15"); version_num: REDIS_VERSION_NUM.
  LuaInterpreter(std::string_view version, int64_t version_num);
  ~LuaInterpreter();
  LuaInterpreter(const LuaInterpreter&) = delete;
  LuaInterpreter& operator=(const LuaInterpreter&) = delete;

  // Compiles an EVAL body (shebang included) under its SHA-1 (lower-case hex). False, with
  // Redis' error text in *error, when it does not compile. Compiling a known SHA is a no-op.
  bool Compile(std::string_view sha, std::string_view body, std::string* error);
  bool Has(std::string_view sha) const;
  // Forgets every compiled script (SCRIPT FLUSH) and collects the garbage.
  void Flush();

  // Runs a compiled script with its KEYS and ARGV and writes its reply to rb (in rb's protocol,
  // the caller's). kAborted: the host aborted the run (CallResult::kAbort or Stop::kAbort); rb
  // is then untouched and the caller decides what happens.
  enum class RunStatus { kDone, kAborted };
  RunStatus Run(std::string_view sha, std::span<const std::string_view> keys,
                std::span<const std::string_view> argv, ScriptHost& host, ReplyBuilder& rb);
  // The same for a script found before with CompiledScript (a caller that keeps it saves the
  // lookup by SHA per run); sha is what an error names.
  static constexpr int kNotCompiled = -1;
  // The compiled script of sha, valid until Flush, or kNotCompiled.
  int CompiledScript(std::string_view sha) const;
  RunStatus Run(int compiled, std::string_view sha, std::span<const std::string_view> keys,
                std::span<const std::string_view> argv, ScriptHost& host, ReplyBuilder& rb);

  // ---- Function libraries (FUNCTION LOAD, FCALL). A library's functions are closures made by
  // its code, kept in the registry by name. Their environment is one table whose misses go to
  // the load-time API while a library's code runs (Redis' LIBRARY_API: only `redis` with
  // register_function, log and the constants) and to the scripts' globals otherwise, as Redis
  // switches its functions' globals.

  // Runs a library's code (what follows its "#!lua name=..." line, from that line's newline on,
  // so that line numbers stay Redis') in the load-time environment. The functions it registers
  // are kept aside under `library` until CommitLibrary or DiscardLibrary (replacing any kept
  // aside before). False, with Redis' text (without "ERR ") in *error, when the code does not
  // compile, raises, or runs longer than timeout_ms (0: no limit). log_host gets redis.log.
  bool LoadLibrary(std::string_view library, std::string_view code, int64_t timeout_ms,
                   ScriptHost* log_host, std::vector<LuaFunctionInfo>* functions,
                   std::string* error);
  // Makes the functions kept aside for `library` callable, in place of its previous ones.
  void CommitLibrary(std::string_view library);
  void DiscardLibrary(std::string_view library);
  // Forgets a library's functions (FUNCTION DELETE, FLUSH).
  void DeleteLibrary(std::string_view library);
  bool HasFunction(std::string_view name) const;
  // Runs a committed function as callback(keys, args); like Run otherwise (an error names the
  // function where Run names the SHA).
  RunStatus CallFunction(std::string_view name, std::span<const std::string_view> keys,
                         std::span<const std::string_view> args, ScriptHost& host,
                         ReplyBuilder& rb);

  // Bytes the Lua heap uses (INFO used_memory_lua).
  size_t memory_bytes() const;
  size_t script_count() const;

  struct Impl;  // the Lua state and the compiled scripts (lua_interpreter.cc)

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace shardis::core
