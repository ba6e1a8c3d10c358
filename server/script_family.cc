// EVAL, EVALSHA, EVAL_RO, EVALSHA_RO and SCRIPT (docs/scripting.md).
//
// Every thread has its own Lua interpreter and its own copy of the script cache (SHA -> body): a
// script new to the server is added to every thread's cache before EVAL or SCRIPT LOAD replies,
// so that EVALSHA finds it on any connection. Each thread compiles a script the first time it
// runs it there.
//
// A run starts in declared mode (its transaction holds only its KEYS, see script_run.h); a run
// that touches another key aborts, leaves no trace, and runs again holding that key too. A run
// that needs the whole keyspace (or keeps finding keys) runs again holding every shard, and the
// thread then remembers that the script runs that way.
#include <absl/container/flat_hash_map.h>
#include <gflags/gflags.h>

#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "core/lua_interpreter.h"
#include "core/number.h"
#include "core/sha1.h"
#include "core/string_util.h"
#include "server/command.h"
#include "server/command_keys.h"
#include "server/connection_state.h"
#include "server/function_registry.h"
#include "server/script_run.h"
#include "server/server_state.h"
#include "server/subcommand.h"
#include "shard/shard_set.h"

DEFINE_int64(busy_reply_threshold, 5000,
             "milliseconds a script may run before other clients get -BUSY and SCRIPT KILL may "
             "stop it (Redis' busy-reply-threshold, alias lua-time-limit); 0: never busy");

namespace shardis::server {

namespace {

constexpr std::string_view kNoScriptErr = "NOSCRIPT No matching script. Please use EVAL.";

struct CachedScript {
  std::string body;
  uint32_t flags = 0;   // core::ScriptFlag, from the shebang
  bool global = false;  // a run aborted in declared mode: run it over every shard from now on
  // This thread's compiled script (the interpreter is the thread's too), once a run compiled it.
  int compiled = core::LuaInterpreter::kNotCompiled;
};

// One thread's scripts and interpreter. Only its thread touches it.
class ScriptCache {
 public:
  static ScriptCache& current() {
    static thread_local ScriptCache cache;
    return cache;
  }

  core::LuaInterpreter& lua() { return ThreadLua(); }
  CachedScript* Find(std::string_view sha) {
    auto it = scripts_.find(sha);
    return it == scripts_.end() ? nullptr : &it->second;
  }
  void Add(std::string_view sha, std::string_view body, uint32_t flags) {
    if (scripts_.try_emplace(std::string(sha), CachedScript{std::string(body), flags}).second) {
      ++version_;
    }
  }
  void Flush() {
    scripts_.clear();
    lua().Flush();
    ++version_;
  }
  // Changes with every Add and Flush: a CachedScript found while it stays the same is still there
  // (the map moves its entries when it grows).
  uint64_t version() const { return version_; }
  size_t size() const { return scripts_.size(); }
  size_t bytes() const {
    size_t n = 0;
    for (const auto& [sha, script] : scripts_) n += sha.size() + script.body.size();
    return n;
  }

 private:
  absl::flat_hash_map<std::string, CachedScript, core::StringHash, core::StringEq> scripts_;
  uint64_t version_ = 0;
};

// Adds a new script to every thread's cache (a no-op where it is known). *error: Redis' reply
// when the body has a bad shebang or does not compile (then nothing is added).
bool AddScript(std::string_view sha, std::string_view body, std::string* error) {
  size_t offset = 0;
  const uint32_t flags = core::ParseScriptShebang(body, &offset, error);
  if (!error->empty()) return false;
  // Compiled here first, so that a syntax error is the reply and no thread keeps the body.
  if (!ScriptCache::current().lua().Compile(sha, body, error)) return false;
  shard::shard_set->AwaitAll([&](shard::Shard&) { ScriptCache::current().Add(sha, body, flags); });
  return true;
}

// Runs `script`, of this thread's cache under `sha`, with its keys and arguments; the reply goes
// to ctx.rb.
void RunScript(std::string_view sha, CachedScript* script, ArgSlice keys, ArgSlice argv,
               bool read_only_command, ArgSlice args, ConnContext& ctx) {
  ScriptCache& cache = ScriptCache::current();
  // Read before anything that may wait (RefuseScriptRun's eviction may hop): a SCRIPT FLUSH
  // meanwhile would free the entry. The run finds it again unless nothing changed (version).
  const uint64_t version = cache.version();
  const uint32_t flags = script->flags;
  const bool global = script->global;
  const bool compat = flags & core::kScriptEvalCompat;
  if (const std::string refusal = RefuseScriptRun(flags, read_only_command); !refusal.empty()) {
    return ctx.rb.Error(refusal);
  }
  const bool read_only = read_only_command || (!compat && (flags & core::kScriptNoWrites));
  // The run may happen on another thread (the keys' shard's, see RunScriptAtomically): it uses
  // that thread's cache and interpreter, which have every script (AddScript).
  auto run = [&](ScriptRun& host, core::ReplyBuilder& rb) {
    host.set_allow_oom(flags & core::kScriptAllowOom);
    ScriptCache& here = ScriptCache::current();
    CachedScript* known =
        &here == &cache && here.version() == version ? script : here.Find(sha);
    if (known == nullptr) {  // flushed meanwhile
      rb.Error(kNoScriptErr);
      return core::LuaInterpreter::RunStatus::kDone;
    }
    core::LuaInterpreter& lua = here.lua();
    if (known->compiled == core::LuaInterpreter::kNotCompiled) {
      std::string error;
      if (!lua.Compile(sha, known->body, &error)) {
        rb.Error(error);
        return core::LuaInterpreter::RunStatus::kDone;
      }
      known->compiled = lua.CompiledScript(sha);
    }
    return lua.Run(known->compiled, sha, keys, argv, host, rb);
  };
  if (RunScriptAtomically(ctx, keys, read_only, global, args, /*is_function=*/false, run)) {
    if (CachedScript* known = cache.Find(sha)) known->global = true;
  }
}

// The name of the script of an EVAL (the SHA-1 of its body, by_sha false) or an EVALSHA (the SHA
// given, in lower case; empty when it has not 40 characters), and the script when this thread's
// cache has it. The name is the argument itself when that is lower case already (what SCRIPT
// LOAD answers, so what clients send), else written to buf: on the stack, as EVALSHA runs per
// request (an EVAL's body is hashed here and again by its handler).
struct FoundScript {
  std::string_view sha;
  CachedScript* script = nullptr;
};
FoundScript FindScript(std::string_view arg, bool by_sha, char (&buf)[40]) {
  ScriptCache& cache = ScriptCache::current();
  if (!by_sha) {
    const std::string hex = core::Sha1Hex(arg);
    std::copy(hex.begin(), hex.end(), buf);
    const std::string_view sha(buf, 40);
    return {sha, cache.Find(sha)};
  }
  if (arg.size() != 40) return {};
  if (CachedScript* script = cache.Find(arg)) return {arg, script};
  for (size_t i = 0; i < 40; ++i) {
    const char c = arg[i];
    buf[i] = c >= 'A' && c <= 'Z' ? char(c - 'A' + 'a') : c;  // ASCII, no locale call
  }
  const std::string_view sha(buf, 40);
  return {sha, sha == arg ? nullptr : cache.Find(sha)};
}

// CommandSpec::script_shard of EVAL and EVALSHA (and _RO): the keys' shard when the script is in
// this thread's cache and runs in declared mode.
int EvalScriptShard(ArgSlice args, bool by_sha) {
  char sha_buf[40];
  const CachedScript* script = FindScript(args[1], by_sha, sha_buf).script;
  if (script == nullptr || script->global) return -1;
  return DeclaredKeysShard(args);
}
int EvalShard(ArgSlice args) { return EvalScriptShard(args, false); }
int EvalShaShard(ArgSlice args) { return EvalScriptShard(args, true); }

// EVAL script numkeys [key ...] [arg ...], and its kin.
void EvalGeneric(ArgSlice args, ConnContext& ctx, bool by_sha, bool read_only) {
  int64_t numkeys = 0;
  if (!core::ParseInt64(args[2], &numkeys)) return ctx.rb.Error(kNotIntegerErr);
  if (numkeys > int64_t(args.size()) - 3) {
    return ctx.rb.Error("ERR Number of keys can't be greater than number of args");
  }
  if (numkeys < 0) return ctx.rb.Error("ERR Number of keys can't be negative");
  char sha_buf[40];
  auto [sha, script] = FindScript(args[1], by_sha, sha_buf);
  if (script == nullptr) {
    if (by_sha) return ctx.rb.Error(kNoScriptErr);
    std::string error;
    if (!AddScript(sha, args[1], &error)) return ctx.rb.Error(error);
    script = ScriptCache::current().Find(sha);
  }
  RunScript(sha, script, args.subspan(3, size_t(numkeys)), args.subspan(3 + size_t(numkeys)),
            read_only, args, ctx);
}

void CmdEval(ArgSlice args, ConnContext& ctx) { EvalGeneric(args, ctx, false, false); }
void CmdEvalRo(ArgSlice args, ConnContext& ctx) { EvalGeneric(args, ctx, false, true); }
void CmdEvalSha(ArgSlice args, ConnContext& ctx) { EvalGeneric(args, ctx, true, false); }
void CmdEvalShaRo(ArgSlice args, ConnContext& ctx) { EvalGeneric(args, ctx, true, true); }

// ---- SCRIPT

void ScriptLoad(ArgSlice args, ConnContext& ctx) {
  const std::string sha = core::Sha1Hex(args[2]);
  std::string error;
  if (ScriptCache::current().Find(sha) == nullptr && !AddScript(sha, args[2], &error)) {
    return ctx.rb.Error(error);
  }
  ctx.rb.Bulk(sha);
}

void ScriptExists(ArgSlice args, ConnContext& ctx) {
  ScriptCache& cache = ScriptCache::current();
  ctx.rb.ArrayHeader(args.size() - 2);
  for (size_t i = 2; i < args.size(); ++i) {
    ctx.rb.Integer(cache.Find(core::ToLower(args[i])) != nullptr ? 1 : 0);
  }
}

void ScriptFlush(ArgSlice args, ConnContext& ctx) {
  if (args.size() > 3 || (args.size() == 3 && !core::EqualsIgnoreCase(args[2], "sync") &&
                          !core::EqualsIgnoreCase(args[2], "async"))) {
    return ctx.rb.Error("ERR SCRIPT FLUSH only support SYNC|ASYNC option");
  }
  shard::shard_set->AwaitAll([](shard::Shard&) { ScriptCache::current().Flush(); });
  ctx.rb.Ok();
}

void ScriptKill(ArgSlice, ConnContext& ctx) { KillBusyScripts(/*functions=*/false, ctx.rb); }

void ScriptHelp(ArgSlice, ConnContext& ctx) {
  ReplyHelp(ctx.rb, "SCRIPT",
            {"EXISTS <sha1> [<sha1> ...]",
             "    Return information about the existence of the scripts in the script cache.",
             "FLUSH [ASYNC|SYNC]",
             "    Flush the Lua scripts cache. Very dangerous on replicas.",
             "    When called without the optional mode argument, the behavior is determined by "
             "the",
             "    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
             "    * ASYNC: Asynchronously flush the scripts cache.",
             "    * SYNC: Synchronously flush the scripts cache.",
             "KILL", "    Kill the currently executing Lua script.", "LOAD <script>",
             "    Load a script into the scripts cache without executing it."});
}

constexpr uint32_t kScriptCmd = kNoScript | kStale | kSkipMonitor | kNoMandatoryKeys | kScript;

constexpr SubCommand kScriptSubs[] = {
    {.name = "exists", .arity = -3, .flags = kNoScript, .acl_categories = "slow scripting",
     .handler = ScriptExists,
     .docs = {.group = "scripting", .since = "2.6.0",
              .complexity = "O(N) with N being the number of scripts to check (so checking a "
                            "single script is an O(1) operation).",
              .summary = "Tells, for each SHA-1, whether the script cache holds its script.",
              .tips = "request_policy:all_shards response_policy:agg_logical_and"}},
    {.name = "flush", .arity = -2, .flags = kNoScript, .acl_categories = "slow scripting",
     .handler = ScriptFlush,
     .docs = {.group = "scripting", .since = "2.6.0",
              .complexity = "O(N) with N being the number of scripts in cache",
              .summary = "Empties the script cache.",
              .tips = "request_policy:all_nodes response_policy:all_succeeded"}},
    {.name = "load", .arity = 3, .flags = kNoScript | kStale, .acl_categories = "slow scripting",
     .handler = ScriptLoad,
     .docs = {.group = "scripting", .since = "2.6.0",
              .complexity = "O(N) with N being the length in bytes of the script body.",
              .summary = "Compiles a script and keeps it in the script cache under its SHA-1, "
                         "without running it.",
              .tips = "request_policy:all_nodes response_policy:all_succeeded"}},
    {.name = "kill", .arity = 2, .flags = kNoScript | kAllowBusy,
     .acl_categories = "slow scripting", .handler = ScriptKill,
     .docs = {.group = "scripting", .since = "2.6.0", .complexity = "O(1)",
              .summary = "Stops the script running now, if it has not written yet.",
              .tips = "request_policy:all_shards response_policy:one_succeeded"}},
    {.name = "help", .arity = 2, .flags = kLoading | kStale, .acl_categories = "slow scripting",
     .handler = ScriptHelp,
     .docs = {.group = "scripting", .since = "5.0.0", .complexity = "O(1)",
              .summary = "Lists the SCRIPT subcommands."}},
};
constexpr Container kScriptContainer{"script", kScriptSubs};

void CmdScript(ArgSlice args, ConnContext& ctx) { DispatchSub(kScriptContainer, args, ctx); }

}  // namespace

std::optional<bool> ScriptDeclaresWrites(std::string_view command, std::string_view script) {
  uint32_t flags = 0;
  if (command == "fcall" || command == "fcall_ro") {
    const FunctionRegistry::Function* function = FunctionRegistry::current().Find(script);
    if (function == nullptr) return std::nullopt;
    flags = function->info.flags;
  } else if (command == "evalsha" || command == "evalsha_ro") {
    if (script.size() != 40) return std::nullopt;
    const CachedScript* cached = ScriptCache::current().Find(core::ToLower(script));
    if (cached == nullptr) return std::nullopt;
    flags = cached->flags;
  } else if (const CachedScript* cached = ScriptCache::current().Find(core::Sha1Hex(script))) {
    flags = cached->flags;
  } else {
    // Not run yet: its shebang says (a bad one leaves the command's flags, as Redis).
    size_t offset = 0;
    std::string error;
    flags = core::ParseScriptShebang(script, &offset, &error);
    if (!error.empty()) return std::nullopt;
  }
  if (flags & core::kScriptEvalCompat) return std::nullopt;
  return !(flags & core::kScriptNoWrites);
}

ScriptCacheStats ThreadScriptCacheStats() {
  ScriptCacheStats stats;
  const ScriptCache& cache = ScriptCache::current();
  stats.scripts = cache.size();
  stats.script_bytes = cache.bytes();
  const FunctionRegistry& functions = FunctionRegistry::current();
  stats.functions = functions.function_count();
  stats.libraries = functions.libraries().size();
  for (const auto& [name, library] : functions.libraries()) {
    stats.library_bytes += name.size() + library.code.size();
  }
  return stats;
}

void RegisterScriptFamily(CommandRegistry* r) {
  SetBusyReplyThresholdMs(FLAGS_busy_reply_threshold);
  constexpr std::string_view kComplexity = "Depends on the script that is executed.";
  r->Register({.name = "eval", .arity = -3, .flags = kScriptCmd | kMayReplicate,
               .keys = kNoKeys,
               .acl_categories = "slow scripting", .on_conn = CmdEval, .key_finder = ScriptKeys,
               .script_shard = EvalShard,
               .docs = {.group = "scripting", .since = "2.6.0", .complexity = kComplexity,
                        .summary = "Runs a Lua script on the server.",
                        .key_flags = "RW access update"}});
  r->Register({.name = "evalsha", .arity = -3, .flags = kScriptCmd | kMayReplicate,
               .keys = kNoKeys,
               .acl_categories = "slow scripting", .on_conn = CmdEvalSha,
               .key_finder = ScriptKeys,
               .script_shard = EvalShaShard,
               .docs = {.group = "scripting", .since = "2.6.0", .complexity = kComplexity,
                        .summary = "Runs a Lua script of the script cache, named by its SHA-1.",
                        .key_flags = "RW access update"}});
  r->Register({.name = "eval_ro", .arity = -3, .flags = kScriptCmd | kReadOnly, .keys = kNoKeys,
               .acl_categories = "slow scripting", .on_conn = CmdEvalRo,
               .key_finder = ScriptKeys,
               .script_shard = EvalShard,
               .docs = {.group = "scripting", .since = "7.0.0", .complexity = kComplexity,
                        .summary = "Runs a read-only Lua script on the server.",
                        .key_flags = "RO access"}});
  r->Register({.name = "evalsha_ro", .arity = -3, .flags = kScriptCmd | kReadOnly,
               .keys = kNoKeys, .acl_categories = "slow scripting", .on_conn = CmdEvalShaRo,
               .key_finder = ScriptKeys,
               .script_shard = EvalShaShard,
               .docs = {.group = "scripting", .since = "7.0.0", .complexity = kComplexity,
                        .summary = "Runs a read-only Lua script of the script cache, named by "
                                   "its SHA-1.",
                        .key_flags = "RO access"}});
  r->Register({.name = "script", .arity = -2, .flags = 0, .keys = kNoKeys,
               .acl_categories = "slow", .on_conn = CmdScript,
               .docs = {.group = "scripting", .since = "2.6.0",
                        .complexity = "Depends on subcommand.",
                        .summary = "A container for the script cache's commands."},
               .container = &kScriptContainer});
}

}  // namespace shardis::server
