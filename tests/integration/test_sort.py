"""SORT and SORT_RO: numeric and ALPHA order, DESC, LIMIT clamping, BY nosort (natural order,
score order for sorted sets), BY/GET patterns with strings and hash fields on the source's shard,
STORE (also to a key on another shard, as one transaction), the score error, and the one
difference from Redis: patterns that name keys on another shard are refused (the `server`
fixture runs every test with --threads 1, 2 and 4).
"""

import pytest
import redis

SCORE_ERR = "One or more scores can't be converted into double"
CROSS_SHARD_ERR = ("SORT BY/GET patterns must name keys on the same shard as the sorted key "
                   "(use a {hashtag})")


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


@pytest.mark.shardis_only
def test_pattern_on_another_shard_is_refused(server, r):
    elems = [str(i) for i in range(100)]
    r.rpush("src", *elems)
    r.mset({f"w_{e}": str(100 - int(e)) for e in elems})
    if server.threads == 1:
        # One shard: every key is local, as in Redis.
        assert r.sort("src", by="w_*", start=0, num=2) == [b"99", b"98"]
        assert r.sort("src", by="nosort", get="w_*", start=0, num=1) == [b"100"]
        return
    # 100 weight keys over several shards: some are not on src's shard.
    with pytest.raises(redis.ResponseError, match=r"same shard as the sorted key"):
        r.sort("src", by="w_*")
    with pytest.raises(redis.ResponseError, match=r"same shard as the sorted key"):
        r.sort("src", get=["#", "w_*"], store="dst")
    assert r.exists("dst") == 0
    # Constant patterns, "#" and patterns without '*' name no key: always fine.
    assert r.sort("src", by="nosort", get=["#", "nostar"], start=0, num=1) == [b"0", None]


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
