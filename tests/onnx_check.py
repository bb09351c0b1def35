#!/usr/bin/python3
"""Runs onnx.checker on ONNX files: the independent check that what xflow
writes is valid ONNX.

usage: onnx_check.py [--list FILE] [MODEL.onnx ...]

FILE holds one path per line.  Prints one line per failing model and a final
"checked N, failed M" line; exits 1 if any failed.
"""
import argparse
import sys

import onnx


def check(path):
    """None when path passes the checker, else the reason in one line."""
    try:
        # The path form lets the checker read the file itself, so that it
        # also checks external data files and models over 2 GiB.  No
        # full_check: with a path, onnx 1.12 writes the shape-inferred model
        # back into the file.
        onnx.checker.check_model(path, full_check=False)
    except Exception as e:  # the checker raises several exception types
        return " ".join(str(e).split()) or type(e).__name__
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--list", help="file with one model path per line")
    ap.add_argument("models", nargs="*")
    args = ap.parse_args()
    paths = list(args.models)
    if args.list:
        with open(args.list) as f:
            paths += [line.strip() for line in f if line.strip()]
    failed = 0
    for p in paths:
        reason = check(p)
        if reason is not None:
            failed += 1
            print(f"{p}: {reason[:400]}")
    print(f"checked {len(paths)}, failed {failed}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
