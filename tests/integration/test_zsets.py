"""Sorted-set commands: RESP3 reply shapes, cross-shard set operations, and a large set checked
against a Python model (ranks, ranges, scans). Run also against redis-server with
SHARDIS_TEST_TARGET=redis to check the expectations themselves."""

import bisect
import random
import threading

import pytest
import redis

WRONGTYPE = b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"


def resp3(raw):
    raw.call("HELLO", "3")
    return raw


def keys_on_many_shards(prefix, n):
    """Keys without a hashtag: they spread over every shard of a multi-threaded server."""
    return [f"{prefix}:{i}" for i in range(n)]


# ---------------------------------------------------------------------------------------------
# RESP3 shapes (and their RESP2 forms), byte for byte as Redis 7.0 sends them.
# ---------------------------------------------------------------------------------------------


def test_resp3_scores_are_doubles(raw):
    resp3(raw)
    assert raw.call_raw("ZADD", "z", "1.5", "a", "2", "b", "inf", "c") == b":3\r\n"
    assert raw.call_raw("ZSCORE", "z", "a") == b",1.5\r\n"
    assert raw.call_raw("ZSCORE", "z", "c") == b",inf\r\n"
    assert raw.call_raw("ZSCORE", "z", "nope") == b"_\r\n"
    assert raw.call_raw("ZSCORE", "missing", "a") == b"_\r\n"
    assert raw.call_raw("ZMSCORE", "z", "a", "x", "b") == b"*3\r\n,1.5\r\n_\r\n,2\r\n"
    # Scores whose text Redis 7.0 and 7.2 agree on (test_double_replies.py has those they don't).
    assert raw.call_raw("ZINCRBY", "z", "0.25", "b") == b",2.25\r\n"
    assert raw.call_raw("ZADD", "z", "NX", "INCR", "5", "a") == b"_\r\n"
    assert raw.call_raw("ZRANK", "z", "nope") == b"_\r\n"
    assert raw.call_raw("ZRANK", "z", "b") == b":1\r\n"


def test_resp2_scores_are_bulk_strings(raw):
    raw.call("ZADD", "z", "0.5", "a", "-inf", "b")
    assert raw.call_raw("ZSCORE", "z", "a") == b"$3\r\n0.5\r\n"
    assert raw.call_raw("ZSCORE", "z", "b") == b"$4\r\n-inf\r\n"
    assert raw.call_raw("ZSCORE", "z", "x") == b"$-1\r\n"
    assert raw.call_raw("ZRANGE", "z", "0", "-1", "WITHSCORES") == (
        b"*4\r\n$1\r\nb\r\n$4\r\n-inf\r\n$1\r\na\r\n$3\r\n0.5\r\n")


def test_resp3_withscores_is_array_of_pairs(raw):
    resp3(raw)
    raw.call("ZADD", "z", "1", "a", "2", "b", "3", "c")
    pairs = b"*3\r\n*2\r\n$1\r\na\r\n,1\r\n*2\r\n$1\r\nb\r\n,2\r\n*2\r\n$1\r\nc\r\n,3\r\n"
    assert raw.call_raw("ZRANGE", "z", "0", "-1", "WITHSCORES") == pairs
    assert raw.call_raw("ZRANGEBYSCORE", "z", "-inf", "+inf", "WITHSCORES") == pairs
    assert raw.call_raw("ZRANGE", "z", "(1", "3", "BYSCORE", "WITHSCORES", "LIMIT", "0", "1") == (
        b"*1\r\n*2\r\n$1\r\nb\r\n,2\r\n")
    assert raw.call_raw("ZREVRANGE", "z", "0", "0", "WITHSCORES") == (
        b"*1\r\n*2\r\n$1\r\nc\r\n,3\r\n")
    assert raw.call_raw("ZUNION", "1", "z", "WITHSCORES") == pairs
    assert raw.call_raw("ZRANGE", "z", "0", "-1") == b"*3\r\n$1\r\na\r\n$1\r\nb\r\n$1\r\nc\r\n"
    assert raw.call_raw("ZRANGE", "missing", "0", "-1", "WITHSCORES") == b"*0\r\n"
    # ZSCAN stays a flat array of bulk strings.
    assert raw.call_raw("ZSCAN", "z", "0") == (
        b"*2\r\n$1\r\n0\r\n*6\r\n"
        b"$1\r\na\r\n$1\r\n1\r\n$1\r\nb\r\n$1\r\n2\r\n$1\r\nc\r\n$1\r\n3\r\n")
    assert raw.call_raw("ZSCAN", "missing", "0") == b"*2\r\n$1\r\n0\r\n*0\r\n"


def test_pop_shapes(raw):
    resp3(raw)
    raw.call("ZADD", "z", "1", "a", "2", "b", "3", "c", "4", "d")
    # Without a count: a flat [member, score] in RESP3 too.
    assert raw.call_raw("ZPOPMIN", "z") == b"*2\r\n$1\r\na\r\n,1\r\n"
    # With a count: pairs.
    assert raw.call_raw("ZPOPMAX", "z", "2") == (
        b"*2\r\n*2\r\n$1\r\nd\r\n,4\r\n*2\r\n$1\r\nc\r\n,3\r\n")
    assert raw.call_raw("ZPOPMIN", "z", "0") == b"*0\r\n"
    assert raw.call_raw("ZMPOP", "2", "nokey", "z", "MIN", "COUNT", "5") == (
        b"*2\r\n$1\r\nz\r\n*1\r\n*2\r\n$1\r\nb\r\n,2\r\n")
    assert raw.call_raw("EXISTS", "z") == b":0\r\n"  # emptied: deleted
    assert raw.call_raw("ZPOPMIN", "z") == b"*0\r\n"
    assert raw.call_raw("ZMPOP", "1", "z", "MAX") == b"_\r\n"
    raw.call("HELLO", "2")
    raw.call("ZADD", "z", "1", "a", "2", "b")
    assert raw.call_raw("ZPOPMIN", "z", "5") == (
        b"*4\r\n$1\r\na\r\n$1\r\n1\r\n$1\r\nb\r\n$1\r\n2\r\n")
    assert raw.call_raw("ZMPOP", "1", "z", "MAX") == b"*-1\r\n"
    raw.call("ZADD", "z", "1", "a")
    assert raw.call_raw("ZMPOP", "1", "z", "MAX") == (
        b"*2\r\n$1\r\nz\r\n*1\r\n*2\r\n$1\r\na\r\n$1\r\n1\r\n")


def test_randmember_shapes(raw):
    resp3(raw)
    raw.call("ZADD", "z", "1", "a", "2", "b", "3", "c")
    reply = raw.call("ZRANDMEMBER", "z", "-5", "WITHSCORES")
    assert len(reply) == 5
    scores = {b"a": 1.0, b"b": 2.0, b"c": 3.0}
    for pair in reply:
        assert isinstance(pair, list) and len(pair) == 2 and scores[pair[0]] == pair[1]
    # A count of at least the size: the whole set, from the highest score (Redis walks it from
    # the tail).
    assert raw.call_raw("ZRANDMEMBER", "z", "10", "WITHSCORES") == (
        b"*3\r\n*2\r\n$1\r\nc\r\n,3\r\n*2\r\n$1\r\nb\r\n,2\r\n*2\r\n$1\r\na\r\n,1\r\n")
    distinct = raw.call("ZRANDMEMBER", "z", "2")
    assert len(distinct) == 2 and len(set(distinct)) == 2 and set(distinct) <= set(scores)
    assert raw.call("ZRANDMEMBER", "z") in scores
    assert raw.call_raw("ZRANDMEMBER", "missing") == b"_\r\n"
    assert raw.call_raw("ZRANDMEMBER", "missing", "3") == b"*0\r\n"


# ---------------------------------------------------------------------------------------------
# Errors and edge cases.
# ---------------------------------------------------------------------------------------------


def test_zadd_errors_and_flags(raw):
    assert raw.call_raw("ZADD", "z", "XX", "NX", "1", "a") == (
        b"-ERR XX and NX options at the same time are not compatible\r\n")
    assert raw.call_raw("ZADD", "z", "GT", "LT", "1", "a") == (
        b"-ERR GT, LT, and/or NX options at the same time are not compatible\r\n")
    assert raw.call_raw("ZADD", "z", "INCR", "1", "a", "2", "b") == (
        b"-ERR INCR option supports a single increment-element pair\r\n")
    assert raw.call_raw("ZADD", "z", "nan", "a") == b"-ERR value is not a valid float\r\n"
    assert raw.call_raw("ZADD", "z", "1", "a", "2") == b"-ERR syntax error\r\n"
    assert raw.call_raw("ZADD", "z", "XX", "1", "a") == b":0\r\n"
    assert raw.call_raw("EXISTS", "z") == b":0\r\n"  # XX on a missing key creates nothing
    assert raw.call_raw("ZADD", "z", "inf", "a") == b":1\r\n"
    assert raw.call_raw("ZADD", "z", "INCR", "-inf", "a") == (
        b"-ERR resulting score is not a number (NaN)\r\n")
    assert raw.call_raw("ZADD", "z", "CH", "GT", "5", "a", "1", "b") == b":1\r\n"
    assert raw.call_raw("ZADD", "z", "CH", "LT", "0", "b", "2", "c") == b":2\r\n"
    assert raw.call_raw("ZRANGE", "z", "0", "-1", "WITHSCORES") == (
        b"*6\r\n$1\r\nb\r\n$1\r\n0\r\n$1\r\nc\r\n$1\r\n2\r\n$1\r\na\r\n$3\r\ninf\r\n")
    raw.call("SET", "s", "x")
    assert raw.call_raw("ZADD", "s", "1", "a") == WRONGTYPE
    assert raw.call_raw("ZRANGE", "s", "0", "-1") == WRONGTYPE
    assert raw.call_raw("ZUNIONSTORE", "d", "2", "z", "s") == WRONGTYPE
    # ZRANK ... WITHSCORE (Redis 7.2): test_compat72.py.


def test_range_errors(raw):
    raw.call("ZADD", "z", "1", "a")
    assert raw.call_raw("ZRANGEBYSCORE", "z", "x", "1") == b"-ERR min or max is not a float\r\n"
    assert raw.call_raw("ZRANGEBYLEX", "z", "a", "+") == (
        b"-ERR min or max not valid string range item\r\n")
    assert raw.call_raw("ZRANGE", "z", "0", "1", "LIMIT", "0", "1") == (
        b"-ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX"
        b"\r\n")
    assert raw.call_raw("ZRANGE", "z", "-", "+", "BYLEX", "WITHSCORES") == (
        b"-ERR syntax error, WITHSCORES not supported in combination with BYLEX\r\n")
    assert raw.call_raw("ZUNION", "0", "z") == (
        b"-ERR at least 1 input key is needed for 'zunion' command\r\n")
    assert raw.call_raw("ZINTERSTORE", "d", "1", "z", "WEIGHTS", "x") == (
        b"-ERR weight value is not a float\r\n")
    assert raw.call_raw("ZINTERCARD", "1", "z", "LIMIT", "-1") == (
        b"-ERR LIMIT can't be negative\r\n")
    assert raw.call_raw("ZPOPMIN", "z", "-1") == b"-ERR value is out of range, must be positive\r\n"
    assert raw.call_raw("ZMPOP", "0", "z", "MIN") == b"-ERR numkeys should be greater than 0\r\n"
    assert raw.call_raw("ZSCAN", "z", "x") == b"-ERR invalid cursor\r\n"


def test_lex_ranges_and_inf_scores(r):
    r.zadd("l", {m: 0 for m in ["a", "b", "c", "d", "e", "ab", ""]})
    assert r.zrangebylex("l", "-", "+") == [b"", b"a", b"ab", b"b", b"c", b"d", b"e"]
    assert r.zrangebylex("l", "[a", "(c") == [b"a", b"ab", b"b"]
    assert r.zrevrangebylex("l", "(c", "[a") == [b"b", b"ab", b"a"]
    assert r.zrangebylex("l", "(a", "+", start=1, num=2) == [b"b", b"c"]
    assert r.zlexcount("l", "[b", "[d") == 3
    assert r.zremrangebylex("l", "[", "(b") == 3
    assert r.zrange("l", 0, -1) == [b"b", b"c", b"d", b"e"]
    r.zadd("i", {"lo": float("-inf"), "mid": 0, "hi": float("inf")})
    assert r.zrangebyscore("i", "-inf", "+inf") == [b"lo", b"mid", b"hi"]
    assert r.zrangebyscore("i", "(-inf", "(+inf") == [b"mid"]
    assert r.zcount("i", "-inf", "-inf") == 1
    assert r.zincrby("i", 1, "hi") == float("inf")


# ---------------------------------------------------------------------------------------------
# Cross-shard set operations (the `server` fixture runs with --threads 1, 2 and 4).
# ---------------------------------------------------------------------------------------------


def model_union(sets, weights, agg):
    out = {}
    for s, w in sorted(zip(sets, weights), key=lambda p: len(p[0])):
        for m, sc in s.items():
            v = sc * w
            if m not in out:
                out[m] = v
            elif agg == "SUM":
                out[m] += v
            elif agg == "MIN":
                out[m] = min(out[m], v)
            else:
                out[m] = max(out[m], v)
    return out


def model_inter(sets, weights, agg):
    union = model_union(sets, weights, agg)
    return {m: sc for m, sc in union.items() if all(m in s for s in sets)}


def as_sorted(d):
    return [(m.encode(), float(s)) for m, s in sorted(d.items(), key=lambda p: (p[1], p[0]))]


@pytest.mark.parametrize("agg", ["SUM", "MIN", "MAX"])
def test_cross_shard_unionstore_interstore(r, agg):
    rng = random.Random(7)
    srcs = keys_on_many_shards("src", 5)
    sets = []
    for k in srcs:
        d = {f"m{rng.randint(0, 40)}": rng.randint(-50, 50) for _ in range(rng.randint(10, 30))}
        r.zadd(k, d)
        sets.append(d)
    weights = [1, 2, -1, 3, 0.5]
    for dst in ("dst:a", "dst:b", "dst:c", srcs[2]):  # destinations on several shards
        expect_u = as_sorted(model_union(sets, weights, agg))
        assert r.zunion(dict(zip(srcs, weights)), aggregate=agg, withscores=True) == expect_u
        assert r.zunionstore(dst, dict(zip(srcs, weights)), aggregate=agg) == len(expect_u)
        assert r.zrange(dst, 0, -1, withscores=True) == expect_u
        if dst == srcs[2]:
            sets[2] = dict((m.decode(), s) for m, s in expect_u)
    pair = srcs[:2]
    expect_i = as_sorted(model_inter([sets[0], sets[1]], [1, 1], agg))
    assert r.zinterstore("inter", pair, aggregate=agg) == len(expect_i)
    assert r.zrange("inter", 0, -1, withscores=True) == expect_i
    assert r.zintercard(2, pair) == len(expect_i)
    if expect_i:
        assert r.zintercard(2, pair, limit=1) == 1
    diff = {m: s for m, s in sets[0].items() if m not in sets[1]}
    assert r.zdiffstore("diff", pair) == len(diff)
    assert r.zrange("diff", 0, -1, withscores=True) == as_sorted(diff)


def test_store_replaces_and_deletes_destination(r):
    r.set("dst", "string", ex=100)
    r.zadd("a", {"x": 1, "y": 2})
    assert r.zunionstore("dst", ["a"]) == 2
    assert r.type("dst") == b"zset" and r.ttl("dst") == -1
    assert r.zinterstore("dst", ["a", "missing"]) == 0
    assert r.exists("dst") == 0  # an empty result deletes the destination
    assert r.zrangestore("dst", "a", 1, 1) == 1
    assert r.zrange("dst", 0, -1, withscores=True) == [(b"y", 2.0)]
    assert r.zrangestore("dst", "missing", 0, -1) == 0
    assert r.exists("dst") == 0


def test_zmpop_takes_the_first_existing_key_across_shards(r):
    keys = keys_on_many_shards("mp", 6)
    r.zadd(keys[3], {"a": 1, "b": 2})
    r.zadd(keys[5], {"c": 3})
    assert r.zmpop(6, keys, max=True) == [keys[3].encode(), [[b"b", b"2"]]]
    r.set(keys[1], "x")
    with pytest.raises(redis.ResponseError, match="WRONGTYPE"):
        r.zmpop(6, keys, min=True)
    assert r.zscore(keys[3], "a") == 1.0


def test_unionstore_is_atomic_across_shards(server, r):
    """Writers move a token between two sets on different shards; the union always holds it
    exactly once."""
    a, b = "atom:a", "atom:b"
    r.zadd(a, {"token": 1})
    stop = threading.Event()
    errors = []

    def mover():
        c = server.client()
        try:
            for i in range(400):
                src, dst = (a, b) if i % 2 == 0 else (b, a)
                p = c.pipeline(transaction=True)
                p.zrem(src, "token")
                p.zadd(dst, {"token": i})
                p.execute()
        except Exception as e:  # noqa: BLE001
            errors.append(e)
        finally:
            stop.set()

    t = threading.Thread(target=mover)
    t.start()
    c = server.client()
    checks = 0
    while not stop.is_set() or checks == 0:
        assert c.zunionstore("atom:u", [a, b]) == 1
        assert c.zcard("atom:u") == 1
        checks += 1
    t.join(30)
    assert not errors, errors


# ---------------------------------------------------------------------------------------------
# A large sorted set (skiplist encoding) against a Python model.
# ---------------------------------------------------------------------------------------------


def test_ten_thousand_members_against_model(r):
    rng = random.Random(42)
    model = {}
    items = {}
    for i in range(10000):
        m = f"member:{rng.randint(0, 10**6)}"
        items[m] = rng.randint(0, 2000)  # many equal scores: ties broken by member bytes
    pipe = r.pipeline(transaction=False)
    keys = list(items)
    for i in range(0, len(keys), 500):
        pipe.zadd("big", {k: items[k] for k in keys[i:i + 500]})
    pipe.execute()
    model.update(items)
    order = sorted(model.items(), key=lambda p: (p[1], p[0].encode()))
    names = [m.encode() for m, _ in order]
    scores = [s for _, s in order]
    n = len(order)
    assert r.zcard("big") == n
    pipe = r.pipeline(transaction=False)
    picks = [rng.randrange(n) for _ in range(300)]
    for i in picks:
        pipe.zrank("big", order[i][0])
        pipe.zrevrank("big", order[i][0])
    replies = pipe.execute()
    for j, i in enumerate(picks):
        assert replies[2 * j] == i
        assert replies[2 * j + 1] == n - 1 - i
    for _ in range(50):
        a = rng.randrange(n)
        b = min(n - 1, a + rng.randrange(200))
        assert r.zrange("big", a, b) == names[a:b + 1]
        assert r.zrevrange("big", a, b) == names[::-1][a:b + 1]
        lo = rng.randint(0, 2000)
        hi = lo + rng.randint(0, 30)
        lo_i = bisect.bisect_left(scores, lo)
        hi_i = bisect.bisect_right(scores, hi)
        assert r.zcount("big", lo, hi) == hi_i - lo_i
        assert r.zrangebyscore("big", lo, hi, start=2, num=5) == names[lo_i:hi_i][2:7]
        assert r.zrevrangebyscore("big", hi, f"({lo}") == names[bisect.bisect_right(scores, lo):
                                                             hi_i][::-1]
    # A full scan with small counts sees every member once at least.
    seen = set()
    cursor = 0
    while True:
        cursor, page = r.zscan("big", cursor, count=50)
        seen.update(m for m, _ in page)
        if cursor == 0:
            break
    assert seen == set(names)
    # Removing ranks keeps the order of what is left.
    assert r.zremrangebyrank("big", 100, 4099) == 4000
    rest = names[:100] + names[4100:]
    assert r.zrange("big", 0, -1) == rest
    assert r.zpopmin("big", 3) == [(m, float(s)) for m, s in
                                   zip(rest[:3], [model[x.decode()] for x in rest[:3]])]
    assert r.zrank("big", rest[3]) == 0


def test_lex_on_large_set(r):
    members = sorted({f"w{random.Random(i).randint(0, 10**5):06d}" for i in range(3000)})
    r.zadd("lex", {m: 0 for m in members})
    enc = [m.encode() for m in members]
    lo, hi = members[500], members[900]
    assert r.zrangebylex("lex", f"[{lo}", f"({hi}") == enc[500:900]
    assert r.zlexcount("lex", f"({lo}", f"[{hi}") == 400
    assert r.zrevrangebylex("lex", f"[{hi}", f"[{lo}", start=10, num=5) == enc[500:901][::-1][10:15]
    assert r.zremrangebylex("lex", "-", f"({lo}") == 500
    assert r.zcard("lex") == len(members) - 500


# ---------------------------------------------------------------------------------------------
# Transactions and WATCH.
# ---------------------------------------------------------------------------------------------


def test_store_inside_multi_exec(r):
    r.zadd("ma", {"x": 1})
    p = r.pipeline(transaction=True)
    p.zadd("mb", {"y": 2})
    p.zunionstore("mdst", ["ma", "mb"])
    p.zrangestore("mdst2", "mdst", 0, 0)
    p.zmpop(2, ["nokey", "mdst"], max=True)
    assert p.execute() == [1, 2, 1, [b"mdst", [[b"y", b"2"]]]]
    assert r.zrange("mdst", 0, -1) == [b"x"]
    assert r.zrange("mdst2", 0, -1) == [b"x"]


def test_store_destination_fails_watch(server, r):
    r.zadd("wa", {"x": 1})
    c = server.client()
    p = c.pipeline(transaction=True)
    p.watch("wdst")
    p.multi()
    p.get("other")
    r.zunionstore("wdst", ["wa"])  # another client writes the watched key
    with pytest.raises(redis.WatchError):
        p.execute()
    # A ZPOPMIN that empties a watched key fails the EXEC too.
    p = c.pipeline(transaction=True)
    p.watch("wa")
    p.multi()
    p.get("other")
    r.zpopmin("wa")
    with pytest.raises(redis.WatchError):
        p.execute()


# ---------------------------------------------------------------------------------------------
# Large sets (skiplist encoding in Redis too) compared with redis-server reply for reply.
# ---------------------------------------------------------------------------------------------


def large_set_commands(rng, count):
    big = ["big:1", "big:2"]  # on different shards in general
    members = [f"m{i}" for i in range(400)]
    ranks = ["0", "1", "-1", "10", "-10", "150", "-150", "399", "1000"]
    scores = ["-inf", "+inf", "(0", "0", "5", "(5", "-20", "(30", "100"]
    lex = ["-", "+", "[m1", "(m1", "[m25", "(m3", "[m399", "[n"]
    cmds = []
    for key in big:
        for i in range(0, 400, 100):
            pairs = []
            for m in members[i:i + 100]:
                pairs += [str(rng.randint(-50, 50)), m]
            cmds.append(["ZADD", key, *pairs])
        cmds.append(["ZADD", "lex:" + key, *[x for m in members for x in ("0", m)]])
    for _ in range(count):
        key = rng.choice(big)
        kind = rng.randrange(14)
        if kind == 0:
            cmds.append(["ZADD", key, rng.choice(["", "GT", "LT", "CH", "NX", "XX"]) or "CH",
                         str(rng.randint(-60, 60)), rng.choice(members)])
        elif kind == 1:
            cmds.append(["ZINCRBY", key, str(rng.randint(-5, 5)), rng.choice(members)])
        elif kind == 2:
            cmds.append([rng.choice(["ZRANK", "ZREVRANK", "ZSCORE"]), key, rng.choice(members)])
        elif kind == 3:
            cmds.append(["ZRANGE", key, rng.choice(ranks), rng.choice(ranks),
                         *rng.choice([[], ["REV"], ["WITHSCORES"], ["REV", "WITHSCORES"]])])
        elif kind == 4:
            cmds.append(["ZRANGE", key, rng.choice(scores), rng.choice(scores), "BYSCORE",
                         *rng.choice([[], ["REV"], ["WITHSCORES"]]),
                         *rng.choice([[], ["LIMIT", "3", "7"], ["LIMIT", "0", "-1"]])])
        elif kind == 5:
            cmds.append(["ZCOUNT", key, rng.choice(scores), rng.choice(scores)])
        elif kind == 6:
            lkey = "lex:" + key
            cmds.append(rng.choice([
                ["ZRANGEBYLEX", lkey, rng.choice(lex), rng.choice(lex), "LIMIT", "2", "20"],
                ["ZREVRANGEBYLEX", lkey, rng.choice(lex), rng.choice(lex)],
                ["ZLEXCOUNT", lkey, rng.choice(lex), rng.choice(lex)],
                ["ZREM", lkey, rng.choice(members)]]))
        elif kind == 7:
            cmds.append([rng.choice(["ZPOPMIN", "ZPOPMAX"]), key, str(rng.randint(1, 3))])
        elif kind == 8:
            cmds.append(["ZREMRANGEBYSCORE", key, str(rng.randint(-50, 50)),
                         str(rng.randint(-50, 50))])
        elif kind == 9:
            cmds.append(["ZREMRANGEBYRANK", key, str(rng.randint(0, 300)),
                         str(rng.randint(0, 303))])
        elif kind == 10:
            cmds.append([rng.choice(["ZUNIONSTORE", "ZINTERSTORE", "ZDIFFSTORE"]), "big:dst", "2",
                         *big])
            cmds.append(["ZRANGE", "big:dst", "0", "-1", "WITHSCORES"])
        elif kind == 11:
            cmds.append([rng.choice(["ZUNION", "ZINTER"]), "2", *big, "WEIGHTS", "2", "-1",
                         "AGGREGATE", rng.choice(["SUM", "MIN", "MAX"]), "WITHSCORES"])
        elif kind == 12:
            cmds.append(["ZRANGESTORE", "big:dst", key, rng.choice(scores), rng.choice(scores),
                         "BYSCORE", "LIMIT", "1", "50"])
        else:
            cmds.append(["ZCARD", key])
    return cmds


def test_large_sets_match_redis(server, r, redis_server):
    rng = random.Random(2024)
    ref, sut = redis_server.raw(timeout=30), server.raw(timeout=30)
    try:
        for conn in (ref, sut):
            conn.call("FLUSHALL")
        for cmd in large_set_commands(rng, 1500):
            a, b = ref.call_raw(*cmd), sut.call_raw(*cmd)
            assert a == b, f"{cmd[:6]}: redis {a[:200]!r} vs {b[:200]!r}"
    finally:
        ref.close()
        sut.close()


def test_differential_stream_in_resp3(server, r, redis_server):
    """The differential generator's sorted-set stream, with both connections on RESP3."""
    from diff_families import zsets
    from test_differential import Generator, run_stream

    seed = 777
    ref, sut = redis_server.raw(timeout=30), server.raw(timeout=30)
    try:
        for conn in (ref, sut):
            conn.call("FLUSHALL")
            conn.call("HELLO", "3")
        gen = Generator(seed, families=[zsets], base_weight=0.05)
        assert run_stream(ref, sut, seed, 3000, gen=gen) == 3000
    finally:
        ref.close()
        sut.close()
