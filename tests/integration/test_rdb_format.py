"""The core RDB codec against the Debian redis-server 7.0, before the server commands exist.

rdb_tool (tests/tools/rdb_tool.cc, built next to the shardis binary) reads an RDB file with the
core reader and prints every key as JSON, and rewrites a file with the core writer. Here:
  - redis-server fills every type and encoding, SAVEs, and what rdb_tool reads from its dump.rdb
    must be what redis-server reports (TYPE, OBJECT ENCODING, PTTL, the read commands);
  - the file rdb_tool rewrites passes redis-check-rdb and loads in a fresh redis-server with the
    same contents (and the same encodings);
  - an RDB 9 file (Redis 6.2, ziplists) assembled here loads the same in redis-server and
    rdb_tool;
  - DUMP payloads both ways: redis-server's decode in the core to the same values, and the
    core's RESTORE in redis-server to the same values and encodings.
"""

from __future__ import annotations

import json
import os
import pathlib
import random
import re
import subprocess
import time

import pytest

from conftest import SHARDIS_BIN, Server

RDB_TOOL = pathlib.Path(SHARDIS_BIN).parent / "tests" / "tools" / "rdb_tool"
CHECK_RDB = "redis-check-rdb"


def rdb_tool(*args, stdin: bytes | None = None) -> str:
    if not os.access(RDB_TOOL, os.X_OK):
        pytest.fail(f"rdb_tool not found at {RDB_TOOL}: build it with `bash scripts/build.sh "
                    f"release rdb_tool`", pytrace=False)
    res = subprocess.run([str(RDB_TOOL), *map(str, args)], capture_output=True, timeout=120,
                         input=stdin)
    assert res.returncode == 0, f"rdb_tool {args}: {res.stderr.decode(errors='replace')}"
    return res.stdout.decode()


def tool_dump(path) -> dict:
    """(db, key bytes) -> the JSON object rdb_tool printed."""
    out = {}
    for line in rdb_tool("dump", path).splitlines():
        e = json.loads(line)
        out[(e["db"], e["key"].encode("latin-1"))] = e
    return out


def b(s: str) -> bytes:
    return s.encode("latin-1")


# ---- Filling redis-server with every type and encoding.

def fill(c) -> None:
    rnd = random.Random(14)
    c.flushall()
    # Strings: int-encoded, short, long and compressible (LZF), incompressible, binary.
    c.set("s:int", 12345)
    c.set("s:minint", -9223372036854775808)
    c.set("s:embstr", "hello world")
    c.set("s:raw", "x" * 1000 + "tail")
    c.set("s:random", bytes(rnd.getrandbits(8) for _ in range(5000)))
    c.set("s:binary", bytes(range(256)))
    c.set("s:empty", "")
    c.set("s:int-like", "007")
    # HyperLogLogs: sparse and dense.
    c.pfadd("hll:sparse", "a", "b", "c")
    c.pfadd("hll:dense", *[f"e{i}" for i in range(5000)])
    # Lists: one node, many nodes, a node of one big element.
    c.rpush("l:small", "a", 1, -70000, "b")
    c.rpush("l:big", *[f"element-{i}" for i in range(10000)])
    c.rpush("l:bigelem", "head", "y" * 100000, "tail")
    # Hashes: listpack, hashtable by count, hashtable by value length.
    c.hset("h:small", mapping={"a": 1, "b": "hello", "-5": 300})
    c.hset("h:big", mapping={f"field{i}": i for i in range(600)})  # past 512
    c.hset("h:longvalue", mapping={"a": "v" * 100})
    # Sets: intsets of each width, strings (hashtable in 7.0), big ones.
    c.sadd("set:int16", 1, 5, -3)
    c.sadd("set:int32", 1, 70000)
    c.sadd("set:int64", 1, 2**40, -(2**62))
    c.sadd("set:strings", "a", "b", "c")
    c.sadd("set:big", *[f"m{i}" for i in range(1000)])
    c.sadd("set:bigints", *range(0, 1800, 3))
    # Sorted sets: listpack and skiplist, odd scores.
    c.zadd("z:small", {"m1": 1.5, "m2": 3, "m3": -2, "inf": float("inf"),
                       "ninf": float("-inf"), "tiny": 1e-300, "third": 1 / 3})
    c.zadd("z:big", {f"member{i}": i * 0.1 for i in range(500)})
    c.zadd("z:longmember", {"m" * 100: 1})
    # Streams: small; big over several nodes with deleted entries; groups, PEL, consumers.
    c.xadd("st:small", {"f": "v"}, id="1-1")
    for i in range(1, 1001):
        fields = {"f": i, "name": f"v{i}"} if i % 7 else {"other": i}
        c.xadd("st:big", fields, id=f"{1000 + i}-{i % 3}")
    c.xdel("st:big", "1002-2", "1500-0", "2000-2")
    c.xgroup_create("st:big", "g1", id="0")
    c.xgroup_create("st:big", "g2", id="$")
    c.xgroup_create("st:big", "g3", id="1100-0")
    c.xreadgroup("g1", "alice", {"st:big": ">"}, count=5)
    c.xreadgroup("g1", "bob", {"st:big": ">"}, count=3)
    c.xack("st:big", "g1", "1003-0")
    c.xclaim("st:big", "g1", "carol", 0, ["1001-1"])
    c.xgroup_createconsumer("st:big", "g3", "idle")
    c.xadd("st:trimmed", {"a": 1}, id="5-0")
    c.xadd("st:trimmed", {"a": 2}, id="6-0")
    c.xdel("st:trimmed", "5-0", "6-0")  # empty stream with a last ID and tombstones
    # Expiries, and other databases.
    c.pexpire("s:embstr", 3_600_000)
    c.pexpire("h:big", 7_200_000)
    c.pexpire("st:small", 5_000_000)
    c.execute_command("SELECT", 1)
    c.set("db1:key", "in db 1")
    c.lpush("db1:list", "x")
    c.execute_command("SELECT", 3)
    c.set("db3:key", "in db 3")
    c.pexpire("db3:key", 1_000_000)
    c.execute_command("SELECT", 0)


def redis_snapshot(srv) -> dict:
    """(db, key) -> what redis-server reports: type, encoding, pttl, value (canonical)."""
    out = {}
    for db in range(16):
        c = srv.client(db=db, decode_responses=False)
        for key in c.scan_iter(count=1000):
            t = c.type(key).decode()
            enc = c.object("encoding", key).decode()
            out[(db, key)] = {"type": t, "encoding": enc, "pttl": c.pttl(key),
                              "value": canonical_value(c, key, t)}
    return out


def canonical_value(c, key, t):
    if t == "string":
        return c.get(key)
    if t == "list":
        return c.lrange(key, 0, -1)
    if t == "set":
        return sorted(c.smembers(key))
    if t == "hash":
        return sorted(c.hgetall(key).items())
    if t == "zset":
        return [(m, float(s)) for m, s in c.zrange(key, 0, -1, withscores=True)]
    if t == "stream":
        info = c.execute_command("XINFO", "STREAM", key, "FULL")
        info = dict(zip(info[::2], info[1::2]))
        groups = []
        for g in info[b"groups"]:
            g = dict(zip(g[::2], g[1::2]))
            consumers = []
            for cons in g[b"consumers"]:
                cons = dict(zip(cons[::2], cons[1::2]))
                consumers.append((cons[b"name"], cons[b"seen-time"],
                                  [p[0] for p in cons[b"pending"]]))
            groups.append({"name": g[b"name"], "last_id": g[b"last-delivered-id"],
                           "entries_read": g[b"entries-read"],
                           "pel": [(p[0], p[1], p[2], p[3]) for p in g[b"pending"]],
                           "consumers": consumers})
        entries = [(eid, [x for kv in fields.items() for x in kv])
                   for eid, fields in c.xrange(key)]
        return {"entries": entries, "length": info[b"length"],
                "last_id": info[b"last-generated-id"],
                "max_deleted_id": info[b"max-deleted-entry-id"],
                "entries_added": info[b"entries-added"], "groups": groups}
    raise AssertionError(f"unknown type {t}")


def tool_value(e):
    """rdb_tool's JSON value in the shape of canonical_value."""
    t, v = e["type"], e["value"]
    if t == "string":
        return b(v)
    if t == "list":
        return [b(x) for x in v]
    if t == "set":
        return sorted(b(x) for x in v)
    if t == "hash":
        return sorted((b(f), b(x)) for f, x in v)
    if t == "zset":
        return [(b(m), float(s)) for m, s in v]
    if t == "stream":
        groups = [{"name": b(g["name"]), "last_id": b(g["last_id"]),
                   "entries_read": None if g["entries_read"] == -1 else g["entries_read"],
                   "pel": [(b(i), b(cn), t_, n) for i, cn, t_, n in g["pel"]],
                   "consumers": [(b(n), seen, [b(i) for i in ids])
                                 for n, seen, ids in g["consumers"]]}
                  for g in v["groups"]]
        entries = [(b(i), [b(x) for x in fv]) for i, fv in v["entries"]]
        return {"entries": entries, "length": v["length"], "last_id": b(v["last_id"]),
                "max_deleted_id": b(v["max_deleted_id"]), "entries_added": v["entries_added"],
                "groups": groups}
    raise AssertionError(f"unknown type {t}")


# shardis' encoding at load against Redis 7.0's: sets of strings stay packed in shardis (Redis
# 7.2's listpack sets); a string's "embstr"/"raw" depends on how Redis made it (PFADD makes raw
# strings of any length), so strings are compared on "int" only.
def listpack_bytes(values) -> int:
    """The size of Redis' listpack of these elements (header and terminator included): what
    decides a list's encoding in Redis 7.2 (list-max-listpack-size -2: at most 8192 bytes)."""
    total = 7
    for v in values:
        v = v if isinstance(v, bytes) else str(v).encode()
        canonical = re.fullmatch(rb"-?[1-9][0-9]*|0", v) and len(v) <= 20
        if canonical and -2**63 <= int(v) < 2**63:
            i = int(v)
            size = next(size for size, lo, hi in [(1, 0, 127), (2, -4096, 4095),
                                                  (3, -2**15, 2**15 - 1), (4, -2**23, 2**23 - 1),
                                                  (5, -2**31, 2**31 - 1), (9, -2**63, 2**63 - 1)]
                        if lo <= i <= hi)
        else:
            size = len(v) + (1 if len(v) < 64 else 2 if len(v) < 4096 else 5)
        total += size + next(k for k, bound in enumerate([2**7, 2**14, 2**21, 2**28, 2**64], 1)
                             if size < bound)
    return total


def same_encoding(ours: str, redis_enc: str, t: str, n: int, value=None) -> bool:
    if t == "string":
        return (ours == "int") == (redis_enc == "int")
    if t == "set" and redis_enc == "hashtable" and ours == "listpack":
        return n <= 128
    if t == "list" and value is not None:
        # Redis 7.0 says quicklist for every list; shardis answers as 7.2 does after a load.
        return ours == ("listpack" if listpack_bytes(value) <= 8192 else "quicklist")
    return ours == redis_enc


def compare_tool_with_redis(tool: dict, snap: dict, saved_at_ms: int) -> None:
    assert set(tool) == set(snap), (sorted(set(tool) ^ set(snap)))
    for k, want in snap.items():
        got = tool[k]
        assert got["type"] == want["type"], k
        n = len(want["value"]) if want["type"] != "string" else 0
        assert same_encoding(got["encoding"], want["encoding"], want["type"], n, want["value"]), \
            (k, got["encoding"], want["encoding"])
        if want["pttl"] < 0:
            assert got["expire_ms"] == -1, k
        else:
            remaining = got["expire_ms"] - saved_at_ms
            assert abs(remaining - want["pttl"]) < 5000, (k, remaining, want["pttl"])
        assert tool_value(got) == want["value"], k


def assert_same_contents(loaded: dict, snap: dict) -> None:
    """Two redis-server snapshots hold the same keys, types, values and (Redis re-derives them
    at load) encodings."""
    assert set(loaded) == set(snap)
    for k, want in snap.items():
        got = loaded[k]
        assert got["type"] == want["type"], k
        if want["type"] != "string":
            assert got["encoding"] == want["encoding"], (k, got["encoding"], want["encoding"])
        assert got["value"] == want["value"], k


@pytest.fixture
def filled(tmp_path):
    srv = Server("redis", tmp_path / "source").start()
    try:
        c = srv.client(decode_responses=False)
        fill(c)
        assert c.save()
        snap = redis_snapshot(srv)
        saved_at = int(time.time() * 1000)
        yield srv, tmp_path / "source" / "dump.rdb", snap, saved_at
    finally:
        srv.stop_and_check()


def test_reads_what_redis_saved(filled):
    _, path, snap, saved_at = filled
    tool = tool_dump(path)
    compare_tool_with_redis(tool, snap, saved_at)
    # Spot checks of the encodings redis-server chose (so the fill covers them all).
    enc = {k[1]: v["encoding"] for k, v in snap.items()}
    assert enc[b"s:int"] == "int" and enc[b"s:raw"] == "raw"
    assert enc[b"h:small"] == "listpack" and enc[b"h:big"] == "hashtable"
    assert enc[b"set:int64"] == "intset" and enc[b"set:big"] == "hashtable"
    assert enc[b"z:small"] == "listpack" and enc[b"z:big"] == "skiplist"
    assert enc[b"l:big"] == "quicklist"


@pytest.mark.parametrize("options", [(), ("--no-compression",), ("--no-checksum",)],
                         ids=["default", "no-compression", "no-checksum"])
def test_rewritten_file_loads_in_redis(filled, tmp_path, options):
    srv, path, snap, saved_at = filled
    out_dir = tmp_path / "rewritten"
    out_dir.mkdir()
    out = out_dir / "shardis.rdb"
    rdb_tool("rewrite", path, out, *options)
    check = subprocess.run([CHECK_RDB, str(out)], capture_output=True, timeout=120)
    report = check.stdout.decode(errors="replace") + check.stderr.decode(errors="replace")
    assert check.returncode == 0, report
    assert "RDB looks OK" in report, report
    # The rewrite reads back the same through our reader.
    assert tool_dump(out) == tool_dump(path)
    fresh = Server("redis", out_dir,
                   args=["--dbfilename", "shardis.rdb"]).start()
    try:
        loaded = redis_snapshot(fresh)
    finally:
        fresh.stop_and_check()
    assert_same_contents(loaded, snap)
    for k, want in snap.items():
        got = loaded[k]
        assert (got["pttl"] < 0) == (want["pttl"] < 0), k
        if want["pttl"] >= 0:
            assert abs(got["pttl"] - want["pttl"]) < 10000, k


# ---- An RDB 9 file with Redis 6.2's encodings, assembled from the format facts.

def rdb_len(n: int) -> bytes:
    if n < 64:
        return bytes([n])
    if n < 16384:
        return bytes([0x40 | (n >> 8), n & 0xFF])
    return b"\x80" + n.to_bytes(4, "big")


def rdb_str(s: bytes) -> bytes:
    return rdb_len(len(s)) + s


def ziplist(raw_entries: list[bytes]) -> bytes:
    """A ziplist of entries given as <encoding+data> (prevlens filled in)."""
    body, prev, tail = b"", 0, 10
    for e in raw_entries:
        entry = (bytes([prev]) if prev < 254 else b"\xfe" + prev.to_bytes(4, "little")) + e
        tail = 10 + len(body)
        body += entry
        prev = len(entry)
    total = 10 + len(body) + 1
    return (total.to_bytes(4, "little") + tail.to_bytes(4, "little") +
            len(raw_entries).to_bytes(2, "little") + body + b"\xff")


def zl_str(s: bytes) -> bytes:
    assert len(s) < 64
    return bytes([len(s)]) + s


def zl_int16(v: int) -> bytes:
    return b"\xc0" + v.to_bytes(2, "little", signed=True)


def test_redis62_file(tmp_path):
    f = b"REDIS0009" + b"\xfa" + rdb_str(b"redis-ver") + rdb_str(b"6.2.14")
    f += b"\xfe" + rdb_len(0) + b"\xfb" + rdb_len(4) + rdb_len(1)
    f += b"\x0d" + rdb_str(b"h") + rdb_str(ziplist(
        [zl_str(b"field"), zl_str(b"value"), zl_str(b"n"), zl_int16(-1234)]))
    f += b"\x0c" + rdb_str(b"z") + rdb_str(ziplist(
        [zl_str(b"a"), zl_str(b"1.5"), zl_str(b"b"), zl_int16(300)]))
    f += b"\x0e" + rdb_str(b"l") + rdb_len(2)
    f += rdb_str(ziplist([zl_str(b"x"), b"\xf2", zl_int16(7000)]))  # "x", 1, 7000
    f += rdb_str(ziplist([zl_str(b"y" * 40)]))
    f += b"\xfc" + (4102444800000).to_bytes(8, "little")
    f += b"\x0b" + rdb_str(b"s") + rdb_str(
        (2).to_bytes(4, "little") + (3).to_bytes(4, "little") +
        b"".join(v.to_bytes(2, "little", signed=True) for v in (-5, 0, 9)))
    f += b"\xff" + b"\x00" * 8  # a zero checksum: "saved with rdbchecksum no"
    d = tmp_path / "v9"
    d.mkdir()
    (d / "dump.rdb").write_bytes(f)
    tool = tool_dump(d / "dump.rdb")
    srv = Server("redis", d, args=["--dbfilename", "dump.rdb"]).start()
    try:
        snap = redis_snapshot(srv)
    finally:
        srv.stop_and_check()
    assert len(snap) == 4
    compare_tool_with_redis(tool, snap, int(time.time() * 1000))
    assert tool[(0, b"l")]["value"] == ["x", "1", "7000", "y" * 40]


def test_corrupt_files_are_refused_cleanly(filled, tmp_path):
    _, path, _, _ = filled
    data = path.read_bytes()
    rnd = random.Random(3)
    for i in range(40):
        bad = bytearray(data)
        if i % 2:
            bad = bad[: rnd.randrange(9, len(bad) - 1)]
        else:
            pos = rnd.randrange(9, len(bad) - 8)
            bad[pos] ^= 1 << rnd.randrange(8)
        p = tmp_path / f"bad{i}.rdb"
        p.write_bytes(bytes(bad))
        res = subprocess.run([str(RDB_TOOL), "check", str(p)], capture_output=True, timeout=120)
        err = res.stderr.decode(errors="replace")
        assert res.returncode == 1, (i, res.stdout, err)
        assert err.startswith("rdb_tool: at byte "), err
    p = tmp_path / "v12.rdb"
    p.write_bytes(b"REDIS0012" + data[9:])
    res = subprocess.run([str(RDB_TOOL), "check", str(p)], capture_output=True, timeout=120)
    assert res.returncode == 1
    assert "RDB version 12 is not supported" in res.stderr.decode()


def test_dump_payloads_both_ways(filled, tmp_path):
    srv, path, snap, _ = filled
    keys = sorted(snap)
    # redis-server's DUMP payloads decode in the core to what redis-server holds.
    payloads = []
    for db, key in keys:
        payloads.append(srv.client(db=db, decode_responses=False).dump(key).hex())
    lines = rdb_tool("decode-payloads", stdin="\n".join(payloads).encode() + b"\n").splitlines()
    assert len(lines) == len(keys)
    for (db, key), line in zip(keys, lines):
        got = json.loads(line)
        assert "error" not in got, (key, got)
        assert got["type"] == snap[(db, key)]["type"], key
        assert tool_value(got) == snap[(db, key)]["value"], key
    # A damaged payload is refused with Redis' message.
    bad = bytearray(bytes.fromhex(payloads[0]))
    bad[1] ^= 1
    err = json.loads(rdb_tool("decode-payloads", stdin=bad.hex().encode() + b"\n"))
    assert err == {"error": "DUMP payload version or checksum are wrong"}
    # The core's payloads RESTORE in a fresh redis-server to the same values and encodings.
    fresh = Server("redis", tmp_path / "restore").start()
    try:
        for line in rdb_tool("payloads", path).splitlines():
            e = json.loads(line)
            c = fresh.client(db=e["db"], decode_responses=False)
            assert c.restore(b(e["key"]), 0, bytes.fromhex(e["payload"]))
        restored = redis_snapshot(fresh)
    finally:
        fresh.stop_and_check()
    assert_same_contents(restored, snap)
