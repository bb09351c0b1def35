/* Rewriting: one match of a rule turned into a new graph.
 *
 * The input graph is cloned (structure only: weights are shared), the
 * replacement's nodes are appended with their bound attributes, uses of
 * each pattern output move to the replacement output, and the pattern nodes
 * nothing uses any more are removed.  Only the new nodes need shape
 * inference: every other value keeps its shape because each replacement
 * output must have the shape of the pattern output it replaces. */
#include "opt_internal.h"
#include "xf_runtime.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* Uses of v by nodes still kept, plus graph outputs. */
static int live_uses(const xf_graph *g, int v, const bool *keep)
{
    int n = 0;
    for (int i = 0; i < g->n_nodes; i++)
        for (int k = 0; keep[i] && k < g->nodes[i].n_inputs; k++)
            n += g->nodes[i].inputs[k] == v;
    for (int k = 0; k < g->n_outputs; k++)
        n += g->outputs[k] == v;
    return n;
}

static bool is_graph_output(const xf_graph *g, int v)
{
    for (int k = 0; k < g->n_outputs; k++)
        if (g->outputs[k] == v)
            return true;
    return false;
}

/* Adds the replacement's nodes to c; vmap[] maps replacement value ids to
 * c's, *first is the index of the first new node. */
static xf_status add_replacement(const xf_rule *r, const xf_match *m, const xf_graph *g, xf_graph *c, int *vmap,
                                 int *first_node, xf_error *err)
{
    const xf_graph *q = r->replacement;
    xf_shape shapes[XF_MATCH_MAX_INPUTS];
    bool bound[XF_MATCH_MAX_PARAMS];
    for (int k = 0; k < m->n_inputs; k++)
        shapes[k] = g->values[m->input[k]].shape;
    for (int p = 0; p < XF_MATCH_MAX_PARAMS; p++)
        bound[p] = p < m->n_params;
    for (int v = 0; v < q->n_values; v++)
        vmap[v] = -1;
    for (int k = 0; k < q->n_inputs; k++)
        vmap[q->inputs[k]] = m->input[k];
    for (int v = 0; v < q->n_values; v++) {
        if (vmap[v] >= 0)
            continue;
        if (opt_is_const(q, v))
            vmap[v] = xf_graph_add_initializer(c, NULL, q->values[v].init);
        else if (q->values[v].producer >= 0)
            vmap[v] = xf_graph_add_value(c, NULL, q->values[v].dtype, NULL);
        else
            continue;
        if (vmap[v] < 0)
            return xf_error_set(err, XF_ERR_NOMEM, "out of memory");
    }
    int first = c->n_nodes;
    for (int i = 0; i < q->n_nodes; i++) {
        const xf_node *rn = &q->nodes[i];
        int in[64], out[16];
        if (rn->n_inputs > 64 || rn->n_outputs > 16)
            return xf_error_set(err, XF_ERR_INVALID, "rule %s: replacement node %d is too wide", r->name, i);
        for (int k = 0; k < rn->n_inputs; k++)
            in[k] = rn->inputs[k] >= 0 ? vmap[rn->inputs[k]] : -1;
        for (int k = 0; k < rn->n_outputs; k++)
            out[k] = rn->outputs[k] >= 0 ? vmap[rn->outputs[k]] : -1;
        char name[64];
        snprintf(name, sizeof name, "xf_opt_%" PRId64, c->name_counter++);
        int ni = xf_graph_add_node(c, rn->op, name, rn->n_inputs, in, rn->n_outputs, out);
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
            !xf_attr_field_set(&c->nodes[first + bd->node].attrs, bd->field, bd->index, v))
            return xf_error_set(err, XF_ERR_INVALID, "rule %s: %s[%d] of replacement node %d cannot be evaluated "
                                "here", r->name, xf_attr_field_name(bd->field), bd->index, bd->node);
    }
    *first_node = first;
    return XF_OK;
}

xf_status xf_rewrite_apply(const xf_rule_set *rs, const xf_graph *g, int64_t opset, const xf_match *m,
                           xf_graph **out, xf_error *err)
{
    *out = NULL;
    const rule_plan *p = &rs->plans[m->rule];
    const xf_rule *r = p->rule;
    const xf_graph *q = r->replacement;
    xf_graph *c = xf_graph_clone(g);
    int *vmap = malloc(sizeof(int) * (size_t)(q->n_values + 1));
    bool *keep = NULL;
    xf_status st = XF_OK;
    if (!c || !vmap) {
        st = xf_error_set(err, XF_ERR_NOMEM, "out of memory");
        goto fail;
    }
    int first = 0;
    if ((st = add_replacement(r, m, g, c, vmap, &first, err)) != XF_OK)
        goto fail;
    for (int i = first; i < c->n_nodes; i++)
        if ((st = xf_node_infer_shape(c, i, opset, NULL, err)) != XF_OK) {
            xf_error_prefix(err, "rule %s", r->name);
            st = XF_ERR_INVALID;
            goto fail;
        }
    for (int j = 0; j < p->n_outputs; j++) {
        int pv = g->nodes[m->node[p->out[j].idx]].outputs[p->out[j].out];
        int rv = vmap[q->outputs[j]];
        const xf_value *a = &c->values[pv], *b = &c->values[rv];
        if (a->dtype != b->dtype || !xf_shape_equal(&a->shape, &b->shape)) {
            char sa[96], sb[96];
            st = xf_error_set(err, XF_ERR_INVALID, "rule %s: output %d would change from %s %s to %s %s", r->name, j,
                              xf_dtype_name(a->dtype), xf_shape_str(&a->shape, sa, sizeof sa),
                              xf_dtype_name(b->dtype), xf_shape_str(&b->shape, sb, sizeof sb));
            goto fail;
        }
        if (is_graph_output(c, pv)) {
            /* Graph outputs keep their names: the replacement value must be
             * computed by a new node, which takes the name. */
            if (c->values[rv].producer < first || is_graph_output(c, rv)) {
                st = xf_error_set(err, XF_ERR_INVALID, "rule %s: graph output '%s' would become another value",
                                  r->name, a->name);
                goto fail;
            }
            char *name = c->values[pv].name;
            c->values[pv].name = c->values[rv].name;
            c->values[rv].name = name;
        }
        xf_graph_replace_uses(c, pv, rv);
    }
    keep = malloc(sizeof *keep * (size_t)c->n_nodes);
    if (!keep) {
        st = xf_error_set(err, XF_ERR_NOMEM, "out of memory");
        goto fail;
    }
    for (int i = 0; i < c->n_nodes; i++)
        keep[i] = true;
    /* Pattern nodes in reverse order: a node dies once its consumers have. */
    for (int i = p->n_nodes - 1; i >= 0; i--) {
        const xf_node *n = &c->nodes[m->node[i]];
        int uses = 0;
        for (int o = 0; o < n->n_outputs; o++)
            uses += n->outputs[o] >= 0 ? live_uses(c, n->outputs[o], keep) : 0;
        keep[m->node[i]] = uses > 0;
    }
    xf_graph_compact(c, keep);
    if ((st = xf_graph_toposort(c, err)) != XF_OK) {
        xf_error_prefix(err, "rule %s", r->name);
        st = XF_ERR_INVALID;
        goto fail;
    }
    free(keep);
    free(vmap);
    *out = c;
    return XF_OK;
fail:
    free(keep);
    free(vmap);
    xf_graph_free(c);
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

xf_status xf_rewrite_finalize(xf_graph *g, int64_t opset, xf_canon_stats *st, xf_error *err)
{
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
    xf_canon_stats local = {0};
    return xf_canonicalize(g, opset, xf_runtime_eval_node, st ? st : &local, err);
}
