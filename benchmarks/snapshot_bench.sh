#!/usr/bin/env bash
# Snapshots (issue 14): SAVE, BGSAVE, the load at start, the memory a BGSAVE costs under writes and
# the latency of writes during BGSAVE: shardis --threads 2 against the Debian redis-server holding
# the same data, one server at a time, in one run.
#
#   bash benchmarks/snapshot_bench.sh              # 10,000,000 keys: ~20-30 min, up to ~6 GB of
#                                                  # RAM and ~3 GB of disk under /tmp
#   N=1000000 bash benchmarks/snapshot_bench.sh    # a quick run: ~3 min
#
# For each server (SERVERS, redis-server first), pinned to SERVER_CPU (taskset, with its forked
# child), the load generator and the probe (snapshot_probe.py) pinned to CLIENT_CPU:
#   1. starts it in an empty directory of its own and fills N keys of VALUE_SIZE bytes (load
#      generator --fill, pipeline 16, 50 connections; checks DBSIZE);
#   2. SAVE: the wall time of the command; the size of dump.rdb;
#   3. BGSAVE on the idle server: from BGSAVE to rdb_bgsave_in_progress:0 (INFO persistence
#      polled every 10 ms);
#   4. stops it and starts it again on that file: the load time is from the start of the process
#      to the first PONG (PING every 10 ms; -LOADING does not count), and the server's own figure
#      from its log; checks DBSIZE and a value;
#   5. memory: a writer rewrites random existing keys at full speed (SET, pipeline WRITER_PIPELINE,
#      CONNECTIONS connections); after 1 s, BGSAVE; VmRSS of the server plus its forked children
#      (redis-server's saving child) sampled every 10 ms: peak during the BGSAVE / the last sample
#      before it;
#   6. latency: SET pipeline 1 on CONNECTIONS connections for LOAD_S seconds without a save, then
#      for as long again with BGSAVEs back to back; throughput and p99 of each;
#   7. (CROSS_LOAD=1) redis-server starts on shardis' dump.rdb: the file is a Redis RDB file.
# Prints a markdown report (targets, side by side table, commands, raw lines) to stdout and to
# REPORT when given; progress to stderr. Every server it started is stopped on exit, and the RDB
# files are deleted (KEEP=1 keeps the work directory's files).
#
# The save schedule is off on both servers (redis-server --save ''; shardis: CONFIG SET save "",
# as soon as it answers),
# so that no save but ours runs; the script checks rdb_saves around the runs without BGSAVE.
#
# Environment (defaults in parentheses):
#   N (10000000), VALUE_SIZE (128), RANDOM_VALUE (1: values of pseudo-random letters and digits,
#     which RDB's LZF compression cannot shrink; 0: 'x' repeated, which it shrinks ~10 times)
#   SHARDIS_THREADS (2), CONNECTIONS (50), WRITER_PIPELINE (16)
#   LOAD_S (the longer of 10 s and the BGSAVE under the writer of step 5, per server)
#   CROSS_LOAD (1), SERVERS ("redis shardis"), KEEP (0), REPORT (unset)
#   SERVER_CPU, CLIENT_CPU (the first and second CPU this shell may use)
#   NICE (unset): e.g. NICE=-10 raises this run's scheduler autogroup, as in run.sh (root)
#   SHARDIS_BIN (build/release/shardis, built if not given), LOADGEN (build/release/benchmarks/
#   loadgen, built unless both are given), REDIS_SERVER (redis-server on PATH)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

PYTHON=/usr/bin/python3
N=${N:-10000000}
VALUE_SIZE=${VALUE_SIZE:-128}
RANDOM_VALUE=${RANDOM_VALUE:-1}
SHARDIS_THREADS=${SHARDIS_THREADS:-2}
CONNECTIONS=${CONNECTIONS:-50}
WRITER_PIPELINE=${WRITER_PIPELINE:-16}
LOAD_S=${LOAD_S:-}
CROSS_LOAD=${CROSS_LOAD:-1}
SERVERS=${SERVERS:-"redis shardis"}
KEEP=${KEEP:-0}
NICE=${NICE:-}
REDIS_SERVER=${REDIS_SERVER:-$(command -v redis-server || true)}

source benchmarks/lib.sh
require redis-cli taskset "$PYTHON" "$REDIS_SERVER"
"$PYTHON" -c 'import redis' 2>/dev/null || { echo "missing redis-py: bash scripts/install-deps.sh test" >&2; exit 1; }
pick_cpus

if [ -z "${SHARDIS_BIN:-}" ]; then
  bash scripts/build.sh release shardis loadgen >&2
  SHARDIS_BIN=build/release/shardis
elif [ -z "${LOADGEN:-}" ]; then
  bash scripts/build.sh release loadgen >&2
fi
LOADGEN=${LOADGEN:-build/release/benchmarks/loadgen}

workdir=$(mktemp -d /tmp/shardis-snapshot.XXXXXX)
# Run copies, so that a rebuild in the tree during the run cannot change what is measured.
cp "$SHARDIS_BIN" "$workdir/shardis.bin"
cp "$LOADGEN" "$workdir/loadgen.bin"
SHARDIS_REV="$(git rev-parse --short HEAD 2>/dev/null || echo unknown) (binary sha256 $(sha256sum "$SHARDIS_BIN" | cut -c1-12)...)"
SHARDIS_SRC=$SHARDIS_BIN
SHARDIS_BIN=$workdir/shardis.bin
source benchmarks/servers.sh

writer_pid=
cleanup() {
  [ -z "$writer_pid" ] || kill -TERM "$writer_pid" 2>/dev/null || true
  stop_server
  [ "$KEEP" = 1 ] || rm -f "$workdir"/*/dump.rdb "$workdir"/*/temp-*.rdb "$workdir/shardis.bin" "$workdir/loadgen.bin"
}
trap cleanup EXIT
apply_nice cleanup

started=$SECONDS
results=$workdir/results.txt
: >"$results"
record() { echo "server=$kind step=$1 $2" >>"$results"; }
fail() {
  echo "FAIL ($kind): $1" >&2
  echo "server: ${CMD[$kind]} (in ${dir:-?})" >&2
  tail -20 "$workdir/$kind.log" >&2
  KEEP=1
  echo "work directory kept: $workdir" >&2
  exit 1
}

value_flag=()
[ "$RANDOM_VALUE" = 1 ] && value_flag=(--random-value)
loadgen_cmd() {  # the load generator's arguments after the port; the report prints these
  echo "--keyspace $N --value-size $VALUE_SIZE ${value_flag[*]} --connections $CONNECTIONS $*"
}
# loadgen STEP ARGS...: runs the load generator against the server; checks and records its line.
loadgen() {
  local step=$1 out
  shift
  # shellcheck disable=SC2046  # loadgen_cmd is a list of arguments
  out=$(taskset -c "$CLIENT_CPU" "$workdir/loadgen.bin" --port "$port" --server-pid "$server_pid" \
    $(loadgen_cmd "$@") 2>"$workdir/loadgen.err") || fail "load generator failed in $step: $(cat "$workdir/loadgen.err")"
  check_loadgen "$step" "$out"
}
check_loadgen() {  # STEP OUT
  alive "$server_pid" || fail "the server died during $1"
  [[ " $2 " == *" errors=0 "* ]] || fail "error replies during $1: $2"
  record "$1" "$2"
  LAST=$2
}
probe() {  # snapshot_probe.py ARGS: records its line as step $1's
  local step=$1 out
  shift
  out=$(taskset -c "$CLIENT_CPU" "$PYTHON" benchmarks/snapshot_probe.py "$@") || fail "$step: snapshot_probe.py $*"
  record "$step" "$out"
  LAST=$out
}
info_field() { redis-cli -p "$port" info persistence | tr -d '\r' | sed -n "s/^$1://p"; }
check_data() {  # after a fill or a load: DBSIZE and the length of the last key's value
  local n len
  n=$(redis-cli -p "$port" dbsize)
  [ "$n" = "$N" ] || fail "DBSIZE is $n after $1, expected $N"
  len=$(redis-cli -p "$port" strlen "$(printf 'key:%012d' $((N - 1)))")
  [ "$len" = "$VALUE_SIZE" ] || fail "STRLEN of the last key is $len after $1, expected $VALUE_SIZE"
}
# restart KIND DIR STEP: starts the server on DIR's dump.rdb and times the load (step STEP).
restart() {
  local lines at
  lines=$(wc -l <"$workdir/$1.log")
  at=$(date +%s.%N)
  launch_server "$1" "$2"
  probe "$3" wait-loaded "$port" "$at"
  at=$(tail -n +$((lines + 1)) "$workdir/$1.log" |
    sed -n 's/.*DB loaded from disk: \([0-9.]*\) seconds.*/\1/p; s/.*Done loading RDB.* in \([0-9.e+-]*\) seconds.*/\1/p' | tail -1)
  sed -i "\$s/\$/ log_load_s=${at:-none}/" "$results"
  LAST="$LAST log_load_s=${at:-none}"
}

note "work directory $workdir; server CPU $SERVER_CPU, client CPU $CLIENT_CPU; N=$N"
load_start=$(cut -d' ' -f1-3 /proc/loadavg)
declare -A LOADS SHOWN_CMD
for kind in $SERVERS; do
  dir=$workdir/$kind
  mkdir -p "$dir"
  # 1. fill
  launch_server "$kind" "$dir"
  probe start wait-loaded "$port" "$(date +%s.%N)"
  no_save_schedule "$port"
  SHOWN_CMD[$kind]=$(sed "s|$SHARDIS_BIN|$SHARDIS_SRC|g; s|$dir|<dir>|g" <<<"${CMD[$kind]}")
  rss0=$(awk '/^VmRSS:/ {print $2}' "/proc/$server_pid/status")
  note "$kind: filling $N keys"
  loadgen fill --fill --pipeline 16
  check_data "the fill"
  record memory "rss_empty_kb=$rss0 rss_kb=$(awk '/^VmRSS:/ {print $2}' "/proc/$server_pid/status")"
  note "$kind: filled at $(field ops_per_s "$LAST") ops/s"

  # 2. SAVE, 3. BGSAVE
  probe save save "$port"
  record file "rdb_bytes=$(stat -c %s "$dir/dump.rdb")"
  note "$kind: SAVE $(field save_s "$LAST") s, $(stat -c %s "$dir/dump.rdb") bytes"
  probe bgsave bgsave "$port" "$server_pid" --before 0.1
  note "$kind: BGSAVE $(field bgsave_s "$LAST") s"

  # 4. the load at start
  stop_server
  restart "$kind" "$dir" load
  note "$kind: loaded in $(field load_s "$LAST") s (its log: $(field log_load_s "$LAST") s)"
  check_data "the load"
  no_save_schedule "$port"

  # 5. memory during BGSAVE under a writer
  taskset -c "$CLIENT_CPU" "$workdir/loadgen.bin" --port "$port" --server-pid "$server_pid" \
    $(loadgen_cmd --ratio 1:0 --pipeline "$WRITER_PIPELINE" --duration 86400) \
    >"$workdir/writer.out" 2>"$workdir/loadgen.err" &
  writer_pid=$!
  probe bgsave_writer bgsave "$port" "$server_pid" --before 1
  rss_line=$LAST
  kill -TERM "$writer_pid"
  wait "$writer_pid" || fail "the writer failed: $(cat "$workdir/loadgen.err")"
  writer_pid=
  check_loadgen writer "$(cat "$workdir/writer.out")"
  note "$kind: BGSAVE under the writer $(field bgsave_s "$rss_line") s, RSS $(field rss_before_kb "$rss_line")" \
    "-> peak $(field rss_peak_kb "$rss_line") kB; writer $(field ops_per_s "$LAST") ops/s"

  # 6. SET P1 without and with BGSAVEs back to back
  load_s=${LOAD_S:-$("$PYTHON" -c "import math; print(max(10, math.ceil($(field bgsave_s "$rss_line"))))")}
  LOADS[$kind]=$load_s
  saves=$(info_field rdb_saves)
  loadgen set_p1 --ratio 1:0 --pipeline 1 --duration "$load_s" --seed 1
  [ "$(info_field rdb_saves)" = "$saves" ] || fail "a save ran during the load without BGSAVE"
  note "$kind: SET P1 for $load_s s: $(field ops_per_s "$LAST") ops/s, p99 $(field p99_us "$LAST") us"
  taskset -c "$CLIENT_CPU" "$workdir/loadgen.bin" --port "$port" --server-pid "$server_pid" \
    $(loadgen_cmd --ratio 1:0 --pipeline 1 --duration "$load_s" --seed 2) \
    >"$workdir/writer.out" 2>"$workdir/loadgen.err" &
  writer_pid=$!
  probe bgsave_loop bgsave "$port" "$server_pid" --before 0.05 --for "$load_s"
  wait "$writer_pid" || fail "the load generator failed: $(cat "$workdir/loadgen.err")"
  writer_pid=
  check_loadgen set_p1_bgsave "$(cat "$workdir/writer.out")"
  note "$kind: SET P1 during BGSAVE: $(field ops_per_s "$LAST") ops/s, p99 $(field p99_us "$LAST") us"
  stop_server

  # 7. redis-server loads shardis' file
  if [ "$kind" = shardis ] && [ "$CROSS_LOAD" = 1 ]; then
    kind=redis
    restart redis "$dir" cross_load
    check_data "loading shardis' dump.rdb into redis-server"
    note "redis-server loaded shardis' dump.rdb in $(field load_s "$LAST") s"
    stop_server
    kind=shardis
  fi
  [ "$KEEP" = 1 ] || rm -f "$dir/dump.rdb"
done
load_end=$(cut -d' ' -f1-3 /proc/loadavg)

# ---- The report ---------------------------------------------------------------------------------
lg="taskset -c $CLIENT_CPU build/release/benchmarks/loadgen --port <port> --server-pid <pid>"
probe_cmd="taskset -c $CLIENT_CPU $PYTHON benchmarks/snapshot_probe.py"
report=$workdir/report.md
{
  echo "shardis $SHARDIS_REV, --threads $SHARDIS_THREADS; $("$REDIS_SERVER" --version | cut -d' ' -f1-3);"
  echo "$(nproc) CPUs ($(lscpu | sed -n 's/^Model name: *//p')), load average $load_start at the start, $load_end at the end."
  echo
  echo '```'
  echo "N=$N VALUE_SIZE=$VALUE_SIZE RANDOM_VALUE=$RANDOM_VALUE SHARDIS_THREADS=$SHARDIS_THREADS CONNECTIONS=$CONNECTIONS WRITER_PIPELINE=$WRITER_PIPELINE${NICE:+ NICE=$NICE} bash benchmarks/snapshot_bench.sh"
  echo "# each server in an empty directory of its own (<dir>), on a free port, from a copy of its binary"
  for k in $SERVERS; do echo "${SHOWN_CMD[$k]}"; done
  echo "redis-cli -p <port> config set save ''"
  echo "$lg $(loadgen_cmd --fill --pipeline 16)"
  echo "$probe_cmd save <port>                      # SAVE"
  echo "$probe_cmd bgsave <port> <pid> --before 0.1 # BGSAVE, idle"
  echo "# stop (SHUTDOWN NOSAVE), start again on <dir>/dump.rdb:"
  echo "$probe_cmd wait-loaded <port> <unix time of the start>"
  echo "$lg $(loadgen_cmd --ratio 1:0 --pipeline "$WRITER_PIPELINE" --duration 86400) &  # the writer, stopped by SIGTERM after:"
  echo "$probe_cmd bgsave <port> <pid> --before 1"
  echo "$lg $(loadgen_cmd --ratio 1:0 --pipeline 1 --duration "<LOAD_S>" --seed 1)"
  echo "$lg $(loadgen_cmd --ratio 1:0 --pipeline 1 --duration "<LOAD_S>" --seed 2) &"
  echo "$probe_cmd bgsave <port> <pid> --before 0.05 --for <LOAD_S>"
  for k in $SERVERS; do echo "# LOAD_S for $k: ${LOADS[$k]}"; done
  [ "$CROSS_LOAD" != 1 ] || echo "# then redis-server (as above) started with --dir <shardis' dir>, timed with wait-loaded"
  echo '```'
  echo
  "$PYTHON" - "$results" <<'PY'
import sys
rows = {}
for line in open(sys.argv[1]):
    f = dict(kv.split("=", 1) for kv in line.split())
    rows[(f["server"], f["step"])] = f
def get(server, step, key, conv=float):
    try:
        return conv(rows[(server, step)][key])
    except (KeyError, ValueError):
        return None
R, S = "redis", "shardis"
def fmt(v, spec):
    return "" if v is None else format(v, spec)
def ratio(s, r):
    return "" if s is None or r in (None, 0) else "%.2fx" % (s / r)
table = []
def row(name, r, s, spec, with_ratio=True):
    table.append("| %s | %s | %s | %s |" % (name, fmt(r, spec), fmt(s, spec), ratio(s, r) if with_ratio else ""))
def pct(server, step):
    b, p = get(server, step, "rss_before_kb"), get(server, step, "rss_peak_kb")
    return None if not b or p is None else 100.0 * (p - b) / b
def rel(server, key):
    a, b = get(server, "set_p1_bgsave", key), get(server, "set_p1", key)
    return None if a is None or not b else a / b

def both(step, key, scale=1.0):  # the figure of each server, divided by scale
    return tuple(None if v is None else v / scale for v in (get(R, step, key), get(S, step, key)))
row("RSS after the fill (MiB)", *both("memory", "rss_kb", 1024), ",.1f")
row("SAVE (s)", *both("save", "save_s"), ".3f")
row("dump.rdb (MB)", *both("file", "rdb_bytes", 1e6), ",.1f")
row("BGSAVE, idle server (s)", *both("bgsave", "bgsave_s"), ".3f")
row("start without a dump.rdb, to the first PONG (s)", *both("start", "load_s"), ".3f")
row("load at start, to the first PONG (s)", *both("load", "load_s"), ".3f")
row("load at start, the server's log (s)", *both("load", "log_load_s"), ".3f")
row("BGSAVE under the writer (s)", *both("bgsave_writer", "bgsave_s"), ".3f")
row("writer SET throughput (ops/s)", *both("writer", "ops_per_s"), ",.0f")
row("RSS before the BGSAVE, writer running (MiB)", *both("bgsave_writer", "rss_before_kb", 1024), ",.1f")
row("peak RSS during the BGSAVE, with the child's (MiB)", *both("bgsave_writer", "rss_peak_kb", 1024), ",.1f")
row("peak RSS of the child alone (MiB)", *both("bgsave_writer", "child_rss_peak_kb", 1024), ",.1f", False)
row("peak over before (%)", pct(R, "bgsave_writer"), pct(S, "bgsave_writer"), "+.1f", False)
row("SET P1 without a save (ops/s)", *both("set_p1", "ops_per_s"), ",.0f")
row("SET P1 during BGSAVEs (ops/s)", *both("set_p1_bgsave", "ops_per_s"), ",.0f")
row("SET P1 throughput, during / without", rel(R, "ops_per_s"), rel(S, "ops_per_s"), ".2f", False)
row("SET P1 p99 without a save (µs)", *both("set_p1", "p99_us"), ",.1f")
row("SET P1 p99 during BGSAVEs (µs)", *both("set_p1_bgsave", "p99_us"), ",.1f")
row("SET P1 p99, during / without", rel(R, "p99_us"), rel(S, "p99_us"), ".2f", False)
row("SET P1 max latency during BGSAVEs (ms)", *both("set_p1_bgsave", "max_us", 1e3), ",.1f")
table.append("| BGSAVEs in the SET P1 window (share of it covered) | %s | %s | |" % tuple(
    "%s (%s)" % (rows[(x, "bgsave_loop")]["bgsaves"], rows[(x, "bgsave_loop")]["covered"]) if (x, "bgsave_loop") in rows else ""
    for x in (R, S)))
table.append("| other processes' share of the server CPU: fill / writer / SET P1 without / during | %s | %s | |" % tuple(
    " / ".join(fmt(get(x, step, "server_cpu_others_util"), ".2f") for step in ("fill", "writer", "set_p1", "set_p1_bgsave"))
    for x in (R, S)))

def target(name, need, ok, measured):
    return "| %s | %s | %s | %s |" % (name, need, measured, "" if ok is None else ("met" if ok else "MISSED"))
print("| target | needs | measured | result |")
print("| --- | --- | ---: | --- |")
for key, step, what in (("save_s", "save", "SAVE time"), ("bgsave_s", "bgsave", "BGSAVE time"), ("load_s", "load", "load time at start")):
    r, s = get(R, step, key), get(S, step, key)
    print(target(what, "< 1x redis", None if r is None or s is None else s < r,
                 "" if r is None or s is None else "%.2fx (%.3f / %.3f s)" % (s / r, s, r)))
p, pr = pct(S, "bgsave_writer"), pct(R, "bgsave_writer")
print(target("peak RSS during BGSAVE under writes, over before", "<= +10%", None if p is None else p <= 10,
             "" if p is None else "%+.1f%% (redis-server %s)" % (p, fmt(pr, "+.1f") + "%")))
t, tr = rel(S, "ops_per_s"), rel(R, "ops_per_s")
print(target("SET P1 throughput during BGSAVE / without", ">= 0.80", None if t is None else t >= 0.8,
             "" if t is None else "%.2f (redis-server %s)" % (t, fmt(tr, ".2f"))))
l, lr = rel(S, "p99_us"), rel(R, "p99_us")
print(target("SET P1 p99 during BGSAVE / without", "<= 2x", None if l is None else l <= 2,
             "" if l is None else "%.2fx (redis-server %s)" % (l, fmt(lr, ".2f") + "x")))
print()
print("Both servers held the same %s keys of %s bytes (DBSIZE and a value checked after the fill and"
      " after the load)." % (format(int(rows[(R if (R, "fill") in rows else S, "fill")]["keyspace"]), ","),
                             rows[(R if (R, "fill") in rows else S, "fill")]["value_size"]))
print()
print("| figure | redis-server | shardis | shardis/redis |")
print("| --- | ---: | ---: | ---: |")
print("\n".join(table))
print()
print("Peak RSS is the highest sum of VmRSS of the server and of the processes forked from it, sampled"
      " every 10 ms: pages that redis-server's child shares with its parent count twice, as the"
      " memory the machine must be able to give both if every page gets written. redis-server notices"
      " that its child ended in its cron (10 times a second), so its BGSAVE times include up to 0.1 s of"
      " that. The load times read a file that is in the page cache. The last row is the share of"
      " SERVER_CPU that other processes took (load generator's figure): above ~0.1 the row says more"
      " about the machine than about the server.")
if (R, "cross_load") in rows:
    print()
    print("redis-server loaded shardis' dump.rdb (DBSIZE and a value checked) in %s s." % rows[(R, "cross_load")]["load_s"])
PY
  echo
  echo "Raw lines:"
  echo
  echo '```'
  cat "$results"
  echo '```'
} >"$report"
cat "$report"
[ -z "${REPORT:-}" ] || cp "$report" "$REPORT"
