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
 * Most rewrites of a graph lead to graphs seen before (applying A then B
 * gives what B then A gave), so a rewrite is hashed from the expanded
 * graph's hashes before it is built (rewrite.c), and only a new graph is
 * built and costed. */
#include "opt_internal.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct step_rec {
    int parent; /* previous step, -1 at the start graph */
    int rule;
    double cost;
    char *where;
} step_rec;

typedef struct cand {
    xf_graph *g;
    double cost;
    long seq; /* insertion order: equal costs pop first-in first-out */
    int step;
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
    long seq;
    const cand *parent;
    rewrite_base base; /* the expanded graph */
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
static void heap_push(searcher *s, cand c)
{
    if (s->n_heap == s->opt->queue_limit) {
        long worst = s->n_heap / 2;
        for (long i = worst + 1; i < s->n_heap; i++)
            if (before(&s->heap[worst], &s->heap[i]))
                worst = i;
        if (!before(&c, &s->heap[worst])) {
            xf_graph_free(c.g);
            return;
        }
        xf_graph_free(s->heap[worst].g);
        s->heap[worst] = c;
        sift_up(s->heap, worst);
        return;
    }
    s->heap[s->n_heap] = c;
    sift_up(s->heap, s->n_heap++);
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
    double t = elapsed(s);
    if (!final && (t < 1.0 || t - s->last_progress < 0.5))
        return;
    if (final && !s->progress_shown)
        return;
    s->last_progress = t;
    s->progress_shown = true;
    fprintf(f, "\rsearch: %ld expanded, %ld candidates, %ld queued, best cost %.4g ms (from %.4g ms), %.1f s%s",
            s->res->expanded, s->res->generated, s->n_heap, s->best_cost * 1e3, s->res->cost_before * 1e3, t,
            final ? "\n" : "");
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
    if ((st = opt_rewrite_hash(&s->base, &rp, &h, &why)) == XF_OK && !seen_has(s, h))
        st = opt_rewrite_build(&s->base, &rp, &ng, &why);
    opt_rewrite_plan_free(&rp);
    if (st != XF_OK)
        return rewrite_failed(s, st, &why);
    if (!ng)
        return true; /* seen before */
    assert(xf_graph_hash(ng) == h);
    if (!seen_add(s, h)) {
        xf_graph_free(ng);
        s->st = xf_error_set(s->err, XF_ERR_NOMEM, "out of memory");
        return false;
    }
    s->res->generated++;
    double c = 0;
    if ((st = xf_cost_graph(s->cost, ng, s->opt->opset, &c, s->err)) != XF_OK) {
        s->st = st;
        xf_graph_free(ng);
        return false;
    }
    if (c < s->best_cost)
        s->best_cost = c;
    if (c >= s->opt->alpha * s->best_cost) {
        xf_graph_free(ng);
        return true;
    }
    int step = add_step(s, s->parent->step, m->rule, c, s->parent->g, m);
    if (step < 0) {
        s->st = xf_error_set(s->err, XF_ERR_NOMEM, "out of memory");
        xf_graph_free(ng);
        return false;
    }
    heap_push(s, (cand){ng, c, s->seq++, step});
    show_progress(s, false);
    return true;
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
    searcher s = {.rs = rs, .cost = cost, .opt = opt, .res = res, .err = err};
    s.t0 = (opt->now ? opt->now : wall_now)(opt->now_user);
    s.heap = malloc(sizeof *s.heap * (size_t)(opt->queue_limit > 0 ? opt->queue_limit : 1));
    cand best = {xf_graph_clone(g), 0, 0, -1};
    xf_status st = XF_OK;
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
    cand start = {xf_graph_clone(g), best.cost, s.seq++, -1};
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
        xf_status mst = opt_rewrite_base_init(c.g, true, &s.base, err);
        if (mst == XF_OK)
            mst = xf_match_each(rs, -1, c.g, on_match, &s, err);
        opt_rewrite_base_free(&s.base);
        if (mst != XF_OK && s.st == XF_OK)
            s.st = mst;
        if (c.cost < best.cost) {
            xf_graph_free(best.g);
            best = c;
        } else {
            xf_graph_free(c.g);
        }
        show_progress(&s, false);
    }
    if ((st = s.st) != XF_OK)
        goto done;
    /* The cheapest graph still queued may beat every expanded one. */
    if (s.n_heap > 0 && s.heap[0].cost < best.cost) {
        cand top = heap_pop(&s);
        xf_graph_free(best.g);
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
    xf_graph_free(best.g);
    while (s.n_heap > 0)
        xf_graph_free(s.heap[--s.n_heap].g);
    free(s.heap);
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
