#!/usr/bin/env python3
"""Writes the transformer MLP blocks that benchmarks/results/cpu-activations
times, each with its activation written out as exporters write it, with
onnx.helper and seeded random weights:

    .venv-bench/bin/python benchmarks/activation_models.py DIR
    benchmarks/cpu_vs_ort.sh --threads 1 --stat min DIR/*.onnx

Each is x [1, 128, 768] -> MatMul 768x3072 + bias -> activation -> MatMul
3072x768 + bias (GPT-2 small's MLP over 128 tokens), and the activation
is (cpu_dnnl_fold_region.c finds each by the function it computes):
- mlp_new_gelu.onnx: HF's NewGELU (GPT-2, T5 v1.1, GPT-J):
  0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 Pow(x, 3)))), the 0.5 first;
- mlp_torch_tanh_gelu.onnx: torch.onnx's GELU(approximate="tanh") below
  opset 20, x * x * x, the 0.5 last;
- mlp_bloom_gelu.onnx: BLOOM's x 0.5 (1 + tanh(0.79788456 x (1 + 0.044715
  x x)));
- mlp_quick_gelu.onnx: CLIP's QuickGELU, x Sigmoid(1.702 x);
- mlp_mish.onnx: x Tanh(Softplus(x)).
And as a check that nothing changed where the fold plan found them before:
- mlp_erf_gelu.onnx: the exact GELU as torch.onnx writes it (Div by
  sqrt(2), Erf, Add 1, Mul by x, Mul by 0.5)."""
import math
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

TOKENS, WIDTH, HIDDEN = 128, 768, 3072


class Graph:
    def __init__(self):
        self.nodes, self.inits, self.count = [], [], 0

    def const(self, value):
        name = "c%d" % len(self.inits)
        self.inits.append(numpy_helper.from_array(np.asarray(value, np.float32), name))
        return name

    def op(self, op_type, *inputs):
        self.count += 1
        out = "v%d" % self.count
        self.nodes.append(helper.make_node(op_type, list(inputs), [out]))
        return out

    def scaled(self, op_type, x, value, first=False):
        c = self.const(value)
        return self.op(op_type, c, x) if first else self.op(op_type, x, c)


def new_gelu(g, x):
    half = g.scaled("Mul", x, 0.5, first=True)
    inner = g.op("Add", x, g.scaled("Mul", g.scaled("Pow", x, 3.0), 0.044715, first=True))
    t = g.op("Tanh", g.scaled("Mul", inner, math.sqrt(2 / math.pi), first=True))
    return g.op("Mul", half, g.scaled("Add", t, 1.0, first=True))


def torch_tanh_gelu(g, x):
    cube = g.op("Mul", x, g.op("Mul", x, x))
    inner = g.scaled("Mul", g.op("Add", x, g.scaled("Mul", cube, 0.044715, first=True)), math.sqrt(2 / math.pi),
                     first=True)
    u = g.scaled("Add", g.op("Tanh", inner), 1.0, first=True)
    return g.scaled("Mul", g.op("Mul", x, u), 0.5, first=True)


def bloom_gelu(g, x):
    half = g.scaled("Mul", x, 0.5)
    a = g.scaled("Mul", x, 0.79788456, first=True)
    d = g.scaled("Add", g.op("Mul", g.scaled("Mul", x, 0.044715, first=True), x), 1.0, first=True)
    return g.op("Mul", half, g.scaled("Add", g.op("Tanh", g.op("Mul", a, d)), 1.0, first=True))


def quick_gelu(g, x):
    return g.op("Mul", x, g.op("Sigmoid", g.scaled("Mul", x, 1.702)))


def mish(g, x):
    return g.op("Mul", x, g.op("Tanh", g.op("Softplus", x)))


def erf_gelu(g, x):
    e = g.op("Erf", g.scaled("Div", x, math.sqrt(2)))
    return g.scaled("Mul", g.op("Mul", x, g.scaled("Add", e, 1.0)), 0.5)


def write(path, activation, seed=0):
    rng = np.random.default_rng(seed)
    g = Graph()
    w1 = g.const(rng.standard_normal((WIDTH, HIDDEN)) * 0.03)
    b1 = g.const(rng.standard_normal(HIDDEN) * 0.1)
    w2 = g.const(rng.standard_normal((HIDDEN, WIDTH)) * 0.02)
    b2 = g.const(rng.standard_normal(WIDTH) * 0.1)
    h = g.op("Add", g.op("MatMul", "x", w1), b1)
    y = g.op("Add", g.op("MatMul", activation(g, h), w2), b2)
    g.nodes[-1].output[0] = "y"
    shape = [1, TOKENS, WIDTH]
    graph = helper.make_graph(g.nodes, os.path.basename(path)[:-5],
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)], g.inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, path)


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: activation_models.py DIR")
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    forms = {"new_gelu": new_gelu, "torch_tanh_gelu": torch_tanh_gelu, "bloom_gelu": bloom_gelu,
             "quick_gelu": quick_gelu, "mish": mish, "erf_gelu": erf_gelu}
    for name, activation in forms.items():
        path = os.path.join(out, "mlp_%s.onnx" % name)
        write(path, activation)
        print("wrote", path)


if __name__ == "__main__":
    main()
