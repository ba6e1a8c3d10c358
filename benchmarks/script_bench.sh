#!/usr/bin/env bash
# Scripting (issue 16): EVALSHA of a script doing INCR and GET on its one key, shardis --threads 1
# and 2 against the Debian redis-server, in one run; and the same work on a key the script did
# not declare (which shardis runs over every shard).
#
#   bash benchmarks/script_bench.sh                    # ROUNDS=3: ~4 min
#   ROUNDS=1 DURATION=2 bash benchmarks/script_bench.sh   # a quick look
#
# Each round starts, one at a time, redis-server, shardis --threads 1 (both pinned to SERVER_CPU)
# and shardis --threads 2 (on SERVER_CPU and CLIENT_CPU: the machine's two CPUs, one shared with
# the load generator, so compare its ops per server CPU-second more than its ops/s). On each, for
# the declared script and then the undeclared one: EVALSHA pipeline 1, then pipeline 16,
# CONNECTIONS connections, DURATION seconds each, keys uniform over KEYSPACE. The load generator
# is pinned to CLIENT_CPU and measures the server's CPU time (/proc/PID/stat).
#
# Prints a markdown report (and REPORT when given): medians over the rounds, the issue's targets
# (shardis --threads 1 >= 1.0x redis-server's ops per server CPU-second; --threads 2 above one
# thread's throughput) and every raw line. Progress goes to stderr.
#
# Environment (defaults in parentheses): ROUNDS (3), DURATION (5), CONNECTIONS (50),
#   KEYSPACE (100000), SERVER_CPU, CLIENT_CPU (the first and second CPU this shell may use),
#   NICE (unset, see lib.sh), SHARDIS_BIN (build/release/shardis, built if not given), LOADGEN
#   (build/release/benchmarks/loadgen), REDIS_SERVER, REPORT.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

PYTHON=/usr/bin/python3
ROUNDS=${ROUNDS:-3}
DURATION=${DURATION:-5}
CONNECTIONS=${CONNECTIONS:-50}
KEYSPACE=${KEYSPACE:-100000}
NICE=${NICE:-}
REDIS_SERVER=${REDIS_SERVER:-$(command -v redis-server || true)}
DECLARED="redis.call('incr', KEYS[1]) return redis.call('get', KEYS[1])"
UNDECLARED="local k = 'u' .. KEYS[1] redis.call('incr', k) return redis.call('get', k)"

source benchmarks/lib.sh
require redis-cli taskset "$PYTHON" "$REDIS_SERVER"
pick_cpus

bench_binaries script loadgen
source benchmarks/servers.sh
cleanup() { stop_server; rm -rf "$workdir"; }
trap cleanup EXIT
apply_nice cleanup
started=$SECONDS

# start SERVER: redis | shardis1 | shardis2.
start() {
  local server=$1
  port=$(free_port)
  if [ "$server" = redis ]; then
    (cd "$workdir" && exec taskset -c "$SERVER_CPU" "$REDIS_SERVER" --port "$port" \
      --bind 127.0.0.1 --save '' --appendonly no) >>"$workdir/redis.log" 2>&1 &
  else
    local cpus=$SERVER_CPU
    [ "$server" = shardis1 ] || cpus=$SERVER_CPU,$CLIENT_CPU
    (cd "$workdir" && exec taskset -c "$cpus" "$workdir/shardis.bin" --port "$port" \
      --bind 127.0.0.1 --threads "${server#shardis}" --save= --logtostderr) \
      >>"$workdir/shardis.log" 2>&1 &
  fi
  server_pid=$!
  wait_for_pong && return 0
  echo "FAIL: $server did not start" >&2
  exit 1
}

# measure SERVER SCRIPT_NAME SCRIPT PIPELINE: one load; appends its line to results.txt.
measure() {
  local server=$1 name=$2 script=$3 pipeline=$4 sha out
  sha=$(redis-cli -p "$port" script load "$script")
  out=$(taskset -c "$CLIENT_CPU" "$workdir/loadgen.bin" --port "$port" --server-pid "$server_pid" \
    --connections "$CONNECTIONS" --pipeline "$pipeline" --ratio 0:1 --keyspace "$KEYSPACE" \
    --evalsha "$sha" --duration "$DURATION")
  [ "$(field errors "$out")" = 0 ] || { echo "FAIL: errors in $server $name: $out" >&2; exit 1; }
  echo "server=$server script=$name $out" >>"$workdir/results.txt"
  note "$server $name P$pipeline: $(field ops_per_s "$out") ops/s," \
    "$(field ops_per_server_cpu_s "$out") per server CPU-s"
}

: >"$workdir/results.txt"
for round in $(seq 1 "$ROUNDS"); do
  for server in redis shardis1 shardis2; do
    start "$server"
    for p in 1 16; do
      measure "$server" declared "$DECLARED" "$p"
      measure "$server" undeclared "$UNDECLARED" "$p"
    done
    stop_server
  done
  note "round $round done"
done

"$PYTHON" - "$workdir/results.txt" "$SHARDIS_REV" "$ROUNDS" "$DURATION" "$CONNECTIONS" \
  "$KEYSPACE" "$SERVER_CPU" "$CLIENT_CPU" <<'EOF' | tee ${REPORT:+"$REPORT"}
import statistics, sys
path, rev, rounds, duration, conns, keyspace, scpu, ccpu = sys.argv[1:]
rows = {}
raw = open(path).read().splitlines()
for line in raw:
    f = dict(kv.split("=", 1) for kv in line.split() if "=" in kv)
    key = (f["server"], f["script"], int(f["pipeline"]))
    rows.setdefault(key, []).append((float(f["ops_per_s"]), float(f["ops_per_server_cpu_s"]),
                                     float(f["p99_us"]), float(f["server_cpu_util"])))
def med(key, i):
    return statistics.median(r[i] for r in rows[key])
names = {"redis": "redis-server", "shardis1": "shardis --threads 1",
         "shardis2": "shardis --threads 2"}
print(f"# Scripting benchmark: shardis {rev} against redis-server, medians of {rounds} rounds\n")
print(f"EVALSHA of a script on one key (INCR, then GET), {conns} connections, {duration} s per "
      f"load, keys uniform over {keyspace}. redis-server and shardis --threads 1 pinned to CPU "
      f"{scpu}; shardis --threads 2 on CPUs {scpu},{ccpu}; the load generator on CPU {ccpu}. "
      f"'undeclared': the script works on a key it was not given in KEYS.\n")
print("| server | script | pipeline | ops/s | ops per server CPU-s | server CPU | p99 (µs) |")
print("|---|---|---|---|---|---|---|")
for server in ("redis", "shardis1", "shardis2"):
    for script in ("declared", "undeclared"):
        for p in (1, 16):
            k = (server, script, p)
            print(f"| {names[server]} | {script} | P{p} | {med(k, 0):,.0f} | {med(k, 1):,.0f} | "
                  f"{med(k, 3):.2f} | {med(k, 2):,.0f} |")
print("\n## The issue's targets\n")
print("| target | needs | result | met |")
print("|---|---|---|---|")
for p in (1, 16):
    r = med(("shardis1", "declared", p), 1) / med(("redis", "declared", p), 1)
    print(f"| shardis --threads 1, P{p}: ops per server CPU-s / redis-server's | ≥ 1.0x | "
          f"{r:.2f}x | {'yes' if r >= 1.0 else 'no'} |")
for p in (1, 16):
    r = med(("shardis2", "declared", p), 0) / med(("shardis1", "declared", p), 0)
    print(f"| shardis --threads 2 / --threads 1, P{p}: ops/s | > 1.0x | {r:.2f}x | "
          f"{'yes' if r > 1.0 else 'no'} |")
for p in (1, 16):
    r = med(("shardis2", "undeclared", p), 0) / med(("shardis2", "declared", p), 0)
    print(f"| (for reference) shardis --threads 2, P{p}: undeclared / declared ops/s | - | "
          f"{r:.2f}x | - |")
print("\n## Raw lines\n\n```")
print("\n".join(raw))
print("```")
EOF
