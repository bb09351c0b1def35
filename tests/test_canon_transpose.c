/* Check suite for xf_pass_push_transposes: Transposes moved through the
 * ops after them and cancelled in pairs (TensorFlow's NHWC exports), each
 * rewritten graph run against the graph as given. */
#include "backend_util.h"
#include "core_builders.h"
#include "xf_runtime.h"
#include "xf_test_util.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const int64_t TO_NCHW[] = {0, 3, 1, 2}, TO_NHWC[] = {0, 2, 3, 1};

static int transpose(xf_graph *g, int x, const int64_t *perm, int rank)
{
    int t = NODE(g, XF_OP_TRANSPOSE, x);
    attrs(g, t)->n_perm = rank;
    memcpy(attrs(g, t)->perm, perm, sizeof *perm * (size_t)rank);
    return out0(g, t);
}

static int count_op(const xf_graph *g, xf_op op)
{
    int c = 0;
    for (int i = 0; i < g->n_nodes; i++)
        c += g->nodes[i].op == op;
    return c;
}

/* The node computing v. */
static const xf_node *producer(const xf_graph *g, int v)
{
    ck_assert_int_ge(g->values[v].producer, 0);
    return &g->nodes[g->values[v].producer];
}

static int value_named(const xf_graph *g, const char *name)
{
    int v = xf_graph_find_value(g, name);
    ck_assert_msg(v >= 0, "no value '%s'", name);
    return v;
}

/* Runs a (as given) and b (as given, or with the session's rewrites) on
 * cpu_ref with the same random inputs: every output agrees. */
static void same_function(const xf_graph *a, const xf_graph *b, int64_t opset, bool b_rewritten, const char *what)
{
    xf_error e = {0};
    xf_tensor *in[4] = {NULL}, *out_a[4] = {NULL}, *out_b[4] = {NULL};
    ck_assert(a->n_inputs <= 4 && a->n_outputs <= 4 && b->n_outputs == a->n_outputs);
    for (int i = 0; i < a->n_inputs; i++)
        in[i] = xf_tensor_random(XF_DT_FLOAT, &a->values[a->inputs[i]].shape, 7u + (uint64_t)i);
    xf_session_options given = {.as_given = true};
    xf_session *sa = NULL, *sb = NULL;
    ck_assert_msg(xf_session_create(a, opset, "cpu_ref", &given, &sa, &e) == XF_OK, "%s: %s", what, e.msg);
    ck_assert_msg(xf_session_create(b, opset, "cpu_ref", b_rewritten ? NULL : &given, &sb, &e) == XF_OK, "%s: %s",
                  what, e.msg);
    ck_assert_msg(xf_session_run(sa, in, out_a, &e) == XF_OK && xf_session_run(sb, in, out_b, &e) == XF_OK, "%s: %s",
                  what, e.msg);
    for (int k = 0; k < a->n_outputs; k++) {
        double max_abs = 0, max_rel = 0;
        bool ok = false;
        ck_assert(xf_tensor_compare(out_b[k], out_a[k], 1e-5, 1e-5, &max_abs, &max_rel, &ok, &e) == XF_OK);
        ck_assert_msg(ok, "%s: output %d differs by %g", what, k, max_abs);
        xf_tensor_release(out_a[k]);
        xf_tensor_release(out_b[k]);
    }
    for (int i = 0; i < a->n_inputs; i++)
        xf_tensor_release(in[i]);
    xf_session_free(sa);
    xf_session_free(sb);
}

static xf_canon_stats push_ok(xf_graph *g, int64_t opset)
{
    xf_canon_stats st = {0};
    xf_error e = {0};
    ck_assert_msg(xf_pass_push_transposes(g, opset, &st, &e) == XF_OK, "%s", e.msg);
    validate_ok(g);
    return st;
}

/* ------------------------------------------------------------ a TensorFlow block */

/* NHWC x [2, 6, 5, 3]: into NCHW for a Conv and back, then in NHWC a
 * HardSwish as TensorFlow writes it (x * (Clip(x + 3, 0, 6) / 6)), a
 * per-channel scale, then three readers: a Pad into the next Conv (its
 * Transposes around it again; output "conv2"), a mean over H and W without
 * the dims ("pooled") and a Concat with a Relu along the channels, then a
 * Softmax over them ("probs").  Opset 13 (axes as attributes) or 18 (as
 * inputs, and the Pad's value given). */
static xf_graph *tf_block(int64_t opset)
{
    xf_graph *g = xf_graph_create("tf");
    int x = input(g, "x", XF_DT_FLOAT, SHAPE(2, 6, 5, 3));
    int c1 = xf_bt_conv(g, transpose(g, x, TO_NCHW, 4), 3, 4, 3, 1, XF_ACT_NONE);
    int t1 = transpose(g, c1, TO_NHWC, 4);
    int hs = xf_bt_with_scalar(g, XF_OP_ADD, t1, 3);
    hs = out0(g, NODE(g, XF_OP_CLIP, hs, xf_bt_scalar(g, 0, 0), xf_bt_scalar(g, 6, 0)));
    hs = xf_bt_with_scalar(g, XF_OP_MUL, hs, 1.0f / 6);
    hs = out0(g, NODE(g, XF_OP_MUL, t1, hs));
    int scaled = out0(g, NODE(g, XF_OP_MUL, hs, xf_bt_random_const(g, SHAPE(4), true)));
    int pad = opset >= 18 ? NODE(g, XF_OP_PAD, scaled, CONST_I64(g, 0, 1, 0, 0, 0, 1, 2, 0), xf_bt_scalar(g, 0, 0))
                          : NODE(g, XF_OP_PAD, scaled, CONST_I64(g, 0, 1, 0, 0, 0, 1, 2, 0));
    int c2 = xf_bt_conv(g, transpose(g, out0(g, pad), TO_NCHW, 4), 4, 2, 3, 2, XF_ACT_NONE);
    int conv2 = transpose(g, c2, TO_NHWC, 4);
    int mean = opset >= 18 ? NODE(g, XF_OP_REDUCE_MEAN, scaled, CONST_I64(g, 1, -2))
                           : NODE(g, XF_OP_REDUCE_MEAN, scaled);
    if (opset < 18) {
        attrs(g, mean)->has_axes = true;
        attrs(g, mean)->n_axes = 2;
        attrs(g, mean)->axes[0] = 1;
        attrs(g, mean)->axes[1] = -2;
    }
    attrs(g, mean)->keepdims = 0;
    int cat = NODE(g, XF_OP_CONCAT, scaled, out0(g, NODE(g, XF_OP_RELU, t1)));
    attrs(g, cat)->axis = 3;
    int sm = NODE(g, XF_OP_SOFTMAX, out0(g, cat));
    attrs(g, sm)->axis = -1;
    xf_graph_add_output(g, conv2);
    xf_graph_add_output(g, out0(g, mean));
    xf_graph_add_output(g, out0(g, sm));
    free(g->values[conv2].name);
    g->values[conv2].name = strdup("conv2");
    free(g->values[out0(g, mean)].name);
    g->values[out0(g, mean)].name = strdup("pooled");
    free(g->values[out0(g, sm)].name);
    g->values[out0(g, sm)].name = strdup("probs");
    infer_ok(g, opset);
    return g;
}

/* The block keeps three Transposes (into NCHW at the input, back to NHWC
 * at the two outputs that are images); the first Conv's output reaches
 * the Pad, which reaches the second Conv, without one; the outputs keep
 * their names and shapes; and the rewritten graph computes what the graph
 * as given does, on cpu_ref (as given, and with the session's passes,
 * which then fold the Pad) and on the cpu backend. */
START_TEST(tensorflow_block)
{
    const int64_t opsets[] = {13, 18};
    for (int o = 0; o < 2; o++) {
        int64_t opset = opsets[o];
        xf_graph *orig = tf_block(opset), *g = tf_block(opset);
        ck_assert_int_eq(count_op(g, XF_OP_TRANSPOSE), 4);
        xf_canon_stats st = push_ok(g, opset);
        ck_assert_int_eq(st.removed_transposes, 1);
        ck_assert_int_eq(count_op(g, XF_OP_TRANSPOSE), 3);
        int conv2 = value_named(g, "conv2"), pooled = value_named(g, "pooled"), probs = value_named(g, "probs");
        ck_assert_int_eq(g->outputs[0], conv2);
        ck_assert_int_eq(g->outputs[1], pooled);
        ck_assert_int_eq(g->outputs[2], probs);
        expect_shape(g, conv2, SHAPE(2, 4, 4, 2));
        expect_shape(g, pooled, SHAPE(2, 4));
        expect_shape(g, probs, SHAPE(2, 6, 5, 8));
        ck_assert_int_eq(producer(g, pooled)->op, XF_OP_REDUCE_MEAN); /* no Transpose after it */
        const xf_node *t = producer(g, conv2);
        ck_assert_int_eq(t->op, XF_OP_TRANSPOSE);
        const xf_node *conv = producer(g, t->inputs[0]);
        ck_assert_int_eq(conv->op, XF_OP_CONV);
        const xf_node *pad = producer(g, conv->inputs[0]);
        ck_assert_int_eq(pad->op, XF_OP_PAD);
        /* the pads of H (1, 1) and W (0, 2), now dims 2 and 3 */
        const xf_tensor *p = g->values[pad->inputs[1]].init;
        const int64_t want[] = {0, 0, 1, 0, 0, 0, 1, 2};
        for (int k = 0; k < 8; k++)
            ck_assert_int_eq(xf_tensor_get_i64(p, k), want[k]);
        ck_assert_int_eq(producer(g, probs)->op, XF_OP_TRANSPOSE);
        same_function(orig, g, opset, false, "the rewritten block");
        same_function(orig, orig, opset, true, "the block in a session");
        /* the session's graph: Transposes cancelled, the Pad folded */
        xf_session *s = NULL;
        xf_error e = {0};
        ck_assert_msg(xf_session_create(orig, opset, "cpu_ref", NULL, &s, &e) == XF_OK, "%s", e.msg);
        ck_assert_int_eq(count_op(xf_session_graph(s), XF_OP_TRANSPOSE), 3);
        ck_assert_int_eq(count_op(xf_session_graph(s), XF_OP_PAD), 0);
        xf_session_free(s);
        if (xf_bt_have_cpu())
            xf_bt_check_cpu(orig, opset, 1e-5, 1e-4, "the block on the cpu backend");
        xf_graph_free(orig);
        xf_graph_free(g);
    }
}
END_TEST

/* ------------------------------------------------------------ other forms */

/* x [2, 3, 4, 5] through Transpose(perm) then op; one graph per form. */
typedef enum form {
    F_PAIR_CANCELS,    /* T(p), T(p^-1) from the input to the output: one stays, as an Identity would */
    F_PAIR_COMPOSES,   /* T(0231), T(0213): one T(0321) */
    F_REVERSE_PAIR,    /* two Transposes without perm (reversing) */
    F_PAD_ATTR,        /* opset 2's Pad (pads an attribute), edge mode, then back */
    F_REDUCE_KEEP,     /* ReduceSum over axes given as an input, dims kept, then back */
    F_REDUCE_ALL,      /* ReduceMax over every axis (no axes), dims dropped */
    F_REDUCE_DROP,     /* ReduceMean over H of NHWC, dims dropped: a T(021) after; and a Relu back to NCHW */
    F_WHERE,           /* Where(constant condition [3], T(x), T(y)), then back */
    F_SUM_INSERTS,     /* Sum(T(x), z, T(y)), z [2, 4, 5, 3] not transposed: z gets T(p^-1) */
    F_FORMS
} form;

static const char *const form_names[F_FORMS] = {"a cancelling pair", "a composing pair", "two reversing Transposes",
                                                "opset 2's Pad",     "ReduceSum keeping dims", "ReduceMax of all",
                                                "ReduceMean dropping H",
                                                "Where",             "Sum with an untransposed value"};

static xf_graph *form_graph(form f, int64_t *opset)
{
    xf_graph *g = xf_graph_create("form");
    int x = input(g, "x", XF_DT_FLOAT, SHAPE(2, 3, 4, 5)), y = -1, out;
    *opset = f == F_PAD_ATTR ? 2 : 18;
    if (f == F_WHERE || f == F_SUM_INSERTS)
        y = input(g, "y", XF_DT_FLOAT, SHAPE(2, 3, 4, 5));
    switch (f) {
    case F_PAIR_CANCELS:
        out = transpose(g, transpose(g, x, TO_NHWC, 4), TO_NCHW, 4);
        break;
    case F_PAIR_COMPOSES:
        out = transpose(g, transpose(g, x, TO_NHWC, 4), (const int64_t[]){0, 2, 1, 3}, 4);
        break;
    case F_REVERSE_PAIR:
        out = out0(g, NODE(g, XF_OP_TRANSPOSE, out0(g, NODE(g, XF_OP_TRANSPOSE, x))));
        out = out0(g, NODE(g, XF_OP_SIGMOID, out));
        break;
    case F_PAD_ATTR: {
        int p = NODE(g, XF_OP_PAD, transpose(g, x, TO_NHWC, 4));
        xf_attrs *a = attrs(g, p);
        a->has_pads = true;
        a->n_pads = 8;
        memcpy(a->pad_pads, (const int64_t[]){0, 1, 2, 0, 0, 2, 0, 1}, sizeof(int64_t) * 8);
        a->pad_mode = XF_PAD_EDGE;
        out = transpose(g, out0(g, p), TO_NCHW, 4);
        break;
    }
    case F_REDUCE_KEEP: {
        int r = NODE(g, XF_OP_REDUCE_SUM, transpose(g, x, TO_NHWC, 4), CONST_I64(g, -1, 1));
        out = transpose(g, out0(g, r), TO_NCHW, 4);
        break;
    }
    case F_REDUCE_ALL: {
        int r = NODE(g, XF_OP_REDUCE_MAX, transpose(g, x, TO_NHWC, 4));
        attrs(g, r)->keepdims = 0;
        out = out0(g, r);
        break;
    }
    case F_REDUCE_DROP: {
        int t = transpose(g, x, TO_NHWC, 4), r = NODE(g, XF_OP_REDUCE_MEAN, t, CONST_I64(g, 1));
        attrs(g, r)->keepdims = 0;
        out = out0(g, r);
        xf_graph_add_output(g, out);
        out = transpose(g, out0(g, NODE(g, XF_OP_RELU, t)), TO_NCHW, 4);
        break;
    }
    case F_WHERE: {
        const uint8_t cond[3] = {1, 0, 1};
        int w = NODE(g, XF_OP_WHERE, constant(g, NULL, XF_DT_BOOL, SHAPE(3), cond), transpose(g, x, TO_NHWC, 4),
                     transpose(g, y, TO_NHWC, 4));
        out = transpose(g, out0(g, w), TO_NCHW, 4);
        break;
    }
    default: {
        int z = input(g, "z", XF_DT_FLOAT, SHAPE(2, 4, 5, 3));
        int sum = NODE(g, XF_OP_SUM, transpose(g, x, TO_NHWC, 4), z, transpose(g, y, TO_NHWC, 4));
        out = transpose(g, out0(g, sum), TO_NCHW, 4);
        break;
    }
    }
    xf_graph_add_output(g, out);
    infer_ok(g, *opset);
    return g;
}

/* Transposes left by each form, and what they are. */
START_TEST(other_forms)
{
    const int left[F_FORMS] = {1, 1, 0, 0, 0, 0, 1, 0, 1};
    for (int f = 0; f < F_FORMS; f++) {
        int64_t opset;
        xf_graph *orig = form_graph((form)f, &opset), *g = form_graph((form)f, &opset);
        int before = count_op(g, XF_OP_TRANSPOSE);
        xf_canon_stats st = push_ok(g, opset);
        ck_assert_msg(count_op(g, XF_OP_TRANSPOSE) == left[f], "%s: %d Transposes left", form_names[f],
                      count_op(g, XF_OP_TRANSPOSE));
        ck_assert_int_eq(st.removed_transposes, before - left[f]);
        ck_assert_str_eq(g->values[g->outputs[0]].name, orig->values[orig->outputs[0]].name);
        ck_assert(xf_shape_equal(&g->values[g->outputs[0]].shape, &orig->values[orig->outputs[0]].shape));
        if (f == F_PAIR_COMPOSES) {
            const xf_node *t = producer(g, g->outputs[0]);
            ck_assert_int_eq(t->inputs[0], g->inputs[0]);
            const int64_t want[] = {0, 3, 2, 1}; /* 0213 after 0231 */
            for (int k = 0; k < 4; k++)
                ck_assert_int_eq(t->attrs.perm[k], want[k]);
        }
        if (f == F_REDUCE_DROP) { /* [2, 5, 3] from the mean's [2, 3, 5] */
            const xf_node *t = producer(g, g->outputs[0]);
            ck_assert_int_eq(t->op, XF_OP_TRANSPOSE);
            ck_assert(t->attrs.perm[0] == 0 && t->attrs.perm[1] == 2 && t->attrs.perm[2] == 1);
            expect_shape(g, t->inputs[0], SHAPE(2, 3, 5));
        }
        if (f == F_SUM_INSERTS) /* the one left reads z, and the Sum writes the output */
            ck_assert_int_eq(producer(g, producer(g, g->outputs[0])->inputs[1])->inputs[0], g->inputs[2]);
        same_function(orig, g, opset, false, form_names[f]);
        xf_graph_free(orig);
        xf_graph_free(g);
    }
}
END_TEST

/* Graphs the pass cannot improve stay as they are: a Transpose before a
 * Reshape, before an Add of an untransposed value, before a graph output
 * only, and one that a Relu and a MatMul read (moving it past the Relu
 * would leave two).  And before opset 7 (a broadcast attribute) no Add is
 * moved through, not even the Add of one value to itself. */
START_TEST(left_alone)
{
    for (int c = 0; c < 5; c++) {
        xf_graph *g = xf_graph_create("alone");
        int64_t opset = c == 4 ? 6 : 13;
        int x = input(g, "x", XF_DT_FLOAT, SHAPE(2, 3, 4, 5)), t = transpose(g, x, TO_NHWC, 4);
        switch (c) {
        case 0:
            xf_graph_add_output(g, out0(g, NODE(g, XF_OP_RESHAPE, t, CONST_I64(g, 2, -1))));
            break;
        case 1:
            xf_graph_add_output(g, out0(g, NODE(g, XF_OP_ADD, t, input(g, "y", XF_DT_FLOAT, SHAPE(2, 4, 5, 3)))));
            break;
        case 2:
            xf_graph_add_output(g, t);
            break;
        case 3:
            xf_graph_add_output(g, out0(g, NODE(g, XF_OP_RELU, t)));
            xf_graph_add_output(g, out0(g, NODE(g, XF_OP_MATMUL, t, xf_bt_random_const(g, SHAPE(3, 2), false))));
            break;
        default:
            xf_graph_add_output(g, transpose(g, out0(g, NODE(g, XF_OP_ADD, t, t)), TO_NCHW, 4));
            break;
        }
        infer_ok(g, opset);
        uint64_t before = xf_graph_hash(g);
        int nodes = g->n_nodes;
        xf_canon_stats st = push_ok(g, opset);
        ck_assert_msg(st.removed_transposes == 0 && g->n_nodes == nodes && xf_graph_hash(g) == before,
                      "case %d changed", c);
        xf_graph_free(g);
    }
}
END_TEST

/* ------------------------------------------------------------ quantized ops */

static int f32_scalar(xf_graph *g, float v) { return xf_bt_scalar(g, v, 0); }

static int u8_scalar(xf_graph *g, uint8_t v) { return constant(g, NULL, XF_DT_UINT8, SCALAR, &v); }

/* What ONNX Runtime's channels-last quantized forms leave between its ops,
 * once they are made standard: x and y [1, 4, 5, 6] quantized, into NHWC,
 * QLinearAdd, QLinearLeakyRelu, a QLinearConcat with x along the channels,
 * then a channels-last QLinearGlobalAveragePool dequantized ("pooled") and
 * the Concat back in NCHW dequantized ("image").  Every Transpose cancels
 * but the one the pooled output keeps (NHWC, before its
 * DequantizeLinear), and the rewritten graph
 * computes what the graph as given does, exactly. */
START_TEST(quantized_ops)
{
    xf_graph *g = xf_graph_create("quantized"), *orig;
    int x = input(g, "x", XF_DT_FLOAT, SHAPE(1, 4, 5, 6)), y = input(g, "y", XF_DT_FLOAT, SHAPE(1, 4, 5, 6));
    int sx = f32_scalar(g, 0.02f), zx = u8_scalar(g, 128), sy = f32_scalar(g, 0.03f), zy = u8_scalar(g, 120);
    int sa = f32_scalar(g, 0.04f), za = u8_scalar(g, 100), sl = f32_scalar(g, 0.035f), zl = u8_scalar(g, 90);
    int sc = f32_scalar(g, 0.05f), zc = u8_scalar(g, 110), sp = f32_scalar(g, 0.01f), zp = u8_scalar(g, 128);
    int tx = transpose(g, out0(g, NODE(g, XF_OP_QUANTIZE_LINEAR, x, sx, zx)), TO_NHWC, 4);
    int ty = transpose(g, out0(g, NODE(g, XF_OP_QUANTIZE_LINEAR, y, sy, zy)), TO_NHWC, 4);
    int add = out0(g, NODE(g, XF_OP_MS_QLINEAR_ADD, tx, sx, zx, ty, sy, zy, sa, za));
    int lr = NODE(g, XF_OP_MS_QLINEAR_LEAKY_RELU, add, sa, za, sl, zl);
    attrs(g, lr)->alpha = 0.1f;
    int cat = NODE(g, XF_OP_MS_QLINEAR_CONCAT, sc, zc, out0(g, lr), sl, zl, tx, sx, zx);
    attrs(g, cat)->axis = 3;
    int gap = NODE(g, XF_OP_MS_QLINEAR_GLOBAL_AVERAGE_POOL, out0(g, cat), sc, zc, sp, zp);
    attrs(g, gap)->channels_last = 1;
    int pooled = out0(g, NODE(g, XF_OP_DEQUANTIZE_LINEAR, out0(g, gap), sp, zp));
    int image = out0(g, NODE(g, XF_OP_DEQUANTIZE_LINEAR, transpose(g, out0(g, cat), TO_NCHW, 4), sc, zc));
    xf_graph_add_output(g, pooled);
    xf_graph_add_output(g, image);
    infer_ok(g, 17);
    expect_shape(g, pooled, SHAPE(1, 1, 1, 8));
    orig = xf_graph_clone(g);
    xf_canon_stats st = push_ok(g, 17);
    ck_assert_int_eq(count_op(g, XF_OP_TRANSPOSE), 1);
    ck_assert_int_eq(st.removed_transposes, 2);
    const xf_node *dq = producer(g, g->outputs[0]), *t = producer(g, dq->inputs[0]);
    ck_assert(dq->op == XF_OP_DEQUANTIZE_LINEAR && t->op == XF_OP_TRANSPOSE);
    ck_assert_int_eq(producer(g, t->inputs[0])->op, XF_OP_MS_QLINEAR_GLOBAL_AVERAGE_POOL);
    ck_assert_int_eq(producer(g, t->inputs[0])->attrs.channels_last, 0);
    expect_shape(g, g->outputs[0], SHAPE(1, 1, 1, 8));
    same_function(orig, g, 17, false, "quantized ops");
    xf_graph_free(g);
    xf_graph_free(orig);

    /* a DequantizeLinear is not moved through (here a Transpose of 8-bit
     * data would move to float), nor is a pool whose channels the
     * Transpose does not move first to last or back */
    for (int c = 0; c < 2; c++) {
        g = xf_graph_create("left");
        int q = input(g, "q", XF_DT_UINT8, SHAPE(1, 5, 6, 4)), v;
        if (c == 0) {
            float scales[4] = {0.1f, 0.2f, 0.3f, 0.4f};
            uint8_t zeros[4] = {1, 2, 3, 4};
            int dq =
                NODE(g, XF_OP_DEQUANTIZE_LINEAR, transpose(g, q, TO_NCHW, 4),
                     constant(g, NULL, XF_DT_FLOAT, SHAPE(4), scales), constant(g, NULL, XF_DT_UINT8, SHAPE(4), zeros));
            attrs(g, dq)->axis = 1;
            v = out0(g, dq);
        } else {
            int s1 = f32_scalar(g, 0.01f), z1 = u8_scalar(g, 128);
            v = out0(g, NODE(g, XF_OP_MS_QLINEAR_GLOBAL_AVERAGE_POOL, transpose(g, q, TO_NHWC, 4), s1, z1, s1, z1));
        }
        xf_graph_add_output(g, transpose(g, v, c == 0 ? TO_NHWC : TO_NCHW, 4));
        infer_ok(g, 17);
        uint64_t before = xf_graph_hash(g);
        st = push_ok(g, 17);
        ck_assert_msg(st.removed_transposes == 0 && xf_graph_hash(g) == before, "case %d moved", c);
        xf_graph_free(g);
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("canon_transpose");
    TCase *tc = tcase_create("transposes");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, tensorflow_block);
    tcase_add_test(tc, other_forms);
    tcase_add_test(tc, left_alone);
    tcase_add_test(tc, quantized_ops);
    suite_add_tcase(s, tc);
    return xf_test_run_suite(s);
}
