/* The shape rules of the reductions along one axis and the normalizations
 * that keep their input's shape: ArgMax/ArgMin, CumSum,
 * InstanceNormalization, GroupNormalization, MeanVarianceNormalization,
 * LRN and LpNormalization (see shape_infer.c for the driver; Reduce* and
 * Hardmax share the rules of ReduceSum and Softmax in shape_infer_nn.c). */
#include "shape_infer_impl.h"

#include <inttypes.h>

/* ------------------------------------------------------------ ArgMax, ArgMin */

/* The input's shape with axis kept as 1 (keepdims) or dropped. */
xf_status xf_infer_arg_reduce(xf_infer_ctx *c)
{
    const xf_shape *x = xf_infer_shape(c, 0);
    int axis;
    xf_status st = xf_infer_axis(c, "axis", c->node->attrs.axis, x->ndim, false, &axis);
    if (st != XF_OK)
        return st;
    xf_shape out = {.ndim = 0};
    for (int d = 0; d < x->ndim; d++)
        if (d != axis || c->node->attrs.keepdims)
            out.dims[out.ndim++] = d == axis ? 1 : x->dims[d];
    xf_infer_set(c, 0, &out);
    return XF_OK;
}

/* ------------------------------------------------------------ CumSum */

/* x's shape; the axis input is a scalar, checked against x's rank where
 * its value is known. */
xf_status xf_infer_cumsum(xf_infer_ctx *c)
{
    const xf_shape *x = xf_infer_shape(c, 0), *axis_shape = xf_infer_shape(c, 1);
    if (x->ndim < 1)
        return xf_infer_fail(c, XF_ERR_INVALID, "x must have rank 1 or more, got a scalar");
    if (!xf_infer_scalar_like(axis_shape))
        return xf_infer_fail(c, XF_ERR_INVALID, "axis must be a scalar, got shape %s", xf_infer_text(axis_shape).s);
    int64_t axis;
    int n, ax;
    xf_status st = xf_infer_read_ints(c, 1, "axis", &axis, 1, &n);
    if (st == XF_OK && n == 1)
        st = xf_infer_axis(c, "axis", axis, x->ndim, false, &ax);
    if (st == XF_OK)
        xf_infer_set(c, 0, x);
    return st;
}

/* ------------------------------------------------------------ normalizations */

/* X [N, C, ...]: a rank of at least 2. */
static xf_status channels(const xf_infer_ctx *c, const xf_shape *x)
{
    if (x->ndim < 2)
        return xf_infer_fail(c, XF_ERR_INVALID, "input must have shape [N, C, ...], got %s", xf_infer_text(x).s);
    return XF_OK;
}

/* Inputs 1 and 2 (scale and bias) must be 1-D of one of the sizes given
 * (count of them); why says what the sizes are. */
static xf_status params_sized(const xf_infer_ctx *c, const int64_t *sizes, int count, const char *why)
{
    static const char *const names[] = {"", "scale", "B"};
    for (int i = 1; i < 3; i++) {
        const xf_shape *p = xf_infer_shape(c, i);
        bool ok = false;
        for (int k = 0; k < count && p->ndim == 1; k++)
            ok = ok || xf_dims_may_equal(p->dims[0], sizes[k]);
        if (!ok)
            return xf_infer_fail(c, XF_ERR_INVALID, "%s must have shape [%" PRId64 "] (%s), got %s", names[i],
                                 sizes[0], why, xf_infer_text(p).s);
    }
    return XF_OK;
}

/* InstanceNormalization: scale and B hold one value per channel. */
xf_status xf_infer_instance_norm(xf_infer_ctx *c)
{
    const xf_shape *x = xf_infer_shape(c, 0);
    xf_status st = channels(c, x);
    if (st == XF_OK)
        st = params_sized(c, &x->dims[1], 1, "one per channel");
    if (st == XF_OK)
        xf_infer_set(c, 0, x);
    return st;
}

/* GroupNormalization: num_groups divides the channels; scale and bias hold
 * one value per group in opsets 18 to 20, one per channel from 21 (either,
 * when the opset is not known). */
xf_status xf_infer_group_norm(xf_infer_ctx *c)
{
    const xf_shape *x = xf_infer_shape(c, 0);
    int64_t groups = c->node->attrs.group;
    xf_status st = channels(c, x);
    if (st != XF_OK)
        return st;
    if (groups < 1 || x->dims[1] % groups != 0)
        return xf_infer_fail(c, XF_ERR_INVALID, "num_groups %" PRId64 " does not divide the %" PRId64 " channels",
                             groups, x->dims[1]);
    if (c->opset >= 21)
        st = params_sized(c, &x->dims[1], 1, "one per channel from opset 21");
    else if (c->opset >= 18)
        st = params_sized(c, &groups, 1, "one per group before opset 21");
    else
        st = params_sized(c, (const int64_t[]){groups, x->dims[1]}, 2, "one per group or one per channel");
    if (st == XF_OK)
        xf_infer_set(c, 0, x);
    return st;
}

/* MeanVarianceNormalization: axes (default [0, 2, 3]) in range, each once. */
xf_status xf_infer_mvn(xf_infer_ctx *c)
{
    const xf_attrs *a = &c->node->attrs;
    const xf_shape *x = xf_infer_shape(c, 0);
    bool mark[XF_MAX_DIMS] = {false};
    if (a->n_axes < 1 || a->n_axes > XF_MAX_DIMS)
        return xf_infer_fail(c, XF_ERR_INVALID, "axes has %d entries", a->n_axes);
    xf_status st = xf_infer_mark_axes(c, a->axes, a->n_axes, x->ndim, true, mark);
    if (st == XF_OK)
        xf_infer_set(c, 0, x);
    return st;
}

/* LRN: a channel axis and a positive size. */
xf_status xf_infer_lrn(xf_infer_ctx *c)
{
    const xf_shape *x = xf_infer_shape(c, 0);
    if (c->node->attrs.lrn_size < 1)
        return xf_infer_fail(c, XF_ERR_INVALID, "size %" PRId64 " must be positive", c->node->attrs.lrn_size);
    xf_status st = channels(c, x);
    if (st == XF_OK)
        xf_infer_set(c, 0, x);
    return st;
}

/* LpNormalization: p is 1 or 2, axis in range. */
xf_status xf_infer_lp_norm(xf_infer_ctx *c)
{
    const xf_shape *x = xf_infer_shape(c, 0);
    int axis;
    if (c->node->attrs.lp_p != 1 && c->node->attrs.lp_p != 2)
        return xf_infer_fail(c, XF_ERR_INVALID, "p %d must be 1 or 2", c->node->attrs.lp_p);
    xf_status st = xf_infer_axis(c, "axis", c->node->attrs.axis, x->ndim, false, &axis);
    if (st == XF_OK)
        xf_infer_set(c, 0, x);
    return st;
}
