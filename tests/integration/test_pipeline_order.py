"""A connection's commands take effect in the order it sent them, as other clients see them, with
any number of threads (docs/pipelines.md): pipelined writes to keys on different shards never
become visible out of order, and the replies of a mixed pipeline match redis-server's."""

import random
import socket
import threading
import time

import pytest

from conftest import TARGET, RespConn, free_port, wait_for

THREADS = None if TARGET == "redis" else 4
WRITERS = 3
READERS = 3
BATCH = 20               # SET a:<i>, SET b:<i> pairs per writer pipeline
READ_PIPELINE = 64       # MGETs per reader pipeline
MIN_CHECKS = 100_000
DEADLINE_S = 120


def _encode(*args) -> bytes:
    return RespConn.encode(*args)


class _FastReader:
    """Reads exactly n RESP2 replies of the simple shapes the ordering tests get (+OK, :n,
    *2 of $ bulks / $-1) from a socket, faster than RespConn for hundreds of thousands."""

    def __init__(self, sock: socket.socket):
        self.sock = sock
        self.buf = b""

    def _more(self):
        chunk = self.sock.recv(1 << 16)
        if not chunk:
            raise ConnectionError("server closed the connection")
        self.buf += chunk

    def _line(self, pos):
        while True:
            end = self.buf.find(b"\r\n", pos)
            if end >= 0:
                return self.buf[pos:end], end + 2
            self._more()

    def _bulk(self, pos):
        head, pos = self._line(pos)
        assert head[:1] == b"$", head
        n = int(head[1:])
        if n < 0:
            return None, pos
        while len(self.buf) < pos + n + 2:
            self._more()
        return self.buf[pos:pos + n], pos + n + 2

    def replies(self, n):
        out = []
        pos = 0
        for _ in range(n):
            head, after = self._line(pos)
            kind = head[:1]
            if kind in (b"+", b":"):
                out.append(head)
                pos = after
            elif kind == b"*":
                items = []
                pos = after
                for _ in range(int(head[1:])):
                    value, pos = self._bulk(pos)
                    items.append(value)
                out.append(items)
            else:
                raise AssertionError(f"unexpected reply {head!r}")
            self.buf = self.buf[pos:]
            pos = 0
        return out


def _connect(port):
    sock = socket.create_connection(("127.0.0.1", port), timeout=30)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


class _Resp:
    """Writers pipeline SET a:<i> 1, SET b:<i> 1; readers MGET b:<i> a:<i> (atomic)."""

    def __init__(self, sock):
        self.sock, self.fast = sock, _FastReader(sock)

    def write_pairs(self, w, first, count):
        self.sock.sendall(b"".join(_encode("SET", f"{k}:w{w}:{j}", "1")
                                   for j in range(first, first + count) for k in "ab"))
        assert all(r == b"+OK" for r in self.fast.replies(2 * count))

    def read_pairs(self, picks):
        """[(b present, a present)] for each (w, i)."""
        self.sock.sendall(b"".join(_encode("MGET", f"b:w{w}:{i}", f"a:w{w}:{i}")
                                   for w, i in picks))
        return [(b is not None, a is not None) for b, a in self.fast.replies(len(picks))]


class _Memcache:
    """Writers pipeline set a:<i>, set b:<i>; readers `get b:<i> a:<i>`, whose keys are read in
    order (memcached's multi-key get is not atomic, but a key read later must not be older)."""

    def __init__(self, sock):
        self.sock = sock

    def _read(self, count, marker):
        buf = b""
        while buf.count(marker) < count:
            chunk = self.sock.recv(1 << 16)
            if not chunk:
                raise ConnectionError("closed")
            buf += chunk
        return buf

    def write_pairs(self, w, first, count):
        self.sock.sendall(b"".join(b"set %s:w%d:%d 0 0 1\r\n1\r\n" % (k, w, j)
                                   for j in range(first, first + count) for k in (b"a", b"b")))
        assert self._read(2 * count, b"STORED\r\n") == b"STORED\r\n" * (2 * count)

    def read_pairs(self, picks):
        self.sock.sendall(b"".join(b"get b:w%d:%d a:w%d:%d\r\n" % (w, i, w, i)
                                   for w, i in picks))
        replies = self._read(len(picks), b"END\r\n").split(b"END\r\n")
        return [(b"VALUE b:" in r, b"VALUE a:" in r) for r in replies[:len(picks)]]


def _check_write_order(port, protocol):
    """Writers and readers on `port` until MIN_CHECKS reads near the writers' frontier; returns
    (checks, violations): reads that saw b:<i> (written second) without a:<i>."""
    progress = [0] * WRITERS
    stop = threading.Event()
    checks = [0] * READERS
    violations = []
    errors = []

    def guarded(body):
        def run(n):
            try:
                sock = _connect(port)
                body(n, protocol(sock))
                sock.close()
            except Exception as e:  # reported by the main thread
                errors.append(e)
                stop.set()
        return run

    @guarded
    def writer(w, conn):
        i = 0
        while not stop.is_set():
            progress[w] = i
            conn.write_pairs(w, i, BATCH)
            i += BATCH

    @guarded
    def reader(rid, conn):
        rng = random.Random(rid)
        while not stop.is_set():
            picks = []
            for _ in range(READ_PIPELINE):
                w = rng.randrange(WRITERS)
                picks.append((w, max(0, progress[w] + rng.randrange(-4, BATCH + 4))))
            for pick, (has_b, has_a) in zip(picks, conn.read_pairs(picks)):
                if has_b and not has_a:
                    violations.append(pick)
            checks[rid] += len(picks)

    threads = [threading.Thread(target=writer, args=(w,)) for w in range(WRITERS)]
    threads += [threading.Thread(target=reader, args=(r,)) for r in range(READERS)]
    for t in threads:
        t.start()
    deadline = time.monotonic() + DEADLINE_S
    while sum(checks) < MIN_CHECKS and not stop.is_set() and time.monotonic() < deadline:
        time.sleep(0.05)
    stop.set()
    for t in threads:
        t.join(30)
    assert not errors, errors
    assert sum(checks) >= MIN_CHECKS, f"only {sum(checks)} checks in {DEADLINE_S} s"
    return sum(checks), violations


def test_pipelined_writes_are_seen_in_order(server_factory):
    """Writers pipeline SET a:<i> 1, SET b:<i> 1 (mostly different shards); readers MGET b:<i>
    a:<i> near the writers' frontier. Seeing b:<i> without a:<i> would mean the second write
    took effect before the first."""
    srv = server_factory(threads=THREADS)
    checks, violations = _check_write_order(srv.port, _Resp)
    assert not violations, (f"{len(violations)} of {checks} reads saw b:<i> set and a:<i> "
                            f"missing, e.g. {violations[:5]}")


@pytest.mark.shardis_only
def test_memcached_pipelines_keep_their_order(server_factory):
    """The same over the memcached port."""
    mc_port = free_port()
    server_factory(threads=THREADS, args=[f"--memcached_port={mc_port}"])
    wait_for(lambda: _can_connect(mc_port), 10)
    checks, violations = _check_write_order(mc_port, _Memcache)
    assert not violations, (f"{len(violations)} of {checks} gets saw b:<i> and not a:<i>, "
                            f"e.g. {violations[:5]}")


def _can_connect(port):
    try:
        socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
        return True
    except OSError:
        return False


def test_job_is_there_when_its_id_is_popped(server_factory):
    """Producers pipeline SET job:<id> <payload> then LPUSH jobs <id>; a worker blocked in BRPOP
    must always find the job it was handed. Each round waits until the worker is blocked on an
    empty list again, so that the first LPUSH of every pipeline wakes it at once."""
    srv = server_factory(threads=THREADS)
    rounds, per_round = 1000, 4
    jobs = rounds * per_round
    missing = []
    got = []
    errors = []

    def worker():
        # One worker: ids come out in the order they were pushed, so it can send the GET of the
        # job it expects in the same write as its BRPOP, and the server runs it the moment the
        # pop is served (a client round trip would hide most of the race).
        try:
            conn = RespConn(srv.port)
            while len(got) < jobs:
                expect = len(got)
                conn.send(_encode("BRPOP", "jobs", "10") + _encode("GET", f"job:{expect}"))
                popped, job = conn.read_reply()[1], conn.read_reply()[1]
                if popped is None:
                    break
                assert popped[1] == str(expect).encode(), (popped, expect)
                if job is None:
                    missing.append(expect)
                got.append(expect)
            conn.close()
        except Exception as e:
            errors.append(e)

    def background_load(seed):
        # Keeps the threads busy, so that a wake-up is seen at once rather than at the sender's
        # next submit (which would hide the race).
        try:
            sock = _connect(srv.port)
            fast = _FastReader(sock)
            n = 0
            while len(got) < jobs and not errors:
                sock.sendall(b"".join(_encode("SET", f"bg:{seed}:{n + i}", "x")
                                      for i in range(50)))
                fast.replies(50)
                n += 50
            sock.close()
        except Exception as e:
            errors.append(e)

    workers = [threading.Thread(target=worker)]
    workers += [threading.Thread(target=background_load, args=(i,)) for i in range(4)]
    for t in workers:
        t.start()
    # Producers on several connections, so that some share a thread with "jobs" and some not.
    producers = [_connect(srv.port) for _ in range(4)]
    readers = [_FastReader(p) for p in producers]
    for round_no in range(rounds):
        deadline = time.monotonic() + 10
        while len(got) < round_no * per_round and time.monotonic() < deadline and not errors:
            time.sleep(0.001)
        time.sleep(0.002)  # for the worker's next BRPOP to block
        batch = []
        for job_id in range(round_no * per_round, (round_no + 1) * per_round):
            batch.append(_encode("SET", f"job:{job_id}", f"payload-{job_id}"))
            batch.append(_encode("LPUSH", "jobs", str(job_id)))
        producers[round_no % len(producers)].sendall(b"".join(batch))
        readers[round_no % len(producers)].replies(len(batch))
    for p in producers:
        p.close()
    for t in workers:
        t.join(60)
    assert not errors, errors
    assert len(got) == jobs
    assert not missing, f"{len(missing)} jobs popped before their SET took effect: {missing[:5]}"


def _mixed_pipeline(rng: random.Random, n: int):
    """Commands of every kind a pipeline may mix: reads and writes on keys spread over the
    shards, MULTI/EXEC (with a queued error too), blocking pops that are served at once or time
    out, SELECT, and connection commands."""
    keys = [f"k{i}" for i in range(12)] + ["{t}x", "{t}y"]
    cmds = []
    in_multi = False
    for _ in range(n):
        k, k2 = rng.choice(keys), rng.choice(keys)
        choice = rng.randrange(20)
        if choice < 4:
            cmds.append(("SET", k, str(rng.randrange(100))))
        elif choice < 7:
            cmds.append(("GET", k))
        elif choice == 7:
            cmds.append(("INCR", k))
        elif choice == 8:
            cmds.append(("RPUSH", f"l{k}", str(rng.randrange(100))))
        elif choice == 9:
            cmds.append(("LPOP", f"l{k}"))
        elif choice == 10:
            cmds.append(("BLPOP", f"l{k}", f"l{k2}", "0.01"))
        elif choice == 11:
            cmds.append(("MGET", k, k2))
        elif choice == 12:
            cmds.append(("DEL", k, k2))
        elif choice == 13:
            cmds.append(("RENAME", k, k2) if k != k2 else ("EXISTS", k))
        elif choice == 14:
            cmds.append(("SELECT", str(rng.choice((0, 0, 1)))))
        elif choice == 15:
            cmds.append(("ECHO", "e"))
        elif choice == 16:
            cmds.append(("EXEC",) if in_multi else ("MULTI",))
            in_multi = not in_multi
        elif choice == 17:
            cmds.append(("CLIENT", "SETNAME", f"n{rng.randrange(9)}"))
        elif choice == 18:
            cmds.append(("CLIENT", "GETNAME"))
        else:
            cmds.append(("LLEN", f"l{k}"))
    if in_multi:
        cmds.append(("EXEC",))
    return cmds


def same_replies(ours, ref, cmds, label):
    """Sends the commands in one write to both connections: byte-identical replies."""
    payload = b"".join(RespConn.encode(*c) for c in cmds)
    ours.send(payload)
    ref.send(payload)
    for i, cmd in enumerate(cmds):
        got, want = ours.read_reply()[0], ref.read_reply()[0]
        assert got == want, f"{label}, command {i} {cmd}: {got!r} != {want!r}"


@pytest.mark.shardis_only
@pytest.mark.parametrize("threads,order", [(1, "strict"), (2, "strict"), (4, "strict"),
                                           (4, "relaxed")])
def test_mixed_pipelines_match_redis(server_factory, redis_server, threads, order):
    """The same pipelines, each sent in one write, give byte-identical replies on redis-server
    and on shardis (the relaxed order too: alone on the server, one client cannot tell)."""
    srv = server_factory(threads=threads, args=[f"--pipeline_order={order}"])
    rng = random.Random(threads)
    ours, ref = srv.raw(), redis_server.raw()
    for conn in (ours, ref):
        conn.call("FLUSHALL")
    for round_no in range(30):
        same_replies(ours, ref, _mixed_pipeline(rng, rng.randrange(5, 120)), f"round {round_no}")
    for conn in (ours, ref):
        conn.call("SELECT", "0")
    ours.close()
    ref.close()
