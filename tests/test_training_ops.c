/* The optimizers of ai.onnx.preview.training on the host backends
 * (runtime/training_ops.c): one step of Adagrad, Momentum (standard, at
 * T = 0 and after; Nesterov) and Adam over two groups of tensors, against
 * ONNX's reference implementation; groups that do not add up and an
 * unknown mode refused by node when the session is made. */
#include "proto_util.h"
#include "xf_runtime.h"
#include "xf_test_util.h"

#include <check.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

static const float x1[] = {1, -2}, g1[] = {0.5f, 0.25f}, s1[] = {0.2f, 0}, h1[] = {0.01f, 0.04f};
static const float x2[] = {3}, g2[] = {-1}, s2[] = {1}, h2[] = {0.5f};

/* op over R, T and the groups (X, G, S[, H]) of two tensors [2] and [1];
 * n_out outputs; its attributes set by the caller. */
static Onnx__NodeProto *optimizer(const char *op, bool adam, int n_out)
{
    static const char *ins[] = {"R", "T", "x1", "x2", "g1", "g2", "s1", "s2", "h1", "h2"};
    static const char *outs[] = {"o0", "o1", "o2", "o3", "o4", "o5"};
    int n_in = adam ? 10 : 8;
    const char **in_list = zalloc(sizeof *in_list * 11), **out_list = zalloc(sizeof *out_list * 7);
    memcpy(in_list, ins, sizeof *ins * (size_t)n_in);
    memcpy(out_list, outs, sizeof *outs * (size_t)n_out);
    Onnx__NodeProto *n = mk_node(op, "opt", in_list, out_list);
    n->domain = "ai.onnx.preview.training";
    return n;
}

static xf_status run_step(Onnx__NodeProto *n, const char *backend, int64_t t, xf_tensor **out, xf_error *e)
{
    static const int64_t two[] = {2}, one[] = {1};
    Onnx__GraphProto *g = mk_graph("step");
    PUSH(g->n_input, g->input, mk_vi("R", XF_DT_FLOAT, 0, NULL, NULL));
    PUSH(g->n_input, g->input, mk_vi("T", XF_DT_INT64, 0, NULL, NULL));
    const char *names[] = {"x1", "x2", "g1", "g2", "s1", "s2", "h1", "h2"};
    const float *data[] = {x1, x2, g1, g2, s1, s2, h1, h2};
    for (size_t i = 0; i < n->n_input - 2; i++)
        PUSH(g->n_initializer, g->initializer,
             mk_raw(names[i], XF_DT_FLOAT, 1, i % 2 ? one : two, data[i], (i % 2 ? 1 : 2) * sizeof(float)));
    PUSH(g->n_node, g->node, n);
    for (size_t k = 0; k < n->n_output; k++)
        PUSH(g->n_output, g->output, mk_vi(n->output[k], XF_DT_FLOAT, -1, NULL, NULL));
    Onnx__ModelProto *mp = mk_model(g, 17);
    add_opset(mp, "ai.onnx.preview.training", 1);
    xf_model *m;
    ck_assert_msg(load_proto(mp, NULL, &m, e) == XF_OK, "%s", e->msg);
    xf_session *s;
    xf_status st = xf_session_create(m->graph, xf_model_opset(m), backend, NULL, &s, e);
    const float r = 0.1f;
    xf_tensor *in[2] = {xf_tensor_from_data(XF_DT_FLOAT, &(xf_shape){0}, &r),
                        xf_tensor_from_data(XF_DT_INT64, &(xf_shape){0}, &t)};
    if (st == XF_OK) {
        st = xf_session_run(s, in, out, e);
        xf_session_free(s);
    }
    xf_tensor_release(in[0]);
    xf_tensor_release(in[1]);
    xf_model_free(m);
    return st;
}

/* The outputs (each [2] then [1], in turn) equal want (3 per output pair). */
static void assert_step(xf_tensor **out, int n_out, const double *want, const char *what)
{
    for (int k = 0, at = 0; k < n_out; k++) {
        int64_t len = k % 2 ? 1 : 2;
        ck_assert_msg(out[k] && out[k]->dtype == XF_DT_FLOAT && xf_tensor_numel(out[k]) == len, "%s: output %d", what,
                      k);
        for (int64_t i = 0; i < len; i++, at++)
            ck_assert_msg(fabs(((const float *)out[k]->data)[i] - want[at]) < 2e-6, "%s: output %d [%lld] is %.8g, "
                          "want %.8g", what, k, (long long)i, (double)((const float *)out[k]->data)[i], want[at]);
        xf_tensor_release(out[k]);
    }
}

START_TEST(optimizers)
{
    const char *backends[2];
    int nb = host_backends(backends);
    for (int b = 0; b < nb; b++) {
        xf_tensor *out[6] = {0};
        xf_error e;
        Onnx__NodeProto *n = optimizer("Adagrad", false, 4);
        attr_float(n, "decay_factor", 0.5f);
        attr_float(n, "epsilon", 1e-2f);
        attr_float(n, "norm_coefficient", 0.1f);
        ck_assert_msg(run_step(n, backends[b], 3, out, &e) == XF_OK, "%s", e.msg);
        assert_step(out, 4, (const double[]){0.96835154, -2.0333333, 3.02275205, 0.56, 0.0025, 1.49}, "Adagrad");
        const struct {
            const char *mode;
            float norm;
            int64_t t;
            double want[6];
        } momenta[] = {
            {"standard", 0.1f, 3, {0.95200002, -2.00250006, 2.94499993, 0.48000002, 0.025, 0.54999995}},
            {"standard", 0.1f, 0, {0.92199999, -2.00500011, 2.98000002, 0.78000003, 0.05, 0.19999999}},
            {"nesterov", 0, 3, {0.9113, -2.03625011, 3.06399989, 0.43000001, 0.125, 0.39999998}},
        };
        for (int c = 0; c < 3; c++) {
            n = optimizer("Momentum", false, 4);
            attr_float(n, "alpha", 0.9f);
            attr_float(n, "beta", 0.5f);
            attr_string(n, "mode", momenta[c].mode);
            attr_float(n, "norm_coefficient", momenta[c].norm);
            ck_assert_msg(run_step(n, backends[b], momenta[c].t, out, &e) == XF_OK, "%s", e.msg);
            assert_step(out, 4, momenta[c].want, momenta[c].mode);
        }
        n = optimizer("Adam", true, 6);
        attr_float(n, "alpha", 0.8f);
        attr_float(n, "beta", 0.9f);
        attr_float(n, "epsilon", 1e-2f);
        attr_float(n, "norm_coefficient", 0.1f);
        attr_float(n, "norm_coefficient_post", 0.05f);
        ck_assert_msg(run_step(n, backends[b], 3, out, &e) == XF_OK, "%s", e.msg);
        assert_step(out, 6,
                    (const double[]){0.82225752, -1.90505707, 2.75663638, 0.28, 0.01, 0.66000003, 0.04500001, 0.03625,
                                     0.49900001},
                    "Adam");
    }
    /* an Adam of Momentum's inputs: 6 tensors are not groups of 4 */
    xf_tensor *out[6] = {0};
    xf_error e;
    ck_assert_int_ne(run_step(optimizer("Adam", false, 4), "cpu_ref", 3, out, &e), XF_OK);
    ck_assert_msg(strstr(e.msg, "node 'opt' (Adam): has 8 inputs and 4 outputs; it takes R, T and 4 tensors per group"),
                  "%s", e.msg);
    Onnx__NodeProto *n = optimizer("Momentum", false, 4);
    attr_string(n, "mode", "heavy");
    ck_assert_int_ne(run_step(n, "cpu_ref", 3, out, &e), XF_OK);
    ck_assert_msg(strstr(e.msg, "mode 'heavy' is neither standard nor nesterov"), "%s", e.msg);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("training_ops");
    TCase *tc = tcase_create("ops");
    tcase_add_checked_fixture(tc, NULL, free_allocs);
    tcase_add_test(tc, optimizers);
    suite_add_tcase(s, tc);
    return xf_test_run_suite(s);
}
