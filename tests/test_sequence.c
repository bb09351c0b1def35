/* ONNX's sequence ops: their values on every host backend, a Loop whose
 * body inserts into a loop-carried sequence, the errors a run gives, and
 * sequence-typed graph inputs and outputs through import and export. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto_util.h"
#include "xf_runtime.h"
#include "xf_test_util.h"

#define NAMES(...) ((const char *[]){__VA_ARGS__, NULL})

/* A ValueInfo of a sequence of float vectors of any length. */
static Onnx__ValueInfoProto *seq_vi(const char *name)
{
    Onnx__ValueInfoProto *vi = mk_vi(name, XF_DT_FLOAT, 1, (const int64_t[]){-1}, NAMES("n"));
    Onnx__TypeProto *t = zalloc(sizeof *t);
    Onnx__TypeProto__Sequence *sq = zalloc(sizeof *sq);
    onnx__type_proto__init(t);
    onnx__type_proto__sequence__init(sq);
    t->value_case = ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE;
    t->sequence_type = sq;
    sq->elem_type = vi->type;
    vi->type = t;
    return vi;
}

static void add_i64(Onnx__GraphProto *g, const char *name, int ndim, const int64_t *v, int n)
{
    int64_t *dims = zalloc(sizeof *dims);
    dims[0] = n;
    PUSH(g->n_initializer, g->initializer, mk_raw(name, XF_DT_INT64, ndim, dims, v, sizeof *v * (size_t)n));
}

static Onnx__NodeProto *node(Onnx__GraphProto *g, const char *op, const char *name, const char *const *ins,
                             const char *const *outs)
{
    Onnx__NodeProto *n = mk_node(op, name, ins, outs);
    PUSH(g->n_node, g->node, n);
    return n;
}

static xf_model *load(Onnx__GraphProto *g)
{
    xf_model *m;
    xf_error e;
    ck_assert_msg(load_proto(mk_model(g, 17), NULL, &m, &e) == XF_OK, "%s", e.msg);
    return m;
}

/* Runs m on backend be with inputs in; out gets the outputs. */
static void run(const xf_model *m, const char *be, xf_tensor **in, xf_tensor **out)
{
    xf_session *s;
    xf_error e;
    ck_assert_msg(xf_session_create(m->graph, xf_model_opset(m), be, NULL, &s, &e) == XF_OK, "%s: %s", be, e.msg);
    ck_assert(xf_session_is_dynamic(s));
    ck_assert_msg(xf_session_run(s, in, out, &e) == XF_OK, "%s: %s", be, e.msg);
    xf_session_free(s);
}

static int64_t scalar_i64(const xf_tensor *t)
{
    ck_assert_int_eq(t->dtype, XF_DT_INT64);
    ck_assert_int_eq(t->shape.ndim, 0);
    return ((const int64_t *)t->data)[0];
}

/* x = [[0 1 2] [3 4 5]] through every op; values worked out by hand. */
START_TEST(test_ops_values)
{
    Onnx__GraphProto *g = mk_graph("ops");
    PUSH(g->n_input, g->input, mk_vi("x", XF_DT_FLOAT, 2, (const int64_t[]){2, 3}, NULL));
    add_i64(g, "minus1", 0, (const int64_t[]){-1}, 1);
    add_i64(g, "zero", 0, (const int64_t[]){0}, 1);
    add_i64(g, "one", 0, (const int64_t[]){1}, 1);
    add_i64(g, "two", 0, (const int64_t[]){2}, 1);
    add_i64(g, "sizes", 1, (const int64_t[]){1, 2}, 2);
    Onnx__NodeProto *n = node(g, "SplitToSequence", "cols", NAMES("x"), NAMES("s"));
    attr_int(n, "axis", 1);
    attr_int(n, "keepdims", 0);
    node(g, "SequenceLength", "len", NAMES("s"), NAMES("len"));
    node(g, "SequenceAt", "last", NAMES("s", "minus1"), NAMES("last"));
    node(g, "SequenceErase", "erase", NAMES("s", "zero"), NAMES("s2"));
    node(g, "SequenceInsert", "insert", NAMES("s2", "last", "zero"), NAMES("s3"));
    n = node(g, "ConcatFromSequence", "stack", NAMES("s3"), NAMES("stacked"));
    attr_int(n, "axis", -1);
    attr_int(n, "new_axis", 1);
    node(g, "SequenceConstruct", "pair", NAMES("x", "x"), NAMES("c"));
    n = node(g, "ConcatFromSequence", "cat", NAMES("c"), NAMES("cat"));
    attr_int(n, "axis", 0);
    n = node(g, "SplitToSequence", "parts", NAMES("x", "sizes"), NAMES("sp"));
    attr_int(n, "axis", -1);
    node(g, "SequenceAt", "part", NAMES("sp", "one"), NAMES("part"));
    n = node(g, "SplitToSequence", "chunks", NAMES("x", "two"), NAMES("sp2"));
    attr_int(n, "axis", 1);
    node(g, "SequenceAt", "chunk", NAMES("sp2", "minus1"), NAMES("chunk"));
    node(g, "SequenceEmpty", "empty", NULL, NAMES("e"));
    node(g, "SequenceInsert", "first", NAMES("e", "x"), NAMES("e1"));
    node(g, "SequenceLength", "len1", NAMES("e1"), NAMES("len1"));
    node(g, "SplitToSequence", "rows", NAMES("x"), NAMES("rows"));
    node(g, "SequenceAt", "row", NAMES("rows", "one"), NAMES("row"));
    const char *outs[] = {"len", "last", "stacked", "cat", "part", "chunk", "len1", "row"};
    /* ConcatFromSequence's extents, and those of entries of sequences whose
     * entries differ, are the run's */
    for (int k = 0; k < 8; k++)
        PUSH(g->n_output, g->output,
             k >= 2 && k <= 5 ? mk_vi(outs[k], XF_DT_FLOAT, 2, (const int64_t[]){-1, -1}, NULL)
                              : mk_vi(outs[k], XF_DT_FLOAT, -1, NULL, NULL));
    g->output[0]->type->tensor_type->elem_type = g->output[6]->type->tensor_type->elem_type = XF_DT_INT64;
    xf_model *m = load(g);
    ck_assert_int_lt(find_node_op(m->graph, XF_OP_OPAQUE), 0);
    ck_assert_int_eq(m->graph->values[xf_graph_find_value(m->graph, "s")].kind, XF_VK_SEQUENCE);
    /* all pieces alike: the sequence's element shape is known */
    ck_assert_int_eq(m->graph->values[xf_graph_find_value(m->graph, "s")].shape.ndim, 1);
    ck_assert_int_eq(m->graph->values[xf_graph_find_value(m->graph, "sp")].shape.ndim, -1);
    ck_assert_int_eq(m->graph->values[xf_graph_find_value(m->graph, "part")].dtype, XF_DT_FLOAT);

    static const float x[] = {0, 1, 2, 3, 4, 5};
    const char *be[4];
    int nb = host_backends(be);
    for (int b = 0; b < nb; b++) {
        xf_tensor *in[1] = {xf_tensor_from_data(XF_DT_FLOAT, &(xf_shape){2, {2, 3}}, x)}, *out[8];
        run(m, be[b], in, out);
        ck_assert_int_eq(scalar_i64(out[0]), 3);
        assert_values(out[1], 1, (const int64_t[]){2}, (const float[]){2, 5});
        /* [col2, col1, col2] stacked along a new last axis */
        assert_values(out[2], 2, (const int64_t[]){2, 3}, (const float[]){2, 1, 2, 5, 4, 5});
        assert_values(out[3], 2, (const int64_t[]){4, 3}, (const float[]){0, 1, 2, 3, 4, 5, 0, 1, 2, 3, 4, 5});
        assert_values(out[4], 2, (const int64_t[]){2, 2}, (const float[]){1, 2, 4, 5});
        assert_values(out[5], 2, (const int64_t[]){2, 1}, (const float[]){2, 5}); /* 3 = 2 + 1 */
        ck_assert_int_eq(scalar_i64(out[6]), 1);
        assert_values(out[7], 2, (const int64_t[]){1, 3}, (const float[]){3, 4, 5}); /* keepdims */
        release_all(in, 1);
        release_all(out, 8);
    }
    assert_saved_valid(m, "sequence_ops");
    xf_model *back = roundtrip(m);
    char why[512];
    ck_assert_msg(models_equal(m, back, why, sizeof why), "%s", why);
    xf_model_free(back);
    xf_model_free(m);
}
END_TEST

/* tf2onnx's TensorArray: a Loop whose body inserts x * i into a
 * loop-carried sequence, then ConcatFromSequence stacks the entries; the
 * final sequence is a graph output too. */
static xf_model *loop_model(void)
{
    static const uint8_t yes = 1;
    Onnx__GraphProto *g = mk_graph("loop");
    PUSH(g->n_input, g->input, mk_vi("M", XF_DT_INT64, 0, NULL, NULL));
    PUSH(g->n_input, g->input, mk_vi("x", XF_DT_FLOAT, 1, (const int64_t[]){3}, NULL));
    PUSH(g->n_initializer, g->initializer, mk_raw("cond0", XF_DT_BOOL, 0, NULL, &yes, 1));
    node(g, "SequenceEmpty", "empty", NULL, NAMES("seq0"));
    Onnx__GraphProto *body = mk_graph("body");
    PUSH(body->n_input, body->input, mk_vi("i", XF_DT_INT64, 0, NULL, NULL));
    PUSH(body->n_input, body->input, mk_vi("c_in", XF_DT_BOOL, 0, NULL, NULL));
    PUSH(body->n_input, body->input, seq_vi("seq_in"));
    Onnx__NodeProto *cast = node(body, "Cast", "b_cast", NAMES("i"), NAMES("fi"));
    attr_int(cast, "to", XF_DT_FLOAT);
    node(body, "Mul", "b_mul", NAMES("x", "fi"), NAMES("xi"));
    node(body, "SequenceInsert", "b_insert", NAMES("seq_in", "xi"), NAMES("seq_out"));
    node(body, "Identity", "b_cond", NAMES("c_in"), NAMES("c_out"));
    PUSH(body->n_output, body->output, mk_vi("c_out", XF_DT_BOOL, 0, NULL, NULL));
    PUSH(body->n_output, body->output, seq_vi("seq_out"));
    Onnx__NodeProto *loop = node(g, "Loop", "loop", NAMES("M", "cond0", "seq0"), NAMES("seq"));
    Onnx__AttributeProto *a = mk_attr(loop, "body", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH);
    a->g = body;
    Onnx__NodeProto *cat = node(g, "ConcatFromSequence", "stack", NAMES("seq"), NAMES("y"));
    attr_int(cat, "axis", 0);
    attr_int(cat, "new_axis", 1);
    PUSH(g->n_output, g->output, mk_vi("y", XF_DT_FLOAT, 2, (const int64_t[]){-1, 3}, NAMES("m", NULL)));
    PUSH(g->n_output, g->output, seq_vi("seq"));
    return load(g);
}

START_TEST(test_loop_carries_a_sequence)
{
    xf_model *m = loop_model();
    ck_assert_int_eq(m->graph->values[xf_graph_find_value(m->graph, "seq")].kind, XF_VK_SEQUENCE);
    static const float x[] = {1, 2, 3};
    const char *be[4];
    int nb = host_backends(be);
    for (int b = 0; b < nb; b++) {
        int64_t trips = 3;
        xf_tensor *in[2] = {xf_tensor_from_data(XF_DT_INT64, &(xf_shape){0}, &trips),
                            xf_tensor_from_data(XF_DT_FLOAT, &(xf_shape){1, {3}}, x)};
        xf_tensor *out[2];
        run(m, be[b], in, out);
        assert_values(out[0], 2, (const int64_t[]){3, 3}, (const float[]){0, 0, 0, 1, 2, 3, 2, 4, 6});
        ck_assert(out[1]->is_sequence);
        ck_assert_int_eq(out[1]->n_items, 3);
        assert_values(out[1]->items[2], 1, (const int64_t[]){3}, (const float[]){2, 4, 6});
        release_all(in, 2);
        release_all(out, 2);
    }
    assert_saved_valid(m, "sequence_loop");
    xf_model_free(m);
}
END_TEST

/* A position out of range fails the run naming the node; a tensor fed
 * for a sequence input is refused; so are split sizes past the extent. */
START_TEST(test_errors)
{
    Onnx__GraphProto *g = mk_graph("bad");
    PUSH(g->n_input, g->input, seq_vi("xs"));
    PUSH(g->n_input, g->input, mk_vi("p", XF_DT_INT64, 0, NULL, NULL));
    node(g, "SequenceAt", "pick", NAMES("xs", "p"), NAMES("y"));
    PUSH(g->n_output, g->output, mk_vi("y", XF_DT_FLOAT, -1, NULL, NULL));
    xf_model *m = load(g);
    xf_session *s;
    xf_error e;
    ck_assert_msg(xf_session_create(m->graph, 17, "cpu_ref", NULL, &s, &e) == XF_OK, "%s", e.msg);
    xf_tensor *item = xf_tensor_create(XF_DT_FLOAT, &(xf_shape){1, {2}});
    xf_tensor *seq = xf_sequence_create(XF_DT_FLOAT, 1, &item);
    int64_t far = -2, ok = -1;
    xf_tensor *in[2] = {seq, xf_tensor_from_data(XF_DT_INT64, &(xf_shape){0}, &far)}, *out[1];
    ck_assert_int_ne(xf_session_run(s, in, out, &e), XF_OK);
    ck_assert_msg(strstr(e.msg, "pick") && strstr(e.msg, "position -2 is out of range"), "%s", e.msg);
    xf_tensor_release(in[1]);
    in[1] = xf_tensor_from_data(XF_DT_INT64, &(xf_shape){0}, &ok);
    ck_assert_msg(xf_session_run(s, in, out, &e) == XF_OK, "%s", e.msg);
    assert_values(out[0], 1, (const int64_t[]){2}, (const float[]){0, 0});
    xf_tensor_release(out[0]);
    in[0] = item;
    ck_assert_int_ne(xf_session_run(s, in, out, &e), XF_OK);
    ck_assert_msg(strstr(e.msg, "'xs' is a tensor, the graph expects a sequence"), "%s", e.msg);
    xf_session_free(s);
    xf_tensor_release(seq);
    xf_tensor_release(item);
    xf_tensor_release(in[1]);
    xf_model_free(m);

    /* split sizes that would sum past int64 are refused before they do */
    g = mk_graph("split");
    PUSH(g->n_input, g->input, mk_vi("x", XF_DT_FLOAT, 1, (const int64_t[]){6}, NULL));
    PUSH(g->n_input, g->input, mk_vi("sp", XF_DT_INT64, 1, (const int64_t[]){2}, NULL));
    node(g, "SplitToSequence", "parts", NAMES("x", "sp"), NAMES("seq"));
    PUSH(g->n_output, g->output, seq_vi("seq"));
    m = load(g);
    ck_assert_msg(xf_session_create(m->graph, 17, "cpu_ref", NULL, &s, &e) == XF_OK, "%s", e.msg);
    int64_t sizes[2] = {INT64_MAX - 1, INT64_MAX - 1};
    xf_tensor *x = xf_tensor_create(XF_DT_FLOAT, &(xf_shape){1, {6}});
    xf_tensor *split_in[2] = {x, xf_tensor_from_data(XF_DT_INT64, &(xf_shape){1, {2}}, sizes)};
    ck_assert_int_ne(xf_session_run(s, split_in, out, &e), XF_OK);
    ck_assert_msg(strstr(e.msg, "parts") && strstr(e.msg, "split sums past 6"), "%s", e.msg);
    xf_session_free(s);
    xf_tensor_release(split_in[0]);
    xf_tensor_release(split_in[1]);
    xf_model_free(m);
}
END_TEST

/* Empty tensors split into and concatenated from sequences: the ops of
 * test_ops_values on x of 0x3, with a position the run fuzzer changed (its
 * seed file): the nodes before that SequenceAt run, which fails naming the
 * node. */
START_TEST(test_empty_tensors)
{
    xf_model *m;
    xf_error e;
    ck_assert_msg(xf_model_load(XF_SOURCE_DIR "/tests/fuzz/corpus/onnx/sequence_split_empty.onnx", NULL, &m, &e) ==
                      XF_OK,
                  "%s", e.msg);
    const char *be[4];
    int nb = host_backends(be);
    for (int b = 0; b < nb; b++) {
        xf_session *s;
        ck_assert_msg(xf_session_create(m->graph, xf_model_opset(m), be[b], NULL, &s, &e) == XF_OK, "%s", e.msg);
        xf_tensor *x = xf_tensor_create(XF_DT_FLOAT, &(xf_shape){2, {0, 3}}), *out[8] = {NULL};
        ck_assert_int_ne(xf_session_run(s, (xf_tensor *const[]){x}, out, &e), XF_OK);
        ck_assert_msg(strstr(e.msg, "node 'part' (SequenceAt): position 131073 is out of range"), "%s: %s", be[b],
                      e.msg);
        xf_tensor_release(x);
        xf_session_free(s);
    }
    xf_model_free(m);
}
END_TEST

/* Sequence-typed graph inputs and outputs keep their declared types
 * through export, byte for byte, and run with sequences fed and returned. */
START_TEST(test_sequence_io_round_trip)
{
    Onnx__GraphProto *g = mk_graph("io");
    PUSH(g->n_input, g->input, seq_vi("xs"));
    PUSH(g->n_input, g->input, mk_vi("t", XF_DT_FLOAT, 1, (const int64_t[]){2}, NULL));
    node(g, "SequenceInsert", "push", NAMES("xs", "t"), NAMES("ys"));
    node(g, "SequenceLength", "count", NAMES("ys"), NAMES("n"));
    PUSH(g->n_output, g->output, seq_vi("ys"));
    PUSH(g->n_output, g->output, mk_vi("n", XF_DT_INT64, 0, NULL, NULL));
    xf_model *m = load(g);
    ck_assert_int_eq(m->graph->values[m->graph->inputs[0]].kind, XF_VK_SEQUENCE);
    uint8_t *buf;
    Onnx__ModelProto *mp = saved_proto(m, &buf);
    ck_assert_int_eq(mp->graph->input[0]->type->value_case, ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE);
    ck_assert_int_eq(mp->graph->output[0]->type->value_case, ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE);
    onnx__model_proto__free_unpacked(mp, NULL);
    free(buf);
    xf_model *back = roundtrip(m);
    char why[512];
    ck_assert_msg(models_equal(m, back, why, sizeof why), "%s", why);
    assert_saved_valid(back, "sequence_io");

    static const float a[] = {1, 2}, b[] = {7, 8, 9};
    xf_tensor *items[2] = {xf_tensor_from_data(XF_DT_FLOAT, &(xf_shape){1, {3}}, b),
                           xf_tensor_from_data(XF_DT_FLOAT, &(xf_shape){1, {2}}, a)};
    xf_tensor *in[2] = {xf_sequence_create(XF_DT_FLOAT, 1, items), items[1]}, *out[2];
    ck_assert_int_eq(in[0]->shape.ndim, 1);
    run(back, "cpu_ref", in, out);
    ck_assert(out[0]->is_sequence);
    ck_assert_int_eq(out[0]->n_items, 2);
    ck_assert_int_eq(out[0]->shape.ndim, -1); /* entries of different lengths */
    assert_values(out[0]->items[1], 1, (const int64_t[]){2}, a);
    ck_assert_int_eq(scalar_i64(out[1]), 2);
    release_all(out, 2);
    xf_tensor_release(in[0]);
    release_all(items, 2);
    xf_model_free(back);
    xf_model_free(m);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("sequence");
    TCase *tc = tcase_create("sequence");
    tcase_add_checked_fixture(tc, NULL, free_allocs);
    tcase_add_test(tc, test_ops_values);
    tcase_add_test(tc, test_loop_carries_a_sequence);
    tcase_add_test(tc, test_errors);
    tcase_add_test(tc, test_empty_tensors);
    tcase_add_test(tc, test_sequence_io_round_trip);
    suite_add_tcase(s, tc);
    return xf_test_run_suite(s);
}
