/* The `cpu` backend runs the forms detection and classification models
 * are made of on oneDNN's kernels, not on its reference implementation
 * (oneDNN's fallback for forms its kernels lack, 50 to 3000 times slower):
 * YOLO's bottleneck (a residual Add after a convolution with a SiLU),
 * a squeeze-and-excitation Mul, the DFL Softmax over a strided axis, a
 * ConvTranspose whose kernel is its stride, a Concat of a convolution's
 * output and a tensor stored plain, Concats of small plain pieces, binary
 * ops on a pooled map, a broadcast oneDNN lacks followed by a scale and a
 * BatchNormalization of a plain tensor, and 3x3 convolutions through
 * Winograd's transform (or directly, as a session may ask).  Each graph
 * is checked against cpu_ref, and every node's implementation
 * (xf_session_node_impl) is read back.  ctest runs the suite again with oneDNN held at AVX2,
 * where values are stored channel-blocked and the kernels take fewer
 * forms. */
#include "backend_util.h"
#include "core_builders.h"
#include "xf_runtime.h"
#include "xf_test_util.h"

#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int add_input(xf_graph *g, xf_shape s) { return xf_bt_input(g, XF_DT_FLOAT, s); }

/* x * Sigmoid(x), as exporters write SiLU. */
static int silu(xf_graph *g, int x) { return out0(g, NODE(g, XF_OP_MUL, x, out0(g, NODE(g, XF_OP_SIGMOID, x)))); }

/* Checks g against cpu_ref, then that no node of its static session runs
 * oneDNN's reference implementation; returns the implementation of the
 * session's (first) node of op `op` in impl. */
static void check_kernels(const xf_graph *g, const char *what, xf_op op, char *impl, size_t n)
{
    xf_bt_check_cpu(g, 17, 1e-4, 1e-3, what);
    xf_session *s = NULL;
    xf_error err = {0};
    ck_assert_msg(xf_session_create(g, 17, "cpu", NULL, &s, &err) == XF_OK, "%s: %s", what, err.msg);
    ck_assert(!xf_session_is_dynamic(s));
    const xf_graph *sg = xf_session_graph(s);
    impl[0] = '\0';
    bool found = false;
    for (int i = 0; i < sg->n_nodes; i++) {
        char got[128];
        xf_session_node_impl(s, i, got, sizeof got);
        ck_assert_msg(got[0], "%s: node %d (%s) has no implementation named", what, i, xf_op_name(sg->nodes[i].op));
        ck_assert_msg(strncmp(got, "ref:", 4) != 0, "%s: node %d (%s) runs oneDNN's reference implementation",
                      what, i, xf_op_name(sg->nodes[i].op));
        if (sg->nodes[i].op == op && !found) {
            snprintf(impl, n, "%s", got);
            found = true;
        }
    }
    ck_assert_msg(found, "%s: the session has no %s node", what, xf_op_name(op));
    xf_session_free(s);
}

/* YOLOv8's C2f bottleneck: y = a + SiLU(Conv(SiLU(Conv(a)))), a itself a
 * convolution's SiLU.  oneDNN's AVX2 and blocked kernels take the Add as
 * a sum post-op only before the SiLU, so there it stays a node of its own. */
START_TEST(residual_after_silu)
{
    if (!xf_bt_have_cpu())
        return;
    for (int c = 16; c <= 32; c += 16) {
        xf_graph *g = xf_graph_create("bottleneck");
        int x = add_input(g, SHAPE(1, c, 20, 18));
        int a = silu(g, xf_bt_conv(g, x, c, c, 1, 1, XF_ACT_NONE));
        int b = silu(g, xf_bt_conv(g, silu(g, xf_bt_conv(g, a, c, c, 3, 1, XF_ACT_NONE)), c, c, 3, 1, XF_ACT_NONE));
        int y = out0(g, NODE(g, XF_OP_ADD, a, b));
        xf_graph_add_output(g, xf_bt_conv(g, y, c, 8, 1, 1, XF_ACT_NONE));
        char impl[128], what[64];
        snprintf(what, sizeof what, "bottleneck of %d channels", c);
        check_kernels(g, what, XF_OP_ADD, impl, sizeof impl);
        ck_assert_msg(strncmp(impl, "folded into", 11) == 0 || strstr(impl, "jit") || strstr(impl, "brg"),
                      "%s: the Add runs as %s", what, impl);
        xf_graph_free(g);
    }
}
END_TEST

/* A squeeze-and-excitation block: the convolution's output times one
 * value per channel, computed from its pool. */
START_TEST(squeeze_excitation_mul)
{
    if (!xf_bt_have_cpu())
        return;
    xf_graph *g = xf_graph_create("se");
    int y = xf_bt_conv(g, add_input(g, SHAPE(1, 16, 12, 12)), 16, 48, 3, 1, XF_ACT_RELU);
    int pool = out0(g, NODE(g, XF_OP_GLOBAL_AVERAGE_POOL, y));
    int s = out0(g, NODE(g, XF_OP_SIGMOID, xf_bt_conv(g, pool, 48, 48, 1, 1, XF_ACT_NONE)));
    int z = out0(g, NODE(g, XF_OP_MUL, y, s));
    xf_graph_add_output(g, xf_bt_conv(g, z, 48, 16, 3, 1, XF_ACT_NONE));
    char impl[128];
    check_kernels(g, "squeeze-and-excitation", XF_OP_MUL, impl, sizeof impl);
    ck_assert_msg(strstr(impl, "jit"), "the scaling Mul runs as %s", impl);
    xf_graph_free(g);
}
END_TEST

/* A convolution along H alone, x [1, C, H, 1] and a [k, 1] kernel (a 1-D
 * convolution exported as 2-D: Magika's), with strides, dilations, pads
 * and groups along H and a stride across; then a second one after it
 * (the value between stored in the backend's layout) whose output the
 * first's is added to.  Each runs with H and W swapped (said in its
 * implementation); not one 2 wide. */
static int conv_h(xf_graph *g, int x, int64_t cin, int64_t cout, int64_t k, int64_t group, const int64_t *stride,
                  const int64_t *pad, int64_t dil, xf_activation act)
{
    int w = xf_bt_random_const(g, SHAPE(cout, cin / group, k, 1), false);
    int b = xf_bt_random_const(g, SHAPE(cout), false);
    int n = node(g, XF_OP_CONV, NULL, 3, (int[]){x, w, b}, 1);
    xf_bt_set_window(attrs(g, n), 2, NULL, stride, pad, pad + 2, (int64_t[]){dil, 1});
    attrs(g, n)->group = group;
    attrs(g, n)->activation = act;
    return out0(g, n);
}

START_TEST(conv_along_h)
{
    if (!xf_bt_have_cpu())
        return;
    static const int64_t one[] = {1, 1}, strided[] = {2, 3}, same[] = {2, 0, 2, 0}, uneven[] = {3, 0, 1, 0};
    for (int v = 0; v < 4; v++) {
        xf_graph *g = xf_graph_create("along_h");
        int64_t wide = v == 3 ? 2 : 1;
        int x = add_input(g, SHAPE(1, 16, 37, wide));
        int y;
        if (v == 0) {
            y = conv_h(g, x, 16, 24, 5, 1, one, same, 1, XF_ACT_RELU);
        } else if (v == 1) {
            y = conv_h(g, x, 16, 24, 3, 4, strided, uneven, 2, XF_ACT_NONE);
        } else {
            int a = conv_h(g, x, 16, 32, 5, 1, one, same, 1, XF_ACT_NONE);
            y = out0(g, NODE(g, XF_OP_ADD, a, conv_h(g, a, 32, 32, 5, 1, one, same, 1, XF_ACT_RELU)));
        }
        xf_graph_add_output(g, y);
        char impl[128], what[64];
        snprintf(what, sizeof what, "convolution along H, form %d", v);
        check_kernels(g, what, XF_OP_CONV, impl, sizeof impl);
        ck_assert_msg(v == 3 ? !strstr(impl, "H and W swapped") : strstr(impl, "; H and W swapped") != NULL, "%s: %s",
                      what, impl);
        xf_graph_free(g);
    }
}
END_TEST

/* Float ReduceSum and ReduceMean over one run of axes run on oneDNN's
 * reduction kernels (the run innermost, or made so by a reorder), axes
 * from the attribute or the input, with dims of 1 between, kept or not;
 * axes that are no run are reduced a run at a time (test_cpu_reduce), the
 * innermost first, here on oneDNN's kernel.
 * Global pools of plain values run on the same kernels, not oneDNN's plain
 * pooling loop (one of 1x1 on that loop, which takes it). */
START_TEST(reductions)
{
    if (!xf_bt_have_cpu())
        return;
    /* where: 0 oneDNN's kernel (the run innermost; with axes that are no
     * run, the first part), 1 the backend's own loop (test_cpu_reduce; a
     * run with dims after it, or one that reduces nothing) */
    static const struct {
        xf_op op;
        int64_t axes[3];
        int n_axes;
        bool attr, keep;
        int where;
    } cases[] = {
        {XF_OP_REDUCE_SUM, {3}, 1, false, true, 0},      {XF_OP_REDUCE_SUM, {1, 2}, 2, false, false, 1},
        {XF_OP_REDUCE_MEAN, {-1, -2}, 2, true, true, 0}, {XF_OP_REDUCE_MEAN, {0}, 1, true, false, 1},
        {XF_OP_REDUCE_SUM, {0}, 0, false, true, 0},      {XF_OP_REDUCE_SUM, {0, 3}, 2, false, true, 0},
        {XF_OP_REDUCE_MEAN, {1, 3}, 2, true, false, 0},  {XF_OP_REDUCE_SUM, {2}, 1, false, false, 1},
    };
    for (int i = 0; i < (int)(sizeof cases / sizeof *cases); i++) {
        xf_graph *g = xf_graph_create("reduce");
        /* [3, 17, 1, 40]: axes 1 and 3 are one run past the 1 */
        int n = xf_bt_reduce(g, cases[i].op, add_input(g, SHAPE(3, 17, 1, 40)), cases[i].axes, cases[i].n_axes,
                             !cases[i].attr, cases[i].keep);
        xf_graph_add_output(g, out0(g, n));
        char impl[128], what[64];
        snprintf(what, sizeof what, "reduction %d", i);
        check_kernels(g, what, cases[i].op, impl, sizeof impl);
        ck_assert_msg(cases[i].where == 0 ? strstr(impl, "jit") != NULL : strcmp(impl, "own loop") == 0, "%s: %s",
                      what, impl);
        xf_graph_free(g);
    }
    for (int form = 0; form < 3; form++) {
        xf_graph *g = xf_graph_create("pool");
        xf_op op = form == 1 ? XF_OP_GLOBAL_MAX_POOL : XF_OP_GLOBAL_AVERAGE_POOL;
        xf_graph_add_output(g,
                            out0(g, NODE(g, op, add_input(g, form == 2 ? SHAPE(2, 24, 1, 1) : SHAPE(2, 24, 33, 1)))));
        char impl[128];
        check_kernels(g, form == 1 ? "global max pool" : "global average pool", op, impl, sizeof impl);
        ck_assert_msg(form == 2 ? strstr(impl, "simple_nchw") != NULL : strstr(impl, "jit") != NULL, "%s", impl);
        xf_graph_free(g);
    }
}
END_TEST

/* Comparisons of floats, int32 and int64 (random ints in [0, 10), so
 * that equal ones come up), broadcast in every form a run takes (both
 * read in place, one element against a run on either side, strided), on
 * the backend's own loop, and their bool cast to float on oneDNN (a
 * one-hot matrix, Magika's). */
START_TEST(comparisons)
{
    if (!xf_bt_have_cpu())
        return;
    static const xf_op ops[] = {XF_OP_EQUAL, XF_OP_GREATER, XF_OP_LESS, XF_OP_GREATER_OR_EQUAL, XF_OP_LESS_OR_EQUAL};
    static const xf_dtype types[] = {XF_DT_FLOAT, XF_DT_INT32, XF_DT_INT64};
    for (int t = 0; t < 3; t++)
        for (int k = 0; k < 5; k++) {
            xf_graph *g = xf_graph_create("compare");
            int a = xf_bt_input(g, types[t], SHAPE(4, 3, 5)), b = xf_bt_input(g, types[t], SHAPE(4, 3, 5));
            int c = xf_bt_input(g, types[t], SHAPE(4, 1, 5)), d = xf_bt_input(g, types[t], SHAPE(4, 3, 1));
            int e = xf_bt_input(g, types[t], SHAPE(6, 1)), f = xf_bt_input(g, types[t], SHAPE(1, 7));
            int pairs[][2] = {{a, b}, {a, a}, {c, d}, {e, f}, {f, e}};
            for (int p = 0; p < 5; p++) {
                int y = out0(g, NODE(g, ops[k], pairs[p][0], pairs[p][1]));
                int cast = NODE(g, XF_OP_CAST, y);
                attrs(g, cast)->to = XF_DT_FLOAT;
                xf_graph_add_output(g, out0(g, cast));
            }
            char impl[128], what[64];
            snprintf(what, sizeof what, "%s of %s", xf_op_name(ops[k]), xf_dtype_name(types[t]));
            check_kernels(g, what, ops[k], impl, sizeof impl);
            ck_assert_msg(strcmp(impl, "own loop") == 0, "%s: %s", what, impl);
            check_kernels(g, what, XF_OP_CAST, impl, sizeof impl);
            ck_assert_msg(strstr(impl, "jit"), "%s: the Cast runs as %s", what, impl);
            xf_graph_free(g);
        }
}
END_TEST

/* Where of floats, int64, int32, int16 and bytes, in every form a run takes (all
 * read in place, one value against a run on either side or both, the
 * condition one value) and over the threads (2 x 64 x 100 x 100 against a
 * scalar), on the backend's own loop: exactly cpu_ref's. */
START_TEST(where_selects)
{
    if (!xf_bt_have_cpu())
        return;
    static const xf_dtype types[] = {XF_DT_FLOAT, XF_DT_INT64, XF_DT_INT32, XF_DT_INT16, XF_DT_UINT8};
    static const xf_shape forms[][3] = {
        {{3, {4, 3, 5}}, {3, {4, 3, 5}}, {3, {4, 3, 5}}},
        {{3, {4, 1, 5}}, {3, {4, 3, 5}}, {1, {1}}},
        {{3, {4, 3, 5}}, {1, {1}}, {2, {3, 5}}},
        {{1, {1}}, {3, {4, 3, 5}}, {3, {4, 1, 5}}},
        {{3, {4, 3, 1}}, {3, {1, 3, 5}}, {3, {4, 1, 1}}},
        {{4, {2, 64, 100, 100}}, {4, {2, 64, 100, 100}}, {1, {1}}},
        {{3, {4, 3, 5}}, {3, {4, 3, 1}}, {1, {1}}},
    };
    for (int t = 0; t < 5; t++)
        for (int f = 0; f < 7; f++) {
            xf_graph *g = xf_graph_create("where");
            int c = out0(g, NODE(g, XF_OP_LESS, add_input(g, forms[f][0]), xf_bt_scalar(g, 0.0f, 0)));
            int y = NODE(g, XF_OP_WHERE, c, xf_bt_input(g, types[t], forms[f][1]), xf_bt_input(g, types[t], forms[f][2]));
            xf_graph_add_output(g, out0(g, y));
            char impl[128], what[64];
            snprintf(what, sizeof what, "Where of %s, form %d", xf_dtype_name(types[t]), f);
            check_kernels(g, what, XF_OP_WHERE, impl, sizeof impl);
            ck_assert_msg(strcmp(impl, "own loop") == 0, "%s: %s", what, impl);
            xf_graph_free(g);
        }
}
END_TEST

/* PaddleOCR's convolutions: the bias an Add of one value per channel
 * after the Conv, and after the activation a learnable affine block, a
 * Mul by a scalar written first (a * x), then an Add of one (and here
 * a second scale).  The bias folds into the Conv's (with or without a
 * bias of its own, or of one value), the scales and the shift into one
 * linear post-op after the HardSwish; not the bias after a Conv with its own Relu, nor a
 * BatchNormalization after a folded bias (which then runs on its own,
 * with what follows folded into it). */
START_TEST(affine_blocks)
{
    if (!xf_bt_have_cpu())
        return;
    static const char *forms[] = {"bias per channel", "bias of one value", "Conv without bias", "Conv with Relu",
                                  "BatchNormalization after"};
    for (int t = 0; t < 5; t++) {
        xf_graph *g = xf_graph_create("affine");
        int x = add_input(g, SHAPE(1, 16, 12, 20));
        int w = xf_bt_random_const(g, SHAPE(32, 16, 3, 3), false);
        int conv_in[3] = {x, w, xf_bt_random_const(g, SHAPE(32), false)};
        int cn = node(g, XF_OP_CONV, "conv", t == 2 ? 2 : 3, conv_in, 1);
        xf_bt_set_window(attrs(g, cn), 2, NULL, (int64_t[]){1, 1}, (int64_t[]){1, 1}, (int64_t[]){1, 1},
                         (int64_t[]){1, 1});
        attrs(g, cn)->activation = t == 3 ? XF_ACT_RELU : XF_ACT_NONE;
        int bias = t == 1 ? xf_bt_scalar(g, 0.25f, 1) : xf_bt_random_const(g, SHAPE(1, 32, 1, 1), false);
        int y = out0(g, NODE(g, XF_OP_ADD, out0(g, cn), bias));
        if (t == 4) {
            int bn_in[5] = {y, xf_bt_random_const(g, SHAPE(32), true), xf_bt_random_const(g, SHAPE(32), false),
                            xf_bt_random_const(g, SHAPE(32), false), xf_bt_random_const(g, SHAPE(32), true)};
            int bn = node(g, XF_OP_BATCH_NORM, "bn", 5, bn_in, 1);
            xf_attrs_default(XF_OP_BATCH_NORM, attrs(g, bn));
            y = out0(g, bn);
        }
        y = out0(g, NODE(g, XF_OP_HARD_SWISH, y));
        y = out0(g, NODE(g, XF_OP_MUL, xf_bt_scalar(g, 0.8f, 1), y));
        y = out0(g, NODE(g, XF_OP_ADD, y, xf_bt_scalar(g, -0.3f, 1)));
        y = out0(g, NODE(g, XF_OP_MUL, y, xf_bt_scalar(g, 1.5f, 0)));
        xf_graph_add_output(g, xf_bt_conv(g, y, 32, 8, 1, 1, XF_ACT_NONE));
        char impl[128];
        check_kernels(g, forms[t], XF_OP_ADD, impl, sizeof impl);
        bool folded = !strncmp(impl, "folded into 'conv'", 18);
        ck_assert_msg(folded == (t != 3), "%s: the bias Add runs as %s", forms[t], impl);
        xf_bt_nth_node_impl(g, 17, XF_OP_MUL, 0, impl, sizeof impl);
        ck_assert_msg(t >= 3 || !strncmp(impl, "folded into 'conv'", 18), "%s: the scale runs as %s", forms[t], impl);
        xf_bt_nth_node_impl(g, 17, XF_OP_ADD, 1, impl, sizeof impl);
        ck_assert_msg(t >= 3 || !strncmp(impl, "folded into 'conv'", 18), "%s: the shift runs as %s", forms[t], impl);
        xf_bt_nth_node_impl(g, 17, XF_OP_MUL, 1, impl, sizeof impl);
        ck_assert_msg(t >= 3 || !strncmp(impl, "folded into 'conv'", 18), "%s: the scale after runs as %s", forms[t],
                      impl);
        if (t == 4) {
            xf_bt_nth_node_impl(g, 17, XF_OP_BATCH_NORM, 0, impl, sizeof impl);
            ck_assert_msg(strncmp(impl, "folded into 'conv'", 18) != 0, "the BatchNormalization runs as %s", impl);
        }
        xf_graph_free(g);
    }
}
END_TEST

/* YOLO's DFL: a Softmax over 16 bins that lie 4 x anchors apart in memory
 * (and the LogSoftmax of the same form). */
START_TEST(softmax_strided_axis)
{
    if (!xf_bt_have_cpu())
        return;
    for (int log = 0; log < 2; log++) {
        xf_op op = log ? XF_OP_LOG_SOFTMAX : XF_OP_SOFTMAX;
        xf_graph *g = xf_graph_create("dfl");
        int n = NODE(g, op, add_input(g, SHAPE(1, 16, 4, 210)));
        attrs(g, n)->axis = 1;
        xf_graph_add_output(g, out0(g, n));
        char impl[128];
        check_kernels(g, xf_op_name(op), op, impl, sizeof impl);
        ck_assert_msg(strstr(impl, "jit"), "%s runs as %s", xf_op_name(op), impl);
        xf_graph_free(g);
    }
}
END_TEST

/* YOLO's mask head upsamples by a ConvTranspose of kernel 2, stride 2:
 * a 1x1 convolution and a reorder, between convolutions (values stored
 * natively), and from a graph input to a graph output (plain: on AVX2 the
 * convolution's result is then channel-blocked, the output not). */
START_TEST(conv_transpose_as_conv)
{
    if (!xf_bt_have_cpu())
        return;
    for (int chain = 0; chain < 2; chain++) {
        xf_graph *g = xf_graph_create("upsample");
        int x = add_input(g, SHAPE(1, 16, 10, 9));
        int y = chain ? silu(g, xf_bt_conv(g, x, 16, 32, 3, 1, XF_ACT_NONE)) : x;
        int w = xf_bt_random_const(g, SHAPE(chain ? 32 : 16, 48, 2, 2), false);
        int n = NODE(g, XF_OP_CONV_TRANSPOSE, y, w, xf_bt_random_const(g, SHAPE(48), false));
        xf_bt_set_window(attrs(g, n), 2, NULL, (int64_t[]){2, 2}, (int64_t[]){0, 0}, (int64_t[]){0, 0},
                         (int64_t[]){1, 1});
        xf_graph_add_output(g, chain ? xf_bt_conv(g, silu(g, out0(g, n)), 48, 16, 3, 1, XF_ACT_NONE) : out0(g, n));
        char impl[128];
        const char *what = chain ? "upsampling ConvTranspose between Convs" : "upsampling ConvTranspose alone";
        check_kernels(g, what, XF_OP_CONV_TRANSPOSE, impl, sizeof impl);
        ck_assert_msg(strstr(impl, "1x1"), "%s runs as %s", what, impl);
        xf_graph_free(g);
    }
}
END_TEST

/* Binary ops on a pooled map, dims (1, C, 1, 1), stored natively: a Mul
 * by one constant value (TensorFlow's hard_sigmoid scale after the pool)
 * that cannot fold into the convolution before it (whose output another
 * node reads too), then an Add of two such maps. */
START_TEST(pooled_map_ops)
{
    if (!xf_bt_have_cpu())
        return;
    xf_graph *g = xf_graph_create("pooled");
    int y = xf_bt_conv(g, add_input(g, SHAPE(1, 16, 9, 9)), 16, 32, 3, 1, XF_ACT_RELU);
    int a = xf_bt_conv(g, out0(g, NODE(g, XF_OP_GLOBAL_AVERAGE_POOL, y)), 32, 48, 1, 1, XF_ACT_NONE);
    int m = out0(g, NODE(g, XF_OP_MUL, a, xf_bt_scalar(g, 0.25f, 0)));
    xf_graph_add_output(g, xf_bt_conv(g, out0(g, NODE(g, XF_OP_ADD, m, a)), 48, 16, 1, 1, XF_ACT_NONE));
    char impl[128];
    check_kernels(g, "pooled map", XF_OP_MUL, impl, sizeof impl);
    ck_assert_msg(strstr(impl, "jit") || strncmp(impl, "folded into", 11) == 0, "the Mul runs as %s", impl);
    xf_graph_free(g);
}
END_TEST

/* RT-DETR's deformable attention scales its sampling offsets by the
 * boxes' sizes, a broadcast over two middle dims, then by 0.5.  Seen as
 * [30, 96, 2] by [30, 1, 2] it runs on oneDNN's vector kernel, the 0.5
 * folded in; broadcast along every other dim ([2, 30, 8, 12, 2] by [2, 1,
 * 8, 1, 2]), a form oneDNN's kernels lack, the Mul by 0.5 must not fold
 * into the first one (oneDNN's reference kernel then), which runs on
 * cpu_ref's kernel.  So do the softmax's Sub and Div of one value per row
 * of [1, 3, 5, 7], on oneDNN's kernel as [15, 7] by [15, 1]. */
START_TEST(middle_broadcast_then_scale)
{
    if (!xf_bt_have_cpu())
        return;
    for (int form = 0; form < 2; form++) {
        xf_graph *g = xf_graph_create("offsets");
        int off = add_input(g, form ? SHAPE(2, 30, 8, 12, 2) : SHAPE(1, 30, 8, 12, 2));
        int wh = add_input(g, form ? SHAPE(2, 1, 8, 1, 2) : SHAPE(1, 30, 1, 1, 2));
        int m = out0(g, NODE(g, XF_OP_MUL, off, wh));
        xf_graph_add_output(g, out0(g, NODE(g, XF_OP_MUL, m, xf_bt_scalar(g, 0.5f, 0))));
        char impl[128];
        check_kernels(g, "offsets scaled", XF_OP_MUL, impl, sizeof impl);
        ck_assert_msg(form ? !strcmp(impl, "cpu_ref kernel") : strstr(impl, "jit") != NULL,
                      "form %d: the broadcasting Mul runs as %s", form, impl);
        xf_graph_free(g);
    }
    xf_graph *g = xf_graph_create("softmax");
    int x = add_input(g, SHAPE(1, 3, 5, 7)), row = add_input(g, SHAPE(1, 3, 5, 1));
    int e = out0(g, NODE(g, XF_OP_EXP, out0(g, NODE(g, XF_OP_SUB, x, row))));
    xf_graph_add_output(g, out0(g, NODE(g, XF_OP_DIV, e, row)));
    char impl[128];
    check_kernels(g, "softmax's broadcasts", XF_OP_SUB, impl, sizeof impl);
    ck_assert_msg(strstr(impl, "jit") != NULL, "the Sub runs as %s", impl);
    check_kernels(g, "softmax's broadcasts", XF_OP_DIV, impl, sizeof impl);
    ck_assert_msg(strstr(impl, "jit") != NULL, "the Div runs as %s", impl);
    xf_graph_free(g);
}
END_TEST

/* A Concat of a convolution's output (stored natively) and a tensor
 * stored plain (a graph input, a pool's output: ShuffleNetV2's, DenseNet's
 * and DeepLabV3's) along the channels, feeding a convolution. */
START_TEST(concat_mixed_layouts)
{
    if (!xf_bt_have_cpu())
        return;
    for (int first = 0; first < 2; first++) {
        xf_graph *g = xf_graph_create("concat");
        int x = add_input(g, SHAPE(1, 16, 12, 10)), p = add_input(g, SHAPE(1, 32, 12, 10));
        int y = xf_bt_conv(g, x, 16, 32, 3, 1, XF_ACT_RELU);
        int n = first ? NODE(g, XF_OP_CONCAT, p, y) : NODE(g, XF_OP_CONCAT, y, p);
        attrs(g, n)->axis = 1;
        xf_graph_add_output(g, xf_bt_conv(g, out0(g, n), 64, 16, 3, 1, XF_ACT_NONE));
        char impl[128];
        check_kernels(g, first ? "Concat, plain input first" : "Concat, plain input second", XF_OP_CONCAT, impl,
                      sizeof impl);
        xf_graph_free(g);
    }
}
END_TEST

/* Concats of plain tensors along an inner axis, in many small pieces
 * (RT-DETR's decoder joins three [8, 32, 300, 4] samplings along the
 * last dim), run as a loop of the backend's own, whatever the pieces'
 * sizes (4, 8, 16, 32 and 64 bytes inline, others not): cpu_ref's bytes. */
START_TEST(concat_small_pieces)
{
    if (!xf_bt_have_cpu())
        return;
    static const int64_t widths[][3] = {{4, 4, 4}, {1, 2, 3}, {16, 8, 5}, {7, 1, 1}};
    for (int f = 0; f < 4; f++) {
        xf_graph *g = xf_graph_create("concat");
        int ins[3];
        for (int k = 0; k < 3; k++)
            ins[k] = add_input(g, SHAPE(4, 8, 30, widths[f][k]));
        int n = NODE(g, XF_OP_CONCAT, ins[0], ins[1], ins[2]);
        attrs(g, n)->axis = f % 2 ? 3 : -1;
        xf_graph_add_output(g, out0(g, n));
        xf_bt_check_graph(g, 17, "cpu", true, 0, 0, "Concat of small pieces");
        char impl[128];
        check_kernels(g, "Concat of small pieces", XF_OP_CONCAT, impl, sizeof impl);
        ck_assert_str_eq(impl, "own loop");
        xf_graph_free(g);
    }
}
END_TEST

/* BatchNormalization of a plain tensor (a graph input: quantized models
 * leave it between a DequantizeLinear and a QuantizeLinear) runs as the
 * backend's own loop, with cpu_ref's values exactly (odd plane sizes for
 * the vector loops' tails; variances from 1e-6 to 1e3), a Relu after it
 * folded in; one after a
 * convolution is folded into it or runs on oneDNN's kernel of its
 * layout. */
START_TEST(batch_norm_plain)
{
    if (!xf_bt_have_cpu())
        return;
    xf_bt_seed(43);
    for (int form = 0; form < 3; form++) {
        bool after_conv = form == 2, relu = form == 1;
        xf_graph *g = xf_graph_create("bn");
        int64_t ch = 7;
        int x = add_input(g, SHAPE(2, after_conv ? 5 : ch, 13, 11)), in[5];
        in[0] = after_conv ? xf_bt_conv(g, x, 5, ch, 3, 1, XF_ACT_NONE) : x;
        for (int k = 1; k < 5; k++) {
            xf_shape cs = SHAPE(ch);
            xf_tensor *t = xf_tensor_create(XF_DT_FLOAT, &cs);
            for (int64_t c = 0; c < ch; c++)
                ((float *)t->data)[c] = k == 4 ? (float)pow(10.0, (double)xf_bt_rnd(-6, 3))
                                               : (float)xf_bt_rnd(-3000, 3000) / 1000.0f;
            in[k] = xf_graph_add_initializer(g, NULL, t);
            xf_tensor_release(t);
        }
        int bn = node(g, XF_OP_BATCH_NORM, "bn", 5, in, 1);
        attrs(g, bn)->epsilon = 1e-5f;
        xf_graph_add_output(g, relu ? out0(g, NODE(g, XF_OP_RELU, out0(g, bn))) : out0(g, bn));
        infer_ok(g, 17);
        if (!after_conv)
            xf_bt_check_graph(g, 17, "cpu", true, 0, 0, "BatchNormalization of a plain tensor");
        char impl[128];
        check_kernels(g, "BatchNormalization", XF_OP_BATCH_NORM, impl, sizeof impl);
        if (after_conv) /* folded, or oneDNN's kernel of the convolution's layout */
            ck_assert_msg(strcmp(impl, "own loop") != 0, "the BatchNormalization after a convolution runs as %s", impl);
        else
            ck_assert_str_eq(impl, "own loop");
        xf_graph_free(g);
    }
}
END_TEST

/* Runs g on cpu with opt and returns the largest difference of its output
 * from want relative to want's largest |element|; *wino receives which
 * Conv nodes of the session run Winograd's kernel, bit k for the k-th
 * (static sessions; -1 in dynamic ones, whose implementations are chosen
 * per run). */
static double cpu_error(const xf_graph *g, const xf_session_options *opt, xf_tensor *in, const xf_tensor *want,
                        int *wino)
{
    xf_session *s = NULL;
    xf_error err = {0};
    ck_assert_msg(xf_session_create(g, 17, "cpu", opt, &s, &err) == XF_OK, "%s", err.msg);
    xf_tensor *got = NULL;
    ck_assert_msg(xf_session_run(s, &in, &got, &err) == XF_OK, "%s", err.msg);
    *wino = -1;
    if (!xf_session_is_dynamic(s)) {
        const xf_graph *sg = xf_session_graph(s);
        *wino = 0;
        for (int i = 0, k = 0; i < sg->n_nodes; i++) {
            char impl[128];
            xf_session_node_impl(s, i, impl, sizeof impl);
            ck_assert_msg(strncmp(impl, "ref:", 4) != 0, "node %d runs oneDNN's reference implementation", i);
            if (sg->nodes[i].op == XF_OP_CONV && strstr(impl, "wino"))
                *wino |= 1 << k;
            k += sg->nodes[i].op == XF_OP_CONV;
        }
    }
    double big = 0, diff = 0;
    const float *a = got->data, *b = want->data;
    ck_assert_int_eq(xf_tensor_numel(got), xf_tensor_numel(want));
    for (int64_t i = 0; i < xf_tensor_numel(want); i++) {
        big = fmax(big, fabs(b[i]));
        diff = fmax(diff, fabs((double)a[i] - b[i]));
    }
    xf_tensor_release(got);
    xf_session_free(s);
    return diff / big;
}

/* 3x3 convolutions of stride 1 and 64 output channels or more run through
 * Winograd's F(2x2, 3x3) where oneDNN has it (AVX-512; batches may take
 * its F(4x4, 3x3)).  The graph: a
 * first one with a ReLU, a second with a residual Add as a sum post-op,
 * then two 1x1 convolutions (64 to 512 to 64 channels), one of 32 output
 * channels (3x3, or 5x5 with 64 in `heavy`), a strided 3x3 and a 1x1 (all
 * direct).  Where the Winograd ones hold most of the multiply-adds of the
 * convolutions larger than 1x1 (not of the 1x1 ones), the values are
 * stored in the layout their kernel reads and both run it; with a heavy
 * 5x5 the layout stays channels-last, oneDNN's direct kernels' on
 * AVX-512, and neither does (nor in dynamic mode, where values are plain).
 * Results
 * stay within 1e-5 of cpu_ref's (relative to the largest output; about
 * 1e-6 measured); direct_convolutions keeps every convolution direct.
 * The kernels are the layout plan's (fixed_kernels): timing might choose
 * direct ones (timed_kernels below). */
START_TEST(winograd_3x3)
{
    if (!xf_bt_have_cpu())
        return;
    bool expect = xf_bt_avx512_kernels();
    for (int heavy = 0; heavy < 2; heavy++) {
        xf_graph *g = xf_graph_create("winograd");
        int x = add_input(g, SHAPE(1, 64, 24, 20));
        int a = xf_bt_conv(g, x, 64, 64, 3, 1, XF_ACT_RELU);
        int b = xf_bt_conv(g, a, 64, 64, 3, 1, XF_ACT_NONE);
        int r = out0(g, NODE(g, XF_OP_RELU, out0(g, NODE(g, XF_OP_ADD, b, a))));
        r = xf_bt_conv(g, xf_bt_conv(g, r, 64, 512, 1, 1, XF_ACT_NONE), 512, 64, 1, 1, XF_ACT_NONE);
        int c = xf_bt_conv(g, r, 64, heavy ? 64 : 32, heavy ? 5 : 3, 1, XF_ACT_NONE);
        int d = xf_bt_conv(g, c, heavy ? 64 : 32, 64, 3, 2, XF_ACT_RELU);
        xf_graph_add_output(g, xf_bt_conv(g, d, 64, 16, 1, 1, XF_ACT_NONE));
        infer_ok(g, 17);
        xf_tensor *in = xf_tensor_random(XF_DT_FLOAT, &g->values[x].shape, 7), *want = NULL;
        xf_session *ref = NULL;
        xf_error err = {0};
        ck_assert_msg(xf_session_create(g, 17, "cpu_ref", NULL, &ref, &err) == XF_OK, "%s", err.msg);
        ck_assert_msg(xf_session_run(ref, &in, &want, &err) == XF_OK, "%s", err.msg);
        for (int direct = 0; direct < 2; direct++)
            for (int dynamic = 0; dynamic < 2; dynamic++) {
                xf_session_options opt = {
                    .force_dynamic = dynamic, .direct_convolutions = direct, .fixed_kernels = true};
                int wino;
                double e = cpu_error(g, &opt, in, want, &wino);
                ck_assert_msg(e <= 1e-5, "heavy %d, direct %d, dynamic %d: %.3g from cpu_ref", heavy, direct,
                              dynamic, e);
                bool ok = !expect || direct || heavy ? wino == 0 : wino == 3;
                ck_assert_msg(dynamic || ok, "heavy %d, direct %d: the convolutions of bits %#x run Winograd's kernel",
                              heavy, direct, wino);
            }
        xf_tensor_release(in);
        xf_tensor_release(want);
        xf_session_free(ref);
        xf_graph_free(g);
    }
    if (!expect)
        printf("winograd_3x3: no AVX-512 kernels here, so every convolution was checked as run directly\n");
}
END_TEST

/* The implementations of g's nodes in session s, "|"-separated, into buf. */
static void node_impls(xf_session *s, char *buf, size_t len)
{
    const xf_graph *sg = xf_session_graph(s);
    size_t at = 0;
    buf[0] = '\0';
    for (int i = 0; i < sg->n_nodes && at < len; i++) {
        char impl[400];
        xf_session_node_impl(s, i, impl, sizeof impl);
        at += (size_t)snprintf(buf + at, len - at, "%s|", impl);
    }
    ck_assert_msg(at < len, "the implementations overflow the buffer");
}

/* Whether the kernel impl names ran the fastest of those its note
 * ("; timed: K1 T1 ms, K2 with reorders T2 ms") lists, or one within 10%
 * of it (near ties keep the earlier, by 3%, or by 10% against one that
 * adds reorders).  Where two timed kernels have its name (in different
 * layouts), either may be it. */
static bool chosen_fastest(const char *impl, const char *note)
{
    size_t len = strcspn(impl, ":;");
    double best = -1, mine = -1;
    const char *p = note + strlen("; timed:");
    while (*p == ' ') {
        p++;
        size_t name = strcspn(p, " ");
        const char *t = p + name;
        while (*t && (*t < '0' || *t > '9'))
            t++;
        double ms = strtod(t, NULL);
        if (name == len && !strncmp(p, impl, len)) {
            mine = mine < 0 || ms < mine ? ms : mine;
        }
        best = best < 0 || ms < best ? ms : best;
        p = strchr(t, ',');
        if (!p)
            break;
        p++;
    }
    return mine >= 0 && mine <= best / 0.90 + 1e-3;
}

/* Where the layout plan fixes a float convolution's layouts, the cpu
 * backend times oneDNN's other fast kernels for it (the direct one beside
 * Winograd's, the direct one in the layout oneDNN prefers, with reorders)
 * and runs the fastest; profiles say so ("; timed: K1 T1 ms, K2 with
 * reorders T2 ms").  The graph stores values in Winograd's channel-blocked
 * layout (its 3x3 convolutions of stride 1 hold most of the work), then has
 * a strided 3x3 convolution with a ReLU, whose direct kernels in that
 * layout and channels-last differ, a 3x3 one with a residual Add (a
 * sum post-op writes the destination as stored: not timed) and a 1x1 one.
 * The second 3x3 convolution, Winograd's in the plan, has the direct
 * kernel in the same layouts and one in another timed beside it.  Checked:
 * every session agrees with cpu_ref within 1e-5 of the largest output;
 * with fixed_kernels nothing is timed; otherwise the strided convolution
 * is, among at least two kernels, and runs one of those it names; a second
 * session of the same graph takes the choices the first one measured (the
 * same notes, times included); dynamic sessions (no layout plan) time
 * nothing. */
START_TEST(timed_kernels)
{
    if (!xf_bt_have_cpu())
        return;
    xf_graph *g = xf_graph_create("timed");
    int x = add_input(g, SHAPE(1, 64, 30, 30));
    int a = xf_bt_conv(g, x, 64, 64, 3, 1, XF_ACT_RELU);
    a = xf_bt_conv(g, a, 64, 64, 3, 1, XF_ACT_RELU);
    int d = xf_bt_conv(g, a, 64, 64, 3, 2, XF_ACT_RELU);
    int e = xf_bt_conv(g, d, 64, 64, 3, 1, XF_ACT_NONE);
    xf_graph_add_output(g, xf_bt_conv(g, out0(g, NODE(g, XF_OP_ADD, e, d)), 64, 16, 1, 1, XF_ACT_NONE));
    infer_ok(g, 17);
    xf_tensor *in = xf_tensor_random(XF_DT_FLOAT, &g->values[x].shape, 3), *want = NULL;
    xf_session *ref = NULL;
    xf_error err = {0};
    ck_assert_msg(xf_session_create(g, 17, "cpu_ref", NULL, &ref, &err) == XF_OK, "%s", err.msg);
    ck_assert_msg(xf_session_run(ref, &in, &want, &err) == XF_OK, "%s", err.msg);
    bool expect = xf_bt_avx512_kernels();
    char first[4096] = "";
    for (int run = 0; run < 4; run++) {
        bool fixed = run == 0, dynamic = run == 3;
        xf_session_options opt = {.fixed_kernels = fixed, .force_dynamic = dynamic};
        int wino;
        double e = cpu_error(g, &opt, in, want, &wino);
        ck_assert_msg(e <= 1e-5, "run %d: %.3g from cpu_ref", run, e);
        xf_session *s = NULL;
        ck_assert_msg(xf_session_create(g, 17, "cpu", &opt, &s, &err) == XF_OK, "%s", err.msg);
        char impls[4096];
        node_impls(s, impls, sizeof impls);
        if (fixed || dynamic || !expect) {
            ck_assert_msg(!strstr(impls, "timed"), "run %d: %s", run, impls);
        } else if (run == 1) {
            const xf_graph *sg = xf_session_graph(s);
            for (int i = 0, k = 0; i < sg->n_nodes; i++) {
                if (sg->nodes[i].op != XF_OP_CONV)
                    continue;
                char impl[400];
                xf_session_node_impl(s, i, impl, sizeof impl);
                const char *note = strstr(impl, "; timed: ");
                if (k == 1) /* Winograd's, the direct kernel in the same layouts, and one in another */
                    ck_assert_msg(note && strstr(note, " jit_fp32_wino_2x3 ") && strstr(note, ", jit ") &&
                                      strchr(strchr(note, ',') + 1, ','),
                                  "the second convolution: %s", impl);
                if (k == 2) {
                    ck_assert_msg(note && strchr(note, ','), "the strided convolution: %s", impl);
                    /* the kernel run is one of those timed */
                    char chosen[128];
                    snprintf(chosen, sizeof chosen, " %.*s ", (int)strcspn(impl, ":;"), impl);
                    ck_assert_msg(strstr(note, chosen), "the strided convolution: %s", impl);
                    ck_assert_msg(chosen_fastest(impl, note), "the strided convolution: %s", impl);
                }
                if (k == 3)
                    ck_assert_msg(!note, "the convolution with a sum post-op: %s", impl);
                k++;
            }
            snprintf(first, sizeof first, "%s", impls);
        } else {
            ck_assert_str_eq(impls, first);
        }
        xf_session_free(s);
    }
    if (!expect)
        printf("timed_kernels: no AVX-512 kernels here, so no convolution had kernels to time\n");
    xf_tensor_release(in);
    xf_tensor_release(want);
    xf_session_free(ref);
    xf_graph_free(g);
}
END_TEST

/* cpu_error of g (one input, seeded random values) against cpu_ref's
 * output for the same input. */
static double error_from_ref(const xf_graph *g, const xf_session_options *opt, uint64_t seed)
{
    xf_tensor *in = xf_tensor_random(XF_DT_FLOAT, &g->values[g->inputs[0]].shape, seed), *want = NULL;
    xf_session *ref = NULL;
    xf_error err = {0};
    ck_assert_msg(xf_session_create(g, 17, "cpu_ref", NULL, &ref, &err) == XF_OK, "%s", err.msg);
    ck_assert_msg(xf_session_run(ref, &in, &want, &err) == XF_OK, "%s", err.msg);
    int wino;
    double e = cpu_error(g, opt, in, want, &wino);
    xf_tensor_release(in);
    xf_tensor_release(want);
    xf_session_free(ref);
    return e;
}

/* Where the plan stores values channels-last (a graph whose 5x5
 * convolution outweighs its 3x3 one, as Inception-v3's do), a 3x3
 * convolution that Winograd's kernel takes has that kernel timed too,
 * with reorders to and from its layout; whichever runs, the result stays
 * within 1e-5 of cpu_ref's. */
START_TEST(timed_winograd_channels_last)
{
    if (!xf_bt_have_cpu())
        return;
    xf_graph *g = xf_graph_create("timed_channels_last");
    int x = add_input(g, SHAPE(1, 64, 24, 20));
    int a = xf_bt_conv(g, xf_bt_conv(g, x, 64, 64, 5, 1, XF_ACT_RELU), 64, 64, 3, 1, XF_ACT_RELU);
    xf_graph_add_output(g, xf_bt_conv(g, a, 64, 16, 1, 1, XF_ACT_NONE));
    infer_ok(g, 17);
    double e = error_from_ref(g, NULL, 5);
    ck_assert_msg(e <= 1e-5, "%.3g from cpu_ref", e);
    xf_session *s = NULL;
    xf_error err = {0};
    ck_assert_msg(xf_session_create(g, 17, "cpu", NULL, &s, &err) == XF_OK, "%s", err.msg);
    char impl[400];
    xf_session_node_impl(s, 1, impl, sizeof impl);
    if (xf_bt_avx512_kernels())
        ck_assert_msg(strstr(impl, "; timed: ") && strstr(impl, " jit_fp32_wino_2x3 with reorders "), "%s", impl);
    else
        printf("timed_winograd_channels_last: no AVX-512 kernels here, so no Winograd kernel to time\n");
    xf_session_free(s);
    xf_graph_free(g);
}
END_TEST

/* Two 3x3 convolutions that Winograd's kernel would take but for their
 * SiLU (Sigmoid and Mul) or Elu (post-ops it lacks) leave the plan in the
 * layout oneDNN's direct kernels read (channels-last on AVX-512), where
 * it stored every value in Winograd's blocked one and ran them directly
 * there, 10 to 20% slower.  Results within 1e-5 of cpu_ref's. */
START_TEST(winograd_layout_needs_its_posts)
{
    if (!xf_bt_have_cpu())
        return;
    for (int elu = 0; elu < 2; elu++) {
        xf_graph *g = xf_graph_create("gated");
        int v = add_input(g, SHAPE(1, 64, 24, 20));
        for (int i = 0; i < 2; i++) {
            int c = xf_bt_conv(g, v, 64, 64, 3, 1, XF_ACT_NONE);
            v = elu ? out0(g, NODE(g, XF_OP_ELU, c)) : silu(g, c);
        }
        xf_graph_add_output(g, v);
        infer_ok(g, 17);
        xf_session_options opt = {.fixed_kernels = true};
        double e = error_from_ref(g, &opt, 5);
        ck_assert_msg(e <= 1e-5, "elu %d: %.3g from cpu_ref", elu, e);
        xf_session *s = NULL;
        xf_error err = {0};
        ck_assert_msg(xf_session_create(g, 17, "cpu", &opt, &s, &err) == XF_OK, "%s", err.msg);
        const xf_graph *sg = xf_session_graph(s);
        for (int i = 0; i < sg->n_nodes; i++) {
            char impl[400];
            xf_session_node_impl(s, i, impl, sizeof impl);
            /* brgconv: oneDNN's kernel for channels-last, where its blocked one is jit */
            if (sg->nodes[i].op == XF_OP_CONV && xf_bt_avx512_kernels())
                ck_assert_msg(strncmp(impl, "brgconv:", 8) == 0, "elu %d: node %d runs %s", elu, i, impl);
        }
        xf_session_free(s);
        xf_graph_free(g);
    }
    if (!xf_bt_avx512_kernels())
        printf("winograd_layout_needs_its_posts: no AVX-512 kernels here, so the layout was not checked\n");
}
END_TEST

/* A residual Add folded into the convolution that ends a block, with a
 * ReLU after it, adds in place: the ReLU's output (which the convolution
 * writes) takes the bytes of the Add's other operand, the block's input,
 * so no copy of it comes first (xf_backend.accumulates_into).  Where the
 * convolution reads that input itself, as in timed_kernels, it cannot.
 * Both agree with cpu_ref within 1e-5. */
START_TEST(residual_in_place)
{
    if (!xf_bt_have_cpu())
        return;
    for (int reads = 0; reads < 2; reads++) {
        xf_graph *g = xf_graph_create("residual");
        int x = add_input(g, SHAPE(1, 32, 12, 10));
        int r = xf_bt_conv(g, x, 32, 64, 3, 1, XF_ACT_RELU);
        int b = xf_bt_conv(g, reads ? r : xf_bt_conv(g, r, 64, 64, 3, 1, XF_ACT_RELU), 64, 64, 1, 1, XF_ACT_NONE);
        int y = out0(g, NODE(g, XF_OP_RELU, out0(g, NODE(g, XF_OP_ADD, b, r))));
        xf_graph_add_output(g, xf_bt_conv(g, y, 64, 16, 1, 1, XF_ACT_NONE));
        infer_ok(g, 17);
        double e = error_from_ref(g, NULL, 9);
        ck_assert_msg(e <= 1e-5, "reads %d: %.3g from cpu_ref", reads, e);
        xf_session *s = NULL;
        xf_error err = {0};
        ck_assert_msg(xf_session_create(g, 17, "cpu", NULL, &s, &err) == XF_OK, "%s", err.msg);
        const xf_graph *sg = xf_session_graph(s);
        const xf_memplan *p = xf_session_memplan(s);
        int add = -1;
        for (int i = 0; i < sg->n_nodes; i++)
            add = sg->nodes[i].op == XF_OP_ADD ? i : add;
        ck_assert_int_ge(add, 0);
        /* the operand: the input whose producer has another reader */
        int operand = -1, relu = -1;
        for (int k = 0; k < 2; k++)
            for (int i = 0; i < sg->n_nodes; i++)
                for (int q = 0; q < sg->nodes[i].n_inputs; q++)
                    if (i != add && sg->nodes[i].inputs[q] == sg->nodes[add].inputs[k])
                        operand = sg->nodes[add].inputs[k];
        for (int i = 0; i < sg->n_nodes; i++)
            relu = sg->nodes[i].op == XF_OP_RELU && sg->nodes[i].inputs[0] == sg->nodes[add].outputs[0] ? i : relu;
        ck_assert_msg(operand >= 0 && relu >= 0, "the residual block's Add and ReLU");
        int out = sg->nodes[relu].outputs[0];
        int root = p->alias[operand] >= 0 ? p->alias[operand] : operand;
        bool in_place = p->alias[out] == root && p->offset[out] == p->offset[root];
        ck_assert_msg(in_place == !reads, "reads %d: the ReLU's output %s the residual's bytes", reads,
                      in_place ? "takes" : "misses");
        xf_session_free(s);
        xf_graph_free(g);
    }
}
END_TEST

/* The lines of the file at path, or -1 where it cannot be read. */
static int count_lines(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    int lines = 0, ch;
    while ((ch = fgetc(f)) != EOF)
        lines += ch == '\n';
    fclose(f);
    return lines;
}

/* Timed choices are kept in the file XF_KERNEL_CACHE names, one line
 * each ("BEST<tab>; timed: ...<tab>KEY"), and taken from it without
 * timing: a first session times the graph of timed_kernels into a new
 * file; a second one adds nothing to it; then the file's notes are edited
 * and lines that must not be taken put before them (a line of nonsense,
 * then before each entry its key with an index past the candidates and
 * with a note not from timing; last, a line cut short),
 * and a session reading that file shows the edited notes and adds nothing
 * to it either. */
START_TEST(timed_kernels_file)
{
    if (!xf_bt_have_cpu() || !xf_bt_avx512_kernels()) {
        printf("timed_kernels_file: no AVX-512 kernels here, so no convolution had kernels to time\n");
        return;
    }
    xf_graph *g = xf_graph_create("timed");
    int x = add_input(g, SHAPE(1, 64, 30, 30));
    int a = xf_bt_conv(g, xf_bt_conv(g, x, 64, 64, 3, 1, XF_ACT_RELU), 64, 64, 3, 1, XF_ACT_RELU);
    xf_graph_add_output(g, xf_bt_conv(g, xf_bt_conv(g, a, 64, 64, 3, 2, XF_ACT_RELU), 64, 16, 1, 1, XF_ACT_NONE));
    infer_ok(g, 17);
    char first[512], edited[512];
    snprintf(first, sizeof first, "%s/first.txt", xf_test_tmpdir("timed_kernels_file"));
    snprintf(edited, sizeof edited, "%s/edited.txt", xf_test_tmpdir("timed_kernels_file"));
    remove(first);
    char impls[4096];
    xf_session *s = NULL;
    xf_error err = {0};
    setenv("XF_KERNEL_CACHE", first, 1);
    for (int run = 0; run < 2; run++) {
        ck_assert_msg(xf_session_create(g, 17, "cpu", NULL, &s, &err) == XF_OK, "%s", err.msg);
        node_impls(s, impls, sizeof impls);
        xf_session_free(s);
        ck_assert_msg(strstr(impls, "; timed: ") && count_lines(first) >= 1, "%s", impls);
    }
    int lines = count_lines(first);
    FILE *in = fopen(first, "r"), *out = fopen(edited, "w");
    ck_assert(in && out);
    fputs("nonsense\n", out);
    char line[8192];
    while (fgets(line, sizeof line, in)) {
        char *note = strstr(line, "; timed:"), *key = note ? strchr(note, '\t') : NULL;
        ck_assert_msg(line[0] >= '0' && line[0] <= '9' && line[1] == '\t' && note == line + 2 && key, "%s", line);
        /* before each entry, two of its key that must not be taken */
        fprintf(out, "7\t; timed: (edited) x 1 ms%s", key);
        fprintf(out, "0\t; from elsewhere%s", key);
        fprintf(out, "%.*s; timed: (edited)%s", (int)(note - line), line, note + strlen("; timed:"));
    }
    fputs("0\t; timed: cut short", out);
    fclose(in);
    fclose(out);
    setenv("XF_KERNEL_CACHE", edited, 1);
    ck_assert_msg(xf_session_create(g, 17, "cpu", NULL, &s, &err) == XF_OK, "%s", err.msg);
    node_impls(s, impls, sizeof impls);
    xf_session_free(s);
    setenv("XF_KERNEL_CACHE", "", 1);
    ck_assert_msg(strstr(impls, "; timed: (edited) ") && !strstr(impls, "; timed: j") && !strstr(impls, "; timed: b"),
                  "%s", impls);
    ck_assert_int_eq(count_lines(edited), 1 + 3 * lines);
    xf_graph_free(g);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("cpu_kernels");
    TCase *t = tcase_create("kernels");
    tcase_add_test(t, residual_after_silu);
    tcase_add_test(t, squeeze_excitation_mul);
    tcase_add_test(t, affine_blocks);
    tcase_add_test(t, conv_along_h);
    tcase_add_test(t, reductions);
    tcase_add_test(t, comparisons);
    tcase_add_test(t, where_selects);
    tcase_add_test(t, softmax_strided_axis);
    tcase_add_test(t, conv_transpose_as_conv);
    tcase_add_test(t, concat_mixed_layouts);
    tcase_add_test(t, concat_small_pieces);
    tcase_add_test(t, pooled_map_ops);
    tcase_add_test(t, middle_broadcast_then_scale);
    tcase_add_test(t, batch_norm_plain);
    tcase_add_test(t, winograd_3x3);
    tcase_add_test(t, timed_kernels);
    tcase_add_test(t, timed_kernels_file);
    tcase_add_test(t, timed_winograd_channels_last);
    tcase_add_test(t, winograd_layout_needs_its_posts);
    tcase_add_test(t, residual_in_place);
    suite_add_tcase(s, t);
    return xf_test_run_suite(s);
}
