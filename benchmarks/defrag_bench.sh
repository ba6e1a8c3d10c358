#!/usr/bin/env bash
# Active defragmentation (issue 20): the churn workload on redis-server, shardis --threads 1 and
# --threads 2 (and Valkey when VALKEY_BIN is given) in one run: RSS over time after
# `activedefrag yes` until it settles, the ratio reached, the time to reach 1.25, the longest
# single command during the walk, and GET/SET P16 throughput while walks run against the same
# server with activedefrag off.
#
#   bash benchmarks/defrag_bench.sh                       # ~3-4 min per server
#   VALKEY_BIN=/path/to/valkey-server bash benchmarks/defrag_bench.sh
#   SCALE=20000 MAX_WAIT=8 SETTLE=3 SLICE=0.5 ROUNDS=1 bash benchmarks/defrag_bench.sh  # smoke
#
# For each server, two passes, each on a fresh server in an empty directory of its own, pinned
# to SERVER_CPU (taskset; the clients to CLIENT_CPU):
# 1. Memory. KEYSPACE keys of 100 B for the load (loadgen --fill), then the churn
#    (defrag_probe.py churn | redis-cli --pipe) with activedefrag off, then defrag_probe.py walk:
#    CONFIG SET activedefrag yes (Debian's redis-server refuses it: its system jemalloc lacks the
#    defrag hint; the run says so and goes on without) and INFO once a second until settled or
#    MAX_WAIT seconds, with a pipeline-1 GET probe timing every reply meanwhile.
# 2. Throughput. The same fill and churn, activedefrag yes, then alternating SET P16 and GET P16
#    loads of SLICE seconds (loadgen, CONNECTIONS connections, over the KEYSPACE keys), each
#    labelled by INFO's active_defrag_running and active_defrag_hits before and after it, until
#    a SET and a GET slice ran settled (or MAX_WAIT); then ROUNDS rounds of a SET and a GET
#    slice with activedefrag yes and the same with activedefrag no, in turn. Without
#    activedefrag, only the latter.
# Every active-defrag-* setting stays at Redis' default unless DEFRAG_SETTINGS gives some
# (e.g. "active-defrag-ignore-bytes 1mb active-defrag-threshold-lower 5"), set with CONFIG SET
# on every server right after it starts.
#
# Prints a markdown report to stdout (and REPORT when given). Progress goes to stderr.
#
# Environment (defaults in parentheses): SCALE (1000000: the churn's first fill), MAX_WAIT (90),
#   SETTLE (10), SLICE (2), ROUNDS (3), CONNECTIONS (50), KEYSPACE (10000), WORKDIR (/tmp),
#   SERVER_CPU, CLIENT_CPU (the first and second CPU this shell may use), NICE (unset, see
#   lib.sh), KEEP (0; 1 keeps the work directory), SHARDIS_BIN (build/release/shardis, built if
#   not given), LOADGEN (build/release/benchmarks/loadgen), REDIS_SERVER, VALKEY_BIN,
#   DEFRAG_SETTINGS (none), SERVERS (a subset of "redis shardis1 shardis2 valkey" to run;
#   all of them, valkey when VALKEY_BIN is given), REPORT.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

PYTHON=/usr/bin/python3
SCALE=${SCALE:-1000000}
MAX_WAIT=${MAX_WAIT:-90}
SETTLE=${SETTLE:-10}
SLICE=${SLICE:-2}
ROUNDS=${ROUNDS:-3}
CONNECTIONS=${CONNECTIONS:-50}
KEYSPACE=${KEYSPACE:-10000}
NICE=${NICE:-}
REDIS_SERVER=${REDIS_SERVER:-$(command -v redis-server || true)}
VALKEY_BIN=${VALKEY_BIN:-}
DEFRAG_SETTINGS=${DEFRAG_SETTINGS:-}
PROBE=benchmarks/defrag_probe.py

source benchmarks/lib.sh
require redis-cli taskset "$PYTHON" "$REDIS_SERVER"
[ -z "$VALKEY_BIN" ] || require "$VALKEY_BIN"
pick_cpus

bench_binaries defrag loadgen
source benchmarks/servers.sh
cleanup() { stop_server; [ "${KEEP:-0}" = 1 ] || rm -rf "$workdir"; }
trap cleanup EXIT
apply_nice cleanup
started=$SECONDS
meta=$workdir/meta.txt walks=$workdir/walks.txt slices=$workdir/slices.txt
: >"$walks"
: >"$slices"

# start SERVER: redis | valkey | shardis1 | shardis2, fresh, in a new directory, no save.
start() {
  local server=$1 dir cmd
  dir=$(mktemp -d "$workdir/$server.XXXXXX")
  port=$(free_port)
  case "$server" in
    redis|valkey)
      local bin=$REDIS_SERVER
      [ "$server" = redis ] || bin=$VALKEY_BIN
      cmd=(taskset -c "$SERVER_CPU" "$bin" --port "$port" --bind 127.0.0.1 --save '' \
           --appendonly no --dir "$dir") ;;
    shardis*)
      cmd=(taskset -c "$SERVER_CPU" "$workdir/shardis.bin" --port "$port" --bind 127.0.0.1 \
           --threads "${server#shardis}" --save= --logtostderr) ;;
  esac
  echo "cmd $server: $(printf '%q ' "${cmd[@]}")" >>"$meta"
  (cd "$dir" && exec "${cmd[@]}") >>"$workdir/$server.log" 2>&1 &
  server_pid=$!
  if ! wait_for_pong; then
    echo "FAIL: $server did not start; tail of its log:" >&2
    tail -20 "$workdir/$server.log" >&2
    exit 1
  fi
  local settings i
  read -r -a settings <<<"$DEFRAG_SETTINGS"
  for ((i = 0; i < ${#settings[@]}; i += 2)); do
    redis-cli -p "$port" config set "${settings[i]}" "${settings[i + 1]}" | grep -q '^OK' || {
      echo "FAIL: $server: CONFIG SET ${settings[i]} ${settings[i + 1]} refused" >&2; exit 1; }
  done
}

info_field() { redis-cli -p "$port" info "$1" | tr -d '\r' | sed -n "s/^$2://p"; }

# fill_and_churn SERVER: the load's keys, then the churn; stops the run on any error reply.
fill_and_churn() {
  local out
  taskset -c "$CLIENT_CPU" "$workdir/loadgen.bin" --port "$port" --fill --keyspace "$KEYSPACE" \
    --value-size 100 --pipeline 16 >/dev/null
  out=$(taskset -c "$CLIENT_CPU" "$PYTHON" "$PROBE" churn --scale "$SCALE" |
    taskset -c "$CLIENT_CPU" redis-cli -p "$port" --pipe 2>&1 | tail -1)
  case "$out" in
    *"errors: 0,"*) ;;
    *) echo "FAIL: the churn on $1: $out" >&2; exit 1 ;;
  esac
  # What lives: the odd half of the first fill and the second fill, less a random half, the third
  # fill, and the load's keys.
  local live=$((2 * (SCALE / 2))) keys
  live=$((live - live / 2 + SCALE * 3 / 10 + KEYSPACE))
  keys=$(redis-cli -p "$port" dbsize)
  [ "$keys" = "$live" ] || { echo "FAIL: $1 holds $keys keys after the churn, not $live" >&2; exit 1; }
  note "$1: churn done, $keys keys"
}

# memory_pass SERVER: pass 1 (see the top).
memory_pass() {
  local server=$1 empty out
  start "$server"
  empty=$(info_field memory used_memory_rss)
  fill_and_churn "$server"
  out=$(taskset -c "$CLIENT_CPU" "$PYTHON" "$PROBE" walk "$port" --activedefrag \
    --empty-rss "$empty" --max "$MAX_WAIT" --settle "$SETTLE" \
    --rows "$workdir/rows-$server.txt" 2>"$workdir/walk-$server.err") ||
    { echo "FAIL: $server: the walk's probe failed:" >&2; cat "$workdir/walk-$server.err" >&2; exit 1; }
  echo "server=$server $out" >>"$walks"
  if grep -q refused "$workdir/walk-$server.err"; then
    echo "${server}_refusal=$(sed 's/.*refused: //' "$workdir/walk-$server.err")" >>"$meta"
  fi
  note "$server: ratio $(field ratio_start "$out") -> $(field ratio_end "$out") in" \
    "$(field t_end "$out") s, longest probe GET during the walk $(field probe_max_walk_us "$out") us"
  stop_server
}

# slice SERVER DEFRAG LOAD: one load of SLICE seconds, with the walk state before and after.
slice() {
  local server=$1 defrag=$2 load=$3 ratio=1:0 run0 hits0 out
  [ "$load" = set ] || ratio=0:1
  run0=$(info_field memory active_defrag_running)
  hits0=$(info_field stats active_defrag_hits)
  out=$(taskset -c "$CLIENT_CPU" "$workdir/loadgen.bin" --port "$port" --server-pid "$server_pid" \
    --connections "$CONNECTIONS" --pipeline 16 --ratio "$ratio" --keyspace "$KEYSPACE" \
    --value-size 100 --duration "$SLICE")
  last_slice="server=$server defrag=$defrag load=$load t=$((SECONDS - pass_start)) run0=$run0"
  last_slice+=" run1=$(info_field memory active_defrag_running) hits0=$hits0"
  last_slice+=" hits1=$(info_field stats active_defrag_hits) $out"
  echo "$last_slice" >>"$slices"
}

# settled_slice: true when the last slice ran with no walk at either end and nothing moved.
settled_slice() {
  [ "$(field run0 "$last_slice")" = 0 ] && [ "$(field run1 "$last_slice")" = 0 ] &&
    [ "$(field hits0 "$last_slice")" = "$(field hits1 "$last_slice")" ]
}

# load_pass SERVER: pass 2 (see the top).
load_pass() {
  local server=$1 settled=0 defrag=yes load
  start "$server"
  fill_and_churn "$server"
  pass_start=$SECONDS
  if redis-cli -p "$port" config set activedefrag yes | grep -q '^OK'; then
    # While the walks run, and until a SET and a GET slice ran settled after them.
    while [ "$settled" -lt 2 ] && [ $((SECONDS - pass_start)) -lt "$MAX_WAIT" ]; do
      for load in set get; do
        slice "$server" on "$load"
        if settled_slice; then settled=$((settled + 1)); else settled=0; fi
      done
    done
  else
    defrag=no
  fi
  # Settled: on and off in turn, so that the machine's drift weighs on both alike.
  for _ in $(seq 1 "$ROUNDS"); do
    if [ "$defrag" = yes ]; then
      for load in set get; do slice "$server" on "$load"; done
      redis-cli -p "$port" config set activedefrag no >/dev/null
    fi
    for load in set get; do slice "$server" off "$load"; done
    [ "$defrag" = no ] || redis-cli -p "$port" config set activedefrag yes >/dev/null
  done
  note "$server: $(grep -c "server=$server " "$slices") load slices"
  stop_server
}

if [ -n "${SERVERS:-}" ]; then
  read -r -a servers <<<"$SERVERS"
else
  servers=(redis shardis1 shardis2)
  [ -z "$VALKEY_BIN" ] || servers+=(valkey)
fi
{
  echo "rev=$SHARDIS_REV"
  echo "scale=$SCALE"
  echo "max_wait=$MAX_WAIT"
  echo "settle=$SETTLE"
  echo "slice=$SLICE"
  echo "rounds=$ROUNDS"
  echo "connections=$CONNECTIONS"
  echo "keyspace=$KEYSPACE"
  echo "server_cpu=$SERVER_CPU"
  echo "client_cpu=$CLIENT_CPU"
  echo "loadavg_start=$(cut -d' ' -f1-3 /proc/loadavg)"
  echo "defrag_settings=${DEFRAG_SETTINGS:-none, all at their defaults}"
  echo "cmd churn: $PYTHON $PROBE churn --scale $SCALE | redis-cli -p PORT --pipe"
  echo "cmd load: loadgen --port PORT --connections $CONNECTIONS --pipeline 16" \
    "--ratio 1:0|0:1 --keyspace $KEYSPACE --value-size 100 --duration $SLICE"
} >"$meta"
for server in "${servers[@]}"; do
  memory_pass "$server"
  load_pass "$server"
done
echo "loadavg_end=$(cut -d' ' -f1-3 /proc/loadavg)" >>"$meta"

"$PYTHON" "$PROBE" report "$walks" "$slices" "$meta" | tee ${REPORT:+"$REPORT"}
