"""Set commands for the differential test (see __init__.py).

Member order is not defined by Redis (and Redis 7.0 keeps small string sets in a hash table
where we keep a packed list), so whole-set replies are compared as unordered collections. Random
picks (SRANDMEMBER, SPOP) are compared by reply type and size only; SPOP, which would make the
two keyspaces differ, only runs on the scratch keys spop:a and spop:b, which are refilled with
SUNIONSTORE (a deterministic reply) and otherwise only read with SCARD.
"""

import diff_families  # diff_families.unordered, looked up at call time (circular import)

MEMBERS = ["1", "2", "3", "-1", "0", "100", "70000", "9223372036854775807",
           "-9223372036854775808", "a", "b", "c", "hello", "", "01", "+1", "1.5",
           "x" * 65, "m" * 64]
COUNTS = ["0", "1", "2", "3", "5", "-1", "-3", "-7", "600", "-600", "abc",
          "-9223372036854775808", "9223372036854775807"]
SCRATCH = ["spop:a", "spop:b"]


def choices(g):
    rng = g.rng

    def member():
        return g.pick(MEMBERS) if rng.random() < 0.8 else str(rng.randint(-20, 20))

    def members(lo=1, hi=4):
        return [member() for _ in range(rng.randint(lo, hi))]

    def big_sadd():
        # Crosses set-max-listpack-entries (128) or set-max-intset-entries (512).
        n = rng.choice((100, 130, 520, 600))
        base = rng.randint(0, 3) * 50
        if rng.random() < 0.5:
            return ["SADD", g.key(), *[str(i) for i in range(base, base + n)]]
        return ["SADD", g.key(), *[f"s{i}" for i in range(base, base + min(n, 200))]]

    def numkeys_cmd():
        keys = g.keys(1, 4)
        numkeys = str(len(keys))
        if rng.random() < 0.15:
            numkeys = g.pick(["0", "-1", "x", str(len(keys) + 1)])
        extra = g.pick([[], [], ["LIMIT", g.pick(["0", "1", "2", "5"])],
                        ["LIMIT", "1", "LIMIT", "3"]])
        if rng.random() < 0.15:
            extra = g.pick([["LIMIT", g.pick(["-1", "x"])], ["LIMIT"], ["FOO"]])
        return ["SINTERCARD", numkeys, *keys, *extra]

    return [
        (8, lambda: ["SADD", g.key(), *members()]),
        (1, lambda: ["SADD", g.key()]),
        (4, lambda: ["SREM", g.key(), *members()]),
        (3, lambda: ["SISMEMBER", g.key(), member()]),
        (2, lambda: ["SMISMEMBER", g.key(), *members()]),
        (3, lambda: ["SCARD", g.key()]),
        (3, lambda: ["SMEMBERS", g.key()]),
        (2, lambda: ["SRANDMEMBER", g.key(), *g.pick([[], [g.pick(COUNTS)], ["1", "2"]])]),
        (1, lambda: ["SPOP", g.pick(SCRATCH + [g.key()]), g.pick(["0", "-1", "x", "1 2"])]),
        (4, lambda: ["SPOP", g.pick(SCRATCH), *g.pick([[], [g.pick(COUNTS[:5] + ["600"])]])]),
        (0.5, lambda: ["SPOP", g.pick(SCRATCH), "1", "2"]),
        (3, lambda: ["SUNIONSTORE", g.pick(SCRATCH), *g.keys(1, 3)]),
        (2, lambda: ["SCARD", g.pick(SCRATCH)]),
        (3, lambda: [g.pick(["SINTER", "SUNION", "SDIFF"]), *g.keys(1, 4)]),
        (3, lambda: [g.pick(["SINTERSTORE", "SUNIONSTORE", "SDIFFSTORE"]), *g.keys(2, 4)]),
        (2, numkeys_cmd),
        (3, lambda: ["SMOVE", g.key(), g.key(), member()]),
        (2, lambda: ["SSCAN", g.key(), g.pick(["0", "0", "0", "x", "-1", ""]),
                     *g.pick([[], ["COUNT", g.pick(["1", "5", "1000", "0", "x"])],
                              ["MATCH", g.pick(["*", "1*", "?", "[a-c]", "s1*"])],
                              ["MATCH", "*", "COUNT", "1000"], ["BOGUS"], ["COUNT"]])]),
        (0.5, big_sadd),
    ]


def match(cmd, val_a, val_b):
    name = cmd[0].upper()
    if name in ("SMEMBERS", "SINTER", "SUNION", "SDIFF"):
        return diff_families.unordered(val_a, val_b)
    if name == "SSCAN":
        if not (isinstance(val_a, list) and isinstance(val_b, list)):
            return None
        if cmd[2] in ("0", "") and val_a[0] == b"0" and val_b[0] == b"0":
            return diff_families.unordered(val_a[1], val_b[1])
        # A step of a hash table: which members come first is not defined.
        return len(val_b) == 2 and isinstance(val_b[1], list)
    if name in ("SRANDMEMBER", "SPOP"):
        if isinstance(val_a, list) and isinstance(val_b, list):
            return type(val_a) is type(val_b) and len(val_a) == len(val_b)
        if isinstance(val_a, bytes) and isinstance(val_b, bytes):
            return True
        return None
    return None
