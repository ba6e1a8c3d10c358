#!/usr/bin/env bash
# ACL (issue 18): the cost of the permission check per command. GET pipeline 16 on shardis
# --threads 1 as the default user (+@all ~* &*, which skips the check) and as a user with a key
# pattern and a command list (checked on every command), alternating in one run; redis-server
# the same way for reference.
#
#   bash benchmarks/acl_bench.sh                         # ROUNDS=5: ~2 min
#
# The load is redis-benchmark's (it authenticates with --user/-a), pinned to CLIENT_CPU; each
# server is pinned to SERVER_CPU and its CPU time is read from /proc/PID/stat around each load.
# Prints a markdown report (and REPORT when given): medians over the rounds of ops per server
# CPU-second and the restricted user's ratio to the default user's.
#
# Environment (defaults in parentheses): ROUNDS (5), REQUESTS per load (1000000), CONNECTIONS
#   (50), KEYSPACE (100000), SERVER_CPU, CLIENT_CPU, NICE (unset, see lib.sh), SHARDIS_BIN
#   (build/release/shardis, built if not given), REDIS_SERVER, REPORT.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

PYTHON=/usr/bin/python3
ROUNDS=${ROUNDS:-5}
REQUESTS=${REQUESTS:-1000000}
CONNECTIONS=${CONNECTIONS:-50}
KEYSPACE=${KEYSPACE:-100000}
NICE=${NICE:-}
REDIS_SERVER=${REDIS_SERVER:-$(command -v redis-server || true)}
# What redis-benchmark's GET needs (it sends CONFIG GET save/appendonly first, which may fail),
# on the keys it uses (key:__rand_int__).
RULES=(on '>bench' '~key:*' '~other:*' '%R~ro:*' '&*' -@all +get +set +ping +config)

source benchmarks/lib.sh
require redis-cli redis-benchmark taskset "$PYTHON" "$REDIS_SERVER"
pick_cpus

bench_binaries acl
source benchmarks/servers.sh
cleanup() { stop_server; rm -rf "$workdir"; }
trap cleanup EXIT
apply_nice cleanup
started=$SECONDS

# start SERVER (redis | shardis): started, the user `bench` created, the keyspace filled.
start() {
  local server=$1
  port=$(free_port)
  if [ "$server" = redis ]; then
    (cd "$workdir" && exec taskset -c "$SERVER_CPU" "$REDIS_SERVER" --port "$port" \
      --bind 127.0.0.1 --save '' --appendonly no) >>"$workdir/redis.log" 2>&1 &
  else
    (cd "$workdir" && exec taskset -c "$SERVER_CPU" "$workdir/shardis.bin" --port "$port" \
      --bind 127.0.0.1 --threads 1 --save= --logtostderr) >>"$workdir/shardis.log" 2>&1 &
  fi
  server_pid=$!
  wait_for_pong || { echo "FAIL: $server did not start" >&2; exit 1; }
  [ "$(redis-cli -p "$port" acl setuser bench reset "${RULES[@]}")" = OK ] ||
    { echo "FAIL: $server: ACL SETUSER" >&2; exit 1; }
  taskset -c "$CLIENT_CPU" redis-benchmark -p "$port" -c "$CONNECTIONS" -n "$KEYSPACE" -P 16 \
    -r "$KEYSPACE" -t set -q >/dev/null
}

# measure SERVER USER: GET P16 as USER (default | bench); appends its line to results.txt.
measure() {
  local server=$1 user=$2 before after out rps args errors
  args=(-p "$port" -c "$CONNECTIONS" -n "$REQUESTS" -P 16 -r "$KEYSPACE" -t get --csv)
  [ "$user" = default ] || args+=(--user bench -a bench)
  before=$(server_cpu_ticks)
  out=$(taskset -c "$CLIENT_CPU" redis-benchmark "${args[@]}" 2>&1)
  after=$(server_cpu_ticks)
  rps=$(awk -F'","' '/^"GET"/ {print $2}' <<<"$out")
  [ -n "$rps" ] || { echo "FAIL: $server $user: $out" >&2; exit 1; }
  # The load must have been served, not refused: the user's GET count in commandstats.
  errors=$(redis-cli -p "$port" info errorstats | grep -c NOPERM || true)
  [ "$errors" = 0 ] || { echo "FAIL: $server $user: NOPERM errors" >&2; exit 1; }
  echo "server=$server user=$user rps=$rps cpu_ticks=$((after - before)) requests=$REQUESTS" \
    "clk_tck=$(getconf CLK_TCK)" >>"$workdir/results.txt"
  note "$server $user: $rps ops/s, $((after - before)) CPU ticks"
}

: >"$workdir/results.txt"
for round in $(seq 1 "$ROUNDS"); do
  for server in redis shardis; do
    start "$server"
    if [ $((round % 2)) = 1 ]; then users=(default bench); else users=(bench default); fi
    for user in "${users[@]}"; do measure "$server" "$user"; done
    stop_server
  done
  note "round $round done"
done

"$PYTHON" - "$workdir/results.txt" "$SHARDIS_REV" "$ROUNDS" "$REQUESTS" "$CONNECTIONS" \
  "$KEYSPACE" "$SERVER_CPU" "$CLIENT_CPU" "${RULES[*]}" <<'EOF' | tee ${REPORT:+"$REPORT"}
import statistics, sys
path, rev, rounds, requests, conns, keyspace, scpu, ccpu, rules = sys.argv[1:]
rows = {}
raw = open(path).read().splitlines()
for line in raw:
    f = dict(kv.split("=", 1) for kv in line.split())
    cpu_s = int(f["cpu_ticks"]) / int(f["clk_tck"])
    rows.setdefault((f["server"], f["user"]), []).append(
        (float(f["rps"]), int(f["requests"]) / max(cpu_s, 1e-9)))
def med(key, i):
    return statistics.median(r[i] for r in rows[key])
print(f"# ACL check benchmark: shardis {rev} --threads 1, medians of {rounds} rounds\n")
print(f"redis-benchmark -t get -P 16 -c {conns} -n {requests} -r {keyspace}, as the default user "
      f"and as `bench` ({rules}); servers pinned to CPU {scpu}, redis-benchmark to CPU {ccpu}.\n")
print("| server | user | ops/s | ops per server CPU-s | restricted / default |")
print("|---|---|---|---|---|")
for server in ("redis", "shardis"):
    base = med((server, "default"), 1)
    for user in ("default", "bench"):
        v = med((server, user), 1)
        print(f"| {server} | {user} | {med((server, user), 0):,.0f} | {v:,.0f} | {v / base:.3f} |")
print("\nRaw lines:\n")
print("```")
print("\n".join(raw))
print("```")
EOF
