#!/usr/bin/env python3
"""The client half of benchmarks/defrag_bench.sh (issue 20): writes the churn workload, follows
a server's memory while it defragments (with a latency probe), and writes the report.

  defrag_probe.py churn [--scale N] [--seed S]      # RESP on stdout, for `redis-cli --pipe`
  defrag_probe.py walk PORT --rows FILE [--activedefrag] [--empty-rss BYTES] [--max S] [--settle S]
  defrag_probe.py report WALKS SLICES META

churn:  the issue's workload, SCALE keys in its first fill (1,000,000 there): SET a:0..N-1 with
        100-byte values, DEL every other one, SET N/2 keys b:* of 300 bytes, DEL a random half
        of what lives (seeded: the same keys on every server), SET 0.3 N keys c:* of 60 bytes.
walk:   with --activedefrag, first sends CONFIG SET activedefrag yes (a refusal is reported, not
        fatal: Debian's redis-server refuses it). Then, from that moment (t = 0), once a second
        reads INFO (used_memory, used_memory_rss, active_defrag_running, active_defrag_hits) and
        in between sends GET of one 100-byte key back to back on a second connection (pipeline
        1), timing each reply: the longest single command of each second. Stops once settled
        (SETTLE seconds in a row with RSS within 1% and no walk running) or after MAX seconds.
        Writes one row a second to ROWS and prints a key=value summary line.
report: the markdown report from the summary lines (WALKS), the load slices (SLICES, written by
        the script) and META (key=value lines: commands, settings).
"""
import argparse
import random
import socket
import statistics
import sys
import time

import redis

PROBE_KEY = b"defrag:probe"
PROBE_VALUE = b"p" * 100
TARGET_RATIO = 1.25


def emit(**fields):
    print(" ".join(f"{k}={v}" for k, v in fields.items()), flush=True)


def parse_line(line):
    return dict(kv.split("=", 1) for kv in line.split() if "=" in kv)


# --- churn -----------------------------------------------------------------------------------

def resp(*args):
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        out.append(b"$%d\r\n%s\r\n" % (len(a), a))
    return b"".join(out)


def cmd_churn(scale, seed):
    out = sys.stdout.buffer
    rng = random.Random(seed)
    batch = []

    def put(cmd):
        batch.append(cmd)
        if len(batch) >= 10000:
            out.write(b"".join(batch))
            batch.clear()

    def fill(prefix, count, size):
        value = (prefix * size)[:size]
        for i in range(count):
            put(resp(b"SET", b"%s:%d" % (prefix, i), value))
        return [b"%s:%d" % (prefix, i) for i in range(count)]

    first = fill(b"a", scale, 100)
    for k in first[::2]:
        put(resp(b"DEL", k))
    live = first[1::2] + fill(b"b", scale // 2, 300)
    for k in rng.sample(live, len(live) // 2):
        put(resp(b"DEL", k))
    fill(b"c", scale * 3 // 10, 60)
    out.write(b"".join(batch))
    out.flush()


# --- walk ------------------------------------------------------------------------------------

class Probe:
    """One connection sending GET PROBE_KEY, one at a time; max and count per interval."""

    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.request = resp(b"GET", PROBE_KEY)
        self.reply_len = len(b"$%d\r\n" % len(PROBE_VALUE)) + len(PROBE_VALUE) + 2
        self.reset()

    def reset(self):
        self.count, self.max_ns, self.over_1ms = 0, 0, 0

    def once(self):
        t0 = time.perf_counter_ns()
        self.sock.sendall(self.request)
        got = 0
        while got < self.reply_len:
            chunk = self.sock.recv(4096)
            if not chunk:
                sys.exit("probe: connection closed")
            got += len(chunk)
        ns = time.perf_counter_ns() - t0
        self.count += 1
        self.max_ns = max(self.max_ns, ns)
        self.over_1ms += ns > 1_000_000


def settled(rows, settle):
    last = rows[-settle:]
    if len(rows) < settle + 1:
        return False
    rss = [r["rss"] for r in last]
    return max(rss) <= min(rss) * 1.01 and all(r["running"] == 0 for r in last)


def cmd_walk(port, rows_path, activedefrag, empty_rss, max_s, settle):
    r = redis.Redis(host="127.0.0.1", port=port, socket_timeout=60)
    r.set(PROBE_KEY, PROBE_VALUE)
    probe = Probe(port)
    defrag = "off"
    if activedefrag:
        try:
            r.config_set("activedefrag", "yes")
            defrag = "yes"
        except redis.ResponseError as e:
            print(f"CONFIG SET activedefrag yes refused: {e}", file=sys.stderr)
            defrag = "refused"
    # INFO debug's eventloop_duration_max (shardis, Valkey; not redis-server 7.0): the longest
    # pass of the server's event loop, the server's own view of a stall (without the probe's
    # scheduling). CONFIG RESETSTAT starts it (and the defrag counters) at t = 0.
    r.config_resetstat()
    t0 = time.monotonic()
    rows = []
    next_sample = t0
    while True:
        if time.monotonic() >= next_sample:
            info = r.info("all")
            row = dict(t=round(time.monotonic() - t0, 1), rss=info["used_memory_rss"],
                       used=info["used_memory"], running=int(info.get("active_defrag_running", 0)),
                       hits=int(info.get("active_defrag_hits", 0)),
                       loop_max_us=int(r.info("debug").get("eventloop_duration_max", -1)),
                       probes=probe.count,
                       probe_max_us=probe.max_ns // 1000, probe_over_1ms=probe.over_1ms)
            rows.append(row)
            probe.reset()
            if settled(rows, settle) or row["t"] >= max_s:
                break
            next_sample += 1.0
        probe.once()
    with open(rows_path, "w") as f:
        for row in rows:
            f.write(" ".join(f"{k}={v}" for k, v in row.items()) + "\n")
    # The walk lasts until the last second in which one ran or moved something; the seconds
    # after it are the control (same probe, same server, nothing walking).
    walk_end = 0
    for i in range(1, len(rows)):
        if rows[i]["running"] or rows[i - 1]["running"] or rows[i]["hits"] > rows[i - 1]["hits"]:
            walk_end = i
    during = [row["probe_max_us"] for row in rows[1:walk_end + 1]]
    after = [row["probe_max_us"] for row in rows[walk_end + 1:]]
    first, last = rows[0], rows[-1]
    reached = next((row["t"] for row in rows if row["rss"] <= TARGET_RATIO * row["used"]), None)
    emit(activedefrag=defrag, ratio_start=f"{first['rss'] / first['used']:.2f}",
         ratio_end=f"{last['rss'] / last['used']:.2f}",
         data_ratio_start=f"{(first['rss'] - empty_rss) / first['used']:.2f}",
         data_ratio_end=f"{(last['rss'] - empty_rss) / last['used']:.2f}",
         rss_start=first["rss"], rss_end=last["rss"], used_start=first["used"],
         used_end=last["used"], empty_rss=empty_rss,
         t_to_target="never" if reached is None else reached,
         settled="yes" if settled(rows, settle) else "no", t_end=last["t"],
         walk_s=rows[walk_end]["t"] if walk_end else 0, hits=last["hits"],
         probes=sum(row["probes"] for row in rows),
         loop_max_walk_us=rows[walk_end]["loop_max_us"] if walk_end else "n/a",
         loop_max_us=last["loop_max_us"],
         probe_max_walk_us=max(during) if during else "n/a",
         probe_max_idle_us=max(after) if after else "n/a",
         probes_walk=sum(row["probes"] for row in rows[1:walk_end + 1]),
         probe_over_1ms_walk=sum(row["probe_over_1ms"] for row in rows[1:walk_end + 1]),
         probes_idle=sum(row["probes"] for row in rows[walk_end + 1:]),
         probe_over_1ms_idle=sum(row["probe_over_1ms"] for row in rows[walk_end + 1:]),
         rows=rows_path)


# --- report ----------------------------------------------------------------------------------

NAMES = {"redis": "redis-server 7.0", "shardis1": "shardis --threads 1",
         "shardis2": "shardis --threads 2", "valkey": "Valkey"}
TIMELINE = [0, 1, 2, 5, 10, 20, 30, 45, 60, 90]


def mb(n):
    return f"{int(n) / 1e6:,.0f}"


def load_rows(path):
    with open(path) as f:
        return [{k: float(v) for k, v in parse_line(line).items()} for line in f if line.strip()]


def classify(s):
    """A load slice: 'walk' when a walk ran at both ends or moved values during it (shardis
    starts the next walk up to a tick after one ends, so a slice may end between two walks),
    'on' when none ran and nothing moved (activedefrag on, settled), 'off' with activedefrag
    off; 'mixed' slices (a walk running at one end, nothing moved) are left out."""
    if s["defrag"] == "off":
        return "off"
    run0, run1 = int(s["run0"]), int(s["run1"])
    if (run0 and run1) or s["hits1"] > s["hits0"]:
        return "walk"
    if not run0 and not run1:
        return "on"
    return "mixed"


def cmd_report(walks_path, slices_path, meta_path):
    walks = {}
    for line in open(walks_path):
        f = parse_line(line)
        walks[f["server"]] = f
    slices = [parse_line(line) for line in open(slices_path) if line.strip()]
    meta = [line.rstrip("\n") for line in open(meta_path)]
    m = dict(line.split("=", 1) for line in meta if "=" in line and not line.startswith("cmd "))
    servers = [s for s in NAMES if s in walks]

    def med(server, kind, load, field="ops_per_s"):
        vals = [float(s[field]) for s in slices
                if s["server"] == server and s["load"] == load and classify(s) == kind]
        return (statistics.median(vals), len(vals)) if vals else (None, 0)

    def top(server, kind, field="max_us"):
        vals = [float(s[field]) for s in slices if s["server"] == server and classify(s) == kind]
        return max(vals) if vals else None

    print(f"# Active defragmentation (issue 20): shardis {m['rev']} against redis-server"
          + (" and Valkey" if "valkey" in walks else "") + "\n")
    print(f"Churn: {int(m['scale']):,} keys of 100 B, every other deleted, {int(m['scale']) // 2:,}"
          f" of 300 B, a random half of what lives deleted, {int(m['scale']) * 3 // 10:,} of 60 B"
          f" (`redis-cli --pipe`). Then `CONFIG SET activedefrag yes` (every other "
          f"`active-defrag-*` setting at Redis' default) and INFO once a second until settled "
          f"({m['settle']} s with RSS within 1% and no walk running) or {m['max_wait']} s. "
          f"Servers pinned to CPU {m['server_cpu']}, clients to CPU {m['client_cpu']}. "
          f"Load average at the start: {m['loadavg_start']}, at the end: {m['loadavg_end']}.\n")
    for s in servers:
        if walks[s]["activedefrag"] == "refused":
            print(f"- {NAMES[s]} refused `CONFIG SET activedefrag yes` ({m.get(s + '_refusal', '')}):"
                  " it ran without.")
    print("\n## Memory after the churn\n")
    print("| figure | " + " | ".join(NAMES[s] for s in servers) + " |")
    print("|---" * (len(servers) + 1) + "|")
    rows = [("activedefrag", lambda w: w["activedefrag"]),
            ("used_memory after the churn (MB)", lambda w: mb(w["used_start"])),
            ("RSS after the churn (MB)", lambda w: mb(w["rss_start"])),
            ("RSS / used_memory after the churn", lambda w: w["ratio_start"]),
            ("RSS at the end (MB)", lambda w: mb(w["rss_end"])),
            ("used_memory at the end (MB)", lambda w: mb(w["used_end"])),
            ("RSS / used_memory reached", lambda w: w["ratio_end"]),
            ("(RSS - empty server's RSS) / used_memory reached", lambda w: w["data_ratio_end"]),
            (f"seconds to reach {TARGET_RATIO} (target: within 60)",
             lambda w: w["t_to_target"]),
            ("settled (seconds)", lambda w: w["t_end"] if w["settled"] == "yes" else
             f"not within {w['t_end']}"),
            ("seconds with a walk running", lambda w: w["walk_s"]),
            ("active_defrag_hits", lambda w: f"{int(w['hits']):,}")]
    for name, get in rows:
        print(f"| {name} | " + " | ".join(str(get(walks[s])) for s in servers) + " |")

    print("\n## RSS / used_memory over time (seconds after activedefrag yes)\n")
    print("| t (s) | " + " | ".join(NAMES[s] for s in servers) + " |")
    print("|---" * (len(servers) + 1) + "|")
    series = {s: load_rows(walks[s]["rows"]) for s in servers}
    for t in TIMELINE:
        cells = []
        for s in servers:
            row = next((r for r in series[s] if r["t"] >= t), None)
            cells.append("" if row is None else
                         f"{row['rss'] / row['used']:.2f} ({mb(row['rss'])} MB)")
        if any(cells):
            print(f"| {t} | " + " | ".join(cells) + " |")

    print("\n## While defragmentation runs\n")
    print(f"GET and SET, pipeline 16, {m['connections']} connections, keys uniform over "
          f"{int(m['keyspace']):,} keys of 100 B written before the churn, in slices of "
          f"{m['slice']} s from `CONFIG SET activedefrag yes` on (a fresh server and churn, "
          "not the one above); a slice counts as *walking* when INFO's active_defrag_running is "
          "non-zero before and after it or active_defrag_hits moved during it, *on, settled* "
          "when it is zero at both ends and active_defrag_hits did not move, others are left "
          "out. Once settled, "
          f"{m['rounds']} rounds of a SET and a GET slice with activedefrag yes and the same "
          "with `activedefrag no` (*off*), in turn. Medians of the slices (their count in "
          "brackets).\n")
    print("| figure | " + " | ".join(NAMES[s] for s in servers) + " |")
    print("|---" * (len(servers) + 1) + "|")

    def fmt(v, n, spec="{:,.0f}"):
        return "n/a" if v is None else spec.format(v) + f" ({n})"

    def ratio(a, b, target=None):
        if a is None or b is None:
            return "n/a"
        met = "" if target is None else (" met" if a / b >= target else " not met")
        return f"{a / b:.2f}{met}"

    for load in ("set", "get"):
        name = load.upper()
        for kind, label in (("walk", "walking"), ("on", "on, settled"), ("off", "off")):
            print(f"| {name} P16 ops/s, {label} | " + " | ".join(
                fmt(*med(s, kind, load)) for s in servers) + " |")
        print(f"| {name} P16 walking / off (target ≥ 0.90) | " + " | ".join(
            ratio(med(s, "walk", load)[0], med(s, "off", load)[0], 0.9) for s in servers) + " |")
        print(f"| {name} P16 on, settled / off | " + " | ".join(
            ratio(med(s, "on", load)[0], med(s, "off", load)[0]) for s in servers) + " |")
        print(f"| {name} P16 off / redis-server's | " + " | ".join(
            ratio(med(s, "off", load)[0], med("redis", "off", load)[0]) for s in servers) + " |")
    for kind, label in (("walk", "walking"), ("on", "on, settled"), ("off", "off")):
        print(f"| longest request at P16 (ms), {label} | " + " | ".join(
            "n/a" if top(s, kind) is None else f"{top(s, kind) / 1000:.1f}" for s in servers)
            + " |")

    print("\n## The longest single command during the walk\n")
    print("A probe client (one connection, pipeline 1, on the clients' CPU, no other load) sends "
          "GET of one 100-byte key back to back from `activedefrag yes` on, during the memory "
          "run above, and times each reply (send to the end of the reply, in Python: its own "
          "overhead is in the figure). *During the walk*: up to the last second with a walk "
          "running; *control*: the seconds after it, same server, same probe. The server's "
          "own figure, INFO debug `eventloop_duration_max` after CONFIG RESETSTAT at t = 0 "
          "(shardis and Valkey; redis-server 7.0 has none), leaves the probe's own scheduling "
          "out, not the server's: it is wall time, so a thread the machine preempted counts "
          "the time it waited.\n")
    print("| figure | " + " | ".join(NAMES[s] for s in servers) + " |")
    print("|---" * (len(servers) + 1) + "|")

    def ms(v):
        return "n/a" if v == "n/a" else f"{int(v) / 1000:.2f}"

    print("| longest GET during the walk (ms; target < 1) | " + " | ".join(
        ms(walks[s]["probe_max_walk_us"]) for s in servers) + " |")
    print("| longest GET, control (ms) | " + " | ".join(
        ms(walks[s]["probe_max_idle_us"]) for s in servers) + " |")
    print("| the server's longest event-loop cycle during the walk (ms) | " + " | ".join(
        "n/a" if int(walks[s]["loop_max_us"]) < 0 else ms(walks[s]["loop_max_walk_us"])
        for s in servers) + " |")
    print("| the same, up to the end of the run (ms) | " + " | ".join(
        "n/a" if int(walks[s]["loop_max_us"]) < 0 else ms(walks[s]["loop_max_us"])
        for s in servers) + " |")

    def over(w, phase):
        n, slow = int(w["probes_" + phase]), int(w["probe_over_1ms_" + phase])
        return "n/a" if n == 0 else f"{slow:,} of {n:,} ({100 * slow / n:.2f}%)"

    print("| GETs over 1 ms during the walk | " + " | ".join(
        over(walks[s], "walk") for s in servers) + " |")
    print("| GETs over 1 ms, control | " + " | ".join(
        over(walks[s], "idle") for s in servers) + " |")
    print("| probe GETs in all | " + " | ".join(
        f"{int(walks[s]['probes']):,}" for s in servers) + " |")

    print("\n## Commands\n\n```")
    print("\n".join(line[4:] for line in meta if line.startswith("cmd ")))
    print("```\n\n## Raw lines\n\n```")
    print(open(walks_path).read().rstrip())
    print(open(slices_path).read().rstrip())
    for s in servers:
        print(f"# {s}: one row a second")
        print(open(walks[s]["rows"]).read().rstrip())
    print("```")


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("churn")
    c.add_argument("--scale", type=int, default=1_000_000)
    c.add_argument("--seed", type=int, default=20)
    w = sub.add_parser("walk")
    w.add_argument("port", type=int)
    w.add_argument("--rows", required=True)
    w.add_argument("--activedefrag", action="store_true")
    w.add_argument("--empty-rss", type=int, default=0)
    w.add_argument("--max", type=float, default=90)
    w.add_argument("--settle", type=int, default=10)
    r = sub.add_parser("report")
    r.add_argument("walks")
    r.add_argument("slices")
    r.add_argument("meta")
    a = p.parse_args()
    if a.cmd == "churn":
        cmd_churn(a.scale, a.seed)
    elif a.cmd == "walk":
        cmd_walk(a.port, a.rows, a.activedefrag, a.empty_rss, a.max, a.settle)
    else:
        cmd_report(a.walks, a.slices, a.meta)


if __name__ == "__main__":
    main()
