#!/usr/bin/env bash
# Builds shardis and runs every test: the README's test command and what CI runs.
#   1. installs the missing Debian packages (build + test sets)
#   2. builds build/release (the server, the load generator and rdb_tool only) and build/asan
#      (ASan+UBSan, everything)
#   3. the unit tests (ctest) of the ASan build: where a unit test can find a memory error or
#      undefined behaviour; a release build of them would add a third of the compile time to CI
#      and find nothing more; and each fuzz target (tests/fuzz, built in build/fuzz with clang)
#      for 5 seconds
#   4. the pytest integration suite against build/asan/shardis: the binary that reports memory
#      errors and undefined behaviour (with 8 of test_aof_crash's 20 kill runs: each takes several
#      times as long there), one test file per CPU at a time (pytest-xdist)
#   5. the benchmark suite's smoke test and the memory (active defragmentation) tests against
#      build/release (the Docker image step runs the release build too)
#   6. the io/ and shard/ unit tests under ThreadSanitizer (build/tsan)
#   7. the deploy/ files (Kubernetes manifests, seccomp profile) checked without a cluster
#   8. the Docker image built and run as the README says, only where the docker-local tool is
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

step() {  # NAME COMMAND... : runs one step under a header and records its outcome
  local name=$1 start=$SECONDS rc
  shift
  section "$name"
  "$@"
  rc=$?
  if [ $rc -eq 0 ]; then
    echo "---- $name: ok ($((SECONDS - start)) s)"
    passed+=("$name")
  else
    echo "---- $name: FAILED (exit $rc, $((SECONDS - start)) s)"
    failed+=("$name")
  fi
  return $rc
}

skip() {  # NAME REASON
  section "$1"
  echo "---- $1: not run ($2)"
  failed+=("$1 (not run)")
}

step "install dependencies" bash scripts/install-deps.sh test || exit 1

release_ok=0 asan_ok=0
step "build release" bash scripts/build.sh release shardis loadgen rdb_tool && release_ok=1
step "build asan" bash scripts/build.sh asan && asan_ok=1

ctest_run() { ctest --test-dir "build/$1" --output-on-failure -j2 --no-tests=error; }
pytest_run() {  # BINARY PYTEST-ARGS...
  local bin=$1
  shift
  # The suite bounds its own waits; the outer timeout only stops a runaway hang.
  SHARDIS_BIN="$PWD/$bin" timeout -k 30 1500 "$PYTHON" -m pytest -q -rfEs "$@"
}

# Every fuzz target of tests/fuzz for a few seconds from its seed corpus (which holds the inputs
# of every bug they found): a regression check, not a search. scripts/fuzz.sh searches.
step "fuzz targets (clang, asan)" bash scripts/fuzz.sh all 5
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

# ThreadSanitizer: only the io/ and shard/ tests, where the threads meet.
TSAN_TESTS=(io_spsc_ring_test io_proactor_test io_stream_test shard_db_test shard_shard_set_test shard_tx_queue_test
  shard_transaction_test shard_snapshot_test)
tsan_run() {
  bash scripts/build.sh tsan "${TSAN_TESTS[@]}" || return 1
  local t
  for t in "${TSAN_TESTS[@]}"; do
    TSAN_OPTIONS=halt_on_error=1 "$(find build/tsan/tests -name "$t" -type f | head -1)" \
      --gtest_brief=1 || return 1
  done
}
step "unit tests (tsan: io, shard)" tsan_run

step "deploy files" "$PYTHON" -m pytest -q -rfEs tests/container/test_manifests.py

# The image test needs a Docker daemon and local base images, which the docker-local tool makes
# (no image registry is reachable here). The image is rebuilt from cached layers unless sources
# changed.
DOCKER_LOCAL=${SHARDIS_DOCKER_LOCAL:-../shared/tools/docker-local}
image_test() {
  local docker
  docker=$(bash "$DOCKER_LOCAL" | tail -1) || return 1
  SHARDIS_DOCKER=$docker timeout -k 30 2400 "$PYTHON" -m pytest -q -s -rfEs \
    tests/container/test_image.py
}
if [ -f "$DOCKER_LOCAL" ]; then
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
