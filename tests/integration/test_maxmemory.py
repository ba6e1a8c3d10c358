"""maxmemory: noeviction's OOM refusals (compared with redis-server), the eviction policies
keeping used memory near the limit, and CONFIG SET maxmemory at runtime."""

from __future__ import annotations

import socket
import time

import pytest
import redis

from conftest import flushed_pair, free_port

pytestmark = pytest.mark.shardis_only

OOM = b"-OOM command not allowed when used memory > 'maxmemory'.\r\n"


@pytest.fixture
def both(server, redis_server):
    """(shardis, redis) raw connections, flushed, with maxmemory reset afterwards."""
    with flushed_pair(server, redis_server,
                      [("CONFIG", "SET", "maxmemory", "0", "maxmemory-policy", "noeviction")]) as conns:
        yield conns


def used(r) -> int:
    return r.info("memory")["used_memory"]


@pytest.fixture
def sh(server):
    c = server.client()
    c.flushall()
    c.config_resetstat()
    yield c
    c.config_set("maxmemory", 0)
    c.config_set("maxmemory-policy", "noeviction")
    c.flushall()
    c.close()


# The same commands on both servers with maxmemory 1 byte: every kDenyOom write is refused with
# the same bytes, reads and deletes still work, and MULTI refuses at queue time.
OOM_SCRIPT = [
    ["SET", "k", "v"],
    ["GET", "k"],
    ["DEL", "k"],
    ["LPUSH", "l", "a"],
    ["MSET", "a", "1", "b", "2"],
    ["INCR", "n"],
    ["EXPIRE", "k", "10"],
    ["XGROUP", "CREATE", "s", "g", "$", "MKSTREAM"],  # a container's kDenyOom subcommand
    ["XGROUP", "HELP"],
    ["MULTI"],
    ["GET", "k"],
    ["SET", "k", "v"],
    ["EXEC"],
    ["PING"],
]


@pytest.mark.parametrize("policy", ["noeviction", "allkeys-random", "volatile-ttl"])
def test_oom_replies_match_redis(both, policy):
    replies = []
    for c in both:
        assert c.call("CONFIG", "SET", "maxmemory", "1", "maxmemory-policy", policy) == b"OK"
        replies.append([c.call_raw(*cmd) for cmd in OOM_SCRIPT])
    ours, theirs = replies
    assert ours[0] == OOM
    for cmd, a, b in zip(OOM_SCRIPT, ours, theirs):
        assert a == b, (cmd, a, b)


def test_noeviction_fills_up_to_the_limit(sh, server):
    limit = used(sh) + 2 * 1024 * 1024
    sh.config_set("maxmemory", limit)
    value = b"x" * 1000
    stored = 0
    with pytest.raises(redis.ResponseError, match="OOM command not allowed"):
        for i in range(20000):
            sh.set(f"key:{i}", value)
            stored += 1
    # Most of the 2 MB went to values before the refusal, and not much more than the limit.
    # (The other shards' counts are published with up to 64 KiB of lag each.)
    assert stored > 1000
    assert used(sh) <= limit + server.threads * 64 * 1024 + 16 * 1024
    assert sh.info("stats")["evicted_keys"] == 0
    assert sh.get("key:0") == value
    sh.delete(*[f"key:{i}" for i in range(stored // 2)])
    sh.set("again", value)  # room again after deletes


@pytest.mark.parametrize("policy", ["allkeys-random", "allkeys-lru", "allkeys-lfu"])
def test_allkeys_eviction_keeps_memory_near_the_limit(sh, server, policy):
    limit = used(sh) + 4 * 1024 * 1024
    sh.config_set("maxmemory", limit)
    sh.config_set("maxmemory-policy", policy)
    value = b"v" * 1000
    pipe = sh.pipeline(transaction=False)
    n = 20000  # ~20 MB of values into 4 MB
    for i in range(n):
        pipe.set(f"key:{i}", value)
        if i % 500 == 499:
            assert all(pipe.execute())
    assert used(sh) <= limit * 1.05 + server.threads * 64 * 1024
    evicted = sh.info("stats")["evicted_keys"]
    keys = sh.dbsize()
    assert evicted > 0 and keys < n
    assert keys + evicted == n
    # What is left is a spread of old and new keys (random victims), all readable.
    assert sh.get(f"key:{n - 1}") in (value, None)


def test_volatile_policies_evict_only_keys_with_a_ttl(sh):
    base = used(sh)
    sh.set("persistent", b"p" * 1000)
    sh.config_set("maxmemory", base + 2 * 1024 * 1024)
    sh.config_set("maxmemory-policy", "volatile-random")
    value = b"t" * 1000
    for i in range(8000):
        sh.set(f"ttl:{i}", value, ex=1000 + i)
    assert sh.info("stats")["evicted_keys"] > 0
    assert sh.get("persistent") == b"p" * 1000
    # Once only keys without a TTL are left, writes are refused as in Redis.
    sh.config_set("maxmemory-policy", "volatile-ttl")
    sh.config_set("maxmemory", 1)
    with pytest.raises(redis.ResponseError, match="OOM"):
        for i in range(10000):
            sh.set(f"ttl:{i}", value, ex=10)  # each evicts another TTL key until none is left
    assert sh.get("persistent") == b"p" * 1000


def test_volatile_ttl_prefers_the_nearest_deadline(sh):
    base = used(sh)
    value = b"t" * 1000
    # 1000 keys expiring soon (1h) and 1000 expiring late (1 day).
    for i in range(1000):
        sh.set(f"soon:{i}", value, ex=3600 + i)
        sh.set(f"late:{i}", value, ex=86400 + i)
    sh.config_set("maxmemory-policy", "volatile-ttl")
    sh.config_set("maxmemory", used(sh) - 500 * 1024)  # ~500 keys must go
    for i in range(50):
        sh.set(f"new:{i}", b"n", ex=10 ** 6)
    soon = sum(1 for _ in sh.scan_iter("soon:*", count=1000))
    late = sum(1 for _ in sh.scan_iter("late:*", count=1000))
    evicted = sh.info("stats")["evicted_keys"]
    assert evicted > 100
    # Sampling 5 keys and taking the nearest deadline: far more 'soon' keys go than 'late' ones.
    assert (1000 - soon) > 4 * (1000 - late), (soon, late, evicted)
    assert base >= 0


def test_config_set_maxmemory_at_runtime(sh, server):
    value = b"r" * 1000
    pipe = sh.pipeline(transaction=False)
    for i in range(10000):
        pipe.set(f"key:{i}", value)
    pipe.execute()
    full = used(sh)
    assert full > 10_000_000
    # Below what is in use: noeviction refuses writes, reads go on. (Shards publish their used
    # bytes on their 100 ms tick while no limit is set: give them one.)
    sh.config_set("maxmemory", full // 2)
    time.sleep(0.25)
    with pytest.raises(redis.ResponseError, match="OOM"):
        sh.set("one-more", value)
    assert sh.get("key:1") == value
    # With an eviction policy the next writes shed keys until used memory is under the limit.
    sh.config_set("maxmemory-policy", "allkeys-random")
    for i in range(200):
        sh.set(f"new:{i}", value)
    assert used(sh) <= full // 2 + server.threads * 64 * 1024
    assert sh.info("stats")["evicted_keys"] > 4000
    assert sh.info("memory")["maxmemory"] == full // 2
    # Lifting the limit: everything is accepted again, nothing more is evicted.
    sh.config_set("maxmemory", 0)
    evicted = sh.info("stats")["evicted_keys"]
    for i in range(1000):
        sh.set(f"more:{i}", value)
    assert sh.info("stats")["evicted_keys"] == evicted


def test_memcached_storage_over_maxmemory(server_factory):
    # memcached's storage commands obey maxmemory too, with memcached's out-of-memory error.
    mc_port = free_port()
    srv = server_factory(threads=2, args=[f"--memcached_port={mc_port}", "--maxmemory=1"])
    with socket.create_connection(("127.0.0.1", mc_port), timeout=5) as s:
        s.sendall(b"set k 0 0 1\r\nv\r\nget k\r\n")
        data = b""
        while not data.endswith(b"END\r\n"):
            data += s.recv(1024)
        assert data == b"SERVER_ERROR out of memory storing object\r\nEND\r\n"
    c = srv.client()
    c.config_set("maxmemory", 0)
    with socket.create_connection(("127.0.0.1", mc_port), timeout=5) as s:
        s.sendall(b"set k 0 0 1\r\nv\r\n")
        assert s.recv(1024) == b"STORED\r\n"


def shard_of(r, key) -> int:
    """The shard that owns key, from INFO shards' key counts (the db must not change meanwhile)."""
    def counts():
        info = r.info("shards")
        return [info[f"shard{i}"]["keys"] for i in range(info["threads"])]
    before = counts()
    r.set(key, 1)
    after = counts()
    r.delete(key)
    return next(i for i, (b, a) in enumerate(zip(before, after)) if a > b)


@pytest.mark.parametrize("policy", ["volatile-random", "volatile-ttl", "volatile-lru"])
def test_volatile_key_of_another_shard_is_evicted_before_the_next_reply(server_factory, policy):
    """Redis' TCL tracking test "invalidation message of eviction keys should be before
    response", with the big key and the volatile key on different shards: the big key's shard is
    over its share and has no key with a TTL, so the other shard evicts for it, before the next
    command's reply (and its invalidation push comes first), as Redis with one keyspace would."""
    srv = server_factory(threads=2)
    r = srv.client()
    volatile, big = "volatile-key", next(
        k for k in (f"big-{i}" for i in range(100)) if shard_of(r, k) != shard_of(r, "volatile-key"))
    with srv.raw() as c:
        c.call("HELLO", "3")
        c.call("CLIENT", "TRACKING", "on")
        limit = used(r) + 100 * 1024
        c.call("CONFIG", "SET", "maxmemory", limit)
        c.call("CONFIG", "SET", "maxmemory-policy", policy)
        assert c.call("SETEX", volatile, "10000", "x") == b"OK"
        assert c.call("GET", volatile) == b"x"
        assert c.call("SETBIT", big, "1600000", "0") == 0  # about 200 KB on the other shard
        c.send_command("GETBIT", big, "0")
        assert c.read_reply()[1] == [b"invalidate", [b"volatile-key"]]
        assert c.read_reply()[1] == 0
        assert c.call("EXISTS", volatile) == 0
        assert c.call("EXISTS", big) == 1
        assert r.info("stats")["evicted_keys"] == 1
