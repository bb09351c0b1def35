/* Random valid models for differential testing (see random_graph_util.h).
 * Every op is chosen among those whose inputs the pool can supply, so each
 * graph is valid by construction; the builder's shape inference confirms it. */
#include "random_graph_util.h"

#include "builder.h"
#include "xf_proto.h"
#include "xf_runtime.h"
#include "xf_test_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct rg {
    zb b;
    uint64_t rng;
    bool wide; /* xf_random_backend_model's graphs */
    int pool[256];
    int n_pool;
    int uses[4096]; /* consumers per value id */
} rg;

static uint64_t next(rg *r)
{
    uint64_t z = (r->rng += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static int pick(rg *r, int n) { return (int)(next(r) % (uint64_t)n); }

static const xf_shape *shape(rg *r, int v) { return &r->b.g->values[v].shape; }

static void add_to_pool(rg *r, int v)
{
    if (v >= 0 && r->n_pool < 256)
        r->pool[r->n_pool++] = v;
}

static void used(rg *r, int v)
{
    if (v >= 0 && v < 4096)
        r->uses[v]++;
}

/* A pool value of rank ndim, or -1. */
static int pick_rank(rg *r, int ndim)
{
    int cand[256], n = 0;
    for (int i = 0; i < r->n_pool; i++)
        if (shape(r, r->pool[i])->ndim == ndim)
            cand[n++] = r->pool[i];
    return n ? cand[pick(r, n)] : -1;
}

/* Another pool value with exactly x's shape (possibly x itself), or -1. */
static int pick_same(rg *r, int x)
{
    int cand[256], n = 0;
    for (int i = 0; i < r->n_pool; i++)
        if (xf_shape_equal(shape(r, r->pool[i]), shape(r, x)))
            cand[n++] = r->pool[i];
    return n ? cand[pick(r, n)] : -1;
}

/* A pool value equal to x's shape in every dim but `axis`, other than x. */
static int pick_concat_partner(rg *r, int x, int axis)
{
    int cand[256], n = 0;
    const xf_shape *s = shape(r, x);
    for (int i = 0; i < r->n_pool; i++) {
        const xf_shape *t = shape(r, r->pool[i]);
        bool ok = t->ndim == s->ndim;
        for (int d = 0; ok && d < s->ndim; d++)
            ok = d == axis || t->dims[d] == s->dims[d];
        if (ok)
            cand[n++] = r->pool[i];
    }
    return n ? cand[pick(r, n)] : -1;
}

/* Add, Mul or Sub of x and a pool value of the same shape. */
static int binary_same_shape(rg *r, int x)
{
    int other = pick_same(r, x);
    int in[2] = {x, other};
    used(r, other);
    return zb_node(&r->b, (xf_op[]){XF_OP_ADD, XF_OP_MUL, XF_OP_SUB}[pick(r, 3)], 2, in, NULL);
}

/* Concat of x and a pool value that fits it along axis. */
static int concat_pair(rg *r, int x, int axis)
{
    int other = pick_concat_partner(r, x, axis);
    int in[2] = {x, other};
    used(r, other);
    return zb_concat(&r->b, 2, in, axis);
}

static int split2(rg *r, int x, int axis, int outs[2])
{
    /* A copy: adding values below may move the value array. */
    int64_t extent = shape(r, x)->dims[axis];
    if (extent < 2)
        return -1;
    outs[0] = xf_graph_add_value(r->b.g, NULL, XF_DT_UNDEFINED, NULL);
    outs[1] = xf_graph_add_value(r->b.g, NULL, XF_DT_UNDEFINED, NULL);
    int64_t first = 1 + pick(r, (int)extent - 1);
    int64_t sizes[2] = {first, extent - first};
    int in[2] = {x, zb_const_i64(&r->b, 2, sizes)};
    char name[32];
    snprintf(name, sizeof name, "Split_%d", r->b.n_nodes++);
    int nd = xf_graph_add_node(r->b.g, XF_OP_SPLIT, name, 2, in, 2, outs);
    if (nd < 0 || outs[0] < 0 || outs[1] < 0)
        return -1;
    r->b.g->nodes[nd].attrs.axis = axis;
    if (xf_node_infer_shape(r->b.g, nd, ZB_OPSET, NULL, r->b.err) != XF_OK) {
        r->b.failed = true;
        return -1;
    }
    return 0;
}

/* x op the scalar v */
static int with_scalar(rg *r, xf_op op, int x, float v)
{
    int in[2] = {x, zb_scalar(&r->b, v)};
    return zb_node(&r->b, op, 2, in, NULL);
}

static int binary(rg *r, xf_op op, int a, int b)
{
    int in[2] = {a, b};
    return zb_node(&r->b, op, 2, in, NULL);
}

/* An activation written out as exporters write it: the exact GELU
 * (torch.onnx's order, or the dynamo exporter's 0.5 on the Erf's side),
 * HF's NewGELU, or SiLU. */
static int written_out(rg *r, int x)
{
    switch (pick(r, 4)) {
    case 0: {
        int e = zb_unary(&r->b, XF_OP_ERF, with_scalar(r, XF_OP_DIV, x, 1.41421356f));
        return with_scalar(r, XF_OP_MUL, binary(r, XF_OP_MUL, x, with_scalar(r, XF_OP_ADD, e, 1.0f)), 0.5f);
    }
    case 1: {
        int e = zb_unary(&r->b, XF_OP_ERF, with_scalar(r, XF_OP_DIV, x, 1.41421356f));
        return binary(r, XF_OP_MUL, x, with_scalar(r, XF_OP_MUL, with_scalar(r, XF_OP_ADD, e, 1.0f), 0.5f));
    }
    case 2: {
        int half = with_scalar(r, XF_OP_MUL, x, 0.5f);
        int q = with_scalar(r, XF_OP_MUL, with_scalar(r, XF_OP_POW, x, 3.0f), 0.044715f);
        int t = zb_unary(&r->b, XF_OP_TANH, with_scalar(r, XF_OP_MUL, binary(r, XF_OP_ADD, x, q), 0.7978846f));
        return binary(r, XF_OP_MUL, half, with_scalar(r, XF_OP_ADD, t, 1.0f));
    }
    default: return binary(r, XF_OP_MUL, x, zb_unary(&r->b, XF_OP_SIGMOID, x));
    }
}

/* x^2 or x^3 of x, or (half of the time) of Tanh(x): chains of them stay
 * within float's range. */
static int bounded_pow(rg *r, int x)
{
    if (pick(r, 2))
        x = zb_unary(&r->b, XF_OP_TANH, x);
    return with_scalar(r, XF_OP_POW, x, pick(r, 2) ? 2.0f : 3.0f);
}

/* ReduceMean of x over the axes given (attribute form, dims kept). */
static int reduce_mean(rg *r, int x, int n_axes, const int64_t *axes)
{
    xf_attrs a;
    xf_attrs_default(XF_OP_REDUCE_MEAN, &a);
    a.has_axes = true;
    a.n_axes = n_axes;
    for (int i = 0; i < n_axes; i++)
        a.axes[i] = axes[i];
    a.keepdims = 1;
    return zb_node(&r->b, XF_OP_REDUCE_MEAN, 1, &x, &a);
}

/* The normalizations' epsilon: 0.01, so that a row of nearly equal values
 * (a Sigmoid of a Softmax's) does not magnify rounding past the tolerance. */
#define NORM_EPSILON 0.01f

/* A layer normalization over `axis` written out as exporters write it
 * (ReduceMean, Sub, Pow 2, ReduceMean, Add epsilon, Sqrt, Div), or the
 * LayerNormalization op over the last axis with a scale and bias. */
static int layer_norm(rg *r, int x, int64_t axis)
{
    if (pick(r, 2))
        return zb_layer_norm(&r->b, x, NORM_EPSILON);
    int d = binary(r, XF_OP_SUB, x, reduce_mean(r, x, 1, &axis));
    int var = reduce_mean(r, with_scalar(r, XF_OP_POW, d, 2.0f), 1, &axis);
    return binary(r, XF_OP_DIV, d, zb_unary(&r->b, XF_OP_SQRT, with_scalar(r, XF_OP_ADD, var, NORM_EPSILON)));
}

/* The ops the wide graphs add (cases 10 to 23 of step_cnn): the `cpu`
 * backend's own loops, activations oneDNN folds, written-out activations,
 * PRelu, Clip, resizes, depthwise convolutions, means, Softmax,
 * normalizations, Max and Sum of three, GlobalMaxPool. */
static int step_wide(rg *r, int x, int64_t c, int which)
{
    switch (which) {
    case 10: {
        static const xf_op ops[] = {XF_OP_ERF,  XF_OP_HARD_SIGMOID, XF_OP_SOFTPLUS, XF_OP_LEAKY_RELU, XF_OP_ABS,
                                    XF_OP_NEG,  XF_OP_ELU,          XF_OP_MISH,     XF_OP_HARD_SWISH, XF_OP_RELU};
        return zb_unary(&r->b, ops[pick(r, 10)], x);
    }
    case 11: return bounded_pow(r, x);
    case 12: return written_out(r, x);
    case 13: { /* Clip to [lo, hi] */
        int in[3] = {x, zb_scalar(&r->b, -0.5f), zb_scalar(&r->b, 0.25f + 0.25f * (float)pick(r, 4))};
        return zb_node(&r->b, XF_OP_CLIP, 3, in, NULL);
    }
    case 14: { /* PRelu by channel */
        int64_t d[3] = {c, 1, 1};
        return binary(r, XF_OP_PRELU, x, zb_weight(&r->b, 3, d, 0.5f));
    }
    case 15: /* Log and Sqrt of values in (0.26, 0.74), away from the tails where float's logistic
              * functions differ (oneDNN's is 0 below -88, cpu_ref's a subnormal) */
        return zb_unary(&r->b, pick(r, 2) ? XF_OP_LOG : XF_OP_SQRT,
                        zb_unary(&r->b, XF_OP_SIGMOID, zb_unary(&r->b, XF_OP_TANH, x)));
    case 16: { /* nearest Resize by 2 where small, else a max pool of stride 2 where it fits */
        const xf_shape *s = shape(r, x);
        if (s->dims[2] > 8 || s->dims[3] > 8)
            return s->dims[2] >= 2 && s->dims[3] >= 2 ? zb_pool(&r->b, XF_OP_MAX_POOL, x, 2, 2, 0)
                                                      : zb_unary(&r->b, XF_OP_RELU, x);
        float scales[4] = {1, 1, 2, 2};
        int64_t four = 4;
        xf_shape ss = xf_shape_make(1, &four);
        xf_tensor *t = xf_tensor_from_data(XF_DT_FLOAT, &ss, scales);
        int sc = t ? xf_graph_add_initializer(r->b.g, NULL, t) : -1;
        xf_tensor_release(t);
        int in[3] = {x, -1, sc};
        return sc < 0 ? -1 : zb_node(&r->b, XF_OP_RESIZE, 3, in, NULL);
    }
    case 17: /* a depthwise convolution */
        return zb_conv(&r->b, x, (int)c, 3, 3, 1, -1, (int)c, pick(r, 2) == 0);
    case 18: { /* means over the channels or over H and W */
        static const int64_t hw[2] = {2, 3}, ch = 1;
        return pick(r, 2) ? reduce_mean(r, x, 1, &ch) : reduce_mean(r, x, 2, hw);
    }
    case 19: return zb_softmax(&r->b, x, pick(r, 2) ? 1 : -1);
    case 20: /* normalized over the channels (written out), or over W */
        return pick(r, 2) ? layer_norm(r, x, 1) : zb_layer_norm(&r->b, x, NORM_EPSILON);
    case 21: { /* InstanceNormalization */
        int in[3] = {x, zb_uniform(&r->b, 1, &c, 0.5f, 1.5f), zb_uniform(&r->b, 1, &c, -0.2f, 0.2f)};
        xf_attrs a;
        xf_attrs_default(XF_OP_INSTANCE_NORM, &a);
        a.epsilon = NORM_EPSILON;
        return zb_node(&r->b, XF_OP_INSTANCE_NORM, 3, in, &a);
    }
    case 22: { /* Max or Sum of three of the same shape */
        int in[3] = {x, pick_same(r, x), pick_same(r, x)};
        used(r, in[1]);
        used(r, in[2]);
        return zb_node(&r->b, pick(r, 2) ? XF_OP_MAX : XF_OP_SUM, 3, in, NULL);
    }
    default: return zb_unary(&r->b, XF_OP_GLOBAL_MAX_POOL, x);
    }
}

static void step_cnn(rg *r)
{
    int x = pick_rank(r, 4);
    const xf_shape sv = *shape(r, x), *s = &sv; /* a copy: building moves the value array */
    int64_t c = s->dims[1];
    int y = -1, y2 = -1;
    int which = pick(r, r->wide ? 24 : 10);
    switch (which) {
    case 0:
    case 1: { /* convolution: kernels TASO's generator uses, strides 1/2, groups */
        static const int kernels[4][2] = {{1, 1}, {3, 3}, {1, 3}, {3, 1}};
        const int *k = kernels[pick(r, 4)];
        int group = (c % 2 == 0 && pick(r, 4) == 0) ? 2 : 1;
        /* wide: whole blocks of oneDNN's layouts */
        int cout = r->wide ? 8 * (1 + pick(r, 4)) : group * (1 + pick(r, 4));
        int stride = s->dims[2] >= 6 && pick(r, 4) == 0 ? 2 : 1;
        y = zb_conv(&r->b, x, cout, k[0], k[1], stride, -1, group, pick(r, 2) == 0);
        break;
    }
    case 2: y = zb_unary(&r->b, (xf_op[]){XF_OP_RELU, XF_OP_SIGMOID, XF_OP_TANH}[pick(r, 3)], x); break;
    case 3: y = binary_same_shape(r, x); break;
    case 4: y = concat_pair(r, x, pick(r, 3) == 0 ? 0 : 1); break;
    case 5: {
        int outs[2];
        if (split2(r, x, 1, outs) == 0) {
            y = outs[0];
            y2 = outs[1];
        }
        break;
    }
    case 6:
        y = pick(r, 2) ? zb_pool(&r->b, pick(r, 2) ? XF_OP_MAX_POOL : XF_OP_AVERAGE_POOL, x, 3, 1, 1)
                       : zb_global_avg_pool(&r->b, x);
        break;
    case 7: y = zb_bn(&r->b, x); break;
    case 8: { /* H and W swapped, or to or from channels-last (what canonicalization cancels) */
        static const int64_t perms[3][4] = {{0, 1, 3, 2}, {0, 2, 3, 1}, {0, 3, 1, 2}};
        y = zb_transpose(&r->b, x, 4, perms[pick(r, 3)]);
        break;
    }
    case 9: { /* a per-channel affine term, broadcast over N, H, W */
        int64_t d[4] = {1, c, 1, 1};
        int in[2] = {x, zb_weight(&r->b, 4, d, 1.0f)};
        y = zb_node(&r->b, pick(r, 2) ? XF_OP_ADD : XF_OP_MUL, 2, in, NULL);
        break;
    }
    default: y = step_wide(r, x, c, which); break;
    }
    used(r, x);
    add_to_pool(r, y);
    add_to_pool(r, y2);
}

static void step_mlp(rg *r)
{
    int x = pick_rank(r, 2);
    const xf_shape sv = *shape(r, x), *s = &sv; /* a copy: building moves the value array */
    int64_t k = s->dims[1];
    int y = -1, y2 = -1;
    switch (pick(r, r->wide ? 14 : 9)) {
    case 0: {
        int64_t d[2] = {k, 2 + pick(r, r->wide ? 40 : 6)};
        y = zb_matmul(&r->b, x, zb_weight(&r->b, 2, d, 1.0f));
        break;
    }
    case 1: y = zb_dense(&r->b, x, 2 + pick(r, 6)); break;
    case 2: y = zb_unary(&r->b, (xf_op[]){XF_OP_RELU, XF_OP_SIGMOID, XF_OP_TANH}[pick(r, 3)], x); break;
    case 3: y = binary_same_shape(r, x); break;
    case 4: y = concat_pair(r, x, pick(r, 2)); break;
    case 5: {
        int outs[2];
        if (split2(r, x, pick(r, 2), outs) == 0) {
            y = outs[0];
            y2 = outs[1];
        }
        break;
    }
    case 6: {
        int64_t perm[2] = {1, 0};
        y = zb_transpose(&r->b, x, 2, perm);
        break;
    }
    case 7: y = zb_softmax(&r->b, x, -1); break;
    case 8: {
        int64_t d = k;
        int in[2] = {x, zb_weight(&r->b, 1, &d, 1.0f)};
        y = zb_node(&r->b, XF_OP_ADD, 2, in, NULL);
        break;
    }
    /* wide: activations after the products (their post-ops) */
    case 9: y = written_out(r, x); break;
    case 10: y = step_wide(r, x, k, 10); break;
    case 11: y = bounded_pow(r, x); break;
    case 12: y = layer_norm(r, x, 1); break;
    default: { /* means over the rows or the columns */
        int64_t axis = pick(r, 2);
        y = reduce_mean(r, x, 1, &axis);
        break;
    }
    }
    used(r, x);
    add_to_pool(r, y);
    add_to_pool(r, y2);
}

static xf_status random_model(uint64_t seed, int n_ops, bool wide, xf_model **out, xf_error *err)
{
    *out = NULL;
    xf_model *m = xf_model_create();
    rg *r = calloc(1, sizeof *r);
    if (!m || !r) {
        xf_model_free(m);
        free(r);
        return xf_error_set(err, XF_ERR_NOMEM, "out of memory");
    }
    m->ir_version = 8;
    m->producer_name = strdup("xflow-random-graph");
    m->n_opsets = 1;
    m->opsets = calloc(1, sizeof *m->opsets);
    if (m->opsets)
        m->opsets[0] = (xf_opset){strdup(""), ZB_OPSET};
    r->rng = seed;
    r->wide = wide;
    zb_init(&r->b, m->graph, seed ^ 0x5eed, err);
    bool cnn = next(r) % 2 == 0;
    int n_inputs = 1 + pick(r, 2);
    for (int i = 0; i < n_inputs; i++) {
        char name[16];
        snprintf(name, sizeof name, "in%d", i);
        if (cnn) {
            int64_t d[4] = {1 + pick(r, 2), 2 + 2 * pick(r, 3), 5 + pick(r, 4), 5 + pick(r, 4)};
            if (wide) /* channels in whole blocks of oneDNN's layouts, or not */
                d[1] = (int64_t[]){8, 16, 32, 6}[pick(r, 4)], d[2] += pick(r, 5), d[3] += pick(r, 5);
            if (i > 0)
                memcpy(d, shape(r, r->pool[0])->dims, sizeof d);
            add_to_pool(r, zb_input(&r->b, name, 4, d));
        } else {
            int64_t d[2] = {1 + pick(r, 4), 2 + pick(r, 6)};
            if (wide) /* products of more rows and columns */
                d[0] += pick(r, 40), d[1] += pick(r, 60);
            if (i > 0)
                memcpy(d, shape(r, r->pool[0])->dims, sizeof d);
            add_to_pool(r, zb_input(&r->b, name, 2, d));
        }
    }
    for (int i = 0; i < n_ops && !r->b.failed; i++) {
        if (cnn)
            step_cnn(r);
        else
            step_mlp(r);
    }
    /* Outputs: every value nothing consumes, plus one consumed intermediate. */
    int n_out = 0;
    for (int i = n_inputs; i < r->n_pool && !r->b.failed; i++) {
        int v = r->pool[i];
        bool sink = v >= 4096 || r->uses[v] == 0;
        if (sink || (n_out == 0 && i == r->n_pool / 2)) {
            char name[16];
            snprintf(name, sizeof name, "out%d", n_out++);
            zb_output(&r->b, v, name);
        }
    }
    if (!r->b.failed && n_out == 0)
        zb_output(&r->b, r->pool[r->n_pool - 1], "out0");
    bool build_failed = r->b.failed; /* the builder has set err */
    bool alloc_failed = !m->producer_name || !m->opsets || !m->opsets[0].domain;
    free(r);
    if (build_failed || alloc_failed) {
        xf_model_free(m);
        return build_failed ? err->status : xf_error_set(err, XF_ERR_NOMEM, "out of memory");
    }
    *out = m;
    return XF_OK;
}

xf_status xf_random_model(uint64_t seed, int n_ops, xf_model **out, xf_error *err)
{
    return random_model(seed, n_ops, false, out, err);
}

xf_status xf_random_backend_model(uint64_t seed, int n_ops, xf_model **out, xf_error *err)
{
    return random_model(seed, n_ops, true, out, err);
}

/* One graph's check in a differential run: NULL when it passes, else why
 * not (in why, or text it points to, which the loop then frees when
 * `owned`); stem: where its files go, less the extension. */
typedef const char *(*graph_check)(xf_model *m, uint64_t seed, const char *stem, const char *tool, char *why,
                                   size_t size, bool *owned);

/* Builds `count` graphs (seeds seed, seed+1, ...) with make and checks each;
 * returns the number that failed, each reported on log. */
static int difftest_loop(xf_status (*make)(uint64_t, int, xf_model **, xf_error *), graph_check check,
                         const char *tool, const char *what, uint64_t seed, int count, int n_ops,
                         const char *workdir, FILE *log)
{
    int mismatches = 0;
    for (int i = 0; i < count; i++) {
        xf_model *m;
        xf_error err;
        char stem[4200], why[1400];
        uint64_t s = seed + (uint64_t)i;
        bool owned = false;
        const char *bad = why;
        snprintf(stem, sizeof stem, "%s/graph-%llu", workdir, (unsigned long long)s);
        if (make(s, n_ops, &m, &err) != XF_OK)
            snprintf(why, sizeof why, "could not build a graph: %.1300s", err.msg);
        else {
            bad = check(m, s, stem, tool, why, sizeof why, &owned);
            xf_model_free(m);
        }
        if (bad) {
            fprintf(log, "seed %llu: %s\n", (unsigned long long)s, bad);
            mismatches++;
        }
        if (owned)
            free((char *)bad);
        if (log == stdout && (i + 1) % 100 == 0)
            fprintf(log, "%s: %d graphs, %d mismatches\n", what, i + 1, mismatches);
    }
    return mismatches;
}

/* The model through `xflowc --check`; the failing model stays in workdir
 * as the regression input. */
static const char *through_xflowc(xf_model *m, uint64_t seed, const char *stem, const char *xflowc, char *why,
                                  size_t size, bool *owned)
{
    char in[4300], out[4300], cmd[9000];
    xf_error err;
    snprintf(in, sizeof in, "%s.onnx", stem);
    snprintf(out, sizeof out, "%s.opt.onnx", stem);
    if (xf_model_save(m, in, NULL, &err) != XF_OK) {
        snprintf(why, size, "%.1300s", err.msg);
        return why;
    }
    snprintf(cmd, sizeof cmd, "'%s' '%s' -o '%s' --check -q --seed %llu", xflowc, in, out,
             (unsigned long long)(seed % 1000003));
    char *text = NULL, *report = NULL;
    int rc = xf_test_run(cmd, &text);
    if (rc != 0) {
        size_t len = strlen(in) + (text ? strlen(text) : 0) + 100;
        if ((report = malloc(len)) != NULL) {
            snprintf(report, len, "xflowc --check failed (exit %d), model kept at %s:\n%s", rc, in, text ? text : "");
            for (size_t n = strlen(report); n > 0 && report[n - 1] == '\n'; n--) /* the loop ends the line */
                report[n - 1] = '\0';
        }
        else
            snprintf(why, size, "xflowc --check failed (exit %d), model kept at %s", rc, in);
        *owned = report != NULL;
    } else {
        remove(in);
    }
    remove(out);
    free(text);
    return rc == 0 ? NULL : report ? report : why;
}

int xf_difftest_run(const char *xflowc, uint64_t seed, int count, int n_ops, const char *workdir, FILE *log)
{
    return difftest_loop(xf_random_model, through_xflowc, xflowc, "difftest", seed, count, n_ops, workdir, log);
}

/* Runs m on cpu_ref (as given) and on `backend` (static mode, then
 * dynamic) with one set of seeded inputs; NULL when every output agrees,
 * else why not (in why), the inputs then written beside the model (keep:
 * its path less ".onnx") as keep.input_K.pb, for xflow-run --input. */
static const char *compare_on(const xf_model *m, const char *backend, uint64_t seed, const char *keep, char *why,
                              size_t size)
{
    const xf_graph *g = m->graph;
    xf_error err = {0};
    xf_session *ref = NULL, *s = NULL;
    xf_session_options given = {.as_given = true};
    xf_tensor **in = calloc((size_t)g->n_inputs + 1, sizeof *in);
    xf_tensor **want = calloc((size_t)g->n_outputs + 1, sizeof *want);
    xf_tensor **got = calloc((size_t)g->n_outputs + 1, sizeof *got);
    const char *bad = NULL;
    if (!in || !want || !got) {
        snprintf(why, size, "out of memory");
        bad = why;
    }
    for (int i = 0; !bad && i < g->n_inputs; i++) {
        const xf_value *v = &g->values[g->inputs[i]];
        if (!(in[i] = xf_tensor_random(v->dtype, &v->shape, seed * 31 + (uint64_t)i)))
            bad = strcpy(why, "out of memory");
    }
    if (!bad && (xf_session_create(g, xf_model_opset(m), "cpu_ref", &given, &ref, &err) != XF_OK ||
                 xf_session_run(ref, in, want, &err) != XF_OK)) {
        snprintf(why, size, "cpu_ref: %.600s", err.msg);
        bad = why;
    }
    for (int dynamic = 0; !bad && dynamic < 2; dynamic++) {
        const char *mode = dynamic ? "dynamic" : "static";
        xf_session_options opt = {.force_dynamic = dynamic};
        if (xf_session_create(g, xf_model_opset(m), backend, &opt, &s, &err) != XF_OK ||
            xf_session_run(s, in, got, &err) != XF_OK) {
            snprintf(why, size, "%.40s (%s): %.600s", backend, mode, err.msg);
            bad = why;
        }
        for (int k = 0; !bad && k < g->n_outputs; k++) {
            /* sums rounded in other orders (Winograd's among them): relative
             * to the largest output, or to 0.1 where outputs are smaller
             * (values left after larger ones cancel: a mean of a normalized
             * row, 0 with its rounding) */
            double max_abs = 0, max_rel = 0, scale = xf_tensor_max_abs(want[k]);
            bool ok = false;
            xf_status cs = xf_tensor_compare(got[k], want[k], 1e-4 * (scale > 0.1 ? scale : 0.1), 1e-3, &max_abs,
                                             &max_rel, &ok, &err);
            const char *name = g->values[g->outputs[k]].name ? g->values[g->outputs[k]].name : "";
            if (cs != XF_OK)
                snprintf(why, size, "output %d ('%.80s', %s): %.600s", k, name, mode, err.msg);
            else if (!ok)
                snprintf(why, size, "output %d ('%.80s') differs from cpu_ref's in %s mode: max abs %.3g (largest "
                         "|value| %.3g)", k, name, mode, max_abs, scale);
            if (cs != XF_OK || !ok)
                bad = why;
        }
        for (int k = 0; k < g->n_outputs; k++) {
            xf_tensor_release(got[k]);
            got[k] = NULL;
        }
        xf_session_free(s);
        s = NULL;
    }
    for (int i = 0; in && i < g->n_inputs; i++) {
        char path[4300];
        snprintf(path, sizeof path, "%s.input_%d.pb", keep, i);
        if (bad && in[i])
            xf_tensor_save_pb(in[i], g->values[g->inputs[i]].name, path, &err);
        xf_tensor_release(in[i]);
    }
    for (int k = 0; want && k < g->n_outputs; k++)
        xf_tensor_release(want[k]);
    free(in);
    free(want);
    free(got);
    xf_session_free(ref);
    xf_session_free(s);
    return bad;
}

/* The model on `backend` against cpu_ref; the failing model and its inputs
 * stay in workdir as the regression input. */
static const char *against_ref(xf_model *m, uint64_t seed, const char *stem, const char *backend, char *why,
                               size_t size, bool *owned)
{
    (void)owned;
    char found[1400], path[4300];
    const char *bad = compare_on(m, backend, seed, stem, found, sizeof found);
    if (!bad)
        return NULL;
    xf_error err;
    snprintf(path, sizeof path, "%s.onnx", stem);
    xf_status st = xf_model_save(m, path, NULL, &err);
    snprintf(why, size, "%.700s (model %s %.500s, inputs beside it)", bad, st == XF_OK ? "kept at" : "not saved:",
             st == XF_OK ? path : err.msg);
    return why;
}

int xf_backend_difftest_run(const char *backend, uint64_t seed, int count, int n_ops, const char *workdir, FILE *log)
{
    char what[64];
    snprintf(what, sizeof what, "difftest on %.40s", backend);
    return difftest_loop(xf_random_backend_model, against_ref, backend, what, seed, count, n_ops, workdir, log);
}
