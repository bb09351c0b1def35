/* CausalConvWithState and LinearAttention (opset 27) and FlexAttention
 * (ai.onnx.preview 1): cpu_ref against values of ONNX's reference
 * implementation (small operands, written here as literals), each update
 * rule, decay and beta form, head sharing, past state and scale; their
 * shape rules' errors naming the node; attributes through ONNX import and
 * export; the cpu backend against cpu_ref and the cuda backend's support
 * check; FlexAttention's modifiers run as subgraphs. */
#include "backend_util.h"
#include "kernel_case_util.h"
#include "proto_util.h"
#include "xf_test_util.h"

#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ CausalConvWithState */

static node_case ccs(xf_tensor *x, xf_tensor *w, xf_tensor *bias, xf_tensor *past, bool silu)
{
    node_case c = make_case(XF_OP_CAUSAL_CONV_WITH_STATE, past ? 4 : bias ? 3 : 2, x, w, bias, past);
    c.a.attn.conv_silu = silu;
    c.n_out = 2;
    c.opset = 27;
    return c;
}

#define CCS_X F32(DIMS(1, 2, 3), 1, 2, 3, -1, 0.5, 2)
#define CCS_W F32(DIMS(2, 1, 3), 0.5, -1, 2, 1, 1, -0.5)
#define CCS_PAST F32(DIMS(1, 2, 2), -2, 1, 3, 0.5)

/* Channel 0 pads [1, 2, 3] with past [-2, 1]: 0.25 + 0.5 * -2 - 1 + 2 * 1 =
 * 0.25, then 3.75 and 4.75; present holds the last two padded positions. */
START_TEST(causal_conv_bias_past)
{
    node_case c = ccs(CCS_X, CCS_W, F32(DIMS(2), 0.25, -0.5), CCS_PAST, false);
    xf_tensor *out[2];
    run_case(&c, out);
    EXPECT(out[0], XF_DT_FLOAT, DIMS(1, 2, 3), 0.25, 3.75, 4.75, 3.5, -1.25, -2);
    EXPECT(out[1], XF_DT_FLOAT, DIMS(1, 2, 2), 2, 3, 0.5, 2);
}
END_TEST

/* Without past_state the row is padded with zeros; silu multiplies by the
 * sigmoid: channel 0's first sum is 2 * 1, and 2 sigmoid(2) = 1.76159. */
START_TEST(causal_conv_silu)
{
    node_case c = ccs(CCS_X, CCS_W, NULL, NULL, true);
    xf_tensor *out[2];
    run_case(&c, out);
    EXPECT(out[0], XF_DT_FLOAT, DIMS(1, 2, 3), 1.76159406, 2.85772228, 4.45055866, 0.311229676, -0.278375179,
           -0.273638308);
    EXPECT(out[1], XF_DT_FLOAT, DIMS(1, 2, 2), 2, 3, 0.5, 2);
}
END_TEST

/* A decode step (one position, shorter than the kernel): present keeps
 * the past's last position and the input; a kernel of 1 keeps no state. */
START_TEST(causal_conv_decode_and_k1)
{
    node_case c = ccs(F32(DIMS(1, 2, 1), 1.5, -2), CCS_W, NULL, CCS_PAST, true);
    xf_tensor *out[2];
    run_case(&c, out);
    EXPECT(out[0], XF_DT_FLOAT, DIMS(1, 2, 1), 0.731058598, 4.45055866);
    EXPECT(out[1], XF_DT_FLOAT, DIMS(1, 2, 2), 1, 1.5, 0.5, -2);
    c = ccs(CCS_X, F32(DIMS(2, 1, 1), 2, -1), F32(DIMS(2), 1, 0), NULL, false);
    run_case(&c, out);
    EXPECT(out[0], XF_DT_FLOAT, DIMS(1, 2, 3), 3, 5, 7, 1, -0.5, -2);
    EXPECT(out[1], XF_DT_FLOAT, DIMS(1, 2, 0), 0);
}
END_TEST

/* LinearAttention's delta rule over two key/value heads of d_k = d_v = 1,
 * each with its own beta, scale 1 (1 / sqrt(1)): head 0's state becomes
 * 0.5 (2 - 0) = 1 and its output 1 x 1. */
static node_case la_two_heads(xf_tensor *past)
{
    node_case c = make_case(XF_OP_LINEAR_ATTENTION, 6, F32(DIMS(1, 2, 2), 1, 2, -1, 0.5),
                            F32(DIMS(1, 2, 2), 1, -1, 0.5, 2), F32(DIMS(1, 2, 2), 2, 1, -1, 3), past, NULL,
                            F32(DIMS(1, 2, 2), 0.5, 1, 0.25, 0.75));
    c.a.attn.num_heads = c.a.attn.kv_num_heads = 2;
    c.a.attn.linear_rule = XF_LINEAR_DELTA;
    c.n_out = 2;
    c.opset = 27;
    return c;
}

static xf_tensor *f16(int ndim, const int64_t *dims, const float *v)
{
    int64_t n = 1;
    for (int d = 0; d < ndim; d++)
        n *= dims[d];
    uint16_t h[64];
    for (int64_t i = 0; i < n && i < 64; i++)
        h[i] = xf_f32_to_f16(v[i]);
    return mk(XF_DT_FLOAT16, ndim, dims, h);
}

/* float16 runs in float and rounds once (these values are exact in
 * float16); LinearAttention's state may be of its own type (its S). */
START_TEST(half_precision)
{
    node_case c = ccs(f16(DIMS(1, 2, 3), (float[]){1, 2, 3, -1, 0.5, 2}),
                      f16(DIMS(2, 1, 3), (float[]){0.5, -1, 2, 1, 1, -0.5}), f16(DIMS(2), (float[]){0.25, -0.5}),
                      f16(DIMS(1, 2, 2), (float[]){-2, 1, 3, 0.5}), false);
    xf_tensor *out[2];
    run_case(&c, out);
    EXPECT(out[0], XF_DT_FLOAT16, DIMS(1, 2, 3), 0.25, 3.75, 4.75, 3.5, -1.25, -2);
    EXPECT(out[1], XF_DT_FLOAT16, DIMS(1, 2, 2), 2, 3, 0.5, 2);
    c = la_two_heads(f16(DIMS(1, 2, 1, 1), (float[]){0, 0}));
    run_case(&c, out);
    EXPECT(out[0], XF_DT_FLOAT, DIMS(1, 2, 2), 1, -2, -0.8125, 3.25);
    EXPECT(out[1], XF_DT_FLOAT16, DIMS(1, 2, 1, 1), 0.8125, 6.5);
}
END_TEST

/* ------------------------------------------------------------ LinearAttention */

/* B 1, T 2, two query heads sharing one key/value head, d_k = d_v = 2 (or
 * the heads and sizes of the last case); past, decay and beta as given. */
static node_case la(int rule, xf_tensor *past, xf_tensor *decay, xf_tensor *beta, float scale)
{
    node_case c = make_case(XF_OP_LINEAR_ATTENTION, 6, F32(DIMS(1, 2, 4), 1, 0, 0.5, -1, 2, 1, -1, 0.5),
                            F32(DIMS(1, 2, 2), 0.6, 0.8, 1, 0), F32(DIMS(1, 2, 2), 1, -2, 0.5, 3), past, decay, beta);
    c.a.attn.num_heads = 2;
    c.a.attn.kv_num_heads = 1;
    c.a.attn.linear_rule = rule;
    c.a.attn.scale = scale;
    c.n_out = 2;
    c.opset = 27;
    return c;
}

#define LA_PAST F32(DIMS(1, 1, 2, 2), 0.5, -1, 2, 0.25)

/* linear: S = k1 v1' after the first token, o = S' q / sqrt(2) for each
 * query head; with a past and scale 0.5. */
START_TEST(linear_attention_linear)
{
    xf_tensor *out[2];
    node_case c = la(XF_LINEAR_PLAIN, NULL, NULL, NULL, 0);
    run_case(&c, out);
    EXPECT(out[0], XF_DT_FLOAT, DIMS(1, 2, 4), 0.424264073, -0.848528147, -0.353553385, 0.707106769, 2.12132025,
           1.41421342, -0.494974792, -1.83847761);
    EXPECT(out[1], XF_DT_FLOAT, DIMS(1, 1, 2, 2), 1.1, 1.8, 0.8, -1.6);
    c = la(XF_LINEAR_PLAIN, LA_PAST, NULL, NULL, 0.5f);
    run_case(&c, out);
    EXPECT(out[0], XF_DT_FLOAT, DIMS(1, 2, 4), 0.55, -1.1, -1.125, 0.125, 3, 0.12499994, -0.100000024, -0.737499952);
    EXPECT(out[1], XF_DT_FLOAT, DIMS(1, 1, 2, 2), 1.6, 0.799999952, 2.8, -1.35);
}
END_TEST

/* gated: one decay per head, and one per key dim (with a past). */
START_TEST(linear_attention_gated)
{
    xf_tensor *out[2];
    node_case c = la(XF_LINEAR_GATED, NULL, F32(DIMS(1, 2, 1), -0.5, -1), NULL, 0);
    run_case(&c, out);
    EXPECT(out[0], XF_DT_FLOAT, DIMS(1, 2, 4), 0.424264073, -0.848528147, -0.353553385, 0.707106769, 1.22736692,
           3.20212054, -0.405579418, -2.01726818);
    EXPECT(out[1], XF_DT_FLOAT, DIMS(1, 1, 2, 2), 0.720727682, 2.55854464, 0.294303536, -0.588607073);
    c = la(XF_LINEAR_GATED, LA_PAST, F32(DIMS(1, 2, 2), -0.5, -0.25, -1, 0), NULL, 0);
    run_case(&c, out);
    EXPECT(out[0], XF_DT_FLOAT, DIMS(1, 2, 4), 0.638705075, -1.27741015, -1.34772336, 0.354992032, 2.8441155,
           2.30907774, 0.245018139, -2.14823604);
    EXPECT(out[1], XF_DT_FLOAT, DIMS(1, 1, 2, 2), 0.832292736, 2.33541441, 2.3576014, -1.4052999);
}
END_TEST

/* delta with one beta for every head ((B, T, 1)), gated delta with a past
 * and per-head decay, and delta with a beta per head (two key/value
 * heads, d_k = d_v = 1: S = 0 + 0.5 (2 - 0) = 1 for head 0, and so on). */
START_TEST(linear_attention_delta)
{
    xf_tensor *out[2];
    node_case c = la(XF_LINEAR_DELTA, NULL, NULL, F32(DIMS(1, 2, 1), 0.5, 0.25), 0);
    run_case(&c, out);
    EXPECT(out[0], XF_DT_FLOAT, DIMS(1, 2, 4), 0.212132037, -0.424264073, -0.176776692, 0.353553385, 0.777817488,
           -0.141421437, -0.106066033, -0.494974703);
    EXPECT(out[1], XF_DT_FLOAT, DIMS(1, 1, 2, 2), 0.35, 0.299999952, 0.4, -0.8);
    c = la(XF_LINEAR_GATED_DELTA, LA_PAST, F32(DIMS(1, 2, 1), -0.5, -1), F32(DIMS(1, 2, 1), 0.5, 0.25), 0);
    run_case(&c, out);
    EXPECT(out[0], XF_DT_FLOAT, DIMS(1, 2, 4), 0.18211028, -0.801680267, -0.723601103, -0.0109962812, 0.576963902,
           0.474862188, 0.0112133268, -0.38084659);
    EXPECT(out[1], XF_DT_FLOAT, DIMS(1, 1, 2, 2), 0.196058527, 0.437188357, 0.423833132, -0.202820182);
    c = la_two_heads(NULL);
    run_case(&c, out);
    EXPECT(out[0], XF_DT_FLOAT, DIMS(1, 2, 2), 1, -2, -0.8125, 3.25);
    EXPECT(out[1], XF_DT_FLOAT, DIMS(1, 2, 1, 1), 0.8125, 6.5);
}
END_TEST

/* ------------------------------------------------------------ shape rules */

START_TEST(shapes)
{
    xf_error e = {0};
    node_case c = la(XF_LINEAR_GATED, NULL, F32(DIMS(1, 2, 2), 0, 0, 0, 0), NULL, 0);
    xf_graph *g = case_graph(&c);
    ck_assert_msg(xf_graph_infer_shapes(g, 27, &e) == XF_OK, "%s", e.msg);
    const xf_value *o = &g->values[g->nodes[0].outputs[0]], *s = &g->values[g->nodes[0].outputs[1]];
    ck_assert(o->shape.ndim == 3 && o->shape.dims[2] == 4 && o->dtype == XF_DT_FLOAT);
    ck_assert(s->shape.ndim == 4 && s->shape.dims[1] == 1 && s->shape.dims[2] == 2 && s->shape.dims[3] == 2);
    xf_graph_free(g);
    release_case(&c);
    c = ccs(iota_f32(DIMS(2, 3, 5), 0), iota_f32(DIMS(3, 1, 4), 0), NULL, NULL, false);
    g = case_graph(&c);
    ck_assert_msg(xf_graph_infer_shapes(g, 27, &e) == XF_OK, "%s", e.msg);
    s = &g->values[g->nodes[0].outputs[1]];
    ck_assert(s->shape.ndim == 3 && s->shape.dims[0] == 2 && s->shape.dims[1] == 3 && s->shape.dims[2] == 3);
    xf_graph_free(g);
    release_case(&c);
}
END_TEST

/* Operands and attributes that do not fit fail inference, naming the node. */
START_TEST(shape_errors)
{
    expect_infer_error(ccs(iota_f32(DIMS(2, 3), 0), CCS_W, NULL, NULL, false), "must both be 3-D");
    expect_infer_error(ccs(iota_f32(DIMS(1, 3, 4), 0), CCS_W, NULL, NULL, false), "is not (3, 1, kernel)");
    expect_infer_error(ccs(CCS_X, iota_f32(DIMS(2, 1, 0), 0), NULL, NULL, false), "a kernel of 1 to 2^31");
    expect_infer_error(ccs(CCS_X, CCS_W, F32(DIMS(3), 0, 0, 0), NULL, false), "bias is 3, expected 2");
    expect_infer_error(ccs(CCS_X, CCS_W, NULL, iota_f32(DIMS(1, 2, 3), 0), false), "past_state is 1x2x3");
    expect_infer_error(ccs(I64(DIMS(1, 1, 1), 1), I64(DIMS(1, 1, 1), 1), NULL, NULL, false),
                       "input 0 is INT64; it must be float, float16 or bfloat16");
    expect_infer_error(ccs(CCS_X, mk(XF_DT_DOUBLE, DIMS(2, 1, 3), (double[]){0, 0, 0, 0, 0, 0}), NULL, NULL, false),
                       "input 1 is DOUBLE");
    node_case c = la(XF_LINEAR_PLAIN, NULL, NULL, NULL, 0);
    c.a.attn.num_heads = 3;
    c.a.attn.kv_num_heads = 2;
    expect_infer_error(c, "q_num_heads 3 is not a positive multiple of kv_num_heads 2");
    c = la(XF_LINEAR_PLAIN, NULL, NULL, NULL, 0);
    c.a.attn.kv_num_heads = 0;
    expect_infer_error(c, "kv_num_heads 0");
    c = la(XF_LINEAR_PLAIN, NULL, NULL, NULL, 0);
    c.a.attn.num_heads = c.a.attn.kv_num_heads = 4;
    expect_infer_error(c, "do not split into 4 and 4 heads");
    expect_infer_error(la(XF_LINEAR_GATED, NULL, NULL, NULL, 0), "update_rule gated needs decay");
    expect_infer_error(la(XF_LINEAR_PLAIN, NULL, NULL, F32(DIMS(1, 2, 1), 1, 1), 0), "takes no beta");
    expect_infer_error(la(XF_LINEAR_DELTA, NULL, NULL, F32(DIMS(1, 2, 3), 1, 1, 1, 1, 1, 1), 0),
                       "beta 1x2x3 is neither (1, 2, 1) nor (1, 2, 1)");
    expect_infer_error(la(XF_LINEAR_GATED, NULL, F32(DIMS(1, 2, 3), 1, 1, 1, 1, 1, 1), NULL, 0),
                       "decay 1x2x3 is neither (1, 2, 1) nor (1, 2, 2)");
    expect_infer_error(la(XF_LINEAR_PLAIN, iota_f32(DIMS(1, 1, 2, 3), 0), NULL, NULL, 0), "past_state is 1x1x2x3");
    c = la(XF_LINEAR_PLAIN, NULL, NULL, NULL, 0);
    c.a.attn.linear_rule = 7;
    expect_infer_error(c, "update_rule 7");
    c = la(XF_LINEAR_PLAIN, NULL, NULL, NULL, 0);
    xf_tensor_release(c.in[0]);
    c.in[0] = iota_f32(DIMS(2, 4), 0);
    expect_infer_error(c, "must be 3-D");
    /* sizes whose products overflow are refused before anything is made */
    c = la(XF_LINEAR_PLAIN, NULL, NULL, NULL, 0);
    c.a.attn.num_heads = c.a.attn.kv_num_heads = (int64_t)1 << 32;
    expect_infer_error(c, "is not a positive multiple");
}
END_TEST

/* Shapes too large to hold are refused by the rule (the graph holds no
 * data for them: its values are declared with those shapes). */
START_TEST(shape_overflow)
{
    xf_graph *g = xf_graph_create("g");
    int64_t huge = (int64_t)1 << 40;
    int x = xf_graph_add_input(g, "x", XF_DT_FLOAT, &(xf_shape){.ndim = 3, .dims = {huge, huge, 4}});
    int w = xf_graph_add_input(g, "w", XF_DT_FLOAT, &(xf_shape){.ndim = 3, .dims = {huge, 1, 3}});
    int outs[2] = {xf_graph_add_value(g, "y", XF_DT_UNDEFINED, NULL),
                   xf_graph_add_value(g, "s", XF_DT_UNDEFINED, NULL)};
    xf_graph_add_node(g, XF_OP_CAUSAL_CONV_WITH_STATE, "n0", 2, (int[]){x, w}, 2, outs);
    xf_error e = {0};
    ck_assert_int_eq(xf_graph_infer_shapes(g, 27, &e), XF_ERR_INVALID);
    ck_assert_msg(strstr(e.msg, "node 'n0'") && strstr(e.msg, "is too large"), "%s", e.msg);
    xf_graph_free(g);
    g = xf_graph_create("g");
    int ins[3];
    ins[0] = xf_graph_add_input(g, "q", XF_DT_FLOAT, &(xf_shape){.ndim = 3, .dims = {1, 1, huge}});
    ins[1] = xf_graph_add_input(g, "k", XF_DT_FLOAT, &(xf_shape){.ndim = 3, .dims = {1, 1, huge}});
    ins[2] = xf_graph_add_input(g, "v", XF_DT_FLOAT, &(xf_shape){.ndim = 3, .dims = {1, 1, huge}});
    outs[0] = xf_graph_add_value(g, "o", XF_DT_UNDEFINED, NULL);
    outs[1] = xf_graph_add_value(g, "s", XF_DT_UNDEFINED, NULL);
    int node = xf_graph_add_node(g, XF_OP_LINEAR_ATTENTION, "n0", 3, ins, 2, outs);
    xf_attrs_default(XF_OP_LINEAR_ATTENTION, &g->nodes[node].attrs);
    g->nodes[node].attrs.attn.num_heads = g->nodes[node].attrs.attn.kv_num_heads = 1;
    g->nodes[node].attrs.attn.linear_rule = XF_LINEAR_PLAIN;
    ck_assert_int_eq(xf_graph_infer_shapes(g, 27, &e), XF_ERR_INVALID);
    ck_assert_msg(strstr(e.msg, "node 'n0'") && strstr(e.msg, "is too large"), "%s", e.msg);
    xf_graph_free(g);
}
END_TEST

/* ------------------------------------------------------------ other backends */

/* Each op and mode once, every operand a graph input (random values). */
static xf_graph *op_graph(int which)
{
    node_case c;
    switch (which) {
    case 0: c = ccs(iota_f32(DIMS(2, 3, 7), 0), iota_f32(DIMS(3, 1, 4), 0), iota_f32(DIMS(3), 0), NULL, true); break;
    case 1:
        c = ccs(iota_f32(DIMS(2, 3, 2), 0), iota_f32(DIMS(3, 1, 4), 0), NULL, iota_f32(DIMS(2, 3, 3), 0), false);
        break;
    case 2: c = la(XF_LINEAR_PLAIN, LA_PAST, NULL, NULL, 0.25f); break;
    case 3: c = la(XF_LINEAR_GATED, NULL, iota_f32(DIMS(1, 2, 2), -3), NULL, 0); break;
    case 4: c = la(XF_LINEAR_DELTA, LA_PAST, NULL, iota_f32(DIMS(1, 2, 1), 0), 0); break;
    default: c = la(XF_LINEAR_GATED_DELTA, NULL, iota_f32(DIMS(1, 2, 1), -3), iota_f32(DIMS(1, 2, 1), 0), 0); break;
    }
    for (int i = 0; i < c.n_in; i++)
        if (c.in[i])
            c.feed |= 1u << i;
    xf_graph *g = case_graph(&c);
    release_case(&c);
    return g;
}

/* The cpu backend runs them (through cpu_ref's kernels) as cpu_ref does;
 * the cuda backend has no device path for them: it takes each node (to
 * run through cpu_ref on host copies). */
START_TEST(backends_run_them)
{
    xf_bt_through_ref(op_graph, 6, 27);
}
END_TEST

/* ------------------------------------------------------------ ONNX attributes */

/* CausalConvWithState and LinearAttention at opset; form 1 gives values
 * xflow does not model (an activation of relu, an update rule of its own,
 * a LinearAttention without kv_num_heads), which keep the nodes opaque. */
static Onnx__GraphProto *state_graph(int form)
{
    static const int64_t x3[] = {1, 2, 3}, w3[] = {2, 1, 3}, q3[] = {1, 2, 4}, kv3[] = {1, 2, 2}, g3[] = {1, 2, 1};
    Onnx__GraphProto *g = mk_graph("g");
    PUSH(g->n_input, g->input, mk_vi("x", XF_DT_FLOAT, 3, x3, NULL));
    PUSH(g->n_input, g->input, mk_vi("w", XF_DT_FLOAT, 3, w3, NULL));
    PUSH(g->n_input, g->input, mk_vi("q", XF_DT_FLOAT, 3, q3, NULL));
    PUSH(g->n_input, g->input, mk_vi("k", XF_DT_FLOAT, 3, kv3, NULL));
    PUSH(g->n_input, g->input, mk_vi("v", XF_DT_FLOAT, 3, kv3, NULL));
    PUSH(g->n_input, g->input, mk_vi("g", XF_DT_FLOAT, 3, g3, NULL));
    PUSH(g->n_input, g->input, mk_vi("b", XF_DT_FLOAT, 3, g3, NULL));
    Onnx__NodeProto *n = mk_node("CausalConvWithState", "ccs", (const char *[]){"x", "w", NULL},
                                 (const char *[]){"y0", "y1", NULL});
    attr_string(n, "activation", form == 1 ? "relu" : "swish");
    PUSH(g->n_node, g->node, n);
    n = mk_node("CausalConvWithState", "ccs2", (const char *[]){"x", "w", NULL}, (const char *[]){"y2", "y3", NULL});
    PUSH(g->n_node, g->node, n);
    n = mk_node("LinearAttention", "la", (const char *[]){"q", "k", "v", "", "g", "b", NULL},
                (const char *[]){"y4", "y5", NULL});
    attr_int(n, "q_num_heads", 2);
    attr_int(n, "kv_num_heads", 1);
    attr_float(n, "scale", 0.5f);
    attr_int(n, "chunk_size", 16);
    PUSH(g->n_node, g->node, n);
    n = mk_node("LinearAttention", "la2", (const char *[]){"q", "k", "v", NULL}, (const char *[]){"y6", "y7", NULL});
    attr_int(n, "q_num_heads", 2);
    if (form != 1)
        attr_int(n, "kv_num_heads", 1);
    attr_string(n, "update_rule", form == 1 ? "mamba" : "linear");
    PUSH(g->n_node, g->node, n);
    static const char *const ys[] = {"y0", "y1", "y2", "y3", "y4", "y5", "y6", "y7"};
    for (int i = 0; i < 8; i++)
        PUSH(g->n_output, g->output, mk_vi(ys[i], XF_DT_FLOAT, -1, NULL, NULL));
    return g;
}

START_TEST(attributes_round_trip)
{
    int counts[XF_OP_COUNT + 1];
    xf_model *m = load_counting(state_graph(0), 27, counts);
    const xf_graph *g = m->graph;
    ck_assert_int_eq(counts[XF_OP_OPAQUE], 0);
    ck_assert_int_eq(counts[XF_OP_CAUSAL_CONV_WITH_STATE], 2);
    ck_assert_int_eq(counts[XF_OP_LINEAR_ATTENTION], 2);
    ck_assert(g->nodes[find_node_by_output(g, "y0")].attrs.attn.conv_silu);
    ck_assert(!g->nodes[find_node_by_output(g, "y2")].attrs.attn.conv_silu);
    const xf_attn_attrs *a = &g->nodes[find_node_by_output(g, "y4")].attrs.attn;
    ck_assert(a->num_heads == 2 && a->kv_num_heads == 1 && a->scale == 0.5f && a->chunk_size == 16 &&
              a->linear_rule == XF_LINEAR_GATED_DELTA);
    a = &g->nodes[find_node_by_output(g, "y6")].attrs.attn;
    ck_assert(a->num_heads == 2 && a->kv_num_heads == 1 && a->scale == 0 && a->chunk_size == 64 &&
              a->linear_rule == XF_LINEAR_PLAIN);
    const xf_value *s = &g->values[g->nodes[find_node_by_output(g, "y5")].outputs[1]];
    ck_assert(s->shape.ndim == 4 && s->shape.dims[2] == 2 && s->shape.dims[3] == 2);
    xf_model_free(roundtrip(m));
    /* the exported node says what it read (defaults left out) */
    uint8_t *buf;
    Onnx__ModelProto *mp = saved_proto(m, &buf);
    for (size_t i = 0; i < mp->graph->n_node; i++) {
        const Onnx__NodeProto *n = mp->graph->node[i];
        if (!strcmp(n->name, "la"))
            ck_assert(has_attr(n, "scale") && has_attr(n, "chunk_size") && !has_attr(n, "update_rule"));
        if (!strcmp(n->name, "la2"))
            ck_assert(has_attr(n, "update_rule") && has_attr(n, "kv_num_heads") && !has_attr(n, "scale"));
        if (!strcmp(n->name, "ccs2"))
            ck_assert(!has_attr(n, "activation"));
    }
    onnx__model_proto__free_unpacked(mp, NULL);
    free(buf);
    xf_model_free(m);
}
END_TEST

/* Values xflow does not model keep their nodes opaque, and so do both ops
 * in a model before opset 27. */
START_TEST(attributes_opaque)
{
    int counts[XF_OP_COUNT + 1];
    xf_model *m = load_counting(state_graph(1), 27, counts);
    ck_assert_int_eq(counts[XF_OP_OPAQUE], 2);
    ck_assert_int_eq(counts[XF_OP_CAUSAL_CONV_WITH_STATE], 1);
    ck_assert_int_eq(counts[XF_OP_LINEAR_ATTENTION], 1);
    xf_model_free(roundtrip(m));
    xf_model_free(m);
    m = load_counting(state_graph(0), 26, counts);
    ck_assert_int_eq(counts[XF_OP_OPAQUE], 4);
    xf_model_free(roundtrip(m));
    xf_model_free(m);
}
END_TEST

/* A known node in a graph written at an opset before 27 is refused on
 * export, naming the node. */
START_TEST(export_needs_opset_27)
{
    int counts[XF_OP_COUNT + 1];
    xf_model *m = load_counting(state_graph(0), 27, counts);
    for (int i = 0; i < m->n_opsets; i++)
        if (!m->opsets[i].domain[0])
            m->opsets[i].version = 26;
    expect_export_refused(m, "node 'ccs' (CausalConvWithState)", "needs opset 27", NULL);
    xf_model_free(m);
}
END_TEST

/* ------------------------------------------------------------ FlexAttention */

/* A modifier out = in op c, c an initializer of its own (name c) or of
 * the enclosing graph. */
static Onnx__GraphProto *modifier(const char *op, const char *c, const float *value)
{
    Onnx__GraphProto *g = mk_graph(op);
    PUSH(g->n_input, g->input, mk_vi("m_in", XF_DT_FLOAT, -1, NULL, NULL));
    if (value)
        PUSH(g->n_initializer, g->initializer, mk_raw(c, XF_DT_FLOAT, 0, NULL, value, sizeof *value));
    PUSH(g->n_node, g->node, mk_node(op, "m_op", (const char *[]){"m_in", c, NULL}, (const char *[]){"m_out", NULL}));
    PUSH(g->n_output, g->output, mk_vi("m_out", XF_DT_FLOAT, -1, NULL, NULL));
    return g;
}

/* Q (1, 2, 2, 2), K (1, 1, 3, 2), V (1, 1, 3, 1): two query heads share
 * one key/value head.  form 0: no modifier; 1: scale 1, score_mod adds
 * the outer value `one` (which softmax ignores), prob_mod doubles; 2:
 * K with two heads, which do not divide Q's... three. */
static Onnx__ModelProto *flex_model(int form)
{
    static const int64_t q4[] = {1, 2, 2, 2}, k4[] = {1, 1, 3, 2}, k4b[] = {1, 2, 3, 2}, v4[] = {1, 1, 3, 1};
    static const float one = 1, two = 2;
    Onnx__GraphProto *g = mk_graph("flex");
    PUSH(g->n_input, g->input, mk_vi("Q", XF_DT_FLOAT, 4, q4, NULL));
    PUSH(g->n_input, g->input, mk_vi("K", XF_DT_FLOAT, 4, form == 2 ? k4b : k4, NULL));
    PUSH(g->n_input, g->input, mk_vi("V", XF_DT_FLOAT, 4, v4, NULL));
    PUSH(g->n_initializer, g->initializer, mk_raw("one", XF_DT_FLOAT, 0, NULL, &one, sizeof one));
    Onnx__NodeProto *n = mk_node("FlexAttention", "flex", (const char *[]){"Q", "K", "V", NULL},
                                 (const char *[]){"Y", NULL});
    n->domain = "ai.onnx.preview";
    if (form == 1) {
        attr_float(n, "scale", 1);
        attr_graph(n, "score_mod", modifier("Add", "one", NULL));
        attr_graph(n, "prob_mod", modifier("Mul", "two", &two));
    }
    PUSH(g->n_node, g->node, n);
    PUSH(g->n_output, g->output, mk_vi("Y", XF_DT_FLOAT, -1, NULL, NULL));
    Onnx__ModelProto *m = mk_model(g, 26);
    add_opset(m, "ai.onnx.preview", 1);
    return m;
}

static xf_status flex_run(const xf_model *m, const char *backend, xf_tensor **y, xf_error *e)
{
    static const float q[] = {1, 0, 0, 1, 0.5, 0.5, -1, 1}, k[] = {1, 0, 0, 1, 1, 1, 1, 0, 0, 1, 1, 1},
                       v[] = {1, 2, 4};
    const xf_graph *g = m->graph;
    xf_tensor *in[3];
    for (int i = 0; i < 3; i++)
        in[i] = xf_tensor_from_data(XF_DT_FLOAT, &g->values[g->inputs[i]].shape, i == 0 ? q : i == 1 ? k : v);
    xf_session *s = NULL;
    xf_status st = xf_session_create(g, xf_model_opset(m), backend, NULL, &s, e);
    if (st == XF_OK)
        st = xf_session_run(s, in, y, e);
    xf_session_free(s);
    release_all(in, 3);
    return st;
}

/* softmax(Q K' / sqrt(2)) V per query head, and with the modifiers (the
 * probabilities doubled); on every host backend; the node stays opaque
 * and goes back out unchanged. */
START_TEST(flex_attention_runs)
{
    const char *backends[4];
    int n_backends = host_backends(backends);
    for (int form = 0; form < 2; form++)
        for (int b = 0; b < n_backends; b++) {
            xf_model *m;
            xf_error e = {0};
            ck_assert_msg(load_proto(flex_model(form), NULL, &m, &e) == XF_OK, "%s", e.msg);
            ck_assert_int_eq(m->graph->nodes[0].op, XF_OP_OPAQUE);
            xf_tensor *y = NULL;
            ck_assert_msg(flex_run(m, backends[b], &y, &e) == XF_OK, "%s: %s", backends[b], e.msg);
            if (form == 0)
                EXPECT(y, XF_DT_FLOAT, DIMS(1, 2, 2, 1), 2.40111208, 2.60444832, 2.53977036, 2.42796135);
            else
                EXPECT(y, XF_DT_FLOAT, DIMS(1, 2, 2, 1), 4.84463787, 5.37855053, 5.25931358, 4.79885244);
            xf_model_free(roundtrip(m));
            xf_model_free(m);
        }
}
END_TEST

/* Operands that do not fit fail the run, naming the node. */
START_TEST(flex_attention_errors)
{
    xf_model *m;
    xf_error e = {0};
    ck_assert_msg(load_proto(flex_model(2), NULL, &m, &e) == XF_OK, "%s", e.msg);
    xf_tensor *y = NULL;
    ck_assert_int_eq(flex_run(m, "cpu_ref", &y, &e), XF_ERR_INVALID);
    ck_assert_msg(strstr(e.msg, "node 'flex' (FlexAttention)") && strstr(e.msg, "Hq a multiple of Hkv"), "%s",
                  e.msg);
    xf_model_free(m);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("ops27");
    TCase *tc = tcase_create("kernels");
    tcase_add_test(tc, causal_conv_bias_past);
    tcase_add_test(tc, causal_conv_silu);
    tcase_add_test(tc, causal_conv_decode_and_k1);
    tcase_add_test(tc, half_precision);
    tcase_add_test(tc, linear_attention_linear);
    tcase_add_test(tc, linear_attention_gated);
    tcase_add_test(tc, linear_attention_delta);
    suite_add_tcase(s, tc);
    tc = tcase_create("shapes");
    tcase_add_test(tc, shapes);
    tcase_add_test(tc, shape_errors);
    tcase_add_test(tc, shape_overflow);
    suite_add_tcase(s, tc);
    tc = tcase_create("backends");
    tcase_add_test(tc, backends_run_them);
    suite_add_tcase(s, tc);
    tc = tcase_create("onnx");
    tcase_add_checked_fixture(tc, NULL, free_allocs);
    tcase_add_test(tc, attributes_round_trip);
    tcase_add_test(tc, attributes_opaque);
    tcase_add_test(tc, export_needs_opset_27);
    tcase_add_test(tc, flex_attention_runs);
    tcase_add_test(tc, flex_attention_errors);
    suite_add_tcase(s, tc);
    return xf_test_run_suite(s);
}
