/* ONNX Runtime's channels-last forms of quantized ops, which its CPU
 * provider writes into models saved at ORT_ENABLE_ALL (and which files of
 * the ONNX model zoo hold), replaced by standard ops between Transposes
 * before the graph is imported: com.microsoft's QLinearConv (the standard
 * op plus channels_last) and NhwcMaxPool, and QLinearAveragePool with
 * channels_last set.  ONNX Runtime writes such nodes between Transposes
 * of its own, which then meet the new ones and cancel in canonicalization
 * and in sessions.  A node whose rank is not known from its weights,
 * attributes or declared input (or an NhwcMaxPool below opset 12, whose
 * MaxPool takes no 8-bit integers) stays as written. */
#include "proto_internal.h"

#include <stdio.h>
#include <string.h>

#define MS "com.microsoft"

static bool in_ms(const Onnx__NodeProto *np) { return np->domain && !strcmp(np->domain, MS); }

static bool op_is(const Onnx__NodeProto *np, const char *op) { return np->op_type && !strcmp(np->op_type, op); }

static bool has(const char *s) { return s && s[0]; }

static bool channels_last(const Onnx__NodeProto *np) { return xfp_node_int(np, "channels_last", 0) != 0; }

/* Which nodes this file rewrites. */
static bool is_nhwc_form(const Onnx__NodeProto *np)
{
    if (!in_ms(np))
        return false;
    return op_is(np, "QLinearConv") || op_is(np, "NhwcMaxPool") ||
           (op_is(np, "QLinearAveragePool") && channels_last(np));
}

/* The rank of the node's data: its weight's (an initializer), its declared
 * input's, or its kernel's plus 2; -1 when none says. */
static int rank_of(const Onnx__GraphProto *gp, const Onnx__NodeProto *np)
{
    if (op_is(np, "QLinearConv") && np->n_input > 3)
        for (size_t i = 0; i < gp->n_initializer; i++)
            if (gp->initializer[i]->name && !strcmp(gp->initializer[i]->name, np->input[3]))
                return (int)gp->initializer[i]->n_dims;
    for (int pass = 0; pass < 2 && np->n_input; pass++) {
        size_t n = pass == 0 ? gp->n_input : gp->n_value_info;
        Onnx__ValueInfoProto **vis = pass == 0 ? gp->input : gp->value_info;
        for (size_t i = 0; i < n; i++)
            if (vis[i]->name && !strcmp(vis[i]->name, np->input[0]) && vis[i]->type && vis[i]->type->tensor_type &&
                vis[i]->type->tensor_type->shape)
                return (int)vis[i]->type->tensor_type->shape->n_dim;
    }
    const Onnx__AttributeProto *k = xfp_node_attr(np, "kernel_shape");
    return k && k->type == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS ? (int)k->n_ints + 2 : -1;
}

/* np as op of domain between Transposes to and from channels-first; false
 * only when out of memory.  *kept tells a node left as written. */
static bool rewrite(xfp_builder *b, const Onnx__GraphProto *gp, const Onnx__NodeProto *np, int64_t opset, bool *kept)
{
    bool last = op_is(np, "NhwcMaxPool") || channels_last(np);
    int rank = last ? rank_of(gp, np) : 0;
    bool pool = op_is(np, "NhwcMaxPool");
    *kept = np->n_input < 1 || np->n_output != 1 || !has(np->input[0]) || !has(np->output[0]) ||
            (last && (rank < 3 || rank > 8)) || (pool && opset < 12);
    if (*kept)
        return xfp_list_push(&b->nodes, (void *)np);
    const char *y = np->output[0];
    Onnx__NodeProto *c = xfp_alloc(b->a, sizeof *c);
    Onnx__AttributeProto **ats = xfp_alloc(b->a, sizeof *ats * (np->n_attribute + 1));
    char **ins = xfp_alloc(b->a, sizeof *ins * (np->n_input + 1));
    char **outs = xfp_alloc(b->a, sizeof *outs);
    if (!c || !ats || !ins || !outs)
        return false;
    *c = *np; /* the op itself: channels_last dropped; QLinearConv and MaxPool of the default domain */
    c->n_attribute = 0;
    for (size_t i = 0; i < np->n_attribute; i++)
        if (np->attribute[i]->name && strcmp(np->attribute[i]->name, "channels_last"))
            ats[c->n_attribute++] = np->attribute[i];
    c->attribute = ats;
    c->op_type = pool ? (char *)"MaxPool" : np->op_type;
    c->domain = op_is(np, "QLinearAveragePool") ? (char *)MS : (char *)"";
    memcpy(ins, np->input, sizeof *ins * np->n_input);
    c->input = ins;
    outs[0] = (char *)y;
    c->output = outs;
    if (!last)
        return xfp_list_push(&b->nodes, c);
    int64_t to_first[8], to_last[8];
    to_first[0] = to_last[0] = 0;
    to_first[1] = rank - 1;
    to_last[rank - 1] = 1;
    for (int i = 2; i < rank; i++) {
        to_first[i] = i - 1;
        to_last[i - 1] = i;
    }
    const char *x = np->input[0];
    const char *x_first = xfp_fresh_name(b, y, "/channels_first_input");
    const char *y_first = xfp_fresh_name(b, y, "/channels_first");
    if (!x_first || !y_first || !xfp_emit(b, "Transpose", xfp_fresh_name(b, y, "/to_channels_first"), &x, 1, x_first,
                                           (Onnx__AttributeProto *[]){xfp_new_attr_ints(b, "perm", to_first, rank)}, 1))
        return false;
    ins[0] = (char *)x_first;
    outs[0] = (char *)y_first;
    return xfp_list_push(&b->nodes, c) &&
           xfp_emit(b, "Transpose", xfp_fresh_name(b, y, "/to_channels_last"), &y_first, 1, y,
                    (Onnx__AttributeProto *[]){xfp_new_attr_ints(b, "perm", to_last, rank)}, 1);
}

xf_status xfp_lower_nhwc(const Onnx__ModelProto *mp, xfp_arena *arena, const Onnx__GraphProto **graph,
                         int *lowered, xf_error *err)
{
    const Onnx__GraphProto *gp = *graph;
    *lowered = 0;
    int n = 0;
    for (size_t k = 0; k < gp->n_node; k++)
        n += is_nhwc_form(gp->node[k]);
    if (!n)
        return XF_OK;
    int64_t opset = xfp_model_opset(mp, "");
    opset = opset > 1 ? opset : 1; /* none imported: 1, as the import takes it */
    xfp_builder b;
    bool ok = xfp_builder_init(&b, arena, gp);
    int kept = 0;
    for (size_t k = 0; ok && k < gp->n_node; k++) {
        bool kept_one = false;
        ok = is_nhwc_form(gp->node[k]) ? rewrite(&b, gp, gp->node[k], opset, &kept_one)
                                       : xfp_list_push(&b.nodes, gp->node[k]);
        kept += kept_one;
    }
    const Onnx__GraphProto *out = ok ? xfp_builder_graph(&b, gp, NULL) : NULL;
    xfp_builder_free(&b);
    if (!out)
        return xf_error_set(err, XF_ERR_NOMEM, "out of memory");
    *graph = out;
    *lowered = n - kept;
    if (kept)
        xf_log(XF_LOG_WARN, "%d of ONNX Runtime's channels-last quantized node%s kept as written (rank not known%s)",
               kept, kept == 1 ? "" : "s", opset < 12 ? ", or an NhwcMaxPool below opset 12" : "");
    return XF_OK;
}
