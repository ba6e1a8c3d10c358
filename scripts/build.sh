#!/usr/bin/env bash
# Configures (once) and builds shardis with CMake + Ninja.
#   scripts/build.sh [release|asan|tsan|fuzz] [ninja targets...]
# Build trees: build/release, build/asan (ASan+UBSan), build/tsan, build/fuzz (ASan+UBSan with
# clang, for the libFuzzer targets of tests/fuzz). Re-running only rebuilds what changed; Ninja re-runs CMake by itself when a CMakeLists.txt changes.
# Extra CMake arguments for the first configure can be given in $CMAKE_ARGS.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

type=${1:-release}
shift || true
compiler=   # empty: CMake's default (g++)
case "$type" in
  release) sanitize= ;;
  # g++, not clang: clang calls __asan_handle_no_return before every throw (a Lua error is a C++
  # exception), which ASan ignores on a fiber stack it does not know ("ASan is ignoring requested
  # __asan_handle_no_return" in the log), so the unwound frames keep their poison and a later
  # frame there gets a false stack-buffer-overflow/underflow (seen in the integration suite a few
  # times per run). Boost.Context's fcontext switches carry no ASan fiber annotations. The fuzz
  # targets run no fibers.
  asan) sanitize=address compiler=g++ ;;
  tsan) sanitize=thread ;;
  # The libFuzzer targets (tests/fuzz), which only clang builds.
  fuzz) sanitize=address compiler=clang++-14 ;;
  *) echo "usage: $0 [release|asan|tsan|fuzz] [targets...]" >&2; exit 2 ;;
esac

dir=build/$type
# A tree configured with another compiler (an asan tree configured for clang) is made anew: CMake cannot switch the compiler of an existing tree.
if [ -n "$compiler" ] && [ -f "$dir/CMakeCache.txt" ] &&
  ! grep -q "^CMAKE_CXX_COMPILER:[A-Z]*=.*$compiler\$" "$dir/CMakeCache.txt"; then
  echo "build.sh: $dir was configured with another compiler; configuring it anew for $compiler" >&2
  rm -rf "$dir"
fi
if [ ! -f "$dir/build.ninja" ]; then
  args=(-G Ninja -S . -B "$dir" "-DSHARDIS_SANITIZE=$sanitize")
  if [ -n "$compiler" ]; then args+=("-DCMAKE_CXX_COMPILER=$compiler"); fi
  # ccache when installed and not disabled (CCACHE_DISABLE=1 builds as a machine without it:
  # then the common headers are precompiled instead, see CMakeLists.txt).
  if command -v ccache >/dev/null && [ "${CCACHE_DISABLE:-}" != 1 ]; then
    args+=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  fi
  # shellcheck disable=SC2206  # CMAKE_ARGS is deliberately word-split
  args+=(${CMAKE_ARGS:-})
  cmake "${args[@]}"
fi
ninja -C "$dir" "$@"
