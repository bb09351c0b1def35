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
#include <string.h>

/* Deeper nesting than this is refused rather than recursed into. */
enum { MAX_SUBGRAPH_DEPTH = 64 };

typedef struct scope {
    xfp_name_map defined;
    const struct scope *parent;
} scope;

typedef struct collector {
    xfp_name_map seen;
    xfp_ptr_list names;
    xfp_ptr_list owned; /* names copied out of the node (Gradient's), freed with it */
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

/* Gradient (ai.onnx.preview.training) names values of its graph in
 * attributes: xs and zs, where the subgraph it differentiates starts, and
 * y, where it ends. */
bool xfp_is_gradient(const Onnx__NodeProto *np)
{
    return np->op_type && np->domain && strcmp(np->op_type, "Gradient") == 0 &&
           strcmp(np->domain, "ai.onnx.preview.training") == 0;
}

static xf_status gradient_use(collector *c, const ProtobufCBinaryData *b)
{
    char *name = strndup((const char *)b->data, b->len);
    if (!name || !xfp_list_push(&c->owned, name)) {
        free(name);
        return xf_error_set(c->err, XF_ERR_NOMEM, "out of memory");
    }
    return use(c, NULL, name);
}

/* In the order the runtime finds them again (gradient.c): xs, zs, y. */
static xf_status gradient_names(const Onnx__NodeProto *np, collector *c)
{
    static const char *const order[] = {"xs", "zs", "y"};
    xf_status st = XF_OK;
    for (int o = 0; o < 3; o++)
        for (size_t i = 0; i < np->n_attribute && st == XF_OK; i++) {
            const Onnx__AttributeProto *a = np->attribute[i];
            if (!a->name || strcmp(a->name, order[o]) != 0)
                continue;
            if (o == 2 && a->s.data)
                st = gradient_use(c, &a->s);
            for (size_t k = 0; o < 2 && k < a->n_strings && st == XF_OK; k++)
                st = gradient_use(c, &a->strings[k]);
        }
    return st;
}

xf_status xfp_outer_names(const Onnx__NodeProto *np, const char ***names, size_t *n, xf_error *err)
{
    collector c = {.err = err};
    xf_status st = scan_attributes(np, NULL, 0, &c);
    if (st == XF_OK && xfp_is_gradient(np))
        st = gradient_names(np, &c);
    xfp_map_free(&c.seen);
    /* one block: the pointers, then the names they point to */
    size_t bytes = (c.names.n + 1) * sizeof(char *);
    for (size_t i = 0; i < c.names.n && st == XF_OK; i++)
        bytes += strlen(c.names.items[i]) + 1;
    char **block = st == XF_OK ? malloc(bytes) : NULL;
    if (st == XF_OK && !block)
        st = xf_error_set(err, XF_ERR_NOMEM, "out of memory");
    char *at = block ? (char *)(block + c.names.n + 1) : NULL;
    for (size_t i = 0; block && i < c.names.n; i++) {
        size_t len = strlen(c.names.items[i]) + 1;
        block[i] = memcpy(at, c.names.items[i], len);
        at += len;
    }
    *n = st == XF_OK ? c.names.n : 0;
    for (size_t i = 0; i < c.owned.n; i++)
        free(c.owned.items[i]);
    xfp_list_free(&c.owned);
    xfp_list_free(&c.names);
    *names = (const char **)block;
    return st;
}
