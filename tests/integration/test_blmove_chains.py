"""Chains of blocked BLMOVE/BRPOPLPUSH (Redis' TCL "Linked LMOVEs", "Circular BRPOPLPUSH",
"Self-referential BRPOPLPUSH"): when the client that pushed gets its reply, every move of the
chain has happened, compared with redis-server. Keys share a {hashtag}, so each chain lives on one
shard, where shardis serves the moves in the loop iteration of the push; across shards a woken
BLMOVE still moves after the pusher's reply (docs/compatibility.md)."""

from conftest import wait_for


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
