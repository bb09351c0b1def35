/* ONNX-ML's TreeEnsembleRegressor and TreeEnsembleClassifier (opsets 1
 * and 3, thresholds and weights as floats or as tensors of doubles), and
 * TreeEnsemble (opset 5, read into the same plan: fill_v5), as ONNX
 * Runtime evaluates them: a tree's root is the first node listed of
 * each run of nodes with one tree id; a leaf's weights are those naming it,
 * in order of (tree, node, position); a regressor of one target adds each
 * tree's first leaf weight, of several each weight to its target, by
 * aggregate_function (SUM, AVERAGE, MIN, MAX) plus base_values; a
 * classifier sums, with ONNX Runtime's binary cases (weights for one class
 * only: the positive label where that score passes 0.5 -- or 0 where some
 * weight is negative -- and two scores written from one).  A node
 * compares one feature of the row with its threshold (BRANCH_LEQ, LT,
 * GTE, GT, EQ, NEQ); a NaN feature takes the true branch where
 * nodes_missing_value_tracks_true says so.  The plan is checked once: ids
 * that name no node, a node naming itself, a leaf without weights, a
 * target or class out of range are errors naming the node; a path that
 * runs longer than the node count (a cycle) is one when met. */
#include "ml_ops.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { MODE_LEQ, MODE_LT, MODE_GTE, MODE_GT, MODE_EQ, MODE_NEQ, MODE_MEMBER, MODE_LEAF };
enum { AGG_SUM, AGG_AVERAGE, AGG_MIN, AGG_MAX };

typedef struct tree_node {
    double value;  /* threshold; MEMBER: where its set starts in the members (a NaN ends it) */
    int64_t feature;
    int64_t yes, no; /* branches: node indices; a leaf: its first weight and their count */
    uint8_t mode;
    bool missing_true;
} tree_node;

typedef struct tree_weight {
    int64_t target;
    double value;
} tree_weight;

struct xf_ml_trees {
    bool classifier;
    int transform, aggregate;
    int64_t n_nodes, n_roots, n_targets, n_base, max_feature;
    tree_node *nodes;
    int64_t *roots;
    tree_weight *weights;
    double *base;
    xf_ml_labels labels; /* a classifier's (n_targets of them) */
    bool binary, all_positive;
    double *members;  /* TreeEnsemble's membership_values, a NaN after the last */
    bool v5;          /* TreeEnsemble (ai.onnx.ml 5): output of X's type */
};

typedef struct tree_key {
    int64_t tree, node, index;
} tree_key;

static int key_cmp(const void *pa, const void *pb)
{
    const tree_key *a = pa, *b = pb;
    if (a->tree != b->tree)
        return a->tree < b->tree ? -1 : 1;
    if (a->node != b->node)
        return a->node < b->node ? -1 : 1;
    return (a->index > b->index) - (a->index < b->index);
}

/* Index of node (tree, node) among the sorted keys, or -1. */
static int64_t find_node(const tree_key *keys, int64_t n, int64_t tree, int64_t node)
{
    tree_key k = {tree, node, -1};
    int64_t lo = 0, hi = n;
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        if (key_cmp(&keys[mid], &k) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n && keys[lo].tree == tree && keys[lo].node == node ? keys[lo].index : -1;
}

/* Real list a, or a##_as_tensor (doubles) when that is given. */
static const double *reals_or_tensor(const xf_node *n, const char *a, int64_t *count)
{
    char name[64];
    snprintf(name, sizeof name, "%s_as_tensor", a);
    const double *t = xf_ml_reals(n, name, count);
    return t ? t : xf_ml_reals(n, a, count);
}

static xf_status fill_nodes(xf_ml_trees *t, const xf_node *n, tree_key **keys_out, xf_error *err)
{
    static const char *const modes[] = {"BRANCH_LEQ", "BRANCH_LT", "BRANCH_GTE", "BRANCH_GT", "BRANCH_EQ",
                                        "BRANCH_NEQ", "BRANCH_MEMBER", "LEAF"};
    int64_t nn, c1, c2, c3, c4, c5, c6, cm = 0;
    const int64_t *tree = xf_ml_ints(n, "nodes_treeids", &nn), *id = xf_ml_ints(n, "nodes_nodeids", &c1);
    const int64_t *feat = xf_ml_ints(n, "nodes_featureids", &c2), *yes = xf_ml_ints(n, "nodes_truenodeids", &c3);
    const int64_t *no = xf_ml_ints(n, "nodes_falsenodeids", &c4);
    const int64_t *miss = xf_ml_ints(n, "nodes_missing_value_tracks_true", &c6);
    const double *val = reals_or_tensor(n, "nodes_values", &c5);
    const xf_opaque_strings *mode = xf_opaque_find_strings(n->opaque, "nodes_modes");
    cm = mode ? mode->n : 0;
    if (nn < 1 || c1 != nn || c2 != nn || c3 != nn || c4 != nn || c5 != nn || cm != nn || (c6 && c6 != nn))
        return xf_ml_fail(n, err, XF_ERR_INVALID, "its node lists (nodes_treeids, nodes_nodeids, nodes_featureids, "
                                                  "nodes_modes, nodes_values, nodes_truenodeids, nodes_falsenodeids) "
                                                  "are empty or of different lengths");
    t->n_nodes = nn;
    t->nodes = calloc((size_t)nn, sizeof *t->nodes);
    t->roots = calloc((size_t)nn, sizeof *t->roots);
    tree_key *keys = malloc(sizeof *keys * (size_t)nn);
    *keys_out = keys;
    if (!t->nodes || !t->roots || !keys)
        return xf_error_set(err, XF_ERR_NOMEM, "out of memory");
    for (int64_t i = 0; i < nn; i++) {
        tree_node *d = &t->nodes[i];
        int m = 0;
        while (m < 8 && strcmp(mode->v[i], modes[m]) != 0)
            m++;
        if (m == 8 || m == MODE_MEMBER) /* sets are TreeEnsemble's (opset 5) */
            return xf_ml_fail(n, err, XF_ERR_UNSUPPORTED, "node %lld of tree %lld has mode '%s' (xflow runs "
                              "BRANCH_LEQ, BRANCH_LT, BRANCH_GTE, BRANCH_GT, BRANCH_EQ, BRANCH_NEQ and LEAF)",
                              (long long)id[i], (long long)tree[i], mode->v[i]);
        *d = (tree_node){val[i], feat[i], 0, 0, (uint8_t)m, c6 && miss[i] == 1};
        if (m != MODE_LEAF && feat[i] < 0)
            return xf_ml_fail(n, err, XF_ERR_INVALID, "node %lld of tree %lld reads feature %lld", (long long)id[i],
                              (long long)tree[i], (long long)feat[i]);
        if (m != MODE_LEAF && feat[i] > t->max_feature)
            t->max_feature = feat[i];
        keys[i] = (tree_key){tree[i], id[i], i};
        if (i == 0 || tree[i] != tree[i - 1])
            t->roots[t->n_roots++] = i;
    }
    qsort(keys, (size_t)nn, sizeof *keys, key_cmp);
    for (int64_t i = 1; i < nn; i++)
        if (keys[i].tree == keys[i - 1].tree && keys[i].node == keys[i - 1].node)
            return xf_ml_fail(n, err, XF_ERR_INVALID, "node %lld of tree %lld is listed twice", (long long)keys[i].node,
                              (long long)keys[i].tree);
    for (int64_t i = 0; i < nn; i++) {
        tree_node *d = &t->nodes[i];
        if (d->mode == MODE_LEAF)
            continue;
        d->yes = find_node(keys, nn, tree[i], yes[i]);
        d->no = find_node(keys, nn, tree[i], no[i]);
        if (d->yes < 0 || d->no < 0 || d->yes == i || d->no == i)
            return xf_ml_fail(n, err, XF_ERR_INVALID, "node %lld of tree %lld branches to node %lld, which is %s",
                              (long long)id[i], (long long)tree[i],
                              (long long)(d->yes < 0 || d->yes == i ? yes[i] : no[i]),
                              d->yes == i || d->no == i ? "itself" : "not in the tree");
    }
    return XF_OK;
}

static xf_status fill_weights(xf_ml_trees *t, const xf_node *n, const tree_key *keys, xf_error *err)
{
    const char *p = t->classifier ? "class" : "target";
    char a_tree[32], a_node[32], a_id[32], a_w[32];
    snprintf(a_tree, sizeof a_tree, "%s_treeids", p);
    snprintf(a_node, sizeof a_node, "%s_nodeids", p);
    snprintf(a_id, sizeof a_id, "%s_ids", p);
    snprintf(a_w, sizeof a_w, "%s_weights", p);
    int64_t nw, c1, c2, c3;
    const int64_t *tree = xf_ml_ints(n, a_tree, &nw), *node = xf_ml_ints(n, a_node, &c1);
    const int64_t *target = xf_ml_ints(n, a_id, &c2);
    const double *w = reals_or_tensor(n, a_w, &c3);
    if (c1 != nw || c2 != nw || c3 != nw)
        return xf_ml_fail(n, err, XF_ERR_INVALID, "its weight lists (%s, %s, %s, %s) are of different lengths",
                          a_tree, a_node, a_id, a_w);
    tree_key *order = malloc(sizeof *order * (size_t)(nw + 1));
    t->weights = malloc(sizeof *t->weights * (size_t)(nw + 1));
    if (!order || !t->weights) {
        free(order);
        return xf_error_set(err, XF_ERR_NOMEM, "out of memory");
    }
    int64_t classes_seen = 0, first_class = 0;
    t->all_positive = true;
    for (int64_t i = 0; i < nw; i++) {
        order[i] = (tree_key){tree[i], node[i], i};
        t->all_positive &= !(w[i] < 0);
        if (classes_seen == 0 || (classes_seen == 1 && target[i] != first_class))
            first_class = classes_seen++ == 0 ? target[i] : first_class;
    }
    t->binary = t->classifier && t->n_targets == 2 && classes_seen == 1;
    qsort(order, (size_t)nw, sizeof *order, key_cmp);
    xf_status st = XF_OK;
    int64_t used = 0;
    for (int64_t k = 0; k < nw && st == XF_OK; k++) {
        int64_t i = order[k].index, leaf = find_node(keys, t->n_nodes, tree[i], node[i]);
        if (leaf < 0)
            st = xf_ml_fail(n, err, XF_ERR_INVALID, "a weight names node %lld of tree %lld, which is not there",
                            (long long)node[i], (long long)tree[i]);
        else if (target[i] < 0 || target[i] >= t->n_targets)
            st = xf_ml_fail(n, err, XF_ERR_INVALID, "a weight of node %lld of tree %lld goes to %s %lld of %lld",
                            (long long)node[i], (long long)tree[i], p, (long long)target[i], (long long)t->n_targets);
        if (st != XF_OK || t->nodes[leaf].mode != MODE_LEAF)
            continue; /* a weight on a branch is ignored, as ONNX Runtime does */
        if (t->nodes[leaf].no++ == 0)
            t->nodes[leaf].yes = used;
        t->weights[used++] = (tree_weight){target[i], w[i]};
    }
    free(order);
    const int64_t *ids = xf_ml_ints(n, "nodes_nodeids", &c1), *trees = xf_ml_ints(n, "nodes_treeids", &c1);
    for (int64_t i = 0; i < t->n_nodes && st == XF_OK; i++)
        if (t->nodes[i].mode == MODE_LEAF && t->nodes[i].no == 0)
            st = xf_ml_fail(n, err, XF_ERR_INVALID, "leaf %lld of tree %lld has no weight", (long long)ids[i],
                            (long long)trees[i]);
    return st;
}

/* TreeEnsemble (ai.onnx.ml 5): nodes given by index, their branches to
 * nodes or (nodes_trueleafs, nodes_falseleafs) to leaves of one weight
 * each, the trees' roots listed (a root whose branches both name one leaf
 * is that leaf), modes as integers (6: the feature is in the node's set,
 * the next run of membership_values up to a NaN).  The leaves join the
 * nodes as LEAF entries after them. */
static xf_status fill_v5(xf_ml_trees *t, const xf_node *n, xf_error *err)
{
    int64_t nn, c1, c2, c3, c4, c5, c6, nl, cw, nr, nm, cm;
    const int64_t *feat = xf_ml_ints(n, "nodes_featureids", &nn), *mode = xf_ml_ints(n, "nodes_modes", &c1);
    const int64_t *yes = xf_ml_ints(n, "nodes_truenodeids", &c2), *no = xf_ml_ints(n, "nodes_falsenodeids", &c3);
    const int64_t *yes_leaf = xf_ml_ints(n, "nodes_trueleafs", &c4), *no_leaf = xf_ml_ints(n, "nodes_falseleafs", &c5);
    const int64_t *miss = xf_ml_ints(n, "nodes_missing_value_tracks_true", &cm);
    const int64_t *target = xf_ml_ints(n, "leaf_targetids", &nl), *roots = xf_ml_ints(n, "tree_roots", &nr);
    const double *split = xf_ml_reals(n, "nodes_splits", &c6), *w = xf_ml_reals(n, "leaf_weights", &cw);
    const double *members = xf_ml_reals(n, "membership_values", &nm);
    if (nn < 1 || c1 != nn || c2 != nn || c3 != nn || c4 != nn || c5 != nn || c6 != nn || (cm && cm != nn) ||
        nl < 1 || cw != nl || nr < 1)
        return xf_ml_fail(n, err, XF_ERR_INVALID, "its node lists (nodes_featureids, nodes_modes, nodes_splits, "
                          "nodes_truenodeids, nodes_falsenodeids, nodes_trueleafs, nodes_falseleafs), leaf lists "
                          "(leaf_targetids, leaf_weights) or tree_roots are empty or of different lengths");
    t->n_nodes = nn + nl;
    t->nodes = calloc((size_t)t->n_nodes, sizeof *t->nodes);
    t->roots = calloc((size_t)nr, sizeof *t->roots);
    t->weights = calloc((size_t)nl, sizeof *t->weights);
    t->members = malloc(sizeof *t->members * (size_t)(nm + 1));
    if (!t->nodes || !t->roots || !t->weights || !t->members)
        return xf_error_set(err, XF_ERR_NOMEM, "out of memory");
    if (nm)
        memcpy(t->members, members, sizeof *members * (size_t)nm);
    t->members[nm] = NAN;
    int64_t set = 0;
    for (int64_t i = 0; i < nn; i++) {
        int64_t y = yes_leaf[i] ? nn + yes[i] : yes[i], f = no_leaf[i] ? nn + no[i] : no[i];
        bool y_ok = yes_leaf[i] ? yes[i] >= 0 && yes[i] < nl : yes[i] >= 0 && yes[i] < nn && yes[i] != i;
        bool f_ok = no_leaf[i] ? no[i] >= 0 && no[i] < nl : no[i] >= 0 && no[i] < nn && no[i] != i;
        if (mode[i] < 0 || mode[i] > MODE_MEMBER || feat[i] < 0 || !y_ok || !f_ok)
            return xf_ml_fail(n, err, XF_ERR_INVALID, "node %lld has mode %lld, feature %lld or a branch (%s %lld, %s "
                              "%lld) that names nothing", (long long)i, (long long)mode[i], (long long)feat[i],
                              yes_leaf[i] ? "leaf" : "node", (long long)yes[i], no_leaf[i] ? "leaf" : "node",
                              (long long)no[i]);
        t->nodes[i] = (tree_node){split[i], feat[i], y, f, (uint8_t)mode[i], cm && miss[i] == 1};
        if (mode[i] == MODE_MEMBER) { /* its set: the next values up to a NaN */
            if (set >= nm)
                return xf_ml_fail(n, err, XF_ERR_INVALID, "membership_values holds fewer sets than the nodes of "
                                  "mode 6 (set membership)");
            t->nodes[i].value = (double)set;
            while (set < nm && !isnan(members[set]))
                set++;
            set++;
        }
        bool degenerate = yes_leaf[i] && no_leaf[i] && yes[i] == no[i]; /* a leaf: its feature never read */
        t->max_feature = feat[i] > t->max_feature && !degenerate ? feat[i] : t->max_feature;
    }
    for (int64_t j = 0; j < nl; j++) {
        if (target[j] < 0 || target[j] >= t->n_targets)
            return xf_ml_fail(n, err, XF_ERR_INVALID, "leaf %lld goes to target %lld of %lld", (long long)j,
                              (long long)target[j], (long long)t->n_targets);
        t->nodes[nn + j] = (tree_node){0, 0, j, 1, MODE_LEAF, false};
        t->weights[j] = (tree_weight){target[j], w[j]};
    }
    for (int64_t r = 0; r < nr; r++) {
        int64_t i = roots[r];
        if (i < 0 || i >= nn)
            return xf_ml_fail(n, err, XF_ERR_INVALID, "tree %lld's root %lld is not a node", (long long)r,
                              (long long)i);
        bool leaf = yes_leaf[i] && no_leaf[i] && yes[i] == no[i];
        t->roots[t->n_roots++] = leaf ? nn + yes[i] : i;
    }
    return XF_OK;
}

xf_status xf_ml_trees_create(const xf_node *n, bool classifier, xf_ml_trees **out, xf_error *err)
{
    *out = NULL;
    xf_ml_trees *t = calloc(1, sizeof *t);
    if (!t)
        return xf_error_set(err, XF_ERR_NOMEM, "out of memory");
    t->classifier = classifier;
    xf_status st = xf_ml_transform(n, &t->transform, err);
    const char *agg = xf_ml_string(n, "aggregate_function", "SUM");
    static const char *const aggs[] = {"SUM", "AVERAGE", "MIN", "MAX"};
    while (t->aggregate < 4 && strcmp(agg, aggs[t->aggregate]) != 0)
        t->aggregate++;
    if (st == XF_OK && t->aggregate == 4)
        st = xf_ml_fail(n, err, XF_ERR_INVALID, "aggregate_function '%s' is none of SUM, AVERAGE, MIN, MAX", agg);
    int64_t count;
    if (classifier) {
        t->labels = xf_ml_labels_of(n, "classlabels_int64s");
        t->n_targets = t->labels.n;
        t->aggregate = AGG_SUM; /* a classifier sums, whatever it says */
    } else {
        const int64_t *nt = xf_ml_ints(n, "n_targets", &count);
        t->n_targets = count == 1 ? nt[0] : 1;
    }
    if (st == XF_OK && (classifier ? t->n_targets < 2 : t->n_targets < 1 || t->n_targets > (1 << 24)))
        st = xf_ml_fail(n, err, XF_ERR_INVALID, classifier ? "has %lld class labels; it needs two or more"
                                                           : "has %lld targets (1 to 2^24)", (long long)t->n_targets);
    const double *base = reals_or_tensor(n, "base_values", &t->n_base);
    if (st == XF_OK && t->n_base > 0 && !(t->base = malloc(sizeof *t->base * (size_t)t->n_base)))
        st = xf_error_set(err, XF_ERR_NOMEM, "out of memory");
    if (t->base)
        memcpy(t->base, base, sizeof *t->base * (size_t)t->n_base);
    t->v5 = strcmp(n->opaque->op_type, "TreeEnsemble") == 0;
    if (t->v5) { /* its enums are integers, in another order */
        static const int aggs5[] = {AGG_AVERAGE, AGG_SUM, AGG_MIN, AGG_MAX};
        static const int transforms5[] = {ML_NONE, ML_SOFTMAX, ML_LOGISTIC, ML_SOFTMAX_ZERO, ML_PROBIT};
        int64_t ca, ct;
        const int64_t *a = xf_ml_ints(n, "aggregate_function", &ca), *tr = xf_ml_ints(n, "post_transform", &ct);
        if (st == XF_OK && ((ca == 1 && (a[0] < 0 || a[0] > 3)) || (ct == 1 && (tr[0] < 0 || tr[0] > 4))))
            st = xf_ml_fail(n, err, XF_ERR_INVALID, "aggregate_function or post_transform is out of range");
        t->aggregate = ca == 1 && st == XF_OK ? aggs5[a[0]] : AGG_SUM;
        t->transform = ct == 1 && st == XF_OK ? transforms5[tr[0]] : ML_NONE;
    }
    tree_key *keys = NULL;
    if (st == XF_OK && t->v5)
        st = fill_v5(t, n, err);
    else if (st == XF_OK)
        st = fill_nodes(t, n, &keys, err);
    if (st == XF_OK && !t->v5)
        st = fill_weights(t, n, keys, err);
    free(keys);
    if (st != XF_OK) {
        xf_ml_trees_free(t);
        return st;
    }
    *out = t;
    return XF_OK;
}

/* The leaf row x reaches from root r; -1 on a path longer than the node
 * count. */
static int64_t descend(const xf_ml_trees *t, int64_t r, const double *x)
{
    for (int64_t steps = 0; steps <= t->n_nodes; steps++) {
        const tree_node *d = &t->nodes[r];
        if (d->mode == MODE_LEAF)
            return r;
        double v = x[d->feature], th = d->value;
        bool go = d->missing_true && isnan(v);
        switch (d->mode) {
        case MODE_LEQ: go |= v <= th; break;
        case MODE_LT: go |= v < th; break;
        case MODE_GTE: go |= v >= th; break;
        case MODE_GT: go |= v > th; break;
        case MODE_EQ: go |= v == th; break;
        case MODE_MEMBER:
            for (const double *m = t->members + (int64_t)th; !go && !isnan(*m); m++)
                go = v == *m;
            break;
        default: go |= v != th; break;
        }
        r = go ? d->yes : d->no;
    }
    return -1;
}

/* The classifier's two classes, as ONNX Runtime finishes them: which
 * label (xf_ml_set_label), the scores' count and how the one score
 * becomes two (xf_ml_write_scores). */
static int64_t binary_label(const xf_ml_trees *t, double *s, const bool *has, int64_t *count, int *add_second)
{
    *count = 2;
    *add_second = -1;
    if (t->n_base == 2) {
        if (has[1]) { /* base_values[0] unused, as there */
            s[1] = t->base[1] + s[0];
            s[0] = -s[1];
        } else {
            s[1] += t->base[1];
            s[0] += t->base[0];
        }
    } else if (t->n_base == 1) {
        s[0] += t->base[0];
        *count = has[1] ? 2 : 1;
    } else if (t->n_base == 0) {
        *add_second = 3;
        *count = has[1] ? 2 : 1;
    }
    bool pos_has = has[1] && *count == 2 ? true : has[0];
    double pos = has[1] && *count == 2 ? s[1] : (pos_has ? s[0] : 0.0);
    if (!t->binary) /* 1 or 0 itself; string labels are looked up by it */
        return t->labels.strings ? pos > 0 : pos > 0 ? ML_LABEL_1 : ML_LABEL_0;
    bool positive = t->all_positive ? pos > 0.5 : pos > 0;
    *add_second = (t->all_positive ? 0 : 2) + (positive ? 0 : 1);
    return positive ? 1 : 0;
}

xf_status xf_ml_trees_run(const xf_ml_trees *t, const xf_node *n, const xf_tensor *x, xf_tensor **out,
                          xf_error *err)
{
    int64_t rows, cols, nt = t->n_targets;
    double *v;
    xf_status st = xf_ml_rows(n, x, &v, &rows, &cols, err);
    if (st != XF_OK)
        return st;
    if (t->max_feature >= cols)
        st = xf_ml_fail(n, err, XF_ERR_INVALID, "a node reads feature %lld of rows of %lld features",
                        (long long)t->max_feature, (long long)cols);
    xf_shape zs = xf_shape_make(2, (const int64_t[]){rows, nt});
    bool dbl = t->v5 && x->dtype == XF_DT_DOUBLE; /* TreeEnsemble gives X's type */
    xf_tensor *z = st == XF_OK ? xf_tensor_create(dbl ? XF_DT_DOUBLE : XF_DT_FLOAT, &zs) : NULL;
    xf_tensor *y = st == XF_OK && t->classifier ? xf_ml_label_tensor(&t->labels, rows, err) : NULL;
    double *s = malloc(sizeof *s * (size_t)(nt + 1));
    bool *has = malloc(sizeof *has * (size_t)(nt + 1));
    float *f = malloc(sizeof *f * (size_t)(nt + 1));
    if (st == XF_OK && (!z || (t->classifier && !y) || !s || !has || !f))
        st = xf_error_set(err, XF_ERR_NOMEM, "out of memory");
    bool one = !t->classifier && nt == 1;
    double origin = t->n_base == 1 ? t->base[0] : 0.0;
    bool extreme = t->aggregate == AGG_MIN || t->aggregate == AGG_MAX;
    for (int64_t r = 0; st == XF_OK && r < rows; r++) {
        const double *row = v + r * cols;
        for (int64_t k = 0; k < nt; k++)
            s[k] = 0, has[k] = false;
        for (int64_t k = 0; k < t->n_roots && st == XF_OK; k++) {
            int64_t leaf = descend(t, t->roots[k], row);
            if (leaf < 0) {
                st = xf_ml_fail(n, err, XF_ERR_INVALID, "tree %lld holds a cycle", (long long)k);
                break;
            }
            const tree_node *d = &t->nodes[leaf];
            for (int64_t j = d->yes; j < d->yes + (one ? 1 : d->no); j++) {
                int64_t c = one ? 0 : t->weights[j].target;
                double w = t->weights[j].value;
                if (!extreme)
                    s[c] += w;
                else if (!has[c] || (t->aggregate == AGG_MIN ? w < s[c] : w > s[c]))
                    s[c] = w;
                has[c] = true;
            }
        }
        if (st != XF_OK)
            break;
        int64_t count = nt;
        int add_second = -1;
        if (one) {
            s[0] = t->aggregate == AGG_AVERAGE ? s[0] / (double)t->n_roots + origin
                   : extreme && !has[0]        ? origin
                                               : s[0] + origin;
        } else if (!t->classifier) {
            for (int64_t k = 0; k < nt; k++) {
                double b = t->n_base == nt ? t->base[k] : 0.0;
                s[k] = t->aggregate == AGG_AVERAGE ? s[k] / (double)t->n_roots + b
                                                   : (has[k] || !extreme ? s[k] : 0) + b;
            }
        } else if (nt > 2) {
            int64_t best = -1;
            for (int64_t k = 0; k < nt; k++) {
                if (k < t->n_base)
                    s[k] = has[k] ? s[k] + t->base[k] : t->base[k], has[k] = true;
                if (has[k] && (best < 0 || s[k] > s[best]))
                    best = k;
            }
            if (!xf_ml_set_label(y, r, &t->labels, best < 0 ? 0 : best))
                st = xf_error_set(err, XF_ERR_NOMEM, "out of memory");
        } else if (!xf_ml_set_label(y, r, &t->labels, binary_label(t, s, has, &count, &add_second))) {
            st = xf_error_set(err, XF_ERR_NOMEM, "out of memory");
        }
        for (int64_t k = 0; k < count; k++)
            f[k] = (float)s[k];
        if (dbl && t->transform == ML_NONE)
            memcpy((double *)z->data + r * nt, s, sizeof *s * (size_t)count);
        else if (dbl)
            for (int64_t k = 0, w = xf_ml_write_scores(f, count, t->transform, add_second, f); k < w; k++)
                ((double *)z->data)[r * nt + k] = f[k];
        else
            xf_ml_write_scores(f, count, t->transform, add_second, (float *)z->data + r * nt);
    }
    free(v);
    free(s);
    free(has);
    free(f);
    if (st != XF_OK) {
        xf_tensor_release(z);
        xf_tensor_release(y);
        return st;
    }
    out[0] = t->classifier ? y : z;
    if (t->classifier)
        out[1] = z;
    return XF_OK;
}

void xf_ml_trees_free(xf_ml_trees *t)
{
    if (!t)
        return;
    free(t->nodes);
    free(t->roots);
    free(t->weights);
    free(t->base);
    free(t->members);
    free(t);
}
