/* cpu_ref's convolutions and matrix products sum each output's products
 * in one order (input channel, then kernel taps; the inner dimension of a
 * product), skipping the taps that fall in the padding.  They run as
 * products of tiles and bands; these cases are large enough to span
 * several of them and must equal, bit for bit, a loop per output.  Also
 * Gemm's transposes and broadcast C, MatMul's broadcasting and vectors and
 * float16 and bfloat16 products against hand-computed values. */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernel_case_util.h"

/* count floats from a fixed generator, in [-1, 1) */
static float *random_floats(int64_t count, uint32_t seed)
{
    float *v = malloc(sizeof *v * (size_t)count);
    ck_assert_ptr_nonnull(v);
    for (int64_t i = 0; i < count; i++) {
        seed = seed * 1664525u + 1013904223u;
        v[i] = (float)(seed >> 8) / (float)(1u << 23) - 1.0f;
    }
    return v;
}

typedef struct conv2d {
    int64_t c, h, w, m, kh, kw, stride, dil, pad, group;
} conv2d;

static int64_t conv_out(int64_t in, int64_t k, const conv2d *g)
{
    return (in + 2 * g->pad - (k - 1) * g->dil - 1) / g->stride + 1;
}

/* Conv of x by wt plus bias, as a loop per output whose double sum adds
 * the products of channel then tap, skipping padding, and rounds once. */
static void conv_by_loop(const conv2d *g, const float *x, const float *wt, const float *bias, float *y)
{
    int64_t oh = conv_out(g->h, g->kh, g), ow = conv_out(g->w, g->kw, g), cg = g->c / g->group, mg = g->m / g->group;
    for (int64_t m = 0; m < g->m; m++)
        for (int64_t i = 0; i < oh; i++)
            for (int64_t j = 0; j < ow; j++) {
                double acc = 0.0;
                for (int64_t c = 0; c < cg; c++)
                    for (int64_t a = 0; a < g->kh; a++)
                        for (int64_t b = 0; b < g->kw; b++) {
                            int64_t r = i * g->stride - g->pad + a * g->dil, s = j * g->stride - g->pad + b * g->dil;
                            if (r < 0 || r >= g->h || s < 0 || s >= g->w)
                                continue;
                            acc += (double)x[((m / mg * cg + c) * g->h + r) * g->w + s] *
                                   (double)wt[((m * cg + c) * g->kh + a) * g->kw + b];
                        }
                y[(m * oh + i) * ow + j] = (float)(acc + bias[m]);
            }
}

static void check_conv(const conv2d *g, uint32_t seed)
{
    int64_t oh = conv_out(g->h, g->kh, g), ow = conv_out(g->w, g->kw, g), cg = g->c / g->group;
    int64_t nx = g->c * g->h * g->w, nw = g->m * cg * g->kh * g->kw, ny = g->m * oh * ow;
    float *x = random_floats(nx, seed), *wt = random_floats(nw, seed + 1), *bias = random_floats(g->m, seed + 2);
    float *want = malloc(sizeof *want * (size_t)ny);
    ck_assert_ptr_nonnull(want);
    conv_by_loop(g, x, wt, bias, want);
    node_case k = make_case(XF_OP_CONV, 3, mk(XF_DT_FLOAT, DIMS(1, g->c, g->h, g->w), x),
                            mk(XF_DT_FLOAT, DIMS(g->m, cg, g->kh, g->kw), wt), mk(XF_DT_FLOAT, DIMS(g->m), bias));
    k.a.n_spatial = 2;
    k.a.kernel[0] = g->kh;
    k.a.kernel[1] = g->kw;
    for (int d = 0; d < 2; d++) {
        k.a.strides[d] = g->stride;
        k.a.dilations[d] = g->dil;
        k.a.pads[d] = k.a.pads[2 + d] = g->pad;
    }
    k.a.group = g->group;
    xf_tensor *y = run1(k);
    ck_assert_int_eq(xf_tensor_numel(y), ny);
    for (int64_t i = 0; i < ny; i++)
        ck_assert_msg(memcmp(&((float *)y->data)[i], &want[i], sizeof(float)) == 0, "element %lld: %.9g, want %.9g",
                      (long long)i, ((float *)y->data)[i], want[i]);
    xf_tensor_release(y);
    free(x);
    free(wt);
    free(bias);
    free(want);
}

START_TEST(conv_equals_loop_per_output)
{
    /* 512 channels of 3x3 taps: the im2col matrix's 4608 rows take bands
     * of 910 of the 1024 output positions */
    check_conv(&(conv2d){.c = 512, .h = 32, .w = 32, .m = 3, .kh = 3, .kw = 3, .stride = 1, .dil = 1, .pad = 1,
                         .group = 1},
               1);
    /* strides, dilation, groups, padding wider than a dilated tap */
    check_conv(&(conv2d){.c = 6, .h = 13, .w = 11, .m = 9, .kh = 3, .kw = 2, .stride = 2, .dil = 2, .pad = 3,
                         .group = 3},
               2);
    /* depthwise 5x5 */
    check_conv(&(conv2d){.c = 8, .h = 9, .w = 10, .m = 8, .kh = 5, .kw = 5, .stride = 1, .dil = 1, .pad = 2,
                         .group = 8},
               3);
    /* 1x1 of stride 1 reads the input as it is; of stride 2 through im2col */
    check_conv(&(conv2d){.c = 70, .h = 5, .w = 7, .m = 33, .kh = 1, .kw = 1, .stride = 1, .dil = 1, .pad = 0,
                         .group = 1},
               4);
    check_conv(&(conv2d){.c = 70, .h = 5, .w = 7, .m = 33, .kh = 1, .kw = 1, .stride = 2, .dil = 1, .pad = 0,
                         .group = 1},
               5);
}
END_TEST

START_TEST(conv_infinite_weight_only_in_padding)
{
    /* The top-left tap is infinite.  It falls in the padding for every
     * output but the last, whose sums stay finite: the padding is skipped,
     * not multiplied as zeros (0 * inf would be NaN). */
    node_case k = make_case(XF_OP_CONV, 2, F32(DIMS(1, 1, 2, 2), 1, 1, 1, 1),
                            F32(DIMS(1, 1, 3, 3), INFINITY, 1, 1, 1, 1, 1, 1, 1, 1));
    k.a.n_spatial = 2;
    k.a.kernel[0] = k.a.kernel[1] = 3;
    for (int d = 0; d < 4; d++)
        k.a.pads[d] = 1;
    EXPECT(run1(k), XF_DT_FLOAT, DIMS(1, 1, 2, 2), 4, 4, 4, INFINITY);
}
END_TEST

/* A (m x k) times B (k x n) (B stored transposed when trans_b), each sum
 * in order of the inner index, rounded once. */
static void product_by_loop(const float *a, const float *b, bool trans_b, int64_t m, int64_t k, int64_t n, float *y)
{
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            double s = 0.0;
            for (int64_t t = 0; t < k; t++)
                s += (double)a[i * k + t] * (double)(trans_b ? b[j * k + t] : b[t * n + j]);
            y[i * n + j] = (float)s;
        }
}

START_TEST(products_equal_loop_per_output)
{
    /* inner dimensions past one band of 64 and tiles of 256 columns */
    int64_t m = 5, k = 203, n = 300;
    float *a = random_floats(m * k, 11), *b = random_floats(k * n, 12), *want = malloc(sizeof(float) * (size_t)(m * n));
    ck_assert_ptr_nonnull(want);
    for (int trans_b = 0; trans_b < 2; trans_b++) {
        product_by_loop(a, b, trans_b, m, k, n, want);
        node_case c = trans_b ? make_case(XF_OP_GEMM, 2, mk(XF_DT_FLOAT, DIMS(m, k), a), mk(XF_DT_FLOAT, DIMS(n, k), b))
                              : make_case(XF_OP_MATMUL, 2, mk(XF_DT_FLOAT, DIMS(m, k), a),
                                          mk(XF_DT_FLOAT, DIMS(k, n), b));
        c.a.trans_b = trans_b;
        xf_tensor *y = run1(c);
        ck_assert_int_eq(xf_tensor_numel(y), m * n);
        ck_assert_msg(memcmp(y->data, want, sizeof(float) * (size_t)(m * n)) == 0, "trans_b %d differs", trans_b);
        xf_tensor_release(y);
    }
    free(a);
    free(b);
    free(want);
}
END_TEST

/* Products with an empty output (rows or columns of 0; an empty output
 * has no buffer) or an empty inner dimension (all sums 0, plus C), in float
 * and double. */
START_TEST(products_with_empty_dims)
{
    static const double d[12] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
    static const float f[12] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
    for (int dbl = 0; dbl < 2; dbl++) {
        xf_dtype t = dbl ? XF_DT_DOUBLE : XF_DT_FLOAT;
        const void *v = dbl ? (const void *)d : (const void *)f;
        EXPECT(run1(make_case(XF_OP_MATMUL, 2, mk(t, DIMS(0, 4), v), mk(t, DIMS(4, 3), v))), t, DIMS(0, 3), 0);
        node_case c = make_case(XF_OP_GEMM, 3, mk(t, DIMS(2, 3), v), mk(t, DIMS(0, 3), v), mk(t, DIMS(1, 1), v));
        c.a.trans_b = 1;
        EXPECT(run1(c), t, DIMS(2, 0), 0);
        c = make_case(XF_OP_GEMM, 3, mk(t, DIMS(2, 0), v), mk(t, DIMS(0, 3), v), mk(t, DIMS(1, 3), v));
        c.a.beta = 2;
        EXPECT(run1(c), t, DIMS(2, 3), 2, 4, 6, 2, 4, 6);
    }
}
END_TEST

START_TEST(gemm_transposes)
{
    /* A^T = [[1,3,5],[2,4,6]], B^T's columns are B's rows */
    node_case c = make_case(XF_OP_GEMM, 3, F32(DIMS(3, 2), 1, 2, 3, 4, 5, 6),
                            F32(DIMS(4, 3), 1, 0, 0, 0, 1, 0, 0, 0, 1, 1, 1, 1), F32(DIMS(4), 1, 2, 3, 4));
    c.a.trans_a = c.a.trans_b = 1;
    c.a.alpha = 2;
    c.a.beta = 0.5f;
    EXPECT(run1(c), XF_DT_FLOAT, DIMS(2, 4), 2.5, 7, 11.5, 20, 4.5, 9, 13.5, 26);

    c = make_case(XF_OP_GEMM, 2, F32(DIMS(2, 2), 1, 2, 3, 4), F32(DIMS(2, 2), 5, 6, 7, 8));
    EXPECT(run1(c), XF_DT_FLOAT, DIMS(2, 2), 19, 22, 43, 50);

    /* C as a column broadcast over N */
    c = make_case(XF_OP_GEMM, 3, F32(DIMS(2, 2), 1, 2, 3, 4), F32(DIMS(2, 2), 1, 0, 0, 1), F32(DIMS(2, 1), 10, 20));
    EXPECT(run1(c), XF_DT_FLOAT, DIMS(2, 2), 11, 12, 23, 24);
}
END_TEST

/* t converted to floating dtype dt (t released). */
static xf_tensor *as_dtype(xf_tensor *t, xf_dtype dt)
{
    xf_tensor *r = xf_tensor_as_float(t, dt);
    ck_assert_ptr_nonnull(r);
    xf_tensor_release(t);
    return r;
}

/* float16 and bfloat16 matrix products, convolutions and ranges: computed
 * in float and rounded once (these values are exact in both). */
START_TEST(half_precision_products)
{
    static const xf_dtype types[2] = {XF_DT_FLOAT16, XF_DT_BFLOAT16};
    for (int i = 0; i < 2; i++) {
        xf_dtype t = types[i];
        xf_tensor *y = run1(make_case(XF_OP_MATMUL, 2, as_dtype(F32(DIMS(2, 2), 1, 2, 3, 4), t),
                                      as_dtype(F32(DIMS(2, 2), 5, 6, 7, 8), t)));
        ck_assert_int_eq(y->dtype, t);
        EXPECT(as_dtype(y, XF_DT_FLOAT), XF_DT_FLOAT, DIMS(2, 2), 19, 22, 43, 50);
        node_case c = make_case(XF_OP_GEMM, 3, as_dtype(F32(DIMS(2, 2), 1, 2, 3, 4), t),
                                as_dtype(F32(DIMS(2, 2), 1, 0, 0, 1), t), as_dtype(F32(DIMS(2, 1), 10, 20), t));
        EXPECT(as_dtype(run1(c), XF_DT_FLOAT), XF_DT_FLOAT, DIMS(2, 2), 11, 12, 23, 24);
        c = make_case(XF_OP_CONV, 3, as_dtype(F32(DIMS(1, 1, 2, 2), 1, -2, 3, -4), t),
                      as_dtype(F32(DIMS(1, 1, 1, 1), 2), t), as_dtype(F32(DIMS(1), 1), t));
        c.a.activation = XF_ACT_RELU;
        EXPECT(as_dtype(run1(c), XF_DT_FLOAT), XF_DT_FLOAT, DIMS(1, 1, 2, 2), 3, 0, 7, 0);
        /* Range (opset 27 takes the 16-bit floats) */
        c = make_case(XF_OP_RANGE, 3, as_dtype(F32(SCALAR, 0), t), as_dtype(F32(SCALAR, 3), t),
                      as_dtype(F32(SCALAR, 0.5f), t));
        EXPECT(as_dtype(run1(c), XF_DT_FLOAT), XF_DT_FLOAT, DIMS(6), 0, 0.5, 1, 1.5, 2, 2.5);
    }
}
END_TEST

START_TEST(matmul_broadcast_and_vectors)
{
    EXPECT(run1(make_case(XF_OP_MATMUL, 2, iota_f32(DIMS(2, 2, 3), 1), F32(DIMS(3), 1, 1, 0))), XF_DT_FLOAT,
           DIMS(2, 2), 3, 9, 15, 21);
    EXPECT(run1(make_case(XF_OP_MATMUL, 2, F32(DIMS(2), 1, 2), iota_f32(DIMS(2, 2, 3), 0))), XF_DT_FLOAT,
           DIMS(2, 3), 6, 9, 12, 24, 27, 30);
    /* batch dims (2,1) and (3) broadcast to (2,3) */
    EXPECT(run1(make_case(XF_OP_MATMUL, 2, F32(DIMS(2, 1, 1, 2), 1, 2, 3, 4),
                          F32(DIMS(3, 2, 1), 1, 1, 1, 0, 0, 1))),
           XF_DT_FLOAT, DIMS(2, 3, 1, 1), 3, 1, 2, 7, 3, 4);
    EXPECT(run1(make_case(XF_OP_MATMUL, 2, F32(DIMS(2), 1, 2), F32(DIMS(2), 3, 4))), XF_DT_FLOAT, SCALAR, 11);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("ref_products");
    TCase *k = tcase_create("in order");
    tcase_add_test(k, conv_equals_loop_per_output);
    tcase_add_test(k, conv_infinite_weight_only_in_padding);
    tcase_add_test(k, products_equal_loop_per_output);
    tcase_add_test(k, products_with_empty_dims);
    tcase_add_test(k, gemm_transposes);
    tcase_add_test(k, half_precision_products);
    tcase_add_test(k, matmul_broadcast_and_vectors);
    suite_add_tcase(s, k);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
