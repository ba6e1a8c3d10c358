"""Redis 7.2's list encodings and DEBUG OBJECT / DEBUG PROTOCOL (issue 17).

OBJECT ENCODING of a list: Redis 7.0 says quicklist for every list, 7.2 says listpack while the
list fits list-max-listpack-size (t_list.c listTypeTryConversion*: converted before growing past
the limit, back after shrinking under half of it with one node left, and on load when it fits).
shardis follows 7.2, so those tests pin 7.2's answers (shardis_only): they are the cases of
Redis 7.2's own unit/type/list.tcl and a few boundaries worked out from t_list.c.
DEBUG PROTOCOL is deterministic: byte-identical to redis-server 7.0 in RESP2 and RESP3.
DEBUG OBJECT: its fields compared with redis-server 7.0 where the value is encoded alike.
"""

import re
import string
import time

import pytest

from conftest import Error, flushed_pair

shardis_only = pytest.mark.shardis_only

LARGE = "x" * 8192  # past any size limit up to -2: a list holding it is a quicklist


def enc(raw, key):
    return raw.call("OBJECT", "ENCODING", key).decode()


def rpush_each(raw, key, items):
    raw.call("DEL", key)
    for item in items:
        raw.call("RPUSH", key, item)


@pytest.fixture
def lists(raw):
    """A raw connection; list-max-listpack-size goes back to its default afterwards."""
    yield raw
    raw.call("CONFIG", "SET", "list-max-listpack-size", "-2")


# ---------------------------------------------------------------------------------------------
# OBJECT ENCODING as Redis 7.2 (pinned; 7.0 says quicklist for all of these).
# ---------------------------------------------------------------------------------------------


@shardis_only
def test_small_list_is_a_listpack_and_a_large_one_a_quicklist(lists):
    lists.call("RPUSH", "l", "a", "b", "1", "-70000")
    assert enc(lists, "l") == "listpack"
    lists.call("RPUSH", "l", LARGE)
    assert enc(lists, "l") == "quicklist"
    lists.call("RPUSH", "big", LARGE)  # a new key whose first push is already too big
    assert enc(lists, "big") == "quicklist"


@shardis_only
@pytest.mark.parametrize("fill,large", [("3", "x"), ("-1", LARGE)], ids=["count", "size"])
def test_listpack_to_quicklist_when_growing(lists, fill, large):
    lists.call("CONFIG", "SET", "list-max-listpack-size", fill)
    for grow in (["RPUSH", "lst", large], ["LINSERT", "lst", "AFTER", "b", large],
                 ["LSET", "lst", "0", large]):
        rpush_each(lists, "lst", ["a", "b", "c"])
        assert enc(lists, "lst") == "listpack"
        lists.call(*grow)
        assert enc(lists, "lst") == "quicklist", grow
    # LMOVE: the destination converts for the element it receives (same and other shards).
    for dst in ("ldes{t}", "other-shard-dst"):
        rpush_each(lists, "lsrc{t}", ["a", "b", "c", large])
        rpush_each(lists, dst, ["d", "e", "f"])
        lists.call("LMOVE", "lsrc{t}", dst, "RIGHT", "RIGHT")
        assert enc(lists, dst) == "quicklist", dst


@shardis_only
def test_quicklist_to_listpack_when_shrinking(lists):
    lists.call("CONFIG", "SET", "list-max-listpack-size", "3")
    for items, shrink in ((["a", "b", "c", "d"], ["RPOP", "lst", "3"]),
                          (["a", "a", "a", "d"], ["LREM", "lst", "3", "a"]),
                          (["a", "b", "c", "d"], ["LTRIM", "lst", "1", "1"])):
        rpush_each(lists, "lst", items)
        assert enc(lists, "lst") == "quicklist"
        lists.call(*shrink)
        assert enc(lists, "lst") == "listpack", shrink
    lists.call("CONFIG", "SET", "list-max-listpack-size", "-1")
    for items, shrink in ((["a", "b", "c", LARGE], ["RPOP", "lst", "1"]),
                          (["a", LARGE], ["LREM", "lst", "1", LARGE]),
                          (["a", "b", LARGE], ["LTRIM", "lst", "0", "1"])):
        rpush_each(lists, "lst", items)
        assert enc(lists, "lst") == "quicklist"
        lists.call(*shrink)
        assert enc(lists, "lst") == "listpack", shrink
    # LSET: replacing the one large element of a one-node quicklist.
    rpush_each(lists, "lst", [LARGE, "a", "b"])
    lists.call("RPOP", "lst", "2")
    assert enc(lists, "lst") == "quicklist"
    assert lists.call("LSET", "lst", "-1", "c") == b"OK"
    assert enc(lists, "lst") == "listpack"


@shardis_only
def test_shrinking_converts_only_under_half_the_limit(lists):
    lists.call("CONFIG", "SET", "list-max-listpack-size", "4")
    lists.call("RPUSH", "l", "1", "2", "3", "4")
    assert enc(lists, "l") == "listpack"
    lists.call("RPUSH", "l", "5")
    assert enc(lists, "l") == "quicklist"
    lists.call("RPOP", "l", "2")  # 3 left, one node: not under half of 4 yet
    assert enc(lists, "l") == "quicklist"
    lists.call("RPOP", "l")
    assert enc(lists, "l") == "listpack"
    # A one-element quicklist made small by LSET converts back at once.
    lists.call("CONFIG", "SET", "list-max-listpack-size", "-2")
    rpush_each(lists, "q", [LARGE])
    lists.call("LSET", "q", "0", "small")
    assert enc(lists, "q") == "listpack"


@shardis_only
def test_size_limit_counts_listpack_bytes_exactly(lists):
    # -1: 4096 bytes. An empty listpack is 7 bytes, and LPUSH checks its arguments' raw lengths
    # before pushing them (t_list.c listTypeTryConversionAppend).
    lists.call("CONFIG", "SET", "list-max-listpack-size", "-1")
    lists.call("RPUSH", "l", "x" * 4089)
    assert enc(lists, "l") == "listpack"
    lists.call("DEL", "l")
    lists.call("RPUSH", "l", "x" * 4090)
    assert enc(lists, "l") == "quicklist"
    # "x"*4000 takes 4000 + 2 (encoding) + 2 (backlen) bytes: 4011 with the header.
    lists.call("RPUSH", "m", "x" * 4000)
    lists.call("RPUSH", "m", "y" * 85)  # 4011 + 85 = 4096: still fits, and takes 85 + 2 + 1
    assert enc(lists, "m") == "listpack"
    lists.call("RPUSH", "m", "z")  # 4099 + 1 > 4096
    assert enc(lists, "m") == "quicklist"


@shardis_only
def test_invalid_fill_values_are_clamped(lists):
    lists.call("CONFIG", "SET", "list-max-listpack-size", "0")  # counts as 1
    lists.call("RPUSH", "lst", "a")
    assert enc(lists, "lst") == "listpack"
    lists.call("RPUSH", "lst", "b")
    assert enc(lists, "lst") == "quicklist"
    lists.call("CONFIG", "SET", "list-max-listpack-size", "-6")  # counts as -5: 64 KiB
    lists.call("DEL", "lst")
    lists.call("RPUSH", "lst", "x" * 60000)
    assert enc(lists, "lst") == "listpack"
    lists.call("RPUSH", "lst", "x" * 5536)
    assert enc(lists, "lst") == "quicklist"


@shardis_only
def test_runtime_limit_change_applies_at_the_next_change(lists):
    lists.call("RPUSH", "l", "a", "b", "c")
    lists.call("CONFIG", "SET", "list-max-ziplist-size", "2")  # the old name of the same setting
    assert enc(lists, "l") == "listpack"  # nothing converts until the list changes
    lists.call("LINSERT", "l", "BEFORE", "nosuchpivot", "v")  # Redis converts before searching
    assert enc(lists, "l") == "quicklist"
    # LSET counts its element as one more before it looks at the index (Redis 7.2's
    # listTypeTryConversionAppend), so a full listpack converts even when the LSET fails.
    lists.call("DEL", "l")
    lists.call("RPUSH", "l", "a", "b")
    assert lists.call("LSET", "l", "5", "v") == Error(b"ERR index out of range")
    assert enc(lists, "l") == "quicklist"


@shardis_only
def test_built_lists_take_the_encoding_that_fits(lists):
    lists.call("CONFIG", "SET", "list-max-listpack-size", "3")
    lists.call("RPUSH", "lst", "a", "b", "c")
    lists.call("DEBUG", "RELOAD")
    assert enc(lists, "lst") == "listpack"
    lists.call("RPUSH", "lst", "d")
    lists.call("DEBUG", "RELOAD")
    assert enc(lists, "lst") == "quicklist"
    lists.call("RPOP", "lst")  # 3 left: not under half, stays a quicklist...
    assert enc(lists, "lst") == "quicklist"
    lists.call("DEBUG", "RELOAD")  # ...until loaded, which only needs it to fit
    assert enc(lists, "lst") == "listpack"
    # RESTORE and SORT ... STORE build a list the same way.
    dump = lists.call("DUMP", "lst")
    assert lists.call("RESTORE", "copy", "0", dump) == b"OK"
    assert enc(lists, "copy") == "listpack"
    lists.call("RPUSH", "nums{s}", "3", "1", "2", "5")
    lists.call("SORT", "nums{s}", "STORE", "sorted{s}")
    assert enc(lists, "sorted{s}") == "quicklist"
    lists.call("SORT", "nums{s}", "LIMIT", "0", "2", "STORE", "sorted{s}")
    assert enc(lists, "sorted{s}") == "listpack"


@shardis_only
def test_rotation_and_blocking_pops_keep_the_label(lists, server):
    lists.call("CONFIG", "SET", "list-max-listpack-size", "3")
    lists.call("RPUSH", "l", "a", "b", "c", "d")
    assert enc(lists, "l") == "quicklist"
    lists.call("LMOVE", "l", "l", "LEFT", "RIGHT")  # same key: push then pop checks
    assert enc(lists, "l") == "quicklist"
    lists.call("BLPOP", "l", "0")
    lists.call("BRPOP", "l", "0")  # [c] [d]: two nodes
    assert enc(lists, "l") == "quicklist"
    lists.call("LMPOP", "1", "l", "LEFT")  # [d]: one node, 1 <= 3 / 2
    assert enc(lists, "l") == "listpack"


# ---------------------------------------------------------------------------------------------
# DEBUG OBJECT
# ---------------------------------------------------------------------------------------------

DEBUG_OBJECT = re.compile(
    rb"Value at:0x[0-9a-f]+ refcount:(\d+) encoding:(\w+) serializedlength:(\d+) lru:(\d+) "
    rb"lru_seconds_idle:(\d+)(.*)")


def debug_object(conn, key):
    line = conn.call("DEBUG", "OBJECT", key)
    m = DEBUG_OBJECT.fullmatch(bytes(line))
    assert m, line
    refcount, encoding, length, _lru, idle, extra = m.groups()
    return {"refcount": int(refcount), "encoding": encoding.decode(),
            "serializedlength": int(length), "idle": int(idle), "extra": extra.decode()}


def test_debug_object_fields_match_redis(server, redis_server):
    setup = [["SET", "int", "42"], ["SET", "bigint", "12345678"], ["SET", "str", "hello"],
             ["SET", "long", string.ascii_letters + string.digits],  # 62 bytes LZF cannot shrink
             ["HSET", "h", "f", "v", "g", "1"],
             ["SADD", "is", "1", "2", "3"], ["ZADD", "z", "1", "a", "2.5", "b"]]
    with flushed_pair(server, redis_server) as (sut, ref):
        for cmd in setup:
            sut.call(*cmd)
            ref.call(*cmd)
        for key in ("int", "bigint", "str", "long", "h", "is", "z"):
            got, want = debug_object(sut, key), debug_object(ref, key)
            # (Redis' shared integers keep the clock of whoever touched them last.)
            assert got["idle"] <= 2
            del got["idle"], want["idle"]
            assert got == want, key
        for conn in (sut, ref):
            assert conn.call("DEBUG", "OBJECT", "missing") == Error(b"ERR no such key")
        assert sut.call_raw("DEBUG", "OBJECT", "int", "x") == ref.call_raw("DEBUG", "OBJECT",
                                                                           "int", "x")


def test_debug_object_leaves_the_access_clock(server, redis_server):
    with flushed_pair(server, redis_server) as conns:
        for conn in conns:
            conn.call("SET", "k", "v")
        time.sleep(1.1)
        for conn in conns:
            assert debug_object(conn, "k")["idle"] >= 1
            assert conn.call("OBJECT", "IDLETIME", "k") >= 1


@shardis_only
def test_debug_object_of_lists(lists):
    lists.call("CONFIG", "SET", "list-max-listpack-size", "-2")
    lists.call("RPUSH", "l", "a", "b", "c")
    got = debug_object(lists, "l")
    # One listpack node of 3 short strings: 7 + 3 * 3 = 16 bytes; in the RDB: the node count,
    # the container and the listpack as a string (1 + 1 + 1 + 16).
    assert (got["encoding"], got["extra"], got["serializedlength"]) == ("listpack", "", 19)
    lists.call("RPUSH", "q", LARGE, "a")
    got = debug_object(lists, "q")
    assert got["encoding"] == "quicklist"
    m = re.fullmatch(r" ql_nodes:(\d+) ql_avg_node:(\d+\.\d\d) ql_listpack_max:(-?\d+) "
                     r"ql_compressed:([01]) ql_uncompressed_size:(\d+)", got["extra"])
    assert m, got["extra"]
    # Two nodes: 7 + (5 + 8192 + 2) and 7 + (1 + 1 + 1) bytes.
    assert m.groups() == ("2", "1.00", "-2", "0", str(7 + 8199 + 7 + 3))


# ---------------------------------------------------------------------------------------------
# DEBUG PROTOCOL: byte for byte as redis-server, in RESP2 and RESP3.
# ---------------------------------------------------------------------------------------------

PROTOCOL_TYPES = ["string", "integer", "double", "bignum", "null", "array", "set", "map",
                  "attrib", "push", "verbatim", "true", "false", "STRING", "nosuch"]


@pytest.mark.parametrize("resp", [2, 3])
def test_debug_protocol_matches_redis(server, redis_server, resp):
    with flushed_pair(server, redis_server) as (sut, ref):
        for conn in (sut, ref):
            conn.call("HELLO", str(resp))
        for name in PROTOCOL_TYPES:
            got, want = sut.call_raw("DEBUG", "PROTOCOL", name), ref.call_raw("DEBUG", "PROTOCOL",
                                                                              name)
            assert got == want, (name, got, want)
            if name == "push" and resp == 3:  # a normal reply follows the push
                assert sut.read_reply()[0] == ref.read_reply()[0]
        for conn in (sut, ref):
            conn.call("HELLO", "2")


def test_debug_protocol_arity(server, redis_server):
    with flushed_pair(server, redis_server) as (sut, ref):
        for cmd in (["DEBUG", "PROTOCOL"], ["DEBUG", "PROTOCOL", "string", "x"]):
            assert sut.call_raw(*cmd) == ref.call_raw(*cmd), cmd
