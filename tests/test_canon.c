/* Check suite for structural hashing and the canonicalization passes
 * (BatchNormalization and per-channel Mul/Add folding, Identity/Dropout
 * and dead-node removal, Pads into their readers; constant folding is in
 * test_fold_constants.c). */
#include "core_builders.h"
#include "xf_runtime.h"

#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void free_graphs(xf_graph *a, xf_graph *b)
{
    xf_graph_free(a);
    xf_graph_free(b);
}

/* ------------------------------------------------------------ hashing */

/* x -> Conv(w) -> Relu -> y, plus an independent x -> Sigmoid -> z branch;
 * names and node order vary with `variant`. */
static xf_graph *hash_graph(int variant, int64_t stride, float bias0)
{
    const char *n = variant ? "other_" : "";
    char name[64];
    xf_graph *g = xf_graph_create(n);
    snprintf(name, sizeof name, "%sx", n);
    int x = input(g, name, XF_DT_FLOAT, SHAPE(1, 2, 6, 6));
    static float w[4 * 2 * 3 * 3];
    for (int i = 0; i < 72; i++)
        w[i] = (float)i;
    float bias[4] = {bias0, 1, 2, 3};
    snprintf(name, sizeof name, "%sw", n);
    int wi = constant(g, name, XF_DT_FLOAT, SHAPE(4, 2, 3, 3), w);
    int bi = constant(g, NULL, XF_DT_FLOAT, SHAPE(4), bias);
    int sig = -1;
    if (variant)
        sig = NODE(g, XF_OP_SIGMOID, x);
    int conv = NODE(g, XF_OP_CONV, x, wi, bi);
    attrs(g, conv)->n_spatial = 2;
    attrs(g, conv)->strides[0] = attrs(g, conv)->strides[1] = stride;
    int relu = NODE(g, XF_OP_RELU, out0(g, conv));
    if (!variant)
        sig = NODE(g, XF_OP_SIGMOID, x);
    xf_graph_add_output(g, out0(g, relu));
    xf_graph_add_output(g, out0(g, sig));
    infer_ok(g, 17);
    return g;
}

START_TEST(hash_invariance_and_sensitivity)
{
    xf_graph *a = hash_graph(0, 1, 0), *b = hash_graph(1, 1, 0);
    /* Renamed values and reordered independent nodes: equal. */
    ck_assert_uint_eq(xf_graph_hash(a), xf_graph_hash(b));
    xf_graph *k = xf_graph_clone(a);
    ck_assert_uint_eq(xf_graph_hash(a), xf_graph_hash(k));
    xf_graph_free(k);
    free_graphs(a, b);

    a = hash_graph(0, 1, 0);
    b = hash_graph(0, 2, 0); /* a different attribute */
    ck_assert_uint_ne(xf_graph_hash(a), xf_graph_hash(b));
    free_graphs(a, b);

    a = hash_graph(0, 1, 0);
    b = hash_graph(0, 1, 0.5f); /* a different small constant */
    ck_assert_uint_ne(xf_graph_hash(a), xf_graph_hash(b));
    free_graphs(a, b);

    a = hash_graph(0, 1, 0);
    uint64_t before = xf_graph_hash(a);
    int t = a->outputs[0]; /* the order of graph outputs matters */
    a->outputs[0] = a->outputs[1];
    a->outputs[1] = t;
    ck_assert_uint_ne(before, xf_graph_hash(a));
    a->outputs[1] = a->outputs[0];
    a->outputs[0] = t;
    ck_assert_uint_eq(before, xf_graph_hash(a));
    a->nodes[a->n_nodes - 1].op = XF_OP_TANH; /* a different op */
    ck_assert_uint_ne(before, xf_graph_hash(a));
    xf_graph_free(a);
}
END_TEST

/* Large constants hash by identity: the same shared tensor hashes equal,
 * an equal copy (which a search never makes of a weight) does not. */
START_TEST(hash_large_constants_by_identity)
{
    xf_shape s = SHAPE(64, 64);
    xf_tensor *w = xf_tensor_create(XF_DT_FLOAT, &s), *copy = xf_tensor_create(XF_DT_FLOAT, &s);
    xf_graph *g[3];
    for (int i = 0; i < 3; i++) {
        g[i] = xf_graph_create("g");
        int x = input(g[i], "x", XF_DT_FLOAT, SHAPE(1, 64));
        int wi = xf_graph_add_initializer(g[i], "w", i < 2 ? w : copy);
        xf_graph_add_output(g[i], out0(g[i], NODE(g[i], XF_OP_MATMUL, x, wi)));
        infer_ok(g[i], 17);
    }
    ck_assert_uint_eq(xf_graph_hash(g[0]), xf_graph_hash(g[1]));
    ck_assert_uint_ne(xf_graph_hash(g[0]), xf_graph_hash(g[2]));
    for (int i = 0; i < 3; i++)
        xf_graph_free(g[i]);
    xf_tensor_release(w);
    xf_tensor_release(copy);
}
END_TEST

/* ------------------------------------------------------------ canonicalization */

static void canon_ok(xf_status st, const xf_error *e) { ck_assert_msg(st == XF_OK, "pass failed: %s", e->msg); }

static uint64_t rng_state = 12345;
static float rand_float(void)
{
    rng_state = rng_state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (float)((rng_state >> 40) & 0xffff) / 32768.0f - 1.0f;
}

/* Valid 2-D convolution, stride 1, no padding (the oracle for BN folding). */
static void conv2d(const float *x, int c, int h, int w, const float *wt, const float *b, int m, int k,
                   float *y)
{
    int oh = h - k + 1, ow = w - k + 1;
    for (int o = 0; o < m; o++)
        for (int i = 0; i < oh; i++)
            for (int j = 0; j < ow; j++) {
                double acc = b ? b[o] : 0;
                for (int ci = 0; ci < c; ci++)
                    for (int di = 0; di < k; di++)
                        for (int dj = 0; dj < k; dj++)
                            acc += x[(ci * h + i + di) * w + j + dj] *
                                   wt[((o * c + ci) * k + di) * k + dj];
                y[(o * oh + i) * ow + j] = (float)acc;
            }
}

START_TEST(canon_fold_batchnorm)
{
    enum { C = 2, H = 5, W = 5, M = 3, K = 3, OH = H - K + 1, OW = W - K + 1 };
    float x[C * H * W], wt[M * C * K * K], b[M], scale[M], shift[M], mean[M], var[M];
    for (int i = 0; i < C * H * W; i++)
        x[i] = rand_float();
    for (int i = 0; i < M * C * K * K; i++)
        wt[i] = rand_float();
    for (int i = 0; i < M; i++) {
        b[i] = rand_float();
        scale[i] = rand_float();
        shift[i] = rand_float();
        mean[i] = rand_float();
        var[i] = rand_float() + 1.5f;
    }
    xf_graph *g = xf_graph_create("g");
    int xi = input(g, "x", XF_DT_FLOAT, SHAPE(1, C, H, W));
    int wi = constant(g, "w", XF_DT_FLOAT, SHAPE(M, C, K, K), wt);
    int bi = constant(g, "b", XF_DT_FLOAT, SHAPE(M), b);
    xf_tensor *shared_w = xf_tensor_retain(g->values[wi].init);
    int conv = xf_graph_add_node(g, XF_OP_CONV, "conv", 3, (int[]){xi, wi, bi}, 1,
                                 (int[]){xf_graph_add_value(g, NULL, XF_DT_UNDEFINED, NULL)});
    int params[4];
    const float *pdata[4] = {scale, shift, mean, var};
    for (int i = 0; i < 4; i++)
        params[i] = constant(g, NULL, XF_DT_FLOAT, SHAPE(M), pdata[i]);
    int y = xf_graph_add_value(g, "y", XF_DT_UNDEFINED, NULL);
    int bn = xf_graph_add_node(g, XF_OP_BATCH_NORM, "bn", 5,
                               (int[]){out0(g, conv), params[0], params[1], params[2], params[3]}, 1, &y);
    attrs(g, bn)->epsilon = 1e-3f;
    xf_graph_add_output(g, y);
    infer_ok(g, 15);

    xf_canon_stats st = {0};
    xf_error e = {0};
    canon_ok(xf_pass_fold_batchnorm(g, &st, &e), &e);
    validate_ok(g);
    ck_assert_int_eq(st.folded_batchnorms, 1);
    ck_assert_int_eq(st.removed_initializers, 6); /* w, b and the four BN parameters */
    ck_assert_int_eq(g->n_nodes, 1);
    ck_assert_int_eq(g->nodes[0].op, XF_OP_CONV);
    ck_assert_str_eq(g->values[g->outputs[0]].name, "y");
    ck_assert_int_eq(g->values[g->outputs[0]].producer, 0);
    for (int i = 0; i < M * C * K * K; i++) /* the shared weight is untouched */
        ck_assert_float_eq(((float *)shared_w->data)[i], wt[i]);
    xf_tensor_release(shared_w);

    float ref[M * OH * OW], got[M * OH * OW];
    conv2d(x, C, H, W, wt, b, M, K, ref);
    for (int o = 0; o < M; o++)
        for (int i = 0; i < OH * OW; i++) {
            float *r = &ref[o * OH * OW + i];
            *r = scale[o] * (*r - mean[o]) / sqrtf(var[o] + 1e-3f) + shift[o];
        }
    const xf_tensor *nw = g->values[g->nodes[0].inputs[1]].init;
    const xf_tensor *nb = g->values[g->nodes[0].inputs[2]].init;
    ck_assert_ptr_nonnull(nw);
    ck_assert_ptr_nonnull(nb);
    conv2d(x, C, H, W, nw->data, nb->data, M, K, got);
    for (int i = 0; i < M * OH * OW; i++)
        ck_assert_msg(fabsf(ref[i] - got[i]) <= 1e-4f * (1 + fabsf(ref[i])), "element %d: %g vs %g",
                      i, ref[i], got[i]);
    xf_graph_free(g);

    /* Not folded when the Conv's output has another user, nor in training
     * mode, which normalizes by the batch's statistics. */
    for (int form = 0; form < 2; form++) {
        g = xf_graph_create("g");
        xi = input(g, "x", XF_DT_FLOAT, SHAPE(1, C, H, W));
        wi = constant(g, "w", XF_DT_FLOAT, SHAPE(M, C, K, K), wt);
        conv = NODE(g, XF_OP_CONV, xi, wi);
        for (int i = 0; i < 4; i++)
            params[i] = constant(g, NULL, XF_DT_FLOAT, SHAPE(M), pdata[i]);
        bn = NODE(g, XF_OP_BATCH_NORM, out0(g, conv), params[0], params[1], params[2], params[3]);
        attrs(g, bn)->bn_training = form == 1;
        xf_graph_add_output(g, out0(g, bn));
        if (form == 0)
            xf_graph_add_output(g, out0(g, conv));
        canon_ok(xf_pass_fold_batchnorm(g, &st, &e), &e);
        ck_assert_int_eq(g->n_nodes, 2);
        xf_graph_free(g);
    }
}
END_TEST

/* Runs one pass on g, which must succeed and leave g valid. */
static xf_canon_stats run_pass(xf_graph *g, xf_status (*pass)(xf_graph *, xf_canon_stats *, xf_error *))
{
    xf_canon_stats st = {0};
    xf_error e = {0};
    canon_ok(pass(g, &st, &e), &e);
    validate_ok(g);
    return st;
}

/* x [1, 2, 7, 5] -> Conv (3 channels: [1, 3, 5, 3]) -> op by a constant
 * of shape cs (values 0.5, 1.5, ..., entry zero_at 0; first when
 * const_first) -> y, the Conv's output also a graph output when shared. */
static xf_graph *affine_graph(xf_op op, xf_shape cs, bool const_first, bool shared, float zero_at)
{
    xf_graph *g = xf_graph_create("affine");
    float w[3 * 2 * 3 * 3], c[16];
    for (int i = 0; i < 54; i++)
        w[i] = rand_float();
    for (int i = 0; i < 16; i++)
        c[i] = i == zero_at ? 0.0f : 0.5f + (float)i;
    int conv = NODE(g, XF_OP_CONV, input(g, "x", XF_DT_FLOAT, SHAPE(1, 2, 7, 5)),
                    constant(g, NULL, XF_DT_FLOAT, SHAPE(3, 2, 3, 3), w));
    int k = constant(g, NULL, XF_DT_FLOAT, cs, c);
    int n = const_first ? NODE(g, op, k, out0(g, conv)) : NODE(g, op, out0(g, conv), k);
    xf_graph_add_output(g, out0(g, n));
    if (shared)
        xf_graph_add_output(g, out0(g, conv));
    infer_ok(g, 13);
    return g;
}

/* A Mul, Div, Add or Sub of a Conv's output by one value or one per
 * channel becomes the Conv's weights and bias (computing what the graph
 * as given does); near misses stay: a constant over the width (as wide as
 * the channels are many), the Conv's output read twice, a Div by a zero,
 * the constant first in a Sub. */
START_TEST(canon_fold_affine)
{
    static const struct {
        xf_op op;
        xf_shape cs;
        bool const_first, shared;
        float zero_at;
        bool folds;
    } cases[] = {
        {XF_OP_MUL, {3, {3, 1, 1}}, false, false, -1, true}, {XF_OP_ADD, {4, {1, 3, 1, 1}}, true, false, -1, true},
        {XF_OP_DIV, {0, {0}}, false, false, -1, true},       {XF_OP_SUB, {3, {3, 1, 1}}, false, false, -1, true},
        {XF_OP_MUL, {1, {3}}, false, false, -1, false},      {XF_OP_ADD, {3, {3, 1, 1}}, false, true, -1, false},
        {XF_OP_DIV, {3, {3, 1, 1}}, false, false, 1, false}, {XF_OP_SUB, {3, {3, 1, 1}}, true, false, -1, false},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        rng_state = 12345;
        xf_graph *orig = affine_graph(cases[i].op, cases[i].cs, cases[i].const_first, cases[i].shared,
                                      cases[i].zero_at);
        rng_state = 12345; /* the same weights */
        xf_graph *g = affine_graph(cases[i].op, cases[i].cs, cases[i].const_first, cases[i].shared,
                                   cases[i].zero_at);
        xf_canon_stats st = run_pass(g, xf_pass_fold_batchnorm);
        ck_assert_msg(st.folded_affine == (int)cases[i].folds && g->n_nodes == 2 - (int)cases[i].folds,
                      "case %zu: %d folded", i, st.folded_affine);
        xf_error e = {0};
        xf_tensor *in = xf_tensor_random(XF_DT_FLOAT, &g->values[g->inputs[0]].shape, 5);
        xf_session_options given = {.as_given = true};
        xf_session *sa = NULL, *sb = NULL;
        ck_assert(xf_session_create(orig, 13, "cpu_ref", &given, &sa, &e) == XF_OK);
        ck_assert(xf_session_create(g, 13, "cpu_ref", &given, &sb, &e) == XF_OK);
        xf_tensor *oa[2] = {NULL}, *ob[2] = {NULL};
        ck_assert(xf_session_run(sa, &in, oa, &e) == XF_OK && xf_session_run(sb, &in, ob, &e) == XF_OK);
        double max_abs = 0, max_rel = 0;
        bool ok = false;
        ck_assert(xf_tensor_compare(ob[0], oa[0], 1e-5, 1e-5, &max_abs, &max_rel, &ok, &e) == XF_OK);
        ck_assert_msg(ok, "case %zu: the folded Conv differs by %g", i, max_abs);
        for (int k = 0; k < 2; k++) {
            xf_tensor_release(oa[k]);
            xf_tensor_release(ob[k]);
        }
        xf_tensor_release(in);
        xf_session_free(sa);
        xf_session_free(sb);
        free_graphs(orig, g);
    }
}
END_TEST

/* A float16 or bfloat16 constant holding v[0..n) (rounded). */
static int half_constant(xf_graph *g, xf_dtype dt, xf_shape s, const float *v)
{
    xf_tensor *t = xf_tensor_create(dt, &s);
    ck_assert_ptr_nonnull(t);
    for (int64_t i = 0; i < xf_tensor_numel(t); i++)
        xf_tensor_set_f64(t, i, v[i]);
    int id = xf_graph_add_initializer(g, NULL, t);
    xf_tensor_release(t);
    return id;
}

/* BatchNormalization after a float16 or bfloat16 Conv folds too: the new
 * weight and bias are computed in double from the rounded constants and
 * stored in the Conv's precision. */
START_TEST(canon_fold_batchnorm_half)
{
    enum { C = 2, M = 3, K = 3 };
    float wt[M * C * K * K], p[4][M];
    for (int i = 0; i < M * C * K * K; i++)
        wt[i] = rand_float();
    for (int i = 0; i < M; i++) {
        for (int k = 0; k < 3; k++)
            p[k][i] = rand_float();
        p[3][i] = rand_float() + 1.5f;
    }
    static const xf_dtype types[2] = {XF_DT_FLOAT16, XF_DT_BFLOAT16};
    for (int t = 0; t < 2; t++) {
        xf_dtype dt = types[t];
        xf_graph *g = xf_graph_create("g");
        int x = input(g, "x", dt, SHAPE(1, C, 5, 5));
        int w = half_constant(g, dt, SHAPE(M, C, K, K), wt);
        int conv = NODE(g, XF_OP_CONV, x, w);
        int params[4];
        for (int k = 0; k < 4; k++)
            params[k] = half_constant(g, dt, SHAPE(M), p[k]);
        int bn = NODE(g, XF_OP_BATCH_NORM, out0(g, conv), params[0], params[1], params[2], params[3]);
        xf_graph_add_output(g, out0(g, bn));
        infer_ok(g, 15);
        const xf_tensor *w0 = g->values[w].init, *pt[4];
        for (int k = 0; k < 4; k++)
            pt[k] = g->values[params[k]].init;
        xf_tensor_retain((xf_tensor *)w0);
        for (int k = 0; k < 4; k++)
            xf_tensor_retain((xf_tensor *)pt[k]);

        xf_canon_stats st = {0};
        xf_error e = {0};
        canon_ok(xf_pass_fold_batchnorm(g, &st, &e), &e);
        ck_assert_int_eq(st.folded_batchnorms, 1);
        ck_assert_int_eq(g->n_nodes, 1);
        const xf_tensor *nw = g->values[g->nodes[0].inputs[1]].init, *nb = g->values[g->nodes[0].inputs[2]].init;
        ck_assert_int_eq(nw->dtype, dt);
        ck_assert_int_eq(nb->dtype, dt);
        double tol = dt == XF_DT_FLOAT16 ? 1e-3 : 1e-2; /* one rounding of each */
        for (int m = 0; m < M; m++) {
            double s = xf_tensor_get_f64(pt[0], m) / sqrt(xf_tensor_get_f64(pt[3], m) + 1e-5);
            for (int j = 0; j < C * K * K; j++) {
                double want = xf_tensor_get_f64(w0, m * C * K * K + j) * s;
                ck_assert_double_eq_tol(xf_tensor_get_f64(nw, m * C * K * K + j), want, tol * (1 + fabs(want)));
            }
            double b = -xf_tensor_get_f64(pt[2], m) * s + xf_tensor_get_f64(pt[1], m);
            ck_assert_double_eq_tol(xf_tensor_get_f64(nb, m), b, tol * (1 + fabs(b)));
        }
        xf_tensor_release((xf_tensor *)w0);
        for (int k = 0; k < 4; k++)
            xf_tensor_release((xf_tensor *)pt[k]);
        xf_graph_free(g);
    }
}
END_TEST

/* A Cast or CastLike to the type its input has is an Identity (float16
 * converters leave hundreds behind); a Cast that changes the type stays. */
START_TEST(canon_remove_same_type_casts)
{
    xf_graph *g = xf_graph_create("g");
    int x = input(g, "x", XF_DT_FLOAT, SHAPE(2, 3));
    int c1 = NODE(g, XF_OP_CAST, x);
    g->nodes[c1].attrs.to = XF_DT_FLOAT;
    int relu = NODE(g, XF_OP_RELU, out0(g, c1));
    int half = NODE(g, XF_OP_CAST, out0(g, relu));
    g->nodes[half].attrs.to = XF_DT_FLOAT16;
    int like = NODE(g, XF_OP_CAST_LIKE, out0(g, relu), x);
    int out = xf_graph_add_value(g, "out", XF_DT_UNDEFINED, NULL);
    int c2 = xf_graph_add_node(g, XF_OP_CAST, NULL, 1, (int[]){out0(g, like)}, 1, &out);
    g->nodes[c2].attrs.to = XF_DT_FLOAT;
    xf_graph_add_output(g, out);
    xf_graph_add_output(g, out0(g, half));
    infer_ok(g, 19);

    xf_canon_stats st = run_pass(g, xf_pass_remove_identity);
    ck_assert_int_eq(st.removed_identity, 3);
    ck_assert_int_eq(g->n_nodes, 2); /* Relu, the Cast to float16 */
    ck_assert_str_eq(g->values[g->outputs[0]].name, "out");
    ck_assert_int_eq(g->nodes[g->values[g->outputs[0]].producer].op, XF_OP_RELU);
    ck_assert_int_eq(g->nodes[g->values[g->outputs[1]].producer].op, XF_OP_CAST);
    ck_assert_int_eq(g->values[g->outputs[1]].dtype, XF_DT_FLOAT16);
    xf_graph_free(g);
}
END_TEST

START_TEST(canon_remove_identity)
{
    xf_graph *g = xf_graph_create("g");
    int x = input(g, "x", XF_DT_FLOAT, SHAPE(2));
    int relu = NODE(g, XF_OP_RELU, x);
    int id1 = NODE(g, XF_OP_IDENTITY, out0(g, relu));
    int drop = node(g, XF_OP_DROPOUT, NULL, 1, (int[]){out0(g, id1)}, 2); /* mask unused */
    int out = xf_graph_add_value(g, "out", XF_DT_UNDEFINED, NULL);
    xf_graph_add_node(g, XF_OP_IDENTITY, NULL, 1, (int[]){out0(g, drop)}, 1, &out);
    xf_graph_add_output(g, out);
    int pass = xf_graph_add_value(g, "pass", XF_DT_UNDEFINED, NULL);
    xf_graph_add_node(g, XF_OP_IDENTITY, NULL, 1, &x, 1, &pass); /* input to output: kept */
    xf_graph_add_output(g, pass);
    int masked = node(g, XF_OP_DROPOUT, NULL, 1, &x, 2);
    int mask_use = NODE(g, XF_OP_NOT, g->nodes[masked].outputs[1]);
    xf_graph_add_output(g, out0(g, mask_use));
    infer_ok(g, 13);

    xf_canon_stats st = run_pass(g, xf_pass_remove_identity);
    ck_assert_int_eq(st.removed_identity, 3);
    ck_assert_int_eq(g->n_nodes, 4); /* Relu, the input pass-through, Dropout with its mask, Not */
    ck_assert_str_eq(g->values[g->outputs[0]].name, "out");
    ck_assert_int_eq(g->nodes[g->values[g->outputs[0]].producer].op, XF_OP_RELU);
    ck_assert_str_eq(g->values[g->outputs[1]].name, "pass");
    ck_assert_int_eq(g->nodes[g->values[g->outputs[1]].producer].op, XF_OP_IDENTITY);
    xf_graph_free(g);
}
END_TEST

/* A Relu/Sigmoid/Tanh that alone reads a Conv's output is fused into it;
 * one whose Conv output is read elsewhere too, or is a graph output, stays. */
START_TEST(canon_fuse_activations)
{
    xf_graph *g = xf_graph_create("g");
    int x = input(g, "x", XF_DT_FLOAT, SHAPE(1, 2, 4, 4));
    float w[2 * 2 * 1 * 1] = {1, 2, 3, 4};
    int k = constant(g, "k", XF_DT_FLOAT, SHAPE(2, 2, 1, 1), w);
    int c1 = NODE(g, XF_OP_CONV, x, k);
    int sig = NODE(g, XF_OP_SIGMOID, out0(g, c1));  /* fused */
    int c2 = NODE(g, XF_OP_CONV, out0(g, sig), k);
    int relu = NODE(g, XF_OP_RELU, out0(g, c2));    /* c2's output also read by the Add: kept */
    int add = NODE(g, XF_OP_ADD, out0(g, relu), out0(g, c2));
    int c3 = NODE(g, XF_OP_CONV, out0(g, add), k);
    int tanh_n = NODE(g, XF_OP_TANH, out0(g, c3));  /* c3's output is a graph output: kept */
    xf_graph_add_output(g, out0(g, tanh_n));
    xf_graph_add_output(g, out0(g, c3));
    infer_ok(g, 13);

    xf_canon_stats st = run_pass(g, xf_pass_fuse_activations);
    ck_assert_int_eq(st.fused_activations, 1);
    int counts[XF_OP_COUNT + 1];
    xf_graph_count_ops(g, counts);
    ck_assert_int_eq(counts[XF_OP_SIGMOID], 0);
    ck_assert_int_eq(counts[XF_OP_RELU], 1);
    ck_assert_int_eq(counts[XF_OP_TANH], 1);
    ck_assert_int_eq(g->nodes[0].op, XF_OP_CONV);
    ck_assert_int_eq(g->nodes[0].attrs.activation, XF_ACT_SIGMOID);
    ck_assert_int_eq(g->nodes[1].attrs.activation, XF_ACT_NONE);
    xf_graph_free(g);

    /* float16 and bfloat16 convolutions too; not double ones (no runtime
     * convolves in double) */
    static const xf_dtype types[3] = {XF_DT_FLOAT16, XF_DT_BFLOAT16, XF_DT_DOUBLE};
    for (int t = 0; t < 3; t++) {
        g = xf_graph_create("g");
        x = input(g, "x", types[t], SHAPE(1, 2, 4, 4));
        k = input(g, "k", types[t], SHAPE(2, 2, 1, 1));
        relu = NODE(g, XF_OP_RELU, out0(g, NODE(g, XF_OP_CONV, x, k)));
        xf_graph_add_output(g, out0(g, relu));
        infer_ok(g, 13);
        st = run_pass(g, xf_pass_fuse_activations);
        ck_assert_int_eq(st.fused_activations, types[t] != XF_DT_DOUBLE);
        xf_graph_free(g);
    }
}
END_TEST

/* ONNX Runtime's FusedConv becomes a Conv where its activation is one a
 * Conv fuses and it has no residual input Z; others stay. */
START_TEST(canon_lower_fused_convs)
{
    xf_graph *g = xf_graph_create("g");
    int x = input(g, "x", XF_DT_FLOAT, SHAPE(1, 2, 4, 4));
    float w[2 * 2 * 1 * 1] = {1, 2, 3, 4}, bias[2] = {0.5f, -1};
    int k = constant(g, "k", XF_DT_FLOAT, SHAPE(2, 2, 1, 1), w);
    int b = constant(g, "b", XF_DT_FLOAT, SHAPE(2), bias);
    int relu = NODE(g, XF_OP_MS_FUSED_CONV, x, k, b);
    int leaky = NODE(g, XF_OP_MS_FUSED_CONV, out0(g, relu), k);
    int with_z = NODE(g, XF_OP_MS_FUSED_CONV, out0(g, leaky), k, b, x);
    int plain = NODE(g, XF_OP_MS_FUSED_CONV, out0(g, with_z), k);
    g->nodes[relu].attrs.ms_act = XF_MS_ACT_RELU;
    g->nodes[leaky].attrs.ms_act = XF_MS_ACT_LEAKY_RELU;
    g->nodes[leaky].attrs.ms_act_params[0] = 0.1f;
    g->nodes[with_z].attrs.ms_act = XF_MS_ACT_TANH;
    xf_graph_add_output(g, out0(g, plain));
    infer_ok(g, 13);

    xf_canon_stats st = {0};
    xf_error err;
    ck_assert_int_eq(xf_pass_lower_fused_convs(g, &st, &err), XF_OK);
    ck_assert_int_eq(st.lowered_fused_convs, 2);
    ck_assert_int_eq(g->nodes[relu].op, XF_OP_CONV);
    ck_assert_int_eq(g->nodes[relu].attrs.activation, XF_ACT_RELU);
    ck_assert_int_eq(g->nodes[relu].attrs.ms_act, XF_MS_ACT_NONE);
    ck_assert_int_eq(g->nodes[relu].n_inputs, 3);
    ck_assert_int_eq(g->nodes[plain].op, XF_OP_CONV);
    ck_assert_int_eq(g->nodes[plain].attrs.activation, XF_ACT_NONE);
    ck_assert_int_eq(g->nodes[leaky].op, XF_OP_MS_FUSED_CONV);
    ck_assert_int_eq(g->nodes[with_z].op, XF_OP_MS_FUSED_CONV);
    infer_ok(g, 13);
    xf_graph_free(g);
}
END_TEST

START_TEST(canon_remove_dead)
{
    xf_graph *g = xf_graph_create("g");
    int x = input(g, "x", XF_DT_FLOAT, SHAPE(2));
    input(g, "unused_input", XF_DT_FLOAT, SHAPE(2));
    float w[2] = {1, 2};
    int used = constant(g, "used", XF_DT_FLOAT, SHAPE(2), w);
    int dead_w = constant(g, "dead_w", XF_DT_FLOAT, SHAPE(2), w);
    constant(g, "never_used", XF_DT_FLOAT, SHAPE(2), w);
    int add = NODE(g, XF_OP_ADD, x, used);
    int dead = NODE(g, XF_OP_MUL, x, dead_w);
    NODE(g, XF_OP_EXP, out0(g, dead));
    int custom = xf_graph_add_node(g, XF_OP_OPAQUE, "custom", 1, &x, 1,
                                   (int[]){xf_graph_add_value(g, "o", XF_DT_FLOAT, NULL)});
    g->nodes[custom].opaque = xf_opaque_create("MyOp", "", NULL, 0);
    xf_graph_add_output(g, out0(g, add));

    xf_canon_stats st = {0};
    xf_error e = {0};
    canon_ok(xf_pass_remove_dead(g, &st, &e), &e);
    validate_ok(g);
    ck_assert_int_eq(st.removed_dead, 3);
    ck_assert_int_eq(st.removed_initializers, 2);
    ck_assert_int_eq(g->n_nodes, 1);
    ck_assert_int_eq(g->n_inputs, 2);
    ck_assert_int_ge(xf_graph_find_value(g, "unused_input"), 0);
    ck_assert_int_ge(xf_graph_find_value(g, "used"), 0);
    ck_assert_int_lt(xf_graph_find_value(g, "never_used"), 0);
    xf_graph_free(g);
}
END_TEST

/* ------------------------------------------------------------ Pad into its reader */

typedef struct pad_case {
    const char *what;
    xf_op reader;
    bool attr_form; /* opset 2's pads attribute, else inputs */
    int64_t pads[8];
    float value;
    xf_pad_mode mode;
    int64_t own_pad;
    int count_include_pad, ceil_mode;
    bool folds;
    bool bare; /* a Conv with no attributes (kernel from its weight) */
} pad_case;

/* x [1, 3, 6, 6] -> Pad -> reader (3x3 window, stride 1); the Pad's
 * output also a graph output when export_pad (which keeps it). */
static xf_graph *pad_graph(const pad_case *c, bool export_pad)
{
    xf_graph *g = xf_graph_create("pad");
    int x = input(g, "x", XF_DT_FLOAT, SHAPE(1, 3, 6, 6)), p;
    if (c->attr_form) {
        p = NODE(g, XF_OP_PAD, x);
        attrs(g, p)->has_pads = true;
        attrs(g, p)->n_pads = 8;
        memcpy(attrs(g, p)->pad_pads, c->pads, sizeof c->pads);
        attrs(g, p)->pad_value = c->value;
    } else {
        p = NODE(g, XF_OP_PAD, x, constant(g, NULL, XF_DT_INT64, SHAPE(8), c->pads),
                 constant(g, NULL, XF_DT_FLOAT, SCALAR, &c->value));
    }
    attrs(g, p)->pad_mode = c->mode;
    float w[4 * 3 * 3 * 3];
    rng_state = 99; /* the same weights in every graph */
    for (int i = 0; i < 4 * 3 * 3 * 3; i++)
        w[i] = rand_float();
    int r = c->reader == XF_OP_CONV
                ? NODE(g, XF_OP_CONV, out0(g, p), constant(g, NULL, XF_DT_FLOAT, SHAPE(4, 3, 3, 3), w))
                : NODE(g, c->reader, out0(g, p));
    xf_attrs *a = attrs(g, r);
    a->n_spatial = c->bare ? 0 : 2;
    for (int k = 0; k < 2 && !c->bare; k++) {
        a->kernel[k] = 3;
        a->strides[k] = a->dilations[k] = 1;
        a->pads[k] = a->pads[2 + k] = c->own_pad;
    }
    a->count_include_pad = c->count_include_pad;
    a->ceil_mode = c->ceil_mode;
    xf_graph_add_output(g, out0(g, r));
    if (export_pad)
        xf_graph_add_output(g, out0(g, p));
    return g;
}

/* The Pad of zeros that a Conv or AveragePool alone reads becomes its
 * padding (the pool's counting the zeros), and sessions compute what the
 * Pad and its reader did (on cpu_ref, against the same graph with the
 * Pad's output exported, which keeps the Pad); every near miss stays. */
START_TEST(canon_fold_pads)
{
    const pad_case cases[] = {
        {"Conv", XF_OP_CONV, false, {0, 0, 1, 2, 0, 0, 2, 1}, 0, XF_PAD_CONSTANT, 1, 0, 0, true},
        {"Conv without attributes", XF_OP_CONV, false, {0, 0, 1, 2, 0, 0, 2, 1}, 0, XF_PAD_CONSTANT, 0, 0, 0, true,
         true},
        {"AveragePool", XF_OP_AVERAGE_POOL, true, {0, 0, 1, 1, 0, 0, 1, 1}, 0, XF_PAD_CONSTANT, 0, 0, 0, true},
        {"AveragePool counting its own pads", XF_OP_AVERAGE_POOL, false, {0, 0, 1, 0, 0, 0, 0, 1}, 0,
         XF_PAD_CONSTANT, 1, 1, 0, true},
        {"value 1", XF_OP_CONV, false, {0, 0, 1, 1, 0, 0, 1, 1}, 1, XF_PAD_CONSTANT, 0, 0, 0, false},
        {"channels padded", XF_OP_AVERAGE_POOL, true, {0, 1, 1, 1, 0, 0, 1, 1}, 0, XF_PAD_CONSTANT, 0, 0, 0, false},
        {"a crop", XF_OP_CONV, false, {0, 0, -1, 1, 0, 0, 1, 1}, 0, XF_PAD_CONSTANT, 0, 0, 0, false},
        {"reflect", XF_OP_CONV, false, {0, 0, 1, 1, 0, 0, 1, 1}, 0, XF_PAD_REFLECT, 0, 0, 0, false},
        {"MaxPool", XF_OP_MAX_POOL, false, {0, 0, 1, 1, 0, 0, 1, 1}, 0, XF_PAD_CONSTANT, 0, 0, 0, false},
        {"ceil_mode at stride 1 (no window added)", XF_OP_AVERAGE_POOL, false, {0, 0, 1, 1, 0, 0, 1, 1}, 0,
         XF_PAD_CONSTANT, 0, 0, 1, true},
        {"own pads not counted", XF_OP_AVERAGE_POOL, false, {0, 0, 1, 1, 0, 0, 1, 1}, 1, XF_PAD_CONSTANT, 0, 0, 0,
         false},
        {"pads as wide as the window", XF_OP_AVERAGE_POOL, false, {0, 0, 3, 0, 0, 0, 0, 0}, 0, XF_PAD_CONSTANT, 0,
         0, 0, false},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        const pad_case *c = &cases[i];
        xf_graph *g = pad_graph(c, false);
        xf_canon_stats st = {0};
        xf_error e = {0};
        canon_ok(xf_pass_fold_pads(g, 13, &st, &e), &e);
        validate_ok(g);
        ck_assert_msg(st.folded_pads == (c->folds ? 1 : 0), "%s: %d folded", c->what, st.folded_pads);
        ck_assert_int_eq(g->n_nodes, c->folds ? 1 : 2);
        const xf_attrs *a = &g->nodes[g->n_nodes - 1].attrs;
        for (int k = 0; c->folds && k < 2; k++) {
            ck_assert_int_eq(a->pads[k], c->own_pad + c->pads[2 + k]);
            ck_assert_int_eq(a->pads[2 + k], c->own_pad + c->pads[6 + k]);
        }
        ck_assert_int_eq(a->count_include_pad,
                         c->folds && c->reader == XF_OP_AVERAGE_POOL ? 1 : c->count_include_pad);
        xf_graph_free(g);
        /* the session's own fold against the Pad run */
        xf_graph *folded = pad_graph(c, false), *kept = pad_graph(c, true);
        xf_shape xs = SHAPE(1, 3, 6, 6);
        xf_tensor *in = xf_tensor_random(XF_DT_FLOAT, &xs, 3), *out1[1] = {NULL}, *out2[2] = {NULL};
        xf_session *s1 = NULL, *s2 = NULL;
        ck_assert_msg(xf_session_create(folded, 13, "cpu_ref", NULL, &s1, &e) == XF_OK, "%s: %s", c->what, e.msg);
        ck_assert_msg(xf_session_create(kept, 13, "cpu_ref", NULL, &s2, &e) == XF_OK, "%s: %s", c->what, e.msg);
        ck_assert_int_eq(xf_session_graph(s1)->n_nodes, c->folds ? 1 : 2);
        ck_assert_msg(xf_session_run(s1, &in, out1, &e) == XF_OK && xf_session_run(s2, &in, out2, &e) == XF_OK, "%s",
                      e.msg);
        double max_abs = 0, max_rel = 0;
        bool ok = false;
        ck_assert(xf_tensor_compare(out1[0], out2[0], 1e-6, 1e-6, &max_abs, &max_rel, &ok, &e) == XF_OK);
        ck_assert_msg(ok, "%s: the folded graph differs by %g", c->what, max_abs);
        xf_tensor_release(in);
        xf_tensor_release(out1[0]);
        for (int k = 0; k < 2; k++)
            xf_tensor_release(out2[k]);
        xf_session_free(s1);
        xf_session_free(s2);
        free_graphs(folded, kept);
    }
}
END_TEST

/* Equal floating-point weights are read from one copy; small, integer and
 * output constants, and different data, are left alone. */
START_TEST(canon_merge_constants)
{
    xf_graph *g = xf_graph_create("g");
    int x = input(g, "x", XF_DT_FLOAT, SHAPE(1, 64));
    static float w[64 * 64], w2[64 * 64];
    static int64_t idx[64];
    for (int i = 0; i < 64 * 64; i++)
        w[i] = w2[i] = (float)(i % 17) - 8;
    w2[64 * 64 - 1] = 100; /* differs in the last element only */
    for (int i = 0; i < 64; i++)
        idx[i] = i % 8;
    int a = constant(g, "a", XF_DT_FLOAT, SHAPE(64, 64), w);
    int b = constant(g, "b", XF_DT_FLOAT, SHAPE(64, 64), w);
    int c = constant(g, "c", XF_DT_FLOAT, SHAPE(64, 64), w2);
    int d = constant(g, "d", XF_DT_FLOAT, SHAPE(64, 64), w);
    int small1 = constant(g, "s1", XF_DT_FLOAT, SHAPE(1), w), small2 = constant(g, "s2", XF_DT_FLOAT, SHAPE(1), w);
    int i1 = constant(g, "i1", XF_DT_INT64, SHAPE(64), idx), i2 = constant(g, "i2", XF_DT_INT64, SHAPE(64), idx);
    int y = x;
    for (int k = 0; k < 4; k++)
        y = out0(g, NODE(g, XF_OP_MATMUL, y, (int[]){a, b, c, d}[k]));
    y = out0(g, NODE(g, XF_OP_ADD, out0(g, NODE(g, XF_OP_ADD, y, small1)), small2));
    int gi = NODE(g, XF_OP_GATHER, y, i1), gj = NODE(g, XF_OP_GATHER, y, i2);
    attrs(g, gi)->axis = attrs(g, gj)->axis = 1;
    xf_graph_add_output(g, out0(g, gi));
    xf_graph_add_output(g, out0(g, gj));
    xf_graph_add_output(g, d); /* an output keeps its own value */
    infer_ok(g, 17);
    xf_canon_stats st = {0};
    xf_error e = {0};
    canon_ok(xf_pass_merge_constants(g, &st, &e), &e);
    ck_assert_int_eq(st.merged_constants, 1);
    ck_assert_int_eq(g->nodes[1].inputs[1], a); /* b's reader now reads a */
    ck_assert_int_eq(g->nodes[2].inputs[1], c);
    ck_assert_int_eq(g->nodes[3].inputs[1], d);
    ck_assert_int_eq(g->nodes[gj].inputs[1], i2);
    canon_ok(xf_pass_remove_dead(g, &st, &e), &e);
    validate_ok(g);
    ck_assert_int_eq(st.removed_initializers, 1);
    ck_assert_int_lt(xf_graph_find_value(g, "b"), 0);
    ck_assert_int_ge(xf_graph_find_value(g, "s2"), 0);
    xf_graph_free(g);
}
END_TEST

START_TEST(canon_all_to_fixed_point)
{
    /* Conv -> Identity -> BN -> Reshape(x, Shape-derived) -> Dropout -> y:
     * every pass has work, and folding BN needs the Identity gone first. */
    enum { C = 2, M = 2 };
    float wt[M * C] = {1, 2, 3, 4}, p[M] = {0.5f, 2};
    xf_graph *g = xf_graph_create("g");
    int x = input(g, "x", XF_DT_FLOAT, SHAPE(1, C, 3, 3));
    int conv = NODE(g, XF_OP_CONV, x, constant(g, "w", XF_DT_FLOAT, SHAPE(M, C, 1, 1), wt));
    int id = NODE(g, XF_OP_IDENTITY, out0(g, conv));
    int pr = constant(g, "p", XF_DT_FLOAT, SHAPE(M), p);
    int bn = NODE(g, XF_OP_BATCH_NORM, out0(g, id), pr, pr, pr, pr);
    int shape = NODE(g, XF_OP_SHAPE, out0(g, bn));
    int first = NODE(g, XF_OP_SLICE, out0(g, shape), CONST_I64(g, 0), CONST_I64(g, 1));
    int target = NODE(g, XF_OP_CONCAT, out0(g, first), CONST_I64(g, -1));
    int flat = NODE(g, XF_OP_RESHAPE, out0(g, bn), out0(g, target));
    int drop = NODE(g, XF_OP_DROPOUT, out0(g, flat));
    int y = xf_graph_add_value(g, "y", XF_DT_UNDEFINED, NULL);
    xf_graph_add_node(g, XF_OP_IDENTITY, NULL, 1, (int[]){out0(g, drop)}, 1, &y);
    xf_graph_add_output(g, y);
    infer_ok(g, 13);

    xf_canon_stats st = {0};
    xf_error e = {0};
    uint64_t before = xf_graph_hash(g);
    canon_ok(xf_canonicalize(g, 13, xf_runtime_eval_node, &st, &e), &e);
    validate_ok(g);
    ck_assert_uint_ne(before, xf_graph_hash(g));
    ck_assert_int_eq(st.removed_identity, 3);
    ck_assert_int_eq(st.folded_batchnorms, 1);
    ck_assert_int_eq(st.folded_constants, 3);
    ck_assert_int_eq(g->n_nodes, 2);
    ck_assert_int_eq(g->nodes[0].op, XF_OP_CONV);
    ck_assert_int_eq(g->nodes[1].op, XF_OP_RESHAPE);
    ck_assert_str_eq(g->values[g->outputs[0]].name, "y");
    expect_shape(g, g->outputs[0], SHAPE(1, 18));
    /* A second run finds nothing left to do. */
    xf_canon_stats again = {0};
    canon_ok(xf_canonicalize(g, 13, xf_runtime_eval_node, &again, &e), &e);
    ck_assert_int_eq(again.folded_constants + again.folded_batchnorms + again.removed_identity +
                         again.removed_dead + again.removed_initializers,
                     0);
    xf_graph_free(g);
}
END_TEST

/* ------------------------------------------------------------ sizes */

/* x[n,6] -> y = Reshape(x, [n, 2, 3]) with n from Shape(x) (PyTorch's
 * x.view(x.size(0), 2, 3)), and z = x + a column of row numbers
 * (Range(0, n) -> Cast -> Unsqueeze), whose folded value is n numbers. */
static xf_graph *sizes_graph(int64_t n)
{
    xf_graph *g = xf_graph_create("g");
    int x = input(g, "x", XF_DT_FLOAT, SHAPE(n, 6));
    int shape = NODE(g, XF_OP_SHAPE, x);
    int batch = NODE(g, XF_OP_GATHER, out0(g, shape), scalar_i64(g, 0));
    int unsq = NODE(g, XF_OP_UNSQUEEZE, out0(g, batch), CONST_I64(g, 0));
    int cat = NODE(g, XF_OP_CONCAT, out0(g, unsq), CONST_I64(g, 2, 3));
    int y = NODE(g, XF_OP_RESHAPE, x, out0(g, cat));
    int range = NODE(g, XF_OP_RANGE, scalar_i64(g, 0), out0(g, batch), scalar_i64(g, 1));
    int cast = NODE(g, XF_OP_CAST, out0(g, range));
    attrs(g, cast)->to = XF_DT_FLOAT;
    int col = NODE(g, XF_OP_UNSQUEEZE, out0(g, cast), CONST_I64(g, 1));
    int z = NODE(g, XF_OP_ADD, x, out0(g, col));
    xf_graph_add_output(g, out0(g, y));
    xf_graph_add_output(g, out0(g, z));
    infer_ok(g, 13);
    return g;
}

static void canonicalize_ok(xf_graph *g)
{
    xf_error e = {0};
    canon_ok(xf_canonicalize(g, 13, xf_runtime_eval_node, NULL, &e), &e);
}

/* Canonicalized at n = 1, the graph holds [1, 2, 3] and the column [0];
 * compared with n = 2 and 3, the Reshape's shape is written without n and
 * the column is computed again from the graph as loaded, so that the graph
 * canonicalized at n = 4 has the shapes and the column of n = 4. */
START_TEST(sizes_generalize_and_recompute)
{
    xf_graph *g = sizes_graph(1), *src = xf_graph_clone(g);
    xf_graph *at[2] = {sizes_graph(2), sizes_graph(3)};
    canonicalize_ok(g);
    canonicalize_ok(at[0]);
    canonicalize_ok(at[1]);
    ck_assert_int_eq(g->n_nodes, 2); /* Reshape and Add, over constants */

    xf_names rest = {0};
    xf_error e = {0};
    int written = -1, done = -1;
    canon_ok(xf_sizes_generalize(g, (const xf_graph *const *)at, 2, &rest, &written, &e), &e);
    ck_assert_int_eq(written, 1);
    ck_assert_int_eq(rest.n, 1);
    const xf_node *r = &g->nodes[0];
    ck_assert_int_eq(r->op, XF_OP_RESHAPE);
    const xf_tensor *t = g->values[r->inputs[1]].init;
    ck_assert_int_eq(xf_tensor_numel(t), 3);
    ck_assert_int_eq(xf_tensor_get_i64(t, 0), 0); /* copies the input's dim */
    ck_assert_int_eq(xf_tensor_get_i64(t, 1), 2);
    ck_assert_int_eq(xf_tensor_get_i64(t, 2), 3);

    canon_ok(xf_sizes_recompute(g, src, &rest, &done, &e), &e);
    ck_assert_int_eq(done, 1);
    validate_ok(g);
    ck_assert_int_gt(g->n_nodes, 2); /* Shape -> Gather -> Range -> Cast -> Unsqueeze again */

    /* at n = 4 */
    int x = xf_graph_find_value(g, "x");
    g->values[x].shape.dims[0] = 4;
    for (int v = 0; v < g->n_values; v++)
        if (g->values[v].producer >= 0)
            g->values[v].shape.ndim = -1;
    infer_ok(g, 13);
    canonicalize_ok(g);
    expect_shape(g, g->outputs[0], SHAPE(4, 2, 3));
    expect_shape(g, g->outputs[1], SHAPE(4, 6));
    const xf_node *add = &g->nodes[g->values[g->outputs[1]].producer];
    const xf_tensor *column = g->values[add->inputs[1]].init;
    ck_assert_ptr_nonnull(column);
    ck_assert_int_eq(xf_tensor_numel(column), 4);
    for (int i = 0; i < 4; i++)
        ck_assert_double_eq(xf_tensor_get_f64(column, i), i);

    xf_names_free(&rest);
    free_graphs(at[0], at[1]);
    free_graphs(g, src);
}
END_TEST

/* A Reshape whose shape has two entries that vary and copy no input dim
 * (x[n,m] -> [m,n]) cannot be written without the sizes: its shape is
 * named for recomputing. */
START_TEST(sizes_two_unknown_entries)
{
    xf_graph *gs[3];
    for (int i = 0; i < 3; i++) {
        xf_graph *g = gs[i] = xf_graph_create("g");
        int x = input(g, "x", XF_DT_FLOAT, SHAPE(i + 1, i ? 5 + i : 1));
        int shape = NODE(g, XF_OP_SHAPE, x);
        int n = NODE(g, XF_OP_UNSQUEEZE, out0(g, NODE(g, XF_OP_GATHER, out0(g, shape), scalar_i64(g, 0))),
                     CONST_I64(g, 0));
        int m = NODE(g, XF_OP_UNSQUEEZE, out0(g, NODE(g, XF_OP_GATHER, out0(g, shape), scalar_i64(g, 1))),
                     CONST_I64(g, 0));
        int y = NODE(g, XF_OP_RESHAPE, x, out0(g, NODE(g, XF_OP_CONCAT, out0(g, m), out0(g, n))));
        xf_graph_add_output(g, out0(g, y));
        infer_ok(g, 13);
        canonicalize_ok(g);
    }
    xf_names rest = {0};
    xf_error e = {0};
    int written = -1;
    canon_ok(xf_sizes_generalize(gs[0], (const xf_graph *const *)gs + 1, 2, &rest, &written, &e), &e);
    ck_assert_int_eq(written, 0);
    ck_assert_int_eq(rest.n, 1);
    xf_names_free(&rest);
    for (int i = 0; i < 3; i++)
        xf_graph_free(gs[i]);
}
END_TEST

/* ------------------------------------------------------------ suite */

static Suite *canon_suite(void)
{
    Suite *s = suite_create("canon");
    TCase *hash = tcase_create("hash");
    tcase_add_test(hash, hash_invariance_and_sensitivity);
    tcase_add_test(hash, hash_large_constants_by_identity);
    suite_add_tcase(s, hash);

    TCase *canon = tcase_create("canonicalize");
    tcase_add_test(canon, canon_fold_batchnorm);
    tcase_add_test(canon, canon_fold_batchnorm_half);
    tcase_add_test(canon, canon_fold_affine);
    tcase_add_test(canon, canon_remove_identity);
    tcase_add_test(canon, canon_remove_same_type_casts);
    tcase_add_test(canon, canon_fuse_activations);
    tcase_add_test(canon, canon_remove_dead);
    tcase_add_test(canon, canon_merge_constants);
    tcase_add_test(canon, canon_all_to_fixed_point);
    tcase_add_test(canon, canon_lower_fused_convs);
    tcase_add_test(canon, canon_fold_pads);
    tcase_add_test(canon, sizes_generalize_and_recompute);
    tcase_add_test(canon, sizes_two_unknown_entries);
    suite_add_tcase(s, canon);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(canon_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
