#!/usr/bin/env python3
"""Writes the one-node models that benchmarks/results/cpu-recurrences and
cpu-int8-few-rows time, random weights (seeded), written with onnx.helper
(Debian's python3-onnx does):

    .venv-bench/bin/python benchmarks/node_models.py DIR
    benchmarks/cpu_vs_ort.sh --threads 1 --stat min --omp-passive DIR/gru_*.onnx ...

- gru_*, lstm_*: GRUs and LSTMs (opset 14, weights scaled by 0.1) in the
  forms oneDNN's RNN primitives do not take (clip, other activations,
  sequences shorter than the input, the batch-first layout), which the
  `cpu` backend runs step by step, and one it does take (gru_default) for
  scale. ONNX Runtime refuses the batch-first ones (layout 1).
- qlstm_*: LSTMs quantized by ONNX Runtime's quantize_dynamic (int8
  weights; qlstm_u8_* uint8 ones with zero points) into DynamicQuantizeLSTMs, where onnxruntime.quantization
  imports (it needs the ml_dtypes package beside onnxruntime); their float
  originals beside them as qlstm_*.f.onnx.
- matmulinteger_*: MatMulIntegers of 1, 4 and 8 rows (uint8) by a
  constant 1024 x 4096 int8 matrix."""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

GATES = {"LSTM": 4, "GRU": 3, "RNN": 1}


def write(path, op, hidden, inputs, steps, batch, direction="forward", lens=None, layout=0, seed=0, **attrs):
    rng = np.random.default_rng(seed)
    g, d = GATES[op], 2 if direction == "bidirectional" else 1
    w = (rng.standard_normal((d, g * hidden, inputs)) * 0.1).astype(np.float32)
    r = (rng.standard_normal((d, g * hidden, hidden)) * 0.1).astype(np.float32)
    b = (rng.standard_normal((d, 2 * g * hidden)) * 0.1).astype(np.float32)
    inits = [numpy_helper.from_array(w, "W"), numpy_helper.from_array(r, "R"), numpy_helper.from_array(b, "B")]
    names = ["x", "W", "R", "B"]
    if lens is not None:
        inits.append(numpy_helper.from_array(np.array(lens, np.int32), "L"))
        names.append("L")
    if layout:
        attrs["layout"] = 1
    node = helper.make_node(op, names, ["y", "y_h"], hidden_size=hidden, direction=direction, **attrs)
    x = [batch, steps, inputs] if layout else [steps, batch, inputs]
    y = [batch, steps, d, hidden] if layout else [steps, d, batch, hidden]
    yh = [batch, d, hidden] if layout else [d, batch, hidden]
    graph = helper.make_graph([node], os.path.basename(path)[:-5],
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, x)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, y),
                               helper.make_tensor_value_info("y_h", TensorProto.FLOAT, yh)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, path)


def write_qlstm(out, name, hidden, inputs, steps, batch, direction, u8, seed):
    """A float LSTM, and its DynamicQuantizeLSTM from quantize_dynamic (int8
    weights with zero points 0; where u8, those weights plus 128 as uint8
    with zero points 128, the same LSTM: ONNX Runtime 1.32's quantize_dynamic
    writes int8 LSTM weights even when asked for uint8 ones, which the
    operator takes too)."""
    from onnxruntime.quantization import QuantType, quantize_dynamic
    base = os.path.join(out, name)
    write(base + ".f.onnx", "LSTM", hidden, inputs, steps, batch, direction, seed=seed)
    quantize_dynamic(base + ".f.onnx", base + ".onnx", weight_type=QuantType.QInt8, op_types_to_quantize=["LSTM"])
    if u8:
        model = onnx.load(base + ".onnx")
        node = model.graph.node[0]
        for init in model.graph.initializer:
            if init.name in (node.input[1], node.input[2], node.input[9], node.input[11]):
                v = numpy_helper.to_array(init).astype(np.int16) + 128
                init.CopyFrom(numpy_helper.from_array(v.astype(np.uint8), init.name))
        onnx.save(model, base + ".onnx")
    print(base + ".onnx")


def write_matmul_integer(path, rows, k, n, seed):
    rng = np.random.default_rng(seed)
    b = rng.integers(-128, 128, (k, n)).astype(np.int8)
    node = helper.make_node("MatMulInteger", ["a", "B", "a_zero_point"], ["y"])
    graph = helper.make_graph([node], os.path.basename(path)[:-5],
                              [helper.make_tensor_value_info("a", TensorProto.UINT8, [rows, k])],
                              [helper.make_tensor_value_info("y", TensorProto.INT32, [rows, n])],
                              [numpy_helper.from_array(b, "B"),
                               numpy_helper.from_array(np.array(3, np.uint8), "a_zero_point")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, path)
    print(path)


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: node_models.py DIR")
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    hard = dict(activations=["HardSigmoid", "Tanh"], activation_alpha=[0.2], activation_beta=[0.5])
    models = {
        "gru_hardsigmoid": ("GRU", 256, 256, 50, 1, dict(linear_before_reset=1, **hard)),
        "gru_clip": ("GRU", 256, 256, 50, 1, dict(clip=5.0)),
        "gru_softsign": ("GRU", 256, 256, 50, 1, dict(linear_before_reset=1, activations=["Sigmoid", "Softsign"])),
        "gru_lengths": ("GRU", 256, 256, 50, 4, dict(linear_before_reset=1, lens=[50, 30, 10, 45])),
        "gru_bidi_mixed": ("GRU", 128, 64, 40, 2, dict(
            direction="bidirectional", activations=["HardSigmoid", "Tanh", "Sigmoid", "Relu"],
            activation_alpha=[0.2], activation_beta=[0.5])),
        "lstm_hardsigmoid_b4": ("LSTM", 256, 256, 50, 4, dict(
            activations=["HardSigmoid", "Tanh", "Tanh"], activation_alpha=[0.2], activation_beta=[0.5])),
        "gru_default": ("GRU", 256, 256, 50, 1, dict(linear_before_reset=1)),
        "lstm_batch_first": ("LSTM", 256, 256, 50, 1, dict(layout=1)),
        "gru_batch_first_b4": ("GRU", 256, 256, 50, 4, dict(layout=1, linear_before_reset=1)),
        "lstm_batch_first_b16": ("LSTM", 128, 64, 50, 16, dict(layout=1)),
    }
    for seed, (name, (op, hidden, inputs, steps, batch, attrs)) in enumerate(models.items()):
        write(os.path.join(out, name + ".onnx"), op, hidden, inputs, steps, batch, seed=seed, **attrs)
        print(os.path.join(out, name + ".onnx"))
    try:
        import onnxruntime.quantization  # noqa: F401
        qlstms = {"qlstm_h64": (64, 64, 50, 1, "forward", False),
                  "qlstm_h128_b4": (128, 128, 50, 4, "forward", False),
                  "qlstm_h256_b8": (256, 256, 30, 8, "forward", False),
                  "qlstm_h512_bi": (512, 256, 30, 1, "bidirectional", False),
                  "qlstm_u8_h256": (256, 256, 50, 1, "forward", True),
                  "qlstm_u8_h512_bi_b4": (512, 256, 30, 4, "bidirectional", True)}
        for seed, (name, shape) in enumerate(qlstms.items()):
            write_qlstm(out, name, *shape, seed=100 + seed)
    except ImportError as e:
        print(f"node_models.py: no qlstm_* models: onnxruntime.quantization does not import here ({e})")
    for rows in (1, 4, 8):
        write_matmul_integer(os.path.join(out, f"matmulinteger_{rows}.onnx"), rows, 1024, 4096, seed=200 + rows)


if __name__ == "__main__":
    main()
