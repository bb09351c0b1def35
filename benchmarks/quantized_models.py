"""Writes models quantized with uint8 weights by ONNX Runtime's quantizers,
as older releases wrote them by default and QuantType.QUInt8 still does:

- NAME_qop_u8u8.onnx: quantize_static, QOperator format (QLinearConv,
  uint8 weights with a zero point per tensor);
- NAME_qdq_u8u8_pc.onnx: quantize_static, QDQ format, weights per output
  channel (a zero point each);
- NAME_dyn_u8.onnx: quantize_dynamic (DynamicQuantizeLinear, ConvInteger of
  uint8 weights with a zero point).

The calibration reads two random images of the model's input shape.

usage: quantized_models.py DIR MODEL.onnx...  (with a Python whose
onnxruntime.quantization imports: onnx >= 1.13 and ml_dtypes beside it)
"""
import os
import sys

import numpy as np
import onnx
from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_dynamic, quantize_static


class RandomImages(CalibrationDataReader):
    def __init__(self, name, shape):
        self.name, self.shape, self.i = name, shape, 0

    def get_next(self):
        self.i += 1
        if self.i > 2:
            return None
        return {self.name: np.random.default_rng(self.i).uniform(0, 1, self.shape).astype(np.float32)}


def main():
    if len(sys.argv) < 3:
        sys.exit("usage: quantized_models.py DIR MODEL.onnx...")
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    for path in sys.argv[2:]:
        model = onnx.load(path)
        x = model.graph.input[0]
        shape = [d.dim_value if d.dim_value > 0 else 1 for d in x.type.tensor_type.shape.dim]
        base = os.path.join(out, os.path.splitext(os.path.basename(path))[0])
        quantize_static(path, base + "_qop_u8u8.onnx", RandomImages(x.name, shape), quant_format=QuantFormat.QOperator,
                        activation_type=QuantType.QUInt8, weight_type=QuantType.QUInt8)
        quantize_static(path, base + "_qdq_u8u8_pc.onnx", RandomImages(x.name, shape), quant_format=QuantFormat.QDQ,
                        activation_type=QuantType.QUInt8, weight_type=QuantType.QUInt8, per_channel=True)
        quantize_dynamic(path, base + "_dyn_u8.onnx", weight_type=QuantType.QUInt8)
        print("wrote %s_{qop_u8u8,qdq_u8u8_pc,dyn_u8}.onnx" % base)


if __name__ == "__main__":
    main()
