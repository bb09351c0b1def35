/* The translation of RE2 patterns into POSIX extended expressions that
 * glibc's regex runs (regex_ops.c compiles and matches them; its header
 * says what becomes of each construct): \x escapes first, then the
 * pattern, then the C-locale forms whose sets take non-ASCII members by
 * their UTF-8 bytes. */
#include "regex_translate.h"

#include "xf_rt_internal.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool refuse(char *why, size_t why_len, const char *what)
{
    snprintf(why, why_len, "%s", what);
    return false;
}

typedef struct out_buf {
    char *s;
    size_t n, cap;
    bool ok;
} out_buf;

static void put(out_buf *o, const char *s, size_t len)
{
    if (!o->ok)
        return;
    if (o->n + len + 1 > o->cap) {
        size_t cap = (o->n + len + 1) * 2;
        char *g = realloc(o->s, cap);
        if (!g) {
            o->ok = false;
            return;
        }
        o->s = g;
        o->cap = cap;
    }
    memcpy(o->s + o->n, s, len);
    o->n += len;
    o->s[o->n] = 0;
}

static void puts_(out_buf *o, const char *s) { put(o, s, strlen(s)); }
static void putc_(out_buf *o, char c) { put(o, &c, 1); }

/* The character an escape \c stands for as a literal (\t \n \r \f \v and
 * punctuation), or -1 when it is not one. */
static int escaped_char(char c)
{
    switch (c) {
    case 't': return '\t';
    case 'n': return '\n';
    case 'r': return '\r';
    case 'f': return '\f';
    case 'v': return '\v';
    default: return (c >= 0x21 && c <= 0x7e && !(c >= '0' && c <= '9') && !(c >= 'a' && c <= 'z') &&
                     !(c >= 'A' && c <= 'Z')) ? c : -1;
    }
}

static const char *class_members(char c)
{
    switch (c) {
    case 'd': case 'D': return "0-9";
    case 'w': case 'W': return "0-9A-Za-z_";
    case 's': case 'S': return "\t\n\f\r ";
    default: return NULL;
    }
}

/* Whether ASCII character c is in RE2's class [:name:] (RE2's are ASCII
 * only, where glibc's in C.UTF-8 take every letter); -1 for no such class. */
static int in_class(const char *name, size_t len, int c)
{
    static const char *const names[] = {"alnum", "alpha", "ascii", "blank", "cntrl", "digit", "graph",
                                        "lower", "print", "punct", "space", "upper", "word", "xdigit"};
    int k = 0;
    while (k < 14 && !(strlen(names[k]) == len && !strncmp(names[k], name, len)))
        k++;
    bool digit = c >= '0' && c <= '9', upper = c >= 'A' && c <= 'Z', lower = c >= 'a' && c <= 'z';
    bool graph = c > ' ' && c < 0x7f;
    switch (k) {
    case 0: return digit || upper || lower;
    case 1: return upper || lower;
    case 2: return c < 0x80;
    case 3: return c == ' ' || c == '\t';
    case 4: return c < ' ' || c == 0x7f;
    case 5: return digit;
    case 6: return graph;
    case 7: return lower;
    case 8: return graph || c == ' ';
    case 9: return graph && !digit && !upper && !lower;
    case 10: return c == ' ' || (c >= '\t' && c <= '\r');
    case 11: return upper;
    case 12: return digit || upper || lower || c == '_';
    case 13: return digit || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
    default: return -1;
    }
}

/* Translates the bracket expression at *p (after its '['); false (why
 * set) when it has no POSIX form. */
static bool bracket(const char **p, out_buf *o, bool multiline, char *why, size_t why_len)
{
    const char *s = *p;
    bool neg = *s == '^', close = false, dash = false, caret = false;
    s += neg;
    out_buf body = {.ok = true};
    for (bool first = true; *s && (first || *s != ']'); first = false) {
        if (*s == '[' && s[1] == ':') { /* [:alpha:]: its ASCII members */
            const char *end = strstr(s + 2, ":]");
            if (!end || in_class(s + 2, (size_t)(end - s - 2), 'a') < 0) {
                free(body.s);
                return refuse(why, why_len, end ? "an unknown [: class" : "an unclosed [: class");
            }
            for (int c = 1; c < 0x80; c++) {
                if (!in_class(s + 2, (size_t)(end - s - 2), c))
                    continue;
                if (c == ']' || c == '-' || c == '^')
                    *(c == ']' ? &close : c == '-' ? &dash : &caret) = true;
                else
                    putc_(&body, (char)c);
            }
            s = end + 2;
            continue;
        }
        int c = (unsigned char)*s++;
        if (c == '\\' && !*s)
            break; /* a trailing backslash: unclosed */
        if (c == '\\') {
            char e = *s++;
            const char *members = class_members(e);
            if (members && e >= 'a') {
                puts_(&body, members);
                continue;
            }
            if (members || (c = escaped_char(e)) < 0) {
                free(body.s);
                snprintf(why, why_len, "\\%c inside brackets has no POSIX form", e ? e : ' ');
                return false;
            }
        }
        if (s[0] == '-' && s[1] && s[1] != ']') { /* a range */
            s++;
            int hi = (unsigned char)*s++;
            if (hi == '\\' && (hi = escaped_char(*s++)) < 0) {
                free(body.s);
                return refuse(why, why_len, "a range ending in a class has no POSIX form");
            }
            char r[3] = {(char)c, '-', (char)hi};
            if (c == ']' || c == '^' || c == '-' || hi == ']') {
                free(body.s);
                return refuse(why, why_len, "a range from or to ']', '^' or '-' is not translated");
            }
            put(&body, r, 3);
            continue;
        }
        if (c == ']')
            close = true;
        else if (c == '-')
            dash = true;
        else if (c == '^')
            caret = true;
        else
            putc_(&body, (char)c);
    }
    if (*s != ']') {
        free(body.s);
        return refuse(why, why_len, "an unclosed '['");
    }
    *p = s + 1;
    if (caret && !body.n && !close && !dash && !neg) { /* only '^' */
        puts_(o, "\\^");
        free(body.s);
        return body.ok;
    }
    /* REG_NEWLINE keeps a negated set off '\n', which RE2's takes */
    bool wrap = neg && multiline && !(body.s && memchr(body.s, '\n', body.n));
    if (wrap)
        putc_(o, '(');
    putc_(o, '[');
    if (neg)
        putc_(o, '^');
    if (close)
        putc_(o, ']');
    else if (caret && !body.n && !neg) /* '^' may not come first */
        dash = false, puts_(o, "-^"), caret = false;
    if (body.s)
        puts_(o, body.s);
    if (caret)
        putc_(o, '^');
    if (dash)
        putc_(o, '-');
    putc_(o, ']');
    if (wrap)
        puts_(o, "|\n)");
    free(body.s);
    return body.ok;
}

/* RE2 pattern re as a POSIX extended expression (*out, to free); *icase
 * when it starts with (?i), *multiline with (?m): '^' and '$' match at
 * lines too, which is POSIX's REG_NEWLINE, under which a negated set and
 * '.' take no '\n', so those that RE2 lets take one are written as groups
 * that take it too; (?U) makes no difference to longest matches.  False
 * (why set) when it has no POSIX form. */
static int hex_digit(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    return c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* RE2's \xHH and \x{H...} written as the character they name: ASCII
 * punctuation escaped (so that \x2e is a '.' and \x5d a member of a
 * set), other ASCII as it is, the rest as its UTF-8 bytes (which sets
 * take as their non-ASCII members).  NULL (why set) for a malformed one,
 * NUL, a surrogate or a code point past U+10FFFF. */
char *xf_re_expand_hex(const char *re, char *why, size_t why_len)
{
    out_buf o = {.ok = true};
    for (const char *p = re; *p;) {
        if (p[0] != '\\' || p[1] != 'x') {
            size_t len = p[0] == '\\' && p[1] ? 2 : 1; /* an escape pair stays whole */
            put(&o, p, len);
            p += len;
            continue;
        }
        p += 2;
        bool braced = *p == '{';
        const char *digits = p + braced;
        unsigned long cp = 0;
        size_t n = 0;
        for (int h; n < (braced ? 8 : 2) && (h = hex_digit(digits[n])) >= 0; n++)
            cp = cp * 16 + (unsigned long)h;
        bool ok = braced ? n > 0 && digits[n] == '}' : n == 2;
        if (!ok || cp == 0 || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) {
            free(o.s);
            refuse(why, why_len, !ok ? "a \\x escape that is not \\xHH or \\x{H...}"
                                      : "a \\x escape of NUL, a surrogate or past U+10FFFF");
            return NULL;
        }
        p = digits + n + braced;
        if (cp < 0x80) {
            if (escaped_char((char)cp) == (int)cp) /* punctuation, the backslash too */
                putc_(&o, '\\');
            putc_(&o, (char)cp);
            continue;
        }
        char u[4];
        int len = cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
        u[0] = (char)(len == 2 ? 0xc0 | cp >> 6 : len == 3 ? 0xe0 | cp >> 12 : 0xf0 | cp >> 18);
        for (int k = 1; k < len; k++)
            u[k] = (char)(0x80 | (cp >> (6 * (len - 1 - k)) & 0x3f));
        put(&o, u, (size_t)len);
    }
    if (!o.ok) {
        free(o.s);
        refuse(why, why_len, "out of memory");
        return NULL;
    }
    if (!o.s)
        return calloc(1, 1);
    return o.s;
}

bool xf_re_to_posix(const char *re, char **out, bool *icase, bool *multiline, char *why, size_t why_len)
{
    out_buf o = {.ok = true};
    const char *p = re;
    *icase = *multiline = false;
    bool dotall = false; /* '.' takes '\n' too (RE2's s flag) */
    if (p[0] == '(' && p[1] == '?' && p[2] && strchr("imsU", p[2])) { /* leading flags */
        const char *q = p + 2;
        for (; *q && strchr("imsU", *q); q++) {
            *icase |= *q == 'i';
            *multiline |= *q == 'm';
            dotall |= *q == 's';
        }
        if (*q != ')')
            return refuse(why, why_len, "flags other than a leading (?imsU) are not translated");
        p = q + 1;
    }
    puts_(&o, "");
    bool quantified = false; /* the last thing written was a quantifier */
    while (*p && o.ok) {
        char c = *p++;
        bool was_quantified = quantified;
        quantified = false;
        if (c == '?' && was_quantified)
            continue; /* lazy: longest-match makes it greedy */
        bool repeat = c == '*' || c == '+' || c == '?';
        size_t len = c == '{' ? strspn(p, "0123456789,") : 0;
        if (was_quantified && (repeat || (len && p[len] == '}'))) {
            free(o.s);
            return refuse(why, why_len, "a repetition of a repetition is not RE2 syntax");
        }
        if (repeat) {
            putc_(&o, c);
            quantified = true;
        } else if (c == '{') {
            if (len && p[len] == '}' && p[0] != ',') {
                putc_(&o, '{');
                put(&o, p, len + 1);
                p += len + 1;
                quantified = true;
            } else {
                puts_(&o, "\\{");
            }
        } else if (c == '(' && p[0] == '?') {
            if (p[1] == ':')
                p += 2;
            else if (p[1] == 'P' && p[2] == '<' && strchr(p, '>'))
                p = strchr(p, '>') + 1;
            else {
                free(o.s);
                snprintf(why, why_len, "the group (?%c has no POSIX form", p[1] ? p[1] : ' ');
                return false;
            }
            putc_(&o, '(');
        } else if (c == '[') {
            if (!bracket(&p, &o, *multiline, why, why_len)) {
                free(o.s);
                return false;
            }
        } else if (c == '\\' && !*p) {
            free(o.s);
            return refuse(why, why_len, "a trailing backslash");
        } else if (c == '\\') {
            char e = *p++;
            const char *members = class_members(e);
            int lit;
            bool wrap = members && e < 'a' && *multiline && !strchr(members, '\n'); /* \D \W: as sets */
            if (members) {
                puts_(&o, wrap ? "([^" : e >= 'a' ? "[" : "[^");
                puts_(&o, members);
                puts_(&o, wrap ? "]|\n)" : "]");
            } else if (e == 'b' || e == 'B') {
                putc_(&o, '\\');
                putc_(&o, e);
            } else if (e == 'A' || e == 'z') {
                puts_(&o, e == 'A' ? "\\`" : "\\'"); /* the text's ends, whatever the flags */
            } else if ((lit = escaped_char(e)) >= 0) {
                if (strchr(".[]()*+?{}|^$\\", lit))
                    putc_(&o, '\\');
                putc_(&o, (char)lit);
            } else {
                free(o.s);
                snprintf(why, why_len, "\\%c has no POSIX form", e ? e : ' ');
                return false;
            }
        } else if (c == '.' && !dotall) {
            puts_(&o, "[^\n]"); /* RE2's '.' takes no newline */
        } else if (c == '.' && *multiline) {
            puts_(&o, "(.|\n)");
        } else if ((c == '^' || c == '$') && !*multiline) {
            /* RE2's are the text's ends (GNU's buffer anchors): glibc's
             * own '$' inside a pattern also matches before a newline */
            puts_(&o, c == '^' ? "\\`" : "\\'");
        } else {
            putc_(&o, c);
        }
    }
    if (!o.ok) {
        free(o.s);
        return refuse(why, why_len, "out of memory");
    }
    *out = o.s;
    return true;
}

/* The alternatives matching, byte by byte, the UTF-8 encodings of the
 * code points lo to hi (all 0x80 or more): each a run of byte ranges,
 * split where the encodings change length and where a continuation byte
 * would not cover its whole range (as RE2 compiles a range to bytes). */
static void utf8_range(out_buf *o, uint32_t lo, uint32_t hi)
{
    static const uint32_t longest[] = {0x7ff, 0xffff};
    if (lo > hi)
        return;
    for (int k = 0; k < 2; k++)
        if (lo <= longest[k] && longest[k] < hi) {
            utf8_range(o, lo, longest[k]);
            utf8_range(o, longest[k] + 1, hi);
            return;
        }
    int n = lo <= 0x7ff ? 2 : lo <= 0xffff ? 3 : 4;
    for (int i = 1; i < n; i++) {
        uint32_t m = (1u << (6 * i)) - 1;
        if ((lo & ~m) != (hi & ~m)) {
            if (lo & m) {
                utf8_range(o, lo, lo | m);
                utf8_range(o, (lo | m) + 1, hi);
                return;
            }
            if ((hi & m) != m) {
                utf8_range(o, lo, (hi & ~m) - 1);
                utf8_range(o, hi & ~m, hi);
                return;
            }
        }
    }
    putc_(o, '|');
    for (int i = 0; i < n; i++) { /* byte i of n: the lead's bits, then six per continuation byte */
        int shift = 6 * (n - 1 - i);
        unsigned a = (lo >> shift) & 0x3f, b = (hi >> shift) & 0x3f;
        if (i == 0)
            a = (0xf00u >> n & 0xff) | (lo >> shift), b = (0xf00u >> n & 0xff) | (hi >> shift);
        else
            a |= 0x80, b |= 0x80;
        char r[5] = {'[', (char)a, '-', (char)b, ']'};
        put(o, r, 5);
    }
}

/* A bracket set of the C-locale form (text not ASCII) whose members
 * [m, end) include non-ASCII characters: a group taking its ASCII members
 * from a set and its others (or, negated, every other character) by the
 * bytes of their encodings.  False when it has none (a class, a member
 * that is not UTF-8; or icase, whose folding of non-ASCII letters the C
 * locale lacks). */
static bool utf8_set(out_buf *o, bool neg, const char *m, const char *end, bool icase)
{
    bool ascii[128] = {false};
    uint32_t ranges[64][2];
    int n = 0;
    for (const char *c = m; c < end;) {
        uint32_t lo, hi;
        int b = xf_rt_utf8_char(c, (size_t)(end - c), &lo), b2 = 0;
        if (!b || (c[0] == '[' && c + 1 < end && c[1] == ':') || n == 64)
            return false;
        hi = lo;
        if (c + b + 1 < end && c[b] == '-' && !(b2 = xf_rt_utf8_char(c + b + 1, (size_t)(end - c - b - 1), &hi)))
            return false;
        c += b + (b2 ? 1 + b2 : 0);
        if (hi < lo)
            return false; /* reversed: RE2 refuses it too */
        for (uint32_t v = lo; v <= hi && v < 0x80; v++)
            ascii[v] = true;
        if (hi >= 0x80 && icase)
            return false;
        int at = n++; /* the non-ASCII part, kept in order of its start */
        for (; hi >= 0x80 && at > 0 && ranges[at - 1][0] > (lo < 0x80 ? 0x80 : lo); at--)
            memcpy(ranges[at], ranges[at - 1], sizeof ranges[at]);
        if (hi >= 0x80)
            ranges[at][0] = lo < 0x80 ? 0x80 : lo, ranges[at][1] = hi;
        else
            n--;
    }
    char set[140];
    size_t k = 0;
    set[k++] = '[';
    if (ascii[']'] != neg)
        set[k++] = ']';
    for (int c = 1; c < 128; c++)
        if (ascii[c] != neg && c != ']' && c != '-' && c != '^')
            set[k++] = (char)c;
    if (ascii['^'] != neg)
        set[k++] = '^';
    if (ascii['-'] != neg)
        set[k++] = '-';
    set[k++] = ']';
    out_buf alt = {.ok = true}; /* the alternatives, each after a '|' */
    puts_(&alt, "");
    uint32_t from = 0x80;
    for (int r = 0; r < n; r++) {
        if (!neg)
            utf8_range(&alt, ranges[r][0], ranges[r][1]);
        else if (ranges[r][0] > from)
            utf8_range(&alt, from, ranges[r][0] - 1);
        from = ranges[r][1] + 1 > from ? ranges[r][1] + 1 : from;
    }
    if (neg)
        utf8_range(&alt, from, 0x10ffff);
    bool none = k == 2;
    puts_(o, "(");
    if (k == 3 && set[1] == '^')
        puts_(o, "\\^");
    else if (!none)
        put(o, set, k);
    if (alt.ok && alt.n > 0)
        puts_(o, alt.s + none);
    putc_(o, ')');
    bool ok = alt.ok && (!none || alt.n > 0);
    free(alt.s);
    return ok;
}

/* A C-locale form of translated pattern posix (a new string; NULL when
 * out of memory or, with sets, when there is none): each non-ASCII
 * character a group, so that a repetition takes it whole; with sets, for
 * text that is not ASCII (re[2]), a negated set also takes no byte of
 * 0x80 or more but any UTF-8 sequence of two to four bytes, and a set
 * with a non-ASCII member takes its members by their bytes (utf8_set;
 * where it cannot, the pattern has no such form). */
char *xf_re_c_form(const char *posix, bool sets, bool icase)
{
    static const char multibyte[] = "|[\xc2-\xdf][\x80-\xbf]|[\xe0-\xef][\x80-\xbf][\x80-\xbf]"
                                    "|[\xf0-\xf4][\x80-\xbf][\x80-\xbf][\x80-\xbf])";
    out_buf o = {.ok = true};
    puts_(&o, "");
    for (const char *q = posix; *q && o.ok;) {
        int b = xf_rt_utf8_lead((unsigned char)*q);
        if (q[0] == '\\' && q[1]) {
            put(&o, q, 2);
            q += 2;
        } else if (q[0] == '[') { /* a set: its members up to the ']' that closes it */
            bool neg = q[1] == '^';
            const char *m = q + 1 + neg, *end = m + (*m == ']');
            while (*end && *end != ']')
                end++;
            bool wide = false;
            for (const char *c = m; sets && c < end; c++)
                wide |= (unsigned char)*c >= 0x80;
            if (wide && !utf8_set(&o, neg, m, end, icase)) {
                free(o.s);
                return NULL;
            } else if (wide) {
                /* written */
            } else if (neg && sets) { /* the bytes 0x80 up first (but for a leading ']'): a member '-' stays last */
                puts_(&o, "([^");
                if (*m == ']')
                    putc_(&o, *m++);
                puts_(&o, "\x80-\xff");
                put(&o, m, (size_t)(end - m));
                putc_(&o, ']');
                puts_(&o, multibyte);
            } else {
                put(&o, q, (size_t)(end - q) + (*end != 0));
            }
            q = end + (*end != 0);
        } else if (b > 1 && strnlen(q, (size_t)b) == (size_t)b) { /* a UTF-8 character: one group */
            putc_(&o, '(');
            put(&o, q, (size_t)b);
            putc_(&o, ')');
            q += b;
        } else {
            put(&o, q++, 1);
        }
    }
    if (!o.ok) {
        free(o.s);
        return NULL;
    }
    return o.s;
}

/* Whether translated pattern posix has \b or \B. */
bool xf_re_has_boundary(const char *posix)
{
    for (const char *q = posix; *q; q++) {
        if (q[0] == '\\' && (q[1] == 'b' || q[1] == 'B'))
            return true;
        q += q[0] == '\\' && q[1];
    }
    return false;
}

