/* xflowc's comparison of two graphs: see xflowc_compare.h. */
#include "xflowc_compare.h"

#include "cli.h"

#include <stdio.h>
#include <stdlib.h>

void xfc_run_pair_free(xfc_run_pair *r)
{
    xf_cli_free_tensors(r->in, r->n_in);
    xf_cli_free_tensors(r->a, r->n_out);
    xf_cli_free_tensors(r->b, r->n_out);
}

xf_status xfc_run_both(const xf_graph *a, const xf_graph *b, int64_t opset, const char *backend,
                       const char *const *files, int n_files, uint64_t seed, xfc_run_pair *r, xf_error *err)
{
    *r = (xfc_run_pair){.n_in = a->n_inputs, .n_out = a->n_outputs};
    r->a = calloc((size_t)r->n_out + 1, sizeof *r->a);
    r->b = calloc((size_t)r->n_out + 1, sizeof *r->b);
    xf_status st = r->a && r->b ? XF_OK : xf_error_set(err, XF_ERR_NOMEM, "out of memory");
    /* one session at a time: a backend may hold the weights again in a
     * layout of its own, and two of them would double that; the original
     * runs as given, so that the sessions' own rewrites are checked too */
    xf_session *s = NULL;
    xf_session_options given = {.as_given = true};
    if (st == XF_OK && (st = xf_session_create(a, opset, backend, &given, &s, err)) == XF_OK &&
        (st = xf_cli_load_inputs(a, files, n_files, seed, &r->in, err)) == XF_OK) {
        r->ran = true;
        st = xf_session_run(s, r->in, r->a, err);
    }
    xf_session_free(s);
    s = NULL;
    if (st == XF_OK) {
        r->ran = false;
        if ((st = xf_session_create(b, opset, backend, NULL, &s, err)) == XF_OK) {
            r->ran = true;
            st = xf_session_run(s, r->in, r->b, err);
        }
        xf_session_free(s);
    }
    return st;
}

xfc_tolerance xfc_output_tolerance(const xf_tensor *want, double atol, double rtol)
{
    double scale = xf_tensor_max_abs(want);
    bool half = xf_dtype_is_half(want->dtype);
    if (half && atol < 0 && rtol < 0) {
        double r = want->dtype == XF_DT_FLOAT16 ? 1e-2 : 5e-2;
        return (xfc_tolerance){r * (scale > 0 ? scale : 1), r, true};
    }
    xfc_tolerance t = {atol < 0 ? 1e-4 : atol, rtol < 0 ? 1e-3 : rtol, false};
    if (scale < 1) {
        t.atol *= scale;
        t.adapted = true;
    }
    return t;
}

int xfc_same_outputs(const xf_graph *a, const xf_graph *b, int64_t opset, uint64_t seed, char *why, size_t n)
{
    xf_error err = {0};
    xfc_run_pair r;
    const char *backend = xf_backend_find("cpu") ? "cpu" : "cpu_ref";
    bool same = xfc_run_both(a, b, opset, backend, NULL, 0, seed, &r, &err) == XF_OK;
    if (!same) {
        snprintf(why, n, "%s", err.msg);
        xf_session *sa = NULL;
        xf_error aerr = {0};
        if (!r.ran && xf_session_create(a, opset, backend, NULL, &sa, &aerr) == XF_ERR_UNSUPPORTED) {
            snprintf(why, n, "%s", aerr.msg);
            xfc_run_pair_free(&r);
            return -1;
        }
        xf_session_free(sa);
    }
    for (int k = 0; k < r.n_out && same; k++) {
        bool ok = false;
        double max_abs = 0, max_rel = 0;
        xfc_tolerance tol = xfc_output_tolerance(r.a[k], -1, -1);
        same = xf_tensor_compare(r.b[k], r.a[k], tol.atol, tol.rtol, &max_abs, &max_rel, &ok, &err) == XF_OK && ok;
        if (!same)
            snprintf(why, n, "output '%s' differs by up to %.3g (relative %.3g) on random inputs",
                     a->values[a->outputs[k]].name, max_abs, max_rel);
    }
    xfc_run_pair_free(&r);
    return same;
}
