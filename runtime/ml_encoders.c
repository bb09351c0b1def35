/* ONNX-ML's encoders, which read and write strings as well as numbers:
 * LabelEncoder (opset 1's classes_strings; opsets 2 to 4's keys and
 * values as strings, int64s, floats or tensors, with their defaults),
 * CategoryMapper (strings to int64 and back) and OneHotEncoder (an
 * element's category as a one among zeros, last axis added).  A key is
 * looked up in a sorted copy of the keys (the first of equal keys wins, as
 * in ONNX Runtime's maps; a NaN key matches NaN).  The session holds
 * string inputs and outputs on the host (session.c). */
#include "ml_ops.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A list attribute: strings, integers or reals (of element type dtype). */
typedef struct enc_list {
    enum { LIST_NONE, LIST_STRINGS, LIST_INTS, LIST_REALS } kind;
    int64_t n;
    char *const *s;
    const int64_t *i;
    const double *r;
    xf_dtype dtype;
} enc_list;

/* The list attribute called name (a tensor, strings, int64s or floats). */
static enc_list list_named(const xf_node *n, const char *name, xf_dtype ints_type, xf_dtype reals_type)
{
    enc_list l = {LIST_NONE, 0, NULL, NULL, NULL, XF_DT_UNDEFINED};
    const xf_opaque_strings *s = xf_opaque_find_strings(n->opaque, name);
    const xf_opaque_ints *i = xf_opaque_find_ints(n->opaque, name);
    const xf_opaque_reals *r = xf_opaque_find_reals(n->opaque, name);
    if (s)
        l = (enc_list){LIST_STRINGS, s->n, s->v, NULL, NULL, XF_DT_STRING};
    else if (i)
        l = (enc_list){LIST_INTS, i->n, NULL, i->v, NULL, i->dtype ? i->dtype : ints_type};
    else if (r)
        l = (enc_list){LIST_REALS, r->n, NULL, NULL, r->v, r->dtype ? r->dtype : reals_type};
    return l;
}

/* LabelEncoder's keys or values ("keys", "values"): the tensor form, else
 * the first list form given. */
static enc_list list_of(const xf_node *n, const char *base)
{
    char name[32];
    snprintf(name, sizeof name, "%s_tensor", base);
    enc_list l = list_named(n, name, XF_DT_INT64, XF_DT_FLOAT);
    static const char *const forms[] = {"strings", "int64s", "floats"};
    for (int f = 0; f < 3 && l.kind == LIST_NONE; f++) {
        snprintf(name, sizeof name, "%s_%s", base, forms[f]);
        l = list_named(n, name, XF_DT_INT64, XF_DT_FLOAT);
    }
    return l;
}

typedef struct enc_key {
    const char *s;
    int64_t i;
    double r;
    int64_t at;
} enc_key;

static int by_string(const void *pa, const void *pb)
{
    const enc_key *a = pa, *b = pb;
    int c = strcmp(a->s, b->s);
    return c ? c : (a->at > b->at) - (a->at < b->at);
}

static int by_int(const void *pa, const void *pb)
{
    const enc_key *a = pa, *b = pb;
    return a->i != b->i ? (a->i > b->i) - (a->i < b->i) : (a->at > b->at) - (a->at < b->at);
}

static int by_real(const void *pa, const void *pb) /* NaN last */
{
    const enc_key *a = pa, *b = pb;
    bool na = isnan(a->r), nb = isnan(b->r);
    if (na != nb || (!na && a->r != b->r))
        return na != nb ? (na ? 1 : -1) : a->r < b->r ? -1 : 1;
    return (a->at > b->at) - (a->at < b->at);
}

/* The keys sorted for lookups (NULL when out of memory). */
static enc_key *sorted_keys(const enc_list *k)
{
    enc_key *keys = malloc(sizeof *keys * (size_t)(k->n + 1));
    for (int64_t j = 0; keys && j < k->n; j++)
        keys[j] = (enc_key){k->kind == LIST_STRINGS ? k->s[j] : NULL, k->kind == LIST_INTS ? k->i[j] : 0,
                            k->kind == LIST_REALS ? k->r[j] : 0, j};
    if (keys)
        qsort(keys, (size_t)k->n, sizeof *keys,
              k->kind == LIST_STRINGS ? by_string : k->kind == LIST_INTS ? by_int : by_real);
    return keys;
}

/* Where element e of x is among the keys (its position in the list), or -1. */
static int64_t find(const enc_list *k, const enc_key *keys, const xf_tensor *x, int64_t e)
{
    enc_key probe = {x->dtype == XF_DT_STRING ? (x->strings[e] ? x->strings[e] : "") : NULL, 0, 0, -1};
    if (k->kind == LIST_INTS)
        probe.i = xf_tensor_get_i64(x, e);
    else if (k->kind == LIST_REALS)
        probe.r = xf_tensor_get_f64(x, e);
    int (*cmp)(const void *, const void *) = k->kind == LIST_STRINGS ? by_string : k->kind == LIST_INTS ? by_int
                                                                                                       : by_real;
    int64_t lo = 0, hi = k->n;
    while (lo < hi) { /* the first key not before the probe (whose position, -1, comes first) */
        int64_t mid = lo + (hi - lo) / 2;
        if (cmp(&keys[mid], &probe) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo >= k->n)
        return -1;
    enc_key found = keys[lo];
    found.at = -1;
    return cmp(&found, &probe) == 0 ? keys[lo].at : -1;
}

/* Whether x's type fits keys of that kind. */
static bool fits(const enc_list *k, xf_dtype t)
{
    bool real = t == XF_DT_FLOAT || t == XF_DT_DOUBLE;
    return k->kind == LIST_STRINGS ? t == XF_DT_STRING
           : k->kind == LIST_INTS  ? xf_dtype_size(t) > 0 && !real && t != XF_DT_STRING
                                   : real;
}

/* Sets element e of y (of the values' kind) to value j of vals, or to
 * the default def (a one-value list) when j is -1. */
static bool put(xf_tensor *y, int64_t e, const enc_list *vals, int64_t j, const enc_list *def)
{
    const enc_list *from = j >= 0 ? vals : def;
    int64_t at = j >= 0 ? j : 0;
    if (from->kind == LIST_STRINGS) {
        free(y->strings[e]);
        return (y->strings[e] = strdup(from->s[at])) != NULL;
    }
    if (from->kind == LIST_INTS)
        xf_rt_store_i64(y->dtype, y->data, e, from->i[at]);
    else
        xf_rt_store_f64(y->dtype, y->data, e, from->r[at]);
    return true;
}

/* The end of a run: the sorted keys freed, y out[0] or released. */
static xf_status finish(xf_status st, enc_key *keys, xf_tensor *y, xf_tensor **out)
{
    free(keys);
    if (st != XF_OK)
        xf_tensor_release(y);
    else
        out[0] = y;
    return st;
}

/* ------------------------------------------------------------ LabelEncoder and CategoryMapper */

/* The keys, values and default of a LabelEncoder or CategoryMapper node
 * reading x: CategoryMapper's pairs and opset 1's classes turn either way
 * by x's type (opset 1: a class's value is its position, an integer
 * names the class at that position). */
typedef struct enc_map {
    enc_list keys, vals, def;
    bool keys_are_positions, vals_are_positions;
    double def_real;
    int64_t def_int;
    char *def_str[1];
} enc_map;

static xf_status map_of(const xf_node *n, bool category, const xf_tensor *x, enc_map *m, xf_error *err)
{
    memset(m, 0, sizeof *m);
    bool text = x->dtype == XF_DT_STRING;
    int64_t nd;
    const int64_t *di = xf_ml_ints(n, "default_int64", &nd);
    m->def_int = nd == 1 ? di[0] : -1;
    m->def_str[0] = (char *)xf_ml_string(n, "default_string", "_Unused");
    enc_list def_int = {LIST_INTS, 1, NULL, &m->def_int, NULL, XF_DT_INT64};
    enc_list def_str = {LIST_STRINGS, 1, m->def_str, NULL, NULL, XF_DT_STRING};
    enc_list strs = list_named(n, category ? "cats_strings" : "classes_strings", XF_DT_INT64, XF_DT_FLOAT);
    if (category) {
        enc_list ints = list_named(n, "cats_int64s", XF_DT_INT64, XF_DT_FLOAT);
        if (strs.kind != LIST_STRINGS || ints.kind != LIST_INTS || ints.n != strs.n)
            return xf_ml_fail(n, err, XF_ERR_INVALID, "needs cats_strings and cats_int64s of one length");
        m->keys = text ? strs : ints;
        m->vals = text ? ints : strs;
        m->def = text ? def_int : def_str;
        return XF_OK;
    }
    if (strs.kind == LIST_STRINGS) { /* opset 1 */
        m->keys = m->vals = strs;
        m->keys_are_positions = !text;
        m->vals_are_positions = text;
        m->def = text ? def_int : def_str;
        return XF_OK;
    }
    m->keys = list_of(n, "keys");
    m->vals = list_of(n, "values");
    if (m->keys.kind == LIST_NONE || m->vals.kind == LIST_NONE || m->keys.n != m->vals.n)
        return xf_ml_fail(n, err, XF_ERR_INVALID, "needs keys and values of one length");
    enc_list dt = list_named(n, "default_tensor", m->vals.dtype, m->vals.dtype);
    if (dt.kind != LIST_NONE) {
        if (dt.kind != m->vals.kind || dt.n != 1)
            return xf_ml_fail(n, err, XF_ERR_INVALID, "default_tensor is not one value of the values' type");
        m->def = dt;
    } else if (m->vals.kind == LIST_STRINGS) {
        m->def = def_str;
    } else if (m->vals.kind == LIST_INTS) {
        m->def = def_int;
    } else {
        const double *df = xf_ml_reals(n, "default_float", &nd);
        m->def_real = nd == 1 ? df[0] : -0.0;
        m->def = (enc_list){LIST_REALS, 1, NULL, NULL, &m->def_real, m->vals.dtype};
    }
    return XF_OK;
}

xf_status xf_ml_encode_map(const xf_node *n, bool category, const xf_tensor *x, xf_tensor **out, xf_error *err)
{
    enc_map m;
    xf_status st = map_of(n, category, x, &m, err);
    if (st != XF_OK)
        return st;
    bool integral = x->dtype != XF_DT_STRING && xf_dtype_size(x->dtype) > 0 && x->dtype != XF_DT_FLOAT &&
                    x->dtype != XF_DT_DOUBLE;
    if (m.keys_are_positions ? !integral : !fits(&m.keys, x->dtype))
        return xf_ml_fail(n, err, XF_ERR_INVALID, "X is %s, which its keys are not", xf_dtype_name(x->dtype));
    xf_tensor *y = xf_tensor_create(m.vals_are_positions ? XF_DT_INT64 : m.vals.dtype, &x->shape);
    enc_key *keys = m.keys_are_positions ? NULL : sorted_keys(&m.keys);
    int64_t numel = xf_tensor_numel(x);
    if (!y || (!m.keys_are_positions && !keys))
        st = xf_error_set(err, XF_ERR_NOMEM, "out of memory");
    for (int64_t e = 0; st == XF_OK && e < numel; e++) {
        int64_t j = m.keys_are_positions ? xf_tensor_get_i64(x, e) : find(&m.keys, keys, x, e);
        j = j >= 0 && j < m.keys.n ? j : -1;
        if (m.vals_are_positions)
            xf_rt_store_i64(y->dtype, y->data, e, j >= 0 ? j : m.def_int);
        else if (!put(y, e, &m.vals, j, &m.def))
            st = xf_error_set(err, XF_ERR_NOMEM, "out of memory");
    }
    return finish(st, keys, y, out);
}

/* ------------------------------------------------------------ OneHotEncoder */

xf_status xf_ml_one_hot(const xf_node *n, const xf_tensor *x, xf_tensor **out, xf_error *err)
{
    enc_list cats = list_named(n, "cats_strings", XF_DT_INT64, XF_DT_FLOAT);
    if (cats.kind == LIST_NONE)
        cats = list_named(n, "cats_int64s", XF_DT_INT64, XF_DT_FLOAT);
    int64_t nz;
    const int64_t *z = xf_ml_ints(n, "zeros", &nz);
    bool zeros = nz != 1 || z[0] != 0;
    bool text = x->dtype == XF_DT_STRING;
    if (cats.kind == LIST_NONE || cats.n < 1 || text != (cats.kind == LIST_STRINGS) ||
        x->shape.ndim >= XF_MAX_DIMS || (!text && !(xf_dtype_size(x->dtype) > 0)))
        return xf_ml_fail(n, err, XF_ERR_INVALID, "needs cats_strings for strings or cats_int64s for numbers, and X "
                          "of rank below %d", XF_MAX_DIMS);
    xf_shape s = x->shape;
    s.dims[s.ndim++] = cats.n;
    xf_tensor *y = xf_tensor_create(XF_DT_FLOAT, &s);
    enc_key *keys = sorted_keys(&cats);
    xf_status st = y && keys ? XF_OK : xf_error_set(err, XF_ERR_NOMEM, "out of memory");
    int64_t numel = xf_tensor_numel(x);
    xf_tensor *as_int = NULL;
    if (st == XF_OK && !text && x->dtype != XF_DT_INT64) { /* numbers are taken as integers */
        xf_shape xs = x->shape;
        if (!(as_int = xf_tensor_create(XF_DT_INT64, &xs)))
            st = xf_error_set(err, XF_ERR_NOMEM, "out of memory");
        for (int64_t e = 0; as_int && e < numel; e++)
            ((int64_t *)as_int->data)[e] = (int64_t)xf_tensor_get_f64(x, e);
    }
    for (int64_t e = 0; st == XF_OK && e < numel; e++) {
        int64_t j = find(&cats, keys, as_int ? as_int : x, e);
        if (j >= 0)
            ((float *)y->data)[e * cats.n + j] = 1.0f;
        else if (!zeros)
            st = xf_ml_fail(n, err, XF_ERR_INVALID, "element %lld is in none of its %lld categories (zeros is 0)",
                            (long long)e, (long long)cats.n);
    }
    xf_tensor_release(as_int);
    return finish(st, keys, y, out);
}
