/* A Pad of zeros folded into every node that reads it (core/canon.c's
 * fold_pads) beyond a single Conv or AveragePool: a MaxPool of elements
 * that are never negative (after Relu, Sigmoid, a Clip at 0 or more, or a
 * Conv with Relu fused), whose zeros then never win, and a Pad read by
 * several nodes (RT-DETR's stem: one Pad before a Conv and a MaxPool;
 * Keras' ResNet: a Pad before its first MaxPool).  The folded graph
 * computes what the Pad and its readers did (against the same graph with
 * the Pad's output exported, which keeps it), on cpu_ref and on cpu; every
 * near miss keeps the Pad. */
#include "backend_util.h"
#include "core_builders.h"
#include "xf_runtime.h"
#include "xf_test_util.h"

#include <check.h>
#include <stdio.h>

enum { SRC_INPUT, SRC_RELU, SRC_CLIP0, SRC_CLIP_NEG, SRC_CONV_RELU, SRC_SIGMOID };
enum { R_MAXPOOL, R_CONV, R_ADD };

typedef struct {
    const char *what;
    int source;           /* what the Pad reads: SRC_* */
    int readers[2];       /* R_*; -1: none */
    int64_t pads[8];      /* the Pad's, [x1_begin, ..., x4_end] */
    int64_t kernel, stride, own_pad, dilation;
    int ceil_mode;
    bool indices;         /* the MaxPool gives its Indices output too */
    bool folds;
} fold_case;

/* x [1, 4, 9, 8] -> source -> Pad -> readers; every reader's output a
 * graph output, and the Pad's too when export_pad (which keeps it). */
static xf_graph *fold_graph(const fold_case *c, bool export_pad)
{
    xf_graph *g = xf_graph_create("fold_pads");
    int x = xf_bt_input(g, XF_DT_FLOAT, SHAPE(1, 4, 9, 8)), src = x;
    float lo = c->source == SRC_CLIP0 ? 0.0f : -1.0f, hi = 6.0f;
    switch (c->source) {
    case SRC_RELU: src = out0(g, NODE(g, XF_OP_RELU, x)); break;
    case SRC_SIGMOID: src = out0(g, NODE(g, XF_OP_SIGMOID, x)); break;
    case SRC_CLIP0:
    case SRC_CLIP_NEG:
        src = out0(g, NODE(g, XF_OP_CLIP, x, constant(g, NULL, XF_DT_FLOAT, SCALAR, &lo),
                           constant(g, NULL, XF_DT_FLOAT, SCALAR, &hi)));
        break;
    case SRC_CONV_RELU: src = xf_bt_conv(g, x, 4, 4, 3, 1, XF_ACT_RELU); break;
    default: break;
    }
    float zero = 0;
    int p = out0(g, NODE(g, XF_OP_PAD, src, constant(g, NULL, XF_DT_INT64, SHAPE(8), c->pads),
                         constant(g, NULL, XF_DT_FLOAT, SCALAR, &zero)));
    for (int k = 0; k < 2 && c->readers[k] >= 0; k++) {
        int r;
        if (c->readers[k] == R_ADD) {
            r = NODE(g, XF_OP_ADD, p, p);
        } else if (c->readers[k] == R_CONV) {
            r = NODE(g, XF_OP_CONV, p, xf_bt_random_const(g, SHAPE(3, 4, 3, 3), false));
            xf_bt_set_window(attrs(g, r), 2, (int64_t[]){3, 3}, (int64_t[]){2, 2}, (int64_t[]){0, 0},
                             (int64_t[]){0, 0}, (int64_t[]){1, 1});
        } else {
            r = node(g, XF_OP_MAX_POOL, NULL, 1, &p, c->indices ? 2 : 1);
            int64_t k2[2] = {c->kernel, c->kernel}, s2[2] = {c->stride, c->stride}, p2[2] = {c->own_pad, c->own_pad};
            int64_t d2[2] = {c->dilation, c->dilation};
            xf_bt_set_window(attrs(g, r), 2, k2, s2, p2, p2, d2);
            attrs(g, r)->ceil_mode = c->ceil_mode;
        }
        for (int o = 0; o < g->nodes[r].n_outputs; o++)
            xf_graph_add_output(g, g->nodes[r].outputs[o]);
    }
    if (export_pad)
        xf_graph_add_output(g, p);
    return g;
}

static int count_op(const xf_graph *g, xf_op op)
{
    int n = 0;
    for (int i = 0; i < g->n_nodes; i++)
        n += g->nodes[i].op == op;
    return n;
}

/* The pass on its own (after shape inference, as xflowc and sessions run
 * it): the Pad goes or stays, its pads added to every MaxPool's own. */
static void check_pass(const fold_case *c)
{
    xf_graph *g = fold_graph(c, false);
    xf_canon_stats st = {0};
    xf_error e = {0};
    ck_assert_msg(xf_graph_infer_shapes(g, 18, &e) == XF_OK, "%s: %s", c->what, e.msg);
    ck_assert_msg(xf_pass_fold_pads(g, 18, &st, &e) == XF_OK, "%s: %s", c->what, e.msg);
    ck_assert_msg(st.folded_pads == (c->folds ? 1 : 0), "%s: %d folded", c->what, st.folded_pads);
    ck_assert_int_eq(count_op(g, XF_OP_PAD), c->folds ? 0 : 1);
    for (int i = 0; i < g->n_nodes; i++) {
        const xf_attrs *a = &g->nodes[i].attrs;
        if (g->nodes[i].op != XF_OP_MAX_POOL)
            continue;
        for (int k = 0; k < 2; k++) {
            ck_assert_int_eq(a->pads[k], c->own_pad + (c->folds ? c->pads[2 + k] : 0));
            ck_assert_int_eq(a->pads[2 + k], c->own_pad + (c->folds ? c->pads[6 + k] : 0));
        }
    }
    xf_graph_free(g);
}

/* Sessions (which fold as xflowc does) against the graph that keeps the
 * Pad, on the same random input. */
static void check_values(const fold_case *c, const char *backend)
{
    xf_graph *folded = fold_graph(c, false), *kept = fold_graph(c, true);
    xf_shape xs = SHAPE(1, 4, 9, 8);
    xf_tensor *in = xf_tensor_random(XF_DT_FLOAT, &xs, 5), *got[4] = {NULL}, *want[4] = {NULL};
    xf_session *s1 = NULL, *s2 = NULL;
    xf_error e = {0};
    ck_assert_msg(xf_session_create(folded, 18, backend, NULL, &s1, &e) == XF_OK, "%s: %s", c->what, e.msg);
    ck_assert_msg(xf_session_create(kept, 18, backend, NULL, &s2, &e) == XF_OK, "%s: %s", c->what, e.msg);
    ck_assert_int_eq(count_op(xf_session_graph(s1), XF_OP_PAD), c->folds ? 0 : 1);
    ck_assert_int_eq(count_op(xf_session_graph(s2), XF_OP_PAD), 1);
    ck_assert_msg(xf_session_run(s1, &in, got, &e) == XF_OK, "%s: %s", c->what, e.msg);
    ck_assert_msg(xf_session_run(s2, &in, want, &e) == XF_OK, "%s: %s", c->what, e.msg);
    for (int k = 0; k < folded->n_outputs; k++) {
        double max_abs = 0, max_rel = 0;
        bool ok = false;
        ck_assert(xf_tensor_compare(got[k], want[k], 1e-5, 1e-5, &max_abs, &max_rel, &ok, &e) == XF_OK);
        ck_assert_msg(ok, "%s on %s: output %d differs by %g", c->what, backend, k, max_abs);
    }
    for (int k = 0; k < 4; k++) {
        xf_tensor_release(got[k]);
        xf_tensor_release(want[k]);
    }
    xf_tensor_release(in);
    xf_session_free(s1);
    xf_session_free(s2);
    xf_graph_free(folded);
    xf_graph_free(kept);
}

static const fold_case cases[] = {
    /* RT-DETR's stem: pads at the ends, a 2 x 2 window of stride 1 */
    {"Relu, MaxPool 2x2", SRC_RELU, {R_MAXPOOL, -1}, {0, 0, 0, 0, 0, 0, 1, 1}, 2, 1, 0, 1, 0, false, true},
    {"Relu, a Conv and a MaxPool", SRC_RELU, {R_CONV, R_MAXPOOL}, {0, 0, 0, 0, 0, 0, 1, 1}, 2, 1, 0, 1, 0, false,
     true},
    /* ceil_mode adding no window: at stride 1 (RT-DETR's), or where the stride divides the travel (9 + 2 - 3
     * and 8 + 1 - 3 by 2) */
    {"ceil_mode at stride 1", SRC_RELU, {R_CONV, R_MAXPOOL}, {0, 0, 0, 0, 0, 0, 1, 1}, 2, 1, 0, 1, 1, false, true},
    {"ceil_mode, the stride dividing", SRC_RELU, {R_MAXPOOL, -1}, {0, 0, 1, 1, 0, 0, 1, 0}, 3, 2, 0, 1, 1, false,
     true},
    /* Keras' ResNet: pads of 1, a 3 x 3 window of stride 2 */
    {"Conv with Relu, MaxPool 3x3", SRC_CONV_RELU, {R_MAXPOOL, -1}, {0, 0, 1, 1, 0, 0, 1, 1}, 3, 2, 0, 1, 0, false,
     true},
    {"Clip at 0, MaxPool with pads of its own", SRC_CLIP0, {R_MAXPOOL, -1}, {0, 0, 1, 0, 0, 0, 0, 1}, 3, 1, 1, 1, 0,
     false, true},
    {"Sigmoid, MaxPool", SRC_SIGMOID, {R_MAXPOOL, -1}, {0, 0, 2, 1, 0, 0, 1, 2}, 3, 2, 0, 1, 0, false, true},
    /* near misses */
    {"a graph input", SRC_INPUT, {R_MAXPOOL, -1}, {0, 0, 1, 1, 0, 0, 1, 1}, 3, 2, 0, 1, 0, false, false},
    {"Clip at -1", SRC_CLIP_NEG, {R_MAXPOOL, -1}, {0, 0, 1, 1, 0, 0, 1, 1}, 3, 2, 0, 1, 0, false, false},
    {"a reader that cannot take pads", SRC_RELU, {R_CONV, R_ADD}, {0, 0, 1, 1, 0, 0, 1, 1}, 3, 2, 0, 1, 0, false,
     false},
    {"a window all pads", SRC_RELU, {R_MAXPOOL, -1}, {0, 0, 2, 0, 0, 0, 0, 0}, 2, 1, 0, 1, 0, false, false},
    {"ceil_mode adding a window (8 + 2 - 3 by 2)", SRC_RELU, {R_MAXPOOL, -1}, {0, 0, 1, 1, 0, 0, 1, 1}, 3, 2, 0, 1,
     1, false, false},
    {"dilated", SRC_RELU, {R_MAXPOOL, -1}, {0, 0, 1, 1, 0, 0, 1, 1}, 2, 1, 0, 2, 0, false, false},
    {"Indices", SRC_RELU, {R_MAXPOOL, -1}, {0, 0, 1, 1, 0, 0, 1, 1}, 3, 2, 0, 1, 0, true, false},
};

START_TEST(folds_and_near_misses)
{
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        check_pass(&cases[i]);
        check_values(&cases[i], "cpu_ref");
        if (xf_backend_find("cpu"))
            check_values(&cases[i], "cpu");
    }
    if (!xf_backend_find("cpu"))
        printf("skipped: this build has no oneDNN, so no cpu backend (cpu_ref checked)\n");
}
END_TEST

int main(void)
{
    Suite *s = suite_create("fold_pads");
    TCase *tc = tcase_create("fold_pads");
    tcase_add_test(tc, folds_and_near_misses);
    suite_add_tcase(s, tc);
    return xf_test_run_suite(s);
}
