#!/usr/bin/env bash
# Differential testing of the optimizer: COUNT random valid graphs (default
# 10000) through `xflowc --check`; with --backend NAME, of that backend:
# COUNT random convolutional graphs on it and on cpu_ref.  Failing models
# are kept in the work dir.
#   scripts/difftest.sh [--backend NAME] [COUNT] [SEED] [OPS]
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x build/tools/xflowc ] || scripts/build.sh build
work=build/difftest
mkdir -p "$work"
if [ "${1:-}" = --backend ]; then
  build/tests/xflow-difftest --backend "$2" "$work" "${3:-10000}" "${4:-1}" "${5:-10}"
else
  build/tests/xflow-difftest "$PWD/build/tools/xflowc" "$work" "${1:-10000}" "${2:-1}" "${3:-10}"
fi
