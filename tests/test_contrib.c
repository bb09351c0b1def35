/* Ops of ONNX Runtime's "com.microsoft" domain: import by domain and
 * op_type (a contrib op and an ONNX op of the same name stay apart, an
 * unknown contrib op stays opaque), export with the node's domain and the
 * domain's opset, and the contrib Gelu on the host backends. */
#include "kernel_case_util.h"
#include "proto_util.h"
#include "xf_test_util.h"

#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MS "com.microsoft"

static Onnx__NodeProto *ms_node(const char *op, const char *in, const char *out)
{
    Onnx__NodeProto *n = mk_node(op, NULL, (const char *[]){in, NULL}, (const char *[]){out, NULL});
    n->domain = MS;
    return n;
}

/* x -> com.microsoft Gelu -> a; with_plain x -> Gelu -> b; with_unknown
 * x -> com.microsoft NotAnOp -> c. */
static Onnx__ModelProto *gelu_model(bool ms_opset, bool with_plain, bool with_unknown)
{
    static const int64_t d[] = {2, 3};
    Onnx__GraphProto *g = mk_graph("g");
    PUSH(g->n_input, g->input, mk_vi("x", XF_DT_FLOAT, 2, d, NULL));
    PUSH(g->n_node, g->node, ms_node("Gelu", "x", "a"));
    PUSH(g->n_output, g->output, mk_vi("a", XF_DT_FLOAT, 2, d, NULL));
    if (with_plain) {
        PUSH(g->n_node, g->node, mk_node("Gelu", NULL, (const char *[]){"x", NULL}, (const char *[]){"b", NULL}));
        PUSH(g->n_output, g->output, mk_vi("b", XF_DT_FLOAT, 2, d, NULL));
    }
    if (with_unknown) {
        PUSH(g->n_node, g->node, ms_node("NotAnOp", "x", "c"));
        PUSH(g->n_output, g->output, mk_vi("c", XF_DT_FLOAT, 2, d, NULL));
    }
    Onnx__ModelProto *m = mk_model(g, 20);
    if (ms_opset)
        add_opset(m, MS, 1);
    return m;
}

static int64_t opset_of(const Onnx__ModelProto *mp, const char *domain)
{
    for (size_t i = 0; i < mp->n_opset_import; i++)
        if (strcmp(mp->opset_import[i]->domain ? mp->opset_import[i]->domain : "", domain) == 0)
            return mp->opset_import[i]->version;
    return -1;
}

START_TEST(test_domain_lookup)
{
    ck_assert_int_eq(xf_op_lookup(MS, "Gelu"), XF_OP_MS_GELU);
    ck_assert_int_eq(xf_op_lookup("", "Gelu"), XF_OP_GELU);
    ck_assert_int_eq(xf_op_lookup("ai.onnx", "Gelu"), XF_OP_GELU);
    ck_assert_int_eq(xf_op_lookup(NULL, "Gelu"), XF_OP_GELU);
    ck_assert_int_eq(xf_op_from_onnx("Gelu"), XF_OP_GELU);
    ck_assert_int_eq(xf_op_lookup(MS, "Relu"), XF_OP_OPAQUE);
    ck_assert_int_eq(xf_op_lookup("org.example", "Gelu"), XF_OP_OPAQUE);
    ck_assert_str_eq(xf_op_domain(XF_OP_MS_GELU), MS);
    ck_assert_str_eq(xf_op_domain(XF_OP_GELU), "");
    ck_assert_str_eq(xf_op_domain(XF_OP_OPAQUE), "");
}
END_TEST

/* Import tells the two Gelus apart, keeps the unknown contrib op opaque;
 * export writes each node's domain, and the round trip is exact. */
START_TEST(test_import_export)
{
    xf_model *m;
    xf_error e;
    ck_assert_msg(load_proto(gelu_model(true, true, true), NULL, &m, &e) == XF_OK, "%s", e.msg);
    int counts[XF_OP_COUNT + 1];
    xf_graph_count_ops(m->graph, counts);
    ck_assert_int_eq(counts[XF_OP_MS_GELU], 1);
    ck_assert_int_eq(counts[XF_OP_GELU], 1);
    ck_assert_int_eq(counts[XF_OP_OPAQUE], 1);
    uint8_t *buf;
    Onnx__ModelProto *mp = saved_proto(m, &buf);
    ck_assert_uint_eq(mp->graph->n_node, 3);
    for (size_t i = 0; i < mp->graph->n_node; i++) {
        const Onnx__NodeProto *n = mp->graph->node[i];
        bool want_ms = strcmp(n->output[0], "b") != 0;
        ck_assert_msg(want_ms == (n->domain && strcmp(n->domain, MS) == 0), "node %s: domain '%s'", n->output[0],
                      n->domain ? n->domain : "");
    }
    ck_assert_int_eq(opset_of(mp, MS), 1);
    ck_assert_int_eq(opset_of(mp, ""), 20);
    ck_assert_uint_eq(mp->n_opset_import, 2);
    onnx__model_proto__free_unpacked(mp, NULL);
    free(buf);
    xf_model_free(roundtrip(m));
    xf_model_free(m);
}
END_TEST

/* A model that uses a contrib op without importing its domain loads; its
 * export imports the domain, and passes onnx.checker. */
START_TEST(test_missing_opset_added)
{
    xf_model *m;
    xf_error e;
    ck_assert_msg(load_proto(gelu_model(false, false, false), NULL, &m, &e) == XF_OK, "%s", e.msg);
    uint8_t *buf;
    Onnx__ModelProto *mp = saved_proto(m, &buf);
    ck_assert_int_eq(opset_of(mp, MS), 1);
    ck_assert_uint_eq(mp->n_opset_import, 2);
    onnx__model_proto__free_unpacked(mp, NULL);
    free(buf);
    assert_saved_valid(m, "contrib_gelu");
    xf_model_free(m);
}
END_TEST

/* The contrib Gelu is the exact (erf) form, on every host backend. */
START_TEST(test_gelu_values)
{
    EXPECT(run1(make_case(XF_OP_MS_GELU, 1, F32(DIMS(5), -3, -1, 0, 0.5, 2))), XF_DT_FLOAT, DIMS(5),
           -0.0040496750, -0.1586552539, 0, 0.3457312306, 1.9544997361);
    xf_model *m;
    xf_error e;
    ck_assert_msg(load_proto(gelu_model(true, true, false), NULL, &m, &e) == XF_OK, "%s", e.msg);
    const char *backends[4];
    int nb = host_backends(backends);
    for (int b = 0; b < nb; b++) {
        xf_session *s;
        ck_assert_msg(xf_session_create(m->graph, 20, backends[b], NULL, &s, &e) == XF_OK, "%s: %s", backends[b],
                      e.msg);
        xf_tensor *x = iota_f32(DIMS(2, 3), -2.5f), *out[2] = {NULL, NULL};
        ck_assert_msg(xf_session_run(s, (xf_tensor *const[]){x}, out, &e) == XF_OK, "%s: %s", backends[b], e.msg);
        for (int i = 0; i < 6; i++) {
            double v = -2.5 + i, want = 0.5 * v * erfc(-v / sqrt(2.0));
            ck_assert_msg(fabs(((const float *)out[0]->data)[i] - want) < 1e-5, "%s: %d", backends[b], i);
            ck_assert_msg(fabs(((const float *)out[1]->data)[i] - want) < 1e-5, "%s: %d", backends[b], i);
        }
        for (int k = 0; k < 2; k++)
            xf_tensor_release(out[k]);
        xf_tensor_release(x);
        xf_session_free(s);
    }
    xf_model_free(m);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("contrib");
    TCase *tc = tcase_create("domain");
    tcase_add_checked_fixture(tc, NULL, free_allocs);
    tcase_add_test(tc, test_domain_lookup);
    tcase_add_test(tc, test_import_export);
    tcase_add_test(tc, test_missing_opset_added);
    tcase_add_test(tc, test_gelu_values);
    suite_add_tcase(s, tc);
    return xf_test_run_suite(s);
}
