"""Functions (FUNCTION LOAD|DELETE|LIST|FLUSH|DUMP|RESTORE|KILL|STATS|HELP, FCALL, FCALL_RO):
replies compared byte for byte with the Debian redis-server 7.0 (`redis_server` fixture), error
texts included, in RESP2 and RESP3; libraries across connections and threads; functions that
touch keys they did not declare; DUMP/RESTORE between the two servers; functions in snapshots
(a restart keeps them, and RDB files carry them both ways).

Run against redis-server itself with SHARDIS_TEST_TARGET=redis to check the tests."""

import shutil
import threading

import pytest
import redis

from persistence_util import launch, shutdown  # noqa: F401  (launch is a fixture)


def lib(name, body):
    return f"#!lua name={name}\n{body}"


LIB = lib("mylib", """
local function helper(s) return string.rep(s, 2) end
redis.register_function('echo', function(keys, args) return {keys, args} end)
redis.register_function('twice', function(keys, args) return helper(args[1]) end)
redis.register_function('setget', function(keys, args)
  redis.call('set', keys[1], args[1])
  return redis.call('get', keys[1])
end)
redis.register_function('boom', function(keys, args) error('boom') end)
redis.register_function('nocmd', function(keys, args) return redis.call('nosuch') end)
redis.register_function('gwrite', function(keys, args) x = 1 end)
redis.register_function('keysglobal', function(keys, args) return KEYS end)
redis.register_function('register', function(keys, args)
  return redis.register_function('zz', function() end)
end)
redis.register_function{function_name='ro_get', callback=function(keys, args)
  return redis.call('get', keys[1]) end, flags={'no-writes'}, description='reads a key'}
redis.register_function{function_name='ro_set', callback=function(keys, args)
  return redis.call('set', keys[1], 'x') end, flags={'no-writes'}}
redis.register_function{function_name='flagged', callback=function() return 1 end,
  flags={'allow-oom', 'ALLOW-STALE', 'no-cluster', 'allow-cross-slot-keys', 'no-writes'}}
redis.register_function('resp3', function(keys, args)
  redis.setresp(3)
  return {redis.call('hgetall', keys[1]), {double=1.5}, true, false}
end)
""")

# Each case: commands run in order on a flushed server; every raw reply must match Redis'.
LOAD_CASES = {
    "load": [("FUNCTION", "LOAD", lib("l1", "redis.register_function('f1', function() end)"))],
    "exists": [("FUNCTION", "LOAD", lib("l1", "redis.register_function('f1', function() end)")),
               ("FUNCTION", "LOAD", lib("l1", "redis.register_function('f1', function() end)"))],
    "replace": [("FUNCTION", "LOAD", lib("l1", "redis.register_function('f1', function() return 1 end)")),
                ("FUNCTION", "LOAD", "REPLACE", lib("l1", "redis.register_function('f2', function() return 2 end)")),
                ("FCALL", "f1", "0"), ("FCALL", "f2", "0")],
    "collision": [("FUNCTION", "LOAD", lib("l1", "redis.register_function('f1', function() end)")),
                  ("FUNCTION", "LOAD", lib("l2", "redis.register_function('F1', function() end)")),
                  ("FUNCTION", "LOAD", "REPLACE", lib("l2", "redis.register_function('f1', function() end)"))],
    "dup_in_lib": [("FUNCTION", "LOAD", lib("l1", "redis.register_function('f', function() end)\n"
                                              "redis.register_function('f', function() end)"))],
    "no_name": [("FUNCTION", "LOAD", "#!lua\nredis.register_function('f', function() end)")],
    "no_shebang": [("FUNCTION", "LOAD", "redis.register_function('f', function() end)")],
    "no_newline": [("FUNCTION", "LOAD", "#!lua name=x")],
    "bad_meta": [("FUNCTION", "LOAD", "#!lua name=x foo=bar\n")],
    "two_names": [("FUNCTION", "LOAD", "#!lua name=a name=b\n")],
    "engine": [("FUNCTION", "LOAD", "#!js name=x\n")],
    "engine_case": [("FUNCTION", "LOAD", "#!LUA name=x\nredis.register_function('f', function() end)")],
    "bad_lib_name": [("FUNCTION", "LOAD", "#!lua name=a-b\n")],
    # The first line is split as Redis' sdssplitargs (TCL "function test name with quotes").
    "quoted_name": [("FUNCTION", "LOAD", "#!lua name=\"foo\"\nredis.register_function('f', function() return 1 end)"),
                    ("FCALL", "f", "0")],
    "quoted_space": [("FUNCTION", "LOAD", "#!lua name=\"a b\"\n")],
    "unbalanced_quote": [("FUNCTION", "LOAD", "#!lua name=\"foo\n")],
    "crlf_first_line": [("FUNCTION", "LOAD", "#!lua name=crlf\r\nredis.register_function('g', function() return 2 end)"),
                        ("FCALL", "g", "0")],
    "call_at_load": [("FUNCTION", "LOAD", lib("l", "redis.call('set', 'x', 'y')"))],
    "string_at_load": [("FUNCTION", "LOAD", lib("l", "local s = string.format('%d', 1)"))],
    "global_at_load": [("FUNCTION", "LOAD", lib("l", "x = 1"))],
    "nothing": [("FUNCTION", "LOAD", lib("l", "return 1"))],
    "syntax": [("FUNCTION", "LOAD", lib("l", "syntax error here"))],
    "error_at_load": [("FUNCTION", "LOAD", lib("l", "error('oops')"))],
    "bad_fn_name": [("FUNCTION", "LOAD", lib("l", "redis.register_function('f-1', function() end)"))],
    "number_name": [("FUNCTION", "LOAD", lib("l", "redis.register_function(5, function() return 5 end)")),
                    ("FCALL", "5", "0")],
    "one_arg": [("FUNCTION", "LOAD", lib("l", "redis.register_function('f')"))],
    "three_args": [("FUNCTION", "LOAD", lib("l", "redis.register_function(1, 2, 3)"))],
    "not_function": [("FUNCTION", "LOAD", lib("l", "redis.register_function('f', 1)"))],
    "name_not_string": [("FUNCTION", "LOAD", lib("l", "redis.register_function({}, function() end)"))],
    "bad_flag": [("FUNCTION", "LOAD", lib("l", "redis.register_function{function_name='f', "
                                                "callback=function() end, flags={'no-writes', 'bad'}}"))],
    "flags_not_table": [("FUNCTION", "LOAD", lib("l", "redis.register_function{function_name='f', "
                                                      "callback=function() end, flags='no-writes'}"))],
    "unknown_arg": [("FUNCTION", "LOAD", lib("l", "redis.register_function{function_name='f', "
                                                  "callback=function() end, foo=1}"))],
    "no_callback": [("FUNCTION", "LOAD", lib("l", "redis.register_function{function_name='f'}"))],
    "no_fn_name": [("FUNCTION", "LOAD", lib("l", "redis.register_function{callback=function() end}"))],
    "bad_callback": [("FUNCTION", "LOAD", lib("l", "redis.register_function{function_name='f', callback=1}"))],
    "bad_description": [("FUNCTION", "LOAD", lib("l", "redis.register_function{function_name='f', "
                                                      "callback=function() end, description={}}"))],
    "log_at_load": [("FUNCTION", "LOAD", lib("l", "redis.log(redis.LOG_NOTICE, 'loading', redis.REDIS_VERSION)\n"
                                                  "redis.register_function('f', function() return redis.REDIS_VERSION_NUM >= 0x00070000 end)")),
                    ("FCALL", "f", "0")],
    "options": [("FUNCTION", "LOAD", "REPLACE"), ("FUNCTION", "LOAD", "foo", "bar"),
                ("FUNCTION", "LOAD")],
    "delete": [("FUNCTION", "LOAD", lib("l1", "redis.register_function('f1', function() end)")),
               ("FUNCTION", "DELETE", "L1"), ("FUNCTION", "DELETE", "l1"), ("FUNCTION", "DELETE", "l1"),
               ("FCALL", "f1", "0"), ("FUNCTION", "DELETE")],
    "flush": [("FUNCTION", "LOAD", lib("l1", "redis.register_function('f1', function() end)")),
              ("FUNCTION", "FLUSH", "x"), ("FUNCTION", "FLUSH", "a", "b"), ("FUNCTION", "FLUSH", "ASYNC"),
              ("FUNCTION", "LIST"), ("FUNCTION", "FLUSH", "sync"), ("FUNCTION", "FLUSH")],
    "list": [("FUNCTION", "LOAD", LIB), ("FUNCTION", "LIST", "LIBRARYNAME", "nomatch"),
             ("FUNCTION", "LIST", "LIBRARYNAME"), ("FUNCTION", "LIST", "foo"),
             ("FUNCTION", "LIST", "WITHCODE", "WITHCODE")],
    "stats": [("FUNCTION", "LOAD", LIB), ("FUNCTION", "STATS"), ("FUNCTION", "KILL"),
              ("FUNCTION", "STATS", "x")],
    "help": [("FUNCTION", "HELP"), ("FUNCTION", "NOSUCH")],
    # One function per library: Redis lists a library's functions in its hash table's order.
    "list_one": [("FUNCTION", "LOAD", lib("solo", "redis.register_function{function_name='s', "
                                                "callback=function() end, flags={'no-writes', 'allow-oom'}, "
                                                "description='one'}")),
                 ("FUNCTION", "LIST", "LIBRARYNAME", "so*"), ("FUNCTION", "LIST", "WITHCODE"),
                 ("FUNCTION", "LIST", "withcode", "libraryname", "solo")],
    "restore_errors": [("FUNCTION", "RESTORE", "garbage"),
                       ("FUNCTION", "RESTORE", "x", "BADPOLICY"),
                       ("FUNCTION", "RESTORE", "x", "APPEND", "extra")],
}

# FCALL cases on LIB (loaded on both servers).
FCALL_CASES = [
    ("FCALL", "echo", "2", "k1", "k2", "a1", "a2"),
    ("FCALL", "ECHO", "0"),
    ("FCALL", "twice", "0", "ab"),
    ("FCALL", "setget", "1", "k", "v"),
    ("FCALL", "boom", "0"),
    ("FCALL", "nocmd", "0"),
    ("FCALL", "gwrite", "0"),
    ("FCALL", "keysglobal", "0"),
    ("FCALL", "register", "0"),
    ("FCALL", "resp3", "1", "h"),
    ("FCALL", "nosuch", "0"),
    ("FCALL", "echo", "x"),
    ("FCALL", "echo", "3", "a"),
    ("FCALL", "echo", "-1"),
    ("FCALL", "echo"),
    ("FCALL_RO", "echo", "0"),
    ("FCALL_RO", "ro_get", "1", "k"),
    ("FCALL", "ro_get", "1", "k"),
    ("FCALL", "ro_set", "1", "k"),
    ("FCALL_RO", "ro_set", "1", "k"),
    ("FCALL", "flagged", "0"),
    ("EVAL", "return redis.call('fcall', 'echo', 0)", "0"),
]


@pytest.fixture
def ref(redis_server):
    c = redis_server.client()
    c.flushall()
    c.function_flush()
    yield c
    c.close()


@pytest.fixture
def fr(r):
    """`r` with no libraries."""
    r.function_flush()
    yield r


def raw_calls(srv, commands, resp3=False):
    conn = srv.raw()
    try:
        if resp3:
            conn.call("HELLO", "3")
        return [conn.call_raw(*cmd) for cmd in commands]
    finally:
        conn.close()


@pytest.mark.parametrize("resp3", [False, True], ids=["resp2", "resp3"])
@pytest.mark.parametrize("case", sorted(LOAD_CASES))
def test_function_commands_match_redis(fr, server, ref, redis_server, case, resp3):
    commands = LOAD_CASES[case]
    assert raw_calls(server, commands, resp3) == raw_calls(redis_server, commands, resp3)


@pytest.mark.parametrize("resp3", [False, True], ids=["resp2", "resp3"])
@pytest.mark.parametrize("command", FCALL_CASES, ids=lambda c: " ".join(c)[:40])
def test_fcall_replies_match_redis(fr, server, ref, redis_server, command, resp3):
    for c in (fr, ref):
        c.function_load(LIB)
        c.hset("h", mapping={"f1": "v1"})
        c.set("k", "1")
    assert raw_calls(server, [command], resp3) == raw_calls(redis_server, [command], resp3)


def test_list_describes_libraries(fr):
    fr.function_load(LIB)
    fr.function_load(lib("other", "redis.register_function('o1', function() return 1 end)"))
    listed = fr.function_list(withcode=True)
    by_name = {e[b"library_name"]: e for e in (dict_of(x) for x in listed)}
    assert set(by_name) == {b"mylib", b"other"}
    assert by_name[b"other"][b"library_code"].decode() == \
        lib("other", "redis.register_function('o1', function() return 1 end)")
    fns = {dict_of(f)[b"name"]: dict_of(f) for f in by_name[b"mylib"][b"functions"]}
    assert fns[b"ro_get"][b"description"] == b"reads a key"
    assert fns[b"ro_get"][b"flags"] == [b"no-writes"]
    assert fns[b"echo"][b"description"] is None
    assert sorted(fns[b"flagged"][b"flags"]) == sorted(
        [b"no-writes", b"allow-oom", b"allow-stale", b"no-cluster", b"allow-cross-slot-keys"])
    stats = dict_of(fr.execute_command("FUNCTION", "STATS"))
    assert stats[b"running_script"] is None
    engines = dict_of(stats[b"engines"])
    assert dict_of(engines[b"LUA"]) == {b"libraries_count": 2, b"functions_count": len(fns) + 1}


def dict_of(x):
    if isinstance(x, dict):
        return x
    return {x[i]: x[i + 1] for i in range(0, len(x), 2)}


def test_functions_across_connections(server, fr):
    """A library loaded on one connection is known on every other, whatever its thread."""
    clients = [server.client() for _ in range(8)]
    fr.function_load(lib("shared", "redis.register_function('inc', function(keys, args) "
                                   "return redis.call('incr', keys[1]) end)"))
    for i, c in enumerate(clients):
        assert c.fcall("inc", 1, f"counter{i}") == 1
    fr.function_load(lib("shared", "redis.register_function('inc', function(keys, args) "
                                   "return redis.call('incrby', keys[1], 10) end)"), replace=True)
    for i, c in enumerate(clients):
        assert c.fcall("inc", 1, f"counter{i}") == 11
    fr.function_delete("shared")
    for c in clients:
        with pytest.raises(redis.ResponseError, match="Function not found"):
            c.fcall("inc", 1, "x")
        assert c.function_list() == []
        c.close()


def test_concurrent_loads_agree(server, fr):
    """Loads racing from many connections leave every thread with the same libraries."""
    clients = [server.client() for _ in range(8)]

    def load(i):
        for j in range(10):
            clients[i].function_load(
                lib(f"race{j}", f"redis.register_function('r{j}', function() return {i} end)"),
                replace=True)

    threads = [threading.Thread(target=load, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for j in range(10):
        answers = {c.fcall(f"r{j}", 0) for c in clients}
        assert len(answers) == 1, (j, answers)
    for c in clients:
        c.close()


def test_fcall_undeclared_keys(server, fr):
    """A function may touch keys it did not declare (shardis reruns it over every shard)."""
    fr.function_load(lib("undecl", """
redis.register_function('move', function(keys, args)
  local v = redis.call('decrby', args[1], 1)
  redis.call('incrby', args[2], 1)
  return v
end)
redis.register_function('sum', function(keys, args)
  local s = 0
  for i = 1, #args do s = s + tonumber(redis.call('get', args[i]) or 0) end
  return s
end)
"""))
    names = [f"acct{i}" for i in range(8)]
    for n in names:
        fr.set(n, 100)
    stop = threading.Event()
    bad = []

    def mover(i):
        c = server.client()
        for j in range(100):
            c.fcall("move", 0, names[(i + j) % 8], names[(i + 2 * j + 1) % 8])
        c.close()

    def checker():
        c = server.client()
        while not stop.is_set():
            total = c.fcall("sum", 0, *names)
            if total != 800:
                bad.append(total)
        c.close()

    check = threading.Thread(target=checker)
    check.start()
    movers = [threading.Thread(target=mover, args=(i,)) for i in range(4)]
    for t in movers:
        t.start()
    for t in movers:
        t.join()
    stop.set()
    check.join()
    assert bad == []
    assert sum(int(fr.get(n)) for n in names) == 800


def test_fcall_ro_refuses_writes(fr):
    fr.function_load(LIB)
    with pytest.raises(redis.ResponseError, match="write flag using \\*_ro command"):
        fr.fcall_ro("setget", 1, "k", "v")
    with pytest.raises(redis.ResponseError, match="Write commands are not allowed from read-only scripts"):
        fr.fcall("ro_set", 1, "k")
    fr.set("k", "v")
    assert fr.fcall_ro("ro_get", 1, "k") == b"v"
    assert fr.get("k") == b"v"


def test_fcall_in_multi(fr):
    fr.function_load(LIB)
    p = fr.pipeline(transaction=True)
    p.fcall("setget", 1, "a", "1")
    p.fcall("setget", 1, "b", "2")
    p.get("a")
    assert p.execute() == [b"1", b"2", b"1"]


def test_dump_restore_with_redis(fr, ref):
    """DUMP on one server, RESTORE on the other, both ways, with the three policies."""
    other = lib("other", "redis.register_function('o1', function() return 'o' end)")
    fr.function_load(LIB)
    payload = fr.function_dump()
    assert ref.function_restore(payload) is True
    assert ref.fcall("twice", 0, "ab") == b"abab"
    with pytest.raises(redis.ResponseError, match="Library mylib already exists"):
        ref.function_restore(payload)
    assert ref.function_restore(payload, "REPLACE") is True
    ref.function_load(other)
    back = ref.function_dump()
    for policy in ("FLUSH", "REPLACE"):
        assert fr.function_restore(back, policy) is True
        assert fr.fcall("o1", 0) == b"o" and fr.fcall("twice", 0, "x") == b"xx"
    with pytest.raises(redis.ResponseError, match="Library (mylib|other) already exists"):
        fr.function_restore(back, "APPEND")
    fr.function_flush()
    assert fr.function_restore(back) is True
    assert sorted(dict_of(e)[b"library_name"] for e in fr.function_list()) == [b"mylib", b"other"]
    # A function name taken by another library refuses the whole payload.
    fr.function_delete("other")
    fr.function_load(lib("thief", "redis.register_function('o1', function() end)"))
    with pytest.raises(redis.ResponseError, match="Function o1 already exists"):
        fr.function_restore(back, "REPLACE")
    # A corrupt payload.
    with pytest.raises(redis.ResponseError, match="payload version or checksum are wrong"):
        fr.function_restore(back[:-1] + bytes([back[-1] ^ 1]))


@pytest.mark.parametrize("threads", [1, 4])
def test_restart_keeps_functions(launch, tmp_path, threads):  # noqa: F811
    d = tmp_path / "data"
    srv = launch(d, threads=threads)
    c = srv.client()
    c.function_load(LIB)
    c.set("k", "v")
    assert c.save() is True
    assert shutdown(srv, "NOSAVE") == 0
    again = launch(d, threads=threads)
    c = again.client()
    assert c.fcall("twice", 0, "ab") == b"abab"
    assert c.fcall("ro_get", 1, "k") == b"v"
    assert len(c.function_list()) == 1
    # DEBUG RELOAD keeps them too.
    assert c.execute_command("DEBUG", "RELOAD") == b"OK"
    assert c.fcall("twice", 0, "cd") == b"cdcd"


@pytest.mark.shardis_only
def test_rdb_functions_both_ways(launch, tmp_path):  # noqa: F811
    """redis-server's dump.rdb with functions loads in shardis, and shardis' in redis-server."""
    ref = launch(tmp_path / "redis", redis=True)
    rc = ref.client()
    rc.function_load(LIB)
    assert rc.save() is True
    d = tmp_path / "data"
    d.mkdir()
    shutil.copy(tmp_path / "redis" / "dump.rdb", d / "dump.rdb")
    srv = launch(d, threads=2)
    c = srv.client()
    assert c.fcall("twice", 0, "ab") == b"abab"
    c.function_load(lib("more", "redis.register_function('m', function() return 'm' end)"))
    assert c.save() is True
    back = tmp_path / "back"
    back.mkdir()
    shutil.copy(d / "dump.rdb", back / "dump.rdb")
    ref2 = launch(back, redis=True, args=["--dbfilename", "dump.rdb"])
    rc2 = ref2.client()
    assert rc2.fcall("m", 0) == b"m"
    assert rc2.fcall("twice", 0, "x") == b"xx"
