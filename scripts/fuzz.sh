#!/usr/bin/env bash
# Runs the libFuzzer targets of tests/fuzz/ (ASan+UBSan with clang, built in build/fuzz).
#   scripts/fuzz.sh [target|all] [seconds|build]     default: all, 60 seconds each; build: only
#                                                    builds them (scripts/test.sh does that early)
# Each target starts from its seed corpus (tests/fuzz/corpus/<target>/, in the repository) and
# keeps what it finds in build/fuzz/fuzz/corpus/<target>/ for the next run. A finding stops that
# target with the input saved as build/fuzz/fuzz/findings/<target>-crash-...: fix the bug, then add
# the input to the seed corpus as its regression test. Runs one target per CPU at a time. Prints
# each target's executions per second and corpus size; the exit status is non-zero if any target
# found something.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

target=${1:-all}
seconds=${2:-60}
all=()
for f in tests/fuzz/*_fuzz.cc; do all+=("$(basename "$f" _fuzz.cc)"); done
if [ "$target" = all ]; then
  targets=("${all[@]}")
elif [ -f "tests/fuzz/${target}_fuzz.cc" ]; then
  targets=("$target")
else
  echo "usage: $0 [all|${all[*]// /|}] [seconds|build]" >&2
  exit 2
fi

bash scripts/build.sh fuzz "${targets[@]/#/fuzz_}" >&2 || exit 1
[ "$seconds" = build ] && exit 0

out=build/fuzz/fuzz
mkdir -p "$out/findings"
# Leaks count as findings; UBSan stops at the first report (the build does not recover either).
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
fuzz_one() {  # TARGET : runs it, writes its report to $out/TARGET.report; non-zero on a finding
  local t=$1 log="$out/$1.log" rc execs corpus
  mkdir -p "$out/corpus/$t"
  # -timeout: one input taking 10 s is a finding (a hang or a blow-up), -rss_limit_mb: so is 2 GB.
  "$out/fuzz_$t" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="$out/findings/$t-" "$out/corpus/$t" "tests/fuzz/corpus/$t" >"$log" 2>&1
  rc=$?
  execs=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log")
  corpus=$(grep -Eo 'corp: [0-9]+/[0-9]+[a-zA-Z]*' "$log" | tail -1)
  if [ $rc -eq 0 ]; then
    echo "fuzz $t: ok, ${execs:-?} exec/s, ${corpus:-corp: ?}"
  else
    echo "fuzz $t: FOUND A BUG (exit $rc); the log is $log:"
    grep -E -A30 '^==[0-9]+==ERROR|runtime error|^SUMMARY|deadly signal|Test unit written' "$log" |
      head -60
  fi >"$out/$t.report"
  return $rc
}

# One target per CPU at a time (a libFuzzer process uses one; its time limit is wall time), each
# one's report printed in the targets' order.
cpus=$(nproc)
pids=()
for t in "${targets[@]}"; do
  while [ "$(jobs -rp | wc -l)" -ge "$cpus" ]; do wait -n; done
  echo "fuzz $t: ${seconds}s" >&2
  fuzz_one "$t" &
  pids+=($!)
done
failed=()
for i in "${!targets[@]}"; do
  wait "${pids[$i]}" || failed+=("${targets[$i]}")
  cat "$out/${targets[$i]}.report"
done
[ ${#failed[@]} -eq 0 ] || { echo "fuzz: findings in ${failed[*]}" >&2; exit 1; }
