#!/usr/bin/env bash
# The main job on the bundled example: build, optimize the example model
# with a numerical check, and time both models on the reference backend.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh build
mkdir -p build/example
build/tools/xflowc examples/inception_block.onnx -o build/example/inception_block.opt.onnx --check
echo
echo "== original model on cpu_ref"
build/tools/xflow-run examples/inception_block.onnx --iters 10 -q
echo "== optimized model on cpu_ref"
build/tools/xflow-run build/example/inception_block.opt.onnx --iters 10 -q
