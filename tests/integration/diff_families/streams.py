"""Stream commands for the differential test (see __init__.py).

IDs are explicit ("3-1", "5-*", "7"): auto "*" IDs come from each server's clock and would make the
two keyspaces diverge (test_streams.py checks them). BLOCK is never sent: redis-server would
really block.
Time-dependent fields (idle times, delivery and seen times) are masked by match(); idle
thresholds (XPENDING IDLE, XCLAIM/XAUTOCLAIM min-idle-time) are 0 or far beyond the test's run
time, so their effect is deterministic."""

FIELDS = ["f", "g", "a", "b", "", "field 2"]
VALUES = ["1", "2", "v", "", "hello", "-5", "x" * 40]
GROUPS = ["g1", "g1", "g1", "g1", "g2", "g3"]
CONSUMERS = ["alice", "bob", "carol"]
BAD_IDS = ["x", "1-x", "-1", "1--2", "", "18446744073709551616", "1-2-3", "(", "+", "-"]
IDLES = ["0", "1000000000", "-5"]
# Keys of the shared keyspace that the group commands prefer, so that groups live long enough
# (between DELs and other families' writes) to be read, claimed and acknowledged.
HOT = ["k0", "k1", "{tag}a", "{tag}b"]


def choices(g):
    rng = g.rng
    # A slowly advancing clock for the ms part, so that most XADDs go past the stream's top.
    clock = [0]

    def ms():
        clock[0] += rng.random() < 0.3
        return str(max(0, clock[0] + rng.randint(-3, 1)))

    def sid():
        r = rng.random()
        if r < 0.7:
            return f"{ms()}-{rng.randint(0, 3)}"
        if r < 0.85:
            return ms()
        if r < 0.95:
            return g.pick(["0-0", "0", "0-1", "1"])
        if r < 0.96:
            return "18446744073709551615-18446744073709551615"
        return g.pick(BAD_IDS)

    def read_sid():
        # XREAD's "+" (the last entry) is Redis 7.4's; 7.0 refuses it (test_compat72.py).
        s = sid()
        return "x" if s == "+" else s

    def range_id(low):
        r = rng.random()
        if r < 0.3:
            return "-" if low else "+"
        if r < 0.5:
            return "(" + sid()
        if r < 0.55:
            return g.pick(["-", "+", "(-", "(+", "((1"])
        return sid()

    def fields():
        out = []
        if rng.random() < 0.7:
            names = ["f", "g"][: rng.randint(1, 2)]
        else:
            names = [g.pick(FIELDS) for _ in range(rng.randint(1, 3))]
        for name in names:
            out += [name, g.pick(VALUES)]
        if rng.random() < 0.03:
            out.pop()
        return out

    def trim_opts():
        if rng.random() < 0.6:
            return []
        kind = g.pick(["MAXLEN", "MINID", "maxlen", "minid"])
        opts = [kind]
        r = rng.random()
        if r < 0.3:
            opts.append("~")
        elif r < 0.5:
            opts.append("=")
        if kind.upper() == "MAXLEN":
            opts.append(g.pick(["0", "1", "2", "3", "5", "100", "-1", "x"]))
        else:
            opts.append(sid())
        if rng.random() < 0.15:
            opts += ["LIMIT", g.pick(["0", "1", "10", "-1", "x"])]
        if rng.random() < 0.03:
            opts += g.pick([["MAXLEN", "1"], ["LIMIT", "1"], ["BOGUS"]])
        return opts

    def xadd():
        cmd = ["XADD", g.key()]
        if rng.random() < 0.1:
            cmd.append("NOMKSTREAM")
        cmd += trim_opts()
        r = rng.random()
        if r < 0.6:
            cmd.append(sid())
        else:
            cmd.append(f"{ms()}-*")
        return cmd + fields()

    def xtrim():
        opts = trim_opts() or ["MAXLEN", g.pick(["0", "1", "2", "4"])]
        if rng.random() < 0.05:
            opts = g.pick([[], ["LIMIT", "1"], ["MAXLEN"], ["FOO", "1"]])
        return ["XTRIM", g.key(), *opts]

    def xrange(rev=False):
        a, b = range_id(True), range_id(False)
        cmd = ["XREVRANGE", g.key(), b, a] if rev else ["XRANGE", g.key(), a, b]
        if rng.random() < 0.3:
            cmd += ["COUNT", g.pick(["0", "1", "2", "5", "-1", "x"])]
        if rng.random() < 0.03:
            cmd.append("BOGUS")
        return cmd

    def block():
        # Without data both servers wait 1 ms and reply a null array; or an invalid timeout.
        return ["BLOCK", g.pick(["1", "1", "1", "2", "-1", "x", "1.5"])]

    def xread():
        keys = g.keys(1, 3)
        cmd = ["XREAD"]
        if rng.random() < 0.4:
            cmd += ["COUNT", g.pick(["1", "2", "0", "-1", "x"])]
        if rng.random() < 0.15:
            cmd += block()
        # Not "+" nor an unbalanced list: Redis 7.2 (and 7.4 for "+") answers them differently
        # from 7.0 (test_compat72.py).
        ids = [g.pick(["0", "$", "0-0", "3", "10-1"]) if rng.random() < 0.8 else read_sid()
               for _ in keys]
        if rng.random() < 0.03:
            ids[0] = ">"
        return cmd + ["STREAMS", *keys, *ids]

    def gkey():
        return g.pick(HOT) if rng.random() < 0.75 else g.key()

    def group():
        return g.pick(GROUPS)

    def consumer():
        return g.pick(CONSUMERS)

    def xreadgroup():
        keys = [gkey()] if rng.random() < 0.8 else [gkey() for _ in range(rng.randint(2, 3))]
        cmd = ["XREADGROUP", "GROUP", group(), consumer()]
        if rng.random() < 0.4:
            cmd += ["COUNT", g.pick(["1", "2", "1", "2", "0", "3", "x"])]
        if rng.random() < 0.15:
            cmd += block()
        if rng.random() < 0.15:
            cmd.append("NOACK")
        ids = [">" if rng.random() < 0.7 else g.pick(["0", "3-0", "$", read_sid()]) for _ in keys]
        return cmd + ["STREAMS", *keys, *ids]

    def xgroup():
        r = rng.random()
        key = gkey()
        if r < 0.35:
            cmd = ["XGROUP", "CREATE", key, group(), g.pick(["0", "$", "3-0", sid()])]
            if rng.random() < 0.6:
                cmd.append("MKSTREAM")
            if rng.random() < 0.15:
                cmd += ["ENTRIESREAD", g.pick(["0", "2", "-1", "-2", "x", "100"])]
            return cmd
        if r < 0.5:
            cmd = ["XGROUP", "SETID", key, group(), g.pick(["0", "$", "5-0", sid()])]
            if rng.random() < 0.3:
                cmd += ["ENTRIESREAD", g.pick(["0", "3", "-1", "x"])]
            return cmd
        if r < 0.6:
            return ["XGROUP", "DESTROY", key, group()]
        if r < 0.75:
            return ["XGROUP", "CREATECONSUMER", key, group(), consumer()]
        if r < 0.9:
            return ["XGROUP", "DELCONSUMER", key, group(), consumer()]
        return g.pick([["XGROUP", "HELP"], ["XGROUP", "BOGUS", key], ["XGROUP", "CREATE", key],
                       ["XGROUP", "DESTROY", key, "g1", "extra"]])

    def xack():
        return ["XACK", gkey(), group(), *[sid() for _ in range(rng.randint(1, 3))]]

    def xpending():
        cmd = ["XPENDING", gkey(), group()]
        if rng.random() < 0.6:
            if rng.random() < 0.3:
                cmd += ["IDLE", g.pick(IDLES)]
            cmd += [range_id(True), range_id(False), g.pick(["10", "1", "0", "-1", "x"])]
            if rng.random() < 0.4:
                cmd.append(consumer())
        if rng.random() < 0.03:
            cmd.append("extra")
        return cmd

    def xclaim():
        cmd = ["XCLAIM", gkey(), group(), consumer(), g.pick(IDLES + ["x"])]
        # Mostly IDs like those XADD "ms-*" makes, so that some are pending.
        cmd += [f"{ms()}-0" if rng.random() < 0.7 else sid() for _ in range(rng.randint(1, 3))]
        for _ in range(rng.choice((0, 0, 1, 2))):
            cmd += g.pick([["FORCE"], ["JUSTID"], ["IDLE", g.pick(["0", "5000000000", "x"])],
                           ["TIME", g.pick(["0", "99999999999999", "x"])],
                           ["RETRYCOUNT", g.pick(["0", "5", "x"])],
                           ["LASTID", g.pick(["30-0", "1-0", "x"])], ["BOGUS"]])
        return cmd

    def xautoclaim():
        cmd = ["XAUTOCLAIM", gkey(), group(), consumer(), g.pick(IDLES + ["x"]),
               range_id(True)]
        if rng.random() < 0.5:
            cmd += ["COUNT", g.pick(["1", "2", "100", "0", "x"])]
        if rng.random() < 0.3:
            cmd.append("JUSTID")
        if rng.random() < 0.03:
            cmd.append("BOGUS")
        return cmd

    def xinfo():
        r = rng.random()
        key = gkey()
        if r < 0.35:
            cmd = ["XINFO", "STREAM", key]
            if rng.random() < 0.4:
                cmd.append("FULL")
                if rng.random() < 0.5:
                    cmd += ["COUNT", g.pick(["0", "1", "2", "-1", "x"])]
            return cmd
        if r < 0.65:
            return ["XINFO", "GROUPS", key]
        if r < 0.95:
            return ["XINFO", "CONSUMERS", key, group()]
        return g.pick([["XINFO", "HELP"], ["XINFO", "BOGUS", key], ["XINFO", "STREAM", key, "x"]])

    def xsetid():
        # Past every ID used so far, or malformed: Redis 7.2 refuses an ID below the largest
        # deleted one, which 7.0 accepts (test_compat72.py).
        new_id = f"{clock[0] + 10}-{rng.randint(0, 3)}" if rng.random() < 0.9 else g.pick(BAD_IDS)
        cmd = ["XSETID", g.key(), new_id]
        if rng.random() < 0.3:
            cmd += ["ENTRIESADDED", g.pick(["0", "5", "100", "-1", "x"])]
        if rng.random() < 0.3:
            cmd += ["MAXDELETEDID", sid()]
        return cmd

    return [
        (14, xadd),
        (2, lambda: ["XLEN", g.key()]),
        (5, xrange),
        (3, lambda: xrange(rev=True)),
        (3, lambda: ["XDEL", g.key(), *[sid() for _ in range(rng.randint(1, 3))]]),
        (2, xtrim),
        (4, xread),
        (7, xgroup),
        (6, xreadgroup),
        (3, xack),
        (3, xpending),
        (3, xclaim),
        (2, xautoclaim),
        (3, xinfo),
        (1, xsetid),
        # Keys that other families made strings, lists, ... become streams again.
        (2, lambda: ["DEL", g.key()]),
    ]


_BIG_TIME = 10 ** 12  # a ms timestamp (delivery or seen time) rather than a count


def _mask_times(v):
    """Replaces absolute ms timestamps (XINFO STREAM FULL) by 0."""
    if isinstance(v, dict):
        return {k: _mask_times(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_mask_times(x) for x in v]
    if isinstance(v, int) and not isinstance(v, bool) and v >= _BIG_TIME:
        return 0
    return v


def _mask_after(v, names):
    """Masks the values that follow the given field names (flat RESP2 lists or RESP3 maps)."""
    if isinstance(v, dict):
        return {k: (0 if k in names else _mask_after(x, names)) for k, x in v.items()}
    if isinstance(v, list):
        out = []
        skip = False
        for x in v:
            if skip:
                out.append(0)
                skip = False
                continue
            out.append(_mask_after(x, names))
            skip = isinstance(x, bytes) and x in names
        return out
    return v


# Redis 7.2 creates the consumer that XREADGROUP, XCLAIM and XAUTOCLAIM name, whatever they
# read or claim; 7.0 (the reference here) only one that gets entries. So shardis may have more
# consumers than redis-server, each with nothing pending, and its consumers carry 7.2's
# `inactive` (XINFO CONSUMERS) and `active-time` (XINFO STREAM FULL). test_compat72.py and
# test_streams.py pin those replies; here they are taken out before comparing.
_FIELDS_72 = {b"inactive", b"active-time"}


def consumers_named(cmd):
    """The (key, group, consumer) that Redis 7.2 creates when cmd runs without error: each
    stream of an XREADGROUP, the one of an XCLAIM or XAUTOCLAIM. Running XGROUP CREATECONSUMER
    for them after such a command makes redis-server 7.0 end where 7.2 would."""
    name = cmd[0].upper() if cmd else ""
    if name in ("XCLAIM", "XAUTOCLAIM") and len(cmd) > 3:
        return [(cmd[1], cmd[2], cmd[3])]
    if name != "XREADGROUP" or len(cmd) < 4:
        return []
    upper = [str(a).upper() for a in cmd]
    if "STREAMS" not in upper:
        return []
    at = upper.index("STREAMS") + 1
    keys = cmd[at:at + (len(cmd) - at) // 2]
    return [(k, cmd[2], cmd[3]) for k in keys]


def _fields(c):
    """A consumer's fields as a dict, from a RESP2 flat list or a RESP3 map."""
    return dict(c) if isinstance(c, dict) else dict(zip(c[0::2], c[1::2]))


def _with_field(v, name, value):
    """A copy of a RESP3 map or RESP2 flat list whose field `name` holds value."""
    if isinstance(v, dict):
        return {**v, name: value}
    at = v.index(name) + 1
    return v[:at] + [value] + v[at + 1:]


def _without_72_fields(c):
    if isinstance(c, dict):
        return {k: v for k, v in c.items() if k not in _FIELDS_72}
    pairs = [(k, v) for k, v in zip(c[0::2], c[1::2]) if k not in _FIELDS_72]
    return [x for pair in pairs for x in pair]


def _as_70_consumers(ref, ours, pending_field):
    """Our consumers list as 7.0 would have it: the consumers redis-server has, 7.2's fields
    dropped; None if one of the others has entries pending (7.0 and 7.2 agree on those)."""
    if not (isinstance(ref, list) and isinstance(ours, list)):
        return ours
    names = {_fields(c).get(b"name") for c in ref}
    kept = []
    for c in ours:
        if _fields(c).get(b"name") in names:
            kept.append(_without_72_fields(c))
        elif _fields(c).get(pending_field) != 0:
            return None
    return kept


def _stream_full_as_70(ref, ours):
    """XINFO STREAM FULL with each group's consumers as 7.0 would have them."""
    def groups(v):
        f = _fields(v) if isinstance(v, (list, dict)) else {}
        return f.get(b"groups")
    ref_groups, our_groups = groups(ref), groups(ours)
    if not (isinstance(ref_groups, list) and isinstance(our_groups, list)) or \
            len(ref_groups) != len(our_groups):
        return ours
    new_groups = []
    for rg, og in zip(ref_groups, our_groups):
        consumers = _as_70_consumers(_fields(rg).get(b"consumers"),
                                     _fields(og).get(b"consumers"), b"pel-count")
        if consumers is None:
            return None
        new_groups.append(_with_field(og, b"consumers", consumers))
    return _with_field(ours, b"groups", new_groups)


def _groups_as_70(ref, ours):
    """XINFO GROUPS with our consumer counts where they may exceed 7.0's."""
    if not (isinstance(ref, list) and isinstance(ours, list)) or len(ref) != len(ours):
        return ours
    out = []
    for rg, og in zip(ref, ours):
        ref_n, our_n = _fields(rg).get(b"consumers"), _fields(og).get(b"consumers")
        if not (isinstance(ref_n, int) and isinstance(our_n, int) and our_n >= ref_n):
            return ours
        out.append(_with_field(og, b"consumers", ref_n))
    return out


def match(cmd, val_a, val_b):
    name = cmd[0].upper()
    sub = cmd[1].upper() if len(cmd) > 1 else ""
    if name == "XPENDING" and len(cmd) > 3 and isinstance(val_a, list) and \
            isinstance(val_b, list):
        def strip(v):
            return [x[:2] + x[3:] if isinstance(x, list) and len(x) == 4 else x for x in v]
        return strip(val_a) == strip(val_b)
    if name == "XINFO" and sub == "GROUPS":
        return _groups_as_70(val_a, val_b) == val_a
    if name == "XINFO" and sub == "CONSUMERS":
        val_b = _as_70_consumers(val_a, val_b, b"pending")
    if name == "XINFO" and sub == "STREAM":
        val_b = _stream_full_as_70(val_a, val_b)
    if name == "XINFO" and sub in ("CONSUMERS", "STREAM"):
        if val_b is None:
            return False
        names = {b"idle", b"radix-tree-nodes"}
        a, b = _mask_after(val_a, names), _mask_after(val_b, names)
        return _mask_times(a) == _mask_times(b)
    # CREATECONSUMER of a consumer that 7.2 had already created and 7.0 had not.
    if name == "XGROUP" and sub == "CREATECONSUMER":
        return val_a == val_b or (val_a == 1 and val_b == 0)
    return None
