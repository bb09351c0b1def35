#!/usr/bin/env bash
# Differential testing of the optimizer: COUNT random valid graphs (default
# 10000) through `xflowc --check`.  Failing models are kept in the work dir.
#   scripts/difftest.sh [COUNT] [SEED] [OPS]
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x build/tools/xflowc ] || scripts/build.sh build
work=build/difftest
mkdir -p "$work"
build/tests/xflow-difftest "$PWD/build/tools/xflowc" "$work" "${1:-10000}" "${2:-1}" "${3:-10}"
