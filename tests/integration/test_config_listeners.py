"""CONFIG SET port / bind / tls-port at runtime, as Redis 7 moves its listeners: the old address
stops listening, the new one listens, connections already made stay; an address that cannot be
listened on answers Redis' error and puts back every parameter of that CONFIG SET.

Each test runs against shardis with --threads 1 and 2 and against the reference redis-server
(one fresh server per test: moving the listener of the module's shared server would strand the
other tests)."""

import socket

import pytest
import redis

from conftest import RespConn, Server, free_port
from tls_util import make_ca, make_cert

KINDS = [("shardis", 1), ("shardis", 2), ("redis", None)]


@pytest.fixture(params=KINDS, ids=lambda k: k[0] if k[1] is None else f"{k[0]}-t{k[1]}")
def srv(request, tmp_path):
    kind, threads = request.param
    s = Server(kind, tmp_path, threads=threads).start()
    yield s
    s.stop_and_check()


def refused(port, host="127.0.0.1") -> bool:
    try:
        with socket.create_connection((host, port), timeout=2):
            return False
    except ConnectionRefusedError:
        return True


def ping(port, host="127.0.0.1") -> bool:
    with redis.Redis(host=host, port=port, socket_timeout=10) as c:
        return c.ping()


def get(c, name) -> bytes:
    return c.call("CONFIG", "GET", name)[1]


def test_config_set_port_moves_the_listener(srv):
    old, new = srv.port, free_port()
    with srv.raw() as c:
        assert c.call("CONFIG", "SET", "port", str(new)) == b"OK"
        # The connection that moved it stays, and so does any other made before.
        assert c.call("PING") == b"PONG"
        assert get(c, "port") == str(new).encode()
        assert f"tcp_port:{new}".encode() in c.call("INFO", "server")
    srv.port = new
    assert ping(new)
    assert refused(old)
    # And back, on every thread: several new connections all answer.
    with srv.raw() as c:
        assert c.call("CONFIG", "SET", "port", str(old)) == b"OK"
    srv.port = old
    assert all(ping(old) for _ in range(8))
    assert refused(new)


def test_config_set_port_in_use_changes_nothing(srv):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        busy = taken.getsockname()[1]
        with srv.raw() as c:
            before = {n: get(c, n) for n in ("maxmemory", "port", "client-query-buffer-limit")}
            # Redis' "CONFIG SET rollback on apply error": the error names the port, and the
            # other parameters of the same CONFIG SET are put back too.
            reply = c.call_raw("CONFIG", "SET", "maxmemory", "10000001", "port", str(busy),
                               "client-query-buffer-limit", "10m")
            assert reply.startswith(b"-ERR CONFIG SET failed (possibly related to argument "
                                    b"'port') - Unable to listen on this port")
            assert {n: get(c, n) for n in before} == before
            assert c.call("PING") == b"PONG"
    assert all(ping(srv.port) for _ in range(4))


def test_config_set_bind_moves_the_listener(srv):
    # Any 127.x.y.z is the loopback interface on Linux.
    with srv.raw() as c:
        assert c.call("CONFIG", "SET", "bind", "127.0.0.2") == b"OK"
        assert get(c, "bind") == b"127.0.0.2"
    assert ping(srv.port, host="127.0.0.2")
    assert refused(srv.port, host="127.0.0.1")
    with RespConn(srv.port, host="127.0.0.2") as c:
        # An address that is none of this host's: Redis' error, nothing changes.
        assert c.call_raw("CONFIG", "SET", "bind", "192.0.2.1") == (
            b"-ERR CONFIG SET failed (possibly related to argument 'bind') - Failed to bind to "
            b"specified addresses.\r\n")
        assert get(c, "bind") == b"127.0.0.2"
        assert c.call("PING") == b"PONG"
        assert c.call("CONFIG", "SET", "bind", "127.0.0.1") == b"OK"
    assert ping(srv.port)


def test_config_set_port_and_bind_roll_back_together(srv):
    old = srv.port
    with socket.socket() as taken:
        taken.bind(("127.0.0.2", 0))
        taken.listen()
        busy = taken.getsockname()[1]
        with srv.raw() as c:
            reply = c.call_raw("CONFIG", "SET", "bind", "127.0.0.2", "port", str(busy))
            assert reply.startswith(b"-ERR CONFIG SET failed")
            assert get(c, "bind") == b"127.0.0.1" and get(c, "port") == str(old).encode()
    assert ping(old)
    assert refused(old, host="127.0.0.2")


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    d = tmp_path_factory.mktemp("tls-certs")
    make_ca(d, "ca")
    make_cert(d, "server", "ca", "serverAuth", "server-one")
    return d


def test_config_set_tls_port_at_runtime(srv, certs):
    tls_port = free_port()
    with srv.raw() as c:
        assert c.call("CONFIG", "SET", "tls-cert-file", str(certs / "server.crt"),
                      "tls-key-file", str(certs / "server.key"),
                      "tls-ca-cert-file", str(certs / "ca.crt"), "tls-auth-clients", "no") == b"OK"
        assert c.call("CONFIG", "SET", "tls-port", str(tls_port)) == b"OK"
        assert get(c, "tls-port") == str(tls_port).encode()
    with redis.Redis(port=tls_port, ssl=True, ssl_ca_certs=str(certs / "ca.crt"),
                     ssl_cert_reqs="required") as t:
        assert t.ping()
        assert t.config_set("tls-port", "0")
        assert t.ping()  # a connection made on the port it closed stays
    assert refused(tls_port)
    assert ping(srv.port)


def test_config_set_tls_port_without_certificate(srv):
    # No tls-cert-file: the TLS context cannot be built, Redis' answer, nothing listens.
    tls_port = free_port()
    with srv.raw() as c:
        assert c.call_raw("CONFIG", "SET", "maxmemory", "10000001", "tls-port", str(tls_port)) == (
            b"-ERR CONFIG SET failed (possibly related to argument 'tls-port') - Unable to update "
            b"TLS configuration. Check server logs.\r\n")
        assert get(c, "tls-port") == b"0" and get(c, "maxmemory") == b"0"
    assert refused(tls_port)
