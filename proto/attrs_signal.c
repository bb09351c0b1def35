/* ONNX attributes -> xf_attrs for the signal-processing ops (opset 17):
 *
 *   DFT             inverse (0 or 1)  onesided (0 or 1)  axis (opset 17 to
 *                   19; from opset 20 axis is an input, whose default -2
 *                   is set here)
 *   STFT            onesided (0 or 1; default 1)
 *   HannWindow, HammingWindow, BlackmanWindow
 *                   periodic (0 or 1; 0: window_symmetric)
 *                   output_datatype->output_dtype (a float or integer type
 *                   of ONNX's T2)
 *   MelWeightMatrix output_datatype->output_dtype (the same types: its T3)
 *
 * Anything else keeps the node opaque. */
#include "proto_internal.h"

#include <string.h>

/* The types a window (or a mel weight matrix) may be made in (ONNX's T2). */
static bool window_dtype(xf_dtype t)
{
    switch (t) {
    case XF_DT_FLOAT: case XF_DT_DOUBLE: case XF_DT_FLOAT16: case XF_DT_BFLOAT16:
    case XF_DT_INT8: case XF_DT_INT16: case XF_DT_INT32: case XF_DT_INT64:
    case XF_DT_UINT8: case XF_DT_UINT16: case XF_DT_UINT32: case XF_DT_UINT64:
        return true;
    default:
        return false;
    }
}

bool xfp_signal_attr_import(xf_op op, int64_t opset, const Onnx__AttributeProto *at, xf_attrs *a, char *why,
                            size_t why_len)
{
    const char *name = at->name;
    int periodic;
#define A(s) (strcmp(name, s) == 0)
    if (op == XF_OP_DFT && A("inverse"))
        return xfp_attr_int32(at, 0, 1, &a->dft_inverse, why, why_len);
    if ((op == XF_OP_DFT || op == XF_OP_STFT) && A("onesided"))
        return xfp_attr_int32(at, 0, 1, &a->dft_onesided, why, why_len);
    if (op == XF_OP_DFT && A("axis") && opset < 20)
        return xfp_attr_int(at, INT64_MIN, INT64_MAX, &a->axis, why, why_len);
    bool window = op == XF_OP_HANN_WINDOW || op == XF_OP_HAMMING_WINDOW || op == XF_OP_BLACKMAN_WINDOW;
    if (window && A("periodic")) {
        if (!xfp_attr_int32(at, 0, 1, &periodic, why, why_len))
            return false;
        a->window_symmetric = !periodic;
        return true;
    }
    if ((window || op == XF_OP_MEL_WEIGHT_MATRIX) && A("output_datatype")) {
        if (!xfp_attr_dtype(at, &a->output_dtype, why, why_len))
            return false;
        return window_dtype(a->output_dtype) ||
               xfp_attr_refuse(why, why_len, "attribute '%s' names a type xflow does not make here", name);
    }
#undef A
    return xfp_attr_refuse(why, why_len, "attribute '%s' is not modelled", name);
}

void xfp_signal_attrs_finish(xf_op op, int64_t opset, xf_attrs *a)
{
    if (op == XF_OP_DFT && opset >= 20)
        a->axis = -2;
}
