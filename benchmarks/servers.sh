# Sourced by the benchmark scripts that start one server at a time (all but run.sh): free ports,
# waiting for PING, stopping, CPU time; and redis-server or shardis pinned to SERVER_CPU, started
# the same way for both, with no save schedule (launch_server, start_server: the scripts whose
# servers need other flags start their own and use the rest). Needs lib.sh, PYTHON,
# SERVER_CPU, REDIS_SERVER, SHARDIS_BIN and workdir; SHARDIS_THREADS (1) sets shardis' --threads.
#
# Each server runs in a directory of its own (redis-server: --dir; shardis: its working
# directory, where it reads and writes dump.rdb), so that a snapshot one of them writes (shardis
# saves at SIGTERM when a `save` schedule is set) is never loaded by the next one.

declare -A CMD  # kind -> the exact server command line, for the report
port=
server_pid=
CLI_ARGS=()  # what redis-cli needs besides -p to reach the server (e.g. --tls and certificates)

free_port() {
  "$PYTHON" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# launch_server redis|shardis DIR: starts it in DIR on a free port ($port), pid in $server_pid,
# output appended to $workdir/<kind>.log, and returns at once.
launch_server() {
  local kind=$1 dir=$2 cmd
  port=$(free_port)
  if [ "$kind" = redis ]; then
    cmd=(taskset -c "$SERVER_CPU" "$REDIS_SERVER" --port "$port" --bind 127.0.0.1
         --save '' --appendonly no --dir "$dir")
  else
    cmd=(taskset -c "$SERVER_CPU" "$(realpath "$SHARDIS_BIN")" --port "$port" --bind 127.0.0.1
         --threads "${SHARDIS_THREADS:-1}" --logtostderr)
  fi
  CMD[$kind]=$(printf '%q ' "${cmd[@]}")
  (cd "$dir" && exec "${cmd[@]}") >>"$workdir/$kind.log" 2>&1 &
  server_pid=$!
}

# start_server redis|shardis: launch_server in a new directory under $workdir; returns non-zero
# if it does not answer PING within 10 s.
start_server() {
  launch_server "$1" "$(mktemp -d "$workdir/$1.XXXXXX")"
  wait_for_pong && no_save_schedule "$port"
}

# wait_for_pong: true once the server on $port answers PING, false after 10 s.
wait_for_pong() {
  for _ in $(seq 1 100); do
    [ "$(redis-cli -p "$port" "${CLI_ARGS[@]}" ping 2>/dev/null)" = PONG ] && return 0
    sleep 0.1
  done
  return 1
}

# server_cpu_ticks: the server's user + system CPU time so far, in clock ticks (getconf CLK_TCK).
server_cpu_ticks() { awk '{print $14 + $15}' "/proc/$server_pid/stat"; }

# alive PID: true while the process runs (a zombie not yet waited for does not count).
alive() {
  local state
  state=$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f1)
  [ -n "$state" ] && [ "$state" != Z ]
}

# stop_server: SHUTDOWN NOSAVE (no save at exit, whatever the schedule), SIGTERM if it is still
# there, and wait for it.
stop_server() {
  [ -n "$server_pid" ] || return 0
  redis-cli -p "$port" "${CLI_ARGS[@]}" shutdown nosave >/dev/null 2>&1 || true
  for _ in $(seq 1 50); do
    alive "$server_pid" || break
    sleep 0.1
  done
  kill -TERM "$server_pid" 2>/dev/null || true
  wait "$server_pid" 2>/dev/null || true
  server_pid=
}
