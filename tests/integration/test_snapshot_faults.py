"""Snapshots when things go wrong: kill -9 in the middle of a BGSAVE, a full disk, a read-only
directory, and the shutdown paths (SIGTERM with and without a schedule).

A full disk and a read-only directory are real file systems: small tmpfs mounts (the tests run
as root, as CI does). Runs against redis-server too (SHARDIS_TEST_TARGET=redis).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess

import pytest
import redis

from conftest import start_target, wait_for

MISCONF = ("MISCONF Redis is configured to save RDB snapshots, but it's currently unable to "
           "persist to disk.")


def start(log_dir, *args, threads=2):
    """The server under test with its files in log_dir and the given persistence settings; `dir`
    may be changed at runtime (Redis' enable-protected-configs)."""
    args = list(args) + ["--enable_protected_configs=yes"]
    shardis_args = args
    redis_args = []
    for a in args:
        name, _, value = a[2:].partition("=")
        redis_args += [f"--{name.replace('_', '-')}", value]
    return start_target(log_dir, threads=threads, shardis_args=shardis_args, redis_args=redis_args)


@contextlib.contextmanager
def tmpfs(path, options: str):
    path.mkdir(parents=True, exist_ok=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(path)], check=True)
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], check=False)


def fill(r: redis.Redis, n: int, size: int = 100, prefix: str = "k"):
    p = r.pipeline(transaction=False)
    for i in range(n):
        p.set(f"{prefix}:{i}", os.urandom(size // 2).hex())
    p.execute()


def wait_bgsave_done(r: redis.Redis, timeout: float = 60) -> dict:
    assert wait_for(lambda: r.info("persistence")["rdb_bgsave_in_progress"] == 0, timeout)
    return r.info("persistence")


def test_kill_9_during_bgsave_leaves_the_previous_file(tmp_path):
    srv = start(tmp_path, "--save=")
    r = srv.client()
    fill(r, 2000)
    assert r.save()
    dump = srv.log_dir / "dump.rdb"
    before = dump.read_bytes()
    fill(r, 4000, prefix="later")
    r.config_set("rdb-key-save-delay", 2000)  # ~1 s per 500 keys: the save is still running
    assert r.bgsave()
    assert wait_for(lambda: any(p.name.startswith("temp-") for p in srv.log_dir.iterdir()), 10)
    assert r.info("persistence")["rdb_bgsave_in_progress"] == 1
    srv.proc.kill()  # SIGKILL
    srv.proc.wait()
    for child in subprocess.run(["pgrep", "-P", str(srv.proc.pid)], capture_output=True,
                                text=True).stdout.split():
        os.kill(int(child), signal.SIGKILL)  # redis' saving child
    assert dump.read_bytes() == before
    again = start(srv.log_dir, "--save=")
    try:
        r = again.client()
        assert r.dbsize() == 2000
        assert r.exists("later:0") == 0
    finally:
        again.stop_and_check()


@pytest.mark.parametrize("fault", ["full", "read-only"])
def test_failed_bgsave_reports_err_and_refuses_writes(tmp_path, fault):
    data = tmp_path / "data"
    options = "size=256k" if fault == "full" else "size=1m,ro"
    with tmpfs(data, options):
        srv = start(tmp_path / "srv", "--save=3600 1")
        try:
            r = srv.client()
            fill(r, 5000)  # ~1 MB: more than the full disk holds
            r.config_set("dir", str(data))
            assert r.bgsave()
            info = wait_bgsave_done(r)
            assert info["rdb_last_bgsave_status"] == "err"
            assert not (data / "dump.rdb").exists()
            assert [p.name for p in data.iterdir()] == [], "the temp file was left behind"
            # Writes (and PING, as Redis) are refused; reads go on.
            with pytest.raises(redis.ResponseError, match="^" + MISCONF):
                r.set("x", "y")
            with pytest.raises(redis.ResponseError, match="^" + MISCONF):
                r.ping()
            assert r.get("k:0") is not None
            assert r.dbsize() == 5000
            # A write queued in MULTI is refused the same way, and EXEC aborts.
            tx = r.pipeline(transaction=True)
            tx.set("x", "y")
            with pytest.raises(redis.ResponseError):
                tx.execute()
            # Turning the option off lets writes through; a good save clears the error too.
            r.config_set("stop-writes-on-bgsave-error", "no")
            assert r.set("x", "y")
            r.config_set("stop-writes-on-bgsave-error", "yes")
            with pytest.raises(redis.ResponseError, match="^" + MISCONF):
                r.set("x", "y")
            r.config_set("dir", str(srv.log_dir))
            assert r.bgsave()
            assert wait_bgsave_done(r)["rdb_last_bgsave_status"] == "ok"
            assert r.set("x", "z")
            assert r.ping()
        finally:
            srv.stop_and_check()


def test_sigterm_saves_when_a_schedule_is_set(tmp_path):
    srv = start(tmp_path, "--save=3600 1")
    r = srv.client()
    fill(r, 100)
    r.set("ttl", "v", ex=1000)
    srv.stop_and_check()
    assert (srv.log_dir / "dump.rdb").exists()
    again = start(srv.log_dir, "--save=")
    try:
        r = again.client()
        assert r.dbsize() == 101
        assert 990 < r.ttl("ttl") <= 1000
    finally:
        again.stop_and_check()


def test_sigterm_does_not_save_without_a_schedule(tmp_path):
    srv = start(tmp_path, "--save=")
    fill(srv.client(), 100)
    srv.stop_and_check()
    assert not (srv.log_dir / "dump.rdb").exists()


def test_sigterm_with_a_failing_save_keeps_serving(tmp_path):
    """Redis' finishShutdown: a save that fails at shutdown keeps the server running."""
    data = tmp_path / "data"
    with tmpfs(data, "size=1m,ro"):
        srv = start(tmp_path / "srv", "--save=3600 1")
        try:
            r = srv.client()
            r.set("k", "v")
            r.config_set("dir", str(data))
            srv.proc.send_signal(signal.SIGTERM)
            assert wait_for(lambda: "can't exit" in srv.tail(), 10), srv.tail()
            assert srv.alive()
            assert r.get("k") == b"v"
            r.config_set("dir", str(srv.log_dir))
        finally:
            srv.stop_and_check()
        assert (srv.log_dir / "dump.rdb").exists()


def test_the_save_schedule_triggers_a_bgsave(tmp_path):
    srv = start(tmp_path, "--save=1 3")
    try:
        r = srv.client()
        r.set("a", 1)
        r.set("b", 1)
        r.set("c", 1)  # three changes: the rule holds after its second
        assert wait_for(lambda: (srv.log_dir / "dump.rdb").exists(), 10)
        assert wait_for(lambda: r.info("persistence")["rdb_changes_since_last_save"] == 0, 10)
    finally:
        srv.stop_and_check()
