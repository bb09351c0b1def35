/* Shape rules of the data-movement ops: concat and split, transpose,
 * reshape and its kin, gathers and scatters, TopK, resize, GridSample, slice and pad (see
 * shape_infer.c for the driver and the rest). */
#include "shape_infer_impl.h"
#include "xf_op_plans.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

xf_status xf_infer_concat(xf_infer_ctx *c)
{
    const xf_shape *first = xf_infer_shape(c, 0);
    int axis;
    xf_status st = xf_infer_axis(c, "axis", c->node->attrs.axis, first->ndim, false, &axis);
    if (st != XF_OK)
        return st;
    xf_shape out = *first;
    for (int i = 1; i < c->node->n_inputs; i++) {
        if (!xf_infer_has(c, i))
            continue;
        const xf_shape *s = xf_infer_shape(c, i);
        bool fits = s->ndim == first->ndim;
        for (int d = 0; fits && d < s->ndim; d++) {
            fits = d == axis || s->dims[d] == first->dims[d] || s->dims[d] < 0 || first->dims[d] < 0;
            if (d != axis && out.dims[d] < 0) /* the dim another input knows */
                out.dims[d] = s->dims[d];
        }
        if (!fits)
            return xf_infer_fail(c, XF_ERR_INVALID,
                                 "input %d has shape %s, which does not match input 0's %s "
                                 "outside axis %d",
                                 i, xf_infer_text(s).s, xf_infer_text(first).s, axis);
        if (out.dims[axis] < 0 || s->dims[axis] < 0)
            out.dims[axis] = -1;
        else if (__builtin_add_overflow(out.dims[axis], s->dims[axis], &out.dims[axis]))
            return xf_infer_fail(c, XF_ERR_INVALID, "the concatenated size overflows");
    }
    xf_infer_set(c, 0, &out);
    return XF_OK;
}

/* Split sizes come from the split input (opset 13+), the split attribute
 * (opset 2..12), num_outputs (opset 18: equal chunks, the last smaller) or
 * else an even split into the node's outputs. */
static xf_status split_sizes(xf_infer_ctx *c, int64_t dim, int64_t *sizes, bool *known)
{
    const xf_attrs *a = &c->node->attrs;
    int n = c->node->n_outputs;
    *known = true;
    if (xf_infer_has(c, 1)) {
        if (a->num_outputs > 0)
            return xf_infer_fail(c, XF_ERR_INVALID, "num_outputs and the split input are both given");
        const xf_tensor *t = xf_infer_value(c, 1);
        if (t && xf_tensor_numel(t) != n)
            return xf_infer_fail(c, XF_ERR_INVALID, "split has %" PRId64 " sizes for %d outputs",
                                 xf_tensor_numel(t), n);
        int got;
        xf_status st = xf_infer_read_ints(c, 1, "split", sizes, n, &got);
        *known = got >= 0;
        return st;
    }
    if (a->n_split > 0) {
        if (a->n_split != n || a->n_split > (int)(sizeof a->split / sizeof a->split[0]))
            return xf_infer_fail(c, XF_ERR_INVALID, "split has %d sizes for %d outputs", a->n_split,
                                 n);
        memcpy(sizes, a->split, sizeof(int64_t) * (size_t)n);
        return XF_OK;
    }
    if (a->num_outputs != 0 && a->num_outputs != n)
        return xf_infer_fail(c, XF_ERR_INVALID, "num_outputs is %d but the node has %d outputs",
                             a->num_outputs, n);
    if (dim < 0) { /* known only at run time */
        *known = false;
        return XF_OK;
    }
    if (a->num_outputs == 0 && dim % n != 0)
        return xf_infer_fail(c, XF_ERR_INVALID,
                             "dimension %" PRId64 " does not split evenly into %d outputs", dim, n);
    int64_t chunk = (dim + n - 1) / n;
    for (int k = 0; k < n; k++)
        sizes[k] = k < n - 1 ? chunk : dim - chunk * (n - 1);
    return XF_OK;
}

xf_status xf_infer_split(xf_infer_ctx *c)
{
    const xf_shape *in = xf_infer_shape(c, 0);
    int n = c->node->n_outputs, axis;
    xf_status st = xf_infer_axis(c, "axis", c->node->attrs.axis, in->ndim, false, &axis);
    if (st != XF_OK)
        return st;
    int64_t dim = in->dims[axis];
    int64_t *sizes = malloc(sizeof(int64_t) * (size_t)n);
    if (!sizes)
        return xf_infer_fail(c, XF_ERR_NOMEM, "out of memory");
    bool known;
    st = split_sizes(c, dim, sizes, &known);
    if (st == XF_OK && known) {
        int64_t left = dim;
        bool fits = true;
        for (int k = 0; k < n && fits; k++) {
            fits = sizes[k] >= 0 && (sizes[k] <= left || dim < 0);
            left -= fits ? sizes[k] : 0;
        }
        if (!fits || (left != 0 && dim >= 0))
            st = xf_infer_fail(c, XF_ERR_INVALID,
                               "split sizes %s do not partition dimension %" PRId64 " of axis %d",
                               xf_infer_ints_text(sizes, n).s, dim, axis);
        for (int k = 0; st == XF_OK && k < n; k++) {
            xf_shape out = *in;
            out.dims[axis] = sizes[k];
            xf_infer_set(c, k, &out);
        }
    } else if (st == XF_OK) {
        xf_shape out = *in; /* sizes known at run time, the other dims now */
        out.dims[axis] = -1;
        for (int k = 0; k < n; k++)
            xf_infer_set(c, k, &out);
    }
    free(sizes);
    return st;
}

xf_status xf_infer_transpose(xf_infer_ctx *c)
{
    const xf_attrs *a = &c->node->attrs;
    const xf_shape *in = xf_infer_shape(c, 0);
    xf_shape out = {.ndim = in->ndim};
    if (a->n_perm == 0) {
        for (int i = 0; i < in->ndim; i++)
            out.dims[i] = in->dims[in->ndim - 1 - i];
        xf_infer_set(c, 0, &out);
        return XF_OK;
    }
    bool seen[XF_MAX_DIMS] = {false};
    bool ok = a->n_perm == in->ndim;
    for (int i = 0; ok && i < in->ndim; i++) {
        int64_t p = a->perm[i];
        ok = p >= 0 && p < in->ndim && !seen[p];
        if (ok) {
            seen[p] = true;
            out.dims[i] = in->dims[p];
        }
    }
    if (!ok) {
        int shown = a->n_perm < 0 ? 0 : a->n_perm > XF_MAX_DIMS ? XF_MAX_DIMS : a->n_perm;
        return xf_infer_fail(c, XF_ERR_INVALID, "perm %s is not a permutation of the axes of %s",
                             xf_infer_ints_text(a->perm, shown).s, xf_infer_text(in).s);
    }
    xf_infer_set(c, 0, &out);
    return XF_OK;
}

xf_status xf_infer_reshape(xf_infer_ctx *c)
{
    const xf_shape *in = xf_infer_shape(c, 0);
    bool allowzero = c->node->attrs.allowzero != 0;
    int64_t req[XF_MAX_DIMS];
    int n;
    xf_status st = xf_infer_read_ints(c, 1, "shape", req, XF_MAX_DIMS, &n);
    if (st != XF_OK || n < 0)
        return st != XF_OK ? st : xf_infer_unknown(c);
    xf_shape out = {.ndim = n};
    int infer_at = -1;
    bool has_zero = false;
    for (int i = 0; i < n; i++) {
        int64_t d = req[i];
        has_zero |= d == 0;
        if (d == -1) {
            if (infer_at >= 0)
                return xf_infer_fail(c, XF_ERR_INVALID, "shape %s has more than one -1",
                                     xf_infer_ints_text(req, n).s);
            infer_at = i;
            d = 1;
        } else if (d == 0 && !allowzero) {
            if (i >= in->ndim)
                return xf_infer_fail(c, XF_ERR_INVALID,
                                     "shape %s copies dimension %d, but the input %s has rank %d",
                                     xf_infer_ints_text(req, n).s, i, xf_infer_text(in).s, in->ndim);
            d = in->dims[i];
        } else if (d < 0) {
            return xf_infer_fail(c, XF_ERR_INVALID, "shape %s has a negative dimension",
                                 xf_infer_ints_text(req, n).s);
        }
        out.dims[i] = d;
    }
    int64_t numel = xf_shape_numel(in), known = xf_shape_numel(&out);
    if (numel < 0 || known < 0) { /* dims known only at run time: the -1 is one of them */
        if (infer_at >= 0)
            out.dims[infer_at] = -1;
        xf_infer_set(c, 0, &out);
        return XF_OK;
    }
    if (infer_at >= 0) {
        if (allowzero && has_zero)
            return xf_infer_fail(c, XF_ERR_INVALID, "shape %s has both 0 and -1 with allowzero",
                                 xf_infer_ints_text(req, n).s);
        if (known == 0 || numel % known != 0)
            return xf_infer_fail(c, XF_ERR_INVALID, "cannot reshape %s to %s",
                                 xf_infer_text(in).s, xf_infer_ints_text(req, n).s);
        out.dims[infer_at] = numel / known;
    } else if (known != numel) {
        return xf_infer_fail(c, XF_ERR_INVALID, "cannot reshape %s to %s", xf_infer_text(in).s,
                             xf_infer_ints_text(req, n).s);
    }
    xf_infer_set(c, 0, &out);
    return XF_OK;
}

xf_status xf_infer_flatten(xf_infer_ctx *c)
{
    const xf_shape *in = xf_infer_shape(c, 0);
    int axis;
    xf_status st = xf_infer_axis(c, "axis", c->node->attrs.axis, in->ndim, true, &axis);
    if (st != XF_OK)
        return st;
    int64_t dims[2] = {xf_infer_dims_product(in->dims, axis),
                       xf_infer_dims_product(in->dims + axis, in->ndim - axis)};
    xf_shape out = xf_shape_make(2, dims);
    xf_infer_set(c, 0, &out);
    return XF_OK;
}

xf_status xf_infer_read_axes(xf_infer_ctx *c, int64_t *axes, int *n, bool *given)
{
    const xf_attrs *a = &c->node->attrs;
    if (xf_infer_has(c, 1)) {
        *given = true;
        return xf_infer_read_ints(c, 1, "axes", axes, XF_MAX_DIMS, n);
    }
    if (a->n_axes < 0 || a->n_axes > XF_MAX_DIMS)
        return xf_infer_fail(c, XF_ERR_INVALID, "the axes attribute has %d entries", a->n_axes);
    *given = a->has_axes;
    *n = a->has_axes ? a->n_axes : 0;
    memcpy(axes, a->axes, sizeof(int64_t) * (size_t)*n);
    return XF_OK;
}

xf_status xf_infer_mark_axes(xf_infer_ctx *c, const int64_t *axes, int n, int rank, bool unique,
                             bool *mark)
{
    for (int i = 0; i < n; i++) {
        int ax;
        xf_status st = xf_infer_axis(c, "axis", axes[i], rank, false, &ax);
        if (st != XF_OK)
            return st;
        if (unique && mark[ax])
            return xf_infer_fail(c, XF_ERR_INVALID, "axes %s repeat axis %d", xf_infer_ints_text(axes, n).s,
                                 ax);
        mark[ax] = true;
    }
    return XF_OK;
}

xf_status xf_infer_squeeze(xf_infer_ctx *c)
{
    const xf_shape *in = xf_infer_shape(c, 0);
    int64_t axes[XF_MAX_DIMS];
    int n;
    bool given, drop[XF_MAX_DIMS] = {false};
    xf_status st = xf_infer_read_axes(c, axes, &n, &given);
    if (st != XF_OK || n < 0)
        return st != XF_OK ? st : xf_infer_unknown(c);
    if (n == 0) {
        /* No axes: every dimension of size 1 goes. */
        for (int d = 0; d < in->ndim; d++)
            drop[d] = in->dims[d] == 1;
    } else {
        st = xf_infer_mark_axes(c, axes, n, in->ndim, false, drop);
        if (st != XF_OK)
            return st;
        for (int d = 0; d < in->ndim; d++)
            if (drop[d] && in->dims[d] != 1)
                return xf_infer_fail(c, XF_ERR_INVALID,
                                     "cannot squeeze axis %d of shape %s: its size is not 1", d,
                                     xf_infer_text(in).s);
    }
    xf_shape out = {.ndim = 0};
    for (int d = 0; d < in->ndim; d++)
        if (!drop[d])
            out.dims[out.ndim++] = in->dims[d];
    xf_infer_set(c, 0, &out);
    return XF_OK;
}

xf_status xf_infer_unsqueeze(xf_infer_ctx *c)
{
    const xf_shape *in = xf_infer_shape(c, 0);
    int64_t axes[XF_MAX_DIMS];
    int n = 0;
    bool given = false, ones[XF_MAX_DIMS] = {false};
    xf_status st = xf_infer_read_axes(c, axes, &n, &given);
    if (st != XF_OK || n < 0)
        return st != XF_OK ? st : xf_infer_unknown(c);
    if (!given)
        return xf_infer_fail(c, XF_ERR_INVALID, "axes are required");
    int rank = in->ndim + n;
    if (rank > XF_MAX_DIMS)
        return xf_infer_fail(c, XF_ERR_UNSUPPORTED, "the result of %s would have rank %d; xflow "
                             "handles at most %d", xf_infer_text(in).s, rank, XF_MAX_DIMS);
    st = xf_infer_mark_axes(c, axes, n, rank, true, ones);
    if (st != XF_OK)
        return st;
    xf_shape out = {.ndim = rank};
    for (int d = 0, j = 0; d < rank; d++)
        out.dims[d] = ones[d] ? 1 : in->dims[j++];
    xf_infer_set(c, 0, &out);
    return XF_OK;
}

/* The axis of Gather, GatherElements, ScatterElements and TopK, on the rank
 * of input 0. */
static xf_status data_axis(xf_infer_ctx *c, int *axis)
{
    return xf_infer_axis(c, "axis", c->node->attrs.axis, xf_infer_shape(c, 0)->ndim, false, axis);
}

xf_status xf_infer_gather(xf_infer_ctx *c)
{
    const xf_shape *data = xf_infer_shape(c, 0), *idx = xf_infer_shape(c, 1);
    int axis;
    xf_status st = data_axis(c, &axis);
    if (st != XF_OK)
        return st;
    int rank = data->ndim - 1 + idx->ndim;
    if (rank > XF_MAX_DIMS)
        return xf_infer_fail(c, XF_ERR_UNSUPPORTED,
                             "gathering %s from %s gives rank %d; xflow handles at most %d",
                             xf_infer_text(idx).s, xf_infer_text(data).s, rank, XF_MAX_DIMS);
    xf_shape out = {.ndim = 0};
    for (int d = 0; d < axis; d++)
        out.dims[out.ndim++] = data->dims[d];
    for (int d = 0; d < idx->ndim; d++)
        out.dims[out.ndim++] = idx->dims[d];
    for (int d = axis + 1; d < data->ndim; d++)
        out.dims[out.ndim++] = data->dims[d];
    xf_infer_set(c, 0, &out);
    return XF_OK;
}

/* GatherElements: the indices' shape, of the data's rank. */
xf_status xf_infer_gather_elements(xf_infer_ctx *c)
{
    int axis;
    xf_status st = data_axis(c, &axis);
    const xf_shape *idx = xf_infer_shape(c, 1);
    if (st == XF_OK && idx->ndim != xf_infer_shape(c, 0)->ndim)
        st = xf_infer_fail(c, XF_ERR_INVALID, "indices %s and data %s differ in rank", xf_infer_text(idx).s,
                           xf_infer_text(xf_infer_shape(c, 0)).s);
    if (st == XF_OK)
        xf_infer_set(c, 0, idx);
    return st;
}

/* The scatters' output: the data's shape, when indices and updates fit it. */
static xf_status scatter_result(xf_infer_ctx *c, bool ok, const xf_shape *data, const xf_shape *idx,
                                const xf_shape *upd)
{
    if (!ok)
        return xf_infer_fail(c, XF_ERR_INVALID, "indices %s and updates %s do not fit data %s", xf_infer_text(idx).s,
                             xf_infer_text(upd).s, xf_infer_text(data).s);
    xf_infer_set(c, 0, data);
    return XF_OK;
}

/* ScatterND: the data's shape; indices (..., k) with k <= rank, and updates
 * of shape indices[:-1] + data[k:]. */
xf_status xf_infer_scatter_nd(xf_infer_ctx *c)
{
    const xf_shape *data = xf_infer_shape(c, 0), *idx = xf_infer_shape(c, 1), *upd = xf_infer_shape(c, 2);
    int64_t k = idx->ndim > 0 ? idx->dims[idx->ndim - 1] : -1;
    bool ok = k >= 1 && k <= data->ndim && upd->ndim == idx->ndim - 1 + data->ndim - (int)k;
    for (int d = 0; ok && d < idx->ndim - 1; d++)
        ok = xf_dims_may_equal(upd->dims[d], idx->dims[d]);
    for (int d = (int)k; ok && d < data->ndim; d++)
        ok = xf_dims_may_equal(upd->dims[idx->ndim - 1 + d - (int)k], data->dims[d]);
    return scatter_result(c, ok, data, idx, upd);
}

/* ScatterElements: the data's shape; indices and updates of one shape, of
 * the data's rank, and within the data off the axis. */
xf_status xf_infer_scatter_elements(xf_infer_ctx *c)
{
    const xf_shape *data = xf_infer_shape(c, 0), *idx = xf_infer_shape(c, 1), *upd = xf_infer_shape(c, 2);
    int axis;
    xf_status st = data_axis(c, &axis);
    if (st != XF_OK)
        return st;
    bool ok = idx->ndim == data->ndim && idx->ndim == upd->ndim;
    for (int d = 0; ok && d < data->ndim; d++)
        ok = xf_dims_may_equal(idx->dims[d], upd->dims[d]) &&
             (d == axis || idx->dims[d] <= data->dims[d] || idx->dims[d] < 0 || data->dims[d] < 0);
    return scatter_result(c, ok, data, idx, upd);
}

/* GatherND: indices[:-1] + data[batch_dims + k:], k = indices[-1]; the
 * first batch_dims dims of data and indices agree. */
xf_status xf_infer_gather_nd(xf_infer_ctx *c)
{
    const xf_shape *data = xf_infer_shape(c, 0), *idx = xf_infer_shape(c, 1);
    int b = c->node->attrs.batch_dims;
    int64_t k = idx->ndim > 0 ? idx->dims[idx->ndim - 1] : -1;
    bool ok = b >= 0 && idx->ndim >= b + 1 && k >= 1 && b + k <= data->ndim;
    for (int d = 0; ok && d < b; d++)
        ok = xf_dims_may_equal(data->dims[d], idx->dims[d]);
    int rank = ok ? idx->ndim - 1 + data->ndim - b - (int)k : 0;
    if (!ok || rank > XF_MAX_DIMS)
        return xf_infer_fail(c, ok ? XF_ERR_UNSUPPORTED : XF_ERR_INVALID,
                             "indices %s do not fit data %s with batch_dims %d", xf_infer_text(idx).s,
                             xf_infer_text(data).s, b);
    xf_shape out = {.ndim = 0};
    for (int d = 0; d < idx->ndim - 1; d++)
        out.dims[out.ndim++] = idx->dims[d];
    for (int d = b + (int)k; d < data->ndim; d++)
        out.dims[out.ndim++] = data->dims[d];
    xf_infer_set(c, 0, &out);
    return XF_OK;
}

/* TopK: the input with K elements along the axis, for the values and for
 * their indices; K (one value) must be known, else nothing is. */
xf_status xf_infer_top_k(xf_infer_ctx *c)
{
    const xf_shape *x = xf_infer_shape(c, 0), *ks = xf_infer_shape(c, 1);
    int axis, n;
    int64_t k;
    xf_status st = data_axis(c, &axis);
    if (st == XF_OK && !xf_infer_scalar_like(ks))
        st = xf_infer_fail(c, XF_ERR_INVALID, "K must be a one-element tensor, got shape %s", xf_infer_text(ks).s);
    if (st == XF_OK)
        st = xf_infer_read_ints(c, 1, "K", &k, 1, &n);
    if (st != XF_OK || n < 0)
        return st != XF_OK ? st : xf_infer_unknown(c);
    if (k < 0 || k > x->dims[axis])
        return xf_infer_fail(c, XF_ERR_INVALID, "K = %" PRId64 " is out of range for axis %d of %s", k, axis,
                             xf_infer_text(x).s);
    xf_shape out = *x;
    out.dims[axis] = k;
    xf_infer_set(c, 0, &out);
    xf_infer_set(c, 1, &out);
    return XF_OK;
}

/* floor(dim * scale) for every dim; Upsample's scales are at least 1. */
static xf_status infer_scaled(xf_infer_ctx *c, const xf_tensor *scales)
{
    const xf_shape *in = xf_infer_shape(c, 0);
    bool upsample = c->node->op == XF_OP_UPSAMPLE;
    xf_shape out = {.ndim = in->ndim};
    if (xf_tensor_numel(scales) != in->ndim || scales->dtype != XF_DT_FLOAT)
        return xf_infer_fail(c, XF_ERR_INVALID, "scales must be %d floats", in->ndim);
    for (int d = 0; d < in->ndim; d++) {
        double s = xf_tensor_get_f64(scales, d);
        if (!(s > 0) || (upsample && !(s >= 1)))
            return xf_infer_fail(c, XF_ERR_INVALID, "scale %g of dim %d is not %s", s, d,
                                 upsample ? "at least 1" : "positive");
        out.dims[d] = (int64_t)floor((double)in->dims[d] * s);
    }
    xf_infer_set(c, 0, &out);
    return XF_OK;
}

bool xf_resize_plan(const xf_attrs *a, const xf_shape *in, const double *scales, int n_scales,
                    const int64_t *sizes, int n_sizes, double *scale, int64_t *out, int *axes_at, char *why,
                    size_t why_len)
{
    int rank = in->ndim, n = a->has_axes ? a->n_axes : rank;
    bool listed[XF_MAX_DIMS] = {false};
    for (int i = 0; i < n; i++) {
        int64_t ax = a->has_axes ? a->axes[i] : i;
        int d = (int)(ax < 0 ? ax + rank : ax);
        if (ax < -rank || ax >= rank || listed[d]) {
            snprintf(why, why_len, "axis %lld is out of range for rank %d or repeated", (long long)ax, rank);
            return false;
        }
        listed[d] = true;
        axes_at[i] = d;
    }
    bool by_sizes = sizes != NULL;
    if ((by_sizes ? n_sizes : n_scales) != n) {
        snprintf(why, why_len, "%s has %d values for %d dims", by_sizes ? "sizes" : "scales",
                 by_sizes ? n_sizes : n_scales, n);
        return false;
    }
    for (int d = 0; d < rank; d++) {
        scale[d] = 1;
        out[d] = in->dims[d];
    }
    double kept = a->resize_keep == 1 ? INFINITY : 0;
    for (int i = 0; i < n; i++) {
        int d = axes_at[i];
        int64_t extent = in->dims[d];
        if (by_sizes) {
            if (sizes[i] < 0) {
                snprintf(why, why_len, "size %lld of dim %d is negative", (long long)sizes[i], d);
                return false;
            }
            out[d] = sizes[i];
            scale[d] = extent > 0 ? (double)sizes[i] / (double)extent : 1;
            kept = a->resize_keep == 1 ? fmin(kept, scale[d]) : fmax(kept, scale[d]);
            continue;
        }
        if (!(scales[i] > 0) || (double)extent * scales[i] >= 0x1p62) {
            snprintf(why, why_len, "scale %g of dim %d is not positive, or too large", scales[i], d);
            return false;
        }
        scale[d] = scales[i];
        out[d] = (int64_t)floor((double)extent * scales[i]);
    }
    for (int i = 0; by_sizes && a->resize_keep != 0 && i < n; i++) {
        int d = axes_at[i];
        scale[d] = kept;
        out[d] = (int64_t)(kept * (double)in->dims[d] + 0.5);
    }
    return true;
}

/* Resize: the sizes input when given, else floor(dim * scale), for the
 * dims its axes list (see xf_resize_plan). */
xf_status xf_infer_resize(xf_infer_ctx *c)
{
    const xf_shape *in = xf_infer_shape(c, 0);
    bool has_sizes = xf_infer_has(c, 3) && xf_infer_shape(c, 3)->ndim == 1 && xf_infer_shape(c, 3)->dims[0] > 0;
    double scales[XF_MAX_DIMS], scale[XF_MAX_DIMS];
    int64_t sizes[XF_MAX_DIMS];
    int n = 0, axes_at[XF_MAX_DIMS];
    if (has_sizes) {
        xf_status st = xf_infer_read_ints(c, 3, "sizes", sizes, XF_MAX_DIMS, &n);
        if (st != XF_OK || n < 0)
            return st != XF_OK ? st : xf_infer_unknown(c);
    } else {
        const xf_tensor *t = xf_infer_has(c, 2) ? xf_infer_value(c, 2) : NULL;
        if (!t)
            return xf_infer_unknown(c);
        if (t->dtype != XF_DT_FLOAT || t->shape.ndim != 1 || t->shape.dims[0] > XF_MAX_DIMS)
            return xf_infer_fail(c, XF_ERR_INVALID, "scales must be a list of at most %d floats", XF_MAX_DIMS);
        n = (int)t->shape.dims[0];
        for (int i = 0; i < n; i++)
            scales[i] = xf_tensor_get_f64(t, i);
    }
    xf_shape out = {.ndim = in->ndim};
    char why[160];
    if (!xf_resize_plan(&c->node->attrs, in, scales, n, has_sizes ? sizes : NULL, n, scale, out.dims, axes_at, why,
                        sizeof why))
        return xf_infer_fail(c, XF_ERR_INVALID, "%s", why);
    xf_infer_set(c, 0, &out);
    return XF_OK;
}

/* Upsample: floor(dim * scale), the scales an attribute before opset 9
 * and an input from it. */
xf_status xf_infer_upsample(xf_infer_ctx *c)
{
    const xf_tensor *attr = c->node->attrs.value;
    if (attr && xf_infer_has(c, 1))
        return xf_infer_fail(c, XF_ERR_INVALID, "has both a scales attribute (before opset 9) and a scales input");
    if (!attr && !xf_infer_has(c, 1))
        return xf_infer_fail(c, XF_ERR_INVALID, "has no scales (an attribute before opset 9, an input from it)");
    const xf_tensor *scales = attr ? attr : xf_infer_value(c, 1);
    return scales ? infer_scaled(c, scales) : xf_infer_unknown(c);
}

/* GridSample: X (N, C, D1, ..., Dr) sampled at grid (N, D1_out, ...,
 * Dr_out, r) gives (N, C, D1_out, ..., Dr_out); before opset 20 X is 4-D
 * only. */
xf_status xf_infer_grid_sample(xf_infer_ctx *c)
{
    const xf_attrs *a = &c->node->attrs;
    const xf_shape *x = xf_infer_shape(c, 0), *grid = xf_infer_shape(c, 1);
    if ((unsigned)a->grid_mode > 2 || (unsigned)a->grid_padding > 2 || (unsigned)a->grid_align_corners > 1)
        return xf_infer_fail(c, XF_ERR_INVALID, "mode %d, padding_mode %d or align_corners %d is out of range",
                             a->grid_mode, a->grid_padding, a->grid_align_corners);
    if (c->opset < 20 && x->ndim != 4)
        return xf_infer_fail(c, XF_ERR_INVALID, "X must have shape [N, C, H, W] before opset 20, got %s",
                             xf_infer_text(x).s);
    if (x->ndim < 3)
        return xf_infer_fail(c, XF_ERR_INVALID, "X must have shape [N, C, D1, ...] (rank 3 or more), got %s",
                             xf_infer_text(x).s);
    int r = x->ndim - 2;
    if (grid->ndim != x->ndim)
        return xf_infer_fail(c, XF_ERR_INVALID, "grid must have rank %d (X's) for %d spatial dims, got %s",
                             x->ndim, r, xf_infer_text(grid).s);
    if (grid->dims[x->ndim - 1] != r && grid->dims[x->ndim - 1] >= 0)
        return xf_infer_fail(c, XF_ERR_INVALID, "grid's last dim must be %d (one coordinate per spatial dim of X), "
                             "got %s", r, xf_infer_text(grid).s);
    if (!xf_dims_may_equal(grid->dims[0], x->dims[0]))
        return xf_infer_fail(c, XF_ERR_INVALID, "grid's batch %" PRId64 " differs from X's %" PRId64,
                             grid->dims[0], x->dims[0]);
    xf_shape out = *grid;
    out.dims[1] = x->dims[1];
    for (int d = 2; d < x->ndim; d++)
        out.dims[d] = grid->dims[d - 1];
    xf_infer_set(c, 0, &out);
    return XF_OK;
}

int64_t xf_infer_clamp(int64_t v, int64_t lo, int64_t hi) { return v < lo ? lo : v > hi ? hi : v; }

/* Elements a slice selects along one axis of size dim (ONNX clamping: for
 * positive steps starts and ends clamp to [0, dim], for negative steps
 * starts to [0, dim-1] and ends to [-1, dim-1]). */
static int64_t slice_length(int64_t dim, int64_t start, int64_t end, int64_t step)
{
    if (dim == 0)
        return 0;
    if (start < 0)
        start += dim;
    if (end < 0)
        end += dim;
    if (step > 0) {
        start = xf_infer_clamp(start, 0, dim);
        end = xf_infer_clamp(end, 0, dim);
        return end > start ? (int64_t)((uint64_t)(end - start - 1) / (uint64_t)step + 1) : 0;
    }
    start = xf_infer_clamp(start, 0, dim - 1);
    end = xf_infer_clamp(end, -1, dim - 1);
    return start > end ? (int64_t)((uint64_t)(start - end - 1) / (0 - (uint64_t)step) + 1) : 0;
}

/* Slice's parameters: the opset-1 attributes, or the inputs starts, ends
 * and the optional axes and steps.  *n = -1 when a value is not known. */
static xf_status slice_params(xf_infer_ctx *c, int64_t *starts, int64_t *ends, int64_t *axes,
                              int64_t *steps, int *n)
{
    const xf_attrs *a = &c->node->attrs;
    if (a->has_slice_attrs) {
        if (a->n_slice < 0 || a->n_slice > XF_MAX_DIMS)
            return xf_infer_fail(c, XF_ERR_INVALID, "starts has %d entries", a->n_slice);
        *n = a->n_slice;
        for (int i = 0; i < *n; i++) {
            starts[i] = a->slice_starts[i];
            ends[i] = a->slice_ends[i];
            axes[i] = a->has_slice_axes ? a->slice_axes[i] : i;
            steps[i] = 1;
        }
        return XF_OK;
    }
    if (!xf_infer_has(c, 1) || !xf_infer_has(c, 2))
        return xf_infer_fail(c, XF_ERR_INVALID, "starts and ends are required");
    int count[4];
    xf_status st = xf_infer_read_ints(c, 1, "starts", starts, XF_MAX_DIMS, &count[0]);
    if (st == XF_OK)
        st = xf_infer_read_ints(c, 2, "ends", ends, XF_MAX_DIMS, &count[1]);
    *n = -1;
    if (st != XF_OK || count[0] < 0 || count[1] < 0)
        return st;
    count[2] = count[3] = count[0];
    for (int i = 0; i < count[0]; i++) {
        axes[i] = i;
        steps[i] = 1;
    }
    if (xf_infer_has(c, 3))
        st = xf_infer_read_ints(c, 3, "axes", axes, XF_MAX_DIMS, &count[2]);
    if (st == XF_OK && xf_infer_has(c, 4))
        st = xf_infer_read_ints(c, 4, "steps", steps, XF_MAX_DIMS, &count[3]);
    if (st != XF_OK || count[2] < 0 || count[3] < 0)
        return st;
    if (count[1] != count[0] || count[2] != count[0] || count[3] != count[0])
        return xf_infer_fail(c, XF_ERR_INVALID,
                             "starts, ends, axes and steps have %d, %d, %d and %d entries",
                             count[0], count[1], count[2], count[3]);
    *n = count[0];
    return XF_OK;
}

xf_status xf_infer_slice(xf_infer_ctx *c)
{
    const xf_shape *in = xf_infer_shape(c, 0);
    int64_t starts[XF_MAX_DIMS], ends[XF_MAX_DIMS], axes[XF_MAX_DIMS], steps[XF_MAX_DIMS];
    int n;
    xf_status st = slice_params(c, starts, ends, axes, steps, &n);
    if (st != XF_OK || n < 0)
        return st != XF_OK ? st : xf_infer_unknown(c);
    xf_shape out = *in;
    bool seen[XF_MAX_DIMS] = {false};
    st = xf_infer_mark_axes(c, axes, n, in->ndim, true, seen);
    if (st != XF_OK)
        return st;
    for (int i = 0; i < n; i++) {
        int ax = (int)(axes[i] < 0 ? axes[i] + in->ndim : axes[i]);
        if (steps[i] == 0)
            return xf_infer_fail(c, XF_ERR_INVALID, "step on axis %d is 0", ax);
        out.dims[ax] = slice_length(in->dims[ax], starts[i], ends[i], steps[i]);
    }
    xf_infer_set(c, 0, &out);
    return XF_OK;
}

/* Pad: pads from the input (opset 11+, with optional axes from opset 18)
 * or the attribute (opset 2..10); negative pads crop. */
xf_status xf_infer_pad(xf_infer_ctx *c)
{
    const xf_attrs *a = &c->node->attrs;
    const xf_shape *in = xf_infer_shape(c, 0);
    int64_t pads[2 * XF_MAX_DIMS], axes[XF_MAX_DIMS];
    int n_pads, n_axes = in->ndim;
    xf_status st = XF_OK;
    if (xf_infer_has(c, 1)) {
        st = xf_infer_read_ints(c, 1, "pads", pads, 2 * XF_MAX_DIMS, &n_pads);
        if (st == XF_OK && xf_infer_has(c, 3))
            st = xf_infer_read_ints(c, 3, "axes", axes, XF_MAX_DIMS, &n_axes);
        if (st != XF_OK || n_pads < 0 || n_axes < 0)
            return st != XF_OK ? st : xf_infer_unknown(c);
    } else if (a->has_pads) {
        if (a->n_pads < 0 || a->n_pads > 2 * XF_MAX_DIMS)
            return xf_infer_fail(c, XF_ERR_INVALID, "pads has %d entries", a->n_pads);
        n_pads = a->n_pads;
        memcpy(pads, a->pad_pads, sizeof(int64_t) * (size_t)n_pads);
    } else {
        return xf_infer_fail(c, XF_ERR_INVALID, "pads are required");
    }
    if (!xf_infer_has(c, 3))
        for (int i = 0; i < n_axes; i++)
            axes[i] = i;
    if (n_pads != 2 * n_axes)
        return xf_infer_fail(c, XF_ERR_INVALID, "pads %s has %d entries for %d axes",
                             xf_infer_ints_text(pads, n_pads).s, n_pads, n_axes);
    bool seen[XF_MAX_DIMS] = {false};
    st = xf_infer_mark_axes(c, axes, n_axes, in->ndim, true, seen);
    if (st != XF_OK)
        return st;
    xf_shape out = *in;
    for (int i = 0; i < n_axes; i++) {
        int ax = (int)(axes[i] < 0 ? axes[i] + in->ndim : axes[i]);
        int64_t d;
        if (in->dims[ax] < 0) { /* known only at run time */
            out.dims[ax] = -1;
            continue;
        }
        if (__builtin_add_overflow(in->dims[ax], pads[i], &d) ||
            __builtin_add_overflow(d, pads[n_axes + i], &d) || d < 0)
            return xf_infer_fail(c, XF_ERR_INVALID, "pads %s do not fit axis %d of %s",
                                 xf_infer_ints_text(pads, n_pads).s, ax, xf_infer_text(in).s);
        out.dims[ax] = d;
    }
    xf_infer_set(c, 0, &out);
    return XF_OK;
}
