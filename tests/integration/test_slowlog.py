"""SLOWLOG GET/LEN/RESET/HELP and LATENCY LATEST/HISTORY/RESET/DOCTOR, differentially against the
Debian redis-server where both define the reply (entry layout and argument truncation)."""

import pytest

from conftest import Error, RespConn

pytestmark = pytest.mark.shardis_only

LOG_ALL = (["--slowlog_log_slower_than=0"], ["--slowlog-log-slower-than", "0"])


@pytest.fixture
def log_all(server_factory):
    return server_factory(threads=2, args=LOG_ALL[0])


def slowlog_entry_of(port, *cmd, name=None):
    """Runs cmd on a fresh connection after SLOWLOG RESET; returns its slowlog entry."""
    with RespConn(port) as c:
        if name:
            c.call("CLIENT", "SETNAME", name)
        c.call("SLOWLOG", "RESET")
        c.call(*cmd)
        entries = c.call("SLOWLOG", "GET", "-1")
        addr = [l for l in c.call("CLIENT", "INFO").split() if l.startswith(b"addr=")][0][5:]
    matching = [e for e in entries if e[3][:1] == [cmd[0].encode()]]
    assert len(matching) == 1, entries
    return matching[0], addr


def test_entry_layout_and_truncation_match_redis(log_all, redis_server):
    with RespConn(redis_server.port) as c:
        c.call("CONFIG", "SET", "slowlog-log-slower-than", "0")
    try:
        cases = [
            ("SET", "k", "v"),
            ("RPUSH", "list", *[f"v{i}" for i in range(40)]),     # 42 args: cut to 32
            ("RPUSH", "list", *[f"v{i}" for i in range(30)]),     # 32 args: kept whole
            ("RPUSH", "list", *[f"v{i}" for i in range(31)]),     # 33 args: cut
            ("SET", "big", "x" * 200),                             # 200 bytes: cut to 128
            ("SET", "edge", "y" * 128),                            # 128 bytes: kept
        ]
        for cmd in cases:
            ours, our_addr = slowlog_entry_of(log_all.port, *cmd, name="me")
            theirs, their_addr = slowlog_entry_of(redis_server.port, *cmd, name="me")
            assert len(ours) == len(theirs) == 6
            assert isinstance(ours[0], int) and isinstance(ours[1], int)
            assert isinstance(ours[2], int) and ours[2] >= 0
            assert ours[3] == theirs[3], cmd[:3]
            assert ours[4] == our_addr and theirs[4] == their_addr
            assert ours[5] == theirs[5] == b"me"
    finally:
        with RespConn(redis_server.port) as c:
            c.call("CONFIG", "SET", "slowlog-log-slower-than", "10000")


def test_get_len_reset_and_ids(server_factory):
    srv = server_factory(threads=4, args=["--slowlog_log_slower_than=0", "--slowlog_max_len=5"])
    conns = [RespConn(srv.port) for _ in range(4)]  # spread over the threads
    try:
        conns[0].call("SLOWLOG", "RESET")
        for i in range(12):
            conns[i % 4].call("SET", f"k{i}", i)
        c = conns[0]
        assert c.call("SLOWLOG", "LEN") == 5
        entries = c.call("SLOWLOG", "GET", "-1")
        assert len(entries) == 5
        ids = [e[0] for e in entries]
        assert ids == sorted(ids, reverse=True) and len(set(ids)) == 5
        # Newest first: the last SET is the newest SET entry.
        sets = [e for e in entries if e[3][0] == b"SET"]
        assert sets[0][3] == [b"SET", b"k11", b"11"]
        assert len(c.call("SLOWLOG", "GET")) == 5
        assert len(c.call("SLOWLOG", "GET", "2")) == 2
        assert c.call("SLOWLOG", "GET", "0") == []
        assert c.call("SLOWLOG", "GET", "-2") == Error(
            b"ERR count should be greater than or equal to -1")
        assert c.call("SLOWLOG", "RESET") == b"OK"
        assert c.call("SLOWLOG", "LEN") <= 1  # the LEN itself may be logged after RESET
    finally:
        for c in conns:
            c.close()


def test_default_threshold_logs_a_slow_command(server):
    with RespConn(server.port) as c:
        c.call("SLOWLOG", "RESET")
        c.call("DEBUG", "SLEEP", "0.05")  # 50 ms: above the default 10 ms
        entries = [e for e in c.call("SLOWLOG", "GET") if e[3][0] == b"DEBUG"]
        assert len(entries) == 1
        assert entries[0][3] == [b"DEBUG", b"SLEEP", b"0.05"]
        assert entries[0][2] >= 50000


def test_only_commands_over_the_threshold(server_factory):
    srv = server_factory(threads=2, args=["--slowlog_log_slower_than=80000"])
    with RespConn(srv.port) as c:
        c.call("PING")
        c.call("SET", "a", "b")
        c.call("DEBUG", "SLEEP", "0.01")
        assert c.call("SLOWLOG", "LEN") == 0
        c.call("DEBUG", "SLEEP", "0.1")
        assert [e[3] for e in c.call("SLOWLOG", "GET")] == [[b"DEBUG", b"SLEEP", b"0.1"]]


def test_negative_threshold_disables(server_factory):
    srv = server_factory(threads=1, args=["--slowlog_log_slower_than=-1"])
    with RespConn(srv.port) as c:
        c.call("DEBUG", "SLEEP", "0.02")
        assert c.call("SLOWLOG", "LEN") == 0


def test_help_matches_redis(server, redis_server):
    with RespConn(server.port) as a, RespConn(redis_server.port) as b:
        assert a.call("SLOWLOG", "HELP") == b.call("SLOWLOG", "HELP")
        assert a.call("SLOWLOG", "NOPE") == b.call("SLOWLOG", "NOPE")
        assert a.call("SLOWLOG", "GET", "1", "2") == b.call("SLOWLOG", "GET", "1", "2")


def test_slowlog_counts_in_commandstats(server):
    with RespConn(server.port) as c:
        c.call("CONFIG", "RESETSTAT")
        c.call("SLOWLOG", "LEN")
        text = c.call("INFO", "commandstats")
        assert b"cmdstat_slowlog|len:calls=1," in text


def test_latency_monitor(server_factory, redis_server):
    # A threshold well above what ordinary commands take on a busy test machine, so that only the
    # sleep leaves a sample.
    srv = server_factory(threads=2, args=["--latency_monitor_threshold=60"])
    with RespConn(srv.port) as c:
        assert c.call("LATENCY", "LATEST") == []
        c.call("DEBUG", "SLEEP", "0.15")
        latest = c.call("LATENCY", "LATEST")
        assert len(latest) == 1, latest
        event, when, last, worst = latest[0]
        assert event == b"command" and last >= 150 and worst >= last and when > 1600000000
        history = c.call("LATENCY", "HISTORY", "command")
        assert [when, last] in history, history
        assert c.call("LATENCY", "HISTORY", "nosuchevent") == []
        doctor = c.call("LATENCY", "DOCTOR")
        assert b"latency spikes" in doctor and b"1. command:" in doctor
        assert c.call("LATENCY", "RESET") == 1
        assert c.call("LATENCY", "HISTORY", "command") == []
        assert c.call("LATENCY", "RESET", "command") == 0
        # Fast commands are their own event.
        c.call("DEBUG", "SLEEP", "0")  # not slow: nothing recorded
        assert c.call("LATENCY", "LATEST") == []
    # Off by default: DOCTOR says so in Redis' words.
    with RespConn(redis_server.port) as theirs:
        assert theirs.call("LATENCY", "DOCTOR").startswith(b"I'm sorry, Dave")


def test_latency_doctor_disabled_matches_redis(server, redis_server):
    with RespConn(server.port) as a, RespConn(redis_server.port) as b:
        assert a.call("LATENCY", "DOCTOR") == b.call("LATENCY", "DOCTOR")
        assert a.call("LATENCY", "LATEST") == b.call("LATENCY", "LATEST") == []


def test_config_set_changes_thresholds_at_runtime(server_factory):
    srv = server_factory(threads=2)
    with RespConn(srv.port) as c:
        assert c.call("CONFIG", "GET", "slowlog-*") == \
            [b"slowlog-log-slower-than", b"10000", b"slowlog-max-len", b"128"]
        c.call("SLOWLOG", "RESET")
        c.call("SET", "fast", "1")
        assert c.call("SLOWLOG", "LEN") == 0
        assert c.call("CONFIG", "SET", "slowlog-log-slower-than", "0", "slowlog-max-len", "3") \
            == b"OK"
        for i in range(5):
            c.call("SET", f"k{i}", "v")
        assert c.call("SLOWLOG", "LEN") == 3
        assert c.call("CONFIG", "SET", "latency-monitor-threshold", "5") == b"OK"
        assert c.call("CONFIG", "GET", "latency-monitor-threshold") == \
            [b"latency-monitor-threshold", b"5"]
        err = c.call("CONFIG", "SET", "slowlog-max-len", "-1")
        assert isinstance(err, Error) and b"argument must be between 0 and" in err
