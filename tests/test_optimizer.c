/* Optimizer: matching and rewriting.  Every rule family is applied to a
 * small graph and the result checked numerically against the original on
 * cpu_ref; the external-use rule, attribute generalization, constraints,
 * opaque nodes and MaxPool's two-output form are checked on graphs built
 * for them. */
#include "opt_builders.h"
#include "xf_test_util.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* x -> Conv(w[, b]) -> act -> output */
static xf_graph *conv_act_graph(bool bias, xf_op act, int64_t k, int64_t stride)
{
    xf_graph *g = xf_graph_create("g");
    int x = input(g, "x", XF_DT_FLOAT, SHAPE(1, 3, 8, 8));
    int w = random_weight(g, SHAPE(6, 3, k, k), 11);
    int c = bias ? NODE(g, XF_OP_CONV, x, w, random_weight(g, SHAPE(6), 12)) : NODE(g, XF_OP_CONV, x, w);
    conv_attrs(g, c, k);
    attrs(g, c)->strides[0] = attrs(g, c)->strides[1] = stride;
    int y = xf_graph_add_value(g, "y", XF_DT_UNDEFINED, NULL);
    int c_out = out0(g, c);
    xf_graph_add_node(g, act, "act", 1, &c_out, 1, &y);
    xf_graph_add_output(g, y);
    infer_ok(g, OPSET);
    return g;
}

static xf_rule_set *builtin_set(xf_rule ***rules, int *n)
{
    xf_error e = {0};
    ck_assert_msg(xf_builtin_rules(rules, n, &e) == XF_OK, "%s", e.msg);
    ck_assert_int_gt(*n, 0);
    return rule_set_of(*rules, *n);
}

static void free_rules(xf_rule **rules, int n)
{
    for (int i = 0; i < n; i++)
        xf_rule_free(rules[i]);
    free(rules);
}

START_TEST(fuse_activation_into_conv)
{
    xf_rule **rules;
    int n;
    xf_rule_set *rs = builtin_set(&rules, &n);
    const xf_op acts[] = {XF_OP_RELU, XF_OP_SIGMOID, XF_OP_TANH};
    const xf_activation fused[] = {XF_ACT_RELU, XF_ACT_SIGMOID, XF_ACT_TANH};
    for (int a = 0; a < 3; a++)
        for (int bias = 0; bias < 2; bias++)
            for (int64_t k = 1; k <= 3; k += 2) {
                /* Kernel, padding and stride differ from the rule's own
                 * graphs: the generalized fields carry them over. */
                xf_graph *g = conv_act_graph(bias, acts[a], k, k == 3 ? 2 : 1);
                match_list l = matches_of(rs, -1, g);
                ck_assert_int_eq(l.n, 1);
                xf_graph *h = apply_ok(rs, g, &l.m[0]);
                ck_assert_int_eq(h->n_nodes, 1);
                ck_assert_int_eq(h->nodes[0].op, XF_OP_CONV);
                ck_assert_int_eq(h->nodes[0].attrs.activation, fused[a]);
                ck_assert_int_eq(h->nodes[0].attrs.strides[0], k == 3 ? 2 : 1);
                ck_assert_int_eq(h->nodes[0].attrs.pads[3], k / 2);
                /* The graph output keeps its name. */
                ck_assert_str_eq(h->values[h->outputs[0]].name, "y");
                expect_same_function(g, h);
                ck_assert_int_eq(matches_of(rs, -1, h).n, 0);
                xf_graph_free(h);
                xf_graph_free(g);
            }
    xf_rule_set_free(rs);
    free_rules(rules, n);
}
END_TEST

/* x feeds two 1x1 convs with different output channels. */
static xf_graph *two_convs_graph(bool extra_use)
{
    xf_graph *g = xf_graph_create("g");
    int x = input(g, "x", XF_DT_FLOAT, SHAPE(1, 8, 6, 6));
    int c1 = conv(g, x, random_weight(g, SHAPE(5, 8, 1, 1), 21), 1);
    int c2 = conv(g, x, random_weight(g, SHAPE(7, 8, 1, 1), 22), 1);
    xf_graph_add_output(g, out0(g, NODE(g, XF_OP_RELU, out0(g, c1))));
    xf_graph_add_output(g, out0(g, NODE(g, XF_OP_SIGMOID, out0(g, c2))));
    if (extra_use)
        xf_graph_add_output(g, out0(g, NODE(g, XF_OP_TANH, out0(g, c1))));
    infer_ok(g, OPSET);
    return g;
}

START_TEST(merge_convs_with_new_weights)
{
    xf_rule *rules[] = {rule_merge_convs()};
    xf_rule_set *rs = rule_set_of(rules, 1);
    xf_graph *g = two_convs_graph(false);
    match_list l = matches_of(rs, 0, g);
    /* Both orders of the two convs embed the pattern. */
    ck_assert_int_eq(l.n, 2);
    xf_graph *h = apply_ok(rs, g, &l.m[0]);
    ck_assert_int_eq(count_op(h, XF_OP_CONV), 1);
    ck_assert_int_eq(count_op(h, XF_OP_SPLIT), 1);
    /* The concatenated kernel is a node over constants until folding. */
    ck_assert_int_eq(count_op(h, XF_OP_CONCAT), 1);
    for (int i = 0; i < h->n_nodes; i++)
        if (h->nodes[i].op == XF_OP_SPLIT) {
            ck_assert_int_eq(h->nodes[i].attrs.split[0], 5);
            ck_assert_int_eq(h->nodes[i].attrs.split[1], 7);
        }
    expect_same_function(g, h);
    xf_canon_stats st = {0};
    xf_error e = {0};
    ck_assert_msg(xf_canonicalize(h, OPSET, xf_runtime_eval_node, &st, &e) == XF_OK, "%s", e.msg);
    ck_assert_int_eq(st.folded_constants, 1);
    ck_assert_int_eq(count_op(h, XF_OP_CONCAT), 0);
    expect_same_function(g, h);
    xf_graph_free(h);
    xf_graph_free(g);
    xf_rule_set_free(rs);
    xf_rule_free(rules[0]);
}
END_TEST

START_TEST(factor_and_generalized_axis)
{
    xf_rule *rules[] = {rule_factor_mul(), rule_relu_concat()};
    xf_rule_set *rs = rule_set_of(rules, 2);
    /* Shapes other than the rule's own 2x3. */
    xf_graph *g = xf_graph_create("g");
    int a = input(g, "a", XF_DT_FLOAT, SHAPE(4, 5)), b = input(g, "b", XF_DT_FLOAT, SHAPE(4, 5)),
        c = input(g, "c", XF_DT_FLOAT, SHAPE(4, 5));
    int s = NODE(g, XF_OP_ADD, out0(g, NODE(g, XF_OP_MUL, a, c)), out0(g, NODE(g, XF_OP_MUL, b, c)));
    xf_graph_add_output(g, out0(g, s));
    infer_ok(g, OPSET);
    match_list l = matches_of(rs, 0, g);
    ck_assert_int_eq(l.n, 1);
    xf_graph *h = apply_ok(rs, g, &l.m[0]);
    ck_assert_int_eq(h->n_nodes, 2);
    expect_same_function(g, h);
    xf_graph_free(h);
    xf_graph_free(g);

    /* The concat axis is bound by the pattern and carried to the replacement. */
    for (int64_t axis = 0; axis < 2; axis++) {
        g = xf_graph_create("g");
        a = input(g, "a", XF_DT_FLOAT, SHAPE(3, 4));
        b = input(g, "b", XF_DT_FLOAT, SHAPE(3, 4));
        int cat = NODE(g, XF_OP_CONCAT, out0(g, NODE(g, XF_OP_RELU, a)), out0(g, NODE(g, XF_OP_RELU, b)));
        attrs(g, cat)->axis = axis;
        xf_graph_add_output(g, out0(g, cat));
        infer_ok(g, OPSET);
        l = matches_of(rs, 1, g);
        ck_assert_int_eq(l.n, 1);
        ck_assert_int_eq(l.m[0].param[0], axis);
        h = apply_ok(rs, g, &l.m[0]);
        ck_assert_int_eq(h->n_nodes, 2);
        expect_same_function(g, h);
        xf_graph_free(h);
        xf_graph_free(g);
    }

    /* A rule is proved for inputs of its own rank: the 2-D rule does not
     * match 3-D tensors. */
    g = xf_graph_create("g");
    a = input(g, "a", XF_DT_FLOAT, SHAPE(2, 3, 4));
    b = input(g, "b", XF_DT_FLOAT, SHAPE(2, 3, 4));
    int cat3 = NODE(g, XF_OP_CONCAT, out0(g, NODE(g, XF_OP_RELU, a)), out0(g, NODE(g, XF_OP_RELU, b)));
    xf_graph_add_output(g, out0(g, cat3));
    infer_ok(g, OPSET);
    l = matches_of(rs, 1, g);
    ck_assert_int_eq(l.n, 0);
    xf_graph_free(g);

    /* Nor does a law of equal shapes match a broadcasting Mul: factoring
     * a*c + b*c is only proved where c has a's shape. */
    g = xf_graph_create("g");
    a = input(g, "a", XF_DT_FLOAT, SHAPE(4, 5));
    b = input(g, "b", XF_DT_FLOAT, SHAPE(4, 5));
    c = input(g, "c", XF_DT_FLOAT, SHAPE(1, 5));
    s = NODE(g, XF_OP_ADD, out0(g, NODE(g, XF_OP_MUL, a, c)), out0(g, NODE(g, XF_OP_MUL, b, c)));
    xf_graph_add_output(g, out0(g, s));
    infer_ok(g, OPSET);
    l = matches_of(rs, 0, g);
    ck_assert_int_eq(l.n, 0);
    xf_graph_free(g);
    xf_rule_set_free(rs);
    xf_rule_free(rules[0]);
    xf_rule_free(rules[1]);
}
END_TEST

START_TEST(external_use_blocks_rewrite)
{
    xf_rule **rules;
    int n;
    xf_rule_set *rs = builtin_set(&rules, &n);
    /* conv1's output also feeds a Tanh: fusing its Relu would lose it;
     * conv2 + Sigmoid still fuses. */
    xf_graph *g = two_convs_graph(true);
    match_list l = matches_of(rs, -1, g);
    ck_assert_int_eq(l.n, 1);
    ck_assert_ptr_nonnull(strstr(xf_rule_set_rule(rs, l.m[0].rule)->name, "sigmoid"));
    xf_graph_free(g);
    /* Without the extra use both fuse. */
    g = two_convs_graph(false);
    ck_assert_int_eq(matches_of(rs, -1, g).n, 2);
    xf_graph_free(g);
    xf_rule_set_free(rs);
    free_rules(rules, n);

    /* Merging is fine with the extra use: conv1's output is a rule output. */
    xf_rule *merge[] = {rule_merge_convs()};
    rs = rule_set_of(merge, 1);
    g = two_convs_graph(true);
    l = matches_of(rs, 0, g);
    ck_assert_int_eq(l.n, 2);
    xf_graph *h = apply_ok(rs, g, &l.m[0]);
    expect_same_function(g, h);
    xf_graph_free(h);
    xf_graph_free(g);
    xf_rule_set_free(rs);
    xf_rule_free(merge[0]);

    /* An intermediate of factor-mul (a*c) used elsewhere is not a rule output. */
    xf_rule *factor[] = {rule_factor_mul()};
    rs = rule_set_of(factor, 1);
    g = xf_graph_create("g");
    int a = input(g, "a", XF_DT_FLOAT, SHAPE(2, 3)), b = input(g, "b", XF_DT_FLOAT, SHAPE(2, 3)),
        c = input(g, "c", XF_DT_FLOAT, SHAPE(2, 3));
    int m1 = NODE(g, XF_OP_MUL, a, c);
    xf_graph_add_output(g, out0(g, NODE(g, XF_OP_ADD, out0(g, m1), out0(g, NODE(g, XF_OP_MUL, b, c)))));
    xf_graph_add_output(g, out0(g, m1));
    infer_ok(g, OPSET);
    ck_assert_int_eq(matches_of(rs, 0, g).n, 0);
    xf_graph_free(g);
    xf_rule_set_free(rs);
    xf_rule_free(factor[0]);
}
END_TEST

START_TEST(attributes_and_constraints)
{
    /* The merge rule fixes 1x1 kernels: 3x3 convs do not match. */
    xf_rule *rules[] = {rule_merge_convs(), rule_merge_convs()};
    /* The second copy applies only to inputs with at most 4 channels. */
    free(rules[1]->name);
    rules[1]->name = strdup("merge_convs_narrow");
    rule_constrain(rules[1], XF_CMP_LE, xf_expr_dim(0, 1), xf_expr_const(4));
    xf_rule_set *rs = rule_set_of(rules, 2);
    xf_graph *g = xf_graph_create("g");
    int x = input(g, "x", XF_DT_FLOAT, SHAPE(1, 8, 6, 6));
    xf_graph_add_output(g, out0(g, conv(g, x, random_weight(g, SHAPE(2, 8, 3, 3), 1), 3)));
    xf_graph_add_output(g, out0(g, conv(g, x, random_weight(g, SHAPE(2, 8, 3, 3), 2), 3)));
    infer_ok(g, OPSET);
    ck_assert_int_eq(matches_of(rs, -1, g).n, 0);
    xf_graph_free(g);
    g = two_convs_graph(false); /* 8 channels */
    ck_assert_int_eq(matches_of(rs, 0, g).n, 2);
    ck_assert_int_eq(matches_of(rs, 1, g).n, 0);
    xf_graph_free(g);
    xf_rule_set_free(rs);
    xf_rule_free(rules[0]);
    xf_rule_free(rules[1]);
}
END_TEST

START_TEST(opaque_nodes_stay_outside)
{
    xf_rule **rules;
    int n;
    xf_rule_set *rs = builtin_set(&rules, &n);
    /* Conv -> Opaque -> Relu: nothing to fuse across the opaque node. */
    xf_graph *g = xf_graph_create("g");
    int x = input(g, "x", XF_DT_FLOAT, SHAPE(1, 3, 8, 8));
    int c = conv(g, x, random_weight(g, SHAPE(4, 3, 3, 3), 3), 3);
    int mid = xf_graph_add_value(g, "mid", XF_DT_FLOAT, &(xf_shape){4, {1, 4, 8, 8}});
    int c_out = out0(g, c);
    int op = xf_graph_add_node(g, XF_OP_OPAQUE, "custom", 1, &c_out, 1, &mid);
    g->nodes[op].opaque = xf_opaque_create("MyOp", "my.domain", "\x01", 1);
    int r = NODE(g, XF_OP_RELU, mid);
    xf_graph_add_output(g, out0(g, r));
    infer_ok(g, OPSET);
    ck_assert_int_eq(matches_of(rs, -1, g).n, 0);
    xf_graph_free(g);

    /* Opaque -> Conv -> Relu -> Opaque: the fusion happens between them and
     * both opaque nodes are kept with their payloads. */
    g = xf_graph_create("g");
    x = input(g, "x", XF_DT_FLOAT, SHAPE(1, 3, 8, 8));
    int pre = xf_graph_add_value(g, "pre", XF_DT_FLOAT, &(xf_shape){4, {1, 3, 8, 8}});
    op = xf_graph_add_node(g, XF_OP_OPAQUE, "before", 1, &x, 1, &pre);
    g->nodes[op].opaque = xf_opaque_create("MyOp", "my.domain", "\x02", 1);
    c = conv(g, pre, random_weight(g, SHAPE(4, 3, 3, 3), 4), 3);
    r = NODE(g, XF_OP_RELU, out0(g, c));
    int post = xf_graph_add_value(g, "post", XF_DT_FLOAT, &(xf_shape){4, {1, 4, 8, 8}});
    int r_out = out0(g, r);
    op = xf_graph_add_node(g, XF_OP_OPAQUE, "after", 1, &r_out, 1, &post);
    g->nodes[op].opaque = xf_opaque_create("MyOp", "my.domain", "\x03", 1);
    xf_graph_add_output(g, post);
    infer_ok(g, OPSET);
    match_list l = matches_of(rs, -1, g);
    ck_assert_int_eq(l.n, 1);
    xf_graph *h = apply_ok(rs, g, &l.m[0]);
    ck_assert_int_eq(h->n_nodes, 3);
    int opaque = 0;
    for (int i = 0; i < h->n_nodes; i++)
        if (h->nodes[i].op == XF_OP_OPAQUE) {
            opaque++;
            ck_assert_str_eq(h->nodes[i].name, opaque == 1 ? "before" : "after");
        }
    ck_assert_int_eq(opaque, 2);
    xf_graph_free(h);
    xf_graph_free(g);
    xf_rule_set_free(rs);
    free_rules(rules, n);
}
END_TEST

/* h, rewritten from g by a merge, computes g's function before and after
 * finalizing folds its concatenated weights into initializers. */
static void expect_same_after_folding(const xf_graph *g, xf_graph *h)
{
    expect_same_function(g, h);
    xf_error e = {0};
    ck_assert_msg(xf_rewrite_finalize(h, OPSET, NULL, &e) == XF_OK, "%s", e.msg);
    ck_assert_int_eq(count_op(h, XF_OP_CONCAT), 0);
    expect_same_function(g, h);
}

/* Two biased convs of one input (as BatchNormalization folding leaves
 * them); the second's stride is `stride2`. */
static xf_graph *biased_convs_graph(int64_t stride2, xf_activation act)
{
    xf_graph *g = xf_graph_create("g");
    int x = input(g, "x", XF_DT_FLOAT, SHAPE(1, 6, 7, 7));
    int c1 = NODE(g, XF_OP_CONV, x, random_weight(g, SHAPE(5, 6, 3, 3), 41), random_weight(g, SHAPE(5), 42));
    int c2 = NODE(g, XF_OP_CONV, x, random_weight(g, SHAPE(3, 6, 3, 3), 43), random_weight(g, SHAPE(3), 44));
    conv_attrs(g, c1, 3);
    conv_attrs(g, c2, 3);
    attrs(g, c1)->activation = attrs(g, c2)->activation = act;
    attrs(g, c2)->strides[0] = attrs(g, c2)->strides[1] = stride2;
    xf_graph_add_output(g, out0(g, c1));
    xf_graph_add_output(g, out0(g, c2));
    infer_ok(g, OPSET);
    return g;
}

START_TEST(merge_biased_convs)
{
    xf_rule **rules;
    int n;
    xf_rule_set *rs = builtin_set(&rules, &n);
    for (int act = XF_ACT_NONE; act <= XF_ACT_TANH; act++) {
        xf_graph *g = biased_convs_graph(1, (xf_activation)act);
        match_list l = matches_of(rs, -1, g);
        ck_assert_int_eq(l.n, 2); /* either conv first */
        ck_assert_str_eq(xf_rule_set_rule(rs, l.m[0].rule)->name, "builtin_merge_conv2d_bias");
        xf_graph *h = apply_ok(rs, g, &l.m[0]);
        ck_assert_int_eq(count_op(h, XF_OP_CONV), 1);
        ck_assert_int_eq(count_op(h, XF_OP_CONCAT), 2); /* kernels and biases */
        for (int i = 0; i < h->n_nodes; i++)
            if (h->nodes[i].op == XF_OP_CONV)
                ck_assert_int_eq(h->nodes[i].attrs.activation, act);
        /* Both graph outputs keep their names. */
        ck_assert_str_eq(h->values[h->outputs[0]].name, g->values[g->outputs[0]].name);
        ck_assert_str_eq(h->values[h->outputs[1]].name, g->values[g->outputs[1]].name);
        expect_same_after_folding(g, h);
        xf_graph_free(h);
        xf_graph_free(g);
    }
    /* Different strides: the two convs are not one conv's halves. */
    xf_graph *g = biased_convs_graph(2, XF_ACT_NONE);
    ck_assert_int_eq(matches_of(rs, -1, g).n, 0);
    xf_graph_free(g);
    /* Grouped convs (as SqueezeBERT's Q/K/V): concatenated kernels would
     * mix the groups, so they do not merge. */
    g = xf_graph_create("g");
    int x = input(g, "x", XF_DT_FLOAT, SHAPE(1, 6, 7, 7));
    int c1 = NODE(g, XF_OP_CONV, x, random_weight(g, SHAPE(4, 3, 3, 3), 45), random_weight(g, SHAPE(4), 46));
    int c2 = NODE(g, XF_OP_CONV, x, random_weight(g, SHAPE(6, 3, 3, 3), 47), random_weight(g, SHAPE(6), 48));
    conv_attrs(g, c1, 3);
    conv_attrs(g, c2, 3);
    attrs(g, c1)->group = attrs(g, c2)->group = 2;
    xf_graph_add_output(g, out0(g, c1));
    xf_graph_add_output(g, out0(g, c2));
    infer_ok(g, OPSET);
    ck_assert_int_eq(matches_of(rs, -1, g).n, 0);
    xf_graph_free(g);
    xf_rule_set_free(rs);
    free_rules(rules, n);
}
END_TEST

/* n projections y_i = x_i W_i [+ b_i] as a transformer's Q/K/V: x is
 * [5, 6] (rank 2) or [2, 5, 6] (rank 3), W_i [6, 4 - i] (or batched
 * [2, 6, 4 - i] when w_rank is 3).  bias: 0 none, 1 Add(y, b), 2 Add(b, y);
 * b_i has one entry per column, or one in all when bias_len1.  With
 * !shared every projection reads its own input. */
typedef struct linears_spec {
    int n, rank, w_rank, bias;
    bool shared, bias_len1;
} linears_spec;

static xf_graph *linears_graph(linears_spec sp)
{
    xf_graph *g = xf_graph_create("g");
    xf_shape xs = sp.rank == 2 ? SHAPE(5, 6) : SHAPE(2, 5, 6);
    int x = input(g, "x", XF_DT_FLOAT, xs);
    for (int i = 0; i < sp.n; i++) {
        int64_t cols = 4 - i;
        int xi = x;
        if (!sp.shared && i > 0) {
            char name[16];
            snprintf(name, sizeof name, "x%d", i);
            xi = input(g, name, XF_DT_FLOAT, xs);
        }
        int w = random_weight(g, sp.w_rank == 2 ? SHAPE(6, cols) : SHAPE(2, 6, cols), 51 + (uint64_t)i);
        int y = out0(g, NODE(g, XF_OP_MATMUL, xi, w));
        if (sp.bias) {
            int b = random_weight(g, SHAPE(sp.bias_len1 ? 1 : cols), 61 + (uint64_t)i);
            y = out0(g, sp.bias == 1 ? NODE(g, XF_OP_ADD, y, b) : NODE(g, XF_OP_ADD, b, y));
        }
        xf_graph_add_output(g, y);
    }
    infer_ok(g, OPSET);
    return g;
}

START_TEST(merge_matmuls)
{
    static const char *suffix[] = {"", "_bias", "_bias_first"};
    xf_rule **rules;
    int n;
    xf_rule_set *rs = builtin_set(&rules, &n);
    for (int rank = 2; rank <= 3; rank++)
        for (int bias = 0; bias <= 2; bias++) {
            xf_graph *g = linears_graph((linears_spec){.n = 2, .rank = rank, .w_rank = 2, .bias = bias, .shared = true});
            match_list l = matches_of(rs, -1, g);
            char name[64];
            snprintf(name, sizeof name, "builtin_merge_matmul%dd%s", rank, suffix[bias]);
            /* Either MatMul first; with biases the bias-free rule also
             * applies (the Adds then follow the Split). */
            ck_assert_int_eq(l.n, bias ? 4 : 2);
            int named = 0, first = -1;
            for (int i = 0; i < l.n; i++)
                if (strcmp(xf_rule_set_rule(rs, l.m[i].rule)->name, name) == 0 && named++ == 0)
                    first = i;
            ck_assert_int_eq(named, 2);
            l.m[0] = l.m[first];
            xf_graph *h = apply_ok(rs, g, &l.m[0]);
            ck_assert_int_eq(count_op(h, XF_OP_MATMUL), 1);
            ck_assert_int_eq(count_op(h, XF_OP_ADD), bias ? 1 : 0);
            ck_assert_int_eq(count_op(h, XF_OP_CONCAT), bias ? 2 : 1); /* weights [and biases] */
            ck_assert_int_eq(count_op(h, XF_OP_SPLIT), 1);
            for (int i = 0; i < h->n_nodes; i++)
                if (h->nodes[i].op == XF_OP_SPLIT) {
                    /* Cut along the last axis where the first weight's
                     * columns end, whichever MatMul the match took first. */
                    const xf_shape *w1 = &g->values[l.m[0].input[1]].shape;
                    ck_assert_int_eq(h->nodes[i].attrs.axis, rank - 1);
                    ck_assert_int_eq(h->nodes[i].attrs.split[0], w1->dims[1]);
                    ck_assert_int_eq(h->nodes[i].attrs.split[1], 7 - w1->dims[1]);
                }
            ck_assert_str_eq(h->values[h->outputs[0]].name, g->values[g->outputs[0]].name);
            ck_assert_str_eq(h->values[h->outputs[1]].name, g->values[g->outputs[1]].name);
            ck_assert_int_eq(matches_of(rs, -1, h).n, 0);
            expect_same_after_folding(g, h);
            xf_graph_free(h);
            xf_graph_free(g);
        }

    /* Three biased projections merge pairwise into one MatMul: one weight
     * of the second merge is the first merge's concatenation. */
    xf_graph *g = linears_graph((linears_spec){.n = 3, .rank = 3, .w_rank = 2, .bias = 1, .shared = true});
    xf_graph *h = xf_graph_clone(g);
    ck_assert_ptr_nonnull(h);
    int steps = 0, biased = -1;
    for (int i = 0; i < xf_rule_set_count(rs); i++)
        if (strcmp(xf_rule_set_rule(rs, i)->name, "builtin_merge_matmul3d_bias") == 0)
            biased = i;
    ck_assert_int_ge(biased, 0);
    for (match_list l = matches_of(rs, biased, h); l.n > 0; l = matches_of(rs, biased, h)) {
        xf_graph *next = apply_ok(rs, h, &l.m[0]);
        xf_graph_free(h);
        h = next;
        steps++;
    }
    ck_assert_int_eq(steps, 2);
    ck_assert_int_eq(count_op(h, XF_OP_MATMUL), 1);
    ck_assert_int_eq(count_op(h, XF_OP_ADD), 1);
    ck_assert_int_eq(count_op(h, XF_OP_SPLIT), 2); /* a part of the first split again */
    expect_same_after_folding(g, h);
    /* Finalizing joins the chain into one three-way Split. */
    ck_assert_int_eq(count_op(h, XF_OP_SPLIT), 1);
    for (int i = 0; i < h->n_nodes; i++)
        if (h->nodes[i].op == XF_OP_SPLIT) {
            const xf_node *s = &h->nodes[i];
            ck_assert_int_eq(s->n_outputs, 3);
            ck_assert_int_eq(s->n_inputs, 2); /* sizes as an input at OPSET */
            const xf_tensor *t = h->values[s->inputs[1]].init;
            ck_assert_ptr_nonnull(t);
            for (int k = 0; k < 3; k++)
                ck_assert_int_eq(xf_tensor_get_i64(t, k), h->values[s->outputs[k]].shape.dims[2]);
        }
    xf_graph_free(h);
    xf_graph_free(g);

    /* Not one MatMul's halves: different inputs; batched 3-D weights (a
     * rule input matches only its own rank); one bias entry broadcast over
     * every column (the bias-free merge still applies there, the Adds
     * after the Split). */
    const linears_spec apart[] = {
        {.n = 2, .rank = 3, .w_rank = 2, .bias = 1, .shared = false},
        {.n = 2, .rank = 2, .w_rank = 2, .bias = 0, .shared = false},
        {.n = 2, .rank = 3, .w_rank = 3, .bias = 0, .shared = true},
        {.n = 2, .rank = 3, .w_rank = 3, .bias = 1, .shared = true},
        {.n = 2, .rank = 3, .w_rank = 2, .bias = 1, .shared = true, .bias_len1 = true},
    };
    for (int i = 0; i < (int)(sizeof apart / sizeof apart[0]); i++) {
        g = linears_graph(apart[i]);
        ck_assert_msg(matches_of(rs, apart[i].bias_len1 ? biased : -1, g).n == 0, "case %d matched", i);
        xf_graph_free(g);
    }
    xf_rule_set_free(rs);
    free_rules(rules, n);
}
END_TEST

START_TEST(finalize_split_sizes_by_opset)
{
    xf_rule *rules[] = {rule_merge_convs()};
    xf_rule_set *rs = rule_set_of(rules, 1);
    for (int64_t opset = 11; opset <= 17; opset += 6) {
        xf_graph *g = two_convs_graph(false);
        match_list l = matches_of(rs, 0, g);
        ck_assert_int_eq(l.n, 2);
        xf_graph *h = apply_ok(rs, g, &l.m[0]);
        xf_error e = {0};
        ck_assert_msg(xf_rewrite_finalize(h, opset, NULL, &e) == XF_OK, "%s", e.msg);
        validate_ok(h);
        for (int i = 0; i < h->n_nodes; i++) {
            const xf_node *s = &h->nodes[i];
            if (s->op != XF_OP_SPLIT)
                continue;
            /* Opset 13 made the sizes an input. */
            ck_assert_int_eq(s->n_inputs, opset >= 13 ? 2 : 1);
            ck_assert_int_eq(s->attrs.n_split, opset >= 13 ? 0 : 2);
            if (opset >= 13) {
                const xf_tensor *t = h->values[s->inputs[1]].init;
                ck_assert_ptr_nonnull(t);
                ck_assert_int_eq(xf_tensor_get_i64(t, 0), 5);
                ck_assert_int_eq(xf_tensor_get_i64(t, 1), 7);
            }
        }
        expect_same_function(g, h);
        xf_graph_free(h);
        xf_graph_free(g);
    }
    xf_rule_set_free(rs);
    xf_rule_free(rules[0]);
}
END_TEST

START_TEST(invalid_rules_are_skipped)
{
    xf_rule *bad = rule_factor_mul();
    /* A binding on a node that does not exist. */
    rule_bind(bad, false, 9, XF_AF_AXIS, 0, xf_expr_const(0));
    xf_rule *good = rule_factor_mul();
    xf_rule *rules[] = {bad, good};
    xf_rule_set *rs = NULL;
    xf_error e = {0};
    ck_assert_int_eq(xf_rule_set_create((const xf_rule *const *)rules, 2, &rs, &e), XF_OK);
    ck_assert_int_eq(xf_rule_set_count(rs), 1);
    ck_assert_int_eq(xf_rule_set_skipped(rs), 1);
    ck_assert_ptr_eq(xf_rule_set_rule(rs, 0), good);
    ck_assert_msg(strstr(e.msg, "factor_mul") != NULL, "%s", e.msg);
    xf_rule_set_free(rs);
    xf_rule_free(bad);
    xf_rule_free(good);
}
END_TEST

/* Two rules with constants: a 1x1 biased conv's residual add folded into
 * its kernel (the identity kernel on the replacement), and a conv with the
 * 3x3 identity kernel removed (a constant on the pattern). */
static const char constants_text[] =
    "xflow-library 1\ngenerator test\nop-set Conv,Add\nmax-ops 2\nseed 1\nopset 17\nrules 2\n"
    "rule residual\nproved yes\ninput x FLOAT 2x2x4x4\ninput k FLOAT 2x2x1x1\ninput p FLOAT 2\n"
    "const i identity_kernel FLOAT 2x2x1x1 = k[0], k[0], 1, 1\npattern\n"
    "  %0 = Conv(x, k, p) kernel=1,1 strides=1,1 pads=0,0,0,0 dilations=1,1\n  %1 = Add(%0, x)\n  output %1\n"
    "replacement\n  %0 = Add(k, i)\n"
    "  %1 = Conv(x, %0, p) kernel=1,1 strides=1,1 pads=0,0,0,0 dilations=1,1\n  output %1\nend\n"
    "rule unit\nproved yes\ninput x FLOAT 2x2x4x4\nconst e identity_kernel FLOAT 2x2x3x3 = x[1], x[1], 3, 3\n"
    "pattern\n  %0 = Conv(x, e) kernel=3,3 strides=1,1 pads=1,1,1,1 dilations=1,1\n  output %0\n"
    "replacement\n  output x\nend\n";

START_TEST(rule_constants_sized_by_match)
{
    xf_library *lib = xf_test_library(constants_text);
    xf_error e = {0};
    xf_rule_set *rs = rule_set_of(lib->rules, lib->n_rules);
    /* Seven channels, where the rule was found on two. */
    xf_graph *g = xf_graph_create("g");
    int x = input(g, "x", XF_DT_FLOAT, SHAPE(1, 7, 5, 5));
    int c = NODE(g, XF_OP_CONV, x, random_weight(g, SHAPE(7, 7, 1, 1), 3), random_weight(g, SHAPE(7), 4));
    conv_attrs(g, c, 1);
    int sum = NODE(g, XF_OP_ADD, out0(g, c), x);
    xf_graph_add_output(g, out0(g, sum));
    infer_ok(g, OPSET);
    match_list l = matches_of(rs, 0, g);
    ck_assert_int_eq(l.n, 1);
    xf_graph *h = apply_ok(rs, g, &l.m[0]);
    ck_assert_int_eq(count_op(h, XF_OP_CONV), 1);
    expect_same_function(g, h);
    /* The kernel plus the 7-channel identity folds into one initializer. */
    xf_canon_stats st = {0};
    ck_assert_msg(xf_canonicalize(h, OPSET, xf_runtime_eval_node, &st, &e) == XF_OK, "%s", e.msg);
    ck_assert_int_eq(count_op(h, XF_OP_ADD), 0);
    expect_same_function(g, h);
    xf_graph_free(h);
    /* The pattern's constant matches an identity kernel of any channel
     * count, and nothing else. */
    for (int identity = 0; identity < 2; identity++) {
        xf_graph *u = xf_graph_create("u");
        int ux = input(u, "x", XF_DT_FLOAT, SHAPE(1, 5, 6, 6));
        xf_shape ks = SHAPE(5, 5, 3, 3);
        xf_tensor *k = identity ? xf_const_make(XF_CONST_IDENTITY_KERNEL, &ks) : xf_tensor_random(XF_DT_FLOAT, &ks, 9);
        int kv = xf_graph_add_initializer(u, "k", k);
        xf_tensor_release(k);
        int uc = NODE(u, XF_OP_CONV, ux, kv);
        conv_attrs(u, uc, 3);
        int r = NODE(u, XF_OP_RELU, out0(u, uc));
        xf_graph_add_output(u, out0(u, r));
        infer_ok(u, OPSET);
        match_list lu = matches_of(rs, 1, u);
        ck_assert_int_eq(lu.n, identity);
        if (identity) {
            xf_graph *hu = apply_ok(rs, u, &lu.m[0]);
            ck_assert_int_eq(count_op(hu, XF_OP_CONV), 0);
            expect_same_function(u, hu);
            xf_graph_free(hu);
        }
        xf_graph_free(u);
    }
    xf_graph_free(g);
    xf_rule_set_free(rs);
    xf_library_free(lib);
}
END_TEST

/* Relu then MaxPool (3x3, stride 1, pads 1) becomes MaxPool then Relu. */
static const char relu_pool_text[] =
    "xflow-library 1\ngenerator test\nop-set Relu,MaxPool\nmax-ops 2\nseed 1\nopset 17\nrules 1\n"
    "rule relu_pool\nproved yes\ninput x FLOAT 2x2x4x4\npattern\n  %0 = Relu(x)\n"
    "  %1 = MaxPool(%0) kernel=3,3 strides=1,1 pads=1,1,1,1 dilations=1,1\n  output %1\nreplacement\n"
    "  %0 = MaxPool(x) kernel=3,3 strides=1,1 pads=1,1,1,1 dilations=1,1\n  %1 = Relu(%0)\n  output %1\nend\n";

static void pool_window(xf_attrs *a)
{
    a->n_spatial = 2;
    a->kernel[0] = a->kernel[1] = 3;
    a->pads[0] = a->pads[1] = a->pads[2] = a->pads[3] = 1;
}

/* x -> Relu -> MaxPool -> output; with indices, the MaxPool's Indices
 * feed a MaxUnpool whose output is a graph output too. */
static xf_graph *relu_pool_graph(bool indices)
{
    xf_graph *g = xf_graph_create("g");
    int r = NODE(g, XF_OP_RELU, input(g, "x", XF_DT_FLOAT, SHAPE(1, 3, 6, 6)));
    int p = node(g, XF_OP_MAX_POOL, "pool", 1, (int[]){out0(g, r)}, indices ? 2 : 1);
    pool_window(attrs(g, p));
    xf_graph_add_output(g, out0(g, p));
    if (indices) {
        int u = NODE(g, XF_OP_MAX_UNPOOL, out0(g, p), g->nodes[p].outputs[1]);
        pool_window(attrs(g, u));
        xf_graph_add_output(g, out0(g, u));
    }
    infer_ok(g, OPSET);
    return g;
}

/* Rules describe the one-output MaxPool: one with its Indices output
 * matches no rule written for it, the search leaves it as it is (both
 * outputs, reading the Relu), and a rule holding one does not load. */
START_TEST(pool_with_indices_stays)
{
    xf_library *lib = xf_test_library(relu_pool_text);
    xf_rule_set *rs = rule_set_of(lib->rules, lib->n_rules);
    xf_graph *plain = relu_pool_graph(false), *g = relu_pool_graph(true);
    ck_assert_int_eq(matches_of(rs, -1, plain).n, 1);
    ck_assert_int_eq(matches_of(rs, -1, g).n, 0);
    xf_error e = {0};
    xf_cost_model *cm = NULL;
    ck_assert_msg(xf_cost_model_create("analytic:cpu", NULL, &cm, &e) == XF_OK, "%s", e.msg);
    xf_search_options o;
    xf_search_options_default(&o);
    o.opset = OPSET;
    xf_search_result res = {0};
    ck_assert_msg(xf_search(g, rs, cm, &o, &res, &e) == XF_OK, "%s", e.msg);
    const xf_graph *b = res.best;
    ck_assert_int_eq(count_op(b, XF_OP_MAX_POOL), 1);
    int pi = 0;
    while (b->nodes[pi].op != XF_OP_MAX_POOL)
        pi++;
    const xf_node *pool = &b->nodes[pi];
    ck_assert(pool->n_outputs == 2 && pool->outputs[1] >= 0 && b->values[pool->outputs[1]].dtype == XF_DT_INT64);
    ck_assert_int_eq(b->nodes[b->values[pool->inputs[0]].producer].op, XF_OP_RELU);
    expect_same_function(g, b);
    xf_search_result_free(&res);
    xf_cost_model_free(cm);
    xf_graph_free(g);
    xf_graph_free(plain);
    xf_rule_set_free(rs);
    xf_library_free(lib);
    char bad[sizeof relu_pool_text + 8];
    const char *at = strstr(relu_pool_text, "  %1 = MaxPool");
    snprintf(bad, sizeof bad, "%.*s  %%1, %%2%s", (int)(at - relu_pool_text), relu_pool_text, at + 4);
    xf_library *refused = NULL;
    ck_assert_int_ne(xf_library_parse(bad, strlen(bad), "bad", &refused, &e), XF_OK);
    ck_assert_msg(strstr(e.msg, "a MaxPool with an Indices output"), "%s", e.msg);
}
END_TEST

static Suite *optimizer_suite(void)
{
    Suite *s = suite_create("optimizer");
    TCase *t = tcase_create("rewrite");
    tcase_add_test(t, fuse_activation_into_conv);
    tcase_add_test(t, merge_convs_with_new_weights);
    tcase_add_test(t, factor_and_generalized_axis);
    tcase_add_test(t, merge_biased_convs);
    tcase_add_test(t, merge_matmuls);
    tcase_add_test(t, finalize_split_sizes_by_opset);
    tcase_add_test(t, rule_constants_sized_by_match);
    suite_add_tcase(s, t);
    TCase *m = tcase_create("match");
    tcase_add_test(m, external_use_blocks_rewrite);
    tcase_add_test(m, attributes_and_constraints);
    tcase_add_test(m, opaque_nodes_stay_outside);
    tcase_add_test(m, invalid_rules_are_skipped);
    tcase_add_test(m, pool_with_indices_stays);
    suite_add_tcase(s, m);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(optimizer_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
