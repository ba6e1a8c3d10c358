"""Hash commands: Redis 7.0 replies, error texts, RESP3 shapes, the packed -> table conversion
at hash-max-listpack-entries/-value, and HSCAN guarantees on large hashes.

OBJECT ENCODING is not implemented yet, so the conversion is observed through HSCAN: a packed
hash answers everything in one call with cursor 0 whatever COUNT says; a table answers a step.
"""

import pytest
import redis

WRONGTYPE = b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"


def test_set_get_del_len(r):
    assert r.hset("h", mapping={"a": "1", "b": "2"}) == 2
    assert r.hset("h", mapping={"a": "x", "c": "3"}) == 1
    assert r.hget("h", "a") == b"x"
    assert r.hget("h", "zz") is None
    assert r.hget("nokey", "a") is None
    assert r.hmget("h", ["a", "zz", "c"]) == [b"x", None, b"3"]
    assert r.hmget("nokey", ["a", "b"]) == [None, None]
    assert r.hlen("h") == 3 and r.hlen("nokey") == 0
    assert r.hexists("h", "b") is True and r.hexists("h", "q") is False
    assert r.hstrlen("h", "a") == 1 and r.hstrlen("h", "q") == 0
    assert r.hsetnx("h", "a", "new") == 0 and r.hget("h", "a") == b"x"
    assert r.hsetnx("h", "d", "4") == 1
    assert r.execute_command("HMSET", "h", "e", "5") in (True, b"OK")
    assert sorted(r.hkeys("h")) == [b"a", b"b", b"c", b"d", b"e"]
    assert sorted(r.hvals("h")) == [b"2", b"3", b"4", b"5", b"x"]
    assert r.hdel("h", "a", "b", "zz") == 2
    assert r.hdel("h", "c", "d", "e") == 3
    assert r.exists("h") == 0  # emptied hashes are deleted
    assert r.hdel("h", "a") == 0


def test_packed_keeps_insertion_order(r):
    r.hset("h", mapping={"z": "1", "a": "2", "m": "3"})
    r.hset("h", "a", "changed")
    r.hdel("h", "z")
    r.hset("h", "z", "4")
    assert r.hgetall("h") == {b"a": b"changed", b"m": b"3", b"z": b"4"}
    assert r.hkeys("h") == [b"a", b"m", b"z"]


def test_errors_and_wrong_type(r, raw):
    r.set("s", "v")
    for cmd in (["HSET", "s", "a", "1"], ["HGET", "s", "a"], ["HGETALL", "s"], ["HLEN", "s"],
                ["HINCRBY", "s", "a", "1"], ["HSCAN", "s", "0"], ["HRANDFIELD", "s"],
                ["HDEL", "s", "a"], ["HMGET", "s", "a"]):
        assert raw.call_raw(*cmd) == WRONGTYPE, cmd
    assert raw.call_raw("HSET", "h", "a") == \
        b"-ERR wrong number of arguments for 'hset' command\r\n"
    assert raw.call_raw("HSET", "h", "a", "1", "b") == \
        b"-ERR wrong number of arguments for 'hset' command\r\n"
    assert raw.call_raw("HMSET", "h", "a", "1", "b") == \
        b"-ERR wrong number of arguments for 'hmset' command\r\n"
    assert r.exists("h") == 0


def test_hincrby(r, raw):
    assert r.hincrby("h", "n", 5) == 5
    assert r.hincrby("h", "n", -7) == -2
    r.hset("h", mapping={"s": "abc", "f": "1.5", "sp": " 1", "big": "9223372036854775807"})
    assert raw.call_raw("HINCRBY", "h", "s", "1") == b"-ERR hash value is not an integer\r\n"
    assert raw.call_raw("HINCRBY", "h", "f", "1") == b"-ERR hash value is not an integer\r\n"
    assert raw.call_raw("HINCRBY", "h", "sp", "1") == b"-ERR hash value is not an integer\r\n"
    assert raw.call_raw("HINCRBY", "h", "big", "1") == \
        b"-ERR increment or decrement would overflow\r\n"
    assert raw.call_raw("HINCRBY", "h", "n", "x") == \
        b"-ERR value is not an integer or out of range\r\n"
    assert raw.call_raw("HINCRBY", "nokey", "n", "x") == \
        b"-ERR value is not an integer or out of range\r\n"
    assert r.exists("nokey") == 0


def test_hincrbyfloat(r, raw):
    assert raw.call_raw("HINCRBYFLOAT", "h", "f", "10.5") == b"$4\r\n10.5\r\n"
    assert raw.call_raw("HINCRBYFLOAT", "h", "f", "0.1") == b"$4\r\n10.6\r\n"
    assert raw.call_raw("HINCRBYFLOAT", "h", "f", "-10.6") == b"$1\r\n0\r\n"
    assert raw.call_raw("HINCRBYFLOAT", "h", "f", "5.0e3") == b"$4\r\n5000\r\n"
    r.hset("h", mapping={"s": "abc", "nan": "nan", "huge": "1e4932"})
    assert raw.call_raw("HINCRBYFLOAT", "h", "s", "1") == b"-ERR hash value is not a float\r\n"
    assert raw.call_raw("HINCRBYFLOAT", "h", "nan", "1") == b"-ERR hash value is not a float\r\n"
    assert raw.call_raw("HINCRBYFLOAT", "h", "f", "abc") == b"-ERR value is not a valid float\r\n"
    assert raw.call_raw("HINCRBYFLOAT", "h", "f", "inf") == b"-ERR value is NaN or Infinity\r\n"
    assert raw.call_raw("HINCRBYFLOAT", "h", "huge", "1e4932") == \
        b"-ERR increment would produce NaN or Infinity\r\n"


def test_resp3_shapes(r, raw):
    r.hset("h", mapping={"a": "1", "b": "2"})
    raw.call("HELLO", "3")
    assert raw.call_raw("HGETALL", "h") == b"%2\r\n$1\r\na\r\n$1\r\n1\r\n$1\r\nb\r\n$1\r\n2\r\n"
    assert raw.call_raw("HGETALL", "nokey") == b"%0\r\n"
    assert raw.call_raw("HKEYS", "nokey") == b"*0\r\n"
    assert raw.call_raw("HRANDFIELD", "nokey") == b"_\r\n"
    assert raw.call_raw("HRANDFIELD", "nokey", "3") == b"*0\r\n"
    # WITHVALUES: pairs as arrays of two in RESP3.
    reply = raw.call_raw("HRANDFIELD", "h", "5", "WITHVALUES")
    assert reply.startswith(b"*2\r\n*2\r\n$1\r\n")
    assert sorted(raw.call("HRANDFIELD", "h", "-3", "WITHVALUES")[i][0] in (b"a", b"b")
                  for i in range(3)) == [True] * 3
    assert raw.call_raw("HSCAN", "h", "0") == \
        b"*2\r\n$1\r\n0\r\n*4\r\n$1\r\na\r\n$1\r\n1\r\n$1\r\nb\r\n$1\r\n2\r\n"
    raw.call("HELLO", "2")
    reply = raw.call("HRANDFIELD", "h", "-3", "WITHVALUES")
    assert len(reply) == 6
    for f, v in zip(reply[0::2], reply[1::2]):
        assert (f, v) in ((b"a", b"1"), (b"b", b"2"))


def test_hrandfield_counts(r, raw):
    fields = {f"f{i}": str(i) for i in range(50)}
    r.hset("h", mapping=fields)
    for count in (1, 5, 20, 49, 50, 200):
        got = r.hrandfield("h", count)
        assert len(got) == min(count, 50) and len(set(got)) == len(got)
        assert all(f.decode() in fields for f in got)
    got = r.hrandfield("h", -120)
    assert len(got) == 120 and all(f.decode() in fields for f in got)
    assert r.hrandfield("h", 0) == []
    assert raw.call_raw("HRANDFIELD", "h", "1", "bogus") == b"-ERR syntax error\r\n"
    assert raw.call_raw("HRANDFIELD", "h", "x") == \
        b"-ERR value is not an integer or out of range\r\n"
    assert raw.call_raw("HRANDFIELD", "h", "-9223372036854775808") == (
        b"-ERR value is out of range, value must between -9223372036854775807 and "
        b"9223372036854775807\r\n")
    assert raw.call_raw("HRANDFIELD", "h", "-9223372036854775807", "WITHVALUES") == \
        b"-ERR value is out of range\r\n"


def scan_is_one_step(r, key):
    cursor, items = r.hscan(key, 0, count=1)
    return cursor == 0 and len(items) == r.hlen(key)


# Both servers' default hash-max-listpack-entries is 512.
@pytest.mark.parametrize("n", [511, 512, 513])
def test_conversion_at_entry_threshold(r, n):
    r.hset("h", mapping={f"f{i}": "v" for i in range(n)})
    assert scan_is_one_step(r, "h") == (n <= 512)
    assert r.hlen("h") == n
    assert r.hgetall("h") == {f"f{i}".encode(): b"v" for i in range(n)}


@pytest.mark.parametrize("length", [64, 65])
def test_conversion_at_value_threshold(r, length):
    r.hset("h", mapping={f"f{i}": "v" for i in range(30)})
    r.hset("h", "long", "x" * length)
    assert scan_is_one_step(r, "h") == (length <= 64)
    assert r.hget("h", "long") == b"x" * length
    r.hset("g", mapping={f"f{i}": "v" for i in range(30)})
    r.hset("g", "y" * length, "1")
    assert scan_is_one_step(r, "g") == (length <= 64)


def test_hscan_large_hash_sees_every_stable_field(r):
    stable = {f"stable:{i}": str(i) for i in range(2000)}
    r.hset("h", mapping=stable)
    seen = {}
    cursor, step = 0, 0
    while True:
        cursor, items = r.hscan("h", cursor, count=20)
        seen.update(items)
        # Between calls the hash grows (and later shrinks), so the table resizes under the scan.
        if step < 40:
            r.hset("h", mapping={f"tmp:{step}:{i}": "t" for i in range(100)})
        elif step < 60:
            r.hdel("h", *[f"tmp:{step - 40}:{i}" for i in range(100)])
        step += 1
        if cursor == 0:
            break
    for f, v in stable.items():
        assert seen.get(f.encode()) == v.encode()


def test_hscan_match_and_options(r, raw):
    r.hset("h", mapping={"apple": "1", "avocado": "2", "banana": "3"})
    cursor, items = r.hscan("h", 0, match="a*")
    assert cursor == 0 and items == {b"apple": b"1", b"avocado": b"2"}
    assert raw.call_raw("HSCAN", "h", "abc") == b"-ERR invalid cursor\r\n"
    assert raw.call_raw("HSCAN", "h", "0", "COUNT", "0") == b"-ERR syntax error\r\n"
    assert raw.call_raw("HSCAN", "h", "0", "COUNT", "x") == \
        b"-ERR value is not an integer or out of range\r\n"
    assert raw.call_raw("HSCAN", "h", "0", "MATCH") == b"-ERR syntax error\r\n"
    assert raw.call_raw("HSCAN", "nokey", "0", "BOGUS") == b"*2\r\n$1\r\n0\r\n*0\r\n"


def test_big_hash_operations(r):
    n = 5000
    r.hset("h", mapping={f"f{i}": "v" * (i % 100) for i in range(n)})
    assert r.hlen("h") == n
    assert r.hdel("h", *[f"f{i}" for i in range(0, n, 2)]) == n // 2
    assert r.hlen("h") == n // 2
    assert r.hget("h", "f1") == b"v"
    assert r.hget("h", "f2") is None
    assert r.hincrby("h", "counter", 3) == 3
    assert len(r.hgetall("h")) == n // 2 + 1
