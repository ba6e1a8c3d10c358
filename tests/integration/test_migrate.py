"""MIGRATE: moving keys between servers, as Redis 7.2's migrateCommand (src/cluster.c).

  - shardis -> redis-server, redis-server -> shardis and shardis -> shardis, values and TTLs kept;
  - the KEYS form with keys on every shard, COPY, REPLACE, AUTH and AUTH2 (requirepass, an ACL
    user), the destination database;
  - errors: NOKEY, BUSYKEY from the target (relayed as "Target instance replied with error"),
    a target that is down (connecting), one that accepts and never answers (reading), the syntax
    errors; their raw replies are compared with redis-server's as the source.

Run against redis-server (SHARDIS_TEST_TARGET=redis) the same file checks itself.
"""

from __future__ import annotations

import socket
import time

import pytest

from conftest import free_port
from persistence_util import launch, shutdown  # noqa: F401


KEYS = [f"mig:{i}" for i in range(12)]  # spread over every shard of a 2-thread server


def fill(c, keys):
    """One value of each type, cycling; every third key with a TTL."""
    for i, k in enumerate(keys):
        kind = i % 4
        if kind == 0:
            c.set(k, f"v{i}" * (i + 1))
        elif kind == 1:
            c.rpush(k, *[f"e{j}" for j in range(i + 1)])
        elif kind == 2:
            c.hset(k, mapping={f"f{j}": j for j in range(i + 1)})
        else:
            c.zadd(k, {f"m{j}": j for j in range(i + 1)})
        if i % 3 == 0:
            c.pexpire(k, 100_000)


def contents(c, keys):
    out = {}
    for k in keys:
        t = c.type(k)
        if t == b"string":
            out[k] = c.get(k)
        elif t == b"list":
            out[k] = c.lrange(k, 0, -1)
        elif t == b"hash":
            out[k] = c.hgetall(k)
        elif t == b"zset":
            out[k] = c.zrange(k, 0, -1, withscores=True)
        else:
            out[k] = t
    return out


def check_ttls(c, keys):
    for i, k in enumerate(keys):
        pttl = c.pttl(k)
        if i % 3 == 0:
            assert 90_000 < pttl <= 100_000, (k, pttl)
        else:
            assert pttl == -1, (k, pttl)


def migrate(conn, port, *args):
    return conn.call("MIGRATE", "127.0.0.1", port, *args)


@pytest.fixture
def target(redis_server):
    c = redis_server.client()
    c.flushall()
    yield c
    c.close()


def test_keys_form_to_redis(r, raw, redis_server, target):
    fill(r, KEYS)
    before = contents(r, KEYS)
    assert migrate(raw, redis_server.port, "", 0, 5000, "KEYS", *KEYS) == b"OK"
    assert r.exists(*KEYS) == 0
    assert contents(target, KEYS) == before
    check_ttls(target, KEYS)


def test_single_key_form_and_nokey(r, raw, redis_server, target):
    r.set("one", "1")
    assert migrate(raw, redis_server.port, "one", 0, 5000) == b"OK"
    assert target.get("one") == b"1" and not r.exists("one")
    assert migrate(raw, redis_server.port, "one", 0, 5000) == b"NOKEY"
    assert migrate(raw, redis_server.port, "", 0, 5000, "KEYS", "no1", "no2") == b"NOKEY"


def test_cached_connection_in_info(r, raw, redis_server, target):
    r.set("one", "1")
    assert migrate(raw, redis_server.port, "one", 0, 5000, "COPY") == b"OK"
    # The connection stays cached (Redis: 10 s idle) and INFO counts it.
    assert r.info("stats")["migrate_cached_sockets"] >= 1


def test_copy_replace_and_busykey(r, raw, redis_server, target):
    fill(r, KEYS[:4])
    assert migrate(raw, redis_server.port, "", 0, 5000, "COPY", "KEYS", *KEYS[:4]) == b"OK"
    assert r.exists(*KEYS[:4]) == 4
    # Without REPLACE the target refuses existing keys; nothing is deleted here.
    reply = migrate(raw, redis_server.port, "", 0, 5000, "KEYS", *KEYS[:4])
    assert reply == b"ERR Target instance replied with error: BUSYKEY Target key name already " \
                    b"exists."
    assert r.exists(*KEYS[:4]) == 4
    r.set(KEYS[0], "new")
    assert migrate(raw, redis_server.port, "", 0, 5000, "REPLACE", "KEYS", *KEYS[:4]) == b"OK"
    assert r.exists(*KEYS[:4]) == 0
    assert target.get(KEYS[0]) == b"new"


def test_busykey_on_some_keys_moves_the_others(r, raw, redis_server, target):
    r.mset({"a": "1", "b": "2", "c": "3"})
    target.set("b", "theirs")
    reply = migrate(raw, redis_server.port, "", 0, 5000, "KEYS", "a", "b", "c")
    assert reply.startswith(b"ERR Target instance replied with error: BUSYKEY")
    assert r.exists("a", "b", "c") == 1 and r.get("b") == b"2"
    assert target.mget("a", "b", "c") == [b"1", b"theirs", b"3"]


def test_destination_db(r, raw, redis_server, target):
    r.set("x", "1")
    assert migrate(raw, redis_server.port, "x", 5, 5000) == b"OK"
    target.execute_command("SELECT", 5)
    assert target.get("x") == b"1"
    # The cached connection has db 5 selected: the next MIGRATE to db 0 must SELECT again.
    r.set("y", "2")
    assert migrate(raw, redis_server.port, "y", 0, 5000) == b"OK"
    target.execute_command("SELECT", 0)
    assert target.get("y") == b"2"
    target.execute_command("SELECT", 5)
    target.flushdb()
    target.execute_command("SELECT", 0)


def test_auth_and_auth2(r, raw, redis_server, target):
    admin = redis_server.raw()
    try:
        admin.call("CONFIG", "SET", "requirepass", "s3cret")
        admin.call("AUTH", "s3cret")
        admin.call("ACL", "SETUSER", "mover", "on", ">pw", "~*", "+@all")
        r.set("k", "v")
        reply = migrate(raw, redis_server.port, "k", 0, 5000, "AUTH", "wrong")
        assert reply.startswith(b"ERR Target instance replied with error: WRONGPASS")
        assert r.exists("k")
        # The cached connection, made before requirepass, is still logged in: as in Redis the
        # RESTORE after the refused AUTH went through, but MIGRATE failed and kept the key here.
        admin.call("DEL", "k")
        assert migrate(raw, redis_server.port, "k", 0, 5000, "AUTH", "s3cret") == b"OK"
        assert admin.call("GET", "k") == b"v"
        r.set("k2", "v2")
        assert migrate(raw, redis_server.port, "k2", 0, 5000, "AUTH2", "mover", "pw") == b"OK"
        assert admin.call("GET", "k2") == b"v2"
    finally:
        admin.call("ACL", "DELUSER", "mover")
        admin.call("CONFIG", "SET", "requirepass", "")
        admin.close()


def test_inside_multi(r, redis_server, target):
    fill(r, KEYS)
    before = contents(r, KEYS)
    with r.pipeline(transaction=True) as p:
        p.execute_command("MIGRATE", "127.0.0.1", redis_server.port, "", 0, 5000, "KEYS", *KEYS)
        p.exists(*KEYS)
        assert p.execute() == [b"OK", 0]
    assert contents(target, KEYS) == before


def test_from_redis_to_server(r, server, redis_server, target):
    fill(target, KEYS)
    before = contents(target, KEYS)
    assert target.execute_command("MIGRATE", "127.0.0.1", server.port, "", 0, 5000,
                                  "KEYS", *KEYS) == b"OK"
    assert target.exists(*KEYS) == 0
    assert contents(r, KEYS) == before
    check_ttls(r, KEYS)


def test_server_to_server(r, raw, server_factory):
    other = server_factory(threads=2)
    dst = other.client()
    fill(r, KEYS)
    before = contents(r, KEYS)
    assert migrate(raw, other.port, "", 3, 5000, "KEYS", *KEYS) == b"OK"
    assert r.exists(*KEYS) == 0
    dst.execute_command("SELECT", 3)
    assert contents(dst, KEYS) == before
    check_ttls(dst, KEYS)
    dst.close()


def test_target_down(r, raw):
    # Redis 7.2 hands a refused connection over as made (connSocketBlockingConnect does not look
    # at the outcome), so the failure shows at the first write.
    r.set("k", "v")
    reply = migrate(raw, free_port(), "k", 0, 1000)
    assert reply == b"IOERR error or timeout writing to target instance"
    assert r.get("k") == b"v"


def test_target_unresolvable(r, raw):
    # Only an address that cannot be resolved fails at the connection itself.
    r.set("k", "v")
    reply = raw.call("MIGRATE", "no.such.host.invalid", 6379, "k", 0, 1000)
    assert reply == b"IOERR error or timeout connecting to the client"
    assert r.get("k") == b"v"


def test_target_never_answers(r, raw):
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    try:
        r.set("k", "v")
        reply = migrate(raw, listener.getsockname()[1], "k", 0, 300)
        assert reply == b"IOERR error or timeout reading to target instance"
        assert r.get("k") == b"v"
    finally:
        listener.close()


def test_keys_held_for_the_whole_call(r, raw, server):
    # While MIGRATE waits for a target that never answers, a write to its key waits too: the
    # DUMP, the exchange and the delete are one step for other clients, as in Redis.
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    r.set("held", "old")
    other = server.client()
    try:
        raw.send_command("MIGRATE", "127.0.0.1", listener.getsockname()[1], "held", 0, 500)
        time.sleep(0.1)
        started = time.monotonic()
        other.set("held", "new")
        assert time.monotonic() - started > 0.2
        assert raw.read_reply()[1] == b"IOERR error or timeout reading to target instance"
        assert r.get("held") == b"new"
    finally:
        other.close()
        listener.close()


@pytest.mark.shardis_only
def test_journaled_as_del_of_the_moved_keys(launch, tmp_path, redis_server, target):
    # As Redis propagates MIGRATE: DEL of the keys the target acknowledged, nothing for COPY; so
    # a restart from the AOF does not bring moved keys back.
    d = tmp_path / "data"
    srv = launch(d, threads=2, args=["--appendonly=yes", "--appendfsync=always"])
    c = srv.client()
    c.mset({"a": "1", "b": "2", "c": "3"})
    target.set("c", "theirs")
    conn = srv.raw()
    reply = conn.call("MIGRATE", "127.0.0.1", redis_server.port, "", 0, 5000, "KEYS", "a", "b",
                      "c", "missing")
    assert reply.startswith(b"ERR Target instance replied with error: BUSYKEY")
    assert conn.call("MIGRATE", "127.0.0.1", redis_server.port, "c", 0, 5000, "COPY",
                     "REPLACE") == b"OK"
    conn.close()
    assert shutdown(srv) == 0
    text = (d / "appendonlydir" / "appendonly.aof.1.incr.aof").read_bytes()
    assert b"MIGRATE" not in text.upper()
    assert text.count(b"*3\r\n$3\r\nDEL\r\n$1\r\na\r\n$1\r\nb\r\n") == 1
    again = launch(d, threads=2, args=["--appendonly=yes"])
    assert again.client().mget("a", "b", "c") == [None, None, b"3"]


def test_passwords_redacted_in_slowlog(r, raw, redis_server, target):
    # As Redis: MIGRATE's AUTH password and AUTH2 username and password show as "(redacted)".
    r.config_set("slowlog-log-slower-than", 0)
    try:
        r.slowlog_reset()
        migrate(raw, free_port(), "", 0, 100, "AUTH", "pw1", "AUTH2", "u", "pw2", "KEYS", "auth")
        logged = [e for e in r.execute_command("SLOWLOG", "GET", 10)
                  if e[3][0].upper() == b"MIGRATE"]
        assert logged[0][3][6:] == [b"AUTH", b"(redacted)", b"AUTH2", b"(redacted)",
                                    b"(redacted)", b"KEYS", b"auth"]
    finally:
        r.config_set("slowlog-log-slower-than", 10000)


# The same command lines on redis-server (the source) and on the server under test give the
# same raw replies.
ERROR_CASES = [
    ["k", 0, 1000, "BOGUS"],
    ["k", 0, 1000, "AUTH"],
    ["k", 0, 1000, "AUTH2", "user"],
    ["k", 0, 1000, "KEYS", "a"],
    ["k", "db", 1000],
    ["k", 0, "soon"],
    ["missing", 0, 1000],
    ["", 0, 1000, "COPY", "REPLACE", "KEYS", "missing"],
    ["", 0, 1000, "KEYS"],
]


@pytest.mark.parametrize("case", ERROR_CASES, ids=[" ".join(map(str, c)) for c in ERROR_CASES])
def test_errors_as_redis(r, raw, redis_server, target, case):
    ref = redis_server.raw()
    try:
        port = free_port()
        assert raw.call_raw("MIGRATE", "127.0.0.1", port, *case) == \
            ref.call_raw("MIGRATE", "127.0.0.1", port, *case)
    finally:
        ref.close()


def test_target_down_as_redis(r, raw, redis_server, target):
    ref = redis_server.raw()
    try:
        r.set("k", "v")
        target.set("k", "v")
        port = free_port()
        assert raw.call_raw("MIGRATE", "127.0.0.1", port, "k", 0, 500) == \
            ref.call_raw("MIGRATE", "127.0.0.1", port, "k", 0, 500)
    finally:
        ref.close()


def test_arity(raw):
    assert raw.call_raw("MIGRATE", "127.0.0.1", 1, "k", 0) == \
        b"-ERR wrong number of arguments for 'migrate' command\r\n"
