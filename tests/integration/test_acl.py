"""ACL users (issue 18 item 3): ACL SETUSER rules and their errors, which commands, keys and
channels a user may use and the -NOPERM texts, AUTH/HELLO as a user, ACL GETUSER/LIST/DELUSER/
DRYRUN/LOG, MULTI and ACL SAVE/LOAD.

Table-driven; SHARDIS_TEST_TARGET=redis runs the same tables against redis-server 7.0. Where 7.0
and 7.2 differ (7.2's NOPERM texts, the canonical rules of ACL LIST, the sanitize-payload flag of
new users), the expectation is 7.2's and the test says which 7.0 gives instead.
"""

import contextlib
import hashlib
import http.client
import subprocess
import time

import pytest
import redis

from conftest import TARGET, Error, Server, free_port
from tls_util import make_ca, make_cert

shardis_only = pytest.mark.shardis_only
IS_72 = TARGET != "redis"


def noperm_command(user, name):
    if IS_72:
        return f"NOPERM User {user} has no permissions to run the '{name}' command"
    return f"NOPERM this user has no permissions to run the '{name}' command"


def noperm_key():
    if IS_72:
        return "NOPERM No permissions to access a key"
    return "NOPERM this user has no permissions to access one of the keys used as arguments"


def noperm_channel():
    if IS_72:
        return "NOPERM No permissions to access a channel"
    return "NOPERM this user has no permissions to access one of the channels used as arguments"


def call(conn, *args):
    """The reply, or the error text."""
    reply = conn.call(*args)
    return reply.decode() if isinstance(reply, Error) else reply


@pytest.fixture
def admin(server):
    """A raw connection as the default user; removes the test's users afterwards."""
    c = server.raw()
    yield c
    for name in c.call("ACL", "USERS"):
        name = name.decode() if isinstance(name, bytes) else name
        if name != "default":
            c.call("ACL", "DELUSER", name)
    c.call("ACL", "LOG", "RESET")
    c.close()


def as_user(server, name, password="pw"):
    c = server.raw()
    assert c.call("AUTH", name, password) == b"OK"
    return c


# (rules, command, expected): "ok" (any non-error reply), "cmd", "key" or "channel".
PERMISSIONS = [
    (["+get", "~*"], ["GET", "k"], "ok"),
    (["+get", "~*"], ["SET", "k", "v"], "cmd"),
    (["+@read", "~*"], ["GET", "k"], "ok"),
    (["+@read", "~*"], ["LPUSH", "l", "x"], "cmd"),
    (["+@all", "-set", "~*"], ["SET", "k", "v"], "cmd"),
    (["+@all", "-set", "~*"], ["GET", "k"], "ok"),
    (["+@all", "-@write", "~*"], ["DEL", "k"], "cmd"),
    (["+@all", "~k*"], ["GET", "k1"], "ok"),
    (["+@all", "~k*"], ["GET", "x1"], "key"),
    (["+@all", "~k*"], ["MGET", "k1", "x1"], "key"),
    (["+@all", "%R~r*"], ["GET", "r1"], "ok"),
    (["+@all", "%R~r*"], ["SET", "r1", "v"], "key"),
    (["+@all", "%W~w*"], ["SET", "w1", "v"], "ok"),
    (["+@all", "%W~w*"], ["GET", "w1"], "key"),
    (["+@all", "%R~a*", "%W~b*"], ["COPY", "a1", "b1"], "ok"),
    (["+@all", "%R~a*", "%W~b*"], ["COPY", "b1", "a1"], "key"),
    (["+@all", "%RW~x*"], ["INCR", "x1"], "ok"),
    (["+@all", "~*", "resetkeys", "~y*"], ["GET", "k"], "key"),
    (["+@all", "allkeys"], ["GET", "anything"], "ok"),
    (["-@all", "+config|get"], ["CONFIG", "GET", "maxmemory"], "ok"),
    (["-@all", "+config|get"], ["CONFIG", "SET", "maxmemory", "0"], "cmd"),
    (["+@all", "-config|set"], ["CONFIG", "SET", "maxmemory", "0"], "cmd"),
    (["-@all", "+config"], ["CONFIG", "RESETSTAT"], "ok"),
    (["-@all", "+select|0"], ["SELECT", "0"], "ok"),
    (["-@all", "+select|0"], ["SELECT", "1"], "cmd"),
    (["allcommands", "~*", "nocommands", "+ping"], ["PING"], "ok"),
    (["allcommands", "~*", "nocommands", "+ping"], ["ECHO", "x"], "cmd"),
    (["+@all", "resetchannels", "&news.*"], ["PUBLISH", "news.a", "m"], "ok"),
    (["+@all", "resetchannels", "&news.*"], ["PUBLISH", "other", "m"], "channel"),
    (["+@all", "resetchannels"], ["PUBLISH", "c", "m"], "channel"),
    (["+@all", "allchannels"], ["PUBLISH", "c", "m"], "ok"),
    # Every command that names channels to publish or subscribe to (Redis' channel key specs
    # with the PUBLISH or SUBSCRIBE flag); PSUBSCRIBE's patterns are compared literally, and
    # the unsubscribe commands are not checked.
    (["+@all", "resetchannels", "&a"], ["SPUBLISH", "a", "m"], "ok"),
    (["+@all", "resetchannels", "&a"], ["SPUBLISH", "b", "m"], "channel"),
    (["+@all", "resetchannels", "&a*"], ["SUBSCRIBE", "ab", "ac"], "ok"),
    (["+@all", "resetchannels", "&a*"], ["SUBSCRIBE", "ab", "b"], "channel"),
    (["+@all", "resetchannels", "&a*"], ["SSUBSCRIBE", "ab"], "ok"),
    (["+@all", "resetchannels", "&a*"], ["SSUBSCRIBE", "b"], "channel"),
    (["+@all", "resetchannels", "&a*"], ["PSUBSCRIBE", "a*"], "ok"),
    (["+@all", "resetchannels", "&a*"], ["PSUBSCRIBE", "ab*"], "channel"),
    (["+@all", "resetchannels", "&a*"], ["PSUBSCRIBE", "ab"], "channel"),
    (["+@all", "resetchannels"], ["UNSUBSCRIBE", "x"], "ok"),
    (["+@all", "resetchannels"], ["PUNSUBSCRIBE", "x*"], "ok"),
    (["+@all", "resetchannels"], ["SUNSUBSCRIBE", "x"], "ok"),
    (["+@all", "resetchannels"], ["PUBSUB", "NUMSUB", "x"], "ok"),
    (["+@all", "~*"], ["ACL", "WHOAMI"], "ok"),
    # selectors: any one of them allowing the command allows it
    (["-@all", "~*", "(+get ~s*)"], ["GET", "s1"], "ok"),
    (["-@all", "~*", "(+get ~s*)"], ["GET", "t1"], "key"),
    (["-@all", "~*", "(+get ~s*)"], ["SET", "s1", "v"], "cmd"),
    (["+set", "~a*", "(+get ~b*)"], ["SET", "b1", "v"], "key"),
]


@pytest.mark.parametrize("rules,command,expected", PERMISSIONS,
                         ids=[f"{' '.join(r)}|{' '.join(c)}" for r, c, _ in PERMISSIONS])
def test_permissions(server, admin, rules, command, expected):
    assert call(admin, "ACL", "SETUSER", "u", "reset", "on", ">pw", *rules) == b"OK"
    c = as_user(server, "u")
    try:
        got = call(c, *command)
        if expected == "ok":
            assert not (isinstance(got, str) and got.startswith("NOPERM")), got
        elif expected == "cmd":
            name = command[0].lower()
            if len(command) > 1 and name in ("config", "client", "acl"):
                name = f"{name}|{command[1].lower()}"
            assert got == noperm_command("u", name)
        elif expected == "key":
            assert got == noperm_key()
        else:
            assert got == noperm_channel()
    finally:
        c.close()


BAD_RULES = [
    (["nosuchrule"], "Syntax error"),
    (["+nosuchcommand"], "Unknown command or category name in ACL"),
    (["-@nosuchcat"], "Unknown command or category name in ACL"),
    (["~*", "~foo"], "Adding a pattern after the * pattern (or the 'allkeys' flag) is not valid "
                     "and does not have any effect. Try 'resetkeys' to start with an empty list "
                     "of patterns"),
    (["&*", "&foo"], "Adding a pattern after the * pattern (or the 'allchannels' flag) is not "
                     "valid and does not have any effect. Try 'resetchannels' to start with an "
                     "empty list of channels"),
    (["<notthere"], "The password you are trying to remove from the user does not exist"),
    (["#abc"], "The password hash must be exactly 64 characters and contain only lowercase "
               "hexadecimal characters"),
    (["+config|get|x"], "Allowing first-arg of a subcommand is not supported"),
    # an unknown subcommand of a container (these stopped the server)
    (["+config|asdf"], "Unknown command or category name in ACL"),
    (["+@all", "-config|asdf"], "Unknown command or category name in ACL"),
    (["%X~a"], "Syntax error"),
]


@pytest.mark.parametrize("rules,error", BAD_RULES, ids=[" ".join(r) for r, _ in BAD_RULES])
def test_bad_rules(admin, rules, error):
    got = call(admin, "ACL", "SETUSER", "bad", *rules)
    assert got == f"ERR Error in ACL SETUSER modifier '{rules[-1]}': {error}"
    # nothing of a failed SETUSER is applied: the user was not created
    assert admin.call("ACL", "GETUSER", "bad") is None


def test_setuser_errors(admin):
    assert call(admin, "ACL", "SETUSER", "a b") == \
        "ERR Usernames can't contain spaces or null characters"
    assert call(admin, "ACL", "SETUSER", "x", "(+get", "~a") == \
        "ERR Unmatched parenthesis in acl selector starting at '(+get'."
    assert call(admin, "ACL", "DELUSER", "default") == "ERR The 'default' user cannot be removed"
    assert call(admin, "ACL", "DRYRUN", "nobody", "get", "x") == "ERR User 'nobody' not found"
    admin.call("ACL", "SETUSER", "d", "on")
    assert call(admin, "ACL", "DRYRUN", "d", "nosuch") == "ERR Command 'nosuch' not found"
    assert call(admin, "ACL", "DRYRUN", "d", "get") == \
        "ERR wrong number of arguments for 'get' command"
    assert call(admin, "ACL", "GENPASS", "0").startswith("ERR ACL GENPASS argument must be")
    assert call(admin, "ACL", "CAT", "nosuch") == "ERR Unknown category 'nosuch'"


def test_auth_as_user(server, admin):
    admin.call("ACL", "SETUSER", "alice", "on", ">secret", "+@all", "~*")
    admin.call("ACL", "SETUSER", "bob", "off", ">secret", "+@all", "~*")
    c = server.raw()
    try:
        assert c.call("AUTH", "alice", "secret") == b"OK"
        assert c.call("ACL", "WHOAMI") == b"alice"
        wrong = "WRONGPASS invalid username-password pair or user is disabled."
        assert call(c, "AUTH", "alice", "nope") == wrong
        assert call(c, "AUTH", "bob", "secret") == wrong  # off
        assert call(c, "AUTH", "nobody", "secret") == wrong
        assert c.call("ACL", "WHOAMI") == b"alice"  # a failed AUTH keeps the user
        hello = c.call("HELLO", "2", "AUTH", "alice", "secret")
        assert hello[0] == b"server"
        assert call(c, "HELLO", "2", "AUTH", "bob", "secret") == wrong
        assert c.call("RESET") == b"RESET"
        assert c.call("ACL", "WHOAMI") == b"default"
    finally:
        c.close()


def test_deluser_disconnects(server, admin):
    admin.call("ACL", "SETUSER", "gone", "on", ">pw", "+@all", "~*")
    c = as_user(server, "gone")
    assert admin.call("ACL", "DELUSER", "gone", "nosuch") == 1
    with pytest.raises(Exception):
        c.call("PING")
        c.call("PING")
    c.close()


def test_rule_change_reaches_connections(server, admin):
    admin.call("ACL", "SETUSER", "live", "on", ">pw", "+@all", "~*")
    c = as_user(server, "live")
    try:
        assert c.call("SET", "k", "v") == b"OK"
        admin.call("ACL", "SETUSER", "live", "-set")
        assert call(c, "SET", "k", "v") == noperm_command("live", "set")
        assert c.call("GET", "k") == b"v"
    finally:
        c.close()


def test_revoked_channels_close_subscribers(server, admin):
    admin.call("ACL", "SETUSER", "sub", "on", ">pw", "+@all", "resetchannels", "&a", "&b")
    c = as_user(server, "sub")
    try:
        assert c.call("SUBSCRIBE", "a")[0] == b"subscribe"
        admin.call("ACL", "SETUSER", "sub", "resetchannels", "&b")
        with pytest.raises(Exception):
            c.call("PING")
            c.call("PING")
    finally:
        c.close()


def is_closed(conn):
    """Whether the server closed the connection (a PING gets no reply)."""
    try:
        conn.call("PING")
        return False
    except (ConnectionError, OSError):
        return True


def test_deluser_closes_connections_on_every_thread(server, admin):
    admin.call("ACL", "SETUSER", "many", "on", ">pw", "+@all", "~*")
    admin.call("ACL", "SETUSER", "stays", "on", ">pw", "+@all", "~*")
    gone = [as_user(server, "many") for _ in range(2 * (server.threads or 1))]
    kept = [as_user(server, "stays") for _ in range(2 * (server.threads or 1))]
    try:
        assert admin.call("ACL", "DELUSER", "many") == 1
        assert [is_closed(c) for c in gone] == [True] * len(gone)
        assert [is_closed(c) for c in kept] == [False] * len(kept)
    finally:
        for c in gone + kept:
            c.close()


def test_revoked_channels_close_subscribers_on_every_thread(server, admin):
    admin.call("ACL", "SETUSER", "subs", "on", ">pw", "+@all", "resetchannels", "&a", "&b",
               "&p*")
    admin.call("ACL", "SETUSER", "other", "on", ">pw", "+@all", "resetchannels", "&a")
    n = 2 * (server.threads or 1)
    on_a = [as_user(server, "subs") for _ in range(n)]
    on_b = [as_user(server, "subs") for _ in range(n)]
    on_pattern = [as_user(server, "subs") for _ in range(n)]
    other = as_user(server, "other")
    try:
        for c in on_a + [other]:
            assert c.call("SUBSCRIBE", "a")[0] == b"subscribe"
        for c in on_b:
            assert c.call("SSUBSCRIBE", "b")[0] == b"ssubscribe"
        for c in on_pattern:
            assert c.call("PSUBSCRIBE", "p*")[0] == b"psubscribe"
        # More channels revoke nothing.
        assert admin.call("ACL", "SETUSER", "subs", "&c") == b"OK"
        assert not any(is_closed(c) for c in on_a + on_b + on_pattern)
        # Dropping &a closes the user's subscribers to a (only them); a pattern is allowed only
        # by the same pattern, so &p* -> &p** closes the pattern subscribers too.
        assert admin.call("ACL", "SETUSER", "subs", "resetchannels", "&b", "&p**") == b"OK"
        assert [is_closed(c) for c in on_a] == [True] * n
        assert [is_closed(c) for c in on_pattern] == [True] * n
        assert not any(is_closed(c) for c in on_b + [other])
        assert admin.call("PUBSUB", "NUMSUB", "a") == [b"a", 1]
        assert admin.call("SPUBLISH", "b", "m") == n
    finally:
        for c in on_a + on_b + on_pattern + [other]:
            c.close()


def test_multi_refuses_at_queue_time(server, admin):
    admin.call("ACL", "SETUSER", "m", "on", ">pw", "+@all", "-set", "~*")
    c = as_user(server, "m")
    try:
        assert c.call("MULTI") == b"OK"
        assert call(c, "SET", "k", "v") == noperm_command("m", "set")
        assert c.call("GET", "k") == b"QUEUED"
        assert call(c, "EXEC").startswith("EXECABORT")
    finally:
        c.close()


def test_exec_rechecks_changed_rules(server, admin):
    admin.call("ACL", "SETUSER", "mx", "on", ">pw", "+@all", "~*")
    c = as_user(server, "mx")
    try:
        assert c.call("MULTI") == b"OK"
        assert c.call("SET", "mx-k", "v") == b"QUEUED"
        assert c.call("GET", "mx-k") == b"QUEUED"
        admin.call("ACL", "SETUSER", "mx", "-set")
        reply = c.call("EXEC")
        assert reply[0] == Error(
            b"NOPERM ACLs rules changed between the moment the transaction was accumulated and "
            b"the EXEC call. This command is no longer allowed for the following reason: no "
            b"permission to execute the command or subcommand")
        assert reply[1] is None
    finally:
        c.close()
    entry = dict(zip(*[iter(admin.call("ACL", "LOG", "1")[0])] * 2))
    assert (entry[b"reason"], entry[b"context"], entry[b"object"]) == (b"command", b"multi", b"set")


def test_psubscribe_patterns_match_literally(server, admin):
    admin.call("ACL", "SETUSER", "p", "on", ">pw", "+@all", "resetchannels", "&news.*")
    c = as_user(server, "p")
    try:
        assert call(c, "PSUBSCRIBE", "news.x*") == noperm_channel()
        assert c.call("PSUBSCRIBE", "news.*")[0] == b"psubscribe"
    finally:
        c.close()
    c = as_user(server, "p")
    try:
        assert call(c, "SUBSCRIBE", "news.a", "other") == noperm_channel()
    finally:
        c.close()


def test_script_channels_are_checked_at_call(server, admin):
    # EVAL and FCALL name no channels (no channel key specs): a script's redis.call('publish')
    # is checked as the call runs, as its caller.
    admin.call("ACL", "SETUSER", "ps", "on", ">pw", "+@all", "resetchannels", "&a")
    c = as_user(server, "ps")
    try:
        assert c.call("EVAL", "return redis.call('publish', 'a', 'm')", "0") == 0
        got = call(c, "EVAL", "return redis.call('publish', 'b', 'm')", "0")
        if IS_72:
            assert got.startswith("ERR ACL failure in script: No permissions to access a channel")
        else:
            assert got.startswith("ERR The user executing the script can't publish to the channel")
    finally:
        c.close()
    entry = dict(zip(*[iter(admin.call("ACL", "LOG", "1")[0])] * 2))
    assert (entry[b"reason"], entry[b"context"], entry[b"object"]) == (b"channel", b"lua", b"b")


def test_dryrun(admin):
    admin.call("ACL", "SETUSER", "dry", "on", "+get", "~k*", "resetchannels", "&c", "+publish")
    assert admin.call("ACL", "DRYRUN", "dry", "GET", "k1") == b"OK"
    assert admin.call("ACL", "DRYRUN", "dry", "GET", "x") == \
        b"This user has no permissions to access the 'x' key" if not IS_72 else \
        b"User dry has no permissions to access the 'x' key"
    if IS_72:
        assert admin.call("ACL", "DRYRUN", "dry", "SET", "k", "v") == \
            b"User dry has no permissions to run the 'set' command"
        assert admin.call("ACL", "DRYRUN", "dry", "PUBLISH", "d", "m") == \
            b"User dry has no permissions to access the 'd' channel"


def test_getuser_shape(admin):
    admin.call("ACL", "SETUSER", "g", "on", ">p1", "~k*", "%R~r*", "resetchannels", "&ch",
               "-@all", "+get", "(+set ~s*)")
    u = admin.call("ACL", "GETUSER", "g")
    fields = dict(zip(u[::2], u[1::2]))
    assert list(fields) == [b"flags", b"passwords", b"commands", b"keys", b"channels",
                            b"selectors"]
    assert b"on" in fields[b"flags"]
    assert fields[b"passwords"] == [
        b"f64551fcd6f07823cb87971cfb91446425da18286b3ab1ef935e0cbd7a69f68a"]
    assert fields[b"commands"] == b"-@all +get"
    assert fields[b"keys"] == b"~k* %R~r*"
    assert fields[b"channels"] == b"&ch"
    assert fields[b"selectors"] == [
        [b"commands", b"-@all +set", b"keys", b"~s*", b"channels", b""]]
    assert admin.call("ACL", "GETUSER", "nobody") is None


@shardis_only  # 7.0 compacts the command rules and shows no sanitize-payload on new users
def test_list_canonical_rules(admin):
    admin.call("ACL", "SETUSER", "foo")
    admin.call("ACL", "SETUSER", "bar", "on", ">p1", "~k*", "%R~r*", "&ch", "+get", "-@all",
               "+set", "+config|get", "+@read", "-@hash", "+get", "allchannels")
    assert admin.call("ACL", "LIST") == [
        b"user bar on sanitize-payload "
        b"#f64551fcd6f07823cb87971cfb91446425da18286b3ab1ef935e0cbd7a69f68a ~k* %R~r* &* "
        b"-@all +set +config|get +@read -@hash +get",
        b"user default on nopass sanitize-payload ~* &* +@all",
        b"user foo off sanitize-payload resetchannels -@all",
    ]
    admin.call("ACL", "SETUSER", "bar", "-config", "(~x* +ping)")
    assert admin.call("ACL", "LIST")[0].endswith(
        b"+set +@read -@hash +get -config (~x* resetchannels -@all +ping)")
    assert admin.call("ACL", "USERS") == [b"bar", b"default", b"foo"]


def test_acl_log(server, admin):
    admin.call("ACL", "SETUSER", "logged", "on", ">pw", "+@all", "-set", "~k*")
    c = as_user(server, "logged")
    try:
        call(c, "SET", "k", "v")
        call(c, "SET", "k", "v")
        call(c, "GET", "x")
        call(c, "AUTH", "logged", "wrong")
    finally:
        c.close()
    entries = [dict(zip(e[::2], e[1::2])) for e in admin.call("ACL", "LOG")]
    assert [(e[b"reason"], e[b"object"], e[b"count"]) for e in entries] == [
        (b"auth", b"AUTH", 1), (b"key", b"x", 1), (b"command", b"set", 2)]
    assert entries[1][b"context"] == b"toplevel"
    assert entries[1][b"username"] == b"logged"
    assert b"user=logged" in entries[1][b"client-info"]
    # the refused command is the client's command, as Redis sets it before its checks
    assert b" cmd=get " in entries[1][b"client-info"]
    assert b" cmd=set " in entries[2][b"client-info"]
    if IS_72:
        assert {b"entry-id", b"timestamp-created", b"timestamp-last-updated"} <= set(entries[0])
    assert len(admin.call("ACL", "LOG", "1")) == 1
    assert admin.call("ACL", "LOG", "RESET") == b"OK"
    assert admin.call("ACL", "LOG") == []


def config_set_error(name, reason):
    return f"ERR CONFIG SET failed (possibly related to argument '{name}') - {reason}"


def channels_of(admin, name):
    reply = admin.call("ACL", "GETUSER", name)
    return dict(zip(reply[::2], reply[1::2]))[b"channels"]


def test_acl_pubsub_default(admin):
    assert admin.call("CONFIG", "GET", "acl-pubsub-default") == [b"acl-pubsub-default",
                                                                b"resetchannels"]
    admin.call("ACL", "SETUSER", "before", "resetchannels", "&x")
    try:
        assert admin.call("CONFIG", "SET", "acl-pubsub-default", "allchannels") == b"OK"
        assert admin.call("CONFIG", "GET", "acl-pubsub-default") == [b"acl-pubsub-default",
                                                                    b"allchannels"]
        # A new user, a new selector and 'reset' start from every channel; users made before
        # keep theirs.
        assert admin.call("ACL", "SETUSER", "fresh", "on", "(+get)") == b"OK"
        assert channels_of(admin, "fresh") == b"&*"
        selector = admin.call("ACL", "GETUSER", "fresh")[-1][0]
        assert dict(zip(selector[::2], selector[1::2]))[b"channels"] == b"&*"
        assert channels_of(admin, "before") == b"&x"
        assert admin.call("ACL", "SETUSER", "before", "reset") == b"OK"
        assert channels_of(admin, "before") == b"&*"
        assert call(admin, "CONFIG", "SET", "acl-pubsub-default", "some") == config_set_error(
            "acl-pubsub-default",
            "argument(s) must be one of the following: allchannels, resetchannels")
    finally:
        assert admin.call("CONFIG", "SET", "acl-pubsub-default", "resetchannels") == b"OK"
    assert admin.call("ACL", "SETUSER", "later") == b"OK"
    assert channels_of(admin, "later") == b""
    assert admin.call("ACL", "SETUSER", "before", "allchannels", "reset") == b"OK"
    assert channels_of(admin, "before") == b""


def test_acllog_max_len(server, admin):
    assert admin.call("CONFIG", "GET", "acllog-max-len") == [b"acllog-max-len", b"128"]
    admin.call("ACL", "SETUSER", "few", "on", ">pw", "+@all", "-set", "~k*")
    c = as_user(server, "few")
    try:
        for key in ("a", "b", "c", "d"):
            call(c, "GET", key)
        assert admin.call("CONFIG", "SET", "acllog-max-len", "2") == b"OK"
        assert admin.call("CONFIG", "GET", "acllog-max-len") == [b"acllog-max-len", b"2"]
        # As Redis: the log is trimmed at its next entry, not by CONFIG SET.
        assert len(admin.call("ACL", "LOG")) == 4
        call(c, "GET", "e")
        objects = [dict(zip(e[::2], e[1::2]))[b"object"] for e in admin.call("ACL", "LOG")]
        assert objects == [b"e", b"d"]
        assert admin.call("CONFIG", "SET", "acllog-max-len", "0") == b"OK"
        call(c, "GET", "f")
        assert admin.call("ACL", "LOG") == []
        assert call(admin, "CONFIG", "SET", "acllog-max-len", "-1") == config_set_error(
            "acllog-max-len", "argument must be between 0 and 9223372036854775807 inclusive")
    finally:
        c.close()
        assert admin.call("CONFIG", "SET", "acllog-max-len", "128") == b"OK"


def test_aclfile_is_read_only(admin):
    assert admin.call("CONFIG", "GET", "aclfile") == [b"aclfile", b""]
    assert call(admin, "CONFIG", "SET", "aclfile", "/tmp/x.acl") == config_set_error(
        "aclfile", "can't set immutable config")


def acl_denied_stats(conn):
    text = conn.call("INFO", "stats").decode()
    prefix = "acl_access_denied_"
    return {k[len(prefix):]: int(v) for k, v in (
        line.split(":", 1) for line in text.split("\r\n") if line.startswith(prefix))}


@shardis_only  # INFO's acl_access_denied_* are Redis 7.2's (7.0 has none)
def test_info_counts_denials_on_every_thread(server, admin):
    admin.call("CONFIG", "RESETSTAT")
    admin.call("ACL", "SETUSER", "counted", "on", ">pw", "+@all", "-set", "~k*", "resetchannels",
               "&c")
    # One denial of each kind from connections spread over the threads; a command counts once,
    # at its first refused key or channel, as Redis' addACLLogEntry.
    conns = [as_user(server, "counted") for _ in range(2 * (server.threads or 1))]
    try:
        for c in conns:
            assert call(c, "SET", "k", "v") == noperm_command("counted", "set")
            assert call(c, "MGET", "k1", "x", "y") == noperm_key()
            assert call(c, "SUBSCRIBE", "c", "d", "e") == noperm_channel()
            assert call(c, "AUTH", "counted", "wrong").startswith("WRONGPASS")
        c = conns[0]
        assert c.call("MULTI") == b"OK"
        assert call(c, "PUBLISH", "d", "m") == noperm_channel()
        assert c.call("DISCARD") == b"OK"
        assert call(c, "EVAL", "return redis.call('get', 'z')", "0").startswith("ERR")
    finally:
        for c in conns:
            c.close()
    n = len(conns)
    admin.call("ACL", "LOG", "RESET")  # the log, not the counters
    assert acl_denied_stats(admin) == {"auth": n, "cmd": n, "key": n + 1, "channel": n + 1}
    assert admin.call("CONFIG", "RESETSTAT") == b"OK"
    assert acl_denied_stats(admin) == {"auth": 0, "cmd": 0, "key": 0, "channel": 0}


def test_client_list_and_kill_by_user(server, admin):
    admin.call("ACL", "SETUSER", "k", "on", ">pw", "+@all", "~*")
    c = as_user(server, "k")
    try:
        assert b"user=k " in c.call("CLIENT", "INFO")
        assert call(admin, "CLIENT", "KILL", "USER", "nobody") == "ERR No such user 'nobody'"
        assert admin.call("CLIENT", "KILL", "USER", "k") == 1
    finally:
        c.close()


def test_setuser_is_redacted_in_slowlog(admin):
    admin.call("CONFIG", "SET", "slowlog-log-slower-than", "0")
    try:
        admin.call("SLOWLOG", "RESET")
        admin.call("ACL", "SETUSER", "r", ">secret")
        logged = [e[3] for e in admin.call("SLOWLOG", "GET", "10")
                  if e[3][:2] == [b"ACL", b"SETUSER"]]
        assert logged == [[b"ACL", b"SETUSER", b"(redacted)", b"(redacted)"]]
    finally:
        admin.call("CONFIG", "SET", "slowlog-log-slower-than", "10000")


def test_genpass_and_cat(admin):
    assert len(admin.call("ACL", "GENPASS")) == 64
    assert len(admin.call("ACL", "GENPASS", "5")) == 2
    cats = admin.call("ACL", "CAT")
    assert cats[:3] == [b"keyspace", b"read", b"write"] and len(cats) == 21
    assert b"get" in admin.call("ACL", "CAT", "read")
    assert b"config|get" in admin.call("ACL", "CAT", "admin")


def test_requirepass_is_the_default_password(server, admin):
    try:
        assert admin.call("CONFIG", "SET", "requirepass", "rp") == b"OK"
        c = server.raw()
        try:
            assert call(c, "GET", "k").startswith("NOAUTH")
            assert c.call("AUTH", "rp") == b"OK"
            assert c.call("ACL", "WHOAMI") == b"default"
        finally:
            c.close()
        default = admin.call("ACL", "GETUSER", "default")
        assert len(default[3]) == 1 and b"nopass" not in default[1]
    finally:
        admin.call("CONFIG", "SET", "requirepass", "")


def test_script_runs_as_its_caller(server, admin):
    admin.call("ACL", "SETUSER", "s", "on", ">pw", "+@all", "-set", "~k*")
    c = as_user(server, "s")
    try:
        got = call(c, "EVAL", "return redis.call('set', 'k', 'v')", "0")
        if IS_72:
            assert got.startswith("ERR ACL failure in script: User s has no permissions to run "
                                  "the 'set' command script: ")
        else:
            assert got.startswith("ERR The user executing the script can't run this command")
        assert c.call("EVAL", "return redis.acl_check_cmd('set', 'k', 'v')", "0") is None
        assert c.call("EVAL", "return redis.acl_check_cmd('get', 'k')", "0") == 1
        assert c.call("EVAL", "return redis.call('get', 'k-none')", "0") is None
    finally:
        c.close()
    entries = [dict(zip(e[::2], e[1::2])) for e in admin.call("ACL", "LOG")]
    assert (entries[0][b"reason"], entries[0][b"context"]) == (b"command", b"lua")


def test_script_denials_on_other_threads_are_logged_as_the_client(server, admin):
    # A script whose key lives on another thread runs there; its denial is logged with its
    # client's CLIENT LIST line all the same, alone or from a pipeline (where ACL LOG, later in
    # the same pipeline, already sees it).
    admin.call("ACL", "SETUSER", "spread", "on", ">pw", "+@all", "-set", "~*")
    c = as_user(server, "spread")
    script = "return redis.call('set', KEYS[1], 'v')"
    denied = "ERR ACL failure in script" if IS_72 else "ERR The user executing the script"
    keys = [f"spread{i}" for i in range(16)]
    try:
        client_id = c.call("CLIENT", "ID")
        for key in keys:
            assert call(c, "EVAL", script, "1", key).startswith(denied)
        c.send(b"".join(c.encode("EVAL", script, "1", key) for key in keys)
               + c.encode("ACL", "LOG"))
        replies = [c.read_reply()[1] for _ in range(len(keys) + 1)]
    finally:
        c.close()
    assert all(isinstance(r, Error) for r in replies[:-1])
    entry = dict(zip(replies[-1][0][::2], replies[-1][0][1::2]))
    assert (entry[b"reason"], entry[b"context"], entry[b"object"], entry[b"count"]) == (
        b"command", b"lua", b"set", 2 * len(keys))
    assert f"id={client_id} ".encode() in entry[b"client-info"]
    assert b"user=spread" in entry[b"client-info"]


def test_rule_change_applies_after_the_clients_batch(server, admin):
    # Another client's ACL SETUSER while a script of this client's batch runs takes effect when
    # the batch ends, as in Redis (which serves other clients between batches): the SET of a
    # script after it in the same batch runs under the old rules, the next one under the new.
    admin.call("ACL", "SETUSER", "busy", "on", ">pw", "+@all", "~*")
    c = as_user(server, "busy")
    wait_half_a_second = (
        "local function us() local t = redis.call('time') return t[1] * 1000000 + t[2] end "
        "local start = us() repeat until us() - start > 500000 return 1")
    try:
        keys = [f"busy{i}" for i in range(2 * (server.threads or 1))]
        set_in_script = ("EVAL", "return redis.call('set', KEYS[1], 'v')", "1", "busy-k")
        c.send(b"".join(c.encode("EVAL", wait_half_a_second, "1", key) for key in keys)
               + c.encode(*set_in_script))
        time.sleep(0.2)
        assert admin.call("ACL", "SETUSER", "busy", "-set") == b"OK"
        assert [c.read_reply()[1] for _ in range(len(keys) + 1)] == [1] * len(keys) + [b"OK"]
        assert call(c, *set_in_script).startswith(
            "ERR ACL failure in script" if IS_72 else "ERR The user executing the script")
    finally:
        c.close()


@contextlib.contextmanager
def config_file_server(tmp_path, text):
    """A server started with a config file of this text (as its first argument): (server, path)."""
    conf = tmp_path / "users.conf"
    conf.write_text(text)
    srv = Server(TARGET, tmp_path / "srv", threads=None if TARGET == "redis" else 1)
    flags = srv.argv
    srv.argv = lambda: [flags()[0], str(conf)] + flags()[1:]
    srv.start()
    try:
        yield srv, conf
    finally:
        srv.stop_and_check()


def test_config_file_users(tmp_path):
    # acl-pubsub-default applies to the users of the file, wherever it stands.
    text = ("user cfg on >pw ~c* +get\nuser default on nopass ~* &* +@all -flushall\n"
            "acl-pubsub-default allchannels\n")
    with config_file_server(tmp_path, text) as (srv, _):
        c = srv.raw()
        assert c.call("ACL", "USERS") == [b"cfg", b"default"]
        assert call(c, "FLUSHALL") == noperm_command("default", "flushall")
        assert channels_of(c, "cfg") == b"&*"
        c.close()
        c = as_user(srv, "cfg")
        assert call(c, "GET", "x") == noperm_key()
        c.close()


def test_config_rewrite_writes_users(tmp_path):
    text = ("# users\nuser zed on >pw ~z* +get\nport 0\nuser default on nopass ~* &* +@all\n"
            "user gone on +get\n")
    with config_file_server(tmp_path, text) as (srv, conf):
        c = srv.raw()
        assert c.call("ACL", "DELUSER", "gone", "zed") == 2
        for name in ("amy", "bob", "cat", "dan"):
            assert c.call("ACL", "SETUSER", name, "on", "nopass", "+ping") == b"OK"
        assert c.call("CONFIG", "REWRITE") == b"OK"
        users = [u.decode() for u in c.call("ACL", "LIST")]
        lines = conf.read_text().splitlines()
        # Each old user line takes the next user, in name order; the rest go at the end.
        assert lines[:2] == ["# users", users[0]]
        assert lines[3] == users[1]
        assert lines[4] == users[2]
        assert lines[-2:] == users[3:]
        c.close()


@pytest.fixture
def aclfile_server(tmp_path):
    path = tmp_path / "users.acl"
    path.write_text("user default on nopass ~* &* +@all\nuser saved on >pw ~s* +get\n")
    if TARGET == "redis":
        srv = Server("redis", tmp_path / "srv", args=["--aclfile", str(path)]).start()
    else:
        srv = Server("shardis", tmp_path / "srv", threads=2, args=[f"--aclfile={path}"]).start()
    yield srv, path
    srv.stop_and_check()


def test_acl_load_closes_users_connections(aclfile_server):
    srv, path = aclfile_server
    admin = srv.raw()
    users = [as_user(srv, "saved") for _ in range(4)]
    subscriber = srv.raw()  # the default user's
    try:
        assert subscriber.call("SUBSCRIBE", "a")[0] == b"subscribe"
        path.write_text("user default on nopass ~* resetchannels &x +@all\n"
                        "user saved on >pw ~s* +get\n")
        assert admin.call("ACL", "LOAD") == b"OK"
        # Every user of the old set but default goes with its connections, even one the file
        # gives back unchanged; the default user's rules are copied over and its subscribers
        # stay, even to a channel it no longer allows (Redis 7.2's ACLLoadFromFile).
        assert [is_closed(c) for c in users] == [True] * len(users)
        assert not is_closed(subscriber)
        assert admin.call("PUBSUB", "NUMSUB", "a") == [b"a", 1]
        assert call(admin, "PUBLISH", "a", "m") == noperm_channel()
    finally:
        for c in users + [subscriber, admin]:
            c.close()


def test_aclfile_default_user_replaces_requirepass(tmp_path):
    # docs/security.md: an aclfile without a default user leaves default on nopass, whatever
    # requirepass said (Redis' ACLLoadFromFile makes a new default user).
    path = tmp_path / "users.acl"
    path.write_text("user app on >x ~* +@all\n")
    args = (["--requirepass=secret", f"--aclfile={path}"] if TARGET != "redis"
            else ["--requirepass", "secret", "--aclfile", str(path)])
    srv = Server(TARGET, tmp_path / "srv", threads=None if TARGET == "redis" else 1,
                 args=args).start()
    try:
        c = srv.raw()
        assert c.call("PING") == b"PONG"
        assert b"nopass" in c.call("ACL", "GETUSER", "default")[1]
        c.close()
    finally:
        srv.stop_and_check()


def test_acl_save_load_round_trip(aclfile_server):
    srv, path = aclfile_server
    c = srv.raw()
    try:
        assert c.call("ACL", "USERS") == [b"default", b"saved"]
        assert c.call("ACL", "SETUSER", "new", "on", ">x", "+@read", "~n*") == b"OK"
        before = c.call("ACL", "LIST")
        assert c.call("ACL", "SAVE") == b"OK"
        assert c.call("ACL", "DELUSER", "new") == 1
        assert c.call("ACL", "LOAD") == b"OK"
        assert c.call("ACL", "LIST") == before
        assert c.call("CONFIG", "GET", "aclfile") == [b"aclfile", str(path).encode()]
        path.write_text("user bad on +nosuch\n")
        assert call(c, "ACL", "LOAD").startswith("ERR ")
        assert c.call("ACL", "LIST") == before  # nothing changed
    finally:
        c.close()


@shardis_only  # docs/security.md's example
def test_documented_tls_and_aclfile_from_read_only_secrets(tmp_path):
    """docs/security.md: TLS and ACL users from two Secrets mounted read-only. The mounts are
    simulated by a read-only bind mount in a mount namespace of the server's own (unshare), so
    the server gets EROFS as in a pod while the test can still change the files (as the kubelet
    does when the Secret changes)."""
    secrets = tmp_path / "secrets"
    tls, acl = secrets / "tls", secrets / "acl"
    tls.mkdir(parents=True)
    acl.mkdir()
    make_ca(tls, "ca")
    make_cert(tls, "tls", "ca", "serverAuth", "shardis")
    make_cert(tls, "client", "ca", "clientAuth", "app")
    app_hash = hashlib.sha256(b"app-secret").hexdigest()
    (acl / "users.acl").write_text(
        "user default off\n"
        f"user app on #{app_hash} ~app:* &app:* +@read +@write +@pubsub -@dangerous\n"
        "user admin on >admin-secret ~* &* +@all\n")
    tls_port = free_port()
    srv = Server("shardis", tmp_path / "srv", threads=2, args=[
        f"--tls_port={tls_port}", f"--tls_cert_file={tls}/tls.crt",
        f"--tls_key_file={tls}/tls.key", f"--tls_ca_cert_file={tls}/ca.crt",
        f"--aclfile={acl}/users.acl"])
    flags = srv.argv
    srv.argv = lambda: ["unshare", "--map-root-user", "--mount", "sh", "-c",
                        'mount -o bind,ro "$0" "$0" && exec "$@"', str(secrets)] + flags()
    srv.start()

    def tls_client(user, password):
        return redis.Redis(port=tls_port, ssl=True, ssl_ca_certs=str(tls / "ca.crt"),
                           ssl_certfile=str(tls / "client.crt"),
                           ssl_keyfile=str(tls / "client.key"), username=user, password=password)
    try:
        app = tls_client("app", "app-secret")
        assert app.set("app:k", "v") and app.get("app:k") == b"v"
        with pytest.raises(redis.exceptions.NoPermissionError):
            app.get("other")
        admin = tls_client("admin", "admin-secret")
        # The default user is off: no command without AUTH, but the probes' /healthz answers.
        plain = srv.raw()
        assert call(plain, "PING").startswith("NOAUTH")
        plain.close()
        probe = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=5)
        probe.request("GET", "/healthz")
        assert probe.getresponse().status == 200
        probe.close()
        # ACL SAVE cannot write next to a read-only file: Redis' error, the reason in the log.
        with pytest.raises(redis.exceptions.ResponseError) as e:
            admin.execute_command("ACL", "SAVE")
        assert str(e.value) == ("There was an error trying to save the ACLs. Please check the "
                                "server logs for more information")
        assert "Read-only file system" in srv.tail(20)
        # A changed Secret reaches the server with ACL LOAD.
        (acl / "users.acl").write_text(
            "user default off\nuser admin on >admin-secret ~* &* +@all\n")
        # As Redis, ACL LOAD closes every connection of a user other than default, the caller's
        # own after the reply: clients reconnect and authenticate again.
        assert admin.execute_command("ACL", "LOAD") == b"OK"
        admin.close()
        admin = tls_client("admin", "admin-secret")
        assert admin.execute_command("ACL", "USERS") == [b"admin", b"default"]
        with pytest.raises((redis.exceptions.AuthenticationError, redis.exceptions.ResponseError)):
            tls_client("app", "app-secret").ping()
        app.close()
        admin.close()
    finally:
        srv.stop_and_check()
