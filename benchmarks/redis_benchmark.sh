#!/usr/bin/env bash
# shardis (--threads 1) against the Debian redis-server, side by side in one run.
#
# Both servers are pinned to one CPU (SERVER_CPU, default 0) and redis-benchmark to another
# (CLIENT_CPU, default 1). Each workload is measured on both servers alternately, ROUNDS times,
# and the median is reported as a markdown table, preceded by the exact commands used.
#
#   bash benchmarks/redis_benchmark.sh                  # the full run (-n 1000000)
#   N=100000 bash benchmarks/redis_benchmark.sh         # a quick run
#
# Environment: N (requests per test, default 1000000), KEYSPACE (-r, default 1000000),
# DATA_SIZE (-d, default 128), CLIENTS (-c, default 50), PIPELINES ("1 16"), ROUNDS (1),
# SERVER_CPU (0), CLIENT_CPU (1), SHARDIS_BIN (default: build/release/shardis, built if needed),
# REDIS_SERVER (default: redis-server on PATH).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

N=${N:-1000000}
KEYSPACE=${KEYSPACE:-1000000}
DATA_SIZE=${DATA_SIZE:-128}
CLIENTS=${CLIENTS:-50}
PIPELINES=${PIPELINES:-"1 16"}
ROUNDS=${ROUNDS:-1}
SERVER_CPU=${SERVER_CPU:-0}
CLIENT_CPU=${CLIENT_CPU:-1}
REDIS_SERVER=${REDIS_SERVER:-$(command -v redis-server || true)}

for tool in redis-benchmark redis-cli taskset "$REDIS_SERVER"; do
  command -v "$tool" >/dev/null || { echo "missing $tool: bash scripts/install-deps.sh test" >&2; exit 1; }
done
if [ -z "${SHARDIS_BIN:-}" ]; then
  bash scripts/build.sh release shardis >&2
  SHARDIS_BIN=build/release/shardis
fi
if [ "$(nproc)" -lt 2 ]; then
  echo "warning: fewer than 2 CPUs; server and client share a CPU" >&2
fi

workdir=$(mktemp -d /tmp/shardis-bench.XXXXXX)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
}
trap cleanup EXIT

free_port() {
  /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

wait_ready() {  # PORT NAME LOG
  for _ in $(seq 1 100); do
    [ "$(redis-cli -h 127.0.0.1 -p "$1" ping 2>/dev/null)" = PONG ] && return 0
    sleep 0.1
  done
  echo "$2 did not start on port $1; log:" >&2
  tail -20 "$3" >&2
  exit 1
}

redis_port=$(free_port)
redis_cmd=(taskset -c "$SERVER_CPU" "$REDIS_SERVER" --port "$redis_port" --bind 127.0.0.1
           --save '' --appendonly no --dir "$workdir")
"${redis_cmd[@]}" >"$workdir/redis.log" 2>&1 &
pids+=($!)
wait_ready "$redis_port" redis-server "$workdir/redis.log"

shardis_port=$(free_port)
shardis_cmd=(taskset -c "$SERVER_CPU" "$SHARDIS_BIN" --port "$shardis_port" --bind 127.0.0.1
             --threads 1 --logtostderr --save '')
"${shardis_cmd[@]}" >"$workdir/shardis.log" 2>&1 &
pids+=($!)
wait_ready "$shardis_port" shardis "$workdir/shardis.log"

bench_cmd() {  # PORT PIPELINE -> the redis-benchmark command line
  echo taskset -c "$CLIENT_CPU" redis-benchmark -h 127.0.0.1 -p "$1" -t set,get -n "$N" \
    -r "$KEYSPACE" -d "$DATA_SIZE" -c "$CLIENTS" -P "$2" --csv
}

# Fill the keyspace first so that GETs mostly hit, the same way on both servers.
fill_cmd() {
  echo taskset -c "$CLIENT_CPU" redis-benchmark -h 127.0.0.1 -p "$1" -t set -n "$KEYSPACE" \
    -r "$KEYSPACE" -d "$DATA_SIZE" -c "$CLIENTS" -P 16 -q
}
for port in "$redis_port" $shardis_port; do
  $(fill_cmd "$port") >/dev/null
done

declare -A results  # "server/test/pipeline" -> space-separated rps of each round
run_bench() {  # SERVER PORT PIPELINE
  local out test rps
  out=$($(bench_cmd "$2" "$3")) || { echo "redis-benchmark failed against $1" >&2; exit 1; }
  while IFS=, read -r test rps _; do
    test=${test//\"/}
    rps=${rps//\"/}
    [ "$test" = test ] && continue
    results["$1/$test/$3"]+="$rps "
  done <<<"$out"
}

for round in $(seq 1 "$ROUNDS"); do
  for p in $PIPELINES; do
    echo "round $round, -P $p: redis-server" >&2
    run_bench redis "$redis_port" "$p"
    echo "round $round, -P $p: shardis" >&2
    run_bench shardis "$shardis_port" "$p"
  done
done

median() {  # numbers... -> median
  printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {if (NR%2) print a[(NR+1)/2]; else printf "%.2f\n", (a[NR/2]+a[NR/2+1])/2}'
}

keys_redis=$(redis-cli -h 127.0.0.1 -p "$redis_port" dbsize)
keys_shardis=$(redis-cli -h 127.0.0.1 -p "$shardis_port" dbsize)

echo "## redis-benchmark: shardis --threads 1 vs redis-server"
echo
echo "- date: $(date -u +%Y-%m-%dT%H:%MZ); host: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'); kernel $(uname -r)"
echo "- redis-server: $("$REDIS_SERVER" --version | awk '{print $3}' | sed 's/v=//'); shardis: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
echo "- rounds: $ROUNDS (median), measured alternately; keys after the run: redis $keys_redis, shardis $keys_shardis"
echo
echo "Commands:"
echo
echo '```'
echo "${redis_cmd[*]}" | sed "s/--save  /--save '' /"
echo "${shardis_cmd[*]}" | sed "s/--save \$/--save ''/"
echo "# fill, on each server:"
fill_cmd '<port>'
for p in $PIPELINES; do bench_cmd '<port>' "$p"; done
echo '```'
echo
echo "| workload | redis-server req/s | shardis req/s | ratio |"
echo "| --- | ---: | ---: | ---: |"
for p in $PIPELINES; do
  for test in SET GET; do
    # shellcheck disable=SC2086  # the per-round values are space-separated on purpose
    r=$(median ${results["redis/$test/$p"]})
    # shellcheck disable=SC2086
    s=$(median ${results["shardis/$test/$p"]})
    ratio=$(awk -v a="$s" -v b="$r" 'BEGIN {printf "%.2fx", (b > 0 ? a / b : 0)}')
    printf '| %s -P %s -c %s -d %s | %.0f | %.0f | %s |\n' "$test" "$p" "$CLIENTS" "$DATA_SIZE" "$r" "$s" "$ratio"
  done
done
