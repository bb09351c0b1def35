/* ONNX's string ops that the host backends run beside ONNX-ML's
 * (ml_ops.c dispatches them; the session holds strings on the host):
 * StringConcat (elementwise, broadcasting), StringSplit (as Python's
 * str.split: without a delimiter, or with an empty one, on runs of
 * whitespace with none of it kept; with one, every occurrence; at most
 * maxsplit splits; the parts padded with "" to the longest row, their
 * counts beside) and StringNormalizer (stopwords dropped, compared as
 * given or, where is_case_sensitive is 0, in lower case; then LOWER or
 * UPPER, each character as its locale maps it, as ONNX Runtime changes
 * case; nothing left gives one ""; a string not UTF-8 refused). */
#include "ml_ops.h"

#include <locale.h>
#include <stdlib.h>
#include <string.h>
#include <wctype.h>


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
        const char *a = xf_rt_str_at(x, ox), *b = xf_rt_str_at(y, oy);
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
        int64_t c = split(xf_rt_str_at(x, i), delim, maxsplit, NULL, NULL);
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
        int64_t c = split(xf_rt_str_at(x, i), delim, maxsplit, start, len);
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

/* The locale whose case mapping StringNormalizer uses: its `locale`
 * (ONNX Runtime's default en_US.UTF-8) where the system has it, else
 * C.UTF-8, whose mapping is Unicode's simple one as the other locales'
 * (all but Turkish and Azeri's dotted and dotless i); (locale_t)0, ASCII
 * only, where neither is there. */
static locale_t case_locale(const xf_node *n)
{
    locale_t loc = newlocale(LC_CTYPE_MASK, xf_ml_string(n, "locale", "en_US.UTF-8"), (locale_t)0);
    return loc ? loc : newlocale(LC_CTYPE_MASK, "C.UTF-8", (locale_t)0);
}

/* ASCII character c in lower (lower) or upper case, whatever the locale. */
static uint32_t ascii_case(uint32_t c, bool lower)
{
    return lower && c >= 'A' && c <= 'Z' ? c + 32 : !lower && c >= 'a' && c <= 'z' ? c - 32 : c;
}

/* s with each character in lower (lower) or upper case as loc maps it
 * (ASCII alone when loc is 0): a new string; NULL when out of memory or,
 * with *bad set, when s is not UTF-8. */
static char *with_case(const char *s, bool lower, locale_t loc, bool *bad)
{
    size_t len = strlen(s), k = 0;
    bool ascii = true;
    for (size_t i = 0; i < len && ascii; i++)
        ascii = (unsigned char)s[i] < 0x80;
    if (ascii && (!loc || towlower_l('I', loc) == 'i')) { /* a locale with ASCII's case for ASCII: not Turkish */
        char *r = malloc(len + 1);
        for (size_t i = 0; r && i <= len; i++)
            r[i] = (char)ascii_case((unsigned char)s[i], lower);
        return r;
    }
    char *r = malloc(4 * len + 1); /* a character's case may take more bytes (2 -> 3) */
    for (size_t i = 0; r && i < len;) {
        uint32_t c;
        int b = xf_rt_utf8_char(s + i, len - i, &c);
        if (!b) {
            *bad = true;
            free(r);
            return NULL;
        }
        i += (size_t)b;
        if (loc)
            c = (uint32_t)(lower ? towlower_l((wint_t)c, loc) : towupper_l((wint_t)c, loc));
        else
            c = ascii_case(c, lower);
        if (c < 0x80) {
            r[k++] = (char)c;
        } else if (c < 0x800) {
            r[k++] = (char)(0xc0 | c >> 6);
            r[k++] = (char)(0x80 | (c & 0x3f));
        } else if (c < 0x10000) {
            r[k++] = (char)(0xe0 | c >> 12);
            r[k++] = (char)(0x80 | (c >> 6 & 0x3f));
            r[k++] = (char)(0x80 | (c & 0x3f));
        } else {
            r[k++] = (char)(0xf0 | c >> 18);
            r[k++] = (char)(0x80 | (c >> 12 & 0x3f));
            r[k++] = (char)(0x80 | (c >> 6 & 0x3f));
            r[k++] = (char)(0x80 | (c & 0x3f));
        }
    }
    if (r)
        r[k] = '\0';
    return r;
}

/* Whether s (in lower case when not sensitive: low) is one of the n
 * stopwords `stops` (sorted; in lower case when not sensitive). */
static bool stopword(const char *s, const char *low, char *const *stops, int n)
{
    const char *key = low ? low : s;
    return n && bsearch(&key, stops, (size_t)n, sizeof *stops, xf_rt_cmp_strings);
}

/* The stopwords, as given or (not sensitive) in lower case, sorted: an
 * array of n to free with its strings (*lowered says which); NULL with
 * *bad set when one is not UTF-8. */
static char **stop_list(const xf_opaque_strings *stops, bool sensitive, locale_t loc, bool *bad, bool *lowered)
{
    int n = stops ? stops->n : 0;
    char **w = calloc((size_t)n + 1, sizeof *w);
    *lowered = !sensitive;
    for (int k = 0; w && k < n; k++)
        if (!(w[k] = sensitive ? stops->v[k] : with_case(stops->v[k], true, loc, bad))) {
            for (int j = 0; j < k; j++)
                free(w[j]);
            free(w);
            return NULL;
        }
    if (w)
        qsort(w, (size_t)n, sizeof *w, xf_rt_cmp_strings);
    return w;
}

xf_status xf_str_normalize(const xf_node *n, const xf_tensor *x, xf_tensor **out, xf_error *err)
{
    bool matrix = x->shape.ndim == 2;
    if (x->dtype != XF_DT_STRING || (x->shape.ndim != 1 && !(matrix && x->shape.dims[0] == 1)))
        return xf_ml_fail(n, err, XF_ERR_INVALID, "takes strings of shape [C] or [1, C]");
    const char *action = xf_ml_string(n, "case_change_action", "NONE");
    if (strcmp(action, "NONE") != 0 && strcmp(action, "LOWER") != 0 && strcmp(action, "UPPER") != 0)
        return xf_ml_fail(n, err, XF_ERR_INVALID, "case_change_action '%s' is none of NONE, LOWER, UPPER", action);
    int64_t ns;
    const int64_t *cs = xf_ml_ints(n, "is_case_sensitive", &ns);
    bool sensitive = ns == 1 && cs[0] != 0, bad = false, lowered;
    const xf_opaque_strings *stops = xf_opaque_find_strings(n->opaque, "stopwords");
    int n_stops = stops ? stops->n : 0;
    locale_t loc = case_locale(n);
    char **stop = stop_list(stops, sensitive, loc, &bad, &lowered);
    int64_t numel = xf_tensor_numel(x), kept = 0;
    char **low = calloc((size_t)numel + 1, sizeof *low); /* the inputs in lower case (not sensitive) */
    bool *drop = calloc((size_t)numel + 1, sizeof *drop);
    xf_status st = !stop && bad ? xf_ml_fail(n, err, XF_ERR_INVALID, "a stopword is not UTF-8")
                   : !stop || !low || !drop ? xf_error_set(err, XF_ERR_NOMEM, "out of memory")
                                            : XF_OK;
    for (int64_t i = 0; st == XF_OK && i < numel; i++) {
        const char *w = xf_rt_str_at(x, i);
        if (xf_rt_utf8_count(w, strlen(w)) < 0)
            st = xf_ml_fail(n, err, XF_ERR_INVALID, "its input's string %lld is not UTF-8", (long long)i);
        else if (n_stops && !sensitive && !(low[i] = with_case(w, true, loc, &bad)))
            st = xf_error_set(err, XF_ERR_NOMEM, "out of memory");
        drop[i] = st == XF_OK && stopword(w, low[i], stop, n_stops);
        kept += !drop[i];
    }
    int64_t len = kept ? kept : 1; /* nothing left: one empty string */
    xf_shape s = matrix ? xf_shape_make(2, (const int64_t[]){1, len}) : xf_shape_make(1, &len);
    xf_tensor *y = st == XF_OK ? xf_tensor_create(XF_DT_STRING, &s) : NULL;
    if (st == XF_OK && !y)
        st = xf_error_set(err, XF_ERR_NOMEM, "out of memory");
    for (int64_t i = 0, k = 0; st == XF_OK && i < numel; i++) {
        const char *w = xf_rt_str_at(x, i);
        if (drop[i])
            continue;
        if (!(y->strings[k++] = action[0] == 'N' ? strdup(w) : with_case(w, action[0] == 'L', loc, &bad)))
            st = xf_error_set(err, XF_ERR_NOMEM, "out of memory");
    }
    if (st == XF_OK && !kept && !(y->strings[0] = strdup("")))
        st = xf_error_set(err, XF_ERR_NOMEM, "out of memory");
    for (int k = 0; stop && lowered && k < n_stops; k++)
        free(stop[k]);
    free(stop);
    for (int64_t i = 0; low && i < numel; i++)
        free(low[i]);
    free(low);
    free(drop);
    if (loc)
        freelocale(loc);
    if (st != XF_OK) {
        xf_tensor_release(y);
        return st;
    }
    out[0] = y;
    return XF_OK;
}
