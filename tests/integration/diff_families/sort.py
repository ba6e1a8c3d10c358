"""SORT and SORT_RO for the differential test (see __init__.py).

Sources: the shared keyspace (lists, sets, sorted sets and keys of other types, so WRONGTYPE and
the score error come up), plus dedicated keys {tag}sl (a list) and {tag}sz (a sorted set) filled
with numbers and a few words. BY/GET patterns name only {tag} keys ({tag}w<elem> strings,
{tag}h<elem> hashes), and are only used with {tag} sources, so every key a pattern names is on
the source's shard whatever --threads is (shardis refuses patterns across shards). STORE is used
with ALPHA or BY a constant only (see the Redis bug below).

Where Redis leaves the order undefined the replies are compared as multisets of per-element
groups (match below): a set's natural order (BY a constant pattern), and the order among elements
whose ALPHA BY weights tie (a missing weight ties with every other missing one; Redis keeps their
load order, which is hash order for sets and sorted sets). Such commands get no LIMIT and no
STORE, so what is selected does not depend on that order.

Redis 7.0.15 bug accepted: SORT reads errno after strtod without clearing it first, so once any
command left errno at ERANGE (e.g. INCRBYFLOAT k 1e400 elsewhere in the stream), every numeric
SORT of a non-empty key replies "One or more scores can't be converted into double" until
something resets errno. When redis-server says that and shardis returns a result, the reply is
accepted; tests/integration/test_sort.py checks the real score errors.
"""

import diff_families

NUMS = ["1", "2", "3", "10", "-5", "1.5", "0", "007", "-0.5", "1e2", "100", "33"]
WORDS = ["a", "b", "c", "ab", "B", "10a"]
DEDICATED = ["{tag}sl", "{tag}sz"]
TAG_SOURCES = ["{tag}a", "{tag}b", "{tag}c"] + DEDICATED
DESTS = ["{tag}dst", "{tag}a", "k0", "k1", "user:{42}:x", "{tag}sl"]
BY_STAR = ["{tag}w*", "{tag}h*->f", "{tag}w*->", "{tag}h*->g", "{tag}*"]
GETS = ["#", "{tag}w*", "{tag}h*->f", "{tag}h*->", "nostar"]
OFFSETS = ["0", "1", "2", "-1", "5", "100", "x", "9223372036854775807", "-9223372036854775808"]
COUNTS = ["0", "1", "2", "3", "-1", "-5", "100", "9223372036854775807"]
SCORE_ERR = b"One or more scores can't be converted into double"


def choices(g):
    rng = g.rng

    def elem():
        return g.pick(NUMS) if rng.random() < 0.95 else g.pick(WORDS)

    def fill_list():
        return ["RPUSH", "{tag}sl", *[elem() for _ in range(rng.randint(1, 6))]]

    def fill_zset():
        args = []
        for _ in range(rng.randint(1, 5)):
            args += [str(rng.randint(-3, 6)), elem()]
        return ["ZADD", "{tag}sz", *args]

    def weights():
        # Distinct weights per element (a rotation of one permutation): no ALPHA BY ties among
        # elements that have one.
        pool = NUMS + WORDS
        shift = rng.randint(0, len(pool) - 1)
        args = []
        for i, e in enumerate(pool):
            w = str((i + shift) % len(pool)) if rng.random() < 0.9 else f"w{i}"
            args += [f"{{tag}}w{e}", w]
        return ["MSET", *args]

    def hash_weight():
        e = rng.choice(NUMS + WORDS)
        return ["HSET", f"{{tag}}h{e}", "f", g.pick(NUMS + ["x", ""]), "g", e]

    def sort_cmd():
        ro = rng.random() < 0.3
        r = rng.random()
        tagged = r < 0.7
        src = g.pick(DEDICATED) if r < 0.55 else (g.pick(TAG_SOURCES) if tagged else g.key())
        opts = []
        by = None
        alpha = rng.random() < 0.4
        r = rng.random()
        if r < 0.25:
            by = g.pick(["nosort", "constant", "#"])
        elif r < 0.5 and tagged:
            by = g.pick(BY_STAR)
        unordered = (by is not None and "*" not in by and src not in DEDICATED) or \
                    (alpha and by is not None and "*" in by and src != "{tag}sl")
        if by is not None:
            opts.append(["BY", by])
        if rng.random() < 0.4 and not (alpha and by and "*" in by):
            opts.append(["LIMIT", g.pick(OFFSETS), g.pick(COUNTS)])
        for _ in range(rng.choice((0, 0, 1, 2))):
            opts.append(["GET", g.pick(GETS) if tagged else g.pick(["#", "nostar"])])
        if rng.random() < 0.3:
            opts.append([g.pick(["DESC", "desc", "ASC"])])
        if alpha:
            opts.append([g.pick(["ALPHA", "alpha"])])
        # A numeric STORE would write where redis-server, under the stale-errno bug below, may
        # refuse to: STORE only with ALPHA or BY a constant (no number parsing).
        store = not ro and not unordered and (alpha or (by is not None and "*" not in by)) \
            and rng.random() < 0.5
        if store:
            opts.append(["STORE", g.pick(DESTS)])
        if unordered:
            opts = [o for o in opts if o[0] != "LIMIT"]
        rng.shuffle(opts)
        return ["SORT_RO" if ro else "SORT", src, *[a for o in opts for a in o]]

    def bad_sort():
        return g.pick([
            ["SORT"], ["SORT_RO"], ["SORT", g.key(), "LIMIT", "1"], ["SORT", g.key(), "BY"],
            ["SORT", g.key(), "GET"], ["SORT", g.key(), "FOO"], ["SORT_RO", g.key(), "STORE", "x"],
            ["SORT", g.key(), "LIMIT", "x", "1"], ["SORT", g.key(), "LIMIT", "1", "1.5"],
            ["SORT", g.key(), "STORE"], ["SORT", g.key(), "ALPHA", "FOO", "LIMIT", "x", "y"],
        ])

    return [
        (2, fill_list),
        (1.5, fill_zset),
        (1.5, lambda: ["DEL", g.pick(DEDICATED)]),
        (0.3, lambda: ["LTRIM", "{tag}sl", "0", "4"]),
        (1, weights),
        (1, hash_weight),
        (12, sort_cmd),
        (1.5, bad_sort),
        (2, lambda: ["LRANGE", g.pick(DESTS), "0", "-1"]),
    ]


def _groups(cmd, val):
    n = max(1, sum(1 for a in cmd if a.upper() == "GET"))
    return sorted(repr(val[i:i + n]) for i in range(0, len(val), n))


def match(cmd, val_a, val_b):
    name = cmd[0].upper()
    if name not in ("SORT", "SORT_RO"):
        return None
    if isinstance(val_a, bytes) and SCORE_ERR in val_a and isinstance(val_b, list):
        return True  # Redis 7.0's stale errno (see the top of the file)
    if not (isinstance(val_a, list) and isinstance(val_b, list)):
        return None
    upper = [a.upper() for a in cmd]
    by = cmd[upper.index("BY") + 1] if "BY" in upper[2:] else None
    src = cmd[1]
    const_by = by is not None and "*" not in by and src not in DEDICATED
    alpha_by = "ALPHA" in upper and by is not None and "*" in by and src != "{tag}sl"
    if const_by or alpha_by:
        return _groups(cmd, val_a) == _groups(cmd, val_b)
    return None
