/* ONNX import/export of the attributes of ops added after the core set
 * (Mod, Resize, TopK, the scatters, RNN, LSTM and GRU, QuantizeLinear and
 * DequantizeLinear, RoiAlign, NonMaxSuppression, the elementwise ops of
 * test_elementwise.c, the reductions and normalizations of
 * test_reduce_norm, ConvTranspose and the integer quantized ops): what
 * import keeps, what leaves a node opaque, and that export gives back the
 * same attributes. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "proto_util.h"
#include "xf_test_util.h"

/* Mod keeps its fmod attribute; HardSwish and the comparisons are known ops. */
START_TEST(test_mod_fmod_and_newer_elementwise_ops)
{
    static const int64_t d[] = {2, 3};
    Onnx__GraphProto *g = mk_graph("g");
    PUSH(g->n_input, g->input, mk_vi("x", XF_DT_FLOAT, 2, d, NULL));
    PUSH(g->n_input, g->input, mk_vi("y", XF_DT_FLOAT, 2, d, NULL));
    Onnx__NodeProto *mod = mk_node("Mod", "m", (const char *[]){"x", "y", NULL}, (const char *[]){"r", NULL});
    attr_int(mod, "fmod", 1);
    PUSH(g->n_node, g->node, mod);
    PUSH(g->n_node, g->node, mk_node("HardSwish", "h", (const char *[]){"r", NULL}, (const char *[]){"s", NULL}));
    PUSH(g->n_node, g->node, mk_node("GreaterOrEqual", "ge", (const char *[]){"s", "y", NULL}, (const char *[]){"b", NULL}));
    PUSH(g->n_node, g->node, mk_node("LessOrEqual", "le", (const char *[]){"s", "y", NULL}, (const char *[]){"c", NULL}));
    PUSH(g->n_node, g->node, mk_node("Xor", "xo", (const char *[]){"b", "c", NULL}, (const char *[]){"z", NULL}));
    PUSH(g->n_output, g->output, mk_vi("z", XF_DT_BOOL, 2, d, NULL));
    int counts[XF_OP_COUNT + 1];
    xf_model *m = load_counting(g, 14, counts);
    ck_assert_int_eq(counts[XF_OP_OPAQUE], 0);
    ck_assert_int_eq(counts[XF_OP_MOD], 1);
    ck_assert_int_eq(counts[XF_OP_HARD_SWISH], 1);
    ck_assert_int_eq(m->graph->nodes[find_node_op(m->graph, XF_OP_MOD)].attrs.fmod, 1);
    ck_assert_int_eq(m->graph->values[m->graph->outputs[0]].dtype, XF_DT_BOOL);
    xf_model *back = roundtrip(m);
    ck_assert_int_eq(back->graph->nodes[find_node_op(back->graph, XF_OP_MOD)].attrs.fmod, 1);
    xf_model_free(back);
    xf_model_free(m);
}
END_TEST

/* Resize is modelled from opset 11 (X, roi, scales, sizes) with its modes;
 * opset 10's form, and modes xflow does not model, stay opaque. */
START_TEST(test_resize_forms)
{
    static const int64_t d[] = {1, 1, 2, 2}, four[] = {4}, o[] = {1, 1, 4, 4};
    static const float scales[] = {1, 1, 2, 2};
    for (int form = 0; form < 3; form++) {
        Onnx__GraphProto *g = mk_graph("g");
        PUSH(g->n_input, g->input, mk_vi("x", XF_DT_FLOAT, 4, d, NULL));
        PUSH(g->n_initializer, g->initializer, mk_raw("s", XF_DT_FLOAT, 1, four, scales, sizeof scales));
        Onnx__NodeProto *rs = mk_node("Resize", "r", form == 0 ? (const char *[]){"x", "s", NULL}
                                                                : (const char *[]){"x", "", "s", NULL},
                                      (const char *[]){"y", NULL});
        attr_string(rs, "mode", form == 2 ? "cubic" : "linear");
        attr_string(rs, "coordinate_transformation_mode", "align_corners");
        PUSH(g->n_node, g->node, rs);
        PUSH(g->n_output, g->output, mk_vi("y", XF_DT_FLOAT, 4, o, NULL));
        int counts[XF_OP_COUNT + 1];
        xf_model *m = load_counting(g, form == 0 ? 10 : 13, counts);
        ck_assert_int_eq(counts[XF_OP_RESIZE], form == 1);
        if (form == 1) {
            const xf_node *n = &m->graph->nodes[find_node_op(m->graph, XF_OP_RESIZE)];
            ck_assert_int_eq(n->attrs.resize_mode, 1);
            ck_assert_int_eq(n->attrs.resize_coord, 2);
            ck_assert_int_eq(m->graph->values[n->outputs[0]].shape.dims[3], 4);
            xf_model_free(roundtrip(m));
        }
        xf_model_free(m);
    }
}
END_TEST

/* TopK keeps axis, largest and sorted, and its indices are int64; K must
 * be known for the output shapes. */
START_TEST(test_topk_attributes)
{
    static const int64_t d[] = {3, 4}, one[] = {1}, k[] = {2}, o[] = {2, 4};
    Onnx__GraphProto *g = mk_graph("g");
    PUSH(g->n_input, g->input, mk_vi("x", XF_DT_FLOAT, 2, d, NULL));
    PUSH(g->n_initializer, g->initializer, mk_raw("k", XF_DT_INT64, 1, one, k, sizeof k));
    Onnx__NodeProto *n = mk_node("TopK", "t", (const char *[]){"x", "k", NULL}, (const char *[]){"v", "i", NULL});
    attr_int(n, "axis", 0);
    attr_int(n, "largest", 0);
    attr_int(n, "sorted", 0);
    PUSH(g->n_node, g->node, n);
    PUSH(g->n_output, g->output, mk_vi("v", XF_DT_FLOAT, 2, o, NULL));
    PUSH(g->n_output, g->output, mk_vi("i", XF_DT_INT64, 2, o, NULL));
    int counts[XF_OP_COUNT + 1];
    xf_model *m = load_counting(g, 11, counts);
    ck_assert_int_eq(counts[XF_OP_TOP_K], 1);
    const xf_node *t = &m->graph->nodes[find_node_op(m->graph, XF_OP_TOP_K)];
    ck_assert(t->attrs.axis == 0 && t->attrs.topk_smallest && t->attrs.topk_unsorted);
    ck_assert_int_eq(m->graph->values[t->outputs[1]].dtype, XF_DT_INT64);
    ck_assert_int_eq(m->graph->values[t->outputs[1]].shape.dims[0], 2);
    xf_model_free(roundtrip(m));
    xf_model_free(m);
}
END_TEST

/* ScatterElements keeps axis and reduction, ScatterND its reduction;
 * reductions ONNX does not define keep the node opaque. */
START_TEST(test_scatter_reductions)
{
    static const int64_t d[] = {2, 3}, rows[] = {2, 1};
    for (int form = 0; form < 3; form++) {
        Onnx__GraphProto *g = mk_graph("g");
        PUSH(g->n_input, g->input, mk_vi("x", XF_DT_FLOAT, 2, d, NULL));
        PUSH(g->n_input, g->input, mk_vi("i", XF_DT_INT64, 2, d, NULL));
        PUSH(g->n_input, g->input, mk_vi("r", XF_DT_INT64, 2, rows, NULL));
        Onnx__NodeProto *n = mk_node("ScatterElements", "s", (const char *[]){"x", "i", "x", NULL},
                                     (const char *[]){"y", NULL});
        if (form < 2)
            attr_int(n, "axis", -1);
        attr_string(n, "reduction", form == 0 ? "max" : form == 1 ? "none" : "sub");
        PUSH(g->n_node, g->node, n);
        Onnx__NodeProto *nd = mk_node("ScatterND", "nd", (const char *[]){"y", "r", "x", NULL},
                                      (const char *[]){"z", NULL});
        attr_string(nd, "reduction", "mul");
        PUSH(g->n_node, g->node, nd);
        PUSH(g->n_output, g->output, mk_vi("z", XF_DT_FLOAT, 2, d, NULL));
        int counts[XF_OP_COUNT + 1];
        xf_model *m = load_counting(g, 18, counts);
        ck_assert_int_eq(counts[XF_OP_SCATTER_ELEMENTS], form < 2);
        ck_assert_int_eq(m->graph->nodes[find_node_op(m->graph, XF_OP_SCATTER_ND)].attrs.reduction, XF_REDUCE_MUL);
        if (form == 0) {
            const xf_attrs *a = &m->graph->nodes[find_node_op(m->graph, XF_OP_SCATTER_ELEMENTS)].attrs;
            ck_assert(a->axis == -1 && a->reduction == XF_REDUCE_MAX);
        }
        xf_model_free(roundtrip(m));
        xf_model_free(m);
    }
}
END_TEST

/* LSTM and GRU keep every attribute, and an omitted output (LSTM's Y) may
 * come before those given.  Each activation function takes the next
 * activation_alpha (beta) value when it has that parameter, else its
 * default; an unknown function, or a value no function takes, leaves the
 * node opaque. */
START_TEST(test_rnn_attributes)
{
    static const int64_t x[] = {5, 2, 3}, w[] = {2, 16, 3}, r[] = {2, 16, 4}, state[] = {2, 2, 4};
    static const int64_t wg[] = {1, 12, 3}, rg[] = {1, 12, 4}, y[] = {5, 1, 2, 4}, gstate[] = {1, 2, 4};
    static const float alpha[] = {2, 0.3f, 0.1f, 7}, beta[] = {1};
    for (int form = 0; form < 3; form++) {
        Onnx__GraphProto *g = mk_graph("g");
        PUSH(g->n_input, g->input, mk_vi("x", XF_DT_FLOAT, 3, x, NULL));
        PUSH(g->n_input, g->input, mk_vi("w", XF_DT_FLOAT, 3, w, NULL));
        PUSH(g->n_input, g->input, mk_vi("r", XF_DT_FLOAT, 3, r, NULL));
        PUSH(g->n_input, g->input, mk_vi("wg", XF_DT_FLOAT, 3, wg, NULL));
        PUSH(g->n_input, g->input, mk_vi("rg", XF_DT_FLOAT, 3, rg, NULL));
        Onnx__NodeProto *l = mk_node("LSTM", "l", (const char *[]){"x", "w", "r", NULL},
                                     (const char *[]){"", "lh", "lc", NULL});
        attr_string(l, "direction", "bidirectional");
        attr_int(l, "hidden_size", 4);
        attr_float(l, "clip", 3);
        attr_int(l, "input_forget", 1);
        attr_strings(l, "activations", 6,
                     (const char *[]){"sigmoid", "Affine", "Tanh", "HardSigmoid", "LeakyRelu", form == 1 ? "Foo" : "Tanh"});
        attr_floats(l, "activation_alpha", form == 2 ? 4 : 3, alpha);
        attr_floats(l, "activation_beta", 1, beta);
        PUSH(g->n_node, g->node, l);
        Onnx__NodeProto *gru = mk_node("GRU", "g", (const char *[]){"x", "wg", "rg", NULL},
                                       (const char *[]){"gy", "gh", NULL});
        attr_string(gru, "direction", "reverse");
        attr_int(gru, "linear_before_reset", 1);
        PUSH(g->n_node, g->node, gru);
        PUSH(g->n_output, g->output, mk_vi("lh", XF_DT_FLOAT, 3, state, NULL));
        PUSH(g->n_output, g->output, mk_vi("lc", XF_DT_FLOAT, 3, state, NULL));
        PUSH(g->n_output, g->output, mk_vi("gy", XF_DT_FLOAT, 4, y, NULL));
        PUSH(g->n_output, g->output, mk_vi("gh", XF_DT_FLOAT, 3, gstate, NULL));
        int counts[XF_OP_COUNT + 1];
        xf_model *m = load_counting(g, 14, counts);
        ck_assert_int_eq(counts[XF_OP_LSTM], form == 0);
        ck_assert_int_eq(counts[XF_OP_GRU], 1);
        const xf_node *gn = &m->graph->nodes[find_node_op(m->graph, XF_OP_GRU)];
        ck_assert(gn->attrs.rnn.direction == 1 && gn->attrs.rnn.linear_before_reset == 1 && !gn->attrs.rnn.n_acts);
        ck_assert_int_eq(m->graph->values[gn->outputs[0]].shape.dims[3], 4);
        if (form == 0) {
            const xf_node *ln = &m->graph->nodes[find_node_op(m->graph, XF_OP_LSTM)];
            const xf_rnn_attrs *a = &ln->attrs.rnn;
            ck_assert(ln->n_outputs == 3 && ln->outputs[0] < 0);
            ck_assert(a->direction == 2 && a->hidden_size == 4 && a->has_clip && a->clip == 3 && a->input_forget);
            static const unsigned char acts[] = {XF_RNN_SIGMOID, XF_RNN_AFFINE, XF_RNN_TANH, XF_RNN_HARD_SIGMOID,
                                                 XF_RNN_LEAKY_RELU, XF_RNN_TANH};
            static const float want_alpha[] = {0, 2, 0, 0.3f, 0.1f, 0}, want_beta[] = {0, 1, 0, 0.5f, 0, 0};
            ck_assert_int_eq(a->n_acts, 6);
            for (int i = 0; i < 6; i++)
                ck_assert(a->acts[i] == acts[i] && a->act_alpha[i] == want_alpha[i] && a->act_beta[i] == want_beta[i]);
            const char *dir = xf_test_tmpdir("proto_rnn");
            xf_error e;
            ck_assert_msg(xf_model_save(m, path_in(dir, "m.onnx"), NULL, &e) == XF_OK, "%s", e.msg);
            assert_onnx_valid(path_in(dir, "m.onnx"));
        }
        xf_model_free(roundtrip(m));
        xf_model_free(m);
    }
}
END_TEST

/* QuantizeLinear and DequantizeLinear keep axis, block_size, output_dtype
 * and saturate; a float8 output_dtype is carried (the node stays known).
 * A precision, or an operand declared of a type xflow does not know
 * (float6 here), leave the node opaque. */
START_TEST(test_quantize_attributes)
{
    static const int64_t d[] = {2, 4}, two[] = {2}, blocks[] = {2, 2};
    static const float s2[] = {0.5f, 0.25f}, s4[] = {1, 2, 4, 8};
    static const int8_t z2[] = {0, 1};
    for (int form = 0; form < 4; form++) {
        Onnx__GraphProto *g = mk_graph("g");
        PUSH(g->n_input, g->input, mk_vi("x", XF_DT_FLOAT, 2, d, NULL));
        PUSH(g->n_initializer, g->initializer, mk_raw("s", XF_DT_FLOAT, 1, two, s2, sizeof s2));
        PUSH(g->n_initializer, g->initializer, mk_raw("z", XF_DT_INT8, 1, two, z2, sizeof z2));
        PUSH(g->n_initializer, g->initializer, mk_raw("sb", XF_DT_FLOAT, 2, blocks, s4, sizeof s4));
        Onnx__NodeProto *q = mk_node("QuantizeLinear", "q", (const char *[]){"x", "s", form == 1 ? NULL : "z", NULL},
                                     (const char *[]){"xq", NULL});
        attr_int(q, "axis", 0);
        attr_int(q, "saturate", 0);
        if (form == 1)
            attr_int(q, "output_dtype", 17); /* float8e4m3fn */
        if (form == 2)
            attr_int(q, "precision", 1);
        PUSH(g->n_node, g->node, q);
        Onnx__NodeProto *dq = mk_node("DequantizeLinear", "dq", (const char *[]){"xq", "sb", NULL},
                                      (const char *[]){"y", NULL});
        attr_int(dq, "axis", -1);
        attr_int(dq, "block_size", 2);
        attr_int(dq, "output_dtype", XF_DT_FLOAT16);
        PUSH(g->n_node, g->node, dq);
        if (form == 3)
            PUSH(g->n_value_info, g->value_info, mk_vi("xq", 27, 2, d, NULL)); /* float6e2m3 */
        PUSH(g->n_output, g->output, mk_vi("y", XF_DT_FLOAT16, 2, d, NULL));
        int counts[XF_OP_COUNT + 1];
        xf_model *m = load_counting(g, 23, counts);
        ck_assert_int_eq(counts[XF_OP_QUANTIZE_LINEAR], form <= 1);
        ck_assert_int_eq(counts[XF_OP_DEQUANTIZE_LINEAR], form != 3);
        if (form == 1) {
            const xf_node *qn = &m->graph->nodes[find_node_op(m->graph, XF_OP_QUANTIZE_LINEAR)];
            ck_assert_int_eq(m->graph->values[qn->outputs[0]].dtype, XF_DT_FLOAT8E4M3FN);
        }
        if (form == 0) {
            const xf_node *qn = &m->graph->nodes[find_node_op(m->graph, XF_OP_QUANTIZE_LINEAR)];
            const xf_node *dn = &m->graph->nodes[find_node_op(m->graph, XF_OP_DEQUANTIZE_LINEAR)];
            ck_assert(qn->attrs.axis == 0 && qn->attrs.no_saturate && !qn->attrs.block_size);
            ck_assert(dn->attrs.axis == -1 && dn->attrs.block_size == 2 && dn->attrs.output_dtype == XF_DT_FLOAT16);
            ck_assert_int_eq(m->graph->values[qn->outputs[0]].dtype, XF_DT_INT8);
            ck_assert_int_eq(m->graph->values[dn->outputs[0]].dtype, XF_DT_FLOAT16);
        }
        xf_model_free(roundtrip(m));
        xf_model_free(m);
    }
}
END_TEST

/* A RoiAlign of X [1, 2, 8, 8] by three ROIs under opset, with the
 * attributes given (mode, coordinate_transformation_mode: NULL for none). */
static Onnx__GraphProto *roi_align_graph(const char *mode, const char *coord)
{
    static const int64_t d[] = {1, 2, 8, 8}, r[] = {3, 4}, three[] = {3};
    Onnx__GraphProto *g = mk_graph("g");
    PUSH(g->n_input, g->input, mk_vi("x", XF_DT_FLOAT, 4, d, NULL));
    PUSH(g->n_input, g->input, mk_vi("rois", XF_DT_FLOAT, 2, r, NULL));
    PUSH(g->n_input, g->input, mk_vi("idx", XF_DT_INT64, 1, three, NULL));
    Onnx__NodeProto *n = mk_node("RoiAlign", "ra", (const char *[]){"x", "rois", "idx", NULL},
                                 (const char *[]){"y", NULL});
    if (mode)
        attr_string(n, "mode", mode);
    attr_int(n, "output_height", 3);
    attr_int(n, "output_width", 2);
    attr_int(n, "sampling_ratio", 2);
    attr_float(n, "spatial_scale", 0.25f);
    if (coord)
        attr_string(n, "coordinate_transformation_mode", coord);
    PUSH(g->n_node, g->node, n);
    PUSH(g->n_output, g->output, mk_vi("y", XF_DT_FLOAT, 4, (const int64_t[]){3, 2, 3, 2}, NULL));
    return g;
}

/* The attributes of the exported model's only node. */
static Onnx__ModelProto *exported(const xf_model *m, uint8_t **buf)
{
    size_t len;
    xf_error e;
    ck_assert_msg(xf_model_save_buffer(m, buf, &len, &e) == XF_OK, "%s", e.msg);
    Onnx__ModelProto *mp = onnx__model_proto__unpack(NULL, len, *buf);
    ck_assert(mp && mp->graph && mp->graph->n_node == 1);
    return mp;
}

static bool has_attr(const Onnx__NodeProto *n, const char *name)
{
    for (size_t i = 0; i < n->n_attribute; i++)
        if (strcmp(n->attribute[i]->name, name) == 0)
            return true;
    return false;
}

/* RoiAlign keeps mode, the output size, sampling_ratio, spatial_scale and
 * (opset 16) coordinate_transformation_mode; before opset 16 the op has no
 * such attribute and works as output_half_pixel, which export leaves
 * unsaid there.  A mode xflow does not model, or the attribute before
 * opset 16, leave the node opaque; a half_pixel RoiAlign cannot be written
 * at opset 10. */
START_TEST(test_roi_align_attributes)
{
    struct {
        int64_t opset;
        const char *mode, *coord;
        int known, output_half_pixel;
    } forms[] = {{16, "max", "output_half_pixel", 1, 1}, {16, NULL, NULL, 1, 0}, {16, NULL, "half_pixel", 1, 0},
                 {10, "avg", NULL, 1, 1}, {10, NULL, "output_half_pixel", 0, 0}, {16, "bilinear", NULL, 0, 0}};
    for (size_t f = 0; f < sizeof forms / sizeof forms[0]; f++) {
        int counts[XF_OP_COUNT + 1];
        xf_model *m = load_counting(roi_align_graph(forms[f].mode, forms[f].coord), forms[f].opset, counts);
        ck_assert_int_eq(counts[XF_OP_ROI_ALIGN], forms[f].known);
        if (forms[f].known) {
            const xf_node *n = &m->graph->nodes[find_node_op(m->graph, XF_OP_ROI_ALIGN)];
            ck_assert_int_eq(n->attrs.roi_max, f == 0);
            ck_assert(n->attrs.roi_output_h == 3 && n->attrs.roi_output_w == 2 && n->attrs.roi_sampling_ratio == 2 &&
                      n->attrs.roi_spatial_scale == 0.25f);
            ck_assert_int_eq(n->attrs.roi_output_half_pixel, forms[f].output_half_pixel);
            ck_assert_int_eq(m->graph->values[n->outputs[0]].shape.dims[3], 2);
            uint8_t *buf;
            Onnx__ModelProto *mp = exported(m, &buf);
            ck_assert_int_eq(has_attr(mp->graph->node[0], "coordinate_transformation_mode"), f == 0);
            onnx__model_proto__free_unpacked(mp, NULL);
            free(buf);
        }
        xf_model_free(roundtrip(m));
        xf_model_free(m);
    }
    int counts[XF_OP_COUNT + 1];
    xf_model *m = load_counting(roi_align_graph(NULL, NULL), 10, counts);
    m->graph->nodes[find_node_op(m->graph, XF_OP_ROI_ALIGN)].attrs.roi_output_half_pixel = 0;
    uint8_t *buf;
    size_t len;
    xf_error e;
    ck_assert_int_eq(xf_model_save_buffer(m, &buf, &len, &e), XF_ERR_UNSUPPORTED);
    ck_assert_msg(strstr(e.msg, "node 'ra' (RoiAlign)") && strstr(e.msg, "half_pixel") && strstr(e.msg, "opset 10"),
                  "%s", e.msg);
    xf_model_free(m);
}
END_TEST

/* NonMaxSuppression keeps center_point_box; its output is int64, of a
 * shape known only from the inputs' values (graph inputs here). */
START_TEST(test_nms_attributes)
{
    static const int64_t b[] = {1, 6, 4}, sc[] = {1, 2, 6}, one[] = {1}, max[] = {3};
    static const float thresholds[] = {0.5f};
    Onnx__GraphProto *g = mk_graph("g");
    PUSH(g->n_input, g->input, mk_vi("boxes", XF_DT_FLOAT, 3, b, NULL));
    PUSH(g->n_input, g->input, mk_vi("scores", XF_DT_FLOAT, 3, sc, NULL));
    PUSH(g->n_initializer, g->initializer, mk_raw("max", XF_DT_INT64, 1, one, max, sizeof max));
    PUSH(g->n_initializer, g->initializer, mk_raw("iou", XF_DT_FLOAT, 1, one, thresholds, sizeof thresholds));
    Onnx__NodeProto *n = mk_node("NonMaxSuppression", "nms", (const char *[]){"boxes", "scores", "max", "iou", NULL},
                                 (const char *[]){"sel", NULL});
    attr_int(n, "center_point_box", 1);
    PUSH(g->n_node, g->node, n);
    PUSH(g->n_output, g->output, mk_vi("sel", XF_DT_INT64, 2, (const int64_t[]){-1, 3}, NULL));
    int counts[XF_OP_COUNT + 1];
    xf_model *m = load_counting(g, 11, counts);
    ck_assert_int_eq(counts[XF_OP_NON_MAX_SUPPRESSION], 1);
    const xf_node *nd = &m->graph->nodes[find_node_op(m->graph, XF_OP_NON_MAX_SUPPRESSION)];
    ck_assert_int_eq(nd->attrs.center_point_box, 1);
    ck_assert_int_eq(m->graph->values[nd->outputs[0]].dtype, XF_DT_INT64);
    ck_assert_int_eq(m->graph->values[nd->outputs[0]].shape.ndim, -1);
    xf_model_free(roundtrip(m));
    xf_model_free(m);
}
END_TEST

/* The elementwise ops' attributes: IsInf's detect_*, ThresholdedRelu's
 * and Celu's alpha, Selu's alpha and gamma, Shrink's lambd and bias, Gelu's
 * approximate, BitShift's direction and CastLike's saturate; values xflow
 * does not model, or a BitShift without its direction, leave the node
 * opaque. */
static Onnx__GraphProto *elementwise_graph(int form)
{
    static const int64_t d[] = {2, 3};
    Onnx__GraphProto *g = mk_graph("g");
    PUSH(g->n_input, g->input, mk_vi("x", XF_DT_FLOAT, 2, d, NULL));
    PUSH(g->n_input, g->input, mk_vi("u", XF_DT_UINT8, 2, d, NULL));
    Onnx__NodeProto *n = mk_node("IsInf", "i", (const char *[]){"x", NULL}, (const char *[]){"inf", NULL});
    attr_int(n, "detect_negative", 0);
    PUSH(g->n_node, g->node, n);
    PUSH(g->n_node, g->node, n = mk_node("ThresholdedRelu", "t", (const char *[]){"x", NULL}, (const char *[]){"a", NULL}));
    attr_float(n, "alpha", 2);
    PUSH(g->n_node, g->node, n = mk_node("Selu", "s", (const char *[]){"a", NULL}, (const char *[]){"b", NULL}));
    attr_float(n, "alpha", 1.5f);
    attr_float(n, "gamma", 3);
    PUSH(g->n_node, g->node, n = mk_node("Celu", "c", (const char *[]){"b", NULL}, (const char *[]){"c", NULL}));
    attr_float(n, "alpha", 0.25f);
    PUSH(g->n_node, g->node, n = mk_node("Shrink", "sh", (const char *[]){"c", NULL}, (const char *[]){"e", NULL}));
    attr_float(n, "lambd", 1);
    attr_float(n, "bias", 0.5f);
    PUSH(g->n_node, g->node, n = mk_node("Gelu", "ge", (const char *[]){"e", NULL}, (const char *[]){"f", NULL}));
    attr_string(n, "approximate", form == 1 ? "erf" : "tanh");
    PUSH(g->n_node, g->node, n = mk_node("BitShift", "bs", (const char *[]){"u", "u", NULL}, (const char *[]){"v", NULL}));
    if (form != 2)
        attr_string(n, "direction", "RIGHT");
    PUSH(g->n_node, g->node, n = mk_node("CastLike", "cl", (const char *[]){"f", "v", NULL}, (const char *[]){"w", NULL}));
    attr_int(n, "saturate", 0);
    attr_string(n, "round_mode", form == 3 ? "down" : "up");
    PUSH(g->n_output, g->output, mk_vi("inf", XF_DT_BOOL, 2, d, NULL));
    PUSH(g->n_output, g->output, mk_vi("w", XF_DT_UINT8, 2, d, NULL));
    return g;
}

START_TEST(test_elementwise_attributes)
{
    for (int form = 0; form < 4; form++) {
        int counts[XF_OP_COUNT + 1];
        xf_model *m = load_counting(elementwise_graph(form), 25, counts);
        ck_assert_int_eq(counts[XF_OP_OPAQUE], form != 0);
        ck_assert_int_eq(counts[XF_OP_GELU], form != 1);
        ck_assert_int_eq(counts[XF_OP_BIT_SHIFT], form != 2);
        ck_assert_int_eq(counts[XF_OP_CAST_LIKE], form != 3);
        const xf_graph *g = m->graph;
        const xf_attrs *inf = &g->nodes[find_node_op(g, XF_OP_IS_INF)].attrs;
        const xf_attrs *selu = &g->nodes[find_node_op(g, XF_OP_SELU)].attrs;
        const xf_attrs *shrink = &g->nodes[find_node_op(g, XF_OP_SHRINK)].attrs;
        ck_assert(inf->isinf_no_neg && !inf->isinf_no_pos);
        ck_assert(g->nodes[find_node_op(g, XF_OP_THRESHOLDED_RELU)].attrs.alpha == 2);
        ck_assert(selu->alpha == 1.5f && selu->beta == 3);
        ck_assert(g->nodes[find_node_op(g, XF_OP_CELU)].attrs.alpha == 0.25f);
        ck_assert(shrink->alpha == 1 && shrink->beta == 0.5f);
        ck_assert_int_eq(g->values[g->outputs[0]].dtype, XF_DT_BOOL);
        if (form == 0) {
            ck_assert(g->nodes[find_node_op(g, XF_OP_GELU)].attrs.gelu_tanh);
            ck_assert(g->nodes[find_node_op(g, XF_OP_BIT_SHIFT)].attrs.shift_right);
            const xf_node *cl = &g->nodes[find_node_op(g, XF_OP_CAST_LIKE)];
            ck_assert(cl->attrs.no_saturate);
            ck_assert_int_eq(g->values[cl->outputs[0]].dtype, XF_DT_UINT8);
        }
        xf_model_free(roundtrip(m));
        xf_model_free(m);
    }
    /* the defaults are left unsaid on export, and read back as defaults */
    Onnx__GraphProto *g = mk_graph("g");
    static const int64_t d[] = {4};
    PUSH(g->n_input, g->input, mk_vi("x", XF_DT_FLOAT, 1, d, NULL));
    PUSH(g->n_node, g->node, mk_node("Selu", "s", (const char *[]){"x", NULL}, (const char *[]){"y", NULL}));
    PUSH(g->n_output, g->output, mk_vi("y", XF_DT_FLOAT, 1, d, NULL));
    int counts[XF_OP_COUNT + 1];
    xf_model *m = load_counting(g, 22, counts);
    const xf_attrs *a = &m->graph->nodes[find_node_op(m->graph, XF_OP_SELU)].attrs;
    ck_assert(a->alpha == 1.67326319217681884765625f && a->beta == 1.05070102214813232421875f);
    uint8_t *buf;
    Onnx__ModelProto *mp = exported(m, &buf);
    ck_assert_int_eq(mp->graph->node[0]->n_attribute, 0);
    onnx__model_proto__free_unpacked(mp, NULL);
    free(buf);
    xf_model_free(m);
}
END_TEST

/* PRelu before opset 7 takes a slope per channel (prelu_channels), which
 * only such an opset can express on export. */
START_TEST(test_prelu_opsets)
{
    static const int64_t d[] = {2, 3, 4}, three[] = {3};
    for (int64_t opset = 6; opset <= 16; opset += 10) {
        Onnx__GraphProto *g = mk_graph("g");
        PUSH(g->n_input, g->input, mk_vi("x", XF_DT_FLOAT, 3, d, NULL));
        PUSH(g->n_input, g->input, mk_vi("slope", XF_DT_FLOAT, opset < 7 ? 1 : 2,
                                         opset < 7 ? three : (const int64_t[]){3, 1}, NULL));
        PUSH(g->n_node, g->node, mk_node("PRelu", "p", (const char *[]){"x", "slope", NULL}, (const char *[]){"y", NULL}));
        PUSH(g->n_output, g->output, mk_vi("y", XF_DT_FLOAT, 3, d, NULL));
        int counts[XF_OP_COUNT + 1];
        xf_model *m = load_counting(g, opset, counts);
        xf_node *n = &m->graph->nodes[find_node_op(m->graph, XF_OP_PRELU)];
        ck_assert_int_eq(n->attrs.prelu_channels, opset < 7);
        xf_model_free(roundtrip(m));
        n->attrs.prelu_channels = !n->attrs.prelu_channels;
        uint8_t *buf;
        size_t len;
        xf_error e;
        ck_assert_int_eq(xf_model_save_buffer(m, &buf, &len, &e), XF_ERR_UNSUPPORTED);
        ck_assert_msg(strstr(e.msg, "node 'p' (PRelu)") && strstr(e.msg, "cannot express"), "%s", e.msg);
        xf_model_free(m);
    }
}
END_TEST

/* A node of op on x (and `second`, when not NULL) into out, for the
 * reductions and normalizations graph. */
static Onnx__NodeProto *norm_node(Onnx__GraphProto *g, const char *op, const char *second, const char *third,
                                  const char *out, xf_dtype out_type)
{
    Onnx__NodeProto *n = mk_node(op, out, (const char *[]){"x", second, third, NULL}, (const char *[]){out, NULL});
    PUSH(g->n_node, g->node, n);
    PUSH(g->n_output, g->output, mk_vi(out, out_type, -1, NULL, NULL));
    return n;
}

/* Every op of the group on x [2, 4, 3, 3] under opset (the reductions'
 * axes an input from 18, an attribute before), each attribute away from
 * its default. */
static Onnx__GraphProto *norm_graph(int64_t opset)
{
    static const int64_t d[] = {2, 4, 3, 3}, one[] = {1}, four[] = {4}, axis = 1, mvn_axes[] = {1, -1};
    static const float ones[] = {1, 1, 1, 1}, zeros[] = {0, 0, 0, 0};
    static const char *const reduces[] = {"ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp",
                                          "ReduceSumSquare"};
    Onnx__GraphProto *g = mk_graph("g");
    PUSH(g->n_input, g->input, mk_vi("x", XF_DT_FLOAT, 4, d, NULL));
    PUSH(g->n_initializer, g->initializer, mk_raw("axes", XF_DT_INT64, 1, one, &axis, sizeof axis));
    PUSH(g->n_initializer, g->initializer, mk_raw("axis", XF_DT_INT64, 0, NULL, &axis, sizeof axis));
    PUSH(g->n_initializer, g->initializer, mk_raw("s", XF_DT_FLOAT, 1, four, ones, sizeof ones));
    PUSH(g->n_initializer, g->initializer, mk_raw("b", XF_DT_FLOAT, 1, four, zeros, sizeof zeros));
    for (int i = 0; i < 5; i++) {
        Onnx__NodeProto *n = norm_node(g, reduces[i], opset >= 18 ? "axes" : NULL, NULL, reduces[i], XF_DT_FLOAT);
        if (opset < 18)
            attr_ints(n, "axes", 1, &axis);
        attr_int(n, "keepdims", 0);
    }
    Onnx__NodeProto *n = norm_node(g, "ArgMax", NULL, NULL, "amax", XF_DT_INT64);
    attr_int(n, "axis", 2);
    attr_int(n, "keepdims", 0);
    if (opset >= 12)
        attr_int(n, "select_last_index", 1);
    attr_int(norm_node(g, "ArgMin", NULL, NULL, "amin", XF_DT_INT64), "axis", -1);
    attr_int(norm_node(g, "Hardmax", NULL, NULL, "hmax", XF_DT_FLOAT), "axis", 2);
    n = norm_node(g, "CumSum", "axis", NULL, "csum", XF_DT_FLOAT);
    attr_int(n, "exclusive", 1);
    attr_int(n, "reverse", 1);
    attr_float(norm_node(g, "InstanceNormalization", "s", "b", "inorm", XF_DT_FLOAT), "epsilon", 0.01f);
    attr_ints(norm_node(g, "MeanVarianceNormalization", NULL, NULL, "mvn", XF_DT_FLOAT), "axes", 2, mvn_axes);
    n = norm_node(g, "LRN", NULL, NULL, "lrn", XF_DT_FLOAT);
    attr_float(n, "alpha", 0.01f);
    attr_float(n, "beta", 0.5f);
    attr_float(n, "bias", 2);
    attr_int(n, "size", 3);
    n = norm_node(g, "LpNormalization", NULL, NULL, "lp", XF_DT_FLOAT);
    attr_int(n, "axis", 1);
    attr_int(n, "p", 1);
    if (opset >= 21) {
        n = norm_node(g, "GroupNormalization", "s", "b", "gnorm", XF_DT_FLOAT);
        attr_int(n, "num_groups", 2);
        attr_float(n, "epsilon", 0.001f);
        attr_int(n, "stash_type", 1);
    }
    return g;
}

static const xf_attrs *op_attrs(const xf_model *m, xf_op op)
{
    int i = find_node_op(m->graph, op);
    ck_assert_msg(i >= 0, "no %s node", xf_op_name(op));
    return &m->graph->nodes[i].attrs;
}

/* The reductions keep axes (attribute or input), keepdims; ArgMax and
 * ArgMin axis, keepdims, select_last_index (opset 12+); Hardmax its axis
 * (2-D at axis before 13); CumSum exclusive and reverse; the
 * normalizations epsilon, num_groups, axes, LRN's alpha, beta, bias and
 * size, LpNormalization's axis and p.  Each form comes back alike from
 * export. */
START_TEST(test_reduce_norm_attributes)
{
    static const int64_t opsets[] = {11, 13, 21};
    for (int f = 0; f < 3; f++) {
        int64_t opset = opsets[f];
        int counts[XF_OP_COUNT + 1];
        xf_model *m = load_counting(norm_graph(opset), opset, counts);
        ck_assert_int_eq(counts[XF_OP_OPAQUE], 0);
        for (xf_op op = XF_OP_REDUCE_L1; op <= XF_OP_LP_NORM; op++)
            ck_assert_msg(counts[op] == (op != XF_OP_GROUP_NORM || opset >= 21), "%s", xf_op_name(op));
        const xf_attrs *a = op_attrs(m, XF_OP_REDUCE_LOG_SUM_EXP);
        ck_assert(a->keepdims == 0 && a->has_axes == (opset < 18));
        a = op_attrs(m, XF_OP_ARG_MAX);
        ck_assert(a->axis == 2 && a->keepdims == 0 && a->select_last_index == (opset >= 12));
        ck_assert(op_attrs(m, XF_OP_ARG_MIN)->axis == -1 && op_attrs(m, XF_OP_ARG_MIN)->keepdims == 1);
        ck_assert(op_attrs(m, XF_OP_HARDMAX)->axis == 2 && op_attrs(m, XF_OP_HARDMAX)->softmax_legacy == (opset < 13));
        a = op_attrs(m, XF_OP_CUM_SUM);
        ck_assert(a->cumsum_exclusive == 1 && a->cumsum_reverse == 1);
        ck_assert(op_attrs(m, XF_OP_INSTANCE_NORM)->epsilon == 0.01f);
        a = op_attrs(m, XF_OP_MEAN_VARIANCE_NORM);
        ck_assert(a->n_axes == 2 && a->axes[0] == 1 && a->axes[1] == -1);
        a = op_attrs(m, XF_OP_LRN);
        ck_assert(a->alpha == 0.01f && a->beta == 0.5f && a->lrn_bias == 2 && a->lrn_size == 3);
        ck_assert(op_attrs(m, XF_OP_LP_NORM)->axis == 1 && op_attrs(m, XF_OP_LP_NORM)->lp_p == 1);
        if (opset >= 21)
            ck_assert(op_attrs(m, XF_OP_GROUP_NORM)->group == 2 && op_attrs(m, XF_OP_GROUP_NORM)->epsilon == 0.001f);
        /* shapes: ArgMax [2, 4, 3], the reductions [2, 3, 3] */
        const xf_value *v = &m->graph->values[m->graph->nodes[find_node_op(m->graph, XF_OP_ARG_MAX)].outputs[0]];
        ck_assert(v->dtype == XF_DT_INT64 && v->shape.ndim == 3 && v->shape.dims[2] == 3);
        v = &m->graph->values[m->graph->nodes[find_node_op(m->graph, XF_OP_REDUCE_L2)].outputs[0]];
        ck_assert(v->shape.ndim == 3 && v->shape.dims[0] == 2 && v->shape.dims[1] == 3);
        xf_model_free(roundtrip(m));
        xf_model_free(m);
    }
}
END_TEST

/* Defaults are left unsaid (MeanVarianceNormalization's axes [0, 2, 3],
 * Hardmax's axis), required attributes are written (LRN's size,
 * GroupNormalization's num_groups); a missing required attribute, a
 * stash_type other than float or select_last_index before opset 12 leave
 * the node opaque, and select_last_index cannot be written there. */
START_TEST(test_reduce_norm_defaults_and_refusals)
{
    static const int64_t d[] = {1, 4, 2, 2};
    for (int form = 0; form < 5; form++) {
        Onnx__GraphProto *g = mk_graph("g");
        PUSH(g->n_input, g->input, mk_vi("x", XF_DT_FLOAT, 4, d, NULL));
        PUSH(g->n_input, g->input, mk_vi("s", XF_DT_FLOAT, 1, (const int64_t[]){4}, NULL));
        norm_node(g, "MeanVarianceNormalization", NULL, NULL, "mvn", XF_DT_FLOAT);
        norm_node(g, "Hardmax", NULL, NULL, "hmax", XF_DT_FLOAT);
        Onnx__NodeProto *lrn = norm_node(g, "LRN", NULL, NULL, "lrn", XF_DT_FLOAT);
        Onnx__NodeProto *gn = norm_node(g, "GroupNormalization", "s", "s", "gnorm", XF_DT_FLOAT);
        Onnx__NodeProto *am = norm_node(g, "ArgMax", NULL, NULL, "amax", XF_DT_INT64);
        if (form != 1)
            attr_int(lrn, "size", 5);
        if (form != 2)
            attr_int(gn, "num_groups", 4);
        if (form == 3)
            attr_int(gn, "stash_type", 0);
        if (form == 4)
            attr_int(am, "select_last_index", 1);
        int counts[XF_OP_COUNT + 1];
        xf_model *m = load_counting(g, form == 4 ? 11 : 21, counts);
        ck_assert_int_eq(counts[XF_OP_LRN], form != 1);
        ck_assert_int_eq(counts[XF_OP_GROUP_NORM], form != 2 && form != 3);
        ck_assert_int_eq(counts[XF_OP_ARG_MAX], form != 4);
        ck_assert_int_eq(counts[XF_OP_OPAQUE], form != 0);
        if (form == 0) {
            const xf_attrs *a = op_attrs(m, XF_OP_MEAN_VARIANCE_NORM);
            ck_assert(a->n_axes == 3 && a->axes[0] == 0 && a->axes[1] == 2 && a->axes[2] == 3);
            uint8_t *buf;
            size_t len;
            xf_error e;
            ck_assert_msg(xf_model_save_buffer(m, &buf, &len, &e) == XF_OK, "%s", e.msg);
            Onnx__ModelProto *mp = onnx__model_proto__unpack(NULL, len, buf);
            ck_assert(mp && mp->graph && mp->graph->n_node == 5);
            for (size_t i = 0; i < mp->graph->n_node; i++) {
                const Onnx__NodeProto *n = mp->graph->node[i];
                bool required = strcmp(n->op_type, "LRN") == 0 || strcmp(n->op_type, "GroupNormalization") == 0;
                ck_assert_msg(n->n_attribute == (required ? 1u : 0u), "%s has %zu attributes", n->op_type,
                              n->n_attribute);
            }
            onnx__model_proto__free_unpacked(mp, NULL);
            free(buf);
        }
        xf_model_free(roundtrip(m));
        xf_model_free(m);
    }
    int counts[XF_OP_COUNT + 1];
    xf_model *m = load_counting(norm_graph(11), 11, counts);
    xf_node *n = &m->graph->nodes[find_node_op(m->graph, XF_OP_ARG_MAX)];
    n->attrs.select_last_index = 1;
    uint8_t *buf;
    size_t len;
    xf_error e;
    ck_assert_int_eq(xf_model_save_buffer(m, &buf, &len, &e), XF_ERR_UNSUPPORTED);
    ck_assert_msg(strstr(e.msg, "node 'amax' (ArgMax)") && strstr(e.msg, "select_last_index") &&
                      strstr(e.msg, "opset 11"),
                  "%s", e.msg);
    xf_model_free(m);
}
END_TEST


/* ConvTranspose keeps every attribute (output_shape as its spatial
 * extents, which then decide the output); a symbolic batch takes the size
 * given; an output_shape of another length, or lists of different lengths,
 * leave the node opaque. */
START_TEST(test_conv_transpose_attributes)
{
    static const int64_t x[] = {1, 4, 3, 5}, w[] = {4, 3, 3, 2}, b[] = {6}, y[] = {1, 6, 7, 12};
    static const char *const batch[] = {"N", NULL, NULL, NULL};
    static const int64_t strides[] = {2, 3}, pads[] = {1, 0, 0, 1}, dil[] = {1, 2}, opad[] = {1, 2};
    static const int64_t kernel[] = {3, 2}, oshape[] = {7, 12}, full_oshape[] = {1, 6, 7, 12};
    for (int form = 0; form < 4; form++) {
        Onnx__GraphProto *g = mk_graph("g");
        PUSH(g->n_input, g->input, mk_vi("x", XF_DT_FLOAT, 4, x, batch));
        PUSH(g->n_input, g->input, mk_vi("w", XF_DT_FLOAT, 4, w, NULL));
        PUSH(g->n_input, g->input, mk_vi("b", XF_DT_FLOAT, 1, b, NULL));
        Onnx__NodeProto *ct =
            mk_node("ConvTranspose", "ct", (const char *[]){"x", "w", "b", NULL}, (const char *[]){"y", NULL});
        attr_ints(ct, "strides", 2, strides);
        attr_ints(ct, "pads", form == 3 ? 2 : 4, pads);
        attr_ints(ct, "dilations", 2, dil);
        attr_ints(ct, "output_padding", 2, opad);
        attr_ints(ct, "kernel_shape", 2, kernel);
        attr_int(ct, "group", 2);
        if (form == 1)
            attr_ints(ct, "output_shape", 2, oshape);
        if (form == 2)
            attr_ints(ct, "output_shape", 4, full_oshape);
        PUSH(g->n_node, g->node, ct);
        /* 2 * 2 + 1 + 3 - 1 = 7 rows, 3 * 4 + 2 + 3 - 1 = 16 columns (or output_shape's 12) */
        PUSH(g->n_output, g->output, mk_vi("y", XF_DT_FLOAT, 4, y, NULL));
        int counts[XF_OP_COUNT + 1];
        xf_model *m = load_counting(g, 11, counts);
        ck_assert_int_eq(counts[XF_OP_CONV_TRANSPOSE], form <= 1);
        if (form <= 1) {
            const xf_node *n = &m->graph->nodes[find_node_op(m->graph, XF_OP_CONV_TRANSPOSE)];
            const xf_attrs *a = &n->attrs;
            ck_assert(a->n_spatial == 2 && a->strides[1] == 3 && a->pads[3] == 1 && a->dilations[1] == 2 &&
                      a->output_padding[0] == 1 && a->output_padding[1] == 2 && a->kernel[0] == 3 && a->group == 2);
            ck_assert(a->has_output_shape == (form == 1) && (form == 0 || a->output_shape[1] == 12));
            const xf_shape *ys = &m->graph->values[n->outputs[0]].shape;
            ck_assert(ys->ndim == 4 && ys->dims[0] == 1 && ys->dims[1] == 6 && ys->dims[2] == 7);
            ck_assert_int_eq(ys->dims[3], form == 1 ? 12 : 16);
            const char *dir = xf_test_tmpdir("proto_convt");
            xf_error e;
            ck_assert_msg(xf_model_save(m, path_in(dir, "m.onnx"), NULL, &e) == XF_OK, "%s", e.msg);
            assert_onnx_valid(path_in(dir, "m.onnx"));
            xf_model_free(roundtrip(m));
        }
        xf_model_free(m);
    }
}
END_TEST

/* RNN keeps direction, hidden_size, layout, clip and one activation per
 * direction with its parameters; LSTM's input_forget on an RNN leaves it
 * opaque. */
START_TEST(test_plain_rnn_attributes)
{
    static const int64_t x[] = {2, 5, 3}, w[] = {2, 4, 3}, r[] = {2, 4, 4}, y[] = {2, 5, 2, 4}, h[] = {2, 2, 4};
    static const float alpha[] = {0.2f, 1.5f}, beta[] = {0.5f};
    for (int form = 0; form < 2; form++) {
        Onnx__GraphProto *g = mk_graph("g");
        PUSH(g->n_input, g->input, mk_vi("x", XF_DT_FLOAT, 3, x, NULL));
        PUSH(g->n_input, g->input, mk_vi("w", XF_DT_FLOAT, 3, w, NULL));
        PUSH(g->n_input, g->input, mk_vi("r", XF_DT_FLOAT, 3, r, NULL));
        Onnx__NodeProto *n =
            mk_node("RNN", "rnn", (const char *[]){"x", "w", "r", NULL}, (const char *[]){"y", "h", NULL});
        attr_string(n, "direction", "bidirectional");
        attr_int(n, "hidden_size", 4);
        attr_int(n, "layout", 1);
        attr_float(n, "clip", 2.5f);
        attr_strings(n, "activations", 2, (const char *[]){"LeakyRelu", "ScaledTanh"});
        attr_floats(n, "activation_alpha", 2, alpha);
        attr_floats(n, "activation_beta", 1, beta);
        if (form == 1)
            attr_int(n, "input_forget", 1);
        PUSH(g->n_node, g->node, n);
        PUSH(g->n_output, g->output, mk_vi("y", XF_DT_FLOAT, 4, y, NULL));
        PUSH(g->n_output, g->output, mk_vi("h", XF_DT_FLOAT, 3, h, NULL));
        int counts[XF_OP_COUNT + 1];
        xf_model *m = load_counting(g, 14, counts);
        ck_assert_int_eq(counts[XF_OP_RNN], form == 0);
        if (form == 0) {
            const xf_node *nd = &m->graph->nodes[find_node_op(m->graph, XF_OP_RNN)];
            const xf_rnn_attrs *a = &nd->attrs.rnn;
            ck_assert(a->direction == 2 && a->hidden_size == 4 && a->layout == 1 && a->has_clip && a->clip == 2.5f);
            ck_assert(a->n_acts == 2 && a->acts[0] == XF_RNN_LEAKY_RELU && a->acts[1] == XF_RNN_SCALED_TANH);
            ck_assert(a->act_alpha[0] == 0.2f && a->act_alpha[1] == 1.5f && a->act_beta[1] == 0.5f);
            const xf_shape *ys = &m->graph->values[nd->outputs[0]].shape;
            ck_assert(ys->ndim == 4 && ys->dims[0] == 2 && ys->dims[1] == 5 && ys->dims[2] == 2 && ys->dims[3] == 4);
            xf_model_free(roundtrip(m));
        }
        xf_model_free(m);
    }
}
END_TEST

/* The integer ops of quantized models are known; ConvInteger and
 * QLinearConv keep Conv's attributes; the output types follow the
 * operands (int32, or y_zero_point's type); an attribute none of them
 * has leaves the node opaque. */
START_TEST(test_quantized_ops_attributes)
{
    static const int64_t x[] = {1, 2, 5, 5}, w[] = {4, 1, 3, 3}, four[] = {4}, y[] = {1, 4, 3, 3};
    static const int64_t a[] = {3, 5}, bm[] = {5, 2}, mm[] = {3, 2};
    static const int64_t strides[] = {2, 2}, pads[] = {1, 1, 1, 1};
    static const uint8_t zp4[] = {1, 2, 3, 4}, zp1[] = {7}, wd[36] = {1, 2, 3};
    static const float s1[] = {0.5f}, s4[] = {1, 2, 3, 4};
    static const int32_t bias[] = {1, 2, 3, 4};
    for (int form = 0; form < 2; form++) {
        Onnx__GraphProto *g = mk_graph("g");
        PUSH(g->n_input, g->input, mk_vi("x", XF_DT_FLOAT, 4, x, NULL));
        PUSH(g->n_input, g->input, mk_vi("a", XF_DT_UINT8, 2, a, NULL));
        PUSH(g->n_input, g->input, mk_vi("b", XF_DT_INT8, 2, bm, NULL));
        PUSH(g->n_initializer, g->initializer, mk_raw("w", XF_DT_UINT8, 4, w, wd, sizeof wd));
        PUSH(g->n_initializer, g->initializer, mk_raw("wzp", XF_DT_UINT8, 1, four, zp4, sizeof zp4));
        PUSH(g->n_initializer, g->initializer, mk_raw("zp", XF_DT_UINT8, 0, NULL, zp1, sizeof zp1));
        PUSH(g->n_initializer, g->initializer, mk_raw("bz", XF_DT_INT8, 0, NULL, zp1, sizeof zp1));
        PUSH(g->n_initializer, g->initializer, mk_raw("s", XF_DT_FLOAT, 0, NULL, s1, sizeof s1));
        PUSH(g->n_initializer, g->initializer, mk_raw("ws", XF_DT_FLOAT, 1, four, s4, sizeof s4));
        PUSH(g->n_initializer, g->initializer, mk_raw("bias", XF_DT_INT32, 1, four, bias, sizeof bias));
        PUSH(g->n_node, g->node,
             mk_node("DynamicQuantizeLinear", "dq", (const char *[]){"x", NULL},
                     (const char *[]){"xq", "xs", "xz", NULL}));
        Onnx__NodeProto *ci = mk_node("ConvInteger", "ci", (const char *[]){"xq", "w", "xz", "wzp", NULL},
                                      (const char *[]){"ci_y", NULL});
        Onnx__NodeProto *qc =
            mk_node("QLinearConv", "qc", (const char *[]){"xq", "xs", "xz", "w", "ws", "wzp", "s", "zp", "bias", NULL},
                    (const char *[]){"qc_y", NULL});
        for (int k = 0; k < 2; k++) {
            Onnx__NodeProto *c = k ? qc : ci;
            attr_ints(c, "strides", 2, strides);
            attr_ints(c, "pads", 4, pads);
            attr_int(c, "group", 2);
            PUSH(g->n_node, g->node, c);
        }
        if (form == 1)
            attr_int(qc, "output_padding", 1);
        Onnx__NodeProto *mi =
            mk_node("MatMulInteger", "mi", (const char *[]){"a", "b", NULL}, (const char *[]){"mi_y", NULL});
        if (form == 1)
            attr_int(mi, "transA", 1);
        PUSH(g->n_node, g->node, mi);
        PUSH(g->n_node, g->node,
             mk_node("QLinearMatMul", "qm", (const char *[]){"a", "s", "zp", "b", "s", "bz", "s", "bz", NULL},
                     (const char *[]){"qm_y", NULL}));
        PUSH(g->n_output, g->output, mk_vi("ci_y", XF_DT_INT32, 4, y, NULL));
        PUSH(g->n_output, g->output, mk_vi("qc_y", XF_DT_UINT8, 4, y, NULL));
        PUSH(g->n_output, g->output, mk_vi("mi_y", XF_DT_INT32, 2, mm, NULL));
        PUSH(g->n_output, g->output, mk_vi("qm_y", XF_DT_INT8, 2, mm, NULL));
        int counts[XF_OP_COUNT + 1];
        xf_model *m = load_counting(g, 13, counts);
        ck_assert_int_eq(counts[XF_OP_DYNAMIC_QUANTIZE_LINEAR], 1);
        ck_assert_int_eq(counts[XF_OP_CONV_INTEGER], 1);
        ck_assert_int_eq(counts[XF_OP_QLINEAR_CONV], form == 0);
        ck_assert_int_eq(counts[XF_OP_MATMUL_INTEGER], form == 0);
        ck_assert_int_eq(counts[XF_OP_QLINEAR_MATMUL], 1);
        const xf_graph *mg = m->graph;
        const xf_node *dq = &mg->nodes[find_node_op(mg, XF_OP_DYNAMIC_QUANTIZE_LINEAR)];
        ck_assert(mg->values[dq->outputs[0]].dtype == XF_DT_UINT8 && mg->values[dq->outputs[1]].dtype == XF_DT_FLOAT &&
                  mg->values[dq->outputs[2]].dtype == XF_DT_UINT8 && mg->values[dq->outputs[1]].shape.ndim == 0);
        const xf_node *ci_n = &mg->nodes[find_node_op(mg, XF_OP_CONV_INTEGER)];
        ck_assert(ci_n->attrs.group == 2 && ci_n->attrs.strides[0] == 2 && ci_n->attrs.pads[2] == 1);
        ck_assert_int_eq(mg->values[ci_n->outputs[0]].dtype, XF_DT_INT32);
        ck_assert_int_eq(mg->values[ci_n->outputs[0]].shape.dims[2], 3);
        const xf_node *qm = &mg->nodes[find_node_op(mg, XF_OP_QLINEAR_MATMUL)];
        ck_assert_int_eq(mg->values[qm->outputs[0]].dtype, XF_DT_INT8);
        if (form == 0) {
            const xf_node *qc_n = &mg->nodes[find_node_op(mg, XF_OP_QLINEAR_CONV)];
            ck_assert_int_eq(mg->values[qc_n->outputs[0]].dtype, XF_DT_UINT8);
            ck_assert(qc_n->attrs.group == 2 && qc_n->attrs.pads[3] == 1);
            const char *dir = xf_test_tmpdir("proto_qops");
            xf_error e;
            ck_assert_msg(xf_model_save(m, path_in(dir, "m.onnx"), NULL, &e) == XF_OK, "%s", e.msg);
            assert_onnx_valid(path_in(dir, "m.onnx"));
        }
        xf_model_free(roundtrip(m));
        xf_model_free(m);
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("proto_attrs");
    TCase *tc = tcase_create("op_attributes");
    tcase_add_checked_fixture(tc, NULL, free_allocs);
    tcase_add_test(tc, test_mod_fmod_and_newer_elementwise_ops);
    tcase_add_test(tc, test_resize_forms);
    tcase_add_test(tc, test_topk_attributes);
    tcase_add_test(tc, test_scatter_reductions);
    tcase_add_test(tc, test_rnn_attributes);
    tcase_add_test(tc, test_quantize_attributes);
    tcase_add_test(tc, test_roi_align_attributes);
    tcase_add_test(tc, test_nms_attributes);
    tcase_add_test(tc, test_elementwise_attributes);
    tcase_add_test(tc, test_prelu_opsets);
    tcase_add_test(tc, test_reduce_norm_attributes);
    tcase_add_test(tc, test_reduce_norm_defaults_and_refusals);
    tcase_add_test(tc, test_conv_transpose_attributes);
    tcase_add_test(tc, test_plain_rnn_attributes);
    tcase_add_test(tc, test_quantized_ops_attributes);
    suite_add_tcase(s, tc);
    return xf_test_run_suite(s);
}
