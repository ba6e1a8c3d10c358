"""Lua scripting (EVAL, EVALSHA, EVAL_RO, SCRIPT): the script cache across connections and threads;
EVAL_RO and flags; scripts inside MULTI/EXEC; scripts that touch keys they did not declare
(which shardis adds to the script's transaction or reruns holding them) and their atomicity under
concurrency with --threads 1, 2, 4; INFO's fields; maxmemory. Replies, errors, the sandbox and
the libraries are compared with redis-server in test_scripting_{replies,errors,sandbox,
libraries}.py, busy scripts in test_scripting_busy.py, job-queue scripts in
test_scripting_jobs.py.

Run against redis-server itself with SHARDIS_TEST_TARGET=redis to check the tests."""

import random
import threading

import pytest
import redis

from conftest import TARGET
from script_util import ref  # noqa: F401


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


def test_time_is_fixed_for_the_run(r):
    # As in Redis, a script's commands all see the time its run started: a key that expires
    # while the script runs is still there for the script's later commands, then gone. Its PTTL
    # is then 1 in Redis 7.2 (measured from the run's time); 7.0 measured it from the clock (0).
    script = """
        redis.call('set', KEYS[1], 'v', 'px', 1)
        local start = redis.call('time')
        local waited = 0
        repeat
            local now = redis.call('time')
            waited = (now[1] - start[1]) * 1000000 + (now[2] - start[2])
        until waited > 20000
        return {redis.call('exists', KEYS[1]), redis.call('pttl', KEYS[1])}"""
    pttl = 0 if TARGET == "redis" else 1
    assert r.eval(script, 1, "short-lived") == [1, pttl]
    assert r.exists("short-lived") == 0


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
    stop.wait(1.5)
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
