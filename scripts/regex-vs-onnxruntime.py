#!/usr/bin/env python3
"""Compares xflow's RegexFullMatch and Tokenizer with ONNX Runtime's on random RE2 patterns.

Each pattern runs as RegexFullMatch's pattern and as the Tokenizer's token
expression (com.microsoft, mark 0, mincharnum 1, pad "#") over a set of
strings, on xflow-run and on ONNX Runtime; a run agrees when the outputs
are equal.  Two families of patterns:

  classes  one to four of a, é, \\w, \\W, \\d, \\s, \\S, ., sets, negated
           sets, POSIX classes, \\b, \\B and alternations, each repeated or
           not, on 40 random strings of "aébx_ 1ï-" and newlines
  anchors  ^, $ and one to four of a, b, ., \\w, \\W, \\d, \\D, \\s, \\S, \\n,
           sets and negated sets, each repeated or not, under (?m), (?ms),
           (?mU), (?im) or no flag, on 14 strings with newlines
  hex      one to four \\xHH and \\x{H...} escapes, alone or in sets and
           ranges (ASCII letters and punctuation, ']', '-', the backslash,
           a newline, Greek letters, é, ï, an emoji), each repeated or not,
           on 40 random strings of those characters

Patterns ONNX Runtime refuses are skipped; patterns xflow refuses are
counted apart.  Needs numpy, onnx and onnxruntime (test tooling).

usage: regex-vs-onnxruntime.py [--family classes|anchors|hex] [--patterns N] [--seed N]
                               [--xflow-run PATH] [--show N]
"""
import argparse
import os
import random
import subprocess
import sys
import tempfile

import numpy as np
import onnx
import onnx.helper as oh
import onnx.numpy_helper as nh
import onnxruntime as ort

CLASS_ATOMS = ["a", "é", "\\w", "\\W", "\\d", "\\s", "\\S", ".", "[ab]", "[^a]", "[^é ]", "[[:alpha:]]",
               "[[:digit:]_]", "\\b", "\\B", "(a|b)", "(x|é)"]
ANCHOR_ATOMS = ["a", "b", ".", "[^a]", "[^\\n]", "\\D", "\\W", "\\w", "\\d", "\\n", "[a-c]", "\\s", "\\S", "[^ ]"]
HEX_ATOMS = ["\\x41", "\\x{61}", "[\\x61-\\x7a]", "\\x{3b1}", "[\\x{3b1}-\\x{3c9}]", "\\x2e", "[\\x5d]", "[^\\x{e9}]",
             "\\x5c", "\\x0a", "[\\x2d]", "\\x{1F600}", "[\\x{e9}\\x{ef}]", "\\x20", "[a\\x{3c9}]", "\\x{EF}"]
ANCHOR_TEXTS = ["a\nb", "ab\ncd", "\nab", "ab\n", "x1\n2y", "abc", "a\n\nb", "12\n34\n", "é\nb", "foo bar\nbaz qux",
                "a_b\nc-d", "", "\n", "aa\nbb\ncc"]


def patterns(family, n, rng):
    out = []
    for _ in range(n):
        k = rng.randint(1, 4)
        if family == "hex":
            out.append("".join(a + rng.choice(["", "", "+", "*", "?"]) for a in (rng.choice(HEX_ATOMS)
                                                                                   for _ in range(k))))
        elif family == "classes":
            body = "".join(a + ("" if a in ("\\b", "\\B") else rng.choice(["", "", "+", "*", "?"]))
                           for a in (rng.choice(CLASS_ATOMS) for _ in range(k)))
            out.append(body)
        else:
            atoms = ANCHOR_ATOMS + ["^", "$"]
            body = "".join(a + ("" if a in "^$" else rng.choice(["", "", "+", "*", "?"]))
                           for a in (rng.choice(atoms) for _ in range(k)))
            out.append(rng.choice(["(?m)", "(?m)", "(?ms)", "(?mU)", "(?im)", ""]) + body)
    return out


def texts(family, rng):
    if family == "anchors":
        return ANCHOR_TEXTS
    chars = "Aaα.]é\\\n-😀 ïbωz" if family == "hex" else "aébx_ 1ï-\n"
    return ["".join(rng.choice(chars) for _ in range(rng.randint(0, 8))) for _ in range(40)]


def model(kind, pattern, n):
    if kind == "RegexFullMatch":
        node = oh.make_node("RegexFullMatch", ["x"], ["y"], pattern=pattern)
        out, ops = onnx.TensorProto.BOOL, [oh.make_opsetid("", 20)]
    else:
        node = oh.make_node("Tokenizer", ["x"], ["y"], domain="com.microsoft", mark=0, mincharnum=1, pad_value="#",
                            tokenexp=pattern)
        out, ops = onnx.TensorProto.STRING, [oh.make_opsetid("", 20), oh.make_opsetid("com.microsoft", 1)]
    g = oh.make_graph([node], "g", [oh.make_tensor_value_info("x", onnx.TensorProto.STRING, [n])],
                      [oh.make_tensor_value_info("y", out, None)])
    m = oh.make_model(g, opset_imports=ops)
    m.ir_version = 9
    return m


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--family", choices=["classes", "anchors", "hex"], default="classes")
    ap.add_argument("--patterns", type=int, default=100)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--xflow-run", default="build/tools/xflow-run")
    ap.add_argument("--show", type=int, default=10, help="differing runs to print")
    args = ap.parse_args()
    rng = random.Random(args.seed)
    work = tempfile.mkdtemp(prefix="xflow-regex-")
    x = np.array(texts(args.family, rng), dtype=object)
    onnx.save_tensor(nh.from_array(x), os.path.join(work, "x.pb"))
    agree = differ = refused = skipped = 0
    for p in patterns(args.family, args.patterns, rng):
        for kind in ("RegexFullMatch", "Tokenizer"):
            m = model(kind, p, len(x))
            try:
                sess = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
                want = sess.run(None, {"x": x})[0]
            except Exception:
                skipped += 1
                continue
            onnx.save(m, os.path.join(work, "m.onnx"))
            r = subprocess.run([args.xflow_run, os.path.join(work, "m.onnx"), "--input", os.path.join(work, "x.pb"),
                                "-q", "--output-dir", work], capture_output=True, text=True)
            if r.returncode:
                refused += 1
                if refused <= args.show:
                    print("refused  %-14s %r: %s" % (kind, p, r.stderr.strip().splitlines()[-1][:160]))
                continue
            got = nh.to_array(onnx.load_tensor(os.path.join(work, "output_0.pb")))
            if want.shape == got.shape and (want == got).all():
                agree += 1
            else:
                differ += 1
                if differ <= args.show:
                    print("differs  %-14s %r" % (kind, p))
    print("%s, seed %d: %d runs agree with ONNX Runtime, %d differ, %d refused by xflow (%d refused by ONNX Runtime, "
          "not run)" % (args.family, args.seed, agree, differ, refused, skipped))
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
