/* Nodes and initializers built in an arena for the rewrites the import
 * makes before it reads a graph (model_nchwc.c, model_nhwc.c), named so
 * that no name of the graph is taken twice. */
#include "proto_internal.h"

#include <stdio.h>
#include <string.h>

const Onnx__AttributeProto *xfp_node_attr(const Onnx__NodeProto *np, const char *name)
{
    for (size_t i = 0; i < np->n_attribute; i++)
        if (np->attribute[i]->name && !strcmp(np->attribute[i]->name, name))
            return np->attribute[i];
    return NULL;
}

int64_t xfp_node_int(const Onnx__NodeProto *np, const char *name, int64_t dflt)
{
    const Onnx__AttributeProto *at = xfp_node_attr(np, name);
    return at && at->type == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT ? at->i : dflt;
}

bool xfp_builder_init(xfp_builder *b, xfp_arena *a, const Onnx__GraphProto *gp)
{
    *b = (xfp_builder){.a = a};
    bool ok = true;
    for (size_t i = 0; ok && i < gp->n_initializer; i++)
        ok = !gp->initializer[i]->name || xfp_map_put(&b->names, gp->initializer[i]->name, 1);
    for (size_t i = 0; ok && i < gp->n_input; i++)
        ok = !gp->input[i]->name || xfp_map_put(&b->names, gp->input[i]->name, 1);
    for (size_t k = 0; ok && k < gp->n_node; k++) {
        const Onnx__NodeProto *np = gp->node[k];
        ok = !np->name || xfp_map_put(&b->names, np->name, 1);
        for (size_t i = 0; ok && i < np->n_output; i++)
            ok = !np->output[i] || xfp_map_put(&b->names, np->output[i], 1);
    }
    return ok;
}

void xfp_builder_free(xfp_builder *b)
{
    xfp_map_free(&b->names);
    xfp_list_free(&b->nodes);
    xfp_list_free(&b->inits);
}

char *xfp_fresh_name(xfp_builder *b, const char *base, const char *suffix)
{
    size_t n = strlen(base) + strlen(suffix) + 24;
    char *s = xfp_alloc(b->a, n);
    for (int k = 0; s; k++) {
        if (k)
            snprintf(s, n, "%s%s_%d", base, suffix, k);
        else
            snprintf(s, n, "%s%s", base, suffix);
        if (xfp_map_get(&b->names, s) < 0)
            return xfp_map_put(&b->names, s, 1) ? s : NULL;
    }
    return NULL;
}

static Onnx__AttributeProto *new_attr(xfp_builder *b, const char *name, Onnx__AttributeProto__AttributeType type)
{
    Onnx__AttributeProto *at = xfp_alloc(b->a, sizeof *at);
    if (at) {
        onnx__attribute_proto__init(at);
        at->name = (char *)name;
        at->type = type;
        at->has_type = true;
    }
    return at;
}

Onnx__AttributeProto *xfp_new_attr_string(xfp_builder *b, const char *name, const char *v)
{
    Onnx__AttributeProto *at = new_attr(b, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING);
    if (at) {
        at->s.data = (uint8_t *)v;
        at->s.len = strlen(v);
        at->has_s = true;
    }
    return at;
}

Onnx__AttributeProto *xfp_new_attr_float(xfp_builder *b, const char *name, float v)
{
    Onnx__AttributeProto *at = new_attr(b, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT);
    if (at) {
        at->f = v;
        at->has_f = true;
    }
    return at;
}

Onnx__AttributeProto *xfp_new_attr_ints(xfp_builder *b, const char *name, const int64_t *v, size_t n)
{
    Onnx__AttributeProto *at = new_attr(b, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS);
    int64_t *c = at ? xfp_alloc(b->a, sizeof *c * (n + 1)) : NULL;
    if (!c)
        return NULL;
    memcpy(c, v, sizeof *c * n);
    at->ints = c;
    at->n_ints = n;
    return at;
}

Onnx__NodeProto *xfp_emit(xfp_builder *b, const char *op, const char *name, const char *const *ins, size_t n_in,
                          const char *out, Onnx__AttributeProto *const *ats, size_t n_at)
{
    Onnx__NodeProto *np = xfp_alloc(b->a, sizeof *np);
    char **in = xfp_alloc(b->a, sizeof *in * (n_in + 1));
    char **outs = xfp_alloc(b->a, sizeof *outs);
    Onnx__AttributeProto **at = xfp_alloc(b->a, sizeof *at * (n_at + 1));
    if (!np || !in || !outs || !at || !name || !out)
        return NULL;
    onnx__node_proto__init(np);
    np->op_type = (char *)op;
    np->name = (char *)name;
    np->domain = (char *)"";
    for (size_t i = 0; i < n_in; i++)
        if (!(in[i] = (char *)ins[i]))
            return NULL;
    np->input = in;
    np->n_input = n_in;
    outs[0] = (char *)out;
    np->output = outs;
    np->n_output = 1;
    for (size_t i = 0; i < n_at; i++)
        if (!(at[i] = ats[i]))
            return NULL;
    np->attribute = at;
    np->n_attribute = n_at;
    return xfp_list_push(&b->nodes, np) ? np : NULL;
}

/* Typed fields, not raw_data: the importer frees the raw_data it has read. */
static const char *constant(xfp_builder *b, const char *base, const char *suffix, int32_t dtype, const int64_t *dims,
                            size_t ndim, const void *data, size_t nbytes)
{
    Onnx__TensorProto *tp = xfp_alloc(b->a, sizeof *tp);
    int64_t *d = xfp_alloc(b->a, sizeof *d * (ndim + 1));
    uint8_t *bytes = xfp_alloc(b->a, nbytes + sizeof(int64_t));
    char *name = xfp_fresh_name(b, base, suffix);
    if (!tp || !d || !bytes || !name)
        return NULL;
    onnx__tensor_proto__init(tp);
    tp->name = name;
    tp->data_type = dtype;
    tp->has_data_type = true;
    memcpy(d, dims, sizeof *d * ndim);
    tp->dims = d;
    tp->n_dims = ndim;
    memcpy(bytes, data, nbytes);
    if (dtype == ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT) {
        tp->float_data = (float *)bytes;
        tp->n_float_data = nbytes / sizeof(float);
    } else {
        tp->int64_data = (int64_t *)bytes;
        tp->n_int64_data = nbytes / sizeof(int64_t);
    }
    return xfp_list_push(&b->inits, tp) ? name : NULL;
}

const char *xfp_ints_constant(xfp_builder *b, const char *base, const char *suffix, const int64_t *v, size_t n)
{
    int64_t dims[1] = {(int64_t)n};
    return constant(b, base, suffix, ONNX__TENSOR_PROTO__DATA_TYPE__INT64, dims, 1, v, sizeof *v * n);
}

const char *xfp_floats_constant(xfp_builder *b, const char *base, const char *suffix, const float *v, size_t n,
                                size_t ndim)
{
    int64_t dims[1] = {(int64_t)n};
    return constant(b, base, suffix, ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, dims, ndim, v, sizeof *v * n);
}

const Onnx__GraphProto *xfp_builder_graph(xfp_builder *b, const Onnx__GraphProto *gp,
                                          Onnx__TensorProto *const *replaced)
{
    Onnx__GraphProto *g = xfp_alloc(b->a, sizeof *g);
    size_t n_init = gp->n_initializer + b->inits.n;
    Onnx__TensorProto **inits = xfp_alloc(b->a, sizeof *inits * (n_init + 1));
    Onnx__NodeProto **nodes = xfp_alloc(b->a, sizeof *nodes * (b->nodes.n + 1));
    if (!g || !inits || !nodes)
        return NULL;
    *g = *gp;
    for (size_t i = 0; i < gp->n_initializer; i++)
        inits[i] = replaced && replaced[i] ? replaced[i] : gp->initializer[i];
    if (b->inits.n)
        memcpy(inits + gp->n_initializer, b->inits.items, sizeof *inits * b->inits.n);
    if (b->nodes.n)
        memcpy(nodes, b->nodes.items, sizeof *nodes * b->nodes.n);
    g->initializer = inits;
    g->n_initializer = n_init;
    g->node = nodes;
    g->n_node = b->nodes.n;
    return g;
}
