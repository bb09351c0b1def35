/* Check suite for constant folding with the runtime's evaluator: the
 * shape chains PyTorch exports, the size limit, and sessions' folding of
 * results no larger than the constants they read, integer weights cast
 * to float, and any result up to 1 MiB. */
#include "core_builders.h"
#include "xf_runtime.h"
#include "xf_test_util.h"

#include <check.h>

static void canon_ok(xf_status st, const xf_error *e) { ck_assert_msg(st == XF_OK, "pass failed: %s", e->msg); }

START_TEST(canon_fold_shape_chain)
{
    /* PyTorch's x.view(x.size(0), -1):
     * Shape -> Gather -> Unsqueeze -> Concat -> Reshape. */
    xf_graph *g = xf_graph_create("g");
    int x = input(g, "x", XF_DT_FLOAT, SHAPE(2, 3, 4, 5));
    int shape = NODE(g, XF_OP_SHAPE, x);
    int batch = NODE(g, XF_OP_GATHER, out0(g, shape), scalar_i64(g, 0));
    int unsq = NODE(g, XF_OP_UNSQUEEZE, out0(g, batch), CONST_I64(g, 0));
    int cat = NODE(g, XF_OP_CONCAT, out0(g, unsq), CONST_I64(g, -1));
    int y = xf_graph_add_value(g, "y", XF_DT_UNDEFINED, NULL);
    xf_graph_add_node(g, XF_OP_RESHAPE, "view", 2, (int[]){x, out0(g, cat)}, 1, &y);
    xf_graph_add_output(g, y);
    infer_ok(g, 13);
    ck_assert_int_eq(g->values[y].shape.ndim, -1); /* data-dependent: unknown until folded */

    xf_canon_stats st = {0};
    xf_error e = {0};
    canon_ok(xf_pass_fold_constants(g, 13, xf_runtime_eval_node, 1 << 20, &st, &e), &e);
    validate_ok(g);
    ck_assert_int_eq(st.folded_constants, 4);
    ck_assert_int_eq(st.removed_initializers, 3); /* the index, the axes and the -1 */
    ck_assert_int_eq(g->n_nodes, 1);
    ck_assert_int_eq(g->nodes[0].op, XF_OP_RESHAPE);
    const xf_tensor *t = g->values[g->nodes[0].inputs[1]].init;
    ck_assert_ptr_nonnull(t);
    ck_assert_int_eq(xf_tensor_numel(t), 2);
    ck_assert_int_eq(xf_tensor_get_i64(t, 0), 2);
    ck_assert_int_eq(xf_tensor_get_i64(t, 1), -1);
    y = xf_graph_find_value(g, "y");
    ck_assert_int_eq(g->outputs[0], y);
    expect_shape(g, y, SHAPE(2, 60));
    xf_graph_free(g);
}
END_TEST

START_TEST(canon_fold_limits)
{
    xf_graph *g = xf_graph_create("g");
    float one = 1;
    int c = constant(g, "c", XF_DT_FLOAT, SCALAR, &one);
    int out = NODE(g, XF_OP_ADD, c, c); /* a graph output: stays produced by a node */
    xf_graph_add_output(g, out0(g, out));
    int big = NODE(g, XF_OP_CONSTANT_OF_SHAPE, CONST_I64(g, 1000));
    int cast = NODE(g, XF_OP_CAST, out0(g, big));
    attrs(g, cast)->to = XF_DT_INT8;
    xf_graph_add_output(g, out0(g, cast));
    int x = input(g, "x", XF_DT_FLOAT, SHAPE(2));
    int custom = xf_graph_add_node(g, XF_OP_OPAQUE, "custom", 1, &c, 1,
                                   (int[]){xf_graph_add_value(g, "o", XF_DT_FLOAT, &SCALAR)});
    g->nodes[custom].opaque = xf_opaque_create("MyOp", "my.domain", NULL, 0);
    int add = NODE(g, XF_OP_ADD, x, out0(g, custom));
    xf_graph_add_output(g, out0(g, add));
    infer_ok(g, 17);
    xf_canon_stats st = {0};
    xf_error e = {0};
    /* 4000 bytes of ConstantOfShape exceed the limit; the Cast's 1000 do not
     * but its input is not constant then. */
    canon_ok(xf_pass_fold_constants(g, 17, xf_runtime_eval_node, 3999, &st, &e), &e);
    ck_assert_int_eq(st.folded_constants, 0);
    ck_assert_int_eq(g->n_nodes, 5);
    canon_ok(xf_pass_fold_constants(g, 17, xf_runtime_eval_node, 4000, &st, &e), &e);
    ck_assert_int_eq(st.folded_constants, 1); /* ConstantOfShape; the Cast is an output */
    ck_assert_int_eq(g->n_nodes, 4);
    validate_ok(g);
    xf_graph_free(g);
}
END_TEST

/* g's shapes inferred, then folded within 4000 bytes, as sessions fold
 * (bounded) or plainly. */
static xf_canon_stats fold_within(xf_graph *g, bool bounded)
{
    infer_ok(g, 17);
    xf_canon_stats st = {0};
    xf_error e = {0};
    canon_ok(bounded ? xf_pass_fold_constants_bounded(g, 17, xf_runtime_eval_node, 4000, &st, &e)
                     : xf_pass_fold_constants(g, 17, xf_runtime_eval_node, 4000, &st, &e),
             &e);
    return st;
}

/* Sessions' folding (xf_pass_fold_constants_bounded) folds past its limit
 * the nodes whose results are no larger than the constants they read: a
 * Slice and a Concat of 8000-byte weights (as paddle2onnx reorders an
 * LSTM's gates), not a Tile that doubles them, nor a Cast to double. */
START_TEST(canon_fold_within_inputs)
{
    static float w[2000];
    for (int i = 0; i < 2000; i++)
        w[i] = (float)i;
    for (int bounded = 0; bounded < 2; bounded++) {
        xf_graph *g = xf_graph_create("g");
        int c = constant(g, "w", XF_DT_FLOAT, SHAPE(2000), w), x = input(g, "x", XF_DT_FLOAT, SHAPE(1490));
        int part = NODE(g, XF_OP_SLICE, c, CONST_I64(g, 10), CONST_I64(g, 1500));
        int cat = NODE(g, XF_OP_CONCAT, out0(g, part), c);
        attrs(g, cat)->axis = 0;
        int tile = NODE(g, XF_OP_TILE, c, CONST_I64(g, 2));
        int wide = NODE(g, XF_OP_CAST, c);
        attrs(g, wide)->to = XF_DT_DOUBLE;
        xf_graph_add_output(g, out0(g, NODE(g, XF_OP_ADD, x, out0(g, part))));
        xf_graph_add_output(g, out0(g, NODE(g, XF_OP_CONCAT, out0(g, cat), out0(g, tile))));
        xf_graph_add_output(g, out0(g, NODE(g, XF_OP_CAST, out0(g, wide))));
        attrs(g, g->n_nodes - 1)->to = XF_DT_FLOAT;
        attrs(g, g->n_nodes - 2)->axis = 0;
        xf_canon_stats st = fold_within(g, bounded);
        /* the Slice (5960 bytes) and the Concat (13960 of 13960 read) fold;
         * the Tile (16000 of 8000) and the Cast (16000 of 8000) stay */
        ck_assert_int_eq(st.folded_constants, bounded ? 2 : 0);
        ck_assert_int_eq(g->n_nodes, bounded ? 5 : 7);
        for (int i = 0; i < g->n_nodes; i++)
            ck_assert(!bounded || (g->nodes[i].op != XF_OP_SLICE && g->nodes[i].op != XF_OP_CONCAT) ||
                      g->nodes[i].outputs[0] == g->outputs[1]);
        validate_ok(g);
        xf_graph_free(g);
    }
}
END_TEST

/* Weights stored as int8 and scaled in the graph (Cast to float, Mul by a
 * scale: a weight-only quantization written out) fold in sessions though
 * the float weights take four times the bytes, as ONNX Runtime folds them;
 * a Cast of them to double (eight times) stays, and plain folding within
 * its limit folds neither. */
START_TEST(canon_fold_integer_weights)
{
    static int8_t w[6000];
    for (int i = 0; i < 6000; i++)
        w[i] = (int8_t)(i % 255 - 127);
    float scale = 0.5f;
    for (int bounded = 0; bounded < 2; bounded++) {
        xf_graph *g = xf_graph_create("g");
        int c = constant(g, "w", XF_DT_INT8, SHAPE(6000), w), x = input(g, "x", XF_DT_FLOAT, SHAPE(6000));
        int wide = NODE(g, XF_OP_CAST, c);
        attrs(g, wide)->to = XF_DT_FLOAT;
        int scaled = NODE(g, XF_OP_MUL, out0(g, wide), constant(g, "s", XF_DT_FLOAT, SHAPE(1), &scale));
        int dbl = NODE(g, XF_OP_CAST, c);
        attrs(g, dbl)->to = XF_DT_DOUBLE;
        xf_graph_add_output(g, out0(g, NODE(g, XF_OP_ADD, x, out0(g, scaled))));
        xf_graph_add_output(g, out0(g, dbl));
        xf_canon_stats st = fold_within(g, bounded);
        ck_assert_int_eq(st.folded_constants, bounded ? 2 : 0); /* the Cast to float, then the Mul */
        ck_assert_int_eq(g->n_nodes, bounded ? 2 : 4);
        bool kept_double = false;
        for (int i = 0; i < g->n_nodes; i++)
            kept_double |= g->nodes[i].op == XF_OP_CAST && g->nodes[i].attrs.to == XF_DT_DOUBLE;
        ck_assert(kept_double);
        if (bounded) { /* the Add reads the scaled weights as a constant */
            const xf_tensor *t = xf_graph_constant(g, g->nodes[g->values[g->outputs[0]].producer].inputs[1]);
            ck_assert_ptr_nonnull(t);
            ck_assert_int_eq(t->dtype, XF_DT_FLOAT);
            ck_assert_float_eq(((const float *)t->data)[5], (float)(5 % 255 - 127) * 0.5f);
        }
        validate_ok(g);
        xf_graph_free(g);
    }
}
END_TEST

/* Sessions fold any constant result up to 1 MiB: a resampler's filter
 * taps, [rows, 500] computed from a Range of each side (80 times the bytes
 * they read at 160 rows), fold; at 600 rows (1.2 MB) they are computed at
 * each run.  Either way the outputs are the same. */
START_TEST(session_fold_mebibyte)
{
    static float cols[500], rows[600];
    for (int i = 0; i < 500; i++)
        cols[i] = (float)i * 0.25f;
    for (int i = 0; i < 600; i++)
        rows[i] = (float)i;
    const int64_t heights[] = {160, 600};
    for (int k = 0; k < 2; k++) {
        int64_t h = heights[k];
        xf_graph *g = xf_graph_create("g");
        int a = constant(g, "cols", XF_DT_FLOAT, SHAPE(500), cols);
        int b = constant(g, "rows", XF_DT_FLOAT, SHAPE(h, 1), rows);
        int x = input(g, "x", XF_DT_FLOAT, SHAPE(h, 500));
        int taps = NODE(g, XF_OP_ADD, b, a);
        int wave = NODE(g, XF_OP_SIN, out0(g, taps));
        xf_graph_add_output(g, out0(g, NODE(g, XF_OP_MUL, x, out0(g, wave))));
        infer_ok(g, 13);
        xf_session *s = NULL;
        xf_error e = {0};
        ck_assert_msg(xf_session_create(g, 13, "cpu_ref", NULL, &s, &e) == XF_OK, "%s", e.msg);
        ck_assert_int_eq(xf_session_graph(s)->n_nodes, h == 160 ? 1 : 3);
        xf_shape xs = SHAPE(h, 500);
        xf_tensor *in = xf_tensor_random(XF_DT_FLOAT, &xs, 7), *out[1] = {NULL};
        ck_assert_msg(xf_session_run(s, &in, out, &e) == XF_OK, "%s", e.msg);
        const float *xv = in->data, *yv = out[0]->data;
        for (int64_t i = 0; i < h * 500; i += 997)
            ck_assert_float_eq(yv[i], xv[i] * (float)sin((double)rows[i / 500] + (double)cols[i % 500]));
        xf_tensor_release(in);
        xf_tensor_release(out[0]);
        xf_session_free(s);
        xf_graph_free(g);
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("fold_constants");
    TCase *tc = tcase_create("fold");
    tcase_add_test(tc, canon_fold_shape_chain);
    tcase_add_test(tc, canon_fold_limits);
    tcase_add_test(tc, canon_fold_within_inputs);
    tcase_add_test(tc, canon_fold_integer_weights);
    tcase_add_test(tc, session_fold_mebibyte);
    suite_add_tcase(s, tc);
    return xf_test_run_suite(s);
}
