/* ONNX Runtime's channels-last quantized forms (com.microsoft QLinearConv
 * and NhwcMaxPool, QLinearAveragePool with channels_last), made standard
 * ops between Transposes at import (proto/model_nhwc.c).  The fixture in
 * tests/nhwc/ is a net ONNX Runtime quantized (QDQ) and saved at
 * ORT_ENABLE_ALL, with an input and ONNX Runtime's output (make_nhwc.py):
 * both backends give that output exactly, and the model is written back
 * as standard ops with its Transposes cancelled. */
#include "backend_util.h"
#include "proto_util.h"
#include "xf_runtime.h"
#include "xf_test_util.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FIXTURES XF_SOURCE_DIR "/tests/nhwc"

static Onnx__ModelProto *read_net(void) { return unpack_model_file(FIXTURES "/net.onnx"); }

static xf_tensor *fixture_tensor(const char *file)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", FIXTURES, file);
    xf_tensor *t = load_tensor_file(path);
    ck_assert_msg(t != NULL, "no %s", path);
    return t;
}

/* Nodes left opaque. */
static int opaque_nodes(const xf_model *m)
{
    int n = 0;
    for (int i = 0; i < m->graph->n_nodes; i++)
        n += m->graph->nodes[i].op == XF_OP_OPAQUE;
    return n;
}

static void check_run(const xf_model *m, const char *backend)
{
    xf_tensor *x = fixture_tensor("net.in0.pb"), *want = fixture_tensor("net.out0.pb"), *y = NULL;
    xf_session *s = NULL;
    xf_error e;
    ck_assert_msg(xf_session_create(m->graph, xf_model_opset(m), backend, NULL, &s, &e) == XF_OK, "%s", e.msg);
    ck_assert_msg(xf_session_run(s, &x, &y, &e) == XF_OK, "%s", e.msg);
    ck_assert_msg(tensors_equal(want, y), "%s: not ONNX Runtime's output", backend);
    xf_tensor_release(x);
    xf_tensor_release(y);
    xf_tensor_release(want);
    xf_session_free(s);
}

START_TEST(test_onnx_runtime_output)
{
    Onnx__ModelProto *mp = read_net();
    xf_model *m = NULL;
    xf_error e;
    ck_assert_msg(load_proto(mp, NULL, &m, &e) == XF_OK, "%s", e.msg);
    ck_assert_int_eq(opaque_nodes(m), 0);
    check_run(m, "cpu_ref");
    if (xf_bt_have_cpu())
        check_run(m, "cpu");
    xf_model_free(m);
    onnx__model_proto__free_unpacked(mp, NULL);
}
END_TEST

/* Written back: no com.microsoft QLinearConv or NhwcMaxPool, and after
 * canonicalization fewer Transposes than ONNX Runtime wrote. */
START_TEST(test_written_standard)
{
    Onnx__ModelProto *mp = read_net();
    int transposes = 0;
    for (size_t k = 0; k < mp->graph->n_node; k++)
        transposes += !strcmp(mp->graph->node[k]->op_type, "Transpose");
    xf_model *m = NULL;
    xf_error e;
    ck_assert_msg(load_proto(mp, NULL, &m, &e) == XF_OK, "%s", e.msg);
    xf_canon_stats st = {0};
    ck_assert_msg(xf_canonicalize(m->graph, xf_model_opset(m), NULL, &st, &e) == XF_OK, "%s", e.msg);
    uint8_t *buf;
    Onnx__ModelProto *saved = saved_proto(m, &buf);
    int after = 0, convs = 0;
    for (size_t k = 0; k < saved->graph->n_node; k++) {
        const Onnx__NodeProto *np = saved->graph->node[k];
        bool ms = np->domain && !strcmp(np->domain, "com.microsoft");
        ck_assert_msg(!ms || (strcmp(np->op_type, "QLinearConv") && strcmp(np->op_type, "NhwcMaxPool")), "%s",
                      np->op_type);
        after += !strcmp(np->op_type, "Transpose");
        convs += !strcmp(np->op_type, "QLinearConv");
    }
    ck_assert_int_eq(convs, 4);
    ck_assert_int_lt(after, transposes);
    onnx__model_proto__free_unpacked(saved, NULL);
    free(buf);
    assert_saved_valid(m, "nhwc");
    xf_model_free(m);
    onnx__model_proto__free_unpacked(mp, NULL);
}
END_TEST

/* Below opset 12 MaxPool takes no 8-bit integers: NhwcMaxPool stays as
 * written, with a warning, and the rest is made standard. */
START_TEST(test_max_pool_below_opset_12)
{
    Onnx__ModelProto *mp = read_net();
    for (size_t i = 0; i < mp->n_opset_import; i++)
        if (!mp->opset_import[i]->domain || !mp->opset_import[i]->domain[0])
            mp->opset_import[i]->version = 11;
    xf_model *m = NULL;
    xf_error e;
    capture_start();
    ck_assert_msg(load_proto(mp, NULL, &m, &e) == XF_OK, "%s", e.msg);
    ck_assert_int_eq(opaque_nodes(m), 1);
    ck_assert_msg(strstr(captured, "1 of ONNX Runtime's channels-last quantized node kept as written"), "%s",
                  captured);
    xf_model_free(m);
    onnx__model_proto__free_unpacked(mp, NULL);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("nhwc");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_onnx_runtime_output);
    tcase_add_test(tc, test_written_standard);
    tcase_add_test(tc, test_max_pool_below_opset_12);
    suite_add_tcase(s, tc);
    return xf_test_run_suite(s);
}
