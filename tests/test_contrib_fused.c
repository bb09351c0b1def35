/* ONNX Runtime's fused contrib ops (what its graph and transformer
 * optimizers write): values on cpu_ref against hand-computed numbers,
 * attribute round trips, and forms xflow does not model staying opaque. */
#include "kernel_case_util.h"
#include "proto_util.h"
#include "xf_test_util.h"

#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MS "com.microsoft"

/* 1x1 FusedConv of one channel, weight 2, bias -1: act(2x - 1 + z). */
START_TEST(test_fused_conv_values)
{
    node_case c = make_case(XF_OP_MS_FUSED_CONV, 3, F32(DIMS(1, 1, 1, 3), -1, 0.25, 2), F32(DIMS(1, 1, 1, 1), 2),
                            F32(DIMS(1), -1));
    c.a.ms_act = XF_MS_ACT_LEAKY_RELU;
    c.a.ms_act_params[0] = 0.5f;
    EXPECT(run1(c), XF_DT_FLOAT, DIMS(1, 1, 1, 3), -1.5, -0.25, 3);
    c = make_case(XF_OP_MS_FUSED_CONV, 4, F32(DIMS(1, 1, 1, 3), -1, 0.25, 2), F32(DIMS(1, 1, 1, 1), 2),
                  F32(DIMS(1), -1), F32(DIMS(1, 1, 1, 3), 1, 1, -10));
    c.a.ms_act = XF_MS_ACT_CLIP;
    c.a.ms_act_params[0] = -1.0f;
    c.a.ms_act_params[1] = 1.5f;
    EXPECT(run1(c), XF_DT_FLOAT, DIMS(1, 1, 1, 3), -1, 0.5, -1);
}
END_TEST

/* FusedGemm: tanh(A B^T + C); FusedMatMul with alpha and the transposes. */
START_TEST(test_fused_matmul_values)
{
    node_case c = make_case(XF_OP_MS_FUSED_GEMM, 3, F32(DIMS(1, 2), 1, 2), F32(DIMS(2, 2), 1, 0, 0, -1),
                            F32(DIMS(2), 0, 1));
    c.a.trans_b = 1;
    c.a.ms_act = XF_MS_ACT_TANH;
    EXPECT(run1(c), XF_DT_FLOAT, DIMS(1, 2), tanh(1.0), tanh(-1.0));
    /* A (2, 1, 2) with transBatchA: matrices of rows dim 0 -> batch 1 of 2x2 */
    c = make_case(XF_OP_MS_FUSED_MATMUL, 2, F32(DIMS(2, 1, 2), 1, 2, 3, 4), F32(DIMS(2, 1), 1, 1));
    c.a.alpha = 0.5f;
    c.a.trans_batch_a = 1;
    EXPECT(run1(c), XF_DT_FLOAT, DIMS(1, 2, 1), 1.5, 3.5);
    /* transA: A^T of [[1, 2], [3, 4]] times [1, 0]^T */
    c = make_case(XF_OP_MS_FUSED_MATMUL, 2, F32(DIMS(2, 2), 1, 2, 3, 4), F32(DIMS(2, 1), 1, 0));
    c.a.trans_a = 1;
    EXPECT(run1(c), XF_DT_FLOAT, DIMS(2, 1), 1, 2);
}
END_TEST

START_TEST(test_gelus_values)
{
    double v = 0.5 + 1.0, fast = 0.5 * v * (1 + tanh(0.7978845608028654 * (v + 0.044715 * v * v * v)));
    EXPECT(run1(make_case(XF_OP_MS_FAST_GELU, 2, F32(DIMS(1, 2), 0.5, 0), F32(DIMS(2), 1, 0))), XF_DT_FLOAT,
           DIMS(1, 2), fast, 0);
    EXPECT(run1(make_case(XF_OP_MS_BIAS_GELU, 2, F32(DIMS(1, 2), 0.5, 0), F32(DIMS(2), 1, 0))), XF_DT_FLOAT,
           DIMS(1, 2), 0.5 * v * erfc(-v / sqrt(2.0)), 0);
    EXPECT(run1(make_case(XF_OP_MS_QUICK_GELU, 1, F32(DIMS(2), 1, -2))), XF_DT_FLOAT, DIMS(2),
           1 / (1 + exp(-1.702)), -2 / (1 + exp(3.404)));
    EXPECT(run1(make_case(XF_OP_MS_BIAS_ADD, 3, F32(DIMS(1, 1, 2), 1, 2), F32(DIMS(2), 10, 20),
                          F32(DIMS(1, 1, 2), 100, 200))),
           XF_DT_FLOAT, DIMS(1, 1, 2), 111, 222);
}
END_TEST

/* Row [1, 2] + skip [1, 2] + bias [0, 0] = [2, 4]: mean 3, variance 1. */
START_TEST(test_skip_layer_norm_values)
{
    node_case c = make_case(XF_OP_MS_SKIP_LAYER_NORM, 5, F32(DIMS(2, 2), 1, 2, 0, 0), F32(DIMS(2), 1, 2),
                            F32(DIMS(2), 1, 2), F32(DIMS(2), 0, 1), F32(DIMS(2), 0, 0));
    c.a.epsilon = 0.0f;
    EXPECT(run1(c), XF_DT_FLOAT, DIMS(2, 2), -1, 3, -1, 3);
    c = make_case(XF_OP_MS_SKIP_SIMPLIFIED_LAYER_NORM, 3, F32(DIMS(1, 2), 3, 0), F32(DIMS(1, 2), 0, 4),
                  F32(DIMS(2), 1, 2));
    c.a.epsilon = 0.0f; /* v = [3, 4], rms sqrt(12.5) */
    EXPECT(run1(c), XF_DT_FLOAT, DIMS(1, 2), 3 / sqrt(12.5), 8 / sqrt(12.5));
    c = make_case(XF_OP_SIMPLIFIED_LAYER_NORM, 2, F32(DIMS(1, 2), 3, 4), F32(DIMS(2), 1, 1));
    c.a.epsilon = 0.0f;
    EXPECT(run1(c), XF_DT_FLOAT, DIMS(1, 2), 3 / sqrt(12.5), 4 / sqrt(12.5));
}
END_TEST

static Onnx__NodeProto *ms(const char *op, const char *const *ins, const char *out)
{
    Onnx__NodeProto *n = mk_node(op, NULL, ins, (const char *[]){out, NULL});
    n->domain = MS;
    return n;
}

/* FusedConv, FusedGemm and FusedMatMul keep their attributes through a round
 * trip; a FusedConv with an activation xflow does not model stays opaque. */
START_TEST(test_attrs_roundtrip)
{
    static const int64_t xd[] = {1, 1, 2, 2}, wd[] = {1, 1, 1, 1}, md[] = {2, 2};
    Onnx__GraphProto *g = mk_graph("g");
    PUSH(g->n_input, g->input, mk_vi("x", XF_DT_FLOAT, 4, xd, NULL));
    PUSH(g->n_input, g->input, mk_vi("w", XF_DT_FLOAT, 4, wd, NULL));
    PUSH(g->n_input, g->input, mk_vi("m", XF_DT_FLOAT, 2, md, NULL));
    Onnx__NodeProto *n = ms("FusedConv", (const char *[]){"x", "w", NULL}, "a");
    attr_string(n, "activation", "HardSigmoid");
    attr_floats(n, "activation_params", 2, (const float[]){0.2f, 0.5f});
    PUSH(g->n_node, g->node, n);
    n = ms("FusedConv", (const char *[]){"x", "w", NULL}, "b");
    attr_string(n, "activation", "Silu");
    PUSH(g->n_node, g->node, n);
    n = ms("FusedGemm", (const char *[]){"m", "m", NULL}, "c");
    attr_string(n, "activation", "LeakyRelu");
    attr_float(n, "activation_alpha", 0.25f);
    attr_int(n, "transB", 1);
    PUSH(g->n_node, g->node, n);
    n = ms("FusedMatMul", (const char *[]){"m", "m", NULL}, "d");
    attr_float(n, "alpha", 0.125f);
    attr_int(n, "transBatchB", 1);
    PUSH(g->n_node, g->node, n);
    const char *outs[] = {"a", "b", "c", "d"};
    for (int i = 0; i < 4; i++)
        PUSH(g->n_output, g->output, mk_vi(outs[i], XF_DT_FLOAT, -1, NULL, NULL));
    Onnx__ModelProto *mp = mk_model(g, 17);
    add_opset(mp, MS, 1);
    xf_model *m;
    xf_error e;
    ck_assert_msg(load_proto(mp, NULL, &m, &e) == XF_OK, "%s", e.msg);
    const xf_node *conv = &m->graph->nodes[find_node_by_output(m->graph, "a")];
    ck_assert_int_eq(conv->op, XF_OP_MS_FUSED_CONV);
    ck_assert_int_eq(conv->attrs.ms_act, XF_MS_ACT_HARD_SIGMOID);
    ck_assert(conv->attrs.ms_act_params[1] == 0.5f);
    ck_assert_int_eq(m->graph->nodes[find_node_by_output(m->graph, "b")].op, XF_OP_OPAQUE);
    const xf_node *gemm = &m->graph->nodes[find_node_by_output(m->graph, "c")];
    ck_assert_int_eq(gemm->op, XF_OP_MS_FUSED_GEMM);
    ck_assert(gemm->attrs.ms_act == XF_MS_ACT_LEAKY_RELU && gemm->attrs.ms_act_params[0] == 0.25f &&
              gemm->attrs.trans_b == 1);
    const xf_node *mm = &m->graph->nodes[find_node_by_output(m->graph, "d")];
    ck_assert(mm->op == XF_OP_MS_FUSED_MATMUL && mm->attrs.alpha == 0.125f && mm->attrs.trans_batch_b == 1);
    ck_assert_int_eq(m->graph->values[mm->outputs[0]].shape.ndim, 2);
    xf_model_free(roundtrip(m));
    xf_model_free(m);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("contrib_fused");
    TCase *tc = tcase_create("fused");
    tcase_add_checked_fixture(tc, NULL, free_allocs);
    tcase_add_test(tc, test_fused_conv_values);
    tcase_add_test(tc, test_fused_matmul_values);
    tcase_add_test(tc, test_gelus_values);
    tcase_add_test(tc, test_skip_layer_norm_values);
    tcase_add_test(tc, test_attrs_roundtrip);
    suite_add_tcase(s, tc);
    return xf_test_run_suite(s);
}
