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
    memset(p, 0, sizeof *p);
}

/* Sizes and lifetimes of the planned values (node outputs).  A node of a
 * group counts as running from the group's first node to its last. */
static xf_status plan_lifetimes(const xf_graph *g, const int *group, xf_memplan *p, xf_error *err)
{
    for (int v = 0; v < g->n_values; v++) {
        p->offset[v] = -1;
        p->first[v] = p->last[v] = -1;
    }
    for (int i = 0; i < g->n_nodes; i++)
        for (int k = 0; k < g->nodes[i].n_outputs; k++) {
            int v = g->nodes[i].outputs[k];
            if (v < 0)
                continue;
            const xf_value *val = &g->values[v];
            int64_t numel = xf_shape_numel(&val->shape);
            size_t es = xf_dtype_size(val->dtype);
            if (numel < 0)
                return xf_error_set(err, XF_ERR_UNSUPPORTED, "value '%s' has no static shape", val->name);
            if (es == 0 || val->dtype == XF_DT_STRING)
                return xf_error_set(err, XF_ERR_UNSUPPORTED, "value '%s' has type %s, which the runtime cannot hold",
                                    val->name, xf_dtype_name(val->dtype));
            if ((uint64_t)numel > (SIZE_MAX - XF_PLAN_ALIGN) / es)
                return xf_error_set(err, XF_ERR_LIMIT, "value '%s' is too large", val->name);
            size_t bytes = (size_t)numel * es;
            p->size[v] = (bytes + XF_PLAN_ALIGN - 1) & ~(size_t)(XF_PLAN_ALIGN - 1);
            p->first[v] = p->last[v] = group ? group[i] : i;
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
            int v = g->nodes[i].inputs[k];
            if (v >= 0 && p->first[v] >= 0 && p->last[v] < end)
                p->last[v] = end;
        }
    }
    free(group_end);
    for (int k = 0; k < g->n_outputs; k++)
        if (p->first[g->outputs[k]] >= 0)
            p->last[g->outputs[k]] = g->n_nodes;
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
    return xf_memplan_compute_grouped(g, NULL, p, err);
}

xf_status xf_memplan_compute_grouped(const xf_graph *g, const int *group, xf_memplan *p, xf_error *err)
{
    memset(p, 0, sizeof *p);
    int nv = g->n_values;
    size_t n = nv > 0 ? (size_t)nv : 1;
    p->n_values = nv;
    p->offset = malloc(n * sizeof *p->offset);
    p->size = calloc(n, sizeof *p->size);
    p->first = malloc(n * sizeof *p->first);
    p->last = malloc(n * sizeof *p->last);
    plan_item *items = malloc(n * sizeof *items);
    span *busy = malloc(n * sizeof *busy);
    xf_status st = XF_OK;
    if (!p->offset || !p->size || !p->first || !p->last || !items || !busy) {
        st = xf_error_set(err, XF_ERR_NOMEM, "out of memory planning %d values", nv);
        goto done;
    }
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

done:
    free(items);
    free(busy);
    if (st != XF_OK)
        xf_memplan_free(p);
    return st;
}
