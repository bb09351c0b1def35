#!/usr/bin/env bash
# Downloads, as .deb files into DIR (default: debs/, ignored by git), the
# Debian 12 packages xflow's build and tests need beyond a compiler, CMake
# and CUDA: protobuf-c (library and protoc-c), Z3, Check, pkgconf, the ONNX
# headers that hold onnx.proto and the ONNX backend test data.  A machine that cannot reach a package
# registry (a bare GPU machine, say) builds with them after
#   . scripts/use-debs.sh DIR
# which unpacks them under a prefix of their own, never into /.
#   scripts/fetch-debs.sh [DIR]
set -euo pipefail
dir=${1:-debs}
pkgs=(libprotobuf-c1 libprotobuf-c-dev protobuf-c-compiler libprotoc32 libprotobuf32
      libz3-4 libz3-dev check libsubunit0 libsubunit-dev
      pkgconf pkgconf-bin libpkgconf3 libonnx-dev libonnx-testdata)
mkdir -p "$dir"
cd "$dir"
rm -f ./*.deb
# apt-get download writes into the current directory; as root it warns that
# it cannot drop privileges there, which is harmless.
apt-get download "${pkgs[@]}" 2>&1 | grep -v "^W: Download is performed unsandboxed" || true
n=$(ls ./*.deb 2>/dev/null | wc -l)
if [ "$n" -ne ${#pkgs[@]} ]; then
  echo "fetch-debs: got $n of ${#pkgs[@]} packages in $dir (is this Debian 12 with its package lists? try apt-get update)" >&2
  exit 1
fi
echo "fetch-debs: ${#pkgs[@]} packages, $(du -sh . | cut -f1), in $dir"
