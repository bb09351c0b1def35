/* xflowc's measured choice: the graph before the search and the search's
 * result timed side by side on the cpu backend. */
#include "xflowc_measure.h"

#include "cli.h"

#include <stdlib.h>

/* Seconds of one run of the session on inputs, appended to times[*n]
 * (NULL: a warm-up run, not kept). */
static xf_status time_run(xf_session *s, xf_tensor *const *in, int n_out, double *times, int *n, xf_error *err)
{
    xf_tensor **out = calloc((size_t)n_out + 1, sizeof *out);
    if (!out)
        return xf_error_set(err, XF_ERR_NOMEM, "out of memory");
    double t0 = xf_cli_now();
    xf_status st = xf_session_run(s, in, out, err);
    double t = xf_cli_now() - t0;
    xf_cli_free_tensors(out, n_out);
    if (st == XF_OK && times)
        times[(*n)++] = t;
    return st;
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median_of(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, by_value);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* the most turns of the timing in faster_here */
#define MEASURE_TURNS 200

/* Whether the search's result should be written rather than the graph it
 * started from: with a cost model of this CPU, both are timed on the cpu
 * backend (in turns of three runs of each, the first of each three a
 * warm-up, at least two turns and about a second in all), and the median
 * over the turns of the result's time over the other's (each the turn's
 * faster warm run) must be at most 1: pairs taken side by side cancel the
 * machine's drifts, which the fastest run of all, compared before, did
 * not (NasRNN's merges came out faster or slower from one run to the
 * next).  Models estimated at over 500 ms a run are not timed (it would
 * take longer than the search). */
bool xfc_faster_here(const xf_graph *before, const xf_graph *after, int64_t opset, double estimate,
                     const char *const *inputs, int n_inputs, uint64_t seed)
{
    if (estimate > 0.5) {
        xf_cli_info("measured on cpu: not timed (estimated at %.0f ms a run)\n", estimate * 1e3);
        return true;
    }
    xf_error err = {0};
    xf_session *sa = NULL, *sb = NULL;
    xf_tensor **in = NULL;
    double *ta = malloc(sizeof(double) * 2 * MEASURE_TURNS), *tb = malloc(sizeof(double) * 2 * MEASURE_TURNS);
    int na = 0, nb = 0;
    xf_status st = ta && tb ? xf_session_create(before, opset, "cpu", NULL, &sa, &err)
                            : xf_error_set(&err, XF_ERR_NOMEM, "out of memory");
    if (st == XF_OK)
        st = xf_session_create(after, opset, "cpu", NULL, &sb, &err);
    if (st == XF_OK)
        st = xf_cli_load_inputs(before, inputs, n_inputs, seed, &in, &err);
    /* turns of three runs of one graph then three of the other, until
     * about a second has passed: the first run of each three warms the
     * caches for that graph alone (alternating single runs would have the
     * two graphs' weights evict each other, which a deployed model does
     * not suffer) */
    double start = xf_cli_now(), *ratio = malloc(sizeof(double) * MEASURE_TURNS);
    int turns = 0;
    if (!ratio && st == XF_OK)
        st = xf_error_set(&err, XF_ERR_NOMEM, "out of memory");
    for (int r = 0; st == XF_OK && r < MEASURE_TURNS; r++) {
        for (int k = 0; k < 6 && st == XF_OK; k++)
            st = k < 3 ? time_run(sa, in, before->n_outputs, k % 3 ? ta : NULL, &na, &err)
                       : time_run(sb, in, after->n_outputs, k % 3 ? tb : NULL, &nb, &err);
        if (st == XF_OK) { /* this turn's faster warm run of each, paired */
            double a = ta[na - 1] < ta[na - 2] ? ta[na - 1] : ta[na - 2];
            double b = tb[nb - 1] < tb[nb - 2] ? tb[nb - 1] : tb[nb - 2];
            ratio[turns++] = b / a;
        }
        if (r >= 1 && xf_cli_now() - start > 1.0)
            break;
    }
    xf_cli_free_tensors(in, before->n_inputs);
    xf_session_free(sa);
    xf_session_free(sb);
    bool keep = true;
    if (st != XF_OK || turns < 2) {
        xf_cli_info("measured on cpu: not timed (%s)\n", st != XF_OK ? err.msg : "too few runs");
    } else {
        double ma = median_of(ta, na), mb = median_of(tb, nb), mr = median_of(ratio, turns);
        keep = mr <= 1.0;
        xf_cli_info("measured on cpu: %.4g ms before the search, %.4g ms after (medians of %d runs each; "
                    "after / before %.3f, the median of %d turns)%s\n",
                    ma * 1e3, mb * 1e3, na, mr, turns,
                    keep ? "" : ": the rewrites run slower on this CPU, so the graph before the search is written "
                                "(--no-measure writes the search's result)");
    }
    free(ta);
    free(tb);
    free(ratio);
    return keep;
}
