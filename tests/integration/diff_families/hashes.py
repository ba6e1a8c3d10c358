"""Hash commands for the differential test (see __init__.py).

Small hashes stay packed in both servers and keep insertion order, but a hash that crossed
hash-max-listpack-entries/-value is a hash table whose order differs: whole-hash replies are
compared as unordered collections, and the random ones (HRANDFIELD) by shape and size only.
"""

import diff_families  # diff_families.unordered, looked up at call time (circular import)

FIELDS = ["a", "b", "c", "f1", "f2", "1", "-5", "", "x" * 65, "long:" + "y" * 64]
INT_ARGS = ["1", "-1", "5", "100", "-100", "0", "9223372036854775807",
            "-9223372036854775808", "abc", "1.5", "", "01"]
FLOAT_ARGS = ["0.1", "-0.1", "1.5", "1e3", "-2", "abc", "", "inf", "-inf", "1e400", "0x10",
              " 2", ".5", "5."]
HVALUES = ["1", "-1", "0", "10", "abc", "1.5", "9223372036854775807", "-9223372036854775808",
           "nan", "inf", " 1", "3.0e2", "z" * 65]
COUNTS = ["0", "1", "2", "3", "5", "-1", "-3", "-7", "200", "-200", "abc",
          "-9223372036854775808", "9223372036854775807"]


def choices(g):
    rng = g.rng

    def field():
        return g.pick(FIELDS)

    def value():
        return g.pick(HVALUES) if rng.random() < 0.5 else g.value()

    def pairs(lo=1, hi=4):
        out = []
        for _ in range(rng.randint(lo, hi)):
            out += [field(), value()]
        return out

    def big_hset():
        # Crosses hash-max-listpack-entries (512, both servers' default) on one key.
        base = rng.randint(0, 3) * 160
        n = rng.choice((240, 520, 600))
        out = ["HSET", g.key()]
        for i in range(base, base + n):
            out += [f"m{i}", str(i)]
        return out

    return [
        (6, lambda: ["HSET", g.key(), *pairs()]),
        (1, lambda: ["HSET", g.key(), *pairs(), field()]),  # odd: arity error
        (1, lambda: ["HSET", g.key()]),
        (2, lambda: ["HMSET", g.key(), *pairs()]),
        (0.5, lambda: ["HMSET", g.key(), field()]),
        (2, lambda: ["HSETNX", g.key(), field(), value()]),
        (5, lambda: ["HGET", g.key(), field()]),
        (3, lambda: ["HMGET", g.key(), *[field() for _ in range(rng.randint(1, 4))]]),
        (3, lambda: ["HDEL", g.key(), *[field() for _ in range(rng.randint(1, 4))]]),
        (2, lambda: ["HLEN", g.key()]),
        (2, lambda: ["HEXISTS", g.key(), field()]),
        (2, lambda: ["HSTRLEN", g.key(), field()]),
        (4, lambda: ["HINCRBY", g.key(), field(), g.pick(INT_ARGS)]),
        (4, lambda: ["HINCRBYFLOAT", g.key(), field(), g.pick(FLOAT_ARGS)]),
        (3, lambda: ["HGETALL", g.key()]),
        (2, lambda: ["HKEYS", g.key()]),
        (2, lambda: ["HVALS", g.key()]),
        (1, lambda: ["HRANDFIELD", g.key()]),
        (2, lambda: ["HRANDFIELD", g.key(), g.pick(COUNTS)]),
        (2, lambda: ["HRANDFIELD", g.key(), g.pick(COUNTS),
                     g.pick(["WITHVALUES", "withvalues", "WITHVALUES", "bogus"])]),
        (0.3, lambda: ["HRANDFIELD", g.key(), "1", "WITHVALUES", "x"]),
        (3, lambda: ["HSCAN", g.key(), g.pick(["0", "0", "0", "abc", "-1", ""]),
                     *g.pick([[], ["COUNT", g.pick(["1", "5", "1000", "0", "-1", "x"])],
                              ["MATCH", g.pick(["*", "f*", "?", "[a-c]", "m1*"])],
                              ["MATCH", "*", "COUNT", "1000"], ["BOGUS"], ["COUNT"]])]),
        (0.5, big_hset),
        (0.2, lambda: ["HSET", g.key(), "y" * 100, "v"]),
    ]


def _pairs(val):
    return sorted(zip(map(repr, val[0::2]), map(repr, val[1::2])))


def match(cmd, val_a, val_b):
    name = cmd[0].upper()
    if name in ("HKEYS", "HVALS"):
        return diff_families.unordered(val_a, val_b)
    if name == "HGETALL":
        if isinstance(val_a, list) and isinstance(val_b, list):
            return len(val_a) == len(val_b) and _pairs(val_a) == _pairs(val_b)
        return None
    if name == "HSCAN":
        if not (isinstance(val_a, list) and isinstance(val_b, list)):
            return None
        # From cursor 0 to cursor 0 is the whole hash; other cursors depend on the table layout.
        if cmd[2] in ("0", "") and val_a[0] == b"0" and val_b[0] == b"0":
            return _pairs(val_a[1]) == _pairs(val_b[1])
        # A partial step of a large hash: which fields come first is not defined.
        return len(val_b) == 2 and isinstance(val_b[1], list) and len(val_b[1]) % 2 == 0
    if name == "HRANDFIELD":
        if isinstance(val_a, list) and isinstance(val_b, list):
            if len(cmd) >= 3 and cmd[2].lstrip("-").isdigit() and int(cmd[2]) > 0:
                # Whole-hash answers are defined up to order.
                if len(val_a) == len(val_b) and diff_families.unordered(val_a, val_b):
                    return True
            return len(val_a) == len(val_b)
        if isinstance(val_a, bytes) and isinstance(val_b, bytes):
            return True
        return None
    return None
