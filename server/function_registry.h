// FunctionRegistry: this thread's function libraries (FUNCTION LOAD, FCALL; docs/scripting.md,
// "Functions"), with Redis 7.0's rules and error texts (functions.c).
//
// Every thread holds the same libraries, and its interpreter (ThreadLua) its own closures of
// their functions. They change only in a phase of a transaction over every shard
// (function_family.cc), so every thread applies the same changes in the same order; the calling
// thread checks a change first (commit = false), so that its errors are the reply.
#pragma once

#include <absl/container/flat_hash_map.h>
#include <absl/status/status.h>

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/lua_interpreter.h"
#include "core/string_util.h"

namespace shardis::server {

struct FunctionLibrary {
  std::string code;  // as loaded, its "#!lua name=..." line included
  std::vector<core::LuaFunctionInfo> functions;
};

// FUNCTION RESTORE's policies.
enum class RestorePolicy { kAppend, kReplace, kFlush };

class FunctionRegistry {
 public:
  static FunctionRegistry& current();

  // FUNCTION LOAD [REPLACE] (Redis' functionsCreateWithLibraryCtx): sets *name to the library's
  // name, or returns false with the reply in *error ("ERR ..."). With !commit nothing changes.
  // timeout_ms: how long the library's code may run (0: no limit).
  bool Load(std::string_view code, bool replace, bool commit, int64_t timeout_ms,
            std::string* name, std::string* error);
  // FUNCTION RESTORE (and an RDB file's functions): the libraries of `codes` are loaded as a new
  // set, then joined to the current ones as the policy says (Redis' libraryJoin).
  bool Restore(std::span<const std::string> codes, RestorePolicy policy, bool commit,
               std::string* error);
  bool Delete(std::string_view library);
  void Flush();

  // A function by name (case-insensitive, as Redis looks them up).
  struct Function {
    std::string library;
    core::LuaFunctionInfo info;
    bool global = false;  // a run escalated: its runs start over every shard
  };
  Function* Find(std::string_view name);

  // By name, sorted (Redis' order is its hash table's).
  const std::map<std::string, FunctionLibrary, std::less<>>& libraries() const {
    return libraries_;
  }
  size_t function_count() const { return functions_.size(); }
  // Every library's code (FUNCTION DUMP, snapshots).
  std::vector<std::string> Codes() const;

 private:
  // A library checked and run, its functions kept aside in the interpreter.
  struct Candidate {
    std::string name;
    FunctionLibrary library;
  };
  // The first function of `candidates` whose name a current library (other than those in
  // `replaced`) has, as Redis' error; empty when none.
  std::string Collision(std::span<const Candidate> candidates,
                        std::span<const std::string> replaced) const;
  void Unlink(const std::string& library);
  void Link(Candidate candidate);

  std::map<std::string, FunctionLibrary, std::less<>> libraries_;
  // Lower-case function name -> its entry.
  absl::flat_hash_map<std::string, Function> functions_;
};

// An RDB file's libraries, loaded into every thread's registry (replacing libraries of the same
// names, as Redis' DEBUG RELOAD does). Call from a fiber on a proactor thread.
absl::Status LoadFunctionLibraries(std::span<const std::string> codes);

}  // namespace shardis::server
