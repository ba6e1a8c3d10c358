"""MEMORY USAGE / STATS / DOCTOR / MALLOC-STATS / PURGE / HELP: reply shapes and errors against
redis-server, and USAGE against the heap growth INFO reports."""

from __future__ import annotations

import pytest
import redis

from conftest import TARGET, start_target

# One key of each type, small enough to stay packed.
SMALL_KEYS = {
    "str": lambda c: c.set("str", "v"),
    "int": lambda c: c.set("int", 12345),
    "rawstr": lambda c: c.set("rawstr", "x" * 300),
    "list": lambda c: c.rpush("list", "a", "b", 1),
    "hash": lambda c: c.hset("hash", mapping={"f": "v", "g": 1}),
    "set": lambda c: c.sadd("set", "a", "b"),
    "intset": lambda c: c.sadd("intset", 1, 2, 3),
    "zset": lambda c: c.zadd("zset", {"a": 1, "b": 2}),
    "stream": lambda c: c.xadd("stream", {"f": "v"}),
}


def fill_big(c, kind: str, key: str, n: int) -> None:
    """A collection of n alike elements, large enough for its large encoding."""
    p = c.pipeline(transaction=False)
    for start in range(0, n, 1000):
        chunk = range(start, min(n, start + 1000))
        if kind == "string":
            p.set(key, "x" * (n * 100))
            break
        if kind == "list":
            p.rpush(key, *[f"element-{i:08d}" for i in chunk])
        elif kind == "hash":
            p.hset(key, mapping={f"field-{i:08d}": f"value-{i:08d}" for i in chunk})
        elif kind == "set":
            p.sadd(key, *[f"member-{i:08d}" for i in chunk])
        elif kind == "zset":
            p.zadd(key, {f"member-{i:08d}": i for i in chunk})
        elif kind == "stream":
            for i in chunk:
                p.xadd(key, {"field": f"value-{i:08d}"}, id=f"{i + 1}-0")
    p.execute()


@pytest.mark.parametrize("key", list(SMALL_KEYS))
def test_usage_of_every_type_is_an_integer(r, key):
    SMALL_KEYS[key](r)
    for extra in ([], ["SAMPLES", "0"], ["samples", "1"]):
        usage = r.execute_command("MEMORY", "USAGE", key, *extra)
        assert isinstance(usage, int) and usage > 0, (key, extra, usage)


def test_usage_of_a_large_collection_of_every_type(r):
    for kind in ("list", "hash", "set", "zset", "stream"):
        fill_big(r, kind, kind, 2000)
        assert r.memory_usage(kind) > 2000 * 10
        assert r.memory_usage(kind, samples=0) > 2000 * 10


def test_usage_missing_key_is_nil(r):
    assert r.memory_usage("nope") is None
    assert r.execute_command("MEMORY", "USAGE", "nope", "SAMPLES", "3") is None


def test_usage_grows_with_the_value(r):
    r.set("a", "x" * 100)
    r.set("b", "x" * 10000)
    assert r.memory_usage("b") - r.memory_usage("a") >= 9900


ERROR_CASES = [
    ["USAGE"], ["USAGE", "k", "SAMPLES"], ["USAGE", "k", "SAMPLES", "x"],
    ["USAGE", "k", "SAMPLES", "-1"], ["USAGE", "k", "FOO"], ["USAGE", "k", "SAMPLES", "1", "X"],
    ["USAGE", "nope", "FOO"], ["STATS", "x"], ["DOCTOR", "x"], ["PURGE", "x"],
    ["MALLOC-STATS", "x"], ["HELP", "x"], ["NOSUCH"],
]


@pytest.mark.parametrize("args", ERROR_CASES, ids=lambda a: "-".join(a))
def test_errors_match_redis(server, redis_server, args):
    with server.raw() as ours, redis_server.raw() as theirs:
        for conn in (ours, theirs):
            conn.call("SET", "k", "v")
        expected = theirs.call_raw("MEMORY", *args)
        assert expected.startswith(b"-"), expected
        assert ours.call_raw("MEMORY", *args) == expected


def test_help_matches_redis(server, redis_server):
    with server.raw() as ours, redis_server.raw() as theirs:
        assert ours.call_raw("MEMORY", "HELP") == theirs.call_raw("MEMORY", "HELP")


def test_reply_shapes_match_redis(server, redis_server):
    with server.raw() as ours, redis_server.raw() as theirs:
        for conn in (ours, theirs):
            conn.call("SET", "k", "v")
        # An integer for a key, a null bulk for a missing one.
        assert ours.call_raw("MEMORY", "USAGE", "k").startswith(b":")
        assert ours.call_raw("MEMORY", "USAGE", "nope") == \
            theirs.call_raw("MEMORY", "USAGE", "nope") == b"$-1\r\n"
        assert ours.call_raw("MEMORY", "PURGE") == theirs.call_raw("MEMORY", "PURGE") == \
            b"+OK\r\n"
        for sub in ("DOCTOR", "MALLOC-STATS"):
            assert ours.call_raw("MEMORY", sub)[:1] == theirs.call_raw("MEMORY", sub)[:1] == b"$"
        for conn in (ours, theirs):
            conn.call("HELLO", "3")
        for sub in ("DOCTOR", "MALLOC-STATS"):
            assert ours.call_raw("MEMORY", sub)[:1] == b"="  # a verbatim string, as Redis
        assert ours.call_raw("MEMORY", "STATS")[:1] == theirs.call_raw("MEMORY", "STATS")[:1] \
            == b"%"


def test_stats_has_redis_fields(server, redis_server):
    ours = server.client(decode_responses=True)
    theirs = redis_server.client(decode_responses=True)
    for c in (ours, theirs):
        c.flushall()
        c.set("k", "v")
        c.set("e", "v", ex=100)
    mine, ref = ours.memory_stats(), theirs.memory_stats()
    assert set(mine) == set(ref)
    assert mine["keys.count"] == 2
    assert mine["total.allocated"] > 0 and mine["peak.allocated"] >= mine["total.allocated"]
    assert set(mine["db.0"]) == set(ref["db.0"])
    assert float(mine["fragmentation"]) > 0 and 0 <= float(mine["dataset.percentage"]) <= 100
    ours.flushall()
    theirs.flushall()


# ---- USAGE against the real heap growth ---------------------------------------------------------

BIG = {"string": 20000, "list": 30000, "hash": 30000, "set": 30000, "zset": 30000,
       "stream": 30000}


@pytest.fixture(scope="module")
def single_shard(tmp_path_factory):
    srv = start_target(tmp_path_factory.mktemp("memory-usage"), threads=1)
    yield srv
    srv.stop_and_check()


@pytest.mark.shardis_only  # Redis' estimate ignores allocator overheads its used_memory sees
@pytest.mark.parametrize("kind", list(BIG))
def test_usage_within_ten_percent_of_heap_growth(single_shard, kind):
    c = single_shard.client()
    c.flushall()
    c.set("warm", "up")  # the database's table exists before the measurement
    before = c.info("memory")["used_memory"]
    fill_big(c, kind, "big", BIG[kind])
    grown = c.info("memory")["used_memory"] - before
    for samples in (0, 5):
        usage = c.memory_usage("big", samples=samples)
        assert abs(usage - grown) <= grown * 0.10, (kind, samples, usage, grown)
    c.flushall()
