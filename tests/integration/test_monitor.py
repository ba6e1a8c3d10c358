"""MONITOR: lines from clients on every thread (shardis --threads 2), Redis' line format compared
with redis-server, AUTH/HELLO passwords redacted, and a monitor that never reads is disconnected
while the server keeps serving."""

import re
import socket
import time

import pytest

from conftest import start_target, wait_for

LINE = re.compile(rb"^\+(\d+)\.(\d{6}) \[(\d+) ([0-9.]+:\d+)\] (.*)$")


@pytest.fixture(scope="module")
def srv(tmp_path_factory):
    s = start_target(tmp_path_factory.mktemp("monitor"), threads=2,
                     shardis_args=["--monitor_output_limit=200000"])
    yield s
    s.stop_and_check()


def start_monitor(server):
    m = server.raw()
    assert m.call("MONITOR") == b"OK"
    return m


def read_lines(m, count, timeout=5.0):
    """The next `count` monitor lines (the raw simple strings, without '+' and CRLF)."""
    m.sock.settimeout(timeout)
    lines = []
    for _ in range(count):
        raw, _ = m.read_reply()
        lines.append(raw.rstrip(b"\r\n"))
    return lines


def commands_of(lines):
    """(db, command part) of each line, with its format checked."""
    out = []
    for line in lines:
        match = LINE.match(line)
        assert match, line
        assert abs(int(match.group(1)) - time.time()) < 60
        out.append((int(match.group(3)), match.group(5)))
    return out


def test_monitor_sees_clients_on_every_thread(srv):
    m = start_monitor(srv)
    clients = [srv.raw() for _ in range(8)]  # spread over both threads by the kernel
    addrs = set()
    for i, c in enumerate(clients):
        assert c.call("SET", f"mon:{i}", f"v{i}") == b"OK"
        addrs.add(b"127.0.0.1:%d" % c.sock.getsockname()[1])
    lines = read_lines(m, 8)
    seen = {LINE.match(line).group(4) for line in lines}
    assert seen == addrs
    assert sorted(cmd for _, cmd in commands_of(lines)) == sorted(
        b'"SET" "mon:%d" "v%d"' % (i, i) for i in range(8))
    for c in clients:
        c.close()
    m.close()


def run_script(server):
    """Commands whose MONITOR lines are compared with Redis'."""
    m = start_monitor(server)
    with server.raw() as c:
        c.call("SET", "a b", 'x"y\n\x01')
        c.call("AUTH", "not-the-password")
        c.call("AUTH", "default", "pw")
        c.call("HELLO", "2", "AUTH", "default", "pw", "SETNAME", "n")
        c.call("CLIENT", "ID")
        c.call("CLIENT", "LIST")       # administrative: not shown
        c.call("CONFIG", "GET", "port")  # administrative: not shown
        c.call("NOSUCHCOMMAND")        # rejected: not shown
        c.call("MULTI")
        c.call("INCR", "n")
        c.call("GET", "n")
        c.call("EXEC")
        c.call("SELECT", "3")
        c.call("GET", "k")
        c.call("QUIT")
    lines = read_lines(m, 12)
    m.close()
    return commands_of(lines)


def test_monitor_format_matches_redis(srv, redis_server):
    ours = run_script(srv)
    theirs = run_script(redis_server)
    assert ours == theirs
    assert ours[1] == (0, b'"AUTH" "(redacted)"')
    assert ours[3] == (0, b'"HELLO" "2" "AUTH" "(redacted)" "(redacted)" "SETNAME" "n"')


def test_reset_leaves_monitor_mode(srv):
    m = start_monitor(srv)
    assert m.call("RESET") == b"RESET"
    with srv.raw() as c:
        assert c.call("SET", "after-reset", "1") == b"OK"
    assert m.call("PING") == b"PONG"  # no monitor line in between
    m.close()


@pytest.mark.shardis_only  # the limit flag is ours
def test_slow_monitor_is_disconnected(srv):
    slow = socket.create_connection(("127.0.0.1", srv.port))
    slow.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    slow.sendall(b"MONITOR\r\n")
    time.sleep(0.1)
    with srv.raw() as admin:
        assert wait_for(lambda: b"flags=O" in admin.call("CLIENT", "LIST"), 5)
    clients = [srv.client() for _ in range(4)]
    value = "x" * 2000
    start = time.monotonic()
    for i in range(3000):  # about 6 MB of monitor lines, never read
        clients[i % 4].set(f"slow:{i % 50}", value)
    assert time.monotonic() - start < 30
    with srv.raw() as admin:
        # Disconnected past --monitor_output_limit; the others were served all along.
        assert wait_for(lambda: b"flags=O" not in admin.call("CLIENT", "LIST"), 5)
        assert admin.call("GET", "slow:0") == value.encode()
    slow.close()
    for c in clients:
        c.close()
