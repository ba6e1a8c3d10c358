"""What the scripting tests share: the reference redis-server's client (`ref`, flushed, its script
cache too), the data the reply cases read, and running one script on both servers for their raw
replies. The reply cases run against one server with --threads 2 (`one_server`, `one`): a
script's reply does not depend on the thread count, and with two threads the cases' keys live on
both shards, so both the local run and the run on the keys' thread are covered."""

import pytest

from conftest import start_target


@pytest.fixture(scope="module")
def one_server(tmp_path_factory):
    srv = start_target(tmp_path_factory.mktemp("scripting"), threads=2)
    yield srv
    srv.stop_and_check()


@pytest.fixture
def one(one_server):
    """A client of `one_server`, flushed."""
    c = one_server.client()
    c.flushall()
    yield c
    c.close()


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


__all__ = ["assert_same_reply", "fill", "one", "one_server", "raw_eval", "ref"]
