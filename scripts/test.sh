#!/usr/bin/env bash
# Builds xflow and runs every test suite: a normal build, then the same
# suites under AddressSanitizer + UndefinedBehaviorSanitizer
# (XF_SANITIZE=0 skips the second pass).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh build -DXF_WERROR=ON
ctest --test-dir build --output-on-failure -j2
# ctest shows a skipped entry without its output: print why it was skipped.
grep -h -o 'test_[a-z_]*: skipped: .*' build/Testing/Temporary/LastTest.log || true
# The committed library is what the generator and verifier make now.
build/tools/xflow-gen --check
if [ "${XF_SANITIZE:-1}" != 0 ]; then
  echo "== the same suites under ASan+UBSan"
  scripts/build.sh build-asan -DXF_SANITIZE=ON -DXF_WERROR=ON -DXF_ENABLE_CUDA=OFF
  ASAN_OPTIONS=detect_leaks=1 ctest --test-dir build-asan --output-on-failure -j2
fi
