/* ONNX-ML ops (runtime/ml_ops.c, ml_trees.c): models built as ONNX
 * files, loaded (the nodes stay opaque, their attributes kept), run on
 * every host backend against values worked out by hand or by the formulas
 * written out here; ONNX Runtime's binary classifier cases; plans that
 * cannot run refused by node when the session is made; xflowc checking
 * such a model on its outputs. */
#include "backend_util.h"
#include "kernel_case_util.h"
#include "proto_util.h"
#include "xf_test_util.h"

#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static Onnx__NodeProto *ml_node(const char *op, const char *const *ins, const char *const *outs)
{
    Onnx__NodeProto *n = mk_node(op, "ml", ins, outs);
    n->domain = "ai.onnx.ml";
    return n;
}

/* A model of node n reading X (float [rows, cols], rows -1: a symbolic
 * batch N; with `ids`, also int64 indices I [2]) and giving its outputs (1
 * or 2: Y, or label and scores). */
static Onnx__ModelProto *ml_model_in(Onnx__NodeProto *n, int64_t rows, int64_t cols, bool ids)
{
    static const char *const batch[] = {"N", NULL};
    int64_t *xd = zalloc(sizeof *xd * 2);
    xd[0] = rows;
    xd[1] = cols;
    Onnx__GraphProto *g = mk_graph("ml");
    PUSH(g->n_input, g->input, mk_vi("X", XF_DT_FLOAT, 2, xd, rows < 0 ? batch : NULL));
    if (ids)
        PUSH(g->n_input, g->input, mk_vi("I", XF_DT_INT64, 1, (const int64_t[]){2}, NULL));
    PUSH(g->n_node, g->node, n);
    for (size_t k = 0; k < n->n_output; k++)
        PUSH(g->n_output, g->output, mk_vi(n->output[k], XF_DT_UNDEFINED, -1, NULL, NULL));
    Onnx__ModelProto *m = mk_model(g, 17);
    add_opset(m, "ai.onnx.ml", 3);
    return m;
}

static Onnx__ModelProto *ml_model(Onnx__NodeProto *n, int64_t rows, int64_t cols)
{
    return ml_model_in(n, rows, cols, false);
}

/* Attribute a of n with entry i set to v (its values copied first: the
 * builders share static lists). */
static void set_int(Onnx__NodeProto *n, const char *a, size_t i, int64_t v)
{
    for (size_t k = 0; k < n->n_attribute; k++) {
        Onnx__AttributeProto *at = n->attribute[k];
        if (strcmp(at->name, a) != 0)
            continue;
        int64_t *copy = zalloc(sizeof *copy * at->n_ints);
        memcpy(copy, at->ints, sizeof *copy * at->n_ints);
        copy[i] = v;
        at->ints = copy;
        return;
    }
    ck_abort_msg("no attribute %s", a);
}

static void set_string(Onnx__NodeProto *n, const char *a, size_t i, const char *v)
{
    for (size_t k = 0; k < n->n_attribute; k++) {
        Onnx__AttributeProto *at = n->attribute[k];
        if (strcmp(at->name, a) != 0)
            continue;
        ProtobufCBinaryData *copy = zalloc(sizeof *copy * at->n_strings);
        memcpy(copy, at->strings, sizeof *copy * at->n_strings);
        copy[i] = (ProtobufCBinaryData){strlen(v), (uint8_t *)v};
        at->strings = copy;
        return;
    }
    ck_abort_msg("no attribute %s", a);
}

/* Loads mp and runs it on backend with inputs in (out receives n_out
 * tensors); the status of making or running the session. */
static xf_status run_on(Onnx__ModelProto *mp, const char *backend, xf_tensor *const *in, xf_tensor **out, xf_error *e)
{
    xf_model *m = NULL;
    xf_status st = load_proto(mp, NULL, &m, e);
    ck_assert_msg(st == XF_OK, "%s", e->msg);
    ck_assert_int_eq(m->graph->nodes[0].op, XF_OP_OPAQUE);
    xf_session *s = NULL;
    st = xf_session_create(m->graph, xf_model_opset(m), backend, NULL, &s, e);
    if (st == XF_OK)
        st = xf_session_run(s, in, out, e);
    xf_session_free(s);
    xf_model_free(m);
    return st;
}

/* Runs the model on every host backend with X and expects its one output. */
static void expect_one(Onnx__ModelProto *mp, xf_tensor *x, xf_dtype dt, int ndim, const int64_t *dims,
                       const double *want)
{
    const char *backends[4];
    int nb = host_backends(backends);
    for (int b = 0; b < nb; b++) {
        xf_tensor *y = NULL;
        xf_error e = {0};
        ck_assert_msg(run_on(mp, backends[b], &x, &y, &e) == XF_OK, "%s: %s", backends[b], e.msg);
        expect(y, dt, ndim, dims, want);
    }
    xf_tensor_release(x);
}

/* Label and scores of a classifier on every host backend. */
static void expect_two(Onnx__ModelProto *mp, xf_tensor *x, const int64_t *labels, int rows, int cols,
                       const double *scores)
{
    const char *backends[4];
    int nb = host_backends(backends);
    double want_labels[16];
    for (int r = 0; r < rows; r++)
        want_labels[r] = (double)labels[r];
    for (int b = 0; b < nb; b++) {
        xf_tensor *y[2] = {NULL, NULL};
        xf_error e = {0};
        ck_assert_msg(run_on(mp, backends[b], &x, y, &e) == XF_OK, "%s: %s", backends[b], e.msg);
        expect(y[0], XF_DT_INT64, DIMS(rows), want_labels);
        expect(y[1], XF_DT_FLOAT, DIMS(rows, cols), scores);
    }
    xf_tensor_release(x);
}

/* ------------------------------------------------------------ preprocessing */

START_TEST(preprocessing)
{
    const float rows[] = {1, -2, 2, 0, 0, 0};
    /* Scaler: one offset for every feature, a scale each */
    Onnx__NodeProto *n = ml_node("Scaler", (const char *[]){"X", NULL}, (const char *[]){"Y", NULL});
    attr_floats(n, "offset", 1, (const float[]){1});
    attr_floats(n, "scale", 3, (const float[]){2, 1, 0.5f});
    expect_one(ml_model(n, 2, 3), mk(XF_DT_FLOAT, DIMS(2, 3), rows), XF_DT_FLOAT, DIMS(2, 3),
               (double[]){0, -3, 0.5, -2, -1, -0.5});
    /* Normalizer: a row of zeros stays */
    static const char *const norms[] = {"MAX", "L1", "L2"};
    static const double want[3][6] = {{0.5, -1, 1, 0, 0, 0}, {0.2, -0.4, 0.4, 0, 0, 0},
                                      {1 / 3.0, -2 / 3.0, 2 / 3.0, 0, 0, 0}};
    for (int k = 0; k < 3; k++) {
        n = ml_node("Normalizer", (const char *[]){"X", NULL}, (const char *[]){"Y", NULL});
        attr_string(n, "norm", norms[k]);
        expect_one(ml_model(n, 2, 3), mk(XF_DT_FLOAT, DIMS(2, 3), rows), XF_DT_FLOAT, DIMS(2, 3), want[k]);
    }
    n = ml_node("Binarizer", (const char *[]){"X", NULL}, (const char *[]){"Y", NULL});
    attr_float(n, "threshold", 0.5f);
    expect_one(ml_model(n, 2, 3), mk(XF_DT_FLOAT, DIMS(2, 3), rows), XF_DT_FLOAT, DIMS(2, 3),
               (double[]){1, 0, 1, 0, 0, 0});
    /* Imputer: NaN (the default replaced value is 0, so set NaN) or 2 */
    const float holes[] = {NAN, 2, 3, 4, NAN, 6};
    n = ml_node("Imputer", (const char *[]){"X", NULL}, (const char *[]){"Y", NULL});
    attr_floats(n, "imputed_value_floats", 3, (const float[]){10, 20, 30});
    attr_float(n, "replaced_value_float", NAN);
    expect_one(ml_model(n, 2, 3), mk(XF_DT_FLOAT, DIMS(2, 3), holes), XF_DT_FLOAT, DIMS(2, 3),
               (double[]){10, 2, 3, 4, 20, 6});
    n = ml_node("Imputer", (const char *[]){"X", NULL}, (const char *[]){"Y", NULL});
    attr_floats(n, "imputed_value_floats", 1, (const float[]){7});
    attr_float(n, "replaced_value_float", 2);
    expect_one(ml_model(n, 2, 3), mk(XF_DT_FLOAT, DIMS(2, 3), holes), XF_DT_FLOAT, DIMS(2, 3),
               (double[]){NAN, 7, 3, 4, NAN, 6});
}
END_TEST

START_TEST(array_feature_extractor)
{
    const char *backends[4];
    int nb = host_backends(backends);
    for (int b = 0; b < nb; b++) {
        Onnx__NodeProto *n =
            ml_node("ArrayFeatureExtractor", (const char *[]){"X", "I", NULL}, (const char *[]){"Y", NULL});
        Onnx__ModelProto *mp = ml_model_in(n, 2, 3, true);
        xf_tensor *in[2] = {iota_f32(DIMS(2, 3), 0), I64(DIMS(2), 2, 0)}, *y = NULL;
        xf_error e = {0};
        ck_assert_msg(run_on(mp, backends[b], in, &y, &e) == XF_OK, "%s: %s", backends[b], e.msg);
        EXPECT(y, XF_DT_FLOAT, DIMS(2, 2), 2, 0, 5, 3);
        xf_tensor_release(in[1]);
        in[1] = I64(DIMS(2), 3, 0);
        ck_assert_int_eq(run_on(mp, backends[b], in, &y, &e), XF_ERR_INVALID);
        ck_assert_msg(strstr(e.msg, "node 'ml' (ArrayFeatureExtractor): index 3 is outside X's last axis of 3"), "%s",
                      e.msg);
        release_all(in, 2);
    }
}
END_TEST

/* ------------------------------------------------------------ linear models */

static double logistic(double v) { return 1 / (1 + exp(-v)); }

START_TEST(linear_models)
{
    const float rows[] = {1, -2, 2, 0, 0, 0, 1, 1, 1};
    Onnx__NodeProto *n = ml_node("LinearRegressor", (const char *[]){"X", NULL}, (const char *[]){"Y", NULL});
    attr_int(n, "targets", 2);
    attr_floats(n, "coefficients", 6, (const float[]){1, 2, 3, -1, 0, 1});
    attr_floats(n, "intercepts", 2, (const float[]){0.5f, -1});
    expect_one(ml_model(n, 3, 3), mk(XF_DT_FLOAT, DIMS(3, 3), rows), XF_DT_FLOAT, DIMS(3, 2),
               (double[]){3.5, 0, 0.5, -1, 6.5, -1});
    /* three classes: the label of the first largest score, scores through
     * the transform */
    static const float w[] = {1, 0, 0, 0, 1, 0, 0, 0, 1}, b[] = {0, 0.5f, 0};
    for (int logit = 0; logit < 2; logit++) {
        n = ml_node("LinearClassifier", (const char *[]){"X", NULL}, (const char *[]){"L", "S", NULL});
        attr_ints(n, "classlabels_ints", 3, (const int64_t[]){10, 20, 30});
        attr_floats(n, "coefficients", 9, w);
        attr_floats(n, "intercepts", 3, b);
        attr_string(n, "post_transform", logit ? "LOGISTIC" : "SOFTMAX");
        double scores[9];
        for (int r = 0; r < 3; r++) {
            double s[3], sum = 0;
            for (int j = 0; j < 3; j++)
                sum += (s[j] = logit ? logistic(rows[r * 3 + j] + b[j]) : exp(rows[r * 3 + j] + b[j]));
            for (int j = 0; j < 3; j++)
                scores[r * 3 + j] = logit ? s[j] : s[j] / sum;
        }
        expect_two(ml_model(n, 3, 3), mk(XF_DT_FLOAT, DIMS(3, 3), rows), (const int64_t[]){30, 20, 20}, 3, 3, scores);
    }
    /* no labels: the class index */
    n = ml_node("LinearClassifier", (const char *[]){"X", NULL}, (const char *[]){"L", "S", NULL});
    attr_floats(n, "coefficients", 6, (const float[]){1, 0, 0, 0, 0, 1});
    expect_two(ml_model(n, 3, 3), mk(XF_DT_FLOAT, DIMS(3, 3), rows), (const int64_t[]){1, 0, 0}, 3, 2,
               (double[]){1, 2, 0, 0, 1, 1});
    /* one row of coefficients and two labels: the second label where the
     * score is positive, the scores 1 - s and s */
    n = ml_node("LinearClassifier", (const char *[]){"X", NULL}, (const char *[]){"L", "S", NULL});
    attr_ints(n, "classlabels_ints", 2, (const int64_t[]){7, 9});
    attr_floats(n, "coefficients", 3, (const float[]){1, 1, 1});
    attr_floats(n, "intercepts", 1, (const float[]){-1});
    expect_two(ml_model(n, 3, 3), mk(XF_DT_FLOAT, DIMS(3, 3), rows), (const int64_t[]){7, 7, 9}, 3, 2,
               (double[]){1, 0, 2, -1, -1, 2});
}
END_TEST

/* ------------------------------------------------------------ tree ensembles */

/* Tree 0: node 0 (x0 <= 0.5: node 1, else node 2), node 2 (x1 > 1, or
 * x1 NaN: node 3, else node 4), leaves 1, 3, 4; listed as 0, 4, 2, 1, 3.
 * Tree 5: one leaf.  Leaf weights 1, 10, 100 and 0.25 to target 0; with
 * two targets also 5 (leaf 3) and 0.5 (tree 5) to target 1. */
static Onnx__NodeProto *regressor(const char *agg, int targets, int n_base, const float *base)
{
    Onnx__NodeProto *n = ml_node("TreeEnsembleRegressor", (const char *[]){"X", NULL}, (const char *[]){"Y", NULL});
    /* the builders keep these lists, not copies */
    static const int64_t tree[] = {0, 0, 0, 0, 0, 5}, id[] = {0, 4, 2, 1, 3, 0}, feature[] = {0, 0, 1, 0, 0, 0},
                         yes[] = {1, 0, 3, 0, 0, 0}, no[] = {2, 0, 4, 0, 0, 0}, missing[] = {0, 0, 1, 0, 0, 0},
                         w_tree[] = {0, 0, 0, 5, 0, 5}, w_node[] = {1, 3, 4, 0, 3, 0}, w_target[] = {0, 0, 0, 0, 1, 1};
    static const float value[] = {0.5f, 0, 1, 0, 0, 0}, w[] = {1, 10, 100, 0.25f, 5, 0.5f};
    static const char *const mode[] = {"BRANCH_LEQ", "LEAF", "BRANCH_GT", "LEAF", "LEAF", "LEAF"};
    attr_ints(n, "nodes_treeids", 6, tree);
    attr_ints(n, "nodes_nodeids", 6, id);
    attr_ints(n, "nodes_featureids", 6, feature);
    attr_floats(n, "nodes_values", 6, value);
    attr_strings(n, "nodes_modes", 6, mode);
    attr_ints(n, "nodes_truenodeids", 6, yes);
    attr_ints(n, "nodes_falsenodeids", 6, no);
    attr_ints(n, "nodes_missing_value_tracks_true", 6, missing);
    int nw = targets == 2 ? 6 : 4;
    attr_ints(n, "target_treeids", nw, w_tree);
    attr_ints(n, "target_nodeids", nw, w_node);
    attr_ints(n, "target_ids", nw, w_target);
    attr_floats(n, "target_weights", nw, w);
    attr_int(n, "n_targets", targets);
    attr_string(n, "aggregate_function", agg);
    if (n_base)
        attr_floats(n, "base_values", n_base, base);
    return n;
}

START_TEST(tree_regressor)
{
    const float rows[] = {0, 0, 1, 2, 1, NAN, 1, 0};
    static const char *const aggs[] = {"SUM", "AVERAGE", "MIN", "MAX"};
    static const double want[4][4] = {{3.25, 12.25, 12.25, 102.25},
                                      {2.625, 7.125, 7.125, 52.125},
                                      {2.25, 2.25, 2.25, 2.25},
                                      {3, 12, 12, 102}};
    for (int a = 0; a < 4; a++)
        expect_one(ml_model(regressor(aggs[a], 1, 1, (const float[]){2}), 4, 2), mk(XF_DT_FLOAT, DIMS(4, 2), rows),
                   XF_DT_FLOAT, DIMS(4, 1), want[a]);
    expect_one(ml_model(regressor("SUM", 2, 2, (const float[]){1, -1}), 4, 2), mk(XF_DT_FLOAT, DIMS(4, 2), rows),
               XF_DT_FLOAT, DIMS(4, 2), (double[]){2.25, -0.5, 11.25, 4.5, 11.25, 4.5, 101.25, -0.5});
}
END_TEST

/* One tree: x0 < 0 to leaf 1, else leaf 2.  weights: per leaf, n of
 * (class, weight). */
static Onnx__NodeProto *classifier(int n_labels, const int64_t *labels, int nw, const int64_t *nodes,
                                   const int64_t *classes, const float *weights)
{
    Onnx__NodeProto *n =
        ml_node("TreeEnsembleClassifier", (const char *[]){"X", NULL}, (const char *[]){"L", "S", NULL});
    static const int64_t zeros[] = {0, 0, 0, 0, 0, 0}, id[] = {0, 1, 2}, yes[] = {1, 0, 0}, no[] = {2, 0, 0};
    static const float value[] = {0, 0, 0};
    static const char *const mode[] = {"BRANCH_LT", "LEAF", "LEAF"};
    attr_ints(n, "nodes_treeids", 3, zeros);
    attr_ints(n, "nodes_nodeids", 3, id);
    attr_ints(n, "nodes_featureids", 3, zeros);
    attr_floats(n, "nodes_values", 3, value);
    attr_strings(n, "nodes_modes", 3, mode);
    attr_ints(n, "nodes_truenodeids", 3, yes);
    attr_ints(n, "nodes_falsenodeids", 3, no);
    attr_ints(n, "class_treeids", nw, zeros);
    attr_ints(n, "class_nodeids", nw, nodes);
    attr_ints(n, "class_ids", nw, classes);
    attr_floats(n, "class_weights", nw, weights);
    attr_ints(n, "classlabels_int64s", n_labels, labels);
    return n;
}

START_TEST(tree_classifier)
{
    const float rows[] = {-1, 1};
    static const int64_t three[] = {3, 4, 5}, nodes[] = {1, 1, 1, 2, 2}, classes[] = {0, 1, 2, 2, 1};
    static const float weights[] = {0.7f, 0.2f, 0.1f, 0.9f, 0.1f};
    /* several classes: the label of the largest sum, base values added */
    Onnx__NodeProto *n = classifier(3, three, 5, nodes, classes, weights);
    expect_two(ml_model(n, 2, 1), mk(XF_DT_FLOAT, DIMS(2, 1), rows), (const int64_t[]){3, 5}, 2, 3,
               (double[]){0.7, 0.2, 0.1, 0, 0.1, 0.9});
    n = classifier(3, three, 5, nodes, classes, weights);
    attr_floats(n, "base_values", 3, (const float[]){0.1f, 0.2f, 0.3f});
    attr_string(n, "post_transform", "SOFTMAX");
    double sm[6], raw[6] = {0.8, 0.4, 0.4, 0.1, 0.3, 1.2};
    for (int r = 0; r < 2; r++) {
        double sum = exp(raw[r * 3]) + exp(raw[r * 3 + 1]) + exp(raw[r * 3 + 2]);
        for (int j = 0; j < 3; j++)
            sm[r * 3 + j] = exp(raw[r * 3 + j]) / sum;
    }
    expect_two(ml_model(n, 2, 1), mk(XF_DT_FLOAT, DIMS(2, 1), rows), (const int64_t[]){3, 5}, 2, 3, sm);
    /* two labels, weights for one class, all positive (a random forest):
     * the second label past 0.5, scores 1 - s and s */
    static const int64_t two[] = {0, 1}, leaves[] = {1, 2}, zero[] = {0, 0};
    n = classifier(2, two, 2, leaves, zero, (const float[]){0.3f, 0.8f});
    expect_two(ml_model(n, 2, 1), mk(XF_DT_FLOAT, DIMS(2, 1), rows), (const int64_t[]){0, 1}, 2, 2,
               (double[]){0.7, 0.3, 0.2, 0.8});
    /* ... with a negative weight and a base value (gradient boosting): the
     * second label past 0, scores the logistic of -s and s */
    n = classifier(2, two, 2, leaves, zero, (const float[]){-0.4f, 1.5f});
    attr_floats(n, "base_values", 1, (const float[]){0.1f});
    attr_string(n, "post_transform", "LOGISTIC");
    expect_two(ml_model(n, 2, 1), mk(XF_DT_FLOAT, DIMS(2, 1), rows), (const int64_t[]){0, 1}, 2, 2,
               (double[]){logistic(0.3), logistic(-0.3), logistic(-1.6), logistic(1.6)});
}
END_TEST

/* TreeEnsemble (ai.onnx.ml 5): tree 0 is node 0 (x0 <= 0.5: leaf 0, else
 * node 1) and node 1 (x1 in {2, 3}: leaf 1, else leaf 2); tree 1 is the
 * leaf 3 that node 2 names on both sides (its feature, 7, never read).
 * Leaves: 1 and 0.5 to target 0,
 * 10 and 100 to target 1.  Modes and splits are tensor attributes. */
static Onnx__NodeProto *ensemble5(int64_t aggregate)
{
    static const int64_t feature[] = {0, 1, 7}, yes[] = {0, 1, 3}, no[] = {1, 2, 3}, yes_leaf[] = {1, 1, 1},
                         no_leaf[] = {0, 1, 1}, targets[] = {0, 1, 1, 0}, roots[] = {0, 2}, d3[] = {3}, d4[] = {4};
    static const uint8_t modes[] = {0, 6, 0};
    static const float splits[] = {0.5f, 0, 0}, weights[] = {1, 10, 100, 0.5f}, members[] = {2, 3, NAN};
    Onnx__NodeProto *n = ml_node("TreeEnsemble", (const char *[]){"X", NULL}, (const char *[]){"Y", NULL});
    attr_ints(n, "nodes_featureids", 3, feature);
    attr_ints(n, "nodes_truenodeids", 3, yes);
    attr_ints(n, "nodes_falsenodeids", 3, no);
    attr_ints(n, "nodes_trueleafs", 3, yes_leaf);
    attr_ints(n, "nodes_falseleafs", 3, no_leaf);
    attr_ints(n, "leaf_targetids", 4, targets);
    attr_ints(n, "tree_roots", 2, roots);
    attr_int(n, "n_targets", 2);
    attr_int(n, "aggregate_function", aggregate);
    mk_attr(n, "nodes_modes", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR)->t =
        mk_raw("", XF_DT_UINT8, 1, d3, modes, sizeof modes);
    mk_attr(n, "nodes_splits", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR)->t =
        mk_raw("", XF_DT_FLOAT, 1, d3, splits, sizeof splits);
    mk_attr(n, "leaf_weights", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR)->t =
        mk_raw("", XF_DT_FLOAT, 1, d4, weights, sizeof weights);
    mk_attr(n, "membership_values", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR)->t =
        mk_raw("", XF_DT_FLOAT, 1, d3, members, sizeof members);
    return n;
}

START_TEST(tree_ensemble_opset5)
{
    const float rows[] = {0, 0, 1, 2, 1, 4, 1, NAN};
    expect_one(ml_model(ensemble5(1), 4, 2), mk(XF_DT_FLOAT, DIMS(4, 2), rows), XF_DT_FLOAT, DIMS(4, 2),
               (double[]){1.5, 0, 0.5, 10, 0.5, 100, 0.5, 100});
    expect_one(ml_model(ensemble5(0), 4, 2), mk(XF_DT_FLOAT, DIMS(4, 2), rows), XF_DT_FLOAT, DIMS(4, 2),
               (double[]){0.75, 0, 0.25, 5, 0.25, 50, 0.25, 50});
}
END_TEST

/* ------------------------------------------------------------ support vector machines */

START_TEST(svm_regressor)
{
    const float rows[] = {0, 0, 1, 1, 2, -3};
    /* no support vectors: linear in the coefficients, plus rho */
    Onnx__NodeProto *n = ml_node("SVMRegressor", (const char *[]){"X", NULL}, (const char *[]){"Y", NULL});
    attr_floats(n, "coefficients", 2, (const float[]){1, 2});
    attr_floats(n, "rho", 1, (const float[]){0.5f});
    attr_int(n, "n_supports", 0);
    expect_one(ml_model(n, 3, 2), mk(XF_DT_FLOAT, DIMS(3, 2), rows), XF_DT_FLOAT, DIMS(3, 1),
               (double[]){0.5, 3.5, -3.5});
    /* RBF over two support vectors; one_class gives the sign */
    for (int one = 0; one < 2; one++) {
        n = ml_node("SVMRegressor", (const char *[]){"X", NULL}, (const char *[]){"Y", NULL});
        attr_floats(n, "coefficients", 2, (const float[]){1, -1});
        attr_floats(n, "support_vectors", 4, (const float[]){0, 0, 1, 1});
        attr_floats(n, "rho", 1, (const float[]){0.1f});
        attr_floats(n, "kernel_params", 3, (const float[]){0.5f, 0, 0});
        attr_string(n, "kernel_type", "RBF");
        attr_int(n, "n_supports", 2);
        attr_int(n, "one_class", one);
        double want[3];
        for (int r = 0; r < 3; r++) {
            double a = rows[2 * r], b = rows[2 * r + 1];
            want[r] = exp(-0.5 * (a * a + b * b)) - exp(-0.5 * ((a - 1) * (a - 1) + (b - 1) * (b - 1))) + 0.1;
            want[r] = one ? (want[r] > 0 ? 1 : -1) : want[r];
        }
        expect_one(ml_model(n, 3, 2), mk(XF_DT_FLOAT, DIMS(3, 2), rows), XF_DT_FLOAT, DIMS(3, 1), want);
    }
}
END_TEST

/* A classifier of classes 7 and 9 (with three: 10, 20, 30), one linear
 * support vector per class: (1, 0), (0, 1) and (-1, -1). */
static Onnx__NodeProto *svc(int classes, const float *coef, const float *rho)
{
    static const float vectors[] = {1, 0, 0, 1, -1, -1};
    static const int64_t ones[] = {1, 1, 1}, two[] = {7, 9}, three[] = {10, 20, 30};
    Onnx__NodeProto *n = ml_node("SVMClassifier", (const char *[]){"X", NULL}, (const char *[]){"L", "S", NULL});
    attr_floats(n, "support_vectors", 2 * classes, vectors);
    attr_ints(n, "vectors_per_class", classes, ones);
    attr_floats(n, "coefficients", (classes - 1) * classes, coef);
    attr_floats(n, "rho", classes * (classes - 1) / 2, rho);
    attr_ints(n, "classlabels_ints", classes, classes == 2 ? two : three);
    attr_string(n, "kernel_type", "LINEAR");
    return n;
}

START_TEST(svm_classifier)
{
    /* three classes: pairs (0, 1): x0 - x1, (0, 2): 2 x0 - (x0 + x1),
     * (1, 2): x1 + (x0 + x1); a vote to the pair's first class where
     * positive, the label of the most votes, the decision values as scores */
    const float rows[] = {2, -1, -1, 2, -3, 1};
    Onnx__NodeProto *n = svc(3, (const float[]){1, -1, 1, 2, 1, -1}, (const float[]){0, 0, 0});
    expect_two(ml_model(n, 3, 2), mk(XF_DT_FLOAT, DIMS(3, 2), rows), (const int64_t[]){10, 20, 30}, 3, 3,
               (double[]){3, 3, 0, -3, -3, 3, -4, -4, -1});
    /* two classes, d = x0 - x1 + 0.5: the first class where d > 0, scores
     * -d and d */
    const float rows2[] = {1, 0, 0, 1};
    n = svc(2, (const float[]){1, -1}, (const float[]){0.5f});
    expect_two(ml_model(n, 2, 2), mk(XF_DT_FLOAT, DIMS(2, 2), rows2), (const int64_t[]){7, 9}, 2, 2,
               (double[]){-1.5, 1.5, 0.5, -0.5});
    /* with prob_a -2: the pair's probability logistic(2 d), which the
     * coupling of two classes keeps (to its tolerance, 0.0025) */
    const char *backends[4];
    int nb = host_backends(backends);
    for (int b = 0; b < nb; b++) {
        n = svc(2, (const float[]){1, -1}, (const float[]){0.5f});
        attr_floats(n, "prob_a", 1, (const float[]){-2});
        attr_floats(n, "prob_b", 1, (const float[]){0});
        xf_tensor *x = mk(XF_DT_FLOAT, DIMS(2, 2), rows2), *y[2] = {NULL, NULL};
        xf_error e = {0};
        ck_assert_msg(run_on(ml_model(n, 2, 2), backends[b], &x, y, &e) == XF_OK, "%s", e.msg);
        EXPECT(y[0], XF_DT_INT64, DIMS(2), 7, 9);
        const float *p = y[1]->data;
        for (int r = 0; r < 2; r++) {
            double d = r == 0 ? 1.5 : -0.5;
            ck_assert_msg(fabs(p[2 * r] - logistic(2 * d)) < 2e-3 && fabs(p[2 * r] + p[2 * r + 1] - 1) < 1e-6,
                          "row %d: %g %g", r, p[2 * r], p[2 * r + 1]);
        }
        xf_tensor_release(y[1]);
        xf_tensor_release(x);
    }
}
END_TEST

/* ------------------------------------------------------------ ZipMap */

/* LinearClassifier -> ZipMap (-> SequenceAt when `at`): a sequence of one
 * map per row, from the labels to the row's scores. */
static Onnx__ModelProto *zip_model(bool at)
{
    static const float w[] = {1, 0, 0, 1}, b[] = {0, 0};
    static const int64_t labels[] = {5, -7};
    Onnx__NodeProto *n = ml_node("LinearClassifier", (const char *[]){"X", NULL}, (const char *[]){"L", "S", NULL});
    attr_ints(n, "classlabels_ints", 2, labels);
    attr_floats(n, "coefficients", 4, w);
    attr_floats(n, "intercepts", 2, b);
    Onnx__ModelProto *mp = ml_model(n, 3, 2);
    Onnx__NodeProto *z = ml_node("ZipMap", (const char *[]){"S", NULL}, (const char *[]){"Z", NULL});
    z->name = "zip";
    attr_ints(z, "classlabels_int64s", 2, labels);
    Onnx__GraphProto *g = mp->graph;
    PUSH(g->n_node, g->node, z);
    if (at) {
        static const int64_t one = 1;
        PUSH(g->n_initializer, g->initializer, mk_raw("one", XF_DT_INT64, 0, NULL, &one, sizeof one));
        PUSH(g->n_node, g->node, mk_node("SequenceAt", "at", (const char *[]){"Z", "one", NULL},
                                         (const char *[]){"M", NULL}));
    }
    g->output[1] = mk_vi(at ? "M" : "Z", XF_DT_UNDEFINED, -1, NULL, NULL);
    return mp;
}

START_TEST(zip_map)
{
    const float rows[] = {1, 2, 3, -4, 0.5f, 0.25f};
    const char *backends[4];
    int nb = host_backends(backends);
    for (int b = 0; b < nb; b++) {
        xf_tensor *x = mk(XF_DT_FLOAT, DIMS(3, 2), rows), *y[2] = {NULL, NULL};
        xf_error e = {0};
        ck_assert_msg(run_on(zip_model(false), backends[b], &x, y, &e) == XF_OK, "%s: %s", backends[b], e.msg);
        EXPECT(y[0], XF_DT_INT64, DIMS(3), -7, 5, 5);
        const xf_tensor *z = y[1];
        ck_assert(z->is_sequence && z->n_items == 3);
        for (int r = 0; r < 3; r++) {
            const xf_tensor *m = z->items[r];
            ck_assert(m->is_map && m->n_items == 2);
            ck_assert_int_eq(((const int64_t *)m->items[0]->data)[0], 5);
            ck_assert_int_eq(((const int64_t *)m->items[0]->data)[1], -7);
            ck_assert(((const float *)m->items[1]->data)[0] == rows[2 * r]);
            ck_assert(((const float *)m->items[1]->data)[1] == rows[2 * r + 1]);
        }
        /* written as ONNX's SequenceProto of MapProtos */
        const char *dir = xf_test_tmpdir("ml-zipmap");
        char path[4200], cmd[9000], *out = NULL;
        snprintf(path, sizeof path, "%s/z.pb", dir);
        ck_assert_msg(xf_value_save_pb(z, "Z", path, &e) == XF_OK, "%s", e.msg);
        snprintf(cmd, sizeof cmd,
                 XF_PYTHON " -c \"import onnx, sys; from onnx import numpy_helper as h; s = onnx.SequenceProto(); "
                 "s.ParseFromString(open(sys.argv[1], 'rb').read()); "
                 "print([{k: float(v) for k, v in d.items()} for d in h.to_list(s)])\" %s",
                 path);
        ck_assert_msg(xf_test_run(cmd, &out) == 0, "%s", out);
        ck_assert_msg(strstr(out, "[{5: 1.0, -7: 2.0}, {5: 3.0, -7: -4.0}, {5: 0.5, -7: 0.25}]"), "%s", out);
        free(out);
        xf_tensor_release(y[1]);
        xf_tensor_release(x);
    }
    /* the sequence ops take sequences of tensors */
    xf_tensor *x = mk(XF_DT_FLOAT, DIMS(3, 2), rows), *y[2] = {NULL, NULL};
    xf_error e = {0};
    ck_assert_int_eq(run_on(zip_model(true), "cpu_ref", &x, y, &e), XF_ERR_INVALID);
    ck_assert_msg(strstr(e.msg, "node 'at' (SequenceAt): input 0 is a sequence of maps"), "%s", e.msg);
    xf_tensor_release(x);
}
END_TEST

/* ------------------------------------------------------------ string labels */

/* The labels of model mp (label output first) on every host backend: the
 * strings want[0 .. rows - 1]. */
static void expect_strings(Onnx__ModelProto *mp, const float *rows, int n_rows, const char *const *want)
{
    const char *backends[4];
    int nb = host_backends(backends);
    for (int b = 0; b < nb; b++) {
        xf_tensor *x = mk(XF_DT_FLOAT, DIMS(n_rows, 1), rows), *y[2] = {NULL, NULL};
        xf_error e = {0};
        ck_assert_msg(run_on(mp, backends[b], &x, y, &e) == XF_OK, "%s: %s", backends[b], e.msg);
        ck_assert_int_eq(y[0]->dtype, XF_DT_STRING);
        ck_assert_int_eq(xf_tensor_numel(y[0]), n_rows);
        for (int r = 0; r < n_rows; r++)
            ck_assert_msg(y[0]->strings[r] && strcmp(y[0]->strings[r], want[r]) == 0, "%s: row %d: %s, want %s",
                          backends[b], r, y[0]->strings[r], want[r]);
        release_all(y, 2);
        xf_tensor_release(x);
    }
}

/* A tensor [2] of strings s0, s1. */
static xf_tensor *strings2(const char *s0, const char *s1)
{
    xf_tensor *t = xf_tensor_create(XF_DT_STRING, &(xf_shape){.ndim = 1, .dims = {2}});
    ck_assert_ptr_nonnull(t);
    t->strings[0] = strdup(s0);
    t->strings[1] = strdup(s1);
    return t;
}

/* String class labels: the label output a tensor of strings, with ONNX
 * Runtime's choices (a tree ensemble whose weights go to both of two
 * classes labels by whether the second class's score passes 0: 1 or 0
 * itself, or the label that index names; one row of linear coefficients
 * without a second label gives "1" or "0"); ZipMap's keys strings; any
 * other op reading the labels is refused by node. */
START_TEST(string_labels)
{
    static const char *const pets[] = {"cat", "dog"};
    static const int64_t two[] = {3, 8}, leaves[] = {1, 2}, zero[] = {0, 0}, both[] = {0, 1};
    const float rows[] = {-1, 1};
    Onnx__NodeProto *n = classifier(2, two, 2, leaves, zero, (const float[]){0.3f, 0.8f});
    attr_strings(n, "classlabels_strings", 2, pets);
    expect_strings(ml_model(n, 2, 1), rows, 2, (const char *[]){"cat", "dog"});
    n = classifier(2, two, 2, leaves, both, (const float[]){0.3f, 0.8f});
    expect_two(ml_model(n, 2, 1), mk(XF_DT_FLOAT, DIMS(2, 1), rows), (const int64_t[]){1, 1}, 2, 2,
               (double[]){-0.3, 0.3, 0, 0.8});
    n = classifier(2, two, 2, leaves, both, (const float[]){0.3f, 0.8f});
    attr_strings(n, "classlabels_strings", 2, pets);
    expect_strings(ml_model(n, 2, 1), rows, 2, (const char *[]){"dog", "dog"});
    n = ml_node("LinearClassifier", (const char *[]){"X", NULL}, (const char *[]){"L", "S", NULL});
    attr_strings(n, "classlabels_strings", 1, (const char *[]){"yes"});
    attr_floats(n, "coefficients", 1, (const float[]){1});
    attr_floats(n, "intercepts", 1, (const float[]){0});
    expect_strings(ml_model(n, 2, 1), rows, 2, (const char *[]){"0", "1"});
    /* ZipMap with string keys */
    n = ml_node("ZipMap", (const char *[]){"X", NULL}, (const char *[]){"Z", NULL});
    attr_strings(n, "classlabels_strings", 2, pets);
    xf_tensor *x = mk(XF_DT_FLOAT, DIMS(1, 2), (const float[]){0.25f, 0.75f}), *z = NULL;
    xf_error e = {0};
    ck_assert_msg(run_on(ml_model(n, 1, 2), "cpu_ref", &x, &z, &e) == XF_OK, "%s", e.msg);
    ck_assert(z->is_sequence && z->n_items == 1 && z->items[0]->is_map);
    const xf_tensor *keys = z->items[0]->items[0];
    ck_assert(keys->dtype == XF_DT_STRING && strcmp(keys->strings[0], "cat") == 0 &&
              strcmp(keys->strings[1], "dog") == 0);
    xf_tensor_release(z);
    xf_tensor_release(x);
    /* arithmetic on the labels */
    n = classifier(2, two, 2, leaves, zero, (const float[]){0.3f, 0.8f});
    attr_strings(n, "classlabels_strings", 2, pets);
    Onnx__ModelProto *mp = ml_model(n, 1, 1);
    Onnx__NodeProto *abs = mk_node("Abs", "abs", (const char *[]){"L", NULL}, (const char *[]){"F", NULL});
    PUSH(mp->graph->n_node, mp->graph->node, abs);
    mp->graph->output[0] = mk_vi("F", XF_DT_FLOAT, -1, NULL, NULL);
    x = mk(XF_DT_FLOAT, DIMS(1, 1), (const float[]){1});
    xf_tensor *y[2] = {NULL, NULL};
    ck_assert_int_eq(run_on(mp, "cpu_ref", &x, y, &e), XF_ERR_INVALID);
    ck_assert_msg(strstr(e.msg, "node 'abs' (Abs): reads or writes strings; of the standard ops xflow runs on strings "
                                "only those that move, select or compare elements, and Cast"),
                  "%s", e.msg);
    xf_tensor_release(x);
    /* string outputs compare equal or not (xflowc --check) */
    xf_tensor *a = strings2("cat", "dog"), *b = strings2("cat", "dog");
    bool ok = false;
    ck_assert(xf_tensor_compare(a, b, 0, 0, NULL, NULL, &ok, &e) == XF_OK && ok);
    free(b->strings[1]);
    b->strings[1] = strdup("eel");
    ck_assert(xf_tensor_compare(a, b, 1, 1, NULL, NULL, &ok, &e) == XF_OK && !ok);
    xf_tensor_release(a);
    xf_tensor_release(b);
}
END_TEST

/* ------------------------------------------------------------ encoders of strings */

/* A model of node n reading X, a tensor [k] of type t, giving Y. */
static Onnx__ModelProto *vector_model(Onnx__NodeProto *n, xf_dtype t, int64_t k)
{
    int64_t *d = zalloc(sizeof *d);
    *d = k;
    Onnx__GraphProto *g = mk_graph("enc");
    PUSH(g->n_input, g->input, mk_vi("X", t, 1, d, NULL));
    PUSH(g->n_node, g->node, n);
    PUSH(g->n_output, g->output, mk_vi("Y", XF_DT_UNDEFINED, -1, NULL, NULL));
    Onnx__ModelProto *m = mk_model(g, 17);
    add_opset(m, "ai.onnx.ml", 4);
    return m;
}

/* A tensor [n] of the strings given (NULL-terminated). */
static xf_tensor *text(const char *const *v)
{
    int64_t n = 0;
    while (v[n])
        n++;
    xf_tensor *t = xf_tensor_create(XF_DT_STRING, &(xf_shape){.ndim = 1, .dims = {n}});
    ck_assert_ptr_nonnull(t);
    for (int64_t i = 0; i < n; i++)
        t->strings[i] = strdup(v[i]);
    return t;
}

/* Runs the model on every host backend with x (released) and returns the
 * cpu_ref output after checking the others give the same. */
static xf_tensor *run_encoder(Onnx__ModelProto *mp, xf_tensor *x)
{
    const char *backends[4];
    int nb = host_backends(backends);
    xf_tensor *first = NULL;
    for (int b = 0; b < nb; b++) {
        xf_tensor *y = NULL;
        xf_error e = {0};
        ck_assert_msg(run_on(mp, backends[b], &x, &y, &e) == XF_OK, "%s: %s", backends[b], e.msg);
        bool same = true;
        ck_assert(!first || (xf_tensor_compare(y, first, 0, 0, NULL, NULL, &same, &e) == XF_OK && same));
        if (first)
            xf_tensor_release(y);
        else
            first = y;
    }
    xf_tensor_release(x);
    return first;
}

static void expect_text(xf_tensor *y, const char *const *want)
{
    ck_assert_int_eq(y->dtype, XF_DT_STRING);
    for (int64_t i = 0; want[i]; i++)
        ck_assert_msg(y->strings[i] && strcmp(y->strings[i], want[i]) == 0, "element %lld: %s, want %s",
                      (long long)i, y->strings[i], want[i]);
    xf_tensor_release(y);
}

/* LabelEncoder (opset 2's lists with defaults, opset 4's tensors, opset
 * 1's classes both ways), CategoryMapper both ways and OneHotEncoder, on
 * string inputs the session holds. */
START_TEST(string_encoders)
{
    static const char *const abc[] = {"a", "b", "c"}, *const xy[] = {"x", "y", "z"};
    static const int64_t nums[] = {7, 8, 9};
    const char *const in[] = {"b", "q", "a", "c", NULL};
    Onnx__NodeProto *n = ml_node("LabelEncoder", (const char *[]){"X", NULL}, (const char *[]){"Y", NULL});
    attr_strings(n, "keys_strings", 3, abc);
    attr_ints(n, "values_int64s", 3, nums);
    attr_int(n, "default_int64", 42);
    EXPECT(run_encoder(vector_model(n, XF_DT_STRING, 4), text(in)), XF_DT_INT64, DIMS(4), 8, 42, 7, 9);
    n = ml_node("LabelEncoder", (const char *[]){"X", NULL}, (const char *[]){"Y", NULL});
    attr_ints(n, "keys_int64s", 3, nums);
    attr_strings(n, "values_strings", 3, xy);
    expect_text(run_encoder(vector_model(n, XF_DT_INT64, 3), I64(DIMS(3), 9, 1, 7)),
                (const char *[]){"z", "_Unused", "x", NULL});
    n = ml_node("LabelEncoder", (const char *[]){"X", NULL}, (const char *[]){"Y", NULL});
    attr_floats(n, "keys_floats", 2, (const float[]){NAN, 0.5f});
    attr_floats(n, "values_floats", 2, (const float[]){1, 2});
    EXPECT(run_encoder(vector_model(n, XF_DT_FLOAT, 3), F32(DIMS(3), 0.5f, NAN, 3)), XF_DT_FLOAT, DIMS(3), 2, 1,
           -0.0);
    /* opset 4: keys and values as tensors, the default a tensor too */
    static const int64_t d3[] = {3}, d1[] = {1};
    static const int16_t vals16[] = {-1, 2, 300}, def16[] = {5};
    n = ml_node("LabelEncoder", (const char *[]){"X", NULL}, (const char *[]){"Y", NULL});
    Onnx__TensorProto *keys = mk_tensor("", XF_DT_STRING, 1, d3);
    keys->n_string_data = 3;
    keys->string_data = zalloc(sizeof *keys->string_data * 3);
    for (int i = 0; i < 3; i++)
        keys->string_data[i] = (ProtobufCBinaryData){1, (uint8_t *)abc[i]};
    mk_attr(n, "keys_tensor", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR)->t = keys;
    mk_attr(n, "values_tensor", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR)->t =
        mk_raw("", XF_DT_INT16, 1, d3, vals16, sizeof vals16);
    mk_attr(n, "default_tensor", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR)->t =
        mk_raw("", XF_DT_INT16, 1, d1, def16, sizeof def16);
    xf_tensor *y = run_encoder(vector_model(n, XF_DT_STRING, 4), text(in));
    ck_assert_int_eq(y->dtype, XF_DT_INT16);
    const int16_t *y16 = y->data;
    ck_assert(y16[0] == 2 && y16[1] == 5 && y16[2] == -1 && y16[3] == 300);
    xf_tensor_release(y);
    /* opset 1: classes_strings, a class's position */
    n = ml_node("LabelEncoder", (const char *[]){"X", NULL}, (const char *[]){"Y", NULL});
    attr_strings(n, "classes_strings", 3, abc);
    EXPECT(run_encoder(vector_model(n, XF_DT_STRING, 4), text(in)), XF_DT_INT64, DIMS(4), 1, -1, 0, 2);
    n = ml_node("LabelEncoder", (const char *[]){"X", NULL}, (const char *[]){"Y", NULL});
    attr_strings(n, "classes_strings", 3, abc);
    attr_string(n, "default_string", "?");
    expect_text(run_encoder(vector_model(n, XF_DT_INT64, 3), I64(DIMS(3), 2, 3, 0)),
                (const char *[]){"c", "?", "a", NULL});
    /* CategoryMapper, both ways */
    for (int way = 0; way < 2; way++) {
        n = ml_node("CategoryMapper", (const char *[]){"X", NULL}, (const char *[]){"Y", NULL});
        attr_strings(n, "cats_strings", 3, abc);
        attr_ints(n, "cats_int64s", 3, nums);
        if (way == 0)
            EXPECT(run_encoder(vector_model(n, XF_DT_STRING, 4), text(in)), XF_DT_INT64, DIMS(4), 8, -1, 7, 9);
        else
            expect_text(run_encoder(vector_model(n, XF_DT_INT64, 2), I64(DIMS(2), 9, 4)),
                        (const char *[]){"c", "_Unused", NULL});
    }
    /* OneHotEncoder: an unknown string gives zeros; with zeros 0 an
     * unknown number is refused */
    n = ml_node("OneHotEncoder", (const char *[]){"X", NULL}, (const char *[]){"Y", NULL});
    attr_strings(n, "cats_strings", 3, abc);
    EXPECT(run_encoder(vector_model(n, XF_DT_STRING, 4), text(in)), XF_DT_FLOAT, DIMS(4, 3), 0, 1, 0, 0, 0, 0, 1, 0,
           0, 0, 0, 1);
    n = ml_node("OneHotEncoder", (const char *[]){"X", NULL}, (const char *[]){"Y", NULL});
    attr_ints(n, "cats_int64s", 3, nums);
    attr_int(n, "zeros", 0);
    xf_tensor *x = I64(DIMS(2), 8, 5);
    xf_error e = {0};
    ck_assert_int_eq(run_on(vector_model(n, XF_DT_INT64, 2), "cpu_ref", &x, &y, &e), XF_ERR_INVALID);
    ck_assert_msg(strstr(e.msg, "(OneHotEncoder): element 1 is in none of its 3 categories"), "%s", e.msg);
    xf_tensor_release(x);
}
END_TEST

/* FeatureVectorizer: three inputs of three types side by side, the first
 * cut to 2 features, the second padded to 2, the third [N, 2, 2] read as
 * rows of 4 and cut to 3; rows that differ and a count of inputdimensions that does not
 * match the inputs refused by node. */
START_TEST(feature_vectorizer)
{
    static const int64_t d23[] = {2, 3}, d21[] = {2, 1}, d11[] = {1, 1}, d222[] = {2, 2, 2}, dims[] = {2, 2, 3},
                         two[] = {2, 2};
    for (int bad = 0; bad < 3; bad++) {
        Onnx__GraphProto *g = mk_graph("fv");
        PUSH(g->n_input, g->input, mk_vi("a", XF_DT_FLOAT, 2, d23, NULL));
        PUSH(g->n_input, g->input, mk_vi("b", XF_DT_INT64, 2, bad == 1 ? d11 : d21, NULL));
        PUSH(g->n_input, g->input, mk_vi("c", XF_DT_DOUBLE, 3, d222, NULL));
        Onnx__NodeProto *n = ml_node("FeatureVectorizer", (const char *[]){"a", "b", "c", NULL},
                                     (const char *[]){"Y", NULL});
        attr_ints(n, "inputdimensions", bad == 2 ? 2 : 3, bad == 2 ? two : dims);
        PUSH(g->n_node, g->node, n);
        PUSH(g->n_output, g->output, mk_vi("Y", XF_DT_FLOAT, -1, NULL, NULL));
        Onnx__ModelProto *mp = mk_model(g, 17);
        add_opset(mp, "ai.onnx.ml", 1);
        static const double c[] = {0, 0.25, 0.5, 0.75, 1, 1.25, 1.5, 1.75};
        xf_tensor *in[3] = {F32(DIMS(2, 3), 0, 1, 2, 3, 4, 5), bad == 1 ? I64(DIMS(1, 1), 7) : I64(DIMS(2, 1), 7, -8),
                            mk(XF_DT_DOUBLE, DIMS(2, 2, 2), c)};
        xf_tensor *y = NULL;
        xf_error e = {0};
        const char *backends[2];
        int nb = host_backends(backends);
        for (int b = 0; b < (bad ? 1 : nb); b++) {
            xf_status st = run_on(mp, backends[b], in, &y, &e);
            if (bad) {
                ck_assert_int_ne(st, XF_OK);
                ck_assert_msg(strstr(e.msg, bad == 1 ? "(FeatureVectorizer): input 1 has 1 rows, input 0 2"
                                                     : "(FeatureVectorizer): has 3 inputs and 2 inputdimensions"),
                              "%s", e.msg);
                continue;
            }
            ck_assert_msg(st == XF_OK, "%s", e.msg);
            EXPECT(y, XF_DT_FLOAT, DIMS(2, 7), 0, 1, 7, 0, 0, 0.25, 0.5, 3, 4, -8, 0, 1, 1.25, 1.5);
        }
        release_all(in, 3);
    }
}
END_TEST

/* ------------------------------------------------------------ refusals */

/* The session is refused, naming the node and what is wrong, where the
 * plan cannot run; a cycle and a feature past the row fail the run. */
START_TEST(bad_plans)
{
    static const struct {
        const char *what, *attr, *mode;
        int64_t value;
        xf_status st;
    } cases[] = {
        {"leaf 4 of tree 0 has no weight", "target_nodeids", NULL, 1, XF_ERR_INVALID},
        {"node 2 of tree 0 branches to node 7, which is not in the tree", "nodes_truenodeids", NULL, 7,
         XF_ERR_INVALID},
        {"node 0 of tree 0 has mode 'BRANCH_MEMBER'", NULL, "BRANCH_MEMBER", 0, XF_ERR_UNSUPPORTED},
        {"goes to target 3 of 1", "target_ids", NULL, 3, XF_ERR_INVALID},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        Onnx__NodeProto *n = regressor("SUM", 1, 0, NULL);
        if (cases[c].attr)
            set_int(n, cases[c].attr, 2, cases[c].value); /* node 2's branch, or leaf 4's weight */
        if (cases[c].mode)
            set_string(n, "nodes_modes", 0, cases[c].mode);
        xf_tensor *x = mk(XF_DT_FLOAT, DIMS(1, 2), (const float[]){0, 0}), *y = NULL;
        xf_error e = {0};
        ck_assert_int_eq(run_on(ml_model(n, 1, 2), "cpu_ref", &x, &y, &e), cases[c].st);
        ck_assert_msg(strstr(e.msg, "node 'ml' (TreeEnsembleRegressor): ") && strstr(e.msg, cases[c].what), "%s",
                      e.msg);
        xf_tensor_release(x);
    }
    /* node 0 and node 1 branch to each other (x -1 goes from 0 to 1) */
    static const int64_t two[] = {0, 1}, leaves[] = {1, 2}, zero[] = {0, 0};
    xf_tensor *x = mk(XF_DT_FLOAT, DIMS(1, 1), (const float[]){-1}), *y[2] = {NULL, NULL};
    xf_error e = {0};
    Onnx__NodeProto *n = classifier(2, two, 2, leaves, zero, (const float[]){0.3f, 0.8f});
    set_string(n, "nodes_modes", 1, "BRANCH_EQ");
    set_int(n, "nodes_truenodeids", 1, 0);
    set_int(n, "nodes_falsenodeids", 1, 0);
    ck_assert_int_eq(run_on(ml_model(n, 1, 1), "cpu_ref", &x, y, &e), XF_ERR_INVALID);
    ck_assert_msg(strstr(e.msg, "(TreeEnsembleClassifier): tree 0 holds a cycle"), "%s", e.msg);
    xf_tensor_release(x);
    /* a node reads feature 1 of rows of one feature */
    x = mk(XF_DT_FLOAT, DIMS(1, 1), (const float[]){0});
    ck_assert_int_eq(run_on(ml_model(regressor("SUM", 1, 0, NULL), 1, 1), "cpu_ref", &x, y, &e), XF_ERR_INVALID);
    ck_assert_msg(strstr(e.msg, "a node reads feature 1 of rows of 1 features"), "%s", e.msg);
    xf_tensor_release(x);
}
END_TEST

/* ------------------------------------------------------------ xflowc */

/* Scaler -> TreeEnsembleClassifier -> ZipMap with a symbolic batch:
 * xflowc checks the model on its outputs, the maps among them (not on
 * shapes only), and keeps the batch. */
START_TEST(xflowc_checks_outputs)
{
    const char *dir = xf_test_tmpdir("ml-xflowc");
    ck_assert_ptr_nonnull(dir);
    static const int64_t two[] = {0, 1}, leaves[] = {1, 2}, zero[] = {0, 0};
    Onnx__NodeProto *tree = classifier(2, two, 2, leaves, zero, (const float[]){0.3f, 0.8f});
    tree->input[0] = "Xs";
    Onnx__ModelProto *mp = ml_model(tree, -1, 1);
    Onnx__NodeProto *scale = ml_node("Scaler", (const char *[]){"X", NULL}, (const char *[]){"Xs", NULL});
    scale->name = "scale";
    attr_floats(scale, "offset", 1, (const float[]){0.5f});
    attr_floats(scale, "scale", 1, (const float[]){2});
    Onnx__NodeProto *zip = ml_node("ZipMap", (const char *[]){"S", NULL}, (const char *[]){"Z", NULL});
    zip->name = "zip";
    attr_ints(zip, "classlabels_int64s", 2, two);
    Onnx__GraphProto *g = mp->graph;
    g->node[1] = g->node[0];
    g->node[0] = scale;
    g->node[2] = zip;
    g->n_node = 3;
    PUSH(g->n_output, g->output, mk_vi("Z", XF_DT_UNDEFINED, -1, NULL, NULL));
    char in[4200], cmd[9000], *out = NULL;
    snprintf(in, sizeof in, "%s/rf.onnx", dir);
    write_model(mp, in);
    snprintf(cmd, sizeof cmd, "%s %s -o %s/out.onnx --check", xf_test_tool("xflowc"), in, dir);
    ck_assert_msg(xf_test_run(cmd, &out) == 0, "%s", out);
    ck_assert_msg(strstr(out, "check: output 'L'") && strstr(out, "check: output 'S'") &&
                      strstr(out, "check: output 'Z'"), "%s", out);
    ck_assert_msg(!strstr(out, "shapes only"), "%s", out);
    ck_assert_msg(strstr(out, "symbolic dims kept: 'X' dim 0 ('N')"), "%s", out);
    free(out);
    /* two inputs of unnamed batch dims, which a Concat ties: tried at
     * equal sizes only, and kept (nothing depends on which is which) */
    static const int64_t col[] = {-1, 1};
    g = mk_graph("two");
    PUSH(g->n_input, g->input, mk_vi("a", XF_DT_FLOAT, 2, col, NULL));
    PUSH(g->n_input, g->input, mk_vi("b", XF_DT_FLOAT, 2, col, NULL));
    Onnx__NodeProto *cat = mk_node("Concat", "cat", (const char *[]){"a", "b", NULL}, (const char *[]){"ab", NULL});
    attr_int(cat, "axis", 1);
    PUSH(g->n_node, g->node, cat);
    Onnx__NodeProto *sc = ml_node("Scaler", (const char *[]){"ab", NULL}, (const char *[]){"Y", NULL});
    attr_floats(sc, "offset", 1, (const float[]){1});
    attr_floats(sc, "scale", 1, (const float[]){2});
    PUSH(g->n_node, g->node, sc);
    PUSH(g->n_output, g->output, mk_vi("Y", XF_DT_FLOAT, 2, (const int64_t[]){-1, 2}, NULL));
    mp = mk_model(g, 17);
    add_opset(mp, "ai.onnx.ml", 3);
    snprintf(in, sizeof in, "%s/two.onnx", dir);
    write_model(mp, in);
    snprintf(cmd, sizeof cmd, "%s %s -o %s/two_out.onnx --check", xf_test_tool("xflowc"), in, dir);
    ck_assert_msg(xf_test_run(cmd, &out) == 0, "%s", out);
    ck_assert_msg(strstr(out, "symbolic dims kept: 'a' dim 0, 'b' dim 0"), "%s", out);
    free(out);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("ml_ops");
    TCase *tc = tcase_create("ops");
    tcase_add_checked_fixture(tc, NULL, free_allocs);
    tcase_add_test(tc, preprocessing);
    tcase_add_test(tc, array_feature_extractor);
    tcase_add_test(tc, linear_models);
    tcase_add_test(tc, tree_regressor);
    tcase_add_test(tc, tree_classifier);
    tcase_add_test(tc, tree_ensemble_opset5);
    tcase_add_test(tc, svm_regressor);
    tcase_add_test(tc, svm_classifier);
    tcase_add_test(tc, zip_map);
    tcase_add_test(tc, string_labels);
    tcase_add_test(tc, string_encoders);
    tcase_add_test(tc, feature_vectorizer);
    tcase_add_test(tc, bad_plans);
    tcase_add_test(tc, xflowc_checks_outputs);
    suite_add_tcase(s, tc);
    return xf_test_run_suite(s);
}
