/* The ops that match regular expressions, on the host (dispatched by
 * ml_ops.c): ONNX's RegexFullMatch and ONNX Runtime's Tokenizer
 * (com.microsoft, as scikit-learn's text converters write it).  Their
 * patterns are RE2's; ONNX Runtime matches them leftmost-longest, which is
 * POSIX's rule, so they are translated (regex_translate.c) into POSIX
 * extended expressions that glibc's regex runs (in the C.UTF-8 locale, so
 * that a character is a UTF-8 sequence): \d \w \s and their negations
 * become bracket expressions (ASCII, as RE2 has them), \b \B stay
 * (GNU's), (?:...) and named groups become groups, lazy quantifiers greedy
 * ones, a leading (?i) ignores case, ^ $ \A \z (the text's ends in RE2,
 * but for ^ and $ under (?m)) GNU's buffer anchors \` \'; inside brackets
 * \d \w \s and escaped characters become members; \xHH and \x{H...}
 * become the characters they name.  What has no POSIX form (Unicode
 * classes \p, back references, flags after the start) is refused when the
 * session is made, by node. */
#include "ml_ops.h"
#include "regex_translate.h"

#include <locale.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A pattern compiled twice: in C.UTF-8 (where the system has it) and in
 * the C locale, whose single-byte matching is far faster and gives the
 * same matches in text that is all ASCII; a third time for patterns with
 * \b or \B (below). */
typedef struct pattern {
    regex_t re[3]; /* [0] C.UTF-8, [1] C, [2] C, whole UTF-8 characters */
    int n;         /* how many compiled */
    /* A pattern that is one set of ASCII characters (a bracket
     * expression of characters and ranges, or one character), alone or
     * repeated with '+', is matched by a table of bytes instead (bytes
     * 0x80 and up are in a negated set, so that a UTF-8 character stays
     * whole). */
    bool table;
    bool repeated;
    bool in[256];
    /* RE2's \b takes only ASCII letters, digits and '_' for word
     * characters, as glibc's does in the C locale (in C.UTF-8 it takes
     * every letter): a pattern with \b or \B runs on text that is not
     * ASCII in the C locale too, its negated sets (and so '.') made to take
     * a whole UTF-8 character (re[2]; not made where a set has a non-ASCII
     * member). */
    bool bytewise;
    /* (?m): compiled with REG_NEWLINE, whose '^' and '$' match at lines,
     * so a full match is one that spans the string */
    bool multiline;
} pattern;

struct xf_ml_regex {
    bool tokenizer;
    locale_t loc[2]; /* C.UTF-8 and C, where the system has them */
    pattern re;
    pattern *seps; /* Tokenizer's separators, n_seps of them */
    int n_seps;
    bool by_char;  /* Tokenizer: every character a token */
    bool mark;
    int64_t mincharnum;
    const char *pad;
};

/* ------------------------------------------------------------ compiling */

/* Fills p's byte table when posix (icase: ignoring case) is such a
 * pattern. */
static void byte_table(pattern *p, const char *posix, bool icase)
{
    size_t len = strlen(posix);
    p->repeated = len > 1 && posix[len - 1] == '+';
    len -= p->repeated;
    bool neg = false;
    memset(p->in, 0, sizeof p->in);
    if (len == 1 || (len == 2 && posix[0] == '\\' && strchr(".[]()*+?{}|^$\\", posix[1]))) { /* one character */
        unsigned char c = (unsigned char)posix[len - 1];
        if (c >= 0x80 || (len == 1 && strchr(".[]()*+?{}|^$\\", c)))
            return;
        p->in[c] = true;
    } else if (len >= 3 && posix[0] == '[' && posix[len - 1] == ']') {
        size_t i = 1;
        neg = posix[i] == '^';
        i += neg;
        for (size_t first = i; i < len - 1; i++) {
            unsigned char c = (unsigned char)posix[i];
            if (c >= 0x80 || (c == '[' && posix[i + 1] == ':') || (c == ']' && i != first))
                return; /* classes and non-ASCII members are the locale's */
            if (posix[i + 1] == '-' && i + 2 < len - 1 && posix[i + 2] != ']') { /* a ']' there closes the set */
                for (unsigned v = c; v <= (unsigned char)posix[i + 2]; v++)
                    p->in[v] = true;
                i += 2;
            } else {
                p->in[c] = true;
            }
        }
    } else {
        return;
    }
    for (int c = 'a'; icase && c <= 'z'; c++)
        p->in[c] = p->in[c - 32] = p->in[c] || p->in[c - 32];
    for (int c = 0; neg && c < 256; c++)
        p->in[c] = !p->in[c] && c != 0;
    p->table = true;
}

/* Compiles RE2 pattern re (anchored to the whole string when full) into
 * *p, in each of x's locales. */
static xf_status compile(const xf_node *n, const xf_ml_regex *x, const char *what, const char *re, bool full,
                         pattern *p, xf_error *err)
{
    char why[200] = "", *posix = NULL;
    bool icase, multiline;
    char *expanded = xf_re_expand_hex(re, why, sizeof why);
    bool translated = expanded && xf_re_to_posix(expanded, &posix, &icase, &multiline, why, sizeof why);
    free(expanded);
    if (!translated)
        return xf_ml_fail(n, err, XF_ERR_UNSUPPORTED, "%s \"%.80s\": %s", what, re, why);
    char *pattern = posix;
    if (full && (pattern = malloc(strlen(posix) + 7)) != NULL)
        sprintf(pattern, "\\`(%s)\\'", posix);
    if (!pattern) {
        free(posix);
        return xf_error_set(err, XF_ERR_NOMEM, "out of memory");
    }
    int rc = 0;
    char msg[160] = "";
    if (!full)
        byte_table(p, posix, icase);
    /* [0] as translated, [1] and [2] in C forms (NULL: [2] not made) */
    char *forms[3] = {pattern, xf_re_c_form(pattern, false, icase),
                      xf_re_has_boundary(posix) ? xf_re_c_form(pattern, true, icase) : NULL};
    if (!forms[1]) {
        rc = REG_ESPACE;
        snprintf(msg, sizeof msg, "out of memory");
    }
    p->bytewise = forms[2] != NULL;
    p->multiline = multiline;
    /* glibc's C.UTF-8 takes no range of non-ASCII characters in a set:
     * such a pattern runs in the C locale alone, [0] then [2]'s form (and
     * text that is not ASCII runs on [2]) */
    bool c_only = false;
    for (int k = 0; k < (p->bytewise ? 3 : 2) && rc == 0; k++) {
        int l = k || c_only ? 1 : 0;
        locale_t old = x->loc[l] ? uselocale(x->loc[l]) : (locale_t)0;
        rc = regcomp(&p->re[k], k || !c_only ? forms[k] : forms[2],
                     REG_EXTENDED | (icase ? REG_ICASE : 0) | (multiline ? REG_NEWLINE : 0));
        if (x->loc[l])
            uselocale(old);
        if (rc == REG_ECOLLATE && k == 0 && !c_only && (forms[2] || (forms[2] = xf_re_c_form(pattern, true, icase)))) {
            c_only = p->bytewise = true;
            rc = 0;
            k--;
        } else if (rc != 0) {
            regerror(rc, &p->re[k], msg, sizeof msg);
        } else {
            p->n++;
        }
    }
    if (pattern != posix)
        free(pattern);
    free(forms[1]);
    free(forms[2]);
    free(posix);
    if (rc == REG_ECOLLATE)
        return xf_ml_fail(n, err, XF_ERR_UNSUPPORTED,
                          "%s \"%.80s\": a range of non-ASCII characters reversed, under (?i) or in a set with a "
                          "class is not translated",
                          what, re);
    return rc == 0 ? XF_OK : xf_ml_fail(n, err, XF_ERR_INVALID, "%s \"%.80s\" does not compile: %s", what, re, msg);
}

static void free_pattern(pattern *p)
{
    for (int k = 0; k < p->n; k++)
        regfree(&p->re[k]);
    p->n = 0;
}

static bool all_ascii(const char *s, size_t len)
{
    for (size_t i = 0; i < len; i++)
        if ((unsigned char)s[i] >= 0x80)
            return false;
    return true;
}

/* The first match of p in s[from .. len - 1] (what comes before from is
 * context: '^' does not match there, \b sees it) into *m, offsets from s;
 * whether there is one.  ascii: s is all ASCII. */
static bool match(const xf_ml_regex *x, const pattern *p, bool ascii, const char *s, size_t from, size_t len,
                  regmatch_t *m)
{
    if (p->table) {
        size_t i = from;
        while (i < len && !p->in[(unsigned char)s[i]])
            i++;
        if (i >= len)
            return false;
        size_t e = i + 1;
        while (e < len && (p->repeated || ((unsigned char)s[e] >> 6) == 2) && p->in[(unsigned char)s[e]])
            e++; /* the whole run; one character otherwise */
        if (m)
            *m = (regmatch_t){.rm_so = (regoff_t)i, .rm_eo = (regoff_t)e};
        return true;
    }
    int k = ascii && p->n > 1 ? 1 : p->bytewise && p->n > 2 ? 2 : 0, l = k ? 1 : 0;
    regmatch_t range = {.rm_so = (regoff_t)from, .rm_eo = (regoff_t)len};
    locale_t old = x->loc[l] ? uselocale(x->loc[l]) : (locale_t)0;
    int rc = regexec(&p->re[k], s, 1, &range, REG_STARTEND);
    while (rc == 0 && k == 2 && (size_t)range.rm_so < len && ((unsigned char)s[range.rm_so] >> 6) == 2) {
        /* an empty match between the bytes of a character (\B there): on
         * from the next character */
        size_t next = (size_t)range.rm_so + 1;
        while (next < len && ((unsigned char)s[next] >> 6) == 2)
            next++;
        range = (regmatch_t){.rm_so = (regoff_t)next, .rm_eo = (regoff_t)len};
        rc = regexec(&p->re[k], s, 1, &range, REG_STARTEND);
    }
    if (x->loc[l])
        uselocale(old);
    if (m)
        *m = range;
    return rc == 0;
}

/* ------------------------------------------------------------ plans */

void xf_ml_regex_free(xf_ml_regex *x)
{
    if (!x)
        return;
    free_pattern(&x->re);
    for (int k = 0; k < x->n_seps; k++)
        free_pattern(&x->seps[k]);
    free(x->seps);
    for (int k = 0; k < 2; k++)
        if (x->loc[k])
            freelocale(x->loc[k]);
    free(x);
}

static xf_status tokenizer_plan(const xf_node *n, xf_ml_regex *x, xf_error *err)
{
    int64_t c;
    const int64_t *v = xf_ml_ints(n, "mark", &c);
    x->mark = v && c == 1 && v[0] != 0;
    v = xf_ml_ints(n, "mincharnum", &c);
    x->mincharnum = v && c == 1 ? v[0] : 0;
    x->pad = xf_ml_string(n, "pad_value", NULL);
    const xf_opaque_strings *seps = xf_opaque_find_strings(n->opaque, "separators");
    const char *exp = xf_ml_string(n, "tokenexp", NULL);
    if (x->mincharnum < 1 || !x->pad)
        return xf_ml_fail(n, err, XF_ERR_INVALID, "needs pad_value and a mincharnum of 1 or more");
    if (!seps == !exp || (seps && seps->n < 1) || (exp && !exp[0]))
        return xf_ml_fail(n, err, XF_ERR_INVALID, "needs one of separators (not none) and tokenexp (not empty)");
    x->by_char = seps ? seps->n == 1 && !seps->v[0][0] : strcmp(exp, ".") == 0;
    if (x->by_char && x->mincharnum > 1)
        return xf_ml_fail(n, err, XF_ERR_INVALID, "a mincharnum of %lld is too large for tokens of one character",
                          (long long)x->mincharnum);
    if (x->by_char)
        return XF_OK;
    if (exp)
        return compile(n, x, "tokenexp", exp, false, &x->re, err);
    if (!(x->seps = calloc((size_t)seps->n, sizeof *x->seps)))
        return xf_error_set(err, XF_ERR_NOMEM, "out of memory");
    for (int k = 0; k < seps->n; k++) {
        xf_status st = compile(n, x, "separator", seps->v[k], false, &x->seps[k], err);
        x->n_seps++; /* freed as far as it got */
        if (st != XF_OK)
            return st;
    }
    return XF_OK;
}

xf_status xf_ml_regex_create(const xf_node *n, bool tokenizer, xf_ml_regex **out, xf_error *err)
{
    *out = NULL;
    xf_ml_regex *x = calloc(1, sizeof *x);
    if (!x)
        return xf_error_set(err, XF_ERR_NOMEM, "out of memory");
    x->tokenizer = tokenizer;
    x->loc[0] = newlocale(LC_CTYPE_MASK, "C.UTF-8", (locale_t)0);
    x->loc[1] = newlocale(LC_CTYPE_MASK, "C", (locale_t)0);
    xf_status st;
    if (tokenizer) {
        st = tokenizer_plan(n, x, err);
    } else {
        const char *pattern = xf_ml_string(n, "pattern", NULL);
        st = pattern ? compile(n, x, "pattern", pattern, true, &x->re, err)
                     : xf_ml_fail(n, err, XF_ERR_INVALID, "needs a pattern");
    }
    if (st != XF_OK) {
        xf_ml_regex_free(x);
        return st;
    }
    *out = x;
    return XF_OK;
}

/* ------------------------------------------------------------ runs */

static int utf8_bytes(unsigned char c) { return xf_rt_utf8_lead(c); }

static int64_t utf8_chars(const char *s, size_t len) { return xf_rt_utf8_count(s, len); }

/* A row's tokens: offsets and lengths in its string. */
typedef struct tokens {
    size_t *at, *len;
    int64_t n, cap;
} tokens;

static bool add_token(tokens *t, size_t at, size_t len)
{
    if (t->n == t->cap) {
        int64_t cap = t->cap ? 2 * t->cap : 8;
        size_t *a = realloc(t->at, sizeof *a * (size_t)cap), *l = a ? realloc(t->len, sizeof *l * (size_t)cap) : NULL;
        if (a)
            t->at = a;
        if (!l)
            return false;
        t->len = l;
        t->cap = cap;
    }
    t->at[t->n] = at;
    t->len[t->n++] = len;
    return true;
}

/* Adds the piece s[at .. at + len - 1] when it has mincharnum characters. */
static bool keep(const xf_ml_regex *x, tokens *t, const char *s, size_t at, size_t len)
{
    return utf8_chars(s + at, len) < x->mincharnum || add_token(t, at, len);
}

/* Splits the pieces of row (of string s) at the matches of separator r
 * into next. */
static bool split_at(const xf_ml_regex *x, const pattern *r, const char *s, bool ascii, const tokens *row,
                     tokens *next)
{
    for (int64_t k = 0; k < row->n; k++) {
        char *text = strndup(s + row->at[k], row->len[k]);
        if (!text)
            return false;
        size_t start = 0, end = row->len[k];
        regmatch_t m;
        bool ok = true;
        while (ok && start <= end && match(x, r, ascii, text, start, end, &m)) {
            size_t pos = (size_t)m.rm_so, mlen = (size_t)(m.rm_eo - m.rm_so);
            ok = keep(x, next, s, row->at[k] + start, pos - start);
            int b = pos < end ? utf8_bytes((unsigned char)text[pos]) : 1;
            start = mlen ? pos + mlen : pos + (size_t)(b ? b : 1);
        }
        if (ok && start <= end)
            ok = keep(x, next, s, row->at[k] + start, end - start);
        free(text);
        if (!ok)
            return false;
    }
    return true;
}

/* The tokens of s into t. */
static bool tokenize(const xf_ml_regex *x, const char *s, tokens *t)
{
    size_t len = strlen(s);
    bool ascii = all_ascii(s, len);
    if (x->by_char) {
        for (size_t i = 0; i < len;) {
            int b = utf8_bytes((unsigned char)s[i]);
            if (!add_token(t, i, (size_t)b))
                return false;
            i += (size_t)b;
        }
        return true;
    }
    if (x->n_seps) {
        tokens next = {0};
        bool ok = add_token(t, 0, len);
        for (int k = 0; ok && k < x->n_seps && t->n; k++) {
            next.n = 0;
            ok = split_at(x, &x->seps[k], s, ascii, t, &next);
            tokens swap = *t;
            *t = next;
            next = swap;
        }
        free(next.at);
        free(next.len);
        return ok;
    }
    if (utf8_chars(s, len) < x->mincharnum)
        return true;
    regmatch_t m;
    for (size_t start = 0; start <= len && match(x, &x->re, ascii, s, start, len, &m);) {
        size_t pos = (size_t)m.rm_so, mlen = (size_t)(m.rm_eo - m.rm_so);
        if (utf8_chars(s + pos, mlen) >= x->mincharnum) {
            if (!add_token(t, pos, mlen))
                return false;
            start = pos + mlen;
        } else {
            int b = pos < len ? utf8_bytes((unsigned char)s[pos]) : 1;
            start = pos + (size_t)(b ? b : 1);
        }
    }
    return true;
}


/* Tokenizer: X [C] or [N, C] of strings to [.., T]: each string's tokens
 * between the marks \x02 and \x03 (with mark), padded with pad_value to
 * the longest. */
static xf_status run_tokenizer(const xf_ml_regex *x, const xf_node *n, const xf_tensor *in, xf_tensor **out,
                               xf_error *err)
{
    int rank = in->shape.ndim;
    if (rank != 1 && rank != 2)
        return xf_ml_fail(n, err, XF_ERR_INVALID, "X has rank %d; it takes [C] or [N, C]", rank);
    int64_t rows = xf_tensor_numel(in), most = 0;
    tokens *t = calloc((size_t)rows + 1, sizeof *t);
    xf_status st = t ? XF_OK : xf_error_set(err, XF_ERR_NOMEM, "out of memory");
    for (int64_t r = 0; r < rows && st == XF_OK; r++) {
        const char *s = xf_rt_str_at(in, r);
        if (utf8_chars(s, strlen(s)) < 0)
            st = xf_ml_fail(n, err, XF_ERR_INVALID, "string %lld is not UTF-8", (long long)r);
        else if (!tokenize(x, s, &t[r]))
            st = xf_error_set(err, XF_ERR_NOMEM, "out of memory");
        most = t && t[r].n > most ? t[r].n : most;
    }
    int64_t width = most ? most + 2 * x->mark : 0;
    xf_shape ys = in->shape;
    ys.dims[ys.ndim++] = width;
    /* the tokens, the marks and the pad in one block that the output's
     * strings point into (its string_owner) */
    size_t bytes = strlen(x->pad) + 5;
    for (int64_t r = 0; st == XF_OK && r < rows; r++)
        for (int64_t i = 0; i < t[r].n; i++)
            bytes += t[r].len[i] + 1;
    xf_tensor *y = st == XF_OK ? xf_tensor_create(XF_DT_STRING, &ys) : NULL;
    xf_tensor *block = y ? xf_tensor_create_unset(XF_DT_UINT8, &(xf_shape){1, {(int64_t)bytes}}) : NULL;
    if (st == XF_OK && !block)
        st = xf_error_set(err, XF_ERR_NOMEM, "out of memory");
    if (st == XF_OK) {
        y->string_owner = block;
        char *at = block->data, *marks = at, *pad = at + 4;
        memcpy(marks, "\x02\0\x03\0", 4);
        strcpy(pad, x->pad);
        at = pad + strlen(x->pad) + 1;
        for (int64_t r = 0; r < rows && width; r++) {
            const char *src = xf_rt_str_at(in, r);
            char **row = y->strings + r * width;
            int64_t k = 0;
            if (x->mark)
                row[k++] = marks;
            for (int64_t i = 0; i < t[r].n; i++) {
                memcpy(at, src + t[r].at[i], t[r].len[i]);
                at[t[r].len[i]] = 0;
                row[k++] = at;
                at += t[r].len[i] + 1;
            }
            if (x->mark)
                row[k++] = marks + 2;
            while (k < width)
                row[k++] = pad;
        }
    }
    for (int64_t r = 0; t && r < rows; r++) {
        free(t[r].at);
        free(t[r].len);
    }
    free(t);
    if (st != XF_OK) {
        xf_tensor_release(y);
        return st;
    }
    out[0] = y;
    return XF_OK;
}

xf_status xf_ml_regex_run(const xf_ml_regex *x, const xf_node *n, const xf_tensor *in, xf_tensor **out,
                          xf_error *err)
{
    if (in->dtype != XF_DT_STRING)
        return xf_ml_fail(n, err, XF_ERR_INVALID, "takes a tensor of strings, not %s", xf_dtype_name(in->dtype));
    if (x->tokenizer)
        return run_tokenizer(x, n, in, out, err);
    xf_tensor *y = xf_tensor_create(XF_DT_BOOL, &in->shape);
    if (!y)
        return xf_error_set(err, XF_ERR_NOMEM, "out of memory");
    for (int64_t i = 0; i < xf_tensor_numel(in); i++) {
        const char *s = xf_rt_str_at(in, i);
        size_t len = strlen(s);
        regmatch_t m;
        bool ok = match(x, &x->re, all_ascii(s, len), s, 0, len, &m);
        /* leftmost-longest: the match from 0 to the end where there is one */
        ((uint8_t *)y->data)[i] = ok && (!x->re.multiline || (m.rm_so == 0 && (size_t)m.rm_eo == len));
    }
    out[0] = y;
    return XF_OK;
}
