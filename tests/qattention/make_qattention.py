"""Writes the fixtures of test_qattention: com.microsoft Attention nodes
quantized by ONNX Runtime's quantize_dynamic into a DynamicQuantizeLinear
and a QAttention, with inputs and ONNX Runtime's outputs.

  python3 make_qattention.py OUTDIR   (needs onnx, onnxruntime and numpy)

  int8:     int8 weights, one scale; a 2-D mask, batch 2
  uint8:    uint8 weights, a scale and zero point per column; 1-D mask
            (end positions), unidirectional
  past:     a past of 3 positions and the present, unidirectional
"""
import os
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from peer_fixtures import write_fixture  # noqa: E402
from onnxruntime.quantization import QuantType, quantize_dynamic

rng = np.random.default_rng(3)
HID, HEADS, SEQ = 32, 4, 5


def attention_model(batch, mask_shape, past, **attrs):
    ins = ["x", "W", "bias", "mask" if mask_shape else ""]
    outs = ["y"]
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, SEQ, HID])]
    if mask_shape:
        inputs.append(helper.make_tensor_value_info("mask", TensorProto.INT32, mask_shape))
    outputs = [helper.make_tensor_value_info("y", TensorProto.FLOAT, [batch, SEQ, HID])]
    if past:
        ins.append("past")
        outs.append("present")
        inputs.append(helper.make_tensor_value_info("past", TensorProto.FLOAT, [2, batch, HEADS, past, HID // HEADS]))
        outputs.append(helper.make_tensor_value_info("present", TensorProto.FLOAT,
                                                     [2, batch, HEADS, past + SEQ, HID // HEADS]))
    node = helper.make_node("Attention", ins, outs, domain="com.microsoft", num_heads=HEADS, **attrs)
    w = (rng.standard_normal((HID, 3 * HID)) * 0.2).astype(np.float32)
    b = (rng.standard_normal((3 * HID,)) * 0.1).astype(np.float32)
    graph = helper.make_graph([node], "attention", inputs, outputs,
                              [numpy_helper.from_array(w, "W"), numpy_helper.from_array(b, "bias")])
    opsets = [helper.make_opsetid("", 14), helper.make_opsetid("com.microsoft", 1)]
    model = helper.make_model(graph, opset_imports=opsets)
    model.ir_version = 8
    return model


def save(outdir, name, model, feeds, **qargs):
    src = os.path.join(outdir, name + ".float.onnx")
    dst = os.path.join(outdir, name + ".onnx")
    onnx.save(model, src)
    quantize_dynamic(src, dst, **qargs)
    os.remove(src)
    ops = [n.op_type for n in onnx.load(dst).graph.node]
    assert "QAttention" in ops, ops
    sess = ort.InferenceSession(dst, providers=["CPUExecutionProvider"])
    outs = sess.run(None, feeds)
    write_fixture(outdir, name, feeds, outs, [o.name for o in sess.get_outputs()])


def x(batch):
    return rng.standard_normal((batch, SEQ, HID)).astype(np.float32)


def main(outdir):
    mask = np.ones((2, SEQ), np.int32)
    mask[1, 3:] = 0
    save(outdir, "int8", attention_model(2, [2, SEQ], 0), {"x": x(2), "mask": mask}, weight_type=QuantType.QInt8)
    save(outdir, "uint8", attention_model(2, [2], 0, unidirectional=1),
         {"x": x(2), "mask": np.array([5, 3], np.int32)}, weight_type=QuantType.QUInt8, per_channel=True)
    past = (rng.standard_normal((2, 1, HEADS, 3, HID // HEADS)) * 0.5).astype(np.float32)
    save(outdir, "past", attention_model(1, None, 3, unidirectional=1), {"x": x(1), "past": past},
         weight_type=QuantType.QInt8)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__)))
