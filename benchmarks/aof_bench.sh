#!/usr/bin/env bash
# The append-only file (issue 15): SET throughput with no AOF, appendfsync everysec and
# appendfsync always, shardis --threads 1 and 2 against the Debian redis-server, in one run, on
# one disk (the work directory's).
#
#   bash benchmarks/aof_bench.sh                  # ROUNDS=3 x 9 servers x 2 loads of 5 s: ~6 min
#   ROUNDS=1 DURATION=2 bash benchmarks/aof_bench.sh   # a quick look
#
# Each round starts, one at a time and each in an empty directory of its own, redis-server and
# shardis --threads 1 and --threads 2 with no AOF, with --appendonly yes --appendfsync everysec
# and with --appendonly yes --appendfsync always (every other setting at its default: the
# automatic AOF rewrite stays on, as in Redis). The server is pinned to SERVER_CPU (taskset: its
# threads, io_uring's kernel workers and redis-server's background threads with it), the load
# generator to CLIENT_CPU. On each: SET pipeline 1, then SET pipeline 16, CONNECTIONS connections,
# DURATION seconds each, random keys of a KEYSPACE, VALUE_SIZE-byte values. fsyncs are counted
# over each load: shardis' INFO aof_fsyncs; redis-server's fdatasync and fsync calls (perf stat
# on the syscall tracepoints; without perf the column says n/a).
#
# Prints a markdown report to stdout (and REPORT when given): the medians over the rounds, the
# issue's targets (everysec >= 90% of the same server's throughput without AOF; always >= 1.5x
# redis-server's always) and every raw line. Progress goes to stderr.
#
# Environment (defaults in parentheses): ROUNDS (3), DURATION (5), CONNECTIONS (50),
#   KEYSPACE (1000000), VALUE_SIZE (128), WORKDIR (/tmp), SERVER_CPU, CLIENT_CPU (the first and
#   second CPU this shell may use), NICE (unset, see lib.sh), KEEP (0; 1 keeps the work
#   directory: logs, raw lines), SHARDIS_BIN (build/release/shardis,
#   built if not given), LOADGEN (build/release/benchmarks/loadgen), REDIS_SERVER, REPORT.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

PYTHON=/usr/bin/python3
ROUNDS=${ROUNDS:-3}
DURATION=${DURATION:-5}
CONNECTIONS=${CONNECTIONS:-50}
KEYSPACE=${KEYSPACE:-1000000}
VALUE_SIZE=${VALUE_SIZE:-128}
NICE=${NICE:-}
REDIS_SERVER=${REDIS_SERVER:-$(command -v redis-server || true)}

source benchmarks/lib.sh
require redis-cli taskset "$PYTHON" "$REDIS_SERVER"
pick_cpus
have_perf=0
if command -v perf >/dev/null; then have_perf=$(perf list 2>/dev/null | grep -c 'syscalls:sys_enter_fdatasync' || true); fi

bench_binaries aof loadgen
source benchmarks/servers.sh
cleanup() { stop_server; [ "${KEEP:-0}" = 1 ] || rm -rf "$workdir"; }
trap cleanup EXIT
apply_nice cleanup
started=$SECONDS

# start SERVER MODE: redis | shardis1 | shardis2, off | everysec | always.
start() {
  local server=$1 mode=$2 dir aof=()
  dir=$(mktemp -d "$workdir/run.XXXXXX")
  port=$(free_port)
  if [ "$server" = redis ]; then
    [ "$mode" = off ] && aof=(--appendonly no) || aof=(--appendonly yes --appendfsync "$mode")
    (cd "$dir" && exec taskset -c "$SERVER_CPU" "$REDIS_SERVER" --port "$port" --bind 127.0.0.1 \
      --save '' --dir "$dir" "${aof[@]}") >>"$workdir/redis.log" 2>&1 &
  else
    [ "$mode" = off ] || aof=(--appendonly --appendfsync "$mode")
    (cd "$dir" && exec taskset -c "$SERVER_CPU" "$workdir/shardis.bin" --port "$port" \
      --bind 127.0.0.1 --threads "${server#shardis}" --save= --logtostderr "${aof[@]}") \
      >>"$workdir/shardis.log" 2>&1 &
  fi
  server_pid=$!
  wait_for_pong && return 0
  echo "FAIL: $server $mode did not start" >&2
  exit 1
}

fsyncs_shardis() { redis-cli -p "$port" info persistence | tr -d '\r' | sed -n 's/^aof_fsyncs://p'; }

# measure SERVER MODE PIPELINE: one load; appends its line to $workdir/results.txt.
measure() {
  local server=$1 mode=$2 pipeline=$3 out before after fsyncs=n/a perf_out=
  if [ "$server" != redis ] && [ "$mode" != off ]; then before=$(fsyncs_shardis); fi
  if [ "$server" = redis ] && [ "$mode" != off ] && [ "$have_perf" -gt 0 ]; then
    perf_out=$workdir/perf.txt
    perf stat -x, -e syscalls:sys_enter_fdatasync,syscalls:sys_enter_fsync -p "$server_pid" \
      -o "$perf_out" -- sleep "$DURATION" &
  fi
  out=$(taskset -c "$CLIENT_CPU" "$workdir/loadgen.bin" --port "$port" --server-pid "$server_pid" \
    --connections "$CONNECTIONS" --pipeline "$pipeline" --ratio 1:0 --keyspace "$KEYSPACE" \
    --value-size "$VALUE_SIZE" --duration "$DURATION")
  if [ -n "$perf_out" ]; then
    wait %% 2>/dev/null || true
    fsyncs=$(awk -F, '/syscalls/ {n += $1} END {print n + 0}' "$perf_out")
  elif [ "$mode" = off ]; then
    fsyncs=0
  elif [ "$server" != redis ]; then
    after=$(fsyncs_shardis)
    fsyncs=$((after - before))
  fi
  echo "server=$server aof=$mode fsyncs=$fsyncs $out" >>"$workdir/results.txt"
  note "$server $mode P$pipeline: $(field ops_per_s "$out") ops/s, $fsyncs fsyncs"
}

: >"$workdir/results.txt"
for round in $(seq 1 "$ROUNDS"); do
  for mode in off everysec always; do
    for server in redis shardis1 shardis2; do
      start "$server" "$mode"
      measure "$server" "$mode" 1
      measure "$server" "$mode" 16
      stop_server
    done
  done
  note "round $round done"
done

"$PYTHON" - "$workdir/results.txt" "$SHARDIS_REV" "$ROUNDS" "$DURATION" "$CONNECTIONS" \
  "$KEYSPACE" "$VALUE_SIZE" "$SERVER_CPU" "$CLIENT_CPU" <<'EOF' | tee ${REPORT:+"$REPORT"}
import statistics, sys
path, rev, rounds, duration, conns, keyspace, value_size, scpu, ccpu = sys.argv[1:]
rows = {}
raw = open(path).read().splitlines()
for line in raw:
    f = dict(kv.split("=", 1) for kv in line.split() if "=" in kv)
    key = (f["server"], f["aof"], int(f["pipeline"]))
    fs = f["fsyncs"]
    rows.setdefault(key, []).append((float(f["ops_per_s"]), float(f["p99_us"]), float(f["ops"]),
                                     None if fs == "n/a" else float(fs), float(f["wall_s"])))
def med(key, i):
    vals = [r[i] for r in rows[key] if r[i] is not None]
    return statistics.median(vals) if vals else None
names = {"redis": "redis-server", "shardis1": "shardis --threads 1", "shardis2": "shardis --threads 2"}
print(f"# AOF benchmark: shardis {rev} against redis-server, medians of {rounds} rounds\n")
print(f"SET, {conns} connections, {duration} s per load, keys uniform over {keyspace}, "
      f"{value_size}-byte values; servers pinned to CPU {scpu}, the load generator to CPU {ccpu}.\n")
print("| server | appendfsync | pipeline | ops/s | p99 (µs) | fsyncs/s | writes per fsync |")
print("|---|---|---|---|---|---|---|")
for server in ("redis", "shardis1", "shardis2"):
    for mode in ("off", "everysec", "always"):
        for p in (1, 16):
            k = (server, mode, p)
            ops, p99 = med(k, 0), med(k, 1)
            fs = [r[3] / r[4] for r in rows[k] if r[3] is not None]
            per = [r[2] / r[3] for r in rows[k] if r[3]]
            fs_s = f"{statistics.median(fs):,.0f}" if fs else "n/a"
            per_s = f"{statistics.median(per):,.1f}" if per else "-"
            print(f"| {names[server]} | {'no AOF' if mode == 'off' else mode} | P{p} | {ops:,.0f} | "
                  f"{p99:,.0f} | {fs_s} | {per_s} |")
print("\n## The issue's targets\n")
# Met or not is judged on the ratio of the medians. The rounds' own ratios (the two loads of one
# round run within a minute of each other) are shown beside it: on a machine whose speed drifts
# between rounds they say more about the spread.
def rounds(a, b):
    return ", ".join(f"{x[0] / y[0]:.2f}" for x, y in zip(rows[a], rows[b]))
print("| target | needs | result | met | each round |")
print("|---|---|---|---|---|")
for server in ("shardis1", "shardis2"):
    for p in (1, 16):
        r = med((server, "everysec", p), 0) / med((server, "off", p), 0)
        each = rounds((server, "everysec", p), (server, "off", p))
        print(f"| {names[server]}, SET P{p}: everysec / no AOF | ≥ 0.90 | {r:.2f} | "
              f"{'yes' if r >= 0.9 else 'no'} | {each} |")
for server in ("shardis1", "shardis2"):
    for p in (1, 16):
        r = med((server, "always", p), 0) / med(("redis", "always", p), 0)
        each = rounds((server, "always", p), ("redis", "always", p))
        print(f"| {names[server]}, SET P{p}: always / redis-server always | ≥ 1.5x | {r:.2f}x | "
              f"{'yes' if r >= 1.5 else 'no'} | {each} |")
for p in (1, 16):
    r = med(("redis", "everysec", p), 0) / med(("redis", "off", p), 0)
    print(f"| (for reference) redis-server, SET P{p}: everysec / no AOF | - | {r:.2f} | - | "
          f"{rounds(('redis', 'everysec', p), ('redis', 'off', p))} |")
print("\n## Raw lines\n\n```")
print("\n".join(raw))
print("```")
EOF
