"""Pub/sub on the stream's own connection: SUBSCRIBE/PSUBSCRIBE put it in subscribed state, where
Redis refuses most commands (RESP2) with one exact error; PUBSUB introspection; PUBLISH to
channels with no other subscriber. Only one channel per (un)subscription, so that every command
gets exactly one reply."""

CHANNELS = ["news", "n1", "sport", "", "ch:{tag}"]
PATTERNS = ["n*", "*", "sp?rt", "[ns]*"]


def choices(g):
    return [
        (0.6, lambda: ["SUBSCRIBE", g.pick(CHANNELS)]),
        (0.4, lambda: ["PSUBSCRIBE", g.pick(PATTERNS)]),
        (1.5, lambda: ["UNSUBSCRIBE", g.pick(CHANNELS)]),
        (1.0, lambda: ["PUNSUBSCRIBE", g.pick(PATTERNS)]),
        (1, lambda: ["PUBLISH", g.pick(CHANNELS), g.value()]),
        (0.5, lambda: ["PUBSUB", "NUMSUB", *[g.pick(CHANNELS) for _ in range(g.rng.randint(0, 3))]]),
        (0.5, lambda: ["PUBSUB", "NUMPAT"]),
        (0.3, lambda: ["PUBSUB", g.pick(["CHANNELS", "FOO", "NUMPAT"]), *g.pick([[], ["n*"]])]),
        (0.3, lambda: ["RESET"]),
    ]


def match(cmd, val_a, val_b):
    if cmd[0].upper() == "PUBSUB" and len(cmd) > 1 and cmd[1].upper() == "CHANNELS":
        if isinstance(val_a, list) and isinstance(val_b, list):
            return sorted(val_a) == sorted(val_b)
    return None
