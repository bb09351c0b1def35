/* Shape rules of the neural-network ops: convolution, pooling and other
 * reductions, normalization, softmax, matrix products and recurrent
 * layers (see shape_infer.c for the driver and the rest). */
#include "shape_infer_impl.h"

#include <inttypes.h>

/* Kernel sizes, strides, dilations and pads beyond this are malformed
 * attributes, rejected before any arithmetic can overflow. */
#define WINDOW_LIMIT ((int64_t)1 << 31)

/* Output length along spatial axis i (of nsp) of a sliding window: Conv
 * and the pools.  With ceil_mode the last window must still start inside
 * the input or its left padding (ONNX's and PyTorch's rule). */
static xf_status window_length(const xf_infer_ctx *c, int i, int nsp, int64_t in, int64_t kernel,
                               bool ceil_mode, int64_t *out)
{
    const xf_attrs *a = &c->node->attrs;
    int64_t stride = a->strides[i], dil = a->dilations[i];
    int64_t pad_begin = a->pads[i], pad_end = a->pads[nsp + i];
    if (kernel < 1 || kernel > WINDOW_LIMIT || stride < 1 || stride > WINDOW_LIMIT || dil < 1 ||
        dil > WINDOW_LIMIT)
        return xf_infer_fail(c, XF_ERR_INVALID,
                             "spatial axis %d: kernel %" PRId64 ", stride %" PRId64
                             " and dilation %" PRId64 " must be positive",
                             i, kernel, stride, dil);
    int64_t extent = (kernel - 1) * dil + 1;
    if (in < 0) { /* known only at run time */
        *out = -1;
        return XF_OK;
    }
    switch (a->auto_pad) {
    case XF_AUTO_PAD_VALID:
        if (in < extent)
            return xf_infer_fail(c, XF_ERR_INVALID,
                                 "spatial axis %d: input size %" PRId64
                                 " is smaller than the kernel's extent %" PRId64,
                                 i, in, extent);
        *out = (in - extent) / stride + 1;
        return XF_OK;
    case XF_AUTO_PAD_SAME_UPPER:
    case XF_AUTO_PAD_SAME_LOWER:
        *out = (in + stride - 1) / stride;
        return XF_OK;
    case XF_AUTO_PAD_NOTSET:
        break;
    default:
        return xf_infer_fail(c, XF_ERR_INVALID, "auto_pad %d is not a padding mode",
                             (int)a->auto_pad);
    }
    if (pad_begin < 0 || pad_end < 0 || pad_begin > WINDOW_LIMIT || pad_end > WINDOW_LIMIT)
        return xf_infer_fail(c, XF_ERR_INVALID,
                             "spatial axis %d: pads %" PRId64 " and %" PRId64 " are out of range",
                             i, pad_begin, pad_end);
    int64_t span = in + pad_begin + pad_end - extent;
    if (span < 0)
        return xf_infer_fail(c, XF_ERR_INVALID,
                             "spatial axis %d: padded input size %" PRId64
                             " is smaller than the kernel's extent %" PRId64,
                             i, in + pad_begin + pad_end, extent);
    *out = (ceil_mode ? span + stride - 1 : span) / stride + 1;
    if (ceil_mode && (*out - 1) * stride >= in + pad_begin)
        (*out)--;
    return XF_OK;
}

/* Rank checks shared by Conv and the pools: N x C x spatial... */
static xf_status spatial_rank(const xf_infer_ctx *c, const xf_shape *x, int *nsp)
{
    *nsp = x->ndim - 2;
    if (*nsp < 1)
        return xf_infer_fail(c, XF_ERR_INVALID, "input shape %s has no spatial dimensions",
                             xf_infer_text(x).s);
    if (*nsp > XF_MAX_SPATIAL)
        return xf_infer_fail(c, XF_ERR_UNSUPPORTED,
                             "input shape %s has %d spatial dimensions; xflow handles at most %d",
                             xf_infer_text(x).s, *nsp, XF_MAX_SPATIAL);
    int given = c->node->attrs.n_spatial;
    if (given != 0 && given != *nsp)
        return xf_infer_fail(c, XF_ERR_INVALID,
                             "attributes describe %d spatial dimensions but the input %s has %d",
                             given, xf_infer_text(x).s, *nsp);
    return XF_OK;
}

xf_status xf_infer_conv_operands(xf_infer_ctx *c, int xi, int wi, int bi)
{
    const xf_attrs *a = &c->node->attrs;
    const xf_shape *x = xf_infer_shape(c, xi), *w = xf_infer_shape(c, wi);
    int nsp;
    xf_status st = spatial_rank(c, x, &nsp);
    if (st != XF_OK)
        return st;
    if (w->ndim != x->ndim)
        return xf_infer_fail(c, XF_ERR_INVALID, "weight shape %s does not fit input shape %s",
                             xf_infer_text(w).s, xf_infer_text(x).s);
    if (a->group < 1)
        return xf_infer_fail(c, XF_ERR_INVALID, "group %" PRId64 " must be positive", a->group);
    int64_t m = w->dims[0];
    if (x->dims[1] >= 0 && (x->dims[1] % a->group != 0 || x->dims[1] / a->group != w->dims[1]))
        return xf_infer_fail(c, XF_ERR_INVALID,
                             "input channels %" PRId64 " do not match weight's %" PRId64
                             " x group %" PRId64 " (input %s, weight %s)",
                             x->dims[1], w->dims[1], a->group, xf_infer_text(x).s,
                             xf_infer_text(w).s);
    if (m % a->group != 0)
        return xf_infer_fail(c, XF_ERR_INVALID,
                             "weight's %" PRId64 " output channels are not divisible by group %" PRId64,
                             m, a->group);
    if (bi >= 0 && xf_infer_has(c, bi)) {
        const xf_shape *b = xf_infer_shape(c, bi);
        if (b->ndim != 1 || b->dims[0] != m)
            return xf_infer_fail(c, XF_ERR_INVALID,
                                 "bias shape %s does not match %" PRId64 " output channels",
                                 xf_infer_text(b).s, m);
    }
    xf_shape out = {.ndim = x->ndim, .dims = {x->dims[0], m}};
    for (int i = 0; i < nsp; i++) {
        int64_t k = w->dims[2 + i];
        /* kernel_shape is optional; when given it must agree with the weight. */
        if (a->n_spatial && a->kernel[i] != 0 && a->kernel[i] != k)
            return xf_infer_fail(c, XF_ERR_INVALID,
                                 "kernel_shape %" PRId64 " on spatial axis %d does not match "
                                 "weight shape %s",
                                 a->kernel[i], i, xf_infer_text(w).s);
        st = window_length(c, i, nsp, x->dims[2 + i], k, false, &out.dims[2 + i]);
        if (st != XF_OK)
            return st;
    }
    xf_infer_set(c, 0, &out);
    return XF_OK;
}

xf_status xf_infer_conv(xf_infer_ctx *c) { return xf_infer_conv_operands(c, 0, 1, 2); }

/* Integer division rounding toward minus infinity (the pads ONNX splits
 * are Python's floor divisions). */
static int64_t floor_half(int64_t v) { return v >= 0 ? v / 2 : -((1 - v) / 2); }

bool xf_conv_transpose_axis(const xf_attrs *a, int ns, int i, int64_t in, int64_t k, int64_t *out, int64_t *pad_begin,
                            int64_t *pad_end, char *why, size_t why_len)
{
    int64_t stride = a->strides[i], dil = a->dilations[i], extra = a->output_padding[i];
    if (k < 1 || k > WINDOW_LIMIT || stride < 1 || stride > WINDOW_LIMIT || dil < 1 || dil > WINDOW_LIMIT ||
        extra < 0 || extra > WINDOW_LIMIT || in < 1 || in > WINDOW_LIMIT)
        return xf_infer_refuse(why, why_len,
                               "spatial axis %d: input extent %" PRId64 ", kernel %" PRId64 ", stride %" PRId64
                               " and dilation %" PRId64 " must be positive, output_padding %" PRId64 " not negative",
                               i, in, k, stride, dil, extra);
    if ((double)stride * (double)(in - 1) + (double)(k - 1) * (double)dil > (double)WINDOW_LIMIT * WINDOW_LIMIT)
        return xf_infer_refuse(why, why_len, "spatial axis %d: the transposed convolution's extent is out of range", i);
    int64_t full = stride * (in - 1) + extra + (k - 1) * dil + 1;
    bool split = a->has_output_shape || a->auto_pad == XF_AUTO_PAD_SAME_UPPER || a->auto_pad == XF_AUTO_PAD_SAME_LOWER;
    if (a->has_output_shape)
        *out = a->output_shape[i];
    else if (split)
        *out = in * stride;
    else if (a->auto_pad == XF_AUTO_PAD_VALID)
        *out = full;
    else if (a->auto_pad != XF_AUTO_PAD_NOTSET)
        return xf_infer_refuse(why, why_len, "auto_pad %d is not a padding mode", (int)a->auto_pad);
    else
        *out = full - a->pads[i] - a->pads[ns + i];
    *pad_begin = *pad_end = 0;
    if (a->auto_pad == XF_AUTO_PAD_NOTSET && !a->has_output_shape) {
        *pad_begin = a->pads[i];
        *pad_end = a->pads[ns + i];
        if (*pad_begin < 0 || *pad_end < 0 || *pad_begin > WINDOW_LIMIT || *pad_end > WINDOW_LIMIT)
            return xf_infer_refuse(why, why_len, "spatial axis %d: pads %" PRId64 " and %" PRId64 " are out of range",
                                   i, *pad_begin, *pad_end);
    } else if (split) {
        if (*out < 0 || *out > WINDOW_LIMIT)
            return xf_infer_refuse(why, why_len, "spatial axis %d: output_shape %" PRId64 " is out of range", i, *out);
        int64_t total = full - *out;
        if (total < 0)
            *pad_end = total;
        else if (a->auto_pad == XF_AUTO_PAD_SAME_UPPER)
            *pad_end = total - (*pad_begin = floor_half(total));
        else
            *pad_begin = total - (*pad_end = floor_half(total));
    }
    if (*out < 1)
        return xf_infer_refuse(why, why_len,
                               "spatial axis %d: pads %" PRId64 " and %" PRId64 " leave nothing of the %" PRId64
                               " positions of the transposed convolution",
                               i, *pad_begin, *pad_end, full);
    return true;
}

/* ConvTranspose: X (N, C, spatial...), W (C, M / group, kernel...) and an
 * optional bias (M) give (N, M, output extents). */
xf_status xf_infer_conv_transpose(xf_infer_ctx *c)
{
    const xf_attrs *a = &c->node->attrs;
    const xf_shape *x = xf_infer_shape(c, 0), *w = xf_infer_shape(c, 1);
    int nsp;
    xf_status st = spatial_rank(c, x, &nsp);
    if (st != XF_OK)
        return st;
    if (w->ndim != x->ndim)
        return xf_infer_fail(c, XF_ERR_INVALID, "weight shape %s does not fit input shape %s", xf_infer_text(w).s,
                             xf_infer_text(x).s);
    if (a->group < 1 || (x->dims[1] >= 0 && (x->dims[1] % a->group != 0 || w->dims[0] != x->dims[1])))
        return xf_infer_fail(c, XF_ERR_INVALID,
                             "input channels %" PRId64
                             " must equal the weight's first dimension and divide by group %" PRId64
                             " (input %s, weight %s)",
                             x->dims[1], a->group, xf_infer_text(x).s, xf_infer_text(w).s);
    int64_t m = w->dims[1] * a->group;
    if (xf_infer_has(c, 2)) {
        const xf_shape *b = xf_infer_shape(c, 2);
        if (b->ndim != 1 || b->dims[0] != m)
            return xf_infer_fail(c, XF_ERR_INVALID, "bias shape %s does not match %" PRId64 " output channels",
                                 xf_infer_text(b).s, m);
    }
    xf_shape out = {.ndim = x->ndim, .dims = {x->dims[0], m}};
    for (int i = 0; i < nsp; i++) {
        int64_t k = w->dims[2 + i], begin, end;
        char why[300];
        if (a->n_spatial && a->kernel[i] != 0 && a->kernel[i] != k)
            return xf_infer_fail(c, XF_ERR_INVALID,
                                 "kernel_shape %" PRId64 " on spatial axis %d does not match weight shape %s",
                                 a->kernel[i], i, xf_infer_text(w).s);
        if (x->dims[2 + i] < 0) /* known only at run time */
            out.dims[2 + i] = -1;
        else if (!xf_conv_transpose_axis(a, nsp, i, x->dims[2 + i], k, &out.dims[2 + i], &begin, &end, why,
                                         sizeof why))
            return xf_infer_fail(c, XF_ERR_INVALID, "%s", why);
    }
    xf_infer_set(c, 0, &out);
    return XF_OK;
}

/* spatial_rank for the pools and MaxUnpool, whose kernel_shape is required. */
static xf_status pool_rank(const xf_infer_ctx *c, const xf_shape *x, int *nsp)
{
    xf_status st = spatial_rank(c, x, nsp);
    if (st == XF_OK && c->node->attrs.n_spatial == 0)
        return xf_infer_fail(c, XF_ERR_INVALID, "kernel_shape is required");
    return st;
}

/* LpPool's and GlobalLpPool's p (the other pools pass); beyond
 * XF_LP_POOL_MAX_P every |x|^p of a float overflows or vanishes. */
static xf_status lp_order(const xf_infer_ctx *c)
{
    xf_op op = c->node->op;
    int p = c->node->attrs.lp_p;
    if ((op == XF_OP_LP_POOL || op == XF_OP_GLOBAL_LP_POOL) && (p < 1 || p > XF_LP_POOL_MAX_P))
        return xf_infer_fail(c, XF_ERR_INVALID, "p %d must be 1 to %d", p, XF_LP_POOL_MAX_P);
    return XF_OK;
}

xf_status xf_infer_pool(xf_infer_ctx *c)
{
    const xf_attrs *a = &c->node->attrs;
    const xf_shape *x = xf_infer_shape(c, 0);
    int nsp;
    xf_status st = lp_order(c);
    if (st == XF_OK)
        st = pool_rank(c, x, &nsp);
    if (st != XF_OK)
        return st;
    if (a->storage_order != 0 && a->storage_order != 1)
        return xf_infer_fail(c, XF_ERR_INVALID, "storage_order %d must be 0 or 1", a->storage_order);
    xf_shape out = *x;
    for (int i = 0; i < nsp && st == XF_OK; i++)
        st = window_length(c, i, nsp, x->dims[2 + i], a->kernel[i], a->ceil_mode != 0,
                           &out.dims[2 + i]);
    if (st == XF_OK) {
        xf_infer_set(c, 0, &out);
        xf_infer_set(c, 1, &out); /* MaxPool's Indices */
    }
    return st;
}

/* MaxUnpool: output_shape's value when given, else per spatial axis
 * (in - 1) * stride + kernel - pad_begin - pad_end.  I has X's shape. */
xf_status xf_infer_max_unpool(xf_infer_ctx *c)
{
    const xf_attrs *a = &c->node->attrs;
    const xf_shape *x = xf_infer_shape(c, 0), *idx = xf_infer_shape(c, 1);
    int nsp;
    xf_status st = pool_rank(c, x, &nsp);
    if (st != XF_OK)
        return st;
    if (!xf_shapes_may_equal(x, idx))
        return xf_infer_fail(c, XF_ERR_INVALID, "I has shape %s, X %s: they must be equal", xf_infer_text(idx).s,
                             xf_infer_text(x).s);
    xf_shape out = *x;
    for (int i = 0; i < nsp; i++) {
        int64_t k = a->kernel[i], s = a->strides[i], pb = a->pads[i], pe = a->pads[nsp + i];
        if (k < 1 || k > WINDOW_LIMIT || s < 1 || s > WINDOW_LIMIT || pb < 0 || pe < 0 || pb > WINDOW_LIMIT ||
            pe > WINDOW_LIMIT)
            return xf_infer_fail(c, XF_ERR_INVALID,
                                 "spatial axis %d: kernel %" PRId64 " and stride %" PRId64
                                 " must be positive, pads %" PRId64 " and %" PRId64 " not negative",
                                 i, k, s, pb, pe);
        out.dims[2 + i] = x->dims[2 + i] > 0 ? (x->dims[2 + i] - 1) * s + k - pb - pe : x->dims[2 + i] < 0 ? -1 : 0;
        if (x->dims[2 + i] < 0) /* known only at run time */
            continue;
        if (out.dims[2 + i] < 0)
            return xf_infer_fail(c, XF_ERR_INVALID, "spatial axis %d: pads %" PRId64 " and %" PRId64
                                 " leave a negative output size", i, pb, pe);
    }
    if (!xf_infer_has(c, 2)) {
        xf_infer_set(c, 0, &out);
        return XF_OK;
    }
    int n;
    st = xf_infer_read_ints(c, 2, "output_shape", out.dims, XF_MAX_DIMS, &n);
    if (st != XF_OK || n < 0)
        return st != XF_OK ? st : xf_infer_unknown(c);
    if (n != x->ndim)
        return xf_infer_fail(c, XF_ERR_INVALID, "output_shape %s has %d entries; X has rank %d",
                             xf_infer_ints_text(out.dims, n).s, n, x->ndim);
    for (int d = 0; d < n; d++)
        if (out.dims[d] < 0)
            return xf_infer_fail(c, XF_ERR_INVALID, "output_shape %s has a negative dimension",
                                 xf_infer_ints_text(out.dims, n).s);
    xf_infer_set(c, 0, &out);
    return XF_OK;
}

xf_status xf_infer_global_pool(xf_infer_ctx *c)
{
    const xf_shape *x = xf_infer_shape(c, 0);
    xf_status st = lp_order(c);
    if (st != XF_OK)
        return st;
    if (x->ndim < 2)
        return xf_infer_fail(c, XF_ERR_INVALID, "input shape %s has no channel dimension",
                             xf_infer_text(x).s);
    xf_shape out = *x;
    for (int d = 2; d < out.ndim; d++)
        out.dims[d] = 1;
    xf_infer_set(c, 0, &out);
    return XF_OK;
}

xf_status xf_infer_batch_norm(xf_infer_ctx *c)
{
    static const char *const params[] = {"", "scale", "B", "mean", "var"};
    const xf_shape *x = xf_infer_shape(c, 0);
    if (x->ndim < 2)
        return xf_infer_fail(c, XF_ERR_INVALID, "input shape %s has no channel dimension",
                             xf_infer_text(x).s);
    for (int i = 1; i < 5; i++) {
        const xf_shape *p = xf_infer_shape(c, i);
        if (p->ndim != 1 || !xf_dims_may_equal(p->dims[0], x->dims[1]))
            return xf_infer_fail(c, XF_ERR_INVALID,
                                 "%s shape %s does not match the %" PRId64 " channels of input %s",
                                 params[i], xf_infer_text(p).s, x->dims[1], xf_infer_text(x).s);
    }
    xf_infer_set(c, 0, x);
    /* training mode's running mean and variance: per channel */
    for (int k = 1; k < c->node->n_outputs; k++)
        xf_infer_set(c, k, xf_infer_shape(c, 2 + k));
    return XF_OK;
}

xf_status xf_infer_layer_norm(xf_infer_ctx *c)
{
    static const char *const params[] = {"", "scale", "B"};
    const xf_shape *x = xf_infer_shape(c, 0);
    int axis;
    xf_status st = xf_infer_axis(c, "axis", c->node->attrs.axis, x->ndim, false, &axis);
    if (st != XF_OK)
        return st;
    xf_shape normalized = xf_shape_make(x->ndim - axis, x->dims + axis);
    for (int i = 1; i < 3; i++)
        if (xf_infer_has(c, i) && !xf_infer_broadcasts_to(xf_infer_shape(c, i), &normalized))
            return xf_infer_fail(c, XF_ERR_INVALID,
                                 "%s shape %s does not broadcast to the normalized shape %s",
                                 params[i], xf_infer_text(xf_infer_shape(c, i)).s,
                                 xf_infer_text(&normalized).s);
    if (c->node->n_outputs > 3)
        return xf_infer_fail(c, XF_ERR_INVALID, "has %d outputs; LayerNormalization has at most 3 (Y, Mean, "
                             "InvStdDev)", c->node->n_outputs);
    xf_infer_set(c, 0, x);
    /* Mean and InvStdDev: X's rank, X's dims before axis and 1 from axis on. */
    xf_shape stats = *x;
    for (int d = axis; d < x->ndim; d++)
        stats.dims[d] = 1;
    for (int k = 1; k < c->node->n_outputs; k++)
        xf_infer_set(c, k, &stats);
    return XF_OK;
}

/* Reduce*: axes from the input or the attribute; none means all, or no
 * reduction at all with noop_with_empty_axes. */
xf_status xf_infer_reduce(xf_infer_ctx *c)
{
    const xf_attrs *a = &c->node->attrs;
    const xf_shape *in = xf_infer_shape(c, 0);
    int64_t axes[XF_MAX_DIMS];
    int n;
    bool given, reduce[XF_MAX_DIMS] = {false};
    xf_status st = xf_infer_read_axes(c, axes, &n, &given);
    if (st != XF_OK || n < 0)
        return st != XF_OK ? st : xf_infer_unknown(c);
    if (n == 0 && a->noop_with_empty_axes) {
        xf_infer_set(c, 0, in);
        return XF_OK;
    }
    if (n == 0)
        for (int d = 0; d < in->ndim; d++)
            reduce[d] = true;
    st = xf_infer_mark_axes(c, axes, n, in->ndim, false, reduce);
    if (st != XF_OK)
        return st;
    xf_shape out = {.ndim = 0};
    for (int d = 0; d < in->ndim; d++)
        if (!reduce[d] || a->keepdims)
            out.dims[out.ndim++] = reduce[d] ? 1 : in->dims[d];
    xf_infer_set(c, 0, &out);
    return XF_OK;
}

/* Softmax, LogSoftmax and Hardmax: the legacy form (opset < 13) coerces to
 * 2-D at axis, but the shape is the input's in both. */
xf_status xf_infer_softmax(xf_infer_ctx *c)
{
    const xf_shape *x = xf_infer_shape(c, 0);
    int axis;
    xf_status st = xf_infer_axis(c, "axis", c->node->attrs.axis, x->ndim, false, &axis);
    if (st == XF_OK)
        xf_infer_set(c, 0, x);
    return st;
}

/* numpy.matmul: 1-D operands gain (and lose) a unit dimension, batch
 * dimensions broadcast. */
xf_status xf_infer_matmul_operands(xf_infer_ctx *c, int ai, int bi)
{
    return xf_infer_matmul_shapes(c, xf_infer_shape(c, ai), xf_infer_shape(c, bi));
}

xf_status xf_infer_matmul_shapes(xf_infer_ctx *c, const xf_shape *a, const xf_shape *b)
{
    if (a->ndim < 1 || b->ndim < 1)
        return xf_infer_fail(c, XF_ERR_INVALID, "operands %s and %s must have rank 1 or more",
                             xf_infer_text(a).s, xf_infer_text(b).s);
    bool a_vec = a->ndim == 1, b_vec = b->ndim == 1;
    int64_t rows = a_vec ? 1 : a->dims[a->ndim - 2], inner_a = a->dims[a->ndim - 1];
    int64_t inner_b = b_vec ? b->dims[0] : b->dims[b->ndim - 2];
    int64_t cols = b_vec ? 1 : b->dims[b->ndim - 1];
    if (inner_a != inner_b && inner_a >= 0 && inner_b >= 0) /* unknown dims may match */
        return xf_infer_fail(c, XF_ERR_INVALID, "inner dimensions of %s and %s differ (%" PRId64
                             " vs %" PRId64 ")",
                             xf_infer_text(a).s, xf_infer_text(b).s, inner_a, inner_b);
    xf_shape batch_a = xf_shape_make(a_vec ? 0 : a->ndim - 2, a->dims);
    xf_shape batch_b = xf_shape_make(b_vec ? 0 : b->ndim - 2, b->dims);
    xf_shape out;
    xf_status st = xf_infer_broadcast(c, &batch_a, &batch_b, &out);
    if (st != XF_OK)
        return st;
    if (!a_vec)
        out.dims[out.ndim++] = rows;
    if (!b_vec)
        out.dims[out.ndim++] = cols;
    xf_infer_set(c, 0, &out);
    return XF_OK;
}

xf_status xf_infer_matmul(xf_infer_ctx *c) { return xf_infer_matmul_operands(c, 0, 1); }

xf_status xf_infer_gemm(xf_infer_ctx *c)
{
    const xf_attrs *at = &c->node->attrs;
    const xf_shape *a = xf_infer_shape(c, 0), *b = xf_infer_shape(c, 1);
    if (a->ndim != 2 || b->ndim != 2)
        return xf_infer_fail(c, XF_ERR_INVALID, "A %s and B %s must be 2-D", xf_infer_text(a).s,
                             xf_infer_text(b).s);
    int64_t m = a->dims[at->trans_a ? 1 : 0], k_a = a->dims[at->trans_a ? 0 : 1];
    int64_t k_b = b->dims[at->trans_b ? 1 : 0], n = b->dims[at->trans_b ? 0 : 1];
    if (k_a != k_b && k_a >= 0 && k_b >= 0)
        return xf_infer_fail(c, XF_ERR_INVALID,
                             "inner dimensions differ: A %s (transA %d) and B %s (transB %d)",
                             xf_infer_text(a).s, at->trans_a, xf_infer_text(b).s, at->trans_b);
    xf_shape out = {.ndim = 2, .dims = {m, n}};
    if (xf_infer_has(c, 2) && !xf_infer_broadcasts_to(xf_infer_shape(c, 2), &out))
        return xf_infer_fail(c, XF_ERR_INVALID, "C shape %s does not broadcast to %s",
                             xf_infer_text(xf_infer_shape(c, 2)).s, xf_infer_text(&out).s);
    xf_infer_set(c, 0, &out);
    return XF_OK;
}

/* RNN, LSTM and GRU attributes: a direction, layout and clip ONNX
 * defines, and either no activation functions (the defaults) or one per
 * gate function (LSTM f, g, h; GRU f, g; RNN f) and direction. */
static xf_status rnn_attrs_check(const xf_infer_ctx *c, int funcs, int64_t dirs)
{
    const xf_rnn_attrs *r = &c->node->attrs.rnn;
    if ((unsigned)r->direction > 2 || (unsigned)r->layout > 1)
        return xf_infer_fail(c, XF_ERR_INVALID, "direction %d or layout %d is not one ONNX defines", r->direction,
                             r->layout);
    if (r->hidden_size < 0 || (r->has_clip && !(r->clip > 0)))
        return xf_infer_fail(c, XF_ERR_INVALID, "hidden_size %" PRId64 " or clip %g is not positive", r->hidden_size,
                             (double)r->clip);
    if (r->n_acts && r->n_acts != funcs * dirs)
        return xf_infer_fail(c, XF_ERR_INVALID, "has %d activation functions; %s takes %d per direction, %" PRId64
                             " direction(s) here", r->n_acts, xf_op_name(c->node->op), funcs, dirs);
    for (int i = 0; i < r->n_acts; i++)
        if (r->acts[i] == XF_RNN_DEFAULT || r->acts[i] >= XF_RNN_ACT_COUNT)
            return xf_infer_fail(c, XF_ERR_INVALID, "activation function %d is not one ONNX names", r->acts[i]);
    return XF_OK;
}

/* RNN, LSTM and GRU: Y [seq, dirs, batch, hidden] and the final states
 * (Y_h, LSTM's Y_c) [dirs, batch, hidden]; layout 1 puts batch first in X
 * ([batch, seq, input]), Y ([batch, seq, dirs, hidden]) and the states
 * ([batch, dirs, hidden]).  Every other operand must fit X and hidden_size
 * (R's last dimension when the attribute is absent). */
xf_status xf_infer_rnn(xf_infer_ctx *c)
{
    const xf_rnn_attrs *r = &c->node->attrs.rnn;
    xf_op op = c->node->op;
    bool quant = op == XF_OP_MS_DYNAMIC_QUANTIZE_LSTM; /* W [dirs, input, 4 hidden], R [dirs, hidden, 4 hidden] */
    if (quant)
        op = XF_OP_LSTM;
    int64_t gates = op == XF_OP_LSTM ? 4 : op == XF_OP_GRU ? 3 : 1, dirs = r->direction == 2 ? 2 : 1;
    xf_status st = rnn_attrs_check(c, op == XF_OP_LSTM ? 3 : op == XF_OP_GRU ? 2 : 1, dirs);
    if (st != XF_OK)
        return st;
    const xf_shape *x = xf_infer_shape(c, 0), *rs = xf_infer_shape(c, 2);
    if (x->ndim != 3 || rs->ndim != 3)
        return xf_infer_fail(c, XF_ERR_INVALID, "X %s and R %s must have rank 3", xf_infer_text(x).s,
                             xf_infer_text(rs).s);
    int64_t hidden = r->hidden_size ? r->hidden_size : rs->dims[quant ? 1 : 2];
    int64_t seq = x->dims[r->layout], batch = x->dims[1 - r->layout];
    xf_shape state = {.ndim = 3, .dims = {dirs, batch, hidden}};
    if (r->layout)
        state = (xf_shape){.ndim = 3, .dims = {batch, dirs, hidden}};
    const struct {
        const char *name;
        xf_shape want;
    } operands[] = {
        {"X", *x},
        {"W", {.ndim = 3, .dims = {dirs, gates * hidden, x->dims[2]}}},
        {"R", {.ndim = 3, .dims = {dirs, gates * hidden, hidden}}},
        {"B", {.ndim = 2, .dims = {dirs, 2 * gates * hidden}}},
        {"sequence_lens", {.ndim = 1, .dims = {batch}}},
        {"initial_h", state},
        {"initial_c", state},
        {"P", {.ndim = 2, .dims = {dirs, 3 * hidden}}},
    };
    xf_shape qw = {.ndim = 3, .dims = {dirs, x->dims[2], 4 * hidden}};
    xf_shape qr = {.ndim = 3, .dims = {dirs, hidden, 4 * hidden}};
    if (quant && (r->layout || !xf_shapes_may_equal(xf_infer_shape(c, 1), &qw) || !xf_shapes_may_equal(rs, &qr)))
        return xf_infer_fail(c, XF_ERR_INVALID, "W %s and R %s are not [%" PRId64 ", input, %" PRId64 "] and [%" PRId64
                             ", %" PRId64 ", %" PRId64 "]", xf_infer_text(xf_infer_shape(c, 1)).s, xf_infer_text(rs).s,
                             dirs, 4 * hidden, dirs, hidden, 4 * hidden);
    for (int i = 8; quant && i < 12; i++) { /* scales and zero points: one, or one per column */
        if (!xf_infer_has(c, i))
            return xf_infer_fail(c, XF_ERR_INVALID, "input %d (%s) is missing", i,
                                 i == 8 ? "W_scale" : i == 9 ? "W_zero_point" : i == 10 ? "R_scale" : "R_zero_point");
        const xf_shape *q = xf_infer_shape(c, i);
        if (!((q->ndim == 1 && q->dims[0] == dirs) || (q->ndim == 2 && q->dims[0] == dirs && q->dims[1] == 4 * hidden)))
            return xf_infer_fail(c, XF_ERR_INVALID, "input %d %s is neither [%" PRId64 "] nor [%" PRId64 ", %" PRId64
                                 "]", i, xf_infer_text(q).s, dirs, dirs, 4 * hidden);
    }
    for (int i = quant ? 3 : 1; i < (quant ? 8 : c->node->n_inputs); i++)
        if (xf_infer_has(c, i) && !xf_shapes_may_equal(xf_infer_shape(c, i), &operands[i].want))
            return xf_infer_fail(c, XF_ERR_INVALID,
                                 "%s has shape %s; X %s with hidden size %" PRId64 " and %" PRId64
                                 " direction(s) asks for %s",
                                 operands[i].name, xf_infer_text(xf_infer_shape(c, i)).s, xf_infer_text(x).s, hidden,
                                 dirs, xf_infer_text(&operands[i].want).s);
    xf_shape y = {.ndim = 4, .dims = {seq, dirs, batch, hidden}};
    if (r->layout)
        y = (xf_shape){.ndim = 4, .dims = {batch, seq, dirs, hidden}};
    xf_infer_set(c, 0, &y);
    for (int k = 1; k < c->node->n_outputs; k++)
        xf_infer_set(c, k, &state);
    return XF_OK;
}
