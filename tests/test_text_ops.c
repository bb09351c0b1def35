/* Text ops on the host backends (runtime/string_ops.c, tfidf.c,
 * regex_ops.c): StringConcat, StringSplit and StringNormalizer,
 * TfIdfVectorizer, ONNX Runtime's Tokenizer and RegexFullMatch, in models
 * built as ONNX files, against values worked out by hand (equal to ONNX
 * Runtime's); RE2 patterns translated to POSIX, and those that have no
 * POSIX form refused by node when the session is made; a text pipeline as
 * scikit-learn's converter writes it, checked by xflowc. */
#include "proto_util.h"
#include "xf_runtime.h"
#include "xf_test_util.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NAMES(...) ((const char *[]){__VA_ARGS__, NULL})

/* A model of node n reading x (of dtype, shape dims) and giving y. */
static xf_model *node_model(Onnx__NodeProto *n, xf_dtype dtype, int ndim, const int64_t *dims)
{
    Onnx__GraphProto *g = mk_graph("text");
    PUSH(g->n_input, g->input, mk_vi("x", dtype, ndim, dims, NULL));
    PUSH(g->n_node, g->node, n);
    PUSH(g->n_output, g->output, mk_vi("y", XF_DT_UNDEFINED, -1, NULL, NULL));
    Onnx__ModelProto *mp = mk_model(g, 20);
    add_opset(mp, "com.microsoft", 1);
    xf_model *m;
    xf_error e;
    ck_assert_msg(load_proto(mp, NULL, &m, &e) == XF_OK, "%s", e.msg);
    return m;
}

/* y of node n on x, on backend; the session's error (NULL: it must run). */
static xf_tensor *run_node(Onnx__NodeProto *n, const char *backend, xf_tensor *x, xf_error *fail)
{
    xf_model *m = node_model(n, x->dtype, x->shape.ndim, x->shape.dims);
    xf_session *s = NULL;
    xf_error e;
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

static void assert_floats(const xf_tensor *y, xf_shape s, const float *want, const char *what)
{
    ck_assert_msg(y && y->dtype == XF_DT_FLOAT && xf_shape_equal(&y->shape, &s), "%s: type or shape", what);
    for (int64_t i = 0; i < xf_tensor_numel(y); i++)
        ck_assert_msg(((const float *)y->data)[i] == want[i], "%s: element %lld is %g, want %g", what, (long long)i,
                      (double)((const float *)y->data)[i], (double)want[i]);
}

/* The pool of ONNX's own cases: unigrams 2 3 5 4 (columns 0-3), bigrams
 * (5 6) (7 8) (6 7) (columns 4-6). */
static Onnx__NodeProto *tfidf(int64_t min_n, int64_t max_n, int64_t skip, const char *mode, bool weights)
{
    static const int64_t pool[] = {2, 3, 5, 4, 5, 6, 7, 8, 6, 7}, counts[] = {0, 4}, idx[] = {0, 1, 2, 3, 4, 5, 6};
    static const float w[] = {1, 2, 3, 4, 5, 6, 7.5f};
    Onnx__NodeProto *n = mk_node("TfIdfVectorizer", "tfidf", NAMES("x"), NAMES("y"));
    attr_ints(n, "pool_int64s", 10, pool);
    attr_ints(n, "ngram_counts", 2, counts);
    attr_ints(n, "ngram_indexes", 7, idx);
    attr_int(n, "min_gram_length", min_n);
    attr_int(n, "max_gram_length", max_n);
    attr_int(n, "max_skip_count", skip);
    attr_string(n, "mode", mode);
    if (weights)
        attr_floats(n, "weights", 7, w);
    return n;
}

/* A pool of strings with n_idx of the ngram_indexes 2 0 1 3 4. */
static Onnx__NodeProto *string_tfidf(int n_idx)
{
    static const int64_t counts[] = {0, 3}, idx[] = {2, 0, 1, 3, 4};
    Onnx__NodeProto *n = mk_node("TfIdfVectorizer", "tfidf", NAMES("x"), NAMES("y"));
    attr_strings(n, "pool_strings", 7, NAMES("the", "cat", "mat", "the", "cat", "cat", "sat"));
    attr_ints(n, "ngram_counts", 2, counts);
    attr_ints(n, "ngram_indexes", n_idx, idx);
    attr_int(n, "min_gram_length", 1);
    attr_int(n, "max_gram_length", 2);
    attr_int(n, "max_skip_count", 1);
    attr_string(n, "mode", "TF");
    return n;
}

/* Counts of unigrams and bigrams at skips 0 to max_skip_count, unigrams
 * once; IDF and TFIDF with weights by column; rows apart in [N, C], one
 * row in [C]; strings numbered against a pool of strings. */
START_TEST(tfidf_vectorizer)
{
    static const int64_t x[] = {1, 1, 3, 3, 3, 7, 8, 6, 7, 5, 6, 8};
    const struct {
        int64_t min_n, max_n, skip;
        const char *mode;
        bool weights;
        float rows[14], flat[7];
    } cases[] = {
        /* 3 3 3 -> column 1; 5 -> 2; (5 6) (7 8) (6 7) in the flat row, (7 8) crossing rows */
        {1, 2, 0, "TF", false, {0, 3, 0, 0, 0, 0, 0, 0, 0, 1, 0, 1, 0, 1}, {0, 3, 1, 0, 1, 1, 1}},
        {2, 2, 0, "TF", false, {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 1}, {0, 0, 0, 0, 1, 1, 1}},
        /* skip 2 adds (7 8) at 6 .. 8 ... and (6 7) twice apart */
        {1, 2, 2, "TF", false, {0, 3, 0, 0, 0, 0, 0, 0, 0, 1, 0, 1, 1, 1}, {0, 3, 1, 0, 1, 2, 1}},
        {2, 2, 5, "TF", false, {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1}, {0, 0, 0, 0, 1, 3, 1}},
        {1, 2, 2, "IDF", true, {0, 2, 0, 0, 0, 0, 0, 0, 0, 3, 0, 5, 6, 7.5f}, {0, 2, 3, 0, 5, 6, 7.5f}},
        {1, 2, 2, "TFIDF", true, {0, 6, 0, 0, 0, 0, 0, 0, 0, 3, 0, 5, 6, 7.5f}, {0, 6, 3, 0, 5, 12, 7.5f}},
        {1, 1, 3, "IDF", false, {0, 1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0}, {0, 1, 1, 0, 0, 0, 0}},
    };
    xf_tensor *rows = xf_tensor_from_data(XF_DT_INT64, &(xf_shape){2, {2, 6}}, x);
    xf_tensor *flat = xf_tensor_from_data(XF_DT_INT64, &(xf_shape){1, {12}}, x);
    const char *backends[2];
    int nb = host_backends(backends);
    for (int b = 0; b < nb; b++)
        for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
            char what[64];
            snprintf(what, sizeof what, "case %zu", c);
            Onnx__NodeProto *n = tfidf(cases[c].min_n, cases[c].max_n, cases[c].skip, cases[c].mode, cases[c].weights);
            xf_tensor *y = run_node(n, backends[b], rows, NULL);
            assert_floats(y, (xf_shape){2, {2, 7}}, cases[c].rows, what);
            xf_tensor_release(y);
            y = run_node(n, backends[b], flat, NULL);
            assert_floats(y, (xf_shape){1, {7}}, cases[c].flat, what);
            xf_tensor_release(y);
        }
    xf_tensor_release(rows);
    xf_tensor_release(flat);

    /* strings: unigrams "the" "cat" "mat" and bigrams (the cat) (cat sat),
     * columns 2 0 1 3 4; skip 1 finds (the cat) in "the big cat" */
    Onnx__NodeProto *n = string_tfidf(5);
    xf_tensor *s = string_tensor((xf_shape){2, {2, 3}}, NAMES("the", "big", "cat", "cat", "sat", "dog"));
    xf_tensor *y = run_node(n, "cpu_ref", s, NULL);
    assert_floats(y, (xf_shape){2, {2, 5}}, (const float[]){1, 0, 1, 1, 0, 1, 0, 0, 0, 1}, "strings");
    xf_tensor_release(y);
    /* integers against a pool of strings, and a pool that does not add up */
    xf_error e;
    xf_tensor *ints = xf_tensor_from_data(XF_DT_INT64, &(xf_shape){1, {2}}, x);
    ck_assert_ptr_null(run_node(n, "cpu_ref", ints, &e));
    ck_assert_msg(strstr(e.msg, "'tfidf'") && strstr(e.msg, "X is INT64 but its pool holds strings"), "%s", e.msg);
    ck_assert_ptr_null(run_node(string_tfidf(4), "cpu_ref", s, &e));
    ck_assert_msg(strstr(e.msg, "has 5 n-grams in its pool but 4 ngram_indexes"), "%s", e.msg);
    xf_tensor_release(ints);
    xf_tensor_release(s);
}
END_TEST

static Onnx__NodeProto *tokenizer(int64_t mark, int64_t mincharnum, const char *const *seps, int n_seps,
                                  const char *exp)
{
    Onnx__NodeProto *n = mk_node("Tokenizer", "tok", NAMES("x"), NAMES("y"));
    n->domain = "com.microsoft";
    attr_int(n, "mark", mark);
    attr_int(n, "mincharnum", mincharnum);
    attr_string(n, "pad_value", "#");
    if (seps)
        attr_strings(n, "separators", n_seps, seps);
    if (exp)
        attr_string(n, "tokenexp", exp);
    return n;
}

/* Separators (regular expressions, one after the other), a token
 * expression (leftmost-longest, short matches skipped a character at a
 * time), characters, marks, padding, nothing found, input not UTF-8. */
START_TEST(tokenizer_op)
{
    xf_tensor *x = string_tensor((xf_shape){2, {3, 1}}, NAMES("the cat, sat;on  the mat", "Ünï café,bar", "a"));
    const xf_shape s3 = {3, {3, 1, 6}};
    const struct {
        Onnx__NodeProto *n;
        xf_shape shape;
        const char *want[32];
    } cases[] = {
        {tokenizer(0, 1, NAMES(" "), 1, NULL), {3, {3, 1, 5}},
         {"the", "cat,", "sat;on", "the", "mat", "Ünï", "café,bar", "#", "#", "#", "a", "#", "#", "#", "#"}},
        {tokenizer(0, 1, NAMES("[,;]", " +"), 2, NULL), s3,
         {"the", "cat", "sat", "on", "the", "mat", "Ünï", "café", "bar", "#", "#", "#", "a", "#", "#", "#", "#", "#"}},
        {tokenizer(0, 3, NULL, 0, "[^ ,;]+"), {3, {3, 1, 5}},
         {"the", "cat", "sat", "the", "mat", "Ünï", "café", "bar", "#", "#", "#", "#", "#", "#", "#"}},
        {tokenizer(1, 1, NULL, 0, "\\w+"), {3, {3, 1, 8}},
         {"\x02", "the", "cat", "sat", "on", "the", "mat", "\x03", "\x02", "n", "caf", "bar", "\x03", "#", "#", "#",
          "\x02", "a", "\x03", "#", "#", "#", "#", "#"}},
        {tokenizer(0, 1, NULL, 0, "(?i)C.T"), {3, {3, 1, 1}}, {"cat", "#", "#"}},
    };
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        char what[64];
        snprintf(what, sizeof what, "case %zu", c);
        xf_tensor *y = run_node(cases[c].n, "cpu_ref", x, NULL);
        assert_strings(y, cases[c].shape, cases[c].want, what);
        xf_tensor_release(y);
    }
    /* \\b sees the text before where the search goes on; like RE2's, it
     * takes only ASCII letters, digits and '_' for word characters */
    xf_tensor *ascii = string_tensor((xf_shape){1, {2}}, NAMES("the cat", "éa naïve"));
    xf_tensor *y = run_node(tokenizer(0, 1, NULL, 0, "\\b\\w+"), "cpu_ref", ascii, NULL);
    assert_strings(y, (xf_shape){2, {2, 3}}, NAMES("the", "cat", "#", "a", "na", "ve"), "word starts");
    xf_tensor_release(y);
    xf_tensor_release(ascii);
    xf_tensor *chars = string_tensor((xf_shape){1, {2}}, NAMES("çà", "abc"));
    y = run_node(tokenizer(0, 1, NAMES(""), 1, NULL), "cpu_ref", chars, NULL);
    assert_strings(y, (xf_shape){2, {2, 3}}, NAMES("ç", "à", "#", "a", "b", "c"), "characters");
    xf_tensor_release(y);
    y = run_node(tokenizer(1, 1, NULL, 0, "z+"), "cpu_ref", chars, NULL);
    ck_assert(y->dtype == XF_DT_STRING && y->shape.ndim == 2 && y->shape.dims[0] == 2 && y->shape.dims[1] == 0);
    xf_tensor_release(y);
    /* only empty matches, the first (\\B) between the bytes of é in the
     * C-locale form: no token, and the search ends */
    xf_tensor *accent = string_tensor((xf_shape){1, {2}}, NAMES("aé", "çà"));
    y = run_node(tokenizer(0, 1, NULL, 0, "\\B"), "cpu_ref", accent, NULL);
    ck_assert(y->dtype == XF_DT_STRING && y->shape.ndim == 2 && y->shape.dims[0] == 2 && y->shape.dims[1] == 0);
    xf_tensor_release(y);
    xf_tensor_release(accent);

    free(chars->strings[0]);
    chars->strings[0] = strdup("\xff");
    xf_error e;
    ck_assert_ptr_null(run_node(tokenizer(0, 1, NAMES(" "), 1, NULL), "cpu_ref", chars, &e));
    ck_assert_msg(strstr(e.msg, "'tok'") && strstr(e.msg, "string 0 is not UTF-8"), "%s", e.msg);
    xf_tensor_release(chars);
    xf_tensor_release(x);
}
END_TEST

/* RE2 patterns through their POSIX translations, against values ONNX
 * Runtime gives; what has no POSIX form refused by node. */
START_TEST(regex_full_match)
{
    xf_tensor *x = string_tensor((xf_shape){2, {2, 4}}, NAMES("abc", "ABC", "123-456", "www.google.com", "a]b", "a-b",
                                                               "foo.bar@gmail.com", "hello world"));
    const struct {
        const char *pattern;
        int64_t want[8];
    } cases[] = {
        {"abc", {1, 0, 0, 0, 0, 0, 0, 0}},
        {"(?i)abc", {1, 1, 0, 0, 0, 0, 0, 0}},
        {"\\d{3}-\\d{3}", {0, 0, 1, 0, 0, 0, 0, 0}},
        {"www\\.[\\w.-]+\\.\\bcom\\b", {0, 0, 0, 1, 0, 0, 0, 0}},
        {"a[]]b", {0, 0, 0, 0, 1, 0, 0, 0}},
        {"a[x-]b", {0, 0, 0, 0, 0, 1, 0, 0}},
        {"(\\W|^)[\\w.\\-]{0,25}@(yahoo|gmail)\\.com(\\W|$)", {0, 0, 0, 0, 0, 0, 1, 0}},
        {"(?:\\w+)\\s\\w+?", {0, 0, 0, 0, 0, 0, 0, 1}},
        {"[^\\d\\s]+", {1, 1, 0, 1, 1, 1, 1, 0}},
        {"[a\\-z]+", {0, 0, 0, 0, 0, 0, 0, 0}}, /* a, '-' and z, not a range */
        {"[[:alpha:]]+", {1, 1, 0, 0, 0, 0, 0, 0}},
        {"[[:punct:][:digit:]]+", {0, 0, 1, 0, 0, 0, 0, 0}},
    };
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        Onnx__NodeProto *n = mk_node("RegexFullMatch", "match", NAMES("x"), NAMES("y"));
        attr_string(n, "pattern", cases[c].pattern);
        xf_tensor *y = run_node(n, "cpu_ref", x, NULL);
        ck_assert(y->dtype == XF_DT_BOOL && xf_shape_equal(&y->shape, &x->shape));
        for (int i = 0; i < 8; i++)
            ck_assert_msg(((const uint8_t *)y->data)[i] == cases[c].want[i], "%s: element %d is %d",
                          cases[c].pattern, i, ((const uint8_t *)y->data)[i]);
        xf_tensor_release(y);
    }
    /* RE2's classes are ASCII's; its '.' takes no newline unless (?s) */
    xf_tensor *accents = string_tensor((xf_shape){1, {4}}, NAMES("éa", "naïve", "ab_1", "a\nb"));
    static const char *const ascii_classes[][2] = {
        {"[[:alpha:]]+", "\x00\x00\x00\x00"}, {"[[:word:]]+", "\x00\x00\x01\x00"},
        {"[^[:alnum:]]+", "\x00\x00\x00\x00"}, {"a.b", "\x00\x00\x00\x00"},
        {".*", "\x01\x01\x01\x00"},           {"(?s).*", "\x01\x01\x01\x01"}};
    for (int c = 0; c < 6; c++) {
        Onnx__NodeProto *n = mk_node("RegexFullMatch", "match", NAMES("x"), NAMES("y"));
        attr_string(n, "pattern", ascii_classes[c][0]);
        xf_tensor *y = run_node(n, "cpu_ref", accents, NULL);
        ck_assert_msg(memcmp(y->data, ascii_classes[c][1], 4) == 0, "%s", ascii_classes[c][0]);
        xf_tensor_release(y);
    }
    xf_tensor_release(accents);
    const char *refused[][2] = {{"\\pL+", "\\p has no POSIX form"},
                                {"a++", "a repetition of a repetition is not RE2 syntax"},
                                {"a(?i)b", "the group (?i has no POSIX form"},
                                {"[\\W]", "\\W inside brackets has no POSIX form"},
                                {"(ab", "does not compile"},
                                {"[[:letter:]]", "an unknown [: class"}};
    for (int c = 0; c < 6; c++) {
        Onnx__NodeProto *n = mk_node("RegexFullMatch", "match", NAMES("x"), NAMES("y"));
        attr_string(n, "pattern", refused[c][0]);
        xf_error e;
        ck_assert_ptr_null(run_node(n, "cpu_ref", x, &e));
        ck_assert_msg(strstr(e.msg, "node 'match' (RegexFullMatch): pattern") && strstr(e.msg, refused[c][1]), "%s",
                      e.msg);
    }
    xf_tensor_release(x);
}
END_TEST

/* Runs model mp on cpu_ref with inputs in, outputs to out. */
static void run_model(Onnx__ModelProto *mp, xf_tensor **in, xf_tensor **out)
{
    xf_model *m;
    xf_session *s;
    xf_error e;
    ck_assert_msg(load_proto(mp, NULL, &m, &e) == XF_OK, "%s", e.msg);
    ck_assert_msg(xf_session_create(m->graph, xf_model_opset(m), "cpu_ref", NULL, &s, &e) == XF_OK, "%s", e.msg);
    ck_assert_msg(xf_session_run(s, in, out, &e) == XF_OK, "%s", e.msg);
    xf_session_free(s);
    xf_model_free(m);
}

static void assert_counts(const xf_tensor *t, const int64_t *want)
{
    ck_assert(t->dtype == XF_DT_INT64 && t->shape.ndim == 1 && t->shape.dims[0] == 3);
    for (int i = 0; i < 3; i++)
        ck_assert_int_eq(((const int64_t *)t->data)[i], want[i]);
}

/* (?m): '^' and '$' at lines too, negated sets, \D and '.' under (?s)
 * taking '\n' as RE2's do, a full match one that spans the string, (?U)
 * changing nothing; without it the anchors only at the text's ends;
 * against values ONNX Runtime gives; \A and \z the text's ends under (?m)
 * too. */
START_TEST(regex_multiline)
{
    xf_tensor *x = string_tensor((xf_shape){1, {4}}, NAMES("a\nb", "ab\ncd", "x\n", "a\n\nb"));
    static const char *const full[][2] = {
        {"(?m)a$\n^b", "\x01\x00\x00\x00"},       {"(?m)[^x]+", "\x01\x01\x00\x01"},
        {"(?m)\\w+$\\n^\\w+", "\x01\x01\x00\x00"}, {"(?m).+", "\x00\x00\x00\x00"},
        {"(?ms).+", "\x01\x01\x01\x01"},          {"(?m)\\D+", "\x01\x01\x01\x01"},
        {"(?m)a$", "\x00\x00\x00\x00"},            {"(?mU)\\w+?\\n\\w*", "\x01\x01\x01\x00"},
        {"(?m)[^x\\n]+", "\x00\x00\x00\x00"},      {"(?m)\\A\\w+$\\n^\\w+\\z", "\x01\x01\x00\x00"},
        {"(?m)a\n^\n?b", "\x01\x00\x00\x01"}, /* without (?m), ^ and $ are the text's ends alone: */
        {"a$\nb", "\x00\x00\x00\x00"},              {"a\n^\n?b", "\x00\x00\x00\x00"},
        {"\\w+\\n?$", "\x00\x00\x01\x00"},          {"^a$|x\n", "\x00\x00\x01\x00"}};
    for (size_t c = 0; c < sizeof full / sizeof *full; c++) {
        Onnx__NodeProto *n = mk_node("RegexFullMatch", "match", NAMES("x"), NAMES("y"));
        attr_string(n, "pattern", full[c][0]);
        xf_tensor *y = run_node(n, "cpu_ref", x, NULL);
        for (int i = 0; i < 4; i++)
            ck_assert_msg(((const uint8_t *)y->data)[i] == (uint8_t)full[c][1][i], "%s: element %d is %d", full[c][0],
                          i, ((const uint8_t *)y->data)[i]);
        xf_tensor_release(y);
    }
    const struct {
        const char *re;
        int64_t width;
        const char *want[8];
    } tokens[] = {
        {"(?m)^\\w", 2, {"a", "b", "a", "c", "x", "#", "a", "b"}},
        {"(?m)\\w$", 2, {"a", "b", "b", "d", "x", "#", "a", "b"}},
        {"^\\w", 1, {"a", "a", "x", "a"}},
        {"\\w$", 1, {"b", "d", "#", "b"}},
        {"(?m)\\A\\w", 1, {"a", "a", "x", "a"}},
        {"(?m)\\w\\z", 1, {"b", "d", "#", "b"}},
    };
    for (size_t c = 0; c < sizeof tokens / sizeof *tokens; c++) {
        xf_tensor *y = run_node(tokenizer(0, 1, NULL, 0, tokens[c].re), "cpu_ref", x, NULL);
        assert_strings(y, (xf_shape){2, {4, tokens[c].width}}, tokens[c].want, tokens[c].re);
        xf_tensor_release(y);
    }
    xf_tensor_release(x);
}
END_TEST

/* Sets with non-ASCII members and ranges (which glibc's C.UTF-8 does not
 * take) run on their UTF-8 bytes in the C locale, beside \b and \B as RE2
 * has them: against values ONNX Runtime gives; under (?i) such a range,
 * and a reversed one, are refused by name. */
/* RE2's \\xHH and \\x{H...} escapes, alone, in sets and in ranges: the
 * characters they name (punctuation as itself, ']' and '-' as members, a
 * non-ASCII one as its UTF-8 bytes); the expected values are ONNX
 * Runtime's.  Malformed ones, and NUL, surrogates and code points past
 * U+10FFFF, are refused by name. */
START_TEST(regex_hex_escapes)
{
    xf_tensor *x = string_tensor((xf_shape){1, {11}},
                                 NAMES("A", "abc", "αβγ", "a.b", "]", "é", "\\", "x-y", "😀", "a\nb", "axb"));
    static const struct {
        const char *re, *full;
    } cases[] = {
        {"\\x41", "\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"},
        {"[\\x61-\\x7a]+", "\x00\x01\x00\x00\x00\x00\x00\x00\x00\x00\x01"},
        {"[\\x{3b1}-\\x{3c9}]+", "\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\x00"},
        {"a\\x2eb", "\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00"},
        {"[\\x5d]", "\x00\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00"},
        {"[^\\x{e9}]", "\x01\x00\x00\x00\x01\x00\x01\x00\x01\x00\x00"},
        {"\\x5c", "\x00\x00\x00\x00\x00\x00\x01\x00\x00\x00\x00"},
        {"x[\\x2d]y", "\x00\x00\x00\x00\x00\x00\x00\x01\x00\x00\x00"},
        {"\\x{1F600}", "\x00\x00\x00\x00\x00\x00\x00\x00\x01\x00\x00"},
        {"a\\x0ab", "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x01\x00"},
        {"[\\x{E9}\\x41]", "\x01\x00\x00\x00\x00\x01\x00\x00\x00\x00\x00"},
    };
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        Onnx__NodeProto *n = mk_node("RegexFullMatch", "match", NAMES("x"), NAMES("y"));
        attr_string(n, "pattern", cases[c].re);
        xf_tensor *y = run_node(n, "cpu_ref", x, NULL);
        for (int i = 0; i < 11; i++)
            ck_assert_msg(((const uint8_t *)y->data)[i] == (uint8_t)cases[c].full[i], "%s: element %d is %d",
                          cases[c].re, i, ((const uint8_t *)y->data)[i]);
        xf_tensor_release(y);
    }
    /* an escaped backslash before "x41" is no \\x escape */
    xf_tensor *bx = string_tensor((xf_shape){1, {2}}, NAMES("\\x41", "A"));
    Onnx__NodeProto *bn = mk_node("RegexFullMatch", "match", NAMES("x"), NAMES("y"));
    attr_string(bn, "pattern", "\\\\x41");
    xf_tensor *by = run_node(bn, "cpu_ref", bx, NULL);
    ck_assert(((const uint8_t *)by->data)[0] == 1 && ((const uint8_t *)by->data)[1] == 0);
    xf_tensor_release(by);
    xf_tensor_release(bx);
    static const char *const refused[] = {"\\x{110000}", "\\x4", "\\x{}", "\\x00", "\\x{d800}", "\\x{0x41}"};
    for (size_t c = 0; c < sizeof refused / sizeof *refused; c++) {
        Onnx__NodeProto *n = mk_node("RegexFullMatch", "match", NAMES("x"), NAMES("y"));
        attr_string(n, "pattern", refused[c]);
        xf_error e;
        ck_assert_ptr_null(run_node(n, "cpu_ref", x, &e));
        ck_assert_msg(strstr(e.msg, "\\x escape"), "%s: %s", refused[c], e.msg);
    }
    xf_tensor_release(x);
}
END_TEST

START_TEST(regex_non_ascii_sets)
{
    xf_tensor *x = string_tensor((xf_shape){1, {6}}, NAMES("aé€x", "日本語 ok", "ÿāĀ z", "😀a€b", "x-ω y", "é"));
    static const struct {
        const char *re, *full; /* full: RegexFullMatch's 6 results, NULL: not checked */
        int64_t width;
        const char *want[12];
    } cases[] = {
        {"\\b[^é€]+", "\x00\x00\x00\x00\x01\x00", 2, {"a", "x", "ok", "#", "z", "#", "a", "b", "x-ω y", "#", "#", "#"}},
        {"[α-ω]+", NULL, 1, {"#", "#", "#", "#", "ω", "#"}},
        {"\\b[a-ÿ]+", NULL, 2, {"aé", "x", "ok", "#", "z", "#", "a", "b", "x", "y", "#", "#"}},
        {"[^ÿ-ā ]+\\b", "\x01\x00\x00\x01\x00\x00", 2,
         {"aé€x", "#", "ok", "#", "z", "#", "😀a€b", "#", "x", "y", "#", "#"}},
        {"\\B[一-龥]+", NULL, 1, {"#", "日本語", "#", "#", "#", "#"}},
        {"[^😀a]+\\b", "\x00\x01\x01\x00\x01\x00", 1, {"é€x", "日本語 ok", "ÿāĀ z", "€b", "x-ω y", "#"}},
        {"\\b[€-😀]", NULL, 1, {"#", "#", "#", "€", "#", "#"}},
        {"x?[a-ÿ]+[^€-😀]*", "\x00\x00\x01\x00\x01\x01", 2,
         {"aé", "x", "ok", "#", "ÿāĀ z", "#", "a", "b", "x-ω y", "#", "é", "#"}},
    };
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        xf_tensor *y = run_node(tokenizer(0, 1, NULL, 0, cases[c].re), "cpu_ref", x, NULL);
        assert_strings(y, (xf_shape){2, {6, cases[c].width}}, cases[c].want, cases[c].re);
        xf_tensor_release(y);
        if (!cases[c].full)
            continue;
        Onnx__NodeProto *n = mk_node("RegexFullMatch", "match", NAMES("x"), NAMES("y"));
        attr_string(n, "pattern", cases[c].re);
        y = run_node(n, "cpu_ref", x, NULL);
        for (int i = 0; i < 6; i++)
            ck_assert_msg(((const uint8_t *)y->data)[i] == (uint8_t)cases[c].full[i], "%s: element %d is %d",
                          cases[c].re, i, ((const uint8_t *)y->data)[i]);
        xf_tensor_release(y);
    }
    xf_error e;
    ck_assert_ptr_null(run_node(tokenizer(0, 1, NULL, 0, "(?i)[α-ω]+"), "cpu_ref", x, &e));
    ck_assert_msg(strstr(e.msg, "a range of non-ASCII characters reversed, under (?i)"), "%s", e.msg);
    ck_assert_ptr_null(run_node(tokenizer(0, 1, NULL, 0, "[^ü-é]"), "cpu_ref", x, &e)); /* RE2 refuses it too */
    ck_assert_msg(strstr(e.msg, "a range of non-ASCII characters reversed"), "%s", e.msg);
    xf_tensor_release(x);
}
END_TEST

/* code point c as UTF-8 into b (NUL-terminated) */
static void utf8_put(uint32_t c, char *b)
{
    int n = c < 0x80 ? 1 : c < 0x800 ? 2 : c < 0x10000 ? 3 : 4;
    for (int i = n - 1; i > 0; i--, c >>= 6)
        b[i] = (char)(0x80 | (c & 0x3f));
    b[0] = (char)(n == 1 ? c : (0xf00u >> n & 0xff) | c);
    b[n] = 0;
}

/* Ranges of non-ASCII code points, set and negated, near the bounds where
 * UTF-8 changes length or a continuation byte wraps, on characters at and
 * beside their ends: each is a member exactly when inside. */
START_TEST(regex_utf8_ranges)
{
    static const uint32_t points[] = {0x80,   0x81,   0xbf,   0xc0,    0x7fe,   0x7ff,   0x800,  0x801,
                                      0xfff,  0x1000, 0xd7ff, 0xe000,  0xfffe,  0xffff,  0x10000, 0x10001,
                                      0x3ffff, 0x40000, 0xfffff, 0x100000, 0x10fffe, 0x10ffff, 0x4e00, 0x9fa5};
    enum { NP = sizeof points / sizeof *points };
    uint64_t state = 7;
    char (*texts)[8] = malloc(sizeof *texts * 3 * NP);
    const char **names = malloc(sizeof *names * (3 * NP + 1));
    uint32_t *cps = malloc(sizeof *cps * 3 * NP);
    int nt = 0;
    for (int i = 0; i < NP; i++) /* every point, and beside it (no surrogates) */
        for (int d = -1; d <= 1; d++) {
            uint32_t c = points[i] + (uint32_t)d;
            if (c < 0x80 || c > 0x10ffff || (c >= 0xd800 && c < 0xe000))
                continue;
            utf8_put(c, texts[nt]);
            cps[nt] = c;
            names[nt] = texts[nt];
            nt++;
        }
    names[nt] = NULL;
    xf_tensor *x = string_tensor((xf_shape){1, {nt}}, names);
    for (int r = 0; r < 60; r++) {
        state = state * 6364136223846793005ull + 1442695040888963407ull;
        uint32_t a = points[(state >> 33) % NP], b = points[(state >> 45) % NP];
        uint32_t lo = a < b ? a : b, hi = a < b ? b : a;
        char *re = zalloc(40), l8[8], h8[8];
        utf8_put(lo, l8);
        utf8_put(hi, h8);
        bool neg = r % 2;
        snprintf(re, 40, "[%s%s-%s]", neg ? "^" : "", l8, h8);
        Onnx__NodeProto *n = mk_node("RegexFullMatch", "match", NAMES("x"), NAMES("y"));
        attr_string(n, "pattern", re);
        xf_tensor *y = run_node(n, "cpu_ref", x, NULL);
        for (int i = 0; i < nt; i++)
            ck_assert_msg(((const uint8_t *)y->data)[i] == ((cps[i] >= lo && cps[i] <= hi) != neg),
                          "[%s%x-%x] on %x: %d", neg ? "^" : "", lo, hi, cps[i], ((const uint8_t *)y->data)[i]);
        xf_tensor_release(y);
    }
    xf_tensor_release(x);
    /* a set's ']', first, beside a non-ASCII range (on text that is not ASCII) */
    xf_tensor *z = string_tensor((xf_shape){1, {4}}, NAMES("]ж", "aж", "β", "ж-"));
    Onnx__NodeProto *n = mk_node("RegexFullMatch", "match", NAMES("x"), NAMES("y"));
    attr_string(n, "pattern", "[^]α-ω]+");
    xf_tensor *y = run_node(n, "cpu_ref", z, NULL);
    ck_assert_mem_eq(y->data, "\x00\x01\x00\x01", 4);
    xf_tensor_release(y);
    xf_tensor_release(z);
    free(texts);
    free(names);
    free(cps);
}
END_TEST

/* ONNX's StringConcat (broadcast), StringSplit (Python's str.split:
 * whitespace runs, or every delimiter; maxsplit; padded parts and counts)
 * and StringNormalizer (runtime/string_ops.c). */
START_TEST(string_ops)
{
    static const int64_t d21[] = {2, 1}, d3[] = {3};
    Onnx__GraphProto *g = mk_graph("concat");
    PUSH(g->n_input, g->input, mk_vi("A", XF_DT_STRING, 2, d21, NULL));
    PUSH(g->n_input, g->input, mk_vi("B", XF_DT_STRING, 1, d3, NULL));
    PUSH(g->n_node, g->node, mk_node("StringConcat", "cat", NAMES("A", "B"), NAMES("Y")));
    PUSH(g->n_output, g->output, mk_vi("Y", XF_DT_STRING, -1, NULL, NULL));
    xf_tensor *in[2] = {string_tensor((xf_shape){2, {2, 1}}, NAMES("x", "yy")),
                        string_tensor((xf_shape){1, {3}}, NAMES("1", "", "3"))};
    xf_tensor *y = NULL;
    run_model(mk_model(g, 20), in, &y);
    assert_strings(y, (xf_shape){2, {2, 3}}, NAMES("x1", "x", "x3", "yy1", "yy", "yy3"), "StringConcat");
    xf_tensor_release(y);
    xf_tensor_release(in[0]);
    xf_tensor_release(in[1]);
    for (int form = 0; form < 2; form++) {
        g = mk_graph("split");
        PUSH(g->n_input, g->input, mk_vi("X", XF_DT_STRING, 1, d3, NULL));
        Onnx__NodeProto *n = mk_node("StringSplit", "split", NAMES("X"), NAMES("Y", "Z"));
        if (form == 0)
            attr_int(n, "maxsplit", 1);
        else
            attr_string(n, "delimiter", ",");
        PUSH(g->n_node, g->node, n);
        PUSH(g->n_output, g->output, mk_vi("Y", XF_DT_STRING, -1, NULL, NULL));
        PUSH(g->n_output, g->output, mk_vi("Z", XF_DT_INT64, -1, NULL, NULL));
        xf_tensor *x = string_tensor((xf_shape){1, {3}}, NAMES("  a b  c  ", "", ",a,,b")), *out[2] = {NULL, NULL};
        run_model(mk_model(g, 20), &x, out);
        if (form == 0) { /* whitespace, one split at most: the rest as it is */
            assert_strings(out[0], (xf_shape){2, {3, 2}}, NAMES("a", "b  c  ", "", "", ",a,,b", ""), "maxsplit");
            assert_counts(out[1], (const int64_t[]){2, 0, 1});
        } else { /* every comma: empty parts kept, an empty string one part */
            assert_strings(out[0], (xf_shape){2, {3, 4}},
                           NAMES("  a b  c  ", "", "", "", "", "", "", "", "", "a", "", "b"), "delimiter");
            assert_counts(out[1], (const int64_t[]){1, 1, 4});
        }
        xf_tensor_release(out[0]);
        xf_tensor_release(out[1]);
        xf_tensor_release(x);
    }
    /* StringNormalizer: stopwords in any case, then upper case; [1, C]
     * keeps its row; nothing left gives one empty string */
    for (int all = 0; all < 2; all++) {
        static const int64_t d1x4[] = {1, 4};
        g = mk_graph("norm");
        PUSH(g->n_input, g->input, mk_vi("X", XF_DT_STRING, 2, d1x4, NULL));
        Onnx__NodeProto *n = mk_node("StringNormalizer", "norm", NAMES("X"), NAMES("Y"));
        attr_string(n, "case_change_action", "UPPER");
        attr_strings(n, "stopwords", all ? 2 : 1, NAMES("monday", "Tue"));
        PUSH(g->n_node, g->node, n);
        PUSH(g->n_output, g->output, mk_vi("Y", XF_DT_STRING, -1, NULL, NULL));
        xf_tensor *x = string_tensor((xf_shape){2, {1, 4}}, NAMES("Monday", "tue", "mOnDaY", all ? "TUE" : "wed"));
        run_model(mk_model(g, 10), &x, &y);
        if (all)
            assert_strings(y, (xf_shape){2, {1, 1}}, NAMES(""), "nothing left");
        else
            assert_strings(y, (xf_shape){2, {1, 2}}, NAMES("TUE", "WED"), "stopwords");
        xf_tensor_release(y);
        xf_tensor_release(x);
    }
}
END_TEST

/* StringNormalizer changes the case of every character as ONNX Runtime
 * does (towlower/towupper in its locale, here C.UTF-8 where en_US.UTF-8,
 * the default, is not installed), a character's bytes growing or
 * shrinking; stopwords compared in lower case; a string not UTF-8
 * refused. */
START_TEST(normalizer_unicode)
{
    static const char *const in[] = {"CAFÉ Über Straße", "ΑΒΓ αβγ", "ẞ ß", "Ⱥ ı İ", "\xf0\x90\x90\x80 ＡＢＣ"};
    static const char *const lower[] = {"café über straße", "αβγ αβγ", "ß ß", "ⱥ ı i", "\xf0\x90\x90\xa8 ａｂｃ"};
    static const char *const upper[] = {"CAFÉ ÜBER STRAßE", "ΑΒΓ ΑΒΓ", "ẞ ß", "Ⱥ I İ", "\xf0\x90\x90\x80 ＡＢＣ"};
    const char *backends[4];
    int nb = host_backends(backends);
    for (int b = 0; b < nb; b++)
        for (int up = 0; up < 2; up++) {
            Onnx__NodeProto *n = mk_node("StringNormalizer", "norm", NAMES("x"), NAMES("y"));
            attr_string(n, "case_change_action", up ? "UPPER" : "LOWER");
            if (up)
                attr_string(n, "locale", "no_SUCH.UTF-8");
            xf_tensor *x = string_tensor((xf_shape){1, {5}}, in);
            xf_tensor *y = run_node(n, backends[b], x, NULL);
            assert_strings(y, (xf_shape){1, {5}}, up ? upper : lower, backends[b]);
            xf_tensor_release(y);
            xf_tensor_release(x);
        }
    Onnx__NodeProto *n = mk_node("StringNormalizer", "norm", NAMES("x"), NAMES("y"));
    attr_strings(n, "stopwords", 2, NAMES("über", "ΣΟΦΊΑ"));
    xf_tensor *x = string_tensor((xf_shape){1, {4}}, NAMES("ÜBER", "σοφία", "Σοφία", "uber"));
    xf_tensor *y = run_node(n, "cpu_ref", x, NULL);
    assert_strings(y, (xf_shape){1, {1}}, NAMES("uber"), "stopwords");
    xf_tensor_release(y);
    xf_tensor_release(x);
    x = string_tensor((xf_shape){1, {2}}, NAMES("ok", "caf\xc3"));
    xf_error e;
    ck_assert_ptr_null(run_node(n, "cpu_ref", x, &e));
    ck_assert_msg(strstr(e.msg, "node 'norm' (StringNormalizer): its input's string 1 is not UTF-8"), "%s", e.msg);
    xf_tensor_release(x);
}
END_TEST

/* text [N, 1] -> Reshape [-1] -> StringNormalizer (lower case) ->
 * Tokenizer -> TfIdfVectorizer -> Mul by idf weights, as scikit-learn's
 * converter writes a TfidfVectorizer: xflowc checks it on its outputs. */
START_TEST(xflowc_checks_a_text_pipeline)
{
    static const int64_t col[] = {-1, 1}, one[] = {1}, minus1[] = {-1};
    static const float idf[] = {1.5f, 2, 1, 1.25f};
    static const int64_t four[] = {4};
    Onnx__GraphProto *g = mk_graph("pipeline");
    PUSH(g->n_input, g->input, mk_vi("text", XF_DT_STRING, 2, col, NAMES("N")));
    PUSH(g->n_initializer, g->initializer, mk_raw("shape", XF_DT_INT64, 1, one, minus1, sizeof minus1));
    PUSH(g->n_initializer, g->initializer, mk_raw("idf", XF_DT_FLOAT, 1, four, idf, sizeof idf));
    PUSH(g->n_node, g->node, mk_node("Reshape", "reshape", NAMES("text", "shape"), NAMES("flat")));
    Onnx__NodeProto *norm = mk_node("StringNormalizer", "norm", NAMES("flat"), NAMES("lower"));
    attr_string(norm, "case_change_action", "LOWER");
    PUSH(g->n_node, g->node, norm);
    Onnx__NodeProto *tok = tokenizer(0, 1, NULL, 0, "[a-zA-Z0-9_]+");
    tok->input[0] = "lower";
    tok->output[0] = "tokens";
    PUSH(g->n_node, g->node, tok);
    Onnx__NodeProto *tf = mk_node("TfIdfVectorizer", "tfidf", NAMES("tokens"), NAMES("counts"));
    attr_strings(tf, "pool_strings", 4, NAMES("0", "1", "5", "9"));
    static const int64_t counts[] = {0}, idx[] = {0, 1, 2, 3};
    attr_ints(tf, "ngram_counts", 1, counts);
    attr_ints(tf, "ngram_indexes", 4, idx);
    attr_int(tf, "min_gram_length", 1);
    attr_int(tf, "max_gram_length", 1);
    attr_int(tf, "max_skip_count", 0);
    attr_string(tf, "mode", "TF");
    PUSH(g->n_node, g->node, tf);
    PUSH(g->n_node, g->node, mk_node("Mul", "mul", NAMES("counts", "idf"), NAMES("y")));
    PUSH(g->n_output, g->output, mk_vi("y", XF_DT_FLOAT, 2, (const int64_t[]){-1, 4}, NAMES("N", NULL)));
    Onnx__ModelProto *mp = mk_model(g, 18);
    add_opset(mp, "com.microsoft", 1);
    const char *dir = xf_test_tmpdir("text_ops");
    char in[4200], cmd[9000], *out = NULL;
    snprintf(in, sizeof in, "%s/pipeline.onnx", dir);
    write_model(mp, in);
    snprintf(cmd, sizeof cmd, "%s %s -o %s/out.onnx --check", xf_test_tool("xflowc"), in, dir);
    ck_assert_msg(xf_test_run(cmd, &out) == 0, "%s", out);
    ck_assert_msg(strstr(out, "check: output 'y'") && !strstr(out, "shapes only"), "%s", out);
    ck_assert_msg(strstr(out, "symbolic dims kept: 'text' dim 0 ('N')"), "%s", out);
    free(out);
    /* random inputs are made of the model's words: the counts are not all 0 */
    snprintf(cmd, sizeof cmd, "%s %s/pipeline.onnx --seed 3", xf_test_tool("xflow-run"), dir);
    ck_assert_msg(xf_test_run(cmd, &out) == 0, "%s", out);
    const char *line = strstr(out, "output 'y' FLOAT 1x4:");
    ck_assert_msg(line, "%s", out);
    double sum = 0;
    char *p = strchr(line, ':') + 1;
    for (int k = 0; k < 4; k++)
        sum += strtod(p, &p);
    ck_assert_msg(sum > 0, "%s", out);
    free(out);
    /* and the written model runs at the batch it is given */
    xf_tensor *x = string_tensor((xf_shape){2, {2, 1}}, NAMES("5 59 9", "0"));
    xf_load_options opt = {.feed_shapes = &x->shape, .n_feed_shapes = 1};
    xf_model *m;
    xf_error e;
    snprintf(in, sizeof in, "%s/out.onnx", dir);
    ck_assert_msg(xf_model_load(in, &opt, &m, &e) == XF_OK, "%s", e.msg);
    xf_session *s;
    ck_assert_msg(xf_session_create(m->graph, xf_model_opset(m), "cpu_ref", NULL, &s, &e) == XF_OK, "%s", e.msg);
    xf_tensor *y = NULL;
    ck_assert_msg(xf_session_run(s, &x, &y, &e) == XF_OK, "%s", e.msg);
    assert_floats(y, (xf_shape){2, {2, 4}}, (const float[]){0, 0, 1, 1.25f, 1.5f, 0, 0, 0}, "pipeline");
    xf_tensor_release(y);
    xf_tensor_release(x);
    xf_session_free(s);
    xf_model_free(m);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("text_ops");
    TCase *tc = tcase_create("ops");
    tcase_add_checked_fixture(tc, NULL, free_allocs);
    tcase_add_test(tc, string_ops);
    tcase_add_test(tc, normalizer_unicode);
    tcase_add_test(tc, tfidf_vectorizer);
    tcase_add_test(tc, tokenizer_op);
    tcase_add_test(tc, regex_full_match);
    tcase_add_test(tc, regex_multiline);
    tcase_add_test(tc, regex_non_ascii_sets);
    tcase_add_test(tc, regex_hex_escapes);
    tcase_add_test(tc, regex_utf8_ranges);
    tcase_add_test(tc, xflowc_checks_a_text_pipeline);
    suite_add_tcase(s, tc);
    return xf_test_run_suite(s);
}
