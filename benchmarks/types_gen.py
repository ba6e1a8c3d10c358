#!/usr/bin/python3
"""RESP command stream for benchmarks/types_memory.sh (standard library only).

  types_gen.py hash|set|zset|list KEYS ELEMENTS [ITEMS_PER_CMD]

Writes to stdout, deterministically (the same bytes for both servers), one command per key for
hash/set/zset (HSET/SADD/ZADD with ELEMENTS fields or members) and, for list, RPUSHes of
ITEMS_PER_CMD items (default 100) until each key holds ELEMENTS items. Key names are 12 bytes
(`hash:0000042`), fields, members and values 10-14 bytes, zset scores small decimals.
"""
import sys


def bulk(s):
    b = s.encode()
    return b"$%d\r\n%s\r\n" % (len(b), b)


def main():
    kind, keys, elems = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    per_cmd = int(sys.argv[4]) if len(sys.argv) > 4 else 100
    out = sys.stdout.buffer
    buf = []
    if kind == "hash":
        fields = [bulk("field:%d" % j) for j in range(elems)]
        head = b"*%d\r\n" % (2 + 2 * elems) + bulk("HSET")
        for k in range(keys):
            parts = [head, bulk("hash:%07d" % k)]
            for j in range(elems):
                parts.append(fields[j])
                parts.append(bulk("val:%07d:%d" % (k, j)))
            buf.append(b"".join(parts))
            if len(buf) >= 5000:
                out.write(b"".join(buf)); buf = []
    elif kind in ("set", "zset"):
        cmd = "SADD" if kind == "set" else "ZADD"
        per = 1 if kind == "set" else 2
        head = b"*%d\r\n" % (2 + per * elems) + bulk(cmd)
        for k in range(keys):
            parts = [head, bulk("%s:%07d" % (kind, k))]
            for j in range(elems):
                if kind == "zset":
                    parts.append(bulk("%d.5" % j))
                parts.append(bulk("mem:%07d:%d" % (k, j)))
            buf.append(b"".join(parts))
            if len(buf) >= 5000:
                out.write(b"".join(buf)); buf = []
    elif kind == "list":
        for k in range(keys):
            key = bulk("list:%07d" % k)
            for start in range(0, elems, per_cmd):
                n = min(per_cmd, elems - start)
                parts = [b"*%d\r\n" % (2 + n), bulk("RPUSH"), key]
                for i in range(start, start + n):
                    parts.append(bulk("item:%09d" % i))
                buf.append(b"".join(parts))
                if len(buf) >= 500:
                    out.write(b"".join(buf)); buf = []
    else:
        sys.exit("unknown type %r" % kind)
    out.write(b"".join(buf))


if __name__ == "__main__":
    main()
