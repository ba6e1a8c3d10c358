"""The memcached text protocol on --memcached_port: raw sockets, pymemcache, a differential
stream against the Debian memcached (for the replies both define), and the keyspace shared with
RESP (database 0)."""
from __future__ import annotations

import collections
import random
import re
import shutil
import socket
import subprocess
import time

import pytest
import redis

from conftest import free_port, wait_for

MEMCACHED_BIN = shutil.which("memcached") or "/usr/bin/memcached"


class McConn:
    """A raw memcached text-protocol connection."""

    def __init__(self, port: int, timeout: float = 10.0):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self.buf = b""
        self.step = 0

    def close(self):
        self.sock.close()

    def send(self, data: bytes):
        self.sock.sendall(data)

    def read_until(self, suffix: bytes) -> bytes:
        while not self.buf.endswith(suffix):
            chunk = self.sock.recv(1 << 20)
            if not chunk:
                raise ConnectionError(f"closed; got {self.buf[:200]!r}")
            self.buf += chunk
        out, self.buf = self.buf, b""
        return out

    def run(self, data: bytes) -> bytes:
        """Sends data and returns every reply it produced (delimited by a unique sentinel)."""
        self.step += 1
        tag = b"s%d" % self.step
        sentinel = b"set __sentinel 0 0 %d\r\n%s\r\nget __sentinel\r\n" % (len(tag), tag)
        expected = b"STORED\r\nVALUE __sentinel 0 %d\r\n%s\r\nEND\r\n" % (len(tag), tag)
        self.send(data + sentinel)
        return self.read_until(expected)[: -len(expected)]

    def closed_after(self, data: bytes) -> bytes:
        self.send(data)
        out = b""
        while True:
            chunk = self.sock.recv(65536)
            if not chunk:
                return out
            out += chunk


def start_memcached(port: int) -> subprocess.Popen:
    argv = [MEMCACHED_BIN, "-p", str(port), "-U", "0", "-l", "127.0.0.1", "-t", "1"]
    if hasattr(__import__("os"), "geteuid") and __import__("os").geteuid() == 0:
        argv += ["-u", "root"]
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def up():
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return True
        except OSError:
            return False

    wait_for(up, 10)
    return proc


@pytest.fixture(scope="module")
def memcached():
    """The Debian memcached on a free port: the reference for the differential test."""
    if not shutil.which("memcached"):
        pytest.fail("memcached is not installed (scripts/install-deps.sh test installs it)",
                    pytrace=False)
    port = free_port()
    proc = start_memcached(port)
    yield port
    proc.terminate()
    proc.wait(10)


@pytest.fixture(params=[1, 2], ids=["threads1", "threads2"])
def mc(request, server_factory):
    """(shardis Server, memcached port) with --memcached_port, for --threads 1 and 2."""
    port = free_port()
    srv = server_factory(threads=request.param, args=[f"--memcached_port={port}"])

    def up():
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return True
        except OSError:
            return False

    wait_for(up, 10)
    return srv, port


def test_off_by_default(server_factory):
    srv = server_factory(threads=1)
    assert srv.client().ping()
    # No listener on any memcached port: the process only has its RESP port (checked by flag).
    out = subprocess.run([srv.binary, "--helpfull"], capture_output=True, text=True).stdout
    assert "-memcached_port" in out and 'default: 0' in out.split("-memcached_port", 1)[1][:300]


def test_basic_commands(mc):
    srv, port = mc
    c = McConn(port)
    assert c.run(b"set a 5 0 3\r\nabc\r\n") == b"STORED\r\n"
    assert c.run(b"get a\r\n") == b"VALUE a 5 3\r\nabc\r\nEND\r\n"
    assert c.run(b"add a 0 0 1\r\nx\r\n") == b"NOT_STORED\r\n"
    assert c.run(b"replace zz 0 0 1\r\nx\r\n") == b"NOT_STORED\r\n"
    assert c.run(b"append a 9 0 2\r\nde\r\nprepend a 9 0 1\r\n_\r\n") == b"STORED\r\nSTORED\r\n"
    assert c.run(b"get a\r\n") == b"VALUE a 5 6\r\n_abcde\r\nEND\r\n"  # flags kept
    out = c.run(b"gets a\r\n")
    m = re.match(rb"VALUE a 5 6 (\d+)\r\n_abcde\r\nEND\r\n$", out)
    assert m, out
    unique = int(m.group(1))
    assert c.run(b"gets a\r\n") == out  # stable until the key changes
    assert c.run(b"cas a 7 0 1 %d\r\nz\r\n" % (unique + 1)) == b"EXISTS\r\n"
    assert c.run(b"cas a 7 0 1 %d\r\nz\r\n" % unique) == b"STORED\r\n"
    assert c.run(b"cas a 7 0 1 %d\r\nz\r\n" % unique) == b"EXISTS\r\n"
    assert c.run(b"cas nokey 0 0 1 1\r\nz\r\n") == b"NOT_FOUND\r\n"
    assert c.run(b"get a\r\n") == b"VALUE a 7 1\r\nz\r\nEND\r\n"
    assert c.run(b"delete a\r\ndelete a\r\n") == b"DELETED\r\nNOT_FOUND\r\n"
    assert c.run(b"set n 0 0 2\r\n10\r\nincr n 5\r\ndecr n 100\r\nget n\r\n") == \
        b"STORED\r\n15\r\n0\r\nVALUE n 0 2\r\n0 \r\nEND\r\n"
    assert c.run(b"set n 0 0 20\r\n18446744073709551615\r\nincr n 1\r\n") == b"STORED\r\n0\r\n"
    assert c.run(b"incr nokey 1\r\nincr a x\r\n") == \
        b"NOT_FOUND\r\nCLIENT_ERROR invalid numeric delta argument\r\n"
    assert c.run(b"set s 0 0 1\r\nx\r\nincr s 1\r\n") == \
        b"STORED\r\nCLIENT_ERROR cannot increment or decrement non-numeric value\r\n"
    assert c.run(b"touch s 100\r\ntouch nokey 1\r\n") == b"TOUCHED\r\nNOT_FOUND\r\n"
    assert c.run(b"set e 0 -1 1\r\nx\r\nget e\r\n") == b"STORED\r\nEND\r\n"
    assert c.run(b"set r 0 1 1\r\nx\r\n") == b"STORED\r\n"
    assert srv.client().pttl("r") > 0  # relative seconds
    far = int(time.time()) + 3600
    assert c.run(b"set abs 0 %d 1\r\nx\r\n" % far) == b"STORED\r\n"
    assert 3500_000 < srv.client().pttl("abs") <= 3600_000  # absolute Unix time
    assert c.run(b"set past 0 %d 1\r\nx\r\nget past\r\n" % (int(time.time()) - 3600 * 24 * 60)) \
        == b"STORED\r\nEND\r\n"
    time.sleep(1.1)
    assert c.run(b"get r\r\n") == b"END\r\n"
    assert c.run(b"gat 100 s\r\n") == b"VALUE s 0 1\r\nx\r\nEND\r\n"
    assert srv.client().ttl("s") == 100
    assert c.run(b"version\r\nverbosity 1\r\n").startswith(b"VERSION ")
    assert c.run(b"flush_all\r\nget s\r\n") == b"OK\r\nEND\r\n"
    assert c.closed_after(b"quit\r\n") == b""
    c.close()


def test_noreply_and_errors(mc):
    _, port = mc
    c = McConn(port)
    assert c.run(b"set a 0 0 1 noreply\r\nx\r\nadd a 0 0 1 noreply\r\ny\r\n"
                 b"incr a 1 noreply\r\ndelete b noreply\r\ntouch a 1 noreply\r\n"
                 b"flush_all noreply\r\nverbosity 1 noreply\r\n") == b""
    assert c.run(b"GET a\r\n\r\nget\r\nset a 0 0\r\n") == b"ERROR\r\nERROR\r\nERROR\r\nERROR\r\n"
    bad = b"CLIENT_ERROR bad command line format\r\n"
    assert c.run(b"set " + b"k" * 251 + b" 0 0 1\r\n") == bad
    assert c.run(b"get a " + b"k" * 251 + b"\r\n") == bad
    assert c.run(b"set " + b"k" * 250 + b" 0 0 1\r\nz\r\n") == b"STORED\r\n"
    assert c.run(b"set a -1 0 1\r\n") == bad
    assert c.run(b"set a 0 0 1\r\nxy\r\n") == b"CLIENT_ERROR bad data chunk\r\nERROR\r\n"
    assert c.run(b"delete a 5\r\n") == \
        b"CLIENT_ERROR bad command line format.  Usage: delete <key> [noreply]\r\n"
    big = 2 * 1024 * 1024
    assert c.run(b"set big 0 0 1\r\nz\r\nset big 0 0 %d\r\n" % big + b"x" * big +
                 b"\r\nget big\r\n") == \
        b"STORED\r\nSERVER_ERROR object too large for cache\r\nEND\r\n"
    # A line with no end closes the connection, as memcached does.
    assert c.closed_after(b"x" * 5000) == b""


def test_shared_keyspace_with_resp(mc):
    srv, port = mc
    r = srv.client()
    c = McConn(port)
    for i in range(20):
        assert c.run(b"set k%d 3 0 2\r\nv%d\r\n" % (i, i % 10)) == b"STORED\r\n"
    assert r.mget([f"k{i}" for i in range(20)]) == [b"v%d" % (i % 10) for i in range(20)]
    r.set("resp", "hello")
    assert c.run(b"get resp\r\n") == b"VALUE resp 0 5\r\nhello\r\nEND\r\n"
    # A RESP write invalidates the CAS unique and the flags.
    m = re.match(rb"VALUE k1 3 2 (\d+)\r\n", c.run(b"gets k1\r\n"))
    unique = int(m.group(1))
    r.set("k1", "new")
    assert c.run(b"get k1\r\n") == b"VALUE k1 0 3\r\nnew\r\nEND\r\n"
    assert c.run(b"cas k1 0 0 1 %d\r\nx\r\n" % unique) == b"EXISTS\r\n"
    m = re.match(rb"VALUE k1 0 3 (\d+)\r\n", c.run(b"gets k1\r\n"))
    assert int(m.group(1)) != unique
    r.append("k1", "!")
    assert c.run(b"cas k1 0 0 1 %s\r\nx\r\n" % m.group(1)) == b"EXISTS\r\n"
    # Multi-key RESP writes too.
    m = re.match(rb"VALUE k2 3 2 (\d+)\r\n", c.run(b"gets k2\r\n"))
    r.mset({"k2": "m", "other": "o"})
    assert c.run(b"cas k2 0 0 1 %s\r\nx\r\n" % m.group(1)) == b"EXISTS\r\n"
    # memcached counters are RESP integers and back.
    r.set("cnt", 41)
    assert c.run(b"incr cnt 1\r\n") == b"42\r\n"
    assert r.incr("cnt") == 43
    # A non-string key is a miss for memcached.
    r.rpush("list", "x")
    assert c.run(b"get list\r\n") == b"END\r\n"
    assert c.run(b"delete list\r\n") == b"DELETED\r\n"
    assert r.exists("list") == 0
    # flush_all empties database 0 only.
    r1 = srv.client(db=1)
    r1.set("db1", "x")
    assert c.run(b"flush_all\r\n") == b"OK\r\n"
    # (the only key left is McConn.run's sentinel, set after the flush)
    assert r.keys("*") == [b"__sentinel"] and r1.get("db1") == b"x"


def test_multiget_order_across_shards(mc):
    _, port = mc
    c = McConn(port)
    keys = [b"key:%d" % i for i in range(50)]
    for k in keys[::2]:
        assert c.run(b"set %s 1 0 %d\r\n%s\r\n" % (k, len(k), k)) == b"STORED\r\n"
    order = keys[::-1] + keys[:5]
    out = c.run(b"get " + b" ".join(order) + b"\r\n")
    expected = b"".join(b"VALUE %s 1 %d\r\n%s\r\n" % (k, len(k), k)
                        for k in order if int(k.split(b":")[1]) % 2 == 0) + b"END\r\n"
    assert out == expected
    out = c.run(b"gets " + b" ".join(order) + b"\r\n")
    assert len(re.findall(rb"VALUE key:\d+ 1 \d+ \d+\r\n", out)) == len(expected.split(b"VALUE")) - 1


def test_delayed_flush_all(mc):
    _, port = mc
    c = McConn(port)
    assert c.run(b"set a 0 0 1\r\nx\r\nflush_all 1\r\nget a\r\n") == \
        b"STORED\r\nOK\r\nVALUE a 0 1\r\nx\r\nEND\r\n"
    time.sleep(1.5)
    assert c.run(b"get a\r\n") == b"END\r\n"


def test_shutdown_with_pending_flush_and_open_clients(mc):
    srv, port = mc
    c = McConn(port)
    assert c.run(b"flush_all 1000\r\n") == b"OK\r\n"
    c.send(b"set a 0 0 5\r\nab")  # a command half sent
    start = time.monotonic()
    srv.stop_and_check()
    assert time.monotonic() - start < 5


def test_stats(mc):
    _, port = mc
    c = McConn(port)
    c.run(b"stats reset\r\n")
    c.run(b"set a 0 0 1\r\nx\r\nget a b\r\n")
    c.send(b"stats\r\n")
    out = c.read_until(b"END\r\n").decode()
    stats = dict(line.split(" ", 2)[1:] for line in out.splitlines() if line.startswith("STAT"))
    for name in ("pid", "uptime", "time", "version", "curr_connections", "total_connections",
                 "cmd_get", "cmd_set", "get_hits", "get_misses", "curr_items", "threads",
                 "bytes", "total_items", "cas_badval", "touch_hits", "delete_hits"):
        assert name in stats, name
    assert int(stats["cmd_get"]) >= 2 and int(stats["get_hits"]) >= 1
    assert int(stats["get_misses"]) >= 1 and int(stats["cmd_set"]) >= 1
    assert int(stats["curr_connections"]) >= 1
    assert abs(int(stats["time"]) - time.time()) < 5


def test_pymemcache(mc):
    try:
        import pymemcache.client.base as pymemcache
    except ImportError:
        pytest.fail("python3-pymemcache is not installed (scripts/install-deps.sh test)",
                    pytrace=False)
    srv, port = mc
    client = pymemcache.Client(("127.0.0.1", port), default_noreply=False)
    assert client.set("pk", b"value", expire=100, flags=12) is True
    assert client.get("pk") == b"value"
    value, cas = client.gets("pk")
    assert value == b"value"
    assert client.cas("pk", b"v2", cas) is True
    assert client.cas("pk", b"v3", cas) is False
    assert client.add("pk", b"x") is False
    assert client.incr("missing", 1) is None
    client.set("num", b"10")
    assert client.incr("num", 5) == 15
    assert client.decr("num", 20) == 0
    keys = {f"many{i}": f"v{i}".encode() for i in range(30)}
    client.set_many(keys)
    assert client.get_many(list(keys) + ["absent"]) == keys
    assert client.delete("pk") is True
    assert client.touch("num", 50) is True
    assert client.version()
    stats = client.stats()
    assert b"curr_items" in stats or "curr_items" in stats
    assert srv.client().get("many3") == b"v3"
    client.flush_all()
    assert client.get("num") is None
    client.close()


# --- differential against memcached --------------------------------------------------------

KEYS = [b"a", b"b", b"c", b"num", b"x" * 250]
COUNTERLESS = [b"a", b"b"]  # the keys append/prepend use, and incr/decr do not


def _random_step(g: random.Random) -> tuple[str, bytes | None]:
    k = g.choice(KEYS)
    noreply = b" noreply" if g.random() < 0.1 else b""
    val = g.choice([b"", b"1", b"42", b"18446744073709551614", b"hello", b" 7", b"v" * 50])
    flags = g.choice([0, 0, 1, 4294967295])
    exp = g.choice([0, 0, 0, 100, 3000000000, -1])
    r = g.random()
    if r < 0.25:
        cmd = g.choice([b"set", b"add", b"replace", b"append", b"prepend"])
        if cmd in (b"append", b"prepend"):
            k = g.choice(COUNTERLESS)  # never a value incr/decr may have padded (see _normalize)
        return "plain", b"%s %s %d %d %d%s\r\n%s\r\n" % (cmd, k, flags, exp, len(val), noreply, val)
    if r < 0.32:
        return "cas", b"cas %s %d %d %d {cas}%s\r\n%s\r\n" % (k, flags, exp, len(val), noreply,
                                                              val)
    if r < 0.5:
        cmd = g.choice([b"get", b"gets"])
        return "plain", b"%s %s\r\n" % (cmd, b" ".join(g.choice(KEYS) for _ in range(g.randint(1, 4))))
    if r < 0.55:
        return "plain", b"gat %d %s\r\n" % (g.choice([0, 100]), k)
    if r < 0.7:
        cmd = g.choice([b"incr", b"decr"])
        k = g.choice([key for key in KEYS if key not in COUNTERLESS])
        delta = g.choice([b"1", b"5", b"18446744073709551615", b"x", b"-1"])
        return "plain", b"%s %s %s%s\r\n" % (cmd, k, delta, noreply)
    if r < 0.78:
        return "plain", b"delete %s%s\r\n" % (k, noreply)
    if r < 0.83:
        return "plain", b"touch %s %d%s\r\n" % (k, g.choice([0, 100, -1]), noreply)
    if r < 0.85:
        return "plain", b"flush_all\r\n"
    return "plain", g.choice([
        b"bogus\r\n", b"GET a\r\n", b"set a 0 0\r\n", b"set a x 0 1\r\n",
        b"set " + b"k" * 251 + b" 0 0 1\r\n", b"set a 0 0 1\r\nxyz\r\n", b"incr a\r\n",
        b"delete a 1\r\n", b"touch a x\r\n", b"verbosity 1\r\n", b"get\r\n", b"\r\n",
        b"set a 0 0 -1\r\n", b"cas a 0 0 1 x\r\n",
    ])


def _normalize(reply: bytes, cas_seen: dict) -> bytes:
    """Replaces CAS uniques (they differ between servers) by a marker, remembering the last one
    each key got, so that later `cas` commands can use it; and drops the trailing spaces of
    values, with their byte count: memcached pads a number that incr/decr made shorter when it
    rewrites the item in place, which it does only when no other thread holds the item (so its
    own replies vary from run to run)."""
    out = b""
    while reply:
        m = re.match(rb"VALUE (\S+) (\d+) (\d+)( \d+)?\r\n", reply)
        if not m:
            line, sep, reply = reply.partition(b"\r\n")
            out += line + sep
            continue
        n = int(m.group(3))
        data = reply[m.end():m.end() + n].rstrip(b" ")
        reply = reply[m.end() + n + 2:]
        if m.group(4):
            cas_seen[m.group(1)] = m.group(4).strip()
        out += b"VALUE %s %s %d%s\r\n%s\r\n" % (m.group(1), m.group(2), len(data),
                                                b" <cas>" if m.group(4) else b"", data)
    return out


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_differential_against_memcached(mc, memcached, seed):
    _, port = mc
    ours, ref = McConn(port), McConn(memcached)
    ref.run(b"flush_all\r\n")
    ours.run(b"flush_all\r\n")
    g = random.Random(seed)
    cas_ours: dict = {}
    cas_ref: dict = {}
    replies: collections.Counter = collections.Counter()
    for i in range(400):
        kind, data = _random_step(g)
        if kind == "cas":
            key = data.split(b" ")[1]
            # Each server gets the unique it gave out (or a stale one), so both agree.
            fresh = g.random() < 0.7
            d_ours = data.replace(b"{cas}", cas_ours.get(key, b"1") if fresh else b"999999999")
            d_ref = data.replace(b"{cas}", cas_ref.get(key, b"1") if fresh else b"999999999")
        else:
            d_ours = d_ref = data
        got = _normalize(ours.run(d_ours), cas_ours)
        want = _normalize(ref.run(d_ref), cas_ref)
        replies[want.split(b"\r\n")[0] if want else b""] += 1
        assert got == want, f"step {i}: {data!r}"
    # The stream reached the interesting outcomes, not only errors.
    for outcome in (b"STORED", b"NOT_STORED", b"EXISTS", b"NOT_FOUND", b"DELETED", b"TOUCHED",
                    b"END", b"ERROR", b"CLIENT_ERROR bad command line format"):
        assert replies[outcome] > 0, (outcome, replies)
    assert any(k.startswith(b"VALUE") for k in replies), replies
    assert any(k.isdigit() for k in replies), replies


@pytest.mark.parametrize("seed", [4, 5])
def test_pipelined_differential_against_memcached(mc, memcached, seed):
    """Whole pipelines of mixed commands (keys on every shard, multi-key gets, errors, noreply,
    flush_all) in one write each: the replies match memcached's, in order."""
    _, port = mc
    ours, ref = McConn(port), McConn(memcached)
    ref.run(b"flush_all\r\n")
    ours.run(b"flush_all\r\n")
    g = random.Random(seed)
    for round_no in range(40):
        steps = []
        while len(steps) < g.randint(2, 60):
            kind, data = _random_step(g)
            if kind == "plain":
                steps.append(data)
        payload = b"".join(steps)
        got, want = _normalize(ours.run(payload), {}), _normalize(ref.run(payload), {})
        assert got == want, f"round {round_no}: {payload!r}"


def test_memtier_style_load(mc):
    """The request shapes of memtier_benchmark --protocol=memcache_text (which Debian does not
    package): `set <key> 0 <exptime> <bytes>`, `get <key>` and multi-key `get`, pipelined on
    several connections at once, keys spread over every shard; every reply must come back whole
    and in order."""
    srv, port = mc
    conns = [McConn(port) for _ in range(8)]
    rng = random.Random(5)
    try:
        for rnd in range(20):
            expected_per_conn = []
            for n, c in enumerate(conns):
                requests, expected = [], []
                for i in range(50):
                    key = b"memtier-%d" % rng.randrange(2000)
                    if i % 11 == 0:
                        data = b"%032d" % rng.randrange(10 ** 30)
                        requests.append(b"set %s 0 %d %d\r\n%s\r\n" % (key, rng.choice([0, 60]),
                                                                         len(data), data))
                        expected.append(b"STORED\r\n")
                    elif i % 11 == 5:
                        keys = [b"memtier-%d" % rng.randrange(2000) for _ in range(4)]
                        requests.append(b"get " + b" ".join(keys) + b"\r\n")
                        expected.append(None)
                    else:
                        requests.append(b"get %s\r\n" % key)
                        expected.append(None)
                c.send(b"".join(requests))
                expected_per_conn.append(expected)
            for c, expected in zip(conns, expected_per_conn):
                # Count the replies: one STORED per set, one END per get.
                want_end = sum(1 for e in expected if e is None)
                want_stored = len(expected) - want_end
                while c.buf.count(b"END\r\n") < want_end or \
                        c.buf.count(b"STORED\r\n") < want_stored:
                    chunk = c.sock.recv(1 << 20)
                    assert chunk, "connection closed"
                    c.buf += chunk
                assert b"ERROR" not in c.buf
                c.buf = b""
        # The values written by memcached requests are strings to RESP.
        r = srv.client()
        assert r.dbsize() > 0
        some = next(iter(r.scan_iter(match="memtier-*", count=1000)))
        assert len(r.get(some)) == 32
    finally:
        for c in conns:
            c.close()
