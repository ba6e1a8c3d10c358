"""Stream commands: auto IDs, consumer-group flows, RESP2/RESP3 reply shapes byte for byte,
XREAD/XREADGROUP over keys on every shard (the `server` fixture runs with --threads 1, 2 and 4),
node boundaries seen through approximate trimming, and the stream as a value (TYPE, COPY,
RENAME, MULTI, WATCH). Run also against redis-server with SHARDIS_TEST_TARGET=redis to check the
expectations themselves."""

import random
import time

import pytest
import redis

WRONGTYPE = b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"


def resp3(raw):
    raw.call("HELLO", "3")
    return raw


def keys_on_many_shards(prefix, n):
    """Keys without a hashtag: they spread over every shard of a multi-threaded server."""
    return [f"{prefix}:{i}" for i in range(n)]


def entry(id_, *fv):
    return [id_.encode(), [x.encode() for x in fv]]


# ---------------------------------------------------------------------------------------------
# XADD IDs and errors
# ---------------------------------------------------------------------------------------------


def test_xadd_auto_ids_are_increasing_and_timed(r):
    before = int(time.time() * 1000)
    ids = [r.xadd("s", {"f": str(i)}) for i in range(50)]
    after = int(time.time() * 1000)
    parsed = [tuple(map(int, i.split(b"-"))) for i in ids]
    assert parsed == sorted(parsed) and len(set(parsed)) == 50
    assert before <= parsed[0][0] <= parsed[-1][0] <= after
    # An explicit ID far in the future: "*" continues from it with seq + 1.
    assert r.xadd("s", {"f": "x"}, id="99999999999999-5") == b"99999999999999-5"
    assert r.xadd("s", {"f": "y"}) == b"99999999999999-6"
    assert r.xadd("s", {"f": "z"}, id="99999999999999-*") == b"99999999999999-7"
    assert r.xadd("s", {"f": "z"}, id="99999999999999999-*") == b"99999999999999999-0"
    assert r.xlen("s") == 54


def test_xadd_errors(raw):
    assert raw.call_raw("XADD", "s", "0-0", "f", "v") == (
        b"-ERR The ID specified in XADD must be greater than 0-0\r\n")
    assert raw.call_raw("EXISTS", "s") == b":0\r\n"
    assert raw.call_raw("XADD", "s", "5-5", "f", "v") == b"$3\r\n5-5\r\n"
    assert raw.call_raw("XADD", "s", "5-5", "f", "v") == (
        b"-ERR The ID specified in XADD is equal or smaller than the target stream top item\r\n")
    assert raw.call_raw("XADD", "s", "4-*", "f", "v") == (
        b"-ERR The ID specified in XADD is equal or smaller than the target stream top item\r\n")
    assert raw.call_raw("XADD", "s", "5-*", "f", "v") == b"$3\r\n5-6\r\n"
    assert raw.call_raw("XADD", "s", "x-1", "f", "v") == (
        b"-ERR Invalid stream ID specified as stream command argument\r\n")
    assert raw.call_raw("XADD", "s", "6-1", "f") == (
        b"-ERR wrong number of arguments for 'xadd' command\r\n")
    assert raw.call_raw("XADD", "s", "LIMIT", "5", "*", "f", "v") == (
        b"-ERR syntax error, LIMIT cannot be used without specifying a trimming strategy\r\n")
    assert raw.call_raw("XADD", "s", "MAXLEN", "1", "LIMIT", "5", "*", "f", "v") == (
        b"-ERR syntax error, LIMIT cannot be used without the special ~ option\r\n")
    assert raw.call_raw("XADD", "s", "MAXLEN", "1", "MINID", "5", "*", "f", "v") == (
        b"-ERR syntax error, MAXLEN and MINID options at the same time are not compatible\r\n")
    assert raw.call_raw("XADD", "nokey", "NOMKSTREAM", "*", "f", "v") == b"$-1\r\n"
    # "ms-*" after ms-<max seq>: 7.2's answer, test_tcl_findings.py (7.0 differs).
    assert raw.call_raw("SET", "str", "x") == b"+OK\r\n"
    assert raw.call_raw("XADD", "str", "*", "f", "v") == WRONGTYPE
    assert raw.call_raw("XSETID", "s", "18446744073709551615-18446744073709551615") == b"+OK\r\n"
    assert raw.call_raw("XADD", "s", "*", "f", "v") == (
        b"-ERR The stream has exhausted the last possible ID, unable to add more items\r\n")


def test_empty_stream_is_kept(r):
    r.xadd("s", {"f": "v"}, id="1-1")
    assert r.xdel("s", "1-1") == 1
    assert r.exists("s") == 1 and r.xlen("s") == 0
    assert r.type("s") == b"stream"
    info = r.xinfo_stream("s")
    assert info["last-generated-id"] == b"1-1"
    assert info["max-deleted-entry-id"] == b"1-1"
    assert info["recorded-first-entry-id"] == b"0-0"
    assert info["first-entry"] is None and info["last-entry"] is None
    with pytest.raises(redis.ResponseError, match="equal or smaller"):
        r.xadd("s", {"f": "v"}, id="1-1")


# ---------------------------------------------------------------------------------------------
# Ranges, trimming and node boundaries
# ---------------------------------------------------------------------------------------------


def test_large_stream_against_model(r):
    rng = random.Random(5)
    model = []
    pipe = r.pipeline(transaction=False)
    for i in range(1, 2001):
        fv = {"a": str(i), "b": "x" * rng.randint(0, 30)} if i % 7 else {"other": str(i)}
        id_ = f"{i}-{rng.randint(0, 3)}"
        pipe.xadd("big", fv, id=id_)
        model.append((id_.encode(), {k.encode(): v.encode() for k, v in fv.items()}))
    pipe.execute()
    # Delete a tenth at random.
    for k in rng.sample(range(len(model)), 200):
        assert r.xdel("big", model[k][0]) == 1
    live = [m for m in model if r.xrange("big", m[0], m[0])]
    assert len(live) == 1800 == r.xlen("big")
    assert [(i, fv) for i, fv in r.xrange("big")] == live
    assert [(i, fv) for i, fv in r.xrevrange("big")] == live[::-1]
    # Paging with exclusive starts.
    got, start = [], "-"
    while True:
        page = r.xrange("big", start, "+", count=97)
        if not page:
            break
        got += page
        start = "(" + page[-1][0].decode()
    assert [g[0] for g in got] == [m[0] for m in live]


def test_approximate_trim_removes_whole_nodes(r):
    for i in range(1, 1001):
        r.xadd("s", {"f": "v"}, id=f"{i}-0")
    # 100 entries per node (stream-node-max-entries): ~ removes only whole nodes.
    assert r.xtrim("s", maxlen=250, approximate=True) == 700
    assert r.xlen("s") == 300
    assert r.xtrim("s", maxlen=250, approximate=False) == 50
    assert r.xrange("s", count=1)[0][0] == b"751-0"
    # MINID ~ removes the nodes whose last entry is below it: 751..800, not 801..900.
    assert r.xtrim("s", minid="900", approximate=True) == 50
    assert r.xtrim("s", minid="801", approximate=True) == 0
    # LIMIT caps the entries removed: the second node would exceed it.
    assert r.execute_command("XTRIM", "s", "MAXLEN", "~", "0", "LIMIT", "150") == 100
    assert r.xlen("s") == 100


# ---------------------------------------------------------------------------------------------
# Consumer groups
# ---------------------------------------------------------------------------------------------


def test_consumer_group_flow(r, raw):
    for i in range(1, 6):
        r.xadd("s", {"n": str(i)}, id=f"{i}-0")
    assert r.xgroup_create("s", "g", id="0") is True
    with pytest.raises(redis.ResponseError, match="BUSYGROUP"):
        r.xgroup_create("s", "g", id="0")
    got = r.xreadgroup("g", "alice", {"s": ">"}, count=2)
    assert got == [[b"s", [(b"1-0", {b"n": b"1"}), (b"2-0", {b"n": b"2"})]]]
    got = r.xreadgroup("g", "bob", {"s": ">"})
    assert [e[0] for e in got[0][1]] == [b"3-0", b"4-0", b"5-0"]
    assert r.xreadgroup("g", "bob", {"s": ">"}) == []
    summary = r.xpending("s", "g")
    assert summary["pending"] == 5
    assert summary["min"] == b"1-0" and summary["max"] == b"5-0"
    assert sorted((c["name"], c["pending"]) for c in summary["consumers"]) == [
        (b"alice", 2), (b"bob", 3)]
    assert r.xack("s", "g", "1-0", "3-0", "9-9") == 2
    # History: alice's pending entries, with delivery counts going up.
    hist = r.xreadgroup("g", "alice", {"s": "0"})
    assert [e[0] for e in hist[0][1]] == [b"2-0"]
    ext = r.xpending_range("s", "g", "-", "+", 10)
    assert [(e["message_id"], e["consumer"], e["times_delivered"]) for e in ext] == [
        (b"2-0", b"alice", 2), (b"4-0", b"bob", 1), (b"5-0", b"bob", 1)]
    # A deleted pending entry comes back as [id, nil] in the history.
    r.xdel("s", "2-0")
    assert raw.call_raw("XREADGROUP", "GROUP", "g", "alice", "STREAMS", "s", "0") == (
        b"*1\r\n*2\r\n$1\r\ns\r\n*1\r\n*2\r\n$3\r\n2-0\r\n*-1\r\n")
    # XCLAIM moves entries; FORCE creates a PEL entry; XAUTOCLAIM drops deleted ones.
    assert r.xclaim("s", "g", "carol", 0, ["4-0"], justid=True) == [b"4-0"]
    assert r.xpending_range("s", "g", "-", "+", 10, consumername="carol")[0]["message_id"] == \
        b"4-0"
    auto = raw.call("XAUTOCLAIM", "s", "g", "dave", "0", "0", "JUSTID")
    assert auto == [b"0-0", [b"4-0", b"5-0"], [b"2-0"]]
    groups = r.xinfo_groups("s")
    assert groups[0]["name"] == b"g" and groups[0]["pending"] == 2
    assert groups[0]["last-delivered-id"] == b"5-0"
    assert groups[0]["entries-read"] == 5 and groups[0]["lag"] == 0
    consumers = {c["name"]: c["pending"] for c in r.xinfo_consumers("s", "g")}
    assert consumers == {b"alice": 0, b"bob": 0, b"carol": 0, b"dave": 2}
    assert r.xgroup_delconsumer("s", "g", "dave") == 2
    assert r.xpending("s", "g")["pending"] == 0
    assert r.xgroup_destroy("s", "g") == 1
    assert r.xinfo_groups("s") == []


def test_lag_and_entries_read(r):
    for i in range(1, 6):
        r.xadd("s", {"n": str(i)}, id=f"{i}-0")
    r.xgroup_create("s", "g", id="0")
    g = r.xinfo_groups("s")[0]
    assert g["entries-read"] is None and g["lag"] == 5
    r.xreadgroup("g", "c", {"s": ">"}, count=2)
    g = r.xinfo_groups("s")[0]
    assert g["entries-read"] == 2 and g["lag"] == 3
    r.xdel("s", "4-0")  # a tombstone after the group's position: lag unknown
    assert r.xinfo_groups("s")[0]["lag"] is None
    r.xreadgroup("g", "c", {"s": ">"})
    g = r.xinfo_groups("s")[0]
    assert g["entries-read"] == 5 and g["lag"] == 0


def test_xpending_idle_and_xclaim_idle(r, raw):
    r.xadd("s", {"f": "v"}, id="1-0")
    r.xadd("s", {"f": "v"}, id="2-0")
    r.xgroup_create("s", "g", id="0")
    r.xreadgroup("g", "a", {"s": ">"})
    assert raw.call("XPENDING", "s", "g", "IDLE", "100000", "-", "+", "10") == []
    r.execute_command("XCLAIM", "s", "g", "b", "0", "1-0", "IDLE", "500000")
    got = raw.call("XPENDING", "s", "g", "IDLE", "100000", "-", "+", "10")
    assert len(got) == 1 and got[0][0] == b"1-0" and got[0][1] == b"b"
    assert 500000 <= got[0][2] < 600000
    # Min-idle-time: 2-0 was just delivered, so it is not claimed.
    assert raw.call("XCLAIM", "s", "g", "c", "100000", "2-0", "JUSTID") == []
    assert raw.call("XCLAIM", "s", "g", "c", "100000", "1-0", "JUSTID") == [b"1-0"]


def test_xgroup_errors(raw):
    assert raw.call_raw("XGROUP", "CREATE", "s", "g", "$") == (
        b"-ERR The XGROUP subcommand requires the key to exist. Note that for CREATE you may "
        b"want to use the MKSTREAM option to create an empty stream automatically.\r\n")
    assert raw.call_raw("XGROUP", "CREATE", "s", "g", "$", "MKSTREAM") == b"+OK\r\n"
    assert raw.call_raw("XGROUP", "SETID", "s", "nog", "0") == (
        b"-NOGROUP No such consumer group 'nog' for key name 's'\r\n")
    assert raw.call_raw("XREADGROUP", "GROUP", "nog", "c", "STREAMS", "s", ">") == (
        b"-NOGROUP No such key 's' or consumer group 'nog' in XREADGROUP with GROUP option\r\n")
    assert raw.call_raw("XGROUP", "CREATE", "s", "g2", "0", "ENTRIESREAD", "-3") == (
        b"-ERR value for ENTRIESREAD must be positive or -1\r\n")
    assert raw.call_raw("XGROUP", "FOO") == b"-ERR unknown subcommand 'FOO'. Try XGROUP HELP.\r\n"
    assert raw.call_raw("XINFO", "STREAM", "nokey") == b"-ERR no such key\r\n"
    # An unbalanced XREAD list (Redis 7.2's error text): test_compat72.py.
    assert raw.call_raw("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", "$").startswith(
        b"-ERR The $ ID is meaningless in the context of XREADGROUP")


# ---------------------------------------------------------------------------------------------
# RESP3 shapes and their RESP2 forms
# ---------------------------------------------------------------------------------------------


def test_xread_shapes(raw):
    raw.call("XADD", "s", "1-1", "f", "v")
    e = b"*1\r\n*2\r\n$3\r\n1-1\r\n*2\r\n$1\r\nf\r\n$1\r\nv\r\n"
    assert raw.call_raw("XREAD", "STREAMS", "s", "0") == b"*1\r\n*2\r\n$1\r\ns\r\n" + e
    assert raw.call_raw("XREAD", "STREAMS", "s", "$") == b"*-1\r\n"
    assert raw.call_raw("XRANGE", "s", "-", "+", "COUNT", "0") == b"*-1\r\n"
    resp3(raw)
    assert raw.call_raw("XREAD", "STREAMS", "s", "0") == b"%1\r\n$1\r\ns\r\n" + e
    assert raw.call_raw("XREAD", "STREAMS", "s", "$") == b"_\r\n"
    assert raw.call_raw("XADD", "nokey", "NOMKSTREAM", "*", "f", "v") == b"_\r\n"
    raw.call("XGROUP", "CREATE", "s", "g", "0")
    assert raw.call_raw("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">") == (
        b"%1\r\n$1\r\ns\r\n" + e)
    assert raw.call_raw("XPENDING", "s", "g") == (
        b"*4\r\n:1\r\n$3\r\n1-1\r\n$3\r\n1-1\r\n*1\r\n*2\r\n$1\r\nc\r\n$1\r\n1\r\n")
    raw.call("XACK", "s", "g", "1-1")
    assert raw.call_raw("XPENDING", "s", "g") == b"*4\r\n:0\r\n_\r\n_\r\n_\r\n"


@pytest.mark.shardis_only  # the consumers' fields of Redis 7.2 (inactive, active-time)
def test_xinfo_shapes(raw):
    resp3(raw)
    raw.call("XADD", "s", "1-1", "f", "v")
    raw.call("XGROUP", "CREATE", "s", "g", "0")
    info = raw.call("XINFO", "STREAM", "s")
    assert type(info).__name__ == "RespMap"
    assert list(info.keys()) == [b"length", b"radix-tree-keys", b"radix-tree-nodes",
                                 b"last-generated-id", b"max-deleted-entry-id",
                                 b"entries-added", b"recorded-first-entry-id", b"groups",
                                 b"first-entry", b"last-entry"]
    assert info[b"first-entry"] == [b"1-1", [b"f", b"v"]]
    groups = raw.call("XINFO", "GROUPS", "s")
    assert raw.call_raw("XINFO", "GROUPS", "s").startswith(b"*1\r\n%6\r\n")
    assert list(groups[0].keys()) == [b"name", b"consumers", b"pending", b"last-delivered-id",
                                      b"entries-read", b"lag"]
    assert groups[0][b"entries-read"] is None
    raw.call("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">")
    assert raw.call_raw("XINFO", "CONSUMERS", "s", "g").startswith(
        b"*1\r\n%4\r\n$4\r\nname\r\n$1\r\nc\r\n$7\r\npending\r\n:1\r\n$4\r\nidle\r\n:")
    assert list(raw.call("XINFO", "CONSUMERS", "s", "g")[0].keys()) == [
        b"name", b"pending", b"idle", b"inactive"]
    full = raw.call("XINFO", "STREAM", "s", "FULL")
    assert list(full.keys())[-2:] == [b"entries", b"groups"]
    g = full[b"groups"][0]
    assert list(g.keys()) == [b"name", b"last-delivered-id", b"entries-read", b"lag",
                              b"pel-count", b"pending", b"consumers"]
    assert g[b"pending"][0][:2] == [b"1-1", b"c"]
    assert list(g[b"consumers"][0].keys()) == [b"name", b"seen-time", b"active-time",
                                               b"pel-count", b"pending"]


# ---------------------------------------------------------------------------------------------
# Several streams, on every shard
# ---------------------------------------------------------------------------------------------


def test_xread_across_shards(r):
    keys = keys_on_many_shards("st", 12)
    for n, k in enumerate(keys):
        for i in range(1, n + 2):
            r.xadd(k, {"k": k, "i": str(i)}, id=f"{i}-0")
    got = r.xread({k: "0" for k in keys}, count=3)
    assert [g[0].decode() for g in got] == keys
    for n, (k, entries) in enumerate(got):
        assert [e[0] for e in entries] == [f"{i}-0".encode() for i in range(1, min(n + 1, 3) + 1)]
    # "$" and IDs past the end: only the streams with newer entries answer, in argument order.
    ids = {k: ("$" if n % 2 else "5-0") for n, k in enumerate(keys)}
    got = r.xread(ids)
    assert [g[0].decode() for g in got] == [k for n, k in enumerate(keys) if n % 2 == 0 and n >= 5]
    # A missing key among them is skipped; a key of another type fails the whole read.
    assert r.xread({"missing": "0", keys[0]: "0"}) == [[keys[0].encode(), [
        (b"1-0", {b"k": keys[0].encode(), b"i": b"1"})]]]
    r.set("plain", "x")
    with pytest.raises(redis.ResponseError, match="WRONGTYPE"):
        r.xread({keys[0]: "0", "plain": "0"})


def test_xreadgroup_across_shards(r):
    keys = keys_on_many_shards("gs", 8)
    for k in keys:
        r.xadd(k, {"f": "v"}, id="1-0")
        r.xadd(k, {"f": "w"}, id="2-0")
        r.xgroup_create(k, "g", id="0")
    got = r.xreadgroup("g", "c", {k: ">" for k in keys}, count=1)
    assert [g[0].decode() for g in got] == keys
    assert all(len(g[1]) == 1 and g[1][0][0] == b"1-0" for g in got)
    for k in keys:
        assert r.xpending(k, "g")["pending"] == 1
    # A group missing on one key: NOGROUP, and nothing is delivered on the others.
    r.xadd("gs:nogroup", {"f": "v"}, id="1-0")
    with pytest.raises(redis.ResponseError, match="NOGROUP"):
        r.xreadgroup("g", "c", {**{k: ">" for k in keys}, "gs:nogroup": ">"})
    for k in keys:
        assert r.xpending(k, "g")["pending"] == 1
    got = r.xreadgroup("g", "c", {k: ">" for k in keys}, noack=True)
    assert all(g[1][0][0] == b"2-0" for g in got)
    for k in keys:
        assert r.xpending(k, "g")["pending"] == 1
        assert r.xinfo_groups(k)[0]["last-delivered-id"] == b"2-0"


def test_xread_block_with_data_answers_at_once(r):
    r.xadd("s", {"f": "v"}, id="1-0")
    start = time.monotonic()
    got = r.xread({"s": "0"}, block=5000)
    assert got == [[b"s", [(b"1-0", {b"f": b"v"})]]]
    assert time.monotonic() - start < 2


# ---------------------------------------------------------------------------------------------
# The stream as a value
# ---------------------------------------------------------------------------------------------


def test_copy_and_rename_keep_groups(r):
    r.xadd("{a}s", {"f": "v"}, id="1-0")
    r.xgroup_create("{a}s", "g", id="0")
    r.xreadgroup("g", "c", {"{a}s": ">"})
    for dst in ("{a}copy", "elsewhere"):  # same shard, and most likely another one
        assert r.copy("{a}s", dst) == 1
        assert r.xrange(dst) == [(b"1-0", {b"f": b"v"})]
        assert r.xpending(dst, "g")["pending"] == 1
        assert r.xinfo_consumers(dst, "g")[0]["name"] == b"c"
    r.rename("elsewhere", "renamed:x")
    assert r.xinfo_groups("renamed:x")[0]["pending"] == 1
    assert r.xack("renamed:x", "g", "1-0") == 1
    assert r.xpending("{a}s", "g")["pending"] == 1


def test_multi_exec_and_watch(r):
    r.xadd("s", {"f": "v"}, id="1-0")
    pipe = r.pipeline(transaction=True)
    pipe.xadd("s", {"f": "w"}, id="2-0")
    pipe.xread({"s": "0", "other": "0"})
    pipe.xlen("s")
    assert pipe.execute() == [b"2-0", [[b"s", [(b"1-0", {b"f": b"v"}), (b"2-0", {b"f": b"w"})]]],
                              2]
    with r.pipeline(transaction=True) as p:
        p.watch("s")
        r.xadd("s", {"f": "x"}, id="3-0")
        p.multi()
        p.xlen("s")
        with pytest.raises(redis.WatchError):
            p.execute()


def test_memory_is_returned(r):
    def used():
        return r.info("memory")["used_memory"]

    base = used()
    for i in range(1, 3001):
        r.xadd("m", {"field": "value" * 4}, id=f"{i}-0")
    r.xgroup_create("m", "g", id="0")
    r.xreadgroup("g", "c", {"m": ">"})
    grown = used()
    assert grown - base > 100_000
    r.delete("m")
    assert used() - base < (grown - base) // 10


# ---------------------------------------------------------------------------------------------
# The differential stream on RESP3
# ---------------------------------------------------------------------------------------------


def test_differential_stream_in_resp3(server, r, redis_server):
    """The differential generator's stream commands, with both connections on RESP3."""
    from diff_families import streams
    from test_differential import Generator, run_stream

    seed = 4242
    ref, sut = redis_server.raw(timeout=30), server.raw(timeout=30)
    try:
        for conn in (ref, sut):
            conn.call("FLUSHALL")
            conn.call("HELLO", "3")
        gen = Generator(seed, families=[streams], base_weight=0.05)
        assert run_stream(ref, sut, seed, 4000, gen=gen) == 4000
    finally:
        ref.close()
        sut.close()


def test_node_boundaries_match_redis(server, r, redis_server):
    """Approximate trims remove whole nodes, so what they remove shows where nodes end: with
    values of every listpack encoding (small and large integers, short and long strings) and
    deletes in between, both servers must remove the same entries and report as many nodes."""
    rng = random.Random(99)
    ref, sut = redis_server.raw(timeout=30), server.raw(timeout=30)

    def value():
        return rng.choice([str(rng.randint(0, 127)), str(rng.randint(-5000, 5000)),
                           str(rng.randint(-2**40, 2**40)), "x" * rng.randint(0, 70),
                           "y" * rng.randint(100, 400), "007", "-0", "12345678901234567890123"])

    try:
        for conn in (ref, sut):
            conn.call("FLUSHALL")
        ms, ids = 0, []
        for step in range(3000):
            op = rng.random()
            if op < 0.75:
                ms += rng.randint(0, 3)
                cmd = ["XADD", "s", f"{ms}-*"]
                fields = ["a", "b"] if rng.random() < 0.8 else ["c", "d", "e"][: rng.randint(1, 3)]
                for f in fields:
                    cmd += [f, value()]
                if rng.random() < 0.05:
                    cmd[2:2] = ["MAXLEN", "~", str(rng.randint(50, 400))]
            elif op < 0.9 and ids:
                cmd = ["XDEL", "s", rng.choice(ids)]
            elif op < 0.95:
                cmd = ["XTRIM", "s", "MAXLEN", "~", str(rng.randint(0, 500))]
                if rng.random() < 0.3:
                    cmd += ["LIMIT", str(rng.randint(0, 300))]
            else:
                cmd = ["XTRIM", "s", "MINID", "~", f"{rng.randint(0, ms + 1)}-0"]
            a, b = ref.call_raw(*cmd), sut.call_raw(*cmd)
            assert a == b, f"step {step} {cmd[:4]}: redis {a!r} vs {b!r}"
            if cmd[0] == "XADD" and a.startswith(b"$"):
                ids.append(a.split(b"\r\n")[1].decode())
            if step % 100 == 99:
                ia, ib = ref.call("XINFO", "STREAM", "s"), sut.call("XINFO", "STREAM", "s")
                assert ia[:4] == ib[:4], f"step {step}: {ia[:4]} vs {ib[:4]}"  # length, nodes
                whole = ("XRANGE", "s", "-", "+")
                assert ref.call_raw(*whole) == sut.call_raw(*whole)
    finally:
        ref.close()
        sut.close()


GROUP_SCRIPT = """
XADD s 1-1 a 1
XADD s 2-1 a 2 b 2
XADD s 3-1 c 3
XADD s 4-1 a 4
XADD s 5-1 a 5
XGROUP CREATE s g 0
XGROUP CREATE s h $
XGROUP CREATE s e 2-1 ENTRIESREAD 2
XREADGROUP GROUP g alice COUNT 2 STREAMS s >
XREADGROUP GROUP g bob STREAMS s >
XREADGROUP GROUP e carol STREAMS s >
XREADGROUP GROUP h dave STREAMS s >
XINFO GROUPS s
XDEL s 2-1 4-1
XINFO GROUPS s
XREADGROUP GROUP g alice STREAMS s 0
XREADGROUP GROUP g bob STREAMS s 0-0
XREADGROUP GROUP g bob COUNT 1 STREAMS s 3-1
XPENDING s g
XPENDING s g - + 10
XPENDING s g (1-1 (5-1 10 bob
XCLAIM s g carol 0 1-1 2-1 3-1
XPENDING s g - + 10
XCLAIM s g carol 0 4-1 5-1 RETRYCOUNT 9 JUSTID
XCLAIM s g erin 0 5-1 TIME 0
XCLAIM s g erin 0 1-1 FORCE IDLE 7000000000
XCLAIM s g frank 0 3-1 FORCE JUSTID LASTID 9-0
XCLAIM s h frank 0 3-1 5-1 FORCE
XPENDING s g - + 10
XPENDING s h - + 10
XPENDING s g IDLE 1000000000 - + 10
XINFO GROUPS s
XAUTOCLAIM s g zed 1000000000 0
XADD s 6-1 a 6
XREADGROUP GROUP g alice NOACK STREAMS s >
XPENDING s g
XDEL s 1-1 3-1
XAUTOCLAIM s g zed 0 0 COUNT 1
XAUTOCLAIM s g zed 0 0 COUNT 1 JUSTID
XAUTOCLAIM s g zed 0 0
XINFO CONSUMERS s g
XINFO STREAM s FULL
XINFO STREAM s FULL COUNT 1
XGROUP SETID s g 0 ENTRIESREAD 3
XINFO GROUPS s
XGROUP SETID s g $
XINFO GROUPS s
XGROUP DELCONSUMER s g zed
XGROUP CREATECONSUMER s g zed
XINFO CONSUMERS s g
XACK s h 3-1 5-1 5-1
XTRIM s MAXLEN 0
XINFO STREAM s
XINFO GROUPS s
XSETID s 10-0 ENTRIESADDED 20 MAXDELETEDID 9-0
XINFO STREAM s
XINFO GROUPS s
XADD s 11-* a 11
XREADGROUP GROUP g bob STREAMS s >
XINFO GROUPS s
XGROUP DESTROY s h
XINFO STREAM s FULL
"""


@pytest.mark.parametrize("proto", ["2", "3"])
def test_group_script_matches_redis(server, r, redis_server, proto):
    """A consumer-group scenario (claims of deleted and forced entries, NOACK, lag after
    deletes and XSETID) sent to both servers; times are masked as in the differential test."""
    from diff_families import streams

    ref, sut = redis_server.raw(timeout=30), server.raw(timeout=30)
    try:
        for conn in (ref, sut):
            conn.call("FLUSHALL")
            conn.call("HELLO", proto)
        for line in GROUP_SCRIPT.strip().splitlines():
            cmd = line.split()
            (raw_a, val_a), (raw_b, val_b) = [
                (c.send_command(*cmd), c.read_reply())[1] for c in (ref, sut)]
            assert raw_a == raw_b or streams.match(cmd, val_a, val_b), (
                f"{line}: redis {raw_a!r} vs {raw_b!r}")
    finally:
        ref.close()
        sut.close()
