/* Shape inference with dims known only at run time: every node case of
 * the ONNX backend test data inferred twice, once as given and once with
 * every dim of its first input unknown (-1, as a graph built with symbolic
 * dims, or the values after a NonZero or NonMaxSuppression, have them).
 * The second must not fail, and every dim it does know must be the one
 * the first found (a dim known only at run time may be 1 or any size, so
 * broadcasting, Concat, the windows, Split and the rest keep it unknown
 * or take the size the other operands give).  DFT and STFT need their
 * signal's last dim (1: real, 2: complex) and may refuse it unknown. */
#include "conformance_util.h"
#include "xf_proto.h"
#include "xf_test_util.h"

#include <check.h>
#include <stdio.h>
#include <string.h>

/* Produced values' shapes forgotten; with first_unknown, graph input 0's
 * dims too. */
static void forget(xf_graph *g, bool first_unknown)
{
    for (int v = 0; v < g->n_values; v++)
        if (g->values[v].producer >= 0)
            g->values[v].shape.ndim = -1;
    if (!first_unknown || g->n_inputs == 0 || g->values[g->inputs[0]].init)
        return;
    xf_shape *s = &g->values[g->inputs[0]].shape;
    for (int d = 0; d < s->ndim; d++)
        s->dims[d] = -1;
}

/* Whether the failure is one of the ops that need the dim: the message names the node's op. */
static bool may_refuse(const char *msg) { return strstr(msg, "(DFT)") || strstr(msg, "(STFT)"); }

START_TEST(unknown_dims_infer_what_known_ones_do)
{
    char dir[4096], **names;
    snprintf(dir, sizeof dir, "%s/node", XF_ONNX_TESTDATA);
    int n = xf_conformance_list(dir, &names);
    ck_assert_msg(n > 0, "no ONNX test data in %s (scripts/setup.sh installs libonnx-testdata)", dir);
    xf_log_set(NULL, NULL, XF_LOG_ERROR); /* symbolic-dim warnings are expected here */
    int checked = 0, partly_unknown = 0, refused = 0;
    for (int i = 0; i < n; i++) {
        char path[4300];
        snprintf(path, sizeof path, "%s/%s/model.onnx", dir, names[i]);
        xf_model *m = NULL;
        xf_error e = {0}, ea = {0}, eb = {0};
        if (!xf_test_exists(path) || xf_model_load(path, NULL, &m, &e) != XF_OK)
            continue;
        int64_t opset = xf_model_opset(m);
        xf_graph *a = xf_graph_clone(m->graph), *b = xf_graph_clone(m->graph);
        ck_assert(a && b);
        forget(a, false);
        forget(b, true);
        if (xf_graph_infer_shapes(a, opset, &ea) == XF_OK) {
            checked++;
            if (xf_graph_infer_shapes(b, opset, &eb) != XF_OK) {
                ck_assert_msg(may_refuse(eb.msg), "%s: with input 0's dims unknown: %s", names[i], eb.msg);
                refused++;
            } else {
                bool unknown_left = false;
                for (int v = 0; v < a->n_values; v++) {
                    const xf_shape *x = &a->values[v].shape, *y = &b->values[v].shape;
                    char sx[160], sy[160];
                    if (y->ndim < 0)
                        continue;
                    bool ok = x->ndim == y->ndim;
                    for (int d = 0; ok && d < y->ndim; d++) {
                        ok = y->dims[d] < 0 || y->dims[d] == x->dims[d];
                        unknown_left |= y->dims[d] < 0 && a->values[v].producer >= 0;
                    }
                    ck_assert_msg(ok, "%s: '%s' is %s, with input 0's dims unknown %s", names[i], a->values[v].name,
                                  xf_shape_str(x, sx, sizeof sx), xf_shape_str(y, sy, sizeof sy));
                }
                partly_unknown += unknown_left;
            }
        }
        xf_graph_free(a);
        xf_graph_free(b);
        xf_model_free(m);
    }
    xf_conformance_free_list(names, n);
    printf("symbolic dims: %d node cases inferred, %d with outputs of dims known only at run time, %d refused "
           "(DFT, STFT)\n", checked, partly_unknown, refused);
    ck_assert_int_gt(checked, 800);
    ck_assert_int_gt(partly_unknown, 500);
    ck_assert_int_le(refused, 10);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("symbolic_dims");
    TCase *tc = tcase_create("symbolic_dims");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, unknown_dims_infer_what_known_ones_do);
    suite_add_tcase(s, tc);
    return xf_test_run_suite(s);
}
