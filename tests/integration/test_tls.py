"""TLS on --tls_port (Redis' tls-port): handshakes with redis-cli --tls and redis-py ssl=True,
client certificates (tls-auth-clients yes/optional/no, another CA), a pipelined load over TLS,
CONFIG SET reloads of the certificate, and a plaintext client on the TLS port.

The certificates are made here with the openssl CLI, as Redis' utils/gen-test-certs.sh does: a
CA, a server and a client certificate signed by it, and a second CA with its own client.
SHARDIS_TEST_TARGET=redis runs the same tests against redis-server with TLS."""

import concurrent.futures
import socket
import ssl
import subprocess

import pytest
import redis

from conftest import SHARDIS_BIN, TARGET, free_port, start_target, wait_for
from tls_util import make_ca, make_cert

THREADS_UNDER_LOAD = 2


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    d = tmp_path_factory.mktemp("tls-certs")
    make_ca(d, "ca")
    make_ca(d, "other-ca")
    make_cert(d, "server", "ca", "serverAuth", "server-one")
    make_cert(d, "server2", "ca", "serverAuth", "server-two")
    make_cert(d, "client", "ca", "clientAuth", "client")
    make_cert(d, "stranger", "other-ca", "clientAuth", "stranger")
    (d / "broken.crt").write_text("not a certificate\n")
    return d


def _tls_args(certs, tls_port):
    """(shardis flags, redis-server arguments) for a TLS port with the CA's certificates."""
    pairs = [("tls-port", str(tls_port)), ("tls-cert-file", str(certs / "server.crt")),
             ("tls-key-file", str(certs / "server.key")),
             ("tls-ca-cert-file", str(certs / "ca.crt"))]
    shardis = [f"--{k.replace('-', '_')}={v}" for k, v in pairs]
    redis_args = [x for k, v in pairs for x in (f"--{k}", v)]
    return shardis, redis_args


@pytest.fixture(scope="module")
def tls_server(certs, tmp_path_factory):
    tls_port = free_port()
    shardis, redis_args = _tls_args(certs, tls_port)
    srv = start_target(tmp_path_factory.mktemp("tls"), threads=THREADS_UNDER_LOAD,
                       shardis_args=shardis, redis_args=redis_args)
    srv.tls_port = tls_port
    yield srv
    srv.stop_and_check()


@pytest.fixture
def admin(tls_server, certs):
    """A plaintext client; tls-auth-clients and the certificate are back to the defaults after."""
    c = tls_server.client()
    yield c
    c.config_set("tls-auth-clients", "yes", "tls-cert-file", str(certs / "server.crt"),
                 "tls-key-file", str(certs / "server.key"))
    c.close()


def tls_client(srv, certs, cert="client", **kwargs):
    opts = dict(ssl=True, ssl_ca_certs=str(certs / "ca.crt"), ssl_cert_reqs="required",
                port=srv.tls_port)
    if cert is not None:
        opts.update(ssl_certfile=str(certs / f"{cert}.crt"), ssl_keyfile=str(certs / f"{cert}.key"))
    opts.update(kwargs)
    return srv.client(**opts)


def handshake_ok(srv, certs, cert) -> bool:
    c = tls_client(srv, certs, cert=cert, socket_timeout=5)
    try:
        return c.ping() is True
    except (redis.ConnectionError, ssl.SSLError, OSError):
        return False
    finally:
        c.close()


def peer_common_name(port, certs) -> str:
    with _tls_socket(port, certs) as t:
        return dict(x[0] for x in t.getpeercert()["subject"])["commonName"]


def _tls_socket(port, certs, strict_eof=False):
    """strict_eof: a close without close_notify raises SSLEOFError (Debian's Python sets
    OP_IGNORE_UNEXPECTED_EOF by default, and the socket suppresses ragged EOFs)."""
    ctx = ssl.create_default_context(cafile=str(certs / "ca.crt"))
    ctx.check_hostname = False
    ctx.load_cert_chain(str(certs / "client.crt"), str(certs / "client.key"))
    if strict_eof:
        ctx.options &= ~ssl.OP_IGNORE_UNEXPECTED_EOF
    return ctx.wrap_socket(socket.create_connection(("127.0.0.1", port), timeout=10),
                           suppress_ragged_eofs=not strict_eof)


def _read_to_close(sock) -> bytes:
    data = b""
    try:
        while chunk := sock.recv(4096):
            data += chunk
    except ConnectionResetError:
        pass
    return data


def test_redis_cli_over_tls(tls_server, certs):
    base = ["redis-cli", "-p", str(tls_server.tls_port), "--tls", "--cacert",
            str(certs / "ca.crt"), "--cert", str(certs / "client.crt"), "--key",
            str(certs / "client.key")]
    out = subprocess.run(base + ["SET", "tls:cli", "value"], capture_output=True, text=True,
                         timeout=30)
    assert out.stdout.strip() == "OK", out.stderr
    out = subprocess.run(base + ["GET", "tls:cli"], capture_output=True, text=True, timeout=30)
    assert out.stdout.strip() == "value", out.stderr


def test_redis_py_ssl(tls_server, certs):
    c = tls_client(tls_server, certs)
    assert c.ping() is True
    assert c.set("tls:py", b"x" * 100_000) is True  # several TLS records each way
    assert c.get("tls:py") == b"x" * 100_000
    c.close()


def test_quit_answers_then_closes(tls_server, certs):
    # The server ends the TLS stream with close_notify, as Redis (SSL_shutdown): without it, a
    # client that checks for it gets SSLEOFError instead of the end of the data.
    with _tls_socket(tls_server.tls_port, certs, strict_eof=True) as s:
        s.sendall(b"*1\r\n$4\r\nQUIT\r\n")
        assert _read_to_close(s) == b"+OK\r\n"


def test_client_kill_ends_with_close_notify(tls_server, certs):
    with _tls_socket(tls_server.tls_port, certs, strict_eof=True) as s:
        s.sendall(b"*2\r\n$6\r\nCLIENT\r\n$2\r\nID\r\n")
        client_id = int(s.recv(100)[1:].strip())
        admin = tls_client(tls_server, certs)
        assert admin.execute_command("CLIENT", "KILL", "ID", client_id) == 1
        admin.close()
        assert _read_to_close(s) == b""


def test_pubsub_messages_over_tls(tls_server, certs):
    """Messages pushed from the loop (not in reply to a request) are encrypted too."""
    sub = tls_client(tls_server, certs)
    ps = sub.pubsub()
    ps.subscribe("tls:chan")
    assert ps.get_message(timeout=10)["type"] == "subscribe"
    pub = tls_server.client()
    for i in range(50):
        assert pub.publish("tls:chan", f"m{i}" * 1000) == 1
    for i in range(50):
        msg = ps.get_message(timeout=10)
        assert msg is not None and msg["data"] == (f"m{i}" * 1000).encode()
    ps.close()
    pub.close()
    sub.close()


def test_net_input_bytes_count_plaintext(tls_server, admin, certs):
    """INFO's total_net_input_bytes counts what TLS carries, not the records, as Redis."""
    c = tls_client(tls_server, certs)
    assert c.ping() is True  # the handshake is behind us
    before = admin.info("stats")["total_net_input_bytes"]
    assert c.set("tls:bytes", "v" * 10_000) is True
    delta = admin.info("stats")["total_net_input_bytes"] - before
    # The SET (10,000 bytes and its framing) and the second INFO; records would add their
    # headers and tags, and are not counted.
    assert 10_000 < delta < 10_100, delta
    c.close()


def test_config_get_shows_the_tls_parameters(tls_server, admin, certs):
    got = admin.config_get("tls-*")
    assert got["tls-port"] == str(tls_server.tls_port)
    assert got["tls-cert-file"] == str(certs / "server.crt")
    assert got["tls-auth-clients"] == "yes"
    assert got["tls-session-caching"] == "yes"
    assert got["tls-session-cache-size"] == "20480"
    assert got["tls-session-cache-timeout"] == "300"
    assert got["tls-prefer-server-ciphers"] == "no"
    assert got["tls-protocols"] == ""


def test_auth_clients_yes_refuses_a_client_without_certificate(tls_server, admin, certs):
    assert handshake_ok(tls_server, certs, "client")
    assert not handshake_ok(tls_server, certs, None)


def test_auth_clients_optional_accepts_both(tls_server, admin, certs):
    assert admin.config_set("tls-auth-clients", "optional") is True
    assert handshake_ok(tls_server, certs, "client")
    assert handshake_ok(tls_server, certs, None)
    # A certificate that is sent is still checked.
    assert not handshake_ok(tls_server, certs, "stranger")


def test_auth_clients_no_accepts_without_certificate(tls_server, admin, certs):
    assert admin.config_set("tls-auth-clients", "no") is True
    assert handshake_ok(tls_server, certs, None)


def test_auth_clients_rejects_a_bad_value(admin):
    with pytest.raises(redis.ResponseError) as e:
        admin.config_set("tls-auth-clients", "maybe")
    assert str(e.value) == ("CONFIG SET failed (possibly related to argument 'tls-auth-clients') "
                            "- argument(s) must be one of the following: no, yes, optional")


def test_certificate_from_another_ca_is_refused(tls_server, admin, certs):
    assert not handshake_ok(tls_server, certs, "stranger")


def test_pipelined_load_from_many_clients(tls_server, certs):
    def run(i):
        c = tls_client(tls_server, certs)
        try:
            for round_ in range(5):
                p = c.pipeline(transaction=False)
                for k in range(100):
                    p.set(f"tls:load:{i}:{k}", f"{i}-{k}-{round_}" * (1 + k % 50))
                    p.get(f"tls:load:{i}:{k}")
                replies = p.execute()
                for k in range(100):
                    assert replies[2 * k] is True
                    assert replies[2 * k + 1] == (f"{i}-{k}-{round_}" * (1 + k % 50)).encode()
        finally:
            c.close()
        return i

    with concurrent.futures.ThreadPoolExecutor(16) as pool:
        assert sorted(pool.map(run, range(16))) == list(range(16))


def test_config_set_cert_file_reloads(tls_server, admin, certs):
    assert peer_common_name(tls_server.tls_port, certs) == "server-one"
    old = tls_client(tls_server, certs)
    assert old.set("tls:reload", "1") is True
    assert admin.config_set("tls-key-file", str(certs / "server2.key"),
                            "tls-cert-file", str(certs / "server2.crt")) is True
    assert peer_common_name(tls_server.tls_port, certs) == "server-two"
    assert old.get("tls:reload") == b"1"  # the connection made before goes on
    assert admin.config_set("tls-key-file", str(certs / "server.key"),
                            "tls-cert-file", str(certs / "server.crt")) is True
    assert peer_common_name(tls_server.tls_port, certs) == "server-one"
    old.close()


def test_config_set_bad_cert_file_keeps_the_old_context(tls_server, admin, certs):
    with pytest.raises(redis.ResponseError) as e:
        admin.config_set("tls-cert-file", str(certs / "broken.crt"))
    assert str(e.value) == ("CONFIG SET failed (possibly related to argument 'tls-cert-file') - "
                            "Unable to update TLS configuration. Check server logs.")
    assert admin.config_get("tls-cert-file")["tls-cert-file"] == str(certs / "server.crt")
    assert handshake_ok(tls_server, certs, "client")
    # A key that does not match the certificate fails the same way.
    with pytest.raises(redis.ResponseError) as e:
        admin.config_set("tls-key-file", str(certs / "server2.key"))
    assert "Unable to update TLS configuration" in str(e.value)
    assert admin.config_get("tls-key-file")["tls-key-file"] == str(certs / "server.key")
    # So does a protocol OpenSSL has no name for.
    with pytest.raises(redis.ResponseError) as e:
        admin.config_set("tls-protocols", "TLSv9")
    assert str(e.value) == ("CONFIG SET failed (possibly related to argument 'tls-protocols') - "
                            "Unable to update TLS configuration. Check server logs.")
    assert admin.config_get("tls-protocols")["tls-protocols"] == ""
    assert admin.config_set("tls-protocols", "TLSv1.3") is True
    assert handshake_ok(tls_server, certs, "client")
    assert admin.config_set("tls-protocols", "") is True


def test_plaintext_client_on_the_tls_port_is_closed(tls_server, certs):
    good = tls_client(tls_server, certs)
    assert good.ping() is True
    with socket.create_connection(("127.0.0.1", tls_server.tls_port), timeout=10) as s:
        s.sendall(b"*1\r\n$4\r\nPING\r\n")
        assert b"PONG" not in _read_to_close(s)  # at most a TLS alert, then the close
    assert good.ping() is True
    assert handshake_ok(tls_server, certs, "client")
    good.close()


@pytest.mark.skipif(TARGET == "redis", reason="starts shardis with flags")
def test_tls_only_with_port_zero(certs, tmp_path):
    """--port 0 with a TLS port: TLS only; INFO's tcp_port shows the TLS port, as Redis."""
    tls_port = free_port()
    shardis, _ = _tls_args(certs, tls_port)
    proc = subprocess.Popen([SHARDIS_BIN, "--port=0", "--bind=127.0.0.1", "--logtostderr",
                             "--maxmemory=0", "--save=", "--threads=1", *shardis],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=tmp_path)
    try:
        class Srv:
            pass
        srv = Srv()
        srv.tls_port = tls_port
        srv.client = lambda **kw: redis.Redis(host="127.0.0.1", **kw)
        wait_for(lambda: handshake_ok(srv, certs, "client"), timeout=20)
        c = tls_client(srv, certs)
        assert c.info("server")["tcp_port"] == tls_port
        c.close()
    finally:
        proc.terminate()
        assert proc.wait(timeout=20) == 0


@pytest.mark.skipif(TARGET == "redis", reason="starts shardis with flags")
def test_no_port_at_all_refuses_to_start(tmp_path):
    out = subprocess.run([SHARDIS_BIN, "--port=0", "--logtostderr"], capture_output=True,
                         text=True, timeout=30, cwd=tmp_path)
    assert out.returncode == 1
    assert "Configured to not listen anywhere, exiting." in out.stderr


@pytest.mark.skipif(TARGET == "redis", reason="starts shardis with flags")
def test_missing_key_file_refuses_to_start(certs, tmp_path):
    out = subprocess.run([SHARDIS_BIN, f"--tls_port={free_port()}", "--logtostderr",
                          f"--port={free_port()}", f"--tls_cert_file={certs / 'server.crt'}",
                          f"--tls_ca_cert_file={certs / 'ca.crt'}"], capture_output=True,
                         text=True, timeout=30, cwd=tmp_path)
    assert out.returncode == 1
    assert "No tls-key-file configured!" in out.stderr
    assert "Failed to configure TLS. Check logs for more info." in out.stderr


def _read_until(sock, end: bytes) -> bytes:
    data = b""
    while not data.endswith(end):
        chunk = sock.recv(4096)
        if not chunk:
            break
        data += chunk
    return data


@pytest.mark.skipif(TARGET == "redis", reason="the memcached and admin ports are shardis'")
def test_memcached_and_admin_ports_over_tls(certs, server_factory):
    mc_port, admin_port = free_port(), free_port()
    shardis, _ = _tls_args(certs, free_port())
    srv = server_factory(threads=2, args=[*shardis, f"--memcached_port={mc_port}",
                                          "--memcached_tls", f"--admin_port={admin_port}",
                                          "--admin_tls"])
    with _tls_socket(mc_port, certs) as s:
        s.sendall(b"set tls:mc 0 0 5\r\nhello\r\nget tls:mc\r\n")
        assert _read_until(s, b"END\r\n") == b"STORED\r\nVALUE tls:mc 0 5\r\nhello\r\nEND\r\n"
    with _tls_socket(admin_port, certs) as s:
        s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        assert _read_to_close(s).startswith(b"HTTP/1.1 200")
    # A plaintext memcached client is closed without an answer.
    with socket.create_connection(("127.0.0.1", mc_port), timeout=10) as s:
        s.sendall(b"version\r\n")
        assert b"VERSION" not in _read_to_close(s)
    assert srv.client().get("tls:mc") == b"hello"
