"""Connection-level commands: PING, ECHO, QUIT, HELLO (RESP2/RESP3), SELECT, COMMAND, CLIENT,
WAIT, and the errors for unknown commands and wrong arity."""

import re
import time

import pytest
import redis

from conftest import Error, RespConn, RespMap, Simple, Verbatim
from test_command_table import CHANGED_SINCE_REDIS_7_0


def test_ping(r, raw):
    assert r.ping() is True
    assert raw.call_raw("PING") == b"+PONG\r\n"
    assert raw.call_raw("PING", "hello") == b"$5\r\nhello\r\n"
    assert raw.call_raw("PING", "") == b"$0\r\n\r\n"
    assert raw.call_raw("ping") == b"+PONG\r\n"  # command names are case-insensitive
    assert raw.call_raw("PING", "a", "b") == b"-ERR wrong number of arguments for 'ping' command\r\n"


def test_inline_commands(raw):
    raw.send(b"PING\r\n")
    assert raw.read_reply()[0] == b"+PONG\r\n"
    raw.send(b"set inline_key  \"hello world\"\r\necho 'single quoted'\nget inline_key\r\n")
    assert raw.read_reply()[0] == b"+OK\r\n"
    assert raw.read_reply()[0] == b"$13\r\nsingle quoted\r\n"
    assert raw.read_reply()[0] == b"$11\r\nhello world\r\n"
    # Empty lines and empty multibulks are skipped without a reply.
    raw.send(b"\r\n\n*0\r\n*-1\r\nPING\r\n")
    assert raw.read_reply()[0] == b"+PONG\r\n"
    raw.send(b'echo "\\x41\\n\\t"\r\n')
    assert raw.read_reply()[0] == b"$3\r\nA\n\t\r\n"


def test_echo(r, raw):
    assert r.echo(b"hello") == b"hello"
    assert r.echo(b"\x00\r\n\xff") == b"\x00\r\n\xff"
    assert raw.call_raw("ECHO", "") == b"$0\r\n\r\n"
    assert raw.call_raw("ECHO") == b"-ERR wrong number of arguments for 'echo' command\r\n"
    assert raw.call_raw("ECHO", "a", "b") == b"-ERR wrong number of arguments for 'echo' command\r\n"


def test_quit_closes_after_reply(raw):
    # Commands pipelined after QUIT are not executed.
    raw.send(b"*1\r\n$4\r\nQUIT\r\n*1\r\n$4\r\nPING\r\n")
    data, closed = raw.read_all_until_closed(timeout=5)
    assert data == b"+OK\r\n"
    assert closed


def test_quit_redis_py(server):
    c = server.client()
    c.set(b"k", b"v")
    assert c.execute_command("QUIT") in (True, b"OK")
    # redis-py reconnects transparently on the next command, provided it has seen the server's
    # close by then: it checks the idle socket before reusing it. Without a pause the check can
    # run before the FIN arrives (a client-side race that real Redis has too, on a busy machine).
    time.sleep(0.05)
    assert c.get(b"k") == b"v"
    c.close()


HELLO_KEYS = {b"server", b"version", b"proto", b"id", b"mode", b"role", b"modules"}


def test_hello_2(raw):
    reply = raw.call("HELLO", "2")
    assert isinstance(reply, list) and len(reply) == 14
    fields = dict(zip(reply[0::2], reply[1::2]))
    assert set(fields) == HELLO_KEYS
    assert fields[b"proto"] == 2
    assert fields[b"id"] == raw.call("CLIENT", "ID")
    assert fields[b"mode"] == b"standalone"
    assert fields[b"role"] == b"master"
    assert fields[b"modules"] == []
    assert re.fullmatch(rb"\d+\.\d+\.\d+", fields[b"version"])
    # Still RESP2 afterwards.
    assert raw.call_raw("GET", "missing") == b"$-1\r\n"


def test_hello_3_reply_types(raw):
    raw.send_command("HELLO", "3")
    raw_bytes, reply = raw.read_reply()
    assert raw_bytes.startswith(b"%7\r\n")
    assert isinstance(reply, RespMap)
    assert set(reply) == HELLO_KEYS
    assert reply[b"proto"] == 3
    assert reply[b"modules"] == []

    # Null is "_" in RESP3, in plain replies and inside arrays.
    assert raw.call_raw("GET", "missing") == b"_\r\n"
    raw.call("SET", "a", "1")
    assert raw.call_raw("MGET", "a", "missing") == b"*2\r\n$1\r\n1\r\n_\r\n"
    # Maps for CONFIG GET.
    assert raw.call_raw("CONFIG", "GET", "databases") == b"%1\r\n$9\r\ndatabases\r\n$2\r\n16\r\n"
    # Simple strings, integers and bulk strings keep their types.
    assert raw.call_raw("PING") == b"+PONG\r\n"
    assert raw.call_raw("SET", "b", "2") == b"+OK\r\n"
    assert raw.call_raw("INCR", "b") == b":3\r\n"
    assert raw.call_raw("INCRBYFLOAT", "b", "0.5") == b"$3\r\n3.5\r\n"
    assert raw.call_raw("TYPE", "b") == b"+string\r\n"
    assert raw.call_raw("GETDEL", "missing") == b"_\r\n"
    assert raw.call_raw("CLIENT", "GETNAME") == b"_\r\n"
    # INFO and CLIENT LIST are verbatim strings in RESP3.
    info = raw.call("INFO", "server")
    assert isinstance(info, Verbatim) and b"# Server" in info
    raw.send_command("CLIENT", "LIST")
    raw_bytes, _ = raw.read_reply()
    assert raw_bytes.startswith(b"=") and raw_bytes[raw_bytes.index(b"\r\n") + 2:].startswith(b"txt:")

    # HELLO with no version reports the current protocol; HELLO 2 switches back.
    assert raw.call("HELLO")[b"proto"] == 3
    assert isinstance(raw.call("HELLO", "2"), list)
    assert raw.call_raw("GET", "missing") == b"$-1\r\n"


def test_hello_setname_and_errors(raw):
    reply = raw.call("HELLO", "3", "SETNAME", "myname")
    assert reply[b"proto"] == 3
    assert raw.call("CLIENT", "GETNAME") == b"myname"
    assert raw.call_raw("HELLO", "4") == b"-NOPROTO unsupported protocol version\r\n"
    assert raw.call_raw("HELLO", "1") == b"-NOPROTO unsupported protocol version\r\n"
    assert raw.call_raw("HELLO", "abc") == \
        b"-ERR Protocol version is not an integer or out of range\r\n"
    # A failed HELLO leaves the protocol unchanged.
    assert raw.call_raw("GET", "missing") == b"_\r\n"


NOAUTH_HELLO_7_2 = (b"-NOAUTH HELLO must be called with the client already authenticated, "
                    b"otherwise the HELLO <proto> AUTH <user> <pass> option can be used to "
                    b"authenticate the client and select the RESP protocol version at the same "
                    b"time\r\n")
NAME_ERR = b"-ERR Client names cannot contain spaces, newlines or special characters.\r\n"


@pytest.mark.shardis_only  # Redis 7.0 sets the name before a later failure and words NOAUTH so
def test_failed_hello_changes_nothing(server_factory):
    """Redis 7.2's helloCommand: the version, then the options left to right (a bad name fails
    where it stands), then AUTH; only a HELLO that succeeds sets the name and the protocol."""
    srv = server_factory(threads=2, args=["--requirepass=pw"])
    with srv.raw() as c:
        assert c.call_raw("HELLO", "3", "SETNAME", "early") == NOAUTH_HELLO_7_2
        assert c.call_raw("HELLO", "3", "AUTH", "default", "wrong", "SETNAME", "x").startswith(
            b"-WRONGPASS")
        assert c.call_raw("HELLO", "3", "SETNAME", "a b", "AUTH", "default", "pw") == NAME_ERR
        assert c.call_raw("AUTH", "pw") == b"+OK\r\n"
        for args in (["4", "SETNAME", "x"], ["3", "SETNAME", "x", "AUTH", "default", "wrong"],
                     ["3", "SETNAME", "x", "BOGUS"], ["3", "SETNAME", "x", "SETNAME", "a b"],
                     ["x", "SETNAME", "x"]):
            assert c.call_raw("HELLO", *args).startswith(b"-"), args
            # Still RESP2 and nameless.
            assert c.call_raw("CLIENT", "GETNAME") == b"$-1\r\n", args
        # A failed HELLO AUTH does not log out; one that succeeds switches and names.
        assert c.call("HELLO", "3", "AUTH", "default", "pw", "SETNAME", "ok")[b"proto"] == 3
        assert c.call_raw("CLIENT", "GETNAME") == b"$2\r\nok\r\n"
        assert c.call_raw("HELLO", "2", "AUTH", "default", "wrong").startswith(b"-WRONGPASS")
        assert c.call_raw("GET", "missing") == b"_\r\n"
        # An empty name removes the name, as CLIENT SETNAME "" does.
        assert c.call("HELLO", "3", "SETNAME", "")[b"proto"] == 3
        assert c.call_raw("CLIENT", "GETNAME") == b"_\r\n"


def test_select(r, server):
    c = server.client(db=0)
    c.set(b"k", b"db0")
    c.execute_command("SELECT", 15)
    assert c.get(b"k") is None
    c.set(b"k", b"db15")
    assert c.dbsize() == 1
    c.execute_command("SELECT", 0)
    assert c.get(b"k") == b"db0"
    c.close()
    c15 = server.client(db=15)
    assert c15.get(b"k") == b"db15"
    c15.close()


def test_select_errors(raw):
    assert raw.call_raw("SELECT", "16") == b"-ERR DB index is out of range\r\n"
    assert raw.call_raw("SELECT", "-1") == b"-ERR DB index is out of range\r\n"
    assert raw.call_raw("SELECT", "abc") == b"-ERR value is not an integer or out of range\r\n"
    assert raw.call_raw("SELECT", "1.5") == b"-ERR value is not an integer or out of range\r\n"
    assert raw.call_raw("SELECT") == b"-ERR wrong number of arguments for 'select' command\r\n"
    for db in range(16):
        assert raw.call_raw("SELECT", str(db)) == b"+OK\r\n"


def test_select_is_per_connection(server, r):
    a, b = server.raw(), server.raw()
    try:
        a.call("SELECT", "3")
        a.call("SET", "k", "in3")
        assert b.call("GET", "k") is None
        b.call("SELECT", "3")
        assert b.call("GET", "k") == b"in3"
    finally:
        a.close()
        b.close()


def test_command_count_and_list(raw):
    count = raw.call("COMMAND", "COUNT")
    assert isinstance(count, int) and count >= 50
    everything = raw.call("COMMAND")
    assert isinstance(everything, list) and len(everything) == count
    names = {entry[0] for entry in everything}
    for name in (b"get", b"set", b"ping", b"del", b"expire", b"info", b"config", b"client"):
        assert name in names


def test_command_info(raw):
    reply = raw.call("COMMAND", "INFO", "get", "set", "mset", "nosuchcommand")
    assert len(reply) == 4
    get, set_, mset, missing = reply
    assert get[0] == b"get" and get[1] == 2 and get[3:6] == [1, 1, 1]
    assert b"readonly" in get[2]
    assert set_[0] == b"set" and set_[1] == -3 and set_[3:6] == [1, 1, 1]
    assert b"write" in set_[2]
    assert mset[0] == b"mset" and mset[1] == -3 and mset[3:6] == [1, -1, 2]
    assert missing is None
    # Case-insensitive lookup.
    assert raw.call("COMMAND", "INFO", "GET")[0][0] == b"get"


def test_command_docs(raw):
    reply = raw.call("COMMAND", "DOCS", "get")
    assert isinstance(reply, list) and len(reply) == 2
    assert reply[0] == b"get"
    doc = reply[1]
    assert isinstance(doc, list) and len(doc) % 2 == 0
    assert b"summary" in doc[0::2]


def test_command_errors(raw):
    assert raw.call_raw("COMMAND", "FOO") == b"-ERR unknown subcommand 'FOO'. Try COMMAND HELP.\r\n"


def test_client_setname_getname(raw):
    assert raw.call_raw("CLIENT", "GETNAME") == b"$-1\r\n"
    assert raw.call_raw("CLIENT", "SETNAME", "worker-1") == b"+OK\r\n"
    assert raw.call_raw("CLIENT", "GETNAME") == b"$8\r\nworker-1\r\n"
    # An empty name clears it.
    assert raw.call_raw("CLIENT", "SETNAME", "") == b"+OK\r\n"
    assert raw.call_raw("CLIENT", "GETNAME") == b"$-1\r\n"
    bad = b"-ERR Client names cannot contain spaces, newlines or special characters.\r\n"
    assert raw.call_raw("CLIENT", "SETNAME", "a b") == bad
    assert raw.call_raw("CLIENT", "SETNAME", "a\nb") == bad
    assert raw.call_raw("CLIENT", "SETNAME", "a", "b") == \
        b"-ERR wrong number of arguments for 'client|setname' command\r\n"
    assert raw.call_raw("CLIENT") == b"-ERR wrong number of arguments for 'client' command\r\n"
    assert raw.call_raw("CLIENT", "FOO") == b"-ERR unknown subcommand 'FOO'. Try CLIENT HELP.\r\n"


def test_client_id(server, raw):
    my_id = raw.call("CLIENT", "ID")
    assert isinstance(my_id, int) and my_id > 0
    assert raw.call("CLIENT", "ID") == my_id
    other = server.raw()
    try:
        other_id = other.call("CLIENT", "ID")
        assert other_id != my_id
    finally:
        other.close()
    # Ids are never reused: a later connection gets a larger one.
    later = server.raw()
    try:
        assert later.call("CLIENT", "ID") > max(my_id, other_id)
    finally:
        later.close()
    assert raw.call_raw("CLIENT", "ID", "x") == \
        b"-ERR wrong number of arguments for 'client|id' command\r\n"


def _parse_client_list(text: bytes):
    assert text.endswith(b"\n")
    clients = []
    for line in text.decode().splitlines():
        fields = dict(item.split("=", 1) for item in line.split(" "))
        clients.append(fields)
    return clients


def test_client_list(server, raw):
    raw.call("CLIENT", "SETNAME", "lister")
    raw.call("SELECT", "2")
    others = [server.raw() for _ in range(3)]
    try:
        for i, o in enumerate(others):
            o.call("CLIENT", "SETNAME", f"other-{i}")
        my_id = raw.call("CLIENT", "ID")
        clients = _parse_client_list(raw.call("CLIENT", "LIST"))
        by_name = {c["name"]: c for c in clients}
        assert {"lister", "other-0", "other-1", "other-2"} <= set(by_name)
        me = by_name["lister"]
        assert int(me["id"]) == my_id
        assert me["db"] == "2"
        assert me["cmd"] == "client|list"
        assert re.fullmatch(r"127\.0\.0\.1:\d+", me["addr"])
        for c in clients:
            for field in ("id", "addr", "name", "age", "idle", "db", "cmd"):
                assert field in c
        # All client ids are distinct.
        assert len({c["id"] for c in clients}) == len(clients)
    finally:
        for o in others:
            o.close()


def test_wait(raw):
    assert raw.call_raw("WAIT", "0", "0") == b":0\r\n"
    assert raw.call_raw("WAIT", "1", "10") == b":0\r\n"
    assert raw.call_raw("WAIT", "0") == b"-ERR wrong number of arguments for 'wait' command\r\n"


@pytest.mark.parametrize("args,reply", [
    (("foo", "a", "b"), b"-ERR unknown command 'foo', with args beginning with: 'a' 'b' \r\n"),
    (("foo",), b"-ERR unknown command 'foo', with args beginning with: \r\n"),
    (("FooBar", "x"), b"-ERR unknown command 'FooBar', with args beginning with: 'x' \r\n"),
    (("foo", "x" * 200, "y"),
     b"-ERR unknown command 'foo', with args beginning with: '" + b"x" * 128 + b"' \r\n"),
    (("z" * 300,), b"-ERR unknown command '" + b"z" * 128 + b"', with args beginning with: \r\n"),
    # CR and LF in an error text become spaces: a reply is never split.
    (("a\r\nb", "c\nd"), b"-ERR unknown command 'a  b', with args beginning with: 'c d' \r\n"),
])
def test_unknown_command(raw, args, reply):
    assert raw.call_raw(*args) == reply
    assert raw.call_raw("PING") == b"+PONG\r\n"  # the connection stays usable


def test_unknown_command_redis_py(r):
    with pytest.raises(redis.ResponseError) as exc:
        r.execute_command("foo", "a", "b")
    assert str(exc.value) == "unknown command 'foo', with args beginning with: 'a' 'b' "


@pytest.mark.parametrize("args,name", [
    (("GET",), "get"), (("get", "a", "b"), "get"), (("SET", "a"), "set"), (("MSET", "a"), "mset"),
    (("MSET", "a", "1", "b"), "mset"), (("MGET",), "mget"), (("DEL",), "del"),
    (("EXISTS",), "exists"), (("INCR",), "incr"), (("INCRBY", "a"), "incrby"),
    (("EXPIRE", "a"), "expire"), (("TTL",), "ttl"), (("DBSIZE", "x"), "dbsize"),
    (("KEYS",), "keys"), (("SETEX", "a", "10"), "setex"), (("GETRANGE", "a", "0"), "getrange"),
    (("CONFIG", "GET"), "config|get"), (("ECHO",), "echo"), (("SELECT",), "select"),
])
def test_wrong_arity(raw, args, name):
    assert raw.call_raw(*args) == \
        f"-ERR wrong number of arguments for '{name}' command\r\n".encode()


def test_wrong_arity_redis_py(r):
    with pytest.raises(redis.ResponseError) as exc:
        r.execute_command("GET")
    assert str(exc.value) == "wrong number of arguments for 'get' command"


def _command_table(conn):
    """name -> COMMAND entry, for commands and their subcommands."""
    table = {}
    for entry in conn.call("COMMAND"):
        table[entry[0]] = entry
        for sub in entry[9]:
            table[sub[0]] = sub
    return table


def test_command_table_matches_redis(raw, redis_server):
    """Every command both servers have: same arity, legacy key range and flags (as a set)."""
    ref = redis_server.raw()
    try:
        theirs = _command_table(ref)
    finally:
        ref.close()
    ours = _command_table(raw)
    shared = sorted(set(ours) & set(theirs))
    assert len(shared) > 150
    diffs = []
    for name in shared:
        a, b = theirs[name], ours[name]
        # Redis 7.2's arities and flags where shardis follows 7.2 (test_command_table.py says
        # which).
        a = [a[0], CHANGED_SINCE_REDIS_7_0.get((name.decode(), "arity"), a[1]),
             [f.encode() for f in CHANGED_SINCE_REDIS_7_0[(name.decode(), "flags")]]
             if (name.decode(), "flags") in CHANGED_SINCE_REDIS_7_0 else a[2]] + a[3:]
        if [a[1]] + a[3:6] != [b[1]] + b[3:6] or set(a[2]) != set(b[2]):
            diffs.append((name, [a[1], sorted(a[2])] + a[3:6], [b[1], sorted(b[2])] + b[3:6]))
    assert diffs == []


# Command lines for COMMAND GETKEYS: movable keys (numkeys, STORE, STREAMS), subcommand keys, and
# malformed ones.
GETKEYS_CASES = [
    "get k", "mset a 1 b 2", "lmpop 2 a b left", "zmpop 1 z min", "blmpop 0 2 a b left",
    "bzmpop 0 1 z min", "sort k by w_* get o_* store dst", "sort k limit 0 1 store d1 store d2",
    "sort_ro k", "zunionstore d 2 a b", "zinterstore d 2 a b weights 1 2", "zdiffstore d 2 a b",
    "zinter 2 a b", "zdiff 2 a b", "zunion 2 a b weights 1 2", "sintercard 2 a b",
    "zintercard 2 a b limit 3", "xread count 2 streams s1 s2 0 0", "xread streams s1 0",
    "xreadgroup group g c streams s1 0",
    "xreadgroup group g c count 1 block 0 noack streams s1 s2 0 >",
    "georadius k 0 0 1 km store d", "georadius k 0 0 1 km storedist d", "georadius k 0 0 1 km",
    "georadiusbymember k m 1 km storedist d", "object encoding k", "object freq k",
    "xinfo stream s", "xgroup create s g $", "xgroup destroy s g",
    "lmpop 0 a left", "zunion 5 a b", "zunion x a b", "xread streams s1", "xread count 1 s1 0",
    "sort k store", "georadius k 0 0 1 km store", "object help", "object encoding",
    "xgroup create s", "ping", "nosuchcommand k", "get",
    # Scripts may name no keys: no keys, not an error (TCL "COMMAND GETKEYS EVAL without keys").
    "eval x 0", "eval x abc", "eval x 2 k", "eval x 1 k", "fcall f 0", "evalsha_ro x 0",
]


@pytest.mark.parametrize("line", GETKEYS_CASES)
def test_command_getkeys_matches_redis(raw, redis_server, line):
    args = line.split()
    ref = redis_server.raw()
    try:
        expected = ref.call_raw("COMMAND", "GETKEYS", *args)
        expected_flags = None if expected.startswith(b"-") else \
            ref.call("COMMAND", "GETKEYSANDFLAGS", *args)
    finally:
        ref.close()
    assert raw.call_raw("COMMAND", "GETKEYS", *args) == expected
    if expected_flags is not None:
        # Key flags differ in detail between commands; the keys and the reply shape must agree.
        got = raw.call("COMMAND", "GETKEYSANDFLAGS", *args)
        assert [entry[0] for entry in got] == [entry[0] for entry in expected_flags]
