/* Check suite for the generator: exact fingerprints of known identities and
 * non-identities, and the pipeline's pruning, generalization and
 * determinism (at max ops 2, which runs in a fraction of a second). */
#include "core_builders.h"
#include "gen_internal.h"
#include "xf_generator.h"
#include "xf_rule.h"
#include "xf_test_util.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SEED 12345

/* Fingerprint of a single-output graph. */
static uint64_t fp1(const xf_graph *g)
{
    uint64_t fp = 0;
    xf_error e = {0};
    xf_status st = xf_gen_fingerprint_graph(g, SEED, &fp, &e);
    ck_assert_msg(st == XF_OK, "fingerprint failed: %s", e.msg);
    return fp;
}

/* Both sides of an identity are built on fresh graphs with the same inputs. */
typedef struct pair {
    xf_graph *l, *r;
} pair;

static pair pair_create(int n, const char *const *names, const xf_shape *shapes)
{
    pair p = {xf_graph_create("l"), xf_graph_create("r")};
    for (int k = 0; k < n; k++) {
        input(p.l, names[k], XF_DT_FLOAT, shapes[k]);
        input(p.r, names[k], XF_DT_FLOAT, shapes[k]);
    }
    return p;
}

static void pair_free(pair *p)
{
    xf_graph_free(p->l);
    xf_graph_free(p->r);
}

static void finish(xf_graph *g, int node)
{
    xf_graph_add_output(g, out0(g, node));
    infer_ok(g, 17);
}

/* Same-padded stride-1 conv. */
static int conv(xf_graph *g, int x, int w, int64_t kh, int64_t kw)
{
    int c = NODE(g, XF_OP_CONV, x, w);
    xf_attrs *a = attrs(g, c);
    a->n_spatial = 2;
    a->kernel[0] = kh;
    a->kernel[1] = kw;
    a->pads[0] = a->pads[2] = (kh - 1) / 2;
    a->pads[1] = a->pads[3] = (kw - 1) / 2;
    return c;
}

static int concat(xf_graph *g, int a, int b, int axis)
{
    int c = NODE(g, XF_OP_CONCAT, a, b);
    attrs(g, c)->axis = axis;
    return c;
}

/* ------------------------------------------------------------ identities */

START_TEST(identity_matmul_associative)
{
    /* Non-square shapes: the law is not an accident of the pool's shapes. */
    pair p = pair_create(3, (const char *[]){"a", "b", "c"},
                         (xf_shape[]){SHAPE(3, 4), SHAPE(4, 5), SHAPE(5, 2)});
    int ab = NODE(p.l, XF_OP_MATMUL, 0, 1);
    finish(p.l, NODE(p.l, XF_OP_MATMUL, out0(p.l, ab), 2));
    int bc = NODE(p.r, XF_OP_MATMUL, 1, 2);
    finish(p.r, NODE(p.r, XF_OP_MATMUL, 0, out0(p.r, bc)));
    ck_assert_uint_eq(fp1(p.l), fp1(p.r));
    pair_free(&p);
}
END_TEST

START_TEST(identity_conv_linear_in_each_argument)
{
    for (int arg = 0; arg < 2; arg++) {
        /* inputs: x1, x2 (activations), w1, w2 (kernels) */
        pair p = pair_create(4, (const char *[]){"x1", "x2", "w1", "w2"},
                             (xf_shape[]){SHAPE(2, 3, 5, 5), SHAPE(2, 3, 5, 5), SHAPE(4, 3, 3, 3), SHAPE(4, 3, 3, 3)});
        int a = arg == 0 ? 0 : 2, b = arg == 0 ? 1 : 3; /* the summed argument */
        int sum = NODE(p.l, XF_OP_ADD, a, b);
        finish(p.l, arg == 0 ? conv(p.l, out0(p.l, sum), 2, 3, 3) : conv(p.l, 0, out0(p.l, sum), 3, 3));
        int c1 = conv(p.r, 0, 2, 3, 3);
        int c2 = arg == 0 ? conv(p.r, 1, 2, 3, 3) : conv(p.r, 0, 3, 3, 3);
        finish(p.r, NODE(p.r, XF_OP_ADD, out0(p.r, c1), out0(p.r, c2)));
        ck_assert_msg(fp1(p.l) == fp1(p.r), "conv is not linear in argument %d", arg);
        pair_free(&p);
    }
}
END_TEST

START_TEST(identity_concat_of_convs)
{
    pair p = pair_create(3, (const char *[]){"x", "w1", "w2"},
                         (xf_shape[]){SHAPE(2, 3, 5, 5), SHAPE(4, 3, 1, 3), SHAPE(2, 3, 1, 3)});
    int c1 = conv(p.l, 0, 1, 1, 3), c2 = conv(p.l, 0, 2, 1, 3);
    finish(p.l, concat(p.l, out0(p.l, c1), out0(p.l, c2), 1));
    int w = concat(p.r, 1, 2, 0);
    finish(p.r, conv(p.r, 0, out0(p.r, w), 1, 3));
    ck_assert_uint_eq(fp1(p.l), fp1(p.r));
    pair_free(&p);
}
END_TEST

START_TEST(identity_transpose_of_product)
{
    pair p = pair_create(2, (const char *[]){"a", "b"}, (xf_shape[]){SHAPE(3, 4), SHAPE(4, 6)});
    int ab = NODE(p.l, XF_OP_MATMUL, 0, 1);
    finish(p.l, NODE(p.l, XF_OP_TRANSPOSE, out0(p.l, ab)));
    int bt = NODE(p.r, XF_OP_TRANSPOSE, 1), at = NODE(p.r, XF_OP_TRANSPOSE, 0);
    finish(p.r, NODE(p.r, XF_OP_MATMUL, out0(p.r, bt), out0(p.r, at)));
    ck_assert_uint_eq(fp1(p.l), fp1(p.r));
    pair_free(&p);
}
END_TEST

START_TEST(identity_conv_with_identity_kernel)
{
    enum { C = 3 };
    float kernel[C * C * 9] = {0};
    for (int c = 0; c < C; c++)
        kernel[(c * C + c) * 9 + 4] = 1; /* centre tap of channel c onto itself */
    xf_graph *l = xf_graph_create("l"), *r = xf_graph_create("r");
    input(l, "x", XF_DT_FLOAT, SHAPE(2, C, 5, 5));
    input(r, "x", XF_DT_FLOAT, SHAPE(2, C, 5, 5));
    int id = constant(l, "identity", XF_DT_FLOAT, SHAPE(C, C, 3, 3), kernel);
    finish(l, conv(l, 0, id, 3, 3));
    xf_graph_add_output(r, 0); /* the input itself */
    ck_assert_uint_eq(fp1(l), fp1(r));
    /* A kernel that is not the identity does not collide. */
    kernel[4] = 2;
    xf_graph *l2 = xf_graph_create("l2");
    input(l2, "x", XF_DT_FLOAT, SHAPE(2, C, 5, 5));
    int id2 = constant(l2, "not_identity", XF_DT_FLOAT, SHAPE(C, C, 3, 3), kernel);
    finish(l2, conv(l2, 0, id2, 3, 3));
    ck_assert_uint_ne(fp1(l2), fp1(r));
    xf_graph_free(l);
    xf_graph_free(l2);
    xf_graph_free(r);
}
END_TEST

/* ------------------------------------------------------------ non-identities */

START_TEST(non_identity_matmul_commutative)
{
    pair p = pair_create(2, (const char *[]){"a", "b"}, (xf_shape[]){SHAPE(4, 4), SHAPE(4, 4)});
    finish(p.l, NODE(p.l, XF_OP_MATMUL, 0, 1));
    finish(p.r, NODE(p.r, XF_OP_MATMUL, 1, 0));
    ck_assert_uint_ne(fp1(p.l), fp1(p.r));
    pair_free(&p);
}
END_TEST

START_TEST(non_identity_relu_additive)
{
    pair p = pair_create(2, (const char *[]){"a", "b"}, (xf_shape[]){SHAPE(4, 4), SHAPE(4, 4)});
    int s = NODE(p.l, XF_OP_ADD, 0, 1);
    finish(p.l, NODE(p.l, XF_OP_RELU, out0(p.l, s)));
    int ra = NODE(p.r, XF_OP_RELU, 0), rb = NODE(p.r, XF_OP_RELU, 1);
    finish(p.r, NODE(p.r, XF_OP_ADD, out0(p.r, ra), out0(p.r, rb)));
    ck_assert_uint_ne(fp1(p.l), fp1(p.r));
    pair_free(&p);
}
END_TEST

START_TEST(non_identity_maxpool_relu_order)
{
    /* maxpool(relu(x)) = relu(maxpool(x)) holds, maxpool(relu(x)) = maxpool(x)
     * does not: the random order must tell them apart. */
    xf_graph *g[3];
    for (int i = 0; i < 3; i++) {
        g[i] = xf_graph_create("g");
        input(g[i], "x", XF_DT_FLOAT, SHAPE(2, 2, 4, 4));
    }
    int r0 = NODE(g[0], XF_OP_RELU, 0);
    int p0 = NODE(g[0], XF_OP_MAX_POOL, out0(g[0], r0));
    int p1 = NODE(g[1], XF_OP_MAX_POOL, 0);
    int r1 = NODE(g[1], XF_OP_RELU, out0(g[1], p1));
    int p2 = NODE(g[2], XF_OP_MAX_POOL, 0);
    int pools[3] = {p0, p1, p2};
    for (int i = 0; i < 3; i++) {
        xf_attrs *a = attrs(g[i], pools[i]);
        a->n_spatial = 2;
        a->kernel[0] = a->kernel[1] = 3;
        a->pads[0] = a->pads[1] = a->pads[2] = a->pads[3] = 1;
    }
    finish(g[0], p0);
    finish(g[1], r1);
    finish(g[2], p2);
    ck_assert_uint_eq(fp1(g[0]), fp1(g[1]));
    ck_assert_uint_ne(fp1(g[0]), fp1(g[2]));
    for (int i = 0; i < 3; i++)
        xf_graph_free(g[i]);
}
END_TEST

/* Candidates are checked anew under other models (orders, floors, random
 * functions) and inputs.  A collision seen at four ops with stride 2
 * (max pooling of relu(x) against max pooling of x, read only through
 * Relu outputs of 16 elements) differs there; true laws (a stride moved
 * through a 1x1 conv, pooling as a conv with the pooling kernel) agree in
 * every round. */
static const char recheck_rules[] =
    "xflow-library 1\ngenerator t\nop-set Conv\nmax-ops 4\nseed 1\nopset 17\nrules 3\n"
    "rule collision\nproved no\n"
    "input x FLOAT 2x2x4x4\ninput w FLOAT 2x2x3x3\ninput k FLOAT 2x2x1x1\n"
    "pattern\n"
    "  %0 = Relu(x)\n"
    "  %1 = MaxPool(%0) kernel=3,3 strides=1,1 pads=1,1,1,1 dilations=1,1\n"
    "  %2 = Conv(%1, w) kernel=3,3 strides=2,2 pads=1,1,1,1 dilations=1,1 activation=relu\n"
    "  %3 = Conv(%2, k) kernel=1,1 strides=1,1 pads=0,0,0,0 dilations=1,1 activation=relu\n"
    "  output %3\n"
    "replacement\n"
    "  %0 = MaxPool(x) kernel=3,3 strides=1,1 pads=1,1,1,1 dilations=1,1\n"
    "  %1 = Conv(%0, w) kernel=3,3 strides=2,2 pads=1,1,1,1 dilations=1,1 activation=relu\n"
    "  %2 = Conv(%1, k) kernel=1,1 strides=1,1 pads=0,0,0,0 dilations=1,1 activation=relu\n"
    "  output %2\n"
    "end\n"
    "rule stride\nproved no\n"
    "input x FLOAT 2x2x4x4\ninput w FLOAT 2x2x3x3\ninput k FLOAT 2x2x1x1\n"
    "pattern\n"
    "  %0 = Conv(x, w) kernel=3,3 strides=1,1 pads=1,1,1,1 dilations=1,1 activation=relu\n"
    "  %1 = Conv(%0, k) kernel=1,1 strides=2,2 pads=0,0,0,0 dilations=1,1 activation=relu\n"
    "  output %1\n"
    "replacement\n"
    "  %0 = Conv(x, w) kernel=3,3 strides=2,2 pads=1,1,1,1 dilations=1,1 activation=relu\n"
    "  %1 = Conv(%0, k) kernel=1,1 strides=1,1 pads=0,0,0,0 dilations=1,1 activation=relu\n"
    "  output %1\n"
    "end\n"
    "rule pooling\nproved no\n"
    "input x FLOAT 2x2x4x4\n"
    "const u pool_kernel FLOAT 2x2x3x3 = x[1], x[1], 3, 3\n"
    "pattern\n"
    "  %0 = AveragePool(x) kernel=3,3 strides=1,1 pads=1,1,1,1 dilations=1,1 count_include_pad=1\n"
    "  output %0\n"
    "replacement\n"
    "  %0 = Conv(x, u) kernel=3,3 strides=1,1 pads=1,1,1,1 dilations=1,1\n"
    "  output %0\n"
    "end\n";

START_TEST(recheck_models_separate_collisions)
{
    xf_library *lib = xf_test_library(recheck_rules);
    xf_error e = {0};
    for (int i = 0; i < lib->n_rules; i++) {
        const xf_rule *r = lib->rules[i];
        int rounds_equal = 0;
        for (int round = 1; round <= 4; round++) {
            uint64_t fp, fq;
            uint64_t seed = SEED + (uint64_t)round;
            ck_assert_msg(gen_fingerprint_graph(r->pattern, seed, GEN_TRIALS * round, &fp, &e) == XF_OK, "%s", e.msg);
            ck_assert_msg(gen_fingerprint_graph(r->replacement, seed, GEN_TRIALS * round, &fq, &e) == XF_OK, "%s",
                          e.msg);
            rounds_equal += fp == fq;
        }
        if (i == 0)
            ck_assert_msg(rounds_equal < 4, "the collision agrees in every round");
        else
            ck_assert_msg(rounds_equal == 4, "%s: true law differs in %d rounds", r->name, 4 - rounds_equal);
    }
    xf_library_free(lib);
}
END_TEST

START_TEST(fingerprint_refuses_unknown_semantics)
{
    xf_graph *g = xf_graph_create("g");
    input(g, "x", XF_DT_FLOAT, SHAPE(4, 4));
    finish(g, NODE(g, XF_OP_EXP, 0));
    uint64_t fp;
    xf_error e = {0};
    ck_assert_int_eq(xf_gen_fingerprint_graph(g, SEED, &fp, &e), XF_ERR_UNSUPPORTED);
    ck_assert_ptr_nonnull(strstr(e.msg, "Exp"));
    xf_graph_free(g);
}
END_TEST

/* ------------------------------------------------------------ the pipeline */

static xf_library *generate(int threads, uint64_t seed, xf_gen_stats *st)
{
    xf_gen_options opt = {.max_ops = 2, .seed = seed, .threads = threads};
    xf_library *lib = NULL;
    xf_error e = {0};
    ck_assert_msg(xf_generate(&opt, &lib, st, &e) == XF_OK, "generate failed: %s", e.msg);
    return lib;
}

static char *format(const xf_library *lib)
{
    char *text = NULL;
    xf_error e = {0};
    ck_assert_msg(xf_library_format(lib, &text, NULL, &e) == XF_OK, "format failed: %s", e.msg);
    return text;
}

START_TEST(pipeline_deterministic_across_threads)
{
    xf_gen_stats s1, s3;
    xf_library *a = generate(1, 7, &s1), *b = generate(3, 7, &s3);
    char *ta = format(a), *tb = format(b);
    ck_assert_str_eq(ta, tb);
    ck_assert_int_eq(s1.graphs, s3.graphs);
    ck_assert_int_eq(s1.candidates, s3.candidates);
    xf_library *c = generate(2, 8, NULL);
    char *tc = format(c);
    ck_assert_str_ne(ta, tc); /* the seed is in the header and the fingerprints */
    ck_assert_int_eq(c->n_rules, a->n_rules); /* but the laws found do not depend on it */
    free(ta);
    free(tb);
    free(tc);
    xf_library_free(a);
    xf_library_free(b);
    xf_library_free(c);
}
END_TEST

/* Finds a rule whose pattern and replacement have these op sequences. */
static const xf_rule *find_rule(const xf_library *lib, const xf_op *pat, int np, const xf_op *rep, int nr)
{
    for (int i = 0; i < lib->n_rules; i++) {
        const xf_rule *r = lib->rules[i];
        if (r->pattern->n_nodes != np || r->replacement->n_nodes != nr)
            continue;
        bool same = true;
        for (int k = 0; k < np; k++)
            same &= r->pattern->nodes[k].op == pat[k];
        for (int k = 0; k < nr; k++)
            same &= r->replacement->nodes[k].op == rep[k];
        if (same)
            return r;
    }
    return NULL;
}

START_TEST(pipeline_finds_pruned_checked_rules)
{
    xf_gen_stats st;
    xf_library *lib = generate(2, SEED, &st);
    ck_assert_int_gt(st.graphs, 1000);
    /* Graphs over {a, b} stand for graphs over {b, c}, {a, c}, ... */
    ck_assert_int_gt(st.graphs_renamed, 2 * st.graphs);
    ck_assert_int_gt(st.candidates, lib->n_rules);
    ck_assert_int_gt(st.pruned_common, 0);
    ck_assert_int_eq(st.false_positives, 0);
    ck_assert_int_eq(st.rules, lib->n_rules);
    ck_assert_int_gt(lib->n_rules, 50);
    ck_assert_int_eq(lib->max_ops, 2);
    ck_assert_int_eq(lib->opset, XF_GENERATOR_OPSET);

    /* Conv then Relu is the fused conv; transpose twice is nothing. */
    const xf_rule *fuse = find_rule(lib, (xf_op[]){XF_OP_CONV, XF_OP_RELU}, 2, (xf_op[]){XF_OP_CONV}, 1);
    ck_assert_ptr_nonnull(fuse);
    ck_assert_int_eq(fuse->replacement->nodes[0].attrs.activation, XF_ACT_RELU);
    const xf_rule *tt = find_rule(lib, (xf_op[]){XF_OP_TRANSPOSE, XF_OP_TRANSPOSE}, 2, NULL, 0);
    ck_assert_ptr_nonnull(tt);
    ck_assert_int_eq(tt->replacement->outputs[0], tt->replacement->inputs[0]);
    /* Relu(a + b) is never paired with relu(a) + relu(b). */
    ck_assert_ptr_null(find_rule(lib, (xf_op[]){XF_OP_ADD, XF_OP_RELU}, 2,
                                 (xf_op[]){XF_OP_RELU, XF_OP_RELU, XF_OP_ADD}, 3));

    /* Biased convolutions: Conv(x, w, b) then Relu is the fused conv. */
    const xf_rule *bfuse = find_rule(lib, (xf_op[]){XF_OP_CONV, XF_OP_RELU}, 2, (xf_op[]){XF_OP_CONV}, 1);
    bool biased_fusion = false;
    for (int i = 0; i < lib->n_rules; i++) {
        const xf_rule *r = lib->rules[i];
        biased_fusion |= r->pattern->n_nodes == 2 && r->pattern->nodes[0].op == XF_OP_CONV &&
                         r->pattern->nodes[0].n_inputs == 3 && r->pattern->nodes[1].op == XF_OP_RELU &&
                         r->replacement->n_nodes == 1 && r->replacement->nodes[0].n_inputs == 3 &&
                         r->replacement->nodes[0].attrs.activation == XF_ACT_RELU;
    }
    ck_assert(bfuse && biased_fusion);
    /* Kernel enlarge, written from the small side: a 1x1 conv becomes a 3x3
     * conv over the zero-padded kernel, with same padding, stride 1. */
    const xf_rule *enlarge = NULL, *enlarge2 = NULL;
    for (int i = 0; i < lib->n_rules; i++) {
        const xf_rule *r = lib->rules[i];
        if (r->pattern->n_nodes == 1 && r->pattern->nodes[0].op == XF_OP_CONV &&
            r->pattern->nodes[0].attrs.kernel[0] == 1 && r->pattern->nodes[0].attrs.kernel[1] == 1 &&
            r->replacement->n_nodes == 2 && r->replacement->nodes[0].op == XF_OP_PAD) {
            const xf_rule **slot = r->pattern->nodes[0].attrs.strides[0] == 1 ? &enlarge : &enlarge2;
            if (!*slot)
                *slot = r;
        }
    }
    /* Stride 2 too: the enlarged kernel keeps the stride. */
    ck_assert_ptr_nonnull(enlarge2);
    ck_assert_int_eq(enlarge2->pattern->nodes[0].attrs.strides[0], 2);
    ck_assert_int_eq(enlarge2->replacement->nodes[1].attrs.strides[0], 2);
    ck_assert_int_eq(enlarge2->replacement->nodes[1].attrs.pads[0], 1);
    ck_assert_ptr_nonnull(enlarge);
    const xf_attrs *pa = &enlarge->replacement->nodes[0].attrs, *ca = &enlarge->replacement->nodes[1].attrs;
    ck_assert(pa->has_pads && pa->n_pads == 8 && pa->pad_pads[2] == 1 && pa->pad_pads[6] == 1 && pa->pad_pads[3] == 1);
    ck_assert(ca->kernel[0] == 3 && ca->pads[0] == 1 && ca->pads[2] == 1 && ca->strides[0] == 1);
    ck_assert_int_eq(enlarge->pattern->nodes[0].attrs.strides[0], 1);
    ck_assert_int_gt(st.reversed, 0);
    /* Every pattern is something the optimizer can match. */
    for (int i = 0; i < lib->n_rules; i++)
        for (int k = 0; k < lib->rules[i]->pattern->n_nodes; k++)
            ck_assert(xf_op_get_info(lib->rules[i]->pattern->nodes[k].op)->flags & XF_OPF_GEN);

    xf_error e = {0};
    int generalized = 0;
    for (int i = 0; i < lib->n_rules; i++) {
        const xf_rule *r = lib->rules[i];
        ck_assert_msg(xf_rule_validate(r, &e) == XF_OK, "%s", e.msg);
        ck_assert(!r->proved);
        /* Renaming pruning: rules numbered by first use are unique. */
        for (int j = 0; j < i; j++)
            ck_assert_msg(!(xf_graph_hash(r->pattern) == xf_graph_hash(lib->rules[j]->pattern) &&
                            xf_graph_hash(r->replacement) == xf_graph_hash(lib->rules[j]->replacement)),
                          "%s and %s are the same rule", r->name, lib->rules[j]->name);
        /* Split sizes are expressions that give the concrete sizes back. */
        for (int b = 0; b < r->n_bindings; b++) {
            const xf_binding *bd = &r->bindings[b];
            const xf_graph *g = bd->replacement ? r->replacement : r->pattern;
            xf_shape shapes[16];
            for (int k = 0; k < g->n_inputs; k++)
                shapes[k] = g->values[g->inputs[k]].shape;
            int64_t v, want;
            ck_assert(xf_expr_eval(&bd->e, NULL, NULL, shapes, g->n_inputs, &v));
            ck_assert(xf_attr_field_get(&g->nodes[bd->node].attrs, bd->field, bd->index, &want));
            ck_assert_int_eq(v, want);
            ck_assert_int_eq(bd->field, XF_AF_SPLIT);
            generalized += b == 0;
        }
    }
    ck_assert_int_gt(generalized, 0);
    ck_assert_int_eq(generalized, st.generalized);

    /* The library survives its own text format. */
    char *text = format(lib);
    xf_library *back = NULL;
    ck_assert_msg(xf_library_parse(text, strlen(text), "gen", &back, &e) == XF_OK, "%s", e.msg);
    char *again = format(back);
    ck_assert_str_eq(again, text);
    free(text);
    free(again);
    xf_library_free(back);
    xf_library_free(lib);
}
END_TEST

/* The constants of the pool become rule constants sized by the match, on
 * replacements only. */
START_TEST(pipeline_writes_constants)
{
    xf_gen_stats st;
    xf_library *lib = generate(2, SEED, &st);
    ck_assert_int_gt(st.pruned_constant, 0);
    int with_consts = 0;
    const xf_rule *residual = NULL;
    for (int i = 0; i < lib->n_rules; i++) {
        const xf_rule *r = lib->rules[i];
        with_consts += r->n_consts > 0;
        for (int v = 0; v < r->pattern->n_values; v++)
            ck_assert_msg(!r->pattern->values[v].init, "rule %s reads a constant in its pattern", r->name);
        xf_shape shapes[16];
        for (int k = 0; k < r->pattern->n_inputs; k++)
            shapes[k] = r->pattern->values[r->pattern->inputs[k]].shape;
        for (int c = 0; c < r->n_consts; c++) {
            /* Its dims give back the shape it was found at. */
            int v = xf_graph_find_value(r->replacement, r->consts[c].name);
            ck_assert_int_ge(v, 0);
            xf_shape got;
            ck_assert(xf_rule_const_shape(&r->consts[c], shapes, r->pattern->n_inputs, &got));
            ck_assert(xf_shape_equal(&got, &r->replacement->values[v].init->shape));
            for (int d = 0; d < r->consts[c].ndim; d++)
                for (int n = 0; n < r->consts[c].dims[d].n; n++)
                    ck_assert_int_ne(r->consts[c].dims[d].node[n].kind, XF_EX_PARAM);
        }
        /* x + conv(x, w) = conv(x, w + identity) */
        if (r->n_consts == 1 && r->consts[0].kind == XF_CONST_IDENTITY_KERNEL && r->pattern->n_nodes == 2 &&
            r->pattern->nodes[0].op == XF_OP_CONV && r->pattern->nodes[0].n_inputs == 2 &&
            r->pattern->nodes[1].op == XF_OP_ADD && r->replacement->n_nodes == 2 &&
            r->replacement->nodes[0].op == XF_OP_ADD && r->replacement->nodes[1].op == XF_OP_CONV)
            residual = r;
    }
    ck_assert_int_gt(with_consts, 0);
    ck_assert_ptr_nonnull(residual);
    /* Sized by the match: the identity follows the channels. */
    xf_shape big[2] = {SHAPE(1, 9, 6, 6), residual->pattern->values[residual->pattern->inputs[1]].shape}, got;
    int64_t kh = big[1].dims[2], kw = big[1].dims[3];
    big[1].dims[0] = big[1].dims[1] = 9;
    ck_assert(xf_rule_const_shape(&residual->consts[0], big, 2, &got));
    ck_assert(got.dims[0] == 9 && got.dims[1] == 9 && got.dims[2] == kh && got.dims[3] == kw);
    xf_library_free(lib);
}
END_TEST

/* xflow-gen writes a library and --check tells current from stale. */
START_TEST(tool_writes_and_checks)
{
    char path[600], cmd[1400];
    snprintf(path, sizeof path, "%s/lib.rules", xf_test_tmpdir("tool_writes_and_checks"));
    const char *tool = xf_test_tool("xflow-gen");
    char *out = NULL;
    snprintf(cmd, sizeof cmd, "%s --max-ops 2 --no-verify --threads 2 -o %s", tool, path);
    ck_assert_msg(xf_test_run(cmd, &out) == 0, "%s", out);
    ck_assert_ptr_nonnull(strstr(out, "candidate pairs"));
    free(out);
    xf_library *lib = NULL;
    xf_error e = {0};
    ck_assert_msg(xf_library_load(path, &lib, &e) == XF_OK, "%s", e.msg);
    ck_assert_int_gt(lib->n_rules, 0);
    ck_assert_int_eq(lib->max_ops, 2);
    xf_library_free(lib);

    snprintf(cmd, sizeof cmd, "%s -q --max-ops 2 --no-verify --threads 1 --check -o %s", tool, path);
    ck_assert_int_eq(xf_test_run(cmd, &out), 0);
    free(out);
    FILE *f = fopen(path, "a");
    ck_assert_ptr_nonnull(f);
    fputs("# edited by hand\n", f);
    fclose(f);
    ck_assert_int_eq(xf_test_run(cmd, &out), 1);
    ck_assert_ptr_nonnull(strstr(out, "stale"));
    free(out);
    snprintf(cmd, sizeof cmd, "%s --max-ops 7", tool);
    ck_assert_int_eq(xf_test_run(cmd, &out), 2);
    free(out);

    /* --dropped: every candidate left out after grouping (false positives,
     * rules not proved) is written, with why; as many as the report counts
     * (at max ops 2 every candidate is proved, even with a 1 ms timeout). */
    char dropped[700];
    snprintf(dropped, sizeof dropped, "%s.dropped", path);
    snprintf(cmd, sizeof cmd, "%s --max-ops 2 --threads 2 --timeout-ms 1 --dropped %s -o %s", tool, dropped, path);
    ck_assert_msg(xf_test_run(cmd, &out) == 0, "%s", out);
    long collisions = -1, fp = -1, refuted = -1, unknown = -1;
    const char *at = strstr(out, "exact recheck");
    ck_assert_ptr_nonnull(at);
    ck_assert_int_eq(sscanf(at, "exact recheck -%ld", &collisions), 1);
    at = strstr(out, "float mismatch");
    ck_assert_ptr_nonnull(at);
    ck_assert_int_eq(sscanf(at, "float mismatch -%ld", &fp), 1);
    at = strstr(out, "proved rules");
    ck_assert_ptr_nonnull(at);
    ck_assert_int_eq(sscanf(at, "proved rules %*d (refuted %ld, unknown or unsupported %ld)", &refuted, &unknown), 2);
    free(out);
    ck_assert_msg(xf_library_load(dropped, &lib, &e) == XF_OK, "%s", e.msg);
    ck_assert_int_eq(lib->n_rules, collisions + fp + refuted + unknown);
    for (int i = 0; i < lib->n_rules; i++) {
        const xf_rule *r = lib->rules[i];
        ck_assert(!r->proved);
        bool why = r->name[0] == 'f' ? !strncmp(r->provenance, "float mismatch", 14) ||
                                           !strncmp(r->provenance, "differ on further exact trials", 30)
                                     : !strncmp(r->provenance, "not proved", 10);
        ck_assert_msg(why, "%s: %s", r->name, r->provenance);
    }
    xf_library_free(lib);
}
END_TEST

/* A record keeps every bit of a code with all its op slots in use. */
START_TEST(record_keeps_every_code_bit)
{
    gen_code code = 0;
    for (int k = 0; k < GEN_MAX_SLOTS; k++)
        code |= gen_code_op(GV_COUNT - 1 - k, 30 - k, 29 - k, 28 - k) << (GEN_OP_BITS * k);
    gen_record r = gen_record_make(42, code);
    ck_assert(gen_record_code(&r) == code);
    ck_assert_int_eq(gen_code_variant(gen_record_code(&r), GEN_MAX_SLOTS - 1), GV_COUNT - GEN_MAX_SLOTS);
    gen_code ones = ((gen_code)1 << (GEN_MAX_SLOTS * GEN_OP_BITS)) - 1;
    r = gen_record_make(7, ones);
    ck_assert(gen_record_code(&r) == ones);
    ck_assert_uint_eq(r.fp, 7);
}
END_TEST

/* The enumerator takes shortcuts (cached convolutions shared by several
 * biases and activations, graphs of the last level hashed in batches);
 * decoding a record evaluates its graph op by op with plain gen_eval, and
 * must give the fingerprint the enumerator recorded. */
START_TEST(enumeration_matches_plain_evaluation)
{
    gen_record *records = NULL;
    int64_t n = 0;
    xf_error e = {0};
    ck_assert_msg(gen_enumerate(2, SEED, 2, &records, &n, NULL, NULL, &e) == XF_OK, "enumerate failed: %s", e.msg);
    ck_assert_int_gt(n, 1000);
    uint64_t *storage = calloc((size_t)GEN_MAX_VALUES * GEN_VAL_STRIDE, sizeof *storage);
    ck_assert_ptr_nonnull(storage);
    gen_pool_values pool;
    gen_pool_fill(SEED, &pool, storage);
    uint64_t *scratch = storage + (size_t)GEN_MAX_POOL * GEN_VAL_STRIDE;
    int64_t biased_relu = 0, leaves = 0;
    for (int64_t i = 0; i < n; i++) {
        gen_graph g;
        ck_assert_msg(gen_decode(gen_record_code(&records[i]), &pool, &g, scratch, NULL), "record %lld does not decode", (long long)i);
        ck_assert_msg(gen_combine_fps(g.out_fp, g.n_outputs) == records[i].fp,
                      "record %lld: fingerprint differs from plain evaluation", (long long)i);
        for (int k = 0; k < g.n_ops; k++)
            biased_relu += g.variant[k] == GV_CONV_BIAS_RELU;
        leaves += g.n_ops >= 2;
    }
    ck_assert_int_gt(biased_relu, 100);
    ck_assert_int_gt(leaves, n / 2);
    free(storage);
    free(records);
}
END_TEST

START_TEST(pipeline_rejects_bad_options)
{
    xf_gen_options opt = {.max_ops = 9};
    xf_library *lib = NULL;
    xf_error e = {0};
    ck_assert_int_eq(xf_generate(&opt, &lib, NULL, &e), XF_ERR_INVALID);
    ck_assert_ptr_null(lib);
    ck_assert_ptr_nonnull(strstr(e.msg, "max ops"));
}
END_TEST

static Suite *generator_suite(void)
{
    Suite *s = suite_create("generator");
    TCase *f = tcase_create("fingerprints");
    tcase_add_test(f, identity_matmul_associative);
    tcase_add_test(f, identity_conv_linear_in_each_argument);
    tcase_add_test(f, identity_concat_of_convs);
    tcase_add_test(f, identity_transpose_of_product);
    tcase_add_test(f, identity_conv_with_identity_kernel);
    tcase_add_test(f, non_identity_matmul_commutative);
    tcase_add_test(f, non_identity_relu_additive);
    tcase_add_test(f, non_identity_maxpool_relu_order);
    tcase_add_test(f, fingerprint_refuses_unknown_semantics);
    tcase_add_test(f, recheck_models_separate_collisions);
    suite_add_tcase(s, f);
    TCase *p = tcase_create("pipeline");
    tcase_set_timeout(p, 120);
    tcase_add_test(p, pipeline_deterministic_across_threads);
    tcase_add_test(p, pipeline_finds_pruned_checked_rules);
    tcase_add_test(p, pipeline_writes_constants);
    tcase_add_test(p, pipeline_rejects_bad_options);
    tcase_add_test(p, enumeration_matches_plain_evaluation);
    tcase_add_test(p, record_keeps_every_code_bit);
    tcase_add_test(p, tool_writes_and_checks);
    suite_add_tcase(s, p);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(generator_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
