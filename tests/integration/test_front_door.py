"""The front door: one server per port, file descriptors and maxclients under a low ulimit, TCP
keepalive on client sockets, and the idle-client timeout. Each test holds against the Debian
redis-server too (SHARDIS_TEST_TARGET=redis), except where marked."""

import re
import resource
import selectors
import socket
import subprocess
import time

import pytest
import redis

from conftest import REDIS_SERVER_BIN, SHARDIS_BIN, TARGET, Server, free_port, wait_for

IN_USE = "Could not create server TCP listening socket 127.0.0.1:{port}: bind: Address already in use"


def start_second(port_args: list[str]) -> subprocess.CompletedProcess:
    """Starts another instance of the server under test with `port_args`; it must exit by itself."""
    if TARGET == "redis":
        argv = [REDIS_SERVER_BIN, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                *port_args]
    else:
        argv = [SHARDIS_BIN, "--bind=127.0.0.1", "--logtostderr", "--maxmemory=0", *port_args]
    return subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, timeout=10)


def assert_refused_port(proc: subprocess.CompletedProcess, port: int):
    out = (proc.stdout + proc.stderr).decode(errors="replace")
    assert proc.returncode == 1, out
    assert IN_USE.format(port=port) in out, out


# ---- One listener per port ----------------------------------------------------------------------


@pytest.mark.parametrize("threads", [1, 2])
def test_second_instance_on_a_used_port_exits(server_factory, threads):
    first = server_factory(threads=threads)
    c = first.client()
    c.set("k", "first")
    second = start_second(["--port", str(first.port)] if TARGET == "redis"
                          else [f"--port={first.port}", f"--threads={threads}"])
    assert_refused_port(second, first.port)
    # Every new client still reaches the first server's keyspace.
    for _ in range(20):
        with first.client() as other:
            assert other.get("k") == b"first"
    c.close()


@pytest.mark.shardis_only
def test_port_held_by_redis_server(tmp_path):
    ref = Server("redis", tmp_path / "redis").start()
    try:
        assert_refused_port(start_second([f"--port={ref.port}"]), ref.port)
        assert ref.client().ping()
    finally:
        ref.stop_and_check()


@pytest.mark.shardis_only
@pytest.mark.parametrize("flag", ["memcached_port", "admin_port"])
def test_other_ports_held(server_factory, flag):
    held = free_port()
    first = server_factory(threads=2, args=[f"--{flag}={held}"])
    second = start_second([f"--port={free_port()}", f"--{flag}={held}", "--threads=2"])
    assert_refused_port(second, held)
    assert first.client().ping()


@pytest.mark.shardis_only
def test_port_held_by_a_plain_socket():
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        assert_refused_port(start_second([f"--port={port}"]), port)


# ---- File descriptors and maxclients --------------------------------------------------------------


def has_cap_sys_resource() -> bool:
    """Whether this process could raise its hard limits (CAP_SYS_RESOURCE, bit 24)."""
    for line in open("/proc/self/status"):
        if line.startswith("CapEff:"):
            return bool(int(line.split()[1], 16) >> 24 & 1)
    return False


class UlimitServer(Server):
    """A server started under `ulimit -n 1024` (soft and hard) that may not raise the hard limit:
    with CAP_SYS_RESOURCE it could, as Redis would, so that capability is dropped first."""

    def argv(self):
        drop = (["setpriv", "--inh-caps=-sys_resource", "--bounding-set=-sys_resource", "--"]
                if has_cap_sys_resource() else [])
        return drop + ["prlimit", "--nofile=1024:1024", "--"] + super().argv()


@pytest.fixture
def low_ulimit_server(tmp_path):
    kind = "redis" if TARGET == "redis" else "shardis"
    srv = UlimitServer(kind, tmp_path, threads=None if kind == "redis" else 2).start()
    yield srv
    srv.stop_and_check()


def test_maxclients_lowered_to_the_fd_limit(low_ulimit_server):
    c = low_ulimit_server.client(decode_responses=True)
    maxclients = int(c.config_get("maxclients")["maxclients"])
    assert 900 <= maxclients <= 1024 - 32
    log = low_ulimit_server.tail(200)
    assert "You requested maxclients of 10000 requiring at least" in log
    assert re.search(r"Server can't set maximum open files to \d+ because of OS error: ", log)
    assert (f"Current maximum open files is 1024. maxclients has been reduced to {maxclients} to "
            f"compensate for low ulimit. If you need higher maxclients increase 'ulimit -n'."
            in log)
    # CONFIG SET cannot go past what the limit allows, and says what it can do.
    with pytest.raises(redis.ResponseError) as e:
        c.config_set("maxclients", 5000)
    assert str(e.value) == (
        "CONFIG SET failed (possibly related to argument 'maxclients') - The operating system is "
        f"not able to handle the specified number of clients, try with {maxclients}")
    assert c.config_get("maxclients")["maxclients"] == str(maxclients)
    assert c.config_set("maxclients", 500)
    assert c.config_get("maxclients")["maxclients"] == "500"
    assert c.config_set("maxclients", maxclients)
    c.close()


def test_clients_past_the_fd_limit_are_refused_not_left_waiting(low_ulimit_server):
    """3,000 clients against a server under ulimit -n 1024: each gets PONG or the max-clients
    error within 2 s (none waits in the accept backlog)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    need = 3200
    assert hard >= need, f"the test needs {need} descriptors; hard limit {hard}"
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, need), hard))
    sel = selectors.DefaultSelector()
    socks, replies = [], {}
    try:
        for _ in range(3000):
            s = socket.create_connection(("127.0.0.1", low_ulimit_server.port), timeout=5)
            s.sendall(b"PING\r\n")
            s.setblocking(False)
            socks.append(s)
            replies[s] = b""
            sel.register(s, selectors.EVENT_READ)
        deadline = time.monotonic() + 2.0
        pending = len(socks)
        while pending and time.monotonic() < deadline:
            for key, _ in sel.select(timeout=max(0.0, deadline - time.monotonic())):
                s = key.fileobj
                try:
                    chunk = s.recv(256)
                except (BlockingIOError, InterruptedError):
                    continue
                except ConnectionResetError:
                    chunk = b""
                replies[s] += chunk
                if not chunk or replies[s].endswith(b"\r\n"):
                    sel.unregister(s)
                    pending -= 1
        answers = list(replies.values())
        ok = sum(a == b"+PONG\r\n" for a in answers)
        refused = sum(a == b"-ERR max number of clients reached\r\n" for a in answers)
        other = [a for a in answers if a not in (b"+PONG\r\n",
                                                 b"-ERR max number of clients reached\r\n")]
        assert not other, f"{len(other)} clients got no answer in 2 s, e.g. {other[:3]}"
        assert ok > 0 and refused > 0
        assert ok + refused == 3000
    finally:
        for s in socks:
            s.close()
        sel.close()
    # The server serves again once they are gone.
    assert wait_for(lambda: _ping(low_ulimit_server), 5.0)


def _ping(srv) -> bool:
    try:
        with srv.client() as c:
            return c.ping()
    except redis.ConnectionError:
        return False


# ---- Keepalive ------------------------------------------------------------------------------------


def keepalive_timer(server_port: int, client_port: int) -> str | None:
    """The `timer:(...)` of the server's side of the connection from client_port, as ss shows it."""
    out = subprocess.run(["ss", "-tnoe", "state", "established",
                          f"( sport = :{server_port} and dport = :{client_port} )"],
                         capture_output=True, text=True, check=True).stdout
    m = re.search(r"timer:\((\w+),", out)
    return m.group(1) if m else None


def test_tcp_keepalive(server_factory):
    srv = server_factory(threads=2)
    c = srv.client(decode_responses=True)
    assert c.config_get("tcp-keepalive") == {"tcp-keepalive": "300"}
    with srv.raw() as conn:
        assert conn.call("PING") == b"PONG"
        assert keepalive_timer(srv.port, conn.sock.getsockname()[1]) == "keepalive"
    # A new value applies to connections made after it.
    assert c.config_set("tcp-keepalive", 0)
    assert c.config_get("tcp-keepalive") == {"tcp-keepalive": "0"}
    with srv.raw() as conn:
        assert conn.call("PING") == b"PONG"
        assert keepalive_timer(srv.port, conn.sock.getsockname()[1]) is None
    assert c.config_set("tcp-keepalive", 60)
    assert c.config_get("tcp-keepalive") == {"tcp-keepalive": "60"}
    with pytest.raises(redis.ResponseError, match="argument must be between 0 and 2147483647"):
        c.config_set("tcp-keepalive", -1)
    c.close()


@pytest.mark.shardis_only
def test_tcp_keepalive_on_memcached_connections(server_factory):
    mc_port = free_port()
    srv = server_factory(threads=1, args=[f"--memcached_port={mc_port}", "--tcp_keepalive=120"])
    with socket.create_connection(("127.0.0.1", mc_port), timeout=5) as s:
        s.sendall(b"version\r\n")
        assert s.recv(100).startswith(b"VERSION")
        assert keepalive_timer(mc_port, s.getsockname()[1]) == "keepalive"
    assert srv.client().config_get("tcp-keepalive") == {"tcp-keepalive": "120"}


# ---- Idle timeout ---------------------------------------------------------------------------------


def test_idle_clients_closed_after_timeout(server_factory):
    srv = server_factory(threads=2)
    c = srv.client(decode_responses=True)
    assert c.config_get("timeout") == {"timeout": "0"}
    # Clients on every thread: the kernel spreads them, so open a few of each kind.
    idle = [srv.raw() for _ in range(4)]
    subscribers = [srv.raw() for _ in range(4)]
    blocked = [srv.raw() for _ in range(4)]
    for conn in idle:
        assert conn.call("PING") == b"PONG"
    for i, conn in enumerate(subscribers):
        assert conn.call("SUBSCRIBE", "ch") == [b"subscribe", b"ch", 1]
    for i, conn in enumerate(blocked):
        conn.send_command("BLPOP", f"list{i}", 0)
    assert wait_for(lambda: c.info("clients")["blocked_clients"] == 4, 5.0)
    assert c.config_set("timeout", 1)
    assert c.config_get("timeout") == {"timeout": "1"}
    start = time.monotonic()
    closed_at = []
    for conn in idle:
        _, closed = conn.read_all_until_closed(timeout=5.0)
        assert closed
        closed_at.append(time.monotonic() - start)
    assert max(closed_at) < 4.0
    # A client that keeps sending commands stays.
    with srv.raw() as busy:
        for _ in range(6):
            assert busy.call("PING") == b"PONG"
            time.sleep(0.5)
    assert c.publish("ch", "hi") == 4
    for conn in subscribers:
        assert conn.read_reply()[1] == [b"message", b"ch", b"hi"]
    for i, conn in enumerate(blocked):
        c.rpush(f"list{i}", "v")
        assert conn.read_reply()[1] == [f"list{i}".encode(), b"v"]
    assert c.config_set("timeout", 0)
    for conn in idle + subscribers + blocked:
        conn.close()
    c.close()


def test_timeout_config_values(server):
    c = server.client(decode_responses=True)
    try:
        assert c.config_set("timeout", 300)
        assert c.config_get("timeout") == {"timeout": "300"}
        with pytest.raises(redis.ResponseError, match="argument must be between 0 and 2147483647"):
            c.config_set("timeout", -1)
        assert c.config_get("timeout") == {"timeout": "300"}
    finally:
        c.config_set("timeout", 0)
        c.close()


def test_paused_client_not_closed_for_idleness(server_factory):
    srv = server_factory(threads=2)
    c = srv.client(decode_responses=True)
    assert c.config_set("timeout", 1)
    with srv.raw() as paused:
        assert c.client_pause(2500, all=True)
        start = time.monotonic()
        paused.send_command("PING")
        # Held by the pause for 2.5 s, longer than the timeout; its reply comes once it ends.
        assert paused.read_reply()[1] == b"PONG"
        assert time.monotonic() - start > 2.0
    c.config_set("timeout", 0)
    c.close()


@pytest.mark.shardis_only
def test_slow_command_client_not_closed_for_idleness(server_factory):
    """A command that runs longer than the timeout is not idleness; the client's idle time then
    counts from the reply. (redis-server 7.0 closes this client right after the reply: it stamps
    the write with the clock it cached before the 2.5 s command, so the next cron sees 2.5 s of
    idleness. That is an artefact of its cached clock, not a rule clients rely on.)"""
    srv = server_factory(threads=2)
    c = srv.client(decode_responses=True)
    assert c.config_set("timeout", 1)
    with srv.raw() as slow:
        slow.send_command("DEBUG", "SLEEP", "2.5")
        assert slow.read_reply()[1] == b"OK"
        time.sleep(0.5)  # idle since the reply for less than the timeout
        assert slow.call("PING") == b"PONG"
    c.config_set("timeout", 0)
    c.close()
