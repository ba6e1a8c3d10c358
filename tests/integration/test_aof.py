"""The append-only file (issue 15), first part: the journal, Redis 7's multi-part layout, loading
at start, and files both ways with the Debian redis-server 7.0.
  - writes of every type, multi-shard commands and MULTI/EXEC survive kill -9 and a restart
    with other thread counts (test_aof_crash.py: kills at random moments, a full disk);
  - CONFIG SET appendonly yes on a server with data writes a base snapshot of it;
  - shardis' AOF directory passes redis-check-aof and loads in redis-server the same, and
    redis-server's loads in shardis the same;
  - a truncated last command is cut at start (aof-load-truncated yes) or stops it (no).
"""

from __future__ import annotations

import signal
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
import redis

from conftest import Error, busy_writers, wait_for
from persistence_util import assert_same_dataset, full_snapshot, info, launch, shutdown  # noqa: F401

pytestmark = pytest.mark.shardis_only

CHECK_AOF = "/usr/bin/redis-check-aof"
AOF = ["--appendonly=yes", "--appendfsync=always"]
REDIS_AOF = ["--appendonly", "yes", "--appendfsync", "always"]


def write_everything(srv) -> None:
    """Writes that the journal must replay: every type, deadlines (absolute), commands over keys
    on several shards, MULTI/EXEC, deletes, renames, databases, FLUSHDB."""
    c = srv.client()
    deadline = int(time.time() * 1000) + 3_600_000
    for i in range(200):
        c.set(f"s:{i}", f"value-{i}")
    c.mset({f"m:{i}": i for i in range(50)})
    c.incrby("counter", 41)
    c.incr("counter")
    c.append("s:1", "-appended")
    c.rpush("list", *range(100))
    c.lpop("list", 3)
    c.hset("hash", mapping={f"f{i}": i for i in range(30)})
    c.hdel("hash", "f0", "f1")
    c.sadd("set", *range(40))
    c.srem("set", 0)
    c.smove("set", "other-set", 5)
    c.zadd("zset", {f"m{i}": i * 1.5 for i in range(60)})
    c.zincrby("zset", 10, "m3")
    c.xadd("stream", {"a": "1"}, id="1-1")
    c.xadd("stream", {"b": "2"}, id="2-1")
    # Ids made by the server and members drawn at random are journaled as they came out.
    for i in range(5):
        c.xadd("stream:auto", {"i": i})
    c.xadd("stream:auto", {"seq": "x"}, id="99999999999999-*")
    c.xadd("stream:auto", {"capped": 1}, maxlen=3, approximate=False)
    c.sadd("spop", *range(100))
    c.spop("spop")
    c.spop("spop", 10)
    c.sadd("spop:all", 1, 2, 3)
    c.spop("spop:all", 5)
    c.pexpireat("s:2", deadline)
    c.pexpireat("hash", deadline + 7)
    c.rename("s:3", "renamed")
    c.delete("s:4", "s:5", "m:1", "m:2")
    p = c.pipeline(transaction=True)
    p.set("tx:a", 1).incr("tx:a").sadd("tx:set", "x").lpush("tx:list", "y").delete("s:6")
    p.execute()
    c.sunionstore("union", ["set", "other-set"])
    c.copy("s:7", "copied")
    c1 = srv.client(db=1)
    c1.set("db1:key", "one")
    c1.rpush("db1:list", "a", "b")
    c1.close()
    c2 = srv.client(db=2)
    c2.set("db2:gone", "x")
    c2.flushdb()
    c2.set("db2:kept", "y")
    c2.close()
    c.move("s:8", 3)
    # Relative expiries are journaled with their absolute deadline (deadlines must match to the
    # millisecond after a replay that runs later), and one in the past as a DEL.
    c.set("ttl:set-ex", "v", ex=1000)
    c.set("ttl:set-px", "v", px=2_000_000, get=True)
    c.setex("ttl:setex", 3000, "v")
    c.psetex("ttl:psetex", 4_000_000, "v")
    c.set("ttl:expire", "v")
    c.expire("ttl:expire", 5000)
    c.set("ttl:pexpire", "v")
    c.pexpire("ttl:pexpire", 6_000_000, gt=False)
    c.set("ttl:getex", "v")
    c.getex("ttl:getex", ex=7000)
    c.restore("ttl:restore", 8_000_000, c.dump("s:9"))
    c.set("ttl:gone", "v")
    c.expire("ttl:gone", -1)
    c.set("ttl:persisted", "v", ex=100)
    c.persist("ttl:persisted")
    # Pops served to blocked clients later, and BLMOVE woken: journaled as the pops and the move.
    blocked = [srv.client() for _ in range(3)]
    with ThreadPoolExecutor(3) as pool:
        waits = [pool.submit(blocked[0].blpop, ["bl:list"], 10),
                 pool.submit(blocked[1].bzpopmin, ["bl:zset"], 10),
                 pool.submit(blocked[2].blmove, "bl:src", "bl:dst", 10, "LEFT", "RIGHT")]
        assert wait_for(lambda: int(c.info("clients")["blocked_clients"]) == 3, 10)
        c.rpush("bl:list", "a", "b", "c")
        c.zadd("bl:zset", {"x": 1, "y": 2})
        c.rpush("bl:src", "m1", "m2")
        assert [w.result(15) is not None for w in waits] == [True, True, True]
    for b in blocked:
        b.close()
    c.close()


def kill9(srv) -> None:
    srv.proc.send_signal(signal.SIGKILL)
    srv.proc.wait(10)
    srv.stop()


def aof_files(d):
    return sorted(p.name for p in (d / "appendonlydir").iterdir())


def test_writes_survive_kill9(launch, tmp_path):
    """Every kind of write, restarted with other thread counts (test_aof_crash.py kills at
    random moments with --threads 1, 2 and 4)."""
    d = tmp_path / "data"
    srv = launch(d, threads=2, args=AOF)
    wait_for(lambda: info(srv.raw())["aof_rewrite_in_progress"] == "0", 10)
    write_everything(srv)
    before = full_snapshot(srv)
    assert len(before) > 250
    kill9(srv)  # appendfsync always: every reply came after its write was on disk
    assert aof_files(d) == ["appendonly.aof.1.base.rdb", "appendonly.aof.1.incr.aof",
                            "appendonly.aof.manifest"]
    check = subprocess.run([CHECK_AOF, str(d / "appendonlydir" / "appendonly.aof.manifest")],
                           capture_output=True, timeout=60)
    assert check.returncode == 0, check.stdout + check.stderr
    again = launch(d, threads=4, args=AOF)
    assert_same_dataset(full_snapshot(again), before)
    # It goes on appending to the same incr file.
    again.client().set("after-restart", "yes")
    assert shutdown(again) == 0
    third = launch(d, threads=1, args=AOF)
    assert third.client().get("after-restart") == b"yes"
    assert third.client().dbsize() == sum(1 for db, _ in before if db == 0) + 1


def test_config_set_appendonly_writes_a_base(launch, tmp_path):
    d = tmp_path / "data"
    srv = launch(d, threads=2)
    write_everything(srv)
    c = srv.client()
    assert info(srv.raw())["aof_enabled"] == "0"
    assert c.config_set("appendonly", "yes") is True
    assert wait_for(lambda: info(srv.raw())["aof_rewrite_in_progress"] == "0" and
                    (d / "appendonlydir" / "appendonly.aof.manifest").exists(), 10)
    fields = info(srv.raw())
    assert fields["aof_enabled"] == "1" and fields["aof_last_bgrewrite_status"] == "ok"
    assert int(fields["aof_base_size"]) > 1000
    c.set("after-base", "1")
    c.mset({"{t}a": 1, "{t}b": 2, "x-shard-1": 3, "x-shard-2": 4})
    before = full_snapshot(srv)
    assert shutdown(srv, "NOSAVE") == 0  # the AOF is flushed and fsynced all the same
    again = launch(d, threads=4, args=["--appendonly=yes"])
    assert_same_dataset(full_snapshot(again), before)
    assert again.client().config_get("appendonly") == {"appendonly": "yes"}


def test_config_set_appendonly_no_stops_the_journal(launch, tmp_path):
    d = tmp_path / "data"
    srv = launch(d, threads=2, args=AOF)
    c = srv.client()
    c.set("kept", "1")
    assert c.config_set("appendonly", "no") is True
    assert c.config_get("appendonly") == {"appendonly": "no"}
    assert info(srv.raw())["aof_enabled"] == "0"
    c.set("not-journaled", "1")
    assert shutdown(srv, "NOSAVE") == 0
    again = launch(d, threads=2, args=AOF)
    assert again.client().get("kept") == b"1"
    assert again.client().get("not-journaled") is None


def test_appendonly_off_and_on_under_multi_shard_writes(launch, tmp_path):
    """Turning the AOF off and on again while MSETs over several shards run: the switch is one
    step over every shard, so no transaction is journaled on some of its shards only (the writer
    would wait for it forever), and what was acknowledged with the AOF on survives a restart."""
    d = tmp_path / "data"
    srv = launch(d, threads=4, args=AOF)
    c = srv.client(socket_timeout=20)
    with busy_writers(srv, 4, incr_and_mset) as acked:
        for _ in range(3):
            time.sleep(0.2)
            assert c.config_set("appendonly", "no") is True
            time.sleep(0.1)
            assert c.config_set("appendonly", "yes") is True
            assert wait_for(lambda: info(srv.raw())["aof_rewrite_in_progress"] == "0", 20)
        time.sleep(0.2)
    final = list(acked)
    before = full_snapshot(srv)
    assert shutdown(srv) == 0
    again = launch(d, threads=2, args=AOF)
    assert_same_dataset(full_snapshot(again), before)
    assert min(final) > 0


@pytest.mark.parametrize("threads", [1, 4])
def test_shardis_aof_loads_in_redis(launch, tmp_path, threads):
    d = tmp_path / "data"
    srv = launch(d, threads=threads, args=AOF)
    write_everything(srv)
    before = full_snapshot(srv)
    assert shutdown(srv) == 0
    check = subprocess.run([CHECK_AOF, str(d / "appendonlydir" / "appendonly.aof.manifest")],
                           capture_output=True, timeout=60)
    report = (check.stdout + check.stderr).decode(errors="replace")
    assert check.returncode == 0 and "valid" in report, report
    (d / "dump.rdb").unlink(missing_ok=True)
    ref = launch(d, redis=True, args=REDIS_AOF)
    assert_same_dataset(full_snapshot(ref), before, got_is_shardis=False)


@pytest.mark.parametrize("threads", [4])
def test_redis_aof_loads_in_shardis(launch, tmp_path, threads):
    d = tmp_path / "redis"
    ref = launch(d, redis=True, args=REDIS_AOF)
    write_everything(ref)
    want = full_snapshot(ref)
    assert shutdown(ref, "NOSAVE") == 0
    assert (d / "appendonlydir" / "appendonly.aof.manifest").exists()
    srv = launch(d, threads=threads, args=AOF)
    assert_same_dataset(full_snapshot(srv), want)


def test_expired_keys_are_journaled_as_del(launch, tmp_path):
    """A key that expires (found by a command, or by the active expiry cycle) is journaled as
    DEL, so that a replay in which the deadline has not passed yet, or a loader that keeps such
    keys (Redis'), does not see it after that point; INCR then starts from nothing."""
    d = tmp_path / "data"
    srv = launch(d, threads=2, args=AOF)
    c = srv.client()
    c.set("lazy", 10, px=100)
    c.set("active", 1, px=100)
    time.sleep(0.2)
    assert c.incr("lazy") == 1  # found expired: DEL lazy, then INCR lazy
    assert wait_for(lambda: c.exists("active") == 0 and c.dbsize() == 1, 5)
    assert shutdown(srv) == 0
    text = (d / "appendonlydir" / "appendonly.aof.1.incr.aof").read_bytes()
    assert text.count(b"$3\r\nDEL\r\n$4\r\nlazy\r\n") == 1
    assert text.count(b"$3\r\nDEL\r\n$6\r\nactive\r\n") == 1
    assert text.index(b"DEL\r\n$4\r\nlazy") < text.upper().index(b"INCRBY\r\n$4\r\nLAZY")
    again = launch(d, threads=2, args=AOF)
    assert again.client().get("lazy") == b"1"
    assert again.client().exists("active") == 0


@pytest.mark.parametrize("truncate_ok", [True, False])
def test_truncated_last_command(launch, tmp_path, truncate_ok):
    d = tmp_path / "data"
    srv = launch(d, threads=2, args=AOF)
    c = srv.client()
    for i in range(20):
        c.set(f"k{i}", i)
    assert shutdown(srv) == 0
    incr = d / "appendonlydir" / "appendonly.aof.1.incr.aof"
    good = incr.stat().st_size
    with open(incr, "ab") as f:
        f.write(b"*3\r\n$3\r\nSET\r\n$2\r\nk9")  # cut inside the command
    args = AOF + ([] if truncate_ok else ["--aof-load-truncated=no"])
    if truncate_ok:
        again = launch(d, threads=2, args=args)
        assert again.client().mget([f"k{i}" for i in range(20)]) == [str(i).encode()
                                                                     for i in range(20)]
        assert incr.stat().st_size == good
        assert "truncating it to" in again.tail(200)
    else:
        from conftest import Server
        failed = Server("shardis", d, threads=2, args=args)
        with pytest.raises(RuntimeError):
            failed.start()
        assert failed.proc.wait(10) == 1
        assert "Fatal error loading" in failed.tail(50)


# ---- BGREWRITEAOF and the automatic rewrite.

def incr_and_mset(c, i: int, acked: list) -> None:
    """A busy_writers step: INCR of the thread's counter, then an MSET of a pair across shards;
    acked[i] is the counter's value when its INCR was acknowledged."""
    acked[i] = c.incr(f"counter:{i}")
    c.mset({f"pair:{i}:a": acked[i], f"pair:{i}:b": acked[i]})


@pytest.mark.parametrize("threads", [1, 4])
def test_rewrite_under_load_loses_nothing(launch, tmp_path, threads):
    """BGREWRITEAOF while clients write: the writes before the base's cut are in the base, those
    after in the new incr file; after kill -9 the restart has every acknowledged write."""
    d = tmp_path / "data"
    srv = launch(d, threads=threads, args=AOF)
    c = srv.client()
    write_everything(srv)
    with busy_writers(srv, 4, incr_and_mset) as acked:
        time.sleep(0.3)
        assert srv.raw().call("BGREWRITEAOF") == b"Background append only file rewriting started"
        assert wait_for(lambda: info(srv.raw())["aof_rewrite_in_progress"] == "0" and
                        info(srv.raw())["aof_rewrites"] == "2", 20)
        time.sleep(0.3)
    final = list(acked)
    assert min(final) > 0
    before = full_snapshot(srv)
    kill9(srv)
    assert aof_files(d) == ["appendonly.aof.2.base.rdb", "appendonly.aof.2.incr.aof",
                            "appendonly.aof.manifest"]
    check = subprocess.run([CHECK_AOF, str(d / "appendonlydir" / "appendonly.aof.manifest")],
                           capture_output=True, timeout=60)
    assert check.returncode == 0, check.stdout + check.stderr
    again = launch(d, threads=threads, args=AOF)
    assert_same_dataset(full_snapshot(again), before)
    r = again.client()
    for i, n in enumerate(final):
        assert int(r.get(f"counter:{i}")) >= n
        assert r.get(f"pair:{i}:a") == r.get(f"pair:{i}:b")
    # The rewritten directory loads in redis-server too.
    assert shutdown(again) == 0
    ref = launch(d, redis=True, args=REDIS_AOF)
    assert_same_dataset(full_snapshot(ref), before, got_is_shardis=False)


def test_bgrewriteaof_replies_and_info(launch, tmp_path):
    d = tmp_path / "data"
    srv = launch(d, threads=2, args=AOF + ["--rdb-key-save-delay=3000"])  # ~1 s per rewrite
    c = srv.client()
    for i in range(300):
        c.set(f"k{i}", i)
    raw = srv.raw()
    assert raw.call("BGREWRITEAOF") == b"Background append only file rewriting started"
    assert raw.call("BGREWRITEAOF") == Error(
        b"ERR Background append only file rewriting already in progress")
    assert info(srv.raw())["aof_rewrite_in_progress"] == "1"
    assert wait_for(lambda: info(srv.raw())["aof_rewrite_in_progress"] == "0", 20)
    fields = info(srv.raw())
    assert fields["aof_last_bgrewrite_status"] == "ok" and fields["aof_rewrites"] == "2"
    assert int(fields["aof_base_size"]) > 0
    # AOF off: the rewrite writes a base, and the manifest names it alone (as Redis 7.0).
    c.config_set("appendonly", "no")
    c.set("only-in-base", 1)
    assert raw.call("BGREWRITEAOF") == b"Background append only file rewriting started"
    assert wait_for(lambda: info(srv.raw())["aof_rewrites"] == "3", 20)
    manifest = (d / "appendonlydir" / "appendonly.aof.manifest").read_text()
    assert manifest == "file appendonly.aof.3.base.rdb seq 3 type b\n"
    assert aof_files(d) == ["appendonly.aof.3.base.rdb", "appendonly.aof.manifest"]
    assert shutdown(srv, "NOSAVE") == 0
    again = launch(d, threads=2, args=AOF)
    assert again.client().get("only-in-base") == b"1"
    assert again.client().dbsize() == 301


def test_automatic_rewrite(launch, tmp_path):
    d = tmp_path / "data"
    srv = launch(d, threads=2, args=["--appendonly=yes", "--auto-aof-rewrite-min-size=1",
                                      "--auto-aof-rewrite-percentage=100"])
    c = srv.client()
    for i in range(2000):
        c.set(f"k{i}", "v" * 20)
    assert wait_for(lambda: int(info(srv.raw())["aof_rewrites"]) >= 2, 10)
    assert wait_for(lambda: info(srv.raw())["aof_rewrite_in_progress"] == "0", 10)
    assert shutdown(srv) == 0
    again = launch(d, threads=2, args=["--appendonly=yes"])
    assert again.client().dbsize() == 2000


def test_rewrite_counts_its_growth_from_the_base_and_the_incr_written_meanwhile(launch, tmp_path):
    """Redis' automatic rewrite rule: after a rewrite, the growth counts from the size of the new
    base plus what the new incr file took while the base was written (aof_base_size is Redis'
    aof_rewrite_base_size), so that a rewrite that ran long under writes does not start the next
    one at once."""
    d = tmp_path / "data"
    srv = launch(d, threads=1, args=AOF + ["--rdb-key-save-delay=3000"])  # ~1 s per rewrite
    c = srv.client()
    for i in range(300):
        c.set(f"k{i}", i)
    assert srv.raw().call("BGREWRITEAOF") == b"Background append only file rewriting started"
    time.sleep(0.3)  # past the rewrite's cut: the writes below go to the new incr file
    assert info(srv.raw())["aof_rewrite_in_progress"] == "1"
    with c.pipeline(transaction=False) as p:  # at once: all of them before the rewrite ends
        for i in range(300):
            p.set(f"during{i}", "x" * 100)
        p.execute()
    assert info(srv.raw())["aof_rewrite_in_progress"] == "1"
    assert wait_for(lambda: info(srv.raw())["aof_rewrite_in_progress"] == "0", 20)
    incr_path = d / "appendonlydir" / "appendonly.aof.2.incr.aof"
    # The journal writes its rounds asynchronously: wait for the writes above to reach the file.
    assert wait_for(lambda: incr_path.stat().st_size > 300 * 100, 10), incr_path.stat().st_size
    fields = info(srv.raw())
    base_file = (d / "appendonlydir" / "appendonly.aof.2.base.rdb").stat().st_size
    incr_file = incr_path.stat().st_size
    assert int(fields["aof_base_size"]) == int(fields["aof_current_size"]) == base_file + incr_file


def test_requests_are_journaled_as_canonical_resp(launch, tmp_path):
    """A write journaled as sent is recorded from the request's own bytes when they are plain RESP,
    and encoded from its arguments otherwise (an inline command, or line endings that Redis does
    not check): the incr file is canonical RESP either way."""
    d = tmp_path / "data"
    srv = launch(d, threads=1, args=AOF)
    r = srv.raw()
    r.send(b"*3\r\n$3\r\nset\r\n$2\r\nk1\r\n$2\r\nv1\r\n")  # plain, in lower case
    r.send(b"*3\r\n$3\r\nSET\r\n$2\r\nk2\r\n$2\r\nv2XY")       # no CRLF after the value
    r.send(b"*3\rX$3\r\nSET\r\n$2\r\nk3\r\n$2\r\nv3\r\n")     # no LF after the count
    r.send(b"SET k4 \"v 4\"\r\n")                                       # inline
    assert [r.read_reply()[1] for _ in range(4)] == [b"OK"] * 4
    incr = (d / "appendonlydir" / "appendonly.aof.1.incr.aof").read_bytes()
    assert incr == (b"*2\r\n$6\r\nSELECT\r\n$1\r\n0\r\n"
                    b"*3\r\n$3\r\nset\r\n$2\r\nk1\r\n$2\r\nv1\r\n"
                    b"*3\r\n$3\r\nSET\r\n$2\r\nk2\r\n$2\r\nv2\r\n"
                    b"*3\r\n$3\r\nSET\r\n$2\r\nk3\r\n$2\r\nv3\r\n"
                    b"*3\r\n$3\r\nSET\r\n$2\r\nk4\r\n$3\r\nv 4\r\n")
    assert subprocess.run([CHECK_AOF, str(d / "appendonlydir" / "appendonly.aof.manifest")],
                          capture_output=True).returncode == 0


def test_memcached_writes_are_journaled(launch, tmp_path):
    """Writes over the memcached port are journaled as the state they left in Redis' terms (SET
    with the absolute deadline of a relative exptime, DEL, FLUSHDB for flush_all), so they
    survive kill -9; with appendfsync always their replies wait for the disk too."""
    import socket
    from conftest import free_port
    d = tmp_path / "data"
    mc_port = free_port()
    srv = launch(d, threads=2, args=AOF + [f"--memcached_port={mc_port}"])
    mc = socket.create_connection(("127.0.0.1", mc_port), timeout=10)

    def call(line: bytes, data: bytes | None = None) -> bytes:
        mc.sendall(line + b"\r\n" + (data + b"\r\n" if data is not None else b""))
        reply = b""
        while not reply.endswith(b"\r\n"):
            reply += mc.recv(4096)
        return reply

    assert call(b"set gone 0 0 1", b"x") == b"STORED\r\n"
    assert call(b"flush_all") == b"OK\r\n"
    assert call(b"set plain 5 0 3", b"abc") == b"STORED\r\n"
    assert call(b"set ttl 0 3600 2", b"hi") == b"STORED\r\n"
    assert call(b"set counter 0 0 2", b"10") == b"STORED\r\n"
    assert call(b"incr counter 5") == b"15\r\n"
    assert call(b"append plain 0 0 3", b"def") == b"STORED\r\n"
    assert call(b"set doomed 0 0 1", b"x") == b"STORED\r\n"
    assert call(b"delete doomed") == b"DELETED\r\n"
    assert call(b"set touched 0 0 1", b"t") == b"STORED\r\n"
    assert call(b"touch touched 7200") == b"TOUCHED\r\n"
    mc.close()
    c = srv.client()
    before = full_snapshot(srv)
    deadlines = {k: c.pexpiretime(k) for k in ("ttl", "touched")}
    assert all(v > 0 for v in deadlines.values())
    kill9(srv)
    again = launch(d, threads=4, args=AOF)
    assert_same_dataset(full_snapshot(again), before)
    r = again.client()
    assert r.get("plain") == b"abcdef" and r.get("counter") == b"15"
    assert r.exists("gone", "doomed") == 0
    assert {k: r.pexpiretime(k) for k in deadlines} == deadlines


def test_flushall_during_the_first_base_keeps_the_aof(launch, tmp_path):
    """FLUSHALL while CONFIG SET appendonly yes writes the base: as Redis (which kills an RDB child
    only), the base goes on with what came before, the journal records the FLUSHALL after it, and
    the manifest names both."""
    d = tmp_path / "data"
    srv = launch(d, threads=2)
    c = srv.client()
    c.mset({f"old:{i}": i for i in range(200)})
    c.config_set("rdb-key-save-delay", 2000)  # µs per key: the base takes ~0.4 s
    assert c.config_set("appendonly", "yes") is True
    assert wait_for(lambda: info(srv.raw())["aof_rewrite_in_progress"] == "1", 5)
    assert c.flushall() is True
    c.set("new", "1")
    assert wait_for(lambda: info(srv.raw())["aof_rewrite_in_progress"] == "0", 20)
    assert info(srv.raw())["aof_last_bgrewrite_status"] == "ok"
    c.config_set("rdb-key-save-delay", 0)
    kill9(srv)
    assert (d / "appendonlydir" / "appendonly.aof.manifest").exists()
    again = launch(d, threads=2, args=AOF)
    assert again.client().keys("*") == [b"new"]


def consumer_groups(c, key: str) -> list:
    """What a replay must restore of a stream's consumer groups: XINFO STREAM FULL's groups, less
    the consumers' seen-times and active-times (Redis 7.2's, absent from 7.0's), which neither
    Redis nor shardis journals."""
    groups = c.execute_command("XINFO", "STREAM", key, "FULL")
    groups = dict(zip(groups[::2], groups[1::2]))[b"groups"]
    out = []
    for g in groups:
        g = dict(zip(g[::2], g[1::2]))
        consumers = []
        for cons in g.pop(b"consumers"):
            cons = dict(zip(cons[::2], cons[1::2]))
            cons.pop(b"seen-time")
            cons.pop(b"active-time", None)
            consumers.append(cons)
        g[b"consumers"] = consumers
        out.append(g)
    return out


def test_consumer_group_reads_and_claims_are_journaled_as_their_effects(launch, tmp_path):
    """XREADGROUP, XCLAIM and XAUTOCLAIM change delivery times that the clock decides. They are
    journaled as Redis 7.0 propagates them (an XCLAIM ... TIME <ms> ... FORCE JUSTID LASTID per
    entry, XGROUP SETID after a NOACK read, XGROUP CREATECONSUMER for a NOACK read's consumer), so
    the groups come back identical after a restart, in shardis and in redis-server."""
    d = tmp_path / "data"
    srv = launch(d, threads=2, args=AOF)
    c = srv.client()
    for i in range(1, 8):
        c.xadd("s", {"f": str(i)}, id=f"{i}-0")
    c.xgroup_create("s", "g", id="0")
    c.xgroup_create("s", "h", id="0")
    assert len(c.xreadgroup("g", "alice", {"s": ">"}, count=2)[0][1]) == 2  # 1-0, 2-0
    assert len(c.xreadgroup("g", "bob", {"s": ">"}, count=1, noack=True)[0][1]) == 1  # 3-0
    assert c.xclaim("s", "g", "bob", 0, ["1-0"], idle=5000, justid=True) == [b"1-0"]
    c.xreadgroup("g", "alice", {"s": "0"})  # history: Redis journals nothing for it
    assert c.xautoclaim("s", "g", "carol", 0, "0-0", count=1, justid=True) == [b"1-0"]
    c.xdel("s", "2-0")
    # 2-0 is gone: dropped from the PEL (journaled as an XCLAIM of a missing entry).
    assert c.xautoclaim("s", "g", "dave", 0, "0-0")[2] == [b"2-0"]
    # Only the group's last ID moves: XGROUP SETID.
    c.execute_command("XCLAIM", "s", "g", "erin", "0", "99-0", "LASTID", "4-0")
    pipe = c.pipeline(transaction=True)
    pipe.xreadgroup("h", "frank", {"s": ">"}, count=3)
    pipe.xclaim("s", "h", "gina", 0, ["2-0", "3-0"], idle=100)
    pipe.execute()
    # A client blocked on the group, served by a later XADD.
    assert len(c.xreadgroup("g", "alice", {"s": ">"})[0][1]) == 3  # 5-0..7-0
    waiter = srv.client()
    with ThreadPoolExecutor(1) as pool:
        served = pool.submit(waiter.xreadgroup, "g", "hank", {"s": ">"}, block=10000)
        assert wait_for(lambda: any(cl["cmd"] == "xreadgroup" for cl in c.client_list()), 5)
        c.xadd("s", {"f": "8"}, id="8-0")
        assert served.result(10)[0][1][0][0] == b"8-0"
    before = consumer_groups(c, "s")
    assert shutdown(srv) == 0
    text = (d / "appendonlydir" / "appendonly.aof.1.incr.aof").read_bytes().upper()
    for never in (b"XREADGROUP", b"XAUTOCLAIM", b"IDLE"):
        assert never not in text
    assert b"$5\r\nSETID\r\n" in text and b"$14\r\nCREATECONSUMER\r\n" in text
    check = subprocess.run([CHECK_AOF, str(d / "appendonlydir" / "appendonly.aof.manifest")],
                           capture_output=True, timeout=60)
    assert check.returncode == 0, check.stdout + check.stderr

    again = launch(d, threads=4, args=AOF)
    after = consumer_groups(again.client(), "s")
    assert shutdown(again) == 0
    ref = launch(d, redis=True, args=REDIS_AOF)
    in_redis = consumer_groups(ref.client(), "s")
    assert after == in_redis
    # Redis 7.0's XCLAIM ... LASTID moves the last ID without the read counter, so a replay
    # cannot restore entries-read and lag (nor can Redis'); everything else comes back.
    for g in before + after:
        g.pop(b"entries-read")
        g.pop(b"lag")
    assert after == before


def test_always_replies_to_writes_that_change_nothing(launch, tmp_path):
    """A multi-key write that changes nothing leaves records that come out as no bytes; with
    appendfsync always its reply must still come (it waited for a sync that no later write
    brought, forever on an idle server)."""
    srv = launch(tmp_path / "data", threads=2, args=AOF)
    c = srv.client(socket_timeout=5)
    assert c.delete(*[f"missing{i}" for i in range(8)]) == 0
    assert c.msetnx({"a1": 1, "b2": 2}) is True
    assert c.msetnx({"a1": 1, "c3": 3}) is False
    assert c.execute_command("XGROUP", "CREATE", "s", "g", "$", "MKSTREAM") == b"OK"
    with pytest.raises(redis.ResponseError, match="BUSYGROUP"):  # an error: nothing journaled
        c.execute_command("XGROUP", "CREATE", "s", "g", "$")
    assert c.ping()


def run_scripts(srv) -> None:
    """Scripts whose effects the journal must replay: declared keys, undeclared ones (which
    shardis undoes and reruns over every shard), relative deadlines, random pops, scripts inside
    MULTI, redis.set_repl(REPL_NONE)."""
    c = srv.client()
    c.sadd("pool", *range(20))
    for i in range(5):
        c.eval("redis.call('set', KEYS[1], ARGV[1]) return redis.call('incr', KEYS[2])",
               2, f"sk:{i}", "hits", f"v{i}")
        c.eval("redis.call('incr', KEYS[1]) return redis.call('incr', 'side:' .. ARGV[1])",
               1, "counter", i % 2)
    c.eval("return redis.call('set', KEYS[1], 'soon', 'EX', 3600)", 1, "ttl")
    c.eval("return redis.call('spop', KEYS[1], 3)", 1, "pool")
    c.eval("redis.call('select', 3) return redis.call('set', 'in-db3', 'x')", 0)
    p = c.pipeline(transaction=True)
    p.set("in-multi", "1")
    p.eval("return redis.call('incrby', KEYS[1], 10)", 1, "in-multi")
    p.execute()
    c.eval("redis.set_repl(redis.REPL_NONE) redis.call('set', KEYS[1], 'not journaled') "
           "redis.set_repl(redis.REPL_ALL) return redis.call('set', KEYS[2], 'journaled')",
           2, "unjournaled", "journaled")
    c.eval("return redis.call('get', KEYS[1])", 1, "hits")  # reads journal nothing


def test_scripts_are_journaled_by_their_effects(launch, tmp_path):
    d = tmp_path / "data"
    srv = launch(d, threads=2, args=AOF)
    wait_for(lambda: info(srv.raw())["aof_rewrite_in_progress"] == "0", 10)
    run_scripts(srv)
    before = full_snapshot(srv)
    assert srv.client().get("counter") == b"5"
    assert shutdown(srv) == 0
    incr = (d / "appendonlydir" / "appendonly.aof.1.incr.aof").read_bytes()
    assert b"EVAL" not in incr.upper() and b"MULTI" in incr
    check = subprocess.run([CHECK_AOF, str(d / "appendonlydir" / "appendonly.aof.manifest")],
                           capture_output=True, timeout=60)
    assert check.returncode == 0, check.stdout + check.stderr
    # The same scripts on redis-server with its AOF: both restart to the same keyspace (SPOP's
    # members are random, so the pool is compared by size).
    ref_dir = tmp_path / "redis"
    ref = launch(ref_dir, redis=True, args=REDIS_AOF)
    run_scripts(ref)
    assert shutdown(ref) == 0
    ref = launch(ref_dir, redis=True, args=REDIS_AOF)
    want = full_snapshot(ref)
    again = launch(d, threads=4, args=AOF)
    got = full_snapshot(again)
    assert before.pop((0, b"unjournaled"))["value"] == b"not journaled"
    assert_same_dataset(got, before)
    pool, ttl = (0, b"pool"), (0, b"ttl")
    assert len(got[pool]["value"]) == len(want.pop(pool)["value"]) == 17
    assert got[ttl]["at"] > 0 and want.pop(ttl)["at"] > 0  # set at different moments
    got = {k: v for k, v in got.items() if k not in (pool, ttl)}
    assert_same_dataset(got, want)
    assert again.client().get("unjournaled") is None
    # The same directory loads in redis-server too.
    assert shutdown(again) == 0
    (d / "dump.rdb").unlink(missing_ok=True)
    theirs = launch(d, redis=True, args=REDIS_AOF)
    assert len(full_snapshot(theirs)) == len(before)


def test_pipelined_scripts_are_journaled_in_order(launch, tmp_path):
    """Pipelines mixing scripts (run batched on their keys' shards, one rerun over two shards for
    an undeclared key) and plain writes on the same keys: the restart replays them to the same
    keyspace, so the journal kept each key's order."""
    d = tmp_path / "data"
    srv = launch(d, threads=2, args=AOF)
    wait_for(lambda: info(srv.raw())["aof_rewrite_in_progress"] == "0", 10)
    c = srv.client()
    append = c.script_load("return redis.call('append', KEYS[1], ARGV[1])")
    undeclared = c.script_load("redis.call('append', KEYS[1], ARGV[1]) "
                               "return redis.call('append', 'side:' .. KEYS[1], ARGV[1])")
    move = c.script_load("redis.call('set', KEYS[2], redis.call('get', KEYS[1]) or '') "
                         "return redis.call('append', KEYS[1], ARGV[1])")
    keys = [f"pk:{i}" for i in range(12)]
    for round_no in range(20):
        p = c.pipeline(transaction=False)
        for i, k in enumerate(keys):
            tag = f"{round_no}.{i};"
            p.evalsha(append, 1, k, tag)
            p.append(k, "p")
            if i % 4 == 0:
                p.evalsha(undeclared, 1, k, tag)
            if i % 3 == 0:
                p.evalsha(move, 2, k, f"copy:{k}", "m")
        p.execute()
    before = full_snapshot(srv)
    kill9(srv)
    again = launch(d, threads=1, args=AOF)
    assert_same_dataset(full_snapshot(again), before)
    assert shutdown(again) == 0


def test_the_server_answers_only_once_base_and_incr_files_are_in(launch, tmp_path):
    """Loading an AOF is one load, as in Redis: clients get -LOADING until the incr files are
    replayed too, never a dataset with the base file's keys only (once ready, a command is served
    and sees every key; a fresh connection never gets -LOADING again)."""
    d = tmp_path / "data"
    srv = launch(d, threads=2, args=["--appendonly=yes", "--appendfsync=everysec"])
    c = srv.client()
    with c.pipeline(transaction=False) as p:
        for i in range(20000):
            p.set(f"base:{i}", i)
        p.execute()
    assert c.bgrewriteaof()
    assert wait_for(lambda: info(srv.raw())["aof_rewrite_in_progress"] == "0", 30)
    with c.pipeline(transaction=False) as p:
        for i in range(20000):
            p.set(f"incr:{i}", i)
        p.execute()
    assert shutdown(srv) == 0
    again = launch(d, threads=2, args=["--appendonly=yes", "--appendfsync=everysec"])
    c = again.client()
    for _ in range(20):  # launch returned on the first PONG: the whole dataset is in
        assert c.dbsize() == 40000
        assert info(again.raw())["loading"] == "0"
