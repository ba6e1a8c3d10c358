"""Many clients at once, their keys spread over every shard."""

import threading
import time

from conftest import wait_for

CLIENTS = 200
KEYS_PER_CLIENT = 40
INCRS_PER_CLIENT = 25
TIME_LIMIT = 90.0


def _run_clients(n, target):
    barrier = threading.Barrier(n)
    errors = []

    def body(i):
        try:
            barrier.wait(timeout=30)
            target(i)
        except Exception as e:  # reported below with the client's number
            errors.append((i, repr(e)))

    threads = [threading.Thread(target=body, args=(i,), daemon=True) for i in range(n)]
    start = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join(max(1.0, TIME_LIMIT - (time.monotonic() - start)))
    elapsed = time.monotonic() - start
    stuck = sum(t.is_alive() for t in threads)
    assert not stuck, f"{stuck} clients still running after {elapsed:.1f} s"
    assert not errors, f"{len(errors)} clients failed, e.g. {errors[:3]}"
    return elapsed


def test_200_clients_own_keys(server, r):
    def client(i):
        c = server.client(socket_timeout=30)
        try:
            own = {f"client{i}:key{j}".encode(): f"{i}-{j}-{time.monotonic_ns()}".encode()
                   for j in range(KEYS_PER_CLIENT)}
            for k, v in own.items():
                assert c.set(k, v) is True
            for k, v in own.items():
                assert c.get(k) == v, k
            keys = list(own)
            assert c.mget(keys) == [own[k] for k in keys]
            for _ in range(INCRS_PER_CLIENT):
                c.incr(b"shared:counter")
            counter_key = f"client{i}:counter".encode()
            for n in range(1, 11):
                assert c.incr(counter_key) == n
            assert c.append(f"client{i}:log".encode(), b"x" * 10) == 10
            assert c.delete(keys[0]) == 1
            assert c.exists(*keys) == KEYS_PER_CLIENT - 1
        finally:
            c.close()

    _run_clients(CLIENTS, client)
    assert r.get(b"shared:counter") == str(CLIENTS * INCRS_PER_CLIENT).encode()
    # Everyone's keys (minus the deleted one, plus counter and log) and the shared counter.
    assert r.dbsize() == CLIENTS * (KEYS_PER_CLIENT - 1 + 2) + 1
    assert r.get(b"client7:key3").startswith(b"7-3-")


def test_clients_pipelining_concurrently(server, r):
    def client(i):
        c = server.client(socket_timeout=30)
        try:
            with c.pipeline(transaction=False) as p:
                for j in range(500):
                    p.set(f"p{i}:{j}", j)
                    p.incr(f"pc{i}")
                replies = p.execute()
            assert replies[1::2] == list(range(1, 501))
            assert c.mget([f"p{i}:{j}" for j in range(500)]) == \
                [str(j).encode() for j in range(500)]
        finally:
            c.close()

    _run_clients(50, client)
    assert r.dbsize() == 50 * 501


def test_connection_churn(server, r):
    """Clients that connect, do a little and disconnect do not leak connections."""
    baseline = r.info("clients")["connected_clients"]

    def client(i):
        for round_ in range(5):
            c = server.client(socket_timeout=30)
            c.set(f"churn:{i}", round_)
            assert c.get(f"churn:{i}") == str(round_).encode()
            c.close()

    _run_clients(100, client)
    assert r.dbsize() == 100
    assert wait_for(lambda: r.info("clients")["connected_clients"] == baseline, timeout=5), \
        f"connected_clients {r.info('clients')['connected_clients']} != {baseline}"


def test_input_arriving_while_blocked_is_kept_in_order(server, r):
    """A client blocked in BLPOP goes on sending: 3 MiB of pipelined SETs, far more than the
    server holds for a busy connection (it stops reading and lets TCP push back). Once unblocked,
    every SET runs, in order, and every reply comes back."""
    conn = server.raw(timeout=30)
    try:
        conn.send_command("BLPOP", "inbox", 0)
        assert wait_for(lambda: r.info("clients")["blocked_clients"] == 1, 10)
        value = b"v" * 1000
        count = 3000
        pipeline = b"".join(conn.encode("SET", f"blocked:{i % 100}", value + str(i).encode())
                            for i in range(count))
        sender = threading.Thread(target=conn.send, args=(pipeline,))
        sender.start()
        time.sleep(0.3)  # the server buffers what it may, TCP holds the rest
        assert r.get(b"blocked:0") is None  # nothing ran while the client was blocked
        r.lpush(b"inbox", b"go")
        assert conn.read_reply()[1] == [b"inbox", b"go"]
        for _ in range(count):
            assert conn.read_reply()[0] == b"+OK\r\n"
        sender.join()
        # The last SET of each key won: they ran in the order sent.
        for k in range(100):
            last = max(i for i in range(count) if i % 100 == k)
            assert r.get(f"blocked:{k}".encode()) == value + str(last).encode()
        assert conn.call_raw("PING") == b"+PONG\r\n"
    finally:
        conn.close()


def test_large_requests_in_small_pieces(server, r):
    """A 5 MiB value sent in 1 KiB pieces with pauses, then a pipeline of large values: the
    request grows across many receives and buffers."""
    conn = server.raw(timeout=30)
    try:
        big = bytes(range(256)) * (5 * 4096)
        request = conn.encode("SET", "pieces", big)
        for off in range(0, 64 * 1024, 1024):
            conn.send(request[off:off + 1024])
            if off % 16384 == 0:
                time.sleep(0.01)
        conn.send(request[64 * 1024:])
        assert conn.read_reply()[0] == b"+OK\r\n"
        assert r.get(b"pieces") == big
        values = [bytes([65 + i % 26]) * (200_000 + i) for i in range(20)]
        conn.send(b"".join(conn.encode("SET", f"piece:{i}", v) for i, v in enumerate(values)))
        for _ in values:
            assert conn.read_reply()[0] == b"+OK\r\n"
        assert r.mget([f"piece:{i}" for i in range(20)]) == values
    finally:
        conn.close()
