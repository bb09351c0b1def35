/* Enumeration: every graph of up to max_ops op applications over the input
 * pool, each recorded as (fingerprint of its outputs, packed code).
 *
 * A graph is a sequence of ops, each reading pool tensors or earlier
 * outputs; its outputs are the op outputs nothing in it reads.  To visit
 * each graph about once, and to keep the space small without losing rules:
 *  - independent neighbouring ops appear in increasing code order (one
 *    order of the many topological orders of the same graph);
 *  - pool tensors of one class (same kind and shape) are first used in pool
 *    order: a graph over {B, C} is the same graph as one over {A, B} up to
 *    renaming, and rules are kept up to renaming anyway;
 *  - Add and Mul take their inputs in index order (commutativity is not a
 *    useful rewrite), and Add, Mul and Concat two different values (x + x,
 *    x * x and concat(x, x) only multiply variants of other rules);
 *  - an op identical to one already in the graph is not applied (it is a
 *    common subexpression), and an op whose result equals a tensor the
 *    graph already has is recorded (that is a rule) but not built upon;
 *  - only connected graphs are recorded (a disconnected graph pairs only
 *    with rules that are the union of smaller ones);
 *  - a bias op (see GEN_FREE_OPS) is not counted against max ops, and a
 *    graph with a bias among its outputs is not recorded: a law of biases
 *    alone is plain algebra of constants, which folding handles. */
#include "gen_internal.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

const gen_variant_info gen_variants[GV_COUNT] = {
    [GV_NONE] = {XF_OP_OPAQUE, 0, 0},
    [GV_MATMUL] = {XF_OP_MATMUL, 2, 1},
    [GV_ADD] = {XF_OP_ADD, 2, 1},
    [GV_MUL] = {XF_OP_MUL, 2, 1},
    [GV_SCALE] = {XF_OP_MUL, 2, 1},
    [GV_CONV] = {XF_OP_CONV, 2, 1},
    [GV_CONV_RELU] = {XF_OP_CONV, 2, 1},
    [GV_RELU] = {XF_OP_RELU, 1, 1},
    [GV_SIGMOID] = {XF_OP_SIGMOID, 1, 1},
    [GV_TANH] = {XF_OP_TANH, 1, 1},
    [GV_MAX_POOL] = {XF_OP_MAX_POOL, 1, 1},
    [GV_AVG_POOL] = {XF_OP_AVERAGE_POOL, 1, 1},
    [GV_CONCAT0] = {XF_OP_CONCAT, 2, 1},
    [GV_CONCAT1] = {XF_OP_CONCAT, 2, 1},
    [GV_SPLIT0] = {XF_OP_SPLIT, 1, 2},
    [GV_SPLIT1] = {XF_OP_SPLIT, 1, 2},
    [GV_TRANSPOSE] = {XF_OP_TRANSPOSE, 1, 1},
    [GV_CONV_BIAS] = {XF_OP_CONV, 3, 1},
    [GV_CONV_BIAS_RELU] = {XF_OP_CONV, 3, 1},
    [GV_ENLARGE] = {XF_OP_PAD, 1, 1},
    [GV_CONV_S2] = {XF_OP_CONV, 2, 1},
    [GV_CONV_S2_RELU] = {XF_OP_CONV, 2, 1},
};

const char *xf_gen_op_set(void)
{
    return "MatMul,Add,Mul,Conv,Relu,Sigmoid,Tanh,MaxPool,AveragePool,Concat,Split,Transpose,Pad";
}

#define S1(a) {.ndim = 1, .dims = {a}}
#define S2(a, b) {.ndim = 2, .dims = {a, b}}
#define S4(a, b, c, d) {.ndim = 4, .dims = {a, b, c, d}}

/* Small shapes: large enough that no law of a particular size (a 1x1 image,
 * a single channel) is mistaken for a general one, small enough to evaluate
 * millions of graphs.  Kernels come in every enumerated kernel shape;
 * biases have one entry per output channel of the kernels. */
const gen_pool_entry gen_pool[] = {
    {"a", GK_ACT, S2(4, 4)},         {"b", GK_ACT, S2(4, 4)},         {"c", GK_ACT, S2(4, 4)},
    {"x", GK_ACT, S4(2, 2, 4, 4)},   {"y", GK_ACT, S4(2, 2, 4, 4)},   {"w", GK_WEIGHT, S4(2, 2, 3, 3)},
    {"v", GK_WEIGHT, S4(2, 2, 3, 3)}, {"k", GK_WEIGHT, S4(2, 2, 1, 1)}, {"j", GK_WEIGHT, S4(2, 2, 1, 1)},
    {"h", GK_WEIGHT, S4(2, 2, 1, 3)}, {"g", GK_WEIGHT, S4(2, 2, 3, 1)}, {"s", GK_SCALAR, {.ndim = 0}},
    {"p", GK_BIAS, S1(2)},           {"q", GK_BIAS, S1(2)},
    /* The constants: identity kernels (3x3 and 1x1), the 3x3 average-pooling
     * kernel, the identity matrix. */
    {"e", GK_WEIGHT, S4(2, 2, 3, 3), XF_CONST_IDENTITY_KERNEL},
    {"i", GK_WEIGHT, S4(2, 2, 1, 1), XF_CONST_IDENTITY_KERNEL},
    {"u", GK_WEIGHT, S4(2, 2, 3, 3), XF_CONST_POOL_KERNEL},
    {"m", GK_ACT, S2(4, 4), XF_CONST_IDENTITY_MATRIX},
};
const int gen_pool_size = (int)(sizeof gen_pool / sizeof gen_pool[0]);
_Static_assert(sizeof gen_pool / sizeof gen_pool[0] <= GEN_MAX_POOL, "the pool fits GEN_MAX_POOL");
_Static_assert(GEN_MAX_VALUES < GEN_NO_INPUT, "value ids fit an op code's input field");

void gen_variant_attrs(gen_variant v, const xf_shape *in, xf_attrs *a)
{
    xf_attrs_default(gen_variants[v].op, a);
    switch (v) {
    case GV_CONV:
    case GV_CONV_RELU:
    case GV_CONV_BIAS:
    case GV_CONV_BIAS_RELU:
    case GV_CONV_S2:
    case GV_CONV_S2_RELU:
    case GV_MAX_POOL:
    case GV_AVG_POOL: {
        bool conv = v != GV_MAX_POOL && v != GV_AVG_POOL;
        int64_t kh = conv ? in[1].dims[2] : 3, kw = conv ? in[1].dims[3] : 3;
        a->n_spatial = 2;
        a->kernel[0] = kh;
        a->kernel[1] = kw;
        a->pads[0] = a->pads[2] = (kh - 1) / 2;
        a->pads[1] = a->pads[3] = (kw - 1) / 2;
        if (v == GV_CONV_RELU || v == GV_CONV_BIAS_RELU || v == GV_CONV_S2_RELU)
            a->activation = XF_ACT_RELU;
        if (v == GV_CONV_S2 || v == GV_CONV_S2_RELU)
            a->strides[0] = a->strides[1] = 2;
        if (v == GV_AVG_POOL)
            a->count_include_pad = 1;
        break;
    }
    case GV_CONCAT1:
        a->axis = 1;
        break;
    case GV_ENLARGE:
        /* Pads in the attribute form (the rule format's; the optimizer
         * folds the padded kernel into a constant before writing). */
        a->has_pads = true;
        a->n_pads = 8;
        memset(a->pad_pads, 0, sizeof a->pad_pads);
        a->pad_pads[2] = a->pad_pads[6] = (3 - in[0].dims[2]) / 2;
        a->pad_pads[3] = a->pad_pads[7] = (3 - in[0].dims[3]) / 2;
        break;
    case GV_SPLIT0:
    case GV_SPLIT1: {
        int axis = v == GV_SPLIT1;
        a->axis = axis;
        a->n_split = 2;
        a->split[0] = a->split[1] = in[0].dims[axis] / 2;
        break;
    }
    default:
        break;
    }
}

/* ------------------------------------------------------------ one value */

typedef struct slot {
    gen_val val;
    int kind;
    uint64_t fp;
    bool konst; /* a pool constant */
} slot;

static bool is_kernel_dim(int64_t d) { return d == 1 || d == 3; }

/* Whether variant v applies to these inputs (b and c may be NULL for ops
 * with fewer); sets the output kind. */
static bool applicable(gen_variant v, const slot *a, const slot *b, const slot *c, int *kind)
{
    const xf_shape *sa = &a->val.shape;
    /* An op on constants alone computes a constant: folding, not a rule.
     * Constants enter products, sums and kernel concatenations, where their
     * laws are (a product or a convolution with an identity, pooling as a
     * convolution); elsewhere they only give variants of laws of ones and
     * zeros. */
    bool reads_const = a->konst || (b && b->konst) || (c && c->konst);
    if ((a->konst && (!b || b->konst) && (!c || c->konst)) ||
        (reads_const && v != GV_MATMUL && v != GV_ADD && v != GV_CONV && v != GV_CONV_RELU && v != GV_CONV_BIAS &&
         v != GV_CONV_BIAS_RELU && v != GV_CONV_S2 && v != GV_CONV_S2_RELU && v != GV_CONCAT0))
        return false;
    switch (v) {
    case GV_MATMUL:
        *kind = GK_ACT;
        return a->kind == GK_ACT && b->kind == GK_ACT && sa->ndim == 2 && b->val.shape.ndim == 2 &&
               sa->dims[1] == b->val.shape.dims[0];
    case GV_ADD:
    case GV_MUL:
        *kind = a->kind;
        return a->kind != GK_SCALAR && (a->kind != GK_BIAS || v == GV_ADD) && a->kind == b->kind &&
               xf_shape_equal(sa, &b->val.shape);
    case GV_SCALE:
        *kind = a->kind;
        return a->kind != GK_SCALAR && b->kind == GK_SCALAR;
    case GV_CONV:
    case GV_CONV_RELU: {
        const xf_shape *w = &b->val.shape;
        *kind = GK_ACT;
        return a->kind == GK_ACT && b->kind == GK_WEIGHT && sa->ndim == 4 && w->ndim == 4 &&
               w->dims[1] == sa->dims[1] && is_kernel_dim(w->dims[2]) && is_kernel_dim(w->dims[3]);
    }
    case GV_CONV_S2:
    case GV_CONV_S2_RELU:
        /* On full-size images only: a stride-2 convolution of the pool's
         * 4x4 images is 2x2, and one of those would be 1x1, where laws of
         * that size alone hold. */
        return applicable(GV_CONV, a, b, NULL, kind) && sa->dims[2] >= 4 && sa->dims[3] >= 4;
    case GV_CONV_BIAS:
    case GV_CONV_BIAS_RELU: {
        const xf_shape *w = &b->val.shape, *bias = &c->val.shape;
        *kind = GK_ACT;
        return applicable(GV_CONV, a, b, NULL, kind) && c->kind == GK_BIAS && bias->ndim == 1 &&
               bias->dims[0] == w->dims[0];
    }
    case GV_ENLARGE:
        *kind = GK_WEIGHT;
        return a->kind == GK_WEIGHT && sa->ndim == 4 && is_kernel_dim(sa->dims[2]) && is_kernel_dim(sa->dims[3]) &&
               (sa->dims[2] == 1 || sa->dims[3] == 1);
    case GV_RELU:
    case GV_SIGMOID:
    case GV_TANH:
        *kind = GK_ACT;
        return a->kind == GK_ACT;
    case GV_MAX_POOL:
    case GV_AVG_POOL:
        /* Not on the 2x2 images of a stride-2 convolution: a 3x3 window
         * covers all of one, so every output of an image is the same value,
         * and maxima of so few values agree by accident under the random
         * order (seen at four ops as hundreds of fingerprint false
         * positives). */
        *kind = GK_ACT;
        return a->kind == GK_ACT && sa->ndim == 4 && sa->dims[2] >= 4 && sa->dims[3] >= 4;
    case GV_CONCAT0:
    case GV_CONCAT1:
        *kind = a->kind;
        return a->kind != GK_SCALAR && a->kind == b->kind && sa->ndim == b->val.shape.ndim &&
               (sa->ndim == 2 || sa->ndim == 4 || (a->kind == GK_BIAS && v == GV_CONCAT0));
    case GV_SPLIT0:
    case GV_SPLIT1:
        *kind = a->kind;
        return a->kind != GK_SCALAR && a->kind != GK_BIAS && (sa->ndim == 2 || sa->ndim == 4) &&
               sa->dims[v == GV_SPLIT1] % 2 == 0;
    case GV_TRANSPOSE:
        *kind = GK_ACT;
        return a->kind == GK_ACT && sa->ndim == 2;
    default:
        return false;
    }
}

/* ------------------------------------------------------------ a worker */

/* Graphs of the last level wait in a batch so that their outputs are
 * hashed several at a time (gen_val_hashes). */
#define LEAF_BATCH 8

typedef struct leaf {
    gen_code code;
    uint32_t pool_used;
    int n_fps, n_new;               /* fps: unread outputs of earlier ops, then the new op's */
    uint64_t fps[2 * GEN_MAX_SLOTS];
    gen_val out[2];                 /* the new op's outputs */
} leaf;

typedef struct worker {
    int max_ops;
    int index, n_workers;
    slot vals[GEN_MAX_VALUES];
    uint64_t *storage; /* 2 * GEN_MAX_SLOTS buffers of GEN_VAL_STRIDE */
    int n_ops, n_free; /* ops, and bias ops among them */
    int n_weight;      /* ops whose result is not an activation */
    gen_code ops[GEN_MAX_SLOTS]; /* op codes */
    int out_base[GEN_MAX_SLOTS];
    int n_vals;
    uint32_t pool_used; /* bit per pool tensor */
    uint32_t const_mask; /* bit per pool constant */
    int64_t renamed;     /* records counted once per renaming (see renamings) */
    gen_record_store records;
    atomic_int_fast64_t *done; /* first-level choices finished, all workers */
    leaf leaves[LEAF_BATCH];
    int n_leaves;
    uint64_t *leaf_storage;    /* 2 * LEAF_BATCH buffers of GEN_VAL_STRIDE */
    gen_conv_memo *memo;
} worker;

/* Evaluates variant var on the values sl[] with attributes a into out;
 * convolutions through memo (may be NULL). */
static bool eval_variant(gen_conv_memo *memo, gen_variant var, const slot *const *sl, const xf_attrs *a, gen_val *out)
{
    const gen_variant_info *vi = &gen_variants[var];
    if (vi->op == XF_OP_CONV && memo)
        return gen_eval_conv_memo(memo, a, &sl[0]->val, sl[0]->fp, &sl[1]->val, sl[1]->fp,
                                  vi->n_in > 2 ? &sl[2]->val : NULL, out);
    gen_val in[GEN_MAX_IN];
    for (int j = 0; j < vi->n_in; j++)
        in[j] = sl[j]->val;
    return gen_eval(vi->op, a, vi->n_in, in, vi->n_out, out, GEN_MAX_ELEMS);
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

uint64_t gen_combine_fps(uint64_t *fps, int n)
{
    qsort(fps, (size_t)n, sizeof *fps, cmp_u64);
    uint64_t h = 0x8f1bbcdcca62c1d6ull + (uint64_t)n;
    for (int i = 0; i < n; i++) {
        if (i && fps[i] == fps[i - 1])
            return 0;
        h = gen_mix64(h ^ fps[i]);
    }
    return h ? h : 1;
}

static int find_root(int *parent, int x)
{
    while (parent[x] != x)
        x = parent[x] = parent[parent[x]];
    return x;
}

/* Whether the current graph is one to record, judged by its structure
 * alone: connected, and no bias among its outputs.  (It is still not
 * recorded when two of its outputs are equal, which only its values tell.)
 * Sets used[v] for every value an op reads. */
static bool recordable_structure(const worker *w, bool *used)
{
    int n_vals = w->n_vals;
    int parent[GEN_MAX_VALUES];
    for (int v = 0; v < n_vals; v++) {
        parent[v] = v;
        used[v] = false;
    }
    for (int k = 0; k < w->n_ops; k++) {
        int var = gen_code_variant(w->ops[k], 0);
        int root = find_root(parent, w->out_base[k]);
        for (int j = 0; j < gen_variants[var].n_out; j++)
            parent[find_root(parent, w->out_base[k] + j)] = root;
        for (int j = 0; j < gen_variants[var].n_in; j++) {
            int in = gen_code_in(w->ops[k], 0, j);
            used[in] = true;
            parent[find_root(parent, in)] = find_root(parent, root);
        }
    }
    int root = find_root(parent, w->out_base[0]);
    for (int v = 0; v < n_vals; v++)
        if ((v >= gen_pool_size || used[v]) && find_root(parent, v) != root)
            return false;
    for (int v = gen_pool_size; v < n_vals; v++)
        if (!used[v] && w->vals[v].kind == GK_BIAS)
            return false;
    return true;
}

static gen_code current_code(const worker *w)
{
    gen_code code = 0;
    for (int k = 0; k < w->n_ops; k++)
        code |= w->ops[k] << (GEN_OP_BITS * k);
    return code;
}

/* How many graphs the graph over pool tensors `used` stands for when graphs
 * equal up to renaming pool tensors of one class (kind, shape, constant)
 * count separately, as an enumerator without that pruning counts them:
 * the product over classes of n! / (n - k)!, n tensors in the class and k
 * of them used. */
static int64_t renamings(uint32_t used)
{
    int64_t r = 1;
    for (int i = 0; i < gen_pool_size; i++) {
        if (!(used >> i & 1))
            continue;
        /* i is the k-th used member of its class of n: a factor n - (k - 1). */
        int n = 0, k = 0;
        for (int j = 0; j < gen_pool_size; j++)
            if (gen_pool[j].kind == gen_pool[i].kind && gen_pool[j].konst == gen_pool[i].konst &&
                xf_shape_equal(&gen_pool[j].shape, &gen_pool[i].shape)) {
                n++;
                k += j <= i && (used >> j & 1);
            }
        r *= n - (k - 1);
    }
    return r;
}

/* Records the current graph when it is connected and computes no value twice. */
static void record_graph(worker *w)
{
    bool used[GEN_MAX_VALUES];
    if (!recordable_structure(w, used))
        return;
    uint64_t fps[2 * GEN_MAX_SLOTS];
    int n = 0;
    for (int v = gen_pool_size; v < w->n_vals; v++)
        if (!used[v])
            fps[n++] = w->vals[v].fp;
    uint64_t fp = gen_combine_fps(fps, n);
    if (fp) {
        gen_store_push(&w->records, fp, current_code(w));
        w->renamed += renamings(w->pool_used);
    }
}

static void flush_leaves(worker *w)
{
    gen_val outs[2 * LEAF_BATCH];
    uint64_t fps[2 * LEAF_BATCH];
    int n = 0;
    for (int l = 0; l < w->n_leaves; l++)
        for (int j = 0; j < w->leaves[l].n_new; j++)
            outs[n++] = w->leaves[l].out[j];
    gen_val_hashes(outs, n, fps);
    n = 0;
    for (int l = 0; l < w->n_leaves; l++) {
        leaf *lf = &w->leaves[l];
        for (int j = 0; j < lf->n_new; j++)
            lf->fps[lf->n_fps + j] = fps[n++];
        uint64_t fp = gen_combine_fps(lf->fps, lf->n_fps + lf->n_new);
        if (fp) {
            gen_store_push(&w->records, fp, lf->code);
            w->renamed += renamings(lf->pool_used);
        }
    }
    w->n_leaves = 0;
}

/* Whether pool tensor i may be used now: earlier members of its class are. */
static bool pool_order_ok(uint32_t used, int i)
{
    if (i >= gen_pool_size || (used >> i & 1))
        return true;
    for (int j = i - 1; j >= 0; j--)
        if (gen_pool[j].kind == gen_pool[i].kind && gen_pool[j].konst == gen_pool[i].konst &&
            gen_pool[i].konst == XF_CONST_NONE && xf_shape_equal(&gen_pool[j].shape, &gen_pool[i].shape))
            return used >> j & 1;
    return true;
}

static void dfs(worker *w);

static bool distinct_inputs(int var)
{
    return var == GV_ADD || var == GV_MUL || var == GV_CONCAT0 || var == GV_CONCAT1;
}

/* Choices of inputs for variant var over n values: i0 < n, then i1 (from i0
 * for the commutative Add and Mul), then i2. */
static int64_t n_choices(int var, int64_t n)
{
    int n_in = gen_variants[var].n_in;
    return n_in == 1 ? n : n_in == 3 ? n * n * n : var == GV_ADD || var == GV_MUL ? n * (n + 1) / 2 : n * n;
}

/* Tries op (variant, i[0..n_in)) on top of the current graph. */
static void try_op(worker *w, gen_variant var, const int *i)
{
    const gen_variant_info *vi = &gen_variants[var];
    int ins[GEN_MAX_IN];
    for (int j = 0; j < GEN_MAX_IN; j++)
        ins[j] = j < vi->n_in ? i[j] : GEN_NO_INPUT;
    gen_code op = gen_code_op(var, ins[0], ins[1], ins[2]);
    for (int k = 0; k < w->n_ops; k++)
        if (w->ops[k] == op)
            return;
    /* Independent of the previous op: only in increasing code order. */
    if (w->n_ops > 0) {
        int prev = w->n_ops - 1, pv = gen_code_variant(w->ops[prev], 0);
        bool depends = false;
        for (int j = 0; j < vi->n_in; j++)
            depends |= ins[j] >= w->out_base[prev] && ins[j] < w->out_base[prev] + gen_variants[pv].n_out;
        if (!depends && op < w->ops[prev])
            return;
    }
    uint32_t used = w->pool_used;
    for (int j = 0; j < vi->n_in; j++) {
        if (!pool_order_ok(used, ins[j]))
            return;
        if (ins[j] < gen_pool_size)
            used |= 1u << ins[j];
    }
    /* One constant per graph: the laws of constants (identities, pooling as
     * a convolution) each need one, and a second only multiplies them. */
    uint32_t consts = used & w->const_mask;
    if (consts & (consts - 1))
        return;
    int kind;
    const slot *sl[GEN_MAX_IN] = {NULL, NULL, NULL};
    for (int j = 0; j < vi->n_in; j++)
        sl[j] = &w->vals[ins[j]];
    if (!applicable(var, sl[0], sl[1], sl[2], &kind))
        return;
    bool free_op = gen_kind_free(kind);
    if (free_op && w->n_free >= GEN_FREE_OPS)
        return;
    int base = w->n_vals;
    uint32_t saved_used = w->pool_used;
    w->ops[w->n_ops] = op;
    w->out_base[w->n_ops] = base;
    w->n_ops++;
    w->n_free += free_op;
    w->n_weight += kind != GK_ACT;
    w->n_vals += vi->n_out;
    w->pool_used = used;
    for (int j = 0; j < vi->n_out; j++) {
        w->vals[base + j].kind = kind;
        w->vals[base + j].konst = false;
    }
    xf_shape shapes[GEN_MAX_IN];
    for (int j = 0; j < vi->n_in; j++)
        shapes[j] = sl[j]->val.shape;
    xf_attrs a;
    gen_variant_attrs(var, shapes, &a);
    bool used_vals[GEN_MAX_VALUES];
    /* A bias op needs a counted op after it to read its result. */
    if (w->n_ops - w->n_free < w->max_ops) {
        gen_val out[2];
        for (int j = 0; j < vi->n_out; j++)
            out[j].v = w->storage + (size_t)(2 * (w->n_ops - 1) + j) * GEN_VAL_STRIDE;
        if (eval_variant(w->memo, var, sl, &a, out)) {
            bool redundant = false;
            for (int j = 0; j < vi->n_out; j++) {
                slot *s = &w->vals[base + j];
                s->val = out[j];
                s->fp = gen_val_hash(&out[j]);
                for (int v = 0; v < base + j; v++)
                    redundant |= w->vals[v].fp == s->fp;
            }
            record_graph(w);
            if (!redundant)
                dfs(w);
        }
    } else if ((!(used & w->const_mask) || w->n_weight > 0) && recordable_structure(w, used_vals)) {
        /* A graph of the last level; most are not recorded (disconnected,
         * or a bias left unread), and those are not evaluated at all.  Nor
         * is one reading a constant with every op on activations: a
         * constant enters only a replacement with fewer such ops than its
         * pattern, or one merging weights (see candidates.c). */
        leaf *lf = &w->leaves[w->n_leaves];
        for (int j = 0; j < vi->n_out; j++)
            lf->out[j].v = w->leaf_storage + (size_t)(2 * w->n_leaves + j) * GEN_VAL_STRIDE;
        if (eval_variant(w->memo, var, sl, &a, lf->out)) {
            lf->code = current_code(w);
            lf->pool_used = w->pool_used;
            lf->n_new = vi->n_out;
            lf->n_fps = 0;
            for (int v = gen_pool_size; v < base; v++)
                if (!used_vals[v])
                    lf->fps[lf->n_fps++] = w->vals[v].fp;
            if (++w->n_leaves == LEAF_BATCH)
                flush_leaves(w);
        }
    }
    w->n_ops--;
    w->n_free -= free_op;
    w->n_weight -= kind != GK_ACT;
    w->n_vals = base;
    w->pool_used = saved_used;
}

/* Every op that can be added to the current graph.  At the first level,
 * worker k takes every n_workers-th choice. */
static void dfs(worker *w)
{
    int64_t choice = 0;
    bool top = w->n_ops == 0;
    int n = w->n_vals;
    /* try_op takes an op that does not read the previous one only in
     * increasing code order: below the previous op's variant, every op
     * must read one of its outputs (values prev_lo..prev_hi-1). */
    int prev_var = top ? GV_NONE : gen_code_variant(w->ops[w->n_ops - 1], 0);
    int prev_lo = top ? 0 : w->out_base[w->n_ops - 1], prev_hi = prev_lo + gen_variants[prev_var].n_out;
    for (int var = 1; var < GV_COUNT; var++) {
        int n_in = gen_variants[var].n_in;
        bool must_read_prev = var < prev_var;
        for (int i0 = 0; i0 < n; i0++) {
            int hi1 = n_in > 1 ? n : 1, hi2 = n_in > 2 ? n : 1;
            int lo = n_in > 1 && (var == GV_ADD || var == GV_MUL) ? i0 : 0;
            for (int i1 = lo; i1 < hi1; i1++) {
                /* Below the first level (where every choice is counted for
                 * the progress line) a third input is tried only where the
                 * first two fit and it is a bias. */
                int kind;
                if (n_in > 2 && !top && !applicable(GV_CONV, &w->vals[i0], &w->vals[i1], NULL, &kind))
                    continue;
                for (int i2 = 0; i2 < hi2; i2++) {
                    if (n_in > 2 && !top && w->vals[i2].kind != GK_BIAS)
                        continue;
                    if (must_read_prev && !(i0 >= prev_lo && i0 < prev_hi) &&
                        !(n_in > 1 && i1 >= prev_lo && i1 < prev_hi) && !(n_in > 2 && i2 >= prev_lo && i2 < prev_hi))
                        continue;
                    if (top && choice++ % w->n_workers != w->index)
                        continue;
                    if (!(n_in > 1 && i1 == i0 && distinct_inputs(var)))
                        try_op(w, (gen_variant)var, (const int[]){i0, i1, i2});
                    if (top)
                        atomic_fetch_add(w->done, 1);
                }
            }
        }
    }
}

static void worker_free_scratch(worker *w)
{
    free(w->storage);
    free(w->leaf_storage);
    gen_conv_memo_free(w->memo);
    w->storage = w->leaf_storage = NULL;
    w->memo = NULL;
}

static void *worker_main(void *arg)
{
    dfs((worker *)arg);
    flush_leaves((worker *)arg);
    return NULL;
}

/* ------------------------------------------------------------ pool values */

void gen_pool_fill(uint64_t seed, gen_pool_values *pv, uint64_t *storage)
{
    for (int i = 0; i < gen_pool_size; i++) {
        gen_val *v = &pv->val[i];
        v->shape = gen_pool[i].shape;
        v->v = storage + (size_t)i * GEN_VAL_STRIDE;
        int64_t n = GEN_TRIALS * xf_shape_numel(&v->shape);
        if (gen_pool[i].konst == XF_CONST_NONE || !gen_const_residues(gen_pool[i].konst, v))
            for (int64_t e = 0; e < n; e++)
                v->v[e] = gen_random_residue(seed, (uint64_t)i + 1, e);
        pv->fp[i] = gen_val_hash(v);
    }
}

static void pool_slots(const gen_pool_values *pv, slot *s)
{
    for (int i = 0; i < gen_pool_size; i++)
        s[i] = (slot){pv->val[i], gen_pool[i].kind, pv->fp[i], gen_pool[i].konst != XF_CONST_NONE};
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

xf_status gen_enumerate(int max_ops, uint64_t seed, int threads, gen_record **records, int64_t *n_records,
                        int64_t *n_renamed, const xf_gen_options *opt, xf_error *err)
{
    uint64_t *pool_storage = calloc((size_t)gen_pool_size * GEN_VAL_STRIDE, sizeof *pool_storage);
    slot pool[GEN_MAX_POOL];
    worker *ws = calloc((size_t)threads, sizeof *ws);
    pthread_t *tids = calloc((size_t)threads, sizeof *tids);
    xf_status st = XF_OK;
    if (!pool_storage || !ws || !tids) {
        st = xf_error_set(err, XF_ERR_NOMEM, "out of memory");
        goto done;
    }
    gen_pool_values pv;
    gen_pool_fill(seed, &pv, pool_storage);
    pool_slots(&pv, pool);
    atomic_int_fast64_t done_count = 0;
    int64_t first_level = 0;
    for (int var = 1; var < GV_COUNT; var++)
        first_level += n_choices(var, gen_pool_size);
    int started = 0;
    for (int t = 0; t < threads; t++) {
        worker *w = &ws[t];
        w->max_ops = max_ops;
        w->index = t;
        w->n_workers = threads;
        memcpy(w->vals, pool, sizeof pool[0] * (size_t)gen_pool_size);
        w->n_vals = gen_pool_size;
        for (int i = 0; i < gen_pool_size; i++)
            w->const_mask |= (uint32_t)pool[i].konst << i;
        w->done = &done_count;
        w->storage = calloc((size_t)2 * GEN_MAX_SLOTS * GEN_VAL_STRIDE, sizeof *w->storage);
        w->leaf_storage = malloc((size_t)2 * LEAF_BATCH * GEN_VAL_STRIDE * sizeof *w->leaf_storage);
        w->memo = gen_conv_memo_create();
        if (!w->storage || !w->leaf_storage || !w->memo || pthread_create(&tids[t], NULL, worker_main, w) != 0) {
            st = xf_error_set(err, XF_ERR_NOMEM, "cannot start worker thread %d", t);
            break;
        }
        started++;
    }
    /* Progress from this thread while the workers run. */
    double last = now_s();
    while (st == XF_OK && opt && opt->progress) {
        int64_t d = atomic_load(&done_count);
        if (d >= first_level)
            break;
        struct timespec pause = {0, 100 * 1000 * 1000};
        nanosleep(&pause, NULL);
        if (now_s() - last > 0.25) {
            opt->progress("enumerate", (double)d / (double)first_level, opt->user);
            last = now_s();
        }
    }
    for (int t = 0; t < started; t++)
        pthread_join(tids[t], NULL);
    if (st != XF_OK)
        goto done;
    for (int t = 0; t < threads; t++)
        worker_free_scratch(&ws[t]);

    /* Zero-op graphs: one or two pool tensors (not constants) as the outputs. */
    for (int i = 0; i < gen_pool_size; i++)
        for (int j = i; j <= gen_pool_size; j++) {
            if (pool[i].konst || (j < gen_pool_size && pool[j].konst))
                continue;
            uint64_t fps[2] = {pool[i].fp, j < gen_pool_size ? pool[j].fp : 0};
            int n = j < gen_pool_size ? 2 : 1;
            if (n == 2 && j == i)
                continue;
            uint64_t fp = gen_combine_fps(fps, n);
            gen_store_push(&ws[0].records, fp,
                           gen_code_op(GEN_INPUTS_GRAPH, i, j < gen_pool_size ? j : GEN_NO_INPUT, GEN_NO_INPUT));
            ws[0].renamed += renamings(1u << i | (j < gen_pool_size ? 1u << j : 0));
        }
    gen_record_store *stores = malloc((size_t)threads * sizeof *stores);
    if (!stores) {
        st = xf_error_set(err, XF_ERR_NOMEM, "out of memory");
        goto done;
    }
    if (n_renamed) {
        *n_renamed = 0;
        for (int t = 0; t < threads; t++)
            *n_renamed += ws[t].renamed;
    }
    for (int t = 0; t < threads; t++) {
        stores[t] = ws[t].records;
        memset(&ws[t].records, 0, sizeof ws[t].records);
    }
    st = gen_store_assemble(stores, threads, threads, records, n_records, err);
    for (int t = 0; t < threads; t++)
        gen_store_free(&stores[t]);
    free(stores);
done:
    for (int t = 0; ws && t < threads; t++) {
        worker_free_scratch(&ws[t]);
        gen_store_free(&ws[t].records);
    }
    free(ws);
    free(tids);
    free(pool_storage);
    return st;
}

/* ------------------------------------------------------------ decoding */

bool gen_decode(gen_code code, const gen_pool_values *pool, gen_graph *g, uint64_t *scratch, gen_conv_memo *memo)
{
    memset(g, 0, sizeof *g);
    slot s[GEN_MAX_VALUES];
    pool_slots(pool, s);
    int n_vals = gen_pool_size;
    if (gen_code_variant(code, 0) == GEN_INPUTS_GRAPH) {
        for (int j = 0; j < 2; j++) {
            int in = gen_code_in(code, 0, j);
            if (in != GEN_NO_INPUT) {
                g->outputs[g->n_outputs] = in;
                g->out_fp[g->n_outputs++] = s[in].fp;
            }
        }
    } else {
        bool used[GEN_MAX_VALUES] = {0};
        for (int k = 0; k < GEN_MAX_SLOTS && gen_code_variant(code, k) != GV_NONE; k++) {
            gen_variant var = (gen_variant)gen_code_variant(code, k);
            if (var >= GV_COUNT)
                return false;
            const gen_variant_info *vi = &gen_variants[var];
            xf_shape shapes[GEN_MAX_IN];
            const slot *sl[GEN_MAX_IN] = {NULL, NULL, NULL};
            for (int j = 0; j < GEN_MAX_IN; j++) {
                int v = gen_code_in(code, k, j);
                g->in[k][j] = -1;
                if (j >= vi->n_in)
                    continue;
                if (v >= n_vals)
                    return false;
                g->in[k][j] = v;
                sl[j] = &s[v];
                shapes[j] = s[v].val.shape;
            }
            int kind;
            if (!applicable(var, sl[0], sl[1], sl[2], &kind))
                return false;
            xf_attrs a;
            gen_variant_attrs(var, shapes, &a);
            gen_val out[2];
            for (int j = 0; j < vi->n_out; j++)
                out[j].v = scratch + (size_t)(n_vals - gen_pool_size + j) * GEN_VAL_STRIDE;
            if (!eval_variant(memo, var, sl, &a, out))
                return false;
            g->variant[k] = var;
            g->out_base[k] = n_vals;
            g->n_weight_ops += kind != GK_ACT;
            for (int j = 0; j < vi->n_in; j++)
                used[g->in[k][j]] = true;
            for (int j = 0; j < vi->n_out; j++) {
                s[n_vals].val = out[j];
                s[n_vals].kind = kind;
                s[n_vals].konst = false;
                s[n_vals].fp = gen_val_hash(&out[j]);
                n_vals++;
            }
            g->n_ops++;
        }
        for (int v = gen_pool_size; v < n_vals; v++)
            if (!used[v]) {
                g->outputs[g->n_outputs] = v;
                g->out_fp[g->n_outputs++] = s[v].fp;
            }
    }
    g->n_values = n_vals;
    g->code = code;
    for (int v = 0; v < n_vals; v++)
        g->val_fp[v] = s[v].fp;
    /* Outputs in fingerprint order, so that two graphs of one group list
     * corresponding outputs at the same positions. */
    for (int i = 1; i < g->n_outputs; i++)
        for (int j = i; j > 0 && g->out_fp[j - 1] > g->out_fp[j]; j--) {
            uint64_t f = g->out_fp[j];
            g->out_fp[j] = g->out_fp[j - 1];
            g->out_fp[j - 1] = f;
            int o = g->outputs[j];
            g->outputs[j] = g->outputs[j - 1];
            g->outputs[j - 1] = o;
        }
    return true;
}
