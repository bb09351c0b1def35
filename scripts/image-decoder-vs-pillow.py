#!/usr/bin/env python3
"""Compares xflow's ImageDecoder with Pillow's decoding on random images.

Random images (blocks of colour plus noise, 1 to 69 pixels a side) go
through Pillow's encoders in every format and mode ImageDecoder reads;
xflow-run decodes them (one model per pixel format, one node per image)
and each output is compared with Pillow's pixels (convert("RGB"), the
channels reversed for BGR, convert("L") for Grayscale).  Then corrupted
streams (bytes changed, cut short) are decoded, which must not fail the
run.  Needs numpy, onnx and Pillow (test tooling, not a dependency).

usage: image-decoder-vs-pillow.py [--xflow-run PATH] [--seed N] [--rounds N] [--work DIR] [--wrap CMD]
(--wrap runs xflow-run under CMD, e.g. "valgrind -q --error-exitcode=9
--suppressions=scripts/valgrind-dlopen.supp"; then xflow-run keeps its
process (OMP_WAIT_POLICY set) and libjpeg-turbo's SIMD code is off
(JSIMD_FORCENONE=1): its vector code reads a row's unwritten padding
into the lanes of whole registers, which valgrind then counts as
uninitialised pixels; the pixels are the same with it off.)
"""
import argparse
import io
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
import onnx.helper as oh
import onnx.numpy_helper as nh
from PIL import Image

MAX_INPUTS = 250  # xflow-run takes at most 256 --input files


def rand_img(rng, h, w, mode):
    base = rng.integers(0, 256, (h // 4 + 1, w // 4 + 1, 4), dtype=np.uint8)
    a = np.repeat(np.repeat(base, 4, 0), 4, 1)[:h, :w]
    a = np.clip(a.astype(int) + rng.integers(-20, 21, a.shape), 0, 255).astype(np.uint8)
    if mode == "I;16":
        return Image.fromarray(a[:, :, 0].astype(np.uint16) * 257)
    if mode == "P":
        return Image.fromarray(a[:, :, :3], "RGB").quantize(int(rng.integers(2, 256)))
    if mode == "1":
        return Image.fromarray(a[:, :, 0], "L").convert("1")
    take = {"RGB": 3, "RGBA": 4, "CMYK": 4, "L": 1, "LA": 2}[mode]
    return Image.fromarray(a[:, :, 0] if take == 1 else a[:, :, :take], mode)


def encode(rng, fmt, mode, sides=(1, 70), **kw):
    im = rand_img(rng, int(rng.integers(*sides)), int(rng.integers(*sides)), mode)
    f = io.BytesIO()
    im.save(f, format=fmt, **kw)
    return f.getvalue()


def round_of_cases(rng):
    """One image of each kind: (kind, encoded bytes)."""
    kinds = [("JPEG", m, {"quality": int(rng.integers(5, 100))}) for m in ("RGB", "L", "CMYK")]
    kinds += [("JPEG", "RGB", {"progressive": True})] + [("JPEG", "RGB", {"subsampling": s}) for s in (0, 1, 2)]
    kinds += [("PNG", m, {}) for m in ("RGB", "RGBA", "L", "LA", "P", "1", "I;16")]
    kinds += [("BMP", m, {}) for m in ("RGB", "L", "P", "1", "RGBA")]
    kinds += [("TIFF", m, {}) for m in ("RGB", "L", "CMYK")]
    kinds += [("TIFF", "RGB", {"compression": c}) for c in ("tiff_lzw", "tiff_deflate")]
    kinds += [("TIFF", "L", {"compression": "packbits"})]
    kinds += [("WEBP", "RGB", {"quality": int(rng.integers(5, 100))}), ("WEBP", "RGB", {"lossless": True})]
    kinds += [("JPEG2000", "RGB", {}), ("JPEG2000", "L", {}), ("JPEG2000", "RGB", {"irreversible": True})]
    kinds += [("PPM", m, {}) for m in ("RGB", "L", "1")]
    cases = [("%s %s%s" % (f, m, " " + ",".join(sorted(kw)) if kw else ""), encode(rng, f, m, **kw)) for f, m, kw in kinds]
    # a JPEG 2000 stream of 64 KiB or more, which xflow decodes on several threads
    return cases + [("JPEG2000 RGB large", encode(rng, "JPEG2000", "RGB", (180, 240)))]


def decode_all(args, work, pf, blobs):
    """xflow's outputs for blobs as pixel format pf (None where the run failed)."""
    os.makedirs(work, exist_ok=True)
    n = len(blobs)
    nodes = [oh.make_node("ImageDecoder", ["x%d" % k], ["y%d" % k], pixel_format=pf) for k in range(n)]
    ins = [oh.make_tensor_value_info("x%d" % k, onnx.TensorProto.UINT8, [None]) for k in range(n)]
    outs = [oh.make_tensor_value_info("y%d" % k, onnx.TensorProto.UINT8, [None, None, None]) for k in range(n)]
    model = oh.make_model(oh.make_graph(nodes, "images", ins, outs), opset_imports=[oh.make_opsetid("", 20)])
    onnx.save(model, os.path.join(work, "m.onnx"))
    cmd = (args.wrap.split() if args.wrap else []) + [args.xflow_run, os.path.join(work, "m.onnx"), "-q"]
    cmd += ["--output-dir", work]
    for k, b in enumerate(blobs):
        p = os.path.join(work, "in%d.pb" % k)
        onnx.save_tensor(nh.from_array(np.frombuffer(b, np.uint8)), p)
        cmd += ["--input", p]
    env = dict(os.environ, OMP_WAIT_POLICY="passive", JSIMD_FORCENONE="1") if args.wrap else None
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if r.returncode:
        sys.exit("xflow-run failed (exit %d): %s" % (r.returncode, r.stderr[-3000:]))
    return [nh.to_array(onnx.load_tensor(os.path.join(work, "output_%d.pb" % k))) for k in range(n)]


def pillow(data, pf):
    im = Image.open(io.BytesIO(data))
    if pf == "Grayscale":
        return np.array(im.convert("L"))[:, :, None]
    a = np.array(im.convert("RGB"))
    return a[:, :, ::-1] if pf == "BGR" else a


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--xflow-run", default="build/tools/xflow-run")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--work", default=None)
    ap.add_argument("--wrap", default="")
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)
    work = args.work or tempfile.mkdtemp(prefix="xflow-images-")
    cases = [c for _ in range(args.rounds) for c in round_of_cases(rng)]
    worst, differing, total = {}, 0, 0
    for start in range(0, len(cases), MAX_INPUTS):
        part = cases[start:start + MAX_INPUTS]
        for pf in ("RGB", "BGR", "Grayscale"):
            got = decode_all(args, os.path.join(work, pf), pf, [b for _, b in part])
            for (kind, data), y in zip(part, got):
                want = pillow(data, pf)
                diff = 255 if y.shape != want.shape else int(np.abs(y.astype(int) - want.astype(int)).max())
                key = "%-9s %s" % (pf, kind)
                worst[key] = max(worst.get(key, 0), diff)
                differing += diff > 0
                total += 1
    print("%d decodings (%d images x 3 pixel formats): %d differ from Pillow" % (total, len(cases), differing))
    for key, d in sorted(worst.items()):
        if d:
            print("  %-40s largest difference %d" % (key, d))
    corrupt = []
    for k in range(len(cases)):
        b = bytearray(cases[k][1])
        how = rng.integers(0, 3)
        if how == 0:
            b = b[:int(rng.integers(0, len(b)))]
        else:
            for _ in range(int(rng.integers(1, 8))):
                b[int(rng.integers(0, len(b) if how == 1 else min(len(b), 64)))] = int(rng.integers(0, 256))
        corrupt.append(bytes(b))
    empty = 0
    for start in range(0, len(corrupt), MAX_INPUTS):
        got = decode_all(args, os.path.join(work, "corrupt"), "RGB", corrupt[start:start + MAX_INPUTS])
        empty += sum(1 for y in got if y.size == 0)
    print("%d corrupted streams decoded without failing the run: %d empty images, %d decoded"
          % (len(corrupt), empty, len(corrupt) - empty))
    return 0 if all(d == 0 or "I;16" in k for k, d in worst.items()) else 1


if __name__ == "__main__":
    sys.exit(main())
