"""Lua values to RESP replies and command replies to Lua values (Redis' conversion tables, in
RESP2 and RESP3, redis.setresp included), compared byte for byte with the Debian redis-server
7.0 (`redis_server` fixture). Also run with SHARDIS_TEST_TARGET=redis."""

import pytest

from script_util import assert_same_reply, one, one_server, ref  # noqa: F401

# (script, keys, args)
CASES = [
    ("return 1", [], []),
    ("return 3.99", [], []),
    ("return -3.99", [], []),
    ("return 1e300", [], []),
    ("return 'hello'", [], []),
    ("return true", [], []),
    ("return false", [], []),
    ("return nil", [], []),
    ("return {}", [], []),
    ("return {1, 'two', {3, {4}}, true, false}", [], []),
    ("return {1, nil, 3}", [], []),
    ("return {ok='fine'}", [], []),
    ("return {ok='two\\r\\nlines'}", [], []),
    ("return {err='My Error'}", [], []),
    ("return redis.error_reply('My Error')", [], []),
    ("return redis.error_reply('-CUSTOM text')", [], []),
    ("return redis.status_reply('PONG')", [], []),
    ("return redis.error_reply(1)", [], []),
    ("return {double=3.25}", [], []),
    ("return {big_number='12345678901234567890'}", [], []),
    ("return {map={a=1}}", [], []),
    ("return {set={a=true}}", [], []),
    ("return {verbatim_string={format='txt', string='abc'}}", [], []),
    ("redis.setresp(3) return redis.call('hgetall', KEYS[1])", ["h"], []),
    ("redis.setresp(3) return redis.call('smembers', KEYS[1])", ["s1"], []),
    ("redis.setresp(3) return redis.call('zscore', KEYS[1], 'm')", ["z"], []),
    ("redis.setresp(3) return redis.call('get', 'nokey')", [], []),
    ("redis.setresp(3) return true", [], []),
    ("redis.setresp(3) return false", [], []),
    ("return redis.call('hgetall', KEYS[1])", ["h"], []),
    ("return redis.call('zrange', KEYS[1], 0, -1, 'withscores')", ["z"], []),
    ("return redis.call('get', 'nokey')", [], []),
    ("return type(redis.call('get', 'nokey'))", [], []),
    ("return redis.call('set', KEYS[1], ARGV[1])", ["str"], ["v"]),
    ("return redis.call('set', KEYS[1], 3.5)", ["str"], []),
    ("return redis.call('get', KEYS[1])", ["str"], []),
    # 0.25, not 0.1: 7.0 and 7.2 pass 0.1 with different text (test_double_replies.py).
    ("return redis.call('incrbyfloat', KEYS[1], 0.25)", ["fl"], []),
    ("return {KEYS[1], KEYS[2], ARGV[1], ARGV[2], #KEYS, #ARGV}", ["k1", "k2"], ["a1", "a2"]),
    ("return redis.call('type', KEYS[1])", ["h"], []),
    ("return redis.call('type', KEYS[1]).ok", ["h"], []),
    ("return redis.call('lpush', KEYS[1], 'a', 'b')", ["l"], []),
    ("return redis.call('lrange', KEYS[1], 0, -1)", ["l"], []),
    ("return redis.pcall('incr', KEYS[1])", ["h"], []),
    ("return redis.pcall('incr', KEYS[1])['err']", ["h"], []),
    ("local ok, e = pcall(function() return redis.call('incr', KEYS[1]) end) return e", ["h"], []),
    ("local ok, e = pcall(error, 'x') return {tostring(ok), e}", [], []),
]


@pytest.mark.parametrize("resp3", [False, True], ids=["resp2", "resp3"])
@pytest.mark.parametrize("case", CASES, ids=lambda c: c[0][:40])
def test_same_reply_as_redis(one, one_server, ref, redis_server, case, resp3):
    assert_same_reply(one_server, one, redis_server, ref, case, resp3)
