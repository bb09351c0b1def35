/* Check suite for the rule type (core/xf_rule.h): attribute fields,
 * expressions, validation, and the library text format. */
#include "core_builders.h"
#include "xf_rule.h"
#include "xf_test_util.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* conv(x, w) then relu  ==>  conv(x, w) with fused relu; the kernel size is
 * a parameter k bound on the pattern, odd, and pads are (k - 1) / 2. */
static xf_rule *make_fusion_rule(const char *name)
{
    xf_rule *r = xf_rule_create(name);
    ck_assert_ptr_nonnull(r);
    for (int side = 0; side < 2; side++) {
        xf_graph *g = xf_graph_create(side ? "replacement" : "pattern");
        int x = input(g, "x", XF_DT_FLOAT, SHAPE(1, 2, 5, 5));
        int w = input(g, "w", XF_DT_FLOAT, SHAPE(2, 2, 3, 3));
        int c = NODE(g, XF_OP_CONV, x, w);
        xf_attrs *a = attrs(g, c);
        a->n_spatial = 2;
        a->kernel[0] = a->kernel[1] = 3;
        a->pads[0] = a->pads[1] = a->pads[2] = a->pads[3] = 1;
        int y = out0(g, c);
        if (side)
            a->activation = XF_ACT_RELU;
        else
            y = out0(g, NODE(g, XF_OP_RELU, y));
        xf_graph_add_output(g, y);
        infer_ok(g, 17);
        *(side ? &r->replacement : &r->pattern) = g;
    }
    r->n_params = 1;
    r->param_names = calloc(1, sizeof *r->param_names);
    r->param_names[0] = strdup("k");
    xf_expr k = xf_expr_param(0), one = xf_expr_const(1), two = xf_expr_const(2);
    xf_expr km1 = xf_expr_binary(XF_EX_SUB, &k, &one);
    xf_expr half = xf_expr_binary(XF_EX_DIV, &km1, &two);
    r->n_bindings = 3;
    r->bindings = calloc(3, sizeof *r->bindings);
    r->bindings[0] = (xf_binding){.replacement = false, .node = 0, .field = XF_AF_KERNEL, .index = 0, .e = k};
    r->bindings[1] = (xf_binding){.replacement = true, .node = 0, .field = XF_AF_KERNEL, .index = 0, .e = k};
    r->bindings[2] = (xf_binding){.replacement = true, .node = 0, .field = XF_AF_PAD, .index = 0, .e = half};
    r->n_constraints = 2;
    r->constraints = calloc(2, sizeof *r->constraints);
    r->constraints[0] = (xf_constraint){.cmp = XF_CMP_ODD, .lhs = k};
    xf_expr ci = xf_expr_dim(0, 1), co = xf_expr_dim(1, -3);
    r->constraints[1] = (xf_constraint){.cmp = XF_CMP_EQ, .lhs = ci, .rhs = co};
    r->provenance = strdup("test, found on 1x2x5x5");
    return r;
}

static xf_library *make_library(int n_rules)
{
    xf_library *lib = xf_library_create();
    lib->generator = strdup("xflow-gen test");
    lib->op_set = strdup("Conv,Relu");
    lib->max_ops = 3;
    lib->seed = 18446744073709551615ull;
    lib->opset = 17;
    xf_error e = {0};
    for (int i = 0; i < n_rules; i++) {
        char name[16];
        snprintf(name, sizeof name, "r%04d", i);
        ck_assert_int_eq(xf_library_add(lib, make_fusion_rule(name), &e), XF_OK);
    }
    return lib;
}

static char *format_ok(const xf_library *lib)
{
    char *text = NULL;
    size_t len = 0;
    xf_error e = {0};
    xf_status st = xf_library_format(lib, &text, &len, &e);
    ck_assert_msg(st == XF_OK, "format failed: %s", e.msg);
    ck_assert_uint_eq(strlen(text), len);
    return text;
}

/* Parses text and expects failure whose message contains fragment. */
static void parse_fails(const char *text, const char *fragment)
{
    xf_library *lib = NULL;
    xf_error e = {0};
    xf_status st = xf_library_parse(text, strlen(text), "t.rules", &lib, &e);
    ck_assert_msg(st != XF_OK, "parse of bad text succeeded (wanted '%s')", fragment);
    ck_assert_ptr_null(lib);
    ck_assert_msg(strstr(e.msg, fragment), "message '%s' lacks '%s'", e.msg, fragment);
}

/* ------------------------------------------------------------ fields and expressions */

START_TEST(attr_fields_get_set)
{
    xf_attrs a;
    xf_attrs_default(XF_OP_CONV, &a);
    int64_t v = -1;
    ck_assert(xf_attr_field_get(&a, XF_AF_STRIDE, 1, &v));
    ck_assert_int_eq(v, 1);
    ck_assert(xf_attr_field_set(&a, XF_AF_KERNEL, 1, 3));
    ck_assert_int_eq(a.kernel[1], 3);
    ck_assert_int_eq(a.n_spatial, 2);
    ck_assert(xf_attr_field_set(&a, XF_AF_PERM, 2, 0));
    ck_assert_int_eq(a.n_perm, 3);
    ck_assert(xf_attr_field_set(&a, XF_AF_ACTIVATION, 0, XF_ACT_TANH));
    ck_assert(xf_attr_field_get(&a, XF_AF_ACTIVATION, 0, &v));
    ck_assert_int_eq(v, XF_ACT_TANH);
    ck_assert(!xf_attr_field_set(&a, XF_AF_ACTIVATION, 0, 99));
    ck_assert(!xf_attr_field_get(&a, XF_AF_KERNEL, XF_MAX_SPATIAL, &v));
    ck_assert(!xf_attr_field_get(&a, XF_AF_AXIS, 1, &v));
    ck_assert(!xf_attr_field_set(&a, XF_AF_PAD, -1, 0));
    ck_assert_str_eq(xf_attr_field_name(XF_AF_DILATION), "dilation");
}
END_TEST

START_TEST(expr_eval_cases)
{
    xf_shape shapes[2] = {SHAPE(2, 3, 7), SHAPE(5)};
    int64_t params[2] = {10, 4};
    bool bound[2] = {true, false};
    xf_expr p0 = xf_expr_param(0), p1 = xf_expr_param(1), d = xf_expr_dim(0, -1), three = xf_expr_const(3);
    xf_expr sum = xf_expr_binary(XF_EX_ADD, &p0, &d);      /* 10 + 7 */
    xf_expr prod = xf_expr_binary(XF_EX_MUL, &sum, &three); /* 51 */
    int64_t out;
    ck_assert(xf_expr_eval(&prod, params, bound, shapes, 2, &out));
    ck_assert_int_eq(out, 51);
    xf_expr q = xf_expr_binary(XF_EX_DIV, &prod, &three);
    ck_assert(xf_expr_eval(&q, params, bound, shapes, 2, &out));
    ck_assert_int_eq(out, 17);
    xf_expr inexact = xf_expr_binary(XF_EX_DIV, &p0, &three);
    ck_assert(!xf_expr_eval(&inexact, params, bound, shapes, 2, &out));
    ck_assert(!xf_expr_eval(&p1, params, bound, shapes, 2, &out)); /* unbound */
    xf_expr bad_dim = xf_expr_dim(1, 1);
    ck_assert(!xf_expr_eval(&bad_dim, params, bound, shapes, 2, &out));
    xf_expr bad_input = xf_expr_dim(2, 0);
    ck_assert(!xf_expr_eval(&bad_input, params, bound, shapes, 2, &out));
    /* Trees beyond XF_EXPR_MAX_NODES are refused, not truncated. */
    xf_expr big = xf_expr_const(1);
    int steps = 0;
    for (; big.n > 0; steps++)
        big = xf_expr_binary(XF_EX_ADD, &big, &three);
    ck_assert_int_eq(steps, (XF_EXPR_MAX_NODES - 1) / 2 + 1);
}
END_TEST

START_TEST(rule_validate_and_clone)
{
    xf_rule *r = make_fusion_rule("r");
    xf_error e = {0};
    ck_assert_msg(xf_rule_validate(r, &e) == XF_OK, "%s", e.msg);
    xf_rule *c = xf_rule_clone(r);
    ck_assert_ptr_nonnull(c);
    ck_assert_ptr_ne(c->pattern, r->pattern);
    ck_assert_str_eq(c->param_names[0], "k");
    ck_assert_int_eq(c->n_bindings, 3);
    ck_assert_int_eq(c->bindings[2].e.n, 5);

    /* Binding the parameter only on the replacement side leaves it unbound. */
    c->bindings[0].replacement = true;
    ck_assert_int_eq(xf_rule_validate(c, &e), XF_ERR_INVALID);
    ck_assert_ptr_nonnull(strstr(e.msg, "never bound"));
    c->bindings[0].replacement = false;
    c->bindings[1].node = 7;
    ck_assert_int_eq(xf_rule_validate(c, &e), XF_ERR_INVALID);
    ck_assert_ptr_nonnull(strstr(e.msg, "node 7"));
    c->bindings[1].node = 0;
    c->constraints[1].lhs = xf_expr_dim(3, 0);
    ck_assert_int_eq(xf_rule_validate(c, &e), XF_ERR_INVALID);
    ck_assert_ptr_nonnull(strstr(e.msg, "rule input 3"));
    xf_rule_free(c);
    ck_assert_msg(xf_rule_validate(r, &e) == XF_OK, "clone shares state: %s", e.msg);
    xf_rule_free(r);
}
END_TEST

/* ------------------------------------------------------------ text format */

START_TEST(library_round_trip)
{
    xf_library *lib = make_library(3);
    lib->rules[1]->proved = true;
    char *text = format_ok(lib);
    xf_library *back = NULL;
    xf_error e = {0};
    ck_assert_msg(xf_library_parse(text, strlen(text), "mem", &back, &e) == XF_OK, "%s", e.msg);
    ck_assert_int_eq(back->n_rules, 3);
    ck_assert_int_eq(back->max_ops, 3);
    ck_assert(back->seed == lib->seed);
    ck_assert_int_eq(back->opset, 17);
    ck_assert_str_eq(back->generator, "xflow-gen test");
    ck_assert(back->rules[1]->proved);
    ck_assert(!back->rules[0]->proved);
    const xf_rule *r = back->rules[2];
    ck_assert_str_eq(r->name, "r0002");
    ck_assert_str_eq(r->provenance, "test, found on 1x2x5x5");
    ck_assert_int_eq(r->pattern->n_nodes, 2);
    ck_assert_int_eq(r->replacement->nodes[0].attrs.activation, XF_ACT_RELU);
    ck_assert_int_eq(r->replacement->nodes[0].attrs.pads[3], 1);
    /* Shapes are re-inferred on the way in. */
    expect_shape(r->pattern, r->pattern->outputs[0], SHAPE(1, 2, 5, 5));
    ck_assert_uint_eq(xf_graph_hash(r->pattern), xf_graph_hash(lib->rules[2]->pattern));
    ck_assert_uint_eq(xf_graph_hash(r->replacement), xf_graph_hash(lib->rules[2]->replacement));
    ck_assert_int_eq(r->n_constraints, 2);
    ck_assert_int_eq(r->constraints[1].rhs.node[0].b, -3);
    int64_t params[1] = {5}, out;
    bool bound[1] = {true};
    ck_assert(xf_expr_eval(&r->bindings[2].e, params, bound, NULL, 0, &out));
    ck_assert_int_eq(out, 2);
    char *again = format_ok(back);
    ck_assert_str_eq(again, text);
    free(again);
    free(text);
    xf_library_free(back);
    xf_library_free(lib);
}
END_TEST

START_TEST(library_save_load)
{
    xf_library *lib = make_library(2);
    char path[512];
    snprintf(path, sizeof path, "%s/lib.rules", xf_test_tmpdir("library_save_load"));
    xf_error e = {0};
    ck_assert_msg(xf_library_save(lib, path, &e) == XF_OK, "%s", e.msg);
    xf_library *back = NULL;
    ck_assert_msg(xf_library_load(path, &back, &e) == XF_OK, "%s", e.msg);
    ck_assert_int_eq(back->n_rules, 2);
    xf_library_free(back);
    ck_assert_int_eq(xf_library_load("/nonexistent/x.rules", &back, &e), XF_ERR_IO);
    ck_assert_ptr_nonnull(strstr(e.msg, "/nonexistent/x.rules"));
    xf_library_free(lib);
}
END_TEST

START_TEST(library_duplicate_names)
{
    xf_library *lib = make_library(1);
    xf_error e = {0};
    ck_assert_int_eq(xf_library_add(lib, make_fusion_rule("r0000"), &e), XF_ERR_INVALID);
    ck_assert_int_eq(lib->n_rules, 1);
    xf_library_free(lib);
}
END_TEST

/* Rules left out of a library (xflow-gen --dropped) are numbered in order
 * under their prefix, with the reason leading the provenance on one line,
 * and the file they make parses back. */
START_TEST(library_left_out_rules)
{
    xf_library *lib = xf_library_create();
    xf_error e = {0};
    xf_rule *r = make_fusion_rule("c000017");
    free(r->provenance);
    r->provenance = strdup("fingerprint 1f, found on 2x3");
    ck_assert_int_eq(xf_library_add_left_out(lib, r, 'f', "float mismatch, max diff 0.5", &e), XF_OK);
    ck_assert_int_eq(xf_library_add_left_out(lib, make_fusion_rule("c000018"), 'u', "not proved (refuted: a\nb)", &e),
                     XF_OK);
    ck_assert_str_eq(lib->rules[0]->name, "f0000");
    ck_assert_str_eq(lib->rules[0]->provenance, "float mismatch, max diff 0.5: fingerprint 1f, found on 2x3");
    ck_assert_str_eq(lib->rules[1]->name, "u0001");
    ck_assert_str_eq(lib->rules[1]->provenance, "not proved (refuted: a b): test, found on 1x2x5x5");
    char *text = NULL;
    size_t len = 0;
    ck_assert_msg(xf_library_format(lib, &text, &len, &e) == XF_OK, "%s", e.msg);
    xf_library *back = xf_test_library(text);
    ck_assert_int_eq(back->n_rules, 2);
    ck_assert_str_eq(back->rules[1]->provenance, lib->rules[1]->provenance);
    free(text);
    xf_library_free(back);
    xf_library_free(lib);
}
END_TEST

/* A valid one-rule file whose line `line` (1-based) is replaced by repl. */
static char *variant(int line, const char *repl)
{
    static const char *const lines[] = {
        "xflow-library 1",                          /* 1 */
        "opset 17",                                 /* 2 */
        "rules 1",                                  /* 3 */
        "rule r1",                                  /* 4 */
        "proved no",                                /* 5 */
        "params n",                                 /* 6 */
        "input a FLOAT 2x3",                        /* 7 */
        "input b FLOAT 3x4",                        /* 8 */
        "pattern",                                  /* 9 */
        "  %0 = MatMul(a, b)",                      /* 10 */
        "  %1 = Relu(%0)",                          /* 11 */
        "  output %1",                              /* 12 */
        "replacement",                              /* 13 */
        "  %0 = MatMul(a, b)",                      /* 14 */
        "  %1 = Relu(%0)",                          /* 15 */
        "  output %1",                              /* 16 */
        "bind pattern 0 axis = n",                  /* 17 */
        "constraint (n + 1) <= (a[0] * 2)",         /* 18 */
        "end",                                      /* 19 */
    };
    size_t cap = 4096;
    char *t = malloc(cap);
    t[0] = '\0';
    for (int i = 0; i < (int)(sizeof lines / sizeof lines[0]); i++) {
        strcat(t, i + 1 == line ? repl : lines[i]);
        strcat(t, "\n");
    }
    return t;
}

START_TEST(library_parse_errors_name_lines)
{
    char *good = variant(0, "");
    xf_library *lib = xf_test_library(good);
    ck_assert_int_eq(lib->rules[0]->constraints[0].cmp, XF_CMP_LE);
    xf_library_free(lib);
    free(good);

    static const struct {
        int line;
        const char *repl, *want;
    } cases[] = {
        {1, "xflow-library 9", "t.rules:1: library format version 9"},
        {1, "hello", "t.rules:1: not an xflow library"},
        {7, "input a FLOAT 2xq", "t.rules:7: bad shape '2xq'"},
        {7, "input a FLOT 2x3", "t.rules:7: unknown dtype 'FLOT'"},
        {10, "  %0 = MatMull(a, b)", "t.rules:10: unknown op 'MatMull'"},
        {10, "  %0 = MatMul(a, c)", "t.rules:10: unknown value 'c'"},
        {11, "  %0 = Relu(a)", "t.rules:11: value '%0' defined twice"},
        {11, "  %1 = Relu(%0, a)", "t.rules:11: Relu takes 1 to 1 inputs"},
        {12, "  output %7", "t.rules:12: unknown value '%7'"},
        /* Shape inference of a side is reported at the line that ends it. */
        {8, "input b FLOAT 5x4", "t.rules:13: pattern of rule r1:"},
        {17, "bind pattern 0 kernell = n", "t.rules:17: unknown attribute field 'kernell'"},
        {17, "bind pattern 0 axis = m", "t.rules:17: unknown parameter 'm'"},
        {18, "constraint n >> 2", "t.rules:18:"},
        {18, "constraint (n + 1", "t.rules:18: expected ')'"},
        {18, "constraint z[0] == 1", "t.rules:18: unknown rule input 'z'"},
        {19, "", "rule r1 is not closed by 'end'"},
        {3, "rules 2", "header says 2 rules, file holds 1"},
        {5, "proved maybe", "t.rules:5: expected 'proved yes' or 'proved no'"},
        {17, "bind replacement 0 axis = n", "parameter n is used but never bound"},
        {14, "  %0 = Conv(a, b) kernel=3,3 pads=1", "t.rules:14: bad pads '1'"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *t = variant(cases[i].line, cases[i].repl);
        parse_fails(t, cases[i].want);
        free(t);
    }
}
END_TEST

/* A residual add folded into the kernel: x + conv(x, w) = conv(x, w + e),
 * e the identity kernel of x's channels. */
static const char residual_text[] = "xflow-library 1\n"
                                    "generator test\n"
                                    "op-set Conv,Add\n"
                                    "max-ops 2\n"
                                    "seed 1\n"
                                    "opset 17\n"
                                    "rules 1\n"
                                    "\n"
                                    "rule r0000\n"
                                    "proved yes\n"
                                    "input x FLOAT 2x2x4x4\n"
                                    "input w FLOAT 2x2x3x3\n"
                                    "const e identity_kernel FLOAT 2x2x3x3 = x[1], x[1], 3, 3\n"
                                    "pattern\n"
                                    "  %0 = Conv(x, w) kernel=3,3 strides=1,1 pads=1,1,1,1 dilations=1,1\n"
                                    "  %1 = Add(x, %0)\n"
                                    "  output %1\n"
                                    "replacement\n"
                                    "  %0 = Add(w, e)\n"
                                    "  %1 = Conv(x, %0) kernel=3,3 strides=1,1 pads=1,1,1,1 dilations=1,1\n"
                                    "  output %1\n"
                                    "end\n";

START_TEST(constants_made_and_recognized)
{
    const struct {
        xf_const_kind kind;
        xf_shape shape;
    } cases[] = {
        {XF_CONST_IDENTITY_MATRIX, SHAPE(5, 5)},
        {XF_CONST_IDENTITY_KERNEL, SHAPE(3, 3, 1, 1)},
        {XF_CONST_IDENTITY_KERNEL, SHAPE(4, 4, 3, 5)},
        {XF_CONST_POOL_KERNEL, SHAPE(2, 2, 3, 3)},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        xf_tensor *t = xf_const_make(cases[i].kind, &cases[i].shape);
        ck_assert_ptr_nonnull(t);
        ck_assert_int_eq(xf_const_kind_of(t), cases[i].kind);
        ck_assert_int_eq(xf_const_kind_from_name(xf_const_kind_name(cases[i].kind)), cases[i].kind);
        /* The values: ones (or 1/area) exactly where the kind puts them. */
        const float *d = t->data;
        const xf_shape *s = &cases[i].shape;
        int64_t n = s->dims[0], area = s->ndim == 4 ? s->dims[2] * s->dims[3] : 1;
        double sum = 0;
        for (int64_t e = 0; e < xf_shape_numel(s); e++)
            sum += d[e];
        ck_assert_double_eq_tol(sum, (double)n, 1e-5); /* each diagonal pair sums to one */
        if (cases[i].kind == XF_CONST_IDENTITY_KERNEL)
            ck_assert_float_eq(d[((n - 1) * n + (n - 1)) * area + area / 2], 1.0f);
        /* One element off and it is no constant of any kind. */
        ((float *)t->data)[0] += 0.5f;
        ck_assert_int_eq(xf_const_kind_of(t), XF_CONST_NONE);
        xf_tensor_release(t);
    }
    /* Shapes a kind does not fit. */
    xf_shape wrong[3] = {SHAPE(3, 4), SHAPE(3, 3, 2, 2), SHAPE(3, 3, 3)};
    ck_assert_ptr_null(xf_const_make(XF_CONST_IDENTITY_MATRIX, &wrong[0]));
    ck_assert_ptr_null(xf_const_make(XF_CONST_IDENTITY_KERNEL, &wrong[1]));
    ck_assert_ptr_null(xf_const_make(XF_CONST_POOL_KERNEL, &wrong[2]));
    ck_assert_int_eq(xf_const_kind_from_name("zeros"), XF_CONST_NONE);
}
END_TEST

START_TEST(library_constants)
{
    xf_library *lib = xf_test_library(residual_text);
    const xf_rule *r = lib->rules[0];
    ck_assert_int_eq(r->n_consts, 1);
    ck_assert_int_eq(r->consts[0].kind, XF_CONST_IDENTITY_KERNEL);
    /* The constant is on the replacement only, as an initializer. */
    ck_assert_int_lt(xf_graph_find_value(r->pattern, "e"), 0);
    int v = xf_graph_find_value(r->replacement, "e");
    ck_assert_ptr_eq(xf_rule_const_of(r, r->replacement, v), &r->consts[0]);
    ck_assert_int_eq(xf_const_kind_of(r->replacement->values[v].init), XF_CONST_IDENTITY_KERNEL);
    /* Sized by the inputs: 6 channels give a 6x6x3x3 kernel. */
    xf_shape in[2] = {SHAPE(1, 6, 9, 9), SHAPE(6, 6, 3, 3)}, got;
    ck_assert(xf_rule_const_shape(&r->consts[0], in, 2, &got));
    ck_assert(xf_shape_equal(&got, &in[1]));
    /* Clone and text round trip keep it. */
    xf_rule *c = xf_rule_clone(r);
    ck_assert_int_eq(c->n_consts, 1);
    ck_assert_str_eq(c->consts[0].name, "e");
    xf_rule_free(c);
    char *text = format_ok(lib);
    ck_assert_ptr_nonnull(strstr(text, strstr(residual_text, "rule r0000")));
    free(text);
    xf_library_free(lib);

    static const struct {
        const char *from, *to, *want;
    } bad[] = {
        {"identity_kernel", "zero_kernel", "t.rules:13: unknown constant kind 'zero_kernel'"},
        {"FLOAT 2x2x3x3 =", "FLOAT 2x2x2x2 =", "t.rules:13: constant e: shape 2x2x2x2 does not fit"},
        {"x[1], x[1], 3, 3", "x[1], x[1], 3", "t.rules:13: constant e: expected 4 dims"},
        {"x[1], x[1], 3, 3", "x[1], y[1], 3, 3", "t.rules:13: unknown rule input 'y'"},
        {"const e identity_kernel", "const w identity_kernel", "t.rules:13: constant w has the name of an input"},
        {"FLOAT 2x2x3x3 =", "INT64 2x2x3x3 =", "t.rules:13: constant e: only FLOAT constants"},
        {"Add(w, e)", "Add(w, f)", "t.rules:19: unknown value 'f'"},
        {"Add(w, e)", "Add(w, w)", "constant e is used on neither side"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        const char *at = strstr(residual_text, bad[i].from);
        ck_assert_ptr_nonnull(at);
        size_t pre = (size_t)(at - residual_text);
        char *t = malloc(strlen(residual_text) + strlen(bad[i].to) + 1);
        memcpy(t, residual_text, pre);
        strcpy(t + pre, bad[i].to);
        strcat(t, at + strlen(bad[i].from));
        parse_fails(t, bad[i].want);
        free(t);
    }
}
END_TEST

START_TEST(library_format_refuses_what_it_cannot_hold)
{
    xf_library *lib = make_library(1);
    lib->rules[0]->pattern->nodes[0].attrs.keepdims = 0;
    char *text = NULL;
    xf_error e = {0};
    ck_assert_int_eq(xf_library_format(lib, &text, NULL, &e), XF_ERR_UNSUPPORTED);
    ck_assert_ptr_nonnull(strstr(e.msg, "cannot hold"));
    ck_assert_ptr_null(text);
    xf_library_free(lib);
}
END_TEST

static Suite *rule_suite(void)
{
    Suite *s = suite_create("rule");
    TCase *t = tcase_create("type");
    tcase_add_test(t, attr_fields_get_set);
    tcase_add_test(t, expr_eval_cases);
    tcase_add_test(t, rule_validate_and_clone);
    suite_add_tcase(s, t);
    TCase *f = tcase_create("text");
    tcase_add_test(f, library_round_trip);
    tcase_add_test(f, library_save_load);
    tcase_add_test(f, library_duplicate_names);
    tcase_add_test(f, library_left_out_rules);
    tcase_add_test(f, library_parse_errors_name_lines);
    tcase_add_test(f, library_format_refuses_what_it_cannot_hold);
    tcase_add_test(f, constants_made_and_recognized);
    tcase_add_test(f, library_constants);
    suite_add_tcase(s, f);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(rule_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
