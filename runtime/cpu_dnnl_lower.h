/* What the cpu backend's graph rewrites (cpu_dnnl_lower.c) share with
 * their QDQ part (cpu_dnnl_lower_qdq.c), their normalizations'
 * (cpu_dnnl_lower_norm.c) and their reductions' (cpu_dnnl_lower_reduce.c). */
#ifndef XF_CPU_DNNL_LOWER_H
#define XF_CPU_DNNL_LOWER_H

#include "cpu_dnnl.h"

/* The rewrites' view of the graph as it was before they began: reader[v]
 * the last node reading value v (of n_values), and what they record per
 * original node: keep[i] false for a node replaced, absorbed[i] the uses
 * of a DequantizeLinear's output that replacing nodes took over. */
typedef struct xf_dn_lowering {
    const int *reader;
    int n_values;
    bool *keep;
    int *absorbed;
    bool exact_int8; /* int8 products are exact here (xf_dn_exact_int8) */
} xf_dn_lowering;

/* The node that alone reads value v of the original graph (not a graph
 * output), else -1. */
int xf_dn_only_reader(const xf_graph *g, const int *reader, int n_values, int v);
/* The binary node q (of op) of value v, which it reads once, and another
 * operand (either side), its output of v's shape: that operand, else -1. */
int xf_dn_other_operand(const xf_graph *g, int q, xf_op op, int v);
/* A new initializer of g named after base, holding t (released). */
int xf_dn_add_constant(xf_graph *g, const char *base, const char *suffix, xf_tensor *t);
/* Whether node i starts a QDQ group, now replaced (appended nodes,
 * low->keep and low->absorbed updated); *nomem when memory ran out. */
bool xf_dn_lower_qdq(xf_graph *g, const xf_dn_lowering *low, int i, bool *nomem);
/* Whether node i starts a layer or RMS normalization written out, now
 * replaced by one node (cpu_dnnl_lower_norm.c); *nomem when memory ran
 * out. */
bool xf_dn_lower_norm(xf_graph *g, const xf_dn_lowering *low, int i, bool *nomem);
/* Whether node i is a reduction over axes that are not one run, now
 * replaced by one reduction per run (cpu_dnnl_lower_reduce.c); *nomem
 * when memory ran out. */
bool xf_dn_lower_reduce(xf_graph *g, const xf_dn_lowering *low, int i, bool *nomem);
/* A new float value of shape s named after value v and suffix (numbered
 * where the name is taken); -1 when out of memory. */
int xf_dn_value_after(xf_graph *g, int v, const char *suffix, const xf_shape *s);
/* A Reshape of value v to `to`, into y (-1: a new value named after v and
 * suffix); its output, or -1 when out of memory. */
int xf_dn_reshaped(xf_graph *g, int v, const xf_shape *to, int y, const char *suffix);

#endif
