#!/usr/bin/env python3
"""Times one ONNX model on ONNX Runtime's CPU provider, all graph
optimizations on, one intra-op thread per core.  Inputs are seeded random
tensors (symbolic dims taken as 1).  Prints `median_ms X min_ms Y`."""
import argparse
import os
import statistics
import sys
import time

import numpy as np
import onnxruntime as ort

DTYPES = {"tensor(float)": np.float32, "tensor(double)": np.float64, "tensor(int64)": np.int64,
          "tensor(int32)": np.int32, "tensor(bool)": np.bool_, "tensor(uint8)": np.uint8, "tensor(int8)": np.int8,
          "tensor(float16)": np.float16}


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("model")
    p.add_argument("--iters", type=int, default=10)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--threads", type=int, default=os.cpu_count())
    a = p.parse_args()

    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    so.intra_op_num_threads = a.threads
    sess = ort.InferenceSession(a.model, so, providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(1)
    feeds = {}
    for i in sess.get_inputs():
        shape = [d if isinstance(d, int) and d > 0 else 1 for d in i.shape]
        dt = DTYPES.get(i.type)
        if dt is None:
            sys.exit(f"ort_run.py: input '{i.name}' has unsupported type {i.type}")
        if np.issubdtype(dt, np.floating):
            feeds[i.name] = rng.uniform(-1, 1, shape).astype(dt)
        else:
            feeds[i.name] = rng.integers(0, 10, shape).astype(dt)
    for _ in range(a.warmup):
        sess.run(None, feeds)
    times = []
    for _ in range(a.iters):
        t0 = time.perf_counter()
        sess.run(None, feeds)
        times.append((time.perf_counter() - t0) * 1e3)
    print(f"median_ms {statistics.median(times):.3f} min_ms {min(times):.3f}")


if __name__ == "__main__":
    main()
