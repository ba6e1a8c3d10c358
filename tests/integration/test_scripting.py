"""Lua scripting (EVAL, EVALSHA, EVAL_RO, SCRIPT): replies compared byte for byte with the Debian
redis-server 7.0 (`redis_server` fixture) for conversions, errors and the sandbox, in RESP2 and
RESP3; the script cache across connections and threads; scripts inside MULTI/EXEC; scripts that
touch keys they did not declare (which shardis reruns over every shard) and their atomicity under
concurrency with --threads 1, 2, 4.

Run against redis-server itself with SHARDIS_TEST_TARGET=redis to check the tests."""

import random
import threading

import pytest
import redis

# (script, keys, args): each runs on both servers, whose raw replies must be equal.
CONVERSIONS = [
    ("return 1", [], []),
    ("return 3.99", [], []),
    ("return -3.99", [], []),
    ("return 1e300", [], []),
    ("return 'hello'", [], []),
    ("return true", [], []),
    ("return false", [], []),
    ("return nil", [], []),
    ("return {}", [], []),
    ("return {1, 'two', {3, {4}}, true, false}", [], []),
    ("return {1, nil, 3}", [], []),
    ("return {ok='fine'}", [], []),
    ("return {ok='two\\r\\nlines'}", [], []),
    ("return {err='My Error'}", [], []),
    ("return redis.error_reply('My Error')", [], []),
    ("return redis.error_reply('-CUSTOM text')", [], []),
    ("return redis.status_reply('PONG')", [], []),
    ("return redis.error_reply(1)", [], []),
    ("return {double=3.25}", [], []),
    ("return {big_number='12345678901234567890'}", [], []),
    ("return {map={a=1}}", [], []),
    ("return {set={a=true}}", [], []),
    ("return {verbatim_string={format='txt', string='abc'}}", [], []),
    ("redis.setresp(3) return redis.call('hgetall', KEYS[1])", ["h"], []),
    ("redis.setresp(3) return redis.call('smembers', KEYS[1])", ["s1"], []),
    ("redis.setresp(3) return redis.call('zscore', KEYS[1], 'm')", ["z"], []),
    ("redis.setresp(3) return redis.call('get', 'nokey')", [], []),
    ("redis.setresp(3) return true", [], []),
    ("redis.setresp(3) return false", [], []),
    ("return redis.call('hgetall', KEYS[1])", ["h"], []),
    ("return redis.call('zrange', KEYS[1], 0, -1, 'withscores')", ["z"], []),
    ("return redis.call('get', 'nokey')", [], []),
    ("return type(redis.call('get', 'nokey'))", [], []),
    ("return redis.call('set', KEYS[1], ARGV[1])", ["str"], ["v"]),
    ("return redis.call('set', KEYS[1], 3.5)", ["str"], []),
    ("return redis.call('get', KEYS[1])", ["str"], []),
    ("return redis.call('incrbyfloat', KEYS[1], 0.1)", ["fl"], []),
    ("return {KEYS[1], KEYS[2], ARGV[1], ARGV[2], #KEYS, #ARGV}", ["k1", "k2"], ["a1", "a2"]),
    ("return redis.call('type', KEYS[1])", ["h"], []),
    ("return redis.call('type', KEYS[1]).ok", ["h"], []),
    ("return redis.call('lpush', KEYS[1], 'a', 'b')", ["l"], []),
    ("return redis.call('lrange', KEYS[1], 0, -1)", ["l"], []),
    ("return redis.pcall('incr', KEYS[1])", ["h"], []),
    ("return redis.pcall('incr', KEYS[1])['err']", ["h"], []),
    ("return cjson.encode({1, 2, {a=3}})", [], []),
    ("return cjson.decode('[1,2,{\"a\":3}]')[3].a", [], []),
    ("return cjson.encode(cjson.decode('{\"x\":[1,\"y\",null]}'))", [], []),
    ("return bit.band(0xff, 0x0f)", [], []),
    ("return bit.tohex(65535, 4)", [], []),
    ("return bit.bxor(5, 3)", [], []),
    ("return struct.pack('>I2', 513)", [], []),
    ("return {struct.unpack('<i4', struct.pack('<i4', -2))}", [], []),
    ("return cmsgpack.pack({1, 'a', {x=true}}, 3.5, -200)", [], []),
    ("return cmsgpack.unpack(cmsgpack.pack({1, 2, 3}))", [], []),
    ("return {cmsgpack.unpack_one(cmsgpack.pack(1, 2))}", [], []),
    ("return redis.sha1hex('abc')", [], []),
    ("return redis.sha1hex('')", [], []),
    ("return redis.REDIS_VERSION_NUM > 0", [], []),
    ("return tostring(math.random(100) <= 100)", [], []),
    ("return string.format('%d-%s', 5, 'x')", [], []),
    ("return table.concat({'a', 'b'}, ',')", [], []),
    ("return redis.replicate_commands()", [], []),
    ("redis.set_repl(redis.REPL_ALL) return 1", [], []),
    ("return tonumber('0x10')", [], []),
    ("return unpack({1, 2})", [], []),
    ("return select('#', 1, 2, 3)", [], []),
    ("local ok, e = pcall(function() return redis.call('incr', KEYS[1]) end) return e", ["h"], []),
    ("local ok, e = pcall(error, 'x') return {tostring(ok), e}", [], []),
]

ERRORS = [
    ("return redis.call('nosuchcommand')", [], []),
    ("return redis.call('get')", [], []),
    ("return redis.call()", [], []),
    ("return redis.call('get', {})", [], []),
    ("return redis.call('incr', KEYS[1])", ["h"], []),
    ("return redis.call('client', 'list')", [], []),
    ("return redis.call('blpop', 'l', 0)", ["l"], []),
    ("return redis.call('eval', 'return 1', 0)", [], []),
    ("error('boom')", [], []),
    ("local a = 1\nerror('on line two')", [], []),
    ("error({err='TABLE error'})", [], []),
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
    ("return +", [], []),
    ("return 1 +", [], []),
    ("#!lua\nreturn x", [], []),
    ("#!lua flags=no-writes\nreturn redis.call('set', KEYS[1], 1)", ["k"], []),
    ("#!lua flags=bad-flag\nreturn 1", [], []),
    ("#!lua bad=1\nreturn 1", [], []),
    ("#!python\nreturn 1", [], []),
    ("#!lua", [], []),
    ("redis.setresp(4)", [], []),
    ("redis.setresp()", [], []),
    ("redis.set_repl(99)", [], []),
    ("redis.log(99, 'x')", [], []),
    ("redis.log('x')", [], []),
    ("return redis.sha1hex()", [], []),
    ("return math.random(0)", [], []),
    ("return redis.acl_check_cmd('nosuch')", [], []),
]


@pytest.fixture
def ref(redis_server):
    c = redis_server.client()
    c.flushall()
    c.script_flush()
    yield c
    c.close()


def fill(c):
    c.hset("h", mapping={"f1": "v1", "f2": "2"})
    c.sadd("s1", "a")
    c.zadd("z", {"m": 1.5, "n": 2})
    c.set("fl", "1.5")


def raw_eval(srv, script, keys, args, resp3=False):
    conn = srv.raw()
    try:
        if resp3:
            conn.call("HELLO", "3")
        return conn.call_raw("EVAL", script, len(keys), *keys, *args)
    finally:
        conn.close()


@pytest.mark.parametrize("resp3", [False, True], ids=["resp2", "resp3"])
@pytest.mark.parametrize("case", CONVERSIONS + ERRORS, ids=lambda c: c[0][:40])
def test_replies_match_redis(r, server, ref, redis_server, case, resp3):
    script, keys, args = case
    fill(r)
    fill(ref)
    assert raw_eval(server, script, keys, args, resp3) == \
        raw_eval(redis_server, script, keys, args, resp3)


def test_eval_argument_errors(r, ref):
    for c in (r, ref):
        with pytest.raises(redis.ResponseError, match="greater than number of args"):
            c.eval("return 1", 2, "a")
        with pytest.raises(redis.ResponseError, match="can't be negative"):
            c.eval("return 1", -1)
        with pytest.raises(redis.ResponseError, match="not an integer"):
            c.execute_command("EVAL", "return 1", "x")
        with pytest.raises(redis.ResponseError, match="wrong number of arguments"):
            c.execute_command("EVAL", "return 1")


def test_script_cache(server, r):
    body = "return ARGV[1] .. '!'"
    sha = r.script_load(body)
    assert len(sha) == 40
    # Every connection sees it, wherever its thread is.
    clients = [server.client() for _ in range(8)]
    for c in clients:
        assert c.evalsha(sha, 0, "x") == b"x!"
        assert c.evalsha(sha.upper(), 0, "y") == b"y!"
        assert c.script_exists(sha, "0" * 40) == [True, False]
    # EVAL caches too.
    other = "return 'cached by eval'"
    r.eval(other, 0)
    other_sha = r.script_load(other)
    for c in clients:
        assert c.evalsha(other_sha, 0) == b"cached by eval"
    assert r.script_flush() is True
    for c in clients:
        assert c.script_exists(sha, other_sha) == [False, False]
        with pytest.raises(redis.exceptions.NoScriptError):
            c.evalsha(sha, 0, "x")
        c.close()
    with pytest.raises(redis.exceptions.NoScriptError):
        r.execute_command("EVALSHA", "abc", 0)
    with pytest.raises(redis.ResponseError, match="Error compiling script"):
        r.script_load("return +")
    with pytest.raises(redis.ResponseError, match="only support SYNC|ASYNC"):
        r.execute_command("SCRIPT", "FLUSH", "LATER")
    assert r.execute_command("SCRIPT", "FLUSH", "ASYNC") == b"OK"
    with pytest.raises(redis.ResponseError, match="NOTBUSY"):
        r.execute_command("SCRIPT", "KILL")


def test_read_only_variants(r):
    r.set("k", "v")
    assert r.eval_ro("return redis.call('get', KEYS[1])", 1, "k") == b"v"
    with pytest.raises(redis.ResponseError, match="Write commands are not allowed from read-only"):
        r.eval_ro("return redis.call('set', KEYS[1], 'x')", 1, "k")
    sha = r.script_load("return redis.call('get', KEYS[1])")
    assert r.evalsha_ro(sha, 1, "k") == b"v"
    with pytest.raises(redis.ResponseError, match="Can not execute a script with write flag"):
        r.eval_ro("#!lua\nreturn 1", 0)
    assert r.eval_ro("#!lua flags=no-writes\nreturn 1", 0) == 1
    assert r.get("k") == b"v"


def test_scripts_in_multi(r):
    p = r.pipeline(transaction=True)
    p.set("a", "1")
    p.eval("return redis.call('incr', KEYS[1])", 1, "a")
    p.eval("return redis.call('incrby', 'undeclared', 5)", 0)
    p.get("a")
    assert p.execute() == [True, 2, 5, b"2"]
    assert r.get("undeclared") == b"5"


def test_undeclared_keys(r):
    # Keys named in ARGV, in the data, or nowhere: Redis allows them outside cluster mode.
    assert r.eval("redis.call('set', ARGV[1], 'x') return redis.call('get', ARGV[1])",
                  0, "by-argv") == b"x"
    r.rpush("queue", "job:1", "job:2")
    script = """
        local n = 0
        for _, job in ipairs(redis.call('lrange', KEYS[1], 0, -1)) do
            redis.call('hset', job, 'state', 'done')
            n = n + 1
        end
        return n"""
    assert r.eval(script, 1, "queue") == 2
    assert r.hget("job:1", "state") == b"done" and r.hget("job:2", "state") == b"done"
    # A write to a declared key before the undeclared one: the first attempt is undone, so the
    # counter moves exactly once per call.
    for i in range(1, 6):
        assert r.eval("redis.call('incr', KEYS[1]) return redis.call('incr', 'side')",
                      1, "counter") == i
        assert r.get("counter") == str(i).encode()
    # Values too large to copy cheaply: the run goes global too, once.
    r.rpush("big", *range(1000))
    assert r.eval("redis.call('rpush', KEYS[1], 'x') return redis.call('llen', 'other')",
                  1, "big") == 0
    assert r.llen("big") == 1001
    # The keyspace as a whole.
    assert r.eval("return redis.call('dbsize')", 0) == r.dbsize()
    assert r.eval("redis.call('select', 1) redis.call('set', 'in1', 'x') return 1", 0) == 1
    assert r.get("in1") is None
    r.execute_command("SELECT", 1)
    assert r.get("in1") == b"x"


def test_blocking_commands_do_not_block(r):
    assert r.eval("return redis.call('lpop', KEYS[1])", 1, "empty") is None
    r.rpush("l", "a")
    assert r.eval("return redis.call('lmove', KEYS[1], KEYS[2], 'left', 'right')",
                  2, "l", "l2") == b"a"


def test_numbers_sent_to_commands(r):
    r.eval("redis.call('set', KEYS[1], 0.1 + 0.2)", 1, "f")
    assert r.get("f") == b"0.30000000000000004"
    r.eval("redis.call('set', KEYS[1], 12345678901234)", 1, "i")
    assert r.get("i") == b"12345678901234"


@pytest.mark.parametrize("undeclared", [False, True], ids=["declared", "undeclared"])
def test_transfers_are_atomic(server, r, undeclared):
    """Scripts move amounts between accounts on different shards while readers check that the
    total never changes, with MGET and with a script that reads every account."""
    accounts = [f"acct:{i}" for i in range(16)]
    r.mset({a: 100 for a in accounts})
    total = 100 * len(accounts)
    move = """
        local from, to = KEYS[1], KEYS[2]
        if #KEYS == 0 then from, to = ARGV[2], ARGV[3] end
        local n = tonumber(ARGV[1])
        if tonumber(redis.call('get', from)) < n then return 0 end
        redis.call('decrby', from, n)
        redis.call('incrby', to, n)
        return 1"""
    read_all = "local s = 0 for _, k in ipairs(ARGV) do s = s + redis.call('get', k) end return s"
    stop = threading.Event()
    violations = []

    def mover(seed):
        rng = random.Random(seed)
        c = server.client()
        while not stop.is_set():
            a, b = rng.sample(accounts, 2)
            if undeclared:
                c.eval(move, 0, rng.randint(1, 20), a, b)
            else:
                c.eval(move, 2, a, b, rng.randint(1, 20))
        c.close()

    def reader(use_script):
        c = server.client()
        while not stop.is_set():
            if use_script:
                s = c.eval(read_all, 0, *accounts)
            else:
                s = sum(int(v) for v in c.mget(accounts))
            if s != total:
                violations.append(s)
        c.close()

    threads = [threading.Thread(target=mover, args=(i,)) for i in range(4)]
    threads += [threading.Thread(target=reader, args=(i % 2 == 0,)) for i in range(2)]
    for t in threads:
        t.start()
    stop.wait(2.0)
    stop.set()
    for t in threads:
        t.join()
    assert violations == []
    assert sum(int(v) for v in r.mget(accounts)) == total


def test_info_memory_script_fields(r):
    r.script_flush()
    before = r.info("memory")
    assert before["number_of_cached_scripts"] == 0
    body = "return 'info " + "x" * 100 + "'"
    r.eval(body, 0)
    r.eval("return redis.call('ping')", 0)
    after = r.info("memory")
    assert after["number_of_cached_scripts"] == 2
    assert after["used_memory_scripts_eval"] > len(body)
    assert after["used_memory_lua"] > 0 and after["used_memory_vm_eval"] == after["used_memory_lua"]
    assert after["used_memory_vm_total"] >= after["used_memory_vm_eval"]
    assert after["used_memory_scripts"] >= after["used_memory_scripts_eval"]
    for field in ("used_memory_lua_human", "used_memory_vm_total_human",
                  "used_memory_scripts_human", "number_of_functions", "used_memory_functions",
                  "used_memory_vm_functions"):
        assert field in after
    r.script_flush()
    assert r.info("memory")["number_of_cached_scripts"] == 0


def test_script_flags_under_maxmemory(r):
    r.set("k", "v")
    r.config_set("maxmemory", 1)
    try:
        with pytest.raises(redis.ResponseError, match="^OOM command not allowed when used memory"):
            r.eval("#!lua\nreturn 1", 0)
        assert r.eval("#!lua flags=allow-oom\nreturn redis.call('get', KEYS[1])", 1, "k") == b"v"
        assert r.eval("#!lua flags=no-writes\nreturn redis.call('get', KEYS[1])", 1, "k") == b"v"
        # Without a shebang the script runs; its writes are refused one by one.
        assert r.eval("return redis.call('get', KEYS[1])", 1, "k") == b"v"
        with pytest.raises(redis.ResponseError, match="OOM command not allowed"):
            r.eval("return redis.call('set', KEYS[1], 'x')", 1, "k")
    finally:
        r.config_set("maxmemory", 0)
    assert r.eval("#!lua\nreturn redis.call('set', KEYS[1], 'x')", 1, "k") == b"OK"
