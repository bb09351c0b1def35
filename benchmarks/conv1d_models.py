#!/usr/bin/env python3
"""Writes the 1-D convolutions that benchmarks/results/cpu-conv1d times
(the forms audio and signal models take), with onnx.helper and seeded
random weights:

    .venv-bench/bin/python benchmarks/conv1d_models.py DIR
    benchmarks/cpu_vs_ort.sh --threads 1 --stat min DIR/*.onnx

One input channel (cpu_dnnl_conv_gemm.c's rows of taps):
- wav2vec2_conv0.onnx: wav2vec2's first layer, 512 channels of 10 taps at
  stride 5 over 1 s of 16 kHz audio.
- whisper_stft_conv.onnx: an STFT written as a Conv (onnx_asr's *_conv
  preprocessors), 402 filters of 400 taps at stride 160 over 30 s.
- resample_conv.onnx: a 44.1 to 16 kHz sinc resampler written as a 2-D
  Conv (onnx_asr's), 160 phases of 475 taps at stride 441, padded 17 and
  458, over 1 s.
- small_kernels.onnx: 512 channels of 3 taps at stride 2, padded 1, then
  ReLU.
- short_stft_conv.onnx: the STFT form over 1 s (98 positions), which stays
  on oneDNN's kernel.
Several input channels (its products per tap on shifted rows):
- dilated_stack.onnx: three 128-channel convolutions of 3 taps at
  dilations 64, 256 and 1024 with ReLUs, over 7,500 positions (the
  brainmaze spindle detector's).
- hifigan_block.onnx: 256 channels, 3 taps at dilation 5 padded 5, over
  8,000 positions, LeakyReLU before it (a HiFi-GAN residual block's).
- pointwise.onnx: 1x1 convolutions 256 to 512 to 256 over 2,000
  positions."""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def save(graph, path):
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, path)


def write(path, channels, taps, stride, samples, pads=(0, 0), two_d=False, relu=False, seed=0):
    rng = np.random.default_rng(seed)
    wshape = (channels, 1, 1, taps) if two_d else (channels, 1, taps)
    inits = [numpy_helper.from_array(rng.standard_normal(wshape).astype(np.float32) * 0.05, "w"),
             numpy_helper.from_array(rng.standard_normal(channels).astype(np.float32), "b")]
    attrs = {"strides": [1, stride] if two_d else [stride],
             "pads": [0, pads[0], 0, pads[1]] if two_d else list(pads)}
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c" if relu else "y"], **attrs)]
    if relu:
        nodes.append(helper.make_node("Relu", ["c"], ["y"]))
    positions = (samples + pads[0] + pads[1] - taps) // stride + 1
    xshape = [1, 1, 1, samples] if two_d else [1, 1, samples]
    yshape = [1, channels, 1, positions] if two_d else [1, channels, positions]
    graph = helper.make_graph(nodes, os.path.basename(path)[:-5],
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, xshape)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, yshape)], inits)
    save(graph, path)


def write_stack(path, layers, positions, leaky_first=False, seed=0):
    """layers: (in channels, out channels, taps, dilation, pad) each, a
    ReLU after every one but the last; the input sized for no padding."""
    rng = np.random.default_rng(seed)
    length = positions + sum((k - 1) * d - 2 * p for _, _, k, d, p in layers)
    inits, nodes, x = [], [], "x"
    if leaky_first:
        nodes.append(helper.make_node("LeakyRelu", [x], ["lx"], alpha=0.1))
        x = "lx"
    for i, (cin, cout, k, d, p) in enumerate(layers):
        inits += [numpy_helper.from_array(rng.standard_normal((cout, cin, k)).astype(np.float32) * 0.05, "w%d" % i),
                  numpy_helper.from_array(rng.standard_normal(cout).astype(np.float32), "b%d" % i)]
        last = i == len(layers) - 1
        nodes.append(helper.make_node("Conv", [x, "w%d" % i, "b%d" % i], ["y" if last else "c%d" % i],
                                      dilations=[d], pads=[p, p]))
        if not last:
            nodes.append(helper.make_node("Relu", ["c%d" % i], ["r%d" % i]))
            x = "r%d" % i
    graph = helper.make_graph(nodes, os.path.basename(path)[:-5],
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, layers[0][0], length])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, layers[-1][1], positions])],
                              inits)
    save(graph, path)


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: conv1d_models.py DIR")
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    write(os.path.join(out, "wav2vec2_conv0.onnx"), 512, 10, 5, 16000, seed=1)
    write(os.path.join(out, "whisper_stft_conv.onnx"), 402, 400, 160, 480000, seed=2)
    write(os.path.join(out, "resample_conv.onnx"), 160, 475, 441, 44100, pads=(17, 458), two_d=True, seed=3)
    write(os.path.join(out, "small_kernels.onnx"), 512, 3, 2, 16000, pads=(1, 1), relu=True, seed=4)
    write(os.path.join(out, "short_stft_conv.onnx"), 402, 400, 160, 16000, seed=5)
    write_stack(os.path.join(out, "dilated_stack.onnx"),
                [(128, 128, 3, 64, 0), (128, 128, 3, 256, 0), (128, 128, 3, 1024, 0)], 7500, seed=6)
    write_stack(os.path.join(out, "hifigan_block.onnx"), [(256, 256, 3, 5, 5)], 8000, leaky_first=True, seed=7)
    write_stack(os.path.join(out, "pointwise.onnx"), [(256, 512, 1, 1, 0), (512, 256, 1, 1, 0)], 2000, seed=8)


if __name__ == "__main__":
    main()
