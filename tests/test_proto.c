/* ONNX import/export (proto/): round trips, what import keeps and refuses,
 * and atomic writes. */
#include <check.h>
#include <glob.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "proto_util.h"
#include "xf_test_util.h"

/* ------------------------------------------------------------ a model built with the core API */

static xf_tensor *filled(xf_dtype dt, int ndim, const int64_t *dims, float scale)
{
    xf_shape s = xf_shape_make(ndim, dims);
    xf_tensor *t = xf_tensor_create(dt, &s);
    ck_assert_ptr_nonnull(t);
    for (int64_t i = 0; i < xf_tensor_numel(t); i++)
        ((float *)t->data)[i] = scale * (float)(i % 7) - 1.0f;
    return t;
}

/* x[1,3,8,8] -> Conv(3x3, pad 1, 4 channels) -> Relu -> Add(bias) -> MaxPool(2x2) -> Softmax(axis 1)
 *                                                                 -> GlobalAveragePool (second output) */
static xf_model *make_cnn(void)
{
    xf_model *m = xf_model_create();
    ck_assert_ptr_nonnull(m);
    xf_graph *g = m->graph;
    free(g->name);
    g->name = strdup("cnn");
    m->ir_version = 8;
    m->opsets = calloc(1, sizeof *m->opsets);
    m->opsets[0].domain = strdup("");
    m->opsets[0].version = 13;
    m->n_opsets = 1;
    int64_t xd[] = {1, 3, 8, 8}, wd[] = {4, 3, 3, 3}, bd[] = {4}, ad[] = {1, 4, 1, 1};
    xf_shape xs = xf_shape_make(4, xd);
    int x = xf_graph_add_input(g, "x", XF_DT_FLOAT, &xs);
    xf_tensor *w = filled(XF_DT_FLOAT, 4, wd, 0.5f), *b = filled(XF_DT_FLOAT, 1, bd, 0.25f),
              *bias = filled(XF_DT_FLOAT, 4, ad, 2.0f);
    int wv = xf_graph_add_initializer(g, "w", w), bv = xf_graph_add_initializer(g, "b", b),
        av = xf_graph_add_initializer(g, "bias", bias);
    xf_tensor_release(w);
    xf_tensor_release(b);
    xf_tensor_release(bias);
    int c = xf_graph_add_value(g, "conv", XF_DT_UNDEFINED, NULL), r = xf_graph_add_value(g, "relu", 0, NULL),
        s = xf_graph_add_value(g, "sum", 0, NULL), p = xf_graph_add_value(g, "pool", 0, NULL),
        y = xf_graph_add_value(g, "y", 0, NULL), z = xf_graph_add_value(g, "z", 0, NULL);
    int conv = xf_graph_add_node(g, XF_OP_CONV, "conv0", 3, (int[]){x, wv, bv}, 1, &c);
    xf_attrs *ca = &g->nodes[conv].attrs;
    ca->n_spatial = 2;
    ca->kernel[0] = ca->kernel[1] = 3;
    for (int i = 0; i < 4; i++)
        ca->pads[i] = 1;
    xf_graph_add_node(g, XF_OP_RELU, "relu0", 1, &c, 1, &r);
    xf_graph_add_node(g, XF_OP_ADD, "add0", 2, (int[]){r, av}, 1, &s);
    int pool = xf_graph_add_node(g, XF_OP_MAX_POOL, "pool0", 1, &s, 1, &p);
    xf_attrs *pa = &g->nodes[pool].attrs;
    pa->n_spatial = 2;
    pa->kernel[0] = pa->kernel[1] = pa->strides[0] = pa->strides[1] = 2;
    int sm = xf_graph_add_node(g, XF_OP_SOFTMAX, "softmax0", 1, &p, 1, &y);
    g->nodes[sm].attrs.axis = 1;
    xf_graph_add_node(g, XF_OP_GLOBAL_AVERAGE_POOL, "gap0", 1, &s, 1, &z);
    xf_graph_add_output(g, y);
    xf_graph_add_output(g, z);
    xf_error e;
    ck_assert_msg(xf_graph_infer_shapes(g, 13, &e) == XF_OK, "%s", e.msg);
    return m;
}

START_TEST(test_roundtrip_core_model)
{
    xf_model *m = make_cnn();
    m->producer_name = strdup("xflow-test");
    m->producer_version = strdup("1.0");
    m->domain = strdup("org.example");
    m->doc_string = strdup("a test model");
    m->model_version = 7;
    m->metadata = calloc(2, sizeof *m->metadata);
    m->metadata[0] = (xf_kv){strdup("author"), strdup("me")};
    m->metadata[1] = (xf_kv){strdup("license"), strdup("MIT")};
    m->n_metadata = 2;
    xf_model *back = roundtrip(m);
    ck_assert_str_eq(back->producer_name, "xflow-test");
    ck_assert_str_eq(back->producer_version, "1.0");
    ck_assert_str_eq(back->domain, "org.example");
    ck_assert_str_eq(back->doc_string, "a test model");
    ck_assert_int_eq(back->graph->n_outputs, 2);
    int y = back->graph->outputs[0];
    ck_assert_int_eq(back->graph->values[y].shape.ndim, 4);
    ck_assert_int_eq(back->graph->values[y].shape.dims[2], 4);
    ck_assert_int_eq(back->graph->nodes[find_node_op(back->graph, XF_OP_CONV)].attrs.pads[3], 1);

    /* and through a file */
    const char *dir = xf_test_tmpdir("proto_roundtrip");
    xf_error e;
    ck_assert_msg(xf_model_save(m, path_in(dir, "cnn.onnx"), NULL, &e) == XF_OK, "%s", e.msg);
    xf_model *fromfile;
    ck_assert_msg(xf_model_load(path_in(dir, "cnn.onnx"), NULL, &fromfile, &e) == XF_OK, "%s", e.msg);
    char why[512];
    ck_assert_msg(models_equal(m, fromfile, why, sizeof why), "%s", why);
    ck_assert_int_eq(count_files(dir), 1); /* no temporary file left */
    assert_onnx_valid(path_in(dir, "cnn.onnx"));
    xf_model_free(fromfile);
    xf_model_free(back);
    xf_model_free(m);
}
END_TEST

START_TEST(test_fused_activation_exported_as_two_nodes)
{
    xf_model *m = make_cnn();
    xf_graph *g = m->graph;
    /* Fuse the Relu into the Conv by hand, as the optimizer would. */
    int conv = find_node_op(g, XF_OP_CONV), relu = find_node_op(g, XF_OP_RELU);
    g->nodes[conv].attrs.activation = XF_ACT_RELU;
    xf_graph_replace_uses(g, g->nodes[relu].outputs[0], g->nodes[conv].outputs[0]);
    bool *keep = calloc((size_t)g->n_nodes, sizeof *keep);
    for (int i = 0; i < g->n_nodes; i++)
        keep[i] = i != relu;
    xf_graph_compact(g, keep);
    free(keep);
    uint8_t *buf;
    size_t len;
    xf_error e;
    ck_assert_msg(xf_model_save_buffer(m, &buf, &len, &e) == XF_OK, "%s", e.msg);
    Onnx__ModelProto *mp = onnx__model_proto__unpack(NULL, len, buf);
    ck_assert_ptr_nonnull(mp);
    int conv_at = -1, relu_at = -1;
    for (size_t i = 0; i < mp->graph->n_node; i++) {
        if (!strcmp(mp->graph->node[i]->op_type, "Conv"))
            conv_at = (int)i;
        if (!strcmp(mp->graph->node[i]->op_type, "Relu"))
            relu_at = (int)i;
    }
    ck_assert_int_ge(conv_at, 0);
    ck_assert_int_eq(relu_at, conv_at + 1);
    ck_assert_str_eq(mp->graph->node[relu_at]->input[0], mp->graph->node[conv_at]->output[0]);
    ck_assert_str_eq(mp->graph->node[relu_at]->output[0], "conv");
    onnx__model_proto__free_unpacked(mp, NULL);
    assert_saved_valid(m, "proto_fused");
    free(buf);
    xf_model_free(m);
}
END_TEST

/* ------------------------------------------------------------ opaque nodes and subgraphs */

/* A custom-domain op with a string attribute and a subgraph that uses the
 * outer value 'h' by name. */
static Onnx__ModelProto *make_custom_op_model(Onnx__NodeProto **custom_out)
{
    static const int64_t d4[] = {4};
    Onnx__GraphProto *g = mk_graph("outer");
    PUSH(g->n_input, g->input, mk_vi("x", XF_DT_FLOAT, 1, d4, NULL));
    PUSH(g->n_node, g->node, mk_node("Relu", "r", (const char *[]){"x", NULL}, (const char *[]){"h", NULL}));

    Onnx__GraphProto *body = mk_graph("body");
    PUSH(body->n_node, body->node,
         mk_node("Add", "inner", (const char *[]){"h", "h", NULL}, (const char *[]){"b", NULL}));
    PUSH(body->n_output, body->output, mk_vi("b", XF_DT_FLOAT, 1, d4, NULL));

    Onnx__NodeProto *custom = mk_node("MyOp", "custom", (const char *[]){"x", NULL}, (const char *[]){"y", NULL});
    custom->domain = "com.example";
    custom->doc_string = "kept verbatim";
    attr_string(custom, "mode", "fancy");
    static const int64_t sizes[] = {1, 2, 3};
    attr_ints(custom, "sizes", 3, sizes);
    Onnx__AttributeProto *ga = mk_attr(custom, "body", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH);
    ga->g = body;
    PUSH(g->n_node, g->node, custom);
    PUSH(g->n_output, g->output, mk_vi("y", XF_DT_FLOAT, 1, d4, NULL));
    Onnx__ModelProto *m = mk_model(g, 13);
    add_opset(m, "com.example", 1);
    *custom_out = custom;
    return m;
}

START_TEST(test_opaque_custom_op_survives)
{
    Onnx__NodeProto *custom;
    Onnx__ModelProto *mp = make_custom_op_model(&custom);
    xf_model *m;
    xf_error e;
    ck_assert_msg(load_proto(mp, NULL, &m, &e) == XF_OK, "%s", e.msg);
    xf_graph *g = m->graph;
    int op = find_node_op(g, XF_OP_OPAQUE);
    ck_assert_int_ge(op, 0);
    ck_assert_str_eq(g->nodes[op].opaque->op_type, "MyOp");
    ck_assert_str_eq(g->nodes[op].opaque->domain, "com.example");
    /* the subgraph's use of 'h' is an input in the IR, after the node's own */
    ck_assert_int_eq(g->nodes[op].n_inputs, 2);
    ck_assert_str_eq(g->values[g->nodes[op].inputs[1]].name, "h");
    /* declared output type is kept for the opaque node's output */
    int y = g->outputs[0];
    ck_assert_int_eq(g->values[y].dtype, XF_DT_FLOAT);
    ck_assert_int_eq(g->values[y].shape.dims[0], 4);

    uint8_t *buf;
    size_t len;
    ck_assert_msg(xf_model_save_buffer(m, &buf, &len, &e) == XF_OK, "%s", e.msg);
    Onnx__ModelProto *out = onnx__model_proto__unpack(NULL, len, buf);
    ck_assert_ptr_nonnull(out);
    const Onnx__NodeProto *written = NULL;
    for (size_t i = 0; i < out->graph->n_node; i++)
        if (!strcmp(out->graph->node[i]->op_type, "MyOp"))
            written = out->graph->node[i];
    ck_assert_ptr_nonnull(written);
    size_t la = onnx__node_proto__get_packed_size(custom), lb = onnx__node_proto__get_packed_size(written);
    uint8_t *pa = zalloc(la), *pb = zalloc(lb);
    onnx__node_proto__pack(custom, pa);
    onnx__node_proto__pack(written, pb);
    ck_assert_uint_eq(la, lb);
    ck_assert(memcmp(pa, pb, la) == 0);
    onnx__model_proto__free_unpacked(out, NULL);
    free(buf);
    assert_saved_valid(m, "proto_custom");
    xf_model_free(roundtrip(m));
    xf_model_free(m);
}
END_TEST

START_TEST(test_outer_value_kept_by_name_after_rewrite)
{
    /* x -> Relu -> h; the custom op's body uses h.  Replace h by a fresh
     * value computed the same way and drop the old Relu: export must still
     * provide the name 'h' that the body refers to. */
    Onnx__NodeProto *custom;
    Onnx__ModelProto *mp = make_custom_op_model(&custom);
    xf_model *m;
    xf_error e;
    ck_assert_msg(load_proto(mp, NULL, &m, &e) == XF_OK, "%s", e.msg);
    xf_graph *g = m->graph;
    int relu = find_node_op(g, XF_OP_RELU);
    int x = g->inputs[0], h = g->nodes[relu].outputs[0];
    int h2 = xf_graph_add_value(g, "h_new", XF_DT_FLOAT, &g->values[h].shape);
    xf_graph_add_node(g, XF_OP_RELU, "r2", 1, &x, 1, &h2);
    xf_graph_replace_uses(g, h, h2);
    bool *keep = calloc((size_t)g->n_nodes, sizeof *keep);
    for (int i = 0; i < g->n_nodes; i++)
        keep[i] = i != relu;
    xf_graph_compact(g, keep);
    free(keep);
    ck_assert_int_eq(xf_graph_toposort(g, &e), XF_OK);
    ck_assert_int_lt(xf_graph_find_value(g, "h"), 0);

    uint8_t *buf;
    size_t len;
    ck_assert_msg(xf_model_save_buffer(m, &buf, &len, &e) == XF_OK, "%s", e.msg);
    xf_model *back;
    ck_assert_msg(xf_model_load_buffer(buf, len, NULL, NULL, &back, &e) == XF_OK, "%s", e.msg);
    int bh = xf_graph_find_value(back->graph, "h");
    ck_assert_int_ge(bh, 0);
    ck_assert_int_eq(back->graph->nodes[back->graph->values[bh].producer].op, XF_OP_IDENTITY);
    assert_saved_valid(m, "proto_outer");
    free(buf);
    xf_model_free(back);
    xf_model_free(m);
}
END_TEST

START_TEST(test_known_op_with_unmodelled_attribute_stays_opaque)
{
    static const int64_t d[] = {1, 1, 4, 4}, k[] = {2, 2};
    Onnx__GraphProto *g = mk_graph("g");
    PUSH(g->n_input, g->input, mk_vi("x", XF_DT_FLOAT, 4, d, NULL));
    Onnx__NodeProto *pool = mk_node("MaxPool", "p", (const char *[]){"x", NULL}, (const char *[]){"y", NULL});
    attr_ints(pool, "kernel_shape", 2, k);
    attr_int(pool, "storage_order", 2);
    PUSH(g->n_node, g->node, pool);
    Onnx__NodeProto *sm = mk_node("Softmax", "s", (const char *[]){"y", NULL}, (const char *[]){"z", NULL});
    attr_string(sm, "flavour", "unknown");
    PUSH(g->n_node, g->node, sm);
    Onnx__NodeProto *lrelu = mk_node("LeakyRelu", "l", (const char *[]){"x", NULL}, (const char *[]){"w", NULL});
    attr_float(lrelu, "alpha", 0.2f);
    PUSH(g->n_node, g->node, lrelu);
    PUSH(g->n_output, g->output, mk_vi("z", XF_DT_FLOAT, 4, (const int64_t[]){1, 1, 2, 2}, NULL));
    PUSH(g->n_output, g->output, mk_vi("w", XF_DT_FLOAT, 4, d, NULL));
    int counts[XF_OP_COUNT + 1];
    xf_model *m = load_counting(g, 11, counts);
    ck_assert_int_eq(counts[XF_OP_OPAQUE], 2);
    ck_assert_int_eq(counts[XF_OP_LEAKY_RELU], 1);
    ck_assert(m->graph->nodes[find_node_op(m->graph, XF_OP_LEAKY_RELU)].attrs.alpha == 0.2f);
    /* z's shape comes from the declared output, the opaque node's own */
    int z = m->graph->outputs[0];
    ck_assert_int_eq(m->graph->values[z].shape.dims[3], 2);
    xf_model_free(roundtrip(m));
    xf_model_free(m);
}
END_TEST

/* ------------------------------------------------------------ import forms */

START_TEST(test_nodes_out_of_order)
{
    static const int64_t d[] = {2, 3};
    Onnx__GraphProto *g = mk_graph("g");
    PUSH(g->n_input, g->input, mk_vi("x", XF_DT_FLOAT, 2, d, NULL));
    PUSH(g->n_node, g->node, mk_node("Neg", "c", (const char *[]){"b", NULL}, (const char *[]){"y", NULL}));
    PUSH(g->n_node, g->node, mk_node("Abs", "b", (const char *[]){"a", NULL}, (const char *[]){"b", NULL}));
    PUSH(g->n_node, g->node, mk_node("Relu", "a", (const char *[]){"x", NULL}, (const char *[]){"a", NULL}));
    PUSH(g->n_output, g->output, mk_vi("y", XF_DT_FLOAT, 2, d, NULL));
    xf_model *m;
    xf_error e;
    ck_assert_msg(load_proto(mk_model(g, 13), NULL, &m, &e) == XF_OK, "%s", e.msg);
    ck_assert_int_eq(m->graph->n_nodes, 3);
    ck_assert_int_eq(m->graph->nodes[0].op, XF_OP_RELU);
    ck_assert_int_eq(m->graph->nodes[1].op, XF_OP_ABS);
    ck_assert_int_eq(m->graph->nodes[2].op, XF_OP_NEG);
    ck_assert_int_eq(xf_graph_validate(m->graph, &e), XF_OK);
    xf_model_free(m);
}
END_TEST

START_TEST(test_initializer_listed_as_input)
{
    static const int64_t d[] = {2};
    static const float w[] = {1.5f, -2.0f};
    Onnx__GraphProto *g = mk_graph("g");
    PUSH(g->n_input, g->input, mk_vi("x", XF_DT_FLOAT, 1, d, NULL));
    PUSH(g->n_input, g->input, mk_vi("w", XF_DT_FLOAT, 1, d, NULL));
    PUSH(g->n_initializer, g->initializer, mk_raw("w", XF_DT_FLOAT, 1, d, w, sizeof w));
    PUSH(g->n_node, g->node, mk_node("Mul", "m", (const char *[]){"x", "w", NULL}, (const char *[]){"y", NULL}));
    PUSH(g->n_output, g->output, mk_vi("y", XF_DT_FLOAT, 1, d, NULL));
    Onnx__ModelProto *mp = mk_model(g, 7);
    mp->ir_version = 3;
    xf_model *m;
    xf_error e;
    ck_assert_msg(load_proto(mp, NULL, &m, &e) == XF_OK, "%s", e.msg);
    ck_assert_int_eq(m->graph->n_inputs, 1);
    int wv = xf_graph_find_value(m->graph, "w");
    ck_assert_ptr_nonnull(m->graph->values[wv].init);
    ck_assert(!m->graph->values[wv].is_input);
    /* IR 3 requires initializers among the inputs: export lists them again */
    uint8_t *buf;
    size_t len;
    ck_assert_msg(xf_model_save_buffer(m, &buf, &len, &e) == XF_OK, "%s", e.msg);
    Onnx__ModelProto *out = onnx__model_proto__unpack(NULL, len, buf);
    ck_assert_uint_eq(out->graph->n_input, 2);
    ck_assert_str_eq(out->graph->input[1]->name, "w");
    onnx__model_proto__free_unpacked(out, NULL);
    free(buf);
    xf_model_free(roundtrip(m));
    xf_model_free(m);
}
END_TEST

START_TEST(test_constant_nodes_become_initializers)
{
    static const int64_t d[] = {3};
    static const float cv[] = {1, 2, 3};
    Onnx__GraphProto *g = mk_graph("g");
    PUSH(g->n_input, g->input, mk_vi("x", XF_DT_FLOAT, 1, d, NULL));
    Onnx__NodeProto *c1 = mk_node("Constant", "c1", NULL, (const char *[]){"c1", NULL});
    Onnx__AttributeProto *va = mk_attr(c1, "value", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR);
    va->t = mk_raw(NULL, XF_DT_FLOAT, 1, d, cv, sizeof cv);
    Onnx__NodeProto *c2 = mk_node("Constant", "c2", NULL, (const char *[]){"c2", NULL});
    attr_float(c2, "value_float", 0.5f);
    Onnx__NodeProto *c3 = mk_node("Constant", "c3", NULL, (const char *[]){"c3", NULL});
    static const int64_t three[] = {3};
    attr_ints(c3, "value_ints", 1, three);
    Onnx__NodeProto *c4 = mk_node("Constant", "c4", NULL, (const char *[]){"c4", NULL});
    attr_string(c4, "value_string", "text");
    Onnx__NodeProto *nodes[] = {
        c1, c2, c3, c4, mk_node("Add", "a", (const char *[]){"x", "c1", NULL}, (const char *[]){"s", NULL}),
        mk_node("Mul", "m", (const char *[]){"s", "c2", NULL}, (const char *[]){"p", NULL}),
        mk_node("Reshape", "r", (const char *[]){"p", "c3", NULL}, (const char *[]){"y", NULL})};
    for (size_t i = 0; i < sizeof nodes / sizeof nodes[0]; i++)
        PUSH(g->n_node, g->node, nodes[i]);
    PUSH(g->n_output, g->output, mk_vi("y", XF_DT_FLOAT, 1, d, NULL));
    PUSH(g->n_output, g->output, mk_vi("c4", XF_DT_STRING, 0, NULL, NULL));
    xf_model *m;
    xf_error e;
    ck_assert_msg(load_proto(mk_model(g, 13), NULL, &m, &e) == XF_OK, "%s", e.msg);
    xf_graph *gr = m->graph;
    ck_assert_int_eq(gr->n_nodes, 4); /* Add, Mul, Reshape and the string Constant (opaque) */
    const xf_tensor *t1 = gr->values[xf_graph_find_value(gr, "c1")].init;
    const xf_tensor *t2 = gr->values[xf_graph_find_value(gr, "c2")].init;
    const xf_tensor *t3 = gr->values[xf_graph_find_value(gr, "c3")].init;
    ck_assert(t1 && t1->dtype == XF_DT_FLOAT && ((float *)t1->data)[2] == 3.0f);
    ck_assert(t2 && t2->shape.ndim == 0 && ((float *)t2->data)[0] == 0.5f);
    ck_assert(t3 && t3->dtype == XF_DT_INT64 && ((int64_t *)t3->data)[0] == 3);
    ck_assert_ptr_null(gr->values[xf_graph_find_value(gr, "c4")].init);
    ck_assert_int_eq(gr->values[gr->outputs[0]].shape.dims[0], 3);
    xf_model_free(roundtrip(m));
    xf_model_free(m);
}
END_TEST

START_TEST(test_typed_fields_equal_raw_data)
{
    static const int64_t d[] = {2, 2};
    static const float f[] = {1.0f, -2.5f, 3.25f, 0.0f};
    static const int32_t i8[] = {-1, 2, -128, 127};
    static const int32_t f16[] = {0x3c00, 0xc000, 0x7bff, 0};
    static const int32_t bl[] = {1, 0, 1, 1};
    static const int64_t i64[] = {1, -2, INT64_MAX, INT64_MIN};
    static const double dbl[] = {0.5, -1e300, 2, 3};
    static const uint64_t u32[] = {1, 2, 4000000000u, 0};
    Onnx__GraphProto *g = mk_graph("g");
    struct {
        const char *name;
        int dtype;
        Onnx__TensorProto *t;
    } cases[] = {{"f", XF_DT_FLOAT, NULL},   {"i8", XF_DT_INT8, NULL},  {"f16", XF_DT_FLOAT16, NULL},
                 {"bl", XF_DT_BOOL, NULL},   {"i64", XF_DT_INT64, NULL}, {"dbl", XF_DT_DOUBLE, NULL},
                 {"u32", XF_DT_UINT32, NULL}, {"str", XF_DT_STRING, NULL}};
    size_t n = sizeof cases / sizeof cases[0];
    for (size_t i = 0; i < n; i++)
        cases[i].t = mk_tensor(cases[i].name, cases[i].dtype, 2, d);
    cases[0].t->n_float_data = 4, cases[0].t->float_data = (float *)f;
    cases[1].t->n_int32_data = 4, cases[1].t->int32_data = (int32_t *)i8;
    cases[2].t->n_int32_data = 4, cases[2].t->int32_data = (int32_t *)f16;
    cases[3].t->n_int32_data = 4, cases[3].t->int32_data = (int32_t *)bl;
    cases[4].t->n_int64_data = 4, cases[4].t->int64_data = (int64_t *)i64;
    cases[5].t->n_double_data = 4, cases[5].t->double_data = (double *)dbl;
    cases[6].t->n_uint64_data = 4, cases[6].t->uint64_data = (uint64_t *)u32;
    ProtobufCBinaryData strs[4] = {{1, (uint8_t *)"a"}, {0, NULL}, {3, (uint8_t *)"xyz"}, {2, (uint8_t *)"hi"}};
    cases[7].t->n_string_data = 4, cases[7].t->string_data = strs;
    for (size_t i = 0; i < n; i++) {
        PUSH(g->n_initializer, g->initializer, cases[i].t);
        PUSH(g->n_output, g->output, mk_vi(cases[i].name, cases[i].dtype, 2, d, NULL));
    }
    xf_model *m;
    xf_error e;
    ck_assert_msg(load_proto(mk_model(g, 13), NULL, &m, &e) == XF_OK, "%s", e.msg);
    xf_graph *gr = m->graph;
#define INIT(name) gr->values[xf_graph_find_value(gr, name)].init
    ck_assert(memcmp(INIT("f")->data, f, sizeof f) == 0);
    ck_assert(memcmp(INIT("i8")->data, (int8_t[]){-1, 2, -128, 127}, 4) == 0);
    ck_assert(memcmp(INIT("f16")->data, (uint16_t[]){0x3c00, 0xc000, 0x7bff, 0}, 8) == 0);
    ck_assert(memcmp(INIT("bl")->data, (uint8_t[]){1, 0, 1, 1}, 4) == 0);
    ck_assert(memcmp(INIT("i64")->data, i64, sizeof i64) == 0);
    ck_assert(memcmp(INIT("dbl")->data, dbl, sizeof dbl) == 0);
    ck_assert(memcmp(INIT("u32")->data, (uint32_t[]){1, 2, 4000000000u, 0}, 16) == 0);
    ck_assert_str_eq(INIT("str")->strings[2], "xyz");
    ck_assert_str_eq(INIT("str")->strings[1], "");
#undef INIT
    /* export writes raw_data; importing that gives the same tensors */
    xf_model *back = roundtrip(m);
    xf_model_free(back);
    xf_model_free(m);
}
END_TEST

START_TEST(test_symbolic_dims)
{
    static const int64_t d[] = {-1, 3, -1};
    static const char *const params[] = {"batch", NULL, "seq"};
    Onnx__GraphProto *g = mk_graph("g");
    PUSH(g->n_input, g->input, mk_vi("x", XF_DT_FLOAT, 3, d, params));
    PUSH(g->n_input, g->input, mk_vi("x2", XF_DT_FLOAT, 3, d, params));
    PUSH(g->n_node, g->node, mk_node("Add", "a", (const char *[]){"x", "x2", NULL}, (const char *[]){"y", NULL}));
    PUSH(g->n_output, g->output, mk_vi("y", XF_DT_FLOAT, 3, d, params));
    Onnx__ModelProto *mp = mk_model(g, 13);
    xf_model *m;
    xf_error e;

    capture_start();
    ck_assert_msg(load_proto(mp, NULL, &m, &e) == XF_OK, "%s", e.msg);
    xf_shape want = xf_shape_make(3, (const int64_t[]){1, 3, 1});
    ck_assert(xf_shape_equal(&m->graph->values[m->graph->inputs[0]].shape, &want));
    ck_assert_ptr_nonnull(strstr(captured, "input 'x' dims 0 ('batch'), 2 ('seq') are symbolic; using 1"));
    ck_assert_ptr_nonnull(strstr(captured, "--input-shape x=1x3x1"));
    ck_assert_ptr_nonnull(strstr(captured, "input 'x2'"));
    xf_model_free(m);

    /* an override binds the symbols, for the other input too */
    xf_input_shape ov;
    char *name;
    ck_assert_int_eq(xf_parse_shape_arg("x=4x3x7", &ov, &name, &e), XF_OK);
    xf_load_options opt = {&ov, 1, 0};
    capture_start();
    ck_assert_msg(load_proto(mp, &opt, &m, &e) == XF_OK, "%s", e.msg);
    want = xf_shape_make(3, (const int64_t[]){4, 3, 7});
    ck_assert(xf_shape_equal(&m->graph->values[m->graph->inputs[0]].shape, &want));
    ck_assert(xf_shape_equal(&m->graph->values[m->graph->inputs[1]].shape, &want));
    ck_assert(xf_shape_equal(&m->graph->values[m->graph->outputs[0]].shape, &want));
    ck_assert_str_eq(captured, "");
    xf_model_free(m);
    free(name);

    /* rank mismatch, fixed-dim conflict, unknown input */
    const char *bad[] = {"x=4x3", "x=4x5x7", "nosuch=1x3x1"};
    const char *msg[] = {"has rank 2 but input 'x' has rank 3", "fixes it to 3", "'nosuch', which is not a graph input"};
    for (int i = 0; i < 3; i++) {
        ck_assert_int_eq(xf_parse_shape_arg(bad[i], &ov, &name, &e), XF_OK);
        ck_assert_int_eq(load_proto(mp, &opt, &m, &e), XF_ERR_INVALID);
        ck_assert_msg(strstr(e.msg, msg[i]) != NULL, "%s", e.msg);
        free(name);
    }
}
END_TEST

START_TEST(test_parse_shape_arg)
{
    xf_input_shape s;
    char *name;
    xf_error e;
    ck_assert_int_eq(xf_parse_shape_arg("input:0=1x3x224x224", &s, &name, &e), XF_OK);
    ck_assert_str_eq(s.name, "input:0");
    ck_assert_int_eq(s.shape.ndim, 4);
    ck_assert_int_eq(s.shape.dims[3], 224);
    free(name);
    ck_assert_int_eq(xf_parse_shape_arg("a=b=2", &s, &name, &e), XF_OK);
    ck_assert_str_eq(s.name, "a=b");
    free(name);
    ck_assert_int_eq(xf_parse_shape_arg("s=scalar", &s, &name, &e), XF_OK);
    ck_assert_int_eq(s.shape.ndim, 0);
    free(name);
    const char *bad[] = {"x", "=1x2", "x=", "x=1xx2", "x=1x-2", "x=1x2x", "x=99999999999999999999",
                         "x=1x1x1x1x1x1x1x1x1"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ck_assert_msg(xf_parse_shape_arg(bad[i], &s, &name, &e) != XF_OK, "%s accepted", bad[i]);
        ck_assert_ptr_null(name);
        ck_assert_ptr_nonnull(strstr(e.msg, "--input-shape"));
    }
}
END_TEST

START_TEST(test_carried_over_fields)
{
    static const int64_t d[] = {2};
    Onnx__GraphProto *g = mk_graph("g");
    g->doc_string = "graph docs";
    PUSH(g->n_input, g->input, mk_vi("x", XF_DT_FLOAT, 1, d, NULL));
    PUSH(g->n_node, g->node, mk_node("Relu", "r", (const char *[]){"x", NULL}, (const char *[]){"y", NULL}));
    PUSH(g->n_output, g->output, mk_vi("y", XF_DT_FLOAT, 1, d, NULL));
    PUSH(g->n_value_info, g->value_info, mk_vi("elsewhere", XF_DT_INT64, 1, d, NULL));
    Onnx__ModelProto *mp = mk_model(g, 13);
    Onnx__FunctionProto *fn = zalloc(sizeof *fn);
    onnx__function_proto__init(fn);
    fn->name = "MyFunction";
    fn->domain = "com.example";
    PUSH(mp->n_functions, mp->functions, fn);
    /* plus a field of a newer ONNX version: number 99, varint 5 (the tag
     * 99 << 3 = 792 is the varint 0x98 0x06) */
    size_t len;
    uint8_t *packed = pack_model(mp, &len);
    uint8_t *newer = malloc(len + 3);
    memcpy(newer, packed, len);
    memcpy(newer + len, (const uint8_t[]){0x98, 0x06, 5}, 3);
    xf_model *m;
    xf_error e;
    ck_assert_msg(xf_model_load_buffer(newer, len + 3, NULL, NULL, &m, &e) == XF_OK, "%s", e.msg);
    free(packed);
    free(newer);
    ck_assert_uint_gt(m->extra_len, 0);
    uint8_t *buf;
    ck_assert_msg(xf_model_save_buffer(m, &buf, &len, &e) == XF_OK, "%s", e.msg);
    Onnx__ModelProto *out = onnx__model_proto__unpack(NULL, len, buf);
    ck_assert_uint_eq(out->base.n_unknown_fields, 1);
    ck_assert_uint_eq(out->base.unknown_fields[0].tag, 99);
    ck_assert_str_eq(out->graph->doc_string, "graph docs");
    ck_assert_uint_eq(out->n_functions, 1);
    ck_assert_str_eq(out->functions[0]->name, "MyFunction");
    bool found = false;
    for (size_t i = 0; i < out->graph->n_value_info; i++)
        found |= !strcmp(out->graph->value_info[i]->name, "elsewhere");
    ck_assert(found);
    onnx__model_proto__free_unpacked(out, NULL);
    free(buf);
    xf_model_free(roundtrip(m));
    xf_model_free(m);
}
END_TEST

/* ------------------------------------------------------------ external data */

static Onnx__ModelProto *make_external_model(const char *location, const char *offset)
{
    static const int64_t d[] = {4};
    Onnx__GraphProto *g = mk_graph("g");
    PUSH(g->n_input, g->input, mk_vi("x", XF_DT_FLOAT, 1, d, NULL));
    Onnx__TensorProto *w = mk_tensor("w", XF_DT_FLOAT, 1, d);
    w->has_data_location = 1;
    w->data_location = ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
    const char *keys[] = {"location", "offset", "length"};
    const char *vals[] = {location, offset, "16"};
    for (int i = 0; i < 3; i++) {
        Onnx__StringStringEntryProto *kv = zalloc(sizeof *kv);
        onnx__string_string_entry_proto__init(kv);
        kv->key = (char *)keys[i];
        kv->value = (char *)vals[i];
        PUSH(w->n_external_data, w->external_data, kv);
    }
    PUSH(g->n_initializer, g->initializer, w);
    PUSH(g->n_node, g->node, mk_node("Add", "a", (const char *[]){"x", "w", NULL}, (const char *[]){"y", NULL}));
    PUSH(g->n_output, g->output, mk_vi("y", XF_DT_FLOAT, 1, d, NULL));
    return mk_model(g, 13);
}

START_TEST(test_external_data)
{
    const char *dir = xf_test_tmpdir("proto_external");
    static const float data[] = {0, 0, 1, 2, 3, 4}; /* the tensor starts at byte 8 */
    write_bytes(path_in(dir, "weights.bin"), data, sizeof data);
    write_model(make_external_model("weights.bin", "8"), path_in(dir, "m.onnx"));
    xf_model *m;
    xf_error e;
    ck_assert_msg(xf_model_load(path_in(dir, "m.onnx"), NULL, &m, &e) == XF_OK, "%s", e.msg);
    const xf_tensor *w = m->graph->values[xf_graph_find_value(m->graph, "w")].init;
    ck_assert(memcmp(w->data, data + 2, 16) == 0);

    /* save with external data: a .data file next to the model */
    xf_save_options so = {true, 16};
    ck_assert_msg(xf_model_save(m, path_in(dir, "out.onnx"), &so, &e) == XF_OK, "%s", e.msg);
    ck_assert(xf_test_exists(path_in(dir, "out.onnx.data")));
    struct stat st;
    ck_assert_int_eq(stat(path_in(dir, "out.onnx.data"), &st), 0);
    ck_assert_int_eq(st.st_size, 16);
    assert_onnx_valid(path_in(dir, "out.onnx"));
    xf_model *back;
    ck_assert_msg(xf_model_load(path_in(dir, "out.onnx"), NULL, &back, &e) == XF_OK, "%s", e.msg);
    char why[512];
    ck_assert_msg(models_equal(m, back, why, sizeof why), "%s", why);
    xf_model_free(back);
    /* nothing big enough: no data file */
    so.external_threshold = 1024;
    ck_assert_msg(xf_model_save(m, path_in(dir, "small.onnx"), &so, &e) == XF_OK, "%s", e.msg);
    ck_assert(!xf_test_exists(path_in(dir, "small.onnx.data")));
    xf_model_free(m);

    /* refused locations, missing file, data beyond the file */
    struct {
        const char *loc, *offset, *msg;
        xf_status st;
    } bad[] = {{"../weights.bin", "0", "outside the model's directory", XF_ERR_INVALID},
               {"/etc/passwd", "0", "outside the model's directory", XF_ERR_INVALID},
               {"sub/../../x", "0", "outside the model's directory", XF_ERR_INVALID},
               {"missing.bin", "0", "cannot open external data file 'missing.bin'", XF_ERR_IO},
               {"weights.bin", "16", "has 24 bytes", XF_ERR_INVALID}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        write_model(make_external_model(bad[i].loc, bad[i].offset), path_in(dir, "bad.onnx"));
        ck_assert_int_eq(xf_model_load(path_in(dir, "bad.onnx"), NULL, &m, &e), bad[i].st);
        ck_assert_msg(strstr(e.msg, bad[i].msg) && strstr(e.msg, "bad.onnx: initializer 'w'"), "%s", e.msg);
    }
    /* from a buffer, external data has no directory to come from */
    size_t len;
    uint8_t *buf = pack_model(make_external_model("weights.bin", "8"), &len);
    ck_assert_int_eq(xf_model_load_buffer(buf, len, NULL, NULL, &m, &e), XF_ERR_UNSUPPORTED);
    free(buf);
}
END_TEST

/* ------------------------------------------------------------ bad input */

/* Loads path, expecting status st and a message that names the file and
 * contains what. */
static void expect_load_error(const char *path, xf_status st, const char *what)
{
    xf_model *m = (xf_model *)1;
    xf_error e;
    ck_assert_int_eq(xf_model_load(path, NULL, &m, &e), st);
    ck_assert_ptr_null(m);
    ck_assert_msg(strstr(e.msg, path) != NULL, "message does not name the file: %s", e.msg);
    ck_assert_msg(strstr(e.msg, what) != NULL, "expected '%s' in: %s", what, e.msg);
    ck_assert_ptr_null(strchr(e.msg, '\n'));
}

START_TEST(test_bad_files)
{
    const char *dir = xf_test_tmpdir("proto_bad");
    expect_load_error(path_in(dir, "missing.onnx"), XF_ERR_IO, "No such file");

    uint8_t junk[4096];
    srand(42);
    for (size_t i = 0; i < sizeof junk; i++)
        junk[i] = (uint8_t)rand();
    write_bytes(path_in(dir, "junk.onnx"), junk, sizeof junk);
    xf_model *m;
    xf_error e;
    xf_status s = xf_model_load(path_in(dir, "junk.onnx"), NULL, &m, &e);
    ck_assert(s == XF_ERR_PARSE || s == XF_ERR_INVALID);
    ck_assert_ptr_nonnull(strstr(e.msg, "junk.onnx"));

    size_t len;
    uint8_t *good = pack_model(make_external_model("w.bin", "0"), &len);
    write_bytes(path_in(dir, "truncated.onnx"), good, len - 7);
    expect_load_error(path_in(dir, "truncated.onnx"), XF_ERR_PARSE, "truncated or corrupt");
    free(good);
    write_bytes(path_in(dir, "empty.onnx"), "", 0);
    expect_load_error(path_in(dir, "empty.onnx"), XF_ERR_INVALID, "no graph");

    static const int64_t d[] = {3, 4};
    static const float twelve_bytes[3] = {0};
    Onnx__GraphProto *g = mk_graph("cycle");
    PUSH(g->n_input, g->input, mk_vi("x", XF_DT_FLOAT, 2, d, NULL));
    PUSH(g->n_node, g->node, mk_node("Add", "a", (const char *[]){"x", "b", NULL}, (const char *[]){"a", NULL}));
    PUSH(g->n_node, g->node, mk_node("Relu", "b", (const char *[]){"a", NULL}, (const char *[]){"b", NULL}));
    PUSH(g->n_output, g->output, mk_vi("b", XF_DT_FLOAT, 2, d, NULL));
    write_model(mk_model(g, 13), path_in(dir, "cycle.onnx"));
    expect_load_error(path_in(dir, "cycle.onnx"), XF_ERR_INVALID, "cycle");

    g = mk_graph("undefined");
    PUSH(g->n_input, g->input, mk_vi("x", XF_DT_FLOAT, 2, d, NULL));
    PUSH(g->n_node, g->node, mk_node("Add", "adder", (const char *[]){"x", "nope", NULL}, (const char *[]){"y", NULL}));
    PUSH(g->n_output, g->output, mk_vi("y", XF_DT_FLOAT, 2, d, NULL));
    write_model(mk_model(g, 13), path_in(dir, "undefined.onnx"));
    expect_load_error(path_in(dir, "undefined.onnx"), XF_ERR_INVALID, "node 'adder' (Add) uses 'nope', which is not defined");

    g = mk_graph("size");
    PUSH(g->n_input, g->input, mk_vi("x", XF_DT_FLOAT, 2, d, NULL));
    PUSH(g->n_initializer, g->initializer, mk_raw("w", XF_DT_FLOAT, 2, d, twelve_bytes, sizeof twelve_bytes));
    PUSH(g->n_node, g->node, mk_node("Add", "a", (const char *[]){"x", "w", NULL}, (const char *[]){"y", NULL}));
    PUSH(g->n_output, g->output, mk_vi("y", XF_DT_FLOAT, 2, d, NULL));
    write_model(mk_model(g, 13), path_in(dir, "size.onnx"));
    expect_load_error(path_in(dir, "size.onnx"), XF_ERR_INVALID,
                      "initializer 'w' has 12 bytes of data but dims 3x4 of FLOAT need 48");

    static const int64_t huge[] = {1000000, 1000000};
    g->initializer[0] = mk_raw("w", XF_DT_FLOAT, 2, huge, twelve_bytes, sizeof twelve_bytes);
    write_model(mk_model(g, 13), path_in(dir, "huge.onnx"));
    expect_load_error(path_in(dir, "huge.onnx"), XF_ERR_LIMIT, "more than the limit");

    static const int64_t nine[] = {1, 1, 1, 1, 1, 1, 1, 1, 3};
    g->initializer[0] = mk_raw("w", XF_DT_FLOAT, 9, nine, twelve_bytes, sizeof twelve_bytes);
    write_model(mk_model(g, 13), path_in(dir, "rank9.onnx"));
    expect_load_error(path_in(dir, "rank9.onnx"), XF_ERR_UNSUPPORTED, "at most 8");

    g = mk_graph("dup");
    PUSH(g->n_input, g->input, mk_vi("x", XF_DT_FLOAT, 2, d, NULL));
    PUSH(g->n_node, g->node, mk_node("Relu", "a", (const char *[]){"x", NULL}, (const char *[]){"y", NULL}));
    PUSH(g->n_node, g->node, mk_node("Neg", "b", (const char *[]){"x", NULL}, (const char *[]){"y", NULL}));
    PUSH(g->n_output, g->output, mk_vi("y", XF_DT_FLOAT, 2, d, NULL));
    write_model(mk_model(g, 13), path_in(dir, "dup.onnx"));
    expect_load_error(path_in(dir, "dup.onnx"), XF_ERR_INVALID, "value 'y' is defined twice");

    /* a shape mismatch found by shape inference is a load error too */
    g = mk_graph("mismatch");
    PUSH(g->n_input, g->input, mk_vi("x", XF_DT_FLOAT, 2, d, NULL));
    PUSH(g->n_input, g->input, mk_vi("z", XF_DT_FLOAT, 2, (const int64_t[]){5, 7}, NULL));
    PUSH(g->n_node, g->node, mk_node("Add", "a", (const char *[]){"x", "z", NULL}, (const char *[]){"y", NULL}));
    PUSH(g->n_output, g->output, mk_vi("y", XF_DT_FLOAT, 2, d, NULL));
    write_model(mk_model(g, 13), path_in(dir, "mismatch.onnx"));
    expect_load_error(path_in(dir, "mismatch.onnx"), XF_ERR_INVALID, "node 'a' (Add)");
}
END_TEST

START_TEST(test_unwritable_output)
{
    const char *dir = xf_test_tmpdir("proto_unwritable");
    xf_model *m = make_cnn();
    xf_error e;
    const char *path = path_in(dir, "no/such/dir/out.onnx");
    ck_assert_int_eq(xf_model_save(m, path, NULL, &e), XF_ERR_IO);
    ck_assert_msg(strstr(e.msg, path) != NULL, "%s", e.msg);
    ck_assert_int_eq(count_files(dir), 0);
    /* a directory in the way of the final rename */
    ck_assert_int_eq(mkdir(path_in(dir, "taken.onnx"), 0755), 0);
    xf_save_options so = {true, 1};
    ck_assert_int_eq(xf_model_save(m, path_in(dir, "taken.onnx"), &so, &e), XF_ERR_IO);
    ck_assert_msg(strstr(e.msg, "taken.onnx") != NULL, "%s", e.msg);
    ck_assert_int_eq(count_files(dir), 1); /* only the directory itself */
    ck_assert_int_eq(xf_tensor_save_pb(m->graph->values[1].init, "w", path, &e), XF_ERR_IO);
    xf_model_free(m);
}
END_TEST

START_TEST(test_softmax_semantics_across_opsets)
{
    /* opset 11 Softmax (coerce to 2-D) over the last axis exports to opset 13;
     * over a middle axis it cannot, and export says so */
    static const int64_t d[] = {2, 3, 4};
    Onnx__GraphProto *g = mk_graph("g");
    PUSH(g->n_input, g->input, mk_vi("x", XF_DT_FLOAT, 3, d, NULL));
    Onnx__NodeProto *sm = mk_node("Softmax", "s", (const char *[]){"x", NULL}, (const char *[]){"y", NULL});
    attr_int(sm, "axis", 2);
    PUSH(g->n_node, g->node, sm);
    PUSH(g->n_output, g->output, mk_vi("y", XF_DT_FLOAT, 3, d, NULL));
    xf_model *m;
    xf_error e;
    ck_assert_msg(load_proto(mk_model(g, 11), NULL, &m, &e) == XF_OK, "%s", e.msg);
    ck_assert(m->graph->nodes[0].attrs.softmax_legacy);
    xf_model_free(roundtrip(m));
    m->opsets[0].version = 13;
    uint8_t *buf;
    size_t len;
    ck_assert_msg(xf_model_save_buffer(m, &buf, &len, &e) == XF_OK, "%s", e.msg);
    free(buf);
    m->graph->nodes[0].attrs.axis = 1;
    ck_assert_int_eq(xf_model_save_buffer(m, &buf, &len, &e), XF_ERR_UNSUPPORTED);
    ck_assert_ptr_nonnull(strstr(e.msg, "node 's' (Softmax)"));
    xf_model_free(m);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("proto");
    TCase *tc = tcase_create("import_export");
    tcase_set_timeout(tc, 600);
    tcase_add_checked_fixture(tc, NULL, free_allocs);
    tcase_add_test(tc, test_roundtrip_core_model);
    tcase_add_test(tc, test_fused_activation_exported_as_two_nodes);
    tcase_add_test(tc, test_opaque_custom_op_survives);
    tcase_add_test(tc, test_outer_value_kept_by_name_after_rewrite);
    tcase_add_test(tc, test_known_op_with_unmodelled_attribute_stays_opaque);
    tcase_add_test(tc, test_nodes_out_of_order);
    tcase_add_test(tc, test_initializer_listed_as_input);
    tcase_add_test(tc, test_constant_nodes_become_initializers);
    tcase_add_test(tc, test_typed_fields_equal_raw_data);
    tcase_add_test(tc, test_symbolic_dims);
    tcase_add_test(tc, test_parse_shape_arg);
    tcase_add_test(tc, test_carried_over_fields);
    tcase_add_test(tc, test_external_data);
    tcase_add_test(tc, test_bad_files);
    tcase_add_test(tc, test_unwritable_output);
    tcase_add_test(tc, test_softmax_semantics_across_opsets);
    suite_add_tcase(s, tc);
    return xf_test_run_suite(s);
}
