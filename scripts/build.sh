#!/usr/bin/env bash
# Configures (once) and builds shardis with CMake + Ninja.
#   scripts/build.sh [release|asan|tsan] [ninja targets...]
# Build trees: build/release, build/asan (ASan+UBSan), build/tsan. Re-running only rebuilds
# what changed; Ninja re-runs CMake by itself when a CMakeLists.txt changes.
# Extra CMake arguments for the first configure can be given in $CMAKE_ARGS.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

type=${1:-release}
shift || true
case "$type" in
  release) sanitize= ;;
  asan) sanitize=address ;;
  tsan) sanitize=thread ;;
  *) echo "usage: $0 [release|asan|tsan] [targets...]" >&2; exit 2 ;;
esac

dir=build/$type
if [ ! -f "$dir/build.ninja" ]; then
  args=(-G Ninja -S . -B "$dir" "-DSHARDIS_SANITIZE=$sanitize")
  if command -v ccache >/dev/null; then args+=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache); fi
  # shellcheck disable=SC2206  # CMAKE_ARGS is deliberately word-split
  args+=(${CMAKE_ARGS:-})
  cmake "${args[@]}"
fi
ninja -C "$dir" "$@"
