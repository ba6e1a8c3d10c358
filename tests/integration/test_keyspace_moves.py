"""RENAME, RENAMENX, COPY, MOVE, MSETNX, SWAPDB, SCAN and RANDOMKEY across shards (the `server`
fixture runs every test with --threads 1, 2 and 4). Reply-by-reply equality with redis-server is
checked by the differential test (diff_families/keyspace.py); this file checks what a random
stream cannot: values and TTLs moving between shards, SCAN's guarantee, and atomicity."""

import threading
import time

import pytest


def test_rename_moves_value_and_ttl_between_shards(r):
    # Many pairs, so that with several threads most renames cross shards.
    for i in range(200):
        r.set(f"src{i}", f"value-{i}" * (i % 7), px=100000 if i % 2 else None)
        r.set(f"dst{i}", "old", ex=5)
    for i in range(200):
        assert r.rename(f"src{i}", f"dst{i}")
    for i in range(200):
        assert r.get(f"dst{i}") == f"value-{i}".encode() * (i % 7)
        assert not r.exists(f"src{i}")
        ttl = r.pttl(f"dst{i}")
        assert (90000 < ttl <= 100000) if i % 2 else ttl == -1


def test_renamenx_and_copy_between_shards(r):
    r.mset({f"a{i}": i for i in range(100)})
    r.mset({f"b{i}": "taken" for i in range(0, 100, 2)})
    for i in range(100):
        assert r.renamenx(f"a{i}", f"b{i}") == (i % 2 == 1)
    for i in range(100):
        assert r.copy(f"b{i}", f"c{i}") is True
        assert r.copy(f"b{i}", f"c{i}") is False
        assert r.get(f"c{i}") == r.get(f"b{i}")
    r.set("b0", "new")
    assert r.copy("b0", "c0", replace=True) is True
    assert r.get("c0") == b"new"


def test_copy_and_move_between_databases(r, server):
    r.set("k", "v", ex=1000)
    assert r.copy("k", "k", destination_db=3) is True
    other = server.client(db=3)
    assert other.get("k") == b"v" and 990 < other.ttl("k") <= 1000
    assert r.move("k", 3) is False  # exists there
    other.delete("k")
    assert r.move("k", 3) is True
    assert not r.exists("k") and other.get("k") == b"v"
    other.close()


def test_msetnx_is_all_or_nothing(r):
    assert r.msetnx({f"m{i}": i for i in range(50)}) is True
    assert r.msetnx({"m49": "x", "fresh": "y"}) is False
    assert r.get("fresh") is None and r.get("m49") == b"49"


def scan_all(client, **kwargs):
    seen, cursor, calls = [], 0, 0
    while True:
        cursor, keys = client.scan(cursor, **kwargs)
        seen += keys
        calls += 1
        assert calls < 100000
        if cursor == 0:
            return seen


def test_scan_returns_every_key_across_shards(r):
    keys = {f"key:{i}".encode() for i in range(3000)}
    r.mset({k: "v" for k in keys})
    for count in (1, 10, 1000):
        assert set(scan_all(r, count=count)) == keys
    assert set(scan_all(r, match="key:1*")) == {k for k in keys if k.startswith(b"key:1")}
    assert set(scan_all(r, _type="string")) == keys
    assert scan_all(r, _type="hash") == []
    # A cursor past the last shard ends the scan.
    assert r.scan(1 << 62) == (0, [])


def test_scan_misses_no_key_present_for_the_whole_scan(r, server):
    stable = {f"stable:{i}".encode() for i in range(2000)}
    r.mset({k: "v" for k in stable})
    stop = threading.Event()

    def churn():
        c = server.client()
        i = 0
        while not stop.is_set():
            c.set(f"churn:{i}", "x")  # inserts grow and split the tables meanwhile
            if i % 3 == 0:
                c.delete(f"churn:{i - 3}")
            i += 1
        c.close()

    t = threading.Thread(target=churn)
    t.start()
    try:
        seen = set(scan_all(r, count=20))
    finally:
        stop.set()
        t.join()
    assert stable <= seen


def test_randomkey(r):
    assert r.randomkey() is None
    r.mset({f"r{i}": i for i in range(20)})
    picks = {r.randomkey() for _ in range(200)}
    assert picks <= {f"r{i}".encode() for i in range(20)}
    assert len(picks) > 1
    r.set("short", "v", px=1)
    time.sleep(0.01)
    r.delete(*[f"r{i}" for i in range(20)])
    assert r.randomkey() is None  # the expired key is not returned


def test_swapdb_across_shards(r, server):
    r.mset({f"s{i}": "zero" for i in range(50)})
    one = server.client(db=1)
    one.mset({f"t{i}": "one" for i in range(30)})
    assert r.swapdb(0, 1)
    assert r.dbsize() == 30 and one.dbsize() == 50
    assert r.get("t0") == b"one" and one.get("s0") == b"zero"
    one.close()


def test_rename_is_atomic_for_other_clients(r, server):
    """One client renames a value back and forth between two keys (on different shards when
    there are several); others must always find it under exactly one of the names."""
    r.set("ping", "ball")
    deadline = time.time() + 2.0
    errors = []

    def mover():
        c = server.client()
        names = ["ping", "pong"]
        n = 0
        while time.time() < deadline and n < 5000:
            c.rename(names[n % 2], names[(n + 1) % 2])
            n += 1
        c.close()

    def watcher():
        c = server.client()
        n = 0
        while time.time() < deadline and n < 5000:
            found = c.exists("ping", "pong")
            if found != 1:
                errors.append(found)
                return
            n += 1
        c.close()

    threads = [threading.Thread(target=f) for f in (mover, watcher, watcher)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not any(t.is_alive() for t in threads)
    assert not errors, f"EXISTS ping pong returned {errors[0]}"
