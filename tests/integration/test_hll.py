"""HyperLogLog (PFADD, PFCOUNT, PFMERGE) and OBJECT: the HLL strings shardis builds are compared
byte for byte with those of the Debian redis-server (`redis_server` fixture), sparse and dense,
with their cached cardinalities; HLL strings made by one server load into the other and count the
same; multi-key PFCOUNT and PFMERGE run across shards (`server` with --threads 1, 2, 4); corrupted
strings get Redis' errors."""

import random
import time

import pytest
import redis


KEYS = [f"hk{i}" for i in range(8)]
NOT_HLL = "WRONGTYPE Key is not a valid HyperLogLog string value."
CORRUPTED = "INVALIDOBJ Corrupted HLL object detected"


@pytest.fixture
def ref(redis_server):
    c = redis_server.client()
    c.flushall()
    yield c
    c.close()


def add_same(r, ref, key, elements, batch=37):
    for i in range(0, len(elements), batch):
        chunk = elements[i:i + batch]
        assert r.pfadd(key, *chunk) == ref.pfadd(key, *chunk)


@pytest.mark.parametrize("n", [1, 10, 300, 1200, 3000, 20000])
def test_bytes_and_counts_match_redis(r, ref, n):
    rng = random.Random(n)
    elements = [f"el-{rng.randrange(10**12)}" for _ in range(n)]
    add_same(r, ref, "h", elements)
    assert r.get("h") == ref.get("h")  # stale cache flag included
    assert r.pfcount("h") == ref.pfcount("h")
    assert r.get("h") == ref.get("h")  # the cached cardinality written back
    assert r.pfadd("h", *elements[:5]) == 0
    assert r.get("h") == ref.get("h")
    if n >= 3000:
        assert r.strlen("h") == 12304  # dense
    elif n <= 300:
        assert r.get("h")[4] == 1  # sparse


def test_redis_hll_loads_into_shardis_and_back(r, ref):
    for n in (50, 5000):
        ref.delete("src")
        ref.pfadd("src", *[f"x{i}" for i in range(n)])
        blob = ref.get("src")  # made by redis-server, cache stale
        r.set("copy", blob)
        ref.set("copy", blob)
        assert r.pfcount("copy") == ref.pfcount("copy")
        assert r.get("copy") == ref.get("copy")
        # Both keep growing it the same way.
        add_same(r, ref, "copy", [f"y{i}" for i in range(n)])
        assert r.get("copy") == ref.get("copy")
        assert r.pfcount("copy") == ref.pfcount("copy")
        # And an HLL made by shardis counts the same in redis-server.
        r.delete("mine")
        r.pfadd("mine", *[f"z{i}" for i in range(n)])
        ref.set("mine", r.get("mine"))
        assert ref.pfcount("mine") == r.pfcount("mine")
        assert ref.get("mine") == r.get("mine")


def test_pfadd_creates_key(r, ref):
    assert r.pfadd("e") == 1 == ref.pfadd("e")
    assert r.get("e") == ref.get("e")
    assert r.pfadd("e") == 0
    assert r.pfcount("e") == 0
    assert r.pfcount("missing") == 0


def test_multi_key_count_and_merge_cross_shard(r, ref):
    rng = random.Random(7)
    sizes = [10, 100, 1000, 5000, 20, 3, 0, 700]
    for k, size in zip(KEYS, sizes):
        elements = [f"{k}-{rng.randrange(3000)}" for _ in range(size)]
        if elements:
            add_same(r, ref, k, elements, batch=500)
    for combo in (KEYS[:2], KEYS[:4], KEYS, KEYS[4:] + ["missing"], [KEYS[5], KEYS[5]]):
        assert r.pfcount(*combo) == ref.pfcount(*combo), combo
    for dest, srcs in (("m1", KEYS[:3]), ("m2", KEYS[4:6]), (KEYS[0], KEYS[1:4]),
                       (KEYS[4], [KEYS[5]]), ("m3", ["missing"]), ("m4", [])):
        assert r.pfmerge(dest, *srcs) == ref.pfmerge(dest, *srcs)
        assert r.get(dest) == ref.get(dest), dest
        assert r.pfcount(dest) == ref.pfcount(dest)
        assert r.get(dest) == ref.get(dest), dest


def test_merge_into_dense_destination(r, ref):
    add_same(r, ref, KEYS[0], [f"d{i}" for i in range(6000)], batch=1000)
    add_same(r, ref, KEYS[1], [f"s{i}" for i in range(30)])
    for dest in (KEYS[2], KEYS[1]):  # a new key, then a sparse one that turns dense
        assert r.pfmerge(dest, KEYS[0], KEYS[1]) is True
        ref.pfmerge(dest, KEYS[0], KEYS[1])
        assert r.get(dest) == ref.get(dest)
        assert r.strlen(dest) == 12304


def test_errors(r, ref):
    for c in (r, ref):
        c.set("str", "foobar")
        c.rpush("list", "a")
        c.set("broken", b"HYLL\x01" + b"\x00" * 10 + b"\x80" + b"\x00")  # covers one register
        c.set("badenc", b"HYLL\x02" + b"\x00" * 11 + b"\x7f\xff")
        c.set("shortdense", b"HYLL\x00" + b"\x00" * 11 + b"\x7f\xff")
    cases = [
        ("PFADD", "str", "a"), ("PFCOUNT", "str"), ("PFMERGE", "str"),
        ("PFCOUNT", "missing", "str"), ("PFADD", "list", "a"), ("PFCOUNT", "list"),
        ("PFCOUNT", "broken"), ("PFCOUNT", "badenc"), ("PFCOUNT", "shortdense"),
        ("PFCOUNT", "broken", "str"), ("PFCOUNT", "str", "broken"), ("PFMERGE", "d", "broken"),
        ("PFMERGE", "d", "list"),
    ]
    for cmd in cases:
        with pytest.raises(redis.ResponseError) as mine:
            r.execute_command(*cmd)
        with pytest.raises(redis.ResponseError) as theirs:
            ref.execute_command(*cmd)
        assert str(mine.value) == str(theirs.value), cmd
    with pytest.raises(redis.ResponseError) as e:
        r.pfcount("str")
    assert str(e.value) == NOT_HLL
    with pytest.raises(redis.ResponseError) as e:
        r.pfcount("broken")
    assert str(e.value) == CORRUPTED
    assert r.exists("d") == 0


def test_pfcount_refresh_is_a_write_for_watch(server, r):
    r.pfadd("w", "a", "b")
    other = server.client()
    try:
        with r.pipeline() as p:
            p.watch("w")
            assert other.pfcount("w") == 2  # refreshes the cached count in the value
            p.multi()
            p.pfcount("w")
            with pytest.raises(redis.WatchError):
                p.execute()
        # With the cache valid, PFCOUNT changes nothing.
        with r.pipeline() as p:
            p.watch("w")
            assert other.pfcount("w") == 2
            p.multi()
            p.pfcount("w")
            assert p.execute() == [2]
    finally:
        other.close()


def test_pfdebug_matches_redis(r, ref):
    add_same(r, ref, "h", [f"p{i}" for i in range(40)])
    for sub in ("ENCODING", "DECODE", "GETREG", "ENCODING", "TODENSE", "DECODE", "FOO"):
        try:
            mine = r.execute_command("PFDEBUG", sub, "h")
        except redis.ResponseError as e:
            mine = str(e)
        try:
            theirs = ref.execute_command("PFDEBUG", sub, "h")
        except redis.ResponseError as e:
            theirs = str(e)
        assert mine == theirs, sub
        assert r.get("h") == ref.get("h"), sub
    with pytest.raises(redis.ResponseError, match="The specified key does not exist"):
        r.execute_command("PFDEBUG", "GETREG", "missing")


def test_object(r, raw):
    r.set("int", 100)
    r.set("bigint", 123456)
    set_at = time.monotonic()
    r.set("str", "hello")
    r.set("long", "x" * 100)
    r.rpush("list", "a")
    assert raw.call("OBJECT", "ENCODING", "int") == b"int"
    assert raw.call("OBJECT", "ENCODING", "str") == b"embstr"
    assert raw.call("OBJECT", "ENCODING", "long") == b"raw"
    assert raw.call_raw("OBJECT", "ENCODING", "missing") == b"$-1\r\n"
    assert raw.call("OBJECT", "REFCOUNT", "int") == 2147483647  # a shared integer in Redis 7.0
    assert raw.call("OBJECT", "REFCOUNT", "bigint") == 1
    assert raw.call("OBJECT", "REFCOUNT", "list") == 1
    # The access clock ticks once a second (Redis' LRU_CLOCK_RESOLUTION), so a key set a moment ago
    # reads 0, or 1 if a tick fell in between; a slow (sanitizer) run may see more whole seconds.
    idle = raw.call("OBJECT", "IDLETIME", "str")
    assert 0 <= idle <= int(time.monotonic() - set_at) + 1
    assert raw.call_raw("OBJECT", "FREQ", "missing") == b"$-1\r\n"
    assert raw.call("OBJECT", "FREQ", "str") == (
        b"ERR An LFU maxmemory policy is not selected, access frequency not tracked. Please note "
        b"that when switching between policies at runtime LRU and LFU data will take some time "
        b"to adjust.")
    assert raw.call("OBJECT", "foo") == b"ERR unknown subcommand 'foo'. Try OBJECT HELP."
    assert raw.call("OBJECT", "ENCODING", "a", "b") == (
        b"ERR wrong number of arguments for 'object|encoding' command")
    help_lines = raw.call("OBJECT", "HELP")
    assert help_lines[0].startswith(b"OBJECT <subcommand>")
    assert help_lines[-1] == b"    Prints this help."


def test_object_help_matches_redis(raw, redis_server):
    with redis_server.raw() as ref_raw:
        assert raw.call_raw("OBJECT", "HELP") == ref_raw.call_raw("OBJECT", "HELP")
