"""Pipelines: thousands of commands in flight, replies in request order, across shards."""

import random

import redis

from conftest import RespConn


def _mixed_commands(rng: random.Random, n: int):
    """n random SET/GET/INCR/DEL/APPEND commands over many keys, with the replies a correct
    server gives (computed with a model of the keyspace)."""
    model = {}
    commands, expected = [], []
    for i in range(n):
        op = rng.choice(("SET", "GET", "GET", "INCR", "INCR", "DEL", "APPEND"))
        if op in ("INCR",):
            key = f"cnt:{rng.randrange(200)}"
            value = int(model.get(key, b"0")) + 1
            model[key] = str(value).encode()
            commands.append((op, key))
            expected.append(value)
            continue
        key = f"str:{rng.randrange(500)}"
        if op == "SET":
            value = f"v{i}-{rng.random()}".encode()
            model[key] = value
            commands.append((op, key, value))
            expected.append(True)
        elif op == "GET":
            commands.append((op, key))
            expected.append(model.get(key))
        elif op == "DEL":
            commands.append((op, key))
            expected.append(1 if model.pop(key, None) is not None else 0)
        else:  # APPEND
            suffix = b"+%d" % i
            model[key] = model.get(key, b"") + suffix
            commands.append((op, key, suffix))
            expected.append(len(model[key]))
    return commands, expected, model


def test_pipeline_10000_redis_py(r):
    rng = random.Random(1)
    commands, expected, model = _mixed_commands(rng, 10000)
    with r.pipeline(transaction=False) as p:
        for cmd in commands:
            p.execute_command(*cmd)
        replies = p.execute()
    assert len(replies) == len(expected)
    for i, (got, want) in enumerate(zip(replies, expected)):
        assert got == want, f"reply {i} to {commands[i]!r}: {got!r} != {want!r}"
    keys = sorted(model)
    assert r.mget(keys) == [model[k] for k in keys]
    assert r.dbsize() == len(model)


def test_pipeline_10000_raw_single_write(server, r):
    """All 10,000 commands in one write; the replies are read only afterwards."""
    rng = random.Random(2)
    commands, expected, _ = _mixed_commands(rng, 10000)
    with server.raw(timeout=60) as conn:
        conn.send(b"".join(RespConn.encode(*c) for c in commands))
        for i, want in enumerate(expected):
            _, got = conn.read_reply()
            if want is True:
                want = b"OK"
            assert got == want, f"reply {i} to {commands[i]!r}: {got!r} != {want!r}"


def test_pipeline_split_at_odd_boundaries(server, r):
    """The same stream delivered in tiny and uneven pieces parses the same way."""
    rng = random.Random(3)
    commands, expected, _ = _mixed_commands(rng, 3000)
    data = b"".join(RespConn.encode(*c) for c in commands)
    with server.raw(timeout=60) as conn:
        pos = 0
        while pos < len(data):
            size = rng.randint(1, 7) if pos < 3000 else rng.randint(1, 4096)
            conn.send(data[pos : pos + size])
            pos += size
        for i, want in enumerate(expected):
            _, got = conn.read_reply()
            if want is True:
                want = b"OK"
            assert got == want, f"reply {i} to {commands[i]!r}: {got!r} != {want!r}"


def test_pipeline_inline_commands(server, r):
    with server.raw() as conn:
        conn.send(b"".join(b"SET inl:%d %d\r\n" % (i, i) for i in range(2000)) +
                  b"".join(b"INCR inl:%d\n" % i for i in range(2000)))
        for _ in range(2000):
            assert conn.read_reply()[0] == b"+OK\r\n"
        for i in range(2000):
            assert conn.read_reply()[1] == i + 1


def test_pipeline_order_per_key(r):
    """INCRs of a few counters interleaved in one pipeline come back strictly in order."""
    with r.pipeline(transaction=False) as p:
        for i in range(10000):
            p.incr(f"c{i % 7}")
        replies = p.execute()
    assert replies == [i // 7 + 1 for i in range(10000)]


def test_pipeline_set_then_get_same_key(r):
    with r.pipeline(transaction=False) as p:
        for i in range(3000):
            p.set(f"k{i}", f"a{i}")
            p.get(f"k{i}")
            p.set(f"k{i}", f"b{i}")
            p.get(f"k{i}")
        replies = p.execute()
    for i in range(3000):
        assert replies[4 * i : 4 * i + 4] == [True, f"a{i}".encode(), True, f"b{i}".encode()]


def test_pipeline_select_between_commands(r):
    """SELECT inside a pipeline applies to the commands after it, and only to them."""
    with r.pipeline(transaction=False) as p:
        for i in range(200):
            p.set(f"k{i}", "db0")
            p.execute_command("SELECT", 1)
            p.get(f"k{i}")
            p.set(f"k{i}", "db1")
            p.execute_command("SELECT", 0)
            p.get(f"k{i}")
        replies = p.execute()
    for i in range(200):
        assert replies[6 * i : 6 * i + 6] == [True, True, None, True, True, b"db0"]
    assert r.dbsize() == 200
    r.execute_command("SELECT", 1)
    assert r.dbsize() == 200
    assert r.get("k5") == b"db1"


def test_pipeline_errors_in_the_middle(r):
    r.set("s", "notanumber")
    with r.pipeline(transaction=False) as p:
        p.set("a", "1")
        p.incr("s")
        p.execute_command("NOSUCHCOMMAND", "x")
        p.get("a")
        p.execute_command("GET")
        p.incr("a")
        replies = p.execute(raise_on_error=False)
    assert replies[0] is True
    assert isinstance(replies[1], redis.ResponseError)
    assert str(replies[1]) == "value is not an integer or out of range"
    assert isinstance(replies[2], redis.ResponseError)
    assert replies[3] == b"1"
    assert isinstance(replies[4], redis.ResponseError)
    assert replies[5] == 2


def test_pipeline_large_replies(server, r):
    """Replies much larger than the socket buffers while the client is still writing."""
    value = b"x" * 10000
    r.set("big", value)
    n = 3000
    with server.raw(timeout=60) as conn:
        conn.send(RespConn.encode("GET", "big") * n)
        for _ in range(n):
            assert conn.read_reply()[1] == value
