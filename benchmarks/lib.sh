# Sourced by every benchmark script: tool checks, the CPUs, NICE, the binaries under test,
# progress lines. Needs PYTHON.

# require TOOL...: exits with the install hint when one is missing.
require() {
  local tool
  for tool in "$@"; do
    command -v "$tool" >/dev/null || { echo "missing $tool: bash scripts/install-deps.sh test" >&2; exit 1; }
  done
}

# pick_cpus: SERVER_CPU and CLIENT_CPU default to the first and the second CPU this shell may use.
pick_cpus() {
  local cpus
  read -r -a cpus <<<"$("$PYTHON" -c 'import os; print(*sorted(os.sched_getaffinity(0)))')"
  SERVER_CPU=${SERVER_CPU:-${cpus[0]}}
  CLIENT_CPU=${CLIENT_CPU:-${cpus[1]:-${cpus[0]}}}
  [ "$SERVER_CPU" != "$CLIENT_CPU" ] || echo "warning: one CPU only; server and client share it" >&2
}

# apply_nice CLEANUP: when NICE is set (e.g. -10), gives this run's scheduler autogroup (its
# session) that nice value until the script exits, when it runs CLEANUP and then restore_nice.
# Needs root. See "Caveats" in benchmarks/README.md.
apply_nice() {
  [ -n "${NICE:-}" ] || return 0
  [ -w /proc/self/autogroup ] || { echo "NICE needs a writable /proc/self/autogroup (root)" >&2; exit 1; }
  old_nice=$(sed -n 's/.* nice //p' /proc/self/autogroup)
  echo "$NICE" >/proc/self/autogroup
  # shellcheck disable=SC2064  # CLEANUP is expanded now, on purpose
  trap "$1; restore_nice" EXIT
}
restore_nice() { [ -z "${old_nice:-}" ] || echo "$old_nice" >/proc/self/autogroup; }

# No save schedule on the servers (a BGSAVE in the middle of a measurement would change it, and a
# save at SIGTERM leaves a dump.rdb that the next server started in that directory loads):
# redis-server runs with --save ''; shardis gets CONFIG SET save "" as soon as it answers.
no_save_schedule() {  # PORT
  redis-cli -p "$1" config set save "" >/dev/null
}

# note TEXT: a progress line on stderr, with the seconds since $started.
note() { printf '[%4ds] %s\n' $((SECONDS - ${started:-0})) "$*" >&2; }
# field NAME LINE: the value of NAME in a line of key=value pairs (the load generator's).
field() { tr ' ' '\n' <<<"$2" | sed -n "s/^$1=//p"; }

# bench_binaries NAME [loadgen]: builds SHARDIS_BIN (and the load generator) when not given, and
# copies them into a new $workdir (${WORKDIR:-/tmp}/shardis-NAME.XXXXXX) as shardis.bin and
# loadgen.bin, so that a rebuild in the tree during the run changes nothing measured. Sets
# SHARDIS_REV to the commit's short name.
bench_binaries() {
  local name=$1 with_loadgen=${2:-}
  if [ -z "${SHARDIS_BIN:-}" ]; then
    bash scripts/build.sh release shardis ${with_loadgen:+loadgen} >&2
    SHARDIS_BIN=build/release/shardis
  elif [ -n "$with_loadgen" ] && [ -z "${LOADGEN:-}" ]; then
    bash scripts/build.sh release loadgen >&2
  fi
  workdir=$(mktemp -d "${WORKDIR:-/tmp}/shardis-$name.XXXXXX")
  cp "$SHARDIS_BIN" "$workdir/shardis.bin"
  if [ -n "$with_loadgen" ]; then
    LOADGEN=${LOADGEN:-build/release/benchmarks/loadgen}
    cp "$LOADGEN" "$workdir/loadgen.bin"
  fi
  SHARDIS_REV="$(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
}
