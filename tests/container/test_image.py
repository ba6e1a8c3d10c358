"""The real Docker image: built from the Dockerfile and run exactly as README.md's "Docker"
section says.

The commands come from that section's shell block (one command a line, `# ...` comments
dropped), so the README cannot drift from what is tested. Two things are changed before running
them: the host port (6379 -> a free port) and the container name (shardis-demo -> a name of its
own, and the volume shardis-data with one of its own), so that the test neither collides with a
server on the host nor with a user's container or data.

Needs a working docker (scripts/test.sh runs this file only when ../shared/tools/docker-local
is there, and passes the docker binary it prints as SHARDIS_DOCKER). Run by hand:
  SHARDIS_DOCKER=$(bash ../shared/tools/docker-local | tail -1) \
    /usr/bin/python3 -m pytest -q -s tests/container/test_image.py
"""

from __future__ import annotations

import json
import os
import pathlib
import re
import shlex
import socket
import subprocess
import time

import pytest
import redis

REPO = pathlib.Path(__file__).resolve().parents[2]
DOCKER = os.environ.get("SHARDIS_DOCKER", "docker")
SECCOMP_PROFILE = REPO / "deploy" / "kubernetes" / "seccomp" / "shardis-io-uring.json"
NAME = f"shardis-test-{os.getpid()}"
VOLUME = f"{NAME}-data"
BUILD_TIMEOUT = 1800  # a cold build compiles the whole server on a shared 2-core machine
GRACE_S = 10          # docker stop -t 10 in the README
MEMORY_LIMIT = 512 << 20


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


PORT = free_port()


def readme_commands() -> list[str]:
    """The commands of the first ```sh block under "## Docker" in README.md."""
    text = (REPO / "README.md").read_text()
    section = text.split("\n## Docker\n", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```sh\n(.*?)```", section, re.S).group(1)
    commands = []
    for line in block.splitlines():
        line = re.sub(r"\s+#\s.*$", "", line).strip()
        if line:
            commands.append(line)
    return commands


def command(prefix: str) -> list[str]:
    """The README command starting with `prefix`, localised, as argv (docker -> SHARDIS_DOCKER)."""
    matches = [c for c in readme_commands() if c.startswith(prefix)]
    assert len(matches) == 1, f"README's Docker block has {len(matches)} commands '{prefix}...'"
    line = matches[0].replace("shardis-demo", NAME).replace("shardis-data:", f"{VOLUME}:")
    line = line.replace("-p 6379:6379", f"-p {PORT}:6379").replace("-p 6379 ", f"-p {PORT} ")
    line = line.replace("127.0.0.1:6379", f"127.0.0.1:{PORT}")
    argv = shlex.split(line)
    if argv[0] == "docker":
        argv[0] = DOCKER
    return argv


def run(argv: list[str], timeout: float = 60, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=timeout,
                          check=check)


def docker(*args: str, **kw) -> subprocess.CompletedProcess:
    return run([DOCKER, *args], **kw)


def wait_until(predicate, timeout: float, interval: float = 0.2):
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(interval)


def logs() -> str:
    out = docker("logs", NAME, check=False)
    return out.stdout + out.stderr


@pytest.fixture(scope="module")
def image():
    argv = command("docker build")
    start = time.monotonic()
    out = run(argv, timeout=BUILD_TIMEOUT, check=False)
    took = time.monotonic() - start
    assert out.returncode == 0, f"{shlex.join(argv)} failed:\n{out.stdout[-4000:]}{out.stderr}"
    size = docker("image", "inspect", "-f", "{{.Size}}", "shardis").stdout.strip()
    print(f"\n[image built in {took:.1f} s, {int(size) / 1e6:.1f} MB]")
    return "shardis"


@pytest.fixture(scope="module")
def container(image):
    docker("rm", "-f", NAME, check=False)
    out = run(command("docker run"), check=False)
    assert out.returncode == 0, out.stderr
    yield NAME
    docker("rm", "-f", NAME, check=False)
    docker("volume", "rm", "-f", VOLUME, check=False)


def test_readme_commands_cover_the_contract():
    run_cmd = shlex.join(command("docker run"))
    for arg in ("--threads 2", "--memory 512m", "--cpus 1", f"-p {PORT}:6379"):
        assert arg in run_cmd
    assert "--pull=false" in command("docker build")
    assert "seccomp" not in run_cmd  # the default profile of Debian's docker.io allows io_uring


def test_answers_ping_from_the_host(container):
    argv = command("redis-cli")
    reply = wait_until(lambda: run(argv, check=False).stdout.strip() == "PONG", timeout=15)
    assert reply, f"no PONG through the published port; log:\n{logs()}"
    assert redis.Redis(port=PORT, socket_timeout=5).ping()


def test_runs_as_non_root_under_tini(container):
    uid = run(command("docker exec")).stdout.strip()
    assert uid == "999", uid
    top = docker("top", NAME, "-o", "uid,pid,args").stdout.splitlines()[1:]
    assert len(top) == 2, top  # tini and shardis, nothing else
    assert all(line.split()[0] == "999" for line in top), top
    assert any("/usr/bin/tini -- /usr/local/bin/shardis" in line for line in top), top
    assert docker("inspect", "-f", "{{.Config.WorkingDir}}", NAME).stdout.strip() == "/data"


def test_turns_healthy(container):
    argv = command("docker inspect -f '{{.State.Health.Status}}'")
    status = wait_until(lambda: run(argv).stdout.strip() == "healthy", timeout=30, interval=0.5)
    assert status, docker("inspect", "-f", "{{json .State.Health}}", NAME).stdout


def test_healthz_over_http_on_the_main_port(container):
    out = run(command("curl -fsS http://127.0.0.1:6379/healthz"), check=False)
    assert out.returncode == 0, f"GET /healthz: {out.stderr}"


def test_metrics_over_http_on_the_main_port(container):
    out = run(command("curl -fsS http://127.0.0.1:6379/metrics"), check=False)
    assert out.returncode == 0, f"GET /metrics: {out.stderr}"
    assert re.search(r"^shardis_\w+(\{[^}]*\})? \S+$", out.stdout, re.M), out.stdout[:2000]


def test_start_log_names_threads_and_maxmemory(container):
    out = run(command("docker logs"))
    text = out.stdout + out.stderr
    assert re.search(r"\b2 thread", text), text
    # maxmemory (unset) comes from the container's 512 MiB limit: 80%.
    assert re.search(r"maxmemory", text, re.I), text
    maxmemory = int(redis.Redis(port=PORT).config_get("maxmemory")["maxmemory"])
    assert abs(maxmemory - 0.8 * MEMORY_LIMIT) <= 1 << 20, maxmemory


def test_stop_drains_connections_and_exits_0(container):
    idle = redis.Redis(port=PORT, socket_timeout=15)
    idle.set("k", "v")
    raw = socket.create_connection(("127.0.0.1", PORT))
    raw.settimeout(15)
    raw.sendall(b"GET k\r\n")
    assert raw.recv(100) == b"$1\r\nv\r\n"
    start = time.monotonic()
    out = run(command("docker stop -t"), timeout=GRACE_S + 20)
    took = time.monotonic() - start
    assert out.stdout.strip() == NAME
    assert took < GRACE_S - 1, f"docker stop took {took:.1f} s: not drained before the grace end"
    assert raw.recv(100) == b"", "the server did not close an idle connection"
    state = json.loads(docker("inspect", "-f", "{{json .State}}", NAME).stdout)
    assert state["ExitCode"] == 0 and not state["OOMKilled"], state
    assert run(command("docker inspect -f '{{.State.ExitCode}}'")).stdout.strip() == "0"
    text = logs()
    assert "received Terminated, shutting down" in text and "bye" in text, text
    run(command("docker rm"))


def test_data_survives_a_restart_on_the_same_volume(image):
    """The README's run command with its volume: keys written, `docker stop` (SIGTERM: the default
    save schedule makes shardis save /data/dump.rdb first), a new container on the same volume
    loads them back, TTLs included."""
    name, volume = f"{NAME}-restart", f"{NAME}-restart-data"
    port = free_port()
    argv = [a.replace(NAME, name).replace(f"{VOLUME}:", f"{volume}:").replace(f"{PORT}:", f"{port}:")
            for a in command("docker run")]
    try:
        for round_ in range(2):
            docker("rm", "-f", name, check=False)
            assert run(argv, check=False).returncode == 0
            assert wait_until(lambda: _ping(port), timeout=15), docker("logs", name).stderr
            r = redis.Redis(port=port, socket_timeout=10)
            if round_ == 0:
                r.mset({f"k{i}": f"v{i}" for i in range(1000)})
                r.rpush("list", *range(100))
                r.set("ttl", "x", ex=3600)
                docker("stop", "-t", str(GRACE_S), name)
                assert docker("inspect", "-f", "{{.State.ExitCode}}", name).stdout.strip() == "0"
                assert "DB saved on disk" in docker("logs", name).stderr
            else:
                assert r.dbsize() == 1002
                assert r.get("k999") == b"v999" and r.llen("list") == 100
                assert 3500 < r.ttl("ttl") <= 3600
                assert "Done loading RDB, keys loaded: 1002" in docker("logs", name).stderr
    finally:
        docker("rm", "-f", name, check=False)
        docker("volume", "rm", "-f", volume, check=False)


def test_runs_like_the_kubernetes_pod(image, tmp_path):
    """The StatefulSet's settings with Docker: deploy/'s seccomp profile, read-only root file
    system, no capabilities, the pod's limits (2 CPUs, 1 GiB) and no --threads: threads come from
    the CPU quota. The same profile denying io_uring_setup stops shardis with the explanation (so
    the profile really is what decides)."""
    name = f"{NAME}-pod"
    port = free_port()
    pod_like = ["--read-only", "--cap-drop", "ALL", "--security-opt", "no-new-privileges",
                "--cpus", "2", "--memory", "1g"]
    try:
        docker("run", "-d", "--name", name, "-p", f"{port}:6379", *pod_like,
               "--security-opt", f"seccomp={SECCOMP_PROFILE}", image,
               "--shutdown_timeout_ms=20000")
        assert wait_until(lambda: _ping(port), timeout=15), docker("logs", name).stderr
        log = docker("logs", name).stderr
        assert re.search(r"\b2 thread", log), log
        denied = docker("exec", name, "bash", "-c", "unshare -U true", check=False)
        assert denied.returncode != 0, "the profile should deny new namespaces"
        docker("stop", "-t", "30", name)
        assert docker("inspect", "-f", "{{.State.ExitCode}}", name).stdout.strip() == "0"
    finally:
        docker("rm", "-f", name, check=False)
    profile = json.loads(SECCOMP_PROFILE.read_text())
    profile["syscalls"][0]["names"].append("io_uring_setup")
    deny = tmp_path / "deny-io-uring.json"
    deny.write_text(json.dumps(profile))
    out = docker("run", "--rm", "--security-opt", f"seccomp={deny}", image, "--threads", "1",
                 check=False)
    assert out.returncode == 1
    assert "io_uring_setup failed" in out.stderr and "seccomp" in out.stderr, out.stderr


def _ping(port: int) -> bool:
    try:
        return redis.Redis(port=port, socket_timeout=2).ping()
    except redis.RedisError:
        return False
