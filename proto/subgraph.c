/* Outer-scope names of subgraph attributes (If/Loop/Scan bodies).
 *
 * A body may use values of the enclosing graph by name without listing them
 * as inputs.  Import makes those uses visible in the IR by appending the
 * outer values to the opaque node's inputs, after the node's own inputs (the
 * stored NodeProto says how many of those there are): dead-node removal then
 * keeps their producers, toposort orders them before the node, and export
 * can check that each name the body refers to still exists. */
#include "proto_internal.h"

#include <stdlib.h>

/* Deeper nesting than this is refused rather than recursed into. */
enum { MAX_SUBGRAPH_DEPTH = 64 };

typedef struct scope {
    xfp_name_map defined;
    const struct scope *parent;
} scope;

typedef struct collector {
    xfp_name_map seen;
    xfp_ptr_list names;
    xf_error *err;
} collector;

static bool is_defined(const scope *s, const char *name)
{
    for (; s; s = s->parent)
        if (xfp_map_get(&s->defined, name) >= 0)
            return true;
    return false;
}

static bool define(scope *s, const char *name)
{
    return !name || !name[0] || xfp_map_put(&s->defined, name, 1);
}

static xf_status use(collector *c, const scope *s, const char *name)
{
    if (!name || !name[0] || is_defined(s, name) || xfp_map_get(&c->seen, name) >= 0)
        return XF_OK;
    if (!xfp_map_put(&c->seen, name, 1) || !xfp_list_push(&c->names, (void *)name))
        return xf_error_set(c->err, XF_ERR_NOMEM, "out of memory");
    return XF_OK;
}

static xf_status scan_graph(const Onnx__GraphProto *g, const scope *parent, int depth, collector *c);

static xf_status scan_attributes(const Onnx__NodeProto *np, const scope *s, int depth, collector *c)
{
    xf_status st = XF_OK;
    for (size_t i = 0; i < np->n_attribute && st == XF_OK; i++) {
        const Onnx__AttributeProto *a = np->attribute[i];
        if (a->g)
            st = scan_graph(a->g, s, depth + 1, c);
        for (size_t k = 0; k < a->n_graphs && st == XF_OK; k++)
            st = scan_graph(a->graphs[k], s, depth + 1, c);
    }
    return st;
}

static xf_status scan_graph(const Onnx__GraphProto *g, const scope *parent, int depth, collector *c)
{
    if (depth > MAX_SUBGRAPH_DEPTH)
        return xf_error_set(c->err, XF_ERR_UNSUPPORTED, "subgraphs are nested more than %d deep",
                            MAX_SUBGRAPH_DEPTH);
    scope s = {{0}, parent};
    bool ok = true;
    for (size_t i = 0; i < g->n_input; i++)
        ok &= define(&s, g->input[i]->name);
    for (size_t i = 0; i < g->n_initializer; i++)
        ok &= define(&s, g->initializer[i]->name);
    for (size_t i = 0; i < g->n_sparse_initializer; i++)
        ok &= !g->sparse_initializer[i]->values || define(&s, g->sparse_initializer[i]->values->name);
    for (size_t i = 0; i < g->n_node; i++)
        for (size_t k = 0; k < g->node[i]->n_output; k++)
            ok &= define(&s, g->node[i]->output[k]);
    xf_status st = ok ? XF_OK : xf_error_set(c->err, XF_ERR_NOMEM, "out of memory");
    for (size_t i = 0; i < g->n_node && st == XF_OK; i++) {
        const Onnx__NodeProto *np = g->node[i];
        for (size_t k = 0; k < np->n_input && st == XF_OK; k++)
            st = use(c, &s, np->input[k]);
        if (st == XF_OK)
            st = scan_attributes(np, &s, depth, c);
    }
    for (size_t i = 0; i < g->n_output && st == XF_OK; i++)
        st = use(c, &s, g->output[i]->name);
    xfp_map_free(&s.defined);
    return st;
}

xf_status xfp_outer_names(const Onnx__NodeProto *np, const char ***names, size_t *n, xf_error *err)
{
    collector c = {.err = err};
    xf_status st = scan_attributes(np, NULL, 0, &c);
    xfp_map_free(&c.seen);
    if (st != XF_OK) {
        xfp_list_free(&c.names);
        *names = NULL;
        *n = 0;
        return st;
    }
    *names = (const char **)c.names.items;
    *n = c.names.n;
    return XF_OK;
}
