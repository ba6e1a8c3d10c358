#include "core/lua_interpreter.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "core/sha1.h"

namespace shardis::core {
namespace {

// A host whose commands reply with canned RESP, keyed by the command name.
class FakeHost : public ScriptHost {
 public:
  CallResult Call(std::span<const std::string_view> args, CallOptions options,
                  std::string* reply) override {
    calls.emplace_back(args.begin(), args.end());
    last_resp3 = options.resp3;
    if (abort_on == args[0]) return CallResult::kAbort;
    auto it = replies.find(std::string(args[0]));
    *reply = it == replies.end() ? "-ERR unknown command\r\n" : it->second;
    return CallResult::kReplied;
  }
  void Log(int level, std::string_view message) override {
    logs.push_back(std::to_string(level) + " " + std::string(message));
  }
  int CheckCommandPermission(std::span<const std::string_view> args) override {
    return args[0] == "get" ? 1 : -1;
  }

  std::map<std::string, std::string> replies;
  std::vector<std::vector<std::string>> calls;
  std::vector<std::string> logs;
  std::string abort_on;
  bool last_resp3 = false;
};

class LuaInterpreterTest : public ::testing::Test {
 protected:
  // Runs body with keys and argv, returns the RESP reply (in RESP2 unless resp3).
  std::string Eval(std::string_view body, std::vector<std::string_view> keys = {},
                   std::vector<std::string_view> argv = {}, bool resp3 = false) {
    const std::string sha = Sha1Hex(body);
    std::string error;
    if (!lua.Compile(sha, body, &error)) return "-" + error + "\r\n";
    std::string out;
    ReplyBuilder rb(&out);
    rb.set_resp3(resp3);
    status = lua.Run(sha, keys, argv, host, rb);
    return out;
  }

  LuaInterpreter lua{"7.2.4", 0x00070204};
  FakeHost host;
  LuaInterpreter::RunStatus status = LuaInterpreter::RunStatus::kDone;
};

TEST_F(LuaInterpreterTest, ConvertsLuaValuesToReplies) {
  EXPECT_EQ(Eval("return 1"), ":1\r\n");
  EXPECT_EQ(Eval("return 3.99"), ":3\r\n");
  EXPECT_EQ(Eval("return -3.99"), ":-3\r\n");
  EXPECT_EQ(Eval("return 'hi'"), "$2\r\nhi\r\n");
  EXPECT_EQ(Eval("return true"), ":1\r\n");
  EXPECT_EQ(Eval("return false"), "$-1\r\n");
  EXPECT_EQ(Eval("return nil"), "$-1\r\n");
  EXPECT_EQ(Eval("return {1, 'a', {2}}"), "*3\r\n:1\r\n$1\r\na\r\n*1\r\n:2\r\n");
  EXPECT_EQ(Eval("return {1, nil, 3}"), "*1\r\n:1\r\n");  // stops at the first nil
  EXPECT_EQ(Eval("return {ok='fine'}"), "+fine\r\n");
  EXPECT_EQ(Eval("return {err='My Error'}"), "-My Error\r\n");
  EXPECT_EQ(Eval("return redis.error_reply('My Error')"), "-My Error\r\n");
  EXPECT_EQ(Eval("return redis.error_reply('-NOPE x')"), "-NOPE x\r\n");
  EXPECT_EQ(Eval("return redis.status_reply('PONG')"), "+PONG\r\n");
  EXPECT_EQ(Eval("return 1e300"), ":-9223372036854775808\r\n");
}

TEST_F(LuaInterpreterTest, Resp3TypesFromScripts) {
  EXPECT_EQ(Eval("return {double=3.5}", {}, {}, true), ",3.5\r\n");
  EXPECT_EQ(Eval("return {double=3.5}"), "$3\r\n3.5\r\n");
  EXPECT_EQ(Eval("return {big_number='123'}", {}, {}, true), "(123\r\n");
  EXPECT_EQ(Eval("return {map={a=1}}", {}, {}, true), "%1\r\n$1\r\na\r\n:1\r\n");
  EXPECT_EQ(Eval("return {map={a=1}}"), "*2\r\n$1\r\na\r\n:1\r\n");
  EXPECT_EQ(Eval("return {set={a=true}}", {}, {}, true), "~1\r\n$1\r\na\r\n");
  EXPECT_EQ(Eval("redis.setresp(3) return true", {}, {}, true), "#t\r\n");
  EXPECT_EQ(Eval("redis.setresp(3) return false"), ":0\r\n");
  EXPECT_EQ(Eval("return {verbatim_string={format='txt', string='x'}}", {}, {}, true),
            "=5\r\ntxt:x\r\n");
}

TEST_F(LuaInterpreterTest, KeysAndArgv) {
  EXPECT_EQ(Eval("return {KEYS[1], ARGV[1], #KEYS, #ARGV}", {"k"}, {"a", "b"}),
            "*4\r\n$1\r\nk\r\n$1\r\na\r\n:1\r\n:2\r\n");
}

TEST_F(LuaInterpreterTest, RunsACompiledScriptByHandle) {
  const std::string body = "return {KEYS[1], ARGV[1]}";
  const std::string sha = Sha1Hex(body);
  EXPECT_EQ(lua.CompiledScript(sha), LuaInterpreter::kNotCompiled);
  std::string error;
  ASSERT_TRUE(lua.Compile(sha, body, &error));
  const int compiled = lua.CompiledScript(sha);
  ASSERT_NE(compiled, LuaInterpreter::kNotCompiled);
  std::string out;
  ReplyBuilder rb(&out);
  const std::string_view keys[] = {"k"};
  const std::string_view argv[] = {"a"};
  EXPECT_EQ(lua.Run(compiled, sha, keys, argv, host, rb), LuaInterpreter::RunStatus::kDone);
  EXPECT_EQ(out, "*2\r\n$1\r\nk\r\n$1\r\na\r\n");
  lua.Flush();
  EXPECT_EQ(lua.CompiledScript(sha), LuaInterpreter::kNotCompiled);
}

TEST_F(LuaInterpreterTest, CallBuffersPassFromRunToRun) {
  // Each run takes redis.call's buffers from the one before: the arguments of a later call are
  // its own, whatever the earlier one left.
  host.replies["set"] = "+OK\r\n";
  Eval("return redis.call('set', 'x', 3.5, 10, 'more', 'args')");
  Eval("return redis.call('set', 7, 'y')");
  EXPECT_EQ(host.calls.back(), (std::vector<std::string>{"set", "7", "y"}));
}

TEST_F(LuaInterpreterTest, RedisCallConvertsReplies) {
  host.replies["get"] = "$3\r\nbar\r\n";
  host.replies["incr"] = ":5\r\n";
  host.replies["set"] = "+OK\r\n";
  host.replies["lrange"] = "*2\r\n$1\r\na\r\n$-1\r\n";
  host.replies["nil"] = "$-1\r\n";
  EXPECT_EQ(Eval("return redis.call('get', KEYS[1])", {"foo"}), "$3\r\nbar\r\n");
  EXPECT_EQ(host.calls.back(), (std::vector<std::string>{"get", "foo"}));
  EXPECT_EQ(Eval("return redis.call('incr', 'x') + 1"), ":6\r\n");
  EXPECT_EQ(Eval("return redis.call('set', 'x', 1).ok"), "$2\r\nOK\r\n");
  EXPECT_EQ(Eval("return type(redis.call('nil'))"), "$7\r\nboolean\r\n");
  EXPECT_EQ(Eval("return redis.call('lrange', 'l', 0, -1)"), "*2\r\n$1\r\na\r\n$-1\r\n");
  // Numbers are sent as %.17g.
  Eval("return redis.call('set', 'x', 3.5, 10)");
  EXPECT_EQ(host.calls.back(), (std::vector<std::string>{"set", "x", "3.5", "10"}));
}

TEST_F(LuaInterpreterTest, RedisCallErrors) {
  const std::string sha = Sha1Hex("return redis.call('nope')");
  EXPECT_EQ(Eval("return redis.call('nope')"),
            "-ERR unknown command script: " + sha + ", on @user_script:1.\r\n");
  EXPECT_EQ(Eval("local ok = redis.pcall('nope') return ok['err']"),
            "$19\r\nERR unknown command\r\n");
  EXPECT_EQ(Eval("local ok, e = pcall(function() return redis.call('nope') end) return e"),
            "$19\r\nERR unknown command\r\n");
  EXPECT_EQ(Eval("return redis.call()").substr(0, 68),
            "-ERR Please specify at least one argument for this redis lib call sc");
  EXPECT_EQ(Eval("return redis.call('get', {})").substr(0, 64),
            "-ERR Lua redis lib command arguments must be strings or integers");
}

TEST_F(LuaInterpreterTest, ScriptErrorsNameTheLine) {
  const std::string body = "local a = 1\nerror('boom')";
  EXPECT_EQ(Eval(body), "-ERR user_script:2: boom script: " + Sha1Hex(body) +
                            ", on @user_script:2.\r\n");
  const std::string shebang = "#!lua\nreturn x";
  EXPECT_EQ(Eval(shebang),
            "-ERR user_script:2: Script attempted to access nonexistent global variable 'x' "
            "script: " + Sha1Hex(shebang) + ", on @user_script:2.\r\n");
  EXPECT_EQ(Eval("return +"), "-ERR Error compiling script (new function): user_script:1: "
                              "unexpected symbol near '+'\r\n");
}

TEST_F(LuaInterpreterTest, Sandbox) {
  auto err = [&](std::string_view body) {
    std::string r = Eval(body);
    return r.substr(0, r.find(" script: "));
  };
  EXPECT_EQ(err("a = 1"), "-ERR user_script:1: Attempt to modify a readonly table");
  EXPECT_EQ(err("redis.call = function() return 1 end"),
            "-ERR user_script:1: Attempt to modify a readonly table");
  EXPECT_EQ(err("_G.x = 1"), "-ERR user_script:1: Attempt to modify a readonly table");
  EXPECT_EQ(err("setmetatable(_G, {})"), "-ERR Attempt to modify a readonly table");
  EXPECT_EQ(err("local g = getmetatable(_G) g.__index = {}"),
            "-ERR user_script:1: Attempt to modify a readonly table");
  EXPECT_EQ(err("rawset(_G, 'x', 1)"), "-ERR Attempt to modify a readonly table");
  EXPECT_EQ(err("cjson.encode = 1"), "-ERR user_script:1: Attempt to modify a readonly table");
  EXPECT_EQ(Eval("loadstring('y = 2')()"),
            "-ERR [string \"y = 2\"]:1: Attempt to modify a readonly table script: " +
                Sha1Hex("loadstring('y = 2')()") + ", on y = 2:1.\r\n");
  EXPECT_EQ(err("print('x')"),
            "-ERR user_script:1: Script attempted to access nonexistent global variable 'print'");
  EXPECT_EQ(err("return loadfile('x')"),
            "-ERR user_script:1: Script attempted to access nonexistent global variable "
            "'loadfile'");
  EXPECT_EQ(err("return os.time()"),
            "-ERR user_script:1: Script attempted to access nonexistent global variable 'os'");
  // Globals are readable, and local state does not leak into the next run.
  EXPECT_EQ(Eval("local t = {} t.x = 1 return t.x"), ":1\r\n");
  EXPECT_EQ(Eval("return type(string.format)"), "$8\r\nfunction\r\n");
}

TEST_F(LuaInterpreterTest, Libraries) {
  EXPECT_EQ(Eval("return cjson.encode({1, 2})"), "$5\r\n[1,2]\r\n");
  EXPECT_EQ(Eval("return cjson.decode('[1,\"a\"]')[2]"), "$1\r\na\r\n");
  EXPECT_EQ(Eval("return bit.band(7, 3)"), ":3\r\n");
  EXPECT_EQ(Eval("return bit.tohex(65535, 4)"), "$4\r\nffff\r\n");
  EXPECT_EQ(Eval("return struct.pack('>i2', 258)"), "$2\r\n\x01\x02\r\n");
  EXPECT_EQ(Eval("return struct.size('i4')"), ":4\r\n");
  EXPECT_EQ(Eval("return redis.sha1hex('')"),
            "$40\r\nda39a3ee5e6b4b0d3255bfef95601890afd80709\r\n");
  EXPECT_EQ(Eval("return redis.REDIS_VERSION"), "$5\r\n7.2.4\r\n");
  EXPECT_EQ(Eval("return redis.REDIS_VERSION_NUM"), ":459268\r\n");
  Eval("redis.log(redis.LOG_WARNING, 'hello', 'world')");
  EXPECT_EQ(host.logs.back(), "3 hello world");
}

TEST_F(LuaInterpreterTest, MathRandomIsRedisSequence) {
  // Redis 7.0 with a fresh generator: EVAL "return tostring(math.random())" 0.
  EXPECT_EQ(Eval("return tostring(math.random())"), "$16\r\n0.39646477363839\r\n");
  Eval("math.randomseed(1)");
  const std::string a = Eval("return math.random(1000)");
  Eval("math.randomseed(1)");
  EXPECT_EQ(Eval("return math.random(1000)"), a);
}

TEST_F(LuaInterpreterTest, AbortStopsTheRunEvenUnderPcall) {
  host.abort_on = "boom";
  Eval("pcall(redis.call, 'boom') pcall(redis.call, 'boom') return 1");
  EXPECT_EQ(status, LuaInterpreter::RunStatus::kAborted);
  // The next run is a normal one.
  EXPECT_EQ(Eval("return 2"), ":2\r\n");
  EXPECT_EQ(status, LuaInterpreter::RunStatus::kDone);
}

TEST_F(LuaInterpreterTest, Shebang) {
  std::string error;
  size_t offset = 0;
  EXPECT_EQ(ParseScriptShebang("return 1", &offset, &error), kScriptEvalCompat);
  EXPECT_EQ(ParseScriptShebang("#!lua flags=no-writes,allow-oom\nreturn 1", &offset, &error),
            kScriptNoWrites | kScriptAllowOom);
  EXPECT_EQ(offset, 31u);
  ParseScriptShebang("#!lua flags=bad\n", &offset, &error);
  EXPECT_EQ(error, "ERR Unexpected flag in script shebang: bad");
  ParseScriptShebang("#!py\n", &offset, &error);
  EXPECT_EQ(error, "ERR Unexpected engine in script shebang: #!py");
  ParseScriptShebang("#!lua", &offset, &error);
  EXPECT_EQ(error, "ERR Invalid script shebang");
  ParseScriptShebang("#!lua x=1\n", &offset, &error);
  EXPECT_EQ(error, "ERR Unknown lua shebang option: x=1");
}

}  // namespace
}  // namespace shardis::core

namespace shardis::core {
namespace {

class LuaLibraryTest : public LuaInterpreterTest {
 protected:
  // Loads and commits a library; returns the error, empty on success.
  std::string Load(std::string_view name, std::string_view code) {
    std::string error;
    functions.clear();
    if (!lua.LoadLibrary(name, code, 0, &host, &functions, &error)) return error;
    lua.CommitLibrary(name);
    return "";
  }
  std::string Call(std::string_view name, std::vector<std::string_view> keys = {},
                   std::vector<std::string_view> args = {}) {
    std::string out;
    ReplyBuilder rb(&out);
    status = lua.CallFunction(name, keys, args, host, rb);
    return out;
  }

  std::vector<LuaFunctionInfo> functions;
};

TEST_F(LuaLibraryTest, RegistersAndCallsFunctions) {
  ASSERT_EQ(Load("lib", "\nlocal function h(s) return s .. '!' end\n"
                        "redis.register_function('f', function(keys, args) "
                        "return {keys[1], h(args[1])} end)\n"
                        "redis.register_function{function_name='g', callback=function() "
                        "return redis.call('get', 'k') end, flags={'no-writes', 'ALLOW-OOM'}, "
                        "description='d'}"),
            "");
  ASSERT_EQ(functions.size(), 2u);
  EXPECT_EQ(functions[0].name, "f");
  EXPECT_FALSE(functions[0].description.has_value());
  EXPECT_EQ(functions[1].flags, uint32_t(kScriptNoWrites | kScriptAllowOom));
  EXPECT_EQ(functions[1].description, "d");
  EXPECT_EQ(Call("f", {"k1"}, {"a"}), "*2\r\n$2\r\nk1\r\n$2\r\na!\r\n");
  host.replies["get"] = "$1\r\nv\r\n";
  EXPECT_EQ(Call("g"), "$1\r\nv\r\n");
  EXPECT_EQ(Call("nope"), "-ERR Function not found\r\n");
  // Errors name the function, as Redis' do.
  ASSERT_EQ(Load("lib2", "\nredis.register_function('e', function() error('x') end)"), "");
  EXPECT_EQ(Call("e"), "-ERR user_function:2: x script: e, on @user_function:2.\r\n");
  // Runtime globals are the scripts' ones: register_function is gone, writes are refused.
  ASSERT_EQ(Load("lib3", "\nredis.register_function('w', function() x = 1 end)"), "");
  EXPECT_EQ(Call("w"), "-ERR user_function:2: Attempt to modify a readonly table script: w, on "
                       "@user_function:2.\r\n");
}

TEST_F(LuaLibraryTest, LoadTimeEnvironment) {
  EXPECT_EQ(Load("l", "\nredis.call('get', 'x')"),
            "Error registering functions: ERR user_function:2: Script attempted to access "
            "nonexistent global variable 'call'");
  EXPECT_EQ(Load("l", "\nlocal s = string.rep('a', 2)"),
            "Error registering functions: ERR user_function:2: Script attempted to access "
            "nonexistent global variable 'string'");
  EXPECT_EQ(Load("l", "\nx = 1"),
            "Error registering functions: ERR user_function:2: Attempt to modify a readonly table");
  EXPECT_EQ(Load("l", "\nthis is not lua"),
            "Error compiling function: user_function:2: '=' expected near 'is'");
  EXPECT_EQ(Load("l", "\nredis.register_function('f')"),
            "Error registering functions: ERR calling redis.register_function with a single "
            "argument is only applicable to Lua table (representing named arguments).");
  EXPECT_EQ(Load("l", "\nredis.register_function('f', function() end)\n"
                      "redis.register_function('f', function() end)"),
            "Error registering functions: ERR Function already exists in the library");
  EXPECT_EQ(Load("l", "\nredis.register_function{function_name='f', callback=function() end, "
                      "flags={'nope'}}"),
            "Error registering functions: ERR unknown flag given");
  EXPECT_EQ(Load("l", "\nredis.log(redis.LOG_WARNING, 'at load', redis.REDIS_VERSION)\n"
                      "redis.register_function('f', function() return 1 end)"),
            "");
  EXPECT_EQ(host.logs.back(), "3 at load 7.2.4");
  // A library whose code runs too long stops.
  std::string error;
  EXPECT_FALSE(lua.LoadLibrary("slow", "\nwhile true do end", 50, &host, &functions, &error));
  EXPECT_EQ(error, "Error registering functions: ERR FUNCTION LOAD timeout");
  // EVAL still runs in its own environment afterwards.
  EXPECT_EQ(Eval("return string.rep('a', 2)"), "$2\r\naa\r\n");
}

TEST_F(LuaLibraryTest, StagedLibrariesReplaceOnCommit) {
  ASSERT_EQ(Load("lib", "\nredis.register_function('a', function() return 1 end)"), "");
  std::string error;
  ASSERT_TRUE(lua.LoadLibrary("lib", "\nredis.register_function('b', function() return 2 end)",
                              0, &host, &functions, &error));
  EXPECT_TRUE(lua.HasFunction("a"));  // not yet replaced
  EXPECT_FALSE(lua.HasFunction("b"));
  lua.DiscardLibrary("lib");
  EXPECT_EQ(Call("a"), ":1\r\n");
  ASSERT_EQ(Load("lib", "\nredis.register_function('b', function() return 2 end)"), "");
  EXPECT_FALSE(lua.HasFunction("a"));
  EXPECT_EQ(Call("b"), ":2\r\n");
  lua.DeleteLibrary("lib");
  EXPECT_FALSE(lua.HasFunction("b"));
  // SCRIPT FLUSH leaves functions alone.
  ASSERT_EQ(Load("lib", "\nredis.register_function('c', function() return 3 end)"), "");
  lua.Flush();
  EXPECT_EQ(Call("c"), ":3\r\n");
}

}  // namespace
}  // namespace shardis::core
