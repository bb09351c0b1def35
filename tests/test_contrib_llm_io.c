/* MatMulNBits and GroupQueryAttention at import and export: attributes read
 * into the block and written back, independent of the model's default
 * opset; forms xflow does not model stay opaque and round-trip unchanged;
 * shape inference with symbolic batch and sequence dims (the present state
 * follows total_sequence_length when its value is known at load), the
 * shapes it refuses, and the runs refused. */
#include "contrib_io_util.h"
#include "kernel_case_util.h"
#include "xf_test_util.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>

#define MS "com.microsoft"
#define FLOAT ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT
#define UINT8 ONNX__TENSOR_PROTO__DATA_TYPE__UINT8
#define INT32 ONNX__TENSOR_PROTO__DATA_TYPE__INT32
#define INT64 ONNX__TENSOR_PROTO__DATA_TYPE__INT64

static void nbits_attrs(Onnx__NodeProto *n, int64_t k, int64_t nn, int64_t bits, int64_t block)
{
    attr_int(n, "K", k);
    attr_int(n, "N", nn);
    attr_int(n, "bits", bits);
    attr_int(n, "block_size", block);
}

/* x (batch, seq, 64) -> MatMulNBits (4 bits, block 32, zero points, bias,
 * accuracy_level 4) -> packed QKV of GroupQueryAttention (4 heads, 2 kv
 * heads, H 8, rotary, every optional attribute set) with past (batch, 2,
 * past, 8); total_sequence_length from the mask's shape (the genai form)
 * -> MatMulNBits (8 bits, block 16). */
static Onnx__GraphProto *llm_graph(void)
{
    Onnx__GraphProto *g = mk_graph("g");
    io_input(g, "x", FLOAT, 3, (int64_t[]){-1, -1, 64}, (const char *const[]){"batch", "seq", NULL});
    io_input(g, "mask", INT64, 2, (int64_t[]){-1, -1}, (const char *const[]){"batch", "total", NULL});
    io_input(g, "past_k", FLOAT, 4, (int64_t[]){-1, 2, -1, 8}, (const char *const[]){"batch", NULL, "past", NULL});
    io_input(g, "past_v", FLOAT, 4, (int64_t[]){-1, 2, -1, 8}, (const char *const[]){"batch", NULL, "past", NULL});
    io_input(g, "seqlens", INT32, 1, (int64_t[]){-1}, (const char *const[]){"batch"});
    static uint8_t w1[64 * 2 * 16], zp1[64], w2[32 * 2 * 16];
    static float s1[64 * 2], b1[64], cache[32 * 4], s2[32 * 2];
    static int64_t one = 1;
    /* the protos keep pointers to the dims */
    static int64_t dw1[] = {64, 2, 16}, ds1[] = {128}, d64[] = {64}, dcache[] = {32, 4}, dw2[] = {32, 2, 16};
    PUSH(g->n_initializer, g->initializer, mk_raw("w1", UINT8, 3, dw1, w1, sizeof w1));
    PUSH(g->n_initializer, g->initializer, mk_raw("s1", FLOAT, 1, ds1, s1, sizeof s1));
    PUSH(g->n_initializer, g->initializer, mk_raw("zp1", UINT8, 1, d64, zp1, sizeof zp1));
    PUSH(g->n_initializer, g->initializer, mk_raw("b1", FLOAT, 1, d64, b1, sizeof b1));
    PUSH(g->n_initializer, g->initializer, mk_raw("cache", FLOAT, 2, dcache, cache, sizeof cache));
    PUSH(g->n_initializer, g->initializer, mk_raw("w2", UINT8, 3, dw2, w2, sizeof w2));
    PUSH(g->n_initializer, g->initializer, mk_raw("s2", FLOAT, 1, d64, s2, sizeof s2));
    PUSH(g->n_initializer, g->initializer, mk_raw("one", INT64, 0, NULL, &one, sizeof one));
    Onnx__NodeProto *m1 = ms_node("MatMulNBits", (const char *const[]){"x", "w1", "s1", "zp1", "", "b1", NULL},
                             (const char *const[]){"qkv", NULL});
    nbits_attrs(m1, 64, 64, 4, 32);
    attr_int(m1, "accuracy_level", 4);
    Onnx__NodeProto *shp = mk_node("Shape", NULL, (const char *const[]){"mask", NULL}, (const char *const[]){"ms", NULL});
    Onnx__NodeProto *gat = mk_node("Gather", NULL, (const char *const[]){"ms", "one", NULL},
                                   (const char *const[]){"t64", NULL});
    Onnx__NodeProto *cst = mk_node("Cast", NULL, (const char *const[]){"t64", NULL}, (const char *const[]){"total", NULL});
    attr_int(cst, "to", INT32);
    Onnx__NodeProto *q = ms_node("GroupQueryAttention",
                            (const char *const[]){"qkv", "", "", "past_k", "past_v", "seqlens", "total", "cache",
                                                  "cache", NULL},
                            (const char *const[]){"att", "present_k", "present_v", NULL});
    attr_int(q, "num_heads", 4);
    attr_int(q, "kv_num_heads", 2);
    attr_float(q, "scale", 0.25f);
    attr_float(q, "softcap", 30.0f);
    attr_int(q, "local_window_size", 16);
    attr_int(q, "do_rotary", 1);
    attr_int(q, "rotary_interleaved", 1);
    attr_int(q, "smooth_softmax", 1);
    Onnx__NodeProto *m2 = ms_node("MatMulNBits", (const char *const[]){"att", "w2", "s2", NULL},
                             (const char *const[]){"y", NULL});
    nbits_attrs(m2, 32, 32, 8, 16);
    Onnx__NodeProto *nodes[] = {m1, shp, gat, cst, q, m2};
    for (size_t i = 0; i < sizeof nodes / sizeof nodes[0]; i++)
        PUSH(g->n_node, g->node, nodes[i]);
    io_output(g, "y", FLOAT);
    io_output(g, "present_k", FLOAT);
    io_output(g, "present_v", FLOAT);
    return g;
}

/* canon: canonicalized as xflowc does, which folds the mask's shape into
 * total_sequence_length */
static xf_model *load_llm(int64_t opset, int64_t batch, int64_t seq, int64_t past, bool canon)
{
    Onnx__ModelProto *mp = mk_model(llm_graph(), opset);
    add_opset(mp, MS, 1);
    xf_dim_size sizes[] = {{"batch", batch}, {"seq", seq}, {"past", past}, {"total", past + seq}};
    xf_load_options opt = {.dim_sizes = sizes, .n_dim_sizes = 4};
    xf_model *m;
    xf_error e;
    ck_assert_msg(load_proto(mp, &opt, &m, &e) == XF_OK, "%s", e.msg);
    if (canon)
        ck_assert_msg(xf_canonicalize(m->graph, opset, xf_runtime_eval_node, NULL, &e) == XF_OK, "%s", e.msg);
    return m;
}

START_TEST(test_attrs_roundtrip)
{
    for (int64_t opset = 13; opset <= 21; opset += 8) {
        xf_model *m = load_llm(opset, 2, 3, 5, false);
        int counts[XF_OP_COUNT + 1];
        xf_graph_count_ops(m->graph, counts);
        ck_assert_int_eq(counts[XF_OP_OPAQUE], 0);
        ck_assert_int_eq(counts[XF_OP_MS_MATMUL_NBITS], 2);
        const xf_attn_attrs *q = &node_of(m, XF_OP_MS_GQA)->attrs.attn;
        ck_assert_int_eq(q->num_heads, 4);
        ck_assert_int_eq(q->kv_num_heads, 2);
        ck_assert_float_eq(q->scale, 0.25f);
        ck_assert_float_eq(q->softcap, 30.0f);
        ck_assert_int_eq(q->local_window_size, 16);
        ck_assert_int_eq(q->do_rotary, 1);
        ck_assert_int_eq(q->interleaved, 1);
        ck_assert_int_eq(q->smooth_softmax, 1);
        const xf_attn_attrs *a = &node_of(m, XF_OP_MS_MATMUL_NBITS)->attrs.attn;
        ck_assert(a->nb_k == 64 && a->nb_n == 64 && a->nb_bits == 4 && a->nb_block == 32 && a->nb_accuracy == 4);
        uint8_t *buf;
        Onnx__ModelProto *mp = saved_proto(m, &buf);
        int seen = 0;
        for (size_t i = 0; i < mp->graph->n_node; i++) {
            const Onnx__NodeProto *n = mp->graph->node[i];
            if (strcmp(n->op_type, "MatMulNBits") == 0) {
                ck_assert_str_eq(n->domain, MS);
                ck_assert(has_attr(n, "K") && has_attr(n, "N") && has_attr(n, "bits") && has_attr(n, "block_size"));
                ck_assert(has_attr(n, "accuracy_level") == (seen++ == 0));
            } else if (strcmp(n->op_type, "GroupQueryAttention") == 0) {
                ck_assert(has_attr(n, "rotary_interleaved") && has_attr(n, "smooth_softmax") &&
                          has_attr(n, "softcap") && has_attr(n, "local_window_size"));
            }
        }
        ck_assert_int_eq(seen, 2);
        onnx__model_proto__free_unpacked(mp, NULL);
        free(buf);
        xf_model *back = roundtrip(m);
        ck_assert(xf_attn_attrs_equal(&node_of(back, XF_OP_MS_GQA)->attrs.attn, q));
        xf_model_free(back);
        xf_model_free(m);
        if (opset == 21) { /* onnx.checker wants the present outputs' shapes */
            m = load_llm(opset, 2, 3, 5, true);
            assert_saved_valid(m, "contrib_llm");
            xf_model_free(m);
        }
    }
}
END_TEST

/* Shapes follow the sizes given to the symbolic dims; present is (batch, 2,
 * max(total, past), 8) once the mask's shape gives total_sequence_length,
 * and unknown before. */
START_TEST(test_symbolic_shapes)
{
    static const int64_t sizes[][3] = {{2, 3, 5}, {1, 7, 0}, {4, 1, 9}};
    for (int i = 0; i < 3; i++) {
        int64_t b = sizes[i][0], s = sizes[i][1], p = sizes[i][2];
        xf_model *m = load_llm(17, b, s, p, false);
        int pk = xf_graph_find_value(m->graph, "present_k");
        ck_assert_int_eq(m->graph->values[pk].shape.ndim, -1);
        shape_is(m, "att", 3, (int64_t[]){b, s, 32});
        xf_model_free(m);
        m = load_llm(17, b, s, p, true);
        shape_is(m, "qkv", 3, (int64_t[]){b, s, 64});
        shape_is(m, "att", 3, (int64_t[]){b, s, 32});
        shape_is(m, "y", 3, (int64_t[]){b, s, 32});
        shape_is(m, "present_k", 4, (int64_t[]){b, 2, p + s, 8});
        shape_is(m, "present_v", 4, (int64_t[]){b, 2, p + s, 8});
        xf_model_free(m);
    }
}
END_TEST

static void gqa_heads(Onnx__NodeProto *n)
{
    attr_int(n, "num_heads", 4);
    attr_int(n, "kv_num_heads", 2);
}
static void nb_ok(Onnx__NodeProto *n) { nbits_attrs(n, 32, 8, 4, 16); }
static void nb_bits2(Onnx__NodeProto *n) { nbits_attrs(n, 32, 8, 2, 16); }
static void nb_bits3(Onnx__NodeProto *n) { nbits_attrs(n, 32, 8, 3, 16); }
static void nb_block24(Onnx__NodeProto *n) { nbits_attrs(n, 32, 8, 4, 24); }
static void nb_block8(Onnx__NodeProto *n) { nbits_attrs(n, 32, 8, 4, 8); }
static void nb_prepacked(Onnx__NodeProto *n) { nb_ok(n); attr_int(n, "weight_prepacked", 1); }
static void nb_accuracy5(Onnx__NodeProto *n) { nb_ok(n); attr_int(n, "accuracy_level", 5); }
static void nb_no_k(Onnx__NodeProto *n) { attr_int(n, "N", 8); attr_int(n, "block_size", 16); }
static void gqa_qk(Onnx__NodeProto *n) { gqa_heads(n); attr_int(n, "qk_output", 1); }
static void gqa_quant(Onnx__NodeProto *n) { gqa_heads(n); attr_string(n, "k_quant_type", "PER_TENSOR"); }
static void gqa_unknown(Onnx__NodeProto *n) { gqa_heads(n); attr_int(n, "not_an_attribute", 1); }
static void gqa_no_kv(Onnx__NodeProto *n) { attr_int(n, "num_heads", 4); }
static void gqa_not_multiple(Onnx__NodeProto *n) { attr_int(n, "num_heads", 4); attr_int(n, "kv_num_heads", 3); }
static void gqa_rotary2(Onnx__NodeProto *n) { gqa_heads(n); attr_int(n, "do_rotary", 2); }
static void gqa_window(Onnx__NodeProto *n) { gqa_heads(n); attr_int(n, "local_window_size", -2); }
static void gqa_softcap(Onnx__NodeProto *n) { gqa_heads(n); attr_float(n, "softcap", -1.0f); }
static void no_attrs(Onnx__NodeProto *n) { (void)n; }
static void gbq_ok(Onnx__NodeProto *n) { attr_int(n, "gather_axis", 0); attr_int(n, "quantize_axis", 1); attr_int(n, "block_size", 32); }
static void gbq_axis1(Onnx__NodeProto *n) { attr_int(n, "gather_axis", 1); }
static void gbq_qaxis0(Onnx__NodeProto *n) { attr_int(n, "quantize_axis", 0); }
static void gbq_bits2(Onnx__NodeProto *n) { attr_int(n, "bits", 2); }
static void some_attr(Onnx__NodeProto *n) { attr_int(n, "transB", 1); }

/* Forms xflow does not model stay opaque: other bit widths and block sizes,
 * prepacked weights, GroupQueryAttention's position_ids, attention_bias and
 * head_sink inputs, its output_qk, quantized KV cache, bad head counts;
 * MatMulIntegerToFloat and DynamicQuantizeMatMul with any attribute (they
 * have none); GatherBlockQuantized gathering along another axis than 0,
 * quantized along axis 0, with 2 bits. */
START_TEST(test_refused_forms)
{
    static const char *const NB[] = {"a", "u_b", "s", NULL};
    static const char *const NB_ALL[] = {"a", "u_b", "s", "u_zp", "i_gidx", "bias", NULL};
    static const char *const GQA[] = {"q", "k", "v", "pk", "pv", "i_seqlens", "i_total", NULL};
    static const char *const GQA_TRAILING[] = {"q", "", "", "pk", "pv", "i_seqlens", "i_total", "c", "s", "", "", "", NULL};
    static const char *const GQA_POS[] = {"q", "k", "v", "pk", "pv", "i_seqlens", "i_total", "c", "s", "l_pos", NULL};
    static const char *const GQA_SINK[] = {"q", "k", "v", "", "", "i_seqlens", "i_total", "", "", "", "", "sink", NULL};
    static const char *const MITF[] = {"u_a", "u_b", "as", "bs", "u_az", "u_bz", "bias", NULL};
    static const char *const DQMM[] = {"a", "u_b", "bs", "u_bz", "bias", NULL};
    static const char *const GBQ[] = {"u_d", "l_i", "s", "u_z", NULL};
    static const opaque_form forms[] = {
        {"GatherBlockQuantized", GBQ, 1, gbq_ok, 0},    {"GatherBlockQuantized", GBQ, 1, no_attrs, 0},
        {"GatherBlockQuantized", GBQ, 1, gbq_axis1, 1}, {"GatherBlockQuantized", GBQ, 1, gbq_qaxis0, 1},
        {"GatherBlockQuantized", GBQ, 1, gbq_bits2, 1}, {"GatherBlockQuantized", GBQ, 1, some_attr, 1},
        {"MatMulIntegerToFloat", MITF, 1, no_attrs, 0}, {"MatMulIntegerToFloat", MITF, 1, some_attr, 1},
        {"DynamicQuantizeMatMul", DQMM, 1, no_attrs, 0}, {"DynamicQuantizeMatMul", DQMM, 1, some_attr, 1},
        {"MatMulNBits", NB, 1, nb_ok, 0},          {"MatMulNBits", NB_ALL, 1, nb_ok, 0},
        {"MatMulNBits", NB, 1, nb_bits2, 1},       {"MatMulNBits", NB, 1, nb_bits3, 1},
        {"MatMulNBits", NB, 1, nb_block24, 1},     {"MatMulNBits", NB, 1, nb_block8, 1},
        {"MatMulNBits", NB, 1, nb_prepacked, 1},   {"MatMulNBits", NB, 1, nb_accuracy5, 1},
        {"MatMulNBits", NB, 1, nb_no_k, 1},        {"GroupQueryAttention", GQA, 3, gqa_heads, 0},
        {"GroupQueryAttention", GQA, 1, gqa_heads, 0}, {"GroupQueryAttention", GQA_TRAILING, 3, gqa_heads, 0},
        {"GroupQueryAttention", GQA_POS, 3, gqa_heads, 1}, {"GroupQueryAttention", GQA_SINK, 3, gqa_heads, 1},
        {"GroupQueryAttention", GQA, 4, gqa_heads, 1}, {"GroupQueryAttention", GQA, 3, gqa_qk, 1},
        {"GroupQueryAttention", GQA, 3, gqa_quant, 1}, {"GroupQueryAttention", GQA, 3, gqa_unknown, 1},
        {"GroupQueryAttention", GQA, 3, gqa_no_kv, 1}, {"GroupQueryAttention", GQA, 3, gqa_not_multiple, 1},
        {"GroupQueryAttention", GQA, 3, gqa_rotary2, 1}, {"GroupQueryAttention", GQA, 3, gqa_window, 1},
        {"GroupQueryAttention", GQA, 3, gqa_softcap, 1},
    };
    check_forms(forms, sizeof forms / sizeof forms[0]);
}
END_TEST

#define RAND(...) iota_f32(DIMS(__VA_ARGS__), 0.0f)

static node_case nbits(node_case c, int64_t k, int64_t n, int64_t bits, int64_t block)
{
    c.a.attn.nb_k = k;
    c.a.attn.nb_n = n;
    c.a.attn.nb_bits = bits;
    c.a.attn.nb_block = block;
    return c;
}

static node_case gqa(node_case c, int64_t n, int64_t nk)
{
    c.a.attn.num_heads = n;
    c.a.attn.kv_num_heads = nk;
    c.n_out = 3;
    return c;
}

static xf_tensor *bytes(int64_t n0, int64_t n1, int64_t n2)
{
    return xf_tensor_create(XF_DT_UINT8, &(xf_shape){3, {n0, n1, n2}});
}

START_TEST(test_shape_errors)
{
    expect_infer_error(nbits(make_case(XF_OP_MS_MATMUL_NBITS, 3, RAND(2, 30), bytes(4, 2, 8), RAND(8)), 32, 4, 4, 16),
                       "does not end in K = 32");
    expect_infer_error(nbits(make_case(XF_OP_MS_MATMUL_NBITS, 3, RAND(2, 32), bytes(4, 2, 4), RAND(8)), 32, 4, 4, 16),
                       "B 4x2x4 does not hold 64 values");
    expect_infer_error(nbits(make_case(XF_OP_MS_MATMUL_NBITS, 3, RAND(2, 32), bytes(4, 2, 8), RAND(4)), 32, 4, 4, 16),
                       "scales");
    expect_infer_error(nbits(make_case(XF_OP_MS_MATMUL_NBITS, 6, RAND(2, 32), bytes(4, 2, 8), RAND(8), NULL, NULL,
                                       RAND(5)),
                             32, 4, 4, 16),
                       "bias");
    expect_infer_error(nbits(make_case(XF_OP_MS_MATMUL_NBITS, 3, RAND(2, 32), RAND(4, 2, 8), RAND(8)), 32, 4, 4, 16),
                       "input 1 is FLOAT, expected UINT8");
    xf_tensor *one = I32(DIMS(1), 0), *tot = I32(DIMS(1), 1);
    expect_infer_error(gqa(make_case(XF_OP_MS_GQA, 7, RAND(1, 1, 30), RAND(1, 1, 16), RAND(1, 1, 16), NULL, NULL,
                                     xf_tensor_retain(one), xf_tensor_retain(tot)),
                           4, 2),
                       "does not split into 4 heads");
    expect_infer_error(gqa(make_case(XF_OP_MS_GQA, 7, RAND(1, 1, 32), RAND(1, 1, 8), RAND(1, 1, 16), NULL, NULL,
                                     xf_tensor_retain(one), xf_tensor_retain(tot)),
                           4, 2),
                       "key 1x1x8");
    expect_infer_error(gqa(make_case(XF_OP_MS_GQA, 7, RAND(1, 1, 32), RAND(1, 1, 16), RAND(1, 1, 16), RAND(1, 2, 3, 8),
                                     RAND(1, 2, 4, 8), xf_tensor_retain(one), xf_tensor_retain(tot)),
                           4, 2),
                       "past_key 1x2x3x8 and past_value 1x2x4x8");
    expect_infer_error(gqa(make_case(XF_OP_MS_GQA, 3, RAND(1, 1, 32), RAND(1, 1, 16), RAND(1, 1, 16)), 4, 2),
                       "seqlens_k or total_sequence_length is missing");
    node_case rot = gqa(make_case(XF_OP_MS_GQA, 7, RAND(1, 1, 32), RAND(1, 1, 16), RAND(1, 1, 16), NULL, NULL,
                                  xf_tensor_retain(one), xf_tensor_retain(tot)),
                        4, 2);
    rot.a.attn.do_rotary = 1;
    expect_infer_error(rot, "do_rotary without cos_cache");
    expect_infer_error(gqa(make_case(XF_OP_MS_GQA, 7, RAND(1, 1, 32), RAND(1, 1, 16), RAND(1, 1, 16), NULL, NULL,
                                     RAND(1), xf_tensor_retain(tot)),
                           4, 2),
                       "takes float, float16 or bfloat16 data (all alike) and INT32 indices");
    xf_tensor_release(one);
    xf_tensor_release(tot);
    expect_infer_error(make_case(XF_OP_MS_MATMUL_INTEGER_TO_FLOAT, 4, bytes(2, 3, 4), bytes(2, 4, 5), RAND(1),
                                 RAND(1)),
                       "are not (..., K) and (K, N)");
    expect_infer_error(make_case(XF_OP_MS_MATMUL_INTEGER_TO_FLOAT, 4, bytes(1, 3, 4),
                                 mk(XF_DT_UINT8, DIMS(4, 5), (uint8_t[20]){0}), RAND(3), RAND(1)),
                       "A's scale 3 is not one value");
    expect_infer_error(make_case(XF_OP_MS_DYNAMIC_QUANTIZE_MATMUL, 5, RAND(2, 4),
                                 mk(XF_DT_INT8, DIMS(4, 5), (int8_t[20]){0}), RAND(5), NULL, RAND(4)),
                       "bias 4 does not hold 5 values");
    expect_infer_error(make_case(XF_OP_MS_DYNAMIC_QUANTIZE_MATMUL, 3, RAND(2, 4),
                                 mk(XF_DT_INT8, DIMS(4, 5), (int8_t[20]){0}), RAND(2)),
                       "B's scale 2 is neither one value nor 5");
    expect_infer_error(make_case(XF_OP_MS_DYNAMIC_QUANTIZE_MATMUL, 3, bytes(1, 2, 4),
                                 mk(XF_DT_INT8, DIMS(4, 5), (int8_t[20]){0}), RAND(1)),
                       "input 0 is UINT8, expected FLOAT");
    node_case g = make_case(XF_OP_MS_GATHER_BLOCK_QUANTIZED, 3, bytes(5, 2, 16), I64(DIMS(2), 0, 1), RAND(5, 2, 2));
    g.a.attn.nb_block = 16;
    g.a.axis = 1;
    expect_infer_error(g, "is not quantized along its last axis");
    g = make_case(XF_OP_MS_GATHER_BLOCK_QUANTIZED, 3, bytes(5, 2, 16), I64(DIMS(2), 0, 1), RAND(5, 2, 3));
    g.a.attn.nb_block = 16;
    g.a.axis = -1;
    expect_infer_error(g, "scales 5x2x3, expected 5x2x2");
    g = make_case(XF_OP_MS_GATHER_BLOCK_QUANTIZED, 3, RAND(5, 16), I64(DIMS(2), 0, 1), RAND(5, 1));
    expect_infer_error(g, "takes uint8, int4 or uint4 data");
}
END_TEST

/* What ONNX Runtime's kernel refuses at run time is refused here too: a
 * prompt after past rows with batch > 1, seqlens_k beyond the buffers. */
START_TEST(test_run_errors)
{
    expect_run_error(gqa(make_case(XF_OP_MS_GQA, 7, RAND(2, 2, 32), RAND(2, 2, 16), RAND(2, 2, 16), RAND(2, 2, 3, 8),
                                   RAND(2, 2, 3, 8), I32(DIMS(2), 4, 4), I32(DIMS(1), 5)),
                         4, 2),
                     "needs batch size 1");
    expect_run_error(gqa(make_case(XF_OP_MS_GQA, 7, RAND(1, 1, 32), RAND(1, 1, 16), RAND(1, 1, 16), RAND(1, 2, 3, 8),
                                   RAND(1, 2, 3, 8), I32(DIMS(1), 7), I32(DIMS(1), 4)),
                         4, 2),
                     "seqlens_k out of range");
}
END_TEST

int main(void)
{
    Suite *s = suite_create("contrib_llm_io");
    TCase *tc = tcase_create("io");
    tcase_add_checked_fixture(tc, NULL, free_allocs);
    tcase_add_test(tc, test_attrs_roundtrip);
    tcase_add_test(tc, test_symbolic_shapes);
    tcase_add_test(tc, test_refused_forms);
    tcase_add_test(tc, test_shape_errors);
    tcase_add_test(tc, test_run_errors);
    suite_add_tcase(s, tc);
    return xf_test_run_suite(s);
}
