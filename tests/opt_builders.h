/* Rules and graphs shared by the optimizer Check suites (test_optimizer.c,
 * test_search.c): rules of the families the generator produces, written
 * with the xf_graph API, and helpers that run graphs on cpu_ref. */
#ifndef XF_OPT_BUILDERS_H
#define XF_OPT_BUILDERS_H

#include "core_builders.h"
#include "xf_optimizer.h"
#include "xf_runtime.h"

#include <stdlib.h>

#define OPSET 17

static inline void conv_attrs(xf_graph *g, int n, int64_t k)
{
    xf_attrs *a = attrs(g, n);
    a->n_spatial = 2;
    a->kernel[0] = a->kernel[1] = k;
    a->pads[0] = a->pads[1] = a->pads[2] = a->pads[3] = k / 2;
}

static inline int conv(xf_graph *g, int x, int w, int64_t k)
{
    int n = NODE(g, XF_OP_CONV, x, w);
    conv_attrs(g, n, k);
    return n;
}

/* A random float weight stored as floating dtype dt. */
static inline int random_weight_as(xf_graph *g, xf_shape s, uint64_t seed, xf_dtype dt)
{
    xf_tensor *t = xf_tensor_random(XF_DT_FLOAT, &s, seed);
    ck_assert_ptr_nonnull(t);
    if (dt != XF_DT_FLOAT) {
        xf_tensor *f = xf_tensor_as_float(t, dt);
        ck_assert_ptr_nonnull(f);
        xf_tensor_release(t);
        t = f;
    }
    int v = xf_graph_add_initializer(g, NULL, t);
    xf_tensor_release(t);
    return v;
}

static inline int random_weight(xf_graph *g, xf_shape s, uint64_t seed)
{
    return random_weight_as(g, s, seed, XF_DT_FLOAT);
}

static inline xf_rule *rule_new(const char *name, xf_graph *pattern, xf_graph *replacement, int n_params)
{
    infer_ok(pattern, OPSET);
    infer_ok(replacement, OPSET);
    xf_rule *r = xf_rule_create(name);
    ck_assert_ptr_nonnull(r);
    r->pattern = pattern;
    r->replacement = replacement;
    r->proved = true;
    r->n_params = n_params;
    r->param_names = calloc((size_t)n_params + 1, sizeof *r->param_names);
    ck_assert_ptr_nonnull(r->param_names);
    return r;
}

static inline void rule_bind(xf_rule *r, bool replacement, int node, xf_attr_field f, int index, xf_expr e)
{
    r->bindings = realloc(r->bindings, sizeof *r->bindings * (size_t)(r->n_bindings + 1));
    ck_assert_ptr_nonnull(r->bindings);
    r->bindings[r->n_bindings++] = (xf_binding){replacement, node, f, index, e};
}

static inline void rule_constrain(xf_rule *r, xf_cmp cmp, xf_expr lhs, xf_expr rhs)
{
    r->constraints = realloc(r->constraints, sizeof *r->constraints * (size_t)(r->n_constraints + 1));
    ck_assert_ptr_nonnull(r->constraints);
    r->constraints[r->n_constraints++] = (xf_constraint){cmp, lhs, rhs};
}

/* Two 1x1 convolutions of one input -> one convolution with the kernels
 * concatenated, split back into the two results.  The split sizes are the
 * kernels' output channels (dimension 0 of rule inputs 1 and 2). */
static inline xf_rule *rule_merge_convs(void)
{
    xf_graph *p = xf_graph_create("pattern"), *q = xf_graph_create("replacement");
    int px = input(p, "x", XF_DT_FLOAT, SHAPE(1, 4, 5, 5)), pw1 = input(p, "w1", XF_DT_FLOAT, SHAPE(3, 4, 1, 1)),
        pw2 = input(p, "w2", XF_DT_FLOAT, SHAPE(2, 4, 1, 1));
    xf_graph_add_output(p, out0(p, conv(p, px, pw1, 1)));
    xf_graph_add_output(p, out0(p, conv(p, px, pw2, 1)));
    int qx = input(q, "x", XF_DT_FLOAT, SHAPE(1, 4, 5, 5)), qw1 = input(q, "w1", XF_DT_FLOAT, SHAPE(3, 4, 1, 1)),
        qw2 = input(q, "w2", XF_DT_FLOAT, SHAPE(2, 4, 1, 1));
    int cat = NODE(q, XF_OP_CONCAT, qw1, qw2);
    attrs(q, cat)->axis = 0;
    int c = conv(q, qx, out0(q, cat), 1);
    int split = node(q, XF_OP_SPLIT, NULL, 1, (int[]){out0(q, c)}, 2);
    attrs(q, split)->axis = 1;
    attrs(q, split)->n_split = 2;
    attrs(q, split)->split[0] = 3;
    attrs(q, split)->split[1] = 2;
    xf_graph_add_output(q, q->nodes[split].outputs[0]);
    xf_graph_add_output(q, q->nodes[split].outputs[1]);
    xf_rule *r = rule_new("merge_convs", p, q, 0);
    rule_bind(r, true, split, XF_AF_SPLIT, 0, xf_expr_dim(1, 0));
    rule_bind(r, true, split, XF_AF_SPLIT, 1, xf_expr_dim(2, 0));
    return r;
}

/* a*c + b*c -> (a+b)*c */
static inline xf_rule *rule_factor_mul(void)
{
    xf_graph *p = xf_graph_create("pattern"), *q = xf_graph_create("replacement");
    int pa = input(p, "a", XF_DT_FLOAT, SHAPE(2, 3)), pb = input(p, "b", XF_DT_FLOAT, SHAPE(2, 3)),
        pc = input(p, "c", XF_DT_FLOAT, SHAPE(2, 3));
    int m1 = NODE(p, XF_OP_MUL, pa, pc), m2 = NODE(p, XF_OP_MUL, pb, pc);
    xf_graph_add_output(p, out0(p, NODE(p, XF_OP_ADD, out0(p, m1), out0(p, m2))));
    int qa = input(q, "a", XF_DT_FLOAT, SHAPE(2, 3)), qb = input(q, "b", XF_DT_FLOAT, SHAPE(2, 3)),
        qc = input(q, "c", XF_DT_FLOAT, SHAPE(2, 3));
    int s = NODE(q, XF_OP_ADD, qa, qb);
    xf_graph_add_output(q, out0(q, NODE(q, XF_OP_MUL, out0(q, s), qc)));
    return rule_new("factor_mul", p, q, 0);
}

/* Concat(Relu(a), Relu(b), axis=p) -> Relu(Concat(a, b, axis=p)), the axis
 * a parameter bound by the pattern. */
static inline xf_rule *rule_relu_concat(void)
{
    xf_graph *p = xf_graph_create("pattern"), *q = xf_graph_create("replacement");
    int pa = input(p, "a", XF_DT_FLOAT, SHAPE(2, 3)), pb = input(p, "b", XF_DT_FLOAT, SHAPE(2, 3));
    int r1 = NODE(p, XF_OP_RELU, pa), r2 = NODE(p, XF_OP_RELU, pb);
    int pcat = NODE(p, XF_OP_CONCAT, out0(p, r1), out0(p, r2));
    attrs(p, pcat)->axis = 1;
    xf_graph_add_output(p, out0(p, pcat));
    int qa = input(q, "a", XF_DT_FLOAT, SHAPE(2, 3)), qb = input(q, "b", XF_DT_FLOAT, SHAPE(2, 3));
    int qcat = NODE(q, XF_OP_CONCAT, qa, qb);
    attrs(q, qcat)->axis = 1;
    xf_graph_add_output(q, out0(q, NODE(q, XF_OP_RELU, out0(q, qcat))));
    xf_rule *r = rule_new("relu_concat", p, q, 1);
    r->param_names[0] = strdup("axis");
    rule_bind(r, false, pcat, XF_AF_AXIS, 0, xf_expr_param(0));
    rule_bind(r, true, qcat, XF_AF_AXIS, 0, xf_expr_param(0));
    return r;
}

static inline xf_rule_set *rule_set_of(xf_rule **rules, int n)
{
    xf_rule_set *rs = NULL;
    xf_error e = {0};
    ck_assert_msg(xf_rule_set_create((const xf_rule *const *)rules, n, &rs, &e) == XF_OK, "%s", e.msg);
    ck_assert_msg(xf_rule_set_skipped(rs) == 0, "rule skipped: %s", e.msg);
    return rs;
}

/* Runs g on cpu_ref with seeded random inputs; outputs[] gets g->n_outputs tensors. */
static inline void run_ref(const xf_graph *g, uint64_t seed, xf_tensor **outputs)
{
    xf_error e = {0};
    xf_session *s = NULL;
    ck_assert_msg(xf_session_create(g, OPSET, "cpu_ref", NULL, &s, &e) == XF_OK, "%s", e.msg);
    xf_tensor *in[16] = {0};
    ck_assert_int_le(g->n_inputs, 16);
    for (int k = 0; k < g->n_inputs; k++) {
        const xf_value *v = &g->values[g->inputs[k]];
        in[k] = xf_tensor_random(v->dtype, &v->shape, seed + (uint64_t)k);
        ck_assert_ptr_nonnull(in[k]);
    }
    ck_assert_msg(xf_session_run(s, in, outputs, &e) == XF_OK, "%s", e.msg);
    for (int k = 0; k < g->n_inputs; k++)
        xf_tensor_release(in[k]);
    xf_session_free(s);
}

/* The two graphs compute the same outputs on random inputs. */
static inline void expect_same_function_within(const xf_graph *a, const xf_graph *b, double atol, double rtol)
{
    ck_assert_int_eq(a->n_outputs, b->n_outputs);
    xf_tensor *oa[8] = {0}, *ob[8] = {0};
    run_ref(a, 7, oa);
    run_ref(b, 7, ob);
    for (int k = 0; k < a->n_outputs; k++) {
        double max_abs = 0, max_rel = 0;
        bool ok = false;
        xf_error e = {0};
        ck_assert_msg(xf_tensor_compare(ob[k], oa[k], atol, rtol, &max_abs, &max_rel, &ok, &e) == XF_OK, "%s",
                      e.msg);
        ck_assert_msg(ok, "output %d differs: max abs %g", k, max_abs);
        xf_tensor_release(oa[k]);
        xf_tensor_release(ob[k]);
    }
}

static inline void expect_same_function(const xf_graph *a, const xf_graph *b)
{
    expect_same_function_within(a, b, 1e-5, 1e-4);
}

typedef struct match_list {
    int n;
    xf_match m[64];
} match_list;

static inline bool collect_match(const xf_match *m, void *user)
{
    match_list *l = user;
    if (l->n < 64)
        l->m[l->n++] = *m;
    return true;
}

static inline match_list matches_of(const xf_rule_set *rs, int rule, const xf_graph *g)
{
    match_list l = {0};
    xf_error e = {0};
    ck_assert_msg(xf_match_each(rs, rule, g, collect_match, &l, &e) == XF_OK, "%s", e.msg);
    return l;
}

/* Applies m and folds constants as xflowc does before writing. */
static inline xf_graph *apply_ok(const xf_rule_set *rs, const xf_graph *g, const xf_match *m)
{
    xf_graph *out = NULL;
    xf_error e = {0};
    ck_assert_msg(xf_rewrite_apply(rs, g, OPSET, m, &out, &e) == XF_OK, "%s", e.msg);
    validate_ok(out);
    return out;
}

static inline int count_op(const xf_graph *g, xf_op op)
{
    int n = 0;
    for (int i = 0; i < g->n_nodes; i++)
        n += g->nodes[i].op == op;
    return n;
}

#endif
