/* ONNX Runtime's contrib ops on the `cpu` backend (oneDNN) against cpu_ref,
 * static mode (layout plan, folds) and dynamic mode, on random shapes:
 * FusedMatMul in every transpose form, with alpha, folded bias, sum and
 * post-ops and the one-row sgemm path; FusedGemm with each activation;
 * FusedConv with Z (plain, between native convolutions, and a layout
 * mismatch); SkipLayerNormalization on oneDNN and with the statistics
 * outputs on the backend's own loop, the simplified forms; BiasGelu,
 * FastGelu with and without a bias, BiasAdd. */
#include "backend_util.h"
#include "core_builders.h"
#include "xf_runtime.h"
#include "xf_test_util.h"

#include <check.h>
#include <stdio.h>

static int add_input(xf_graph *g, xf_shape s) { return xf_bt_input(g, XF_DT_FLOAT, s); }

static void check_graph(const xf_graph *g, const char *what)
{
    xf_bt_check_graph(g, 17, "cpu", true, 1e-5, 1e-4, what);
}

/* ---------------------------------------------------------------- FusedMatMul */

/* The stored shape of a FusedMatMul operand whose matrices are rows x cols
 * behind `batch` (nb dims), for trans and transBatch. */
static xf_shape stored(int nb, const int64_t *batch, int64_t rows, int64_t cols, int trans, int trans_batch)
{
    int64_t first = trans ? cols : rows, second = trans ? rows : cols, d[XF_MAX_DIMS];
    int r = nb + 2, i = 0;
    if (trans_batch)
        d[i++] = first;
    for (int b = 0; b < nb; b++)
        d[i++] = batch[b];
    if (!trans_batch)
        d[i++] = first;
    d[i] = second;
    return xf_shape_make(r, d);
}

/* All 16 forms of transA, transB, transBatchA, transBatchB, on ranks 2 to
 * 4, B of rank 2 or a constant in some, alpha away from 1 in most. */
START_TEST(fused_matmul_forms)
{
    if (!xf_bt_have_cpu())
        return;
    xf_bt_seed(11);
    for (int form = 0; form < 32; form++) {
        int ta = form & 1, tb = (form >> 1) & 1, tba = (form >> 2) & 1, tbb = (form >> 3) & 1;
        int nb = (int)xf_bt_rnd(0, 2), nbb = form & 16 ? 0 : nb;
        int64_t batch[2] = {xf_bt_rnd(2, 3), xf_bt_rnd(1, 3)};
        int64_t m = xf_bt_rnd(1, 9), k = xf_bt_rnd(1, 17), nn = xf_bt_rnd(1, 11);
        xf_graph *g = xf_graph_create("fused_matmul");
        int a = add_input(g, stored(nb, batch, m, k, ta, tba));
        xf_shape bs = stored(nbb, batch, k, nn, tb, tbb);
        int b = form % 3 == 0 ? xf_bt_random_const(g, bs, false) : add_input(g, bs);
        int n = xf_bt_finish_single(g, XF_OP_MS_FUSED_MATMUL, 2, (int[]){a, b});
        xf_attrs *at = attrs(g, n);
        at->trans_a = ta;
        at->trans_b = tb;
        at->trans_batch_a = tba;
        at->trans_batch_b = tbb;
        at->alpha = form % 4 == 1 ? 1.0f : 0.125f + 0.25f * (float)(form % 5);
        char what[96];
        snprintf(what, sizeof what, "FusedMatMul form %d (transA %d transB %d transBatchA %d transBatchB %d)", form,
                 ta, tb, tba, tbb);
        check_graph(g, what);
        xf_graph_free(g);
    }
}
END_TEST

/* What the fold plan adds to a FusedMatMul: an Add of a constant (a bias
 * when alpha is 1, a separate node when not), an Add of another tensor (a
 * sum post-op) and a Relu (an eltwise post-op); and a one-row product with
 * large constant weights (dnnl_sgemm). */
START_TEST(fused_matmul_folds)
{
    if (!xf_bt_have_cpu())
        return;
    for (int t = 0; t < 4; t++) {
        xf_graph *g = xf_graph_create("fused_matmul_folds");
        int a = add_input(g, SHAPE(2, 5, 12)), r = add_input(g, SHAPE(2, 5, 7));
        int w = xf_bt_random_const(g, SHAPE(7, 12), false);
        int mm = node(g, XF_OP_MS_FUSED_MATMUL, "mm", 2, (int[]){a, w}, 1);
        attrs(g, mm)->trans_b = 1;
        attrs(g, mm)->alpha = t % 2 ? 0.5f : 1.0f;
        int y = out0(g, mm);
        if (t < 2)
            y = NODE(g, XF_OP_ADD, y, xf_bt_random_const(g, SHAPE(7), false));
        else
            y = NODE(g, XF_OP_ADD, r, y);
        y = out0(g, y);
        y = out0(g, NODE(g, XF_OP_RELU, y));
        if (t >= 2)
            y = out0(g, NODE(g, XF_OP_SIGMOID, y));
        xf_graph_add_output(g, y);
        char what[64];
        snprintf(what, sizeof what, "FusedMatMul folds, case %d", t);
        check_graph(g, what);
        xf_graph_free(g);
    }
    xf_graph *g = xf_graph_create("fused_matmul_gemv");
    int a = add_input(g, SHAPE(1, 512));
    int w = xf_bt_random_const(g, SHAPE(1024, 512), false);
    int n = xf_bt_finish_single(g, XF_OP_MS_FUSED_MATMUL, 2, (int[]){a, w});
    attrs(g, n)->trans_b = 1;
    attrs(g, n)->alpha = 0.25f;
    check_graph(g, "FusedMatMul one row, large constant B");
    xf_graph_free(g);
}
END_TEST

/* ---------------------------------------------------------------- FusedGemm */

START_TEST(fused_gemm_activations)
{
    if (!xf_bt_have_cpu())
        return;
    static const struct {
        int act;
        float p0, p1;
    } acts[] = {{XF_MS_ACT_RELU, 0, 0},         {XF_MS_ACT_TANH, 0, 0},         {XF_MS_ACT_SIGMOID, 0, 0},
                {XF_MS_ACT_LEAKY_RELU, 0.1f, 0}, {XF_MS_ACT_CLIP, -0.5f, 0.75f}, {XF_MS_ACT_HARD_SIGMOID, 0.2f, 0.5f}};
    for (int t = 0; t < 12; t++) {
        int ta = t % 2, tb = (t / 2) % 2, act = t % 6;
        int64_t m = 3 + t, k = 17, nn = 9;
        xf_graph *g = xf_graph_create("fused_gemm");
        int a = add_input(g, ta ? SHAPE(k, m) : SHAPE(m, k));
        int b = xf_bt_random_const(g, tb ? SHAPE(nn, k) : SHAPE(k, nn), false);
        int c = xf_bt_random_const(g, SHAPE(nn), false);
        int n = xf_bt_finish_single(g, XF_OP_MS_FUSED_GEMM, t < 6 ? 3 : 2, (int[]){a, b, c});
        xf_attrs *at = attrs(g, n);
        at->trans_a = ta;
        at->trans_b = tb;
        at->alpha = t < 6 ? 1.0f : 0.5f;
        at->beta = 1.0f;
        at->ms_act = acts[act].act;
        at->ms_act_params[0] = acts[act].p0;
        at->ms_act_params[1] = acts[act].p1;
        char what[64];
        snprintf(what, sizeof what, "FusedGemm case %d (activation %d)", t, acts[act].act);
        check_graph(g, what);
        xf_graph_free(g);
    }
}
END_TEST

/* ---------------------------------------------------------------- FusedConv with Z */

static int conv3x3(xf_graph *g, xf_op op, int x, int64_t cin, int64_t cout, int z, int act)
{
    int w = xf_bt_random_const(g, SHAPE(cout, cin, 3, 3), false), b = xf_bt_random_const(g, SHAPE(cout), false);
    int n = node(g, op, NULL, z >= 0 ? 4 : 3, (int[]){x, w, b, z}, 1);
    xf_bt_set_window(attrs(g, n), 2, (int64_t[]){3, 3}, (int64_t[]){1, 1}, (int64_t[]){1, 1}, (int64_t[]){1, 1},
                     (int64_t[]){1, 1});
    attrs(g, n)->group = 1;
    attrs(g, n)->ms_act = act;
    return out0(g, n);
}

/* Z a graph input; Z from a convolution between convolutions (native
 * layouts); Z plain while the output would be native (both kept plain);
 * a Relu after it (a post-op), an Add after it (not a second sum) and a
 * BatchNormalization after it (not folded into the weights). */
START_TEST(fused_conv_z)
{
    if (!xf_bt_have_cpu())
        return;
    for (int t = 0; t < 6; t++) {
        int64_t ch = t % 2 ? 16 : 5;
        xf_graph *g = xf_graph_create("fused_conv_z");
        int x = add_input(g, SHAPE(2, ch, 7, 6)), y;
        if (t < 2) {
            int z = add_input(g, SHAPE(2, ch, 7, 6));
            y = conv3x3(g, XF_OP_MS_FUSED_CONV, x, ch, ch, z, t ? XF_MS_ACT_RELU : XF_MS_ACT_NONE);
        } else if (t < 4) {
            int a = conv3x3(g, XF_OP_CONV, x, ch, ch, -1, 0);
            int b = conv3x3(g, XF_OP_CONV, a, ch, ch, -1, 0);
            int c = conv3x3(g, XF_OP_MS_FUSED_CONV, b, ch, ch, t == 2 ? x : a, XF_MS_ACT_LEAKY_RELU);
            y = out0(g, NODE(g, XF_OP_RELU, c));
            y = conv3x3(g, XF_OP_CONV, y, ch, ch, -1, 0);
        } else {
            int a = conv3x3(g, XF_OP_CONV, x, ch, ch, -1, 0);
            int c = conv3x3(g, XF_OP_MS_FUSED_CONV, x, ch, ch, a, XF_MS_ACT_NONE);
            if (t == 4) {
                y = out0(g, NODE(g, XF_OP_ADD, c, x));
            } else {
                int p[4];
                for (int k = 0; k < 4; k++)
                    p[k] = xf_bt_random_const(g, SHAPE(ch), k == 3);
                int bn = NODE(g, XF_OP_BATCH_NORM, c, p[0], p[1], p[2], p[3]);
                attrs(g, bn)->epsilon = 1e-5f;
                y = out0(g, bn);
            }
        }
        xf_graph_add_output(g, y);
        char what[64];
        snprintf(what, sizeof what, "FusedConv with Z, case %d", t);
        xf_bt_check_graph(g, 17, "cpu", true, -1e-5, 1e-4, what);
        xf_graph_free(g);
    }
}
END_TEST

/* ---------------------------------------------------------------- the normalizations */

/* Adds normalization op on ins with n_out outputs (output 0, and output k
 * when want[k]: graph outputs), epsilon and axis, checks it and frees g. */
static void check_norm(xf_op op, xf_graph *g, int n_in, const int *ins, int n_out, const bool *want, float eps,
                       int64_t axis, const char *what)
{
    int outs[4];
    for (int k = 0; k < n_out; k++)
        outs[k] = k == 0 || want[k] ? xf_graph_add_value(g, NULL, XF_DT_UNDEFINED, NULL) : -1;
    int n = xf_graph_add_node(g, op, "norm", n_in, ins, n_out, outs);
    ck_assert_int_ge(n, 0);
    attrs(g, n)->epsilon = eps;
    attrs(g, n)->axis = axis;
    for (int k = 0; k < n_out; k++)
        if (outs[k] >= 0)
            xf_graph_add_output(g, outs[k]);
    check_graph(g, what);
    xf_graph_free(g);
}

/* SkipLayerNormalization: beta, bias, a skip repeated over the batch, the
 * sum output (oneDNN's layer normalization), the mean and inv_std_var
 * outputs (the backend's own loop), odd and vector-sized hidden sizes. */
START_TEST(skip_layer_norm_forms)
{
    if (!xf_bt_have_cpu())
        return;
    for (int t = 0; t < 8; t++) {
        int64_t h = t % 2 ? 64 : 37, s = 3 + t;
        xf_graph *g = xf_graph_create("skip_layer_norm");
        int x = add_input(g, SHAPE(2, s, h));
        int skip = t == 3 ? add_input(g, SHAPE(s, h)) : add_input(g, SHAPE(2, s, h));
        int gamma = xf_bt_random_const(g, SHAPE(h), true);
        int beta = t % 4 != 1 ? xf_bt_random_const(g, SHAPE(h), false) : -1;
        int bias = t >= 2 ? xf_bt_random_const(g, SHAPE(h), false) : -1;
        bool stats = t >= 5, want[4] = {true, stats && t != 6, stats, t >= 4};
        char what[64];
        snprintf(what, sizeof what, "SkipLayerNormalization case %d", t);
        check_norm(XF_OP_MS_SKIP_LAYER_NORM, g, 5, (int[]){x, skip, gamma, beta, bias}, 4, want, 1e-5f, -1, what);
    }
}
END_TEST

/* SkipSimplifiedLayerNormalization (bias, every output) and
 * SimplifiedLayerNormalization over several axes (inv_std_var). */
START_TEST(simplified_norm_forms)
{
    if (!xf_bt_have_cpu())
        return;
    for (int t = 0; t < 4; t++) {
        int64_t h = t % 2 ? 32 : 19;
        xf_graph *g = xf_graph_create("skip_simplified");
        int x = add_input(g, SHAPE(3, 5, h)), skip = add_input(g, SHAPE(3, 5, h));
        int gamma = xf_bt_random_const(g, SHAPE(h), true);
        int bias = t >= 2 ? xf_bt_random_const(g, SHAPE(h), false) : -1;
        bool want[4] = {true, t == 3, t >= 1, t >= 2};
        char what[64];
        snprintf(what, sizeof what, "SkipSimplifiedLayerNormalization case %d", t);
        check_norm(XF_OP_MS_SKIP_SIMPLIFIED_LAYER_NORM, g, 4, (int[]){x, skip, gamma, bias}, 4, want, 1e-6f, -1,
                   what);
    }
    for (int axis = -2; axis < 3; axis++) {
        xf_graph *g = xf_graph_create("simplified");
        int64_t dims[3] = {4, 6, 13};
        int x = add_input(g, SHAPE(4, 6, 13));
        int a = axis < 0 ? axis + 3 : axis;
        int scale = xf_bt_random_const(g, xf_shape_make(3 - a, dims + a), true);
        char what[64];
        snprintf(what, sizeof what, "SimplifiedLayerNormalization axis %d", axis);
        check_norm(XF_OP_SIMPLIFIED_LAYER_NORM, g, 2, (int[]){x, scale}, 2, (bool[]){true, axis % 2 != 0}, 1e-5f,
                   axis, what);
    }
}
END_TEST

/* ---------------------------------------------------------------- BiasGelu, FastGelu, BiasAdd */

START_TEST(bias_act_forms)
{
    if (!xf_bt_have_cpu())
        return;
    static const xf_op ops[] = {XF_OP_MS_BIAS_GELU, XF_OP_MS_FAST_GELU, XF_OP_MS_FAST_GELU, XF_OP_MS_BIAS_ADD};
    for (int t = 0; t < 8; t++) {
        xf_op op = ops[t % 4];
        int64_t c = t < 4 ? 24 : 13;
        xf_graph *g = xf_graph_create("bias_act");
        int x = add_input(g, t < 4 ? SHAPE(2, 7, c) : SHAPE(5, c));
        int bias = xf_bt_random_const(g, SHAPE(c), false);
        int skip = add_input(g, t < 4 ? SHAPE(2, 7, c) : SHAPE(5, c));
        int n_in = op == XF_OP_MS_BIAS_ADD ? 3 : t % 4 == 2 ? 1 : 2;
        xf_bt_finish_single(g, op, n_in, (int[]){x, bias, skip});
        char what[64];
        snprintf(what, sizeof what, "%s case %d (%d inputs)", xf_op_name(op), t, n_in);
        check_graph(g, what);
        xf_graph_free(g);
    }
    /* FastGelu's bias named "": the plain eltwise GELU */
    xf_graph *g = xf_graph_create("fast_gelu_absent_bias");
    int x = add_input(g, SHAPE(3, 10));
    xf_bt_finish_single(g, XF_OP_MS_FAST_GELU, 2, (int[]){x, -1});
    check_graph(g, "FastGelu with an absent bias");
    xf_graph_free(g);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("contrib_cpu");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, fused_matmul_forms);
    tcase_add_test(tc, fused_matmul_folds);
    tcase_add_test(tc, fused_gemm_activations);
    tcase_add_test(tc, fused_conv_z);
    tcase_add_test(tc, skip_layer_norm_forms);
    tcase_add_test(tc, simplified_norm_forms);
    tcase_add_test(tc, bias_act_forms);
    suite_add_tcase(s, tc);
    return xf_test_run_suite(s);
}
