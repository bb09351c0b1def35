/* Scan nodes stay opaque (carried byte for byte) and run on the host
 * backends: the body once per slice of the scan inputs, with its states
 * carried and its scan outputs stacked, along the axes and in the
 * directions the node's attributes give; and the errors for what cannot
 * run. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto_util.h"
#include "xf_runtime.h"
#include "xf_test_util.h"

#define NAMES(...) ((const char *[]){__VA_ARGS__, NULL})

static const int64_t d2[] = {2};

/* (sum, sums) = Scan(s0 = 0, x) at opset `opset`: sum is the sum of x's
 * rows, sums[t] the sum of its first t + 1 rows. */
static Onnx__ModelProto *cumsum_model(int64_t opset)
{
    static const float zeros[] = {0, 0};
    Onnx__GraphProto *g = mk_graph("cumsum");
    PUSH(g->n_input, g->input, mk_vi("x", XF_DT_FLOAT, -1, NULL, NULL));
    PUSH(g->n_initializer, g->initializer, mk_raw("s0", XF_DT_FLOAT, 1, d2, zeros, sizeof zeros));
    Onnx__GraphProto *body = mk_graph("body");
    PUSH(body->n_input, body->input, mk_vi("s_in", XF_DT_FLOAT, 1, d2, NULL));
    PUSH(body->n_input, body->input, mk_vi("row", XF_DT_FLOAT, 1, d2, NULL));
    PUSH(body->n_node, body->node, mk_node("Add", "b_add", NAMES("s_in", "row"), NAMES("s_out")));
    PUSH(body->n_node, body->node, mk_node("Identity", "b_id", NAMES("s_out"), NAMES("elem")));
    PUSH(body->n_output, body->output, mk_vi("s_out", XF_DT_FLOAT, 1, d2, NULL));
    PUSH(body->n_output, body->output, mk_vi("elem", XF_DT_FLOAT, 1, d2, NULL));
    Onnx__NodeProto *scan = mk_node("Scan", "scan", NAMES("s0", "x"), NAMES("sum", "sums"));
    attr_graph(scan, "body", body);
    attr_int(scan, "num_scan_inputs", 1);
    PUSH(g->n_node, g->node, scan);
    PUSH(g->n_output, g->output, mk_vi("sum", XF_DT_FLOAT, -1, NULL, NULL));
    PUSH(g->n_output, g->output, mk_vi("sums", XF_DT_FLOAT, -1, NULL, NULL));
    return mk_model(g, opset);
}

/* (y, r) = Scan(a, b) with no state: a (3x2) scanned along axis 0, b (2x3)
 * along its last axis from its end; the body gives a_t * b_t + w, with w
 * of the outer graph, stacked along axis 1 into y, and a_t, stacked
 * backwards along axis 0 into r (a with its rows reversed). */
static Onnx__ModelProto *axes_model(void)
{
    static const float w[] = {10, 100};
    Onnx__GraphProto *g = mk_graph("axes");
    PUSH(g->n_input, g->input, mk_vi("a", XF_DT_FLOAT, -1, NULL, NULL));
    PUSH(g->n_input, g->input, mk_vi("b", XF_DT_FLOAT, -1, NULL, NULL));
    PUSH(g->n_initializer, g->initializer, mk_raw("w", XF_DT_FLOAT, 1, d2, w, sizeof w));
    Onnx__GraphProto *body = mk_graph("body");
    PUSH(body->n_input, body->input, mk_vi("a_t", XF_DT_FLOAT, -1, NULL, NULL));
    PUSH(body->n_input, body->input, mk_vi("b_t", XF_DT_FLOAT, -1, NULL, NULL));
    PUSH(body->n_node, body->node, mk_node("Mul", "b_mul", NAMES("a_t", "b_t"), NAMES("p")));
    PUSH(body->n_node, body->node, mk_node("Add", "b_add", NAMES("p", "w"), NAMES("y_t")));
    PUSH(body->n_node, body->node, mk_node("Identity", "b_id", NAMES("a_t"), NAMES("r_t")));
    PUSH(body->n_output, body->output, mk_vi("y_t", XF_DT_FLOAT, -1, NULL, NULL));
    PUSH(body->n_output, body->output, mk_vi("r_t", XF_DT_FLOAT, -1, NULL, NULL));
    Onnx__NodeProto *scan = mk_node("Scan", "scan_axes", NAMES("a", "b"), NAMES("y", "r"));
    attr_graph(scan, "body", body);
    attr_int(scan, "num_scan_inputs", 2);
    attr_ints(scan, "scan_input_axes", 2, (const int64_t[]){0, -1});
    attr_ints(scan, "scan_input_directions", 2, (const int64_t[]){0, 1});
    attr_ints(scan, "scan_output_axes", 2, (const int64_t[]){1, 0});
    attr_ints(scan, "scan_output_directions", 2, (const int64_t[]){0, 1});
    PUSH(g->n_node, g->node, scan);
    PUSH(g->n_output, g->output, mk_vi("y", XF_DT_FLOAT, -1, NULL, NULL));
    PUSH(g->n_output, g->output, mk_vi("r", XF_DT_FLOAT, -1, NULL, NULL));
    return mk_model(g, 16);
}

/* Runs m on backend with n_in float inputs (shapes xs, data xd) into
 * out[2]; returns the status, with the message in e. */
static xf_status run2(const xf_model *m, const char *backend, int n_in, const xf_shape *xs, const float *const *xd,
                      xf_tensor **out, xf_error *e)
{
    xf_session *s;
    ck_assert_msg(xf_session_create(m->graph, xf_model_opset(m), backend, NULL, &s, e) == XF_OK, "%s", e->msg);
    ck_assert(xf_session_is_dynamic(s));
    xf_tensor *in[2] = {NULL, NULL};
    for (int k = 0; k < n_in; k++)
        in[k] = xf_tensor_from_data(XF_DT_FLOAT, &xs[k], xd[k]);
    out[0] = out[1] = NULL;
    xf_status st = xf_session_run(s, in, out, e);
    for (int k = 0; k < n_in; k++)
        xf_tensor_release(in[k]);
    xf_session_free(s);
    return st;
}

static void release2(xf_tensor **out)
{
    xf_tensor_release(out[0]);
    xf_tensor_release(out[1]);
}

static void check_cumsum(const xf_model *m, const char *backend)
{
    static const float x[] = {1, 2, 3, 4, 5, 6};
    static const float want_sum[] = {9, 12}, want_sums[] = {1, 2, 4, 6, 9, 12};
    xf_tensor *out[2];
    xf_error e;
    ck_assert_msg(run2(m, backend, 1, &(xf_shape){2, {3, 2}}, (const float *const[]){x}, out, &e) == XF_OK, "%s",
                  e.msg);
    assert_values(out[0], 1, d2, want_sum);
    assert_values(out[1], 2, (const int64_t[]){3, 2}, want_sums);
    release2(out);
}

START_TEST(test_scan_cumulative_sum)
{
    static const int64_t opsets[] = {9, 11, 16};
    const char *backends[2];
    int nb = host_backends(backends);
    for (int o = 0; o < 3; o++) {
        xf_model *m;
        xf_error e;
        ck_assert_msg(load_proto(cumsum_model(opsets[o]), NULL, &m, &e) == XF_OK, "%s", e.msg);
        const xf_node *n = &m->graph->nodes[find_node_op(m->graph, XF_OP_OPAQUE)];
        ck_assert_str_eq(n->opaque->op_type, "Scan");
        ck_assert_int_eq(xf_opaque_find_body(n->opaque, "body")->n_formal, 2);
        const xf_opaque_ints *num = xf_opaque_find_ints(n->opaque, "num_scan_inputs");
        ck_assert(num && num->n == 1 && num->v[0] == 1);
        for (int b = 0; b < nb; b++)
            check_cumsum(m, backends[b]);

        /* no rows: the state unchanged, the scan output empty, its
         * element shape the one the body declares */
        static const float zeros[] = {0, 0};
        xf_tensor *out[2];
        ck_assert_msg(run2(m, "cpu_ref", 1, &(xf_shape){2, {0, 2}}, (const float *const[]){zeros}, out, &e) ==
                          XF_OK,
                      "%s", e.msg);
        assert_values(out[0], 1, d2, zeros);
        assert_values(out[1], 2, (const int64_t[]){0, 2}, zeros);
        release2(out);
        xf_model_free(m);
    }
}
END_TEST

START_TEST(test_scan_axes_directions_and_outer_values)
{
    static const float a[] = {1, 2, 3, 4, 5, 6}, b[] = {1, 2, 3, 4, 5, 6};
    /* t = 0: a_t (1, 2), b_t (3, 6); t = 1: (3, 4), (2, 5); t = 2: (5, 6), (1, 4) */
    static const float want_y[] = {13, 16, 15, 112, 120, 124}, want_r[] = {5, 6, 3, 4, 1, 2};
    static const int64_t d23[] = {2, 3}, d32[] = {3, 2};
    const xf_shape shapes[2] = {{2, {3, 2}}, {2, {2, 3}}};
    xf_model *m;
    xf_error e;
    ck_assert_msg(load_proto(axes_model(), NULL, &m, &e) == XF_OK, "%s", e.msg);
    const xf_node *n = &m->graph->nodes[find_node_op(m->graph, XF_OP_OPAQUE)];
    ck_assert_int_eq(n->opaque->n_own_inputs, 2);
    ck_assert_int_eq(n->n_inputs, 3); /* + w */
    const char *backends[2];
    int nb = host_backends(backends);
    xf_tensor *out[2];
    for (int k = 0; k < nb; k++) {
        ck_assert_msg(run2(m, backends[k], 2, shapes, (const float *const[]){a, b}, out, &e) == XF_OK, "%s",
                      e.msg);
        assert_values(out[0], 2, d23, want_y);
        assert_values(out[1], 2, d32, want_r);
        release2(out);
    }

    /* written back unchanged, and the reloaded model runs the same */
    xf_model *back = roundtrip(m);
    const xf_node *nb2 = &back->graph->nodes[find_node_op(back->graph, XF_OP_OPAQUE)];
    ck_assert_str_eq(nb2->opaque->op_type, "Scan");
    ck_assert_int_eq(nb2->opaque->proto_len, n->opaque->proto_len);
    ck_assert_int_eq(xf_opaque_find_ints(nb2->opaque, "scan_input_axes")->v[1], -1);
    ck_assert_msg(run2(back, "cpu_ref", 2, shapes, (const float *const[]){a, b}, out, &e) == XF_OK, "%s", e.msg);
    assert_values(out[0], 2, d23, want_y);
    assert_values(out[1], 2, d32, want_r);
    release2(out);
    xf_model_free(back);

    /* scan inputs of different lengths */
    static const float a4[] = {1, 2, 3, 4, 5, 6, 7, 8};
    const xf_shape bad[2] = {{2, {4, 2}}, {2, {2, 3}}};
    for (int k = 0; k < nb; k++) {
        ck_assert_int_ne(run2(m, backends[k], 2, bad, (const float *const[]){a4, b}, out, &e), XF_OK);
        ck_assert_msg(strstr(e.msg, "node 'scan_axes' (Scan): scan input 1 has 3 slices along its axis, scan input "
                                    "0 has 4"),
                      "%s", e.msg);
    }
    xf_model_free(m);
}
END_TEST

/* What cannot run says so, naming the node. */
START_TEST(test_scan_errors)
{
    xf_model *m;
    xf_session *s;
    xf_error e;
    /* no num_scan_inputs */
    Onnx__ModelProto *mp = cumsum_model(16);
    mp->graph->node[0]->n_attribute = 1;
    ck_assert_msg(load_proto(mp, NULL, &m, &e) == XF_OK, "%s", e.msg);
    ck_assert_int_ne(xf_session_create(m->graph, xf_model_opset(m), "cpu_ref", NULL, &s, &e), XF_OK);
    ck_assert_msg(strstr(e.msg, "node 'scan' (Scan): num_scan_inputs"), "%s", e.msg);
    xf_model_free(m);

    /* a direction list of the wrong length */
    mp = cumsum_model(16);
    attr_ints(mp->graph->node[0], "scan_input_directions", 2, (const int64_t[]){0, 0});
    ck_assert_msg(load_proto(mp, NULL, &m, &e) == XF_OK, "%s", e.msg);
    ck_assert_int_ne(xf_session_create(m->graph, xf_model_opset(m), "cpu_ref", NULL, &s, &e), XF_OK);
    ck_assert_msg(strstr(e.msg, "node 'scan' (Scan): scan_input_directions has 2 values"), "%s", e.msg);
    xf_model_free(m);

    /* an axis the scan input lacks */
    mp = cumsum_model(16);
    attr_ints(mp->graph->node[0], "scan_input_axes", 1, (const int64_t[]){2});
    ck_assert_msg(load_proto(mp, NULL, &m, &e) == XF_OK, "%s", e.msg);
    static const float x[] = {1, 2, 3, 4, 5, 6};
    xf_tensor *out[2];
    ck_assert_int_ne(run2(m, "cpu_ref", 1, &(xf_shape){2, {3, 2}}, (const float *const[]){x}, out, &e), XF_OK);
    ck_assert_msg(strstr(e.msg, "node 'scan' (Scan): scan input 0, of 2 dims, has no axis 2"), "%s", e.msg);
    xf_model_free(m);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("scan");
    TCase *tc = tcase_create("host");
    tcase_add_checked_fixture(tc, NULL, free_allocs);
    tcase_add_test(tc, test_scan_cumulative_sum);
    tcase_add_test(tc, test_scan_axes_directions_and_outer_values);
    tcase_add_test(tc, test_scan_errors);
    suite_add_tcase(s, tc);
    return xf_test_run_suite(s);
}
