#!/usr/bin/env python3
"""Writes the node test cases of the installed onnx package (its case
generators, onnx.backend.test.case.node) in the ONNX backend test-data layout:
DIR/node/NAME/model.onnx and test_data_set_0/{input,output}_N.pb, with the
other suites of the system's test data (simple, pytorch-converted,
pytorch-operator) linked beside them.  The conformance runner then reads them
when built with -DXF_ONNX_TESTDATA=DIR.  Numpy scalars are written as 0-d tensors,
lists as SequenceProto files and optionals' values as OptionalProto files
(as ONNX's own test data stores them); a case holding anything else is
left out.  Needs an onnx newer than the system's (test
tooling only, e.g. pip install onnx into a virtual environment).

    scripts/onnx-node-data.py DIR [SYSTEM_TEST_DATA]
"""
import os
import shutil
import sys

import numpy as np
from onnx import OptionalProto, SequenceProto, TensorProto, numpy_helper, save
from onnx.backend.test.case import node


def to_proto(v, name, type_proto):
    """The value of a case's input or output as the proto the test-data layout
    stores: a TensorProto (numpy scalars as 0-d tensors; the generators give
    4- and 2-bit and some float8 values as TensorProtos already), a
    SequenceProto for a list, an OptionalProto for an optional's value."""
    if type_proto.HasField("optional_type"):
        elem = type_proto.optional_type.elem_type
        if v is None:
            opt = OptionalProto(name=name)
            opt.elem_type = (OptionalProto.SEQUENCE if elem.HasField("sequence_type")
                             else OptionalProto.TENSOR)
            return opt
        return numpy_helper.from_optional(v if isinstance(v, list) else np.asarray(v), name)
    if isinstance(v, TensorProto):
        t = TensorProto()
        t.CopyFrom(v)
        t.name = name
        return t
    if isinstance(v, list):
        return numpy_helper.from_list([np.asarray(e) for e in v], name)
    if isinstance(v, (np.ndarray, np.generic)):
        return numpy_helper.from_array(np.asarray(v), name)
    raise TypeError(f"{name}: a {type(v).__name__}, not a tensor, sequence or optional")


def write_case(case, path):
    os.makedirs(os.path.join(path, "test_data_set_0"), exist_ok=True)
    save(case.model, os.path.join(path, "model.onnx"))
    for inputs, outputs in (case.data_sets or [])[:1]:
        for kind, values, infos in (("input", inputs, case.model.graph.input),
                                    ("output", outputs, case.model.graph.output)):
            for i, (v, vi) in enumerate(zip(values, infos)):
                proto = to_proto(v, vi.name, vi.type)
                with open(os.path.join(path, "test_data_set_0", f"{kind}_{i}.pb"), "wb") as f:
                    f.write(proto.SerializeToString())


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
    print(f"{written} node cases written to {out}/node, {skipped} left out (values of another kind)")


if __name__ == "__main__":
    main()
