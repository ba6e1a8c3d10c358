"""What the scripting tests share: the reference redis-server's client (`ref`, flushed, its script
cache too), the data the reply cases read, and running one script on both servers for their raw
replies."""

import pytest


@pytest.fixture
def ref(redis_server):
    c = redis_server.client()
    c.flushall()
    c.script_flush()
    yield c
    c.close()


def fill(c):
    c.hset("h", mapping={"f1": "v1", "f2": "2"})
    c.sadd("s1", "a")
    c.zadd("z", {"m": 1.5, "n": 2})
    c.set("fl", "1.5")


def raw_eval(srv, script, keys, args, resp3=False):
    conn = srv.raw()
    try:
        if resp3:
            conn.call("HELLO", "3")
        return conn.call_raw("EVAL", script, len(keys), *keys, *args)
    finally:
        conn.close()


def assert_same_reply(server, r, redis_server, ref, case, resp3):
    """The case (script, keys, args) on both servers, on the same data: equal raw replies."""
    script, keys, args = case
    fill(r)
    fill(ref)
    assert raw_eval(server, script, keys, args, resp3) == \
        raw_eval(redis_server, script, keys, args, resp3)


__all__ = ["assert_same_reply", "fill", "raw_eval", "ref"]
