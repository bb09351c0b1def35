/* Optimizer: the backtracking search (compared with an exhaustive search of
 * every rewrite sequence on small graphs), its budget and time limit, the
 * cost models, and xflowc's use of them. */
#include "opt_builders.h"
#include "opt_internal.h"
#include "proto_util.h"
#include "random_graph_util.h"
#include "xf_test_util.h"
#include "zoo.h"

#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* x feeds two 1x1 convs, each followed by a Relu, joined by a Concat. */
static xf_graph *branches_graph(void)
{
    xf_graph *g = xf_graph_create("g");
    int x = input(g, "x", XF_DT_FLOAT, SHAPE(1, 8, 6, 6));
    int r1 = NODE(g, XF_OP_RELU, out0(g, conv(g, x, random_weight(g, SHAPE(5, 8, 1, 1), 31), 1)));
    int r2 = NODE(g, XF_OP_RELU, out0(g, conv(g, x, random_weight(g, SHAPE(7, 8, 1, 1), 32), 1)));
    int cat = NODE(g, XF_OP_CONCAT, out0(g, r1), out0(g, r2));
    attrs(g, cat)->axis = 1;
    xf_graph_add_output(g, out0(g, cat));
    infer_ok(g, OPSET);
    return g;
}

/* Concat(Relu(a*c + b*c), Relu(d)) */
static xf_graph *elementwise_graph(void)
{
    xf_graph *g = xf_graph_create("g");
    int a = input(g, "a", XF_DT_FLOAT, SHAPE(64, 256)), b = input(g, "b", XF_DT_FLOAT, SHAPE(64, 256)),
        c = input(g, "c", XF_DT_FLOAT, SHAPE(64, 256)), d = input(g, "d", XF_DT_FLOAT, SHAPE(64, 256));
    int s = NODE(g, XF_OP_ADD, out0(g, NODE(g, XF_OP_MUL, a, c)), out0(g, NODE(g, XF_OP_MUL, b, c)));
    int cat = NODE(g, XF_OP_CONCAT, out0(g, NODE(g, XF_OP_RELU, out0(g, s))), out0(g, NODE(g, XF_OP_RELU, d)));
    attrs(g, cat)->axis = 0;
    xf_graph_add_output(g, out0(g, cat));
    infer_ok(g, OPSET);
    return g;
}

/* Two biased 1x1 convs reading x, the second's kernel computed from the
 * first's output: merging them would feed the merged conv its own output. */
static xf_graph *cycle_graph(void)
{
    xf_graph *g = xf_graph_create("g");
    int x = input(g, "x", XF_DT_FLOAT, SHAPE(1, 8, 1, 1));
    int c1 = NODE(g, XF_OP_CONV, x, random_weight(g, SHAPE(8, 8, 1, 1), 41), random_weight(g, SHAPE(8), 42));
    conv_attrs(g, c1, 1);
    int w2 = NODE(g, XF_OP_RELU, out0(g, c1));
    int c2 = NODE(g, XF_OP_CONV, x, out0(g, w2), random_weight(g, SHAPE(1), 43));
    conv_attrs(g, c2, 1);
    xf_graph_add_output(g, out0(g, c2));
    infer_ok(g, OPSET);
    return g;
}

/* Every rule the suites know: built-ins plus the generator-style rules. */
typedef struct all_rules {
    xf_rule **builtin;
    int n_builtin;
    xf_rule *list[64];
    int n;
    xf_rule_set *rs;
} all_rules;

static void all_rules_make(all_rules *r)
{
    xf_error e = {0};
    ck_assert_msg(xf_builtin_rules(&r->builtin, &r->n_builtin, &e) == XF_OK, "%s", e.msg);
    r->n = 0;
    for (int i = 0; i < r->n_builtin; i++)
        r->list[r->n++] = r->builtin[i];
    r->list[r->n++] = rule_merge_convs();
    r->list[r->n++] = rule_factor_mul();
    r->list[r->n++] = rule_relu_concat();
    r->rs = rule_set_of(r->list, r->n);
}

static void all_rules_free(all_rules *r)
{
    xf_rule_set_free(r->rs);
    for (int i = 0; i < r->n; i++)
        xf_rule_free(r->list[i]);
    free(r->builtin);
}

static xf_cost_model *cost_model(const char *name)
{
    xf_cost_model *m = NULL;
    xf_error e = {0};
    ck_assert_msg(xf_cost_model_create(name, NULL, &m, &e) == XF_OK, "%s", e.msg);
    return m;
}

static double cost_of(xf_cost_model *m, const xf_graph *g)
{
    double c = -1;
    xf_error e = {0};
    ck_assert_msg(xf_cost_graph(m, g, OPSET, &c, &e) == XF_OK, "%s", e.msg);
    return c;
}

/* Cheapest graph reachable by any sequence of rewrites (breadth first over
 * distinct graphs); *n_graphs counts them. */
static double exhaustive_best(const xf_rule_set *rs, const xf_graph *g, xf_cost_model *cm, int *n_graphs)
{
    enum { CAP = 4096 };
    xf_graph **queue = calloc(CAP, sizeof *queue);
    uint64_t *hashes = calloc(CAP, sizeof *hashes);
    ck_assert_ptr_nonnull(queue);
    ck_assert_ptr_nonnull(hashes);
    int n = 0;
    queue[n] = xf_graph_clone(g);
    hashes[n++] = xf_graph_hash(g);
    double best = cost_of(cm, g);
    for (int i = 0; i < n; i++) {
        match_list l = matches_of(rs, -1, queue[i]);
        ck_assert_int_lt(l.n, 64);
        for (int k = 0; k < l.n; k++) {
            xf_graph *h = NULL;
            xf_error e = {0};
            if (xf_rewrite_apply(rs, queue[i], OPSET, &l.m[k], &h, &e) != XF_OK)
                continue;
            uint64_t hh = xf_graph_hash(h);
            bool seen = false;
            for (int j = 0; j < n && !seen; j++)
                seen = hashes[j] == hh;
            if (seen) {
                xf_graph_free(h);
                continue;
            }
            ck_assert_int_lt(n, CAP);
            double c = cost_of(cm, h);
            best = c < best ? c : best;
            hashes[n] = hh;
            queue[n++] = h;
        }
    }
    for (int i = 0; i < n; i++)
        xf_graph_free(queue[i]);
    free(queue);
    free(hashes);
    *n_graphs = n;
    return best;
}

static void search_ok(const xf_graph *g, const xf_rule_set *rs, xf_cost_model *cm, const xf_search_options *o,
                      xf_search_result *res)
{
    xf_error e = {0};
    ck_assert_msg(xf_search(g, rs, cm, o, res, &e) == XF_OK, "%s", e.msg);
    ck_assert_ptr_nonnull(res->best);
}

/* search_ok with the default options. */
static void search_default(const xf_graph *g, const xf_rule_set *rs, xf_cost_model *cm, xf_search_result *res)
{
    xf_search_options o;
    xf_search_options_default(&o);
    o.opset = OPSET;
    search_ok(g, rs, cm, &o, res);
}

START_TEST(search_matches_exhaustive)
{
    all_rules r;
    all_rules_make(&r);
    const char *models[] = {"analytic:h100", "analytic:cpu", "analytic:v100"};
    for (int gi = 0; gi < 2; gi++)
        for (int mi = 0; mi < 3; mi++) {
            xf_graph *g = gi == 0 ? branches_graph() : elementwise_graph();
            xf_cost_model *cm = cost_model(models[mi]);
            int n_graphs = 0;
            double best = exhaustive_best(r.rs, g, cm, &n_graphs);
            ck_assert_int_ge(n_graphs, 4);
            xf_search_options o;
            xf_search_options_default(&o);
            o.opset = OPSET;
            o.budget = 100000;
            o.time_limit = 0;
            xf_search_result res;
            search_ok(g, r.rs, cm, &o, &res);
            ck_assert_msg(fabs(res.cost_after - best) <= 1e-9 * best, "graph %d, %s: search %.9g, exhaustive %.9g",
                          gi, models[mi], res.cost_after, best);
            ck_assert_double_lt(res.cost_after, res.cost_before);
            ck_assert_double_eq_tol(cost_of(cm, res.best), res.cost_after, 1e-12);
            ck_assert_int_gt(res.n_steps, 0);
            ck_assert_double_eq_tol(res.steps[res.n_steps - 1].cost, res.cost_after, 1e-12);
            ck_assert(!res.stopped_budget && !res.stopped_time);
            /* The best graph, with its new weights folded, computes the same function. */
            xf_canon_stats st = {0};
            xf_error e = {0};
            ck_assert_msg(xf_canonicalize(res.best, OPSET, xf_runtime_eval_node, &st, &e) == XF_OK, "%s", e.msg);
            expect_same_function(g, res.best);
            xf_search_result_free(&res);
            xf_cost_model_free(cm);
            xf_graph_free(g);
        }
    all_rules_free(&r);
}
END_TEST

static double fake_clock(void *user)
{
    double *t = user;
    double now = *t;
    *t += 1.0;
    return now;
}

START_TEST(budget_and_time_limit)
{
    all_rules r;
    all_rules_make(&r);
    xf_graph *g = branches_graph();
    xf_cost_model *cm = cost_model("analytic:h100");
    xf_search_options o;
    xf_search_options_default(&o);
    o.opset = OPSET;
    o.alpha = 10; /* keep every candidate, so the space outlasts the limits */
    o.time_limit = 0;
    xf_search_result res;
    for (long budget = 0; budget <= 3; budget++) {
        o.budget = budget;
        search_ok(g, r.rs, cm, &o, &res);
        ck_assert_int_eq(res.expanded, budget);
        ck_assert(res.stopped_budget);
        ck_assert(!res.stopped_time);
        xf_search_result_free(&res);
    }
    /* A clock that advances one second per reading: the limit of 3.5 s
     * allows the expansions begun at 1, 2 and 3 s. */
    double t = 0;
    o.budget = 1000;
    o.time_limit = 3.5;
    o.now = fake_clock;
    o.now_user = &t;
    search_ok(g, r.rs, cm, &o, &res);
    ck_assert_int_eq(res.expanded, 3);
    ck_assert(res.stopped_time);
    ck_assert(!res.stopped_budget);
    xf_search_result_free(&res);
    /* A queue of one graph still searches (depth first). */
    o.now = NULL;
    o.time_limit = 0;
    o.queue_limit = 1;
    o.alpha = 1.05;
    search_ok(g, r.rs, cm, &o, &res);
    ck_assert_double_lt(res.cost_after, res.cost_before);
    xf_search_result_free(&res);
    xf_cost_model_free(cm);
    xf_graph_free(g);
    all_rules_free(&r);
}
END_TEST

START_TEST(analytic_costs)
{
    xf_cost_model *h100 = cost_model("analytic:H100");
    ck_assert_str_eq(xf_cost_model_name(h100), "analytic:h100");
    ck_assert_ptr_nonnull(strstr(xf_cost_model_describe(h100), "H100"));
    xf_graph *g = branches_graph();
    double c_h100 = cost_of(h100, g);
    ck_assert_double_gt(c_h100, 0);
    /* An H200 is no slower than an H100 (same compute, more bandwidth); the
     * older GPUs are slower. */
    const char *devices[] = {"analytic:h200", "analytic:a100", "analytic:v100"};
    for (int i = 0; i < 3; i++) {
        xf_cost_model *m = cost_model(devices[i]);
        if (i == 0)
            ck_assert_double_le(cost_of(m, g), c_h100);
        else
            ck_assert_double_gt(cost_of(m, g), c_h100);
        xf_cost_model_free(m);
    }
    /* Fusing the Relu into the Conv saves one kernel at least. */
    all_rules r;
    all_rules_make(&r);
    match_list l = matches_of(r.rs, 0, g); /* builtin conv1d-relu: none */
    ck_assert_int_eq(l.n, 0);
    l = matches_of(r.rs, -1, g);
    xf_graph *fused = NULL, *merged = NULL;
    for (int k = 0; k < l.n; k++) {
        const char *name = xf_rule_set_rule(r.rs, l.m[k].rule)->name;
        if (!fused && strstr(name, "relu") && strstr(name, "builtin"))
            fused = apply_ok(r.rs, g, &l.m[k]);
        if (!merged && !strcmp(name, "merge_convs"))
            merged = apply_ok(r.rs, g, &l.m[k]);
    }
    ck_assert_ptr_nonnull(fused);
    ck_assert_ptr_nonnull(merged);
    ck_assert_double_le(cost_of(h100, fused), c_h100 - 4e-6);
    /* A large float16 matrix product runs at the tensor cores' fp16 rate
     * on a GPU (half the time of TF32 once compute-bound), at the float32
     * rate on this CPU. */
    xf_cost_model *cpu = cost_model("analytic:cpu");
    double t[2][2];
    for (int h = 0; h < 2; h++) {
        xf_dtype dt = h ? XF_DT_FLOAT16 : XF_DT_FLOAT;
        xf_graph *mm = xf_graph_create("mm");
        int a = input(mm, "a", dt, SHAPE(4096, 4096));
        xf_graph_add_output(mm, out0(mm, NODE(mm, XF_OP_MATMUL, a, random_weight_as(mm, SHAPE(4096, 4096), 3, dt))));
        infer_ok(mm, OPSET);
        t[h][0] = cost_of(h100, mm);
        t[h][1] = cost_of(cpu, mm);
        xf_graph_free(mm);
    }
    ck_assert_double_eq_tol(t[1][0], t[0][0] / 2, t[0][0] * 0.01);
    ck_assert_double_eq_tol(t[1][1], t[0][1], t[0][1] * 1e-9);
    xf_cost_model_free(cpu);
    /* The Concat of the two kernels is over constants: free, so the merged
     * graph costs what it costs once the Concat is folded. */
    double unfolded = cost_of(h100, merged);
    xf_canon_stats st = {0};
    xf_error e = {0};
    ck_assert_msg(xf_canonicalize(merged, OPSET, xf_runtime_eval_node, &st, &e) == XF_OK, "%s", e.msg);
    ck_assert_int_eq(st.folded_constants, 1);
    ck_assert_double_eq_tol(cost_of(h100, merged), unfolded, 1e-15);
    xf_graph_free(fused);
    xf_graph_free(merged);
    all_rules_free(&r);
    xf_graph_free(g);
    xf_cost_model_free(h100);
}
END_TEST

START_TEST(cost_model_names)
{
    xf_cost_model *m = NULL;
    xf_error e = {0};
    ck_assert_int_eq(xf_cost_model_create("analytic:tpu", NULL, &m, &e), XF_ERR_INVALID);
    ck_assert_ptr_null(m);
    ck_assert_ptr_nonnull(strstr(e.msg, "analytic:h100"));
    ck_assert_int_eq(xf_cost_model_create("gpu", NULL, &m, &e), XF_ERR_INVALID);
    ck_assert_int_eq(xf_cost_model_create("measured:abacus", NULL, &m, &e), XF_ERR_INVALID);
    ck_assert_ptr_nonnull(strstr(e.msg, "abacus"));
    if (!xf_backend_find("cuda")) {
        ck_assert_int_ne(xf_cost_model_create("cuda", NULL, &m, &e), XF_OK);
        ck_assert_ptr_nonnull(strstr(e.msg, "CUDA"));
    }
    ck_assert_int_eq(xf_cost_model_create(NULL, NULL, &m, &e), XF_OK);
    ck_assert_str_eq(xf_cost_model_name(m), xf_cost_default_name());
    xf_cost_model_free(m);
}
END_TEST

START_TEST(measured_cost_cache)
{
    const char *dir = xf_test_tmpdir("measured-cost");
    ck_assert_ptr_nonnull(dir);
    char path[4200];
    snprintf(path, sizeof path, "%s/sub/cost.txt", dir);
    xf_cost_options co = {.cache_path = path, .warmup = 1, .repeats = 3};
    xf_graph *g = elementwise_graph();
    xf_cost_model *m = NULL;
    xf_error e = {0};
    /* On the oracle backend: the measured model does not depend on which
     * optimized backends this build has. */
    ck_assert_msg(xf_cost_model_create("measured:cpu_ref", &co, &m, &e) == XF_OK, "%s", e.msg);
    ck_assert_ptr_nonnull(strstr(xf_cost_model_describe(m), "measured on backend cpu_ref"));
    double first = cost_of(m, g);
    ck_assert_double_gt(first, 0);
    long measured, cached;
    xf_cost_model_stats(m, &measured, &cached);
    /* Mul twice with equal shapes: one measurement, one hit; Add, two Relus
     * (one key), Concat. */
    ck_assert_int_eq(measured, 4);
    ck_assert_int_eq(cached, 2);
    xf_cost_model_free(m);
    ck_assert(xf_test_exists(path));

    ck_assert_msg(xf_cost_model_create("measured:cpu_ref", &co, &m, &e) == XF_OK, "%s", e.msg);
    ck_assert_double_eq_tol(cost_of(m, g), first, 1e-9 * first);
    xf_cost_model_stats(m, &measured, &cached);
    ck_assert_int_eq(measured, 0);
    ck_assert_int_eq(cached, 6);
    xf_cost_model_free(m);
    xf_graph_free(g);
}
END_TEST

/* ------------------------------------------------------------ xflowc */

static int xflowc(const char *args, char **out)
{
    char cmd[9000];
    snprintf(cmd, sizeof cmd, "%s %s", xf_test_tool("xflowc"), args);
    return xf_test_run(cmd, out);
}

/* The "  OP   before -> after" line of xflowc's op table. */
static bool op_counts(const char *out, const char *op, int *before, int *after)
{
    size_t len = strlen(op);
    for (const char *p = strstr(out, "\n  "); p; p = strstr(p + 1, "\n  ")) {
        const char *q = p + 3;
        if (strncmp(q, op, len) == 0 && q[len] == ' ')
            return sscanf(q + len, " %d -> %d", before, after) == 2;
    }
    return false;
}

/* A dim the file leaves symbolic stays symbolic, inputs and outputs, when
 * the optimized graph holds for other sizes: also when a Reshape's shape is
 * computed from it (PyTorch's h.view(h.size(0), 4): Shape -> Gather ->
 * Unsqueeze -> Concat), which canonicalization folds at the size used; a
 * graph fixed to one size (a literal shape [1, 4]) is written at that
 * size, with a warning saying why.  Behind an op that no backend runs (a
 * custom domain's), the dims stay, checked on shapes only, and the output
 * keeps the dims its declaration names. */
START_TEST(xflowc_keeps_symbolic_dims)
{
    const char *dir = xf_test_tmpdir("xflowc-symbolic");
    ck_assert_ptr_nonnull(dir);
    static const int64_t xd[] = {-1, 4}, wd[] = {4, 4}, sd[] = {2}, to[] = {1, 4}, one[] = {1}, zero = 0, four = 4;
    static const float w[16] = {1, 0, 0, 0, 0, 2, 0, 0, 0, 0, 3, 0, 0, 0, 0, 4};
    static const char *const batch[] = {"N", NULL};
    for (int variant = 0; variant < 4; variant++) {
        bool fixed = variant == 1, computed = variant == 2, custom = variant == 3;
        Onnx__GraphProto *g = mk_graph("g");
        PUSH(g->n_input, g->input, mk_vi("x", XF_DT_FLOAT, 2, xd, batch));
        PUSH(g->n_initializer, g->initializer, mk_raw("w", XF_DT_FLOAT, 2, wd, w, sizeof w));
        PUSH(g->n_node, g->node, mk_node("MatMul", "mm", (const char *[]){"x", "w", NULL}, (const char *[]){"h", NULL}));
        if (fixed) { /* a shape written for one batch */
            PUSH(g->n_initializer, g->initializer, mk_raw("s", XF_DT_INT64, 1, sd, to, sizeof to));
        } else if (computed) { /* the batch read off h */
            PUSH(g->n_initializer, g->initializer, mk_raw("zero", XF_DT_INT64, 0, NULL, &zero, sizeof zero));
            PUSH(g->n_initializer, g->initializer, mk_raw("axes", XF_DT_INT64, 1, one, &zero, sizeof zero));
            PUSH(g->n_initializer, g->initializer, mk_raw("four", XF_DT_INT64, 1, one, &four, sizeof four));
            PUSH(g->n_node, g->node,
                 mk_node("Shape", "shape", (const char *[]){"h", NULL}, (const char *[]){"hs", NULL}));
            PUSH(g->n_node, g->node,
                 mk_node("Gather", "n", (const char *[]){"hs", "zero", NULL}, (const char *[]){"n", NULL}));
            PUSH(g->n_node, g->node,
                 mk_node("Unsqueeze", "n1", (const char *[]){"n", "axes", NULL}, (const char *[]){"n1", NULL}));
            Onnx__NodeProto *cat = mk_node("Concat", "cat", (const char *[]){"n1", "four", NULL}, (const char *[]){"s", NULL});
            attr_int(cat, "axis", 0);
            PUSH(g->n_node, g->node, cat);
        }
        if (fixed || computed)
            PUSH(g->n_node, g->node,
                 mk_node("Reshape", "r", (const char *[]){"h", "s", NULL}, (const char *[]){"hr", NULL}));
        PUSH(g->n_node, g->node, mk_node("Relu", "a", (const char *[]){fixed || computed ? "hr" : "h", NULL},
                                         (const char *[]){custom ? "ha" : "y", NULL}));
        if (custom) {
            Onnx__NodeProto *op = mk_node("MyOp", "my", (const char *[]){"ha", NULL}, (const char *[]){"y", NULL});
            op->domain = "my.domain";
            PUSH(g->n_node, g->node, op);
        }
        PUSH(g->n_output, g->output, mk_vi("y", XF_DT_FLOAT, 2, xd, batch));
        char in[4200], args[8600], cmd[9000], *out = NULL;
        snprintf(in, sizeof in, "%s/m%d.onnx", dir, variant);
        Onnx__ModelProto *model = mk_model(g, 13);
        if (custom)
            add_opset(model, "my.domain", 1);
        write_model(model, in);
        snprintf(args, sizeof args, "%s -o %s/o%d.onnx", in, dir, variant);
        ck_assert_msg(xflowc(args, &out) == 0, "%s", out);
        ck_assert_msg(strstr(out, fixed ? "is fixed at the size used for 'x' dim 0 ('N')"
                                        : "symbolic dims kept: 'x' dim 0 ('N') (checked at N 4 and 5)") != NULL,
                      "%s", out);
        if (computed)
            ck_assert_msg(strstr(out, "1 shape constant written without the size") != NULL, "%s", out);
        ck_assert_msg(!strstr(out, "checked on shapes only: the original model does not run here (backend cpu does "
                                   "not support op my.domain:MyOp (node 'my'))") == !custom, "%s", out);
        free(out);
        snprintf(cmd, sizeof cmd,
                 XF_PYTHON " -c \"import onnx, sys; m = onnx.load(sys.argv[1]); onnx.checker.check_model(m); "
                 "d = lambda v: v.type.tensor_type.shape.dim[0]; "
                 "print(*[d(v).dim_param or d(v).dim_value for v in (m.graph.input[0], m.graph.output[0])])\" "
                 "%s/o%d.onnx",
                 dir, variant);
        ck_assert_msg(xf_test_run(cmd, &out) == 0, "%s", out);
        ck_assert_msg(strstr(out, fixed ? "1 1" : "N N") != NULL, "%s", out);
        free(out);
    }
}
END_TEST

START_TEST(xflowc_search_report)
{
    const char *dir = xf_test_tmpdir("xflowc-search");
    ck_assert_ptr_nonnull(dir);
    char args[8400], *out = NULL;
    snprintf(args, sizeof args, "%s/examples/inception_block.onnx -o %s/opt.onnx --check --trace --cost analytic:h100",
             XF_SOURCE_DIR, dir);
    int rc = xflowc(args, &out);
    ck_assert_msg(rc == 0, "%s", out);
    ck_assert_msg(strstr(out, "cost model: analytic:h100") != NULL, "%s", out);
    ck_assert_msg(strstr(out, "estimated cost (analytic:h100)") != NULL, "%s", out);
    ck_assert_msg(strstr(out, "rules applied:") != NULL, "%s", out);
    /* --trace numbers the rewrites. */
    ck_assert_msg(strstr(out, "  1. ") != NULL && strstr(out, "  2. ") != NULL, "%s", out);
    ck_assert_msg(strstr(out, "check: output") != NULL && strstr(out, "ok") != NULL, "%s", out);
    /* Every Conv+Relu pair is fused by canonicalization (the counts are of
     * nodes as written, where a fused Relu is a node again), and
     * convolutions reading the same input merged (Split appears). */
    ck_assert_msg(strstr(out, "7 activations fused into Conv") != NULL, "%s", out);
    int before = 0, after = 0;
    /* (merged convolutions share one fused Relu before their Split) */
    ck_assert_msg(op_counts(out, "Relu", &before, &after) && before == 8 && after >= 1 && after < 8, "%s", out);
    ck_assert_msg(op_counts(out, "Conv", &before, &after) && before == 8 && after < 8, "%s", out);
    ck_assert_msg(op_counts(out, "Split", &before, &after) && before == 0 && after > 0, "%s", out);
    free(out);
    /* What it wrote (merged convs, Split with sizes) is valid ONNX. */
    char cmd[8600];
    snprintf(cmd, sizeof cmd, XF_PYTHON " %s/tests/onnx_check.py %s/opt.onnx", XF_SOURCE_DIR, dir);
    ck_assert_msg(xf_test_run(cmd, &out) == 0, "%s", out);
    free(out);

    snprintf(args, sizeof args, "%s/examples/inception_block.onnx -o %s/opt.onnx --cost analytic:tpu", XF_SOURCE_DIR,
             dir);
    ck_assert_int_ne(xflowc(args, &out), 0);
    ck_assert_msg(strstr(out, "analytic:tpu") != NULL, "%s", out);
    free(out);
}
END_TEST

/* A float16 model (the bundled example converted) is optimized as the
 * float32 one is, and --check compares its outputs to float16 precision. */
START_TEST(xflowc_float16_model)
{
    const char *dir = xf_test_tmpdir("xflowc-float16");
    ck_assert_ptr_nonnull(dir);
    char cmd[8600], args[8400], *out = NULL;
    snprintf(cmd, sizeof cmd, XF_PYTHON " %s/tests/to_float16.py %s/examples/inception_block.onnx %s/half.onnx",
             XF_SOURCE_DIR, XF_SOURCE_DIR, dir);
    ck_assert_msg(xf_test_run(cmd, &out) == 0, "%s", out);
    free(out);
    snprintf(args, sizeof args, "%s/half.onnx -o %s/opt.onnx --check --cost analytic:h100", dir, dir);
    ck_assert_msg(xflowc(args, &out) == 0, "%s", out);
    ck_assert_msg(strstr(out, "7 activations fused into Conv") != NULL, "%s", out);
    int before = 0, after = 0;
    ck_assert_msg(op_counts(out, "Conv", &before, &after) && before == 8 && after < 8, "%s", out);
    ck_assert_msg(strstr(out, "rtol 0.01: FLOAT16 outputs are at most") != NULL && strstr(out, "  ok") != NULL, "%s",
                  out);
    free(out);
    snprintf(cmd, sizeof cmd, XF_PYTHON " %s/tests/onnx_check.py %s/opt.onnx", XF_SOURCE_DIR, dir);
    ck_assert_msg(xf_test_run(cmd, &out) == 0, "%s", out);
    free(out);
}
END_TEST

START_TEST(xflowc_rules_file)
{
    const char *dir = xf_test_tmpdir("xflowc-rules");
    ck_assert_ptr_nonnull(dir);
    char path[4200], args[8600], *out = NULL;
    /* A library of one rule, written by the library writer. */
    xf_library *lib = xf_library_create();
    xf_error e = {0};
    ck_assert_int_eq(xf_library_add(lib, rule_factor_mul(), &e), XF_OK);
    snprintf(path, sizeof path, "%s/one.rules", dir);
    ck_assert_msg(xf_library_save(lib, path, &e) == XF_OK, "%s", e.msg);
    xf_library_free(lib);
    snprintf(args, sizeof args, "%s/examples/inception_block.onnx -o %s/opt.onnx --rules %s", XF_SOURCE_DIR, dir,
             path);
    int rc = xflowc(args, &out);
    ck_assert_msg(rc == 0, "%s", out);
    ck_assert_msg(strstr(out, "rules: 1 from") != NULL, "%s", out);
    free(out);

    /* A malformed library is an error naming the file and line. */
    snprintf(path, sizeof path, "%s/bad.rules", dir);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs("xflow-library 1\nthis is not a rule\n", f);
    fclose(f);
    snprintf(args, sizeof args, "%s/examples/inception_block.onnx -o %s/opt2.onnx --rules %s", XF_SOURCE_DIR, dir,
             path);
    ck_assert_int_ne(xflowc(args, &out), 0);
    ck_assert_msg(strstr(out, "bad.rules:2") != NULL, "%s", out);
    snprintf(path, sizeof path, "%s/opt2.onnx", dir);
    ck_assert(!xf_test_exists(path));
    free(out);
}
END_TEST

/* The library's rules and the built-in ones, as xflowc loads them. */
typedef struct library_rules {
    xf_library *lib;
    xf_rule **builtin;
    int n_builtin;
    xf_rule_set *rs;
} library_rules;

static void library_rules_make(library_rules *r)
{
    xf_error e = {0};
    ck_assert_msg(xf_library_load(XF_SOURCE_DIR "/rules/xflow.rules", &r->lib, &e) == XF_OK, "%s", e.msg);
    ck_assert_msg(xf_builtin_rules(&r->builtin, &r->n_builtin, &e) == XF_OK, "%s", e.msg);
    int n = 0;
    xf_rule **all = calloc((size_t)(r->lib->n_rules + r->n_builtin), sizeof *all);
    ck_assert_ptr_nonnull(all);
    for (int i = 0; i < r->lib->n_rules; i++)
        all[n++] = r->lib->rules[i];
    for (int i = 0; i < r->n_builtin; i++)
        all[n++] = r->builtin[i];
    ck_assert_msg(xf_rule_set_create((const xf_rule *const *)all, n, &r->rs, &e) == XF_OK, "%s", e.msg);
    free(all);
}

static void library_rules_free(library_rules *r)
{
    xf_rule_set_free(r->rs);
    for (int i = 0; i < r->n_builtin; i++)
        xf_rule_free(r->builtin[i]);
    free(r->builtin);
    xf_library_free(r->lib);
}

typedef struct match_vec {
    xf_match *m;
    int n, cap;
} match_vec;

static bool match_push(const xf_match *m, void *user)
{
    match_vec *v = user;
    if (v->n == v->cap) {
        v->cap = v->cap ? 2 * v->cap : 64;
        v->m = realloc(v->m, sizeof *v->m * (size_t)v->cap);
        ck_assert_ptr_nonnull(v->m);
    }
    v->m[v->n++] = *m;
    return true;
}

typedef struct hash_check_counts {
    int hashed, cycles, refused;
    int priced;           /* rewrites priced before building, checked */
    int priced_folded;    /* ... of which read a value computed from constants */
    long matches_carried; /* matches found after a rewrite, checked */
} hash_check_counts;

static bool same_match(const xf_match *a, const xf_match *b)
{
    if (a->rule != b->rule || a->n_nodes != b->n_nodes || a->n_inputs != b->n_inputs || a->n_params != b->n_params)
        return false;
    for (int i = 0; i < a->n_nodes; i++)
        if (a->node[i] != b->node[i])
            return false;
    for (int i = 0; i < a->n_inputs; i++)
        if (a->input[i] != b->input[i])
            return false;
    for (int i = 0; i < a->n_params; i++)
        if (a->param[i] != b->param[i])
            return false;
    return true;
}

/* The matches in h worked out from those in the graph it was rewritten
 * from equal xf_match_each's, in the same order. */
static void check_matches_after(const xf_rule_set *rs, const match_reach *reach, const xf_graph *h,
                                const match_vec *old, const rewrite_delta *d, hash_check_counts *n)
{
    xf_error e = {0};
    match_vec full = {0};
    ck_assert_msg(xf_match_each(rs, -1, h, match_push, &full, &e) == XF_OK, "%s", e.msg);
    graph_index gi;
    ck_assert_msg(opt_index_build(h, &gi, &e) == XF_OK, "%s", e.msg);
    xf_match *inc = NULL;
    int n_inc = 0;
    ck_assert_msg(opt_match_after_rewrite(rs, reach, h, &gi, old->m, old->n, d, &inc, &n_inc, &e) == XF_OK, "%s",
                  e.msg);
    ck_assert_int_eq(n_inc, full.n);
    for (int k = 0; k < n_inc; k++)
        ck_assert_msg(same_match(&inc[k], &full.m[k]), "match %d of %d differs (rule %d / %d)", k, n_inc, inc[k].rule,
                      full.m[k].rule);
    n->matches_carried += n_inc;
    free(inc);
    free(full.m);
    opt_index_free(&gi);
}

/* Whether a match reads a value computed from constants by nodes (a new
 * weight a rewrite made, folded only when the final graph is written), or
 * covers a node that does. */
static bool reads_folded(const xf_graph *g, const bool *konst, const xf_match *m)
{
    bool folded = false;
    for (int k = 0; k < m->n_inputs; k++)
        folded |= konst[m->input[k]] && !opt_is_const(g, m->input[k]);
    for (int i = 0; i < m->n_nodes; i++) {
        const xf_node *n = &g->nodes[m->node[i]];
        for (int k = 0; k < n->n_inputs; k++)
            folded |= n->inputs[k] >= 0 && konst[n->inputs[k]] && !opt_is_const(g, n->inputs[k]);
    }
    return folded;
}

/* Every rewrite of g: the hash worked out before building equals the hash
 * of the graph built, which equals xf_rewrite_apply's; a rewrite refused
 * for a cycle fails to build too; the cost worked out before building
 * (when it can be) equals the built graph's.  Returns one of the built graphs, picked
 * by pick (NULL when none). */
static xf_graph *check_rewrite_hashes(const xf_rule_set *rs, const xf_graph *g, uint64_t pick, hash_check_counts *n)
{
    xf_error e = {0};
    match_vec mv = {0};
    ck_assert_msg(xf_match_each(rs, -1, g, match_push, &mv, &e) == XF_OK, "%s", e.msg);
    match_reach reach;
    ck_assert_msg(opt_match_reach_make(rs, &reach, &e) == XF_OK, "%s", e.msg);
    rewrite_base b;
    ck_assert_msg(opt_rewrite_base_init(g, true, &b, &e) == XF_OK, "%s", e.msg);
    ck_assert_uint_eq(b.h.graph, xf_graph_hash(g));
    xf_cost_model *cm = cost_model(pick % 2 ? "analytic:h100" : "analytic:cpu");
    double base_cost = cost_of(cm, g);
    bool *konst = malloc(sizeof *konst * (size_t)(g->n_values + 1));
    ck_assert_ptr_nonnull(konst);
    opt_compile_time_values(g, konst);
    xf_graph *picked = NULL;
    int n_built = 0;
    for (int k = 0; k < mv.n; k++) {
        rewrite_plan rp;
        xf_graph *built = NULL, *applied = NULL;
        uint64_t h = 0;
        xf_status st = opt_rewrite_plan(rs, &b, OPSET, &mv.m[k], &rp, &e);
        xf_status ast = xf_rewrite_apply(rs, g, OPSET, &mv.m[k], &applied, &e);
        if (st != XF_OK) {
            ck_assert_int_eq(st, XF_ERR_INVALID);
            ck_assert_int_eq(ast, XF_ERR_INVALID);
            n->refused++;
            continue;
        }
        xf_status hst = opt_rewrite_hash(&b, &rp, &h, &e);
        double price = 0;
        bool known = false;
        ck_assert_msg(opt_rewrite_price(cm, OPSET, &b, konst, base_cost, &rp, &price, &known, &e) == XF_OK, "%s", e.msg);
        rewrite_delta d = {0};
        xf_status bst = opt_rewrite_build(&b, &rp, &built, &d, &e);
        opt_rewrite_plan_free(&rp);
        ck_assert_int_eq(bst, ast);
        if (hst != XF_OK) {
            ck_assert_int_eq(hst, XF_ERR_INVALID);
            ck_assert_int_eq(bst, XF_ERR_INVALID);
            n->cycles++;
            continue;
        }
        ck_assert_msg(bst == XF_OK, "%s", e.msg);
        validate_ok(built);
        ck_assert_uint_eq(xf_graph_hash(built), h);
        ck_assert_uint_eq(xf_graph_hash(applied), h);
        n->hashed++;
        check_matches_after(rs, &reach, built, &mv, &d, n);
        if (known) {
            double exact = cost_of(cm, built);
            ck_assert_msg(fabs(price - exact) <= 1e-12 * exact, "priced %.17g, costed %.17g", price, exact);
            n->priced++;
            n->priced_folded += reads_folded(g, konst, &mv.m[k]);
        }
        opt_rewrite_delta_free(&d);
        xf_graph_free(applied);
        if (!picked || pick % (uint64_t)++n_built == 0) {
            xf_graph_free(picked);
            picked = built;
        } else {
            xf_graph_free(built);
        }
    }
    /* The work space is left as it was found. */
    for (int v = 0; v < g->n_values; v++)
        ck_assert_uint_eq(b.vh[v], b.h.value[v]);
    opt_rewrite_base_free(&b);
    opt_match_reach_free(&reach);
    xf_cost_model_free(cm);
    free(konst);
    free(mv.m);
    return picked;
}

/* Checks the rewrites of g, of one of the graphs they make, and so on,
 * depth graphs deep (reaching graphs with rewrites' new nodes and
 * constants); frees g. */
static void walk_rewrites(const xf_rule_set *rs, xf_graph *g, int depth, uint64_t seed, hash_check_counts *n)
{
    for (int d = 0; d < depth && g; d++) {
        xf_graph *next = check_rewrite_hashes(rs, g, seed + (uint64_t)d, n);
        xf_graph_free(g);
        g = next;
    }
    xf_graph_free(g);
}

/* A canonicalized copy of m's graph, as xflowc searches it; frees m. */
static xf_graph *canonical_graph(xf_model *m)
{
    xf_canon_stats st = {0};
    xf_error e = {0};
    ck_assert_msg(xf_canonicalize(m->graph, OPSET, xf_runtime_eval_node, &st, &e) == XF_OK, "%s", e.msg);
    xf_graph *g = xf_graph_clone(m->graph);
    ck_assert_ptr_nonnull(g);
    xf_model_free(m);
    return g;
}

START_TEST(rewrites_hashed_and_matched_from_the_parent)
{
    library_rules lr;
    library_rules_make(&lr);
    all_rules ar;
    all_rules_make(&ar);
    hash_check_counts n = {0};
    xf_error e = {0};
    for (uint64_t seed = 1; seed <= 12; seed++) {
        xf_model *m = NULL;
        ck_assert_msg(xf_random_model(seed, 20, &m, &e) == XF_OK, "%s", e.msg);
        walk_rewrites(lr.rs, canonical_graph(m), 4, seed * 7, &n);
    }
    /* Benchmark models (at small input sizes: the graphs are the same). */
    const struct {
        const char *name;
        int size, depth;
    } zoo[] = {{"inception-block", 28, 3}, {"squeezenet", 64, 3}, {"nasnet-a", 32, 2}};
    for (size_t z = 0; z < sizeof zoo / sizeof zoo[0]; z++) {
        xf_model *m = NULL;
        ck_assert_msg(xf_zoo_build_sized(zoo[z].name, 1, zoo[z].size, &m, &e) == XF_OK, "%s", e.msg);
        walk_rewrites(lr.rs, canonical_graph(m), zoo[z].depth, z * 5, &n);
    }
    walk_rewrites(ar.rs, elementwise_graph(), 4, 0, &n);
    walk_rewrites(ar.rs, branches_graph(), 4, 0, &n);
    ck_assert_msg(n.hashed >= 100, "only %d rewrites checked", n.hashed);
    ck_assert_msg(n.matches_carried >= 1000, "only %ld matches after rewrites checked", n.matches_carried);
    /* Rewrites are priced before building, rewrites of new weights that
     * are still nodes over constants (NasNet-A's merged and enlarged
     * kernels) included, unless a replacement changes whether a value is
     * known before the run (rare). */
    ck_assert_msg(n.priced >= n.hashed - n.hashed / 20, "only %d of %d rewrites priced", n.priced, n.hashed);
    ck_assert_msg(n.priced_folded >= 10, "only %d rewrites reading folded weights priced", n.priced_folded);
    ck_assert_int_eq(n.cycles, 0);
    walk_rewrites(ar.rs, cycle_graph(), 1, 0, &n);
    ck_assert_int_gt(n.cycles, 0);
    all_rules_free(&ar);
    library_rules_free(&lr);
}
END_TEST

/* The committed library's constant rules at work: on 16 channels (the
 * rules were found on 2), a residual add folded into the kernel (identity
 * kernel), an input concatenated with its 1x1 convolution (identity
 * kernel beside the weights), and an average pool beside a convolution
 * (pooling kernel beside the weights) each become one Conv.  The same in
 * float16 (the library's float rules match it, with float16 constants). */
START_TEST(library_constants_in_search)
{
    library_rules lr;
    library_rules_make(&lr);
    xf_cost_model *cm = cost_model("analytic:h100");
    for (int form = 0; form < 6; form++) {
        xf_dtype dt = form < 3 ? XF_DT_FLOAT : XF_DT_FLOAT16;
        xf_graph *g = xf_graph_create("g");
        int x = input(g, "x", dt, SHAPE(1, 16, 9, 9));
        int64_t k = form % 3 == 1 ? 1 : 3;
        int c = NODE(g, XF_OP_CONV, x,
                     random_weight_as(g, SHAPE(form % 3 == 1 ? 8 : 16, 16, k, k), 21 + (uint64_t)(form % 3), dt));
        conv_attrs(g, c, k);
        int y;
        if (form % 3 == 0) {
            y = NODE(g, XF_OP_ADD, x, out0(g, c));
        } else {
            int other = x;
            if (form % 3 == 2) {
                int p = NODE(g, XF_OP_AVERAGE_POOL, x);
                xf_attrs *a = attrs(g, p);
                a->n_spatial = 2;
                a->kernel[0] = a->kernel[1] = 3;
                a->pads[0] = a->pads[1] = a->pads[2] = a->pads[3] = 1;
                a->count_include_pad = 1;
                other = out0(g, p);
            }
            y = form % 3 == 1 ? NODE(g, XF_OP_CONCAT, x, out0(g, c)) : NODE(g, XF_OP_CONCAT, out0(g, c), other);
            attrs(g, y)->axis = 1;
        }
        xf_graph_add_output(g, out0(g, y));
        infer_ok(g, OPSET);
        xf_search_result res;
        search_default(g, lr.rs, cm, &res);
        ck_assert_int_ge(res.n_steps, 1);
        ck_assert_ptr_nonnull(xf_rule_set_rule(lr.rs, res.steps[0].rule)->consts);
        xf_canon_stats st = {0};
        xf_error e = {0};
        ck_assert_msg(xf_canonicalize(res.best, OPSET, xf_runtime_eval_node, &st, &e) == XF_OK, "%s", e.msg);
        ck_assert_msg(res.best->n_nodes == 1 && res.best->nodes[0].op == XF_OP_CONV, "form %d: %d nodes", form,
                      res.best->n_nodes);
        const xf_tensor *w = res.best->values[res.best->nodes[0].inputs[1]].init;
        ck_assert_ptr_nonnull(w);
        ck_assert_int_eq(w->dtype, dt);
        /* float16 rounds each op's result: the two graphs round apart */
        expect_same_function_within(g, res.best, dt == XF_DT_FLOAT ? 1e-5 : 2e-2, dt == XF_DT_FLOAT ? 1e-4 : 1e-2);
        xf_search_result_free(&res);
        xf_graph_free(g);
    }
    xf_cost_model_free(cm);
    library_rules_free(&lr);
}
END_TEST

/* The committed library moves a stride through pointwise ops: a 3x3 conv
 * at stride 1 whose output only a stride-2 1x1 conv reads is computed at
 * stride 2 instead, a quarter of its work. */
START_TEST(library_moves_strides)
{
    library_rules lr;
    library_rules_make(&lr);
    xf_cost_model *cm = cost_model("analytic:h100");
    xf_graph *g = xf_graph_create("g");
    int x = input(g, "x", XF_DT_FLOAT, SHAPE(1, 16, 16, 16));
    int c3 = conv(g, x, random_weight(g, SHAPE(16, 16, 3, 3), 31), 3);
    attrs(g, c3)->activation = XF_ACT_RELU;
    int c1 = conv(g, out0(g, c3), random_weight(g, SHAPE(32, 16, 1, 1), 32), 1);
    attrs(g, c1)->strides[0] = attrs(g, c1)->strides[1] = 2;
    xf_graph_add_output(g, out0(g, c1));
    infer_ok(g, OPSET);
    xf_search_result res;
    search_default(g, lr.rs, cm, &res);
    ck_assert_int_ge(res.n_steps, 1);
    ck_assert(res.cost_after < res.cost_before);
    bool moved = false;
    for (int i = 0; i < res.best->n_nodes; i++) {
        const xf_node *n = &res.best->nodes[i];
        if (n->op == XF_OP_CONV && n->attrs.kernel[0] == 3)
            moved = n->attrs.strides[0] == 2 && n->attrs.strides[1] == 2;
    }
    ck_assert_msg(moved, "the 3x3 conv kept stride 1");
    expect_same_function(g, res.best);
    xf_search_result_free(&res);
    xf_graph_free(g);
    xf_cost_model_free(cm);
    library_rules_free(&lr);
}
END_TEST

static Suite *search_suite(void)
{
    Suite *s = suite_create("search");
    TCase *t = tcase_create("search");
    tcase_add_test(t, search_matches_exhaustive);
    tcase_add_test(t, budget_and_time_limit);
    tcase_add_test(t, rewrites_hashed_and_matched_from_the_parent);
    tcase_add_test(t, library_constants_in_search);
    tcase_add_test(t, library_moves_strides);
    suite_add_tcase(s, t);
    TCase *c = tcase_create("cost");
    tcase_add_test(c, analytic_costs);
    tcase_add_test(c, cost_model_names);
    tcase_add_test(c, measured_cost_cache);
    suite_add_tcase(s, c);
    TCase *x = tcase_create("xflowc");
    tcase_add_test(x, xflowc_search_report);
    tcase_add_test(x, xflowc_keeps_symbolic_dims);
    tcase_add_test(x, xflowc_float16_model);
    tcase_add_test(x, xflowc_rules_file);
    suite_add_tcase(s, x);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(search_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
