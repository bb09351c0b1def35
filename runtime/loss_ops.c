/* ONNX's loss ops on the host (dispatched by ml_ops.c), for the models
 * that carry their loss into inference:
 *   NegativeLogLikelihoodLoss(input [N, C, d...], target [N, d...], weight [C])
 *     loss = -input[n, target, d...] * weight[target], 0 where target is
 *     ignore_index;
 *   SoftmaxCrossEntropyLoss(scores, labels, weights) -> (loss, log_prob)
 *     the same of log_prob = LogSoftmax(scores) along C.
 * reduction "none" keeps [N, d...]; "sum" adds; "mean" divides the sum by
 * the weights of the targets counted (their number without weights).
 * Computed in double, written in the input's type. */
#include "ml_ops.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { RED_NONE, RED_SUM, RED_MEAN };

xf_status xf_ml_loss_check(const xf_node *n, xf_error *err)
{
    const char *r = xf_ml_string(n, "reduction", "mean");
    if (strcmp(r, "none") != 0 && strcmp(r, "sum") != 0 && strcmp(r, "mean") != 0)
        return xf_ml_fail(n, err, XF_ERR_INVALID, "reduction '%s' is none of none, sum, mean", r);
    return XF_OK;
}

/* log_prob = LogSoftmax(x) along dim 1 (C), x [N, C, inner]. */
static void log_softmax(const xf_tensor *x, double *lp, int64_t N, int64_t C, int64_t inner)
{
    for (int64_t b = 0; b < N; b++)
        for (int64_t i = 0; i < inner; i++) {
            int64_t base = b * C * inner + i;
            double mx = -INFINITY, sum = 0;
            for (int64_t c = 0; c < C; c++)
                mx = fmax(mx, xf_rt_load_f64(x->dtype, x->data, base + c * inner));
            for (int64_t c = 0; c < C; c++)
                sum += exp(xf_rt_load_f64(x->dtype, x->data, base + c * inner) - mx);
            double lse = mx + log(sum);
            for (int64_t c = 0; c < C; c++)
                lp[base + c * inner] = xf_rt_load_f64(x->dtype, x->data, base + c * inner) - lse;
        }
}

xf_status xf_ml_loss_run(const xf_node *n, bool softmax, xf_tensor *const *in, xf_tensor **out, xf_error *err)
{
    const xf_tensor *x = in[0], *t = in[1], *w = n->n_inputs > 2 ? in[2] : NULL;
    int rank = x->shape.ndim;
    if (!xf_dtype_is_float(x->dtype) || rank < 2 || t->shape.ndim != rank - 1 || !xf_rt_is_integral(t->dtype))
        return xf_ml_fail(n, err, XF_ERR_INVALID,
                          "takes floating-point input [N, C, ...] and integer target [N, ...], not %s of rank %d "
                          "and %s of rank %d",
                          xf_dtype_name(x->dtype), rank, xf_dtype_name(t->dtype), t->shape.ndim);
    int64_t N = x->shape.dims[0], C = x->shape.dims[1], inner = 1;
    for (int d = 2; d < rank; d++) {
        if (t->shape.dims[d - 1] != x->shape.dims[d])
            return xf_ml_fail(n, err, XF_ERR_INVALID, "target dim %d is %" PRId64 ", input dim %d is %" PRId64, d - 1,
                              t->shape.dims[d - 1], d, x->shape.dims[d]);
        inner *= x->shape.dims[d];
    }
    if (t->shape.dims[0] != N)
        return xf_ml_fail(n, err, XF_ERR_INVALID, "target has %" PRId64 " rows, input %" PRId64, t->shape.dims[0], N);
    if (w && (w->shape.ndim != 1 || w->shape.dims[0] != C || w->dtype != x->dtype))
        return xf_ml_fail(n, err, XF_ERR_INVALID, "weight must be [%" PRId64 "] of the input's type", C);
    const char *rs = xf_ml_string(n, "reduction", "mean");
    int red = strcmp(rs, "none") == 0 ? RED_NONE : strcmp(rs, "sum") == 0 ? RED_SUM : RED_MEAN;
    int64_t count;
    const int64_t *ii = xf_ml_ints(n, "ignore_index", &count);
    bool has_ignore = ii && count == 1;
    int64_t ignore = has_ignore ? ii[0] : 0;

    int64_t numel = xf_tensor_numel(x);
    double *lp = softmax ? malloc(sizeof *lp * (size_t)(numel + 1)) : NULL;
    xf_shape ls = red == RED_NONE ? t->shape : (xf_shape){0};
    xf_tensor *loss = xf_tensor_create(x->dtype, &ls);
    xf_tensor *logp = softmax && n->n_outputs > 1 && n->outputs[1] >= 0 ? xf_tensor_create(x->dtype, &x->shape) : NULL;
    if ((softmax && !lp) || !loss || (softmax && n->n_outputs > 1 && n->outputs[1] >= 0 && !logp)) {
        free(lp);
        xf_tensor_release(loss);
        xf_tensor_release(logp);
        return xf_error_set(err, XF_ERR_NOMEM, "out of memory");
    }
    if (softmax)
        log_softmax(x, lp, N, C, inner);
    double total = 0, weights = 0;
    for (int64_t b = 0; b < N; b++)
        for (int64_t i = 0; i < inner; i++) {
            int64_t k = b * inner + i, c = xf_rt_load_i64(t->dtype, t->data, k);
            double v = 0;
            if (!(has_ignore && c == ignore)) {
                if (c < 0 || c >= C) {
                    free(lp);
                    xf_tensor_release(loss);
                    xf_tensor_release(logp);
                    return xf_ml_fail(n, err, XF_ERR_INVALID,
                                      "target %" PRId64 " is %" PRId64 ", not in [0, %" PRId64 ")", k, c, C);
                }
                int64_t at = (b * C + c) * inner + i;
                double wc = w ? xf_rt_load_f64(w->dtype, w->data, c) : 1.0;
                v = -(softmax ? lp[at] : xf_rt_load_f64(x->dtype, x->data, at)) * wc;
                weights += wc;
            }
            if (red == RED_NONE)
                xf_rt_store_f64(x->dtype, loss->data, k, v);
            total += v;
        }
    if (red != RED_NONE)
        xf_rt_store_f64(x->dtype, loss->data, 0, red == RED_SUM ? total : total / weights);
    for (int64_t i = 0; logp && i < numel; i++)
        xf_rt_store_f64(x->dtype, logp->data, i, lp[i]);
    free(lp);
    out[0] = loss;
    out[1] = logp;
    return XF_OK;
}
