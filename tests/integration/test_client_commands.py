"""CLIENT LIST/INFO/KILL/PAUSE/UNPAUSE/REPLY/NO-EVICT and --maxclients, against shardis with two
threads (connections are spread over the threads by the kernel, so every test that opens several
clients crosses threads), and CLIENT LIST's field names differentially against redis-server."""

import threading
import time

import pytest

from conftest import TARGET, RespConn, start_target, wait_for


@pytest.fixture(scope="module")
def srv(tmp_path_factory):
    s = start_target(tmp_path_factory.mktemp("clients"), threads=2)
    yield s
    s.stop_and_check()


def fields(line: bytes) -> list[bytes]:
    return [kv.split(b"=", 1)[0] for kv in line.split()]


def parse_list(text: bytes) -> list[dict]:
    out = []
    for line in text.decode().splitlines():
        if line:
            out.append(dict(kv.split("=", 1) for kv in line.split(" ")))
    return out


def client_list(conn: RespConn, *args) -> list[dict]:
    return parse_list(conn.call("CLIENT", "LIST", *args))


def is_closed(conn: RespConn, timeout: float = 5.0) -> bool:
    _, closed = conn.read_all_until_closed(timeout)
    return closed


def per_thread_clients(admin: RespConn) -> list[int]:
    """The number of clients on each thread, from INFO shardis."""
    info = admin.call("INFO", "shardis").decode()
    return [int(part.split("clients=")[1].split(",")[0])
            for part in info.splitlines() if "clients=" in part]


# Connections the current test opened with named_clients, closed when it ends (passed or not),
# so that one failing test does not leave clients behind that the next one would list or kill.
_opened: list[RespConn] = []


@pytest.fixture(autouse=True)
def _close_opened_clients():
    yield
    while _opened:
        _opened.pop().close()


# The kernel picks a thread for each connection by a hash of its addresses (SO_REUSEPORT), so a
# few connections all land on one thread now and then (8 of them: about 1 run in 128).
MAX_CLIENTS_TO_SPREAD = 64


def new_client(srv) -> RespConn:
    """A connection closed when the test ends."""
    c = srv.raw()
    _opened.append(c)
    return c


def named_clients(srv, n, prefix="c"):
    """Opens clients named prefix0, prefix1, ...: at least n, and against shardis more if needed
    until every thread has at least one of them, so the cross-thread tests always cross."""
    conns = []
    with srv.raw() as admin:
        spread = TARGET != "redis"
        before = per_thread_clients(admin) if spread else []
        while len(conns) < n or (spread and min(
                now - was for now, was in zip(per_thread_clients(admin), before)) < 1):
            assert len(conns) < MAX_CLIENTS_TO_SPREAD, "connections never reached every thread"
            c = new_client(srv)
            assert c.call("CLIENT", "SETNAME", f"{prefix}{len(conns)}") == b"OK"
            conns.append(c)
    return conns


@pytest.mark.shardis_only
def test_clients_spread_over_threads(srv):
    # The premise of the cross-thread tests below: named_clients reaches every thread (per-thread
    # counts from INFO shardis), and a connection's thread stays its own.
    conns = named_clients(srv, 8)
    with srv.raw() as admin:
        per_thread = per_thread_clients(admin)
        assert len(per_thread) == 2 and min(per_thread) >= 1
    for c in conns:
        c.close()
    with srv.raw() as admin:
        assert wait_for(lambda: sum(per_thread_clients(admin)) == 1, 5)


def test_client_list_field_names_match_redis(srv, redis_server):
    with srv.raw() as a, redis_server.raw() as b:
        ours = fields(a.call("CLIENT", "LIST").splitlines()[0])
        theirs = fields(b.call("CLIENT", "LIST").splitlines()[0])
        # Redis 7.0 is the reference; lib-name/lib-ver are the 7.2 additions at the end.
        extra = [f for f in ours if f not in theirs]
        assert [f for f in ours if f in theirs] == theirs
        assert set(extra) <= {b"lib-name", b"lib-ver"}
        assert fields(a.call("CLIENT", "INFO")) == ours
        assert fields(b.call("CLIENT", "INFO")) == theirs


def test_client_list_across_threads_and_filters(srv):
    conns = named_clients(srv, 6)
    sub = new_client(srv)
    assert sub.call("CLIENT", "SETNAME", "subscriber") == b"OK"
    assert sub.call("SUBSCRIBE", "ch1", "ch2")[2] == 1
    assert sub.read_reply()[1][2] == 2
    with srv.raw() as admin:
        rows = client_list(admin)
        names = {r["name"] for r in rows}
        assert {f"c{i}" for i in range(6)} | {"subscriber"} <= names
        ids = [int(r["id"]) for r in rows]
        assert ids == sorted(ids)
        me = [r for r in rows if r["cmd"] == "client|list"]
        assert len(me) == 1 and me[0]["flags"] == "N" and me[0]["multi"] == "-1"

        pubsub = client_list(admin, "TYPE", "pubsub")
        assert [r["name"] for r in pubsub] == ["subscriber"]
        assert pubsub[0]["flags"] == "P" and pubsub[0]["sub"] == "2" and pubsub[0]["psub"] == "0"
        assert "subscriber" not in {r["name"] for r in client_list(admin, "TYPE", "normal")}
        assert client_list(admin, "TYPE", "replica") == []
        assert admin.call("CLIENT", "LIST", "TYPE", "bogus").startswith(b"ERR Unknown client type")

        wanted = [r["id"] for r in rows if r["name"] in ("c1", "c4")]
        picked = client_list(admin, "ID", *wanted)
        assert sorted(r["name"] for r in picked) == ["c1", "c4"]
        assert admin.call("CLIENT", "LIST", "ID", "abc") == b"ERR Invalid client ID"
    for c in conns + [sub]:
        c.close()


def test_client_info_flags_and_no_evict(srv):
    with srv.raw() as c:
        assert c.call("CLIENT", "NO-EVICT", "on") == b"OK"
        row = parse_list(c.call("CLIENT", "INFO"))[0]
        assert row["flags"] == "e" and row["cmd"] == "client|info"
        assert c.call("CLIENT", "NO-EVICT", "off") == b"OK"
        assert parse_list(c.call("CLIENT", "INFO"))[0]["flags"] == "N"
        assert c.call("CLIENT", "NO-EVICT", "maybe") == b"ERR syntax error"
        assert c.call("MULTI") == b"OK"
        assert c.call("PING") == b"QUEUED"
        assert c.call("DISCARD") == b"OK"


def test_client_kill_by_id_across_threads(srv):
    victims = named_clients(srv, 6, "victim")
    with srv.raw() as admin:
        by_name = {r["name"]: r for r in client_list(admin)}
        for i, v in enumerate(victims):
            assert admin.call("CLIENT", "KILL", "ID", by_name[f"victim{i}"]["id"]) == 1
        for v in victims:
            assert is_closed(v)
        assert not {f"victim{i}" for i in range(6)} & {r["name"] for r in client_list(admin)}
        assert admin.call("CLIENT", "KILL", "ID", by_name["victim0"]["id"]) == 0
        assert admin.call("PING") == b"PONG"


def test_client_kill_old_form(srv):
    victim = srv.raw()
    assert victim.call("PING") == b"PONG"  # accepted by the server, so CLIENT KILL finds it
    addr = "127.0.0.1:%d" % victim.sock.getsockname()[1]
    with srv.raw() as admin:
        assert admin.call("CLIENT", "KILL", addr) == b"OK"
        assert is_closed(victim)
        assert admin.call("CLIENT", "KILL", addr) == b"ERR No such client"
        assert admin.call("CLIENT", "KILL", "ID") == b"ERR No such client"


def test_client_kill_filters(srv):
    with srv.raw() as admin:
        assert admin.call("CLIENT", "KILL", "ID", "0") == b"ERR client-id should be greater than 0"
        assert admin.call("CLIENT", "KILL", "TYPE", "x") == b"ERR Unknown client type 'x'"
        assert admin.call("CLIENT", "KILL", "USER", "bob") == b"ERR No such user 'bob'"
        assert admin.call("CLIENT", "KILL", "SKIPME", "maybe") == b"ERR syntax error"
        assert admin.call("CLIENT", "KILL", "ID", "1", "ADDR") == b"ERR syntax error"

        sub = new_client(srv)
        sub.call("SUBSCRIBE", "x")
        normal = named_clients(srv, 4, "n")
        assert admin.call("CLIENT", "KILL", "TYPE", "pubsub") == 1
        assert is_closed(sub)
        # LADDR: every client connects to the same address; SKIPME (default yes) spares the
        # caller.
        laddr = parse_list(admin.call("CLIENT", "INFO"))[0]["laddr"]
        assert admin.call("CLIENT", "KILL", "LADDR", laddr, "USER", "default") >= 4
        for c in normal:
            assert is_closed(c)
        assert admin.call("PING") == b"PONG"
        # MAXAGE: only clients at least that many seconds old.
        young = srv.raw()
        assert young.call("PING") == b"PONG"
        if TARGET != "redis":  # MAXAGE is Redis 7.4's; the reference is 7.0
            assert admin.call("CLIENT", "KILL", "MAXAGE", "1000") == 0
            assert young.call("PING") == b"PONG"
            time.sleep(1.1)
            assert admin.call("CLIENT", "KILL", "MAXAGE", "1") >= 1
            assert is_closed(young)
        # SKIPME no: the caller itself goes, after its reply.
        me = parse_list(admin.call("CLIENT", "INFO"))[0]["id"]
        assert admin.call("CLIENT", "KILL", "ID", me, "SKIPME", "no") == 1
        assert is_closed(admin)


def test_client_kill_blocked_client(srv):
    blocked = srv.raw()
    blocked.send_command("BLPOP", "kill:never", "0")
    with srv.raw() as admin:
        assert wait_for(lambda: "b" in "".join(r["flags"] for r in client_list(admin)), 5)
        row = [r for r in client_list(admin) if r["flags"] == "b"][0]
        assert row["cmd"] == "blpop"
        assert admin.call("CLIENT", "KILL", "ID", row["id"]) == 1
        assert is_closed(blocked)
        assert wait_for(lambda: b"blocked_clients:0" in admin.call("INFO", "clients"), 5)
        # The key it waited on is free for others.
        assert admin.call("RPUSH", "kill:never", "a") == 1
        assert admin.call("LPOP", "kill:never") == b"a"


def timed(fn):
    t = time.monotonic()
    value = fn()
    return value, time.monotonic() - t


def test_pause_write_delays_writes_not_reads(srv):
    with srv.raw() as admin, srv.raw() as reader, srv.raw() as writer:
        assert writer.call("SET", "pause:k", "1") == b"OK"
        assert admin.call("CLIENT", "PAUSE", "800", "WRITE") == b"OK"
        value, took = timed(lambda: reader.call("GET", "pause:k"))
        assert value == b"1" and took < 0.4
        assert timed(lambda: reader.call("PING"))[1] < 0.4
        value, took = timed(lambda: writer.call("SET", "pause:k", "2"))
        assert value == b"OK" and took > 0.5
        assert reader.call("GET", "pause:k") == b"2"

        # UNPAUSE lets a held write go at once.
        assert admin.call("CLIENT", "PAUSE", "10000", "WRITE") == b"OK"
        done = []
        t = threading.Thread(target=lambda: done.append(timed(lambda: writer.call("INCR", "n"))))
        t.start()
        time.sleep(0.3)
        assert not done
        assert admin.call("CLIENT", "UNPAUSE") == b"OK"
        t.join(5)
        assert done and done[0][0] == 1 and done[0][1] < 2


def test_pause_write_holds_a_containers_write_subcommands(srv):
    """A container's flags are its subcommand's: XGROUP CREATE is a write (held, alone or in
    MULTI), XINFO and XGROUP HELP are not."""
    with srv.raw() as admin, srv.raw() as c:
        assert c.call("XADD", "pause:s", "1-0", "f", "v") == b"1-0"
        assert admin.call("CLIENT", "PAUSE", "700", "WRITE") == b"OK"
        assert timed(lambda: c.call("XINFO", "STREAM", "pause:s"))[1] < 0.4
        assert timed(lambda: c.call("XGROUP", "HELP"))[1] < 0.4
        value, took = timed(lambda: c.call("XGROUP", "CREATE", "pause:s", "g", "0"))
        assert value == b"OK" and took > 0.4
        # As in Redis, a write waits before it is queued in MULTI.
        assert admin.call("CLIENT", "PAUSE", "700", "WRITE") == b"OK"
        assert c.call("MULTI") == b"OK"
        value, took = timed(lambda: c.call("XGROUP", "CREATECONSUMER", "pause:s", "g", "alice"))
        assert value == b"QUEUED" and took > 0.4
        assert c.call("EXEC") == [1]


def test_pause_all_delays_every_command(srv):
    with srv.raw() as admin, srv.raw() as other:
        assert admin.call("CLIENT", "PAUSE", "600") == b"OK"
        value, took = timed(lambda: other.call("PING"))
        assert value == b"PONG" and took > 0.4
        assert (admin.call("CLIENT", "PAUSE", "x") ==
                b"ERR timeout is not an integer or out of range")
        assert admin.call("CLIENT", "PAUSE", "-1") == b"ERR timeout is negative"
        assert (admin.call("CLIENT", "PAUSE", "1", "SOME") ==
                b"ERR CLIENT PAUSE mode must be WRITE or ALL")


def test_paused_client_can_be_killed(srv):
    with srv.raw() as admin:
        victim = srv.raw()
        vid = parse_list(victim.call("CLIENT", "INFO"))[0]["id"]
        assert admin.call("CLIENT", "PAUSE", "5000", "WRITE") == b"OK"
        victim.send_command("SET", "pause:victim", "1")
        time.sleep(0.2)
        assert admin.call("CLIENT", "KILL", "ID", vid) == 1
        assert is_closed(victim, 2)
        assert admin.call("CLIENT", "UNPAUSE") == b"OK"
        assert admin.call("EXISTS", "pause:victim") == 0


def test_pause_write_lets_scripts_that_declare_no_writes_run(srv):
    """As Redis' evalGetCommandFlags/fcallGetCommandFlags: a script with flags (a shebang, a
    function) is held by PAUSE WRITE only when it may write, whether cached or not; one without
    a shebang is held as EVAL may replicate (TCL unit/pause hung on this)."""
    with srv.raw() as admin, srv.raw() as c:
        assert c.call("FUNCTION", "LOAD", "REPLACE",
                      "#!lua name=pauselib\nredis.register_function{function_name='pause_ro', "
                      "callback=function() return 'hello' end, flags={'no-writes'}}\n"
                      "redis.register_function('pause_rw', function() return 'rw' end)"
                      ) == b"pauselib"
        sha = c.call("SCRIPT", "LOAD", "#!lua flags=no-writes\nreturn 2")
        read_only = [
            (("EVAL", "#!lua flags=no-writes\nreturn 'pause unique'", "0"), b"pause unique"),
            (("EVAL", "#!lua flags=no-writes\nreturn 'pause unique'", "0"), b"pause unique"),
            (("EVALSHA", sha, "0"), 2),
            (("EVAL_RO", "return 'ro'", "0"), b"ro"),
            (("FCALL", "pause_ro", "0"), b"hello"),
        ]
        held = [
            (("EVAL", "#!lua\nreturn 12", "0"), 12),
            (("EVAL", "return 13", "0"), 13),
            (("FCALL", "pause_rw", "0"), b"rw"),
        ]
        for args, reply in read_only:
            assert admin.call("CLIENT", "PAUSE", "100000", "WRITE") == b"OK"
            value, took = timed(lambda: c.call(*args))
            assert admin.call("CLIENT", "UNPAUSE") == b"OK"
            assert value == reply and took < 2, args
        for args, reply in held:
            assert admin.call("CLIENT", "PAUSE", "600", "WRITE") == b"OK"
            value, took = timed(lambda: c.call(*args))
            assert value == reply and took > 0.4, args
        # The same in MULTI: EXEC of no-writes scripts runs at once.
        assert admin.call("CLIENT", "PAUSE", "100000", "WRITE") == b"OK"
        assert c.call("MULTI") == b"OK"
        assert c.call("EVAL", "#!lua flags=no-writes\nreturn 12", "0") == b"QUEUED"
        value, took = timed(lambda: c.call("EXEC"))
        assert admin.call("CLIENT", "UNPAUSE") == b"OK"
        assert value == [12] and took < 2
        assert c.call("FUNCTION", "DELETE", "pauselib") == b"OK"


def test_pause_holds_expiry(srv):
    """TCL unit/pause "Test both active and passive expires are skipped during client pause": a
    key past its deadline reads as missing but is not removed (expired_keys stays) until the
    pause ends."""
    def expired_keys(conn):
        info = conn.call("INFO", "stats").decode()
        return int(info.split("expired_keys:")[1].split()[0])

    with srv.raw() as admin, srv.raw() as c:
        before = expired_keys(admin)
        assert c.call("MULTI") == b"OK"
        assert c.call("SET", "pause:exp1", "v", "PX", "10") == b"QUEUED"
        assert c.call("SET", "pause:exp2", "v", "PX", "10") == b"QUEUED"
        assert c.call("CLIENT", "PAUSE", "100000", "WRITE") == b"QUEUED"
        assert c.call("EXEC") == [b"OK", b"OK", b"OK"]
        try:
            time.sleep(0.3)  # past the deadline, and several active expiry cycles
            assert c.call("GET", "pause:exp1") is None
            assert c.call("GET", "pause:exp2") is None
            assert c.call("EXISTS", "pause:exp1", "pause:exp2") == 0
            assert expired_keys(admin) == before
        finally:
            assert admin.call("CLIENT", "UNPAUSE") == b"OK"
        c.call("GET", "pause:exp1")
        c.call("GET", "pause:exp2")
        assert wait_for(lambda: expired_keys(admin) == before + 2, 5)


def test_client_reply_off_and_skip(srv):
    with srv.raw() as c:
        c.send(c.encode("CLIENT", "REPLY", "OFF") + c.encode("SET", "r:k", "v") +
               c.encode("GET", "r:k") + c.encode("NOSUCHCOMMAND") +
               c.encode("CLIENT", "REPLY", "ON"))
        assert c.read_reply()[0] == b"+OK\r\n"  # only ON's reply
        c.send(c.encode("CLIENT", "REPLY", "SKIP") + c.encode("ECHO", "skipped") +
               c.encode("ECHO", "seen"))
        assert c.read_reply()[1] == b"seen"
        assert c.call("GET", "r:k") == b"v"
        assert c.call("CLIENT", "REPLY", "MAYBE") == b"ERR syntax error"
        # RESET turns replies back on (its own reply included).
        c.send(c.encode("CLIENT", "REPLY", "OFF") + c.encode("ECHO", "hidden") + c.encode("RESET"))
        assert c.read_reply()[1] == b"RESET"
        assert c.call("ECHO", "after-reset") == b"after-reset"


def test_client_reply_on_after_skip_replies(srv):
    """TCL unit/introspection "CLIENT REPLY ON: unset SKIP flag": ON cancels the SKIP before it
    replies, so its +OK is sent; RESET leaves the SKIP, so its reply is dropped."""
    with srv.raw() as c:
        c.send(c.encode("CLIENT", "REPLY", "SKIP") + c.encode("CLIENT", "REPLY", "ON"))
        assert c.read_reply()[0] == b"+OK\r\n"
        assert c.call("PING") == b"PONG"
        c.send(c.encode("CLIENT", "REPLY", "SKIP") + c.encode("RESET") + c.encode("ECHO", "next"))
        assert c.read_reply()[1] == b"next"


def test_maxclients_refusal(server_factory):
    srv = server_factory(threads=2, args=["--maxclients=3"], redis_args=["--maxclients", "3"])
    first = srv.raw()
    # The start-up probe's connection may still be closing: wait until this one is alone.
    assert wait_for(lambda: b"connected_clients:1\r\n" in first.call("INFO", "clients"), 5)
    kept = [first] + [srv.raw() for _ in range(2)]
    for c in kept:
        assert c.call("PING") == b"PONG"
    with RespConn(srv.port) as extra:
        data, closed = extra.read_all_until_closed(5)
    assert closed and data == b"-ERR max number of clients reached\r\n"
    info = kept[0].call("INFO", "stats").decode()
    assert "rejected_connections:1" in info
    kept.pop().close()
    # A place is free again.
    assert wait_for(lambda: _ping_ok(srv.port), 5)
    for c in kept:
        c.close()


def _ping_ok(port) -> bool:
    try:
        with RespConn(port) as c:
            return c.call("PING") == b"PONG"
    except (OSError, ConnectionError):
        return False
