"""Times an original and an xflowc-optimized ONNX model on ONNX Runtime (CPU),
plus ORT's own offline-optimized version of the original as a peer optimizer.

usage: python bench_ort.py ORIGINAL.onnx OPTIMIZED.onnx WORKDIR ITERS BUDGET_S THREADS

Run by xflow-bench with an interpreter that has onnxruntime, with THREADS
intra-op threads (0: ORT's default).  Prints one JSON object: the ORT
version, the median latency (ms) of each model, the per-iteration speedup
median, the iterations run (fewer than ITERS when ITERS rounds would take
well over BUDGET_S seconds), and the largest absolute difference between the
original's outputs and each other model's outputs.
"""
import json
import os
import statistics
import sys
import time

import numpy as np
import onnxruntime as ort


def session(path, level, threads, save_to=None):
    so = ort.SessionOptions()
    so.graph_optimization_level = level
    so.intra_op_num_threads = threads
    if save_to:
        so.optimized_model_filepath = save_to
    return ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])


def feeds_for(sess, seed):
    rng = np.random.default_rng(seed)
    feeds = {}
    for i in sess.get_inputs():
        shape = [d if isinstance(d, int) else 1 for d in i.shape]
        feeds[i.name] = rng.uniform(-1, 1, size=shape).astype(np.float32)
    return feeds


def max_abs_diff(a, b):
    return max((float(np.max(np.abs(x.astype(np.float64) - y))) for x, y in zip(a, b) if x.size), default=0.0)


def max_abs(outputs):
    return max((float(np.max(np.abs(x))) for x in outputs if x.size), default=0.0)


def main():
    original, optimized, workdir = sys.argv[1], sys.argv[2], sys.argv[3]
    iters, budget, threads = int(sys.argv[4]), float(sys.argv[5]), int(sys.argv[6])
    all_opts = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    ort_offline = os.path.join(workdir, "ort-offline.onnx")
    # ORT's offline optimizer at the portable level (the full level adds
    # layout rewrites for this very CPU); its output, like xflowc's, then runs
    # with every ORT graph optimization on.
    session(original, ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED, threads, save_to=ort_offline)
    sessions = {
        "original": session(original, all_opts, threads),
        "xflow": session(optimized, all_opts, threads),
        "ort_offline": session(ort_offline, all_opts, threads),
    }
    feeds = feeds_for(sessions["original"], 1)
    t0 = time.perf_counter()
    outputs = {k: s.run(None, feeds) for k, s in sessions.items()}
    round_s = time.perf_counter() - t0
    iters = max(1, min(iters, int(budget / round_s)))
    for _ in range(2 if round_s < 1 else 1):
        for s in sessions.values():
            s.run(None, feeds)
    times = {k: [] for k in sessions}
    for _ in range(iters):
        # Alternating the models spreads machine noise over all of them.
        for k, s in sessions.items():
            t0 = time.perf_counter()
            s.run(None, feeds)
            times[k].append(time.perf_counter() - t0)
    med = {k: 1e3 * statistics.median(v) for k, v in times.items()}
    speedup = {
        k: statistics.median(o / x for o, x in zip(times["original"], times[k])) for k in ("xflow", "ort_offline")
    }
    print(json.dumps({
        "version": ort.__version__,
        "threads": os.cpu_count(),
        "iters": iters,
        "median_ms": med,
        "speedup": speedup,
        "max_abs_err": {k: max_abs_diff(outputs["original"], outputs[k]) for k in ("xflow", "ort_offline")},
        "max_abs_output": max_abs(outputs["original"]),
    }))


if __name__ == "__main__":
    main()
