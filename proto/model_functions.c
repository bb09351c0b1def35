/* Calls of model-local functions (ModelProto.functions, as PyTorch writes
 * for export_modules_as_functions) replaced by the functions' bodies before
 * the graph is imported, as ONNX Runtime inlines them, so that the ops
 * inside run and are optimized like the rest of the graph.
 *
 * A call is inlined when its function is the only one of its domain and
 * name (newer ONNX tells overloads apart by a field this build's onnx.proto
 * may not have), imports each opset at the version the model imports it
 * at, holds no subgraph attribute, and every attribute its body refers to
 * is given by the call or is absent from a function that declares no
 * defaults this build could miss.  Other calls stay opaque nodes, written
 * back as they came.  The body's own values are named
 * CALL/FUNCTION/NAME (CALL: the calling node's name, else its first output's
 * name; an unnamed body node is named #INDEX), its formal inputs and
 * outputs are the call's; calls inside a body
 * are inlined in turn, at most XFP_MAX_INLINE_DEPTH deep and
 * XFP_MAX_INLINED_NODES nodes in all (a function calling itself several
 * times would grow without end): calls past either stay opaque. */
#include "proto_internal.h"

#include <stdio.h>
#include <string.h>

enum { XFP_MAX_INLINE_DEPTH = 16, XFP_MAX_INLINED_NODES = 1 << 16 };

typedef struct inliner {
    const Onnx__ModelProto *mp;
    xfp_arena *arena;
    xfp_ptr_list out; /* the nodes of the inlined graph */
    int inlined;
    size_t made; /* nodes made by inlining */
    xf_error *err;
} inliner;

/* The function np calls, when exactly one has its domain and name. */
static const Onnx__FunctionProto *called(const Onnx__ModelProto *mp, const Onnx__NodeProto *np)
{
    const Onnx__FunctionProto *found = NULL;
    for (size_t i = 0; i < mp->n_functions; i++) {
        const Onnx__FunctionProto *f = mp->functions[i];
        if (f->name && np->op_type && !strcmp(f->name, np->op_type) &&
            xfp_same_domain(f->domain, np->domain)) {
            if (found)
                return NULL;
            found = f;
        }
    }
    return found;
}

static bool inlinable(const inliner *in, const Onnx__FunctionProto *f, const Onnx__NodeProto *np)
{
    if (np->n_input > f->n_input || np->n_output > f->n_output || in->made + f->n_node > XFP_MAX_INLINED_NODES)
        return false;
    for (size_t i = 0; i < f->n_opset_import; i++) {
        const Onnx__OperatorSetIdProto *o = f->opset_import[i];
        if (xfp_model_opset(in->mp, o->domain) != (o->has_version ? o->version : 0))
            return false;
    }
    for (size_t k = 0; k < f->n_node; k++) {
        const Onnx__NodeProto *bn = f->node[k];
        for (size_t j = 0; j < bn->n_attribute; j++) {
            const Onnx__AttributeProto *at = bn->attribute[j];
            if (at->g || at->n_graphs)
                return false;
            /* a reference the call does not answer takes the function's
             * default, which only a function without newer fields has not */
            if (at->ref_attr_name && at->ref_attr_name[0] && !xfp_node_attr(np, at->ref_attr_name) &&
                f->base.n_unknown_fields)
                return false;
        }
    }
    return true;
}

/* The call's name for a body value: its actual input or output for a
 * formal one, else prefix/name; "" stays "" (an omitted input). */
static char *body_name(inliner *in, const Onnx__FunctionProto *f, const Onnx__NodeProto *np, const char *prefix,
                    const char *name)
{
    if (!name || !name[0])
        return "";
    for (size_t i = 0; i < f->n_input; i++)
        if (!strcmp(f->input[i], name))
            return i < np->n_input ? np->input[i] : "";
    for (size_t k = 0; k < f->n_output; k++)
        if (!strcmp(f->output[k], name) && k < np->n_output && np->output[k][0])
            return np->output[k];
    size_t len = strlen(prefix) + strlen(name) + 2;
    char *s = xfp_alloc(in->arena, len);
    if (s)
        snprintf(s, len, "%s/%s", prefix, name);
    return s;
}

static xf_status expand(inliner *in, Onnx__NodeProto *const *nodes, size_t n, int depth);

/* The body of f for the call np, each node renamed, then expanded. */
static xf_status inline_call(inliner *in, const Onnx__FunctionProto *f, const Onnx__NodeProto *np, int depth)
{
    const char *site = np->name && np->name[0] ? np->name : np->n_output ? np->output[0] : "";
    size_t plen = strlen(site) + strlen(f->name) + 2;
    char *prefix = xfp_alloc(in->arena, plen);
    Onnx__NodeProto **body = xfp_alloc(in->arena, sizeof *body * (f->n_node + 1));
    if (!prefix || !body)
        return xf_error_set(in->err, XF_ERR_NOMEM, "out of memory");
    snprintf(prefix, plen, "%s/%s", site, f->name);
    for (size_t k = 0; k < f->n_node; k++) {
        const Onnx__NodeProto *bn = f->node[k];
        Onnx__NodeProto *c = xfp_alloc(in->arena, sizeof *c);
        char **ins = xfp_alloc(in->arena, sizeof *ins * (bn->n_input + 1));
        char **outs = xfp_alloc(in->arena, sizeof *outs * (bn->n_output + 1));
        Onnx__AttributeProto **ats = xfp_alloc(in->arena, sizeof *ats * (bn->n_attribute + 1));
        if (!c || !ins || !outs || !ats)
            return xf_error_set(in->err, XF_ERR_NOMEM, "out of memory");
        *c = *bn;
        c->input = ins;
        c->output = outs;
        c->attribute = ats;
        c->n_attribute = 0;
        char unnamed[64]; /* an unnamed body node: its place, so that calls in a body get names of their own */
        snprintf(unnamed, sizeof unnamed, "#%zu", k);
        c->name = body_name(in, f, np, prefix, bn->name && bn->name[0] ? bn->name : unnamed);
        for (size_t i = 0; i < bn->n_input; i++)
            ins[i] = body_name(in, f, np, prefix, bn->input[i]);
        for (size_t i = 0; i < bn->n_output; i++)
            outs[i] = body_name(in, f, np, prefix, bn->output[i]);
        bool named = c->name != NULL;
        for (size_t i = 0; i < bn->n_input; i++)
            named = named && ins[i];
        for (size_t i = 0; i < bn->n_output; i++)
            named = named && outs[i];
        if (!named)
            return xf_error_set(in->err, XF_ERR_NOMEM, "out of memory");
        for (size_t j = 0; j < bn->n_attribute; j++) {
            const Onnx__AttributeProto *at = bn->attribute[j];
            if (!at->ref_attr_name || !at->ref_attr_name[0]) {
                ats[c->n_attribute++] = bn->attribute[j];
                continue;
            }
            const Onnx__AttributeProto *given = xfp_node_attr(np, at->ref_attr_name);
            if (!given)
                continue; /* neither given nor defaulted: absent */
            Onnx__AttributeProto *a = xfp_alloc(in->arena, sizeof *a);
            if (!a)
                return xf_error_set(in->err, XF_ERR_NOMEM, "out of memory");
            *a = *given;
            a->name = at->name;
            ats[c->n_attribute++] = a;
        }
        body[k] = c;
    }
    in->inlined++;
    in->made += f->n_node;
    return expand(in, body, f->n_node, depth + 1);
}

static xf_status expand(inliner *in, Onnx__NodeProto *const *nodes, size_t n, int depth)
{
    for (size_t i = 0; i < n; i++) {
        const Onnx__FunctionProto *f = depth < XFP_MAX_INLINE_DEPTH ? called(in->mp, nodes[i]) : NULL;
        xf_status s = f && inlinable(in, f, nodes[i]) ? inline_call(in, f, nodes[i], depth)
                      : xfp_list_push(&in->out, nodes[i])
                          ? XF_OK
                          : xf_error_set(in->err, XF_ERR_NOMEM, "out of memory");
        if (s != XF_OK)
            return s;
    }
    return XF_OK;
}

xf_status xfp_inline_functions(const Onnx__ModelProto *mp, xfp_arena *arena, const Onnx__GraphProto **graph,
                               int *inlined, xf_error *err)
{
    *graph = mp->graph;
    *inlined = 0;
    if (!mp->n_functions)
        return XF_OK;
    inliner in = {.mp = mp, .arena = arena, .err = err};
    xf_status s = expand(&in, mp->graph->node, mp->graph->n_node, 0);
    Onnx__GraphProto *g = s == XF_OK && in.inlined ? xfp_alloc(arena, sizeof *g) : NULL;
    Onnx__NodeProto **nodes = g ? xfp_alloc(arena, sizeof *nodes * (in.out.n + 1)) : NULL;
    if (s == XF_OK && in.inlined && !nodes)
        s = xf_error_set(err, XF_ERR_NOMEM, "out of memory");
    if (nodes) {
        *g = *mp->graph;
        memcpy(nodes, in.out.items, sizeof *nodes * in.out.n);
        g->node = nodes;
        g->n_node = in.out.n;
        *graph = g;
        *inlined = in.inlined;
    }
    xfp_list_free(&in.out);
    return s;
}
