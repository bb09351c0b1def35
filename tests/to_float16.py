"""Writes a float16 copy of an ONNX model: float initializers, graph inputs,
outputs and value_info become float16 (enough for models of Conv, Relu,
Concat, pools and the like).  Usage: to_float16.py IN.onnx OUT.onnx"""
import sys

import onnx
from onnx import TensorProto, numpy_helper

m = onnx.load(sys.argv[1])
for i, t in enumerate(m.graph.initializer):
    if t.data_type == TensorProto.FLOAT:
        m.graph.initializer[i].CopyFrom(numpy_helper.from_array(numpy_helper.to_array(t).astype("float16"), t.name))
for v in list(m.graph.input) + list(m.graph.output) + list(m.graph.value_info):
    if v.type.tensor_type.elem_type == TensorProto.FLOAT:
        v.type.tensor_type.elem_type = TensorProto.FLOAT16
onnx.checker.check_model(m)
onnx.save(m, sys.argv[2])
