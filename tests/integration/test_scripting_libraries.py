"""The libraries scripts see: cjson, bit, struct, cmsgpack, redis.sha1hex, the version constants,
math, string, table and the base functions, compared byte for byte with the Debian redis-server
7.0 in RESP2 and RESP3. Also run with SHARDIS_TEST_TARGET=redis."""

import pytest

from script_util import assert_same_reply, one, one_server, ref  # noqa: F401

# (script, keys, args)
CASES = [
    ("return cjson.encode({1, 2, {a=3}})", [], []),
    ("return cjson.decode('[1,2,{\"a\":3}]')[3].a", [], []),
    ("return cjson.encode(cjson.decode('{\"x\":[1,\"y\",null]}'))", [], []),
    ("return bit.band(0xff, 0x0f)", [], []),
    ("return bit.tohex(65535, 4)", [], []),
    ("return bit.bxor(5, 3)", [], []),
    ("return struct.pack('>I2', 513)", [], []),
    ("return {struct.unpack('<i4', struct.pack('<i4', -2))}", [], []),
    ("return cmsgpack.pack({1, 'a', {x=true}}, 3.5, -200)", [], []),
    ("return cmsgpack.unpack(cmsgpack.pack({1, 2, 3}))", [], []),
    ("return {cmsgpack.unpack_one(cmsgpack.pack(1, 2))}", [], []),
    ("return redis.sha1hex('abc')", [], []),
    ("return redis.sha1hex('')", [], []),
    ("return redis.REDIS_VERSION_NUM > 0", [], []),
    ("return tostring(math.random(100) <= 100)", [], []),
    ("return string.format('%d-%s', 5, 'x')", [], []),
    ("return table.concat({'a', 'b'}, ',')", [], []),
    ("return redis.replicate_commands()", [], []),
    ("redis.set_repl(redis.REPL_ALL) return 1", [], []),
    ("return tonumber('0x10')", [], []),
    ("return unpack({1, 2})", [], []),
    ("return select('#', 1, 2, 3)", [], []),
]


@pytest.mark.parametrize("resp3", [False, True], ids=["resp2", "resp3"])
@pytest.mark.parametrize("case", CASES, ids=lambda c: c[0][:40])
def test_same_reply_as_redis(one, one_server, ref, redis_server, case, resp3):
    assert_same_reply(one_server, one, redis_server, ref, case, resp3)
