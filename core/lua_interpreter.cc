#include "core/lua_interpreter.h"

#include <absl/container/flat_hash_map.h>

#include <lua.hpp>

#include <cctype>
#include <cmath>
#include <cstring>
#include <ctime>
#include <limits>

#include "core/double_format.h"
#include "core/lua_cmsgpack.h"
#include "core/lua_struct.h"
#include "core/number.h"
#include "core/sha1.h"
#include "core/string_util.h"

extern "C" {
int luaopen_cjson(lua_State* L);
int luaopen_bit(lua_State* L);
}

namespace shardis::core {

namespace {

constexpr char kReadonlyError[] = "Attempt to modify a readonly table";
// A Lua reply nested deeper than this is cut with an error, as Redis cuts it where Lua's stack
// ends; ours is lower because the conversion recurses on the fiber's stack.
constexpr int kMaxReplyDepth = 500;

// The globals a script sees (Redis 7.0's allow lists); every other global the libraries define is
// removed (print, dofile, loadfile, require, module, ...).
constexpr std::string_view kAllowedGlobals[] = {
    "string",    "cjson",          "bit",          "cmsgpack",   "math",
    "table",     "struct",         "redis",        "xpcall",     "tostring",
    "getfenv",   "setmetatable",   "next",         "assert",     "tonumber",
    "rawequal",  "collectgarbage", "getmetatable", "rawset",     "pcall",
    "coroutine", "type",           "_G",           "select",     "unpack",
    "gcinfo",    "pairs",          "rawget",       "loadstring", "ipairs",
    "_VERSION",  "setfenv",        "load",         "error",      "newproxy"};
// The library tables made read-only (each behind a proxy, see ProtectTable).
constexpr const char* kLibraryTables[] = {"redis", "string", "math",   "table",   "coroutine",
                                          "cjson", "bit",    "struct", "cmsgpack"};

// Redis' math.random: the 48-bit linear congruential generator of drand48 (with its constants
// and its initial state), so that scripts draw the same sequence on every platform.
class Rand48 {
 public:
  void Seed(int32_t seed) { x_ = (uint64_t(uint32_t(seed)) << 16) | 0x330E; }
  int32_t Next() {
    x_ = (0x5DEECE66DULL * x_ + 0xB) & ((1ULL << 48) - 1);
    return int32_t(x_ >> 17);
  }

 private:
  uint64_t x_ = 0x1234ABCD330EULL;
};
constexpr int32_t kRand48Max = std::numeric_limits<int32_t>::max();

}  // namespace

// One script run: what its redis.* calls need.
struct RunState {
  ScriptHost* host = nullptr;
  bool resp3 = false;     // redis.setresp(3)
  bool propagate = true;  // redis.set_repl: REPL_AOF set
  bool aborted = false;
  bool killed = false;
  // redis.call's buffers, reused by the run's calls.
  struct CallBuffers {
    std::vector<std::string> numbers;
    std::vector<std::string_view> args;
    std::string reply;
  } call;
};

struct LuaInterpreter::Impl {
  lua_State* L = nullptr;
  int env_ref = LUA_NOREF;           // the proxy of the globals, every script's environment
  int readonly_ref = LUA_NOREF;      // weak-keyed set of the read-only proxies
  int setmetatable_ref = LUA_NOREF;  // Lua's own setmetatable and rawset, which ours wrap
  int rawset_ref = LUA_NOREF;
  // SHA -> registry ref of the compiled chunk.
  absl::flat_hash_map<std::string, int, StringHash, StringEq> scripts;
  // Lua threads of finished runs, kept for the next ones (with their registry refs).
  std::vector<std::pair<lua_State*, int>> idle_threads;
  // The run whose Lua code executes now. Lua code runs only between a run's start or the return
  // of its host Call and its next Call or its end: each of those points sets it.
  RunState* current = nullptr;
  // The redis.call buffers of finished runs, for the next ones: a run allocates none. (Runs
  // interleave while a command waits for its shard, so each has its own.)
  std::vector<RunState::CallBuffers> spare_call_buffers;
  Rand48 rand;

  // Function libraries (the bottom of this file).
  struct Function {
    LuaFunctionInfo info;
    int ref = LUA_NOREF;  // the callback
  };
  struct Loading {  // the library whose code runs now (FUNCTION LOAD)
    std::vector<Function> functions;
    int64_t deadline_ms = 0;  // 0: none
    ScriptHost* log_host = nullptr;
  };
  int functions_env_ref = LUA_NOREF;   // the environment of every library's code
  int functions_meta_ref = LUA_NOREF;  // its metatable, whose __index switches
  int load_api_ref = LUA_NOREF;        // the load-time globals
  Loading* loading = nullptr;
  absl::flat_hash_map<std::string, std::vector<Function>, StringHash, StringEq> staged_libraries;
  absl::flat_hash_map<std::string, std::vector<Function>, StringHash, StringEq> libraries;
  absl::flat_hash_map<std::string, int, StringHash, StringEq> functions;  // name -> callback ref

  static Impl* Of(lua_State* L) {
    return static_cast<Impl*>(lua_touserdata(L, lua_upvalueindex(1)));
  }
};

namespace {

using Impl = LuaInterpreter::Impl;

// ---- Errors in Redis' shape: a table {err = "CODE message"}.

// The field of an error table made from a command's error reply (Redis' ignore_err_stats_update):
// that error was counted when the command replied it.
constexpr const char* kErrorCounted = "ignore_error_stats_update";

// Pushes the error table for err, "-CODE message" or "message" (code ERR), as Redis'
// luaPushErrorBuff does.
void PushErrorTable(lua_State* L, std::string_view err) {
  std::string code = "ERR";
  std::string_view msg = err;
  if (!err.empty() && err[0] == '-') {
    const size_t space = err.find(' ');
    if (space == std::string_view::npos) {
      msg = err.substr(1);
    } else {
      code = std::string(err.substr(1, space - 1));
      msg = err.substr(space + 1);
    }
  }
  while (!msg.empty() && (msg.back() == '\r' || msg.back() == '\n')) msg.remove_suffix(1);
  while (!msg.empty() && (msg.front() == '\r' || msg.front() == '\n')) msg.remove_prefix(1);
  std::string final_msg = code + " " + std::string(msg);
  lua_newtable(L);
  lua_pushstring(L, "err");
  lua_pushlstring(L, final_msg.data(), final_msg.size());
  lua_settable(L, -3);
}

// Raises the error table for err. Does not return (Lua unwinds with a C++ exception: liblua5.1
// is the C++ build, so destructors of the callers' locals run).
[[noreturn]] void RaiseError(lua_State* L, std::string_view err) {
  PushErrorTable(L, err);
  lua_error(L);
  __builtin_unreachable();
}

std::string_view ToView(lua_State* L, int index) {
  size_t len = 0;
  const char* s = lua_tolstring(L, index, &len);
  return s == nullptr ? std::string_view() : std::string_view(s, len);
}

// ---- RESP reply -> Lua value (redis.call's result). The reply comes from our own commands, so
// it is well formed; the parser still never reads past its end.

class ReplyToLua {
 public:
  ReplyToLua(lua_State* L, std::string_view reply)
      : L_(L), p_(reply.data()), end_(p_ + reply.size()) {}

  void Push() {
    if (p_ >= end_) return lua_pushnil(L_);
    lua_checkstack(L_, 4);
    const char type = *p_++;
    std::string_view line = Line();
    switch (type) {
      case '+':
        lua_newtable(L_);
        lua_pushstring(L_, "ok");
        lua_pushlstring(L_, line.data(), line.size());
        lua_settable(L_, -3);
        return;
      case '-':
        PushErrorTable(L_, "-" + std::string(line));
        return;
      case ':':
        return lua_pushnumber(L_, lua_Number(ParseInt(line)));
      case '$': {
        const int64_t len = ParseInt(line);
        if (len < 0) return lua_pushboolean(L_, 0);
        lua_pushlstring(L_, p_, size_t(len));
        p_ += len + 2;
        return;
      }
      case '*': {
        const int64_t n = ParseInt(line);
        if (n < 0) return lua_pushboolean(L_, 0);
        lua_createtable(L_, int(n), 0);
        for (int64_t i = 1; i <= n; ++i) {
          Push();
          lua_rawseti(L_, -2, int(i));
        }
        return;
      }
      case '%': {
        const int64_t n = ParseInt(line);
        lua_newtable(L_);
        lua_pushstring(L_, "map");
        lua_newtable(L_);
        for (int64_t i = 0; i < n; ++i) {
          Push();
          Push();
          lua_settable(L_, -3);
        }
        lua_settable(L_, -3);
        return;
      }
      case '~': {
        const int64_t n = ParseInt(line);
        lua_newtable(L_);
        lua_pushstring(L_, "set");
        lua_newtable(L_);
        for (int64_t i = 0; i < n; ++i) {
          Push();
          lua_pushboolean(L_, 1);
          lua_settable(L_, -3);
        }
        lua_settable(L_, -3);
        return;
      }
      case '_':
        return lua_pushnil(L_);
      case '#':
        return lua_pushboolean(L_, line == "t");
      case ',': {
        lua_newtable(L_);
        lua_pushstring(L_, "double");
        lua_pushnumber(L_, std::strtod(std::string(line).c_str(), nullptr));
        lua_settable(L_, -3);
        return;
      }
      case '(':
        lua_newtable(L_);
        lua_pushstring(L_, "big_number");
        lua_pushlstring(L_, line.data(), line.size());
        lua_settable(L_, -3);
        return;
      case '=': {
        const int64_t len = ParseInt(line);
        std::string_view body(p_, size_t(len));
        p_ += len + 2;
        lua_newtable(L_);
        lua_pushstring(L_, "verbatim_string");
        lua_newtable(L_);
        lua_pushstring(L_, "string");
        lua_pushlstring(L_, body.data() + 4, body.size() - 4);
        lua_settable(L_, -3);
        lua_pushstring(L_, "format");
        lua_pushlstring(L_, body.data(), 3);
        lua_settable(L_, -3);
        lua_settable(L_, -3);
        return;
      }
      case '|': {  // attributes are not shown to scripts: skip them, then read the reply
        const int64_t n = ParseInt(line);
        for (int64_t i = 0; i < 2 * n; ++i) {
          Push();
          lua_pop(L_, 1);
        }
        return Push();
      }
      default:
        return lua_pushnil(L_);
    }
  }

 private:
  std::string_view Line() {
    const char* start = p_;
    while (p_ < end_ && *p_ != '\r') ++p_;
    std::string_view line(start, size_t(p_ - start));
    p_ = std::min(end_, p_ + 2);
    return line;
  }
  static int64_t ParseInt(std::string_view s) {
    int64_t v = 0;
    bool neg = false;
    size_t i = 0;
    if (!s.empty() && s[0] == '-') neg = true, i = 1;
    for (; i < s.size(); ++i) v = v * 10 + (s[i] - '0');
    return neg ? -v : v;
  }

  lua_State* L_;
  const char* p_;
  const char* end_;
};

// ---- Lua value -> RESP reply (the script's result), Redis' luaReplyToRedisReply.

// Lua numbers become integers by truncation; a value out of int64's range gives what x86's
// conversion gives (INT64_MIN), as in Redis, without the undefined behaviour.
int64_t TruncateNumber(lua_Number d) {
  if (!(d > -9223372036854775808.0 && d < 9223372036854775808.0)) {
    return std::numeric_limits<int64_t>::min();
  }
  return int64_t(d);
}

// Reads table[field] (raw) and leaves it on the stack; returns its type.
int RawField(lua_State* L, const char* field) {
  lua_pushstring(L, field);
  lua_rawget(L, -2);
  return lua_type(L, -1);
}

// The error text of an error value (a table with err, or anything else), Redis'
// luaExtractErrorInformation: its message, and where the error was raised when known.
struct ErrorInfo {
  std::string msg;
  std::string source;
  std::string line;
  bool has_location = false;
  bool counted = false;  // the error of a command the script ran (INFO errorstats has it)
};
ErrorInfo ExtractError(lua_State* L) {
  ErrorInfo info;
  if (lua_isstring(L, -1)) info.msg = "ERR " + std::string(ToView(L, -1));
  if (!lua_istable(L, -1)) return info;
  lua_getfield(L, -1, "err");
  if (lua_isstring(L, -1)) info.msg = std::string(ToView(L, -1));
  lua_pop(L, 1);
  lua_getfield(L, -1, "source");
  const bool has_source = lua_isstring(L, -1);
  if (has_source) info.source = std::string(ToView(L, -1));
  lua_pop(L, 1);
  lua_getfield(L, -1, "line");
  const bool has_line = lua_isstring(L, -1);
  if (has_line) info.line = std::string(ToView(L, -1));
  lua_pop(L, 1);
  info.has_location = has_source && has_line;
  lua_getfield(L, -1, kErrorCounted);
  info.counted = lua_toboolean(L, -1);
  lua_pop(L, 1);
  return info;
}

// An error reply of the script: counted in INFO errorstats unless its command's was.
void ReplyScriptError(ReplyBuilder& rb, const ErrorInfo& info, std::string_view msg) {
  if (info.counted) {
    rb.UncountedError(msg);
  } else {
    rb.Error(msg);
  }
}

std::string MapCrlfToSpaces(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c == '\r' || c == '\n') c = ' ';
  }
  return out;
}

// The number of entries of the table on top of the stack (a map's or a set's).
size_t CountEntries(lua_State* L) {
  size_t n = 0;
  lua_pushnil(L);
  while (lua_next(L, -2) != 0) {
    lua_pop(L, 1);
    ++n;
  }
  return n;
}

void LuaToReply(lua_State* L, ReplyBuilder& rb, bool script_resp3, int depth);

// A table on top of the stack (left there): an error, a status, a RESP3 type ({double=...},
// {map=...}, ...) or an array, in that order of precedence, as Redis tries them.
void TableToReply(lua_State* L, ReplyBuilder& rb, bool script_resp3, int depth) {
  if (RawField(L, "err") == LUA_TSTRING) {
    lua_pop(L, 1);
    const ErrorInfo info = ExtractError(L);
    ReplyScriptError(rb, info, info.msg);
    return;
  }
  lua_pop(L, 1);
  if (RawField(L, "ok") == LUA_TSTRING) {
    rb.SimpleString(MapCrlfToSpaces(ToView(L, -1)));
    lua_pop(L, 1);
    return;
  }
  lua_pop(L, 1);
  if (RawField(L, "double") == LUA_TNUMBER) {
    rb.Double(lua_tonumber(L, -1));
    lua_pop(L, 1);
    return;
  }
  lua_pop(L, 1);
  if (RawField(L, "big_number") == LUA_TSTRING) {
    rb.BigNumber(MapCrlfToSpaces(ToView(L, -1)));
    lua_pop(L, 1);
    return;
  }
  lua_pop(L, 1);
  if (RawField(L, "verbatim_string") == LUA_TTABLE) {
    const bool has_format = RawField(L, "format") == LUA_TSTRING;
    std::string format(ToView(L, -1));
    lua_pop(L, 1);
    if (has_format && RawField(L, "string") == LUA_TSTRING) {
      format.resize(3, ' ');
      rb.Verbatim(ToView(L, -1), format);
      lua_pop(L, 2);
      return;
    }
    if (has_format) lua_pop(L, 1);
  }
  lua_pop(L, 1);
  if (RawField(L, "map") == LUA_TTABLE) {
    rb.MapHeader(CountEntries(L));
    lua_pushnil(L);
    while (lua_next(L, -2) != 0) {
      lua_pushvalue(L, -2);
      LuaToReply(L, rb, script_resp3, depth + 1);  // the key
      LuaToReply(L, rb, script_resp3, depth + 1);  // the value
    }
    lua_pop(L, 1);
    return;
  }
  lua_pop(L, 1);
  if (RawField(L, "set") == LUA_TTABLE) {
    rb.SetHeader(CountEntries(L));
    lua_pushnil(L);
    while (lua_next(L, -2) != 0) {
      lua_pop(L, 1);
      lua_pushvalue(L, -1);
      LuaToReply(L, rb, script_resp3, depth + 1);
    }
    lua_pop(L, 1);
    return;
  }
  lua_pop(L, 1);
  // An array: the elements 1, 2, ... up to the first nil.
  size_t n = 0;
  for (;;) {
    lua_rawgeti(L, -1, int(n + 1));
    const bool end = lua_isnil(L, -1);
    lua_pop(L, 1);
    if (end) break;
    ++n;
  }
  rb.ArrayHeader(n);
  for (size_t i = 1; i <= n; ++i) {
    lua_rawgeti(L, -1, int(i));
    LuaToReply(L, rb, script_resp3, depth + 1);
  }
}

// Converts and pops the value on top of the stack.
void LuaToReply(lua_State* L, ReplyBuilder& rb, bool script_resp3, int depth) {
  if (depth > kMaxReplyDepth || !lua_checkstack(L, 4)) {
    rb.Error("ERR reached lua stack limit");
    lua_pop(L, 1);
    return;
  }
  switch (lua_type(L, -1)) {
    case LUA_TSTRING:
      rb.Bulk(ToView(L, -1));
      break;
    case LUA_TBOOLEAN:
      if (script_resp3) {
        rb.Bool(lua_toboolean(L, -1));
      } else if (lua_toboolean(L, -1)) {
        rb.Integer(1);
      } else {
        rb.Null();
      }
      break;
    case LUA_TNUMBER:
      rb.Integer(TruncateNumber(lua_tonumber(L, -1)));
      break;
    case LUA_TTABLE:
      TableToReply(L, rb, script_resp3, depth);
      break;
    default:
      rb.Null();
  }
  lua_pop(L, 1);
}

// ---- The redis library.

RunState* CurrentRun(lua_State* L, const char* what) {
  RunState* run = Impl::Of(L)->current;
  if (run == nullptr) {
    RaiseError(L, std::string(what) + " can only be called inside a script invocation");
  }
  return run;
}

// The arguments of redis.call and its kin, as strings: numbers formatted into *numbers (Lua's own
// conversion loses precision) as Redis 7.2.5 does, integers in [-2^62, 2^62] as integers and
// anything else with fpconv_dtoa (7.2.0 to 7.2.4 sent 1e9 as "1e+9", which INCRBY then refused;
// 7.0 used "%.17g"); strings as views of the Lua strings (valid while they are on the stack,
// that is during the call); anything else is refused.
bool CollectArgs(lua_State* L, std::vector<std::string>* numbers,
                 std::vector<std::string_view>* args) {
  const int argc = lua_gettop(L);
  numbers->clear();
  numbers->reserve(size_t(argc));  // no reallocation: the views into it stay valid
  args->clear();
  for (int i = 1; i <= argc; ++i) {
    if (lua_type(L, i) == LUA_TNUMBER) {
      const double d = lua_tonumber(L, i);
      char buf[kDoubleBufSize];
      int64_t integer;
      const size_t len = DoubleToInt64Exact(d, &integer) ? FormatInt64(integer, buf)
                                                         : FormatDoubleGrisu2(d, buf);
      args->push_back(numbers->emplace_back(buf, len));
    } else if (lua_type(L, i) == LUA_TSTRING) {
      args->push_back(ToView(L, i));
    } else {
      return false;
    }
  }
  return true;
}

// When the host aborts a run, the run must not go on: every instruction raises from now on, so
// neither pcall nor a coroutine can keep the script going (how Redis makes SCRIPT KILL stick).
void StopHook(lua_State* L, lua_Debug*) {
  lua_sethook(L, StopHook, LUA_MASKLINE, 0);
  RaiseError(L, "Script killed by user with SCRIPT KILL...");
}

int RedisGenericCall(lua_State* L, bool raise) {
  Impl* impl = Impl::Of(L);
  RunState* run = CurrentRun(L, "redis.call/pcall");
  if (lua_gettop(L) == 0) {
    PushErrorTable(L, "Please specify at least one argument for this redis lib call");
    if (raise) lua_error(L);
    return 1;
  }
  if (!CollectArgs(L, &run->call.numbers, &run->call.args)) {
    PushErrorTable(L, "Lua redis lib command arguments must be strings or integers");
    if (raise) lua_error(L);
    return 1;
  }
  std::string& reply = run->call.reply;
  const ScriptHost::CallResult result =
      run->host->Call(run->call.args, {.resp3 = run->resp3, .propagate = run->propagate}, &reply);
  impl->current = run;  // other runs may have executed while the command waited for its shard
  if (result == ScriptHost::CallResult::kAbort) {
    run->aborted = true;
    lua_sethook(L, StopHook, LUA_MASKLINE, 0);
    RaiseError(L, "script aborted");
  }
  lua_settop(L, 0);
  ReplyToLua(L, reply).Push();
  if (!reply.empty() && reply[0] == '-') {
    // The command ran and its error was counted then: as Redis, the script's reply does not
    // count it again should the script fail with it (or return it).
    if (result == ScriptHost::CallResult::kReplied) {
      lua_pushboolean(L, 1);
      lua_setfield(L, -2, kErrorCounted);
    }
    if (raise) lua_error(L);
  }
  return 1;
}

int RedisCall(lua_State* L) { return RedisGenericCall(L, true); }
int RedisPcall(lua_State* L) { return RedisGenericCall(L, false); }

int RedisSha1hex(lua_State* L) {
  if (lua_gettop(L) != 1) RaiseError(L, "wrong number of arguments");
  const std::string hex = Sha1Hex(ToView(L, 1));
  lua_pushlstring(L, hex.data(), hex.size());
  return 1;
}

int RedisErrorReply(lua_State* L) {
  if (lua_gettop(L) != 1 || lua_type(L, -1) != LUA_TSTRING) {
    PushErrorTable(L, "wrong number or type of arguments");
    return 1;
  }
  std::string_view err = ToView(L, 1);
  PushErrorTable(L, !err.empty() && err[0] == '-' ? std::string(err) : "-" + std::string(err));
  return 1;
}

int RedisStatusReply(lua_State* L) {
  if (lua_gettop(L) != 1 || lua_type(L, -1) != LUA_TSTRING) {
    PushErrorTable(L, "wrong number or type of arguments");
    return 1;
  }
  lua_newtable(L);
  lua_pushstring(L, "ok");
  lua_pushvalue(L, -3);
  lua_settable(L, -3);
  return 1;
}

int RedisSetResp(lua_State* L) {
  RunState* run = CurrentRun(L, "redis.setresp");
  if (lua_gettop(L) != 1) RaiseError(L, "redis.setresp() requires one argument.");
  const int resp = int(lua_tonumber(L, 1));
  if (resp != 2 && resp != 3) RaiseError(L, "RESP version must be 2 or 3.");
  run->resp3 = resp == 3;
  return 0;
}

constexpr int kReplAof = 1;
constexpr int kReplReplica = 2;

int RedisSetRepl(lua_State* L) {
  RunState* run = CurrentRun(L, "redis.set_repl");
  if (lua_gettop(L) != 1) RaiseError(L, "redis.set_repl() requires two arguments.");
  const int flags = int(lua_tonumber(L, 1));
  if ((flags & ~(kReplAof | kReplReplica)) != 0) {
    RaiseError(L, "Invalid replication flags. Use REPL_AOF, REPL_REPLICA, REPL_ALL or REPL_NONE.");
  }
  run->propagate = (flags & kReplAof) != 0;
  return 0;
}

int RedisReplicateCommands(lua_State* L) {
  lua_pushboolean(L, 1);  // Redis 7 always replicates effects
  return 1;
}

int RedisBreakpoint(lua_State* L) {
  lua_pushboolean(L, 0);  // no debugger session
  return 1;
}

int RedisDebug(lua_State*) { return 0; }

int RedisAclCheckCmd(lua_State* L) {
  RunState* run = CurrentRun(L, "redis.acl_check_cmd");
  std::vector<std::string> numbers;
  std::vector<std::string_view> args;
  if (lua_gettop(L) == 0) {
    RaiseError(L, "Please specify at least one argument for this redis lib call");
  }
  if (!CollectArgs(L, &numbers, &args)) {
    RaiseError(L, "Lua redis lib command arguments must be strings or integers");
  }
  const int allowed = run->host->CheckCommandPermission(args);
  if (allowed < 0) RaiseError(L, "Invalid command passed to redis.acl_check_cmd()");
  lua_pushboolean(L, allowed);
  return 1;
}

int RedisLog(lua_State* L) {
  const int argc = lua_gettop(L);
  if (argc < 2) RaiseError(L, "redis.log() requires two arguments or more.");
  if (!lua_isnumber(L, 1)) RaiseError(L, "First argument must be a number (log level).");
  const int level = int(lua_tonumber(L, 1));
  if (level < 0 || level > 3) RaiseError(L, "Invalid debug level.");
  std::string message;
  for (int i = 2; i <= argc; ++i) {
    if (!lua_isstring(L, i)) continue;
    if (i != 2) message.push_back(' ');
    message.append(ToView(L, i));
  }
  Impl* impl = Impl::Of(L);
  if (impl->current != nullptr) {
    impl->current->host->Log(level, message);
  } else if (impl->loading != nullptr && impl->loading->log_host != nullptr) {
    impl->loading->log_host->Log(level, message);
  }
  return 0;
}

// math.random and math.randomseed on Redis' generator (Lua's own, with rand() replaced).
int MathRandom(lua_State* L) {
  Impl* impl = Impl::Of(L);
  const lua_Number r = lua_Number(impl->rand.Next() % kRand48Max) / lua_Number(kRand48Max);
  switch (lua_gettop(L)) {
    case 0:
      lua_pushnumber(L, r);
      break;
    case 1: {
      const int u = luaL_checkint(L, 1);
      luaL_argcheck(L, 1 <= u, 1, "interval is empty");
      lua_pushnumber(L, std::floor(r * u) + 1);
      break;
    }
    case 2: {
      const int l = luaL_checkint(L, 1);
      const int u = luaL_checkint(L, 2);
      luaL_argcheck(L, l <= u, 2, "interval is empty");
      lua_pushnumber(L, std::floor(r * (u - l + 1)) + l);
      break;
    }
    default:
      return luaL_error(L, "wrong number of arguments");
  }
  return 1;
}

int MathRandomseed(lua_State* L) {
  Impl::Of(L)->rand.Seed(luaL_checkint(L, 1));
  return 0;
}

// Redis' pcall: like Lua's, but an error table raised by redis.call comes back as its err string
// (what scripts written for Redis 6 expect).
int Pcall(lua_State* L) {
  const int argc = lua_gettop(L);
  luaL_checkany(L, 1);
  lua_pushboolean(L, 1);
  lua_insert(L, 1);
  if (lua_pcall(L, argc - 1, LUA_MULTRET, 0) != 0) {
    lua_remove(L, 1);
    if (lua_istable(L, -1)) {
      lua_getfield(L, -1, "err");
      if (lua_isstring(L, -1)) {
        lua_replace(L, -2);
      } else {
        lua_pop(L, 1);
      }
    }
    lua_pushboolean(L, 0);
    lua_insert(L, 1);
  }
  return lua_gettop(L);
}

// ---- The sandbox.

int NonexistentGlobal(lua_State* L) {
  return luaL_error(L, "Script attempted to access nonexistent global variable '%s'",
                    lua_tostring(L, 2));
}

int ReadonlyWrite(lua_State* L) { return luaL_error(L, kReadonlyError); }

bool IsReadonly(lua_State* L, int index) {
  Impl* impl = Impl::Of(L);
  lua_pushvalue(L, index);
  lua_rawgeti(L, LUA_REGISTRYINDEX, impl->readonly_ref);
  lua_insert(L, -2);
  lua_rawget(L, -2);
  const bool readonly = lua_toboolean(L, -1);
  lua_pop(L, 2);
  return readonly;
}

// setmetatable and rawset refuse the read-only proxies with Redis' message (without a position:
// Redis raises it inside the C function), then do what Lua's do.
int RaiseReadonly(lua_State* L) {
  lua_pushstring(L, kReadonlyError);
  return lua_error(L);
}

// Refuses a read-only first argument, else calls Lua's own function (registry ref `original`)
// with the same arguments.
int CallUnlessReadonly(lua_State* L, int original) {
  if (lua_istable(L, 1) && IsReadonly(L, 1)) return RaiseReadonly(L);
  lua_rawgeti(L, LUA_REGISTRYINDEX, original);
  lua_insert(L, 1);
  lua_call(L, lua_gettop(L) - 1, LUA_MULTRET);
  return lua_gettop(L);
}

int SafeSetmetatable(lua_State* L) { return CallUnlessReadonly(L, Impl::Of(L)->setmetatable_ref); }
int SafeRawset(lua_State* L) { return CallUnlessReadonly(L, Impl::Of(L)->rawset_ref); }

// The top-level error handler of a run (Redis' __redis__err__handler): turns any error into a
// table {err=..., source=..., line=...} naming where it was raised (the Lua caller when a C
// function raised it).
int ErrorHandler(lua_State* L) {
  lua_Debug ar;
  bool have = lua_getstack(L, 1, &ar) && lua_getinfo(L, "nSl", &ar);
  if (have && std::strcmp(ar.what, "C") == 0) {
    have = lua_getstack(L, 2, &ar) && lua_getinfo(L, "nSl", &ar);
  }

  if (!lua_istable(L, 1)) {
    std::string msg = "ERR ";
    if (lua_isstring(L, 1)) {
      msg.append(ToView(L, 1));
    } else {
      lua_getglobal(L, "tostring");
      lua_pushvalue(L, 1);
      lua_call(L, 1, 1);
      msg.append(ToView(L, -1));
      lua_pop(L, 1);
    }
    lua_settop(L, 0);
    lua_newtable(L);
    lua_pushlstring(L, msg.data(), msg.size());
    lua_setfield(L, -2, "err");
  }
  if (have) {
    lua_pushstring(L, ar.source);
    lua_setfield(L, -2, "source");
    lua_pushnumber(L, ar.currentline);
    lua_setfield(L, -2, "line");
  }
  return 1;
}

void RunHook(lua_State* L, lua_Debug*);
void SetUpFunctionEnvironments(lua_State* L, Impl* impl, std::string_view version,
                               int64_t version_num);
LuaInterpreter::RunStatus RunRef(Impl* impl, int ref, std::string_view name,
                                 std::span<const std::string_view> keys,
                                 std::span<const std::string_view> argv, ScriptHost& host,
                                 ReplyBuilder& rb);

}  // namespace

// ---- LuaInterpreter.

namespace {

// Pushes a C function with the interpreter as its upvalue.
void PushFunction(lua_State* L, Impl* impl, lua_CFunction fn) {
  lua_pushlightuserdata(L, impl);
  lua_pushcclosure(L, fn, 1);
}

void SetFunction(lua_State* L, Impl* impl, const char* name, lua_CFunction fn) {
  PushFunction(L, impl, fn);
  lua_setfield(L, -2, name);
}

void SetNumber(lua_State* L, const char* name, lua_Number v) {
  lua_pushnumber(L, v);
  lua_setfield(L, -2, name);
}

// Replaces the table on top of the stack by a read-only proxy of it: reads go to the table,
// writes (and setmetatable/rawset) raise Redis' "Attempt to modify a readonly table".
void MarkReadonly(lua_State* L, Impl* impl, int index) {
  index = index < 0 ? lua_gettop(L) + index + 1 : index;
  lua_rawgeti(L, LUA_REGISTRYINDEX, impl->readonly_ref);
  lua_pushvalue(L, index);
  lua_pushboolean(L, 1);
  lua_rawset(L, -3);
  lua_pop(L, 1);
}

// Pushes a metatable whose __index is the table at `target` and whose writes raise.
void PushReadonlyMetatable(lua_State* L, Impl* impl, int target) {
  target = target < 0 ? lua_gettop(L) + target + 1 : target;
  lua_newtable(L);
  lua_pushvalue(L, target);
  lua_setfield(L, -2, "__index");
  PushFunction(L, impl, ReadonlyWrite);
  lua_setfield(L, -2, "__newindex");
}

void ProtectTable(lua_State* L, Impl* impl) {
  lua_newtable(L);                     // the proxy
  PushReadonlyMetatable(L, impl, -2);  // its metatable
  // getmetatable(proxy) shows a read-only view of the metatable, so that it cannot be changed
  // either (Redis makes metatables read-only too).
  lua_newtable(L);
  PushReadonlyMetatable(L, impl, -2);
  lua_pushboolean(L, 0);
  lua_setfield(L, -2, "__metatable");
  lua_setmetatable(L, -2);
  MarkReadonly(L, impl, -1);
  lua_setfield(L, -2, "__metatable");
  lua_setmetatable(L, -2);
  lua_remove(L, -2);
  MarkReadonly(L, impl, -1);
}

// Lua 5.1 runs a chunk that starts with "\27" (LUA_SIGNATURE) as precompiled bytecode, which a
// script can craft to read and write memory outside the sandbox. Redis' Lua only ever parses
// text; loadstring and load here make the parser read such a chunk as text by putting a space
// in front of it, so it fails as Redis' does (a syntax error: nil and the message).
int LoadResult(lua_State* L, int status) {
  if (status == 0) return 1;
  lua_pushnil(L);
  lua_insert(L, -2);
  return 2;
}

// loadstring(text [, chunkname])
int TextOnlyLoadstring(lua_State* L) {
  size_t len;
  const char* text = luaL_checklstring(L, 1, &len);
  const char* chunkname = luaL_optstring(L, 2, text);
  if (len > 0 && text[0] == LUA_SIGNATURE[0]) {
    const std::string padded = Concat(" ", std::string_view(text, len));
    return LoadResult(L, luaL_loadbuffer(L, padded.data(), padded.size(), chunkname));
  }
  return LoadResult(L, luaL_loadbuffer(L, text, len, chunkname));
}

// load's reader: a space, then the pieces the script's function returns (Lua's generic_reader;
// the function is at stack index 1, slot 3 keeps the last piece alive).
const char* TextOnlyReader(lua_State* L, void* started, size_t* size) {
  if (!*static_cast<bool*>(started)) {
    *static_cast<bool*>(started) = true;
    *size = 1;
    return " ";
  }
  luaL_checkstack(L, 2, "too many nested functions");
  lua_pushvalue(L, 1);
  lua_call(L, 0, 1);
  if (lua_isnil(L, -1)) {
    *size = 0;
    return nullptr;
  }
  if (!lua_isstring(L, -1)) luaL_error(L, "reader function must return a string");
  lua_replace(L, 3);
  return lua_tolstring(L, 3, size);
}

// load(function [, chunkname])
int TextOnlyLoad(lua_State* L) {
  const char* chunkname = luaL_optstring(L, 2, "=(load)");
  luaL_checktype(L, 1, LUA_TFUNCTION);
  lua_settop(L, 3);
  bool started = false;
  return LoadResult(L, lua_load(L, TextOnlyReader, &started, chunkname));
}

void OpenLibrary(lua_State* L, const char* name, lua_CFunction open) {
  lua_pushcfunction(L, open);
  lua_pushstring(L, name);
  lua_call(L, 1, 1);
  if (lua_istable(L, -1) && name[0] != '\0') {
    lua_setglobal(L, name);
  } else {
    lua_pop(L, 1);
  }
}

}  // namespace

LuaInterpreter::LuaInterpreter(std::string_view version, int64_t version_num)
    : impl_(std::make_unique<Impl>()) {
  Impl* impl = impl_.get();
  lua_State* L = impl->L = luaL_newstate();
  lua_pushlightuserdata(L, impl);  // for the hooks, which get no upvalues
  lua_setfield(L, LUA_REGISTRYINDEX, "shardis.interpreter");
  OpenLibrary(L, "", luaopen_base);
  OpenLibrary(L, LUA_TABLIBNAME, luaopen_table);
  OpenLibrary(L, LUA_STRLIBNAME, luaopen_string);
  OpenLibrary(L, LUA_MATHLIBNAME, luaopen_math);
  OpenLibrary(L, "cjson", luaopen_cjson);
  OpenLibrary(L, "bit", luaopen_bit);
  OpenLibrary(L, "struct", OpenLuaStruct);
  OpenLibrary(L, "cmsgpack", OpenLuaCmsgpack);

  // Only the allowed globals stay.
  std::vector<std::string> drop;
  lua_pushnil(L);
  while (lua_next(L, LUA_GLOBALSINDEX) != 0) {
    lua_pop(L, 1);
    if (lua_type(L, -1) != LUA_TSTRING) continue;
    std::string_view name = ToView(L, -1);
    bool allowed = false;
    for (std::string_view a : kAllowedGlobals) allowed |= a == name;
    if (!allowed) drop.emplace_back(name);
  }
  for (const std::string& name : drop) {
    lua_pushnil(L);
    lua_setglobal(L, name.c_str());
  }
  lua_pushcfunction(L, TextOnlyLoadstring);
  lua_setglobal(L, "loadstring");
  lua_pushcfunction(L, TextOnlyLoad);
  lua_setglobal(L, "load");

  // The set of read-only proxies (weak keys: a proxy is never collected while a global holds it,
  // but the set must not keep anything alive).
  lua_newtable(L);
  lua_newtable(L);
  lua_pushstring(L, "k");
  lua_setfield(L, -2, "__mode");
  lua_setmetatable(L, -2);
  impl->readonly_ref = luaL_ref(L, LUA_REGISTRYINDEX);

  PushFunction(L, impl, Pcall);
  lua_setglobal(L, "pcall");
  lua_getglobal(L, "setmetatable");
  impl->setmetatable_ref = luaL_ref(L, LUA_REGISTRYINDEX);
  lua_getglobal(L, "rawset");
  impl->rawset_ref = luaL_ref(L, LUA_REGISTRYINDEX);
  PushFunction(L, impl, SafeSetmetatable);
  lua_setglobal(L, "setmetatable");
  PushFunction(L, impl, SafeRawset);
  lua_setglobal(L, "rawset");

  lua_getglobal(L, "math");
  SetFunction(L, impl, "random", MathRandom);
  SetFunction(L, impl, "randomseed", MathRandomseed);
  lua_pop(L, 1);

  lua_newtable(L);  // redis
  SetFunction(L, impl, "call", RedisCall);
  SetFunction(L, impl, "pcall", RedisPcall);
  SetFunction(L, impl, "log", RedisLog);
  SetNumber(L, "LOG_DEBUG", 0);
  SetNumber(L, "LOG_VERBOSE", 1);
  SetNumber(L, "LOG_NOTICE", 2);
  SetNumber(L, "LOG_WARNING", 3);
  SetNumber(L, "REDIS_VERSION_NUM", lua_Number(version_num));
  lua_pushlstring(L, version.data(), version.size());
  lua_setfield(L, -2, "REDIS_VERSION");
  SetFunction(L, impl, "setresp", RedisSetResp);
  SetFunction(L, impl, "sha1hex", RedisSha1hex);
  SetFunction(L, impl, "error_reply", RedisErrorReply);
  SetFunction(L, impl, "status_reply", RedisStatusReply);
  SetFunction(L, impl, "set_repl", RedisSetRepl);
  SetNumber(L, "REPL_NONE", 0);
  SetNumber(L, "REPL_AOF", kReplAof);
  SetNumber(L, "REPL_SLAVE", kReplReplica);
  SetNumber(L, "REPL_REPLICA", kReplReplica);
  SetNumber(L, "REPL_ALL", kReplAof | kReplReplica);
  SetFunction(L, impl, "acl_check_cmd", RedisAclCheckCmd);
  SetFunction(L, impl, "replicate_commands", RedisReplicateCommands);
  SetFunction(L, impl, "breakpoint", RedisBreakpoint);
  SetFunction(L, impl, "debug", RedisDebug);
  lua_setglobal(L, "redis");

  // Read-only libraries, then the read-only globals: scripts run with the proxy of the globals
  // as their environment, whose misses raise "nonexistent global variable".
  for (const char* name : kLibraryTables) {
    lua_getglobal(L, name);
    if (lua_isnil(L, -1)) {
      lua_pop(L, 1);
      continue;
    }
    ProtectTable(L, impl);
    lua_setglobal(L, name);
  }
  lua_pushvalue(L, LUA_GLOBALSINDEX);
  lua_newtable(L);
  PushFunction(L, impl, NonexistentGlobal);
  lua_setfield(L, -2, "__index");
  lua_setmetatable(L, -2);
  ProtectTable(L, impl);
  // _G names the proxy, and the proxy's metatable shows itself read-only too.
  lua_pushvalue(L, -1);
  lua_setfield(L, LUA_GLOBALSINDEX, "_G");
  impl->env_ref = luaL_ref(L, LUA_REGISTRYINDEX);
  SetUpFunctionEnvironments(L, impl, version, version_num);
}

LuaInterpreter::~LuaInterpreter() { lua_close(impl_->L); }

bool LuaInterpreter::Has(std::string_view sha) const { return impl_->scripts.contains(sha); }

size_t LuaInterpreter::script_count() const { return impl_->scripts.size(); }

size_t LuaInterpreter::memory_bytes() const {
  lua_State* L = impl_->L;
  return size_t(lua_gc(L, LUA_GCCOUNT, 0)) * 1024 + size_t(lua_gc(L, LUA_GCCOUNTB, 0));
}

bool LuaInterpreter::Compile(std::string_view sha, std::string_view body, std::string* error) {
  Impl* impl = impl_.get();
  if (impl->scripts.contains(sha)) return true;
  size_t offset = 0;
  ParseScriptShebang(body, &offset, error);
  if (!error->empty()) return false;
  // KEYS and ARGV are the chunk's locals, on the body's first line so that line numbers stay
  // Redis' (see the top of the header for why they are not globals).
  std::string code = "local KEYS, ARGV = ...; ";
  code.append(body.substr(offset));
  lua_State* L = impl->L;
  if (luaL_loadbuffer(L, code.data(), code.size(), "@user_script") != 0) {
    *error = "ERR Error compiling script (new function): " + std::string(ToView(L, -1));
    lua_pop(L, 1);
    return false;
  }
  lua_rawgeti(L, LUA_REGISTRYINDEX, impl->env_ref);
  lua_setfenv(L, -2);
  impl->scripts.emplace(sha, luaL_ref(L, LUA_REGISTRYINDEX));
  return true;
}

void LuaInterpreter::Flush() {
  Impl* impl = impl_.get();
  for (auto& [sha, ref] : impl->scripts) luaL_unref(impl->L, LUA_REGISTRYINDEX, ref);
  impl->scripts.clear();
  lua_gc(impl->L, LUA_GCCOLLECT, 0);
}

namespace {

void RunHook(lua_State* L, lua_Debug*) {
  // Hooks get no upvalues: the interpreter is found through the registry.
  lua_getfield(L, LUA_REGISTRYINDEX, "shardis.interpreter");
  Impl* impl = static_cast<Impl*>(lua_touserdata(L, -1));
  lua_pop(L, 1);
  RunState* run = impl->current;
  if (run == nullptr) return;
  const ScriptHost::Stop stop = run->host->CheckStop();
  if (stop == ScriptHost::Stop::kNo) return;
  if (stop == ScriptHost::Stop::kAbort) run->aborted = true;
  if (stop == ScriptHost::Stop::kKill) run->killed = true;
  lua_sethook(L, StopHook, LUA_MASKLINE, 0);
  RaiseError(L, "Script killed by user with SCRIPT KILL...");
}

}  // namespace

LuaInterpreter::RunStatus LuaInterpreter::Run(std::string_view sha,
                                              std::span<const std::string_view> keys,
                                              std::span<const std::string_view> argv,
                                              ScriptHost& host, ReplyBuilder& rb) {
  const int compiled = CompiledScript(sha);
  if (compiled == kNotCompiled) {
    rb.Error("NOSCRIPT No matching script. Please use EVAL.");
    return RunStatus::kDone;
  }
  return Run(compiled, sha, keys, argv, host, rb);
}

int LuaInterpreter::CompiledScript(std::string_view sha) const {
  auto it = impl_->scripts.find(sha);
  // Registry refs are positive: kNotCompiled is none of them.
  return it == impl_->scripts.end() ? kNotCompiled : it->second;
}

LuaInterpreter::RunStatus LuaInterpreter::Run(int compiled, std::string_view sha,
                                              std::span<const std::string_view> keys,
                                              std::span<const std::string_view> argv,
                                              ScriptHost& host, ReplyBuilder& rb) {
  return RunRef(impl_.get(), compiled, sha, keys, argv, host, rb);
}

namespace {

// Runs the function of registry ref `ref` as fn(keys, argv) (an EVAL chunk, a library's
// function); `name` is what an error names (the SHA, the function).
LuaInterpreter::RunStatus RunRef(Impl* impl, int ref, std::string_view name,
                                 std::span<const std::string_view> keys,
                                 std::span<const std::string_view> argv, ScriptHost& host,
                                 ReplyBuilder& rb) {
  using RunStatus = LuaInterpreter::RunStatus;
  lua_State* L = impl->L;
  // A Lua thread of its own (see the top of the header).
  std::pair<lua_State*, int> thread;
  if (!impl->idle_threads.empty()) {
    thread = impl->idle_threads.back();
    impl->idle_threads.pop_back();
  } else {
    lua_State* T = lua_newthread(L);
    thread = {T, luaL_ref(L, LUA_REGISTRYINDEX)};
    // loadstring's chunks take the thread's globals: make those the read-only proxy too.
    lua_rawgeti(T, LUA_REGISTRYINDEX, impl->env_ref);
    lua_replace(T, LUA_GLOBALSINDEX);
  }
  lua_State* T = thread.first;
  RunState run;
  run.host = &host;
  if (!impl->spare_call_buffers.empty()) {
    run.call = std::move(impl->spare_call_buffers.back());
    impl->spare_call_buffers.pop_back();
  }
  impl->current = &run;
  lua_sethook(T, RunHook, LUA_MASKCOUNT, 100000);

  lua_pushcfunction(T, ErrorHandler);
  lua_rawgeti(T, LUA_REGISTRYINDEX, ref);
  lua_createtable(T, int(keys.size()), 0);
  for (size_t i = 0; i < keys.size(); ++i) {
    lua_pushlstring(T, keys[i].data(), keys[i].size());
    lua_rawseti(T, -2, int(i + 1));
  }
  lua_createtable(T, int(argv.size()), 0);
  for (size_t i = 0; i < argv.size(); ++i) {
    lua_pushlstring(T, argv[i].data(), argv[i].size());
    lua_rawseti(T, -2, int(i + 1));
  }
  const int status = lua_pcall(T, 2, 1, -4);
  impl->current = nullptr;
  lua_sethook(T, nullptr, 0, 0);

  RunStatus result = RunStatus::kDone;
  if (run.aborted) {
    result = RunStatus::kAborted;
  } else if (status != 0) {
    ErrorInfo info = ExtractError(T);
    std::string msg = info.msg;
    if (info.has_location) {
      msg += " script: " + std::string(name) + ", on " + info.source + ":" + info.line + ".";
    }
    ReplyScriptError(rb, info, msg);
  } else {
    LuaToReply(T, rb, run.resp3, 0);
  }
  lua_settop(T, 0);
  impl->idle_threads.push_back(thread);
  // Buffers a large call made are not kept for the runs after.
  constexpr size_t kKeepReplyBytes = 64 * 1024;
  constexpr size_t kKeepArgs = 1024;
  if (run.call.reply.capacity() > kKeepReplyBytes || run.call.args.capacity() > kKeepArgs) {
    run.call = {};
  }
  impl->spare_call_buffers.push_back(std::move(run.call));
  // The garbage is left to Lua's own incremental collector, which steps as scripts allocate.
  // Redis adds a step of 50 KB every 50 runs (what became of its full collections every 100
  // runs): with a heap as small as a scripts-only interpreter's (~40 KB), that is a whole cycle
  // every 50 runs, 2,250 instructions per run of an INCR+GET script against 730 with Lua's
  // pacing alone (callgrind). The heap then grows to twice its live size between cycles (Lua's
  // default pause), tens of KB.
  return result;
}

std::vector<std::string_view> Split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  for (;;) {
    const size_t at = s.find(sep);
    out.push_back(s.substr(0, at));
    if (at == std::string_view::npos) return out;
    s.remove_prefix(at + 1);
  }
}

std::vector<std::string_view> SplitNonEmpty(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  for (std::string_view part : Split(s, sep)) {
    if (!part.empty()) out.push_back(part);
  }
  return out;
}

}  // namespace

// ---- Function libraries (FUNCTION LOAD, FCALL).

namespace {

// The flag of a register_function flag or a shebang flag (0: none).
uint32_t ScriptFlagOf(std::string_view name, bool ignore_case) {
  for (const ScriptFlagName& f : kScriptFlagNames) {
    if (ignore_case ? EqualsIgnoreCase(name, f.name) : name == f.name) return f.flag;
  }
  return 0;
}

// Points the library environment's misses at the table of registry ref `target`.
void SetFunctionsIndex(lua_State* L, Impl* impl, int target) {
  lua_rawgeti(L, LUA_REGISTRYINDEX, impl->functions_meta_ref);
  lua_rawgeti(L, LUA_REGISTRYINDEX, target);
  lua_setfield(L, -2, "__index");
  lua_pop(L, 1);
}

void UnrefFunctions(lua_State* L, std::vector<Impl::Function>& functions) {
  for (Impl::Function& f : functions) luaL_unref(L, LUA_REGISTRYINDEX, f.ref);
  functions.clear();
}

// Redis' functionsVerifyName: letters, digits and underscores, at least one.
bool ValidFunctionName(std::string_view name) {
  if (name.empty()) return false;
  for (char c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  }
  return true;
}

// A string argument of register_function (Lua's notion: numbers are strings too), or nullopt.
std::optional<std::string> StringArg(lua_State* L, int index) {
  if (!lua_isstring(L, index)) return std::nullopt;
  size_t len = 0;
  lua_pushvalue(L, index);  // converting a copy, so that a number key stays a number for next
  const char* s = lua_tolstring(L, -1, &len);
  std::string out(s, len);
  lua_pop(L, 1);
  return out;
}

// register_function{function_name=..., callback=..., flags={...}, description=...}: the table is
// at index 1. On success *callback is a registry ref; otherwise an error text.
const char* ReadNamedArgs(lua_State* L, LuaFunctionInfo* info, int* callback) {
  if (!lua_istable(L, 1)) {
    return "calling redis.register_function with a single argument is only applicable to Lua "
           "table (representing named arguments).";
  }
  bool named = false;
  const char* error = nullptr;
  lua_pushnil(L);
  while (error == nullptr && lua_next(L, 1) != 0) {
    std::optional<std::string> key = StringArg(L, -2);
    if (!key) {
      error = "named argument key given to redis.register_function is not a string";
    } else if (EqualsIgnoreCase(*key, "function_name")) {
      std::optional<std::string> name = StringArg(L, -1);
      if (!name) error = "function_name argument given to redis.register_function must be a string";
      if (name) info->name = *std::move(name), named = true;
    } else if (EqualsIgnoreCase(*key, "description")) {
      info->description = StringArg(L, -1);
      if (!info->description) {
        error = "description argument given to redis.register_function must be a string";
      }
    } else if (EqualsIgnoreCase(*key, "callback")) {
      if (!lua_isfunction(L, -1)) {
        error = "callback argument given to redis.register_function must be a function";
      } else {
        if (*callback != LUA_NOREF) luaL_unref(L, LUA_REGISTRYINDEX, *callback);
        lua_pushvalue(L, -1);
        *callback = luaL_ref(L, LUA_REGISTRYINDEX);
      }
    } else if (EqualsIgnoreCase(*key, "flags")) {
      if (!lua_istable(L, -1)) {
        error =
            "flags argument to redis.register_function must be a table representing "
            "function flags";
      }
      for (int i = 1; error == nullptr; ++i) {
        lua_rawgeti(L, -1, i);
        if (lua_isnil(L, -1)) {
          lua_pop(L, 1);
          break;
        }
        std::optional<std::string> flag = StringArg(L, -1);
        lua_pop(L, 1);
        const uint32_t bit = flag ? ScriptFlagOf(*flag, /*ignore_case=*/true) : 0;
        if (bit == 0) error = "unknown flag given";
        info->flags |= bit;
      }
    } else {
      error = "unknown argument given to redis.register_function";
    }
    lua_pop(L, 1);
  }
  if (error == nullptr && !named) {
    error = "redis.register_function must get a function name argument";
  }
  if (error == nullptr && *callback == LUA_NOREF) {
    error = "redis.register_function must get a callback argument";
  }
  if (error != nullptr && *callback != LUA_NOREF) {
    luaL_unref(L, LUA_REGISTRYINDEX, *callback);
    *callback = LUA_NOREF;
  }
  return error;
}

// redis.register_function(name, callback) or redis.register_function{...}: Redis'
// luaRegisterFunction, errors and their order included.
int RegisterFunction(lua_State* L) {
  Impl* impl = Impl::Of(L);
  if (impl->loading == nullptr) {
    RaiseError(L, "redis.register_function can only be called on FUNCTION LOAD command");
  }
  const int argc = lua_gettop(L);
  if (argc < 1 || argc > 2) RaiseError(L, "wrong number of arguments to redis.register_function");
  LuaFunctionInfo info;
  int callback = LUA_NOREF;
  if (argc == 1) {
    if (const char* error = ReadNamedArgs(L, &info, &callback)) RaiseError(L, error);
  } else {
    std::optional<std::string> name = StringArg(L, 1);
    if (!name) RaiseError(L, "first argument to redis.register_function must be a string");
    if (!lua_isfunction(L, 2)) {
      RaiseError(L, "second argument to redis.register_function must be a function");
    }
    info.name = *std::move(name);
    lua_pushvalue(L, 2);
    callback = luaL_ref(L, LUA_REGISTRYINDEX);
  }
  const char* error = nullptr;
  if (!ValidFunctionName(info.name)) {
    error =
        "Library names can only contain letters, numbers, or underscores(_) and must be at "
        "least one character long";  // sic: Redis' text
  }
  for (const Impl::Function& f : impl->loading->functions) {
    if (error == nullptr && f.info.name == info.name) {
      error = "Function already exists in the library";
    }
  }
  if (error != nullptr) {
    luaL_unref(L, LUA_REGISTRYINDEX, callback);
    RaiseError(L, error);
  }
  impl->loading->functions.push_back({std::move(info), callback});
  return 0;
}

int64_t MonotonicMs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t(ts.tv_sec) * 1000 + ts.tv_nsec / 1000000;
}

// Redis' luaEngineLoadHook: a library's code that runs past its deadline raises, and every line
// after that raises again.
void LoadHook(lua_State* L, lua_Debug*) {
  lua_getfield(L, LUA_REGISTRYINDEX, "shardis.interpreter");
  Impl* impl = static_cast<Impl*>(lua_touserdata(L, -1));
  lua_pop(L, 1);
  const Impl::Loading* load = impl->loading;
  if (load == nullptr || load->deadline_ms == 0 || MonotonicMs() <= load->deadline_ms) return;
  lua_sethook(L, LoadHook, LUA_MASKLINE, 0);
  RaiseError(L, "FUNCTION LOAD timeout");
}

// The libraries' environment (an empty read-only table whose misses go where
// functions_meta_ref's __index says) and the load-time globals.
void SetUpFunctionEnvironments(lua_State* L, Impl* impl, std::string_view version,
                               int64_t version_num) {
  lua_newtable(L);  // the load-time redis table
  SetFunction(L, impl, "register_function", RegisterFunction);
  SetFunction(L, impl, "log", RedisLog);
  SetNumber(L, "LOG_DEBUG", 0);
  SetNumber(L, "LOG_VERBOSE", 1);
  SetNumber(L, "LOG_NOTICE", 2);
  SetNumber(L, "LOG_WARNING", 3);
  SetNumber(L, "REDIS_VERSION_NUM", lua_Number(version_num));
  lua_pushlstring(L, version.data(), version.size());
  lua_setfield(L, -2, "REDIS_VERSION");
  // Missing fields raise, as Redis' error metatable does: redis.call at load time is
  // "Script attempted to access nonexistent global variable 'call'".
  lua_newtable(L);
  PushFunction(L, impl, NonexistentGlobal);
  lua_setfield(L, -2, "__index");
  lua_setmetatable(L, -2);
  ProtectTable(L, impl);
  lua_newtable(L);  // the load-time globals: redis only
  lua_insert(L, -2);
  lua_setfield(L, -2, "redis");
  lua_newtable(L);
  PushFunction(L, impl, NonexistentGlobal);
  lua_setfield(L, -2, "__index");
  lua_setmetatable(L, -2);
  ProtectTable(L, impl);
  impl->load_api_ref = luaL_ref(L, LUA_REGISTRYINDEX);

  lua_newtable(L);  // the environment
  lua_newtable(L);  // its metatable
  lua_rawgeti(L, LUA_REGISTRYINDEX, impl->env_ref);
  lua_setfield(L, -2, "__index");
  PushFunction(L, impl, ReadonlyWrite);
  lua_setfield(L, -2, "__newindex");
  lua_pushboolean(L, 0);
  lua_setfield(L, -2, "__metatable");
  lua_pushvalue(L, -1);
  impl->functions_meta_ref = luaL_ref(L, LUA_REGISTRYINDEX);
  lua_setmetatable(L, -2);
  MarkReadonly(L, impl, -1);
  impl->functions_env_ref = luaL_ref(L, LUA_REGISTRYINDEX);
}

}  // namespace

bool LuaInterpreter::LoadLibrary(std::string_view library, std::string_view code,
                                 int64_t timeout_ms, ScriptHost* log_host,
                                 std::vector<LuaFunctionInfo>* functions, std::string* error) {
  Impl* impl = impl_.get();
  lua_State* L = impl->L;
  DiscardLibrary(library);
  if (luaL_loadbuffer(L, code.data(), code.size(), "@user_function") != 0) {
    *error = "Error compiling function: " + std::string(ToView(L, -1));
    lua_pop(L, 1);
    return false;
  }
  lua_rawgeti(L, LUA_REGISTRYINDEX, impl->functions_env_ref);
  lua_setfenv(L, -2);
  Impl::Loading load;
  load.deadline_ms = timeout_ms > 0 ? MonotonicMs() + timeout_ms : 0;
  load.log_host = log_host;
  // A run paused in a redis.call stays the current one for its hooks: none runs meanwhile.
  RunState* paused = impl->current;
  impl->current = nullptr;
  impl->loading = &load;
  SetFunctionsIndex(L, impl, impl->load_api_ref);
  lua_sethook(L, LoadHook, LUA_MASKCOUNT, 100000);
  const int status = lua_pcall(L, 0, 0, 0);
  lua_sethook(L, nullptr, 0, 0);
  SetFunctionsIndex(L, impl, impl->env_ref);
  impl->loading = nullptr;
  impl->current = paused;
  if (status != 0) {
    *error = "Error registering functions: " + ExtractError(L).msg;
    lua_pop(L, 1);
    UnrefFunctions(L, load.functions);
    return false;
  }
  functions->clear();
  for (const Impl::Function& f : load.functions) functions->push_back(f.info);
  impl->staged_libraries[library] = std::move(load.functions);
  return true;
}

void LuaInterpreter::DiscardLibrary(std::string_view library) {
  auto it = impl_->staged_libraries.find(library);
  if (it == impl_->staged_libraries.end()) return;
  UnrefFunctions(impl_->L, it->second);
  impl_->staged_libraries.erase(it);
}

void LuaInterpreter::CommitLibrary(std::string_view library) {
  auto it = impl_->staged_libraries.find(library);
  if (it == impl_->staged_libraries.end()) return;
  DeleteLibrary(library);
  for (const Impl::Function& f : it->second) impl_->functions[f.info.name] = f.ref;
  impl_->libraries[library] = std::move(it->second);
  impl_->staged_libraries.erase(it);
}

void LuaInterpreter::DeleteLibrary(std::string_view library) {
  auto it = impl_->libraries.find(library);
  if (it == impl_->libraries.end()) return;
  for (const Impl::Function& f : it->second) impl_->functions.erase(f.info.name);
  UnrefFunctions(impl_->L, it->second);
  impl_->libraries.erase(it);
}

bool LuaInterpreter::HasFunction(std::string_view name) const {
  return impl_->functions.contains(name);
}

LuaInterpreter::RunStatus LuaInterpreter::CallFunction(std::string_view name,
                                                       std::span<const std::string_view> keys,
                                                       std::span<const std::string_view> args,
                                                       ScriptHost& host, ReplyBuilder& rb) {
  auto it = impl_->functions.find(name);
  if (it == impl_->functions.end()) {
    rb.Error("ERR Function not found");
    return RunStatus::kDone;
  }
  return RunRef(impl_.get(), it->second, name, keys, args, host, rb);
}

uint32_t ParseScriptShebang(std::string_view body, size_t* body_offset, std::string* error) {
  error->clear();
  *body_offset = 0;
  if (!body.starts_with("#!")) return kScriptEvalCompat;
  const size_t eol = body.find('\n');
  if (eol == std::string_view::npos) {
    *error = "ERR Invalid script shebang";
    return 0;
  }
  *body_offset = eol;
  std::vector<std::string_view> parts = SplitNonEmpty(body.substr(0, eol), ' ');
  if (parts.empty()) {
    *error = "ERR Invalid engine in script shebang";
    return 0;
  }
  if (parts[0] != "#!lua") {
    *error = "ERR Unexpected engine in script shebang: " + std::string(parts[0]);
    return 0;
  }
  uint32_t flags = 0;
  for (size_t i = 1; i < parts.size(); ++i) {
    if (!parts[i].starts_with("flags=")) {
      *error = "ERR Unknown lua shebang option: " + std::string(parts[i]);
      return 0;
    }
    if (parts[i].size() == 6) continue;  // "flags=": none
    for (std::string_view f : Split(parts[i].substr(6), ',')) {
      const uint32_t flag = ScriptFlagOf(f, /*ignore_case=*/false);
      if (flag == 0) {
        *error = "ERR Unexpected flag in script shebang: " + std::string(f);
        return 0;
      }
      flags |= flag;
    }
  }
  return flags;
}

}  // namespace shardis::core
