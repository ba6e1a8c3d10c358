"""A BGSAVE is one point in time, while clients keep writing.

Accounts on every shard start at 100 each; while a (slowed down) BGSAVE runs, clients move
amounts between two accounts with MULTI/EXEC (the two keys are on different shards, so each
EXEC is a multi-shard transaction), delete keys that existed at the start, and add new ones.
The file must hold a consistent cut: the accounts sum to the start's total (no transaction half
in), every key that existed at the start is there with its start value, and no key made after
the start is. The file is checked by redis-check-rdb and loaded by redis-server, and by shardis.

Runs against redis-server too (SHARDIS_TEST_TARGET=redis), whose fork gives the same guarantee.
"""

from __future__ import annotations

import random
import subprocess
import threading
import time

import pytest
import redis

from conftest import Server, start_target, wait_for

ACCOUNTS = 2000
STATIC = 3000
START_BALANCE = 100


def fill(r: redis.Redis):
    p = r.pipeline(transaction=False)
    for i in range(ACCOUNTS):
        p.set(f"acct:{i}", START_BALANCE)
    for i in range(STATIC):
        p.set(f"static:{i}", f"v{i}")
    p.execute()


class Writers:
    """Threads that write during the save: transfers in MULTI/EXEC, deletes and inserts."""

    def __init__(self, port: int):
        self.port = port
        self.stop = threading.Event()
        self.churn = threading.Event()  # deletes and inserts start once the save has begun
        self.transfers = 0
        self.errors: list[BaseException] = []
        self.threads = [threading.Thread(target=self._guard, args=(self._transfer, s))
                        for s in range(3)]
        self.threads.append(threading.Thread(target=self._guard, args=(self._churn, 7)))

    def _guard(self, fn, seed):
        try:
            fn(seed)
        except BaseException as e:  # noqa: BLE001 - reported by the test
            self.errors.append(e)

    def _transfer(self, seed):
        r = redis.Redis(port=self.port, socket_timeout=30)
        rnd = random.Random(seed)
        while not self.stop.is_set():
            a, b = rnd.sample(range(ACCOUNTS), 2)
            amount = rnd.randint(1, 50)
            tx = r.pipeline(transaction=True)
            tx.decrby(f"acct:{a}", amount)
            tx.incrby(f"acct:{b}", amount)
            tx.execute()
            self.transfers += 1

    def _churn(self, seed):
        r = redis.Redis(port=self.port, socket_timeout=30)
        rnd = random.Random(seed)
        i = 0
        self.churn.wait()
        while not self.stop.is_set():
            r.delete(f"static:{rnd.randrange(STATIC)}")
            r.set(f"new:{i}", "x" * rnd.randint(1, 300))
            i += 1

    def __enter__(self):
        for t in self.threads:
            t.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.churn.set()
        for t in self.threads:
            t.join()


def check_cut(r: redis.Redis):
    balances = r.mget([f"acct:{i}" for i in range(ACCOUNTS)])
    assert None not in balances
    assert sum(int(b) for b in balances) == ACCOUNTS * START_BALANCE
    statics = r.mget([f"static:{i}" for i in range(STATIC)])
    missing = [i for i, v in enumerate(statics) if v != f"v{i}".encode()]
    assert not missing, f"{len(missing)} keys of the start are missing or changed, e.g. {missing[:5]}"
    assert r.dbsize() == ACCOUNTS + STATIC, "keys made after the start are in the snapshot"


@pytest.mark.parametrize("threads", [2, 4])
def test_bgsave_under_concurrent_transactions_is_a_consistent_cut(tmp_path, threads):
    srv = start_target(tmp_path / "server", threads=threads, shardis_args=["--save="],
                       redis_args=["--save", ""])
    try:
        r = srv.client()
        fill(r)
        # Slow the save down (Redis' own tests do the same) so that it overlaps the writes.
        r.config_set("rdb-key-save-delay", 200)
        with Writers(srv.port) as writers:
            wait_for(lambda: writers.transfers > 50, timeout=10)
            assert r.bgsave()
            writers.churn.set()
            start = time.monotonic()
            during = writers.transfers
            wait_for(lambda: r.info("persistence")["rdb_bgsave_in_progress"] == 0, timeout=60)
            took = time.monotonic() - start
            during = writers.transfers - during
        assert not writers.errors, writers.errors
        info = r.info("persistence")
        assert info["rdb_last_bgsave_status"] == "ok"
        assert during > 20, f"only {during} transfers ran during the {took:.2f} s save"
        dump = srv.log_dir / "dump.rdb"
        check = subprocess.run(["redis-check-rdb", str(dump)], capture_output=True, text=True)
        assert "RDB looks OK" in check.stdout, check.stdout + check.stderr
    finally:
        srv.stop(timeout=30)

    # The file in redis-server, and in shardis with another thread count.
    ref = Server("redis", tmp_path / "redis",
                 args=["--dir", str(srv.log_dir), "--dbfilename", "dump.rdb"]).start()
    try:
        check_cut(ref.client())
    finally:
        ref.stop()
    if srv.kind == "shardis":
        again = Server("shardis", srv.log_dir, threads=1, args=["--save="]).start()
        try:
            check_cut(again.client())
        finally:
            again.stop()


def test_save_while_writing_also_cuts_consistently(tmp_path):
    """SAVE answers when the file is on disk; shardis serves the writers meanwhile."""
    srv = start_target(tmp_path / "server", threads=2, shardis_args=["--save="],
                       redis_args=["--save", ""])
    try:
        r = srv.client()
        fill(r)
        with Writers(srv.port) as writers:
            wait_for(lambda: writers.transfers > 50, timeout=10)
            for _ in range(3):
                assert r.save()
        assert not writers.errors, writers.errors
    finally:
        srv.stop(timeout=30)
    ref = Server("redis", tmp_path / "redis",
                 args=["--dir", str(srv.log_dir), "--dbfilename", "dump.rdb"]).start()
    try:
        r = ref.client()
        balances = r.mget([f"acct:{i}" for i in range(ACCOUNTS)])
        assert sum(int(b) for b in balances) == ACCOUNTS * START_BALANCE
    finally:
        ref.stop()

