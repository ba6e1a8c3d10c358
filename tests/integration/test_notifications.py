"""Keyspace notifications (notify-keyspace-events): the setting's validation and CONFIG GET form,
and the messages a write, an expiry or an eviction publishes, compared with redis-server: the same
commands (every family) run on both servers, and the messages each key got, in order, must be the
same. The subscriber is a connection of its own (on any thread: the kernel spreads connections),
the writer another one."""

import select
import time

import pytest

from conftest import Error, wait_for

PATTERN = "__key*@*__:*"


def keyspace_subscriber(server):
    conn = server.raw()
    assert conn.call("PSUBSCRIBE", PATTERN) == [b"psubscribe", PATTERN.encode(), 1]
    return conn


def drain(conn, quiet: float = 0.5):
    """The pushes that arrive until none came for `quiet` seconds: [(channel, data), ...]."""
    out = []
    while True:
        if conn.pos >= len(conn.buf):
            ready, _, _ = select.select([conn.sock], [], [], quiet)
            if not ready:
                return out
        kind, _pattern, channel, data = conn.read_reply()[1]
        assert kind == b"pmessage"
        out.append((channel.decode(), data.decode()))


def per_key(messages):
    """{(db, key): [event, ...]} from both kinds of channel, each kept in arrival order."""
    keyspace, keyevent = {}, {}
    for channel, data in messages:
        prefix, rest = channel.split("__:", 1)
        db = prefix.split("@")[1]
        if prefix.startswith("__keyspace@"):
            keyspace.setdefault((db, rest), []).append(data)
        else:
            keyevent.setdefault((db, data), []).append(rest)
    return keyspace, keyevent


def run_all(conn, commands):
    for cmd in commands:
        conn.call(*cmd)


# Every family's writes, with no-ops and errors among them (which publish nothing). Keys are
# spread over the shards; each key's own events come from its shard, in order.
COMMANDS = [
    # strings
    ("SET", "s1", "v"), ("SET", "s1", "v2", "EX", "100"), ("SETNX", "s1", "x"),
    ("SETNX", "s2", "x"), ("SETEX", "s3", "100", "v"), ("PSETEX", "s4", "100000", "v"),
    ("GETSET", "s1", "z"), ("APPEND", "s1", "abc"), ("APPEND", "s5", "q"),
    ("SETRANGE", "s5", "3", "xyz"), ("SETRANGE", "s6", "0", ""), ("INCR", "c1"),
    ("INCRBY", "c1", "5"), ("DECR", "c1"), ("DECRBY", "c1", "2"), ("INCRBYFLOAT", "f1", "1.5"),
    ("INCR", "s1"), ("MSET", "m1", "a", "m2", "b"), ("MSETNX", "m3", "a", "m4", "b"),
    ("MSETNX", "m3", "a", "m5", "b"), ("GETDEL", "s2"), ("GETEX", "s3", "PERSIST"),
    ("GETEX", "s4", "EX", "50"), ("GETEX", "s5", "PXAT", "1"), ("SET", "s7", "v", "KEEPTTL"),
    ("SET", "s8", "v", "GET"), ("SET", "s8", "w", "NX"), ("SET", "s8", "w", "XX", "PX", "90000"),
    # generic
    ("EXPIRE", "s1", "100"), ("PEXPIRE", "s1", "100000"), ("EXPIRE", "s1", "10", "GT"),
    ("EXPIREAT", "m1", "1"), ("PERSIST", "s1"), ("PERSIST", "s1"), ("DEL", "m2", "m3", "none"),
    ("UNLINK", "m4"), ("RENAME", "s1", "r1"), ("RENAMENX", "r1", "s7"), ("RENAME", "r1", "r2"),
    ("RENAME", "s7", "r2"), ("COPY", "r2", "cp1"), ("COPY", "r2", "cp1"), ("MOVE", "cp1", "1"),
    ("MOVE", "r2", "1"), ("MOVE", "cp1", "1"),
    # lists
    ("LPUSH", "l1", "a", "b", "c"), ("RPUSH", "l1", "d"), ("LPUSHX", "l2", "a"),
    ("RPUSHX", "l1", "e"), ("LINSERT", "l1", "BEFORE", "a", "x"),
    ("LINSERT", "l1", "BEFORE", "nope", "x"), ("LSET", "l1", "0", "y"), ("LREM", "l1", "1", "y"),
    ("LREM", "l1", "1", "nope"), ("LTRIM", "l1", "0", "4"), ("LPOP", "l1"), ("RPOP", "l1", "2"),
    ("LMOVE", "l1", "l3", "LEFT", "RIGHT"), ("RPOPLPUSH", "l3", "l3"),
    ("LMOVE", "l1", "l1", "LEFT", "LEFT"), ("LMPOP", "1", "l3", "LEFT", "COUNT", "10"),
    ("RPUSH", "l4", "a", "b"), ("LTRIM", "l4", "5", "6"), ("RPUSH", "l5", "a"),
    ("LREM", "l5", "0", "a"), ("LPUSH", "s8", "x"),
    # hashes
    ("HSET", "h1", "a", "1", "b", "2"), ("HMSET", "h1", "c", "3"), ("HSETNX", "h1", "a", "9"),
    ("HSETNX", "h1", "d", "4"), ("HINCRBY", "h1", "a", "5"), ("HINCRBYFLOAT", "h1", "b", "1.5"),
    ("HDEL", "h1", "zz"), ("HDEL", "h1", "a", "b"), ("HDEL", "h1", "c", "d"),
    # sets
    ("SADD", "st1", "a", "b", "c"), ("SADD", "st1", "a"), ("SREM", "st1", "a"),
    ("SREM", "st1", "zz"), ("SMOVE", "st1", "st2", "b"), ("SMOVE", "st1", "st2", "zz"),
    ("SPOP", "st1"), ("SADD", "st3", "x", "y", "z"), ("SPOP", "st3", "1"), ("SPOP", "st3", "5"),
    ("SADD", "st4", "a", "b"), ("SADD", "st5", "b", "c"), ("SINTERSTORE", "st6", "st4", "st5"),
    ("SUNIONSTORE", "st7", "st4", "st5"), ("SDIFFSTORE", "st8", "st4", "st4"),
    ("SDIFFSTORE", "st7", "st4", "st4"), ("SUNIONSTORE", "st6", "st4", "st5"),
    # sorted sets
    ("ZADD", "z1", "1", "a", "2", "b", "3", "c"), ("ZADD", "z1", "1", "a"),
    ("ZINCRBY", "z1", "5", "a"), ("ZREM", "z1", "b"), ("ZREM", "z1", "zz"),
    ("ZADD", "z2", "1", "a", "2", "b", "3", "c", "4", "d", "5", "e"),
    ("ZREMRANGEBYRANK", "z2", "0", "0"), ("ZREMRANGEBYSCORE", "z2", "2", "2"),
    ("ZADD", "z3", "0", "a", "0", "b", "0", "c"), ("ZREMRANGEBYLEX", "z3", "[a", "[b"),
    ("ZPOPMIN", "z2"), ("ZPOPMAX", "z2", "5"), ("ZUNIONSTORE", "z4", "2", "z1", "z3"),
    ("ZINTERSTORE", "z5", "2", "z1", "z3"), ("ZRANGESTORE", "z6", "z1", "0", "-1"),
    ("ZDIFFSTORE", "z4", "1", "none"), ("ZADD", "z7", "1", "a"), ("ZPOPMIN", "z7", "3"),
    ("ZUNIONSTORE", "z6", "1", "z1"), ("ZRANGESTORE", "z6", "z1", "0", "0"),
    # streams
    ("XADD", "x1", "1-1", "f", "v"), ("XADD", "x1", "MAXLEN", "1", "2-1", "f", "v"),
    ("XTRIM", "x1", "MAXLEN", "0"), ("XTRIM", "x1", "MAXLEN", "0"), ("XADD", "x1", "3-1", "f", "v"),
    ("XDEL", "x1", "3-1"), ("XDEL", "x1", "3-1"), ("XSETID", "x1", "5-0"),
    ("XGROUP", "CREATE", "x1", "g1", "$"), ("XGROUP", "CREATECONSUMER", "x1", "g1", "c1"),
    ("XGROUP", "CREATECONSUMER", "x1", "g1", "c1"), ("XGROUP", "DELCONSUMER", "x1", "g1", "c1"),
    ("XGROUP", "SETID", "x1", "g1", "0"), ("XGROUP", "DESTROY", "x1", "g1"),
    ("XGROUP", "DESTROY", "x1", "g1"), ("XGROUP", "CREATE", "x2", "g", "0", "MKSTREAM"),
    ("XADD", "x2", "1-1", "f", "v"), ("XREADGROUP", "GROUP", "g", "alice", "STREAMS", "x2", ">"),
    ("XCLAIM", "x2", "g", "bob", "0", "1-1"), ("XAUTOCLAIM", "x2", "g", "carol", "0", "0"),
    # bits, HyperLogLog, geo
    ("SETBIT", "b1", "7", "1"), ("SETBIT", "b1", "7", "1"),
    ("BITFIELD", "b1", "SET", "u8", "0", "255"),
    ("BITOP", "OR", "b2", "b1", "b1"), ("BITOP", "OR", "b2", "b1", "b1"),
    ("BITOP", "AND", "b3", "none"), ("BITOP", "AND", "b2", "none"),
    ("PFADD", "p1", "a", "b"), ("PFADD", "p1", "a"), ("PFMERGE", "p2", "p1"),
    ("GEOADD", "g1", "13.361389", "38.115556", "Palermo"),
    ("GEOSEARCHSTORE", "g2", "g1", "FROMLONLAT", "15", "37", "BYRADIUS", "200", "km"),
    ("GEORADIUS", "g1", "15", "37", "200", "km", "STORE", "g3"),
    ("GEORADIUS", "g1", "15", "37", "200", "km", "STORE", "g3"),
    ("GEOSEARCHSTORE", "g3", "g1", "FROMLONLAT", "0", "0", "BYRADIUS", "1", "km"),
    ("RPUSH", "so", "3", "1", "2"), ("SORT", "so", "STORE", "so2"), ("SORT", "so", "STORE", "so2"),
    ("SORT", "none", "STORE", "so2"), ("COPY", "so", "h1", "REPLACE"),
    ("COPY", "so", "so", "DB", "2"),
    ("DEL", "so"),
]


# Reads of missing keys: each publishes "keymiss" (class m) where Redis' lookupKeyRead misses.
MISSES = [
    ("GET", "nokey"), ("HGET", "nokey", "f"), ("LRANGE", "nokey", "0", "-1"),
    ("MGET", "nokey", "s3"), ("EXISTS", "nokey"), ("TYPE", "nokey"), ("TTL", "nokey"),
    ("SMEMBERS", "nokey"), ("ZSCORE", "nokey", "a"), ("XRANGE", "nokey", "-", "+"),
    ("GETRANGE", "nokey", "0", "1"), ("STRLEN", "nokey"), ("DUMP", "nokey"), ("PFCOUNT", "nokey"),
]


@pytest.fixture
def reference(redis_server):
    conn = redis_server.raw()
    conn.call("FLUSHALL")
    yield conn
    conn.call("CONFIG", "SET", "notify-keyspace-events", "")
    conn.close()


@pytest.fixture
def sh(raw):
    yield raw
    raw.call("CONFIG", "SET", "notify-keyspace-events", "")


@pytest.mark.parametrize("value,shown", [
    ("", ""), ("KEA", "AKE"), ("AKE", "AKE"), ("Eg$", "g$E"), ("Kx", "xK"),
    ("g$lshzxetdKE", "AKE"), ("AKEnm", "AKEm"), ("nK", "nK"), ("mE", "Em"), ("exE", "xeE"),
])
def test_config_forms_match_redis(sh, reference, value, shown):
    for conn in (sh, reference):
        assert conn.call("CONFIG", "SET", "notify-keyspace-events", value) == b"OK"
        assert conn.call("CONFIG", "GET", "notify-keyspace-events") == [
            b"notify-keyspace-events", shown.encode()]


def test_config_rejects_unknown_class(sh, reference):
    for conn in (sh, reference):
        reply = conn.call_raw("CONFIG", "SET", "notify-keyspace-events", "KEQ")
        assert reply == (b"-ERR CONFIG SET failed (possibly related to argument "
                         b"'notify-keyspace-events') - Invalid event class character. Use "
                         b"'Ag$lshzxeKEtmdn'.\r\n")


def test_nothing_published_when_empty(sh, server):
    sub = keyspace_subscriber(server)
    sh.call("CONFIG", "SET", "notify-keyspace-events", "")
    run_all(sh, COMMANDS[:20])
    sh.call("CONFIG", "SET", "notify-keyspace-events", "g")  # classes without K or E: nothing
    run_all(sh, [("DEL", "s1"), ("EXPIRE", "c1", "100")])
    assert drain(sub) == []
    sub.close()


def differential(sh, reference, server, redis_server, classes, commands=COMMANDS):
    subs = [keyspace_subscriber(server) for _ in range(3)]  # on different threads, likely
    ref_sub = keyspace_subscriber(redis_server)
    for conn in (sh, reference):
        assert conn.call("CONFIG", "SET", "notify-keyspace-events", classes) == b"OK"
        run_all(conn, commands)
    expected = per_key(drain(ref_sub))
    assert expected[0] or expected[1], "the reference published nothing"
    for sub in subs:
        assert per_key(drain(sub)) == expected
        sub.close()
    ref_sub.close()


def test_events_match_redis(sh, reference, server, redis_server):
    differential(sh, reference, server, redis_server, "KEA")


def test_new_and_keymiss_events_match_redis(sh, reference, server, redis_server):
    differential(sh, reference, server, redis_server, "KEAnm", COMMANDS + MISSES)


def test_keyspace_only_and_keyevent_only(sh, reference, server, redis_server):
    differential(sh, reference, server, redis_server, "K$lg")
    sh.call("FLUSHALL")
    reference.call("FLUSHALL")
    differential(sh, reference, server, redis_server, "Ehzst")


def test_served_blocked_pops_match_redis(sh, reference, server, redis_server):
    """A push that wakes blocked clients: its own event, then each served pop's."""
    got = []
    for conn, srv in ((sh, server), (reference, redis_server)):
        sub = keyspace_subscriber(srv)
        conn.call("CONFIG", "SET", "notify-keyspace-events", "KEA")
        blocked = [srv.raw() for _ in range(3)]
        pops = (("BLPOP", "q", "0"), ("BLMOVE", "q", "q2", "LEFT", "RIGHT", "0"),
                ("BZPOPMIN", "zq", "0"))
        for c, cmd in zip(blocked, pops):
            c.send_command(*cmd)
        assert wait_for(lambda: b"blocked_clients:3" in conn.call("INFO", "clients"), 5)
        conn.call("RPUSH", "q", "a", "b", "c")
        conn.call("ZADD", "zq", "1", "m")
        for c in blocked:
            c.read_reply()
            c.close()
        got.append(per_key(drain(sub)))
        sub.close()
    assert got[0] == got[1]


def test_expired_event(sh, server):
    sub = keyspace_subscriber(server)
    sh.call("CONFIG", "SET", "notify-keyspace-events", "Ex")
    for i in range(20):
        sh.call("SET", f"e{i}", "v", "PX", "30")
    # Half of them are read after their deadline (expired lazily, or already by the active
    # cycle); the rest only the active cycle removes.
    time.sleep(0.05)
    for i in range(10):
        assert sh.call("GET", f"e{i}") is None
    got = []
    assert wait_for(lambda: got.extend(drain(sub, 0.2)) or len(got) >= 20, 5), got
    assert sorted(got) == sorted(("__keyevent@0__:expired", f"e{i}") for i in range(20))
    sub.close()


def test_lazy_expired_event_matches_redis(sh, reference, server, redis_server):
    """With the active cycle off, a key expires when a command touches it: each command's
    events come after the expiry's."""
    subs = {sh: keyspace_subscriber(server), reference: keyspace_subscriber(redis_server)}
    got = {}
    for conn, sub in subs.items():
        assert conn.call("DEBUG", "SET-ACTIVE-EXPIRE", "0") == b"OK"
        try:
            conn.call("CONFIG", "SET", "notify-keyspace-events", "KEA")
            for key in ("a", "b", "c", "d"):
                conn.call("SET", key, "1", "PX", "20")
            conn.call("RPUSH", "l", "x")
            conn.call("PEXPIRE", "l", "20")
            time.sleep(0.1)
            conn.call("GET", "a")            # read: expired
            conn.call("SET", "b", "2")       # overwritten: expired, then set
            conn.call("INCR", "c")           # expired, then a new counter
            conn.call("EXISTS", "d")
            conn.call("LPUSH", "l", "y")     # expired, then a new list
            got[conn] = per_key(drain(sub))
        finally:
            conn.call("DEBUG", "SET-ACTIVE-EXPIRE", "1")
        sub.close()
    assert got[sh] == got[reference]
    assert got[sh][0][("0", "b")] == ["set", "expire", "expired", "set"]


def test_evicted_event(sh, server):
    sub = keyspace_subscriber(server)
    sh.call("CONFIG", "SET", "notify-keyspace-events", "Ee")
    try:
        for i in range(200):
            sh.call("SET", f"k{i}", "x" * 1000)
        sh.call("CONFIG", "SET", "maxmemory", "1", "maxmemory-policy", "allkeys-random")
        sh.call("SET", "trigger", "x")
        got = drain(sub)
    finally:
        sh.call("CONFIG", "SET", "maxmemory", "0", "maxmemory-policy", "noeviction")
    assert got, "nothing evicted"
    keys = {f"k{i}" for i in range(200)} | {"trigger"}
    for channel, key in got:
        assert channel == "__keyevent@0__:evicted" and key in keys
    sub.close()


def test_events_of_one_key_arrive_in_order(sh, server):
    subs = [keyspace_subscriber(server) for _ in range(4)]
    sh.call("CONFIG", "SET", "notify-keyspace-events", "K$")
    for i in range(300):
        if i % 2:
            sh.send_command("SETRANGE", "ordered", "0", "x")
        else:
            sh.send_command("APPEND", "ordered", "1")
    for _ in range(300):
        sh.read_reply()
    for sub in subs:
        got = []
        assert wait_for(lambda: got.extend(drain(sub, 0.2)) or len(got) >= 300, 5)
        assert [e for _, e in got] == ["setrange" if i % 2 else "append" for i in range(300)]
        sub.close()
