"""String commands with Redis 7 semantics and error texts."""

import time

import pytest

from conftest import flushed_pair

NOT_INT = b"-ERR value is not an integer or out of range\r\n"
SYNTAX = b"-ERR syntax error\r\n"
OVERFLOW = b"-ERR increment or decrement would overflow\r\n"


def invalid_expire(cmd: str) -> bytes:
    return f"-ERR invalid expire time in '{cmd}' command\r\n".encode()


def test_get_set_basic(r):
    assert r.get(b"missing") is None
    assert r.set(b"k", b"v") is True
    assert r.get(b"k") == b"v"
    assert r.set(b"k", b"v2") is True
    assert r.get(b"k") == b"v2"
    # Binary-safe keys and values, including the empty string.
    key, value = b"\x00bin\r\nkey\xff", bytes(range(256)) * 3
    r.set(key, value)
    assert r.get(key) == value
    r.set(b"empty", b"")
    assert r.get(b"empty") == b""
    assert r.exists(b"empty") == 1


def test_set_overwrite_clears_ttl(r):
    r.set(b"k", b"v", ex=100)
    assert r.ttl(b"k") > 0
    r.set(b"k", b"v2")
    assert r.ttl(b"k") == -1


def test_set_ex_px(r, raw):
    assert raw.call_raw("SET", "k", "v", "EX", "100") == b"+OK\r\n"
    assert 99 <= r.ttl(b"k") <= 100
    assert raw.call_raw("SET", "k", "v", "PX", "100000") == b"+OK\r\n"
    assert 99000 <= r.pttl(b"k") <= 100000
    assert raw.call_raw("SET", "k", "v", "ex", "50") == b"+OK\r\n"  # options are case-insensitive
    assert 49 <= r.ttl(b"k") <= 50


def test_set_exat_pxat(r, raw):
    now = time.time()
    assert raw.call_raw("SET", "k", "v", "EXAT", str(int(now) + 100)) == b"+OK\r\n"
    assert 98 <= r.ttl(b"k") <= 100
    assert raw.call_raw("SET", "k", "v", "PXAT", str(int(now * 1000) + 200000)) == b"+OK\r\n"
    assert 198000 <= r.pttl(b"k") <= 200000
    # A time in the past: the SET succeeds and the key is gone at once.
    assert raw.call_raw("SET", "past", "v", "EXAT", "1") == b"+OK\r\n"
    assert r.exists(b"past") == 0
    assert raw.call_raw("SET", "past", "v", "PXAT", str(int(now * 1000) - 1000)) == b"+OK\r\n"
    assert r.get(b"past") is None


@pytest.mark.parametrize("opt", ["EX", "PX", "EXAT", "PXAT"])
def test_set_invalid_expire(raw, opt):
    assert raw.call_raw("SET", "k", "v", opt, "0") == invalid_expire("set")
    assert raw.call_raw("SET", "k", "v", opt, "-5") == invalid_expire("set")
    assert raw.call_raw("SET", "k", "v", opt, "abc") == NOT_INT
    assert raw.call_raw("SET", "k", "v", opt, "1.5") == NOT_INT
    assert raw.call_raw("SET", "k", "v", opt) == SYNTAX
    assert raw.call_raw("EXISTS", "k") == b":0\r\n"


def test_set_expire_overflow(raw):
    assert raw.call_raw("SET", "k", "v", "EX", "9999999999999999") == invalid_expire("set")
    assert raw.call_raw("SET", "k", "v", "PX", "9223372036854775807") == invalid_expire("set")
    assert raw.call_raw("SET", "k", "v", "EX", "99999999999999999999") == NOT_INT


def test_set_nx_xx(r, raw):
    assert raw.call_raw("SET", "k", "v1", "XX") == b"$-1\r\n"
    assert r.get(b"k") is None
    assert raw.call_raw("SET", "k", "v1", "NX") == b"+OK\r\n"
    assert raw.call_raw("SET", "k", "v2", "NX") == b"$-1\r\n"
    assert r.get(b"k") == b"v1"
    assert raw.call_raw("SET", "k", "v3", "XX") == b"+OK\r\n"
    assert r.get(b"k") == b"v3"
    assert r.set(b"k", b"v4", nx=True) is None
    assert r.set(b"k", b"v4", xx=True) is True


def test_set_get_option(r, raw):
    assert raw.call_raw("SET", "k", "v1", "GET") == b"$-1\r\n"
    assert raw.call_raw("SET", "k", "v2", "GET") == b"$2\r\nv1\r\n"
    assert r.get(b"k") == b"v2"
    # NX + GET: the old value is returned and nothing is written.
    assert raw.call_raw("SET", "k", "v3", "NX", "GET") == b"$2\r\nv2\r\n"
    assert r.get(b"k") == b"v2"
    assert raw.call_raw("SET", "new", "v", "GET", "NX") == b"$-1\r\n"
    assert r.get(b"new") == b"v"
    # XX + GET on a missing key: nil and nothing written.
    assert raw.call_raw("SET", "missing", "v", "XX", "GET") == b"$-1\r\n"
    assert r.exists(b"missing") == 0
    assert raw.call_raw("SET", "k", "v5", "XX", "GET", "EX", "100") == b"$2\r\nv2\r\n"
    assert r.ttl(b"k") > 0


def test_set_keepttl(r, raw):
    r.set(b"k", b"v", ex=100)
    assert raw.call_raw("SET", "k", "v2", "KEEPTTL") == b"+OK\r\n"
    assert r.get(b"k") == b"v2"
    assert 99 <= r.ttl(b"k") <= 100
    assert raw.call_raw("SET", "k", "v3") == b"+OK\r\n"
    assert r.ttl(b"k") == -1
    assert raw.call_raw("SET", "nottl", "v", "KEEPTTL") == b"+OK\r\n"
    assert r.ttl(b"nottl") == -1


@pytest.mark.parametrize("args", [
    ("EX", "10", "PX", "100"), ("EX", "10", "EXAT", "99999999999"),
    ("PX", "10", "PXAT", "99999999999999"), ("NX", "XX"), ("XX", "NX"), ("KEEPTTL", "EX", "10"),
    ("PX", "10", "KEEPTTL"), ("FOO",), ("NX", "FOO"), ("EX",), ("GET", "GET", "FOO"),
])
def test_set_syntax_errors(raw, args):
    assert raw.call_raw("SET", "k", "v", *args) == SYNTAX
    assert raw.call_raw("EXISTS", "k") == b":0\r\n"


def test_setnx(r, raw):
    assert raw.call_raw("SETNX", "k", "v1") == b":1\r\n"
    assert raw.call_raw("SETNX", "k", "v2") == b":0\r\n"
    assert r.get(b"k") == b"v1"
    assert raw.call_raw("SETNX", "k") == b"-ERR wrong number of arguments for 'setnx' command\r\n"


def test_setex_psetex(r, raw):
    assert raw.call_raw("SETEX", "k", "100", "v") == b"+OK\r\n"
    assert r.get(b"k") == b"v"
    assert 99 <= r.ttl(b"k") <= 100
    assert raw.call_raw("PSETEX", "p", "100000", "v") == b"+OK\r\n"
    assert 99000 <= r.pttl(b"p") <= 100000
    for cmd in ("SETEX", "PSETEX"):
        err = invalid_expire(cmd.lower())
        assert raw.call_raw(cmd, "x", "0", "v") == err
        assert raw.call_raw(cmd, "x", "-1", "v") == err
        assert raw.call_raw(cmd, "x", "abc", "v") == NOT_INT
    assert raw.call_raw("SETEX", "x", "9999999999999999", "v") == invalid_expire("setex")
    assert r.exists(b"x") == 0


def test_getset(r, raw):
    assert raw.call_raw("GETSET", "k", "v1") == b"$-1\r\n"
    assert raw.call_raw("GETSET", "k", "v2") == b"$2\r\nv1\r\n"
    assert r.get(b"k") == b"v2"
    r.set(b"t", b"v", ex=100)
    r.getset(b"t", b"w")
    assert r.ttl(b"t") == -1  # GETSET discards the TTL


def test_getdel(r, raw):
    r.set(b"k", b"v")
    assert raw.call_raw("GETDEL", "k") == b"$1\r\nv\r\n"
    assert r.exists(b"k") == 0
    assert raw.call_raw("GETDEL", "k") == b"$-1\r\n"


def test_getex(r, raw):
    assert raw.call_raw("GETEX", "missing", "EX", "10") == b"$-1\r\n"
    r.set(b"k", b"v")
    assert raw.call_raw("GETEX", "k") == b"$1\r\nv\r\n"
    assert r.ttl(b"k") == -1
    assert raw.call_raw("GETEX", "k", "EX", "100") == b"$1\r\nv\r\n"
    assert 99 <= r.ttl(b"k") <= 100
    assert raw.call_raw("GETEX", "k", "PX", "200000") == b"$1\r\nv\r\n"
    assert 199000 <= r.pttl(b"k") <= 200000
    assert raw.call_raw("GETEX", "k", "EXAT", str(int(time.time()) + 300)) == b"$1\r\nv\r\n"
    assert 298 <= r.ttl(b"k") <= 300
    assert raw.call_raw("GETEX", "k", "PXAT", str(int(time.time() * 1000) + 400000)) == \
        b"$1\r\nv\r\n"
    assert 398 <= r.ttl(b"k") <= 400
    assert raw.call_raw("GETEX", "k", "PERSIST") == b"$1\r\nv\r\n"
    assert r.ttl(b"k") == -1
    # A time in the past deletes the key after returning it.
    assert raw.call_raw("GETEX", "k", "PXAT", "1") == b"$1\r\nv\r\n"
    assert r.exists(b"k") == 0


def test_getex_errors(r, raw):
    r.set(b"k", b"v")
    assert raw.call_raw("GETEX", "k", "EX", "0") == invalid_expire("getex")
    assert raw.call_raw("GETEX", "k", "PX", "-1") == invalid_expire("getex")
    assert raw.call_raw("GETEX", "k", "EX", "abc") == NOT_INT
    assert raw.call_raw("GETEX", "k", "EX", "10", "PERSIST") == SYNTAX
    assert raw.call_raw("GETEX", "k", "EX", "10", "PX", "10") == SYNTAX
    assert raw.call_raw("GETEX", "k", "FOO") == SYNTAX
    assert raw.call_raw("GETEX", "k", "EX") == SYNTAX
    assert r.ttl(b"k") == -1


def test_mget_mset(r, raw):
    assert raw.call_raw("MSET", "a", "1", "b", "2", "c", "3") == b"+OK\r\n"
    assert raw.call_raw("MGET", "a", "missing", "c", "b", "a") == \
        b"*5\r\n$1\r\n1\r\n$-1\r\n$1\r\n3\r\n$1\r\n2\r\n$1\r\n1\r\n"
    # The last value wins when a key repeats.
    r.mset({b"a": b"x"})
    raw.call("MSET", "d", "1", "d", "2")
    assert r.get(b"d") == b"2"
    assert r.mget([b"a", b"d"]) == [b"x", b"2"]
    assert raw.call_raw("MSET", "a", "1", "b") == \
        b"-ERR wrong number of arguments for 'mset' command\r\n"


def test_mset_many_keys(r):
    mapping = {f"key:{i}".encode(): f"value:{i}".encode() for i in range(1000)}
    assert r.mset(mapping) is True
    keys = list(mapping)
    assert r.mget(keys) == [mapping[k] for k in keys]
    assert r.dbsize() == 1000


def test_mset_clears_ttl(r):
    r.set(b"k", b"v", ex=100)
    r.mset({b"k": b"w"})
    assert r.ttl(b"k") == -1


def test_incr_decr(r, raw):
    assert raw.call_raw("INCR", "n") == b":1\r\n"
    assert raw.call_raw("INCR", "n") == b":2\r\n"
    assert raw.call_raw("DECR", "n") == b":1\r\n"
    assert raw.call_raw("DECR", "fresh") == b":-1\r\n"
    assert raw.call_raw("INCRBY", "n", "10") == b":11\r\n"
    assert raw.call_raw("INCRBY", "n", "-20") == b":-9\r\n"
    assert raw.call_raw("DECRBY", "n", "-9") == b":0\r\n"
    assert raw.call_raw("DECRBY", "n", "5") == b":-5\r\n"
    assert r.get(b"n") == b"-5"
    r.set(b"s", b"  12")
    assert raw.call_raw("INCR", "s") == NOT_INT


def test_incr_keeps_ttl(r):
    r.set(b"n", b"5", ex=100)
    assert r.incr(b"n") == 6
    assert r.ttl(b"n") > 0


@pytest.mark.parametrize("value", [b"abc", b"1.5", b"", b" 1", b"1 ", b"01", b"+1", b"0x10",
                                   b"9223372036854775808", b"1e3"])
def test_incr_not_integer(r, raw, value):
    r.set(b"k", value)
    assert raw.call_raw("INCR", "k") == NOT_INT
    assert raw.call_raw("DECR", "k") == NOT_INT
    assert raw.call_raw("INCRBY", "k", "1") == NOT_INT
    assert r.get(b"k") == value


def test_incrby_bad_increment(r, raw):
    for bad in ("abc", "1.5", "", "9223372036854775808", "--1"):
        assert raw.call_raw("INCRBY", "k", bad) == NOT_INT
        assert raw.call_raw("DECRBY", "k", bad) == NOT_INT
    assert r.exists(b"k") == 0


def test_incr_overflow(r, raw):
    r.set(b"max", b"9223372036854775807")
    assert raw.call_raw("INCR", "max") == OVERFLOW
    assert raw.call_raw("INCRBY", "max", "1") == OVERFLOW
    assert raw.call_raw("DECRBY", "max", "-1") == OVERFLOW
    assert r.get(b"max") == b"9223372036854775807"
    r.set(b"min", b"-9223372036854775808")
    assert raw.call_raw("DECR", "min") == OVERFLOW
    assert raw.call_raw("INCRBY", "min", "-1") == OVERFLOW
    assert raw.call_raw("INCRBY", "min", "9223372036854775807") == b":-1\r\n"
    assert raw.call_raw("DECRBY", "k", "-9223372036854775808") == \
        b"-ERR decrement would overflow\r\n"
    assert raw.call_raw("INCRBY", "k", "-9223372036854775808") == b":-9223372036854775808\r\n"


def test_incrbyfloat(r, raw):
    assert raw.call_raw("INCRBYFLOAT", "f", "10.5") == b"$4\r\n10.5\r\n"
    assert raw.call_raw("INCRBYFLOAT", "f", "0.1") == b"$4\r\n10.6\r\n"
    assert raw.call_raw("INCRBYFLOAT", "f", "-5") == b"$3\r\n5.6\r\n"
    r.set(b"g", b"5.0e3")
    assert raw.call_raw("INCRBYFLOAT", "g", "2.0e2") == b"$4\r\n5200\r\n"
    r.set(b"h", b"0.1")
    assert raw.call_raw("INCRBYFLOAT", "h", "0.2") == b"$3\r\n0.3\r\n"
    r.set(b"i", b"3")
    assert raw.call_raw("INCRBYFLOAT", "i", "1.5") == b"$3\r\n4.5\r\n"
    assert raw.call_raw("INCRBYFLOAT", "i", "-4.5") == b"$1\r\n0\r\n"
    assert raw.call_raw("INCRBYFLOAT", "j", "1e20") == b"$21\r\n100000000000000000000\r\n"
    assert r.get(b"j") == b"100000000000000000000"


def test_incrbyfloat_errors(r, raw):
    r.set(b"s", b"abc")
    assert raw.call_raw("INCRBYFLOAT", "s", "1") == b"-ERR value is not a valid float\r\n"
    assert raw.call_raw("INCRBYFLOAT", "f", "abc") == b"-ERR value is not a valid float\r\n"
    assert raw.call_raw("INCRBYFLOAT", "f", "") == b"-ERR value is not a valid float\r\n"
    assert raw.call_raw("INCRBYFLOAT", "f", "inf") == \
        b"-ERR increment would produce NaN or Infinity\r\n"
    # Redis computes in long double: 1e308 + 1e308 is still finite, 1e4932 * 2 is not.
    r.set(b"big", b"1e4932")
    assert raw.call_raw("INCRBYFLOAT", "big", "1e4932") == \
        b"-ERR increment would produce NaN or Infinity\r\n"
    assert r.get(b"big") == b"1e4932"
    assert raw.call_raw("INCRBYFLOAT", "big", "1e4933") == b"-ERR value is not a valid float\r\n"
    assert r.exists(b"f") == 0


def test_append_strlen(r, raw):
    assert raw.call_raw("APPEND", "k", "hello") == b":5\r\n"
    assert raw.call_raw("APPEND", "k", " world") == b":11\r\n"
    assert r.get(b"k") == b"hello world"
    assert raw.call_raw("APPEND", "k", "") == b":11\r\n"
    assert raw.call_raw("STRLEN", "k") == b":11\r\n"
    assert raw.call_raw("STRLEN", "missing") == b":0\r\n"
    r.set(b"n", b"12345")
    assert r.incr(b"n") == 12346
    assert raw.call_raw("APPEND", "n", "7") == b":6\r\n"
    assert r.get(b"n") == b"123467"
    assert raw.call_raw("STRLEN", "n") == b":6\r\n"
    r.set(b"t", b"x", ex=100)
    r.append(b"t", b"y")
    assert r.ttl(b"t") > 0  # APPEND keeps the TTL


def test_getrange(r, raw):
    r.set(b"k", b"Hello World")
    cases = [((0, 4), b"Hello"), ((-5, -1), b"World"), ((0, -1), b"Hello World"),
             ((6, 100), b"World"), ((5, 1), b""), ((-100, 2), b"Hel"), ((20, 30), b""),
             ((-1, -5), b""), ((0, 0), b"H"), ((-1, -1), b"d"), ((3, -3), b"lo Wor")]
    for (start, end), expected in cases:
        assert r.getrange(b"k", start, end) == expected, (start, end)
    assert raw.call_raw("GETRANGE", "missing", "0", "-1") == b"$0\r\n\r\n"
    assert raw.call_raw("GETRANGE", "k", "a", "1") == NOT_INT
    r.set(b"n", b"12345")
    r.incr(b"n")
    assert r.getrange(b"n", 1, 2) == b"23"


def test_setrange(r, raw):
    r.set(b"k", b"Hello World")
    assert raw.call_raw("SETRANGE", "k", "6", "Redis") == b":11\r\n"
    assert r.get(b"k") == b"Hello Redis"
    assert raw.call_raw("SETRANGE", "k", "11", "!") == b":12\r\n"
    assert r.get(b"k") == b"Hello Redis!"
    # Writing past the end pads with zero bytes.
    assert raw.call_raw("SETRANGE", "pad", "3", "x") == b":4\r\n"
    assert r.get(b"pad") == b"\x00\x00\x00x"
    # An empty value on a missing key creates nothing.
    assert raw.call_raw("SETRANGE", "none", "5", "") == b":0\r\n"
    assert r.exists(b"none") == 0
    assert raw.call_raw("SETRANGE", "k", "100", "") == b":12\r\n"
    assert raw.call_raw("SETRANGE", "k", "-1", "x") == b"-ERR offset is out of range\r\n"
    assert raw.call_raw("SETRANGE", "k", "abc", "x") == NOT_INT


def test_setrange_size_limit(r, raw):
    err = b"-ERR string exceeds maximum allowed size (proto-max-bulk-len)\r\n"
    assert raw.call_raw("SETRANGE", "k", str(512 * 1024 * 1024), "x") == err
    assert raw.call_raw("SETRANGE", "k", str(512 * 1024 * 1024 - 1), "xy") == err
    assert raw.call_raw("SETRANGE", "k", "9223372036854775807", "x") == err
    assert r.exists(b"k") == 0


def test_large_value_roundtrip(r):
    value = bytes(range(256)) * 4096  # 1 MiB
    r.set(b"big", value)
    assert r.strlen(b"big") == len(value)
    assert r.get(b"big") == value
    assert r.getrange(b"big", 1000000, 1000009) == value[1000000:1000010]
    r.append(b"big", b"tail")
    assert r.get(b"big") == value + b"tail"


# --- OBJECT ENCODING of strings changed in place: Redis' raw (dbUnshareStringValue), compared
# with redis-server (7.0 and 7.2 agree).

RAW_SCENARIOS = [
    # (setup commands, the key whose encoding and refcount are read after each)
    [("SET", "s", "1"), ("APPEND", "s", "2"), ("INCR", "s"), ("APPEND", "s", ""),
     ("DECR", "s"), ("APPEND", "s", "0"), ("INCRBY", "s", "5"), ("SETRANGE", "s", "0", "9"),
     ("DECRBY", "s", "1")],
    [("SET", "s", "abc"), ("APPEND", "s", "d"), ("SET", "s", "abcd"), ("SETRANGE", "s", "0", ""),
     ("SETRANGE", "s", "1", "x"), ("GETSET", "s", "y")],
    [("APPEND", "s", "12"), ("APPEND", "s", "3"), ("INCRBY", "s", "1")],
    [("SETRANGE", "s", "0", "7"), ("SETRANGE", "s", "0", "")],
    [("SETBIT", "s", "1", "1"), ("SET", "s", "x" * 60), ("APPEND", "s", "y"), ("SET", "s", "7"),
     ("BITFIELD", "s", "SET", "u8", "0", "50"), ("SET", "s", "7"), ("BITFIELD", "s", "GET", "u8",
                                                                    "0")],
    [("SET", "s", "x"), ("APPEND", "s", "y"), ("RENAME", "s", "t"), ("COPY", "t", "s"),
     ("SET", "s", "xy")],
    # HyperLogLogs are raw strings in Redis, however small.
    [("PFADD", "s"), ("PFADD", "s", "a", "b"), ("PFCOUNT", "s"), ("PFMERGE", "s", "s"),
     ("SET", "s", "x"), ("PFMERGE", "s")],
]


def encodings(conn, commands):
    seen = []
    for cmd in commands:
        reply = conn.call(*cmd)
        key = "t" if cmd[0] == "RENAME" else "s"
        seen.append((cmd[0], reply, conn.call("OBJECT", "ENCODING", key),
                     conn.call("OBJECT", "REFCOUNT", key)))
    return seen


@pytest.mark.parametrize("commands", RAW_SCENARIOS, ids=range(len(RAW_SCENARIOS)))
def test_in_place_changes_leave_a_raw_string(server, redis_server, commands):
    with flushed_pair(server, redis_server) as (sut, ref):
        assert encodings(sut, commands) == encodings(ref, commands)


def test_raw_string_dump_restore_and_incr(server, redis_server):
    """DUMP/RESTORE makes a new object (int or embstr again); INCR of a raw number is an int."""
    with flushed_pair(server, redis_server) as (sut, ref):
        seen = []
        for c in (sut, ref):
            c.call("SET", "n", "4")
            c.call("APPEND", "n", "2")
            payload = c.call("DUMP", "n")
            c.call("RESTORE", "m", "0", payload)
            seen.append([c.call("OBJECT", "ENCODING", k) for k in ("n", "m")] +
                        [c.call("GET", "m"), c.call("INCR", "n"), c.call("OBJECT", "ENCODING", "n")])
        assert seen[0] == seen[1] == [b"raw", b"int", b"42", 43, b"int"]


def test_string_limits_follow_proto_max_bulk_len(server, redis_server):
    """APPEND, SETRANGE, SETBIT/BITFIELD offsets and LCS's table are bounded by the configured
    proto-max-bulk-len (Redis' checkStringLength, getBitOffsetFromArgument), not a fixed 512 MB.
    1mb is the smallest value CONFIG SET takes."""
    limit = 1 << 20
    script = [
        ("SET", "s", "x" * (limit - 48)),
        ("APPEND", "s", "y" * 48),                 # at the limit
        ("APPEND", "s", "z"),                      # over
        ("SETRANGE", "t", str(limit - 2), "ab"),   # at
        ("SETRANGE", "t", str(limit - 1), "ab"),   # over
        ("SETBIT", "b", str(limit * 8 - 1), "1"),
        ("SETBIT", "b", str(limit * 8), "1"),
        ("BITFIELD", "f", "SET", "u8", f"#{limit - 1}", "1"),
        ("BITFIELD", "f", "SET", "u8", f"#{limit}", "1"),
        ("SET", "l1", "a" * 600), ("SET", "l2", "b" * 600),
        ("LCS", "l1", "l2"),                       # 601*601*4 bytes of table: over
        ("SET", "l3", "a" * 400), ("SET", "l4", "b" * 400),
        ("LCS", "l3", "l4"),                       # 401*401*4: under
        ("STRLEN", "s"), ("STRLEN", "t"),
    ]
    with flushed_pair(server, redis_server,
                      reset=[("CONFIG", "SET", "proto-max-bulk-len", "512mb")]) as conns:
        replies = []
        for c in conns:
            c.call("CONFIG", "SET", "proto-max-bulk-len", "1mb")
            replies.append([c.call_raw(*cmd) for cmd in script])
        assert replies[0] == replies[1]
        assert b"proto-max-bulk-len" in replies[0][2]
        assert b"proto-max-bulk-len" in replies[0][4]
