"""The stock tools work against the server: redis-cli (plain, --pipe, -r) and redis-benchmark."""

import csv
import io
import shutil
import subprocess

import pytest

from conftest import RespConn

pytestmark = pytest.mark.skipif(not shutil.which("redis-cli") or not shutil.which("redis-benchmark"),
                                reason="redis-tools is not installed")


def run(args, input_bytes=None, timeout=120):
    proc = subprocess.run(args, input=input_bytes, stdin=None if input_bytes else subprocess.DEVNULL,
                          capture_output=True, timeout=timeout)
    return proc.returncode, proc.stdout.decode(errors="replace"), proc.stderr.decode(errors="replace")


def cli(port, *args, input_bytes=None):
    return run(["redis-cli", "-h", "127.0.0.1", "-p", str(port), *args], input_bytes)


def test_redis_cli_set_get(port, r):
    assert cli(port, "set", "a", "b") == (0, "OK\n", "")
    assert cli(port, "get", "a") == (0, "b\n", "")
    assert cli(port, "--no-raw", "get", "missing") == (0, "(nil)\n", "")
    assert cli(port, "--no-raw", "incr", "n") == (0, "(integer) 1\n", "")
    assert cli(port, "del", "a", "n") == (0, "2\n", "")
    assert cli(port, "ping") == (0, "PONG\n", "")
    rc, out, _ = cli(port, "--no-raw", "foo", "x")
    assert rc == 0 and "(error) ERR unknown command 'foo', with args beginning with: 'x'" in out


def test_redis_cli_info_and_dbsize(port, r):
    r.set(b"k", b"v")
    rc, out, _ = cli(port, "info", "server")
    assert rc == 0 and "redis_version:" in out
    assert cli(port, "dbsize") == (0, "1\n", "")
    assert cli(port, "-n", "3", "set", "x", "1") == (0, "OK\n", "")
    r.execute_command("SELECT", 3)
    assert r.get(b"x") == b"1"


def test_redis_cli_repeat(port, r):
    rc, out, err = cli(port, "-r", "100", "incr", "x")
    assert rc == 0, err
    assert out.split() == [str(i) for i in range(1, 101)]
    assert r.get(b"x") == b"100"


def test_redis_cli_pipe(port, r):
    n = 5000
    commands = [RespConn.encode("SET", f"pipe:{i}", f"value:{i}") for i in range(n)]
    commands += [RespConn.encode("INCR", "pipe:counter") for _ in range(1000)]
    rc, out, err = cli(port, "--pipe", input_bytes=b"".join(commands))
    assert rc == 0, out + err
    assert f"errors: 0, replies: {n + 1000}" in out
    assert r.get(b"pipe:4999") == b"value:4999"
    assert r.get(b"pipe:counter") == b"1000"
    assert r.dbsize() == n + 1


def test_redis_cli_pipe_reports_errors(port, r):
    r.set(b"s", b"text")
    data = RespConn.encode("SET", "a", "1") + RespConn.encode("INCR", "s") + \
        RespConn.encode("GET", "a")
    rc, out, err = cli(port, "--pipe", input_bytes=data)
    assert "errors: 1, replies: 3" in out


def test_redis_benchmark_quick(port, r):
    rc, out, err = run(["redis-benchmark", "-h", "127.0.0.1", "-p", str(port),
                        "-t", "set,get", "-n", "20000", "-q"])
    text = out + err
    assert rc == 0, text
    assert "WARNING" not in text and "Error" not in text and "ERR" not in text, text
    assert "SET:" in text and "GET:" in text and "requests per second" in text


def test_redis_benchmark_csv_pipelined(port, r):
    """The shape benchmarks/redis_benchmark.sh uses, on a small -n."""
    rc, out, err = run(["redis-benchmark", "-h", "127.0.0.1", "-p", str(port),
                        "-t", "set,get", "-n", "20000", "-r", "100000", "-d", "128",
                        "-c", "50", "-P", "16", "--csv"])
    assert rc == 0, out + err
    assert "WARNING" not in err and "Error" not in out + err, out + err
    rows = {row["test"]: row for row in csv.DictReader(io.StringIO(out))}
    assert set(rows) == {"SET", "GET"}
    assert all(float(row["rps"]) > 0 for row in rows.values())
    # -r spreads keys as key:000000012345 with 128-byte values.
    keys = r.keys(b"key:*")
    assert len(keys) > 1000
    assert r.strlen(keys[0]) == 128
