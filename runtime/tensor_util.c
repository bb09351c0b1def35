/* Test and checking helpers: deterministic random tensors and the
 * ONNX-style tolerance comparison. */
#include "xf_rt_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* splitmix64: tiny, well mixed, and the same on every platform */
static uint64_t next_random(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

xf_tensor *xf_tensor_random(xf_dtype dtype, const xf_shape *shape, uint64_t seed)
{
    return xf_tensor_random_ints(dtype, shape, seed, 0, 10);
}

xf_tensor *xf_tensor_random_ints(xf_dtype dtype, const xf_shape *shape, uint64_t seed, int64_t lo, int64_t hi)
{
    /* the float8 and float4 formats too: the values rounded to them */
    const uint32_t floats = XF_DTM_FLOATS | XF_DTM_FLOAT8 | XF_DTM(XF_DT_FLOAT8E8M0) | XF_DTM(XF_DT_FLOAT4E2M1);
    bool floating = (unsigned)dtype < 32 && (floats & XF_DTM(dtype)) != 0;
    if (!floating && !xf_rt_is_integral(dtype) && dtype != XF_DT_STRING)
        return NULL;
    xf_tensor *t = xf_tensor_create(dtype, shape);
    if (!t)
        return NULL;
    uint64_t state = seed;
    int64_t numel = xf_tensor_numel(t);
    for (int64_t i = 0; i < numel; i++) {
        uint64_t r = next_random(&state);
        char digits[24];
        if (dtype == XF_DT_STRING) { /* the integers' decimal forms */
            snprintf(digits, sizeof digits, "%lld", (long long)(lo + (int64_t)(r % (uint64_t)(hi > lo ? hi - lo : 1))));
            if (!(t->strings[i] = strdup(digits))) {
                xf_tensor_release(t);
                return NULL;
            }
        } else if (floating)
            xf_rt_store_f64(dtype, t->data, i, (double)(r >> 11) * 0x1p-52 - 1.0);
        else
            xf_rt_store_i64(dtype, t->data, i, dtype == XF_DT_BOOL && hi - lo > 2 ? (int64_t)(r % 2)
                                                                     : lo + (int64_t)(r % (uint64_t)(hi > lo ? hi - lo : 1)));
    }
    return t;
}

double xf_tensor_max_abs(const xf_tensor *t)
{
    double m = 0.0;
    for (int64_t i = 0; i < t->n_items; i++) { /* a sequence's or optional's entries */
        double x = xf_tensor_max_abs(t->items[i]);
        m = x > m ? x : m;
    }
    const uint32_t numbers = XF_DTM_NUMERIC | XF_DTM_FLOAT8 | XF_DTM(XF_DT_FLOAT8E8M0) | XF_DTM_PACKED;
    if (xf_tensor_is_container(t) || (unsigned)t->dtype >= 32 || !(numbers & XF_DTM(t->dtype)))
        return m;
    int64_t numel = xf_tensor_numel(t);
    for (int64_t i = 0; i < numel; i++) {
        double x = fabs(xf_rt_load_f64(t->dtype, t->data, i));
        m = x > m ? x : m;
    }
    return m;
}

xf_tensor *xf_tensor_as_float(const xf_tensor *t, xf_dtype to)
{
    if (xf_tensor_is_container(t) || !(XF_DTM_FLOATS & XF_DTM(t->dtype)) || !(XF_DTM_FLOATS & XF_DTM(to)))
        return NULL;
    xf_tensor *r = xf_tensor_create(to, &t->shape);
    int64_t numel = xf_tensor_numel(t);
    for (int64_t i = 0; r && i < numel; i++)
        xf_rt_store_f64(to, r->data, i, xf_rt_load_f64(t->dtype, t->data, i));
    return r;
}

/* Sequences, optionals and maps: the same kind and length, and item by
 * item (a map's keys, then its values). */
static xf_status compare_sequences(const xf_tensor *a, const xf_tensor *b, double atol, double rtol, double *max_abs,
                                   double *max_rel, bool *ok, xf_error *err)
{
    double worst_abs = 0.0, worst_rel = 0.0;
    *ok = false;
    if (a->is_sequence != b->is_sequence || a->is_optional != b->is_optional || a->is_map != b->is_map ||
        a->n_items != b->n_items)
        return xf_error_set(err, XF_ERR_INVALID, "a %s of %lld entries vs a %s of %lld",
                            xf_kind_name(xf_tensor_kind(a)), (long long)a->n_items, xf_kind_name(xf_tensor_kind(b)),
                            (long long)b->n_items);
    bool all = true;
    for (int64_t i = 0; i < a->n_items; i++) {
        double ma = 0, mr = 0;
        bool one;
        xf_status st = xf_tensor_compare(a->items[i], b->items[i], atol, rtol, &ma, &mr, &one, err);
        if (st != XF_OK) {
            xf_error_prefix(err, "entry %lld", (long long)i);
            return st;
        }
        all &= one;
        worst_abs = ma > worst_abs ? ma : worst_abs;
        worst_rel = mr > worst_rel ? mr : worst_rel;
    }
    if (max_abs)
        *max_abs = worst_abs;
    if (max_rel)
        *max_rel = worst_rel;
    *ok = all;
    return XF_OK;
}

xf_status xf_tensor_compare(const xf_tensor *a, const xf_tensor *b, double atol, double rtol,
                            double *max_abs, double *max_rel, bool *ok, xf_error *err)
{
    if (xf_tensor_is_container(a) || xf_tensor_is_container(b))
        return compare_sequences(a, b, atol, rtol, max_abs, max_rel, ok, err);
    double worst_abs = 0.0, worst_rel = 0.0;
    *ok = false;
    if (max_abs)
        *max_abs = INFINITY;
    if (max_rel)
        *max_rel = INFINITY;
    char sa[128], sb[128];
    if (a->dtype != b->dtype)
        return xf_error_set(err, XF_ERR_INVALID, "dtypes differ: %s vs %s", xf_dtype_name(a->dtype),
                            xf_dtype_name(b->dtype));
    if (!xf_shape_equal(&a->shape, &b->shape))
        return xf_error_set(err, XF_ERR_INVALID, "shapes differ: %s vs %s", xf_shape_str(&a->shape, sa, sizeof sa),
                            xf_shape_str(&b->shape, sb, sizeof sb));
    if (a->dtype == XF_DT_STRING) { /* equal or not */
        int64_t numel = xf_tensor_numel(a), differ = 0;
        for (int64_t i = 0; i < numel; i++) {
            const char *x = a->strings && a->strings[i] ? a->strings[i] : "";
            const char *y = b->strings && b->strings[i] ? b->strings[i] : "";
            differ += strcmp(x, y) != 0;
        }
        if (max_abs)
            *max_abs = differ ? INFINITY : 0;
        if (max_rel)
            *max_rel = differ ? INFINITY : 0;
        *ok = differ == 0;
        return XF_OK;
    }
    if ((unsigned)a->dtype >= 32 ||
        !((XF_DTM_NUMERIC | XF_DTM_FLOAT8 | XF_DTM(XF_DT_FLOAT8E8M0) | XF_DTM_PACKED | XF_DTM(XF_DT_BOOL)) &
          XF_DTM(a->dtype)))
        return xf_error_set(err, XF_ERR_INVALID, "cannot compare tensors of type %s", xf_dtype_name(a->dtype));
    bool all = true;
    int64_t numel = xf_tensor_numel(a);
    for (int64_t i = 0; i < numel; i++) {
        double x = xf_rt_load_f64(a->dtype, a->data, i), y = xf_rt_load_f64(b->dtype, b->data, i);
        if (x == y || (isnan(x) && isnan(y)))
            continue;
        /* NaN against a number, or an infinity against anything else, is
         * never close (rtol * inf would otherwise accept it) */
        bool special = !isfinite(x) || !isfinite(y);
        double diff = special ? INFINITY : fabs(x - y);
        double rel = y != 0 ? diff / fabs(y) : INFINITY;
        all &= !special && diff <= atol + rtol * fabs(y);
        worst_abs = diff > worst_abs ? diff : worst_abs;
        worst_rel = rel > worst_rel ? rel : worst_rel;
    }
    if (max_abs)
        *max_abs = worst_abs;
    if (max_rel)
        *max_rel = worst_rel;
    *ok = all;
    return XF_OK;
}
