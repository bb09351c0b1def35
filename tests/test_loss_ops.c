/* ONNX's loss ops on the host backends (runtime/loss_ops.c):
 * NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss with weights, an
 * ignored index and each reduction, on [N, C, d] against values worked out
 * by hand (equal to ONNX Runtime's); a target out of range fails the run
 * naming the node, an unknown reduction the session. */
#include "proto_util.h"
#include "xf_runtime.h"
#include "xf_test_util.h"

#include <check.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#define NAMES(...) ((const char *[]){__VA_ARGS__, NULL})

static const float x[] = {0.5f, -1, 1, 2, -0.25f, 0, 2, 1, 0, -3, 1.5f, 0.5f}; /* [2, 3, 2] */
static const int64_t targets[] = {0, 2, 1, -1};                                /* [2, 2]; -1 ignored */
static const float w[] = {1, 2, 0.5f};

static xf_model *loss_model(const char *op, const char *reduction, bool log_prob)
{
    static const int64_t xd[] = {2, 3, 2}, td[] = {2, 2}, wd[] = {3};
    Onnx__GraphProto *g = mk_graph("loss");
    PUSH(g->n_input, g->input, mk_vi("x", XF_DT_FLOAT, 3, xd, NULL));
    PUSH(g->n_input, g->input, mk_vi("t", XF_DT_INT64, 2, td, NULL));
    PUSH(g->n_initializer, g->initializer, mk_raw("w", XF_DT_FLOAT, 1, wd, w, sizeof w));
    Onnx__NodeProto *n = mk_node(op, "loss", NAMES("x", "t", "w"), log_prob ? NAMES("l", "lp") : NAMES("l"));
    attr_string(n, "reduction", reduction);
    attr_int(n, "ignore_index", -1);
    PUSH(g->n_node, g->node, n);
    PUSH(g->n_output, g->output, mk_vi("l", XF_DT_FLOAT, -1, NULL, NULL));
    if (log_prob)
        PUSH(g->n_output, g->output, mk_vi("lp", XF_DT_FLOAT, -1, NULL, NULL));
    xf_model *m;
    xf_error e;
    ck_assert_msg(load_proto(mk_model(g, 22), NULL, &m, &e) == XF_OK, "%s", e.msg);
    return m;
}

/* Runs m on (x, t); the run's status, its error in *e. */
static xf_status run_loss(const xf_model *m, const char *backend, const int64_t *t, xf_tensor **out, xf_error *e)
{
    xf_session *s;
    xf_status st = xf_session_create(m->graph, xf_model_opset(m), backend, NULL, &s, e);
    if (st != XF_OK)
        return st;
    xf_tensor *in[2] = {xf_tensor_from_data(XF_DT_FLOAT, &(xf_shape){3, {2, 3, 2}}, x),
                        xf_tensor_from_data(XF_DT_INT64, &(xf_shape){2, {2, 2}}, t)};
    st = xf_session_run(s, in, out, e);
    xf_tensor_release(in[0]);
    xf_tensor_release(in[1]);
    xf_session_free(s);
    return st;
}

static void assert_near(const xf_tensor *t, int64_t n, const float *want, const char *what)
{
    ck_assert_msg(t && t->dtype == XF_DT_FLOAT && xf_tensor_numel(t) == n, "%s: type or size", what);
    for (int64_t i = 0; i < n; i++)
        ck_assert_msg(fabsf(((const float *)t->data)[i] - want[i]) < 1e-6f, "%s: element %lld is %.8g, want %.8g",
                      what, (long long)i, (double)((const float *)t->data)[i], (double)want[i]);
}

START_TEST(losses)
{
    /* NLL: -x[n, t, d] * w[t]: -0.5 * 1, -0 * 0.5, -0 * 2, ignored; the
     * mean divides by 1 + 0.5 + 2 */
    const float nll[3][4] = {{-0.5f, 0, 0, 0}, {-0.5f}, {-0.5f / 3.5f}};
    /* SCE: the same of log_softmax(x) along C */
    float lp[12], sce[3][4] = {{0}};
    for (int b = 0; b < 2; b++)
        for (int d = 0; d < 2; d++) {
            double sum = 0;
            for (int c = 0; c < 3; c++)
                sum += exp(x[(b * 3 + c) * 2 + d]);
            for (int c = 0; c < 3; c++)
                lp[(b * 3 + c) * 2 + d] = (float)(x[(b * 3 + c) * 2 + d] - log(sum));
        }
    double total = 0;
    for (int k = 0; k < 3; k++) { /* the three targets counted */
        int b = k / 2, d = k % 2, c = (int)targets[k];
        sce[0][k] = -lp[(b * 3 + c) * 2 + d] * w[c];
        total += sce[0][k];
    }
    sce[1][0] = (float)total;
    sce[2][0] = (float)(total / 3.5);
    ck_assert(fabsf(sce[1][0] - 7.3330183f) < 1e-5f); /* ONNX Runtime's */
    const char *reds[] = {"none", "sum", "mean"};
    const int64_t sizes[] = {4, 1, 1};
    const char *backends[2];
    int nb = host_backends(backends);
    for (int b = 0; b < nb; b++)
        for (int r = 0; r < 3; r++) {
            char what[80];
            xf_error e;
            xf_model *m = loss_model("NegativeLogLikelihoodLoss", reds[r], false);
            xf_tensor *out[2] = {NULL, NULL};
            ck_assert_msg(run_loss(m, backends[b], targets, out, &e) == XF_OK, "%s", e.msg);
            snprintf(what, sizeof what, "%s NLL %s", backends[b], reds[r]);
            assert_near(out[0], sizes[r], nll[r], what);
            xf_tensor_release(out[0]);
            xf_model_free(m);
            m = loss_model("SoftmaxCrossEntropyLoss", reds[r], true);
            ck_assert_msg(run_loss(m, backends[b], targets, out, &e) == XF_OK, "%s", e.msg);
            snprintf(what, sizeof what, "%s SCE %s", backends[b], reds[r]);
            assert_near(out[0], sizes[r], sce[r], what);
            assert_near(out[1], 12, lp, what);
            xf_tensor_release(out[0]);
            xf_tensor_release(out[1]);
            xf_model_free(m);
        }
    /* a target of 3 for 3 classes */
    xf_model *m = loss_model("NegativeLogLikelihoodLoss", "sum", false);
    xf_tensor *out[2] = {NULL, NULL};
    xf_error e;
    ck_assert_int_ne(run_loss(m, "cpu_ref", (const int64_t[]){0, 3, 1, 1}, out, &e), XF_OK);
    ck_assert_msg(strstr(e.msg, "node 'loss' (NegativeLogLikelihoodLoss): target 1 is 3, not in [0, 3)"), "%s", e.msg);
    xf_model_free(m);
    m = loss_model("SoftmaxCrossEntropyLoss", "max", false);
    ck_assert_int_ne(run_loss(m, "cpu_ref", targets, out, &e), XF_OK);
    ck_assert_msg(strstr(e.msg, "reduction 'max' is none of none, sum, mean"), "%s", e.msg);
    xf_model_free(m);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("loss_ops");
    TCase *tc = tcase_create("ops");
    tcase_add_checked_fixture(tc, NULL, free_allocs);
    tcase_add_test(tc, losses);
    suite_add_tcase(s, tc);
    return xf_test_run_suite(s);
}
