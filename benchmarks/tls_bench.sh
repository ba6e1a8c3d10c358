#!/usr/bin/env bash
# TLS (issue 18): GET and SET at pipeline 1 and 16 over TLS, shardis --threads 1 against the
# Debian redis-server (built with TLS) at the same load, and both over plaintext for reference.
#
#   bash benchmarks/tls_bench.sh                        # ROUNDS=3: ~4 min
#   ROUNDS=1 REQUESTS=100000 bash benchmarks/tls_bench.sh   # a quick look
#
# The load is redis-benchmark's (`--tls` with a client certificate; our load generator speaks
# no TLS), pinned to CLIENT_CPU; each server is pinned to SERVER_CPU and its CPU time is read from
# /proc/PID/stat around each load. One certificate authority, server and client certificate are
# made with the openssl CLI for the run. Each round starts the four servers (redis-server and
# shardis, TLS and plaintext) one at a time, in a rotating order.
#
# Prints a markdown report (and REPORT when given): medians over the rounds of ops/s and ops per
# server CPU-second, and the issue's target (shardis over TLS >= 1.3x redis-server over TLS in
# ops per server CPU-second). Progress goes to stderr.
#
# Environment (defaults in parentheses): ROUNDS (3), REQUESTS per load (400000), CONNECTIONS
#   (50), KEYSPACE (100000), VALUE_SIZE (128), SERVER_CPU, CLIENT_CPU (the first and second CPU
#   this shell may use), NICE (unset, see lib.sh), SHARDIS_BIN (build/release/shardis, built if
#   not given), REDIS_SERVER, REPORT.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

PYTHON=/usr/bin/python3
ROUNDS=${ROUNDS:-3}
REQUESTS=${REQUESTS:-400000}
CONNECTIONS=${CONNECTIONS:-50}
KEYSPACE=${KEYSPACE:-100000}
VALUE_SIZE=${VALUE_SIZE:-128}
NICE=${NICE:-}
REDIS_SERVER=${REDIS_SERVER:-$(command -v redis-server || true)}

source benchmarks/lib.sh
require redis-cli redis-benchmark openssl taskset "$PYTHON" "$REDIS_SERVER"
pick_cpus

bench_binaries tls
source benchmarks/servers.sh
cleanup() { stop_server; rm -rf "$workdir"; }
trap cleanup EXIT
apply_nice cleanup
started=$SECONDS

# The certificates: a CA, a server certificate for 127.0.0.1 and a client certificate.
certs=$workdir/certs
mkdir -p "$certs"
(
  cd "$certs"
  openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=bench-ca -keyout ca.key -out ca.crt
  for who in server client; do
    openssl req -newkey rsa:2048 -nodes -subj "/CN=$who" -keyout "$who.key" -out "$who.csr"
    openssl x509 -req -in "$who.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -days 2 \
      -out "$who.crt"
  done
) >"$workdir/openssl.log" 2>&1
TLS_CLIENT=(--tls --cacert "$certs/ca.crt" --cert "$certs/client.crt" --key "$certs/client.key")

# start SERVER: redis-tls | redis-plain | shardis-tls | shardis-plain.
start() {
  local server=$1 cmd
  port=$(free_port)
  case $server in
    redis-tls) cmd=("$REDIS_SERVER" --port 0 --tls-port "$port" --tls-cert-file "$certs/server.crt"
                    --tls-key-file "$certs/server.key" --tls-ca-cert-file "$certs/ca.crt") ;;
    redis-plain) cmd=("$REDIS_SERVER" --port "$port") ;;
    shardis-tls) cmd=("$workdir/shardis.bin" --port 0 --tls_port "$port"
                      --tls_cert_file "$certs/server.crt" --tls_key_file "$certs/server.key"
                      --tls_ca_cert_file "$certs/ca.crt") ;;
    shardis-plain) cmd=("$workdir/shardis.bin" --port "$port") ;;
  esac
  if [ "${server%-*}" = redis ]; then cmd+=(--bind 127.0.0.1 --save '' --appendonly no)
  else cmd+=(--bind 127.0.0.1 --threads 1 --save= --logtostderr); fi
  (cd "$workdir" && exec taskset -c "$SERVER_CPU" "${cmd[@]}") >>"$workdir/$server.log" 2>&1 &
  server_pid=$!
  CLI_ARGS=()
  [ "${server#*-}" = plain ] || CLI_ARGS=("${TLS_CLIENT[@]}")
  wait_for_pong && return 0
  echo "FAIL: $server did not start (log: $workdir/$server.log)" >&2
  cat "$workdir/$server.log" >&2
  exit 1
}

# measure SERVER TEST PIPELINE [LABEL]: one redis-benchmark load; appends its line to
# results.txt with the test named LABEL (default: TEST).
measure() {
  local server=$1 test=$2 pipeline=$3 label=${4:-$2} before after out rps args
  args=(-p "$port" -c "$CONNECTIONS" -n "$REQUESTS" -P "$pipeline" -r "$KEYSPACE" -d "$VALUE_SIZE"
        -t "$test" --csv)
  [ "${server#*-}" = plain ] || args+=("${TLS_CLIENT[@]}")
  before=$(server_cpu_ticks)
  out=$(taskset -c "$CLIENT_CPU" redis-benchmark "${args[@]}")
  after=$(server_cpu_ticks)
  rps=$(awk -F'","' 'NR == 2 {print $2}' <<<"$out")
  echo "server=$server test=$label pipeline=$pipeline rps=$rps cpu_ticks=$((after - before))" \
    "requests=$REQUESTS clk_tck=$(getconf CLK_TCK)" >>"$workdir/results.txt"
  note "$server $label P$pipeline: $rps ops/s, $((after - before)) CPU ticks"
}

: >"$workdir/results.txt"
servers=(redis-tls shardis-tls redis-plain shardis-plain)
for round in $(seq 1 "$ROUNDS"); do
  for i in "${!servers[@]}"; do
    server=${servers[$(((i + round - 1) % ${#servers[@]}))]}
    start "$server"
    # Fill first, so that GET finds values.
    measure "$server" set 16 fill
    for p in 1 16; do
      measure "$server" set "$p"
      measure "$server" get "$p"
    done
    stop_server
  done
  note "round $round done"
done

"$PYTHON" - "$workdir/results.txt" "$SHARDIS_REV" "$ROUNDS" "$REQUESTS" "$CONNECTIONS" \
  "$KEYSPACE" "$VALUE_SIZE" "$SERVER_CPU" "$CLIENT_CPU" <<'EOF' | tee ${REPORT:+"$REPORT"}
import statistics, sys
path, rev, rounds, requests, conns, keyspace, size, scpu, ccpu = sys.argv[1:]
rows = {}
raw = open(path).read().splitlines()
for line in raw:
    f = dict(kv.split("=", 1) for kv in line.split())
    key = (f["server"], f["test"], int(f["pipeline"]))
    cpu_s = int(f["cpu_ticks"]) / int(f["clk_tck"])
    rows.setdefault(key, []).append((float(f["rps"]), int(f["requests"]) / max(cpu_s, 1e-9)))
def med(key, i):
    return statistics.median(r[i] for r in rows[key])
print(f"# TLS benchmark: shardis {rev} --threads 1 against redis-server, medians of {rounds} "
      "rounds\n")
print(f"redis-benchmark -c {conns} -n {requests} -r {keyspace} -d {size}, with --tls and a "
      f"client certificate on the TLS servers; servers pinned to CPU {scpu}, redis-benchmark to "
      f"CPU {ccpu}; ops per server CPU-second = requests / the server's user+system CPU time "
      "during the load.\n")
print("| load | server | ops/s | ops per server CPU-s |")
print("|---|---|---|---|")
for test in ("set", "get"):
    for p in (1, 16):
        for server in ("redis-tls", "shardis-tls", "redis-plain", "shardis-plain"):
            key = (server, test, p)
            print(f"| {test.upper()} P{p} | {server} | {med(key, 0):,.0f} | {med(key, 1):,.0f} |")
print("\n| load | shardis / redis-server over TLS, ops per server CPU-s (target >= 1.3x) | "
      "over plaintext | TLS cost, redis-server | TLS cost, shardis |")
print("|---|---|---|---|---|")
for test in ("set", "get"):
    for p in (1, 16):
        tls = med(("shardis-tls", test, p), 1) / med(("redis-tls", test, p), 1)
        plain = med(("shardis-plain", test, p), 1) / med(("redis-plain", test, p), 1)
        rcost = med(("redis-tls", test, p), 1) / med(("redis-plain", test, p), 1)
        scost = med(("shardis-tls", test, p), 1) / med(("shardis-plain", test, p), 1)
        met = "met" if tls >= 1.3 else "not met"
        print(f"| {test.upper()} P{p} | {tls:.2f}x {met} | {plain:.2f}x | {rcost:.2f} | "
              f"{scost:.2f} |")
print("\nRaw lines:\n")
print("```")
print("\n".join(raw))
print("```")
EOF
