/* Support for the proto test suites: building ModelProtos by hand,
 * packing and writing them, capturing log lines, and comparing models. */
#include "proto_util.h"
#include "backend_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xf_runtime.h"
#include "xf_test_util.h"
/* ------------------------------------------------------------ allocation for built protos */

/* What a test builds is freed by the fixture's teardown.  Repeated fields
 * get arrays of a fixed capacity, so that they never move. */
static void *allocs[MAX_ALLOCS];
static size_t n_allocs;

void *zalloc(size_t n)
{
    ck_assert_uint_lt(n_allocs, MAX_ALLOCS);
    void *p = calloc(1, n ? n : 1);
    ck_assert_ptr_nonnull(p);
    allocs[n_allocs++] = p;
    return p;
}

void free_allocs(void)
{
    while (n_allocs > 0)
        free(allocs[--n_allocs]);
}

/* ------------------------------------------------------------ proto builders */

Onnx__NodeProto *mk_node(const char *op, const char *name, const char *const *ins, const char *const *outs)
{
    Onnx__NodeProto *n = zalloc(sizeof *n);
    onnx__node_proto__init(n);
    n->op_type = (char *)op;
    n->name = (char *)name;
    for (; ins && *ins; ins++)
        PUSH(n->n_input, n->input, (char *)*ins);
    for (; outs && *outs; outs++)
        PUSH(n->n_output, n->output, (char *)*outs);
    return n;
}

Onnx__AttributeProto *mk_attr(Onnx__NodeProto *n, const char *name, Onnx__AttributeProto__AttributeType t)
{
    Onnx__AttributeProto *a = zalloc(sizeof *a);
    onnx__attribute_proto__init(a);
    a->name = (char *)name;
    a->has_type = 1;
    a->type = t;
    PUSH(n->n_attribute, n->attribute, a);
    return a;
}

void attr_int(Onnx__NodeProto *n, const char *name, int64_t v)
{
    Onnx__AttributeProto *a = mk_attr(n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT);
    a->has_i = 1;
    a->i = v;
}

void attr_float(Onnx__NodeProto *n, const char *name, float v)
{
    Onnx__AttributeProto *a = mk_attr(n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT);
    a->has_f = 1;
    a->f = v;
}

void attr_ints(Onnx__NodeProto *n, const char *name, int count, const int64_t *v)
{
    Onnx__AttributeProto *a = mk_attr(n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS);
    a->n_ints = (size_t)count;
    a->ints = (int64_t *)v;
}

void attr_floats(Onnx__NodeProto *n, const char *name, int count, const float *v)
{
    Onnx__AttributeProto *a = mk_attr(n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS);
    a->n_floats = (size_t)count;
    a->floats = (float *)v;
}

void attr_strings(Onnx__NodeProto *n, const char *name, int count, const char *const *v)
{
    Onnx__AttributeProto *a = mk_attr(n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS);
    a->n_strings = (size_t)count;
    a->strings = zalloc(sizeof *a->strings * (size_t)(count > 0 ? count : 1));
    for (int i = 0; i < count; i++)
        a->strings[i] = (ProtobufCBinaryData){strlen(v[i]), (uint8_t *)v[i]};
}

Onnx__AttributeProto *attr_graph(Onnx__NodeProto *n, const char *name, Onnx__GraphProto *g)
{
    Onnx__AttributeProto *a = mk_attr(n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH);
    a->g = g;
    return a;
}

void attr_string(Onnx__NodeProto *n, const char *name, const char *v)
{
    Onnx__AttributeProto *a = mk_attr(n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING);
    a->has_s = 1;
    a->s.data = (uint8_t *)v;
    a->s.len = strlen(v);
}

/* dims[i] < 0 means the symbolic dim params[i] (or an unnamed one when
 * params is NULL). ndim < 0: no shape at all. */
Onnx__ValueInfoProto *mk_vi(const char *name, int elem, int ndim, const int64_t *dims,
                                   const char *const *params)
{
    Onnx__ValueInfoProto *vi = zalloc(sizeof *vi);
    onnx__value_info_proto__init(vi);
    vi->name = (char *)name;
    Onnx__TypeProto *t = zalloc(sizeof *t);
    onnx__type_proto__init(t);
    Onnx__TypeProto__Tensor *tt = zalloc(sizeof *tt);
    onnx__type_proto__tensor__init(tt);
    t->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
    t->tensor_type = tt;
    tt->has_elem_type = 1;
    tt->elem_type = elem;
    vi->type = t;
    if (ndim < 0)
        return vi;
    tt->shape = zalloc(sizeof *tt->shape);
    onnx__tensor_shape_proto__init(tt->shape);
    for (int i = 0; i < ndim; i++) {
        Onnx__TensorShapeProto__Dimension *d = zalloc(sizeof *d);
        onnx__tensor_shape_proto__dimension__init(d);
        if (dims[i] >= 0) {
            d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
            d->dim_value = dims[i];
        } else if (params && params[i]) {
            d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
            d->dim_param = (char *)params[i];
        }
        PUSH(tt->shape->n_dim, tt->shape->dim, d);
    }
    return vi;
}

Onnx__TensorProto *mk_tensor(const char *name, int dtype, int ndim, const int64_t *dims)
{
    Onnx__TensorProto *t = zalloc(sizeof *t);
    onnx__tensor_proto__init(t);
    t->name = (char *)name;
    t->has_data_type = 1;
    t->data_type = dtype;
    t->n_dims = (size_t)ndim;
    t->dims = (int64_t *)dims;
    return t;
}

Onnx__TensorProto *mk_strings(const char *name, int ndim, const int64_t *dims, int n, const char *const *s)
{
    Onnx__TensorProto *t = mk_tensor(name, XF_DT_STRING, ndim, dims);
    t->n_string_data = (size_t)n;
    t->string_data = zalloc(sizeof *t->string_data * (size_t)(n ? n : 1));
    for (int i = 0; i < n; i++)
        t->string_data[i] = (ProtobufCBinaryData){strlen(s[i]), (uint8_t *)s[i]};
    return t;
}

Onnx__TensorProto *mk_raw(const char *name, int dtype, int ndim, const int64_t *dims, const void *data,
                                 size_t nbytes)
{
    Onnx__TensorProto *t = mk_tensor(name, dtype, ndim, dims);
    t->has_raw_data = 1;
    t->raw_data.data = (uint8_t *)data;
    t->raw_data.len = nbytes;
    return t;
}

Onnx__GraphProto *mk_graph(const char *name)
{
    Onnx__GraphProto *g = zalloc(sizeof *g);
    onnx__graph_proto__init(g);
    g->name = (char *)name;
    return g;
}

Onnx__ModelProto *mk_model(Onnx__GraphProto *g, int64_t opset)
{
    Onnx__ModelProto *m = zalloc(sizeof *m);
    onnx__model_proto__init(m);
    m->has_ir_version = 1;
    m->ir_version = 8;
    m->graph = g;
    PUSH(m->n_opset_import, m->opset_import, mk_opset("", opset));
    return m;
}

Onnx__OperatorSetIdProto *mk_opset(const char *domain, int64_t version)
{
    Onnx__OperatorSetIdProto *o = zalloc(sizeof *o);
    onnx__operator_set_id_proto__init(o);
    o->domain = (char *)domain;
    o->has_version = 1;
    o->version = version;
    return o;
}

void add_opset(Onnx__ModelProto *m, const char *domain, int64_t version)
{
    PUSH(m->n_opset_import, m->opset_import, mk_opset(domain, version));
}

uint8_t *pack_model(const Onnx__ModelProto *m, size_t *len)
{
    *len = onnx__model_proto__get_packed_size(m);
    uint8_t *buf = malloc(*len ? *len : 1);
    ck_assert_ptr_nonnull(buf);
    onnx__model_proto__pack(m, buf);
    return buf;
}

void write_bytes(const char *path, const void *buf, size_t len)
{
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(buf, 1, len, f), len);
    fclose(f);
}

void write_model(const Onnx__ModelProto *m, const char *path)
{
    size_t len;
    uint8_t *buf = pack_model(m, &len);
    write_bytes(path, buf, len);
    free(buf);
}

xf_status load_proto(const Onnx__ModelProto *mp, const xf_load_options *opt, xf_model **out, xf_error *e)
{
    size_t len;
    uint8_t *buf = pack_model(mp, &len);
    xf_status s = xf_model_load_buffer(buf, len, NULL, opt, out, e);
    free(buf);
    return s;
}

xf_model *load_counting(Onnx__GraphProto *g, int64_t opset, int counts[XF_OP_COUNT + 1])
{
    xf_model *m;
    xf_error e;
    ck_assert_msg(load_proto(mk_model(g, opset), NULL, &m, &e) == XF_OK, "%s", e.msg);
    xf_graph_count_ops(m->graph, counts);
    return m;
}

const char *path_in(const char *dir, const char *file)
{
    static char buf[8][4096];
    static int next;
    char *p = buf[next++ % 8];
    snprintf(p, 4096, "%s/%s", dir, file);
    return p;
}

/* Number of directory entries (besides . and ..). */
int count_files(const char *dir)
{
    char cmd[4200], *out = NULL;
    snprintf(cmd, sizeof cmd, "ls -A '%s' | wc -l", dir);
    ck_assert_int_eq(xf_test_run(cmd, &out), 0);
    int n = atoi(out);
    free(out);
    return n;
}

/* Runs onnx.checker (tests/onnx_check.py) on the model files. */
void assert_onnx_valid(const char *paths)
{
    char cmd[8400], *out = NULL;
    snprintf(cmd, sizeof cmd, XF_PYTHON " '%s/tests/onnx_check.py' %s", XF_SOURCE_DIR, paths);
    int rc = xf_test_run(cmd, &out);
    ck_assert_msg(rc == 0, "onnx.checker rejects %s:\n%s", paths, out ? out : "");
    free(out);
}

/* ------------------------------------------------------------ log capture */

char captured[8192];

static void capture_log(int level, const char *msg, void *user)
{
    (void)user;
    if (level > XF_LOG_WARN)
        return;
    size_t used = strlen(captured);
    snprintf(captured + used, sizeof captured - used, "%s\n", msg);
}

void capture_start(void)
{
    captured[0] = '\0';
    xf_log_set(capture_log, NULL, XF_LOG_WARN);
}

/* ------------------------------------------------------------ comparison */

bool tensors_equal(const xf_tensor *a, const xf_tensor *b)
{
    if (!a || !b)
        return a == b;
    if (a->dtype != b->dtype || !xf_shape_equal(&a->shape, &b->shape) || a->nbytes != b->nbytes)
        return false;
    if (a->dtype == XF_DT_STRING) {
        for (int64_t i = 0; i < xf_tensor_numel(a); i++)
            if (strcmp(a->strings[i] ? a->strings[i] : "", b->strings[i] ? b->strings[i] : "") != 0)
                return false;
        return true;
    }
    return a->nbytes == 0 || memcmp(a->data, b->data, a->nbytes) == 0;
}

bool attrs_equal(const xf_attrs *a, const xf_attrs *b)
{
#define EQ(f) (a->f == b->f)
#define ARR(f, n) ((n) <= 0 || memcmp(a->f, b->f, sizeof a->f[0] * (size_t)(n)) == 0)
    return EQ(n_spatial) && ARR(kernel, XF_MAX_SPATIAL) && ARR(strides, XF_MAX_SPATIAL) &&
           ARR(pads, 2 * XF_MAX_SPATIAL) && ARR(dilations, XF_MAX_SPATIAL) && EQ(group) && EQ(auto_pad) &&
           EQ(ceil_mode) && EQ(count_include_pad) && EQ(storage_order) && EQ(activation) &&
           ARR(output_padding, XF_MAX_SPATIAL) &&
           ARR(output_shape, XF_MAX_SPATIAL) && EQ(has_output_shape) && EQ(axis) && EQ(n_axes) &&
           ARR(axes, a->n_axes) && EQ(has_axes) && EQ(n_perm) && ARR(perm, a->n_perm) && EQ(keepdims) &&
           EQ(noop_with_empty_axes) && EQ(num_outputs) && EQ(n_split) && ARR(split, a->n_split) &&
           EQ(allowzero) && EQ(softmax_legacy) && EQ(alpha) && EQ(beta) && EQ(epsilon) && EQ(trans_a) &&
           EQ(trans_b) && EQ(to) && EQ(start) && EQ(end) && EQ(has_end) && EQ(pad_mode) && EQ(pad_value) &&
           EQ(n_pads) && ARR(pad_pads, a->n_pads) && EQ(has_pads) && EQ(clip_min) && EQ(clip_max) &&
           EQ(has_clip_attrs) && EQ(fmod) && EQ(batch_dims) && EQ(topk_smallest) && EQ(topk_unsorted) && EQ(reduction) &&
           EQ(block_size) && EQ(output_dtype) && EQ(no_saturate) && EQ(round_mode) && EQ(roi_max) &&
           EQ(roi_output_h) && EQ(roi_output_w) &&
           EQ(roi_sampling_ratio) && EQ(roi_spatial_scale) && EQ(roi_output_half_pixel) && EQ(center_point_box) &&
           EQ(grid_mode) && EQ(grid_padding) && EQ(grid_align_corners) &&
           EQ(dft_inverse) && EQ(dft_onesided) && EQ(window_symmetric) && EQ(offset_group) &&
           EQ(isinf_no_neg) && EQ(isinf_no_pos) && EQ(gelu_tanh) && EQ(shift_right) && EQ(prelu_channels) &&
           EQ(select_last_index) && EQ(cumsum_exclusive) && EQ(cumsum_reverse) && EQ(lrn_size) && EQ(lrn_bias) &&
           EQ(lp_p) && EQ(trilu_lower) && EQ(depth_crd) && EQ(eye_k) && EQ(onehot_legacy) && EQ(has_axis) &&
           xf_rnn_attrs_equal(&a->rnn, &b->rnn) && EQ(resize_mode) && EQ(resize_coord) && EQ(resize_nearest) && EQ(n_slice) && ARR(slice_starts, a->n_slice) && ARR(slice_ends, a->n_slice) &&
           ARR(slice_axes, a->n_slice) && EQ(has_slice_attrs) && EQ(has_slice_axes) &&
           tensors_equal(a->value, b->value) && xf_attn_attrs_equal(&a->attn, &b->attn) && EQ(ms_act) &&
           ARR(ms_act_params, 2) && EQ(trans_batch_a) && EQ(trans_batch_b) && EQ(new_axis) && EQ(opt_type) &&
           (!a->opt_type || xf_shape_equal(&a->opt_shape, &b->opt_shape)) && EQ(rand_a) && EQ(rand_b) &&
           EQ(rand_has_seed) && EQ(rand_seed) && EQ(rand_has_shape) && EQ(sample_size) &&
           (!a->rand_has_shape || xf_shape_equal(&a->rand_shape, &b->rand_shape));
#undef EQ
#undef ARR
}

const char *vname(const xf_graph *g, int v) { return v >= 0 ? g->values[v].name : ""; }

int find_node_by_output(const xf_graph *g, const char *name)
{
    for (int i = 0; i < g->n_nodes; i++)
        for (int k = 0; k < g->nodes[i].n_outputs; k++)
            if (strcmp(vname(g, g->nodes[i].outputs[k]), name) == 0 && name[0])
                return i;
    return -1;
}

bool values_equal(const xf_value *a, const xf_value *b)
{
    return a->dtype == b->dtype && xf_shape_equal(&a->shape, &b->shape) && tensors_equal(a->init, b->init) &&
           a->is_input == b->is_input && a->kind == b->kind;
}

/* Graphs equal up to node order: same inputs, outputs, constants, nodes
 * (matched by output names), attributes, types.  *why says what differs. */
bool graphs_equal(const xf_graph *a, const xf_graph *b, char *why, size_t n)
{
#define FAIL(...) return snprintf(why, n, __VA_ARGS__), false
    if (a->n_nodes != b->n_nodes || a->n_inputs != b->n_inputs || a->n_outputs != b->n_outputs)
        FAIL("counts differ: nodes %d/%d inputs %d/%d outputs %d/%d", a->n_nodes, b->n_nodes, a->n_inputs,
             b->n_inputs, a->n_outputs, b->n_outputs);
    if (strcmp(a->name, b->name) != 0)
        FAIL("graph names differ");
    for (int k = 0; k < a->n_inputs; k++)
        if (strcmp(vname(a, a->inputs[k]), vname(b, b->inputs[k])) ||
            !values_equal(&a->values[a->inputs[k]], &b->values[b->inputs[k]]))
            FAIL("input %d ('%s') differs", k, vname(a, a->inputs[k]));
    for (int k = 0; k < a->n_outputs; k++)
        if (strcmp(vname(a, a->outputs[k]), vname(b, b->outputs[k])) ||
            !values_equal(&a->values[a->outputs[k]], &b->values[b->outputs[k]]))
            FAIL("output %d ('%s') differs", k, vname(a, a->outputs[k]));
    for (int v = 0; v < a->n_values; v++) {
        const xf_value *va = &a->values[v];
        if (!va->init && va->producer < 0)
            continue;
        int w = xf_graph_find_value(b, va->name);
        if (w < 0 || !values_equal(va, &b->values[w]))
            FAIL("value '%s' differs", va->name);
    }
    for (int i = 0; i < a->n_nodes; i++) {
        const xf_node *na = &a->nodes[i];
        int first = 0;
        while (first < na->n_outputs && na->outputs[first] < 0)
            first++;
        if (first == na->n_outputs)
            continue;
        int j = find_node_by_output(b, vname(a, na->outputs[first]));
        if (j < 0)
            FAIL("no node produces '%s'", vname(a, na->outputs[first]));
        const xf_node *nb = &b->nodes[j];
        if (na->op != nb->op || na->n_inputs != nb->n_inputs || na->n_outputs != nb->n_outputs)
            FAIL("node producing '%s' differs in op or arity", vname(a, na->outputs[first]));
        for (int k = 0; k < na->n_inputs; k++)
            if (strcmp(vname(a, na->inputs[k]), vname(b, nb->inputs[k])))
                FAIL("node producing '%s' input %d differs", vname(a, na->outputs[first]), k);
        for (int k = 0; k < na->n_outputs; k++)
            if (strcmp(vname(a, na->outputs[k]), vname(b, nb->outputs[k])))
                FAIL("node producing '%s' output %d differs", vname(a, na->outputs[first]), k);
        if (na->op == XF_OP_OPAQUE) {
            if (strcmp(na->opaque->op_type, nb->opaque->op_type) || strcmp(na->opaque->domain, nb->opaque->domain) ||
                na->opaque->proto_len != nb->opaque->proto_len ||
                memcmp(na->opaque->proto, nb->opaque->proto, na->opaque->proto_len))
                FAIL("opaque node producing '%s' differs", vname(a, na->outputs[first]));
        } else if (!attrs_equal(&na->attrs, &nb->attrs)) {
            FAIL("attributes of node producing '%s' (%s) differ", vname(a, na->outputs[first]), xf_op_name(na->op));
        }
    }
    return true;
#undef FAIL
}

bool models_equal(const xf_model *a, const xf_model *b, char *why, size_t n)
{
    if (a->ir_version != b->ir_version || a->model_version != b->model_version || a->n_opsets != b->n_opsets ||
        a->n_metadata != b->n_metadata)
        return snprintf(why, n, "model fields differ"), false;
    for (int i = 0; i < a->n_opsets; i++)
        if (strcmp(a->opsets[i].domain, b->opsets[i].domain) || a->opsets[i].version != b->opsets[i].version)
            return snprintf(why, n, "opset %d differs", i), false;
    for (int i = 0; i < a->n_metadata; i++)
        if (strcmp(a->metadata[i].key, b->metadata[i].key) || strcmp(a->metadata[i].value, b->metadata[i].value))
            return snprintf(why, n, "metadata %d differs", i), false;
    if (a->extra_len != b->extra_len || (a->extra_len && memcmp(a->extra, b->extra, a->extra_len)))
        return snprintf(why, n, "carried-over data differs"), false;
    return graphs_equal(a->graph, b->graph, why, n);
}

/* export -> import of m, compared with m. */
xf_model *roundtrip(const xf_model *m)
{
    uint8_t *buf;
    size_t len;
    xf_error e;
    ck_assert_msg(xf_model_save_buffer(m, &buf, &len, &e) == XF_OK, "%s", e.msg);
    xf_model *back;
    ck_assert_msg(xf_model_load_buffer(buf, len, NULL, NULL, &back, &e) == XF_OK, "%s", e.msg);
    free(buf);
    char why[512];
    ck_assert_msg(models_equal(m, back, why, sizeof why), "round trip: %s", why);
    return back;
}

int find_node_op(const xf_graph *g, xf_op op)
{
    for (int i = 0; i < g->n_nodes; i++)
        if (g->nodes[i].op == op)
            return i;
    return -1;
}

/* The exported model of m (*buf holds its bytes). */
Onnx__ModelProto *saved_proto(const xf_model *m, uint8_t **buf)
{
    size_t len;
    xf_error e;
    ck_assert_msg(xf_model_save_buffer(m, buf, &len, &e) == XF_OK, "%s", e.msg);
    Onnx__ModelProto *mp = onnx__model_proto__unpack(NULL, len, *buf);
    ck_assert(mp && mp->graph);
    return mp;
}

Onnx__ModelProto *exported(const xf_model *m, uint8_t **buf)
{
    Onnx__ModelProto *mp = saved_proto(m, buf);
    ck_assert(mp->graph->n_node == 1);
    return mp;
}

bool has_attr(const Onnx__NodeProto *n, const char *name)
{
    for (size_t i = 0; i < n->n_attribute; i++)
        if (strcmp(n->attribute[i]->name, name) == 0)
            return true;
    return false;
}

void assert_values(const xf_tensor *t, int ndim, const int64_t *dims, const float *want)
{
    ck_assert_int_eq(t->dtype, XF_DT_FLOAT);
    ck_assert_int_eq(t->shape.ndim, ndim);
    for (int d = 0; d < ndim; d++)
        ck_assert_int_eq(t->shape.dims[d], dims[d]);
    for (int64_t i = 0; i < xf_tensor_numel(t); i++)
        ck_assert_msg(fabsf(((const float *)t->data)[i] - want[i]) < 1e-6f, "element %lld: %g, expected %g",
                      (long long)i, (double)((const float *)t->data)[i], (double)want[i]);
}

xf_tensor *string_tensor(xf_shape s, const char *const *v)
{
    xf_tensor *t = xf_tensor_create(XF_DT_STRING, &s);
    ck_assert_ptr_nonnull(t);
    for (int64_t i = 0; i < xf_tensor_numel(t); i++)
        t->strings[i] = strdup(v[i]);
    return t;
}

void assert_strings(const xf_tensor *t, xf_shape s, const char *const *want, const char *what)
{
    ck_assert_msg(t && t->dtype == XF_DT_STRING, "%s: not strings", what);
    ck_assert_msg(xf_shape_equal(&t->shape, &s), "%s: shape", what);
    for (int64_t i = 0; i < xf_tensor_numel(t); i++)
        ck_assert_msg(strcmp(t->strings[i], want[i]) == 0, "%s: element %lld is \"%s\", want \"%s\"", what,
                      (long long)i, t->strings[i], want[i]);
}

/* The backends that run graphs with run-time shapes: cpu_ref, and cpu
 * where this build has it. */
int host_backends(const char **names)
{
    int n = 0;
    names[n++] = "cpu_ref";
    if (xf_backend_find("cpu"))
        names[n++] = "cpu";
    return n;
}

void assert_saved_valid(const xf_model *m, const char *dir)
{
    const char *path = path_in(xf_test_tmpdir(dir), "m.onnx");
    xf_error e;
    ck_assert_msg(xf_model_save(m, path, NULL, &e) == XF_OK, "%s", e.msg);
    assert_onnx_valid(path);
}

void expect_export_refused(const xf_model *m, const char *node, const char *what, const char *also)
{
    uint8_t *buf = NULL;
    size_t len;
    xf_error e;
    ck_assert_int_eq(xf_model_save_buffer(m, &buf, &len, &e), XF_ERR_UNSUPPORTED);
    ck_assert_msg(strstr(e.msg, node) && strstr(e.msg, what) && (!also || strstr(e.msg, also)), "%s", e.msg);
}

void release_all(xf_tensor **t, int n)
{
    for (int i = 0; i < n; i++)
        xf_tensor_release(t[i]);
}

Onnx__ModelProto *unpack_model_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "cannot open %s", path);
    ck_assert(fseek(f, 0, SEEK_END) == 0);
    long len = ftell(f);
    ck_assert(len >= 0 && fseek(f, 0, SEEK_SET) == 0);
    uint8_t *buf = malloc((size_t)len + 1);
    ck_assert(buf && fread(buf, 1, (size_t)len, f) == (size_t)len);
    fclose(f);
    Onnx__ModelProto *mp = onnx__model_proto__unpack(NULL, (size_t)len, buf);
    free(buf);
    ck_assert_msg(mp != NULL, "%s is not a ModelProto", path);
    return mp;
}

Onnx__TensorProto *find_initializer(Onnx__ModelProto *mp, const char *name)
{
    for (size_t i = 0; i < mp->graph->n_initializer; i++)
        if (!strcmp(mp->graph->initializer[i]->name, name))
            return mp->graph->initializer[i];
    ck_abort_msg("no initializer %s", name);
    return NULL;
}

Onnx__ModelProto *unpack_fixture(const char *dir, const char *name)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s.onnx", dir, name);
    return unpack_model_file(path);
}

xf_tensor *load_tensor_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fclose(f);
    xf_tensor *t = NULL;
    xf_error e;
    ck_assert_msg(xf_tensor_load_pb(path, &t, NULL, &e) == XF_OK, "%s", e.msg);
    return t;
}

static xf_tensor *fixture_tensor(const char *dir, const char *name, const char *what, int k)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s.%s%d.pb", dir, name, what, k);
    return load_tensor_file(path);
}

int fixture_inputs(const char *dir, const char *name, xf_tensor **ins, int max)
{
    int n = 0;
    for (xf_tensor *t; n < max && (t = fixture_tensor(dir, name, "in", n)) != NULL; n++)
        ins[n] = t;
    return n;
}

void check_fixture_outputs(const xf_model *m, xf_tensor *const *ins, const char *dir, const char *name,
                           const char *backend)
{
    xf_session *s = NULL;
    xf_error e;
    ck_assert_msg(xf_session_create(m->graph, xf_model_opset(m), backend, NULL, &s, &e) == XF_OK, "%s", e.msg);
    xf_tensor *outs[8] = {0};
    ck_assert_int_le(m->graph->n_outputs, 8);
    ck_assert_msg(xf_session_run(s, ins, outs, &e) == XF_OK, "%s", e.msg);
    for (int k = 0; k < m->graph->n_outputs; k++) {
        xf_tensor *want = fixture_tensor(dir, name, "out", k);
        ck_assert_msg(want != NULL, "%s: no output %d", name, k);
        ck_assert_msg(xf_shape_equal(&want->shape, &outs[k]->shape) && want->dtype == outs[k]->dtype,
                      "%s output %d: shape or type", name, k);
        if (want->dtype != XF_DT_FLOAT) {
            ck_assert_msg(tensors_equal(want, outs[k]), "%s on %s, output %d differs", name, backend, k);
        } else {
            int64_t n = xf_tensor_numel(want);
            const float *w = want->data, *g = outs[k]->data;
            double big = 0, diff = 0;
            for (int64_t i = 0; i < n; i++) {
                big = fmax(big, fabs(w[i]));
                diff = fmax(diff, fabs(w[i] - g[i]));
            }
            ck_assert_msg(big > 0.01 && diff <= 2e-6 * big, "%s on %s, output %d: %g off, largest %g", name,
                          backend, k, diff, big);
        }
        xf_tensor_release(want);
        xf_tensor_release(outs[k]);
    }
    xf_session_free(s);
}

void check_peer_fixtures(const char *dir, const char *const *names, int n, xf_op op)
{
    for (int f = 0; f < n; f++) {
        Onnx__ModelProto *mp = unpack_fixture(dir, names[f]);
        xf_model *m = NULL;
        xf_error e;
        ck_assert_msg(load_proto(mp, NULL, &m, &e) == XF_OK, "%s: %s", names[f], e.msg);
        ck_assert_int_ge(find_node_op(m->graph, op), 0);
        xf_tensor *ins[8];
        int n_in = fixture_inputs(dir, names[f], ins, 8);
        check_fixture_outputs(m, ins, dir, names[f], "cpu_ref");
        if (xf_bt_have_cpu())
            check_fixture_outputs(m, ins, dir, names[f], "cpu");
        for (int i = 0; i < n_in; i++)
            xf_tensor_release(ins[i]);
        xf_model *back = roundtrip(m);
        char why[256];
        ck_assert_msg(models_equal(m, back, why, sizeof why), "%s: %s", names[f], why);
        xf_model_free(back);
        xf_model_free(m);
        onnx__model_proto__free_unpacked(mp, NULL);
    }
}
