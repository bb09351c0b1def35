/* Rewriting: one match of a rule turned into a new graph, in two steps.
 *
 * Planning works the rewrite out beside the graph: the replacement's nodes
 * are built with their bound attributes, and their shapes inferred, in a
 * small graph of their own whose first values stand for the rule's inputs;
 * and the pattern nodes that die are found.  That is enough to refuse a
 * rewrite whose shapes do not fit, and to compute the structural hash of
 * the graph it would give from the hashes of the graph it starts from: the
 * search skips a graph it has seen without building it.
 *
 * Building clones the graph (structure only: weights are shared), appends
 * the replacement's nodes, moves the uses of each pattern output to the
 * replacement output, and removes the pattern nodes nothing uses any more.
 * Only the new nodes need shape inference: every other value keeps its
 * shape because each replacement output must have the shape of the pattern
 * output it replaces. */
#include "opt_internal.h"
#include "xf_runtime.h"

#include <assert.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

xf_status opt_rewrite_base_init(const xf_graph *g, bool hashes, rewrite_base *b, xf_error *err)
{
    memset(b, 0, sizeof *b);
    b->g = g;
    xf_status st = opt_index_build(g, &b->gi, err);
    if (st != XF_OK || !hashes)
        return st;
    if ((st = xf_graph_hashes_compute(g, &b->h, err)) != XF_OK) {
        opt_rewrite_base_free(b);
        return st;
    }
    size_t nv = (size_t)g->n_values + 1;
    b->vh = malloc(sizeof *b->vh * nv);
    b->changed = calloc(nv, sizeof *b->changed);
    b->touched = malloc(sizeof *b->touched * nv);
    if (!b->vh || !b->changed || !b->touched) {
        opt_rewrite_base_free(b);
        return xf_error_set(err, XF_ERR_NOMEM, "out of memory");
    }
    memcpy(b->vh, b->h.value, sizeof *b->vh * (size_t)g->n_values);
    b->hashed = true;
    return XF_OK;
}

void opt_rewrite_base_free(rewrite_base *b)
{
    opt_index_free(&b->gi);
    xf_graph_hashes_free(&b->h);
    free(b->vh);
    free(b->changed);
    free(b->touched);
    memset(b, 0, sizeof *b);
}

void opt_rewrite_plan_free(rewrite_plan *rp)
{
    xf_graph_free(rp->side);
    free(rp->vmap);
    memset(rp, 0, sizeof *rp);
}

/* Builds the replacement in rp->side: the rule inputs first (copies of the
 * matched values, so that shape inference sees their shapes and constant
 * data), then the replacement's values and nodes. */
static xf_status add_replacement(const xf_rule_set *rs, const xf_rule *r, const xf_match *m, const xf_graph *g,
                                 rewrite_plan *rp, xf_error *err)
{
    const xf_graph *q = r->replacement;
    xf_graph *c = rp->side;
    int *vmap = rp->vmap;
    xf_shape shapes[XF_MATCH_MAX_INPUTS];
    bool bound[XF_MATCH_MAX_PARAMS];
    for (int p = 0; p < XF_MATCH_MAX_PARAMS; p++)
        bound[p] = p < m->n_params;
    for (int v = 0; v < q->n_values; v++)
        vmap[v] = -1;
    /* the floating dtype the rule's float values take here (a float16
     * graph gets float16 constants) */
    xf_dtype fdt = XF_DT_FLOAT;
    for (int k = 0; k < q->n_inputs; k++)
        if (q->values[q->inputs[k]].dtype == XF_DT_FLOAT)
            fdt = g->values[m->input[k]].dtype;
    for (int k = 0; k < q->n_inputs; k++) {
        const xf_value *src = &g->values[m->input[k]];
        int v = xf_graph_add_value(c, src->name, src->dtype, &src->shape);
        if (v < 0)
            return xf_error_set(err, XF_ERR_NOMEM, "out of memory");
        c->values[v].init = xf_tensor_retain(src->init);
        c->values[v].is_input = src->is_input;
        vmap[q->inputs[k]] = v;
        shapes[k] = src->shape;
    }
    for (int v = 0; v < q->n_values; v++) {
        if (vmap[v] >= 0)
            continue;
        const xf_rule_const *rc = xf_rule_const_of(r, q, v);
        if (rc) {
            /* Sized by the match. */
            xf_shape s;
            xf_tensor *t = NULL;
            if (!xf_rule_const_shape(rc, shapes, m->n_inputs, &s) ||
                !(t = opt_rule_const_tensor(rs, rc->kind, &s, fdt)))
                return xf_error_set(err, XF_ERR_INVALID, "rule %s: constant %s cannot be made for these inputs",
                                    r->name, rc->name);
            vmap[v] = xf_graph_add_initializer(c, NULL, t);
        } else if (opt_is_const(q, v) && q->values[v].init->dtype == XF_DT_FLOAT && fdt != XF_DT_FLOAT) {
            xf_tensor *t = xf_tensor_as_float(q->values[v].init, fdt);
            vmap[v] = t ? xf_graph_add_initializer(c, NULL, t) : -1;
            xf_tensor_release(t);
        } else if (opt_is_const(q, v))
            vmap[v] = xf_graph_add_initializer(c, NULL, q->values[v].init);
        else if (q->values[v].producer >= 0)
            vmap[v] = xf_graph_add_value(c, NULL, q->values[v].dtype, NULL);
        else
            continue;
        if (vmap[v] < 0)
            return xf_error_set(err, XF_ERR_NOMEM, "out of memory");
    }
    for (int i = 0; i < q->n_nodes; i++) {
        const xf_node *rn = &q->nodes[i];
        int in[64], out[16];
        if (rn->n_inputs > 64 || rn->n_outputs > 16)
            return xf_error_set(err, XF_ERR_INVALID, "rule %s: replacement node %d is too wide", r->name, i);
        for (int k = 0; k < rn->n_inputs; k++)
            in[k] = rn->inputs[k] >= 0 ? vmap[rn->inputs[k]] : -1;
        for (int k = 0; k < rn->n_outputs; k++)
            out[k] = rn->outputs[k] >= 0 ? vmap[rn->outputs[k]] : -1;
        int ni = xf_graph_add_node(c, rn->op, NULL, rn->n_inputs, in, rn->n_outputs, out);
        if (ni < 0)
            return xf_error_set(err, XF_ERR_NOMEM, "out of memory");
        xf_attrs *a = &c->nodes[ni].attrs;
        xf_tensor_release(a->value);
        *a = rn->attrs;
        xf_tensor_retain(a->value);
    }
    for (int b = 0; b < r->n_bindings; b++) {
        const xf_binding *bd = &r->bindings[b];
        int64_t v;
        if (!bd->replacement)
            continue;
        if (!xf_expr_eval(&bd->e, m->param, bound, shapes, m->n_inputs, &v) ||
            !xf_attr_field_set(&c->nodes[bd->node].attrs, bd->field, bd->index, v))
            return xf_error_set(err, XF_ERR_INVALID, "rule %s: %s[%d] of replacement node %d cannot be evaluated "
                                "here", r->name, xf_attr_field_name(bd->field), bd->index, bd->node);
    }
    return XF_OK;
}

/* Whether value v of g is one the rewrite replaces. */
static bool is_replaced(const rewrite_plan *rp, int v)
{
    for (int j = 0; j < rp->p->n_outputs; j++)
        if (rp->pv[j] == v)
            return true;
    return false;
}

/* The pattern nodes the rewrite removes: in reverse pattern order (a node
 * dies once its consumers have), those whose outputs no remaining node
 * reads and no graph output is.  Every use of a replaced output has moved
 * to the replacement, and the replacement reads no value the pattern
 * computes (matching ensures it). */
static void find_gone(const rewrite_base *b, rewrite_plan *rp)
{
    const xf_graph *g = b->g;
    const graph_index *gi = &b->gi;
    const xf_match *m = &rp->m;
    for (int i = rp->p->n_nodes - 1; i >= 0; i--) {
        const xf_node *n = &g->nodes[m->node[i]];
        int uses = 0;
        for (int o = 0; o < n->n_outputs; o++) {
            int v = n->outputs[o];
            if (v < 0 || is_replaced(rp, v))
                continue;
            uses += gi->is_output[v];
            for (int u = gi->use_start[v]; u < gi->use_start[v + 1]; u++) {
                bool removed = false;
                for (int j = i + 1; j < rp->p->n_nodes && !removed; j++)
                    removed = rp->gone[j] && m->node[j] == gi->use_node[u];
                uses += !removed;
            }
        }
        rp->gone[i] = uses == 0;
    }
}

xf_status opt_rewrite_plan(const xf_rule_set *rs, const rewrite_base *b, int64_t opset, const xf_match *m,
                           rewrite_plan *rp, xf_error *err)
{
    memset(rp, 0, sizeof *rp);
    const xf_graph *g = b->g;
    rp->p = &rs->plans[m->rule];
    rp->m = *m;
    const xf_rule *r = rp->p->rule;
    const xf_graph *q = r->replacement;
    rp->side = xf_graph_create(r->name);
    rp->vmap = malloc(sizeof(int) * (size_t)(q->n_values + 1));
    xf_status st = XF_OK;
    if (!rp->side || !rp->vmap) {
        st = xf_error_set(err, XF_ERR_NOMEM, "out of memory");
        goto fail;
    }
    if ((st = add_replacement(rs, r, m, g, rp, err)) != XF_OK)
        goto fail;
    for (int i = 0; i < rp->side->n_nodes; i++)
        if ((st = xf_node_infer_shape(rp->side, i, opset, NULL, err)) != XF_OK) {
            xf_error_prefix(err, "rule %s", r->name);
            st = XF_ERR_INVALID;
            goto fail;
        }
    bool taken[XF_MATCH_MAX_INPUTS] = {0}; /* replacement output j already names a graph output */
    for (int j = 0; j < rp->p->n_outputs; j++) {
        int pv = g->nodes[m->node[rp->p->out[j].idx]].outputs[rp->p->out[j].out];
        int rv = rp->vmap[q->outputs[j]];
        rp->pv[j] = pv;
        rp->rv[j] = rv;
        const xf_value *a = &g->values[pv], *c = &rp->side->values[rv];
        if (a->dtype != c->dtype || !xf_shape_equal(&a->shape, &c->shape)) {
            char sa[96], sb[96];
            st = xf_error_set(err, XF_ERR_INVALID, "rule %s: output %d would change from %s %s to %s %s", r->name, j,
                              xf_dtype_name(a->dtype), xf_shape_str(&a->shape, sa, sizeof sa),
                              xf_dtype_name(c->dtype), xf_shape_str(&c->shape, sb, sizeof sb));
            goto fail;
        }
        /* Graph outputs keep their names: the replacement value must be
         * computed by a new node, which takes the name. */
        bool twice = false;
        for (int k = 0; k < j; k++)
            twice |= taken[k] && rp->rv[k] == rv;
        if (b->gi.is_output[pv]) {
            if (rp->side->values[rv].producer < 0 || twice) {
                st = xf_error_set(err, XF_ERR_INVALID, "rule %s: graph output '%s' would become another value",
                                  r->name, a->name);
                goto fail;
            }
            taken[j] = true;
        }
    }
    find_gone(b, rp);
    return XF_OK;
fail:
    opt_rewrite_plan_free(rp);
    return st;
}

/* Sets the hash of value v in the rewritten graph. */
static void set_hash(rewrite_base *b, int v, uint64_t h)
{
    if (!b->changed[v]) {
        b->changed[v] = true;
        b->touched[b->n_touched++] = v;
    }
    b->vh[v] = h;
}

/* The rewritten graph's hash is the start graph's with the replacement's
 * nodes added, the removed nodes taken away, and every node downstream of
 * a replaced value rehashed.  The replacement reads the rule inputs, so it
 * is hashed first, from the start graph's hashes; a rule input downstream
 * of a replaced value would close a cycle, and the rewrite is refused. */
xf_status opt_rewrite_hash(rewrite_base *b, const rewrite_plan *rp, uint64_t *hash, xf_error *err)
{
    assert(b->hashed);
    const xf_graph *g = b->g, *side = rp->side;
    const xf_match *m = &rp->m;
    uint64_t side_vh[64], *svh = side_vh;
    if (side->n_values > 64 && !(svh = malloc(sizeof *svh * (size_t)side->n_values)))
        return xf_error_set(err, XF_ERR_NOMEM, "out of memory");
    for (int v = 0; v < side->n_values; v++)
        svh[v] = v < m->n_inputs ? b->h.value[m->input[v]] : xf_hash_source(&side->values[v]);
    uint64_t sum = b->h.node_sum;
    int n_nodes = g->n_nodes + side->n_nodes;
    for (int i = 0; i < side->n_nodes; i++) {
        const xf_node *n = &side->nodes[i];
        uint64_t nh = xf_hash_node(xf_hash_node_attrs(n), n, svh, side->n_values);
        sum += xf_hash_node_term(nh);
        for (int k = 0; k < n->n_outputs; k++)
            if (n->outputs[k] >= 0)
                svh[n->outputs[k]] = xf_hash_node_output(nh, k, &side->values[n->outputs[k]]);
    }
    int first = g->n_nodes;
    for (int j = 0; j < rp->p->n_outputs; j++) {
        set_hash(b, rp->pv[j], svh[rp->rv[j]]);
        for (int u = b->gi.use_start[rp->pv[j]]; u < b->gi.use_start[rp->pv[j] + 1]; u++)
            first = b->gi.use_node[u] < first ? b->gi.use_node[u] : first;
    }
    if (svh != side_vh)
        free(svh);
    for (int i = 0; i < rp->p->n_nodes; i++)
        if (rp->gone[i]) {
            sum -= xf_hash_node_term(b->h.node[m->node[i]]);
            n_nodes--;
        }
    xf_status st = XF_OK;
    for (int i = first; i < g->n_nodes && st == XF_OK; i++) {
        const xf_node *n = &g->nodes[i];
        bool dirty = false;
        for (int k = 0; k < n->n_inputs && !dirty; k++)
            dirty = n->inputs[k] >= 0 && b->changed[n->inputs[k]];
        for (int p = 0; p < rp->p->n_nodes && dirty; p++)
            dirty = !(rp->gone[p] && m->node[p] == i);
        if (!dirty)
            continue;
        uint64_t nh = xf_hash_node(b->h.node_attrs[i], n, b->vh, g->n_values);
        sum += xf_hash_node_term(nh) - xf_hash_node_term(b->h.node[i]);
        for (int k = 0; k < n->n_outputs; k++) {
            int v = n->outputs[k];
            if (v < 0)
                continue;
            for (int q = 0; q < m->n_inputs; q++)
                if (m->input[q] == v)
                    st = xf_error_set(err, XF_ERR_INVALID, "rule %s: the rewrite would make a cycle through '%s'",
                                      rp->p->rule->name, g->values[v].name);
            set_hash(b, v, xf_hash_node_output(nh, k, &g->values[v]));
        }
    }
    *hash = xf_hash_combine(g, b->vh, n_nodes, sum);
    for (int t = 0; t < b->n_touched; t++) {
        int v = b->touched[t];
        b->vh[v] = b->h.value[v];
        b->changed[v] = false;
    }
    b->n_touched = 0;
    return st;
}

void opt_rewrite_delta_free(rewrite_delta *d)
{
    free(d->node_map);
    free(d->value_map);
    free(d->dirty);
    memset(d, 0, sizeof *d);
}

/* Marks node i of the rewritten graph as one whose surroundings changed. */
static void mark_dirty(rewrite_delta *d, bool *marked, int i)
{
    if (i >= 0 && !marked[i]) {
        marked[i] = true;
        d->dirty[d->n_dirty++] = i;
    }
}

/* Fills d from the renumbering of the clone c (g's nodes and values first,
 * then the replacement's): compaction's node_map and value_map (over c's
 * indices), and the sort's old_index.  The nodes whose surroundings
 * changed are the new ones, the readers of replaced values, the remaining
 * pattern nodes, and the producers of values that gained or lost readers
 * (the rule inputs, and what the removed nodes read). */
static xf_status delta_fill(const rewrite_base *b, const rewrite_plan *rp, const xf_graph *c, const int *node_map,
                            const int *value_map, const int *old_index, rewrite_delta *d, xf_error *err)
{
    const xf_graph *g = b->g;
    const xf_match *m = &rp->m;
    int n_new = rp->side->n_nodes;
    int *position = malloc(sizeof *position * (size_t)(c->n_nodes + 1));
    bool *marked = calloc((size_t)c->n_nodes + 1, sizeof *marked);
    d->n_old_nodes = g->n_nodes;
    d->n_old_values = g->n_values;
    d->node_map = malloc(sizeof *d->node_map * (size_t)(g->n_nodes + 1));
    d->value_map = malloc(sizeof *d->value_map * (size_t)(g->n_values + 1));
    d->dirty = malloc(sizeof *d->dirty * (size_t)(c->n_nodes + 1));
    if (!position || !marked || !d->node_map || !d->value_map || !d->dirty) {
        free(position);
        free(marked);
        opt_rewrite_delta_free(d);
        return xf_error_set(err, XF_ERR_NOMEM, "out of memory");
    }
    for (int i = 0; i < c->n_nodes; i++)
        position[old_index[i]] = i;
    for (int i = 0; i < g->n_nodes; i++)
        d->node_map[i] = node_map[i] >= 0 ? position[node_map[i]] : -1;
    memcpy(d->value_map, value_map, sizeof *value_map * (size_t)g->n_values);
    for (int k = 0; k < n_new; k++)
        mark_dirty(d, marked, position[node_map[g->n_nodes + k]]);
    for (int j = 0; j < rp->p->n_outputs; j++)
        for (int u = b->gi.use_start[rp->pv[j]]; u < b->gi.use_start[rp->pv[j] + 1]; u++)
            mark_dirty(d, marked, d->node_map[b->gi.use_node[u]]);
    for (int k = 0; k < m->n_inputs; k++)
        if (g->values[m->input[k]].producer >= 0)
            mark_dirty(d, marked, d->node_map[g->values[m->input[k]].producer]);
    for (int i = 0; i < rp->p->n_nodes; i++) {
        const xf_node *n = &g->nodes[m->node[i]];
        mark_dirty(d, marked, d->node_map[m->node[i]]);
        for (int k = 0; rp->gone[i] && k < n->n_inputs; k++)
            if (n->inputs[k] >= 0 && g->values[n->inputs[k]].producer >= 0)
                mark_dirty(d, marked, d->node_map[g->values[n->inputs[k]].producer]);
    }
    free(position);
    free(marked);
    return XF_OK;
}

xf_status opt_rewrite_build(const rewrite_base *b, const rewrite_plan *rp, xf_graph **out, rewrite_delta *delta,
                            xf_error *err)
{
    *out = NULL;
    const xf_graph *g = b->g, *side = rp->side;
    const xf_match *m = &rp->m;
    xf_graph *c = xf_graph_clone_with_room(g, side->n_nodes, side->n_values);
    int *smap = malloc(sizeof *smap * (size_t)(side->n_values + 1));
    size_t n_nodes = (size_t)g->n_nodes + (size_t)side->n_nodes + 1, n_values = (size_t)g->n_values + (size_t)side->n_values + 1;
    bool *keep = malloc(sizeof *keep * n_nodes);
    int *node_map = delta ? malloc(sizeof *node_map * n_nodes) : NULL;
    int *value_map = delta ? malloc(sizeof *value_map * n_values) : NULL;
    int *old_index = delta ? malloc(sizeof *old_index * n_nodes) : NULL;
    xf_status st = XF_OK;
    if (delta)
        memset(delta, 0, sizeof *delta);
    if (!c || !smap || !keep || (delta && (!node_map || !value_map || !old_index))) {
        st = xf_error_set(err, XF_ERR_NOMEM, "out of memory");
        goto fail;
    }
    /* Values, then nodes, in the replacement's order: generated names come
     * out the same whatever path led to the graph. */
    for (int v = 0; v < side->n_values; v++) {
        const xf_value *sv = &side->values[v];
        if (v < m->n_inputs)
            smap[v] = m->input[v];
        else if (sv->init)
            smap[v] = xf_graph_add_initializer(c, NULL, sv->init);
        else
            smap[v] = xf_graph_add_value(c, NULL, sv->dtype, &sv->shape);
        if (smap[v] < 0) {
            st = xf_error_set(err, XF_ERR_NOMEM, "out of memory");
            goto fail;
        }
    }
    for (int i = 0; i < side->n_nodes; i++) {
        const xf_node *sn = &side->nodes[i];
        int in[64], out[16];
        for (int k = 0; k < sn->n_inputs; k++)
            in[k] = sn->inputs[k] >= 0 ? smap[sn->inputs[k]] : -1;
        for (int k = 0; k < sn->n_outputs; k++)
            out[k] = sn->outputs[k] >= 0 ? smap[sn->outputs[k]] : -1;
        char name[64];
        snprintf(name, sizeof name, "xf_opt_%" PRId64, c->name_counter++);
        int ni = xf_graph_add_node(c, sn->op, name, sn->n_inputs, in, sn->n_outputs, out);
        if (ni < 0) {
            st = xf_error_set(err, XF_ERR_NOMEM, "out of memory");
            goto fail;
        }
        xf_attrs *a = &c->nodes[ni].attrs;
        xf_tensor_release(a->value);
        *a = sn->attrs;
        xf_tensor_retain(a->value);
    }
    for (int j = 0; j < rp->p->n_outputs; j++) {
        int pv = rp->pv[j], rv = smap[rp->rv[j]];
        if (b->gi.is_output[pv]) {
            char *name = c->values[pv].name;
            c->values[pv].name = c->values[rv].name;
            c->values[rv].name = name;
        }
        xf_graph_replace_uses(c, pv, rv);
    }
    for (int i = 0; i < c->n_nodes; i++)
        keep[i] = true;
    for (int i = 0; i < rp->p->n_nodes; i++)
        keep[m->node[i]] = !rp->gone[i];
    xf_graph_compact_mapped(c, keep, node_map, value_map);
    if ((st = xf_graph_toposort_mapped(c, old_index, err)) != XF_OK) {
        xf_error_prefix(err, "rule %s", rp->p->rule->name);
        st = XF_ERR_INVALID;
        goto fail;
    }
    if (delta && (st = delta_fill(b, rp, c, node_map, value_map, old_index, delta, err)) != XF_OK)
        goto fail;
    *out = c;
    c = NULL;
fail:
    free(keep);
    free(smap);
    free(node_map);
    free(value_map);
    free(old_index);
    xf_graph_free(c);
    return st;
}

xf_status xf_rewrite_apply(const xf_rule_set *rs, const xf_graph *g, int64_t opset, const xf_match *m,
                           xf_graph **out, xf_error *err)
{
    *out = NULL;
    rewrite_base b;
    rewrite_plan rp;
    xf_status st = opt_rewrite_base_init(g, false, &b, err);
    if (st != XF_OK)
        return st;
    if ((st = opt_rewrite_plan(rs, &b, opset, m, &rp, err)) == XF_OK) {
        st = opt_rewrite_build(&b, &rp, out, NULL, err);
        opt_rewrite_plan_free(&rp);
    }
    opt_rewrite_base_free(&b);
    return st;
}

/* Appends the int64 list v[0..n) to node n's inputs as a new initializer
 * (an attribute that opset 11 and 13 turned into an input). */
static xf_status attr_to_input(xf_graph *g, xf_node *n, const int64_t *v, int count, xf_error *err)
{
    xf_shape s = {.ndim = 1, .dims = {count}};
    xf_tensor *t = xf_tensor_from_data(XF_DT_INT64, &s, v);
    int id = t ? xf_graph_add_initializer(g, NULL, t) : -1;
    xf_tensor_release(t);
    int *inputs = id >= 0 ? realloc(n->inputs, (size_t)(n->n_inputs + 1) * sizeof *inputs) : NULL;
    if (!inputs)
        return xf_error_set(err, XF_ERR_NOMEM, "out of memory");
    inputs[n->n_inputs++] = id;
    n->inputs = inputs;
    return XF_OK;
}

/* A Split in the attribute form that rules write: one input, one size per
 * output. */
static bool attr_split(const xf_node *n)
{
    return n->op == XF_OP_SPLIT && n->n_inputs == 1 && n->attrs.n_split == n->n_outputs && n->n_outputs > 0;
}

static int split_axis(const xf_graph *g, const xf_node *n)
{
    int rank = g->values[n->inputs[0]].shape.ndim, axis = (int)n->attrs.axis;
    return axis < 0 && rank > 0 ? axis + rank : axis;
}

/* Successive merges leave chains of Splits: merging a third MatMul into
 * an already merged pair splits the result, then splits a part again.  A
 * Split whose input is one output of another Split along the same axis,
 * used by nothing else, joins that Split, so each chain becomes one Split
 * (one copy of the data instead of one per link).  The emptied Split gets
 * fresh outputs that nothing reads and goes as dead code.  Returns how
 * many Splits were merged, or -1 when out of memory. */
static int merge_split_chains(xf_graph *g)
{
    int merged = 0;
    const int cap = (int)(sizeof g->nodes[0].attrs.split / sizeof g->nodes[0].attrs.split[0]);
    for (int j = 0; j < g->n_nodes; j++) {
        if (!attr_split(&g->nodes[j]))
            continue;
        int v = g->nodes[j].inputs[0], p = g->values[v].producer;
        if (p < 0 || !attr_split(&g->nodes[p]) || xf_graph_count_uses(g, v) != 1)
            continue;
        xf_node *a = &g->nodes[p], *b = &g->nodes[j];
        int na = a->n_outputs, nb = b->n_outputs, k = g->values[v].producer_out;
        if (split_axis(g, a) != split_axis(g, b) || split_axis(g, a) < 0 || na - 1 + nb > cap)
            continue;
        int *outs = malloc(sizeof(int) * (size_t)(na - 1 + nb));
        int *fresh = malloc(sizeof(int) * (size_t)nb);
        if (!outs || !fresh) {
            free(outs);
            free(fresh);
            return -1;
        }
        for (int i = 0; i < nb; i++) {
            xf_shape shape = g->values[g->nodes[j].outputs[i]].shape; /* adding a value may move values */
            fresh[i] = xf_graph_add_value(g, NULL, g->values[g->nodes[j].outputs[i]].dtype, &shape);
            if (fresh[i] < 0) {
                free(outs);
                free(fresh);
                return -1;
            }
        }
        int64_t sizes[64];
        int n = 0;
        for (int i = 0; i < na; i++) {
            if (i != k) {
                sizes[n] = a->attrs.split[i];
                outs[n++] = a->outputs[i];
                continue;
            }
            for (int t = 0; t < nb; t++) {
                sizes[n] = b->attrs.split[t];
                outs[n++] = b->outputs[t];
            }
        }
        memcpy(a->attrs.split, sizes, sizeof(int64_t) * (size_t)n);
        a->attrs.n_split = n;
        free(a->outputs);
        a->outputs = outs;
        a->n_outputs = n;
        free(b->outputs);
        b->outputs = fresh;
        /* the parts moved to a: their producer is a now */
        for (int i = 0; i < n; i++) {
            g->values[outs[i]].producer = p;
            g->values[outs[i]].producer_out = i;
        }
        for (int i = 0; i < nb; i++) {
            g->values[fresh[i]].producer = j;
            g->values[fresh[i]].producer_out = i;
        }
        merged++;
    }
    return merged;
}

xf_status xf_rewrite_finalize(xf_graph *g, int64_t opset, xf_canon_stats *st, xf_error *err)
{
    if (merge_split_chains(g) < 0)
        return xf_error_set(err, XF_ERR_NOMEM, "out of memory");
    /* Rules state Split sizes as the attribute (one form for every opset);
     * from opset 13 on ONNX takes them as an input only.  Likewise Pad's
     * pads (kernel enlarge), an input from opset 11 on: a padded constant
     * kernel is folded below, this is for the rest. */
    for (int i = 0; i < g->n_nodes; i++) {
        xf_node *n = &g->nodes[i];
        xf_status s = XF_OK;
        if (opset >= 13 && n->op == XF_OP_SPLIT && n->attrs.n_split > 0 && n->n_inputs == 1) {
            s = attr_to_input(g, n, n->attrs.split, n->attrs.n_split, err);
            memset(n->attrs.split, 0, sizeof n->attrs.split);
            n->attrs.n_split = 0;
        } else if (opset >= 11 && n->op == XF_OP_PAD && n->attrs.has_pads && n->n_inputs == 1) {
            s = attr_to_input(g, n, n->attrs.pad_pads, n->attrs.n_pads, err);
            n->attrs.has_pads = false;
            n->attrs.n_pads = 0;
        }
        if (s != XF_OK)
            return s;
    }
    /* which If nodes are inlined was decided before the search (a kept
     * one's condition may depend on a symbolic size) */
    static const xf_canon_options keep_if = {.keep_if = true};
    xf_canon_stats local = {0};
    return xf_canonicalize_with(g, opset, xf_runtime_eval_node, &keep_if, st ? st : &local, err);
}
