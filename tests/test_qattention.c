/* ONNX Runtime's QAttention (com.microsoft), which its quantize_dynamic
 * writes for an Attention: the fixtures in tests/qattention/ are Attention
 * nodes it quantized, with inputs and its outputs (make_qattention.py):
 * int8 weights with a 2-D mask, uint8 weights with a scale and zero point
 * per column and a 1-D mask (unidirectional), and a past with its present.
 * Both host backends give ONNX Runtime's outputs; the node is written back
 * as it came; shapes and types it does not take are refused by name. */
#include "backend_util.h"
#include "proto_util.h"
#include "xf_test_util.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FIXTURES XF_SOURCE_DIR "/tests/qattention"

static Onnx__ModelProto *read_fixture(const char *name)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s.onnx", FIXTURES, name);
    return unpack_model_file(path);
}

START_TEST(test_onnx_runtime_outputs)
{
    static const char *const names[] = {"int8", "uint8", "past"};
    for (int f = 0; f < 3; f++) {
        Onnx__ModelProto *mp = read_fixture(names[f]);
        xf_model *m = NULL;
        xf_error e;
        ck_assert_msg(load_proto(mp, NULL, &m, &e) == XF_OK, "%s: %s", names[f], e.msg);
        ck_assert_int_ge(find_node_op(m->graph, XF_OP_MS_QATTENTION), 0);
        xf_tensor *ins[8];
        int n_in = fixture_inputs(FIXTURES, names[f], ins, 8);
        check_fixture_outputs(m, ins, FIXTURES, names[f], "cpu_ref");
        if (xf_bt_have_cpu())
            check_fixture_outputs(m, ins, FIXTURES, names[f], "cpu");
        for (int i = 0; i < n_in; i++)
            xf_tensor_release(ins[i]);
        xf_model *back = roundtrip(m);
        char why[256];
        ck_assert_msg(models_equal(m, back, why, sizeof why), "%s: %s", names[f], why);
        xf_model_free(back);
        xf_model_free(m);
        onnx__model_proto__free_unpacked(mp, NULL);
    }
}
END_TEST

static Onnx__TensorProto *find_init(Onnx__ModelProto *mp, const char *name)
{
    for (size_t i = 0; i < mp->graph->n_initializer; i++)
        if (!strcmp(mp->graph->initializer[i]->name, name))
            return mp->graph->initializer[i];
    ck_abort_msg("no initializer %s", name);
    return NULL;
}

/* A weight scale neither one value nor one per column, and int32 weights,
 * are refused when the model loads, naming the node's input. */
START_TEST(test_refused)
{
    for (int c = 0; c < 2; c++) {
        Onnx__ModelProto *mp = read_fixture("uint8");
        Onnx__TensorProto *t = find_init(mp, c == 0 ? "W_scale" : "W_quantized");
        if (c == 0) {
            t->dims[0] = 48; /* 96 scales as 48 */
            t->n_float_data = t->n_float_data ? 48 : 0;
            t->raw_data.len = t->raw_data.len ? 48 * sizeof(float) : 0;
        } else {
            t->data_type = ONNX__TENSOR_PROTO__DATA_TYPE__INT32; /* 32 x 96 bytes as 32 x 24 int32 */
            t->dims[1] = 24;
        }
        xf_model *m = NULL;
        xf_error e;
        ck_assert(load_proto(mp, NULL, &m, &e) != XF_OK);
        ck_assert_msg(strstr(e.msg, c == 0 ? "weight_scale 48 is neither one value nor one per column"
                                           : "input 1 is INT32; QAttention takes 8-bit input and weights"),
                      "%s", e.msg);
        onnx__model_proto__free_unpacked(mp, NULL);
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("qattention");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_onnx_runtime_outputs);
    tcase_add_test(tc, test_refused);
    suite_add_tcase(s, tc);
    return xf_test_run_suite(s);
}
