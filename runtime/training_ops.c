/* The optimizers of ai.onnx.preview.training on the host (dispatched by
 * ml_ops.c), one update step of each as ONNX defines it, for graphs that
 * carry their training step: inputs R (the learning rate), T (the step
 * count), then the groups of tensors, n of each --
 *   Adagrad(X, G, H) -> (X', H'): r = R / (1 + T * decay_factor),
 *     g = norm_coefficient * X + G, H' = H + g^2,
 *     X' = X - r * g / (sqrt(H') + epsilon);
 *   Momentum(X, G, V) -> (X', V'): g as above, V' = alpha * V + b * g with
 *     b = beta once T > 0 (1 at T = 0), X' = X - R * V' ("standard") or
 *     X - R * (g + alpha * V') ("nesterov");
 *   Adam(X, G, V, H) -> (X', V', H'): V' = alpha * V + (1 - alpha) * g,
 *     H' = beta * H + (1 - beta) * g^2, r = R * sqrt(1 - beta^T) /
 *     (1 - alpha^T) once T > 0, X' = (1 - norm_coefficient_post) *
 *     (X - r * V' / (sqrt(H') + epsilon)).
 * Computed in double, written in X's type. */
#include "ml_ops.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static double real_attr(const xf_node *n, const char *a, double def)
{
    int64_t c;
    const double *v = xf_ml_reals(n, a, &c);
    return v && c == 1 ? v[0] : def;
}

int xf_ml_optimizer_groups(const xf_node *n, int kind)
{
    int per = kind == XF_ML_ADAM ? 4 : 3, in = n->opaque->n_own_inputs - 2, outs = per - 1;
    if (in < per || in % per || n->n_outputs != in / per * outs)
        return -1;
    return in / per;
}

xf_status xf_ml_optimizer_check(const xf_node *n, int kind, xf_error *err)
{
    int per = kind == XF_ML_ADAM ? 4 : 3;
    if (xf_ml_optimizer_groups(n, kind) < 0)
        return xf_ml_fail(n, err, XF_ERR_INVALID,
                          "has %d inputs and %d outputs; it takes R, T and %d tensors per group, and gives %d",
                          n->opaque->n_own_inputs, n->n_outputs, per, per - 1);
    const char *mode = xf_ml_string(n, "mode", "standard");
    if (kind == XF_ML_MOMENTUM && strcmp(mode, "standard") != 0 && strcmp(mode, "nesterov") != 0)
        return xf_ml_fail(n, err, XF_ERR_INVALID, "mode '%s' is neither standard nor nesterov", mode);
    return XF_OK;
}

xf_status xf_ml_optimizer_run(const xf_node *n, int kind, xf_tensor *const *in, xf_tensor **out, xf_error *err)
{
    int groups = xf_ml_optimizer_groups(n, kind), per = kind == XF_ML_ADAM ? 4 : 3;
    const xf_tensor *R = in[0], *T = in[1];
    if (!xf_dtype_is_float(R->dtype) || xf_tensor_numel(R) != 1 || !xf_rt_is_integral(T->dtype) ||
        xf_tensor_numel(T) != 1)
        return xf_ml_fail(n, err, XF_ERR_INVALID, "R must be one floating-point value and T one integer");
    double r = xf_rt_load_f64(R->dtype, R->data, 0);
    int64_t t = xf_rt_load_i64(T->dtype, T->data, 0);
    double norm = real_attr(n, "norm_coefficient", 0), eps = real_attr(n, "epsilon", 1e-6);
    double alpha = real_attr(n, "alpha", kind == XF_ML_ADAM ? 0.9 : 0), beta = real_attr(n, "beta", 0.999);
    if (kind == XF_ML_ADAGRAD)
        r /= 1 + (double)t * real_attr(n, "decay_factor", 0);
    if (kind == XF_ML_ADAM && t > 0)
        r *= sqrt(1 - pow(beta, (double)t)) / (1 - pow(alpha, (double)t));
    double b = kind == XF_ML_MOMENTUM && t <= 0 ? 1 : beta, post = real_attr(n, "norm_coefficient_post", 0);
    bool nesterov = strcmp(xf_ml_string(n, "mode", "standard"), "nesterov") == 0;
    for (int k = 0; k < groups; k++) {
        const xf_tensor *x = in[2 + k], *g = in[2 + groups + k], *s1 = in[2 + 2 * groups + k];
        const xf_tensor *s2 = per == 4 ? in[2 + 3 * groups + k] : NULL;
        bool fits = xf_dtype_is_float(x->dtype) && xf_shape_equal(&g->shape, &x->shape) &&
                    xf_shape_equal(&s1->shape, &x->shape) && (!s2 || xf_shape_equal(&s2->shape, &x->shape));
        if (!fits)
            return xf_ml_fail(n, err, XF_ERR_INVALID, "the tensors of group %d differ in shape or are not real", k);
        xf_tensor *y[3] = {xf_tensor_create(x->dtype, &x->shape), xf_tensor_create(x->dtype, &x->shape),
                           per == 4 ? xf_tensor_create(x->dtype, &x->shape) : NULL};
        if (!y[0] || !y[1] || (per == 4 && !y[2])) {
            for (int j = 0; j < 3; j++)
                xf_tensor_release(y[j]);
            return xf_error_set(err, XF_ERR_NOMEM, "out of memory");
        }
        for (int64_t i = 0; i < xf_tensor_numel(x); i++) {
            double xv = xf_rt_load_f64(x->dtype, x->data, i), gv = norm * xv + xf_rt_load_f64(g->dtype, g->data, i);
            double a = xf_rt_load_f64(s1->dtype, s1->data, i), nx, na, nh = 0;
            if (kind == XF_ML_ADAGRAD) {
                na = a + gv * gv;
                nx = xv - r * gv / (sqrt(na) + eps);
            } else if (kind == XF_ML_MOMENTUM) {
                na = alpha * a + b * gv;
                nx = xv - r * (nesterov ? gv + alpha * na : na);
            } else {
                na = alpha * a + (1 - alpha) * gv;
                nh = beta * xf_rt_load_f64(s2->dtype, s2->data, i) + (1 - beta) * gv * gv;
                nx = (1 - post) * (xv - r * na / (sqrt(nh) + eps));
            }
            xf_rt_store_f64(x->dtype, y[0]->data, i, nx);
            xf_rt_store_f64(x->dtype, y[1]->data, i, na);
            if (y[2])
                xf_rt_store_f64(x->dtype, y[2]->data, i, nh);
        }
        /* outputs: the new X of every group, then each state's */
        for (int j = 0; j < per - 1; j++)
            out[j * groups + k] = y[j];
    }
    return XF_OK;
}
