/* The shape rules of the signal-processing ops: DFT, STFT, the windows
 * and MelWeightMatrix (see shape_infer.c for the driver).  Their output lengths are values of
 * their integer inputs: where such a value is not known here the shape is
 * unknown, and sessions infer it per run. */
#include "shape_infer_impl.h"

#include <inttypes.h>

/* The scalar integer input i (what: its name in messages) in *v; *known =
 * false when its value is not known here. */
static xf_status read_scalar(xf_infer_ctx *c, int i, const char *what, int64_t *v, bool *known)
{
    int64_t vals[1];
    int n;
    *known = false;
    const xf_tensor *t = xf_infer_value(c, i);
    if (t && !xf_infer_scalar_like(&t->shape))
        return xf_infer_fail(c, XF_ERR_INVALID, "%s must be a scalar, got shape %s", what,
                             xf_infer_text(&t->shape).s);
    xf_status st = xf_infer_read_ints(c, i, what, vals, 1, &n);
    if (st != XF_OK || n < 0)
        return st;
    *v = vals[0];
    *known = true;
    return XF_OK;
}

bool xf_dft_axis_valid(int64_t axis, int rank, int *out)
{
    if (axis < 0)
        axis += rank;
    if (axis < 0 || axis > rank - 2)
        return false;
    *out = (int)axis;
    return true;
}

/* DFT: input [..., signal, ..., 1 or 2] gives the same shape with the
 * axis' extent dft_length (floor(dft_length / 2) + 1 when onesided) and
 * 2 (real, imaginary) last.  dft_length defaults to the axis' extent;
 * axis is an input from opset 20 (else the attribute).  Inverse and
 * onesided together are the inverse real transform: one-sided bins in,
 * dft_length real samples out (last dim 1), dft_length defaulting to
 * 2 (bins - 1). */
xf_status xf_infer_dft(xf_infer_ctx *c)
{
    const xf_attrs *a = &c->node->attrs;
    const xf_shape *x = xf_infer_shape(c, 0);
    bool irfft = a->dft_inverse && a->dft_onesided;
    if (x->ndim < 2 || (x->dims[x->ndim - 1] != 1 && x->dims[x->ndim - 1] != 2))
        return xf_infer_fail(c, XF_ERR_INVALID, "input must have shape [..., 1] (real) or [..., 2] (complex), got %s",
                             xf_infer_text(x).s);
    bool has_axis_input = xf_infer_has(c, 2), known = true;
    if (has_axis_input && c->opset > 0 && c->opset < 20)
        return xf_infer_fail(c, XF_ERR_INVALID, "axis is an input from opset 20 only (opset %" PRId64
                             " takes the attribute)", c->opset);
    int64_t axis = a->axis, length = 0;
    xf_status st = has_axis_input ? read_scalar(c, 2, "axis", &axis, &known) : XF_OK;
    if (st != XF_OK || !known)
        return st != XF_OK ? st : xf_infer_unknown(c);
    int ax;
    if (!xf_dft_axis_valid(axis, x->ndim, &ax))
        return xf_infer_fail(c, XF_ERR_INVALID, "axis %" PRId64 " is out of range for rank %d (the last dim holds "
                             "real and imaginary parts)", axis, x->ndim);
    length = irfft ? 2 * (x->dims[ax] - 1) : x->dims[ax];
    st = xf_infer_has(c, 1) ? read_scalar(c, 1, "dft_length", &length, &known) : XF_OK;
    if (st != XF_OK || !known)
        return st != XF_OK ? st : xf_infer_unknown(c);
    if (length < 1)
        return xf_infer_fail(c, XF_ERR_INVALID, "dft_length %" PRId64 " is not positive", length);
    xf_shape out = *x;
    out.dims[ax] = a->dft_onesided && !irfft ? length / 2 + 1 : length;
    out.dims[x->ndim - 1] = irfft ? 1 : 2;
    xf_infer_set(c, 0, &out);
    return XF_OK;
}

/* STFT: signal [batch, length, 1 or 2] (or [batch, length], real, as
 * ONNX Runtime and PyTorch's exporter take it), frame_step, window [W] and
 * frame_length (each optional; frame_length defaults to W, else to the
 * signal's length) give [batch, frames, bins, 2]: frames = 1 + (length -
 * frame_length) / frame_step, bins = frame_length (frame_length / 2 + 1
 * when onesided). */
xf_status xf_infer_stft(xf_infer_ctx *c)
{
    const xf_shape *x = xf_infer_shape(c, 0);
    if (x->ndim != 2 && (x->ndim != 3 || (x->dims[2] != 1 && x->dims[2] != 2)))
        return xf_infer_fail(c, XF_ERR_INVALID, "signal must have shape [batch, length, 1 or 2] or [batch, length], "
                             "got %s", xf_infer_text(x).s);
    const xf_shape *w = xf_infer_has(c, 2) ? xf_infer_shape(c, 2) : NULL;
    if (w && w->ndim != 1)
        return xf_infer_fail(c, XF_ERR_INVALID, "window must be 1-D, got %s", xf_infer_text(w).s);
    int64_t step = 0, frame = w ? w->dims[0] : x->dims[1];
    bool known = true;
    xf_status st = read_scalar(c, 1, "frame_step", &step, &known);
    if (st == XF_OK && known && xf_infer_has(c, 3))
        st = read_scalar(c, 3, "frame_length", &frame, &known);
    if (st != XF_OK || !known)
        return st != XF_OK ? st : xf_infer_unknown(c);
    if (step < 1)
        return xf_infer_fail(c, XF_ERR_INVALID, "frame_step %" PRId64 " is not positive", step);
    if (w && w->dims[0] != frame)
        return xf_infer_fail(c, XF_ERR_INVALID, "the window has %" PRId64 " samples but frame_length is %" PRId64,
                             w->dims[0], frame);
    if (frame < 1 || frame > x->dims[1])
        return xf_infer_fail(c, XF_ERR_INVALID, "frame_length %" PRId64 " must be 1 to the signal's length %" PRId64,
                             frame, x->dims[1]);
    xf_shape out = {.ndim = 4, .dims = {x->dims[0], 1 + (x->dims[1] - frame) / step,
                                        c->node->attrs.dft_onesided ? frame / 2 + 1 : frame, 2}};
    xf_infer_set(c, 0, &out);
    return XF_OK;
}

/* HannWindow, HammingWindow, BlackmanWindow: [size]. */
xf_status xf_infer_window(xf_infer_ctx *c)
{
    int64_t size = 0;
    bool known = true;
    xf_status st = read_scalar(c, 0, "size", &size, &known);
    if (st != XF_OK || !known)
        return st != XF_OK ? st : xf_infer_unknown(c);
    if (size < 0)
        return xf_infer_fail(c, XF_ERR_INVALID, "size %" PRId64 " is negative", size);
    xf_shape out = {.ndim = 1, .dims = {size}};
    xf_infer_set(c, 0, &out);
    return XF_OK;
}

/* MelWeightMatrix: num_mel_bins, dft_length and sample_rate are one
 * integer type (int32 or int64), lower_edge_hertz and upper_edge_hertz
 * one floating-point type; the output is output_datatype's (float). */
xf_status xf_infer_mel_dtype(xf_infer_ctx *c, xf_dtype *out)
{
    for (int i = 0; i < 5; i++) {
        xf_dtype d = xf_infer_dtype(c, i), first = xf_infer_dtype(c, i < 3 ? 0 : 3);
        bool fits = i < 3 ? d == XF_DT_INT32 || d == XF_DT_INT64 : xf_dtype_is_float(d);
        if (d != XF_DT_UNDEFINED && !fits)
            return xf_infer_fail(c, XF_ERR_INVALID, "input %d must be %s, got %s", i,
                                 i < 3 ? "int32 or int64" : "a floating-point tensor", xf_dtype_name(d));
        if (d != XF_DT_UNDEFINED && first != XF_DT_UNDEFINED && d != first)
            return xf_infer_fail(c, XF_ERR_INVALID, "input %d is %s but input %d is %s", i, xf_dtype_name(d),
                                 i < 3 ? 0 : 3, xf_dtype_name(first));
    }
    *out = c->node->attrs.output_dtype != XF_DT_UNDEFINED ? c->node->attrs.output_dtype : XF_DT_FLOAT;
    return XF_OK;
}

/* MelWeightMatrix: [dft_length / 2 + 1, num_mel_bins]. */
xf_status xf_infer_mel_weight_matrix(xf_infer_ctx *c)
{
    int64_t bins = 0, length = 0;
    bool known = true;
    xf_status st = read_scalar(c, 0, "num_mel_bins", &bins, &known);
    if (st == XF_OK && known)
        st = read_scalar(c, 1, "dft_length", &length, &known);
    for (int i = 2; i < 5 && st == XF_OK; i++)
        if (!xf_infer_scalar_like(xf_infer_shape(c, i)))
            st = xf_infer_fail(c, XF_ERR_INVALID, "input %d must be a scalar, got shape %s", i,
                               xf_infer_text(xf_infer_shape(c, i)).s);
    if (st != XF_OK || !known)
        return st != XF_OK ? st : xf_infer_unknown(c);
    if (bins < 1 || length < 1)
        return xf_infer_fail(c, XF_ERR_INVALID, "num_mel_bins %" PRId64 " and dft_length %" PRId64
                             " must be positive", bins, length);
    xf_shape out = {.ndim = 2, .dims = {length / 2 + 1, bins}};
    xf_infer_set(c, 0, &out);
    return XF_OK;
}
