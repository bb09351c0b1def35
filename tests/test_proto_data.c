/* ONNX import/export over the ONNX backend test data: every model and
 * tensor file, and damaged copies of real models. */
#include <check.h>
#include <glob.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "proto_util.h"
#include "xf_rule.h"
#include "xf_runtime.h"
#include "xf_test_util.h"

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

/* Decodes TensorProto tp through the .pb reader; XF_OK or the error. */
static xf_status decode_pb(const Onnx__TensorProto *tp, xf_tensor **t, xf_error *e)
{
    size_t len = onnx__tensor_proto__get_packed_size(tp);
    uint8_t *buf = malloc(len ? len : 1);
    ck_assert_ptr_nonnull(buf);
    onnx__tensor_proto__pack(tp, buf);
    char *name = NULL;
    xf_status s = xf_tensor_load_pb_buffer(buf, len, ".", t, &name, e);
    free(name);
    free(buf);
    return s;
}

/* float8 and 4-bit tensors are carried byte for byte: raw data, one value
 * (or one packed byte) per int32, and written back as raw data. */
START_TEST(test_float8_and_int4_tensors_carried)
{
    static const int64_t three[] = {3}, five[] = {5};
    static const uint8_t f8[3] = {0x38, 0xc0, 0x7e}, i4[3] = {0x21, 0x43, 0x05};
    xf_tensor *t = NULL, *back = NULL;
    xf_error e = {0};
    ck_assert_msg(decode_pb(mk_raw("f8", XF_DT_FLOAT8E4M3FN, 1, three, f8, 3), &t, &e) == XF_OK, "%s", e.msg);
    ck_assert_int_eq(t->dtype, XF_DT_FLOAT8E4M3FN);
    ck_assert_uint_eq(t->nbytes, 3);
    ck_assert_mem_eq(t->data, f8, 3);
    const char *dir = xf_test_tmpdir("proto_float8");
    ck_assert_msg(xf_tensor_save_pb(t, "f8", path_in(dir, "f8.pb"), &e) == XF_OK, "%s", e.msg);
    char *name = NULL;
    ck_assert_msg(xf_tensor_load_pb(path_in(dir, "f8.pb"), &back, &name, &e) == XF_OK, "%s", e.msg);
    ck_assert(tensors_equal(t, back));
    free(name);
    xf_tensor_release(back);
    xf_tensor_release(t);

    /* five int4 values: three packed bytes, raw or one per int32 */
    ck_assert_msg(decode_pb(mk_raw("i4", XF_DT_INT4, 1, five, i4, 3), &t, &e) == XF_OK, "%s", e.msg);
    ck_assert_int_eq(t->dtype, XF_DT_INT4);
    ck_assert_uint_eq(t->nbytes, 3);
    ck_assert_mem_eq(t->data, i4, 3);
    xf_tensor_release(t);
    Onnx__TensorProto *tp = mk_tensor("i4", XF_DT_INT4, 1, five);
    int32_t packed[3] = {0x21, 0x43, 0x05};
    tp->n_int32_data = 3;
    tp->int32_data = packed;
    ck_assert_msg(decode_pb(tp, &t, &e) == XF_OK, "%s", e.msg);
    ck_assert_mem_eq(t->data, i4, 3);
    xf_tensor_release(t);
    /* two bytes cannot hold five int4 values */
    ck_assert_int_ne(decode_pb(mk_raw("i4", XF_DT_INT4, 1, five, i4, 2), &t, &e), XF_OK);
    ck_assert_msg(strstr(e.msg, "has 2 bytes of data but dims 5 of INT4 need 3") != NULL, "%s", e.msg);
    free_allocs();
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
    snprintf(cmd, sizeof cmd, XF_PYTHON " '%s/tests/onnx_check.py' --list '%s'", XF_SOURCE_DIR, list_path);
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

/* Every input a fuzz harness once failed on (tests/fuzz/regressions) is
 * handled cleanly: models and tensor files are refused with a one-line
 * message (one of them an NCHWc graph whose lowering made no initializer,
 * whose empty list the sanitizer build found copied from a null
 * pointer); MapProto files (map_pb-*) are too, or read as a map (an empty
 * one of int64 keys, whose keys the sanitizer build once found copied
 * from a null pointer); library text is refused or round-trips exactly;
 * models the sanitizer build once found undefined behaviour loading
 * (load-*: an unknown op's empty string attribute) load; models the run
 * harness failed on load and run on cpu_ref with seeded random inputs and
 * fuzz_run's limit of 1 MiB per tensor: run-* models' runs end, or stop
 * at the limit with a one-line message (a FlexAttention modifier whose
 * mutated Range would have made 170 M and 1.7 G elements; a constant Pad
 * of an empty input, a GridSample of an empty grid, a
 * CausalConvWithState over an empty sequence, a TopK of K 0 along an
 * empty axis, a Scan over an empty input and a double MatMul of no rows
 * (its empty operand's null buffer was offset), which the sanitizer build
 * runs without finding undefined behaviour; an identity Transpose writing a graph output, for which the
 * session's Transpose pass added a value while holding another's shape,
 * which the growing value array moved; a BMP whose header claims 805 M x 5
 * pixels in 174 bytes, whose palette check read them all, now refused as
 * truncated; a ConvInteger of no output channels whose padding made 860 M
 * column entries nothing read, now none; a TfIdfVectorizer whose mutated
 * ngram index made its output 3 x 1.48 G floats, which ML ops, allocating
 * their outputs themselves, now check against the limit too; a Gradient
 * of a cubic antialiased Resize along all four dims, whose 512 tap
 * combinations an element took 48 s under the sanitizers, now a pass per
 * dim; a QuantizeLinear whose zero point, mutated to float8, held NaN,
 * which was converted to an integer it is not used as; an inverse DFT of
 * an empty batch whose dft_length of 180 G points, which its empty output
 * leaves unchecked, sized the transform's tables);
 * run-refused-* models' runs
 * fail with a one-line message (a Pad whose pads are strings, whose int32
 * output was read as the numbers of strings; a Dropout whose ratio was an
 * empty tensor, read through its null buffer; a Gradient whose y names a
 * graph input that is none of its xs and zs, whose place in the part
 * differentiated was taken as -1). */
/* m's run on cpu_ref as fuzz_run makes it. */
static xf_status run_limited(const xf_model *m, xf_error *e)
{
    xf_session_options opt = {.max_tensor_bytes = 1 << 20};
    xf_session *sess = NULL;
    xf_status s = xf_session_create(m->graph, xf_model_opset(m), "cpu_ref", &opt, &sess, e);
    const xf_graph *g = sess ? xf_session_graph(sess) : NULL;
    xf_tensor *in[16] = {0}, *out[16] = {0};
    ck_assert(!g || (g->n_inputs <= 16 && g->n_outputs <= 16));
    for (int i = 0; s == XF_OK && i < g->n_inputs; i++) {
        const xf_value *v = &g->values[g->inputs[i]];
        in[i] = xf_tensor_random(v->dtype, &v->shape, (uint64_t)i + 1);
        ck_assert_ptr_nonnull(in[i]);
    }
    if (s == XF_OK)
        s = xf_session_run(sess, in, out, e);
    for (int i = 0; i < 16; i++) {
        xf_tensor_release(in[i]);
        xf_tensor_release(out[i]);
    }
    xf_session_free(sess);
    return s;
}

START_TEST(test_fuzz_regressions)
{
    glob_t gl;
    int rc = glob(XF_SOURCE_DIR "/tests/fuzz/regressions/*", 0, NULL, &gl);
    ck_assert_int_eq(rc, 0);
    for (size_t i = 0; i < gl.gl_pathc; i++) {
        const char *path = gl.gl_pathv[i], *base = strrchr(path, '/') + 1;
        if (strstr(base, ".md"))
            continue;
        FILE *f = fopen(path, "rb");
        ck_assert_ptr_nonnull(f);
        uint8_t buf[1 << 16];
        size_t len = fread(buf, 1, sizeof buf, f);
        fclose(f);
        xf_error e;
        xf_status s;
        if (strncmp(base, "tensor_pb-", 10) == 0) {
            xf_tensor *t = NULL;
            s = xf_tensor_load_pb_buffer(buf, len, NULL, &t, NULL, &e);
            xf_tensor_release(t);
        } else if (strncmp(base, "map_pb-", 7) == 0) {
            /* a MapProto: refused, or a map of a value per key */
            xf_tensor *t = NULL;
            s = xf_map_load_pb_buffer(buf, len, NULL, &t, &e);
            ck_assert(s != XF_OK || xf_tensor_numel(t->items[0]) == xf_tensor_numel(t->items[1]));
            xf_tensor_release(t);
            if (s == XF_OK)
                continue;
        } else if (strncmp(base, "rules-", 6) == 0) {
            /* Library text either is refused or prints and parses back to
             * the same text. */
            xf_library *lib = NULL, *back = NULL;
            if (xf_library_parse((const char *)buf, len, base, &lib, &e) == XF_OK) {
                char *t1 = NULL, *t2 = NULL;
                size_t l1 = 0, l2 = 0;
                ck_assert(xf_library_format(lib, &t1, &l1, &e) == XF_OK);
                ck_assert_msg(xf_library_parse(t1, l1, base, &back, &e) == XF_OK, "%s: %s", base, e.msg);
                ck_assert(xf_library_format(back, &t2, &l2, &e) == XF_OK);
                ck_assert_msg(l1 == l2 && memcmp(t1, t2, l1) == 0, "%s: print/parse not stable", base);
                free(t1);
                free(t2);
                xf_library_free(back);
                xf_library_free(lib);
                continue;
            }
            s = XF_ERR_PARSE;
        } else if (strncmp(base, "load-", 5) == 0) {
            xf_model *m = NULL;
            ck_assert_msg(xf_model_load_buffer(buf, len, NULL, NULL, &m, &e) == XF_OK, "%s: %s", base, e.msg);
            xf_model_free(m);
            continue;
        } else if (strncmp(base, "run-refused-", 12) == 0) {
            xf_model *m = NULL;
            ck_assert_msg(xf_model_load_buffer(buf, len, NULL, NULL, &m, &e) == XF_OK, "%s: %s", base, e.msg);
            s = run_limited(m, &e);
            ck_assert_msg(s != XF_OK && s != XF_ERR_LIMIT, "%s: %s", base, s == XF_OK ? "ran" : e.msg);
            xf_model_free(m);
        } else if (strncmp(base, "run-", 4) == 0) {
            xf_model *m = NULL;
            ck_assert_msg(xf_model_load_buffer(buf, len, NULL, NULL, &m, &e) == XF_OK, "%s: %s", base, e.msg);
            s = run_limited(m, &e);
            ck_assert_msg(s == XF_OK || s == XF_ERR_LIMIT, "%s: %s", base, e.msg);
            xf_model_free(m);
            if (s == XF_OK)
                continue;
        } else {
            xf_model *m = NULL;
            s = xf_model_load_buffer(buf, len, NULL, NULL, &m, &e);
            xf_model_free(m);
        }
        ck_assert_msg(s != XF_OK, "%s loaded", base);
        ck_assert_msg(strchr(e.msg, '\n') == NULL, "%s: %s", base, e.msg);
    }
    ck_assert_uint_gt(gl.gl_pathc, 0);
    globfree(&gl);
}
END_TEST

/* ------------------------------------------------------------ absurd sizes */

typedef struct bytes {
    uint8_t *p;
    size_t n, cap;
} bytes;

static void put(bytes *b, const void *src, size_t n)
{
    if (n == 0)
        return;
    if (b->n + n > b->cap) {
        b->cap = (b->n + n) * 2;
        b->p = realloc(b->p, b->cap);
        ck_assert_ptr_nonnull(b->p);
    }
    memcpy(b->p + b->n, src, n);
    b->n += n;
}

static size_t varint(uint8_t *out, uint64_t v)
{
    size_t n = 0;
    do {
        out[n++] = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
        v >>= 7;
    } while (v);
    return n;
}

static void put_varint(bytes *b, uint64_t v)
{
    uint8_t tmp[10];
    put(b, tmp, varint(tmp, v));
}

/* Field `num` (length-delimited) holding `payload`. */
static void put_field(bytes *b, unsigned num, const void *payload, size_t n)
{
    put_varint(b, (uint64_t)num << 3 | 2);
    put_varint(b, n);
    put(b, payload, n);
}

/* A ModelProto (IR 8, opset 17) around GraphProto bytes g. */
static bytes model_of(const bytes *g)
{
    bytes m = {0}, opset = {0};
    put_varint(&m, 1 << 3);
    put_varint(&m, 8); /* ir_version */
    put_field(&m, 7, g->p, g->n);
    put_field(&opset, 1, "", 0);
    put_varint(&opset, 2 << 3);
    put_varint(&opset, 17);
    put_field(&m, 8, opset.p, opset.n);
    free(opset.p);
    return m;
}

/* A model whose If node's subgraph holds an If node whose subgraph ... `depth`
 * levels deep.  Built from the inside out; lengths known at each level. */
static bytes nested_model(int depth)
{
    bytes g = {0};
    for (int i = 0; i < depth; i++) {
        bytes attr = {0}, node = {0}, outer = {0};
        put_field(&attr, 1, "g", 1);
        put_varint(&attr, 20 << 3);
        put_varint(&attr, 5); /* AttributeProto.type = GRAPH */
        put_field(&attr, 6, g.p, g.n);
        put_field(&node, 4, "If", 2);
        put_field(&node, 5, attr.p, attr.n);
        put_field(&outer, 1, node.p, node.n);
        free(g.p);
        free(attr.p);
        free(node.p);
        g = outer;
    }
    bytes m = model_of(&g);
    free(g.p);
    return m;
}

START_TEST(test_deep_nesting_refused)
{
    /* 3 message levels per If: 20 000 levels would overflow a recursive parser. */
    bytes m = nested_model(20000);
    xf_model *out = NULL;
    xf_error e;
    ck_assert_int_ne(xf_model_load_buffer(m.p, m.n, NULL, NULL, &out, &e), XF_OK);
    ck_assert_msg(strstr(e.msg, "nested more than") != NULL, "%s", e.msg);
    free(m.p);
    /* Real nesting (a handful of subgraph levels) still loads. */
    m = nested_model(5);
    ck_assert_msg(xf_model_load_buffer(m.p, m.n, NULL, NULL, &out, &e) == XF_OK, "%s", e.msg);
    xf_model_free(out);
    free(m.p);
}
END_TEST

START_TEST(test_node_with_too_many_inputs_refused)
{
    bytes node = {0}, g = {0}, m = {0};
    for (int i = 0; i < 70000; i++)
        put_field(&node, 1, "x", 1);
    put_field(&node, 2, "y", 1);
    put_field(&node, 4, "Concat", 6);
    put_field(&g, 1, node.p, node.n);
    m = model_of(&g);
    xf_model *out = NULL;
    xf_error e;
    ck_assert_int_eq(xf_model_load_buffer(m.p, m.n, NULL, NULL, &out, &e), XF_ERR_LIMIT);
    ck_assert_msg(strstr(e.msg, "70000 inputs") != NULL, "%s", e.msg);
    free(node.p);
    free(g.p);
    free(m.p);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("proto_data");
    TCase *tc = tcase_create("testdata");
    tcase_set_timeout(tc, 600);
    tcase_add_checked_fixture(tc, NULL, free_allocs);
    tcase_add_test(tc, test_tensor_pb_files);
    tcase_add_test(tc, test_float8_and_int4_tensors_carried);
    tcase_add_test(tc, test_damaged_models_never_crash);
    tcase_add_test(tc, test_testdata_node_models);
    tcase_add_test(tc, test_testdata_other_models);
    tcase_add_test(tc, test_fuzz_regressions);
    tcase_add_test(tc, test_deep_nesting_refused);
    tcase_add_test(tc, test_node_with_too_many_inputs_refused);
    suite_add_tcase(s, tc);
    return xf_test_run_suite(s);
}
