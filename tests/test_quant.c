/* QuantizeLinear and DequantizeLinear: their dtype and shape rules and the
 * errors for operands that do not fit, and what keeps a quantized model
 * quantized: canonicalization never folds them into constants, and the
 * cost models price them as the work they are at run time. */
#include "kernel_case_util.h"
#include "xf_optimizer.h"
#include "xf_test_util.h"

#include <check.h>
#include <string.h>

#define Q XF_OP_QUANTIZE_LINEAR
#define DQ XF_OP_DEQUANTIZE_LINEAR
#define I8(dims, ...) mk(XF_DT_INT8, dims, (int8_t[]){__VA_ARGS__})
#define U8(dims, ...) mk(XF_DT_UINT8, dims, (uint8_t[]){__VA_ARGS__})

/* op on x (a graph input), scale and zero point (NULL: omitted). */
static node_case qcase(xf_op op, xf_tensor *x, xf_tensor *scale, xf_tensor *zero_point)
{
    node_case c = make_case(op, zero_point ? 3 : 2, x, scale, zero_point);
    c.feed = 1;
    return c;
}

/* The same with axis and block_size. */
static node_case qcase_axis(xf_op op, int64_t axis, int64_t block, xf_tensor *x, xf_tensor *scale,
                            xf_tensor *zero_point)
{
    node_case c = qcase(op, x, scale, zero_point);
    c.a.axis = axis;
    c.a.block_size = block;
    return c;
}

/* ------------------------------------------------------------ inference */

/* Infers c's one-node graph and returns its output's dtype (the test
 * fails on an error). */
static xf_dtype inferred_dtype(node_case c)
{
    xf_graph *g = case_graph(&c);
    xf_error e = {0};
    ck_assert_msg(xf_graph_infer_shapes(g, c.opset, &e) == XF_OK, "%s", e.msg);
    xf_dtype d = g->values[g->outputs[0]].dtype;
    xf_graph_free(g);
    for (int i = 0; i < c.n_in; i++)
        xf_tensor_release(c.in[i]);
    return d;
}

START_TEST(output_dtypes)
{
    ck_assert_int_eq(inferred_dtype(qcase(Q, F32(DIMS(2), 1, 2), F32(SCALAR, 1), NULL)), XF_DT_UINT8);
    ck_assert_int_eq(inferred_dtype(qcase(Q, F32(DIMS(2), 1, 2), F32(SCALAR, 1), I8(SCALAR, 0))), XF_DT_INT8);
    node_case c = qcase(Q, F32(DIMS(2), 1, 2), F32(SCALAR, 1), NULL);
    c.a.output_dtype = XF_DT_UINT16;
    ck_assert_int_eq(inferred_dtype(c), XF_DT_UINT16);
    ck_assert_int_eq(inferred_dtype(qcase(DQ, I8(DIMS(2), 1, 2), F32(SCALAR, 1), NULL)), XF_DT_FLOAT);
}
END_TEST

/* Operands that do not fit fail inference with a message naming the node. */
START_TEST(operand_errors)
{
    struct {
        node_case c;
        int64_t opset;
        const char *msg;
    } cases[] = {
        {qcase_axis(Q, 1, 0, F32(DIMS(2, 3), 0, 0, 0, 0, 0, 0), F32(DIMS(2), 1, 1), NULL), 13,
         "the scale has 2 entries but x (shape 2x3) has 3 along axis 1"},
        {qcase_axis(DQ, 2, 0, I8(DIMS(2, 3), 0, 0, 0, 0, 0, 0), F32(DIMS(3), 1, 1, 1), NULL), 13,
         "axis 2 is out of range for x of shape 2x3"},
        {qcase_axis(Q, -3, 0, F32(DIMS(2, 3), 0, 0, 0, 0, 0, 0), F32(DIMS(2), 1, 1), NULL), 13, "axis -3 is out of range"},
        {qcase(Q, F32(DIMS(3), 0, 0, 0), F32(DIMS(3), 1, 1, 1), U8(DIMS(2), 0, 0)), 13, "the zero point's shape 2"},
        {qcase(DQ, I8(DIMS(2), 0, 0), F32(SCALAR, 1), U8(SCALAR, 0)), 13, "the zero point is"},
        {qcase(Q, F32(DIMS(2), 0, 0), F32(SCALAR, 1), I32(SCALAR, 0)), 13, "the zero point must be int8, uint8"},
        {qcase(DQ, F32(DIMS(2), 0, 0), F32(SCALAR, 1), NULL), 13, "x must be int8, uint8"},
        {qcase(DQ, I8(DIMS(2), 0, 0), I32(SCALAR, 1), NULL), 13, "the scale must be float"},
        {qcase(Q, F32(DIMS(2, 2), 0, 0, 0, 0), F32(DIMS(2, 2), 1, 1, 1, 1), NULL), 21, "needs block_size"},
        {qcase_axis(Q, 1, 2, F32(DIMS(2, 4), 0, 0, 0, 0, 0, 0, 0, 0), F32(DIMS(2, 3), 1, 1, 1, 1, 1, 1), NULL), 21,
         "block_size 2 cuts axis 1 of x (shape 2x4) into 2 blocks, but the scale has 3 there"},
        {qcase_axis(Q, 1, 2, F32(DIMS(2, 4), 0, 0, 0, 0, 0, 0, 0, 0), F32(DIMS(1, 2), 1, 1), NULL), 21,
         "must equal x's 2x4 but along axis 1"},
        {qcase_axis(Q, 1, -2, F32(DIMS(2), 0, 0), F32(DIMS(2), 1, 1), NULL), 21, "block_size -2 is negative"},
        {qcase(Q, F32(DIMS(2), 0, 0), F32(DIMS(2), 1, 1), NULL), 10, "opset 10 takes a scalar scale"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        xf_graph *g = case_graph(&cases[i].c);
        xf_error e = {0};
        ck_assert_msg(xf_graph_infer_shapes(g, cases[i].opset, &e) == XF_ERR_INVALID, "case %zu passed", i);
        ck_assert_msg(strstr(e.msg, "node 'n0' (") && strstr(e.msg, cases[i].msg), "case %zu: '%s' lacks '%s'", i,
                      e.msg, cases[i].msg);
        xf_graph_free(g);
        for (int k = 0; k < cases[i].c.n_in; k++)
            xf_tensor_release(cases[i].c.in[k]);
    }
    node_case c = qcase(Q, F32(DIMS(2), 0, 0), F32(SCALAR, 1), I8(SCALAR, 0));
    c.a.output_dtype = XF_DT_UINT8;
    xf_graph *g = case_graph(&c);
    xf_error e = {0};
    ck_assert_int_eq(xf_graph_infer_shapes(g, 21, &e), XF_ERR_INVALID);
    ck_assert_msg(strstr(e.msg, "output_dtype is"), "%s", e.msg);
    xf_graph_free(g);
    for (int k = 0; k < c.n_in; k++)
        xf_tensor_release(c.in[k]);
}
END_TEST

/* ------------------------------------------------------------ canonicalization and cost */

static int add_init(xf_graph *g, xf_tensor *t)
{
    int v = xf_graph_add_initializer(g, NULL, t);
    xf_tensor_release(t);
    return v;
}

static int add_op(xf_graph *g, xf_op op, int n_in, const int *in)
{
    int out = xf_graph_add_value(g, NULL, XF_DT_UNDEFINED, NULL);
    ck_assert_int_ge(xf_graph_add_node(g, op, NULL, n_in, in, 1, &out), 0);
    return out;
}

/* y = Conv(x, DequantizeLinear(int8 w)) + DequantizeLinear(QuantizeLinear(c1 + c2));
 * with quantized = false, the Conv's weight is a float initializer. */
static xf_graph *qdq_graph(bool quantized)
{
    xf_graph *g = xf_graph_create("qdq");
    xf_shape xs = xf_shape_make(4, (int64_t[]){1, 2, 4, 4});
    int x = xf_graph_add_input(g, "x", XF_DT_FLOAT, &xs);
    int w = add_init(g, quantized ? I8(DIMS(3, 2, 1, 1), 1, -2, 3, -4, 5, -6) : F32(DIMS(3, 2, 1, 1), 1, 2, 3, 4, 5, 6));
    if (quantized)
        w = add_op(g, DQ, 3, (int[]){w, add_init(g, F32(SCALAR, 0.5)), add_init(g, I8(SCALAR, 1))});
    int y = add_op(g, XF_OP_CONV, 2, (int[]){x, w});
    int c = add_op(g, XF_OP_ADD, 2,
                   (int[]){add_init(g, F32(DIMS(3, 1, 1), 1, 2, 3)), add_init(g, F32(DIMS(3, 1, 1), 4, 5, 6))});
    int s = add_init(g, F32(SCALAR, 0.25)), zp = add_init(g, U8(SCALAR, 3));
    int b = add_op(g, DQ, 3, (int[]){add_op(g, Q, 3, (int[]){c, s, zp}), s, zp});
    xf_graph_add_output(g, add_op(g, XF_OP_ADD, 2, (int[]){y, b}));
    xf_error e = {0};
    ck_assert_msg(xf_graph_infer_shapes(g, 13, &e) == XF_OK, "%s", e.msg);
    return g;
}

/* Folding evaluates the Add of two constants but neither QuantizeLinear
 * nor DequantizeLinear, though their inputs are constants: the int8
 * weight stays an int8 initializer read by its DequantizeLinear. */
START_TEST(canonicalize_keeps_quantization)
{
    xf_graph *g = qdq_graph(true);
    xf_canon_stats st = {0};
    xf_error e = {0};
    ck_assert_msg(xf_canonicalize(g, 13, xf_runtime_eval_node, &st, &e) == XF_OK, "%s", e.msg);
    ck_assert_int_eq(st.folded_constants, 1);
    int counts[XF_OP_COUNT + 1];
    xf_graph_count_ops(g, counts);
    ck_assert_int_eq(counts[DQ], 2);
    ck_assert_int_eq(counts[Q], 1);
    ck_assert_int_eq(counts[XF_OP_ADD], 1);
    int int8_weights = 0;
    for (int i = 0; i < g->n_nodes; i++) {
        const xf_value *in = &g->values[g->nodes[i].inputs[0]];
        int8_weights += g->nodes[i].op == DQ && in->init && in->init->dtype == XF_DT_INT8 && in->shape.ndim == 4;
    }
    ck_assert_int_eq(int8_weights, 1);
    xf_graph_free(g);
}
END_TEST

/* A DequantizeLinear of a weight runs with the graph (it is never folded),
 * so it costs at least a kernel launch: 2 us on analytic:cpu. */
START_TEST(cost_prices_dequantize_of_constants)
{
    xf_cost_model *m;
    xf_error e = {0};
    ck_assert_msg(xf_cost_model_create("analytic:cpu", NULL, &m, &e) == XF_OK, "%s", e.msg);
    double cost[2];
    for (int quantized = 0; quantized < 2; quantized++) {
        xf_graph *g = qdq_graph(quantized);
        ck_assert_msg(xf_cost_graph(m, g, 13, &cost[quantized], &e) == XF_OK, "%s", e.msg);
        xf_graph_free(g);
    }
    ck_assert_msg(cost[1] - cost[0] >= 2e-6 * 0.999, "%g s with the DequantizeLinear, %g s without", cost[1], cost[0]);
    xf_cost_model_free(m);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("quant");
    TCase *tc = tcase_create("graphs");
    tcase_add_test(tc, output_dtypes);
    tcase_add_test(tc, operand_errors);
    tcase_add_test(tc, canonicalize_keeps_quantization);
    tcase_add_test(tc, cost_prices_dequantize_of_constants);
    suite_add_tcase(s, tc);
    return xf_test_run_suite(s);
}
