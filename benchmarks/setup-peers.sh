#!/usr/bin/env bash
# Installs the benchmark peers that come from PyPI (ONNX Runtime, numpy)
# into .venv-bench at the repository root.  The venv sees the system's
# site-packages, so Debian's python3-onnx stays usable from it.  Safe to
# run again: an existing venv with both packages is left as it is.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=.venv-bench
if [ -x "$venv/bin/python" ] && "$venv/bin/python" -c 'import onnxruntime, numpy' 2>/dev/null; then
  echo "setup-peers: $venv already has onnxruntime $("$venv/bin/python" -c 'import onnxruntime; print(onnxruntime.__version__)')"
  exit 0
fi
/usr/bin/python3 -m venv --system-site-packages "$venv"
"$venv/bin/python" -m pip install --quiet onnxruntime numpy
echo "setup-peers: installed onnxruntime $("$venv/bin/python" -c 'import onnxruntime; print(onnxruntime.__version__)') into $venv"
