"""Differential test of option parsing: fixed command lines with every kind of bad or unusual
option (unknown option, option missing its value, non-number, out of range, repeated options,
options in another order) go to the Debian redis-server and to the server under test, and every
reply must be the same bytes (doubles: the same numbers, as their text changed in Redis 7.2). The random differential test (test_differential.py) draws options
too, but rarely reaches these corners; these lines pin them.

A line whose reply depends on the moment or on the other clients (CLIENT LIST, idle times) is
marked ERRORS_ONLY: both servers must then fail with the same error or both succeed.
"""

import pytest

import diff_families

ERRORS_ONLY = "errors-only"

# The data the cases read: a geo set, a stream with a group and pending entries, strings.
SETUP = [
    ["GEOADD", "g", "13.361389", "38.115556", "Palermo", "15.087269", "37.502669", "Catania"],
    ["SET", "str", "foobar"],
    ["XADD", "s", "1-1", "f", "v"],
    ["XADD", "s", "2-1", "f", "v"],
    ["XADD", "s", "3-1", "f", "v"],
    ["XGROUP", "CREATE", "s", "grp", "0"],
    ["XREADGROUP", "GROUP", "grp", "alice", "STREAMS", "s", ">"],
]

GEO = [
    # GEOADD options
    ["GEOADD", "g2", "NX", "XX", "1", "1", "a"],
    ["GEOADD", "g2", "nx", "ch", "1", "1", "a"],
    ["GEOADD", "g2", "CH", "CH", "XX", "1", "1", "a"],
    ["GEOADD", "g2", "GT", "1", "1", "a"],
    ["GEOADD", "g2", "1", "1", "a", "2"],
    ["GEOADD", "g2", "x", "1", "a"],
    ["GEOADD", "g2", "1", "x", "a"],
    ["GEOADD", "g2", "1", "1", "a", "200", "1", "b"],
    ["GEOADD", "g2", "1", "91", "a"],
    ["GEOADD", "g2", "nx", "ch", "xx"],
    ["GEOADD", "g2", "nx", "ch", "ch"],
    # GEORADIUS family
    ["GEORADIUS", "g", "15", "37", "200", "km", "WITHDIST", "ASC"],
    ["GEORADIUS", "g", "15", "37", "200", "km", "COUNT"],
    ["GEORADIUS", "g", "15", "37", "200", "km", "COUNT", "0"],
    ["GEORADIUS", "g", "15", "37", "200", "km", "COUNT", "-3"],
    ["GEORADIUS", "g", "15", "37", "200", "km", "COUNT", "x"],
    ["GEORADIUS", "g", "15", "37", "200", "km", "COUNT", "1", "COUNT", "2", "DESC", "ASC"],
    ["GEORADIUS", "g", "15", "37", "200", "km", "ANY"],
    ["GEORADIUS", "g", "15", "37", "200", "km", "ANY", "COUNT", "1"],
    ["GEORADIUS", "g", "15", "37", "200", "furlong"],
    ["GEORADIUS", "g", "15", "37", "x", "km"],
    ["GEORADIUS", "g", "15", "37", "-1", "km"],
    ["GEORADIUS", "g", "x", "37", "-1", "km"],
    ["GEORADIUS", "g", "15", "37", "200", "km", "STORE"],
    ["GEORADIUS", "g", "15", "37", "200", "km", "STORE", "dst", "WITHDIST"],
    ["GEORADIUS", "g", "15", "37", "200", "km", "STORE", "dst", "STOREDIST", "dst2"],
    ["GEORADIUS", "g", "15", "37", "200", "km", "STOREDIST", "dst", "COUNT", "1"],
    ["ZRANGE", "dst", "0", "-1", "WITHSCORES"],
    ["GEORADIUS", "g", "15", "37", "200", "km", "FROMMEMBER", "Palermo"],
    ["GEORADIUS", "g", "15", "37", "200", "km", "BOGUS"],
    ["GEORADIUS_RO", "g", "15", "37", "200", "km", "STORE", "dst"],
    ["GEORADIUS_RO", "g", "15", "37", "200", "km", "WITHCOORD", "WITHHASH", "count", "1"],
    ["GEORADIUSBYMEMBER", "g", "Palermo", "200", "km", "WITHDIST"],
    ["GEORADIUSBYMEMBER", "g", "nope", "200", "km"],
    ["GEORADIUSBYMEMBER", "g", "Palermo", "x", "km"],
    ["GEORADIUSBYMEMBER", "missing", "Palermo", "x", "km"],
    ["GEORADIUSBYMEMBER", "missing", "Palermo", "1", "km", "BOGUS"],
    ["GEORADIUSBYMEMBER", "missing", "Palermo", "1", "km", "STORE", "dst3"],
    ["GEORADIUSBYMEMBER_RO", "g", "Palermo", "200", "km", "STOREDIST", "x"],
    # GEOSEARCH / GEOSEARCHSTORE
    ["GEOSEARCH", "g", "FROMLONLAT", "15", "37", "BYRADIUS", "200", "km", "ASC"],
    ["GEOSEARCH", "g", "BYRADIUS", "200", "km", "FROMLONLAT", "15", "37"],
    ["GEOSEARCH", "g", "FROMLONLAT", "15", "37"],
    ["GEOSEARCH", "g", "BYRADIUS", "200", "km"],
    ["GEOSEARCH", "g", "FROMLONLAT", "15", "37", "FROMMEMBER", "Palermo", "BYRADIUS", "1", "m"],
    ["GEOSEARCH", "g", "FROMMEMBER", "Palermo", "FROMLONLAT", "15", "37", "BYRADIUS", "1", "m"],
    ["GEOSEARCH", "g", "FROMMEMBER", "Palermo", "BYRADIUS", "1", "m", "BYBOX", "1", "1", "m"],
    ["GEOSEARCH", "g", "FROMMEMBER", "Palermo", "BYBOX", "1", "1", "m", "BYRADIUS", "1", "m"],
    ["GEOSEARCH", "g", "FROMMEMBER", "Palermo", "BYRADIUS", "1", "m", "BYRADIUS", "2", "km"],
    ["GEOSEARCH", "g", "FROMMEMBER", "Palermo", "FROMMEMBER", "Catania", "BYRADIUS", "200",
     "km"],
    ["GEOSEARCH", "g", "FROMMEMBER", "nope", "BYRADIUS", "1", "m"],
    ["GEOSEARCH", "g", "FROMMEMBER", "Palermo", "BYBOX", "x", "1", "m"],
    ["GEOSEARCH", "g", "FROMMEMBER", "Palermo", "BYBOX", "1", "x", "m"],
    ["GEOSEARCH", "g", "FROMMEMBER", "Palermo", "BYBOX", "x", "x", "m"],
    ["GEOSEARCH", "g", "FROMMEMBER", "Palermo", "BYBOX", "-1", "1", "m"],
    ["GEOSEARCH", "g", "FROMMEMBER", "Palermo", "BYBOX", "400", "400", "km", "WITHDIST"],
    ["GEOSEARCH", "g", "FROMMEMBER", "Palermo", "BYBOX", "1", "1", "parsec"],
    ["GEOSEARCH", "g", "FROMMEMBER", "Palermo", "BYBOX", "1", "1"],
    ["GEOSEARCH", "g", "FROMMEMBER", "Palermo", "BYRADIUS", "1"],
    ["GEOSEARCH", "g", "FROMLONLAT", "15", "BYRADIUS", "1", "m"],
    ["GEOSEARCH", "g", "FROMLONLAT", "x", "37", "BYRADIUS", "1", "m"],
    ["GEOSEARCH", "g", "FROMLONLAT", "15", "95", "BYRADIUS", "1", "m"],
    ["GEOSEARCH", "g", "FROMMEMBER", "Palermo", "BYRADIUS", "200", "km", "STORE", "d"],
    ["GEOSEARCH", "g", "FROMMEMBER", "Palermo", "BYRADIUS", "200", "km", "STOREDIST"],
    ["GEOSEARCH", "g", "FROMMEMBER", "Palermo", "BYRADIUS", "200", "km", "COUNT", "1", "ANY",
     "WITHHASH"],
    ["GEOSEARCH", "missing", "FROMMEMBER", "Palermo", "BYRADIUS", "200", "km"],
    ["GEOSEARCH", "missing", "FROMMEMBER", "Palermo"],
    ["GEOSEARCHSTORE", "d", "g", "FROMMEMBER", "Palermo", "BYRADIUS", "200", "km", "STOREDIST"],
    ["ZRANGE", "d", "0", "-1", "WITHSCORES"],
    ["GEOSEARCHSTORE", "d", "g", "FROMMEMBER", "Palermo", "BYRADIUS", "200", "km", "WITHDIST"],
    ["GEOSEARCHSTORE", "d", "g", "FROMMEMBER", "Palermo", "BYRADIUS", "200", "km", "STORE",
     "x"],
    ["GEOSEARCHSTORE", "d", "g", "BYRADIUS", "200", "km", "STOREDIST", "COUNT", "1"],
    ["GEOSEARCHSTORE", "d", "missing", "FROMMEMBER", "Palermo", "BYRADIUS", "200", "km"],
    ["EXISTS", "d"],
    ["GEODIST", "g", "Palermo", "Catania", "KM"],
    ["GEODIST", "g", "Palermo", "Catania", "lightyear"],
    ["GEODIST", "g", "Palermo", "Catania", "km", "x"],
]

BITOPS = [
    ["BITCOUNT", "str", "0", "-1", "BYTE"],
    ["BITCOUNT", "str", "0", "-1", "bit"],
    ["BITCOUNT", "str", "0", "-1", "nibble"],
    ["BITCOUNT", "str", "-1", "-2", "nibble"],
    ["BITCOUNT", "str", "x", "-1", "nibble"],
    ["BITCOUNT", "str", "0", "x"],
    ["BITCOUNT", "str", "0"],
    ["BITCOUNT", "str", "0", "1", "BIT", "BIT"],
    ["BITCOUNT", "missing", "x", "y", "z"],
    ["BITPOS", "str", "1", "2", "-1", "BIT"],
    ["BITPOS", "str", "0", "2", "-1", "byte"],
    ["BITPOS", "str", "1", "2", "x", "nibble"],
    ["BITPOS", "str", "1", "2", "x", "bit"],
    ["BITPOS", "str", "1", "x", "1", "nibble"],
    ["BITPOS", "str", "1", "2"],
    ["BITPOS", "str", "0", "2", "BIT"],
    ["BITPOS", "str", "1", "2", "4", "BIT", "x"],
    ["BITPOS", "str", "2"],
    ["BITPOS", "str", "x"],
]

STREAMS = [
    # XRANGE COUNT
    ["XRANGE", "s", "-", "+", "COUNT", "2"],
    ["XRANGE", "s", "-", "+", "COUNT", "-2"],
    ["XRANGE", "s", "-", "+", "COUNT", "x"],
    ["XRANGE", "s", "-", "+", "COUNT"],
    ["XRANGE", "s", "-", "+", "COUNT", "1", "COUNT", "3"],
    ["XRANGE", "s", "-", "+", "LIMIT", "3"],
    ["XREVRANGE", "s", "+", "-", "COUNT", "1"],
    # XSETID
    ["XSETID", "s", "3-1", "ENTRIESADDED", "x"],
    ["XSETID", "s", "3-1", "ENTRIESADDED", "-1"],
    ["XSETID", "s", "3-1", "ENTRIESADDED"],
    ["XSETID", "s", "3-1", "MAXDELETEDID", "x"],
    ["XSETID", "s", "3-1", "MAXDELETEDID", "4-1"],
    ["XSETID", "s", "3-1", "BOGUS", "1"],
    ["XSETID", "s", "3-1", "ENTRIESADDED", "1"],
    ["XSETID", "s", "3-1", "ENTRIESADDED", "5", "MAXDELETEDID", "2-1"],
    # XPENDING
    ["XPENDING", "s", "grp"],
    ["XPENDING", "s", "grp", "-", "+"],
    ["XPENDING", "s", "grp", "-", "+", "x"],
    ["XPENDING", "s", "grp", "x", "+", "10"],
    ["XPENDING", "s", "grp", "-", "x", "10"],
    ["XPENDING", "s", "grp", "x", "+", "x"],
    ["XPENDING", "s", "grp", "(-", "+", "10"],
    ["XPENDING", "s", "grp", "IDLE", "x", "-", "+", "10"],
    ["XPENDING", "s", "grp", "IDLE", "10", "-", "+"],
    ["XPENDING", "s", "grp", "IDLE", "10", "-", "+", "x"],
    ["XPENDING", "s", "grp", "idle", "0", "-", "+", "-5"],
    ["XPENDING", "s", "grp", "-", "+", "10", "bob"],
    ["XPENDING", "s", "grp", "-", "+", "10", "bob", "extra", "more"],
    ["XPENDING", "s", "grp", "-", "+", "10", "bob", "extra", "more", "toomany"],
    ["XPENDING", "s", "nogroup", "-", "+", "10"],
    ["XPENDING", "missing", "grp", "x", "+", "10"],
    # XAUTOCLAIM (JUSTID replies carry no times)
    ["XAUTOCLAIM", "s", "grp", "bob", "0", "0", "COUNT", "1", "JUSTID"],
    ["XAUTOCLAIM", "s", "grp", "bob", "0", "0", "COUNT", "0"],
    ["XAUTOCLAIM", "s", "grp", "bob", "0", "0", "COUNT", "x"],
    ["XAUTOCLAIM", "s", "grp", "bob", "0", "0", "COUNT", "-1"],
    ["XAUTOCLAIM", "s", "grp", "bob", "0", "0", "COUNT", "9223372036854775807"],
    ["XAUTOCLAIM", "s", "grp", "bob", "0", "0", "COUNT"],
    ["XAUTOCLAIM", "s", "grp", "bob", "0", "0", "JUSTID", "JUSTID", "COUNT", "5"],
    ["XAUTOCLAIM", "s", "grp", "bob", "0", "0", "BOGUS"],
    ["XAUTOCLAIM", "s", "grp", "bob", "x", "0"],
    ["XAUTOCLAIM", "s", "grp", "bob", "0", "x"],
    ["XAUTOCLAIM", "s", "nogrp", "bob", "0", "0", "JUSTID"],
    ["XAUTOCLAIM", "missing", "grp", "bob", "0", "0", "COUNT", "x"],
    # XGROUP
    ["XGROUP", "CREATE", "s", "g2", "0", "ENTRIESREAD", "x"],
    ["XGROUP", "CREATE", "s", "g2", "0", "ENTRIESREAD", "-2"],
    ["XGROUP", "CREATE", "s", "g2", "0", "ENTRIESREAD"],
    ["XGROUP", "CREATE", "s", "g2", "0", "BOGUS"],
    ["XGROUP", "CREATE", "s2", "g2", "$", "MKSTREAM", "MKSTREAM", "ENTRIESREAD", "-1"],
    ["XGROUP", "CREATE", "s", "g3", "0", "ENTRIESREAD", "2", "mkstream"],
    ["XGROUP", "CREATE", "s3", "g3", "0"],
    ["XGROUP", "SETID", "s", "g3", "0", "MKSTREAM"],
    ["XGROUP", "SETID", "s", "g3", "0", "ENTRIESREAD", "x"],
    ["XGROUP", "SETID", "s", "g3", "0", "ENTRIESREAD", "1"],
    ["XGROUP", "SETID", "s", "g3", "0", "ENTRIESREAD", "1", "ENTRIESREAD", "2"],
    ["XINFO", "GROUPS", "s"],
    # XINFO STREAM
    ["XINFO", "STREAM", "s", "FULL", "COUNT", "x"],
    ["XINFO", "STREAM", "s", "FULL", "COUNT"],
    ["XINFO", "STREAM", "s", "FULL", "LIMIT", "1"],
    ["XINFO", "STREAM", "s", "COUNT", "1"],
    ["XINFO", "STREAM", "s", "BOGUS"],
    ["XINFO", "STREAM", "s", "FULL", "COUNT", "1", "x"],
    ["XINFO", "STREAM", "missing", "FULL", "COUNT", "x"],
    (["XINFO", "STREAM", "s", "FULL", "COUNT", "-1"], ERRORS_ONLY),  # delivery times
    # XCLAIM (JUSTID: no delivery times in the reply)
    ["XCLAIM", "s", "grp", "carol", "x", "1-1"],
    ["XCLAIM", "s", "grp", "carol", "0", "1-1", "IDLE", "x"],
    ["XCLAIM", "s", "grp", "carol", "0", "1-1", "TIME", "x"],
    ["XCLAIM", "s", "grp", "carol", "0", "1-1", "RETRYCOUNT", "x"],
    ["XCLAIM", "s", "grp", "carol", "0", "1-1", "LASTID", "x"],
    ["XCLAIM", "s", "grp", "carol", "0", "1-1", "BOGUS"],
    ["XCLAIM", "s", "grp", "carol", "0", "1-1", "IDLE"],
    ["XCLAIM", "s", "grp", "carol", "0", "1-1", "JUSTID", "RETRYCOUNT", "3", "FORCE", "JUSTID"],
    ["XCLAIM", "s", "grp", "carol", "0", "1-1", "x", "JUSTID"],
    ["XCLAIM", "s", "nogrp", "carol", "x", "1-1"],
    # XADD / XTRIM
    ["XADD", "s", "MAXLEN", "x", "*", "f", "v"],
    ["XADD", "s", "MAXLEN", "-1", "*", "f", "v"],
    ["XADD", "s", "MAXLEN", "~", "x", "*", "f", "v"],
    ["XADD", "s", "MAXLEN", "10", "MINID", "1", "*", "f", "v"],
    ["XADD", "s", "MAXLEN", "10", "LIMIT", "5", "*", "f", "v"],
    ["XADD", "s", "MAXLEN", "~", "10", "LIMIT", "x", "*", "f", "v"],
    ["XADD", "s", "MAXLEN", "~", "10", "LIMIT", "-1", "*", "f", "v"],
    ["XADD", "s", "LIMIT", "5", "9-1", "f", "v"],
    ["XADD", "s", "NOMKSTREAM", "NOMKSTREAM", "9-2", "f", "v"],
    ["XADD", "s", "MINID", "x", "9-3", "f", "v"],
    ["XADD", "s", "bogus", "f", "v"],
    ["XADD", "s", "9-4", "f"],
    ["XTRIM", "s", "MAXLEN"],
    ["XTRIM", "s", "BOGUS", "1"],
    ["XTRIM", "s", "LIMIT", "1"],
    ["XTRIM", "s", "MAXLEN", "=", "100", "LIMIT", "1"],
    ["XTRIM", "s", "MINID", "~", "0", "LIMIT", "10"],
    ["XTRIM", "s", "MAXLEN", "1000", "x"],
    # XREAD / XREADGROUP
    ["XREAD", "COUNT", "x", "STREAMS", "s", "0"],
    ["XREAD", "BLOCK", "x", "STREAMS", "s", "0"],
    ["XREAD", "BLOCK", "-1", "STREAMS", "s", "0"],
    ["XREAD", "STREAMS", "s"],
    # An unbalanced STREAMS list: Redis 7.2 names the command (test_compat72.py).
    ["XREAD", "BOGUS", "STREAMS", "s", "0"],
    ["XREAD", "COUNT", "1", "COUNT", "2", "STREAMS", "s", "0"],
    ["XREADGROUP", "GROUP", "grp", "dan", "NOACK", "NOACK", "COUNT", "1", "STREAMS", "s", "0"],
    ["XREADGROUP", "COUNT", "1", "STREAMS", "s", "0"],
    ["XREADGROUP", "GROUP", "grp", "STREAMS", "s", "0"],
]

CLIENT = [
    (["CLIENT", "LIST", "TYPE", "normal"], ERRORS_ONLY),
    ["CLIENT", "LIST", "TYPE", "bogus"],
    ["CLIENT", "LIST", "TYPE", "master"],
    ["CLIENT", "LIST", "TYPE"],
    ["CLIENT", "LIST", "TYPE", "normal", "x"],
    ["CLIENT", "LIST", "ID", "x"],
    ["CLIENT", "LIST", "ID", "99999", "x"],
    ["CLIENT", "LIST", "ID", "99999", "99998"],
    ["CLIENT", "LIST", "ID"],
    ["CLIENT", "LIST", "BOGUS"],
    ["CLIENT", "KILL", "1.2.3.4:5"],
    ["CLIENT", "KILL", "ID"],
    ["CLIENT", "KILL", "ID", "0"],
    ["CLIENT", "KILL", "ID", "x"],
    ["CLIENT", "KILL", "ID", "-5"],
    ["CLIENT", "KILL", "ID", "99999"],
    ["CLIENT", "KILL", "ID", "0", "ADDR"],
    ["CLIENT", "KILL", "ID", "99999", "ADDR"],
    ["CLIENT", "KILL", "ID", "99999", "ADDR", "1.2.3.4:5", "LADDR", "1.2.3.4:6"],
    ["CLIENT", "KILL", "TYPE", "bogus"],
    ["CLIENT", "KILL", "TYPE", "master"],
    ["CLIENT", "KILL", "TYPE", "replica", "TYPE", "slave"],
    ["CLIENT", "KILL", "USER", "nobody"],
    ["CLIENT", "KILL", "USER", "default", "ID", "99999"],
    ["CLIENT", "KILL", "SKIPME", "maybe"],
    ["CLIENT", "KILL", "SKIPME", "yes", "ID", "99999"],
    ["CLIENT", "KILL", "SKIPME", "no", "ADDR", "1.2.3.4:5"],
    ["CLIENT", "KILL", "BOGUS", "1"],
    ["CLIENT", "PAUSE", "x"],
    ["CLIENT", "PAUSE", "-1"],
    ["CLIENT", "PAUSE", "x", "bogus"],
    ["CLIENT", "PAUSE", "0", "bogus"],
    ["CLIENT", "PAUSE", "0", "WRITE"],
    ["CLIENT", "PAUSE", "0", "all"],
    ["CLIENT", "PAUSE", "1.5"],
    ["CLIENT", "PAUSE", "0", "ALL", "x"],
    ["CLIENT", "pause", "x", "ALL", "x"],
    ["CLIENT", "UNPAUSE"],
    ["CLIENT", "REPLY", "maybe"],
    ["CLIENT", "REPLY", "ON"],
    ["CLIENT", "NO-EVICT", "maybe"],
    ["CLIENT", "NO-EVICT", "on"],
    ["CLIENT", "NO-EVICT", "OFF"],
]

OTHERS = [
    # options converted before (SET, GETEX, EXPIRE, SCAN, LPOS, ZADD, ZRANGE, SORT, *MPOP, ...)
    ["SET", "k", "v", "EX", "x"],
    ["SET", "k", "v", "EX", "0"],
    ["SET", "k", "v", "EX", "10", "PX", "10"],
    ["SET", "k", "v", "NX", "XX"],
    ["SET", "k", "v", "EX"],
    ["SET", "k", "v", "KEEPTTL", "EX", "10"],
    ["SET", "k", "v", "GET", "GET"],
    ["SET", "k", "v", "EXAT", "9223372036854775807"],
    ["GETEX", "k", "PERSIST", "EX", "10"],
    ["GETEX", "k", "EX", "-1"],
    ["GETEX", "k", "BOGUS"],
    ["EXPIRE", "k", "100", "NX", "XX"],
    ["EXPIRE", "k", "100", "GT", "LT"],
    ["EXPIRE", "k", "100", "BOGUS"],
    ["EXPIRE", "k", "x"],
    ["SCAN", "x"],
    ["SCAN", "0", "COUNT", "0"],
    ["SCAN", "0", "COUNT", "x"],
    ["SCAN", "0", "MATCH"],
    ["SCAN", "0", "TYPE", "string", "COUNT", "1000", "MATCH", "nomatch*"],
    ["RPUSH", "pl", "a", "b", "a"],
    ["LPOS", "pl", "a", "RANK", "0"],
    # LPOS ... RANK -9223372036854775808: Redis 7.2 refuses it (test_compat72.py).
    ["LPOS", "pl", "a", "COUNT", "-1"],
    ["LPOS", "pl", "a", "MAXLEN", "-1"],
    ["LPOS", "pl", "a", "COUNT", "0", "RANK", "-1", "MAXLEN", "0"],
    ["LPOS", "pl", "a", "BOGUS", "1"],
    ["ZADD", "z", "NX", "XX", "1", "a"],
    ["ZADD", "z", "GT", "LT", "1", "a"],
    ["ZADD", "z", "NX", "GT", "1", "a"],
    ["ZADD", "z", "INCR", "1", "a", "2", "b"],
    ["ZADD", "z", "CH", "x", "a"],
    ["ZADD", "z", "1", "a", "2"],
    ["ZRANGE", "z", "0", "-1", "BYSCORE", "BYLEX"],
    ["ZRANGE", "z", "0", "-1", "LIMIT", "0", "1"],
    ["ZRANGE", "z", "(a", "[b", "BYLEX", "REV"],
    ["ZRANGE", "z", "0", "-1", "WITHSCORES", "BYLEX"],
    ["ZRANGE", "z", "0", "-1", "LIMIT", "x", "1", "BYSCORE"],
    ["ZINTERCARD", "0", "z"],
    ["ZINTERCARD", "1", "z", "LIMIT", "-1"],
    ["ZINTERCARD", "2", "z"],
    ["SINTERCARD", "1", "set", "LIMIT", "x"],
    ["LMPOP", "0", "pl", "LEFT"],
    ["LMPOP", "1", "pl", "UP"],
    ["LMPOP", "1", "pl", "LEFT", "COUNT", "0"],
    ["LMPOP", "1", "pl", "LEFT", "COUNT", "1", "COUNT", "1"],
    ["ZMPOP", "1", "z", "MIN", "COUNT"],
    ["ZPOPMIN", "z", "x"],
    ["ZPOPMIN", "z", "-1"],
    ["ZPOPMAX", "z", "0"],
    ["ZPOPMIN", "missing", "-1"],
    ["ZPOPMIN", "z", "1", "2"],
    ["SORT", "pl", "LIMIT", "0"],
    ["SORT", "pl", "ALPHA", "LIMIT", "0", "x"],
    ["SORT", "pl", "BOGUS"],
    ["SORT", "pl", "ALPHA", "DESC", "ASC", "LIMIT", "0", "2"],
    ["SORT_RO", "pl", "ALPHA", "STORE", "x"],
    ["LCS", "str", "str2", "MINMATCHLEN", "x"],
    ["LCS", "str", "str2", "LEN", "IDX"],
    ["LCS", "str", "str2", "BOGUS"],
    # COPY
    ["COPY", "str", "str2", "DB"],
    ["COPY", "str", "str2", "DB", "x"],
    ["COPY", "str", "str2", "DB", "16"],
    ["COPY", "str", "str2", "DB", "-1"],
    ["COPY", "str", "str2", "DB", "99999999999"],
    ["COPY", "str", "str2", "BOGUS"],
    ["COPY", "str", "str2", "REPLACE", "REPLACE", "DB", "0"],
    ["COPY", "str", "str2", "DB", "0", "REPLACE"],
    ["COPY", "str", "str", "DB", "0"],
    # HELLO
    ["HELLO", "x"],
    ["HELLO", "4"],
    ["HELLO", "1"],
    ["HELLO", "4", "BOGUS"],
    ["HELLO", "2", "BOGUS"],
    ["HELLO", "2", "SETNAME"],
    ["HELLO", "2", "AUTH", "default"],
    (["HELLO", "2", "AUTH", "default", "wrong"], ERRORS_ONLY),  # the reply has the client id
    ["HELLO", "x", "BOGUS"],
    ["HELLO", "3", "SETNAME"],
    # database indexes
    ["SELECT", "99999999999"],
    ["SELECT", "x"],
    ["SELECT", "16"],
    ["SELECT", "-1"],
    ["MOVE", "str", "99999999999"],
    ["MOVE", "str", "x"],
    ["MOVE", "str", "16"],
    ["SELECT", "0"],
    ["HELLO", "2", "SETNAME", "a b"],
    # LPOP / RPOP / SPOP counts
    ["RPUSH", "l", "a", "b", "c"],
    ["LPOP", "l", "x"],
    ["LPOP", "l", "-1"],
    ["RPOP", "l", "0"],
    ["LPOP", "l", "2"],
    ["LPOP", "missing", "x"],
    ["SADD", "set", "a"],
    ["SPOP", "set", "x"],
    ["SPOP", "set", "-1"],
    ["SPOP", "set", "0"],
    ["SPOP", "missing", "-1"],
    # SLOWLOG GET count
    ["SLOWLOG", "GET", "x"],
    ["SLOWLOG", "GET", "-2"],
    ["SLOWLOG", "GET", "1", "2"],
    ["SLOWLOG", "get", "0"],
    # DEBUG POPULATE (Redis' getPositiveLongFromObjectOrReply)
    ["DEBUG", "POPULATE", "x"],
    ["DEBUG", "POPULATE", "-1"],
    ["DEBUG", "POPULATE", "1", "pfx", "x"],
    ["DEBUG", "POPULATE", "1", "pfx", "-1"],
    ["DEBUG", "POPULATE", "1", "pfx", "1", "x"],
]

ALL = [("geo", GEO), ("bitops", BITOPS), ("streams", STREAMS), ("client", CLIENT),
       ("others", OTHERS)]


def _is_error(raw: bytes) -> bool:
    return raw[:1] in (b"-", b"!")


@pytest.mark.parametrize("lines", [lines for _, lines in ALL], ids=[name for name, _ in ALL])
def test_option_edge_cases_match_redis(server, r, redis_server, lines):
    ref, sut = redis_server.raw(timeout=30), server.raw(timeout=30)
    try:
        for conn in (ref, sut):
            assert conn.call("FLUSHALL") == b"OK"
            for cmd in SETUP:
                conn.call(*cmd)
        mismatches = []
        for line in lines:
            cmd, mode = line if isinstance(line, tuple) else (line, None)
            ref.send_command(*cmd)
            sut.send_command(*cmd)
            (raw_a, val_a), (raw_b, val_b) = ref.read_reply(), sut.read_reply()
            if mode == ERRORS_ONLY:
                same = (_is_error(raw_a) == _is_error(raw_b) and
                        (not _is_error(raw_a) or raw_a == raw_b))
            else:
                # Doubles whose text alone differs (7.0's "%.17g", 7.2's d2string) are equal.
                same = raw_a == raw_b or diff_families.same_but_double_text(val_a, val_b)
            if not same:
                mismatches.append(f"  {cmd!r}\n    redis-server: {raw_a!r}\n    under test:   "
                                  f"{raw_b!r}")
        assert not mismatches, "replies differ:\n" + "\n".join(mismatches)
    finally:
        ref.close()
        sut.close()
