"""Differential test: one seeded random command stream goes to the Debian redis-server and to the
server under test; every reply must match byte for byte.

Exceptions to exact comparison, where replies legitimately differ: TTL and PTTL (the two servers
set the expiry a few milliseconds apart: compared with a tolerance), KEYS (order: compared
sorted) and doubles, whose text Redis 7.2 changed (redis-server 7.0's "0.10000000000000001" is
7.2's "0.1": compared as numbers, see diff_families.same_but_double_text). INFO, CLIENT ID and
the like are not sent at all.

Longer runs: SHARDIS_DIFF_SEED / SHARDIS_DIFF_COUNT, or pytest --diff-seed / --diff-count.
"""

import os
import random
import time

import pytest

import diff_families
from conftest import RespConn

DEFAULT_SEED = 20240601
DEFAULT_COUNT = 4000

KEYS = [f"k{i}" for i in range(8)] + ["n0", "n1", "n2", "f0", "f1", "{tag}a", "{tag}b",
                                       "{tag}c", "user:{42}:x", "", "key with space"]
VALUES = ["", "v", "hello", "0", "1", "-1", "42", "007", " 1", "1 ", "+5", "abc",
          "9223372036854775807", "-9223372036854775808", "9223372036854775806",
          "3.14", "1e3", "10.50", "0.1", "-0.0", "x" * 40, "\x00\xff\r\n"]
INT_ARGS = ["1", "-1", "5", "100", "-100", "0", "9223372036854775807",
            "-9223372036854775808", "abc", "1.5", "", "01", "+1"]
FLOAT_ARGS = ["0.1", "-0.1", "1.5", "1e3", "-2", "3.0", "5.0e3", "abc", "", "inf", "-inf",
              "1e400", "0x10", "  2", ".5", "5.", "100000000000000000000"]
REL_SECONDS = ["100", "1000", "10000", "0", "-1", "abc", "9223372036854775807"]
REL_MILLIS = ["100000", "1000000", "0", "-5", "x"]
GLOBS = ["*", "k*", "k?", "*a", "{tag}*", "n[0-1]", "[^k]*", "f\\0", "user:*", "*:*", "nomatch"]
UNKNOWN = ["foo", "FOOBAR", "getx", "sett"]


def resolve(option_value, env_name, default):
    if option_value is not None:
        return int(option_value)
    if os.environ.get(env_name):
        return int(os.environ[env_name])
    return default


class Generator:
    """Random but reproducible commands over a small keyspace."""

    def __init__(self, seed: int, families=None, base_weight: float = 1.0):
        """families: the diff_families modules to draw from (default: all of them);
        base_weight scales this file's own string and keyspace commands."""
        self.rng = random.Random(seed)
        self.families = diff_families.ALL if families is None else families
        self.base_weight = base_weight
        self.on_command = None  # a family may set it to see every command emitted
        self._choices = None
        base = int(time.time())
        # Absolute times far apart from each other and from now + any relative TTL above, so
        # GT/LT decisions cannot depend on which millisecond a server ran the command in.
        self.abs_seconds = [str(base + 500), str(base + 5000), str(base + 50000), "1", "abc"]
        self.abs_millis = [str((base + 700) * 1000), str((base + 7000) * 1000), "5000", "-1"]

    def key(self):
        return self.rng.choice(KEYS)

    def keys(self, lo=1, hi=5):
        return [self.key() for _ in range(self.rng.randint(lo, hi))]

    def value(self):
        return self.rng.choice(VALUES)

    def pick(self, seq):
        return self.rng.choice(seq)

    def set_options(self):
        rng = self.rng
        opts = []
        for _ in range(rng.choice((0, 0, 1, 1, 2, 3))):
            kind = rng.choice(("EX", "PX", "EXAT", "PXAT", "NX", "XX", "GET", "KEEPTTL", "BAD"))
            if kind == "EX":
                opts += ["EX", self.pick(REL_SECONDS)]
            elif kind == "PX":
                opts += ["PX", self.pick(REL_MILLIS)]
            # No past times for SET: Redis keeps such a key (already expired) in DBSIZE until
            # its expiry cycle or an access removes it, so DBSIZE would depend on timing.
            elif kind == "EXAT":
                opts += ["EXAT", self.pick(self.abs_seconds[:3] + ["abc", "0"])]
            elif kind == "PXAT":
                opts += ["PXAT", self.pick(self.abs_millis[:2] + ["-1"])]
            elif kind == "BAD":
                opts.append(self.pick(["FOO", "EX", "PXX"]))
            else:
                opts.append(kind.lower() if rng.random() < 0.2 else kind)
        return opts

    def command(self):
        if self._choices is None:
            self._choices = [(w * self.base_weight, f) for w, f in self.base_choices()]
            for family in self.families:
                self._choices += family.choices(self)
        choices = self._choices
        total = sum(w for w, _ in choices)
        x = self.rng.random() * total
        cmd = choices[-1][1]
        for w, make in choices:
            x -= w
            if x <= 0:
                cmd = make
                break
        cmd = cmd()
        if self.on_command is not None:
            self.on_command(cmd)
        return cmd

    def base_choices(self):
        rng = self.rng
        # Weighted choice of a command.
        return [
            (10, lambda: ["SET", self.key(), self.value(), *self.set_options()]),
            (10, lambda: ["GET", self.key()]),
            (2, lambda: ["SETNX", self.key(), self.value()]),
            (2, lambda: ["SETEX", self.key(), self.pick(REL_SECONDS), self.value()]),
            (2, lambda: ["PSETEX", self.key(), self.pick(REL_MILLIS), self.value()]),
            (2, lambda: ["GETSET", self.key(), self.value()]),
            (2, lambda: ["GETDEL", self.key()]),
            (3, lambda: ["GETEX", self.key(), *self.pick([
                [], ["PERSIST"], ["EX", self.pick(REL_SECONDS)], ["PX", self.pick(REL_MILLIS)],
                ["EXAT", self.pick(self.abs_seconds)], ["PXAT", self.pick(self.abs_millis)],
                ["EX", "10", "PERSIST"], ["FOO"]])]),
            (4, lambda: ["MGET", *self.keys()]),
            (3, lambda: ["MSET", *[x for k in self.keys(1, 4) for x in (k, self.value())]]),
            (1, lambda: ["MSET", *self.keys(1, 3)]),
            (6, lambda: [self.pick(["INCR", "DECR"]), self.key()]),
            (5, lambda: [self.pick(["INCRBY", "DECRBY"]), self.key(), self.pick(INT_ARGS)]),
            (5, lambda: ["INCRBYFLOAT", self.key(), self.pick(FLOAT_ARGS)]),
            (3, lambda: ["APPEND", self.key(), self.value()]),
            (2, lambda: ["STRLEN", self.key()]),
            (3, lambda: ["GETRANGE", self.key(), str(rng.randint(-12, 12)),
                         str(rng.choice([rng.randint(-12, 12), 100, -100]))]),
            (3, lambda: ["SETRANGE", self.key(), str(rng.choice([0, 1, 3, 7, 20, -1])),
                         self.value()]),
            (3, lambda: [self.pick(["DEL", "UNLINK"]), *self.keys(1, 4)]),
            (3, lambda: ["EXISTS", *self.keys(1, 4)]),
            (1, lambda: ["TOUCH", *self.keys(1, 4)]),
            # Relative expiry only with NX/XX (see Generator.__init__), never short enough
            # to expire during the run.
            (3, lambda: [*self.pick([["EXPIRE", self.key(), self.pick(REL_SECONDS)],
                                     ["PEXPIRE", self.key(), self.pick(REL_MILLIS)]]),
                         *self.pick([[], [], ["NX"], ["XX"], ["NX", "XX"], ["GT", "LT"],
                                     ["BOGUS"]])]),
            (3, lambda: ["EXPIREAT", self.key(), self.pick(self.abs_seconds),
                         *self.pick([[], ["NX"], ["XX"], ["GT"], ["LT"], ["LT", "XX"]])]),
            (2, lambda: ["PEXPIREAT", self.key(), self.pick(self.abs_millis),
                         *self.pick([[], ["NX"], ["XX"], ["GT"], ["LT"], ["GT", "NX"]])]),
            (4, lambda: [self.pick(["TTL", "PTTL"]), self.key()]),
            (2, lambda: ["PERSIST", self.key()]),
            (2, lambda: ["TYPE", self.key()]),
            (2, lambda: ["DBSIZE"]),
            (2, lambda: ["KEYS", self.pick(GLOBS)]),
            (1, lambda: ["SELECT", self.pick(["0", "0", "1", "2", "16", "x"])]),
            (1, lambda: ["ECHO", self.value()]),
            (1, lambda: ["PING", *self.pick([[], [self.value()]])]),
            (1, lambda: [self.pick(UNKNOWN), *self.keys(0, 2)]),
            (1, lambda: [self.pick(["GET", "SET", "INCR", "EXPIRE", "MGET", "GETRANGE"])]),
            (0.3, lambda: ["FLUSHDB"]),
            (0.1, lambda: ["FLUSHALL"]),
        ]


def replies_match(cmd, raw_a, val_a, raw_b, val_b) -> bool:
    name = cmd[0].upper()
    if raw_a == raw_b:
        return True
    for family in diff_families.ALL:
        match = getattr(family, "match", None)
        verdict = match(cmd, val_a, val_b) if match else None
        if verdict is not None:
            return verdict
    if name in ("TTL", "PTTL") and isinstance(val_a, int) and isinstance(val_b, int):
        if val_a < 0 or val_b < 0:
            return False
        return abs(val_a - val_b) <= (1 if name == "TTL" else 1500)
    if name == "KEYS" and isinstance(val_a, list) and isinstance(val_b, list):
        return sorted(val_a) == sorted(val_b)
    return diff_families.same_but_double_text(val_a, val_b)


def run_stream(ref: RespConn, sut: RespConn, seed: int, count: int, gen=None):
    gen = gen or Generator(seed)
    rng = random.Random(seed + 1)
    history = []
    done = 0
    while done < count:
        batch = [gen.command() for _ in range(min(count - done, rng.choice((1, 1, 5, 20, 64))))]
        payload = b"".join(RespConn.encode(*c) for c in batch)
        ref.send(payload)
        sut.send(payload)
        for cmd in batch:
            raw_a, val_a = ref.read_reply()
            raw_b, val_b = sut.read_reply()
            history.append((cmd, raw_a))
            if not replies_match(cmd, raw_a, val_a, raw_b, val_b):
                context = "\n".join(f"  {c!r} -> {a!r}" for c, a in history[-15:-1])
                pytest.fail(
                    f"reply mismatch at command #{done} (seed {seed}):\n"
                    f"  command:      {cmd!r}\n"
                    f"  redis-server: {raw_a!r}\n"
                    f"  under test:   {raw_b!r}\n"
                    f"previous commands (with redis-server's replies):\n{context}",
                    pytrace=False)
            done += 1
    # Leave both connections in a known state (no MULTI, no subscriptions) for what follows.
    for conn in (ref, sut):
        conn.send(RespConn.encode("RESET"))
    assert ref.read_reply()[1] == sut.read_reply()[1]
    return done


@pytest.fixture
def diff_params(request):
    seed = resolve(request.config.getoption("--diff-seed"), "SHARDIS_DIFF_SEED", DEFAULT_SEED)
    count = resolve(request.config.getoption("--diff-count"), "SHARDIS_DIFF_COUNT",
                    DEFAULT_COUNT)
    return seed, count


@pytest.fixture(scope="module", autouse=True)
def reference_times_out_promptly(redis_server):
    """The reference checks blocked clients' timeouts once per `hz` tick (10 by default), so each
    1 ms BLPOP timeout in the stream took up to 100 ms there; at hz 100 it takes up to 10 ms.
    Replies do not depend on it."""
    conn = redis_server.raw()
    assert conn.call("CONFIG", "SET", "hz", "100") == b"OK"
    yield
    conn.call("CONFIG", "SET", "hz", "10")
    conn.close()


def test_differential_random_stream(server, r, redis_server, diff_params):
    seed, count = diff_params
    ref, sut = redis_server.raw(timeout=30), server.raw(timeout=30)
    try:
        for conn in (ref, sut):
            assert conn.call("FLUSHALL") == b"OK"
        assert run_stream(ref, sut, seed, count) == count
        # Finally, the whole keyspace must be equal in every database we used.
        for db in ("0", "1", "2"):
            for conn in (ref, sut):
                conn.call("SELECT", db)
            keys_a, keys_b = sorted(ref.call("KEYS", "*")), sorted(sut.call("KEYS", "*"))
            assert keys_a == keys_b, f"db {db}"
            if keys_a:
                assert ref.call("MGET", *keys_a) == sut.call("MGET", *keys_b), f"db {db}"
    finally:
        ref.close()
        sut.close()


def test_differential_two_connections(server, r, redis_server, diff_params):
    """Two connections per server, in different databases, interleaved."""
    seed, count = diff_params
    refs = [redis_server.raw(timeout=30) for _ in range(2)]
    suts = [server.raw(timeout=30) for _ in range(2)]
    try:
        refs[0].call("FLUSHALL")
        suts[0].call("FLUSHALL")
        for conns in (refs, suts):
            conns[1].call("SELECT", "1")
        per_round = 200
        rounds = max(1, count // (2 * per_round))
        for i in range(rounds):
            for j in (0, 1):
                run_stream(refs[j], suts[j], seed + 1000 * i + j, per_round)
    finally:
        for c in refs + suts:
            c.close()


@pytest.mark.parametrize("family", diff_families.ALL,
                         ids=[f.__name__.rsplit(".", 1)[-1] for f in diff_families.ALL])
def test_differential_family(server, r, redis_server, diff_params, family):
    """One family's commands (with a few string and keyspace commands so that types clash)."""
    seed, count = diff_params
    ref, sut = redis_server.raw(timeout=30), server.raw(timeout=30)
    try:
        for conn in (ref, sut):
            assert conn.call("FLUSHALL") == b"OK"
        gen = Generator(seed, families=[family], base_weight=0.1)
        assert run_stream(ref, sut, seed, count, gen=gen) == count
    finally:
        ref.close()
        sut.close()
