#!/usr/bin/env python3
"""Writes the malformed and edge-case ONNX models the tool tests feed to xflowc.

usage: make_bad_models.py OUT_DIR
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def model(nodes, inputs, outputs, inits=(), opset=17):
    g = helper.make_graph(nodes, "g", inputs, outputs, initializer=list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    return m


def vi(name, shape, t=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, t, shape)


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)

    def save(name, m):
        with open(os.path.join(out, name), "wb") as f:
            f.write(m.SerializeToString())

    good = model([helper.make_node("Relu", ["x"], ["y"])], [vi("x", [1, 4])], [vi("y", [1, 4])])
    save("good.onnx", good)
    data = good.SerializeToString()
    with open(os.path.join(out, "truncated.onnx"), "wb") as f:
        f.write(data[: len(data) // 2])
    with open(os.path.join(out, "not_protobuf.onnx"), "wb") as f:
        f.write(b"\xff\xfe this is not a protocol buffer \x00\x01\x02" * 4)

    save("cycle.onnx", model([helper.make_node("Relu", ["b"], ["a"]),
                              helper.make_node("Relu", ["a"], ["b"]),
                              helper.make_node("Add", ["x", "b"], ["y"])],
                             [vi("x", [1, 4])], [vi("y", [1, 4])]))
    save("undefined_input.onnx", model([helper.make_node("Add", ["x", "nowhere"], ["y"])],
                                       [vi("x", [1, 4])], [vi("y", [1, 4])]))
    bad = numpy_helper.from_array(np.ones((3, 4), np.float32), "w")
    bad.raw_data = bad.raw_data[:12]
    save("init_size_mismatch.onnx", model([helper.make_node("MatMul", ["x", "w"], ["y"])],
                                          [vi("x", [2, 3])], [vi("y", [2, 4])], [bad]))
    w = numpy_helper.from_array(np.ones((5, 7), np.float32), "w")
    save("shape_mismatch.onnx", model([helper.make_node("MatMul", ["x", "w"], ["y"])],
                                      [vi("x", [2, 3])], [vi("y", [2, 7])], [w]))


if __name__ == "__main__":
    main()
