"""The text of doubles in replies: Redis 7.2 writes them with d2string (integers as integers,
anything else with fpconv's Grisu2: ZSCORE of 0.1 is "0.1"), where Redis 7.0 wrote "%.17g"
("0.10000000000000001"). shardis follows 7.2, so each case pins 7.2's text and checks that the
Debian redis-server 7.0 (`redis_server`) answers 7.0's text for the same number. Sorted-set
replies of every kind, ZSCAN (a small set's stored text, a large set's "%.17Lg"), DUMP of a small
set, and scripts (numbers passed to redis.call, doubles returned). One thread: the text does not
depend on where the key lives.

Where 7.0 and 7.2 print the same text, the differential tests compare bytes; where only the text
differs, they compare the numbers (test_differential.py)."""

import pytest

from conftest import Server

pytestmark = pytest.mark.shardis_only

# (ZADD argument, Redis 7.2's text, Redis 7.0's text)
SCORES = [
    ("0.1", "0.1", "0.10000000000000001"),
    ("1e300", "1e+300", "1.0000000000000001e+300"),
    # A small set stores d2string's "-0", which its listpack keeps as the integer 0 (ZINCRBY's
    # own reply is "-0": test_every_sorted_set_reply).
    ("-0.0", "0", "0"),
    ("3.0", "3", "3"),
    ("1.5e-7", "1.5e-7", "1.4999999999999999e-07"),
    ("0.000001", "0.000001", "9.9999999999999995e-07"),
    ("1e18", "1000000000000000000", "1e+18"),
    ("123456789012345678901234", "123456789012345690000000", "1.2345678901234569e+23"),
    # Grisu2 is not always the shortest text that reads back (that would be 686.234879582264).
    ("686.23487958226406", "686.2348795822641", "686.23487958226406"),
    ("-inf", "-inf", "-inf"),
]


@pytest.fixture(scope="module")
def srv(tmp_path_factory):
    s = Server("shardis", tmp_path_factory.mktemp("double-replies"), threads=1).start()
    yield s
    s.stop_and_check()


@pytest.fixture
def conn(srv):
    c = srv.raw()
    c.call("FLUSHALL")
    yield c
    c.close()


@pytest.fixture
def ref(redis_server):
    c = redis_server.raw()
    c.call("FLUSHALL")
    yield c
    c.close()


def bulk(text: str) -> bytes:
    return b"$%d\r\n%s\r\n" % (len(text), text.encode())


def double(text: str, resp3: bool) -> bytes:
    return b",%s\r\n" % text.encode() if resp3 else bulk(text)


@pytest.mark.parametrize("resp3", [False, True], ids=["resp2", "resp3"])
@pytest.mark.parametrize("arg,text72,text70", SCORES, ids=[s[0] for s in SCORES])
def test_zscore_text(conn, ref, arg, text72, text70, resp3):
    for c in (conn, ref):
        if resp3:
            c.call("HELLO", "3")
        assert c.call("ZADD", "z", arg, "m") == 1
    assert conn.call_raw("ZSCORE", "z", "m") == double(text72, resp3)
    assert ref.call_raw("ZSCORE", "z", "m") == double(text70, resp3)
    assert float(text72) == float(text70)


@pytest.mark.parametrize("resp3", [False, True], ids=["resp2", "resp3"])
def test_every_sorted_set_reply(conn, resp3):
    """Each command that replies a score, on a small set holding 0.1 and 2.5."""
    if resp3:
        conn.call("HELLO", "3")
    d = lambda text: double(text, resp3)  # noqa: E731
    conn.call("ZADD", "z", "0.1", "a", "2.5", "b")
    pair = (lambda m, s: b"*2\r\n" + bulk(m) + d(s)) if resp3 else \
        (lambda m, s: bulk(m) + d(s))
    pairs = lambda *ps: (b"*%d\r\n" % (len(ps) if resp3 else 2 * len(ps))  # noqa: E731
                         + b"".join(pair(m, s) for m, s in ps))
    assert conn.call_raw("ZSCORE", "z", "a") == d("0.1")
    assert conn.call_raw("ZMSCORE", "z", "a", "b") == b"*2\r\n" + d("0.1") + d("2.5")
    assert conn.call_raw("ZRANGE", "z", "0", "-1", "WITHSCORES") == pairs(("a", "0.1"),
                                                                         ("b", "2.5"))
    assert conn.call_raw("ZRANGEBYSCORE", "z", "0", "1", "WITHSCORES") == pairs(("a", "0.1"))
    assert conn.call_raw("ZREVRANGE", "z", "1", "1", "WITHSCORES") == pairs(("a", "0.1"))
    assert conn.call_raw("ZRANDMEMBER", "z", "-1", "WITHSCORES") in (
        pairs(("a", "0.1")), pairs(("b", "2.5")))
    assert conn.call_raw("ZUNION", "1", "z", "WEIGHTS", "2", "WITHSCORES") == pairs(("a", "0.2"),
                                                                                 ("b", "5"))
    assert conn.call_raw("ZINTER", "1", "z", "WITHSCORES") == pairs(("a", "0.1"), ("b", "2.5"))
    assert conn.call_raw("ZDIFF", "1", "z", "WITHSCORES") == pairs(("a", "0.1"), ("b", "2.5"))
    assert conn.call_raw("ZRANK", "z", "a", "WITHSCORE") == b"*2\r\n:0\r\n" + d("0.1")
    assert conn.call_raw("ZINCRBY", "zero", "-0.0", "m") == d("-0")
    assert conn.call_raw("ZINCRBY", "z", "0.2", "a") == d("0.30000000000000004")
    assert conn.call_raw("ZADD", "z", "INCR", "-0.2", "a") == d("0.10000000000000003")
    # A packed set's ZSCAN shows the text it stores: d2string's.
    assert conn.call_raw("ZSCAN", "z", "0") == (
        b"*2\r\n$1\r\n0\r\n*4\r\n" + bulk("a") + bulk("0.10000000000000003") + bulk("b") +
        bulk("2.5"))
    assert conn.call_raw("ZPOPMIN", "z") == b"*2\r\n" + bulk("a") + d("0.10000000000000003")
    assert conn.call_raw("BZPOPMIN", "z", "0") == b"*3\r\n" + bulk("z") + bulk("b") + d("2.5")
    # [key, [[member, score]]] in both protocols.
    conn.call("ZADD", "z", "1e-7", "c")
    assert conn.call_raw("ZMPOP", "1", "z", "MIN") == (
        b"*2\r\n" + bulk("z") + b"*1\r\n*2\r\n" + bulk("c") + d("1e-7"))
    conn.call("ZADD", "z", "1e21", "d")
    assert conn.call_raw("BZMPOP", "0", "1", "z", "MAX") == (
        b"*2\r\n" + bulk("z") + b"*1\r\n*2\r\n" + bulk("d") + d("1e+21"))


def test_stored_distances(conn, ref):
    """GEOSEARCHSTORE ... STOREDIST keeps full distances as scores: WITHSCORES shows 7.2's text."""
    for c in (conn, ref):
        c.call("GEOADD", "g", "13.361389", "38.115556", "Palermo", "13.583333", "37.316667",
               "Agrigento")
        c.call("GEOSEARCHSTORE", "d", "g", "FROMMEMBER", "Palermo", "BYRADIUS", "200", "km",
               "STOREDIST")
    assert conn.call("ZSCORE", "d", "Agrigento") == b"90.97775353799604"
    assert ref.call("ZSCORE", "d", "Agrigento") == b"90.977753537996037"
    # GEODIST keeps its fixed 4 decimals in both.
    assert conn.call("GEODIST", "g", "Palermo", "Agrigento", "km") == \
        ref.call("GEODIST", "g", "Palermo", "Agrigento", "km") == b"90.9778"


def test_zscan_of_a_large_set_keeps_17_digits(conn, ref):
    """A skiplist-encoded set's ZSCAN formats with ld2string's "%.17Lg", in 7.2 as in 7.0."""
    for c in (conn, ref):
        c.call("ZADD", "big", *[x for i in range(200) for x in (str(i), f"m{i}")])
        c.call("ZADD", "big", "0.1", "m0")
        assert c.call("OBJECT", "ENCODING", "big") == b"skiplist"
        cursor, seen = b"0", {}
        while True:
            cursor, items = c.call("ZSCAN", "big", cursor, "COUNT", "50")
            seen.update(zip(items[::2], items[1::2]))
            if cursor == b"0":
                break
        assert seen[b"m0"] == b"0.10000000000000001"
        assert seen[b"m7"] == b"7"
    assert conn.call_raw("ZSCORE", "big", "m0") == bulk("0.1")


def test_dump_of_a_small_set_stores_72_text(conn, ref):
    """The listpack in a small set's DUMP holds each score as d2string's text ("0.1"); Redis 7.0
    restores it to the same number."""
    conn.call("ZADD", "z", "0.1", "a", "1e300", "b")
    payload = conn.call("DUMP", "z")
    assert b"0.1" in payload and b"1e+300" in payload
    assert b"0.10000000000000001" not in payload
    assert ref.call("RESTORE", "z", "0", payload) == b"OK"
    assert ref.call("ZSCORE", "z", "a") == b"0.10000000000000001"
    assert ref.call("ZSCORE", "z", "b") == b"1.0000000000000001e+300"


# (Lua number, what the command receives in 7.2, in 7.0). Integers up to 2^62 go as integers:
# Redis 7.2.0 to 7.2.4 sent 1e9 as "1e+9" (redis/redis#13113), 7.2.5 fixed that.
LUA_NUMBERS = [
    ("0.1", "0.1", "0.10000000000000001"),
    ("0.1 + 0.2", "0.30000000000000004", "0.30000000000000004"),
    ("1e9", "1000000000", "1000000000"),
    ("2^62 + 1024", "4611686018427389000", "4.6116860184273889e+18"),
    ("1e20", "1e+20", "1e+20"),
    ("-0.0", "0", "-0"),
    ("1.5e-7", "1.5e-7", "1.4999999999999999e-07"),
]


@pytest.mark.parametrize("expr,text72,text70", LUA_NUMBERS, ids=[n[0] for n in LUA_NUMBERS])
def test_numbers_passed_to_commands(conn, ref, expr, text72, text70):
    script = f"redis.call('set', KEYS[1], {expr}) return redis.call('get', KEYS[1])"
    assert conn.call("EVAL", script, "1", "k") == text72.encode()
    assert ref.call("EVAL", script, "1", "k") == text70.encode()


def test_incrbyfloat_from_a_script(conn, ref):
    """INCRBYFLOAT reads the argument as a long double: 7.0's "0.10000000000000001" is not 7.2's
    "0.1", and the sums print differently ("%.17Lf" trimmed, the same in both versions)."""
    script = "redis.call('set', KEYS[1], '1.5') return redis.call('incrbyfloat', KEYS[1], 0.1)"
    assert conn.call("EVAL", script, "1", "k") == b"1.6"
    assert ref.call("EVAL", script, "1", "k") == b"1.60000000000000001"


@pytest.mark.parametrize("resp3", [False, True], ids=["resp2", "resp3"])
def test_doubles_in_and_out_of_scripts(conn, ref, resp3):
    for c in (conn, ref):
        if resp3:
            c.call("HELLO", "3")
        c.call("ZADD", "z", "0.1", "m")
    # A double returned by a script, and a RESP3 double reply (setresp 3) passed through.
    for script in ("return {double=0.1}",
                   "redis.setresp(3) return redis.call('zscore', KEYS[1], 'm')"):
        assert conn.call_raw("EVAL", script, "1", "z") == double("0.1", resp3)
        assert ref.call_raw("EVAL", script, "1", "z") == double("0.10000000000000001", resp3)
    # RESP2 (the scripts' default) gives the script a string: its text is what it sees.
    script = "return redis.call('zscore', KEYS[1], 'm')"
    assert conn.call_raw("EVAL", script, "1", "z") == bulk("0.1")
    assert ref.call_raw("EVAL", script, "1", "z") == bulk("0.10000000000000001")
    # A RESP3 double reaches the script as {double=number}: the same number in both versions.
    script = "redis.setresp(3) return tostring(redis.call('zscore', KEYS[1], 'm').double * 10)"
    assert conn.call("EVAL", script, "1", "z") == ref.call("EVAL", script, "1", "z") == b"1"
