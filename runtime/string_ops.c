/* ONNX's string ops of opset 20 that the host backends run beside
 * ONNX-ML's (ml_ops.c dispatches them; the session holds strings on the
 * host): StringConcat (elementwise, broadcasting) and StringSplit (as
 * Python's str.split: without a delimiter, or with an empty one, on runs
 * of whitespace with none of it kept; with one, every occurrence; at most
 * maxsplit splits; the parts padded with "" to the longest row, their
 * counts beside). */
#include "ml_ops.h"

#include <stdlib.h>
#include <string.h>

static const char *str_at(const xf_tensor *t, int64_t i) { return t->strings && t->strings[i] ? t->strings[i] : ""; }

xf_status xf_str_concat(const xf_node *n, const xf_tensor *x, const xf_tensor *y, xf_tensor **out, xf_error *err)
{
    if (x->dtype != XF_DT_STRING || y->dtype != XF_DT_STRING)
        return xf_ml_fail(n, err, XF_ERR_INVALID, "takes two tensors of strings, not %s and %s",
                          xf_dtype_name(x->dtype), xf_dtype_name(y->dtype));
    int nd = x->shape.ndim > y->shape.ndim ? x->shape.ndim : y->shape.ndim;
    xf_shape s = {.ndim = nd};
    int64_t sx[XF_MAX_DIMS], sy[XF_MAX_DIMS]; /* strides, 0 along broadcast dims */
    int64_t ax = 1, ay = 1;
    for (int d = nd - 1; d >= 0; d--) {
        int ix = d - (nd - x->shape.ndim), iy = d - (nd - y->shape.ndim);
        int64_t dx = ix >= 0 ? x->shape.dims[ix] : 1, dy = iy >= 0 ? y->shape.dims[iy] : 1;
        if (dx != dy && dx != 1 && dy != 1)
            return xf_ml_fail(n, err, XF_ERR_INVALID, "shapes do not broadcast (dims %lld and %lld)", (long long)dx,
                              (long long)dy);
        s.dims[d] = dx == 1 ? dy : dx;
        sx[d] = dx == 1 ? 0 : ax;
        sy[d] = dy == 1 ? 0 : ay;
        ax *= dx;
        ay *= dy;
    }
    xf_tensor *z = xf_tensor_create(XF_DT_STRING, &s);
    if (!z)
        return xf_error_set(err, XF_ERR_NOMEM, "out of memory");
    int64_t numel = xf_tensor_numel(z), coord[XF_MAX_DIMS] = {0}, ox = 0, oy = 0;
    for (int64_t i = 0; i < numel; i++) {
        const char *a = str_at(x, ox), *b = str_at(y, oy);
        size_t la = strlen(a), lb = strlen(b);
        if (!(z->strings[i] = malloc(la + lb + 1))) {
            xf_tensor_release(z);
            return xf_error_set(err, XF_ERR_NOMEM, "out of memory");
        }
        memcpy(z->strings[i], a, la);
        memcpy(z->strings[i] + la, b, lb + 1);
        for (int d = nd - 1; d >= 0; d--) { /* the next coordinate, offsets carried along */
            ox += sx[d];
            oy += sy[d];
            if (++coord[d] < s.dims[d])
                break;
            ox -= sx[d] * s.dims[d];
            oy -= sy[d] * s.dims[d];
            coord[d] = 0;
        }
    }
    out[0] = z;
    return XF_OK;
}

/* Python's whitespace (ASCII, and the separators 0x1c-0x1f). */
static bool space(unsigned char c) { return c == ' ' || (c >= '\t' && c <= '\r') || (c >= 0x1c && c <= 0x1f); }

/* The parts of s: their starts and lengths (NULL: counted only); how many. */
static int64_t split(const char *s, const char *delim, int64_t maxsplit, const char **start, size_t *len)
{
    int64_t k = 0;
    size_t dl = delim ? strlen(delim) : 0;
    if (dl) {
        for (const char *p = s;; k++) {
            const char *hit = maxsplit < 0 || k < maxsplit ? strstr(p, delim) : NULL;
            size_t l = hit ? (size_t)(hit - p) : strlen(p);
            if (start)
                start[k] = p, len[k] = l;
            if (!hit)
                return k + 1;
            p = hit + dl;
        }
    }
    const char *p = s;
    while (*p && space((unsigned char)*p))
        p++;
    while (*p) {
        const char *e = p;
        if (maxsplit >= 0 && k >= maxsplit) { /* the rest, as it is */
            e = p + strlen(p);
        } else {
            while (*e && !space((unsigned char)*e))
                e++;
        }
        if (start)
            start[k] = p, len[k] = (size_t)(e - p);
        k++;
        p = e;
        while (*p && space((unsigned char)*p))
            p++;
    }
    return k;
}

xf_status xf_str_split(const xf_node *n, const xf_tensor *x, xf_tensor **out, xf_error *err)
{
    if (x->dtype != XF_DT_STRING || x->shape.ndim >= XF_MAX_DIMS)
        return xf_ml_fail(n, err, XF_ERR_INVALID, "takes a tensor of strings of rank below %d", XF_MAX_DIMS);
    const char *delim = xf_ml_string(n, "delimiter", NULL);
    int64_t nm;
    const int64_t *ms = xf_ml_ints(n, "maxsplit", &nm);
    int64_t maxsplit = nm == 1 ? ms[0] : -1, numel = xf_tensor_numel(x), widest = 0;
    xf_tensor *counts = xf_tensor_create(XF_DT_INT64, &x->shape);
    if (!counts)
        return xf_error_set(err, XF_ERR_NOMEM, "out of memory");
    for (int64_t i = 0; i < numel; i++) {
        int64_t c = split(str_at(x, i), delim, maxsplit, NULL, NULL);
        ((int64_t *)counts->data)[i] = c;
        widest = c > widest ? c : widest;
    }
    xf_shape s = x->shape;
    s.dims[s.ndim++] = widest;
    xf_tensor *y = xf_tensor_create(XF_DT_STRING, &s);
    const char **start = malloc(sizeof *start * (size_t)(widest + 1));
    size_t *len = malloc(sizeof *len * (size_t)(widest + 1));
    xf_status st = y && start && len ? XF_OK : xf_error_set(err, XF_ERR_NOMEM, "out of memory");
    for (int64_t i = 0; st == XF_OK && i < numel; i++) {
        int64_t c = split(str_at(x, i), delim, maxsplit, start, len);
        for (int64_t j = 0; j < widest && st == XF_OK; j++) {
            size_t l = j < c ? len[j] : 0;
            char *part = malloc(l + 1);
            if (!part) {
                st = xf_error_set(err, XF_ERR_NOMEM, "out of memory");
                break;
            }
            if (l)
                memcpy(part, start[j], l);
            part[l] = '\0';
            y->strings[i * widest + j] = part;
        }
    }
    free(start);
    free(len);
    if (st != XF_OK) {
        xf_tensor_release(y);
        xf_tensor_release(counts);
        return st;
    }
    out[0] = y;
    out[1] = counts;
    return XF_OK;
}
