"""A client that sends a command on one connection and then, without waiting for its reply, a
command on another connection sees them take effect in that order, as one Redis thread serves
them in the order they arrived (Redis' TCL suite relies on it with its deferring clients). With
several threads the two connections may live on different threads: the second command's hop to
the first connection's thread must not run before what had reached that thread first
(io/proactor.h, "Order of tasks and I/O").

To make the order matter every time, the first connection's thread is kept busy by a script
(it runs on its caller's thread without yielding for its first 5 s) while the client sends both
commands; the thread then finds the first command's bytes and the second command's hop waiting
together. Against redis-server the script holds the whole server, with the same outcome.

What is not promised: a second command that runs only on its own thread (a write on a key of
that thread's shard) does not wait for a first one whose thread has not read it yet; see
docs/compatibility.md, "BRPOPLPUSH does not affect WATCH while still blocked"."""

import time

import pytest

from conftest import TARGET, wait_for

# Holds its thread for about 0.4 s (TIME is allowed in scripts).
BUSY_SCRIPT = """
local t = redis.call('TIME')
local start = t[1] * 1000000 + t[2]
repeat
  t = redis.call('TIME')
until t[1] * 1000000 + t[2] - start > 400000
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
    spare = []
    with srv.raw() as admin:
        for _ in range(64):
            before = per_thread_clients(admin)
            c = srv.raw()
            assert c.call("PING") == b"PONG"
            after = per_thread_clients(admin)
            thread = next(i for i, (a, b) in enumerate(zip(after, before)) if a > b)
            by_thread.setdefault(thread, []).append(c)
            full = [t for t, conns in by_thread.items() if len(conns) >= 2]
            others = [t for t in by_thread if t not in full[:1]]
            if full and others:
                first, same = by_thread[full[0]][:2]
                second = by_thread[others[0]][0]
                for conns in by_thread.values():
                    spare += [x for x in conns if x not in (first, second, same)]
                for x in spare:
                    x.close()
                return first, second, same
    raise AssertionError("connections never reached two threads")


def hold_thread(conn):
    """Starts the busy script on conn's thread; returns a function that waits for its reply."""
    conn.send_command("EVAL", BUSY_SCRIPT, "0")
    time.sleep(0.1)  # the script runs by now
    return lambda: conn.read_reply()[1] == 1


def blocked_clients(conn) -> int:
    info = conn.call("INFO", "clients").decode()
    return int(info.split("blocked_clients:")[1].split("\r\n")[0])


@pytest.fixture
def conns(server):
    first, second, same = connections_on_two_threads(server)
    assert second.call("FLUSHALL") == b"OK"
    yield first, second, same
    for c in (first, second, same):
        c.close()


def test_publish_after_punsubscribe_sent_first(conns):
    # TCL pubsub "PUBLISH/PSUBSCRIBE after PUNSUBSCRIBE without arguments".
    sub, pub, busy = conns
    sub.send_command("PSUBSCRIBE", "chan1.*", "chan2.*")
    assert [sub.read_reply()[1][2] for _ in range(2)] == [1, 2]
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


def test_a_blocked_client_that_hung_up_first_is_not_counted(conns):
    # TCL stream-cgroups: the clients a test closes are gone for the next test's
    # wait_for_blocked_clients_count (Redis frees them before serving the next command).
    blocked, admin, busy = conns
    blocked.send_command("BLPOP", "nolist", "0")
    assert wait_for(lambda: blocked_clients(admin) == 1, 10)
    script_done = hold_thread(busy)
    blocked.close()
    assert blocked_clients(admin) == 0
    assert script_done()

