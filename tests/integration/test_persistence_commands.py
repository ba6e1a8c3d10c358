"""SAVE, BGSAVE [SCHEDULE], LASTSAVE, SHUTDOWN [NOSAVE|SAVE] [NOW] [FORCE] [ABORT] and DEBUG RELOAD
[MERGE] [NOFLUSH] [NOSAVE], differentially: the same commands go to shardis and to the Debian
redis-server 7.0, each on a data directory of its own, and the raw replies must be the same.

A background save that lasts: shardis gets a couple of million keys (DEBUG POPULATE);
redis-server a thousand and rdb-key-save-delay (shardis does not take that parameter yet).
"""

from __future__ import annotations

import threading
import time

import pytest

from conftest import busy_writers
from persistence_util import (info, launch, shutdown, wait_bgsave_done)  # noqa: F401

SLOW_SAVE_KEYS = 2_000_000


@pytest.fixture
def pair(launch, tmp_path):
    """[shardis, redis-server], each started on a fresh directory; conns: a RespConn to each."""
    servers = [launch(tmp_path / "shardis", threads=2), launch(tmp_path / "redis", redis=True)]
    conns = [s.raw(timeout=60) for s in servers]
    yield servers, conns
    for c in conns:
        c.close()


def same(conns, *cmd) -> bytes:
    """Sends cmd to both; asserts the raw replies are the same; returns shardis' reply."""
    got = [c.call_raw(*cmd) for c in conns]
    assert got[0] == got[1], (cmd, got)
    return got[0]


def pipelined(conns, *cmds) -> list[bytes]:
    """Sends all cmds to each server in one write, then reads the replies; asserts they are the
    same on both and returns shardis'."""
    replies = []
    for c in conns:
        c.send(b"".join(c.encode(*cmd) for cmd in cmds))
        replies.append([c.read_reply()[0] for _ in cmds])
    assert replies[0] == replies[1], list(zip(cmds, *replies))
    return replies[0]


def make_saves_slow(servers, conns) -> None:
    ours, ref = conns
    ours.send_command("DEBUG", "POPULATE", SLOW_SAVE_KEYS)
    assert ours.read_reply()[1] == b"OK"
    assert ref.call("DEBUG", "POPULATE", 1000) == b"OK"
    assert ref.call("CONFIG", "SET", "rdb-key-save-delay", 1000) == b"OK"  # ~1 s a save


def test_save_and_lastsave(pair):
    servers, conns = pair
    before = [int(info(c)["rdb_saves"]) for c in conns]
    t0 = same_lastsave(conns)
    assert abs(t0 - time.time()) < 10
    time.sleep(1.1)
    same(conns, "SET", "k", "v")
    assert same(conns, "SAVE") == b"+OK\r\n"
    t1 = same_lastsave(conns)
    assert t1 > t0
    for srv, c, n in zip(servers, conns, before):
        assert (srv.log_dir / "dump.rdb").exists()
        fields = info(c)
        assert fields["rdb_changes_since_last_save"] == "0"
        assert int(fields["rdb_last_save_time"]) == t1
        assert int(fields["rdb_saves"]) == n + 1
        assert not list(srv.log_dir.glob("temp-*.rdb"))
    same(conns, "LASTSAVE", "extra")


def test_changes_since_last_save(pair):
    """The count of writes since the last save (what the save schedule looks at)."""
    _, conns = pair
    same(conns, "SET", "k", "v")
    same(conns, "INCR", "n")
    same(conns, "RPUSH", "l", "a", "b", "c")
    same(conns, "GET", "k")
    counts = [info(c)["rdb_changes_since_last_save"] for c in conns]
    assert counts[0] == counts[1] == "5", counts  # RPUSH counts one per element, as in Redis
    assert same(conns, "SAVE") == b"+OK\r\n"
    assert [info(c)["rdb_changes_since_last_save"] for c in conns] == ["0", "0"]
    same(conns, "DEL", "k")
    assert [info(c)["rdb_changes_since_last_save"] for c in conns] == ["1", "1"]


def same_lastsave(conns) -> int:
    values = [c.call("LASTSAVE") for c in conns]
    assert abs(values[0] - values[1]) <= 1, values
    return values[0]


def test_bgsave_replies(pair):
    servers, conns = pair
    make_saves_slow(servers, conns)
    assert same(conns, "BGSAVE") == b"+Background saving started\r\n"
    for c in conns:
        assert info(c)["rdb_bgsave_in_progress"] == "1"
    for cmd in (("BGSAVE",), ("BGSAVE", "SCHEDULE"), ("SAVE",)):
        assert same(conns, *cmd) == b"-ERR Background save already in progress\r\n"
    for srv, c in zip(servers, conns):
        fields = wait_bgsave_done(c)
        assert fields["rdb_last_bgsave_status"] == "ok"
        assert (srv.log_dir / "dump.rdb").exists()
        assert not list(srv.log_dir.glob("temp-*.rdb"))
    # BGSAVE SCHEDULE with nothing running starts one at once.
    assert same(conns, "BGSAVE", "SCHEDULE") == b"+Background saving started\r\n"
    for c in conns:
        assert wait_bgsave_done(c)["rdb_last_bgsave_status"] == "ok"


def test_bgsave_is_in_progress_from_its_reply_on(pair):
    """A command right behind BGSAVE (pipelined) already sees the save in progress."""
    servers, conns = pair
    make_saves_slow(servers, conns)
    replies = pipelined(conns, ("BGSAVE",), ("BGSAVE",), ("BGSAVE", "SCHEDULE"), ("SAVE",))
    assert replies == [b"+Background saving started\r\n",
                       b"-ERR Background save already in progress\r\n",
                       b"-ERR Background save already in progress\r\n",
                       b"-ERR Background save already in progress\r\n"]
    for c in conns:
        wait_bgsave_done(c)


@pytest.mark.parametrize("args", [("foo",), ("SCHEDULE", "extra"), ("schedule", "schedule")])
def test_bgsave_syntax(pair, args):
    _, conns = pair
    assert same(conns, "BGSAVE", *args) == b"-ERR syntax error\r\n"
    assert [info(c)["rdb_bgsave_in_progress"] for c in conns] == ["0", "0"]


def test_bgsave_in_multi_is_scheduled(pair):
    servers, conns = pair
    same(conns, "SET", "k", "v")
    before = [int(info(c)["rdb_saves"]) for c in conns]
    replies = pipelined(conns, ("MULTI",), ("BGSAVE",), ("SET", "k2", "v2"), ("EXEC",))
    assert replies[-1] == b"*2\r\n+Background saving scheduled\r\n+OK\r\n"
    # The scheduled save runs soon after the EXEC.
    for srv, c, n in zip(servers, conns, before):
        deadline = time.monotonic() + 10
        while int(info(c)["rdb_saves"]) <= n:
            assert time.monotonic() < deadline, f"{srv.name}: the scheduled save did not run"
            time.sleep(0.05)
        wait_bgsave_done(c)
        assert (srv.log_dir / "dump.rdb").exists()


@pytest.mark.parametrize("cmd", [("SAVE",), ("SHUTDOWN",), ("SHUTDOWN", "NOSAVE"),
                                 ("SHUTDOWN", "SAVE", "NOW", "FORCE"), ("SHUTDOWN", "ABORT")])
def test_save_and_shutdown_refused_in_multi(pair, cmd):
    servers, conns = pair
    replies = pipelined(conns, ("MULTI",), ("SET", "k", "v"), cmd, ("EXEC",), ("EXISTS", "k"))
    assert replies == [b"+OK\r\n", b"+QUEUED\r\n",
                       b"-ERR Command not allowed inside a transaction\r\n",
                       b"-EXECABORT Transaction discarded because of previous errors.\r\n",
                       b":0\r\n"]
    for srv in servers:
        assert srv.alive()
        assert not (srv.log_dir / "dump.rdb").exists()


@pytest.mark.parametrize("args", [("ABORT",), ("abort",), ("SAVE", "NOSAVE"), ("NOSAVE", "SAVE"),
                                  ("BOGUS",), ("ABORT", "NOW"), ("NOSAVE", "ABORT"),
                                  ("FORCE", "ABORT"), ("SAVE", "BOGUS")])
def test_shutdown_refusals(pair, args):
    servers, conns = pair
    reply = same(conns, "SHUTDOWN", *args)
    assert reply.startswith(b"-ERR"), reply
    assert all(srv.alive() for srv in servers)
    assert same(conns, "PING") == b"+PONG\r\n"


@pytest.mark.parametrize("option", ["SAVE", "NOSAVE"])
@pytest.mark.parametrize("kind", ["shardis", "redis"])
def test_shutdown_save_and_nosave(launch, tmp_path, kind, option):
    """SHUTDOWN SAVE writes the file (the process exits 0 and the next start has everything);
    SHUTDOWN NOSAVE leaves the last saved file as it was."""
    d = tmp_path / "data"
    srv = launch(d, threads=2, redis=kind == "redis")
    c = srv.client()
    c.set("saved", "1")
    assert c.save() is True
    saved = (d / "dump.rdb").read_bytes()
    c.rpush("l", *range(100))
    c.set("t", "x", ex=1000)
    assert shutdown(srv, option, "NOW") == 0
    assert ((d / "dump.rdb").read_bytes() == saved) == (option == "NOSAVE")
    assert not list(d.glob("temp-*.rdb"))
    again = launch(d, threads=4, redis=kind == "redis")
    c = again.client()
    assert c.get("saved") == b"1"
    if option == "SAVE":
        assert c.llen("l") == 100 and 990_000 < c.pttl("t") <= 1_000_000
    else:
        assert c.exists("l", "t") == 0


def test_debug_reload_options(pair):
    servers, conns = pair
    same(conns, "SET", "a", "1")
    assert same(conns, "DEBUG", "RELOAD") == b"+OK\r\n"
    assert same(conns, "GET", "a") == b"$1\r\n1\r\n"
    # NOSAVE: the file on disk comes back, what changed since is gone.
    same(conns, "SET", "a", "2")
    same(conns, "SET", "b", "x")
    assert same(conns, "DEBUG", "RELOAD", "NOSAVE") == b"+OK\r\n"
    assert same(conns, "MGET", "a", "b") == b"*2\r\n$1\r\n1\r\n$-1\r\n"
    # MERGE NOFLUSH NOSAVE: the file's keys win, the others stay.
    same(conns, "SET", "a", "3")
    same(conns, "SET", "c", "y")
    assert same(conns, "DEBUG", "RELOAD", "MERGE", "NOFLUSH", "NOSAVE") == b"+OK\r\n"
    assert same(conns, "MGET", "a", "c") == b"*2\r\n$1\r\n1\r\n$1\r\ny\r\n"
    # MERGE alone: saved, flushed, loaded.
    assert same(conns, "debug", "reload", "merge") == b"+OK\r\n"
    assert same(conns, "MGET", "a", "c") == b"*2\r\n$1\r\n1\r\n$1\r\ny\r\n"
    assert same(conns, "DBSIZE") == b":2\r\n"
    same(conns, "DEBUG", "RELOAD", "BOGUS")
    same(conns, "DEBUG", "RELOAD", "NOSAVE", "EXTRA")
    assert same(conns, "DBSIZE") == b":2\r\n"


def test_debug_reload_inside_exec(pair):
    # The EXEC holds only the keys of its other commands; DEBUG RELOAD's save and load run over
    # every shard (shardis crashed here: its cut nested in an EXEC that held one shard).
    servers, conns = pair
    same(conns, "RPUSH", "k{a}", "a", "b")
    same(conns, "SET", "other{b}", "1")
    replies = pipelined(conns, ("MULTI",), ("LPUSH", "k{a}", "x"), ("DEBUG", "RELOAD"),
                        ("LRANGE", "k{a}", "0", "-1"), ("EXEC",))
    assert replies[-1] == b"*3\r\n:3\r\n+OK\r\n*3\r\n$1\r\nx\r\n$1\r\na\r\n$1\r\nb\r\n"
    assert all(srv.alive() for srv in servers)
    assert same(conns, "MGET", "other{b}", "missing") == b"*2\r\n$1\r\n1\r\n$-1\r\n"


def test_debug_reload_nosave_without_a_file(pair):
    servers, conns = pair
    same(conns, "SET", "a", "1")
    reply = same(conns, "DEBUG", "RELOAD", "NOSAVE")
    assert reply.startswith(b"-ERR Error trying to load the RDB dump"), reply
    assert all(srv.alive() for srv in servers)
    same(conns, "PING")


def test_flushall_during_bgsave(pair, launch):
    servers, conns = pair
    make_saves_slow(servers, conns)
    replies = pipelined(conns, ("BGSAVE",), ("FLUSHALL",), ("DBSIZE",))
    assert replies == [b"+Background saving started\r\n", b"+OK\r\n", b":0\r\n"]
    for srv, c in zip(servers, conns):
        fields = wait_bgsave_done(c)
        # As Redis' killed child: the aborted save is not an error, writes go on.
        assert fields["rdb_last_bgsave_status"] == "ok", srv.name
        assert not list(srv.log_dir.glob("temp-*.rdb")), srv.name
    assert same(conns, "SET", "after", "1") == b"+OK\r\n"
    # A new save works, and what it wrote is only what came after the FLUSHALL.
    assert same(conns, "BGSAVE") == b"+Background saving started\r\n"
    for c in conns:
        assert wait_bgsave_done(c)["rdb_last_bgsave_status"] == "ok"
    for c in conns:
        c.close()
    for srv in servers:
        assert shutdown(srv, "NOSAVE") == 0
        again = launch(srv.log_dir, threads=2, redis=srv.kind == "redis")
        c = again.client()
        assert c.dbsize() == 1 and c.get("after") == b"1", srv.name


def test_failed_saves(pair):
    """A save that cannot create its temp file (a directory stands at temp-<pid>.rdb): SAVE,
    DEBUG RELOAD and SHUTDOWN SAVE fail with Redis' replies and change nothing; SHUTDOWN SAVE
    FORCE exits anyway."""
    servers, conns = pair
    same(conns, "SET", "k", "v")
    blockers = []
    for srv in servers:
        blocker = srv.log_dir / f"temp-{srv.proc.pid}.rdb"
        blocker.mkdir()
        blockers.append(blocker)
    try:
        t0 = same_lastsave(conns)
        time.sleep(1.1)
        assert same(conns, "SAVE") == b"-ERR\r\n"
        assert same(conns, "DEBUG", "RELOAD") == b"-ERR\r\n"
        assert same(conns, "GET", "k") == b"$1\r\nv\r\n"
        assert same(conns, "SHUTDOWN", "SAVE") == \
            b"-ERR Errors trying to SHUTDOWN. Check logs.\r\n"
        assert all(srv.alive() for srv in servers)
        assert same(conns, "SET", "k2", "v2") == b"+OK\r\n"  # a failed SHUTDOWN unpauses writes
        assert same_lastsave(conns) == t0
        for srv in servers:
            assert not (srv.log_dir / "dump.rdb").exists()
        # Once the directory is gone, saves work again.
        for blocker in blockers:
            blocker.rmdir()
        assert same(conns, "SAVE") == b"+OK\r\n"
        assert same_lastsave(conns) > t0
        for blocker in blockers:
            blocker.mkdir()
        for srv in servers:
            assert shutdown(srv, "SAVE", "FORCE") == 0
    finally:
        for blocker in blockers:
            if blocker.exists():
                blocker.rmdir()


@pytest.mark.parametrize("kind", ["shardis", "redis"])
def test_bgsave_is_a_point_in_time_snapshot(launch, tmp_path, kind):
    """Writes that come after BGSAVE's reply, to keys the save has or has not written yet, are
    not in the file: it holds the dataset as it was when BGSAVE answered."""
    d = tmp_path / "data"
    srv = launch(d, threads=2, redis=kind == "redis")
    c = srv.client(socket_timeout=120)
    n = 400_000
    c.hset("big:hash", mapping={f"f{i}": i for i in range(5000)})
    c.rpush("big:list", *range(5000))
    c.zadd("big:zset", {f"m{i}": i for i in range(5000)})
    assert c.execute_command("DEBUG", "POPULATE", n) == b"OK"
    assert c.bgsave() is True
    # Right behind the reply: overwrite, delete, grow, rename, expire and add keys all over the
    # keyspace (the save is still writing: ~1 s for this many keys).
    pipe = c.pipeline(transaction=False)
    for i in range(0, n, 97):
        pipe.set(f"key:{i}", "changed")
        pipe.delete(f"key:{i + 1}")
        pipe.append(f"key:{i + 2}", "-appended")
        pipe.pexpire(f"key:{i + 3}", 1)
        pipe.set(f"new:{i}", "new")
    pipe.hset("big:hash", "f1", "changed")
    pipe.hdel("big:hash", "f2")
    pipe.rpush("big:list", "pushed")
    pipe.zadd("big:zset", {"m1": -1})
    pipe.rename("key:5", "renamed:5")
    pipe.flushdb()
    pipe.execute()
    raw = srv.raw()
    wait_bgsave_done(raw, timeout=60)
    raw.close()
    assert shutdown(srv, "NOSAVE") == 0
    again = launch(d, threads=4, redis=kind == "redis")
    c = again.client(socket_timeout=120)
    assert c.dbsize() == n + 3
    for start in range(0, n, 20_000):
        keys = [f"key:{i}" for i in range(start, min(n, start + 20_000))]
        values = c.mget(keys)
        bad = [(k, v) for k, v in zip(keys, values) if v != f"value:{k[4:]}".encode()]
        assert not bad, bad[:10]
    assert c.ttl("key:3") == -1
    assert c.hlen("big:hash") == 5000 and c.hget("big:hash", "f1") == b"1"
    assert c.llen("big:list") == 5000 and c.zscore("big:zset", "m1") == 1.0


def test_info_persistence_fields(pair):
    _, conns = pair
    fresh = [info(c) for c in conns]
    for name in ("loading", "async_loading", "rdb_changes_since_last_save",
                 "rdb_bgsave_in_progress", "rdb_last_bgsave_status", "rdb_last_bgsave_time_sec",
                 "rdb_current_bgsave_time_sec", "rdb_saves", "rdb_last_load_keys_expired",
                 "rdb_last_load_keys_loaded", "aof_enabled"):
        assert fresh[0][name] == fresh[1][name], (name, fresh[0][name], fresh[1][name])
    assert same(conns, "BGSAVE") == b"+Background saving started\r\n"
    done = [wait_bgsave_done(c) for c in conns]
    for name in ("rdb_bgsave_in_progress", "rdb_last_bgsave_status",
                 "rdb_current_bgsave_time_sec", "rdb_saves", "rdb_changes_since_last_save"):
        assert done[0][name] == done[1][name], (name, done[0][name], done[1][name])
    # Whole seconds of the wall clock on both: a save that crosses a second boundary on one server
    # (Redis notices its child's end up to 100 ms later) reads 1 where the other reads 0.
    assert abs(int(done[0]["rdb_last_bgsave_time_sec"]) - int(done[1]["rdb_last_bgsave_time_sec"])) <= 1
    # Every field Redis has (exporters look for them by name).
    assert sorted(set(fresh[1]) - set(fresh[0])) == []


def test_debug_reload_during_bgsave(pair):
    servers, conns = pair
    make_saves_slow(servers, conns)
    same(conns, "SET", "marker", "1")
    assert same(conns, "BGSAVE") == b"+Background saving started\r\n"
    assert same(conns, "DEBUG", "RELOAD") == b"+OK\r\n"
    assert same(conns, "GET", "marker") == b"$1\r\n1\r\n"
    for c in conns:
        wait_bgsave_done(c)
    assert same(conns, "EXISTS", "marker", "key:0") == b":2\r\n"


@pytest.mark.parametrize("option", ["SAVE", "NOSAVE"])
@pytest.mark.parametrize("kind", ["shardis", "redis"])
def test_shutdown_during_bgsave(launch, tmp_path, kind, option):
    """SHUTDOWN while a background save runs: that one is dropped (no temp file stays); with
    SAVE the final save is complete, with NOSAVE no file is written."""
    d = tmp_path / "data"
    srv = launch(d, threads=2, redis=kind == "redis")
    c = srv.client(socket_timeout=60)
    keys = SLOW_SAVE_KEYS if kind == "shardis" else 1000
    assert c.execute_command("DEBUG", "POPULATE", keys) == b"OK"
    if kind == "redis":
        c.config_set("rdb-key-save-delay", 1000)
    assert c.bgsave() is True
    c.set("late", "1")
    if kind == "redis":
        c.config_set("rdb-key-save-delay", 0)  # for the final save
    assert shutdown(srv, option) == 0
    assert not list(d.glob("temp-*.rdb"))
    assert (d / "dump.rdb").exists() == (option == "SAVE")
    again = launch(d, threads=4, redis=kind == "redis")
    c = again.client()
    if option == "SAVE":
        assert c.dbsize() == keys + 1 and c.get("late") == b"1"
    else:
        assert c.dbsize() == 0


@pytest.mark.parametrize("kind", ["shardis", "redis"])
def test_shutdown_save_with_busy_writers(launch, tmp_path, kind):
    """SHUTDOWN SAVE while other clients keep writing: the process saves and exits promptly."""
    d = tmp_path / "data"
    srv = launch(d, threads=2, redis=kind == "redis")
    with busy_writers(srv, 4) as acked:
        time.sleep(0.5)
        started = time.monotonic()
        assert shutdown(srv, "SAVE") == 0
        assert time.monotonic() - started < 5, "SHUTDOWN SAVE took too long"
    assert min(acked) > 0
    assert (d / "dump.rdb").exists()
    again = launch(d, threads=2, redis=kind == "redis")
    assert again.client().dbsize() == 400


@pytest.mark.parametrize("how", ["SIGTERM", "SHUTDOWN"])
def test_shutdown_while_clients_keep_starting_saves(launch, tmp_path, how):
    """SIGTERM (with a save schedule) or SHUTDOWN SAVE while other clients send BGSAVE, SAVE and
    DEBUG RELOAD in a loop: the shutdown's save is the last one and the process exits. (A BGSAVE
    that came between stopping the running save and the final one made the final save fail as
    "in progress", and SIGTERM left the server running.)"""
    d = tmp_path / "data"
    srv = launch(d, threads=2)
    c = srv.client()
    c.config_set("save", "3600 1")
    c.set("k", "v")
    stop = threading.Event()

    def storm(*command):
        try:
            with srv.raw() as conn:
                while not stop.is_set():
                    conn.call_raw(*command)
        except (ConnectionError, OSError):
            pass  # the server went away

    threads = [threading.Thread(target=storm, args=cmd)
               for cmd in (("BGSAVE",), ("BGSAVE",), ("SAVE",), ("DEBUG", "RELOAD"))]
    for t in threads:
        t.start()
    try:
        time.sleep(1)
        if how == "SIGTERM":
            srv.stop_and_check()
        else:
            assert shutdown(srv, "SAVE") == 0
    finally:
        stop.set()
        for t in threads:
            t.join()
    again = launch(d, threads=2)
    assert again.client().get("k") == b"v"


@pytest.mark.parametrize("threads", [2, 4])
def test_concurrent_debug_reloads_with_writes_between(launch, tmp_path, threads):
    """Two clients send DEBUG RELOAD in a loop while a third writes: every reload succeeds (two
    reloads interleaved made one load keys into the other's half-loaded dataset: "duplicated
    key"), and every write a client saw acknowledged survives the reloads that follow (one
    acknowledged between a reload's save and its flush was lost)."""
    srv = launch(tmp_path / "data", threads=threads)
    c = srv.client()
    for i in range(200):
        c.set(f"base:{i}", i)
    stop = threading.Event()
    failures = []
    reloads = [0, 0]

    def reloader(n):
        with srv.raw(timeout=60) as conn:
            while not stop.is_set():
                reply = conn.call_raw("DEBUG", "RELOAD")
                if reply != b"+OK\r\n":
                    failures.append(reply)
                    return
                reloads[n] += 1

    acked = {}

    def writer():
        with srv.raw(timeout=60) as conn:
            i = 0
            while not stop.is_set():
                key = f"w:{i % 50}"
                reply = conn.call_raw("SET", key, i)
                if reply == b"+OK\r\n":
                    acked[key] = str(i).encode()
                elif not reply.startswith(b"-LOADING"):
                    failures.append(reply)
                    return
                i += 1

    workers = [threading.Thread(target=reloader, args=(n,)) for n in range(2)]
    workers.append(threading.Thread(target=writer))
    for t in workers:
        t.start()
    deadline = time.monotonic() + 3
    while time.monotonic() < deadline and not failures and min(reloads) < 30:
        time.sleep(0.05)
    stop.set()
    for t in workers:
        t.join()
    assert not failures, failures
    assert min(reloads) > 0, reloads
    assert acked
    for key, value in acked.items():
        assert c.get(key) == value, key
    assert c.dbsize() == 200 + len(acked)
