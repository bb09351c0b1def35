"""Writes a copy of an ONNX model whose named symbolic dims are fixed at
the sizes given, so that benchmarks/cpu_vs_ort.sh (which takes every
symbolic dim as 1) times it at those sizes: a sequence model at a length
that exercises its recurrence, say.

usage: fix_dims.py IN.onnx OUT.onnx NAME=SIZE [NAME=SIZE ...]
(with a Python whose onnx imports; every NAME must be a dim of an input)
"""
import sys

import onnx


def main():
    if len(sys.argv) < 4 or any("=" not in a for a in sys.argv[3:]):
        sys.exit(__doc__)
    sizes = {}
    for a in sys.argv[3:]:
        name, size = a.split("=", 1)
        sizes[name] = int(size)
    m = onnx.load(sys.argv[1])
    seen = set()
    for v in m.graph.input:
        for d in v.type.tensor_type.shape.dim:
            if d.HasField("dim_param") and d.dim_param in sizes:
                seen.add(d.dim_param)
                d.dim_value = sizes[d.dim_param]
    missing = sorted(set(sizes) - seen)
    if missing:
        sys.exit("fix_dims.py: %s: no input has the dim %s" % (sys.argv[1], ", ".join(missing)))
    onnx.save(m, sys.argv[2])
    print("wrote", sys.argv[2])


if __name__ == "__main__":
    main()
