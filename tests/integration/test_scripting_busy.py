"""Busy scripts (busy-reply-threshold, alias lua-time-limit): once a script runs past the
threshold, other clients get -BUSY (on every thread) except for the commands that may stop it;
SCRIPT KILL stops a script that has not written (its caller gets Redis' error), and answers
UNKILLABLE for one that has; SHUTDOWN NOSAVE still works. Also run with
SHARDIS_TEST_TARGET=redis."""

import threading
import time

import pytest
import redis

from conftest import wait_for

BUSY = "BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE."
BUSY_FUNCTION = ("BUSY Redis is busy running a script. You can only call FUNCTION KILL or "
                 "SHUTDOWN NOSAVE.")


def run_in_thread(fn):
    result = {}

    def target():
        try:
            result["value"] = fn()
        except Exception as e:  # noqa: BLE001: the test inspects it
            result["error"] = e

    t = threading.Thread(target=target)
    t.start()
    return t, result


def wait_busy(c, text=BUSY):
    def busy():
        try:
            c.ping()
            return False
        except redis.ResponseError as e:
            assert str(e) == text
            return True
    wait_for(busy, 10)


def test_threshold_is_configurable(r):
    assert r.config_get("busy-reply-threshold") == {"busy-reply-threshold": "5000"}
    r.config_set("lua-time-limit", 1234)
    assert r.config_get("busy-reply-threshold") == {"busy-reply-threshold": "1234"}
    r.config_set("busy-reply-threshold", 5000)
    assert r.config_get("lua-time-limit") == {"lua-time-limit": "5000"}


def test_script_kill_stops_a_busy_script(server, r):
    r.config_set("busy-reply-threshold", 100)
    try:
        with pytest.raises(redis.ResponseError, match="NOTBUSY"):
            r.script_kill()
        runner = server.client()
        t, result = run_in_thread(
            lambda: runner.eval("local i = 0 while true do i = i + 1 end", 0))
        others = [server.client() for _ in range(6)]  # on every thread
        for c in others:
            wait_busy(c)
            with pytest.raises(redis.ResponseError, match="^BUSY"):
                c.set("k", "v")
        with pytest.raises(redis.ResponseError) as e:
            r.execute_command("FUNCTION", "STATS")
        assert str(e.value) == BUSY
        assert r.script_kill() is True
        t.join(10)
        assert not t.is_alive()
        err = str(result["error"])
        assert err.startswith("Script killed by user with SCRIPT KILL... script: ") \
            and err.endswith(", on @user_script:1."), err
        for c in others:
            assert c.ping() is True
            c.close()
        assert r.get("k") is None
        runner.close()
    finally:
        r.config_set("busy-reply-threshold", 5000)


def test_busy_script_that_wrote_is_unkillable(server_factory):
    srv = server_factory(threads=2, args=("--busy_reply_threshold=100",),
                         redis_args=("--busy-reply-threshold", "100"))
    r = srv.client()
    runner = srv.client()
    t, result = run_in_thread(
        lambda: runner.eval("redis.call('set', KEYS[1], 'x') while true do end", 1, "w"))
    wait_busy(r)
    with pytest.raises(redis.ResponseError, match="^UNKILLABLE Sorry the script already executed"):
        r.script_kill()
    # Only SHUTDOWN NOSAVE ends it.
    try:
        r.shutdown(nosave=True)
    except redis.ConnectionError:
        pass
    wait_for(lambda: not srv.alive(), 10)
    t.join(10)
    assert "error" in result


def test_a_slow_script_that_ends_frees_the_server(server, r):
    r.config_set("busy-reply-threshold", 50)
    try:
        runner = server.client()
        t, result = run_in_thread(lambda: runner.eval(
            "local t = redis.call('time') local start = t[1] * 1000000 + t[2] "
            "local n = 0 while true do n = n + 1 if n % 100000 == 0 then "
            "t = redis.call('time') if t[1] * 1000000 + t[2] - start > 300000 then break end end "
            "end redis.call('set', KEYS[1], n) return 1", 1, "slow"))
        t.join(10)
        assert result.get("value") == 1, result
        assert int(r.get("slow")) > 0
        assert r.ping() is True
        runner.close()
    finally:
        r.config_set("busy-reply-threshold", 5000)


def test_function_kill_stops_a_busy_function(server, r):
    r.function_load("#!lua name=spin\n"
                    "redis.register_function('spin', function() while true do end end)",
                    replace=True)
    r.config_set("busy-reply-threshold", 100)
    try:
        runner = server.client()
        t, result = run_in_thread(lambda: runner.fcall("spin", 0))
        other = server.client()
        wait_busy(other, BUSY_FUNCTION)
        with pytest.raises(redis.ResponseError) as e:
            r.script_kill()
        assert str(e.value) == BUSY_FUNCTION
        stats = r.execute_command("FUNCTION", "STATS")
        running = dict(zip(stats[1][::2], stats[1][1::2]))
        assert running[b"name"] == b"spin"
        assert [a.lower() for a in running[b"command"]] == [b"fcall", b"spin", b"0"]
        assert running[b"duration_ms"] >= 100
        assert r.execute_command("FUNCTION", "KILL") == b"OK"
        t.join(10)
        assert "Script killed by user with SCRIPT KILL" in str(result["error"])
        assert other.ping() is True
        with pytest.raises(redis.ResponseError, match="NOTBUSY"):
            r.execute_command("FUNCTION", "KILL")
        assert r.execute_command("FUNCTION", "STATS")[1] is None
        other.close()
        runner.close()
    finally:
        r.config_set("busy-reply-threshold", 5000)
        r.function_flush()
