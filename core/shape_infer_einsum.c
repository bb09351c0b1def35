/* Einsum's equation: parsed and worked out against the operands' shapes
 * once, in core, for shape inference and for cpu_ref's kernel alike (see
 * xf_einsum_plan in xf_core.h). */
#include "shape_infer_impl.h"
#include "xf_op_plans.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

enum { N_LETTERS = 52, NO_INDEX = 0xff };

/* One side of "->" split into its terms: each a list of letters (0-25
 * for A-Z, 26-51 for a-z: ASCII order) with an optional ellipsis. */
typedef struct einsum_term {
    int n_letters;
    unsigned char letter[XF_MAX_DIMS];
    int ellipsis_at; /* the ellipsis' place among the letters, -1: none */
} einsum_term;

const char *xf_einsum_equation(const xf_attrs *a)
{
    const xf_tensor *t = a->value;
    return t && t->dtype == XF_DT_STRING && t->strings && xf_tensor_numel(t) == 1 ? t->strings[0] : NULL;
}

/* Parses the term in s[0..len) (spaces ignored); false with why. */
static bool parse_term(const char *s, size_t len, einsum_term *t, char *why, size_t why_len)
{
    t->n_letters = 0;
    t->ellipsis_at = -1;
    for (size_t i = 0; i < len; i++) {
        char ch = s[i];
        if (ch == ' ')
            continue;
        if (ch == '.') {
            if (t->ellipsis_at >= 0 || len - i < 3 || s[i + 1] != '.' || s[i + 2] != '.')
                return xf_infer_refuse(why, why_len, "a '.' that is not part of a term's one ellipsis '...'");
            t->ellipsis_at = t->n_letters;
            i += 2;
        } else if ((ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z')) {
            if (t->n_letters == XF_MAX_DIMS)
                return xf_infer_refuse(why, why_len, "a term of more than %d letters (xflow handles rank %d at most)",
                                       XF_MAX_DIMS, XF_MAX_DIMS);
            t->letter[t->n_letters++] = (unsigned char)(ch <= 'Z' ? ch - 'A' : ch - 'a' + 26);
        } else {
            return xf_infer_refuse(why, why_len, "the character '%c', which is not a letter, ',', '...' or '->'", ch);
        }
    }
    return true;
}

static char letter_char(int l) { return (char)(l < 26 ? 'A' + l : 'a' + l - 26); }

/* Extent d of one operand's dim meets the extent *e an index has so far
 * (-1: none yet): equal, or one of them 1 (numpy broadcasting). */
static bool meet(int64_t *e, int64_t d)
{
    if (d < 0) /* known only at run time: it meets any extent (the run checks) */
        return true;
    if (*e < 0 || *e == 1)
        *e = d;
    return d == *e || d == 1;
}

/* The ellipses: the operands' ellipsis dims broadcast (aligned at the
 * last) over the first e->n_indices = n_ell indices. */
static bool plan_ellipses(const einsum_term *terms, int n, const xf_shape *const *shapes, xf_einsum *e, int *ell_count,
                          char *why, size_t why_len)
{
    int n_ell = 0;
    for (int k = 0; k < n; k++) {
        int rank = shapes[k]->ndim, letters = terms[k].n_letters;
        ell_count[k] = terms[k].ellipsis_at >= 0 ? rank - letters : 0;
        if (terms[k].ellipsis_at < 0 ? rank != letters : rank < letters)
            return xf_infer_refuse(why, why_len, "operand %d has rank %d, but the equation gives it %d letters%s", k,
                                   rank, letters, terms[k].ellipsis_at >= 0 ? " and an ellipsis" : "");
        n_ell = ell_count[k] > n_ell ? ell_count[k] : n_ell;
    }
    e->n_indices = n_ell;
    bool unknown[XF_MAX_DIMS] = {false};
    for (int i = 0; i < n_ell; i++)
        e->extent[i] = -1;
    for (int k = 0; k < n; k++)
        for (int j = 0; j < ell_count[k]; j++) {
            int64_t d = shapes[k]->dims[terms[k].ellipsis_at + j];
            unknown[n_ell - ell_count[k] + j] |= d < 0;
            if (!meet(&e->extent[n_ell - ell_count[k] + j], d))
                return xf_infer_refuse(why, why_len, "the ellipsis dims of operand %d (%s) do not broadcast with "
                                       "the other operands'", k, xf_infer_text(shapes[k]).s);
        }
    for (int i = 0; i < n_ell; i++) /* a dim no operand has is 1; one known only at run time unknown */
        e->extent[i] = e->extent[i] < 0 && !unknown[i] ? 1 : e->extent[i];
    return true;
}

/* Each operand's dims: the index each walks (letters get theirs in order
 * of first appearance, after the ellipsis indices). */
static bool plan_operands(const einsum_term *terms, int n, const xf_shape *const *shapes, const int *ell_count,
                          xf_einsum *e, unsigned char *letter_index, int *uses, char *why, size_t why_len)
{
    int n_ell = e->n_indices;
    for (int k = 0; k < n; k++) {
        const einsum_term *t = &terms[k];
        for (int j = 0, l = 0; j < shapes[k]->ndim; j++) {
            bool in_ellipsis = t->ellipsis_at >= 0 && j >= t->ellipsis_at && j < t->ellipsis_at + ell_count[k];
            if (in_ellipsis) {
                e->index[k][j] = (unsigned char)(n_ell - ell_count[k] + (j - t->ellipsis_at));
                continue;
            }
            int letter = t->letter[l++];
            if (letter_index[letter] == NO_INDEX) {
                letter_index[letter] = (unsigned char)e->n_indices;
                e->extent[e->n_indices++] = -1;
            }
            int index = e->index[k][j] = letter_index[letter];
            uses[letter]++;
            int64_t d = shapes[k]->dims[j];
            for (int i = 0; i < j; i++) /* a repeated letter takes the diagonal: equal extents */
                if (e->index[k][i] == index && shapes[k]->dims[i] != d && d >= 0 && shapes[k]->dims[i] >= 0)
                    return xf_infer_refuse(why, why_len, "operand %d repeats '%c' over dims of extents %" PRId64
                                           " and %" PRId64, k, letter_char(letter), shapes[k]->dims[i], d);
            int64_t before = e->extent[index];
            if (!meet(&e->extent[index], d))
                return xf_infer_refuse(why, why_len, "'%c' stands for extents %" PRId64 " and %" PRId64,
                                       letter_char(letter), before, d);
        }
    }
    return true;
}

/* The output: the explicit term, or (out NULL) the n_ell ellipsis dims
 * then the letters used once, in ASCII order. */
static bool plan_output(const einsum_term *out, int n_ell, const unsigned char *letter_index, const int *uses,
                        bool any_ellipsis, xf_einsum *e, char *why, size_t why_len)
{
    unsigned char list[N_LETTERS];
    int n_out = 0, ellipsis_at;
    if (out) {
        if (out->ellipsis_at < 0 && n_ell > 0)
            return xf_infer_refuse(why, why_len, "the output leaves out the %d dims the operands' ellipses stand "
                                   "for ('...')", n_ell);
        ellipsis_at = out->ellipsis_at;
        for (int i = 0; i < out->n_letters; i++) {
            int l = out->letter[i];
            if (letter_index[l] == NO_INDEX)
                return xf_infer_refuse(why, why_len, "the output's '%c' is in no operand", letter_char(l));
            for (int j = 0; j < i; j++)
                if (out->letter[j] == l)
                    return xf_infer_refuse(why, why_len, "the output repeats '%c'", letter_char(l));
            list[n_out++] = letter_index[l];
        }
    } else {
        ellipsis_at = any_ellipsis ? 0 : -1;
        for (int l = 0; l < N_LETTERS; l++)
            if (uses[l] == 1)
                list[n_out++] = letter_index[l];
    }
    int rank = n_out + (ellipsis_at >= 0 ? n_ell : 0);
    if (rank > XF_MAX_DIMS)
        return xf_infer_refuse(why, why_len, "the output would have rank %d; xflow handles at most %d", rank,
                               XF_MAX_DIMS);
    e->out.ndim = rank;
    for (int j = 0, i = 0; j < rank; j++) {
        bool in_ellipsis = ellipsis_at >= 0 && j >= ellipsis_at && j < ellipsis_at + n_ell;
        e->out_index[j] = in_ellipsis ? (unsigned char)(j - ellipsis_at) : list[i++];
        e->out.dims[j] = e->extent[e->out_index[j]];
    }
    return true;
}

bool xf_einsum_plan(const char *equation, int n, const xf_shape *const *shapes, xf_einsum *e, char *why, size_t why_len)
{
    memset(e, 0, sizeof *e);
    if (!equation)
        return xf_infer_refuse(why, why_len, "the node has no equation");
    if (n < 1 || n > XF_EINSUM_MAX_OPERANDS)
        return xf_infer_refuse(why, why_len, "%d operands; Einsum takes 1 to %d", n, XF_EINSUM_MAX_OPERANDS);
    const char *arrow = strstr(equation, "->"), *rhs = arrow ? arrow + 2 : "";
    const char *end = arrow ? arrow : equation + strlen(equation);
    if (strpbrk(rhs, "->") || equation + strcspn(equation, "->") < end)
        return xf_infer_refuse(why, why_len, "'-' and '>' only as one '->'");
    einsum_term terms[XF_EINSUM_MAX_OPERANDS], out;
    int n_terms = 0;
    bool any_ellipsis = false;
    for (const char *s = equation;;) { /* the terms between commas */
        const char *comma = memchr(s, ',', (size_t)(end - s)), *stop = comma ? comma : end;
        if (n_terms == n)
            return xf_infer_refuse(why, why_len, "more terms than the %d operands", n);
        if (!parse_term(s, (size_t)(stop - s), &terms[n_terms], why, why_len))
            return false;
        any_ellipsis |= terms[n_terms++].ellipsis_at >= 0;
        if (!comma)
            break;
        s = comma + 1;
    }
    if (n_terms != n)
        return xf_infer_refuse(why, why_len, "%d terms for %d operands", n_terms, n);
    if (arrow && !parse_term(rhs, strlen(rhs), &out, why, why_len))
        return false;
    for (int k = 0; k < n; k++)
        if (!shapes[k] || shapes[k]->ndim < 0)
            return xf_infer_refuse(why, why_len, "operand %d has no known shape", k);
    int ell_count[XF_EINSUM_MAX_OPERANDS], uses[N_LETTERS] = {0};
    unsigned char letter_index[N_LETTERS];
    memset(letter_index, NO_INDEX, sizeof letter_index);
    if (!plan_ellipses(terms, n, shapes, e, ell_count, why, why_len))
        return false;
    int n_ell = e->n_indices;
    if (!plan_operands(terms, n, shapes, ell_count, e, letter_index, uses, why, why_len))
        return false;
    return plan_output(arrow ? &out : NULL, n_ell, letter_index, uses, any_ellipsis, e, why, why_len);
}

/* Einsum: the output shape its equation gives for the operands'. */
xf_status xf_infer_einsum(xf_infer_ctx *c)
{
    const xf_shape *shapes[XF_EINSUM_MAX_OPERANDS];
    int n = c->node->n_inputs;
    for (int k = 0; k < n && k < XF_EINSUM_MAX_OPERANDS; k++)
        shapes[k] = xf_infer_has(c, k) ? xf_infer_shape(c, k) : NULL;
    xf_einsum e;
    char why[300];
    const char *equation = xf_einsum_equation(&c->node->attrs);
    if (!xf_einsum_plan(equation, n, shapes, &e, why, sizeof why))
        return xf_infer_fail(c, XF_ERR_INVALID, "equation '%s': %s", equation ? equation : "", why);
    xf_infer_set(c, 0, &e.out);
    return XF_OK;
}
