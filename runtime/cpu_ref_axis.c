/* cpu_ref ops that run along one axis: ArgMax/ArgMin, Hardmax, CumSum and
 * CumProd.
 * Each sees its input as outer x len x inner around the axis and walks the
 * len elements of every (outer, inner) line. */
#include "xf_rt_internal.h"

#include <math.h>

typedef struct line_geometry {
    int64_t outer, len, inner;
} line_geometry;

/* The lines of x along axis; legacy: along everything from axis on, as one
 * line (Hardmax before opset 13 coerces to 2-D at axis). */
static line_geometry lines_at(const xf_shape *x, int axis, bool legacy)
{
    line_geometry l = {xf_rt_dims_product(x, 0, axis), xf_rt_dims_product(x, axis, axis + 1),
                       xf_rt_dims_product(x, axis + 1, x->ndim)};
    if (legacy) {
        l.len *= l.inner;
        l.inner = 1;
    }
    return l;
}

/* Index of the extreme of the len elements at base, step inner apart, as
 * numpy's argmax (argmin) finds it: the first of equal extremes (the last
 * with last), NaN counting as the extreme. */
static int64_t extreme_index(const xf_tensor_view *x, int64_t base, int64_t len, int64_t inner, bool smallest,
                             bool last)
{
    int64_t best = 0;
    double b = xf_rt_load_f64(x->dtype, x->data, base);
    bool integral = xf_rt_is_integral(x->dtype);
    int64_t bi = integral ? xf_rt_load_i64(x->dtype, x->data, base) : 0;
    for (int64_t i = 1; i < len; i++) {
        int64_t at = base + i * inner;
        bool take;
        if (integral) { /* exact beyond 2^53 */
            int64_t v = xf_rt_load_i64(x->dtype, x->data, at);
            if (x->dtype == XF_DT_UINT64)
                take = smallest ? (uint64_t)v < (uint64_t)bi : (uint64_t)v > (uint64_t)bi;
            else
                take = smallest ? v < bi : v > bi;
            take = take || (last && v == bi);
            bi = take ? v : bi;
        } else {
            double v = xf_rt_load_f64(x->dtype, x->data, at);
            if (isnan(b))
                take = last && isnan(v);
            else
                take = isnan(v) || (smallest ? v < b : v > b) || (last && v == b);
            b = take ? v : b;
        }
        best = take ? i : best;
    }
    return best;
}

/* ArgMax and ArgMin: int64 indices along axis; keepdims only shapes the
 * output, not the order of its elements. */
xf_status xf_ref_arg_reduce(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err)
{
    const xf_tensor_view *x = &in[0], *y = &out[0];
    int axis = xf_rt_axis(n->attrs.axis, x->shape.ndim);
    if (axis < 0)
        return xf_rt_bad_node(err, n, "axis %lld out of range for rank %d", (long long)n->attrs.axis,
                              x->shape.ndim);
    line_geometry l = lines_at(&x->shape, axis, false);
    if (xf_rt_numel(y) != l.outer * l.inner)
        return xf_rt_bad_node(err, n, "output size does not match the reduced shape");
    if (l.len == 0 && l.outer * l.inner > 0)
        return xf_rt_bad_node(err, n, "axis %d is empty: there is no %s", axis,
                              n->op == XF_OP_ARG_MIN ? "minimum" : "maximum");
    int64_t *idx = y->data;
    for (int64_t o = 0; o < l.outer; o++)
        for (int64_t j = 0; j < l.inner; j++)
            idx[o * l.inner + j] = extreme_index(x, o * l.len * l.inner + j, l.len, l.inner, n->op == XF_OP_ARG_MIN,
                                                 n->attrs.select_last_index != 0);
    return XF_OK;
}

/* Hardmax: 1 at the first maximum of each line (NaN counting as the
 * maximum, as numpy's argmax does), 0 elsewhere. */
xf_status xf_ref_hardmax(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err)
{
    const xf_tensor_view *x = &in[0], *y = &out[0];
    int axis = xf_rt_axis(n->attrs.axis, x->shape.ndim);
    if (axis < 0)
        return xf_rt_bad_node(err, n, "axis %lld out of range for rank %d", (long long)n->attrs.axis,
                              x->shape.ndim);
    line_geometry l = lines_at(&x->shape, axis, n->attrs.softmax_legacy);
    for (int64_t o = 0; o < l.outer && l.len > 0; o++)
        for (int64_t j = 0; j < l.inner; j++) {
            int64_t base = o * l.len * l.inner + j, hot = extreme_index(x, base, l.len, l.inner, false, false);
            for (int64_t i = 0; i < l.len; i++)
                xf_rt_store_f64(y->dtype, y->data, base + i * l.inner, i == hot ? 1.0 : 0.0);
        }
    return XF_OK;
}

/* CumSum (CumProd) along the axis input's value: each element the sum
 * (product) of those before it (from the end with reverse), itself
 * included unless exclusive.  Integers add and multiply exactly (wrapping
 * as the dtype does), floats in double. */
xf_status xf_ref_cumsum(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err)
{
    const xf_tensor_view *x = &in[0], *y = &out[0];
    if (xf_rt_numel(&in[1]) != 1)
        return xf_rt_bad_node(err, n, "axis must hold one value, got %lld", (long long)xf_rt_numel(&in[1]));
    int64_t axis_value = xf_rt_load_i64(in[1].dtype, in[1].data, 0);
    int axis = xf_rt_axis(axis_value, x->shape.ndim);
    if (axis < 0)
        return xf_rt_bad_node(err, n, "axis %lld out of range for rank %d", (long long)axis_value, x->shape.ndim);
    line_geometry l = lines_at(&x->shape, axis, false);
    bool integral = xf_rt_is_integral(x->dtype), exclusive = n->attrs.cumsum_exclusive != 0;
    bool prod = n->op == XF_OP_CUM_PROD;
    for (int64_t o = 0; o < l.outer; o++)
        for (int64_t j = 0; j < l.inner; j++) {
            uint64_t iacc = prod;
            double facc = prod;
            for (int64_t k = 0; k < l.len; k++) {
                int64_t i = n->attrs.cumsum_reverse ? l.len - 1 - k : k, at = (o * l.len + i) * l.inner + j;
                if (integral) {
                    uint64_t v = (uint64_t)xf_rt_load_i64(x->dtype, x->data, at), with = prod ? iacc * v : iacc + v;
                    xf_rt_store_i64(y->dtype, y->data, at, (int64_t)(exclusive ? iacc : with));
                    iacc = with;
                } else { /* the first sum (product) is the element itself, -0 kept */
                    double v = xf_rt_load_f64(x->dtype, x->data, at), before = facc;
                    facc = k == 0 ? v : prod ? facc * v : facc + v;
                    xf_rt_store_f64(y->dtype, y->data, at, exclusive ? before : facc);
                }
            }
        }
    return XF_OK;
}
