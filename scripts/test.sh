#!/usr/bin/env bash
# Builds shardis and runs every test: the README's test command and what CI runs.
#   1. installs the missing Debian packages (build + test sets)
#   2. builds build/release (the server, the load generator and rdb_tool only) and build/asan
#      (ASan+UBSan, everything)
#   3. the unit tests (ctest) of the ASan build: where a unit test can find a memory error or
#      undefined behaviour; a release build of them would add a third of the compile time to CI
#      and find nothing more
#   4. the pytest integration suite against build/asan/shardis: the binary that reports memory
#      errors and undefined behaviour (with 8 of test_aof_crash's 20 kill runs: each takes several
#      times as long there), one test file per CPU at a time (pytest-xdist). Meanwhile, in the
#      background, the builds that this suite does not need: the fuzz targets (build/fuzz), the
#      ThreadSanitizer tests (build/tsan) and the Docker image; each one's log is printed under
#      its own header when a later step needs it
#   5. each fuzz target (tests/fuzz, built with clang) for 5 seconds
#   6. the benchmark suite's smoke test and the memory (active defragmentation) tests against
#      build/release (the Docker image step runs the release build too)
#   7. the io/ and shard/ unit tests under ThreadSanitizer (build/tsan)
#   8. the deploy/ files (Kubernetes manifests, seccomp profile) checked without a cluster
#   9. the Docker image built and run as the README says, only where the docker-local tool is
#      ($SHARDIS_DOCKER_LOCAL, default ../shared/tools/docker-local); elsewhere it is not run and
#      that is not a failure
# Every step runs even when an earlier one failed (unless it depends on a failed build);
# the exit status is non-zero if any step failed.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

PYTHON=/usr/bin/python3   # Debian's python3-redis/python3-pytest live there, not in a pyenv
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

passed=()
failed=()
not_run=()
section() { printf '\n==================== %s ====================\n' "$*"; }

record() {  # NAME EXIT-STATUS SECONDS : prints and records a step's outcome
  if [ "$2" -eq 0 ]; then
    echo "---- $1: ok ($3 s)"
    passed+=("$1")
  else
    echo "---- $1: FAILED (exit $2, $3 s)"
    failed+=("$1")
  fi
  return "$2"
}

step() {  # NAME COMMAND... : runs one step under a header and records its outcome
  local name=$1 start=$SECONDS rc
  shift
  section "$name"
  "$@"
  rc=$?
  record "$name" $rc $((SECONDS - start))
}

# Background steps: builds that run while the integration suite mostly waits, one after another
# (one build at a time: two CPUs), at nice 19 so that they take only the CPU the tests leave
# idle. Each step's output goes to its own log; bg_finish waits for the step, then prints the log
# under the step's header with the step's own time.
bg_dir=$(mktemp -d)
trap 'rm -rf "$bg_dir"' EXIT
bg_names=()
bg_commands=()
bg_queue() {  # NAME COMMAND... : adds a step (a command line, run by bash -c) to the queue
  bg_names+=("$1")
  bg_commands+=("$2")
}
bg_run() {  # starts the queued steps in the background, in their order
  local i
  section "background builds"
  for i in "${!bg_names[@]}"; do
    echo "${bg_names[$i]}: started (its log is printed under its own header when it is needed)"
  done
  (
    for i in "${!bg_names[@]}"; do
      start=$SECONDS
      nice -n 19 bash -c "${bg_commands[$i]}" >"$bg_dir/$i.log" 2>&1 </dev/null
      echo "$? $((SECONDS - start))" >"$bg_dir/$i.tmp" && mv "$bg_dir/$i.tmp" "$bg_dir/$i.status"
    done
  ) &
}
bg_finish() {  # NAME : waits for a background step, prints its log and records its outcome
  local i waited=$SECONDS rc secs
  for i in "${!bg_names[@]}"; do [ "${bg_names[$i]}" = "$1" ] && break; done
  while [ ! -f "$bg_dir/$i.status" ]; do sleep 1; done
  read -r rc secs <"$bg_dir/$i.status"
  section "$1"
  cat "$bg_dir/$i.log"
  echo "(waited $((SECONDS - waited)) s for it)"
  record "$1" "$rc" "$secs"
}

skip() {  # NAME REASON
  section "$1"
  echo "---- $1: not run ($2)"
  failed+=("$1 (not run)")
}

step "install dependencies" bash scripts/install-deps.sh test || exit 1

release_ok=0 asan_ok=0
# A release tree that test.sh configures itself (a clean clone, as in CI) gets the same -O2 code
# as the default RelWithDebInfo type with line tables only (-g1): its binaries only run tests,
# whose stacks still have file:line, and the compile takes about a fifth less CPU than with -g.
# An existing tree keeps its configuration (build.sh configures once).
CMAKE_ARGS="-DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS=-g1" \
  step "build release" bash scripts/build.sh release shardis loadgen rdb_tool && release_ok=1
step "build asan" bash scripts/build.sh asan && asan_ok=1

ctest_run() { ctest --test-dir "build/$1" --output-on-failure -j2 --no-tests=error; }
pytest_run() {  # BINARY PYTEST-ARGS...
  local bin=$1
  shift
  # The suite bounds its own waits; the outer timeout only stops a runaway hang. The 15 slowest
  # tests are listed, to show where a step's time goes.
  SHARDIS_BIN="$PWD/$bin" timeout -k 30 1500 "$PYTHON" -m pytest -q -rfEs --durations=15 "$@"
}

# The background builds, started before the integration suite (see bg_run above). The suite's
# servers and pytest use about 490 CPU seconds (measured with /usr/bin/time) over its 7 to 8
# minutes in CI: about one of the two CPUs; the builds get the other.
# ThreadSanitizer: only the io/ and shard/ tests, where the threads meet.
TSAN_TESTS=(io_spsc_ring_test io_proactor_test io_stream_test shard_db_test shard_shard_set_test shard_tx_queue_test
  shard_transaction_test shard_snapshot_test)
# The image test needs a Docker daemon and local base images, which the docker-local tool makes
# (no image registry is reachable here). The image is built here with the README's command; the
# test's own build of it (the same command) then comes from the layer cache. A dockerd that
# docker-local starts here keeps nice 19: it is then the only process at work when the image test
# runs.
DOCKER_LOCAL=${SHARDIS_DOCKER_LOCAL:-../shared/tools/docker-local}
bg_queue "build fuzz targets (clang, asan)" "bash scripts/fuzz.sh all build"
bg_queue "build tsan (io, shard tests)" "bash scripts/build.sh tsan ${TSAN_TESTS[*]}"
if [ -f "$DOCKER_LOCAL" ]; then
  bg_queue "build container image" 'docker=$(bash "'"$DOCKER_LOCAL"'" | tail -1) &&
    timeout -k 30 2400 "$docker" build --pull=false -t shardis .'
fi
bg_run

if [ $asan_ok = 1 ]; then
  step "unit tests (asan)" ctest_run asan
  # One pass of the integration suite, on the binary that also reports memory errors and undefined
  # behaviour. A second pass on the release binary cost ten more minutes of CI; the release
  # binary still runs the benchmark smoke test below and, in the image, the container tests.
  # The suite mostly waits (servers starting, timeouts, sleeps): one file per CPU at a time
  # halves its time (--dist loadfile keeps a file's module-scoped servers in one worker).
  # Left out here, run on the release binary below: the benchmark smoke test, and the memory
  # tests: active defragmentation (under ASan the shards' heaps are malloc: there are no pages to
  # move) and test_memory_*.py, which measure memory (ratios to redis-server, a cgroup's limit)
  # with the allocator they are about.
  SHARDIS_TEST_AOF_CRASH_RUNS=8 step "integration tests (asan)" pytest_run build/asan/shardis tests/integration \
    --ignore=tests/integration/test_benchmarks_smoke.py \
    --ignore=tests/integration/test_active_defrag.py \
    --ignore-glob='tests/integration/test_memory_*.py' -n auto --dist loadfile
else
  for s in "unit tests (asan)" "integration tests (asan)"; do
    skip "$s" "asan build failed"
  done
fi

# Every fuzz target of tests/fuzz for a few seconds from its seed corpus (which holds the inputs
# of every bug they found): a regression check, not a search. scripts/fuzz.sh searches.
if bg_finish "build fuzz targets (clang, asan)"; then
  step "fuzz targets (clang, asan)" bash scripts/fuzz.sh all 5
else
  skip "fuzz targets (clang, asan)" "their build failed"
fi
if [ $release_ok = 1 ]; then
  step "benchmark smoke test (release)" pytest_run build/release/shardis \
    tests/integration/test_benchmarks_smoke.py
  # Active defragmentation needs mimalloc's pages, which the ASan build does not have: its unit
  # test (whose page tests are compiled only with mimalloc) and the memory integration tests run
  # here, one file per CPU at a time.
  memory_tests() {
    bash scripts/build.sh release core_sparse_pages_test &&
      build/release/tests/core/core_sparse_pages_test --gtest_brief=1 &&
      pytest_run build/release/shardis tests/integration/test_active_defrag.py \
        tests/integration/test_memory_*.py -n auto --dist loadfile
  }
  step "memory tests (release)" memory_tests
else
  skip "benchmark smoke test (release)" "release build failed"
  skip "memory tests (release)" "release build failed"
fi

tsan_run() {
  local t
  for t in "${TSAN_TESTS[@]}"; do
    TSAN_OPTIONS=halt_on_error=1 "$(find build/tsan/tests -name "$t" -type f | head -1)" \
      --gtest_brief=1 || return 1
  done
}
if bg_finish "build tsan (io, shard tests)"; then
  step "unit tests (tsan: io, shard)" tsan_run
else
  skip "unit tests (tsan: io, shard)" "the tsan build failed"
fi

step "deploy files" "$PYTHON" -m pytest -q -rfEs tests/container/test_manifests.py

image_test() {
  local docker
  docker=$(bash "$DOCKER_LOCAL" | tail -1) || return 1
  SHARDIS_DOCKER=$docker timeout -k 30 2400 "$PYTHON" -m pytest -q -s -rfEs \
    tests/container/test_image.py
}
if [ -f "$DOCKER_LOCAL" ]; then
  # The test runs even when the background build failed: its own build then shows why.
  bg_finish "build container image"
  step "container image" image_test
else
  section "container image"
  echo "---- container image: not run, and not counted as a failure: no docker-local tool at" \
    "$DOCKER_LOCAL (set SHARDIS_DOCKER_LOCAL)"
  not_run+=("container image (no $DOCKER_LOCAL)")
fi

section "summary"
for s in "${passed[@]}"; do echo "  ok      $s"; done
for s in "${not_run[@]}"; do echo "  not run $s"; done
for s in "${failed[@]}"; do echo "  FAILED  $s"; done
echo "steps: ${#passed[@]} passed, ${#failed[@]} failed, ${#not_run[@]} not run"
[ ${#failed[@]} -eq 0 ]
