"""CONFIG GET/SET/RESETSTAT/REWRITE, the config file, SHARDIS_ environment variables and the
precedence defaults < config file < env < command line."""

from __future__ import annotations

import os
import pathlib
import subprocess
import time

import pytest
import redis

from conftest import SHARDIS_BIN, answers_ping, free_port, wait_for

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
        return wait_for(lambda: answers_ping(self.proc, port or self.port), 10) is True

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
    # the encodings' thresholds and node sizes
    "hash-max-listpack-entries", "hash-max-ziplist-entries", "hash-max-listpack-value",
    "hash-max-ziplist-value", "set-max-intset-entries",
    "zset-max-listpack-entries", "zset-max-listpack-value", "zset-max-ziplist-entries",
    "zset-max-ziplist-value", "list-max-listpack-size", "list-max-ziplist-size",
    "list-compress-depth", "stream-node-max-bytes", "stream-node-max-entries",
    "hll-sparse-max-bytes", "busy-reply-threshold", "lua-time-limit",
    # active defragmentation
    "activedefrag", "active-defrag-ignore-bytes", "active-defrag-cycle-max",
    "active-defrag-max-scan-fields",
    # lazy freeing
    "lazyfree-lazy-eviction", "lazyfree-lazy-user-flush",
    # a few of the parameters shardis shows with Redis' fixed default
    "repl-backlog-size", "tls-port", "loglevel",
    "oom-score-adj-values", "latency-tracking-info-percentiles", "slave-read-only",
]

# Redis 7.2 parameters the reference (Redis 7.0) does not have.
REDIS_72_ONLY = {"set-max-listpack-entries", "set-max-listpack-value", "locale-collate",
                 "cluster-announce-human-nodename"}
# Parameters Redis 7.0 shows under `*` that Redis 7.2 hides (HIDDEN_CONFIG).
HIDDEN_IN_72 = {"aof-disable-auto-gc"}


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
    # Every parameter shardis shows is one Redis has, and every one Redis shows, shardis shows.
    assert set(ours) - set(theirs) == REDIS_72_ONLY
    assert set(theirs) - set(ours) == HIDDEN_IN_72
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


def test_config_set_fixed_parameter_to_its_own_value(sh, ref):
    # CONFIG SET of the value a parameter has is accepted and changes nothing (Redis' maxmemory
    # unit starts with `maxmemory-clients 0`, its "CONFIG sanity" sets every parameter to its own
    # value); the same number in other units, or a bool in another case, is the same value.
    for c in (sh, ref):
        assert c.config_set("maxmemory-clients", "0")
        assert c.execute_command("CONFIG", "SET", "lazyfree-lazy-eviction", "NO",
                                 "repl-backlog-size", "1mb", "maxmemory", "7mb")
        assert cfg(c, "maxmemory-clients") == {"maxmemory-clients": "0"}
        assert cfg(c, "repl-backlog-size") == {"repl-backlog-size": "1048576"}
        assert cfg(c, "maxmemory") == {"maxmemory": str(7 << 20)}
        for name in ("port", "bind"):
            value = cfg(c, name)[name]
            assert c.config_set(name, value)
            assert cfg(c, name) == {name: value}
    # A refused pair applies none.
    with pytest.raises(redis.ResponseError,
                       match="'active-defrag-cycle-max'.*between 1 and 99 inclusive"):
        sh.execute_command("CONFIG", "SET", "maxmemory", "9mb", "active-defrag-cycle-max", "100")
    assert cfg(sh, "maxmemory") == {"maxmemory": str(7 << 20)}
    # What Redis has immutable is refused whatever the value, by both.
    for c in (sh, ref):
        for name, value in (("daemonize", "no"), ("databases", "16"), ("io-threads", "1"),
                            ("unixsocket", ""), ("cluster-enabled", "no")):
            with pytest.raises(redis.ResponseError, match=f"'{name}'.*can't set immutable config"):
                c.config_set(name, value)


# Redis 7.2 parameters whose effect shardis does not have yet (replication, client eviction,
# ...): accepted with Redis' type, range and error texts, stored and shown. (name, value, what
# CONFIG GET shows then, or None for an error the reply of which must be Redis').
ACCEPTED_CASES = [
    ("repl-backlog-size", "10000002", "10000002"), ("repl-backlog-size", "5mb", "5242880"),
    ("repl-backlog-size", "0", None), ("repl-backlog-size", "x", None),
    ("maxmemory-clients", "10%", "10%"), ("maxmemory-clients", "1mb", "1048576"),
    ("maxmemory-clients", "100%", "100%"), ("maxmemory-clients", "200%", None),
    ("maxmemory-clients", "-1", None), ("maxmemory-clients", "abc", None),
    ("min-replicas-to-write", "3", "3"), ("min-slaves-max-lag", "20", "20"),
    ("slave-priority", "5", "5"), ("replica-priority", "-1", None),
    ("repl-timeout", "0", None), ("repl-ping-replica-period", "x", None),
    ("replica-serve-stale-data", "no", "no"), ("replica-read-only", "maybe", None),
    ("repl-diskless-load", "swapdb", "swapdb"), ("repl-diskless-load", "always", None),
    ("repl-diskless-sync-delay", "0", "0"), ("repl-backlog-ttl", "100", "100"),
    ("active-expire-effort", "11", None),
    ("maxmemory-eviction-tenacity", "100", "100"), ("maxmemory-eviction-tenacity", "101", None),
    ("oom-score-adj-values", "1 2 3", "1 2 3"), ("oom-score-adj-values", "1 2", None),
    ("oom-score-adj-values", "1 2 3000", None),
    ("shutdown-on-sigint", "now nosave", "nosave now"), ("shutdown-on-sigterm", "save", "save"),
    ("shutdown-on-sigint", "save nosave", None), ("shutdown-on-sigint", "later", None),
    ("propagation-error-behavior", "panic", "panic"), ("sanitize-dump-payload", "clients", "clients"),
    ("cluster-announce-hostname", "a.b-c", "a.b-c"), ("cluster-announce-hostname", "a_b", None),
    ("proc-title-template", "{title} {port}", "{title} {port}"),
    ("proc-title-template", "{nope}", None), ("proc-title-template", "{title}", None),
    ("masterauth", "secret", "secret"), ("replica-announce-ip", "10.0.0.1", "10.0.0.1"),
    ("cluster-node-timeout", "5000", "5000"), ("cluster-link-sendbuf-limit", "1kb", "1024"),
]


@pytest.mark.parametrize("name,value,shown", ACCEPTED_CASES,
                         ids=lambda v: v.replace(" ", "_") if isinstance(v, str) else "err")
def test_config_set_accepted_parameter_matches_redis(server, redis_server, name, value, shown):
    with server.raw() as ours, redis_server.raw() as theirs:
        defaults = [c.call("CONFIG", "GET", name)[1] for c in (ours, theirs)]
        assert defaults[0] == defaults[1]
        try:
            expected = theirs.call_raw("CONFIG", "SET", name, value)
            assert ours.call_raw("CONFIG", "SET", name, value) == expected
            assert expected.startswith(b"-") == (shown is None)
            if shown is not None:
                for c in (ours, theirs):
                    assert c.call("CONFIG", "GET", name) == [name.encode(), shown.encode()]
        finally:
            for c in (ours, theirs):
                c.call("CONFIG", "SET", name, defaults[0])


def test_config_set_accepted_parameters_as_redis_72(sh):
    # Where Redis 7.2 differs from the 7.0 reference: loglevel `nothing` (new in 7.2) and the
    # list of levels in its error.
    try:
        assert sh.config_set("loglevel", "nothing") and cfg(sh, "loglevel")["loglevel"] == "nothing"
        with pytest.raises(redis.ResponseError, match=r"^CONFIG SET failed \(possibly related to "
                           r"argument 'loglevel'\) - argument\(s\) must be one of the following: "
                           r"debug, verbose, notice, warning, nothing$"):
            sh.config_set("loglevel", "loud")
        # CONFIG GET of an alias and of its main name show one value.
        assert sh.config_set("slave-lazy-flush", "yes")
        assert cfg(sh, "replica-lazy-flush") == {"replica-lazy-flush": "yes"}
    finally:
        sh.execute_command("CONFIG", "SET", "loglevel", "notice", "replica-lazy-flush", "no")


def test_config_set_rollback_on_set_error_as_redis(server, redis_server):
    # Redis' "CONFIG SET rollback on set error": a bad value of an accepted parameter answers its
    # own error and leaves every parameter of that CONFIG SET as it was.
    with server.raw() as ours, redis_server.raw() as theirs:
        for c in (ours, theirs):
            assert c.call("CONFIG", "SET", "maxmemory", "10000002") == b"OK"
        expected = theirs.call_raw("CONFIG", "SET", "maxmemory", "10000001", "maxmemory-clients",
                                   "200%", "client-query-buffer-limit", "invalid")
        assert expected == (b"-ERR CONFIG SET failed (possibly related to argument "
                            b"'maxmemory-clients') - percentage argument must be less or equal "
                            b"to 100\r\n")
        assert ours.call_raw("CONFIG", "SET", "maxmemory", "10000001", "maxmemory-clients", "200%",
                             "client-query-buffer-limit", "invalid") == expected
        for c in (ours, theirs):
            assert c.call("CONFIG", "GET", "maxmemory") == [b"maxmemory", b"10000002"]
            assert c.call("CONFIG", "GET", "maxmemory-clients") == [b"maxmemory-clients", b"0"]
            assert c.call("CONFIG", "SET", "maxmemory", "0") == b"OK"


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


# ---- runtime parameters ---------------------------------------------------------------------

# (name, value): valid values, set on both servers; CONFIG GET must then agree.
RUNTIME_VALUES = [
    ("hash-max-listpack-entries", "256"), ("hash-max-ziplist-entries", "100"),
    ("hash-max-listpack-value", "1kb"), ("hash-max-ziplist-value", "100"),
    ("set-max-intset-entries", "1000"), ("zset-max-listpack-entries", "0"),
    ("zset-max-ziplist-entries", "64"), ("zset-max-listpack-value", "2k"),
    ("zset-max-ziplist-value", "32"), ("list-max-listpack-size", "-3"),
    ("list-max-ziplist-size", "7"), ("list-max-listpack-size", "-2147483648"),
    ("list-compress-depth", "2"), ("stream-node-max-bytes", "8kb"),
    ("stream-node-max-bytes", "0"), ("stream-node-max-entries", "50"),
    ("hll-sparse-max-bytes", "4000"), ("zset-max-listpack-value", "kb"),
    ("stream-node-max-bytes", "2B"), ("hz", "50"), ("hz", "0"), ("hz", "100000"),
    ("timeout", "30"), ("slowlog-max-len", "10"), ("slowlog-log-slower-than", "-1"),
    ("lua-time-limit", "100"), ("busy-reply-threshold", "200"), ("tcp-keepalive", "60"),
    ("latency-monitor-threshold", "5"), ("proto-max-bulk-len", "1mb"),
    ("client-query-buffer-limit", "2gb"), ("maxclients", "1000"),
    ("latency-tracking", "no"), ("latency-tracking-info-percentiles", "50 99.99"),
    ("latency-tracking-info-percentiles", ""),
    ("latency-tracking-info-percentiles", "0 100 33.3333 1e1"),
]


def _restore(c, names_values: dict) -> None:
    for name, value in names_values.items():
        c.config_set(name, value)


@pytest.mark.parametrize("name,value", RUNTIME_VALUES, ids=lambda v: str(v))
def test_config_set_runtime_values_match_redis(sh, ref, name, value):
    saved = {"ours": cfg(sh, name), "theirs": cfg(ref, name)}
    try:
        for c in (sh, ref):
            assert c.config_set(name, value) is True
        assert cfg(sh, name) == cfg(ref, name)
    finally:
        _restore(sh, saved["ours"])
        _restore(ref, saved["theirs"])


# Out-of-range values, bad types and duplicates: the same error as Redis.
RUNTIME_ERRORS = [
    ["hash-max-listpack-entries", "-1"], ["hash-max-listpack-entries", "abc"],
    ["hash-max-ziplist-entries", "1.5"], ["hash-max-listpack-value", "-1"],
    ["hash-max-listpack-value", "1x"], ["set-max-intset-entries", "-3"],
    ["zset-max-listpack-value", "1kbb"], ["zset-max-listpack-value", "+1"], ["list-max-listpack-size", "9999999999"],
    ["list-max-listpack-size", "x"], ["list-compress-depth", "-1"],
    ["stream-node-max-entries", "-5"], ["stream-node-max-bytes", "-5"], ["hz", "-1"],
    ["hz", "x"], ["hz", "99999999999"], ["maxclients", "0"], ["maxclients", "-1"],
    ["maxclients", "4294967296"], ["timeout", "-1"], ["timeout", "2147483648"],
    ["proto-max-bulk-len", "1000"], ["client-query-buffer-limit", "1k"],
    ["slowlog-log-slower-than", "-2"], ["lua-time-limit", "-1"], ["tcp-keepalive", "x"],
    ["hll-sparse-max-bytes", "-1"], ["latency-tracking", "maybe"],
    ["latency-tracking-info-percentiles", "101"], ["latency-tracking-info-percentiles", "x"],
    ["latency-tracking-info-percentiles", "50  99"], ["latency-tracking-info-percentiles", "-1"],
    ["hz", "5", "hz", "6"], ["timeout", "1", "hz", "x"], ["hz", "5", "nosuch", "1"],
    ["hash-max-listpack-entries", "5", "hash-max-listpack-entries", "x"],
    # Redis checks every name before any value; a bad value is named as the parameter is.
    ["hz", "x", "nosuch", "1"], ["hz", "x", "databases", "1"], ["HZ", "x"],
    ["Hash-Max-Ziplist-Entries", "x"],
]


@pytest.mark.parametrize("args", RUNTIME_ERRORS, ids=lambda a: "-".join(a))
def test_config_set_runtime_errors_match_redis(server, redis_server, args):
    with server.raw() as ours, redis_server.raw() as theirs:
        before = ours.call("CONFIG", "GET", *args[::2])
        expected = theirs.call_raw("CONFIG", "SET", *args)
        assert expected.startswith(b"-"), expected
        assert ours.call_raw("CONFIG", "SET", *args) == expected
        assert ours.call("CONFIG", "GET", *args[::2]) == before  # all or nothing


def test_config_set_several_runtime_parameters_at_once(sh):
    saved = cfg(sh, "hz") | cfg(sh, "timeout") | cfg(sh, "hash-max-listpack-entries")
    try:
        assert sh.execute_command("CONFIG", "SET", "hz", "20", "timeout", "40",
                                  "hash-max-ziplist-entries", "9")
        got = cfg(sh, "*")
        assert (got["hz"], got["timeout"], got["hash-max-listpack-entries"],
                got["hash-max-ziplist-entries"]) == ("20", "40", "9", "9")
    finally:
        _restore(sh, saved)


def latencystats(c) -> dict:
    return {k: v for k, v in c.info("latencystats").items()}


@pytest.mark.parametrize("percentiles,shown", [
    ("50 99.99", ["p50", "p99.99"]), ("", []), ("0 100 33.3333", ["p0", "p100", "p33.3333"]),
])
def test_config_latency_percentiles_shape_info_like_redis(sh, ref, percentiles, shown):
    try:
        for c in (sh, ref):
            c.config_set("latency-tracking-info-percentiles", percentiles)
            c.config_resetstat()
            c.set("lat", "v")
            # redis-py reads "p50=1.0,p99=2.0" as a dict, and an empty value as "".
            line = latencystats(c)["latency_percentiles_usec_set"]
            assert (list(line) if line != "" else []) == shown
    finally:
        for c in (sh, ref):
            c.config_set("latency-tracking-info-percentiles", "50 99 99.9")
            c.delete("lat")


def test_config_latency_tracking_off_empties_latencystats(sh, ref):
    try:
        for c in (sh, ref):
            c.config_set("latency-tracking", "no")
            c.config_resetstat()
            c.set("lat", "v")
            assert latencystats(c) == {}
            c.config_set("latency-tracking", "yes")
            c.set("lat", "v")
            assert "latency_percentiles_usec_set" in latencystats(c)
    finally:
        for c in (sh, ref):
            c.config_set("latency-tracking", "yes")
            c.delete("lat")


def test_config_hz_is_clamped(sh):
    try:
        # As Redis, the value itself is clamped to 1..500.
        for configured, effective in (("100", 100), ("0", 1), ("1000", 500), ("10", 10)):
            sh.config_set("hz", configured)
            info = sh.info("server")
            assert (info["hz"], info["configured_hz"]) == (effective, effective)
            assert cfg(sh, "hz") == {"hz": str(effective)}
    finally:
        sh.config_set("hz", "10")


def test_config_active_expiry_follows_hz(sh):
    try:
        sh.config_set("hz", "100")
        keys = sh.dbsize()
        sh.execute_command("PSETEX", "short-lived", 1, "v")
        # Removed by the active cycle (no access), within a few periods of 10 ms.
        assert wait_for(lambda: sh.dbsize() == keys, 2)
    finally:
        sh.config_set("hz", "10")


# (parameter, value that makes a tiny collection take its large encoding, build, encoding)
ENCODING_SWITCHES = [
    ("hash-max-listpack-entries", "2", lambda c, k: c.hset(k, mapping={"a": 1, "b": 2, "c": 3}),
     "hashtable"),
    ("hash-max-ziplist-value", "3", lambda c, k: c.hset(k, "f", "long value"), "hashtable"),
    ("set-max-intset-entries", "2", lambda c, k: c.sadd(k, 1, 2, 3), "hashtable"),
    ("zset-max-listpack-entries", "2", lambda c, k: c.zadd(k, {"a": 1, "b": 2, "c": 3}),
     "skiplist"),
    ("zset-max-ziplist-value", "3", lambda c, k: c.zadd(k, {"long member": 1}), "skiplist"),
]


@pytest.mark.parametrize("name,value,build,encoding", ENCODING_SWITCHES,
                         ids=[e[0] for e in ENCODING_SWITCHES])
def test_config_set_reaches_every_shard(sh, name, value, build, encoding):
    saved = cfg(sh, name)
    try:
        sh.config_set(name, value)
        # Keys spread over every shard of a multi-threaded server.
        for i in range(16):
            build(sh, f"enc-{i}")
            assert sh.object("encoding", f"enc-{i}") == encoding, (name, i)
    finally:
        _restore(sh, saved)
        sh.delete(*[f"enc-{i}" for i in range(16)])


def test_config_set_set_max_listpack_entries(sh):
    # Redis 7.2's listpack sets (Redis 7.0 has no such parameter).
    saved = cfg(sh, "set-max-listpack-*")
    try:
        sh.config_set("set-max-listpack-entries", "2")
        sh.sadd("lp", "a", "b")
        assert sh.object("encoding", "lp") == "listpack"
        sh.sadd("lp", "c")
        assert sh.object("encoding", "lp") == "hashtable"
        sh.config_set("set-max-listpack-value", "1")
        sh.sadd("lp2", "ab")
        assert sh.object("encoding", "lp2") == "hashtable"
        with pytest.raises(redis.ResponseError, match="between 0 and 9223372036854775807"):
            sh.config_set("set-max-listpack-value", "-1")
    finally:
        _restore(sh, saved)
        sh.delete("lp", "lp2")


def test_config_fixed_parameters_show_redis_defaults(sh):
    got = cfg(sh, "*")
    assert got["repl-backlog-size"] == "1048576" and got["lfu-log-factor"] == "10"
    assert got["locale-collate"] == "" and got["supervised"] == "no"
    with pytest.raises(redis.ResponseError,
                       match="'supervised'.*can't set immutable config"):
        sh.config_set("supervised", "systemd")


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
        # As Redis without an aclfile: the users, even when the file had none.
        "user default on nopass sanitize-payload ~* &* +@all",
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


def test_tooling_env_vars_are_ignored(procs):
    # scripts/test.sh's own settings, exported around the whole run (the README names them).
    p = procs(env={"SHARDIS_DOCKER_LOCAL": "/x/docker-local", "SHARDIS_DOCKER": "/usr/bin/docker",
                   "SHARDIS_TEST_TARGET": "shardis", "SHARDIS_DIFF_SEED": "1"})
    assert p.ready(), p.output()


@pytest.mark.parametrize("env,message", [
    ({"SHARDIS_NO_SUCH_FLAG": "1"}, "unknown environment variable SHARDIS_NO_SUCH_FLAG"),
    ({"SHARDIS_FROMENV": "port"}, "unknown environment variable SHARDIS_FROMENV"),
    ({"SHARDIS_MAXMEMORY": "lots"}, "SHARDIS_MAXMEMORY: argument must be a memory value"),
    ({"SHARDIS_MAXMEMORY_POLICY": "lru"}, "SHARDIS_MAXMEMORY_POLICY: argument(s) must be one of"),
])
def test_bad_env_var_stops_the_start(tmp_path, procs, env, message):
    p = procs(env=env)
    assert p.exit_code() == 1
    assert message in p.output()


# Redis' FATAL CONFIG FILE ERROR block: the line number, the line, the reason.
@pytest.mark.parametrize("content,message", [
    ("port 7000\nno-such-directive yes\n",
     "at line 2\n>>> 'no-such-directive yes'\nBad directive or wrong number of arguments"),
    ("maxmemory lots\n", "at line 1\n>>> 'maxmemory lots'\nargument must be a memory value"),
    ("maxmemory-policy \"allkeys-random\n", "Unbalanced quotes in configuration line"),
    ("databases 32\n", "'databases' cannot be changed in shardis"),
    # gflags' own flags are not directives (tryfromenv exited the process: the config fuzzer).
    ("tryfromenv -domz\n", ">>> 'tryfromenv -domz'\nBad directive or wrong number of arguments"),
    ("flagfile /etc/passwd\n", "Bad directive or wrong number of arguments"),
    ("maxmemory\n", ">>> 'maxmemory'\nwrong number of arguments"),
    ("maxmemory 1mb 2mb\n", "wrong number of arguments"),
    # A NUL in the name is part of it (gflags would have read "save" and skipped the check).
    ("save\0x 1 2\n", "Bad directive or wrong number of arguments"),
    ("save \"450\0 10\"\n", "invalid value '450"),
])
def test_bad_config_file_stops_the_start(tmp_path, procs, content, message):
    conf = tmp_path / "bad.conf"
    conf.write_text(content)
    p = procs(config=conf)
    assert p.exit_code() == 1
    assert "*** FATAL CONFIG FILE ERROR (Redis 7.2.4) ***" in p.output(), p.output()
    assert message in p.output(), p.output()


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


def test_config_rewrite_writes_an_alias_once(tmp_path, procs):
    conf = tmp_path / "alias.conf"
    port = free_port()
    conf.write_text(f"port {port}\nhash-max-ziplist-entries 256\nsave \"\"\n")
    p = procs(config=conf, args=["--port=%d" % port])
    assert p.ready(port), p.output()
    c = p.client(port)
    assert cfg(c, "hash-max-listpack-entries") == {"hash-max-listpack-entries": "256"}
    assert c.config_set("hash-max-listpack-entries", "300")
    assert c.config_set("hz", "20")
    assert c.config_rewrite()
    lines = conf.read_text().splitlines()
    # The line keeps the name it was written with; the main name is not added a second time.
    assert "hash-max-ziplist-entries 300" in lines
    assert not any(line.startswith("hash-max-listpack-entries") for line in lines)
    assert "hz 20" in lines


def test_config_rewrite_writes_accepted_parameters(tmp_path, procs):
    # Parameters accepted without effect yet are read from the config file (with any value Redis
    # takes), changed by CONFIG SET, written by CONFIG REWRITE and read back at the next start.
    conf = tmp_path / "accepted.conf"
    port = free_port()
    conf.write_text(f"port {port}\nrepl-diskless-sync-delay 0\nslave-priority 50\n"
                    "loglevel warning\nsave \"\"\n")
    p = procs(config=conf, args=["--port=%d" % port])
    assert p.ready(port), p.output()
    c = p.client(port)
    assert cfg(c, "repl-diskless-sync-delay") == {"repl-diskless-sync-delay": "0"}
    assert cfg(c, "replica-priority") == {"replica-priority": "50"}
    assert c.execute_command("CONFIG", "SET", "repl-backlog-size", "5mb", "maxmemory-clients",
                             "10%", "shutdown-on-sigterm", "now nosave", "slave-priority", "60")
    assert c.config_rewrite()
    lines = conf.read_text().splitlines()
    assert "repl-backlog-size 5mb" in lines and "maxmemory-clients 10%" in lines
    assert "slave-priority 60" in lines and "loglevel warning" in lines
    c.close()
    p.stop()
    q = procs(config=conf, args=["--port=%d" % port])
    assert q.ready(port), q.output()
    got = cfg(q.client(port), "*")
    assert (got["repl-backlog-size"], got["maxmemory-clients"], got["shutdown-on-sigterm"],
            got["replica-priority"], got["repl-diskless-sync-delay"]) == \
        ("5242880", "10%", "nosave now", "60", "0")
