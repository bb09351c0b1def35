#!/usr/bin/env python3
"""Writes the recurrent models that benchmarks/results/cpu-recurrences times:
one GRU, LSTM or RNN node each, random weights (seeded, scaled by 0.1),
opset 14, written with onnx.helper (Debian's python3-onnx does).

    python3 benchmarks/recurrence_models.py DIR
    benchmarks/cpu_vs_ort.sh --threads 1 --stat min --omp-passive DIR/*.onnx

The forms oneDNN's RNN primitives do not take (clip, other activations,
sequences shorter than the input, the batch-first layout), which the `cpu`
backend runs step by step, and one it does take (gru_default) for scale.
ONNX Runtime refuses the batch-first ones (layout 1)."""
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


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: recurrence_models.py DIR")
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


if __name__ == "__main__":
    main()
