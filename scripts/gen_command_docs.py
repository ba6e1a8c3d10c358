#!/usr/bin/env python3
"""Writes server/command_docs_args.cc: the arguments of every command in COMMAND DOCS.

Redis describes each command's arguments in COMMAND DOCS (name, type, token, flags, nested
blocks, ...): an interface fact that clients read (redis-cli's hints, client code generators).
shardis answers with the same trees. They are taken from the Debian redis-server (7.0) that the
tests use, asked with `COMMAND DOCS` in RESP3, then adjusted for what shardis follows from 7.2
(ADJUST below). Run it again when a command is added:

    python3 scripts/gen_command_docs.py            # starts its own redis-server on a free port

The output holds, per command and subcommand ("config|get"), the RESP3 encoding of its
`arguments` value, plus `doc_flags` and `deprecated_since` where Redis has them.
"""

from __future__ import annotations

import pathlib
import shutil
import socket
import subprocess
import sys
import tempfile
import time

REPO = pathlib.Path(__file__).resolve().parents[1]
OUT = REPO / "server" / "command_docs_args.cc"
# Facts only: Redis' prose (`history`, `replaced_by`, summaries) is not taken.
FIELDS = ("doc_flags", "deprecated_since", "arguments")


class Reader:
    def __init__(self, sock: socket.socket):
        self.sock = sock
        self.buf = b""
        self.pos = 0

    def _fill(self):
        chunk = self.sock.recv(1 << 20)
        if not chunk:
            raise EOFError
        self.buf += chunk

    def line(self) -> bytes:
        while True:
            i = self.buf.find(b"\r\n", self.pos)
            if i >= 0:
                out, self.pos = self.buf[self.pos:i], i + 2
                return out
            self._fill()

    def exact(self, n: int) -> bytes:
        while len(self.buf) - self.pos < n + 2:
            self._fill()
        out = self.buf[self.pos:self.pos + n]
        self.pos += n + 2
        return out

    def value(self):
        line = self.line()
        kind, rest = line[:1], line[1:]
        if kind in (b"+", b"-"):
            return ("simple", rest.decode())
        if kind == b":":
            return ("int", int(rest))
        if kind == b"$":
            return ("bulk", self.exact(int(rest)).decode())
        if kind in (b"*", b"~", b">"):
            return ("array", [self.value() for _ in range(int(rest))])
        if kind == b"%":
            return ("map", [(self.value(), self.value()) for _ in range(int(rest))])
        if kind == b"_":
            return ("null", None)
        raise ValueError(f"unexpected {line!r}")


def encode(v) -> str:
    kind, x = v
    if kind == "simple":
        return f"+{x}\r\n"
    if kind == "int":
        return f":{x}\r\n"
    if kind == "bulk":
        return f"${len(x.encode())}\r\n{x}\r\n"
    if kind == "array":
        return f"*{len(x)}\r\n" + "".join(encode(i) for i in x)
    if kind == "map":
        return f"%{len(x)}\r\n" + "".join(encode(k) + encode(val) for k, val in x)
    raise ValueError(kind)


def bulk(s: str):
    return ("bulk", s)


def arg(name: str, type_: str, token: str | None = None, since: str | None = None,
        optional: bool = False):
    fields = [(bulk("name"), bulk(name)), (bulk("type"), bulk(type_))]
    if token is not None:
        fields.append((bulk("token"), bulk(token)))
    if since is not None:
        fields.append((bulk("since"), bulk(since)))
    if optional:
        fields.append((bulk("flags"), ("array", [("simple", "optional")])))
    return ("map", fields)


# What shardis follows from Redis 7.2 (and 7.4) where 7.0's arguments differ: arguments appended.
ADJUST = {
    "zrank": [arg("withscore", "pure-token", token="WITHSCORE", since="7.2.0", optional=True)],
    "zrevrank": [arg("withscore", "pure-token", token="WITHSCORE", since="7.2.0", optional=True)],
    "hscan": [arg("novalues", "pure-token", token="NOVALUES", since="7.4.0", optional=True)],
}


def fetch_docs(port: int):
    with socket.create_connection(("127.0.0.1", port)) as s:
        s.sendall(b"HELLO 3\r\nCOMMAND DOCS\r\n")
        r = Reader(s)
        r.value()  # HELLO's map
        return r.value()


def entries(docs):
    """(name, doc map fields) for every command and subcommand."""
    out = []
    for k, v in docs[1]:
        fields = dict((fk[1], fv) for fk, fv in v[1])
        out.append((k[1], fields))
        if "subcommands" in fields:
            for sk, sv in fields["subcommands"][1]:
                out.append((sk[1], dict((fk[1], fv) for fk, fv in sv[1])))
    return out


def main() -> int:
    server = shutil.which("redis-server") or "/usr/bin/redis-server"
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with tempfile.TemporaryDirectory() as tmp:
        proc = subprocess.Popen([server, "--port", str(port), "--save", "", "--dir", tmp],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            for _ in range(100):
                try:
                    docs = fetch_docs(port)
                    break
                except OSError:
                    time.sleep(0.05)
            else:
                print("redis-server did not start", file=sys.stderr)
                return 1
        finally:
            proc.terminate()
            proc.wait()
    rows = []
    for name, fields in sorted(entries(docs)):
        if name in ADJUST:
            a = fields.setdefault("arguments", ("array", []))
            fields["arguments"] = ("array", a[1] + ADJUST[name])
        present = [f for f in FIELDS if f in fields]
        if not present:
            continue
        resp = "".join(encode(bulk(f)) + encode(fields[f]) for f in present)
        literal = resp.replace("\\", "\\\\").replace('"', '\\"').replace("\r\n", "\\r\\n")
        rows.append(f'    {{"{name}", {len(present)},\n     "{literal}"}},')
    OUT.write_text(
        "// Generated by scripts/gen_command_docs.py from redis-server's COMMAND DOCS: the\n"
        "// arguments (and doc flags) of each command, as RESP3 map entries. Do not edit by hand.\n"
        "// clang-format off\n"
        '#include "server/command_docs_args.h"\n\n'
        "namespace shardis::server {\n\n"
        "const CommandDocArgs kCommandDocArgs[] = {\n" + "\n".join(rows) + "\n};\n"
        "const size_t kCommandDocArgsCount = sizeof(kCommandDocArgs) / sizeof(kCommandDocArgs[0]);\n\n"
        "}  // namespace shardis::server\n")
    print(f"wrote {OUT} ({len(rows)} commands)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
