"""Blocking pops in the random stream, with a 1 ms timeout (or an invalid one): with data they
pop like their non-blocking forms, without data both servers wait briefly and reply null."""

# Not "1e30": Redis 7.2 answers "timeout is out of range", 7.0 "timeout is negative"
# (test_tcl_findings.py checks 7.2's text).
TIMEOUTS = ["0.001", "0.001", "0.001", "-1", "abc"]


def choices(g):
    t = lambda: g.pick(TIMEOUTS)  # noqa: E731
    return [
        (1, lambda: [g.pick(["BLPOP", "BRPOP"]), *g.keys(1, 3), t()]),
        (1, lambda: ["BLMOVE", g.key(), g.key(), g.pick(["LEFT", "RIGHT", "UP"]),
                     g.pick(["LEFT", "RIGHT"]), t()]),
        (0.5, lambda: ["BRPOPLPUSH", g.key(), g.key(), t()]),
        (1, lambda: ["BLMPOP", t(), *g.pick([["1", g.key()], ["2", g.key(), g.key()], ["0"], ["x"]]),
                     g.pick(["LEFT", "RIGHT", "MIDDLE"]),
                     *g.pick([[], ["COUNT", "2"], ["COUNT", "0"], ["COUNT"]])]),
        (1, lambda: [g.pick(["BZPOPMIN", "BZPOPMAX"]), *g.keys(1, 3), t()]),
        (1, lambda: ["BZMPOP", t(), *g.pick([["1", g.key()], ["2", g.key(), g.key()], ["-1"]]),
                     g.pick(["MIN", "MAX", "MID"]), *g.pick([[], ["COUNT", "3"], ["COUNT", "-2"]])]),
    ]
