/* The shape rules of the movement and indexing ops: Trilu, Tile,
 * DepthToSpace, SpaceToDepth, EyeLike, ReverseSequence, OneHot, Compress
 * and Unique, with Unique's grouping (see shape_infer.c for the driver). */
#include "shape_infer_impl.h"
#include "xf_op_plans.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

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

/* Det: the determinants of the square matrices in the last two dims. */
xf_status xf_infer_det(xf_infer_ctx *c)
{
    const xf_shape *x = xf_infer_shape(c, 0);
    if (x->ndim < 2 || x->dims[x->ndim - 1] != x->dims[x->ndim - 2])
        return xf_infer_fail(c, XF_ERR_INVALID, "input %s is not square matrices (rank 2 or more, the last two dims "
                             "equal)", xf_infer_text(x).s);
    xf_shape out = xf_shape_make(x->ndim - 2, x->dims);
    xf_infer_set(c, 0, &out);
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
    /* a dim known only at run time gives one (checked at run time) */
    int64_t d1 = x->dims[1] < 0 ? bb : x->dims[1], d2 = x->dims[2] < 0 ? b : x->dims[2];
    int64_t d3 = x->dims[3] < 0 ? b : x->dims[3];
    if (c->node->op == XF_OP_DEPTH_TO_SPACE) {
        if (d1 % bb)
            return xf_infer_fail(c, XF_ERR_INVALID, "%" PRId64 " channels are not a multiple of blocksize^2 = %" PRId64,
                                 x->dims[1], bb);
        out.dims[1] = x->dims[1] / bb;
        if (__builtin_mul_overflow(x->dims[2], b, &out.dims[2]) || __builtin_mul_overflow(x->dims[3], b, &out.dims[3]))
            return xf_infer_fail(c, XF_ERR_LIMIT, "the output's height or width overflows");
    } else {
        if (d2 % b || d3 % b)
            return xf_infer_fail(c, XF_ERR_INVALID, "height %" PRId64 " and width %" PRId64 " must be multiples of "
                                 "blocksize %" PRId64, x->dims[2], x->dims[3], b);
        if (__builtin_mul_overflow(x->dims[1], bb, &out.dims[1]))
            return xf_infer_fail(c, XF_ERR_LIMIT, "the output's channel count overflows");
        out.dims[2] = x->dims[2] / b;
        out.dims[3] = x->dims[3] / b;
    }
    for (int d = 1; d < 4; d++)
        out.dims[d] = x->dims[d] < 0 ? -1 : out.dims[d];
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
    if (lens->ndim != 1 || !xf_dims_may_equal(lens->dims[0], x->dims[batch]))
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

/* ------------------------------------------------------------ Unique */

typedef struct unique_ctx {
    const xf_tensor *x;
    int64_t outer, n, inner; /* x as outer x n slices x inner */
} unique_ctx;

/* Elements i and j of x: -1, 0 or 1; NaN equals NaN and is above every number. */
static int compare_elements(const xf_tensor *x, int64_t i, int64_t j)
{
    if (x->dtype == XF_DT_UINT64) {
        uint64_t a = ((const uint64_t *)x->data)[i], b = ((const uint64_t *)x->data)[j];
        return (a > b) - (a < b);
    }
    if (!xf_dtype_is_float(x->dtype)) {
        int64_t a = xf_tensor_get_i64(x, i), b = xf_tensor_get_i64(x, j);
        return (a > b) - (a < b);
    }
    double a = xf_tensor_get_f64(x, i), b = xf_tensor_get_f64(x, j);
    if (isnan(a) || isnan(b))
        return isnan(a) - isnan(b);
    return (a > b) - (a < b);
}

/* Slices s and t, element by element in row-major order. */
static int compare_slices(const unique_ctx *c, int64_t s, int64_t t)
{
    for (int64_t o = 0; o < c->outer; o++)
        for (int64_t i = 0; i < c->inner; i++) {
            int r = compare_elements(c->x, (o * c->n + s) * c->inner + i, (o * c->n + t) * c->inner + i);
            if (r)
                return r;
        }
    return 0;
}

/* Stable merge sort of the slice indices a[0..n) (tmp: n entries). */
static void sort_slices(const unique_ctx *c, int64_t *a, int64_t *tmp, int64_t n)
{
    if (n < 2)
        return;
    int64_t half = n / 2, i = 0, j = half, k = 0;
    sort_slices(c, a, tmp, half);
    sort_slices(c, a + half, tmp, n - half);
    while (i < half && j < n)
        tmp[k++] = compare_slices(c, a[j], a[i]) < 0 ? a[j++] : a[i++];
    while (i < half)
        tmp[k++] = a[i++];
    while (j < n)
        tmp[k++] = a[j++];
    memcpy(a, tmp, sizeof *a * (size_t)n);
}

int64_t xf_unique(const xf_tensor *x, int axis, bool sorted, int64_t *first, int64_t *inverse, int64_t *counts)
{
    const xf_shape *s = &x->shape;
    unique_ctx c = {x, 1, xf_shape_numel(s), 1};
    if (axis >= 0) {
        c.outer = xf_infer_dims_product(s->dims, axis);
        c.n = s->dims[axis];
        c.inner = xf_infer_dims_product(s->dims + axis + 1, s->ndim - axis - 1);
    }
    /* order: slices sorted; group[s]: slice s's group (in sorted order);
     * rank[g]: group g's place in the output */
    int64_t n = c.n, *buf = malloc(sizeof *buf * (size_t)(n > 0 ? 6 * n : 1));
    if (!buf)
        return -1;
    int64_t *order = buf, *tmp = buf + n, *group = buf + 2 * n, *group_first = buf + 3 * n, *group_size = buf + 4 * n,
            *rank = buf + 5 * n, n_groups = 0;
    for (int64_t i = 0; i < n; i++)
        order[i] = i;
    sort_slices(&c, order, tmp, n);
    for (int64_t p = 0; p < n; p++) {
        if (p == 0 || compare_slices(&c, order[p - 1], order[p]) != 0) {
            group_first[n_groups] = order[p]; /* the sort is stable: the first occurrence */
            group_size[n_groups] = 0;
            rank[n_groups] = sorted ? n_groups : -1;
            n_groups++;
        }
        group[order[p]] = n_groups - 1;
        group_size[n_groups - 1]++;
    }
    for (int64_t i = 0, next = 0; !sorted && i < n; i++)
        if (rank[group[i]] < 0)
            rank[group[i]] = next++;
    for (int64_t g = 0; g < n_groups; g++) {
        if (first)
            first[rank[g]] = group_first[g];
        if (counts)
            counts[rank[g]] = group_size[g];
    }
    for (int64_t i = 0; inverse && i < n; i++)
        inverse[i] = rank[group[i]];
    free(buf);
    return n_groups;
}

/* Unique: Y holds the unique slices along axis (or elements), indices and
 * counts one entry per unique slice, inverse_indices one per input slice;
 * their number is known where the input's value is. */
xf_status xf_infer_unique(xf_infer_ctx *c)
{
    const xf_attrs *a = &c->node->attrs;
    const xf_shape *x = xf_infer_shape(c, 0);
    int axis = -1;
    xf_status st = a->has_axis ? xf_infer_axis(c, "axis", a->axis, x->ndim, false, &axis) : XF_OK;
    if (st != XF_OK)
        return st;
    xf_shape inverse = {.ndim = 1, .dims = {axis < 0 ? xf_shape_numel(x) : x->dims[axis]}};
    const xf_tensor *t = xf_infer_value(c, 0);
    if (!t || xf_dtype_size(t->dtype) == 0 || (xf_tensor_numel(t) > 0 && !t->data)) {
        xf_infer_unknown(c);
        xf_infer_set(c, 2, &inverse);
        return XF_OK;
    }
    int64_t count = xf_unique(t, axis, !a->topk_unsorted, NULL, NULL, NULL);
    if (count < 0)
        return xf_infer_fail(c, XF_ERR_NOMEM, "out of memory");
    xf_shape y = *x, per_unique = {.ndim = 1, .dims = {count}};
    if (axis < 0)
        y = per_unique;
    else
        y.dims[axis] = count;
    xf_infer_set(c, 0, &y);
    xf_infer_set(c, 1, &per_unique);
    xf_infer_set(c, 2, &inverse);
    xf_infer_set(c, 3, &per_unique);
    return XF_OK;
}
