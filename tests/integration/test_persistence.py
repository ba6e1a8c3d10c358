"""Snapshots end to end (issue 14), the dataset side:
  - every type and encoding, small and large, TTLs, all 16 databases and {hashtag} keys survive
    DEBUG RELOAD and a restart (SAVE, SHUTDOWN NOSAVE, start again on the same directory), also
    across thread counts: a file written with 4 threads loads with 1 and the reverse;
  - files both ways with the Debian redis-server 7.0: shardis' dump.rdb passes redis-check-rdb
    and loads in redis-server the same, and redis-server's loads in shardis the same;
  - a big file loads while clients get -LOADING and INFO says loading:1 with the loading_* fields.
Damaged files and the commands' replies: test_persistence_commands.py.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time

import pytest

from conftest import Error, Server
from persistence_util import (assert_same_dataset, connect,  # noqa: F401
                              fill_everything, full_snapshot, info, launch, shutdown)
from test_rdb_format import CHECK_RDB


def reload_everything(srv):
    fill_everything(srv)
    before = full_snapshot(srv)
    assert len(before) > 100
    return before


@pytest.mark.parametrize("threads", [1, 2, 4])
def test_debug_reload_keeps_everything(launch, tmp_path, threads):
    srv = launch(tmp_path / "data", threads=threads)
    before = reload_everything(srv)
    c = srv.client()
    assert c.execute_command("DEBUG", "RELOAD") == b"OK"
    assert (tmp_path / "data" / "dump.rdb").exists()
    assert_same_dataset(full_snapshot(srv), before)
    # Twice: what was loaded saves and loads again the same.
    assert c.execute_command("DEBUG", "RELOAD") == b"OK"
    assert_same_dataset(full_snapshot(srv), before)


@pytest.mark.parametrize("save_threads,load_threads", [(4, 1), (1, 4), (2, 2), (1, 1), (4, 4)])
def test_restart_keeps_everything(launch, tmp_path, save_threads, load_threads):
    d = tmp_path / "data"
    srv = launch(d, threads=save_threads)
    before = reload_everything(srv)
    assert srv.client().save() is True
    saved = (d / "dump.rdb").read_bytes()
    assert shutdown(srv, "NOSAVE") == 0
    assert (d / "dump.rdb").read_bytes() == saved
    again = launch(d, threads=load_threads)
    assert_same_dataset(full_snapshot(again), before)
    fields = info(again.raw())
    assert fields["loading"] == "0"
    assert int(fields["rdb_last_load_keys_loaded"]) == len(before)
    assert fields["rdb_last_load_keys_expired"] == "0"


def test_expired_keys_are_not_loaded(launch, tmp_path):
    d = tmp_path / "data"
    srv = launch(d, threads=2)
    c = srv.client()
    # 2 s: the short keys must still be there when SAVE runs, also on a busy machine.
    written_at = time.monotonic()
    for i in range(50):
        c.set(f"short:{i}", i, px=2000)
        c.set(f"long:{i}", i, ex=1000)
        c.set(f"forever:{i}", i)
    assert c.save() is True
    assert c.exists(*[f"short:{i}" for i in range(50)]) == 50, "the machine was too slow"
    assert shutdown(srv, "NOSAVE") == 0
    time.sleep(max(0.0, written_at + 2.1 - time.monotonic()))
    again = launch(d, threads=2)
    c = again.client()
    assert c.dbsize() == 100
    assert c.exists(*[f"short:{i}" for i in range(50)]) == 0
    assert c.mget([f"long:{i}" for i in range(50)]) == [str(i).encode() for i in range(50)]
    fields = info(again.raw())
    assert fields["rdb_last_load_keys_loaded"] == "100"
    assert fields["rdb_last_load_keys_expired"] == "50"


def test_empty_dataset_round_trip(launch, tmp_path):
    d = tmp_path / "data"
    srv = launch(d, threads=2)
    assert srv.client().save() is True
    assert shutdown(srv, "NOSAVE") == 0
    check = subprocess.run([CHECK_RDB, str(d / "dump.rdb")], capture_output=True, timeout=60)
    assert check.returncode == 0, check.stdout + check.stderr
    again = launch(d, threads=4)
    assert again.client().dbsize() == 0


# ---- Files both ways with redis-server 7.0.

@pytest.mark.parametrize("threads", [1, 4])
def test_shardis_file_loads_in_redis(launch, tmp_path, threads):
    d = tmp_path / "data"
    srv = launch(d, threads=threads)
    before = reload_everything(srv)
    assert srv.client().save() is True
    assert shutdown(srv, "NOSAVE") == 0
    check = subprocess.run([CHECK_RDB, str(d / "dump.rdb")], capture_output=True, timeout=120)
    report = (check.stdout + check.stderr).decode(errors="replace")
    assert check.returncode == 0 and "RDB looks OK" in report, report
    ref = launch(d, redis=True, args=["--dbfilename", "dump.rdb"])
    assert_same_dataset(full_snapshot(ref), before, got_is_shardis=False)


@pytest.mark.parametrize("threads", [1, 4])
def test_redis_file_loads_in_shardis(launch, tmp_path, threads):
    # redis-server with its defaults (shardis' too): each type has both of its encodings in the
    # file the way shardis would pick them (listpack and hashtable hashes, intset, listpack and
    # hashtable sets, listpack and skiplist sorted sets).
    ref = launch(tmp_path / "redis", redis=True)
    want = reload_everything(ref)
    rc = ref.client()
    enc = {k[1]: v["encoding"] for k, v in want.items()}
    assert {enc[b"h:small"], enc[b"h:big"]} == {"listpack", "hashtable"}
    assert {enc[b"set:int16"], enc[b"set:strings"]} == {"intset", "hashtable"}
    assert {enc[b"z:small"], enc[b"z:big"]} == {"listpack", "skiplist"}
    assert rc.save() is True
    d = tmp_path / "data"
    d.mkdir()
    shutil.copy(tmp_path / "redis" / "dump.rdb", d / "dump.rdb")
    srv = launch(d, threads=threads)
    assert_same_dataset(full_snapshot(srv), want)
    # And what shardis saves of it loads back in redis-server the same.
    assert srv.client().save() is True
    back = tmp_path / "back"
    back.mkdir()
    shutil.copy(d / "dump.rdb", back / "dump.rdb")
    ref2 = launch(back, redis=True, args=["--dbfilename", "dump.rdb"])
    loaded = full_snapshot(ref2)
    for k, w in want.items():
        assert loaded[k]["type"] == w["type"] and loaded[k]["value"] == w["value"], k
        assert loaded[k]["at"] == w["at"], k
        if w["type"] != "string":
            assert loaded[k]["encoding"] == w["encoding"], k
    assert set(loaded) == set(want)


# ---- -LOADING while a big file loads.

LOADING_KEYS = 1_000_000


@pytest.fixture(scope="module")
def big_file(tmp_path_factory):
    """A dump.rdb of LOADING_KEYS small keys (DEBUG POPULATE) and a few large values."""
    d = tmp_path_factory.mktemp("big")
    srv = Server("shardis", d, threads=2).start()
    try:
        c = srv.client(socket_timeout=120)
        assert c.execute_command("DEBUG", "POPULATE", LOADING_KEYS, "key") == b"OK"
        for i in range(8):
            c.set(f"large:{i}", os.urandom(4_000_000))
        assert c.save() is True
        assert shutdown(srv, "NOSAVE") == 0
    finally:
        if srv.alive():
            srv.stop()
    return d / "dump.rdb"


def test_clients_get_loading_while_the_file_loads(big_file, tmp_path):
    d = tmp_path / "data"
    d.mkdir()
    shutil.copy(big_file, d / "dump.rdb")
    size = big_file.stat().st_size
    srv = Server("shardis", d, threads=2).spawn()
    try:
        conn = connect(srv)
        # The load takes seconds: the first replies come while it runs. Whenever INFO says
        # loading:1, the loading_* fields describe the load (first thing after the connect).
        fields = info(conn)
        assert fields["loading"] == "1", fields
        assert int(fields["loading_total_bytes"]) == size, fields
        assert abs(int(fields["loading_start_time"]) - time.time()) < 30, fields
        for cmd in (("GET", "key:1"), ("SET", "k", "v"), ("DBSIZE",), ("PING",)):
            raw = conn.call_raw(*cmd)
            assert raw == b"-LOADING Redis is loading the dataset in memory\r\n", (cmd, raw)
        fields = info(conn)
        assert fields["loading"] == "1", fields
        assert int(fields["loading_total_bytes"]) == size
        assert 0 <= int(fields["loading_loaded_bytes"]) <= size
        assert 0.0 <= float(fields["loading_loaded_perc"]) <= 100.0
        assert abs(int(fields["loading_start_time"]) - time.time()) < 30
        assert int(fields["loading_eta_seconds"]) >= 0
        assert "loading_rdb_used_mem" in fields
        # INFO of every section answers too, and so does LASTSAVE.
        assert b"loading:1" in conn.call("INFO")
        assert isinstance(conn.call("LASTSAVE"), int)
        # Then the data is there.
        deadline = time.monotonic() + 60
        while True:
            reply = conn.call("GET", "key:1")
            if not isinstance(reply, Error):
                break
            assert reply.startswith(b"LOADING"), reply
            assert time.monotonic() < deadline, "the load did not end"
            time.sleep(0.02)
        assert reply == b"value:1"
        assert conn.call("DBSIZE") == LOADING_KEYS + 8
        assert conn.call("STRLEN", "large:7") == 4_000_000
        assert conn.call("GET", f"key:{LOADING_KEYS - 1}") == f"value:{LOADING_KEYS - 1}".encode()
        fields = info(conn)
        assert fields["loading"] == "0" and "loading_total_bytes" not in fields
        assert int(fields["rdb_last_load_keys_loaded"]) == LOADING_KEYS + 8
        conn.close()
        assert shutdown(srv, "NOSAVE") == 0
    finally:
        if srv.alive():
            srv.stop()


@pytest.mark.parametrize("how", ["SHUTDOWN", "SIGTERM"])
@pytest.mark.parametrize("kind", ["shardis", "redis"])
def test_shutdown_while_loading(big_file, tmp_path, kind, how):
    """SHUTDOWN (allowed while loading) and SIGTERM stop a server that is loading at once,
    without saving the half-loaded dataset over the file."""
    d = tmp_path / "data"
    d.mkdir()
    shutil.copy(big_file, d / "dump.rdb")
    srv = Server(kind, d, threads=2 if kind == "shardis" else None).spawn()
    try:
        conn = connect(srv)
        assert conn.call_raw("GET", "key:1").startswith(b"-LOADING"), "loaded too fast to test"
        if how == "SHUTDOWN":
            conn.send_command("SHUTDOWN")
            data, closed = conn.read_all_until_closed(30)
            assert closed and data == b"", data
        else:
            srv.proc.send_signal(signal.SIGTERM)
        conn.close()
        assert srv.proc.wait(30) == 0
    finally:
        if srv.alive():
            srv.stop()
    log = srv.log_path.read_text(errors="replace")
    assert "Done loading RDB" not in log and "DB loaded from disk" not in log, \
        "the server finished the load before it stopped"
    assert (d / "dump.rdb").stat().st_size == big_file.stat().st_size
    assert (d / "dump.rdb").read_bytes() == big_file.read_bytes()


def test_no_client_is_served_after_a_failed_load(big_file, tmp_path):
    """A file that turns out damaged at its end: clients get -LOADING until the process exits
    (status 1), never a reply from the half-loaded dataset."""
    d = tmp_path / "data"
    d.mkdir()
    data = big_file.read_bytes()
    (d / "dump.rdb").write_bytes(data[:-20])
    for attempt in range(2):  # the window is short: look twice
        srv = Server("shardis", d, threads=2).spawn()
        replies = set()
        try:
            conn = connect(srv)
            batch = conn.encode("GET", "key:1") * 20
            try:
                while True:
                    conn.send(batch)
                    for _ in range(20):
                        replies.add(conn.read_reply()[0])
            except (ConnectionError, OSError):
                pass
            assert srv.proc.wait(30) == 1
        finally:
            if srv.alive():
                srv.stop()
        assert replies == {b"-LOADING Redis is loading the dataset in memory\r\n"}, replies
        assert "Fatal error loading" in srv.log_path.read_text(errors="replace")
