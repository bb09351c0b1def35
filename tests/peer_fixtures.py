"""Writes what a peer runtime gave for a test fixture: the inputs as
NAME.in0.pb, NAME.in1.pb, ... and the outputs as NAME.out0.pb, ... (ONNX
TensorProto files), as the suites' fixture helpers read them
(tests/proto_util.h).  Imported by the fixture scripts beside it."""
import os

from onnx import numpy_helper


def write_fixture(outdir, name, feeds, outputs, output_names):
    for k, (input_name, value) in enumerate(feeds.items()):
        with open(os.path.join(outdir, f"{name}.in{k}.pb"), "wb") as f:
            f.write(numpy_helper.from_array(value, input_name).SerializeToString())
    for k, value in enumerate(outputs):
        with open(os.path.join(outdir, f"{name}.out{k}.pb"), "wb") as f:
            f.write(numpy_helper.from_array(value, output_names[k]).SerializeToString())
