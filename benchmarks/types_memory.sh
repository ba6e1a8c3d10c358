#!/usr/bin/env bash
# Memory per key of the collection types (issue 4): shardis --threads 1 against the Debian
# redis-server, same data, one server process at a time.
#
#   bash benchmarks/types_memory.sh                           # full sizes: ~1 min, ~0.9 GB RSS
#   N_KEYS=100000 N_LISTS=10 bash benchmarks/types_memory.sh  # a quick run
#
# For each type (TYPES) and each server it starts a fresh server (pinned to SERVER_CPU), reads
# INFO memory used_memory and VmRSS (/proc/PID/status) when empty, loads the data with
# `redis-cli --pipe` (the RESP stream comes from benchmarks/types_gen.py and is the same bytes for
# both servers), checks that there was no error reply and that DBSIZE and the length of a few keys
# are right, reads the memory again and stops the server. A fresh process per type rather than
# FLUSHALL between types, so that RSS is not inflated by what the allocator kept from the
# previous type. Prints a markdown table; per key/element figures are the growth over the empty
# server divided by the keys/elements loaded. Ratios are shardis / redis-server (below 1 = less).
#
# Data (key names 12 bytes, fields/members/values/items 10-14 bytes):
#   hash  N_KEYS hashes of ELEMENTS fields  (HSET hash:0000042 field:0 val:0000042:0 ...)
#   set   N_KEYS sets of ELEMENTS members   (SADD set:0000042 mem:0000042:0 ...)
#   zset  N_KEYS sorted sets of ELEMENTS members, scores 0.5 .. ELEMENTS-0.5 (ZADD)
#   list  N_LISTS lists of LIST_ITEMS items (RPUSH of 100 items at a time, item:000000042)
#
# Environment (defaults in parentheses):
#   N_KEYS (1000000), ELEMENTS (10), N_LISTS (100), LIST_ITEMS (10000), TYPES ("hash set zset list")
#   SERVER_CPU (the first CPU this shell may use), SHARDIS_BIN (build/release/shardis, built if not
#   given), REDIS_SERVER (redis-server on PATH)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

PYTHON=/usr/bin/python3
N_KEYS=${N_KEYS:-1000000}
ELEMENTS=${ELEMENTS:-10}
N_LISTS=${N_LISTS:-100}
LIST_ITEMS=${LIST_ITEMS:-10000}
TYPES=${TYPES:-"hash set zset list"}
REDIS_SERVER=${REDIS_SERVER:-$(command -v redis-server || true)}

source benchmarks/lib.sh
require redis-cli taskset "$PYTHON" "$REDIS_SERVER"
SERVER_CPU=${SERVER_CPU:-$("$PYTHON" -c 'import os; print(min(os.sched_getaffinity(0)))')}
if [ -z "${SHARDIS_BIN:-}" ]; then
  bash scripts/build.sh release shardis >&2
  SHARDIS_BIN=build/release/shardis
fi

workdir=$(mktemp -d /tmp/shardis-types.XXXXXX)
source benchmarks/servers.sh
cleanup() {
  stop_server
  rm -f "$workdir"/*.resp
}
trap cleanup EXIT
started=$SECONDS
used_memory() { redis-cli -p "$port" info memory | tr -d '\r' | sed -n 's/^used_memory://p'; }
rss_bytes() { echo $(( $(awk '/^VmRSS:/ {print $2}' "/proc/$server_pid/status") * 1024 )); }
fail() {
  echo "FAIL ($1): $2" >&2
  echo "server: ${CMD[$1]}" >&2
  tail -20 "$workdir/$1.log" >&2
  exit 1
}

declare -A USED RSS
for type in $TYPES; do
  case $type in
    hash) keys=$N_KEYS elems=$ELEMENTS lencmd=HLEN ;;
    set) keys=$N_KEYS elems=$ELEMENTS lencmd=SCARD ;;
    zset) keys=$N_KEYS elems=$ELEMENTS lencmd=ZCARD ;;
    list) keys=$N_LISTS elems=$LIST_ITEMS lencmd=LLEN ;;
    *) echo "unknown type $type" >&2; exit 1 ;;
  esac
  note "$type: generating $keys keys x $elems elements"
  "$PYTHON" benchmarks/types_gen.py "$type" "$keys" "$elems" >"$workdir/$type.resp"
  for kind in redis shardis; do
    start_server "$kind" || fail "$kind" "did not start"
    used0=$(used_memory); rss0=$(rss_bytes)
    note "$type: loading into $kind"
    out=$(redis-cli -p "$port" --pipe <"$workdir/$type.resp" 2>&1) || fail "$kind" "redis-cli --pipe: $out"
    echo "$out" | grep -q 'errors: 0,' || fail "$kind" "error replies: $out"
    kill -0 "$server_pid" 2>/dev/null || fail "$kind" "server died"
    n=$(redis-cli -p "$port" dbsize)
    [ "$n" = "$keys" ] || fail "$kind" "DBSIZE $n, expected $keys"
    for k in 0 $((keys / 2)) $((keys - 1)); do
      key=$(printf '%s:%07d' "$type" "$k")
      len=$(redis-cli -p "$port" "$lencmd" "$key")
      [ "$len" = "$elems" ] || fail "$kind" "$lencmd $key = $len, expected $elems"
    done
    sleep 1  # let the server settle (redis' incremental rehash runs in its cron)
    used1=$(used_memory); rss1=$(rss_bytes)
    USED[$type,$kind]="$used0 $used1"; RSS[$type,$kind]="$rss0 $rss1"
    note "$type on $kind: used_memory $used0 -> $used1, RSS $rss0 -> $rss1"
    stop_server
  done
  rm -f "$workdir/$type.resp"
done

echo "Commands:"
echo
echo '```'
echo "${CMD[redis]}"
echo "${CMD[shardis]}"
echo "/usr/bin/python3 benchmarks/types_gen.py <type> <keys> <elements> | redis-cli -p <port> --pipe"
echo '```'
echo
echo "Sizes: N_KEYS=$N_KEYS ELEMENTS=$ELEMENTS N_LISTS=$N_LISTS LIST_ITEMS=$LIST_ITEMS. Per key and per"
echo "element: (after the load - empty server) / keys or elements. Totals are after the load."
echo
echo "| type | keys x elements | used_memory / key: redis | shardis | ratio | RSS / key: redis | shardis | ratio | RSS / element: redis | shardis | total RSS: redis | shardis | shardis <= redis? |"
echo "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |"
for type in $TYPES; do
  case $type in list) keys=$N_LISTS elems=$LIST_ITEMS ;; *) keys=$N_KEYS elems=$ELEMENTS ;; esac
  "$PYTHON" - "$type" "$keys" "$elems" ${USED[$type,redis]} ${USED[$type,shardis]} \
      ${RSS[$type,redis]} ${RSS[$type,shardis]} <<'PY'
import sys
t, keys, elems = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
ur0, ur1, us0, us1, rr0, rr1, rs0, rs1 = map(int, sys.argv[4:12])
u_r, u_s = (ur1 - ur0) / keys, (us1 - us0) / keys
r_r, r_s = (rr1 - rr0) / keys, (rs1 - rs0) / keys
mb = lambda b: "%.1f MB" % (b / 1e6)
ok = "yes" if (u_s <= u_r and r_s <= r_r) else "no"
print("| %s | %d x %d | %.1f | %.1f | %.2f | %.1f | %.1f | %.2f | %.1f | %.1f | %s | %s | %s |" % (
    t, keys, elems, u_r, u_s, u_s / u_r, r_r, r_s, r_s / r_r, r_r / elems, r_s / elems,
    mb(rr1), mb(rs1), ok))
PY
done
echo
echo "\"shardis <= redis?\": yes when both shardis' used_memory and its RSS per key (growth over the"
echo "empty server) are no larger than redis-server's."
