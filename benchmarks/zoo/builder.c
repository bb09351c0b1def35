/* Graph-building vocabulary for the zoo's builders. */
#include "builder.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void zb_init(zb *b, xf_graph *g, uint64_t seed, xf_error *err)
{
    memset(b, 0, sizeof *b);
    b->g = g;
    b->rng = seed;
    b->err = err;
}

/* splitmix64: deterministic on every platform, so zoo files are reproducible. */
static uint64_t next_u64(zb *b)
{
    uint64_t z = (b->rng += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static float next_unit(zb *b) { return (float)((next_u64(b) >> 40) * (1.0 / 16777216.0)); }

static int fail_nomem(zb *b)
{
    if (!b->failed)
        xf_error_set(b->err, XF_ERR_NOMEM, "out of memory building the model");
    b->failed = true;
    return -1;
}

int zb_input(zb *b, const char *name, int ndim, const int64_t *dims)
{
    if (b->failed)
        return -1;
    xf_shape s = xf_shape_make(ndim, dims);
    int v = xf_graph_add_input(b->g, name, XF_DT_FLOAT, &s);
    return v < 0 ? fail_nomem(b) : v;
}

void zb_output(zb *b, int v, const char *name)
{
    if (b->failed || v < 0)
        return;
    char *copy = strdup(name);
    if (!copy) {
        fail_nomem(b);
        return;
    }
    free(b->g->values[v].name);
    b->g->values[v].name = copy;
    xf_graph_add_output(b->g, v);
}

int zb_uniform(zb *b, int ndim, const int64_t *dims, float lo, float hi)
{
    if (b->failed)
        return -1;
    xf_shape s = xf_shape_make(ndim, dims);
    xf_tensor *t = xf_tensor_create(XF_DT_FLOAT, &s);
    if (!t)
        return fail_nomem(b);
    float *p = t->data;
    int64_t n = xf_shape_numel(&s);
    for (int64_t i = 0; i < n; i++)
        p[i] = lo + (hi - lo) * next_unit(b);
    int v = xf_graph_add_initializer(b->g, NULL, t);
    xf_tensor_release(t);
    return v < 0 ? fail_nomem(b) : v;
}

int zb_weight(zb *b, int ndim, const int64_t *dims, float scale)
{
    return zb_uniform(b, ndim, dims, -scale, scale);
}

int zb_const_i64(zb *b, int n, const int64_t *vals)
{
    if (b->failed)
        return -1;
    int64_t d = n;
    xf_shape s = xf_shape_make(1, &d);
    xf_tensor *t = xf_tensor_from_data(XF_DT_INT64, &s, vals);
    if (!t)
        return fail_nomem(b);
    int v = xf_graph_add_initializer(b->g, NULL, t);
    xf_tensor_release(t);
    return v < 0 ? fail_nomem(b) : v;
}

int zb_scalar(zb *b, float value)
{
    if (b->failed)
        return -1;
    xf_shape s = xf_shape_make(0, NULL);
    xf_tensor *t = xf_tensor_from_data(XF_DT_FLOAT, &s, &value);
    if (!t)
        return fail_nomem(b);
    int v = xf_graph_add_initializer(b->g, NULL, t);
    xf_tensor_release(t);
    return v < 0 ? fail_nomem(b) : v;
}

int zb_node(zb *b, xf_op op, int n_in, const int *in, const xf_attrs *attrs)
{
    if (b->failed)
        return -1;
    int out = xf_graph_add_value(b->g, NULL, XF_DT_UNDEFINED, NULL);
    if (out < 0)
        return fail_nomem(b);
    char name[64];
    snprintf(name, sizeof name, "%s_%d", xf_op_name(op), b->n_nodes++);
    int nd = xf_graph_add_node(b->g, op, name, n_in, in, 1, &out);
    if (nd < 0)
        return fail_nomem(b);
    if (attrs) {
        b->g->nodes[nd].attrs = *attrs;
        xf_tensor_retain(attrs->value);
    }
    if (xf_node_infer_shape(b->g, nd, ZB_OPSET, NULL, b->err) != XF_OK) {
        b->failed = true;
        return -1;
    }
    return out;
}

static const xf_shape *shape_of(zb *b, int v) { return &b->g->values[v].shape; }

int zb_conv(zb *b, int x, int cout, int kh, int kw, int stride, int pad, int group, bool bias)
{
    if (b->failed)
        return -1;
    int64_t cin = shape_of(b, x)->dims[1];
    int64_t wd[4] = {cout, cin / group, kh, kw};
    float fan_in = (float)(cin / group * kh * kw);
    int in[3] = {x, zb_weight(b, 4, wd, sqrtf(6.0f / fan_in)), -1};
    int n_in = 2;
    if (bias) {
        int64_t bd = cout;
        in[n_in++] = zb_weight(b, 1, &bd, 0.1f);
    }
    xf_attrs a;
    xf_attrs_default(XF_OP_CONV, &a);
    a.n_spatial = 2;
    a.kernel[0] = kh;
    a.kernel[1] = kw;
    a.strides[0] = a.strides[1] = stride;
    /* pad "same" for odd kernels when pad < 0 */
    int ph = pad < 0 ? kh / 2 : pad, pw = pad < 0 ? kw / 2 : pad;
    a.pads[0] = a.pads[2] = ph;
    a.pads[1] = a.pads[3] = pw;
    a.group = group;
    return zb_node(b, XF_OP_CONV, n_in, in, &a);
}

int zb_bn(zb *b, int x)
{
    if (b->failed)
        return -1;
    int64_t c = shape_of(b, x)->dims[1];
    int in[5] = {x, zb_uniform(b, 1, &c, 0.5f, 1.5f), zb_uniform(b, 1, &c, -0.2f, 0.2f),
                 zb_uniform(b, 1, &c, -0.2f, 0.2f), zb_uniform(b, 1, &c, 0.5f, 1.5f)};
    return zb_node(b, XF_OP_BATCH_NORM, 5, in, NULL);
}

int zb_unary(zb *b, xf_op op, int x) { return zb_node(b, op, 1, &x, NULL); }
int zb_relu(zb *b, int x) { return zb_unary(b, XF_OP_RELU, x); }

int zb_add(zb *b, int x, int y)
{
    int in[2] = {x, y};
    return zb_node(b, XF_OP_ADD, 2, in, NULL);
}

int zb_mul(zb *b, int x, int y)
{
    int in[2] = {x, y};
    return zb_node(b, XF_OP_MUL, 2, in, NULL);
}

int zb_concat(zb *b, int n, const int *xs, int axis)
{
    xf_attrs a;
    xf_attrs_default(XF_OP_CONCAT, &a);
    a.axis = axis;
    return zb_node(b, XF_OP_CONCAT, n, xs, &a);
}

int zb_pool(zb *b, xf_op op, int x, int k, int stride, int pad)
{
    xf_attrs a;
    xf_attrs_default(op, &a);
    a.n_spatial = 2;
    a.kernel[0] = a.kernel[1] = k;
    a.strides[0] = a.strides[1] = stride;
    for (int i = 0; i < 4; i++)
        a.pads[i] = pad;
    return zb_node(b, op, 1, &x, &a);
}

int zb_global_avg_pool(zb *b, int x) { return zb_unary(b, XF_OP_GLOBAL_AVERAGE_POOL, x); }
int zb_flatten(zb *b, int x) { return zb_unary(b, XF_OP_FLATTEN, x); }

int zb_dense(zb *b, int x, int nout)
{
    if (b->failed)
        return -1;
    int64_t nin = shape_of(b, x)->dims[shape_of(b, x)->ndim - 1];
    int64_t wd[2] = {nout, nin}, bd = nout;
    int in[3] = {x, zb_weight(b, 2, wd, sqrtf(3.0f / (float)nin)), zb_weight(b, 1, &bd, 0.1f)};
    xf_attrs a;
    xf_attrs_default(XF_OP_GEMM, &a);
    a.trans_b = 1;
    return zb_node(b, XF_OP_GEMM, 3, in, &a);
}

int zb_matmul(zb *b, int x, int y)
{
    int in[2] = {x, y};
    return zb_node(b, XF_OP_MATMUL, 2, in, NULL);
}

int zb_reshape(zb *b, int x, int n, const int64_t *shape)
{
    int in[2] = {x, zb_const_i64(b, n, shape)};
    return zb_node(b, XF_OP_RESHAPE, 2, in, NULL);
}

int zb_transpose(zb *b, int x, int n, const int64_t *perm)
{
    xf_attrs a;
    xf_attrs_default(XF_OP_TRANSPOSE, &a);
    a.n_perm = n;
    memcpy(a.perm, perm, sizeof(int64_t) * (size_t)n);
    return zb_node(b, XF_OP_TRANSPOSE, 1, &x, &a);
}

int zb_softmax(zb *b, int x, int axis)
{
    xf_attrs a;
    xf_attrs_default(XF_OP_SOFTMAX, &a);
    a.axis = axis;
    return zb_node(b, XF_OP_SOFTMAX, 1, &x, &a);
}

int zb_linear(zb *b, int x, int nout)
{
    if (b->failed)
        return -1;
    int64_t nin = shape_of(b, x)->dims[shape_of(b, x)->ndim - 1];
    int64_t wd[2] = {nin, nout}, bd = nout;
    int y = zb_matmul(b, x, zb_weight(b, 2, wd, sqrtf(3.0f / (float)nin)));
    return zb_add(b, y, zb_weight(b, 1, &bd, 0.1f));
}

int zb_layer_norm(zb *b, int x, float epsilon)
{
    if (b->failed)
        return -1;
    int64_t c = shape_of(b, x)->dims[shape_of(b, x)->ndim - 1];
    int in[3] = {x, zb_uniform(b, 1, &c, 0.5f, 1.5f), zb_uniform(b, 1, &c, -0.2f, 0.2f)};
    xf_attrs a;
    xf_attrs_default(XF_OP_LAYER_NORM, &a);
    a.axis = -1;
    a.epsilon = epsilon;
    return zb_node(b, XF_OP_LAYER_NORM, 3, in, &a);
}

int zb_conv_bn_relu(zb *b, int x, int cout, int kh, int kw, int stride, int pad, int group)
{
    return zb_relu(b, zb_bn(b, zb_conv(b, x, cout, kh, kw, stride, pad, group, false)));
}
