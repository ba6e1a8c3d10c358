"""INFO persistence's rdb_changes_since_last_save (Redis' dirty counter) against the Debian
redis-server: the same commands go to both servers, and after each one the counter must have
moved by the same amount on both.

Neither server has a save schedule (redis-server runs with --save ""), so the counter is never
reset and only deltas are compared. shardis runs with several threads, so multi-key commands
and transactions span shards.

Covered: a scripted run over every write family (strings, bit ops, lists, hashes, sets, sorted
sets, streams with consumer groups, HyperLogLog, geo, the keyspace commands, SORT STORE,
FLUSHDB/FLUSHALL, MULTI/EXEC), with no-op, failing and WRONGTYPE writes; blocked clients served
by a later write (Redis 7.0 counts some of those pops and not others); the random command stream
of test_differential; and what Redis' own TCL suite asserts about the counter.
"""

import pytest

import diff_families
import test_differential
from conftest import TARGET, Error, RespConn, start_target, wait_for
from diff_families.streams import consumers_named
from test_differential import diff_params  # noqa: F401 (a fixture, used by name)

THREADS = 3


@pytest.fixture(scope="module")
def sut(tmp_path_factory):
    # No save schedule, as redis-server's --save "": a save would restart the count in the middle
    # of a comparison.
    srv = start_target(tmp_path_factory.mktemp("dirty-sut"), threads=THREADS,
                       shardis_args=["--save="])
    yield srv
    srv.stop_and_check()


def info_int(conn: RespConn, section: str, field: str) -> int:
    info = conn.call("INFO", section).decode()
    for line in info.splitlines():
        if line.startswith(field + ":"):
            return int(line.split(":", 1)[1])
    raise AssertionError(f"no {field} in {info!r}")


def changes(conn: RespConn) -> int:
    return info_int(conn, "persistence", "rdb_changes_since_last_save")


class Pair:
    """A command connection and an INFO connection on each server (the INFO one stays outside
    MULTI and blocking calls)."""

    def __init__(self, ref_srv, sut_srv):
        self.ref, self.sut = ref_srv.raw(timeout=30), sut_srv.raw(timeout=30)
        self.ref_info, self.sut_info = ref_srv.raw(timeout=30), sut_srv.raw(timeout=30)
        self.history = []

    def close(self):
        for c in (self.ref, self.sut, self.ref_info, self.sut_info):
            c.close()

    def counters(self):
        return changes(self.ref_info), changes(self.sut_info)

    def run(self, cmd, ref_cmd=None):
        """Runs cmd on both (ref_cmd instead on redis-server, if given) and checks that both
        counters moved alike. Returns both replies."""
        before = self.counters()
        self.ref.send(RespConn.encode(*(ref_cmd or cmd)))
        self.sut.send(RespConn.encode(*cmd))
        raw_ref, val_ref = self.ref.read_reply()
        raw_sut, val_sut = self.sut.read_reply()
        self.create_consumers_as_72(cmd, val_ref)
        after = self.counters()
        self.check(cmd, before, after, raw_ref, raw_sut)
        return val_ref, val_sut

    def create_consumers_as_72(self, cmd, val_ref):
        """Redis 7.2 creates the consumer that XREADGROUP, XCLAIM and XAUTOCLAIM name (a change
        of its own) whether or not they read or claim; 7.0 only one that gets entries. After
        such a command (or an EXEC that ran some) redis-server creates the others, so that its
        counter moves as 7.2's would (not when the server under test is redis-server itself)."""
        if TARGET == "redis":
            return
        ran = [(cmd, val_ref)]
        if cmd and cmd[0].upper() == "EXEC" and isinstance(val_ref, list):
            ran = list(zip(getattr(cmd, "queued", []), val_ref))
        for c, val in ran:
            if isinstance(val, Error) or val == b"QUEUED":
                continue
            for key, group, consumer in consumers_named(c):
                self.ref.call("XGROUP", "CREATECONSUMER", key, group, consumer)

    def check(self, what, before, after, raw_ref=b"", raw_sut=b""):
        delta_ref, delta_sut = after[0] - before[0], after[1] - before[1]
        self.history.append((what, delta_ref, raw_ref))
        if delta_ref != delta_sut:
            context = "\n".join(f"  {c!r} -> +{d} {r!r}" for c, d, r in self.history[-12:-1])
            pytest.fail(f"dirty mismatch for {what!r}: redis-server +{delta_ref} "
                        f"(reply {raw_ref!r}), shardis +{delta_sut} (reply {raw_sut!r})\n"
                        f"previous commands (redis-server's delta and reply):\n{context}",
                        pytrace=False)


@pytest.fixture
def pair(redis_server, sut):
    p = Pair(redis_server, sut)
    for conn in (p.ref, p.sut):
        assert conn.call("FLUSHALL") == b"OK"
    yield p
    p.close()


# Keys with different names land on different shards (with 3 threads, most pairs do); the
# {t} ones share a shard.
STRINGS = [
    ["SET", "s1", "v"], ["SET", "s1", "v", "NX"], ["SET", "s1", "w", "XX"],
    ["SET", "s9", "v", "XX"], ["SET", "s1", "v2", "GET"], ["SET", "s1", "v", "EX", "100"],
    ["SET", "s1", "v", "KEEPTTL"], ["SET", "s1", "v", "EX", "0"], ["SET", "s1", "v", "BAD"],
    ["SETNX", "s1", "x"], ["SETNX", "s2", "x"], ["SETEX", "s3", "100", "v"],
    ["PSETEX", "s4", "100000", "v"], ["SETEX", "s3", "-1", "v"], ["GETSET", "s1", "v3"],
    ["GETSET", "snew", "v"], ["GETDEL", "s2"], ["GETDEL", "s2"], ["GETEX", "s1", "EX", "100"],
    ["GETEX", "s1", "PERSIST"], ["GETEX", "s1", "PERSIST"], ["GETEX", "s1"],
    ["GETEX", "nokey", "EX", "10"], ["GETEX", "s4", "PXAT", "1"],
    ["INCR", "n1"], ["INCRBY", "n1", "5"], ["DECR", "n1"], ["DECRBY", "n1", "2"],
    ["INCRBY", "n1", "abc"], ["INCR", "s1"], ["INCRBY", "n1", "9223372036854775807"],
    ["INCRBYFLOAT", "f1", "1.5"], ["INCRBYFLOAT", "f1", "abc"], ["INCRBYFLOAT", "s1", "1"],
    ["APPEND", "s1", "xyz"], ["APPEND", "s1", ""], ["APPEND", "snew2", ""],
    ["SETRANGE", "s1", "0", "ab"], ["SETRANGE", "s1", "0", ""], ["SETRANGE", "nokey", "0", ""],
    ["SETRANGE", "sr", "5", "x"], ["SETRANGE", "sr", "-1", "x"],
    ["MSET", "a", "1", "b", "2", "c", "3", "d", "4", "e", "5", "a", "6"],
    ["MSET", "a", "1", "b"], ["MSETNX", "a", "1", "zz", "2"],
    ["MSETNX", "m1", "1", "m2", "2", "m3", "3", "m1", "4"], ["GET", "a"], ["STRLEN", "s1"],
    ["SET", "l0", "v", "GET"], ["GETDEL", "l0"], ["GETSET", "l0", "v"], ["APPEND", "l0", "x"],
    ["SETRANGE", "l0", "0", "x"], ["INCRBYFLOAT", "l0", "1"], ["GETEX", "l0", "PERSIST"],
    ["SET", "sp", "v", "PXAT", "1"], ["GET", "sp"], ["SET", "sp", "v", "EXAT", "1", "GET"],
    ["SET", "sp", "v", "NX", "GET"], ["SET", "sp", "w", "XX", "GET"],
]

BITOPS = [
    ["SETBIT", "b1", "0", "0"], ["SETBIT", "b1", "0", "0"], ["SETBIT", "b1", "0", "1"],
    ["SETBIT", "b1", "0", "1"], ["SETBIT", "b1", "90", "0"], ["SETBIT", "b1", "1", "2"],
    ["SETBIT", "s1", "0", "1"],
    ["BITFIELD", "bf", "SET", "i5", "0", "0"], ["BITFIELD", "bf", "SET", "i5", "0", "0"],
    ["BITFIELD", "bf", "SET", "i5", "0", "1"], ["BITFIELD", "bf", "INCRBY", "i5", "0", "1"],
    ["BITFIELD", "bf", "OVERFLOW", "FAIL", "INCRBY", "i5", "0", "100"],
    ["BITFIELD", "bf2", "OVERFLOW", "FAIL", "INCRBY", "u2", "0", "7"],
    ["BITFIELD", "bf", "GET", "i5", "0"], ["BITFIELD_RO", "bf", "GET", "i5", "0"],
    ["BITFIELD", "bf", "SET", "u8", "0", "1", "SET", "u8", "8", "2", "GET", "u8", "0"],
    ["BITFIELD", "bf", "SET", "u8", "0", "1", "SET", "u8", "64", "0"],
    ["BITFIELD", "bf", "SET", "u8", "0", "bad"], ["BITFIELD", "l0", "SET", "u8", "0", "1"],
    ["BITOP", "AND", "bdst", "b1", "bf"], ["BITOP", "OR", "bdst", "nob1", "nob2"],
    ["BITOP", "OR", "bdst", "nob1"], ["BITOP", "NOT", "bdst", "b1", "bf"],
    ["BITOP", "XOR", "{t}bd", "{t}b1", "{t}b2"],
]

LISTS = [
    ["LPUSH", "l1", "a", "b", "c"], ["RPUSH", "l1", "d"], ["LPUSHX", "nolist", "a"],
    ["RPUSHX", "l1", "e", "f"], ["LPOP", "l1"], ["RPOP", "l1", "2"], ["LPOP", "l1", "0"],
    ["LPOP", "nolist"], ["RPOP", "l1", "-1"], ["LSET", "l1", "0", "x"],
    ["LSET", "l1", "100", "x"], ["LSET", "nolist", "0", "x"],
    ["LINSERT", "l1", "BEFORE", "x", "y"], ["LINSERT", "l1", "AFTER", "nope", "y"],
    ["RPUSH", "l1", "y", "y", "z", "y"], ["LREM", "l1", "0", "y"], ["LREM", "l1", "0", "nope"],
    ["RPUSH", "l1", "1", "2", "3", "4"], ["LTRIM", "l1", "1", "-2"], ["LTRIM", "l1", "0", "-1"],
    ["LTRIM", "nolist", "0", "1"], ["LMOVE", "l1", "l2", "LEFT", "RIGHT"],
    ["RPOPLPUSH", "l2", "l2"], ["LMOVE", "nolist", "l2", "LEFT", "LEFT"],
    ["LMOVE", "l1", "s1", "LEFT", "LEFT"], ["RPOPLPUSH", "l1", "{t}l"],
    ["LMPOP", "2", "nolist", "l1", "LEFT", "COUNT", "2"], ["LMPOP", "1", "nolist", "RIGHT"],
    ["RPUSH", "l3", "a", "b", "c", "d"], ["BLPOP", "nolist", "l3", "0"],
    ["BRPOP", "l3", "0"], ["BLMPOP", "0", "1", "l3", "RIGHT", "COUNT", "5"],
    ["RPUSH", "l3", "a"], ["BLMOVE", "l3", "l4", "LEFT", "LEFT", "0"],
    ["BRPOPLPUSH", "l4", "l3", "0"], ["LTRIM", "l3", "1", "0"],
    ["LPUSH", "s1", "x"], ["LPOP", "s1"], ["LRANGE", "l2", "0", "-1"],
]

HASHES = [
    ["HSET", "h1", "f1", "v1", "f2", "v2"], ["HSET", "h1", "f1", "v1"], ["HSET", "h1", "f1"],
    ["HMSET", "h1", "f3", "v3"], ["HSETNX", "h1", "f1", "x"], ["HSETNX", "h1", "f9", "x"],
    ["HSETNX", "h2", "f", "x"], ["HDEL", "h1", "f1", "nope"], ["HDEL", "nohash", "f"],
    ["HINCRBY", "h1", "n", "5"], ["HINCRBY", "h1", "f2", "1"], ["HINCRBY", "h1", "n", "x"],
    ["HINCRBYFLOAT", "h1", "fl", "1.5"], ["HINCRBYFLOAT", "h1", "f2", "1"],
    ["HINCRBYFLOAT", "h1", "fl", "inf"], ["HDEL", "h1", "f2", "f3", "f9", "n", "fl", "f2"],
    ["HSET", "s1", "f", "v"], ["HGET", "h2", "f"],
]

SETS = [
    ["SADD", "st1", "a", "b", "c"], ["SADD", "st1", "a", "d"], ["SADD", "st1", "a"],
    ["SREM", "st1", "a", "x"], ["SREM", "nosetkey", "a"], ["SPOP", "st1"],
    ["SPOP", "st1", "0"], ["SPOP", "st1", "10"], ["SPOP", "nosetkey"],
    ["SADD", "st2", "1", "2", "3"], ["SADD", "st3", "2", "3", "4"],
    ["SINTERSTORE", "sdst", "st2", "st3"], ["SUNIONSTORE", "sdst", "st2", "st3"],
    ["SDIFFSTORE", "sdst", "st2", "st2"], ["SDIFFSTORE", "sdst", "st2", "st2"],
    ["SINTERSTORE", "sdst", "st2", "nosetkey"], ["SINTERSTORE", "sdst", "st2", "s1"],
    ["SMOVE", "st2", "st3", "1"], ["SMOVE", "st2", "st3", "2"], ["SMOVE", "st2", "st3", "zz"],
    ["SMOVE", "st3", "st3", "3"], ["SMOVE", "nosetkey", "st3", "1"], ["SMOVE", "st3", "s1", "3"],
    ["SMOVE", "st2", "st4", "3"], ["SADD", "s1", "x"], ["SCARD", "st3"],
]

ZSETS = [
    ["ZADD", "z1", "1", "a", "2", "b"], ["ZADD", "z1", "1", "a"], ["ZADD", "z1", "5", "a"],
    ["ZADD", "z1", "NX", "9", "a", "3", "c"], ["ZADD", "z1", "XX", "9", "zz"],
    ["ZADD", "nozset", "XX", "9", "zz"], ["ZADD", "z1", "GT", "1", "a"],
    ["ZADD", "z1", "CH", "6", "a", "6", "b"], ["ZADD", "z1", "1", "a", "x", "b"],
    ["ZINCRBY", "z1", "0", "a"], ["ZINCRBY", "z1", "1", "a"], ["ZINCRBY", "z1", "1", "new"],
    ["ZADD", "z1", "INCR", "2", "a"], ["ZADD", "z1", "XX", "INCR", "2", "nope"],
    ["ZREM", "z1", "b", "zz"], ["ZADD", "z1", "1", "m1", "2", "m2", "3", "m3", "4", "m4"],
    ["ZREMRANGEBYRANK", "z1", "0", "0"], ["ZREMRANGEBYSCORE", "z1", "2", "3"],
    ["ZREMRANGEBYSCORE", "z1", "100", "200"], ["ZREMRANGEBYLEX", "nozset", "-", "+"],
    ["ZPOPMIN", "z1"], ["ZPOPMAX", "z1", "2"], ["ZPOPMIN", "z1", "0"], ["ZPOPMIN", "nozset"],
    ["ZMPOP", "2", "nozset", "z1", "MIN", "COUNT", "10"],
    ["ZADD", "z2", "1", "a", "2", "b", "3", "c"], ["ZADD", "z3", "2", "b", "3", "c", "4", "d"],
    ["ZUNIONSTORE", "zd", "2", "z2", "z3"], ["ZINTERSTORE", "zd", "2", "z2", "z3"],
    ["ZDIFFSTORE", "zd", "2", "z2", "z2"], ["ZDIFFSTORE", "zd", "2", "z2", "z2"],
    ["ZRANGESTORE", "zd", "z2", "0", "-1"], ["ZRANGESTORE", "zd", "z2", "5", "10"],
    ["ZUNIONSTORE", "zd", "2", "z2", "s1"], ["BZPOPMIN", "nozset", "z2", "0"],
    ["BZPOPMAX", "z2", "0"], ["BZMPOP", "0", "1", "z3", "MAX", "COUNT", "5"],
    ["ZADD", "s1", "1", "a"], ["ZCARD", "z2"], ["ZADD", "zn", "-inf", "a"],
    ["ZADD", "zn", "INCR", "+inf", "a"], ["ZINCRBY", "zn", "+inf", "a"], ["ZINCRBY", "zn", "1", "a"],
    ["ZADD", "zn", "LT", "CH", "-inf", "a", "5", "b"], ["ZADD", "zn", "GT", "XX", "1", "b"],
]

STREAMS = [
    ["XADD", "x1", "1-1", "f", "v"], ["XADD", "x1", "1-1", "f", "v"],
    ["XADD", "x1", "MAXLEN", "1", "2-1", "f", "v"], ["XADD", "nox", "NOMKSTREAM", "*", "f", "v"],
    ["XADD", "x1", "3-1", "f", "v"], ["XADD", "x1", "4-1", "f", "v"],
    ["XDEL", "x1", "3-1", "9-9"], ["XDEL", "x1", "3-1"], ["XTRIM", "x1", "MAXLEN", "1"],
    ["XTRIM", "x1", "MAXLEN", "10"], ["XTRIM", "nox", "MAXLEN", "1"], ["XSETID", "x1", "10-1"],
    ["XSETID", "x1", "1-1"], ["XGROUP", "CREATE", "x1", "g1", "0"],
    ["XGROUP", "CREATE", "x1", "g1", "0"], ["XGROUP", "CREATE", "x2", "g1", "$", "MKSTREAM"],
    ["XGROUP", "CREATE", "nox", "g1", "$"], ["XGROUP", "SETID", "x1", "g1", "0"],
    ["XGROUP", "SETID", "x1", "nog", "0"], ["XGROUP", "CREATECONSUMER", "x1", "g1", "c1"],
    ["XGROUP", "CREATECONSUMER", "x1", "g1", "c1"], ["XADD", "x1", "11-1", "f", "v"],
    ["XADD", "x1", "12-1", "f", "v"],
    ["XREADGROUP", "GROUP", "g1", "c2", "COUNT", "10", "STREAMS", "x1", ">"],
    ["XREADGROUP", "GROUP", "g1", "c2", "STREAMS", "x1", ">"],
    ["XREADGROUP", "GROUP", "g1", "c2", "STREAMS", "x1", "0"],
    ["XREADGROUP", "GROUP", "g1", "c5", "STREAMS", "x1", "0"],
    ["XREADGROUP", "GROUP", "g1", "c2", "STREAMS", "x1", "x2", ">", ">"],
    ["XREAD", "STREAMS", "x1", "0"], ["XACK", "x1", "g1", "11-1", "99-1"],
    ["XACK", "x1", "g1", "11-1"], ["XCLAIM", "x1", "g1", "c3", "0", "12-1"],
    ["XCLAIM", "x1", "g1", "c3", "0", "12-1", "JUSTID"], ["XCLAIM", "x1", "g1", "c3", "0", "99-1"],
    ["XCLAIM", "x1", "g1", "c3", "0", "99-1", "LASTID", "50-0"],
    ["XCLAIM", "x1", "g1", "c3", "0", "12-1", "LASTID", "60-0"],
    ["XCLAIM", "x1", "g1", "c3", "100000000", "12-1"], ["XDEL", "x1", "12-1"],
    ["XCLAIM", "x1", "g1", "c3", "0", "12-1"], ["XADD", "x1", "70-1", "f", "v"],
    ["XADD", "x1", "71-1", "f", "v"],
    ["XREADGROUP", "GROUP", "g1", "c1", "STREAMS", "x1", ">"], ["XDEL", "x1", "70-1"],
    ["XAUTOCLAIM", "x1", "g1", "c4", "0", "0"], ["XAUTOCLAIM", "x1", "g1", "c4", "0", "0"],
    ["XAUTOCLAIM", "x1", "g1", "c9", "100000000", "0"], ["XAUTOCLAIM", "x1", "nog", "c", "0", "0"],
    ["XGROUP", "DELCONSUMER", "x1", "g1", "c4"], ["XGROUP", "DELCONSUMER", "x1", "g1", "nope"],
    ["XADD", "x1", "80-1", "f", "v"], ["XCLAIM", "x1", "g1", "c3", "0", "80-1"],
    ["XCLAIM", "x1", "g1", "c3", "0", "80-1", "FORCE"],
    ["XCLAIM", "x1", "g1", "c7", "0", "80-1", "IDLE", "5", "RETRYCOUNT", "3"],
    ["XREADGROUP", "GROUP", "g1", "c8", "NOACK", "STREAMS", "x1", "0"],
    ["XADD", "x1", "81-1", "f", "v"],
    ["XREADGROUP", "GROUP", "g1", "c8", "NOACK", "STREAMS", "x1", ">"],
    ["XGROUP", "CREATE", "x1", "s1", "$", "MKSTREAM"], ["XGROUP", "CREATE", "s1", "g", "$"],
    ["XGROUP", "DESTROY", "x1", "g1"], ["XGROUP", "DESTROY", "x1", "g1"],
    ["XADD", "s1", "*", "f", "v"], ["XLEN", "x1"],
]

HLL = [
    ["PFADD", "hll", "a", "b", "c"], ["PFADD", "hll", "a"], ["PFADD", "hll2"], ["PFADD", "hll2"],
    ["PFCOUNT", "hll"], ["PFCOUNT", "hll"], ["PFCOUNT", "hll", "hll2"], ["PFCOUNT", "nohll"],
    ["PFMERGE", "hll3", "hll", "hll2"], ["PFMERGE", "hll3"], ["PFADD", "s1", "a"],
    ["PFDEBUG", "TODENSE", "hll"], ["PFDEBUG", "TODENSE", "hll"], ["PFDEBUG", "GETREG", "hll3"],
    ["PFCOUNT", "hll3"], ["PFADD", "hll", *[f"e{i}" for i in range(40)]],
    ["PFMERGE", "hll4", "s1"], ["PFMERGE", "hll4", "hll", "l0"], ["PFCOUNT", "s1"],
]

GEO = [
    ["GEOADD", "geo", "13.361389", "38.115556", "Palermo", "15.087269", "37.502669", "Catania"],
    ["GEOADD", "geo", "13.361389", "38.115556", "Palermo"],
    ["GEOADD", "geo", "XX", "CH", "13.4", "38.1", "Palermo"],
    ["GEOADD", "geo", "NX", "13.5", "38.1", "Palermo"], ["GEOADD", "geo", "500", "38", "Bad"],
    ["GEORADIUS", "geo", "15", "37", "200", "km", "STORE", "gd"],
    ["GEOSEARCHSTORE", "gd", "geo", "FROMLONLAT", "15", "37", "BYRADIUS", "1", "km"],
    ["GEOSEARCHSTORE", "gd", "geo", "FROMLONLAT", "15", "37", "BYRADIUS", "1", "km"],
    ["GEOSEARCHSTORE", "gd", "nogeo", "FROMLONLAT", "15", "37", "BYRADIUS", "1", "km"],
    ["GEOSEARCHSTORE", "gd", "geo", "FROMLONLAT", "15", "37", "BYRADIUS", "500", "km",
     "STOREDIST"],
    ["GEORADIUSBYMEMBER", "geo", "Palermo", "500", "km", "STOREDIST", "gd2"],
    ["GEOADD", "s1", "13", "38", "x"],
    ["GEORADIUS", "geo", "15", "37", "500", "km", "COUNT", "1", "STORE", "gd"],
    ["GEORADIUS", "s1", "15", "37", "500", "km", "STORE", "gd"],
]

KEYSPACE = [
    ["MSET", "a", "1", "b", "2", "c", "3", "d", "4", "e", "5"],
    ["DEL", "a", "b", "c", "nokey", "a"], ["UNLINK", "d", "e", "nokey"], ["DEL", "nokey"],
    ["SET", "k1", "v"], ["EXPIRE", "k1", "100"], ["EXPIRE", "k1", "100", "NX"],
    ["EXPIRE", "k1", "200", "XX"], ["EXPIRE", "k1", "50", "GT"], ["PEXPIRE", "k1", "500000", "GT"],
    ["EXPIRE", "k1", "10", "LT"], ["EXPIRE", "nokey", "10"], ["EXPIRE", "k1", "abc"],
    ["PERSIST", "k1"], ["PERSIST", "k1"], ["PERSIST", "nokey"], ["SET", "k2", "v"],
    ["EXPIREAT", "k2", "1"], ["SET", "k2", "v"], ["PEXPIREAT", "k2", "1"], ["SET", "k2", "v"],
    ["EXPIRE", "k2", "-5"], ["TTL", "k1"],
    ["RENAME", "k1", "k1x"], ["RENAME", "k1x", "k1x"], ["RENAME", "nokey", "x"],
    ["SET", "k4", "v"], ["RENAMENX", "k1x", "k4"], ["RENAMENX", "k1x", "k1y"],
    ["RENAMENX", "k1y", "k1y"], ["COPY", "k1y", "k1z"], ["COPY", "k1y", "k1z"],
    ["COPY", "k1y", "k1z", "REPLACE"], ["COPY", "k1y", "k1z", "DB", "1"], ["COPY", "nokey", "x"],
    ["COPY", "k1y", "k1y"], ["MOVE", "k1z", "1"], ["MOVE", "k1y", "2"], ["MOVE", "nokey", "2"],
    ["MOVE", "k4", "0"], ["RENAME", "{t}r1", "{t}r2"], ["SET", "{t}r1", "v"],
    ["RENAME", "{t}r1", "{t}r2"], ["SWAPDB", "0", "1"], ["SWAPDB", "1", "0"],
    ["SWAPDB", "0", "0"], ["SWAPDB", "0", "99"],
    ["RPUSH", "sl", "3", "1", "2"], ["SORT", "sl", "STORE", "sd"], ["SORT", "nokey", "STORE", "sd"],
    ["SORT", "nokey", "STORE", "sd"], ["SORT", "sl"], ["SORT", "sl", "LIMIT", "0", "1", "STORE", "{t}sd"],
    ["SORT", "k4", "STORE", "sd"], ["SORT_RO", "sl"],
    ["RPUSH", "{t}sl", "3", "1", "2"], ["SET", "{t}w_1", "x"],
    ["SORT", "{t}sl", "GET", "#", "GET", "{t}w_*", "STORE", "sd"],
    ["SORT", "{t}sl", "BY", "{t}w_*", "GET", "{t}w_*", "STORE", "{t}sd"],
    ["SORT", "sl", "BY", "nosort", "STORE", "sd"], ["SORT", "sl", "BAD", "STORE", "sd"],
    ["DEBUG", "POPULATE", "5"], ["DEL", "key:0", "key:1"],
    ["SET", "k4", "v", "EX", "100"], ["TOUCH", "k4"], ["EXISTS", "k4"],
]


@pytest.mark.parametrize("script", [STRINGS, BITOPS, LISTS, HASHES, SETS, ZSETS, STREAMS, HLL,
                                    GEO, KEYSPACE],
                         ids=["strings", "bitops", "lists", "hashes", "sets", "zsets", "streams",
                              "hll", "geo", "keyspace"])
def test_scripted(pair, script):
    # A string and a list that the scripts run WRONGTYPE writes against.
    pair.run(["SET", "s1", "v"])
    pair.run(["RPUSH", "l0", "x"])
    for cmd in script:
        pair.run(cmd)


def test_restore(pair):
    pair.run(["RPUSH", "src", "a", "b"])
    payload = pair.ref.call("DUMP", "src")
    assert payload
    for cmd in (["RESTORE", "rk", "0", payload], ["RESTORE", "rk", "0", payload],
                ["RESTORE", "rk", "0", payload, "REPLACE"],
                ["RESTORE", "rk", "100000", payload, "REPLACE"],
                ["RESTORE", "rk", "1", payload, "REPLACE", "ABSTTL"],
                ["RESTORE", "rk", "1", payload, "ABSTTL"],
                ["RESTORE", "rk2", "0", b"not a payload"], ["RESTORE", "rk2", "-1", payload]):
        pair.run(cmd)


def test_resetstat_keeps_the_counter(pair):
    pair.run(["MSET", "a", "1", "b", "2"])
    pair.run(["CONFIG", "RESETSTAT"])
    assert pair.counters()[1] > 0


def test_flush(pair):
    for db in ("0", "1", "0"):
        pair.run(["SELECT", db])
        pair.run(["MSET", *[x for i in range(20) for x in (f"key{db}:{i}", "v")]])
        pair.run(["SADD", f"set{db}", "a", "b"])
    pair.run(["FLUSHDB"])
    pair.run(["FLUSHDB"])
    pair.run(["MSET", "a", "1", "b", "2", "c", "3"])
    pair.run(["FLUSHALL", "ASYNC"])
    pair.run(["FLUSHALL"])
    pair.run(["FLUSHDB", "BAD"])


def test_transactions(pair, redis_server, sut):
    pair.run(["SET", "s1", "v"])
    for cmd in (["MULTI"], ["SET", "a", "1"], ["SADD", "st", "1", "2"], ["DEL", "a", "s1", "zz"],
                ["MSET", "x", "1", "y", "2", "z", "3"], ["INCR", "st"], ["LPUSH", "l", "1"],
                ["RPOPLPUSH", "l", "l2"], ["EXPIRE", "x", "100"], ["EXEC"]):
        pair.run(cmd)
    for cmd in (["MULTI"], ["SET", "a", "1"], ["DISCARD"], ["MULTI"], ["SET", "a"], ["EXEC"]):
        pair.run(cmd)
    # A WATCHed key changed by another client: EXEC runs nothing.
    other_ref, other_sut = redis_server.raw(), sut.raw()
    try:
        pair.run(["WATCH", "a", "x"])
        before = pair.counters()
        assert other_ref.call("SET", "x", "2") == other_sut.call("SET", "x", "2") == b"OK"
        pair.check("SET x from another client", before, pair.counters())
        for cmd in (["MULTI"], ["SET", "a", "3"], ["SET", "b", "3"], ["EXEC"]):
            pair.run(cmd)
    finally:
        other_ref.close()
        other_sut.close()


# (setup commands, the blocking command, the write that serves it). Redis 7.2 runs a blocked
# command again when a write serves it, so it counts what the command counts when it finds the
# data at once (7.0 counted nothing for a BLPOP/BRPOP/BLMOVE/BRPOPLPUSH served later, and only
# the new consumer for XREADGROUP).
BLOCKED = [
    ([], ["BLPOP", "bl1", "0"], ["RPUSH", "bl1", "a", "b"]),
    ([], ["BRPOP", "bl1", "nokey", "bl2", "0"], ["RPUSH", "bl2", "a", "b"]),
    ([], ["BLMPOP", "0", "2", "bl3", "bl4", "LEFT", "COUNT", "5"], ["RPUSH", "bl4", "a", "b", "c"]),
    ([], ["BLMOVE", "bl5", "bl6", "LEFT", "RIGHT", "0"], ["LPUSH", "bl5", "a"]),
    ([], ["BRPOPLPUSH", "bl7", "bl8", "0"], ["LPUSH", "bl7", "a", "b"]),
    ([], ["BZPOPMIN", "bz1", "bz2", "0"], ["ZADD", "bz2", "1", "a", "2", "b"]),
    ([], ["BZPOPMAX", "bz3", "0"], ["ZADD", "bz3", "1", "a"]),
    ([], ["BZMPOP", "0", "1", "bz4", "MAX", "COUNT", "5"], ["ZADD", "bz4", "1", "a", "2", "b"]),
    ([["XGROUP", "CREATE", "xs", "g", "$", "MKSTREAM"]],
     ["XREADGROUP", "GROUP", "g", "newc", "BLOCK", "0", "STREAMS", "xs", ">"],
     ["XADD", "xs", "*", "f", "v"]),
    ([["XGROUP", "CREATE", "xs2", "g", "$", "MKSTREAM"],
      ["XGROUP", "CREATECONSUMER", "xs2", "g", "oldc"]],
     ["XREADGROUP", "GROUP", "g", "oldc", "BLOCK", "0", "STREAMS", "xs2", ">"],
     ["XADD", "xs2", "*", "f", "v"]),
    ([], ["XREAD", "BLOCK", "0", "STREAMS", "xs3", "$"], ["XADD", "xs3", "*", "f", "v"]),
]


@pytest.mark.shardis_only  # Redis 7.2's counts
@pytest.mark.parametrize("setup,blocking,trigger", BLOCKED,
                         ids=[b[1][0].lower() + str(i) for i, b in enumerate(BLOCKED)])
def test_blocked_client_served(pair, redis_server, sut, setup, blocking, trigger):
    """shardis blocks and is served by the write; redis-server gets the write, then the command,
    which finds the data and runs at once: what Redis 7.2 counts for the served command."""
    for cmd in setup:
        pair.run(cmd)
    waiter_sut = sut.raw(timeout=30)
    try:
        before = pair.counters()
        waiter_sut.send_command(*blocking)
        assert wait_for(lambda: info_int(pair.sut_info, "clients", "blocked_clients") == 1,
                        5.0), "the client did not block"
        pair.sut.call(*trigger)
        raw_sut, _ = waiter_sut.read_reply()
        pair.ref.call(*trigger)
        # XREAD's "$" would wait for the next entry: "0" reads the one the write added.
        raw_ref = pair.ref.call_raw(*["0" if a == "$" else a for a in blocking])
        pair.check([*blocking, "served by", *trigger], before, pair.counters(), raw_ref, raw_sut)
    finally:
        waiter_sut.close()


def run_random(pair, gen, count):
    """gen's commands, one at a time, with the counters compared after each. FLUSHDB/FLUSHALL are
    left out: they count the keys still stored, and a key whose TTL passed is removed by each
    server's active expiry at its own moment."""
    done = 0
    while done < count:
        cmd = gen.command()
        if cmd[0].upper() in ("FLUSHDB", "FLUSHALL"):
            continue
        pair.run(cmd)
        done += 1
    for conn in (pair.ref, pair.sut):
        conn.call("RESET")


def test_random_stream(pair, diff_params):
    """test_differential's random stream, all families mixed."""
    seed, count = diff_params
    run_random(pair, test_differential.Generator(seed), min(count, 3000))


@pytest.mark.parametrize("family", diff_families.ALL,
                         ids=[f.__name__.rsplit(".", 1)[-1] for f in diff_families.ALL])
def test_random_family(pair, diff_params, family):
    """One family's random commands (with a few string and keyspace ones so that types clash)."""
    seed, count = diff_params
    gen = test_differential.Generator(seed, families=[family], base_weight=0.1)
    run_random(pair, gen, min(count, 1000))


# ---- What Redis' TCL suite asserts about the counter (tests/unit/bitops.tcl, other.tcl,
# integration/rdb.tcl), against the server under test alone.

@pytest.fixture
def client_and_info(sut):
    """A redis-py client on the server under test and a raw connection for INFO."""
    r, info = sut.client(), sut.raw()
    yield r, info
    r.close()
    info.close()


def counted(r, info, *commands) -> int:
    """How far the counter moves for the commands."""
    before = changes(info)
    for cmd in commands:
        r.execute_command(*cmd)
    return changes(info) - before


def test_tcl_setbit_bitfield_only_increase_dirty_when_the_value_changed(client_and_info):
    r, info = client_and_info
    r.delete("foo{t}", "foo2{t}", "foo3{t}")

    def setbit(offset, v):
        return ["SETBIT", "foo{t}", offset, v]

    def bitfield_set(offset, v):
        return ["BITFIELD", "foo2{t}", "SET", "i5", offset, v]

    # Create a new key, always increase the dirty.
    assert counted(r, info, setbit(0, 0), bitfield_set(0, 0)) == 2
    # No change.
    assert counted(r, info, setbit(0, 0), bitfield_set(0, 0)) == 0
    # Do a change and a no change.
    assert counted(r, info, *[setbit(0, v) for v in (1, 1, 0, 0)],
                   *[bitfield_set(0, v) for v in (1, 1, 0, 0)]) == 4
    # BITFIELD INCRBY always increase dirty.
    incr = ["BITFIELD", "foo3{t}", "INCRBY", "i5", 0, 1]
    assert counted(r, info, incr, incr) == 2
    # Change length only
    assert counted(r, info, setbit(90, 0), bitfield_set(90, 0)) == 2


def test_tcl_flushall_does_not_reset_the_counter_without_save(client_and_info):
    r, info = client_and_info
    r.set("key", "value")
    r.flushall()
    assert changes(info) > 0


def test_tcl_populate_counts_every_set(client_and_info):
    """rdb.tcl populates 5000 keys (pipelined SETs) and expects more than 999 changes."""
    r, info = client_and_info
    r.flushall()
    before = changes(info)
    pipe = r.pipeline(transaction=False)
    for j in range(5000):
        pipe.set(f"key:{j}", "AAA")
    pipe.execute()
    assert changes(info) - before == 5000  # exactly: one per SET


def test_tcl_flushall_resets_the_counter_with_a_save_schedule(server_factory):
    """other.tcl: with a save schedule, FLUSHALL saves, and nothing is left to save."""
    srv = server_factory(threads=THREADS)
    r, info = srv.client(), srv.raw()
    try:
        r.config_set("save", "3600 1 300 100 60 10000")
        r.set("key", "value")
        r.flushall()
        assert changes(info) == 0
    finally:
        r.close()
        info.close()


def test_tcl_bgsave_resets_the_counter(server_factory):
    """rdb.tcl: "bgsave resets the change counter"."""
    srv = server_factory(threads=THREADS)
    r, info = srv.client(), srv.raw()
    try:
        r.mset({f"key:{j}": "v" for j in range(100)})
        assert changes(info) >= 100
        r.bgsave()
        assert wait_for(lambda: info_int(info, "persistence", "rdb_bgsave_in_progress") == 0, 10.0)
        assert changes(info) == 0
    finally:
        r.close()
        info.close()
