/* ONNX Runtime's DynamicQuantizeLSTM (com.microsoft), which its
 * quantize_dynamic writes for an LSTM: the fixtures in tests/qlstm/ are
 * LSTMs it quantized, with inputs and its outputs (make_qlstm.py): a
 * bidirectional one; a forward one with sequence lengths (one of them 0),
 * initial states, peepholes and clip; a reverse one with per-column scales,
 * input_forget and only its final states as outputs; a bidirectional one
 * with per-column scales (both asked for uint8 weights, for which ONNX
 * Runtime 1.32 writes int8 ones with zero points 0); one of 640 inputs
 * whose products' sums may pass 2^24 (the int32 loops).  Both host
 * backends give ONNX Runtime's outputs; the node is written back as it
 * came; operands it does not take are refused by name. */
#include "backend_util.h"
#include "proto_util.h"
#include "xf_test_util.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FIXTURES XF_SOURCE_DIR "/tests/qlstm"

static Onnx__ModelProto *read_fixture(const char *name) { return unpack_fixture(FIXTURES, name); }

START_TEST(test_onnx_runtime_outputs)
{
    static const char *const names[] = {"bidi", "lens", "reverse", "bidi_u8", "wide"};
    check_peer_fixtures(FIXTURES, names, (int)(sizeof names / sizeof *names), XF_OP_MS_DYNAMIC_QUANTIZE_LSTM);
}
END_TEST

/* Float weights, and a missing R_scale, are refused when the model loads. */
START_TEST(test_refused)
{
    for (int c = 0; c < 2; c++) {
        Onnx__ModelProto *mp = read_fixture("bidi");
        Onnx__NodeProto *np = mp->graph->node[0];
        if (c == 0) {
            Onnx__TensorProto *t = find_initializer(mp, np->input[1]); /* 2 x 12 x 64 bytes as floats */
            t->data_type = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
            t->dims[2] = 16;
        } else {
            free(np->input[10]);
            np->input[10] = strdup("");
        }
        xf_model *m = NULL;
        xf_error e;
        ck_assert(load_proto(mp, NULL, &m, &e) != XF_OK);
        ck_assert_msg(strstr(e.msg, c == 0 ? "input 1 is FLOAT; DynamicQuantizeLSTM takes"
                                           : "input 10 (R_scale) is missing"),
                      "%s", e.msg);
        onnx__model_proto__free_unpacked(mp, NULL);
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("qlstm");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_onnx_runtime_outputs);
    tcase_add_test(tc, test_refused);
    suite_add_tcase(s, tc);
    return xf_test_run_suite(s);
}
