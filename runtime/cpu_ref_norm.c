/* cpu_ref normalizations and reductions: BatchNormalization (inference),
 * LayerNormalization, Softmax/LogSoftmax, Reduce*, InstanceNormalization,
 * GroupNormalization, MeanVarianceNormalization, LRN, LpNormalization.
 * Generic over the floating dtypes (reductions also over integers),
 * computed in double. */
#include "xf_rt_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static double ld(const xf_tensor_view *v, int64_t i) { return xf_rt_load_f64(v->dtype, v->data, i); }

/* Mean and (population) variance of the count elements of x from base,
 * in double, the mean first. */
static void block_stats(const xf_tensor_view *x, int64_t base, int64_t count, double *mean, double *var)
{
    double m = 0.0, v = 0.0;
    for (int64_t i = 0; i < count; i++)
        m += ld(x, base + i);
    m /= (double)count;
    for (int64_t i = 0; i < count; i++) {
        double d = ld(x, base + i) - m;
        v += d * d;
    }
    *mean = m;
    *var = v / (double)count;
}
static void st(const xf_tensor_view *v, int64_t i, double x) { xf_rt_store_f64(v->dtype, v->data, i, x); }

/* y = (x - mean) / sqrt(var + epsilon) * scale + bias, per channel (dim 1):
 * mean and var the inputs, or in training mode the batch's (over every dim
 * but the channel's; var the population variance), when outputs 1 and 2
 * get the inputs' moved by momentum: input * momentum + batch's * (1 -
 * momentum). */
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
    int64_t inner = xf_rt_dims_product(&x->shape, 2, x->shape.ndim), numel = xf_rt_numel(x);
    int64_t batch = x->shape.dims[0];
    double *stats = malloc(sizeof *stats * (size_t)(2 * channels + 1));
    if (!stats)
        return xf_error_set(err, XF_ERR_NOMEM, "out of memory");
    for (int64_t c = 0; c < channels; c++) {
        double mean = ld(&in[3], c), var = ld(&in[4], c);
        if (n->attrs.bn_training) {
            double sum = 0, dev = 0;
            for (int64_t b = 0; b < batch; b++)
                for (int64_t i = 0; i < inner; i++)
                    sum += ld(x, (b * channels + c) * inner + i);
            int64_t count = batch * inner;
            mean = count > 0 ? sum / (double)count : 0;
            for (int64_t b = 0; b < batch; b++)
                for (int64_t i = 0; i < inner; i++) {
                    double d = ld(x, (b * channels + c) * inner + i) - mean;
                    dev += d * d;
                }
            var = count > 0 ? dev / (double)count : 0;
            double m = (double)n->attrs.bn_momentum;
            for (int k = 1; k < n->n_outputs && k < 3; k++)
                if (xf_rt_present(&out[k]))
                    st(&out[k], c, ld(&in[2 + k], c) * m + (k == 1 ? mean : var) * (1 - m));
        }
        stats[2 * c] = mean;
        stats[2 * c + 1] = 1.0 / sqrt(var + (double)n->attrs.epsilon);
    }
    for (int64_t i = 0; i < numel; i++) {
        int64_t c = i / inner % channels;
        st(y, i, (ld(x, i) - stats[2 * c]) * stats[2 * c + 1] * ld(&in[1], c) + ld(&in[2], c));
    }
    free(stats);
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
    int64_t outer = xf_rt_dims_product(&x->shape, 0, axis), inner = xf_shape_numel(&norm);
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
        double mean, var;
        block_stats(x, base, inner, &mean, &var);
        double inv = 1.0 / sqrt(var + (double)n->attrs.epsilon);
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
    int64_t outer = xf_rt_dims_product(&x->shape, 0, axis), len, inner;
    if (n->attrs.softmax_legacy) {
        len = xf_rt_dims_product(&x->shape, axis, rank);
        inner = 1;
    } else {
        len = x->shape.dims[axis];
        inner = xf_rt_dims_product(&x->shape, axis + 1, rank);
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

/* The strides that take an element of shape s to its element of the
 * reduction over the axes marked in reduced[] (s with those axes as 1,
 * dense, the reduced axes at stride 0); returns that reduction's size. */
static int64_t reduce_strides(const xf_shape *s, const bool *reduced, int64_t *strides)
{
    xf_shape kept = *s;
    for (int d = 0; d < s->ndim; d++)
        if (reduced[d])
            kept.dims[d] = 1;
    xf_rt_dense_strides(&kept, strides);
    for (int d = 0; d < s->ndim; d++)
        if (reduced[d])
            strides[d] = 0;
    return xf_shape_numel(&kept);
}

/* The elements of x each output element folds, when those are runs of
 * `inner` consecutive ones (every reduced dim after every kept one that is
 * more than 1): 0 otherwise. */
static int64_t reduce_inner_run(const xf_shape *s, const int64_t *strides)
{
    int d = s->ndim;
    int64_t inner = 1;
    for (; d > 0 && strides[d - 1] == 0; d--)
        inner *= s->dims[d - 1];
    for (int e = 0; e < d; e++)
        if (strides[e] == 0 && s->dims[e] > 1)
            return 0;
    return inner;
}

/* The updates reduce_pass makes, on r from v (a double). */
#define RUN_MAX(r, v) r = (v) > r || isnan(v) ? (v) : r
#define RUN_MIN(r, v) r = (v) < r || isnan(v) ? (v) : r
#define RUN_L1(r, v) r += fabs(v)
#define RUN_SQUARE(r, v) r += (v) * (v)
#define RUN_SUM(r, v) r += (v)

/* acc[o] folds the run x[o * inner ..][0..inner) by STEP, for o in
 * [0, n_out): four runs at a time, each in its own order, so that their
 * chains of additions overlap. */
#define REDUCE_RUNS(STEP)                                                                                          \
    do {                                                                                                           \
        int64_t o = 0;                                                                                             \
        for (; o + 4 <= n_out; o += 4, x += 4 * inner) {                                                           \
            double r0 = acc[o], r1 = acc[o + 1], r2 = acc[o + 2], r3 = acc[o + 3];                                 \
            for (int64_t j = 0; j < inner; j++) {                                                                  \
                double v0 = x[j], v1 = x[inner + j], v2 = x[2 * inner + j], v3 = x[3 * inner + j];                 \
                STEP(r0, v0);                                                                                      \
                STEP(r1, v1);                                                                                      \
                STEP(r2, v2);                                                                                      \
                STEP(r3, v3);                                                                                      \
            }                                                                                                      \
            acc[o] = r0;                                                                                           \
            acc[o + 1] = r1;                                                                                       \
            acc[o + 2] = r2;                                                                                       \
            acc[o + 3] = r3;                                                                                       \
        }                                                                                                          \
        for (; o < n_out; o++, x += inner) {                                                                       \
            double r = acc[o];                                                                                     \
            for (int64_t j = 0; j < inner; j++) {                                                                  \
                double v = x[j];                                                                                   \
                STEP(r, v);                                                                                        \
            }                                                                                                      \
            acc[o] = r;                                                                                            \
        }                                                                                                          \
    } while (0)

/* reduce_pass over float runs (reduce_inner_run): the same updates in the
 * same order, without an iterator and a load by dtype per element
 * (RT-DETR's sums of 12 samples: 4 ns an element before).  False when op
 * is not one of these. */
static bool reduce_runs_f32(xf_op op, const float *x, int64_t inner, int64_t n_out, double *acc)
{
    switch (op) {
    case XF_OP_REDUCE_MAX: REDUCE_RUNS(RUN_MAX); return true;
    case XF_OP_REDUCE_MIN: REDUCE_RUNS(RUN_MIN); return true;
    case XF_OP_REDUCE_L1: REDUCE_RUNS(RUN_L1); return true;
    case XF_OP_REDUCE_L2:
    case XF_OP_REDUCE_SUM_SQUARE: REDUCE_RUNS(RUN_SQUARE); return true;
    case XF_OP_REDUCE_SUM:
    case XF_OP_REDUCE_MEAN: REDUCE_RUNS(RUN_SUM); return true;
    default: return false;
    }
}

/* Folds every element of x into acc[o], o its output element (strides:
 * the output's, 0 on the reduced axes), as Reduce`op` does; shift: what
 * ReduceLogSumExp subtracts before exp. */
static void reduce_pass(xf_op op, const xf_tensor_view *x, const int64_t *strides, double *acc,
                        const double *shift)
{
    int64_t inner = x->dtype == XF_DT_FLOAT ? reduce_inner_run(&x->shape, strides) : 0;
    if (inner > 0 && reduce_runs_f32(op, x->data, inner, xf_rt_numel(x) / inner, acc))
        return;
    xf_rt_iter it;
    xf_rt_iter_init(&it, &x->shape);
    xf_rt_iter_add(&it, strides, 0);
    for (int64_t i = 0, n_in = xf_rt_numel(x); i < n_in; i++, xf_rt_iter_next(&it)) {
        double v = ld(x, i), *r = &acc[it.off[0]];
        switch (op) {
        case XF_OP_REDUCE_MAX: *r = v > *r || isnan(v) ? v : *r; break;
        case XF_OP_REDUCE_MIN: *r = v < *r || isnan(v) ? v : *r; break;
        case XF_OP_REDUCE_PROD: *r *= v; break;
        case XF_OP_REDUCE_L1: *r += fabs(v); break;
        case XF_OP_REDUCE_L2:
        case XF_OP_REDUCE_SUM_SQUARE: *r += v * v; break;
        case XF_OP_REDUCE_LOG_SUM_EXP: *r += exp(v - shift[it.off[0]]); break;
        default: *r += v; break;
        }
    }
}

/* Reduce{Mean,Sum,Max,Min,Prod,L1,L2,LogSum,LogSumExp,SumSquare}.  Axes
 * come from the attribute (older opsets) or input 1 (ReduceSum 13, all of
 * them from 18); none means all axes, or none at all with
 * noop_with_empty_axes.  keepdims does not change the order of the output
 * elements, only the output's shape.  An empty input reduces to what the
 * sums give: 0, and -inf for the logarithms. */
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
    /* With noop_with_empty_axes and no axes nothing is reduced, but the
     * elementwise part of the op still applies (ReduceSumSquare squares):
     * every element is a set of its own. */
    bool identity = n->op == XF_OP_REDUCE_MEAN || n->op == XF_OP_REDUCE_SUM || n->op == XF_OP_REDUCE_MAX ||
                    n->op == XF_OP_REDUCE_MIN || n->op == XF_OP_REDUCE_PROD;
    if (n_axes == 0 && a->noop_with_empty_axes && identity) {
        if (xf_rt_bytes(y) != xf_rt_bytes(x))
            return xf_rt_bad_node(err, n, "input and output sizes differ");
        if (xf_rt_bytes(y))
            memcpy(y->data, x->data, xf_rt_bytes(y));
        return XF_OK;
    }
    for (int d = 0; n_axes == 0 && !a->noop_with_empty_axes && d < rank; d++)
        reduced[d] = true;
    int64_t strides[XF_MAX_DIMS];
    int64_t n_out = reduce_strides(&x->shape, reduced, strides), n_in = xf_rt_numel(x);
    if (xf_rt_numel(y) != n_out)
        return xf_rt_bad_node(err, n, "output size does not match the reduced shape");

    /* an empty set's max and min; of bools (opset 20: any, all) false and true */
    bool flags = x->dtype == XF_DT_BOOL;
    double init = n->op == XF_OP_REDUCE_MAX    ? (flags ? 0.0 : -INFINITY)
                  : n->op == XF_OP_REDUCE_MIN  ? (flags ? 1.0 : INFINITY)
                  : n->op == XF_OP_REDUCE_PROD ? 1.0
                                               : 0.0;
    /* ReduceLogSumExp sums exp(x - shift), shift being the largest element
     * of the set (0 when that is not finite), as ONNX's reference does */
    bool lse = n->op == XF_OP_REDUCE_LOG_SUM_EXP;
    double *acc = malloc(sizeof *acc * (size_t)(n_out > 0 ? n_out : 1) * (lse ? 2 : 1));
    if (!acc)
        return xf_error_set(err, XF_ERR_NOMEM, "out of memory in %s", xf_op_name(n->op));
    double *shift = lse ? acc + n_out : NULL;
    for (int64_t i = 0; i < n_out; i++)
        acc[i] = init;
    if (lse) {
        for (int64_t i = 0; i < n_out; i++)
            shift[i] = -INFINITY;
        reduce_pass(XF_OP_REDUCE_MAX, x, strides, shift, NULL);
        for (int64_t i = 0; i < n_out; i++)
            shift[i] = isfinite(shift[i]) ? shift[i] : 0.0;
    }
    reduce_pass(n->op, x, strides, acc, shift);
    double count = n_out ? (double)(n_in / n_out) : 0.0;
    for (int64_t i = 0; i < n_out; i++) {
        double r = acc[i];
        switch (n->op) {
        case XF_OP_REDUCE_MEAN: r /= count; break;
        case XF_OP_REDUCE_L2: r = sqrt(r); break;
        case XF_OP_REDUCE_LOG_SUM: r = log(r); break;
        case XF_OP_REDUCE_LOG_SUM_EXP: r = log(r) + shift[i]; break;
        default: break;
        }
        st(y, i, r);
    }
    free(acc);
    return XF_OK;
}

/* InstanceNormalization and GroupNormalization: x [N, C, ...] in groups of
 * C / G consecutive channels (InstanceNormalization: G = C), each
 * normalized over its elements: y = scale * (x - mean) / sqrt(var +
 * epsilon) + bias, var being the mean squared deviation, scale and bias
 * per channel, or (GroupNormalization before opset 21) per group. */
xf_status xf_ref_group_norm(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err)
{
    const xf_tensor_view *x = &in[0], *y = &out[0];
    if (x->shape.ndim < 2)
        return xf_rt_bad_node(err, n, "input needs batch and channel dimensions");
    int64_t chans = x->shape.dims[1], inner = xf_rt_dims_product(&x->shape, 2, x->shape.ndim);
    int64_t groups = n->op == XF_OP_GROUP_NORM ? n->attrs.group : chans, n_par = xf_rt_numel(&in[1]);
    if (xf_rt_numel(x) == 0)
        return XF_OK;
    if (groups < 1 || chans % groups != 0)
        return xf_rt_bad_node(err, n, "%lld groups do not divide %lld channels", (long long)groups,
                              (long long)chans);
    if ((n_par != chans && n_par != groups) || xf_rt_numel(&in[2]) != n_par)
        return xf_rt_bad_node(err, n, "scale and bias have %lld and %lld elements for %lld channels in %lld groups",
                              (long long)n_par, (long long)xf_rt_numel(&in[2]), (long long)chans, (long long)groups);
    int64_t per = chans / groups, block = per * inner;
    for (int64_t base = 0; base < xf_rt_numel(x); base += block) {
        int64_t g = base / block % groups;
        double mean, var;
        block_stats(x, base, block, &mean, &var);
        double sd = sqrt(var + (double)n->attrs.epsilon);
        for (int64_t i = 0; i < block; i++) {
            int64_t p = n_par == chans ? g * per + i / inner : g;
            st(y, base + i, ld(&in[1], p) * (ld(x, base + i) - mean) / sd + ld(&in[2], p));
        }
    }
    return XF_OK;
}

/* MeanVarianceNormalization: (x - mean) / (sqrt(var) + 1e-9) over the axes,
 * as ONNX's function body computes it (its variance, E[x^2] - E[x]^2, taken
 * here as the mean squared deviation, which cannot come out negative). */
xf_status xf_ref_mvn(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err)
{
    const xf_tensor_view *x = &in[0], *y = &out[0];
    const xf_attrs *a = &n->attrs;
    bool reduced[XF_MAX_DIMS] = {false};
    for (int i = 0; i < a->n_axes; i++) {
        int ax = xf_rt_axis(a->axes[i], x->shape.ndim);
        if (ax < 0)
            return xf_rt_bad_node(err, n, "axis %lld out of range", (long long)a->axes[i]);
        reduced[ax] = true;
    }
    int64_t strides[XF_MAX_DIMS];
    int64_t n_stat = reduce_strides(&x->shape, reduced, strides), numel = xf_rt_numel(x);
    if (numel == 0)
        return XF_OK;
    double *mean = calloc((size_t)n_stat * 2, sizeof *mean);
    if (!mean)
        return xf_error_set(err, XF_ERR_NOMEM, "out of memory in %s", xf_op_name(n->op));
    double *var = mean + n_stat, count = (double)(numel / n_stat);
    reduce_pass(XF_OP_REDUCE_SUM, x, strides, mean, NULL);
    for (int64_t o = 0; o < n_stat; o++)
        mean[o] /= count;
    xf_rt_iter it;
    xf_rt_iter_init(&it, &x->shape);
    xf_rt_iter_add(&it, strides, 0);
    for (int64_t i = 0; i < numel; i++, xf_rt_iter_next(&it)) {
        double d = ld(x, i) - mean[it.off[0]];
        var[it.off[0]] += d * d;
    }
    xf_rt_iter_init(&it, &x->shape);
    xf_rt_iter_add(&it, strides, 0);
    for (int64_t i = 0; i < numel; i++, xf_rt_iter_next(&it))
        st(y, i, (ld(x, i) - mean[it.off[0]]) / (sqrt(var[it.off[0]] / count) + 1e-9));
    free(mean);
    return XF_OK;
}

/* LRN across channels: y = x / (bias + alpha / size * s)^beta, s the sum
 * of squares over channels c - floor((size - 1) / 2) to c + ceil((size -
 * 1) / 2) that exist. */
xf_status xf_ref_lrn(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err)
{
    const xf_tensor_view *x = &in[0], *y = &out[0];
    const xf_attrs *a = &n->attrs;
    if (x->shape.ndim < 2 || a->lrn_size < 1)
        return xf_rt_bad_node(err, n, "input needs a channel dimension and size (%lld) must be positive",
                              (long long)a->lrn_size);
    int64_t chans = x->shape.dims[1], inner = xf_rt_dims_product(&x->shape, 2, x->shape.ndim);
    int64_t below = (a->lrn_size - 1) / 2, above = a->lrn_size - 1 - below;
    double scale = (double)a->alpha / (double)a->lrn_size;
    for (int64_t i = 0; i < xf_rt_numel(x); i++) {
        int64_t c = i / inner % chans, first = c - below < 0 ? 0 : c - below;
        int64_t last = c + above >= chans ? chans - 1 : c + above;
        double sum = 0.0;
        for (int64_t k = first; k <= last; k++) {
            double v = ld(x, i + (k - c) * inner);
            sum += v * v;
        }
        st(y, i, ld(x, i) / pow((double)a->lrn_bias + scale * sum, (double)a->beta));
    }
    return XF_OK;
}

/* LpNormalization: x divided by its L1 (p = 1) or L2 (p = 2) norm along
 * axis; where that norm is 0 the result is 0 (as ONNX's reference gives). */
xf_status xf_ref_lp_norm(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err)
{
    const xf_tensor_view *x = &in[0], *y = &out[0];
    int rank = x->shape.ndim, axis = xf_rt_axis(n->attrs.axis, rank), p = n->attrs.lp_p;
    if (axis < 0 || (p != 1 && p != 2))
        return xf_rt_bad_node(err, n, "axis %lld or p %d is not valid for rank %d", (long long)n->attrs.axis, p,
                              rank);
    int64_t outer = xf_rt_dims_product(&x->shape, 0, axis), len = x->shape.dims[axis];
    int64_t inner = xf_rt_dims_product(&x->shape, axis + 1, rank);
    for (int64_t o = 0; o < outer; o++)
        for (int64_t j = 0; j < inner; j++) {
            int64_t base = o * len * inner + j;
            double norm = 0.0;
            for (int64_t i = 0; i < len; i++) {
                double v = ld(x, base + i * inner);
                norm += p == 1 ? fabs(v) : v * v;
            }
            norm = p == 1 ? norm : sqrt(norm);
            for (int64_t i = 0; i < len; i++)
                st(y, base + i * inner, norm == 0.0 ? 0.0 : ld(x, base + i * inner) / norm);
        }
    return XF_OK;
}
