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
