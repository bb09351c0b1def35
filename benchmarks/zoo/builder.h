/* A small graph-building vocabulary for the zoo's model builders. */
#ifndef XF_ZOO_BUILDER_H
#define XF_ZOO_BUILDER_H

#include "xf_core.h"

typedef struct zb {
    xf_graph *g;
    uint64_t rng;
    int n_nodes;     /* for generated node names */
    xf_error *err;
    bool failed;     /* sticky: once a step fails every later step is a no-op */
} zb;

#define ZB_OPSET 17

void zb_init(zb *b, xf_graph *g, uint64_t seed, xf_error *err);
int zb_input(zb *b, const char *name, int ndim, const int64_t *dims);
/* Marks v as a graph output and gives it a readable name. */
void zb_output(zb *b, int v, const char *name);

/* A float initializer of the given shape, uniform in [-scale, scale]. */
int zb_weight(zb *b, int ndim, const int64_t *dims, float scale);
/* A float initializer uniform in [lo, hi]. */
int zb_uniform(zb *b, int ndim, const int64_t *dims, float lo, float hi);
int zb_const_i64(zb *b, int n, const int64_t *vals);
/* A float scalar initializer (shape []), exact. */
int zb_scalar(zb *b, float value);

/* Generic node with one output; returns the output value id (or -1). */
int zb_node(zb *b, xf_op op, int n_in, const int *in, const xf_attrs *attrs);

/* Conv with He-uniform weights; pad applies to every side. */
int zb_conv(zb *b, int x, int cout, int kh, int kw, int stride, int pad, int group, bool bias);
int zb_bn(zb *b, int x);
int zb_relu(zb *b, int x);
int zb_add(zb *b, int x, int y);
int zb_mul(zb *b, int x, int y);
int zb_concat(zb *b, int n, const int *xs, int axis);
int zb_pool(zb *b, xf_op op, int x, int k, int stride, int pad);
int zb_global_avg_pool(zb *b, int x);
int zb_flatten(zb *b, int x);
/* Gemm y = x * W^T + b with W of shape [nout, nin]. */
int zb_dense(zb *b, int x, int nout);
int zb_matmul(zb *b, int x, int y);
int zb_reshape(zb *b, int x, int n, const int64_t *shape);
int zb_transpose(zb *b, int x, int n, const int64_t *perm);
int zb_unary(zb *b, xf_op op, int x);
int zb_softmax(zb *b, int x, int axis);
/* MatMul by a [nin, nout] weight plus a bias Add: the dense layer as
 * exported transformers write it (any number of leading dims). */
int zb_linear(zb *b, int x, int nout);
/* LayerNormalization over the last axis with learned scale and bias. */
int zb_layer_norm(zb *b, int x, float epsilon);

/* Conv + BatchNormalization + Relu, the unit of most CNNs. */
int zb_conv_bn_relu(zb *b, int x, int cout, int kh, int kw, int stride, int pad, int group);

#endif
