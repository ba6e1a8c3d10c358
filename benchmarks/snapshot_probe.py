#!/usr/bin/env python3
"""The timing half of benchmarks/snapshot_bench.sh: times SAVE, BGSAVE and the load at start of a
running server, and samples its RSS (with its forked children's) every 10 ms meanwhile. One
connection (redis-py), so that polling costs a round trip, not a process start. Prints one line
of key=value pairs, like the load generator.

  snapshot_probe.py save PORT
  snapshot_probe.py bgsave PORT PID [--before SECONDS] [--for SECONDS]
  snapshot_probe.py wait-loaded PORT STARTED_AT

save:        wall time of SAVE (save_s).
bgsave:      sends BGSAVE and polls INFO persistence every 10 ms until rdb_bgsave_in_progress:0
             (bgsave_s: wall time, as rdb_last_bgsave_time_sec has whole seconds only). Samples
             VmRSS of PID plus every process forked from it meanwhile (redis-server's saving
             child) every 10 ms from --before seconds (1) before the BGSAVE: rss_before_kb (the
             last sample before it), rss_peak_kb (the highest sum during it), child_rss_peak_kb. With --for,
             starts BGSAVEs back to back for SECONDS (the last one may end later: the probe waits
             for it) and reports how many ran (bgsaves) and the share of the window that a
             BGSAVE was running (covered).
wait-loaded: polls PING every 10 ms until it answers PONG (not -LOADING, not connection refused)
             and reports load_s, the time since STARTED_AT (a Unix time taken just before the
             server was started), then checks INFO persistence loading:0.
"""
import argparse
import os
import sys
import time

import redis

PERIOD = 0.010


def emit(**fields):
    print(" ".join(f"{k}={v}" for k, v in fields.items()), flush=True)


def rss_kb(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0  # gone (or a zombie: no VmRSS line)


def parent_of(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return int(f.read().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return -1


class RssSampler:
    """VmRSS of one process plus its children; children are looked for among the pids that did
    not exist when the sampler was made (cheap enough to scan every 10 ms)."""

    def __init__(self, pid):
        self.pid = pid
        self.old = set(os.listdir("/proc"))
        self.children = set()

    def sample(self):
        for name in set(os.listdir("/proc")) - self.old:
            if name.isdigit():
                if parent_of(int(name)) == self.pid:
                    self.children.add(int(name))
                self.old.add(name)  # look at each new pid once
        child = sum(rss_kb(c) for c in self.children)
        return rss_kb(self.pid) + child, child


def bgsave_in_progress(r):
    return int(r.info("persistence")["rdb_bgsave_in_progress"]) != 0


def cmd_save(port):
    r = redis.Redis(host="127.0.0.1", port=port, socket_timeout=None)
    t0 = time.monotonic()
    r.execute_command("SAVE")
    emit(save_s=f"{time.monotonic() - t0:.3f}")


def cmd_bgsave(port, pid, before_s, window):
    r = redis.Redis(host="127.0.0.1", port=port, socket_timeout=None)
    if bgsave_in_progress(r):
        sys.exit("a BGSAVE is already running")
    sampler = RssSampler(pid)
    before = 0
    end = time.monotonic() + before_s
    while True:
        before, _ = sampler.sample()
        if time.monotonic() >= end:
            break
        time.sleep(PERIOD)
    peak, child_peak = before, 0
    start = time.monotonic()
    first_s = None
    bgsaves, covered = 0, 0.0
    while True:
        t0 = time.monotonic()
        reply = r.execute_command("BGSAVE")  # redis-py turns the status reply into True
        if reply is not True and not str(reply).startswith("Background saving started"):
            sys.exit(f"BGSAVE answered {reply!r}")
        while True:
            total, child = sampler.sample()
            peak, child_peak = max(peak, total), max(child_peak, child)
            if not bgsave_in_progress(r):
                break
            time.sleep(PERIOD)
        t1 = time.monotonic()
        bgsaves += 1
        first_s = first_s if first_s is not None else t1 - t0
        if window is not None:
            covered += max(0.0, min(t1, start + window) - t0)
        status = r.info("persistence")["rdb_last_bgsave_status"]
        if status != "ok":
            sys.exit(f"rdb_last_bgsave_status:{status}")
        if window is None or t1 >= start + window:
            break
    fields = dict(bgsave_s=f"{first_s:.3f}", rss_before_kb=before, rss_peak_kb=peak,
                  child_rss_peak_kb=child_peak)
    if window is not None:
        fields.update(bgsaves=bgsaves, covered=f"{covered / window:.3f}")
    emit(**fields)


def cmd_wait_loaded(port, started_at, timeout_s=1800):
    while True:
        if time.time() - started_at > timeout_s:
            sys.exit(f"no PONG after {timeout_s} s")
        try:
            r = redis.Redis(host="127.0.0.1", port=port, socket_timeout=None)
            while True:
                try:
                    if r.ping():
                        break
                except redis.exceptions.BusyLoadingError:
                    if time.time() - started_at > timeout_s:
                        sys.exit(f"still loading after {timeout_s} s")
                time.sleep(PERIOD)
            break
        except redis.exceptions.ConnectionError:
            time.sleep(PERIOD)
    load_s = time.time() - started_at
    loading = r.info("persistence")["loading"]
    if int(loading) != 0:
        sys.exit(f"PONG while INFO says loading:{loading}")
    emit(load_s=f"{load_s:.3f}")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    sub.add_parser("save").add_argument("port", type=int)
    b = sub.add_parser("bgsave")
    b.add_argument("port", type=int)
    b.add_argument("pid", type=int)
    b.add_argument("--before", type=float, default=1.0)
    b.add_argument("--for", dest="window", type=float)
    w = sub.add_parser("wait-loaded")
    w.add_argument("port", type=int)
    w.add_argument("started_at", type=float)
    a = p.parse_args()
    if a.cmd == "save":
        cmd_save(a.port)
    elif a.cmd == "bgsave":
        cmd_bgsave(a.port, a.pid, a.before, a.window)
    else:
        cmd_wait_loaded(a.port, a.started_at)


if __name__ == "__main__":
    main()
