/* The random ops (RandomNormal, RandomUniform, their Like forms, Bernoulli,
 * Multinomial, and Dropout when it trains): determinism of the draws, shapes and dtypes, the
 * statistics of large samples, the shape rules' errors naming the node,
 * the attributes through ONNX import and export, canonicalization leaving
 * them unfolded, the optimizer keeping two identical draws apart, the cpu
 * backend against cpu_ref and the cuda backend's support check. */
#include "backend_util.h"
#include "kernel_case_util.h"
#include "proto_util.h"
#include "xf_optimizer.h"
#include "xf_test_util.h"

#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static node_case random_case(xf_op op, int ndim, const int64_t *dims)
{
    node_case c = make_case(op, 0);
    c.opset = 15;
    c.a.rand_has_shape = true;
    c.a.rand_shape = xf_shape_make(ndim, dims);
    return c;
}

static node_case with_seed(node_case c, float seed)
{
    c.a.rand_has_seed = true;
    c.a.rand_seed = seed;
    return c;
}

static node_case like_case(xf_op op, xf_tensor *x)
{
    node_case c = make_case(op, 1, x);
    c.opset = 15;
    c.feed = 1;
    return c;
}

/* A tensor of zeros (the test fails when it cannot be made). */
static xf_tensor *zeros(xf_dtype t, int ndim, const int64_t *dims)
{
    xf_shape s = xf_shape_make(ndim, dims);
    xf_tensor *x = xf_tensor_create(t, &s);
    ck_assert_ptr_nonnull(x);
    return x;
}

static double at(const xf_tensor *t, int64_t i)
{
    switch (t->dtype) {
    case XF_DT_FLOAT: return ((const float *)t->data)[i];
    case XF_DT_DOUBLE: return ((const double *)t->data)[i];
    case XF_DT_INT32: return ((const int32_t *)t->data)[i];
    case XF_DT_INT64: return (double)((const int64_t *)t->data)[i];
    case XF_DT_BOOL: return ((const uint8_t *)t->data)[i];
    default: ck_abort_msg("unexpected dtype %s", xf_dtype_name(t->dtype)); return 0;
    }
}

static bool same_tensor(const xf_tensor *a, const xf_tensor *b)
{
    return a->dtype == b->dtype && xf_shape_equal(&a->shape, &b->shape) && a->nbytes == b->nbytes &&
           memcmp(a->data, b->data, a->nbytes) == 0;
}

static void mean_var(const xf_tensor *t, double *mean, double *var)
{
    int64_t n = xf_tensor_numel(t);
    double s = 0, s2 = 0;
    for (int64_t i = 0; i < n; i++)
        s += at(t, i);
    *mean = s / (double)n;
    for (int64_t i = 0; i < n; i++)
        s2 += (at(t, i) - *mean) * (at(t, i) - *mean);
    *var = s2 / (double)(n - 1);
}

/* ------------------------------------------------------------ determinism */

START_TEST(same_seed_same_values)
{
    xf_tensor *a = run1(with_seed(random_case(XF_OP_RANDOM_NORMAL, DIMS(3, 5)), 7));
    xf_tensor *b = run1(with_seed(random_case(XF_OP_RANDOM_NORMAL, DIMS(3, 5)), 7));
    xf_tensor *c = run1(with_seed(random_case(XF_OP_RANDOM_NORMAL, DIMS(3, 5)), 8));
    /* no seed: the key is the output's name, the same in both sessions */
    xf_tensor *d = run1(random_case(XF_OP_RANDOM_NORMAL, DIMS(3, 5)));
    xf_tensor *e = run1(random_case(XF_OP_RANDOM_NORMAL, DIMS(3, 5)));
    ck_assert(same_tensor(a, b));
    ck_assert(!same_tensor(a, c));
    ck_assert(same_tensor(d, e));
    ck_assert(!same_tensor(a, d));
    int distinct = 0;
    for (int i = 1; i < 15; i++)
        distinct += at(a, i) != at(a, i - 1);
    ck_assert_int_eq(distinct, 14);
    xf_tensor *all[] = {a, b, c, d, e};
    release_all(all, 5);
}
END_TEST

/* The same session run twice draws the same values (kernels are pure). */
START_TEST(every_run_the_same)
{
    node_case c = like_case(XF_OP_RANDOM_UNIFORM_LIKE, iota_f32(DIMS(4, 4), 0));
    xf_graph *g = case_graph(&c);
    release_case(&c);
    xf_session *s = NULL;
    xf_error err = {0};
    ck_assert_msg(xf_session_create(g, 15, "cpu_ref", NULL, &s, &err) == XF_OK, "%s", err.msg);
    xf_tensor *in[1] = {iota_f32(DIMS(4, 4), 0)}, *o1[1] = {0}, *o2[1] = {0};
    ck_assert_msg(xf_session_run(s, in, o1, &err) == XF_OK, "%s", err.msg);
    ck_assert_msg(xf_session_run(s, in, o2, &err) == XF_OK, "%s", err.msg);
    ck_assert(same_tensor(o1[0], o2[0]));
    xf_tensor_release(in[0]);
    xf_tensor_release(o1[0]);
    xf_tensor_release(o2[0]);
    xf_session_free(s);
    xf_graph_free(g);
}
END_TEST

/* ------------------------------------------------------------ shapes and dtypes */

START_TEST(shapes_and_dtypes)
{
    static const xf_dtype floats[] = {XF_DT_FLOAT, XF_DT_DOUBLE, XF_DT_FLOAT16, XF_DT_BFLOAT16};
    for (int i = 0; i < 4; i++) {
        node_case c = random_case(i % 2 ? XF_OP_RANDOM_UNIFORM : XF_OP_RANDOM_NORMAL, DIMS(2, 3, 4));
        c.a.to = floats[i];
        xf_tensor *t = run1(c);
        ck_assert_int_eq(t->dtype, floats[i]);
        ck_assert(xf_shape_equal(&t->shape, &(xf_shape){3, {2, 3, 4}}));
        xf_tensor_release(t);
    }
    /* a Like op takes the shape of any input, its type unless dtype says */
    xf_tensor *t = run1(like_case(XF_OP_RANDOM_NORMAL_LIKE, mk(XF_DT_DOUBLE, DIMS(5, 1), (double[5]){0})));
    ck_assert(t->dtype == XF_DT_DOUBLE && xf_shape_equal(&t->shape, &(xf_shape){2, {5, 1}}));
    xf_tensor_release(t);
    node_case c = like_case(XF_OP_RANDOM_UNIFORM_LIKE, I64(DIMS(2, 2), 1, 2, 3, 4));
    c.a.to = XF_DT_FLOAT16;
    t = run1(c);
    ck_assert(t->dtype == XF_DT_FLOAT16 && xf_shape_equal(&t->shape, &(xf_shape){2, {2, 2}}));
    xf_tensor_release(t);
    /* Bernoulli: the input's type, or dtype (bool here) */
    c = like_case(XF_OP_BERNOULLI, F32(DIMS(4), 0, 1, 0, 1));
    EXPECT(run1(c), XF_DT_FLOAT, DIMS(4), 0, 1, 0, 1);
    c = like_case(XF_OP_BERNOULLI, F32(DIMS(4), 1, 0, 1, 1));
    c.a.to = XF_DT_BOOL;
    EXPECT(run1(c), XF_DT_BOOL, DIMS(4), 1, 0, 1, 1);
    /* Multinomial: [batch, sample_size], int32 unless dtype is int64 */
    c = like_case(XF_OP_MULTINOMIAL, F32(DIMS(2, 3), 0, 0, 0, 0, 0, 0));
    c.a.sample_size = 5;
    t = run1(c);
    ck_assert(t->dtype == XF_DT_INT32 && xf_shape_equal(&t->shape, &(xf_shape){2, {2, 5}}));
    xf_tensor_release(t);
    c = like_case(XF_OP_MULTINOMIAL, F32(DIMS(1, 3), -1e30f, 0, -1e30f));
    c.a.to = XF_DT_INT64;
    c.a.sample_size = 3;
    EXPECT(run1(c), XF_DT_INT64, DIMS(1, 3), 1, 1, 1);
    /* an empty shape draws nothing */
    t = run1(random_case(XF_OP_RANDOM_NORMAL, DIMS(0, 4)));
    ck_assert_int_eq(xf_tensor_numel(t), 0);
    xf_tensor_release(t);
}
END_TEST

/* ------------------------------------------------------------ statistics
 *
 * Tolerances are about six standard errors of each statistic, so that a
 * correct generator fails with probability around 1e-9 per check (and,
 * the draws being deterministic, never does once it passes), while a
 * wrong transform (a missing factor, a shifted interval) is off by far
 * more:
 *   normal, n = 200000, sigma = 2: the mean's standard error sigma /
 *     sqrt(n) = 0.0045 (tolerance 0.03); the variance's sqrt(2 sigma^4 /
 *     n) = 0.0126 (tolerance 0.08);
 *   uniform on [-2, 3), n = 200000: the mean's (5 / sqrt(12)) / sqrt(n) =
 *     0.0032 (tolerance 0.02); the variance 25 / 12 within 0.05 (its error
 *     sqrt(1.8) * 25 / 12 / sqrt(n) = 0.0062); the extremes within 0.001 of
 *     the bounds (a gap of 0.001 has probability (1 - 0.001 / 5)^n = e^-40);
 *   Bernoulli, p = 0.3, n = 100000: sqrt(0.21 / n) = 0.00145 (tolerance
 *     0.01);
 *   Multinomial, n = 100000 per row: each class frequency's error is at
 *     most sqrt(0.25 / n) = 0.0016 (tolerance 0.01). */

START_TEST(normal_statistics)
{
    for (int like = 0; like < 2; like++) {
        node_case c = like ? like_case(XF_OP_RANDOM_NORMAL_LIKE, zeros(XF_DT_FLOAT, DIMS(200, 1000)))
                           : random_case(XF_OP_RANDOM_NORMAL, DIMS(200, 1000));
        c.a.rand_a = 1.5f;
        c.a.rand_b = 2.0f;
        if (like)
            c.a.to = XF_DT_DOUBLE;
        xf_tensor *t = run1(c);
        double mean, var;
        mean_var(t, &mean, &var);
        ck_assert_msg(fabs(mean - 1.5) < 0.03, "mean %g", mean);
        ck_assert_msg(fabs(var - 4.0) < 0.08, "variance %g", var);
        /* the tails: |z| > 2 has probability 0.0455 (its error 0.0005) */
        int64_t n = xf_tensor_numel(t), tail = 0;
        for (int64_t i = 0; i < n; i++)
            tail += fabs(at(t, i) - 1.5) > 4.0;
        ck_assert_msg(fabs((double)tail / (double)n - 0.0455) < 0.004, "tail %g", (double)tail / (double)n);
        xf_tensor_release(t);
    }
}
END_TEST

START_TEST(uniform_statistics)
{
    for (int like = 0; like < 2; like++) {
        node_case c = like ? like_case(XF_OP_RANDOM_UNIFORM_LIKE, zeros(XF_DT_DOUBLE, DIMS(200000)))
                           : random_case(XF_OP_RANDOM_UNIFORM, DIMS(200000));
        c.a.rand_a = -2.0f;
        c.a.rand_b = 3.0f;
        xf_tensor *t = run1(c);
        double mean, var, lo = INFINITY, hi = -INFINITY;
        mean_var(t, &mean, &var);
        for (int64_t i = 0; i < xf_tensor_numel(t); i++) {
            lo = fmin(lo, at(t, i));
            hi = fmax(hi, at(t, i));
        }
        ck_assert_msg(lo >= -2.0 && hi < 3.0, "outside [-2, 3): %g %g", lo, hi);
        ck_assert_msg(lo < -1.999 && hi > 2.999, "extremes %g %g", lo, hi);
        ck_assert_msg(fabs(mean - 0.5) < 0.02, "mean %g", mean);
        ck_assert_msg(fabs(var - 25.0 / 12.0) < 0.05, "variance %g", var);
        xf_tensor_release(t);
    }
}
END_TEST

/* The upper bound is excluded in the output type too: a narrow interval
 * in float16, where most draws round to one of three values. */
START_TEST(uniform_excludes_high)
{
    node_case c = random_case(XF_OP_RANDOM_UNIFORM, DIMS(4000));
    c.a.rand_a = 1.0f;
    c.a.rand_b = 1.0f + 3.0f / 1024.0f; /* three float16 steps above 1 */
    c.a.to = XF_DT_FLOAT16;
    xf_tensor *t = run1(c);
    const uint16_t *h = t->data;
    int seen[4] = {0};
    for (int64_t i = 0; i < 4000; i++) {
        ck_assert_msg(h[i] >= 0x3c00 && h[i] < 0x3c03, "0x%04x outside [1, high)", h[i]);
        seen[h[i] - 0x3c00]++;
    }
    ck_assert(seen[0] > 0 && seen[1] > 0 && seen[2] > 0);
    xf_tensor_release(t);
}
END_TEST

START_TEST(bernoulli_frequency)
{
    float *p = malloc(sizeof *p * 100000);
    ck_assert_ptr_nonnull(p);
    for (int i = 0; i < 100000; i++)
        p[i] = 0.3f;
    node_case c = like_case(XF_OP_BERNOULLI, mk(XF_DT_FLOAT, DIMS(100000), p));
    c.a.to = XF_DT_INT32;
    xf_tensor *t = run1(c);
    double ones = 0;
    for (int i = 0; i < 100000; i++) {
        ck_assert(at(t, i) == 0 || at(t, i) == 1);
        ones += at(t, i);
    }
    ck_assert_msg(fabs(ones / 100000 - 0.3) < 0.01, "frequency %g", ones / 100000);
    xf_tensor_release(t);
    free(p);
}
END_TEST

/* Dropout(x, ratio, training_mode) of n elements x[i] = 1 + i % 7, its
 * mask output too. */
static node_case dropout_case(int64_t n, float ratio, bool training)
{
    float *x = malloc(sizeof *x * (size_t)n);
    ck_assert_ptr_nonnull(x);
    for (int64_t i = 0; i < n; i++)
        x[i] = (float)(1 + i % 7);
    node_case c = make_case(XF_OP_DROPOUT, 3, mk(XF_DT_FLOAT, 1, &n, x), F32(SCALAR, ratio), BOOLS(SCALAR, training));
    free(x);
    c.n_out = 2;
    c.opset = 13;
    c.feed = 1;
    return c;
}

/* Dropout when it trains: each element 0 or x / (1 - ratio), the mask true
 * exactly where kept, about 1 - ratio of them kept; the same draw in every
 * session (run_case compares static and dynamic mode), another with a
 * seed; with a ratio of 0 or training_mode false, x and an all-true mask;
 * a ratio of 1 is an error naming the node. */
START_TEST(dropout_trains)
{
    enum { N = 20000 };
    xf_tensor *o[2], *seeded[2];
    node_case c = dropout_case(N, 0.25f, true);
    run_case(&c, o);
    ck_assert(o[0]->dtype == XF_DT_FLOAT && o[1]->dtype == XF_DT_BOOL && xf_tensor_numel(o[1]) == N);
    int kept = 0;
    for (int i = 0; i < N; i++) {
        bool k = ((const uint8_t *)o[1]->data)[i];
        float want = k ? (float)(1 + i % 7) / 0.75f : 0.0f;
        ck_assert_msg(((const float *)o[0]->data)[i] == want, "element %d", i);
        kept += k;
    }
    ck_assert_msg(fabs(kept / (double)N - 0.75) < 0.01, "kept %d of %d", kept, N);
    c = dropout_case(N, 0.25f, true);
    c.a.rand_has_seed = true;
    c.a.rand_seed = 7;
    run_case(&c, seeded);
    ck_assert(!same_tensor(o[1], seeded[1]));
    for (int k = 0; k < 2; k++) {
        xf_tensor_release(o[k]);
        xf_tensor_release(seeded[k]);
    }
    for (int form = 0; form < 2; form++) {
        c = dropout_case(5, form ? 0.5f : 0.0f, form == 0);
        run_case(&c, o);
        EXPECT(o[0], XF_DT_FLOAT, DIMS(5), 1, 2, 3, 4, 5);
        EXPECT(o[1], XF_DT_BOOL, DIMS(5), 1, 1, 1, 1, 1);
    }
    expect_run_error(dropout_case(4, 1.0f, true), "ratio 1 is outside [0, 1)");
}
END_TEST

START_TEST(multinomial_frequencies)
{
    /* row 0: log(1..4) unnormalized, softmax 0.1 0.2 0.3 0.4; row 1: a
     * shift of 100 changes nothing, class 3 is all but impossible */
    float logits[2][4] = {{0, logf(2), logf(3), logf(4)}, {100, 100 + logf(3), 100 + logf(6), 100 - 1e4f}};
    const double want[2][4] = {{0.1, 0.2, 0.3, 0.4}, {0.1, 0.3, 0.6, 0}};
    node_case c = like_case(XF_OP_MULTINOMIAL, mk(XF_DT_FLOAT, DIMS(2, 4), logits));
    c.a.sample_size = 100000;
    xf_tensor *t = run1(c);
    for (int r = 0; r < 2; r++) {
        int64_t count[4] = {0};
        for (int64_t s = 0; s < 100000; s++) {
            double k = at(t, r * 100000 + s);
            ck_assert_msg(k >= 0 && k < 4, "index %g out of range", k);
            count[(int)k]++;
        }
        for (int k = 0; k < 4; k++)
            ck_assert_msg(fabs((double)count[k] / 100000 - want[r][k]) < 0.01, "row %d class %d: %g", r, k,
                          (double)count[k] / 100000);
    }
    ck_assert_int_eq(t->dtype, XF_DT_INT32);
    xf_tensor_release(t);
}
END_TEST

/* ------------------------------------------------------------ shape rules */

START_TEST(shape_errors)
{
    node_case c = random_case(XF_OP_RANDOM_NORMAL, DIMS(2));
    c.a.rand_has_shape = false;
    expect_infer_error(c, "has no shape attribute");
    expect_infer_error(random_case(XF_OP_RANDOM_UNIFORM, DIMS(2, -3)), "shape [2,-3] has a negative dim");
    expect_infer_error(random_case(XF_OP_RANDOM_NORMAL, DIMS(1ll << 31, 1ll << 31, 1ll << 31)), "too many elements");
    c = random_case(XF_OP_RANDOM_NORMAL, DIMS(2));
    c.a.to = XF_DT_INT32;
    expect_infer_error(c, "dtype INT32 is not float16, float, double or bfloat16");
    c = like_case(XF_OP_RANDOM_NORMAL_LIKE, I64(DIMS(1), 1));
    expect_infer_error(c, "dtype INT64 is not float16");
    expect_infer_error(like_case(XF_OP_BERNOULLI, I32(DIMS(1), 1)), "input must be a floating-point tensor, got INT32");
    expect_infer_error(like_case(XF_OP_MULTINOMIAL, F32(DIMS(3), 0, 0, 0)), "must be 2-D [batch_size, class_size]");
    c = like_case(XF_OP_MULTINOMIAL, F32(DIMS(1, 2), 0, 0));
    c.a.to = XF_DT_FLOAT;
    expect_infer_error(c, "dtype FLOAT is neither int32 nor int64");
    c = like_case(XF_OP_MULTINOMIAL, F32(DIMS(1, 2), 0, 0));
    c.a.sample_size = 0;
    expect_infer_error(c, "sample_size 0 is out of range");
    c = like_case(XF_OP_MULTINOMIAL, zeros(XF_DT_FLOAT, DIMS(16, 2)));
    c.a.sample_size = INT64_MAX / 64;
    expect_infer_error(c, "has too many elements");
    c = like_case(XF_OP_MULTINOMIAL, F32(DIMS(1, 2), 0, 0));
    c.a.sample_size = INT64_MAX;
    expect_infer_error(c, "is out of range");
    expect_infer_error(like_case(XF_OP_MULTINOMIAL, zeros(XF_DT_FLOAT, DIMS(2, 0))), "no classes to draw from");
    expect_run_error(like_case(XF_OP_MULTINOMIAL, F32(DIMS(2, 2), 0, 0, NAN, 0)), "row 1 of the input holds NaN");
    expect_run_error(like_case(XF_OP_MULTINOMIAL, F32(DIMS(1, 2), -INFINITY, -INFINITY)),
                     "row 0 of the input has no finite log-probability");
}
END_TEST

/* ------------------------------------------------------------ ONNX attributes */

/* One node of each op (form 1: a seed given as an int, which xflow does
 * not model, so the node stays opaque). */
static Onnx__GraphProto *random_graph(int form)
{
    static const int64_t x2[] = {2, 3}, shape[] = {4, 5};
    Onnx__GraphProto *g = mk_graph("g");
    PUSH(g->n_input, g->input, mk_vi("x", XF_DT_FLOAT, 2, x2, NULL));
    Onnx__NodeProto *n = mk_node("RandomNormal", "rn", NULL, (const char *[]){"y0", NULL});
    attr_ints(n, "shape", 2, shape);
    attr_float(n, "mean", 1.5f);
    attr_float(n, "scale", 0.5f);
    attr_int(n, "dtype", XF_DT_DOUBLE);
    if (form == 1)
        attr_int(n, "seed", 3);
    else
        attr_float(n, "seed", 3.0f);
    PUSH(g->n_node, g->node, n);
    PUSH(g->n_node, g->node, n = mk_node("RandomUniform", "ru", NULL, (const char *[]){"y1", NULL}));
    attr_ints(n, "shape", 2, shape);
    attr_float(n, "low", -1.0f);
    attr_float(n, "high", 4.0f);
    PUSH(g->n_node, g->node, n = mk_node("RandomNormalLike", "rnl", (const char *[]){"x", NULL},
                                         (const char *[]){"y2", NULL}));
    attr_int(n, "dtype", XF_DT_FLOAT16);
    PUSH(g->n_node, g->node, n = mk_node("RandomUniformLike", "rul", (const char *[]){"x", NULL},
                                         (const char *[]){"y3", NULL}));
    attr_float(n, "high", 2.0f);
    PUSH(g->n_node, g->node, n = mk_node("Bernoulli", "be", (const char *[]){"y1", NULL}, (const char *[]){"y4", NULL}));
    attr_int(n, "dtype", XF_DT_BOOL);
    attr_float(n, "seed", 9.0f);
    PUSH(g->n_node, g->node, n = mk_node("Multinomial", "mu", (const char *[]){"x", NULL}, (const char *[]){"y5", NULL}));
    attr_int(n, "sample_size", 7);
    attr_int(n, "dtype", XF_DT_INT64);
    static const char *const ys[] = {"y0", "y1", "y2", "y3", "y4", "y5"};
    for (int i = 0; i < 6; i++)
        PUSH(g->n_output, g->output, mk_vi(ys[i], XF_DT_UNDEFINED, -1, NULL, NULL));
    return g;
}

START_TEST(attributes_round_trip)
{
    int counts[XF_OP_COUNT + 1];
    xf_model *m = load_counting(random_graph(0), 15, counts);
    ck_assert_int_eq(counts[XF_OP_OPAQUE], 0);
    const xf_graph *g = m->graph;
    const xf_attrs *a = &g->nodes[find_node_by_output(g, "y0")].attrs;
    ck_assert(a->rand_a == 1.5f && a->rand_b == 0.5f && a->to == XF_DT_DOUBLE && a->rand_has_seed &&
              a->rand_seed == 3.0f && a->rand_has_shape && xf_shape_equal(&a->rand_shape, &(xf_shape){2, {4, 5}}));
    a = &g->nodes[find_node_by_output(g, "y1")].attrs;
    ck_assert(a->rand_a == -1.0f && a->rand_b == 4.0f && !a->rand_has_seed && a->to == XF_DT_UNDEFINED);
    ck_assert(g->nodes[find_node_by_output(g, "y3")].attrs.rand_b == 2.0f);
    ck_assert_int_eq(g->values[g->nodes[find_node_by_output(g, "y2")].outputs[0]].dtype, XF_DT_FLOAT16);
    ck_assert_int_eq(g->values[g->nodes[find_node_by_output(g, "y4")].outputs[0]].dtype, XF_DT_BOOL);
    const xf_node *mu = &g->nodes[find_node_by_output(g, "y5")];
    ck_assert(mu->attrs.sample_size == 7 && mu->attrs.to == XF_DT_INT64);
    ck_assert(xf_shape_equal(&g->values[mu->outputs[0]].shape, &(xf_shape){2, {2, 7}}));
    xf_model *back = roundtrip(m);
    /* what is written: the defaults left out, the shapes always */
    uint8_t *buf = NULL;
    Onnx__ModelProto *mp = saved_proto(back, &buf);
    int seen = 0;
    for (size_t i = 0; i < mp->graph->n_node; i++) {
        const Onnx__NodeProto *np = mp->graph->node[i];
        if (!strcmp(np->op_type, "RandomUniform"))
            seen += has_attr(np, "shape") && has_attr(np, "low") && !has_attr(np, "seed") && !has_attr(np, "dtype");
        if (!strcmp(np->op_type, "RandomUniformLike"))
            seen += has_attr(np, "high") && !has_attr(np, "low") && np->n_attribute == 1;
        if (!strcmp(np->op_type, "RandomNormal"))
            seen += np->n_attribute == 5;
    }
    ck_assert_int_eq(seen, 3);
    onnx__model_proto__free_unpacked(mp, NULL);
    free(buf);
    xf_model_free(back);
    xf_model_free(m);
    /* a form xflow does not model stays opaque, and is written back as it came */
    m = load_counting(random_graph(1), 15, counts);
    ck_assert_int_eq(counts[XF_OP_OPAQUE], 1);
    ck_assert_int_eq(counts[XF_OP_RANDOM_UNIFORM], 1);
    back = roundtrip(m);
    xf_model_free(back);
    xf_model_free(m);
    /* Bernoulli is opset 15's: before it the node is opaque */
    m = load_counting(random_graph(0), 14, counts);
    ck_assert_int_eq(counts[XF_OP_OPAQUE], 1);
    ck_assert_int_eq(counts[XF_OP_BERNOULLI], 0);
    xf_model_free(m);
}
END_TEST

/* Relu(Dropout(x, r, t)) with seed 5 (r = 0.5 an initializer), t a graph
 * input, or an initializer holding `training` when fixed. */
static Onnx__GraphProto *dropout_graph(bool fixed, bool training)
{
    static const int64_t d[] = {2, 3};
    static const float half = 0.5f;
    static uint8_t t[2] = {0, 1};
    Onnx__GraphProto *g = mk_graph("g");
    PUSH(g->n_input, g->input, mk_vi("x", XF_DT_FLOAT, 2, d, NULL));
    if (fixed)
        PUSH(g->n_initializer, g->initializer, mk_raw("t", XF_DT_BOOL, 0, NULL, &t[training], 1));
    else
        PUSH(g->n_input, g->input, mk_vi("t", XF_DT_BOOL, 0, NULL, NULL));
    PUSH(g->n_initializer, g->initializer, mk_raw("r", XF_DT_FLOAT, 0, NULL, &half, sizeof half));
    Onnx__NodeProto *n = mk_node("Dropout", "dr", (const char *[]){"x", "r", "t", NULL}, (const char *[]){"d", NULL});
    attr_int(n, "seed", 5);
    PUSH(g->n_node, g->node, n);
    PUSH(g->n_node, g->node, mk_node("Relu", "re", (const char *[]){"d", NULL}, (const char *[]){"y", NULL}));
    PUSH(g->n_output, g->output, mk_vi("y", XF_DT_UNDEFINED, -1, NULL, NULL));
    return g;
}

/* A Dropout that may train is an op xflow knows: it loads, its seed kept
 * and written back; canonicalization keeps it where training_mode is a
 * graph input or a constant true and removes it where a constant false;
 * the cost models price it as work, not as a view. */
START_TEST(dropout_graphs)
{
    for (int form = 0; form < 3; form++) {
        int counts[XF_OP_COUNT + 1];
        xf_model *m = load_counting(dropout_graph(form > 0, form == 1), 13, counts);
        ck_assert_int_eq(counts[XF_OP_OPAQUE], 0);
        ck_assert_int_eq(counts[XF_OP_DROPOUT], 1);
        const xf_node *n = &m->graph->nodes[find_node_op(m->graph, XF_OP_DROPOUT)];
        ck_assert(n->attrs.rand_has_seed && n->attrs.rand_seed == 5.0f);
        ck_assert(xf_dropout_trains(m->graph, n) == (form < 2));
        xf_cost_model *cm;
        xf_error e = {0};
        double cost;
        ck_assert_msg(xf_cost_model_create("analytic:cpu", NULL, &cm, &e) == XF_OK, "%s", e.msg);
        ck_assert_msg(xf_cost_graph(cm, m->graph, 13, &cost, &e) == XF_OK, "%s", e.msg);
        double relu_only;
        xf_graph *h = xf_graph_clone(m->graph);
        h->nodes[find_node_op(h, XF_OP_DROPOUT)].op = XF_OP_IDENTITY;
        ck_assert_msg(xf_cost_graph(cm, h, 13, &relu_only, &e) == XF_OK, "%s", e.msg);
        xf_graph_free(h);
        ck_assert_msg((cost > relu_only) == (form < 2), "form %d: cost %g, without it %g", form, cost, relu_only);
        xf_cost_model_free(cm);
        uint8_t *buf = NULL;
        xf_model *back = roundtrip(m);
        Onnx__ModelProto *mp = saved_proto(back, &buf);
        const Onnx__NodeProto *dr = mp->graph->node[0];
        ck_assert(!strcmp(dr->op_type, "Dropout") && has_attr(dr, "seed") && dr->attribute[0]->i == 5);
        onnx__model_proto__free_unpacked(mp, NULL);
        free(buf);
        xf_model_free(back);
        xf_canon_stats st = {0};
        ck_assert_msg(xf_canonicalize(m->graph, 13, xf_runtime_eval_node, &st, &e) == XF_OK, "%s", e.msg);
        ck_assert_int_eq(m->graph->n_nodes, 1 + (form < 2));
        xf_model_free(m);
    }
}
END_TEST

/* ------------------------------------------------------------ canonicalization, optimizer */

/* RandomNormal feeds Add with a constant, RandomNormalLike reads an
 * initializer: every input is constant, and neither is folded. */
START_TEST(canonicalize_does_not_fold)
{
    node_case c = random_case(XF_OP_RANDOM_NORMAL, DIMS(3));
    xf_graph *g = case_graph(&c);
    release_case(&c);
    node_case l = like_case(XF_OP_RANDOM_NORMAL_LIKE, F32(DIMS(3), 1, 2, 3));
    l.feed = 0; /* an initializer */
    xf_graph *h = case_graph(&l);
    release_case(&l);
    xf_graph *gs[] = {g, h};
    for (int i = 0; i < 2; i++) {
        xf_error e = {0};
        xf_canon_stats st = {0};
        ck_assert_msg(xf_canonicalize(gs[i], 15, xf_runtime_eval_node, &st, &e) == XF_OK, "%s", e.msg);
        ck_assert_int_eq(gs[i]->n_nodes, 1);
        ck_assert(gs[i]->nodes[0].op == (i ? XF_OP_RANDOM_NORMAL_LIKE : XF_OP_RANDOM_NORMAL));
        xf_graph_free(gs[i]);
    }
}
END_TEST

/* Two identical unseeded RandomNormalLike nodes on one input, their
 * difference the output: xflowc keeps both draws (the difference is not
 * zero) and passes its check.  Each draw also reaches a graph output
 * through an Identity, whose removal renames its producer's output: the
 * named node is keyed by its name, which stays; the unnamed one by its
 * output's name, so that Identity stays. */
START_TEST(optimizer_keeps_two_draws)
{
    static const int64_t x2[] = {1, 8, 4, 4};
    Onnx__GraphProto *g = mk_graph("g");
    PUSH(g->n_input, g->input, mk_vi("x", XF_DT_FLOAT, 4, x2, NULL));
    PUSH(g->n_node, g->node, mk_node("RandomNormalLike", "a", (const char *[]){"x", NULL}, (const char *[]){"ea", NULL}));
    PUSH(g->n_node, g->node, mk_node("RandomNormalLike", NULL, (const char *[]){"x", NULL}, (const char *[]){"eb", NULL}));
    PUSH(g->n_node, g->node, mk_node("Identity", "ia", (const char *[]){"ea", NULL}, (const char *[]){"ya", NULL}));
    PUSH(g->n_node, g->node, mk_node("Identity", "ib", (const char *[]){"eb", NULL}, (const char *[]){"yb", NULL}));
    PUSH(g->n_node, g->node, mk_node("Sub", "d", (const char *[]){"ya", "yb", NULL}, (const char *[]){"y", NULL}));
    static const char *const ys[] = {"y", "ya", "yb"};
    for (int i = 0; i < 3; i++)
        PUSH(g->n_output, g->output, mk_vi(ys[i], XF_DT_FLOAT, 4, x2, NULL));
    const char *dir = xf_test_tmpdir("random_two_draws");
    char in[512], out[512], cmd[2048];
    snprintf(in, sizeof in, "%s/two.onnx", dir);
    snprintf(out, sizeof out, "%s/two.opt.onnx", dir);
    write_model(mk_model(g, 15), in);
    snprintf(cmd, sizeof cmd, "%s %s -o %s --check", xf_test_tool("xflowc"), in, out);
    char *text = NULL;
    int rc = xf_test_run(cmd, &text);
    ck_assert_msg(rc == 0, "xflowc: %s", text);
    ck_assert_msg(strstr(text, "output 'y' 1x8x4x4: max abs error 0,") != NULL, "check: %s", text);
    free(text);
    xf_model *m = NULL;
    xf_error e = {0};
    ck_assert_msg(xf_model_load(out, NULL, &m, &e) == XF_OK, "%s", e.msg);
    int draws = 0;
    for (int i = 0; i < m->graph->n_nodes; i++) {
        const xf_node *n = &m->graph->nodes[i];
        if (n->op != XF_OP_RANDOM_NORMAL_LIKE)
            continue;
        const char *name = m->graph->values[n->outputs[0]].name;
        ck_assert_msg(n->name && n->name[0] ? !strcmp(n->name, "a") : !strcmp(name, "eb"), "%s", name);
        draws++;
    }
    ck_assert_int_eq(draws, 2);
    xf_session *s = NULL;
    ck_assert_msg(xf_session_create(m->graph, 15, "cpu_ref", NULL, &s, &e) == XF_OK, "%s", e.msg);
    xf_tensor *x[1] = {zeros(XF_DT_FLOAT, DIMS(1, 8, 4, 4))}, *y[3] = {0};
    ck_assert_msg(xf_session_run(s, x, y, &e) == XF_OK, "%s", e.msg);
    double mean, var;
    mean_var(y[0], &mean, &var);
    ck_assert_msg(var > 1.0, "the two draws are not independent: variance %g", var); /* N(0, 2) */
    xf_tensor_release(x[0]);
    release_all(y, 3);
    xf_session_free(s);
    xf_model_free(m);
}
END_TEST

/* ------------------------------------------------------------ backends */

enum { N_OP_GRAPHS = 6 };

static xf_graph *op_graph(int which)
{
    node_case c;
    switch (which) {
    case 0: c = with_seed(random_case(XF_OP_RANDOM_NORMAL, DIMS(3, 7)), 1); break;
    case 1: c = random_case(XF_OP_RANDOM_UNIFORM, DIMS(5, 2)); c.a.to = XF_DT_FLOAT16; break;
    case 2: c = like_case(XF_OP_RANDOM_NORMAL_LIKE, iota_f32(DIMS(2, 3, 4), 0)); c.a.to = XF_DT_BFLOAT16; break;
    case 3: c = like_case(XF_OP_RANDOM_UNIFORM_LIKE, zeros(XF_DT_DOUBLE, DIMS(6))); break;
    case 4: c = like_case(XF_OP_BERNOULLI, F32(DIMS(2, 3), 0.5f, 0.1f, 0.9f, 0.3f, 0.7f, 0.5f)); break;
    default: c = like_case(XF_OP_MULTINOMIAL, F32(DIMS(2, 3), 0, 1, 2, 2, 1, 0)); c.a.sample_size = 9; break;
    }
    xf_graph *g = case_graph(&c);
    release_case(&c);
    return g;
}

/* The cpu backend gives cpu_ref's values, and the cuda backend takes them
 * (to run through cpu_ref on host copies). */
START_TEST(backends_run_them)
{
    xf_bt_through_ref(op_graph, N_OP_GRAPHS, 15);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("random");
    TCase *tc = tcase_create("draws");
    tcase_add_test(tc, same_seed_same_values);
    tcase_add_test(tc, every_run_the_same);
    tcase_add_test(tc, shapes_and_dtypes);
    tcase_add_test(tc, normal_statistics);
    tcase_add_test(tc, uniform_statistics);
    tcase_add_test(tc, uniform_excludes_high);
    tcase_add_test(tc, bernoulli_frequency);
    tcase_add_test(tc, multinomial_frequencies);
    tcase_add_test(tc, dropout_trains);
    suite_add_tcase(s, tc);
    tc = tcase_create("errors");
    tcase_add_test(tc, shape_errors);
    suite_add_tcase(s, tc);
    tc = tcase_create("graphs");
    tcase_add_checked_fixture(tc, NULL, free_allocs);
    tcase_add_test(tc, attributes_round_trip);
    tcase_add_test(tc, dropout_graphs);
    tcase_add_test(tc, canonicalize_does_not_fold);
    tcase_add_test(tc, optimizer_keeps_two_draws);
    suite_add_tcase(s, tc);
    tc = tcase_create("backends");
    tcase_add_test(tc, backends_run_them);
    suite_add_tcase(s, tc);
    return xf_test_run_suite(s);
}
