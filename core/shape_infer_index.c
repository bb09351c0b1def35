/* The shape rules of the movement and indexing ops: Trilu, Tile,
 * DepthToSpace, SpaceToDepth, EyeLike, ReverseSequence, OneHot and
 * Compress (see shape_infer.c for the driver). */
#include "shape_infer_impl.h"

#include <inttypes.h>
#include <math.h>

/* Trilu: the input's shape (at least 2-D); k, when given, a scalar. */
xf_status xf_infer_trilu(xf_infer_ctx *c)
{
    const xf_shape *x = xf_infer_shape(c, 0);
    if (x->ndim < 2)
        return xf_infer_fail(c, XF_ERR_INVALID, "input must have rank 2 or more, got %s", xf_infer_text(x).s);
    if (xf_infer_has(c, 1) && !xf_infer_scalar_like(xf_infer_shape(c, 1)))
        return xf_infer_fail(c, XF_ERR_INVALID, "k must be a scalar, got shape %s",
                             xf_infer_text(xf_infer_shape(c, 1)).s);
    xf_infer_set(c, 0, x);
    return XF_OK;
}

/* Tile: each dim times its entry of repeats (one per dim, none negative). */
xf_status xf_infer_tile(xf_infer_ctx *c)
{
    const xf_shape *x = xf_infer_shape(c, 0), *rs = xf_infer_shape(c, 1);
    if (rs->ndim != 1 || rs->dims[0] != x->ndim)
        return xf_infer_fail(c, XF_ERR_INVALID, "repeats must be a 1-D tensor of %d entries (the input's rank), got "
                             "shape %s", x->ndim, xf_infer_text(rs).s);
    int64_t repeats[XF_MAX_DIMS];
    int n;
    xf_status st = xf_infer_read_ints(c, 1, "repeats", repeats, XF_MAX_DIMS, &n);
    if (st != XF_OK || n < 0)
        return st != XF_OK ? st : xf_infer_unknown(c);
    xf_shape out = {.ndim = x->ndim};
    for (int d = 0; d < x->ndim; d++) {
        if (repeats[d] < 0)
            return xf_infer_fail(c, XF_ERR_INVALID, "repeats %s has a negative entry",
                                 xf_infer_ints_text(repeats, n).s);
        if (__builtin_mul_overflow(x->dims[d], repeats[d], &out.dims[d]))
            return xf_infer_fail(c, XF_ERR_LIMIT, "dim %d (%" PRId64 ") repeated %" PRId64 " times overflows", d,
                                 x->dims[d], repeats[d]);
    }
    xf_infer_set(c, 0, &out);
    return XF_OK;
}

/* DepthToSpace moves blocksize^2 channels into blocksize x blocksize
 * pixels; SpaceToDepth the other way. */
xf_status xf_infer_depth_space(xf_infer_ctx *c)
{
    const xf_shape *x = xf_infer_shape(c, 0);
    int64_t b = c->node->attrs.block_size, bb;
    if (b < 1 || __builtin_mul_overflow(b, b, &bb))
        return xf_infer_fail(c, XF_ERR_INVALID, "blocksize %" PRId64 " is not a positive block size (the attribute "
                             "is required)", b);
    if (x->ndim != 4)
        return xf_infer_fail(c, XF_ERR_INVALID, "input must have shape [N, C, H, W], got %s", xf_infer_text(x).s);
    xf_shape out = *x;
    if (c->node->op == XF_OP_DEPTH_TO_SPACE) {
        if (x->dims[1] % bb)
            return xf_infer_fail(c, XF_ERR_INVALID, "%" PRId64 " channels are not a multiple of blocksize^2 = %" PRId64,
                                 x->dims[1], bb);
        out.dims[1] = x->dims[1] / bb;
        if (__builtin_mul_overflow(x->dims[2], b, &out.dims[2]) || __builtin_mul_overflow(x->dims[3], b, &out.dims[3]))
            return xf_infer_fail(c, XF_ERR_LIMIT, "the output's height or width overflows");
    } else {
        if (x->dims[2] % b || x->dims[3] % b)
            return xf_infer_fail(c, XF_ERR_INVALID, "height %" PRId64 " and width %" PRId64 " must be multiples of "
                                 "blocksize %" PRId64, x->dims[2], x->dims[3], b);
        if (__builtin_mul_overflow(x->dims[1], bb, &out.dims[1]))
            return xf_infer_fail(c, XF_ERR_LIMIT, "the output's channel count overflows");
        out.dims[2] = x->dims[2] / b;
        out.dims[3] = x->dims[3] / b;
    }
    xf_infer_set(c, 0, &out);
    return XF_OK;
}

/* EyeLike: the shape of its 2-D input. */
xf_status xf_infer_eye_like(xf_infer_ctx *c)
{
    const xf_shape *x = xf_infer_shape(c, 0);
    if (x->ndim != 2)
        return xf_infer_fail(c, XF_ERR_INVALID, "input must be 2-D, got %s", xf_infer_text(x).s);
    xf_infer_set(c, 0, x);
    return XF_OK;
}

/* ReverseSequence: the input's shape; batch_axis and time_axis are 0 and
 * 1 in some order, sequence_lens has one entry per batch entry. */
xf_status xf_infer_reverse_sequence(xf_infer_ctx *c)
{
    const xf_attrs *a = &c->node->attrs;
    const xf_shape *x = xf_infer_shape(c, 0), *lens = xf_infer_shape(c, 1);
    int64_t batch = a->axes[0], time = a->axes[1];
    if (a->n_axes != 2 || batch < 0 || batch > 1 || time < 0 || time > 1 || batch == time)
        return xf_infer_fail(c, XF_ERR_INVALID, "batch_axis %" PRId64 " and time_axis %" PRId64 " must be 0 and 1 "
                             "in some order", batch, time);
    if (x->ndim < 2)
        return xf_infer_fail(c, XF_ERR_INVALID, "input must have rank 2 or more, got %s", xf_infer_text(x).s);
    if (lens->ndim != 1 || lens->dims[0] != x->dims[batch])
        return xf_infer_fail(c, XF_ERR_INVALID, "sequence_lens must have shape [%" PRId64 "] (one per batch entry), "
                             "got %s", x->dims[batch], xf_infer_text(lens).s);
    xf_infer_set(c, 0, x);
    return XF_OK;
}

/* OneHot: the indices' shape with depth (a scalar input, known here or not)
 * inserted at axis; values is [off_value, on_value]. */
xf_status xf_infer_one_hot(xf_infer_ctx *c)
{
    const xf_shape *idx = xf_infer_shape(c, 0), *depth = xf_infer_shape(c, 1), *values = xf_infer_shape(c, 2);
    if (!xf_infer_scalar_like(depth))
        return xf_infer_fail(c, XF_ERR_INVALID, "depth must be a scalar, got shape %s", xf_infer_text(depth).s);
    if (values->ndim != 1 || values->dims[0] != 2)
        return xf_infer_fail(c, XF_ERR_INVALID, "values must be [off_value, on_value] (shape 2), got shape %s",
                             xf_infer_text(values).s);
    if (idx->ndim >= XF_MAX_DIMS)
        return xf_infer_fail(c, XF_ERR_UNSUPPORTED, "the output would have rank %d; xflow handles at most %d",
                             idx->ndim + 1, XF_MAX_DIMS);
    int axis;
    xf_status st = xf_infer_axis(c, "axis", c->node->attrs.axis, idx->ndim + 1, false, &axis);
    const xf_tensor *t = xf_infer_value(c, 1);
    if (st != XF_OK || !t)
        return st != XF_OK ? st : xf_infer_unknown(c);
    double d = t->data && xf_tensor_numel(t) == 1 ? xf_tensor_get_f64(t, 0) : NAN;
    if (!(d >= 0 && d < 0x1p62))
        return xf_infer_fail(c, XF_ERR_INVALID, "depth %g is not a count of classes", d);
    xf_shape out = {.ndim = idx->ndim + 1};
    for (int i = 0, from = 0; i < out.ndim; i++)
        out.dims[i] = i == axis ? (int64_t)d : idx->dims[from++];
    xf_infer_set(c, 0, &out);
    return XF_OK;
}

/* Compress: the slices along axis (or the elements of the flattened
 * input) whose condition entry is true, counted where the condition's
 * value is known.  A condition shorter than the axis leaves the rest out;
 * one longer may only be false beyond it. */
xf_status xf_infer_compress(xf_infer_ctx *c)
{
    const xf_shape *x = xf_infer_shape(c, 0), *cond = xf_infer_shape(c, 1);
    if (cond->ndim != 1)
        return xf_infer_fail(c, XF_ERR_INVALID, "condition must be 1-D, got shape %s", xf_infer_text(cond).s);
    int axis = -1;
    xf_status st =
        c->node->attrs.has_axis ? xf_infer_axis(c, "axis", c->node->attrs.axis, x->ndim, false, &axis) : XF_OK;
    const xf_tensor *t = xf_infer_value(c, 1);
    if (st != XF_OK || !t || (xf_tensor_numel(t) > 0 && !t->data))
        return st != XF_OK ? st : xf_infer_unknown(c);
    int64_t len = axis < 0 ? xf_shape_numel(x) : x->dims[axis], count = 0;
    for (int64_t i = 0; i < xf_tensor_numel(t); i++) {
        if (!xf_tensor_get_i64(t, i))
            continue;
        if (i >= len)
            return xf_infer_fail(c, XF_ERR_INVALID, "condition selects entry %" PRId64 ", beyond the %" PRId64
                                 " the input has%s", i, len, axis < 0 ? " (flattened)" : " along the axis");
        count++;
    }
    xf_shape out = *x;
    if (axis < 0)
        out = (xf_shape){.ndim = 1, .dims = {count}};
    else
        out.dims[axis] = count;
    xf_infer_set(c, 0, &out);
    return XF_OK;
}
