"""Malformed and extreme input over raw sockets.

A protocol error gets exactly Redis' `-ERR Protocol error: ...` reply, after the replies to the
well-formed requests before it, and then that connection (and only that one) is closed. Also
run by scripts/test.sh against the ASan build.
"""

import hashlib
import socket
import time

import pytest

from conftest import RespConn

MiB = 1024 * 1024


def perr(text: str) -> bytes:
    return f"-ERR Protocol error: {text}\r\n".encode()


MALFORMED = [
    ("multibulk-not-a-number", b"*abc\r\n", perr("invalid multibulk length")),
    ("multibulk-trailing-junk", b"*1x\r\n", perr("invalid multibulk length")),
    ("multibulk-over-int", b"*3000000000\r\n", perr("invalid multibulk length")),
    ("bulk-not-a-number", b"*1\r\n$abc\r\n", perr("invalid bulk length")),
    ("bulk-negative", b"*1\r\n$-1\r\n", perr("invalid bulk length")),
    ("bulk-over-512mb", b"*1\r\n$536870913\r\n", perr("invalid bulk length")),
    ("expected-dollar-plus", b"*1\r\n+foo\r\n", perr("expected '$', got '+'")),
    ("expected-dollar-colon", b"*2\r\n$3\r\nGET\r\n:1\r\n", perr("expected '$', got ':'")),
    ("inline-too-big", b"a" * (70 * 1024), perr("too big inline request")),
    ("mbulk-count-line-too-big", b"*" + b"1" * (70 * 1024), perr("too big mbulk count string")),
    ("bulk-count-line-too-big", b"*1\r\n$" + b"1" * (70 * 1024), perr("too big bulk count string")),
    ("unbalanced-double-quote", b'set "a b\r\n', perr("unbalanced quotes in request")),
    ("unbalanced-single-quote", b"set 'a\r\n", perr("unbalanced quotes in request")),
    ("quote-not-followed-by-space", b'set "a"b c\r\n', perr("unbalanced quotes in request")),
]


@pytest.fixture
def bystander(server, r):
    """A second client with data of its own, connected before the bad input arrives."""
    conn = server.raw()
    data = {f"bystander:{i}": f"value-{i}" for i in range(100)}
    args = [x for kv in data.items() for x in kv]
    assert conn.call("MSET", *args) == b"OK"
    conn.call("SELECT", "2")
    conn.call("SET", "in-db2", "yes")
    yield conn, data
    conn.close()


def check_bystander(conn, data):
    assert conn.call("PING") == b"PONG"
    assert conn.call("GET", "in-db2") == b"yes"  # still in db 2: connection state intact
    conn.call("SELECT", "0")
    keys = list(data)
    assert conn.call("MGET", *keys) == [data[k].encode() for k in keys]
    conn.call("SELECT", "2")


def expect_error_and_close(conn, expected: bytes):
    data, closed = conn.read_all_until_closed(timeout=10)
    assert data == expected
    assert closed, "the server did not close the connection after a protocol error"


@pytest.mark.parametrize("payload,expected", [(p, e) for _, p, e in MALFORMED],
                         ids=[name for name, _, _ in MALFORMED])
def test_malformed_input_closes_only_that_connection(server, bystander, payload, expected):
    conn, data = bystander
    with server.raw() as bad:
        bad.send(payload)
        expect_error_and_close(bad, expected)
    check_bystander(conn, data)
    with server.raw() as fresh:  # the server still accepts connections
        assert fresh.call("PING") == b"PONG"


def test_replies_before_the_error_are_sent(server, bystander):
    with server.raw() as bad:
        bad.send(b"*1\r\n$4\r\nPING\r\n*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n"
                 b"*abc\r\n*1\r\n$4\r\nPING\r\n")
        expect_error_and_close(bad, b"+PONG\r\n+OK\r\n" + perr("invalid multibulk length"))
    conn, data = bystander
    conn.call("SELECT", "0")
    assert conn.call("GET", "k") == b"v"  # the command before the error did run
    conn.call("SELECT", "2")
    check_bystander(conn, data)


def test_error_split_over_several_writes(server, bystander):
    with server.raw() as bad:
        for piece in (b"*", b"2\r", b"\n$3\r\nGE", b"T\r\n$", b"x", b"y\r\n"):
            bad.send(piece)
            time.sleep(0.02)
        expect_error_and_close(bad, perr("invalid bulk length"))
    check_bystander(*bystander)


def test_many_bad_clients_at_once(server, bystander):
    bads = [server.raw() for _ in range(30)]
    for i, b in enumerate(bads):
        b.send(MALFORMED[i % len(MALFORMED)][1])
    for i, b in enumerate(bads):
        expect_error_and_close(b, MALFORMED[i % len(MALFORMED)][2])
        b.close()
    check_bystander(*bystander)


def test_abrupt_disconnect_mid_request(server, bystander):
    """A client that vanishes halfway through a request (or a reply) harms nobody."""
    s = socket.create_connection(("127.0.0.1", server.port))
    s.sendall(b"*3\r\n$3\r\nSET\r\n$5\r\nhalf1\r\n$1000\r\nxxxx")
    s.close()
    s = socket.create_connection(("127.0.0.1", server.port))
    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
    s.sendall(RespConn.encode("SET", "big", "x" * MiB) + RespConn.encode("GET", "big") * 20)
    s.close()  # RST with replies still pending
    time.sleep(0.2)
    check_bystander(*bystander)


def test_empty_requests_are_ignored(server, r):
    with server.raw() as conn:
        conn.send(b"*0\r\n*-1\r\n\r\n\n   \r\n*1\r\n$4\r\nPING\r\n")
        assert conn.read_reply()[0] == b"+PONG\r\n"
        conn.send(b"*1\r\n$4\r\nECHO\r\n")  # wrong arity is a normal error, not a protocol one
        assert conn.read_reply()[0] == b"-ERR wrong number of arguments for 'echo' command\r\n"
        assert conn.call("PING") == b"PONG"


def test_bulk_length_at_the_limit_is_accepted(server, r):
    """$536870912 (exactly 512 MiB) is legal: the server waits for the payload."""
    with server.raw() as conn:
        conn.send(b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$536870912\r\n")
        conn.sock.settimeout(0.5)
        with pytest.raises(socket.timeout):
            conn.sock.recv(1)


@pytest.mark.shardis_only
def test_multibulk_count_limit(server, bystander):
    # shardis keeps the classic 1,048,576-argument limit (Redis 7 allows up to INT_MAX).
    with server.raw() as conn:
        conn.send(b"*1048576\r\n")
        conn.sock.settimeout(0.5)
        with pytest.raises(socket.timeout):
            conn.sock.recv(1)
    with server.raw() as bad:
        bad.send(b"*1048577\r\n")
        expect_error_and_close(bad, perr("invalid multibulk length"))
    check_bystander(*bystander)


def test_many_arguments(r):
    """One MSET with 100,000 arguments, then a DEL of 50,000 keys."""
    mapping = {f"arg:{i}".encode(): b"%d" % i for i in range(50000)}
    assert r.mset(mapping) is True
    assert r.dbsize() == 50000
    assert r.get(b"arg:49999") == b"49999"
    assert r.delete(*mapping) == 50000


def test_value_1mib(server, r):
    value = bytes(range(256)) * (MiB // 256)
    with server.raw() as conn:
        assert conn.call("SET", "v1m", value) == b"OK"
        conn.send_command("GET", "v1m")
        raw, got = conn.read_reply()
        assert raw.startswith(b"$1048576\r\n")
        assert got == value
        assert conn.call("STRLEN", "v1m") == MiB


def test_value_100mib_sent_slowly(server, r):
    size = 100 * MiB
    pattern = bytes((i * 7 + 3) % 251 for i in range(MiB))  # not periodic at power-of-two sizes
    digest = hashlib.sha256()
    for _ in range(size // MiB):
        digest.update(pattern)
    with server.raw(timeout=120) as conn:
        # Header split in two, the payload in 1 MiB pieces with pauses, CRLF split too.
        conn.send(b"*3\r\n$3\r\nSET\r\n$4\r\n")
        time.sleep(0.05)
        conn.send(b"huge\r\n$%d\r\n" % size)
        for i in range(size // MiB):
            conn.send(pattern)
            if i % 10 == 0:
                time.sleep(0.01)
        conn.send(b"\r")
        time.sleep(0.05)
        conn.send(b"\n")
        assert conn.read_reply()[0] == b"+OK\r\n"
        assert conn.call("STRLEN", "huge") == size
        assert conn.call("GETRANGE", "huge", str(size - 5), "-1") == pattern[-5:]
        conn.send_command("GET", "huge")
        raw, got = conn.read_reply()
        assert len(got) == size
        assert hashlib.sha256(got).hexdigest() == digest.hexdigest()
        del raw, got
        assert conn.call("DEL", "huge") == 1
