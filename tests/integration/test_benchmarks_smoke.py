"""Smoke tests of the benchmarks: `QUICK=1 bash benchmarks/run.sh` runs to the end (about a
minute once built; its "10M" fill is 200,000 keys) and its report has every row, each with a
positive figure; so does `benchmarks/defrag_bench.sh` at a tiny scale (under a minute).

They check that the scripts still execute, not what they measure (figures this short mean
nothing).
"""

from __future__ import annotations

import math
import os
import subprocess

import pytest

from conftest import REPO, SHARDIS_BIN

WORKLOADS = ["SET P1", "GET P1", "SET P16", "GET P16", "1:10 SET:GET P1", "GET 16 KiB P1"]
FIGURES = ["throughput (ops/s)", "ops per server CPU-second", "p50 latency (µs)",
           "p99 latency (µs)", "p99.9 latency (µs)", "server CPU utilisation",
           "load generator CPU utilisation"]
THREADS_WORKLOADS = ["SET P1", "GET P1", "SET P16", "GET P16"]
FILL_ROWS = ["max latency (ms)", "p99.99 latency (ms)", "throughput (ops/s)",
             "control, no growth: max latency (ms)"]
MEMORY_ROWS = ["keys", "used_memory (MiB)", "used_memory per key (bytes)", "RSS (MiB)",
               "RSS per key (bytes)"]
TARGETS = ["ops per server CPU-s, SET P1", "ops per server CPU-s, GET P1",
           "throughput, SET P16", "ops per server CPU-s, SET P16",
           "throughput, GET P16", "ops per server CPU-s, GET P16",
           "ops per server CPU-s, GET 16 KiB P1", "RSS per key",
           "--threads 2 / --threads 1, SET P1", "--threads 2 / --threads 1, GET P1",
           "--threads 2 / --threads 1, SET P16", "--threads 2 / --threads 1, GET P16",
           "max single-SET latency",
           "--threads 2, Redis' order / relaxed order, SET P16",
           "--threads 2, Redis' order / relaxed order, GET P16"] + [
           f"ops per server CPU-s, memcached {w}"
           for w in ("set P1", "get P1", "set P16", "get P16", "get of 10 keys P1")]
MC_WORKLOADS = ["memcached set P1", "memcached get P1", "memcached set P16", "memcached get P16",
                "memcached get of 10 keys P1"]
ORDER_WORKLOADS = ["SET P16", "GET P16"]


def sections(report: str) -> dict[str, list[list[str]]]:
    """'## heading' -> the rows of the markdown table under it (header and rule skipped)."""
    out: dict[str, list[list[str]]] = {}
    current = None
    for line in report.splitlines():
        if line.startswith("## "):
            current = line[3:].strip()
            out[current] = []
        elif current and line.startswith("|"):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            is_rule = all(c and set(c) <= set("-: ") for c in cells)
            if not is_rule and cells[0] not in ("workload", "figure", "target"):
                out[current].append(cells)
    return out


def section(secs, prefix):
    matches = [rows for name, rows in secs.items() if name.startswith(prefix)]
    assert matches, f"no section '{prefix}...' in the report"
    return matches[0]


def number(cell: str) -> float:
    """A figure cell as a float: '1,234.5' -> 1234.5, '1.25x' -> 1.25."""
    text = cell.replace(",", "").removesuffix("x").removesuffix(" ms").strip()
    try:
        return float(text)
    except ValueError:
        pytest.fail(f"not a number: {cell!r}")


def check_positive(cells: list[str], what: str):
    for cell in cells:
        if cell == "":
            continue  # the ratio column of utilisation rows
        value = number(cell)
        assert not math.isnan(value) and value > 0, f"{what}: figure {cell!r} is not positive"


def figure_rows(rows):
    """(workload, figure) -> the figure cells, filling in the workload of continuation rows."""
    out = {}
    workload = None
    for cells in rows:
        workload = cells[0] or workload
        out[(workload, cells[1])] = cells[2:]
    return out


@pytest.mark.shardis_only
def test_quick_run_reports_every_figure(tmp_path):
    report_path = tmp_path / "report.md"
    env = dict(os.environ, QUICK="1", SKIP_FILL10M="0", ROUNDS="1", REPORT=str(report_path),
               SHARDIS_BIN=SHARDIS_BIN)
    proc = subprocess.run(["bash", str(REPO / "benchmarks" / "run.sh")], cwd=REPO, env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=300)
    assert proc.returncode == 0, f"run.sh failed:\n{proc.stderr[-4000:]}"
    report = report_path.read_text()
    assert proc.stdout.strip() == report.strip(), "the report on stdout and in REPORT differ"

    secs = sections(report)

    targets = section(secs, "Targets")
    names = [cells[0] for cells in targets]
    for target in TARGETS:
        assert any(target in name for name in names), f"target row {target!r} missing"
    for name, _, measured, result in targets:
        assert result in ("met", "MISSED", "not run"), (name, result)
        if result != "not run":
            check_positive([measured.split()[0]], name)

    side = figure_rows(section(secs, "shardis --threads 1 vs redis-server"))
    for workload in WORKLOADS:
        for figure in FIGURES:
            assert (workload, figure) in side, f"row {workload} / {figure} missing"
            check_positive(side[(workload, figure)], f"{workload} / {figure}")

    threads = figure_rows(section(secs, "shardis --threads 2 vs --threads 1"))
    for workload in THREADS_WORKLOADS:
        for figure in FIGURES[:5]:
            assert (workload, figure) in threads, f"threads row {workload} / {figure} missing"
            check_positive(threads[(workload, figure)], f"threads {workload} / {figure}")

    memory = {cells[0]: cells[1:] for cells in section(secs, "Memory after filling")}
    for row in MEMORY_ROWS:
        assert row in memory, f"memory row {row!r} missing"
        check_positive(memory[row], row)

    order = figure_rows(section(secs, "Pipeline order"))
    for workload in ORDER_WORKLOADS:
        for figure in FIGURES[:5]:
            assert (workload, figure) in order, f"order row {workload} / {figure} missing"
            check_positive(order[(workload, figure)], f"order {workload} / {figure}")

    mc = figure_rows(section(secs, "memcached text protocol"))
    for workload in MC_WORKLOADS:
        for figure in FIGURES:
            assert (workload, figure) in mc, f"memcached row {workload} / {figure} missing"
            check_positive(mc[(workload, figure)], f"memcached {workload} / {figure}")

    cost = section(secs, "Load generator cost")
    assert len(cost) == (len(WORKLOADS) * 2 + len(THREADS_WORKLOADS) + len(MC_WORKLOADS) * 2), cost
    for cells in cost:  # CPU per op must be positive; the other load on a CPU may be 0
        check_positive(cells[2:4], f"load generator cost {cells[:2]}")

    assert "## Commands" in report and "loadgen" in report

    fill = {cells[0]: cells[1:] for cells in section(secs, "Fill of")}
    for row in FILL_ROWS:
        assert row in fill, f"fill row {row!r} missing"
        check_positive(fill[row][:2], row)
    loop = fill["in the server: longest event-loop cycle (ms)"]
    assert loop[0] == "n/a", "redis-server 7.0 has no event-loop figure"
    check_positive([loop[1]], "shardis' longest event-loop cycle")


DEFRAG_SERVERS = ["redis-server 7.0", "shardis --threads 1", "shardis --threads 2"]
DEFRAG_MEMORY_ROWS = ["used_memory after the churn (MB)", "RSS after the churn (MB)",
                      "RSS / used_memory after the churn", "RSS at the end (MB)",
                      "RSS / used_memory reached"]
DEFRAG_LOAD_ROWS = ["SET P16 ops/s, off", "GET P16 ops/s, off", "SET P16 off / redis-server's",
                    "GET P16 off / redis-server's"]


def server_table(secs, prefix) -> dict[str, dict[str, str]]:
    """A table of one column per server as row name -> server -> cell."""
    return {cells[0]: dict(zip(DEFRAG_SERVERS, cells[1:])) for cells in section(secs, prefix)}


@pytest.mark.shardis_only
def test_defrag_bench_tiny_run_reports_every_figure(tmp_path):
    report_path = tmp_path / "report.md"
    # Walks that start at this scale (ignore-bytes below what 20,000 keys fragment), so that the
    # script's walking paths run too.
    env = dict(os.environ, SCALE="20000", MAX_WAIT="6", SETTLE="2", SLICE="0.3", ROUNDS="1",
               DEFRAG_SETTINGS="active-defrag-ignore-bytes 1 active-defrag-threshold-lower 5",
               REPORT=str(report_path), SHARDIS_BIN=SHARDIS_BIN)
    proc = subprocess.run(["bash", str(REPO / "benchmarks" / "defrag_bench.sh")], cwd=REPO,
                          env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          timeout=300)
    assert proc.returncode == 0, f"defrag_bench.sh failed:\n{proc.stderr[-4000:]}"
    report = report_path.read_text()
    assert proc.stdout.strip() == report.strip(), "the report on stdout and in REPORT differ"
    secs = sections(report)

    memory = server_table(secs, "Memory after the churn")
    for shardis in DEFRAG_SERVERS[1:]:
        assert memory["activedefrag"][shardis] == "yes", memory["activedefrag"]
    for row in DEFRAG_MEMORY_ROWS:
        assert row in memory, f"memory row {row!r} missing"
        check_positive(list(memory[row].values()), row)

    timeline = [cells for cells in section(secs, "RSS / used_memory over time")
                if cells[0].isdigit()]  # the header row is "t (s)"
    assert timeline and timeline[0][0] == "0", timeline
    check_positive([cell.split()[0] for cell in timeline[0][1:]], "the ratio at t = 0")

    load = server_table(secs, "While defragmentation runs")
    for row in DEFRAG_LOAD_ROWS:
        assert row in load, f"load row {row!r} missing"
        check_positive([cell.split()[0] for cell in load[row].values()], row)

    probe = server_table(secs, "The longest single command")
    assert "longest GET during the walk (ms; target < 1)" in probe
    loop = probe["the same, up to the end of the run (ms)"]
    check_positive([loop[s] for s in DEFRAG_SERVERS[1:]], "shardis' longest event-loop cycle")
    check_positive([c.replace(",", "") for c in probe["probe GETs in all"].values()], "probe GETs")

    assert "## Commands" in report and "redis-cli -p PORT --pipe" in report
