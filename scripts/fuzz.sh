#!/usr/bin/env bash
# Builds the libFuzzer harnesses (clang, ASan+UBSan) and runs each for
# SECONDS (default 60), one after another.
#   scripts/fuzz.sh [SECONDS] [HARNESS...]
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-60}
shift || true
harnesses=("$@")
[ ${#harnesses[@]} -gt 0 ] || harnesses=(fuzz_onnx_import fuzz_tensor_pb fuzz_rules fuzz_run)
dir=build-fuzz
mkdir -p "$dir"
CC=clang cmake -S . -B "$dir" -DXF_FUZZ=ON -DXF_ENABLE_CUDA=OFF -DBUILD_TESTING=OFF \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo >"$dir/configure.log" 2>&1 || { cat "$dir/configure.log"; exit 1; }
cmake --build "$dir" -j"$(nproc)" --target "${harnesses[@]}"
for h in "${harnesses[@]}"; do
  seeds=tests/fuzz/corpus/${h#fuzz_}
  case "$h" in fuzz_onnx_import | fuzz_run) seeds=tests/fuzz/corpus/onnx ;; esac
  work="$dir/corpus-$h"
  mkdir -p "$work" "$dir/artifacts"
  echo "== $h for ${secs}s (seeds: $seeds)"
  # XF_KERNEL_CACHE empty: the cpu backend's timed kernel choices for the
  # fuzzed graphs stay out of the user's cache file
  XF_KERNEL_CACHE= ASAN_OPTIONS=detect_leaks=1 "$dir/tests/fuzz/$h" "$work" "$seeds" -max_total_time="$secs" \
    -rss_limit_mb=2048 -timeout=10 -print_final_stats=1 -artifact_prefix="$dir/artifacts/$h-" \
    2>"$dir/$h.log" || { tail -40 "$dir/$h.log"; echo "$h: FINDING (see $dir/artifacts)"; exit 1; }
  grep -E "stat::number_of_executed_units|stat::peak_rss_mb|Done " "$dir/$h.log" || tail -3 "$dir/$h.log"
done
