/* Cost model internals shared by cost.c (models, analytic pricing) and
 * cost_measured.c (per-op timing on a runtime backend). */
#ifndef XF_COST_INTERNAL_H
#define XF_COST_INTERNAL_H

#include "opt_internal.h"

typedef struct cost_device {
    const char *name, *title;
    double matrix_flops; /* FLOP/s of Conv, MatMul, Gemm */
    double vector_flops; /* FLOP/s of everything else */
    double bandwidth;    /* bytes/s */
    double launch;       /* seconds per kernel */
    /* the same for float16/bfloat16 outputs (0: as float32) */
    double half_matrix_flops, half_vector_flops;
} cost_device;

/* One measured op time under its key. */
typedef struct cost_entry {
    uint64_t key;
    double seconds;
} cost_entry;

struct xf_cost_model {
    char name[64];
    char describe[512];
    const cost_device *device; /* analytic models */
    /* measured models */
    const char *backend;
    const cost_device *fallback; /* prices what the backend cannot run */
    int warmup, repeats;
    char *cache_path;            /* NULL: no file */
    cost_entry *table;           /* open addressing; key 0 = empty */
    size_t cap, count;
    bool dirty;
    long measured, cache_hits;
};

const cost_device *cost_device_find(const char *name);
/* Seconds of node i under device d's roofline. */
double cost_analytic_node(const cost_device *d, const xf_graph *g, int i);
/* Views (reshapes, contiguous splits) that runtimes do not copy. */
bool cost_node_is_view(const xf_graph *g, int i);

xf_status cost_measured_init(xf_cost_model *m, const char *name, const xf_cost_options *opt, xf_error *err);
void cost_measured_fini(xf_cost_model *m);
/* Seconds of node i of g, measured once per key; konst[v]: value v is
 * compile-time data (its values are then initializers in the measurement). */
xf_status cost_measured_node(xf_cost_model *m, const xf_graph *g, int i, const bool *konst, int64_t opset,
                             double *seconds, xf_error *err);

#endif
