/* Transposes pushed later through the ops that carry a layout along, and
 * cancelled against the Transposes they meet.
 *
 * TensorFlow's exports compute in NHWC and wrap every Conv (which ONNX
 * defines in NCHW) in a Transpose to NCHW and one back; the elementwise
 * ops, Pads and reductions between two Convs then run in NHWC.  A
 * Transpose T_p(x) read by such an op N moves to N's output: N reads x
 * (its other inputs transposed to match: constants permuted here, scalars
 * as they are, other values through a new Transpose by the inverse
 * permutation) with its axes renumbered, and T_p transposes what N
 * computes.  Two Transposes in a row compose into one, and into nothing
 * when they invert each other, which leaves each Conv reading the output
 * of the op before it.  ONNX Runtime's transpose optimizer does the same.
 *
 * The quantized ops of ONNX Runtime's QOperator format carry a layout the
 * same way, their scales and zero points per tensor: QLinearAdd and
 * QLinearMul like Add, QLinearLeakyRelu and QLinearSigmoid like a unary
 * op, QLinearConcat like Concat, and QLinearGlobalAveragePool across the
 * move between channels first and channels last (its channels_last
 * flipped), so that the Transposes ONNX Runtime's channels-last forms
 * leave between quantized ops cancel too.  QuantizeLinear and
 * DequantizeLinear are not moved through: a Transpose would move from
 * 8-bit data to float, and come between the QDQ pairs backends fuse.
 *
 * A node moves the Transposes of its inputs when that bypasses more of
 * them than it inserts; the pass as a whole is kept only when the graph
 * ends with fewer Transposes than it began with, so a graph it cannot
 * improve stays as it was.  Graph outputs keep their names and shapes: a
 * moved Transpose writes the value the node wrote. */
#include "xf_core.h"

#include <stdlib.h>
#include <string.h>

typedef struct perm {
    int rank;
    int64_t p[XF_MAX_DIMS];
} perm;

static bool is_identity(const perm *p)
{
    for (int i = 0; i < p->rank; i++)
        if (p->p[i] != i)
            return false;
    return true;
}

static perm inverse(const perm *p)
{
    perm q = {.rank = p->rank};
    for (int i = 0; i < p->rank; i++)
        q.p[p->p[i]] = i;
    return q;
}

/* The permutation of Transpose node n (whose input's rank is known). */
static bool transpose_perm(const xf_graph *g, const xf_node *n, perm *out)
{
    if (n->op != XF_OP_TRANSPOSE || n->n_inputs != 1 || n->inputs[0] < 0 || n->n_outputs != 1 ||
        n->outputs[0] < 0)
        return false;
    int r = g->values[n->inputs[0]].shape.ndim;
    if (r < 1 || r > XF_MAX_DIMS || (n->attrs.n_perm && n->attrs.n_perm != r))
        return false;
    bool seen[XF_MAX_DIMS] = {false};
    out->rank = r;
    for (int i = 0; i < r; i++) {
        int64_t a = n->attrs.n_perm ? n->attrs.perm[i] : r - 1 - i;
        if (a < 0 || a >= r || seen[a])
            return false;
        seen[a] = true;
        out->p[i] = a;
    }
    return true;
}

/* The Transpose node computing value v (its index), or -1. */
static int transpose_of(const xf_graph *g, int v, perm *p)
{
    int t = v >= 0 ? g->values[v].producer : -1;
    return t >= 0 && transpose_perm(g, &g->nodes[t], p) ? t : -1;
}

/* The shape s has once transposed by p. */
static xf_shape permute_shape(const xf_shape *s, const perm *p)
{
    xf_shape o = {.ndim = p->rank};
    for (int i = 0; i < p->rank; i++)
        o.dims[i] = s->dims[p->p[i]];
    return o;
}

/* Constant c (of rank rank or less, numpy-aligned to rank) transposed by p:
 * out[i0..] = c[...] with out's dim i c's dim p[i]. */
static xf_tensor *permuted_constant(const xf_tensor *c, const perm *p)
{
    size_t es = xf_dtype_size(c->dtype);
    if (c->dtype == XF_DT_STRING || es == 0 || xf_tensor_is_container(c) || c->shape.ndim > p->rank ||
        (c->nbytes && !c->data))
        return NULL;
    xf_shape full = {.ndim = p->rank};
    int lead = p->rank - c->shape.ndim;
    for (int i = 0; i < p->rank; i++)
        full.dims[i] = i < lead ? 1 : c->shape.dims[i - lead];
    xf_shape os = permute_shape(&full, p);
    xf_tensor *o = xf_tensor_create(c->dtype, &os);
    if (!o)
        return NULL;
    int64_t stride[XF_MAX_DIMS], n = xf_tensor_numel(o);
    for (int i = p->rank - 1, s = 1; i >= 0; i--) {
        stride[i] = s;
        s *= (int)full.dims[i];
    }
    int64_t idx[XF_MAX_DIMS] = {0};
    for (int64_t k = 0; k < n; k++) {
        int64_t src = 0;
        for (int i = 0; i < p->rank; i++)
            src += idx[i] * stride[p->p[i]];
        memcpy((char *)o->data + (size_t)k * es, (const char *)c->data + (size_t)src * es, es);
        for (int i = p->rank - 1; i >= 0 && ++idx[i] == os.dims[i]; i--)
            idx[i] = 0;
    }
    return o;
}

/* A new initializer holding t (the graph takes its own reference). */
static int add_constant(xf_graph *g, xf_tensor *t)
{
    int v = t ? xf_graph_add_initializer(g, NULL, t) : -1;
    xf_tensor_release(t);
    return v;
}

/* A new Transpose by p reading x; the value it writes, or -1. */
static int add_transpose(xf_graph *g, int x, const perm *p)
{
    xf_shape s = permute_shape(&g->values[x].shape, p);
    int y = xf_graph_add_value(g, NULL, g->values[x].dtype, &s);
    int t = y >= 0 ? xf_graph_add_node(g, XF_OP_TRANSPOSE, NULL, 1, &x, 1, &y) : -1;
    if (t < 0)
        return -1;
    g->nodes[t].attrs.n_perm = p->rank;
    memcpy(g->nodes[t].attrs.perm, p->p, sizeof p->p);
    return y;
}

/* ------------------------------------------------------------ what a node does with a layout */

/* K_QELEM, K_QUNARY, K_QCONCAT, K_QGAP: the quantized ops (above). */
typedef enum kind { K_NONE, K_ELEM, K_CONCAT, K_PAD, K_REDUCE, K_SOFTMAX, K_QELEM, K_QUNARY, K_QCONCAT, K_QGAP } kind;

static kind kind_of(const xf_node *n, int64_t opset)
{
    if (xf_op_is_reduce(n->op))
        return K_REDUCE;
    switch (n->op) {
    case XF_OP_CONCAT:
        return K_CONCAT;
    case XF_OP_MS_QLINEAR_ADD:
    case XF_OP_MS_QLINEAR_MUL:
        return K_QELEM;
    case XF_OP_MS_QLINEAR_LEAKY_RELU:
    case XF_OP_MS_QLINEAR_SIGMOID:
        return K_QUNARY;
    case XF_OP_MS_QLINEAR_CONCAT:
        return K_QCONCAT;
    case XF_OP_MS_QLINEAR_GLOBAL_AVERAGE_POOL:
        return K_QGAP;
    case XF_OP_PAD:
        return K_PAD;
    case XF_OP_SOFTMAX:
    case XF_OP_LOG_SOFTMAX:
    case XF_OP_HARDMAX:
        return n->attrs.softmax_legacy ? K_NONE : K_SOFTMAX;
    default:
        /* numpy broadcasting from opset 7 (before it, a broadcast attribute) */
        return n->op < XF_OP_COUNT && (xf_op_get_info(n->op)->flags & XF_OPF_ELEM) && opset >= 7 &&
                       n->n_outputs == 1
                   ? K_ELEM
                   : K_NONE;
    }
}

/* How a node reads one of its inputs once its Transposes move. */
typedef enum action { A_KEEP, A_BYPASS, A_PERMUTE, A_INSERT } action;

/* A node's move: per input what happens, its new axes or pads, and the
 * permutation its output is transposed by afterwards. */
typedef struct plan {
    perm p;                  /* the Transposes moved */
    action act[64];
    int bypassed, inserted;
    int64_t axis;            /* Concat, Softmax */
    int n_axes;              /* Reduce: -1 = all */
    int64_t axes[XF_MAX_DIMS];
    int64_t pads[2 * XF_MAX_DIMS];
    perm out;                /* of the output */
} plan;

/* What input j of a node of kind k is: data the layout applies to, a
 * parameter left as it is (a Pad's pads, a reduction's axes), or a scale
 * or zero point, which must be one element (per tensor). */
typedef enum role { R_DATA, R_PARAM, R_SCALAR } role;

static role role_of(kind k, int j)
{
    switch (k) {
    case K_ELEM:
    case K_CONCAT:
        return R_DATA;
    case K_QELEM:
        return j == 0 || j == 3 ? R_DATA : R_SCALAR;
    case K_QCONCAT:
        return j >= 2 && (j - 2) % 3 == 0 ? R_DATA : R_SCALAR;
    case K_QUNARY:
    case K_QGAP:
        return j == 0 ? R_DATA : R_SCALAR;
    default:
        return j == 0 ? R_DATA : R_PARAM;
    }
}

static bool plan_inputs(const xf_graph *g, const xf_node *n, kind k, plan *pl)
{
    if (n->n_inputs > 64)
        return false;
    bool elem = k == K_ELEM || k == K_QELEM, concat = k == K_CONCAT || k == K_QCONCAT;
    for (int j = 0; j < n->n_inputs; j++) {
        int v = n->inputs[j];
        perm q;
        const xf_tensor *c = xf_graph_constant(g, v);
        const xf_shape *s = v >= 0 ? &g->values[v].shape : NULL;
        role r = role_of(k, j);
        if (r == R_PARAM || (v >= 0 && s->ndim < 0) || (r == R_SCALAR && v >= 0 && xf_shape_numel(s) != 1)) {
            if (r != R_PARAM)
                return false;
            pl->act[j] = A_KEEP;
        } else if (v < 0 || r == R_SCALAR || (elem && s->ndim <= pl->p.rank && xf_shape_numel(s) == 1)) {
            pl->act[j] = A_KEEP; /* absent, or one element broadcast alike in any layout */
        } else if (transpose_of(g, v, &q) >= 0 && q.rank == pl->p.rank &&
                   !memcmp(q.p, pl->p.p, sizeof q.p[0] * (size_t)q.rank)) {
            pl->act[j] = A_BYPASS;
            pl->bypassed++;
        } else if (c && (elem || concat) && s->ndim <= pl->p.rank) {
            pl->act[j] = A_PERMUTE;
        } else if (s->ndim == pl->p.rank && (elem || concat)) {
            pl->act[j] = A_INSERT;
            pl->inserted++;
        } else {
            return false;
        }
    }
    return pl->bypassed > pl->inserted;
}

static int64_t normal_axis(int64_t a, int rank) { return a < 0 ? a + rank : a; }

/* The constant int64 entries of input j of n (at most max); -1 when not. */
static int const_ints(const xf_graph *g, const xf_node *n, int j, int64_t *out, int max)
{
    const xf_tensor *t = j < n->n_inputs ? xf_graph_constant(g, n->inputs[j]) : NULL;
    if (!t || t->dtype != XF_DT_INT64 || t->shape.ndim != 1 || xf_tensor_numel(t) > max || (t->nbytes && !t->data))
        return -1;
    for (int64_t i = 0; i < xf_tensor_numel(t); i++)
        out[i] = xf_tensor_get_i64(t, i);
    return (int)xf_tensor_numel(t);
}

/* Axes, pads and the output's permutation: what the op's parameters become. */
static bool plan_params(const xf_graph *g, const xf_node *n, kind k, plan *pl)
{
    const xf_attrs *a = &n->attrs;
    int r = pl->p.rank;
    pl->out = pl->p;
    if (k == K_QGAP) { /* channels first to last, or last to first */
        bool to_last = pl->p.p[1] == 2 && pl->p.p[r - 1] == 1, to_first = pl->p.p[1] == r - 1 && pl->p.p[2] == 1;
        for (int i = 2; i < r - 1 && (to_last || to_first); i++) {
            to_last = to_last && pl->p.p[i] == i + 1;
            to_first = to_first && pl->p.p[i + 1] == i;
        }
        return r >= 3 && pl->p.p[0] == 0 && (a->channels_last ? to_last : to_first);
    }
    if (k == K_CONCAT || k == K_SOFTMAX || k == K_QCONCAT) {
        int64_t ax = normal_axis(a->axis, r);
        if (ax < 0 || ax >= r)
            return false;
        pl->axis = pl->p.p[ax];
    } else if (k == K_PAD) {
        int64_t old[2 * XF_MAX_DIMS];
        int np = a->has_pads ? a->n_pads : const_ints(g, n, 1, old, 2 * XF_MAX_DIMS);
        if (a->has_pads)
            memcpy(old, a->pad_pads, sizeof old[0] * (size_t)(np > 0 ? np : 0));
        if (np != 2 * r || (n->n_inputs > 3 && n->inputs[3] >= 0))
            return false;
        for (int i = 0; i < r; i++) {
            pl->pads[pl->p.p[i]] = old[i];
            pl->pads[r + pl->p.p[i]] = old[r + i];
        }
    } else if (k == K_REDUCE) {
        int64_t ax[XF_MAX_DIMS];
        int na = a->has_axes ? a->n_axes : n->n_inputs > 1 && n->inputs[1] >= 0 ? const_ints(g, n, 1, ax, r) : 0;
        if (a->has_axes)
            memcpy(ax, a->axes, sizeof ax[0] * (size_t)na);
        if (na < 0 || (na == 0 && a->noop_with_empty_axes))
            return na == 0; /* an identity: the output keeps the layout */
        bool reduced[XF_MAX_DIMS] = {false};
        for (int i = 0; i < r; i++)
            reduced[i] = na == 0;
        for (int i = 0; i < na; i++) {
            int64_t d = normal_axis(ax[i], r);
            if (d < 0 || d >= r)
                return false;
            reduced[d] = true;
            pl->axes[i] = pl->p.p[d];
        }
        pl->n_axes = na;
        if (!a->keepdims) {
            /* the kept dims, in the input's order: where each lands */
            int pos[XF_MAX_DIMS], m = 0, o = 0;
            for (int d = 0; d < r; d++) {
                bool gone = false;
                for (int i = 0; i < r; i++)
                    gone = gone || (reduced[i] && pl->p.p[i] == d);
                pos[d] = gone ? -1 : m++;
            }
            pl->out.rank = m;
            for (int i = 0; i < r; i++)
                if (!reduced[i])
                    pl->out.p[o++] = pos[pl->p.p[i]];
        }
    }
    return true;
}

/* Applies plan pl to node i (inputs, parameters, output). */
static bool apply(xf_graph *g, int i, kind k, const plan *pl)
{
    perm inv = inverse(&pl->p);
    for (int j = 0; j < g->nodes[i].n_inputs; j++) {
        int v = g->nodes[i].inputs[j], nv = v;
        perm q;
        if (pl->act[j] == A_BYPASS)
            nv = g->nodes[transpose_of(g, v, &q)].inputs[0];
        else if (pl->act[j] == A_PERMUTE)
            nv = add_constant(g, permuted_constant(g->values[v].init, &inv));
        else if (pl->act[j] == A_INSERT)
            nv = add_transpose(g, v, &inv);
        if (nv < 0)
            return false;
        g->nodes[i].inputs[j] = nv;
    }
    xf_node *n = &g->nodes[i];
    xf_attrs *a = &n->attrs;
    int r = pl->p.rank;
    if (k == K_CONCAT || k == K_SOFTMAX || k == K_QCONCAT) {
        a->axis = pl->axis;
    } else if (k == K_QGAP) {
        a->channels_last = !a->channels_last;
    } else if (k == K_PAD && a->has_pads) {
        memcpy(a->pad_pads, pl->pads, sizeof pl->pads[0] * (size_t)(2 * r));
    } else if (k == K_PAD) {
        xf_shape s = {.ndim = 1, .dims = {2 * r}};
        int v = add_constant(g, xf_tensor_from_data(XF_DT_INT64, &s, pl->pads));
        if (v < 0)
            return false;
        g->nodes[i].inputs[1] = v;
    } else if (k == K_REDUCE && pl->n_axes > 0 && a->has_axes) {
        memcpy(a->axes, pl->axes, sizeof pl->axes[0] * (size_t)pl->n_axes);
    } else if (k == K_REDUCE && pl->n_axes > 0) {
        xf_shape s = {.ndim = 1, .dims = {pl->n_axes}};
        int v = add_constant(g, xf_tensor_from_data(XF_DT_INT64, &s, pl->axes));
        if (v < 0)
            return false;
        g->nodes[i].inputs[1] = v;
    }
    if (is_identity(&pl->out))
        return true;
    /* the node writes a new value in the new layout, a Transpose the old one */
    int y = g->nodes[i].outputs[0];
    perm out_inv = inverse(&pl->out);
    xf_shape s = permute_shape(&g->values[y].shape, &out_inv);
    int ny = xf_graph_add_value(g, NULL, g->values[y].dtype, &s);
    if (ny < 0)
        return false;
    g->nodes[i].outputs[0] = ny;
    g->values[ny].producer = i;
    g->values[ny].producer_out = 0;
    int t = xf_graph_add_node(g, XF_OP_TRANSPOSE, NULL, 1, &ny, 1, &y);
    if (t < 0)
        return false;
    g->nodes[t].attrs.n_perm = pl->out.rank;
    memcpy(g->nodes[t].attrs.perm, pl->out.p, sizeof pl->out.p);
    return true;
}

/* Transpose node i reading another Transpose: one Transpose of the
 * first's input, or none when they cancel (its readers then read that
 * input).  Whether it changed anything. */
static bool compose(xf_graph *g, int i)
{
    perm outer, inner;
    if (!transpose_perm(g, &g->nodes[i], &outer))
        return false;
    int x = g->nodes[i].inputs[0], y = g->nodes[i].outputs[0];
    int t = transpose_of(g, x, &inner);
    perm r = outer;
    if (t >= 0) {
        for (int k = 0; k < outer.rank; k++)
            r.p[k] = inner.p[outer.p[k]];
        x = g->nodes[t].inputs[0];
    }
    if (is_identity(&r) && !xf_graph_is_output(g, y)) {
        xf_graph_replace_uses(g, y, x);
        return true;
    }
    int pr = g->values[x].producer;
    if (is_identity(&r) && pr >= 0 && !xf_graph_is_output(g, x)) {
        /* a graph output: the node computing x writes it instead, and this
         * Transpose writes a value nothing reads (dead-node removal's) */
        int d = xf_graph_add_value(g, NULL, g->values[y].dtype, &g->values[y].shape);
        if (d < 0)
            return false;
        xf_graph_replace_uses(g, x, y);
        g->nodes[pr].outputs[g->values[x].producer_out] = y;
        g->values[y].producer = pr;
        g->values[y].producer_out = g->values[x].producer_out;
        g->nodes[i].outputs[0] = d;
        g->values[d].producer = i;
        g->values[d].producer_out = 0;
        return true;
    }
    if (t < 0)
        return false;
    xf_attrs *a = &g->nodes[i].attrs;
    g->nodes[i].inputs[0] = x;
    a->n_perm = r.rank;
    memcpy(a->perm, r.p, sizeof r.p);
    return true;
}

/* Moves node i's input Transposes to its output when that pays. */
static int push(xf_graph *g, int i, int64_t opset)
{
    const xf_node *n = &g->nodes[i];
    kind k = kind_of(n, opset);
    if (k == K_NONE || n->n_outputs != 1 || n->outputs[0] < 0 || g->values[n->outputs[0]].shape.ndim < 0)
        return 0;
    plan pl = {.n_axes = 0};
    int first = -1;
    for (int j = 0; j < n->n_inputs && first < 0; j++)
        if (role_of(k, j) == R_DATA && transpose_of(g, n->inputs[j], &pl.p) >= 0)
            first = j;
    if (first < 0 || !plan_inputs(g, n, k, &pl) || !plan_params(g, n, k, &pl))
        return 0;
    return apply(g, i, k, &pl) ? 1 : -1;
}

static int count_transposes(const xf_graph *g)
{
    int c = 0;
    for (int i = 0; i < g->n_nodes; i++)
        c += g->nodes[i].op == XF_OP_TRANSPOSE && !xf_graph_constant(g, g->nodes[i].inputs[0]);
    return c;
}

/* Sweeps over w until nothing moves: false when out of memory. */
static bool push_all(xf_graph *w, int64_t opset, xf_error *err)
{
    for (int sweep = 0, moved = 1; moved && sweep < 16; sweep++) {
        moved = 0;
        for (int i = 0; i < w->n_nodes; i++) {
            int r = w->nodes[i].op == XF_OP_TRANSPOSE ? compose(w, i) : push(w, i, opset);
            if (r < 0)
                return false;
            moved += r;
        }
        /* sorted first: dead-node removal walks the order backwards */
        if (xf_graph_toposort(w, err) != XF_OK || xf_pass_remove_dead(w, NULL, err) != XF_OK)
            return false;
    }
    return true;
}

xf_status xf_pass_push_transposes(xf_graph *g, int64_t opset, xf_canon_stats *st, xf_error *err)
{
    int before = count_transposes(g);
    if (before == 0)
        return XF_OK;
    xf_graph *w = xf_graph_clone(g);
    xf_error local = {0};
    if (!w || !push_all(w, opset, &local)) {
        xf_graph_free(w);
        return local.status != XF_OK && local.status != XF_ERR_NOMEM
                   ? xf_error_set(err, local.status, "%s", local.msg)
                   : xf_error_set(err, XF_ERR_NOMEM, "out of memory moving Transposes");
    }
    int after = count_transposes(w);
    if (after < before) {
        xf_graph tmp = *g;
        *g = *w;
        *w = tmp;
        if (st)
            st->removed_transposes += before - after;
    }
    xf_graph_free(w);
    return XF_OK;
}
