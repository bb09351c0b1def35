/* The pipeline: enumerate, group, build rules; timings and counts. */
#include "gen_internal.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double seconds_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

xf_status xf_generate(const xf_gen_options *opt, xf_library **out, xf_gen_stats *stats, xf_error *err)
{
    xf_gen_options o = {0};
    if (opt)
        o = *opt;
    if (o.max_ops == 0)
        o.max_ops = 3;
    if (o.max_ops < 1 || o.max_ops > GEN_MAX_OPS)
        return xf_error_set(err, XF_ERR_INVALID, "max ops must be 1..%d, not %d", GEN_MAX_OPS, o.max_ops);
    if (o.threads <= 0) {
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        o.threads = n > 0 ? (int)n : 1;
    }
    if (o.threads > 256)
        o.threads = 256;
    xf_gen_stats local = {0}, *st = stats ? stats : &local;
    memset(st, 0, sizeof *st);
    double t0 = seconds_now();

    gen_record *records = NULL;
    int64_t n_records = 0;
    xf_status s = gen_enumerate(o.max_ops, o.seed, o.threads, &records, &n_records, &st->graphs_renamed, &o, err);
    if (s != XF_OK)
        return s;
    double t1 = seconds_now();
    st->graphs = n_records;
    st->peak_records_bytes = (size_t)n_records * sizeof *records;
    st->seconds_enumerate = t1 - t0;

    xf_library *lib = xf_library_create();
    if (!lib || !(lib->generator = strdup(XF_GENERATOR_VERSION)) || !(lib->op_set = strdup(xf_gen_op_set()))) {
        xf_library_free(lib);
        free(records);
        return xf_error_set(err, XF_ERR_NOMEM, "out of memory");
    }
    lib->max_ops = o.max_ops;
    lib->seed = o.seed;
    lib->opset = XF_GENERATOR_OPSET;
    s = gen_build_rules(records, n_records, o.seed, lib, st, &o, err);
    free(records);
    double t2 = seconds_now();
    st->seconds_rules = t2 - t1;
    st->seconds_total = t2 - t0;
    if (s != XF_OK) {
        xf_library_free(lib);
        return s;
    }
    *out = lib;
    return XF_OK;
}
