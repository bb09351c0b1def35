/* xf_model -> ModelProto, and the atomic writing of model files.
 *
 * Nodes are written in graph order; known ops from their attribute block
 * (attrs_export.c), opaque nodes from their stored NodeProto with only the
 * input/output names replaced by the graph's current ones.  Value names are
 * written as they are in the graph: rewrites make new names and never rename,
 * so subgraphs that refer to outer values by name stay correct.  The pieces
 * are allocated in an arena and point into the model (names, tensor data), so
 * that export copies weights only once, into the packed bytes. */
#include "proto_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Marks, in the name map, a name the exporter created itself. */
enum { NAME_CREATED = -2 };

typedef struct exporter {
    const xf_model *m;
    const xf_graph *g;
    int64_t opset;
    xfp_arena arena;
    xfp_external_sink *sink;
    Onnx__ModelProto *extra; /* unpacked xf_model.extra, or NULL */
    xfp_name_map fallback;   /* name -> index into extra->graph->input */
    xfp_name_map names;      /* every value name -> id, plus NAME_CREATED */
    xfp_ptr_list unpacked;   /* stored NodeProtos of opaque nodes, freed at the end */
    xfp_ptr_list nodes;      /* the NodeProtos written, in order */
    xf_error *err;
} exporter;

static xf_status oom(exporter *x) { return xf_error_set(x->err, XF_ERR_NOMEM, "out of memory"); }

static char *vname(const exporter *x, int v) { return v >= 0 ? x->g->values[v].name : (char *)""; }

static const char *node_label(const xf_node *n, int index, char *buf, size_t len)
{
    const char *op = n->op == XF_OP_OPAQUE && n->opaque ? n->opaque->op_type : xf_op_name(n->op);
    if (n->name && n->name[0])
        snprintf(buf, len, "node '%s' (%s)", n->name, op);
    else
        snprintf(buf, len, "node #%d (%s)", index, op);
    return buf;
}

/* Whether name is available in the exported graph: a graph input, an
 * initializer, a node output, or a name the exporter produced. */
static bool name_defined(const exporter *x, const char *name)
{
    int id = xfp_map_get(&x->names, name);
    if (id == NAME_CREATED)
        return true;
    if (id < 0)
        return false;
    const xf_value *v = &x->g->values[id];
    return v->is_input || v->init || v->producer >= 0;
}

/* A name not used by any value: base, else base_1, base_2, ... */
static char *fresh_name(exporter *x, const char *base)
{
    size_t n = strlen(base) + 24;
    char *name = xfp_alloc(&x->arena, n);
    if (!name)
        return NULL;
    snprintf(name, n, "%s", base);
    for (int i = 1; xfp_map_get(&x->names, name) != -1; i++)
        snprintf(name, n, "%s_%d", base, i);
    return xfp_map_put(&x->names, name, NAME_CREATED) ? name : NULL;
}

static Onnx__NodeProto *new_node(exporter *x, const char *op_type, size_t n_in, size_t n_out)
{
    Onnx__NodeProto *np = xfp_alloc(&x->arena, sizeof *np);
    char **in = xfp_alloc(&x->arena, sizeof(char *) * (n_in + 1));
    char **out = xfp_alloc(&x->arena, sizeof(char *) * (n_out + 1));
    if (!np || !in || !out || !xfp_list_push(&x->nodes, np))
        return NULL;
    onnx__node_proto__init(np);
    np->op_type = (char *)op_type;
    np->n_input = n_in;
    np->input = in;
    np->n_output = n_out;
    np->output = out;
    return np;
}

static Onnx__NodeProto *unary_node(exporter *x, const char *op_type, char *in, char *out)
{
    Onnx__NodeProto *np = new_node(x, op_type, 1, 1);
    if (np) {
        np->input[0] = in;
        np->output[0] = out;
    }
    return np;
}

/* ------------------------------------------------------------ nodes */

static xf_status write_known(exporter *x, const xf_node *n, const char *label)
{
    int n_in = n->n_inputs;
    while (n_in > 0 && n->inputs[n_in - 1] < 0)
        n_in--;
    Onnx__NodeProto *np = new_node(x, xf_op_name(n->op), (size_t)n_in, (size_t)n->n_outputs);
    if (!np)
        return oom(x);
    np->name = n->name && n->name[0] ? n->name : NULL;
    np->domain = xf_op_domain(n->op)[0] ? (char *)xf_op_domain(n->op) : NULL;
    for (int k = 0; k < n_in; k++)
        np->input[k] = vname(x, n->inputs[k]);
    if (n->op == XF_OP_RESIZE && x->opset < 11 && n_in == 3 && n->inputs[1] < 0) {
        np->input[1] = np->input[2]; /* opset 10's (X, scales); export refuses other forms */
        np->n_input = 2;
    }
    for (int k = 0; k < n->n_outputs; k++)
        np->output[k] = vname(x, n->outputs[k]);
    if (x->opset < xfp_op_since(n->op))
        return xf_error_set(x->err, XF_ERR_UNSUPPORTED, "%s needs opset %d; the model is written at %lld", label,
                            xfp_op_since(n->op), (long long)x->opset);
    if (x->opset >= xfp_op_removed(n->op))
        return xf_error_set(x->err, XF_ERR_UNSUPPORTED, "%s was removed in opset %d; the model is written at %lld",
                            label, xfp_op_removed(n->op), (long long)x->opset);
    int in_rank = n->n_inputs > 0 && n->inputs[0] >= 0 ? x->g->values[n->inputs[0]].shape.ndim : -1;
    xf_status s = xfp_attrs_export(n, in_rank, x->opset, &x->arena, np, x->err);
    if (s != XF_OK) {
        xf_error_prefix(x->err, "%s", label);
        return s;
    }
    if (n->op != XF_OP_CONV || n->attrs.activation == XF_ACT_NONE)
        return XF_OK;
    /* A fused activation is xflow's own: ONNX gets Conv then the activation. */
    static const char *const act_ops[] = {[XF_ACT_RELU] = "Relu", [XF_ACT_SIGMOID] = "Sigmoid",
                                          [XF_ACT_TANH] = "Tanh"};
    if ((unsigned)n->attrs.activation > XF_ACT_TANH || n->n_outputs != 1 || n->outputs[0] < 0)
        return xf_error_set(x->err, XF_ERR_INVALID, "%s has an invalid fused activation", label);
    char base[600];
    snprintf(base, sizeof base, "%s_preact", vname(x, n->outputs[0]));
    char *mid = fresh_name(x, base);
    if (!mid || !unary_node(x, act_ops[n->attrs.activation], mid, np->output[0]))
        return oom(x);
    np->output[0] = mid;
    return XF_OK;
}

/* Subgraph bodies refer to outer values by name; when the IR now feeds a
 * different value (a rewrite replaced the original, which no longer exists),
 * an Identity gives the current value the name the body uses. */
static xf_status bridge_outer_names(exporter *x, const xf_node *n, const Onnx__NodeProto *orig, const char *label)
{
    size_t n_outer = (size_t)n->n_inputs - orig->n_input;
    if (n_outer == 0)
        return XF_OK;
    const char **outer;
    size_t count;
    xf_status s = xfp_outer_names(orig, &outer, &count, x->err);
    if (s != XF_OK) {
        xf_error_prefix(x->err, "%s", label);
        return s;
    }
    if (count != n_outer)
        s = xf_error_set(x->err, XF_ERR_INVALID, "%s has %zu outer-scope inputs but its subgraphs use %zu", label,
                         n_outer, count);
    for (size_t k = 0; k < n_outer && s == XF_OK; k++) {
        char *cur = vname(x, n->inputs[orig->n_input + k]);
        if (strcmp(cur, outer[k]) == 0 || name_defined(x, outer[k]))
            continue;
        char *name = xfp_strdup(&x->arena, outer[k]);
        if (!name || !xfp_map_put(&x->names, name, NAME_CREATED) || !unary_node(x, "Identity", cur, name))
            s = oom(x);
    }
    free(outer);
    return s;
}

static xf_status write_opaque(exporter *x, const xf_node *n, const char *label)
{
    if (!n->opaque)
        return xf_error_set(x->err, XF_ERR_INVALID, "%s has no stored ONNX node", label);
    Onnx__NodeProto *orig = onnx__node_proto__unpack(NULL, n->opaque->proto_len, n->opaque->proto);
    if (!orig)
        return xf_error_set(x->err, XF_ERR_PARSE, "%s: its stored ONNX node is corrupt", label);
    if (!xfp_list_push(&x->unpacked, orig)) {
        onnx__node_proto__free_unpacked(orig, NULL);
        return oom(x);
    }
    if ((size_t)n->n_inputs < orig->n_input)
        return xf_error_set(x->err, XF_ERR_INVALID, "%s has %d inputs but its ONNX node has %zu", label,
                            n->n_inputs, orig->n_input);
    xf_status s = bridge_outer_names(x, n, orig, label);
    if (s != XF_OK)
        return s;
    Onnx__NodeProto *np = new_node(x, orig->op_type, orig->n_input, (size_t)n->n_outputs);
    if (!np)
        return oom(x);
    /* Everything else (attributes, subgraphs, doc string, unknown fields)
     * stays as stored. */
    char **in = np->input, **out = np->output;
    *np = *orig;
    np->input = in;
    np->output = out;
    np->n_output = (size_t)n->n_outputs;
    for (size_t k = 0; k < orig->n_input; k++)
        np->input[k] = vname(x, n->inputs[k]);
    for (int k = 0; k < n->n_outputs; k++)
        np->output[k] = vname(x, n->outputs[k]);
    return XF_OK;
}

static xf_status write_nodes(exporter *x)
{
    char label[600];
    for (int i = 0; i < x->g->n_nodes; i++) {
        const xf_node *n = &x->g->nodes[i];
        node_label(n, i, label, sizeof label);
        xf_status s = n->op == XF_OP_OPAQUE ? write_opaque(x, n, label) : write_known(x, n, label);
        if (s != XF_OK)
            return s;
    }
    return XF_OK;
}

/* ------------------------------------------------------------ values */

/* The ValueInfo of value v: xflow's type when known, else the declared type
 * carried in extra, else (for graph inputs/outputs, which ONNX requires)
 * whatever is known.  NULL when there is nothing to say: a partial type would
 * come back as a declared type xflow cannot represent, so that export and
 * import would not reach a fixed point. */
static Onnx__ValueInfoProto *value_info(exporter *x, int v, bool required)
{
    const xf_value *val = &x->g->values[v];
    bool seq = val->kind != XF_VK_TENSOR; /* a sequence or optional: written as declared when it was */
    bool known = val->dtype != XF_DT_UNDEFINED && val->shape.ndim >= 0 && !seq;
    int fb = known ? -1 : xfp_map_get(&x->fallback, val->name);
    if (fb >= 0)
        return x->extra->graph->input[fb];
    if (!required && !known && !(seq && val->dtype != XF_DT_UNDEFINED && val->shape.ndim >= 0))
        return NULL;
    Onnx__ValueInfoProto *vi = xfp_alloc(&x->arena, sizeof *vi);
    if (!vi)
        return NULL;
    onnx__value_info_proto__init(vi);
    vi->name = val->name;
    if (val->dtype != XF_DT_UNDEFINED && seq)
        return (vi->type = xfp_container_type_encode(val->kind, val->dtype, &val->shape, &x->arena)) ? vi : NULL;
    if (val->dtype != XF_DT_UNDEFINED && !(vi->type = xfp_type_encode(val->dtype, &val->shape, &x->arena)))
        return NULL;
    /* dims kept symbolic (graph inputs and outputs only) */
    Onnx__TensorShapeProto *sp = vi->type && vi->type->tensor_type ? vi->type->tensor_type->shape : NULL;
    for (int i = 0; sp && x->m->keep_symbolic && i < x->m->n_symbolic; i++) {
        const xf_symbolic_dim *sd = &x->m->symbolic[i];
        if (strcmp(sd->value, val->name) != 0 || sd->dim < 0 || (size_t)sd->dim >= sp->n_dim)
            continue;
        Onnx__TensorShapeProto__Dimension *d = sp->dim[sd->dim];
        d->dim_value = 0;
        d->value_case = sd->name[0] ? ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM
                                    : ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE__NOT_SET;
        d->dim_param = sd->name[0] ? sd->name : NULL;
    }
    return vi;
}

typedef struct vi_list {
    Onnx__ValueInfoProto **items;
    size_t n;
} vi_list;

static bool vi_alloc(exporter *x, vi_list *l, size_t cap)
{
    l->n = 0;
    l->items = xfp_alloc(&x->arena, sizeof *l->items * (cap + 1));
    return l->items != NULL;
}

static xf_status write_values(exporter *x, Onnx__GraphProto *gp)
{
    const xf_graph *g = x->g;
    int n_init = 0;
    for (int v = 0; v < g->n_values; v++)
        n_init += g->values[v].init != NULL;
    gp->initializer = xfp_alloc(&x->arena, sizeof *gp->initializer * (size_t)(n_init + 1));
    if (!gp->initializer)
        return oom(x);
    for (int v = 0; v < g->n_values; v++) {
        if (!g->values[v].init)
            continue;
        Onnx__TensorProto *tp = xfp_alloc(&x->arena, sizeof *tp);
        if (!tp)
            return oom(x);
        xf_status s = xfp_tensor_encode(g->values[v].init, g->values[v].name, &x->arena, x->sink, tp, x->err);
        if (s != XF_OK)
            return s;
        gp->initializer[gp->n_initializer++] = tp;
    }

    /* IR versions before 4 require every initializer to be a graph input too. */
    bool inits_as_inputs = x->m->ir_version > 0 && x->m->ir_version < 4;
    vi_list in, out, mid;
    size_t extra_vi = x->extra && x->extra->graph ? x->extra->graph->n_value_info : 0;
    if (!vi_alloc(x, &in, (size_t)g->n_inputs + (inits_as_inputs ? (size_t)n_init : 0)) ||
        !vi_alloc(x, &out, (size_t)g->n_outputs) || !vi_alloc(x, &mid, (size_t)g->n_values + extra_vi))
        return oom(x);
    bool *is_output = xfp_alloc(&x->arena, sizeof(bool) * (size_t)(g->n_values + 1));
    if (!is_output)
        return oom(x);
    for (int k = 0; k < g->n_inputs; k++)
        if (!(in.items[in.n++] = value_info(x, g->inputs[k], true)))
            return oom(x);
    for (int v = 0; inits_as_inputs && v < g->n_values; v++)
        if (g->values[v].init && !(in.items[in.n++] = value_info(x, v, true)))
            return oom(x);
    for (int k = 0; k < g->n_outputs; k++) {
        is_output[g->outputs[k]] = true;
        if (!(out.items[out.n++] = value_info(x, g->outputs[k], true)))
            return oom(x);
    }
    /* with symbolic dims, the intermediate values' concrete shapes hold for
     * one size only: left out */
    for (int v = 0; !x->m->keep_symbolic && v < g->n_values; v++)
        if (g->values[v].producer >= 0 && !is_output[v] && (mid.items[mid.n] = value_info(x, v, false)))
            mid.n++;
    /* value_info of names that were not values at import, unless a rewrite
     * has since made a value of that name */
    for (size_t k = 0; k < extra_vi; k++)
        if (xfp_map_get(&x->names, x->extra->graph->value_info[k]->name) == -1)
            mid.items[mid.n++] = x->extra->graph->value_info[k];
    gp->n_input = in.n;
    gp->input = in.items;
    gp->n_output = out.n;
    gp->output = out.items;
    gp->n_value_info = mid.n;
    gp->value_info = mid.items;
    return XF_OK;
}

/* ------------------------------------------------------------ model */

static xf_status unpack_extra(exporter *x)
{
    if (!x->m->extra || !x->m->extra_len)
        return XF_OK;
    x->extra = onnx__model_proto__unpack(NULL, x->m->extra_len, x->m->extra);
    if (!x->extra)
        return xf_error_set(x->err, XF_ERR_PARSE, "the model's carried-over ONNX data (xf_model.extra) is corrupt");
    const Onnx__GraphProto *eg = x->extra->graph;
    for (size_t i = 0; eg && i < eg->n_input; i++)
        if (eg->input[i]->name && !xfp_map_put(&x->fallback, eg->input[i]->name, (int)i))
            return oom(x);
    return XF_OK;
}

/* Whether g, or a subgraph of one of its nodes, holds a known op of domain. */
static bool graph_uses_domain(const xf_graph *g, const char *domain)
{
    for (int i = 0; i < g->n_nodes; i++) {
        const xf_node *n = &g->nodes[i];
        if (n->op != XF_OP_OPAQUE && strcmp(xf_op_domain(n->op), domain) == 0)
            return true;
        for (int b = 0; n->op == XF_OP_OPAQUE && n->opaque && b < n->opaque->n_bodies; b++)
            if (n->opaque->bodies[b].graph && graph_uses_domain(n->opaque->bodies[b].graph, domain))
                return true;
    }
    return false;
}

/* Contrib ops xflow knows are of version 1 of their domain: a model built
 * in memory that uses one gets that opset. */
static bool needs_ms_opset(const xf_model *m)
{
    for (int i = 0; i < m->n_opsets; i++)
        if (strcmp(m->opsets[i].domain, "com.microsoft") == 0)
            return false;
    return graph_uses_domain(m->graph, "com.microsoft");
}

static xf_status write_model_fields(exporter *x, Onnx__ModelProto *mp)
{
    const xf_model *m = x->m;
    mp->has_ir_version = 1;
    mp->ir_version = m->ir_version > 0 ? m->ir_version : XF_ONNX_IR_VERSION;
    mp->producer_name = m->producer_name;
    mp->producer_version = m->producer_version;
    mp->domain = m->domain;
    mp->doc_string = m->doc_string;
    mp->has_model_version = m->model_version != 0;
    mp->model_version = m->model_version;
    int n_ops = m->n_opsets > 0 ? m->n_opsets : 1;
    bool add_ms = needs_ms_opset(m);
    mp->opset_import = xfp_alloc(&x->arena, sizeof *mp->opset_import * (size_t)(n_ops + add_ms));
    mp->metadata_props = xfp_alloc(&x->arena, sizeof *mp->metadata_props * (size_t)(m->n_metadata + 1));
    if (!mp->opset_import || !mp->metadata_props)
        return oom(x);
    for (int i = 0; i < n_ops; i++) {
        Onnx__OperatorSetIdProto *o = xfp_alloc(&x->arena, sizeof *o);
        if (!o)
            return oom(x);
        onnx__operator_set_id_proto__init(o);
        /* A model built in memory without opsets gets the newest ONNX 1.12 knows. */
        o->domain = m->n_opsets > 0 ? m->opsets[i].domain : (char *)"";
        o->has_version = 1;
        o->version = m->n_opsets > 0 ? m->opsets[i].version : XF_ONNX_OPSET;
        mp->opset_import[mp->n_opset_import++] = o;
    }
    if (add_ms) {
        Onnx__OperatorSetIdProto *o = xfp_alloc(&x->arena, sizeof *o);
        if (!o)
            return oom(x);
        onnx__operator_set_id_proto__init(o);
        o->domain = (char *)"com.microsoft";
        o->has_version = 1;
        o->version = 1;
        mp->opset_import[mp->n_opset_import++] = o;
    }
    for (int i = 0; i < m->n_metadata; i++) {
        Onnx__StringStringEntryProto *kv = xfp_alloc(&x->arena, sizeof *kv);
        if (!kv)
            return oom(x);
        onnx__string_string_entry_proto__init(kv);
        kv->key = m->metadata[i].key;
        kv->value = m->metadata[i].value;
        mp->metadata_props[mp->n_metadata_props++] = kv;
    }
    if (x->extra) {
        mp->n_functions = x->extra->n_functions;
        mp->functions = x->extra->functions;
        mp->n_training_info = x->extra->n_training_info;
        mp->training_info = x->extra->training_info;
        mp->base.n_unknown_fields = x->extra->base.n_unknown_fields;
        mp->base.unknown_fields = x->extra->base.unknown_fields;
    }
    return XF_OK;
}

static xf_status build_model(exporter *x, Onnx__ModelProto *mp, Onnx__GraphProto *gp)
{
    onnx__model_proto__init(mp);
    onnx__graph_proto__init(gp);
    mp->graph = gp;
    xf_status s = xf_graph_validate(x->g, x->err);
    if (s != XF_OK) {
        xf_error_prefix(x->err, "cannot export an invalid graph");
        return s;
    }
    for (int v = 0; v < x->g->n_values; v++)
        if (!xfp_map_put(&x->names, x->g->values[v].name, v))
            return oom(x);
    x->opset = x->m->n_opsets > 0 ? xf_model_opset(x->m) : XF_ONNX_OPSET;
    if ((s = unpack_extra(x)) != XF_OK || (s = write_model_fields(x, mp)) != XF_OK ||
        (s = write_nodes(x)) != XF_OK || (s = write_values(x, gp)) != XF_OK)
        return s;
    gp->name = x->g->name;
    gp->n_node = x->nodes.n;
    gp->node = (Onnx__NodeProto **)x->nodes.items;
    const Onnx__GraphProto *eg = x->extra ? x->extra->graph : NULL;
    if (eg) {
        gp->doc_string = eg->doc_string;
        gp->n_quantization_annotation = eg->n_quantization_annotation;
        gp->quantization_annotation = eg->quantization_annotation;
        gp->base.n_unknown_fields = eg->base.n_unknown_fields;
        gp->base.unknown_fields = eg->base.unknown_fields;
    }
    return XF_OK;
}

static void exporter_free(exporter *x)
{
    for (size_t i = 0; i < x->unpacked.n; i++)
        onnx__node_proto__free_unpacked(x->unpacked.items[i], NULL);
    xfp_list_free(&x->unpacked);
    xfp_list_free(&x->nodes);
    if (x->extra)
        onnx__model_proto__free_unpacked(x->extra, NULL);
    xfp_map_free(&x->fallback);
    xfp_map_free(&x->names);
    xfp_arena_free(&x->arena);
}

/* Streams packed bytes to a file through a small staging buffer, so that
 * saving never holds a second copy of the model's weights in memory. */
typedef struct file_sink {
    ProtobufCBuffer base;
    xfp_atomic_file *file;
    xf_error *err;
    xf_status status;
    size_t used;
    uint8_t chunk[1 << 20];
} file_sink;

static void file_sink_flush(file_sink *fs)
{
    if (fs->status == XF_OK && fs->used > 0)
        fs->status = xfp_atomic_write(fs->file, fs->chunk, fs->used, fs->err);
    fs->used = 0;
}

static void file_sink_append(ProtobufCBuffer *buffer, size_t len, const uint8_t *data)
{
    file_sink *fs = (file_sink *)buffer;
    if (len == 0)
        return;
    if (len >= sizeof fs->chunk) {
        file_sink_flush(fs);
        if (fs->status == XF_OK)
            fs->status = xfp_atomic_write(fs->file, data, len, fs->err);
        return;
    }
    if (fs->used + len > sizeof fs->chunk)
        file_sink_flush(fs);
    memcpy(fs->chunk + fs->used, data, len);
    fs->used += len;
}

/* Builds m's ModelProto and either packs it into a new buffer (*buf, *len)
 * or, when file is not NULL, streams it there.  sink (may be NULL) receives
 * external tensor data. */
static xf_status pack_model(const xf_model *m, xfp_external_sink *sink, xfp_atomic_file *file, uint8_t **buf,
                            size_t *len, xf_error *err)
{
    if (buf) {
        *buf = NULL;
        *len = 0;
    }
    exporter x = {.m = m, .g = m->graph, .sink = sink, .err = err};
    Onnx__ModelProto mp;
    Onnx__GraphProto gp;
    xf_status s = build_model(&x, &mp, &gp);
    if (s == XF_OK) {
        size_t size = onnx__model_proto__get_packed_size(&mp);
        /* Protobuf readers (including onnx and ONNX Runtime) refuse messages over 2 GiB. */
        if (size > (size_t)INT32_MAX) {
            s = xf_error_set(err, XF_ERR_LIMIT,
                             "the model is %zu bytes, over protobuf's 2 GiB limit; save it with external data", size);
        } else if (file) {
            file_sink *fs = malloc(sizeof *fs);
            if (!fs) {
                s = xf_error_set(err, XF_ERR_NOMEM, "out of memory");
            } else {
                *fs = (file_sink){.base = {.append = file_sink_append}, .file = file, .err = err};
                protobuf_c_message_pack_to_buffer(&mp.base, &fs->base);
                file_sink_flush(fs);
                s = fs->status;
                free(fs);
            }
        } else if (!(*buf = malloc(size ? size : 1))) {
            s = xf_error_set(err, XF_ERR_NOMEM, "out of memory (%zu bytes)", size);
        } else {
            *len = onnx__model_proto__pack(&mp, *buf);
        }
    }
    exporter_free(&x);
    return s;
}

xf_status xf_model_save_buffer(const xf_model *m, uint8_t **buf, size_t *len, xf_error *err)
{
    return pack_model(m, NULL, NULL, buf, len, err);
}

xf_status xf_model_save(const xf_model *m, const char *path, const xf_save_options *opt, xf_error *err)
{
    bool external = opt && opt->external_data;
    xfp_atomic_file model = {.fd = -1}, data = {.fd = -1};
    char *data_path = NULL, *location = NULL;
    xfp_external_sink sink = {0};
    /* The model file is opened first so that an unwritable path is reported as such. */
    xf_status s = xfp_atomic_open(&model, path, err);
    if (s == XF_OK && external) {
        const char *slash = strrchr(path, '/');
        size_t n = strlen(path) + 6;
        data_path = malloc(n);
        location = malloc(n);
        if (!data_path || !location) {
            s = xf_error_set(err, XF_ERR_NOMEM, "out of memory");
        } else {
            snprintf(data_path, n, "%s.data", path);
            snprintf(location, n, "%s.data", slash ? slash + 1 : path);
            s = xfp_atomic_open(&data, data_path, err);
        }
        sink = (xfp_external_sink){&data, location, opt->external_threshold, 0};
    }
    if (s == XF_OK) {
        s = pack_model(m, external ? &sink : NULL, &model, NULL, NULL, err);
        if (s != XF_OK && s != XF_ERR_IO)
            xf_error_prefix(err, "%s", path);
    }
    if (s == XF_OK)
        s = xfp_atomic_finish(&model, err);
    bool data_used = external && sink.offset > 0;
    if (s == XF_OK && data_used && (s = xfp_atomic_finish(&data, err)) == XF_OK)
        s = xfp_atomic_commit(&data, err);
    if (s == XF_OK && (s = xfp_atomic_commit(&model, err)) != XF_OK && data_used)
        unlink(data_path); /* no model refers to it */
    xfp_atomic_release(&model);
    xfp_atomic_release(&data);
    free(data_path);
    free(location);
    return s;
}
