#!/usr/bin/env bash
# Configures (once) and builds shardis with CMake + Ninja.
#   scripts/build.sh [release|asan|tsan] [ninja targets...]
# Build trees: build/release, build/asan (ASan+UBSan, clang, with the fuzz targets), build/tsan. Re-running only rebuilds
# what changed; Ninja re-runs CMake by itself when a CMakeLists.txt changes.
# Extra CMake arguments for the first configure can be given in $CMAKE_ARGS.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

type=${1:-release}
shift || true
compiler=   # empty: CMake's default (g++)
case "$type" in
  release) sanitize= ;;
  # clang for ASan+UBSan: the same tree builds the libFuzzer targets (tests/fuzz), which only
  # clang can, so CI compiles the server once for both.
  asan) sanitize=address compiler=clang++-14 ;;
  tsan) sanitize=thread ;;
  *) echo "usage: $0 [release|asan|tsan] [targets...]" >&2; exit 2 ;;
esac

dir=build/$type
# A tree configured with another compiler (an asan tree from before it moved to clang) is made
# anew: CMake cannot switch the compiler of an existing tree.
if [ -n "$compiler" ] && [ -f "$dir/CMakeCache.txt" ] &&
  ! grep -q "^CMAKE_CXX_COMPILER:[A-Z]*=.*$compiler\$" "$dir/CMakeCache.txt"; then
  echo "build.sh: $dir was configured with another compiler; configuring it anew for $compiler" >&2
  rm -rf "$dir"
fi
if [ ! -f "$dir/build.ninja" ]; then
  args=(-G Ninja -S . -B "$dir" "-DSHARDIS_SANITIZE=$sanitize")
  if [ -n "$compiler" ]; then args+=("-DCMAKE_CXX_COMPILER=$compiler"); fi
  if command -v ccache >/dev/null; then args+=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache); fi
  # shellcheck disable=SC2206  # CMAKE_ARGS is deliberately word-split
  args+=(${CMAKE_ARGS:-})
  cmake "${args[@]}"
fi
ninja -C "$dir" "$@"
