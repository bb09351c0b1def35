/* Verifier: planted false rules are rejected, known identities proved,
 * axioms validated on concrete shapes (and a wrong one caught), the timeout
 * cuts a query that cannot finish, the numerical check, and xflow-verify. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xf_test_util.h"
#include "xf_verify.h"

/* ---------------------------------------------------------------- building rules */

static xf_shape shape_of(const char *s)
{
    xf_shape sh = {0};
    while (*s) {
        sh.dims[sh.ndim++] = strtoll(s, (char **)&s, 10);
        if (*s == 'x')
            s++;
    }
    return sh;
}

/* A rule whose inputs have the given shapes ("2x3", "" for a scalar). */
static xf_rule *rule_new(const char *name, int n, const char *const *shapes)
{
    xf_rule *r = xf_rule_create(name);
    ck_assert_ptr_nonnull(r);
    r->pattern = xf_graph_create("pattern");
    r->replacement = xf_graph_create("replacement");
    for (int k = 0; k < n; k++) {
        char in[16];
        snprintf(in, sizeof in, "x%d", k);
        xf_shape s = shape_of(shapes[k]);
        ck_assert_int_eq(xf_graph_add_input(r->pattern, in, XF_DT_FLOAT, &s), k);
        ck_assert_int_eq(xf_graph_add_input(r->replacement, in, XF_DT_FLOAT, &s), k);
    }
    return r;
}

/* Appends op(a[, b]) and returns its output value. */
static int op(xf_graph *g, xf_op kind, int a, int b)
{
    xf_shape unknown = {.ndim = -1};
    int out = xf_graph_add_value(g, NULL, XF_DT_FLOAT, &unknown);
    int ins[2] = {a, b};
    ck_assert_int_ge(xf_graph_add_node(g, kind, NULL, b < 0 ? 1 : 2, ins, 1, &out), 0);
    return out;
}

static xf_attrs *last_attrs(xf_graph *g)
{
    return &g->nodes[g->n_nodes - 1].attrs;
}

static int conv(xf_graph *g, int x, int w, int64_t stride, int64_t pad, xf_activation act)
{
    int y = op(g, XF_OP_CONV, x, w);
    xf_attrs *a = last_attrs(g);
    a->n_spatial = 2;
    a->strides[0] = a->strides[1] = stride;
    for (int i = 0; i < 4; i++)
        a->pads[i] = pad;
    a->activation = act;
    return y;
}

static int concat(xf_graph *g, int64_t axis, int a, int b)
{
    int y = op(g, XF_OP_CONCAT, a, b);
    last_attrs(g)->axis = axis;
    return y;
}

static int constant(xf_graph *g, const char *shape, const float *data)
{
    xf_shape s = shape_of(shape);
    xf_tensor *t = xf_tensor_from_data(XF_DT_FLOAT, &s, data);
    int v = xf_graph_add_initializer(g, NULL, t);
    xf_tensor_release(t);
    return v;
}

/* Sets the outputs (one each side) and infers shapes. */
static xf_rule *finish(xf_rule *r, int pattern_out, int replacement_out)
{
    xf_error err;
    xf_graph_add_output(r->pattern, pattern_out);
    xf_graph_add_output(r->replacement, replacement_out);
    ck_assert_msg(xf_graph_infer_shapes(r->pattern, 17, &err) == XF_OK, "%s", err.msg);
    ck_assert_msg(xf_graph_infer_shapes(r->replacement, 17, &err) == XF_OK, "%s", err.msg);
    ck_assert_msg(xf_rule_validate(r, &err) == XF_OK, "%s", err.msg);
    return r;
}

static xf_rule *matmul_assoc(void)
{
    xf_rule *r = rule_new("matmul_assoc", 3, (const char *[]){"2x3", "3x4", "4x5"});
    int p = op(r->pattern, XF_OP_MATMUL, op(r->pattern, XF_OP_MATMUL, 0, 1), 2);
    int q = op(r->replacement, XF_OP_MATMUL, 0, op(r->replacement, XF_OP_MATMUL, 1, 2));
    return finish(r, p, q);
}

static xf_rule *matmul_comm(void)
{
    xf_rule *r = rule_new("matmul_comm", 2, (const char *[]){"3x3", "3x3"});
    return finish(r, op(r->pattern, XF_OP_MATMUL, 0, 1), op(r->replacement, XF_OP_MATMUL, 1, 0));
}

static xf_rule *relu_of_sum(void)
{
    xf_rule *r = rule_new("relu_of_sum", 2, (const char *[]){"2x3", "2x3"});
    int p = op(r->pattern, XF_OP_RELU, op(r->pattern, XF_OP_ADD, 0, 1), -1);
    int q = op(r->replacement, XF_OP_ADD, op(r->replacement, XF_OP_RELU, 0, -1), op(r->replacement, XF_OP_RELU, 1, -1));
    return finish(r, p, q);
}

/* conv(x, w1) + conv(x, w2) = conv(x, w1 + w2), stride generalized. */
static xf_rule *conv_linear(bool symbolic_stride)
{
    xf_rule *r = rule_new("conv_linear", 3, (const char *[]){"1x2x5x5", "3x2x3x3", "3x2x3x3"});
    int p = op(r->pattern, XF_OP_ADD, conv(r->pattern, 0, 1, 1, 1, XF_ACT_NONE), conv(r->pattern, 0, 2, 1, 1, XF_ACT_NONE));
    int q = conv(r->replacement, 0, op(r->replacement, XF_OP_ADD, 1, 2), 1, 1, XF_ACT_NONE);
    if (symbolic_stride) {
        /* pattern conv nodes 0 and 1, replacement conv node 1: stride s, s */
        static char s_name[] = "s";
        r->n_params = 1;
        r->param_names = calloc(1, sizeof *r->param_names);
        r->param_names[0] = strdup(s_name);
        r->n_bindings = 3;
        r->bindings = calloc(3, sizeof *r->bindings);
        r->bindings[0] = (xf_binding){false, 0, XF_AF_STRIDE, 0, xf_expr_param(0)};
        r->bindings[1] = (xf_binding){false, 1, XF_AF_STRIDE, 0, xf_expr_param(0)};
        r->bindings[2] = (xf_binding){true, 1, XF_AF_STRIDE, 0, xf_expr_param(0)};
    }
    return finish(r, p, q);
}

/* conv(x, w1), conv(x, w2) = split(conv(x, concat(w1, w2)), at w1's output channels). */
static xf_rule *concat_of_convs(bool bind_split)
{
    xf_rule *r = rule_new("concat_of_convs", 3, (const char *[]){"1x2x5x5", "3x2x3x3", "4x2x3x3"});
    int a = conv(r->pattern, 0, 1, 1, 1, XF_ACT_RELU), b = conv(r->pattern, 0, 2, 1, 1, XF_ACT_RELU);
    xf_graph *g = r->replacement;
    int y = conv(g, 0, concat(g, 0, 1, 2), 1, 1, XF_ACT_RELU);
    xf_shape unknown = {.ndim = -1};
    int outs[2] = {xf_graph_add_value(g, NULL, XF_DT_FLOAT, &unknown), xf_graph_add_value(g, NULL, XF_DT_FLOAT, &unknown)};
    ck_assert_int_ge(xf_graph_add_node(g, XF_OP_SPLIT, NULL, 1, &y, 2, outs), 0);
    xf_attrs *s = last_attrs(g);
    s->axis = 1;
    s->n_split = 2;
    s->split[0] = 3;
    s->split[1] = 4;
    if (bind_split) {
        r->n_bindings = 2;
        r->bindings = calloc(2, sizeof *r->bindings);
        r->bindings[0] = (xf_binding){true, 2, XF_AF_SPLIT, 0, xf_expr_dim(1, 0)};
        r->bindings[1] = (xf_binding){true, 2, XF_AF_SPLIT, 1, xf_expr_dim(2, 0)};
    }
    xf_graph_add_output(r->pattern, a);
    xf_graph_add_output(r->replacement, outs[0]);
    return finish(r, b, outs[1]);
}

static xf_rule *conv_relu_fused(void)
{
    xf_rule *r = rule_new("conv_relu", 2, (const char *[]){"1x2x5x5", "3x2x3x3"});
    int p = op(r->pattern, XF_OP_RELU, conv(r->pattern, 0, 1, 1, 1, XF_ACT_NONE), -1);
    return finish(r, p, conv(r->replacement, 0, 1, 1, 1, XF_ACT_RELU));
}

static xf_rule *transpose_twice(void)
{
    xf_rule *r = rule_new("transpose_twice", 1, (const char *[]){"2x3"});
    int p = op(r->pattern, XF_OP_TRANSPOSE, op(r->pattern, XF_OP_TRANSPOSE, 0, -1), -1);
    return finish(r, p, 0);
}

/* conv(x, concat0(w1, w2)) = concat_axis(conv(x, w1), conv(x, w2)): true on axis 1 only. */
static xf_rule *conv_concat_weights(int64_t out_axis)
{
    xf_rule *r = rule_new("conv_concat_weights", 3, (const char *[]){"1x2x5x5", "2x2x3x3", "2x2x3x3"});
    int p = conv(r->pattern, 0, concat(r->pattern, 0, 1, 2), 1, 1, XF_ACT_NONE);
    xf_graph *g = r->replacement;
    return finish(r, p, concat(g, out_axis, conv(g, 0, 1, 1, 1, XF_ACT_NONE), conv(g, 0, 2, 1, 1, XF_ACT_NONE)));
}

/* conv(x, identity kernel) = x: true for stride 1 only. */
static xf_rule *identity_kernel(int64_t stride)
{
    xf_rule *r = rule_new("identity_kernel", 1, (const char *[]){"1x2x5x5"});
    float k[2 * 2 * 9] = {0};
    k[4] = 1;          /* out 0, in 0, centre */
    k[9 + 9 + 9 + 4] = 1; /* out 1, in 1, centre */
    int w = constant(r->pattern, "2x2x3x3", k);
    return finish(r, conv(r->pattern, 0, w, stride, 1, XF_ACT_NONE), 0);
}

/* A false rule over a long sum: the associativity and commutativity axioms
 * generate more rearrangements than any timeout allows to exhaust. */
static xf_rule *long_sum(void)
{
    enum { N = 9 };
    const char *shapes[N];
    for (int i = 0; i < N; i++)
        shapes[i] = "2x2";
    xf_rule *r = rule_new("long_sum", N, shapes);
    int p = op(r->pattern, XF_OP_MUL, 0, 1), q = 0;
    for (int i = 2; i < N; i++)
        p = op(r->pattern, XF_OP_ADD, p, i);
    for (int i = N - 1; i >= 1; i--)
        q = op(r->replacement, XF_OP_ADD, i, q);
    return finish(r, p, q);
}

/* ---------------------------------------------------------------- prover */

static xf_verifier *verifier(unsigned timeout_ms)
{
    xf_verifier *v;
    xf_error err;
    xf_verify_options o = {.timeout_ms = timeout_ms};
    ck_assert_msg(xf_verifier_create(&o, &v, &err) == XF_OK, "%s", err.msg);
    return v;
}

static xf_proof prove_free(xf_verifier *v, xf_rule *r, char *why, size_t n)
{
    xf_proof p = xf_verifier_prove(v, r, why, n);
    xf_rule_free(r);
    return p;
}

START_TEST(proves_known_identities)
{
    xf_verifier *v = verifier(5000);
    char why[512];
    xf_rule *rules[] = {matmul_assoc(),        conv_linear(false), conv_linear(true),
                        concat_of_convs(true), conv_relu_fused(),  transpose_twice(),
                        conv_concat_weights(1), identity_kernel(1)};
    for (size_t i = 0; i < sizeof rules / sizeof rules[0]; i++) {
        char name[64];
        snprintf(name, sizeof name, "%s", rules[i]->name);
        xf_proof p = prove_free(v, rules[i], why, sizeof why);
        ck_assert_msg(p == XF_PROOF_PROVED, "rule %zu (%s): %s: %s", i, name, xf_proof_name(p), why);
    }
    xf_verifier_free(v);
}
END_TEST

/* Rules with constants sized by the match: x + conv(x, w) folds the
 * residual into the kernel with the identity kernel (a law), not with the
 * pooling kernel (no law); a left product with the identity matrix is its
 * right factor. */
static const char const_rules[] =
    "xflow-library 1\ngenerator test\nop-set Conv,Add,MatMul\nmax-ops 2\nseed 1\nopset 17\nrules 3\n"
    "rule residual\nproved no\ninput x FLOAT 2x3x5x5\ninput w FLOAT 3x3x3x3\n"
    "const e identity_kernel FLOAT 3x3x3x3 = x[1], x[1], 3, 3\npattern\n"
    "  %0 = Conv(x, w) kernel=3,3 strides=1,1 pads=1,1,1,1 dilations=1,1\n  %1 = Add(%0, x)\n  output %1\n"
    "replacement\n  %0 = Add(w, e)\n  %1 = Conv(x, %0) kernel=3,3 strides=1,1 pads=1,1,1,1 dilations=1,1\n"
    "  output %1\nend\n"
    "rule wrong\nproved no\ninput x FLOAT 2x3x5x5\ninput w FLOAT 3x3x3x3\n"
    "const u pool_kernel FLOAT 3x3x3x3 = x[1], x[1], 3, 3\npattern\n"
    "  %0 = Conv(x, w) kernel=3,3 strides=1,1 pads=1,1,1,1 dilations=1,1\n  %1 = Add(%0, x)\n  output %1\n"
    "replacement\n  %0 = Add(w, u)\n  %1 = Conv(x, %0) kernel=3,3 strides=1,1 pads=1,1,1,1 dilations=1,1\n"
    "  output %1\nend\n"
    "rule left\nproved no\ninput a FLOAT 4x4\ninput b FLOAT 4x3\n"
    "const m identity_matrix FLOAT 4x4 = a[0], a[1]\npattern\n"
    "  %0 = MatMul(a, b)\n  %1 = Add(b, %0)\n  output %1\n"
    "replacement\n  %0 = Add(a, m)\n  %1 = MatMul(%0, b)\n  output %1\nend\n";

START_TEST(rule_constants)
{
    xf_library *lib = xf_test_library(const_rules);
    xf_verifier *v = verifier(2000);
    char why[512];
    ck_assert_msg(xf_verifier_prove(v, lib->rules[0], why, sizeof why) == XF_PROOF_PROVED, "%s", why);
    ck_assert_int_ne(xf_verifier_prove(v, lib->rules[1], why, sizeof why), XF_PROOF_PROVED);
    ck_assert_msg(xf_verifier_prove(v, lib->rules[2], why, sizeof why) == XF_PROOF_PROVED, "%s", why);
    xf_verifier_free(v);
    xf_library_free(lib);
}
END_TEST

START_TEST(rejects_planted_false_rules)
{
    xf_verifier *v = verifier(2000);
    char why[512];
    xf_rule *rules[] = {matmul_comm(), relu_of_sum(), conv_concat_weights(0), identity_kernel(2),
                        concat_of_convs(false)};
    for (size_t i = 0; i < sizeof rules / sizeof rules[0]; i++) {
        char name[64];
        snprintf(name, sizeof name, "%s", rules[i]->name);
        xf_proof p = prove_free(v, rules[i], why, sizeof why);
        ck_assert_msg(p == XF_PROOF_REFUTED || p == XF_PROOF_UNKNOWN, "rule %zu (%s) not rejected: %s", i, name,
                      xf_proof_name(p));
        ck_assert_msg(strstr(why, "output 0") || strstr(why, "output 1"), "rule %s: reason '%s' names no output",
                      name, why);
    }
    xf_verifier_free(v);
}
END_TEST

/* Several provers in parallel give each rule the outcome one prover gives
 * it, in the rule's own slot. */
START_TEST(parallel_provers_agree)
{
    xf_rule *rules[] = {matmul_assoc(),       matmul_comm(),          conv_linear(true), relu_of_sum(),
                        concat_of_convs(true), conv_concat_weights(0), transpose_twice(), identity_kernel(2),
                        conv_relu_fused(),    identity_kernel(1)};
    enum { N = sizeof rules / sizeof rules[0] };
    bool expect[N] = {true, false, true, false, true, false, true, false, true, true};
    xf_verify_options o = {.timeout_ms = 2000};
    xf_error err;
    for (int threads = 1; threads <= 3; threads += 2) {
        xf_proof_result res[N];
        ck_assert_msg(xf_verify_rules(&o, rules, N, threads, res, NULL, NULL, &err) == XF_OK, "%s", err.msg);
        for (int i = 0; i < N; i++) {
            ck_assert_msg((res[i].proof == XF_PROOF_PROVED) == expect[i], "%d threads, rule %d (%s): %s: %s",
                          threads, i, rules[i]->name, xf_proof_name(res[i].proof), res[i].why);
            ck_assert(res[i].seconds >= 0);
            if (!expect[i])
                ck_assert_msg(res[i].why[0], "rule %s: no reason given", rules[i]->name);
        }
    }
    for (int i = 0; i < N; i++)
        xf_rule_free(rules[i]);
}
END_TEST

/* The one rule of a library text. */
static xf_rule *parse_rule(const char *text)
{
    xf_library *lib = xf_test_library(text);
    xf_rule *r = xf_rule_clone(lib->rules[0]);
    xf_library_free(lib);
    ck_assert_ptr_nonnull(r);
    return r;
}

/* Biased convolutions and kernel enlarge, as the library file writes them:
 * a 1x1 and a 3x3 conv with biases reading one input merge into one 3x3
 * conv over the enlarged 1x1 kernel stacked on the 3x3 one.  The planted
 * variants must fail: the biases stacked in the wrong order, the small
 * kernel padded off-centre, the merged conv at stride 2. */
static const char merge_text[] =
    "xflow-library 1\ngenerator t\nop-set Conv\nmax-ops 3\nseed 1\nopset 17\nrules 1\n"
    "rule merge\nproved no\n"
    "input x FLOAT 2x2x4x4\ninput k FLOAT 2x2x1x1\ninput p FLOAT 2\ninput w FLOAT 2x2x3x3\ninput q FLOAT 2\n"
    "pattern\n"
    "  %0 = Conv(x, k, p) kernel=1,1 strides=1,1 pads=0,0,0,0 dilations=1,1 activation=relu\n"
    "  %1 = Conv(x, w, q) kernel=3,3 strides=1,1 pads=1,1,1,1 dilations=1,1 activation=relu\n"
    "  %2 = Concat(%0, %1) axis=1\n"
    "  output %2\n"
    "replacement\n"
    "  %0 = Concat(BIASES)\n"
    "  %1 = Pad(k) pad_pads=PADS\n"
    "  %2 = Concat(%1, w)\n"
    "  %3 = Conv(x, %2, %0) kernel=3,3 strides=S,S pads=1,1,1,1 dilations=1,1 activation=relu\n"
    "  output %3\n"
    "end\n";

static xf_rule *merge_rule(const char *biases, const char *pads, const char *stride)
{
    char text[sizeof merge_text + 64], *o = text;
    for (const char *s = merge_text; *s;) {
        const char *sub = !strncmp(s, "BIASES", 6) ? biases : !strncmp(s, "PADS", 4) ? pads
                        : !strncmp(s, "S,S", 3)    ? stride : NULL;
        if (sub) {
            o += sprintf(o, "%s", sub);
            s += !strncmp(s, "BIASES", 6) ? 6 : !strncmp(s, "PADS", 4) ? 4 : 3;
        } else {
            *o++ = *s++;
        }
    }
    *o = 0;
    return parse_rule(text);
}

START_TEST(biased_enlarged_merge)
{
    xf_verifier *v = verifier(5000);
    char why[512];
    xf_rule *good = merge_rule("p, q", "0,0,1,1,0,0,1,1", "1,1");
    ck_assert_int_eq(prove_free(v, good, why, sizeof why), XF_PROOF_PROVED);
    double err = 0;
    good = merge_rule("p, q", "0,0,1,1,0,0,1,1", "1,1");
    ck_assert_msg(xf_verify_numeric(good, 3, 7, &err, why, sizeof why) == XF_OK, "%s", why);
    xf_rule_free(good);
    xf_rule *bad[] = {merge_rule("q, p", "0,0,1,1,0,0,1,1", "1,1"), merge_rule("p, q", "0,0,2,2,0,0,0,0", "1,1"),
                      merge_rule("p, q", "0,0,1,1,0,0,1,1", "2,2")};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        xf_proof p = prove_free(v, bad[i], why, sizeof why);
        ck_assert_msg(p != XF_PROOF_PROVED, "variant %zu not rejected", i);
    }
    xf_verifier_free(v);
}
END_TEST

/* A stride moved through pointwise ops: a 3x3 conv at stride 1 followed by
 * a 1x1 conv at stride 2 is the 3x3 at stride 2 followed by the 1x1 at
 * stride 1 (both with fused Relu).  Proved through the sampling function of
 * the specification.  Moving the stride past a second 3x3 conv instead is
 * false: it must be neither proved nor pass the numeric check. */
static xf_rule *stride_rule(const char *second_kernel)
{
    bool wide = second_kernel[0] == '3';
    char text[2048];
    snprintf(text, sizeof text,
             "xflow-library 1\ngenerator t\nop-set Conv\nmax-ops 2\nseed 1\nopset 17\nrules 1\n"
             "rule stride\nproved no\n"
             "input x FLOAT 2x2x8x8\ninput w FLOAT 2x2x3x3\ninput k FLOAT 2x2x%s\n"
             "pattern\n"
             "  %%0 = Conv(x, w) kernel=3,3 strides=1,1 pads=1,1,1,1 dilations=1,1 activation=relu\n"
             "  %%1 = Conv(%%0, k) kernel=%s strides=2,2 pads=%s dilations=1,1 activation=relu\n"
             "  output %%1\n"
             "replacement\n"
             "  %%0 = Conv(x, w) kernel=3,3 strides=2,2 pads=1,1,1,1 dilations=1,1 activation=relu\n"
             "  %%1 = Conv(%%0, k) kernel=%s strides=1,1 pads=%s dilations=1,1 activation=relu\n"
             "  output %%1\n"
             "end\n",
             second_kernel, wide ? "3,3" : "1,1", wide ? "1,1,1,1" : "0,0,0,0", wide ? "3,3" : "1,1",
             wide ? "1,1,1,1" : "0,0,0,0");
    return parse_rule(text);
}

START_TEST(stride_moves)
{
    xf_verifier *v = verifier(5000);
    char why[512];
    xf_proof p = prove_free(v, stride_rule("1x1"), why, sizeof why);
    ck_assert_msg(p == XF_PROOF_PROVED, "%s: %s", xf_proof_name(p), why);
    double err = 0;
    xf_rule *r = stride_rule("1x1");
    ck_assert_msg(xf_verify_numeric(r, 3, 7, &err, why, sizeof why) == XF_OK, "%s", why);
    xf_rule_free(r);
    p = prove_free(v, stride_rule("3x3"), why, sizeof why);
    ck_assert_msg(p != XF_PROOF_PROVED, "moving a stride past a 3x3 conv was proved");
    r = stride_rule("3x3");
    ck_assert_int_eq(xf_verify_numeric(r, 3, 7, &err, why, sizeof why), XF_ERR_INVALID);
    xf_rule_free(r);
    xf_verifier_free(v);
}
END_TEST

/* Rules found at four ops that need the axioms of enlarging a product of
 * kernels and of the dims a split keeps. */
static const char four_op_rules[] =
    "xflow-library 1\ngenerator t\nop-set Conv\nmax-ops 4\nseed 1\nopset 17\nrules 2\n"
    "rule enlarge_product\nproved no\n"
    "input h FLOAT 2x2x1x3\ninput s FLOAT scalar\ninput x FLOAT 2x2x4x4\n"
    "pattern\n"
    "  %0 = Mul(h, s)\n  %1 = Mul(h, %0)\n"
    "  %2 = Conv(x, %1) kernel=1,3 strides=1,1 pads=0,1,0,1 dilations=1,1 activation=relu\n"
    "  output %2\n"
    "replacement\n"
    "  %0 = Pad(h) pad_pads=0,0,1,0,0,0,1,0\n  %1 = Mul(%0, s)\n  %2 = Mul(%0, %1)\n"
    "  %3 = Conv(x, %2) kernel=3,3 strides=1,1 pads=1,1,1,1 dilations=1,1 activation=relu\n"
    "  output %3\n"
    "end\n"
    "rule split_dims\nproved no\n"
    "input x FLOAT 2x2x4x4\n"
    "pattern\n"
    "  %0, %1 = Split(x) split=1,1\n  %2 = Concat(%0, %1) axis=1\n  %3 = Tanh(%2)\n"
    "  %4, %5 = Split(%3) axis=1 split=2,2\n"
    "  output %4\n  output %5\n"
    "replacement\n"
    "  %0 = Tanh(x)\n  %1, %2 = Split(%0) split=1,1\n"
    "  output %1\n  output %2\n"
    "bind pattern 0 split[0] = (x[0] / 2)\nbind pattern 0 split[1] = (x[0] / 2)\n"
    "bind pattern 3 split[0] = x[1]\nbind pattern 3 split[1] = x[1]\n"
    "bind replacement 1 split[0] = (x[0] / 2)\nbind replacement 1 split[1] = (x[0] / 2)\n"
    "end\n";

START_TEST(four_op_laws)
{
    xf_library *lib = xf_test_library(four_op_rules);
    xf_verifier *v = verifier(5000);
    char why[512];
    for (int i = 0; i < lib->n_rules; i++) {
        xf_proof p = xf_verifier_prove(v, lib->rules[i], why, sizeof why);
        ck_assert_msg(p == XF_PROOF_PROVED, "%s: %s: %s", lib->rules[i]->name, xf_proof_name(p), why);
    }
    xf_verifier_free(v);
    xf_library_free(lib);
}
END_TEST

START_TEST(timeout_cuts_a_query)
{
    xf_verifier *v = verifier(300);
    char why[512];
    xf_proof p = prove_free(v, long_sum(), why, sizeof why);
    ck_assert_msg(p == XF_PROOF_UNKNOWN, "%s: %s", xf_proof_name(p), why);
    ck_assert_msg(strstr(why, "budget") || strstr(why, "timeout") || strstr(why, "canceled"), "reason: %s", why);
    xf_verifier_free(v);
}
END_TEST

START_TEST(unsupported_op_is_named)
{
    xf_verifier *v = verifier(1000);
    xf_rule *r = rule_new("softmax", 1, (const char *[]){"2x3"});
    int p = op(r->pattern, XF_OP_SOFTMAX, 0, -1);
    finish(r, p, op(r->replacement, XF_OP_SOFTMAX, 0, -1));
    char why[512];
    ck_assert_int_eq(prove_free(v, r, why, sizeof why), XF_PROOF_UNSUPPORTED);
    ck_assert_msg(strstr(why, "Softmax"), "reason: %s", why);
    xf_verifier_free(v);
}
END_TEST

/* ---------------------------------------------------------------- axioms */

static int axiom_index(const char *name)
{
    for (int i = 0; i < xf_axiom_count(); i++)
        if (strcmp(xf_axiom_name(i), name) == 0)
            return i;
    ck_abort_msg("no axiom %s", name);
    return -1;
}

START_TEST(axioms_validate)
{
    ck_assert_int_ge(xf_axiom_count(), 44);
    const char *names[] = {"ewmul_distrib", "matmul_concat_inner", "conv_concat_weights", "split1_concat",
                           "pool_max_concat_channels", "conv_enlarge", "conv_stride_sample",
                           "sample_conv_pointwise", "enlarge_ewmul", "dim_split0_other"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        xf_axiom_result res;
        xf_error err;
        ck_assert_int_eq(xf_verifier_check_axioms(axiom_index(names[i]), 1, 2, 20000, &res, NULL, NULL, &err), XF_OK);
        ck_assert_msg(res.result == XF_PROOF_PROVED && res.n_instances >= 1, "%s: %s (%d instances) %s", names[i],
                      xf_proof_name(res.result), res.n_instances, res.detail);
    }
}
END_TEST

START_TEST(planted_axiom_error_fails_validation)
{
    xf_axiom_result res;
    xf_error err;
    /* the transpose of a product keeps the order of the factors: false */
    ck_assert_int_eq(xf_verifier_check_axiom_text("x:2 y:2", NULL, "(transpose (matmul x y))",
                                                  "(matmul (transpose x) (transpose y))", 2, 20000, &res, &err),
                     XF_OK);
    ck_assert_msg(res.result == XF_PROOF_REFUTED, "%s: %s", xf_proof_name(res.result), res.detail);
    /* a fused activation may be applied to the input instead: false */
    ck_assert_int_eq(xf_verifier_check_axiom_text("x:4 w:4 c:act", "(= c 1)", "(conv 1 1 0 0 c x w)",
                                                  "(conv 1 1 0 0 0 (act c x) w)", 2, 20000, &res, &err),
                     XF_OK);
    ck_assert_msg(res.result == XF_PROOF_REFUTED, "%s: %s", xf_proof_name(res.result), res.detail);
    /* sampling commutes with a 3x3 convolution: false (its window reaches
     * the pixels that sampling drops) */
    ck_assert_int_eq(xf_verifier_check_axiom_text("x:4 w:4", "(= (dim w 2) 3)", "(sample 2 2 (conv 1 1 1 1 0 x w))",
                                                  "(conv 1 1 1 1 0 (sample 2 2 x) w)", 2, 20000, &res, &err),
                     XF_OK);
    ck_assert_msg(res.result == XF_PROOF_REFUTED, "%s: %s", xf_proof_name(res.result), res.detail);
    ck_assert_int_eq(xf_verifier_check_axiom_text("x:2", NULL, "(nope x)", "x", 1, 1000, &res, &err), XF_ERR_PARSE);
}
END_TEST

/* ---------------------------------------------------------------- numeric */

START_TEST(numeric_check)
{
    char why[512];
    double err = -1;
    xf_rule *r = matmul_assoc();
    ck_assert_msg(xf_verify_numeric(r, 3, 7, &err, why, sizeof why) == XF_OK, "%s", why);
    ck_assert(err >= 0 && err < 1e-4);
    xf_rule_free(r);
    r = concat_of_convs(true);
    ck_assert_msg(xf_verify_numeric(r, 3, 7, &err, why, sizeof why) == XF_OK, "%s", why);
    xf_rule_free(r);
    r = matmul_comm();
    ck_assert_int_eq(xf_verify_numeric(r, 3, 7, &err, why, sizeof why), XF_ERR_INVALID);
    ck_assert(err > 1e-3);
    ck_assert_msg(strstr(why, "output 0"), "%s", why);
    xf_rule_free(r);
}
END_TEST

/* ---------------------------------------------------------------- tool */

START_TEST(tool_reports_and_fails_on_unproved)
{
    const char *dir = xf_test_tmpdir("verifier_tool");
    char path[1024], cmd[2048];
    xf_library *lib = xf_library_create();
    xf_error err;
    ck_assert_int_eq(xf_library_add(lib, matmul_assoc(), &err), XF_OK);
    ck_assert_int_eq(xf_library_add(lib, conv_relu_fused(), &err), XF_OK);
    snprintf(path, sizeof path, "%s/good.rules", dir);
    ck_assert_msg(xf_library_save(lib, path, &err) == XF_OK, "%s", err.msg);
    char *out = NULL;
    snprintf(cmd, sizeof cmd, "%s --numeric '%s'", xf_test_tool("xflow-verify"), path);
    ck_assert_msg(xf_test_run(cmd, &out) == 0, "%s", out);
    ck_assert_msg(strstr(out, "proved 2"), "%s", out);
    free(out);

    ck_assert_int_eq(xf_library_add(lib, relu_of_sum(), &err), XF_OK);
    snprintf(path, sizeof path, "%s/bad.rules", dir);
    ck_assert_msg(xf_library_save(lib, path, &err) == XF_OK, "%s", err.msg);
    snprintf(cmd, sizeof cmd, "%s --timeout-ms 1000 '%s'", xf_test_tool("xflow-verify"), path);
    ck_assert_int_ne(xf_test_run(cmd, &out), 0);
    ck_assert_msg(strstr(out, "relu_of_sum") && strstr(out, "proved 2"), "%s", out);
    free(out);
    xf_library_free(lib);

    snprintf(cmd, sizeof cmd, "%s '%s/missing.rules'", xf_test_tool("xflow-verify"), dir);
    ck_assert_int_ne(xf_test_run(cmd, &out), 0);
    ck_assert_msg(strstr(out, "missing.rules"), "%s", out);
    free(out);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("verifier");
    TCase *tc = tcase_create("prove");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, proves_known_identities);
    tcase_add_test(tc, rejects_planted_false_rules);
    tcase_add_test(tc, rule_constants);
    tcase_add_test(tc, parallel_provers_agree);
    tcase_add_test(tc, biased_enlarged_merge);
    tcase_add_test(tc, stride_moves);
    tcase_add_test(tc, four_op_laws);
    tcase_add_test(tc, timeout_cuts_a_query);
    tcase_add_test(tc, unsupported_op_is_named);
    suite_add_tcase(s, tc);
    tc = tcase_create("axioms");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, axioms_validate);
    tcase_add_test(tc, planted_axiom_error_fails_validation);
    suite_add_tcase(s, tc);
    tc = tcase_create("numeric");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, numeric_check);
    tcase_add_test(tc, tool_reports_and_fails_on_unproved);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
