"""Set commands: Redis 7.0 replies, error texts, RESP3 shapes, the intset/listpack -> table
conversions, SSCAN on large sets, and atomic multi-key commands across shards (the `server`
fixture runs every test with --threads 1, 2 and 4).

OBJECT ENCODING is not implemented yet, so conversions are observed through SSCAN: a packed set
(intset or listpack) answers everything in one call with cursor 0 whatever COUNT says.
"""

import threading
import time

import pytest

WRONGTYPE = b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"


def test_add_rem_members(r):
    assert r.sadd("s", "1", "2", "3", "2") == 3
    assert r.sadd("s", "a", "3") == 1
    assert r.smembers("s") == {b"1", b"2", b"3", b"a"}
    assert r.scard("s") == 4 and r.scard("nokey") == 0
    assert r.sismember("s", "a") is True and r.sismember("s", "01") is False
    assert r.smismember("s", ["1", "x", "a"]) == [1, 0, 1]
    assert r.smismember("nokey", ["1", "2"]) == [0, 0]
    assert r.srem("s", "1", "x") == 1
    assert r.srem("s", "2", "3", "a") == 3
    assert r.exists("s") == 0  # emptied sets are deleted
    assert r.srem("s", "1") == 0


def test_integers_and_strings_mix(r):
    r.sadd("s", "1", "-1", "9223372036854775807", "-9223372036854775808")
    assert r.smembers("s") == {b"1", b"-1", b"9223372036854775807", b"-9223372036854775808"}
    # Intsets reply in ascending order, as in Redis.
    assert r.sscan("s", 0) == (0, [b"-9223372036854775808", b"-1", b"1",
                                   b"9223372036854775807"])
    r.sadd("s", "01", "+1", "1.0", "")
    assert r.sismember("s", "01") and r.sismember("s", "") and r.sismember("s", "1")
    assert not r.sismember("s", "2")
    assert r.scard("s") == 8


def test_errors_and_wrong_type(r, raw):
    r.set("str", "v")
    for cmd in (["SADD", "str", "a"], ["SREM", "str", "a"], ["SMEMBERS", "str"],
                ["SCARD", "str"], ["SPOP", "str"], ["SRANDMEMBER", "str", "2"],
                ["SSCAN", "str", "0"], ["SINTER", "nokey", "str"], ["SUNION", "str"],
                ["SDIFFSTORE", "d", "str"], ["SINTERCARD", "2", "nokey", "str"]):
        assert raw.call_raw(*cmd) == WRONGTYPE, cmd
    r.sadd("s", "1", "2", "3")
    assert raw.call_raw("SPOP", "s", "-1") == b"-ERR value is out of range, must be positive\r\n"
    assert raw.call_raw("SPOP", "s", "x") == b"-ERR value is out of range, must be positive\r\n"
    assert raw.call_raw("SPOP", "s", "1", "2") == b"-ERR syntax error\r\n"
    assert raw.call_raw("SRANDMEMBER", "s", "1", "2") == b"-ERR syntax error\r\n"
    assert raw.call_raw("SRANDMEMBER", "s", "x") == \
        b"-ERR value is not an integer or out of range\r\n"
    assert raw.call_raw("SINTERCARD", "0", "s") == b"-ERR numkeys should be greater than 0\r\n"
    assert raw.call_raw("SINTERCARD", "x", "s") == b"-ERR numkeys should be greater than 0\r\n"
    assert raw.call_raw("SINTERCARD", "2", "s") == \
        b"-ERR Number of keys can't be greater than number of args\r\n"
    assert raw.call_raw("SINTERCARD", "1", "s", "LIMIT", "-1") == \
        b"-ERR LIMIT can't be negative\r\n"
    assert raw.call_raw("SINTERCARD", "1", "s", "LIMIT") == b"-ERR syntax error\r\n"
    assert raw.call_raw("SSCAN", "s", "x") == b"-ERR invalid cursor\r\n"


def test_resp3_shapes(r, raw):
    r.sadd("s", "1", "2", "3")
    raw.call("HELLO", "3")
    assert raw.call_raw("SMEMBERS", "s") == b"~3\r\n$1\r\n1\r\n$1\r\n2\r\n$1\r\n3\r\n"
    assert raw.call_raw("SMEMBERS", "nokey") == b"~0\r\n"
    assert raw.call_raw("SINTER", "s", "nokey") == b"~0\r\n"
    assert raw.call_raw("SPOP", "nokey") == b"_\r\n"
    assert raw.call_raw("SPOP", "nokey", "2") == b"~0\r\n"
    assert raw.call_raw("SPOP", "s", "0") == b"~0\r\n"
    assert raw.call_raw("SRANDMEMBER", "nokey", "2") == b"*0\r\n"
    assert raw.call_raw("SRANDMEMBER", "s", "5").startswith(b"*3\r\n")
    assert raw.call_raw("SRANDMEMBER", "s", "-5").startswith(b"*5\r\n")
    assert raw.call_raw("SPOP", "s", "1").startswith(b"~1\r\n")
    assert raw.call_raw("SPOP", "s", "5").startswith(b"~2\r\n")  # the rest, then deleted
    assert r.exists("s") == 0
    raw.call("HELLO", "2")
    assert raw.call_raw("SMEMBERS", "nokey") == b"*0\r\n"


def test_spop_srandmember(r):
    members = {str(i).encode() for i in range(300)} | {f"m{i}".encode() for i in range(50)}
    r.sadd("s", *members)
    for count in (1, 10, 100, 200, 349, 350, 1000):
        got = r.srandmember("s", count)
        assert len(got) == min(count, 350) and len(set(got)) == len(got)
        assert set(got) <= members
    got = r.srandmember("s", -500)
    assert len(got) == 500 and set(got) <= members
    assert r.srandmember("s") in members
    popped = set(r.spop("s", 100))
    assert len(popped) == 100 and popped <= members
    assert r.scard("s") == 250
    assert not any(r.smismember("s", list(popped)))
    one = r.spop("s")
    assert one in members and one not in popped
    rest = set(r.spop("s", 1000))
    assert len(rest) == 249 and r.exists("s") == 0


def scan_is_one_step(r, key):
    cursor, items = r.sscan(key, 0, count=1)
    return cursor == 0 and len(items) == r.scard(key)


@pytest.mark.parametrize("n", [511, 512, 513])
def test_intset_threshold(r, n):
    r.sadd("s", *range(n))
    assert scan_is_one_step(r, "s") == (n <= 512)
    assert r.scard("s") == n and r.sismember("s", n - 1)


# shardis_only: Redis 7.0 has no listpack sets (small string sets are hash tables there).
@pytest.mark.shardis_only
@pytest.mark.parametrize("n", [127, 128, 129])
def test_listpack_threshold(r, n):
    r.sadd("s", *[f"m{i}" for i in range(n)])
    assert scan_is_one_step(r, "s") == (n <= 128)
    # An intset that gets a string member below the listpack limit stays packed.
    r.sadd("i", *range(n - 1))
    r.sadd("i", "x")
    assert scan_is_one_step(r, "i") == (n <= 128)
    assert r.scard("i") == n


@pytest.mark.shardis_only
@pytest.mark.parametrize("length", [64, 65])
def test_listpack_value_threshold(r, length):
    r.sadd("s", "a", "b")
    r.sadd("s", "x" * length)
    assert scan_is_one_step(r, "s") == (length <= 64)
    assert r.sismember("s", "x" * length)


def test_sscan_large_set_sees_every_stable_member(r):
    stable = {f"stable:{i}".encode() for i in range(3000)}
    r.sadd("s", *stable)
    seen = set()
    cursor, step = 0, 0
    while True:
        cursor, items = r.sscan("s", cursor, count=25)
        seen.update(items)
        if step < 30:
            r.sadd("s", *[f"tmp:{step}:{i}" for i in range(200)])
        elif step < 60:
            r.srem("s", *[f"tmp:{step - 30}:{i}" for i in range(200)])
        step += 1
        if cursor == 0:
            break
    assert stable <= seen


def test_sscan_match(r):
    r.sadd("s", "apple", "avocado", "banana")
    cursor, items = r.sscan("s", 0, match="a*")
    assert cursor == 0 and sorted(items) == [b"apple", b"avocado"]


# Keys spread over the shards (with 2 and 4 threads some of them share a shard, some do not).
KEYS = [f"set:{i}" for i in range(8)]


def test_set_algebra_across_shards(r):
    r.sadd(KEYS[0], *range(0, 100))
    r.sadd(KEYS[1], *range(50, 150))
    r.sadd(KEYS[2], *[f"s{i}" for i in range(10)], *range(90, 95))
    ints = lambda s: {int(x) if x.isdigit() else x.decode() for x in s}  # noqa: E731
    assert ints(r.sinter(KEYS[0], KEYS[1])) == set(range(50, 100))
    assert ints(r.sinter(KEYS[0], KEYS[1], KEYS[2])) == set(range(90, 95))
    assert r.sinter(KEYS[0], "nokey") == set()
    assert len(r.sunion(KEYS[0], KEYS[1], KEYS[2])) == 160
    assert ints(r.sdiff(KEYS[0], KEYS[1])) == set(range(50))
    assert r.sdiff("nokey", KEYS[0]) == set()
    assert r.sintercard(2, [KEYS[0], KEYS[1]]) == 50
    assert r.sintercard(2, [KEYS[0], KEYS[1]], limit=7) == 7
    assert r.sintercard(3, [KEYS[0], KEYS[1], "nokey"]) == 0


def test_store_across_shards(r):
    r.sadd(KEYS[0], *range(0, 100))
    r.sadd(KEYS[1], *range(50, 150))
    r.set(KEYS[3], "a string with a ttl", ex=100)
    assert r.sinterstore(KEYS[3], KEYS[0], KEYS[1]) == 50
    assert r.type(KEYS[3]) == b"set" and r.ttl(KEYS[3]) == -1
    assert r.smembers(KEYS[3]) == {str(i).encode() for i in range(50, 100)}
    assert r.sunionstore(KEYS[4], KEYS[0], KEYS[1]) == 150
    assert r.scard(KEYS[4]) == 150
    assert r.sdiffstore(KEYS[5], KEYS[1], KEYS[0]) == 50
    # The destination may be a source.
    assert r.sdiffstore(KEYS[0], KEYS[0], KEYS[3]) == 50
    assert r.smembers(KEYS[0]) == {str(i).encode() for i in range(50)}
    # An empty result deletes the destination.
    assert r.sinterstore(KEYS[4], KEYS[0], "nokey") == 0
    assert r.exists(KEYS[4]) == 0
    # Wrong type among the sources: nothing is written.
    r.set(KEYS[6], "x")
    with pytest.raises(Exception, match="WRONGTYPE"):
        r.sunionstore(KEYS[5], KEYS[0], KEYS[6])
    assert r.scard(KEYS[5]) == 50


def test_smove_across_shards(r, raw):
    r.sadd(KEYS[0], "a", "b")
    assert r.smove(KEYS[0], KEYS[1], "a") is True
    assert r.smembers(KEYS[0]) == {b"b"} and r.smembers(KEYS[1]) == {b"a"}
    assert r.smove(KEYS[0], KEYS[1], "zz") is False
    assert r.smove("nokey", KEYS[1], "a") is False
    assert r.smove(KEYS[1], KEYS[1], "a") is True and r.smove(KEYS[1], KEYS[1], "q") is False
    # The destination's type is checked before the source is touched.
    r.set(KEYS[2], "str")
    assert raw.call_raw("SMOVE", KEYS[0], KEYS[2], "b") == WRONGTYPE
    assert r.smembers(KEYS[0]) == {b"b"}
    assert raw.call_raw("SMOVE", KEYS[2], KEYS[0], "b") == WRONGTYPE
    assert raw.call_raw("SMOVE", "nokey", KEYS[2], "b") == b":0\r\n"
    # Moving the last member deletes the source; an existing member in the destination is fine.
    r.sadd(KEYS[1], "b")
    assert r.smove(KEYS[0], KEYS[1], "b") is True
    assert r.exists(KEYS[0]) == 0 and r.smembers(KEYS[1]) == {b"a", b"b"}


def test_smove_is_atomic_across_shards(server, r):
    """Members move back and forth between two sets on (usually) different shards while readers
    check, in one command each, that no member is ever missing or in both sets."""
    a, b = "atom:a", "atom:b"
    n = 20
    r.sadd(a, *range(n))
    deadline = time.time() + 1.5
    errors = []

    def mover(seed):
        c = server.client()
        i = seed
        while time.time() < deadline:
            m = i % n
            c.smove(a, b, m) or c.smove(b, a, m)
            i += 7
        c.close()

    def reader():
        c = server.client()
        while time.time() < deadline:
            total = len(c.sunion(a, b))
            both = c.sintercard(2, [a, b])
            if total != n or both != 0:
                errors.append((total, both))
        c.close()

    threads = [threading.Thread(target=mover, args=(s,)) for s in (0, 3)]
    threads += [threading.Thread(target=reader) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert not errors, errors[:5]
    assert r.scard(a) + r.scard(b) == n


def test_store_is_atomic_across_shards(server, r):
    """SUNIONSTORE into one key while SMOVEs shuffle members between its sources: the stored
    result always has every member exactly once."""
    a, b, dst = "st:a", "st:b", "st:dst"
    n = 30
    r.sadd(a, *range(n))
    deadline = time.time() + 1.5
    bad = []

    def mover():
        c = server.client()
        i = 0
        while time.time() < deadline:
            m = i % n
            c.smove(a, b, m) or c.smove(b, a, m)
            i += 1
        c.close()

    def storer():
        c = server.client()
        while time.time() < deadline:
            got = c.sunionstore(dst, a, b)
            if got != n:
                bad.append(got)
        c.close()

    threads = [threading.Thread(target=mover), threading.Thread(target=storer)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert not bad, bad[:5]
    assert r.scard(dst) == n
