// FUNCTION (LOAD, DELETE, LIST, FLUSH, DUMP, RESTORE, KILL, STATS, HELP), FCALL and FCALL_RO:
// Redis 7.0's functions (docs/scripting.md, "Functions").
//
// Every thread keeps the same libraries (function_registry.h). A change is checked on the
// calling thread first, so that its error is the reply, then applied by every thread in one
// phase of a write transaction over every shard: the threads apply concurrent changes in the
// same order, the journal records the command, and a snapshot's cut sees all of a change or
// none of it. FCALL runs a function as EVAL runs a script (RunScriptAtomically).
#include <absl/functional/function_ref.h>

#include <string>
#include <string_view>
#include <vector>

#include "core/glob.h"
#include "core/number.h"
#include "core/rdb_dump.h"
#include "core/string_util.h"
#include "server/command.h"
#include "server/command_keys.h"
#include "server/connection_state.h"
#include "server/function_registry.h"
#include "server/script_run.h"
#include "server/subcommand.h"
#include "shard/shard.h"
#include "shard/shard_set.h"
#include "shard/transaction.h"

namespace shardis::server {

namespace {

// How long a library's code may run at FUNCTION LOAD (Redis' LOAD_TIMEOUT_MS).
constexpr int64_t kLoadTimeoutMs = 500;

// Runs fn on every thread's registry (see the top of the file). fn returns false with the error
// in *error when its change fails there; every thread fails alike, and this thread's error is
// returned (empty on success). A success counts one change on this thread's shard, as Redis'
// server.dirty++, which journals the command.
std::string ApplyEverywhere(ConnContext& ctx,
                            absl::FunctionRef<bool(FunctionRegistry&, std::string*)> fn) {
  const unsigned self = shard::Shard::current()->id();
  std::vector<std::string> errors(shard::shard_set->size());
  shard::Transaction tx(ctx.conn.db, shard::Transaction::AllShards{}, shard::Transaction::kWrite);
  tx.Run(
      [&](shard::TxShard& t) {
        std::string& error = errors[t.shard.id()];
        if (fn(FunctionRegistry::current(), &error) && t.shard.id() == self) t.shard.AddDirty();
      },
      /*conclude=*/true);
  return errors[self];
}

void FunctionLoad(ArgSlice args, ConnContext& ctx) {
  bool replace = false;
  size_t pos = 2;
  while (pos < args.size() - 1) {
    std::string_view arg = args[pos++];
    if (!core::EqualsIgnoreCase(arg, "replace")) {
      return ctx.rb.Error(core::Concat("ERR Unknown option given: ", arg));
    }
    replace = true;
  }
  if (pos >= args.size()) return ctx.rb.Error("ERR Function code is missing");
  const std::string_view code = args[pos];
  std::string name, error;
  if (!FunctionRegistry::current().Load(code, replace, /*commit=*/false, kLoadTimeoutMs, &name,
                                        &error)) {
    return ctx.rb.Error(error);
  }
  error = ApplyEverywhere(ctx, [&](FunctionRegistry& r, std::string* e) {
    std::string loaded;
    return r.Load(code, replace, /*commit=*/true, 0, &loaded, e);
  });
  if (!error.empty()) return ctx.rb.Error(error);
  ctx.rb.Bulk(name);
}

void FunctionDelete(ArgSlice args, ConnContext& ctx) {
  constexpr std::string_view kNotFound = "ERR Library not found";
  const std::string_view library = args[2];
  if (!FunctionRegistry::current().libraries().contains(library)) return ctx.rb.Error(kNotFound);
  const std::string error = ApplyEverywhere(ctx, [&](FunctionRegistry& r, std::string* e) {
    if (r.Delete(library)) return true;
    *e = kNotFound;
    return false;
  });
  if (!error.empty()) return ctx.rb.Error(error);
  ctx.rb.Ok();
}

void FunctionFlush(ArgSlice args, ConnContext& ctx) {
  if (args.size() > 3) return ctx.rb.Error(SubcommandSyntaxError(args));
  if (args.size() == 3 && !core::EqualsIgnoreCase(args[2], "sync") &&
      !core::EqualsIgnoreCase(args[2], "async")) {
    return ctx.rb.Error("ERR FUNCTION FLUSH only supports SYNC|ASYNC option");
  }
  // Both modes free at once, as FLUSHALL does here.
  ApplyEverywhere(ctx, [](FunctionRegistry& r, std::string*) {
    r.Flush();
    return true;
  });
  ctx.rb.Ok();
}

void ReplyFunctionFlags(core::ReplyBuilder& rb, uint32_t flags) {
  size_t n = 0;
  for (const core::ScriptFlagName& f : core::kScriptFlagNames) n += (flags & f.flag) ? 1 : 0;
  rb.SetHeader(n);
  for (const core::ScriptFlagName& f : core::kScriptFlagNames) {
    if (flags & f.flag) rb.SimpleString(f.name);
  }
}

// FUNCTION LIST [LIBRARYNAME pattern] [WITHCODE]
void FunctionList(ArgSlice args, ConnContext& ctx) {
  bool with_code = false;
  std::optional<std::string_view> pattern;
  for (size_t i = 2; i < args.size(); ++i) {
    if (!with_code && core::EqualsIgnoreCase(args[i], "withcode")) {
      with_code = true;
    } else if (!pattern && core::EqualsIgnoreCase(args[i], "libraryname")) {
      if (i >= args.size() - 1) return ctx.rb.Error("ERR library name argument was not given");
      pattern = args[++i];
    } else {
      return ctx.rb.Error(core::Concat("ERR Unknown argument ", args[i]));
    }
  }
  std::vector<const std::pair<const std::string, FunctionLibrary>*> shown;
  for (const auto& entry : FunctionRegistry::current().libraries()) {
    if (!pattern || core::GlobMatch(*pattern, entry.first)) shown.push_back(&entry);
  }
  core::ReplyBuilder& rb = ctx.rb;
  rb.ArrayHeader(shown.size());
  for (const auto* entry : shown) {
    const FunctionLibrary& lib = entry->second;
    rb.MapHeader(with_code ? 4 : 3);
    rb.Bulk("library_name");
    rb.Bulk(entry->first);
    rb.Bulk("engine");
    rb.Bulk("LUA");
    rb.Bulk("functions");
    rb.ArrayHeader(lib.functions.size());
    for (const core::LuaFunctionInfo& f : lib.functions) {
      rb.MapHeader(3);
      rb.Bulk("name");
      rb.Bulk(f.name);
      rb.Bulk("description");
      if (f.description) {
        rb.Bulk(*f.description);
      } else {
        rb.Null();
      }
      rb.Bulk("flags");
      ReplyFunctionFlags(rb, f.flags);
    }
    if (with_code) {
      rb.Bulk("library_code");
      rb.Bulk(lib.code);
    }
  }
}

void FunctionDump(ArgSlice, ConnContext& ctx) {
  ctx.rb.Bulk(core::CreateFunctionsDumpPayload(FunctionRegistry::current().Codes()));
}

// FUNCTION RESTORE payload [FLUSH|APPEND|REPLACE]
void FunctionRestore(ArgSlice args, ConnContext& ctx) {
  if (args.size() > 4) return ctx.rb.Error(SubcommandSyntaxError(args));
  RestorePolicy policy = RestorePolicy::kAppend;
  if (args.size() == 4) {
    if (core::EqualsIgnoreCase(args[3], "append")) {
      policy = RestorePolicy::kAppend;
    } else if (core::EqualsIgnoreCase(args[3], "replace")) {
      policy = RestorePolicy::kReplace;
    } else if (core::EqualsIgnoreCase(args[3], "flush")) {
      policy = RestorePolicy::kFlush;
    } else {
      return ctx.rb.Error(
          "ERR Wrong restore policy given, value should be either FLUSH, APPEND or REPLACE.");
    }
  }
  std::vector<std::string> codes;
  if (absl::Status s = core::DecodeFunctionsDumpPayload(args[2], &codes); !s.ok()) {
    return ctx.rb.Error(core::Concat("ERR ", s.message()));
  }
  std::string error;
  if (!FunctionRegistry::current().Restore(codes, policy, /*commit=*/false, &error)) {
    return ctx.rb.Error(error);
  }
  error = ApplyEverywhere(ctx, [&](FunctionRegistry& r, std::string* e) {
    return r.Restore(codes, policy, /*commit=*/true, e);
  });
  if (!error.empty()) return ctx.rb.Error(error);
  ctx.rb.Ok();
}

void FunctionKill(ArgSlice, ConnContext& ctx) { KillBusyScripts(/*functions=*/true, ctx.rb); }

void FunctionStats(ArgSlice, ConnContext& ctx) {
  // A script that runs now is seen only once it is busy (before that, nothing else runs while
  // it works in Redis either).
  std::vector<std::optional<BusyScriptInfo>> busy(shard::shard_set->size());
  shard::shard_set->AwaitAll([&](shard::Shard& s) { busy[s.id()] = ThisThreadBusyScript(); });
  const BusyScriptInfo* running = nullptr;
  for (const auto& b : busy) {
    if (!b) continue;
    if (!b->is_function) return ctx.rb.Error(BusyErrorFor(/*function=*/false));
    if (running == nullptr) running = &*b;
  }
  const FunctionRegistry& registry = FunctionRegistry::current();
  size_t functions = 0;
  for (const auto& [name, lib] : registry.libraries()) functions += lib.functions.size();
  core::ReplyBuilder& rb = ctx.rb;
  rb.MapHeader(2);
  rb.Bulk("running_script");
  if (running == nullptr) {
    rb.Null();
  } else {
    rb.MapHeader(3);
    rb.Bulk("name");
    rb.Bulk(running->command.size() > 1 ? running->command[1] : "");
    rb.Bulk("command");
    rb.ArrayHeader(running->command.size());
    for (const std::string& arg : running->command) rb.Bulk(arg);
    rb.Bulk("duration_ms");
    rb.Integer(running->duration_ms);
  }
  rb.Bulk("engines");
  rb.MapHeader(1);
  rb.Bulk("LUA");
  rb.MapHeader(2);
  rb.Bulk("libraries_count");
  rb.Integer(int64_t(registry.libraries().size()));
  rb.Bulk("functions_count");
  rb.Integer(int64_t(functions));
}

void FunctionHelp(ArgSlice, ConnContext& ctx) {
  ReplyHelp(
      ctx.rb, "FUNCTION",
      {"LOAD [REPLACE] <FUNCTION CODE>",
       "    Create a new library with the given library name and code.",
       "DELETE <LIBRARY NAME>",
       "    Delete the given library.",
       "LIST [LIBRARYNAME PATTERN] [WITHCODE]",
       "    Return general information on all the libraries:",
       "    * Library name",
       "    * The engine used to run the Library",
       "    * Library description",
       "    * Functions list",
       "    * Library code (if WITHCODE is given)",
       "    It also possible to get only function that matches a pattern using LIBRARYNAME "
       "argument.",
       "STATS",
       "    Return information about the current function running:",
       "    * Function name",
       "    * Command used to run the function",
       "    * Duration in MS that the function is running",
       "    If no function is running, return nil",
       "    In addition, returns a list of available engines.",
       "KILL",
       "    Kill the current running function.",
       "FLUSH [ASYNC|SYNC]",
       "    Delete all the libraries.",
       "    When called without the optional mode argument, the behavior is determined by the",
       "    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
       "    * ASYNC: Asynchronously flush the libraries.",
       "    * SYNC: Synchronously flush the libraries.",
       "DUMP",
       "    Return a serialized payload representing the current libraries, can be restored "
       "using FUNCTION RESTORE command",
       "RESTORE <PAYLOAD> [FLUSH|APPEND|REPLACE]",
       "    Restore the libraries represented by the given payload, it is possible to give a "
       "restore policy to",
       "    control how to handle existing libraries (default APPEND):",
       "    * FLUSH: delete all existing libraries.",
       "    * APPEND: appends the restored libraries to the existing libraries. On collision, "
       "abort.",
       "    * REPLACE: appends the restored libraries to the existing libraries, On collision, "
       "replace the old",
       "      libraries with the new libraries (notice that even on this option there is a "
       "chance of failure",
       "      in case of functions name collision with another library)."});
}

// FCALL function numkeys [key ...] [arg ...], and FCALL_RO.
void FcallGeneric(ArgSlice args, ConnContext& ctx, bool read_only_command) {
  FunctionRegistry& registry = FunctionRegistry::current();
  const FunctionRegistry::Function* function = registry.Find(args[1]);
  if (function == nullptr) return ctx.rb.Error("ERR Function not found");
  int64_t numkeys = 0;
  if (!core::ParseInt64(args[2], &numkeys)) return ctx.rb.Error("ERR Bad number of keys provided");
  if (numkeys > int64_t(args.size()) - 3) {
    return ctx.rb.Error("ERR Number of keys can't be greater than number of args");
  }
  if (numkeys < 0) return ctx.rb.Error("ERR Number of keys can't be negative");
  const bool no_writes = function->info.flags & core::kScriptNoWrites;
  if (const std::string refusal = RefuseScriptRun(function->info.flags, read_only_command);
      !refusal.empty()) {
    return ctx.rb.Error(refusal);
  }
  // The name as registered: the interpreter knows it so (the lookup ignores case).
  const std::string name = function->info.name;
  ArgSlice keys = args.subspan(3, size_t(numkeys));
  ArgSlice argv = args.subspan(3 + size_t(numkeys));
  const bool allow_oom = function->info.flags & core::kScriptAllowOom;
  auto run = [&](ScriptRun& host, core::ReplyBuilder& rb) {
    host.set_allow_oom(allow_oom);
    return ThreadLua().CallFunction(name, keys, argv, host, rb);
  };
  if (RunScriptAtomically(ctx, keys, read_only_command || no_writes, function->global, args,
                          /*is_function=*/true, run)) {
    // Looked up again: the library may have changed while the function ran.
    if (FunctionRegistry::Function* known = registry.Find(name)) known->global = true;
  }
}

// CommandSpec::script_shard of FCALL and FCALL_RO: the keys' shard when the function is known on
// this thread and runs in declared mode.
int FcallShard(ArgSlice args) {
  const FunctionRegistry::Function* function = FunctionRegistry::current().Find(args[1]);
  if (function == nullptr || function->global) return -1;
  return DeclaredKeysShard(args);
}

void CmdFcall(ArgSlice args, ConnContext& ctx) { FcallGeneric(args, ctx, false); }
void CmdFcallRo(ArgSlice args, ConnContext& ctx) { FcallGeneric(args, ctx, true); }

constexpr std::string_view kAllShardsTips =
    "request_policy:all_shards response_policy:all_succeeded";

constexpr SubCommand kFunctionSubs[] = {
    {.name = "load", .arity = -3, .flags = kWrite | kDenyOom | kNoScript,
     .acl_categories = "write slow scripting", .handler = FunctionLoad,
     .docs = {.group = "scripting", .since = "7.0.0",
              .complexity = "O(1) (considering compilation time is redundant)",
              .summary = "Loads a library of functions, or replaces it.", .tips = kAllShardsTips}},
    {.name = "delete", .arity = 3, .flags = kWrite | kNoScript,
     .acl_categories = "write slow scripting", .handler = FunctionDelete,
     .docs = {.group = "scripting", .since = "7.0.0", .complexity = "O(1)",
              .summary = "Deletes a library and its functions.", .tips = kAllShardsTips}},
    {.name = "list", .arity = -2, .flags = kNoScript, .acl_categories = "slow scripting",
     .handler = FunctionList,
     .docs = {.group = "scripting", .since = "7.0.0",
              .complexity = "O(N) where N is the number of functions",
              .summary = "Describes the libraries and their functions.",
              .tips = "nondeterministic_output_order"}},
    {.name = "flush", .arity = -2, .flags = kWrite | kNoScript,
     .acl_categories = "write slow scripting", .handler = FunctionFlush,
     .docs = {.group = "scripting", .since = "7.0.0",
              .complexity = "O(N) where N is the number of functions deleted",
              .summary = "Deletes every library.", .tips = kAllShardsTips}},
    {.name = "dump", .arity = 2, .flags = kNoScript, .acl_categories = "slow scripting",
     .handler = FunctionDump,
     .docs = {.group = "scripting", .since = "7.0.0",
              .complexity = "O(N) where N is the number of functions",
              .summary = "Serialises every library into a payload for FUNCTION RESTORE."}},
    {.name = "restore", .arity = -3, .flags = kWrite | kDenyOom | kNoScript,
     .acl_categories = "write slow scripting", .handler = FunctionRestore,
     .docs = {.group = "scripting", .since = "7.0.0",
              .complexity = "O(N) where N is the number of functions on the payload",
              .summary = "Loads the libraries of a FUNCTION DUMP payload.",
              .tips = kAllShardsTips}},
    {.name = "kill", .arity = 2, .flags = kNoScript | kAllowBusy,
     .acl_categories = "slow scripting", .handler = FunctionKill,
     .docs = {.group = "scripting", .since = "7.0.0", .complexity = "O(1)",
              .summary = "Stops the function running now, if it has not written yet.",
              .tips = "request_policy:all_shards response_policy:one_succeeded"}},
    {.name = "stats", .arity = 2, .flags = kNoScript | kAllowBusy,
     .acl_categories = "slow scripting", .handler = FunctionStats,
     .docs = {.group = "scripting", .since = "7.0.0", .complexity = "O(1)",
              .summary = "Tells which function runs now, and how many libraries there are.",
              .tips = "nondeterministic_output request_policy:all_shards "
                      "response_policy:special"}},
    {.name = "help", .arity = 2, .flags = kLoading | kStale, .acl_categories = "slow scripting",
     .handler = FunctionHelp,
     .docs = {.group = "scripting", .since = "7.0.0", .complexity = "O(1)",
              .summary = "Lists the FUNCTION subcommands."}},
};
constexpr Container kFunctionContainer{"function", kFunctionSubs};

void CmdFunction(ArgSlice args, ConnContext& ctx) { DispatchSub(kFunctionContainer, args, ctx); }

}  // namespace

void RegisterFunctionFamily(CommandRegistry* r) {
  constexpr uint32_t kFcallFlags = kNoScript | kStale | kSkipMonitor | kNoMandatoryKeys | kScript;
  constexpr std::string_view kComplexity = "Depends on the function that is executed.";
  r->Register({.name = "fcall", .arity = -3, .flags = kFcallFlags | kMayReplicate,
               .keys = kNoKeys,
               .acl_categories = "slow scripting", .on_conn = CmdFcall, .key_finder = ScriptKeys,
               .script_shard = FcallShard,
               .docs = {.group = "scripting", .since = "7.0.0", .complexity = kComplexity,
                        .summary = "Runs a function of a loaded library.",
                        .key_flags = "RW access update"}});
  r->Register({.name = "fcall_ro", .arity = -3, .flags = kFcallFlags | kReadOnly,
               .keys = kNoKeys, .acl_categories = "slow scripting", .on_conn = CmdFcallRo,
               .key_finder = ScriptKeys, .script_shard = FcallShard,
               .docs = {.group = "scripting", .since = "7.0.0", .complexity = kComplexity,
                        .summary = "Runs a read-only function of a loaded library.",
                        .key_flags = "RO access"}});
  r->Register({.name = "function", .arity = -2, .flags = 0, .keys = kNoKeys,
               .acl_categories = "slow", .on_conn = CmdFunction,
               .docs = {.group = "scripting", .since = "7.0.0",
                        .complexity = "Depends on subcommand.",
                        .summary = "A container for the function libraries' commands."},
               .container = &kFunctionContainer});
}

}  // namespace shardis::server
