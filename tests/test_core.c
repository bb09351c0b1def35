/* Check suite for core's IR basics and the shape inference of every op
 * family (test_canon.c covers hashing and the canonicalization passes). */
#include "core_builders.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ helpers */

static void infer_fails(xf_graph *g, int64_t opset, xf_status want, const char *fragment)
{
    xf_error e = {0};
    xf_status st = xf_graph_infer_shapes(g, opset, &e);
    ck_assert_msg(st == want, "status %s, expected %s (%s)", xf_status_name(st),
                  xf_status_name(want), e.msg);
    ck_assert_msg(strstr(e.msg, fragment), "message '%s' lacks '%s'", e.msg, fragment);
}

/* Infers a graph holding one node and returns its output's shape. */
static xf_shape inferred(xf_graph *g, int n, int64_t opset)
{
    infer_ok(g, opset);
    return g->values[out0(g, n)].shape;
}

/* ------------------------------------------------------------ IR basics */

START_TEST(ir_add_and_find)
{
    xf_graph *g = xf_graph_create("g");
    int x = input(g, "x", XF_DT_FLOAT, SHAPE(2, 3));
    int r = NODE(g, XF_OP_RELU, x);
    int s = NODE(g, XF_OP_SIGMOID, out0(g, r));
    xf_graph_add_output(g, out0(g, s));
    ck_assert_int_eq(g->values[out0(g, r)].producer, r);
    ck_assert_int_eq(g->values[x].producer, -1);
    ck_assert_int_eq(xf_graph_find_value(g, "x"), x);
    ck_assert_int_eq(xf_graph_count_uses(g, out0(g, r)), 1);
    ck_assert_int_eq(xf_graph_count_uses(g, out0(g, s)), 1); /* the graph output */
    xf_error e = {0};
    ck_assert_int_eq(xf_graph_validate(g, &e), XF_OK);
    xf_graph_free(g);
}
END_TEST

START_TEST(ir_clone_is_independent)
{
    xf_graph *g = xf_graph_create("g");
    int x = input(g, "x", XF_DT_FLOAT, SHAPE(4));
    float w[4] = {1, 2, 3, 4};
    int c = constant(g, "w", XF_DT_FLOAT, SHAPE(4), w);
    int a = NODE(g, XF_OP_ADD, x, c);
    xf_graph_add_output(g, out0(g, a));
    xf_graph *k = xf_graph_clone(g);
    ck_assert_ptr_nonnull(k);
    ck_assert_ptr_eq(k->values[c].init, g->values[c].init); /* weights shared, not copied */
    ck_assert_int_eq(g->values[c].init->refcount, 2);
    k->nodes[a].op = XF_OP_MUL;
    k->nodes[a].inputs[1] = x;
    free(k->values[x].name);
    k->values[x].name = strdup("renamed");
    ck_assert_int_eq(g->nodes[a].op, XF_OP_ADD);
    ck_assert_int_eq(g->nodes[a].inputs[1], c);
    ck_assert_str_eq(g->values[x].name, "x");
    xf_graph_free(k);
    ck_assert_int_eq(g->values[c].init->refcount, 1);
    xf_graph_free(g);
}
END_TEST

START_TEST(ir_toposort_and_cycle)
{
    xf_graph *g = xf_graph_create("g");
    int x = input(g, "x", XF_DT_FLOAT, SHAPE(2));
    int mid = xf_graph_add_value(g, "mid", XF_DT_FLOAT, NULL);
    int y = xf_graph_add_value(g, "y", XF_DT_FLOAT, NULL);
    /* The consumer first: out of order until sorted. */
    xf_graph_add_node(g, XF_OP_RELU, "late", 1, &mid, 1, &y);
    xf_graph_add_node(g, XF_OP_NEG, "early", 1, &x, 1, &mid);
    xf_graph_add_output(g, y);
    xf_error e = {0};
    ck_assert_int_eq(xf_graph_validate(g, &e), XF_ERR_INVALID);
    ck_assert_int_eq(xf_graph_toposort(g, &e), XF_OK);
    ck_assert_str_eq(g->nodes[0].name, "early");
    ck_assert_int_eq(g->values[y].producer, 1);
    ck_assert_int_eq(xf_graph_validate(g, &e), XF_OK);
    /* Feeding the consumer's output back makes a cycle. */
    g->nodes[0].inputs[0] = y;
    ck_assert_int_eq(xf_graph_toposort(g, &e), XF_ERR_INVALID);
    ck_assert_ptr_nonnull(strstr(e.msg, "cycle"));
    xf_graph_free(g);
}
END_TEST

START_TEST(ir_toposort_keeps_order)
{
    /* a = Neg(x); b = Exp(a); c = Relu(x); d = Abs(c): sorted already, with
     * two independent chains that breadth-first order would interleave. */
    xf_graph *g = xf_graph_create("g");
    int x = input(g, "x", XF_DT_FLOAT, SHAPE(2));
    int v[6];
    const char *names[6] = {"a", "b", "c", "d", "e", "f"};
    for (int i = 0; i < 6; i++)
        v[i] = xf_graph_add_value(g, names[i], XF_DT_FLOAT, NULL);
    xf_graph_add_node(g, XF_OP_NEG, "a", 1, &x, 1, &v[0]);
    xf_graph_add_node(g, XF_OP_EXP, "b", 1, &v[0], 1, &v[1]);
    xf_graph_add_node(g, XF_OP_RELU, "c", 1, &x, 1, &v[2]);
    /* d reads e, whose producer is appended last (as a rewrite appends). */
    xf_graph_add_node(g, XF_OP_ABS, "d", 1, &v[4], 1, &v[3]);
    xf_graph_add_node(g, XF_OP_SIGMOID, "f", 1, &v[1], 1, &v[5]);
    xf_graph_add_node(g, XF_OP_TANH, "e", 1, &v[2], 1, &v[4]);
    xf_graph_add_output(g, v[3]);
    xf_graph_add_output(g, v[5]);
    xf_error e = {0};
    int old[6];
    ck_assert_int_eq(xf_graph_toposort_mapped(g, old, &e), XF_OK);
    const char *want[6] = {"a", "b", "c", "e", "d", "f"};
    const int want_old[6] = {0, 1, 2, 5, 3, 4};
    for (int i = 0; i < 6; i++) {
        ck_assert_str_eq(g->nodes[i].name, want[i]);
        ck_assert_int_eq(old[i], want_old[i]);
    }
    ck_assert_int_eq(xf_graph_validate(g, &e), XF_OK);
    /* Sorting a sorted graph changes nothing. */
    ck_assert_int_eq(xf_graph_toposort_mapped(g, old, &e), XF_OK);
    for (int i = 0; i < 6; i++) {
        ck_assert_str_eq(g->nodes[i].name, want[i]);
        ck_assert_int_eq(old[i], i);
    }
    xf_graph_free(g);
}
END_TEST

START_TEST(ir_compact)
{
    xf_graph *g = xf_graph_create("g");
    int x = input(g, "x", XF_DT_FLOAT, SHAPE(2));
    NODE(g, XF_OP_EXP, x); /* node 0: dropped below */
    int live = NODE(g, XF_OP_RELU, x);
    xf_graph_add_output(g, out0(g, live));
    int n_values = g->n_values;
    bool keep[2] = {false, true};
    xf_graph_compact(g, keep);
    ck_assert_int_eq(g->n_nodes, 1);
    ck_assert_int_eq(g->n_values, n_values - 1);
    ck_assert_int_eq(g->nodes[0].op, XF_OP_RELU);
    ck_assert_int_eq(g->values[g->outputs[0]].producer, 0);
    xf_error e = {0};
    ck_assert_int_eq(xf_graph_validate(g, &e), XF_OK);
    xf_graph_free(g);
}
END_TEST

/* ------------------------------------------------------------ shape inference */

START_TEST(shape_elementwise)
{
    xf_graph *g = xf_graph_create("g");
    int a = input(g, "a", XF_DT_FLOAT, SHAPE(2, 3, 4));
    int b = input(g, "b", XF_DT_FLOAT, SHAPE(3, 1));
    int c = input(g, "c", XF_DT_BOOL, SHAPE(2, 1, 1));
    int add = NODE(g, XF_OP_ADD, a, b);
    int sum = NODE(g, XF_OP_SUM, a, b, out0(g, add));
    int eq = NODE(g, XF_OP_EQUAL, a, b);
    int where = NODE(g, XF_OP_WHERE, c, b, a);
    int relu = NODE(g, XF_OP_RELU, b);
    int cast = NODE(g, XF_OP_CAST, b);
    attrs(g, cast)->to = XF_DT_INT64;
    int not = NODE(g, XF_OP_NOT, c);
    int pw = NODE(g, XF_OP_POW, a, input(g, "e", XF_DT_INT64, SHAPE(4))); /* exponent: any type */
    infer_ok(g, 17);
    expect_shape(g, out0(g, add), SHAPE(2, 3, 4));
    expect_shape(g, out0(g, sum), SHAPE(2, 3, 4));
    expect_shape(g, out0(g, where), SHAPE(2, 3, 4));
    expect_shape(g, out0(g, relu), SHAPE(3, 1));
    ck_assert_int_eq(g->values[out0(g, add)].dtype, XF_DT_FLOAT);
    ck_assert_int_eq(g->values[out0(g, eq)].dtype, XF_DT_BOOL);
    ck_assert_int_eq(g->values[out0(g, where)].dtype, XF_DT_FLOAT);
    ck_assert_int_eq(g->values[out0(g, cast)].dtype, XF_DT_INT64);
    ck_assert_int_eq(g->values[out0(g, not)].dtype, XF_DT_BOOL);
    ck_assert_int_eq(g->values[out0(g, pw)].dtype, XF_DT_FLOAT);
    xf_graph_free(g);

    g = xf_graph_create("g");
    a = input(g, "a", XF_DT_FLOAT, SHAPE(2, 3));
    b = input(g, "b", XF_DT_FLOAT, SHAPE(4, 3));
    xf_graph_add_node(g, XF_OP_MUL, "mul1", 2, (int[]){a, b}, 1,
                      (int[]){xf_graph_add_value(g, NULL, XF_DT_UNDEFINED, NULL)});
    infer_fails(g, 17, XF_ERR_INVALID, "node 'mul1' (Mul): shapes 2x3 and 4x3 are not broadcastable");
    xf_graph_free(g);

    g = xf_graph_create("g");
    a = input(g, "a", XF_DT_FLOAT, SHAPE(2));
    b = input(g, "b", XF_DT_INT64, SHAPE(2));
    NODE(g, XF_OP_ADD, a, b);
    infer_fails(g, 17, XF_ERR_INVALID, "input 0 is FLOAT but input 1 is INT64");
    xf_graph_free(g);

    g = xf_graph_create("g");
    a = input(g, "a", XF_DT_FLOAT, SHAPE(2));
    NODE(g, XF_OP_NOT, a);
    infer_fails(g, 17, XF_ERR_INVALID, "must be BOOL");
    xf_graph_free(g);
}
END_TEST

START_TEST(shape_clip_dropout_identity)
{
    xf_graph *g = xf_graph_create("g");
    int x = input(g, "x", XF_DT_FLOAT, SHAPE(2, 5));
    float lo = 0, hi[2] = {1, 2};
    int clip = NODE(g, XF_OP_CLIP, x, constant(g, NULL, XF_DT_FLOAT, SCALAR, &lo));
    int id = NODE(g, XF_OP_IDENTITY, x);
    int drop = node(g, XF_OP_DROPOUT, NULL, 1, &x, 2);
    infer_ok(g, 13);
    expect_shape(g, out0(g, clip), SHAPE(2, 5));
    expect_shape(g, out0(g, id), SHAPE(2, 5));
    expect_shape(g, g->nodes[drop].outputs[1], SHAPE(2, 5));
    ck_assert_int_eq(g->values[g->nodes[drop].outputs[1]].dtype, XF_DT_BOOL);
    infer_ok(g, 9); /* before opset 10 the mask had the data's type */
    ck_assert_int_eq(g->values[g->nodes[drop].outputs[1]].dtype, XF_DT_FLOAT);
    NODE(g, XF_OP_CLIP, x, constant(g, NULL, XF_DT_FLOAT, SHAPE(2), hi));
    infer_fails(g, 13, XF_ERR_INVALID, "min must be a scalar");
    xf_graph_free(g);
}
END_TEST

/* Conv of x over w with the attributes set by `setup`, inferred. */
static xf_status conv_case(xf_shape x, xf_shape w, void (*setup)(xf_attrs *), xf_shape *out,
                           xf_error *e)
{
    xf_graph *g = xf_graph_create("g");
    int xi = input(g, "x", XF_DT_FLOAT, x), wi = input(g, "w", XF_DT_FLOAT, w);
    int c = xf_graph_add_node(g, XF_OP_CONV, "conv1", 2, (int[]){xi, wi}, 1,
                              (int[]){xf_graph_add_value(g, "y", XF_DT_UNDEFINED, NULL)});
    if (setup)
        setup(attrs(g, c));
    xf_status st = xf_graph_infer_shapes(g, 17, e);
    *out = g->values[out0(g, c)].shape;
    xf_graph_free(g);
    return st;
}

static void stride2_pad1(xf_attrs *a)
{
    a->n_spatial = 2;
    a->strides[0] = a->strides[1] = 2;
    a->pads[0] = a->pads[1] = a->pads[2] = a->pads[3] = 1;
}
static void same_upper_stride2(xf_attrs *a)
{
    a->n_spatial = 2;
    a->strides[0] = a->strides[1] = 2;
    a->auto_pad = XF_AUTO_PAD_SAME_UPPER;
}
static void valid_dilation2(xf_attrs *a)
{
    a->n_spatial = 2;
    a->dilations[0] = a->dilations[1] = 2;
    a->auto_pad = XF_AUTO_PAD_VALID;
}
static void group3(xf_attrs *a) { a->group = 3; }
static void group2(xf_attrs *a) { a->group = 2; }
static void zero_stride(xf_attrs *a)
{
    a->n_spatial = 2;
    a->strides[1] = 0;
}
static void kernel_mismatch(xf_attrs *a)
{
    a->n_spatial = 2;
    a->kernel[0] = a->kernel[1] = 5;
}
static void negative_kernel(xf_attrs *a)
{
    a->n_spatial = 2;
    a->kernel[0] = -3;
}
static void negative_pad(xf_attrs *a)
{
    a->n_spatial = 2;
    a->pads[0] = -1;
}

START_TEST(shape_conv)
{
    const struct {
        xf_shape x, w;
        void (*setup)(xf_attrs *);
        xf_status status;
        xf_shape out;
        const char *msg;
    } cases[] = {
        {SHAPE(1, 3, 32, 32), SHAPE(8, 3, 3, 3), NULL, XF_OK, SHAPE(1, 8, 30, 30), NULL},
        {SHAPE(1, 3, 32, 32), SHAPE(8, 3, 3, 3), stride2_pad1, XF_OK, SHAPE(1, 8, 16, 16), NULL},
        {SHAPE(1, 3, 33, 20), SHAPE(8, 3, 3, 3), same_upper_stride2, XF_OK, SHAPE(1, 8, 17, 10), NULL},
        {SHAPE(1, 3, 10, 10), SHAPE(8, 3, 3, 3), valid_dilation2, XF_OK, SHAPE(1, 8, 6, 6), NULL},
        {SHAPE(2, 3, 8, 8), SHAPE(3, 1, 3, 3), group3, XF_OK, SHAPE(2, 3, 6, 6), NULL},
        {SHAPE(1, 2, 10), SHAPE(4, 2, 3), NULL, XF_OK, SHAPE(1, 4, 8), NULL},
        {SHAPE(1, 3, 8, 8), SHAPE(4, 4, 3, 3), NULL, XF_ERR_INVALID, SCALAR,
         "node 'conv1' (Conv): input channels 3 do not match weight's 4 x group 1"},
        {SHAPE(1, 4, 8, 8), SHAPE(3, 2, 3, 3), group2, XF_ERR_INVALID, SCALAR,
         "3 output channels are not divisible by group 2"},
        {SHAPE(1, 3, 8, 8), SHAPE(4, 3, 3, 3), zero_stride, XF_ERR_INVALID, SCALAR, "must be positive"},
        {SHAPE(1, 3, 8, 8), SHAPE(4, 3, 3, 3), kernel_mismatch, XF_ERR_INVALID, SCALAR,
         "does not match weight shape 4x3x3x3"},
        {SHAPE(1, 3, 8, 8), SHAPE(4, 3, 3, 3), negative_kernel, XF_ERR_INVALID, SCALAR,
         "kernel_shape -3"},
        {SHAPE(1, 3, 8, 8), SHAPE(4, 3, 3, 3), negative_pad, XF_ERR_INVALID, SCALAR, "out of range"},
        {SHAPE(1, 3, 2, 2), SHAPE(4, 3, 3, 3), NULL, XF_ERR_INVALID, SCALAR, "smaller than the kernel"},
        {SHAPE(1, 3), SHAPE(4, 3), NULL, XF_ERR_INVALID, SCALAR, "no spatial dimensions"},
        {SHAPE(1, 1, 2, 2, 2, 2), SHAPE(1, 1, 1, 1, 1, 1), NULL, XF_ERR_UNSUPPORTED, SCALAR,
         "at most 3"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        xf_error e = {0};
        xf_shape out;
        xf_status st = conv_case(cases[i].x, cases[i].w, cases[i].setup, &out, &e);
        ck_assert_msg(st == cases[i].status, "case %zu: %s (%s)", i, xf_status_name(st), e.msg);
        if (st == XF_OK) {
            char a[64], b[64];
            ck_assert_msg(xf_shape_equal(&out, &cases[i].out), "case %zu: %s, expected %s", i,
                          xf_shape_str(&out, a, sizeof a), xf_shape_str(&cases[i].out, b, sizeof b));
        } else {
            ck_assert_msg(strstr(e.msg, cases[i].msg), "case %zu: '%s' lacks '%s'", i, e.msg,
                          cases[i].msg);
        }
    }

    /* A bias must have one entry per output channel. */
    xf_graph *g = xf_graph_create("g");
    int x = input(g, "x", XF_DT_FLOAT, SHAPE(1, 3, 8, 8));
    int w = input(g, "w", XF_DT_FLOAT, SHAPE(4, 3, 3, 3));
    int b = input(g, "b", XF_DT_FLOAT, SHAPE(5));
    NODE(g, XF_OP_CONV, x, w, b);
    infer_fails(g, 17, XF_ERR_INVALID, "bias shape 5 does not match 4 output channels");
    xf_graph_free(g);
}
END_TEST

START_TEST(shape_pool)
{
    xf_graph *g = xf_graph_create("g");
    int x = input(g, "x", XF_DT_FLOAT, SHAPE(1, 2, 5, 5));
    int p = NODE(g, XF_OP_MAX_POOL, x);
    xf_attrs *a = attrs(g, p);
    a->n_spatial = 2;
    a->kernel[0] = a->kernel[1] = 2;
    a->strides[0] = a->strides[1] = 2;
    xf_shape s = inferred(g, p, 17);
    ck_assert(xf_shape_equal(&s, &(xf_shape){4, {1, 2, 2, 2}}));
    a->ceil_mode = 1;
    s = inferred(g, p, 17);
    ck_assert(xf_shape_equal(&s, &(xf_shape){4, {1, 2, 3, 3}}));
    /* With padding 1 the fourth window would start in the right padding:
     * ceil_mode drops it (ONNX's and PyTorch's rule). */
    a->pads[0] = a->pads[1] = a->pads[2] = a->pads[3] = 1;
    s = inferred(g, p, 17);
    ck_assert(xf_shape_equal(&s, &(xf_shape){4, {1, 2, 3, 3}}));
    a->ceil_mode = 0;
    s = inferred(g, p, 17);
    ck_assert(xf_shape_equal(&s, &(xf_shape){4, {1, 2, 3, 3}}));

    int avg = NODE(g, XF_OP_AVERAGE_POOL, x);
    a = attrs(g, avg);
    a->n_spatial = 2;
    a->kernel[0] = 3;
    a->kernel[1] = 1;
    a->auto_pad = XF_AUTO_PAD_VALID;
    int gap = NODE(g, XF_OP_GLOBAL_AVERAGE_POOL, x);
    int gmp = NODE(g, XF_OP_GLOBAL_MAX_POOL, x);
    infer_ok(g, 17);
    expect_shape(g, out0(g, avg), SHAPE(1, 2, 3, 5));
    expect_shape(g, out0(g, gap), SHAPE(1, 2, 1, 1));
    expect_shape(g, out0(g, gmp), SHAPE(1, 2, 1, 1));
    NODE(g, XF_OP_MAX_POOL, x);
    infer_fails(g, 17, XF_ERR_INVALID, "kernel_shape is required");
    xf_graph_free(g);
}
END_TEST

START_TEST(shape_norm_softmax)
{
    xf_graph *g = xf_graph_create("g");
    int x = input(g, "x", XF_DT_FLOAT, SHAPE(2, 3, 4));
    int c3 = input(g, "c3", XF_DT_FLOAT, SHAPE(3));
    int c4 = input(g, "c4", XF_DT_FLOAT, SHAPE(4));
    int bn = NODE(g, XF_OP_BATCH_NORM, x, c3, c3, c3, c3);
    int ln = NODE(g, XF_OP_LAYER_NORM, x, c4, c4);
    int sm = NODE(g, XF_OP_SOFTMAX, x);
    attrs(g, sm)->axis = -2;
    int lsm = NODE(g, XF_OP_LOG_SOFTMAX, x);
    attrs(g, lsm)->softmax_legacy = true;
    attrs(g, lsm)->axis = 1;
    infer_ok(g, 17);
    expect_shape(g, out0(g, bn), SHAPE(2, 3, 4));
    expect_shape(g, out0(g, ln), SHAPE(2, 3, 4));
    expect_shape(g, out0(g, sm), SHAPE(2, 3, 4));
    expect_shape(g, out0(g, lsm), SHAPE(2, 3, 4));
    attrs(g, ln)->axis = -2; /* scale 4 must now broadcast to 3x4: it does */
    infer_ok(g, 17);
    g->nodes[ln].inputs[1] = c3; /* scale 3 does not broadcast to 3x4 */
    infer_fails(g, 17, XF_ERR_INVALID, "scale shape 3 does not broadcast to the normalized shape 3x4");
    g->nodes[ln].inputs[1] = c4;
    g->nodes[bn].inputs[3] = c4;
    infer_fails(g, 17, XF_ERR_INVALID, "mean shape 4 does not match the 3 channels");
    g->nodes[bn].inputs[3] = c3;
    attrs(g, sm)->axis = 3;
    infer_fails(g, 17, XF_ERR_INVALID, "axis 3 is out of range for rank 3");
    xf_graph_free(g);
}
END_TEST

/* LayerNormalization's optional Mean and InvStdDev: X's rank, X's dims
 * before axis, 1 from axis on; float (stash_type) whatever X's type. */
START_TEST(shape_layer_norm_stats)
{
    static const struct {
        int64_t axis;
        xf_shape stats;
    } cases[] = {{-1, {3, {2, 3, 1}}}, {-2, {3, {2, 1, 1}}}, {0, {3, {1, 1, 1}}}, {1, {3, {2, 1, 1}}}};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        for (int half = 0; half < 2; half++) {
            xf_dtype t = half ? XF_DT_FLOAT16 : XF_DT_FLOAT;
            xf_graph *g = xf_graph_create("g");
            int x = input(g, "x", t, SHAPE(2, 3, 4));
            int scale = input(g, "scale", t, SHAPE(4));
            int ln = node(g, XF_OP_LAYER_NORM, "ln", 2, (int[]){x, scale}, 3);
            attrs(g, ln)->axis = cases[i].axis;
            infer_ok(g, 17);
            expect_shape(g, out0(g, ln), SHAPE(2, 3, 4));
            ck_assert_int_eq(g->values[out0(g, ln)].dtype, t);
            for (int k = 1; k < 3; k++) {
                int v = g->nodes[ln].outputs[k];
                expect_shape(g, v, cases[i].stats);
                ck_assert_msg(g->values[v].dtype == XF_DT_FLOAT, "axis %lld, output %d: %s", (long long)cases[i].axis,
                              k, xf_dtype_name(g->values[v].dtype));
            }
            xf_graph_free(g);
        }

    /* Mean omitted, InvStdDev kept */
    xf_graph *g = xf_graph_create("g");
    int x = input(g, "x", XF_DT_FLOAT, SHAPE(5, 6));
    int scale = input(g, "scale", XF_DT_FLOAT, SHAPE(6));
    int outs[3] = {xf_graph_add_value(g, "y", XF_DT_UNDEFINED, NULL), -1,
                   xf_graph_add_value(g, "inv", XF_DT_UNDEFINED, NULL)};
    int ln = xf_graph_add_node(g, XF_OP_LAYER_NORM, "ln", 2, (int[]){x, scale}, 3, outs);
    attrs(g, ln)->axis = -1;
    infer_ok(g, 17);
    expect_shape(g, outs[0], SHAPE(5, 6));
    expect_shape(g, outs[2], SHAPE(5, 1));
    xf_graph_free(g);

    /* a fourth output is an error */
    g = xf_graph_create("g");
    x = input(g, "x", XF_DT_FLOAT, SHAPE(5, 6));
    scale = input(g, "scale", XF_DT_FLOAT, SHAPE(6));
    node(g, XF_OP_LAYER_NORM, "ln", 2, (int[]){x, scale}, 4);
    infer_fails(g, 17, XF_ERR_INVALID, "node 'ln' (LayerNormalization): has 4 outputs; LayerNormalization has at most 3");
    xf_graph_free(g);
}
END_TEST

START_TEST(shape_matmul_gemm)
{
    const struct {
        xf_shape a, b, out;
    } ok[] = {
        {SHAPE(2, 3, 4), SHAPE(4, 5), SHAPE(2, 3, 5)},
        {SHAPE(4), SHAPE(4, 5), SHAPE(5)},
        {SHAPE(2, 3, 4), SHAPE(4), SHAPE(2, 3)},
        {SHAPE(4), SHAPE(4), {0}},
        {SHAPE(2, 1, 3, 4), SHAPE(5, 4, 6), SHAPE(2, 5, 3, 6)},
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        xf_graph *g = xf_graph_create("g");
        int m = NODE(g, XF_OP_MATMUL, input(g, "a", XF_DT_FLOAT, ok[i].a),
                     input(g, "b", XF_DT_FLOAT, ok[i].b));
        infer_ok(g, 17);
        expect_shape(g, out0(g, m), ok[i].out);
        xf_graph_free(g);
    }
    xf_graph *g = xf_graph_create("g");
    NODE(g, XF_OP_MATMUL, input(g, "a", XF_DT_FLOAT, SHAPE(2, 3)), input(g, "b", XF_DT_FLOAT, SHAPE(4, 5)));
    infer_fails(g, 17, XF_ERR_INVALID, "inner dimensions of 2x3 and 4x5 differ");
    xf_graph_free(g);

    g = xf_graph_create("g");
    int a = input(g, "a", XF_DT_FLOAT, SHAPE(4, 3)); /* transA: M = 3, K = 4 */
    int b = input(g, "b", XF_DT_FLOAT, SHAPE(5, 4)); /* transB: N = 5 */
    int row = input(g, "row", XF_DT_FLOAT, SHAPE(5));
    int col = input(g, "col", XF_DT_FLOAT, SHAPE(3, 1));
    int bad = input(g, "bad", XF_DT_FLOAT, SHAPE(2, 2));
    int gm = NODE(g, XF_OP_GEMM, a, b, row);
    attrs(g, gm)->trans_a = attrs(g, gm)->trans_b = 1;
    infer_ok(g, 17);
    expect_shape(g, out0(g, gm), SHAPE(3, 5));
    g->nodes[gm].inputs[2] = col;
    infer_ok(g, 17);
    g->nodes[gm].inputs[2] = bad;
    infer_fails(g, 17, XF_ERR_INVALID, "C shape 2x2 does not broadcast to 3x5");
    g->nodes[gm].inputs[2] = row;
    attrs(g, gm)->trans_b = 0;
    infer_fails(g, 17, XF_ERR_INVALID, "inner dimensions differ");
    xf_graph_free(g);
}
END_TEST

START_TEST(shape_concat_split)
{
    xf_graph *g = xf_graph_create("g");
    int a = input(g, "a", XF_DT_FLOAT, SHAPE(2, 3));
    int b = input(g, "b", XF_DT_FLOAT, SHAPE(2, 4));
    int x = input(g, "x", XF_DT_FLOAT, SHAPE(7, 2));
    int cat = NODE(g, XF_OP_CONCAT, a, b);
    attrs(g, cat)->axis = -1;
    int even = node(g, XF_OP_SPLIT, NULL, 1, &a, 3);
    attrs(g, even)->axis = 1;
    int by_attr = node(g, XF_OP_SPLIT, NULL, 1, &x, 3);
    attrs(g, by_attr)->n_split = 3;
    memcpy(attrs(g, by_attr)->split, (int64_t[]){1, 2, 4}, 3 * sizeof(int64_t));
    int by_input = node(g, XF_OP_SPLIT, NULL, 2, (int[]){x, CONST_I64(g, 5, 2)}, 2);
    int chunks = node(g, XF_OP_SPLIT, NULL, 1, &x, 3);
    attrs(g, chunks)->num_outputs = 3;
    int runtime_sizes = node(g, XF_OP_SPLIT, NULL, 2, (int[]){x, input(g, "s", XF_DT_INT64, SHAPE(2))}, 2);
    infer_ok(g, 18);
    expect_shape(g, out0(g, cat), SHAPE(2, 7));
    for (int k = 0; k < 3; k++)
        expect_shape(g, g->nodes[even].outputs[k], SHAPE(2, 1));
    expect_shape(g, g->nodes[by_attr].outputs[2], SHAPE(4, 2));
    expect_shape(g, g->nodes[by_input].outputs[0], SHAPE(5, 2));
    expect_shape(g, g->nodes[chunks].outputs[0], SHAPE(3, 2));
    expect_shape(g, g->nodes[chunks].outputs[2], SHAPE(1, 2));
    /* sizes known at run time: the axis unknown, the other dims known */
    expect_shape(g, g->nodes[runtime_sizes].outputs[1], SHAPE(-1, 2));

    attrs(g, chunks)->num_outputs = 0; /* 7 rows do not split evenly in 3 */
    infer_fails(g, 18, XF_ERR_INVALID, "does not split evenly into 3 outputs");
    attrs(g, chunks)->num_outputs = 3;
    attrs(g, by_attr)->split[2] = 3;
    infer_fails(g, 18, XF_ERR_INVALID, "split sizes [1,2,3] do not partition dimension 7");
    attrs(g, by_attr)->split[2] = 4;
    attrs(g, cat)->axis = 0;
    infer_fails(g, 18, XF_ERR_INVALID, "input 1 has shape 2x4, which does not match input 0's 2x3");
    attrs(g, cat)->axis = 2;
    infer_fails(g, 18, XF_ERR_INVALID, "axis 2 is out of range for rank 2");
    xf_graph_free(g);
}
END_TEST

START_TEST(shape_transpose_reshape_flatten)
{
    xf_graph *g = xf_graph_create("g");
    int x = input(g, "x", XF_DT_FLOAT, SHAPE(2, 3, 4));
    int rev = NODE(g, XF_OP_TRANSPOSE, x);
    int perm = NODE(g, XF_OP_TRANSPOSE, x);
    attrs(g, perm)->n_perm = 3;
    memcpy(attrs(g, perm)->perm, (int64_t[]){0, 2, 1}, 3 * sizeof(int64_t));
    int copy0 = NODE(g, XF_OP_RESHAPE, x, CONST_I64(g, 0, -1));
    int zero = NODE(g, XF_OP_RESHAPE, input(g, "e", XF_DT_FLOAT, SHAPE(0, 4)), CONST_I64(g, 0, 2, 2));
    attrs(g, zero)->allowzero = 1;
    int dynamic = NODE(g, XF_OP_RESHAPE, x, input(g, "shape", XF_DT_INT64, SHAPE(2)));
    int after = NODE(g, XF_OP_RELU, out0(g, dynamic));
    int flat = NODE(g, XF_OP_FLATTEN, x);
    attrs(g, flat)->axis = 2;
    int flat0 = NODE(g, XF_OP_FLATTEN, x);
    attrs(g, flat0)->axis = 0;
    /* an input of a symbolic dim: the -1 and the dims copied from it unknown */
    int sym = input(g, "sym", XF_DT_FLOAT, (xf_shape){.ndim = 2, .dims = {-1, 6}});
    int sym_rows = NODE(g, XF_OP_RESHAPE, sym, CONST_I64(g, -1, 2));
    int sym_copy = NODE(g, XF_OP_RESHAPE, sym, CONST_I64(g, 0, 3, 2));
    infer_ok(g, 14);
    expect_shape(g, out0(g, sym_rows), SHAPE(-1, 2));
    expect_shape(g, out0(g, sym_copy), SHAPE(-1, 3, 2));
    expect_shape(g, out0(g, rev), SHAPE(4, 3, 2));
    expect_shape(g, out0(g, perm), SHAPE(2, 4, 3));
    expect_shape(g, out0(g, copy0), SHAPE(2, 12));
    expect_shape(g, out0(g, zero), SHAPE(0, 2, 2));
    /* A shape known only at run time: unknown, not an error, downstream too. */
    ck_assert_int_eq(g->values[out0(g, dynamic)].shape.ndim, -1);
    ck_assert_int_eq(g->values[out0(g, after)].shape.ndim, -1);
    ck_assert_int_eq(g->values[out0(g, after)].dtype, XF_DT_FLOAT);
    expect_shape(g, out0(g, flat), SHAPE(6, 4));
    expect_shape(g, out0(g, flat0), SHAPE(1, 24));

    /* With the value given, as the runtime does, the shape is known. */
    xf_tensor *shape = xf_tensor_from_data(XF_DT_INT64, &(xf_shape){1, {2}}, (int64_t[]){4, -1});
    const xf_tensor *values[2] = {NULL, shape};
    xf_error e = {0};
    ck_assert_int_eq(xf_node_infer_shape(g, dynamic, 14, values, &e), XF_OK);
    expect_shape(g, out0(g, dynamic), SHAPE(4, 6));
    xf_tensor_release(shape);

    g->nodes[copy0].inputs[1] = CONST_I64(g, -1, -1);
    infer_fails(g, 14, XF_ERR_INVALID, "shape [-1,-1] has more than one -1");
    g->nodes[copy0].inputs[1] = CONST_I64(g, 5, -1);
    infer_fails(g, 14, XF_ERR_INVALID, "cannot reshape 2x3x4 to [5,-1]");
    g->nodes[copy0].inputs[1] = CONST_I64(g, 2, 12);
    attrs(g, perm)->perm[2] = 0;
    infer_fails(g, 14, XF_ERR_INVALID, "perm [0,2,0] is not a permutation");
    attrs(g, perm)->n_perm = 99; /* malformed: an error, not a crash */
    infer_fails(g, 14, XF_ERR_INVALID, "is not a permutation");
    xf_graph_free(g);
}
END_TEST

START_TEST(shape_squeeze_unsqueeze)
{
    xf_graph *g = xf_graph_create("g");
    int x = input(g, "x", XF_DT_FLOAT, SHAPE(2, 1, 3, 1));
    int sq_attr = NODE(g, XF_OP_SQUEEZE, x); /* opset 11: axes attribute */
    attrs(g, sq_attr)->has_axes = true;
    attrs(g, sq_attr)->n_axes = 1;
    attrs(g, sq_attr)->axes[0] = -1;
    int sq_all = NODE(g, XF_OP_SQUEEZE, x);
    int sq_input = NODE(g, XF_OP_SQUEEZE, x, CONST_I64(g, 1)); /* opset 13: axes input */
    int unsq = NODE(g, XF_OP_UNSQUEEZE, out0(g, sq_all));
    attrs(g, unsq)->has_axes = true;
    attrs(g, unsq)->n_axes = 2;
    memcpy(attrs(g, unsq)->axes, (int64_t[]){0, -1}, 2 * sizeof(int64_t));
    int unsq_input = NODE(g, XF_OP_UNSQUEEZE, out0(g, sq_all), CONST_I64(g, 1, 3));
    infer_ok(g, 13);
    expect_shape(g, out0(g, sq_attr), SHAPE(2, 1, 3));
    expect_shape(g, out0(g, sq_all), SHAPE(2, 3));
    expect_shape(g, out0(g, sq_input), SHAPE(2, 3, 1));
    expect_shape(g, out0(g, unsq), SHAPE(1, 2, 3, 1));
    expect_shape(g, out0(g, unsq_input), SHAPE(2, 1, 3, 1));

    attrs(g, sq_attr)->axes[0] = 0;
    infer_fails(g, 13, XF_ERR_INVALID, "cannot squeeze axis 0 of shape 2x1x3x1");
    attrs(g, sq_attr)->axes[0] = 4;
    infer_fails(g, 13, XF_ERR_INVALID, "axis 4 is out of range for rank 4");
    attrs(g, sq_attr)->axes[0] = 1;
    attrs(g, unsq)->axes[1] = 0;
    infer_fails(g, 13, XF_ERR_INVALID, "repeat axis 0");
    attrs(g, unsq)->n_axes = 7; /* 2 + 7 dims: beyond XF_MAX_DIMS */
    infer_fails(g, 13, XF_ERR_UNSUPPORTED, "rank 9");
    xf_graph_free(g);
}
END_TEST

START_TEST(shape_gather_slice_pad)
{
    xf_graph *g = xf_graph_create("g");
    int x = input(g, "x", XF_DT_FLOAT, SHAPE(10, 20));
    int idx = input(g, "idx", XF_DT_INT64, SHAPE(2, 3));
    int ga0 = NODE(g, XF_OP_GATHER, x, idx);
    int ga1 = NODE(g, XF_OP_GATHER, x, idx);
    attrs(g, ga1)->axis = -1;
    int ga_scalar = NODE(g, XF_OP_GATHER, x, scalar_i64(g, 3));
    int64_t big = INT64_MAX, small = INT64_MIN;
    int step2 = NODE(g, XF_OP_SLICE, x, CONST_I64(g, 1), CONST_I64(g, big), CONST_I64(g, 1), CONST_I64(g, 2));
    int reverse = NODE(g, XF_OP_SLICE, x, CONST_I64(g, -1), CONST_I64(g, small), CONST_I64(g, 1), CONST_I64(g, -1));
    int clamped = NODE(g, XF_OP_SLICE, x, CONST_I64(g, -100, 5), CONST_I64(g, 3, 100));
    int empty = NODE(g, XF_OP_SLICE, x, CONST_I64(g, 8), CONST_I64(g, 2));
    int v1 = NODE(g, XF_OP_SLICE, x); /* opset 1: attributes */
    xf_attrs *a = attrs(g, v1);
    a->has_slice_attrs = a->has_slice_axes = true;
    a->n_slice = 1;
    a->slice_starts[0] = 2;
    a->slice_ends[0] = -2;
    a->slice_axes[0] = 1;
    int pad11 = NODE(g, XF_OP_PAD, x, CONST_I64(g, 0, 1, 0, 2));
    int crop = NODE(g, XF_OP_PAD, x, CONST_I64(g, -1, 0, -2, 0));
    int pad2 = NODE(g, XF_OP_PAD, x);
    attrs(g, pad2)->has_pads = true;
    attrs(g, pad2)->n_pads = 4;
    memcpy(attrs(g, pad2)->pad_pads, (int64_t[]){1, 1, 1, 1}, 4 * sizeof(int64_t));
    infer_ok(g, 13);
    expect_shape(g, out0(g, ga0), SHAPE(2, 3, 20));
    expect_shape(g, out0(g, ga1), SHAPE(10, 2, 3));
    expect_shape(g, out0(g, ga_scalar), SHAPE(20));
    expect_shape(g, out0(g, step2), SHAPE(10, 10));
    expect_shape(g, out0(g, reverse), SHAPE(10, 20));
    expect_shape(g, out0(g, clamped), SHAPE(3, 15));
    expect_shape(g, out0(g, empty), SHAPE(0, 20));
    expect_shape(g, out0(g, v1), SHAPE(10, 16));
    expect_shape(g, out0(g, pad11), SHAPE(10, 23));
    expect_shape(g, out0(g, crop), SHAPE(7, 20));
    expect_shape(g, out0(g, pad2), SHAPE(12, 22));

    g->nodes[step2].inputs[4] = CONST_I64(g, 0);
    infer_fails(g, 13, XF_ERR_INVALID, "step on axis 1 is 0");
    g->nodes[step2].inputs[4] = CONST_I64(g, 1);
    g->nodes[crop].inputs[1] = CONST_I64(g, -11, 0, 0, 0);
    infer_fails(g, 13, XF_ERR_INVALID, "pads [-11,0,0,0] do not fit axis 0 of 10x20");
    g->nodes[crop].inputs[1] = CONST_I64(g, 0, 0);
    infer_fails(g, 13, XF_ERR_INVALID, "has 2 entries for 2 axes");
    g->nodes[crop].inputs[1] = CONST_I64(g, 0, 0, 0, 0);
    attrs(g, ga0)->axis = 2;
    infer_fails(g, 13, XF_ERR_INVALID, "axis 2 is out of range for rank 2");
    attrs(g, ga0)->axis = 0;
    g->nodes[ga0].inputs[1] = x;
    infer_fails(g, 13, XF_ERR_INVALID, "indices must be int32 or int64, got FLOAT");
    xf_graph_free(g);
}
END_TEST

START_TEST(shape_generators)
{
    xf_graph *g = xf_graph_create("g");
    int x = input(g, "x", XF_DT_FLOAT, SHAPE(2, 3, 4));
    int col = input(g, "col", XF_DT_FLOAT, SHAPE(3, 1));
    int shape = NODE(g, XF_OP_SHAPE, x);
    int middle = NODE(g, XF_OP_SHAPE, x);
    attrs(g, middle)->start = 1;
    attrs(g, middle)->end = -1;
    attrs(g, middle)->has_end = true;
    int clamped = NODE(g, XF_OP_SHAPE, x);
    attrs(g, clamped)->start = -10;
    int expand = NODE(g, XF_OP_EXPAND, col, CONST_I64(g, 2, 1, 4));
    int fill = NODE(g, XF_OP_CONSTANT_OF_SHAPE, CONST_I64(g, 2, 3));
    int ones = NODE(g, XF_OP_CONSTANT_OF_SHAPE, CONST_I64(g, 5));
    int64_t one = 1;
    attrs(g, ones)->value = xf_tensor_from_data(XF_DT_INT64, &(xf_shape){1, {1}}, &one);
    int range_i = NODE(g, XF_OP_RANGE, scalar_i64(g, 0), scalar_i64(g, 10), scalar_i64(g, 3));
    float f[3] = {1.0f, 2.0f, 0.3f};
    int range_f = NODE(g, XF_OP_RANGE, constant(g, NULL, XF_DT_FLOAT, SCALAR, &f[0]),
                       constant(g, NULL, XF_DT_FLOAT, SCALAR, &f[1]),
                       constant(g, NULL, XF_DT_FLOAT, SCALAR, &f[2]));
    int range_down = NODE(g, XF_OP_RANGE, scalar_i64(g, 10), scalar_i64(g, 0), scalar_i64(g, -4));
    int range_rt = NODE(g, XF_OP_RANGE, input(g, "start", XF_DT_INT64, SCALAR), scalar_i64(g, 0),
                        scalar_i64(g, 1));
    infer_ok(g, 17);
    expect_shape(g, out0(g, shape), SHAPE(3));
    ck_assert_int_eq(g->values[out0(g, shape)].dtype, XF_DT_INT64);
    expect_shape(g, out0(g, middle), SHAPE(1));
    expect_shape(g, out0(g, clamped), SHAPE(3));
    expect_shape(g, out0(g, expand), SHAPE(2, 3, 4));
    expect_shape(g, out0(g, fill), SHAPE(2, 3));
    ck_assert_int_eq(g->values[out0(g, fill)].dtype, XF_DT_FLOAT);
    ck_assert_int_eq(g->values[out0(g, ones)].dtype, XF_DT_INT64);
    expect_shape(g, out0(g, range_i), SHAPE(4));
    expect_shape(g, out0(g, range_f), SHAPE(4));
    expect_shape(g, out0(g, range_down), SHAPE(3));
    ck_assert_int_eq(g->values[out0(g, range_rt)].shape.ndim, -1);

    g->nodes[range_i].inputs[2] = scalar_i64(g, 0);
    infer_fails(g, 17, XF_ERR_INVALID, "delta is 0");
    g->nodes[range_i].inputs[2] = scalar_i64(g, 1);
    g->nodes[expand].inputs[1] = CONST_I64(g, 2, 4);
    infer_fails(g, 17, XF_ERR_INVALID, "shapes 3x1 and 2x4 are not broadcastable");
    g->nodes[expand].inputs[1] = CONST_I64(g, 9, 9, 9, 9, 9, 9, 9, 9, 9);
    infer_fails(g, 17, XF_ERR_UNSUPPORTED, "shape has 9 entries");
    xf_graph_free(g);
}
END_TEST

START_TEST(shape_reduce)
{
    xf_graph *g = xf_graph_create("g");
    int x = input(g, "x", XF_DT_FLOAT, SHAPE(2, 3, 4));
    int mean = NODE(g, XF_OP_REDUCE_MEAN, x); /* opset 17: axes attribute */
    attrs(g, mean)->has_axes = true;
    attrs(g, mean)->n_axes = 1;
    attrs(g, mean)->axes[0] = 1;
    int flat = NODE(g, XF_OP_REDUCE_MAX, x);
    attrs(g, flat)->has_axes = true;
    attrs(g, flat)->n_axes = 2;
    memcpy(attrs(g, flat)->axes, (int64_t[]){0, -1}, 2 * sizeof(int64_t));
    attrs(g, flat)->keepdims = 0;
    int sum13 = NODE(g, XF_OP_REDUCE_SUM, x, CONST_I64(g, -1)); /* opset 13: axes input */
    int all = NODE(g, XF_OP_REDUCE_PROD, x);
    int noop = NODE(g, XF_OP_REDUCE_SUM, x);
    attrs(g, noop)->noop_with_empty_axes = 1;
    int scalar = NODE(g, XF_OP_REDUCE_MIN, x);
    attrs(g, scalar)->keepdims = 0;
    infer_ok(g, 17);
    expect_shape(g, out0(g, mean), SHAPE(2, 1, 4));
    expect_shape(g, out0(g, flat), SHAPE(3));
    expect_shape(g, out0(g, sum13), SHAPE(2, 3, 1));
    expect_shape(g, out0(g, all), SHAPE(1, 1, 1));
    expect_shape(g, out0(g, noop), SHAPE(2, 3, 4));
    expect_shape(g, out0(g, scalar), SCALAR);
    attrs(g, mean)->axes[0] = -4;
    infer_fails(g, 17, XF_ERR_INVALID, "axis -4 is out of range for rank 3");
    xf_graph_free(g);
}
END_TEST

START_TEST(shape_unknown_and_opaque)
{
    xf_graph *g = xf_graph_create("g");
    int x = input(g, "x", XF_DT_FLOAT, SHAPE(2, 3));
    int known = xf_graph_add_value(g, "known", XF_DT_FLOAT, &(xf_shape){2, {3, 2}});
    int unknown = xf_graph_add_value(g, "unknown", XF_DT_UNDEFINED, NULL);
    int op = xf_graph_add_node(g, XF_OP_OPAQUE, "custom", 1, &x, 2, (int[]){known, unknown});
    g->nodes[op].opaque = xf_opaque_create("MyOp", "my.domain", "\x01\x02", 2);
    int a = NODE(g, XF_OP_RELU, known);
    int b = NODE(g, XF_OP_RELU, unknown);
    int c = NODE(g, XF_OP_ADD, out0(g, b), x); /* unknown + known: unknown */
    /* value_info downstream of the opaque node is kept. */
    int d_out = xf_graph_add_value(g, "d", XF_DT_FLOAT, &(xf_shape){2, {2, 3}});
    int b_out = out0(g, b);
    xf_graph_add_node(g, XF_OP_SIGMOID, NULL, 1, &b_out, 1, &d_out);
    infer_ok(g, 17);
    expect_shape(g, known, SHAPE(3, 2)); /* opaque outputs untouched */
    ck_assert_int_eq(g->values[unknown].shape.ndim, -1);
    expect_shape(g, out0(g, a), SHAPE(3, 2));
    ck_assert_int_eq(g->values[out0(g, b)].shape.ndim, -1);
    ck_assert_int_eq(g->values[out0(g, c)].shape.ndim, -1);
    ck_assert_int_eq(g->values[out0(g, c)].dtype, XF_DT_FLOAT);
    expect_shape(g, d_out, SHAPE(2, 3));
    xf_graph_free(g);

    /* Malformed attributes and structure fail cleanly. */
    g = xf_graph_create("g");
    x = input(g, "x", XF_DT_FLOAT, SHAPE(2, 3));
    int s = node(g, XF_OP_SPLIT, NULL, 1, &x, 2);
    attrs(g, s)->n_split = 1000;
    infer_fails(g, 17, XF_ERR_INVALID, "split has 1000 sizes for 2 outputs");
    attrs(g, s)->n_split = 0;
    int cast = NODE(g, XF_OP_CAST, x);
    attrs(g, cast)->to = (xf_dtype)77;
    infer_fails(g, 17, XF_ERR_INVALID, "target type 77");
    attrs(g, cast)->to = XF_DT_FLOAT;
    g->nodes[cast].inputs[0] = 12345;
    infer_fails(g, 17, XF_ERR_INVALID, "input 0 refers to no value");
    xf_graph_free(g);
}
END_TEST

/* Tensors of strings that share another's: the pointers picked by id
 * (-1 gives ""), the owner kept alive by its sharers, a sharer of a
 * sharer keeping the first owner. */
START_TEST(ir_shared_strings)
{
    xf_tensor *owner = xf_tensor_create(XF_DT_STRING, &(xf_shape){1, {3}});
    const char *v[] = {"a", "bb", "ccc"};
    for (int i = 0; i < 3; i++)
        owner->strings[i] = strdup(v[i]);
    xf_tensor *a = xf_strings_shared(owner, &(xf_shape){2, {2, 2}}, (const int64_t[]){2, -1, 0, 2});
    ck_assert_ptr_nonnull(a);
    ck_assert(a->strings[0] == owner->strings[2] && strcmp(a->strings[1], "") == 0 &&
              a->strings[2] == owner->strings[0]);
    ck_assert_int_eq(owner->refcount, 2);
    xf_tensor *b = xf_strings_shared(a, &(xf_shape){1, {1}}, (const int64_t[]){3});
    ck_assert_ptr_eq(b->string_owner, owner);
    ck_assert_int_eq(owner->refcount, 3);
    xf_tensor_release(owner);
    xf_tensor_release(a);
    ck_assert_int_eq(owner->refcount, 1); /* b's */
    ck_assert_str_eq(b->strings[0], "ccc");
    xf_tensor_release(b);
}
END_TEST

/* ------------------------------------------------------------ suite */

static Suite *core_suite(void)
{
    Suite *s = suite_create("core");
    TCase *ir = tcase_create("ir");
    tcase_add_test(ir, ir_add_and_find);
    tcase_add_test(ir, ir_clone_is_independent);
    tcase_add_test(ir, ir_toposort_and_cycle);
    tcase_add_test(ir, ir_toposort_keeps_order);
    tcase_add_test(ir, ir_compact);
    tcase_add_test(ir, ir_shared_strings);
    suite_add_tcase(s, ir);

    TCase *shape = tcase_create("shape_inference");
    tcase_add_test(shape, shape_elementwise);
    tcase_add_test(shape, shape_clip_dropout_identity);
    tcase_add_test(shape, shape_conv);
    tcase_add_test(shape, shape_pool);
    tcase_add_test(shape, shape_norm_softmax);
    tcase_add_test(shape, shape_layer_norm_stats);
    tcase_add_test(shape, shape_matmul_gemm);
    tcase_add_test(shape, shape_concat_split);
    tcase_add_test(shape, shape_transpose_reshape_flatten);
    tcase_add_test(shape, shape_squeeze_unsqueeze);
    tcase_add_test(shape, shape_gather_slice_pad);
    tcase_add_test(shape, shape_generators);
    tcase_add_test(shape, shape_reduce);
    tcase_add_test(shape, shape_unknown_and_opaque);
    suite_add_tcase(s, shape);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(core_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
