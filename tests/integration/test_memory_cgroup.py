"""maxmemory that protects the pod (issue 20, point 3; docs/memory.md, "maxmemory in a
container"): shardis started in a memory cgroup of 300 MB, with maxmemory derived from that limit
and allkeys-lru, is fed the issue's churn workload twice over and is never OOM-killed: eviction
counts the resident memory the allocator holds, not only used_memory.

The test makes the cgroup itself (cgroup v2 memory.max, or v1 memory.limit_in_bytes), which needs
root and a writable cgroup hierarchy; on a machine that cannot, it is skipped and says why.
Release-only (mimalloc's fragmentation is what it is about): files named test_memory_*.py run in
the "memory tests (release)" step of scripts/test.sh.
"""

import os
import pathlib
import random
import time

import pytest

from conftest import Server

LIMIT = 300 * 1024 * 1024
CGROUP_ROOT = pathlib.Path("/sys/fs/cgroup")


class MemoryCgroup:
    """A child memory cgroup with a limit, v2 or v1, removed on close."""

    def __init__(self, limit: int):
        name = f"shardis-test-{os.getpid()}-{time.monotonic_ns()}"
        if (CGROUP_ROOT / "cgroup.controllers").exists():
            self.v2 = True
            controllers = (CGROUP_ROOT / "cgroup.subtree_control").read_text().split()
            if "memory" not in controllers:
                (CGROUP_ROOT / "cgroup.subtree_control").write_text("+memory")
            self.path = CGROUP_ROOT / name
            self.path.mkdir()
            (self.path / "memory.max").write_text(str(limit))
            swap = self.path / "memory.swap.max"
            if swap.exists():
                swap.write_text("0")
        else:
            self.v2 = False
            self.path = CGROUP_ROOT / "memory" / name
            self.path.mkdir()
            (self.path / "memory.limit_in_bytes").write_text(str(limit))
            memsw = self.path / "memory.memsw.limit_in_bytes"
            if memsw.exists():
                memsw.write_text(str(limit))  # no swapping around the limit

    def procs_file(self) -> str:
        return str(self.path / "cgroup.procs")

    def oom_kills(self) -> int:
        name = "memory.events" if self.v2 else "memory.oom_control"
        for line in (self.path / name).read_text().splitlines():
            key, _, value = line.partition(" ")
            if key == "oom_kill":
                return int(value)
        return 0

    def peak(self) -> int | None:
        name = "memory.peak" if self.v2 else "memory.max_usage_in_bytes"
        f = self.path / name
        return int(f.read_text()) if f.exists() else None

    def close(self):
        for _ in range(50):
            try:
                self.path.rmdir()
                return
            except OSError:
                time.sleep(0.1)


class CgroupServer(Server):
    """shardis started inside a cgroup, with maxmemory left for it to derive from the limit."""

    def __init__(self, cgroup: MemoryCgroup, *args, **kwargs):
        super().__init__("shardis", *args, **kwargs)
        self.cgroup = cgroup

    def argv(self) -> list[str]:
        argv = [a for a in super().argv() if a != "--maxmemory=0"]
        # The shell joins the cgroup, then becomes shardis: it starts in the cgroup.
        return ["sh", "-c", 'echo $$ > "$0" && exec "$@"', self.cgroup.procs_file(), *argv]


@pytest.fixture
def cgroup():
    try:
        cg = MemoryCgroup(LIMIT)
    except OSError as e:
        pytest.skip(f"this machine cannot make a memory cgroup with a limit ({e})")
    yield cg
    cg.close()


# The churn workload, with a quarter of the keys and four times the value sizes (the same
# bytes in a quarter of the commands): fill 250,000 keys of 400 B, delete every other one, add
# 125,000 of 1,200 B, delete a random half of what lives, add 75,000 of 240 B.
KEYS = 250_000
BATCH = 1_000


def churn(client, round_: int, rng: random.Random) -> int:
    """One pass of the workload; returns the writes refused with OOM."""
    refused = 0
    live: list[str] = []

    def run(cmds):
        nonlocal refused
        for start in range(0, len(cmds), BATCH):
            pipe = client.pipeline(transaction=False)
            for cmd in cmds[start:start + BATCH]:
                pipe.execute_command(*cmd)
            for reply in pipe.execute(raise_on_error=False):
                if isinstance(reply, Exception):
                    assert str(reply).startswith("OOM"), reply
                    refused += 1

    def add(prefix, count, size):
        keys = [f"r{round_}:{prefix}:{i}" for i in range(count)]
        value = os.urandom(size // 2).hex()
        run([("SET", k, value) for k in keys])
        live.extend(keys)

    add("a", KEYS, 400)
    run([("DEL", k) for k in live[::2]])
    live[:] = live[1::2]
    add("b", KEYS // 2, 1_200)
    rng.shuffle(live)
    half = len(live) // 2
    run([("DEL", k) for k in live[:half]])
    live[:] = live[half:]
    add("c", KEYS * 3 // 10, 240)
    return refused


@pytest.mark.shardis_only
def test_churn_in_a_300mb_cgroup_is_not_oom_killed(cgroup, tmp_path):
    srv = CgroupServer(cgroup, tmp_path, threads=2,
                       args=["--maxmemory-policy=allkeys-lru"]).start()
    try:
        c = srv.client()
        info = c.info("memory")
        assert int(info["maxmemory"]) == LIMIT // 5 * 4  # derived: 80% of the limit
        rng = random.Random(20)
        refused = 0
        for round_ in range(2):
            refused += churn(c, round_, rng)
            assert srv.alive(), f"shardis died in round {round_}:\n{srv.tail()}"
        time.sleep(1)
        assert srv.alive(), srv.tail()
        info = c.info()
        assert int(info["evicted_keys"]) > 0
        assert c.ping()
        assert cgroup.oom_kills() == 0
        print(f"evicted {info['evicted_keys']}, refused {refused}, used_memory "
              f"{info['used_memory']}, rss {info['used_memory_rss']}, cgroup peak {cgroup.peak()}")
        c.close()
    finally:
        srv.stop_and_check()
