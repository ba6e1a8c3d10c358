"""Fixtures for the shardis integration tests (pytest + redis-py against the real binary).

Which server the tests talk to:
  SHARDIS_BIN           the shardis binary (default: <repo>/build/release/shardis)
  SHARDIS_TEST_TARGET   "shardis" (default) or "redis": run the same tests against the Debian
                        redis-server instead, to check the tests themselves. Tests marked
                        `shardis_only` are skipped in that mode, and only in that mode.
  SHARDIS_TEST_THREADS  comma-separated --threads values for the `server` fixture (default 1,2,4)

Fixtures:
  server         module-scoped, parametrized over --threads: a running Server (.port,
                 .client(), .raw(), .threads). Extra flags for one test module: a module-level
                 SHARDIS_ARGS = [...] (and REDIS_ARGS = [...] for the redis target).
  port           the port of `server`.
  r              a fresh redis-py client (decode_responses=False) on `server`, after FLUSHALL.
  raw            a RespConn (raw socket, exact reply bytes) on `server`, after FLUSHALL.
  redis_server   module-scoped Debian redis-server (for differential tests).
  server_factory start extra servers with their own flags inside a test; each is stopped (and
                 checked to exit 0) at the end of the test.

Every Server writes stdout+stderr to a log file; when a test fails, the tail of the log of every
server still running is attached to the failure report.
"""

from __future__ import annotations

import contextlib
import os
import pathlib
import shutil
import signal
import socket
import subprocess
import threading
import time

import pytest
import redis

REPO = pathlib.Path(__file__).resolve().parents[2]
TARGET = os.environ.get("SHARDIS_TEST_TARGET", "shardis")
if TARGET not in ("shardis", "redis"):
    raise pytest.UsageError(f"SHARDIS_TEST_TARGET must be 'shardis' or 'redis', not {TARGET!r}")
SHARDIS_BIN = os.environ.get("SHARDIS_BIN") or str(REPO / "build" / "release" / "shardis")
REDIS_SERVER_BIN = shutil.which("redis-server") or "/usr/bin/redis-server"
THREADS = [int(t) for t in os.environ.get("SHARDIS_TEST_THREADS", "1,2,4").split(",") if t]

START_TIMEOUT = 10.0
LOADING_TIMEOUT = 120.0  # the most a server that answers -LOADING may take to come up
STOP_TIMEOUT = 10.0

_live_servers: list["Server"] = []


def free_port() -> int:
    """A TCP port that was free a moment ago (the kernel's choice for an ephemeral bind)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(predicate, timeout: float, interval: float = 0.02):
    """Polls predicate() until it returns something truthy; returns that or the last value."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value or time.monotonic() >= deadline:
            return value
        time.sleep(interval)


def answers_ping(proc: subprocess.Popen, port: int):
    """For wait_for: True once 127.0.0.1:port answers PING with PONG, "exited" once proc ended."""
    if proc.poll() is not None:
        return "exited"
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1) as s:
            s.sendall(b"PING\r\n")
            return s.recv(64).startswith(b"+PONG")
    except OSError:
        return False


# ---------------------------------------------------------------------------------------------
# A minimal RESP2/RESP3 client over a raw socket, for tests that need the exact bytes.
# ---------------------------------------------------------------------------------------------


class Simple(bytes):
    """+simple string"""


class Error(bytes):
    """-error (RESP3 !blob error too)"""


class Double(float):
    """RESP3 ,double"""


class BigNumber(int):
    """RESP3 (big number"""


class Verbatim(bytes):
    """RESP3 =verbatim string (the payload without the 'txt:' prefix)"""


class RespMap(dict):
    """RESP3 %map"""


class RespSet(list):
    """RESP3 ~set (kept as a list: elements may be unhashable)"""


class Push(list):
    """RESP3 >push"""


class RespConn:
    """A blocking RESP connection that returns each reply as (raw bytes, parsed value).

    RESP2 and RESP3 nulls ($-1, *-1, _) all parse to None; look at the raw bytes to tell them
    apart.
    """

    def __init__(self, port: int, host: str = "127.0.0.1", timeout: float = 10.0):
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = bytearray()
        self.pos = 0
        self.reply_start = 0

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    @staticmethod
    def encode(*args) -> bytes:
        out = [b"*%d\r\n" % len(args)]
        for a in args:
            if isinstance(a, str):
                a = a.encode()
            elif isinstance(a, int):
                a = str(a).encode()
            elif isinstance(a, float):
                a = repr(a).encode()
            out.append(b"$%d\r\n%s\r\n" % (len(a), a))
        return b"".join(out)

    def send(self, data: bytes):
        self.sock.sendall(data)

    def send_command(self, *args):
        self.send(self.encode(*args))

    def call(self, *args):
        """Sends one command and returns its parsed reply."""
        self.send_command(*args)
        return self.read_reply()[1]

    def call_raw(self, *args) -> bytes:
        """Sends one command and returns the raw bytes of its reply."""
        self.send_command(*args)
        return self.read_reply()[0]

    # -- reading -------------------------------------------------------------------------------

    def _fill(self):
        # Drop what was consumed before the reply being read (read_reply's start), never the
        # start of that reply: its raw bytes are sliced from there at the end.
        start = self.reply_start
        if start > 1 << 20 and start > len(self.buf) // 2:
            del self.buf[:start]
            self.pos -= start
            self.reply_start = 0
        chunk = self.sock.recv(1 << 20)
        if not chunk:
            raise ConnectionError("server closed the connection")
        self.buf += chunk

    def _line(self) -> bytes:
        while True:
            idx = self.buf.find(b"\r\n", self.pos)
            if idx >= 0:
                line = bytes(self.buf[self.pos : idx])
                self.pos = idx + 2
                return line
            self._fill()

    def _exact(self, n: int) -> bytes:
        while len(self.buf) - self.pos < n + 2:
            self._fill()
        data = bytes(self.buf[self.pos : self.pos + n])
        if self.buf[self.pos + n : self.pos + n + 2] != b"\r\n":
            raise ValueError("bulk payload not followed by CRLF")
        self.pos += n + 2
        return data

    def _parse(self):
        line = self._line()
        kind, rest = line[:1], line[1:]
        if kind == b"+":
            return Simple(rest)
        if kind == b"-":
            return Error(rest)
        if kind == b":":
            return int(rest)
        if kind in (b"$", b"!", b"="):
            n = int(rest)
            if n < 0:
                return None
            data = self._exact(n)
            if kind == b"!":
                return Error(data)
            if kind == b"=":
                return Verbatim(data[4:])
            return data
        if kind in (b"*", b"~", b">"):
            n = int(rest)
            if n < 0:
                return None
            items = [self._parse() for _ in range(n)]
            return {b"*": list, b"~": RespSet, b">": Push}[kind](items)
        if kind == b"%":
            n = int(rest)
            m = RespMap()
            for _ in range(n):
                k = self._parse()
                m[k if not isinstance(k, list) else tuple(k)] = self._parse()
            return m
        if kind == b"|":  # attributes precede the real reply; drop them
            for _ in range(2 * int(rest)):
                self._parse()
            return self._parse()
        if kind == b"_":
            return None
        if kind == b",":
            return Double(float(rest))
        if kind == b"#":
            return rest == b"t"
        if kind == b"(":
            return BigNumber(int(rest))
        raise ValueError(f"unexpected RESP type byte in {line[:80]!r}")

    def read_reply(self):
        """Reads one complete reply: returns (raw bytes, parsed value)."""
        self.reply_start = self.pos
        value = self._parse()
        raw = bytes(self.buf[self.reply_start : self.pos])
        return raw, value

    def read_all_until_closed(self, timeout: float = 10.0) -> tuple[bytes, bool]:
        """Reads until EOF; returns (everything unread, whether the peer closed in time)."""
        self.sock.settimeout(timeout)
        deadline = time.monotonic() + timeout
        closed = False
        try:
            while time.monotonic() < deadline:
                chunk = self.sock.recv(65536)
                if not chunk:
                    closed = True
                    break
                self.buf += chunk
        except ConnectionResetError:
            closed = True
        except socket.timeout:
            pass
        data = bytes(self.buf[self.pos :])
        self.pos = len(self.buf)
        return data, closed


# ---------------------------------------------------------------------------------------------
# Servers
# ---------------------------------------------------------------------------------------------


class Server:
    """One server process (shardis or redis-server) on a free port of 127.0.0.1."""

    def __init__(self, kind: str, log_dir: pathlib.Path, threads: int | None = None,
                 args=(), binary: str | None = None):
        assert kind in ("shardis", "redis")
        self.kind = kind
        self.threads = threads
        self.args = list(args)
        self.binary = binary or (SHARDIS_BIN if kind == "shardis" else REDIS_SERVER_BIN)
        self.log_dir = pathlib.Path(log_dir)
        self.name = kind if threads is None else f"{kind}-t{threads}"
        self.port = 0
        self.proc: subprocess.Popen | None = None
        self.log_path = self.log_dir / f"{self.name}.log"

    def argv(self) -> list[str]:
        if self.kind == "shardis":
            # --maxmemory=0: like the reference redis-server, whatever cgroup the tests run in
            # (unset, shardis derives it from the cgroup memory limit).
            # --save=: no snapshots, as the reference runs with --save "".
            argv = [self.binary, f"--port={self.port}", "--bind=127.0.0.1", "--logtostderr",
                    "--maxmemory=0", "--save="]
            if self.threads is not None:
                argv.append(f"--threads={self.threads}")
        else:
            argv = [self.binary, "--port", str(self.port), "--bind", "127.0.0.1",
                    "--save", "", "--appendonly", "no", "--daemonize", "no",
                    "--enable-debug-command", "local", "--dir", str(self.log_dir)]
        return argv + self.args

    def start(self) -> "Server":
        if self.kind == "shardis" and not os.access(self.binary, os.X_OK):
            pytest.fail(f"shardis binary not found at {self.binary}: build it with "
                        f"`bash scripts/build.sh release` or set SHARDIS_BIN", pytrace=False)
        for _attempt in range(3):
            self.spawn()
            _live_servers.append(self)
            if self._wait_ready():
                return self
            # Lost the race for the port to someone else: try another one.
            _live_servers.remove(self)
            if "in use" not in self.tail(20).lower():
                break
        raise RuntimeError(f"{self.name} did not start ({' '.join(self.argv())}); "
                           f"log tail:\n{self.tail()}")

    def spawn(self) -> "Server":
        """Starts the process on a free port and returns at once (start() then waits for a
        PONG, which a server still loading its dataset does not give)."""
        self.port = free_port()
        self.log_dir.mkdir(parents=True, exist_ok=True)
        with open(self.log_path, "ab") as log:
            log.write(f"\n==== starting: {' '.join(self.argv())}\n".encode())
            log.flush()
            self.proc = subprocess.Popen(self.argv(), stdin=subprocess.DEVNULL, stdout=log,
                                         stderr=subprocess.STDOUT, cwd=self.log_dir)
        return self

    def _wait_ready(self) -> bool:
        started = time.monotonic()
        deadline = started + START_TIMEOUT
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                return False
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1.0) as s:
                    s.sendall(b"*1\r\n$4\r\nPING\r\n")
                    data = b""
                    while b"\r\n" not in data:
                        chunk = s.recv(256)
                        if not chunk:
                            break
                        data += chunk
                    # A server with requirepass answers NOAUTH: it is up all the same.
                    if data.startswith((b"+PONG", b"-NOAUTH")):
                        return True
                    # Still loading its dataset: alive and making progress, which on a busy
                    # machine can take longer than START_TIMEOUT; only a hang should fail.
                    if data.startswith(b"-LOADING"):
                        deadline = max(deadline, min(time.monotonic() + START_TIMEOUT,
                                                     started + LOADING_TIMEOUT))
            except OSError:
                pass
            time.sleep(0.05)
        self.proc.kill()
        self.proc.wait()
        return False

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self, sig=signal.SIGTERM, timeout: float = STOP_TIMEOUT) -> int | None:
        """Signals the server and waits; returns its exit code, or None if it had to be killed."""
        if self in _live_servers:
            _live_servers.remove(self)
        if self.proc is None:
            return 0
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                return None
        return self.proc.returncode

    def stop_and_check(self, sig=signal.SIGTERM):
        """Stops the server and fails unless it exited 0 within STOP_TIMEOUT."""
        was_alive = self.alive()
        rc = self.stop(sig)
        if rc != 0:
            what = ("did not exit within %.0f s of %s" % (STOP_TIMEOUT, sig.name) if rc is None
                    else f"exited with status {rc}" + ("" if was_alive else " before shutdown"))
            pytest.fail(f"{self.name} {what}; log {self.log_path}, tail:\n{self.tail()}",
                        pytrace=False)

    def tail(self, lines: int = 60) -> str:
        try:
            text = self.log_path.read_bytes().decode(errors="replace")
        except OSError:
            return "(no log)"
        return "\n".join(text.splitlines()[-lines:])

    def client(self, **kwargs) -> redis.Redis:
        opts = dict(host="127.0.0.1", port=self.port, decode_responses=False,
                    socket_timeout=30, socket_connect_timeout=10)
        opts.update(kwargs)
        return redis.Redis(**opts)

    def raw(self, timeout: float = 10.0) -> RespConn:
        return RespConn(self.port, timeout=timeout)


def _set_pipeline(c, i: int, acked: list) -> None:
    with c.pipeline(transaction=False) as p:
        for j in range(100):
            p.set(f"c{i}:{j}".encode(), b"x")
        p.execute()
    acked[i] += 100


@contextlib.contextmanager
def busy_writers(srv: "Server", clients: int = 8, step=_set_pipeline):
    """Threads that write to srv until the block ends, and go away quietly when the server does;
    yields `acked`, which each thread's step(client, i, acked) updates after each acknowledged
    write (by default: pipelines of 100 SETs, counted)."""
    stop = threading.Event()
    acked = [0] * clients

    def hammer(i):
        try:
            c = srv.client(socket_timeout=20)
            while not stop.is_set():
                step(c, i, acked)
        except Exception:  # the server going away mid-request is expected here
            pass

    threads = [threading.Thread(target=hammer, args=(i,)) for i in range(clients)]
    for t in threads:
        t.start()
    try:
        yield acked
    finally:
        stop.set()
        for t in threads:
            t.join(30)


def start_target(log_dir, threads=None, shardis_args=(), redis_args=()) -> Server:
    """Starts the server under test: shardis, or redis-server in SHARDIS_TEST_TARGET=redis mode."""
    if TARGET == "redis":
        return Server("redis", log_dir, args=redis_args).start()
    return Server("shardis", log_dir, threads=threads, args=shardis_args).start()


# ---------------------------------------------------------------------------------------------
# pytest hooks
# ---------------------------------------------------------------------------------------------


def pytest_addoption(parser):
    parser.addoption("--diff-seed", default=None,
                     help="seed of test_differential's command stream (env SHARDIS_DIFF_SEED)")
    parser.addoption("--diff-count", default=None,
                     help="commands per differential run (env SHARDIS_DIFF_COUNT)")


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "shardis_only: tests of shardis-specific behaviour; skipped when "
                   "SHARDIS_TEST_TARGET=redis")


def pytest_report_header(config):
    target = SHARDIS_BIN if TARGET == "shardis" else f"{REDIS_SERVER_BIN} (SHARDIS_TEST_TARGET=redis)"
    return [f"server under test: {target}"]


def pytest_collection_modifyitems(config, items):
    if TARGET != "redis":
        return
    skip = pytest.mark.skip(reason="shardis-specific; not run with SHARDIS_TEST_TARGET=redis")
    for item in items:
        if item.get_closest_marker("shardis_only"):
            item.add_marker(skip)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.failed and report.when in ("setup", "call"):
        for srv in list(_live_servers):
            report.sections.append((f"{srv.name} log tail ({srv.log_path})", srv.tail()))


# ---------------------------------------------------------------------------------------------
# Fixtures
# ---------------------------------------------------------------------------------------------

_PARAMS = [None] if TARGET == "redis" else THREADS
_IDS = ["redis"] if TARGET == "redis" else [f"threads{t}" for t in THREADS]


@pytest.fixture(scope="module", params=_PARAMS, ids=_IDS)
def server(request, tmp_path_factory):
    """The server under test, started once per module and --threads value."""
    log_dir = tmp_path_factory.mktemp(request.module.__name__.rsplit(".", 1)[-1])
    srv = start_target(log_dir, threads=request.param,
                       shardis_args=getattr(request.module, "SHARDIS_ARGS", ()),
                       redis_args=getattr(request.module, "REDIS_ARGS", ()))
    yield srv
    srv.stop_and_check()


@pytest.fixture
def port(server) -> int:
    return server.port


@pytest.fixture
def r(server):
    """A fresh redis-py client on `server` (bytes replies); the server is flushed first."""
    if not server.alive():
        pytest.fail(f"{server.name} is not running any more; log tail:\n{server.tail()}",
                    pytrace=False)
    client = server.client()
    client.flushall()
    yield client
    client.close()


@pytest.fixture
def raw(r, server):
    """A raw RespConn to `server` (flushed by `r`), for exact reply bytes."""
    conn = server.raw()
    yield conn
    conn.close()


@pytest.fixture(scope="module")
def redis_server(tmp_path_factory):
    """The Debian redis-server on a free port: the reference for differential tests."""
    srv = Server("redis", tmp_path_factory.mktemp("redis-reference")).start()
    yield srv
    srv.stop_and_check()


@contextlib.contextmanager
def flushed_pair(server, redis_server, reset=()):
    """(shardis, redis) raw connections, both flushed, for a differential test; on exit each
    runs the `reset` commands (e.g. CONFIG SET back to the defaults), is flushed and closed."""
    conns = [server.raw(), redis_server.raw()]
    for c in conns:
        c.call("FLUSHALL")
    try:
        yield conns
    finally:
        for c in conns:
            for cmd in reset:
                c.call(*cmd)
            c.call("FLUSHALL")
            c.close()


@pytest.fixture
def server_factory(tmp_path):
    """start(threads=None, args=(), redis_args=()) -> Server; all are stopped after the test."""
    started: list[Server] = []

    def start(threads=None, args=(), redis_args=()):
        srv = start_target(tmp_path / f"srv{len(started)}", threads=threads, shardis_args=args,
                           redis_args=redis_args)
        started.append(srv)
        return srv

    yield start
    for srv in started:
        if srv.proc is not None and srv.proc.returncode is None:
            srv.stop_and_check()
