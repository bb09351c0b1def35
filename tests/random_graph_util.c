/* Random valid models for differential testing (see random_graph_util.h).
 * Every op is chosen among those whose inputs the pool can supply, so each
 * graph is valid by construction; the builder's shape inference confirms it. */
#include "random_graph_util.h"

#include "builder.h"
#include "xf_proto.h"
#include "xf_test_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct rg {
    zb b;
    uint64_t rng;
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

static void step_cnn(rg *r)
{
    int x = pick_rank(r, 4);
    const xf_shape sv = *shape(r, x), *s = &sv; /* a copy: building moves the value array */
    int64_t c = s->dims[1];
    int y = -1, y2 = -1;
    switch (pick(r, 10)) {
    case 0:
    case 1: { /* convolution: kernels TASO's generator uses, strides 1/2, groups */
        static const int kernels[4][2] = {{1, 1}, {3, 3}, {1, 3}, {3, 1}};
        const int *k = kernels[pick(r, 4)];
        int group = (c % 2 == 0 && pick(r, 4) == 0) ? 2 : 1;
        int cout = group * (1 + pick(r, 4));
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
    default: { /* a per-channel affine term, broadcast over N, H, W */
        int64_t d[4] = {1, c, 1, 1};
        int in[2] = {x, zb_weight(&r->b, 4, d, 1.0f)};
        y = zb_node(&r->b, pick(r, 2) ? XF_OP_ADD : XF_OP_MUL, 2, in, NULL);
        break;
    }
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
    switch (pick(r, 9)) {
    case 0: {
        int64_t d[2] = {k, 2 + pick(r, 6)};
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
    default: {
        int64_t d = k;
        int in[2] = {x, zb_weight(&r->b, 1, &d, 1.0f)};
        y = zb_node(&r->b, XF_OP_ADD, 2, in, NULL);
        break;
    }
    }
    used(r, x);
    add_to_pool(r, y);
    add_to_pool(r, y2);
}

xf_status xf_random_model(uint64_t seed, int n_ops, xf_model **out, xf_error *err)
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
    zb_init(&r->b, m->graph, seed ^ 0x5eed, err);
    bool cnn = next(r) % 2 == 0;
    int n_inputs = 1 + pick(r, 2);
    for (int i = 0; i < n_inputs; i++) {
        char name[16];
        snprintf(name, sizeof name, "in%d", i);
        if (cnn) {
            int64_t d[4] = {1 + pick(r, 2), 2 + 2 * pick(r, 3), 5 + pick(r, 4), 5 + pick(r, 4)};
            if (i > 0)
                memcpy(d, shape(r, r->pool[0])->dims, sizeof d);
            add_to_pool(r, zb_input(&r->b, name, 4, d));
        } else {
            int64_t d[2] = {1 + pick(r, 4), 2 + pick(r, 6)};
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

int xf_difftest_run(const char *xflowc, uint64_t seed, int count, int n_ops, const char *workdir, FILE *log)
{
    int mismatches = 0;
    for (int i = 0; i < count; i++) {
        xf_model *m;
        xf_error err;
        char in[4200], out[4200], cmd[9000];
        uint64_t s = seed + (uint64_t)i;
        if (xf_random_model(s, n_ops, &m, &err) != XF_OK) {
            fprintf(log, "seed %llu: could not build a graph: %s\n", (unsigned long long)s, err.msg);
            mismatches++;
            continue;
        }
        snprintf(in, sizeof in, "%s/graph-%llu.onnx", workdir, (unsigned long long)s);
        snprintf(out, sizeof out, "%s/graph-%llu.opt.onnx", workdir, (unsigned long long)s);
        xf_status st = xf_model_save(m, in, NULL, &err);
        xf_model_free(m);
        if (st != XF_OK) {
            fprintf(log, "seed %llu: %s\n", (unsigned long long)s, err.msg);
            mismatches++;
            continue;
        }
        snprintf(cmd, sizeof cmd, "'%s' '%s' -o '%s' --check -q --seed %llu", xflowc, in, out,
                 (unsigned long long)(s % 1000003));
        char *text = NULL;
        int rc = xf_test_run(cmd, &text);
        if (rc != 0) {
            /* The failing model stays in workdir as the regression input. */
            fprintf(log, "seed %llu: xflowc --check failed (exit %d), model kept at %s:\n%s",
                    (unsigned long long)s, rc, in, text ? text : "");
            mismatches++;
        } else {
            remove(in);
        }
        remove(out);
        free(text);
        if (log == stdout && (i + 1) % 100 == 0)
            fprintf(log, "difftest: %d graphs, %d mismatches\n", i + 1, mismatches);
    }
    return mismatches;
}
