/* MaxPool's Indices output and MaxUnpool on cpu_ref: hand-worked values
 * (pads and strides, storage_order 1, ties, 1-D windows with ceil_mode and
 * dilations; unpooling with and without output_shape), a MaxPool then
 * MaxUnpool round trip on random data, the error for an index outside the
 * output, and the shape rules' errors. */
#include "kernel_case_util.h"
#include "xf_test_util.h"

#include <check.h>
#include <math.h>
#include <stdlib.h>

#define MP XF_OP_MAX_POOL
#define MU XF_OP_MAX_UNPOOL

static void set_window(xf_attrs *a, int ns, const int64_t *k, const int64_t *s, const int64_t *pads)
{
    a->n_spatial = ns;
    for (int i = 0; i < ns; i++) {
        a->kernel[i] = k[i];
        a->strides[i] = s ? s[i] : 1;
        a->pads[i] = pads ? pads[i] : 0;
        a->pads[ns + i] = pads ? pads[ns + i] : 0;
    }
}

/* MaxPool of x with both outputs, 2-D: kernel k x k, stride s, pads p on every side. */
static node_case pool_case(xf_tensor *x, int64_t k, int64_t s, int64_t p)
{
    node_case c = make_case(MP, 1, x);
    c.n_out = 2;
    set_window(&c.a, 2, (int64_t[]){k, k}, (int64_t[]){s, s}, (int64_t[]){p, p, p, p});
    return c;
}

/* Both outputs of a MaxPool case: Y and Indices, checked against the shape and values given. */
static void expect_pool(node_case c, int ndim, const int64_t *dims, const double *y, const double *ind)
{
    xf_tensor *out[2] = {NULL, NULL};
    run_case(&c, out);
    expect(out[0], XF_DT_FLOAT, ndim, dims, y);
    expect(out[1], XF_DT_INT64, ndim, dims, ind);
}
#define EXPECT_POOL(c, dims, y, ind) expect_pool(c, dims, (double[])y, (double[])ind)
#define V(...) {__VA_ARGS__}

/* Channel 0 and its negation as channel 1. */
#define PLANES() \
    F32(DIMS(1, 2, 3, 4), 1, 9, 2, 0, 4, 3, 8, 5, 7, 6, 0, 11, -1, -9, -2, 0, -4, -3, -8, -5, -7, -6, 0, -11)

/* ------------------------------------------------------------ MaxPool's Indices */

/* 2x2 windows at stride 2 over a 3x4 map padded by 1 on every side: 2x3
 * windows, the corner ones holding one or two input elements.  Indices
 * count through the whole input: channel 1 starts at 12. */
START_TEST(indices_with_pads_and_strides)
{
    EXPECT_POOL(pool_case(PLANES(), 2, 2, 1), DIMS(1, 2, 2, 3), V(1, 9, 0, 7, 8, 11, -1, -2, 0, -4, 0, -5),
                V(0, 1, 3, 8, 6, 11, 12, 14, 15, 16, 22, 19));
}
END_TEST

/* storage_order 1: (h, w) of a plane of height H is h + w * H. */
START_TEST(indices_column_major)
{
    node_case c = pool_case(PLANES(), 2, 2, 0);
    c.a.storage_order = 1;
    /* channel 0: 9 at (0, 1) -> 3, 8 at (1, 2) -> 7; channel 1: -1 at (0, 0), 0 at (0, 3) -> 9 */
    EXPECT_POOL(c, DIMS(1, 2, 1, 2), V(9, 8, -1, 0), V(3, 7, 12, 21));
}
END_TEST

/* Of equal maxima the first in scan order (rows, then columns within a
 * row) is named, whatever the storage order. */
START_TEST(indices_ties)
{
    for (int order = 0; order < 2; order++) {
        node_case c = pool_case(F32(DIMS(1, 1, 2, 4), 5, 5, 1, 2, 5, 3, 2, 2), 2, 2, 0);
        c.a.storage_order = order;
        /* the second window's first 2 is at (0, 3): 3 row-major, 0 + 3 * 2 column-major */
        EXPECT_POOL(c, DIMS(1, 1, 1, 2), V(5, 2), V(0, order ? 6 : 3));
    }
    /* overlapping windows (stride 1) name the same element */
    EXPECT_POOL(pool_case(F32(DIMS(1, 1, 2, 3), 1, 7, 1, 7, 0, 7), 2, 1, 0), DIMS(1, 1, 1, 2), V(7, 7), V(1, 1));
}
END_TEST

/* 1-D: ceil_mode's last window holds one element; dilation 2 skips one. */
START_TEST(indices_one_dimensional)
{
    node_case c = make_case(MP, 1, F32(DIMS(1, 1, 5), 3, 1, 4, 1, 5));
    c.n_out = 2;
    set_window(&c.a, 1, (int64_t[]){2}, (int64_t[]){2}, NULL);
    c.a.ceil_mode = 1;
    EXPECT_POOL(c, DIMS(1, 1, 3), V(3, 4, 5), V(0, 2, 4));
    c = make_case(MP, 1, F32(DIMS(1, 1, 5), 3, 1, 4, 1, 5));
    c.n_out = 2;
    set_window(&c.a, 1, (int64_t[]){2}, NULL, NULL);
    c.a.dilations[0] = 2;
    /* windows {0, 2}, {1, 3} (a tie: the first), {2, 4} */
    EXPECT_POOL(c, DIMS(1, 1, 3), V(4, 1, 5), V(2, 1, 4));
}
END_TEST

/* ------------------------------------------------------------ MaxUnpool */

static node_case unpool_case(xf_tensor *x, xf_tensor *ind, xf_tensor *shape, int64_t k, int64_t s)
{
    node_case c = make_case(MU, shape ? 3 : 2, x, ind, shape);
    set_window(&c.a, 2, (int64_t[]){k, k}, (int64_t[]){s, s}, NULL);
    return c;
}

/* Without output_shape: (in - 1) * stride + kernel - pads per axis; here
 * 2 x 3 (the end pad of the width takes one), indices through both planes. */
START_TEST(unpool_inferred_shape)
{
    node_case c = unpool_case(F32(DIMS(1, 2, 1, 2), 10, 20, 30, 40), I64(DIMS(1, 2, 1, 2), 1, 2, 4, 7), NULL, 2, 2);
    c.a.pads[3] = 1;
    EXPECT(run1(c), XF_DT_FLOAT, DIMS(1, 2, 2, 3), 0, 10, 20, 0, 30, 0, 0, 40, 0, 0, 0, 0);
    /* integers are copied as they are; of two elements for one place the later stays */
    c = unpool_case(mk(XF_DT_INT32, DIMS(1, 1, 1, 2), (int32_t[]){-3, 16777217}), I64(DIMS(1, 1, 1, 2), 3, 3),
                    NULL, 2, 2);
    EXPECT(run1(c), XF_DT_INT32, DIMS(1, 1, 2, 4), 0, 0, 0, 16777217, 0, 0, 0, 0);
}
END_TEST

/* With output_shape 5x5 (what 2x2 windows at stride 2 leave of a 5x5
 * map): indices address the 5x5 output, as MaxPool's of that map do:
 * 6 = (1, 1), 8 = (1, 3), 16 = (3, 1), 18 = (3, 3).  The shape comes as a
 * constant (static shapes) and as a graph input (known at run time). */
START_TEST(unpool_output_shape)
{
    for (int fed = 0; fed < 2; fed++) {
        node_case c = unpool_case(F32(DIMS(1, 1, 2, 2), 5, 6, 7, 8), I64(DIMS(1, 1, 2, 2), 6, 8, 16, 18),
                                  I64(DIMS(4), 1, 1, 5, 5), 2, 2);
        c.feed = fed ? 4 : 0;
        EXPECT(run1(c), XF_DT_FLOAT, DIMS(1, 1, 5, 5), 0, 0, 0, 0, 0, 0, 5, 0, 6, 0, 0, 0, 0, 0, 0, 0, 7, 0, 8, 0,
               0, 0, 0, 0, 0);
    }
}
END_TEST

/* An index outside the output (or negative) is an error naming the node. */
START_TEST(unpool_index_out_of_range)
{
    expect_run_error(unpool_case(F32(DIMS(1, 1, 1, 2), 1, 2), I64(DIMS(1, 1, 1, 2), 0, 8), NULL, 2, 2),
                     "index 8 (element 1 of I) is outside the output's 8 elements");
    expect_run_error(unpool_case(F32(DIMS(1, 1, 1, 2), 1, 2), I64(DIMS(1, 1, 1, 2), -1, 0), NULL, 2, 2),
                     "index -1 (element 0 of I)");
    /* the output_shape given decides the size: 16 is past 4x4 */
    node_case c = unpool_case(F32(DIMS(1, 1, 1, 1), 1), I64(DIMS(1, 1, 1, 1), 16), I64(DIMS(4), 1, 1, 4, 4), 2, 2);
    c.feed = 4;
    expect_run_error(c, "outside the output's 16 elements");
}
END_TEST

/* ------------------------------------------------------------ round trip */

/* MaxPool then MaxUnpool of random maps (overlapping 3x3 windows at
 * stride 2 with pads; odd sizes, whose unpooled shape output_shape gives):
 * each index names an input element equal to its pooled value, which is
 * the largest of its window, and the unpooled map holds exactly the pooled
 * maxima at those places and zeros elsewhere. */
START_TEST(pool_unpool_round_trip)
{
    const int64_t n = 2, ch = 3, h = 7, w = 9, oh = 4, ow = 5; /* (7 + 2 - 3) / 2 + 1, (9 + 2 - 3) / 2 + 1 */
    xf_shape xs = xf_shape_make(4, (int64_t[]){n, ch, h, w});
    for (uint64_t seed = 1; seed <= 3; seed++) {
        xf_tensor *x = xf_tensor_random(XF_DT_FLOAT, &xs, seed);
        ck_assert_ptr_nonnull(x);
        const float *xv = x->data;
        node_case pc = pool_case(xf_tensor_retain(x), 3, 2, 1);
        xf_tensor *pooled[2] = {NULL, NULL};
        run_case(&pc, pooled);
        ck_assert(pooled[1]->shape.ndim == 4 && pooled[1]->shape.dims[2] == oh && pooled[1]->shape.dims[3] == ow);
        const float *yv = pooled[0]->data;
        const int64_t *iv = pooled[1]->data;
        for (int64_t p = 0; p < n * ch; p++)
            for (int64_t r = 0; r < oh; r++)
                for (int64_t col = 0; col < ow; col++) {
                    int64_t j = (p * oh + r) * ow + col, at = iv[j];
                    ck_assert(at >= p * h * w && at < (p + 1) * h * w);
                    ck_assert(xv[at] == yv[j]);
                    int64_t ar = at % (h * w) / w, ac = at % w;
                    ck_assert(ar >= 2 * r - 1 && ar <= 2 * r + 1 && ac >= 2 * col - 1 && ac <= 2 * col + 1);
                    for (int64_t dr = -1; dr <= 1; dr++)
                        for (int64_t dc = -1; dc <= 1; dc++) {
                            int64_t rr = 2 * r + dr, cc = 2 * col + dc;
                            if (rr >= 0 && rr < h && cc >= 0 && cc < w)
                                ck_assert(xv[(p * h + rr) * w + cc] <= yv[j]);
                        }
                }
        node_case uc = unpool_case(pooled[0], pooled[1], I64(DIMS(4), n, ch, h, w), 3, 2);
        set_window(&uc.a, 2, (int64_t[]){3, 3}, (int64_t[]){2, 2}, (int64_t[]){1, 1, 1, 1});
        xf_tensor_retain(pooled[0]);
        xf_tensor_retain(pooled[1]);
        xf_tensor *u = run1(uc);
        ck_assert(xf_shape_equal(&u->shape, &xs));
        const float *uv = u->data;
        bool *named = calloc((size_t)xf_tensor_numel(x), sizeof *named);
        ck_assert_ptr_nonnull(named);
        for (int64_t j = 0; j < xf_tensor_numel(pooled[1]); j++) {
            named[iv[j]] = true;
            ck_assert(uv[iv[j]] == yv[j]);
        }
        for (int64_t i = 0; i < xf_tensor_numel(x); i++)
            ck_assert(named[i] ? uv[i] == xv[i] : uv[i] == 0);
        free(named);
        xf_tensor_release(u);
        xf_tensor_release(pooled[0]);
        xf_tensor_release(pooled[1]);
        xf_tensor_release(x);
    }
}
END_TEST

/* ------------------------------------------------------------ shape rules */

START_TEST(shape_rule_errors)
{
    node_case c = pool_case(PLANES(), 2, 2, 0);
    c.a.storage_order = 2;
    expect_infer_error(c, "storage_order 2 must be 0 or 1");
    expect_infer_error(unpool_case(F32(DIMS(1, 1, 1, 2), 1, 2), I64(DIMS(1, 1, 2, 1), 0, 1), NULL, 2, 2),
                       "I has shape 1x1x2x1, X 1x1x1x2: they must be equal");
    expect_infer_error(unpool_case(F32(DIMS(1, 1, 1, 1), 1), I64(DIMS(1, 1, 1, 1), 0), I64(DIMS(2), 4, 4), 2, 2),
                       "output_shape [4,4] has 2 entries; X has rank 4");
    expect_infer_error(unpool_case(F32(DIMS(1, 1, 1, 1), 1), I64(DIMS(1, 1, 1, 1), 0), I64(DIMS(4), 1, 1, -1, 2),
                                   2, 2),
                       "negative dimension");
    c = unpool_case(F32(DIMS(1, 1, 1, 1), 1), I64(DIMS(1, 1, 1, 1), 0), NULL, 1, 1);
    c.a.pads[1] = c.a.pads[3] = 1;
    expect_infer_error(c, "spatial axis 1: pads 1 and 1 leave a negative output size");
    c = unpool_case(F32(DIMS(1, 1, 1, 1), 1), I64(DIMS(1, 1, 1, 1), 0), NULL, 2, 0);
    expect_infer_error(c, "spatial axis 0: kernel 2 and stride 0 must be positive");
    c = make_case(MU, 2, F32(DIMS(1, 1, 1, 1), 1), I64(DIMS(1, 1, 1, 1), 0));
    expect_infer_error(c, "kernel_shape is required");
    expect_infer_error(unpool_case(F32(DIMS(1, 1, 1, 1), 1), I32(DIMS(1, 1, 1, 1), 0), NULL, 2, 2),
                       "input 1 must be INT64, got INT32");
}
END_TEST

int main(void)
{
    Suite *s = suite_create("unpool");
    TCase *tc = tcase_create("kernels");
    tcase_add_test(tc, indices_with_pads_and_strides);
    tcase_add_test(tc, indices_column_major);
    tcase_add_test(tc, indices_ties);
    tcase_add_test(tc, indices_one_dimensional);
    tcase_add_test(tc, unpool_inferred_shape);
    tcase_add_test(tc, unpool_output_shape);
    tcase_add_test(tc, unpool_index_out_of_range);
    tcase_add_test(tc, pool_unpool_round_trip);
    tcase_add_test(tc, shape_rule_errors);
    suite_add_tcase(s, tc);
    return xf_test_run_suite(s);
}
