#include "backend_util.h"

#include "core_builders.h"
#include "xf_runtime.h"

#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

int xf_bt_input(xf_graph *g, xf_dtype t, xf_shape s)
{
    char name[32];
    snprintf(name, sizeof name, "in%d", g->n_inputs);
    return xf_graph_add_input(g, name, t, &s);
}

int xf_bt_random_const(xf_graph *g, xf_shape s, bool positive)
{
    xf_tensor *t = xf_tensor_random(XF_DT_FLOAT, &s, (uint64_t)g->n_values * 7919u + 17u);
    ck_assert_ptr_nonnull(t);
    if (positive)
        for (int64_t i = 0; i < xf_shape_numel(&s); i++)
            ((float *)t->data)[i] = 1.0f + 0.5f * ((float *)t->data)[i];
    int v = xf_graph_add_initializer(g, NULL, t);
    xf_tensor_release(t);
    return v;
}

int xf_bt_finish_single(xf_graph *g, xf_op op, int n_in, const int *ins)
{
    int n = node(g, op, "n", n_in, ins, 1);
    xf_graph_add_output(g, out0(g, n));
    return n;
}

void xf_bt_set_window(xf_attrs *a, int ns, const int64_t *k, const int64_t *s, const int64_t *p_begin,
                      const int64_t *p_end, const int64_t *d)
{
    a->n_spatial = ns;
    for (int i = 0; i < ns; i++) {
        a->kernel[i] = k ? k[i] : 0;
        a->strides[i] = s[i];
        a->dilations[i] = d[i];
        a->pads[i] = p_begin[i];
        a->pads[ns + i] = p_end[i];
    }
}

/* The largest |element| of a float tensor (1 for other dtypes). */
static double max_abs_of(const xf_tensor *t)
{
    double m = 0;
    if (t->dtype != XF_DT_FLOAT)
        return 1;
    for (int64_t i = 0; i < xf_tensor_numel(t); i++)
        m = fmax(m, fabs(((const float *)t->data)[i]));
    return m;
}

void xf_bt_check_graph(const xf_graph *g, int64_t opset, const char *backend, bool dynamic_too, double atol,
                       double rtol, const char *what)
{
    xf_error err = {0};
    xf_tensor **in = calloc((size_t)g->n_inputs + 1, sizeof *in);
    xf_tensor **want = calloc((size_t)g->n_outputs + 1, sizeof *want);
    xf_tensor **got = calloc((size_t)g->n_outputs + 1, sizeof *got);
    ck_assert(in && want && got);
    for (int i = 0; i < g->n_inputs; i++) {
        const xf_value *v = &g->values[g->inputs[i]];
        in[i] = xf_tensor_random(v->dtype, &v->shape, 1000u + (uint64_t)i);
        ck_assert_ptr_nonnull(in[i]);
    }
    xf_session *ref = NULL;
    ck_assert_msg(xf_session_create(g, opset, "cpu_ref", NULL, &ref, &err) == XF_OK, "%s: cpu_ref: %s", what,
                  err.msg);
    ck_assert_msg(xf_session_run(ref, in, want, &err) == XF_OK, "%s: cpu_ref run: %s", what, err.msg);
    for (int dynamic = 0; dynamic < (dynamic_too ? 2 : 1); dynamic++) {
        const char *mode = dynamic ? "dynamic" : "static";
        xf_session_options opt = {.force_dynamic = dynamic};
        xf_session *s = NULL;
        ck_assert_msg(xf_session_create(g, opset, backend, &opt, &s, &err) == XF_OK, "%s: %s: %s", what, backend,
                      err.msg);
        for (int run = 0; run < 2; run++) {
            ck_assert_msg(xf_session_run(s, in, got, &err) == XF_OK, "%s: %s run: %s", what, backend, err.msg);
            for (int k = 0; k < g->n_outputs; k++) {
                double max_abs = 0, max_rel = 0;
                bool ok = false;
                double tol = atol >= 0 ? atol : -atol * max_abs_of(want[k]);
                ck_assert_msg(xf_tensor_compare(got[k], want[k], tol, rtol, &max_abs, &max_rel, &ok, &err) == XF_OK,
                              "%s: %s", what, err.msg);
                ck_assert_msg(ok, "%s (%s on %s): output %d differs from cpu_ref: max abs %.3g, max rel %.3g", what,
                              mode, backend, k, max_abs, max_rel);
                xf_tensor_release(got[k]);
                got[k] = NULL;
            }
        }
        xf_session_free(s);
    }
    xf_session_free(ref);
    for (int i = 0; i < g->n_inputs; i++)
        xf_tensor_release(in[i]);
    for (int k = 0; k < g->n_outputs; k++)
        xf_tensor_release(want[k]);
    free(in);
    free(want);
    free(got);
}
