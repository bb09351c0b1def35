/* LpPool, GlobalLpPool, BitwiseAnd/Or/Xor/Not, CumProd, Swish and
 * MelWeightMatrix: cpu_ref against values worked by hand (the mel
 * triangles against ONNX's reference), their shape rules and errors, their
 * attributes through ONNX import and export, the cpu backend against
 * cpu_ref and the cuda backend's support check. */
#include "backend_util.h"
#include "kernel_case_util.h"
#include "proto_util.h"
#include "xf_test_util.h"

#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* LpPool of x with p, a kernel of k (ns spatial dims), strides s, pads pb
 * (begins) and pe (ends), dilations d (NULL: the defaults). */
static node_case lp_case(xf_tensor *x, int p, int ns, const int64_t *k, const int64_t *s, const int64_t *pb,
                         const int64_t *pe, const int64_t *d)
{
    static const int64_t zeros[XF_MAX_SPATIAL] = {0}, ones[XF_MAX_SPATIAL] = {1, 1, 1};
    node_case c = make_case(XF_OP_LP_POOL, 1, x);
    c.a.lp_p = p;
    xf_bt_set_window(&c.a, ns, k, s ? s : ones, pb ? pb : zeros, pe ? pe : zeros, d ? d : ones);
    c.opset = 18;
    return c;
}

/* ------------------------------------------------------------ LpPool */

/* [1, 2, 3, 4] in windows of 2: sqrt(1 + 4), sqrt(4 + 9), sqrt(9 + 16);
 * padding adds nothing: p = 1 with a pad each side and stride 2 sums [0,
 * 1], [2, 3], [4, 0]; |x| counts, not x. */
START_TEST(lp_pool_1d)
{
    static const int64_t k2[] = {2}, s2[] = {2}, one[] = {1};
    EXPECT(run1(lp_case(F32(DIMS(1, 1, 4), 1, 2, 3, 4), 2, 1, k2, NULL, NULL, NULL, NULL)), XF_DT_FLOAT,
           DIMS(1, 1, 3), sqrt(5), sqrt(13), 5);
    EXPECT(run1(lp_case(F32(DIMS(1, 1, 4), 1, 2, 3, 4), 1, 1, k2, s2, one, one, NULL)), XF_DT_FLOAT, DIMS(1, 1, 3),
           1, 5, 4);
    EXPECT(run1(lp_case(F32(DIMS(1, 1, 2), -3, 4), 2, 1, k2, NULL, NULL, NULL, NULL)), XF_DT_FLOAT, DIMS(1, 1, 1), 5);
    /* dilation 2 takes [1, 3] and [2, 4] */
    static const int64_t two[] = {2};
    EXPECT(run1(lp_case(F32(DIMS(1, 1, 4), 1, 2, 3, 4), 2, 1, k2, NULL, NULL, NULL, two)), XF_DT_FLOAT,
           DIMS(1, 1, 2), sqrt(10), sqrt(20));
    /* ceil_mode: windows of 3 every 2 over 4 samples, the last one cut
     * short: [1, 2, 3] and [3, 4], p = 3 */
    static const int64_t k3[] = {3};
    node_case c = lp_case(F32(DIMS(1, 1, 4), 1, 2, 3, 4), 3, 1, k3, s2, NULL, NULL, NULL);
    c.a.ceil_mode = 1;
    EXPECT(run1(c), XF_DT_FLOAT, DIMS(1, 1, 2), cbrt(36), cbrt(91));
    /* auto_pad SAME_UPPER pads the end: [3, 4], [4, 12], [12] */
    c = lp_case(F32(DIMS(1, 1, 3), 3, 4, 12), 2, 1, k2, NULL, NULL, NULL, NULL);
    c.a.auto_pad = XF_AUTO_PAD_SAME_UPPER;
    EXPECT(run1(c), XF_DT_FLOAT, DIMS(1, 1, 3), 5, sqrt(160), 12);
}
END_TEST

/* 2-D windows over two channels, in double, and the default p = 2. */
START_TEST(lp_pool_2d)
{
    static const int64_t k[] = {2, 2};
    static const double x[] = {1, 2, 3, 4, 0, -1, 2, -2};
    node_case c = lp_case(mk(XF_DT_DOUBLE, DIMS(1, 2, 2, 2), x), 2, 2, k, NULL, NULL, NULL, NULL);
    EXPECT(run1(c), XF_DT_DOUBLE, DIMS(1, 2, 1, 1), sqrt(30), 3);
    c = lp_case(iota_f32(DIMS(1, 1, 2, 3), 1), 4, 2, (const int64_t[]){1, 3}, NULL, NULL, NULL, NULL);
    EXPECT(run1(c), XF_DT_FLOAT, DIMS(1, 1, 2, 1), pow(1 + 16 + 81, 0.25), pow(256 + 625 + 1296, 0.25));
    c = make_case(XF_OP_LP_POOL, 1, F32(DIMS(1, 1, 2), 3, 4));
    xf_bt_set_window(&c.a, 1, (const int64_t[]){2}, (const int64_t[]){1}, (const int64_t[]){0}, (const int64_t[]){0},
                     (const int64_t[]){1});
    EXPECT(run1(c), XF_DT_FLOAT, DIMS(1, 1, 1), 5);
}
END_TEST

/* One value per (batch, channel): [1, 2, 2, 4] and [-3, 0, 0, 4]. */
START_TEST(global_lp_pool)
{
    node_case c = make_case(XF_OP_GLOBAL_LP_POOL, 1, F32(DIMS(1, 2, 2, 2), 1, 2, 2, 4, -3, 0, 0, 4));
    EXPECT(run1(c), XF_DT_FLOAT, DIMS(1, 2, 1, 1), 5, 5);
    c = make_case(XF_OP_GLOBAL_LP_POOL, 1, F32(DIMS(1, 2, 2, 2), 1, 2, 2, 4, -3, 0, 0, 4));
    c.a.lp_p = 1;
    EXPECT(run1(c), XF_DT_FLOAT, DIMS(1, 2, 1, 1), 9, 7);
    c = make_case(XF_OP_GLOBAL_LP_POOL, 1, F32(DIMS(2, 1, 3), 1, 2, 3, 0, 0, -2));
    c.a.lp_p = 3;
    EXPECT(run1(c), XF_DT_FLOAT, DIMS(2, 1, 1), cbrt(36), 2);
}
END_TEST

/* ------------------------------------------------------------ bitwise */

/* 12 = 0b1100 and 10 = 0b1010 (and negatives, in two's complement); the
 * second operand broadcast along rows. */
START_TEST(bitwise_signed)
{
    static const int8_t a[] = {12, -1, -128, 5}, b[] = {10, -16};
    EXPECT(run1(make_case(XF_OP_BITWISE_AND, 2, mk(XF_DT_INT8, DIMS(2, 2), a), mk(XF_DT_INT8, DIMS(2), b))),
           XF_DT_INT8, DIMS(2, 2), 8, -16, 0, 0);
    EXPECT(run1(make_case(XF_OP_BITWISE_OR, 2, mk(XF_DT_INT8, DIMS(2, 2), a), mk(XF_DT_INT8, DIMS(2), b))),
           XF_DT_INT8, DIMS(2, 2), 14, -1, -118, -11);
    EXPECT(run1(make_case(XF_OP_BITWISE_XOR, 2, mk(XF_DT_INT8, DIMS(2, 2), a), mk(XF_DT_INT8, DIMS(2), b))),
           XF_DT_INT8, DIMS(2, 2), 6, 15, -118, -11);
    EXPECT(run1(make_case(XF_OP_BITWISE_NOT, 1, mk(XF_DT_INT8, DIMS(4), a))), XF_DT_INT8, DIMS(4), -13, 0, 127, -6);
    EXPECT(run1(make_case(XF_OP_BITWISE_AND, 2, I64(DIMS(2), -1, 255), I64(DIMS(2), 15, -256))), XF_DT_INT64,
           DIMS(2), 15, 0);
    EXPECT(run1(make_case(XF_OP_BITWISE_NOT, 1, I32(DIMS(2), 0, 2147483647))), XF_DT_INT32, DIMS(2), -1,
           -2147483648.0);
    static const int16_t h[] = {0x0ff0, 0x7000};
    EXPECT(run1(make_case(XF_OP_BITWISE_XOR, 2, mk(XF_DT_INT16, DIMS(2), h), mk(XF_DT_INT16, SCALAR, h))),
           XF_DT_INT16, DIMS(2), 0, 0x7ff0);
}
END_TEST

/* Unsigned types keep to their width: ~5 is 250 in uint8, ~0 is 2^64 - 1
 * in uint64 (whose top bit survives the and/or/xor). */
START_TEST(bitwise_unsigned)
{
    static const uint8_t a[] = {5, 200}, b[] = {3, 100};
    EXPECT(run1(make_case(XF_OP_BITWISE_NOT, 1, mk(XF_DT_UINT8, DIMS(2), a))), XF_DT_UINT8, DIMS(2), 250, 55);
    EXPECT(run1(make_case(XF_OP_BITWISE_OR, 2, mk(XF_DT_UINT8, DIMS(2), a), mk(XF_DT_UINT8, DIMS(2), b))),
           XF_DT_UINT8, DIMS(2), 7, 236);
    static const uint16_t c[] = {0xffff}, d[] = {0x00ff};
    EXPECT(run1(make_case(XF_OP_BITWISE_XOR, 2, mk(XF_DT_UINT16, DIMS(1), c), mk(XF_DT_UINT16, DIMS(1), d))),
           XF_DT_UINT16, DIMS(1), 0xff00);
    static const uint32_t e[] = {0xf0000001u}, f[] = {0x80000003u};
    EXPECT(run1(make_case(XF_OP_BITWISE_AND, 2, mk(XF_DT_UINT32, DIMS(1), e), mk(XF_DT_UINT32, DIMS(1), f))),
           XF_DT_UINT32, DIMS(1), 2147483649.0);
    static const uint64_t g[] = {0, UINT64_C(0x8000000000000001)}, m[] = {UINT64_C(0x8000000000000000), 1};
    xf_tensor *t = run1(make_case(XF_OP_BITWISE_NOT, 1, mk(XF_DT_UINT64, DIMS(2), g)));
    ck_assert(((uint64_t *)t->data)[0] == UINT64_MAX && ((uint64_t *)t->data)[1] == UINT64_C(0x7ffffffffffffffe));
    xf_tensor_release(t);
    t = run1(make_case(XF_OP_BITWISE_AND, 2, mk(XF_DT_UINT64, DIMS(2), g), mk(XF_DT_UINT64, DIMS(2), m)));
    ck_assert(((uint64_t *)t->data)[0] == 0 && ((uint64_t *)t->data)[1] == 1);
    xf_tensor_release(t);
    t = run1(make_case(XF_OP_BITWISE_OR, 2, mk(XF_DT_UINT64, DIMS(2), g), mk(XF_DT_UINT64, DIMS(2), m)));
    ck_assert(((uint64_t *)t->data)[0] == UINT64_C(0x8000000000000000) &&
              ((uint64_t *)t->data)[1] == UINT64_C(0x8000000000000001));
    xf_tensor_release(t);
}
END_TEST

/* ------------------------------------------------------------ CumProd */

static node_case cumprod(xf_tensor *x, xf_tensor *axis, int exclusive, int reverse)
{
    node_case c = make_case(XF_OP_CUM_PROD, 2, x, axis);
    c.a.cumsum_exclusive = exclusive;
    c.a.cumsum_reverse = reverse;
    c.opset = 26;
    return c;
}

/* [1, 2, 3, 4]: 1, 2, 6, 24; exclusive starts from 1; reverse from the end. */
START_TEST(cum_prod)
{
    EXPECT(run1(cumprod(F32(DIMS(4), 1, 2, 3, 4), I64(SCALAR, 0), 0, 0)), XF_DT_FLOAT, DIMS(4), 1, 2, 6, 24);
    EXPECT(run1(cumprod(F32(DIMS(4), 1, 2, 3, 4), I64(SCALAR, 0), 1, 0)), XF_DT_FLOAT, DIMS(4), 1, 1, 2, 6);
    EXPECT(run1(cumprod(F32(DIMS(4), 1, 2, 3, 4), I32(SCALAR, -1), 0, 1)), XF_DT_FLOAT, DIMS(4), 24, 24, 12, 4);
    EXPECT(run1(cumprod(F32(DIMS(4), 1, 2, 3, 4), I64(SCALAR, 0), 1, 1)), XF_DT_FLOAT, DIMS(4), 24, 12, 4, 1);
    /* rows and columns of [[1, 2, 3], [4, 5, 6]] in int32 */
    EXPECT(run1(cumprod(I32(DIMS(2, 3), 1, 2, 3, 4, 5, 6), I64(SCALAR, 0), 0, 0)), XF_DT_INT32, DIMS(2, 3), 1, 2, 3,
           4, 10, 18);
    EXPECT(run1(cumprod(I32(DIMS(2, 3), 1, 2, 3, 4, 5, 6), I64(SCALAR, 1), 0, 0)), XF_DT_INT32, DIMS(2, 3), 1, 2, 6,
           4, 20, 120);
    /* int64 products wrap as the type does: 2^62 * 4 is 0 */
    EXPECT(run1(cumprod(I64(DIMS(2), INT64_C(1) << 62, 4), I64(SCALAR, 0), 0, 0)), XF_DT_INT64, DIMS(2),
           4611686018427387904.0, 0);
    /* the axis known at run time only */
    node_case c = cumprod(F32(DIMS(2, 2), 1, 2, 3, 4), I64(SCALAR, 1), 0, 1);
    c.feed = 2;
    EXPECT(run1(c), XF_DT_FLOAT, DIMS(2, 2), 2, 2, 12, 4);
    c = cumprod(F32(DIMS(2), 1, 2), I64(SCALAR, 1), 0, 0);
    c.feed = 2;
    expect_run_error(c, "axis 1 out of range for rank 1");
}
END_TEST

/* ------------------------------------------------------------ Swish */

/* x * sigmoid(alpha * x) for alpha 1 (the default) and 2, in float and double. */
START_TEST(swish)
{
    EXPECT(run1(make_case(XF_OP_SWISH, 1, F32(DIMS(4), 0, 1, -1, 2))), XF_DT_FLOAT, DIMS(4), 0, 0.73105858,
           -0.26894142, 1.76159416);
    static const double x[] = {0, 1, -1, 2, -800};
    node_case c = make_case(XF_OP_SWISH, 1, mk(XF_DT_DOUBLE, DIMS(5), x));
    c.a.alpha = 2;
    EXPECT(run1(c), XF_DT_DOUBLE, DIMS(5), 0, 0.88079708, -0.11920292, 1.96402758, 0);
}
END_TEST

/* ------------------------------------------------------------ MelWeightMatrix */

/* MelWeightMatrix of scalars (edges in float, or double when dbl). */
static node_case mel(int64_t bins, int64_t length, int64_t rate, double lo, double hi, bool dbl)
{
    xf_tensor *edges[2];
    for (int i = 0; i < 2; i++) {
        double v = i ? hi : lo;
        float f = (float)v;
        edges[i] = dbl ? mk(XF_DT_DOUBLE, SCALAR, &v) : mk(XF_DT_FLOAT, SCALAR, &f);
    }
    return make_case(XF_OP_MEL_WEIGHT_MATRIX, 5, I64(SCALAR, bins), I64(SCALAR, length), I64(SCALAR, rate), edges[0],
                     edges[1]);
}

/* 2 bins over a 32-point DFT at 1000 Hz from 50 to 450 Hz: the four mel
 * points fall on frequency bins 1, 4, 7 and 11, so the triangles rise
 * and fall over [1, 7] and [4, 11] (ONNX's reference gives the same). */
START_TEST(mel_weight_matrix)
{
    static const double third = 1.0 / 3, two = 2.0 / 3;
    for (int dbl = 0; dbl < 2; dbl++) {
        node_case c = mel(2, 32, 1000, 50, 450, dbl);
        c.feed = dbl ? 0x1f : 0; /* every value known at run time only */
        EXPECT(run1(c), XF_DT_FLOAT, DIMS(17, 2), 0, 0, 0, 0, third, 0, two, 0, 1, 0, two, third, third, two, 0, 1, 0,
               0.75, 0, 0.5, 0, 0.25, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0);
    }
    /* output_datatype double; int32 inputs; a triangle that does not rise
     * (mel points on bins 0, 0, 1, 3 and 5 at 8000 Hz from 0 to 4000 Hz) */
    node_case c = make_case(XF_OP_MEL_WEIGHT_MATRIX, 5, I32(SCALAR, 3), I32(SCALAR, 16), I32(SCALAR, 8000),
                            F32(SCALAR, 0), F32(SCALAR, 4000));
    c.a.output_dtype = XF_DT_DOUBLE;
    EXPECT(run1(c), XF_DT_DOUBLE, DIMS(9, 3), 1, 0, 0, 0, 1, 0, 0, 0.5, 0.5, 0, 0, 1, 0, 0, 0.5, 0, 0, 0, 0, 0, 0,
           0, 0, 0, 0, 0, 0);
    /* an upper edge past half the sample rate lands past the last bin */
    c = mel(2, 8, 1000, 0, 900, false);
    c.feed = 0x10;
    expect_run_error(c, "outside the 5 bins");
}
END_TEST

/* ------------------------------------------------------------ shape rules */

START_TEST(shapes)
{
    xf_error e = {0};
    node_case c = mel(40, 512, 16000, 0, 8000, false);
    xf_graph *g = case_graph(&c);
    ck_assert_msg(xf_graph_infer_shapes(g, 17, &e) == XF_OK, "%s", e.msg);
    const xf_value *y = &g->values[g->outputs[0]];
    ck_assert(y->shape.ndim == 2 && y->shape.dims[0] == 257 && y->shape.dims[1] == 40 && y->dtype == XF_DT_FLOAT);
    xf_graph_free(g);
    c.feed = 2;
    c.a.output_dtype = XF_DT_INT8;
    g = case_graph(&c);
    ck_assert_msg(xf_graph_infer_shapes(g, 17, &e) == XF_OK, "%s", e.msg);
    ck_assert(g->values[g->outputs[0]].shape.ndim == -1 && g->values[g->outputs[0]].dtype == XF_DT_INT8);
    xf_graph_free(g);
    release_case(&c);
    static const int64_t k[] = {3, 2}, s[] = {2, 1}, pb[] = {1, 0}, pe[] = {1, 1};
    c = lp_case(iota_f32(DIMS(2, 3, 7, 5), 0), 2, 2, k, s, pb, pe, NULL);
    g = case_graph(&c);
    ck_assert_msg(xf_graph_infer_shapes(g, 18, &e) == XF_OK, "%s", e.msg);
    y = &g->values[g->outputs[0]];
    ck_assert(y->shape.ndim == 4 && y->shape.dims[2] == 4 && y->shape.dims[3] == 5);
    xf_graph_free(g);
    release_case(&c);
}
END_TEST

/* Operands and attributes that do not fit fail inference, naming the node. */
START_TEST(shape_errors)
{
    static const int64_t k[] = {2};
    expect_infer_error(lp_case(iota_f32(DIMS(1, 1, 4), 0), 0, 1, k, NULL, NULL, NULL, NULL), "p 0 must be 1 to 65536");
    expect_infer_error(lp_case(I64(DIMS(1, 1, 2), 1, 2), 2, 1, k, NULL, NULL, NULL, NULL),
                       "X must be a floating-point tensor, got INT64");
    expect_infer_error(lp_case(iota_f32(DIMS(1, 1, 4, 4), 0), 2, 1, k, NULL, NULL, NULL, NULL),
                       "attributes describe 1 spatial dimensions");
    expect_infer_error(make_case(XF_OP_LP_POOL, 1, iota_f32(DIMS(1, 1, 4), 0)), "kernel_shape is required");
    node_case c = make_case(XF_OP_GLOBAL_LP_POOL, 1, iota_f32(DIMS(1, 1, 4), 0));
    c.a.lp_p = -1;
    expect_infer_error(c, "p -1 must be 1 to 65536");
    c = make_case(XF_OP_GLOBAL_LP_POOL, 1, iota_f32(DIMS(1, 1, 4), 0));
    c.a.lp_p = XF_LP_POOL_MAX_P + 1;
    expect_infer_error(c, "p 65537 must be 1 to 65536");
    expect_infer_error(make_case(XF_OP_GLOBAL_LP_POOL, 1, iota_f32(DIMS(4), 0)), "no channel dimension");
    expect_infer_error(make_case(XF_OP_BITWISE_AND, 2, F32(DIMS(1), 1), F32(DIMS(1), 1)), "takes integers, got FLOAT");
    expect_infer_error(make_case(XF_OP_BITWISE_NOT, 1, BOOLS(DIMS(1), 1)), "takes integers, got BOOL");
    expect_infer_error(make_case(XF_OP_BITWISE_OR, 2, I64(DIMS(1), 1), I32(DIMS(1), 1)), "INT32");
    expect_infer_error(make_case(XF_OP_BITWISE_XOR, 2, I64(DIMS(3), 1, 2, 3), I64(DIMS(2), 1, 2)), "broadcast");
    expect_infer_error(make_case(XF_OP_SWISH, 1, I64(DIMS(1), 1)), "X must be a floating-point tensor");
    expect_infer_error(cumprod(F32(DIMS(2), 1, 2), F32(SCALAR, 0), 0, 0), "axis must be int32 or int64");
    expect_infer_error(cumprod(F32(DIMS(2), 1, 2), I64(SCALAR, 2), 0, 0), "axis 2");
    expect_infer_error(mel(0, 16, 8000, 0, 4000, false), "num_mel_bins 0 and dft_length 16 must be positive");
    c = mel(2, 16, 8000, 0, 4000, false);
    xf_tensor_release(c.in[3]);
    c.in[3] = I64(SCALAR, 0);
    expect_infer_error(c, "input 3 must be a floating-point tensor, got INT64");
    c = mel(2, 16, 8000, 0, 4000, false);
    xf_tensor_release(c.in[2]);
    c.in[2] = I32(SCALAR, 8000);
    expect_infer_error(c, "input 2 is INT32 but input 0 is INT64");
    c = mel(2, 16, 8000, 0, 4000, true);
    xf_tensor_release(c.in[4]);
    c.in[4] = mk(XF_DT_DOUBLE, DIMS(2), (double[]){1, 2});
    expect_infer_error(c, "input 4 must be a scalar");
    expect_infer_error(make_case(XF_OP_MEL_WEIGHT_MATRIX, 5, I64(DIMS(2), 1, 2), I64(SCALAR, 8), I64(SCALAR, 8),
                                 F32(SCALAR, 0), F32(SCALAR, 1)),
                       "num_mel_bins must be a scalar");
}
END_TEST

/* ------------------------------------------------------------ other backends */

/* Each op once, on graph inputs where they are data (random values; the
 * mel matrix's and CumProd's axis from initializers). */
static xf_graph *op_graph(int which)
{
    static const int64_t k[] = {3, 2}, s[] = {2, 1}, p[] = {1, 0}, d[] = {1, 2};
    node_case c;
    switch (which) {
    case 0:
        c = lp_case(iota_f32(DIMS(2, 3, 7, 6), 0), 3, 2, k, s, p, p, d);
        c.a.ceil_mode = 1;
        break;
    case 1: c = make_case(XF_OP_GLOBAL_LP_POOL, 1, iota_f32(DIMS(2, 3, 4, 5), 0)); break;
    case 2: c = make_case(XF_OP_BITWISE_AND, 2, I32(DIMS(2, 3), 0, 0, 0, 0, 0, 0), I32(DIMS(3), 0, 0, 0)); break;
    case 3: c = make_case(XF_OP_BITWISE_OR, 2, I64(DIMS(3), 0, 0, 0), I64(DIMS(3), 0, 0, 0)); break;
    case 4: c = make_case(XF_OP_BITWISE_XOR, 2, I64(DIMS(3), 0, 0, 0), I64(DIMS(3), 0, 0, 0)); break;
    case 5: c = make_case(XF_OP_BITWISE_NOT, 1, mk(XF_DT_UINT8, DIMS(4), (uint8_t[]){0, 0, 0, 0})); break;
    case 6: c = cumprod(iota_f32(DIMS(3, 4), 0), I64(SCALAR, 1), 1, 1); break;
    case 7: c = make_case(XF_OP_SWISH, 1, iota_f32(DIMS(3, 4), 0)); c.a.alpha = 1.5f; break;
    default: c = mel(20, 256, 16000, 20, 7600, false); break;
    }
    c.feed = which == 8 ? 0 : 1u | (which >= 2 && which <= 4 ? 2u : 0u);
    xf_graph *g = case_graph(&c);
    release_case(&c);
    return g;
}

/* The cpu backend runs them (through cpu_ref's kernels) as cpu_ref does. */
START_TEST(cpu_backend_matches)
{
    for (int which = 0; which < 9; which++) {
        xf_graph *g = op_graph(which);
        xf_bt_check_graph(g, 26, "cpu", true, 0, 0, xf_op_name(g->nodes[0].op));
        xf_graph_free(g);
    }
}
END_TEST

/* The cuda backend has no device path for them: it takes each node (to
 * run through cpu_ref on host copies), which gets session creation past
 * the support check to the device (absent here, or the GPU, which then
 * gives cpu_ref's values). */
START_TEST(cuda_backend_takes_them)
{
    if (!xf_backend_find("cuda"))
        return;
    for (int which = 0; which < 9; which++) {
        xf_graph *g = op_graph(which);
        xf_session *s = NULL;
        xf_error e = {0};
        xf_status st = xf_session_create(g, 26, "cuda", NULL, &s, &e);
        ck_assert_msg(st == XF_OK || (st == XF_ERR_UNSUPPORTED && !strncmp(e.msg, "no CUDA device: ", 16)), "%s",
                      e.msg);
        xf_session_free(s);
        if (st == XF_OK)
            xf_bt_check_graph(g, 26, "cuda", false, 0, 0, xf_op_name(g->nodes[0].op));
        xf_graph_free(g);
    }
}
END_TEST

/* ------------------------------------------------------------ ONNX attributes */

/* A graph of every op under opset (LpPool's dilations and ceil_mode from
 * opset 18, CumProd and Swish from their opsets); form 1 gives values
 * xflow does not model (p 0, count_include_pad, exclusive 2, an integer
 * alpha, a mel matrix made in bool), which keep those nodes opaque. */
static Onnx__GraphProto *small_graph(int64_t opset, int form)
{
    static const int64_t x4[] = {1, 2, 6, 6}, i3[] = {3}, none[1] = {0}, k[] = {3, 2}, s[] = {2, 1},
                         pads[] = {1, 0, 1, 1}, d[] = {1, 2};
    Onnx__GraphProto *g = mk_graph("g");
    PUSH(g->n_input, g->input, mk_vi("x", XF_DT_FLOAT, 4, x4, NULL));
    PUSH(g->n_input, g->input, mk_vi("a", XF_DT_INT32, 1, i3, NULL));
    PUSH(g->n_input, g->input, mk_vi("b", XF_DT_INT32, 1, i3, NULL));
    static const int64_t scalars[] = {4, 64, 8000, 1}; /* the tensors keep pointers to them */
    static const char *const names[] = {"bins", "len", "rate", "ax"};
    for (int i = 0; i < 4; i++)
        PUSH(g->n_initializer, g->initializer, mk_raw(names[i], XF_DT_INT64, 0, none, &scalars[i], sizeof scalars[i]));
    static const float edges[] = {0, 4000};
    PUSH(g->n_initializer, g->initializer, mk_raw("lo", XF_DT_FLOAT, 0, none, &edges[0], sizeof edges[0]));
    PUSH(g->n_initializer, g->initializer, mk_raw("hi", XF_DT_FLOAT, 0, none, &edges[1], sizeof edges[1]));
    const char *const x[] = {"x", NULL}, *const ab[] = {"a", "b", NULL};
    Onnx__NodeProto *n = mk_node("LpPool", "lp", x, (const char *[]){"y0", NULL});
    attr_ints(n, "kernel_shape", 2, k);
    attr_ints(n, "strides", 2, s);
    attr_ints(n, "pads", 4, pads);
    attr_int(n, "p", form == 1 ? 0 : 3);
    if (opset >= 18) {
        attr_ints(n, "dilations", 2, d);
        attr_int(n, "ceil_mode", 1);
    }
    PUSH(g->n_node, g->node, n);
    PUSH(g->n_node, g->node, n = mk_node("LpPool", "lp2", x, (const char *[]){"y1", NULL}));
    attr_ints(n, "kernel_shape", 2, k);
    if (form == 1)
        attr_int(n, "count_include_pad", 1);
    PUSH(g->n_node, g->node, n = mk_node("GlobalLpPool", "glp", x, (const char *[]){"y2", NULL}));
    attr_int(n, "p", 1);
    PUSH(g->n_node, g->node, n = mk_node("MelWeightMatrix", "mel",
                                         (const char *[]){"bins", "len", "rate", "lo", "hi", NULL},
                                         (const char *[]){"y3", NULL}));
    attr_int(n, "output_datatype", form == 1 ? XF_DT_BOOL : XF_DT_DOUBLE);
    int n_out = 4;
    static const char *const ys[] = {"y0", "y1", "y2", "y3", "y4", "y5", "y6", "y7", "y8", "y9"};
    if (opset >= 18) {
        static const char *const bit[] = {"BitwiseAnd", "BitwiseOr", "BitwiseXor"};
        for (int i = 0; i < 3; i++, n_out++) {
            PUSH(g->n_node, g->node, mk_node(bit[i], ys[n_out], ab, (const char *[]){ys[n_out], NULL}));
        }
        PUSH(g->n_node, g->node, mk_node("BitwiseNot", ys[n_out], ab + 1, (const char *[]){ys[n_out], NULL}));
        n_out++;
    }
    if (opset >= 26) {
        PUSH(g->n_node, g->node, n = mk_node("CumProd", "cp", (const char *[]){"x", "ax", NULL},
                                             (const char *[]){ys[n_out++], NULL}));
        attr_int(n, "exclusive", form == 1 ? 2 : 1);
        attr_int(n, "reverse", 1);
        PUSH(g->n_node, g->node, n = mk_node("Swish", "sw", x, (const char *[]){ys[n_out++], NULL}));
        if (form == 1)
            attr_int(n, "alpha", 2);
        else
            attr_float(n, "alpha", 0.5f);
    }
    for (int i = 0; i < n_out; i++)
        PUSH(g->n_output, g->output, mk_vi(ys[i], i == 3 ? XF_DT_DOUBLE : i >= 4 && i < 8 ? XF_DT_INT32 : XF_DT_FLOAT,
                                           -1, NULL, NULL));
    return g;
}

START_TEST(attributes_round_trip)
{
    static const int64_t opsets[] = {17, 18, 26};
    for (int o = 0; o < 3; o++) {
        int64_t opset = opsets[o];
        int counts[XF_OP_COUNT + 1];
        xf_model *m = load_counting(small_graph(opset, 0), opset, counts);
        const xf_graph *g = m->graph;
        ck_assert_int_eq(counts[XF_OP_OPAQUE], 0);
        ck_assert_int_eq(counts[XF_OP_LP_POOL], 2);
        const xf_attrs *lp = &g->nodes[find_node_by_output(g, "y0")].attrs;
        ck_assert(lp->lp_p == 3 && lp->n_spatial == 2 && lp->kernel[0] == 3 && lp->strides[0] == 2 &&
                  lp->pads[3] == 1);
        ck_assert(lp->ceil_mode == (opset >= 18) && lp->dilations[1] == (opset >= 18 ? 2 : 1));
        ck_assert_int_eq(g->nodes[find_node_by_output(g, "y1")].attrs.lp_p, 2);
        ck_assert_int_eq(g->nodes[find_node_op(g, XF_OP_GLOBAL_LP_POOL)].attrs.lp_p, 1);
        const xf_node *mel = &g->nodes[find_node_op(g, XF_OP_MEL_WEIGHT_MATRIX)];
        ck_assert_int_eq(mel->attrs.output_dtype, XF_DT_DOUBLE);
        const xf_value *mv = &g->values[mel->outputs[0]];
        ck_assert(mv->dtype == XF_DT_DOUBLE && mv->shape.ndim == 2);
        ck_assert(mv->shape.dims[0] == 33 && mv->shape.dims[1] == 4);
        ck_assert_int_eq(counts[XF_OP_BITWISE_NOT], opset >= 18);
        if (opset >= 26) {
            const xf_attrs *cp = &g->nodes[find_node_op(g, XF_OP_CUM_PROD)].attrs;
            ck_assert(cp->cumsum_exclusive && cp->cumsum_reverse);
            ck_assert(g->nodes[find_node_op(g, XF_OP_SWISH)].attrs.alpha == 0.5f);
        }
        xf_model_free(roundtrip(m));
        if (opset == 17) /* the checker of the onnx this platform has knows opset 17 */
            assert_saved_valid(m, "small17");
        xf_model_free(m);
    }
    /* dilations and ceil_mode that opset 17 cannot hold */
    int counts[XF_OP_COUNT + 1];
    xf_model *m = load_counting(small_graph(17, 0), 17, counts);
    m->graph->nodes[find_node_by_output(m->graph, "y0")].attrs.ceil_mode = 1;
    expect_export_refused(m, "node 'lp' (LpPool)", "cannot express", NULL);
    xf_model_free(m);
}
END_TEST

/* Values xflow does not model keep their nodes opaque, and so do
 * dilations or ceil_mode on an LpPool before opset 18 and opset 1's float p. */
START_TEST(attributes_opaque)
{
    static const struct {
        xf_op op;
        int count;
    } want[] = {{XF_OP_OPAQUE, 5}, {XF_OP_LP_POOL, 0}, {XF_OP_MEL_WEIGHT_MATRIX, 0}, {XF_OP_CUM_PROD, 0},
                {XF_OP_SWISH, 0}, {XF_OP_GLOBAL_LP_POOL, 1}, {XF_OP_BITWISE_AND, 1}};
    int counts[XF_OP_COUNT + 1];
    xf_model *m = load_counting(small_graph(26, 1), 26, counts);
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        ck_assert_msg(counts[want[i].op] == want[i].count, "%d %s nodes", counts[want[i].op], xf_op_name(want[i].op));
    xf_model *back = roundtrip(m);
    xf_model_free(back);
    xf_model_free(m);
    static const int64_t x3[] = {1, 1, 4}, k[] = {2}, d[] = {2};
    for (int form = 0; form < 3; form++) {
        Onnx__GraphProto *g = mk_graph("g");
        PUSH(g->n_input, g->input, mk_vi("x", XF_DT_FLOAT, 3, x3, NULL));
        Onnx__NodeProto *n = mk_node("LpPool", "lp", (const char *[]){"x", NULL}, (const char *[]){"y", NULL});
        attr_ints(n, "kernel_shape", 1, k);
        if (form == 0)
            attr_ints(n, "dilations", 1, d);
        else if (form == 1)
            attr_int(n, "ceil_mode", 1);
        else
            attr_float(n, "p", 2.0f);
        PUSH(g->n_node, g->node, n);
        PUSH(g->n_output, g->output, mk_vi("y", XF_DT_FLOAT, -1, NULL, NULL));
        m = load_counting(g, form == 2 ? 1 : 11, counts);
        ck_assert_msg(counts[XF_OP_OPAQUE] == 1, "form %d", form);
        xf_model_free(m);
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("small_ops");
    TCase *tc = tcase_create("kernels");
    tcase_add_test(tc, lp_pool_1d);
    tcase_add_test(tc, lp_pool_2d);
    tcase_add_test(tc, global_lp_pool);
    tcase_add_test(tc, bitwise_signed);
    tcase_add_test(tc, bitwise_unsigned);
    tcase_add_test(tc, cum_prod);
    tcase_add_test(tc, swish);
    tcase_add_test(tc, mel_weight_matrix);
    suite_add_tcase(s, tc);
    tc = tcase_create("errors");
    tcase_add_test(tc, shapes);
    tcase_add_test(tc, shape_errors);
    suite_add_tcase(s, tc);
    tc = tcase_create("backends");
    tcase_add_test(tc, cpu_backend_matches);
    tcase_add_test(tc, cuda_backend_takes_them);
    suite_add_tcase(s, tc);
    tc = tcase_create("attributes");
    tcase_add_checked_fixture(tc, NULL, free_allocs);
    tcase_add_test(tc, attributes_round_trip);
    tcase_add_test(tc, attributes_opaque);
    suite_add_tcase(s, tc);
    return xf_test_run_suite(s);
}
