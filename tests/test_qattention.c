/* ONNX Runtime's QAttention (com.microsoft), which its quantize_dynamic
 * writes for an Attention: the fixtures in tests/qattention/ are Attention
 * nodes it quantized, with inputs and its outputs (make_qattention.py):
 * int8 weights with a 2-D mask, uint8 weights with a scale and zero point
 * per column and a 1-D mask (unidirectional), and a past with its present.
 * Both host backends give ONNX Runtime's outputs; the node is written back
 * as it came; shapes and types it does not take are refused by name. */
#include "backend_util.h"
#include "core_builders.h"
#include "proto_util.h"
#include "xf_runtime.h"
#include "xf_test_util.h"

#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FIXTURES XF_SOURCE_DIR "/tests/qattention"

static Onnx__ModelProto *read_fixture(const char *name) { return unpack_fixture(FIXTURES, name); }

START_TEST(test_onnx_runtime_outputs)
{
    static const char *const names[] = {"int8", "uint8", "past"};
    check_peer_fixtures(FIXTURES, names, (int)(sizeof names / sizeof *names), XF_OP_MS_QATTENTION);
}
END_TEST

/* A weight scale neither one value nor one per column, and int32 weights,
 * are refused when the model loads, naming the node's input. */
START_TEST(test_refused)
{
    for (int c = 0; c < 2; c++) {
        Onnx__ModelProto *mp = read_fixture("uint8");
        Onnx__TensorProto *t = find_initializer(mp, c == 0 ? "W_scale" : "W_quantized");
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

/* One QAttention of Din inputs (x [1, 3, Din] uint8 around zero point
 * 128, weights int8 in [-127, 127], one scale each) against an Attention
 * of the same values dequantized, on the same backend: a Din of 1040
 * makes sums that may pass 2^24 (the int32 loop), one of 64 the float
 * product of the differences. */
static void against_float_attention(int64_t din, const char *backend)
{
    const int64_t cols = 96, s = 3;
    const float xs = 0.01f, ws = 0.002f;
    uint8_t *x = malloc((size_t)(s * din));
    int8_t *w = malloc((size_t)(din * cols));
    float *xf = malloc(sizeof *xf * (size_t)(s * din)), *wf = malloc(sizeof *wf * (size_t)(din * cols));
    uint64_t r = 12345;
    for (int64_t i = 0; i < s * din; i++) {
        r = r * 6364136223846793005u + 1442695040888963407u;
        x[i] = (uint8_t)(r >> 56);
        xf[i] = (float)(x[i] - 128) * xs;
    }
    for (int64_t i = 0; i < din * cols; i++) {
        r = r * 6364136223846793005u + 1442695040888963407u;
        w[i] = (int8_t)((int64_t)(r >> 56) % 255 - 127);
        wf[i] = (float)w[i] * ws;
    }
    xf_graph *q = xf_graph_create("q"), *f = xf_graph_create("f");
    int qx = input(q, "x", XF_DT_UINT8, SHAPE(1, s, din)), fx = input(f, "x", XF_DT_FLOAT, SHAPE(1, s, din));
    int bias_q = xf_bt_random_const(q, SHAPE(96), false), bias_f = constant(f, NULL, XF_DT_FLOAT, SHAPE(96),
                                                                              q->values[bias_q].init->data);
    uint8_t xz = 128;
    int8_t wz = 0;
    int qn = node(q, XF_OP_MS_QATTENTION, NULL, 8,
                  (int[]){qx, constant(q, NULL, XF_DT_INT8, SHAPE(din, cols), w), bias_q,
                          constant(q, NULL, XF_DT_FLOAT, SCALAR, &xs), constant(q, NULL, XF_DT_FLOAT, SCALAR, &ws),
                          -1, constant(q, NULL, XF_DT_UINT8, SCALAR, &xz), constant(q, NULL, XF_DT_INT8, SCALAR, &wz)},
                  1);
    int fn = node(f, XF_OP_MS_ATTENTION, NULL, 3, (int[]){fx, constant(f, NULL, XF_DT_FLOAT, SHAPE(din, cols), wf),
                                                          bias_f}, 1);
    attrs(q, qn)->attn.num_heads = attrs(f, fn)->attn.num_heads = 4;
    attrs(q, qn)->attn.mask_filter_value = attrs(f, fn)->attn.mask_filter_value = -10000.0f;
    xf_graph_add_output(q, out0(q, qn));
    xf_graph_add_output(f, out0(f, fn));
    infer_ok(q, 17);
    infer_ok(f, 17);
    xf_shape xshape = SHAPE(1, s, din);
    xf_tensor *tq = xf_tensor_from_data(XF_DT_UINT8, &xshape, x), *tf = xf_tensor_from_data(XF_DT_FLOAT, &xshape, xf);
    xf_tensor *yq = NULL, *yf = NULL;
    xf_session *sq = NULL, *sf = NULL;
    xf_error e;
    ck_assert_msg(xf_session_create(q, 17, backend, NULL, &sq, &e) == XF_OK, "%s", e.msg);
    ck_assert_msg(xf_session_create(f, 17, backend, NULL, &sf, &e) == XF_OK, "%s", e.msg);
    ck_assert(xf_session_run(sq, &tq, &yq, &e) == XF_OK && xf_session_run(sf, &tf, &yf, &e) == XF_OK);
    double big = 0, diff = 0;
    for (int64_t i = 0; i < xf_tensor_numel(yf); i++) {
        big = fmax(big, fabs(((float *)yf->data)[i]));
        diff = fmax(diff, fabs(((float *)yf->data)[i] - ((float *)yq->data)[i]));
    }
    ck_assert_msg(big > 0.1 && diff < 1e-5 * big, "Din %lld on %s: %g off, largest %g", (long long)din, backend, diff,
                  big);
    xf_tensor_release(tq);
    xf_tensor_release(tf);
    xf_tensor_release(yq);
    xf_tensor_release(yf);
    xf_session_free(sq);
    xf_session_free(sf);
    xf_graph_free(q);
    xf_graph_free(f);
    free(x);
    free(w);
    free(xf);
    free(wf);
}

START_TEST(test_projection_paths)
{
    for (int b = 0; b < 2; b++) {
        const char *backend = b ? "cpu" : "cpu_ref";
        if (b && !xf_bt_have_cpu())
            continue;
        against_float_attention(1040, backend);
        against_float_attention(64, backend);
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("qattention");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_onnx_runtime_outputs);
    tcase_add_test(tc, test_refused);
    tcase_add_test(tc, test_projection_paths);
    suite_add_tcase(s, tc);
    return xf_test_run_suite(s);
}
