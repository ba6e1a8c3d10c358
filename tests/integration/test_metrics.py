"""HTTP on the RESP port and on --admin_port: /metrics in the Prometheus text format (parsed with
prometheus_client's parser), /healthz, 404s, and Redis' behaviour for non-HTTP garbage."""

import base64
import socket

import pytest
from prometheus_client.parser import text_string_to_metric_families

from conftest import RespConn, free_port

pytestmark = pytest.mark.shardis_only


def http(port, request: bytes, timeout=5.0):
    """Sends a raw request, reads until the server closes; returns (status, headers, body)."""
    with RespConn(port) as c:
        c.sock.sendall(request)
        data, closed = c.read_all_until_closed(timeout)
    assert closed
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode().split("\r\n")
    version, status, _ = lines[0].split(" ", 2)
    assert version == "HTTP/1.1"
    headers = {k.lower(): v.strip() for k, v in (l.split(":", 1) for l in lines[1:])}
    return int(status), headers, body


def get(port, path, method="GET"):
    return http(port, f"{method} {path} HTTP/1.1\r\nHost: localhost\r\nUser-Agent: t\r\n"
                      f"Accept: */*\r\n\r\n".encode())


def scrape(port):
    status, headers, body = get(port, "/metrics")
    assert status == 200
    assert headers["content-type"].startswith("text/plain; version=0.0.4")
    assert int(headers["content-length"]) == len(body)
    samples = {}
    types = {}
    for family in text_string_to_metric_families(body.decode()):
        types[family.name] = family.type
        for s in family.samples:
            samples[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return samples, types


def value(samples, name, **labels):
    return samples.get((name, tuple(sorted(labels.items()))))


def test_metrics_names_types_and_counters_move(r, server):
    before, types = scrape(server.port)
    for name, kind in [("shardis_uptime_seconds", "gauge"),
                       ("shardis_connected_clients", "gauge"),
                       ("shardis_memory_used_bytes", "gauge"),
                       ("shardis_memory_max_bytes", "gauge"),
                       ("shardis_memory_rss_bytes", "gauge"),
                       ("shardis_commands_processed", "counter"),
                       ("shardis_commands", "counter"),
                       ("shardis_commands_duration_seconds", "counter"),
                       ("shardis_keyspace_hits", "counter"),
                       ("shardis_keyspace_misses", "counter"),
                       ("shardis_expired_keys", "counter"),
                       ("shardis_evicted_keys", "counter"),
                       ("shardis_db_keys", "gauge"),
                       ("shardis_shard_queue_length", "gauge"),
                       ("shardis_shard_loop_iterations", "counter"),
                       ("shardis_shard_wakeups_sent", "counter"),
                       ("shardis_shard_hops_after_input", "counter"),
                       ("shardis_shard_memory_used_bytes", "gauge")]:
        # The parser drops a counter's _total suffix from the family name.
        assert types.get(name) == kind, (name, types.get(name))
    assert value(before, "shardis_memory_rss_bytes") > 0
    assert value(before, "shardis_connected_clients") >= 1

    for i in range(30):
        r.set(f"key{i}", i)
    for i in range(30):
        r.get(f"key{i}")
    for i in range(5):
        r.get(f"missing{i}")
    r.set("ttl", "x", px=1)
    import time
    time.sleep(0.05)
    assert r.get("ttl") is None

    after, _ = scrape(server.port)
    assert value(after, "shardis_commands_processed_total") >= \
        value(before, "shardis_commands_processed_total") + 67
    assert value(after, "shardis_commands_total", cmd="set") == \
        (value(before, "shardis_commands_total", cmd="set") or 0) + 31
    assert value(after, "shardis_commands_total", cmd="get") == \
        (value(before, "shardis_commands_total", cmd="get") or 0) + 36
    assert value(after, "shardis_commands_duration_seconds_total", cmd="get") > 0
    assert value(after, "shardis_keyspace_hits_total") >= value(before,
                                                                 "shardis_keyspace_hits_total") + 30
    assert value(after, "shardis_keyspace_misses_total") >= \
        value(before, "shardis_keyspace_misses_total") + 5
    assert value(after, "shardis_expired_keys_total") >= value(before,
                                                                "shardis_expired_keys_total") + 1
    assert value(after, "shardis_evicted_keys_total") == 0
    assert value(after, "shardis_db_keys", db="0") == 30
    assert value(after, "shardis_uptime_seconds") >= 0
    shard_mem = [value(after, "shardis_shard_memory_used_bytes", shard=str(i))
                 for i in range(server.threads)]
    assert all(v is not None and v > 0 for v in shard_mem)
    assert sum(shard_mem) == value(after, "shardis_memory_used_bytes")
    for i in range(server.threads):
        assert value(after, "shardis_shard_queue_length", shard=str(i)) >= 0
        assert value(after, "shardis_shard_loop_iterations_total", shard=str(i)) > 0
        assert value(after, "shardis_shard_wakeups_sent_total", shard=str(i)) is not None
        assert value(after, "shardis_shard_hops_after_input_total", shard=str(i)) >= 0
    assert value(after, "shardis_shard_keys", shard=str(server.threads)) is None


def test_metrics_agree_with_info(r, server):
    r.set("a", 1)
    samples, _ = scrape(server.port)
    info = r.info("keyspace")
    assert value(samples, "shardis_db_keys", db="0") == info["db0"]["keys"]


def test_healthz_and_404_on_the_resp_port(server):
    status, headers, body = get(server.port, "/healthz")
    assert (status, body) == (200, b"OK")
    assert headers["connection"] == "close"
    status, headers, body = get(server.port, "/healthz", method="HEAD")
    assert status == 200 and body == b"" and headers["content-length"] == "2"
    assert get(server.port, "/nope")[0] == 404
    assert get(server.port, "/metrics?x=1")[0] == 200
    # The port still speaks RESP to everyone else.
    with RespConn(server.port) as c:
        assert c.call("PING") == b"PONG"


def test_admin_port(server_factory):
    admin = free_port()
    srv = server_factory(threads=2, args=[f"--admin_port={admin}"])
    assert get(admin, "/healthz")[:3:2] == (200, b"OK")
    samples, _ = scrape(admin)
    assert value(samples, "shardis_connected_clients") is not None
    assert get(admin, "/other")[0] == 404
    assert http(admin, b"POST /metrics HTTP/1.1\r\nContent-Length: 0\r\n\r\n")[0] == 405
    # RESP is not spoken there.
    assert http(admin, b"PING\r\n")[0] == 400
    with RespConn(srv.port) as c:
        assert c.call("PING") == b"PONG"


def get_auth(port, path, credentials: str | None):
    auth = (f"Authorization: Basic {base64.b64encode(credentials.encode()).decode()}\r\n"
            if credentials is not None else "")
    return http(port, f"GET {path} HTTP/1.1\r\nHost: localhost\r\n{auth}\r\n".encode())


def test_metrics_behind_requirepass(server_factory):
    admin = free_port()
    srv = server_factory(threads=2, args=["--requirepass=s3cret", f"--admin_port={admin}"])
    status, headers, _ = get_auth(srv.port, "/metrics", None)
    assert status == 401
    assert headers["www-authenticate"] == 'Basic realm="shardis"'
    for wrong in ["default:nope", "other:s3cret", "default:", "s3cret", "default:s3cret "]:
        assert get_auth(srv.port, "/metrics", wrong)[0] == 401, wrong
    assert http(srv.port, b"GET /metrics HTTP/1.1\r\nAuthorization: Bearer s3cret\r\n\r\n")[0] \
        == 401
    status, _, body = get_auth(srv.port, "/metrics", "default:s3cret")
    assert status == 200 and b"shardis_connected_clients" in body
    # The header name and scheme are case-insensitive, as HTTP has them.
    creds = base64.b64encode(b"default:s3cret").decode()
    assert http(srv.port, f"GET /metrics HTTP/1.1\r\nauthorization: basic {creds}\r\n\r\n"
                .encode())[0] == 200
    # Probes need no credentials; the operators' port needs none either.
    assert get_auth(srv.port, "/healthz", None)[:3:2] == (200, b"OK")
    assert get_auth(admin, "/metrics", None)[0] == 200
    # A password set at runtime guards /metrics at once; without one it is open.
    c = srv.client(password="s3cret")
    c.config_set("requirepass", "")
    assert get_auth(srv.port, "/metrics", None)[0] == 200
    c.config_set("requirepass", "n3w")
    assert get_auth(srv.port, "/metrics", "default:s3cret")[0] == 401
    assert get_auth(srv.port, "/metrics", "default:n3w")[0] == 200
    # Another ACL user: only one that may run INFO reads the metrics.
    assert c.execute_command("ACL", "SETUSER", "ops", "on", ">opspw", "+info") == b"OK"
    assert c.execute_command("ACL", "SETUSER", "app", "on", ">apppw", "+@all", "-info") == b"OK"
    assert get_auth(srv.port, "/metrics", "ops:opspw")[0] == 200
    assert get_auth(srv.port, "/metrics", "ops:wrong")[0] == 401
    assert get_auth(srv.port, "/metrics", "app:apppw")[0] == 401
    c.close()


GARBAGE = [
    b"hello world\r\n",                            # HELLO with a bad protocol version
    b"GET\r\n",                                    # inline GET, wrong arity
    b"GET /metrics\r\n",                           # inline GET of the key "/metrics"
    b"GET / HTTP/1.1 extra\r\n",                   # not a request line: inline RESP
    b"\x7f\x01\x02 junk\r\n",                     # (no NUL: Redis reads inline lines with strchr)
    b"*1\r\n$4\r\nPING\r\n",
]


def exchange(port, data: bytes, wait=0.5) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=wait) as s:
        s.sendall(data)
        out = b""
        try:
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    return out + b"<closed>"
                out += chunk
        except socket.timeout:
            return out


@pytest.mark.parametrize("data", GARBAGE + [b"POST / HTTP/1.1\r\nHost: x\r\n\r\n",
                                            b"Host: example.com\r\n"])
def test_non_http_start_behaves_like_redis(server, redis_server, data):
    assert exchange(server.port, data) == exchange(redis_server.port, data)
