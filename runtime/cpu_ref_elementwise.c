/* cpu_ref elementwise kernels: unary and broadcasting binary ops from
 * tables of scalar functions (PRelu, Mean and BitShift among them), plus
 * Where, Clip and Cast (CastLike too).
 *
 * Integer-valued operands are computed in int64 (exact, wrapping like the
 * target type) and everything else in double, then stored in the output
 * dtype; for float32 the double computation of + - * / sqrt rounds to the
 * same result as float arithmetic would. */
#include "xf_rt_internal.h"

#include <math.h>
#include <string.h>

/* ---------------------------------------------------------------- unary */

typedef struct unary_def {
    double (*f)(double x, const xf_attrs *a);
    int64_t (*i)(int64_t x); /* NULL: no integer form */
    /* the form for unsigned types, where i would read uint64 values above
     * INT64_MAX as negative (NULL: i serves) */
    int64_t (*u)(int64_t x);
    bool ints_in_double; /* no integer form: integers go through f, the result truncated */
} unary_def;

static double u_relu(double x, const xf_attrs *a) { return x < 0 ? 0 : x; }
static double u_sigmoid(double x, const xf_attrs *a) { return 1.0 / (1.0 + exp(-x)); }
static double u_tanh(double x, const xf_attrs *a) { return tanh(x); }
static double u_abs(double x, const xf_attrs *a) { return fabs(x); }
static double u_neg(double x, const xf_attrs *a) { return -x; }
static double u_exp(double x, const xf_attrs *a) { return exp(x); }
static double u_log(double x, const xf_attrs *a) { return log(x); }
static double u_sqrt(double x, const xf_attrs *a) { return sqrt(x); }
static double u_reciprocal(double x, const xf_attrs *a) { return 1.0 / x; }
static double u_floor(double x, const xf_attrs *a) { return floor(x); }
static double u_ceil(double x, const xf_attrs *a) { return ceil(x); }
static double u_erf(double x, const xf_attrs *a) { return erf(x); }
static double u_sin(double x, const xf_attrs *a) { return sin(x); }
static double u_cos(double x, const xf_attrs *a) { return cos(x); }
/* log(1 + e^x) without overflow for large x */
static double u_softplus(double x, const xf_attrs *a) { return x > 0 ? x + log1p(exp(-x)) : log1p(exp(x)); }
static double u_leaky_relu(double x, const xf_attrs *a) { return x < 0 ? a->alpha * x : x; }
static double u_elu(double x, const xf_attrs *a) { return x < 0 ? a->alpha * expm1(x) : x; }
static double u_hard_sigmoid(double x, const xf_attrs *a) { return fmax(0.0, fmin(1.0, a->alpha * x + a->beta)); }
/* x * HardSigmoid(x) with alpha 1/6, beta 1/2, as ONNX defines it */
static double u_hard_swish(double x, const xf_attrs *a) { return x * fmax(0.0, fmin(1.0, x / 6.0 + 0.5)); }
static double u_is_nan(double x, const xf_attrs *a) { return isnan(x); }
/* NaN stays NaN */
static double u_sign(double x, const xf_attrs *a) { return isnan(x) ? x : (x > 0) - (x < 0); }
/* nearbyint rounds in the default mode: to nearest, halves to even */
static double u_round(double x, const xf_attrs *a) { return nearbyint(x); }
static double u_is_inf(double x, const xf_attrs *a)
{
    return isinf(x) && (x > 0 ? !a->isinf_no_pos : !a->isinf_no_neg);
}
static double u_tan(double x, const xf_attrs *a) { return tan(x); }
static double u_atan(double x, const xf_attrs *a) { return atan(x); }
static double u_asin(double x, const xf_attrs *a) { return asin(x); }
static double u_acos(double x, const xf_attrs *a) { return acos(x); }
static double u_sinh(double x, const xf_attrs *a) { return sinh(x); }
static double u_cosh(double x, const xf_attrs *a) { return cosh(x); }
static double u_asinh(double x, const xf_attrs *a) { return asinh(x); }
static double u_acosh(double x, const xf_attrs *a) { return acosh(x); }
static double u_atanh(double x, const xf_attrs *a) { return atanh(x); }
static double u_softsign(double x, const xf_attrs *a) { return x / (1.0 + fabs(x)); }
static double u_thresholded_relu(double x, const xf_attrs *a) { return x > a->alpha ? x : 0; }
/* gamma (beta) * (x > 0 ? x : alpha * (e^x - 1)) */
static double u_selu(double x, const xf_attrs *a) { return a->beta * (x > 0 ? x : a->alpha * expm1(x)); }
/* max(0, x) + min(0, alpha * (e^(x / alpha) - 1)): the second term is 0
 * for x > 0 whatever alpha's sign */
static double u_celu(double x, const xf_attrs *a) { return x > 0 ? x : a->alpha * expm1(x / a->alpha); }
/* lambd (alpha) and bias (beta) */
static double u_shrink(double x, const xf_attrs *a)
{
    return x < -a->alpha ? x + a->beta : x > a->alpha ? x - a->beta : 0;
}
static double u_mish(double x, const xf_attrs *a) { return x * tanh(u_softplus(x, a)); }
/* 0.5 x (1 + erf(x / sqrt 2)), as 0.5 x erfc(-x / sqrt 2) so that large
 * negative x keeps its tiny result; or the tanh approximation */
static double u_gelu(double x, const xf_attrs *a)
{
    if (a->gelu_tanh)
        return 0.5 * x * (1.0 + tanh(sqrt(2.0 / 3.14159265358979323846) * (x + 0.044715 * x * x * x)));
    return 0.5 * x * erfc(-x * sqrt(0.5));
}

static int64_t ui_relu(int64_t x) { return x < 0 ? 0 : x; }
/* unsigned negation wraps INT64_MIN onto itself instead of overflowing */
static int64_t ui_neg(int64_t x) { return (int64_t)(0 - (uint64_t)x); }
static int64_t ui_abs(int64_t x) { return x < 0 ? ui_neg(x) : x; }
static int64_t ui_not(int64_t x) { return !x; }
static int64_t ui_sign(int64_t x) { return (x > 0) - (x < 0); }
static int64_t ui_identity(int64_t x) { return x; }
static int64_t ui_nonzero(int64_t x) { return x != 0; }

static const unary_def unary_defs[XF_OP_COUNT] = {
    [XF_OP_RELU] = {u_relu, ui_relu},
    [XF_OP_SIGMOID] = {u_sigmoid, NULL},
    [XF_OP_TANH] = {u_tanh, NULL},
    [XF_OP_ABS] = {u_abs, ui_abs, ui_identity},
    [XF_OP_NEG] = {u_neg, ui_neg},
    [XF_OP_EXP] = {u_exp, NULL},
    [XF_OP_LOG] = {u_log, NULL},
    [XF_OP_SQRT] = {u_sqrt, NULL},
    [XF_OP_RECIPROCAL] = {u_reciprocal, NULL},
    [XF_OP_FLOOR] = {u_floor, NULL},
    [XF_OP_CEIL] = {u_ceil, NULL},
    [XF_OP_ERF] = {u_erf, NULL},
    [XF_OP_SIN] = {u_sin, NULL},
    [XF_OP_COS] = {u_cos, NULL},
    [XF_OP_SOFTPLUS] = {u_softplus, NULL},
    [XF_OP_LEAKY_RELU] = {u_leaky_relu, NULL},
    [XF_OP_ELU] = {u_elu, NULL},
    [XF_OP_HARD_SIGMOID] = {u_hard_sigmoid, NULL},
    [XF_OP_HARD_SWISH] = {u_hard_swish, NULL},
    [XF_OP_IS_NAN] = {u_is_nan, NULL},
    [XF_OP_NOT] = {NULL, ui_not},
    [XF_OP_SIGN] = {u_sign, ui_sign, ui_nonzero},
    [XF_OP_ROUND] = {u_round, NULL},
    [XF_OP_IS_INF] = {u_is_inf, NULL},
    [XF_OP_TAN] = {u_tan, NULL},
    [XF_OP_ATAN] = {u_atan, NULL},
    [XF_OP_ASIN] = {u_asin, NULL},
    [XF_OP_ACOS] = {u_acos, NULL},
    [XF_OP_SINH] = {u_sinh, NULL},
    [XF_OP_COSH] = {u_cosh, NULL},
    [XF_OP_ASINH] = {u_asinh, NULL},
    [XF_OP_ACOSH] = {u_acosh, NULL},
    [XF_OP_ATANH] = {u_atanh, NULL},
    [XF_OP_SOFTSIGN] = {u_softsign, NULL},
    [XF_OP_THRESHOLDED_RELU] = {u_thresholded_relu, NULL},
    [XF_OP_SELU] = {u_selu, NULL},
    [XF_OP_CELU] = {u_celu, NULL},
    /* ONNX computes Shrink of integers in floating point, cast back */
    [XF_OP_SHRINK] = {u_shrink, NULL, NULL, true},
    [XF_OP_MISH] = {u_mish, NULL},
    [XF_OP_GELU] = {u_gelu, NULL},
    [XF_OP_MS_GELU] = {u_gelu, NULL},
};

static xf_status no_form(const xf_node *n, xf_dtype t, xf_error *err)
{
    return xf_rt_unsupported(err, &xf_backend_cpu_ref, n, "on %s", xf_dtype_name(t));
}

xf_status xf_ref_unary(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out,
                       xf_error *err)
{
    const unary_def *d = &unary_defs[n->op];
    const xf_tensor_view *x = &in[0], *y = &out[0];
    int64_t numel = xf_rt_numel(y);
    if (xf_rt_numel(x) != numel)
        return xf_rt_bad_node(err, n, "input and output sizes differ");
    if (xf_rt_is_integral(x->dtype) && !d->ints_in_double) {
        int64_t (*f)(int64_t) = xf_dtype_is_unsigned(x->dtype) && d->u ? d->u : d->i;
        if (!f)
            return no_form(n, x->dtype, err);
        for (int64_t i = 0; i < numel; i++)
            xf_rt_store_i64(y->dtype, y->data, i, f(xf_rt_load_i64(x->dtype, x->data, i)));
    } else {
        if (!d->f)
            return no_form(n, x->dtype, err);
        for (int64_t i = 0; i < numel; i++)
            xf_rt_store_f64(y->dtype, y->data, i, d->f(xf_rt_load_f64(x->dtype, x->data, i), &n->attrs));
    }
    return XF_OK;
}

/* ---------------------------------------------------------------- binary */

typedef struct binary_def {
    double (*f)(double a, double b);
    int64_t (*i)(int64_t a, int64_t b);
} binary_def;

static double b_add(double a, double b) { return a + b; }
static double b_sub(double a, double b) { return a - b; }
static double b_mul(double a, double b) { return a * b; }
static double b_div(double a, double b) { return a / b; }
static double b_pow(double a, double b) { return pow(a, b); }
/* numpy's maximum/minimum: NaN wins */
static double b_max(double a, double b) { return isnan(a) || isnan(b) ? NAN : a > b ? a : b; }
static double b_min(double a, double b) { return isnan(a) || isnan(b) ? NAN : a < b ? a : b; }
static double b_equal(double a, double b) { return a == b; }
static double b_greater(double a, double b) { return a > b; }
static double b_less(double a, double b) { return a < b; }
static double b_greater_eq(double a, double b) { return a >= b; }
static double b_less_eq(double a, double b) { return a <= b; }
/* PRelu: x, times the slope where negative */
static double b_prelu(double a, double b) { return a < 0 ? a * b : a; }
/* Mod with fmod = 1: C's fmod, the sign of the dividend */
static double b_fmod(double a, double b) { return fmod(a, b); }
/* Mod with fmod = 0 (integers in ONNX; numpy's mod for floats): the sign of
 * the divisor */
static double b_mod(double a, double b)
{
    double r = fmod(a, b);
    return r != 0 && (r < 0) != (b < 0) ? r + b : r;
}

/* Integer arithmetic wraps (through uint64) rather than being undefined. */
static int64_t bi_add(int64_t a, int64_t b) { return (int64_t)((uint64_t)a + (uint64_t)b); }
static int64_t bi_sub(int64_t a, int64_t b) { return (int64_t)((uint64_t)a - (uint64_t)b); }
static int64_t bi_mul(int64_t a, int64_t b) { return (int64_t)((uint64_t)a * (uint64_t)b); }
/* C's truncating division; x/0 gives 0 instead of trapping */
static int64_t bi_div(int64_t a, int64_t b)
{
    if (b == 0)
        return 0;
    if (b == -1)
        return bi_sub(0, a);
    return a / b;
}
static int64_t bi_pow(int64_t a, int64_t b)
{
    if (b < 0) /* only 1 and -1 have integral reciprocals */
        return a == 1 ? 1 : a == -1 ? (b & 1 ? -1 : 1) : 0;
    int64_t r = 1;
    for (; b; b >>= 1) {
        if (b & 1)
            r = bi_mul(r, a);
        a = bi_mul(a, a);
    }
    return r;
}
static int64_t bi_max(int64_t a, int64_t b) { return a > b ? a : b; }
static int64_t bi_min(int64_t a, int64_t b) { return a < b ? a : b; }
static int64_t bi_equal(int64_t a, int64_t b) { return a == b; }
static int64_t bi_greater(int64_t a, int64_t b) { return a > b; }
static int64_t bi_less(int64_t a, int64_t b) { return a < b; }
static int64_t bi_greater_eq(int64_t a, int64_t b) { return a >= b; }
static int64_t bi_less_eq(int64_t a, int64_t b) { return a <= b; }
/* x % 0 gives 0 instead of trapping, as x / 0 above; x % -1 is 0 */
static int64_t bi_fmod(int64_t a, int64_t b) { return b == 0 || b == -1 ? 0 : a % b; }
static int64_t bi_mod(int64_t a, int64_t b)
{
    int64_t r = bi_fmod(a, b);
    return r != 0 && (r < 0) != (b < 0) ? r + b : r;
}
static int64_t bi_and(int64_t a, int64_t b) { return a && b; }
static int64_t bi_or(int64_t a, int64_t b) { return a || b; }
static int64_t bi_xor(int64_t a, int64_t b) { return !a != !b; }
static int64_t bi_prelu(int64_t a, int64_t b) { return a < 0 ? bi_mul(a, b) : a; }
/* BitShift of unsigned values (uint64 ones read as their bits): shifting
 * by the width or more leaves 0, as numpy does; storing drops the bits
 * shifted past narrower types */
static int64_t bi_shift_left(int64_t a, int64_t b) { return (uint64_t)b < 64 ? (int64_t)((uint64_t)a << b) : 0; }
static int64_t bi_shift_right(int64_t a, int64_t b) { return (uint64_t)b < 64 ? (int64_t)((uint64_t)a >> b) : 0; }

static const binary_def binary_defs[XF_OP_COUNT] = {
    [XF_OP_ADD] = {b_add, bi_add},
    [XF_OP_SUB] = {b_sub, bi_sub},
    [XF_OP_MUL] = {b_mul, bi_mul},
    [XF_OP_DIV] = {b_div, bi_div},
    [XF_OP_POW] = {b_pow, bi_pow},
    [XF_OP_MAX] = {b_max, bi_max},
    [XF_OP_MIN] = {b_min, bi_min},
    [XF_OP_SUM] = {b_add, bi_add},
    [XF_OP_EQUAL] = {b_equal, bi_equal},
    [XF_OP_GREATER] = {b_greater, bi_greater},
    [XF_OP_LESS] = {b_less, bi_less},
    [XF_OP_GREATER_OR_EQUAL] = {b_greater_eq, bi_greater_eq},
    [XF_OP_LESS_OR_EQUAL] = {b_less_eq, bi_less_eq},
    [XF_OP_MOD] = {b_mod, bi_mod},
    [XF_OP_AND] = {NULL, bi_and},
    [XF_OP_OR] = {NULL, bi_or},
    [XF_OP_XOR] = {NULL, bi_xor},
    [XF_OP_PRELU] = {b_prelu, bi_prelu},
    [XF_OP_MEAN] = {b_add, bi_add},
    [XF_OP_BIT_SHIFT] = {NULL, bi_shift_left},
};
static const binary_def fmod_def = {b_fmod, bi_fmod}, shift_right_def = {NULL, bi_shift_right};

/* o = d(a, b) with broadcasting.  o may be a itself (same shape and dtype):
 * every element is read before it is written. */
static xf_status binary_apply(const xf_node *n, const binary_def *d, const xf_tensor_view *a,
                              const xf_tensor_view *b, const xf_tensor_view *o, xf_error *err)
{
    if (!xf_rt_broadcastable(&a->shape, &o->shape) || !xf_rt_broadcastable(&b->shape, &o->shape))
        return xf_rt_bad_node(err, n, "operands do not broadcast to the output shape");
    xf_rt_iter it;
    xf_rt_iter_init(&it, &o->shape);
    xf_rt_iter_add_broadcast(&it, &a->shape);
    xf_rt_iter_add_broadcast(&it, &b->shape);
    int64_t numel = xf_rt_numel(o);
    /* Pow of an integer by a float is computed in floating point */
    if (xf_rt_is_integral(a->dtype) && xf_rt_is_integral(b->dtype)) {
        for (int64_t i = 0; i < numel; i++, xf_rt_iter_next(&it))
            xf_rt_store_i64(o->dtype, o->data, i,
                            d->i(xf_rt_load_i64(a->dtype, a->data, it.off[0]),
                                 xf_rt_load_i64(b->dtype, b->data, it.off[1])));
    } else {
        for (int64_t i = 0; i < numel; i++, xf_rt_iter_next(&it))
            xf_rt_store_f64(o->dtype, o->data, i,
                            d->f(xf_rt_load_f64(a->dtype, a->data, it.off[0]),
                                 xf_rt_load_f64(b->dtype, b->data, it.off[1])));
    }
    return XF_OK;
}

xf_status xf_ref_binary(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out,
                        xf_error *err)
{
    const binary_def *d = n->op == XF_OP_MOD && n->attrs.fmod                ? &fmod_def
                          : n->op == XF_OP_BIT_SHIFT && n->attrs.shift_right ? &shift_right_def
                                                                              : &binary_defs[n->op];
    return binary_apply(n, d, &in[0], &in[1], &out[0], err);
}

/* PRelu.  An unsigned X is never negative, and is the result as it is
 * (bi_prelu would take uint64 values above INT64_MAX for negative ones).
 * Before opset 7 a slope of one dimension holds one value per channel
 * (X's axis 1): it is read as [C, 1, ..., 1]. */
xf_status xf_ref_prelu(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err)
{
    const xf_tensor_view *x = &in[0];
    xf_tensor_view slope = in[1];
    if (xf_dtype_is_unsigned(x->dtype)) {
        if (!xf_shape_equal(&x->shape, &out[0].shape) || x->dtype != out[0].dtype)
            return xf_rt_bad_node(err, n, "the output is not of X's shape and type");
        if (xf_rt_bytes(&out[0]) && out[0].data != x->data)
            memcpy(out[0].data, x->data, xf_rt_bytes(&out[0]));
        return XF_OK;
    }
    if (n->attrs.prelu_channels && slope.shape.ndim == 1 && x->shape.ndim > 1 &&
        slope.shape.dims[0] == x->shape.dims[1]) {
        slope.shape.ndim = x->shape.ndim - 1;
        for (int d = 1; d < slope.shape.ndim; d++)
            slope.shape.dims[d] = 1;
    }
    return binary_apply(n, &binary_defs[XF_OP_PRELU], x, &slope, &out[0], err);
}

void xf_rt_reduce_into(xf_reduction r, const xf_tensor_view *acc, int64_t i, const xf_tensor_view *x, int64_t j)
{
    static const xf_op ops[] = {[XF_REDUCE_ADD] = XF_OP_ADD, [XF_REDUCE_MUL] = XF_OP_MUL, [XF_REDUCE_MAX] = XF_OP_MAX,
                                [XF_REDUCE_MIN] = XF_OP_MIN};
    const binary_def *d = &binary_defs[ops[r]];
    if (xf_rt_is_integral(acc->dtype))
        xf_rt_store_i64(acc->dtype, acc->data, i,
                        d->i(xf_rt_load_i64(acc->dtype, acc->data, i), xf_rt_load_i64(x->dtype, x->data, j)));
    else
        xf_rt_store_f64(acc->dtype, acc->data, i,
                        d->f(xf_rt_load_f64(acc->dtype, acc->data, i), xf_rt_load_f64(x->dtype, x->data, j)));
}

/* Max, Min, Sum: a left fold of the binary op, accumulating in the output. */
xf_status xf_ref_variadic(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out,
                          xf_error *err)
{
    const binary_def *d = &binary_defs[n->op];
    if (n->n_inputs == 1) {
        if (!xf_shape_equal(&in[0].shape, &out[0].shape))
            return xf_rt_bad_node(err, n, "input and output shapes differ");
        if (xf_rt_bytes(&out[0]))
            memcpy(out[0].data, in[0].data, xf_rt_bytes(&out[0]));
        return XF_OK;
    }
    xf_status st = binary_apply(n, d, &in[0], &in[1], &out[0], err);
    for (int k = 2; k < n->n_inputs && st == XF_OK; k++)
        st = binary_apply(n, d, &out[0], &in[k], &out[0], err);
    return st;
}

/* Mean: the inputs' Sum (accumulated in the output's type, as ONNX's
 * reference does), divided by their number. */
xf_status xf_ref_mean(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err)
{
    xf_status st = xf_ref_variadic(n, in, out, err);
    int64_t numel = xf_rt_numel(&out[0]);
    for (int64_t i = 0; st == XF_OK && n->n_inputs > 1 && i < numel; i++)
        xf_rt_store_f64(out[0].dtype, out[0].data, i, xf_rt_load_f64(out[0].dtype, out[0].data, i) / n->n_inputs);
    return st;
}

/* ---------------------------------------------------------------- Where, Clip, Cast */

xf_status xf_ref_where(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out,
                       xf_error *err)
{
    const xf_tensor_view *o = &out[0];
    for (int k = 0; k < 3; k++)
        if (!xf_rt_broadcastable(&in[k].shape, &o->shape))
            return xf_rt_bad_node(err, n, "operands do not broadcast to the output shape");
    xf_rt_iter it;
    xf_rt_iter_init(&it, &o->shape);
    for (int k = 0; k < 3; k++)
        xf_rt_iter_add_broadcast(&it, &in[k].shape);
    size_t es = xf_dtype_size(o->dtype);
    const uint8_t *cond = in[0].data;
    const char *x = in[1].data, *y = in[2].data;
    int64_t numel = xf_rt_numel(o);
    for (int64_t i = 0; i < numel; i++, xf_rt_iter_next(&it)) {
        const char *src = cond[it.off[0]] ? x + it.off[1] * es : y + it.off[2] * es;
        memcpy((char *)o->data + i * es, src, es);
    }
    return XF_OK;
}

/* Bounds come from inputs 1 and 2 (opset >= 11, either may be omitted) or
 * from the attributes (older opsets). */
xf_status xf_ref_clip(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out,
                      xf_error *err)
{
    const xf_tensor_view *x = &in[0], *y = &out[0];
    const xf_tensor_view *lo = n->n_inputs > 1 && xf_rt_present(&in[1]) ? &in[1] : NULL;
    const xf_tensor_view *hi = n->n_inputs > 2 && xf_rt_present(&in[2]) ? &in[2] : NULL;
    if ((lo && xf_rt_numel(lo) != 1) || (hi && xf_rt_numel(hi) != 1))
        return xf_rt_bad_node(err, n, "min and max must be scalars");
    int64_t numel = xf_rt_numel(y);
    if (xf_rt_is_integral(x->dtype)) {
        int64_t l = lo ? xf_rt_load_i64(lo->dtype, lo->data, 0) : INT64_MIN;
        int64_t h = hi ? xf_rt_load_i64(hi->dtype, hi->data, 0) : INT64_MAX;
        for (int64_t i = 0; i < numel; i++) {
            int64_t v = xf_rt_load_i64(x->dtype, x->data, i);
            v = v < l ? l : v;
            xf_rt_store_i64(y->dtype, y->data, i, v > h ? h : v);
        }
        return XF_OK;
    }
    double l = lo ? xf_rt_load_f64(lo->dtype, lo->data, 0)
               : n->attrs.has_clip_attrs ? n->attrs.clip_min : -INFINITY;
    double h = hi ? xf_rt_load_f64(hi->dtype, hi->data, 0)
               : n->attrs.has_clip_attrs ? n->attrs.clip_max : INFINITY;
    /* min first, then max: with min > max every element becomes max, as in numpy */
    for (int64_t i = 0; i < numel; i++) {
        double v = xf_rt_load_f64(x->dtype, x->data, i);
        v = v < l ? l : v;
        xf_rt_store_f64(y->dtype, y->data, i, v > h ? h : v);
    }
    return XF_OK;
}

xf_status xf_ref_cast(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out,
                      xf_error *err)
{
    const xf_tensor_view *x = &in[0], *y = &out[0];
    int64_t numel = xf_rt_numel(y);
    if (xf_rt_numel(x) != numel)
        return xf_rt_bad_node(err, n, "input and output sizes differ");
    /* int64 between integer types keeps every value exact and wraps like
     * ONNX; any float side goes through double */
    if (xf_rt_is_integral(x->dtype) && xf_rt_is_integral(y->dtype)) {
        for (int64_t i = 0; i < numel; i++)
            xf_rt_store_i64(y->dtype, y->data, i, xf_rt_load_i64(x->dtype, x->data, i));
    } else {
        for (int64_t i = 0; i < numel; i++)
            xf_rt_store_f64(y->dtype, y->data, i, xf_rt_load_f64(x->dtype, x->data, i));
    }
    return XF_OK;
}
