/* The differential test's random graphs (convolutions, products, pools,
 * pointwise ops, Concats and Splits, values shared between readers,
 * several outputs) on the cpu backend, in static and in dynamic mode,
 * against cpu_ref: the backend's layouts, folds and in-place Concats and
 * Splits compute the same values on structures no hand-written case
 * has. */
#include "random_graph_util.h"
#include "xf_runtime.h"
#include "xf_test_util.h"

#include <check.h>
#include <math.h>
#include <stdlib.h>

enum { MAX_IO = 64 };

/* g's outputs on backend (static or dynamic mode) for inputs in */
static void run_on(const xf_graph *g, const char *backend, bool dynamic, xf_tensor **in, xf_tensor **out)
{
    xf_session *s;
    xf_error err = {0};
    xf_session_options opt = {.force_dynamic = dynamic};
    ck_assert_msg(xf_session_create(g, 17, backend, &opt, &s, &err) == XF_OK, "%s: %s", backend, err.msg);
    ck_assert_msg(xf_session_run(s, in, out, &err) == XF_OK, "%s: %s", backend, err.msg);
    xf_session_free(s);
}

START_TEST(random_graphs_match_cpu_ref)
{
    for (uint64_t seed = 1; seed <= 300; seed++) {
        xf_model *m;
        xf_error err = {0};
        ck_assert_msg(xf_random_model(seed, 20, &m, &err) == XF_OK, "seed %llu: %s", (unsigned long long)seed,
                      err.msg);
        const xf_graph *g = m->graph;
        ck_assert(g->n_inputs <= MAX_IO && g->n_outputs <= MAX_IO);
        xf_tensor *in[MAX_IO], *want[MAX_IO] = {0}, *got[MAX_IO] = {0};
        for (int k = 0; k < g->n_inputs; k++) {
            const xf_value *v = &g->values[g->inputs[k]];
            in[k] = xf_tensor_random(v->dtype, &v->shape, seed * 16 + (uint64_t)k);
            ck_assert_ptr_nonnull(in[k]);
        }
        run_on(g, "cpu_ref", false, in, want);
        for (int dynamic = 0; dynamic < 2; dynamic++) {
            run_on(g, "cpu", dynamic, in, got);
            for (int k = 0; k < g->n_outputs; k++) {
                double big = 1, worst;
                for (int64_t i = 0; i < xf_tensor_numel(want[k]); i++)
                    big = fmax(big, fabs(xf_tensor_get_f64(want[k], i)));
                bool ok;
                ck_assert_int_eq(xf_tensor_compare(got[k], want[k], 1e-4 * big, 1e-3, &worst, NULL, &ok, &err), XF_OK);
                ck_assert_msg(ok, "seed %llu (%s mode) output %d: off by %g (largest %g)", (unsigned long long)seed,
                              dynamic ? "dynamic" : "static", k, worst, big);
                xf_tensor_release(got[k]);
                got[k] = NULL;
            }
        }
        for (int k = 0; k < g->n_outputs; k++)
            xf_tensor_release(want[k]);
        for (int k = 0; k < g->n_inputs; k++)
            xf_tensor_release(in[k]);
        xf_model_free(m);
    }
}
END_TEST

static Suite *cpu_random_suite(void)
{
    Suite *s = suite_create("cpu_random");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, random_graphs_match_cpu_ref);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return xf_test_run_suite(cpu_random_suite()); }
