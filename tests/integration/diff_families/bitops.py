"""Bit commands for the differential test: SETBIT/GETBIT over small and large offsets (string
growth, int-encoded values turning into other strings), BITCOUNT/BITPOS with BYTE and BIT ranges
and negative indices, BITOP across keys of the shared keyspace (so across shards, missing keys
and keys of other types), BITFIELD/BITFIELD_RO with every overflow mode and signed/unsigned
widths up to i64/u63, LCS, and the argument errors of each."""

OFFSETS = ["0", "1", "7", "8", "15", "63", "100", "1000", "4095", "-1", "x", "1.5", "",
           "4294967296", "9223372036854775807"]
BITS = ["0", "1", "1", "0", "2", "-1", "x"]
RANGE = ["0", "1", "2", "-1", "-2", "5", "-5", "7", "8", "13", "100", "-100",
         "9223372036854775807", "-9223372036854775808", "x", ""]
UNITS = ["BYTE", "BIT", "byte", "bit", "Bit", "BITS"]
TYPES = ["u1", "u3", "u8", "u16", "u31", "u63", "i1", "i5", "i8", "i16", "i32", "i63", "i64",
         "u64", "i65", "I8", "u0", "x8", "u"]
FIELD_OFFSETS = ["0", "1", "3", "7", "8", "13", "31", "64", "100", "#0", "#1", "#3", "#-1",
                 "-1", "x", "4294967296", "#536870912"]
VALUES = ["0", "1", "-1", "5", "100", "127", "128", "255", "256", "-128", "-129", "1000",
          "9223372036854775807", "-9223372036854775808", "4611686018427387904", "x", "1.5"]
OVERFLOWS = ["WRAP", "SAT", "FAIL", "wrap", "sat", "fail", "BAD"]
LCS_VALUES = ["ohmytext", "mynewtext", "abcde", "ace", "", "aaaa", "xyz", "abcabcabc",
              "the quick brown fox", "qwick brwn"]


def choices(g):
    rng = g.rng

    def offset():
        return g.pick(OFFSETS[:10]) if rng.random() < 0.92 else g.pick(OFFSETS)

    def bit():
        return g.pick(BITS[:4]) if rng.random() < 0.93 else g.pick(BITS)

    def rng_arg():
        return g.pick(RANGE[:13]) if rng.random() < 0.95 else g.pick(RANGE)

    def bitcount():
        cmd = ["BITCOUNT", g.key()]
        r = rng.random()
        if r < 0.7:
            cmd += [rng_arg(), rng_arg()]
            if rng.random() < 0.6:
                cmd.append(g.pick(UNITS[:5]) if rng.random() < 0.95 else g.pick(UNITS))
        elif r < 0.75:
            cmd += [rng_arg()]  # start without end: syntax error
        return cmd

    def bitpos():
        cmd = ["BITPOS", g.key(), bit()]
        n = rng.choice((0, 1, 2, 3, 3, 3))
        if n >= 1:
            cmd.append(rng_arg())
        if n >= 2:
            cmd.append(rng_arg())
        if n >= 3:
            cmd.append(g.pick(UNITS[:5]) if rng.random() < 0.95 else g.pick(UNITS))
        if rng.random() < 0.02:
            cmd.append("extra")
        return cmd

    def bitop():
        op = g.pick(["AND", "OR", "XOR", "NOT", "and", "Or", "NAND"])
        if op.upper() == "NOT" and rng.random() < 0.9:
            return ["BITOP", op, g.key(), g.key()]
        return ["BITOP", op, g.key(), *g.keys(1, 4)]

    def field_type():
        return g.pick(TYPES[:13]) if rng.random() < 0.95 else g.pick(TYPES)

    def field_offset():
        return g.pick(FIELD_OFFSETS[:13]) if rng.random() < 0.95 else g.pick(FIELD_OFFSETS)

    def field_value():
        return g.pick(VALUES[:15]) if rng.random() < 0.97 else g.pick(VALUES)

    def bitfield(ro=False):
        cmd = ["BITFIELD_RO" if ro else "BITFIELD", g.key()]
        for _ in range(rng.randint(0, 4)):
            kind = rng.random()
            if kind < 0.35 or ro and kind < 0.9:
                cmd += [g.pick(["GET", "get"]), field_type(), field_offset()]
            elif kind < 0.6:
                cmd += ["SET", field_type(), field_offset(), field_value()]
            elif kind < 0.85:
                cmd += [g.pick(["INCRBY", "incrby"]), field_type(), field_offset(), field_value()]
            elif kind < 0.97:
                cmd += ["OVERFLOW", g.pick(OVERFLOWS[:6]) if rng.random() < 0.9
                        else g.pick(OVERFLOWS)]
            else:
                cmd += g.pick([["GET", "u8"], ["SET", "u8", "0"], ["OVERFLOW"], ["FOO"]])
        return cmd

    def lcs():
        cmd = ["LCS", g.key(), g.key()]
        for _ in range(rng.choice((0, 0, 1, 1, 2, 3))):
            opt = rng.choice(("LEN", "IDX", "IDX", "WITHMATCHLEN", "MINMATCHLEN", "BAD"))
            if opt == "MINMATCHLEN":
                cmd += ["MINMATCHLEN", g.pick(["0", "1", "2", "3", "-1", "x"])]
            elif opt == "BAD":
                cmd.append(g.pick(["FOO", "MINMATCHLEN"]))
            else:
                cmd.append(opt)
        return cmd

    return [
        (2, lambda: ["SET", g.key(), g.pick(LCS_VALUES)]),
        (6, lambda: ["SETBIT", g.key(), offset(), bit()]),
        (4, lambda: ["GETBIT", g.key(), offset()]),
        (5, bitcount),
        (5, bitpos),
        (4, bitop),
        (6, bitfield),
        (2, lambda: bitfield(ro=True)),
        (3, lcs),
        (2, lambda: ["GET", g.key()]),
        # Arity errors.
        (0.3, lambda: [g.pick(["SETBIT", "GETBIT", "BITPOS", "BITOP", "LCS"]), g.key()]),
        (0.2, lambda: ["BITOP", g.pick(["AND", "NOT"]), g.key()]),
    ]
