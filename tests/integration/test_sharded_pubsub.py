"""Sharded pub/sub (SSUBSCRIBE, SUNSUBSCRIBE, SPUBLISH, PUBSUB SHARDCHANNELS / SHARDNUMSUB) against
redis-server 7.0 (which has it): the same sessions on both servers give the same bytes, in RESP2
(the subscribed-state rules, the counts that keep shard channels apart from the others, mixing with
SUBSCRIBE, RESET) and RESP3 (pushes). Subscribers on every thread receive SPUBLISH."""

import pytest

from conftest import RespConn, wait_for


def session_resp2(port):
    """Every reply of a RESP2 subscriber and a publisher, raw, in the order they come."""
    sub, pub = RespConn(port), RespConn(port)
    out = []

    def step(conn, *args, frames=1):
        conn.send_command(*args)
        out.extend(conn.read_reply()[0] for _ in range(frames))

    step(sub, "SSUBSCRIBE", "a", "b", "a", frames=3)
    step(sub, "SUBSCRIBE", "c")
    step(sub, "PSUBSCRIBE", "p*")
    step(sub, "GET", "x")
    step(sub, "PING")
    step(pub, "SPUBLISH", "a", "hello")
    out.append(sub.read_reply()[0])
    step(pub, "PUBLISH", "a", "not for shard subscribers")
    step(pub, "SPUBLISH", "c", "not for channel subscribers")
    step(pub, "SPUBLISH", "pa", "no patterns either")
    step(pub, "PUBLISH", "c", "x")
    out.append(sub.read_reply()[0])
    step(pub, "PUBSUB", "SHARDNUMSUB", "a", "b", "c", "z")
    step(pub, "PUBSUB", "SHARDNUMSUB")
    step(pub, "PUBSUB", "SHARDCHANNELS", "a*")
    step(pub, "PUBSUB", "SHARDCHANNELS", "nothing*")
    step(pub, "PUBSUB", "NUMSUB", "a", "c")
    step(pub, "PUBSUB", "CHANNELS")
    step(pub, "PUBSUB", "SHARDCHANNELS", "a", "b")
    step(sub, "SUNSUBSCRIBE", "a", "z", frames=2)
    step(sub, "UNSUBSCRIBE", "c")
    step(sub, "PUNSUBSCRIBE")
    step(sub, "GET", "x")  # still subscribed to b
    step(sub, "SUNSUBSCRIBE")
    step(sub, "SUNSUBSCRIBE")
    step(sub, "GET", "x")  # out of subscribed state
    step(sub, "SSUBSCRIBE", "a")
    step(sub, "RESET")
    step(pub, "SPUBLISH", "a", "nobody")
    step(pub, "SSUBSCRIBE")
    step(pub, "SPUBLISH", "a")
    for args in (("MULTI",), ("SSUBSCRIBE", "a"), ("SPUBLISH", "a", "m"), ("EXEC",)):
        step(pub, *args)  # refused inside EXEC: no subscribed state afterwards
    step(pub, "GET", "x")
    sub.close()
    pub.close()
    return out


def session_resp3(port):
    sub, pub = RespConn(port), RespConn(port)
    out = []
    sub.call("HELLO", "3")
    for args, frames in ((("SSUBSCRIBE", "a", "b"), 2), (("GET", "x"), 1),
                         (("SUBSCRIBE", "c"), 1)):
        sub.send_command(*args)
        out.extend(sub.read_reply()[0] for _ in range(frames))
    out.append(pub.call_raw("SPUBLISH", "b", "hi"))
    out.append(sub.read_reply()[0])
    sub.send_command("SUNSUBSCRIBE", "b", "a")  # named: "all" goes in no fixed order
    out.extend(sub.read_reply()[0] for _ in range(2))
    out.append(pub.call_raw("PUBSUB", "SHARDNUMSUB", "a"))
    sub.close()
    pub.close()
    return out


@pytest.mark.parametrize("session", [session_resp2, session_resp3])
def test_sessions_match_redis(r, server, redis_server, session):
    RespConn(redis_server.port).call("FLUSHALL")
    assert session(server.port) == session(redis_server.port)


def test_pubsub_help_matches_redis(raw, redis_server):
    with redis_server.raw() as ref:
        assert raw.call_raw("PUBSUB", "HELP") == ref.call_raw("PUBSUB", "HELP")


def test_spublish_reaches_every_thread(r, server):
    subs = [server.raw() for _ in range(8)]  # spread over the threads by the kernel
    for c in subs:
        assert c.call("SSUBSCRIBE", "orders") == [b"ssubscribe", b"orders", 1]
    pub = server.raw()
    assert pub.call("SPUBLISH", "orders", "o1") == 8
    for c in subs:
        assert c.read_reply()[1] == [b"smessage", b"orders", b"o1"]
    assert pub.call("PUBSUB", "SHARDNUMSUB", "orders") == [b"orders", 8]
    assert pub.call("PUBSUB", "SHARDCHANNELS") == [b"orders"]
    for c in subs:
        c.close()
    # Closed subscribers leave nothing behind, on any thread.
    assert wait_for(lambda: pub.call("SPUBLISH", "orders", "x") == 0, 5)
    assert pub.call("PUBSUB", "SHARDCHANNELS") == []
    pub.close()


def test_client_list_counts_shard_subscriptions(r, server):
    c = server.raw()
    c.call("HELLO", "3")
    c.send_command("SSUBSCRIBE", "s1", "s2")
    c.read_reply()
    c.read_reply()
    line = c.call("CLIENT", "INFO").decode()
    assert " ssub=2 " in line and " sub=0 " in line and "flags=P" in line
    c.close()


def test_info_counts_match_redis(r, server, redis_server):
    def counts(srv):
        subs = [srv.raw() for _ in range(4)]
        for i, c in enumerate(subs):
            c.send_command("SSUBSCRIBE", "a", f"s{i}")
            c.read_reply()
            c.read_reply()
            c.call("SUBSCRIBE", "c")
            c.call("PSUBSCRIBE", "p*")
        with srv.raw() as q:
            info = q.call("INFO", "stats").decode()
        for c in subs:
            c.close()
        return [line for line in info.split("\r\n") if line.startswith("pubsub")]

    assert counts(server) == counts(redis_server) == [
        "pubsub_channels:1", "pubsub_patterns:1", "pubsubshard_channels:5"]
