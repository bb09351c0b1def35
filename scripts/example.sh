#!/usr/bin/env bash
# The main job on the bundled example: build, optimize the example model
# with a numerical check, and time both models on each backend built (a
# backend whose device this machine lacks is skipped, saying so).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh build
mkdir -p build/example
build/tools/xflowc examples/inception_block.onnx -o build/example/inception_block.opt.onnx --check
for backend in $(build/tools/xflow-run --list-backends); do
  echo
  echo "== $backend: original, then optimized"
  if ! out=$(OMP_WAIT_POLICY=passive build/tools/xflow-run examples/inception_block.onnx --backend "$backend" \
               --iters 20 -q 2>&1); then
    if grep -q "no CUDA device" <<<"$out"; then
      echo "skipped: ${out#*: *: }"
      continue
    fi
    echo "$out" >&2
    exit 1
  fi
  echo "$out"
  OMP_WAIT_POLICY=passive build/tools/xflow-run build/example/inception_block.opt.onnx --backend "$backend" --iters 20 -q
done
