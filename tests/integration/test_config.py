"""CONFIG GET/SET/RESETSTAT/REWRITE, the config file, SHARDIS_ environment variables and the
precedence defaults < config file < env < command line."""

from __future__ import annotations

import os
import pathlib
import socket
import subprocess
import time

import pytest
import redis

from conftest import SHARDIS_BIN, free_port, wait_for

pytestmark = pytest.mark.shardis_only


def cfg(client, pattern) -> dict:
    return {k.decode() if isinstance(k, bytes) else k: v.decode() if isinstance(v, bytes) else v
            for k, v in client.config_get(pattern).items()}


# ---- a shardis started with our own argv and environment (config file first, env vars) --------


class Proc:
    def __init__(self, tmp_path: pathlib.Path, args=(), env=None, config=None):
        self.port = free_port()
        self.log = tmp_path / f"shardis-{self.port}.log"
        argv = [SHARDIS_BIN]
        if config is not None:
            argv.append(str(config))
        argv += list(args)
        if not any(a.startswith("--port") for a in args) and "SHARDIS_PORT" not in (env or {}):
            argv.append(f"--port={self.port}")
        argv += ["--bind=127.0.0.1", "--logtostderr"]
        full_env = {k: v for k, v in os.environ.items() if not k.startswith("SHARDIS_")}
        full_env.update(env or {})
        self.argv = argv
        with open(self.log, "wb") as log:
            self.proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL, env=full_env, cwd=tmp_path)

    def ready(self, port=None) -> bool:
        port = port or self.port

        def ping():
            if self.proc.poll() is not None:
                return "exited"
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1) as s:
                    s.sendall(b"PING\r\n")
                    return s.recv(64).startswith(b"+PONG")
            except OSError:
                return False
        return wait_for(ping, 10) is True

    def client(self, port=None) -> redis.Redis:
        return redis.Redis(host="127.0.0.1", port=port or self.port, decode_responses=True)

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def exit_code(self, timeout=10) -> int:
        return self.proc.wait(timeout)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            assert self.proc.wait(10) == 0, self.output()


@pytest.fixture
def procs(tmp_path):
    started: list[Proc] = []

    def start(args=(), env=None, config=None):
        p = Proc(tmp_path, args, env, config)
        started.append(p)
        return p

    yield start
    for p in started:
        if p.proc.poll() is None:
            p.proc.terminate()
            p.proc.wait(10)


# ---- CONFIG GET ---------------------------------------------------------------------------------

# Parameters both servers have and whose defaults agree (the reference runs with --save '').
SHARED_DEFAULTS = [
    "appendfsync", "appendonly", "client-query-buffer-limit", "cluster-enabled", "daemonize",
    "databases", "dbfilename", "hz", "io-threads", "maxmemory", "maxmemory-clients",
    "maxmemory-eviction-tenacity", "maxmemory-policy", "maxmemory-samples",
    "notify-keyspace-events", "proto-max-bulk-len", "replica-read-only", "save",
    "slowlog-log-slower-than", "slowlog-max-len", "latency-monitor-threshold", "tcp-keepalive",
    "timeout", "maxclients", "requirepass",
]


@pytest.fixture
def ref(redis_server):
    c = redis_server.client(decode_responses=True)
    yield c
    c.config_set("maxmemory", 0)
    c.config_set("maxmemory-policy", "noeviction")
    c.config_set("maxmemory-samples", 5)
    c.close()


@pytest.fixture
def sh(server):
    c = server.client(decode_responses=True)
    yield c
    c.config_set("maxmemory", 0)
    c.config_set("maxmemory-policy", "noeviction")
    c.config_set("maxmemory-samples", 5)
    c.close()


def test_config_get_values_match_redis(sh, ref):
    ours, theirs = cfg(sh, "*"), cfg(ref, "*")
    # Every parameter shardis shows is one Redis has.
    assert set(ours) <= set(theirs), set(ours) - set(theirs)
    for name in SHARED_DEFAULTS:
        assert ours[name] == theirs[name], name


@pytest.mark.parametrize("patterns", [
    ["maxmemory*"], ["*policy"], ["maxmemory", "maxmemory-policy"], ["MAXMEMORY"],
    ["save", "appendonly", "save"], ["max?emory"], ["maxmemory*", "maxmemory"], ["nope*"],
])
def test_config_get_patterns_match_redis(sh, ref, patterns):
    ours, theirs = sh.execute_command("CONFIG", "GET", *patterns), \
        ref.execute_command("CONFIG", "GET", *patterns)
    # RESP2: a flat array of name, value pairs (order is Redis' dict order: compare as dicts).
    assert isinstance(ours, list) and len(ours) % 2 == 0
    assert dict(zip(ours[::2], ours[1::2])) == dict(zip(theirs[::2], theirs[1::2]))


def test_config_get_reply_types(server, redis_server):
    for srv in (server, redis_server):
        with srv.raw() as raw:
            assert raw.call_raw("CONFIG", "GET", "maxmemory") == \
                b"*2\r\n$9\r\nmaxmemory\r\n$1\r\n0\r\n"
            raw.call("HELLO", "3")
            assert raw.call_raw("CONFIG", "GET", "maxmemory", "maxmemory-samples") in (
                b"%2\r\n$9\r\nmaxmemory\r\n$1\r\n0\r\n$17\r\nmaxmemory-samples\r\n$1\r\n5\r\n",
                b"%2\r\n$17\r\nmaxmemory-samples\r\n$1\r\n5\r\n$9\r\nmaxmemory\r\n$1\r\n0\r\n")
            assert raw.call_raw("CONFIG", "GET", "nope") == b"%0\r\n"


# ---- CONFIG SET ---------------------------------------------------------------------------------

SET_CASES = [
    ["maxmemory", "abc"], ["maxmemory", "-1"], ["maxmemory", "1.5gb"], ["maxmemory", " 1"],
    ["maxmemory-policy", "lru"], ["maxmemory-samples", "0"], ["maxmemory-samples", "x"],
    ["databases", "4"], ["no-such-option", "1"], ["maxmemory", "1", "maxmemory", "2"],
    ["maxmemory", "5mb", "maxmemory-policy", "bad"], ["maxmemory"],
]


@pytest.mark.parametrize("args", SET_CASES, ids=lambda a: "-".join(a).replace(" ", "_"))
def test_config_set_errors_match_redis(server, redis_server, args):
    with server.raw() as ours, redis_server.raw() as theirs:
        expected = theirs.call_raw("CONFIG", "SET", *args)
        assert expected.startswith(b"-")
        assert ours.call_raw("CONFIG", "SET", *args) == expected


@pytest.mark.parametrize("name,value,shown", [
    ("maxmemory", "1gb", "1073741824"), ("maxmemory", "100mb", "104857600"),
    ("maxmemory", "1k", "1000"), ("maxmemory", "1KB", "1024"), ("maxmemory", "123", "123"),
    ("maxmemory", "0", "0"), ("maxmemory-policy", "ALLKEYS-LRU", "allkeys-lru"),
    ("maxmemory-policy", "volatile-ttl", "volatile-ttl"), ("maxmemory-samples", "10", "10"),
])
def test_config_set_get_round_trip(sh, ref, name, value, shown):
    for c in (sh, ref):
        assert c.config_set(name, value)
        assert cfg(c, name) == {name: shown}


def test_config_set_fixed_parameter(sh):
    # Redis can change `databases` only at start; shardis has a fixed number.
    with pytest.raises(redis.ResponseError, match="'databases'.*can't set immutable config"):
        sh.config_set("databases", "4")
    # Redis 7 can move its port at runtime; shardis listens where it started.
    with pytest.raises(redis.ResponseError, match="'port'.*can't set immutable config"):
        sh.config_set("port", "1")


def test_config_set_several_is_atomic(sh):
    sh.config_set("maxmemory", "7mb")
    with pytest.raises(redis.ResponseError, match="maxmemory-policy"):
        sh.execute_command("CONFIG", "SET", "maxmemory", "9mb", "maxmemory-policy", "bad")
    assert cfg(sh, "maxmemory*")["maxmemory"] == str(7 << 20)   # the first pair was not applied
    assert sh.execute_command("CONFIG", "SET", "maxmemory", "9mb",
                              "maxmemory-policy", "allkeys-random", "maxmemory-samples", "3")
    got = cfg(sh, "maxmemory*")
    assert (got["maxmemory"], got["maxmemory-policy"], got["maxmemory-samples"]) == \
        (str(9 << 20), "allkeys-random", "3")
    assert sh.info("memory")["maxmemory"] == 9 << 20
    assert sh.info("memory")["maxmemory_policy"] == "allkeys-random"


def test_config_rewrite_without_file_matches_redis(server, redis_server):
    with server.raw() as ours, redis_server.raw() as theirs:
        assert ours.call_raw("CONFIG", "REWRITE") == theirs.call_raw("CONFIG", "REWRITE") == \
            b"-ERR The server is running without a config file\r\n"


def test_config_resetstat(sh):
    sh.set("k", "v")
    sh.get("k")
    sh.get("missing")
    sh.set("short", "v", px=1)
    time.sleep(0.01)
    assert sh.get("short") is None  # expired on access
    stats = sh.info("stats")
    assert stats["keyspace_hits"] >= 1 and stats["keyspace_misses"] >= 1
    assert stats["expired_keys"] >= 1
    assert sh.config_resetstat()
    stats = sh.info("stats")
    assert stats["keyspace_hits"] == stats["keyspace_misses"] == stats["expired_keys"] == 0
    assert stats["evicted_keys"] == 0
    assert stats["total_commands_processed"] <= 2


# ---- start-up: config file, env, command line -----------------------------------------------


def test_config_file_first_argument_and_rewrite(tmp_path, procs):
    conf = tmp_path / "shardis.conf"
    port = free_port()
    conf.write_text(
        "# shardis test configuration\n"
        f"port {port}\n"
        "\n"
        "maxmemory 10mb   \n"
        "   # an indented comment\n"
        "maxmemory-policy \"volatile-ttl\"\n"
        "threads 2\n"
        "maxmemory 12mb\n"   # a later duplicate wins at start, and REWRITE keeps one line
        "save \"\"\n")
    p = procs(config=conf, args=["--port=%d" % port])
    assert p.ready(port), p.output()
    c = p.client(port)
    got = cfg(c, "maxmemory*")
    assert got["maxmemory"] == str(12 << 20) and got["maxmemory-policy"] == "volatile-ttl"
    assert "config file " + str(conf) in p.output()
    assert c.config_set("maxmemory", "64mb")
    assert c.config_set("maxmemory-policy", "allkeys-random")
    assert c.config_set("maxmemory-samples", "9")
    assert c.config_rewrite()
    text = conf.read_text()
    assert text.splitlines() == [
        "# shardis test configuration",
        f"port {port}",
        "",
        "maxmemory 64mb",
        "   # an indented comment",
        "maxmemory-policy allkeys-random",
        "threads 2",
        "save \"\"",
        "# Generated by CONFIG REWRITE",
        "maxmemory-samples 9",
    ]
    p.stop()
    # The rewritten file starts a server with the same settings.
    q = procs(config=conf, args=["--port=%d" % port])
    assert q.ready(port), q.output()
    got = cfg(q.client(port), "maxmemory*")
    assert (got["maxmemory"], got["maxmemory-policy"], got["maxmemory-samples"]) == \
        (str(64 << 20), "allkeys-random", "9")
    # A second rewrite with nothing changed leaves the file as it is.
    assert q.client(port).config_rewrite()
    assert conf.read_text() == text


def test_precedence_file_env_command_line(tmp_path, procs):
    conf = tmp_path / "p.conf"
    conf.write_text("maxmemory 1mb\nmaxmemory-policy volatile-ttl\nmaxmemory-samples 3\n")
    # file only
    p = procs(config=conf)
    assert p.ready(), p.output()
    got = cfg(p.client(), "maxmemory*")
    assert (got["maxmemory"], got["maxmemory-policy"], got["maxmemory-samples"]) == \
        (str(1 << 20), "volatile-ttl", "3")
    # env beats the file
    q = procs(config=conf, env={"SHARDIS_MAXMEMORY": "2mb"})
    assert q.ready(), q.output()
    assert cfg(q.client(), "maxmemory") == {"maxmemory": str(2 << 20)}
    assert cfg(q.client(), "maxmemory-policy") == {"maxmemory-policy": "volatile-ttl"}
    # the command line beats both
    r = procs(config=conf, env={"SHARDIS_MAXMEMORY": "2mb",
                                "SHARDIS_MAXMEMORY_POLICY": "allkeys-lru"},
              args=["--maxmemory=4mb"])
    assert r.ready(), r.output()
    got = cfg(r.client(), "maxmemory*")
    assert (got["maxmemory"], got["maxmemory-policy"]) == (str(4 << 20), "allkeys-lru")
    # One summary line says where each setting came from.
    out = r.output()
    summary = [line for line in out.splitlines() if "configuration: " in line]
    assert len(summary) == 1, out
    assert "maxmemory=4mb (command line)" in summary[0]
    assert "maxmemory_policy=allkeys-lru (SHARDIS_MAXMEMORY_POLICY)" in summary[0]
    assert f"maxmemory-samples=3 ({conf}:3)" in summary[0]


def test_env_vars_set_any_flag(tmp_path, procs):
    port = free_port()
    p = procs(env={"SHARDIS_PORT": str(port), "SHARDIS_THREADS": "2",
                   "SHARDIS_MAXMEMORY": "1gb"})
    assert p.ready(port), p.output()
    c = p.client(port)
    assert cfg(c, "maxmemory") == {"maxmemory": "1073741824"}
    assert c.info("server").get("tcp_port", port) == port
    assert "2 thread(s)" in p.output()


def test_flagfile(tmp_path, procs):
    flags = tmp_path / "flags"
    flags.write_text("--maxmemory=5mb\n--maxmemory_policy=allkeys-random\n")
    p = procs(args=[f"--flagfile={flags}"], env={"SHARDIS_MAXMEMORY": "1mb"})
    assert p.ready(), p.output()
    got = cfg(p.client(), "maxmemory*")
    assert (got["maxmemory"], got["maxmemory-policy"]) == (str(5 << 20), "allkeys-random")


@pytest.mark.parametrize("env,message", [
    ({"SHARDIS_NO_SUCH_FLAG": "1"}, "unknown environment variable SHARDIS_NO_SUCH_FLAG"),
    ({"SHARDIS_MAXMEMORY": "lots"}, "SHARDIS_MAXMEMORY: argument must be a memory value"),
    ({"SHARDIS_MAXMEMORY_POLICY": "lru"}, "SHARDIS_MAXMEMORY_POLICY: argument(s) must be one of"),
])
def test_bad_env_var_stops_the_start(tmp_path, procs, env, message):
    p = procs(env=env)
    assert p.exit_code() == 1
    assert message in p.output()


@pytest.mark.parametrize("content,message", [
    ("port 7000\nno-such-directive yes\n", ":2: unknown directive 'no-such-directive'"),
    ("maxmemory lots\n", ":1: maxmemory: argument must be a memory value"),
    ("maxmemory-policy \"allkeys-random\n", ":1: unbalanced quotes"),
    ("databases 32\n", ":1: 'databases' cannot be changed in shardis"),
    ("maxmemory\n", ":1: a directive needs a value"),
])
def test_bad_config_file_stops_the_start(tmp_path, procs, content, message):
    conf = tmp_path / "bad.conf"
    conf.write_text(content)
    p = procs(config=conf)
    assert p.exit_code() == 1
    assert str(conf) + message in p.output(), p.output()


def test_missing_config_file(tmp_path, procs):
    p = procs(config=tmp_path / "missing.conf")
    assert p.exit_code() == 1
    assert "cannot open config file" in p.output()


def test_start_log_explains_maxmemory(tmp_path, procs):
    p = procs()
    assert p.ready(), p.output()
    lines = [line for line in p.output().splitlines() if "] maxmemory " in line]
    assert len(lines) == 1, p.output()
    shown = int(cfg(p.client(), "maxmemory")["maxmemory"])
    if shown == 0:
        assert "0 (no limit: --maxmemory unset and no cgroup memory limit)" in lines[0]
    else:
        assert "(80% of cgroup memory limit " in lines[0]
    q = procs(args=["--maxmemory=2gb"])
    assert q.ready(), q.output()
    assert "maxmemory 2.00GiB (set by command line)" in q.output()
