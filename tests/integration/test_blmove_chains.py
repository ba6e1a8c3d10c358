"""Chains of blocked BLMOVE/BRPOPLPUSH (Redis' TCL "Linked LMOVEs", "Circular BRPOPLPUSH",
"Self-referential BRPOPLPUSH"): when the client that pushed gets its reply, every move of the
chain has happened, compared with redis-server. The first tests keep each chain on one shard (keys
share a {hashtag}), where shardis serves the moves in the loop iteration of the push; the cross-shard
tests put each link's source and destination on different shards (with 2 or 4 threads), where the
woken BLMOVE moves in a transaction of its own and the pusher's reply waits for it, so that the
pusher's next (pipelined) commands see the whole chain done, as in Redis."""

from conftest import RespConn, wait_for


def blocked_count(r):
    return r.info("clients")["blocked_clients"]


class Blocked:
    def __init__(self, srv, r, *cmd):
        expected = blocked_count(r) + 1
        self.conn = srv.raw(timeout=30)
        self.conn.send_command(*cmd)
        assert wait_for(lambda: blocked_count(r) == expected, 10), "did not block"

    def reply(self):
        value = self.conn.read_reply()[1]
        self.conn.close()
        return value


def linked(srv, r):
    r.delete("l1{t}", "l2{t}", "l3{t}")
    a = Blocked(srv, r, "BLMOVE", "l1{t}", "l2{t}", "RIGHT", "LEFT", "0")
    b = Blocked(srv, r, "BLMOVE", "l2{t}", "l3{t}", "LEFT", "RIGHT", "0")
    r.rpush("l1{t}", "foo")
    # Read at once after the push's reply: the chain is complete.
    state = [r.lrange(k, 0, -1) for k in ("l1{t}", "l2{t}", "l3{t}")]
    return state, a.reply(), b.reply()


def test_linked_lmoves(r, server, redis_server):
    ours = linked(server, r)
    assert ours == linked(redis_server, redis_server.client())
    assert ours == ([[], [], [b"foo"]], b"foo", b"foo")


def circular(srv, r):
    r.delete("c1{t}", "c2{t}")
    a = Blocked(srv, r, "BRPOPLPUSH", "c1{t}", "c2{t}", "0")
    b = Blocked(srv, r, "BRPOPLPUSH", "c2{t}", "c1{t}", "0")
    r.rpush("c1{t}", "foo")
    state = [r.lrange(k, 0, -1) for k in ("c1{t}", "c2{t}")]
    return state, a.reply(), b.reply()


def test_circular_brpoplpush(r, server, redis_server):
    ours = circular(server, r)
    assert ours == circular(redis_server, redis_server.client())
    assert ours == ([[b"foo"], []], b"foo", b"foo")


def self_referential(srv, r):
    r.delete("s{t}")
    a = Blocked(srv, r, "BRPOPLPUSH", "s{t}", "s{t}", "0")
    r.rpush("s{t}", "a", "b", "c")
    return r.lrange("s{t}", 0, -1), a.reply()


def test_self_referential_brpoplpush(r, server, redis_server):
    ours = self_referential(server, r)
    assert ours == self_referential(redis_server, redis_server.client())
    assert ours == ([b"c", b"a", b"b"], b"c")


def chain_with_wrongtype(srv, r):
    # The first waiter's destination is a string: it gets WRONGTYPE and the element goes on to
    # the next waiter of the source, whose move feeds a third one.
    r.delete("w1{t}", "w2{t}", "w3{t}", "ws{t}")
    r.set("ws{t}", "x")
    a = Blocked(srv, r, "BLMOVE", "w1{t}", "ws{t}", "LEFT", "LEFT", "0")
    b = Blocked(srv, r, "BLMOVE", "w1{t}", "w2{t}", "LEFT", "LEFT", "0")
    c = Blocked(srv, r, "BLMPOP", "0", "1", "w2{t}", "LEFT")
    r.lpush("w1{t}", "v")
    state = [r.exists("w1{t}"), r.exists("w2{t}")]
    return state, a.reply(), b.reply(), c.reply()


def test_chain_past_a_wrongtype_destination(r, server, redis_server):
    ours = chain_with_wrongtype(server, r)
    theirs = chain_with_wrongtype(redis_server, redis_server.client())
    assert type(ours[1]).__name__ == type(theirs[1]).__name__ == "Error"
    assert ours[0] == theirs[0] == [0, 0]
    assert ours[2:] == theirs[2:] == (b"v", [b"w2{t}", [b"v"]])


def test_long_chain_with_many_waiters(r, server):
    # Ten links, each waited on by a BLMOVE; one push runs the whole chain before its reply.
    waiters = [Blocked(server, r, "BLMOVE", f"n{i}{{t}}", f"n{i + 1}{{t}}", "LEFT", "RIGHT", "0")
               for i in range(10)]
    r.rpush("n0{t}", "x")
    assert [r.llen(f"n{i}{{t}}") for i in range(11)] == [0] * 10 + [1]
    assert [w.reply() for w in waiters] == [b"x"] * 10


# --- Chains across shards.

def shard_keys(r) -> list[int]:
    """The keys of each shard (INFO shards); one entry on redis-server."""
    info = r.info("shards")
    if "shard0" not in info:
        return [0]
    return [info[f"shard{i}"]["keys"] for i in range(info["threads"])]


def shard_of(r, key) -> int:
    before = shard_keys(r)
    r.set(key, 1)
    after = shard_keys(r)
    r.delete(key)
    return next((i for i, (b, a) in enumerate(zip(before, after)) if a > b), 0)


def cross_shard_names(r, prefix, n):
    """n key names, each on another shard than the one before it (all on one with one thread)."""
    names, i = [], 0
    while len(names) < n:
        name = f"{prefix}{i}"
        i += 1
        if not names or len(shard_keys(r)) == 1 or shard_of(r, name) != shard_of(r, names[-1]):
            names.append(name)
    return names


def pipelined(srv, *commands):
    """Sends the commands in one write on a fresh connection; returns their replies."""
    with RespConn(srv.port, timeout=30) as c:
        c.send(b"".join(RespConn.encode(*cmd) for cmd in commands))
        return [c.read_reply()[1] for _ in commands]


ROUNDS = 20  # the in-between state showed in every round before the fix


def cross_linked(srv, r, names):
    k1, k2, k3 = names
    rounds = []
    for _ in range(ROUNDS):
        r.delete(k1, k2, k3)
        a = Blocked(srv, r, "BLMOVE", k1, k2, "RIGHT", "LEFT", "0")
        b = Blocked(srv, r, "BLMOVE", k2, k3, "LEFT", "RIGHT", "0")
        replies = pipelined(srv, ("RPUSH", k1, "foo"), ("LRANGE", k1, 0, -1),
                            ("LRANGE", k2, 0, -1), ("LRANGE", k3, 0, -1))
        rounds.append((replies, a.reply(), b.reply()))
    return rounds


def test_linked_lmoves_across_shards(r, server, redis_server):
    """The push's pipelined LRANGEs see the element only at the end of the chain."""
    ours = cross_linked(server, r, cross_shard_names(r, "xl", 3))
    theirs = cross_linked(redis_server, redis_server.client(), ["xl0", "xl1", "xl2"])
    expected = [([1, [], [], [b"foo"]], b"foo", b"foo")] * ROUNDS
    assert theirs == expected
    assert ours == expected


def cross_circular(srv, r, names):
    c1, c2 = names
    rounds = []
    for _ in range(ROUNDS):
        r.delete(c1, c2)
        a = Blocked(srv, r, "BRPOPLPUSH", c1, c2, "0")
        b = Blocked(srv, r, "BRPOPLPUSH", c2, c1, "0")
        replies = pipelined(srv, ("RPUSH", c1, "foo"), ("LRANGE", c1, 0, -1),
                            ("LRANGE", c2, 0, -1))
        rounds.append((replies, a.reply(), b.reply()))
    return rounds


def test_circular_brpoplpush_across_shards(r, server, redis_server):
    ours = cross_circular(server, r, cross_shard_names(r, "xc", 2))
    theirs = cross_circular(redis_server, redis_server.client(), ["xc0", "xc1"])
    expected = [([1, [b"foo"], []], b"foo", b"foo")] * ROUNDS
    assert theirs == expected
    assert ours == expected


def cross_fed_by(srv, r, names, feed):
    """A BLMOVE from names[1] to names[2], fed by `feed` (commands that push to names[1])."""
    src, dst = names[1], names[2]
    rounds = []
    for _ in range(ROUNDS // 2):
        r.delete(*names)
        r.rpush(names[0], "e")
        a = Blocked(srv, r, "BLMOVE", src, dst, "LEFT", "LEFT", "0")
        replies = pipelined(srv, *feed, ("LRANGE", src, 0, -1), ("LRANGE", dst, 0, -1))
        rounds.append((replies[-2:], a.reply()))
    return rounds


def test_exec_and_lmove_wait_for_the_moves_they_trigger(r, server, redis_server):
    """EXEC with a push, and LMOVE, as pushers: their next commands see the move done."""
    ours_names = cross_shard_names(r, "xe", 3)
    for names, srv, client in ((ours_names, server, r),
                               (["xe0", "xe1", "xe2"], redis_server, redis_server.client())):
        via_exec = cross_fed_by(srv, client, names,
                                [("MULTI",), ("LPUSH", names[1], "e"), ("EXEC",)])
        via_lmove = cross_fed_by(srv, client, names,
                                 [("LMOVE", names[0], names[1], "LEFT", "LEFT")])
        expected = [([[], [b"e"]], b"e")] * (ROUNDS // 2)
        assert via_exec == expected, srv
        assert via_lmove == expected, srv
