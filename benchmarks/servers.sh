# Sourced by the benchmark scripts that start one server at a time (types_memory.sh,
# redis_benchmark_suite.sh): free ports, and redis-server or shardis pinned to SERVER_CPU, started
# the same way for both. Needs PYTHON, SERVER_CPU, REDIS_SERVER, SHARDIS_BIN and workdir.

declare -A CMD  # kind -> the exact server command line, for the report
port=
server_pid=

free_port() {
  "$PYTHON" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# start_server redis|shardis: on a free port ($port), pid in $server_pid, output appended to
# $workdir/<kind>.log; returns non-zero if it does not answer PING within 10 s.
start_server() {
  local kind=$1 cmd
  port=$(free_port)
  if [ "$kind" = redis ]; then
    cmd=(taskset -c "$SERVER_CPU" "$REDIS_SERVER" --port "$port" --bind 127.0.0.1
         --save '' --appendonly no --dir "$workdir")
  else
    cmd=(taskset -c "$SERVER_CPU" "$SHARDIS_BIN" --port "$port" --bind 127.0.0.1
         --threads 1 --logtostderr --save '')
  fi
  CMD[$kind]=$(printf '%q ' "${cmd[@]}")
  "${cmd[@]}" >>"$workdir/$kind.log" 2>&1 &
  server_pid=$!
  for _ in $(seq 1 100); do
    [ "$(redis-cli -p "$port" ping 2>/dev/null)" = PONG ] && return 0
    sleep 0.1
  done
  return 1
}

stop_server() {
  [ -n "$server_pid" ] || return 0
  kill -TERM "$server_pid" 2>/dev/null || true
  wait "$server_pid" 2>/dev/null || true
  server_pid=
}
