"""SORT and SORT_RO: numeric and ALPHA order, DESC, LIMIT clamping, BY nosort (natural order,
score order for sorted sets), BY/GET patterns with strings and hash fields on the source's shard,
STORE (also to a key on another shard, as one transaction), the score error, and BY/GET
patterns naming keys on every shard, compared with redis-server, atomically (the `server`
fixture runs every test with --threads 1, 2 and 4).
"""

import pytest
import redis

SCORE_ERR = "One or more scores can't be converted into double"


def test_numeric_alpha_desc(r):
    r.rpush("l", "3", "1", "2", "10", "-5", "1.5", " 7", "0x10")
    assert r.sort("l") == [b"-5", b"1", b"1.5", b"2", b"3", b" 7", b"10", b"0x10"]
    assert r.sort("l", desc=True) == [b"0x10", b"10", b" 7", b"3", b"2", b"1.5", b"1", b"-5"]
    assert r.sort("l", alpha=True) == [b" 7", b"-5", b"0x10", b"1", b"1.5", b"10", b"2", b"3"]
    assert r.execute_command("SORT_RO", "l", "DESC", "ALPHA") == \
        [b"3", b"2", b"10", b"1.5", b"1", b"0x10", b"-5", b" 7"]
    # Equal scores fall back to the elements' bytes.
    r.rpush("eq", "1.0", "1", "01", "0.5")
    assert r.sort("eq") == [b"0.5", b"01", b"1", b"1.0"]
    assert r.sort("missing") == []


@pytest.mark.parametrize("start,count,expected", [
    ("1", "3", [b"2", b"3", b"4"]), ("-1", "2", [b"1", b"2"]), ("3", "100", [b"4", b"5"]),
    ("5", "1", []), ("100", "1", []), ("0", "0", []), ("2", "-1", [b"3", b"4", b"5"]),
    ("0", "-9223372036854775808", [b"1", b"2", b"3", b"4", b"5"]),
    ("9223372036854775807", "9223372036854775807", []),
])
def test_limit(r, start, count, expected):
    r.rpush("l", "5", "3", "1", "4", "2")
    assert r.execute_command("SORT", "l", "LIMIT", start, count) == expected


def test_score_errors(r):
    r.rpush("l", "1", "abc", "2")
    with pytest.raises(redis.ResponseError, match=SCORE_ERR):
        r.sort("l")
    with pytest.raises(redis.ResponseError, match=SCORE_ERR):
        r.sort("l", store="dst")
    assert r.exists("dst") == 0  # nothing stored on error
    r.rpush("n", "nan", "1")
    with pytest.raises(redis.ResponseError, match=SCORE_ERR):
        r.sort("n")
    assert r.sort("l", alpha=True) == [b"1", b"2", b"abc"]
    # BY nosort parses nothing.
    assert r.sort("l", by="nosort") == [b"1", b"abc", b"2"]


def test_sets_and_zsets_sort_by_value(r):
    r.sadd("s", "5", "3", "9", "1", "10")
    assert r.sort("s") == [b"1", b"3", b"5", b"9", b"10"]
    assert r.sort("s", desc=True, start=0, num=2) == [b"10", b"9"]
    assert r.sort("s", alpha=True) == [b"1", b"10", b"3", b"5", b"9"]
    r.zadd("z", {"30": 1, "4": 2, "100": 3, "2": 0})
    assert r.sort("z") == [b"2", b"4", b"30", b"100"]  # by value, not by score
    # BY nosort: score order; DESC reverses it and LIMIT applies to that order.
    assert r.sort("z", by="nosort") == [b"2", b"30", b"4", b"100"]
    assert r.sort("z", by="nosort", desc=True) == [b"100", b"4", b"30", b"2"]
    assert r.sort("z", by="nosort", start=1, num=2) == [b"30", b"4"]
    assert r.sort("z", by="nosort", desc=True, start=1, num=2) == [b"4", b"30"]
    assert r.sort("z", by="nosort", start=4, num=2) == []
    # A set has no order of its own: BY nosort with STORE sorts it (ALPHA), as Redis does.
    assert r.sort("s", by="nosort", store="dst") == 5
    assert r.lrange("dst", 0, -1) == [b"1", b"10", b"3", b"5", b"9"]
    assert sorted(r.sort("s", by="nosort")) == sorted([b"1", b"3", b"5", b"9", b"10"])


def test_list_nosort_keeps_order(r):
    r.rpush("l", "c", "a", "b", "d")
    assert r.sort("l", by="nosort") == [b"c", b"a", b"b", b"d"]
    assert r.sort("l", by="nosort", desc=True) == [b"d", b"b", b"a", b"c"]
    assert r.sort("l", by="nosort", start=1, num=2) == [b"a", b"b"]
    assert r.sort("l", by="nosort", desc=True, start=1, num=2) == [b"b", b"a"]
    assert r.sort("l", by="nosort", get=["#", "nostar"]) == \
        [b"c", None, b"a", None, b"b", None, b"d", None]


def test_by_and_get_patterns_on_one_shard(r):
    # Every key shares the {t} hashtag: one shard whatever --threads is.
    r.rpush("{t}l", "a", "b", "c", "d")
    r.mset({"{t}w_a": "3", "{t}w_b": "1", "{t}w_c": "2"})  # d has no weight: 0
    r.hset("{t}h_a", mapping={"f": "z", "n": "1"})
    r.hset("{t}h_b", mapping={"f": "x", "n": "3"})
    r.hset("{t}h_c", mapping={"f": "y", "n": "2"})
    assert r.sort("{t}l", by="{t}w_*") == [b"d", b"b", b"c", b"a"]
    assert r.sort("{t}l", by="{t}w_*", desc=True, start=0, num=2) == [b"a", b"c"]
    assert r.sort("{t}l", by="{t}h_*->n") == [b"d", b"a", b"c", b"b"]
    # ALPHA BY: a missing weight sorts first.
    assert r.sort("{t}l", by="{t}h_*->f", alpha=True) == [b"d", b"b", b"c", b"a"]
    assert r.sort("{t}l", by="{t}w_*", get=["#", "{t}w_*", "{t}h_*->f", "{t}h_*->"]) == [
        b"d", None, None, None, b"b", b"1", b"x", None, b"c", b"2", b"y", None,
        b"a", b"3", b"z", None]
    # A pattern naming a key of the wrong type gives nil; a non-numeric weight is an error.
    r.set("{t}h_d", "str")
    r.rpush("{t}w_d", "list")
    assert r.sort("{t}l", by="{t}w_*", get="{t}h_*->f") == [None, b"x", b"y", b"z"]
    r.set("{t}w_d", "oops")
    with pytest.raises(redis.ResponseError, match=SCORE_ERR):
        r.sort("{t}l", by="{t}w_*")
    # STORE with GET: missing values are stored as empty strings.
    assert r.sort("{t}l", by="{t}h_*->n", get="{t}h_*->f", store="{t}dst") == 4
    assert r.lrange("{t}dst", 0, -1) == [b"", b"z", b"y", b"x"]


def seed_cross_shard(c):
    """A list, a set and a sorted set whose BY/GET keys have no hashtag: with --threads 2 and 4
    they spread over every shard. Sets and sorted sets load in hash order in Redis, so they are
    sorted by unique weights (u_*) only: ties would keep different orders."""
    elems = [str(i) for i in range(60)]
    c.rpush("{src}l", *elems)
    c.sadd("{src}s", *elems)
    c.zadd("{src}z", {e: (i * 7) % 13 for i, e in enumerate(elems)})
    for i, e in enumerate(elems):
        if i % 11 != 0:  # some weights missing
            c.set(f"w_{e}", str((i * 37) % 17))
        c.set(f"u_{e}", str((i * 7) % 61))
        c.hset(f"h_{e}", mapping={"n": str((i * 5) % 9), "f": f"v{(i * 3) % 7}"})
        if i % 5 == 0:
            c.set(f"o_{e}", f"obj{e}")
    c.set("{x}str", "x")


CROSS_SHARD_SORTS = [
    ["SORT", "{src}l", "BY", "w_*"],
    ["SORT", "{src}l", "BY", "w_*", "DESC", "LIMIT", "3", "10"],
    ["SORT", "{src}l", "BY", "h_*->n", "GET", "#", "GET", "o_*", "GET", "h_*->f"],
    ["SORT", "{src}l", "BY", "h_*->f", "ALPHA", "GET", "w_*"],
    ["SORT", "{src}l", "BY", "nosort", "GET", "o_*", "GET", "#", "LIMIT", "5", "20"],
    ["SORT", "{src}l", "GET", "w_*", "LIMIT", "0", "7"],
    ["SORT", "{src}s", "BY", "u_*", "GET", "#", "GET", "w_*"],
    ["SORT", "{src}z", "BY", "nosort", "GET", "h_*->n", "DESC", "LIMIT", "2", "9"],
    ["SORT", "{src}z", "BY", "u_*", "ALPHA", "DESC"],
    ["SORT_RO", "{src}l", "BY", "w_*", "GET", "h_*->f"],
    ["SORT_RO", "{src}s", "BY", "u_*", "GET", "#", "GET", "h_*->n", "LIMIT", "10", "5"],
    ["SORT", "{x}str", "BY", "w_*"],
    ["SORT", "{src}missing", "BY", "w_*", "GET", "o_*"],
]


def reply_or_error(c, cmd):
    try:
        return c.execute_command(*cmd)
    except redis.ResponseError as e:
        return ("error", str(e))


def test_patterns_on_every_shard_match_redis(r, redis_server):
    ref = redis_server.client()
    ref.flushall()
    seed_cross_shard(r)
    seed_cross_shard(ref)
    for cmd in CROSS_SHARD_SORTS:
        assert reply_or_error(r, cmd) == reply_or_error(ref, cmd), cmd
    # STORE to a destination on yet another shard, and to the source's own shard.
    for dst in ("{d1}dst", "{d2}dst", "{src}dst"):
        cmd = ["SORT", "{src}l", "BY", "h_*->n", "GET", "o_*", "GET", "#", "STORE", dst]
        assert reply_or_error(r, cmd) == reply_or_error(ref, cmd)
        assert r.lrange(dst, 0, -1) == ref.lrange(dst, 0, -1)
    # A weight that is not a number, on another shard: the error, and nothing stored.
    for c in (r, ref):
        c.set("w_7", "oops")
    for cmd in (["SORT", "{src}l", "BY", "w_*"],
                ["SORT", "{src}l", "BY", "w_*", "STORE", "{d3}dst"]):
        assert reply_or_error(r, cmd) == reply_or_error(ref, cmd)
    assert r.exists("{d3}dst") == ref.exists("{d3}dst") == 0
    # Inside MULTI/EXEC and a script, where the enclosing transaction holds every shard.
    for c in (r, ref):
        c.set("w_7", "5")
    def in_multi(c):
        p = c.pipeline(transaction=True)
        p.set("w_1", "1000")
        p.sort("{src}l", by="w_*", start=0, num=5, desc=True, get=["#", "o_*"])
        p.execute_command("SORT_RO", "{src}z", "BY", "h_*->n", "GET", "h_*->f")
        p.sort("{src}s", by="u_*", get="w_*", store="{d4}dst")
        p.lrange("{d4}dst", 0, -1)
        p.execute_command("SORT_RO", "{src}l", "DESC", "LIMIT", "0", "3", "GET", "#")
        return p.execute()
    assert in_multi(r) == in_multi(ref)
    # A pipeline mixing SORT_RO with and without key patterns keeps its order.
    def pipelined(c):
        p = c.pipeline(transaction=False)
        p.execute_command("SORT_RO", "{src}l", "BY", "w_*", "LIMIT", "0", "4")
        p.rpush("{src}l", "100")
        p.execute_command("SORT_RO", "{src}l", "DESC", "LIMIT", "0", "2")
        p.set("w_100", "-1")
        p.execute_command("SORT_RO", "{src}l", "BY", "w_*", "LIMIT", "0", "2", "GET", "w_*")
        return p.execute()
    assert pipelined(r) == pipelined(ref)
    script = "return redis.call('SORT', KEYS[1], 'BY', 'w_*', 'GET', '#', 'GET', 'h_*->f')"
    assert r.eval(script, 1, "{src}l") == ref.eval(script, 1, "{src}l")
    script = "return redis.call('SORT_RO', KEYS[1], 'ALPHA', 'LIMIT', 0, 5)"
    assert r.eval(script, 1, "{src}l") == ref.eval(script, 1, "{src}l")
    ref.close()


def test_constant_patterns_name_no_key(r):
    r.rpush("src", *[str(i) for i in range(20)])
    assert r.sort("src", by="nosort", get=["#", "nostar"], start=0, num=1) == [b"0", None]
    assert r.sort("src", by="w_*", start=0, num=2) == [b"0", b"1"]  # no weights: all 0


def test_pattern_sort_is_atomic(server, r):
    """Writers move weight keys on other shards in pairs (MULTI/EXEC keeps their sum 0), while
    SORT BY/GET reads them: every result must show whole pairs."""
    import threading
    pairs = 8
    elems = [f"a{i}" for i in range(pairs)] + [f"b{i}" for i in range(pairs)]
    r.rpush("{src}l", *elems)
    for i in range(pairs):
        r.set(f"wa{i}", 0)
        r.set(f"wb{i}", 0)
    stop = threading.Event()
    errors = []

    def writer(seed):
        c = server.client()
        n = seed
        try:
            while not stop.is_set():
                i = n % pairs
                n += 1
                p = c.pipeline(transaction=True)
                p.incrby(f"wa{i}", 1)
                p.decrby(f"wb{i}", 1)
                p.execute()
        except Exception as e:  # surfaced below
            errors.append(e)
        finally:
            c.close()

    threads = [threading.Thread(target=writer, args=(k,)) for k in range(3)]
    for t in threads:
        t.start()
    try:
        for _ in range(150):
            got = r.sort("{src}l", by="w*", get=["#", "w*"])
            weights = {got[k].decode(): int(got[k + 1]) for k in range(0, len(got), 2)}
            for i in range(pairs):
                assert weights[f"a{i}"] + weights[f"b{i}"] == 0, weights
    finally:
        stop.set()
        for t in threads:
            t.join()
    assert not errors


def test_store_across_shards(r):
    # Different hashtags: with --threads 2/4 these are (usually) on different shards.
    r.rpush("{a}src", "3", "1", "2")
    r.set("{b}dst", "old", ex=100)
    assert r.sort("{a}src", store="{b}dst") == 3
    assert r.type("{b}dst") == b"list"
    assert r.lrange("{b}dst", 0, -1) == [b"1", b"2", b"3"]
    assert r.ttl("{b}dst") == -1  # replaced, TTL gone
    assert r.sort("{a}src", desc=True, start=0, num=2, store="{c}dst") == 2
    assert r.lrange("{c}dst", 0, -1) == [b"3", b"2"]
    # An empty result deletes the destination.
    assert r.sort("{a}src", start=10, num=1, store="{b}dst") == 0
    assert r.exists("{b}dst") == 0
    assert r.sort("{z}missing", store="{c}dst") == 0
    assert r.exists("{c}dst") == 0
    # The source as its own destination.
    assert r.sort("{a}src", store="{a}src") == 3
    assert r.lrange("{a}src", 0, -1) == [b"1", b"2", b"3"]
    # Inside MULTI/EXEC.
    p = r.pipeline(transaction=True)
    p.rpush("{d}src", "b", "a")
    p.sort("{d}src", alpha=True, store="{e}dst")
    p.lrange("{e}dst", 0, -1)
    assert p.execute() == [2, 2, [b"a", b"b"]]


def test_errors(r):
    r.set("str", "x")
    r.hset("h", "f", "v")
    for key in ("str", "h"):
        with pytest.raises(redis.ResponseError, match="WRONGTYPE"):
            r.sort(key)
    with pytest.raises(redis.ResponseError, match="WRONGTYPE"):
        r.sort("str", store="dst")
    r.rpush("l", "1")
    cases = [
        (["SORT", "l", "LIMIT", "1"], "syntax error"),
        (["SORT", "l", "BY"], "syntax error"),
        (["SORT", "l", "GET"], "syntax error"),
        (["SORT", "l", "STORE"], "syntax error"),
        (["SORT", "l", "FOO"], "syntax error"),
        (["SORT_RO", "l", "STORE", "dst"], "syntax error"),
        (["SORT", "l", "LIMIT", "x", "1"], "value is not an integer or out of range"),
        (["SORT", "l", "LIMIT", "0", "1.5"], "value is not an integer or out of range"),
        (["SORT"], "wrong number of arguments for 'sort' command"),
        (["SORT_RO"], "wrong number of arguments for 'sort_ro' command"),
        # Syntax errors come before the type check.
        (["SORT", "str", "FOO"], "syntax error"),
    ]
    for cmd, err in cases:
        with pytest.raises(redis.ResponseError, match=err):
            r.execute_command(*cmd)
    assert r.exists("dst") == 0
    # The last STORE wins; STORE over the wrong type replaces it.
    assert r.execute_command("SORT", "l", "STORE", "x", "STORE", "str") == 1
    assert r.exists("x") == 0 and r.lrange("str", 0, -1) == [b"1"]


def test_command_info(raw):
    sort, sort_ro = raw.call("COMMAND", "INFO", "sort", "sort_ro")
    assert sort[1] == -2 and sort_ro[1] == -2
    assert b"write" in sort[2] and b"denyoom" in sort[2] and b"readonly" not in sort[2]
    assert b"readonly" in sort_ro[2] and b"write" not in sort_ro[2]
    assert sort[3:6] == [1, 1, 1] and sort_ro[3:6] == [1, 1, 1]
