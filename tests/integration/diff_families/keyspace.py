"""Keyspace commands that move values between keys and databases: RENAME, RENAMENX, COPY, MOVE,
SWAPDB, MSETNX, RANDOMKEY (compared on whether it found a key: which one is random)."""

DBS = ["0", "1", "2", "15", "16", "-1", "x"]


def choices(g):
    return [
        (3, lambda: ["RENAME", g.key(), g.key()]),
        (2, lambda: ["RENAMENX", g.key(), g.key()]),
        (3, lambda: ["COPY", g.key(), g.key(), *g.pick([
            [], ["REPLACE"], ["DB", g.pick(DBS)], ["DB", g.pick(DBS), "REPLACE"],
            ["REPLACE", "DB", "1"], ["DB"], ["BOGUS"]])]),
        (2, lambda: ["MOVE", g.key(), g.pick(DBS)]),
        (2, lambda: ["MSETNX", *[x for k in g.keys(1, 3) for x in (k, g.value())]]),
        (0.5, lambda: ["MSETNX", *g.keys(1, 3)]),
        (0.3, lambda: ["SWAPDB", g.pick(DBS), g.pick(DBS)]),
        (1, lambda: ["RANDOMKEY"]),
    ]


def match(cmd, val_a, val_b):
    if cmd[0].upper() == "RANDOMKEY":
        return (val_a is None) == (val_b is None)
    return None
