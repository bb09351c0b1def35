/* ONNX's optional ops and SequenceMap: their values on every host backend,
 * optional-typed graph inputs and outputs through import and export,
 * OptionalProto and SequenceProto files, the errors a run gives, and the
 * tools (xflow-run's input and output files, xflowc --check's random
 * sequences). */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto_util.h"
#include "xf_proto.h"
#include "xf_runtime.h"
#include "xf_test_util.h"

#define NAMES(...) ((const char *[]){__VA_ARGS__, NULL})

/* A TypeProto wrapping elem: a sequence of it, or an optional of it. */
static Onnx__TypeProto *wrap(Onnx__TypeProto *elem, bool optional)
{
    Onnx__TypeProto *t = zalloc(sizeof *t);
    onnx__type_proto__init(t);
    if (optional) {
        Onnx__TypeProto__Optional *o = zalloc(sizeof *o);
        onnx__type_proto__optional__init(o);
        o->elem_type = elem;
        t->value_case = ONNX__TYPE_PROTO__VALUE_OPTIONAL_TYPE;
        t->optional_type = o;
    } else {
        Onnx__TypeProto__Sequence *s = zalloc(sizeof *s);
        onnx__type_proto__sequence__init(s);
        s->elem_type = elem;
        t->value_case = ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE;
        t->sequence_type = s;
    }
    return t;
}

/* A ValueInfo of kind: float vectors of length n (symbolic "n" when n < 0). */
static Onnx__ValueInfoProto *vi_of(const char *name, xf_value_kind kind, int64_t n)
{
    Onnx__ValueInfoProto *vi = mk_vi(name, XF_DT_FLOAT, 1, (const int64_t[]){n}, n < 0 ? NAMES("n") : NULL);
    if (kind == XF_VK_SEQUENCE || kind == XF_VK_OPTIONAL_SEQUENCE)
        vi->type = wrap(vi->type, false);
    if (xf_kind_is_optional(kind))
        vi->type = wrap(vi->type, true);
    return vi;
}

static Onnx__NodeProto *node(Onnx__GraphProto *g, const char *op, const char *name, const char *const *ins,
                             const char *const *outs)
{
    Onnx__NodeProto *n = mk_node(op, name, ins, outs);
    PUSH(g->n_node, g->node, n);
    return n;
}

/* Optional's type attribute: a float vector of 3, or a sequence of them. */
static void attr_type(Onnx__NodeProto *n, bool sequence)
{
    Onnx__AttributeProto *a = mk_attr(n, "type", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TYPE_PROTO);
    a->tp = mk_vi("", XF_DT_FLOAT, 1, (const int64_t[]){3}, NULL)->type;
    if (sequence)
        a->tp = wrap(a->tp, false);
}

static xf_status try_load(Onnx__GraphProto *g, int64_t opset, xf_model **m, xf_error *e)
{
    return load_proto(mk_model(g, opset), NULL, m, e);
}

static xf_model *load(Onnx__GraphProto *g, int64_t opset)
{
    xf_model *m;
    xf_error e;
    ck_assert_msg(try_load(g, opset, &m, &e) == XF_OK, "%s", e.msg);
    return m;
}

/* Runs m on backend be; the run's status, with e saying why. */
static xf_status try_run(const xf_model *m, const char *be, xf_tensor **in, xf_tensor **out, xf_error *e)
{
    xf_session *s;
    xf_status st = xf_session_create(m->graph, xf_model_opset(m), be, NULL, &s, e);
    if (st != XF_OK)
        return st;
    ck_assert(xf_session_is_dynamic(s));
    st = xf_session_run(s, in, out, e);
    xf_session_free(s);
    return st;
}

static void run(const xf_model *m, const char *be, xf_tensor **in, xf_tensor **out)
{
    xf_error e;
    ck_assert_msg(try_run(m, be, in, out, &e) == XF_OK, "%s: %s", be, e.msg);
}

static bool truth(const xf_tensor *t)
{
    ck_assert_int_eq(t->dtype, XF_DT_BOOL);
    ck_assert_int_eq(t->shape.ndim, 0);
    return ((const uint8_t *)t->data)[0] != 0;
}

static const float x3[] = {1, 2, 3};

static xf_tensor *vec(const float *v, int64_t n) { return xf_tensor_from_data(XF_DT_FLOAT, &(xf_shape){1, {n}}, v); }

/* x = [1 2 3] through every optional op, on every host backend. */
START_TEST(test_ops_values)
{
    Onnx__GraphProto *g = mk_graph("ops");
    PUSH(g->n_input, g->input, mk_vi("x", XF_DT_FLOAT, 1, (const int64_t[]){3}, NULL));
    node(g, "Optional", "wrap", NAMES("x"), NAMES("o"));
    node(g, "OptionalHasElement", "has", NAMES("o"), NAMES("has"));
    node(g, "OptionalGetElement", "get", NAMES("o"), NAMES("got"));
    node(g, "Neg", "neg", NAMES("got"), NAMES("neg"));
    attr_type(node(g, "Optional", "none", NULL, NAMES("e")), false);
    node(g, "OptionalHasElement", "has_none", NAMES("e"), NAMES("has_none"));
    node(g, "SequenceConstruct", "pair", NAMES("x", "neg"), NAMES("s"));
    node(g, "Optional", "wrap_seq", NAMES("s"), NAMES("os"));
    node(g, "OptionalGetElement", "get_seq", NAMES("os"), NAMES("s2"));
    node(g, "SequenceLength", "len", NAMES("s2"), NAMES("len"));
    node(g, "OptionalHasElement", "has_plain", NAMES("x"), NAMES("has_plain")); /* opset 18 */
    node(g, "OptionalGetElement", "get_plain", NAMES("s"), NAMES("s3"));
    node(g, "Identity", "has_too", NAMES("has"), NAMES("has_too"));
    const char *outs[] = {"has", "neg", "has_none", "len", "has_plain", "has_too"};
    for (int k = 0; k < 6; k++)
        PUSH(g->n_output, g->output, mk_vi(outs[k], k == 1 ? XF_DT_FLOAT : XF_DT_BOOL, -1, NULL, NULL));
    g->output[3]->type->tensor_type->elem_type = XF_DT_INT64;
    PUSH(g->n_output, g->output, vi_of("o", XF_VK_OPTIONAL_TENSOR, 3));
    PUSH(g->n_output, g->output, vi_of("e", XF_VK_OPTIONAL_TENSOR, 3));
    PUSH(g->n_output, g->output, vi_of("s3", XF_VK_SEQUENCE, 3));
    xf_model *m = load(g, 18);
    ck_assert_int_lt(find_node_op(m->graph, XF_OP_OPAQUE), 0);
    ck_assert_int_eq(m->graph->values[xf_graph_find_value(m->graph, "o")].kind, XF_VK_OPTIONAL_TENSOR);
    ck_assert_int_eq(m->graph->values[xf_graph_find_value(m->graph, "os")].kind, XF_VK_OPTIONAL_SEQUENCE);
    ck_assert_int_eq(m->graph->values[xf_graph_find_value(m->graph, "s2")].kind, XF_VK_SEQUENCE);
    const char *bes[4];
    int n_be = host_backends(bes);
    for (int b = 0; b < n_be; b++) {
        xf_tensor *in = vec(x3, 3), *out[9];
        run(m, bes[b], &in, out);
        ck_assert(truth(out[0]));
        assert_values(out[1], 1, (const int64_t[]){3}, (const float[]){-1, -2, -3});
        ck_assert(!truth(out[2]));
        ck_assert_int_eq(((const int64_t *)out[3]->data)[0], 2);
        ck_assert(truth(out[4]));
        ck_assert(truth(out[5]));
        ck_assert(out[6]->is_optional && !out[6]->optional_of_sequence && out[6]->n_items == 1);
        assert_values(out[6]->items[0], 1, (const int64_t[]){3}, x3);
        ck_assert(out[7]->is_optional && out[7]->n_items == 0 && out[7]->dtype == XF_DT_FLOAT);
        ck_assert(out[8]->is_sequence && out[8]->n_items == 2);
        assert_values(out[8]->items[1], 1, (const int64_t[]){3}, (const float[]){-1, -2, -3});
        release_all(out, 9);
        xf_tensor_release(in);
    }
    xf_model *back = roundtrip(m);
    char why[512];
    ck_assert_msg(models_equal(m, back, why, sizeof why), "%s", why);
    int none = find_node_by_output(back->graph, "e");
    ck_assert_int_eq(back->graph->nodes[none].attrs.opt_type, 1 + XF_VK_TENSOR);
    ck_assert_int_eq(back->graph->nodes[none].attrs.to, XF_DT_FLOAT);
    assert_saved_valid(back, "optional_ops");
    xf_model_free(back);
    xf_model_free(m);
}
END_TEST

/* Optional-typed graph inputs and outputs keep their declared types
 * through export, and run fed present and empty optionals. */
START_TEST(test_optional_io_round_trip)
{
    Onnx__GraphProto *g = mk_graph("io");
    PUSH(g->n_input, g->input, vi_of("ot", XF_VK_OPTIONAL_TENSOR, -1));
    PUSH(g->n_input, g->input, vi_of("os", XF_VK_OPTIONAL_SEQUENCE, 3));
    node(g, "OptionalHasElement", "has_t", NAMES("ot"), NAMES("has_t"));
    node(g, "OptionalHasElement", "has_s", NAMES("os"), NAMES("has_s"));
    node(g, "Identity", "same", NAMES("os"), NAMES("os_out"));
    attr_type(node(g, "Optional", "empty_seq", NULL, NAMES("none")), true);
    PUSH(g->n_output, g->output, mk_vi("has_t", XF_DT_BOOL, 0, NULL, NULL));
    PUSH(g->n_output, g->output, mk_vi("has_s", XF_DT_BOOL, 0, NULL, NULL));
    PUSH(g->n_output, g->output, vi_of("os_out", XF_VK_OPTIONAL_SEQUENCE, 3));
    PUSH(g->n_output, g->output, vi_of("none", XF_VK_OPTIONAL_SEQUENCE, 3));
    xf_model *m = load(g, 15);
    ck_assert_int_eq(m->graph->values[m->graph->inputs[0]].kind, XF_VK_OPTIONAL_TENSOR);
    ck_assert_int_eq(m->graph->values[m->graph->inputs[1]].kind, XF_VK_OPTIONAL_SEQUENCE);
    ck_assert_int_eq(m->graph->values[m->graph->inputs[1]].elem_decl.dims[0], 3);
    uint8_t *buf;
    Onnx__ModelProto *mp = saved_proto(m, &buf);
    /* graph inputs written back as declared, byte for byte */
    for (int i = 0; i < 2; i++) {
        size_t la = onnx__type_proto__get_packed_size(g->input[i]->type);
        size_t lb = onnx__type_proto__get_packed_size(mp->graph->input[i]->type);
        uint8_t *pa = malloc(la + 1), *pb = malloc(lb + 1);
        onnx__type_proto__pack(g->input[i]->type, pa);
        onnx__type_proto__pack(mp->graph->input[i]->type, pb);
        ck_assert(la == lb && memcmp(pa, pb, la) == 0);
        free(pa);
        free(pb);
    }
    const Onnx__TypeProto *ot = mp->graph->output[3]->type;
    ck_assert_int_eq(ot->value_case, ONNX__TYPE_PROTO__VALUE_OPTIONAL_TYPE);
    ck_assert_int_eq(ot->optional_type->elem_type->value_case, ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE);
    onnx__model_proto__free_unpacked(mp, NULL);
    free(buf);
    xf_model *back = roundtrip(m);
    char why[512];
    ck_assert_msg(models_equal(m, back, why, sizeof why), "%s", why);
    assert_saved_valid(back, "optional_io");

    xf_tensor *t = vec(x3, 3), *seq = xf_sequence_create(XF_DT_FLOAT, 1, &t);
    xf_tensor *in[2] = {xf_optional_create(NULL, false, XF_DT_FLOAT), xf_optional_create(seq, false, XF_DT_FLOAT)};
    xf_tensor *out[4];
    run(back, "cpu_ref", in, out);
    ck_assert(!truth(out[0]));
    ck_assert(truth(out[1]));
    ck_assert_ptr_eq(out[2], in[1]); /* the same optional, shared */
    ck_assert(out[3]->is_optional && out[3]->optional_of_sequence && out[3]->n_items == 0);
    release_all(out, 4);
    /* a plain tensor where an optional is expected is a present optional;
     * a sequence is refused */
    xf_error e;
    xf_tensor *plain[2] = {t, in[1]};
    run(back, "cpu_ref", plain, out);
    ck_assert(truth(out[0]));
    release_all(out, 4);
    plain[0] = seq;
    ck_assert_int_eq(try_run(back, "cpu_ref", plain, out, &e), XF_ERR_INVALID);
    ck_assert_msg(strstr(e.msg, "'ot'") && strstr(e.msg, "optional tensor"), "%s", e.msg);
    release_all(in, 2);
    xf_tensor_release(seq);
    xf_tensor_release(t);
    xf_model_free(back);
    xf_model_free(m);
}
END_TEST

/* Errors name the node and say what is wrong. */
START_TEST(test_errors)
{
    Onnx__GraphProto *g = mk_graph("get_empty");
    PUSH(g->n_input, g->input, vi_of("o", XF_VK_OPTIONAL_TENSOR, 3));
    node(g, "OptionalGetElement", "unwrap", NAMES("o"), NAMES("y"));
    PUSH(g->n_output, g->output, mk_vi("y", XF_DT_FLOAT, 1, (const int64_t[]){3}, NULL));
    xf_model *m = load(g, 15);
    xf_tensor *in = xf_optional_create(NULL, false, XF_DT_FLOAT), *out = NULL;
    xf_error e;
    ck_assert_int_eq(try_run(m, "cpu_ref", &in, &out, &e), XF_ERR_INVALID);
    ck_assert_msg(strstr(e.msg, "unwrap") && strstr(e.msg, "OptionalGetElement") && strstr(e.msg, "'o'") &&
                      strstr(e.msg, "empty optional"),
                  "%s", e.msg);
    xf_tensor_release(in);
    /* a sequence fed for an optional tensor */
    xf_tensor *t = vec(x3, 3);
    in = xf_sequence_create(XF_DT_FLOAT, 1, &t);
    ck_assert_int_eq(try_run(m, "cpu_ref", &in, &out, &e), XF_ERR_INVALID);
    ck_assert_msg(strstr(e.msg, "is a sequence") && strstr(e.msg, "optional tensor"), "%s", e.msg);
    xf_tensor_release(in);
    xf_tensor_release(t);
    xf_model_free(m);

    /* before opset 18, OptionalHasElement takes optionals only */
    g = mk_graph("plain15");
    PUSH(g->n_input, g->input, mk_vi("x", XF_DT_FLOAT, 1, (const int64_t[]){3}, NULL));
    node(g, "OptionalHasElement", "has", NAMES("x"), NAMES("h"));
    PUSH(g->n_output, g->output, mk_vi("h", XF_DT_BOOL, 0, NULL, NULL));
    ck_assert_int_ne(try_load(g, 15, &m, &e), XF_OK);
    ck_assert_msg(strstr(e.msg, "has") && strstr(e.msg, "opset 18"), "%s", e.msg);

    /* Optional with neither an input nor a type */
    g = mk_graph("untyped");
    node(g, "Optional", "nothing", NULL, NAMES("o"));
    PUSH(g->n_output, g->output, vi_of("o", XF_VK_OPTIONAL_TENSOR, 3));
    ck_assert_int_ne(try_load(g, 15, &m, &e), XF_OK);
    ck_assert_msg(strstr(e.msg, "nothing") && strstr(e.msg, "'type'"), "%s", e.msg);

    /* optionals do not nest */
    g = mk_graph("nested");
    PUSH(g->n_input, g->input, vi_of("o", XF_VK_OPTIONAL_TENSOR, 3));
    node(g, "Optional", "again", NAMES("o"), NAMES("oo"));
    PUSH(g->n_output, g->output, mk_vi("oo", XF_DT_FLOAT, -1, NULL, NULL));
    ck_assert_int_ne(try_load(g, 15, &m, &e), XF_OK);
    ck_assert_msg(strstr(e.msg, "again") && strstr(e.msg, "do not nest"), "%s", e.msg);
}
END_TEST

/* SequenceMap's body per entry: Add of an entry and a tensor (broadcast to
 * every entry), Mul of entries of two sequences in step. */
static xf_model *sequence_map_model(void)
{
    Onnx__GraphProto *body = mk_graph("body");
    PUSH(body->n_input, body->input, mk_vi("a", XF_DT_FLOAT, 1, (const int64_t[]){-1}, NAMES("n")));
    PUSH(body->n_input, body->input, mk_vi("b", XF_DT_FLOAT, 1, (const int64_t[]){-1}, NAMES("n")));
    PUSH(body->n_input, body->input, mk_vi("c", XF_DT_FLOAT, 1, (const int64_t[]){-1}, NAMES("n")));
    node(body, "Add", "add", NAMES("a", "b"), NAMES("sum"));
    node(body, "Mul", "mul", NAMES("a", "c"), NAMES("prod"));
    PUSH(body->n_output, body->output, mk_vi("sum", XF_DT_FLOAT, 1, (const int64_t[]){-1}, NAMES("n")));
    PUSH(body->n_output, body->output, mk_vi("prod", XF_DT_FLOAT, 1, (const int64_t[]){-1}, NAMES("n")));
    Onnx__GraphProto *g = mk_graph("map");
    PUSH(g->n_input, g->input, vi_of("xs", XF_VK_SEQUENCE, -1));
    PUSH(g->n_input, g->input, mk_vi("t", XF_DT_FLOAT, 1, (const int64_t[]){2}, NULL));
    PUSH(g->n_input, g->input, vi_of("ys", XF_VK_SEQUENCE, -1));
    Onnx__NodeProto *n = node(g, "SequenceMap", "map", NAMES("xs", "t", "ys"), NAMES("sums", "prods"));
    Onnx__AttributeProto *a = mk_attr(n, "body", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH);
    a->g = body;
    PUSH(g->n_output, g->output, vi_of("sums", XF_VK_SEQUENCE, -1));
    PUSH(g->n_output, g->output, vi_of("prods", XF_VK_SEQUENCE, -1));
    return load(g, 17);
}

START_TEST(test_sequence_map)
{
    xf_model *m = sequence_map_model();
    static const float x0[] = {1, 2}, x1[] = {3, 4}, y0[] = {10, 20}, y1[] = {-1, 2}, t[] = {100, 200};
    xf_tensor *xi[2] = {vec(x0, 2), vec(x1, 2)}, *yi[2] = {vec(y0, 2), vec(y1, 2)};
    xf_tensor *in[3] = {xf_sequence_create(XF_DT_FLOAT, 2, xi), vec(t, 2), xf_sequence_create(XF_DT_FLOAT, 2, yi)};
    const char *bes[4];
    int n_be = host_backends(bes);
    for (int b = 0; b < n_be; b++) {
        xf_tensor *out[2];
        run(m, bes[b], in, out);
        ck_assert(out[0]->is_sequence && out[0]->n_items == 2 && out[1]->is_sequence && out[1]->n_items == 2);
        assert_values(out[0]->items[0], 1, (const int64_t[]){2}, (const float[]){101, 202});
        assert_values(out[0]->items[1], 1, (const int64_t[]){2}, (const float[]){103, 204});
        assert_values(out[1]->items[0], 1, (const int64_t[]){2}, (const float[]){10, 40});
        assert_values(out[1]->items[1], 1, (const int64_t[]){2}, (const float[]){-3, 8});
        release_all(out, 2);
    }
    /* sequences of different lengths */
    xf_tensor_release(in[2]);
    in[2] = xf_sequence_create(XF_DT_FLOAT, 1, yi);
    xf_tensor *out[2];
    xf_error e;
    ck_assert_int_eq(try_run(m, "cpu_ref", in, out, &e), XF_ERR_INVALID);
    ck_assert_msg(strstr(e.msg, "map") && strstr(e.msg, "1 entries") && strstr(e.msg, "2"), "%s", e.msg);
    /* an empty input sequence gives empty sequences */
    release_all(in, 3);
    in[0] = xf_sequence_create(XF_DT_FLOAT, 0, NULL);
    in[1] = vec(t, 2);
    in[2] = xf_sequence_create(XF_DT_FLOAT, 0, NULL);
    run(m, "cpu_ref", in, out);
    ck_assert(out[0]->is_sequence && out[0]->n_items == 0 && out[0]->dtype == XF_DT_FLOAT);
    release_all(out, 2);
    release_all(in, 3);
    release_all(xi, 2);
    release_all(yi, 2);
    xf_model *back = roundtrip(m);
    char why[512];
    ck_assert_msg(models_equal(m, back, why, sizeof why), "%s", why);
    assert_saved_valid(back, "sequence_map");
    xf_model_free(back);
    xf_model_free(m);
}
END_TEST

/* Sequences and optionals written as SequenceProto and OptionalProto files
 * read back the same, and onnx reads them. */
START_TEST(test_value_files)
{
    const char *dir = xf_test_tmpdir("optional_files");
    static const float b[] = {7, 8};
    xf_tensor *t[2] = {vec(x3, 3), vec(b, 2)};
    xf_tensor *seq = xf_sequence_create(XF_DT_FLOAT, 2, t);
    xf_tensor *vals[4] = {seq, xf_optional_create(t[1], false, XF_DT_FLOAT), xf_optional_create(seq, false, 0),
                          xf_optional_create(NULL, true, XF_DT_FLOAT)};
    const xf_value_kind kinds[4] = {XF_VK_SEQUENCE, XF_VK_OPTIONAL_TENSOR, XF_VK_OPTIONAL_SEQUENCE,
                                    XF_VK_OPTIONAL_SEQUENCE};
    const char *files[4] = {"seq.pb", "opt_t.pb", "opt_s.pb", "opt_none.pb"};
    xf_error e;
    for (int i = 0; i < 4; i++) {
        ck_assert_msg(xf_value_save_pb(vals[i], "v", path_in(dir, files[i]), &e) == XF_OK, "%s", e.msg);
        xf_tensor *back = NULL;
        ck_assert_msg(xf_value_load_pb(path_in(dir, files[i]), kinds[i], &back, NULL, &e) == XF_OK, "%s", e.msg);
        ck_assert_int_eq(xf_tensor_kind(back), kinds[i]);
        ck_assert_int_eq(back->n_items, vals[i]->n_items);
        bool ok = false;
        ck_assert_msg(xf_tensor_compare(back, vals[i], 0, 0, NULL, NULL, &ok, &e) == XF_OK && ok, "%s", e.msg);
        xf_tensor_release(back);
    }
    char cmd[9000], *out = NULL;
    snprintf(cmd, sizeof cmd,
             XF_PYTHON " -c \"import onnx, sys; from onnx import numpy_helper as nh\n"
                       "s = onnx.SequenceProto(); s.ParseFromString(open(sys.argv[1], 'rb').read())\n"
                       "o = onnx.OptionalProto(); o.ParseFromString(open(sys.argv[2], 'rb').read())\n"
                       "n = onnx.OptionalProto(); n.ParseFromString(open(sys.argv[3], 'rb').read())\n"
                       "print([nh.to_array(x).tolist() for x in s.tensor_values], "
                       "[nh.to_array(x).tolist() for x in o.sequence_value.tensor_values], o.elem_type, "
                       "n.elem_type, n.HasField('sequence_value'))\" %s %s %s",
             path_in(dir, files[0]), path_in(dir, files[2]), path_in(dir, files[3]));
    ck_assert_msg(xf_test_run(cmd, &out) == 0, "%s", out);
    ck_assert_msg(strstr(out, "[[1.0, 2.0, 3.0], [7.0, 8.0]] [[1.0, 2.0, 3.0], [7.0, 8.0]] 3 3 False"), "%s", out);
    free(out);
    /* a TensorProto file read as an optional tensor gives an optional
     * holding it (ONNX's test data has such files); read as an optional
     * sequence, it says what it is not, naming the file */
    ck_assert_int_eq(xf_value_save_pb(t[0], "x", path_in(dir, "t.pb"), &e), XF_OK);
    xf_tensor *held = NULL;
    ck_assert_int_eq(xf_value_load_pb(path_in(dir, "t.pb"), XF_VK_OPTIONAL_TENSOR, &held, NULL, &e), XF_OK);
    ck_assert(held->is_optional && !held->optional_of_sequence && held->n_items == 1);
    assert_values(held->items[0], 1, (const int64_t[]){3}, x3);
    xf_tensor_release(held);
    xf_tensor *wrong = NULL;
    ck_assert_int_ne(xf_value_load_pb(path_in(dir, "t.pb"), XF_VK_OPTIONAL_SEQUENCE, &wrong, NULL, &e), XF_OK);
    ck_assert_msg(strstr(e.msg, "t.pb") && strstr(e.msg, "not an OptionalProto"), "%s", e.msg);
    release_all(vals, 4);
    release_all(t, 2);
}
END_TEST

/* xflow-run feeds SequenceProto and OptionalProto files and writes such
 * outputs; xflowc --check makes random sequences for a sequence input. */
START_TEST(test_tools)
{
    const char *dir = xf_test_tmpdir("optional_tools");
    Onnx__GraphProto *g = mk_graph("tools");
    PUSH(g->n_input, g->input, vi_of("xs", XF_VK_SEQUENCE, -1));
    PUSH(g->n_input, g->input, vi_of("o", XF_VK_OPTIONAL_TENSOR, -1));
    node(g, "OptionalGetElement", "get", NAMES("o"), NAMES("t"));
    node(g, "SequenceInsert", "push", NAMES("xs", "t"), NAMES("ys"));
    node(g, "Optional", "wrap", NAMES("ys"), NAMES("oys"));
    PUSH(g->n_output, g->output, vi_of("ys", XF_VK_SEQUENCE, -1));
    PUSH(g->n_output, g->output, vi_of("oys", XF_VK_OPTIONAL_SEQUENCE, -1));
    write_model(mk_model(g, 15), path_in(dir, "m.onnx"));
    xf_tensor *t = vec(x3, 3), *seq = xf_sequence_create(XF_DT_FLOAT, 1, &t), *opt = xf_optional_create(t, 0, 0);
    xf_error e;
    ck_assert_int_eq(xf_value_save_pb(seq, "xs", path_in(dir, "xs.pb"), &e), XF_OK);
    ck_assert_int_eq(xf_value_save_pb(opt, "o", path_in(dir, "o.pb"), &e), XF_OK);
    char cmd[9000], *out = NULL;
    snprintf(cmd, sizeof cmd, "%s %s --input %s --input %s --output-dir %s", xf_test_tool("xflow-run"),
             path_in(dir, "m.onnx"), path_in(dir, "xs.pb"), path_in(dir, "o.pb"), path_in(dir, "out"));
    ck_assert_msg(xf_test_run(cmd, &out) == 0, "%s", out);
    ck_assert_msg(strstr(out, "output 'ys' sequence of FLOAT, 2 entries"), "%s", out);
    free(out);
    xf_tensor *ys = NULL, *oys = NULL;
    ck_assert_msg(xf_value_load_pb(path_in(dir, "out/output_0.pb"), XF_VK_SEQUENCE, &ys, NULL, &e) == XF_OK, "%s",
                  e.msg);
    ck_assert_msg(xf_value_load_pb(path_in(dir, "out/output_1.pb"), XF_VK_OPTIONAL_SEQUENCE, &oys, NULL, &e) == XF_OK,
                  "%s", e.msg);
    ck_assert_int_eq(ys->n_items, 2);
    assert_values(ys->items[1], 1, (const int64_t[]){3}, x3);
    ck_assert(oys->is_optional && oys->n_items == 1 && oys->items[0]->n_items == 2);
    xf_tensor_release(ys);
    xf_tensor_release(oys);
    /* a TensorProto file for the sequence: the error names the file and
     * says what it is not */
    ck_assert_int_eq(xf_value_save_pb(t, "t", path_in(dir, "t.pb"), &e), XF_OK);
    snprintf(cmd, sizeof cmd, "%s %s --input %s --input %s", xf_test_tool("xflow-run"), path_in(dir, "m.onnx"),
             path_in(dir, "t.pb"), path_in(dir, "o.pb"));
    ck_assert_int_ne(xf_test_run(cmd, &out), 0);
    ck_assert_msg(strstr(out, "t.pb: not a SequenceProto"), "%s", out);
    free(out);
    /* no files: random sequences of the declared element shape */
    snprintf(cmd, sizeof cmd, "%s %s -o %s --check", xf_test_tool("xflowc"), path_in(dir, "m.onnx"),
             path_in(dir, "opt.onnx"));
    ck_assert_msg(xf_test_run(cmd, &out) == 0, "%s", out);
    ck_assert_msg(strstr(out, "check: output 'ys'") && strstr(out, "ok"), "%s", out);
    free(out);
    snprintf(cmd, sizeof cmd, "%s %s", xf_test_tool("xflow-run"), path_in(dir, "m.onnx"));
    ck_assert_msg(xf_test_run(cmd, &out) == 0, "%s", out);
    ck_assert_msg(strstr(out, "output 'ys' sequence of FLOAT, 4 entries"), "%s", out); /* 3 random, 1 inserted */
    free(out);
    xf_tensor_release(opt);
    xf_tensor_release(seq);
    xf_tensor_release(t);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("optional");
    TCase *tc = tcase_create("optional");
    tcase_add_checked_fixture(tc, NULL, free_allocs);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_ops_values);
    tcase_add_test(tc, test_optional_io_round_trip);
    tcase_add_test(tc, test_errors);
    tcase_add_test(tc, test_sequence_map);
    tcase_add_test(tc, test_value_files);
    tcase_add_test(tc, test_tools);
    suite_add_tcase(s, tc);
    return xf_test_run_suite(s);
}
