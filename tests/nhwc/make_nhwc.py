"""Writes the fixtures of test_nhwc: a small convolutional net quantized by
ONNX Runtime's quantize_static (QDQ, uint8 activations, int8 weights per
channel) and saved by ONNX Runtime at ORT_ENABLE_ALL, which writes its
channels-last forms on x86: com.microsoft QLinearConv with channels_last,
NhwcMaxPool, QLinearAveragePool and QLinearGlobalAveragePool with
channels_last, QLinearConcat on the last axis; with an input and ONNX
Runtime's output.

  python3 make_nhwc.py OUTDIR   (needs onnx, onnxruntime and numpy)
"""
import os
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper
from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from peer_fixtures import write_fixture  # noqa: E402

rng = np.random.default_rng(11)


def net():
    inits, nodes = [], []

    def w(name, *shape):
        inits.append(numpy_helper.from_array((rng.standard_normal(shape) * 0.3).astype(np.float32), name))
        return name

    def node(op, ins, out, **attrs):
        nodes.append(helper.make_node(op, ins, [out], name=out, **attrs))
        return out

    a = node("Relu", [node("Conv", ["x", w("w1", 16, 3, 3, 3), w("b1", 16)], "c1", pads=[1] * 4)], "r1")
    p = node("MaxPool", [a], "p1", kernel_shape=[2, 2], strides=[2, 2])  # 8x8
    b = node("Relu", [node("Conv", [p, w("w2", 16, 16, 3, 3), w("b2", 16)], "c2", pads=[1] * 4)], "r2")
    s = node("Add", [b, p], "s")
    q = node("AveragePool", [s], "ap", kernel_shape=[3, 3], strides=[1, 1], pads=[1] * 4)
    c = node("Relu", [node("Conv", [s, w("w3", 8, 16, 1, 1), w("b3", 8)], "c3")], "r3")
    cat = node("Concat", [q, c], "cat", axis=1)  # 24 channels
    d = node("Conv", [cat, w("w4", 24, 1, 3, 3), w("b4", 24)], "dw", group=24, pads=[1] * 4)  # depthwise
    g = node("GlobalAveragePool", [node("Relu", [d], "r4")], "gap")
    y = node("Flatten", [g], "y")
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 16, 16])
    graph = helper.make_graph(nodes, "nhwc_net", [x], [helper.make_tensor_value_info(y, TensorProto.FLOAT, [1, 24])],
                              inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


class Calibration(CalibrationDataReader):
    def __init__(self):
        self.feeds = iter([{"x": rng.standard_normal((1, 3, 16, 16)).astype(np.float32)} for _ in range(8)])

    def get_next(self):
        return next(self.feeds, None)


def main(outdir):
    src = os.path.join(outdir, "net.float.onnx")
    qdq = os.path.join(outdir, "net.qdq.onnx")
    onnx.save(net(), src)
    quantize_static(src, qdq, Calibration(), quant_format=QuantFormat.QDQ, activation_type=QuantType.QUInt8,
                    weight_type=QuantType.QInt8, per_channel=True)
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    so.optimized_model_filepath = os.path.join(outdir, "net.onnx")
    sess = ort.InferenceSession(qdq, so, providers=["CPUExecutionProvider"])
    os.remove(src)
    os.remove(qdq)
    x = rng.standard_normal((1, 3, 16, 16)).astype(np.float32)
    y = sess.run(None, {"x": x})[0]
    write_fixture(outdir, "net", {"x": x}, [y], ["y"])
    m = onnx.load(so.optimized_model_filepath)
    print(sorted({(n.domain, n.op_type, tuple(a.i for a in n.attribute if a.name == "channels_last"))
                  for n in m.graph.node}))


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__)))
