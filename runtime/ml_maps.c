/* ONNX-ML's ops on maps (xf_map_create values), run on the host as ONNX
 * Runtime runs them: DictVectorizer and CastMap read a map (a graph input
 * of map type, as scikit-learn's DictVectorizer pipelines take one) into a
 * tensor [1, N]; ZipMap makes a sequence of maps from rows of scores. */
#include "ml_ops.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ DictVectorizer */

/* The vocabulary (string_vocabulary or int64_vocabulary; an entry may be
 * there more than once, each place then taking the value) as its places
 * in key order, so that each map entry is looked up by bisection. */
typedef struct place {
    const char *word; /* string keys; NULL for int64 keys */
    int64_t key, at;
} place;

struct xf_ml_dict {
    const xf_node *node;
    bool strings;
    int64_t n;
    place *order;
};

/* Compares string key w (NULL: int64 key k) with place p. */
static int key_cmp(const char *w, int64_t k, const place *p)
{
    return w ? strcmp(w, p->word) : (k > p->key) - (k < p->key);
}

static int place_cmp(const void *a, const void *b)
{
    const place *x = a, *y = b;
    int c = key_cmp(x->word, x->key, y);
    return c ? c : (x->at > y->at) - (x->at < y->at);
}

xf_status xf_ml_dict_create(const xf_node *n, xf_ml_dict **out, xf_error *err)
{
    *out = NULL;
    const xf_opaque_strings *words = xf_opaque_find_strings(n->opaque, "string_vocabulary");
    int64_t n_ints;
    const int64_t *ints = xf_ml_ints(n, "int64_vocabulary", &n_ints);
    if ((words && words->n > 0) == (ints != NULL && n_ints > 0))
        return xf_ml_fail(n, err, XF_ERR_INVALID, "needs one of string_vocabulary and int64_vocabulary, not %s",
                          words && words->n > 0 ? "both" : "neither");
    xf_ml_dict *d = calloc(1, sizeof *d);
    if (!d)
        return xf_error_set(err, XF_ERR_NOMEM, "out of memory");
    d->node = n;
    d->strings = words && words->n > 0;
    d->n = d->strings ? words->n : n_ints;
    if (!(d->order = malloc(sizeof *d->order * (size_t)d->n))) {
        free(d);
        return xf_error_set(err, XF_ERR_NOMEM, "out of memory");
    }
    for (int64_t i = 0; i < d->n; i++)
        d->order[i] = (place){d->strings ? words->v[i] : NULL, d->strings ? 0 : ints[i], i};
    qsort(d->order, (size_t)d->n, sizeof *d->order, place_cmp);
    *out = d;
    return XF_OK;
}

void xf_ml_dict_free(xf_ml_dict *d)
{
    if (!d)
        return;
    free(d->order);
    free(d);
}

/* Checks that in is a map (of key type `key` when not UNDEFINED); its
 * keys and values in *keys and *values. */
static xf_status map_input(const xf_node *n, const xf_tensor *in, xf_dtype key, const xf_tensor **keys,
                           const xf_tensor **values, xf_error *err)
{
    if (!in || !in->is_map)
        return xf_ml_fail(n, err, XF_ERR_INVALID, "takes a map, not a%s %s", in && in->is_optional ? "n" : "",
                          in ? xf_kind_name(xf_tensor_kind(in)) : "missing input");
    *keys = in->items[0];
    *values = in->items[1];
    if (key != XF_DT_UNDEFINED && (*keys)->dtype != key)
        return xf_ml_fail(n, err, XF_ERR_INVALID, "takes a map of %s keys, not of %s keys", xf_dtype_name(key),
                          xf_dtype_name((*keys)->dtype));
    return XF_OK;
}

/* Y [1, vocabulary] of the map's value type: each place the value of its
 * key in the map, 0 (or "") where the map lacks it; keys not in the
 * vocabulary are left out. */
xf_status xf_ml_dict_run(const xf_ml_dict *d, const xf_tensor *in, xf_tensor **out, xf_error *err)
{
    const xf_tensor *keys, *values;
    xf_status st = map_input(d->node, in, d->strings ? XF_DT_STRING : XF_DT_INT64, &keys, &values, err);
    if (st != XF_OK)
        return st;
    xf_tensor *y = xf_tensor_create(values->dtype, &(xf_shape){2, {1, d->n}});
    if (!y)
        return xf_error_set(err, XF_ERR_NOMEM, "out of memory");
    size_t es = xf_dtype_size(values->dtype);
    int64_t m = xf_tensor_numel(keys);
    for (int64_t e = 0; e < m && st == XF_OK; e++) {
        const char *w = d->strings ? (keys->strings[e] ? keys->strings[e] : "") : NULL;
        int64_t k = d->strings ? 0 : ((const int64_t *)keys->data)[e];
        int64_t lo = 0, hi = d->n; /* the first place not below the key */
        while (lo < hi) {
            int64_t mid = lo + (hi - lo) / 2;
            if (key_cmp(w, k, &d->order[mid]) > 0)
                lo = mid + 1;
            else
                hi = mid;
        }
        for (; lo < d->n && key_cmp(w, k, &d->order[lo]) == 0 && st == XF_OK; lo++) {
            int64_t at = d->order[lo].at;
            if (values->dtype != XF_DT_STRING)
                memcpy((char *)y->data + (size_t)at * es, (const char *)values->data + (size_t)e * es, es);
            else if (values->strings[e] && !(y->strings[at] = strdup(values->strings[e])))
                st = xf_error_set(err, XF_ERR_NOMEM, "out of memory");
        }
    }
    for (int64_t i = 0; i < d->n && st == XF_OK && values->dtype == XF_DT_STRING; i++)
        if (!y->strings[i] && !(y->strings[i] = strdup("")))
            st = xf_error_set(err, XF_ERR_NOMEM, "out of memory");
    if (st != XF_OK) {
        xf_tensor_release(y);
        return st;
    }
    out[0] = y;
    return XF_OK;
}

/* ------------------------------------------------------------ CastMap */

enum { TO_FLOAT, TO_STRING, TO_INT64 };

static int named(const char *s, const char *const *names, int n)
{
    for (int i = 0; i < n; i++)
        if (strcmp(s, names[i]) == 0)
            return i;
    return -1;
}

static const char *const cast_names[] = {"TO_FLOAT", "TO_STRING", "TO_INT64"};
static const char *const form_names[] = {"DENSE", "SPARSE"};

xf_status xf_ml_cast_map_check(const xf_node *n, xf_error *err)
{
    const char *to = xf_ml_string(n, "cast_to", "TO_FLOAT"), *form = xf_ml_string(n, "map_form", "DENSE");
    int64_t nm;
    const int64_t *max_map = xf_ml_ints(n, "max_map", &nm);
    if (named(to, cast_names, 3) < 0)
        return xf_ml_fail(n, err, XF_ERR_INVALID, "cast_to '%s' is none of TO_FLOAT, TO_STRING, TO_INT64", to);
    if (named(form, form_names, 2) < 0)
        return xf_ml_fail(n, err, XF_ERR_INVALID, "map_form '%s' is neither DENSE nor SPARSE", form);
    if (named(form, form_names, 2) == 1 && (nm == 1 ? max_map[0] : 1) <= 0)
        return xf_ml_fail(n, err, XF_ERR_INVALID, "max_map is %lld; SPARSE needs it positive", (long long)max_map[0]);
    return XF_OK;
}

typedef struct entry {
    int64_t key, at;
} entry;

static int entry_cmp(const void *a, const void *b)
{
    int64_t x = ((const entry *)a)->key, y = ((const entry *)b)->key;
    return (x > y) - (x < y);
}

/* Map value e of values cast as `to` into element i of y. */
static xf_status cast_one(const xf_node *n, const xf_tensor *values, int64_t e, int64_t key, int to, xf_tensor *y,
                          int64_t i, xf_error *err)
{
    char buf[64];
    if (values->dtype == XF_DT_STRING) {
        const char *s = values->strings[e] ? values->strings[e] : "";
        char *end;
        errno = 0;
        if (to == TO_STRING) {
            y->strings[i] = strdup(s);
        } else if (to == TO_FLOAT) {
            ((float *)y->data)[i] = strtof(s, &end);
        } else {
            ((int64_t *)y->data)[i] = strtoll(s, &end, 10);
        }
        if (to != TO_STRING && (end == s || errno == ERANGE))
            return xf_ml_fail(n, err, XF_ERR_INVALID, "the value '%s' of key %lld is %s", s, (long long)key,
                              end == s ? (to == TO_FLOAT ? "not a number" : "not an integer") : "out of range");
    } else {
        double v = xf_tensor_get_f64(values, e);
        if (to == TO_STRING) {
            snprintf(buf, sizeof buf, "%f", (float)v);
            y->strings[i] = strdup(buf);
        } else if (to == TO_FLOAT) {
            ((float *)y->data)[i] = (float)v;
        } else {
            ((int64_t *)y->data)[i] = values->dtype == XF_DT_INT64 ? xf_tensor_get_i64(values, e) : (int64_t)(float)v;
        }
    }
    return to == TO_STRING && !y->strings[i] ? xf_error_set(err, XF_ERR_NOMEM, "out of memory") : XF_OK;
}

/* Y [1, N] of the map's values in key order cast as cast_to says: DENSE
 * every entry (N of them); SPARSE places 0 .. max_map - 1, each the value
 * of that key or the pad (0; "0.f" for strings, as ONNX Runtime writes
 * it), keys at max_map or beyond left out, a negative key refused. */
xf_status xf_ml_cast_map_run(const xf_node *n, const xf_tensor *in, xf_tensor **out, xf_error *err)
{
    const xf_tensor *keys, *values;
    xf_status st = map_input(n, in, XF_DT_INT64, &keys, &values, err);
    if (st != XF_OK)
        return st;
    int to = named(xf_ml_string(n, "cast_to", "TO_FLOAT"), cast_names, 3);
    bool sparse = named(xf_ml_string(n, "map_form", "DENSE"), form_names, 2) == 1;
    int64_t nm, m = xf_tensor_numel(keys);
    const int64_t *mm = xf_ml_ints(n, "max_map", &nm);
    int64_t width = sparse ? (nm == 1 ? mm[0] : 1) : m;
    if (values->dtype != XF_DT_STRING && xf_dtype_size(values->dtype) == 0)
        return xf_ml_fail(n, err, XF_ERR_INVALID, "takes a map of numbers or strings");
    entry *order = malloc(sizeof *order * (size_t)(m > 0 ? m : 1));
    static const xf_dtype types[] = {XF_DT_FLOAT, XF_DT_STRING, XF_DT_INT64};
    xf_tensor *y = order ? xf_tensor_create(types[to], &(xf_shape){2, {1, width}}) : NULL;
    if (!y) {
        free(order);
        return xf_error_set(err, XF_ERR_NOMEM, "out of memory");
    }
    for (int64_t e = 0; e < m; e++)
        order[e] = (entry){((const int64_t *)keys->data)[e], e};
    qsort(order, (size_t)m, sizeof *order, entry_cmp);
    if (sparse && m > 0 && order[0].key < 0)
        st = xf_ml_fail(n, err, XF_ERR_INVALID, "the map has the negative key %lld; SPARSE takes keys from 0",
                        (long long)order[0].key);
    int64_t e = 0;
    for (int64_t i = 0; i < width && st == XF_OK; i++) {
        if (!sparse || (e < m && order[e].key == i)) {
            st = cast_one(n, values, order[e].at, order[e].key, to, y, i, err);
            e++;
        } else if (to == TO_STRING && !(y->strings[i] = strdup("0.f"))) {
            st = xf_error_set(err, XF_ERR_NOMEM, "out of memory");
        }
    }
    free(order);
    if (st != XF_OK) {
        xf_tensor_release(y);
        return st;
    }
    out[0] = y;
    return XF_OK;
}

/* ------------------------------------------------------------ ZipMap */

/* Each row of scores X [N, C] (or [C]) as a map from the C class labels
 * to the row's scores, a sequence of N maps. */
xf_status xf_ml_zip_map(const xf_node *n, const xf_tensor *x, xf_tensor **out, xf_error *err)
{
    xf_ml_labels l = xf_ml_labels_of(n, "classlabels_int64s");
    int64_t nl = l.n;
    if (x->dtype != XF_DT_FLOAT || x->shape.ndim < 1 || x->shape.ndim > 2 || x->shape.dims[x->shape.ndim - 1] != nl)
        return xf_ml_fail(n, err, XF_ERR_INVALID, "takes float scores of rank 1 or 2 with one column per each of its "
                          "%lld class labels", (long long)nl);
    int64_t rows = x->shape.ndim == 1 ? 1 : x->shape.dims[0];
    xf_tensor *keys = xf_ml_label_tensor(&l, nl, err);
    xf_tensor **maps = calloc((size_t)rows + 1, sizeof *maps);
    xf_status st = keys && maps ? XF_OK : xf_error_set(err, XF_ERR_NOMEM, "out of memory");
    for (int64_t k = 0; st == XF_OK && k < nl; k++)
        if (!xf_ml_set_label(keys, k, &l, k))
            st = xf_error_set(err, XF_ERR_NOMEM, "out of memory");
    for (int64_t r = 0; st == XF_OK && r < rows; r++) {
        xf_tensor *values = xf_tensor_from_data(XF_DT_FLOAT, &(xf_shape){1, {nl}}, (const float *)x->data + r * nl);
        maps[r] = values ? xf_map_create(keys, values) : NULL;
        xf_tensor_release(values);
        if (!maps[r])
            st = xf_error_set(err, XF_ERR_NOMEM, "out of memory");
    }
    if (st == XF_OK && !(out[0] = xf_sequence_create(XF_DT_FLOAT, rows, maps)))
        st = xf_error_set(err, XF_ERR_NOMEM, "out of memory");
    for (int64_t r = 0; maps && r < rows; r++)
        xf_tensor_release(maps[r]);
    free(maps);
    xf_tensor_release(keys);
    return st;
}
