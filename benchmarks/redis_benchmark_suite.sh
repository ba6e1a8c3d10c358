#!/usr/bin/env bash
# redis-benchmark's own suite of commands (issue 4) against the Debian redis-server and
# shardis --threads 1, one after the other on fresh servers, with the same arguments.
#
#   bash benchmarks/redis_benchmark_suite.sh                 # -n 200000: a few minutes
#   N=20000 bash benchmarks/redis_benchmark_suite.sh         # a quick run
#
# Servers are pinned to SERVER_CPU and redis-benchmark to CLIENT_CPU (taskset), like run.sh.
# redis-benchmark 7 exits on the first error reply ("Unexpected error reply, exiting..."), so the
# script fails if it exits non-zero, prints anything that looks like an error, or misses a test's
# row. After each run it checks the server is alive and that the keys the suite left are sane and
# the same on both servers (LLEN mylist and XLEN mystream = N plus the pipelines' overshoot
# (redis-benchmark 7.0 has no XADD test: the script runs 7.2's as a custom command), SPOP/ZPOPMIN emptied myset and
# myzset, HLEN myhash within the random keyspace). Prints a markdown table: test, redis-server
# req/s, shardis req/s, ratio (shardis / redis-server, above 1 = faster).
#
# Environment (defaults in parentheses):
#   N (-n, 200000), KEYSPACE (-r, 100000), CLIENTS (-c, 50), PIPELINE (-P, 16),
#   TESTS (set,get,incr,lpush,rpush,lpop,rpop,sadd,hset,spop,zadd,zpopmin,lrange_100,lrange_300,
#   lrange_500,lrange_600,mset,xadd), SERVER_CPU (first CPU this shell may use), CLIENT_CPU (the
#   second), SHARDIS_BIN (build/release/shardis, built if not given), REDIS_SERVER (on PATH)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

PYTHON=/usr/bin/python3
N=${N:-200000}
KEYSPACE=${KEYSPACE:-100000}
CLIENTS=${CLIENTS:-50}
PIPELINE=${PIPELINE:-16}
TESTS=${TESTS:-set,get,incr,lpush,rpush,lpop,rpop,sadd,hset,spop,zadd,zpopmin,lrange_100,lrange_300,lrange_500,lrange_600,mset,xadd}
REDIS_SERVER=${REDIS_SERVER:-$(command -v redis-server || true)}

source benchmarks/lib.sh
require redis-benchmark redis-cli taskset "$PYTHON" "$REDIS_SERVER"
pick_cpus
if [ -z "${SHARDIS_BIN:-}" ]; then
  bash scripts/build.sh release shardis >&2
  SHARDIS_BIN=build/release/shardis
fi

workdir=$(mktemp -d /tmp/shardis-suite.XXXXXX)
source benchmarks/servers.sh
trap stop_server EXIT
started=$SECONDS
fail() {
  echo "FAIL ($1): $2" >&2
  echo "server: ${CMD[$1]}" >&2
  tail -20 "$workdir/$1.log" >&2
  exit 1
}

declare -A CHECK
bench=
xadd=()
for kind in redis shardis; do
  start_server "$kind" || fail "$kind" "did not start"

  bench=(taskset -c "$CLIENT_CPU" redis-benchmark -h 127.0.0.1 -p "$port" -t "$TESTS"
         -n "$N" -r "$KEYSPACE" -c "$CLIENTS" -P "$PIPELINE" -q --csv)
  note "$kind: ${bench[*]}"
  rc=0
  "${bench[@]}" >"$workdir/$kind.csv" 2>"$workdir/$kind.err" || rc=$?
  [ $rc -eq 0 ] || fail "$kind" "redis-benchmark exited with $rc: $(cat "$workdir/$kind.err" "$workdir/$kind.csv")"
  if grep -qiE 'error|unexpected|exiting' "$workdir/$kind.err" "$workdir/$kind.csv"; then
    fail "$kind" "redis-benchmark reported: $(grep -iE 'error|unexpected|exiting' "$workdir/$kind.err" "$workdir/$kind.csv")"
  fi
  # redis-benchmark 7.0 has no XADD test (7.2 added it) and ignores -t xadd: run 7.2's command
  # (XADD mystream * myfield <value>) as a custom command instead, with the same arguments.
  if [[ ",$TESTS," == *,xadd,* ]] && ! grep -q '^"XADD' "$workdir/$kind.csv"; then
    xadd=(taskset -c "$CLIENT_CPU" redis-benchmark -h 127.0.0.1 -p "$port" -n "$N" -r "$KEYSPACE"
          -c "$CLIENTS" -P "$PIPELINE" -q --csv XADD mystream '*' myfield 'value:__rand_int__')
    note "$kind: ${xadd[*]}"
    "${xadd[@]}" 2>>"$workdir/$kind.err" | grep -v '^"test"' >>"$workdir/$kind.csv" ||
      fail "$kind" "redis-benchmark XADD failed: $(cat "$workdir/$kind.err")"
    grep -qiE 'error|unexpected|exiting' "$workdir/$kind.err" "$workdir/$kind.csv" &&
      fail "$kind" "redis-benchmark XADD reported: $(cat "$workdir/$kind.err")"
    xadd[7]='<port>'
  fi
  kill -0 "$server_pid" 2>/dev/null || fail "$kind" "server died during the suite"
  [ "$(redis-cli -p "$port" ping)" = PONG ] || fail "$kind" "no PONG after the suite"

  llen=$(redis-cli -p "$port" llen mylist)
  xlen=$(redis-cli -p "$port" xlen mystream)
  scard=$(redis-cli -p "$port" scard myset)
  zcard=$(redis-cli -p "$port" zcard myzset)
  hlen=$(redis-cli -p "$port" hlen myhash)
  # With -P, redis-benchmark sends up to CLIENTS*PIPELINE requests more than N per test. LPUSH +
  # RPUSH - LPOP - RPOP leave 0 .. 2*slack items, the LRANGE tests' own LPUSH adds N .. N+slack.
  slack=$((CLIENTS * PIPELINE))
  [ "$llen" -ge "$N" ] && [ "$llen" -le $((N + 3 * slack)) ] ||
    fail "$kind" "LLEN mylist = $llen, expected $N .. $((N + 3 * slack))"
  if [[ ",$TESTS," == *,xadd,* ]]; then
    [ "$xlen" -ge "$N" ] && [ "$xlen" -le $((N + slack)) ] ||
      fail "$kind" "XLEN mystream = $xlen, expected $N .. $((N + slack))"
  fi
  # SADD/ZADD add at most KEYSPACE members, SPOP/ZPOPMIN pop N >= that.
  if [ "$N" -ge "$KEYSPACE" ]; then
    [ "$scard" = 0 ] || fail "$kind" "SCARD myset = $scard, expected 0 after SPOP x $N"
    [ "$zcard" = 0 ] || fail "$kind" "ZCARD myzset = $zcard, expected 0 after ZPOPMIN x $N"
  fi
  [ "$hlen" -gt 0 ] && [ "$hlen" -le "$KEYSPACE" ] || fail "$kind" "HLEN myhash = $hlen"
  CHECK[$kind]="LLEN mylist $llen, XLEN mystream $xlen, SCARD myset $scard, ZCARD myzset $zcard, HLEN myhash $hlen, DBSIZE $(redis-cli -p "$port" dbsize)"
  note "$kind: ${CHECK[$kind]}"
  stop_server
done
bench[7]='<port>'

"$PYTHON" - "$workdir/redis.csv" "$workdir/shardis.csv" "$TESTS" <<'PY'
import csv, sys
def load(path):
    rows = {}
    for row in csv.reader(open(path)):
        if row and row[0] != "test":
            rows[row[0]] = float(row[1])
    return rows
r, s = load(sys.argv[1]), load(sys.argv[2])
if list(r) != list(s) or not r:
    sys.exit("FAIL: the runs have different tests: %s / %s" % (list(r), list(s)))
names = [n.split()[0].upper() for n in r]
missing = [t for t in sys.argv[3].split(",") if t.upper() not in names]
print("| test | redis-server req/s | shardis req/s | ratio |")
print("| --- | ---: | ---: | ---: |")
for name in r:
    print("| %s | %.0f | %.0f | %.2fx |" % (name, r[name], s[name], s[name] / r[name]))
if missing:
    print("\nNo row for: %s." % ", ".join(missing))
PY
echo
echo "Commands:"
echo
echo '```'
echo "${CMD[redis]}"
echo "${CMD[shardis]}"
echo "${bench[*]}"
[ ${#xadd[@]} -eq 0 ] || echo "${xadd[*]:0:20} '*' ${xadd[*]:21}"
echo '```'
echo
echo "After the suite: redis-server: ${CHECK[redis]}; shardis: ${CHECK[shardis]}."
