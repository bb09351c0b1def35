/* Maps as graph inputs (ONNX's map type) and ONNX-ML's ops on them
 * (runtime/ml_maps.c): DictVectorizer and CastMap on every host backend
 * against values worked out by hand (as ONNX Runtime gives them); MapProto
 * files read (as onnx writes them) and refused where malformed; plans that
 * cannot run refused by node; a scikit-learn-style DictVectorizer pipeline
 * run by xflow-run from a MapProto file and checked by xflowc with random
 * maps of its vocabulary, its map input written back as declared. */
#include "kernel_case_util.h"
#include "proto_util.h"
#include "xf_runtime.h"
#include "xf_test_util.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NAMES(...) ((const char *[]){__VA_ARGS__, NULL})

/* ValueInfo of a map from key to scalar tensors of value. */
static Onnx__ValueInfoProto *map_vi(const char *name, int key, int value)
{
    Onnx__ValueInfoProto *vi = mk_vi(name, value, 0, NULL, NULL), *holder = zalloc(sizeof *holder);
    Onnx__TypeProto *t = zalloc(sizeof *t);
    Onnx__TypeProto__Map *mt = zalloc(sizeof *mt);
    onnx__type_proto__init(t);
    onnx__type_proto__map__init(mt);
    mt->has_key_type = 1;
    mt->key_type = key;
    mt->value_type = vi->type;
    t->value_case = ONNX__TYPE_PROTO__VALUE_MAP_TYPE;
    t->map_type = mt;
    *holder = *vi;
    holder->type = t;
    return holder;
}

static Onnx__NodeProto *ml_node(const char *op, const char *const *ins, const char *const *outs)
{
    Onnx__NodeProto *n = mk_node(op, "m", ins, outs);
    n->domain = "ai.onnx.ml";
    return n;
}

/* A model of node n (named "m") reading the map "in" and giving "y". */
static Onnx__ModelProto *map_model(Onnx__NodeProto *n, int key, int value)
{
    Onnx__GraphProto *g = mk_graph("maps");
    PUSH(g->n_input, g->input, map_vi("in", key, value));
    PUSH(g->n_node, g->node, n);
    PUSH(g->n_output, g->output, mk_vi("y", XF_DT_UNDEFINED, -1, NULL, NULL));
    Onnx__ModelProto *mp = mk_model(g, 17);
    add_opset(mp, "ai.onnx.ml", 3);
    return mp;
}

/* A map of n keys (int64 or strings) to values. */
static xf_tensor *mk_map(xf_tensor *keys, xf_tensor *values)
{
    xf_tensor *m = xf_map_create(keys, values);
    ck_assert_ptr_nonnull(m);
    xf_tensor_release(keys);
    xf_tensor_release(values);
    return m;
}

/* y of model mp on the map x, on backend; with fail, the error of making
 * or running the session (NULL y), else it must run. */
static xf_tensor *run_map(Onnx__ModelProto *mp, const char *backend, xf_tensor *x, xf_error *fail)
{
    xf_model *m = NULL;
    xf_error e = {0};
    ck_assert_msg(load_proto(mp, NULL, &m, &e) == XF_OK, "%s", e.msg);
    ck_assert_int_eq(m->graph->values[m->graph->inputs[0]].kind, XF_VK_MAP);
    xf_session *s = NULL;
    xf_tensor *y = NULL;
    xf_status st = xf_session_create(m->graph, xf_model_opset(m), backend, NULL, &s, &e);
    if (st == XF_OK)
        st = xf_session_run(s, &x, &y, &e);
    ck_assert_msg(st == XF_OK || fail, "%s: %s", backend, e.msg);
    if (fail)
        *fail = e;
    xf_session_free(s);
    xf_model_free(m);
    return y;
}

static void expect_error(Onnx__ModelProto *mp, xf_tensor *x, const char *want)
{
    xf_error e = {0};
    xf_tensor *y = run_map(mp, "cpu_ref", x, &e);
    ck_assert_msg(!y && strstr(e.msg, want), "got '%s', want '%s'", y ? "(ran)" : e.msg, want);
    xf_tensor_release(x);
}

/* ------------------------------------------------------------ DictVectorizer */

/* Each vocabulary place takes its key's value (a word there twice, both),
 * 0 or "" where the map lacks it; keys outside the vocabulary are left
 * out; int64 keys likewise. */
START_TEST(dict_vectorizer)
{
    const char *backends[4];
    int nb = host_backends(backends);
    for (int b = 0; b < nb; b++) {
        Onnx__NodeProto *n = ml_node("DictVectorizer", NAMES("in"), NAMES("y"));
        attr_strings(n, "string_vocabulary", 5, NAMES("b", "a", "c", "a", "zz"));
        xf_tensor *x = mk_map(string_tensor((xf_shape){1, {3}}, NAMES("a", "q", "b")), F32(DIMS(3), 1.5f, 7, -2));
        EXPECT(run_map(map_model(n, XF_DT_STRING, XF_DT_FLOAT), backends[b], x, NULL), XF_DT_FLOAT, DIMS(1, 5), -2,
               1.5, 0, 1.5, 0);
        xf_tensor_release(x);
        /* doubles, and no key of the map in the vocabulary */
        x = mk_map(string_tensor((xf_shape){1, {1}}, NAMES("q")), mk(XF_DT_DOUBLE, DIMS(1), (double[]){4}));
        EXPECT(run_map(map_model(n, XF_DT_STRING, XF_DT_DOUBLE), backends[b], x, NULL), XF_DT_DOUBLE, DIMS(1, 5), 0,
               0, 0, 0, 0);
        xf_tensor_release(x);

        n = ml_node("DictVectorizer", NAMES("in"), NAMES("y"));
        attr_ints(n, "int64_vocabulary", 4, (const int64_t[]){5, 1, 3, 1});
        x = mk_map(I64(DIMS(3), 9, 1, 5), string_tensor((xf_shape){1, {3}}, NAMES("nine", "one", "five")));
        xf_tensor *y = run_map(map_model(n, XF_DT_INT64, XF_DT_STRING), backends[b], x, NULL);
        assert_strings(y, (xf_shape){2, {1, 4}}, NAMES("five", "one", "", "one"), backends[b]);
        xf_tensor_release(y);
        xf_tensor_release(x);
    }
}
END_TEST

/* ------------------------------------------------------------ CastMap */

static Onnx__ModelProto *cast_map(int value, const char *to, const char *form, int64_t max_map)
{
    Onnx__NodeProto *n = ml_node("CastMap", NAMES("in"), NAMES("y"));
    attr_string(n, "cast_to", to);
    attr_string(n, "map_form", form);
    if (max_map)
        attr_int(n, "max_map", max_map);
    return map_model(n, XF_DT_INT64, value);
}

/* DENSE: every value in key order; SPARSE: places 0 .. max_map - 1, pads
 * 0 and "0.f", keys beyond left out; floats written as %f, truncated to
 * integers; strings read as numbers (leading space, trailing text), an
 * unreadable one refused naming its key. */
START_TEST(cast_map_forms)
{
    const char *backends[4];
    int nb = host_backends(backends);
    for (int b = 0; b < nb; b++) {
        const char *be = backends[b];
        xf_tensor *x = mk_map(I64(DIMS(4), 3, 1, 2, 8), F32(DIMS(4), 1.5f, 2.125f, -1e-7f, 123456.789f));
        EXPECT(run_map(cast_map(XF_DT_FLOAT, "TO_FLOAT", "DENSE", 0), be, x, NULL), XF_DT_FLOAT, DIMS(1, 4), 2.125,
               -1e-7, 1.5, 123456.789);
        xf_tensor *y = run_map(cast_map(XF_DT_FLOAT, "TO_STRING", "DENSE", 0), be, x, NULL);
        assert_strings(y, (xf_shape){2, {1, 4}}, NAMES("2.125000", "-0.000000", "1.500000", "123456.789062"), be);
        xf_tensor_release(y);
        xf_tensor_release(x);

        x = mk_map(I64(DIMS(3), 3, 1, 9), F32(DIMS(3), 1.9f, -2.7f, 5));
        EXPECT(run_map(cast_map(XF_DT_FLOAT, "TO_INT64", "SPARSE", 6), be, x, NULL), XF_DT_INT64, DIMS(1, 6), 0, -2,
               0, 1, 0, 0);
        xf_tensor_release(x);

        x = mk_map(I64(DIMS(3), 2, 0, 3), string_tensor((xf_shape){1, {3}}, NAMES(" 2.25e1", "1.5", "7abc")));
        EXPECT(run_map(cast_map(XF_DT_STRING, "TO_FLOAT", "SPARSE", 4), be, x, NULL), XF_DT_FLOAT, DIMS(1, 4), 1.5,
               0, 22.5, 7);
        EXPECT(run_map(cast_map(XF_DT_STRING, "TO_INT64", "DENSE", 0), be, x, NULL), XF_DT_INT64, DIMS(1, 3), 1, 2,
               7);
        xf_tensor_release(x);

        x = mk_map(I64(DIMS(3), 0, 4, 7), string_tensor((xf_shape){1, {3}}, NAMES("a", "e", "z")));
        y = run_map(cast_map(XF_DT_STRING, "TO_STRING", "SPARSE", 5), be, x, NULL);
        assert_strings(y, (xf_shape){2, {1, 5}}, NAMES("a", "0.f", "0.f", "0.f", "e"), be);
        xf_tensor_release(y);
        xf_tensor_release(x);
    }
    expect_error(cast_map(XF_DT_STRING, "TO_FLOAT", "DENSE", 0),
                 mk_map(I64(DIMS(2), 1, 2), string_tensor((xf_shape){1, {2}}, NAMES("1", "x"))),
                 "node 'm' (CastMap): the value 'x' of key 2 is not a number");
    expect_error(cast_map(XF_DT_STRING, "TO_FLOAT", "DENSE", 0),
                 mk_map(I64(DIMS(1), 1), string_tensor((xf_shape){1, {1}}, NAMES("1e50"))),
                 "the value '1e50' of key 1 is out of range");
    expect_error(cast_map(XF_DT_STRING, "TO_INT64", "DENSE", 0),
                 mk_map(I64(DIMS(1), 4), string_tensor((xf_shape){1, {1}}, NAMES("abc"))),
                 "the value 'abc' of key 4 is not an integer");
    expect_error(cast_map(XF_DT_FLOAT, "TO_FLOAT", "SPARSE", 3), mk_map(I64(DIMS(2), 2, -1), F32(DIMS(2), 1, 2)),
                 "the map has the negative key -1; SPARSE takes keys from 0");
}
END_TEST

/* ------------------------------------------------------------ refusals */

/* Plans that cannot run, refused by node when the session is made; inputs
 * of the wrong kind or key type, refused by input. */
START_TEST(refusals)
{
    Onnx__NodeProto *n = ml_node("DictVectorizer", NAMES("in"), NAMES("y"));
    expect_error(map_model(n, XF_DT_STRING, XF_DT_FLOAT),
                 mk_map(string_tensor((xf_shape){1, {1}}, NAMES("a")), F32(DIMS(1), 1)),
                 "node 'm' (DictVectorizer): needs one of string_vocabulary and int64_vocabulary, not neither");
    attr_strings(n, "string_vocabulary", 1, NAMES("a"));
    attr_ints(n, "int64_vocabulary", 1, (const int64_t[]){1});
    expect_error(map_model(n, XF_DT_STRING, XF_DT_FLOAT),
                 mk_map(string_tensor((xf_shape){1, {1}}, NAMES("a")), F32(DIMS(1), 1)), "not both");
    n = ml_node("DictVectorizer", NAMES("in"), NAMES("y"));
    attr_strings(n, "string_vocabulary", 1, NAMES("a"));
    expect_error(map_model(n, XF_DT_INT64, XF_DT_FLOAT), mk_map(I64(DIMS(1), 1), F32(DIMS(1), 1)),
                 "node 'm' (DictVectorizer): takes a map of STRING keys, not of INT64 keys");
    expect_error(map_model(n, XF_DT_STRING, XF_DT_FLOAT), F32(DIMS(1), 1),
                 "input 'in' is a tensor, the graph expects a map");
    expect_error(map_model(n, XF_DT_STRING, XF_DT_FLOAT), mk_map(I64(DIMS(1), 1), F32(DIMS(1), 1)),
                 "input 'in' is a map of INT64 keys, the graph expects STRING keys");
    expect_error(map_model(n, XF_DT_STRING, XF_DT_FLOAT),
                 mk_map(string_tensor((xf_shape){1, {1}}, NAMES("a")), I64(DIMS(1), 1)),
                 "input 'in' has type INT64, the graph expects FLOAT");
    expect_error(cast_map(XF_DT_FLOAT, "TO_DOUBLE", "DENSE", 0), mk_map(I64(DIMS(1), 1), F32(DIMS(1), 1)),
                 "node 'm' (CastMap): cast_to 'TO_DOUBLE' is none of TO_FLOAT, TO_STRING, TO_INT64");
    expect_error(cast_map(XF_DT_FLOAT, "TO_FLOAT", "PACKED", 0), mk_map(I64(DIMS(1), 1), F32(DIMS(1), 1)),
                 "map_form 'PACKED' is neither DENSE nor SPARSE");
    expect_error(cast_map(XF_DT_FLOAT, "TO_FLOAT", "SPARSE", -2), mk_map(I64(DIMS(1), 1), F32(DIMS(1), 1)),
                 "max_map is -2; SPARSE needs it positive");
    /* an op on tensors given a map refuses it */
    Onnx__NodeProto *s = ml_node("Scaler", NAMES("in"), NAMES("y"));
    attr_floats(s, "scale", 1, (const float[]){2});
    expect_error(map_model(s, XF_DT_INT64, XF_DT_FLOAT), mk_map(I64(DIMS(1), 1), F32(DIMS(1), 1)),
                 "node 'm' (Scaler): input 0 is a map, not a tensor");
}
END_TEST

/* ------------------------------------------------------------ MapProto files */

/* Writes MapProto files with onnx (Python): string keys, int64 keys (as
 * onnx writes them, unpacked), an empty map, and malformed ones. */
static void write_map_files(const char *dir)
{
    char cmd[8192], *out = NULL;
    snprintf(cmd, sizeof cmd,
             XF_PYTHON " -c \"\n"
             "import onnx, sys, numpy as np\n"
             "from onnx import numpy_helper as h\n"
             "d = sys.argv[1]\n"
             "def put(name, kt, keys, vals):\n"
             "    m = onnx.MapProto(); m.name = name; m.key_type = kt\n"
             "    (m.string_keys if kt == onnx.TensorProto.STRING else m.keys).extend(keys)\n"
             "    m.values.CopyFrom(h.from_list([np.array(v, np.float32) for v in vals]))\n"
             "    open(d + '/' + name + '.pb', 'wb').write(m.SerializeToString())\n"
             "    return m\n"
             "S, I = onnx.TensorProto.STRING, onnx.TensorProto.INT64\n"
             "put('words', S, [b'a', b'zz', b'b'], [1.5, 2, -3])\n"
             "put('ints', I, [7, -1], [0.5, 4])\n"
             "put('empty', S, [], [])\n"
             "put('twice', S, [b'a', b'a'], [1, 2])\n"
             "put('short', I, [1, 2], [1])\n"
             "put('int32', onnx.TensorProto.INT32, [1], [1])\n"
             "s = onnx.SequenceProto(); s.elem_type = onnx.SequenceProto.MAP\n"
             "s.map_values.extend([put('one', I, [1], [2]), put('two', I, [3, 4], [5, 6])])\n"
             "open(d + '/maps.pb', 'wb').write(s.SerializeToString())\n"
             "\" %s",
             dir);
    ck_assert_msg(xf_test_run(cmd, &out) == 0, "%s", out);
    free(out);
}

static xf_tensor *load_map_file(const char *dir, const char *name, xf_error *e)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/%s.pb", dir, name);
    xf_tensor *t = NULL;
    xf_status st = xf_value_load_pb(path, XF_VK_MAP, &t, NULL, e);
    ck_assert(st == XF_OK || !t);
    return t;
}

START_TEST(map_files)
{
    const char *dir = xf_test_tmpdir("ml-map-files");
    ck_assert_ptr_nonnull(dir);
    write_map_files(dir);
    xf_error e = {0};
    xf_tensor *m = load_map_file(dir, "words", &e);
    ck_assert_msg(m && m->is_map, "%s", e.msg);
    assert_strings(m->items[0], (xf_shape){1, {3}}, NAMES("a", "zz", "b"), "keys");
    EXPECT(xf_tensor_retain(m->items[1]), XF_DT_FLOAT, DIMS(3), 1.5, 2, -3);
    xf_tensor_release(m);
    m = load_map_file(dir, "ints", &e);
    ck_assert_msg(m && m->is_map, "%s", e.msg);
    EXPECT(xf_tensor_retain(m->items[0]), XF_DT_INT64, DIMS(2), 7, -1);
    EXPECT(xf_tensor_retain(m->items[1]), XF_DT_FLOAT, DIMS(2), 0.5, 4);
    xf_tensor_release(m);
    m = load_map_file(dir, "empty", &e);
    ck_assert_msg(m && m->is_map && xf_tensor_numel(m->items[0]) == 0, "%s", e.msg);
    /* an empty map takes the graph's value type */
    Onnx__NodeProto *n = ml_node("DictVectorizer", NAMES("in"), NAMES("y"));
    attr_strings(n, "string_vocabulary", 2, NAMES("a", "b"));
    EXPECT(run_map(map_model(n, XF_DT_STRING, XF_DT_DOUBLE), "cpu_ref", m, NULL), XF_DT_DOUBLE, DIMS(1, 2), 0, 0);
    xf_tensor_release(m);
    static const char *const bad[][2] = {{"twice", "a MapProto with the key 'a' twice"},
                                         {"short", "a MapProto with 2 keys and 1 values"},
                                         {"int32", "a MapProto with keys of type 6"},
                                         {"words", NULL}};
    for (int i = 0; bad[i][1]; i++) {
        ck_assert_ptr_null(load_map_file(dir, bad[i][0], &e));
        ck_assert_msg(strstr(e.msg, bad[i][1]) && strstr(e.msg, bad[i][0]), "%s: %s", bad[i][0], e.msg);
    }
    /* a SequenceProto of maps (as ZipMap's outputs are written) */
    char path[4200];
    snprintf(path, sizeof path, "%s/maps.pb", dir);
    xf_tensor *seq = NULL;
    ck_assert_msg(xf_value_load_pb(path, XF_VK_SEQUENCE, &seq, NULL, &e) == XF_OK, "%s", e.msg);
    ck_assert(seq->is_sequence && seq->n_items == 2 && seq->items[1]->is_map);
    EXPECT(xf_tensor_retain(seq->items[1]->items[0]), XF_DT_INT64, DIMS(2), 3, 4);
    EXPECT(xf_tensor_retain(seq->items[1]->items[1]), XF_DT_FLOAT, DIMS(2), 5, 6);
    xf_tensor_release(seq);
    /* a TensorProto file is not a MapProto */
    snprintf(path, sizeof path, "%s/tensor.pb", dir);
    xf_tensor *t = F32(DIMS(2), 1, 2);
    ck_assert(xf_tensor_save_pb(t, "t", path, &e) == XF_OK);
    xf_tensor_release(t);
    ck_assert_ptr_null(load_map_file(dir, "tensor", &e));
    ck_assert_msg(strstr(e.msg, "not a MapProto"), "%s", e.msg);
}
END_TEST

/* ------------------------------------------------------------ tools */

/* DictVectorizer -> LinearClassifier -> ZipMap, as skl2onnx writes a
 * DictVectorizer pipeline: xflow-run reads the map from a MapProto file;
 * xflowc checks the model on its outputs with random maps of the
 * vocabulary's words and writes the map input back as declared. */
START_TEST(pipeline_tools)
{
    const char *dir = xf_test_tmpdir("ml-map-tools");
    ck_assert_ptr_nonnull(dir);
    write_map_files(dir);
    Onnx__NodeProto *dv = ml_node("DictVectorizer", NAMES("in"), NAMES("v"));
    attr_strings(dv, "string_vocabulary", 3, NAMES("a", "b", "c"));
    static const float w[] = {1, 0, 0, 0, 1, 1};
    Onnx__NodeProto *lc = ml_node("LinearClassifier", NAMES("v"), NAMES("label", "scores"));
    lc->name = "lc";
    attr_ints(lc, "classlabels_ints", 2, (const int64_t[]){0, 1});
    attr_floats(lc, "coefficients", 6, w);
    Onnx__NodeProto *zip = ml_node("ZipMap", NAMES("scores"), NAMES("probs"));
    zip->name = "zip";
    attr_ints(zip, "classlabels_int64s", 2, (const int64_t[]){0, 1});
    Onnx__ModelProto *mp = map_model(dv, XF_DT_STRING, XF_DT_FLOAT);
    Onnx__GraphProto *g = mp->graph;
    PUSH(g->n_node, g->node, lc);
    PUSH(g->n_node, g->node, zip);
    g->output[0] = mk_vi("label", XF_DT_INT64, 1, (const int64_t[]){1}, NULL);
    Onnx__ValueInfoProto *probs = map_vi("probs", XF_DT_INT64, XF_DT_FLOAT);
    Onnx__TypeProto *seq = zalloc(sizeof *seq);
    Onnx__TypeProto__Sequence *st = zalloc(sizeof *st);
    onnx__type_proto__init(seq);
    onnx__type_proto__sequence__init(st);
    st->elem_type = probs->type;
    seq->value_case = ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE;
    seq->sequence_type = st;
    probs->type = seq;
    PUSH(g->n_output, g->output, probs);
    PUSH(g->n_output, g->output, mk_vi("v", XF_DT_FLOAT, 2, (const int64_t[]){1, 3}, NULL));
    char in[4200], cmd[9000], *out = NULL;
    snprintf(in, sizeof in, "%s/dv.onnx", dir);
    write_model(mp, in);
    assert_onnx_valid(in);
    /* {a: 1.5, zz: 2, b: -3}: scores 1.5 and -3, label 0 */
    snprintf(cmd, sizeof cmd, "%s %s --input %s/words.pb", xf_test_tool("xflow-run"), in, dir);
    ck_assert_msg(xf_test_run(cmd, &out) == 0, "%s", out);
    ck_assert_msg(strstr(out, "output 'label' INT64 1: 0") && strstr(out, "output 'v' FLOAT 1x3: 1.5 -3 0"), "%s",
                  out);
    free(out);
    snprintf(cmd, sizeof cmd, "%s %s --input %s/ints.pb", xf_test_tool("xflow-run"), in, dir);
    ck_assert_msg(xf_test_run(cmd, &out) != 0, "%s", out);
    ck_assert_msg(strstr(out, "input 'in' is a map of INT64 keys, the graph expects STRING keys"), "%s", out);
    free(out);
    /* random maps: of the vocabulary's words, so the features are not all 0 */
    snprintf(cmd, sizeof cmd, "%s %s --seed 3", xf_test_tool("xflow-run"), in);
    ck_assert_msg(xf_test_run(cmd, &out) == 0, "%s", out);
    ck_assert_msg(strstr(out, "output 'v' FLOAT 1x3: ") && !strstr(out, "output 'v' FLOAT 1x3: 0 0 0"), "%s", out);
    free(out);
    snprintf(cmd, sizeof cmd, "%s %s -o %s/out.onnx --check", xf_test_tool("xflowc"), in, dir);
    ck_assert_msg(xf_test_run(cmd, &out) == 0, "%s", out);
    ck_assert_msg(strstr(out, "check: output 'label'") && strstr(out, "check: output 'probs'") &&
                      !strstr(out, "shapes only"), "%s", out);
    free(out);
    snprintf(cmd, sizeof cmd, "%s/out.onnx", dir);
    assert_onnx_valid(cmd);
    xf_model *m = NULL;
    xf_error e = {0};
    ck_assert_msg(xf_model_load(cmd, NULL, &m, &e) == XF_OK, "%s", e.msg);
    const xf_value *v = &m->graph->values[m->graph->inputs[0]];
    ck_assert(v->kind == XF_VK_MAP && v->key_dtype == XF_DT_STRING && v->dtype == XF_DT_FLOAT);
    xf_model_free(m);
    /* random int64 keys: DictVectorizer's vocabulary, CastMap's places */
    dv = ml_node("DictVectorizer", NAMES("in"), NAMES("y"));
    attr_ints(dv, "int64_vocabulary", 3, (const int64_t[]){100, 200, 300});
    snprintf(in, sizeof in, "%s/dv_ints.onnx", dir);
    write_model(map_model(dv, XF_DT_INT64, XF_DT_FLOAT), in);
    snprintf(cmd, sizeof cmd, "%s %s --seed 3", xf_test_tool("xflow-run"), in);
    ck_assert_msg(xf_test_run(cmd, &out) == 0, "%s", out);
    ck_assert_msg(strstr(out, "output 'y' FLOAT 1x3: ") && !strstr(out, "output 'y' FLOAT 1x3: 0 0 0"), "%s", out);
    free(out);
    snprintf(in, sizeof in, "%s/cm.onnx", dir);
    write_model(cast_map(XF_DT_STRING, "TO_STRING", "SPARSE", 8), in);
    snprintf(cmd, sizeof cmd, "%s %s --seed 3", xf_test_tool("xflow-run"), in);
    ck_assert_msg(xf_test_run(cmd, &out) == 0, "%s", out);
    const char *y = strstr(out, "output 'y' STRING 1x8: ");
    ck_assert_msg(y, "%s", out);
    int pads = 0;
    for (const char *p = strstr(y, "0.f"); p; p = strstr(p + 1, "0.f"))
        pads++;
    /* about three in four of the 8 places taken, the rest padded */
    ck_assert_msg(pads >= 1 && pads <= 2, "%d places padded: %s", pads, out);
    free(out);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("ml_maps");
    TCase *tc = tcase_create("maps");
    tcase_add_checked_fixture(tc, NULL, free_allocs);
    tcase_add_test(tc, dict_vectorizer);
    tcase_add_test(tc, cast_map_forms);
    tcase_add_test(tc, refusals);
    tcase_add_test(tc, map_files);
    tcase_add_test(tc, pipeline_tools);
    suite_add_tcase(s, tc);
    return xf_test_run_suite(s);
}
