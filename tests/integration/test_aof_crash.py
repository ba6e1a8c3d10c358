"""The append-only file when the process dies or the disk fills (issue 15):
  - appendfsync always: writers on 4 connections write over 100,000 keys (strings, hashes, lists,
    sets, sorted sets; MSET, RENAME and SMOVE over keys of different shards; MULTI/EXEC) and note
    every acknowledged command; the server is killed with SIGKILL at a random moment; after a
    restart every acknowledged write is there and every other one is wholly there or wholly
    absent. 20 runs, with --threads 1, 2 and 4 in turn, each killed at its own moment
    ($SHARDIS_TEST_AOF_CRASH_RUNS sets another number: scripts/test.sh runs 20 on the release build and
    fewer on the ASan one, where each run takes several times as long).
  - appendfsync everysec: the same, except that the last ~2 seconds of acknowledged writes may be
    missing (never more, never a part of one).
  - a full disk (a small tmpfs): writes get Redis' -MISCONF and INFO says
    aof_last_write_status:err; once space returns the journal catches up and writes are accepted
    again, and nothing acknowledged is lost. With appendfsync always, the reply of a write the
    disk refused waits until it is on disk. The same on a small ext4 (a loop device), where the
    journal's large rounds go to the disk with direct I/O.
"""

from __future__ import annotations

import contextlib
import os
import random
import signal
import subprocess
import threading
import time

import pytest

from conftest import Error, RespConn, wait_for
from persistence_util import info, launch  # noqa: F401
from test_snapshot_faults import tmpfs

pytestmark = pytest.mark.shardis_only

WRITERS = 4
BATCH = 32    # operations per pipeline
KEYS = 100_000
CRASH_RUNS = int(os.environ.get("SHARDIS_TEST_AOF_CRASH_RUNS", "20"))


# ---- The operations: op i writes keys of its own, "o<i>:...", so its effect can be checked alone.
# Each kind lists its commands, the keys read back to check it (and how), and the states the keys
# can be in: states[j] is the state after the first j of its commands that take effect (a
# MULTI's commands take effect at EXEC).

def op_commands(i: int) -> list[tuple]:
    k = f"o{i}"
    kind = i % 7
    if kind == 0:
        return [("SET", f"{k}:s", f"v{i}")]
    if kind == 1:
        return [("HSET", f"{k}:h", "f1", i, "f2", i)]
    if kind == 2:
        return [("RPUSH", f"{k}:l", "a", "b", "c")]
    if kind == 3:
        return [("MSET", f"{k}:a", i, f"{k}:b", i)]  # keys of different shards, mostly
    if kind == 4:
        return [("MULTI",), ("SET", f"{k}:m", i), ("SADD", f"{k}:t", "x", "y"),
                ("ZADD", f"{k}:z", 1, "a"), ("EXEC",)]
    if kind == 5:
        return [("SET", f"{k}:r", i), ("RENAME", f"{k}:r", f"{k}:r2")]
    return [("SADD", f"{k}:f", "x"), ("SMOVE", f"{k}:f", f"{k}:g", "x")]


def op_reads(i: int) -> list[tuple]:
    k = f"o{i}"
    kind = i % 7
    get = lambda key: ("GET", key)  # noqa: E731
    members = lambda key: ("SMEMBERS", key)  # noqa: E731
    return [
        [get(f"{k}:s")],
        [("HGETALL", f"{k}:h")],
        [("LRANGE", f"{k}:l", 0, -1)],
        [get(f"{k}:a"), get(f"{k}:b")],
        [get(f"{k}:m"), members(f"{k}:t"), ("ZRANGE", f"{k}:z", 0, -1, "WITHSCORES")],
        [get(f"{k}:r"), get(f"{k}:r2")],
        [members(f"{k}:f"), members(f"{k}:g")],
    ][kind]


def op_states(i: int) -> list[tuple]:
    v = str(i).encode()
    return [
        [(None,), (b"v" + v,)],
        [(None,), ((b"f1", v, b"f2", v),)],
        [(None,), ((b"a", b"b", b"c"),)],
        [(None, None), (v, v)],
        [(None, None, None), (v, (b"x", b"y"), (b"a", b"1"))],
        [(None, None), (v, None), (None, v)],
        [(None, None), ((b"x",), None), (None, (b"x",))],
    ][i % 7]


def effects(i: int, commands: int) -> int:
    """How many of op i's first `commands` commands take effect."""
    if i % 7 == 4:
        return 1 if commands == 5 else 0
    return commands


def normalize(read: tuple, value):
    if value is None or value == []:
        return None  # an empty collection does not exist
    if read[0] == "SMEMBERS":
        return tuple(sorted(value))
    if isinstance(value, list):
        return tuple(value)
    return value


def ops_for_keys(keys: int) -> int:
    """How many ops make `keys` keys (the seven kinds in turn)."""
    per_seven = sum(len(op_states(i)[-1]) - op_states(i)[-1].count(None) for i in range(7))
    return keys * 7 // per_seven


# ---- The writers.

class Writers:
    """WRITERS connections, each writing its share of ops 0..n-1 in pipelines of BATCH ops and
    noting, per op, how many commands were sent and how many replies came back, and when the
    last one did."""

    def __init__(self, port: int, n: int):
        self.n = n
        self.sent = [0] * n
        self.acked = [0] * n
        self.acked_at = [0.0] * n
        self.errors: list[tuple[int, bytes]] = []
        self.done = [0] * WRITERS  # ops acknowledged whole, per writer
        self.threads = [threading.Thread(target=self._write, args=(port, w)) for w in range(WRITERS)]

    def start(self):
        for t in self.threads:
            t.start()
        return self

    def wait_done(self, ops: int, timeout: float = 120):
        """Waits until `ops` ops are acknowledged."""
        assert wait_for(lambda: sum(self.done) >= ops, timeout, interval=0.001)

    def join(self):
        for t in self.threads:
            t.join(60)

    def _write(self, port: int, w: int):
        ops = list(range(w, self.n, WRITERS))
        try:
            conn = RespConn(port, timeout=30)
        except OSError:
            return
        try:
            for start in range(0, len(ops), BATCH):
                batch = ops[start:start + BATCH]
                commands = {i: op_commands(i) for i in batch}
                data = b"".join(RespConn.encode(*c) for i in batch for c in commands[i])
                for i in batch:
                    self.sent[i] = len(commands[i])
                conn.send(data)
                for i in batch:
                    for _ in commands[i]:
                        _, reply = conn.read_reply()
                        if isinstance(reply, Error):
                            self.errors.append((i, bytes(reply)))
                        self.acked[i] += 1
                    self.acked_at[i] = time.monotonic()
                    self.done[w] += 1
        except (OSError, ConnectionError):
            pass  # killed
        finally:
            conn.close()


def check_dataset(port: int, writers: Writers, durable_before: float | None = None):
    """Every op is in a state its sent and acknowledged commands allow: acknowledged commands
    took effect (with durable_before, only those acknowledged before that moment must have), the
    ones never sent did not, and each command wholly or not at all. The keys counted in every
    database are exactly the ones those states have."""
    assert not writers.errors, writers.errors[:5]
    conn = RespConn(port, timeout=60)
    last = max((i for i in range(writers.n) if writers.sent[i]), default=-1)
    expected_keys = 0
    bad = []
    for start in range(0, last + 1, 500):
        ops = range(start, min(start + 500, last + 1))
        reads = {i: op_reads(i) for i in ops}
        conn.send(b"".join(RespConn.encode(*r) for i in ops for r in reads[i]))
        for i in ops:
            state = tuple(normalize(r, conn.read_reply()[1]) for r in reads[i])
            states = op_states(i)
            if state not in states:
                bad.append((i, "impossible state", state))
                continue
            reached = states.index(state)
            must = effects(i, writers.acked[i])
            if durable_before is not None and writers.acked_at[i] >= durable_before:
                must = 0  # acknowledged in the last seconds: may be lost with everysec
            if not must <= reached <= effects(i, writers.sent[i]):
                bad.append((i, f"sent {writers.sent[i]} acked {writers.acked[i]}", state))
            expected_keys += len(state) - state.count(None)
    assert not bad, f"{len(bad)} ops wrong, first: {bad[:5]}"
    assert conn.call("DBSIZE") == expected_keys
    conn.close()


def kill9(srv) -> None:
    srv.proc.send_signal(signal.SIGKILL)
    srv.proc.wait(10)
    srv.stop()


# CRASH_RUNS (20) runs, --threads 1, 2, 4 in turn, each killed at a moment drawn from its own seed: once a
# share of the ops between 1% and 90% is acknowledged (a moment of the workload rather than of
# the clock, which runs at another pace on a slower machine or under ASan).
@pytest.mark.parametrize("run", range(CRASH_RUNS))
def test_always_loses_no_acknowledged_write(launch, tmp_path, run):
    threads = [1, 2, 4][run % 3]
    ops = ops_for_keys(KEYS)
    kill_at = int(ops * random.Random(1500 + run).uniform(0.01, 0.9))
    d = tmp_path / "data"
    srv = launch(d, threads=threads, args=["--appendonly=yes", "--appendfsync=always"])
    writers = Writers(srv.port, ops).start()
    writers.wait_done(kill_at)
    kill9(srv)
    writers.join()
    assert sum(writers.done) < ops, "the kill came after the last write"
    again = launch(d, threads=threads, args=["--appendonly=yes", "--appendfsync=always"])
    check_dataset(again.port, writers)


@pytest.mark.parametrize("threads", [2])
def test_everysec_loses_at_most_the_last_seconds(launch, tmp_path, threads):
    d = tmp_path / "data"
    srv = launch(d, threads=threads, args=["--appendonly=yes", "--appendfsync=everysec"])
    # Enough operations to go on past the kill, 3 s after the first 2,000 are acknowledged (a
    # moment of the workload, not of the clock: a loaded machine or ASan runs it at another pace).
    writers = Writers(srv.port, 20 * KEYS).start()
    writers.wait_done(2000)
    time.sleep(3.0)
    killed_at = time.monotonic()
    kill9(srv)
    writers.join()
    assert sum(1 for i in range(writers.n) if writers.acked_at[i] and
               writers.acked_at[i] < killed_at - 2.5) > 1000
    again = launch(d, threads=threads, args=["--appendonly=yes"])
    check_dataset(again.port, writers, durable_before=killed_at - 2.5)


@pytest.mark.parametrize("fsync", ["everysec", "always"])
def test_full_disk_gives_misconf_until_space_returns(launch, tmp_path, fsync):
    disk = tmp_path / "disk"
    with tmpfs(disk, "size=3m"):
        logs = tmp_path / "logs"
        srv = launch(logs, threads=2, args=[f"--dir={disk}", "--appendonly=yes",
                                            f"--appendfsync={fsync}",
                                            "--auto_aof_rewrite_percentage=0"])
        c = srv.client(socket_timeout=30)
        value = "v" * 20_000
        written = []
        held = None
        # Fill the disk: a write that the AOF cannot take gets its reply (everysec) or keeps it
        # until the disk takes it (always); the writes after it get -MISCONF.
        for i in range(400):
            conn = RespConn(srv.port, timeout=30)
            conn.send_command("SET", f"k{i}", value)
            conn.sock.settimeout(2)
            try:
                _, reply = conn.read_reply()
            except TimeoutError:
                assert fsync == "always"
                held = (conn, f"k{i}")
                break
            conn.close()
            if isinstance(reply, Error):
                break
            assert reply == b"OK"
            written.append(f"k{i}")
        else:
            pytest.fail("the disk never filled")
        assert wait_for(lambda: info(srv.raw())["aof_last_write_status"] == "err", 10)
        conn = srv.raw()
        reply = conn.call("SET", "refused", "1")
        assert isinstance(reply, Error)
        assert bytes(reply) == b"MISCONF Errors writing to the AOF file: No space left on device"
        assert isinstance(conn.call("PING"), Error)  # as Redis: PING is refused too
        assert conn.call("GET", written[0]) == value.encode()  # reads go on
        # Space returns: the journal catches up, the held reply comes, writes are accepted.
        subprocess.run(["mount", "-o", "remount,size=64m", str(disk)], check=True)
        if held is not None:
            held[0].sock.settimeout(30)
            assert held[0].read_reply()[1] == b"OK"
            written.append(held[1])
            held[0].close()
        assert_recovered(launch, srv, conn, logs, disk, written)


def assert_recovered(launch, srv, conn, logs, disk, written: list[str]) -> None:
    """After space returned: the journal is healthy again and takes writes; after a SIGKILL the
    AOF passes redis-check-aof and has every acknowledged write and not the refused one."""
    assert wait_for(lambda: info(srv.raw())["aof_last_write_status"] == "ok", 10)
    assert conn.call("SET", "after", "1") == b"OK"
    written.append("after")
    conn.close()
    time.sleep(0.5)  # everysec: the last writes reach the file within a round of the writer
    kill9(srv)
    check = subprocess.run(["redis-check-aof",
                            str(disk / "appendonlydir" / "appendonly.aof.manifest")],
                           capture_output=True, timeout=60)
    assert check.returncode == 0, check.stdout + check.stderr
    again = launch(logs, threads=2, args=[f"--dir={disk}", "--appendonly=yes"])
    c = again.client()
    assert c.get("refused") is None
    for key in written:
        assert c.exists(key), key
    c.close()


@contextlib.contextmanager
def small_ext4(path, megabytes: int):
    """A file system that takes direct I/O (statx's STATX_DIOALIGN), unlike tmpfs: an ext4 image
    of `megabytes` on a loop device, mounted at `path`."""
    image = path.parent / (path.name + ".img")
    with open(image, "wb") as f:
        f.truncate(megabytes << 20)
    subprocess.run(["mkfs.ext4", "-q", "-F", str(image)], check=True)
    path.mkdir(parents=True, exist_ok=True)
    subprocess.run(["mount", "-o", "loop", str(image), str(path)], check=True)
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], check=False)
        image.unlink(missing_ok=True)


def test_full_disk_during_direct_writes(launch, tmp_path):
    """The journal's direct writes (rounds of 64 KiB or more on ext4, io/append_file.h) meet a full
    disk: writes get -MISCONF, and when space returns (a file deleted) the journal catches up.
    The AOF then passes redis-check-aof and replays every acknowledged write."""
    disk = tmp_path / "disk"
    with small_ext4(disk, 24):
        filler = disk / "filler"
        free = os.statvfs(disk).f_bavail * os.statvfs(disk).f_frsize
        with open(filler, "wb") as f:  # leave ~4 MB
            f.write(b"\0" * max(0, free - (4 << 20)))
        logs = tmp_path / "logs"
        srv = launch(logs, threads=2, args=[f"--dir={disk}", "--appendonly=yes",
                                            "--appendfsync=everysec",
                                            "--auto_aof_rewrite_percentage=0"])
        conn = srv.raw()
        value = "v" * 30_000
        written = []
        # Pipelines of 16 SETs of 30 KB: each round of the writer is far over 64 KiB.
        for batch in range(200):
            keys = [f"k{batch}:{j}" for j in range(16)]
            conn.send(b"".join(RespConn.encode("SET", key, value) for key in keys))
            replies = [conn.read_reply()[1] for _ in keys]
            ok = [key for key, reply in zip(keys, replies) if reply == b"OK"]
            written += ok
            if len(ok) < len(keys):
                assert all(isinstance(r, Error) and bytes(r).startswith(b"MISCONF")
                           for r in replies[len(ok):])
                break
        else:
            pytest.fail("the disk never filled")
        assert wait_for(lambda: info(srv.raw())["aof_last_write_status"] == "err", 10)
        reply = conn.call("SET", "refused", "1")
        assert bytes(reply) == b"MISCONF Errors writing to the AOF file: No space left on device"
        assert conn.call("GET", written[-1]) == value.encode()  # reads go on
        log = srv.log_path.read_text(errors="replace")
        assert "written through the page cache" not in log  # the direct path was the one taken
        # Space returns: the journal catches up and writes are accepted again.
        filler.unlink()
        assert_recovered(launch, srv, conn, logs, disk, written)


def test_always_replies_wait_for_their_fsync(launch, tmp_path):
    """A SIGKILL keeps the page cache, so the crash test alone cannot tell a reply that waited for
    its write from one that waited for its fsync. One client's writes one after the other can
    share no fsync when each reply waits for one: the fsync count grows by at least one a write
    (and by about one a second with everysec)."""
    for fsync, least, most in (("always", 200, None), ("everysec", 0, 5)):
        srv = launch(tmp_path / fsync, threads=2, args=["--appendonly=yes", f"--appendfsync={fsync}"])
        conn = srv.raw()
        before = int(info(conn)["aof_fsyncs"])
        for i in range(200):
            assert conn.call("SET", f"k{i}", i) == b"OK"
        after = int(info(conn)["aof_fsyncs"])
        assert after - before >= least
        if most is not None:
            assert after - before <= most
        conn.close()
