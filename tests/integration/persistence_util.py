"""Helpers of the snapshot tests (test_persistence*.py): servers started and stopped on a data
directory of their own, every type and encoding in every database, whole-dataset snapshots.

Until the snapshot CONFIG parameters land, the file is always `dump.rdb` in the server's working
directory (its log_dir) and no test passes `dir`, `dbfilename` or `save` to shardis: files are
placed by writing them into the log_dir before the start, and saved with SAVE (or SHUTDOWN
SAVE) before a stop.
"""

from __future__ import annotations

import pathlib
import re
import time

import pytest

from conftest import Server, RespConn, start_target, wait_for
from test_dump_restore import assert_snapshots_match
from test_rdb_format import fill, redis_snapshot

# What a server's log must never hold, whatever file it was given.
CRASH_MARKERS = ("AddressSanitizer", "LeakSanitizer", "UndefinedBehaviorSanitizer",
                 "runtime error:", "*** SIG", "Check failed", "terminate called")


def fill_everything(srv) -> None:
    """test_rdb_format.fill (every type and encoding, small and large, TTLs, dbs 0, 1 and 3) plus
    a key of each kind in every database, keys with {hashtag}s and some larger collections."""
    c = srv.client()
    fill(c)
    c.hset("h:huge", mapping={f"f{i}": f"value-{i}" for i in range(20000)})
    c.sadd("set:huge", *[f"member-{i}" for i in range(20000)])
    c.zadd("z:huge", {f"m{i}": i / 7 for i in range(20000)})
    c.rpush("l:huge", *[f"{i}" * (i % 50) for i in range(50000)])
    for db in range(16):
        cd = srv.client(db=db)
        cd.set(f"db{db}:string", f"value in db {db}")
        cd.set(f"db{db}:int", db * 1000)
        cd.rpush(f"db{db}:list", *range(db + 1))
        cd.hset(f"db{db}:hash", mapping={"db": db, "name": f"database {db}"})
        cd.pexpireat(f"db{db}:hash", int(time.time() * 1000) + 3_600_000 + db)
        cd.close()
    for tag in ("user:1", "user:2", "order"):
        c.set(f"{{{tag}}}:name", tag)
        c.rpush(f"{{{tag}}}:list", tag, "x", "y")
        c.sadd(f"prefix{{{tag}}}:set", tag, 1, 2)
        c.pexpire(f"{{{tag}}}:name", 600_000)
    c.set("{}:empty-tag", "empty braces hash the whole key")
    c.close()


def full_snapshot(srv) -> dict:
    """redis_snapshot (per db and key: type, encoding, PTTL, value) with each key's absolute
    deadline (PEXPIRETIME) under "at", which a file keeps to the millisecond."""
    snap = redis_snapshot(srv)
    for db in range(16):
        keys = [k for d, k in snap if d == db]
        if not keys:
            continue
        c = srv.client(db=db)
        for key in keys:
            snap[(db, key)]["at"] = c.pexpiretime(key)
        c.close()
    return snap


def assert_same_dataset(got: dict, want: dict, *, got_is_shardis: bool = True) -> None:
    """Same keys, types, values and encodings (test_dump_restore's rules) and deadlines to the
    millisecond. The PTTLs, read seconds apart on a loaded machine, are only checked for their
    sign: the deadlines say it all."""
    got = {k: dict(v, pttl=want[k]["pttl"]) if k in want and min(v["pttl"], want[k]["pttl"]) >= 0
           else v for k, v in got.items()}
    assert_snapshots_match(got, want, ours_is_shardis=got_is_shardis)
    for k, w in want.items():
        assert got[k]["at"] == w["at"], (k, got[k]["at"], w["at"])


def connect(srv: Server, timeout: float = 10.0) -> RespConn:
    """A RespConn to srv as soon as it accepts connections."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return srv.raw()
        except OSError:
            if time.monotonic() > deadline or srv.proc.poll() is not None:
                raise
            time.sleep(0.005)


def shutdown(srv: Server, *options: str, timeout: float = 20.0) -> int:
    """SHUTDOWN [options] on srv: asserts the connection closes without a reply, returns the exit
    status."""
    conn = srv.raw()
    conn.send_command("SHUTDOWN", *options)
    data, closed = conn.read_all_until_closed(timeout)
    conn.close()
    assert closed and data == b"", (options, data)
    srv.proc.wait(timeout)
    srv.stop()  # forgets it (it has exited)
    return srv.proc.returncode


def info(conn: RespConn, section: str = "persistence") -> dict:
    text = conn.call("INFO", section)
    assert isinstance(text, bytes), text
    return dict(line.split(":", 1) for line in text.decode().splitlines() if ":" in line)


def wait_bgsave_done(conn: RespConn, timeout: float = 30.0) -> dict:
    fields = wait_for(lambda: (lambda f: f if f["rdb_bgsave_in_progress"] == "0" else None)(
        info(conn)), timeout)
    assert fields, "the background save did not end"
    return fields


def start_on_file(d: pathlib.Path, data: bytes | None, threads: int = 2):
    """Writes data (None: no file) as d/dump.rdb and starts shardis on it. Returns (server, log
    text of this start): the server is running when it loaded the file, else it exited and its
    returncode tells how."""
    d.mkdir(parents=True, exist_ok=True)
    if data is not None:
        (d / "dump.rdb").write_bytes(data)
    srv = Server("shardis", d, threads=threads)
    start = srv.log_path.stat().st_size if srv.log_path.exists() else 0
    try:
        srv.start()
    except RuntimeError:
        srv.proc.wait(10)
    log = srv.log_path.read_bytes()[start:].decode(errors="replace")
    for marker in CRASH_MARKERS:
        assert marker not in log, f"{marker!r} in the log of a start on {d}:\n{log[-3000:]}"
    return srv, log


def error_offset(log: str) -> int:
    """The byte offset the fatal error line names."""
    line = next(l for l in log.splitlines() if "Fatal error loading" in l)
    m = re.search(r"at byte (\d+)", line)
    assert m, line
    return int(m.group(1))


@pytest.fixture
def launch():
    """launch(log_dir, threads=None, redis=False, args=()) -> a started Server on that directory;
    every one still running at the end of the test is stopped and checked to exit 0."""
    started: list[Server] = []

    def start(log_dir, threads=None, redis=False, args=()):
        if redis:
            srv = Server("redis", log_dir, args=args).start()
        else:
            srv = start_target(log_dir, threads=threads, shardis_args=args, redis_args=args)
        started.append(srv)
        return srv

    yield start
    for srv in started:
        if srv.alive():
            srv.stop_and_check()


__all__ = ["assert_same_dataset", "connect",
           "error_offset", "fill_everything", "full_snapshot", "info", "launch", "shutdown",
           "start_on_file", "wait_bgsave_done"]
