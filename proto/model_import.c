/* ModelProto -> xf_model. */
#include "model_import.h"

#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


/* Frees what an import made besides its graph and model. */
static void importer_free(importer *im)
{
    xfp_map_free(&im->values);
    xfp_map_free(&im->declared);
    xfp_list_free(&im->declared_list);
    xfp_symbols_free(&im->syms);
    xfp_list_free(&im->fallback);
    xfp_list_free(&im->unknown_vi);
    free(im->node_outs);
    free(im->out_ids);
    xfp_arena_free(&im->inlined);
}

static xf_status oom(importer *im) { return xf_error_set(im->err, XF_ERR_NOMEM, "out of memory"); }

static const char *str_or_empty(const char *s) { return s ? s : ""; }

static char *dup_or_null(const char *s) { return s && s[0] ? strdup(s) : NULL; }

static const char *node_label(const Onnx__NodeProto *np, size_t index, char *buf, size_t n)
{
    if (np->name && np->name[0])
        snprintf(buf, n, "node '%s' (%s)", np->name, str_or_empty(np->op_type));
    else
        snprintf(buf, n, "node #%zu (%s)", index, str_or_empty(np->op_type));
    return buf;
}

static bool is_default_domain(const char *d) { return !d || !d[0] || strcmp(d, "ai.onnx") == 0; }

/* ------------------------------------------------------------ model fields */

static xf_status copy_model_fields(importer *im)
{
    const Onnx__ModelProto *mp = im->mp;
    xf_model *m = im->m;
    m->ir_version = mp->has_ir_version ? mp->ir_version : 0;
    m->model_version = mp->has_model_version ? mp->model_version : 0;
    m->producer_name = dup_or_null(mp->producer_name);
    m->producer_version = dup_or_null(mp->producer_version);
    m->domain = dup_or_null(mp->domain);
    m->doc_string = dup_or_null(mp->doc_string);
    m->opsets = calloc(mp->n_opset_import + 1, sizeof *m->opsets);
    m->metadata = calloc(mp->n_metadata_props + 1, sizeof *m->metadata);
    if (!m->opsets || !m->metadata)
        return oom(im);
    for (size_t i = 0; i < mp->n_opset_import; i++) {
        const Onnx__OperatorSetIdProto *o = mp->opset_import[i];
        m->opsets[i].domain = strdup(str_or_empty(o->domain));
        m->opsets[i].version = o->has_version ? o->version : 0;
        m->n_opsets = (int)i + 1;
        if (!m->opsets[i].domain)
            return oom(im);
    }
    for (size_t i = 0; i < mp->n_metadata_props; i++) {
        const Onnx__StringStringEntryProto *kv = mp->metadata_props[i];
        m->metadata[i].key = strdup(str_or_empty(kv->key));
        m->metadata[i].value = strdup(str_or_empty(kv->value));
        m->n_metadata = (int)i + 1;
        if (!m->metadata[i].key || !m->metadata[i].value)
            return oom(im);
    }
    free(m->graph->name);
    m->graph->name = strdup(str_or_empty(im->gp->name));
    return m->graph->name ? XF_OK : oom(im);
}

/* Known ops mean what their opset says, so a model using the default domain
 * must say which opset it follows.  Before IR version 3 there was no
 * opset_import and the opset was 1; that is made explicit, so that export
 * writes it. */
static xf_status check_default_opset(importer *im)
{
    xf_model *m = im->m;
    for (int i = 0; i < m->n_opsets; i++)
        if (is_default_domain(m->opsets[i].domain))
            return XF_OK;
    bool uses_default = false;
    for (size_t i = 0; i < im->gp->n_node && !uses_default; i++)
        uses_default = is_default_domain(im->gp->node[i]->domain);
    if (!uses_default)
        return XF_OK;
    if (m->ir_version >= 3)
        return xf_error_set(im->err, XF_ERR_INVALID,
                            "the model uses ONNX operators but imports no ONNX opset (opset_import)");
    xf_opset *grown = realloc(m->opsets, sizeof *grown * (size_t)(m->n_opsets + 1));
    if (!grown)
        return oom(im);
    m->opsets = grown;
    m->opsets[m->n_opsets] = (xf_opset){strdup(""), 1};
    return m->opsets[m->n_opsets++].domain ? XF_OK : oom(im);
}

/* ------------------------------------------------------------ values */

/* Fails when name is already taken by a value. */
static xf_status check_new_name(importer *im, const char *name, const char *what)
{
    if (xfp_map_get(&im->values, name) >= 0)
        return xf_error_set(im->err, XF_ERR_INVALID, "value '%s' is defined twice (again as %s)", name, what);
    return XF_OK;
}

/* Registers the value just added to the graph (id -1: adding it failed). */
static xf_status define_value(importer *im, int id)
{
    if (id < 0 || !xfp_map_put(&im->values, im->g->values[id].name, id))
        return oom(im);
    return XF_OK;
}

static xf_status add_constant(importer *im, const char *name, xf_tensor *t, const char *what)
{
    xf_status s = name && name[0] ? check_new_name(im, name, what)
                                  : xf_error_set(im->err, XF_ERR_INVALID, "%s has no name", what);
    if (s == XF_OK)
        s = define_value(im, xf_graph_add_initializer(im->g, name, t));
    xf_tensor_release(t);
    return s;
}

static xf_status import_initializers(importer *im)
{
    const Onnx__GraphProto *gp = im->gp;
    char what[600];
    for (size_t i = 0; i < gp->n_initializer; i++) {
        const Onnx__TensorProto *tp = gp->initializer[i];
        snprintf(what, sizeof what, "initializer '%s'", str_or_empty(tp->name));
        xf_tensor *t;
        xf_status s = xfp_tensor_decode(tp, what, &im->tensors, &t, im->err);
        if (s == XF_OK)
            s = add_constant(im, tp->name, t, what);
        if (s != XF_OK)
            return s;
        /* The unpacked message belongs to this import and nothing reads an
         * initializer's bytes after they are copied: dropping them now keeps
         * a model's weights in memory about once, not twice. */
        Onnx__TensorProto *owned = (Onnx__TensorProto *)tp;
        if (owned->has_raw_data && owned->raw_data.data) {
            free(owned->raw_data.data);
            owned->raw_data.data = NULL;
            owned->raw_data.len = 0;
            owned->has_raw_data = 0;
        }
    }
    /* Sparse initializers become dense ones: xflow's constants are dense. */
    for (size_t i = 0; i < gp->n_sparse_initializer; i++) {
        const Onnx__SparseTensorProto *sp = gp->sparse_initializer[i];
        const char *name = sp->values ? sp->values->name : NULL;
        snprintf(what, sizeof what, "sparse initializer '%s'", str_or_empty(name));
        xf_tensor *t;
        xf_status s = xfp_sparse_decode(sp, what, &im->tensors, &t, im->err);
        if (s == XF_OK)
            s = add_constant(im, name, t, what);
        if (s != XF_OK)
            return s;
    }
    return XF_OK;
}

/* Sets value id's kind; returns id (-1 stays -1). */
static int set_kind(xf_graph *g, int id, xf_value_kind kind)
{
    if (id >= 0)
        g->values[id].kind = kind;
    return id;
}

/* A value of unknown type takes a declared sequence or optional type. */
static void declared_sequence(xf_value *val, const Onnx__TypeProto *type)
{
    xf_dtype dt;
    xf_shape shape;
    xf_value_kind kind;
    if (val->dtype != XF_DT_UNDEFINED || !xfp_container_type(type, &kind, &dt, &shape))
        return;
    val->kind = kind;
    val->dtype = dt;
    val->shape = shape;
}

static xf_status import_inputs(importer *im)
{
    xf_status s = xfp_import_bind_sizes(im);
    for (size_t i = 0; i < im->gp->n_input && s == XF_OK; i++) {
        const Onnx__ValueInfoProto *vi = im->gp->input[i];
        if (!vi->name || !vi->name[0])
            return xf_error_set(im->err, XF_ERR_INVALID, "graph input %zu has no name", i);
        /* Old exporters list initializers as inputs too: they are constants. */
        int existing = xfp_map_get(&im->values, vi->name);
        if (existing >= 0) {
            if (im->g->values[existing].is_input)
                return xf_error_set(im->err, XF_ERR_INVALID, "graph input '%s' is listed twice", vi->name);
            continue;
        }
        xf_dtype dt;
        xf_shape shape;
        bool guessed[XF_MAX_DIMS];
        xf_value_kind kind;
        xf_dtype key;
        if (xfp_map_type(vi->type, &key, &dt)) { /* written back as declared, like the containers below */
            int id = set_kind(im->g, xf_graph_add_input(im->g, vi->name, dt, &(xf_shape){.ndim = -1}), XF_VK_MAP);
            if (id >= 0)
                im->g->values[id].key_dtype = key;
            s = define_value(im, id);
            if (s == XF_OK && !xfp_list_push(&im->fallback, (void *)vi))
                s = oom(im);
            continue;
        }
        if (xfp_container_type(vi->type, &kind, &dt, &shape)) { /* its declaration is written back as it came */
            s = define_value(im, set_kind(im->g, xf_graph_add_input(im->g, vi->name, dt, &shape), kind));
            if (s == XF_OK && !xfp_list_push(&im->fallback, (void *)vi))
                s = oom(im);
            continue;
        }
        const xf_shape *over = xfp_import_override(im, vi->name);
        s = xfp_resolve_input_type(vi, over, over ? NULL : xfp_import_feed_shape(im, i), &im->syms, &dt, &shape, guessed,
                                   im->err);
        if (s == XF_OK)
            s = define_value(im, xf_graph_add_input(im->g, vi->name, dt, &shape));
        /* a dim the file leaves symbolic and no --input-shape fixed */
        for (int d = 0; s == XF_OK && d < shape.ndim; d++) {
            if (!guessed[d])
                continue;
            const Onnx__TensorShapeProto__Dimension *dim = vi->type->tensor_type->shape->dim[d];
            if (!xf_model_add_symbolic(im->m, vi->name, d, xfp_dim_name(dim)))
                s = oom(im);
        }
        bool representable = dt != XF_DT_UNDEFINED && shape.ndim >= 0;
        if (s == XF_OK && !representable && !xfp_list_push(&im->fallback, (void *)vi))
            s = oom(im);
    }
    /* sequence and optional inputs: their declared element shapes, named
     * dims sized as the tensor inputs size them (all of those now bound) */
    for (size_t i = 0; i < im->gp->n_input && s == XF_OK; i++) {
        int v = xfp_map_get(&im->values, im->gp->input[i]->name);
        if (v >= 0 && im->g->values[v].is_input && im->g->values[v].kind != XF_VK_TENSOR)
            xfp_element_decl(im->gp->input[i]->type, &im->syms, &im->g->values[v].elem_decl);
    }
    return s;
}

/* ------------------------------------------------------------ Constant nodes */

/* The tensor a Constant node holds, or NULL (without error) when the node
 * uses a form that stays opaque (strings, sparse). */
static xf_status constant_value(importer *im, const Onnx__NodeProto *np, const char *label, xf_tensor **out)
{
    *out = NULL;
    if (!is_default_domain(np->domain) || np->n_attribute != 1 || np->n_output != 1 || np->n_input != 0)
        return XF_OK;
    const Onnx__AttributeProto *at = np->attribute[0];
    const char *name = str_or_empty(at->name);
    if (!at->has_type || (at->ref_attr_name && at->ref_attr_name[0]))
        return XF_OK;
    char what[700];
    snprintf(what, sizeof what, "%s value", label);
    xf_shape scalar = {0}, vec = {1, {0}};
    xf_tensor *t;
    if (at->type == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR && !strcmp(name, "value") && at->t)
        return xfp_tensor_decode(at->t, what, &im->tensors, out, im->err);
    if (at->type == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT && !strcmp(name, "value_float")) {
        t = xf_tensor_from_data(XF_DT_FLOAT, &scalar, &at->f);
    } else if (at->type == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT && !strcmp(name, "value_int")) {
        t = xf_tensor_from_data(XF_DT_INT64, &scalar, &at->i);
    } else if (at->type == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS && !strcmp(name, "value_floats")) {
        vec.dims[0] = (int64_t)at->n_floats;
        t = xf_tensor_from_data(XF_DT_FLOAT, &vec, at->floats);
    } else if (at->type == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS && !strcmp(name, "value_ints")) {
        vec.dims[0] = (int64_t)at->n_ints;
        t = xf_tensor_from_data(XF_DT_INT64, &vec, at->ints);
    } else {
        return XF_OK;
    }
    if (!t)
        return oom(im);
    *out = t;
    return XF_OK;
}

/* ------------------------------------------------------------ nodes */

/* Pass 1: every node output becomes a value (so that nodes may come in any
 * order); Constant nodes become initializers. */
static xf_status define_node_outputs(importer *im)
{
    const Onnx__GraphProto *gp = im->gp;
    size_t total = 0;
    char label[600];
    if (gp->n_node > XFP_MAX_NODES)
        return xf_error_set(im->err, XF_ERR_LIMIT, "the graph has %zu nodes; xflow reads at most %d", gp->n_node,
                            XFP_MAX_NODES);
    for (size_t i = 0; i < gp->n_node; i++) {
        const Onnx__NodeProto *np = gp->node[i];
        if (np->n_input > XFP_MAX_NODE_ARITY || np->n_output > XFP_MAX_NODE_ARITY)
            return xf_error_set(im->err, XF_ERR_LIMIT, "%s has %zu inputs and %zu outputs; xflow reads at most %d each",
                                node_label(np, i, label, sizeof label), np->n_input, np->n_output,
                                XFP_MAX_NODE_ARITY);
        total += np->n_output;
    }
    im->node_outs = malloc(sizeof(int) * (gp->n_node + 1));
    im->out_ids = malloc(sizeof(int) * (total + 1));
    if (!im->node_outs || !im->out_ids)
        return oom(im);
    int slot = 0;
    for (size_t i = 0; i < gp->n_node; i++) {
        const Onnx__NodeProto *np = gp->node[i];
        node_label(np, i, label, sizeof label);
        xf_status s;
        if (np->op_type && strcmp(np->op_type, "Constant") == 0) {
            xf_tensor *t;
            if ((s = constant_value(im, np, label, &t)) != XF_OK)
                return s;
            if (t) {
                im->node_outs[i] = -1;
                if ((s = add_constant(im, np->output[0], t, label)) != XF_OK)
                    return s;
                continue;
            }
        }
        im->node_outs[i] = slot;
        for (size_t k = 0; k < np->n_output; k++, slot++) {
            im->out_ids[slot] = -1;
            if (!np->output[k][0])
                continue;
            char what[700];
            snprintf(what, sizeof what, "an output of %s", label);
            if ((s = check_new_name(im, np->output[k], what)) != XF_OK)
                return s;
            int id = xf_graph_add_value(im->g, np->output[k], XF_DT_UNDEFINED, NULL);
            if ((s = define_value(im, id)) != XF_OK)
                return s;
            im->out_ids[slot] = id;
        }
    }
    return XF_OK;
}

static xf_status resolve(importer *im, const char *name, const char *label, const char *how, int *id)
{
    *id = -1;
    if (!name[0])
        return XF_OK;
    *id = xfp_map_get(&im->values, name);
    if (*id < 0)
        return xf_error_set(im->err, XF_ERR_INVALID,
                            "%s %s '%s', which is not defined (no graph input, initializer or node output has "
                            "that name)",
                            label, how, name);
    return XF_OK;
}

/* Dropout's training_mode input selects behaviour xflow does not model
 * unless it is a constant false. */
/* The element type name is declared with (as a graph input, in value_info
 * or as a graph output) when it is one xflow does not know, else 0.  An
 * initializer's own data type stands, whatever a declaration says (and is
 * what export writes); so does a graph input's, over value_info and graph
 * outputs of the same name. */
static int32_t foreign_type(const importer *im, const char *name)
{
    int v = name[0] ? xfp_map_get(&im->values, name) : -1;
    if (v >= 0 && im->g->values[v].init)
        return 0;
    for (size_t i = 0; name[0] && i < im->gp->n_input; i++)
        if (im->gp->input[i]->name && strcmp(im->gp->input[i]->name, name) == 0)
            return xfp_foreign_elem_type(im->gp->input[i]->type);
    int d = name[0] ? xfp_map_get(&im->declared, name) : -1;
    if (d >= 0)
        return xfp_foreign_elem_type(((const Onnx__ValueInfoProto *)im->declared_list.items[d])->type);
    return 0;
}

/* A known op reading or writing a type xflow does not know (float8,
 * 4-bit: a QuantizeLinear to float8, say) stays opaque; why gets the
 * reason, else "". */
static void foreign_operand(const importer *im, const Onnx__NodeProto *np, char *why, size_t n)
{
    why[0] = '\0';
    for (size_t k = 0; k < np->n_input + np->n_output && !why[0]; k++) {
        const char *name = k < np->n_input ? np->input[k] : np->output[k - np->n_input];
        int32_t t = foreign_type(im, name);
        const char *type_name = xfp_foreign_type_name(t);
        if (t)
            snprintf(why, n, "'%s' has element type %d (%s), which xflow does not know", name, (int)t,
                     type_name ? type_name : "newer than xflow");
    }
}

/* Decides whether np is imported as a known op (filling *attrs). */
static xf_status classify(importer *im, const Onnx__NodeProto *np, const char *label, int n_in, const int *ins,
                          int n_out, const int *outs, xf_op *op, xf_attrs *attrs)
{
    xf_op kind = xf_op_lookup(np->domain, np->op_type);
    *op = XF_OP_OPAQUE;
    if (kind == XF_OP_OPAQUE)
        return XF_OK;
    const xf_op_info *info = xf_op_get_info(kind);
    bool optional_outs = info->flags & XF_OPF_OPT_OUTS;
    int most_outs = info->num_outputs < 0 ? INT_MAX : info->num_outputs;
    int least_outs = info->num_outputs < 0 || optional_outs ? 1 : info->num_outputs;
    const char *why = NULL;
    char foreign[700];
    foreign_operand(im, np, foreign, sizeof foreign);
    if (foreign[0])
        why = foreign;
    else if (n_in < info->min_inputs || n_in > info->max_inputs)
        why = "input count outside what xflow models";
    else if (n_out < least_outs || n_out > most_outs)
        why = "output count outside what xflow models";
    else if (kind == XF_OP_RESIZE && xf_model_opset(im->m) < 11 && n_in != 2)
        why = "opset 10's Resize takes X and scales";
    else if ((kind == XF_OP_ATTENTION || kind == XF_OP_RMS_NORM || kind == XF_OP_ROTARY_EMB) &&
             xf_model_opset(im->m) < 23)
        why = "an opset 23 op in a model of an earlier opset";
    else if (kind == XF_OP_ATTENTION && n_in > 6 && xf_model_opset(im->m) < 24)
        why = "nonpad_kv_seqlen before opset 24";
    else if (xf_model_opset(im->m) < xfp_op_since(kind))
        why = "an op of an opset later than the model's";
    else if (xf_model_opset(im->m) >= xfp_op_removed(kind))
        why = "an experimental op that opset 10 removed, in a model of opset 10 or later";
    for (int k = 0; k < n_out && !why && !optional_outs; k++)
        if (outs[k] < 0)
            why = "an omitted output in the middle";
    if (!why && kind == XF_OP_MAX_POOL && outs[0] < 0)
        why = "Indices without Y";
    if (!why && kind == XF_OP_ATTENTION && outs[0] < 0)
        why = "no output Y";
    if (why) {
        xf_log(XF_LOG_INFO, "%s stays opaque: %s", label, why);
        return XF_OK;
    }
    xfp_attr_ctx ctx = {xf_model_opset(im->m), &im->tensors, {-1, -1}};
    for (int k = 0; k < 2 && k < n_in; k++)
        ctx.in_ranks[k] = ins[k] >= 0 ? im->g->values[ins[k]].shape.ndim : -1;
    bool known;
    char reason[256];
    xf_status s = xfp_attrs_import(kind, np, n_out, &ctx, attrs, &known, reason, sizeof reason, im->err);
    if (s != XF_OK) {
        xf_error_prefix(im->err, "%s", label);
        return s;
    }
    if (known)
        *op = kind;
    else
        xf_log(XF_LOG_INFO, "%s stays opaque: %s", label, reason);
    return XF_OK;
}

static xf_status import_node(importer *im, size_t index);
static xf_status import_outputs(importer *im);
static xf_status collect_declared(importer *im);

/* ------------------------------------------------------------ subgraphs */

/* Loads subgraph gp of a node of parent's graph into a new graph: its
 * formal inputs, then the node's outer values (see xf_opaque_body).  Input
 * shapes stay unknown (they may change from one run to the next); dtypes
 * are the declared ones, an outer value's as the enclosing graph has it. */
static xf_status import_body(const importer *parent, const Onnx__GraphProto *gp, const char *const *outer,
                             size_t n_outer, xf_graph **out)
{
    importer im = {.mp = parent->mp, .gp = gp, .m = parent->m, .err = parent->err, .tensors = parent->tensors};
    const xfp_symbols no_symbols = {0};
    *out = NULL;
    im.g = xf_graph_create(gp->name);
    xf_status s = im.g ? collect_declared(&im) : oom(&im);
    if (s == XF_OK)
        s = import_initializers(&im);
    xf_shape unknown = {.ndim = -1};
    for (size_t i = 0; i < gp->n_input && s == XF_OK; i++) {
        const Onnx__ValueInfoProto *vi = gp->input[i];
        xf_dtype dt;
        xf_shape ignored;
        xf_value_kind kind;
        if (!xfp_container_type(vi->type, &kind, &dt, &ignored))
            xfp_declared_type(vi->type, &no_symbols, &dt, &ignored);
        s = vi->name && vi->name[0] ? check_new_name(&im, vi->name, "a subgraph input")
                                    : xf_error_set(im.err, XF_ERR_INVALID, "subgraph input %zu has no name", i);
        if (s == XF_OK)
            s = define_value(&im, set_kind(im.g, xf_graph_add_input(im.g, vi->name, dt, &unknown), kind));
    }
    for (size_t k = 0; k < n_outer && s == XF_OK; k++) {
        int pv = xfp_map_get(&parent->values, outer[k]);
        xf_dtype dt = pv >= 0 ? parent->g->values[pv].dtype : XF_DT_UNDEFINED;
        s = check_new_name(&im, outer[k], "a subgraph value");
        if (s == XF_OK)
            s = define_value(&im, set_kind(im.g, xf_graph_add_input(im.g, outer[k], dt, &unknown),
                                           pv >= 0 ? parent->g->values[pv].kind : XF_VK_TENSOR));
    }
    if (s == XF_OK)
        s = define_node_outputs(&im);
    for (size_t i = 0; i < gp->n_node && s == XF_OK; i++)
        if (im.node_outs[i] >= 0)
            s = import_node(&im, i);
    if (s == XF_OK)
        s = import_outputs(&im);
    if (s == XF_OK)
        s = xf_graph_toposort(im.g, im.err);
    /* declared element types of what inference cannot type (outputs of
     * opaque nodes); shapes are left to the run */
    for (int v = 0; s == XF_OK && v < im.g->n_values; v++) {
        xf_value *val = &im.g->values[v];
        int d = val->producer >= 0 && val->dtype == XF_DT_UNDEFINED ? xfp_map_get(&im.declared, val->name) : -1;
        xf_shape ignored;
        if (d >= 0)
            declared_sequence(val, ((const Onnx__ValueInfoProto *)im.declared_list.items[d])->type);
        if (d >= 0 && val->kind == XF_VK_TENSOR)
            xfp_declared_type(((const Onnx__ValueInfoProto *)im.declared_list.items[d])->type, &no_symbols, &val->dtype,
                              &ignored);
    }
    importer_free(&im);
    if (s != XF_OK)
        xf_graph_free(im.g);
    else
        *out = im.g;
    return s;
}

/* Loads o's subgraph attributes as graphs, so that runtimes can run the
 * node.  One that cannot be loaded leaves the node carried only: the
 * reason is logged, and the model still loads. */
static xf_status import_bodies(importer *im, const Onnx__NodeProto *np, const char *label, xf_opaque *o,
                               const char *const *outer, size_t n_outer)
{
    for (size_t i = 0; i < np->n_attribute; i++) {
        const Onnx__AttributeProto *a = np->attribute[i];
        if (!a->g)
            continue;
        xf_error body_err = {0};
        importer sub = *im;
        sub.err = &body_err;
        xf_graph *g;
        xf_status s = import_body(&sub, a->g, outer, n_outer, &g);
        if (s == XF_ERR_NOMEM || (s == XF_OK && !xf_opaque_add_body(o, a->name, (int)a->g->n_input, g)))
            return oom(im);
        if (s != XF_OK) {
            xf_log(XF_LOG_INFO, "%s is carried but cannot run: its subgraph '%s' does not load: %s", label,
                   str_or_empty(a->name), body_err.msg);
            for (int k = 0; k < o->n_bodies; k++)
                xf_graph_free(o->bodies[k].graph), free(o->bodies[k].attr);
            o->n_bodies = 0;
            return XF_OK;
        }
    }
    return XF_OK;
}

static xf_status make_opaque(importer *im, const Onnx__NodeProto *np, const char *label, xf_opaque **out,
                             int **ins, int *n_in)
{
    *out = NULL;
    size_t len = onnx__node_proto__get_packed_size(np);
    uint8_t *bytes = malloc(len ? len : 1);
    if (!bytes)
        return oom(im);
    onnx__node_proto__pack(np, bytes);
    *out = xf_opaque_create(str_or_empty(np->op_type), str_or_empty(np->domain), bytes, len);
    free(bytes);
    if (!*out)
        return oom(im);
    const char **outer;
    size_t n_outer;
    xf_status s = xfp_outer_names(np, &outer, &n_outer, im->err);
    if (s != XF_OK) {
        xf_error_prefix(im->err, "%s", label);
        return s;
    }
    if (n_outer > 0) {
        int *grown = realloc(*ins, sizeof(int) * ((size_t)*n_in + n_outer + 1));
        if (!grown)
            s = oom(im);
        else
            *ins = grown;
    }
    (*out)->n_own_inputs = *n_in;
    for (size_t i = 0; i < np->n_attribute && s == XF_OK; i++)
        s = xfp_opaque_attr(im, label, np->attribute[i], *out);
    for (size_t k = 0; k < n_outer && s == XF_OK; k++)
        s = resolve(im, outer[k], label, xfp_is_gradient(np) ? "names" : "has a subgraph that uses",
                    &(*ins)[(*n_in)++]);
    if (s == XF_OK)
        s = import_bodies(im, np, label, *out, outer, n_outer);
    free(outer);
    return s;
}

static xf_status import_node(importer *im, size_t index)
{
    const Onnx__NodeProto *np = im->gp->node[index];
    char label[600];
    node_label(np, index, label, sizeof label);
    int *ins = malloc(sizeof(int) * (np->n_input + 1));
    if (!ins)
        return oom(im);
    xf_status s = XF_OK;
    int n_in = (int)np->n_input;
    for (int k = 0; k < n_in && s == XF_OK; k++)
        s = resolve(im, np->input[k], label, "uses", &ins[k]);
    int n_out = (int)np->n_output;
    const int *outs = &im->out_ids[im->node_outs[index]];
    /* Trailing omitted optional inputs/outputs mean nothing to a known op. */
    int n_in_used = n_in, n_out_used = n_out;
    while (n_in_used > 0 && ins[n_in_used - 1] < 0)
        n_in_used--;
    while (n_out_used > 0 && outs[n_out_used - 1] < 0)
        n_out_used--;
    xf_op op = XF_OP_OPAQUE;
    xf_attrs attrs;
    xf_opaque *opaque = NULL;
    if (s == XF_OK)
        s = classify(im, np, label, n_in_used, ins, n_out_used, outs, &op, &attrs);
    if (s == XF_OK && op == XF_OP_OPAQUE)
        s = make_opaque(im, np, label, &opaque, &ins, &n_in);
    if (s == XF_OK && op == XF_OP_RESIZE && xf_model_opset(im->m) < 11) {
        ins[2] = ins[1]; /* opset 10's (X, scales) as (X, no roi, scales) */
        ins[1] = -1;
        n_in_used = 3;
    }
    if (s == XF_OK) {
        bool known = op != XF_OP_OPAQUE;
        int idx = xf_graph_add_node(im->g, op, np->name, known ? n_in_used : n_in, ins, known ? n_out_used : n_out,
                                    outs);
        if (idx < 0) {
            s = oom(im);
        } else if (known) {
            im->g->nodes[idx].attrs = attrs;
            attrs.value = NULL;
        } else {
            im->g->nodes[idx].opaque = opaque;
            opaque = NULL;
        }
    }
    if (op != XF_OP_OPAQUE)
        xf_tensor_release(attrs.value);
    xf_opaque_release(opaque);
    free(ins);
    return s;
}

static xf_status import_outputs(importer *im)
{
    for (size_t i = 0; i < im->gp->n_output; i++) {
        const char *name = str_or_empty(im->gp->output[i]->name);
        int id = xfp_map_get(&im->values, name);
        if (id < 0)
            return xf_error_set(im->err, XF_ERR_INVALID, "graph output '%s' is not defined by any node, input or "
                                "initializer", name);
        xf_graph_add_output(im->g, id);
        if (im->g->n_outputs != (int)i + 1)
            return oom(im);
        /* the dims the main graph's outputs declare symbolic, as it names them */
        const Onnx__TypeProto *t = im->g == im->m->graph ? im->gp->output[i]->type : NULL;
        const Onnx__TensorShapeProto *sp =
            t && t->value_case == ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE && t->tensor_type ? t->tensor_type->shape : NULL;
        for (size_t d = 0; sp && d < sp->n_dim && d < XF_MAX_DIMS; d++) {
            const Onnx__TensorShapeProto__Dimension *dim = sp->dim[d];
            if (!xfp_dim_is_size(dim) && !xf_model_add_declared_output(im->m, name, (int)d, xfp_dim_name(dim)))
                return oom(im);
        }
    }
    return XF_OK;
}

/* ------------------------------------------------------------ declared types */

static xf_status collect_declared(importer *im)
{
    const Onnx__GraphProto *gp = im->gp;
    /* Graph outputs come last so that their types win over value_info. */
    for (size_t i = 0; i < gp->n_value_info + gp->n_output; i++) {
        const Onnx__ValueInfoProto *vi = i < gp->n_value_info ? gp->value_info[i] : gp->output[i - gp->n_value_info];
        if (!vi->name || !vi->name[0])
            continue;
        if (!xfp_map_put(&im->declared, vi->name, (int)im->declared_list.n) ||
            !xfp_list_push(&im->declared_list, (void *)vi))
            return oom(im);
    }
    return XF_OK;
}

/* Gives node outputs whose dtype or shape is unknown the declared ones. */
static void apply_declared(importer *im)
{
    for (int v = 0; v < im->g->n_values; v++) {
        xf_value *val = &im->g->values[v];
        if (val->producer < 0 || (val->dtype != XF_DT_UNDEFINED && val->shape.ndim >= 0))
            continue;
        int d = xfp_map_get(&im->declared, val->name);
        if (d < 0)
            continue;
        const Onnx__ValueInfoProto *vi = im->declared_list.items[d];
        declared_sequence(val, vi->type);
        if (val->kind != XF_VK_TENSOR)
            continue;
        xf_dtype dt;
        xf_shape shape;
        xfp_declared_type(vi->type, &im->syms, &dt, &shape);
        if (val->dtype == XF_DT_UNDEFINED)
            val->dtype = dt;
        if (val->shape.ndim < 0)
            val->shape = shape;
    }
}

/* Sorts the declared entries into value_info of unknown names and the
 * fallback types of values whose type is still unknown (export uses them
 * only there, so that keeping others would make export and import disagree
 * about what is carried). */
static xf_status classify_declared(importer *im)
{
    for (size_t i = 0; i < im->declared_list.n; i++) {
        const Onnx__ValueInfoProto *vi = im->declared_list.items[i];
        if (xfp_map_get(&im->declared, vi->name) != (int)i)
            continue; /* superseded by a later entry of the same name */
        int v = xfp_map_get(&im->values, vi->name);
        bool ok = true;
        if (v < 0)
            ok = xfp_list_push(&im->unknown_vi, (void *)vi);
        else if (im->g->values[v].producer >= 0 &&
                 (im->g->values[v].dtype == XF_DT_UNDEFINED || im->g->values[v].shape.ndim < 0))
            ok = xfp_list_push(&im->fallback, (void *)vi);
        if (!ok)
            return oom(im);
    }
    return XF_OK;
}

static int by_name(const void *a, const void *b)
{
    const Onnx__ValueInfoProto *const *x = a, *const *y = b;
    return strcmp((*x)->name, (*y)->name);
}

static xf_status pack_extra(importer *im)
{
    const Onnx__ModelProto *mp = im->mp;
    const Onnx__GraphProto *gp = im->gp;
    Onnx__ModelProto ex;
    Onnx__GraphProto eg;
    onnx__model_proto__init(&ex);
    onnx__graph_proto__init(&eg);
    ex.n_functions = mp->n_functions;
    ex.functions = mp->functions;
    ex.n_training_info = mp->n_training_info;
    ex.training_info = mp->training_info;
    eg.doc_string = gp->doc_string && gp->doc_string[0] ? gp->doc_string : NULL;
    eg.n_quantization_annotation = gp->n_quantization_annotation;
    eg.quantization_annotation = gp->quantization_annotation;
    eg.n_value_info = im->unknown_vi.n;
    eg.value_info = (Onnx__ValueInfoProto **)im->unknown_vi.items;
    /* Sorted, so that the bytes do not depend on where the declarations
     * came from (export writes them back in value order). */
    if (im->fallback.n > 1)
        qsort(im->fallback.items, im->fallback.n, sizeof *im->fallback.items, by_name);
    eg.n_input = im->fallback.n;
    eg.input = (Onnx__ValueInfoProto **)im->fallback.items;
    /* Fields of newer ONNX versions than the onnx.proto xflow is built with. */
    ex.base.n_unknown_fields = mp->base.n_unknown_fields;
    ex.base.unknown_fields = mp->base.unknown_fields;
    eg.base.n_unknown_fields = gp->base.n_unknown_fields;
    eg.base.unknown_fields = gp->base.unknown_fields;
    if (eg.doc_string || eg.n_quantization_annotation || eg.n_value_info || eg.n_input || eg.base.n_unknown_fields)
        ex.graph = &eg;
    if (!ex.graph && !ex.n_functions && !ex.n_training_info && !ex.base.n_unknown_fields)
        return XF_OK;
    size_t len = onnx__model_proto__get_packed_size(&ex);
    im->m->extra = malloc(len ? len : 1);
    if (!im->m->extra)
        return oom(im);
    im->m->extra_len = onnx__model_proto__pack(&ex, im->m->extra);
    return XF_OK;
}

/* Appends to an inference error the sizes the symbolic dims were given
 * when any was not fixed by an override: sizes that do not fit together
 * (1 for each of a KV cache's past, seq and total = past + seq) are the
 * usual cause. */
static void hint_symbol_sizes(importer *im)
{
    char list[400] = "";
    size_t used = 0;
    bool any = false;
    for (size_t i = 0; i < im->syms.index.count && used < sizeof list - 100; i++) {
        const xfp_symbol *sym = &im->syms.slots[i];
        any |= sym->guessed;
        used += (size_t)snprintf(list + used, sizeof list - used, "%s%s=%" PRId64, used ? ", " : "", sym->name,
                                 sym->value);
    }
    /* unnamed dims, which --dim cannot name */
    bool unnamed = false;
    for (int i = 0; i < im->m->n_symbolic && used < sizeof list - 100; i++) {
        const xf_symbolic_dim *sd = &im->m->symbolic[i];
        int v = xf_graph_find_value(im->m->graph, sd->value);
        if (sd->name[0] || v < 0 || sd->dim >= im->m->graph->values[v].shape.ndim)
            continue;
        any = unnamed = true;
        used += (size_t)snprintf(list + used, sizeof list - used, "%s'%s' dim %d=%" PRId64, used ? ", " : "", sd->value,
                                 sd->dim, im->m->graph->values[v].shape.dims[sd->dim]);
    }
    size_t len = strlen(im->err->msg);
    if (any && len < sizeof im->err->msg)
        snprintf(im->err->msg + len, sizeof im->err->msg - len,
                 " (the symbolic dims were sized %s; if the model relates them, give sizes that fit with "
                 "--dim NAME=N%s, or fix them with --input-shape)",
                 list, unnamed ? " (unnamed ones: --input FILE.pb, whose size sizes them)" : "");
}

/* ------------------------------------------------------------ entry points */

static xf_status import_model(importer *im)
{
    xf_status s;
    if ((s = copy_model_fields(im)) != XF_OK || (s = check_default_opset(im)) != XF_OK ||
        (s = collect_declared(im)) != XF_OK ||
        (s = import_initializers(im)) != XF_OK || (s = import_inputs(im)) != XF_OK ||
        (s = define_node_outputs(im)) != XF_OK)
        return s;
    for (size_t i = 0; i < im->gp->n_node; i++)
        if (im->node_outs[i] >= 0 && (s = import_node(im, i)) != XF_OK)
            return s;
    if ((s = import_outputs(im)) != XF_OK || (s = xf_graph_toposort(im->g, im->err)) != XF_OK)
        return s;
    apply_declared(im);
    if ((s = xf_graph_infer_shapes(im->g, xf_model_opset(im->m), im->err)) != XF_OK) {
        hint_symbol_sizes(im);
        return s;
    }
    /* Inference leaves what it cannot know (downstream of opaque nodes) unknown. */
    apply_declared(im);
    if ((s = classify_declared(im)) != XF_OK)
        return s;
    return pack_extra(im);
}

static xf_status load_proto(const Onnx__ModelProto *mp, const char *base_dir, const xf_load_options *opt,
                            xf_model **out, xf_error *err)
{
    if (!mp->graph)
        return xf_error_set(err, XF_ERR_INVALID, "not a valid ONNX model (it has no graph)");
    importer im = {.mp = mp, .gp = mp->graph, .opt = opt, .err = err};
    im.syms.guess = opt ? opt->guess_size : 0;
    im.tensors.base_dir = base_dir;
    im.tensors.max_bytes = opt && opt->max_tensor_bytes ? opt->max_tensor_bytes : XF_DEFAULT_MAX_TENSOR_BYTES;
    im.m = xf_model_create();
    xf_status s = XF_OK;
    int inlined = 0;
    if (!im.m)
        s = oom(&im);
    else
        im.g = im.m->graph;
    if (s == XF_OK && (s = xfp_inline_functions(mp, &im.inlined, &im.gp, &inlined, err)) == XF_OK && inlined)
        xf_log(XF_LOG_INFO, "%d call%s of model-local functions inlined", inlined, inlined == 1 ? "" : "s");
    int lowered = 0;
    if (s == XF_OK)
        s = xfp_lower_nchwc(mp, &im.tensors, &im.inlined, &im.gp, &lowered, err);
    if (s == XF_OK && (s = xfp_lower_nhwc(mp, &im.inlined, &im.gp, &lowered, err)) == XF_OK && lowered)
        xf_log(XF_LOG_INFO, "%d of ONNX Runtime's channels-last quantized node%s made standard ops", lowered,
               lowered == 1 ? "" : "s");
    if (s == XF_OK)
        s = import_model(&im);
    if (opt && opt->guessed)
        *opt->guessed = im.syms.guessed;
    importer_free(&im);
    if (s != XF_OK) {
        xf_model_free(im.m);
        return s;
    }
    *out = im.m;
    return XF_OK;
}

static Onnx__ModelProto *unpack(const void *buf, size_t len, xf_error *err)
{
    if (xfp_check_depth(buf, len, &onnx__model_proto__descriptor, XFP_MAX_MESSAGE_DEPTH, err) != XF_OK)
        return NULL;
    Onnx__ModelProto *mp = onnx__model_proto__unpack(NULL, len, buf);
    if (!mp)
        xf_error_set(err, XF_ERR_PARSE, "not a valid ONNX model (protobuf parse failed: truncated or corrupt)");
    return mp;
}

xf_status xf_model_load_buffer(const void *buf, size_t len, const char *base_dir, const xf_load_options *opt,
                               xf_model **out, xf_error *err)
{
    *out = NULL;
    Onnx__ModelProto *mp = unpack(buf, len, err);
    xf_status s = mp ? load_proto(mp, base_dir, opt, out, err) : XF_ERR_PARSE;
    if (mp)
        onnx__model_proto__free_unpacked(mp, NULL);
    if (s != XF_OK)
        xfp_error_one_line(err);
    return s;
}

xf_status xf_model_load(const char *path, const xf_load_options *opt, xf_model **out, xf_error *err)
{
    *out = NULL;
    uint8_t *buf;
    size_t len;
    xf_status s = xfp_read_file(path, &buf, &len, err);
    if (s != XF_OK)
        return s;
    /* The file's bytes go before the tensors are made, so that a model's
     * weights are in memory at most twice (unpacked and as tensors). */
    Onnx__ModelProto *mp = unpack(buf, len, err);
    free(buf);
    char *dir = xfp_dirname(path);
    if (!mp)
        s = XF_ERR_PARSE;
    else if (!dir)
        s = xf_error_set(err, XF_ERR_NOMEM, "out of memory");
    else
        s = load_proto(mp, dir, opt, out, err);
    if (mp)
        onnx__model_proto__free_unpacked(mp, NULL);
    free(dir);
    if (s != XF_OK) {
        xf_error_prefix(err, "%s", path);
        xfp_error_one_line(err);
    }
    return s;
}
