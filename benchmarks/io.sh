#!/usr/bin/env bash
# Import + export of a ResNet-50-sized model (25.6 M parameters, ~100 MB):
# wall time and peak RSS.  Usage: benchmarks/io.sh [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
model="$build/bench/resnet50.onnx"
mkdir -p "$build/bench"
[ -f "$model" ] || "$build/tools/xflow-zoo" resnet50 -o "$model"
"$build/benchmarks/bench-io" "$model" --repeat 3
