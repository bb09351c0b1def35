/* Shape and dtype rules of TensorScatter (opset 24), BitCast (26) and
 * SwiGLU (28). */
#include "shape_infer_impl.h"

#include <inttypes.h>

/* SwiGLU: A and B of one float type; TensorScatter: update of
 * past_cache's type, write_indices int64; BitCast: `to` any type but
 * string of the input's width in bits.  *out gets the output's type. */
xf_status xf_infer_opset28_dtype(xf_infer_ctx *c, xf_dtype *out)
{
    const xf_node *n = c->node;
    xf_dtype x = xf_infer_dtype(c, 0), y = n->n_inputs > 1 ? xf_infer_dtype(c, 1) : XF_DT_UNDEFINED;
    *out = x != XF_DT_UNDEFINED ? x : y;
    if (n->op == XF_OP_BIT_CAST) {
        xf_dtype to = n->attrs.to;
        if (to <= XF_DT_UNDEFINED || to >= XF_DT_COUNT_ || to == XF_DT_STRING)
            return xf_infer_fail(c, XF_ERR_INVALID, "target type %d is not a non-string tensor type", (int)to);
        *out = to;
        if (x == XF_DT_STRING)
            return xf_infer_fail(c, XF_ERR_INVALID, "takes no strings");
        if (x != XF_DT_UNDEFINED && xf_dtype_bits(x) != xf_dtype_bits(to))
            return xf_infer_fail(c, XF_ERR_INVALID, "%s has %d bits but %s has %d; BitCast keeps the width",
                                 xf_dtype_name(x), xf_dtype_bits(x), xf_dtype_name(to), xf_dtype_bits(to));
        return XF_OK;
    }
    if (x != XF_DT_UNDEFINED && y != XF_DT_UNDEFINED && x != y)
        return xf_infer_fail(c, XF_ERR_INVALID, "input 0 is %s but input 1 is %s", xf_dtype_name(x),
                             xf_dtype_name(y));
    if (n->op == XF_OP_SWIGLU && *out != XF_DT_UNDEFINED && !xf_dtype_is_float(*out))
        return xf_infer_fail(c, XF_ERR_INVALID, "A and B must be floating-point tensors, got %s",
                             xf_dtype_name(*out));
    xf_dtype w = n->op == XF_OP_TENSOR_SCATTER ? xf_infer_dtype(c, 2) : XF_DT_UNDEFINED;
    if (w != XF_DT_UNDEFINED && w != XF_DT_INT64)
        return xf_infer_fail(c, XF_ERR_INVALID, "write_indices must be int64, got %s", xf_dtype_name(w));
    return XF_OK;
}

/* SwiGLU: A and B of one shape (it does not broadcast), Y the same. */
xf_status xf_infer_swiglu(xf_infer_ctx *c)
{
    const xf_shape *a = xf_infer_shape(c, 0), *b = xf_infer_shape(c, 1);
    if (!xf_shape_equal(a, b))
        return xf_infer_fail(c, XF_ERR_INVALID, "A %s and B %s differ in shape (SwiGLU does not broadcast)",
                             xf_infer_text(a).s, xf_infer_text(b).s);
    xf_infer_set(c, 0, a);
    return XF_OK;
}

/* TensorScatter: past_cache (B, ..., max_sequence_length, ...) with the
 * sequence on axis (not 0, the batch), update the same but for a
 * sequence_length no longer on axis, write_indices (B); present_cache is
 * past_cache's shape.  In linear mode known write indices must keep the
 * update inside the axis; in circular mode any index wraps around it. */
xf_status xf_infer_tensor_scatter(xf_infer_ctx *c)
{
    const xf_shape *past = xf_infer_shape(c, 0), *upd = xf_infer_shape(c, 1);
    int axis;
    xf_status st = xf_infer_axis(c, "axis", c->node->attrs.axis, past->ndim, false, &axis);
    if (st != XF_OK)
        return st;
    if (axis == 0)
        return xf_infer_fail(c, XF_ERR_INVALID, "axis %" PRId64 " is the batch dimension of past_cache %s",
                             c->node->attrs.axis, xf_infer_text(past).s);
    bool fits = upd->ndim == past->ndim;
    for (int d = 0; fits && d < past->ndim; d++)
        fits = d == axis ? upd->dims[d] <= past->dims[d] : upd->dims[d] == past->dims[d];
    if (!fits)
        return xf_infer_fail(c, XF_ERR_INVALID, "update %s must be past_cache %s but for at most as many rows on "
                             "axis %d", xf_infer_text(upd).s, xf_infer_text(past).s, axis);
    if (xf_infer_has(c, 2)) {
        const xf_shape *w = xf_infer_shape(c, 2);
        if (w->ndim != 1 || w->dims[0] != past->dims[0])
            return xf_infer_fail(c, XF_ERR_INVALID, "write_indices %s must be (%" PRId64 "), one per batch entry",
                                 xf_infer_text(w).s, past->dims[0]);
        const xf_tensor *t = xf_infer_value(c, 2);
        int64_t rows = past->dims[axis], len = upd->dims[axis];
        if (t && t->dtype == XF_DT_INT64 && c->node->attrs.pad_mode != XF_PAD_WRAP &&
            t->nbytes >= (size_t)w->dims[0] * sizeof(int64_t))
            for (int64_t b = 0; b < w->dims[0]; b++) {
                int64_t at = xf_tensor_get_i64(t, b);
                if (at < 0 || at > rows - len)
                    return xf_infer_fail(c, XF_ERR_INVALID, "write index %" PRId64 " of batch entry %" PRId64
                                         " puts %" PRId64 " rows outside the %" PRId64 " of axis %d (mode linear)",
                                         at, b, len, rows, axis);
            }
    }
    xf_infer_set(c, 0, past);
    return XF_OK;
}
