#!/usr/bin/env bash
# The main job on the bundled example: build, optimize the example model
# with a numerical check, and time both models on each CPU backend.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh build
mkdir -p build/example
build/tools/xflowc examples/inception_block.onnx -o build/example/inception_block.opt.onnx --check
for backend in $(build/tools/xflow-run --list-backends); do
  echo
  echo "== $backend: original, then optimized"
  OMP_WAIT_POLICY=passive build/tools/xflow-run examples/inception_block.onnx --backend "$backend" --iters 20 -q
  OMP_WAIT_POLICY=passive build/tools/xflow-run build/example/inception_block.opt.onnx --backend "$backend" --iters 20 -q
done
