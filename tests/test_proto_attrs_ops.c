/* ONNX import/export of the attributes of the elementwise ops of
 * test_elementwise, the reductions and normalizations of test_reduce_norm,
 * ConvTranspose, RNN and the integer quantized ops of test_convq, and the
 * movement and indexing ops of test_index, MaxPool's Indices and MaxUnpool
 * of test_unpool: what import keeps, what leaves a node opaque, and that
 * export gives back the same attributes. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "proto_util.h"
#include "xf_op_plans.h"
#include "xf_test_util.h"

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
    attr_string(n, "round_mode", form == 3 ? "toward_zero" : "nearest");
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
            ck_assert(cl->attrs.no_saturate && cl->attrs.round_mode == XF_ROUND_NEAREST);
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
        expect_export_refused(m, "node 'p' (PRelu)", "cannot express", NULL);
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
    expect_export_refused(m, "node 'amax' (ArgMax)", "select_last_index", "opset 11");
    xf_model_free(m);
}
END_TEST

/* LayerNormalization with its optional Mean and InvStdDev (either may be
 * omitted): a known node whose statistics have X's rank, X's dims before
 * axis and 1 from axis on, in float; a fourth output leaves it opaque. */
START_TEST(test_layer_norm_statistics)
{
    static const int64_t d[] = {2, 3, 4}, four[] = {4};
    static const float ones[] = {1, 1, 1, 1};
    static const char *const outs[][5] = {{"y", "mean", "inv", NULL}, {"y", "", "inv", NULL}, {"y", "mean", NULL},
                                          {"y", "mean", "inv", "extra", NULL}};
    for (int form = 0; form < 4; form++) {
        Onnx__GraphProto *g = mk_graph("g");
        PUSH(g->n_input, g->input, mk_vi("x", XF_DT_FLOAT, 3, d, NULL));
        PUSH(g->n_initializer, g->initializer, mk_raw("s", XF_DT_FLOAT, 1, four, ones, sizeof ones));
        PUSH(g->n_node, g->node, mk_node("LayerNormalization", "ln", (const char *[]){"x", "s", NULL}, outs[form]));
        for (int k = 0; outs[form][k]; k++)
            if (outs[form][k][0])
                PUSH(g->n_output, g->output, mk_vi(outs[form][k], XF_DT_UNDEFINED, -1, NULL, NULL));
        int counts[XF_OP_COUNT + 1];
        xf_model *m = load_counting(g, 17, counts);
        ck_assert_int_eq(counts[XF_OP_LAYER_NORM], form != 3);
        ck_assert_int_eq(counts[XF_OP_OPAQUE], form == 3);
        if (form != 3) {
            const xf_graph *gr = m->graph;
            const xf_node *n = &gr->nodes[find_node_op(gr, XF_OP_LAYER_NORM)];
            ck_assert_int_eq(n->n_outputs, form == 2 ? 2 : 3);
            for (int k = 1; k < n->n_outputs; k++) {
                ck_assert_int_eq(n->outputs[k] < 0, form == 1 && k == 1);
                if (n->outputs[k] < 0)
                    continue;
                const xf_value *v = &gr->values[n->outputs[k]];
                ck_assert_int_eq(v->dtype, XF_DT_FLOAT);
                ck_assert(v->shape.ndim == 3 && v->shape.dims[0] == 2 && v->shape.dims[1] == 3 && v->shape.dims[2] == 1);
            }
            xf_model *back = roundtrip(m);
            const xf_node *b = &back->graph->nodes[find_node_op(back->graph, XF_OP_LAYER_NORM)];
            ck_assert_int_eq(b->n_outputs, n->n_outputs);
            ck_assert_int_eq(b->outputs[1] < 0, form == 1);
            xf_model_free(back);
        }
        xf_model_free(m);
    }
}
END_TEST


/* BatchNormalization's training_mode (opset 14+) with momentum and its
 * running mean and variance outputs; running statistics without
 * training_mode, or training_mode before 14, leave it opaque; export
 * refuses training mode where the opset lacks it. */
START_TEST(test_batch_norm_training)
{
    static const int64_t d[] = {2, 3, 4}, three[] = {3};
    static const float ones[] = {1, 1, 1};
    struct {
        int64_t opset;
        int training, outs;
        bool known;
    } forms[] = {{15, 1, 3, true}, {14, 1, 1, true}, {15, 0, 3, false}, {13, 1, 1, false}};
    for (size_t f = 0; f < sizeof forms / sizeof forms[0]; f++) {
        Onnx__GraphProto *g = mk_graph("g");
        PUSH(g->n_input, g->input, mk_vi("x", XF_DT_FLOAT, 3, d, NULL));
        PUSH(g->n_initializer, g->initializer, mk_raw("p", XF_DT_FLOAT, 1, three, ones, sizeof ones));
        const char *outs[] = {"y", forms[f].outs > 1 ? "rm" : NULL, "rv", NULL};
        Onnx__NodeProto *n = mk_node("BatchNormalization", "bn", (const char *[]){"x", "p", "p", "p", "p", NULL}, outs);
        attr_int(n, "training_mode", forms[f].training);
        attr_float(n, "momentum", 0.25f);
        PUSH(g->n_node, g->node, n);
        for (int k = 0; k < forms[f].outs; k++)
            PUSH(g->n_output, g->output, mk_vi(outs[k], XF_DT_UNDEFINED, -1, NULL, NULL));
        int counts[XF_OP_COUNT + 1];
        xf_model *m = load_counting(g, forms[f].opset, counts);
        ck_assert_int_eq(counts[XF_OP_BATCH_NORM], forms[f].known);
        if (forms[f].known) {
            const xf_node *bn = &m->graph->nodes[find_node_op(m->graph, XF_OP_BATCH_NORM)];
            ck_assert(bn->attrs.bn_training == 1 && bn->attrs.bn_momentum == 0.25f);
            ck_assert_int_eq(bn->n_outputs, forms[f].outs);
            for (int k = 1; k < bn->n_outputs; k++) {
                const xf_value *v = &m->graph->values[bn->outputs[k]];
                ck_assert(v->dtype == XF_DT_FLOAT && v->shape.ndim == 1 && v->shape.dims[0] == 3);
            }
            xf_model_free(roundtrip(m));
            m->opsets[0].version = 13;
            expect_export_refused(m, "node 'bn' (BatchNormalization)", "training mode", "opset 13");
        }
        xf_model_free(m);
    }
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
            assert_saved_valid(m, "proto_convt");
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
            assert_saved_valid(m, "proto_qops");
        }
        xf_model_free(roundtrip(m));
        xf_model_free(m);
    }
}
END_TEST


/* ------------------------------------------------------------ movement and indexing */

/* A graph of one node `op` reading the float input x (dims d),
 * then the inputs named in more (initializers the caller pushes), writing
 * y; the node is returned for its attributes. */
static Onnx__NodeProto *one_node(Onnx__GraphProto **g, const char *op, int ndim, const int64_t *d,
                                 const char *const *more)
{
    const char *ins[8] = {"x"};
    for (int i = 0; more && more[i]; i++)
        ins[i + 1] = more[i];
    *g = mk_graph("g");
    PUSH((*g)->n_input, (*g)->input, mk_vi("x", XF_DT_FLOAT, ndim, d, NULL));
    Onnx__NodeProto *n = mk_node(op, "n", ins, (const char *[]){"y", NULL});
    PUSH((*g)->n_node, (*g)->node, n);
    PUSH((*g)->n_output, (*g)->output, mk_vi("y", XF_DT_UNDEFINED, -1, NULL, NULL));
    return n;
}

/* Loads g under opset: the node of op when it is known (round-tripped
 * through export and import), else NULL. */
static const xf_node *load_one(Onnx__GraphProto *g, int64_t opset, xf_op op, xf_model **m)
{
    int counts[XF_OP_COUNT + 1];
    *m = load_counting(g, opset, counts);
    if (counts[op] != 1)
        return NULL;
    xf_model_free(roundtrip(*m));
    return &(*m)->graph->nodes[find_node_op((*m)->graph, op)];
}

/* Trilu's upper, DepthToSpace's and SpaceToDepth's blocksize and mode,
 * EyeLike's k and dtype, ReverseSequence's axes; a mode or dtype xflow
 * does not know leaves the node opaque, and mode CRD cannot be written
 * before opset 11. */
START_TEST(test_movement_attributes)
{
    static const int64_t d[] = {2, 8, 3, 3}, one[] = {1}, k[] = {-1}, lens[] = {3, 3, 3, 3, 3, 3, 3, 3};
    static const int64_t eye[] = {3, 4};
    Onnx__GraphProto *g;
    xf_model *m;
    Onnx__NodeProto *n = one_node(&g, "Trilu", 4, d, (const char *[]){"k", NULL});
    PUSH(g->n_initializer, g->initializer, mk_raw("k", XF_DT_INT64, 0, one, k, sizeof k));
    attr_int(n, "upper", 0);
    const xf_node *x = load_one(g, 14, XF_OP_TRILU, &m);
    ck_assert(x && x->attrs.trilu_lower);
    xf_model_free(m);

    for (int form = 0; form < 4; form++) {
        n = one_node(&g, form == 3 ? "SpaceToDepth" : "DepthToSpace", 4, d, NULL);
        attr_int(n, "blocksize", form == 3 ? 3 : 2);
        if (form < 2)
            attr_string(n, "mode", form == 0 ? "CRD" : "ABC");
        x = load_one(g, form == 2 ? 1 : 13, form == 3 ? XF_OP_SPACE_TO_DEPTH : XF_OP_DEPTH_TO_SPACE, &m);
        ck_assert(form == 1 ? !x : x && x->attrs.block_size == (form == 3 ? 3 : 2) && x->attrs.depth_crd == !form);
        if (form == 0) {
            uint8_t *buf;
            Onnx__ModelProto *mp = exported(m, &buf);
            ck_assert(has_attr(mp->graph->node[0], "mode") && has_attr(mp->graph->node[0], "blocksize"));
            onnx__model_proto__free_unpacked(mp, NULL);
            free(buf);
            m->opsets[0].version = 10;
            expect_export_refused(m, "node 'n' (DepthToSpace)", "CRD", NULL);
        }
        if (form == 3)
            ck_assert_int_eq(m->graph->values[x->outputs[0]].shape.dims[1], 72);
        xf_model_free(m);
    }

    for (int form = 0; form < 2; form++) {
        n = one_node(&g, "EyeLike", 2, eye, NULL);
        attr_int(n, "k", 1);
        attr_int(n, "dtype", form ? 99 : XF_DT_DOUBLE);
        x = load_one(g, 9, XF_OP_EYE_LIKE, &m);
        ck_assert(form ? !x : x && x->attrs.eye_k == 1 && x->attrs.to == XF_DT_DOUBLE);
        if (!form)
            ck_assert_int_eq(m->graph->values[x->outputs[0]].dtype, XF_DT_DOUBLE);
        xf_model_free(m);
    }

    n = one_node(&g, "ReverseSequence", 4, d, (const char *[]){"lens", NULL});
    PUSH(g->n_initializer, g->initializer, mk_raw("lens", XF_DT_INT64, 1, (const int64_t[]){8}, lens, sizeof lens));
    attr_int(n, "batch_axis", 1);
    attr_int(n, "time_axis", 0);
    x = load_one(g, 10, XF_OP_REVERSE_SEQUENCE, &m);
    ck_assert(x && x->attrs.n_axes == 2 && x->attrs.axes[0] == 1 && x->attrs.axes[1] == 0);
    xf_model_free(m);
    n = one_node(&g, "ReverseSequence", 4, (const int64_t[]){8, 2, 3, 3}, (const char *[]){"lens", NULL});
    PUSH(g->n_initializer, g->initializer, mk_raw("lens", XF_DT_INT64, 1, (const int64_t[]){8}, lens, sizeof lens));
    attr_int(n, "batch_axis", 0);
    attr_int(n, "time_axis", 1);
    x = load_one(g, 10, XF_OP_REVERSE_SEQUENCE, &m);
    ck_assert(x && x->attrs.axes[0] == 0 && x->attrs.axes[1] == 1);
    xf_model_free(m);
}
END_TEST

/* OneHot keeps axis, and whether negative indices count from the end
 * (opset 11) or name no class (before), which export cannot change;
 * Compress keeps whether it has an axis. */
START_TEST(test_indexing_attributes)
{
    static const int64_t d[] = {2, 3, 1, 1}, one[] = {1}, depth[] = {4}, two[] = {2}, lens[] = {3};
    static const float values[] = {0, 1};
    static const uint8_t cond[] = {1, 0, 1};
    for (int form = 0; form < 2; form++) {
        Onnx__GraphProto *g;
        xf_model *m;
        Onnx__NodeProto *n = one_node(&g, "OneHot", 4, d, (const char *[]){"depth", "values", NULL});
        PUSH(g->n_initializer, g->initializer, mk_raw("depth", XF_DT_INT64, 1, one, depth, sizeof depth));
        PUSH(g->n_initializer, g->initializer, mk_raw("values", XF_DT_FLOAT, 1, two, values, sizeof values));
        attr_int(n, "axis", 1);
        const xf_node *x = load_one(g, form ? 9 : 11, XF_OP_ONE_HOT, &m);
        ck_assert(x && x->attrs.axis == 1 && x->attrs.onehot_legacy == form);
        ck_assert_int_eq(m->graph->values[x->outputs[0]].shape.dims[1], 4);
        m->opsets[0].version = form ? 11 : 10;
        expect_export_refused(m, "node 'n' (OneHot)", "negative indices", NULL);
        xf_model_free(m);

        n = one_node(&g, "Compress", 4, d, (const char *[]){"cond", NULL});
        PUSH(g->n_initializer, g->initializer, mk_raw("cond", XF_DT_BOOL, 1, lens, cond, sizeof cond));
        if (form)
            attr_int(n, "axis", -3);
        x = load_one(g, 11, XF_OP_COMPRESS, &m);
        ck_assert(x && x->attrs.has_axis == form && (!form || x->attrs.axis == -3));
        const xf_shape *s = &m->graph->values[x->outputs[0]].shape;
        ck_assert(form ? s->ndim == 4 && s->dims[1] == 2 : s->ndim == 1 && s->dims[0] == 2);
        xf_model_free(m);
    }
}
END_TEST

/* Einsum keeps its equation verbatim (spaces too); an equation that is
 * not a string leaves the node opaque, a missing or malformed one fails
 * the load naming the node. */
START_TEST(test_einsum_equation)
{
    static const int64_t d[] = {2, 3, 4, 5};
    Onnx__GraphProto *g;
    xf_model *m;
    Onnx__NodeProto *n = one_node(&g, "Einsum", 4, d, NULL);
    attr_string(n, "equation", "ab cd -> dc");
    const xf_node *x = load_one(g, 12, XF_OP_EINSUM, &m);
    ck_assert(x && xf_einsum_equation(&x->attrs) && strcmp(xf_einsum_equation(&x->attrs), "ab cd -> dc") == 0);
    const xf_shape *s = &m->graph->values[x->outputs[0]].shape;
    ck_assert(s->ndim == 2 && s->dims[0] == 5 && s->dims[1] == 4);
    xf_model_free(m);
    n = one_node(&g, "Einsum", 4, d, NULL);
    attr_int(n, "equation", 1);
    ck_assert_ptr_null(load_one(g, 12, XF_OP_EINSUM, &m));
    xf_model_free(m);
    for (int form = 0; form < 2; form++) {
        n = one_node(&g, "Einsum", 4, d, NULL);
        if (form)
            attr_string(n, "equation", "abc->d");
        xf_error e;
        ck_assert_int_eq(load_proto(mk_model(g, 12), NULL, &m, &e), XF_ERR_INVALID);
        ck_assert_msg(strstr(e.msg, "node 'n' (Einsum)") && strstr(e.msg, form ? "rank 4" : "no equation"), "%s",
                      e.msg);
    }
}
END_TEST

/* Upsample keeps its mode, and before opset 9 its scales attribute, which
 * export writes back only where the opset has it; a mode or an opset
 * (before 7) xflow does not model leaves the node opaque. */
START_TEST(test_upsample_forms)
{
    static const int64_t d[] = {1, 1, 2, 2}, four[] = {4};
    static const float scales[] = {1, 1, 2, 3};
    struct {
        int64_t opset;
        const char *mode;
        bool attr, input, known;
    } forms[] = {{7, "linear", true, false, true},  {9, "nearest", false, true, true},
                 {9, "linear", true, true, false},  {8, "bilinear", true, false, false},
                 {1, "nearest", true, false, false}};
    for (size_t f = 0; f < sizeof forms / sizeof forms[0]; f++) {
        Onnx__GraphProto *g;
        xf_model *m;
        Onnx__NodeProto *n = one_node(&g, "Upsample", 4, d, forms[f].input ? (const char *[]){"s", NULL} : NULL);
        if (forms[f].input)
            PUSH(g->n_initializer, g->initializer, mk_raw("s", XF_DT_FLOAT, 1, four, scales, sizeof scales));
        if (forms[f].attr)
            attr_floats(n, "scales", 4, scales);
        attr_string(n, "mode", forms[f].mode);
        const xf_node *x = load_one(g, forms[f].opset, XF_OP_UPSAMPLE, &m);
        ck_assert_int_eq(x != NULL, forms[f].known);
        if (x) {
            ck_assert_int_eq(x->attrs.resize_mode, f == 0);
            ck_assert_int_eq(x->attrs.value != NULL, forms[f].attr);
            const xf_shape *s = &m->graph->values[x->outputs[0]].shape;
            ck_assert(s->ndim == 4 && s->dims[2] == 4 && s->dims[3] == 6);
            m->opsets[0].version = f == 0 ? 9 : 8;
            expect_export_refused(m, "node 'n' (Upsample)", "scales", NULL);
        }
        xf_model_free(m);
    }
}
END_TEST

/* Resize: opset 10's (X, scales) loads as the later form with no roi,
 * asymmetric, with its own nearest rounding, and is written back with two
 * inputs (cubic, which it lacks, stays opaque); opset 18's antialias, axes
 * and keep_aspect_ratio_policy are kept; a form the model's opset cannot
 * express is refused at export. */
START_TEST(test_resize_forms_io)
{
    static const int64_t d[] = {1, 1, 2, 2}, four[] = {4}, two[] = {2}, axes[] = {2, 3};
    static const float scales[] = {1, 1, 2, 0.5f};
    static const int64_t sizes[] = {3, 3};
    for (int f = 0; f < 3; f++) {
        Onnx__GraphProto *g;
        xf_model *m;
        bool v10 = f < 2;
        Onnx__NodeProto *n = one_node(&g, "Resize", 4, d, v10 ? (const char *[]){"s", NULL}
                                                              : (const char *[]){"", "", "z", NULL});
        if (v10)
            PUSH(g->n_initializer, g->initializer, mk_raw("s", XF_DT_FLOAT, 1, four, scales, sizeof scales));
        else
            PUSH(g->n_initializer, g->initializer, mk_raw("z", XF_DT_INT64, 1, two, sizes, sizeof sizes));
        attr_string(n, "mode", f == 1 ? "cubic" : "linear");
        if (!v10) {
            attr_int(n, "antialias", 1);
            attr_ints(n, "axes", 2, axes);
            attr_string(n, "keep_aspect_ratio_policy", "not_larger");
        }
        const xf_node *x = load_one(g, v10 ? 10 : 19, XF_OP_RESIZE, &m);
        ck_assert_int_eq(x != NULL, f != 1);
        if (!x) {
            xf_model_free(m);
            continue;
        }
        const xf_attrs *a = &x->attrs;
        const xf_shape *s = &m->graph->values[x->outputs[0]].shape;
        ck_assert_int_eq(a->resize_mode, 1);
        if (v10) {
            ck_assert(x->n_inputs == 3 && x->inputs[1] < 0 && a->resize_coord == 1 && a->resize_nearest == 0);
            ck_assert(s->ndim == 4 && s->dims[2] == 4 && s->dims[3] == 1);
            uint8_t *buf;
            size_t len;
            xf_error e;
            ck_assert_msg(xf_model_save_buffer(m, &buf, &len, &e) == XF_OK, "%s", e.msg);
            Onnx__ModelProto *mp = onnx__model_proto__unpack(NULL, len, buf);
            ck_assert(mp && mp->graph->n_node == 1 && mp->graph->node[0]->n_input == 2);
            ck_assert_str_eq(mp->graph->node[0]->input[1], "s");
            ck_assert_uint_eq(mp->graph->node[0]->n_attribute, 1);
            onnx__model_proto__free_unpacked(mp, NULL);
            free(buf);
            /* linear is opset 13's asymmetric linear; nearest has no such rounding there */
            m->opsets[0].version = 13;
            xf_model_free(roundtrip(m));
            m->graph->nodes[0].attrs.resize_mode = 0;
            m->graph->nodes[0].attrs.resize_nearest = 4;
            expect_export_refused(m, "node 'n' (Resize)", "opset 10's nearest rounding", NULL);
            m->opsets[0].version = 10;
            m->graph->nodes[0].attrs.resize_coord = 0;
            expect_export_refused(m, "node 'n' (Resize)", "opset 10's Resize", NULL);
        } else {
            ck_assert(a->resize_antialias && a->resize_keep == 1 && a->has_axes && a->n_axes == 2 && a->axes[1] == 3);
            /* not_larger: 2x2 to at most 3x3 is 1.5 */
            ck_assert(s->ndim == 4 && s->dims[2] == 3 && s->dims[3] == 3);
            m->opsets[0].version = 17;
            expect_export_refused(m, "node 'n' (Resize)", "antialias", NULL);
        }
        xf_model_free(m);
    }
}
END_TEST

/* Unique keeps axis and sorted, with any of its outputs but Y left out
 * (inverse_indices here); Scatter (opset 9 and 10) keeps axis. */
START_TEST(test_unique_scatter_attributes)
{
    static const int64_t d[] = {2, 3}, one[] = {1, 1};
    static const int64_t idx[] = {0};
    static const float upd[] = {5};
    Onnx__GraphProto *g = mk_graph("g");
    PUSH(g->n_input, g->input, mk_vi("x", XF_DT_FLOAT, 2, d, NULL));
    Onnx__NodeProto *n = mk_node("Unique", "u", (const char *[]){"x", NULL}, (const char *[]){"y", "i", "", "c", NULL});
    attr_int(n, "axis", -1);
    attr_int(n, "sorted", 0);
    PUSH(g->n_node, g->node, n);
    PUSH(g->n_output, g->output, mk_vi("y", XF_DT_FLOAT, -1, NULL, NULL));
    PUSH(g->n_output, g->output, mk_vi("c", XF_DT_INT64, -1, NULL, NULL));
    xf_model *m;
    const xf_node *x = load_one(g, 11, XF_OP_UNIQUE, &m);
    ck_assert(x && x->attrs.has_axis && x->attrs.axis == -1 && x->attrs.topk_unsorted);
    ck_assert(x->n_outputs == 4 && x->outputs[2] < 0);
    ck_assert_int_eq(m->graph->values[x->outputs[3]].dtype, XF_DT_INT64);
    xf_model_free(m);
    for (int opset = 9; opset <= 10; opset++) {
        n = one_node(&g, "Scatter", 2, d, (const char *[]){"i", "u", NULL});
        PUSH(g->n_initializer, g->initializer, mk_raw("i", XF_DT_INT64, 2, one, idx, sizeof idx));
        PUSH(g->n_initializer, g->initializer, mk_raw("u", XF_DT_FLOAT, 2, one, upd, sizeof upd));
        attr_int(n, "axis", 1);
        x = load_one(g, opset, XF_OP_SCATTER, &m);
        ck_assert(x && x->attrs.axis == 1 && x->attrs.reduction == 0);
        xf_model_free(m);
    }
}
END_TEST

/* MaxPool keeps storage_order and its Indices output (int64, of Y's
 * shape); one with Indices but no Y, or a storage_order other than 0 and
 * 1, stays opaque.  MaxUnpool keeps kernel_shape, strides and pads (its
 * output_shape is an input); without kernel_shape, or with an attribute
 * it does not have, it stays opaque.  Export writes back what it read. */
START_TEST(test_pool_indices_unpool_attributes)
{
    static const int64_t d[] = {1, 2, 5, 5}, k[] = {2, 2}, s[] = {2, 2}, p[] = {0, 1, 0, 1}, dil[] = {1, 1};
    for (int form = 0; form < 3; form++) {
        Onnx__GraphProto *g = mk_graph("g");
        PUSH(g->n_input, g->input, mk_vi("x", XF_DT_FLOAT, 4, d, NULL));
        Onnx__NodeProto *n = mk_node("MaxPool", "n", (const char *[]){"x", NULL},
                                     (const char *[]){form == 1 ? "" : "y", "i", NULL});
        attr_ints(n, "kernel_shape", 2, k);
        attr_ints(n, "strides", 2, s);
        attr_int(n, "storage_order", form == 2 ? 2 : 1);
        PUSH(g->n_node, g->node, n);
        PUSH(g->n_output, g->output, mk_vi("i", XF_DT_INT64, -1, NULL, NULL));
        xf_model *m;
        const xf_node *x = load_one(g, 12, XF_OP_MAX_POOL, &m);
        ck_assert_int_eq(x != NULL, form == 0);
        if (x) {
            const xf_value *iv = &m->graph->values[x->outputs[1]];
            ck_assert(x->n_outputs == 2 && x->attrs.storage_order == 1 && iv->dtype == XF_DT_INT64);
            ck_assert(iv->shape.ndim == 4 && iv->shape.dims[1] == 2 && iv->shape.dims[2] == 2 && iv->shape.dims[3] == 2);
            uint8_t *buf;
            Onnx__ModelProto *mp = exported(m, &buf);
            ck_assert(has_attr(mp->graph->node[0], "storage_order") && mp->graph->node[0]->n_output == 2);
            onnx__model_proto__free_unpacked(mp, NULL);
            free(buf);
        }
        xf_model_free(m);
    }
    for (int form = 0; form < 3; form++) {
        Onnx__GraphProto *g;
        Onnx__NodeProto *n = one_node(&g, "MaxUnpool", 4, d, (const char *[]){"i", NULL});
        PUSH(g->n_input, g->input, mk_vi("i", XF_DT_INT64, 4, d, NULL));
        if (form != 1)
            attr_ints(n, "kernel_shape", 2, k);
        attr_ints(n, "strides", 2, s);
        attr_ints(n, "pads", 4, p);
        if (form == 2)
            attr_ints(n, "dilations", 2, dil);
        xf_model *m;
        const xf_node *x = load_one(g, 11, XF_OP_MAX_UNPOOL, &m);
        ck_assert_int_eq(x != NULL, form == 0);
        if (x) {
            ck_assert(x->attrs.n_spatial == 2 && x->attrs.kernel[1] == 2 && x->attrs.strides[0] == 2);
            ck_assert(x->attrs.pads[1] == 1 && x->attrs.pads[3] == 1 && x->attrs.pads[0] == 0);
            const xf_shape *ys = &m->graph->values[x->outputs[0]].shape; /* (5 - 1) * 2 + 2 - pads */
            ck_assert(ys->ndim == 4 && ys->dims[2] == 10 && ys->dims[3] == 8);
        }
        xf_model_free(m);
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("proto_attrs_ops");
    TCase *tc = tcase_create("attributes");
    tcase_add_checked_fixture(tc, NULL, free_allocs);
    tcase_add_test(tc, test_elementwise_attributes);
    tcase_add_test(tc, test_prelu_opsets);
    tcase_add_test(tc, test_reduce_norm_attributes);
    tcase_add_test(tc, test_reduce_norm_defaults_and_refusals);
    tcase_add_test(tc, test_layer_norm_statistics);
    tcase_add_test(tc, test_batch_norm_training);
    tcase_add_test(tc, test_conv_transpose_attributes);
    tcase_add_test(tc, test_plain_rnn_attributes);
    tcase_add_test(tc, test_quantized_ops_attributes);
    tcase_add_test(tc, test_movement_attributes);
    tcase_add_test(tc, test_indexing_attributes);
    tcase_add_test(tc, test_einsum_equation);
    tcase_add_test(tc, test_upsample_forms);
    tcase_add_test(tc, test_resize_forms_io);
    tcase_add_test(tc, test_unique_scatter_attributes);
    tcase_add_test(tc, test_pool_indices_unpool_attributes);
    suite_add_tcase(s, tc);
    return xf_test_run_suite(s);
}
