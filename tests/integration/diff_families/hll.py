"""HyperLogLog commands for the differential test: PFADD of a few or many elements (so that some
keys turn dense), PFCOUNT of one key (refreshing the cached cardinality stored in the value,
compared byte for byte through GET) and of several keys across shards, PFMERGE into new and
existing keys, PFDEBUG, and values that are strings but not HLLs (the shared keyspace's strings) or are
corrupted HLLs."""

ELEMS = ["a", "b", "c", "", "1", "foo", "bar", "x" * 30]
# An HLL header with a broken body (sparse runs that do not cover the registers), one with a
# bad encoding byte, and a dense header with a wrong length.
BROKEN = [b"HYLL\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x80\x00",
          b"HYLL\x02\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x80\x7f\xff",
          b"HYLL\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x80\x7f\xff",
          b"HYLL"]


def choices(g):
    rng = g.rng

    def elems():
        n = rng.choice((0, 1, 1, 2, 3, 5, 20, 200, 1000))
        if n <= 5:
            return [g.pick(ELEMS) if rng.random() < 0.5 else g.value() for _ in range(n)]
        base = rng.randrange(10**6)
        return [f"e{base + i}" for i in range(n)]

    return [
        (8, lambda: ["PFADD", g.key(), *elems()]),
        (5, lambda: ["PFCOUNT", g.key()]),
        (3, lambda: ["PFCOUNT", *g.keys(2, 4)]),
        (3, lambda: ["PFMERGE", g.key(), *g.keys(0, 3)]),
        (3, lambda: ["GET", g.key()]),
        (0.5, lambda: ["SET", g.key(), g.pick(BROKEN)]),
        (1, lambda: ["PFDEBUG", g.pick(["ENCODING", "DECODE", "TODENSE", "decode", "FOO"]),
                     g.key()]),
        (0.2, lambda: ["PFDEBUG", "GETREG", g.key()]),
        (0.3, lambda: [g.pick(["PFADD", "PFCOUNT", "PFMERGE", "PFDEBUG"])]),
    ]
