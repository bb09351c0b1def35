"""Writes the com.microsoft.nchwc fixtures of test_nchwc: small models that
ONNX Runtime's NCHWc transformer rewrites (graph optimization level
ORT_ENABLE_ALL) on a CPU with AVX-512F, where its block is 16 channels,
saved as ONNX Runtime saves them, with an input and ONNX Runtime's output.

  python3 make_nchwc.py OUTDIR   (needs onnx, onnxruntime and numpy)

nets.onnx has channel counts that fix the block (24 channels padded to
32); its dims are static.  dyn.onnx has symbolic height and width, so that
ONNX Runtime adds two of its outputs through Reshapes to 5-D blocks.
"""
import os
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from peer_fixtures import write_fixture  # noqa: E402

rng = np.random.default_rng(7)


def w(*shape, scale=0.2):
    return (rng.standard_normal(shape) * scale).astype(np.float32)


class Net:
    def __init__(self):
        self.nodes, self.inits, self.k = [], [], 0

    def init(self, arr):
        self.k += 1
        name = f"p{self.k}"
        self.inits.append(numpy_helper.from_array(arr, name))
        return name

    def node(self, op, ins, domain="", **attrs):
        self.k += 1
        out = f"t{self.k}"
        self.nodes.append(helper.make_node(op, ins, [out], name=f"n{self.k}", domain=domain, **attrs))
        return out

    def conv(self, x, cin, cout, k=3, group=1, stride=1, bias=True, **attrs):
        ins = [x, self.init(w(cout, cin // group, k, k))]
        if bias:
            ins.append(self.init(w(cout)))
        return self.node("Conv", ins, kernel_shape=[k, k], pads=[k // 2] * 4, strides=[stride] * 2,
                         group=group, **attrs)


def nets():
    n = Net()
    x = "x"  # 1x3x16x16
    a = n.node("Relu", [n.conv(x, 3, 24)])  # NCHW input, 24 channels padded to 32
    b = n.conv(a, 24, 32)  # reordered input with 8 channels of padding
    bn = n.node("BatchNormalization", [b, n.init(1 + w(32)), n.init(w(32)), n.init(w(32)),
                                       n.init(np.abs(1 + w(32)))], epsilon=1e-5)
    c = n.node("Relu", [bn])
    d = n.conv(c, 32, 32, group=32)  # depthwise
    e = n.node("Sigmoid", [d])
    f = n.conv(e, 32, 32, k=1, bias=False)
    g = n.node("Relu", [n.node("Add", [f, c])])  # conv + sum + activation
    h = n.node("MaxPool", [g], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])  # 8x8
    lk = n.node("LeakyRelu", [n.conv(h, 32, 32, k=1)], alpha=0.1)
    cl = n.node("Clip", [n.conv(lk, 32, 32, k=1), n.init(np.array(0, np.float32)), n.init(np.array(0.5, np.float32))])
    hs = n.node("HardSigmoid", [n.conv(cl, 32, 32, k=1)], alpha=0.3, beta=0.4)
    side = n.conv("x24", 24, 32, k=1)  # a graph input of 24 channels, padded to 32
    h = n.node("Add", [hs, side])
    i = n.conv(h, 32, 64, group=2)  # grouped, 16 + 16 per group
    j = n.node("Tanh", [i])
    k = n.node("AveragePool", [j], kernel_shape=[2, 2], strides=[1, 1], pads=[0, 0, 1, 1], count_include_pad=0)
    m = n.node("Concat", [k, n.conv(h, 32, 16, k=1)], axis=1)  # 80 channels
    s = n.init(np.array([1, 1, 2, 2], np.float32))
    up = n.node("Resize", [m, "", s], mode="nearest", coordinate_transformation_mode="asymmetric",
                nearest_mode="floor")  # 16x16
    lin = n.node("Resize", [n.conv(up, 80, 32, k=1), "", s], mode="linear",
                 coordinate_transformation_mode="half_pixel")  # 32x32
    mul = n.node("Mul", [lin, n.node("Relu", [lin])])
    nhwc = n.node("Transpose", [mul], perm=[0, 2, 3, 1])
    gmax = n.node("GlobalMaxPool", [n.conv(mul, 32, 20, k=1)])  # 20 padded to 32
    gavg = n.node("GlobalAveragePool", [j])
    y1 = n.node("Flatten", [gmax])
    y2 = n.node("Flatten", [gavg])
    outs = [helper.make_tensor_value_info(v, TensorProto.FLOAT, d)
            for v, d in ((y1, [1, 20]), (y2, [1, 64]), (nhwc, [1, 32, 32, 32]))]
    graph = helper.make_graph(n.nodes, "nchwc_nets",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 16, 16]),
                               helper.make_tensor_value_info("x24", TensorProto.FLOAT, [1, 24, 8, 8])],
                              outs, n.inits)
    return graph, {"x": w(1, 3, 16, 16, scale=1), "x24": w(1, 24, 8, 8, scale=1)}


def dyn():
    n = Net()
    p = n.conv("x", 16, 16)
    q = n.conv("z", 16, 16)
    r = n.node("Relu", [n.node("Add", [n.node("Relu", [p]), n.node("Relu", [q])])])
    t = n.node("Transpose", ["h"], perm=[0, 3, 1, 2])  # NHWC input reordered directly
    u = n.conv(t, 16, 16, k=1)
    out = n.node("MaxPool", [n.node("Add", [r, u])], kernel_shape=[2, 2], strides=[2, 2])
    dims = ["n", 16, "height", "width"]
    graph = helper.make_graph(
        n.nodes, "nchwc_dyn",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, dims),
         helper.make_tensor_value_info("z", TensorProto.FLOAT, ["n", 16, "zh", "zw"]),
         helper.make_tensor_value_info("h", TensorProto.FLOAT, ["n", "height", "width", 16])],
        [helper.make_tensor_value_info(out, TensorProto.FLOAT, ["n", 16, "oh", "ow"])], n.inits)
    feeds = {"x": w(2, 16, 6, 10, scale=1), "z": w(2, 16, 6, 10, scale=1), "h": w(2, 6, 10, 16, scale=1)}
    return graph, feeds


def save(outdir, name, graph, feeds):
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    src = os.path.join(outdir, name + ".orig.onnx")
    onnx.save(model, src)
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    so.optimized_model_filepath = os.path.join(outdir, name + ".onnx")
    sess = ort.InferenceSession(src, so, providers=["CPUExecutionProvider"])
    os.remove(src)
    outs = sess.run(None, feeds)
    opt = onnx.load(so.optimized_model_filepath)
    ops = sorted({(x.domain, x.op_type) for x in opt.graph.node})
    print(name, ops)
    write_fixture(outdir, name, feeds, outs, [o.name for o in sess.get_outputs()])


if __name__ == "__main__":
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
    save(out, "nets", *nets())
    save(out, "dyn", *dyn())
