/* Graph construction, cloning, ordering and compaction. */
#include "xf_core.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *dup_str(const char *s) { return s ? strdup(s) : NULL; }

/* Grows *arr (of elem bytes each) so that it holds at least need elements. */
static bool grow(void **arr, int *cap, int need, size_t elem)
{
    if (need <= *cap)
        return true;
    int ncap = *cap ? *cap : 16;
    while (ncap < need) {
        if (ncap > (1 << 29))
            return false;
        ncap *= 2;
    }
    void *p = realloc(*arr, (size_t)ncap * elem);
    if (!p)
        return false;
    *arr = p;
    *cap = ncap;
    return true;
}

/* ------------------------------------------------------------ opaque */

xf_opaque *xf_opaque_create(const char *op_type, const char *domain, const void *proto, size_t len)
{
    xf_opaque *o = calloc(1, sizeof *o);
    if (!o)
        return NULL;
    o->refcount = 1;
    o->op_type = dup_str(op_type ? op_type : "");
    o->domain = dup_str(domain ? domain : "");
    o->proto_len = len;
    o->proto = len ? malloc(len) : NULL;
    if (!o->op_type || !o->domain || (len && !o->proto)) {
        xf_opaque_release(o);
        return NULL;
    }
    if (len)
        memcpy(o->proto, proto, len);
    return o;
}

xf_opaque *xf_opaque_retain(xf_opaque *o)
{
    if (o)
        o->refcount++;
    return o;
}

void xf_opaque_release(xf_opaque *o)
{
    if (!o || --o->refcount > 0)
        return;
    free(o->op_type);
    free(o->domain);
    free(o->proto);
    for (int i = 0; i < o->n_bodies; i++) {
        free(o->bodies[i].attr);
        xf_graph_free(o->bodies[i].graph);
    }
    free(o->bodies);
    for (int i = 0; i < o->n_ints; i++) {
        free(o->ints[i].attr);
        free(o->ints[i].v);
    }
    free(o->ints);
    for (int i = 0; i < o->n_reals; i++) {
        free(o->reals[i].attr);
        free(o->reals[i].v);
    }
    free(o->reals);
    for (int i = 0; i < o->n_strings; i++) {
        for (int k = 0; k < o->strings[i].n; k++)
            free(o->strings[i].v[k]);
        free(o->strings[i].attr);
        free(o->strings[i].v);
    }
    free(o->strings);
    free(o);
}

bool xf_opaque_add_body(xf_opaque *o, const char *attr, int n_formal, xf_graph *graph)
{
    xf_opaque_body *grown = realloc(o->bodies, sizeof *grown * (size_t)(o->n_bodies + 1));
    char *name = dup_str(attr ? attr : "");
    if (grown)
        o->bodies = grown;
    if (!grown || !name) {
        free(name);
        xf_graph_free(graph);
        return false;
    }
    o->bodies[o->n_bodies++] = (xf_opaque_body){name, n_formal, graph};
    return true;
}

const xf_opaque_body *xf_opaque_find_body(const xf_opaque *o, const char *attr)
{
    for (int i = 0; o && i < o->n_bodies; i++)
        if (strcmp(o->bodies[i].attr, attr) == 0)
            return &o->bodies[i];
    return NULL;
}

bool xf_opaque_add_ints(xf_opaque *o, const char *attr, const int64_t *v, int n)
{
    xf_opaque_ints *grown = realloc(o->ints, sizeof *grown * (size_t)(o->n_ints + 1));
    char *name = dup_str(attr ? attr : "");
    int64_t *copy = malloc(sizeof *copy * (size_t)(n + 1));
    if (grown)
        o->ints = grown;
    if (!grown || !name || !copy) {
        free(name);
        free(copy);
        return false;
    }
    if (n > 0)
        memcpy(copy, v, sizeof *copy * (size_t)n);
    o->ints[o->n_ints++] = (xf_opaque_ints){name, n, copy, XF_DT_UNDEFINED};
    return true;
}

const xf_opaque_ints *xf_opaque_find_ints(const xf_opaque *o, const char *attr)
{
    for (int i = 0; o && i < o->n_ints; i++)
        if (strcmp(o->ints[i].attr, attr) == 0)
            return &o->ints[i];
    return NULL;
}

bool xf_opaque_add_reals(xf_opaque *o, const char *attr, const double *v, int n)
{
    xf_opaque_reals *grown = realloc(o->reals, sizeof *grown * (size_t)(o->n_reals + 1));
    char *name = dup_str(attr ? attr : "");
    double *copy = malloc(sizeof *copy * (size_t)(n + 1));
    if (grown)
        o->reals = grown;
    if (!grown || !name || !copy) {
        free(name);
        free(copy);
        return false;
    }
    if (n > 0)
        memcpy(copy, v, sizeof *copy * (size_t)n);
    o->reals[o->n_reals++] = (xf_opaque_reals){name, n, copy, XF_DT_UNDEFINED};
    return true;
}

const xf_opaque_reals *xf_opaque_find_reals(const xf_opaque *o, const char *attr)
{
    for (int i = 0; o && i < o->n_reals; i++)
        if (strcmp(o->reals[i].attr, attr) == 0)
            return &o->reals[i];
    return NULL;
}

bool xf_opaque_add_strings(xf_opaque *o, const char *attr, const char *const *v, const size_t *lens, int n)
{
    xf_opaque_strings *grown = realloc(o->strings, sizeof *grown * (size_t)(o->n_strings + 1));
    if (grown)
        o->strings = grown;
    xf_opaque_strings s = {dup_str(attr ? attr : ""), 0, calloc((size_t)n + 1, sizeof(char *))};
    bool ok = grown && s.attr && s.v;
    for (; ok && s.n < n; s.n++) {
        if (!(s.v[s.n] = malloc(lens[s.n] + 1)))
            ok = false;
        else {
            if (lens[s.n]) /* an empty string may come without bytes */
                memcpy(s.v[s.n], v[s.n], lens[s.n]);
            s.v[s.n][lens[s.n]] = '\0';
        }
    }
    if (!ok) {
        for (int k = 0; k < n && s.v; k++)
            free(s.v[k]);
        free(s.v);
        free(s.attr);
        return false;
    }
    o->strings[o->n_strings++] = s;
    return true;
}

const xf_opaque_strings *xf_opaque_find_strings(const xf_opaque *o, const char *attr)
{
    for (int i = 0; o && i < o->n_strings; i++)
        if (strcmp(o->strings[i].attr, attr) == 0)
            return &o->strings[i];
    return NULL;
}

/* ------------------------------------------------------------ graph */

xf_graph *xf_graph_create(const char *name)
{
    xf_graph *g = calloc(1, sizeof *g);
    if (!g)
        return NULL;
    g->name = dup_str(name ? name : "");
    if (!g->name) {
        free(g);
        return NULL;
    }
    return g;
}

static void node_clear(xf_node *n)
{
    free(n->name);
    free(n->inputs);
    free(n->outputs);
    xf_opaque_release(n->opaque);
    xf_tensor_release(n->attrs.value);
}

void xf_graph_free(xf_graph *g)
{
    if (!g)
        return;
    for (int i = 0; i < g->n_values; i++) {
        free(g->values[i].name);
        xf_tensor_release(g->values[i].init);
    }
    for (int i = 0; i < g->n_nodes; i++)
        node_clear(&g->nodes[i]);
    free(g->values);
    free(g->nodes);
    free(g->inputs);
    free(g->outputs);
    free(g->name);
    free(g);
}

static int *dup_ints(const int *src, int n)
{
    int *p = malloc(sizeof(int) * (size_t)(n > 0 ? n : 1));
    if (p && n > 0)
        memcpy(p, src, sizeof(int) * (size_t)n);
    return p;
}

xf_graph *xf_graph_clone(const xf_graph *g) { return xf_graph_clone_with_room(g, 0, 0); }

xf_graph *xf_graph_clone_with_room(const xf_graph *g, int more_nodes, int more_values)
{
    xf_graph *c = xf_graph_create(g->name);
    if (!c)
        return NULL;
    c->name_counter = g->name_counter;
    int cap_values = g->n_values + (more_values > 0 ? more_values : 0);
    int cap_nodes = g->n_nodes + (more_nodes > 0 ? more_nodes : 0);
    c->values = calloc((size_t)(cap_values > 0 ? cap_values : 1), sizeof *c->values);
    c->nodes = calloc((size_t)(cap_nodes > 0 ? cap_nodes : 1), sizeof *c->nodes);
    c->inputs = dup_ints(g->inputs, g->n_inputs);
    c->outputs = dup_ints(g->outputs, g->n_outputs);
    if (!c->values || !c->nodes || !c->inputs || !c->outputs)
        goto fail;
    c->cap_values = cap_values > 0 ? cap_values : 1;
    c->cap_nodes = cap_nodes > 0 ? cap_nodes : 1;
    c->n_inputs = g->n_inputs;
    c->n_outputs = g->n_outputs;
    for (int i = 0; i < g->n_values; i++) {
        c->values[i] = g->values[i];
        c->values[i].name = dup_str(g->values[i].name);
        c->values[i].init = xf_tensor_retain(g->values[i].init);
        c->n_values = i + 1;
        if (!c->values[i].name)
            goto fail;
    }
    for (int i = 0; i < g->n_nodes; i++) {
        const xf_node *s = &g->nodes[i];
        xf_node *d = &c->nodes[i];
        *d = *s;
        d->name = dup_str(s->name);
        d->inputs = dup_ints(s->inputs, s->n_inputs);
        d->outputs = dup_ints(s->outputs, s->n_outputs);
        d->opaque = xf_opaque_retain(s->opaque);
        d->attrs.value = xf_tensor_retain(s->attrs.value);
        c->n_nodes = i + 1;
        if ((s->name && !d->name) || !d->inputs || !d->outputs)
            goto fail;
    }
    return c;
fail:
    xf_graph_free(c);
    return NULL;
}

int xf_graph_find_value(const xf_graph *g, const char *name)
{
    if (!name)
        return -1;
    for (int i = 0; i < g->n_values; i++)
        if (g->values[i].name && strcmp(g->values[i].name, name) == 0)
            return i;
    return -1;
}

int xf_graph_add_value(xf_graph *g, const char *name, xf_dtype dtype, const xf_shape *shape)
{
    /* shape may be another value's, which growing the array moves */
    xf_shape copy = shape ? *shape : (xf_shape){.ndim = -1};
    if (!grow((void **)&g->values, &g->cap_values, g->n_values + 1, sizeof *g->values))
        return -1;
    char gen[48];
    if (!name) {
        /* Generated names must not collide with names an exporter chose. */
        do
            snprintf(gen, sizeof gen, "xf_%" PRId64, g->name_counter++);
        while (xf_graph_find_value(g, gen) >= 0);
        name = gen;
    }
    xf_value *v = &g->values[g->n_values];
    memset(v, 0, sizeof *v);
    v->name = strdup(name);
    if (!v->name)
        return -1;
    v->dtype = dtype;
    v->shape = copy;
    v->elem_decl.ndim = -1;
    v->producer = -1;
    return g->n_values++;
}

int xf_graph_add_initializer(xf_graph *g, const char *name, xf_tensor *t)
{
    int id = xf_graph_add_value(g, name, t->dtype, &t->shape);
    if (id >= 0)
        g->values[id].init = xf_tensor_retain(t);
    return id;
}

static bool append_int(int **arr, int *n, int v)
{
    int *p = realloc(*arr, sizeof(int) * (size_t)(*n + 1));
    if (!p)
        return false;
    p[(*n)++] = v;
    *arr = p;
    return true;
}

int xf_graph_add_input(xf_graph *g, const char *name, xf_dtype dtype, const xf_shape *shape)
{
    int id = xf_graph_add_value(g, name, dtype, shape);
    if (id < 0)
        return -1;
    g->values[id].is_input = true;
    if (!append_int(&g->inputs, &g->n_inputs, id))
        return -1;
    return id;
}

void xf_graph_add_output(xf_graph *g, int value_id)
{
    if (!append_int(&g->outputs, &g->n_outputs, value_id))
        xf_log(XF_LOG_ERROR, "out of memory adding a graph output");
}

int xf_graph_add_node(xf_graph *g, xf_op op, const char *name, int n_inputs, const int *inputs,
                      int n_outputs, const int *outputs)
{
    if (!grow((void **)&g->nodes, &g->cap_nodes, g->n_nodes + 1, sizeof *g->nodes))
        return -1;
    xf_node *n = &g->nodes[g->n_nodes];
    memset(n, 0, sizeof *n);
    n->op = op;
    xf_attrs_default(op, &n->attrs);
    n->name = dup_str(name ? name : "");
    n->inputs = dup_ints(inputs, n_inputs);
    n->outputs = dup_ints(outputs, n_outputs);
    if (!n->name || !n->inputs || !n->outputs) {
        node_clear(n);
        return -1;
    }
    n->n_inputs = n_inputs;
    n->n_outputs = n_outputs;
    int idx = g->n_nodes++;
    for (int i = 0; i < n_outputs; i++)
        if (outputs[i] >= 0 && outputs[i] < g->n_values) {
            g->values[outputs[i]].producer = idx;
            g->values[outputs[i]].producer_out = i;
        }
    return idx;
}

int xf_graph_copy_node(xf_graph *g, const xf_node *n, const int *inputs, const int *outputs)
{
    /* n may be one of g's nodes, which growing the array moves */
    const xf_node src = *n;
    int i = xf_graph_add_node(g, src.op, src.name, src.n_inputs, inputs, src.n_outputs, outputs);
    if (i < 0)
        return -1;
    xf_node *d = &g->nodes[i];
    xf_tensor_release(d->attrs.value);
    d->attrs = src.attrs;
    xf_tensor_retain(d->attrs.value);
    d->opaque = xf_opaque_retain(src.opaque);
    return i;
}

/* ------------------------------------------------------------ ordering */

static void refresh_producers(xf_graph *g)
{
    for (int v = 0; v < g->n_values; v++)
        g->values[v].producer = -1;
    for (int i = 0; i < g->n_nodes; i++)
        for (int k = 0; k < g->nodes[i].n_outputs; k++) {
            int v = g->nodes[i].outputs[k];
            if (v >= 0 && v < g->n_values) {
                g->values[v].producer = i;
                g->values[v].producer_out = k;
            }
        }
}

/* Min-heap of node indices ordered by (key, index). */
static int heap_less(const int *key, int a, int b) { return key[a] < key[b] || (key[a] == key[b] && a < b); }

static void heap_push(int *heap, int *len, const int *key, int x)
{
    int i = (*len)++;
    while (i > 0 && heap_less(key, x, heap[(i - 1) / 2])) {
        heap[i] = heap[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    heap[i] = x;
}

static int heap_pop(int *heap, int *len, const int *key)
{
    int top = heap[0], x = heap[--*len], i = 0;
    for (;;) {
        int c = 2 * i + 1;
        if (c >= *len)
            break;
        if (c + 1 < *len && heap_less(key, heap[c + 1], heap[c]))
            c++;
        if (!heap_less(key, heap[c], x))
            break;
        heap[i] = heap[c];
        i = c;
    }
    heap[i] = x;
    return top;
}

/* Rewrites order[] (a topological order of n nodes, users[] in CSR form by
 * ucount[]) into the order described in xf_graph_toposort_mapped. */
static xf_status order_by_first_use(int n, const int *ucount, const int *users, int *order, xf_error *err)
{
    int *key = malloc(sizeof(int) * (size_t)n);
    int *indeg = calloc((size_t)n, sizeof *indeg);
    int *heap = malloc(sizeof(int) * (size_t)n);
    if (!key || !indeg || !heap) {
        free(key);
        free(indeg);
        free(heap);
        return xf_error_set(err, XF_ERR_NOMEM, "out of memory sorting %d nodes", n);
    }
    for (int t = n - 1; t >= 0; t--) {
        int i = order[t];
        key[i] = i;
        for (int e = ucount[i]; e < ucount[i + 1]; e++) {
            indeg[users[e]]++;
            if (key[users[e]] < key[i])
                key[i] = key[users[e]];
        }
    }
    int len = 0, done = 0;
    for (int i = 0; i < n; i++)
        if (indeg[i] == 0)
            heap_push(heap, &len, key, i);
    while (len > 0) {
        int i = heap_pop(heap, &len, key);
        order[done++] = i;
        for (int e = ucount[i]; e < ucount[i + 1]; e++)
            if (--indeg[users[e]] == 0)
                heap_push(heap, &len, key, users[e]);
    }
    free(key);
    free(indeg);
    free(heap);
    return XF_OK;
}

xf_status xf_graph_toposort(xf_graph *g, xf_error *err) { return xf_graph_toposort_mapped(g, NULL, err); }

xf_status xf_graph_toposort_mapped(xf_graph *g, int *old_index, xf_error *err)
{
    int n = g->n_nodes;
    if (n == 0)
        return XF_OK;
    refresh_producers(g);
    int *indeg = calloc((size_t)n, sizeof *indeg);
    int *order = malloc(sizeof(int) * (size_t)n);
    /* users[] in CSR form: for node i, the nodes consuming its outputs. */
    int *ucount = calloc((size_t)n + 1, sizeof *ucount);
    xf_node *sorted = malloc(sizeof *sorted * (size_t)n);
    int *users = NULL;
    xf_status st = XF_OK;
    if (!indeg || !order || !ucount || !sorted) {
        st = xf_error_set(err, XF_ERR_NOMEM, "out of memory sorting %d nodes", n);
        goto done;
    }
    int edges = 0;
    for (int i = 0; i < n; i++)
        for (int k = 0; k < g->nodes[i].n_inputs; k++) {
            int v = g->nodes[i].inputs[k];
            if (v < 0 || v >= g->n_values || g->values[v].producer < 0)
                continue;
            indeg[i]++;
            ucount[g->values[v].producer + 1]++;
            edges++;
        }
    for (int i = 0; i < n; i++)
        ucount[i + 1] += ucount[i];
    users = malloc(sizeof(int) * (size_t)(edges > 0 ? edges : 1));
    if (!users) {
        st = xf_error_set(err, XF_ERR_NOMEM, "out of memory sorting %d nodes", n);
        goto done;
    }
    {
        int *fill = calloc((size_t)n, sizeof *fill);
        if (!fill) {
            st = xf_error_set(err, XF_ERR_NOMEM, "out of memory sorting %d nodes", n);
            goto done;
        }
        for (int i = 0; i < n; i++)
            for (int k = 0; k < g->nodes[i].n_inputs; k++) {
                int v = g->nodes[i].inputs[k];
                if (v < 0 || v >= g->n_values || g->values[v].producer < 0)
                    continue;
                int p = g->values[v].producer;
                users[ucount[p] + fill[p]++] = i;
            }
        free(fill);
    }
    /* Kahn's algorithm in two passes. The first finds an order (and any
     * cycle); the second takes, among the ready nodes, the one with the
     * smallest key, where a node's key is its index or, when a user comes
     * earlier (a node appended by a rewrite), the smallest key among its
     * users. An already sorted graph keeps its order exactly, and a node
     * inserted out of place lands just before its first user instead of
     * wherever breadth-first order would put it (which would hold every
     * independent branch's intermediates live at once). */
    int head = 0, tail = 0;
    for (int i = 0; i < n; i++)
        if (indeg[i] == 0)
            order[tail++] = i;
    while (head < tail) {
        int i = order[head++];
        for (int e = ucount[i]; e < ucount[i + 1]; e++)
            if (--indeg[users[e]] == 0)
                order[tail++] = users[e];
    }
    if (tail < n) {
        const char *on_cycle = "?";
        for (int i = 0; i < n && !strcmp(on_cycle, "?"); i++)
            if (indeg[i] > 0)
                for (int k = 0; k < g->nodes[i].n_outputs; k++)
                    if (g->nodes[i].outputs[k] >= 0) {
                        on_cycle = g->values[g->nodes[i].outputs[k]].name;
                        break;
                    }
        st = xf_error_set(err, XF_ERR_INVALID,
                          "the graph has a cycle (%d of %d nodes are on or behind it, e.g. value '%s')",
                          n - tail, n, on_cycle);
        goto done;
    }
    if ((st = order_by_first_use(n, ucount, users, order, err)) != XF_OK)
        goto done;
    for (int i = 0; i < n; i++)
        sorted[i] = g->nodes[order[i]];
    memcpy(g->nodes, sorted, sizeof *sorted * (size_t)n);
    if (old_index)
        memcpy(old_index, order, sizeof *order * (size_t)n);
    refresh_producers(g);
done:
    free(indeg);
    free(order);
    free(ucount);
    free(users);
    free(sorted);
    return st;
}

static const char *node_label(const xf_graph *g, int i, char *buf, size_t n)
{
    const xf_node *nd = &g->nodes[i];
    const char *op = nd->op == XF_OP_OPAQUE && nd->opaque ? nd->opaque->op_type : xf_op_name(nd->op);
    if (nd->name && nd->name[0])
        snprintf(buf, n, "node '%s' (%s)", nd->name, op);
    else
        snprintf(buf, n, "node #%d (%s)", i, op);
    return buf;
}

xf_status xf_graph_validate(const xf_graph *g, xf_error *err)
{
    char lbl[256];
    int *seen = calloc((size_t)(g->n_values > 0 ? g->n_values : 1), sizeof *seen);
    if (!seen)
        return xf_error_set(err, XF_ERR_NOMEM, "out of memory validating the graph");
    xf_status st = XF_OK;
    for (int v = 0; v < g->n_values; v++)
        if (g->values[v].init || g->values[v].is_input)
            seen[v] = 1;
    for (int i = 0; i < g->n_nodes && st == XF_OK; i++) {
        const xf_node *n = &g->nodes[i];
        const xf_op_info *info = xf_op_get_info(n->op);
        if (n->op != XF_OP_OPAQUE &&
            (n->n_inputs < info->min_inputs || n->n_inputs > info->max_inputs)) {
            st = xf_error_set(err, XF_ERR_INVALID, "%s has %d inputs; %s takes %d to %d",
                              node_label(g, i, lbl, sizeof lbl), n->n_inputs, info->onnx_name,
                              info->min_inputs, info->max_inputs);
            break;
        }
        for (int k = 0; k < n->n_inputs; k++) {
            int v = n->inputs[k];
            if (v < -1 || v >= g->n_values) {
                st = xf_error_set(err, XF_ERR_INVALID, "%s input %d refers to no value",
                                  node_label(g, i, lbl, sizeof lbl), k);
                break;
            }
            if (v >= 0 && !seen[v]) {
                st = xf_error_set(err, XF_ERR_INVALID,
                                  "%s uses value '%s' before it is produced (or nothing produces it)",
                                  node_label(g, i, lbl, sizeof lbl), g->values[v].name);
                break;
            }
        }
        for (int k = 0; k < n->n_outputs && st == XF_OK; k++) {
            int v = n->outputs[k];
            if (v < -1 || v >= g->n_values) {
                st = xf_error_set(err, XF_ERR_INVALID, "%s output %d refers to no value",
                                  node_label(g, i, lbl, sizeof lbl), k);
            } else if (v >= 0 && seen[v]) {
                st = xf_error_set(err, XF_ERR_INVALID, "value '%s' has more than one producer (%s)",
                                  g->values[v].name, node_label(g, i, lbl, sizeof lbl));
            } else if (v >= 0) {
                seen[v] = 1;
            }
        }
    }
    for (int k = 0; k < g->n_outputs && st == XF_OK; k++) {
        int v = g->outputs[k];
        if (v < 0 || v >= g->n_values || !seen[v])
            st = xf_error_set(err, XF_ERR_INVALID, "graph output %d ('%s') is not produced", k,
                              v >= 0 && v < g->n_values ? g->values[v].name : "?");
    }
    free(seen);
    return st;
}

void xf_graph_compact(xf_graph *g, const bool *keep) { xf_graph_compact_mapped(g, keep, NULL, NULL); }

void xf_graph_compact_mapped(xf_graph *g, const bool *keep, int *node_map, int *value_map)
{
    int nn = 0;
    for (int i = 0; i < g->n_nodes; i++) {
        if (keep && !keep[i]) {
            node_clear(&g->nodes[i]);
            if (node_map)
                node_map[i] = -1;
            continue;
        }
        if (node_map)
            node_map[i] = nn;
        g->nodes[nn++] = g->nodes[i];
    }
    g->n_nodes = nn;

    int *remap = malloc(sizeof(int) * (size_t)(g->n_values > 0 ? g->n_values : 1));
    bool *used = calloc((size_t)(g->n_values > 0 ? g->n_values : 1), sizeof *used);
    if (!remap || !used) {
        /* Nothing renumbered: the graph stays valid, only larger. */
        for (int v = 0; value_map && v < g->n_values; v++)
            value_map[v] = v;
        free(remap);
        free(used);
        refresh_producers(g);
        return;
    }
    for (int k = 0; k < g->n_inputs; k++)
        used[g->inputs[k]] = true;
    for (int k = 0; k < g->n_outputs; k++)
        if (g->outputs[k] >= 0)
            used[g->outputs[k]] = true;
    for (int i = 0; i < g->n_nodes; i++) {
        for (int k = 0; k < g->nodes[i].n_inputs; k++)
            if (g->nodes[i].inputs[k] >= 0)
                used[g->nodes[i].inputs[k]] = true;
        for (int k = 0; k < g->nodes[i].n_outputs; k++)
            if (g->nodes[i].outputs[k] >= 0)
                used[g->nodes[i].outputs[k]] = true;
    }
    int nv = 0;
    for (int v = 0; v < g->n_values; v++) {
        if (!used[v]) {
            free(g->values[v].name);
            xf_tensor_release(g->values[v].init);
            remap[v] = -1;
            continue;
        }
        remap[v] = nv;
        g->values[nv++] = g->values[v];
    }
    if (value_map)
        memcpy(value_map, remap, sizeof *remap * (size_t)g->n_values);
    g->n_values = nv;
    for (int k = 0; k < g->n_inputs; k++)
        g->inputs[k] = remap[g->inputs[k]];
    for (int k = 0; k < g->n_outputs; k++)
        if (g->outputs[k] >= 0)
            g->outputs[k] = remap[g->outputs[k]];
    for (int i = 0; i < g->n_nodes; i++) {
        for (int k = 0; k < g->nodes[i].n_inputs; k++)
            if (g->nodes[i].inputs[k] >= 0)
                g->nodes[i].inputs[k] = remap[g->nodes[i].inputs[k]];
        for (int k = 0; k < g->nodes[i].n_outputs; k++)
            if (g->nodes[i].outputs[k] >= 0)
                g->nodes[i].outputs[k] = remap[g->nodes[i].outputs[k]];
    }
    free(remap);
    free(used);
    refresh_producers(g);
}

bool xf_graph_is_output(const xf_graph *g, int v)
{
    for (int k = 0; k < g->n_outputs; k++)
        if (g->outputs[k] == v)
            return true;
    return false;
}

const xf_tensor *xf_graph_constant(const xf_graph *g, int v)
{
    return v >= 0 && !g->values[v].is_input ? g->values[v].init : NULL;
}

bool xf_dropout_trains(const xf_graph *g, const xf_node *n)
{
    if (n->op != XF_OP_DROPOUT || n->n_inputs < 3 || n->inputs[2] < 0)
        return false;
    const xf_tensor *t = xf_graph_constant(g, n->inputs[2]);
    return !(t && xf_tensor_numel(t) == 1 && t->data && xf_tensor_get_i64(t, 0) == 0);
}

bool xf_node_draws_random(const xf_graph *g, const xf_node *n)
{
    return xf_op_is_random(n->op) || xf_dropout_trains(g, n);
}

void xf_graph_replace_uses(xf_graph *g, int from, int to)
{
    for (int i = 0; i < g->n_nodes; i++)
        for (int k = 0; k < g->nodes[i].n_inputs; k++)
            if (g->nodes[i].inputs[k] == from)
                g->nodes[i].inputs[k] = to;
    for (int k = 0; k < g->n_outputs; k++)
        if (g->outputs[k] == from)
            g->outputs[k] = to;
}

int xf_graph_count_uses(const xf_graph *g, int v)
{
    int n = 0;
    for (int i = 0; i < g->n_nodes; i++)
        for (int k = 0; k < g->nodes[i].n_inputs; k++)
            n += g->nodes[i].inputs[k] == v;
    for (int k = 0; k < g->n_outputs; k++)
        n += g->outputs[k] == v;
    return n;
}

size_t xf_graph_footprint(const xf_graph *g)
{
    size_t bytes = sizeof *g + (g->name ? strlen(g->name) + 1 : 0) +
                   sizeof(int) * (size_t)(g->n_inputs + g->n_outputs);
    for (int v = 0; v < g->n_values; v++)
        bytes += sizeof(xf_value) + (g->values[v].name ? strlen(g->values[v].name) + 1 : 0);
    for (int i = 0; i < g->n_nodes; i++) {
        const xf_node *n = &g->nodes[i];
        bytes += sizeof(xf_node) + sizeof(int) * (size_t)(n->n_inputs + n->n_outputs) +
                 (n->name ? strlen(n->name) + 1 : 0);
    }
    return bytes;
}

void xf_graph_count_ops(const xf_graph *g, int *out)
{
    memset(out, 0, sizeof(int) * (XF_OP_COUNT + 1));
    for (int i = 0; i < g->n_nodes; i++)
        out[(unsigned)g->nodes[i].op <= XF_OP_OPAQUE ? g->nodes[i].op : XF_OP_OPAQUE]++;
}

/* ------------------------------------------------------------ model */

xf_model *xf_model_create(void)
{
    xf_model *m = calloc(1, sizeof *m);
    if (!m)
        return NULL;
    m->graph = xf_graph_create("");
    if (!m->graph) {
        free(m);
        return NULL;
    }
    return m;
}

static bool add_dim(xf_symbolic_dim **list, int *n, const char *value, int dim, const char *name)
{
    xf_symbolic_dim *grown = realloc(*list, sizeof *grown * (size_t)(*n + 1));
    if (!grown)
        return false;
    *list = grown;
    xf_symbolic_dim *s = &grown[*n];
    s->value = strdup(value);
    s->name = strdup(name ? name : "");
    s->dim = dim;
    if (!s->value || !s->name) {
        free(s->value);
        free(s->name);
        return false;
    }
    (*n)++;
    return true;
}

bool xf_model_add_symbolic(xf_model *m, const char *value, int dim, const char *name)
{
    return add_dim(&m->symbolic, &m->n_symbolic, value, dim, name);
}

bool xf_model_add_declared_output(xf_model *m, const char *value, int dim, const char *name)
{
    return add_dim(&m->declared_out, &m->n_declared_out, value, dim, name);
}

static void free_dims(xf_symbolic_dim *list, int n)
{
    for (int i = 0; i < n; i++) {
        free(list[i].value);
        free(list[i].name);
    }
    free(list);
}

void xf_model_free(xf_model *m)
{
    if (!m)
        return;
    free_dims(m->symbolic, m->n_symbolic);
    free_dims(m->declared_out, m->n_declared_out);
    xf_graph_free(m->graph);
    free(m->producer_name);
    free(m->producer_version);
    free(m->domain);
    free(m->doc_string);
    for (int i = 0; i < m->n_opsets; i++)
        free(m->opsets[i].domain);
    free(m->opsets);
    for (int i = 0; i < m->n_metadata; i++) {
        free(m->metadata[i].key);
        free(m->metadata[i].value);
    }
    free(m->metadata);
    free(m->extra);
    free(m);
}

int64_t xf_model_opset(const xf_model *m)
{
    for (int i = 0; i < m->n_opsets; i++)
        if (!m->opsets[i].domain || !m->opsets[i].domain[0] ||
            strcmp(m->opsets[i].domain, "ai.onnx") == 0)
            return m->opsets[i].version;
    return 0;
}
