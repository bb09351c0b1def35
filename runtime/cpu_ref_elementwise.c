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

typedef void (*unary_f_run)(double *o, const double *x, int64_t n, const xf_attrs *a);
typedef void (*unary_i_run)(int64_t *o, const int64_t *x, int64_t n);

typedef struct unary_def {
    unary_f_run f;
    unary_i_run i; /* NULL: no integer form */
    /* the form for unsigned types, where i would read uint64 values above
     * INT64_MAX as negative (NULL: i serves) */
    unary_i_run u;
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
/* opsets 1 to 9: Affine alpha * x + beta, Scale scale (alpha) * x,
 * ScaledTanh alpha * tanh(beta * x), ParametricSoftplus alpha *
 * ln(1 + e^(beta * x)) */
static double u_affine(double x, const xf_attrs *a) { return a->alpha * x + a->beta; }
static double u_scale(double x, const xf_attrs *a) { return a->alpha * x; }
static double u_scaled_tanh(double x, const xf_attrs *a) { return a->alpha * tanh(a->beta * x); }
static double u_parametric_softplus(double x, const xf_attrs *a) { return a->alpha * u_softplus(a->beta * x, a); }
/* x * sigmoid(alpha * x) */
static double u_swish(double x, const xf_attrs *a) { return x * u_sigmoid(a->alpha * x, a); }
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
/* BitwiseNot: storing drops the bits above narrower types */
static int64_t ui_bit_not(int64_t x) { return ~x; }

/* the scalar functions over runs, where the compiler can inline them */
#define UNARY_F(f)                                                                                       \
    static void f##_run(double *o, const double *x, int64_t n, const xf_attrs *a)                      \
    {                                                                                                  \
        for (int64_t k = 0; k < n; k++)                                                                \
            o[k] = f(x[k], a);                                                                         \
    }
#define UNARY_I(f)                                                                                       \
    static void f##_run(int64_t *o, const int64_t *x, int64_t n)                                       \
    {                                                                                                  \
        for (int64_t k = 0; k < n; k++)                                                                \
            o[k] = f(x[k]);                                                                            \
    }
UNARY_F(u_relu) UNARY_F(u_sigmoid) UNARY_F(u_tanh) UNARY_F(u_abs) UNARY_F(u_neg) UNARY_F(u_exp)
UNARY_F(u_log) UNARY_F(u_sqrt) UNARY_F(u_reciprocal) UNARY_F(u_floor) UNARY_F(u_ceil) UNARY_F(u_erf)
UNARY_F(u_sin) UNARY_F(u_cos) UNARY_F(u_softplus) UNARY_F(u_leaky_relu) UNARY_F(u_elu)
UNARY_F(u_hard_sigmoid) UNARY_F(u_hard_swish) UNARY_F(u_is_nan) UNARY_F(u_sign) UNARY_F(u_round)
UNARY_F(u_is_inf) UNARY_F(u_tan) UNARY_F(u_atan) UNARY_F(u_asin) UNARY_F(u_acos) UNARY_F(u_sinh)
UNARY_F(u_cosh) UNARY_F(u_asinh) UNARY_F(u_acosh) UNARY_F(u_atanh) UNARY_F(u_softsign)
UNARY_F(u_thresholded_relu) UNARY_F(u_selu) UNARY_F(u_celu) UNARY_F(u_shrink) UNARY_F(u_mish) UNARY_F(u_gelu)
UNARY_F(u_swish) UNARY_F(u_affine) UNARY_F(u_scale) UNARY_F(u_scaled_tanh) UNARY_F(u_parametric_softplus)
UNARY_I(ui_relu) UNARY_I(ui_abs) UNARY_I(ui_identity) UNARY_I(ui_neg) UNARY_I(ui_not) UNARY_I(ui_sign)
UNARY_I(ui_nonzero) UNARY_I(ui_bit_not)

static const unary_def unary_defs[XF_OP_COUNT] = {
    [XF_OP_RELU] = {u_relu_run, ui_relu_run},
    [XF_OP_SIGMOID] = {u_sigmoid_run, NULL},
    [XF_OP_TANH] = {u_tanh_run, NULL},
    [XF_OP_ABS] = {u_abs_run, ui_abs_run, ui_identity_run},
    [XF_OP_NEG] = {u_neg_run, ui_neg_run},
    [XF_OP_EXP] = {u_exp_run, NULL},
    [XF_OP_LOG] = {u_log_run, NULL},
    [XF_OP_SQRT] = {u_sqrt_run, NULL},
    [XF_OP_RECIPROCAL] = {u_reciprocal_run, NULL},
    [XF_OP_FLOOR] = {u_floor_run, NULL},
    [XF_OP_CEIL] = {u_ceil_run, NULL},
    [XF_OP_ERF] = {u_erf_run, NULL},
    [XF_OP_SIN] = {u_sin_run, NULL},
    [XF_OP_COS] = {u_cos_run, NULL},
    [XF_OP_SOFTPLUS] = {u_softplus_run, NULL},
    [XF_OP_LEAKY_RELU] = {u_leaky_relu_run, NULL},
    [XF_OP_ELU] = {u_elu_run, NULL},
    [XF_OP_HARD_SIGMOID] = {u_hard_sigmoid_run, NULL},
    [XF_OP_HARD_SWISH] = {u_hard_swish_run, NULL},
    [XF_OP_IS_NAN] = {u_is_nan_run, NULL},
    [XF_OP_NOT] = {NULL, ui_not_run},
    [XF_OP_SIGN] = {u_sign_run, ui_sign_run, ui_nonzero_run},
    [XF_OP_ROUND] = {u_round_run, NULL},
    [XF_OP_IS_INF] = {u_is_inf_run, NULL},
    [XF_OP_TAN] = {u_tan_run, NULL},
    [XF_OP_ATAN] = {u_atan_run, NULL},
    [XF_OP_ASIN] = {u_asin_run, NULL},
    [XF_OP_ACOS] = {u_acos_run, NULL},
    [XF_OP_SINH] = {u_sinh_run, NULL},
    [XF_OP_COSH] = {u_cosh_run, NULL},
    [XF_OP_ASINH] = {u_asinh_run, NULL},
    [XF_OP_ACOSH] = {u_acosh_run, NULL},
    [XF_OP_ATANH] = {u_atanh_run, NULL},
    [XF_OP_SOFTSIGN] = {u_softsign_run, NULL},
    [XF_OP_THRESHOLDED_RELU] = {u_thresholded_relu_run, NULL},
    [XF_OP_SELU] = {u_selu_run, NULL},
    [XF_OP_CELU] = {u_celu_run, NULL},
    /* ONNX computes Shrink of integers in floating point, cast back */
    [XF_OP_SHRINK] = {u_shrink_run, NULL, NULL, true},
    [XF_OP_MISH] = {u_mish_run, NULL},
    [XF_OP_GELU] = {u_gelu_run, NULL},
    [XF_OP_MS_GELU] = {u_gelu_run, NULL},
    [XF_OP_SWISH] = {u_swish_run, NULL},
    [XF_OP_AFFINE] = {u_affine_run, NULL},
    [XF_OP_SCALE] = {u_scale_run, NULL},
    [XF_OP_SCALED_TANH] = {u_scaled_tanh_run, NULL},
    [XF_OP_PARAMETRIC_SOFTPLUS] = {u_parametric_softplus_run, NULL},
    [XF_OP_BITWISE_NOT] = {NULL, ui_bit_not_run},
};

xf_ref_unary_doubles xf_ref_unary_of(xf_op op)
{
    return (int)op >= 0 && op < XF_OP_COUNT ? unary_defs[op].f : NULL;
}

/* ---------------------------------------------------------------- runs */

/* A kernel's operands: o, the dense output, and up to three inputs; the
 * form of the op chosen once per node. */
typedef struct ew_ctx {
    const xf_tensor_view *o, *v[3];
    bool ints; /* computed in int64, else in double */
    unary_f_run uf;
    unary_i_run ui;
    const struct binary_def *bd;
    const xf_attrs *attrs;
    double lo, hi, count; /* Clip's bounds, Mean's divisor */
    int64_t ilo, ihi;
} ew_ctx;

/* A block of at most XF_RT_BLOCK elements: operand k's elements
 * off[k] + j * step[k] for j < n, operand 0 the output. */
typedef void (*block_fn)(const ew_ctx *e, const int64_t *off, const int64_t *step, int64_t n);

/* fn over the dense output of shape o and n_in inputs of shapes in[]
 * broadcast to it, block by block in the output's row-major order. */
static void walk_blocks(const xf_shape *o, const xf_shape *const *in, int n_in, block_fn fn, const ew_ctx *e)
{
    xf_rt_iter it;
    int64_t dense[XF_MAX_DIMS], step[XF_RT_MAX_OPERANDS], off[XF_RT_MAX_OPERANDS];
    xf_rt_iter_init(&it, o);
    xf_rt_dense_strides(o, dense);
    xf_rt_iter_add(&it, dense, 0);
    for (int k = 0; k < n_in; k++)
        xf_rt_iter_add_broadcast(&it, in[k]);
    int64_t len = xf_rt_iter_runs(&it, step);
    int64_t runs = len ? xf_shape_numel(o) / len : 0;
    for (int64_t r = 0; r < runs; r++, xf_rt_iter_next(&it))
        for (int64_t j = 0; j < len; j += XF_RT_BLOCK) {
            for (int k = 0; k <= n_in; k++)
                off[k] = it.off[k] + j * step[k];
            fn(e, off, step, len - j < XF_RT_BLOCK ? len - j : XF_RT_BLOCK);
        }
}

/* fn over numel elements of the output and of one input, both read flat. */
static void walk_flat(int64_t numel, block_fn fn, const ew_ctx *e)
{
    xf_shape flat = xf_shape_make(1, &numel);
    const xf_shape *in = &flat;
    walk_blocks(&flat, &in, 1, fn, e);
}

/* Where a block of the output is computed: in place when it has the
 * computation's type, else in buf (then stored). */
static double *out_f64(const xf_tensor_view *o, int64_t i, double *buf)
{
    return o->dtype == XF_DT_DOUBLE ? (double *)o->data + i : buf;
}
static int64_t *out_i64(const xf_tensor_view *o, int64_t i, int64_t *buf)
{
    return o->dtype == XF_DT_INT64 ? (int64_t *)o->data + i : buf;
}
#define LOAD_F64(e, k, off, step, n, buf) xf_rt_load_f64_run((e)->v[k]->dtype, (e)->v[k]->data, off[k + 1], step[k + 1], n, buf)
#define LOAD_I64(e, k, off, step, n, buf) xf_rt_load_i64_run((e)->v[k]->dtype, (e)->v[k]->data, off[k + 1], step[k + 1], n, buf)

static xf_status no_form(const xf_node *n, xf_dtype t, xf_error *err)
{
    return xf_rt_unsupported(err, &xf_backend_cpu_ref, n, "on %s", xf_dtype_name(t));
}

static void unary_block(const ew_ctx *e, const int64_t *off, const int64_t *step, int64_t n)
{
    if (e->ints) {
        int64_t xb[XF_RT_BLOCK], ob[XF_RT_BLOCK], *o = out_i64(e->o, off[0], ob);
        e->ui(o, LOAD_I64(e, 0, off, step, n, xb), n);
        xf_rt_store_i64_run(e->o->dtype, e->o->data, off[0], n, o);
    } else {
        double xb[XF_RT_BLOCK], ob[XF_RT_BLOCK], *o = out_f64(e->o, off[0], ob);
        e->uf(o, LOAD_F64(e, 0, off, step, n, xb), n, e->attrs);
        xf_rt_store_f64_run(e->o->dtype, e->o->data, off[0], n, o);
    }
}

xf_status xf_ref_unary(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out,
                       xf_error *err)
{
    const unary_def *d = &unary_defs[n->op];
    const xf_tensor_view *x = &in[0], *y = &out[0];
    int64_t numel = xf_rt_numel(y);
    if (xf_rt_numel(x) != numel)
        return xf_rt_bad_node(err, n, "input and output sizes differ");
    ew_ctx e = {.o = y, .v = {x}, .attrs = &n->attrs};
    e.ints = xf_rt_is_integral(x->dtype) && !d->ints_in_double;
    if (e.ints) {
        e.ui = xf_dtype_is_unsigned(x->dtype) && d->u ? d->u : d->i;
        if (!e.ui)
            return no_form(n, x->dtype, err);
    } else {
        e.uf = d->f;
        if (!e.uf)
            return no_form(n, x->dtype, err);
    }
    walk_flat(numel, unary_block, &e);
    return XF_OK;
}

/* ---------------------------------------------------------------- binary */

typedef struct binary_def {
    void (*f)(double *o, const double *a, const double *b, int64_t n);
    void (*i)(int64_t *o, const int64_t *a, const int64_t *b, int64_t n);
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
/* the bitwise ops: sign-extended or zero-extended bits, cut back to the
 * type when stored */
static int64_t bi_bit_and(int64_t a, int64_t b) { return a & b; }
static int64_t bi_bit_or(int64_t a, int64_t b) { return a | b; }
static int64_t bi_bit_xor(int64_t a, int64_t b) { return a ^ b; }
static int64_t bi_prelu(int64_t a, int64_t b) { return a < 0 ? bi_mul(a, b) : a; }
/* BitShift of unsigned values (uint64 ones read as their bits) and, from
 * opset 28, of signed ones (sign-extended): shifting by the width or more,
 * or by a negative amount, leaves 0 (a signed right shift: its sign fill,
 * -1 for a negative value); storing drops the bits shifted past narrower
 * types, which is also a signed left shift's wrap */
static int64_t bi_shift_left(int64_t a, int64_t b) { return (uint64_t)b < 64 ? (int64_t)((uint64_t)a << b) : 0; }
static int64_t bi_shift_right(int64_t a, int64_t b) { return (uint64_t)b < 64 ? (int64_t)((uint64_t)a >> b) : 0; }
static int64_t bi_shift_right_signed(int64_t a, int64_t b)
{
    return (uint64_t)b < 64 ? (a < 0 ? ~(~a >> b) : a >> b) : a < 0 ? -1 : 0;
}

#define BINARY_RUN(f, T)                                                                                 \
    static void f##_run(T *o, const T *a, const T *b, int64_t n)                                       \
    {                                                                                                  \
        for (int64_t k = 0; k < n; k++)                                                               \
            o[k] = f(a[k], b[k]);                                                                      \
    }
#define BINARY_F(f) BINARY_RUN(f, double)
#define BINARY_I(f) BINARY_RUN(f, int64_t)
BINARY_F(b_add) BINARY_F(b_sub) BINARY_F(b_mul) BINARY_F(b_div) BINARY_F(b_pow) BINARY_F(b_max)
BINARY_F(b_min) BINARY_F(b_equal) BINARY_F(b_greater) BINARY_F(b_less) BINARY_F(b_greater_eq)
BINARY_F(b_less_eq) BINARY_F(b_mod) BINARY_F(b_prelu) BINARY_F(b_fmod)
BINARY_I(bi_add) BINARY_I(bi_sub) BINARY_I(bi_mul) BINARY_I(bi_div) BINARY_I(bi_pow) BINARY_I(bi_max)
BINARY_I(bi_min) BINARY_I(bi_equal) BINARY_I(bi_greater) BINARY_I(bi_less) BINARY_I(bi_greater_eq)
BINARY_I(bi_less_eq) BINARY_I(bi_mod) BINARY_I(bi_and) BINARY_I(bi_or) BINARY_I(bi_xor) BINARY_I(bi_prelu)
BINARY_I(bi_shift_left) BINARY_I(bi_fmod) BINARY_I(bi_shift_right) BINARY_I(bi_shift_right_signed)
BINARY_I(bi_bit_and) BINARY_I(bi_bit_or) BINARY_I(bi_bit_xor)

static const binary_def binary_defs[XF_OP_COUNT] = {
    [XF_OP_ADD] = {b_add_run, bi_add_run},
    [XF_OP_SUB] = {b_sub_run, bi_sub_run},
    [XF_OP_MUL] = {b_mul_run, bi_mul_run},
    [XF_OP_DIV] = {b_div_run, bi_div_run},
    [XF_OP_POW] = {b_pow_run, bi_pow_run},
    [XF_OP_MAX] = {b_max_run, bi_max_run},
    [XF_OP_MIN] = {b_min_run, bi_min_run},
    [XF_OP_SUM] = {b_add_run, bi_add_run},
    [XF_OP_EQUAL] = {b_equal_run, bi_equal_run},
    [XF_OP_GREATER] = {b_greater_run, bi_greater_run},
    [XF_OP_LESS] = {b_less_run, bi_less_run},
    [XF_OP_GREATER_OR_EQUAL] = {b_greater_eq_run, bi_greater_eq_run},
    [XF_OP_LESS_OR_EQUAL] = {b_less_eq_run, bi_less_eq_run},
    [XF_OP_MOD] = {b_mod_run, bi_mod_run},
    [XF_OP_AND] = {NULL, bi_and_run},
    [XF_OP_OR] = {NULL, bi_or_run},
    [XF_OP_XOR] = {NULL, bi_xor_run},
    [XF_OP_PRELU] = {b_prelu_run, bi_prelu_run},
    [XF_OP_MEAN] = {b_add_run, bi_add_run},
    [XF_OP_BIT_SHIFT] = {NULL, bi_shift_left_run},
    [XF_OP_BITWISE_AND] = {NULL, bi_bit_and_run},
    [XF_OP_BITWISE_OR] = {NULL, bi_bit_or_run},
    [XF_OP_BITWISE_XOR] = {NULL, bi_bit_xor_run},
};
static const binary_def fmod_def = {b_fmod_run, bi_fmod_run}, shift_right_def = {NULL, bi_shift_right_run},
                        shift_right_signed_def = {NULL, bi_shift_right_signed_run};

static void binary_block(const ew_ctx *e, const int64_t *off, const int64_t *step, int64_t n)
{
    if (e->ints) {
        int64_t ab[XF_RT_BLOCK], bb[XF_RT_BLOCK], ob[XF_RT_BLOCK], *o = out_i64(e->o, off[0], ob);
        e->bd->i(o, LOAD_I64(e, 0, off, step, n, ab), LOAD_I64(e, 1, off, step, n, bb), n);
        xf_rt_store_i64_run(e->o->dtype, e->o->data, off[0], n, o);
    } else {
        double ab[XF_RT_BLOCK], bb[XF_RT_BLOCK], ob[XF_RT_BLOCK], *o = out_f64(e->o, off[0], ob);
        e->bd->f(o, LOAD_F64(e, 0, off, step, n, ab), LOAD_F64(e, 1, off, step, n, bb), n);
        xf_rt_store_f64_run(e->o->dtype, e->o->data, off[0], n, o);
    }
}

/* o = d(a, b) with broadcasting.  o may be a itself (same shape and dtype):
 * every block is read before it is written. */
static xf_status binary_apply(const xf_node *n, const binary_def *d, const xf_tensor_view *a,
                              const xf_tensor_view *b, const xf_tensor_view *o, xf_error *err)
{
    if (!xf_rt_broadcastable(&a->shape, &o->shape) || !xf_rt_broadcastable(&b->shape, &o->shape))
        return xf_rt_bad_node(err, n, "operands do not broadcast to the output shape");
    /* Pow of an integer by a float is computed in floating point */
    ew_ctx e = {.o = o, .v = {a, b}, .bd = d, .ints = xf_rt_is_integral(a->dtype) && xf_rt_is_integral(b->dtype)};
    const xf_shape *shapes[] = {&a->shape, &b->shape};
    walk_blocks(&o->shape, shapes, 2, binary_block, &e);
    return XF_OK;
}

xf_status xf_ref_binary(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out,
                        xf_error *err)
{
    bool shift_right = n->op == XF_OP_BIT_SHIFT && n->attrs.shift_right;
    const binary_def *d = n->op == XF_OP_MOD && n->attrs.fmod                    ? &fmod_def
                          : shift_right && xf_dtype_is_signed_int(in[0].dtype) ? &shift_right_signed_def
                          : shift_right                                          ? &shift_right_def
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
    if (xf_rt_is_integral(acc->dtype)) {
        int64_t v = xf_rt_load_i64(acc->dtype, acc->data, i), w = xf_rt_load_i64(x->dtype, x->data, j);
        d->i(&v, &v, &w, 1);
        xf_rt_store_i64(acc->dtype, acc->data, i, v);
    } else {
        double v = xf_rt_load_f64(acc->dtype, acc->data, i), w = xf_rt_load_f64(x->dtype, x->data, j);
        d->f(&v, &v, &w, 1);
        xf_rt_store_f64(acc->dtype, acc->data, i, v);
    }
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

static void mean_block(const ew_ctx *e, const int64_t *off, const int64_t *step, int64_t n)
{
    double ob[XF_RT_BLOCK];
    const double *v = LOAD_F64(e, 0, off, step, n, ob);
    double *o = out_f64(e->o, off[0], ob);
    for (int64_t k = 0; k < n; k++)
        o[k] = v[k] / e->count;
    xf_rt_store_f64_run(e->o->dtype, e->o->data, off[0], n, o);
}

/* Mean: the inputs' Sum (accumulated in the output's type, as ONNX's
 * reference does), divided by their number. */
xf_status xf_ref_mean(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err)
{
    xf_status st = xf_ref_variadic(n, in, out, err);
    if (st == XF_OK && n->n_inputs > 1) {
        ew_ctx e = {.o = &out[0], .v = {&out[0]}, .count = n->n_inputs};
        walk_flat(xf_rt_numel(&out[0]), mean_block, &e);
    }
    return st;
}

static void swiglu_block(const ew_ctx *e, const int64_t *off, const int64_t *step, int64_t n)
{
    double ab[XF_RT_BLOCK], bb[XF_RT_BLOCK], sw[XF_RT_BLOCK], ob[XF_RT_BLOCK], *o = out_f64(e->o, off[0], ob);
    u_swish_run(sw, LOAD_F64(e, 0, off, step, n, ab), n, e->attrs);
    const double *b = LOAD_F64(e, 1, off, step, n, bb);
    for (int64_t k = 0; k < n; k++)
        o[k] = sw[k] * b[k];
    xf_rt_store_f64_run(e->o->dtype, e->o->data, off[0], n, o);
}

/* SwiGLU: Swish(A) * B (Swish's alpha), A, B and Y of one shape, in
 * double and rounded once. */
xf_status xf_ref_swiglu(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err)
{
    if (!xf_shape_equal(&in[0].shape, &in[1].shape) || !xf_shape_equal(&in[0].shape, &out[0].shape))
        return xf_rt_bad_node(err, n, "A, B and Y differ in shape");
    ew_ctx e = {.o = &out[0], .v = {&in[0], &in[1]}, .attrs = &n->attrs};
    const xf_shape *shapes[] = {&in[0].shape, &in[1].shape};
    walk_blocks(&out[0].shape, shapes, 2, swiglu_block, &e);
    return XF_OK;
}

/* ---------------------------------------------------------------- Where, Clip, Cast */

/* The block of operand k (elements of size sizeof(T)) as a contiguous
 * array: itself, or gathered into buf. */
#define WHERE_SRC(T, k, buf)                                                                                       \
    (step[k] == 1 ? (const T *)e->v[(k) - 1]->data + off[k] : gather_##T(e->v[(k) - 1]->data, off[k], step[k], n, buf))
#define WHERE_GATHER(T)                                                                                            \
    static const T *gather_##T(const void *base, int64_t i, int64_t s, int64_t n, T *buf)                          \
    {                                                                                                              \
        const T *p = (const T *)base + i;                                                                          \
        for (int64_t k = 0; k < n; k++)                                                                            \
            buf[k] = p[k * s];                                                                                     \
        return buf;                                                                                                \
    }
WHERE_GATHER(uint8_t) WHERE_GATHER(uint16_t) WHERE_GATHER(uint32_t) WHERE_GATHER(uint64_t)
#define WHERE_RUN(T)                                                                                               \
    do {                                                                                                           \
        T xb[XF_RT_BLOCK], yb[XF_RT_BLOCK], *o = (T *)e->o->data + off[0];                                         \
        const T *x = WHERE_SRC(T, 2, xb), *y = WHERE_SRC(T, 3, yb);                                                \
        for (int64_t k = 0; k < n; k++)                                                                            \
            o[k] = c[k] ? x[k] : y[k];                                                                             \
        return;                                                                                                    \
    } while (0)

static void where_block(const ew_ctx *e, const int64_t *off, const int64_t *step, int64_t n)
{
    uint8_t cb[XF_RT_BLOCK];
    const uint8_t *c = WHERE_SRC(uint8_t, 1, cb);
    size_t es = xf_dtype_size(e->o->dtype);
    switch (es) {
    case 1: WHERE_RUN(uint8_t);
    case 2: WHERE_RUN(uint16_t);
    case 4: WHERE_RUN(uint32_t);
    case 8: WHERE_RUN(uint64_t);
    default:
        for (int64_t k = 0; k < n; k++) {
            const xf_tensor_view *src = c[k] ? e->v[1] : e->v[2];
            int64_t i = c[k] ? off[2] + k * step[2] : off[3] + k * step[3];
            memcpy((char *)e->o->data + (off[0] + k) * es, (const char *)src->data + i * es, es);
        }
    }
}

xf_status xf_ref_where(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out,
                       xf_error *err)
{
    const xf_tensor_view *o = &out[0];
    for (int k = 0; k < 3; k++)
        if (!xf_rt_broadcastable(&in[k].shape, &o->shape))
            return xf_rt_bad_node(err, n, "operands do not broadcast to the output shape");
    ew_ctx e = {.o = o, .v = {&in[0], &in[1], &in[2]}};
    const xf_shape *shapes[] = {&in[0].shape, &in[1].shape, &in[2].shape};
    walk_blocks(&o->shape, shapes, 3, where_block, &e);
    return XF_OK;
}

/* min first, then max: with min > max every element becomes max, as in numpy */
static void clip_block(const ew_ctx *e, const int64_t *off, const int64_t *step, int64_t n)
{
    if (e->ints) {
        int64_t xb[XF_RT_BLOCK], ob[XF_RT_BLOCK], *o = out_i64(e->o, off[0], ob);
        const int64_t *x = LOAD_I64(e, 0, off, step, n, xb);
        for (int64_t k = 0; k < n; k++) {
            int64_t v = x[k] < e->ilo ? e->ilo : x[k];
            o[k] = v > e->ihi ? e->ihi : v;
        }
        xf_rt_store_i64_run(e->o->dtype, e->o->data, off[0], n, o);
    } else {
        double xb[XF_RT_BLOCK], ob[XF_RT_BLOCK], *o = out_f64(e->o, off[0], ob);
        const double *x = LOAD_F64(e, 0, off, step, n, xb);
        for (int64_t k = 0; k < n; k++) {
            double v = x[k] < e->lo ? e->lo : x[k];
            o[k] = v > e->hi ? e->hi : v;
        }
        xf_rt_store_f64_run(e->o->dtype, e->o->data, off[0], n, o);
    }
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
    ew_ctx e = {.o = y, .v = {x}, .ints = xf_rt_is_integral(x->dtype)};
    if (e.ints) {
        e.ilo = lo ? xf_rt_load_i64(lo->dtype, lo->data, 0) : INT64_MIN;
        e.ihi = hi ? xf_rt_load_i64(hi->dtype, hi->data, 0) : INT64_MAX;
    } else {
        e.lo = lo ? xf_rt_load_f64(lo->dtype, lo->data, 0) : n->attrs.has_clip_attrs ? n->attrs.clip_min : -INFINITY;
        e.hi = hi ? xf_rt_load_f64(hi->dtype, hi->data, 0) : n->attrs.has_clip_attrs ? n->attrs.clip_max : INFINITY;
    }
    walk_flat(xf_rt_numel(y), clip_block, &e);
    return XF_OK;
}

static void cast_block(const ew_ctx *e, const int64_t *off, const int64_t *step, int64_t n)
{
    if (e->ints) {
        int64_t xb[XF_RT_BLOCK];
        xf_rt_store_i64_run(e->o->dtype, e->o->data, off[0], n, LOAD_I64(e, 0, off, step, n, xb));
    } else {
        double xb[XF_RT_BLOCK];
        xf_rt_store_f64_run(e->o->dtype, e->o->data, off[0], n, LOAD_F64(e, 0, off, step, n, xb));
    }
}

/* Cast to float8 with saturate 0, or to float8e8m0 with either attribute
 * not its default (the stores' conversions are the defaults). */
static bool cast_modes_matter(const xf_node *n, xf_dtype to)
{
    return (xf_float8_known(to) && n->attrs.no_saturate) ||
           (to == XF_DT_FLOAT8E8M0 && (n->attrs.no_saturate || n->attrs.round_mode != XF_ROUND_UP));
}

xf_status xf_ref_cast(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out,
                      xf_error *err)
{
    const xf_tensor_view *x = &in[0], *y = &out[0];
    int64_t numel = xf_rt_numel(y);
    if (xf_rt_numel(x) != numel)
        return xf_rt_bad_node(err, n, "input and output sizes differ");
    if (numel > 0 && xf_dtype_size(y->dtype) == 0) /* packed: the spare bits of the last byte stay 0 */
        memset(y->data, 0, xf_rt_bytes(y));
    if (cast_modes_matter(n, y->dtype)) {
        bool saturate = !n->attrs.no_saturate;
        for (int64_t i = 0; i < numel; i++) {
            float v = (float)xf_rt_load_f64(x->dtype, x->data, i);
            ((uint8_t *)y->data)[i] = y->dtype == XF_DT_FLOAT8E8M0
                                          ? xf_f32_to_e8m0(v, saturate, (xf_round_mode)n->attrs.round_mode)
                                          : xf_f32_to_float8(y->dtype, v, saturate);
        }
        return XF_OK;
    }
    /* int64 between integer types keeps every value exact and wraps like
     * ONNX; any float side goes through double */
    ew_ctx e = {.o = y, .v = {x}, .ints = xf_rt_is_integral(x->dtype) && xf_rt_is_integral(y->dtype)};
    walk_flat(numel, cast_block, &e);
    return XF_OK;
}
