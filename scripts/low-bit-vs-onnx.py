#!/usr/bin/env python3
"""Compares xflow's casts to float8 and 4-bit quantization with ONNX's.

Two comparisons, each on xflow-run's outputs:

  reference    Cast of float to the five float8 formats (e4m3fn, e4m3fnuz,
               e5m2, e5m2fnuz; either saturate) and to float8e8m0 (each
               round_mode), on every code's value, every midpoint between
               neighbouring codes and the floats either side of it, random
               values of many scales, NaN of either sign and infinities,
               code for code against ONNX's reference implementation
               (onnx.reference, ml_dtypes).  e8m0 infinities under
               saturate are left out: the reference keeps them NaN where
               ONNX's table saturates them, as xflow does.
  onnxruntime  the same float8 casts (e8m0 aside: ONNX Runtime has none)
               and 4-bit QuantizeLinear + DequantizeLinear round trips
               (int4 and uint4, blocks of 32, zero points), value for
               value against ONNX Runtime, on cpu_ref and cpu.

Prints each difference class and a summary line.  Needs numpy, onnx (with
ml_dtypes) and onnxruntime (test tooling).

usage: low-bit-vs-onnx.py [--against reference|onnxruntime] [--seed N] [--xflow-run PATH]
"""
import argparse
import glob
import os
import shutil
import subprocess
import tempfile

import ml_dtypes
import numpy as np
import onnx
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper as nh

F8 = [T.FLOAT8E4M3FN, T.FLOAT8E4M3FNUZ, T.FLOAT8E5M2, T.FLOAT8E5M2FNUZ]


def run_xflow(xflow_run, work, model, feeds, backend="cpu_ref"):
    """xflow-run's outputs, as TensorProtos in output order."""
    out = os.path.join(work, "out")
    shutil.rmtree(out, ignore_errors=True)
    path = os.path.join(work, "model.onnx")
    onnx.save(model, path)
    args = [xflow_run, path, "--backend", backend, "--output-dir", out]
    for i, (name, value) in enumerate(feeds.items()):
        p = os.path.join(work, f"in{i}.pb")
        onnx.save_tensor(nh.from_array(value, name), p)
        args += ["--input", p]
    subprocess.run(args, check=True, capture_output=True)
    protos = []
    for f in sorted(glob.glob(os.path.join(out, "*.pb"))):
        t = onnx.TensorProto()
        with open(f, "rb") as fh:
            t.ParseFromString(fh.read())
        protos.append(t)
    return protos


def float8_inputs(rng):
    vals = []
    codes = np.arange(256, dtype=np.uint8)
    for dt in (ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e4m3fnuz, ml_dtypes.float8_e5m2,
               ml_dtypes.float8_e5m2fnuz):
        v = np.sort(np.unique(codes.view(dt).astype(np.float32)))
        v = v[np.isfinite(v)]
        mid = (v[1:] + v[:-1]) / 2
        vals += [v, mid, np.nextafter(mid, np.float32(np.inf)), np.nextafter(mid, np.float32(-np.inf))]
    scales = rng.choice([1e-6, 1e-2, 1, 100, 1e4, 1e5], 20000)
    vals += [rng.standard_normal(20000) * scales, [np.nan, -np.nan, np.inf, -np.inf, 0, -0.0]]
    return np.concatenate(vals).astype(np.float32)


def cast_model(x, to, saturate, round_mode=None):
    attrs = {"to": to, "saturate": saturate}
    if round_mode:
        attrs["round_mode"] = round_mode
    g = h.make_graph([h.make_node("Cast", ["x"], ["y"], **attrs)], "cast",
                     [h.make_tensor_value_info("x", T.FLOAT, [x.size])],
                     [h.make_tensor_value_info("y", to, [x.size])])
    return h.make_model(g, opset_imports=[h.make_opsetid("", 25)])


def against_reference(args, rng, work):
    from onnx.reference import ReferenceEvaluator
    x = float8_inputs(rng)
    total = bad = 0
    for to in F8 + [T.FLOAT8E8M0]:
        for sat in (1, 0):
            for mode in (("up", "down", "nearest") if to == T.FLOAT8E8M0 else (None,)):
                xs = np.abs(x) if to == T.FLOAT8E8M0 else x  # e8m0 of negatives is unspecified
                m = cast_model(xs, to, sat, mode)
                want = np.asarray(ReferenceEvaluator(m).run(None, {"x": xs})[0]).view(np.uint8)
                got = np.frombuffer(run_xflow(args.xflow_run, work, m, {"x": xs})[0].raw_data, np.uint8)
                differ = got != want
                if to == T.FLOAT8E8M0 and sat:
                    differ &= ~np.isinf(xs)
                total += xs.size
                bad += int(differ.sum())
                if differ.any():
                    i = int(np.argmax(differ))
                    print(f"{T.DataType.Name(to)} saturate={sat} {mode or ''}: {int(differ.sum())} differ; "
                          f"first x={xs[i]!r}: xflow 0x{got[i]:02x}, reference 0x{want[i]:02x}")
    print(f"{total} casts compared with ONNX's reference implementation, {bad} codes differ")


def against_onnxruntime(args, rng, work):
    import onnxruntime as ort
    total = bad = 0

    def compare(name, model, feeds):
        nonlocal total, bad
        path = os.path.join(work, "ort.onnx")
        onnx.save(model, path)
        want = ort.InferenceSession(path).run(None, feeds)
        for backend in ("cpu_ref", "cpu"):
            got = [nh.to_array(t) for t in run_xflow(args.xflow_run, work, model, feeds, backend)]
            for a, b in zip(got, want):
                a, b = a.astype(np.float64), b.astype(np.float64)
                differ = ~((a == b) | (np.isnan(a) & np.isnan(b)))
                total += a.size
                bad += int(differ.sum())
                if differ.any():
                    i = int(np.argmax(differ.ravel()))
                    print(f"{name} on {backend}: {int(differ.sum())} differ; first x={feeds['x'].ravel()[i]!r}: "
                          f"xflow {a.ravel()[i]!r}, ONNX Runtime {b.ravel()[i]!r}")

    x = np.concatenate([rng.standard_normal(4000) * rng.choice([1e-3, 1, 100, 1e5], 4000),
                        [np.nan, np.inf, -np.inf, 0, -0.0, 448, 449, 464, 57344, 61440, 1e-9]]).astype(np.float32)
    for to in F8:
        for sat in (1, 0):
            g = h.make_graph([h.make_node("Cast", ["x"], ["c"], to=to, saturate=sat),
                              h.make_node("Cast", ["c"], ["y"], to=T.FLOAT)], "g",
                             [h.make_tensor_value_info("x", T.FLOAT, [x.size])],
                             [h.make_tensor_value_info("y", T.FLOAT, [x.size])])
            compare(f"Cast to {T.DataType.Name(to)} saturate={sat}",
                    h.make_model(g, opset_imports=[h.make_opsetid("", 21)]), {"x": x})
    xm = (rng.standard_normal((16, 64)) * rng.choice([0.1, 1, 10], (16, 64))).astype(np.float32)
    for qt in (T.INT4, T.UINT4):
        scale = (rng.random((16, 2)) + 0.05).astype(np.float32)
        lo, hi = (-8, 8) if qt == T.INT4 else (0, 16)
        zp = h.make_tensor("zp", qt, [16, 2], vals=rng.integers(lo, hi, 32).tolist())
        g = h.make_graph([h.make_node("QuantizeLinear", ["x", "s", "zp"], ["q"], axis=1, block_size=32),
                          h.make_node("DequantizeLinear", ["q", "s", "zp"], ["y"], axis=1, block_size=32)], "g",
                         [h.make_tensor_value_info("x", T.FLOAT, [16, 64])],
                         [h.make_tensor_value_info("y", T.FLOAT, [16, 64])], [nh.from_array(scale, "s"), zp])
        compare(f"QuantizeLinear + DequantizeLinear {T.DataType.Name(qt)}",
                h.make_model(g, opset_imports=[h.make_opsetid("", 21)]), {"x": xm})
    print(f"{total} values compared with ONNX Runtime, {bad} differ")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--against", choices=("reference", "onnxruntime"), default="reference")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--xflow-run", default=os.path.join(os.path.dirname(__file__), "..", "build", "tools", "xflow-run"))
    args = p.parse_args()
    rng = np.random.default_rng(args.seed)
    with tempfile.TemporaryDirectory() as work:
        (against_reference if args.against == "reference" else against_onnxruntime)(args, rng, work)


if __name__ == "__main__":
    main()
