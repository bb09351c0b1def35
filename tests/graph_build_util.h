/* Builds ONNX graphs node by node for suites that check a contrib op
 * against the same computation written in standard ONNX ops: both go in one
 * graph over the same inputs, and gb_check runs it on every host backend
 * (static and dynamic mode) and compares the two sets of outputs. */
#ifndef XF_GRAPH_BUILD_UTIL_H
#define XF_GRAPH_BUILD_UTIL_H

#include "proto_util.h"
#include "xf_runtime.h"

enum { GB_MAX_FEEDS = 16, GB_MAX_OUTS = 8 };

typedef struct gbuild {
    Onnx__GraphProto *g;
    int next;                        /* for generated value names */
    int n_feeds;
    xf_tensor *feeds[GB_MAX_FEEDS];  /* what each graph input is fed (owned) */
    const char *params[GB_MAX_FEEDS][XF_MAX_DIMS + 1]; /* symbolic dim names of each input (NULL: fixed) */
    int n_pairs;                     /* outputs: the op's, then the reference's, pair by pair */
    unsigned seed;
} gbuild;

void gb_init(gbuild *b, unsigned seed);
/* Uniform values in [-1, 1) (deterministic from b's seed). */
xf_tensor *gb_rand(gbuild *b, int ndim, const int64_t *dims);
/* A graph input fed with t (owned by b); params names its symbolic dims
 * (NULL or a NULL entry: the dim is fixed).  Returns name. */
const char *gb_input(gbuild *b, const char *name, xf_tensor *t, const char *const *params);
/* An initializer holding t's values (t is released).  Returns its name. */
const char *gb_const(gbuild *b, xf_tensor *t);
const char *gb_ints(gbuild *b, int n, const int64_t *v); /* 1-D int64 constant */
const char *gb_float(gbuild *b, float v);                /* float scalar constant */
/* A node of the default domain (domain NULL) or another, on inputs ins
 * (NULL-terminated; "" for an omitted one), with n_out outputs whose
 * generated names go to outs (may be NULL when n_out is 1).  Returns the
 * node, for attributes; gb_op returns its only output. */
Onnx__NodeProto *gb_node(gbuild *b, const char *op, const char *domain, const char *const *ins, int n_out,
                         const char **outs);
const char *gb_op(gbuild *b, const char *op, const char *const *ins);
/* A com.microsoft MatMulNBits on ins (A, B, scales, zero points, g_idx,
 * bias; "" for an omitted one) with these attributes.  Returns its output. */
const char *gb_matmul_nbits(gbuild *b, const char *const *ins, int64_t k, int64_t n, int64_t bits, int64_t block,
                            int64_t accuracy);
/* attr_ints on a copy of v (attr_ints keeps the pointer). */
void gb_attr_ints(Onnx__NodeProto *n, const char *name, int count, const int64_t *v);
#define GB(b, op, ...) gb_op(b, op, (const char *const[]){__VA_ARGS__, NULL})
/* Output `mine` of the op and `ref` of its standard form (elem: ONNX type). */
void gb_pair(gbuild *b, const char *mine, const char *ref, int elem);
/* Runs the graph (opset 17 + com.microsoft 1) on every host backend,
 * static and forced dynamic, and checks each pair agrees to tol relative to
 * the largest magnitude of the reference; releases the feeds. */
void gb_check(gbuild *b, double tol, const char *what);

/* Runs run(&cases[i], seed + i) for every case of the array. */
#define GB_RUN_CASES(cases, run, seed)                                                                               \
    for (size_t gb_i_ = 0; gb_i_ < sizeof(cases) / sizeof(cases)[0]; gb_i_++)                                      \
    run(&(cases)[gb_i_], (seed) + (unsigned)gb_i_)

#endif
