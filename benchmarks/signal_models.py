#!/usr/bin/env python3
"""Writes the audio front ends that benchmarks/results/cpu-signal times:
log-mel features written with ONNX's STFT (opset 17), as speech models'
preprocessors export them (onnx_asr's whisper, nemo and kaldi ones have
these forms), with onnx.helper:

    .venv-bench/bin/python benchmarks/signal_models.py DIR
    benchmarks/cpu_vs_ort.sh --threads 1 --stat min DIR/*.onnx

- whisper_logmel.onnx: 30 s of 16 kHz audio (a [1, 480000] signal, as
  Whisper pads it), reflect-padded by 200, frames of 400 every 160 under a
  Hann window (3001 frames, 201 bins), power spectrum, 80 mel filters
  (random, seeded), log10 of the clipped powers, Whisper's scaling.
- asr_logmel_512.onnx: 1 s clips in a batch of 2 padded with zeros to 2 s
  first (a Pad of a constant), frames of 512 every 160 (a 400-point Hann
  window with zeros), 128 filters, the natural log."""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def hann(size, frame):
    w = np.zeros(frame, np.float32)
    t = np.arange(size)
    w[(frame - size) // 2:(frame - size) // 2 + size] = 0.5 - 0.5 * np.cos(2 * np.pi * t / size)
    return w


def write(path, batch, samples, pad, reflect, frame, window, step, mels, log10, seed):
    rng = np.random.default_rng(seed)
    bins = frame // 2 + 1
    inits = [numpy_helper.from_array(np.array([0, pad, 0, pad], np.int64), "pads"),
             numpy_helper.from_array(np.array(step, np.int64), "step"),
             numpy_helper.from_array(hann(window, frame), "window"),
             numpy_helper.from_array(np.array([-1], np.int64), "last"),
             numpy_helper.from_array(np.abs(rng.standard_normal((bins, mels))).astype(np.float32) * 0.05, "mel"),
             numpy_helper.from_array(np.array(1e-10, np.float32), "floor"),
             numpy_helper.from_array(np.array(np.log(10.0) if log10 else 1.0, np.float32), "base")]
    nodes = [helper.make_node("Pad", ["x", "pads"], ["padded"], mode="reflect" if reflect else "constant"),
             helper.make_node("Unsqueeze", ["padded", "last"], ["signal"]),
             helper.make_node("STFT", ["signal", "step", "window"], ["spec"], onesided=1),
             helper.make_node("ReduceSumSquare", ["spec"], ["power"], axes=[-1], keepdims=0),
             helper.make_node("MatMul", ["power", "mel"], ["melpow"]),
             helper.make_node("Clip", ["melpow", "floor"], ["clipped"]),
             helper.make_node("Log", ["clipped"], ["ln"]),
             helper.make_node("Div", ["ln", "base"], ["y"])]
    frames = 1 + (samples + 2 * pad - frame) // step
    graph = helper.make_graph(nodes, os.path.basename(path)[:-5],
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, samples])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [batch, frames, mels])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)  # onnx 1.12 infers STFT frames one too many
    onnx.save(model, path)


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: signal_models.py DIR")
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    write(os.path.join(out, "whisper_logmel.onnx"), 1, 480000, 200, True, 400, 400, 160, 80, True, 1)
    write(os.path.join(out, "asr_logmel_512.onnx"), 2, 16000, 8000, False, 512, 400, 160, 128, False, 2)


if __name__ == "__main__":
    main()
