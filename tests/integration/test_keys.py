"""Keyspace commands: DEL, UNLINK, EXISTS, TOUCH, the EXPIRE family, TTL/PTTL, PERSIST, TYPE,
DBSIZE, FLUSHDB, FLUSHALL, KEYS, and lazy and active expiry."""

import time

import pytest

from conftest import wait_for

NOT_INT = b"-ERR value is not an integer or out of range\r\n"


def test_del_unlink(r, raw):
    r.mset({b"a": b"1", b"b": b"2", b"c": b"3", b"d": b"4"})
    assert raw.call_raw("DEL", "a") == b":1\r\n"
    assert raw.call_raw("DEL", "a") == b":0\r\n"
    assert raw.call_raw("DEL", "b", "c", "missing", "b") == b":2\r\n"
    assert raw.call_raw("UNLINK", "d", "missing") == b":1\r\n"
    assert r.dbsize() == 0
    assert raw.call_raw("UNLINK") == b"-ERR wrong number of arguments for 'unlink' command\r\n"


def test_del_many_keys(r):
    keys = [f"k{i}".encode() for i in range(500)]
    r.mset({k: b"v" for k in keys})
    assert r.delete(*keys[:250], b"nope") == 250
    assert r.unlink(*keys) == 250
    assert r.dbsize() == 0


def test_exists_counts_duplicates(r, raw):
    r.mset({b"a": b"1", b"b": b"2"})
    assert raw.call_raw("EXISTS", "a") == b":1\r\n"
    assert raw.call_raw("EXISTS", "missing") == b":0\r\n"
    assert raw.call_raw("EXISTS", "a", "a", "a") == b":3\r\n"
    assert raw.call_raw("EXISTS", "a", "b", "missing", "b") == b":3\r\n"


def test_touch(r, raw):
    r.mset({b"a": b"1", b"b": b"2"})
    assert raw.call_raw("TOUCH", "a", "b", "missing") == b":2\r\n"
    assert raw.call_raw("TOUCH", "missing") == b":0\r\n"
    assert raw.call_raw("TOUCH", "a", "a") == b":2\r\n"


def test_type(r, raw):
    r.set(b"s", b"v")
    r.set(b"n", b"12")
    assert raw.call_raw("TYPE", "s") == b"+string\r\n"
    assert raw.call_raw("TYPE", "n") == b"+string\r\n"
    assert raw.call_raw("TYPE", "missing") == b"+none\r\n"


def test_ttl_pttl(r, raw):
    assert raw.call_raw("TTL", "missing") == b":-2\r\n"
    assert raw.call_raw("PTTL", "missing") == b":-2\r\n"
    r.set(b"k", b"v")
    assert raw.call_raw("TTL", "k") == b":-1\r\n"
    assert raw.call_raw("PTTL", "k") == b":-1\r\n"
    r.set(b"k", b"v", px=10500)
    assert raw.call_raw("TTL", "k") in (b":10\r\n", b":11\r\n")  # rounded to nearest second
    assert 10000 < r.pttl(b"k") <= 10500


def test_expire_pexpire(r, raw):
    r.set(b"k", b"v")
    assert raw.call_raw("EXPIRE", "k", "100") == b":1\r\n"
    assert 99 <= r.ttl(b"k") <= 100
    assert raw.call_raw("PEXPIRE", "k", "200000") == b":1\r\n"
    assert 199000 <= r.pttl(b"k") <= 200000
    assert raw.call_raw("EXPIRE", "missing", "100") == b":0\r\n"
    assert raw.call_raw("PEXPIRE", "missing", "100") == b":0\r\n"
    assert r.exists(b"missing") == 0


def test_expireat_pexpireat(r, raw):
    r.set(b"k", b"v")
    now = time.time()
    assert raw.call_raw("EXPIREAT", "k", str(int(now) + 100)) == b":1\r\n"
    assert 98 <= r.ttl(b"k") <= 100
    assert raw.call_raw("PEXPIREAT", "k", str(int(now * 1000) + 200000)) == b":1\r\n"
    assert 198000 <= r.pttl(b"k") <= 200000
    assert raw.call_raw("EXPIREAT", "missing", str(int(now) + 100)) == b":0\r\n"


@pytest.mark.parametrize("args", [("EXPIRE", "0"), ("EXPIRE", "-10"), ("PEXPIRE", "-1"),
                                  ("EXPIREAT", "1"), ("PEXPIREAT", "1000")])
def test_expire_in_the_past_deletes(r, raw, args):
    r.set(b"k", b"v")
    cmd, when = args
    assert raw.call_raw(cmd, "k", when) == b":1\r\n"
    assert r.exists(b"k") == 0
    assert r.get(b"k") is None


def test_expire_errors(r, raw):
    r.set(b"k", b"v")
    for cmd in ("EXPIRE", "PEXPIRE", "EXPIREAT", "PEXPIREAT"):
        assert raw.call_raw(cmd, "k", "abc") == NOT_INT
        assert raw.call_raw(cmd, "k", "1.5") == NOT_INT
        assert raw.call_raw(cmd, "k", "100", "FOO") == b"-ERR Unsupported option FOO\r\n"
        assert raw.call_raw(cmd, "k") == \
            f"-ERR wrong number of arguments for '{cmd.lower()}' command\r\n".encode()
    assert raw.call_raw("EXPIRE", "k", "9223372036854775807") == \
        b"-ERR invalid expire time in 'expire' command\r\n"
    assert raw.call_raw("PEXPIRE", "k", "9223372036854775807") == \
        b"-ERR invalid expire time in 'pexpire' command\r\n"
    assert raw.call_raw("EXPIREAT", "k", "9223372036854775807") == \
        b"-ERR invalid expire time in 'expireat' command\r\n"
    assert r.ttl(b"k") == -1


def test_expire_option_conflicts(r, raw):
    r.set(b"k", b"v")
    nx_xx = b"-ERR NX and XX, GT or LT options at the same time are not compatible\r\n"
    gt_lt = b"-ERR GT and LT options at the same time are not compatible\r\n"
    assert raw.call_raw("EXPIRE", "k", "100", "NX", "XX") == nx_xx
    assert raw.call_raw("EXPIRE", "k", "100", "NX", "GT") == nx_xx
    assert raw.call_raw("PEXPIRE", "k", "100", "LT", "NX") == nx_xx
    assert raw.call_raw("EXPIRE", "k", "100", "GT", "LT") == gt_lt
    assert raw.call_raw("EXPIREAT", "k", "100", "gt", "lt") == gt_lt
    assert r.ttl(b"k") == -1


def test_expire_nx_xx(r, raw):
    r.set(b"k", b"v")
    assert raw.call_raw("EXPIRE", "k", "100", "XX") == b":0\r\n"  # no TTL yet
    assert r.ttl(b"k") == -1
    assert raw.call_raw("EXPIRE", "k", "100", "NX") == b":1\r\n"
    assert raw.call_raw("EXPIRE", "k", "200", "NX") == b":0\r\n"
    assert 99 <= r.ttl(b"k") <= 100
    assert raw.call_raw("EXPIRE", "k", "300", "XX") == b":1\r\n"
    assert 299 <= r.ttl(b"k") <= 300
    assert raw.call_raw("EXPIRE", "k", "300", "nx", "nx") == b":0\r\n"  # repeats are fine


def test_expire_gt_lt(r, raw):
    r.set(b"k", b"v")
    # No TTL counts as an infinite TTL: GT never applies, LT always does.
    assert raw.call_raw("EXPIRE", "k", "100", "GT") == b":0\r\n"
    assert r.ttl(b"k") == -1
    assert raw.call_raw("EXPIRE", "k", "100", "LT") == b":1\r\n"
    assert 99 <= r.ttl(b"k") <= 100
    assert raw.call_raw("EXPIRE", "k", "50", "GT") == b":0\r\n"
    assert raw.call_raw("EXPIRE", "k", "200", "GT") == b":1\r\n"
    assert 199 <= r.ttl(b"k") <= 200
    assert raw.call_raw("EXPIRE", "k", "300", "LT") == b":0\r\n"
    assert raw.call_raw("EXPIRE", "k", "150", "LT") == b":1\r\n"
    assert 149 <= r.ttl(b"k") <= 150
    assert raw.call_raw("PEXPIRE", "k", "100000", "LT", "XX") == b":1\r\n"
    assert 99 <= r.ttl(b"k") <= 100
    assert raw.call_raw("EXPIRE", "missing", "100", "LT") == b":0\r\n"


def test_persist(r, raw):
    r.set(b"k", b"v", ex=100)
    assert raw.call_raw("PERSIST", "k") == b":1\r\n"
    assert r.ttl(b"k") == -1
    assert raw.call_raw("PERSIST", "k") == b":0\r\n"
    assert raw.call_raw("PERSIST", "missing") == b":0\r\n"
    assert r.get(b"k") == b"v"


def test_dbsize(r, raw):
    assert raw.call_raw("DBSIZE") == b":0\r\n"
    r.mset({f"k{i}".encode(): b"v" for i in range(100)})
    assert raw.call_raw("DBSIZE") == b":100\r\n"
    r.delete(b"k0")
    assert r.dbsize() == 99


def test_flushdb_flushall(server, r, raw):
    c1 = server.client(db=1)
    r.mset({b"a": b"1", b"b": b"2"})
    c1.mset({b"a": b"1", b"c": b"3", b"d": b"4"})
    assert raw.call_raw("FLUSHDB") == b"+OK\r\n"
    assert r.dbsize() == 0
    assert c1.dbsize() == 3
    r.set(b"x", b"1")
    assert raw.call_raw("FLUSHALL") == b"+OK\r\n"
    assert r.dbsize() == 0
    assert c1.dbsize() == 0
    assert c1.get(b"a") is None
    r.set(b"y", b"1")
    assert raw.call_raw("FLUSHDB", "ASYNC") == b"+OK\r\n"
    assert raw.call_raw("FLUSHALL", "SYNC") == b"+OK\r\n"
    assert raw.call_raw("FLUSHALL", "ASYNC") == b"+OK\r\n"
    assert raw.call_raw("FLUSHALL", "foo") == b"-ERR syntax error\r\n"
    assert raw.call_raw("FLUSHDB", "foo") == b"-ERR syntax error\r\n"
    assert r.dbsize() == 0
    c1.close()


def test_flushall_many_keys(r):
    r.execute_command("DEBUG", "POPULATE", 20000)
    assert r.dbsize() == 20000
    r.flushall()
    assert r.dbsize() == 0
    assert r.keys(b"*") == []


def test_keys_glob(r):
    names = [b"hello", b"hallo", b"hxllo", b"hllo", b"heeeello", b"hbllo", b"h*llo", b"h?llo",
             b"user:1", b"user:2", b"user:10", b"other", b"[x]", b"a\\b", b"", b"\x00z"]
    r.mset({n: b"v" for n in names})

    def keys(pattern):
        return sorted(r.keys(pattern))

    assert keys(b"*") == sorted(names)
    assert keys(b"h?llo") == sorted([b"hello", b"hallo", b"hxllo", b"hbllo", b"h*llo", b"h?llo"])
    assert keys(b"h*llo") == sorted([b"hello", b"hallo", b"hxllo", b"hllo", b"heeeello",
                                     b"hbllo", b"h*llo", b"h?llo"])
    assert keys(b"h[ae]llo") == [b"hallo", b"hello"]
    assert keys(b"h[^e]llo") == sorted([b"hallo", b"hxllo", b"hbllo", b"h*llo", b"h?llo"])
    assert keys(b"h[a-b]llo") == [b"hallo", b"hbllo"]
    assert keys(b"h\\*llo") == [b"h*llo"]
    assert keys(b"h\\?llo") == [b"h?llo"]
    assert keys(b"user:?") == [b"user:1", b"user:2"]
    assert keys(b"user:*") == [b"user:1", b"user:10", b"user:2"]
    assert keys(b"\\[x\\]") == [b"[x]"]
    assert keys(b"a\\\\b") == [b"a\\b"]
    assert keys(b"other") == [b"other"]
    assert keys(b"nomatch*") == []
    assert keys(b"?") == []
    assert keys(b"\x00*") == [b"\x00z"]


def test_keys_is_per_db(server, r):
    r.set(b"k0", b"v")
    c = server.client(db=5)
    c.set(b"k5", b"v")
    assert r.keys(b"*") == [b"k0"]
    assert c.keys(b"*") == [b"k5"]
    c.close()


def test_keys_skips_expired(r):
    r.set(b"live", b"v")
    r.set(b"dead", b"v", px=50)
    time.sleep(0.12)
    assert r.keys(b"*") == [b"live"]


def test_lazy_expiry(r, raw):
    r.set(b"k", b"v", px=100)
    r.set(b"k2", b"v", px=100)
    assert r.get(b"k") == b"v"
    time.sleep(0.2)
    assert raw.call_raw("GET", "k") == b"$-1\r\n"
    assert raw.call_raw("EXISTS", "k2") == b":0\r\n"
    assert raw.call_raw("TTL", "k2") == b":-2\r\n"
    assert raw.call_raw("TYPE", "k") == b"+none\r\n"
    # An expired key behaves as missing for writes too.
    r.set(b"n", b"10", px=50)
    time.sleep(0.12)
    assert r.incr(b"n") == 1
    assert r.ttl(b"n") == -1
    r.set(b"a", b"x", px=50)
    time.sleep(0.12)
    assert r.append(b"a", b"y") == 1
    assert r.setnx(b"k", b"new") is True


def test_active_expiry(r):
    """Keys that are never touched again are still removed by the active expiry cycle."""
    # Counted before the keys are set: on a loaded machine some expire (and are counted) before
    # the pipeline's reply is even read.
    expired_before = r.info("stats").get("expired_keys", 0)
    with r.pipeline(transaction=False) as p:
        for i in range(1000):
            p.set(f"volatile:{i}".encode(), b"v", px=50)
        p.set(b"persistent", b"v")
        p.execute()
    time.sleep(0.1)
    assert wait_for(lambda: r.dbsize() == 1, timeout=2.5, interval=0.05), \
        f"DBSIZE is still {r.dbsize()} 2.5 s after the keys expired"
    assert r.info("stats")["expired_keys"] - expired_before >= 1000
    assert r.get(b"persistent") == b"v"


def test_info_keyspace_expires(r, raw):
    r.mset({b"a": b"1", b"b": b"2", b"c": b"3"})
    r.expire(b"a", 1000)
    text = raw.call("INFO", "keyspace").decode()
    assert "db0:keys=3,expires=1,avg_ttl=" in text
