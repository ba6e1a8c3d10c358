"""Errors: commands a script may not run (unknown, wrong arity, noscript, writes in read-only
scripts), errors raised by scripts and redis.call, compile errors, bad shebangs and misused
redis.* functions, with Redis' texts and the `script: <sha>, on @user_script:<line>.` suffix,
compared byte for byte with the Debian redis-server 7.0. Also run with SHARDIS_TEST_TARGET=redis."""

import pytest

from script_util import assert_same_reply, one, one_server, ref  # noqa: F401

# (script, keys, args)
CASES = [
    ("return redis.call('nosuchcommand')", [], []),
    ("return redis.call('get')", [], []),
    ("return redis.call()", [], []),
    ("return redis.call('get', {})", [], []),
    ("return redis.call('incr', KEYS[1])", ["h"], []),
    ("return redis.call('client', 'list')", [], []),
    # BLPOP and the other blocking commands run in scripts since Redis 7.2 (test_compat72.py).
    ("return redis.call('multi')", [], []),
    ("return redis.call('eval', 'return 1', 0)", [], []),
    ("error('boom')", [], []),
    ("local a = 1\nerror('on line two')", [], []),
    ("error({err='TABLE error'})", [], []),
    ("return +", [], []),
    ("return 1 +", [], []),
    ("#!lua\nreturn x", [], []),
    ("#!lua flags=no-writes\nreturn redis.call('set', KEYS[1], 1)", ["k"], []),
    ("#!lua flags=bad-flag\nreturn 1", [], []),
    ("#!lua bad=1\nreturn 1", [], []),
    ("#!python\nreturn 1", [], []),
    ("#!lua", [], []),
    ("redis.setresp(4)", [], []),
    ("redis.setresp()", [], []),
    ("redis.set_repl(99)", [], []),
    ("redis.log(99, 'x')", [], []),
    ("redis.log('x')", [], []),
    ("return redis.sha1hex()", [], []),
    ("return math.random(0)", [], []),
    ("return redis.acl_check_cmd('nosuch')", [], []),
]


@pytest.mark.parametrize("resp3", [False, True], ids=["resp2", "resp3"])
@pytest.mark.parametrize("case", CASES, ids=lambda c: c[0][:40])
def test_same_reply_as_redis(one, one_server, ref, redis_server, case, resp3):
    assert_same_reply(one_server, one, redis_server, ref, case, resp3)
