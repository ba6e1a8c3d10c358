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

ALL = [importlib.import_module(f"{__name__}.{m.name}")
       for m in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name)]


def unordered(val_a, val_b) -> bool:
    """Same elements in any order (SMEMBERS, HKEYS, ...)."""
    if isinstance(val_a, list) and isinstance(val_b, list):
        return sorted(map(repr, val_a)) == sorted(map(repr, val_b))
    return val_a == val_b
