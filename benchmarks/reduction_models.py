"""Writes small models whose time goes largely to reductions and group
normalizations, with seeded random weights, as exporters write them:

- convnext_ln.onnx: four 1x1 convolutions of 96 x 56 x 56, each followed
  by the channels-first LayerNorm of Hugging Face's ConvNeXt (ReduceMean
  over the channels, Sub, Mul, ReduceMean, Add, Sqrt, Div, Mul, Add);
- attn_manual_softmax.onnx: attention of 12 heads over 384 tokens whose
  softmax is written out (ReduceMax, Sub, Exp, ReduceSum, Div);
- seg_argmax.onnx: a 3x3 and a 1x1 convolution to 21 classes over 256 x
  256 pixels, then ArgMax over the classes;
- embed_l2_head.onnx: 256 embeddings projected, L2-normalized (ReduceL2,
  Div), scored against 1000 classes, log-probabilities through
  ReduceLogSumExp and the top class through ArgMax;
- unet_resblock.onnx: a diffusion UNet's residual block of 128 x 64 x 64
  (GroupNorm of 32 groups, SiLU, 3x3 convolution, twice, and the residual
  Add), its GroupNorms as PyTorch exports them before opset 18: Reshape to
  [1, 32, -1], InstanceNormalization, Reshape back, Mul and Add per
  channel;
- groupnorm21.onnx: the same block with opset 21's GroupNormalization;
- llama_mlp.onnx: two decoder MLP blocks of 128 tokens, hidden 1024 and
  2816 (RMSNorm, gate and up projections, SiLU as Sigmoid times x, down
  projection, residual Add), their RMSNorms written out as LLaMA's
  Hugging Face exports write them (Pow 2, ReduceMean, Add, Sqrt,
  Reciprocal, Mul by x, Mul by the weight) in the first block and as T5's
  (a Div by the root) in the second.

and, under DIR/nodes, single-node models of those reductions (and the
softmax written out alone, reductions over axes apart, CumSum along the
first and the last axis, InstanceNormalization, GroupNormalization,
MeanVarianceNormalization (of one image and of four), LpNormalization, Where under a random
condition and a causal mask, a layer normalization written out as
exporters before opset 17 write it, and an RMS normalization written out
as LLaMA's exports write it)
at sizes where their loops show
(benchmarks/results/cpu-reductions/per_node.txt).

usage: reduction_models.py DIR  (with a Python whose onnx and numpy import)
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper as nh

rng = np.random.default_rng(0)


def init(name, a, dtype=np.float32):
    return nh.from_array(np.asarray(a).astype(dtype), name)


def value(name, shape, dtype=T.FLOAT):
    return h.make_tensor_value_info(name, dtype, shape)


def save(path, nodes, inputs, outputs, inits, opset):
    g = h.make_graph(nodes, os.path.basename(path)[:-5], inputs, outputs, inits)
    m = h.make_model(g, opset_imports=[h.make_opsetid("", opset)])
    m.ir_version = 8
    onnx.save(m, path)
    print("wrote", path)


def convnext_ln(path, c=96, size=56, blocks=4):
    nodes, inits, x = [], [init("eps", 1e-6)], "x"
    for b in range(blocks):
        p = f"b{b}_"
        inits += [init(p + "w", rng.normal(0, 0.1, (c, c, 1, 1))), init(p + "b", rng.normal(0, 0.1, c)),
                  init(p + "g", rng.normal(1, 0.1, (c, 1, 1))), init(p + "beta", rng.normal(0, 0.1, (c, 1, 1)))]
        nodes += [h.make_node("Conv", [x, p + "w", p + "b"], [p + "c"]),
                  h.make_node("ReduceMean", [p + "c"], [p + "u"], axes=[1], keepdims=1),
                  h.make_node("Sub", [p + "c", p + "u"], [p + "d"]),
                  h.make_node("Mul", [p + "d", p + "d"], [p + "d2"]),
                  h.make_node("ReduceMean", [p + "d2"], [p + "s"], axes=[1], keepdims=1),
                  h.make_node("Add", [p + "s", "eps"], [p + "se"]),
                  h.make_node("Sqrt", [p + "se"], [p + "sd"]),
                  h.make_node("Div", [p + "d", p + "sd"], [p + "n"]),
                  h.make_node("Mul", [p + "n", p + "g"], [p + "ng"]),
                  h.make_node("Add", [p + "ng", p + "beta"], [p + "y"])]
        x = p + "y"
    save(path, nodes, [value("x", [1, c, size, size])], [value(x, None)], inits, 17)


def attn_manual_softmax(path, heads=12, tokens=384, dim=64):
    inits = [init("scale", dim ** -0.5), init("ax", [-1], np.int64)]
    nodes = [h.make_node("MatMul", ["q", "kt"], ["s0"]), h.make_node("Mul", ["s0", "scale"], ["s"]),
             h.make_node("ReduceMax", ["s"], ["m"], axes=[-1], keepdims=1), h.make_node("Sub", ["s", "m"], ["d"]),
             h.make_node("Exp", ["d"], ["e"]), h.make_node("ReduceSum", ["e", "ax"], ["z"], keepdims=1),
             h.make_node("Div", ["e", "z"], ["p"]), h.make_node("MatMul", ["p", "v"], ["o"])]
    inputs = [value("q", [1, heads, tokens, dim]), value("kt", [1, heads, dim, tokens]),
              value("v", [1, heads, tokens, dim])]
    save(path, nodes, inputs, [value("o", None)], inits, 13)


def seg_argmax(path, classes=21, size=256):
    inits = [init("w0", rng.normal(0, 0.3, (32, 3, 3, 3))), init("b0", rng.normal(0, 0.1, 32)),
             init("wc", rng.normal(0, 0.1, (classes, 32, 1, 1))), init("bc", rng.normal(0, 0.1, classes))]
    nodes = [h.make_node("Conv", ["img", "w0", "b0"], ["f0"], pads=[1, 1, 1, 1]), h.make_node("Relu", ["f0"], ["f"]),
             h.make_node("Conv", ["f", "wc", "bc"], ["logits"]),
             h.make_node("ArgMax", ["logits"], ["label"], axis=1, keepdims=0)]
    save(path, nodes, [value("img", [1, 3, size, size])], [value("label", None, T.INT64)], inits, 13)


def embed_l2_head(path, rows=256, width=768, dim=512, classes=1000):
    inits = [init("wp", rng.normal(0, 0.05, (width, dim))), init("cls", rng.normal(0, 1, (dim, classes)))]
    nodes = [h.make_node("MatMul", ["feat", "wp"], ["e"]),
             h.make_node("ReduceL2", ["e"], ["n"], axes=[-1], keepdims=1), h.make_node("Div", ["e", "n"], ["en"]),
             h.make_node("MatMul", ["en", "cls"], ["logit"]),
             h.make_node("ReduceLogSumExp", ["logit"], ["lse"], axes=[-1], keepdims=1),
             h.make_node("Sub", ["logit", "lse"], ["logp"]),
             h.make_node("ArgMax", ["logp"], ["top"], axis=-1, keepdims=0)]
    save(path, nodes, [value("feat", [rows, width])], [value("logp", None), value("top", None, T.INT64)], inits, 13)


def unet_resblock(path, c=128, size=64, groups=32, opset=17):
    nodes, inits, x = [], [], "x"
    if opset < 18:
        inits = [init("shape_g", [1, groups, -1], np.int64), init("shape_x", [1, c, size, size], np.int64),
                 init("ones", np.ones(groups)), init("zeros", np.zeros(groups))]
    for k in range(2):
        p = f"n{k}_"
        inits += [init(p + "gamma", rng.normal(1, 0.1, (c, 1, 1) if opset < 18 else c)),
                  init(p + "beta", rng.normal(0, 0.1, (c, 1, 1) if opset < 18 else c)),
                  init(p + "w", rng.normal(0, 0.03, (c, c, 3, 3))), init(p + "b", rng.normal(0, 0.1, c))]
        if opset < 18:
            nodes += [h.make_node("Reshape", [x, "shape_g"], [p + "r"]),
                      h.make_node("InstanceNormalization", [p + "r", "ones", "zeros"], [p + "in"], epsilon=1e-5),
                      h.make_node("Reshape", [p + "in", "shape_x"], [p + "rx"]),
                      h.make_node("Mul", [p + "rx", p + "gamma"], [p + "m"]),
                      h.make_node("Add", [p + "m", p + "beta"], [p + "gn"])]
        else:
            nodes.append(h.make_node("GroupNormalization", [x, p + "gamma", p + "beta"], [p + "gn"],
                                     num_groups=groups, epsilon=1e-5))
        nodes += [h.make_node("Sigmoid", [p + "gn"], [p + "sg"]), h.make_node("Mul", [p + "gn", p + "sg"], [p + "act"]),
                  h.make_node("Conv", [p + "act", p + "w", p + "b"], [p + "c"], pads=[1, 1, 1, 1])]
        x = p + "c"
    nodes.append(h.make_node("Add", ["x", x], ["y"]))
    save(path, nodes, [value("x", [1, c, size, size])], [value("y", None)], inits, opset)


def groupnorm21(path):
    unet_resblock(path, opset=21)


# name, op, input shape, axes (ArgMax: its axis), opset
NODES = [("reducemin_mid", "ReduceMin", [8, 256, 64, 64], [1], 13),
         ("argmax", "ArgMax", [4096, 1000], -1, 13),
         ("argmax_seg", "ArgMax", [1, 21, 512, 512], 1, 13),
         ("logsumexp", "ReduceLogSumExp", [4096, 1000], [-1], 13),
         ("reduceprod", "ReduceProd", [64, 64, 256], [2], 13),
         ("sumsquare", "ReduceSumSquare", [4096, 1000], [-1], 13),
         ("sum_mid", "ReduceSum", [8, 256, 64, 64], [1], 18),
         ("sum_first", "ReduceSum", [4096, 1000], [0], 18),
         ("mean_mid", "ReduceMean", [1, 512, 4096], [1], 18),
         ("mean_axes_apart", "ReduceMean", [32, 64, 1024], [0, 2], 18),
         ("max_axes_apart", "ReduceMax", [8, 64, 32, 64], [1, 3], 13)]


def single_nodes(folder):
    for name, op, shape, axes, opset in NODES:
        inits, ins = [], ["x"]
        if op == "ArgMax":
            node = h.make_node(op, ins, ["y"], axis=axes, keepdims=1)
        elif opset >= 18:
            inits, ins = [init("axes", axes, np.int64)], ["x", "axes"]
            node = h.make_node(op, ins, ["y"], keepdims=1)
        else:
            node = h.make_node(op, ins, ["y"], axes=axes, keepdims=1)
        out = value("y", None, T.INT64 if op == "ArgMax" else T.FLOAT)
        save(os.path.join(folder, name + ".onnx"), [node], [value("x", shape)], [out], inits, opset)
    for name, shape, axis in [("cumsum_first", [1000, 1024], 0), ("cumsum_last", [64, 16000], 1)]:
        save(os.path.join(folder, name + ".onnx"), [h.make_node("CumSum", ["x", "axis"], ["y"])],
             [value("x", shape)], [value("y", None)], [init("axis", axis, np.int64)], 14)
    save(os.path.join(folder, "l2norm.onnx"),
         [h.make_node("ReduceL2", ["x"], ["n"], axes=[-1], keepdims=1), h.make_node("Div", ["x", "n"], ["y"])],
         [value("x", [4096, 512])], [value("y", None)], [], 13)
    nodes = [h.make_node("ReduceMax", ["x"], ["m"], axes=[-1], keepdims=1), h.make_node("Sub", ["x", "m"], ["d"]),
             h.make_node("Exp", ["d"], ["e"]), h.make_node("ReduceSum", ["e", "ax"], ["s"], keepdims=1),
             h.make_node("Div", ["e", "s"], ["y"])]
    save(os.path.join(folder, "softmax_manual.onnx"), nodes, [value("x", [1, 12, 384, 384])], [value("y", None)],
         [init("ax", [-1], np.int64)], 13)
    for name, op, c, size, opset, attrs in [("instnorm", "InstanceNormalization", 64, 256, 13, {}),
                                            ("groupnorm", "GroupNormalization", 320, 64, 21, {"num_groups": 32})]:
        params = [init("s", rng.normal(1, 0.1, c)), init("b", rng.normal(0, 0.1, c))]
        save(os.path.join(folder, name + ".onnx"), [h.make_node(op, ["x", "s", "b"], ["y"], **attrs)],
             [value("x", [1, c, size, size])], [value("y", None)], params, opset)
    save(os.path.join(folder, "mvn.onnx"), [h.make_node("MeanVarianceNormalization", ["x"], ["y"])],
         [value("x", [1, 64, 128, 128])], [value("y", None)], [], 13)
    save(os.path.join(folder, "mvn_batch4.onnx"), [h.make_node("MeanVarianceNormalization", ["x"], ["y"])],
         [value("x", [4, 64, 64, 64])], [value("y", None)], [], 13)
    save(os.path.join(folder, "lpnorm.onnx"), [h.make_node("LpNormalization", ["x"], ["y"], axis=1, p=2)],
         [value("x", [1, 256, 64, 64])], [value("y", None)], [], 13)
    d = 768
    nodes = [h.make_node("ReduceMean", ["x"], ["u"], axes=[-1], keepdims=1), h.make_node("Sub", ["x", "u"], ["d"]),
             h.make_node("Pow", ["d", "two"], ["d2"]), h.make_node("ReduceMean", ["d2"], ["v"], axes=[-1], keepdims=1),
             h.make_node("Add", ["v", "eps"], ["ve"]), h.make_node("Sqrt", ["ve"], ["sd"]),
             h.make_node("Div", ["d", "sd"], ["n"]), h.make_node("Mul", ["n", "g"], ["ng"]),
             h.make_node("Add", ["ng", "b"], ["y"])]
    save(os.path.join(folder, "layer_norm_written_out.onnx"), nodes, [value("x", [16, 384, d])], [value("y", None)],
         [init("two", 2.0), init("eps", 1e-12), init("g", rng.normal(1, 0.1, d)), init("b", rng.normal(0, 0.1, d))], 13)
    zero = [init("z", [0.0])]
    save(os.path.join(folder, "where.onnx"),
         [h.make_node("Greater", ["x", "z"], ["c"]), h.make_node("Where", ["c", "x", "z"], ["y"])],
         [value("x", [1, 64, 256, 256])], [value("y", None)], zero, 13)
    causal = nh.from_array(np.tril(np.ones((1, 1, 512, 512), bool)), "m")
    save(os.path.join(folder, "where_mask.onnx"), [h.make_node("Where", ["m", "s", "ninf"], ["y"])],
         [value("s", [1, 12, 512, 512])], [value("y", None)], [causal, init("ninf", -3.4e38)], 13)
    rms = [h.make_node("Pow", ["x", "two"], ["x2"]), h.make_node("ReduceMean", ["x2"], ["ms"], axes=[-1], keepdims=1),
           h.make_node("Add", ["ms", "eps"], ["mse"]), h.make_node("Sqrt", ["mse"], ["rt"]),
           h.make_node("Reciprocal", ["rt"], ["inv"]), h.make_node("Mul", ["x", "inv"], ["n"]),
           h.make_node("Mul", ["g", "n"], ["y"])]
    save(os.path.join(folder, "rms_norm_written_out.onnx"), rms, [value("x", [16, 384, d])], [value("y", None)],
         [init("two", 2.0), init("eps", 1e-6), init("g", np.random.default_rng(1).normal(1, 0.1, d))], 13)


def rms_norm(nodes, inits, x, p, d, t5, r):
    """Appends an RMS normalization of x written out, LLaMA's way or T5's;
    returns its output."""
    inits += [init(p + "g", r.normal(1, 0.1, d)), init(p + "two", 2.0), init(p + "eps", 1e-6)]
    nodes += [h.make_node("Pow", [x, p + "two"], [p + "x2"]),
              h.make_node("ReduceMean", [p + "x2"], [p + "ms"], axes=[-1], keepdims=1),
              h.make_node("Add", [p + "ms", p + "eps"], [p + "mse"]), h.make_node("Sqrt", [p + "mse"], [p + "rt"])]
    if t5:
        nodes.append(h.make_node("Div", [x, p + "rt"], [p + "n"]))
    else:
        nodes += [h.make_node("Reciprocal", [p + "rt"], [p + "inv"]), h.make_node("Mul", [x, p + "inv"], [p + "n"])]
    nodes.append(h.make_node("Mul", [p + "g", p + "n"], [p + "y"]))
    return p + "y"


def llama_mlp(path, tokens=128, d=1024, ff=2816):
    r = np.random.default_rng(1)
    nodes, inits, x = [], [], "x"
    for b in range(2):
        p = "b%d_" % b
        n = rms_norm(nodes, inits, x, p, d, b == 1, r)
        for w, shape in (("wg", (d, ff)), ("wu", (d, ff)), ("wd", (ff, d))):
            inits.append(init(p + w, r.normal(0, shape[0] ** -0.5, shape)))
        nodes += [h.make_node("MatMul", [n, p + "wg"], [p + "gate"]), h.make_node("Sigmoid", [p + "gate"], [p + "sg"]),
                  h.make_node("Mul", [p + "gate", p + "sg"], [p + "silu"]),
                  h.make_node("MatMul", [n, p + "wu"], [p + "up"]),
                  h.make_node("Mul", [p + "silu", p + "up"], [p + "act"]),
                  h.make_node("MatMul", [p + "act", p + "wd"], [p + "down"]),
                  h.make_node("Add", [x, p + "down"], [p + "out"])]
        x = p + "out"
    save(path, nodes, [value("x", [1, tokens, d])], [value(x, None)], inits, 13)


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    os.makedirs(os.path.join(sys.argv[1], "nodes"), exist_ok=True)
    for make in (convnext_ln, attn_manual_softmax, seg_argmax, embed_l2_head, unet_resblock, groupnorm21, llama_mlp):
        make(os.path.join(sys.argv[1], make.__name__ + ".onnx"))
    single_nodes(os.path.join(sys.argv[1], "nodes"))


if __name__ == "__main__":
    main()
