/* Model-local functions: calls are inlined at import (attributes passed by
 * reference, a call inside a body inlined in turn, the body's values named
 * after the call), the inlined graph runs and round-trips, and calls whose
 * meaning inlining could change stay opaque: a function importing another
 * version of an opset, or one holding a subgraph. */
#include "proto_util.h"
#include "xf_runtime.h"
#include "xf_test_util.h"

#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static Onnx__FunctionProto *mk_function(const char *name, int64_t opset)
{
    Onnx__FunctionProto *f = zalloc(sizeof *f);
    onnx__function_proto__init(f);
    f->name = (char *)name;
    f->domain = "local";
    PUSH(f->n_input, f->input, "a");
    PUSH(f->n_output, f->output, "b");
    PUSH(f->n_opset_import, f->opset_import, mk_opset("", opset));
    return f;
}

/* The last attribute of n made a reference to the call's attribute ref. */
static void as_ref(Onnx__NodeProto *n, const char *ref) { n->attribute[n->n_attribute - 1]->ref_attr_name = (char *)ref; }

static Onnx__NodeProto *call(const char *op, const char *name, const char *in, const char *out)
{
    Onnx__NodeProto *n = mk_node(op, name, (const char *[]){in, NULL}, (const char *[]){out, NULL});
    n->domain = "local";
    return n;
}

/* Scaled(a; alpha) = LeakyRelu(a, alpha) + a; Twice(a; alpha) =
 * Scaled(Scaled(a; alpha); 0.5).  With others, y2 = Mismatch(x) (a Relu
 * under opset 13 in a model of opset 17) and y3 = WithIf(x) (a body
 * holding a subgraph attribute). */
static Onnx__ModelProto *functions_model(bool others)
{
    static const int64_t xd[] = {2, 3};
    Onnx__FunctionProto *scaled = mk_function("Scaled", 17), *twice = mk_function("Twice", 17);
    PUSH(scaled->n_attribute, scaled->attribute, "alpha");
    Onnx__NodeProto *n = mk_node("LeakyRelu", "lr", (const char *[]){"a", NULL}, (const char *[]){"t", NULL});
    attr_float(n, "alpha", 0);
    as_ref(n, "alpha");
    PUSH(scaled->n_node, scaled->node, n);
    PUSH(scaled->n_node, scaled->node, mk_node("Add", "add", (const char *[]){"t", "a", NULL}, (const char *[]){"b", NULL}));
    PUSH(twice->n_attribute, twice->attribute, "alpha");
    PUSH(twice->n_node, twice->node, n = call("Scaled", "first", "a", "t"));
    attr_float(n, "alpha", 0);
    as_ref(n, "alpha");
    PUSH(twice->n_node, twice->node, n = call("Scaled", "second", "t", "b"));
    attr_float(n, "alpha", 0.5f);

    Onnx__GraphProto *g = mk_graph("g");
    PUSH(g->n_input, g->input, mk_vi("x", XF_DT_FLOAT, 2, xd, NULL));
    PUSH(g->n_node, g->node, n = call("Twice", "tw", "x", "y1"));
    attr_float(n, "alpha", 0.2f);
    PUSH(g->n_output, g->output, mk_vi("y1", XF_DT_FLOAT, 2, xd, NULL));
    Onnx__ModelProto *m = mk_model(g, 17);
    add_opset(m, "local", 1);
    PUSH(m->n_functions, m->functions, scaled);
    PUSH(m->n_functions, m->functions, twice);
    if (!others)
        return m;
    Onnx__FunctionProto *mismatch = mk_function("Mismatch", 13), *with_if = mk_function("WithIf", 17);
    PUSH(mismatch->n_node, mismatch->node, mk_node("Relu", "r", (const char *[]){"a", NULL}, (const char *[]){"b", NULL}));
    n = mk_node("If", "if", (const char *[]){"a", NULL}, (const char *[]){"b", NULL});
    attr_graph(n, "then_branch", mk_graph("then"));
    PUSH(with_if->n_node, with_if->node, n);
    PUSH(m->n_functions, m->functions, mismatch);
    PUSH(m->n_functions, m->functions, with_if);
    PUSH(g->n_node, g->node, call("Mismatch", "mm", "x", "y2"));
    PUSH(g->n_node, g->node, call("WithIf", "wi", "x", "y3"));
    PUSH(g->n_output, g->output, mk_vi("y2", XF_DT_FLOAT, 2, xd, NULL));
    PUSH(g->n_output, g->output, mk_vi("y3", XF_DT_FLOAT, 2, xd, NULL));
    return m;
}

START_TEST(calls_inlined_and_run)
{
    xf_model *m;
    xf_error e;
    ck_assert_msg(load_proto(functions_model(false), NULL, &m, &e) == XF_OK, "%s", e.msg);
    int counts[XF_OP_COUNT + 1];
    xf_graph_count_ops(m->graph, counts);
    ck_assert_int_eq(counts[XF_OP_OPAQUE], 0);
    ck_assert_int_eq(counts[XF_OP_LEAKY_RELU], 2);
    ck_assert_int_eq(counts[XF_OP_ADD], 2);
    /* alpha by reference through two calls, and given literally */
    float alphas[2];
    int k = 0;
    for (int i = 0; i < m->graph->n_nodes; i++)
        if (m->graph->nodes[i].op == XF_OP_LEAKY_RELU)
            alphas[k++] = m->graph->nodes[i].attrs.alpha;
    ck_assert(k == 2 && ((alphas[0] == 0.2f && alphas[1] == 0.5f) || (alphas[0] == 0.5f && alphas[1] == 0.2f)));
    /* the body's values are named after the call */
    ck_assert_int_ge(xf_graph_find_value(m->graph, "tw/Twice/t"), 0);
    ck_assert_int_ge(xf_graph_find_value(m->graph, "tw/Twice/first/Scaled/t"), 0);
    xf_session *s;
    ck_assert_msg(xf_session_create(m->graph, 17, NULL, NULL, &s, &e) == XF_OK, "%s", e.msg);
    static const float xs[] = {-2, -1, 0, 1, 2, 4};
    xf_shape shape = xf_shape_make(2, (int64_t[]){2, 3});
    xf_tensor *x = xf_tensor_from_data(XF_DT_FLOAT, &shape, xs), *y = NULL;
    ck_assert_msg(xf_session_run(s, &x, &y, &e) == XF_OK, "%s", e.msg);
    static const float want[] = {-3.6f, -1.8f, 0, 4, 8, 16};
    for (int i = 0; i < 6; i++)
        ck_assert_msg(fabsf(((const float *)y->data)[i] - want[i]) < 1e-6f, "y[%d] = %g", i, ((const float *)y->data)[i]);
    xf_tensor_release(x);
    xf_tensor_release(y);
    xf_session_free(s);
    xf_model_free(roundtrip(m));
    xf_model_free(m);
}
END_TEST

START_TEST(calls_kept_opaque)
{
    xf_model *m;
    xf_error e;
    ck_assert_msg(load_proto(functions_model(true), NULL, &m, &e) == XF_OK, "%s", e.msg);
    int counts[XF_OP_COUNT + 1];
    xf_graph_count_ops(m->graph, counts);
    ck_assert_int_eq(counts[XF_OP_OPAQUE], 2);
    ck_assert_int_eq(counts[XF_OP_LEAKY_RELU], 2);
    ck_assert_int_eq(counts[XF_OP_RELU], 0);
    /* written back: the opaque calls as they came, the functions kept */
    uint8_t *buf = NULL;
    Onnx__ModelProto *mp = saved_proto(m, &buf);
    ck_assert_int_eq(mp->n_functions, 4);
    int calls = 0;
    for (size_t i = 0; i < mp->graph->n_node; i++)
        calls += mp->graph->node[i]->domain && !strcmp(mp->graph->node[i]->domain, "local");
    ck_assert_int_eq(calls, 2);
    onnx__model_proto__free_unpacked(mp, NULL);
    free(buf);
    xf_model_free(m);
}
END_TEST

/* A function calling itself four times: inlining stops at its bounds
 * (depth and node count) with the calls past them opaque, instead of
 * growing without end. */
START_TEST(recursion_bounded)
{
    static const int64_t xd[] = {2};
    Onnx__FunctionProto *grow = mk_function("Grow", 17);
    PUSH(grow->n_opset_import, grow->opset_import, mk_opset("local", 1));
    static const char *const chain[] = {"a", "t1", "t2", "t3", "b"};
    for (int i = 0; i < 4; i++)
        PUSH(grow->n_node, grow->node, call("Grow", NULL, chain[i], chain[i + 1]));
    Onnx__GraphProto *g = mk_graph("g");
    PUSH(g->n_input, g->input, mk_vi("x", XF_DT_FLOAT, 1, xd, NULL));
    PUSH(g->n_node, g->node, call("Grow", "top", "x", "y"));
    PUSH(g->n_output, g->output, mk_vi("y", XF_DT_FLOAT, 1, xd, NULL));
    Onnx__ModelProto *mp = mk_model(g, 17);
    add_opset(mp, "local", 1);
    PUSH(mp->n_functions, mp->functions, grow);
    xf_model *m;
    xf_error e;
    ck_assert_msg(load_proto(mp, NULL, &m, &e) == XF_OK, "%s", e.msg);
    ck_assert_int_gt(m->graph->n_nodes, 1000);
    ck_assert_int_le(m->graph->n_nodes, 1 << 16);
    xf_model_free(m);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("functions");
    TCase *tc = tcase_create("inline");
    tcase_add_checked_fixture(tc, NULL, free_allocs);
    tcase_add_test(tc, calls_inlined_and_run);
    tcase_add_test(tc, calls_kept_opaque);
    tcase_add_test(tc, recursion_bounded);
    suite_add_tcase(s, tc);
    return xf_test_run_suite(s);
}
