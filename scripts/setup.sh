#!/usr/bin/env bash
# Installs every Debian package xflow needs to build and test (Debian 12).
# CUDA (toolkit, cuDNN, cuBLAS) is optional and expected under /usr/local/cuda.
set -euo pipefail
pkgs=(build-essential cmake pkg-config protobuf-c-compiler libprotobuf-c-dev
      libonnx-dev libonnx-testdata python3-onnx check libz3-dev
      libopenblas-dev libdnnl-dev ocl-icd-opencl-dev gnuplot-nox
      clang libclang-rt-14-dev valgrind
      libjpeg-dev libpng-dev libtiff-dev libwebp-dev libopenjp2-7-dev libnetpbm-dev libstb-dev)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#pkgs[@]} packages present"
  exit 0
fi
echo "setup: installing ${missing[*]}"
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
