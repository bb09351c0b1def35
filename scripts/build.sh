#!/usr/bin/env bash
# Configures and builds xflow into a build directory (default: build).
#   scripts/build.sh [BUILD_DIR] [extra cmake args...]
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-build}
shift || true
mkdir -p "$dir"
cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >"$dir/configure.log" 2>&1 || {
  cat "$dir/configure.log"; exit 1; }
grep -E '^-- xflow:' "$dir/configure.log" || true
cmake --build "$dir" -j"$(nproc)"
