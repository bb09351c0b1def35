/* ONNX's TfIdfVectorizer on the host (dispatched by ml_ops.c), as ONNX
 * Runtime computes it: each row of X (int32, int64 or strings; [C] or
 * [N, C]) is scanned for the pool's n-grams of min_gram_length to
 * max_gram_length items, taken at every skip distance 0 to
 * max_skip_count (an n-gram's items that far apart; unigrams counted once,
 * whatever the skip), and each n-gram found adds one to the column
 * ngram_indexes gives it.  Y (float, [cols] or [N, cols], cols the largest
 * index + 1) holds the counts (TF), whether each occurred (IDF) or the
 * counts times the weights (TFIDF); weights, where given, are read by
 * output column, as ONNX Runtime reads them.  The pool's n-grams are kept
 * in a hash table keyed by their items (strings numbered first, through a
 * hash table of the pool's strings). */
#include "ml_ops.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

enum { TF, IDF, TFIDF };

struct xf_ml_tfidf {
    int mode;
    int64_t min_n, max_n, max_skip, cols;
    bool strings;
    char **table;        /* strings: the pool's, sorted, unique (borrowed from the node) */
    int64_t n_table;
    int64_t *str_slots;  /* hash table of their numbers, -1 for empty; str_mask + 1 slots */
    uint64_t str_mask;
    int64_t *items;      /* the pool's items (strings: their numbers) */
    int64_t n_grams;
    int64_t *gram_start; /* per n-gram: its first item, its length, its column */
    int64_t *gram_len;
    int64_t *gram_col;
    int64_t *slots;      /* hash table of n-gram numbers, -1 for empty; mask + 1 slots */
    uint64_t mask;
    const double *weights;
    int64_t n_weights;
};

static uint64_t mix(uint64_t h, int64_t v)
{
    h ^= (uint64_t)v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    return h * 0xff51afd7ed558ccdull;
}

/* Hash of the n items at v[0], v[step], ... */
static uint64_t hash_items(const int64_t *v, int64_t n, int64_t step)
{
    uint64_t h = (uint64_t)n;
    for (int64_t i = 0; i < n; i++)
        h = mix(h, v[i * step]);
    return h;
}


/* FNV-1a of string s. */
static uint64_t hash_string(const char *s)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        h = (h ^ *p) * 0x100000001b3ull;
    return h;
}

/* The number of string s in the table, or -1. */
static int64_t string_number(const xf_ml_tfidf *t, const char *s)
{
    for (uint64_t k = hash_string(s) & t->str_mask;; k = (k + 1) & t->str_mask) {
        int64_t i = t->str_slots[k];
        if (i < 0 || strcmp(t->table[i], s) == 0)
            return i;
    }
}

/* The hash table of the table's strings: twice their number of slots or
 * more, a power of two. */
static bool hash_strings(xf_ml_tfidf *t)
{
    uint64_t size = 2;
    while (size < 2 * (uint64_t)t->n_table)
        size *= 2;
    if (!(t->str_slots = malloc(sizeof *t->str_slots * size)))
        return false;
    t->str_mask = size - 1;
    memset(t->str_slots, 0xff, sizeof *t->str_slots * size);
    for (int64_t i = 0; i < t->n_table; i++) {
        uint64_t k = hash_string(t->table[i]) & t->str_mask;
        while (t->str_slots[k] >= 0)
            k = (k + 1) & t->str_mask;
        t->str_slots[k] = i;
    }
    return true;
}

/* The column of the n-gram of the n items at v[0], v[step], ..., or -1. */
static int64_t find(const xf_ml_tfidf *t, const int64_t *v, int64_t n, int64_t step)
{
    for (uint64_t s = hash_items(v, n, step) & t->mask;; s = (s + 1) & t->mask) {
        int64_t g = t->slots[s];
        if (g < 0)
            return -1;
        if (t->gram_len[g] != n)
            continue;
        const int64_t *p = t->items + t->gram_start[g];
        int64_t i = 0;
        while (i < n && p[i] == v[i * step])
            i++;
        if (i == n)
            return t->gram_col[g];
    }
}

void xf_ml_tfidf_free(xf_ml_tfidf *t)
{
    if (!t)
        return;
    free(t->table);
    free(t->str_slots);
    free(t->items);
    free(t->gram_start);
    free(t->slots);
    free(t);
}

static xf_status read_pool(const xf_node *n, xf_ml_tfidf *t, xf_error *err)
{
    int64_t n_ints;
    const int64_t *ints = xf_ml_ints(n, "pool_int64s", &n_ints);
    const xf_opaque_strings *strs = xf_opaque_find_strings(n->opaque, "pool_strings");
    if (!!ints == !!strs)
        return xf_ml_fail(n, err, XF_ERR_INVALID, "needs one of pool_int64s and pool_strings");
    t->strings = strs != NULL;
    int64_t count = strs ? strs->n : n_ints;
    t->items = malloc(sizeof *t->items * (size_t)(count + 1));
    if (!t->items)
        return xf_error_set(err, XF_ERR_NOMEM, "out of memory");
    if (ints) {
        memcpy(t->items, ints, sizeof *t->items * (size_t)count);
        return XF_OK;
    }
    if (!(t->table = malloc(sizeof *t->table * (size_t)(count + 1))))
        return xf_error_set(err, XF_ERR_NOMEM, "out of memory");
    memcpy(t->table, strs->v, sizeof *t->table * (size_t)count);
    qsort(t->table, (size_t)count, sizeof *t->table, xf_rt_cmp_strings);
    for (int64_t i = 0; i < count; i++)
        if (t->n_table == 0 || strcmp(t->table[t->n_table - 1], t->table[i]) != 0)
            t->table[t->n_table++] = t->table[i];
    if (!hash_strings(t))
        return xf_error_set(err, XF_ERR_NOMEM, "out of memory");
    for (int64_t i = 0; i < count; i++)
        t->items[i] = string_number(t, strs->v[i]);
    return XF_OK;
}

/* The n-grams of the pool: ngram_counts[k] is where those of k + 1 items
 * start; each takes the next entry of ngram_indexes as its column. */
static xf_status read_grams(const xf_node *n, xf_ml_tfidf *t, int64_t pool, xf_error *err)
{
    int64_t n_counts, n_idx;
    const int64_t *counts = xf_ml_ints(n, "ngram_counts", &n_counts);
    const int64_t *idx = xf_ml_ints(n, "ngram_indexes", &n_idx);
    if (!counts || !idx)
        return xf_ml_fail(n, err, XF_ERR_INVALID, "needs ngram_counts and ngram_indexes");
    t->n_grams = 0;
    for (int64_t k = 0; k < n_counts; k++) {
        int64_t from = counts[k], to = k + 1 < n_counts ? counts[k + 1] : pool;
        if (from < 0 || to < from || to > pool || (to - from) % (k + 1))
            return xf_ml_fail(n, err, XF_ERR_INVALID,
                              "ngram_counts[%" PRId64 "] = %" PRId64 " does not start a run of %" PRId64
                              "-grams in a pool of %" PRId64 " items", k, from, k + 1, pool);
        t->n_grams += (to - from) / (k + 1);
    }
    if (t->n_grams != n_idx)
        return xf_ml_fail(n, err, XF_ERR_INVALID, "has %" PRId64 " n-grams in its pool but %" PRId64 " ngram_indexes",
                          t->n_grams, n_idx);
    uint64_t cap = 16;
    while (cap < 2 * (uint64_t)t->n_grams)
        cap *= 2;
    t->mask = cap - 1;
    t->gram_start = malloc(sizeof *t->gram_start * (size_t)(3 * t->n_grams + 1));
    t->slots = malloc(sizeof *t->slots * cap);
    if (!t->gram_start || !t->slots)
        return xf_error_set(err, XF_ERR_NOMEM, "out of memory");
    t->gram_len = t->gram_start + t->n_grams;
    t->gram_col = t->gram_len + t->n_grams;
    memset(t->slots, 0xff, sizeof *t->slots * cap);
    int64_t g = 0;
    for (int64_t k = 0; k < n_counts; k++) {
        int64_t to = k + 1 < n_counts ? counts[k + 1] : pool;
        for (int64_t at = counts[k]; at < to; at += k + 1, g++) {
            if (idx[g] < 0)
                return xf_ml_fail(n, err, XF_ERR_INVALID, "ngram_indexes[%" PRId64 "] is negative", g);
            t->gram_start[g] = at;
            t->gram_len[g] = k + 1;
            t->gram_col[g] = idx[g];
            t->cols = idx[g] + 1 > t->cols ? idx[g] + 1 : t->cols;
            if (find(t, t->items + at, k + 1, 1) >= 0)
                continue; /* a repeated n-gram: the first one's column counts, as in ONNX Runtime */
            uint64_t s = hash_items(t->items + at, k + 1, 1) & t->mask;
            while (t->slots[s] >= 0)
                s = (s + 1) & t->mask;
            t->slots[s] = g;
        }
    }
    return XF_OK;
}

xf_status xf_ml_tfidf_create(const xf_node *n, xf_ml_tfidf **out, xf_error *err)
{
    *out = NULL;
    xf_ml_tfidf *t = calloc(1, sizeof *t);
    if (!t)
        return xf_error_set(err, XF_ERR_NOMEM, "out of memory");
    static const char *const modes[] = {"TF", "IDF", "TFIDF"};
    const char *mode = xf_ml_string(n, "mode", "");
    t->mode = -1;
    for (int k = 0; k < 3; k++)
        if (strcmp(mode, modes[k]) == 0)
            t->mode = k;
    int64_t c;
    const int64_t *v;
    t->min_n = (v = xf_ml_ints(n, "min_gram_length", &c)) && c == 1 ? v[0] : 0;
    t->max_n = (v = xf_ml_ints(n, "max_gram_length", &c)) && c == 1 ? v[0] : 0;
    t->max_skip = (v = xf_ml_ints(n, "max_skip_count", &c)) && c == 1 ? v[0] : 0;
    t->weights = xf_ml_reals(n, "weights", &t->n_weights);
    xf_status st = XF_OK;
    if (t->mode < 0)
        st = xf_ml_fail(n, err, XF_ERR_INVALID, "mode '%s' is none of TF, IDF, TFIDF", mode);
    else if (t->min_n < 1 || t->max_n < t->min_n || t->max_skip < 0)
        st = xf_ml_fail(n, err, XF_ERR_INVALID,
                        "min_gram_length %" PRId64 ", max_gram_length %" PRId64 " and max_skip_count %" PRId64
                        " do not make 1 <= min <= max and skips >= 0", t->min_n, t->max_n, t->max_skip);
    if (st == XF_OK)
        st = read_pool(n, t, err);
    int64_t pool = 0;
    if (st == XF_OK) {
        const xf_opaque_strings *strs = xf_opaque_find_strings(n->opaque, "pool_strings");
        pool = strs ? strs->n : (xf_ml_ints(n, "pool_int64s", &c), c);
        st = read_grams(n, t, pool, err);
    }
    if (st == XF_OK && t->weights && t->mode != TF && t->n_weights < t->cols)
        st = xf_ml_fail(n, err, XF_ERR_INVALID, "has %" PRId64 " weights for %" PRId64 " output columns",
                        t->n_weights, t->cols);
    if (st != XF_OK) {
        xf_ml_tfidf_free(t);
        return st;
    }
    *out = t;
    return XF_OK;
}

/* Adds the n-grams of row x[0 .. len - 1] to counts (cols entries).  A
 * string the pool lacks (-1; a padding "" among them) ends every n-gram
 * that would hold it. */
static void count_row(const xf_ml_tfidf *t, const int64_t *x, int64_t len, float *counts)
{
    int64_t start_n = t->min_n;
    for (int64_t skip = 0; skip <= t->max_skip; skip++) {
        for (int64_t s = 0; s < len; s++)
            for (int64_t k = 1; k <= t->max_n && s + (k - 1) * (skip + 1) < len; k++) {
                if (t->strings && x[s + (k - 1) * (skip + 1)] < 0)
                    break;
                if (k < start_n)
                    continue;
                int64_t col = find(t, x + s, k, skip + 1);
                if (col >= 0)
                    counts[col] += 1;
            }
        if (start_n == 1 && ++start_n > t->max_n)
            break; /* unigrams do not depend on the skip */
    }
}

xf_status xf_ml_tfidf_run(const xf_ml_tfidf *t, const xf_node *n, const xf_tensor *x, size_t max_bytes, xf_tensor **out,
                          xf_error *err)
{
    int rank = x->shape.ndim;
    if (rank != 1 && rank != 2)
        return xf_ml_fail(n, err, XF_ERR_INVALID, "X has rank %d; it takes [C] or [N, C]", rank);
    bool str = x->dtype == XF_DT_STRING;
    if (str != t->strings || (!str && x->dtype != XF_DT_INT64 && x->dtype != XF_DT_INT32))
        return xf_ml_fail(n, err, XF_ERR_INVALID, "X is %s but its pool holds %s", xf_dtype_name(x->dtype),
                          t->strings ? "strings" : "integers");
    int64_t rows = rank == 2 ? x->shape.dims[0] : 1, len = x->shape.dims[rank - 1], numel = xf_tensor_numel(x);
    xf_shape ys = rank == 2 ? (xf_shape){2, {rows, t->cols}} : (xf_shape){1, {t->cols}};
    /* the columns come from ngram_indexes' largest, not from the file's size */
    double bytes = (double)rows * (double)t->cols * (double)sizeof(float);
    if (max_bytes && bytes > (double)max_bytes)
        return xf_ml_fail(n, err, XF_ERR_LIMIT,
                          "its output of %lld x %lld floats is over the session's limit of %zu "
                          "bytes per tensor",
                          (long long)rows, (long long)t->cols, max_bytes);
    xf_tensor *y = xf_tensor_create(XF_DT_FLOAT, &ys);
    int64_t *items = malloc(sizeof *items * (size_t)(numel + 1));
    if (!y || !items) {
        xf_tensor_release(y);
        free(items);
        return xf_error_set(err, XF_ERR_NOMEM, "out of memory");
    }
    for (int64_t i = 0; i < numel; i++)
        items[i] = !str ? xf_rt_load_i64(x->dtype, x->data, i)
                        : string_number(t, x->strings && x->strings[i] ? x->strings[i] : "");
    float *yv = y->data;
    for (int64_t r = 0; r < rows; r++) {
        float *row = yv + r * t->cols;
        count_row(t, items + r * len, len, row);
        for (int64_t c = 0; c < t->cols && t->mode != TF; c++)
            row[c] = t->mode == IDF ? (row[c] > 0 ? (t->weights ? (float)t->weights[c] : 1.0f) : 0.0f)
                                    : row[c] * (t->weights ? (float)t->weights[c] : 1.0f);
    }
    free(items);
    out[0] = y;
    return XF_OK;
}
