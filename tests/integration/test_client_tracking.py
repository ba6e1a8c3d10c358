"""Client-side caching: CLIENT TRACKING / CACHING / GETREDIR / TRACKINGINFO and invalidations.

Every test runs with --threads 1, 2 and 4; keys with different hashtags land on different shards
and connections on different threads, so invalidations cross threads. The tests also pass against
redis-server (SHARDIS_TEST_TARGET=redis), which checks them.
"""

from __future__ import annotations

import time

import pytest

from conftest import Error, Push, RespConn, wait_for

INVALIDATE_CHANNEL = b"__redis__:invalidate"


def resp3(server) -> RespConn:
    c = server.raw()
    c.call("HELLO", "3")
    return c


def client_id(c: RespConn) -> int:
    return c.call("CLIENT", "ID")


def subscribed_redirect(server) -> tuple[RespConn, int]:
    """A RESP2 connection subscribed to __redis__:invalidate, and its id."""
    c = server.raw()
    cid = client_id(c)
    assert c.call("SUBSCRIBE", INVALIDATE_CHANNEL) == [b"subscribe", INVALIDATE_CHANNEL, 1]
    return c, cid


def next_push(c: RespConn):
    """The next message on c, which must be a push (RESP3 invalidation)."""
    _, value = c.read_reply()
    assert isinstance(value, Push), value
    return list(value)


def next_invalidated(c: RespConn) -> list[bytes] | None:
    """The keys of the next __redis__:invalidate message on a subscribed RESP2 connection."""
    _, value = c.read_reply()
    assert value[:2] == [b"message", INVALIDATE_CHANNEL], value
    return value[2]


def assert_no_message(c: RespConn):
    """Nothing is waiting on c: the reply to PING comes first (give strays time to arrive)."""
    time.sleep(0.05)
    assert c.call("PING") in (b"PONG", [b"pong", b""])


KEYS = [f"key:{i}:{{h{i}}}".encode() for i in range(8)]  # spread over the shards


def test_resp3_invalidation_once_per_read(server, r):
    reader = resp3(server)
    assert reader.call("CLIENT", "TRACKING", "on") == b"OK"
    r.set(KEYS[0], b"1")
    assert reader.call("GET", KEYS[0]) == b"1"
    r.set(KEYS[0], b"2")
    assert next_push(reader) == [b"invalidate", [KEYS[0]]]
    # Told once: a second write is not announced until the key is read again.
    r.set(KEYS[0], b"3")
    assert_no_message(reader)
    assert reader.call("GET", KEYS[0]) == b"3"
    r.delete(KEYS[0])
    assert next_push(reader) == [b"invalidate", [KEYS[0]]]
    # A key never read is not announced.
    r.set(KEYS[1], b"x")
    assert_no_message(reader)


def test_every_shard_and_thread_reaches_every_reader(server, r):
    readers = [resp3(server) for _ in range(4)]
    for c in readers:
        assert c.call("CLIENT", "TRACKING", "on") == b"OK"
        for k in KEYS:
            c.call("GET", k)
    for k in KEYS:
        r.set(k, b"v")
    for c in readers:
        got = [next_push(c) for _ in KEYS]
        assert sorted(m[1][0] for m in got) == sorted(KEYS)
        assert all(m[0] == b"invalidate" and len(m[1]) == 1 for m in got)
    assert server.client().info("stats")["tracking_total_keys"] == 0


def test_multi_key_reads_remember_every_key(server, r):
    reader = resp3(server)
    reader.call("CLIENT", "TRACKING", "on")
    r.mset({k: b"1" for k in KEYS[:4]})
    assert reader.call("MGET", *KEYS[:4]) == [b"1"] * 4
    assert reader.call("EXISTS", KEYS[4], KEYS[5]) == 0
    for k in KEYS[:6]:
        r.set(k, b"2")
    got = sorted(next_push(reader)[1][0] for _ in range(6))
    assert got == sorted(KEYS[:6])


def test_redirect_to_resp2_subscriber(server, r):
    redir, redir_id = subscribed_redirect(server)
    tracker = server.raw()  # RESP2: needs the redirect to hear anything
    assert tracker.call("CLIENT", "TRACKING", "on", "REDIRECT", redir_id) == b"OK"
    assert tracker.call("CLIENT", "GETREDIR") == redir_id
    r.set(KEYS[2], b"1")
    r.set(KEYS[3], b"1")
    tracker.call("GET", KEYS[2])
    r.incr(KEYS[3])  # not read: not announced
    r.incr(KEYS[2])
    assert next_invalidated(redir) == [KEYS[2]]
    # Several trackers may share one redirect client.
    other = server.raw()
    other.call("CLIENT", "TRACKING", "on", "REDIRECT", redir_id)
    other.call("GET", KEYS[3])
    r.incr(KEYS[3])
    assert next_invalidated(redir) == [KEYS[3]]


def test_redirect_to_resp3_client(server, r):
    target = resp3(server)
    target_id = client_id(target)
    tracker = server.raw()
    tracker.call("CLIENT", "TRACKING", "on", "REDIRECT", target_id)
    r.set(KEYS[1], b"1")
    tracker.call("GET", KEYS[1])
    r.set(KEYS[1], b"2")
    assert next_push(target) == [b"invalidate", [KEYS[1]]]


def test_broken_redirect(server, r):
    target = server.raw()
    target_id = client_id(target)
    tracker = resp3(server)
    tracker.call("CLIENT", "TRACKING", "on", "REDIRECT", target_id)
    r.set(KEYS[0], b"1")
    tracker.call("GET", KEYS[0])
    target.close()
    assert wait_for(lambda: target_id not in [int(c["id"]) for c in r.client_list()], 5)
    r.set(KEYS[0], b"2")
    assert next_push(tracker) == [b"tracking-redir-broken", target_id]
    info = tracker.call("CLIENT", "TRACKINGINFO")
    assert b"broken_redirect" in info[b"flags"]
    assert info[b"redirect"] == target_id


def test_redirect_to_missing_client(server):
    c = server.raw()
    assert c.call("CLIENT", "TRACKING", "on", "REDIRECT", "999999") == Error(
        b"ERR The client ID you want redirect to does not exist")
    assert c.call("CLIENT", "TRACKING", "on", "REDIRECT", "x") == Error(
        b"ERR value is not an integer or out of range")
    assert c.call("CLIENT", "GETREDIR") == -1


def test_noloop_and_own_writes_after_the_reply(server, r):
    c = resp3(server)
    c.call("CLIENT", "TRACKING", "on")
    c.call("HSET", KEYS[5], "f", "1")
    c.call("HGET", KEYS[5], "f")
    # Without NOLOOP the writer hears of its own write, after the write's reply.
    assert c.call("HDEL", KEYS[5], "f") == 1
    assert next_push(c) == [b"invalidate", [KEYS[5]]]
    c.call("CLIENT", "TRACKING", "off")
    c.call("CLIENT", "TRACKING", "on", "NOLOOP")
    c.call("MGET", KEYS[6], KEYS[7])
    c.call("SET", KEYS[6], "mine")
    r.set(KEYS[7], b"theirs")
    assert next_push(c) == [b"invalidate", [KEYS[7]]]
    assert_no_message(c)


def test_write_inside_multi_is_announced_after_exec(server):
    c = resp3(server)
    c.call("CLIENT", "TRACKING", "on")
    c.call("MSET", "a{t}", "1", "b{t}", "2")
    c.call("GET", "a{t}")
    c.call("MULTI")
    c.call("INCR", "a{t}")
    c.call("GET", "b{t}")
    assert c.call("EXEC") == [2, b"2"]
    assert next_push(c) == [b"invalidate", [b"a{t}"]]


def test_bcast_with_prefixes(server, r):
    redir, redir_id = subscribed_redirect(server)
    c = server.raw()
    assert c.call("CLIENT", "TRACKING", "on", "BCAST", "REDIRECT", redir_id,
                  "PREFIX", "a:", "PREFIX", "b:") == b"OK"
    c.call("MULTI")
    for k in ("a:1{t}", "a:2{t}", "b:1{t}", "b:2{t}", "c:1{t}"):
        c.call("INCR", k)
    c.call("EXEC")
    # One message per prefix with the keys written under it (all on one shard here).
    keys = sorted(next_invalidated(redir) + next_invalidated(redir))
    assert keys == [b"a:1{t}", b"a:2{t}", b"b:1{t}", b"b:2{t}"]
    # More prefixes can be added while on.
    assert c.call("CLIENT", "TRACKING", "on", "BCAST", "REDIRECT", redir_id, "PREFIX", "c:") == b"OK"
    c.call("INCR", "c:1234")
    assert next_invalidated(redir) == [b"c:1234"]
    info = c.call("CLIENT", "TRACKINGINFO")  # RESP2: the map is a flat array
    info = dict(zip(info[::2], info[1::2]))
    assert info[b"prefixes"] == [b"a:", b"b:", b"c:"]
    assert set(info[b"flags"]) == {b"on", b"bcast"}


def test_bcast_empty_prefix_and_noloop(server, r):
    redir, redir_id = subscribed_redirect(server)
    c = server.raw()
    c.call("CLIENT", "TRACKING", "on", "BCAST", "REDIRECT", redir_id, "NOLOOP")
    r.set(b"otherkey1", b"1")
    assert next_invalidated(redir) == [b"otherkey1"]
    c.call("SET", "loopkey", "1")  # its own write: not announced
    r.set(b"otherkey2", b"1")
    assert next_invalidated(redir) == [b"otherkey2"]


def test_bcast_errors(server):
    c = server.raw()
    assert c.call("CLIENT", "TRACKING", "on", "PREFIX", "x") == Error(
        b"ERR PREFIX option requires BCAST mode to be enabled")
    assert c.call("CLIENT", "TRACKING", "on", "BCAST", "OPTIN") == Error(
        b"ERR OPTIN and OPTOUT are not compatible with BCAST")
    assert c.call("CLIENT", "TRACKING", "on", "OPTIN", "OPTOUT") == Error(
        b"ERR You can't specify both OPTIN mode and OPTOUT mode")
    assert c.call("CLIENT", "TRACKING", "on", "BCAST", "PREFIX", "FOOBAR", "PREFIX", "FOO") == Error(
        b"ERR Prefix 'FOOBAR' overlaps with another provided prefix 'FOO'. "
        b"Prefixes for a single client must not overlap.")
    assert c.call("CLIENT", "TRACKING", "on", "BCAST", "PREFIX", "FOO", "PREFIX", "BAR") == b"OK"
    assert c.call("CLIENT", "TRACKING", "on", "BCAST", "PREFIX", "FO") == Error(
        b"ERR Prefix 'FO' overlaps with an existing prefix 'FOO'. "
        b"Prefixes for a single client must not overlap.")
    assert c.call("CLIENT", "TRACKING", "on") == Error(
        b"ERR You can't switch BCAST mode on/off before disabling tracking for this client, and "
        b"then re-enabling it with a different mode.")
    assert c.call("CLIENT", "TRACKING", "off") == b"OK"
    assert c.call("CLIENT", "TRACKING", "on", "OPTIN") == b"OK"
    assert c.call("CLIENT", "TRACKING", "on", "OPTOUT") == Error(
        b"ERR You can't switch OPTIN/OPTOUT mode before disabling tracking for this client, and "
        b"then re-enabling it with a different mode.")
    me = client_id(c)
    assert c.call("CLIENT", "TRACKING", "on", "REDIRECT", me, "REDIRECT", me) == Error(
        b"ERR A client can only redirect to a single other client")
    assert c.call("CLIENT", "TRACKING", "maybe") == Error(b"ERR syntax error")
    assert c.call("CLIENT", "TRACKING", "on", "BOGUS") == Error(b"ERR syntax error")


def test_optin_and_optout(server, r):
    c = resp3(server)
    assert c.call("CLIENT", "CACHING", "yes") == Error(
        b"ERR CLIENT CACHING can be called only when the client is in tracking mode with OPTIN or "
        b"OPTOUT mode enabled")
    c.call("CLIENT", "TRACKING", "on", "OPTIN")
    assert c.call("CLIENT", "CACHING", "no") == Error(
        b"ERR CLIENT CACHING NO is only valid when tracking is enabled in OPTOUT mode.")
    r.set(KEYS[0], b"1")
    r.set(KEYS[1], b"1")
    c.call("GET", KEYS[0])  # OPTIN without CACHING yes: not tracked
    assert c.call("CLIENT", "CACHING", "yes") == b"OK"
    info = c.call("CLIENT", "TRACKINGINFO")
    assert set(info[b"flags"]) == {b"on", b"optin", b"caching-yes"}
    c.call("GET", KEYS[1])  # tracked; the answer lasts one command
    c.call("GET", KEYS[2])
    for k in KEYS[:3]:
        r.set(k, b"2")
    assert next_push(c) == [b"invalidate", [KEYS[1]]]
    assert_no_message(c)

    c.call("CLIENT", "TRACKING", "off")
    c.call("CLIENT", "TRACKING", "on", "OPTOUT")
    assert c.call("CLIENT", "CACHING", "yes") == Error(
        b"ERR CLIENT CACHING YES is only valid when tracking is enabled in OPTIN mode.")
    c.call("CLIENT", "CACHING", "no")
    c.call("GET", KEYS[3])  # not tracked
    c.call("GET", KEYS[4])  # tracked
    r.set(KEYS[3], b"x")
    r.set(KEYS[4], b"x")
    assert next_push(c) == [b"invalidate", [KEYS[4]]]
    assert_no_message(c)


def test_flush_sends_null_invalidation(server, r):
    reader = resp3(server)
    reader.call("CLIENT", "TRACKING", "on")
    redir, redir_id = subscribed_redirect(server)
    tracker = server.raw()
    tracker.call("CLIENT", "TRACKING", "on", "REDIRECT", redir_id)
    reader.call("GET", KEYS[0])
    tracker.call("GET", KEYS[1])
    r.flushall()
    assert next_push(reader) == [b"invalidate", None]
    assert next_invalidated(redir) is None
    assert server.client().info("stats")["tracking_total_keys"] == 0
    r.flushdb()
    assert next_push(reader) == [b"invalidate", None]


def test_expired_and_script_reads(server, r):
    c = resp3(server)
    c.call("CLIENT", "TRACKING", "on")
    r.set(KEYS[0], b"v", px=50)
    c.call("GET", KEYS[0])
    assert next_push(c) == [b"invalidate", [KEYS[0]]]  # active expiry removes it

    # A script tracks the keys its read commands read, not those it only writes.
    c.call("EVAL", "redis.call('set', KEYS[1], 'bar')", "1", "s1{s}")
    r.set(b"s1{s}", b"other")
    assert_no_message(c)
    c.call("EVAL", "return redis.call('get', KEYS[1])", "1", "s2{s}")
    r.set(b"s2{s}", b"other")
    assert next_push(c) == [b"invalidate", [b"s2{s}"]]


def test_tracking_table_max_keys(server, r):
    redir, redir_id = subscribed_redirect(server)
    tracker = server.raw()
    tracker.call("CLIENT", "TRACKING", "on", "REDIRECT", redir_id)
    n = 30
    for i in range(n):
        tracker.call("GET", f"mk{i}")
    stats = server.client()
    assert stats.info("stats")["tracking_total_keys"] == n
    try:
        assert stats.config_set("tracking-table-max-keys", 1)
        # The table sheds keys down to the limit, telling their readers as if they changed.
        got = {next_invalidated(redir)[0] for _ in range(n - 1)}
        assert len(got) == n - 1
        assert wait_for(lambda: stats.info("stats")["tracking_total_keys"] == 1, 5)
        assert_no_message(redir)
    finally:
        stats.config_set("tracking-table-max-keys", 1000000)


def test_info_and_client_list(server, r):
    before = r.info("clients")["tracking_clients"]
    c = server.raw()
    c.call("CLIENT", "TRACKING", "on")
    assert r.info("clients")["tracking_clients"] == before + 1
    assert b" flags=t " in c.call("CLIENT", "INFO")
    info = c.call("CLIENT", "TRACKINGINFO")
    assert info == [b"flags", [b"on"], b"redirect", 0, b"prefixes", []]
    c.close()
    assert wait_for(lambda: r.info("clients")["tracking_clients"] == before, 5)
    off = server.raw()
    assert off.call("CLIENT", "TRACKINGINFO") == [b"flags", [b"off"], b"redirect", -1,
                                                  b"prefixes", []]


def test_reset_turns_tracking_off(server, r):
    c = resp3(server)
    c.call("CLIENT", "TRACKING", "on", "BCAST", "PREFIX", "rs:")
    assert c.call("RESET") == b"RESET"
    assert c.call("CLIENT", "TRACKINGINFO") == [b"flags", [b"off"], b"redirect", -1,
                                                b"prefixes", []]
    r.set(b"rs:1", b"x")
    assert_no_message(c)


def test_a_read_over_maxmemory_evicts_first_and_announces_the_evicted_keys(server, r):
    # Redis' tracking test "invalidation message of eviction keys should be before response":
    # over maxmemory, a read evicts first (as any command does), and the reader hears of the
    # evicted key ahead of the read's reply. Both keys on one shard: eviction is per shard.
    c = resp3(server)
    c.call("CLIENT", "TRACKING", "on")
    # Each shard's share of the limit (limit / shards) is what it holds now and 100 KB more.
    limit = (server.threads or 1) * (r.info("memory")["used_memory"] + 100 * 1024)
    try:
        r.config_set("maxmemory-policy", "volatile-random")  # only the volatile key may go
        r.config_set("maxmemory", limit)
        c.call("SETEX", "volatile{ev}", "10000", "x")
        c.call("GET", "volatile{ev}")
        c.call("SETBIT", "big{ev}", "1600000", "0")  # about 200 KB: over the limit
        c.send_command("GETBIT", "big{ev}", "0")
        got = [c.read_reply()[1], c.read_reply()[1]]
        assert isinstance(got[0], Push) and list(got[0]) == [b"invalidate", [b"volatile{ev}"]], got
        assert got[1] == 0, got
        assert r.info("stats")["evicted_keys"] == 1
    finally:
        r.config_set("maxmemory", 0)
        r.config_set("maxmemory-policy", "noeviction")


def track_a_volatile_key(c):
    """c (tracking) reads 'volatile{ev}', a key with a TTL: the one key volatile-random may evict."""
    c.call("SETEX", "volatile{ev}", "10000", "x")
    c.call("GET", "volatile{ev}")


def go_over_maxmemory(r):
    """Sets maxmemory (volatile-random) to what the process holds and 100 KB more, then writes a
    200 KB key beside 'volatile{ev}': the next command evicts that key. The shards publish their
    figures to each other every 100 ms: the sleep lets a command on another thread see this one
    over its share."""
    r.config_set("maxmemory-policy", "volatile-random")
    r.config_set("maxmemory", r.info("memory")["used_memory"] + 100 * 1024)
    r.setbit("big{ev}", 1600000, 0)
    time.sleep(0.3)


def reset_maxmemory(r):
    r.config_set("maxmemory", 0)
    r.config_set("maxmemory-policy", "noeviction")


@pytest.mark.parametrize("command", ["MGET", "MSET", "DEL", "PING"])
def test_a_command_that_runs_in_the_connection_evicts_first_and_announces_it(server, r, command):
    """Redis evicts before every command; the invalidation of an evicted key the client tracks
    comes ahead of the command's reply. Here a multi-key command (its keys on several shards),
    and PING, which no shard runs: they evict (the shard over its share) before they run."""
    c = resp3(server)
    c.call("CLIENT", "TRACKING", "on")
    args = {"MGET": ["MGET", *KEYS],
            "MSET": ["MSET", *[x for k in KEYS for x in (k, b"1")]],
            "DEL": ["DEL", *KEYS],
            "PING": ["PING"]}[command]
    try:
        track_a_volatile_key(c)
        evicted = r.info("stats")["evicted_keys"]
        go_over_maxmemory(r)
        c.send_command(*args)
        got = [c.read_reply()[1], c.read_reply()[1]]
        assert isinstance(got[0], Push) and list(got[0]) == [b"invalidate", [b"volatile{ev}"]], got
        expected = {"MGET": [None] * len(KEYS), "DEL": 0, "PING": b"PONG"}
        if command == "MSET":
            # Nothing else may go (the big key has no TTL): still over the limit, refused.
            assert isinstance(got[1], Error) and got[1].startswith(b"OOM "), got
        else:
            assert got[1] == expected[command], got
        assert r.info("stats")["evicted_keys"] == evicted + 1
    finally:
        reset_maxmemory(r)


def test_exec_evicts_first_and_announces_it_ahead_of_its_array(server, r):
    """EXEC is a command like any other: the eviction comes before it, and so does the
    invalidation; its queued commands do not evict (nothing lands inside its array)."""
    c = resp3(server)
    c.call("CLIENT", "TRACKING", "on")
    try:
        track_a_volatile_key(c)
        assert c.call("MULTI") == b"OK"
        for key in KEYS[:4]:
            assert c.call("GET", key) == b"QUEUED"
        go_over_maxmemory(r)
        c.send_command("EXEC")
        got = [c.read_reply()[1], c.read_reply()[1]]
        assert isinstance(got[0], Push) and list(got[0]) == [b"invalidate", [b"volatile{ev}"]], got
        assert got[1] == [None] * 4, got
        assert_no_message(c)
    finally:
        reset_maxmemory(r)


def test_evicted_keys_are_announced_before_the_reply_of_the_write_that_evicted_them(server, r):
    """A pipeline of writes over maxmemory: each write evicts first, and the invalidation of what
    it evicted (a key this client read) comes right before that write's reply, as in Redis, not
    after the batch. Every key on one shard (eviction is per shard); the batch goes in one send."""
    c = resp3(server)
    c.call("CLIENT", "TRACKING", "on")
    tracked = [f"t:{i}{{ev2}}" for i in range(20)]
    try:
        for key in tracked:
            c.call("SETEX", key, "10000", "v" * 20000)
            c.call("GET", key)
        r.config_set("maxmemory-policy", "volatile-ttl")  # only the tracked keys have a TTL
        evicted_before = r.info("stats")["evicted_keys"]
        # Each shard's share is what it holds now and 50 KB more; the writes add about 160 KB.
        r.config_set("maxmemory", (server.threads or 1) * (r.info("memory")["used_memory"] +
                                                           50 * 1024))
        writes = [["SETRANGE", f"big:{i}{{ev2}}", "20000", "x"] for i in range(8)]
        c.send(b"".join(c.encode(*w) for w in writes))
        replies = []
        pushes_seen = []
        while len(replies) < len(writes):
            value = c.read_reply()[1]
            if isinstance(value, Push):
                assert list(value)[0] == b"invalidate", value
                pushes_seen.extend(list(value)[1])
            else:
                # Every push so far came before this reply; none may follow it for this write.
                replies.append((value, list(pushes_seen)))
        assert [v for v, _ in replies] == [20001] * len(writes)
        # Writes evicted tracked keys, and their invalidations came ahead of the writes' replies,
        # not after the batch. (Redis may evict one more before the INFO below, and announce it
        # after the batch: no exact count.)
        announced = replies[-1][1]
        assert announced, replies
        assert set(announced) <= {k.encode() for k in tracked}
        assert len(announced) <= r.info("stats")["evicted_keys"] - evicted_before
    finally:
        r.config_set("maxmemory", 0)
        r.config_set("maxmemory-policy", "noeviction")
