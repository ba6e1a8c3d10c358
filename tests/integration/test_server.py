"""Server commands: CONFIG GET, INFO, DEBUG POPULATE; process flags and shutdown."""

import re
import signal
import socket
import subprocess
import time

import pytest

from conftest import SHARDIS_BIN, busy_writers, free_port, wait_for


def info_fields(raw, section=None) -> dict:
    """INFO [section] as {field: value-string}, checking the line format on the way."""
    text = (raw.call("INFO", section) if section else raw.call("INFO")).decode()
    fields = {}
    for line in text.split("\r\n"):
        if not line or line.startswith("#"):
            continue
        assert ":" in line, f"malformed INFO line {line!r}"
        name, value = line.split(":", 1)
        fields[name] = value
    return fields


def info_sections(raw, section=None) -> list:
    text = (raw.call("INFO", section) if section else raw.call("INFO")).decode()
    return [line[2:] for line in text.split("\r\n") if line.startswith("# ")]


# ---- CONFIG GET --------------------------------------------------------------------------------


def test_config_get_benchmark_params(r, raw):
    # redis-benchmark asks for these two at startup.
    assert raw.call_raw("CONFIG", "GET", "save") == b"*2\r\n$4\r\nsave\r\n$0\r\n\r\n"
    assert raw.call_raw("CONFIG", "GET", "appendonly") == b"*2\r\n$10\r\nappendonly\r\n$2\r\nno\r\n"
    assert r.config_get("maxmemory") == {"maxmemory": "0"}
    assert r.config_get("databases") == {"databases": "16"}


def test_config_get_several_and_unknown(raw):
    reply = raw.call("CONFIG", "GET", "databases", "appendonly")
    assert dict(zip(reply[0::2], reply[1::2])) == {b"databases": b"16", b"appendonly": b"no"}
    assert raw.call_raw("CONFIG", "GET", "no-such-parameter") == b"*0\r\n"
    name, value = raw.call("CONFIG", "GET", "DATABASES")  # case-insensitive
    assert name.lower() == b"databases" and value == b"16"
    assert raw.call_raw("CONFIG", "FOO") == b"-ERR unknown subcommand 'FOO'. Try CONFIG HELP.\r\n"
    assert raw.call_raw("CONFIG", "GET") == \
        b"-ERR wrong number of arguments for 'config|get' command\r\n"


# ---- INFO --------------------------------------------------------------------------------------


def test_info_default_sections(raw):
    sections = info_sections(raw)
    for name in ("Server", "Clients", "Memory", "Stats", "Keyspace"):
        assert name in sections
    text = raw.call("INFO")
    assert text.endswith(b"\r\n")


def test_info_server(server, raw):
    f = info_fields(raw, "server")
    assert info_sections(raw, "server") == ["Server"]
    assert re.fullmatch(r"\d+\.\d+\.\d+", f["redis_version"])
    assert f["redis_mode"] == "standalone"
    assert int(f["process_id"]) == server.proc.pid
    assert int(f["tcp_port"]) == server.port
    assert int(f["uptime_in_seconds"]) >= 0
    assert f["arch_bits"] == "64"
    # Section names are case-insensitive.
    assert info_sections(raw, "SERVER") == ["Server"]


def test_info_several_sections(raw):
    text = raw.call("INFO", "server", "clients").decode()
    assert "# Server\r\n" in text and "# Clients\r\n" in text and "# Memory" not in text
    assert raw.call("INFO", "no-such-section") == b""


def test_info_clients(server, raw):
    before = int(info_fields(raw, "clients")["connected_clients"])
    assert before >= 1
    extra = [server.raw() for _ in range(5)]
    for c in extra:
        assert c.call("PING") == b"PONG"
    assert wait_for(lambda: int(info_fields(raw, "clients")["connected_clients"]) == before + 5,
                    timeout=2)
    for c in extra:
        c.close()
    assert wait_for(lambda: int(info_fields(raw, "clients")["connected_clients"]) == before,
                    timeout=3)


def test_info_memory(r, raw):
    f = info_fields(raw, "memory")
    assert int(f["used_memory"]) > 0
    assert re.fullmatch(r"[\d.]+[BKMGT]?", f["used_memory_human"])
    assert int(f["maxmemory"]) == 0
    r.execute_command("DEBUG", "POPULATE", 50000, "mem", 100)
    assert int(info_fields(raw, "memory")["used_memory"]) > int(f["used_memory"])


def test_info_stats(server, r, raw):
    f = info_fields(raw, "stats")
    for name in ("total_connections_received", "total_commands_processed",
                 "instantaneous_ops_per_sec", "keyspace_hits", "keyspace_misses",
                 "expired_keys"):
        assert re.fullmatch(r"\d+", f[name]), name
    r.set(b"a", b"1")
    for key in (b"a", b"a", b"a", b"missing", b"missing"):
        r.get(key)
    c = server.raw()
    c.call("PING")
    c.close()
    g = info_fields(raw, "stats")
    assert int(g["keyspace_hits"]) - int(f["keyspace_hits"]) == 3
    assert int(g["keyspace_misses"]) - int(f["keyspace_misses"]) == 2
    assert int(g["total_commands_processed"]) - int(f["total_commands_processed"]) >= 7
    assert int(g["total_connections_received"]) - int(f["total_connections_received"]) >= 1


@pytest.mark.shardis_only
def test_info_eventloop_figures(r, raw):
    # Redis 7.2's names: cycles and their summed duration in Stats, the longest cycle in a Debug
    # section that only INFO DEBUG shows.
    assert "Debug" not in info_sections(raw, "all")
    assert "Debug" not in info_sections(raw, "everything")
    assert info_sections(raw, "debug") == ["Debug"]
    r.execute_command("DEBUG", "POPULATE", 20000)
    before = info_fields(raw, "stats")
    longest = int(info_fields(raw, "debug")["eventloop_duration_max"])
    assert longest > 0
    for _ in range(5):
        r.ping()
    after = info_fields(raw, "stats")
    assert int(after["eventloop_cycles"]) > int(before["eventloop_cycles"])
    assert int(after["eventloop_duration_sum"]) >= int(before["eventloop_duration_sum"]) > 0
    assert longest <= int(after["eventloop_duration_sum"])
    assert r.config_resetstat()
    assert int(info_fields(raw, "stats")["eventloop_cycles"]) < int(after["eventloop_cycles"])
    assert int(info_fields(raw, "debug")["eventloop_duration_max"]) < longest


def test_info_keyspace(server, r, raw):
    assert raw.call("INFO", "keyspace") == b"# Keyspace\r\n"
    r.mset({b"a": b"1", b"b": b"2"})
    r.expire(b"a", 1000)
    c3 = server.client(db=3)
    c3.set(b"x", b"1")
    c3.close()
    text = raw.call("INFO", "keyspace").decode()
    lines = [line for line in text.split("\r\n") if line]
    assert lines[0] == "# Keyspace"
    assert re.fullmatch(r"db0:keys=2,expires=1,avg_ttl=\d+", lines[1])
    assert lines[2] == "db3:keys=1,expires=0,avg_ttl=0"
    assert len(lines) == 3


# ---- DEBUG POPULATE ----------------------------------------------------------------------------


def test_debug_populate(r, raw):
    assert raw.call_raw("DEBUG", "POPULATE", "1000") == b"+OK\r\n"
    assert r.dbsize() == 1000
    assert r.get(b"key:0") == b"value:0"
    assert r.get(b"key:999") == b"value:999"
    assert r.get(b"key:1000") is None
    assert r.mget([f"key:{i}".encode() for i in range(0, 1000, 37)]) == \
        [f"value:{i}".encode() for i in range(0, 1000, 37)]
    assert r.ttl(b"key:5") == -1


def test_debug_populate_prefix_and_size(r, raw):
    assert raw.call_raw("DEBUG", "POPULATE", "10", "user") == b"+OK\r\n"
    assert sorted(r.keys(b"user:*")) == sorted(f"user:{i}".encode() for i in range(10))
    assert r.get(b"user:7") == b"value:7"
    # A size pads the value with zero bytes, or cuts it.
    raw.call("DEBUG", "POPULATE", "3", "pad", "12")
    assert r.get(b"pad:1") == b"value:1" + b"\x00" * 5
    raw.call("DEBUG", "POPULATE", "3", "cut", "3")
    assert r.get(b"cut:2") == b"val"
    raw.call("DEBUG", "POPULATE", "2", "big", "1000")
    assert r.strlen(b"big:1") == 1000
    assert r.dbsize() == 18


def test_debug_populate_keeps_existing_keys(r, raw):
    r.set(b"key:3", b"mine")
    raw.call("DEBUG", "POPULATE", "10")
    assert r.get(b"key:3") == b"mine"
    assert r.dbsize() == 10


def test_debug_populate_selected_db(server, r):
    c = server.client(db=2)
    c.execute_command("DEBUG", "POPULATE", 100)
    assert c.dbsize() == 100
    assert r.dbsize() == 0
    c.close()


def test_debug_populate_large(r):
    r.execute_command("DEBUG", "POPULATE", 200000, "key", 16)
    assert r.dbsize() == 200000
    sample = list(range(0, 200000, 997))
    assert r.mget([f"key:{i}".encode() for i in sample]) == \
        [f"value:{i}".encode().ljust(16, b"\x00")[:16] for i in sample]


def test_debug_populate_errors(raw):
    err = b"-ERR value is out of range, must be positive\r\n"
    assert raw.call_raw("DEBUG", "POPULATE", "-1") == err
    assert raw.call_raw("DEBUG", "POPULATE", "abc") == err


# ---- Process: shutdown and flags ---------------------------------------------------------------


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_signal_shutdown_exits_zero(server_factory, sig):
    srv = server_factory(threads=2)
    c = srv.client()
    c.set(b"k", b"v")
    idle = srv.raw()  # an idle connection must not hold up the shutdown
    idle.call("PING")
    srv.stop_and_check(sig)
    idle.close()


def test_shutdown_with_busy_clients(server_factory):
    srv = server_factory(threads=2)
    with busy_writers(srv, 8):
        time.sleep(0.5)
        srv.stop_and_check(signal.SIGTERM)


@pytest.mark.shardis_only
def test_odd_thread_count(server_factory):
    srv = server_factory(threads=3)
    c = srv.client()
    mapping = {f"k{i}".encode(): f"v{i}".encode() for i in range(300)}
    c.mset(mapping)
    assert c.mget(list(mapping)) == list(mapping.values())
    c.execute_command("DEBUG", "POPULATE", 3000)
    assert c.dbsize() == 3300
    assert len(c.keys(b"key:*")) == 3000
    assert c.delete(*mapping) == 300
    c.flushall()
    assert c.dbsize() == 0


@pytest.mark.shardis_only
def test_unknown_flag_exits_nonzero():
    proc = subprocess.run([SHARDIS_BIN, "--no-such-flag=1", f"--port={free_port()}"],
                          stdin=subprocess.DEVNULL, capture_output=True, timeout=10)
    assert proc.returncode != 0


@pytest.mark.shardis_only
def test_port_and_bind_flags(server_factory):
    srv = server_factory(threads=1)
    # The fixture passed --port and --bind=127.0.0.1: it must listen exactly there.
    with socket.create_connection(("127.0.0.1", srv.port), timeout=5):
        pass
    with srv.raw() as conn:
        assert int(info_fields(conn, "server")["tcp_port"]) == srv.port
