/* Sessions seen from outside a run: per-node timings (the medians the
 * measured cost model and xflow-run --profile take) and how the backend
 * runs each node. */
#include "session_internal.h"

#include <stdio.h>
#include <stdlib.h>

static int cmp_double(const void *pa, const void *pb)
{
    double a = *(const double *)pa, b = *(const double *)pb;
    return a < b ? -1 : a > b;
}

xf_status xf_session_profile(xf_session *s, xf_tensor *const *inputs, int warmup, int repeats,
                             double *node_seconds, xf_error *err)
{
    int nn = s->g->n_nodes;
    if (repeats < 1)
        return xf_error_set(err, XF_ERR_INVALID, "profiling needs at least one timed run");
    xf_status st = XF_OK;
    for (int r = 0; r < warmup && st == XF_OK; r++)
        st = xf_session_execute(s, inputs, NULL, NULL, err);
    /* times[i * repeats + r]: node i in run r, so each node's runs sort together */
    double *times = malloc(sizeof *times * (size_t)(nn > 0 ? nn : 1) * (size_t)repeats);
    double *run = calloc((size_t)(nn > 0 ? nn : 1), sizeof *run); /* a node no run times stays at 0 */
    if (!times || !run)
        st = xf_error_set(err, XF_ERR_NOMEM, "out of memory");
    for (int r = 0; r < repeats && st == XF_OK; r++) {
        st = xf_session_execute(s, inputs, NULL, run, err);
        for (int i = 0; i < nn; i++)
            times[(size_t)i * (size_t)repeats + (size_t)r] = run[i];
    }
    for (int i = 0; i < nn && st == XF_OK; i++) {
        double *t = &times[(size_t)i * (size_t)repeats];
        qsort(t, (size_t)repeats, sizeof *t, cmp_double);
        node_seconds[i] = repeats % 2 ? t[repeats / 2] : 0.5 * (t[repeats / 2 - 1] + t[repeats / 2]);
    }
    free(times);
    free(run);
    return st;
}

void xf_session_node_impl(const xf_session *s, int node, char *buf, size_t n)
{
    if (n)
        buf[0] = '\0';
    if (node < 0 || node >= s->g->n_nodes)
        return;
    if (!s->dynamic && xf_memplan_skips(&s->plan, node)) {
        snprintf(buf, n, "memory plan (no work)");
        return;
    }
    if (s->flows && s->flows[node]) {
        snprintf(buf, n, "%s", xf_rt_ml_node(&s->g->nodes[node]) ? "host (ONNX-ML)" : "session (subgraphs)");
        return;
    }
    if (xf_static_part_has(s->part, node)) {
        xf_static_part_node_impl(s->part, node, buf, n);
        return;
    }
    if (!s->be->node_impl)
        return;
    void *state = s->dynamic ? (s->dyn_states ? s->dyn_states[node] : NULL) : s->states[node];
    s->be->node_impl(s->ctx, s->g, node, state, buf, n);
}
