#!/usr/bin/env bash
# The GPU check, from scratch, on a machine with an NVIDIA GPU:
#   benchmarks/gpu-check.sh OUTDIR
# builds xflow into a fresh build directory (build-gpu), runs the CUDA test
# suite and the quick suites, then times the zoo models, original and
# xflowc-optimized (--cost analytic:h200), fp32, on xflow's cuda backend,
# with TensorRT's trtexec and PyTorch eager where they are at hand.  Logs,
# bench.md, bench.json and a summary go to OUTDIR.  Every step has a time
# limit; the whole check is meant to finish within 8 minutes on an H200
# machine with 16 cores.  Without a usable GPU it stops after the build,
# saying so ("no CUDA device: ..."), with exit status 2.
#
# A GPU machine that cannot reach a package registry builds with the .deb
# files of debs/ (made beforehand by scripts/fetch-debs.sh on a Debian 12
# machine that can), unpacked under a prefix of their own.  cuDNN and cuBLAS
# are taken from the CUDA toolkit, the system, or Python's nvidia packages,
# whichever has them first.
set -uo pipefail
if [ $# -ne 1 ] || [ "$1" = "-h" ] || [ "$1" = "--help" ]; then
  echo "usage: benchmarks/gpu-check.sh OUTDIR" >&2
  exit 64
fi
mkdir -p "$1" || exit 1
out=$(cd "$1" && pwd)
cd "$(dirname "$0")/.."
build=build-gpu
# cuDNN loads its sub-libraries (cnn, ops, engines) at run time by name
export LD_LIBRARY_PATH=/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
jobs=$(nproc)
summary="$out/summary.txt"
: >"$summary"
say() { echo "gpu-check: $*" | tee -a "$summary"; }
t0=$(date +%s)
elapsed() { echo $(( $(date +%s) - t0 )); }

# Runs a step under a time limit with its output in OUTDIR/NAME.log;
# returns the step's status (124: timed out).
step() {
  local name=$1 limit=$2
  shift 2
  local s=$(date +%s)
  timeout --kill-after=10 "$limit" "$@" >"$out/$name.log" 2>&1
  local rc=$?
  say "$name: exit $rc after $(( $(date +%s) - s )) s (limit $limit s; log $name.log)"
  return $rc
}

say "started $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(uname -n), $jobs cores"

# The first file under the CUDA toolkit, the system's folders or Python's
# nvidia packages whose name matches the pattern $1.
py_nvidia_dirs() {
  python3 -c 'import site; print("\n".join(p + "/nvidia" for p in site.getsitepackages()))' 2>/dev/null
}
find_first() {
  local d f
  for d in /usr/local/cuda/include /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux \
           /usr/include /usr/lib/x86_64-linux-gnu $(py_nvidia_dirs); do
    [ -d "$d" ] || continue
    f=$(find -L "$d" -maxdepth 4 -name "$1" -print -quit 2>/dev/null)
    [ -n "$f" ] && { echo "$f"; return 0; }
  done
  return 1
}
{
  echo "== nvidia-smi"
  if command -v nvidia-smi >/dev/null; then nvidia-smi; else echo "nvidia-smi not on PATH"; fi
  echo "== versions"
  /usr/local/cuda/bin/nvcc --version 2>&1 | tail -2 || echo "nvcc not found"
  grep -hE '#define CUDNN_(MAJOR|MINOR|PATCHLEVEL) ' /usr/local/cuda/include/cudnn_version*.h 2>/dev/null | head -3
  cmake --version | head -1
  gcc --version | head -1
  grep -h PRETTY_NAME /etc/os-release 2>/dev/null
  for t in cc gcc make ninja pkg-config protoc-c dpkg-deb python3; do
    echo "$t: $(command -v $t || echo absent)"
  done
  for f in cudnn.h 'libcudnn.so*' cublas_v2.h 'libcublas.so*'; do
    echo "$f: $(find_first "$f" || echo absent)"
  done
  command -v trtexec >/dev/null && echo "trtexec: $(command -v trtexec)" || echo "trtexec: absent (not on PATH)"
  python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)' 2>/dev/null ||
    echo "PyTorch: absent (python3 cannot import torch)"
} >"$out/machine.txt" 2>&1
cat "$out/machine.txt"

# Packages: the carried debs/ when there are any, else scripts/setup.sh
# installs what is missing; without network that fails, which is fine when
# they are already there (the build says if not).
if ls debs/*.deb >/dev/null 2>&1; then
  . scripts/use-debs.sh debs "${TMPDIR:-/tmp}/xflow-debs" >"$out/setup.log" 2>&1 &&
    say "$(tail -1 "$out/setup.log")" || { say "cannot use debs/: $(tail -1 "$out/setup.log")"; exit 1; }
else
  step setup 90 scripts/setup.sh || say "setup failed (no network?); building with the packages present"
fi

# cuDNN and cuBLAS where the toolkit lacks them; their folders also go on
# LD_LIBRARY_PATH, for cuDNN's sub-libraries and cuBLAS's cublasLt.
cmake_args=()
if [ ! -e /usr/local/cuda/include/cudnn.h ] && h=$(find_first cudnn.h) && l=$(find_first 'libcudnn.so*'); then
  cmake_args+=(-DXF_CUDNN_INCLUDE_DIR="$(dirname "$h")" -DXF_CUDNN_LIBRARY="$l")
  export LD_LIBRARY_PATH="$(dirname "$l"):$LD_LIBRARY_PATH"
  say "cuDNN from $(dirname "$l")"
fi
if ! ls /usr/local/cuda/lib64/libcublas.so* >/dev/null 2>&1 && h=$(find_first cublas_v2.h) &&
   l=$(find_first 'libcublas.so*'); then
  cmake_args+=(-DXF_CUBLAS_INCLUDE_DIR="$(dirname "$h")" -DXF_CUBLAS_LIBRARY="$l")
  export LD_LIBRARY_PATH="$(dirname "$l"):$LD_LIBRARY_PATH"
  say "cuBLAS from $(dirname "$l")"
fi
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
# the tests' model checks need a Python with onnx and numpy: the one on PATH
command -v python3 >/dev/null && cmake_args+=(-DXF_PYTHON="$(command -v python3)")
data="${TMPDIR:-/tmp}/xflow-debs/usr/share/libonnx-testdata/data"
[ -d "$data" ] && cmake_args+=(-DXF_ONNX_TESTDATA="$data")

# Without -Werror: another compiler may warn where this project's does not,
# and a warning must not cost the check.
rm -rf "$build"
step configure 120 cmake -S . -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo "${cmake_args[@]}" ||
  { cat "$out/configure.log"; exit 1; }
grep -E '^-- xflow:' "$out/configure.log" | tee -a "$summary"
grep -q "the cuda backend will be built" "$out/configure.log" || { say "the cuda backend is not in this build; stopping"; exit 1; }
step build 360 cmake --build "$build" -j"$jobs" || { tail -40 "$out/build.log"; exit 1; }

# Is there a device?  One run of the bundled example says.
if ! "$build/tools/xflow-run" examples/inception_block.onnx --backend cuda -q >"$out/probe.log" 2>&1; then
  say "$(tail -1 "$out/probe.log")"
  grep -q "no CUDA device" "$out/probe.log" && say "stopping: no CUDA device on this machine" ||
    say "stopping: the cuda backend cannot run the bundled example"
  exit 2
fi

# Tests: the CUDA suite, then the quick suites (each under its limit).
# (test_cuda_backend_gpu holds the device checks; ctest reports it as
# skipped when the suite finds no usable GPU)
# (launches block here, so that a kernel's fault is reported at its node)
CUDA_LAUNCH_BLOCKING=1 step test-cuda 240 ctest --test-dir "$build" --output-on-failure -V \
  -R '^test_cuda_backend(_gpu)?$'
grep -E '^[0-9]+: [0-9]+%: Checks|Skipped|skipped: no GPU|FAILED|cuda conformance|tests passed|tests failed' \
  "$out/test-cuda.log" | tee -a "$summary"
say "nodes that cuDNN or cuBLAS refused, run on the host instead: $(grep -c 'runs through cpu_ref on the host instead' "$out/test-cuda.log")"
step test-quick 120 ctest --test-dir "$build" --output-on-failure -j"$jobs" \
  -R '^test_(core|runtime|memplan|proto|rule|canon|tools)$'
grep -E 'tests passed|tests failed' "$out/test-quick.log" | tee -a "$summary"

# xflow's cuda backend, original vs optimized, every zoo model; then
# trtexec on the same models where it is installed, as a step of its own
# (its engine builds are slow; a step cut short loses only its own table).
bench() {
  local name=$1 backends=$2 limit=$3
  step "$name" "$limit" python3 "$build/tools/xflow-bench" --backends "$backends" --cost analytic:h200 --iters 20 \
    --time-limit $(( limit - 40 )) --slow-limit 20 --backend-budget 20 --out "$out/$name" -q
  [ -f "$out/$name/bench.md" ] && tee -a "$summary" <"$out/$name/bench.md"
}
left=$(( 400 - $(elapsed) ))
bench bench-cuda cuda $(( left > 300 ? 240 : left > 100 ? left - 40 : 60 ))

# The measured cost model: SqueezeNet searched with --cost cuda, every op
# timed on the GPU (cold cache), then again from the cache file.
if [ "$(elapsed)" -gt 400 ]; then
  say "measured cost model: no time left"
elif "$build/tools/xflow-zoo" squeezenet -o "$build/squeezenet.onnx" >/dev/null 2>&1; then
  for pass in cold warm; do
    step "cost-cuda-$pass" 60 "$build/tools/xflowc" "$build/squeezenet.onnx" -o "$build/squeezenet.opt.onnx" \
      --cost cuda --cost-cache "$out/cost-cuda.txt"
    grep -E '^(cost model|search: [0-9.]+ s|estimated)' "$out/cost-cuda-$pass.log" | tee -a "$summary"
  done
fi
if command -v trtexec >/dev/null; then
  left=$(( 400 - $(elapsed) ))
  [ "$left" -gt 80 ] && bench bench-trt trt "$left" || say "TensorRT: no time left for trtexec"
else
  say "TensorRT: absent (trtexec not on PATH)"
fi

# PyTorch eager (cuDNN), fp32, batch 1, on the torchvision architectures
# the zoo models follow; only where torch and torchvision import.
if python3 -c 'import torch, torchvision' 2>/dev/null; then
  step torch 60 python3 - <<'EOF'
import time, torch, torchvision
torch.backends.cudnn.benchmark = True
torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False
for name, size in (("resnet50", 224), ("resnext50_32x4d", 224), ("inception_v3", 299), ("squeezenet1_1", 224)):
    kw = {"aux_logits": False, "init_weights": False} if name == "inception_v3" else {}
    m = getattr(torchvision.models, name)(weights=None, **kw).cuda().eval()
    x = torch.randn(1, 3, size, size, device="cuda")
    with torch.no_grad():
        for _ in range(10):
            m(x)
        torch.cuda.synchronize()
        times = []
        for _ in range(50):
            t = time.perf_counter()
            m(x)
            torch.cuda.synchronize()
            times.append(time.perf_counter() - t)
    times.sort()
    print(f"pytorch eager {name} batch 1 fp32: median {1e3 * times[len(times) // 2]:.3f} ms")
EOF
  grep "pytorch eager" "$out/torch.log" | tee -a "$summary"
else
  say "PyTorch eager: absent (python3 cannot import torch and torchvision)"
fi
say "finished after $(elapsed) s"
