/* The attention family of com.microsoft ops at import and export:
 * attributes read into the block and written back (defaults left out),
 * independent of the model's default opset; forms xflow does not model
 * stay opaque and round-trip unchanged; shape inference with symbolic
 * batch and sequence dims, and the shapes it refuses. */
#include "contrib_io_util.h"
#include "kernel_case_util.h"
#include "xf_test_util.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>

#define MS "com.microsoft"
#define FLOAT ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT
#define INT32 ONNX__TENSOR_PROTO__DATA_TYPE__INT32
#define INT64 ONNX__TENSOR_PROTO__DATA_TYPE__INT64

static const char *const BS[] = {"batch", "seq", NULL};
static const char *const BT[] = {"batch", "total", NULL};

/* x (batch, seq, 16) -> Attention (4 heads, past) -> MultiHeadAttention ->
 * RotaryEmbedding; ids -> EmbedLayerNormalization.  The attributes are
 * the non-default ones of each op. */
static Onnx__GraphProto *family_graph(void)
{
    Onnx__GraphProto *g = mk_graph("g");
    io_input(g, "x", FLOAT, 3, (int64_t[]){-1, -1, 16}, BS);
    io_input(g, "w", FLOAT, 2, (int64_t[]){16, 48}, NULL);
    io_input(g, "bias", FLOAT, 1, (int64_t[]){48}, NULL);
    io_input(g, "mask", INT32, 2, (int64_t[]){-1, -1}, BT);
    io_input(g, "past", FLOAT, 5, (int64_t[]){2, -1, 4, -1, 4}, (const char *const[]){NULL, "batch", NULL, "past", NULL});
    io_input(g, "pos", INT64, 2, (int64_t[]){-1, -1}, BS);
    io_input(g, "cache", FLOAT, 2, (int64_t[]){64, 2}, NULL);
    io_input(g, "ids", INT32, 2, (int64_t[]){-1, -1}, BS);
    io_input(g, "emb", FLOAT, 2, (int64_t[]){50, 16}, NULL);
    io_input(g, "gamma", FLOAT, 1, (int64_t[]){16}, NULL);
    io_input(g, "emask", INT32, 2, (int64_t[]){-1, -1}, BS);
    Onnx__NodeProto *a = ms_node("Attention", (const char *const[]){"x", "w", "bias", "mask", "past", NULL},
                            (const char *const[]){"a", "present", NULL});
    attr_int(a, "num_heads", 4);
    attr_int(a, "unidirectional", 1);
    attr_float(a, "mask_filter_value", -1000.0f);
    attr_ints(a, "qkv_hidden_sizes", 3, (int64_t[]){16, 16, 16});
    Onnx__NodeProto *m = ms_node("MultiHeadAttention", (const char *const[]){"a", "x", "x", NULL},
                            (const char *const[]){"m", NULL});
    attr_int(m, "num_heads", 2);
    attr_float(m, "scale", 0.5f);
    Onnx__NodeProto *r = ms_node("RotaryEmbedding", (const char *const[]){"m", "pos", "cache", "cache", NULL},
                            (const char *const[]){"r", NULL});
    attr_int(r, "interleaved", 1);
    attr_int(r, "num_heads", 4);
    attr_int(r, "rotary_embedding_dim", 4);
    Onnx__NodeProto *e = ms_node("EmbedLayerNormalization",
                            (const char *const[]){"ids", "", "emb", "emb", "", "gamma", "gamma", "emask", NULL},
                            (const char *const[]){"e", "mi", "esum", NULL});
    attr_float(e, "epsilon", 1e-5f);
    PUSH(g->n_node, g->node, a);
    PUSH(g->n_node, g->node, m);
    PUSH(g->n_node, g->node, r);
    PUSH(g->n_node, g->node, e);
    io_output(g, "present", FLOAT);
    io_output(g, "r", FLOAT);
    io_output(g, "e", FLOAT);
    io_output(g, "mi", INT32);
    io_output(g, "esum", FLOAT);
    return g;
}

static xf_model *load_family(int64_t opset, int64_t batch, int64_t seq, int64_t past)
{
    Onnx__ModelProto *mp = mk_model(family_graph(), opset);
    add_opset(mp, MS, 1);
    xf_dim_size sizes[] = {{"batch", batch}, {"seq", seq}, {"past", past}, {"total", past + seq}};
    xf_load_options opt = {.dim_sizes = sizes, .n_dim_sizes = 4};
    xf_model *m;
    xf_error e;
    ck_assert_msg(load_proto(mp, &opt, &m, &e) == XF_OK, "%s", e.msg);
    return m;
}

/* The attributes land in the block whatever the default opset; export
 * writes them back (defaults left out) and the round trip is exact. */
START_TEST(test_attrs_roundtrip)
{
    for (int64_t opset = 13; opset <= 21; opset += 8) {
        xf_model *m = load_family(opset, 2, 3, 5);
        int counts[XF_OP_COUNT + 1];
        xf_graph_count_ops(m->graph, counts);
        ck_assert_int_eq(counts[XF_OP_OPAQUE], 0);
        const xf_attn_attrs *a = &node_of(m, XF_OP_MS_ATTENTION)->attrs.attn;
        ck_assert_int_eq(a->num_heads, 4);
        ck_assert_int_eq(a->unidirectional, 1);
        ck_assert_int_eq(a->n_qkv_sizes, 3);
        ck_assert_float_eq(a->mask_filter_value, -1000.0f);
        ck_assert_float_eq(a->scale, 0.0f);
        const xf_attn_attrs *h = &node_of(m, XF_OP_MS_MHA)->attrs.attn;
        ck_assert_int_eq(h->num_heads, 2);
        ck_assert_float_eq(h->scale, 0.5f);
        ck_assert_float_eq(h->mask_filter_value, -10000.0f);
        const xf_attn_attrs *r = &node_of(m, XF_OP_MS_ROTARY_EMB)->attrs.attn;
        ck_assert_int_eq(r->interleaved, 1);
        ck_assert_int_eq(r->rotary_dim, 4);
        ck_assert_float_eq(r->scale, 1.0f);
        const xf_node *e = node_of(m, XF_OP_MS_EMBED_LAYER_NORM);
        ck_assert_float_eq(e->attrs.epsilon, 1e-5f);
        ck_assert_int_eq(e->attrs.attn.mask_index_type, 1);
        uint8_t *buf;
        Onnx__ModelProto *mp = saved_proto(m, &buf);
        for (size_t i = 0; i < mp->graph->n_node; i++) {
            const Onnx__NodeProto *n = mp->graph->node[i];
            ck_assert_str_eq(n->domain, MS);
            ck_assert(!has_attr(n, "mask_filter_value") || strcmp(n->op_type, "Attention") == 0);
            ck_assert(!has_attr(n, "scale") || strcmp(n->op_type, "MultiHeadAttention") == 0);
            ck_assert(!has_attr(n, "mask_index_type"));
        }
        ck_assert(has_attr(mp->graph->node[0], "qkv_hidden_sizes") && has_attr(mp->graph->node[0], "unidirectional"));
        onnx__model_proto__free_unpacked(mp, NULL);
        free(buf);
        xf_model_free(roundtrip(m));
        if (opset == 21)
            assert_saved_valid(m, "contrib_attn_family");
        xf_model_free(m);
    }
}
END_TEST

/* Shapes follow the sizes given to the symbolic dims: batch, seq, and
 * past + seq for the present state. */
START_TEST(test_symbolic_shapes)
{
    static const int64_t sizes[][3] = {{2, 3, 5}, {1, 7, 0}, {4, 1, 9}};
    for (int i = 0; i < 3; i++) {
        int64_t b = sizes[i][0], s = sizes[i][1], p = sizes[i][2];
        xf_model *m = load_family(17, b, s, p);
        shape_is(m, "a", 3, (int64_t[]){b, s, 16});
        shape_is(m, "present", 5, (int64_t[]){2, b, 4, p + s, 4});
        shape_is(m, "m", 3, (int64_t[]){b, s, 16});
        shape_is(m, "r", 3, (int64_t[]){b, s, 16});
        shape_is(m, "e", 3, (int64_t[]){b, s, 16});
        shape_is(m, "mi", 1, (int64_t[]){b});
        shape_is(m, "esum", 3, (int64_t[]){b, s, 16});
        int mi = xf_graph_find_value(m->graph, "mi");
        ck_assert_int_eq(m->graph->values[mi].dtype, XF_DT_INT32);
        xf_model_free(m);
    }
}
END_TEST

static const char *const ATT[] = {"x", "w", "b", NULL};
static void heads(Onnx__NodeProto *n) { attr_int(n, "num_heads", 2); }
static void rotary_attn(Onnx__NodeProto *n) { heads(n); attr_int(n, "do_rotary", 1); }
static void shared_buffer(Onnx__NodeProto *n) { heads(n); attr_int(n, "past_present_share_buffer", 1); }
static void no_heads(Onnx__NodeProto *n) { attr_int(n, "unidirectional", 1); }
static void qk_differ(Onnx__NodeProto *n) { heads(n); attr_ints(n, "qkv_hidden_sizes", 3, (int64_t[]){8, 4, 8}); }
static void unknown(Onnx__NodeProto *n) { heads(n); attr_int(n, "not_an_attribute", 1); }
static void uni_two(Onnx__NodeProto *n) { heads(n); attr_int(n, "unidirectional", 2); }
static void heads_float(Onnx__NodeProto *n) { attr_float(n, "num_heads", 2.0f); }
static void packed_batching(Onnx__NodeProto *n) { attr_int(n, "is_packed_batching", 1); }
static void interleaved_two(Onnx__NodeProto *n) { attr_int(n, "interleaved", 2); }
static void odd_rotary(Onnx__NodeProto *n) { heads(n); attr_int(n, "rotary_embedding_dim", 3); }
static void rotary_no_heads(Onnx__NodeProto *n) { attr_int(n, "rotary_embedding_dim", 4); }
static void mask_type(Onnx__NodeProto *n) { attr_int(n, "mask_index_type", 2); }
static void none(Onnx__NodeProto *n) { (void)n; }

/* Forms xflow does not model stay opaque (and come back unchanged); the
 * modelled neighbours of each are known. */
START_TEST(test_refused_forms)
{
    static const char *const ROT[] = {"x", "l_pos", "c", "s", NULL};
    static const char *const ELN[] = {"i_ids", "", "we", "pe", "", "g", "b", NULL};
    static const char *const QKV[] = {"q", "k", "v", NULL};
    /* past_sequence_length (Attention's input 6) only serves a shared
     * past/present buffer; MultiHeadAttention's output_qk (output 3) and
     * beam search's cache_indirection (input 9) */
    static const char *const ATT_PSL[] = {"x", "w", "b", "", "", "", "i_psl", NULL};
    static const char *const MHA_CI[] = {"q", "k", "v", "", "", "", "pk", "pv", "i_psl", "i_ci", NULL};
    static const opaque_form forms[] = {
        {"Attention", ATT, 1, heads, 0},           {"Attention", ATT, 1, rotary_attn, 1},
        {"Attention", ATT, 1, shared_buffer, 1},   {"Attention", ATT, 1, no_heads, 1},
        {"Attention", ATT, 1, qk_differ, 1},       {"Attention", ATT, 1, unknown, 1},
        {"Attention", ATT, 1, uni_two, 1},         {"Attention", ATT, 1, heads_float, 1},
        {"Attention", ATT_PSL, 1, heads, 1},       {"MultiHeadAttention", QKV, 3, heads, 0},
        {"MultiHeadAttention", QKV, 4, heads, 1},  {"MultiHeadAttention", MHA_CI, 3, heads, 1},
        {"MultiHeadAttention", QKV, 1, rotary_attn, 1},
        {"RotaryEmbedding", ROT, 1, none, 0},      {"RotaryEmbedding", ROT, 1, packed_batching, 1},
        {"RotaryEmbedding", ROT, 1, interleaved_two, 1}, {"RotaryEmbedding", ROT, 1, odd_rotary, 1},
        {"RotaryEmbedding", ROT, 1, rotary_no_heads, 1}, {"EmbedLayerNormalization", ELN, 2, none, 0},
        {"EmbedLayerNormalization", ELN, 2, mask_type, 1},
    };
    check_forms(forms, sizeof forms / sizeof forms[0]);
}
END_TEST

static node_case with_heads(node_case c, int64_t n)
{
    c.a.attn.num_heads = n;
    return c;
}

#define RAND(...) iota_f32(DIMS(__VA_ARGS__), 0.0f)

START_TEST(test_shape_errors)
{
    expect_infer_error(with_heads(make_case(XF_OP_MS_ATTENTION, 2, RAND(2, 3, 8), RAND(8, 20)), 2),
                       "do not hold Q, K and V");
    expect_infer_error(with_heads(make_case(XF_OP_MS_ATTENTION, 2, RAND(2, 3, 8), RAND(6, 24)), 2),
                       "are not (B, S, Din)");
    expect_infer_error(with_heads(make_case(XF_OP_MS_ATTENTION, 2, RAND(2, 3, 8), RAND(8, 24)), 3),
                       "3 heads do not divide");
    expect_infer_error(with_heads(make_case(XF_OP_MS_ATTENTION, 4, RAND(2, 3, 8), RAND(8, 24), RAND(24),
                                            I32(DIMS(2, 4), 1, 1, 1, 1, 1, 1, 1, 1)),
                                  2),
                       "mask 2x4 is none of");
    expect_infer_error(with_heads(make_case(XF_OP_MS_ATTENTION, 4, RAND(2, 3, 8), RAND(8, 24), RAND(24),
                                            I32(DIMS(3), 1, 2, 3)),
                                  2),
                       "is none of");
    /* Megatron's 4-D mask loads, and only the run refuses it */
    int32_t ones[2 * 16];
    for (int i = 0; i < 32; i++)
        ones[i] = 1;
    expect_run_error(with_heads(make_case(XF_OP_MS_ATTENTION, 4, RAND(2, 3, 8), RAND(8, 24), RAND(24),
                                          mk(XF_DT_INT32, DIMS(2, 1, 4, 4), ones)),
                                2),
                     "a 4-D mask_index is not supported");
    expect_infer_error(with_heads(make_case(XF_OP_MS_ATTENTION, 4, RAND(2, 3, 8), RAND(8, 24), RAND(24),
                                            mk(XF_DT_INT32, DIMS(2, 1, 2, 2), ones)),
                                  2),
                       "is none of");
    expect_infer_error(with_heads(make_case(XF_OP_MS_ATTENTION, 6, RAND(2, 3, 8), RAND(8, 24), RAND(24), NULL,
                                            RAND(2, 2, 2, 1, 4), RAND(2, 2, 3, 4)),
                                  2),
                       "past and attention_bias");
    expect_infer_error(with_heads(make_case(XF_OP_MS_ATTENTION, 6, RAND(2, 3, 8), RAND(8, 24), RAND(24), NULL,
                                            NULL, RAND(2, 2, 3, 4)),
                                  2),
                       "attention_bias 2x2x3x4");
    expect_infer_error(with_heads(make_case(XF_OP_MS_MHA, 3, RAND(2, 3, 8), RAND(2, 4, 8), RAND(2, 5, 8)), 2),
                       "not a form MultiHeadAttention takes");
    expect_infer_error(with_heads(make_case(XF_OP_MS_MHA, 3, RAND(2, 3, 8), RAND(2, 4, 8), RAND(2, 4, 8)), 3),
                       "3 heads do not divide");
    expect_infer_error(with_heads(make_case(XF_OP_MS_MHA, 7, RAND(2, 3, 8), RAND(2, 4, 8), RAND(2, 4, 8), NULL, NULL,
                                            NULL, RAND(2, 2, 1, 4)),
                                  2),
                       "come together");
    expect_infer_error(make_case(XF_OP_MS_ROTARY_EMB, 4, RAND(2, 3, 8), I64(DIMS(1), 0), RAND(16, 3), RAND(16, 3)),
                       "do not agree");
    expect_infer_error(make_case(XF_OP_MS_ROTARY_EMB, 4, RAND(2, 3, 8), I64(DIMS(2, 2), 0, 0, 0, 0), RAND(16, 2),
                                 RAND(16, 2)),
                       "position_ids");
    expect_infer_error(make_case(XF_OP_MS_EMBED_LAYER_NORM, 7, I32(DIMS(1, 2), 0, 1), NULL, RAND(5, 4), RAND(5, 4),
                                 NULL, RAND(3), RAND(4)),
                       "gamma is 3");
    expect_infer_error(make_case(XF_OP_MS_EMBED_LAYER_NORM, 7, I32(DIMS(1, 2), 0, 1), I32(DIMS(1, 2), 0, 0),
                                 RAND(5, 4), RAND(5, 4), NULL, RAND(4), RAND(4)),
                       "come together");
    expect_infer_error(make_case(XF_OP_MS_ATTENTION, 2, mk(XF_DT_INT32, DIMS(2, 3, 8), (int32_t[48]){0}), RAND(8, 24)),
                       "takes float, float16 or bfloat16 data");
    /* float16 data with float weights */
    expect_infer_error(make_case(XF_OP_MS_ATTENTION, 2, mk(XF_DT_FLOAT16, DIMS(2, 3, 8), (uint16_t[48]){0}),
                                 RAND(8, 24)),
                       "(all alike)");
}
END_TEST

int main(void)
{
    Suite *s = suite_create("contrib_attn_io");
    TCase *tc = tcase_create("io");
    tcase_add_checked_fixture(tc, NULL, free_allocs);
    tcase_add_test(tc, test_attrs_roundtrip);
    tcase_add_test(tc, test_symbolic_shapes);
    tcase_add_test(tc, test_refused_forms);
    tcase_add_test(tc, test_shape_errors);
    suite_add_tcase(s, tc);
    return xf_test_run_suite(s);
}
