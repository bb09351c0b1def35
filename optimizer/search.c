/* Cost-based backtracking search (TASO's algorithm).
 *
 * A priority queue holds candidate graphs by cost.  The cheapest is taken,
 * every match of every rule in it is rewritten, and each new graph (by
 * structural hash: a graph reached along two paths is explored once) whose
 * cost is below alpha times the best cost seen enters the queue.  alpha > 1
 * lets the search pass through slightly worse graphs to reach better ones.
 * It stops when the queue is empty, after `budget` expansions, or at the
 * time limit.  The queue is bounded: past queue_limit the costliest
 * candidate is dropped, which bounds memory on large models (each candidate
 * is a graph, though one sharing every weight with the others).
 *
 * Building graphs is most of the cost, so a rewrite is first worked out
 * beside the expanded graph: hashed from its hashes (rewrite.c), as most
 * rewrites lead to graphs seen before (A then B gives what B then A gave),
 * and priced from its cost, as most new graphs are too costly for alpha
 * or a full queue; the others are queued unbuilt (the graph they come from
 * and the match) and built only when taken from the queue (the rare
 * rewrite that cannot be priced so, see opt_rewrite_price, is built to be
 * costed).  A built graph's matches are worked out from its parent's
 * (below) rather than by matching every rule against all of it.  What
 * remains per rewrite is planning it and hashing what lies downstream of
 * the change. */
#include "opt_internal.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef struct step_rec {
    int parent; /* previous step, -1 at the start graph */
    int rule;
    double cost;
    char *where;
} step_rec;

/* The matches in one graph, shared by the candidates rewritten from it. */
typedef struct match_set {
    int refs;
    int n;
    xf_match *m;
} match_set;

/* A graph shared by the candidates still to be built from it. */
typedef struct graph_ref {
    int refs;
    xf_graph *g;
} graph_ref;

typedef struct cand {
    xf_graph *g; /* NULL until built (see lazy_from) */
    double cost;
    long seq; /* insertion order: equal costs pop first-in first-out */
    int step;
    /* The matches in the graph this one was rewritten from, and how it was
     * rewritten (NULL for the start graph). */
    match_set *from;
    rewrite_delta delta;
    /* A candidate priced before it was built is queued as the graph it
     * comes from and the match to rewrite there; it is built when popped
     * (most queued candidates never are).  hash: its structural hash. */
    graph_ref *lazy_from;
    xf_match lazy_m;
    uint64_t hash;
} cand;

typedef struct searcher {
    const xf_rule_set *rs;
    xf_cost_model *cost;
    const xf_search_options *opt;
    cand *heap;
    long n_heap;
    step_rec *steps;
    int n_steps, cap_steps;
    uint64_t *seen; /* open addressing; 0 = empty (hash 0 is stored as 1) */
    size_t cap_seen, n_seen;
    double best_cost, t0, last_progress;
    bool progress_shown;
    int progress_tty; /* -1: not asked yet */
    long seq;
    const cand *parent;
    graph_ref *parent_ref; /* the expanded graph, shared with its unbuilt candidates */
    rewrite_base base;     /* the expanded graph */
    match_set *matches;    /* in the expanded graph */
    bool *konst;           /* its values known before it runs (opt_compile_time_values) */
    match_reach reach;
    xf_search_result *res;
    xf_status st;
    xf_error *err;
} searcher;

static double wall_now(void *user)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void xf_search_options_default(xf_search_options *o)
{
    memset(o, 0, sizeof *o);
    o->alpha = 1.05;
    o->budget = 1000;
    o->time_limit = 10;
    o->queue_limit = 512;
}

/* ------------------------------------------------------------ seen set */

static bool seen_has(const searcher *s, uint64_t h)
{
    h = h ? h : 1;
    if (!s->cap_seen)
        return false;
    for (size_t j = (size_t)h & (s->cap_seen - 1); s->seen[j]; j = (j + 1) & (s->cap_seen - 1))
        if (s->seen[j] == h)
            return true;
    return false;
}

/* Adds h (known not to be there); false when out of memory. */
static bool seen_add(searcher *s, uint64_t h)
{
    h = h ? h : 1;
    if (2 * (s->n_seen + 1) > s->cap_seen) {
        size_t cap = s->cap_seen ? 2 * s->cap_seen : 4096;
        uint64_t *t = calloc(cap, sizeof *t);
        if (!t)
            return false;
        for (size_t i = 0; i < s->cap_seen; i++)
            if (s->seen[i]) {
                size_t j = (size_t)s->seen[i] & (cap - 1);
                while (t[j])
                    j = (j + 1) & (cap - 1);
                t[j] = s->seen[i];
            }
        free(s->seen);
        s->seen = t;
        s->cap_seen = cap;
    }
    size_t j = (size_t)h & (s->cap_seen - 1);
    while (s->seen[j])
        j = (j + 1) & (s->cap_seen - 1);
    s->seen[j] = h;
    s->n_seen++;
    return true;
}

/* ------------------------------------------------------------ matches
 *
 * Matching every rule against every graph expanded is most of the work, and
 * a rewrite changes a graph only locally.  A graph's matches are those of
 * the graph it was rewritten from that include no node the rewrite touched
 * (rewrite_delta's dirty nodes; renumbered), plus the matches that include
 * a dirty node.  Those lie within n_nodes-1 hops of it when the rule's
 * pattern is connected, so they are found by matching in the subgraph of
 * the nodes that close; rules with a pattern in pieces are matched over the
 * whole graph.  Sorted by rule and matched nodes, the list is the one
 * xf_match_each gives, in its order, which keeps the search's choices
 * among equal costs the same. */

static void match_set_release(match_set *ms)
{
    if (ms && --ms->refs == 0) {
        free(ms->m);
        free(ms);
    }
}

typedef struct match_vec {
    xf_match *m;
    int n, cap;
    bool nomem;
} match_vec;

static bool match_vec_push(match_vec *v, const xf_match *m)
{
    if (v->n == v->cap) {
        int cap = v->cap ? 2 * v->cap : 64;
        xf_match *t = realloc(v->m, sizeof *t * (size_t)cap);
        if (!t) {
            v->nomem = true;
            return false;
        }
        v->m = t;
        v->cap = cap;
    }
    v->m[v->n++] = *m;
    return true;
}

static bool collect_match(const xf_match *m, void *user) { return match_vec_push(user, m); }

static int find_root(int *up, int i)
{
    while (up[i] != i)
        i = up[i] = up[up[i]];
    return i;
}

xf_status opt_match_reach_make(const xf_rule_set *rs, match_reach *r, xf_error *err)
{
    r->radius = 0;
    r->connected = calloc((size_t)rs->n + 1, sizeof *r->connected);
    if (!r->connected)
        return xf_error_set(err, XF_ERR_NOMEM, "out of memory");
    for (int ri = 0; ri < rs->n; ri++) {
        const rule_plan *p = &rs->plans[ri];
        const xf_graph *pg = p->rule->pattern;
        /* Pattern nodes are linked through a node output one reads, or a
         * rule input both read (matched to one value of the graph). */
        int up[XF_MATCH_MAX_NODES], reader[XF_MATCH_MAX_INPUTS];
        for (int i = 0; i < p->n_nodes; i++)
            up[i] = i;
        for (int k = 0; k < XF_MATCH_MAX_INPUTS; k++)
            reader[k] = -1;
        for (int i = 0; i < p->n_nodes; i++)
            for (int k = 0; k < pg->nodes[i].n_inputs; k++) {
                const pin_ref *ref = &p->in[i][k];
                int other = ref->kind == PIN_NODE ? ref->idx : ref->kind == PIN_RULE_INPUT ? reader[ref->idx] : -1;
                if (ref->kind == PIN_RULE_INPUT && reader[ref->idx] < 0)
                    reader[ref->idx] = i;
                if (other >= 0)
                    up[find_root(up, i)] = find_root(up, other);
            }
        bool connected = true;
        for (int i = 1; i < p->n_nodes; i++)
            connected &= find_root(up, i) == find_root(up, 0);
        r->connected[ri] = connected;
        if (connected && p->n_nodes - 1 > r->radius)
            r->radius = p->n_nodes - 1;
    }
    return XF_OK;
}

void opt_match_reach_free(match_reach *r)
{
    free(r->connected);
    r->connected = NULL;
}

/* The subgraph of g's nodes marked in `in` (in g's order), with every value
 * they read or write.  A value something outside reads (or a graph output)
 * is an output of the subgraph, so that matching there sees the uses
 * outside as matching in g does.  to_node/to_value (n_nodes, n_values of
 * the subgraph) give the ids in g. */
static xf_status subgraph_of(const xf_graph *g, const graph_index *gi, const bool *in, xf_graph **out, int **to_node,
                             int **to_value, xf_error *err)
{
    xf_graph *sg = xf_graph_create("near");
    int *vmap = malloc(sizeof *vmap * (size_t)(g->n_values + 1));
    int *tn = malloc(sizeof *tn * (size_t)(g->n_nodes + 1));
    int *tv = malloc(sizeof *tv * (size_t)(g->n_values + 1));
    if (!sg || !vmap || !tn || !tv)
        goto nomem;
    for (int v = 0; v < g->n_values; v++)
        vmap[v] = -1;
    for (int i = 0; i < g->n_nodes; i++) {
        if (!in[i])
            continue;
        const xf_node *n = &g->nodes[i];
        int ids[80];
        if (n->n_inputs + n->n_outputs > 80) {
            xf_graph_free(sg);
            free(vmap);
            free(tn);
            free(tv);
            return xf_error_set(err, XF_ERR_UNSUPPORTED, "node '%s' has too many inputs and outputs", n->name);
        }
        for (int k = 0; k < n->n_inputs + n->n_outputs; k++) {
            int v = k < n->n_inputs ? n->inputs[k] : n->outputs[k - n->n_inputs];
            if (v >= 0 && vmap[v] < 0) {
                const xf_value *src = &g->values[v];
                int id = xf_graph_add_value(sg, src->name, src->dtype, &src->shape);
                if (id < 0)
                    goto nomem;
                sg->values[id].init = xf_tensor_retain(src->init);
                sg->values[id].is_input = src->is_input;
                vmap[v] = id;
                tv[id] = v;
            }
            ids[k] = v >= 0 ? vmap[v] : -1;
        }
        int ni = xf_graph_copy_node(sg, n, ids, ids + n->n_inputs);
        if (ni < 0)
            goto nomem;
        tn[ni] = i;
        for (int k = 0; k < n->n_outputs; k++) {
            int v = n->outputs[k];
            bool outside = v >= 0 && gi->is_output[v];
            for (int u = v >= 0 ? gi->use_start[v] : 0; v >= 0 && !outside && u < gi->use_start[v + 1]; u++)
                outside = !in[gi->use_node[u]];
            if (outside)
                xf_graph_add_output(sg, vmap[v]);
        }
    }
    free(vmap);
    *out = sg;
    *to_node = tn;
    *to_value = tv;
    return XF_OK;
nomem:
    xf_graph_free(sg);
    free(vmap);
    free(tn);
    free(tv);
    return xf_error_set(err, XF_ERR_NOMEM, "out of memory");
}

/* Adds to out the matches of connected rules in g that include a dirty node
 * (dist[i] == 0), found in the subgraph of the nodes within reach. */
static xf_status match_near(const xf_rule_set *rs, const match_reach *reach, const xf_graph *g, const graph_index *gi,
                            const rewrite_delta *d, match_vec *out, xf_error *err)
{
    int *dist = malloc(sizeof *dist * (size_t)(g->n_nodes + 1));
    int *queue = malloc(sizeof *queue * (size_t)(g->n_nodes + 1));
    bool *in = calloc((size_t)g->n_nodes + 1, sizeof *in);
    if (!dist || !queue || !in) {
        free(dist);
        free(queue);
        free(in);
        return xf_error_set(err, XF_ERR_NOMEM, "out of memory");
    }
    for (int i = 0; i < g->n_nodes; i++)
        dist[i] = -1;
    int head = 0, tail = 0;
    for (int k = 0; k < d->n_dirty; k++) {
        dist[d->dirty[k]] = 0;
        queue[tail++] = d->dirty[k];
    }
    /* Hops: to the producers of what a node reads, to the other readers of
     * those values, and to the readers of what it writes. */
    while (head < tail) {
        int i = queue[head++];
        in[i] = true;
        if (dist[i] == reach->radius)
            continue;
        const xf_node *n = &g->nodes[i];
        for (int k = 0; k < n->n_inputs + n->n_outputs; k++) {
            int v = k < n->n_inputs ? n->inputs[k] : n->outputs[k - n->n_inputs];
            if (v < 0)
                continue;
            int p = k < n->n_inputs ? g->values[v].producer : -1;
            if (p >= 0 && dist[p] < 0) {
                dist[p] = dist[i] + 1;
                queue[tail++] = p;
            }
            for (int u = gi->use_start[v]; u < gi->use_start[v + 1]; u++)
                if (dist[gi->use_node[u]] < 0) {
                    dist[gi->use_node[u]] = dist[i] + 1;
                    queue[tail++] = gi->use_node[u];
                }
        }
    }
    xf_graph *sg = NULL;
    int *to_node = NULL, *to_value = NULL;
    xf_status st = subgraph_of(g, gi, in, &sg, &to_node, &to_value, err);
    match_vec near = {0};
    if (st == XF_OK && (st = xf_match_each(rs, -1, sg, collect_match, &near, err)) == XF_OK && near.nomem)
        st = xf_error_set(err, XF_ERR_NOMEM, "out of memory");
    for (int k = 0; st == XF_OK && k < near.n; k++) {
        xf_match m = near.m[k];
        bool dirty = false;
        for (int i = 0; i < m.n_nodes; i++) {
            m.node[i] = to_node[m.node[i]];
            dirty |= dist[m.node[i]] == 0;
        }
        for (int i = 0; i < m.n_inputs; i++)
            m.input[i] = to_value[m.input[i]];
        if (dirty && reach->connected[m.rule] && !match_vec_push(out, &m))
            st = xf_error_set(err, XF_ERR_NOMEM, "out of memory");
    }
    free(near.m);
    xf_graph_free(sg);
    free(to_node);
    free(to_value);
    free(dist);
    free(queue);
    free(in);
    return st;
}

/* xf_match_each's order: by rule, then by matched nodes. */
static int match_order(const void *pa, const void *pb)
{
    const xf_match *a = pa, *b = pb;
    if (a->rule != b->rule)
        return a->rule < b->rule ? -1 : 1;
    for (int i = 0; i < a->n_nodes; i++)
        if (a->node[i] != b->node[i])
            return a->node[i] < b->node[i] ? -1 : 1;
    return 0;
}

xf_status opt_match_after_rewrite(const xf_rule_set *rs, const match_reach *reach, const xf_graph *g,
                                  const graph_index *gi, const xf_match *old, int n_old, const rewrite_delta *d,
                                  xf_match **out, int *n_out, xf_error *err)
{
    *out = NULL;
    *n_out = 0;
    match_vec v = {0};
    bool *dirty = calloc((size_t)g->n_nodes + 1, sizeof *dirty);
    if (!dirty)
        return xf_error_set(err, XF_ERR_NOMEM, "out of memory");
    for (int k = 0; k < d->n_dirty; k++)
        dirty[d->dirty[k]] = true;
    for (int k = 0; k < n_old && !v.nomem; k++) {
        xf_match m = old[k];
        bool kept = reach->connected[m.rule];
        for (int i = 0; i < m.n_nodes && kept; i++) {
            m.node[i] = d->node_map[m.node[i]];
            kept = m.node[i] >= 0 && !dirty[m.node[i]];
        }
        for (int i = 0; i < m.n_inputs && kept; i++)
            m.input[i] = d->value_map[m.input[i]];
        if (kept)
            match_vec_push(&v, &m);
    }
    free(dirty);
    xf_status st = v.nomem ? xf_error_set(err, XF_ERR_NOMEM, "out of memory") : XF_OK;
    if (st == XF_OK)
        st = match_near(rs, reach, g, gi, d, &v, err);
    for (int ri = 0; ri < rs->n && st == XF_OK; ri++)
        if (!reach->connected[ri] && (st = xf_match_each(rs, ri, g, collect_match, &v, err)) == XF_OK && v.nomem)
            st = xf_error_set(err, XF_ERR_NOMEM, "out of memory");
    if (st != XF_OK) {
        free(v.m);
        return st;
    }
    if (v.n > 1)
        qsort(v.m, (size_t)v.n, sizeof *v.m, match_order);
    *out = v.m;
    *n_out = v.n;
    return XF_OK;
}

/* The matches in c's graph (base: its index), from the matches in the
 * graph it came from when there is one. */
static xf_status matches_of(searcher *s, const cand *c, match_set **out)
{
    match_set *ms = calloc(1, sizeof *ms);
    if (!ms)
        return xf_error_set(s->err, XF_ERR_NOMEM, "out of memory");
    ms->refs = 1;
    xf_status st;
    if (c->from) {
        st = opt_match_after_rewrite(s->rs, &s->reach, c->g, &s->base.gi, c->from->m, c->from->n, &c->delta, &ms->m,
                                     &ms->n, s->err);
    } else {
        match_vec v = {0};
        st = xf_match_each(s->rs, -1, c->g, collect_match, &v, s->err);
        if (st == XF_OK && v.nomem)
            st = xf_error_set(s->err, XF_ERR_NOMEM, "out of memory");
        ms->m = v.m;
        ms->n = v.n;
    }
    if (st != XF_OK) {
        match_set_release(ms);
        return st;
    }
    *out = ms;
    return XF_OK;
}

static void graph_ref_release(graph_ref *r)
{
    if (r && --r->refs == 0) {
        xf_graph_free(r->g);
        free(r);
    }
}

/* What a candidate holds for expanding it, beyond its graph. */
static void cand_release_work(cand *c)
{
    match_set_release(c->from);
    c->from = NULL;
    opt_rewrite_delta_free(&c->delta);
    graph_ref_release(c->lazy_from);
    c->lazy_from = NULL;
}

static void cand_free(cand *c)
{
    cand_release_work(c);
    xf_graph_free(c->g);
    c->g = NULL;
}

/* ------------------------------------------------------------ heap */

static bool before(const cand *a, const cand *b) { return a->cost < b->cost || (a->cost == b->cost && a->seq < b->seq); }

static void sift_up(cand *h, long i)
{
    while (i > 0) {
        long p = (i - 1) / 2;
        if (!before(&h[i], &h[p]))
            break;
        cand t = h[i];
        h[i] = h[p];
        h[p] = t;
        i = p;
    }
}

static void sift_down(cand *h, long n, long i)
{
    for (;;) {
        long l = 2 * i + 1, r = l + 1, m = i;
        if (l < n && before(&h[l], &h[m]))
            m = l;
        if (r < n && before(&h[r], &h[m]))
            m = r;
        if (m == i)
            return;
        cand t = h[i];
        h[i] = h[m];
        h[m] = t;
        i = m;
    }
}

static cand heap_pop(searcher *s)
{
    cand top = s->heap[0];
    s->heap[0] = s->heap[--s->n_heap];
    sift_down(s->heap, s->n_heap, 0);
    return top;
}

/* Adds c; when the queue is full the costliest candidate (a leaf) goes. */
/* The costliest candidate of a full queue (a leaf). */
static long heap_worst(const searcher *s)
{
    long worst = s->n_heap / 2;
    for (long i = worst + 1; i < s->n_heap; i++)
        if (before(&s->heap[worst], &s->heap[i]))
            worst = i;
    return worst;
}

static void heap_push(searcher *s, cand c)
{
    if (s->n_heap == s->opt->queue_limit) {
        long worst = heap_worst(s);
        if (!before(&c, &s->heap[worst])) {
            cand_free(&c);
            return;
        }
        cand_free(&s->heap[worst]);
        s->heap[worst] = c;
        sift_up(s->heap, worst);
        return;
    }
    s->heap[s->n_heap] = c;
    sift_up(s->heap, s->n_heap++);
}

/* ------------------------------------------------------------ pricing
 *
 * Most new graphs are dropped as soon as they are costed: too costly for
 * alpha, or for a full queue.  A rewritten graph's cost is the expanded
 * graph's, less the removed nodes', plus the replacement's, each node
 * priced as xf_cost_graph prices it (opt_cost_node: free when it computes
 * from values known before the graph runs, which the replacement's inherit
 * from the rule inputs).  That equals what costing the whole rewritten
 * graph gives, up to rounding, unless a replaced value and its replacement
 * differ in being known before the run (see opt_rewrite_price).  A graph
 * that would be dropped with a margin far above rounding is not built. */

#define PRICE_MARGIN 1e-9 /* relative; rounding differs by ~1e-16 per node */

xf_status opt_rewrite_price(xf_cost_model *cm, int64_t opset, const rewrite_base *b, const bool *konst,
                            double base_cost, const rewrite_plan *rp, double *cost, bool *known, xf_error *err)
{
    const xf_graph *g = b->g, *side = rp->side;
    const xf_match *m = &rp->m;
    *known = false;
    bool side_konst_small[64], *side_konst = side_konst_small;
    if (side->n_values > 64 && !(side_konst = malloc(sizeof *side_konst * (size_t)side->n_values)))
        return xf_error_set(err, XF_ERR_NOMEM, "out of memory");
    /* The replacement's values known before the rewritten graph runs: the
     * rule inputs as in g, its constants, and what it computes from them. */
    for (int v = 0; v < side->n_values; v++)
        side_konst[v] = v < m->n_inputs ? konst[m->input[v]] : opt_is_const(side, v);
    opt_compile_time_propagate(side, side_konst);
    bool priceable = true;
    for (int j = 0; j < rp->p->n_outputs; j++)
        priceable &= side_konst[rp->rv[j]] == konst[rp->pv[j]];
    double added = 0, taken = 0, t = 0;
    xf_status st = XF_OK;
    for (int i = 0; priceable && i < side->n_nodes && st == XF_OK; i++) {
        st = opt_cost_node(cm, side, i, side_konst, opset, &t, err);
        added += t;
    }
    for (int i = 0; priceable && i < rp->p->n_nodes && st == XF_OK; i++) {
        if (!rp->gone[i])
            continue;
        st = opt_cost_node(cm, g, m->node[i], konst, opset, &t, err);
        taken += t;
    }
    if (side_konst != side_konst_small)
        free(side_konst);
    if (priceable && st == XF_OK) {
        *cost = base_cost - taken + added;
        *known = true;
    }
    return st;
}

/* Whether a graph priced at `early` (its exact cost up to rounding) is
 * dropped without being built: it cannot be the best so far, and alpha
 * turns it away, or the queue is full and it would at best displace a
 * candidate of the same cost (equal within the margin: the earlier one
 * stays). */
static bool dropped_when_costed(const searcher *s, double early)
{
    double lo = early * (1 - PRICE_MARGIN);
    if (lo < s->best_cost)
        return false;
    if (lo >= s->opt->alpha * s->best_cost)
        return true;
    return s->n_heap == s->opt->queue_limit && early * (1 + PRICE_MARGIN) >= s->heap[heap_worst(s)].cost;
}

/* ------------------------------------------------------------ expansion */

static int add_step(searcher *s, int parent, int rule, double cost, const xf_graph *g, const xf_match *m)
{
    if (s->n_steps == s->cap_steps) {
        int cap = s->cap_steps ? 2 * s->cap_steps : 1024;
        step_rec *t = realloc(s->steps, sizeof *t * (size_t)cap);
        if (!t)
            return -1;
        s->steps = t;
        s->cap_steps = cap;
    }
    char where[256];
    size_t len = 0;
    where[0] = 0;
    for (int i = 0; i < m->n_nodes && len + 1 < sizeof where; i++) {
        const char *name = g->nodes[m->node[i]].name;
        int w = snprintf(where + len, sizeof where - len, "%s%s", i ? ", " : "", name && name[0] ? name : "?");
        len += w > 0 ? (size_t)w : 0;
    }
    step_rec *r = &s->steps[s->n_steps];
    *r = (step_rec){parent, rule, cost, strdup(where)};
    if (!r->where)
        return -1;
    return s->n_steps++;
}

static double elapsed(const searcher *s)
{
    double (*now)(void *) = s->opt->now ? s->opt->now : wall_now;
    return now(s->opt->now_user) - s->t0;
}

static void show_progress(searcher *s, bool final)
{
    FILE *f = s->opt->progress;
    if (!f)
        return;
    /* A terminal gets one line rewritten in place; a log file a line every
     * 5 s instead. */
    if (s->progress_tty < 0)
        s->progress_tty = isatty(fileno(f));
    double t = elapsed(s);
    if (!final && (t < 1.0 || t - s->last_progress < (s->progress_tty ? 0.5 : 5.0)))
        return;
    if (final && !s->progress_shown)
        return;
    s->last_progress = t;
    s->progress_shown = true;
    fprintf(f, "%ssearch: %ld expanded, %ld candidates, %ld queued, best cost %.4g ms (from %.4g ms), %.1f s%s",
            s->progress_tty ? "\r" : "", s->res->expanded, s->res->generated, s->n_heap, s->best_cost * 1e3,
            s->res->cost_before * 1e3, t, final || !s->progress_tty ? "\n" : "");
    fflush(f);
}

/* A rewrite that does not apply here (shapes, a cycle) is counted and
 * skipped; running out of memory stops the search. */
static bool rewrite_failed(searcher *s, xf_status st, const xf_error *why)
{
    if (st == XF_ERR_NOMEM) {
        s->st = xf_error_set(s->err, st, "%s", why->msg);
        return false;
    }
    xf_log(XF_LOG_DEBUG, "rewrite not applied: %s", why->msg);
    s->res->dropped++;
    return true;
}

/* Queues a costed candidate made by m from the expanded graph, unless
 * alpha turns it away. */
static bool queue(searcher *s, const xf_match *m, cand nc)
{
    if (nc.lazy_from) {
        nc.lazy_from->refs++;
        s->matches->refs++;
        nc.from = s->matches;
    }
    if (nc.cost < s->best_cost)
        s->best_cost = nc.cost;
    if (nc.cost >= s->opt->alpha * s->best_cost) {
        cand_free(&nc);
        return true;
    }
    nc.step = add_step(s, s->parent->step, m->rule, nc.cost, s->parent->g, m);
    if (nc.step < 0) {
        s->st = xf_error_set(s->err, XF_ERR_NOMEM, "out of memory");
        cand_free(&nc);
        return false;
    }
    nc.seq = s->seq++;
    heap_push(s, nc);
    show_progress(s, false);
    return true;
}

/* Builds a candidate queued unbuilt: its graph, the delta from the graph
 * it came from and that graph's matches, and its exact cost. */
static xf_status build_queued(searcher *s, cand *c, xf_error *err)
{
    if (c->g || !c->lazy_from)
        return XF_OK;
    rewrite_base b;
    rewrite_plan rp;
    xf_status st = opt_rewrite_base_init(c->lazy_from->g, false, &b, err);
    if (st != XF_OK)
        return st;
    if ((st = opt_rewrite_plan(s->rs, &b, s->opt->opset, &c->lazy_m, &rp, err)) == XF_OK) {
        st = opt_rewrite_build(&b, &rp, &c->g, &c->delta, err);
        opt_rewrite_plan_free(&rp);
    }
    opt_rewrite_base_free(&b);
    if (st == XF_OK) {
        assert(xf_graph_hash(c->g) == c->hash);
        st = xf_cost_graph(s->cost, c->g, s->opt->opset, &c->cost, err);
    }
    return st;
}

static bool on_match(const xf_match *m, void *user)
{
    searcher *s = user;
    xf_graph *ng = NULL;
    xf_error why = {0};
    rewrite_plan rp;
    uint64_t h = 0;
    xf_status st = opt_rewrite_plan(s->rs, &s->base, s->opt->opset, m, &rp, &why);
    if (st != XF_OK)
        return rewrite_failed(s, st, &why);
    if ((st = opt_rewrite_hash(&s->base, &rp, &h, &why)) != XF_OK || seen_has(s, h)) {
        opt_rewrite_plan_free(&rp);
        return st == XF_OK || rewrite_failed(s, st, &why);
    }
    double early = 0;
    bool known = false;
    if ((st = opt_rewrite_price(s->cost, s->opt->opset, &s->base, s->konst, s->parent->cost, &rp, &early, &known,
                                s->err)) != XF_OK) {
        opt_rewrite_plan_free(&rp);
        s->st = st;
        return false;
    }
    if (known) {
        /* New: dropped, or queued unbuilt, as it would be once built and
         * costed. */
        opt_rewrite_plan_free(&rp);
        if (!seen_add(s, h)) {
            s->st = xf_error_set(s->err, XF_ERR_NOMEM, "out of memory");
            return false;
        }
        s->res->generated++;
        if (dropped_when_costed(s, early))
            return true;
        return queue(s, m, (cand){.cost = early, .lazy_from = s->parent_ref, .lazy_m = *m, .hash = h});
    }
    rewrite_delta delta = {0};
    st = opt_rewrite_build(&s->base, &rp, &ng, &delta, &why);
    opt_rewrite_plan_free(&rp);
    if (st != XF_OK)
        return rewrite_failed(s, st, &why);
    assert(xf_graph_hash(ng) == h);
    s->matches->refs++;
    cand nc = {ng, 0, 0, -1, s->matches, delta, .hash = h};
    if (!seen_add(s, h)) {
        cand_free(&nc);
        s->st = xf_error_set(s->err, XF_ERR_NOMEM, "out of memory");
        return false;
    }
    s->res->generated++;
    if ((st = xf_cost_graph(s->cost, ng, s->opt->opset, &nc.cost, s->err)) != XF_OK) {
        s->st = st;
        cand_free(&nc);
        return false;
    }
    return queue(s, m, nc);
}

/* Fills res->steps with the chain that ends at step `last`. */
static xf_status collect_steps(searcher *s, int last, xf_error *err)
{
    int n = 0;
    for (int k = last; k >= 0; k = s->steps[k].parent)
        n++;
    xf_search_result *res = s->res;
    res->steps = calloc((size_t)n + 1, sizeof *res->steps);
    if (!res->steps)
        return xf_error_set(err, XF_ERR_NOMEM, "out of memory");
    res->n_steps = n;
    for (int k = last, i = n - 1; k >= 0; k = s->steps[k].parent, i--) {
        res->steps[i] = (xf_search_step){s->steps[k].rule, s->steps[k].where, s->steps[k].cost};
        s->steps[k].where = NULL; /* moved */
    }
    return XF_OK;
}

xf_status xf_search(const xf_graph *g, const xf_rule_set *rs, xf_cost_model *cost, const xf_search_options *opt,
                    xf_search_result *res, xf_error *err)
{
    memset(res, 0, sizeof *res);
    xf_search_options defaults;
    xf_search_options_default(&defaults);
    if (!opt)
        opt = &defaults;
    searcher s = {.rs = rs, .cost = cost, .opt = opt, .res = res, .err = err, .progress_tty = -1};
    s.t0 = (opt->now ? opt->now : wall_now)(opt->now_user);
    s.heap = malloc(sizeof *s.heap * (size_t)(opt->queue_limit > 0 ? opt->queue_limit : 1));
    cand best = {xf_graph_clone(g), 0, 0, -1, NULL, {0}};
    xf_status st = XF_OK;
    if ((st = opt_match_reach_make(rs, &s.reach, err)) != XF_OK)
        goto done;
    if (!s.heap || !best.g || opt->queue_limit < 1) {
        st = xf_error_set(err, s.heap && best.g ? XF_ERR_INVALID : XF_ERR_NOMEM,
                          s.heap && best.g ? "the search queue needs room for one graph" : "out of memory");
        goto done;
    }
    if ((st = xf_cost_graph(cost, g, opt->opset, &best.cost, err)) != XF_OK)
        goto done;
    res->cost_before = s.best_cost = best.cost;
    if (!seen_add(&s, xf_graph_hash(g))) {
        st = xf_error_set(err, XF_ERR_NOMEM, "out of memory");
        goto done;
    }
    cand start = {xf_graph_clone(g), best.cost, s.seq++, -1, NULL, {0}};
    if (!start.g) {
        st = xf_error_set(err, XF_ERR_NOMEM, "out of memory");
        goto done;
    }
    heap_push(&s, start);
    while (s.n_heap > 0 && s.st == XF_OK) {
        if (res->expanded >= opt->budget) {
            res->stopped_budget = true;
            break;
        }
        if (opt->time_limit > 0 && elapsed(&s) >= opt->time_limit) {
            res->stopped_time = true;
            break;
        }
        cand c = heap_pop(&s);
        res->expanded++;
        s.parent = &c;
        graph_ref *pr = NULL;
        xf_status mst = build_queued(&s, &c, err);
        if (mst == XF_OK && !(pr = malloc(sizeof *pr)))
            mst = xf_error_set(err, XF_ERR_NOMEM, "out of memory");
        if (mst != XF_OK) {
            s.st = mst;
            cand_free(&c);
            break;
        }
        /* c's graph, shared with the candidates queued unbuilt from it */
        *pr = (graph_ref){1, c.g};
        s.parent_ref = pr;
        mst = opt_rewrite_base_init(c.g, true, &s.base, err);
        s.matches = NULL;
        bool *konst = malloc(sizeof *konst * (size_t)(c.g->n_values + 1));
        if (mst == XF_OK && !konst)
            mst = xf_error_set(err, XF_ERR_NOMEM, "out of memory");
        if (mst == XF_OK)
            opt_compile_time_values(c.g, konst);
        s.konst = konst;
        if (mst == XF_OK)
            mst = matches_of(&s, &c, &s.matches);
        for (int k = 0; mst == XF_OK && k < s.matches->n && s.st == XF_OK; k++)
            if (!on_match(&s.matches->m[k], &s))
                break;
        match_set_release(s.matches);
        opt_rewrite_base_free(&s.base);
        free(konst);
        s.konst = NULL;
        cand_release_work(&c);
        if (mst != XF_OK && s.st == XF_OK)
            s.st = mst;
        s.parent_ref = NULL;
        if (c.cost < best.cost) {
            cand_free(&best);
            best = c;
            /* the graph stays with best: taken over, or copied while
             * unbuilt candidates still need it */
            best.g = pr->refs == 1 ? pr->g : xf_graph_clone(pr->g);
            if (pr->refs == 1)
                pr->g = NULL;
            if (!best.g && s.st == XF_OK)
                s.st = xf_error_set(err, XF_ERR_NOMEM, "out of memory");
        }
        c.g = NULL;
        cand_free(&c);
        graph_ref_release(pr);
        show_progress(&s, false);
    }
    if ((st = s.st) != XF_OK)
        goto done;
    /* The cheapest graph still queued may beat every expanded one. */
    if (s.n_heap > 0 && s.heap[0].cost < best.cost) {
        cand top = heap_pop(&s);
        if ((st = build_queued(&s, &top, err)) != XF_OK) {
            cand_free(&top);
            goto done;
        }
        cand_free(&best);
        cand_release_work(&top);
        best = top;
    }
    if ((st = collect_steps(&s, best.step, err)) != XF_OK)
        goto done;
    res->best = best.g;
    best.g = NULL;
    res->cost_after = best.cost;
done:
    res->seconds = elapsed(&s);
    show_progress(&s, true);
    cand_free(&best);
    while (s.n_heap > 0)
        cand_free(&s.heap[--s.n_heap]);
    free(s.heap);
    opt_match_reach_free(&s.reach);
    free(s.seen);
    for (int k = 0; k < s.n_steps; k++)
        free(s.steps[k].where);
    free(s.steps);
    return st;
}

void xf_search_result_free(xf_search_result *res)
{
    xf_graph_free(res->best);
    for (int i = 0; i < res->n_steps; i++)
        free(res->steps[i].where);
    free(res->steps);
    memset(res, 0, sizeof *res);
}
