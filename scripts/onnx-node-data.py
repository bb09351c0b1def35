#!/usr/bin/env python3
"""Writes the node test cases of the installed onnx package (its case
generators, onnx.backend.test.case.node) in the ONNX backend test-data layout:
DIR/node/NAME/model.onnx and test_data_set_0/{input,output}_N.pb, with the
other suites of the system's test data (simple, pytorch-converted,
pytorch-operator) linked beside them.  The conformance runner then reads them
when built with -DXF_ONNX_TESTDATA=DIR.  Cases whose inputs or outputs are not
plain tensors are left out.  Needs an onnx newer than the system's (test
tooling only, e.g. pip install onnx into a virtual environment).

    scripts/onnx-node-data.py DIR [SYSTEM_TEST_DATA]
"""
import os
import shutil
import sys

import numpy as np
from onnx import numpy_helper, save, save_tensor
from onnx.backend.test.case import node


def write_case(case, path):
    os.makedirs(os.path.join(path, "test_data_set_0"), exist_ok=True)
    save(case.model, os.path.join(path, "model.onnx"))
    for inputs, outputs in (case.data_sets or [])[:1]:
        for kind, values, infos in (("input", inputs, case.model.graph.input),
                                    ("output", outputs, case.model.graph.output)):
            for i, (v, vi) in enumerate(zip(values, infos)):
                if not isinstance(v, np.ndarray):
                    raise TypeError(f"{kind} {i} is not a tensor")
                save_tensor(numpy_helper.from_array(v, vi.name),
                            os.path.join(path, "test_data_set_0", f"{kind}_{i}.pb"))


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    out = sys.argv[1]
    system = sys.argv[2] if len(sys.argv) > 2 else "/usr/share/libonnx-testdata/data"
    written = skipped = 0
    for case in node.collect_testcases(None):
        path = os.path.join(out, "node", case.name)
        try:
            write_case(case, path)
            written += 1
        except (TypeError, ValueError):
            shutil.rmtree(path, ignore_errors=True)
            skipped += 1
    for suite in ("simple", "pytorch-converted", "pytorch-operator"):
        link = os.path.join(out, suite)
        if not os.path.exists(link):
            os.symlink(os.path.join(system, suite), link)
    print(f"{written} node cases written to {out}/node, {skipped} left out (not plain tensors)")


if __name__ == "__main__":
    main()
