/* ONNX Runtime's quantized contrib ops (com.microsoft, its QOperator
 * format): values worked out by hand on cpu_ref (rounding halves to even,
 * saturation, the per-span operands of the broadcasting binary ops), the
 * same cases on every host backend (the cpu backend's own QGemm and
 * QLinearAdd/Mul paths), shape and dtype rules, and import/export of the
 * attributes, opaque where xflow does not model a form. */
#include "kernel_case_util.h"
#include "proto_util.h"
#include "xf_test_util.h"

#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MS "com.microsoft"
#define U8(dims, ...) mk(XF_DT_UINT8, dims, (uint8_t[]){__VA_ARGS__})
#define S8(dims, ...) mk(XF_DT_INT8, dims, (int8_t[]){__VA_ARGS__})
#define FS(v) F32(SCALAR, v)
#define U8S(v) U8(SCALAR, v)
#define S8S(v) S8(SCALAR, v)

/* Runs the case on every host backend, input 0 fed (so that nothing folds
 * it), and checks each gives want (released). */
static void expect_backends(node_case c, xf_tensor *want)
{
    c.feed = 1;
    xf_graph *g = case_graph(&c);
    const char *backends[4];
    int nb = host_backends(backends);
    for (int b = 0; b < nb; b++) {
        xf_session *s;
        xf_error e = {0};
        ck_assert_msg(xf_session_create(g, c.opset, backends[b], NULL, &s, &e) == XF_OK, "%s: %s", backends[b],
                      e.msg);
        xf_tensor *out = NULL;
        ck_assert_msg(xf_session_run(s, (xf_tensor *const[]){c.in[0]}, &out, &e) == XF_OK, "%s: %s", backends[b],
                      e.msg);
        bool ok;
        ck_assert_int_eq(xf_tensor_compare(out, want, 0, 0, NULL, NULL, &ok, NULL), XF_OK);
        ck_assert_msg(ok, "%s differs from the expected values", backends[b]);
        xf_tensor_release(out);
        xf_session_free(s);
    }
    xf_graph_free(g);
    release_case(&c);
    xf_tensor_release(want);
}

/* count bytes of a fixed stream (a linear congruential generator in *state). */
static uint8_t *random_bytes(int64_t count, uint32_t *state)
{
    uint8_t *bytes = malloc((size_t)count);
    ck_assert_ptr_nonnull(bytes);
    for (int64_t i = 0; i < count; i++) {
        *state = *state * 1664525u + 1013904223u;
        bytes[i] = (uint8_t)(*state >> 24);
    }
    return bytes;
}

/* ---------------------------------------------------------------- values */

/* QLinearAdd with ratios 1 and 0.5 (fixed 0): halves round to even,
 * sums saturate; one B per channel (a scalar of each span); a row
 * repeated over the spans. */
START_TEST(test_qlinear_add)
{
    node_case c = make_case(XF_OP_MS_QLINEAR_ADD, 8, U8(DIMS(6), 0, 0, 1, 2, 200, 7), FS(1.0f), U8S(0),
                            U8(DIMS(6), 1, 3, 1, 1, 200, 0), FS(0.5f), U8S(0), FS(1.0f), U8S(0));
    EXPECT(run1(c), XF_DT_UINT8, DIMS(6), 0, 2, 2, 2, 255, 7);
    /* a = 10 + k (zero point 10, scale 1), b per channel (zero point 0,
     * scale 2), c scale 2, zero point 100: c = 100 + k/2 + b */
    node_case d = make_case(XF_OP_MS_QLINEAR_ADD, 8, U8(DIMS(1, 2, 1, 3), 10, 11, 12, 13, 14, 15), FS(1.0f), U8S(10),
                            U8(DIMS(1, 2, 1, 1), 3, 5), FS(2.0f), U8S(0), FS(2.0f), U8S(100));
    EXPECT(run1(d), XF_DT_UINT8, DIMS(1, 2, 1, 3), 103, 104, 104, 106, 107, 108);
    d = make_case(XF_OP_MS_QLINEAR_ADD, 8, U8(DIMS(1, 2, 1, 3), 10, 11, 12, 13, 14, 15), FS(1.0f), U8S(10),
                  U8(DIMS(1, 2, 1, 1), 3, 5), FS(2.0f), U8S(0), FS(2.0f), U8S(100));
    expect_backends(d, U8(DIMS(1, 2, 1, 3), 103, 104, 104, 106, 107, 108));
    /* a row of the last dim for every span (a bias, as B; then as A):
     * c = 100 + k/2 + row[k % 3] */
    for (int row_a = 0; row_a < 2; row_a++) {
        xf_tensor *full = U8(DIMS(2, 2, 3), 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21);
        xf_tensor *row = U8(DIMS(3), 3, 5, 1);
        d = row_a ? make_case(XF_OP_MS_QLINEAR_ADD, 8, row, FS(2.0f), U8S(0), full, FS(1.0f), U8S(10), FS(2.0f),
                              U8S(100))
                  : make_case(XF_OP_MS_QLINEAR_ADD, 8, full, FS(1.0f), U8S(10), row, FS(2.0f), U8S(0), FS(2.0f),
                              U8S(100));
        expect_backends(d, U8(DIMS(2, 2, 3), 103, 106, 102, 104, 107, 104, 106, 108, 105, 108, 110, 106));
    }
}
END_TEST

/* QLinearMul on int8: (a - za)(b - zb) * sa * sb / sc + zc. */
START_TEST(test_qlinear_mul)
{
    /* products 4, 9, 10, -9, -16254 times 0.25, less 1: 0, 1.25, 1.5 -> 2, -3.25,
     * -4064.5 saturating at -128 */
    node_case c = make_case(XF_OP_MS_QLINEAR_MUL, 8, S8(DIMS(5), 3, 4, 6, -2, 127), FS(0.5f), S8S(1),
                            S8(DIMS(5), 3, 4, 3, 4, -128), FS(0.5f), S8S(1), FS(1.0f), S8S(-1));
    EXPECT(run1(c), XF_DT_INT8, DIMS(5), 0, 1, 2, -3, -128);
    c = make_case(XF_OP_MS_QLINEAR_MUL, 8, S8(DIMS(5), 3, 4, 6, -2, 127), FS(0.5f), S8S(1),
                  S8(DIMS(5), 3, 4, 3, 4, -128), FS(0.5f), S8S(1), FS(1.0f), S8S(-1));
    expect_backends(c, S8(DIMS(5), 0, 1, 2, -3, -128));
}
END_TEST

/* QLinearLeakyRelu through its table: x = 128 + k is 0.5k, y = v / 0.25
 * + 128; QLinearSigmoid at 0, far below and far above. */
START_TEST(test_qlinear_lookup)
{
    node_case c = make_case(XF_OP_MS_QLINEAR_LEAKY_RELU, 5, U8(DIMS(5), 128, 131, 255, 118, 115), FS(0.5f),
                            U8S(128), FS(0.25f), U8S(128));
    c.a.alpha = 0.1f;
    /* 3 -> 6; 127 -> 254 + 128 saturates; -10 -> -0.5 -> -2; -13 -> -0.65 -> -2.6 -> -3 */
    EXPECT(run1(c), XF_DT_UINT8, DIMS(5), 128, 134, 255, 126, 125);
    c = make_case(XF_OP_MS_QLINEAR_SIGMOID, 5, S8(DIMS(3), 0, -128, 127), FS(0.25f), S8S(0), FS(1.0f / 256),
                  S8S(-128));
    EXPECT(run1(c), XF_DT_INT8, DIMS(3), 0, -128, 127);
    /* the middle of the range against the logistic function, to one step */
    c = make_case(XF_OP_MS_QLINEAR_SIGMOID, 5, U8(DIMS(4), 120, 130, 140, 150), FS(0.05f), U8S(128),
                  FS(1.0f / 256), U8S(0));
    xf_tensor *y = run1(c);
    for (int i = 0; i < 4; i++) {
        double v = 0.05 * (120 + 10 * i - 128), want = 256.0 / (1.0 + exp(-v));
        ck_assert_msg(fabs(((const uint8_t *)y->data)[i] - want) <= 1.0, "%d: %u vs %g", i,
                      ((const uint8_t *)y->data)[i], want);
    }
    xf_tensor_release(y);
}
END_TEST

/* QLinearGlobalAveragePool: means 2.5 -> 2, 1.25 -> 1, 3.75 -> 4; the
 * same bytes channels last are other planes. */
START_TEST(test_qlinear_global_pool)
{
    node_case c = make_case(XF_OP_MS_QLINEAR_GLOBAL_AVERAGE_POOL, 5,
                            U8(DIMS(1, 3, 2, 2), 1, 2, 3, 4, 1, 1, 1, 2, 3, 4, 4, 4), FS(1.0f), U8S(0), FS(1.0f),
                            U8S(0));
    EXPECT(run1(c), XF_DT_UINT8, DIMS(1, 3, 1, 1), 2, 1, 4);
    /* channels last: (1, 2, 2, 3), channel k takes bytes k, k + 3, ...;
     * x zero point 1 and y zero point 10 */
    c = make_case(XF_OP_MS_QLINEAR_GLOBAL_AVERAGE_POOL, 5, U8(DIMS(1, 2, 2, 3), 1, 2, 3, 4, 1, 1, 1, 2, 3, 4, 4, 4),
                  FS(1.0f), U8S(1), FS(1.0f), U8S(10));
    c.a.channels_last = 1;
    /* sums less 4: 10 - 4, 9 - 4, 11 - 4 -> 1.5 -> 2, 1.25 -> 1, 1.75 -> 2 */
    EXPECT(run1(c), XF_DT_UINT8, DIMS(1, 1, 1, 3), 12, 11, 12);
}
END_TEST

/* QLinearAveragePool: 2x2 windows of dequantized values; pads counted
 * only with count_include_pad; a window that covers the whole image. */
START_TEST(test_qlinear_average_pool)
{
    xf_tensor *x = U8(DIMS(1, 1, 3, 3), 10, 11, 12, 13, 14, 15, 16, 17, 18);
    node_case c = make_case(XF_OP_MS_QLINEAR_AVERAGE_POOL, 5, x, FS(0.5f), U8S(10), FS(0.25f), U8S(0));
    c.a.n_spatial = 2;
    c.a.kernel[0] = c.a.kernel[1] = 2;
    /* means of (x - 10) / 2: 1, 1.5, 2.5, 3 -> / 0.25 */
    EXPECT(run1(c), XF_DT_UINT8, DIMS(1, 1, 2, 2), 4, 6, 10, 12);
    c = make_case(XF_OP_MS_QLINEAR_AVERAGE_POOL, 5, U8(DIMS(1, 1, 3, 3), 10, 11, 12, 13, 14, 15, 16, 17, 18),
                  FS(0.5f), U8S(10), FS(0.25f), U8S(0));
    c.a.n_spatial = 2;
    c.a.kernel[0] = c.a.kernel[1] = 2;
    c.a.pads[0] = c.a.pads[1] = 1;
    c.a.strides[0] = c.a.strides[1] = 2;
    c.a.count_include_pad = 1;
    /* windows {10}, {11, 12}, {13, 16}, {14, 15, 17, 18} over 4: 0, 0.375,
     * 1.125, 3 (x 4: 1.5 -> 2, 4.5 -> 4) */
    EXPECT(run1(c), XF_DT_UINT8, DIMS(1, 1, 2, 2), 0, 2, 4, 12);
    c = make_case(XF_OP_MS_QLINEAR_AVERAGE_POOL, 5, U8(DIMS(1, 1, 2, 2), 1, 2, 3, 4), FS(1.0f), U8S(0), FS(1.0f),
                  U8S(0));
    c.a.n_spatial = 2;
    c.a.kernel[0] = c.a.kernel[1] = 2;
    EXPECT(run1(c), XF_DT_UINT8, DIMS(1, 1, 1, 1), 2);
}
END_TEST

/* The cpu backend's QLinearAveragePool loop (eight outputs of a row side by
 * side where their windows lie inside it) gives cpu_ref's bytes: uint8 and
 * int8, kernels 3 and 5 (and 1 x 7), strides 1 and 2, padding counted or
 * not, rows whose width leaves a tail, a global window, and a 1-D pool
 * (which cpu_ref's kernel runs). */
START_TEST(test_qlinear_average_pool_windows)
{
    static const struct {
        xf_dtype t;
        int64_t h, w, kh, kw, stride, pad;
        bool include_pad;
    } forms[] = {{XF_DT_UINT8, 35, 35, 3, 3, 1, 1, false}, {XF_DT_INT8, 17, 29, 3, 3, 2, 1, true},
                 {XF_DT_UINT8, 12, 41, 5, 5, 1, 2, true}, {XF_DT_INT8, 9, 40, 1, 7, 1, 3, false},
                 {XF_DT_UINT8, 8, 8, 8, 8, 1, 0, false},  {XF_DT_UINT8, 1, 23, 0, 3, 1, 1, false},
                 {XF_DT_UINT8, 5, 41, 3, 3, 1, 1, false}, /* the last eight end one past the row */
                 {XF_DT_INT8, 9, 45, 3, 3, 2, 1, false},  /* sixteen outputs of stride 2 */
                 {XF_DT_UINT8, 5, 18, 3, 3, 1, 0, true}}; /* sixteen ending at the row's end */
    uint32_t state = 777u;
    for (size_t f = 0; f < sizeof forms / sizeof forms[0]; f++) {
        bool one_d = forms[f].kh == 0, s8 = forms[f].t == XF_DT_INT8;
        uint8_t *bytes = random_bytes(3 * forms[f].h * forms[f].w, &state);
        node_case c[2]; /* run on cpu_ref, then on every backend against its output */
        for (int k = 0; k < 2; k++) {
            xf_tensor *x = one_d ? mk(forms[f].t, DIMS(1, 3, forms[f].w), bytes)
                                 : mk(forms[f].t, DIMS(1, 3, forms[f].h, forms[f].w), bytes);
            c[k] = make_case(XF_OP_MS_QLINEAR_AVERAGE_POOL, 5, x, FS(0.043f), s8 ? S8S(-7) : U8S(121), FS(0.031f),
                             s8 ? S8S(5) : U8S(118));
            c[k].a.n_spatial = one_d ? 1 : 2;
            c[k].a.kernel[0] = one_d ? forms[f].kw : forms[f].kh;
            c[k].a.kernel[1] = forms[f].kw;
            c[k].a.strides[0] = c[k].a.strides[1] = forms[f].stride;
            for (int j = 0; j < 4; j++)
                c[k].a.pads[j] = forms[f].pad;
            c[k].a.count_include_pad = forms[f].include_pad;
        }
        expect_backends(c[1], run1(c[0]));
        free(bytes);
    }
}
END_TEST

/* QLinearConcat: each input requantized to y's scale and zero point. */
START_TEST(test_qlinear_concat)
{
    node_case c = make_case(XF_OP_MS_QLINEAR_CONCAT, 8, FS(0.5f), U8S(100), U8(DIMS(2, 1), 10, 13), FS(0.25f),
                            U8S(10), U8(DIMS(2, 2), 100, 101, 102, 103), FS(0.5f), U8S(100));
    c.a.axis = 1;
    /* (x - 10) / 4 / 0.5 + 100: 0, 1.5 -> 2 */
    EXPECT(run1(c), XF_DT_UINT8, DIMS(2, 3), 100, 100, 101, 102, 102, 103);
}
END_TEST

/* QLinearSoftmax: equal values share the row; a row of one large value
 * takes it all (saturating); other rows against softmax to one step. */
START_TEST(test_qlinear_softmax)
{
    node_case c = make_case(XF_OP_MS_QLINEAR_SOFTMAX, 5, U8(DIMS(2, 4), 7, 7, 7, 7, 0, 0, 0, 255), FS(0.5f),
                            U8S(0), FS(1.0f / 256), U8S(0));
    EXPECT(run1(c), XF_DT_UINT8, DIMS(2, 4), 64, 64, 64, 64, 0, 0, 0, 255);
    /* int8 along axis 0 (opset 13), y zero point -128 */
    c = make_case(XF_OP_MS_QLINEAR_SOFTMAX, 5, S8(DIMS(2, 2), 5, -128, 5, 127), FS(0.5f), S8S(0), FS(1.0f / 256),
                  S8S(-128));
    c.a.axis = 0;
    EXPECT(run1(c), XF_DT_INT8, DIMS(2, 2), 0, -128, 0, 127);
    /* opset 12: the row is everything from axis 1 on */
    const uint8_t xv[6] = {100, 102, 104, 110, 90, 101};
    c = make_case(XF_OP_MS_QLINEAR_SOFTMAX, 5, mk(XF_DT_UINT8, DIMS(1, 2, 3), xv), FS(0.2f), U8S(0),
                  FS(1.0f / 256), U8S(0));
    c.a.ms_opset = 12;
    c.a.softmax_legacy = true;
    c.a.axis = 1;
    xf_tensor *y = run1(c);
    double sum = 0;
    for (int i = 0; i < 6; i++)
        sum += exp(0.2 * xv[i]);
    for (int i = 0; i < 6; i++)
        ck_assert_msg(fabs(((const uint8_t *)y->data)[i] - 256.0 * exp(0.2 * xv[i]) / sum) <= 1.0, "%d", i);
    xf_tensor_release(y);
}
END_TEST

/* The cpu backend's QLinearSoftmax loop (contiguous rows) gives cpu_ref's
 * bytes: full-range uint8 and int8 rows of 64 and of 37 (a tail off its
 * eight lanes), opset 12's flattened rows, and an output scale so small
 * that the scaled values pass 2^22 (where they saturate). */
START_TEST(test_qlinear_softmax_rows)
{
    static const struct {
        xf_dtype t;
        int64_t rows, d;
        bool legacy;
        float y_scale;
    } forms[] = {{XF_DT_UINT8, 48, 64, false, 1.0f / 256},
                 {XF_DT_INT8, 30, 37, false, 1.0f / 256},
                 {XF_DT_UINT8, 6, 15, true, 1.0f / 200},
                 {XF_DT_INT8, 4, 64, false, 1e-8f},
                 {XF_DT_UINT8, 150, 64, false, 1.0f / 256}}; /* groups of four rows on threads, two left */
    uint32_t state = 12345u;
    for (size_t f = 0; f < sizeof forms / sizeof forms[0]; f++) {
        uint8_t *bytes = random_bytes(forms[f].rows * forms[f].d, &state);
        bool s8 = forms[f].t == XF_DT_INT8;
        node_case c[2]; /* run on cpu_ref, then on every backend against its output */
        for (int k = 0; k < 2; k++) {
            xf_tensor *x = forms[f].legacy ? mk(forms[f].t, DIMS(forms[f].rows, 3, 5), bytes)
                                           : mk(forms[f].t, DIMS(forms[f].rows, forms[f].d), bytes);
            c[k] = make_case(XF_OP_MS_QLINEAR_SOFTMAX, 5, x, FS(0.07f), s8 ? S8S(3) : U8S(120), FS(forms[f].y_scale),
                             s8 ? S8S(-128) : U8S(0));
            c[k].a.axis = forms[f].legacy ? 1 : -1;
            if (forms[f].legacy) {
                c[k].a.ms_opset = 12;
                c[k].a.softmax_legacy = true;
            }
        }
        expect_backends(c[1], run1(c[0]));
        free(bytes);
    }
}
END_TEST

/* QGemm: A - 1 = [[0 1 2] [3 4 5]], B = [[1 -1] [2 0] [-1 3]], sums
 * [[0 6] [6 12]] plus C [1 -2]; scaled by 0.5 * 0.25 to floats, or
 * requantized (y scale 0.25, zero point 10): [0.5 2 3.5 5] -> [0 2 4 5]. */
static node_case qgemm_case(bool quantized, bool trans_b)
{
    xf_tensor *b = trans_b ? S8(DIMS(2, 3), 1, 2, -1, -1, 0, 3) : S8(DIMS(3, 2), 1, -1, 2, 0, -1, 3);
    node_case c = make_case(XF_OP_MS_QGEMM, quantized ? 9 : 7, U8(DIMS(2, 3), 1, 2, 3, 4, 5, 6), FS(0.5f), U8S(1), b,
                            FS(0.25f), S8S(0), I32(DIMS(2), 1, -2), quantized ? FS(0.25f) : NULL,
                            quantized ? U8S(10) : NULL);
    c.a.trans_b = trans_b;
    return c;
}

START_TEST(test_qgemm)
{
    EXPECT(run1(qgemm_case(false, false)), XF_DT_FLOAT, DIMS(2, 2), 0.125, 0.5, 0.875, 1.25);
    EXPECT(run1(qgemm_case(true, true)), XF_DT_UINT8, DIMS(2, 2), 10, 12, 14, 15);
    for (int tb = 0; tb < 2; tb++) {
        expect_backends(qgemm_case(false, tb), F32(DIMS(2, 2), 0.125, 0.5, 0.875, 1.25));
        expect_backends(qgemm_case(true, tb), U8(DIMS(2, 2), 10, 12, 14, 15));
    }
    node_case s8 = qgemm_case(true, false); /* int8 A and Y */
    xf_tensor_release(s8.in[0]);
    xf_tensor_release(s8.in[2]);
    xf_tensor_release(s8.in[8]);
    s8.in[0] = S8(DIMS(2, 3), 1, 2, 3, 4, 5, 6);
    s8.in[2] = S8S(1);
    s8.in[8] = S8S(10);
    expect_backends(s8, S8(DIMS(2, 2), 10, 12, 14, 15));
    /* A sum past 2^24, then C: 255 x 127 x 2047 + 254 x 127 = 66,324,353,
     * which float rounds to 66,324,352.  C = -66,324,300 is added before
     * the scale (all 1), as ONNX Runtime adds it: 53, where adding it to
     * the sum in float would give 52. */
    xf_shape as = {.ndim = 2, .dims = {1, 2048}}, bs = {.ndim = 2, .dims = {2048, 1}};
    xf_tensor *big_a = xf_tensor_create(XF_DT_UINT8, &as), *big_b = xf_tensor_create(XF_DT_INT8, &bs);
    memset(big_a->data, 255, 2048);
    ((uint8_t *)big_a->data)[0] = 254;
    memset(big_b->data, 127, 2048);
    expect_backends(make_case(XF_OP_MS_QGEMM, 9, big_a, FS(1.0f), U8S(0), big_b, FS(1.0f), S8S(0),
                              I32(DIMS(1), -66324300), FS(1.0f), U8S(0)),
                    U8(DIMS(1, 1), 53));
    /* alpha and a transposed A (cpu_ref's loop on every backend) */
    node_case c = qgemm_case(false, false);
    xf_tensor_release(c.in[0]);
    c.in[0] = U8(DIMS(3, 2), 1, 4, 2, 5, 3, 6);
    c.a.trans_a = 1;
    c.a.alpha = 2.0f;
    expect_backends(c, F32(DIMS(2, 2), 0.25, 1.0, 1.75, 2.5));
}
END_TEST

/* The contrib QuantizeLinear and DequantizeLinear: per axis, 16-bit. */
START_TEST(test_ms_quantize)
{
    node_case c = make_case(XF_OP_MS_QUANTIZE_LINEAR, 3, F32(DIMS(2, 2), 2.5, -70000, 1.5, 3.0), F32(DIMS(2), 1.0, 2.0),
                            mk(XF_DT_INT16, DIMS(2), (int16_t[]){0, 5}));
    EXPECT(run1(c), XF_DT_INT16, DIMS(2, 2), 2, -32768, 2, 7);
    c = make_case(XF_OP_MS_DEQUANTIZE_LINEAR, 3, U8(DIMS(2, 2), 1, 2, 3, 4), F32(DIMS(2), 0.5, 2.0),
                  U8(DIMS(2), 1, 2));
    c.a.axis = 0;
    EXPECT(run1(c), XF_DT_FLOAT, DIMS(2, 2), 0, 0.5, 2, 4);
}
END_TEST

/* ---------------------------------------------------------------- rules */

START_TEST(test_rules)
{
    /* per-tensor parameters only */
    expect_infer_error(make_case(XF_OP_MS_QLINEAR_ADD, 8, U8(DIMS(2), 1, 2), F32(DIMS(2), 1, 1), U8S(0),
                                 U8(DIMS(2), 1, 2), FS(1), U8S(0), FS(1), U8S(0)),
                       "must be a scalar (per tensor)");
    expect_infer_error(make_case(XF_OP_MS_QLINEAR_MUL, 8, U8(DIMS(2), 1, 2), FS(1), U8S(0), S8(DIMS(2), 1, 2), FS(1),
                                 S8S(0), FS(1), U8S(0)),
                       "is INT8 but input 0 is UINT8");
    node_case c = qgemm_case(true, false);
    xf_tensor_release(c.in[4]);
    c.in[4] = F32(DIMS(3), 1, 1, 1);
    expect_infer_error(c, "B's scale must be a scalar or have one entry per column (2)");
    c = qgemm_case(true, false);
    xf_tensor_release(c.in[8]);
    c.in[8] = NULL;
    expect_infer_error(c, "only one of y_scale and y_zero_point");
    expect_infer_error(make_case(XF_OP_MS_QLINEAR_CONCAT, 6, FS(1), U8S(0), U8(DIMS(1), 1), FS(1), U8S(0),
                                 U8(DIMS(1), 1)),
                       "then triples");
    expect_infer_error(make_case(XF_OP_MS_QLINEAR_GLOBAL_AVERAGE_POOL, 5, U8(DIMS(2, 2), 1, 2, 3, 4), FS(1), U8S(0),
                                 FS(1), U8S(0)),
                       "needs batch, channels and a spatial dimension");
    expect_infer_error(make_case(XF_OP_MS_QUANTIZE_LINEAR, 3, FS(1), FS(1), mk(XF_DT_INT32, SCALAR, (int32_t[]){0})),
                       "y_zero_point (input 2) must be an 8- or 16-bit integer");
}
END_TEST

/* ---------------------------------------------------------------- import, export */

static Onnx__NodeProto *ms_node(const char *op, const char *const *ins, const char *out)
{
    Onnx__NodeProto *n = mk_node(op, out, ins, (const char *[]){out, NULL});
    n->domain = MS;
    return n;
}

static void add_init(Onnx__GraphProto *g, const char *name, int dtype, int ndim, const int64_t *dims, const void *data,
                     size_t bytes)
{
    PUSH(g->n_initializer, g->initializer, mk_raw(name, dtype, ndim, dims, data, bytes));
}

/* Every op on x (B, 3, 4, 4) uint8: QLinearAveragePool (B, 3, 2, 2) ->
 * QLinearLeakyRelu -> QLinearGlobalAveragePool channels last (read as
 * (B, 3, 2) spatial by 2 channels: (B, 1, 1, 2)); the contrib
 * DequantizeLinear and QuantizeLinear, Flatten (B, 12) and QGemm (B, 3);
 * QLinearSigmoid, QLinearSoftmax (opset 12), QLinearConcat (B, 6, 4, 4),
 * QLinearAdd and QLinearMul of x and the sigmoid. */
static Onnx__ModelProto *quant_model(int64_t opset)
{
    static const float one = 1.0f, half = 0.5f;
    static const uint8_t zp = 128;
    static int8_t w[36];
    static const int8_t wz = 0;
    static const int32_t bias[3] = {1, 2, 3};
    static const int64_t wd[2] = {3, 12}, bd[1] = {3};
    for (int i = 0; i < 36; i++)
        w[i] = (int8_t)(i % 7 - 3);
    Onnx__GraphProto *g = mk_graph("g");
    PUSH(g->n_input, g->input,
         mk_vi("x", XF_DT_UINT8, 4, (const int64_t[]){-1, 3, 4, 4}, (const char *[]){"B", NULL, NULL, NULL}));
    add_init(g, "s", XF_DT_FLOAT, 0, NULL, &one, 4);
    add_init(g, "h", XF_DT_FLOAT, 0, NULL, &half, 4);
    add_init(g, "z", XF_DT_UINT8, 0, NULL, &zp, 1);
    add_init(g, "w", XF_DT_INT8, 2, wd, w, 36);
    add_init(g, "wz", XF_DT_INT8, 0, NULL, &wz, 1);
    add_init(g, "bias", XF_DT_INT32, 1, bd, bias, 12);
    Onnx__NodeProto *n = ms_node("QLinearAveragePool", (const char *[]){"x", "s", "z", "h", "z", NULL}, "pool");
    static const int64_t two[2] = {2, 2}; /* the attribute keeps the pointer */
    attr_ints(n, "kernel_shape", 2, two);
    attr_ints(n, "strides", 2, two);
    attr_int(n, "count_include_pad", 1);
    PUSH(g->n_node, g->node, n);
    n = ms_node("QLinearLeakyRelu", (const char *[]){"pool", "s", "z", "s", "z", NULL}, "lrelu");
    attr_float(n, "alpha", 0.2f);
    PUSH(g->n_node, g->node, n);
    n = ms_node("QLinearGlobalAveragePool", (const char *[]){"lrelu", "s", "z", "s", "z", NULL}, "gap");
    attr_int(n, "channels_last", 1);
    PUSH(g->n_node, g->node, n);
    PUSH(g->n_node, g->node, ms_node("QLinearSigmoid", (const char *[]){"x", "s", "z", "s", "z", NULL}, "sig"));
    n = ms_node("QLinearSoftmax", (const char *[]){"x", "s", "z", "s", "z", NULL}, "soft");
    attr_int(n, "opset", 12);
    PUSH(g->n_node, g->node, n);
    n = ms_node("QLinearConcat", (const char *[]){"s", "z", "x", "s", "z", "sig", "h", "z", NULL}, "cat");
    attr_int(n, "axis", 1);
    PUSH(g->n_node, g->node, n);
    PUSH(g->n_node, g->node, ms_node("QLinearAdd", (const char *[]){"x", "s", "z", "sig", "h", "z", "s", "z", NULL}, "add"));
    PUSH(g->n_node, g->node, ms_node("QLinearMul", (const char *[]){"x", "s", "z", "sig", "h", "", "s", "z", NULL}, "mul"));
    PUSH(g->n_node, g->node, ms_node("DequantizeLinear", (const char *[]){"lrelu", "h", "z", NULL}, "dq"));
    n = ms_node("QuantizeLinear", (const char *[]){"dq", "s", "z", NULL}, "q");
    attr_int(n, "axis", -1);
    PUSH(g->n_node, g->node, n);
    PUSH(g->n_node, g->node, mk_node("Flatten", NULL, (const char *[]){"q", NULL}, (const char *[]){"flat", NULL}));
    n = ms_node("QGemm", (const char *[]){"flat", "s", "z", "w", "h", "wz", "bias", "s", "z", NULL}, "gemm");
    attr_int(n, "transB", 1);
    attr_float(n, "alpha", 1.0f);
    PUSH(g->n_node, g->node, n);
    const char *outs[] = {"gap", "soft", "cat", "add", "mul", "gemm"};
    for (int i = 0; i < 6; i++)
        PUSH(g->n_output, g->output, mk_vi(outs[i], XF_DT_UINT8, -1, NULL, NULL));
    Onnx__ModelProto *m = mk_model(g, opset);
    add_opset(m, MS, 1);
    return m;
}

static const xf_value *value_named(const xf_graph *g, const char *name)
{
    for (int i = 0; i < g->n_values; i++)
        if (g->values[i].name && strcmp(g->values[i].name, name) == 0)
            return &g->values[i];
    ck_abort_msg("no value %s", name);
    return NULL;
}

/* Every op imports with its attributes, whatever the model's opset; the
 * shapes follow the symbolic batch; export gives the same model back. */
START_TEST(test_import_export)
{
    for (int pass = 0; pass < 2; pass++) {
        int64_t opset = pass ? 11 : 17, batch = pass ? 1 : 3;
        xf_dim_size sizes[] = {{"B", batch}};
        xf_load_options lo = {.dim_sizes = sizes, .n_dim_sizes = pass ? 0 : 1};
        xf_model *m;
        xf_error e;
        capture_start();
        ck_assert_msg(load_proto(quant_model(opset), &lo, &m, &e) == XF_OK, "%s", e.msg);
        const xf_graph *g = m->graph;
        int counts[XF_OP_COUNT + 1];
        xf_graph_count_ops(g, counts);
        ck_assert_int_eq(counts[XF_OP_OPAQUE], 0);
        const xf_op ops[] = {XF_OP_MS_QLINEAR_AVERAGE_POOL, XF_OP_MS_QLINEAR_LEAKY_RELU,
                             XF_OP_MS_QLINEAR_GLOBAL_AVERAGE_POOL, XF_OP_MS_QLINEAR_SIGMOID, XF_OP_MS_QLINEAR_SOFTMAX,
                             XF_OP_MS_QLINEAR_CONCAT, XF_OP_MS_QLINEAR_ADD, XF_OP_MS_QLINEAR_MUL,
                             XF_OP_MS_DEQUANTIZE_LINEAR, XF_OP_MS_QUANTIZE_LINEAR, XF_OP_MS_QGEMM};
        for (size_t i = 0; i < sizeof ops / sizeof *ops; i++)
            ck_assert_msg(counts[ops[i]] == 1, "%s", xf_op_name(ops[i]));
        const xf_node *soft = &g->nodes[find_node_op(g, XF_OP_MS_QLINEAR_SOFTMAX)];
        ck_assert(soft->attrs.softmax_legacy && soft->attrs.axis == 1 && soft->attrs.ms_opset == 12);
        ck_assert_int_eq(g->nodes[find_node_op(g, XF_OP_MS_QLINEAR_GLOBAL_AVERAGE_POOL)].attrs.channels_last, 1);
        ck_assert(g->nodes[find_node_op(g, XF_OP_MS_QLINEAR_LEAKY_RELU)].attrs.alpha == 0.2f);
        ck_assert_int_eq(g->nodes[find_node_op(g, XF_OP_MS_QGEMM)].attrs.trans_b, 1);
        ck_assert_int_eq(g->nodes[find_node_op(g, XF_OP_MS_QUANTIZE_LINEAR)].attrs.axis, -1);
        const xf_node *pool = &g->nodes[find_node_op(g, XF_OP_MS_QLINEAR_AVERAGE_POOL)];
        ck_assert(pool->attrs.count_include_pad == 1 && pool->attrs.n_spatial == 2 && pool->attrs.strides[1] == 2);
        const int64_t want_gap[] = {batch, 1, 1, 2}, want_cat[] = {batch, 6, 4, 4};
        for (int d = 0; d < 4; d++) {
            ck_assert_int_eq(value_named(g, "gap")->shape.dims[d], want_gap[d]);
            ck_assert_int_eq(value_named(g, "cat")->shape.dims[d], want_cat[d]);
        }
        ck_assert_int_eq(value_named(g, "gemm")->dtype, XF_DT_UINT8);
        ck_assert_int_eq(value_named(g, "gemm")->shape.dims[0], batch);
        ck_assert_int_eq(value_named(g, "gemm")->shape.dims[1], 3);
        ck_assert_int_eq(value_named(g, "dq")->dtype, XF_DT_FLOAT);
        xf_model_free(roundtrip(m));
        assert_saved_valid(m, pass ? "contrib_quant_11" : "contrib_quant_17");
        xf_model_free(m);
    }
}
END_TEST

/* Forms xflow does not model stay opaque and are written back as they
 * came: QLinearSoftmax without opset, QLinearConcat without axis, an
 * attribute QGemm does not have.  (QLinearAveragePool channels last is
 * read between Transposes: test_nhwc.) */
START_TEST(test_refused_forms_opaque)
{
    for (int k = 0; k < 4; k++) {
        if (k == 2)
            continue;
        Onnx__ModelProto *mp = quant_model(17);
        Onnx__GraphProto *g = mp->graph;
        const char *target = k == 0 ? "soft" : k == 1 ? "cat" : k == 2 ? "pool" : "gemm";
        Onnx__NodeProto *n = NULL;
        for (size_t i = 0; i < g->n_node; i++)
            if (strcmp(g->node[i]->output[0], target) == 0)
                n = g->node[i];
        if (k < 2)
            n->n_attribute = 0;
        else
            attr_int(n, k == 2 ? "channels_last" : "beta", 1);
        xf_model *m;
        xf_error e;
        capture_start();
        ck_assert_msg(load_proto(mp, NULL, &m, &e) == XF_OK, "%s", e.msg);
        int counts[XF_OP_COUNT + 1];
        xf_graph_count_ops(m->graph, counts);
        ck_assert_msg(counts[XF_OP_OPAQUE] == 1, "%s", target);
        uint8_t *buf;
        size_t len;
        ck_assert_msg(xf_model_save_buffer(m, &buf, &len, &e) == XF_OK, "%s", e.msg);
        Onnx__ModelProto *out = onnx__model_proto__unpack(NULL, len, buf);
        ck_assert(out && out->graph);
        bool found = false;
        for (size_t i = 0; i < out->graph->n_node; i++) {
            const Onnx__NodeProto *o = out->graph->node[i];
            if (strcmp(o->output[0], target) != 0)
                continue;
            found = true;
            ck_assert_str_eq(o->domain, MS);
            ck_assert_uint_eq(o->n_attribute, n->n_attribute);
        }
        ck_assert(found);
        onnx__model_proto__free_unpacked(out, NULL);
        free(buf);
        xf_model_free(m);
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("contrib_quant");
    TCase *tc = tcase_create("quant");
    tcase_add_checked_fixture(tc, NULL, free_allocs);
    tcase_add_test(tc, test_qlinear_add);
    tcase_add_test(tc, test_qlinear_mul);
    tcase_add_test(tc, test_qlinear_lookup);
    tcase_add_test(tc, test_qlinear_global_pool);
    tcase_add_test(tc, test_qlinear_average_pool);
    tcase_add_test(tc, test_qlinear_average_pool_windows);
    tcase_add_test(tc, test_qlinear_concat);
    tcase_add_test(tc, test_qlinear_softmax);
    tcase_add_test(tc, test_qlinear_softmax_rows);
    tcase_add_test(tc, test_qgemm);
    tcase_add_test(tc, test_ms_quantize);
    tcase_add_test(tc, test_rules);
    tcase_add_test(tc, test_import_export);
    tcase_add_test(tc, test_refused_forms_opaque);
    suite_add_tcase(s, tc);
    return xf_test_run_suite(s);
}
