/* cpu_ref normalizations and reductions: BatchNormalization (inference),
 * LayerNormalization, Softmax/LogSoftmax, Reduce*.  Generic over the
 * floating dtypes (reductions also over integers), computed in double. */
#include "xf_rt_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int64_t prod_dims(const xf_shape *s, int from, int to)
{
    int64_t p = 1;
    for (int d = from; d < to; d++)
        p *= s->dims[d];
    return p;
}

static double ld(const xf_tensor_view *v, int64_t i) { return xf_rt_load_f64(v->dtype, v->data, i); }
static void st(const xf_tensor_view *v, int64_t i, double x) { xf_rt_store_f64(v->dtype, v->data, i, x); }

/* y = (x - mean) / sqrt(var + epsilon) * scale + bias, per channel (dim 1). */
xf_status xf_ref_batch_norm(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out,
                            xf_error *err)
{
    const xf_tensor_view *x = &in[0], *y = &out[0];
    if (x->shape.ndim < 2)
        return xf_rt_bad_node(err, n, "input needs batch and channel dimensions");
    int64_t channels = x->shape.dims[1];
    for (int k = 1; k < 5; k++)
        if (xf_rt_numel(&in[k]) != channels)
            return xf_rt_bad_node(err, n, "input %d has %lld elements for %lld channels", k,
                                  (long long)xf_rt_numel(&in[k]), (long long)channels);
    int64_t inner = prod_dims(&x->shape, 2, x->shape.ndim), numel = xf_rt_numel(x);
    for (int64_t i = 0; i < numel; i++) {
        int64_t c = i / inner % channels;
        double inv = 1.0 / sqrt(ld(&in[4], c) + (double)n->attrs.epsilon);
        st(y, i, (ld(x, i) - ld(&in[3], c)) * inv * ld(&in[1], c) + ld(&in[2], c));
    }
    return XF_OK;
}

/* Normalizes over the dimensions from axis on; scale and bias broadcast to
 * those dimensions.  Optional outputs 1 and 2 receive the mean and the
 * inverse standard deviation. */
xf_status xf_ref_layer_norm(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out,
                            xf_error *err)
{
    const xf_tensor_view *x = &in[0], *y = &out[0];
    const xf_tensor_view *bias = n->n_inputs > 2 && xf_rt_present(&in[2]) ? &in[2] : NULL;
    const xf_tensor_view *mean_out = n->n_outputs > 1 && xf_rt_present(&out[1]) ? &out[1] : NULL;
    const xf_tensor_view *inv_out = n->n_outputs > 2 && xf_rt_present(&out[2]) ? &out[2] : NULL;
    int axis = xf_rt_axis(n->attrs.axis, x->shape.ndim);
    if (axis < 0)
        return xf_rt_bad_node(err, n, "axis %lld out of range", (long long)n->attrs.axis);
    xf_shape norm = xf_shape_make(x->shape.ndim - axis, x->shape.dims + axis);
    int64_t outer = prod_dims(&x->shape, 0, axis), inner = xf_shape_numel(&norm);
    if (!xf_rt_broadcastable(&in[1].shape, &norm) || (bias && !xf_rt_broadcastable(&bias->shape, &norm)))
        return xf_rt_bad_node(err, n, "scale or bias does not broadcast to the normalized shape");
    if ((mean_out && xf_rt_numel(mean_out) != outer) || (inv_out && xf_rt_numel(inv_out) != outer))
        return xf_rt_bad_node(err, n, "mean/inv_std_dev outputs have the wrong size");
    int64_t s_scale[XF_MAX_DIMS], s_bias[XF_MAX_DIMS] = {0};
    xf_rt_broadcast_strides(&in[1].shape, &norm, s_scale);
    if (bias)
        xf_rt_broadcast_strides(&bias->shape, &norm, s_bias);
    for (int64_t o = 0; o < outer; o++) {
        int64_t base = o * inner;
        double mean = 0.0, var = 0.0;
        for (int64_t i = 0; i < inner; i++)
            mean += ld(x, base + i);
        mean /= (double)inner;
        for (int64_t i = 0; i < inner; i++) {
            double d = ld(x, base + i) - mean;
            var += d * d;
        }
        double inv = 1.0 / sqrt(var / (double)inner + (double)n->attrs.epsilon);
        xf_rt_iter it;
        xf_rt_iter_init(&it, &norm);
        xf_rt_iter_add(&it, s_scale, 0);
        xf_rt_iter_add(&it, s_bias, 0);
        for (int64_t i = 0; i < inner; i++, xf_rt_iter_next(&it))
            st(y, base + i, (ld(x, base + i) - mean) * inv * ld(&in[1], it.off[0]) +
                                (bias ? ld(bias, it.off[1]) : 0.0));
        if (mean_out)
            st(mean_out, o, mean);
        if (inv_out)
            st(inv_out, o, inv);
    }
    return XF_OK;
}

/* Softmax and LogSoftmax.  Opset >= 13 normalizes along `axis`; the legacy
 * form flattens the input to 2-D at axis and normalizes each row, which is
 * the same loop with the row as one long axis. */
xf_status xf_ref_softmax(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out,
                         xf_error *err)
{
    const xf_tensor_view *x = &in[0], *y = &out[0];
    int rank = x->shape.ndim;
    int axis = xf_rt_axis(n->attrs.axis, rank);
    if (axis < 0)
        return xf_rt_bad_node(err, n, "axis %lld out of range for rank %d", (long long)n->attrs.axis, rank);
    int64_t outer = prod_dims(&x->shape, 0, axis), len, inner;
    if (n->attrs.softmax_legacy) {
        len = prod_dims(&x->shape, axis, rank);
        inner = 1;
    } else {
        len = x->shape.dims[axis];
        inner = prod_dims(&x->shape, axis + 1, rank);
    }
    bool log_form = n->op == XF_OP_LOG_SOFTMAX;
    for (int64_t o = 0; o < outer; o++)
        for (int64_t j = 0; j < inner; j++) {
            int64_t base = o * len * inner + j;
            double mx = -INFINITY, sum = 0.0;
            for (int64_t i = 0; i < len; i++)
                mx = fmax(mx, ld(x, base + i * inner));
            for (int64_t i = 0; i < len; i++)
                sum += exp(ld(x, base + i * inner) - mx);
            for (int64_t i = 0; i < len; i++) {
                double d = ld(x, base + i * inner) - mx;
                st(y, base + i * inner, log_form ? d - log(sum) : exp(d) / sum);
            }
        }
    return XF_OK;
}

/* Reduce{Mean,Sum,Max,Min,Prod}.  Axes come from the attribute (older
 * opsets) or input 1 (ReduceSum 13, all of them from 18); none means all
 * axes, or nothing at all with noop_with_empty_axes.  keepdims does not
 * change the order of the output elements, only the output's shape. */
xf_status xf_ref_reduce(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out,
                        xf_error *err)
{
    const xf_tensor_view *x = &in[0], *y = &out[0];
    const xf_attrs *a = &n->attrs;
    int rank = x->shape.ndim;
    bool reduced[XF_MAX_DIMS] = {false};
    int n_axes = 0;
    if (a->has_axes) {
        for (int i = 0; i < a->n_axes; i++, n_axes++) {
            int ax = xf_rt_axis(a->axes[i], rank);
            if (ax < 0)
                return xf_rt_bad_node(err, n, "axis %lld out of range", (long long)a->axes[i]);
            reduced[ax] = true;
        }
    } else if (n->n_inputs > 1 && xf_rt_present(&in[1])) {
        for (int64_t i = 0; i < xf_rt_numel(&in[1]); i++, n_axes++) {
            int64_t v = xf_rt_load_i64(in[1].dtype, in[1].data, i);
            int ax = xf_rt_axis(v, rank);
            if (ax < 0)
                return xf_rt_bad_node(err, n, "axis %lld out of range", (long long)v);
            reduced[ax] = true;
        }
    }
    if (n_axes == 0) {
        if (a->noop_with_empty_axes) {
            if (xf_rt_bytes(y) != xf_rt_bytes(x))
                return xf_rt_bad_node(err, n, "input and output sizes differ");
            if (xf_rt_bytes(y))
                memcpy(y->data, x->data, xf_rt_bytes(y));
            return XF_OK;
        }
        for (int d = 0; d < rank; d++)
            reduced[d] = true;
    }
    xf_shape kept = x->shape;
    for (int d = 0; d < rank; d++)
        if (reduced[d])
            kept.dims[d] = 1;
    int64_t n_out = xf_shape_numel(&kept), n_in = xf_rt_numel(x);
    if (xf_rt_numel(y) != n_out)
        return xf_rt_bad_node(err, n, "output size does not match the reduced shape");
    int64_t strides[XF_MAX_DIMS];
    xf_rt_dense_strides(&kept, strides);
    for (int d = 0; d < rank; d++)
        if (reduced[d])
            strides[d] = 0;

    double init = n->op == XF_OP_REDUCE_MAX    ? -INFINITY
                  : n->op == XF_OP_REDUCE_MIN  ? INFINITY
                  : n->op == XF_OP_REDUCE_PROD ? 1.0
                                               : 0.0;
    double *acc = malloc(sizeof *acc * (size_t)(n_out > 0 ? n_out : 1));
    if (!acc)
        return xf_error_set(err, XF_ERR_NOMEM, "out of memory in %s", xf_op_name(n->op));
    for (int64_t i = 0; i < n_out; i++)
        acc[i] = init;
    xf_rt_iter it;
    xf_rt_iter_init(&it, &x->shape);
    xf_rt_iter_add(&it, strides, 0);
    for (int64_t i = 0; i < n_in; i++, xf_rt_iter_next(&it)) {
        double v = ld(x, i), *r = &acc[it.off[0]];
        switch (n->op) {
        case XF_OP_REDUCE_MAX: *r = v > *r || isnan(v) ? v : *r; break;
        case XF_OP_REDUCE_MIN: *r = v < *r || isnan(v) ? v : *r; break;
        case XF_OP_REDUCE_PROD: *r *= v; break;
        default: *r += v; break;
        }
    }
    double count = n_out ? (double)(n_in / n_out) : 0.0;
    for (int64_t i = 0; i < n_out; i++)
        st(y, i, n->op == XF_OP_REDUCE_MEAN ? acc[i] / count : acc[i]);
    free(acc);
    return XF_OK;
}
