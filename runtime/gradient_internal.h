/* Gradient's backward pass, shared by gradient.c (the pass, elementwise,
 * shape and product ops) and gradient_nn.c (windows, normalizations, ops
 * that move elements).  Each op's vector-Jacobian product reads the
 * output's gradient gy and adds into its inputs' gradients. */
#ifndef XF_GRADIENT_INTERNAL_H
#define XF_GRADIENT_INTERNAL_H

#include "xf_rt_internal.h"

#include <stdlib.h>

typedef struct xf_grad_pass {
    const bool *varies; /* per value of the part: a floating-point function of the xs */
    xf_tensor **val;    /* per value, its tensor (borrowed) */
    double **x;         /* per value, as doubles (made when first read) */
    double **g;         /* per value, its gradient (NULL: zero so far) */
} xf_grad_pass;

/* v's elements as doubles (NULL when out of memory). */
static inline const double *xf_grad_vals(xf_grad_pass *b, int v)
{
    if (!b->x[v]) {
        const xf_tensor *t = b->val[v];
        int64_t n = xf_tensor_numel(t);
        if ((b->x[v] = malloc(sizeof(double) * (size_t)(n + 1))))
            for (int64_t i = 0; i < n; i++)
                b->x[v][i] = xf_rt_load_f64(t->dtype, t->data, i);
    }
    return b->x[v];
}

/* The gradient of v to add into (zeros at first); NULL where v does not
 * vary with the xs, or when memory ran out (*oom set). */
static inline double *xf_grad_of(xf_grad_pass *b, int v, bool *oom)
{
    if (v < 0 || !b->varies[v])
        return NULL;
    if (!b->g[v] && !(b->g[v] = calloc((size_t)xf_tensor_numel(b->val[v]) + 1, sizeof(double))))
        *oom = true;
    return b->g[v];
}

/* Why the backward pass cannot take node n in this form (NULL: it can):
 * a Scatter with a reduction, a second output of a normalization that
 * something reads (used: per value of the part, read by a node or y), a
 * Resize whose roi or scales vary with the xs (varies), a TopK without
 * its Indices. */
const char *xf_grad_nn_refusal(const xf_node *n, const bool *used, const bool *varies);

/* Conv (fused activation included), MaxPool, AveragePool, LpPool and the
 * global pools, BatchNormalization (both modes), LayerNormalization,
 * InstanceNormalization, GroupNormalization; each returns XF_OK or
 * XF_ERR_NOMEM (err set). */
xf_status xf_grad_conv(xf_grad_pass *b, const xf_node *n, const double *gy, xf_error *err);
xf_status xf_grad_pool(xf_grad_pass *b, const xf_node *n, const double *gy, xf_error *err);
xf_status xf_grad_normalize(xf_grad_pass *b, const xf_node *n, const double *gy, xf_error *err);
/* Einsum (every operand, numpy's broadcasting and diagonals), TopK (its
 * Values through its Indices). */
xf_status xf_grad_einsum(xf_grad_pass *b, const xf_node *n, const double *gy, xf_error *err);
xf_status xf_grad_top_k(xf_grad_pass *b, const xf_node *n, const double *gy, xf_error *err);
/* ConvTranspose (input, weight, bias) and Resize or Upsample (input). */
xf_status xf_grad_adjoint(xf_grad_pass *b, const xf_node *n, const double *gy, xf_error *err);
/* Ops whose output elements are copies of input elements or constants
 * (Pad, Tile, DepthToSpace, SpaceToDepth, GatherElements, GatherND,
 * Trilu, ReverseSequence, Compress, CenterCropPad, the Scatters without a
 * reduction): their cpu_ref kernel, run on the positions of the input
 * elements, says where each output element came from. */
bool xf_grad_is_traced(xf_op op);
xf_status xf_grad_traced(xf_grad_pass *b, const xf_node *n, const double *gy, xf_error *err);

#endif
