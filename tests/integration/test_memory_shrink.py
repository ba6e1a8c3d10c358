"""Tables that shrink when most of their keys are gone (issue 20, point 2; docs/hash_table.md,
"Shrinking"): after a mass expiry used_memory comes back to within 1.3x of redis-server's on the
same workload, and UNLINK of a big set gives back what it took (Redis' TCL test "UNLINK can
reclaim memory in background").

Release-only: the figures assume the release build's allocator (mimalloc); under ASan every
block is malloc's with its redzones. Files named test_memory_*.py run in the "memory tests
(release)" step of scripts/test.sh, not in the ASan integration step.
"""

import time

import pytest

from conftest import TARGET, wait_for

# Scaled from the 1,000,000 + 100,000 keys so that both servers finish in ~20 s.
TTL_KEYS = 300_000
STAYING_KEYS = 30_000
VALUE = b"v" * 64
BATCH = 2_000


def fill(client, prefix: str, count: int, ttl_ms: int | None = None):
    for start in range(0, count, BATCH):
        pipe = client.pipeline(transaction=False)
        for i in range(start, min(start + BATCH, count)):
            if ttl_ms is None:
                pipe.set(f"{prefix}:{i}", VALUE)
            else:
                pipe.set(f"{prefix}:{i}", VALUE, px=ttl_ms)
        pipe.execute()


def used_memory(client) -> int:
    return int(client.info("memory")["used_memory"])


def ttl_workload(srv) -> int:
    """Keys with a 3-second TTL and keys without, the former expired by the active cycle alone;
    returns used_memory once it has settled (the shrinking runs in the background)."""
    c = srv.client()
    c.flushall()
    fill(c, "stay", STAYING_KEYS)
    fill(c, "ttl", TTL_KEYS, ttl_ms=3_000)  # on a slow machine the first expire while filling
    assert wait_for(lambda: c.dbsize() == STAYING_KEYS, timeout=60, interval=0.2)
    # Settled: no change over a second (redis-server resizes its dict in its cron, shardis merges
    # table segments from its shards' loops).
    last, stable_since = used_memory(c), time.monotonic()
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and time.monotonic() - stable_since < 1.5:
        time.sleep(0.25)
        now = used_memory(c)
        if now != last:
            last, stable_since = now, time.monotonic()
    assert c.dbsize() == STAYING_KEYS
    assert c.get("stay:0") == VALUE and c.get(f"stay:{STAYING_KEYS - 1}") == VALUE
    c.close()
    return last


@pytest.mark.shardis_only
@pytest.mark.parametrize("threads", [1, 2])
def test_mass_expiry_gives_memory_back_like_redis(server_factory, redis_server, threads):
    srv = server_factory(threads=threads)
    ours = ttl_workload(srv)
    theirs = ttl_workload(redis_server)
    print(f"used_memory: shardis {ours}, redis-server {theirs}")
    assert ours <= 1.3 * theirs, f"used_memory {ours} vs redis-server's {theirs}"
    # The SCAN of what is left after the shrinking still returns every key once at least.
    c = srv.client()
    seen = set(c.scan_iter(count=1000))
    assert len(seen) == STAYING_KEYS


@pytest.mark.shardis_only
def test_scan_while_tables_shrink(server_factory):
    """A key present for a whole SCAN is returned, while the keys around it expire and the
    tables merge their segments between the SCAN's calls."""
    srv = server_factory(threads=2)
    c = srv.client()
    fill(c, "stay", 5_000)
    fill(c, "ttl", 150_000, ttl_ms=1_000)
    # Start scanning before the expiry, and go on slowly while it and the shrinking run.
    seen = set()
    cursor = 0
    start = time.monotonic()
    while True:
        cursor, keys = c.scan(cursor, count=200)
        seen.update(k for k in keys if k.startswith(b"stay:"))
        if cursor == 0:
            break
        if time.monotonic() - start < 8:
            time.sleep(0.01)
    assert len(seen) == 5_000
    assert wait_for(lambda: c.dbsize() == 5_000, timeout=60, interval=0.2)


def test_unlink_reclaims_memory(r):
    """Redis' TCL "UNLINK can reclaim memory in background": after a set of 100,000 members is
    created and UNLINKed, used_memory falls below twice what it was before."""
    orig = used_memory(r)
    r.sadd("myset", *range(100_000))
    assert r.scard("myset") == 100_000
    peak = used_memory(r)
    assert r.unlink("myset") == 1
    assert peak > orig + 1_000_000
    assert wait_for(lambda: used_memory(r) < peak and used_memory(r) < orig * 2, timeout=5,
                    interval=0.1), f"used_memory {used_memory(r)}, {orig} before the set"
