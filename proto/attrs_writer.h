/* The writer of a node's ONNX attributes (attrs_export.c and the files it
 * hands op families to): attributes appended to a list in the arena; a
 * failed allocation sets oom, which the export reports once. */
#ifndef XF_ATTRS_WRITER_H
#define XF_ATTRS_WRITER_H

#include "proto_internal.h"

#include <string.h>

enum { MAX_NODE_ATTRS = 16 };

typedef struct writer {
    xfp_arena *arena;
    Onnx__AttributeProto **list;
    size_t n;
    bool oom;
} writer;

static inline Onnx__AttributeProto *add(writer *w, const char *name, Onnx__AttributeProto__AttributeType type)
{
    Onnx__AttributeProto *at = xfp_alloc(w->arena, sizeof *at);
    if (!at) {
        w->oom = true;
        return NULL;
    }
    onnx__attribute_proto__init(at);
    at->name = (char *)name;
    at->has_type = 1;
    at->type = type;
    w->list[w->n++] = at;
    return at;
}

static inline void add_int(writer *w, const char *name, int64_t v)
{
    Onnx__AttributeProto *at = add(w, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT);
    if (at) {
        at->has_i = 1;
        at->i = v;
    }
}

static inline void add_float(writer *w, const char *name, float v)
{
    Onnx__AttributeProto *at = add(w, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT);
    if (at) {
        at->has_f = 1;
        at->f = v;
    }
}

static inline void add_ints(writer *w, const char *name, const int64_t *v, int n)
{
    Onnx__AttributeProto *at = add(w, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS);
    if (!at)
        return;
    at->n_ints = (size_t)n;
    at->ints = (int64_t *)v; /* points into the node, which outlives the packing */
}

static inline void add_string(writer *w, const char *name, const char *v)
{
    Onnx__AttributeProto *at = add(w, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING);
    if (at) {
        at->has_s = 1;
        at->s.data = (uint8_t *)v;
        at->s.len = strlen(v);
    }
}

static inline void add_type(writer *w, const char *name, Onnx__TypeProto *tp)
{
    Onnx__AttributeProto *at = tp ? add(w, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TYPE_PROTO) : NULL;
    if (at)
        at->tp = tp;
    else
        w->oom = true;
}

/* A list of n floats copied into the arena. */
static inline void add_floats(writer *w, const char *name, const float *v, int n)
{
    Onnx__AttributeProto *at = add(w, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS);
    float *copy = at ? xfp_alloc(w->arena, sizeof *copy * (size_t)(n > 0 ? n : 1)) : NULL;
    if (!copy) {
        w->oom = true;
        return;
    }
    memcpy(copy, v, sizeof *copy * (size_t)n);
    at->n_floats = (size_t)n;
    at->floats = copy;
}

/* The attention family (attrs_export_attn.c): ONNX Runtime's attention
 * ops, ONNX's opset-23 Attention, RMSNormalization and RotaryEmbedding,
 * opset 27's CausalConvWithState and LinearAttention, and the LLM contrib
 * ops; d holds the op's defaults. */
void xfp_write_attn(writer *w, const xf_node *n, const xf_attrs *d);
xf_status xfp_write_opset23(writer *w, const xf_node *n, const xf_attrs *d, int64_t opset, xf_error *err);
xf_status xfp_write_state(writer *w, const xf_node *n, const xf_attrs *d, int64_t opset, xf_error *err);
void xfp_write_llm(writer *w, const xf_node *n, const xf_attrs *d);
/* The random ops (attrs_random.c): what differs from the defaults, and
 * RandomNormal's and RandomUniform's required shape. */
void xfp_write_random(writer *w, const xf_node *n, const xf_attrs *d);
/* The experimental ops of opsets 1 to 9 (attrs_legacy.c). */
void xfp_write_legacy(writer *w, const xf_node *n, const xf_attrs *d);
/* The attributes of opsets before 7 that n's semantics need there
 * (broadcast, is_test). */
void xfp_write_before7(writer *w, const xf_node *n);

#endif
