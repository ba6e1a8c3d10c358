"""Bit commands (SETBIT, GETBIT, BITCOUNT, BITPOS, BITOP, BITFIELD, BITFIELD_RO) and LCS: the
examples of Redis' documentation, string growth and re-encoding, cross-shard BITOP and LCS (the
`server` fixture runs with --threads 1, 2 and 4; eight keys without hashtags land on several
shards), WATCH on a BITOP destination, and the error texts."""

import pytest
import redis

KEYS = [f"bk{i}" for i in range(8)]


def test_setbit_getbit_grow_and_return_old_bit(r):
    assert r.setbit("b", 7, 1) == 0
    assert r.get("b") == b"\x01"
    assert r.setbit("b", 7, 1) == 1
    assert r.setbit("b", 0, 1) == 0
    assert r.get("b") == b"\x81"
    assert r.setbit("b", 100, 1) == 0  # grows to 13 bytes, zero padded
    assert r.get("b") == b"\x81" + b"\x00" * 11 + b"\x08"
    assert r.getbit("b", 100) == 1
    assert r.getbit("b", 101) == 0
    assert r.getbit("b", 10_000) == 0
    assert r.getbit("missing", 3) == 0
    # Clearing a bit keeps the length.
    assert r.setbit("b", 100, 0) == 1
    assert r.strlen("b") == 13


def test_setbit_on_integer_and_short_values(r):
    r.set("n", 1)  # "1" = 0x31
    assert r.setbit("n", 6, 1) == 0
    assert r.get("n") == b"3"
    assert r.incr("n") == 4  # still an integer string
    r.set("s", "abc")
    assert r.setbit("s", 30, 1) == 0
    assert r.get("s") == b"abc\x02"
    assert r.setbit("s", 200, 1) == 0  # past 20 bytes: a heap string from now on
    assert r.strlen("s") == 26 and r.getbit("s", 200) == 1
    assert r.get("s")[:3] == b"abc"


def test_large_bitmap_in_place(r):
    last = 8 * 1024 * 1024 - 1  # the last bit of a 1 MiB string
    assert r.setbit("big", last, 1) == 0
    assert r.strlen("big") == 1024 * 1024
    for i in range(0, 1000, 7):
        r.setbit("big", i, 1)
    assert r.bitcount("big") == 1 + len(range(0, 1000, 7))
    assert r.bitpos("big", 1, 1000 // 8 + 1) == last
    assert r.strlen("big") == 1024 * 1024


def test_bit_errors(r):
    r.rpush("list", "a")
    for args, err in [
        (("SETBIT", "b", -1, 1), "bit offset is not an integer or out of range"),
        (("SETBIT", "b", 4294967296, 1), "bit offset is not an integer or out of range"),
        (("SETBIT", "b", "x", 1), "bit offset is not an integer or out of range"),
        (("SETBIT", "b", 1, 2), "bit is not an integer or out of range"),
        (("SETBIT", "list", 1, 2), "bit is not an integer or out of range"),
        (("SETBIT", "list", 1, 1), "WRONGTYPE"),
        (("GETBIT", "b", 4294967296), "bit offset is not an integer or out of range"),
        (("GETBIT", "list", 0), "WRONGTYPE"),
        (("BITPOS", "b", 2), "The bit argument must be 1 or 0."),
        (("BITCOUNT", "list"), "WRONGTYPE"),
        (("BITOP", "NAND", "d", "b"), "syntax error"),
        (("BITOP", "NOT", "d", "b", "c"), "BITOP NOT must be called with a single source key."),
        (("BITOP", "AND", "d", "list"), "WRONGTYPE"),
    ]:
        with pytest.raises(redis.ResponseError, match=err):
            r.execute_command(*args)
    # With the key present, range arguments are checked; with it missing (Redis 7.0) they are not.
    r.set("s", "foobar")
    with pytest.raises(redis.ResponseError, match="syntax error"):
        r.execute_command("BITCOUNT", "s", 0)
    with pytest.raises(redis.ResponseError, match="not an integer"):
        r.execute_command("BITCOUNT", "s", "x", "y")
    assert r.execute_command("BITCOUNT", "missing", "x", "y") == 0
    assert r.execute_command("BITPOS", "missing", 1, "x") == -1


def test_bitcount_docs(r):
    r.set("mykey", "foobar")
    assert r.bitcount("mykey") == 26
    assert r.bitcount("mykey", 0, 0) == 4
    assert r.bitcount("mykey", 1, 1) == 6
    assert r.execute_command("BITCOUNT", "mykey", 1, 1, "BYTE") == 6
    assert r.execute_command("BITCOUNT", "mykey", 5, 30, "BIT") == 17
    assert r.execute_command("BITCOUNT", "mykey", -5, -1, "bit") == 2
    assert r.bitcount("mykey", -1, -5) == 0
    assert r.bitcount("missing") == 0


def test_bitcount_bit_ranges_against_model(r):
    data = bytes((i * 37 + 11) % 256 for i in range(40))
    r.set("m", data)
    bits = "".join(f"{b:08b}" for b in data)
    n = len(bits)
    for start in (0, 1, 7, 8, 9, 100, 319, -1, -9, -320, -400):
        for end in (0, 3, 8, 63, 64, 200, 319, 1000, -1, -2, -100):
            s, e = start, end
            if s < 0 and e < 0 and s > e:
                want = 0
            else:
                s = max(s + n if s < 0 else s, 0)
                e = max(e + n if e < 0 else e, 0)
                e = min(e, n - 1)
                want = bits[s:e + 1].count("1") if s <= e else 0
            assert r.execute_command("BITCOUNT", "m", start, end, "BIT") == want, (start, end)


def test_bitpos_docs(r):
    r.set("mykey", b"\xff\xf0\x00")
    assert r.bitpos("mykey", 0) == 12
    r.set("mykey", b"\x00\xff\xf0")
    assert r.bitpos("mykey", 1, 0) == 8
    assert r.bitpos("mykey", 1, 2) == 16
    assert r.execute_command("BITPOS", "mykey", 1, 2, -1, "BYTE") == 16
    assert r.execute_command("BITPOS", "mykey", 1, 7, 15, "BIT") == 8
    r.set("mykey", b"\x00\x00\x00")
    assert r.bitpos("mykey", 1) == -1
    assert r.execute_command("BITPOS", "mykey", 1, 7, -3, "BIT") == -1
    # Looking for a clear bit in an all-ones string: past the end unless an end is given.
    r.set("ones", b"\xff\xff")
    assert r.bitpos("ones", 0) == 16
    assert r.bitpos("ones", 0, 0) == 16
    assert r.bitpos("ones", 0, 0, -1) == -1
    assert r.bitpos("missing", 0) == 0
    assert r.bitpos("missing", 1) == -1


def test_bitop_cross_shard(r):
    values = [bytes([0xF0, 0x0F, i]) * (i + 1) for i in range(1, 5)]
    for k, v in zip(KEYS, values):
        r.set(k, v)
    srcs = KEYS[:4]
    maxlen = max(map(len, values))
    padded = [v + b"\x00" * (maxlen - len(v)) for v in values]

    def fold(op):
        out = bytearray(padded[0])
        for v in padded[1:]:
            for i in range(maxlen):
                out[i] = op(out[i], v[i])
        return bytes(out)

    r.set(KEYS[5], "old", ex=1000)
    assert r.bitop("AND", KEYS[5], *srcs) == maxlen
    assert r.get(KEYS[5]) == fold(lambda a, b: a & b)
    assert r.ttl(KEYS[5]) == -1  # the destination is overwritten, TTL and all
    assert r.bitop("OR", KEYS[6], *srcs, "missing") == maxlen
    assert r.get(KEYS[6]) == fold(lambda a, b: a | b)
    assert r.bitop("XOR", KEYS[7], *srcs) == maxlen
    assert r.get(KEYS[7]) == fold(lambda a, b: a ^ b)
    assert r.bitop("NOT", KEYS[4], KEYS[0]) == len(values[0])
    assert r.get(KEYS[4]) == bytes(~b & 0xFF for b in values[0])
    # The destination may be a source.
    assert r.bitop("NOT", KEYS[0], KEYS[0]) == len(values[0])
    assert r.get(KEYS[0]) == bytes(~b & 0xFF for b in values[0])
    # Only missing or empty sources: the destination is deleted.
    assert r.bitop("OR", KEYS[6], "missing1", "missing2") == 0
    assert r.exists(KEYS[6]) == 0
    # A source of another type: error, the destination untouched.
    r.rpush("alist", "x")
    with pytest.raises(redis.ResponseError, match="WRONGTYPE"):
        r.bitop("AND", KEYS[7], KEYS[1], "alist")
    assert r.get(KEYS[7]) == fold(lambda a, b: a ^ b)


def test_bitop_destination_watch(server, r):
    r.set(KEYS[0], "abc")
    other = server.client()
    try:
        with r.pipeline() as p:
            p.watch(KEYS[1])
            other.bitop("NOT", KEYS[1], KEYS[0])
            p.multi()
            p.get(KEYS[1])
            with pytest.raises(redis.WatchError):
                p.execute()
    finally:
        other.close()


def test_bitop_inside_multi(r):
    r.set(KEYS[0], b"\x0f")
    r.set(KEYS[1], b"\xf0")
    with r.pipeline() as p:
        p.bitop("OR", KEYS[2], KEYS[0], KEYS[1])
        p.get(KEYS[2])
        assert p.execute() == [1, b"\xff"]


def test_bitfield_docs(r):
    assert r.execute_command("BITFIELD", "mykey", "INCRBY", "i5", 100, 1, "GET", "u4", 0) == [1, 0]
    got = [r.execute_command("BITFIELD", "mykey", "incrby", "u2", 100, 1,
                             "OVERFLOW", "SAT", "incrby", "u2", 102, 1) for _ in range(4)]
    assert got == [[1, 1], [2, 2], [3, 3], [0, 3]]
    r.delete("f")
    assert r.execute_command("BITFIELD", "f", "OVERFLOW", "FAIL", "INCRBY", "u2", 0, 3,
                             "INCRBY", "u2", 0, 1, "GET", "u2", 0) == [3, None, 3]
    assert r.execute_command("BITFIELD", "f", "SET", "i8", "#1", -128, "GET", "i8", "#1",
                             "GET", "u8", 8) == [0, -128, 128]
    assert r.execute_command("BITFIELD", "w", "SET", "i64", 0, 1,
                             "INCRBY", "i64", 0, 9223372036854775807) == [0, -9223372036854775808]
    assert r.execute_command("BITFIELD", "w", "OVERFLOW", "SAT", "INCRBY", "i64", 0, -1) == [
        -9223372036854775808]
    assert r.execute_command("BITFIELD", "u", "OVERFLOW", "SAT", "INCRBY", "u63", 0,
                             9223372036854775807, "INCRBY", "u63", 0, 1) == [
        9223372036854775807, 9223372036854775807]
    assert r.execute_command("BITFIELD", "mykey") == []
    assert r.execute_command("BITFIELD_RO", "f", "GET", "u2", 0, "GET", "i8", 8) == [3, -128]
    assert r.execute_command("BITFIELD_RO", "missing", "GET", "u8", 0) == [0]


def test_bitfield_errors(r):
    r.rpush("list", "a")
    for args, err in [
        (("BITFIELD_RO", "k", "SET", "u8", 0, 1), "BITFIELD_RO only supports the GET subcommand"),
        (("BITFIELD", "k", "GET", "u64", 0), "Invalid bitfield type"),
        (("BITFIELD", "k", "GET", "i65", 0), "Invalid bitfield type"),
        (("BITFIELD", "k", "GET", "I8", 0), "Invalid bitfield type"),
        (("BITFIELD", "k", "OVERFLOW", "FOO"), "Invalid OVERFLOW type specified"),
        (("BITFIELD", "k", "FOO"), "syntax error"),
        (("BITFIELD", "k", "GET", "u8"), "syntax error"),
        (("BITFIELD", "k", "GET", "u8", "#536870912"), "bit offset is not an integer"),
        (("BITFIELD", "k", "SET", "u8", 0, "x"), "not an integer"),
        (("BITFIELD", "list", "GET", "u8", 0), "WRONGTYPE"),
        (("BITFIELD", "list", "SET", "u8", 0, 1), "WRONGTYPE"),
    ]:
        with pytest.raises(redis.ResponseError, match=err):
            r.execute_command(*args)
    assert r.exists("k") == 0  # nothing was created by a failed BITFIELD


def test_lcs_docs_cross_shard(r):
    r.set(KEYS[0], "ohmytext")
    r.set(KEYS[1], "mynewtext")
    assert r.execute_command("LCS", KEYS[0], KEYS[1]) == b"mytext"
    assert r.execute_command("LCS", KEYS[0], KEYS[1], "LEN") == 6
    assert r.execute_command("LCS", KEYS[0], KEYS[1], "IDX") == [
        b"matches", [[[4, 7], [5, 8]], [[2, 3], [0, 1]]], b"len", 6]
    assert r.execute_command("LCS", KEYS[0], KEYS[1], "IDX", "MINMATCHLEN", 4,
                             "WITHMATCHLEN") == [b"matches", [[[4, 7], [5, 8], 4]], b"len", 6]
    assert r.execute_command("LCS", KEYS[0], "missing") == b""
    r.rpush("list", "a")
    with pytest.raises(redis.ResponseError, match="The specified keys must contain string values"):
        r.execute_command("LCS", KEYS[0], "list")
    with pytest.raises(redis.ResponseError, match="please just use IDX"):
        r.execute_command("LCS", KEYS[0], KEYS[1], "IDX", "LEN")


def test_lcs_resp3_map(r, raw):
    r.set(KEYS[2], "abcde")
    r.set(KEYS[3], "ace")
    raw.call("HELLO", "3")
    assert raw.call_raw("LCS", KEYS[2], KEYS[3], "IDX").startswith(b"%2\r\n$7\r\nmatches\r\n*3\r\n")


def test_bitop_is_atomic_against_mset(server, r):
    """BITOP reads its sources in one transaction: XOR of two keys that every MSET sets to the
    same value is all zeros, never a mix of two MSETs."""
    import threading

    stop = threading.Event()

    def writer():
        c = server.client()
        i = 0
        while not stop.is_set():
            v = bytes([i % 255 + 1]) * 16
            c.mset({KEYS[0]: v, KEYS[1]: v})
            i += 1
        c.close()

    r.mset({KEYS[0]: b"\x01" * 16, KEYS[1]: b"\x01" * 16})
    t = threading.Thread(target=writer)
    t.start()
    try:
        for _ in range(300):
            assert r.bitop("XOR", KEYS[2], KEYS[0], KEYS[1]) == 16
            assert r.get(KEYS[2]) == b"\x00" * 16
    finally:
        stop.set()
        t.join()
