"""DUMP and RESTORE against the Debian redis-server 7.0.

  - redis-server's DUMP payloads of every type and encoding RESTORE in shardis to the same
    contents (read commands, TYPE, OBJECT ENCODING, PTTL), and shardis' payloads RESTORE in
    redis-server the same way;
  - RESTORE's errors and edge cases (BUSYKEY, TTL, ABSTTL in the past, IDLETIME, FREQ, damaged
    payloads, syntax) give the same raw replies as redis-server;
  - RESTORE is a write like the others: it wakes a BLPOP waiter, fails a WATCHer's EXEC, runs
    inside MULTI;
  - damaged payloads (with a checksum that matches, so the decoder sees them) never crash shardis.

Not compared: a payload of RDB version 11 (Redis 7.2) restores in shardis and is refused by
Redis 7.0; a hash payload with a field twice is refused by shardis and taken by Redis 7.0 (whose
duplicate check needs sanitize-dump-payload yes). IDLETIME and FREQ are checked and dropped
(shardis tracks neither).
"""

from __future__ import annotations

import random
import threading
import time

import pytest
import redis

from conftest import Server
from test_rdb_format import fill, redis_snapshot, same_encoding


def _crc64_table():
    poly = 0x95AC9329AC4BC9B5  # Jones, reflected (Redis' crc64)
    table = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ poly if c & 1 else c >> 1
        table.append(c)
    return table


_CRC_TABLE = _crc64_table()


def crc64(data: bytes) -> int:
    c = 0
    for x in data:
        c = _CRC_TABLE[(c ^ x) & 0xFF] ^ (c >> 8)
    return c


assert crc64(b"123456789") == 0xE9C6D914C4B8D9CA


def payload(body: bytes, version: int = 10) -> bytes:
    """A DUMP payload around an RDB value (type byte and value) with a matching checksum."""
    data = body + version.to_bytes(2, "little")
    return data + crc64(data).to_bytes(8, "little")


def resign(p: bytes) -> bytes:
    """p with its checksum recomputed (so a damaged body reaches the decoder)."""
    return payload(p[:-10], int.from_bytes(p[-10:-8], "little"))


@pytest.fixture(scope="module")
def source(tmp_path_factory):
    """redis-server filled with every type and encoding, and its snapshot."""
    srv = Server("redis", tmp_path_factory.mktemp("dump-source")).start()
    fill(srv.client(decode_responses=False))
    yield srv, redis_snapshot(srv)
    srv.stop_and_check()


@pytest.fixture
def reference(redis_server):
    """The reference redis-server, flushed (its thresholds are shardis' defaults)."""
    c = redis_server.client(decode_responses=False)
    c.flushall()
    yield redis_server
    c.close()


def assert_snapshots_match(ours: dict, theirs: dict, *, ours_is_shardis: bool) -> None:
    assert set(ours) == set(theirs), sorted(set(ours) ^ set(theirs))
    for k, want in theirs.items():
        got = ours[k]
        assert got["type"] == want["type"], k
        assert got["value"] == want["value"], k
        n = len(want["value"]) if want["type"] != "string" else 0
        shardis_enc, redis_enc = ((got["encoding"], want["encoding"]) if ours_is_shardis
                                  else (want["encoding"], got["encoding"]))
        assert same_encoding(shardis_enc, redis_enc, want["type"], n, want["value"]), \
            (k, shardis_enc, redis_enc)
        assert (got["pttl"] < 0) == (want["pttl"] < 0), k
        if want["pttl"] >= 0:
            assert abs(got["pttl"] - want["pttl"]) < 5000, (k, got["pttl"], want["pttl"])


def dump_all(srv, snap) -> list:
    """[(db, key, pttl, payload)] for every key of snap, DUMPed from srv."""
    out = []
    for db, key in sorted(snap):
        c = srv.client(db=db, decode_responses=False)
        out.append((db, key, c.pttl(key), c.dump(key)))
        c.close()
    return out


def restore_all(srv, dumps) -> None:
    for db, key, pttl, p in dumps:
        c = srv.client(db=db, decode_responses=False)
        assert c.restore(key, max(pttl, 0), p) == b"OK", key
        c.close()


def test_redis_payloads_restore_in_shardis(server, r, source):
    src, _ = source
    snap = redis_snapshot(src)  # PTTLs of now (the module's servers run one after another)
    restore_all(server, dump_all(src, snap))
    assert_snapshots_match(redis_snapshot(server), snap, ours_is_shardis=True)


def test_shardis_payloads_restore_in_redis(server, r, reference):
    fill(r)
    ours = redis_snapshot(server)
    assert len(ours) >= 30
    restore_all(reference, dump_all(server, ours))
    assert_snapshots_match(redis_snapshot(reference), ours, ours_is_shardis=False)


def test_round_trip_in_shardis(server, r, source):
    """shardis' own payloads restore in shardis, REPLACE over the originals and under new names
    (that land on other shards)."""
    src, snap = source
    restore_all(server, dump_all(src, snap))
    before = redis_snapshot(server)
    for db, key, pttl, p in dump_all(server, before):
        c = server.client(db=db, decode_responses=False)
        assert c.restore(key, max(pttl, 0), p, replace=True) == b"OK"
        assert c.restore(b"copy:" + key, 0, p) == b"OK"
        c.close()
    after = redis_snapshot(server)
    for (db, key), want in before.items():
        assert after[(db, key)]["value"] == want["value"], key
        assert after[(db, b"copy:" + key)]["value"] == want["value"], key
        assert after[(db, b"copy:" + key)]["pttl"] == -1, key


def test_big_lzf_strings(server, r, reference):
    rc = reference.client(decode_responses=False)
    values = {b"zeros": b"\0" * 300_000, b"text": b"the quick brown fox " * 50_000,
              b"mixed": bytes(random.Random(3).choice(b"ab") for _ in range(100_000))}
    for k, v in values.items():
        rc.set(k, v)
        p = rc.dump(k)
        assert len(p) < len(v)  # LZF-compressed
        assert r.restore(k, 0, p) == b"OK"
        assert r.get(k) == v
        ours = r.dump(k)
        assert len(ours) < len(v)
        assert rc.restore(b"back:" + k, 0, ours) == b"OK"
        assert rc.get(b"back:" + k) == v


def test_dump_follows_rdbcompression(server, r, reference):
    # As Redis: DUMP compresses long strings only while rdbcompression is yes.
    rc = reference.client(decode_responses=False)
    v = b"the quick brown fox " * 100
    try:
        for c in (r, rc):
            c.set(b"fox", v)
            c.config_set("rdbcompression", "no")
        assert r.dump(b"fox") == rc.dump(b"fox")
        assert len(r.dump(b"fox")) > len(v)
        for c in (r, rc):
            c.config_set("rdbcompression", "yes")
        assert len(r.dump(b"fox")) < len(v)
        assert rc.restore(b"fox2", 0, r.dump(b"fox")) == b"OK" and rc.get(b"fox2") == v
    finally:
        for c in (r, rc):
            c.config_set("rdbcompression", "yes")
            c.delete(b"fox", b"fox2")


def test_many_keys_over_shards(server, r, reference):
    rc = reference.client(decode_responses=False)
    rc.rpush("l", "a", "b", "c")
    p = rc.dump("l")
    for i in range(200):
        assert r.restore(f"key:{i}", 0, p) == b"OK"
    for i in range(200):
        assert r.lrange(f"key:{i}", 0, -1) == [b"a", b"b", b"c"]
    assert r.dbsize() == 200


def test_dump_missing_and_expired(server, r):
    assert r.dump("nope") is None
    r.set("k", "v", px=50)
    time.sleep(0.1)
    assert r.dump("k") is None


def test_ttl_and_absttl(server, r, reference):
    rc = reference.client(decode_responses=False)
    rc.set("s", "value")
    p = rc.dump("s")
    assert r.restore("rel", 100_000, p) == b"OK"
    assert 95_000 < r.pttl("rel") <= 100_000
    at = int(time.time() * 1000) + 200_000
    assert r.restore("abs", at, p, absttl=True) == b"OK"
    assert abs(r.pexpiretime("abs") - at) <= 1
    assert r.restore("zero", 0, p, absttl=True) == b"OK"
    assert r.pttl("zero") == -1
    # REPLACE clears an old TTL.
    r.set("old", "x", ex=1000)
    assert r.restore("old", 0, p, replace=True) == b"OK"
    assert r.pttl("old") == -1 and r.get("old") == b"value"


def _valid_payload(reference) -> bytes:
    rc = reference.client(decode_responses=False)
    rc.set("__p", "hello")
    p = rc.dump("__p")
    rc.delete("__p")
    return p


def _differential_cases(p: bytes):
    bad_crc = p[:-1] + bytes([p[-1] ^ 1])
    v12 = payload(p[:-10], version=12)
    garbage = payload(b"\x00\xff\xff\xff")  # a string whose length cannot be true
    unknown_type = payload(b"\x63abc")
    empty_set = payload(b"\x02\x00")
    empty_list = payload(b"\x12\x00")
    trailing = payload(p[:-10] + b"xx")
    return [
        # (setup commands, the command compared)
        ([], ["RESTORE", "k", "0", p]),
        ([["SET", "k", "v"]], ["RESTORE", "k", "0", p]),
        ([["SET", "k", "v"]], ["RESTORE", "k", "0", p, "REPLACE"]),
        ([["SET", "k", "v"]], ["RESTORE", "k", "-1", p]),
        ([["SET", "k", "v"]], ["RESTORE", "k", "abc", p, "REPLACE"]),
        ([], ["RESTORE", "k", "-1", p]),
        ([], ["RESTORE", "k", "abc", p]),
        ([], ["RESTORE", "k", "1.5", p]),
        ([], ["RESTORE", "k", "0", bad_crc]),
        ([], ["RESTORE", "k", "0", "short"]),
        ([], ["RESTORE", "k", "0", ""]),
        ([], ["RESTORE", "k", "0", v12]),
        ([], ["RESTORE", "k", "0", garbage]),
        ([], ["RESTORE", "k", "0", unknown_type]),
        ([], ["RESTORE", "k", "0", empty_set]),
        ([], ["RESTORE", "k", "0", empty_list]),
        ([], ["RESTORE", "k", "0", trailing]),
        ([["SET", "k", "v"]], ["RESTORE", "k", "0", garbage, "REPLACE"]),
        ([], ["RESTORE", "k", "0", p, "IDLETIME", "-1"]),
        ([], ["RESTORE", "k", "0", p, "IDLETIME", "x"]),
        ([], ["RESTORE", "k", "0", p, "IDLETIME", "10"]),
        ([], ["RESTORE", "k", "0", p, "IDLETIME"]),
        ([], ["RESTORE", "k", "0", p, "FREQ", "256"]),
        ([], ["RESTORE", "k", "0", p, "FREQ", "-1"]),
        ([], ["RESTORE", "k", "0", p, "FREQ", "x"]),
        ([], ["RESTORE", "k", "0", p, "FREQ", "255"]),
        ([], ["RESTORE", "k", "0", p, "FREQ", "0", "FREQ", "3"]),
        ([], ["RESTORE", "k", "0", p, "IDLETIME", "1", "FREQ", "1"]),
        ([], ["RESTORE", "k", "0", p, "FREQ", "1", "IDLETIME", "1"]),
        ([], ["RESTORE", "k", "0", p, "BOGUS"]),
        ([], ["RESTORE", "k", "0", p, "REPLACE", "ABSTTL", "REPLACE"]),
        ([], ["RESTORE", "k", "-1", p, "BOGUS"]),  # options are checked first
        ([["SET", "k", "v"]], ["RESTORE", "k", "0", bad_crc, "BOGUS"]),
        ([["SET", "k", "v"]], ["RESTORE", "k", "-5", bad_crc]),  # BUSYKEY before the TTL
        ([], ["RESTORE", "k", "0"]),
        ([], ["RESTORE", "k"]),
        ([], ["DUMP", "k"]),
        ([], ["DUMP"]),
        ([], ["DUMP", "k", "extra"]),
        ([["SET", "k", "12"]], ["DUMP", "k"]),
        ([["SET", "k", "hello"]], ["DUMP", "k"]),
        ([["RPUSH", "k", "a", "1"]], ["DUMP", "k"]),
        ([["SADD", "k", "1", "2"]], ["DUMP", "k"]),
        ([["HSET", "k", "f", "v"]], ["DUMP", "k"]),
        ([["ZADD", "k", "1", "a"]], ["DUMP", "k"]),
        # An ABSTTL deadline in the past: OK, the key is not created; REPLACE deletes the old one.
        ([], ["RESTORE", "k", "1", p, "ABSTTL"]),
        ([["SET", "k", "v"]], ["RESTORE", "k", "1", p, "ABSTTL"]),
        ([["SET", "k", "v"]], ["RESTORE", "k", "1", p, "ABSTTL", "REPLACE"]),
        ([["SET", "k", "v"]], ["RESTORE", "k", "1", garbage, "ABSTTL", "REPLACE"]),
        ([], ["RESTORE", "k", "9223372036854775807", p]),
        ([], ["RESTORE", "k", "9223372036854775807", p, "ABSTTL"]),
    ]


def test_errors_match_redis(server, r, raw, reference):
    ref = reference.raw()
    try:
        p = _valid_payload(reference)
        for setup, cmd in _differential_cases(p):
            for conn in (raw, ref):
                conn.call("FLUSHALL")
                for s in setup:
                    conn.call(*s)
            got, want = raw.call_raw(*cmd), ref.call_raw(*cmd)
            assert got == want, (cmd, got, want)
            after = [c.call_raw("EXISTS", "k") + c.call_raw("TYPE", "k") + c.call_raw("DUMP", "k")
                     for c in (raw, ref)]
            assert after[0] == after[1], (cmd, after)
    finally:
        ref.close()


def test_restore_wakes_blpop(server, r, reference):
    rc = reference.client(decode_responses=False)
    rc.rpush("src", "x", "y")
    p = rc.dump("src")
    result = {}

    def waiter():
        c = server.client()
        result["v"] = c.blpop(["wake:list"], timeout=10)
        c.close()

    t = threading.Thread(target=waiter)
    t.start()
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        clients = r.client_list()
        if any(c.get("cmd") == "blpop" for c in clients):
            break
        time.sleep(0.01)
    assert r.restore("wake:list", 0, p) == b"OK"
    t.join(10)
    assert result["v"] == (b"wake:list", b"x")
    assert r.lrange("wake:list", 0, -1) == [b"y"]


def test_restore_in_multi_and_watch(server, r, reference):
    p = _valid_payload(reference)
    pipe = r.pipeline(transaction=True)
    pipe.restore("m", 0, p)
    pipe.restore("m", 0, p)
    pipe.get("m")
    res = pipe.execute(raise_on_error=False)
    assert res[0] == b"OK"
    assert isinstance(res[1], redis.ResponseError) and "BUSYKEY" in str(res[1])
    assert res[2] == b"hello"

    # A RESTORE of a WATCHed key by another client fails the EXEC.
    other = server.client()
    with r.pipeline() as pipe:
        pipe.watch("m")
        other.restore("m", 0, p, replace=True)
        pipe.multi()
        pipe.get("m")
        with pytest.raises(redis.WatchError):
            pipe.execute()
    # A RESTORE that fails (BUSYKEY) changes nothing: the EXEC runs.
    with r.pipeline() as pipe:
        pipe.watch("m")
        with pytest.raises(redis.ResponseError):
            other.restore("m", 0, p)
        pipe.multi()
        pipe.get("m")
        assert pipe.execute() == [b"hello"]
    other.close()


@pytest.mark.shardis_only
def test_payloads_redis_70_differs_on(server, r, reference):
    # A field twice: refused (Redis 7.0 takes it unless sanitize-dump-payload is yes).
    with pytest.raises(redis.ResponseError, match="^Bad data format$"):
        r.restore("h", 0, payload(b"\x04\x02\x01a\x011\x01a\x012"))
    assert r.exists("h") == 0
    # RDB version 11 (Redis 7.2): taken (Redis 7.0 refuses it).
    p = _valid_payload(reference)
    assert r.restore("v11", 0, payload(p[:-10], version=11)) == b"OK"
    assert r.get("v11") == b"hello"


@pytest.mark.shardis_only
def test_corrupt_payloads_never_crash(server, r, source):
    src, snap = source
    dumps = [d for *_, d in dump_all(src, snap)]
    rnd = random.Random(1414)
    outcomes = {"ok": 0, "err": 0}
    for i in range(3000):
        body = bytearray(rnd.choice(dumps)[:-10])
        kind = rnd.randrange(4)
        if kind == 0:  # flip a few bytes
            for _ in range(rnd.randint(1, 4)):
                body[rnd.randrange(len(body))] = rnd.randrange(256)
        elif kind == 1:  # truncate
            del body[rnd.randrange(1, len(body)):]
        elif kind == 2:  # random bytes after a real type byte
            body = body[:1] + bytes(rnd.randrange(256) for _ in range(rnd.randint(0, 64)))
        else:  # flip bits in a big payload's middle
            pos = rnd.randrange(len(body))
            body[pos] ^= 1 << rnd.randrange(8)
        try:
            r.restore(f"c{i}", 0, payload(bytes(body)), replace=True)
            outcomes["ok"] += 1
            # What was accepted is a real value: it dumps and restores again.
            again = r.dump(f"c{i}")
            assert r.restore(f"c{i}", 0, again, replace=True) == b"OK"
        except redis.ResponseError as e:
            assert str(e) == "Bad data format", e
            outcomes["err"] += 1
    assert server.alive()
    assert r.ping()
    assert outcomes["err"] > 1000


def test_restore_refused_over_maxmemory(server, r, raw, reference):
    p = _valid_payload(reference)
    ref = reference.raw()
    try:
        for conn in (raw, ref):
            assert conn.call("CONFIG", "SET", "maxmemory", "1") == b"OK"
        try:
            got, want = raw.call_raw("RESTORE", "k", "0", p), ref.call_raw("RESTORE", "k", "0", p)
            assert got == want and got.startswith(b"-OOM"), (got, want)
            assert raw.call_raw("DUMP", "k") == ref.call_raw("DUMP", "k") == b"$-1\r\n"
        finally:
            for conn in (raw, ref):
                conn.call("CONFIG", "SET", "maxmemory", "0")
    finally:
        ref.close()
