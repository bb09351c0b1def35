#!/usr/bin/env python3
"""Writes the convolutions of one input channel that
benchmarks/results/cpu-conv-one-channel times (the forms audio models'
first layers and preprocessors take), with onnx.helper and seeded random
weights:

    .venv-bench/bin/python benchmarks/one_channel_conv_models.py DIR
    benchmarks/cpu_vs_ort.sh --threads 1 --stat min DIR/*.onnx

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
  on oneDNN's kernel."""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


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
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, path)


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: one_channel_conv_models.py DIR")
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    write(os.path.join(out, "wav2vec2_conv0.onnx"), 512, 10, 5, 16000, seed=1)
    write(os.path.join(out, "whisper_stft_conv.onnx"), 402, 400, 160, 480000, seed=2)
    write(os.path.join(out, "resample_conv.onnx"), 160, 475, 441, 44100, pads=(17, 458), two_d=True, seed=3)
    write(os.path.join(out, "small_kernels.onnx"), 512, 3, 2, 16000, pads=(1, 1), relu=True, seed=4)
    write(os.path.join(out, "short_stft_conv.onnx"), 402, 400, 160, 16000, seed=5)


if __name__ == "__main__":
    main()
