/* cpu_ref elementwise kernels: unary and broadcasting binary ops from
 * tables of scalar functions, plus Where, Clip and Cast.
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

static int64_t ui_relu(int64_t x) { return x < 0 ? 0 : x; }
/* unsigned negation wraps INT64_MIN onto itself instead of overflowing */
static int64_t ui_neg(int64_t x) { return (int64_t)(0 - (uint64_t)x); }
static int64_t ui_abs(int64_t x) { return x < 0 ? ui_neg(x) : x; }
static int64_t ui_not(int64_t x) { return !x; }

static const unary_def unary_defs[XF_OP_COUNT] = {
    [XF_OP_RELU] = {u_relu, ui_relu},
    [XF_OP_SIGMOID] = {u_sigmoid, NULL},
    [XF_OP_TANH] = {u_tanh, NULL},
    [XF_OP_ABS] = {u_abs, ui_abs},
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
    if (xf_rt_is_integral(x->dtype)) {
        if (!d->i)
            return no_form(n, x->dtype, err);
        for (int64_t i = 0; i < numel; i++)
            xf_rt_store_i64(y->dtype, y->data, i, d->i(xf_rt_load_i64(x->dtype, x->data, i)));
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
};
static const binary_def fmod_def = {b_fmod, bi_fmod};

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
    const binary_def *d = n->op == XF_OP_MOD && n->attrs.fmod ? &fmod_def : &binary_defs[n->op];
    return binary_apply(n, d, &in[0], &in[1], &out[0], err);
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
