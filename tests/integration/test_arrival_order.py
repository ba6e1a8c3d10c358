"""A client that sends a command on one connection and then, without reading its reply, a command
on another connection sees them take effect in that order, as one Redis thread serves its sockets
in the order data arrived (Redis' TCL suite relies on it with its deferring clients). With several
threads the two connections may live on different threads: a PUBLISH's (or PUBSUB's) hop to the
first connection's thread must not count or deliver before what had reached that thread first
(io::Proactor::RunAfterArrivedInput).

To make the order matter every time, the first connection's thread is kept busy by a script (it
runs on its caller's thread without yielding) while the client sends both commands: when the
script ends, that thread finds the first command's bytes and the second command's hop waiting
together. Against redis-server the script holds the whole server, with the same outcome.

What is not promised: a write that runs only on its own thread (a key of that thread's shard) does
not wait for a command whose thread has not read it yet; see docs/compatibility.md, "Tests that
race between clients"."""

import time

import pytest

from conftest import TARGET

# Holds its thread for about 0.3 s (TIME is allowed in scripts).
BUSY_SCRIPT = """
local t = redis.call('TIME')
local start = t[1] * 1000000 + t[2]
repeat
  t = redis.call('TIME')
until t[1] * 1000000 + t[2] - start > 300000
return 1
"""


def per_thread_clients(admin) -> list[int]:
    """The number of clients on each thread, from INFO shardis."""
    info = admin.call("INFO", "shardis").decode()
    return [int(part.split("clients=")[1].split(",")[0])
            for part in info.splitlines() if "clients=" in part]


def connections_on_two_threads(srv):
    """(first, second, same): connections `first` and `same` on one thread and `second` on
    another (with one thread, or against redis-server, all on the one there is). The kernel
    spreads new connections over the threads; the ones not kept are closed."""
    if TARGET == "redis" or srv.threads == 1:
        return srv.raw(), srv.raw(), srv.raw()
    by_thread: dict[int, list] = {}
    with srv.raw() as admin:
        for _ in range(64):
            before = per_thread_clients(admin)
            c = srv.raw()
            assert c.call("PING") == b"PONG"
            after = per_thread_clients(admin)
            grown = [i for i, (a, b) in enumerate(zip(after, before)) if a > b]
            if len(grown) != 1:  # another client came or went meanwhile (a test's last ones)
                c.close()
                continue
            by_thread.setdefault(grown[0], []).append(c)
            full = [t for t, conns in by_thread.items() if len(conns) >= 2]
            others = [t for t in by_thread if t not in full[:1]]
            if full and others:
                first, same = by_thread[full[0]][:2]
                second = by_thread[others[0]][0]
                for conns in by_thread.values():
                    for x in conns:
                        if x not in (first, second, same):
                            x.close()
                return first, second, same
    raise AssertionError("connections never reached two threads")


def hold_thread(conn):
    """Starts the busy script on conn's thread; returns a function that waits for its reply."""
    conn.send_command("EVAL", BUSY_SCRIPT, "0")
    time.sleep(0.05)  # the script runs by now
    return lambda: conn.read_reply()[1] == 1


@pytest.fixture
def conns(server):
    """(sub, pub, busy): sub and busy share a thread, pub is on another."""
    sub, pub, busy = connections_on_two_threads(server)
    yield sub, pub, busy
    for c in (sub, pub, busy):
        c.close()


def psubscribe(sub, *patterns):
    sub.send_command("PSUBSCRIBE", *patterns)
    assert [sub.read_reply()[1][2] for _ in patterns] == list(range(1, len(patterns) + 1))


def test_publish_after_punsubscribe_sent_first(conns):
    # TCL pubsub "PUBLISH/PSUBSCRIBE after PUNSUBSCRIBE without arguments".
    sub, pub, busy = conns
    psubscribe(sub, "chan1.*", "chan2.*")
    script_done = hold_thread(busy)
    sub.send_command("PUNSUBSCRIBE")
    assert pub.call("PUBLISH", "chan1.hi", "hello") == 0
    assert script_done()
    assert sorted(sub.read_reply()[1][1] for _ in range(2)) == [b"chan1.*", b"chan2.*"]


def test_subscribe_sent_first_receives_the_publish(conns):
    sub, pub, busy = conns
    script_done = hold_thread(busy)
    sub.send_command("SUBSCRIBE", "news")
    assert pub.call("PUBLISH", "news", "hello") == 1
    assert script_done()
    assert sub.read_reply()[1] == [b"subscribe", b"news", 1]
    assert sub.read_reply()[1] == [b"message", b"news", b"hello"]


def test_pubsub_counts_after_unsubscribe_sent_first(conns):
    sub, pub, busy = conns
    psubscribe(sub, "p.*")
    sub.send_command("SUBSCRIBE", "c")
    assert sub.read_reply()[1] == [b"subscribe", b"c", 2]
    script_done = hold_thread(busy)
    sub.send_command("UNSUBSCRIBE", "c")
    sub.send_command("PUNSUBSCRIBE", "p.*")
    assert pub.call("PUBSUB", "NUMSUB", "c") == [b"c", 0]
    assert pub.call("PUBSUB", "NUMPAT") == 0
    assert pub.call("PUBSUB", "CHANNELS") == []
    assert script_done()
    assert sub.read_reply()[1] == [b"unsubscribe", b"c", 1]
    assert sub.read_reply()[1] == [b"punsubscribe", b"p.*", 0]


def test_ssubscribe_sent_first_is_counted(conns):
    sub, pub, busy = conns
    script_done = hold_thread(busy)
    sub.send_command("SSUBSCRIBE", "sc")
    assert pub.call("PUBSUB", "SHARDNUMSUB", "sc") == [b"sc", 1]
    assert pub.call("SPUBLISH", "sc", "hi") == 1
    assert script_done()
    assert sub.read_reply()[1] == [b"ssubscribe", b"sc", 1]
    assert sub.read_reply()[1] == [b"smessage", b"sc", b"hi"]


def test_punsubscribe_then_publish_many_times(conns):
    # The TCL test's own sequence, without a busy thread: each round's PUNSUBSCRIBE is sent and
    # not read before the other connection's PUBLISH.
    sub, pub, _ = conns
    for i in range(200):
        psubscribe(sub, "chan1.*", "chan2.*")
        sub.send_command("PUNSUBSCRIBE")
        assert pub.call("PUBLISH", "chan1.hi", "hello") == 0, i
        assert sorted(sub.read_reply()[1][1] for _ in range(2)) == [b"chan1.*", b"chan2.*"]
