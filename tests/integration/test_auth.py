"""AUTH, HELLO AUTH, RESET, ACL WHOAMI/LIST/USERS and protected mode: the replies of shardis
(--threads 2, --requirepass) compared byte for byte with redis-server started with the same
password, and protected mode's refusal of non-loopback clients."""

import re
import socket
import subprocess

import pytest

from conftest import TARGET, RespConn, Server, wait_for

PASSWORD = "s3cret pass"


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    """(shardis or the target, redis-server), both with requirepass."""
    log_dir = tmp_path_factory.mktemp("auth")
    if TARGET == "redis":
        ours = Server("redis", log_dir / "ours", args=["--requirepass", PASSWORD]).start()
    else:
        ours = Server("shardis", log_dir / "ours", threads=2,
                      args=[f"--requirepass={PASSWORD}"]).start()
    ref = Server("redis", log_dir / "ref", args=["--requirepass", PASSWORD]).start()
    yield ours, ref
    ours.stop_and_check()
    ref.stop_and_check()


def without_sanitize_flag(reply: bytes) -> bytes:
    """ACL LIST's lines without the sanitize-payload flag, which Redis 7.2 shows on every user
    and 7.0 does not (test_acl.py pins 7.2's lines)."""
    return re.sub(rb"\$\d+\r\n(user [^\r]*)",
                  lambda m: b"$N\r\n" + m.group(1).replace(b" sanitize-payload", b""), reply)


def same_replies(pair, commands):
    """Runs the commands on one fresh connection to each server; returns the raw replies after
    checking they are equal."""
    replies = []
    for srv in pair:
        with srv.raw() as c:
            # HELLO's client id differs between the servers, and so does its version: shardis
            # reports Redis 7.2.4, the reference is 7.0.15 (whose NOAUTH reply to HELLO lacks
            # 7.2's "<proto>").
            replies.append([without_sanitize_flag(
                re.sub(rb"(\bid\r\n:)\d+", rb"\1N", c.call_raw(*cmd)).replace(
                    b"version\r\n$6\r\n7.0.15\r\n", b"version\r\n$5\r\n7.2.4\r\n").replace(
                    b"the HELLO AUTH <user>", b"the HELLO <proto> AUTH <user>"))
                for cmd in commands])
    for cmd, a, b in zip(commands, *replies):
        assert a == b, f"{cmd}: shardis {a!r} != redis {b!r}"
    return replies[0]


def test_noauth_before_auth(pair):
    same_replies(pair, [
        ("PING",), ("GET", "k"), ("SET", "k", "v"), ("CLIENT", "ID"), ("SELECT", "1"),
        ("MULTI",), ("EXEC",), ("SUBSCRIBE", "c"),
        # lookup and arity come before the authentication check, as in Redis
        ("NOSUCH",), ("GET",), ("CLIENT", "NOSUCH"),
        ("ACL", "WHOAMI"),
    ])


def test_auth_errors_and_success(pair):
    replies = same_replies(pair, [
        ("AUTH", "wrong"), ("AUTH", "default", "wrong"), ("AUTH", "nobody", PASSWORD),
        ("AUTH", "a", "b", "c"), ("PING",),
        ("AUTH", PASSWORD), ("PING",), ("ACL", "WHOAMI"), ("ACL", "USERS"), ("ACL", "LIST"),
        ("AUTH", "wrong"),  # a failed AUTH does not log out
        ("PING",),
        ("RESET",), ("PING",),  # RESET does
        ("AUTH", "default", PASSWORD), ("PING",),
    ])
    assert replies[0].startswith(b"-WRONGPASS invalid username-password pair")
    assert replies[4] == b"-NOAUTH Authentication required.\r\n"
    assert replies[5] == b"+OK\r\n"


def test_unauthenticated_request_limits(pair):
    """Until it authenticates, a client may send 10 arguments and bulks of 16384 bytes; a larger
    count or length is a protocol error as soon as its header arrives and the connection closes
    (Redis' fix of CVE-2021-32675, 7.0 and 7.2 alike)."""
    requests = [
        b"*11\r\n",
        b"*100\r\n",
        b"*1\r\n$16385\r\n",
        b"*1\r\n$100000000\r\n",
        RespConn.encode("PING") + b"*11\r\n$4\r\nPING\r\n",  # a NOAUTH reply first
    ]
    for data in requests:
        got = []
        for srv in pair:
            with srv.raw() as c:
                c.send(data)
                got.append(c.read_all_until_closed())
        assert got[0] == got[1], f"{data!r}: shardis {got[0]!r} != redis {got[1]!r}"
        assert got[0][1], f"{data!r}: the connection stayed open"
    assert got[0][0].endswith(b"-ERR Protocol error: unauthenticated multibulk length\r\n")


def test_unauthenticated_requests_at_the_limits(pair):
    at_limits = RespConn.encode("DEL", *["x" * 16384] * 9)
    same_replies(pair, [("DEL", *["x" * 16384] * 9), ("PING",)])
    # Pipelined in one write, each gets its NOAUTH, and the connection stays usable.
    for srv in pair:
        with srv.raw() as c:
            c.send(at_limits * 3 + RespConn.encode("AUTH", PASSWORD) + RespConn.encode("PING"))
            replies = [c.read_reply()[0] for _ in range(5)]
            assert replies == [b"-NOAUTH Authentication required.\r\n"] * 3 + [
                b"+OK\r\n", b"+PONG\r\n"]


def test_auth_lifts_the_limits_for_the_requests_pipelined_after_it(pair):
    """Redis checks the limits as it parses each request, after the ones before it ran."""
    big = "y" * 20000
    data = (RespConn.encode("AUTH", PASSWORD) + RespConn.encode("ECHO", big)
            + RespConn.encode("RPUSH", "auth-limits-list", *range(20))
            + RespConn.encode("DEL", "auth-limits-list"))
    got = []
    for srv in pair:
        with srv.raw() as c:
            c.send(data)
            got.append([c.read_reply()[1] for _ in range(4)])
    assert got[0] == got[1] == [b"OK", big.encode(), 20, 1]


def test_refused_command_is_shown_as_the_clients_command(pair):
    """Redis sets a client's command when it finds it, before its checks: CLIENT LIST shows a
    command refused with NOAUTH as cmd= (the ACL LOG's client-info of a NOPERM one too)."""
    for srv in pair:
        with srv.raw() as refused, srv.raw() as admin:
            assert refused.call_raw("GET", "k") == b"-NOAUTH Authentication required.\r\n"
            assert admin.call("AUTH", PASSWORD) == b"OK"
            port = refused.sock.getsockname()[1]
            lines = admin.call("CLIENT", "LIST").decode().splitlines()
            line = next(x for x in lines if f" addr=127.0.0.1:{port} " in x)
            assert " cmd=get " in line, f"{srv.kind}: {line}"


def test_hello_auth(pair):
    same_replies(pair, [
        ("HELLO", "3"),
        ("HELLO", "3", "AUTH", "default", "wrong"),
        ("HELLO", "2", "AUTH", "default", PASSWORD, "SETNAME", "me"),
        ("CLIENT", "GETNAME"),
        ("PING",),
    ])
    ours, _ = pair
    with ours.raw() as c:
        hello = c.call("HELLO", "3", "AUTH", "default", PASSWORD)
        assert hello[b"proto"] == 3
        assert c.call("GET", "nothing") is None


def test_redis_py_client_with_password(pair):
    ours, _ = pair
    client = ours.client(password=PASSWORD)
    assert client.set("k", "v")
    assert client.get("k") == b"v"
    client.close()
    client = ours.client(username="default", password=PASSWORD)
    assert client.ping()
    client.close()


def test_no_password_configured(server_factory, redis_server):
    srv = server_factory(threads=2)
    commands = [("AUTH", "x"), ("AUTH", "default", "x"), ("AUTH", "other", "x"),
                ("HELLO", "2", "AUTH", "default", "anything"), ("ACL", "LIST"), ("PING",)]
    same_replies((srv, redis_server), commands)


@pytest.mark.shardis_only  # CONFIG is another module's; this checks the setter it will call
def test_requirepass_flag_empty_means_nopass(server_factory):
    srv = server_factory(threads=2, args=["--requirepass="])
    with srv.raw() as c:
        assert c.call("PING") == b"PONG"
        assert c.call("ACL", "LIST") == [b"user default on nopass sanitize-payload ~* &* +@all"]


# --- protected mode ---------------------------------------------------------------------------


def non_loopback_ipv4():
    """An IPv4 address of this machine that is not on the loopback interface, or None."""
    try:
        out = subprocess.run(["hostname", "-I"], capture_output=True, text=True, timeout=5).stdout
    except (OSError, subprocess.SubprocessError):
        out = ""
    for addr in out.split():
        if "." in addr and not addr.startswith("127."):
            return addr
    try:  # the address the kernel would use to leave the machine (no packet is sent)
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.connect(("192.0.2.1", 9))
            addr = s.getsockname()[0]
            return None if addr.startswith("127.") else addr
    except OSError:
        return None


def first_bytes(host, port) -> tuple[bytes, bool]:
    with RespConn(port, host=host) as c:
        c.send_command("PING")
        return c.read_all_until_closed(3)


def test_protected_mode(server_factory, tmp_path):
    ip = non_loopback_ipv4()
    if ip is None:
        pytest.skip("this machine has no non-loopback IPv4 address; the decision itself is "
                    "covered by the admission unit test")
    bind = ["--bind=0.0.0.0"]
    rbind = ["--bind", "0.0.0.0", "--protected-mode", "yes"]
    srv = server_factory(threads=2, args=bind, redis_args=rbind)
    refusal, closed = first_bytes(ip, srv.port)
    assert closed
    assert refusal.startswith(b"-DENIED Redis is running in protected mode because protected mode "
                              b"is enabled and no password is set for the default user.")
    # Loopback clients are always welcome.
    with RespConn(srv.port) as c:
        assert c.call("PING") == b"PONG"
        assert b"rejected_connections:1" in c.call("INFO", "stats")
    # The very text of Redis 7.
    ref = Server("redis", tmp_path / "ref", args=rbind).start()
    try:
        assert first_bytes(ip, ref.port)[0] == refusal
    finally:
        ref.stop_and_check()

    # With a password, or with protected mode off, non-loopback clients get in.
    with_pass = server_factory(threads=2, args=bind + ["--requirepass=pw"],
                               redis_args=rbind + ["--requirepass", "pw"])
    with RespConn(with_pass.port, host=ip) as c:
        assert c.call_raw("PING") == b"-NOAUTH Authentication required.\r\n"
        assert c.call("AUTH", "pw") == b"OK"
        assert c.call("PING") == b"PONG"
    open_srv = server_factory(threads=2, args=bind + ["--protected_mode=false"],
                              redis_args=["--bind", "0.0.0.0", "--protected-mode", "no"])
    with RespConn(open_srv.port, host=ip) as c:
        assert c.call("PING") == b"PONG"
