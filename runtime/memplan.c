/* The static memory plan: every node output gets an offset in one arena,
 * and values whose lifetimes are disjoint share bytes.
 *
 * Placement is "greedy by size": largest values first, each put into the
 * tightest gap left by already placed values that are alive at the same
 * time (else above them).  Large buffers placed first leave gaps that the
 * many small ones fill, which gets close to the peak on typical networks. */
#include "xf_rt_internal.h"

#include <stdlib.h>
#include <string.h>

#define XF_PLAN_ALIGN 64

typedef struct plan_item {
    int value;
    size_t size;
    int first;
} plan_item;

static int by_size_desc(const void *pa, const void *pb)
{
    const plan_item *a = pa, *b = pb;
    if (a->size != b->size)
        return a->size < b->size ? 1 : -1;
    if (a->first != b->first)
        return a->first < b->first ? -1 : 1;
    return a->value - b->value;
}

typedef struct span {
    size_t begin, end;
} span;

static int by_begin(const void *pa, const void *pb)
{
    const span *a = pa, *b = pb;
    return a->begin < b->begin ? -1 : a->begin > b->begin;
}

void xf_memplan_free(xf_memplan *p)
{
    if (!p)
        return;
    free(p->offset);
    free(p->size);
    free(p->first);
    free(p->last);
    free(p->alias);
    free(p->alias_offset);
    free(p->skip);
    memset(p, 0, sizeof *p);
}

bool xf_rt_view_op(const xf_node *n)
{
    switch (n->op) {
    case XF_OP_RESHAPE:
    case XF_OP_FLATTEN:
    case XF_OP_SQUEEZE:
    case XF_OP_UNSQUEEZE:
    case XF_OP_IDENTITY: return n->n_inputs >= 1 && n->n_outputs == 1;
    default: return false;
    }
}

/* Whether the value v is a tensor a node produces (not a graph input,
 * bound per run, nor a constant) of static size over 0. */
static bool planned_tensor(const xf_graph *g, int v)
{
    const xf_value *x = v >= 0 ? &g->values[v] : NULL;
    /* whole bytes per element, so that parts start at byte offsets */
    return x && x->producer >= 0 && x->kind == XF_VK_TENSOR && xf_shape_numel(&x->shape) > 0 &&
           xf_dtype_size(x->dtype) > 0;
}

/* Concat node n as its inputs written in place, one after another in its
 * output's bytes: every dim before the axis is 1, each input is made by a
 * node, appears once, is not already part of another value's bytes and
 * starts at an aligned byte; returns whether it is, recording the inputs
 * (and what was part of an input's bytes, a view of it or the inputs of
 * a Concat that made it, moves with it). */
static bool plan_concat(const xf_graph *g, const xf_node *n, xf_memplan *p)
{
    int y = n->outputs[0];
    if (n->n_outputs != 1 || !planned_tensor(g, y) || p->alias[y] >= 0)
        return false;
    const xf_shape *ys = &g->values[y].shape;
    int64_t axis = n->attrs.axis < 0 ? n->attrs.axis + ys->ndim : n->attrs.axis, at = 0;
    size_t es = xf_dtype_size(g->values[y].dtype);
    if (axis < 0 || axis >= ys->ndim)
        return false;
    for (int d = 0; d < axis; d++)
        if (ys->dims[d] != 1)
            return false;
    for (int k = 0; k < n->n_inputs; k++) {
        int x = n->inputs[k];
        if (!planned_tensor(g, x) || g->values[x].dtype != g->values[y].dtype || p->alias[x] >= 0 ||
            (at * es) % XF_PLAN_ALIGN)
            return false;
        for (int j = 0; j < k; j++)
            if (n->inputs[j] == x)
                return false;
        at += xf_shape_numel(&g->values[x].shape);
    }
    if (at != xf_shape_numel(ys))
        return false;
    at = 0;
    for (int k = 0; k < n->n_inputs; k++) {
        int x = n->inputs[k];
        size_t off = (size_t)at * es;
        for (int w = 0; w < g->n_values; w++)
            if (p->alias[w] == x) {
                p->alias[w] = y;
                p->alias_offset[w] += off;
            }
        p->alias[x] = y;
        p->alias_offset[x] = off;
        at += xf_shape_numel(&g->values[x].shape);
    }
    return true;
}

/* Whether a Concat that in_place allows reads value v: v had better be
 * made in that Concat's bytes (a Concat copies all its bytes, a Split
 * only its parts). */
static bool read_by_concat(const xf_graph *g, const bool *in_place, int v)
{
    for (int i = 0; i < g->n_nodes; i++)
        if (g->nodes[i].op == XF_OP_CONCAT && (!in_place || in_place[i]))
            for (int k = 0; k < g->nodes[i].n_inputs; k++)
                if (g->nodes[i].inputs[k] == v)
                    return true;
    return false;
}

/* Split node n as views of its input, each output its own range of the
 * input's bytes: every dim before the axis is 1, the input is made by a
 * node, each output starts at an aligned byte and none is an input of a
 * Concat that may be done in place. */
static bool plan_split(const xf_graph *g, const xf_node *n, const bool *in_place, xf_memplan *p)
{
    int x = n->inputs[0];
    if (!planned_tensor(g, x))
        return false;
    const xf_shape *xs = &g->values[x].shape;
    int64_t axis = n->attrs.axis < 0 ? n->attrs.axis + xs->ndim : n->attrs.axis, at = 0;
    size_t es = xf_dtype_size(g->values[x].dtype), base = p->alias[x] >= 0 ? p->alias_offset[x] : 0;
    if (axis < 0 || axis >= xs->ndim)
        return false;
    for (int d = 0; d < axis; d++)
        if (xs->dims[d] != 1)
            return false;
    for (int k = 0; k < n->n_outputs; k++) {
        int y = n->outputs[k];
        if (y < 0)
            return false;
        const xf_value *yv = &g->values[y];
        if (yv->kind != XF_VK_TENSOR || yv->dtype != g->values[x].dtype || p->alias[y] >= 0 ||
            (base + (size_t)at * es) % XF_PLAN_ALIGN || xf_shape_numel(&yv->shape) < 0 ||
            read_by_concat(g, in_place, y))
            return false;
        at += xf_shape_numel(&yv->shape);
    }
    if (at != xf_shape_numel(xs))
        return false;
    at = 0;
    for (int k = 0; k < n->n_outputs; k++) {
        int y = n->outputs[k];
        p->alias[y] = p->alias[x] >= 0 ? p->alias[x] : x;
        p->alias_offset[y] = base + (size_t)at * es;
        at += xf_shape_numel(&g->values[y].shape);
    }
    return true;
}

/* The values that share another's bytes (p->alias), and the nodes whose
 * work that does (p->skip): outputs of view ops of a planned tensor of the
 * same type and size (a view of a view, or of a Concat's input, shares
 * the same bytes), the inputs of a Concat and the outputs of a Split that
 * in_place allows (NULL: all) and plan_concat or plan_split take. */
static void plan_aliases(const xf_graph *g, const bool *in_place, xf_memplan *p)
{
    for (int v = 0; v < g->n_values; v++) {
        p->alias[v] = -1;
        p->alias_offset[v] = 0;
    }
    for (int i = 0; i < g->n_nodes; i++) {
        const xf_node *n = &g->nodes[i];
        p->skip[i] = false;
        if ((n->op == XF_OP_CONCAT || n->op == XF_OP_SPLIT) && (!in_place || in_place[i])) {
            p->skip[i] = n->op == XF_OP_CONCAT ? plan_concat(g, n, p) : plan_split(g, n, in_place, p);
            continue;
        }
        if (!xf_rt_view_op(n) || !planned_tensor(g, n->inputs[0]) || n->outputs[0] < 0)
            continue;
        const xf_value *x = &g->values[n->inputs[0]], *y = &g->values[n->outputs[0]];
        if (y->kind != XF_VK_TENSOR || x->dtype != y->dtype || xf_shape_numel(&x->shape) != xf_shape_numel(&y->shape))
            continue;
        int root = p->alias[n->inputs[0]];
        p->alias[n->outputs[0]] = root >= 0 ? root : n->inputs[0];
        p->alias_offset[n->outputs[0]] = root >= 0 ? p->alias_offset[n->inputs[0]] : 0;
        p->skip[i] = true;
    }
}

/* Node i's output y takes the bytes of input a.input (x) of node a.reader
 * (of i's group), which the group adds its work to: where both are
 * planned tensors of the same type and size, x holds all of its bytes'
 * root (the value they belong to: x itself, or the one an earlier such
 * output took them from, so that a chain of residual Adds runs in one
 * buffer), and no value of those bytes is a graph output or is read from
 * the group's first node on but by a.reader (as x). */
static void plan_accumulate(const xf_graph *g, const int *group, int i, xf_accumulate a, bool *mark, xf_memplan *p)
{
    const xf_node *n = &g->nodes[i];
    if (a.reader < 0 || a.reader > i || (group && group[a.reader] != group[i]) || a.input < 0 ||
        a.input >= g->nodes[a.reader].n_inputs || n->n_outputs != 1)
        return;
    int x = g->nodes[a.reader].inputs[a.input], y = n->outputs[0];
    if (x < 0 || !planned_tensor(g, y) || x == y || p->alias[y] >= 0)
        return;
    int r = p->alias[x] >= 0 ? p->alias[x] : x;
    size_t bytes = xf_dtype_nbytes(g->values[y].dtype, xf_shape_numel(&g->values[y].shape));
    if (!planned_tensor(g, r) || g->values[x].dtype != g->values[y].dtype || p->alias_offset[x] != 0 ||
        xf_dtype_nbytes(g->values[r].dtype, xf_shape_numel(&g->values[r].shape)) != bytes ||
        xf_dtype_nbytes(g->values[x].dtype, xf_shape_numel(&g->values[x].shape)) != bytes)
        return;
    /* mark[v]: v holds r's bytes; no value holds y's yet (a Concat's
     * part written early would overwrite x before i reads it) */
    for (int v = 0; v < g->n_values; v++) {
        if (p->alias[v] == y)
            return;
        mark[v] = v == r || p->alias[v] == r;
    }
    for (int o = 0; o < g->n_outputs; o++)
        if (g->outputs[o] >= 0 && mark[g->outputs[o]])
            return;
    int first = group ? group[i] : i;
    for (int j = first; j < g->n_nodes; j++)
        for (int q = 0; q < g->nodes[j].n_inputs; q++) {
            int v = g->nodes[j].inputs[q];
            if (v >= 0 && mark[v] && !(j == a.reader && v == x))
                return;
        }
    p->alias[y] = r;
    p->alias_offset[y] = 0;
}

bool xf_memplan_skips(const xf_memplan *p, int i) { return p && p->skip && p->skip[i]; }

/* The value whose bytes v holds. */
static int root_of(const xf_memplan *p, int v) { return p->alias[v] >= 0 ? p->alias[v] : v; }

/* Sizes and lifetimes of the planned values (node outputs; a view's are
 * set from its root's afterwards).  A node of a group counts as running
 * from the group's first node to its last. */
static xf_status plan_lifetimes(const xf_graph *g, const int *group, xf_memplan *p, xf_error *err)
{
    for (int v = 0; v < g->n_values; v++) {
        p->offset[v] = -1;
        p->first[v] = p->last[v] = -1;
    }
    for (int i = 0; i < g->n_nodes; i++)
        for (int k = 0; k < g->nodes[i].n_outputs; k++) {
            int v = g->nodes[i].outputs[k];
            if (v < 0 || p->alias[v] >= 0)
                continue;
            const xf_value *val = &g->values[v];
            int64_t numel = xf_shape_numel(&val->shape);
            int bits = xf_dtype_bits(val->dtype);
            if (numel < 0)
                return xf_error_set(err, XF_ERR_UNSUPPORTED, "value '%s' has no static shape", val->name);
            if (bits == 0 || val->dtype == XF_DT_STRING)
                return xf_error_set(err, XF_ERR_UNSUPPORTED, "value '%s' has type %s, which the runtime cannot hold",
                                    val->name, xf_dtype_name(val->dtype));
            if ((uint64_t)numel > (SIZE_MAX - XF_PLAN_ALIGN) / 8 * 8 / (unsigned)bits)
                return xf_error_set(err, XF_ERR_LIMIT, "value '%s' is too large", val->name);
            size_t bytes = xf_dtype_nbytes(val->dtype, numel);
            p->size[v] = (bytes + XF_PLAN_ALIGN - 1) & ~(size_t)(XF_PLAN_ALIGN - 1);
            p->first[v] = p->last[v] = group ? group[i] : i;
        }
    /* a value whose bytes are another's (a Concat's output) makes them
     * live from when it is made */
    for (int i = 0; i < g->n_nodes; i++)
        for (int k = 0; k < g->nodes[i].n_outputs; k++) {
            int v = g->nodes[i].outputs[k], r = v >= 0 ? root_of(p, v) : -1, at = group ? group[i] : i;
            if (r != v && p->first[r] > at)
                p->first[r] = at;
        }
    /* the last node of each group, stored at its first node */
    int *group_end = malloc(sizeof *group_end * (size_t)(g->n_nodes > 0 ? g->n_nodes : 1));
    if (!group_end)
        return xf_error_set(err, XF_ERR_NOMEM, "out of memory planning %d nodes", g->n_nodes);
    for (int i = 0; i < g->n_nodes; i++)
        group_end[group ? group[i] : i] = i;
    for (int i = 0; i < g->n_nodes; i++) {
        int end = group_end[group ? group[i] : i];
        for (int k = 0; k < g->nodes[i].n_inputs; k++) {
            int v = g->nodes[i].inputs[k] >= 0 ? root_of(p, g->nodes[i].inputs[k]) : -1;
            if (v >= 0 && p->first[v] >= 0 && p->last[v] < end)
                p->last[v] = end;
        }
    }
    free(group_end);
    for (int k = 0; k < g->n_outputs; k++)
        if (p->first[root_of(p, g->outputs[k])] >= 0)
            p->last[root_of(p, g->outputs[k])] = g->n_nodes;
    return XF_OK;
}

/* The most bytes alive at any step: a lower bound for every plan. */
static xf_status plan_peak(const xf_graph *g, xf_memplan *p, xf_error *err)
{
    size_t steps = (size_t)g->n_nodes + 2, live = 0;
    size_t *born = calloc(steps, sizeof *born), *dead = calloc(steps, sizeof *dead);
    xf_status st = XF_OK;
    if (!born || !dead) {
        st = xf_error_set(err, XF_ERR_NOMEM, "out of memory planning %d nodes", g->n_nodes);
    } else {
        for (int v = 0; v < p->n_values; v++)
            if (p->first[v] >= 0) {
                born[p->first[v]] += p->size[v];
                dead[p->last[v] + 1] += p->size[v];
            }
        for (int t = 0; t <= g->n_nodes; t++) {
            live = live + born[t] - dead[t];
            if (live > p->peak_bytes)
                p->peak_bytes = live;
        }
    }
    free(born);
    free(dead);
    return st;
}

xf_status xf_memplan_compute(const xf_graph *g, xf_memplan *p, xf_error *err)
{
    return xf_memplan_compute_grouped(g, NULL, NULL, NULL, p, err);
}

xf_status xf_memplan_compute_grouped(const xf_graph *g, const int *group, const bool *in_place,
                                     const xf_accumulate *accumulate, xf_memplan *p, xf_error *err)
{
    memset(p, 0, sizeof *p);
    int nv = g->n_values;
    size_t n = nv > 0 ? (size_t)nv : 1;
    p->n_values = nv;
    p->offset = malloc(n * sizeof *p->offset);
    p->size = calloc(n, sizeof *p->size);
    p->first = malloc(n * sizeof *p->first);
    p->last = malloc(n * sizeof *p->last);
    p->alias = malloc(n * sizeof *p->alias);
    p->alias_offset = malloc(n * sizeof *p->alias_offset);
    p->n_nodes = g->n_nodes;
    p->skip = malloc((size_t)(g->n_nodes > 0 ? g->n_nodes : 1) * sizeof *p->skip);
    plan_item *items = malloc(n * sizeof *items);
    span *busy = malloc(n * sizeof *busy);
    bool *mark = malloc(n * sizeof *mark);
    xf_status st = XF_OK;
    if (!p->offset || !p->size || !p->first || !p->last || !p->alias || !p->alias_offset || !p->skip || !items ||
        !busy || !mark) {
        st = xf_error_set(err, XF_ERR_NOMEM, "out of memory planning %d values", nv);
        goto done;
    }
    plan_aliases(g, in_place, p);
    for (int i = 0; accumulate && i < g->n_nodes; i++)
        plan_accumulate(g, group, i, accumulate[i], mark, p);
    st = plan_lifetimes(g, group, p, err);
    if (st != XF_OK)
        goto done;

    int n_items = 0;
    for (int v = 0; v < nv; v++)
        if (p->first[v] >= 0) {
            items[n_items++] = (plan_item){v, p->size[v], p->first[v]};
            p->total_bytes += p->size[v];
        }
    qsort(items, (size_t)n_items, sizeof *items, by_size_desc);
    for (int i = 0; i < n_items; i++) {
        int v = items[i].value;
        size_t size = items[i].size;
        int n_busy = 0;
        for (int j = 0; j < i; j++) {
            int w = items[j].value;
            if (p->size[w] && p->first[w] <= p->last[v] && p->first[v] <= p->last[w])
                busy[n_busy++] = (span){(size_t)p->offset[w], (size_t)p->offset[w] + p->size[w]};
        }
        qsort(busy, (size_t)n_busy, sizeof *busy, by_begin);
        size_t end = 0, best = 0, best_gap = SIZE_MAX;
        for (int j = 0; j < n_busy; j++) {
            if (busy[j].begin >= end + size && busy[j].begin - end < best_gap) {
                best = end;
                best_gap = busy[j].begin - end;
            }
            if (busy[j].end > end)
                end = busy[j].end;
        }
        if (best_gap == SIZE_MAX)
            best = end;
        p->offset[v] = (int64_t)best;
        if (best + size > p->arena_bytes)
            p->arena_bytes = best + size;
    }
    st = plan_peak(g, p, err);
    for (int v = 0; v < nv; v++)
        if (p->alias[v] >= 0) {
            int r = p->alias[v];
            size_t bytes = xf_dtype_nbytes(g->values[v].dtype, xf_shape_numel(&g->values[v].shape));
            p->offset[v] = p->offset[r] + (int64_t)p->alias_offset[v];
            p->size[v] = (bytes + XF_PLAN_ALIGN - 1) & ~(size_t)(XF_PLAN_ALIGN - 1);
            p->first[v] = p->first[r];
            p->last[v] = p->last[r];
        }

done:
    free(items);
    free(busy);
    free(mark);
    if (st != XF_OK)
        xf_memplan_free(p);
    return st;
}
