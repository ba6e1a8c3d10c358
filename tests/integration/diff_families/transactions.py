"""MULTI, EXEC, DISCARD, WATCH, UNWATCH in the random stream: whatever the other families generate
gets queued between MULTI and EXEC, so EXEC's array holds their replies. WATCH on one connection
is failed by that connection's own writes, and by its expiries, exactly as in Redis.

EXEC replies are compared element by element, each with the rules of the command that produced
it (order-insensitive sets, random picks, TTL tolerance): the generator tracks which commands it
queued, so match() knows what each element answers."""

import diff_families


class Exec(list):
    """An EXEC command that remembers the commands queued since MULTI (as far as the generator
    can tell: the servers decide; a mismatch in length is compared exactly)."""

    queued: list


class _Tracker:
    """What the generator believes the connection's MULTI state is."""

    def __init__(self):
        self.in_multi = False
        self.queued = []

    def multi(self):
        if not self.in_multi:  # a nested MULTI is an error that changes nothing
            self.in_multi, self.queued = True, []
        return ["MULTI"]

    def exec(self):
        cmd = Exec(["EXEC"])
        cmd.queued = self.queued
        self.in_multi, self.queued = False, []
        return cmd

    def discard(self):
        self.in_multi, self.queued = False, []
        return ["DISCARD"]

    def note(self, cmd):
        """Called by the generator with every command it emits."""
        name = cmd[0].upper() if cmd else ""
        if self.in_multi and name not in ("MULTI", "EXEC", "DISCARD", "WATCH", "QUIT", "RESET"):
            self.queued.append(cmd)
        if name == "RESET":
            self.in_multi, self.queued = False, []


def choices(g):
    tracker = _Tracker()
    g.on_command = tracker.note
    return [
        (2, tracker.multi),
        (2, tracker.exec),
        (0.5, tracker.discard),
        (1.5, lambda: ["WATCH", *g.keys(1, 3)]),
        (0.5, lambda: ["UNWATCH"]),
    ]


def _element_match(cmd, a, b):
    if a == b:
        return True
    for family in diff_families.ALL:
        match = getattr(family, "match", None)
        if match is None or family is diff_families.transactions:
            continue
        verdict = match(cmd, a, b)
        if verdict is not None:
            return verdict
    name = cmd[0].upper()
    if name in ("TTL", "PTTL") and isinstance(a, int) and isinstance(b, int) and a >= 0 and b >= 0:
        return abs(a - b) <= (1 if name == "TTL" else 1500)
    if name == "KEYS" and isinstance(a, list) and isinstance(b, list):
        return sorted(a) == sorted(b)
    return False


def match(cmd, val_a, val_b):
    if not isinstance(cmd, Exec):
        return None
    if not (isinstance(val_a, list) and isinstance(val_b, list)) or len(val_a) != len(val_b):
        return None
    if len(cmd.queued) != len(val_a):
        return None  # the generator lost track (e.g. a queue-time error): compare exactly
    return all(_element_match(q, a, b) for q, a, b in zip(cmd.queued, val_a, val_b))
