/* QuantizeLinear and DequantizeLinear: cpu_ref against hand-computed values
 * (rounding half to even, saturation, per-axis and blocked scales), their
 * dtype and shape rules and the errors for operands that do not fit, and
 * what keeps a quantized model quantized: canonicalization never folds
 * them into constants, the cost models price them as the work they are at
 * run time, and xflowc writes a QDQ model back with its int8 weights. */
#include "kernel_case_util.h"
#include "proto_util.h"
#include "xf_optimizer.h"
#include "xf_test_util.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define Q XF_OP_QUANTIZE_LINEAR
#define DQ XF_OP_DEQUANTIZE_LINEAR
#define I8(dims, ...) mk(XF_DT_INT8, dims, (int8_t[]){__VA_ARGS__})
#define U8(dims, ...) mk(XF_DT_UINT8, dims, (uint8_t[]){__VA_ARGS__})
#define I16(dims, ...) mk(XF_DT_INT16, dims, (int16_t[]){__VA_ARGS__})
#define U16(dims, ...) mk(XF_DT_UINT16, dims, (uint16_t[]){__VA_ARGS__})

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

/* ------------------------------------------------------------ kernels */

/* x / scale rounds half to even, then the zero point is added and the
 * result clamped to the output type (uint8 without a zero point). */
START_TEST(quantize_per_tensor)
{
    EXPECT(run1(qcase(Q, F32(DIMS(8), -1, 0, 0.5, 1.5, 2.5, 3.5, 254.5, 300), F32(SCALAR, 1), NULL)), XF_DT_UINT8,
           DIMS(8), 0, 0, 0, 2, 2, 4, 254, 255);
    /* x / 0.5 = -140, -4.5, 2.5, 126, then - 3 */
    EXPECT(run1(qcase(Q, F32(DIMS(4), -70, -2.25, 1.25, 63), F32(SCALAR, 0.5), I8(SCALAR, -3))), XF_DT_INT8,
           DIMS(4), -128, -7, -1, 123);
    EXPECT(run1(qcase(Q, F32(DIMS(3), 40000, -40000, -1.5), F32(SCALAR, 1), I16(SCALAR, 0))), XF_DT_INT16, DIMS(3),
           32767, -32768, -2);
    EXPECT(run1(qcase(Q, F32(DIMS(3), 70000, -5, 100.5), F32(DIMS(1), 1), U16(DIMS(1), 7))), XF_DT_UINT16, DIMS(3),
           65535, 2, 107);
    /* int32 input */
    EXPECT(run1(qcase(Q, I32(DIMS(3), 5, -7, 1000), F32(SCALAR, 2), U8(SCALAR, 128))), XF_DT_UINT8, DIMS(3), 130, 124,
           255);
}
END_TEST

/* To float8 (opset 19+): x / scale rounds to the format's nearest value,
 * ties to even, beyond the largest finite value saturating (or, with
 * saturate 0, NaN for e4m3fn and infinity for e5m2); the codes are those
 * ONNX's reference implementation gives.  Dequantize reads them back. */
START_TEST(quantize_float8)
{
    static const float v[] = {0, 1, 2, 0.5f, 3.3f, -3.3f, 1000, -1000, 1e-3f, 2.75f, 2.875f, 0.0019f};
    static const uint8_t e4m3[] = {0x00, 0x38, 0x40, 0x30, 0x45, 0xc5, 0x7e, 0xfe, 0x01, 0x43, 0x44, 0x01},
                         e5m2[] = {0x00, 0x3c, 0x40, 0x38, 0x43, 0xc3, 0x64, 0xe4, 0x14, 0x42, 0x42, 0x18};
    const xf_dtype types[2] = {XF_DT_FLOAT8E4M3FN, XF_DT_FLOAT8E5M2};
    for (int t = 0; t < 2; t++) {
        const uint8_t *want = t ? e5m2 : e4m3, zero = 0;
        node_case c = qcase(Q, mk(XF_DT_FLOAT, DIMS(12), v), F32(SCALAR, 1), mk(types[t], SCALAR, &zero));
        c.opset = 21;
        xf_tensor *y = run1(c);
        ck_assert_int_eq(y->dtype, types[t]);
        for (int i = 0; i < 12; i++)
            ck_assert_msg(((const uint8_t *)y->data)[i] == want[i], "%s element %d: 0x%02x, want 0x%02x",
                          xf_dtype_name(types[t]), i, ((const uint8_t *)y->data)[i], want[i]);
        /* back, times the scale 2: 3.3 became 3.25 (e4m3fn) or 3.5 (e5m2);
         * 1000 saturated to e4m3fn's largest value 448, and is 1024 in e5m2 */
        c = qcase(DQ, y, F32(SCALAR, 2), mk(types[t], SCALAR, &zero));
        c.opset = 21;
        xf_tensor *back = run1(c);
        ck_assert_double_eq_tol(xf_tensor_get_f64(back, 4), (t ? 7.0 : 6.5), 1e-6);
        ck_assert_double_eq_tol(xf_tensor_get_f64(back, 6), (t ? 2048.0 : 896.0), 1e-6);
        ck_assert_double_eq_tol(xf_tensor_get_f64(back, 7), (t ? -2048.0 : -896.0), 1e-6);
        xf_tensor_release(back);
        /* saturate 0: out of range is NaN (e4m3fn) or infinity (e5m2) */
        c = qcase(Q, F32(DIMS(2), 1e6, -1), F32(SCALAR, 1), mk(types[t], SCALAR, &zero));
        c.opset = 21;
        c.a.no_saturate = true;
        y = run1(c);
        ck_assert_uint_eq(((const uint8_t *)y->data)[0], (t ? 0x7cu : 0x7fu));
        xf_tensor_release(y);
    }
    /* the fnuz formats: no negative zero, but negative numbers (codes from
     * ONNX's reference for -3.3 and -0) */
    const xf_dtype uz[2] = {XF_DT_FLOAT8E4M3FNUZ, XF_DT_FLOAT8E5M2FNUZ};
    for (int t = 0; t < 2; t++) {
        const uint8_t zero = 0;
        node_case c = qcase(Q, F32(DIMS(2), -3.3f, -0.0f), F32(SCALAR, 1), mk(uz[t], SCALAR, &zero));
        c.opset = 21;
        xf_tensor *y = run1(c);
        ck_assert_uint_eq(((const uint8_t *)y->data)[0], (t ? 0xc7u : 0xcdu));
        ck_assert_uint_eq(((const uint8_t *)y->data)[1], 0u);
        xf_tensor_release(y);
    }
}
END_TEST

/* A 1-D scale (and zero point) runs along the axis, negative axes from the back. */
START_TEST(quantize_per_axis)
{
    for (int64_t axis = 1; axis >= -1; axis -= 2)
        EXPECT(run1(qcase_axis(Q, axis, 0, F32(DIMS(2, 3), 1, 2, 3, 4, 5, 6), F32(DIMS(3), 1, 2, 4),
                               U8(DIMS(3), 0, 10, 20))),
               XF_DT_UINT8, DIMS(2, 3), 1, 11, 21, 4, 12, 22);
    EXPECT(run1(qcase_axis(Q, 0, 0, F32(DIMS(2, 3), 1, 2, 3, 4, 5, 6), F32(DIMS(2), 1, 2), I8(DIMS(2), 0, -1))),
           XF_DT_INT8, DIMS(2, 3), 1, 2, 3, 1, 1, 2);
}
END_TEST

/* block_size consecutive elements along the axis share a scale; the last
 * block may be short; output_dtype gives the type without a zero point. */
START_TEST(quantize_blocked)
{
    node_case c = qcase_axis(Q, 1, 2, F32(DIMS(2, 4), 1, 2, 3, 4, -8, 8, 24, -40), F32(DIMS(2, 2), 1, 2, 4, 8), NULL);
    c.a.output_dtype = XF_DT_INT8;
    EXPECT(run1(c), XF_DT_INT8, DIMS(2, 4), 1, 2, 2, 2, -2, 2, 3, -5);
    EXPECT(run1(qcase_axis(Q, 1, 2, F32(DIMS(1, 5), 1, 2, 3, 4, 8), F32(DIMS(1, 3), 1, 2, 4), NULL)), XF_DT_UINT8,
           DIMS(1, 5), 1, 2, 2, 2, 2);
}
END_TEST

START_TEST(dequantize_forms)
{
    EXPECT(run1(qcase(DQ, I8(DIMS(3), -128, 0, 127), F32(SCALAR, 0.5), I8(SCALAR, -1))), XF_DT_FLOAT, DIMS(3), -63.5,
           0.5, 64);
    EXPECT(run1(qcase_axis(DQ, 0, 0, U8(DIMS(2, 2), 1, 3, 2, 6), F32(DIMS(2), 1, 0.5), U8(DIMS(2), 1, 2))),
           XF_DT_FLOAT, DIMS(2, 2), 0, 2, 0, 2);
    EXPECT(run1(qcase(DQ, I32(DIMS(2), -5, 7), F32(SCALAR, 0.25), NULL)), XF_DT_FLOAT, DIMS(2), -1.25, 1.75);
    EXPECT(run1(qcase(DQ, I16(DIMS(2), -32768, 32767), F32(SCALAR, 1), I16(SCALAR, -1))), XF_DT_FLOAT, DIMS(2),
           -32767, 32768);
    EXPECT(run1(qcase(DQ, U16(DIMS(2), 0, 65535), F32(SCALAR, 2), NULL)), XF_DT_FLOAT, DIMS(2), 0, 131070);
    EXPECT(run1(qcase_axis(DQ, -1, 2, I8(DIMS(2, 4), 1, 2, 3, 4, 5, 6, 7, 8), F32(DIMS(2, 2), 1, 2, 4, 8),
                           I8(DIMS(2, 2), 0, 1, 0, 1))),
           XF_DT_FLOAT, DIMS(2, 4), 1, 2, 4, 6, 20, 24, 48, 56);
}
END_TEST

/* The output has the scale's type (float16 here: 0.5 is 0x3800), or
 * output_dtype's. */
START_TEST(dequantize_float16)
{
    static const uint16_t half[] = {0x3800}, want[] = {0xbc00, 0x3e00};
    for (int given = 0; given < 2; given++) {
        node_case c = qcase(DQ, I8(DIMS(2), -2, 3), given ? F32(SCALAR, 0.5) : mk(XF_DT_FLOAT16, SCALAR, half), NULL);
        c.a.output_dtype = given ? XF_DT_FLOAT16 : XF_DT_UNDEFINED;
        c.opset = 23;
        xf_tensor *y = run1(c);
        ck_assert_int_eq(y->dtype, XF_DT_FLOAT16);
        ck_assert(memcmp(y->data, want, sizeof want) == 0);
        xf_tensor_release(y);
    }
}
END_TEST

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
        {qcase(Q, F32(DIMS(2), 0, 0), F32(SCALAR, 1), I32(SCALAR, 0)), 13, "the zero point must be an 8- or 16-bit integer, a float8"},
        {qcase(DQ, F32(DIMS(2), 0, 0), F32(SCALAR, 1), NULL), 13, "x must be an 8-, 16- or 32-bit integer"},
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

/* ------------------------------------------------------------ xflowc */

/* A QDQ convolution as ONNX Runtime's quantizer writes it (opset 13):
 * x -> Q -> DQ -> Conv(DQ(int8 w, per channel), DQ(int32 b)) -> Relu -> Q
 * -> DQ -> y; with fp8, the activations and the weight in float8 e4m3fn
 * (opset 19), as TensorRT's FP8 recipes write them. */
static void write_qdq_conv(const char *path, bool fp8)
{
    xf_dtype act = fp8 ? XF_DT_FLOAT8E4M3FN : XF_DT_UINT8, wt = fp8 ? XF_DT_FLOAT8E4M3FN : XF_DT_INT8;
    static const int64_t xd[] = {1, 2, 4, 4}, wd[] = {3, 2, 3, 3}, three[] = {3}, yd[] = {1, 3, 4, 4};
    static int8_t w[54];
    static const float xs = 0.05f, ws[] = {0.01f, 0.02f, 0.005f}, bs[] = {0.0005f, 0.001f, 0.00025f}, ys = 0.1f;
    const uint8_t xz = fp8 ? 0 : 128, yz = 0;
    static const int8_t wz[3] = {0};
    static const int32_t b[] = {-300, 40, 1000};
    for (int i = 0; i < 54; i++) /* float8: finite codes of either sign */
        w[i] = fp8 ? (int8_t)((i * 37 % 0x70) | (i % 2 ? 0x80 : 0)) : (int8_t)(i * 37 % 255 - 127);
    Onnx__GraphProto *g = mk_graph("qdq_conv");
    PUSH(g->n_input, g->input, mk_vi("x", XF_DT_FLOAT, 4, xd, NULL));
    PUSH(g->n_output, g->output, mk_vi("y", XF_DT_FLOAT, 4, yd, NULL));
    PUSH(g->n_initializer, g->initializer, mk_raw("xs", XF_DT_FLOAT, 0, NULL, &xs, sizeof xs));
    PUSH(g->n_initializer, g->initializer, mk_raw("xz", act, 0, NULL, &xz, sizeof xz));
    PUSH(g->n_initializer, g->initializer, mk_raw("w", wt, 4, wd, w, sizeof w));
    PUSH(g->n_initializer, g->initializer, mk_raw("ws", XF_DT_FLOAT, 1, three, ws, sizeof ws));
    PUSH(g->n_initializer, g->initializer, mk_raw("wz", wt, 1, three, wz, sizeof wz));
    PUSH(g->n_initializer, g->initializer, mk_raw("b", XF_DT_INT32, 1, three, b, sizeof b));
    PUSH(g->n_initializer, g->initializer, mk_raw("bs", XF_DT_FLOAT, 1, three, bs, sizeof bs));
    PUSH(g->n_initializer, g->initializer, mk_raw("ys", XF_DT_FLOAT, 0, NULL, &ys, sizeof ys));
    PUSH(g->n_initializer, g->initializer, mk_raw("yz", act, 0, NULL, &yz, sizeof yz));
    /* each node: its op and inputs (NULL-terminated), then its output */
    static const char *const spec[][5] = {
        {"QuantizeLinear", "x", "xs", "xz", NULL},  {"DequantizeLinear", "xq", "xs", "xz", NULL},
        {"DequantizeLinear", "w", "ws", "wz", NULL}, {"DequantizeLinear", "b", "bs", NULL, NULL},
        {"Conv", "xd", "wd", "bd", NULL},            {"Relu", "c", NULL, NULL, NULL},
        {"QuantizeLinear", "r", "ys", "yz", NULL},   {"DequantizeLinear", "rq", "ys", "yz", NULL},
    };
    static const char *const outs[][2] = {{"xq"}, {"xd"}, {"wd"}, {"bd"}, {"c"}, {"r"}, {"rq"}, {"y"}};
    for (int i = 0; i < 8; i++)
        PUSH(g->n_node, g->node, mk_node(spec[i][0], outs[i][0], &spec[i][1], outs[i]));
    attr_int(g->node[2], "axis", 0);
    attr_int(g->node[3], "axis", 0);
    attr_ints(g->node[4], "pads", 4, (const int64_t[]){1, 1, 1, 1});
    write_model(mk_model(g, fp8 ? 19 : 13), path);
    free_allocs();
}

/* Writes the QDQ convolution (write_qdq_conv) into a fresh folder named
 * dir as in, runs xflowc --check on it into outp, checks the written file
 * with onnx.checker and loads both models. */
static void optimize_qdq_conv(const char *dir, bool fp8, char *in, char *outp, xf_model **before, xf_model **after)
{
    const char *d = xf_test_tmpdir(dir);
    char cmd[9000], *out = NULL;
    snprintf(in, 4300, "%s/qdq.onnx", d);
    snprintf(outp, 4300, "%s/opt.onnx", d);
    write_qdq_conv(in, fp8);
    snprintf(cmd, sizeof cmd, "%s %s -o %s --check", xf_test_tool("xflowc"), in, outp);
    int rc = xf_test_run(cmd, &out);
    ck_assert_msg(rc == 0 && strstr(out, "check: output 'y'"), "xflowc --check failed: %s", out);
    free(out);
    assert_onnx_valid(outp);
    xf_error e;
    ck_assert_msg(xf_model_load(in, NULL, before, &e) == XF_OK, "%s", e.msg);
    ck_assert_msg(xf_model_load(outp, NULL, after, &e) == XF_OK, "%s", e.msg);
}

/* xflowc optimizes the model, --check runs both on cpu_ref, and the
 * written model is still quantized: every DequantizeLinear is there, and
 * the weight is the same int8 initializer (nothing folded it to floats). */
START_TEST(xflowc_keeps_qdq_models_quantized)
{
    char in[4300], outp[4300];
    xf_model *before, *after;
    optimize_qdq_conv("quant-xflowc", false, in, outp, &before, &after);
    int cb[XF_OP_COUNT + 1], ca[XF_OP_COUNT + 1];
    xf_graph_count_ops(before->graph, cb);
    xf_graph_count_ops(after->graph, ca);
    ck_assert_int_eq(cb[DQ], 4);
    ck_assert_int_eq(ca[DQ], 4);
    ck_assert_int_eq(ca[Q], 2);
    ck_assert_int_eq(ca[XF_OP_OPAQUE], 0);
    const xf_value *wb = &before->graph->values[xf_graph_find_value(before->graph, "w")];
    int w = xf_graph_find_value(after->graph, "w");
    ck_assert_int_ge(w, 0);
    const xf_value *wa = &after->graph->values[w];
    ck_assert(wa->init && wa->init->dtype == XF_DT_INT8 && wa->init->nbytes == wb->init->nbytes &&
              memcmp(wa->init->data, wb->init->data, wb->init->nbytes) == 0);
    for (int v = 0; v < after->graph->n_values; v++) {
        const xf_tensor *t = after->graph->values[v].init;
        ck_assert_msg(!t || t->dtype != XF_DT_FLOAT || xf_tensor_numel(t) <= 3, "a float constant of %lld elements",
                      (long long)xf_tensor_numel(t));
    }
    xf_model_free(before);
    xf_model_free(after);
}
END_TEST

/* A float8 QDQ model loads, is optimized around its Q/DQ nodes (known ops,
 * shapes inferred through them), passes --check (cpu_ref quantizes to and
 * from float8) and is written back with its float8 weight byte for byte. */
START_TEST(xflowc_carries_float8_models)
{
    char in[4300], outp[4300];
    xf_model *before, *after;
    optimize_qdq_conv("quant-float8", true, in, outp, &before, &after);
    int ca[XF_OP_COUNT + 1];
    xf_graph_count_ops(after->graph, ca);
    ck_assert_int_eq(ca[DQ], 4);
    ck_assert_int_eq(ca[XF_OP_OPAQUE], 0);
    const xf_value *wb = &before->graph->values[xf_graph_find_value(before->graph, "w")];
    int w = xf_graph_find_value(after->graph, "w");
    ck_assert_int_ge(w, 0);
    const xf_tensor *wa = after->graph->values[w].init;
    ck_assert(wa && wa->dtype == XF_DT_FLOAT8E4M3FN && wa->nbytes == 54 &&
              memcmp(wa->data, wb->init->data, 54) == 0);
    xf_model_free(before);
    xf_model_free(after);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("quant");
    TCase *tc = tcase_create("kernels");
    tcase_add_test(tc, quantize_per_tensor);
    tcase_add_test(tc, quantize_float8);
    tcase_add_test(tc, quantize_per_axis);
    tcase_add_test(tc, quantize_blocked);
    tcase_add_test(tc, dequantize_forms);
    tcase_add_test(tc, dequantize_float16);
    suite_add_tcase(s, tc);
    tc = tcase_create("graphs");
    tcase_add_test(tc, output_dtypes);
    tcase_add_test(tc, operand_errors);
    tcase_add_test(tc, canonicalize_keeps_quantization);
    tcase_add_test(tc, cost_prices_dequantize_of_constants);
    suite_add_tcase(s, tc);
    tc = tcase_create("models");
    tcase_add_test(tc, xflowc_keeps_qdq_models_quantized);
    tcase_add_test(tc, xflowc_carries_float8_models);
    suite_add_tcase(s, tc);
    return xf_test_run_suite(s);
}
