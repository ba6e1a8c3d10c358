#!/usr/bin/env bash
# Installs the Debian 12 packages shardis needs, only those that are missing.
#   scripts/install-deps.sh build   compilers, CMake/Ninja and the C++ libraries
#   scripts/install-deps.sh test    the build set plus redis-server/redis-tools and pytest
# A no-op (no apt-get at all) when everything is already installed.
set -euo pipefail

BUILD_PKGS=(
  cmake ninja-build g++ pkg-config
  liburing-dev libabsl-dev libmimalloc-dev libgflags-dev libgoogle-glog-dev
  libgtest-dev libgmock-dev libboost-fiber-dev libboost-context-dev libbenchmark-dev
  liblua5.1-0-dev lua-cjson-dev lua-bitop-dev
  libssl-dev
)
# openssl (the CLI): the TLS tests make their certificates with it.
# clang-14 and its runtimes (ASan, UBSan, libFuzzer): the asan build and the fuzz targets.
# python3-pytest-xdist: the integration suite runs its test files on every CPU at once.
TEST_PKGS=(redis-server redis-tools python3-redis python3-pytest python3-pytest-xdist memcached
  python3-pymemcache python3-prometheus-client python3-yaml curl clang-14 libclang-rt-14-dev
  openssl)

set_name=${1:-build}
case "$set_name" in
  build) wanted=("${BUILD_PKGS[@]}") ;;
  test) wanted=("${BUILD_PKGS[@]}" "${TEST_PKGS[@]}") ;;
  *) echo "usage: $0 [build|test]" >&2; exit 2 ;;
esac

installed() {  # PACKAGE -> 0 if dpkg has it fully installed
  [ "$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null)" = "install ok installed" ]
}

missing=()
for pkg in "${wanted[@]}"; do
  installed "$pkg" || missing+=("$pkg")
done
[ ${#missing[@]} -eq 0 ] && exit 0

sudo=()
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "install-deps: need root or sudo to install: ${missing[*]}" >&2; exit 1; }
  sudo=(sudo)
fi

echo "install-deps: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update -qq >&2
"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive \
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
