/* Constants that depend on the sizes of symbolic dims.
 *
 * Canonicalization folds shape computations (Shape -> Gather -> Concat ->
 * Reshape) at the sizes a graph uses.  The same graph canonicalized at
 * other sizes tells which folded constants depend on them: those whose data
 * differ.  xf_sizes_generalize writes the ones it can without a size (a
 * Reshape's shape entries that copy an input dim become 0 and the one left
 * becomes -1; an Expand's entries that keep an input dim become 1), and
 * names the others; xf_sizes_recompute puts back, for those, the
 * computation that produced them in the graph as loaded. */
#include "xf_core.h"

#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ name lookup */

typedef struct name_entry {
    const char *name; /* the graph's own string */
    int id;
} name_entry;

/* The values of a graph sorted by name (those it had when built). */
typedef struct name_map {
    int n;
    name_entry *e;
} name_map;

static int by_name(const void *a, const void *b)
{
    return strcmp(((const name_entry *)a)->name, ((const name_entry *)b)->name);
}

static bool name_map_build(name_map *m, const xf_graph *g)
{
    m->n = g->n_values;
    m->e = malloc(sizeof *m->e * (size_t)(g->n_values > 0 ? g->n_values : 1));
    if (!m->e)
        return false;
    for (int v = 0; v < g->n_values; v++)
        m->e[v] = (name_entry){g->values[v].name, v};
    qsort(m->e, (size_t)m->n, sizeof *m->e, by_name);
    return true;
}

static int name_map_find(const name_map *m, const char *name)
{
    name_entry key = {name, -1};
    const name_entry *hit = m->n > 0 ? bsearch(&key, m->e, (size_t)m->n, sizeof *m->e, by_name) : NULL;
    return hit ? hit->id : -1;
}

/* ------------------------------------------------------------ name lists */

void xf_names_free(xf_names *l)
{
    for (int i = 0; i < l->n; i++)
        free(l->names[i]);
    free(l->names);
    *l = (xf_names){0};
}

static bool names_add(xf_names *l, const char *name)
{
    char **grown = realloc(l->names, sizeof *grown * (size_t)(l->n + 1));
    if (!grown)
        return false;
    l->names = grown;
    if (!(l->names[l->n] = strdup(name)))
        return false;
    l->n++;
    return true;
}

/* ------------------------------------------------------------ generalizing */

static bool same_tensor(const xf_tensor *a, const xf_tensor *b)
{
    if (a == b)
        return true;
    if (!a || !b || a->dtype != b->dtype || !xf_shape_equal(&a->shape, &b->shape) || a->nbytes != b->nbytes ||
        a->strings || b->strings)
        return false;
    return a->nbytes == 0 || memcmp(a->data, b->data, a->nbytes) == 0;
}

/* One size's view of a Reshape or Expand: its shape parameter, its data
 * input's shape and its output's shape. */
typedef struct size_view {
    int64_t vals[XF_MAX_DIMS];
    int len;
    xf_shape in, out;
} size_view;

/* The view of node (a Reshape or Expand reading a constant shape) in graph
 * h, found by the name of its output in g; false when h has no such node. */
static bool view_of(const xf_graph *h, const name_map *hm, const xf_graph *g, const xf_node *n, size_view *s)
{
    int out = n->outputs[0] >= 0 ? name_map_find(hm, g->values[n->outputs[0]].name) : -1;
    int p = out >= 0 ? h->values[out].producer : -1;
    if (p < 0 || h->nodes[p].op != n->op || h->nodes[p].n_inputs < 2 || h->nodes[p].inputs[0] < 0)
        return false;
    const xf_node *hn = &h->nodes[p];
    const xf_tensor *t = hn->inputs[1] >= 0 && !h->values[hn->inputs[1]].is_input ? h->values[hn->inputs[1]].init
                                                                                 : NULL;
    if (!t || !t->data || t->shape.ndim != 1 || t->shape.dims[0] > XF_MAX_DIMS)
        return false;
    s->len = (int)t->shape.dims[0];
    for (int j = 0; j < s->len; j++)
        s->vals[j] = xf_tensor_get_i64(t, j);
    s->in = h->values[hn->inputs[0]].shape;
    s->out = h->values[out].shape;
    return s->in.ndim >= 0 && s->out.ndim >= 0;
}

/* The output shape res gives a Reshape of in; false when it is no shape. */
static bool reshape_result(const int64_t *res, int len, const xf_shape *in, bool allowzero, xf_shape *out)
{
    int64_t known = 1, total = xf_shape_numel(in);
    int infer = -1;
    out->ndim = len;
    for (int j = 0; j < len; j++) {
        int64_t d = res[j];
        if (d == 0 && !allowzero) {
            if (j >= in->ndim)
                return false;
            d = in->dims[j];
        }
        if (d == -1) {
            infer = j;
            continue;
        }
        if (d < 0)
            return false;
        out->dims[j] = d;
        known *= d;
    }
    if (infer >= 0) {
        if (known == 0 || total % known != 0)
            return false;
        out->dims[infer] = total / known;
    }
    return true;
}

/* The output shape res gives an Expand of in (bidirectional broadcast). */
static bool expand_result(const int64_t *res, int len, const xf_shape *in, xf_shape *out)
{
    int r = len > in->ndim ? len : in->ndim;
    out->ndim = r;
    for (int j = 0; j < r; j++) {
        int a = j - (r - in->ndim), b = j - (r - len);
        int64_t x = a >= 0 ? in->dims[a] : 1, y = b >= 0 ? res[b] : 1;
        if (x != y && x != 1 && y != 1)
            return false;
        out->dims[j] = x == 1 ? y : x;
    }
    return true;
}

/* Writes the shape parameter of a Reshape (allowzero or not) or Expand
 * without the sizes that vary between the views s[0..n): entries equal in
 * all keep their value; the others copy the input's dim (Reshape: 0,
 * Expand: 1) where they equal it in every view, else one of them may be
 * -1 (Reshape).  True when res gives every view's output shape. */
static bool generalize_shape(xf_op op, bool allowzero, const size_view *s, int n, int64_t *res)
{
    int len = s[0].len, infer = -1;
    for (int j = 0; j < len; j++) {
        res[j] = s[0].vals[j];
        bool varies = false, copies = true;
        for (int k = 0; k < n; k++) {
            if (s[k].len != len)
                return false;
            varies |= s[k].vals[j] != s[0].vals[j];
            int d = op == XF_OP_RESHAPE ? j : j - (len - s[k].in.ndim);
            copies &= d >= 0 && d < s[k].in.ndim && s[k].in.dims[d] == s[k].vals[j];
        }
        if (!varies)
            continue;
        if (copies && (op == XF_OP_EXPAND || !allowzero)) {
            res[j] = op == XF_OP_RESHAPE ? 0 : 1;
        } else if (op == XF_OP_RESHAPE && infer < 0) {
            infer = j;
            res[j] = -1;
        } else {
            return false;
        }
    }
    for (int j = 0; infer >= 0 && j < len; j++)
        if (j != infer && res[j] == -1)
            return false;
    for (int k = 0; k < n; k++) {
        xf_shape out;
        bool ok = op == XF_OP_RESHAPE ? reshape_result(res, len, &s[k].in, allowzero, &out)
                                      : expand_result(res, len, &s[k].in, &out);
        if (!ok || !xf_shape_equal(&out, &s[k].out))
            return false;
    }
    return true;
}

/* Whether constant v of g, which varies between the sizes, can be written
 * without them: every use is the shape of a Reshape or Expand, and all
 * uses agree on what to write.  Then *res holds it (len entries). */
static bool generalize_value(const xf_graph *g, int v, const xf_graph *const *at, const name_map *maps, int n_at,
                             int64_t *res, int *len)
{
    int uses = 0;
    for (int k = 0; k < g->n_outputs; k++)
        if (g->outputs[k] == v)
            return false;
    for (int i = 0; i < g->n_nodes; i++) {
        const xf_node *n = &g->nodes[i];
        for (int k = 0; k < n->n_inputs; k++) {
            if (n->inputs[k] != v)
                continue;
            if ((n->op != XF_OP_RESHAPE && n->op != XF_OP_EXPAND) || k != 1 || n->outputs[0] < 0)
                return false;
            size_view s[1 + XF_SIZES_MAX];
            if (n_at > XF_SIZES_MAX || !view_of(g, &maps[0], g, n, &s[0]))
                return false;
            for (int a = 0; a < n_at; a++)
                if (!view_of(at[a], &maps[1 + a], g, n, &s[1 + a]))
                    return false;
            int64_t mine[XF_MAX_DIMS];
            if (!generalize_shape(n->op, n->attrs.allowzero != 0, s, 1 + n_at, mine))
                return false;
            if (uses++ == 0) {
                *len = s[0].len;
                memcpy(res, mine, sizeof mine[0] * (size_t)*len);
            } else if (*len != s[0].len || memcmp(res, mine, sizeof mine[0] * (size_t)*len) != 0) {
                return false;
            }
        }
    }
    return uses > 0;
}

xf_status xf_sizes_generalize(xf_graph *g, const xf_graph *const *at, int n_at, xf_names *rest, int *n_written,
                              xf_error *err)
{
    *n_written = 0;
    name_map maps[1 + XF_SIZES_MAX] = {{0}};
    bool ok = n_at <= XF_SIZES_MAX && name_map_build(&maps[0], g);
    for (int a = 0; ok && a < n_at; a++)
        ok = name_map_build(&maps[1 + a], at[a]);
    xf_status st = ok ? XF_OK
                      : n_at > XF_SIZES_MAX ? xf_error_set(err, XF_ERR_INVALID, "at most %d other sizes", XF_SIZES_MAX)
                                            : xf_error_set(err, XF_ERR_NOMEM, "out of memory");
    for (int v = 0; st == XF_OK && v < g->n_values; v++) {
        xf_value *val = &g->values[v];
        if (!val->init || val->is_input)
            continue;
        bool varies = false;
        for (int a = 0; a < n_at && !varies; a++) {
            int u = name_map_find(&maps[1 + a], val->name);
            varies = u < 0 || at[a]->values[u].is_input || !same_tensor(val->init, at[a]->values[u].init);
        }
        if (!varies)
            continue;
        int64_t res[XF_MAX_DIMS];
        int len = 0;
        if (generalize_value(g, v, at, maps, n_at, res, &len)) {
            xf_shape s = {.ndim = 1, .dims = {len}};
            xf_tensor *t = xf_tensor_create(XF_DT_INT64, &s);
            if (!t) {
                st = xf_error_set(err, XF_ERR_NOMEM, "out of memory");
                break;
            }
            memcpy(t->data, res, sizeof res[0] * (size_t)len);
            xf_tensor_release(val->init);
            val->init = t;
            ++*n_written;
        } else if (!names_add(rest, val->name)) {
            st = xf_error_set(err, XF_ERR_NOMEM, "out of memory");
        }
    }
    for (int a = 0; a < 1 + n_at; a++)
        free(maps[a].e);
    return st;
}

/* ------------------------------------------------------------ recomputing */

typedef struct recompute_ctx {
    xf_graph *g;
    const xf_graph *src;
    name_map gm, sm;
    int *made;     /* per src value: its id in g once materialized, else -1 */
    bool *target;  /* per src value: a constant of g to compute again */
    int start;     /* the target being materialized */
    xf_error *err;
} recompute_ctx;

/* The id in g of src value u, copying the nodes that compute it where g has
 * it only as a size-bound constant (or not at all).  Those are computations
 * on constants and shapes: reaching a graph input through data would copy
 * the model itself, and is refused. */
static xf_status materialize(recompute_ctx *c, int u, int depth, int *out)
{
    const xf_value *sv = &c->src->values[u];
    if (c->made[u] >= 0) {
        *out = c->made[u];
        return XF_OK;
    }
    if (depth > 4096)
        return xf_error_set(c->err, XF_ERR_UNSUPPORTED, "the computation of '%s' is too deep", sv->name);
    int v = name_map_find(&c->gm, sv->name);
    if (v >= 0 && !c->target[u] && !c->g->values[v].is_input) {
        *out = c->made[u] = v; /* in g already: an activation, or a constant equal at every size */
        return XF_OK;
    }
    if (sv->producer < 0) {
        if (!sv->init || sv->is_input)
            return xf_error_set(c->err, XF_ERR_UNSUPPORTED, "it would compute '%s' again from '%s'",
                                c->src->values[c->start].name, sv->name);
        int id = xf_graph_add_initializer(c->g, sv->name, sv->init);
        if (id < 0)
            return xf_error_set(c->err, XF_ERR_NOMEM, "out of memory");
        *out = c->made[u] = id;
        return XF_OK;
    }
    const xf_node *n = &c->src->nodes[sv->producer];
    int *ids = malloc(sizeof *ids * (size_t)(n->n_inputs + n->n_outputs + 1));
    if (!ids)
        return xf_error_set(c->err, XF_ERR_NOMEM, "out of memory");
    xf_status st = XF_OK;
    for (int k = 0; k < n->n_inputs && st == XF_OK; k++) {
        ids[k] = -1;
        if (n->inputs[k] < 0)
            continue;
        /* a Shape or Size reads only the shape: any value of g that has
         * the name will do, even a graph input */
        int u_in = n->inputs[k];
        bool shape_only = xf_op_get_info(n->op)->flags & XF_OPF_SHAPE_ONLY;
        ids[k] = shape_only && c->made[u_in] < 0 ? name_map_find(&c->gm, c->src->values[u_in].name) : -1;
        if (ids[k] < 0)
            st = materialize(c, u_in, depth + 1, &ids[k]);
    }
    for (int k = 0; k < n->n_outputs && st == XF_OK; k++) {
        int w = n->outputs[k], *id = &ids[n->n_inputs + k];
        *id = -1;
        if (w < 0)
            continue;
        const xf_value *wv = &c->src->values[w];
        int existing = name_map_find(&c->gm, wv->name);
        if (existing >= 0 && c->target[w]) {
            xf_tensor_release(c->g->values[existing].init); /* computed again from here on */
            c->g->values[existing].init = NULL;
            *id = existing;
        } else {
            /* a name g holds already (a constant equal at every size) gets a
             * twin nobody reads */
            *id = xf_graph_add_value(c->g, existing >= 0 ? NULL : wv->name, wv->dtype, NULL);
            if (*id < 0)
                st = xf_error_set(c->err, XF_ERR_NOMEM, "out of memory");
        }
        c->made[w] = *id;
    }
    if (st == XF_OK && xf_graph_copy_node(c->g, n, ids, ids + n->n_inputs) < 0)
        st = xf_error_set(c->err, XF_ERR_NOMEM, "out of memory");
    if (st == XF_OK)
        *out = c->made[u];
    free(ids);
    return st;
}

xf_status xf_sizes_recompute(xf_graph *g, const xf_graph *src, const xf_names *names, int *n_done, xf_error *err)
{
    *n_done = 0;
    recompute_ctx c = {.g = g, .src = src, .err = err};
    c.made = malloc(sizeof *c.made * (size_t)(src->n_values + 1));
    c.target = calloc((size_t)src->n_values + 1, sizeof *c.target);
    xf_status st = c.made && c.target && name_map_build(&c.sm, src) ? XF_OK
                                                                     : xf_error_set(err, XF_ERR_NOMEM, "out of memory");
    for (int u = 0; st == XF_OK && u < src->n_values; u++)
        c.made[u] = -1;
    /* targets: the named values g still holds as constants */
    if (st == XF_OK && !name_map_build(&c.gm, g))
        st = xf_error_set(err, XF_ERR_NOMEM, "out of memory");
    for (int i = 0; st == XF_OK && i < names->n; i++) {
        int u = name_map_find(&c.sm, names->names[i]), v = name_map_find(&c.gm, names->names[i]);
        if (u >= 0 && v >= 0 && g->values[v].init && src->values[u].producer >= 0)
            c.target[u] = true;
    }
    for (int u = 0; st == XF_OK && u < src->n_values; u++) {
        if (!c.target[u] || c.made[u] >= 0)
            continue;
        int id;
        /* g grows as nodes are copied: the lookup sees only what it had */
        c.start = u;
        st = materialize(&c, u, 0, &id);
        ++*n_done;
    }
    free(c.gm.e);
    free(c.sm.e);
    free(c.made);
    free(c.target);
    return st == XF_OK ? xf_graph_toposort(g, err) : st;
}
