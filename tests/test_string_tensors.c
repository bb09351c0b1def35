/* ONNX's standard ops on tensors of strings (runtime/string_tensors.c):
 * models built as ONNX files, run on every host backend against values
 * worked out by hand (equal to ONNX Runtime's where it runs the op): the
 * ops that move, select or compare elements, Cast and CastLike both ways,
 * sequences of strings,
 * what is refused and why, and xflowc checking such a model. */
#include "kernel_case_util.h"
#include "proto_util.h"
#include "xf_runtime.h"
#include "xf_test_util.h"

#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NAMES(...) ((const char *[]){__VA_ARGS__, NULL})

static void assert_ints(const xf_tensor *t, xf_dtype dt, int64_t n, const int64_t *want, const char *what)
{
    ck_assert_msg(t && t->dtype == dt && xf_tensor_numel(t) == n, "%s: type or size", what);
    for (int64_t i = 0; i < n; i++) {
        int64_t v = dt == XF_DT_BOOL ? ((const uint8_t *)t->data)[i] : ((const int64_t *)t->data)[i];
        ck_assert_msg(v == want[i], "%s: element %lld is %lld, want %lld", what, (long long)i, (long long)v,
                      (long long)want[i]);
    }
}

/* Runs m on backend with n_in inputs; the session must be dynamic. */
static void run(const xf_model *m, const char *backend, xf_tensor **in, xf_tensor **out)
{
    xf_session *s;
    xf_error e;
    ck_assert_msg(xf_session_create(m->graph, xf_model_opset(m), backend, NULL, &s, &e) == XF_OK, "%s: %s", backend,
                  e.msg);
    ck_assert(xf_session_is_dynamic(s));
    ck_assert_msg(xf_session_run(s, in, out, &e) == XF_OK, "%s: %s", backend, e.msg);
    xf_session_free(s);
}

static void release(xf_tensor **t, int n)
{
    for (int i = 0; i < n; i++)
        xf_tensor_release(t[i]);
}

/* text [4, 1] and scores [4, 3]:
 *   flat = Reshape(text, [-1]); eq = Equal(flat, "b");
 *   label = Gather(["cat", "dog", "b"], ArgMax(scores, 1));
 *   u, ui, uinv, ucnt = Unique(Concat(label, flat));
 *   tt = Transpose(text); tshape = Shape(text);
 *   padded = Pad(flat, [1, 2]) (""), tilde = Pad(flat, [1, 0], "~");
 *   wh = Where(eq, "yes", flat); back = ScatterND(flat, [[0]], ["first"]). */
static Onnx__ModelProto *moves_model(void)
{
    static const int64_t d41[] = {4, 1}, d43[] = {4, 3}, one[] = {1}, three[] = {3}, two[] = {2}, d11[] = {1, 1};
    static const int64_t shp[] = {-1}, pads[] = {1, 2}, pads1[] = {1, 0}, at0[] = {0};
    Onnx__GraphProto *g = mk_graph("strings");
    PUSH(g->n_input, g->input, mk_vi("text", XF_DT_STRING, 2, d41, NULL));
    PUSH(g->n_input, g->input, mk_vi("scores", XF_DT_FLOAT, 2, d43, NULL));
    PUSH(g->n_initializer, g->initializer, mk_raw("shp", XF_DT_INT64, 1, one, shp, sizeof shp));
    PUSH(g->n_initializer, g->initializer, mk_raw("pads", XF_DT_INT64, 1, two, pads, sizeof pads));
    PUSH(g->n_initializer, g->initializer, mk_raw("pads1", XF_DT_INT64, 1, two, pads1, sizeof pads1));
    PUSH(g->n_initializer, g->initializer, mk_raw("at0", XF_DT_INT64, 2, d11, at0, sizeof at0));
    PUSH(g->n_initializer, g->initializer, mk_strings("target", 1, one, 1, NAMES("b")));
    PUSH(g->n_initializer, g->initializer, mk_strings("names", 1, three, 3, NAMES("cat", "dog", "b")));
    PUSH(g->n_initializer, g->initializer, mk_strings("tilde", 0, NULL, 1, NAMES("~")));
    PUSH(g->n_initializer, g->initializer, mk_strings("yes", 0, NULL, 1, NAMES("yes")));
    PUSH(g->n_initializer, g->initializer, mk_strings("first", 1, one, 1, NAMES("first")));
    PUSH(g->n_node, g->node, mk_node("Reshape", "reshape", NAMES("text", "shp"), NAMES("flat")));
    PUSH(g->n_node, g->node, mk_node("Equal", "equal", NAMES("flat", "target"), NAMES("eq")));
    Onnx__NodeProto *am = mk_node("ArgMax", "argmax", NAMES("scores"), NAMES("am"));
    attr_int(am, "axis", 1);
    attr_int(am, "keepdims", 0);
    PUSH(g->n_node, g->node, am);
    PUSH(g->n_node, g->node, mk_node("Gather", "gather", NAMES("names", "am"), NAMES("label")));
    Onnx__NodeProto *cat = mk_node("Concat", "concat", NAMES("label", "flat"), NAMES("both"));
    attr_int(cat, "axis", 0);
    PUSH(g->n_node, g->node, cat);
    PUSH(g->n_node, g->node, mk_node("Unique", "unique", NAMES("both"), NAMES("u", "ui", "uinv", "ucnt")));
    PUSH(g->n_node, g->node, mk_node("Transpose", "transpose", NAMES("text"), NAMES("tt")));
    PUSH(g->n_node, g->node, mk_node("Shape", "shape", NAMES("text"), NAMES("tshape")));
    PUSH(g->n_node, g->node, mk_node("Pad", "pad", NAMES("flat", "pads"), NAMES("padded")));
    PUSH(g->n_node, g->node, mk_node("Pad", "pad_tilde", NAMES("flat", "pads1", "tilde"), NAMES("tilded")));
    PUSH(g->n_node, g->node, mk_node("Where", "where", NAMES("eq", "yes", "flat"), NAMES("wh")));
    PUSH(g->n_node, g->node, mk_node("ScatterND", "scatter", NAMES("flat", "at0", "first"), NAMES("back")));
    const char *outs[] = {"eq", "label", "u", "ui", "uinv", "ucnt", "tt", "tshape", "padded", "tilded", "wh", "back"};
    for (int k = 0; k < 12; k++)
        PUSH(g->n_output, g->output, mk_vi(outs[k], XF_DT_UNDEFINED, -1, NULL, NULL));
    return mk_model(g, 18);
}

START_TEST(moves_and_compares)
{
    xf_model *m;
    xf_error e;
    ck_assert_msg(load_proto(moves_model(), NULL, &m, &e) == XF_OK, "%s", e.msg);
    static const float sc[] = {1, 2, 0.5f, 3, 1, 1, 0, 0, 9, 1e-7f, 5, -2.5f};
    xf_tensor *in[2] = {string_tensor((xf_shape){2, {4, 1}}, NAMES("a", "b", "zeta", "b")),
                        xf_tensor_from_data(XF_DT_FLOAT, &(xf_shape){2, {4, 3}}, sc)};
    const char *backends[2];
    int nb = host_backends(backends);
    for (int b = 0; b < nb; b++) {
        xf_tensor *out[12] = {0};
        run(m, backends[b], in, out);
        assert_ints(out[0], XF_DT_BOOL, 4, (const int64_t[]){0, 1, 0, 1}, "Equal");
        assert_strings(out[1], (xf_shape){1, {4}}, NAMES("dog", "cat", "b", "dog"), "Gather");
        /* sorted as bytes; the first occurrences, the inverse, the counts */
        assert_strings(out[2], (xf_shape){1, {5}}, NAMES("a", "b", "cat", "dog", "zeta"), "Unique");
        assert_ints(out[3], XF_DT_INT64, 5, (const int64_t[]){4, 2, 1, 0, 6}, "Unique indices");
        assert_ints(out[4], XF_DT_INT64, 8, (const int64_t[]){3, 2, 1, 3, 0, 1, 4, 1}, "Unique inverse");
        assert_ints(out[5], XF_DT_INT64, 5, (const int64_t[]){1, 3, 1, 2, 1}, "Unique counts");
        assert_strings(out[6], (xf_shape){2, {1, 4}}, NAMES("a", "b", "zeta", "b"), "Transpose");
        assert_ints(out[7], XF_DT_INT64, 2, (const int64_t[]){4, 1}, "Shape");
        assert_strings(out[8], (xf_shape){1, {7}}, NAMES("", "a", "b", "zeta", "b", "", ""), "Pad");
        assert_strings(out[9], (xf_shape){1, {5}}, NAMES("~", "a", "b", "zeta", "b"), "Pad with a value");
        assert_strings(out[10], (xf_shape){1, {4}}, NAMES("a", "yes", "zeta", "yes"), "Where");
        assert_strings(out[11], (xf_shape){1, {4}}, NAMES("first", "b", "zeta", "b"), "ScatterND");
        release(out, 12);
    }
    release(in, 2);
    xf_model_free(m);
}
END_TEST

/* y = Cast(x, to) of one input x [n]. */
static xf_model *cast_model(xf_dtype from, xf_dtype to, int64_t n)
{
    int64_t *d = zalloc(sizeof *d);
    *d = n;
    Onnx__GraphProto *g = mk_graph("cast");
    PUSH(g->n_input, g->input, mk_vi("x", from, 1, d, NULL));
    Onnx__NodeProto *c = mk_node("Cast", "cast", NAMES("x"), NAMES("y"));
    attr_int(c, "to", to);
    PUSH(g->n_node, g->node, c);
    PUSH(g->n_output, g->output, mk_vi("y", to, 1, d, NULL));
    xf_model *m;
    xf_error e;
    ck_assert_msg(load_proto(mk_model(g, 19), NULL, &m, &e) == XF_OK, "%s", e.msg);
    return m;
}

static xf_tensor *cast_on(const char *backend, xf_dtype from, xf_dtype to, xf_tensor *x)
{
    xf_model *m = cast_model(from, to, xf_tensor_numel(x));
    xf_tensor *y = NULL;
    run(m, backend, &x, &y);
    xf_model_free(m);
    return y;
}

/* Numbers written as ONNX Runtime writes them (the shortest %g that reads
 * back the same, NaN, INF, -INF; integers and bools in decimal) and
 * strings read as numbers as it reads them (the leading number: "2x" is
 * 2); a string that does not start with one fails the run naming the node
 * and the element. */
START_TEST(casts)
{
    static const float f[] = {1, 0.5f, 1e-7f, 123456789.0f, -2.5f, NAN, INFINITY, -INFINITY};
    static const double d[] = {0.1, -1e300};
    static const int64_t i[] = {-3, 9000000000};
    static const uint8_t bools[] = {1, 0};
    xf_tensor *tf = xf_tensor_from_data(XF_DT_FLOAT, &(xf_shape){1, {8}}, f);
    xf_tensor *td = xf_tensor_from_data(XF_DT_DOUBLE, &(xf_shape){1, {2}}, d);
    xf_tensor *ti = xf_tensor_from_data(XF_DT_INT64, &(xf_shape){1, {2}}, i);
    xf_tensor *tb = xf_tensor_from_data(XF_DT_BOOL, &(xf_shape){1, {2}}, bools);
    xf_tensor *ts = string_tensor((xf_shape){1, {6}}, NAMES("1.5", "-2", "NaN", "1e3", "-inf", " 7x"));
    xf_tensor *tn = string_tensor((xf_shape){1, {2}}, NAMES("12", "-9000000000"));
    const char *backends[2];
    int nb = host_backends(backends);
    for (int b = 0; b < nb; b++) {
        xf_tensor *y = cast_on(backends[b], XF_DT_FLOAT, XF_DT_STRING, tf);
        assert_strings(y, tf->shape, NAMES("1", "0.5", "1e-07", "1.2345679e+08", "-2.5", "NaN", "INF", "-INF"),
                       "float");
        xf_tensor_release(y);
        y = cast_on(backends[b], XF_DT_DOUBLE, XF_DT_STRING, td);
        assert_strings(y, td->shape, NAMES("0.1", "-1e+300"), "double");
        xf_tensor_release(y);
        y = cast_on(backends[b], XF_DT_INT64, XF_DT_STRING, ti);
        assert_strings(y, ti->shape, NAMES("-3", "9000000000"), "int64");
        xf_tensor_release(y);
        y = cast_on(backends[b], XF_DT_BOOL, XF_DT_STRING, tb);
        assert_strings(y, tb->shape, NAMES("1", "0"), "bool");
        xf_tensor_release(y);
        y = cast_on(backends[b], XF_DT_STRING, XF_DT_FLOAT, ts);
        const float *v = y->data;
        ck_assert(y->dtype == XF_DT_FLOAT && v[0] == 1.5f && v[1] == -2 && isnan(v[2]) && v[3] == 1000 &&
                  isinf(v[4]) && v[4] < 0 && v[5] == 7);
        xf_tensor_release(y);
        y = cast_on(backends[b], XF_DT_STRING, XF_DT_INT64, tn);
        assert_ints(y, XF_DT_INT64, 2, (const int64_t[]){12, -9000000000}, "to int64");
        xf_tensor_release(y);
    }
    /* "x2" is no number */
    xf_tensor *bad = string_tensor((xf_shape){1, {2}}, NAMES("1", "x2"));
    xf_model *m = cast_model(XF_DT_STRING, XF_DT_FLOAT, 2);
    xf_session *s;
    xf_error e;
    ck_assert_msg(xf_session_create(m->graph, xf_model_opset(m), "cpu_ref", NULL, &s, &e) == XF_OK, "%s", e.msg);
    xf_tensor *y = NULL;
    ck_assert_int_ne(xf_session_run(s, &bad, &y, &e), XF_OK);
    ck_assert_msg(strstr(e.msg, "'cast'") && strstr(e.msg, "element 1 (\"x2\") does not start with a FLOAT number"),
                  "%s", e.msg);
    xf_session_free(s);
    xf_model_free(m);
    xf_tensor *all[] = {tf, td, ti, tb, ts, tn, bad};
    release(all, 7);
}
END_TEST

/* Sequences of strings: SplitToSequence, SequenceAt, ConcatFromSequence
 * (joined and stacked), SequenceConstruct and SequenceLength. */
START_TEST(sequences_of_strings)
{
    static const int64_t d32[] = {3, 2};
    static const int64_t one = 1;
    Onnx__GraphProto *g = mk_graph("seq");
    PUSH(g->n_input, g->input, mk_vi("x", XF_DT_STRING, 2, d32, NULL));
    PUSH(g->n_initializer, g->initializer, mk_raw("one", XF_DT_INT64, 0, NULL, &one, sizeof one));
    Onnx__NodeProto *split = mk_node("SplitToSequence", "split", NAMES("x"), NAMES("s"));
    attr_int(split, "axis", 0);
    PUSH(g->n_node, g->node, split);
    PUSH(g->n_node, g->node, mk_node("SequenceAt", "at", NAMES("s", "one"), NAMES("a")));
    Onnx__NodeProto *cat = mk_node("ConcatFromSequence", "cat", NAMES("s"), NAMES("c"));
    attr_int(cat, "axis", 1);
    PUSH(g->n_node, g->node, cat);
    PUSH(g->n_node, g->node, mk_node("SequenceConstruct", "construct", NAMES("x", "x"), NAMES("s2")));
    Onnx__NodeProto *stack = mk_node("ConcatFromSequence", "stack", NAMES("s2"), NAMES("c2"));
    attr_int(stack, "axis", 0);
    attr_int(stack, "new_axis", 1);
    PUSH(g->n_node, g->node, stack);
    PUSH(g->n_node, g->node, mk_node("SequenceLength", "len", NAMES("s"), NAMES("n")));
    const char *outs[] = {"a", "c", "c2", "n"};
    for (int k = 0; k < 4; k++)
        PUSH(g->n_output, g->output, mk_vi(outs[k], XF_DT_UNDEFINED, -1, NULL, NULL));
    xf_model *m;
    xf_error e;
    ck_assert_msg(load_proto(mk_model(g, 18), NULL, &m, &e) == XF_OK, "%s", e.msg);
    xf_tensor *x = string_tensor((xf_shape){2, {3, 2}}, NAMES("a", "b", "c", "d", "e", "f"));
    const char *backends[2];
    int nb = host_backends(backends);
    for (int b = 0; b < nb; b++) {
        xf_tensor *out[4] = {0};
        run(m, backends[b], &x, out);
        assert_strings(out[0], (xf_shape){2, {1, 2}}, NAMES("c", "d"), "SequenceAt");
        assert_strings(out[1], (xf_shape){2, {1, 6}}, NAMES("a", "b", "c", "d", "e", "f"), "ConcatFromSequence");
        assert_strings(out[2], (xf_shape){3, {2, 3, 2}},
                       NAMES("a", "b", "c", "d", "e", "f", "a", "b", "c", "d", "e", "f"), "stacked");
        assert_ints(out[3], XF_DT_INT64, 1, (const int64_t[]){3}, "SequenceLength");
        release(out, 4);
    }
    xf_tensor_release(x);
    xf_model_free(m);
}
END_TEST

/* xflowc folds string ops on constants: a Gather of constant names and a
 * Cast of constant strings become initializers, and the check passes. */
START_TEST(constants_fold)
{
    static const int64_t two[] = {2}, three[] = {3}, idx[] = {2, 0};
    Onnx__GraphProto *g = mk_graph("fold");
    PUSH(g->n_input, g->input, mk_vi("x", XF_DT_STRING, 1, two, NULL));
    PUSH(g->n_input, g->input, mk_vi("xf", XF_DT_FLOAT, 1, two, NULL));
    PUSH(g->n_initializer, g->initializer, mk_strings("names", 1, three, 3, NAMES("cat", "dog", "eel")));
    PUSH(g->n_initializer, g->initializer, mk_raw("idx", XF_DT_INT64, 1, two, idx, sizeof idx));
    PUSH(g->n_initializer, g->initializer, mk_strings("nums", 1, two, 2, NAMES("1.5", "-2")));
    PUSH(g->n_node, g->node, mk_node("Gather", "gather", NAMES("names", "idx"), NAMES("picked")));
    PUSH(g->n_node, g->node, mk_node("Equal", "equal", NAMES("x", "picked"), NAMES("y")));
    Onnx__NodeProto *c = mk_node("Cast", "cast", NAMES("nums"), NAMES("nf"));
    attr_int(c, "to", XF_DT_FLOAT);
    PUSH(g->n_node, g->node, c);
    PUSH(g->n_node, g->node, mk_node("Add", "add", NAMES("xf", "nf"), NAMES("z")));
    PUSH(g->n_output, g->output, mk_vi("y", XF_DT_BOOL, 1, two, NULL));
    PUSH(g->n_output, g->output, mk_vi("z", XF_DT_FLOAT, 1, two, NULL));
    const char *dir = xf_test_tmpdir("string_fold");
    char in[4200], cmd[9000], *out = NULL;
    snprintf(in, sizeof in, "%s/fold.onnx", dir);
    write_model(mk_model(g, 19), in);
    snprintf(cmd, sizeof cmd, "%s %s -o %s/out.onnx --check", xf_test_tool("xflowc"), in, dir);
    ck_assert_msg(xf_test_run(cmd, &out) == 0, "%s", out);
    ck_assert_msg(strstr(out, "canonicalize: 2 constants folded") && strstr(out, "check: output 'y'"), "%s", out);
    free(out);
    xf_model *m;
    xf_error e;
    snprintf(in, sizeof in, "%s/out.onnx", dir);
    ck_assert_msg(xf_model_load(in, NULL, &m, &e) == XF_OK, "%s", e.msg);
    ck_assert_int_eq(m->graph->n_nodes, 2);
    const xf_tensor *picked = m->graph->values[xf_graph_find_value(m->graph, "picked")].init;
    assert_strings(picked, (xf_shape){1, {2}}, NAMES("eel", "cat"), "folded Gather");
    xf_model_free(m);
}
END_TEST

/* y = Op(a, b) of two string inputs [2], with `reduction` where given. */
static xf_model *binary_model(const char *op, const char *reduction)
{
    static const int64_t two[] = {2}, d21[] = {2, 1}, idx[] = {0, 1};
    Onnx__GraphProto *g = mk_graph("binary");
    PUSH(g->n_input, g->input, mk_vi("a", XF_DT_STRING, 1, two, NULL));
    PUSH(g->n_input, g->input, mk_vi("b", XF_DT_STRING, 1, two, NULL));
    PUSH(g->n_initializer, g->initializer, mk_raw("i", XF_DT_INT64, 1, two, idx, sizeof idx));
    (void)d21;
    Onnx__NodeProto *n = reduction ? mk_node(op, "op", NAMES("a", "i", "b"), NAMES("y"))
                                   : mk_node(op, "op", NAMES("a", "b"), NAMES("y"));
    if (reduction)
        attr_string(n, "reduction", reduction);
    PUSH(g->n_node, g->node, n);
    PUSH(g->n_output, g->output, mk_vi("y", XF_DT_UNDEFINED, -1, NULL, NULL));
    xf_model *m;
    xf_error e;
    ck_assert_msg(load_proto(mk_model(g, 18), NULL, &m, &e) == XF_OK, "%s", e.msg);
    return m;
}

/* Arithmetic on strings is refused by node when the session is made,
 * strings where an op takes numbers or beside numbers when it runs; an
 * op without a reduction on strings runs. */
START_TEST(refusals)
{
    const char *cases[][3] = {{"Add", NULL, "does not support op Add on STRING"},
                              {"ScatterElements", "add", "does not support op ScatterElements on STRING"}};
    for (int c = 0; c < 2; c++) {
        xf_model *m = binary_model(cases[c][0], cases[c][1]);
        xf_session *s = NULL;
        xf_error e;
        ck_assert_int_ne(xf_session_create(m->graph, xf_model_opset(m), "cpu_ref", NULL, &s, &e), XF_OK);
        ck_assert_msg(strstr(e.msg, cases[c][2]) && strstr(e.msg, "'op'"), "%s", e.msg);
        xf_model_free(m);
    }
    /* strings where an op takes numbers (Pad's pads), or beside numbers */
    static const int64_t two[] = {2};
    static const int64_t pads[] = {1, 1}, three = 3;
    const char *mixed[][4] = {{"x", "s", "", "node 'op' (Pad): input 1 is strings; it takes numbers there"},
                              {"s", "pads", "three", "node 'op' (Pad): input 0 is strings and input 2 INT64; they "
                                                     "must be of one type"}};
    for (int c = 0; c < 2; c++) {
        Onnx__GraphProto *g = mk_graph("mixed");
        PUSH(g->n_input, g->input, mk_vi("x", XF_DT_INT64, 1, two, NULL));
        PUSH(g->n_input, g->input, mk_vi("s", XF_DT_STRING, 1, two, NULL));
        PUSH(g->n_initializer, g->initializer, mk_raw("pads", XF_DT_INT64, 1, two, pads, sizeof pads));
        PUSH(g->n_initializer, g->initializer, mk_raw("three", XF_DT_INT64, 0, NULL, &three, sizeof three));
        Onnx__NodeProto *n = mk_node("Pad", "op", (const char *[]){mixed[c][0], mixed[c][1], mixed[c][2], NULL},
                                     NAMES("y"));
        n->n_input = c ? 3 : 2;
        PUSH(g->n_node, g->node, n);
        PUSH(g->n_output, g->output, mk_vi("y", XF_DT_UNDEFINED, -1, NULL, NULL));
        xf_model *mm;
        xf_error e;
        ck_assert_msg(load_proto(mk_model(g, 18), NULL, &mm, &e) == XF_OK, "%s", e.msg);
        xf_tensor *in[2] = {I64(DIMS(2), 1, 1), string_tensor((xf_shape){1, {2}}, NAMES("p", "q"))}, *y = NULL;
        xf_session *s = NULL;
        xf_status st = xf_session_create(mm->graph, xf_model_opset(mm), "cpu_ref", NULL, &s, &e);
        if (st == XF_OK)
            st = xf_session_run(s, in, &y, &e);
        ck_assert_msg(st != XF_OK && strstr(e.msg, mixed[c][3]), "%s", st == XF_OK ? "(ran)" : e.msg);
        xf_session_free(s);
        release(in, 2);
        xf_model_free(mm);
    }
    xf_model *m = binary_model("ScatterElements", "none");
    xf_tensor *in[2] = {string_tensor((xf_shape){1, {2}}, NAMES("p", "q")),
                        string_tensor((xf_shape){1, {2}}, NAMES("r", "s"))};
    xf_tensor *y = NULL;
    run(m, "cpu_ref", in, &y);
    assert_strings(y, (xf_shape){1, {2}}, NAMES("r", "s"), "ScatterElements");
    xf_tensor_release(y);
    release(in, 2);
    xf_model_free(m);
}
END_TEST

/* xflowc optimizes a model of strings and checks its outputs on random
 * strings (made of the model's words: "b", "cat", ...); a string input
 * cast to numbers gets decimal numbers instead. */
START_TEST(xflowc_checks_strings)
{
    const char *dir = xf_test_tmpdir("string_tensors");
    char in[4200], cmd[9000], *out = NULL;
    snprintf(in, sizeof in, "%s/strings.onnx", dir);
    write_model(moves_model(), in);
    snprintf(cmd, sizeof cmd, "%s %s -o %s/out.onnx --check", xf_test_tool("xflowc"), in, dir);
    ck_assert_msg(xf_test_run(cmd, &out) == 0, "%s", out);
    ck_assert_msg(strstr(out, "check: output 'label'") && strstr(out, "check: output 'u'") &&
                      strstr(out, "check: output 'wh'") && !strstr(out, "shapes only"),
                  "%s", out);
    free(out);
    snprintf(cmd, sizeof cmd, "%s %s", xf_test_tool("xflow-run"), in);
    ck_assert_msg(xf_test_run(cmd, &out) == 0, "%s", out);
    const char *tt = strstr(out, "output 'tt' STRING 1x4: \""); /* the input text, transposed */
    ck_assert_msg(tt && strchr("bcdy~f", tt[strlen("output 'tt' STRING 1x4: \"")]), "%s", out);
    free(out);
    static const int64_t three[] = {3}, two[] = {2};
    Onnx__GraphProto *g = mk_graph("cast");
    PUSH(g->n_input, g->input, mk_vi("x", XF_DT_STRING, 1, three, NULL));
    PUSH(g->n_initializer, g->initializer, mk_strings("names", 1, two, 2, NAMES("ant", "bee")));
    PUSH(g->n_node, g->node, mk_node("Identity", "id", NAMES("x"), NAMES("xi")));
    Onnx__NodeProto *c = mk_node("Cast", "cast", NAMES("xi"), NAMES("y"));
    attr_int(c, "to", XF_DT_FLOAT);
    PUSH(g->n_node, g->node, c);
    PUSH(g->n_node, g->node, mk_node("Identity", "keep", NAMES("names"), NAMES("z")));
    PUSH(g->n_output, g->output, mk_vi("y", XF_DT_FLOAT, 1, three, NULL));
    PUSH(g->n_output, g->output, mk_vi("z", XF_DT_STRING, 1, two, NULL));
    snprintf(in, sizeof in, "%s/cast.onnx", dir);
    write_model(mk_model(g, 19), in);
    snprintf(cmd, sizeof cmd, "%s %s", xf_test_tool("xflow-run"), in);
    ck_assert_msg(xf_test_run(cmd, &out) == 0, "%s", out);
    free(out);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("string_tensors");
    TCase *tc = tcase_create("ops");
    tcase_add_checked_fixture(tc, NULL, free_allocs);
    tcase_add_test(tc, moves_and_compares);
    tcase_add_test(tc, casts);
    tcase_add_test(tc, sequences_of_strings);
    tcase_add_test(tc, refusals);
    tcase_add_test(tc, constants_fold);
    tcase_add_test(tc, xflowc_checks_strings);
    suite_add_tcase(s, tc);
    return xf_test_run_suite(s);
}
