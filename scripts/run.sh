#!/usr/bin/env bash
# Builds shardis (release) and starts it in the foreground with its embedded defaults.
#   bash scripts/run.sh [shardis flags...]      e.g. bash scripts/run.sh --port 6380 --threads 2
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bash scripts/install-deps.sh build
bash scripts/build.sh release >&2
exec build/release/shardis --logtostderr "$@"
