"""List commands: RESP2/RESP3 reply shapes, LMOVE/RPOPLPUSH/LMPOP across shards (atomic, with
WRONGTYPE checked before anything moves), WATCH, and a 10,000-element list checked against a
Python model. Error texts and semantics are Redis 7.0.15's."""

import random
import threading

import pytest
import redis

WRONGTYPE = b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"
SYNTAX = b"-ERR syntax error\r\n"
NOT_INT = b"-ERR value is not an integer or out of range\r\n"


def hello3(raw):
    reply = raw.call("HELLO", "3")
    assert reply[b"proto"] == 3


def test_push_pop_basic(r):
    assert r.rpush(b"l", b"a", b"b", b"c") == 3
    assert r.lpush(b"l", b"z", b"y") == 5  # y z a b c
    assert r.lrange(b"l", 0, -1) == [b"y", b"z", b"a", b"b", b"c"]
    assert r.lpop(b"l") == b"y"
    assert r.rpop(b"l") == b"c"
    assert r.lpop(b"l", 2) == [b"z", b"a"]
    assert r.rpop(b"l", 10) == [b"b"]
    assert r.exists(b"l") == 0  # an emptied list is deleted
    assert r.lpushx(b"l", b"x") == 0
    assert r.exists(b"l") == 0
    assert r.type(b"l") == b"none"
    r.rpush(b"l", b"1")
    assert r.type(b"l") == b"list"
    assert r.execute_command("RPUSHX", b"l", b"2", b"3") == 3
    assert r.llen(b"l") == 3


def test_integers_round_trip(r):
    values = [b"0", b"31", b"-1", b"128", b"-129", b"65536", b"9223372036854775807",
              b"-9223372036854775808", b"007", b"-0", b"+1", b" 1", b"1.0", b"18446744073709551616"]
    r.rpush(b"l", *values)
    assert r.lrange(b"l", 0, -1) == values
    assert [r.lindex(b"l", i) for i in range(len(values))] == values


def test_pop_reply_shapes_resp2(raw):
    raw.call("RPUSH", "l", "a", "b")
    assert raw.call_raw("LPOP", "missing") == b"$-1\r\n"
    assert raw.call_raw("LPOP", "missing", "2") == b"*-1\r\n"
    assert raw.call_raw("LPOP", "missing", "0") == b"*-1\r\n"
    assert raw.call_raw("LPOP", "l", "0") == b"*0\r\n"
    assert raw.call_raw("RPOP", "l", "1") == b"*1\r\n$1\r\nb\r\n"
    assert raw.call_raw("LPOP", "l") == b"$1\r\na\r\n"
    assert raw.call_raw("LPOP", "l", "-1") == b"-ERR value is out of range, must be positive\r\n"
    assert raw.call_raw("LPOP", "l", "x") == b"-ERR value is out of range, must be positive\r\n"
    assert raw.call_raw("LPOP", "l", "1", "2") == \
        b"-ERR wrong number of arguments for 'lpop' command\r\n"
    assert raw.call_raw("LMPOP", "2", "missing", "l", "LEFT") == b"*-1\r\n"
    assert raw.call_raw("LPOS", "missing", "a") == b"$-1\r\n"
    assert raw.call_raw("LPOS", "missing", "a", "COUNT", "0") == b"*0\r\n"
    assert raw.call_raw("LINDEX", "missing", "0") == b"$-1\r\n"
    assert raw.call_raw("LMOVE", "missing", "d", "LEFT", "RIGHT") == b"$-1\r\n"
    assert raw.call_raw("RPOPLPUSH", "missing", "d") == b"$-1\r\n"


def test_pop_reply_shapes_resp3(raw):
    hello3(raw)
    raw.call("RPUSH", "l", "a", "b", "c")
    assert raw.call_raw("LPOP", "missing") == b"_\r\n"
    assert raw.call_raw("LPOP", "missing", "2") == b"_\r\n"
    assert raw.call_raw("LPOP", "l", "0") == b"*0\r\n"
    assert raw.call_raw("LPOP", "l", "2") == b"*2\r\n$1\r\na\r\n$1\r\nb\r\n"
    assert raw.call_raw("LMPOP", "1", "missing", "RIGHT") == b"_\r\n"
    assert raw.call_raw("LPOS", "l", "zz") == b"_\r\n"
    assert raw.call_raw("LPOS", "l", "zz", "COUNT", "1") == b"*0\r\n"
    assert raw.call_raw("LINDEX", "l", "5") == b"_\r\n"
    assert raw.call_raw("LMOVE", "missing", "d", "LEFT", "RIGHT") == b"_\r\n"
    assert raw.call_raw("LMPOP", "2", "missing", "l", "LEFT", "COUNT", "5") == \
        b"*2\r\n$1\r\nl\r\n*1\r\n$1\r\nc\r\n"
    assert raw.call_raw("EXISTS", "l") == b":0\r\n"


def test_errors(raw):
    raw.call("RPUSH", "l", "a", "b", "c", "a")
    raw.call("SET", "s", "x")
    assert raw.call_raw("LSET", "missing", "0", "x") == b"-ERR no such key\r\n"
    assert raw.call_raw("LSET", "l", "10", "x") == b"-ERR index out of range\r\n"
    assert raw.call_raw("LSET", "l", "x", "x") == NOT_INT
    assert raw.call_raw("LINSERT", "l", "middle", "a", "x") == SYNTAX
    assert raw.call_raw("LINSERT", "l", "before", "zz", "x") == b":-1\r\n"
    assert raw.call_raw("LINSERT", "missing", "before", "a", "x") == b":0\r\n"
    assert raw.call_raw("LPOS", "l", "a", "RANK", "0") == (
        b"-ERR RANK can't be zero: use 1 to start from the first match, 2 from the second ... "
        b"or use negative to start from the end of the list\r\n")
    assert raw.call_raw("LPOS", "l", "a", "COUNT", "-1") == b"-ERR COUNT can't be negative\r\n"
    assert raw.call_raw("LPOS", "l", "a", "MAXLEN", "x") == b"-ERR MAXLEN can't be negative\r\n"
    assert raw.call_raw("LPOS", "l", "a", "RANK") == SYNTAX
    # Options are parsed before the key is looked up.
    assert raw.call_raw("LPOS", "s", "a", "COUNT", "-1") == b"-ERR COUNT can't be negative\r\n"
    assert raw.call_raw("LPOS", "s", "a") == WRONGTYPE
    assert raw.call_raw("LMPOP", "0", "l", "LEFT") == b"-ERR numkeys should be greater than 0\r\n"
    assert raw.call_raw("LMPOP", "x", "l", "LEFT") == b"-ERR numkeys should be greater than 0\r\n"
    assert raw.call_raw("LMPOP", "1", "l", "LEFT", "COUNT", "0") == \
        b"-ERR count should be greater than 0\r\n"
    assert raw.call_raw("LMPOP", "1", "l", "UP") == SYNTAX
    assert raw.call_raw("LMPOP", "3", "l", "LEFT") == SYNTAX
    assert raw.call_raw("LMPOP", "1", "l", "LEFT", "COUNT", "1", "COUNT", "1") == SYNTAX
    assert raw.call_raw("LMOVE", "l", "d", "UP", "LEFT") == SYNTAX
    assert raw.call_raw("LRANGE", "s", "0", "1") == WRONGTYPE
    assert raw.call_raw("LRANGE", "s", "x", "1") == NOT_INT
    for cmd in (["LPUSH", "s", "a"], ["RPUSHX", "s", "a"], ["LPOP", "s"], ["LLEN", "s"],
                ["LINDEX", "s", "0"], ["LREM", "s", "0", "a"], ["LTRIM", "s", "0", "1"],
                ["LINSERT", "s", "before", "a", "b"], ["LSET", "s", "0", "a"]):
        assert raw.call_raw(*cmd) == WRONGTYPE, cmd
    assert raw.call("GET", "s") == b"x"


def test_lpos(r):
    r.rpush(b"l", b"a", b"b", b"c", b"1", b"2", b"3", b"c", b"c")
    assert r.lpos(b"l", b"c") == 2
    assert r.lpos(b"l", b"c", rank=2) == 6
    assert r.lpos(b"l", b"c", rank=-1) == 7
    assert r.lpos(b"l", b"c", count=0) == [2, 6, 7]
    assert r.lpos(b"l", b"c", count=2, rank=-1) == [7, 6]
    assert r.lpos(b"l", b"c", count=0, maxlen=3) == [2]
    assert r.lpos(b"l", b"c", count=0, maxlen=2, rank=-1) == [7, 6]
    assert r.lpos(b"l", b"x") is None
    assert r.lpos(b"l", b"1") == 3
    # RANK -9223372036854775808: see test_compat72.py (Redis 7.2 refuses it).


def test_lrem_ltrim_delete_the_key(r):
    r.rpush(b"l", b"a", b"a", b"b", b"a")
    assert r.lrem(b"l", -2, b"a") == 2
    assert r.lrange(b"l", 0, -1) == [b"a", b"b"]
    assert r.lrem(b"l", 0, b"a") == 1
    assert r.lrem(b"l", 0, b"b") == 1
    assert r.exists(b"l") == 0
    r.rpush(b"l", b"a", b"b")
    assert r.ltrim(b"l", 5, 10) is True
    assert r.exists(b"l") == 0


def keys_pairs(n=24):
    """Key pairs spread over the shards (the shard of a key is a seeded hash, so with 2 or 4
    threads many of these pairs live on different shards)."""
    return [(f"src:{i}".encode(), f"dst:{i}".encode()) for i in range(n)]


def test_lmove_across_shards(r, server):
    for src, dst in keys_pairs():
        r.rpush(src, b"1", b"2", b"3")
        r.rpush(dst, b"x")
        assert r.lmove(src, dst, "LEFT", "RIGHT") == b"1"
        assert r.lmove(src, dst, "RIGHT", "LEFT") == b"3"
        assert r.rpoplpush(src, dst) == b"2"
        assert r.exists(src) == 0
        assert r.lrange(dst, 0, -1) == [b"2", b"3", b"x", b"1"]
        assert r.lmove(src, dst, "LEFT", "LEFT") is None
        # A missing destination is created.
        assert r.lmove(dst, src, "LEFT", "LEFT") == b"2"
        assert r.lrange(src, 0, -1) == [b"2"]


def test_lmove_wrongtype_destination_pops_nothing(r, raw):
    for src, dst in keys_pairs():
        r.rpush(src, b"a", b"b")
        r.set(dst, b"string")
        assert raw.call_raw("LMOVE", src, dst, "LEFT", "RIGHT") == WRONGTYPE
        assert raw.call_raw("RPOPLPUSH", src, dst) == WRONGTYPE
        assert r.lrange(src, 0, -1) == [b"a", b"b"]
        assert r.get(dst) == b"string"
        # The source's type is checked first; a missing source wins over everything.
        assert raw.call_raw("LMOVE", dst, src, "LEFT", "RIGHT") == WRONGTYPE
        assert raw.call_raw("LMOVE", b"nosuch" + src, dst, "LEFT", "RIGHT") == b"$-1\r\n"


def test_lmove_same_key_rotates(r):
    r.rpush(b"l", b"a", b"b", b"c")
    assert r.lmove(b"l", b"l", "LEFT", "RIGHT") == b"a"
    assert r.lrange(b"l", 0, -1) == [b"b", b"c", b"a"]
    assert r.rpoplpush(b"l", b"l") == b"a"
    assert r.lrange(b"l", 0, -1) == [b"a", b"b", b"c"]
    r.rpush(b"one", b"x")
    assert r.lmove(b"one", b"one", "LEFT", "LEFT") == b"x"
    assert r.lrange(b"one", 0, -1) == [b"x"]


def test_lmpop_first_existing_key_decides(r, raw):
    keys = [f"m:{i}".encode() for i in range(12)]
    r.rpush(keys[7], b"a", b"b", b"c")
    r.rpush(keys[9], b"z")
    assert r.execute_command("LMPOP", len(keys), *keys, "LEFT") == [keys[7], [b"a"]]
    assert r.execute_command("LMPOP", len(keys), *keys, "RIGHT", "COUNT", 10) == \
        [keys[7], [b"c", b"b"]]
    assert r.exists(keys[7]) == 0
    r.set(keys[3], b"s")
    assert raw.call_raw("LMPOP", len(keys), *keys, "LEFT") == WRONGTYPE
    assert r.llen(keys[9]) == 1
    r.delete(keys[3])
    assert r.execute_command("LMPOP", len(keys), *keys, "LEFT", "COUNT", 3) == [keys[9], [b"z"]]
    assert r.execute_command("LMPOP", len(keys), *keys, "LEFT") is None


def test_watch_sees_lmove_on_both_keys(server):
    for src, dst in keys_pairs(6):
        c = server.client()
        c.rpush(src, b"a")
        c.rpush(dst, b"b")
        for watched in (src, dst):
            other = server.client()
            pipe = c.pipeline()
            pipe.watch(watched)
            if c.llen(src) > 0:
                other.lmove(src, dst, "LEFT", "LEFT")
            else:
                other.lmove(dst, src, "LEFT", "LEFT")
            pipe.multi()
            pipe.llen(watched)
            with pytest.raises(redis.WatchError):
                pipe.execute()
            other.close()
        c.delete(src, dst)
        c.close()


def test_multi_exec_with_list_commands(r):
    src, dst = b"{x}src", b"other-dst"
    r.rpush(src, b"1", b"2", b"3")
    pipe = r.pipeline(transaction=True)
    pipe.lmove(src, dst, "LEFT", "RIGHT")
    pipe.rpoplpush(src, dst)
    pipe.execute_command("LMPOP", 2, b"nokey", src, "LEFT")
    pipe.lrange(dst, 0, -1)
    assert pipe.execute() == [b"1", b"3", [src, [b"2"]], [b"3", b"1"]]
    assert r.exists(src) == 0


def test_lmove_concurrent_is_atomic(server):
    """Clients move elements back and forth between two lists (on different shards when the
    hash says so) while another checks in MULTI/EXEC that none is ever lost or doubled."""
    n = 300
    pairs = keys_pairs(4)
    c = server.client()
    for a, b in pairs:
        c.delete(a, b)
        c.rpush(a, *range(n))
    stop = threading.Event()
    errors = []

    def mover(seed):
        rng = random.Random(seed)
        cl = server.client()
        try:
            for _ in range(400):
                a, b = rng.choice(pairs)
                if rng.random() < 0.5:
                    a, b = b, a
                cl.lmove(a, b, rng.choice(["LEFT", "RIGHT"]), rng.choice(["LEFT", "RIGHT"]))
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)
        finally:
            cl.close()

    def checker():
        cl = server.client()
        try:
            while not stop.is_set():
                for a, b in pairs:
                    pipe = cl.pipeline(transaction=True)
                    pipe.llen(a)
                    pipe.llen(b)
                    la, lb = pipe.execute()
                    if la + lb != n:
                        errors.append(AssertionError(f"{a}+{b} hold {la}+{lb} != {n}"))
        except Exception as e:  # noqa: BLE001
            errors.append(e)
        finally:
            cl.close()

    movers = [threading.Thread(target=mover, args=(s,)) for s in range(4)]
    check = threading.Thread(target=checker)
    check.start()
    for t in movers:
        t.start()
    for t in movers:
        t.join()
    stop.set()
    check.join()
    assert not errors, errors[:3]
    for a, b in pairs:
        items = c.lrange(a, 0, -1) + c.lrange(b, 0, -1)
        assert sorted(int(x) for x in items) == list(range(n))
    c.close()


def test_big_list_against_model(r):
    """10,000 elements (many nodes): random LRANGE/LINDEX/LSET/LINSERT/LREM/LTRIM/pushes/pops
    against a Python list."""
    rng = random.Random(1234)
    key = b"big"
    words = [b"w%d" % i for i in range(40)] + [b"17", b"-3", b"x" * 200, b""]
    model = [rng.choice(words) + b":%d" % i if rng.random() < 0.5 else rng.choice(words)
             for i in range(10000)]
    for i in range(0, len(model), 1000):
        r.rpush(key, *model[i:i + 1000])
    assert r.llen(key) == len(model)

    def norm_range(start, stop):
        n = len(model)
        if start < 0:
            start += n
        if stop < 0:
            stop += n
        start = max(start, 0)
        if start > stop or start >= n:
            return []
        return model[start:min(stop, n - 1) + 1]

    for step in range(600):
        op = rng.random()
        n = len(model)
        if op < 0.2:
            start = rng.randint(-n - 5, n + 5)
            stop = start + rng.randint(-5, 400) if rng.random() < 0.8 else rng.randint(-n, n)
            assert r.lrange(key, start, stop) == norm_range(start, stop), step
        elif op < 0.35:
            i = rng.randint(-n - 2, n + 1)
            want = model[i] if -n <= i < n else None
            assert r.lindex(key, i) == want, step
        elif op < 0.5:
            i = rng.randint(-n, n - 1)
            v = rng.choice(words) + b"!%d" % step
            assert r.lset(key, i, v) is True
            model[i] = v
        elif op < 0.62:
            pivot = rng.choice(model) if rng.random() < 0.8 else b"nope"
            v = rng.choice(words)
            where = rng.choice(["BEFORE", "AFTER"])
            got = r.linsert(key, where, pivot, v)
            if pivot in model:
                j = model.index(pivot)
                model.insert(j + 1 if where == "AFTER" else j, v)
                assert got == len(model), step
            else:
                assert got == -1, step
        elif op < 0.74:
            v = rng.choice(words)
            count = rng.choice([0, 1, 2, 5, -1, -3])
            idx = [j for j, x in enumerate(model) if x == v]
            if count > 0:
                idx = idx[:count]
            elif count < 0:
                idx = idx[count:]
            for j in reversed(idx):
                del model[j]
            assert r.lrem(key, count, v) == len(idx), step
        elif op < 0.8:
            a, b = rng.randint(0, 50), -rng.randint(1, 50)
            assert r.ltrim(key, a, b) is True
            model = norm_range(a, b)
        elif op < 0.9:
            vals = [rng.choice(words) for _ in range(rng.randint(1, 50))]
            if rng.random() < 0.5:
                r.lpush(key, *vals)
                model = vals[::-1] + model
            else:
                r.rpush(key, *vals)
                model = model + vals
        else:
            cnt = rng.randint(1, 60)
            if rng.random() < 0.5:
                assert r.lpop(key, cnt) == model[:cnt], step
                model = model[cnt:]
            else:
                assert r.rpop(key, cnt) == model[::-1][:cnt], step
                model = model[:-cnt]
        if step % 50 == 0:
            assert r.llen(key) == len(model)
    assert r.lrange(key, 0, -1) == model


@pytest.mark.shardis_only
def test_memory_is_compact(r):
    """100,000 small integers cost a few bytes each (packed nodes), and all of it is freed."""
    def used():
        info = r.info("memory")
        return info["used_memory"]

    before = used()
    for i in range(0, 100000, 5000):
        r.rpush(b"ints", *range(i, i + 5000))
    grown = used() - before
    assert grown < 100000 * 6, grown
    r.delete(b"ints")
    assert used() - before < 64 * 1024
