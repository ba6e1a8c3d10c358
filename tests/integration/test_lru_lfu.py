"""Access clocks: OBJECT IDLETIME and OBJECT FREQ, what touches a key and what does not (OBJECT,
TYPE, EXISTS, CLIENT NO-TOUCH), RESTORE ... IDLETIME / FREQ, lfu-log-factor / lfu-decay-time,
and the LRU / LFU eviction policies keeping a hot set of keys while cold keys fill memory (where
allkeys-random loses many of them). Error texts are compared with redis-server."""

from __future__ import annotations

import subprocess
import time

import pytest

from conftest import Server, flushed_pair
from test_maxmemory import sh as maxmemory_client  # noqa: F401 (a fixture)

shardis_only = pytest.mark.shardis_only


@pytest.fixture
def sh(maxmemory_client):
    """test_maxmemory's client (flushed; maxmemory and the policy reset afterwards), with the LFU
    settings reset too."""
    yield maxmemory_client
    maxmemory_client.config_set("lfu-log-factor", 10)
    maxmemory_client.config_set("lfu-decay-time", 1)


@pytest.fixture
def both(server, redis_server):
    """(shardis, redis) raw connections, flushed, with the policy reset afterwards."""
    with flushed_pair(server, redis_server, [("CONFIG", "SET", "maxmemory", "0", "maxmemory-policy",
                                              "noeviction", "lfu-log-factor", "10",
                                              "lfu-decay-time", "1")]) as conns:
        yield conns


def same_replies(both, commands):
    sut, ref = both
    for cmd in commands:
        got, want = sut.call_raw(*cmd), ref.call_raw(*cmd)
        assert got == want, f"{cmd}: {got!r} != {want!r}"


# ---------------------------------------------------------------------------------------------
# OBJECT IDLETIME / FREQ, checked on both servers.
# ---------------------------------------------------------------------------------------------


def test_idletime_grows_and_reads_reset_it(both):
    # The access clock counts whole seconds (Redis' LRU clock resolution), so a key touched a
    # moment ago reads 1 when a second boundary falls between the touch and OBJECT IDLETIME;
    # after 2.1 s untouched, a key reads at least 2.
    for c in both:
        c.call("SET", "k", "v")
        c.call("SET", "other", "v")
    time.sleep(2.1)
    for c in both:
        assert c.call("OBJECT", "IDLETIME", "k") >= 2
        assert c.call("OBJECT", "IDLETIME", "k") >= 2  # OBJECT itself does not touch
        assert c.call("TYPE", "k") == b"string"       # nor TYPE
        assert c.call("EXISTS", "k") == 1             # nor EXISTS (Redis 7)
        assert c.call("OBJECT", "IDLETIME", "k") >= 2
        assert c.call("GET", "k") == b"v"
        assert c.call("OBJECT", "IDLETIME", "k") <= 1
        assert c.call("OBJECT", "IDLETIME", "other") >= 2
        assert c.call("TOUCH", "other", "missing") == 1
        assert c.call("OBJECT", "IDLETIME", "other") <= 1
    time.sleep(2.1)
    for c in both:
        c.call("APPEND", "k", "w")  # a write touches too
        assert c.call("OBJECT", "IDLETIME", "k") <= 1
        assert c.call("OBJECT", "IDLETIME", "other") >= 2
        assert c.call("OBJECT", "IDLETIME", "missing") is None


def test_freq_grows_with_reads_under_lfu(both):
    for c in both:
        c.call("CONFIG", "SET", "maxmemory-policy", "allkeys-lfu")
        c.call("SET", "hot", "v")
        c.call("SET", "cold", "v")
        assert c.call("OBJECT", "FREQ", "hot") == 5  # LFU_INIT_VAL
        assert c.call("GET", "hot") == b"v"
        assert c.call("OBJECT", "FREQ", "hot") == 6  # the first increments are certain
        for _ in range(200):
            c.call("GET", "hot")
        freq = c.call("OBJECT", "FREQ", "hot")
        assert 7 <= freq <= 20, freq
        assert c.call("OBJECT", "FREQ", "cold") == 5
        # lfu-log-factor 0: every access counts.
        c.call("CONFIG", "SET", "lfu-log-factor", "0")
        for _ in range(10):
            c.call("GET", "cold")
        assert c.call("OBJECT", "FREQ", "cold") == 15


def test_object_errors_by_policy(both):
    commands = [["SET", "k", "v"]]
    for policy in ["allkeys-lfu", "volatile-lfu", "allkeys-lru", "noeviction", "volatile-ttl"]:
        commands += [["CONFIG", "SET", "maxmemory-policy", policy],
                     ["OBJECT", "FREQ", "k"] if "lfu" not in policy else ["OBJECT", "IDLETIME", "k"],
                     ["OBJECT", "FREQ", "missing"], ["OBJECT", "IDLETIME", "missing"]]
    same_replies(both, commands)


def test_restore_idletime_and_freq(both):
    for c in both:
        c.call("SET", "k", "value")
        payload = c.call("DUMP", "k")
        assert c.call("RESTORE", "idle", "0", payload, "IDLETIME", "1000") == b"OK"
        assert 1000 <= c.call("OBJECT", "IDLETIME", "idle") <= 1001
        assert c.call("RESTORE", "idle", "0", payload, "REPLACE", "IDLETIME", "0") == b"OK"
        assert c.call("OBJECT", "IDLETIME", "idle") <= 1  # <= 1: the clock may tick in between
        # FREQ is ignored outside an LFU policy; IDLETIME inside one.
        assert c.call("RESTORE", "f", "0", payload, "FREQ", "100") == b"OK"
        assert c.call("OBJECT", "IDLETIME", "f") <= 1
        c.call("CONFIG", "SET", "maxmemory-policy", "allkeys-lfu")
        assert c.call("RESTORE", "f", "0", payload, "REPLACE", "FREQ", "100") == b"OK"
        assert c.call("OBJECT", "FREQ", "f") == 100
        assert c.call("RESTORE", "g", "0", payload, "IDLETIME", "100") == b"OK"
        assert c.call("OBJECT", "FREQ", "g") == 5
    same_replies(both, [["RESTORE", "x", "0", "bad", "FREQ", "256"],
                        ["RESTORE", "x", "0", "bad", "IDLETIME", "-1"],
                        ["RESTORE", "x", "0", "bad", "IDLETIME", "1", "FREQ", "1"]])


def test_rename_and_move_keep_the_clock_copy_does_not(both):
    for c in both:
        c.call("CONFIG", "SET", "maxmemory-policy", "allkeys-lfu")
        c.call("SET", "k", "v")
        payload = c.call("DUMP", "k")
        for i in range(20):  # keys on every shard
            c.call("RESTORE", f"src:{i}", "0", payload, "FREQ", "100")
            assert c.call("RENAME", f"src:{i}", f"dst:{i}") == b"OK"
            assert c.call("OBJECT", "FREQ", f"dst:{i}") in (100, 101)  # RENAME's lookup counts
            assert c.call("COPY", f"dst:{i}", f"copy:{i}") == 1
            assert c.call("OBJECT", "FREQ", f"copy:{i}") == 5
            assert c.call("MOVE", f"dst:{i}", "1") == 1
            c.call("SELECT", "1")
            assert c.call("OBJECT", "FREQ", f"dst:{i}") in (100, 101, 102)
            c.call("SELECT", "0")


def test_lfu_config_parameters(both):
    same_replies(both, [
        ["CONFIG", "GET", "lfu-log-factor"],
        ["CONFIG", "GET", "lfu-decay-time"],
        ["CONFIG", "GET", "maxmemory-samples"],
        ["CONFIG", "SET", "lfu-log-factor", "-1"],
        ["CONFIG", "SET", "lfu-decay-time", "x"],
        ["CONFIG", "SET", "lfu-decay-time", "2147483648"],
        ["CONFIG", "SET", "maxmemory-samples", "0"],
        ["CONFIG", "SET", "lfu-log-factor", "3", "lfu-decay-time", "0", "maxmemory-samples", "10"],
        ["CONFIG", "GET", "maxmemory-samples"],
        ["CONFIG", "SET", "maxmemory-samples", "5"],
    ])
    for c in both:  # a pattern's order is the server's own
        pairs = c.call("CONFIG", "GET", "lfu-*")
        assert dict(zip(pairs[::2], pairs[1::2])) == {b"lfu-log-factor": b"3",
                                                      b"lfu-decay-time": b"0"}


@shardis_only  # CLIENT NO-TOUCH is Redis 7.2's
def test_no_touch_client_leaves_clocks_alone_but_touch_sets_them(server, sh):
    conn = server.raw()
    try:
        sh.set("k", "v")
        sh.set("t", "v")
        conn.call("CLIENT", "NO-TOUCH", "ON")
        # Idle times are whole seconds and the clock may tick between a touch and OBJECT: untouched
        # keys must read >= 2 and touched ones <= 1.
        time.sleep(2.1)
        assert conn.call("GET", "k") == b"v"
        assert conn.call("MGET", "k", "t") == [b"v", b"v"]
        assert conn.call("APPEND", "t", "w") == 2
        assert sh.object("idletime", "k") >= 2
        assert sh.object("idletime", "t") >= 2
        assert conn.call("TOUCH", "k") == 1  # TOUCH is the exception
        assert sh.object("idletime", "k") <= 1
        conn.call("CLIENT", "NO-TOUCH", "OFF")
        assert conn.call("GET", "t") == b"vw"
        assert sh.object("idletime", "t") <= 1
    finally:
        conn.close()


# ---------------------------------------------------------------------------------------------
# Eviction by sampling: a hot set survives a scan of cold keys.
# ---------------------------------------------------------------------------------------------

HOT, COLD, NEW = 200, 2000, 1000
VALUE = b"x" * 1000


def used(c) -> int:
    return c.info("memory")["used_memory"]


def hot_keys_kept(sh, policy, ex=None) -> int:
    """Fills with cold keys, lets them age, keeps reading a hot set while new keys push memory
    over the limit; returns how many of the hot keys are left. `ex`: every key gets this TTL,
    and a key without one is checked to stay."""
    sh.config_set("maxmemory-policy", policy)
    pipe = sh.pipeline(transaction=False)
    for i in range(COLD):
        pipe.set(f"cold:{i}", VALUE, ex=ex)
    for i in range(HOT):
        pipe.set(f"hot:{i}", VALUE, ex=ex)
    if ex is not None:
        pipe.set("persistent", VALUE)
    pipe.execute()
    # Over a second: the cold keys' LRU clocks (in seconds) are older than what comes next.
    time.sleep(1.1)
    sh.config_set("maxmemory", used(sh) + 64 * 1024)
    for rnd in range(NEW // 100):
        pipe = sh.pipeline(transaction=False)
        for i in range(HOT):
            pipe.get(f"hot:{i}")
        for i in range(100):
            pipe.set(f"new:{rnd}:{i}", VALUE, ex=ex)
        pipe.execute()
    assert sh.info("stats")["evicted_keys"] >= NEW // 2
    if ex is not None:
        assert sh.get("persistent") == VALUE  # never a candidate
    return sum(1 for v in sh.mget([f"hot:{i}" for i in range(HOT)]) if v is not None)


@pytest.mark.parametrize("policy", ["allkeys-lru", "allkeys-lfu"])
def test_hot_keys_survive_a_cold_scan(sh, policy):
    kept = hot_keys_kept(sh, policy)
    assert kept >= 0.9 * HOT, kept


def test_random_policy_loses_hot_keys(sh):
    # The same run under allkeys-random: victims are any keys, the hot ones among them.
    kept = hot_keys_kept(sh, "allkeys-random")
    assert kept < 0.85 * HOT, kept


@pytest.mark.parametrize("policy", ["volatile-lru", "volatile-lfu"])
def test_volatile_policies_keep_hot_keys_with_a_ttl(sh, policy):
    kept = hot_keys_kept(sh, policy, ex=10000)
    assert kept >= 0.9 * HOT, kept


# ---------------------------------------------------------------------------------------------
# RDB: IDLE under an LRU policy, FREQ under an LFU one, both ways with redis-server.
# ---------------------------------------------------------------------------------------------


def saved_file(c) -> str:
    return f"{c.config_get('dir')['dir']}/{c.config_get('dbfilename')['dbfilename']}"


@pytest.mark.parametrize("policy", ["allkeys-lru", "allkeys-lfu"])
def test_rdb_keeps_idle_time_or_frequency(server, sh, tmp_path, policy):
    sh.config_set("maxmemory-policy", policy)
    sh.set("k", "v")
    payload = sh.dump("k")
    option = ["IDLETIME", "5000"] if policy == "allkeys-lru" else ["FREQ", "77"]
    restored_at = time.monotonic()
    for i in range(50):
        sh.execute_command("RESTORE", f"r:{i}", "0", payload, *option)
    assert sh.save()
    dump = saved_file(sh)
    check = subprocess.run(["redis-check-rdb", dump], capture_output=True, text=True)
    assert "RDB looks OK" in check.stdout, check.stdout + check.stderr

    def check_clocks(c):
        for i in range(50):
            if policy == "allkeys-lru":
                # The idle time goes on growing while the file travels (1 s clock resolution,
                # and a busy machine can take seconds to save, restart and load).
                slack = int(time.monotonic() - restored_at) + 2
                assert 5000 <= c.object("idletime", f"r:{i}") <= 5000 + slack
            else:
                assert c.object("freq", f"r:{i}") == 77

    # In redis-server, and back into this server.
    ref = Server("redis", tmp_path / "redis",
                 args=["--dir", str(tmp_path), "--dbfilename", "in.rdb", "--save", "",
                       "--maxmemory-policy", policy])
    (tmp_path / "in.rdb").write_bytes(open(dump, "rb").read())
    ref.start()
    try:
        check_clocks(ref.client())
        assert ref.client().save()  # redis-server's own file, for a fresh shardis below
    finally:
        ref.stop()
    if server.kind == "shardis":
        fresh = Server("shardis", tmp_path / "fresh", threads=server.threads,
                       args=[f"--dir={tmp_path}", "--dbfilename=in.rdb",
                             f"--maxmemory_policy={policy}"]).start()
        try:
            assert fresh.client().dbsize() == 51
            check_clocks(fresh.client())
        finally:
            fresh.stop()
    sh.execute_command("DEBUG", "RELOAD")  # saves, flushes and loads
    assert sh.dbsize() == 51
    check_clocks(sh)
