"""Redis 7.2 behaviours (and two of Redis 7.4 that clients already send), bounded glob matching,
and small gaps: each checked against the Debian redis-server 7.0 where 7.0 and 7.2 agree, else
against 7.2's (or 7.4's) documented behaviour and marked shardis_only.

Covered: glob patterns with many stars (KEYS, SCAN/HSCAN/SSCAN/ZSCAN MATCH, PSUBSCRIBE, CONFIG
GET); ZRANK/ZREVRANK WITHSCORE; HSCAN NOVALUES (7.4); XREAD ... + (7.4); GETRANGE, BITCOUNT,
BITPOS, XADD and XSETID argument checks; LPOS RANK bounds; CLIENT NO-TOUCH; PUBSUB NUMSUB under
RESP3; DEBUG ERROR; LOLWUT; ZRANDMEMBER on small sets; XCLAIM/XAUTOCLAIM of deleted entries;
blocking commands in scripts and MULTI; consumers created when named, with seen/active times;
COMMAND GETKEYSANDFLAGS per key; redis_version 7.2.4; errors of script commands counted once;
used_memory_lua; PFSELFTEST.
"""

import random
import time

import pytest

from conftest import Error, RespConn, RespMap, Verbatim

shardis_only = pytest.mark.shardis_only


def both(server, redis_server):
    """A raw connection to each server, both flushed."""
    conns = [server.raw(), redis_server.raw()]
    for c in conns:
        c.call("FLUSHALL")
    return conns


def same_replies(server, redis_server, commands, setup=()):
    """Runs the commands on both servers and asserts the raw replies are byte-identical (after
    the setup commands, whose replies may differ: HELLO's id and version)."""
    sut, ref = both(server, redis_server)
    try:
        for c in (sut, ref):
            for cmd in setup:
                c.call(*cmd)
        for cmd in commands:
            got, want = sut.call_raw(*cmd), ref.call_raw(*cmd)
            assert got == want, f"{cmd}: {got!r} != {want!r}"
    finally:
        sut.close()
        ref.close()


# ---------------------------------------------------------------------------------------------
# Glob matching: Redis' bound of 1000 nested stars, and no pattern can make a command spin.
# ---------------------------------------------------------------------------------------------


def test_pathological_glob_patterns_finish_quickly(server, redis_server):
    long_key = "a" * 3000
    commands = [
        ["SET", long_key, "1"],
        ["HSET", "h", long_key, "v"],
        ["SADD", "s", long_key],
        ["ZADD", "z", "1", long_key],
    ]
    patterns = ["a*" * 40 + "b", "*a" * 1000, "*a" * 1001, "*a" * 1001 + "*", "*?" * 50000,
                "*" * 20000 + "b", "a*" * 999 + "*"]
    for pattern in patterns:
        commands += [["KEYS", pattern], ["SCAN", "0", "MATCH", pattern, "COUNT", "100"],
                     ["HSCAN", "h", "0", "MATCH", pattern], ["SSCAN", "s", "0", "MATCH", pattern],
                     ["ZSCAN", "z", "0", "MATCH", pattern]]
    start = time.monotonic()
    same_replies(server, redis_server, commands)
    assert time.monotonic() - start < 10


def test_glob_bound_applies_to_psubscribe(server):
    sub = server.client().pubsub()
    pub = server.client()
    try:
        sub.psubscribe("*a" * 1001, "*a" * 1000)
        for _ in range(2):
            assert sub.get_message(timeout=5)["type"] == "psubscribe"
        assert pub.publish("a" * 1500, "hi") == 1  # only the pattern with 1000 stars matches
        msg = sub.get_message(timeout=5)
        assert msg["type"] == "pmessage" and msg["pattern"] == b"*a" * 1000
    finally:
        sub.close()
        pub.close()


def test_glob_in_config_get(raw):
    start = time.monotonic()
    assert raw.call("CONFIG", "GET", "*m" * 5000 + "b") == []
    assert b"maxmemory" in raw.call("CONFIG", "GET", "m*a*x*m*e*m*o*r*y")[0::2]
    assert time.monotonic() - start < 5


# ---------------------------------------------------------------------------------------------
# Redis 7.2 (and 7.4) command behaviour.
# ---------------------------------------------------------------------------------------------


@shardis_only  # ZRANK ... WITHSCORE is Redis 7.2's
def test_zrank_withscore(raw):
    raw.call("ZADD", "z", "1", "a", "2.5", "b")
    assert raw.call_raw("ZRANK", "z", "b", "WITHSCORE") == b"*2\r\n:1\r\n$3\r\n2.5\r\n"
    assert raw.call_raw("ZREVRANK", "z", "b", "withscore") == b"*2\r\n:0\r\n$3\r\n2.5\r\n"
    assert raw.call_raw("ZRANK", "z", "a") == b":0\r\n"
    assert raw.call_raw("ZRANK", "z", "x", "WITHSCORE") == b"*-1\r\n"
    assert raw.call_raw("ZRANK", "nokey", "x", "WITHSCORE") == b"*-1\r\n"
    assert raw.call_raw("ZRANK", "nokey", "x") == b"$-1\r\n"
    assert raw.call_raw("ZRANK", "z", "a", "WITHSCORES") == b"-ERR syntax error\r\n"
    assert raw.call_raw("ZREVRANK", "z", "a", "WITHSCORE", "x") == (
        b"-ERR wrong number of arguments for 'zrevrank' command\r\n")
    raw.call("SET", "str", "x")
    assert raw.call_raw("ZRANK", "str", "a", "WITHSCORE").startswith(b"-WRONGTYPE")
    raw.call("HELLO", "3")
    assert raw.call_raw("ZRANK", "z", "b", "WITHSCORE") == b"*2\r\n:1\r\n,2.5\r\n"
    assert raw.call_raw("ZRANK", "z", "x", "WITHSCORE") == b"_\r\n"
    assert raw.call_raw("ZRANK", "z", "x") == b"_\r\n"


@shardis_only  # NOVALUES is Redis 7.4's
def test_hscan_novalues(raw):
    raw.call("HSET", "h", "f1", "v1", "f2", "v2", "g", "v3")
    cursor, fields = raw.call("HSCAN", "h", "0", "NOVALUES")
    assert cursor == b"0" and sorted(fields) == [b"f1", b"f2", b"g"]
    cursor, fields = raw.call("HSCAN", "h", "0", "MATCH", "f*", "novalues", "COUNT", "100")
    assert sorted(fields) == [b"f1", b"f2"]
    assert raw.call("HSCAN", "nokey", "0", "NOVALUES") == [b"0", []]
    raw.call("SADD", "s", "a")
    raw.call("ZADD", "z", "1", "a")
    err = b"-ERR NOVALUES option can only be used in HSCAN\r\n"
    assert raw.call_raw("SSCAN", "s", "0", "NOVALUES") == err
    assert raw.call_raw("ZSCAN", "z", "0", "NOVALUES") == err
    assert raw.call_raw("SCAN", "0", "NOVALUES") == err
    # A big hash walks in several calls, fields only.
    raw.call("HSET", "big", *[x for i in range(500) for x in (f"f{i}", f"v{i}")])
    seen, cursor = [], b"0"
    while True:
        cursor, fields = raw.call("HSCAN", "big", cursor, "NOVALUES")
        seen += fields
        if cursor == b"0":
            break
    assert set(seen) == {f"f{i}".encode() for i in range(500)}


@shardis_only  # XREAD ... + is Redis 7.4's
def test_xread_plus_reads_the_last_entry(raw):
    raw.call("XADD", "s", "1-1", "a", "1")
    raw.call("XADD", "s", "2-1", "b", "2")
    assert raw.call("XREAD", "STREAMS", "s", "+") == [[b"s", [[b"2-1", [b"b", b"2"]]]]]
    assert raw.call("XREAD", "COUNT", "5", "STREAMS", "nokey", "s", "+", "+") == [
        [b"s", [[b"2-1", [b"b", b"2"]]]]]
    assert raw.call("XREAD", "STREAMS", "nokey", "+") is None
    raw.call("XDEL", "s", "2-1")  # the last ID stays 2-1: nothing comes after 2-0
    assert raw.call("XREAD", "STREAMS", "s", "+") is None
    raw.call("XGROUP", "CREATE", "e", "g", "$", "MKSTREAM")
    assert raw.call_raw("XREAD", "STREAMS", "e", "+") == (
        b"-ERR the stream last element ID is 0-0\r\n")
    assert raw.call_raw("XREADGROUP", "GROUP", "g", "c", "STREAMS", "e", "+").startswith(
        b"-ERR The + ID is meaningless in the context of XREADGROUP")


@shardis_only  # the error texts name the command since Redis 7.2
def test_xread_unbalanced_streams_error(raw):
    raw.call("XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
    assert raw.call_raw("XREAD", "STREAMS", "s", "t", "0") == (
        b"-ERR Unbalanced 'xread' list of streams: for each stream key an ID or '$' must be "
        b"specified.\r\n")
    assert raw.call_raw("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", "t", ">") == (
        b"-ERR Unbalanced 'xreadgroup' list of streams: for each stream key an ID or '>' must "
        b"be specified.\r\n")


def test_getrange_bitcount_bitpos_arguments_as_redis(server, redis_server):
    """Redis 7.0 and 7.2 agree on these (getrangeCommand, bitcountCommand, bitposCommand)."""
    commands = [["SET", "k", "hello"], ["SET", "e", ""]]
    for start, end in [(-1, -5), (5, 3), (-100, -50), (0, -100), (-3, -1), (0, -1), (-1, -1),
                       (4, 100), (5, 5), (-5, 0), (2, -4), (3, 1), (0, 0), (-9223372036854775808,
                                                                           9223372036854775807)]:
        commands += [["GETRANGE", "k", str(start), str(end)], ["GETRANGE", "e", str(start), str(end)],
                     ["GETRANGE", "nokey", str(start), str(end)]]
    commands += [["GETRANGE", "k", "x", "1"], ["GETRANGE", "k", "0"]]
    commands += [["BITCOUNT", "k", *args] for args in
                 ([], ["0"], ["0", "1"], ["0", "1", "BIT"], ["0", "1", "byte"], ["0", "-1", "BIT"],
                  ["BIT"], ["0", "1", "BIT", "x"], ["0", "1", "NIBBLE"], ["x", "1"], ["-5", "-1"],
                  ["5", "1", "BIT"])]
    commands += [["BITCOUNT", "nokey", "0"], ["BITCOUNT", "nokey", "0", "1", "BIT"]]
    commands += [["BITPOS", "k", *args] for args in
                 (["1"], ["0"], ["1", "BIT"], ["1", "0", "BIT"], ["1", "0", "1", "BIT"],
                  ["0", "0", "-1", "byte"], ["1", "0", "-1", "BYTE", "x"], ["2"], ["1", "x"],
                  ["0", "2", "1"], ["1", "-1"], ["0", "0", "1", "BIT", "BIT"])]
    commands += [["BITPOS", "nokey", "0"], ["BITPOS", "nokey", "1", "0", "-1", "BIT"]]
    same_replies(server, redis_server, commands)


@shardis_only  # Redis 7.0 negates the lowest RANK into itself
def test_lpos_rank_bounds(raw):
    raw.call("RPUSH", "l", "a", "b", "a", "c", "a")
    err = (b"-ERR value is out of range, value must between -9223372036854775807 and "
           b"9223372036854775807\r\n")
    assert raw.call_raw("LPOS", "l", "a", "RANK", "-9223372036854775808") == err
    assert raw.call_raw("LPOS", "l", "a", "RANK", "-9223372036854775808", "COUNT", "1") == err
    assert raw.call_raw("LPOS", "l", "a", "RANK", "-9223372036854775807") == b"$-1\r\n"
    assert raw.call_raw("LPOS", "l", "a", "RANK", "9223372036854775807", "COUNT", "0") == (
        b"*0\r\n")
    assert raw.call("LPOS", "l", "a", "RANK", "-2", "COUNT", "0") == [2, 0]
    assert raw.call_raw("LPOS", "l", "a", "RANK", "0").startswith(b"-ERR RANK can't be zero")
    assert raw.call_raw("LPOS", "l", "a", "RANK", "x") == (
        b"-ERR value is not an integer or out of range\r\n")


def test_xadd_xsetid_id_errors_as_redis(server, redis_server):
    """Redis 7.0 and 7.2 agree on these; 7.2's one addition is checked below."""
    same_replies(server, redis_server, [
        ["XADD", "s", "1-1", "a", "1"], ["XSETID", "s", "0-1"], ["XSETID", "s", "1-0"],
        ["XSETID", "s", "5-5", "ENTRIESADDED", "0"], ["XSETID", "s", "5-5", "ENTRIESADDED", "1"],
        ["XSETID", "s", "5-5", "ENTRIESADDED", "2", "MAXDELETEDID", "9-9"],
        ["XSETID", "s", "5-5", "ENTRIESADDED", "-1"], ["XSETID", "s", "+"], ["XSETID", "s", "x"],
        ["XSETID", "nokey", "1-1"], ["XADD", "s", "0-0", "a", "1"], ["XADD", "s", "0-5", "a", "1"],
        ["XADD", "s", "5-5", "a", "1"], ["XADD", "s", "5-*", "a", "1"], ["XADD", "s", "abc", "a", "1"],
        ["XADD", "e", "0-*", "a", "1"], ["XADD", "e2", "0-0", "a", "1"],
        ["XADD", "s", "18446744073709551615-18446744073709551615", "a", "1"],
        ["XADD", "s", "*", "a", "1"], ["XADD", "s", "18446744073709551615-*", "a", "1"],
        ["XADD", "s", "1-18446744073709551616", "a", "1"], ["XADD", "s", "1-2-3", "a", "1"],
    ])


@shardis_only  # Redis 7.2 keeps XSETID from going below a deleted ID
def test_xsetid_below_max_deleted_id(raw):
    for i in range(1, 4):
        raw.call("XADD", "s", f"{i}-0", "f", "v")
    raw.call("XDEL", "s", "3-0")
    err = b"-ERR The ID specified in XSETID is smaller than current max_deleted_entry_id\r\n"
    assert raw.call_raw("XSETID", "s", "2-5") == err
    assert raw.call_raw("XSETID", "s", "3-0") == b"+OK\r\n"
    raw.call("XDEL", "s", "1-0", "2-0")
    assert raw.call_raw("XSETID", "s", "0-1") == err  # even on an empty stream
    assert raw.call_raw("XSETID", "s", "4-0", "MAXDELETEDID", "3-5") == b"+OK\r\n"
    assert raw.call_raw("XSETID", "s", "3-4") == err


@shardis_only  # CLIENT NO-TOUCH is Redis 7.2's
def test_client_no_touch(server):
    conn, other = server.raw(), server.raw()
    try:
        def flags(c):
            info = c.call("CLIENT", "INFO").decode()
            return next(f for f in info.split() if f.startswith("flags=")).split("=", 1)[1]

        assert flags(conn) == "N"
        assert conn.call("CLIENT", "NO-TOUCH", "ON") == b"OK"
        assert flags(conn) == "T"
        own_id = conn.call("CLIENT", "ID")
        listed = [line for line in other.call("CLIENT", "LIST").decode().splitlines()
                  if f"id={own_id} " in line]
        assert len(listed) == 1 and " flags=T " in listed[0]
        # OBJECT commands behave as before.
        conn.call("SET", "k", "v")
        assert conn.call("OBJECT", "ENCODING", "k") == b"embstr"
        assert isinstance(conn.call("OBJECT", "IDLETIME", "k"), int)
        assert conn.call("CLIENT", "NO-TOUCH", "off") == b"OK"
        assert flags(conn) == "N"
        assert conn.call_raw("CLIENT", "NO-TOUCH", "maybe") == b"-ERR syntax error\r\n"
        conn.call("CLIENT", "NO-TOUCH", "ON")
        conn.call("RESET")
        assert flags(conn) == "N"
    finally:
        conn.close()
        other.close()


@shardis_only  # Redis 7.2: blocking commands in scripts act as in MULTI (7.0 refused them)
def test_blocking_commands_in_scripts_and_multi_do_not_block(raw):
    def script(body, *keys):
        return raw.call_raw("EVAL", body, str(len(keys)), *keys)

    for cmd in ("'blpop', KEYS[1], 0", "'brpop', KEYS[1], 0", "'bzpopmin', KEYS[1], 0",
                "'bzpopmax', KEYS[1], 0", "'blmove', KEYS[1], 'x', 'left', 'left', 0",
                "'brpoplpush', KEYS[1], 'x', 0", "'blmpop', 0, 1, KEYS[1], 'left'",
                "'bzmpop', 0, 1, KEYS[1], 'min'"):
        assert script(f"return redis.call({cmd})", "empty") == b"$-1\r\n", cmd
    raw.call("RPUSH", "{s}l", "a", "b")
    assert script("return redis.call('blpop', KEYS[1], 0)", "{s}l") == (
        b"*2\r\n$4\r\n{s}l\r\n$1\r\na\r\n")
    assert script("return redis.call('blmove', KEYS[1], KEYS[2], 'right', 'left', 0)",
                  "{s}l", "{s}m") == b"$1\r\nb\r\n"
    raw.call("ZADD", "z", "1", "m")
    assert script("return redis.call('bzpopmax', KEYS[1], 0)", "z") == (
        b"*3\r\n$1\r\nz\r\n$1\r\nm\r\n$1\r\n1\r\n")
    # WAIT answers the replicas that acknowledged (none) at once.
    assert script("return redis.call('wait', 1, 0)") == b":0\r\n"
    # XREAD/XREADGROUP BLOCK stay refused in scripts, as in 7.2.
    assert script("return redis.call('xread', 'block', 0, 'streams', 's', '$')") .startswith(
        b"-ERR xread command is not allowed with BLOCK option from scripts")
    # COMMAND INFO no longer flags them noscript.
    for name in ("blpop", "brpop", "blmove", "brpoplpush", "bzpopmin", "bzpopmax", "wait"):
        assert b"noscript" not in raw.call("COMMAND", "INFO", name)[0][2], name
    # Inside MULTI, as in 7.0 and 7.2: the reply of a timeout.
    raw.call("MULTI")
    for cmd in (["BLPOP", "empty", "0"], ["BLMOVE", "empty", "x", "LEFT", "LEFT", "0"],
                ["BZPOPMIN", "empty", "0"], ["WAIT", "1", "0"]):
        raw.call(*cmd)
    assert raw.call_raw("EXEC") == b"*4\r\n*-1\r\n$-1\r\n*-1\r\n:0\r\n"


def consumers(conn, key, group):
    return {c[1]: dict(zip(c[0::2], c[1::2])) for c in conn.call("XINFO", "CONSUMERS", key, group)}


@shardis_only  # Redis 7.2's consumers: created when named, seen-time and active-time
def test_consumers_are_created_when_named_with_seen_and_active_times(server):
    raw, info = server.raw(), server.raw()
    try:
        raw.call("FLUSHALL")

        def changes():
            text = info.call("INFO", "persistence").decode()
            return int(text.split("rdb_changes_since_last_save:")[1].split()[0])

        raw.call("XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
        before = changes()
        # Nothing to read, claim or autoclaim: each still creates its consumer (one change).
        assert raw.call("XREADGROUP", "GROUP", "g", "reader", "STREAMS", "s", ">") is None
        assert raw.call("XCLAIM", "s", "g", "claimer", "0", "1-1") == []
        assert raw.call("XAUTOCLAIM", "s", "g", "auto", "0", "0") == [b"0-0", [], []]
        assert changes() - before == 3
        got = consumers(raw, "s", "g")
        assert sorted(got) == [b"auto", b"claimer", b"reader"]
        for c in got.values():
            assert c[b"pending"] == 0 and c[b"inactive"] == -1 and 0 <= c[b"idle"] < 5000
        # Named again: no new change; errors create nothing.
        raw.call("XREADGROUP", "GROUP", "g", "reader", "STREAMS", "s", ">")
        assert changes() - before == 3
        assert raw.call_raw("XCLAIM", "s", "g", "bad", "x", "1-1").startswith(b"-ERR")
        assert raw.call_raw("XREADGROUP", "GROUP", "nog", "bad", "STREAMS", "s", ">").startswith(
            b"-NOGROUP")
        assert b"bad" not in consumers(raw, "s", "g")
        # Reading entries makes the consumer active; a NOACK read does not.
        raw.call("XADD", "s", "1-1", "f", "v")
        raw.call("XADD", "s", "2-1", "f", "v")
        raw.call("XREADGROUP", "GROUP", "g", "reader", "COUNT", "1", "STREAMS", "s", ">")
        raw.call("XREADGROUP", "GROUP", "g", "quiet", "NOACK", "STREAMS", "s", ">")
        time.sleep(0.02)
        got = consumers(raw, "s", "g")
        assert 0 <= got[b"reader"][b"inactive"] < 5000 and got[b"reader"][b"pending"] == 1
        assert got[b"quiet"][b"inactive"] == -1
        # Claiming makes the claimer active.
        assert raw.call("XCLAIM", "s", "g", "claimer", "0", "1-1", "JUSTID") == [b"1-1"]
        assert 0 <= consumers(raw, "s", "g")[b"claimer"][b"inactive"] < 5000
        full = raw.call("XINFO", "STREAM", "s", "FULL")
        group = dict(zip(full[1::2][list(full[0::2]).index(b"groups")][0][0::2],
                         full[1::2][list(full[0::2]).index(b"groups")][0][1::2]))
        by_name = {dict(zip(c[0::2], c[1::2]))[b"name"]: dict(zip(c[0::2], c[1::2]))
                   for c in group[b"consumers"]}
        assert list(by_name[b"claimer"]) == [b"name", b"seen-time", b"active-time", b"pel-count",
                                             b"pending"]
        assert by_name[b"auto"][b"active-time"] == -1
        assert by_name[b"claimer"][b"active-time"] >= by_name[b"claimer"][b"seen-time"] - 5000
    finally:
        raw.close()
        info.close()


def test_command_getkeysandflags_per_key_and_per_call(server, redis_server):
    """Each key's flags come from its own key spec (LMOVE's destination, STORE keys, the sources
    of ZUNIONSTORE, ...), and SET and BITFIELD decide per call (7.0 and 7.2 agree)."""
    same_replies(server, redis_server, [
        ["COMMAND", "GETKEYSANDFLAGS", *cmd] for cmd in (
            ["SET", "k", "v"], ["SET", "k", "v", "GET"], ["SET", "k", "v", "EX", "10", "get"],
            ["BITFIELD", "k", "GET", "u8", "0"], ["BITFIELD", "k", "GET", "u8", "0", "OVERFLOW",
                                                  "WRAP"],
            ["BITFIELD", "k", "GET", "u8", "0", "SET", "u8", "0", "1"], ["BITFIELD", "k", "GET"],
            ["BITFIELD", "k"], ["BITFIELD_RO", "k", "GET", "u8", "0"],
            ["LMOVE", "a", "b", "LEFT", "LEFT"], ["BLMOVE", "a", "b", "LEFT", "LEFT", "0"],
            ["RPOPLPUSH", "a", "b"], ["SMOVE", "a", "b", "m"], ["COPY", "a", "b"],
            ["RENAME", "a", "b"], ["RENAMENX", "a", "b"], ["PFMERGE", "a", "b", "c"],
            ["SORT", "a", "BY", "w", "GET", "x", "STORE", "b"], ["SORT", "a"],
            ["ZUNIONSTORE", "d", "2", "a", "b"], ["ZRANGESTORE", "d", "s", "0", "1"],
            ["SINTERSTORE", "d", "a", "b"], ["SDIFFSTORE", "d", "a"], ["BITOP", "AND", "d", "a"],
            ["GEORADIUS", "g", "0", "0", "1", "km", "STORE", "d"],
            ["GEOSEARCHSTORE", "d", "s", "FROMMEMBER", "m", "BYRADIUS", "1", "km"],
            ["MSET", "a", "1", "b", "2"], ["XREADGROUP", "GROUP", "g", "c", "STREAMS", "a", "b",
                                           ">", ">"])
    ])


@shardis_only  # the version shardis reports: Redis 7.2.4's (the reference is 7.0.15)
def test_reports_redis_724_everywhere(raw):
    assert "redis_version:7.2.4\r\n" in raw.call("INFO", "server").decode()
    assert raw.call("HELLO", "2")[3] == b"7.2.4"
    assert raw.call("EVAL", "return redis.REDIS_VERSION", "0") == b"7.2.4"
    assert raw.call("EVAL", "return redis.REDIS_VERSION_NUM", "0") == 0x00070204
    assert raw.call("LOLWUT", "VERSION", "7") == b"Redis ver. 7.2.4\n"


# ---------------------------------------------------------------------------------------------
# Bugs and small gaps.
# ---------------------------------------------------------------------------------------------


def test_pubsub_numsub_is_a_flat_array_in_resp3(server):
    sub, conn = server.client().pubsub(), server.raw()
    try:
        sub.subscribe("news")
        assert sub.get_message(timeout=5)["type"] == "subscribe"
        conn.call("HELLO", "3")
        reply = conn.call("PUBSUB", "NUMSUB", "news", "none")
        assert not isinstance(reply, RespMap)
        assert reply == [b"news", 1, b"none", 0]
        assert conn.call_raw("PUBSUB", "NUMSUB") == b"*0\r\n"
    finally:
        sub.close()
        conn.close()


def test_errors_of_script_commands_are_counted_once(server, redis_server):
    """An error a command run by a script replies counts once in INFO errorstats, whether the
    script fails with it, returns it (pcall) or not; a refused command's error counts when the
    script's reply carries it. OOM (a write over maxmemory) included."""
    commands = [["SET", "x", "1"], ["CONFIG", "RESETSTAT"]]
    for script in ("return redis.call('lpush','x','v')", "return redis.pcall('lpush','x','v')",
                   "return redis.call('nosuch')", "return redis.pcall('nosuch')",
                   "redis.pcall('lpush','x','v') return 1", "return redis.error_reply('MY bad')",
                   "local ok, e = pcall(redis.call, 'lpush', 'x', 'v') return e"):
        commands += [["EVAL", script, "0"], ["INFO", "errorstats"]]
    commands += [["CONFIG", "RESETSTAT"], ["CONFIG", "SET", "maxmemory", "1"],
                 ["EVAL", "return redis.call('set', KEYS[1], 'v')", "1", "k"],
                 ["EVAL", "return redis.pcall('set', KEYS[1], 'v')", "1", "k"],
                 ["INFO", "errorstats"], ["CONFIG", "SET", "maxmemory", "0"]]
    try:
        same_replies(server, redis_server, commands)
    finally:
        for conn in (server.raw(), redis_server.raw()):
            conn.call("CONFIG", "SET", "maxmemory", "0")
            conn.close()


def test_used_memory_lua_follows_the_scripts(raw):
    """INFO used_memory_lua grows with many distinct EVAL scripts and falls after SCRIPT FLUSH, as
    in Redis (each script is a function in the Lua VM until the flush)."""
    def lua_memory():
        info = raw.call("INFO", "memory").decode()
        return int(info.split("used_memory_lua:")[1].split()[0])

    raw.call("SCRIPT", "FLUSH")
    before = lua_memory()
    for i in range(500):
        raw.call("EVAL", f"return {i} + #KEYS", "0")
    grown = lua_memory()
    assert grown > before + 20000, (before, grown)
    raw.call("SCRIPT", "FLUSH")
    assert lua_memory() < grown - 20000, (before, grown, lua_memory())


def test_client_qbuf_holds_the_running_requests(server, redis_server):
    """CLIENT INFO/LIST's qbuf: Redis' query buffer keeps the requests of the last read until they
    have run, so a client sees its own CLIENT INFO (and the requests pipelined with it)."""
    for srv in (server, redis_server):
        conn = srv.raw()
        try:
            def field(info, name):
                return int(info.decode().split(f" {name}=")[1].split(" ")[0])

            assert field(conn.call("CLIENT", "INFO"), "qbuf") == 26
            conn.send(RespConn.encode("CLIENT", "INFO") + RespConn.encode("PING"))
            assert field(conn.read_reply()[1], "qbuf") == 26 + 14
            assert conn.read_reply()[1] == b"PONG"
            assert field(conn.call("CLIENT", "INFO"), "qbuf-free") > 0
        finally:
            conn.close()


@shardis_only  # Redis 7.2's INFO stats fields
def test_info_acl_access_denied(server):
    conn = server.raw()
    try:
        conn.call("CONFIG", "RESETSTAT")

        def stats():
            text = conn.call("INFO", "stats").decode()
            return {k: int(v) for k, v in (line.split(":", 1) for line in text.split("\r\n")
                                           if line.startswith("acl_access_denied_"))}

        assert stats() == {"acl_access_denied_auth": 0, "acl_access_denied_cmd": 0,
                           "acl_access_denied_key": 0, "acl_access_denied_channel": 0}
        assert conn.call_raw("AUTH", "nobody", "wrong").startswith(b"-WRONGPASS")
        assert conn.call_raw("HELLO", "2", "AUTH", "nobody", "wrong").startswith(b"-WRONGPASS")
        assert stats()["acl_access_denied_auth"] == 2
        conn.call("CONFIG", "RESETSTAT")
        assert stats()["acl_access_denied_auth"] == 0
    finally:
        conn.close()


def test_pfselftest(server, redis_server):
    same_replies(server, redis_server, [["PFSELFTEST"], ["PFSELFTEST", "x"],
                                        ["COMMAND", "INFO", "PFSELFTEST"]])


def test_debug_error(server, redis_server):
    same_replies(server, redis_server, [
        ["DEBUG", "ERROR", "LOADING Redis is loading the dataset in memory"],
        ["DEBUG", "ERROR", "READONLY You can't write against a read only replica."],
        ["DEBUG", "ERROR", "OOM command not allowed"],
        ["DEBUG", "ERROR", "two\r\nlines\n"],
        ["DEBUG", "ERROR", ""],
        ["DEBUG", "error", "x", "y"],
    ])


def as_redis_724(raw):
    """A bulk reply of redis-server 7.0.15 naming its version, as Redis 7.2.4 words it."""
    if not raw.startswith(b"$") or b"7.0.15" not in raw:
        return raw
    body = raw.split(b"\r\n", 1)[1][:-2].replace(b"7.0.15", b"7.2.4")
    return b"$%d\r\n%s\r\n" % (len(body), body)


def test_lolwut(server, redis_server):
    sut, ref = both(server, redis_server)
    try:
        # Without art (every version but 5 and 6): the same reply, byte for byte, but for the
        # version (shardis reports 7.2.4, the reference is 7.0.15).
        for cmd in (["LOLWUT"], ["LOLWUT", "VERSION", "7"], ["LOLWUT", "version", "1"],
                    ["LOLWUT", "VERSION", "x"], ["LOLWUT", "VERSION", "5", "x"],
                    ["LOLWUT", "VERSION", "6", "1", "x"]):
            assert sut.call_raw(*cmd) == as_redis_724(ref.call_raw(*cmd)), cmd
        assert sut.call("LOLWUT") == b"Redis ver. 7.2.4\n"
        version = "7.2.4"
        for cmd in (["LOLWUT", "VERSION", "5"], ["LOLWUT", "VERSION", "6"],
                    ["LOLWUT", "VERSION", "5", "1", "1", "1"],
                    ["LOLWUT", "VERSION", "5", "10000", "10000", "10000"],
                    ["LOLWUT", "VERSION", "6", "-5", "0", "0"]):
            art = sut.call(*cmd).decode()
            assert art.endswith(f". Redis ver. {version}\n"), cmd
            assert len(art.splitlines()) > 1, cmd  # some art before the version line
        sut.call("HELLO", "3")
        assert isinstance(sut.call("LOLWUT"), Verbatim)
    finally:
        sut.close()
        ref.close()


def zrandmember_checks(conn, members, seed):
    """ZRANDMEMBER's answers on the sorted set `members` (member -> score) under key z: every
    pick is a member with its own score; positive counts give distinct members."""
    rng = random.Random(seed)
    real = {m.encode(): float(s) for m, s in members.items()}
    for _ in range(20):
        count = rng.choice([1, 2, 3, 5, len(members), len(members) + 1, 100, -1, -2, -5, -100])
        withscores = rng.random() < 0.5
        reply = conn.call("ZRANDMEMBER", "z", str(count), *(["WITHSCORES"] if withscores else []))
        if withscores:
            pairs = [tuple(p) for p in reply] if reply and isinstance(reply[0], list) else list(
                zip(reply[0::2], reply[1::2]))
        else:
            pairs = [(m, None) for m in reply]
        for m, s in pairs:
            assert m in real, (members, count, reply)
            if s is not None:
                assert float(s) == real[m], (members, count, reply)
        if count > 0:
            assert len(pairs) == min(count, len(real)) == len({m for m, _ in pairs})
        else:
            assert len(pairs) == -count
    assert conn.call("ZRANDMEMBER", "z") in real


@pytest.mark.parametrize("protocol", ["2", "3"])
def test_zrandmember_on_small_sets_returns_members(server, protocol):
    """Packed (listpack) sets of integers, non-canonical numbers, binary and long members."""
    conn = server.raw()
    rng = random.Random(17)
    pool = ["a", "b", "1", "-3", "300", "01", "-0", "1.0", " 1", "+1", "9223372036854775807",
            "9223372036854775808", "-9223372036854775808", "18446744073709551615", "",
            "a\x00b", "4294967296", "127", "128", "-129", "32767", "65536", "x" * 40, "y" * 70]
    try:
        conn.call("HELLO", protocol)
        for trial in range(60):
            conn.call("DEL", "z", "z2")
            members = {m: rng.choice([0, 1, -1, 2.5, 1e300]) for m in
                       rng.sample(pool, rng.randint(1, 8))}
            conn.call("ZADD", "z", *[x for m, s in members.items() for x in (repr(s), m)])
            if trial % 3 == 1:  # a set that went through a store and a removal
                conn.call("ZUNIONSTORE", "z2", "1", "z")
                conn.call("ZADD", "z2", "5", "gone")
                conn.call("ZREM", "z2", "gone")
                conn.call("RENAME", "z2", "z")
            zrandmember_checks(conn, members, trial)
    finally:
        conn.close()


def test_xclaim_and_xautoclaim_drop_deleted_entries(server, redis_server):
    """Deleted or trimmed entries leave the PEL; XAUTOCLAIM lists them in its third element."""
    setup = [["XADD", "s", f"{i}-0", "f", str(i)] for i in range(1, 6)] + [
        ["XGROUP", "CREATE", "s", "g", "0"],
        ["XREADGROUP", "GROUP", "g", "c1", "STREAMS", "s", ">"],
        ["XDEL", "s", "2-0"], ["XTRIM", "s", "MINID", "2-0"]]
    checks = [
        ["XPENDING", "s", "g"],
        ["XCLAIM", "s", "g", "c2", "0", "1-0", "2-0", "3-0", "JUSTID"],
        ["XPENDING", "s", "g"],
        ["XCLAIM", "s", "g", "c2", "0", "1-0", "9-0"],
        ["XDEL", "s", "4-0"],
        ["XAUTOCLAIM", "s", "g", "c3", "0", "0", "COUNT", "1", "JUSTID"],
        ["XAUTOCLAIM", "s", "g", "c3", "0", "0", "COUNT", "10", "JUSTID"],
        ["XPENDING", "s", "g"],
        ["XDEL", "s", "3-0", "5-0"],
        ["XAUTOCLAIM", "s", "g", "c4", "0", "0"],
        ["XPENDING", "s", "g"],
        ["XLEN", "s"],
    ]
    same_replies(server, redis_server, setup + checks)


def test_zrandmember_after_packed_set_changes(server):
    """After each change of a small set (re-scores, removals, pops, stores), ZRANDMEMBER picks
    only members ZRANGE lists."""
    conn = server.raw()
    rng = random.Random(72)
    pool = ["a", "b", "1", "-3", "300", "01", "x" * 40, "127", "-129", "65536", "", "1.5", "m"]
    try:
        conn.call("DEL", "{k}z", "{k}o")
        for _ in range(400):
            member, op = rng.choice(pool), rng.random()
            if op < 0.4:
                conn.call("ZADD", "{k}z", repr(rng.choice([0, 1, -1, 2.5, rng.random()])), member)
            elif op < 0.5:
                conn.call("ZINCRBY", "{k}z", "1", member)
            elif op < 0.65:
                conn.call("ZREM", "{k}z", member)
            elif op < 0.7:
                conn.call("ZPOPMIN", "{k}z")
            elif op < 0.8:
                conn.call("ZADD", "{k}o", "3", member)
                conn.call("ZUNIONSTORE", "{k}z", "2", "{k}z", "{k}o")
            elif op < 0.9:
                conn.call("ZREMRANGEBYSCORE", "{k}z", "2", "3")
            else:
                conn.call("ZRANGESTORE", "{k}z", "{k}z", "0", "4")
            real = set(conn.call("ZRANGE", "{k}z", "0", "-1"))
            for count in ("1", "2", "-4", "20"):
                reply = conn.call("ZRANDMEMBER", "{k}z", count, "WITHSCORES")
                assert set(reply[0::2]) <= real, (real, count, reply)
    finally:
        conn.close()


def test_dirty_counter_counts_only_changes(server, redis_server):
    """SETBIT and BITFIELD SET count only when the value changes; XREADGROUP counts each stream
    it serves (Redis 7.0 and 7.2 agree; more in test_dirty_counter.py)."""
    sut, ref = both(server, redis_server)

    def changes(conn):
        info = conn.call("INFO", "persistence").decode()
        return int(info.split("rdb_changes_since_last_save:")[1].split()[0])

    commands = [
        ["SETBIT", "b", "7", "1"], ["SETBIT", "b", "7", "1"], ["SETBIT", "b", "7", "0"],
        ["SETBIT", "b", "100", "0"], ["SETBIT", "b", "100", "0"],
        ["BITFIELD", "f", "SET", "u8", "0", "5"], ["BITFIELD", "f", "SET", "u8", "0", "5"],
        ["BITFIELD", "f", "GET", "u8", "0"], ["BITFIELD", "f", "INCRBY", "u8", "0", "0"],
        ["XADD", "s", "1-0", "f", "v"], ["XGROUP", "CREATE", "s", "g", "0"],
        ["XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">"],
        ["XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">"],
        ["XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", "0"],
        # A consumer that reads nothing: created by 7.2, not by 7.0 (see above), so made first.
        ["XGROUP", "CREATECONSUMER", "s", "g", "c2"],
        ["XREADGROUP", "GROUP", "g", "c2", "STREAMS", "s", ">"],
    ]
    try:
        for cmd in commands:
            before = changes(sut), changes(ref)
            sut.call(*cmd)
            ref.call(*cmd)
            assert changes(sut) - before[0] == changes(ref) - before[1], cmd
    finally:
        sut.close()
        ref.close()


# ---------------------------------------------------------------------------------------------
# NaN and infinities: the refusals and the normalised texts (Redis 7.2 writes every NaN as "nan"
# and infinities as "inf"/"-inf", in RESP2 bulks and RESP3 doubles; 7.0 agrees on all of these).
# ---------------------------------------------------------------------------------------------

NAN_AND_INF_COMMANDS = [
    # INCRBYFLOAT and HINCRBYFLOAT: a NaN or infinite increment or result is refused.
    ["SET", "f", "1.5"], ["INCRBYFLOAT", "f", "nan"], ["INCRBYFLOAT", "f", "inf"],
    ["INCRBYFLOAT", "f", "-inf"], ["INCRBYFLOAT", "missing", "NaN"], ["SET", "g", "inf"],
    ["INCRBYFLOAT", "g", "1"], ["SET", "n", "nan"], ["INCRBYFLOAT", "n", "1"],
    ["INCRBYFLOAT", "f", "1e308"], ["INCRBYFLOAT", "f", "1e308"],
    ["HSET", "h", "f", "1", "g", "inf", "n", "nan"], ["HINCRBYFLOAT", "h", "f", "nan"],
    ["HINCRBYFLOAT", "h", "f", "-inf"], ["HINCRBYFLOAT", "h", "g", "1"],
    ["HINCRBYFLOAT", "h", "n", "1"], ["HINCRBYFLOAT", "h", "f", "1e308"],
    ["HINCRBYFLOAT", "h", "f", "1e308"],
    # Sorted sets: NaN scores are refused, inf - inf is "not a number", infinities print so.
    ["ZADD", "z", "nan", "m"], ["ZADD", "z", "-nan", "m"], ["ZADD", "z", "inf", "m"],
    ["ZINCRBY", "z", "-inf", "m"], ["ZADD", "z", "INCR", "-inf", "m"], ["ZINCRBY", "z", "nan", "m"],
    ["ZSCORE", "z", "m"], ["ZADD", "z", "-inf", "n"], ["ZRANGE", "z", "0", "-1", "WITHSCORES"],
    ["ZMSCORE", "z", "m", "n", "none"], ["ZRANGEBYSCORE", "z", "-inf", "+inf", "WITHSCORES"],
    ["ZRANGEBYSCORE", "z", "nan", "+inf"], ["ZCOUNT", "z", "(-inf", "(inf"],
    # inf * 0 and inf + -inf in ZUNION/ZINTER become 0, as Redis does.
    ["ZUNION", "1", "z", "WEIGHTS", "0", "WITHSCORES"],
    ["ZUNION", "2", "z", "z", "WEIGHTS", "1", "-1", "WITHSCORES"],
    ["ZINTER", "2", "z", "z", "WEIGHTS", "inf", "-inf", "WITHSCORES"],
    ["ZUNIONSTORE", "u", "1", "z", "WEIGHTS", "0"], ["ZRANGE", "u", "0", "-1", "WITHSCORES"],
    # GEO: NaN or infinite coordinates and radii.
    ["GEOADD", "geo", "13.361389", "38.115556", "Palermo"], ["GEOADD", "geo", "nan", "1", "x"],
    ["GEOADD", "geo", "-inf", "1", "x"], ["GEOADD", "geo", "1", "nan", "x"],
    ["GEOSEARCH", "geo", "FROMLONLAT", "15", "37", "BYRADIUS", "nan", "km"],
    ["GEOSEARCH", "geo", "FROMLONLAT", "nan", "37", "BYRADIUS", "100", "km"],
    ["GEOSEARCH", "geo", "FROMLONLAT", "15", "37", "BYBOX", "nan", "1", "km"],
    ["GEORADIUS", "geo", "15", "37", "inf", "km", "WITHDIST"],
    ["GEODIST", "geo", "Palermo", "Palermo"],
]


@pytest.mark.parametrize("protocol", [2, 3])
def test_nan_and_infinity_replies_as_redis(server, redis_server, protocol):
    same_replies(server, redis_server, NAN_AND_INF_COMMANDS, setup=[["HELLO", str(protocol)]])
