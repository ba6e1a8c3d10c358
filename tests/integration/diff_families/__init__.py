"""Command generators for the differential test, one module per command family.

Each module (e.g. `lists.py`) defines:

    def choices(g) -> list[tuple[float, Callable[[], list[str]]]]
        weighted command makers; `g` is the test's Generator (g.rng, g.key(), g.keys(),
        g.value(), g.pick(seq), and the shared value lists in test_differential.py). Use the
        shared keyspace (g.key()) so that types clash with the other families' keys.

    def match(cmd, val_a, val_b) -> bool | None          (optional)
        for replies that legitimately differ byte for byte (order Redis does not define,
        random picks): True/False to decide, None to fall back to exact comparison.
        val_a is redis-server's parsed reply, val_b ours.

Modules are found automatically; test_differential.py runs all of them mixed in one stream and
each one alone (test_differential_family[<module>]).
"""

import importlib
import pkgutil
import re

ALL = [importlib.import_module(f"{__name__}.{m.name}")
       for m in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name)]


def unordered(val_a, val_b) -> bool:
    """Same elements in any order (SMEMBERS, HKEYS, ...)."""
    if isinstance(val_a, list) and isinstance(val_b, list):
        return sorted(map(repr, val_a)) == sorted(map(repr, val_b))
    return val_a == val_b


# A double as redis-server 7.0 writes it ("%.17g": "0.10000000000000001", "1e-07", "-inf") and
# as 7.2 does (d2string: no trailing zero after the point, no leading zero in the exponent).
_TEXT_70 = re.compile(rb"-?(inf|\d+(\.\d+)?(e[-+]\d+)?)")
_TEXT_72 = re.compile(rb"-?(inf|\d+(\.\d*[1-9])?(e[-+][1-9]\d*)?)")


def same_but_double_text(val_a, val_b) -> bool:
    """Replies equal but for the text of doubles, which Redis 7.2 changed: redis-server 7.0
    writes "%.17g" ("0.10000000000000001"), 7.2 and shardis d2string ("0.1"; its exact text is
    pinned in test_double_replies.py). Each bulk string that differs must be 7.0's "%.17g" text
    of a number that ours reads back as exactly; RESP3 doubles are parsed, so they compare as
    numbers already."""
    if type(val_a) is not type(val_b):
        return False
    if isinstance(val_a, list):
        return len(val_a) == len(val_b) and all(map(same_but_double_text, val_a, val_b))
    if isinstance(val_a, dict):
        return len(val_a) == len(val_b) and all(
            same_but_double_text(ka, kb) and same_but_double_text(va, vb)
            for (ka, va), (kb, vb) in zip(val_a.items(), val_b.items()))
    if type(val_a) is bytes and val_a != val_b:
        if not (_TEXT_70.fullmatch(val_a) and _TEXT_72.fullmatch(val_b)):
            return False
        number = float(val_a.decode())
        return b"%.17g" % number == val_a and float(val_b.decode()) == number
    return val_a == val_b
