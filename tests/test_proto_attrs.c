/* ONNX import/export of the attributes of ops added after the core set
 * (Mod, Resize, TopK, the scatters, LSTM and GRU, QuantizeLinear and
 * DequantizeLinear, RoiAlign, NonMaxSuppression, GridSample; the others
 * are in test_proto_attrs_ops.c): what import keeps, what leaves a node
 * opaque, and that export gives back the same attributes. */
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

/* Resize keeps its modes, cubic's coefficient, exclude_outside and
 * antialias; opset 10's (X, scales) is asymmetric whatever it says
 * (test_proto_attrs_ops has its other forms). */
START_TEST(test_resize_forms)
{
    static const int64_t d[] = {1, 1, 2, 2}, four[] = {4}, o[] = {1, 1, 4, 4};
    static const float scales[] = {1, 1, 2, 2};
    for (int form = 0; form < 4; form++) {
        Onnx__GraphProto *g = mk_graph("g");
        PUSH(g->n_input, g->input, mk_vi("x", XF_DT_FLOAT, 4, d, NULL));
        PUSH(g->n_initializer, g->initializer, mk_raw("s", XF_DT_FLOAT, 1, four, scales, sizeof scales));
        Onnx__NodeProto *rs = mk_node("Resize", "r", form == 0 ? (const char *[]){"x", "s", NULL}
                                                                : (const char *[]){"x", "", "s", NULL},
                                      (const char *[]){"y", NULL});
        attr_string(rs, "mode", form >= 2 ? "cubic" : "linear");
        attr_string(rs, "coordinate_transformation_mode", "align_corners");
        if (form == 2) {
            attr_float(rs, "cubic_coeff_a", -0.5f);
            attr_int(rs, "exclude_outside", 1);
        }
        if (form == 3)
            attr_int(rs, "antialias", 1);
        PUSH(g->n_node, g->node, rs);
        PUSH(g->n_output, g->output, mk_vi("y", XF_DT_FLOAT, 4, o, NULL));
        int counts[XF_OP_COUNT + 1];
        xf_model *m = load_counting(g, form == 0 ? 10 : form == 3 ? 18 : 13, counts);
        ck_assert_int_eq(counts[XF_OP_RESIZE], 1);
        {
            const xf_node *n = &m->graph->nodes[find_node_op(m->graph, XF_OP_RESIZE)];
            ck_assert_int_eq(n->attrs.resize_mode, form == 0 ? 1 : form == 3 ? 2 : form);
            ck_assert_int_eq(n->attrs.resize_coord, form == 0 ? 1 : 2);
            ck_assert_int_eq(n->attrs.resize_exclude, form == 2);
            ck_assert_int_eq(n->attrs.resize_antialias, form == 3);
            ck_assert(n->attrs.alpha == (form == 2 ? -0.5f : -0.75f));
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

/* Pad's mode wrap is known from opset 19 (opaque before) and written back
 * only where the opset has it; Dropout's mask output is known. */
START_TEST(test_pad_wrap_and_dropout_mask)
{
    static const int64_t d[] = {2, 3}, four[] = {4}, pads[] = {0, 1, 0, 1};
    for (int64_t opset = 18; opset <= 19; opset++) {
        Onnx__GraphProto *g = mk_graph("g");
        PUSH(g->n_input, g->input, mk_vi("x", XF_DT_FLOAT, 2, d, NULL));
        PUSH(g->n_initializer, g->initializer, mk_raw("p", XF_DT_INT64, 1, four, pads, sizeof pads));
        Onnx__NodeProto *n = mk_node("Pad", "pad", (const char *[]){"x", "p", NULL}, (const char *[]){"y", NULL});
        attr_string(n, "mode", "wrap");
        PUSH(g->n_node, g->node, n);
        PUSH(g->n_node, g->node, mk_node("Dropout", "drop", (const char *[]){"x", NULL}, (const char *[]){"z", "m", NULL}));
        PUSH(g->n_output, g->output, mk_vi("y", XF_DT_FLOAT, -1, NULL, NULL));
        PUSH(g->n_output, g->output, mk_vi("z", XF_DT_FLOAT, -1, NULL, NULL));
        PUSH(g->n_output, g->output, mk_vi("m", XF_DT_UNDEFINED, -1, NULL, NULL));
        int counts[XF_OP_COUNT + 1];
        xf_model *m = load_counting(g, opset, counts);
        ck_assert_int_eq(counts[XF_OP_PAD], opset >= 19);
        ck_assert_int_eq(counts[XF_OP_DROPOUT], 1);
        const xf_node *drop = &m->graph->nodes[find_node_op(m->graph, XF_OP_DROPOUT)];
        ck_assert_int_eq(m->graph->values[drop->outputs[1]].dtype, XF_DT_BOOL);
        if (opset >= 19) {
            ck_assert_int_eq(m->graph->nodes[find_node_op(m->graph, XF_OP_PAD)].attrs.pad_mode, XF_PAD_WRAP);
            xf_model_free(roundtrip(m));
            m->opsets[0].version = 18;
            expect_export_refused(m, "node 'pad' (Pad)", "wrap", "opset 18");
        }
        xf_model_free(m);
    }
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
            assert_saved_valid(m, "proto_rnn");
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
    expect_export_refused(m, "node 'ra' (RoiAlign)", "half_pixel", "opset 10");
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

/* A GridSample of X (rank `rank`: [1, 2, 4, 5] or [1, 2, 3, 4, 5]) at a
 * grid of 6 (or 2 x 3) points per image, with the attributes given (NULL,
 * or -1 for align_corners: absent). */
static Onnx__GraphProto *grid_sample_graph(int rank, const char *mode, const char *padding, int align_corners)
{
    static const int64_t x4[] = {1, 2, 4, 5}, g4[] = {1, 1, 6, 2}, x5[] = {1, 2, 3, 4, 5}, g5[] = {1, 1, 2, 3, 3};
    Onnx__GraphProto *g = mk_graph("g");
    PUSH(g->n_input, g->input, mk_vi("x", XF_DT_FLOAT, rank, rank == 4 ? x4 : x5, NULL));
    PUSH(g->n_input, g->input, mk_vi("grid", XF_DT_FLOAT, rank, rank == 4 ? g4 : g5, NULL));
    Onnx__NodeProto *n = mk_node("GridSample", "gs", (const char *[]){"x", "grid", NULL}, (const char *[]){"y", NULL});
    if (mode)
        attr_string(n, "mode", mode);
    if (padding)
        attr_string(n, "padding_mode", padding);
    if (align_corners >= 0)
        attr_int(n, "align_corners", align_corners);
    PUSH(g->n_node, g->node, n);
    PUSH(g->n_output, g->output, mk_vi("y", XF_DT_UNDEFINED, -1, NULL, NULL));
    return g;
}

/* The string attribute name of node n ("" when absent). */
static const char *string_attr(const Onnx__NodeProto *n, const char *name)
{
    for (size_t i = 0; i < n->n_attribute; i++)
        if (strcmp(n->attribute[i]->name, name) == 0) {
            char *s = zalloc(n->attribute[i]->s.len + 1);
            memcpy(s, n->attribute[i]->s.data, n->attribute[i]->s.len);
            return s;
        }
    return "";
}

/* GridSample keeps mode (opset 16's names bilinear and bicubic, opset
 * 20's linear and cubic), padding_mode and align_corners, and export
 * writes the mode as the model's opset names it (nothing for the
 * default); a mode named as the other opset names it, a padding_mode or
 * align_corners xflow does not model, or an opset before 16 leave the node
 * opaque. */
START_TEST(test_grid_sample_attributes)
{
    struct {
        int64_t opset;
        int rank;
        const char *mode, *padding;
        int align_corners;
        int known, grid_mode, grid_padding;
    } forms[] = {{16, 4, "bicubic", "reflection", 1, 1, 2, 2}, {16, 4, "nearest", "border", 0, 1, 1, 1},
                 {16, 4, "bilinear", NULL, -1, 1, 0, 0},      {20, 5, "linear", "zeros", 1, 1, 0, 0},
                 {20, 4, "cubic", "border", 0, 1, 2, 1},      {20, 5, "nearest", NULL, -1, 1, 1, 0},
                 {16, 4, "linear", NULL, -1, 0, 0, 0},        {20, 4, "bicubic", NULL, -1, 0, 0, 0},
                 {16, 4, "nearest", "mirror", -1, 0, 0, 0},   {16, 4, NULL, NULL, 2, 0, 0, 0},
                 {15, 4, NULL, NULL, -1, 0, 0, 0}};
    for (size_t f = 0; f < sizeof forms / sizeof forms[0]; f++) {
        int counts[XF_OP_COUNT + 1];
        xf_model *m = load_counting(grid_sample_graph(forms[f].rank, forms[f].mode, forms[f].padding,
                                                      forms[f].align_corners),
                                    forms[f].opset, counts);
        ck_assert_msg(counts[XF_OP_GRID_SAMPLE] == forms[f].known, "form %zu", f);
        ck_assert_int_eq(counts[XF_OP_OPAQUE], !forms[f].known);
        if (forms[f].known) {
            const xf_node *n = &m->graph->nodes[find_node_op(m->graph, XF_OP_GRID_SAMPLE)];
            ck_assert_int_eq(n->attrs.grid_mode, forms[f].grid_mode);
            ck_assert_int_eq(n->attrs.grid_padding, forms[f].grid_padding);
            ck_assert_int_eq(n->attrs.grid_align_corners, forms[f].align_corners == 1);
            const xf_shape *y = &m->graph->values[n->outputs[0]].shape;
            ck_assert(forms[f].rank == 4 ? y->ndim == 4 && y->dims[1] == 2 && y->dims[2] == 1 && y->dims[3] == 6
                                         : y->ndim == 5 && y->dims[1] == 2 && y->dims[3] == 2 && y->dims[4] == 3);
            uint8_t *buf;
            Onnx__ModelProto *mp = exported(m, &buf);
            const Onnx__NodeProto *np = mp->graph->node[0];
            ck_assert_str_eq(string_attr(np, "mode"), forms[f].grid_mode ? forms[f].mode : "");
            ck_assert_str_eq(string_attr(np, "padding_mode"), forms[f].grid_padding ? forms[f].padding : "");
            ck_assert_int_eq(has_attr(np, "align_corners"), forms[f].align_corners == 1);
            onnx__model_proto__free_unpacked(mp, NULL);
            free(buf);
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
    tcase_add_test(tc, test_grid_sample_attributes);
    tcase_add_test(tc, test_pad_wrap_and_dropout_mask);
    suite_add_tcase(s, tc);
    return xf_test_run_suite(s);
}
