/* The elementwise ops added after the core set: Sign, Round, IsInf, the
 * trigonometric and hyperbolic functions, Softsign, ThresholdedRelu, Selu,
 * Celu, Shrink, Mish, Gelu, PRelu, Mean, BitShift and CastLike.  cpu_ref
 * against hand-computed values (static and dynamic mode), the `cpu`
 * backend's oneDNN forms of Round, Mish and Gelu, shape and dtype
 * inference (symbolic dims included) and the errors for operands and
 * attributes that do not fit. */
#include "kernel_case_util.h"
#include "proto_util.h"
#include "xf_test_util.h"

#include <check.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#define U8(dims, ...) mk(XF_DT_UINT8, dims, (uint8_t[]){__VA_ARGS__})
#define U64(dims, ...) mk(XF_DT_UINT64, dims, (uint64_t[]){__VA_ARGS__})
#define F64(dims, ...) mk(XF_DT_DOUBLE, dims, (double[]){__VA_ARGS__})

/* op on a float vector. */
static xf_tensor *unary(xf_op op, xf_tensor *x) { return run1(make_case(op, 1, x)); }

/* ------------------------------------------------------------ unary */

START_TEST(trigonometric_and_hyperbolic)
{
    EXPECT(unary(XF_OP_TAN, F32(DIMS(3), 0, 0.5, -1)), XF_DT_FLOAT, DIMS(3), 0, 0.5463024898, -1.5574077247);
    EXPECT(unary(XF_OP_ATAN, F32(DIMS(3), 0, 1, -2)), XF_DT_FLOAT, DIMS(3), 0, 0.7853981634, -1.1071487178);
    /* outside [-1, 1] the inverse sine and cosine are NaN */
    EXPECT(unary(XF_OP_ASIN, F32(DIMS(3), 0.5, -1, 1.5)), XF_DT_FLOAT, DIMS(3), 0.5235987756, -1.5707963268, NAN);
    EXPECT(unary(XF_OP_ACOS, F32(DIMS(3), -1, 0.5, -2)), XF_DT_FLOAT, DIMS(3), 3.1415926536, 1.0471975512, NAN);
    EXPECT(unary(XF_OP_SINH, F32(DIMS(3), 0, 1, -2)), XF_DT_FLOAT, DIMS(3), 0, 1.1752011936, -3.6268604078);
    EXPECT(unary(XF_OP_COSH, F32(DIMS(3), 0, 1, -2)), XF_DT_FLOAT, DIMS(3), 1, 1.5430806348, 3.7621956911);
    EXPECT(unary(XF_OP_ASINH, F32(DIMS(3), 0, 1, -2)), XF_DT_FLOAT, DIMS(3), 0, 0.8813735870, -1.4436354752);
    EXPECT(unary(XF_OP_ACOSH, F32(DIMS(3), 1, 2, 0.5)), XF_DT_FLOAT, DIMS(3), 0, 1.3169578969, NAN);
    EXPECT(unary(XF_OP_ATANH, F32(DIMS(4), 0.5, -0.5, 1, 2)), XF_DT_FLOAT, DIMS(4), 0.5493061443, -0.5493061443,
           INFINITY, NAN);
    /* double computes in double */
    xf_tensor *y = unary(XF_OP_TAN, F64(DIMS(1), 1e-9));
    ck_assert_int_eq(y->dtype, XF_DT_DOUBLE);
    ck_assert_double_eq_tol(((const double *)y->data)[0], 1e-9, 1e-24);
    xf_tensor_release(y);
}
END_TEST

/* Sign of floats keeps NaN; of integers it is exact, unsigned ones (uint64
 * above INT64_MAX too) being 0 or 1. */
START_TEST(sign)
{
    EXPECT(unary(XF_OP_SIGN, F32(DIMS(6), -2.5, -0.0, 0, 3e-30, INFINITY, NAN)), XF_DT_FLOAT, DIMS(6), -1, 0, 0, 1,
           1, NAN);
    EXPECT(unary(XF_OP_SIGN, I64(DIMS(4), INT64_MIN, -7, 0, INT64_MAX)), XF_DT_INT64, DIMS(4), -1, -1, 0, 1);
    EXPECT(unary(XF_OP_SIGN, I32(DIMS(3), -5, 0, 9)), XF_DT_INT32, DIMS(3), -1, 0, 1);
    xf_tensor *y = unary(XF_OP_SIGN, U64(DIMS(3), 0, 1, UINT64_MAX - 1));
    const uint64_t *v = y->data;
    ck_assert(y->dtype == XF_DT_UINT64 && v[0] == 0 && v[1] == 1 && v[2] == 1);
    xf_tensor_release(y);
    /* Abs of such a uint64 is itself */
    y = unary(XF_OP_ABS, U64(DIMS(1), UINT64_MAX));
    ck_assert(((const uint64_t *)y->data)[0] == UINT64_MAX);
    xf_tensor_release(y);
}
END_TEST

/* Round takes halves to the even neighbour. */
START_TEST(round_half_to_even)
{
    EXPECT(unary(XF_OP_ROUND, F32(DIMS(11), -2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 0.49999997f, 2.3, -2.7, INFINITY, NAN)),
           XF_DT_FLOAT, DIMS(11), -2, -2, 0, 0, 2, 2, 0, 2, -3, INFINITY, NAN);
    EXPECT(unary(XF_OP_ROUND, F64(DIMS(3), 4503599627370495.5, -3.5, 1e300)), XF_DT_DOUBLE, DIMS(3),
           4503599627370496.0, -4, 1e300);
    uint16_t h[2] = {xf_f32_to_f16(3.5f), xf_f32_to_f16(-4.5f)};
    EXPECT(unary(XF_OP_ROUND, mk(XF_DT_FLOAT16, DIMS(2), h)), XF_DT_FLOAT16, DIMS(2), 4, -4);
}
END_TEST

/* IsInf answers bool, for the signs detect_negative and detect_positive
 * leave on. */
START_TEST(is_inf)
{
    for (int form = 0; form < 4; form++) {
        node_case c = make_case(XF_OP_IS_INF, 1, F32(DIMS(5), -INFINITY, -1, 0, INFINITY, NAN));
        c.a.isinf_no_neg = form & 1;
        c.a.isinf_no_pos = form >> 1;
        EXPECT(run1(c), XF_DT_BOOL, DIMS(5), !(form & 1), 0, 0, !(form >> 1), 0);
    }
    EXPECT(unary(XF_OP_IS_INF, F64(DIMS(2), 1e308, -INFINITY)), XF_DT_BOOL, DIMS(2), 0, 1);
}
END_TEST

/* The activations with parameters, at their defaults and away from them. */
START_TEST(activations)
{
    EXPECT(unary(XF_OP_SOFTSIGN, F32(DIMS(3), 3, -0.5, 0)), XF_DT_FLOAT, DIMS(3), 0.75, -1.0 / 3, 0);
    /* ThresholdedRelu keeps x > alpha only (alpha itself gives 0) */
    EXPECT(unary(XF_OP_THRESHOLDED_RELU, F32(DIMS(4), 1, 1.5, -3, 0.5)), XF_DT_FLOAT, DIMS(4), 0, 1.5, 0, 0);
    node_case c = make_case(XF_OP_THRESHOLDED_RELU, 1, F32(DIMS(3), -1, -0.5, 0));
    c.a.alpha = -0.75f;
    EXPECT(run1(c), XF_DT_FLOAT, DIMS(3), 0, -0.5, 0);
    /* Selu's defaults: gamma * alpha * (e^x - 1) below 0, gamma * x above */
    EXPECT(unary(XF_OP_SELU, F32(DIMS(3), -1, 2, 0)), XF_DT_FLOAT, DIMS(3), -1.1113307413, 2.1014020443, 0);
    c = make_case(XF_OP_SELU, 1, F32(DIMS(2), -1, 2));
    c.a.alpha = 2;
    c.a.beta = 3;
    EXPECT(run1(c), XF_DT_FLOAT, DIMS(2), 6 * (exp(-1.0) - 1), 6);
    /* Celu: alpha * (e^(x / alpha) - 1) below 0 */
    c = make_case(XF_OP_CELU, 1, F32(DIMS(3), -1, 3, 0));
    c.a.alpha = 2;
    EXPECT(run1(c), XF_DT_FLOAT, DIMS(3), -0.7869386806, 3, 0);
    EXPECT(unary(XF_OP_CELU, F32(DIMS(2), -1, 1)), XF_DT_FLOAT, DIMS(2), exp(-1.0) - 1, 1);
    /* Shrink: lambd 0.5, bias 0 by default */
    EXPECT(unary(XF_OP_SHRINK, F32(DIMS(5), -1, -0.5, 0.3, 0.5, 2)), XF_DT_FLOAT, DIMS(5), -1, 0, 0, 0, 2);
    c = make_case(XF_OP_SHRINK, 1, F32(DIMS(4), -2, -1, 1, 3));
    c.a.alpha = 1.5f;
    c.a.beta = 1.5f;
    EXPECT(run1(c), XF_DT_FLOAT, DIMS(4), -0.5, 0, 0, 1.5);
    /* integers are computed in floating point and cast back (toward 0) */
    c = make_case(XF_OP_SHRINK, 1, mk(XF_DT_INT8, DIMS(4), (int8_t[]){-5, -1, 1, 5}));
    c.a.alpha = 1.5f;
    c.a.beta = 1.5f;
    EXPECT(run1(c), XF_DT_INT8, DIMS(4), -3, 0, 0, 3);
}
END_TEST

/* Mish and both forms of Gelu; far below 0 their results are tiny, not 0
 * or NaN. */
START_TEST(mish_and_gelu)
{
    EXPECT(unary(XF_OP_MISH, F32(DIMS(4), 1, -1, 0, 100)), XF_DT_FLOAT, DIMS(4), 0.8650983883, -0.3034014614, 0, 100);
    EXPECT(unary(XF_OP_GELU, F32(DIMS(3), 1, -1, 0)), XF_DT_FLOAT, DIMS(3), 0.8413447461, -0.1586552539, 0);
    node_case c = make_case(XF_OP_GELU, 1, F32(DIMS(3), 1, -1, 3));
    c.a.gelu_tanh = 1;
    EXPECT(run1(c), XF_DT_FLOAT, DIMS(3), 0.8411919906, -0.1588080094, 2.9963626079);
    xf_tensor *m = unary(XF_OP_MISH, F64(DIMS(1), -30)), *g = unary(XF_OP_GELU, F64(DIMS(1), -10));
    ck_assert_double_eq_tol(((const double *)m->data)[0], -2.807286890651921e-12, 1e-24);
    ck_assert_double_eq_tol(((const double *)g->data)[0], -7.619853024160593e-23, 1e-35);
    xf_tensor_release(m);
    xf_tensor_release(g);
}
END_TEST

/* ------------------------------------------------------------ PRelu, Mean, BitShift, CastLike */

/* slope broadcasts to X; integers multiply exactly; an unsigned X is its
 * own result. */
START_TEST(prelu)
{
    EXPECT(run1(make_case(XF_OP_PRELU, 2, F32(DIMS(2, 3), -1, 2, -3, 4, -5, 0), F32(DIMS(3), 0.1, 0.2, 0.3))),
           XF_DT_FLOAT, DIMS(2, 3), -0.1, 2, -0.9, 4, -1, 0);
    EXPECT(run1(make_case(XF_OP_PRELU, 2, F32(DIMS(2, 2), -1, 2, -3, 4), F32(DIMS(2, 1), 2, 3))), XF_DT_FLOAT,
           DIMS(2, 2), -2, 2, -9, 4);
    EXPECT(run1(make_case(XF_OP_PRELU, 2, F32(DIMS(3), -2, 0, 2), F32(SCALAR, 0.25))), XF_DT_FLOAT, DIMS(3), -0.5, 0,
           2);
    EXPECT(run1(make_case(XF_OP_PRELU, 2, I64(DIMS(3), -4, 5, 0), I64(DIMS(1), 3))), XF_DT_INT64, DIMS(3), -12, 5, 0);
    EXPECT(run1(make_case(XF_OP_PRELU, 2, I32(DIMS(2), -4, 5), I32(DIMS(2), -2, -2))), XF_DT_INT32, DIMS(2), 8, 5);
}
END_TEST

START_TEST(prelu_unsigned_and_legacy)
{
    xf_tensor *y = run1(make_case(XF_OP_PRELU, 2, U64(DIMS(2), UINT64_MAX, 3), U64(DIMS(1), 2)));
    ck_assert(((const uint64_t *)y->data)[0] == UINT64_MAX && ((const uint64_t *)y->data)[1] == 3);
    xf_tensor_release(y);
    /* before opset 7 a 1-D slope holds one value per channel (axis 1), here
     * where numpy would align it with the last axis */
    node_case c = make_case(XF_OP_PRELU, 2, F32(DIMS(1, 2, 3), -1, -1, -1, -1, -1, 1), F32(DIMS(2), 2, 3));
    c.a.prelu_channels = true;
    c.opset = 6;
    EXPECT(run1(c), XF_DT_FLOAT, DIMS(1, 2, 3), -2, -2, -2, -3, -3, 1);
    c = make_case(XF_OP_PRELU, 2, F32(DIMS(2, 2), -1, -1, -1, 2), F32(DIMS(2, 2), 1, 2, 3, 4));
    c.a.prelu_channels = true;
    c.opset = 6;
    EXPECT(run1(c), XF_DT_FLOAT, DIMS(2, 2), -1, -2, -3, 2);
}
END_TEST

/* Mean: the sum of the (broadcast) inputs over their number. */
START_TEST(mean)
{
    EXPECT(run1(make_case(XF_OP_MEAN, 1, F32(DIMS(2), 3, -1))), XF_DT_FLOAT, DIMS(2), 3, -1);
    EXPECT(run1(make_case(XF_OP_MEAN, 2, F32(DIMS(2), 3, -1), F32(DIMS(2), 2, 2))), XF_DT_FLOAT, DIMS(2), 2.5, 0.5);
    EXPECT(run1(make_case(XF_OP_MEAN, 3, F32(DIMS(2, 1), 1, 2), F32(DIMS(3), 0, 3, 6), F32(SCALAR, 3))), XF_DT_FLOAT,
           DIMS(2, 3), 4.0 / 3, 7.0 / 3, 10.0 / 3, 5.0 / 3, 8.0 / 3, 11.0 / 3);
    EXPECT(run1(make_case(XF_OP_MEAN, 2, F64(DIMS(1), 1e300), F64(DIMS(1), 1e300))), XF_DT_DOUBLE, DIMS(1), 1e300);
}
END_TEST

/* BitShift of unsigned integers: bits shifted past the type's width are
 * lost, shifting by the width or more gives 0. */
START_TEST(bit_shift)
{
    node_case c = make_case(XF_OP_BIT_SHIFT, 2, U8(DIMS(5), 1, 200, 255, 3, 16), U8(DIMS(5), 7, 1, 8, 0, 2));
    EXPECT(run1(c), XF_DT_UINT8, DIMS(5), 128, 144, 0, 3, 64);
    c = make_case(XF_OP_BIT_SHIFT, 2, U8(DIMS(2, 2), 255, 16, 1, 128), U8(DIMS(2), 4, 9));
    c.a.shift_right = 1;
    EXPECT(run1(c), XF_DT_UINT8, DIMS(2, 2), 15, 0, 0, 0);
    c = make_case(XF_OP_BIT_SHIFT, 2, U64(DIMS(3), UINT64_MAX, 1, 5), U64(DIMS(3), 63, 63, 64));
    c.a.shift_right = 1;
    xf_tensor *y = run1(c);
    const uint64_t *v = y->data;
    ck_assert(v[0] == 1 && v[1] == 0 && v[2] == 0);
    xf_tensor_release(y);
    y = run1(make_case(XF_OP_BIT_SHIFT, 2, U64(DIMS(2), 1, 3), U64(DIMS(1), 63)));
    v = y->data;
    ck_assert(v[0] == (uint64_t)1 << 63 && v[1] == (uint64_t)1 << 63);
    xf_tensor_release(y);
}
END_TEST

/* Opset 28's signed BitShift: a right shift fills with the sign bit (past
 * the width or by a negative amount only the fill is left: -1 or 0), a
 * left shift wraps into and past the sign bit; before opset 28 signed
 * types fail inference naming the node. */
START_TEST(bit_shift_signed)
{
    int8_t a[] = {-128, -128, -128, -7, 5, 64, 1, 3}, b[] = {1, 9, -1, 1, 9, 1, 8, -2};
    node_case c = make_case(XF_OP_BIT_SHIFT, 2, mk(XF_DT_INT8, DIMS(8), a), mk(XF_DT_INT8, DIMS(8), b));
    c.opset = 28;
    c.a.shift_right = 1;
    EXPECT(run1(c), XF_DT_INT8, DIMS(8), -64, -1, -1, -4, 0, 32, 0, 0);
    c = make_case(XF_OP_BIT_SHIFT, 2, mk(XF_DT_INT8, DIMS(8), a), mk(XF_DT_INT8, DIMS(8), b));
    c.opset = 28;
    EXPECT(run1(c), XF_DT_INT8, DIMS(8), 0, 0, 0, -14, 0, -128, 0, 0);
    c = make_case(XF_OP_BIT_SHIFT, 2, I32(DIMS(3), -1, INT32_MIN, 1), I32(DIMS(3), 31, 31, 31));
    c.opset = 28;
    c.a.shift_right = 1;
    EXPECT(run1(c), XF_DT_INT32, DIMS(3), -1, -1, 0);
    c = make_case(XF_OP_BIT_SHIFT, 2, I32(DIMS(1), 1), I32(DIMS(1), 1));
    c.opset = 27;
    expect_infer_error(c, "shifts unsigned integers (and from opset 28 signed ones), got INT32");
}
END_TEST

/* CastLike casts to the type of its second input, whatever its shape and
 * values. */
START_TEST(cast_like)
{
    EXPECT(run1(make_case(XF_OP_CAST_LIKE, 2, F32(DIMS(2, 2), 1.9, -1.9, 0, 300), I32(DIMS(1), 0))), XF_DT_INT32,
           DIMS(2, 2), 1, -1, 0, 300);
    EXPECT(run1(make_case(XF_OP_CAST_LIKE, 2, F32(DIMS(3), 0.5, 0, -2), BOOLS(DIMS(2, 2), 1, 1, 1, 1))), XF_DT_BOOL,
           DIMS(3), 1, 0, 1);
    EXPECT(run1(make_case(XF_OP_CAST_LIKE, 2, I64(DIMS(2), 16777217, -3), F64(SCALAR, 7))), XF_DT_DOUBLE, DIMS(2),
           16777217, -3);
    EXPECT(run1(make_case(XF_OP_CAST_LIKE, 2, I64(DIMS(1), 16777217), mk(XF_DT_FLOAT, DIMS(0), NULL))), XF_DT_FLOAT, DIMS(1),
           16777216);
    uint16_t h = xf_f32_to_f16(1.0f);
    EXPECT(run1(make_case(XF_OP_CAST_LIKE, 2, F32(DIMS(2), 1.0009765625, 65520), mk(XF_DT_FLOAT16, DIMS(1), &h))),
           XF_DT_FLOAT16, DIMS(2), 1.0009765625, INFINITY);
}
END_TEST

/* ------------------------------------------------------------ the cpu backend */

/* Runs c on backend with every input fed (so that nothing is folded into
 * a constant when the session is made); NULL without that backend. */
static xf_tensor *run_on(const char *backend, node_case c)
{
    if (!xf_backend_find(backend)) {
        printf("skipped: no %s backend in this build\n", backend);
        for (int k = 0; k < c.n_in; k++)
            xf_tensor_release(c.in[k]);
        return NULL;
    }
    c.feed = (1u << c.n_in) - 1;
    xf_graph *g = case_graph(&c);
    xf_session *s;
    xf_error e = {0};
    ck_assert_msg(xf_session_create(g, c.opset, backend, NULL, &s, &e) == XF_OK, "%s", e.msg);
    xf_tensor *out = NULL;
    ck_assert_msg(xf_session_run(s, c.in, &out, &e) == XF_OK, "%s", e.msg);
    xf_session_free(s);
    xf_graph_free(g);
    for (int k = 0; k < c.n_in; k++)
        xf_tensor_release(c.in[k]);
    return out;
}

/* oneDNN runs Round (halves to even, as ONNX), Mish, Gelu and PRelu
 * (opset 7 on) on the cpu backend; Mean and the rest fall back to
 * cpu_ref's kernels. */
START_TEST(cpu_backend_forms)
{
    xf_tensor *y = run_on("cpu", make_case(XF_OP_ROUND, 1, F32(DIMS(8), -2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 3.5, -0.7)));
    if (!y)
        return;
    EXPECT(y, XF_DT_FLOAT, DIMS(8), -2, -2, 0, 0, 2, 2, 4, -1);
    EXPECT(run_on("cpu", make_case(XF_OP_MISH, 1, F32(DIMS(3), 1, -1, 30))), XF_DT_FLOAT, DIMS(3), 0.8650983883,
           -0.3034014614, 30);
    EXPECT(run_on("cpu", make_case(XF_OP_GELU, 1, F32(DIMS(3), 1, -1, 0))), XF_DT_FLOAT, DIMS(3), 0.8413447461,
           -0.1586552539, 0);
    node_case c = make_case(XF_OP_GELU, 1, F32(DIMS(3), 1, -1, 3));
    c.a.gelu_tanh = 1;
    EXPECT(run_on("cpu", c), XF_DT_FLOAT, DIMS(3), 0.8411919906, -0.1588080094, 2.9963626079);
    EXPECT(run_on("cpu", make_case(XF_OP_PRELU, 2, F32(DIMS(2, 2), -1, 2, -3, 4), F32(DIMS(2), 0.5, 2))),
           XF_DT_FLOAT, DIMS(2, 2), -0.5, 2, -1.5, 4);
    /* a slope per channel of an image, and one for everything */
    EXPECT(run_on("cpu", make_case(XF_OP_PRELU, 2, F32(DIMS(1, 2, 1, 2), -1, 2, -3, 4), F32(DIMS(2, 1, 1), 0.5, 3))),
           XF_DT_FLOAT, DIMS(1, 2, 1, 2), -0.5, 2, -9, 4);
    EXPECT(run_on("cpu", make_case(XF_OP_PRELU, 2, F32(DIMS(3), -4, 1, -8), F32(DIMS(1), 0.25))), XF_DT_FLOAT,
           DIMS(3), -1, 1, -2);
    /* opset 6's slope per channel (cpu_ref's kernel) */
    c = make_case(XF_OP_PRELU, 2, F32(DIMS(1, 2, 2), -1, 2, -3, 4), F32(DIMS(2), 0.5, 3));
    c.a.prelu_channels = true;
    c.opset = 6;
    EXPECT(run_on("cpu", c), XF_DT_FLOAT, DIMS(1, 2, 2), -0.5, 2, -9, 4);
    EXPECT(run_on("cpu", make_case(XF_OP_MEAN, 2, F32(DIMS(2), 1, 2), F32(DIMS(2), 2, 6))), XF_DT_FLOAT, DIMS(2),
           1.5, 4);
}
END_TEST

/* ------------------------------------------------------------ shape inference */

/* y's dtype and shape after inference of c, which must pass. */
static void expect_inferred(node_case c, xf_dtype dt, int ndim, const int64_t *dims)
{
    xf_graph *g = case_graph(&c);
    xf_error e = {0};
    ck_assert_msg(xf_graph_infer_shapes(g, c.opset, &e) == XF_OK, "%s", e.msg);
    const xf_value *y = &g->values[g->outputs[0]];
    xf_shape want = xf_shape_make(ndim, dims);
    char a[64], b[64];
    ck_assert_msg(y->dtype == dt && xf_shape_equal(&y->shape, &want), "%s %s, want %s %s", xf_dtype_name(y->dtype),
                  xf_shape_str(&y->shape, a, sizeof a), xf_dtype_name(dt), xf_shape_str(&want, b, sizeof b));
    xf_graph_free(g);
    for (int k = 0; k < c.n_in; k++)
        xf_tensor_release(c.in[k]);
}

START_TEST(inferred_types_and_shapes)
{
    expect_inferred(make_case(XF_OP_IS_INF, 1, F32(DIMS(2, 3), 0, 0, 0, 0, 0, 0)), XF_DT_BOOL, DIMS(2, 3));
    expect_inferred(make_case(XF_OP_CAST_LIKE, 2, F32(DIMS(2, 1), 0, 0), I64(DIMS(3), 0, 0, 0)), XF_DT_INT64,
                    DIMS(2, 1));
    expect_inferred(make_case(XF_OP_PRELU, 2, F32(DIMS(2, 1, 3), 0, 0, 0, 0, 0, 0), F32(DIMS(1, 3), 0, 0, 0)),
                    XF_DT_FLOAT, DIMS(2, 1, 3));
    expect_inferred(make_case(XF_OP_MEAN, 3, F32(DIMS(2, 1), 0, 0), F32(DIMS(4), 0, 0, 0, 0), F32(SCALAR, 0)),
                    XF_DT_FLOAT, DIMS(2, 4));
    expect_inferred(make_case(XF_OP_BIT_SHIFT, 2, U8(DIMS(3, 1), 0, 0, 0), U8(DIMS(1, 2), 0, 0)), XF_DT_UINT8,
                    DIMS(3, 2));
    expect_inferred(make_case(XF_OP_SHRINK, 1, mk(XF_DT_INT32, DIMS(0, 2), NULL)), XF_DT_INT32, DIMS(0, 2));
}
END_TEST

/* A model whose input has a symbolic batch dim N: PRelu, Mean, IsInf and
 * CastLike carry the size --dim gives N (or 1, the guess, without one). */
START_TEST(symbolic_dims)
{
    static const int64_t xd[] = {-1, 3}, three[] = {3};
    static const float slope[] = {0.1f, 0.2f, 0.3f};
    static const int64_t like = 0;
    for (int given = 0; given < 2; given++) {
        Onnx__GraphProto *g = mk_graph("g");
        PUSH(g->n_input, g->input, mk_vi("x", XF_DT_FLOAT, 2, xd, (const char *[]){"N", NULL}));
        PUSH(g->n_initializer, g->initializer, mk_raw("slope", XF_DT_FLOAT, 1, three, slope, sizeof slope));
        PUSH(g->n_initializer, g->initializer, mk_raw("like", XF_DT_INT64, 0, NULL, &like, sizeof like));
        PUSH(g->n_node, g->node, mk_node("PRelu", "p", (const char *[]){"x", "slope", NULL}, (const char *[]){"a", NULL}));
        PUSH(g->n_node, g->node, mk_node("Mean", "m", (const char *[]){"a", "slope", "x", NULL}, (const char *[]){"b", NULL}));
        PUSH(g->n_node, g->node, mk_node("IsInf", "i", (const char *[]){"b", NULL}, (const char *[]){"c", NULL}));
        PUSH(g->n_node, g->node, mk_node("CastLike", "k", (const char *[]){"c", "like", NULL}, (const char *[]){"y", NULL}));
        PUSH(g->n_output, g->output, mk_vi("y", XF_DT_INT64, 2, xd, (const char *[]){"N", NULL}));
        xf_dim_size n5[] = {{"N", 5}};
        xf_load_options lo = {.dim_sizes = n5, .n_dim_sizes = given};
        xf_model *m;
        xf_error e;
        ck_assert_msg(load_proto(mk_model(g, 16), &lo, &m, &e) == XF_OK, "%s", e.msg);
        int counts[XF_OP_COUNT + 1];
        xf_graph_count_ops(m->graph, counts);
        ck_assert(counts[XF_OP_PRELU] == 1 && counts[XF_OP_MEAN] == 1 && counts[XF_OP_IS_INF] == 1 &&
                  counts[XF_OP_CAST_LIKE] == 1 && counts[XF_OP_OPAQUE] == 0);
        const xf_graph *gr = m->graph;
        for (int k = 0; k < gr->n_nodes; k++) {
            const xf_value *v = &gr->values[gr->nodes[k].outputs[0]];
            ck_assert_int_eq(v->shape.ndim, 2);
            ck_assert_int_eq(v->shape.dims[0], given ? 5 : 1);
            ck_assert_int_eq(v->shape.dims[1], 3);
        }
        ck_assert_int_eq(gr->values[gr->nodes[find_node_op(gr, XF_OP_IS_INF)].outputs[0]].dtype, XF_DT_BOOL);
        ck_assert_int_eq(gr->values[gr->outputs[0]].dtype, XF_DT_INT64);
        xf_model_free(m);
    }
}
END_TEST

/* ------------------------------------------------------------ errors */

START_TEST(operand_and_attribute_errors)
{
    expect_infer_error(make_case(XF_OP_PRELU, 2, F32(DIMS(2, 3), 0, 0, 0, 0, 0, 0), F32(DIMS(2), 0, 0)), "slope of shape 2 does not broadcast to X's shape 2x3");
    /* one way only: the slope may not widen X */
    expect_infer_error(make_case(XF_OP_PRELU, 2, F32(DIMS(3), 0, 0, 0), F32(DIMS(2, 3), 0, 0, 0, 0, 0, 0)), "slope of shape 2x3 does not broadcast to X's shape 3");
    node_case c = make_case(XF_OP_PRELU, 2, F32(DIMS(2, 3), 0, 0, 0, 0, 0, 0), F32(DIMS(2), 0, 0));
    c.a.prelu_channels = true;
    expect_infer_error(c, "before opset 7 a slope is one value, one per channel or one per element");
    expect_infer_error(make_case(XF_OP_PRELU, 2, F32(DIMS(1), 0), I32(DIMS(1), 0)),
                       "input 0 is FLOAT but input 1 is INT32");
    expect_infer_error(make_case(XF_OP_BIT_SHIFT, 2, F32(DIMS(1), 1), F32(DIMS(1), 1)),
                       "shifts unsigned integers (and from opset 28 signed ones), got FLOAT");
    expect_infer_error(make_case(XF_OP_MEAN, 2, F32(DIMS(2), 0, 0), F32(DIMS(3), 0, 0, 0)),
                       "shapes 2 and 3 are not broadcastable");
    c = make_case(XF_OP_CELU, 1, F32(DIMS(1), 0));
    c.a.alpha = 0;
    expect_infer_error(c, "alpha must not be 0");
}
END_TEST

/* Types an op has no form for are refused when the session is made,
 * naming the node. */
START_TEST(unsupported_types)
{
    struct {
        node_case c;
        const char *msg;
    } cases[] = {
        {make_case(XF_OP_TAN, 1, I32(DIMS(1), 1)), "on INT32"},
        {make_case(XF_OP_MEAN, 2, I64(DIMS(1), 1), I64(DIMS(1), 1)), "on INT64"},
        {make_case(XF_OP_IS_INF, 1, I64(DIMS(1), 1)), "on INT64"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        xf_graph *g = case_graph(&cases[i].c);
        xf_session *s;
        xf_error e = {0};
        ck_assert_int_eq(xf_session_create(g, 17, "cpu_ref", NULL, &s, &e), XF_ERR_UNSUPPORTED);
        ck_assert_msg(strstr(e.msg, "'n0'") && strstr(e.msg, cases[i].msg), "%s", e.msg);
        xf_graph_free(g);
        for (int k = 0; k < cases[i].c.n_in; k++)
            xf_tensor_release(cases[i].c.in[k]);
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("elementwise");
    TCase *tc = tcase_create("unary");
    tcase_add_test(tc, trigonometric_and_hyperbolic);
    tcase_add_test(tc, sign);
    tcase_add_test(tc, round_half_to_even);
    tcase_add_test(tc, is_inf);
    tcase_add_test(tc, activations);
    tcase_add_test(tc, mish_and_gelu);
    suite_add_tcase(s, tc);
    tc = tcase_create("binary");
    tcase_add_test(tc, prelu);
    tcase_add_test(tc, prelu_unsigned_and_legacy);
    tcase_add_test(tc, mean);
    tcase_add_test(tc, bit_shift);
    tcase_add_test(tc, bit_shift_signed);
    tcase_add_test(tc, cast_like);
    tcase_add_test(tc, cpu_backend_forms);
    suite_add_tcase(s, tc);
    tc = tcase_create("inference");
    tcase_add_checked_fixture(tc, NULL, free_allocs);
    tcase_add_test(tc, inferred_types_and_shapes);
    tcase_add_test(tc, symbolic_dims);
    tcase_add_test(tc, operand_and_attribute_errors);
    tcase_add_test(tc, unsupported_types);
    suite_add_tcase(s, tc);
    return xf_test_run_suite(s);
}
