"""The sandbox: missing globals, read-only globals and libraries (writes, setmetatable, rawset,
getmetatable tricks), the functions Redis removes (print, loadfile, dofile, require, os, io),
compared byte for byte with the Debian redis-server 7.0. Also run with SHARDIS_TEST_TARGET=redis."""

import pytest

from script_util import assert_same_reply, one, one_server, ref  # noqa: F401

# (script, keys, args)
CASES = [
    ("return nosuchglobal", [], []),
    ("x = 1", [], []),
    ("_G.x = 1", [], []),
    ("redis.call = function() return 1 end", [], []),
    ("cjson.encode = 1", [], []),
    ("setmetatable(_G, {})", [], []),
    ("rawset(_G, 'x', 1)", [], []),
    ("local g = getmetatable(_G) g.__index = {}", [], []),
    ("return print('x')", [], []),
    ("return loadfile('x')", [], []),
    ("return dofile('x')", [], []),
    ("return os.time()", [], []),
    ("return io.read()", [], []),
    ("return require('x')", [], []),
    # Precompiled chunks are never loaded (TCL unit/scripting "Binary code loading failed"):
    # Lua 5.1 would run them as bytecode, outside the sandbox's checks.
    ("return loadstring(string.dump(function() return 1 end))()", [], []),
    ("local f = loadstring(string.dump(function() return 1 end)) return type(f)", [], []),
    ("local s, done = string.dump(function() return 1 end), false "
     "return type(load(function() if done then return nil end done = true return s end))", [], []),
    ("return loadstring('return 7')()", [], []),
    ("local f, e = loadstring('x x') return e", [], []),
    ("local i, parts = 0, {'return ', '8'} "
     "return load(function() i = i + 1 return parts[i] end)()", [], []),
]


@pytest.mark.parametrize("resp3", [False, True], ids=["resp2", "resp3"])
@pytest.mark.parametrize("case", CASES, ids=lambda c: c[0][:40])
def test_same_reply_as_redis(one, one_server, ref, redis_server, case, resp3):
    assert_same_reply(one_server, one, redis_server, ref, case, resp3)
