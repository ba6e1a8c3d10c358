"""List commands for the differential test: pushes, pops (with counts), LRANGE/LINDEX/LSET/LINSERT/
LREM/LTRIM/LPOS with negative and out-of-range indices, LMOVE/RPOPLPUSH/LMPOP across keys of the
shared keyspace (so across shards, and against keys of other types), and the argument errors."""

INDICES = ["0", "1", "2", "-1", "-2", "-3", "5", "-10", "100", "-100", "9223372036854775807",
           "-9223372036854775808"]
BAD_INTS = ["x", "1.5", "", "+1", "01"]
COUNTS = ["0", "1", "2", "3", "10", "-1", "-2", "x", "9223372036854775807", ""]
ENDS = ["LEFT", "RIGHT", "left", "Right", "middle"]
# A few repeated values so that LREM, LPOS and LINSERT find matches; integers and non-canonical
# integers to check that compact integer entries come back byte for byte.
ELEMS = ["a", "b", "c", "a", "1", "01", "-5", "300", "", "x" * 70, "9223372036854775807"]


def choices(g):
    rng = g.rng

    def elem():
        return g.pick(ELEMS) if rng.random() < 0.7 else g.value()

    def elems(lo=1, hi=6):
        return [elem() for _ in range(rng.randint(lo, hi))]

    def end():
        return g.pick(ENDS[:4]) if rng.random() < 0.95 else g.pick(ENDS)

    def idx():
        return g.pick(INDICES) if rng.random() < 0.93 else g.pick(BAD_INTS)

    def lpos():
        opts = []
        for _ in range(rng.choice((0, 0, 0, 1, 1, 2))):
            kind = rng.choice(("RANK", "RANK", "COUNT", "COUNT", "MAXLEN", "BAD", "RANKONLY"))
            if kind == "RANK":
                # Not RANK -9223372036854775808: Redis 7.2 refuses it, 7.0 overflows
                # (test_compat72.py).
                opts += [g.pick(["RANK", "rank"]), g.pick(["1", "2", "-1", "-2", "0", "3", "-3",
                                                           "x"])]
            elif kind == "COUNT":
                opts += ["COUNT", g.pick(["0", "1", "2", "-1", "x", "5"])]
            elif kind == "MAXLEN":
                opts += ["MAXLEN", g.pick(["0", "1", "3", "-1", "x"])]
            elif kind == "RANKONLY":
                opts.append("RANK")  # an option without its value: syntax error
            else:
                opts.append("FOO")
        return ["LPOS", g.key(), elem(), *opts]

    def lmpop():
        keys = g.keys(1, 4)
        numkeys = str(len(keys))
        r = rng.random()
        if r < 0.05:
            numkeys = g.pick(["0", "-1", "x", "99"])
        elif r < 0.1:
            numkeys = str(len(keys) + 1)
        cmd = ["LMPOP", numkeys, *keys, end()]
        r = rng.random()
        if r < 0.5:
            cmd += ["COUNT", g.pick(["1", "2", "5", "0", "-1", "x"])]
        elif r < 0.55:
            cmd += g.pick([["COUNT"], ["COUNT", "1", "COUNT", "2"], ["FOO"]])
        return cmd

    return [
        # Frees keys that other families made strings, so that lists keep appearing.
        (5, lambda: ["DEL", g.key()]),
        (6, lambda: [g.pick(["LPUSH", "RPUSH"]), g.key(), *elems()]),
        (2, lambda: [g.pick(["LPUSHX", "RPUSHX"]), g.key(), *elems(1, 3)]),
        (4, lambda: [g.pick(["LPOP", "RPOP"]), g.key()]),
        (3, lambda: [g.pick(["LPOP", "RPOP"]), g.key(), g.pick(COUNTS)]),
        (0.3, lambda: [g.pick(["LPOP", "RPOP"]), g.key(), "1", "2"]),
        (2, lambda: ["LLEN", g.key()]),
        (5, lambda: ["LRANGE", g.key(), idx(), idx()]),
        (3, lambda: ["LINDEX", g.key(), idx()]),
        (3, lambda: ["LSET", g.key(), idx(), elem()]),
        (3, lambda: ["LINSERT", g.key(), g.pick(["BEFORE", "AFTER", "before", "after", "UP"]),
                     elem(), elem()]),
        (3, lambda: ["LREM", g.key(), g.pick(["0", "1", "2", "-1", "-2", "x"]), elem()]),
        (2, lambda: ["LTRIM", g.key(), idx(), idx()]),
        (3, lpos),
        (3, lambda: ["LMOVE", g.key(), g.key(), end(), end()]),
        (1, lambda: (lambda k: ["LMOVE", k, k, g.pick(ENDS[:4]), g.pick(ENDS[:4])])(g.key())),
        (2, lambda: ["RPOPLPUSH", g.key(), g.key()]),
        (3, lmpop),
        # Arity errors.
        (0.3, lambda: [g.pick(["LPUSH", "LRANGE", "LINDEX", "LSET", "LINSERT", "LREM", "LTRIM",
                               "LPOS", "LMOVE", "RPOPLPUSH", "LMPOP", "LLEN"]), g.key()]),
    ]
