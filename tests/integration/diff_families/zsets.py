"""Sorted-set commands for the differential test (see __init__.py).

Members are few and short, so every sorted set stays in Redis' listpack encoding: its lex-range
and ZSCAN answers are then deterministic (a listpack ZSCAN returns everything with cursor 0).
ZRANDMEMBER is compared on its shape only (see match)."""

MEMBERS = ["a", "b", "c", "d", "m1", "m2", "", "x y", "10", "-1", "A", "\xe9t\xe9"]
SCORES = ["0", "1", "-1", "2.5", "1e3", "-inf", "+inf", "inf", "3.0", "0.1", "-0", "7",
          "-2.5", "1", "2", "abc", "", "nan", "(1", "1e400", "0x10", " 1", "1 ", "5e-324"]
RANGE_SCORES = ["-inf", "+inf", "(1", "1", "(2.5", "0", "5", "(-inf", "abc", "(", "+inf",
                "(0.1", "10", "-1", "2.5", "( 2", "nan", "(nan", "inf", "-0", "(0"]
LEX = ["-", "+", "[a", "(a", "[c", "(m", "[m1", "a", "[", "(", "[x y", "+a", "(b", "[d", "-", "+"]
RANKS = ["0", "1", "-1", "2", "-2", "3", "5", "-5", "100", "-100", "x", "1.5",
         "9223372036854775807", "-9223372036854775808"]
COUNTS = ["1", "2", "3", "0", "-1", "-3", "10", "x", "", "5"]


def choices(g):
    rng = g.rng

    def member():
        return g.pick(MEMBERS)

    def score():
        return g.pick(SCORES) if rng.random() < 0.3 else str(rng.randint(-3, 6))

    def zadd():
        opts = []
        for _ in range(rng.choice((0, 0, 0, 1, 1, 2))):
            opts.append(g.pick(["NX", "XX", "GT", "LT", "CH", "INCR", "ch", "incr"]))
        pairs = []
        for _ in range(rng.choice((1, 1, 2, 3))):
            pairs += [score(), member()]
        if rng.random() < 0.05:
            pairs.pop()
        return ["ZADD", g.key(), *opts, *pairs]

    def limit():
        return (["LIMIT", g.pick(["0", "1", "2", "-1", "5", "x"]),
                 g.pick(["1", "2", "-1", "0", "10", "y"])] if rng.random() < 0.3 else [])

    def zrange():
        kind = rng.choice(("rank", "rank", "score", "lex"))
        if kind == "rank":
            args = [g.pick(RANKS), g.pick(RANKS)]
        elif kind == "score":
            args = [g.pick(RANGE_SCORES), g.pick(RANGE_SCORES), "BYSCORE"]
        else:
            args = [g.pick(LEX), g.pick(LEX), "BYLEX"]
        extra = []
        if rng.random() < 0.4:
            extra.append("REV")
        if rng.random() < 0.4:
            extra.append("WITHSCORES")
        extra += limit()
        if rng.random() < 0.05:
            extra.append(g.pick(["BYSCORE", "BOGUS", "LIMIT"]))
        rng.shuffle(extra)
        return args[:2], args[2:] + extra

    def keys_with_numkeys(lo=1, hi=3):
        keys = g.keys(lo, hi)
        n = len(keys)
        if rng.random() < 0.05:
            n = g.pick([0, -1, n + 1, "x"])
        return [str(n), *keys]

    def setop_options(weights=True, withscores=True):
        opts = []
        if weights and rng.random() < 0.3:
            opts += ["WEIGHTS", *[g.pick(["1", "2", "-1", "0", "0.5", "inf", "x"])
                                  for _ in range(rng.randint(1, 3))]]
        if weights and rng.random() < 0.3:
            opts += ["AGGREGATE", g.pick(["SUM", "MIN", "MAX", "sum", "avg"])]
        if withscores and rng.random() < 0.4:
            opts.append("WITHSCORES")
        return opts

    return [
        (12, zadd),
        (3, lambda: ["ZINCRBY", g.key(), score(), member()]),
        (3, lambda: ["ZSCORE", g.key(), member()]),
        (2, lambda: ["ZMSCORE", g.key(), *[member() for _ in range(rng.randint(1, 3))]]),
        (3, lambda: ["ZCARD", g.key()]),
        (2, lambda: ["ZCOUNT", g.key(), g.pick(RANGE_SCORES), g.pick(RANGE_SCORES)]),
        (2, lambda: ["ZLEXCOUNT", g.key(), g.pick(LEX), g.pick(LEX)]),
        # WITHSCORE is Redis 7.2's (test_compat72.py); 7.0 has no such option.
        (3, lambda: [g.pick(["ZRANK", "ZREVRANK"]), g.key(), member()]),
        (6, lambda: (lambda a, o: ["ZRANGE", g.key(), *a, *o])(*zrange())),
        (2, lambda: (lambda a, o: ["ZRANGESTORE", g.key(), g.key(), *a,
                                   *[x for x in o if x != "WITHSCORES"]])(*zrange())),
        (3, lambda: [g.pick(["ZRANGEBYSCORE", "ZREVRANGEBYSCORE"]), g.key(),
                     g.pick(RANGE_SCORES), g.pick(RANGE_SCORES),
                     *(["WITHSCORES"] if rng.random() < 0.4 else []), *limit()]),
        (3, lambda: [g.pick(["ZRANGEBYLEX", "ZREVRANGEBYLEX"]), g.key(), g.pick(LEX),
                     g.pick(LEX), *limit()]),
        (2, lambda: ["ZREVRANGE", g.key(), g.pick(RANKS), g.pick(RANKS),
                     *(["WITHSCORES"] if rng.random() < 0.5 else [])]),
        (4, lambda: ["ZREM", g.key(), *[member() for _ in range(rng.randint(1, 3))]]),
        (1, lambda: ["ZREMRANGEBYRANK", g.key(), g.pick(RANKS), g.pick(RANKS)]),
        (1, lambda: ["ZREMRANGEBYSCORE", g.key(), g.pick(RANGE_SCORES), g.pick(RANGE_SCORES)]),
        (1, lambda: ["ZREMRANGEBYLEX", g.key(), g.pick(LEX), g.pick(LEX)]),
        (3, lambda: [g.pick(["ZPOPMIN", "ZPOPMAX"]), g.key(),
                     *([g.pick(COUNTS)] if rng.random() < 0.5 else [])]),
        (2, lambda: ["ZMPOP", *keys_with_numkeys(), g.pick(["MIN", "MAX", "min", "LEFT"]),
                     *(["COUNT", g.pick(COUNTS)] if rng.random() < 0.5 else [])]),
        (2, lambda: ["ZRANDMEMBER", g.key(),
                     *([g.pick(COUNTS + ["-20", "100"])] if rng.random() < 0.7 else []),
                     *(["WITHSCORES"] if rng.random() < 0.3 else [])]),
        (3, lambda: [g.pick(["ZUNION", "ZINTER"]), *keys_with_numkeys(), *setop_options()]),
        (1, lambda: ["ZDIFF", *keys_with_numkeys(), *setop_options(weights=False)]),
        (3, lambda: [g.pick(["ZUNIONSTORE", "ZINTERSTORE"]), g.key(), *keys_with_numkeys(),
                     *setop_options(withscores=False)]),
        (1, lambda: ["ZDIFFSTORE", g.key(), *keys_with_numkeys()]),
        (1, lambda: ["ZINTERCARD", *keys_with_numkeys(),
                     *(["LIMIT", g.pick(["0", "1", "2", "-1", "x"])] if rng.random() < 0.4
                       else [])]),
        (2, lambda: ["ZSCAN", g.key(), g.pick(["0", "0", "0", "x", "-1", " 0"]),
                     *(["MATCH", g.pick(["*", "m*", "?", "[a-c]"])] if rng.random() < 0.3
                       else []),
                     *(["COUNT", g.pick(["1", "10", "0", "x"])] if rng.random() < 0.3 else [])]),
    ]


def match(cmd, val_a, val_b):
    if cmd[0].upper() != "ZRANDMEMBER":
        return None
    # Random picks: the same kind of answer (same length for arrays, a member for a single pick);
    # errors, nulls and empty answers compare exactly.
    if isinstance(val_a, list) and isinstance(val_b, list) and val_a and val_b:
        return len(val_a) == len(val_b)
    if isinstance(val_a, bytes) and isinstance(val_b, bytes) and \
            type(val_a).__name__ == type(val_b).__name__ == "bytes":
        return True
    return None
