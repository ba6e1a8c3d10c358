"""Pipelined scripts (EVAL, EVALSHA, FCALL and their _RO kin) batched with the connection's other
commands for their keys' shard (docs/pipelines.md, "Scripts in a pipeline"): the replies and the
final state of pipelines that mix scripts and plain commands on keys of every shard match
redis-server's, with undeclared keys, script errors and MULTI in the middle; a client's pipelined
scripts take effect in the order it sent them, as other clients see them; pipelined scripts stay
atomic under concurrency."""

import random
import threading
import time

import pytest

from conftest import RespConn, flushed_pair
from test_pipeline_order import _mixed_pipeline, same_replies

INCR_GET = "redis.call('incr', KEYS[1]) return redis.call('get', KEYS[1])"
# Touches a key it was not given: on another shard it aborts and reruns holding both.
UNDECLARED = "redis.call('incr', KEYS[1]) return redis.call('incr', 'u' .. KEYS[1])"
APPEND = "return redis.call('append', KEYS[1], ARGV[1])"
RPUSH_LLEN = "redis.call('rpush', KEYS[1], ARGV[1]) return redis.call('llen', KEYS[1])"
# Two declared keys, on one shard or two.
MOVE = ("local v = redis.call('get', KEYS[1]) or '0' "
        "redis.call('set', KEYS[2], v) return redis.call('del', KEYS[1])")
READ_ONLY = "#!lua flags=no-writes\nreturn redis.call('get', KEYS[1])"
ERROR_REPLY = "redis.call('incr', KEYS[1]) return redis.error_reply('MYERR stop here')"
LIBRARY = ("#!lua name=plib\n"
           "redis.register_function('pincr', function(keys, args) "
           "return redis.call('incrby', keys[1], args[1]) end)\n"
           "redis.register_function{function_name='pget', flags={'no-writes'}, "
           "callback=function(keys, args) return redis.call('get', keys[1]) end}")

SCRIPTS = [INCR_GET, UNDECLARED, APPEND, RPUSH_LLEN, MOVE, READ_ONLY, ERROR_REPLY]


def _load(conn):
    """Loads the scripts and the library; returns their SHAs."""
    conn.call("SCRIPT", "FLUSH")
    conn.call("FUNCTION", "FLUSH")
    assert conn.call("FUNCTION", "LOAD", LIBRARY) == b"plib"
    return {s: conn.call("SCRIPT", "LOAD", s).decode() for s in SCRIPTS}


def _script_call(rng, shas, k, k2):
    """One script command on keys of the plain pipeline's kinds (k a string, l<k> a list)."""
    choice = rng.randrange(12)
    if choice < 4:
        return ("EVALSHA", shas[INCR_GET], 1, k)
    if choice == 4:
        return ("EVAL", INCR_GET, 1, k)
    if choice == 5:
        return ("EVALSHA", shas[UNDECLARED], 1, k)
    if choice == 6:
        return ("EVALSHA", shas[APPEND], 1, f"s{k}", "x")
    if choice == 7:
        return ("EVALSHA", shas[RPUSH_LLEN], 1, f"l{k}", str(rng.randrange(9)))
    if choice == 8 and k != k2:
        return ("EVALSHA", shas[MOVE], 2, k, k2)
    if choice == 8:
        return ("EVALSHA_RO", shas[READ_ONLY], 1, k)
    if choice == 9:
        return ("EVALSHA", shas[ERROR_REPLY], 1, k)
    if choice == 10:
        return ("FCALL", "pincr", 1, k, str(rng.randrange(5)))
    return ("FCALL_RO", "pget", 1, k)


def _mixed(rng, shas, n):
    """test_pipeline_order's mixed pipeline (plain commands on keys of every shard, MULTI/EXEC,
    blocking pops, SELECT, connection commands) with as many script commands spread through it."""
    cmds = _mixed_pipeline(rng, n)
    keys = [f"k{i}" for i in range(12)] + ["{t}x", "{t}y"]
    for _ in range(n):
        cmds.insert(rng.randrange(len(cmds) + 1),
                    _script_call(rng, shas, rng.choice(keys), rng.choice(keys)))
    cmds.append(("SELECT", "0"))
    return cmds


def _state(conn):
    """Every key of databases 0 and 1 with its value."""
    state = {}
    for db in ("0", "1"):
        conn.call("SELECT", db)
        for key in conn.call("KEYS", "*"):
            is_list = conn.call_raw("TYPE", key) == b"+list\r\n"
            value = conn.call("LRANGE", key, 0, -1) if is_list else conn.call("GET", key)
            state[(db, key)] = value
    conn.call("SELECT", "0")
    return state


@pytest.mark.shardis_only
def test_mixed_pipelines_with_scripts_match_redis(server, redis_server):
    """Pipelines of scripts (declared and undeclared keys, two keys, read-only, error replies,
    functions) mixed with plain commands, MULTI/EXEC and SELECT, each sent in one write: the same
    replies, byte for byte, and the same data as redis-server."""
    ours, ref = server.raw(), redis_server.raw()
    for conn in (ours, ref):
        conn.call("FLUSHALL")
    shas = _load(ours)
    assert _load(ref) == shas
    rng = random.Random(16)
    for round_no in range(25):
        same_replies(ours, ref, _mixed(rng, shas, rng.randrange(5, 80)), f"round {round_no}")
    assert _state(ours) == _state(ref)
    for conn in (ours, ref):
        conn.call("FUNCTION", "FLUSH")
        conn.call("FLUSHALL")
        conn.close()


def test_thousand_evalsha_on_random_keys(r):
    """1000 pipelined EVALSHA of INCR + GET on random keys: each reply is the key's count so far,
    in request order."""
    sha = r.script_load(INCR_GET)
    rng = random.Random(1000)
    keys = [f"key:{rng.randrange(200)}" for _ in range(1000)]
    pipe = r.pipeline(transaction=False)
    for k in keys:
        pipe.evalsha(sha, 1, k)
    replies = pipe.execute()
    counts = {}
    for k, got in zip(keys, replies):
        counts[k] = counts.get(k, 0) + 1
        assert got == str(counts[k]).encode(), k
    assert {k: int(v) for k, v in zip(counts, r.mget(list(counts)))} == counts


def test_undeclared_keys_in_a_pipeline(r):
    """Scripts that touch a key they were not given, pipelined among declared ones and plain
    commands: every one runs once, in order (an aborted run leaves no trace)."""
    undeclared = r.script_load(UNDECLARED)
    incr_get = r.script_load(INCR_GET)
    rng = random.Random(7)
    pipe = r.pipeline(transaction=False)
    expected = []
    counts = {}
    for i in range(400):
        k = f"k{rng.randrange(20)}"
        if i % 3 == 0:
            pipe.evalsha(undeclared, 1, k)
            counts[k] = counts.get(k, 0) + 1
            counts["u" + k] = counts.get("u" + k, 0) + 1
            expected.append(counts["u" + k])
        elif i % 3 == 1:
            pipe.evalsha(incr_get, 1, k)
            counts[k] = counts.get(k, 0) + 1
            expected.append(str(counts[k]).encode())
        else:
            pipe.incr(k)
            counts[k] = counts.get(k, 0) + 1
            expected.append(counts[k])
    assert pipe.execute() == expected
    assert {k: int(v) for k, v in zip(counts, r.mget(list(counts)))} == counts


def test_script_error_in_the_middle_of_a_pipeline(raw):
    """A script that fails (a runtime error, a command error, an unknown SHA) replies with its
    error; the commands before and after it in the pipeline run as usual."""
    keys = [f"e{i}" for i in range(8)]
    sha = raw.call("SCRIPT", "LOAD", INCR_GET).decode()
    cmds = []
    for k in keys:
        cmds.append(("SET", k, "1"))
        cmds.append(("EVALSHA", sha, 1, k))
        cmds.append(("EVAL", "return redis.call('lpush', KEYS[1], 'x')", 1, k))  # WRONGTYPE
        cmds.append(("EVAL", "error('boom')", 1, k))
        cmds.append(("EVALSHA", "0" * 40, 1, k))
        cmds.append(("EVAL", "return redis.call('incr', KEYS[1])", 1, k))
        cmds.append(("GET", k))
    raw.send(b"".join(RespConn.encode(*c) for c in cmds))
    for k in keys:
        assert raw.read_reply()[0] == b"+OK\r\n"
        assert raw.read_reply()[1] == b"2"
        wrongtype = raw.read_reply()[0]
        assert wrongtype.startswith(b"-WRONGTYPE"), wrongtype
        boom = raw.read_reply()[0]
        assert boom.startswith(b"-ERR user_script:1: boom"), boom
        assert raw.read_reply()[0].startswith(b"-NOSCRIPT")
        assert raw.read_reply()[1] == 3
        assert raw.read_reply()[1] == b"3"


def test_multi_with_scripts_in_a_pipeline(raw):
    """MULTI ... EXEC around pipelined scripts and plain commands, with scripts before and after
    it in the same pipeline."""
    sha = raw.call("SCRIPT", "LOAD", INCR_GET).decode()
    keys = [f"m{i}" for i in range(10)]
    cmds = [("EVALSHA", sha, 1, k) for k in keys] + [("MULTI",)]
    for k in keys:
        cmds += [("EVALSHA", sha, 1, k), ("INCR", k)]
    cmds += [("EXEC",)] + [("EVALSHA", sha, 1, k) for k in keys]
    raw.send(b"".join(RespConn.encode(*c) for c in cmds))
    replies = [raw.read_reply()[1] for _ in cmds]
    assert replies[:10] == [b"1"] * 10
    assert replies[10] == b"OK"
    assert replies[11:31] == [b"QUEUED"] * 20
    assert replies[31] == [v for _ in keys for v in (b"2", 3)]
    assert replies[32:] == [b"4"] * 10


def test_pipelined_scripts_take_effect_in_order(server):
    """A writer pipelines SET a:i then SET b:i, each through a script, on keys of different
    shards; readers that see b:i must see a:i (a later script never overtakes an earlier one)."""
    setter = "return redis.call('set', KEYS[1], ARGV[1])"
    c = server.client()
    sha = c.script_load(setter)
    stop = time.monotonic() + 3
    errors = []
    last = [-1]

    def writer():
        conn = server.raw()
        i = 0
        while time.monotonic() < stop:
            cmds = []
            for j in range(i, i + 32):
                cmds.append(("EVALSHA", sha, 1, f"a:{j}", "1"))
                cmds.append(("EVALSHA", sha, 1, f"b:{j}", "1"))
            conn.send(b"".join(RespConn.encode(*cmd) for cmd in cmds))
            for _ in cmds:
                conn.read_reply()
            i += 32
            last[0] = i
        conn.close()

    def reader(seed):
        rng = random.Random(seed)
        cl = server.client()
        while time.monotonic() < stop:
            top = last[0]
            if top <= 0:
                continue
            picks = [rng.randrange(top + 32) for _ in range(32)]
            pipe = cl.pipeline(transaction=False)
            for p in picks:
                pipe.mget(f"b:{p}", f"a:{p}")
            for p, (b, a) in zip(picks, pipe.execute()):
                if b is not None and a is None:
                    errors.append(p)
        cl.close()

    threads = [threading.Thread(target=writer)] + \
        [threading.Thread(target=reader, args=(s,)) for s in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    c.close()
    assert last[0] > 0
    assert not errors, f"b:i seen before a:i for {errors[:5]}"


def test_pipelined_transfers_are_atomic(server):
    """Pipelines of transfer scripts (one declared key and the other undeclared: batched, and
    rerun holding both when they are on two shards; or both declared) while readers check with
    MGET and a script that the total never changes."""
    accounts = [f"acct:{i}" for i in range(16)]
    c = server.client()
    c.mset({a: 100 for a in accounts})
    total = 100 * len(accounts)
    move = c.script_load("""
        local from, to = KEYS[1], KEYS[2] or ARGV[2]
        local n = tonumber(ARGV[1])
        if tonumber(redis.call('get', from)) < n then return 0 end
        redis.call('decrby', from, n)
        redis.call('incrby', to, n)
        return 1""")
    read_all = c.script_load(
        "local s = 0 for _, k in ipairs(ARGV) do s = s + redis.call('get', k) end return s")
    stop = time.monotonic() + 2
    violations = []

    def mover(seed):
        rng = random.Random(seed)
        cl = server.client()
        while time.monotonic() < stop:
            pipe = cl.pipeline(transaction=False)
            for _ in range(16):
                a, b = rng.sample(accounts, 2)
                if rng.randrange(4) == 0:
                    pipe.evalsha(move, 2, a, b, rng.randint(1, 20))
                else:
                    pipe.evalsha(move, 1, a, rng.randint(1, 20), b)
            pipe.execute()
        cl.close()

    def reader(use_script):
        cl = server.client()
        while time.monotonic() < stop:
            pipe = cl.pipeline(transaction=False)
            for _ in range(8):
                if use_script:
                    pipe.evalsha(read_all, 0, *accounts)
                else:
                    pipe.mget(accounts)
            for got in pipe.execute():
                s = got if use_script else sum(int(v) for v in got)
                if s != total:
                    violations.append(s)
        cl.close()

    threads = [threading.Thread(target=mover, args=(i,)) for i in range(3)]
    threads += [threading.Thread(target=reader, args=(i % 2 == 0,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert violations == []
    assert sum(int(v) for v in c.mget(accounts)) == total
    c.close()


def test_busy_script_in_a_pipeline(server, r):
    """A script that runs past busy-reply-threshold among pipelined scripts on keys of every
    shard: other clients get -BUSY, SCRIPT KILL stops it, its caller gets the kill error in its
    place, and the scripts before and after it run once each."""
    from test_scripting_busy import wait_busy
    r.config_set("busy-reply-threshold", 100)
    try:
        incr = r.script_load(INCR_GET)
        loop = r.script_load("local i = 0 while true do i = i + 1 end")
        keys = [f"busy{i}" for i in range(8)]
        cmds = [("EVALSHA", incr, 1, k) for k in keys] + [("EVALSHA", loop, 1, keys[3])] + \
            [("EVALSHA", incr, 1, k) for k in keys]
        runner = server.raw()
        runner.send(b"".join(RespConn.encode(*c) for c in cmds))
        others = [server.client() for _ in range(4)]  # on every thread
        for c in others:
            wait_busy(c)
        assert r.script_kill() is True
        replies = [runner.read_reply() for _ in cmds]
        assert [parsed for _, parsed in replies[:8]] == [b"1"] * 8
        assert b"Script killed by user with SCRIPT KILL" in replies[8][0], replies[8][0]
        assert [parsed for _, parsed in replies[9:]] == [b"2"] * 8
        for c in others:
            assert c.ping() is True
            c.close()
        runner.close()
    finally:
        r.config_set("busy-reply-threshold", 5000)


def test_tracking_client_pipelines_scripts(server, r):
    """A RESP3 tracking client's pipelined read scripts on keys of every shard remember their
    keys: a later write to each key sends the client its invalidation."""
    getter = r.script_load("return redis.call('get', KEYS[1])")
    keys = [f"t{i}" for i in range(8)]
    r.mset({k: "v" for k in keys})
    conn = server.raw()
    conn.call("HELLO", "3")
    assert conn.call("CLIENT", "TRACKING", "ON") == b"OK"
    cmds = [("EVALSHA", getter, 1, k) for k in keys]
    conn.send(b"".join(RespConn.encode(*c) for c in cmds))
    assert [conn.read_reply()[1] for _ in cmds] == [b"v"] * len(keys)
    for k in keys:
        r.set(k, "w")
    invalidated = set()
    while len(invalidated) < len(keys):
        push = conn.read_reply()[1]
        assert push[0] == b"invalidate", push
        invalidated.update(push[1])
    assert invalidated == {k.encode() for k in keys}
    conn.close()


@pytest.mark.shardis_only
def test_script_flags_in_a_pipeline_match_redis(server, redis_server):
    """Pipelined scripts with flags on keys of every shard, under maxmemory and not: a flagged
    script that may write is refused (OOM), allow-oom and no-writes ones run, a shebang-less one's
    writes are refused one by one, EVAL_RO refuses a writing script: the same replies as
    redis-server's."""
    scripts = ["#!lua\nreturn redis.call('set', KEYS[1], 'x')",
               "#!lua flags=allow-oom\nreturn redis.call('get', KEYS[1])",
               "#!lua flags=no-writes\nreturn redis.call('get', KEYS[1])",
               "return redis.call('get', KEYS[1])",
               "return redis.call('set', KEYS[1], 'y')"]
    keys = [f"f{i}" for i in range(8)]
    with flushed_pair(server, redis_server, reset=[("CONFIG", "SET", "maxmemory", "0")]) \
            as (ours, ref):
        for conn in (ours, ref):
            conn.call("MSET", *[x for k in keys for x in (k, "v")])
            conn.call("SCRIPT", "FLUSH")
        shas = [ours.call("SCRIPT", "LOAD", s).decode() for s in scripts]
        assert [ref.call("SCRIPT", "LOAD", s).decode() for s in scripts] == shas
        cmds = [("EVALSHA", sha, 1, k) for k in keys for sha in shas] + \
            [("EVALSHA_RO", shas[0], 1, k) for k in keys]
        same_replies(ours, ref, cmds, "no limit")
        for conn in (ours, ref):
            conn.call("CONFIG", "SET", "maxmemory", "1")
        same_replies(ours, ref, cmds, "maxmemory 1")
