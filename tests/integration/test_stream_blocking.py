"""XREAD / XREADGROUP with BLOCK (Redis 7.2 semantics): blocked clients are served by XADD
from another client, time out with a null array, fail when their group or stream goes away (with
the error of the command run again, as Redis 7.2: NOGROUP or WRONGTYPE), and
leave nothing behind when they disconnect. The `server` fixture runs every test with --threads
1, 2 and 4, so blocked clients, writers and keys land on different threads. Timing only lets a
client block before the write; assertions are about the exact replies."""

import socket
import threading
import time

import pytest

from conftest import wait_for

# Where a waiter's stream or group goes away, Redis 7.0 replied -UNBLOCKED or a NOGROUP of its
# own; 7.2 runs the command again and replies its error: those tests pin 7.2's replies.
shardis_only = pytest.mark.shardis_only


def nogroup(key):
    return (b"-NOGROUP No such key '" + key + b"' or consumer group 'g' in XREADGROUP with GROUP "
            b"option\r\n")


WRONGTYPE = b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"


def blocked_count(r):
    return r.info("clients")["blocked_clients"]


class Blocked:
    """Runs one blocking command in a thread on its own raw connection; keeps the raw reply."""

    def __init__(self, server, *cmd, resp3=False):
        self.conn = server.raw(timeout=30)
        if resp3:
            self.conn.call("HELLO", "3")
        self.raw = None
        self.thread = threading.Thread(target=self._run, args=cmd)
        self.thread.start()

    def _run(self, *cmd):
        self.raw = self.conn.call_raw(*cmd)

    def join(self):
        self.thread.join(timeout=30)
        assert not self.thread.is_alive(), "still blocked"
        self.conn.close()
        return self.raw


def block(r, server, *cmd, expect_blocked, resp3=False):
    b = Blocked(server, *cmd, resp3=resp3)
    assert wait_for(lambda: blocked_count(r) == expect_blocked, 10), "the client did not block"
    return b


def call(server, *cmd):
    """One command over a raw connection: the parsed reply without redis-py's reshaping."""
    conn = server.raw()
    try:
        return conn.call(*cmd)
    finally:
        conn.close()


def entry(i, f, v):
    return b"*2\r\n$%d\r\n%s\r\n*2\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n" % (
        len(i), i, len(f), f, len(v), v)


def one_stream(key, *entries, resp3=False):
    head = b"%1\r\n" if resp3 else b"*1\r\n*2\r\n"
    body = b"".join(entries)
    return head + b"$%d\r\n%s\r\n*%d\r\n" % (len(key), key, len(entries)) + body


def test_xread_block_zero_served_by_xadd(r, server):
    b = block(r, server, "XREAD", "BLOCK", "0", "STREAMS", "s", "$", expect_blocked=1)
    time.sleep(0.05)
    assert blocked_count(r) == 1
    r.execute_command("XADD", "s", "1-1", "f", "v")
    assert b.join() == one_stream(b"s", entry(b"1-1", b"f", b"v"))
    assert blocked_count(r) == 0


def test_xread_resp3_reply_is_a_map(r, server):
    b = block(r, server, "XREAD", "BLOCK", "0", "STREAMS", "s3", "$", expect_blocked=1,
              resp3=True)
    r.execute_command("XADD", "s3", "2-1", "a", "b")
    assert b.join() == one_stream(b"s3", entry(b"2-1", b"a", b"b"), resp3=True)


def test_dollar_is_resolved_when_blocking(r, server):
    r.execute_command("XADD", "d", "1-1", "old", "x")
    b = block(r, server, "XREAD", "BLOCK", "0", "STREAMS", "d", "$", expect_blocked=1)
    r.execute_command("XADD", "d", "1-2", "new", "y")
    assert b.join() == one_stream(b"d", entry(b"1-2", b"new", b"y"))


def test_explicit_id_with_data_does_not_block(r, server):
    r.execute_command("XADD", "e", "1-1", "f", "v")
    raw = server.raw()
    assert raw.call_raw("XREAD", "BLOCK", "0", "STREAMS", "e", "0") == one_stream(
        b"e", entry(b"1-1", b"f", b"v"))
    raw.close()


def test_reply_holds_only_the_stream_that_woke_the_client(r, server):
    # Many keys: with 2 or 4 threads they live on different shards.
    keys = [f"k{i}" for i in range(6)]
    cmd = ["XREAD", "COUNT", "5", "BLOCK", "0", "STREAMS", *keys, *(["$"] * len(keys))]
    for k in keys:
        b = block(r, server, *cmd, expect_blocked=1)
        r.execute_command("XADD", k, "3-1", "k", k)
        assert b.join() == one_stream(k.encode(), entry(b"3-1", b"k", k.encode()))
        assert blocked_count(r) == 0


def test_one_xadd_serves_every_xread_waiter(r, server):
    waiters = [block(r, server, "XREAD", "BLOCK", "0", "STREAMS", "all", "$",
                     expect_blocked=i + 1) for i in range(4)]
    r.execute_command("XADD", "all", "4-1", "f", "v")
    want = one_stream(b"all", entry(b"4-1", b"f", b"v"))
    assert [w.join() for w in waiters] == [want] * 4
    assert blocked_count(r) == 0


def test_xread_count_limits_what_is_served(r, server):
    b = block(r, server, "XREAD", "COUNT", "1", "BLOCK", "0", "STREAMS", "c", "0-0",
              expect_blocked=1)
    pipe = r.pipeline(transaction=True)
    pipe.execute_command("XADD", "c", "5-1", "a", "1")
    pipe.execute_command("XADD", "c", "5-2", "b", "2")
    pipe.execute()
    assert b.join() == one_stream(b"c", entry(b"5-1", b"a", b"1"))


def test_timeouts_reply_null_array(r, server):
    raw = server.raw()
    start = time.monotonic()
    assert raw.call_raw("XREAD", "BLOCK", "200", "STREAMS", "never", "$") == b"*-1\r\n"
    r.execute_command("XGROUP", "CREATE", "tg", "g", "$", "MKSTREAM")
    assert raw.call_raw("XREADGROUP", "GROUP", "g", "c", "BLOCK", "200", "STREAMS", "tg",
                        ">") == b"*-1\r\n"
    raw.call("HELLO", "3")
    assert raw.call_raw("XREAD", "BLOCK", "100", "STREAMS", "never", "$") == b"_\r\n"
    assert time.monotonic() - start >= 0.45
    raw.close()
    assert blocked_count(r) == 0


def test_timeout_errors(r, server):
    raw = server.raw()
    assert raw.call_raw("XREAD", "BLOCK", "-1", "STREAMS", "s", "$") == (
        b"-ERR timeout is negative\r\n")
    assert raw.call_raw("XREAD", "BLOCK", "1.5", "STREAMS", "s", "$") == (
        b"-ERR timeout is not an integer or out of range\r\n")
    raw.close()
    # Redis 7.0 has no range check for XREAD's milliseconds: such a timeout never expires.
    b = block(r, server, "XREAD", "BLOCK", "9223372036854775807", "STREAMS", "big", "$",
              expect_blocked=1)
    r.execute_command("XADD", "big", "1-1", "f", "v")
    assert b.join() == one_stream(b"big", entry(b"1-1", b"f", b"v"))


def test_inside_multi_nothing_blocks(r, server):
    r.execute_command("XGROUP", "CREATE", "m", "g", "$", "MKSTREAM")
    raw = server.raw()
    assert raw.call("MULTI") == b"OK"
    raw.call("XREAD", "BLOCK", "0", "STREAMS", "m", "$")
    raw.call("XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "m", ">")
    assert raw.call_raw("EXEC") == b"*2\r\n*-1\r\n*-1\r\n"
    raw.close()


@shardis_only  # the consumer a blocked XREADGROUP names exists from the start in Redis 7.2
def test_disconnected_client_leaves_nothing_behind(r, server):
    r.execute_command("XGROUP", "CREATE", "gone", "g", "$", "MKSTREAM")
    s1 = socket.create_connection(("127.0.0.1", server.port))
    s1.sendall(b"XREAD BLOCK 0 STREAMS gone a b $ $ $\r\n")
    s2 = socket.create_connection(("127.0.0.1", server.port))
    s2.sendall(b"XREADGROUP GROUP g c BLOCK 0 STREAMS gone >\r\n")
    assert wait_for(lambda: blocked_count(r) == 2, 10)
    s1.close()
    s2.close()
    assert wait_for(lambda: blocked_count(r) == 0, 10)
    r.execute_command("XADD", "gone", "1-1", "f", "v")
    # Nobody was served: the group delivered nothing; its one consumer, created when XREADGROUP
    # named it (Redis 7.2), never read anything.
    assert call(server, "XPENDING", "gone", "g") == [0, None, None, None]
    assert call(server, "XINFO", "GROUPS", "gone")[0][3] == 1  # consumers
    consumer = call(server, "XINFO", "CONSUMERS", "gone", "g")[0]
    assert consumer[0:4] == [b"name", b"c", b"pending", 0] and consumer[6:] == [b"inactive", -1]


def test_xreadgroup_served_entries_land_in_the_pel(r, server):
    r.execute_command("XGROUP", "CREATE", "q", "g", "$", "MKSTREAM")
    b = block(r, server, "XREADGROUP", "GROUP", "g", "alice", "BLOCK", "0", "STREAMS", "q", ">",
              expect_blocked=1)
    r.execute_command("XADD", "q", "7-1", "job", "1")
    assert b.join() == one_stream(b"q", entry(b"7-1", b"job", b"1"))
    assert call(server, "XPENDING", "q", "g") == [1, b"7-1", b"7-1", [[b"alice", b"1"]]]
    pending = call(server, "XPENDING", "q", "g", "-", "+", "10")
    assert pending[0][0] == b"7-1" and pending[0][1] == b"alice" and pending[0][3] == 1


def test_xreadgroup_noack_adds_nothing_to_the_pel(r, server):
    r.execute_command("XGROUP", "CREATE", "na", "g", "$", "MKSTREAM")
    b = block(r, server, "XREADGROUP", "GROUP", "g", "bob", "BLOCK", "0", "NOACK", "STREAMS",
              "na", ">", expect_blocked=1)
    r.execute_command("XADD", "na", "8-1", "f", "v")
    assert b.join() == one_stream(b"na", entry(b"8-1", b"f", b"v"))
    assert call(server, "XPENDING", "na", "g") == [0, None, None, None]
    info = call(server, "XINFO", "GROUPS", "na")[0]
    assert info[info.index(b"last-delivered-id") + 1] == b"8-1"


def test_xreadgroup_waiters_take_new_entries_in_blocking_order(r, server):
    r.execute_command("XGROUP", "CREATE", "w", "g", "$", "MKSTREAM")
    waiters = [block(r, server, "XREADGROUP", "GROUP", "g", f"c{i}", "BLOCK", "0", "STREAMS",
                     "w", ">", expect_blocked=i + 1) for i in range(3)]
    r.execute_command("XADD", "w", "9-1", "n", "1")
    # The first waiter got it; the others found nothing new for the group and wait on.
    assert waiters[0].join() == one_stream(b"w", entry(b"9-1", b"n", b"1"))
    time.sleep(0.05)
    assert blocked_count(r) == 2
    r.execute_command("XADD", "w", "9-2", "n", "2")
    assert waiters[1].join() == one_stream(b"w", entry(b"9-2", b"n", b"2"))
    r.execute_command("XADD", "w", "9-3", "n", "3")
    assert waiters[2].join() == one_stream(b"w", entry(b"9-3", b"n", b"3"))
    pending = call(server, "XPENDING", "w", "g")
    assert pending[0] == 3 and sorted(pending[3]) == [[b"c0", b"1"], [b"c1", b"1"], [b"c2", b"1"]]


def test_waiters_of_different_groups_are_all_served(r, server):
    for g in ("g1", "g2"):
        r.execute_command("XGROUP", "CREATE", "two", g, "$", "MKSTREAM")
    a = block(r, server, "XREADGROUP", "GROUP", "g1", "c", "BLOCK", "0", "STREAMS", "two", ">",
              expect_blocked=1)
    b = block(r, server, "XREADGROUP", "GROUP", "g2", "c", "BLOCK", "0", "STREAMS", "two", ">",
              expect_blocked=2)
    x = block(r, server, "XREAD", "BLOCK", "0", "STREAMS", "two", "$", expect_blocked=3)
    r.execute_command("XADD", "two", "10-1", "f", "v")
    want = one_stream(b"two", entry(b"10-1", b"f", b"v"))
    assert [a.join(), b.join(), x.join()] == [want] * 3


def test_xreadgroup_history_never_blocks(r, server):
    r.execute_command("XGROUP", "CREATE", "h", "g", "$", "MKSTREAM")
    raw = server.raw()
    assert raw.call_raw("XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "h",
                        "0") == b"*1\r\n*2\r\n$1\r\nh\r\n*0\r\n"
    raw.close()


@shardis_only
def test_group_destroyed_while_blocked(r, server):
    r.execute_command("XGROUP", "CREATE", "gd", "g", "$", "MKSTREAM")
    b = block(r, server, "XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "gd", ">",
              expect_blocked=1)
    assert r.execute_command("XGROUP", "DESTROY", "gd", "g") == 1
    assert b.join() == nogroup(b"gd")
    assert blocked_count(r) == 0


@shardis_only
def test_stream_deleted_while_blocked(r, server):
    r.execute_command("XGROUP", "CREATE", "sd", "g", "$", "MKSTREAM")
    r.execute_command("XGROUP", "CREATE", "st", "g", "$", "MKSTREAM")
    a = block(r, server, "XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "sd", ">",
              expect_blocked=1)
    x = block(r, server, "XREAD", "BLOCK", "0", "STREAMS", "sd", "$", expect_blocked=2)
    r.delete("sd")
    assert a.join() == nogroup(b"sd")
    # An XREAD waiter keeps waiting for the stream to come back.
    time.sleep(0.05)
    assert blocked_count(r) == 1
    r.execute_command("XADD", "sd", "1-1", "f", "v")
    assert x.join() == one_stream(b"sd", entry(b"1-1", b"f", b"v"))
    # Replaced by another type.
    b = block(r, server, "XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "st", ">",
              expect_blocked=1)
    r.set("st", "now a string")
    assert b.join() == WRONGTYPE
    assert blocked_count(r) == 0


@shardis_only
def test_stream_replaced_in_a_transaction_fails_the_waiter_once(r, server):
    r.execute_command("CONFIG", "RESETSTAT")
    r.execute_command("XGROUP", "CREATE", "tx", "g", "$", "MKSTREAM")
    b = block(r, server, "XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "tx", ">",
              expect_blocked=1)
    pipe = r.pipeline(transaction=True)
    pipe.delete("tx")
    pipe.set("tx", "x")
    pipe.execute()
    assert b.join() == WRONGTYPE
    assert r.info("errorstats") == {"errorstat_WRONGTYPE": "count=1"}
    stats = r.info("commandstats")["cmdstat_xreadgroup"]
    assert stats["calls"] == 1 and stats["failed_calls"] == 1


def test_other_writes_do_not_serve_xread(r, server):
    r.execute_command("XADD", "o", "5-1", "f", "v")
    b = block(r, server, "XREAD", "BLOCK", "0", "STREAMS", "o", "$", expect_blocked=1)
    r.execute_command("XDEL", "o", "5-1")
    r.execute_command("XTRIM", "o", "MAXLEN", "0")
    time.sleep(0.05)
    assert blocked_count(r) == 1
    r.execute_command("XADD", "o", "6-1", "g", "w")
    assert b.join() == one_stream(b"o", entry(b"6-1", b"g", b"w"))


def test_xgroup_setid_does_not_serve_but_the_next_xadd_does(r, server):
    r.execute_command("XADD", "si", "1-1", "a", "1")
    r.execute_command("XGROUP", "CREATE", "si", "g", "$")
    b = block(r, server, "XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "si", ">",
              expect_blocked=1)
    r.execute_command("XGROUP", "SETID", "si", "g", "0")
    time.sleep(0.05)
    assert blocked_count(r) == 1
    r.execute_command("XADD", "si", "2-1", "b", "2")
    assert b.join() == one_stream(b"si", entry(b"1-1", b"a", b"1"), entry(b"2-1", b"b", b"2"))


@shardis_only
def test_flush_and_expiry_fail_xreadgroup_waiters(r, server):
    for cmd in (("FLUSHDB",), ("FLUSHALL",), ("PEXPIRE", "fx", "50")):
        r.execute_command("XGROUP", "CREATE", "fx", "g", "$", "MKSTREAM")
        b = block(r, server, "XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "fx", ">",
                  expect_blocked=1)
        r.execute_command(*cmd)
        assert b.join() == nogroup(b"fx"), cmd
        assert wait_for(lambda: blocked_count(r) == 0, 10)


def test_setid_after_a_served_waiter_does_not_serve_the_next_one(r, server):
    r.execute_command("XGROUP", "CREATE", "s2", "g", "$", "MKSTREAM")
    a = block(r, server, "XREADGROUP", "GROUP", "g", "a", "BLOCK", "0", "STREAMS", "s2", ">",
              expect_blocked=1)
    b = block(r, server, "XREADGROUP", "GROUP", "g", "b", "BLOCK", "0", "STREAMS", "s2", ">",
              expect_blocked=2)
    r.execute_command("XADD", "s2", "1-1", "f", "v")
    assert a.join() == one_stream(b"s2", entry(b"1-1", b"f", b"v"))
    r.execute_command("XGROUP", "SETID", "s2", "g", "0")
    time.sleep(0.05)
    assert blocked_count(r) == 1
    r.execute_command("XADD", "s2", "2-1", "f", "w")
    assert b.join() == one_stream(b"s2", entry(b"1-1", b"f", b"v"), entry(b"2-1", b"f", b"w"))


def test_xreadgroup_does_not_fail_watch(r, server):
    r.execute_command("XADD", "ws", "1-1", "f", "v")
    r.execute_command("XGROUP", "CREATE", "ws", "g", "0")
    watcher = server.raw()
    assert watcher.call("WATCH", "ws") == b"OK"
    assert call(server, "XREADGROUP", "GROUP", "g", "c", "STREAMS", "ws", ">") == [
        [b"ws", [[b"1-1", [b"f", b"v"]]]]]
    assert watcher.call("MULTI") == b"OK"
    watcher.call("PING")
    assert watcher.call_raw("EXEC") == b"*1\r\n+PONG\r\n"
    watcher.close()
