/* ONNX import/export (proto/): round trips, what import keeps and refuses,
 * atomic writes, and every model of the ONNX backend test data. */
#include <check.h>
#include <glob.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "onnx.pb-c.h"
#include "xf_proto.h"
#include "xf_test_util.h"

#define TESTDATA "/usr/share/libonnx-testdata/data"

/* ------------------------------------------------------------ allocation for built protos */

/* What a test builds is freed by the fixture's teardown.  Repeated fields
 * get arrays of a fixed capacity, so that they never move. */
enum { MAX_ALLOCS = 4096, MAX_ITEMS = 64 };
static void *allocs[MAX_ALLOCS];
static size_t n_allocs;

static void *zalloc(size_t n)
{
    ck_assert_uint_lt(n_allocs, MAX_ALLOCS);
    void *p = calloc(1, n ? n : 1);
    ck_assert_ptr_nonnull(p);
    allocs[n_allocs++] = p;
    return p;
}

static void free_allocs(void)
{
    while (n_allocs > 0)
        free(allocs[--n_allocs]);
}

/* Appends p to a repeated field (count n, array items). */
#define PUSH(n, items, p)                                                                  \
    do {                                                                                   \
        if (!(items))                                                                      \
            (items) = zalloc(sizeof *(items) * MAX_ITEMS);                                 \
        ck_assert_uint_lt((n), MAX_ITEMS);                                                 \
        (items)[(n)++] = (p);                                                              \
    } while (0)

/* ------------------------------------------------------------ proto builders */

static Onnx__NodeProto *mk_node(const char *op, const char *name, const char *const *ins, const char *const *outs)
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

static Onnx__AttributeProto *mk_attr(Onnx__NodeProto *n, const char *name, Onnx__AttributeProto__AttributeType t)
{
    Onnx__AttributeProto *a = zalloc(sizeof *a);
    onnx__attribute_proto__init(a);
    a->name = (char *)name;
    a->has_type = 1;
    a->type = t;
    PUSH(n->n_attribute, n->attribute, a);
    return a;
}

static void attr_int(Onnx__NodeProto *n, const char *name, int64_t v)
{
    Onnx__AttributeProto *a = mk_attr(n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT);
    a->has_i = 1;
    a->i = v;
}

static void attr_float(Onnx__NodeProto *n, const char *name, float v)
{
    Onnx__AttributeProto *a = mk_attr(n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT);
    a->has_f = 1;
    a->f = v;
}

static void attr_ints(Onnx__NodeProto *n, const char *name, int count, const int64_t *v)
{
    Onnx__AttributeProto *a = mk_attr(n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS);
    a->n_ints = (size_t)count;
    a->ints = (int64_t *)v;
}

static void attr_string(Onnx__NodeProto *n, const char *name, const char *v)
{
    Onnx__AttributeProto *a = mk_attr(n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING);
    a->has_s = 1;
    a->s.data = (uint8_t *)v;
    a->s.len = strlen(v);
}

/* dims[i] < 0 means the symbolic dim params[i] (or an unnamed one when
 * params is NULL). ndim < 0: no shape at all. */
static Onnx__ValueInfoProto *mk_vi(const char *name, int elem, int ndim, const int64_t *dims,
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

static Onnx__TensorProto *mk_tensor(const char *name, int dtype, int ndim, const int64_t *dims)
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

static Onnx__TensorProto *mk_raw(const char *name, int dtype, int ndim, const int64_t *dims, const void *data,
                                 size_t nbytes)
{
    Onnx__TensorProto *t = mk_tensor(name, dtype, ndim, dims);
    t->has_raw_data = 1;
    t->raw_data.data = (uint8_t *)data;
    t->raw_data.len = nbytes;
    return t;
}

static Onnx__GraphProto *mk_graph(const char *name)
{
    Onnx__GraphProto *g = zalloc(sizeof *g);
    onnx__graph_proto__init(g);
    g->name = (char *)name;
    return g;
}

static Onnx__ModelProto *mk_model(Onnx__GraphProto *g, int64_t opset)
{
    Onnx__ModelProto *m = zalloc(sizeof *m);
    onnx__model_proto__init(m);
    m->has_ir_version = 1;
    m->ir_version = 8;
    m->graph = g;
    Onnx__OperatorSetIdProto *o = zalloc(sizeof *o);
    onnx__operator_set_id_proto__init(o);
    o->domain = "";
    o->has_version = 1;
    o->version = opset;
    PUSH(m->n_opset_import, m->opset_import, o);
    return m;
}

static void add_opset(Onnx__ModelProto *m, const char *domain, int64_t version)
{
    Onnx__OperatorSetIdProto *o = zalloc(sizeof *o);
    onnx__operator_set_id_proto__init(o);
    o->domain = (char *)domain;
    o->has_version = 1;
    o->version = version;
    PUSH(m->n_opset_import, m->opset_import, o);
}

static uint8_t *pack_model(const Onnx__ModelProto *m, size_t *len)
{
    *len = onnx__model_proto__get_packed_size(m);
    uint8_t *buf = malloc(*len ? *len : 1);
    ck_assert_ptr_nonnull(buf);
    onnx__model_proto__pack(m, buf);
    return buf;
}

static void write_bytes(const char *path, const void *buf, size_t len)
{
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(buf, 1, len, f), len);
    fclose(f);
}

static void write_model(const Onnx__ModelProto *m, const char *path)
{
    size_t len;
    uint8_t *buf = pack_model(m, &len);
    write_bytes(path, buf, len);
    free(buf);
}

static xf_status load_proto(const Onnx__ModelProto *mp, const xf_load_options *opt, xf_model **out, xf_error *e)
{
    size_t len;
    uint8_t *buf = pack_model(mp, &len);
    xf_status s = xf_model_load_buffer(buf, len, NULL, opt, out, e);
    free(buf);
    return s;
}

static const char *path_in(const char *dir, const char *file)
{
    static char buf[8][4096];
    static int next;
    char *p = buf[next++ % 8];
    snprintf(p, 4096, "%s/%s", dir, file);
    return p;
}

/* Number of directory entries (besides . and ..). */
static int count_files(const char *dir)
{
    char cmd[4200], *out = NULL;
    snprintf(cmd, sizeof cmd, "ls -A '%s' | wc -l", dir);
    ck_assert_int_eq(xf_test_run(cmd, &out), 0);
    int n = atoi(out);
    free(out);
    return n;
}

/* Runs onnx.checker (tests/onnx_check.py) on the model files. */
static void assert_onnx_valid(const char *paths)
{
    char cmd[8400], *out = NULL;
    snprintf(cmd, sizeof cmd, "/usr/bin/python3 '%s/tests/onnx_check.py' %s", XF_SOURCE_DIR, paths);
    int rc = xf_test_run(cmd, &out);
    ck_assert_msg(rc == 0, "onnx.checker rejects %s:\n%s", paths, out ? out : "");
    free(out);
}

/* ------------------------------------------------------------ log capture */

static char captured[8192];

static void capture_log(int level, const char *msg, void *user)
{
    (void)user;
    if (level > XF_LOG_WARN)
        return;
    size_t used = strlen(captured);
    snprintf(captured + used, sizeof captured - used, "%s\n", msg);
}

static void capture_start(void)
{
    captured[0] = '\0';
    xf_log_set(capture_log, NULL, XF_LOG_WARN);
}

/* ------------------------------------------------------------ comparison */

static bool tensors_equal(const xf_tensor *a, const xf_tensor *b)
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

static bool attrs_equal(const xf_attrs *a, const xf_attrs *b)
{
#define EQ(f) (a->f == b->f)
#define ARR(f, n) ((n) <= 0 || memcmp(a->f, b->f, sizeof a->f[0] * (size_t)(n)) == 0)
    return EQ(n_spatial) && ARR(kernel, XF_MAX_SPATIAL) && ARR(strides, XF_MAX_SPATIAL) &&
           ARR(pads, 2 * XF_MAX_SPATIAL) && ARR(dilations, XF_MAX_SPATIAL) && EQ(group) && EQ(auto_pad) &&
           EQ(ceil_mode) && EQ(count_include_pad) && EQ(activation) && EQ(axis) && EQ(n_axes) &&
           ARR(axes, a->n_axes) && EQ(has_axes) && EQ(n_perm) && ARR(perm, a->n_perm) && EQ(keepdims) &&
           EQ(noop_with_empty_axes) && EQ(num_outputs) && EQ(n_split) && ARR(split, a->n_split) &&
           EQ(allowzero) && EQ(softmax_legacy) && EQ(alpha) && EQ(beta) && EQ(epsilon) && EQ(trans_a) &&
           EQ(trans_b) && EQ(to) && EQ(start) && EQ(end) && EQ(has_end) && EQ(pad_mode) && EQ(pad_value) &&
           EQ(n_pads) && ARR(pad_pads, a->n_pads) && EQ(has_pads) && EQ(clip_min) && EQ(clip_max) &&
           EQ(has_clip_attrs) && EQ(n_slice) && ARR(slice_starts, a->n_slice) && ARR(slice_ends, a->n_slice) &&
           ARR(slice_axes, a->n_slice) && EQ(has_slice_attrs) && EQ(has_slice_axes) &&
           tensors_equal(a->value, b->value);
#undef EQ
#undef ARR
}

static const char *vname(const xf_graph *g, int v) { return v >= 0 ? g->values[v].name : ""; }

static int find_node_by_output(const xf_graph *g, const char *name)
{
    for (int i = 0; i < g->n_nodes; i++)
        for (int k = 0; k < g->nodes[i].n_outputs; k++)
            if (strcmp(vname(g, g->nodes[i].outputs[k]), name) == 0 && name[0])
                return i;
    return -1;
}

static bool values_equal(const xf_value *a, const xf_value *b)
{
    return a->dtype == b->dtype && xf_shape_equal(&a->shape, &b->shape) && tensors_equal(a->init, b->init) &&
           a->is_input == b->is_input;
}

/* Graphs equal up to node order: same inputs, outputs, constants, nodes
 * (matched by output names), attributes, types.  *why says what differs. */
static bool graphs_equal(const xf_graph *a, const xf_graph *b, char *why, size_t n)
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

static bool models_equal(const xf_model *a, const xf_model *b, char *why, size_t n)
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
static xf_model *roundtrip(const xf_model *m)
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

static int find_node_op(const xf_graph *g, xf_op op)
{
    for (int i = 0; i < g->n_nodes; i++)
        if (g->nodes[i].op == op)
            return i;
    return -1;
}

/* ------------------------------------------------------------ a model built with the core API */

static xf_tensor *filled(xf_dtype dt, int ndim, const int64_t *dims, float scale)
{
    xf_shape s = xf_shape_make(ndim, dims);
    xf_tensor *t = xf_tensor_create(dt, &s);
    ck_assert_ptr_nonnull(t);
    for (int64_t i = 0; i < xf_tensor_numel(t); i++)
        ((float *)t->data)[i] = scale * (float)(i % 7) - 1.0f;
    return t;
}

/* x[1,3,8,8] -> Conv(3x3, pad 1, 4 channels) -> Relu -> Add(bias) -> MaxPool(2x2) -> Softmax(axis 1)
 *                                                                 -> GlobalAveragePool (second output) */
static xf_model *make_cnn(void)
{
    xf_model *m = xf_model_create();
    ck_assert_ptr_nonnull(m);
    xf_graph *g = m->graph;
    free(g->name);
    g->name = strdup("cnn");
    m->ir_version = 8;
    m->opsets = calloc(1, sizeof *m->opsets);
    m->opsets[0].domain = strdup("");
    m->opsets[0].version = 13;
    m->n_opsets = 1;
    int64_t xd[] = {1, 3, 8, 8}, wd[] = {4, 3, 3, 3}, bd[] = {4}, ad[] = {1, 4, 1, 1};
    xf_shape xs = xf_shape_make(4, xd);
    int x = xf_graph_add_input(g, "x", XF_DT_FLOAT, &xs);
    xf_tensor *w = filled(XF_DT_FLOAT, 4, wd, 0.5f), *b = filled(XF_DT_FLOAT, 1, bd, 0.25f),
              *bias = filled(XF_DT_FLOAT, 4, ad, 2.0f);
    int wv = xf_graph_add_initializer(g, "w", w), bv = xf_graph_add_initializer(g, "b", b),
        av = xf_graph_add_initializer(g, "bias", bias);
    xf_tensor_release(w);
    xf_tensor_release(b);
    xf_tensor_release(bias);
    int c = xf_graph_add_value(g, "conv", XF_DT_UNDEFINED, NULL), r = xf_graph_add_value(g, "relu", 0, NULL),
        s = xf_graph_add_value(g, "sum", 0, NULL), p = xf_graph_add_value(g, "pool", 0, NULL),
        y = xf_graph_add_value(g, "y", 0, NULL), z = xf_graph_add_value(g, "z", 0, NULL);
    int conv = xf_graph_add_node(g, XF_OP_CONV, "conv0", 3, (int[]){x, wv, bv}, 1, &c);
    xf_attrs *ca = &g->nodes[conv].attrs;
    ca->n_spatial = 2;
    ca->kernel[0] = ca->kernel[1] = 3;
    for (int i = 0; i < 4; i++)
        ca->pads[i] = 1;
    xf_graph_add_node(g, XF_OP_RELU, "relu0", 1, &c, 1, &r);
    xf_graph_add_node(g, XF_OP_ADD, "add0", 2, (int[]){r, av}, 1, &s);
    int pool = xf_graph_add_node(g, XF_OP_MAX_POOL, "pool0", 1, &s, 1, &p);
    xf_attrs *pa = &g->nodes[pool].attrs;
    pa->n_spatial = 2;
    pa->kernel[0] = pa->kernel[1] = pa->strides[0] = pa->strides[1] = 2;
    int sm = xf_graph_add_node(g, XF_OP_SOFTMAX, "softmax0", 1, &p, 1, &y);
    g->nodes[sm].attrs.axis = 1;
    xf_graph_add_node(g, XF_OP_GLOBAL_AVERAGE_POOL, "gap0", 1, &s, 1, &z);
    xf_graph_add_output(g, y);
    xf_graph_add_output(g, z);
    xf_error e;
    ck_assert_msg(xf_graph_infer_shapes(g, 13, &e) == XF_OK, "%s", e.msg);
    return m;
}

START_TEST(test_roundtrip_core_model)
{
    xf_model *m = make_cnn();
    m->producer_name = strdup("xflow-test");
    m->producer_version = strdup("1.0");
    m->domain = strdup("org.example");
    m->doc_string = strdup("a test model");
    m->model_version = 7;
    m->metadata = calloc(2, sizeof *m->metadata);
    m->metadata[0] = (xf_kv){strdup("author"), strdup("me")};
    m->metadata[1] = (xf_kv){strdup("license"), strdup("MIT")};
    m->n_metadata = 2;
    xf_model *back = roundtrip(m);
    ck_assert_str_eq(back->producer_name, "xflow-test");
    ck_assert_str_eq(back->producer_version, "1.0");
    ck_assert_str_eq(back->domain, "org.example");
    ck_assert_str_eq(back->doc_string, "a test model");
    ck_assert_int_eq(back->graph->n_outputs, 2);
    int y = back->graph->outputs[0];
    ck_assert_int_eq(back->graph->values[y].shape.ndim, 4);
    ck_assert_int_eq(back->graph->values[y].shape.dims[2], 4);
    ck_assert_int_eq(back->graph->nodes[find_node_op(back->graph, XF_OP_CONV)].attrs.pads[3], 1);

    /* and through a file */
    const char *dir = xf_test_tmpdir("proto_roundtrip");
    xf_error e;
    ck_assert_msg(xf_model_save(m, path_in(dir, "cnn.onnx"), NULL, &e) == XF_OK, "%s", e.msg);
    xf_model *fromfile;
    ck_assert_msg(xf_model_load(path_in(dir, "cnn.onnx"), NULL, &fromfile, &e) == XF_OK, "%s", e.msg);
    char why[512];
    ck_assert_msg(models_equal(m, fromfile, why, sizeof why), "%s", why);
    ck_assert_int_eq(count_files(dir), 1); /* no temporary file left */
    assert_onnx_valid(path_in(dir, "cnn.onnx"));
    xf_model_free(fromfile);
    xf_model_free(back);
    xf_model_free(m);
}
END_TEST

START_TEST(test_fused_activation_exported_as_two_nodes)
{
    xf_model *m = make_cnn();
    xf_graph *g = m->graph;
    /* Fuse the Relu into the Conv by hand, as the optimizer would. */
    int conv = find_node_op(g, XF_OP_CONV), relu = find_node_op(g, XF_OP_RELU);
    g->nodes[conv].attrs.activation = XF_ACT_RELU;
    xf_graph_replace_uses(g, g->nodes[relu].outputs[0], g->nodes[conv].outputs[0]);
    bool *keep = calloc((size_t)g->n_nodes, sizeof *keep);
    for (int i = 0; i < g->n_nodes; i++)
        keep[i] = i != relu;
    xf_graph_compact(g, keep);
    free(keep);
    uint8_t *buf;
    size_t len;
    xf_error e;
    ck_assert_msg(xf_model_save_buffer(m, &buf, &len, &e) == XF_OK, "%s", e.msg);
    Onnx__ModelProto *mp = onnx__model_proto__unpack(NULL, len, buf);
    ck_assert_ptr_nonnull(mp);
    int conv_at = -1, relu_at = -1;
    for (size_t i = 0; i < mp->graph->n_node; i++) {
        if (!strcmp(mp->graph->node[i]->op_type, "Conv"))
            conv_at = (int)i;
        if (!strcmp(mp->graph->node[i]->op_type, "Relu"))
            relu_at = (int)i;
    }
    ck_assert_int_ge(conv_at, 0);
    ck_assert_int_eq(relu_at, conv_at + 1);
    ck_assert_str_eq(mp->graph->node[relu_at]->input[0], mp->graph->node[conv_at]->output[0]);
    ck_assert_str_eq(mp->graph->node[relu_at]->output[0], "conv");
    onnx__model_proto__free_unpacked(mp, NULL);
    const char *dir = xf_test_tmpdir("proto_fused");
    ck_assert_msg(xf_model_save(m, path_in(dir, "m.onnx"), NULL, &e) == XF_OK, "%s", e.msg);
    assert_onnx_valid(path_in(dir, "m.onnx"));
    free(buf);
    xf_model_free(m);
}
END_TEST

/* ------------------------------------------------------------ opaque nodes and subgraphs */

/* A custom-domain op with a string attribute and a subgraph that uses the
 * outer value 'h' by name. */
static Onnx__ModelProto *make_custom_op_model(Onnx__NodeProto **custom_out)
{
    static const int64_t d4[] = {4};
    Onnx__GraphProto *g = mk_graph("outer");
    PUSH(g->n_input, g->input, mk_vi("x", XF_DT_FLOAT, 1, d4, NULL));
    PUSH(g->n_node, g->node, mk_node("Relu", "r", (const char *[]){"x", NULL}, (const char *[]){"h", NULL}));

    Onnx__GraphProto *body = mk_graph("body");
    PUSH(body->n_node, body->node,
         mk_node("Add", "inner", (const char *[]){"h", "h", NULL}, (const char *[]){"b", NULL}));
    PUSH(body->n_output, body->output, mk_vi("b", XF_DT_FLOAT, 1, d4, NULL));

    Onnx__NodeProto *custom = mk_node("MyOp", "custom", (const char *[]){"x", NULL}, (const char *[]){"y", NULL});
    custom->domain = "com.example";
    custom->doc_string = "kept verbatim";
    attr_string(custom, "mode", "fancy");
    static const int64_t sizes[] = {1, 2, 3};
    attr_ints(custom, "sizes", 3, sizes);
    Onnx__AttributeProto *ga = mk_attr(custom, "body", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH);
    ga->g = body;
    PUSH(g->n_node, g->node, custom);
    PUSH(g->n_output, g->output, mk_vi("y", XF_DT_FLOAT, 1, d4, NULL));
    Onnx__ModelProto *m = mk_model(g, 13);
    add_opset(m, "com.example", 1);
    *custom_out = custom;
    return m;
}

START_TEST(test_opaque_custom_op_survives)
{
    Onnx__NodeProto *custom;
    Onnx__ModelProto *mp = make_custom_op_model(&custom);
    xf_model *m;
    xf_error e;
    ck_assert_msg(load_proto(mp, NULL, &m, &e) == XF_OK, "%s", e.msg);
    xf_graph *g = m->graph;
    int op = find_node_op(g, XF_OP_OPAQUE);
    ck_assert_int_ge(op, 0);
    ck_assert_str_eq(g->nodes[op].opaque->op_type, "MyOp");
    ck_assert_str_eq(g->nodes[op].opaque->domain, "com.example");
    /* the subgraph's use of 'h' is an input in the IR, after the node's own */
    ck_assert_int_eq(g->nodes[op].n_inputs, 2);
    ck_assert_str_eq(g->values[g->nodes[op].inputs[1]].name, "h");
    /* declared output type is kept for the opaque node's output */
    int y = g->outputs[0];
    ck_assert_int_eq(g->values[y].dtype, XF_DT_FLOAT);
    ck_assert_int_eq(g->values[y].shape.dims[0], 4);

    uint8_t *buf;
    size_t len;
    ck_assert_msg(xf_model_save_buffer(m, &buf, &len, &e) == XF_OK, "%s", e.msg);
    Onnx__ModelProto *out = onnx__model_proto__unpack(NULL, len, buf);
    ck_assert_ptr_nonnull(out);
    const Onnx__NodeProto *written = NULL;
    for (size_t i = 0; i < out->graph->n_node; i++)
        if (!strcmp(out->graph->node[i]->op_type, "MyOp"))
            written = out->graph->node[i];
    ck_assert_ptr_nonnull(written);
    size_t la = onnx__node_proto__get_packed_size(custom), lb = onnx__node_proto__get_packed_size(written);
    uint8_t *pa = zalloc(la), *pb = zalloc(lb);
    onnx__node_proto__pack(custom, pa);
    onnx__node_proto__pack(written, pb);
    ck_assert_uint_eq(la, lb);
    ck_assert(memcmp(pa, pb, la) == 0);
    onnx__model_proto__free_unpacked(out, NULL);
    free(buf);
    const char *dir = xf_test_tmpdir("proto_custom");
    ck_assert_msg(xf_model_save(m, path_in(dir, "m.onnx"), NULL, &e) == XF_OK, "%s", e.msg);
    assert_onnx_valid(path_in(dir, "m.onnx"));
    xf_model_free(roundtrip(m));
    xf_model_free(m);
}
END_TEST

START_TEST(test_outer_value_kept_by_name_after_rewrite)
{
    /* x -> Relu -> h; the custom op's body uses h.  Replace h by a fresh
     * value computed the same way and drop the old Relu: export must still
     * provide the name 'h' that the body refers to. */
    Onnx__NodeProto *custom;
    Onnx__ModelProto *mp = make_custom_op_model(&custom);
    xf_model *m;
    xf_error e;
    ck_assert_msg(load_proto(mp, NULL, &m, &e) == XF_OK, "%s", e.msg);
    xf_graph *g = m->graph;
    int relu = find_node_op(g, XF_OP_RELU);
    int x = g->inputs[0], h = g->nodes[relu].outputs[0];
    int h2 = xf_graph_add_value(g, "h_new", XF_DT_FLOAT, &g->values[h].shape);
    xf_graph_add_node(g, XF_OP_RELU, "r2", 1, &x, 1, &h2);
    xf_graph_replace_uses(g, h, h2);
    bool *keep = calloc((size_t)g->n_nodes, sizeof *keep);
    for (int i = 0; i < g->n_nodes; i++)
        keep[i] = i != relu;
    xf_graph_compact(g, keep);
    free(keep);
    ck_assert_int_eq(xf_graph_toposort(g, &e), XF_OK);
    ck_assert_int_lt(xf_graph_find_value(g, "h"), 0);

    uint8_t *buf;
    size_t len;
    ck_assert_msg(xf_model_save_buffer(m, &buf, &len, &e) == XF_OK, "%s", e.msg);
    xf_model *back;
    ck_assert_msg(xf_model_load_buffer(buf, len, NULL, NULL, &back, &e) == XF_OK, "%s", e.msg);
    int bh = xf_graph_find_value(back->graph, "h");
    ck_assert_int_ge(bh, 0);
    ck_assert_int_eq(back->graph->nodes[back->graph->values[bh].producer].op, XF_OP_IDENTITY);
    const char *dir = xf_test_tmpdir("proto_outer");
    ck_assert_msg(xf_model_save(m, path_in(dir, "m.onnx"), NULL, &e) == XF_OK, "%s", e.msg);
    assert_onnx_valid(path_in(dir, "m.onnx"));
    free(buf);
    xf_model_free(back);
    xf_model_free(m);
}
END_TEST

START_TEST(test_known_op_with_unmodelled_attribute_stays_opaque)
{
    static const int64_t d[] = {1, 1, 4, 4}, k[] = {2, 2};
    Onnx__GraphProto *g = mk_graph("g");
    PUSH(g->n_input, g->input, mk_vi("x", XF_DT_FLOAT, 4, d, NULL));
    Onnx__NodeProto *pool = mk_node("MaxPool", "p", (const char *[]){"x", NULL}, (const char *[]){"y", NULL});
    attr_ints(pool, "kernel_shape", 2, k);
    attr_int(pool, "storage_order", 1);
    PUSH(g->n_node, g->node, pool);
    Onnx__NodeProto *sm = mk_node("Softmax", "s", (const char *[]){"y", NULL}, (const char *[]){"z", NULL});
    attr_string(sm, "flavour", "unknown");
    PUSH(g->n_node, g->node, sm);
    Onnx__NodeProto *lrelu = mk_node("LeakyRelu", "l", (const char *[]){"x", NULL}, (const char *[]){"w", NULL});
    attr_float(lrelu, "alpha", 0.2f);
    PUSH(g->n_node, g->node, lrelu);
    PUSH(g->n_output, g->output, mk_vi("z", XF_DT_FLOAT, 4, (const int64_t[]){1, 1, 2, 2}, NULL));
    PUSH(g->n_output, g->output, mk_vi("w", XF_DT_FLOAT, 4, d, NULL));
    xf_model *m;
    xf_error e;
    ck_assert_msg(load_proto(mk_model(g, 11), NULL, &m, &e) == XF_OK, "%s", e.msg);
    int counts[XF_OP_COUNT + 1];
    xf_graph_count_ops(m->graph, counts);
    ck_assert_int_eq(counts[XF_OP_OPAQUE], 2);
    ck_assert_int_eq(counts[XF_OP_LEAKY_RELU], 1);
    ck_assert(m->graph->nodes[find_node_op(m->graph, XF_OP_LEAKY_RELU)].attrs.alpha == 0.2f);
    /* z's shape comes from the declared output, the opaque node's own */
    int z = m->graph->outputs[0];
    ck_assert_int_eq(m->graph->values[z].shape.dims[3], 2);
    xf_model_free(roundtrip(m));
    xf_model_free(m);
}
END_TEST

/* ------------------------------------------------------------ import forms */

START_TEST(test_nodes_out_of_order)
{
    static const int64_t d[] = {2, 3};
    Onnx__GraphProto *g = mk_graph("g");
    PUSH(g->n_input, g->input, mk_vi("x", XF_DT_FLOAT, 2, d, NULL));
    PUSH(g->n_node, g->node, mk_node("Neg", "c", (const char *[]){"b", NULL}, (const char *[]){"y", NULL}));
    PUSH(g->n_node, g->node, mk_node("Abs", "b", (const char *[]){"a", NULL}, (const char *[]){"b", NULL}));
    PUSH(g->n_node, g->node, mk_node("Relu", "a", (const char *[]){"x", NULL}, (const char *[]){"a", NULL}));
    PUSH(g->n_output, g->output, mk_vi("y", XF_DT_FLOAT, 2, d, NULL));
    xf_model *m;
    xf_error e;
    ck_assert_msg(load_proto(mk_model(g, 13), NULL, &m, &e) == XF_OK, "%s", e.msg);
    ck_assert_int_eq(m->graph->n_nodes, 3);
    ck_assert_int_eq(m->graph->nodes[0].op, XF_OP_RELU);
    ck_assert_int_eq(m->graph->nodes[1].op, XF_OP_ABS);
    ck_assert_int_eq(m->graph->nodes[2].op, XF_OP_NEG);
    ck_assert_int_eq(xf_graph_validate(m->graph, &e), XF_OK);
    xf_model_free(m);
}
END_TEST

START_TEST(test_initializer_listed_as_input)
{
    static const int64_t d[] = {2};
    static const float w[] = {1.5f, -2.0f};
    Onnx__GraphProto *g = mk_graph("g");
    PUSH(g->n_input, g->input, mk_vi("x", XF_DT_FLOAT, 1, d, NULL));
    PUSH(g->n_input, g->input, mk_vi("w", XF_DT_FLOAT, 1, d, NULL));
    PUSH(g->n_initializer, g->initializer, mk_raw("w", XF_DT_FLOAT, 1, d, w, sizeof w));
    PUSH(g->n_node, g->node, mk_node("Mul", "m", (const char *[]){"x", "w", NULL}, (const char *[]){"y", NULL}));
    PUSH(g->n_output, g->output, mk_vi("y", XF_DT_FLOAT, 1, d, NULL));
    Onnx__ModelProto *mp = mk_model(g, 7);
    mp->ir_version = 3;
    xf_model *m;
    xf_error e;
    ck_assert_msg(load_proto(mp, NULL, &m, &e) == XF_OK, "%s", e.msg);
    ck_assert_int_eq(m->graph->n_inputs, 1);
    int wv = xf_graph_find_value(m->graph, "w");
    ck_assert_ptr_nonnull(m->graph->values[wv].init);
    ck_assert(!m->graph->values[wv].is_input);
    /* IR 3 requires initializers among the inputs: export lists them again */
    uint8_t *buf;
    size_t len;
    ck_assert_msg(xf_model_save_buffer(m, &buf, &len, &e) == XF_OK, "%s", e.msg);
    Onnx__ModelProto *out = onnx__model_proto__unpack(NULL, len, buf);
    ck_assert_uint_eq(out->graph->n_input, 2);
    ck_assert_str_eq(out->graph->input[1]->name, "w");
    onnx__model_proto__free_unpacked(out, NULL);
    free(buf);
    xf_model_free(roundtrip(m));
    xf_model_free(m);
}
END_TEST

START_TEST(test_constant_nodes_become_initializers)
{
    static const int64_t d[] = {3};
    static const float cv[] = {1, 2, 3};
    Onnx__GraphProto *g = mk_graph("g");
    PUSH(g->n_input, g->input, mk_vi("x", XF_DT_FLOAT, 1, d, NULL));
    Onnx__NodeProto *c1 = mk_node("Constant", "c1", NULL, (const char *[]){"c1", NULL});
    Onnx__AttributeProto *va = mk_attr(c1, "value", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR);
    va->t = mk_raw(NULL, XF_DT_FLOAT, 1, d, cv, sizeof cv);
    Onnx__NodeProto *c2 = mk_node("Constant", "c2", NULL, (const char *[]){"c2", NULL});
    attr_float(c2, "value_float", 0.5f);
    Onnx__NodeProto *c3 = mk_node("Constant", "c3", NULL, (const char *[]){"c3", NULL});
    static const int64_t three[] = {3};
    attr_ints(c3, "value_ints", 1, three);
    Onnx__NodeProto *c4 = mk_node("Constant", "c4", NULL, (const char *[]){"c4", NULL});
    attr_string(c4, "value_string", "text");
    Onnx__NodeProto *nodes[] = {
        c1, c2, c3, c4, mk_node("Add", "a", (const char *[]){"x", "c1", NULL}, (const char *[]){"s", NULL}),
        mk_node("Mul", "m", (const char *[]){"s", "c2", NULL}, (const char *[]){"p", NULL}),
        mk_node("Reshape", "r", (const char *[]){"p", "c3", NULL}, (const char *[]){"y", NULL})};
    for (size_t i = 0; i < sizeof nodes / sizeof nodes[0]; i++)
        PUSH(g->n_node, g->node, nodes[i]);
    PUSH(g->n_output, g->output, mk_vi("y", XF_DT_FLOAT, 1, d, NULL));
    PUSH(g->n_output, g->output, mk_vi("c4", XF_DT_STRING, 0, NULL, NULL));
    xf_model *m;
    xf_error e;
    ck_assert_msg(load_proto(mk_model(g, 13), NULL, &m, &e) == XF_OK, "%s", e.msg);
    xf_graph *gr = m->graph;
    ck_assert_int_eq(gr->n_nodes, 4); /* Add, Mul, Reshape and the string Constant (opaque) */
    const xf_tensor *t1 = gr->values[xf_graph_find_value(gr, "c1")].init;
    const xf_tensor *t2 = gr->values[xf_graph_find_value(gr, "c2")].init;
    const xf_tensor *t3 = gr->values[xf_graph_find_value(gr, "c3")].init;
    ck_assert(t1 && t1->dtype == XF_DT_FLOAT && ((float *)t1->data)[2] == 3.0f);
    ck_assert(t2 && t2->shape.ndim == 0 && ((float *)t2->data)[0] == 0.5f);
    ck_assert(t3 && t3->dtype == XF_DT_INT64 && ((int64_t *)t3->data)[0] == 3);
    ck_assert_ptr_null(gr->values[xf_graph_find_value(gr, "c4")].init);
    ck_assert_int_eq(gr->values[gr->outputs[0]].shape.dims[0], 3);
    xf_model_free(roundtrip(m));
    xf_model_free(m);
}
END_TEST

START_TEST(test_typed_fields_equal_raw_data)
{
    static const int64_t d[] = {2, 2};
    static const float f[] = {1.0f, -2.5f, 3.25f, 0.0f};
    static const int32_t i8[] = {-1, 2, -128, 127};
    static const int32_t f16[] = {0x3c00, 0xc000, 0x7bff, 0};
    static const int32_t bl[] = {1, 0, 1, 1};
    static const int64_t i64[] = {1, -2, INT64_MAX, INT64_MIN};
    static const double dbl[] = {0.5, -1e300, 2, 3};
    static const uint64_t u32[] = {1, 2, 4000000000u, 0};
    Onnx__GraphProto *g = mk_graph("g");
    struct {
        const char *name;
        int dtype;
        Onnx__TensorProto *t;
    } cases[] = {{"f", XF_DT_FLOAT, NULL},   {"i8", XF_DT_INT8, NULL},  {"f16", XF_DT_FLOAT16, NULL},
                 {"bl", XF_DT_BOOL, NULL},   {"i64", XF_DT_INT64, NULL}, {"dbl", XF_DT_DOUBLE, NULL},
                 {"u32", XF_DT_UINT32, NULL}, {"str", XF_DT_STRING, NULL}};
    size_t n = sizeof cases / sizeof cases[0];
    for (size_t i = 0; i < n; i++)
        cases[i].t = mk_tensor(cases[i].name, cases[i].dtype, 2, d);
    cases[0].t->n_float_data = 4, cases[0].t->float_data = (float *)f;
    cases[1].t->n_int32_data = 4, cases[1].t->int32_data = (int32_t *)i8;
    cases[2].t->n_int32_data = 4, cases[2].t->int32_data = (int32_t *)f16;
    cases[3].t->n_int32_data = 4, cases[3].t->int32_data = (int32_t *)bl;
    cases[4].t->n_int64_data = 4, cases[4].t->int64_data = (int64_t *)i64;
    cases[5].t->n_double_data = 4, cases[5].t->double_data = (double *)dbl;
    cases[6].t->n_uint64_data = 4, cases[6].t->uint64_data = (uint64_t *)u32;
    ProtobufCBinaryData strs[4] = {{1, (uint8_t *)"a"}, {0, NULL}, {3, (uint8_t *)"xyz"}, {2, (uint8_t *)"hi"}};
    cases[7].t->n_string_data = 4, cases[7].t->string_data = strs;
    for (size_t i = 0; i < n; i++) {
        PUSH(g->n_initializer, g->initializer, cases[i].t);
        PUSH(g->n_output, g->output, mk_vi(cases[i].name, cases[i].dtype, 2, d, NULL));
    }
    xf_model *m;
    xf_error e;
    ck_assert_msg(load_proto(mk_model(g, 13), NULL, &m, &e) == XF_OK, "%s", e.msg);
    xf_graph *gr = m->graph;
#define INIT(name) gr->values[xf_graph_find_value(gr, name)].init
    ck_assert(memcmp(INIT("f")->data, f, sizeof f) == 0);
    ck_assert(memcmp(INIT("i8")->data, (int8_t[]){-1, 2, -128, 127}, 4) == 0);
    ck_assert(memcmp(INIT("f16")->data, (uint16_t[]){0x3c00, 0xc000, 0x7bff, 0}, 8) == 0);
    ck_assert(memcmp(INIT("bl")->data, (uint8_t[]){1, 0, 1, 1}, 4) == 0);
    ck_assert(memcmp(INIT("i64")->data, i64, sizeof i64) == 0);
    ck_assert(memcmp(INIT("dbl")->data, dbl, sizeof dbl) == 0);
    ck_assert(memcmp(INIT("u32")->data, (uint32_t[]){1, 2, 4000000000u, 0}, 16) == 0);
    ck_assert_str_eq(INIT("str")->strings[2], "xyz");
    ck_assert_str_eq(INIT("str")->strings[1], "");
#undef INIT
    /* export writes raw_data; importing that gives the same tensors */
    xf_model *back = roundtrip(m);
    xf_model_free(back);
    xf_model_free(m);
}
END_TEST

START_TEST(test_symbolic_dims)
{
    static const int64_t d[] = {-1, 3, -1};
    static const char *const params[] = {"batch", NULL, "seq"};
    Onnx__GraphProto *g = mk_graph("g");
    PUSH(g->n_input, g->input, mk_vi("x", XF_DT_FLOAT, 3, d, params));
    PUSH(g->n_input, g->input, mk_vi("x2", XF_DT_FLOAT, 3, d, params));
    PUSH(g->n_node, g->node, mk_node("Add", "a", (const char *[]){"x", "x2", NULL}, (const char *[]){"y", NULL}));
    PUSH(g->n_output, g->output, mk_vi("y", XF_DT_FLOAT, 3, d, params));
    Onnx__ModelProto *mp = mk_model(g, 13);
    xf_model *m;
    xf_error e;

    capture_start();
    ck_assert_msg(load_proto(mp, NULL, &m, &e) == XF_OK, "%s", e.msg);
    xf_shape want = xf_shape_make(3, (const int64_t[]){1, 3, 1});
    ck_assert(xf_shape_equal(&m->graph->values[m->graph->inputs[0]].shape, &want));
    ck_assert_ptr_nonnull(strstr(captured, "input 'x' dims 0 ('batch'), 2 ('seq') are symbolic; using 1"));
    ck_assert_ptr_nonnull(strstr(captured, "--input-shape x=1x3x1"));
    ck_assert_ptr_nonnull(strstr(captured, "input 'x2'"));
    xf_model_free(m);

    /* an override binds the symbols, for the other input too */
    xf_input_shape ov;
    char *name;
    ck_assert_int_eq(xf_parse_shape_arg("x=4x3x7", &ov, &name, &e), XF_OK);
    xf_load_options opt = {&ov, 1, 0};
    capture_start();
    ck_assert_msg(load_proto(mp, &opt, &m, &e) == XF_OK, "%s", e.msg);
    want = xf_shape_make(3, (const int64_t[]){4, 3, 7});
    ck_assert(xf_shape_equal(&m->graph->values[m->graph->inputs[0]].shape, &want));
    ck_assert(xf_shape_equal(&m->graph->values[m->graph->inputs[1]].shape, &want));
    ck_assert(xf_shape_equal(&m->graph->values[m->graph->outputs[0]].shape, &want));
    ck_assert_str_eq(captured, "");
    xf_model_free(m);
    free(name);

    /* rank mismatch, fixed-dim conflict, unknown input */
    const char *bad[] = {"x=4x3", "x=4x5x7", "nosuch=1x3x1"};
    const char *msg[] = {"has rank 2 but input 'x' has rank 3", "fixes it to 3", "'nosuch', which is not a graph input"};
    for (int i = 0; i < 3; i++) {
        ck_assert_int_eq(xf_parse_shape_arg(bad[i], &ov, &name, &e), XF_OK);
        ck_assert_int_eq(load_proto(mp, &opt, &m, &e), XF_ERR_INVALID);
        ck_assert_msg(strstr(e.msg, msg[i]) != NULL, "%s", e.msg);
        free(name);
    }
}
END_TEST

START_TEST(test_parse_shape_arg)
{
    xf_input_shape s;
    char *name;
    xf_error e;
    ck_assert_int_eq(xf_parse_shape_arg("input:0=1x3x224x224", &s, &name, &e), XF_OK);
    ck_assert_str_eq(s.name, "input:0");
    ck_assert_int_eq(s.shape.ndim, 4);
    ck_assert_int_eq(s.shape.dims[3], 224);
    free(name);
    ck_assert_int_eq(xf_parse_shape_arg("a=b=2", &s, &name, &e), XF_OK);
    ck_assert_str_eq(s.name, "a=b");
    free(name);
    ck_assert_int_eq(xf_parse_shape_arg("s=scalar", &s, &name, &e), XF_OK);
    ck_assert_int_eq(s.shape.ndim, 0);
    free(name);
    const char *bad[] = {"x", "=1x2", "x=", "x=1xx2", "x=1x-2", "x=1x2x", "x=99999999999999999999",
                         "x=1x1x1x1x1x1x1x1x1"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ck_assert_msg(xf_parse_shape_arg(bad[i], &s, &name, &e) != XF_OK, "%s accepted", bad[i]);
        ck_assert_ptr_null(name);
        ck_assert_ptr_nonnull(strstr(e.msg, "--input-shape"));
    }
}
END_TEST

START_TEST(test_carried_over_fields)
{
    static const int64_t d[] = {2};
    Onnx__GraphProto *g = mk_graph("g");
    g->doc_string = "graph docs";
    PUSH(g->n_input, g->input, mk_vi("x", XF_DT_FLOAT, 1, d, NULL));
    PUSH(g->n_node, g->node, mk_node("Relu", "r", (const char *[]){"x", NULL}, (const char *[]){"y", NULL}));
    PUSH(g->n_output, g->output, mk_vi("y", XF_DT_FLOAT, 1, d, NULL));
    PUSH(g->n_value_info, g->value_info, mk_vi("elsewhere", XF_DT_INT64, 1, d, NULL));
    Onnx__ModelProto *mp = mk_model(g, 13);
    Onnx__FunctionProto *fn = zalloc(sizeof *fn);
    onnx__function_proto__init(fn);
    fn->name = "MyFunction";
    fn->domain = "com.example";
    PUSH(mp->n_functions, mp->functions, fn);
    /* plus a field of a newer ONNX version: number 99, varint 5 (the tag
     * 99 << 3 = 792 is the varint 0x98 0x06) */
    size_t len;
    uint8_t *packed = pack_model(mp, &len);
    uint8_t *newer = malloc(len + 3);
    memcpy(newer, packed, len);
    memcpy(newer + len, (const uint8_t[]){0x98, 0x06, 5}, 3);
    xf_model *m;
    xf_error e;
    ck_assert_msg(xf_model_load_buffer(newer, len + 3, NULL, NULL, &m, &e) == XF_OK, "%s", e.msg);
    free(packed);
    free(newer);
    ck_assert_uint_gt(m->extra_len, 0);
    uint8_t *buf;
    ck_assert_msg(xf_model_save_buffer(m, &buf, &len, &e) == XF_OK, "%s", e.msg);
    Onnx__ModelProto *out = onnx__model_proto__unpack(NULL, len, buf);
    ck_assert_uint_eq(out->base.n_unknown_fields, 1);
    ck_assert_uint_eq(out->base.unknown_fields[0].tag, 99);
    ck_assert_str_eq(out->graph->doc_string, "graph docs");
    ck_assert_uint_eq(out->n_functions, 1);
    ck_assert_str_eq(out->functions[0]->name, "MyFunction");
    bool found = false;
    for (size_t i = 0; i < out->graph->n_value_info; i++)
        found |= !strcmp(out->graph->value_info[i]->name, "elsewhere");
    ck_assert(found);
    onnx__model_proto__free_unpacked(out, NULL);
    free(buf);
    xf_model_free(roundtrip(m));
    xf_model_free(m);
}
END_TEST

/* ------------------------------------------------------------ external data */

static Onnx__ModelProto *make_external_model(const char *location, const char *offset)
{
    static const int64_t d[] = {4};
    Onnx__GraphProto *g = mk_graph("g");
    PUSH(g->n_input, g->input, mk_vi("x", XF_DT_FLOAT, 1, d, NULL));
    Onnx__TensorProto *w = mk_tensor("w", XF_DT_FLOAT, 1, d);
    w->has_data_location = 1;
    w->data_location = ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
    const char *keys[] = {"location", "offset", "length"};
    const char *vals[] = {location, offset, "16"};
    for (int i = 0; i < 3; i++) {
        Onnx__StringStringEntryProto *kv = zalloc(sizeof *kv);
        onnx__string_string_entry_proto__init(kv);
        kv->key = (char *)keys[i];
        kv->value = (char *)vals[i];
        PUSH(w->n_external_data, w->external_data, kv);
    }
    PUSH(g->n_initializer, g->initializer, w);
    PUSH(g->n_node, g->node, mk_node("Add", "a", (const char *[]){"x", "w", NULL}, (const char *[]){"y", NULL}));
    PUSH(g->n_output, g->output, mk_vi("y", XF_DT_FLOAT, 1, d, NULL));
    return mk_model(g, 13);
}

START_TEST(test_external_data)
{
    const char *dir = xf_test_tmpdir("proto_external");
    static const float data[] = {0, 0, 1, 2, 3, 4}; /* the tensor starts at byte 8 */
    write_bytes(path_in(dir, "weights.bin"), data, sizeof data);
    write_model(make_external_model("weights.bin", "8"), path_in(dir, "m.onnx"));
    xf_model *m;
    xf_error e;
    ck_assert_msg(xf_model_load(path_in(dir, "m.onnx"), NULL, &m, &e) == XF_OK, "%s", e.msg);
    const xf_tensor *w = m->graph->values[xf_graph_find_value(m->graph, "w")].init;
    ck_assert(memcmp(w->data, data + 2, 16) == 0);

    /* save with external data: a .data file next to the model */
    xf_save_options so = {true, 16};
    ck_assert_msg(xf_model_save(m, path_in(dir, "out.onnx"), &so, &e) == XF_OK, "%s", e.msg);
    ck_assert(xf_test_exists(path_in(dir, "out.onnx.data")));
    struct stat st;
    ck_assert_int_eq(stat(path_in(dir, "out.onnx.data"), &st), 0);
    ck_assert_int_eq(st.st_size, 16);
    assert_onnx_valid(path_in(dir, "out.onnx"));
    xf_model *back;
    ck_assert_msg(xf_model_load(path_in(dir, "out.onnx"), NULL, &back, &e) == XF_OK, "%s", e.msg);
    char why[512];
    ck_assert_msg(models_equal(m, back, why, sizeof why), "%s", why);
    xf_model_free(back);
    /* nothing big enough: no data file */
    so.external_threshold = 1024;
    ck_assert_msg(xf_model_save(m, path_in(dir, "small.onnx"), &so, &e) == XF_OK, "%s", e.msg);
    ck_assert(!xf_test_exists(path_in(dir, "small.onnx.data")));
    xf_model_free(m);

    /* refused locations, missing file, data beyond the file */
    struct {
        const char *loc, *offset, *msg;
        xf_status st;
    } bad[] = {{"../weights.bin", "0", "outside the model's directory", XF_ERR_INVALID},
               {"/etc/passwd", "0", "outside the model's directory", XF_ERR_INVALID},
               {"sub/../../x", "0", "outside the model's directory", XF_ERR_INVALID},
               {"missing.bin", "0", "cannot open external data file 'missing.bin'", XF_ERR_IO},
               {"weights.bin", "16", "has 24 bytes", XF_ERR_INVALID}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        write_model(make_external_model(bad[i].loc, bad[i].offset), path_in(dir, "bad.onnx"));
        ck_assert_int_eq(xf_model_load(path_in(dir, "bad.onnx"), NULL, &m, &e), bad[i].st);
        ck_assert_msg(strstr(e.msg, bad[i].msg) && strstr(e.msg, "bad.onnx: initializer 'w'"), "%s", e.msg);
    }
    /* from a buffer, external data has no directory to come from */
    size_t len;
    uint8_t *buf = pack_model(make_external_model("weights.bin", "8"), &len);
    ck_assert_int_eq(xf_model_load_buffer(buf, len, NULL, NULL, &m, &e), XF_ERR_UNSUPPORTED);
    free(buf);
}
END_TEST

/* ------------------------------------------------------------ bad input */

/* Loads path, expecting status st and a message that names the file and
 * contains what. */
static void expect_load_error(const char *path, xf_status st, const char *what)
{
    xf_model *m = (xf_model *)1;
    xf_error e;
    ck_assert_int_eq(xf_model_load(path, NULL, &m, &e), st);
    ck_assert_ptr_null(m);
    ck_assert_msg(strstr(e.msg, path) != NULL, "message does not name the file: %s", e.msg);
    ck_assert_msg(strstr(e.msg, what) != NULL, "expected '%s' in: %s", what, e.msg);
    ck_assert_ptr_null(strchr(e.msg, '\n'));
}

START_TEST(test_bad_files)
{
    const char *dir = xf_test_tmpdir("proto_bad");
    expect_load_error(path_in(dir, "missing.onnx"), XF_ERR_IO, "No such file");

    uint8_t junk[4096];
    srand(42);
    for (size_t i = 0; i < sizeof junk; i++)
        junk[i] = (uint8_t)rand();
    write_bytes(path_in(dir, "junk.onnx"), junk, sizeof junk);
    xf_model *m;
    xf_error e;
    xf_status s = xf_model_load(path_in(dir, "junk.onnx"), NULL, &m, &e);
    ck_assert(s == XF_ERR_PARSE || s == XF_ERR_INVALID);
    ck_assert_ptr_nonnull(strstr(e.msg, "junk.onnx"));

    size_t len;
    uint8_t *good = pack_model(make_external_model("w.bin", "0"), &len);
    write_bytes(path_in(dir, "truncated.onnx"), good, len - 7);
    expect_load_error(path_in(dir, "truncated.onnx"), XF_ERR_PARSE, "truncated or corrupt");
    free(good);
    write_bytes(path_in(dir, "empty.onnx"), "", 0);
    expect_load_error(path_in(dir, "empty.onnx"), XF_ERR_INVALID, "no graph");

    static const int64_t d[] = {3, 4};
    static const float twelve_bytes[3] = {0};
    Onnx__GraphProto *g = mk_graph("cycle");
    PUSH(g->n_input, g->input, mk_vi("x", XF_DT_FLOAT, 2, d, NULL));
    PUSH(g->n_node, g->node, mk_node("Add", "a", (const char *[]){"x", "b", NULL}, (const char *[]){"a", NULL}));
    PUSH(g->n_node, g->node, mk_node("Relu", "b", (const char *[]){"a", NULL}, (const char *[]){"b", NULL}));
    PUSH(g->n_output, g->output, mk_vi("b", XF_DT_FLOAT, 2, d, NULL));
    write_model(mk_model(g, 13), path_in(dir, "cycle.onnx"));
    expect_load_error(path_in(dir, "cycle.onnx"), XF_ERR_INVALID, "cycle");

    g = mk_graph("undefined");
    PUSH(g->n_input, g->input, mk_vi("x", XF_DT_FLOAT, 2, d, NULL));
    PUSH(g->n_node, g->node, mk_node("Add", "adder", (const char *[]){"x", "nope", NULL}, (const char *[]){"y", NULL}));
    PUSH(g->n_output, g->output, mk_vi("y", XF_DT_FLOAT, 2, d, NULL));
    write_model(mk_model(g, 13), path_in(dir, "undefined.onnx"));
    expect_load_error(path_in(dir, "undefined.onnx"), XF_ERR_INVALID, "node 'adder' (Add) uses 'nope', which is not defined");

    g = mk_graph("size");
    PUSH(g->n_input, g->input, mk_vi("x", XF_DT_FLOAT, 2, d, NULL));
    PUSH(g->n_initializer, g->initializer, mk_raw("w", XF_DT_FLOAT, 2, d, twelve_bytes, sizeof twelve_bytes));
    PUSH(g->n_node, g->node, mk_node("Add", "a", (const char *[]){"x", "w", NULL}, (const char *[]){"y", NULL}));
    PUSH(g->n_output, g->output, mk_vi("y", XF_DT_FLOAT, 2, d, NULL));
    write_model(mk_model(g, 13), path_in(dir, "size.onnx"));
    expect_load_error(path_in(dir, "size.onnx"), XF_ERR_INVALID,
                      "initializer 'w' has 12 bytes of data but dims 3x4 of FLOAT need 48");

    static const int64_t huge[] = {1000000, 1000000};
    g->initializer[0] = mk_raw("w", XF_DT_FLOAT, 2, huge, twelve_bytes, sizeof twelve_bytes);
    write_model(mk_model(g, 13), path_in(dir, "huge.onnx"));
    expect_load_error(path_in(dir, "huge.onnx"), XF_ERR_LIMIT, "more than the limit");

    static const int64_t nine[] = {1, 1, 1, 1, 1, 1, 1, 1, 3};
    g->initializer[0] = mk_raw("w", XF_DT_FLOAT, 9, nine, twelve_bytes, sizeof twelve_bytes);
    write_model(mk_model(g, 13), path_in(dir, "rank9.onnx"));
    expect_load_error(path_in(dir, "rank9.onnx"), XF_ERR_UNSUPPORTED, "at most 8");

    g = mk_graph("dup");
    PUSH(g->n_input, g->input, mk_vi("x", XF_DT_FLOAT, 2, d, NULL));
    PUSH(g->n_node, g->node, mk_node("Relu", "a", (const char *[]){"x", NULL}, (const char *[]){"y", NULL}));
    PUSH(g->n_node, g->node, mk_node("Neg", "b", (const char *[]){"x", NULL}, (const char *[]){"y", NULL}));
    PUSH(g->n_output, g->output, mk_vi("y", XF_DT_FLOAT, 2, d, NULL));
    write_model(mk_model(g, 13), path_in(dir, "dup.onnx"));
    expect_load_error(path_in(dir, "dup.onnx"), XF_ERR_INVALID, "value 'y' is defined twice");

    /* a shape mismatch found by shape inference is a load error too */
    g = mk_graph("mismatch");
    PUSH(g->n_input, g->input, mk_vi("x", XF_DT_FLOAT, 2, d, NULL));
    PUSH(g->n_input, g->input, mk_vi("z", XF_DT_FLOAT, 2, (const int64_t[]){5, 7}, NULL));
    PUSH(g->n_node, g->node, mk_node("Add", "a", (const char *[]){"x", "z", NULL}, (const char *[]){"y", NULL}));
    PUSH(g->n_output, g->output, mk_vi("y", XF_DT_FLOAT, 2, d, NULL));
    write_model(mk_model(g, 13), path_in(dir, "mismatch.onnx"));
    expect_load_error(path_in(dir, "mismatch.onnx"), XF_ERR_INVALID, "node 'a' (Add)");
}
END_TEST

START_TEST(test_unwritable_output)
{
    const char *dir = xf_test_tmpdir("proto_unwritable");
    xf_model *m = make_cnn();
    xf_error e;
    const char *path = path_in(dir, "no/such/dir/out.onnx");
    ck_assert_int_eq(xf_model_save(m, path, NULL, &e), XF_ERR_IO);
    ck_assert_msg(strstr(e.msg, path) != NULL, "%s", e.msg);
    ck_assert_int_eq(count_files(dir), 0);
    /* a directory in the way of the final rename */
    ck_assert_int_eq(mkdir(path_in(dir, "taken.onnx"), 0755), 0);
    xf_save_options so = {true, 1};
    ck_assert_int_eq(xf_model_save(m, path_in(dir, "taken.onnx"), &so, &e), XF_ERR_IO);
    ck_assert_msg(strstr(e.msg, "taken.onnx") != NULL, "%s", e.msg);
    ck_assert_int_eq(count_files(dir), 1); /* only the directory itself */
    ck_assert_int_eq(xf_tensor_save_pb(m->graph->values[1].init, "w", path, &e), XF_ERR_IO);
    xf_model_free(m);
}
END_TEST

START_TEST(test_softmax_semantics_across_opsets)
{
    /* opset 11 Softmax (coerce to 2-D) over the last axis exports to opset 13;
     * over a middle axis it cannot, and export says so */
    static const int64_t d[] = {2, 3, 4};
    Onnx__GraphProto *g = mk_graph("g");
    PUSH(g->n_input, g->input, mk_vi("x", XF_DT_FLOAT, 3, d, NULL));
    Onnx__NodeProto *sm = mk_node("Softmax", "s", (const char *[]){"x", NULL}, (const char *[]){"y", NULL});
    attr_int(sm, "axis", 2);
    PUSH(g->n_node, g->node, sm);
    PUSH(g->n_output, g->output, mk_vi("y", XF_DT_FLOAT, 3, d, NULL));
    xf_model *m;
    xf_error e;
    ck_assert_msg(load_proto(mk_model(g, 11), NULL, &m, &e) == XF_OK, "%s", e.msg);
    ck_assert(m->graph->nodes[0].attrs.softmax_legacy);
    xf_model_free(roundtrip(m));
    m->opsets[0].version = 13;
    uint8_t *buf;
    size_t len;
    ck_assert_msg(xf_model_save_buffer(m, &buf, &len, &e) == XF_OK, "%s", e.msg);
    free(buf);
    m->graph->nodes[0].attrs.axis = 1;
    ck_assert_int_eq(xf_model_save_buffer(m, &buf, &len, &e), XF_ERR_UNSUPPORTED);
    ck_assert_ptr_nonnull(strstr(e.msg, "node 's' (Softmax)"));
    xf_model_free(m);
}
END_TEST

/* ------------------------------------------------------------ the ONNX backend test data */

START_TEST(test_tensor_pb_files)
{
    const char *dir = xf_test_tmpdir("proto_tensor_pb");
    glob_t gl;
    ck_assert_int_eq(glob(TESTDATA "/node/*/test_data_set_0/input_0.pb", 0, NULL, &gl), 0);
    size_t ok = 0;
    for (size_t i = 0; i < gl.gl_pathc; i++) {
        xf_tensor *t, *back;
        char *name;
        xf_error e;
        xf_status s = xf_tensor_load_pb(gl.gl_pathv[i], &t, &name, &e);
        if (s != XF_OK) /* inputs that are sequences or optionals are other message types */
            continue;
        ck_assert_msg(xf_tensor_save_pb(t, name, path_in(dir, "t.pb"), &e) == XF_OK, "%s", e.msg);
        char *name2;
        ck_assert_msg(xf_tensor_load_pb(path_in(dir, "t.pb"), &back, &name2, &e) == XF_OK, "%s", e.msg);
        ck_assert_msg(tensors_equal(t, back), "%s", gl.gl_pathv[i]);
        ck_assert(!name == !name2 && (!name || !strcmp(name, name2)));
        ok++;
        xf_tensor_release(t);
        xf_tensor_release(back);
        free(name);
        free(name2);
    }
    printf("tensor files: %zu of %zu read and rewritten\n", ok, gl.gl_pathc);
    ck_assert_uint_gt(ok, gl.gl_pathc * 9 / 10);
    globfree(&gl);
}
END_TEST

static void quiet_log(int level, const char *msg, void *user)
{
    (void)level;
    (void)msg;
    (void)user;
}

/* Damaged copies of real models: import either refuses them with an error
 * or loads them, and what it loads exports and loads again. */
START_TEST(test_damaged_models_never_crash)
{
    static const char *const models[] = {"node/test_conv_with_strides_and_asymmetric_padding", "node/test_if",
                                         "node/test_loop11", "node/test_constant", "node/test_gemm_all_attributes",
                                         "node/test_maxpool_2d_pads", "node/test_reshape_negative_dim",
                                         "node/test_sequence_insert_at_back", "simple/test_sign_model"};
    xf_log_set(quiet_log, NULL, XF_LOG_WARN);
    uint64_t rng = 0x9e3779b97f4a7c15ull;
    int loaded = 0, refused = 0;
    for (size_t k = 0; k < sizeof models / sizeof models[0]; k++) {
        char path[512];
        snprintf(path, sizeof path, TESTDATA "/%s/model.onnx", models[k]);
        FILE *f = fopen(path, "rb");
        ck_assert_msg(f != NULL, "%s", path);
        uint8_t orig[65536];
        size_t len = fread(orig, 1, sizeof orig, f);
        fclose(f);
        for (int iter = 0; iter < 400; iter++) {
            uint8_t buf[65536];
            memcpy(buf, orig, len);
            size_t n = len;
            int edits = 1 + iter % 4;
            for (int e = 0; e < edits; e++) {
                rng = rng * 6364136223846793005ull + 1442695040888963407ull;
                size_t at = (size_t)(rng >> 33) % n;
                switch ((rng >> 20) % 4) {
                case 0: buf[at] ^= (uint8_t)(1u << ((rng >> 8) % 8)); break;
                case 1: buf[at] = (uint8_t)(rng >> 40); break;
                case 2: buf[at] = 0xff; break;
                default: n = at + 1; break; /* truncate */
                }
            }
            xf_model *m, *back;
            xf_error e;
            if (xf_model_load_buffer(buf, n, NULL, NULL, &m, &e) != XF_OK) {
                ck_assert_ptr_null(strchr(e.msg, '\n'));
                refused++;
                continue;
            }
            loaded++;
            uint8_t *out;
            size_t out_len;
            if (xf_model_save_buffer(m, &out, &out_len, &e) == XF_OK) {
                ck_assert_msg(xf_model_load_buffer(out, out_len, NULL, NULL, &back, &e) == XF_OK,
                              "%s, damage %d: exported model does not load: %s", models[k], iter, e.msg);
                xf_model_free(back);
                free(out);
            }
            xf_model_free(m);
        }
    }
    printf("damaged models: %d loaded, %d refused\n", loaded, refused);
}
END_TEST

/* The last non-empty line of text (which ends with a newline). */
static const char *last_line(const char *text)
{
    size_t n = strlen(text);
    while (n > 0 && text[n - 1] == '\n')
        n--;
    while (n > 0 && text[n - 1] != '\n')
        n--;
    return text + n;
}

/* Every model loads, round-trips to an equal model, and the exported files
 * pass onnx.checker. */
static void check_testdata_models(const char *pattern, const char *tmp_name)
{
    const char *dir = xf_test_tmpdir(tmp_name);
    xf_log_set(quiet_log, NULL, XF_LOG_WARN);
    glob_t gl;
    ck_assert_int_eq(glob(pattern, 0, NULL, &gl), 0);
    char list_path[4200];
    snprintf(list_path, sizeof list_path, "%s/list.txt", dir);
    FILE *list = fopen(list_path, "w");
    ck_assert_ptr_nonnull(list);
    size_t passed = 0;
    char failures[2200] = "";
    for (size_t i = 0; i < gl.gl_pathc; i++) {
        const char *path = gl.gl_pathv[i];
        xf_model *m = NULL, *back = NULL;
        xf_error e;
        char why[sizeof e.msg] = "", out[4200];
        snprintf(out, sizeof out, "%s/%zu.onnx", dir, i);
        uint8_t *buf = NULL;
        size_t len;
        bool ok = xf_model_load(path, NULL, &m, &e) == XF_OK && xf_model_save_buffer(m, &buf, &len, &e) == XF_OK &&
                  xf_model_load_buffer(buf, len, NULL, NULL, &back, &e) == XF_OK &&
                  xf_model_save(m, out, NULL, &e) == XF_OK;
        if (!ok)
            snprintf(why, sizeof why, "%s", e.msg);
        else if (models_equal(m, back, why, sizeof why))
            passed++;
        if (why[0]) {
            printf("FAILED %s: %s\n", path, why);
            if (!failures[0])
                snprintf(failures, sizeof failures, "%s: %s", path, why);
        } else {
            fprintf(list, "%s\n", out);
        }
        free(buf);
        xf_model_free(m);
        xf_model_free(back);
    }
    fclose(list);
    printf("%s: %zu of %zu models load and round-trip\n", pattern, passed, gl.gl_pathc);
    ck_assert_msg(passed == gl.gl_pathc, "%zu of %zu failed (listed above), the first: %s", gl.gl_pathc - passed,
                  gl.gl_pathc, failures);
    ck_assert_uint_gt(gl.gl_pathc, 0);
    globfree(&gl);

    char cmd[8400], *out = NULL;
    snprintf(cmd, sizeof cmd, "/usr/bin/python3 '%s/tests/onnx_check.py' --list '%s'", XF_SOURCE_DIR, list_path);
    int rc = xf_test_run(cmd, &out);
    printf("onnx.checker: %s", out ? last_line(out) : "(no output)\n");
    ck_assert_msg(rc == 0, "onnx.checker rejects exported models:\n%s", out ? out : "");
    free(out);
}

START_TEST(test_testdata_node_models)
{
    check_testdata_models(TESTDATA "/node/*/model.onnx", "proto_testdata_node");
}
END_TEST

START_TEST(test_testdata_other_models)
{
    check_testdata_models(TESTDATA "/[!n]*/*/model.onnx", "proto_testdata_other");
}
END_TEST

int main(void)
{
    Suite *s = suite_create("proto");
    TCase *tc = tcase_create("import_export");
    tcase_set_timeout(tc, 600);
    tcase_add_checked_fixture(tc, NULL, free_allocs);
    tcase_add_test(tc, test_roundtrip_core_model);
    tcase_add_test(tc, test_fused_activation_exported_as_two_nodes);
    tcase_add_test(tc, test_opaque_custom_op_survives);
    tcase_add_test(tc, test_outer_value_kept_by_name_after_rewrite);
    tcase_add_test(tc, test_known_op_with_unmodelled_attribute_stays_opaque);
    tcase_add_test(tc, test_nodes_out_of_order);
    tcase_add_test(tc, test_initializer_listed_as_input);
    tcase_add_test(tc, test_constant_nodes_become_initializers);
    tcase_add_test(tc, test_typed_fields_equal_raw_data);
    tcase_add_test(tc, test_symbolic_dims);
    tcase_add_test(tc, test_parse_shape_arg);
    tcase_add_test(tc, test_carried_over_fields);
    tcase_add_test(tc, test_external_data);
    tcase_add_test(tc, test_bad_files);
    tcase_add_test(tc, test_unwritable_output);
    tcase_add_test(tc, test_softmax_semantics_across_opsets);
    tcase_add_test(tc, test_tensor_pb_files);
    tcase_add_test(tc, test_damaged_models_never_crash);
    tcase_add_test(tc, test_testdata_node_models);
    tcase_add_test(tc, test_testdata_other_models);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
