"""Bounded client buffers: client-query-buffer-limit, proto-max-bulk-len,
client-output-buffer-limit (CONFIG GET/SET as Redis 7, enforcement), and the buffer figures of
CLIENT LIST and INFO."""

import socket
import time

import pytest
import redis

from conftest import TARGET, RespConn, wait_for


def rss_bytes(srv) -> int:
    """The server process' resident set size (from /proc)."""
    with open(f"/proc/{srv.proc.pid}/statm") as f:
        return int(f.read().split()[1]) * 4096


def closed_by_server(sock: socket.socket, timeout: float = 10.0) -> bool:
    """True once the server closes `sock` (reads and discards whatever it sent before)."""
    sock.settimeout(timeout)
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            if not sock.recv(1 << 16):
                return True
    except (ConnectionResetError, BrokenPipeError):
        return True
    except socket.timeout:
        return False
    return False


def send_until_closed(sock: socket.socket, chunk: bytes, limit: int) -> int:
    """Sends `chunk` repeatedly, at most `limit` bytes in all; returns the bytes sent before the
    server closed the connection (or `limit`)."""
    sent = 0
    sock.settimeout(10)
    try:
        while sent < limit:
            sock.sendall(chunk)
            sent += len(chunk)
    except (ConnectionResetError, BrokenPipeError):
        pass
    return sent


# A client's own CLIENT INFO shows the request running in qbuf, as Redis' query buffer does.
CLIENT_INFO_BYTES = str(len(b"*2\r\n$6\r\nCLIENT\r\n$4\r\nINFO\r\n"))


def client_fields(conn: RespConn) -> dict:
    line = conn.call("CLIENT", "INFO").decode().strip()
    return dict(kv.split("=", 1) for kv in line.split(" "))


def info_fields(conn: RespConn, section: str) -> dict:
    text = conn.call("INFO", section).decode()
    return dict(l.split(":", 1) for l in text.splitlines() if ":" in l)


# --- CONFIG GET / SET ----------------------------------------------------------------------------


@pytest.mark.parametrize("name,value", [
    ("client-query-buffer-limit", "1073741824"),
    ("proto-max-bulk-len", "536870912"),
    ("client-output-buffer-limit",
     "normal 0 0 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60"),
])
def test_defaults_match_redis(server_factory, redis_server, name, value):
    srv = server_factory(threads=2)
    for s in (srv, redis_server):
        with s.raw() as c:
            assert c.call("CONFIG", "GET", name) == [name.encode(), value.encode()]


def config_set_replies(srv, name, values):
    with srv.raw() as c:
        replies = [c.call_raw("CONFIG", "SET", name, v) for v in values]
        final = c.call("CONFIG", "GET", name)
        # Back to the defaults, for the next caller of the reference server.
        c.call("CONFIG", "SET", "client-output-buffer-limit",
               "normal 0 0 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60")
        c.call("CONFIG", "SET", "client-query-buffer-limit", "1gb")
        c.call("CONFIG", "SET", "proto-max-bulk-len", "512mb")
    return replies, final


@pytest.mark.parametrize("name,values", [
    ("client-output-buffer-limit",
     ["pubsub 1mb 512kb", "foo 1 1 1", "pubsub x 1 1", "pubsub 1 1 -1", "master 1 1 1",
      "normal 1k 2k 3 replica 1 1 1", "", "pubsub 1mb 2mb 60", "SLAVE 5mb 1mb 10"]),
    ("client-query-buffer-limit", ["1000", "1mb", "2gb", "-1", "x", "1500000"]),
    ("proto-max-bulk-len", ["1000", "1mb", "10mb", "1048575"]),
])
def test_config_set_formats_and_errors_match_redis(server_factory, redis_server, name, values):
    srv = server_factory(threads=2)
    ours = config_set_replies(srv, name, values)
    theirs = config_set_replies(redis_server, name, values)
    assert ours == theirs


# --- Query buffer and bulk length ---------------------------------------------------------------


def test_two_gib_bulk_header_is_refused(server_factory):
    srv = server_factory(threads=2)
    rss_before = rss_bytes(srv) if TARGET != "redis" else 0
    with srv.raw() as c:
        c.send(b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$2147483648\r\n")
        data, closed = c.read_all_until_closed()
    assert data == b"-ERR Protocol error: invalid bulk length\r\n"
    assert closed
    with srv.raw() as c:
        assert c.call("PING") == b"PONG"
    if TARGET != "redis":
        assert rss_bytes(srv) < rss_before + (64 << 20)


def test_bulk_longer_than_proto_max_bulk_len_is_refused(server_factory):
    srv = server_factory(threads=2)
    with srv.raw() as c:
        assert c.call("CONFIG", "SET", "proto-max-bulk-len", "1mb") == b"OK"
    with srv.raw() as c:
        c.send(b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1048577\r\n")
        data, closed = c.read_all_until_closed()
    assert data == b"-ERR Protocol error: invalid bulk length\r\n" and closed
    # Exactly the limit is fine.
    with srv.raw() as c:
        assert c.call("SET", "k", b"v" * (1 << 20)) == b"OK"
        assert c.call("STRLEN", "k") == 1 << 20


def test_query_buffer_limit_closes_a_streaming_client(server_factory):
    srv = server_factory(threads=2)
    bystander = srv.raw()
    with srv.raw() as c:
        assert c.call("CONFIG", "SET", "client-query-buffer-limit", "1mb") == b"OK"
    rss_before = rss_bytes(srv) if TARGET != "redis" else 0
    # An unterminated bulk announced as 100 MB, streamed: closed once 1 MB waits unprocessed.
    s = socket.create_connection(("127.0.0.1", srv.port))
    s.sendall(b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$104857600\r\n")
    sent = send_until_closed(s, b"x" * 65536, 100 << 20)
    assert sent < 100 << 20
    assert closed_by_server(s)
    s.close()
    # An inline request with no end at all: closed too (the inline limit comes first in Redis).
    s = socket.create_connection(("127.0.0.1", srv.port))
    assert send_until_closed(s, b"y" * 65536, 100 << 20) < 100 << 20
    s.close()
    assert bystander.call("PING") == b"PONG"
    bystander.close()
    if TARGET != "redis":
        assert rss_bytes(srv) < rss_before + (64 << 20)
        with srv.raw() as c:
            stats = info_fields(c, "stats")
            assert int(stats["client_query_buffer_limit_disconnections"]) >= 1
        assert "Closing client that reached max query buffer length: id=" in srv.tail(200)


def test_query_buffer_under_limit_is_served(server_factory):
    srv = server_factory(threads=2)
    with srv.raw() as c:
        assert c.call("CONFIG", "SET", "client-query-buffer-limit", "2mb") == b"OK"
        assert c.call("SET", "k", b"v" * (1 << 20)) == b"OK"
        assert c.call("STRLEN", "k") == 1 << 20


# --- Output buffer -------------------------------------------------------------------------------


def subscriber(srv, channel: bytes) -> socket.socket:
    s = socket.create_connection(("127.0.0.1", srv.port))
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.sendall(b"SUBSCRIBE " + channel + b"\r\n")
    s.settimeout(5)
    assert b"subscribe" in s.recv(1024)
    return s


def test_pubsub_hard_limit_closes_a_subscriber_that_never_reads(server_factory):
    srv = server_factory(threads=2)
    pub = srv.client()
    assert pub.config_set("client-output-buffer-limit", "pubsub 1mb 512kb 60")
    slow = subscriber(srv, b"firehose")
    payload = "x" * 10000
    receivers = [pub.publish("firehose", payload) for _ in range(2000)]  # 20 MB, never read
    assert receivers[0] == 1 and receivers[-1] == 0
    assert pub.ping()
    slow.close()
    pub.close()


def test_normal_client_that_never_reads_is_closed_at_its_limit(server_factory):
    srv = server_factory(threads=2)
    admin = srv.client()
    rss_before = rss_bytes(srv) if TARGET != "redis" else 0
    for i in range(8):  # keys on every shard
        admin.set(f"big{i}", "v" * 100_000)
    assert admin.config_set("client-output-buffer-limit", "normal 2mb 0 0")
    s = socket.create_connection(("127.0.0.1", srv.port))
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    request = b"".join(f"GET big{i % 8}\r\n".encode() for i in range(2000))  # 200 MB of replies
    s.sendall(request)
    # Closed, not 200 MB buffered.
    assert closed_by_server(s)
    assert wait_for(lambda: len(admin.client_list()) == 1, 10)
    assert admin.ping()
    if TARGET != "redis":
        assert rss_bytes(srv) < rss_before + (64 << 20)
        assert int(admin.info("stats")["client_output_buffer_limit_disconnections"]) >= 1
        assert "scheduled to be closed ASAP for overcoming of output buffer limits." in \
            srv.tail(200)
    s.close()
    admin.close()


def test_normal_client_under_its_limit_gets_every_reply(server_factory):
    srv = server_factory(threads=2)
    admin = srv.client()
    for i in range(8):
        admin.set(f"big{i}", "v" * 100_000)
    assert admin.config_set("client-output-buffer-limit", "normal 64mb 0 0")
    with srv.raw() as c:
        c.send(b"".join(f"GET big{i % 8}\r\n".encode() for i in range(200)))
        for _ in range(200):
            assert c.read_reply()[1] == b"v" * 100_000
    admin.close()


def test_soft_limit_closes_only_when_exceeded_for_its_seconds(server_factory):
    srv = server_factory(threads=2)
    pub = srv.client()
    assert pub.config_set("client-output-buffer-limit", "pubsub 0 512kb 2")
    payload = "x" * 10000

    # Briefly over the soft limit, then drained: stays connected.
    brief = socket.create_connection(("127.0.0.1", srv.port))
    brief.sendall(b"SUBSCRIBE brief\r\n")
    brief.settimeout(5)
    assert b"subscribe" in brief.recv(1024)
    for _ in range(500):  # 5 MB at once: more than the socket buffers take
        pub.publish("brief", payload)
    got = 0
    while got < 500 * 10000:
        got += len(brief.recv(1 << 20))
    time.sleep(2.5)
    assert pub.publish("brief", "after") == 1  # below the soft limit: its timer starts over
    time.sleep(0.2)
    for _ in range(500):
        pub.publish("brief", payload)
    assert pub.publish("brief", "x") == 1

    # Over the soft limit without a break for longer than 2 s: closed.
    stuck = subscriber(srv, b"stuck")
    start = time.monotonic()
    while time.monotonic() - start < 8 and all(pub.publish("stuck", payload) for _ in range(5)):
        time.sleep(0.01)
    elapsed = time.monotonic() - start
    assert pub.publish("stuck", "x") == 0
    assert elapsed >= 2
    brief.close()
    stuck.close()
    pub.close()


def test_soft_limit_closes_a_quiet_subscriber_past_its_seconds(server_factory):
    """TCL unit/obuf-limits "soft limit ... is enforced when no traffic": once over the soft
    limit, the subscriber is closed when its seconds pass even if nothing more is published."""
    srv = server_factory(threads=2)
    pub = srv.client()
    assert pub.config_set("client-output-buffer-limit", "pubsub 0 100000 1")
    quiet = subscriber(srv, b"quiet")
    payload = "x" * 10000

    def omem():
        subscribers = pub.client_list(_type="pubsub")
        return int(subscribers[0]["omem"]) if subscribers else None

    # Published until the server holds more than the soft limit (the socket buffers fill first).
    for _ in range(2000):
        pub.publish("quiet", payload)
        if omem() > 100000:
            break
    assert omem() > 100000  # its 1 s has not passed yet
    start = time.monotonic()
    assert wait_for(lambda: len(pub.client_list(_type="pubsub")) == 0, 5)
    assert time.monotonic() - start < 3
    quiet.close()
    pub.close()


# --- Visibility ----------------------------------------------------------------------------------


def test_info_fields_present(server_factory):
    srv = server_factory(threads=2)
    with srv.raw() as c:
        clients = info_fields(c, "clients")
        memory = info_fields(c, "memory")
    for f in ("client_recent_max_input_buffer", "client_recent_max_output_buffer"):
        assert int(clients[f]) >= 0
    for f in ("mem_clients_normal", "mem_clients_slaves"):
        assert int(memory[f]) >= 0
    assert int(memory["mem_clients_slaves"]) == 0


@pytest.mark.shardis_only  # the exact figures are ours (Redis counts its own structures)
def test_client_list_buffers_move_and_fall_back(server_factory):
    srv = server_factory(threads=2)
    admin = srv.raw()
    big = b"v" * (5 << 20)
    with srv.raw() as c:
        idle = client_fields(c)
        assert idle["qbuf"] == CLIENT_INFO_BYTES and int(idle["omem"]) == 0
        assert int(idle["tot-mem"]) < 1 << 20
        base = int(info_fields(admin, "memory")["mem_clients_normal"])
        assert base > 0

        # A 5 MB value in and out: the buffers grow while it passes, then are released.
        assert c.call("SET", "big", big) == b"OK"
        assert c.call("GET", "big") == big
        peaks = info_fields(admin, "clients")
        time.sleep(0.3)  # the 100 ms sampler took the peaks
        peaks = info_fields(admin, "clients")
        assert int(peaks["client_recent_max_input_buffer"]) >= 5 << 20
        assert int(peaks["client_recent_max_output_buffer"]) >= 5 << 20
        after = client_fields(c)
        assert after["qbuf"] == CLIENT_INFO_BYTES and int(after["omem"]) == 0
        assert int(after["tot-mem"]) < 1 << 20, after
        assert int(info_fields(admin, "memory")["mem_clients_normal"]) < base + (1 << 20)

        # A request in progress shows in qbuf, a client that does not read in omem.
        c.send(b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$100000\r\n" + b"x" * 50000)
        rows = lambda: [l for l in admin.call("CLIENT", "LIST").decode().splitlines()
                        if "cmd=client|info" in l]
        qbuf = lambda: int(rows()[0].split(" qbuf=")[1].split(" ")[0])
        # The 50000 bytes may arrive in several receives: wait for all of them.
        assert wait_for(lambda: qbuf() >= 50000, 5), rows()
        c.send(b"x" * 50000 + b"\r\n")
        assert c.read_reply()[1] == b"OK"

    slow = subscriber(srv, b"ch")
    for _ in range(1500):
        admin.call("PUBLISH", "ch", b"x" * 10000)  # 15 MB, more than the socket buffers take
    line = [l for l in admin.call("CLIENT", "LIST").decode().splitlines() if "sub=1" in l][0]
    omem = int(line.split(" omem=")[1].split(" ")[0])
    tot = int(line.split(" tot-mem=")[1].split(" ")[0])
    assert omem > 0 and tot >= omem
    slow.close()
    admin.close()
