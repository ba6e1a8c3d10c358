#!/usr/bin/env bash
# The benchmark suite (issue 5): shardis against the Debian redis-server, side by side, one command.
#
#   bash benchmarks/run.sh                          # full run: ~3 min + 4-7 min for the 10M fill
#   ROUNDS=3 bash benchmarks/run.sh                 # every workload 3 times; medians reported
#   NICE=-10 ROUNDS=3 bash benchmarks/run.sh        # on a busy shared machine (see NICE below)
#   SKIP_FILL10M=1 bash benchmarks/run.sh           # without the 10,000,000-key fill
#   QUICK=1 bash benchmarks/run.sh                  # smoke test: small counts, well under 60 s
#
# What it does (benchmarks/README.md explains every figure):
#   1. builds build/release/shardis and the load generator build/release/benchmarks/loadgen;
#   2. starts redis-server (--save '' --appendonly no), shardis --threads 1 and shardis --threads 2,
#      all pinned to SERVER_CPU, fills each with KEYSPACE keys of VALUE_SIZE bytes, reads their
#      memory, then runs every workload on each server in turn (the order rotates per workload and
#      round) with the load generator pinned to CLIENT_CPU;
#   3. restarts redis-server and shardis --threads 1, fills BIG_KEYSPACE keys of 16 KiB, GETs them;
#   4. the cost of Redis' pipeline order (docs/pipelines.md): shardis --threads 2 and 4 in the
#      default (strict) order and with --pipeline_order=relaxed, and BASELINE_BIN at 2 and 4
#      threads when given, SET/GET P16;
#   5. the memcached text protocol: the Debian memcached (-t 1) against shardis --threads 1
#      --memcached_port, both pinned to SERVER_CPU: set/get P1 and P16 and a multi-key get;
#   6. (unless SKIP_FILL10M=1) fills FILL10M_KEYS keys with pipeline 1 on a fresh server of each
#      kind, one at a time, and reports the slowest single SET (at the client and in the server),
#      then overwrites for as long as a control without growth;
#   7. prints a markdown report (medians over ROUNDS) and writes it to REPORT.
#
# Environment (defaults in parentheses; QUICK=1 values in brackets):
#   ROUNDS (1), QUICK (0), SKIP_FILL10M (0)
#   DURATION seconds per workload and server (10) [1]
#   KEYSPACE (1000000) [20000], VALUE_SIZE (128), CONNECTIONS (50)
#   BIG_KEYSPACE (100000) [2000], BIG_VALUE_SIZE (16384)
#   FILL10M_KEYS (10000000) [200000], FILL10M_CONNECTIONS (4)
#   SERVER_CPU, CLIENT_CPU (the first and second CPU this shell may use)
#   NICE (unset): e.g. NICE=-10 gives this run's scheduler autogroup (its session: the servers and
#     the load generator) nice -10 while it runs, so that other sessions on a shared machine take
#     less of its CPUs (plain `nice` does not reach across sessions when autogroup is on). Needs
#     root; slows everybody else down for the duration.
#   SHARDIS_BIN (build/release/shardis, built if not given), REDIS_SERVER (redis-server on PATH)
#   BASELINE_BIN (unset): an older shardis binary measured beside SHARDIS_BIN in the pipeline-order
#     phase (e.g. the commit before a change to the data path)
#   MEMCACHED (memcached on PATH), MC_KEYS_PER_GET (10): keys of the multi-key get
#   SKIP_ORDER, SKIP_MEMCACHED (0): leave out phase 4 or 5
#   REPORT (benchmarks/results/<UTC date>.md, -2, -3... if taken) [a file in the work directory]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

PYTHON=/usr/bin/python3
QUICK=${QUICK:-0}
ROUNDS=${ROUNDS:-1}
SKIP_FILL10M=${SKIP_FILL10M:-0}
if [ "$QUICK" = 1 ]; then
  DURATION=${DURATION:-1}
  KEYSPACE=${KEYSPACE:-20000}
  BIG_KEYSPACE=${BIG_KEYSPACE:-2000}
  FILL10M_KEYS=${FILL10M_KEYS:-200000}
else
  DURATION=${DURATION:-10}
  KEYSPACE=${KEYSPACE:-1000000}
  BIG_KEYSPACE=${BIG_KEYSPACE:-100000}
  FILL10M_KEYS=${FILL10M_KEYS:-10000000}
fi
VALUE_SIZE=${VALUE_SIZE:-128}
BIG_VALUE_SIZE=${BIG_VALUE_SIZE:-16384}
CONNECTIONS=${CONNECTIONS:-50}
NICE=${NICE:-}
FILL10M_CONNECTIONS=${FILL10M_CONNECTIONS:-4}
REDIS_SERVER=${REDIS_SERVER:-$(command -v redis-server || true)}
MEMCACHED=${MEMCACHED:-$(command -v memcached || true)}
MC_KEYS_PER_GET=${MC_KEYS_PER_GET:-10}
SKIP_ORDER=${SKIP_ORDER:-0}
SKIP_MEMCACHED=${SKIP_MEMCACHED:-0}
BASELINE_BIN=${BASELINE_BIN:-}

tools=(redis-cli taskset "$PYTHON" "$REDIS_SERVER")
[ "$SKIP_MEMCACHED" = 1 ] || tools+=("$MEMCACHED")
source benchmarks/lib.sh
require "${tools[@]}"
pick_cpus

if [ -z "${SHARDIS_BIN:-}" ]; then
  bash scripts/build.sh release shardis loadgen >&2
  SHARDIS_BIN=build/release/shardis
else
  bash scripts/build.sh release loadgen >&2
fi
LOADGEN=build/release/benchmarks/loadgen

workdir=$(mktemp -d /tmp/shardis-bench.XXXXXX)
# Run copies, so that a rebuild in the tree during the run cannot change what is measured.
cp "$SHARDIS_BIN" "$workdir/shardis"
cp "$LOADGEN" "$workdir/loadgen"
if [ -n "$BASELINE_BIN" ]; then
  cp "$BASELINE_BIN" "$workdir/baseline"
  BASELINE_SHA=$(sha256sum "$BASELINE_BIN" | cut -c1-12)
fi
SHARDIS_SHA=$(sha256sum "$SHARDIS_BIN" | cut -c1-12)
SHARDIS_REV="$(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(
  n=$(git status --porcelain 2>/dev/null | grep -cv '^??' || true)
  [ "$n" = 0 ] || echo " + $n uncommitted files") (binary sha256 $SHARDIS_SHA...)"
results=$workdir/results.txt   # one line per measurement: tags, then the load generator's line
: >"$results"
if [ -z "${REPORT:-}" ]; then
  if [ "$QUICK" = 1 ]; then
    REPORT=$workdir/report.md
  else
    REPORT=benchmarks/results/$(date -u +%Y-%m-%d).md
    n=2
    while [ -e "$REPORT" ]; do REPORT=benchmarks/results/$(date -u +%Y-%m-%d)-$n.md; n=$((n + 1)); done
  fi
fi
mkdir -p "$(dirname "$REPORT")"

declare -A PID PORT CMD LOG
cleanup() {
  local name
  for name in "${!PID[@]}"; do kill -TERM "${PID[$name]}" 2>/dev/null || true; done
  for name in "${!PID[@]}"; do wait "${PID[$name]}" 2>/dev/null || true; done
}
trap cleanup EXIT

apply_nice cleanup

started=$SECONDS

free_port() {
  "$PYTHON" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

quote() { printf '%q ' "$@" | sed 's/ $//'; }

# start_server NAME redis|shardis|baseline|memcached [THREADS [SHARDIS FLAGS...]]
# A shardis started with --memcached_port=N is measured on that port (PORT[NAME]).
start_server() {
  local name=$1 kind=$2 threads=${3:-1} port cmd mc_port=
  shift $(($# < 3 ? $# : 3))
  port=$(free_port)
  case "$kind" in
    redis)
      cmd=(taskset -c "$SERVER_CPU" "$REDIS_SERVER" --port "$port" --bind 127.0.0.1
           --save '' --appendonly no --dir "$workdir") ;;
    memcached)  # -m: room for every key of the phase (its default is 64 MB)
      cmd=(taskset -c "$SERVER_CPU" "$MEMCACHED" -p "$port" -U 0 -l 127.0.0.1 -t 1 -m 4096)
      [ "$(id -u)" != 0 ] || cmd+=(-u root) ;;
    *)
      local bin=$workdir/shardis
      [ "$kind" != baseline ] || bin=$workdir/baseline
      cmd=(taskset -c "$SERVER_CPU" "$bin" --port "$port" --bind 127.0.0.1
           --threads "$threads" --logtostderr "$@")
      mc_port=$(printf '%s\n' "$@" | sed -n 's/^--memcached_port=//p') ;;
  esac
  LOG[$name]=$workdir/$name.log
  # Each in an empty directory: shardis loads dump.rdb from its working directory at start, and
  # writes one there when stopped while a `save` schedule is set.
  (cd "$(mktemp -d "$workdir/$name.XXXXXX")" && exec "${cmd[@]}") >>"${LOG[$name]}" 2>&1 &
  PID[$name]=$!
  PORT[$name]=$port
  CMD[$name]=$(quote "${cmd[@]}")
  for _ in $(seq 1 100); do
    if [ "$kind" = memcached ]; then
      "$PYTHON" -c "import socket; socket.create_connection(('127.0.0.1', $port), 0.2)" \
        2>/dev/null && return 0
    elif [ "$(redis-cli -p "$port" ping 2>/dev/null)" = PONG ]; then
      no_save_schedule "$port"  # lib.sh
      [ -z "$mc_port" ] || PORT[$name]=$mc_port
      return 0
    fi
    sleep 0.1
  done
  echo "$name did not start: ${CMD[$name]}" >&2
  tail -20 "${LOG[$name]}" >&2
  exit 1
}

stop_server() {  # NAME: SIGTERM, wait, and say so if it did not exit cleanly
  local name=$1 rc=0
  kill -TERM "${PID[$name]}" 2>/dev/null || true
  wait "${PID[$name]}" 2>/dev/null || rc=$?
  [ $rc -eq 0 ] || echo "warning: $name exited with status $rc when stopped" | tee -a "$workdir/warnings" >&2
  unset "PID[$name]"
}

# fail NAME WHAT LOADGEN-COMMAND: the server misbehaved; print how to reproduce, and stop.
fail() {
  local name=$1 what=$2 lgcmd=$3 state
  if kill -0 "${PID[$name]}" 2>/dev/null; then state="still running"; else
    wait "${PID[$name]}" 2>/dev/null && state="exited with status 0" || state="exited with status $?"
  fi
  {
    echo
    echo "FAILED: $name: $what"
    echo "The server $state. load generator stderr:"
    sed 's/^/  /' "$workdir/loadgen.err"
    echo "To reproduce (same binaries, same order):"
    echo "  ${CMD[$name]} &"
    [ -n "${FILLCMD[$name]:-}" ] && echo "  ${FILLCMD[$name]}"
    echo "  ${lgcmd/--server-pid ${PID[$name]}/--server-pid \$!}"
    echo "Last lines of the server log (${LOG[$name]}):"
    tail -30 "${LOG[$name]}" | sed 's/^/  /'
  } >&2
  trap - EXIT
  cleanup
  restore_nice
  echo "work directory kept: $workdir" >&2
  exit 1
}

# loadgen TAGS NAME ARGS...: one measurement against server NAME, appended to $results.
declare -A FILLCMD
loadgen() {
  local tags=$1 name=$2 out cmd
  shift 2
  cmd=(taskset -c "$CLIENT_CPU" "$workdir/loadgen" --port "${PORT[$name]}" --server-pid "${PID[$name]}" "$@")
  out=$("${cmd[@]}" 2>"$workdir/loadgen.err") || fail "$name" "load generator failed ($tags)" "$(quote "${cmd[@]}")"
  kill -0 "${PID[$name]}" 2>/dev/null || fail "$name" "server died during $tags" "$(quote "${cmd[@]}")"
  [[ " $out " == *" errors=0 "* ]] || fail "$name" "error replies during $tags: $out" "$(quote "${cmd[@]}")"
  [[ " $out " == *" get_misses=0 "* ]] ||
    fail "$name" "GETs of filled keys returned nil during $tags: $out" "$(quote "${cmd[@]}")"
  echo "$tags server=$name $out" >>"$results"
  LAST=$out
}

# fill TAGS NAME KEYS VALUE_SIZE [loadgen args]: SET key 0..KEYS-1 once, then check DBSIZE (over
# RESP; a memcached fill is checked by the GETs after it, which fail on a miss).
fill() {
  local tags=$1 name=$2 keys=$3 size=$4 dbsize
  shift 4
  FILLCMD[$name]=$(quote taskset -c "$CLIENT_CPU" "$workdir/loadgen" --port "${PORT[$name]}" --fill \
    --keyspace "$keys" --value-size "$size" "$@")
  loadgen "$tags" "$name" --fill --keyspace "$keys" --value-size "$size" "$@"
  [[ " $* " != *" --protocol memcache "* ]] || return 0
  dbsize=$(redis-cli -p "${PORT[$name]}" dbsize)
  [ "$dbsize" = "$keys" ] || fail "$name" "DBSIZE is $dbsize after filling $keys keys" "${FILLCMD[$name]}"
}

memory() {  # TAGS NAME RSS_BEFORE_KB: used_memory and VmRSS after a fill
  local used rss keys
  used=$(redis-cli -p "${PORT[$2]}" info memory | tr -d '\r' | sed -n 's/^used_memory://p')
  rss=$(awk '/^VmRSS:/ {print $2}' "/proc/${PID[$2]}/status")
  keys=$(redis-cli -p "${PORT[$2]}" dbsize)
  echo "$1 server=$2 used_memory=${used:-0} rss_kb=$rss rss_before_kb=$3 keys=$keys" >>"$results"
}
rss_kb() { awk '/^VmRSS:/ {print $2}' "/proc/${PID[$1]}/status"; }

# The workloads: name -> load generator arguments (with --keyspace/--value-size of the phase).
declare -A WORKLOAD=(
  [set_p1]="--ratio 1:0 --pipeline 1"
  [get_p1]="--ratio 0:1 --pipeline 1"
  [set_p16]="--ratio 1:0 --pipeline 16"
  [get_p16]="--ratio 0:1 --pipeline 16"
  [mix_p1]="--ratio 1:10 --pipeline 1"
  [get16k_p1]="--ratio 0:1 --pipeline 1"
  [mc_set_p1]="--protocol memcache --ratio 1:0 --pipeline 1"
  [mc_get_p1]="--protocol memcache --ratio 0:1 --pipeline 1"
  [mc_set_p16]="--protocol memcache --ratio 1:0 --pipeline 16"
  [mc_get_p16]="--protocol memcache --ratio 0:1 --pipeline 16"
  [mc_mget_p1]="--protocol memcache --ratio 0:1 --pipeline 1 --keys-per-get $MC_KEYS_PER_GET"
)
ORDER_WORKLOADS=(set_p16 get_p16)
MC_WORKLOADS=(mc_set_p1 mc_get_p1 mc_set_p16 mc_get_p16 mc_mget_p1)
MAIN_WORKLOADS=(set_p1 get_p1 set_p16 get_p16 mix_p1)
THREADS2_WORKLOADS=" set_p1 get_p1 set_p16 get_p16 "

rotate() {  # K ITEMS...: the items rotated left by K
  local k=$1
  shift
  local items=("$@") n=$#
  for ((i = 0; i < n; i++)); do echo "${items[$(((i + k) % n))]}"; done
}

# measure ROUND "WORKLOAD..." SERVER...: every workload on every server in turn (the order of
# the servers rotates per workload and round), over the phase's KEYSPACE keys.
measure() {
  local round=$1 workloads=$2 w=0 workload name
  shift 2
  for workload in $workloads; do
    for name in $(rotate $((round - 1 + w)) "$@"); do
      # shellcheck disable=SC2086  # WORKLOAD holds several arguments
      loadgen "round=$round workload=$workload" "$name" ${WORKLOAD[$workload]} \
        --connections "$CONNECTIONS" --keyspace "$KEYSPACE" --value-size "$VALUE_SIZE" \
        --duration "$DURATION" --seed "$round"
      note "round $round: $workload on $name: $(field ops_per_s "$LAST") ops/s," \
        "$(field ops_per_server_cpu_s "$LAST") ops per server CPU-s, p99 $(field p99_us "$LAST") us"
    done
    w=$((w + 1))
  done
}

load_start=$(cut -d' ' -f1-3 /proc/loadavg)
note "work directory $workdir; server CPU $SERVER_CPU, load generator CPU $CLIENT_CPU"

for round in $(seq 1 "$ROUNDS"); do
  # ---- 128-byte values: redis-server, shardis --threads 1, shardis --threads 2 ----------------
  servers=(redis shardis shardis-t2)
  start_server redis redis
  start_server shardis shardis 1
  start_server shardis-t2 shardis 2
  for name in $(rotate $((round - 1)) "${servers[@]}"); do
    before=$(rss_kb "$name")
    fill "round=$round workload=fill" "$name" "$KEYSPACE" "$VALUE_SIZE" \
      --pipeline 16 --connections "$CONNECTIONS"
    memory "round=$round workload=memory" "$name" "$before"
    note "round $round: filled $name with $KEYSPACE keys: $(field ops_per_s "$LAST") ops/s"
  done
  w=0
  for workload in "${MAIN_WORKLOADS[@]}"; do
    for name in $(rotate $((round - 1 + w)) "${servers[@]}"); do
      [ "$name" != shardis-t2 ] || [[ "$THREADS2_WORKLOADS" == *" $workload "* ]] || continue
      # shellcheck disable=SC2086  # WORKLOAD holds several arguments
      loadgen "round=$round workload=$workload" "$name" ${WORKLOAD[$workload]} \
        --connections "$CONNECTIONS" --keyspace "$KEYSPACE" --value-size "$VALUE_SIZE" \
        --duration "$DURATION" --seed "$round"
      note "round $round: $workload on $name: $(field ops_per_s "$LAST") ops/s," \
        "$(field ops_per_server_cpu_s "$LAST") ops per server CPU-s"
    done
    w=$((w + 1))
  done
  for name in "${servers[@]}"; do stop_server "$name"; done

  # ---- 16 KiB values: redis-server, shardis --threads 1 ---------------------------------------
  servers=(redis shardis)
  start_server redis redis
  start_server shardis shardis 1
  for name in $(rotate $((round - 1)) "${servers[@]}"); do
    fill "round=$round workload=fill16k" "$name" "$BIG_KEYSPACE" "$BIG_VALUE_SIZE" \
      --pipeline 16 --connections "$CONNECTIONS"
  done
  for name in $(rotate $((round - 1)) "${servers[@]}"); do
    # shellcheck disable=SC2086
    loadgen "round=$round workload=get16k_p1" "$name" ${WORKLOAD[get16k_p1]} \
      --connections "$CONNECTIONS" --keyspace "$BIG_KEYSPACE" --value-size "$BIG_VALUE_SIZE" \
      --duration "$DURATION" --seed "$round"
    note "round $round: get16k_p1 on $name: $(field ops_per_s "$LAST") ops/s," \
      "$(field ops_per_server_cpu_s "$LAST") ops per server CPU-s"
  done
  for name in "${servers[@]}"; do stop_server "$name"; done

  # ---- Pipeline order: strict (default) against relaxed, at 2 and 4 threads -------------------
  if [ "$SKIP_ORDER" != 1 ]; then
    servers=(order-t2 order-t2-relaxed order-t4 order-t4-relaxed)
    start_server order-t2 shardis 2
    start_server order-t2-relaxed shardis 2 --pipeline_order=relaxed
    start_server order-t4 shardis 4
    start_server order-t4-relaxed shardis 4 --pipeline_order=relaxed
    if [ -n "$BASELINE_BIN" ]; then
      servers+=(baseline-t2 baseline-t4)
      start_server baseline-t2 baseline 2
      start_server baseline-t4 baseline 4
    fi
    for name in $(rotate $((round - 1)) "${servers[@]}"); do
      fill "round=$round workload=fill" "$name" "$KEYSPACE" "$VALUE_SIZE" \
        --pipeline 16 --connections "$CONNECTIONS"
    done
    measure "$round" "${ORDER_WORKLOADS[*]}" "${servers[@]}"
    for name in "${servers[@]}"; do stop_server "$name"; done
  fi

  # ---- memcached text protocol: Debian memcached -t 1 against shardis --threads 1 -------------
  if [ "$SKIP_MEMCACHED" != 1 ]; then
    servers=(memcached shardis-mc)
    start_server memcached memcached
    start_server shardis-mc shardis 1 "--memcached_port=$(free_port)"
    for name in $(rotate $((round - 1)) "${servers[@]}"); do
      fill "round=$round workload=mc_fill" "$name" "$KEYSPACE" "$VALUE_SIZE" --protocol memcache \
        --pipeline 16 --connections "$CONNECTIONS"
    done
    measure "$round" "${MC_WORKLOADS[*]}" "${servers[@]}"
    for name in "${servers[@]}"; do stop_server "$name"; done
  fi
done

# server_side TAGS NAME: the server's own view of the run just measured: its slowest command
# (SLOWLOG, which logs every command slower than 1 ms from the start) and, for shardis, its
# longest event-loop cycle (INFO debug eventloop_duration_max; redis-server 7.0 has no such figure).
server_side() {
  local port=${PORT[$2]} slowlog loop
  slowlog=$(redis-cli -p "$port" --json slowlog get 100000 | "$PYTHON" -c '
import json, sys
d = [e[2] for e in json.load(sys.stdin)]
print(f"slowlog_entries={len(d)} slowlog_max_us={max(d, default=0)}")')
  loop=$(redis-cli -p "$port" info debug | tr -d '\r' | sed -n 's/^eventloop_duration_max:/eventloop_max_us=/p')
  echo "$1 server=$2 $slowlog $loop" >>"$results"
  LAST="$slowlog $loop"
}

# ---- The big fill, pipeline 1: the slowest single SET. One server at a time, once. -----------
# Then, as a control, as many seconds of SETs that overwrite the filled keys (no table growth): the
# worst latency the client sees without growth is what the machine adds on its own.
if [ "$SKIP_FILL10M" != 1 ]; then
  for kind in redis shardis; do
    start_server "$kind" "$kind" 1
    redis-cli -p "${PORT[$kind]}" config set slowlog-log-slower-than 1000 >/dev/null
    redis-cli -p "${PORT[$kind]}" config set slowlog-max-len 100000 >/dev/null
    note "filling $kind with $FILL10M_KEYS keys, pipeline 1, $FILL10M_CONNECTIONS connections"
    fill "round=1 workload=fill10m" "$kind" "$FILL10M_KEYS" "$VALUE_SIZE" \
      --pipeline 1 --connections "$FILL10M_CONNECTIONS" --progress
    note "$kind: max latency $(field max_us "$LAST") us, p99.99 $(field p9999_us "$LAST") us"
    fill_s=$(field wall_s "$LAST")
    server_side "round=1 workload=fill10m_server" "$kind"
    note "$kind: in the server: $LAST"
    loadgen "round=1 workload=fill10m_control" "$kind" --ratio 1:0 --pipeline 1 \
      --connections "$FILL10M_CONNECTIONS" --keyspace "$FILL10M_KEYS" --value-size "$VALUE_SIZE" \
      --duration "$fill_s" --seed 1
    note "$kind: control, overwriting for $fill_s s: max latency $(field max_us "$LAST") us"
    stop_server "$kind"
  done
fi
load_end=$(cut -d' ' -f1-3 /proc/loadavg)

# ---- The exact commands, for the report ------------------------------------------------------
lg="taskset -c $CLIENT_CPU $LOADGEN --port <port> --server-pid <pid>"
{
  echo "# servers (each on a free port; <port>/<pid> below are theirs); the binaries ran from copies"
  echo "# taken at the start: shardis sha256 $SHARDIS_SHA..."
  echo "taskset -c $SERVER_CPU $(quote "$REDIS_SERVER") --port <port> --bind 127.0.0.1 --save '' --appendonly no --dir <tmp>"
  echo "taskset -c $SERVER_CPU $SHARDIS_BIN --port <port> --bind 127.0.0.1 --threads 1 --logtostderr"
  echo "taskset -c $SERVER_CPU $SHARDIS_BIN --port <port> --bind 127.0.0.1 --threads 2 --logtostderr"
  echo "# fill, then memory: redis-cli -p <port> info memory (used_memory), VmRSS of /proc/<pid>/status"
  echo "$lg --fill --keyspace $KEYSPACE --value-size $VALUE_SIZE --pipeline 16 --connections $CONNECTIONS"
  for workload in "${MAIN_WORKLOADS[@]}"; do
    echo "$lg ${WORKLOAD[$workload]} --connections $CONNECTIONS --keyspace $KEYSPACE --value-size $VALUE_SIZE --duration $DURATION --seed <round>"
  done
  echo "# 16 KiB values, on restarted servers (--threads 1)"
  echo "$lg --fill --keyspace $BIG_KEYSPACE --value-size $BIG_VALUE_SIZE --pipeline 16 --connections $CONNECTIONS"
  echo "$lg ${WORKLOAD[get16k_p1]} --connections $CONNECTIONS --keyspace $BIG_KEYSPACE --value-size $BIG_VALUE_SIZE --duration $DURATION --seed <round>"
  if [ "$SKIP_ORDER" != 1 ]; then
    echo "# pipeline order: shardis --threads 2 and 4, default (strict) and relaxed order"
    echo "taskset -c $SERVER_CPU $SHARDIS_BIN --port <port> --bind 127.0.0.1 --threads <2|4> --logtostderr [--pipeline_order=relaxed]"
    [ -z "$BASELINE_BIN" ] || echo "taskset -c $SERVER_CPU $BASELINE_BIN --port <port> --bind 127.0.0.1 --threads <2|4> --logtostderr   # baseline, sha256 $BASELINE_SHA..."
    echo "$lg --fill --keyspace $KEYSPACE --value-size $VALUE_SIZE --pipeline 16 --connections $CONNECTIONS"
    for workload in "${ORDER_WORKLOADS[@]}"; do
      echo "$lg ${WORKLOAD[$workload]} --connections $CONNECTIONS --keyspace $KEYSPACE --value-size $VALUE_SIZE --duration $DURATION --seed <round>"
    done
  fi
  if [ "$SKIP_MEMCACHED" != 1 ]; then
    echo "# memcached text protocol"
    echo "taskset -c $SERVER_CPU $MEMCACHED -p <port> -U 0 -l 127.0.0.1 -t 1 -m 4096 [-u root]"
    echo "taskset -c $SERVER_CPU $SHARDIS_BIN --port <port> --bind 127.0.0.1 --threads 1 --logtostderr --memcached_port=<port>"
    echo "$lg --fill --keyspace $KEYSPACE --value-size $VALUE_SIZE --protocol memcache --pipeline 16 --connections $CONNECTIONS"
    for workload in "${MC_WORKLOADS[@]}"; do
      echo "$lg ${WORKLOAD[$workload]} --connections $CONNECTIONS --keyspace $KEYSPACE --value-size $VALUE_SIZE --duration $DURATION --seed <round>"
    done
  fi
  if [ "$SKIP_FILL10M" != 1 ]; then
    echo "# the big fill, on a fresh server of each kind, one at a time"
    echo "$lg --fill --keyspace $FILL10M_KEYS --value-size $VALUE_SIZE --pipeline 1 --connections $FILL10M_CONNECTIONS --progress"
  fi
} >"$workdir/commands.txt"

# ---- The report -------------------------------------------------------------------------------
export RESULTS=$results COMMANDS=$workdir/commands.txt WARNINGS=$workdir/warnings
export QUICK ROUNDS DURATION KEYSPACE VALUE_SIZE CONNECTIONS BIG_KEYSPACE BIG_VALUE_SIZE
export FILL10M_KEYS FILL10M_CONNECTIONS SKIP_FILL10M SERVER_CPU CLIENT_CPU NICE
export SKIP_ORDER SKIP_MEMCACHED MC_KEYS_PER_GET BASELINE=${BASELINE_BIN:+$BASELINE_BIN (sha256 $BASELINE_SHA...)}
export MEMCACHED_VERSION=$([ "$SKIP_MEMCACHED" = 1 ] || "$MEMCACHED" -V | sed -n 's/^memcached //p')
export LOAD_START=$load_start LOAD_END=$load_end
export HOST_CPU="$(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
export KERNEL=$(uname -r)
export REDIS_VERSION=$("$REDIS_SERVER" --version | sed -n 's/.* v=\([^ ]*\).*/\1/p')
export SHARDIS_REV
"$PYTHON" - >"$REPORT" <<'EOF'
import math, os, statistics

env = os.environ
rows = []  # dicts of key=value
with open(env["RESULTS"]) as f:
    for line in f:
        rows.append(dict(kv.split("=", 1) for kv in line.split()))

def values(workload, server, key):
    return [float(r[key]) for r in rows
            if r["workload"] == workload and r["server"] == server and key in r]

def med(workload, server, key):
    v = values(workload, server, key)
    return statistics.median(v) if v else math.nan

def num(x, digits=0):
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "n/a"
    return f"{x:,.{digits}f}"

def ratio(a, b):
    return a / b if b and not math.isnan(a) and not math.isnan(b) else math.nan

def rx(x):
    return "n/a" if math.isnan(x) else f"{x:.2f}x"

NAMES = {"set_p1": "SET P1", "get_p1": "GET P1", "set_p16": "SET P16", "get_p16": "GET P16",
         "mix_p1": "1:10 SET:GET P1", "get16k_p1": "GET 16 KiB P1",
         "mc_set_p1": "memcached set P1", "mc_get_p1": "memcached get P1",
         "mc_set_p16": "memcached set P16", "mc_get_p16": "memcached get P16",
         "mc_mget_p1": f"memcached get of {env['MC_KEYS_PER_GET']} keys P1"}
FIGURES = [("ops_per_s", "throughput (ops/s)", 0),
           ("ops_per_server_cpu_s", "ops per server CPU-second", 0),
           ("p50_us", "p50 latency (µs)", 1),
           ("p99_us", "p99 latency (µs)", 1),
           ("p999_us", "p99.9 latency (µs)", 1),
           ("server_cpu_util", "server CPU utilisation", 2),
           ("client_cpu_util", "load generator CPU utilisation", 2)]
quick = env["QUICK"] == "1"
keyspace, big = int(env["KEYSPACE"]), int(env["BIG_KEYSPACE"])
out = []
p = out.append

p("# shardis vs redis-server: benchmark suite" + (" (QUICK=1 smoke run: figures are not meaningful)" if quick else ""))
p("")
p(f"- shardis {env['SHARDIS_REV']}; redis-server {env['REDIS_VERSION']}; host {env['HOST_CPU']}, kernel {env['KERNEL']}")
p(f"- servers pinned to CPU {env['SERVER_CPU']}, load generator to CPU {env['CLIENT_CPU']}"
  + (f", their session's scheduler autogroup at nice {env['NICE']}" if env["NICE"] else "") + "; "
  f"load average at start {env['LOAD_START']}, at end {env['LOAD_END']}")
p(f"- {env['ROUNDS']} round(s), medians shown; within a round the servers take turns per workload "
  f"(the order rotates); {env['DURATION']} s per workload and server")
p(f"- workloads: {keyspace:,} keys of {env['VALUE_SIZE']} bytes filled first, {env['CONNECTIONS']} connections, "
  f"uniform random keys; 16 KiB GETs over {big:,} keys of {env['BIG_VALUE_SIZE']} bytes on restarted servers")
p("- ops per server CPU-second = replies in the interval / server utime+stime over the same interval "
  "(all threads, /proc/PID/stat); ratios are shardis/redis (for latency, lower is better)")
p("")

# ---- Targets
def target_rows():
    t = []
    def add(name, need, value, ok, extra=""):
        t.append((name, need, value, ok, extra))
    for w in ("set_p1", "get_p1"):
        r = ratio(med(w, "shardis", "ops_per_server_cpu_s"), med(w, "redis", "ops_per_server_cpu_s"))
        add(f"ops per server CPU-s, {NAMES[w]}", "≥ 1.40x redis", rx(r), r >= 1.4)
    for w in ("set_p16", "get_p16"):
        for key, label in (("ops_per_s", "throughput"), ("ops_per_server_cpu_s", "ops per server CPU-s")):
            r = ratio(med(w, "shardis", key), med(w, "redis", key))
            add(f"{label}, {NAMES[w]}", "≥ 2.00x redis", rx(r), r >= 2.0)
    r = ratio(med("get16k_p1", "shardis", "ops_per_server_cpu_s"), med("get16k_p1", "redis", "ops_per_server_cpu_s"))
    add("ops per server CPU-s, GET 16 KiB P1", "≥ 1.30x redis", rx(r), r >= 1.3)
    r = ratio(med("memory", "shardis", "rss_kb") / med("memory", "shardis", "keys"),
              med("memory", "redis", "rss_kb") / med("memory", "redis", "keys"))
    add(f"RSS per key, {keyspace:,} keys of {env['VALUE_SIZE']} B", "≤ 0.70x redis", rx(r), r <= 0.7)
    for w in ("set_p1", "get_p1", "set_p16", "get_p16"):
        r = ratio(med(w, "shardis-t2", "ops_per_server_cpu_s"), med(w, "shardis", "ops_per_server_cpu_s"))
        add(f"ops per server CPU-s, --threads 2 / --threads 1, {NAMES[w]}", "≥ 0.85x", rx(r), r >= 0.85)
    if env["SKIP_ORDER"] != "1":
        for w in ("set_p16", "get_p16"):
            r = ratio(med(w, "order-t2", "ops_per_s"), med(w, "order-t2-relaxed", "ops_per_s"))
            add(f"throughput, --threads 2, Redis' order / relaxed order, {NAMES[w]}", "≥ 0.85x",
                rx(r), r >= 0.85)
    if env["SKIP_MEMCACHED"] != "1":
        for w in ("mc_set_p1", "mc_get_p1", "mc_set_p16", "mc_get_p16", "mc_mget_p1"):
            r = ratio(med(w, "shardis-mc", "ops_per_server_cpu_s"), med(w, "memcached", "ops_per_server_cpu_s"))
            add(f"ops per server CPU-s, {NAMES[w]}", "≥ 1.00x memcached", rx(r), r >= 1.0)
    if env["SKIP_FILL10M"] != "1":
        # Judged in the server: its slowest SET and its longest loop cycle. What the client sees
        # on top of that comes from outside the server's code (compare the control run).
        m = max(med("fill10m_server", "shardis", "slowlog_max_us"),
                med("fill10m_server", "shardis", "eventloop_max_us")) / 1000
        mr = med("fill10m_server", "redis", "slowlog_max_us") / 1000
        c, cr = med("fill10m", "shardis", "max_us") / 1000, med("fill10m", "redis", "max_us") / 1000
        cc = med("fill10m_control", "shardis", "max_us") / 1000
        add(f"max single-SET latency, fill of {int(env['FILL10M_KEYS']):,} keys", "< 5 ms",
            f"{m:.2f} ms in the server (redis-server {mr:.2f} ms); at the client {c:.2f} ms "
            f"(redis-server {cr:.2f} ms; {cc:.2f} ms without growth)", m < 5)
    else:
        t.append((f"max single-SET latency, fill of {int(env['FILL10M_KEYS']):,} keys", "< 5 ms",
                  "not run (SKIP_FILL10M=1)", None, ""))
    return t

p("## Targets")
p("")
p("| target | needs | measured | result |")
p("| --- | --- | ---: | --- |")
for name, need, value, ok, _ in target_rows():
    p(f"| {name} | {need} | {value} | {'not run' if ok is None else ('met' if ok else 'MISSED')} |")
p("")

# ---- Side by side
def table(workloads, a, b, a_label, b_label, ratio_label, figures=FIGURES):
    p(f"| workload | figure | {a_label} | {b_label} | {ratio_label} |")
    p("| --- | --- | ---: | ---: | ---: |")
    for w in workloads:
        for i, (key, label, digits) in enumerate(figures):
            va, vb = med(w, a, key), med(w, b, key)
            r = "" if key.endswith("_util") else rx(ratio(vb, va))
            p(f"| {NAMES[w] if i == 0 else ''} | {label} | {num(va, digits)} | {num(vb, digits)} | {r} |")

p("## shardis --threads 1 vs redis-server")
p("")
table(["set_p1", "get_p1", "set_p16", "get_p16", "mix_p1", "get16k_p1"], "redis", "shardis",
      "redis-server", "shardis", "shardis/redis")
p("")
measured = [r for r in rows if "server_cpu_util" in r and r["workload"] in NAMES]
bound = [r for r in measured if float(r["client_cpu_util"]) > 0.9 and float(r["server_cpu_util"]) < 0.9]
starved = [r for r in measured if float(r["client_cpu_util"]) <= 0.9 and float(r["server_cpu_util"]) < 0.9]
label = lambda r: f"{NAMES[r['workload']]} on {r['server']}" + (f" (round {r['round']})" if env["ROUNDS"] != "1" else "")
if bound:
    p("The load generator was the bottleneck (its CPU > 90% busy, the server's < 90%) in: " +
      ", ".join(map(label, bound)) + ". Throughput there is the load generator's limit.")
else:
    p("The load generator was never the bottleneck (never > 90% busy while the server was < 90% busy).")
if starved:
    p("")
    p(f"Neither the server nor the load generator was 90% busy in {len(starved)} of {len(measured)} "
      "measurements: other processes took the CPUs (see \"other load\" below), so throughput and "
      "latency there say more about the machine than about the server.")
p("")

# ---- Memory
p(f"## Memory after filling {keyspace:,} keys of {env['VALUE_SIZE']} bytes")
p("")
p("| figure | redis-server | shardis | shardis/redis |")
p("| --- | ---: | ---: | ---: |")
def memrow(label, f, digits):
    a, b = f("redis"), f("shardis")
    p(f"| {label} | {num(a, digits)} | {num(b, digits)} | {rx(ratio(b, a))} |")
keys = lambda s: med("memory", s, "keys")
memrow("keys", keys, 0)
memrow("used_memory (MiB)", lambda s: med("memory", s, "used_memory") / 2**20, 1)
memrow("used_memory per key (bytes)", lambda s: med("memory", s, "used_memory") / keys(s), 1)
memrow("RSS (MiB)", lambda s: med("memory", s, "rss_kb") / 1024, 1)
memrow("RSS per key (bytes)", lambda s: med("memory", s, "rss_kb") * 1024 / keys(s), 1)
memrow("RSS growth over the fill per key (bytes)",
       lambda s: (med("memory", s, "rss_kb") - med("memory", s, "rss_before_kb")) * 1024 / keys(s), 1)
p("")

# ---- Threads
p("## shardis --threads 2 vs --threads 1 (both threads on the one server CPU)")
p("")
p("With two shards on one core about half of the requests hop to the other shard, so the ratio of "
  "ops per server CPU-second is the price of the hop.")
p("")
table(["set_p1", "get_p1", "set_p16", "get_p16"], "shardis", "shardis-t2",
      "--threads 1", "--threads 2", "2 / 1", FIGURES[:5])
p("")

# ---- Pipeline order
if env["SKIP_ORDER"] != "1":
    p("## Pipeline order: Redis' order (the default) against --pipeline_order=relaxed")
    p("")
    p("Both on the one server CPU. In Redis' order a pipeline's runs of same-shard commands run one "
      "after another (docs/pipelines.md); relaxed sends one hop per shard at once, so other "
      "clients may see a pipeline's writes out of order. --threads 1 (above) has no hops.")
    base = env.get("BASELINE", "")
    if base:
        p("")
        p(f"baseline: {base}")
    p("")
    for t in ("2", "4"):
        p(f"### --threads {t}")
        p("")
        table(["set_p16", "get_p16"], f"order-t{t}-relaxed", f"order-t{t}",
              "relaxed", "Redis' order", "order / relaxed", FIGURES[:5])
        if base:
            p("")
            table(["set_p16", "get_p16"], f"baseline-t{t}", f"order-t{t}",
                  "baseline", "this build", "this / baseline", FIGURES[:5])
        p("")

# ---- memcached
if env["SKIP_MEMCACHED"] != "1":
    p(f"## memcached text protocol: memcached {env['MEMCACHED_VERSION']} (-t 1) vs shardis --threads 1")
    p("")
    table(["mc_set_p1", "mc_get_p1", "mc_set_p16", "mc_get_p16", "mc_mget_p1"], "memcached",
          "shardis-mc", "memcached", "shardis", "shardis/memcached")
    p("")

# ---- Big fill
fk = int(env["FILL10M_KEYS"])
p(f"## Fill of {fk:,} keys, pipeline 1, {env['FILL10M_CONNECTIONS']} connections")
p("")
if env["SKIP_FILL10M"] == "1":
    p("Not run (SKIP_FILL10M=1).")
else:
    p("| figure | redis-server | shardis | shardis/redis |")
    p("| --- | ---: | ---: | ---: |")
    for key, label, digits, scale in (("max_us", "max latency (ms)", 2, 1000), ("p9999_us", "p99.99 latency (ms)", 3, 1000),
                                      ("p999_us", "p99.9 latency (ms)", 3, 1000), ("over_1ms", "SETs slower than 1 ms", 0, 1),
                                      ("over_5ms", "SETs slower than 5 ms", 0, 1), ("max_at_s", "slowest SET sent at (s)", 1, 1),
                                      ("ops_per_s", "throughput (ops/s)", 0, 1),
                                      ("ops_per_server_cpu_s", "ops per server CPU-second", 0, 1),
                                      ("server_cpu_util", "server CPU utilisation", 2, 1),
                                      ("server_cpu_others_util", "other load on server CPU", 2, 1)):
        a, b = med("fill10m", "redis", key) / scale, med("fill10m", "shardis", key) / scale
        r = "" if key in ("max_at_s", "over_1ms", "over_5ms") or key.endswith("_util") else rx(ratio(b, a))
        p(f"| {label} | {num(a, digits)} | {num(b, digits)} | {r} |")
    for w, key, label, digits, scale in (
            ("fill10m_server", "slowlog_max_us", "in the server: slowest SET (SLOWLOG, ms)", 2, 1000),
            ("fill10m_server", "slowlog_entries", "in the server: SETs slower than 1 ms (SLOWLOG)", 0, 1),
            ("fill10m_server", "eventloop_max_us", "in the server: longest event-loop cycle (ms)", 2, 1000),
            ("fill10m_control", "max_us", "control, no growth: max latency (ms)", 2, 1000),
            ("fill10m_control", "over_5ms", "control, no growth: SETs slower than 5 ms", 0, 1)):
        a, b = med(w, "redis", key) / scale, med(w, "shardis", key) / scale
        p(f"| {label} | {num(a, digits)} | {num(b, digits)} | |")
    p("")
    p("The latency at the client includes what happens outside the server's code: the kernel's "
      "network stack, scheduling of both processes and the virtual machine. The control run "
      "repeats the fill's duration with SETs that overwrite the filled keys, so the table does "
      "not grow: its worst case is what the machine adds without growth. redis-server 7.0 has no "
      "event-loop figure (n/a).")
p("")

# ---- Load generator cost
p("## Load generator cost")
p("")
p("CPU per operation of the server and of the load generator, and the share of each one's CPU "
  "that other processes took during the measurement (/proc/stat busy time minus our own; medians "
  "over rounds). The load generator is cheap when its column is below the server's.")
p("")
p("| workload | server | server CPU µs/op | load generator CPU µs/op | other load on server CPU | other load on load generator CPU |")
p("| --- | --- | ---: | ---: | ---: | ---: |")
for w in NAMES:
    for s in ("redis", "shardis", "shardis-t2", "memcached", "shardis-mc"):
        mine = [r for r in rows if r["workload"] == w and r["server"] == s]
        if not mine:
            continue
        m = lambda f: statistics.median([f(r) for r in mine])
        cpu = m(lambda r: float(r["server_cpu_s"]) / float(r["ops"]) * 1e6)
        lgc = m(lambda r: float(r["client_cpu_s"]) / float(r["ops"]) * 1e6)
        noise = lambda key: num(m(lambda r: float(r.get(key, "nan"))), 2)
        p(f"| {NAMES[w]} | {s} | {cpu:.2f} | {lgc:.2f} | {noise('server_cpu_others_util')} | "
          f"{noise('client_cpu_others_util')} |")
p("")

if os.path.exists(env["WARNINGS"]):
    p("## Warnings")
    p("")
    for line in open(env["WARNINGS"]):
        p(f"- {line.strip()}")
    p("")

p("## Commands")
p("")
p("```")
p("bash benchmarks/run.sh   # " + " ".join(f"{k}={env[k]}" for k in ("QUICK", "ROUNDS", "SKIP_FILL10M", "DURATION", "NICE") if env[k]))
p(open(env["COMMANDS"]).read().rstrip())
p("```")
p("")
p("<details><summary>Every measurement (load generator output)</summary>")
p("")
p("```")
with open(env["RESULTS"]) as f:
    p(f.read().rstrip())
p("```")
p("</details>")
print("\n".join(out))
EOF
rm -f "$workdir/shardis" "$workdir/loadgen" "$workdir/baseline"   # the logs and raw results stay
cat "$REPORT"
note "report written to $REPORT; logs and raw results in $workdir"
