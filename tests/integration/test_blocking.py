"""Blocking pops (BLPOP, BRPOP, BLMPOP, BLMOVE, BRPOPLPUSH, BZPOPMIN, BZPOPMAX, BZMPOP) across
threads: the `server` fixture runs every test with --threads 1, 2 and 4, so blocked clients,
writers and keys land on different threads. Timing is only used to let a client block before
the write; every assertion is about what was served, never about speed."""

import socket
import threading
import time

import pytest
import redis

from conftest import wait_for


def blocked_count(r):
    return r.info("clients")["blocked_clients"]


class Blocked:
    """Runs one blocking command in a thread on its own raw connection (exact replies)."""

    def __init__(self, server, *cmd):
        self.conn = server.raw(timeout=30)
        self.result = None
        self.thread = threading.Thread(target=self._run, args=cmd)
        self.thread.start()

    def _run(self, *cmd):
        self.result = self.conn.call(*cmd)

    def join(self):
        self.thread.join(timeout=30)
        assert not self.thread.is_alive(), "still blocked"
        self.conn.close()
        return self.result


def block(r, server, *cmd, expect_blocked):
    b = Blocked(server, *cmd)
    assert wait_for(lambda: blocked_count(r) == expect_blocked, 10), "the client did not block"
    return b


def test_blpop_woken_by_push_from_another_client(r, server):
    b = block(r, server, "BLPOP", "q", "0", expect_blocked=1)
    assert r.rpush("q", "a", "b") == 2
    assert b.join() == [b"q", b"a"]
    assert r.lrange("q", 0, -1) == [b"b"]
    assert blocked_count(r) == 0


def test_waiters_are_served_in_blocking_order(r, server):
    waiters = [block(r, server, "BRPOP", "fifo", "0", expect_blocked=i + 1) for i in range(5)]
    for i in range(5):
        r.lpush("fifo", f"e{i}")
    assert [w.join() for w in waiters] == [[b"fifo", f"e{i}".encode()] for i in range(5)]


def test_one_push_of_many_elements_serves_many_waiters(r, server):
    waiters = [block(r, server, "BLPOP", "many", "0", expect_blocked=i + 1) for i in range(3)]
    r.rpush("many", "x", "y", "z", "rest")
    assert [w.join() for w in waiters] == [[b"many", b"x"], [b"many", b"y"], [b"many", b"z"]]
    assert r.lrange("many", 0, -1) == [b"rest"]


def test_timeouts(r, server):
    start = time.monotonic()
    assert r.blpop(["never"], 0.3) is None
    assert r.execute_command("BZPOPMIN", "never", "0.2") is None
    assert r.execute_command("BLMOVE", "never", "dst", "LEFT", "LEFT", "0.2") is None
    assert r.execute_command("BLMPOP", "0.2", "1", "never", "LEFT") is None
    assert time.monotonic() - start >= 0.85
    assert blocked_count(r) == 0


def test_multi_key_blpop_takes_the_key_that_gets_data(r, server):
    b = block(r, server, "BLPOP", "k1", "k2", "k3", "0", expect_blocked=1)
    r.rpush("k3", "v3")
    assert b.join() == [b"k3", b"v3"]
    # With data in several keys, the first key in argument order wins, without blocking.
    r.rpush("k2", "v2")
    r.rpush("k3", "v3")
    assert r.blpop(["k1", "k2", "k3"], 0) == (b"k2", b"v2")


def test_served_only_after_exec(r, server):
    b = block(r, server, "BLPOP", "tx", "0", expect_blocked=1)
    pipe = r.pipeline(transaction=True)
    pipe.rpush("tx", "first", "second")
    pipe.lpop("tx")
    pipe.execute()
    # The blocked client sees the list as EXEC left it: it never saw "first".
    assert b.join() == [b"tx", b"second"]


def test_blocking_inside_multi_does_not_block(r):
    pipe = r.pipeline(transaction=True)
    pipe.blpop(["empty"], 0)
    pipe.execute_command("BLMOVE", "empty", "d", "LEFT", "LEFT", "0")
    pipe.execute_command("BZPOPMAX", "empty", "0")
    assert pipe.execute() == [None, None, None]


def test_disconnected_client_leaves_nothing_behind(r, server):
    s = socket.create_connection(("127.0.0.1", server.port))
    s.sendall(b"BLPOP gone 0\r\n")
    assert wait_for(lambda: blocked_count(r) == 1, 10)
    s.close()
    assert wait_for(lambda: blocked_count(r) == 0, 10)
    r.rpush("gone", "kept")
    assert r.lrange("gone", 0, -1) == [b"kept"]


def test_wrong_type_waiters_wait_for_the_right_type(r, server):
    b = block(r, server, "BLPOP", "typed", "0", expect_blocked=1)
    r.set("typed", "a string")  # not a list: the client keeps waiting
    time.sleep(0.1)
    assert blocked_count(r) == 1
    r.delete("typed")
    r.rpush("typed", "now")
    assert b.join() == [b"typed", b"now"]
    r.set("s", "x")
    with pytest.raises(redis.ResponseError, match="WRONGTYPE"):
        r.blpop(["s"], 0)


def test_sorted_set_and_mpop_variants(r, server):
    b1 = block(r, server, "BZPOPMIN", "z", "0", expect_blocked=1)
    b2 = block(r, server, "BZPOPMAX", "z", "0", expect_blocked=2)
    r.zadd("z", {"low": 1, "mid": 2, "high": 3})
    assert b1.join() == [b"z", b"low", b"1"]
    assert b2.join() == [b"z", b"high", b"3"]
    b3 = block(r, server, "BZMPOP", "0", "2", "z0", "z9", "MIN", "COUNT", "5", expect_blocked=1)
    r.zadd("z9", {"a": 1, "b": 2})
    assert b3.join() == [b"z9", [[b"a", b"1"], [b"b", b"2"]]]
    b4 = block(r, server, "BLMPOP", "0", "2", "l0", "l1", "RIGHT", "COUNT", "2", expect_blocked=1)
    r.rpush("l1", "1", "2", "3")
    assert b4.join() == [b"l1", [b"3", b"2"]]


def test_blmove_and_brpoplpush_across_shards(r, server):
    for i in range(8):  # several pairs, so that some cross shards
        b = block(r, server, "BLMOVE", f"from{i}", f"to{i}", "RIGHT", "LEFT", "0",
                  expect_blocked=1)
        r.rpush(f"from{i}", "x", f"v{i}")
        assert b.join() == f"v{i}".encode()
        assert r.lrange(f"to{i}", 0, -1) == [f"v{i}".encode()]
        assert r.lrange(f"from{i}", 0, -1) == [b"x"]
    b = block(r, server, "BRPOPLPUSH", "s", "d", "0", expect_blocked=1)
    r.lpush("s", "e")
    assert b.join() == b"e"
    assert r.lrange("d", 0, -1) == [b"e"]


@pytest.mark.parametrize("cmd", ["BRPOPLPUSH", "BLMOVE"])
def test_move_to_wrong_type_passes_the_element_on(r, server, cmd):
    """TCL unit/type/list "BRPOPLPUSH with multiple blocked clients": the first waiter's
    destination is a string, so it gets WRONGTYPE and the element goes to the next waiter."""
    ends = ["RIGHT", "LEFT"] if cmd == "BLMOVE" else []
    for i, (bad, good) in enumerate([("t1{t}", "t2{t}"), ("bad", "good")]):  # one shard, several
        src = f"src{i}{{t}}"
        r.set(bad, "nolist")
        first = block(r, server, cmd, src, bad, *ends, "0", expect_blocked=1)
        second = block(r, server, cmd, src, good, *ends, "0", expect_blocked=2)
        r.lpush(src, "foo")
        assert first.join().startswith(b"WRONGTYPE")
        assert second.join() == b"foo"
        assert r.lrange(good, 0, -1) == [b"foo"]
        assert r.exists(src) == 0


def test_swapdb_wakes_clients(r, server):
    b = block(r, server, "BLPOP", "swapped", "0", expect_blocked=1)
    other = server.client(db=1)
    other.rpush("swapped", "from-db1")
    r.swapdb(0, 1)
    assert b.join() == [b"swapped", b"from-db1"]
    other.close()


def test_producers_and_consumers_lose_nothing(r, server):
    """Consumers block on four queues while producers push: every element is served exactly
    once."""
    queues = [f"pc{i}" for i in range(4)]
    total = 400
    got = []
    lock = threading.Lock()

    def consumer():
        c = server.client()
        while True:
            item = c.blpop(queues, 5)
            if item is None or item[1] == b"stop":
                break
            with lock:
                got.append(item[1])
        c.close()

    def producer(pid):
        c = server.client()
        for n in range(total // 4):
            c.rpush(queues[n % 4], f"{pid}:{n}")
        c.close()

    consumers = [threading.Thread(target=consumer) for _ in range(6)]
    producers = [threading.Thread(target=producer, args=(p,)) for p in range(4)]
    for t in consumers + producers:
        t.start()
    for t in producers:
        t.join(timeout=60)
    assert wait_for(lambda: len(got) == total, 20)
    for i in range(6):
        r.rpush(queues[i % 4], "stop")
    for t in consumers:
        t.join(timeout=30)
    assert sorted(got) == sorted(f"{p}:{n}".encode() for p in range(4) for n in range(total // 4))
    assert blocked_count(r) == 0
