"""Writes the fixtures of test_qlstm: LSTMs quantized by ONNX Runtime's
quantize_dynamic into DynamicQuantizeLSTM, with inputs and ONNX Runtime's
outputs (one thread).

  python3 make_qlstm.py OUTDIR   (needs onnx, onnxruntime and numpy)

  bidi:     bidirectional, batch 3, int8 weights
  lens:     forward, sequence lengths 5, 2, 7 and 0, initial states,
            peepholes, clip
  reverse:  reverse, Y_h and Y_c only, uint8 weights per column,
            input_forget, sequence lengths 6 and 3
  bidi_u8:  bidirectional, uint8 weights per column
  wide:     640 inputs all positive (quantized with zero point 0), so that
            the input products' sums may pass 2^24
"""
import os
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper
from onnxruntime.quantization import QuantType, quantize_dynamic

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from peer_fixtures import write_fixture  # noqa: E402

rng = np.random.default_rng(11)
H, I = 16, 12


def lstm(name, seq, batch, direction, lens=False, states=False, peep=False, outs=("y", "yh", "yc"), width=None,
         **attrs):
    global I
    I = width or 12
    dirs = 2 if direction == "bidirectional" else 1
    inits = [numpy_helper.from_array((rng.standard_normal((dirs, 4 * H, I)) * 0.3).astype(np.float32), "W"),
             numpy_helper.from_array((rng.standard_normal((dirs, 4 * H, H)) * 0.3).astype(np.float32), "R"),
             numpy_helper.from_array((rng.standard_normal((dirs, 8 * H)) * 0.1).astype(np.float32), "B")]
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [seq, batch, I])]
    x = rng.uniform(0, 1, (seq, batch, I)) if width else rng.standard_normal((seq, batch, I))
    feeds = {"x": x.astype(np.float32)}
    ins = ["x", "W", "R", "B", "", "", "", ""]
    if lens:
        ins[4] = "lens"
        inputs.append(helper.make_tensor_value_info("lens", TensorProto.INT32, [batch]))
        feeds["lens"] = np.array(lens, np.int32)
    if states:
        ins[5], ins[6] = "h0", "c0"
        for s in ("h0", "c0"):
            inputs.append(helper.make_tensor_value_info(s, TensorProto.FLOAT, [dirs, batch, H]))
            feeds[s] = (rng.standard_normal((dirs, batch, H)) * 0.5).astype(np.float32)
    if peep:
        ins[7] = "P"
        inits.append(numpy_helper.from_array((rng.standard_normal((dirs, 3 * H)) * 0.3).astype(np.float32), "P"))
    while ins[-1] == "":
        ins.pop()
    shapes = {"y": [seq, dirs, batch, H], "yh": [dirs, batch, H], "yc": [dirs, batch, H]}
    node = helper.make_node("LSTM", ins, [o if o in outs else "" for o in ("y", "yh", "yc")], hidden_size=H,
                            direction=direction, **attrs)
    outputs = [helper.make_tensor_value_info(o, TensorProto.FLOAT, shapes[o]) for o in outs]
    graph = helper.make_graph([node], name, inputs, outputs, inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])
    model.ir_version = 8
    return model, feeds


def save(outdir, name, model, feeds, **qargs):
    src = os.path.join(outdir, name + ".float.onnx")
    dst = os.path.join(outdir, name + ".onnx")
    onnx.save(model, src)
    quantize_dynamic(src, dst, op_types_to_quantize=["LSTM"], **qargs)
    os.remove(src)
    assert [n.op_type for n in onnx.load(dst).graph.node] == ["DynamicQuantizeLSTM"]
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    sess = ort.InferenceSession(dst, so, providers=["CPUExecutionProvider"])
    write_fixture(outdir, name, feeds, sess.run(None, feeds), [o.name for o in sess.get_outputs()])


def main(outdir):
    save(outdir, "bidi", *lstm("bidi", 7, 3, "bidirectional"), weight_type=QuantType.QInt8)
    save(outdir, "lens", *lstm("lens", 7, 4, "forward", lens=[5, 2, 7, 0], states=True, peep=True, clip=3.0),
         weight_type=QuantType.QInt8)
    save(outdir, "reverse", *lstm("reverse", 6, 2, "reverse", lens=[6, 3], outs=("yh", "yc"), input_forget=1),
         weight_type=QuantType.QUInt8, per_channel=True)
    save(outdir, "bidi_u8", *lstm("bidi_u8", 5, 2, "bidirectional"), weight_type=QuantType.QUInt8, per_channel=True)
    save(outdir, "wide", *lstm("wide", 3, 2, "forward", width=640), weight_type=QuantType.QInt8)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__)))
