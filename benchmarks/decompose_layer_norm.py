"""Writes a model with every LayerNormalization (over the last dim, with a
scale and a bias) written out as exporters before opset 17 write it:
ReduceMean, Sub, Pow 2, ReduceMean, Add of epsilon, Sqrt, Div, Mul by the
scale, Add of the bias; the opset becomes 13 where it was higher (the
zoo's models use no op that changed between them).

usage: decompose_layer_norm.py IN.onnx OUT.onnx  (with a Python whose onnx
and numpy import)
"""
import sys

import numpy as np
import onnx
from onnx import helper as h
from onnx import numpy_helper as nh


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    m = onnx.load(sys.argv[1])
    g = m.graph
    nodes, extra = [], []
    two = nh.from_array(np.array(2.0, np.float32), "ln_two")
    count = 0
    for n in g.node:
        axis = next((a.i for a in n.attribute if a.name == "axis"), -1)
        if n.op_type != "LayerNormalization" or len(n.input) < 3 or len(n.output) != 1 or axis != -1:
            nodes.append(n)
            continue
        eps = next((a.f for a in n.attribute if a.name == "epsilon"), 1e-5)
        x, scale, bias = n.input[:3]
        p = f"ln{count}_"
        count += 1
        extra.append(nh.from_array(np.array(eps, np.float32), p + "eps"))
        nodes += [h.make_node("ReduceMean", [x], [p + "u"], axes=[-1], keepdims=1),
                  h.make_node("Sub", [x, p + "u"], [p + "d"]),
                  h.make_node("Pow", [p + "d", "ln_two"], [p + "d2"]),
                  h.make_node("ReduceMean", [p + "d2"], [p + "v"], axes=[-1], keepdims=1),
                  h.make_node("Add", [p + "v", p + "eps"], [p + "ve"]),
                  h.make_node("Sqrt", [p + "ve"], [p + "sd"]),
                  h.make_node("Div", [p + "d", p + "sd"], [p + "n"]),
                  h.make_node("Mul", [p + "n", scale], [p + "ns"]),
                  h.make_node("Add", [p + "ns", bias], [n.output[0]])]
    del g.node[:]
    g.node.extend(nodes)
    g.initializer.extend([two] + extra)
    for o in m.opset_import:
        if o.domain in ("", "ai.onnx") and o.version > 13:
            o.version = 13
    onnx.save(m, sys.argv[2])
    print(f"wrote {sys.argv[2]}: {count} LayerNormalizations written out")


if __name__ == "__main__":
    main()
