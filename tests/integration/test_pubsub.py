"""Pub/sub across threads (the `server` fixture runs each test with --threads 1, 2 and 4, and
connections land on different threads): SUBSCRIBE/PSUBSCRIBE/UNSUBSCRIBE/PUNSUBSCRIBE, PUBLISH's
receiver count, PUBSUB CHANNELS/NUMSUB/NUMPAT, RESP2 subscribed-context rules, RESP3 pushes, and
the output limit that disconnects a subscriber who does not read."""

import socket
import time

import pytest

from conftest import Error, Push, wait_for


def subscribers(server, n):
    conns = [server.raw() for _ in range(n)]
    for c in conns:
        assert c.call("SUBSCRIBE", "news", "sport") == [b"subscribe", b"news", 1]
        assert c.read_reply()[1] == [b"subscribe", b"sport", 2]
    return conns


def test_publish_reaches_every_thread(r, server):
    subs = subscribers(server, 8)  # spread over the threads by the kernel
    psub = server.raw()
    assert psub.call("PSUBSCRIBE", "n*") == [b"psubscribe", b"n*", 1]
    assert r.publish("news", "hello") == 9
    for c in subs:
        assert c.read_reply()[1] == [b"message", b"news", b"hello"]
    assert psub.read_reply()[1] == [b"pmessage", b"n*", b"news", b"hello"]
    assert r.publish("nothing-here", "x") == 1  # the pattern
    assert psub.read_reply()[1] == [b"pmessage", b"n*", b"nothing-here", b"x"]
    assert r.publish("sport", "goal") == 8
    assert r.pubsub_numsub("news", "sport", "none") == [(b"news", 8), (b"sport", 8), (b"none", 0)]
    assert r.pubsub_numpat() == 1
    assert sorted(r.pubsub_channels()) == [b"news", b"sport"]
    assert r.pubsub_channels("s*") == [b"sport"]
    for c in subs + [psub]:
        c.close()
    # Closed subscribers leave nothing behind, on any thread.
    assert wait_for(lambda: r.publish("news", "x") == 0, 5)
    assert wait_for(lambda: r.pubsub_numpat() == 0, 5)
    assert r.pubsub_channels() == []


def test_subscribed_resp2_context(r, server):
    c = server.raw()
    assert c.call("SUBSCRIBE", "a") == [b"subscribe", b"a", 1]
    assert c.call_raw("GET", "x") == (b"-ERR Can't execute 'get': only (P|S)SUBSCRIBE / "
                                      b"(P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in "
                                      b"this context\r\n")
    assert c.call_raw("PING") == b"*2\r\n$4\r\npong\r\n$0\r\n\r\n"
    assert c.call_raw("PING", "m") == b"*2\r\n$4\r\npong\r\n$1\r\nm\r\n"
    assert c.call("PSUBSCRIBE", "p1", "p2") == [b"psubscribe", b"p1", 2]
    assert c.read_reply()[1] == [b"psubscribe", b"p2", 3]
    assert c.call("UNSUBSCRIBE") == [b"unsubscribe", b"a", 2]
    assert c.call("PUNSUBSCRIBE", "p2", "never") == [b"punsubscribe", b"p2", 1]
    assert c.read_reply()[1] == [b"punsubscribe", b"never", 1]
    assert c.call("PUNSUBSCRIBE") == [b"punsubscribe", b"p1", 0]
    assert c.call_raw("UNSUBSCRIBE") == b"*3\r\n$11\r\nunsubscribe\r\n$-1\r\n:0\r\n"
    assert c.call("GET", "x") is None  # out of subscribed state again
    c.close()


def test_resp3_pushes_and_commands(r, server):
    c = server.raw()
    c.call("HELLO", "3")
    reply = c.call("SUBSCRIBE", "ch")
    assert isinstance(reply, Push) and reply == [b"subscribe", b"ch", 1]
    assert c.call("SET", "k", "v") == b"OK"  # RESP3 subscribers may run any command
    assert r.publish("ch", "payload") == 1
    msg = c.read_reply()[1]
    assert isinstance(msg, Push) and msg == [b"message", b"ch", b"payload"]
    assert c.call("GET", "k") == b"v"
    c.close()


@pytest.mark.parametrize("protocol", [2, 3])
def test_subscription_pushes_ignore_client_reply_off(r, server, protocol):
    """TCL unit/pubsub "PubSub messages with CLIENT REPLY OFF": confirmations and messages are
    pushes, sent under CLIENT REPLY OFF or SKIP; other replies (errors included) are not."""
    c = server.raw()
    c.call("HELLO", str(protocol))
    c.send(c.encode("CLIENT", "REPLY", "OFF") + c.encode("SUBSCRIBE", "ch") +
           c.encode("PSUBSCRIBE", "c*") + c.encode("SUBSCRIBE"))
    assert c.read_reply()[1] == [b"subscribe", b"ch", 1]
    assert c.read_reply()[1] == [b"psubscribe", b"c*", 2]
    assert r.publish("ch", "hello") == 2
    assert c.read_reply()[1] == [b"message", b"ch", b"hello"]
    assert c.read_reply()[1] == [b"pmessage", b"c*", b"ch", b"hello"]
    c.send(c.encode("UNSUBSCRIBE", "ch") + c.encode("PUNSUBSCRIBE", "c*") +
           c.encode("CLIENT", "REPLY", "ON"))
    assert c.read_reply()[1] == [b"unsubscribe", b"ch", 1]
    assert c.read_reply()[1] == [b"punsubscribe", b"c*", 0]
    assert c.read_reply()[1] == b"OK"
    c.send(c.encode("CLIENT", "REPLY", "SKIP") + c.encode("SUBSCRIBE", "x") +
           c.encode("UNSUBSCRIBE", "x") + c.encode("PING"))
    assert c.read_reply()[1] == [b"subscribe", b"x", 1]
    assert c.read_reply()[1] == [b"unsubscribe", b"x", 0]
    assert c.read_reply()[1] == b"PONG"
    c.close()


def test_messages_keep_publish_order(r, server):
    c = server.raw()
    c.call("SUBSCRIBE", "seq")
    pub = server.client()
    for i in range(2000):
        pub.publish("seq", str(i))
    for i in range(2000):
        assert c.read_reply()[1] == [b"message", b"seq", str(i).encode()]
    pub.close()
    c.close()


def test_pubsub_errors(raw):
    assert raw.call_raw("PUBLISH", "a") == (
        b"-ERR wrong number of arguments for 'publish' command\r\n")
    assert raw.call_raw("SUBSCRIBE") == (
        b"-ERR wrong number of arguments for 'subscribe' command\r\n")
    assert raw.call("PUBSUB", "FOO").startswith(b"ERR unknown subcommand 'FOO'")
    assert raw.call_raw("PUBSUB", "NUMPAT", "x").startswith(b"-ERR wrong number of arguments")


@pytest.mark.shardis_only  # the flag is ours; Redis' own limit has a soft stage
def test_slow_subscriber_is_disconnected(server_factory):
    srv = server_factory(threads=2, args=["--pubsub_output_limit=1000000"])
    slow = socket.create_connection(("127.0.0.1", srv.port))
    slow.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    slow.sendall(b"SUBSCRIBE firehose\r\n")
    time.sleep(0.1)
    pub = srv.client()
    payload = "x" * 10000
    receivers = [pub.publish("firehose", payload) for _ in range(2000)]  # 20 MB, never read
    assert receivers[0] == 1
    # The subscriber was cut off once its backlog passed the limit; the server is fine.
    assert receivers[-1] == 0
    assert pub.ping()
    assert b"firehose" not in b"".join(pub.pubsub_channels())
    slow.close()
    pub.close()
