/* The library text format's parser (the format is described at the top of
 * rule_format.c).  Errors name the file and line. */
#include "rule_text.h"
#include "xf_rule.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Opset used to re-infer shapes when a file does not name one. */
#define RULE_DEFAULT_OPSET 17
/* Constants one rule may declare. */
#define RULE_MAX_CONSTS 8

/* ------------------------------------------------------------ parsing */

typedef struct parser {
    const char *name;
    int line;
    const char *p; /* cursor in the current line (NUL-terminated copy) */
    xf_error *err;
    xf_library *lib;
    xf_rule *rule;       /* rule being read, or NULL */
    xf_graph *side;      /* side being read, or NULL */
    int n_inputs_decl;   /* inputs declared for the rule */
    int cap_inputs;
    char **in_names;
    xf_dtype *in_dtypes;
    xf_shape *in_shapes;
    int paren_depth;     /* open parentheses in the expression being read */
    xf_tensor *const_init[RULE_MAX_CONSTS]; /* per rule constant: its values at the declared shape */
} parser;

static xf_status perr(parser *ps, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static xf_status perr(parser *ps, const char *fmt, ...)
{
    char msg[900];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return xf_error_set(ps->err, XF_ERR_PARSE, "%s:%d: %s", ps->name, ps->line, msg);
}

static void skip_ws(parser *ps)
{
    while (*ps->p == ' ' || *ps->p == '\t')
        ps->p++;
}

static bool is_word_char(char c)
{
    return isalnum((unsigned char)c) || c == '_' || c == '.' || c == '%' || c == '-';
}

/* Reads a word into buf; false (buf empty) when none is there. */
static bool read_word(parser *ps, char *buf, size_t n)
{
    skip_ws(ps);
    size_t k = 0;
    while (is_word_char(*ps->p) && k + 1 < n)
        buf[k++] = *ps->p++;
    buf[k] = '\0';
    return k > 0;
}

static bool accept(parser *ps, char c)
{
    skip_ws(ps);
    if (*ps->p != c)
        return false;
    ps->p++;
    return true;
}

static bool at_end(parser *ps)
{
    skip_ws(ps);
    return *ps->p == '\0';
}

static bool parse_i64(const char *s, int64_t *out)
{
    if (!*s)
        return false;
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || *end)
        return false;
    *out = v;
    return true;
}

static int lookup_name(const char *const *names, int n, const char *s)
{
    for (int i = 0; i < n; i++)
        if (strcmp(names[i], s) == 0)
            return i;
    return -1;
}

/* "1,2,3" into v (at most cap entries); returns the count or -1. */
static int parse_int_list(const char *s, int64_t *v, int cap)
{
    int n = 0;
    while (*s) {
        char *end;
        errno = 0;
        long long x = strtoll(s, &end, 10);
        if (errno || end == s || n == cap)
            return -1;
        v[n++] = x;
        s = end;
        if (*s == ',')
            s++;
        else if (*s)
            return -1;
    }
    return n;
}

static bool parse_shape(const char *s, xf_shape *out)
{
    if (strcmp(s, "scalar") == 0) {
        *out = xf_shape_make(0, NULL);
        return true;
    }
    out->ndim = 0;
    while (*s) {
        char *end;
        errno = 0;
        long long d = strtoll(s, &end, 10);
        if (errno || end == s || d < 0 || out->ndim == XF_MAX_DIMS)
            return false;
        out->dims[out->ndim++] = d;
        s = end;
        if (*s == 'x')
            s++;
        else if (*s)
            return false;
    }
    return out->ndim > 0;
}

static xf_dtype parse_dtype(const char *s)
{
    for (int t = 1; t < XF_DT_COUNT_; t++)
        if (strcasecmp(xf_dtype_name((xf_dtype)t), s) == 0)
            return (xf_dtype)t;
    return XF_DT_UNDEFINED;
}

static xf_status set_attr(parser *ps, xf_attrs *a, const char *key, const char *val)
{
    int64_t v[64];
    int n;
    if (strcmp(key, "kernel") == 0 || strcmp(key, "strides") == 0 || strcmp(key, "dilations") == 0) {
        n = parse_int_list(val, v, XF_MAX_SPATIAL);
        if (n <= 0)
            return perr(ps, "bad %s '%s'", key, val);
        if (a->n_spatial && a->n_spatial != n)
            return perr(ps, "%s has %d entries, other spatial attributes %d", key, n, a->n_spatial);
        a->n_spatial = n;
        int64_t *dst = key[0] == 'k' ? a->kernel : key[0] == 's' ? a->strides : a->dilations;
        memcpy(dst, v, (size_t)n * sizeof *v);
    } else if (strcmp(key, "pads") == 0) {
        n = parse_int_list(val, v, 2 * XF_MAX_SPATIAL);
        if (n <= 0 || n % 2 || (a->n_spatial && 2 * a->n_spatial != n))
            return perr(ps, "bad pads '%s'", val);
        a->n_spatial = n / 2;
        memcpy(a->pads, v, (size_t)n * sizeof *v);
    } else if (strcmp(key, "pad_pads") == 0) {
        n = parse_int_list(val, v, 2 * XF_MAX_DIMS);
        if (n <= 0 || n % 2)
            return perr(ps, "bad pad_pads '%s'", val);
        a->has_pads = true;
        a->n_pads = n;
        memcpy(a->pad_pads, v, (size_t)n * sizeof *v);
    } else if (strcmp(key, "perm") == 0) {
        if ((n = parse_int_list(val, v, XF_MAX_DIMS)) <= 0)
            return perr(ps, "bad perm '%s'", val);
        a->n_perm = n;
        memcpy(a->perm, v, (size_t)n * sizeof *v);
    } else if (strcmp(key, "split") == 0) {
        if ((n = parse_int_list(val, v, 64)) <= 0)
            return perr(ps, "bad split '%s'", val);
        a->n_split = n;
        memcpy(a->split, v, (size_t)n * sizeof *v);
    } else if (strcmp(key, "activation") == 0) {
        int k = lookup_name(rule_activation_names, 4, val);
        if (k < 0)
            return perr(ps, "unknown activation '%s'", val);
        a->activation = (xf_activation)k;
    } else if (strcmp(key, "auto_pad") == 0) {
        int k = lookup_name(rule_auto_pad_names, 4, val);
        if (k < 0)
            return perr(ps, "unknown auto_pad '%s'", val);
        a->auto_pad = (xf_auto_pad)k;
    } else if (strcmp(key, "alpha") == 0 || strcmp(key, "beta") == 0 || strcmp(key, "epsilon") == 0) {
        char *end;
        float f = strtof(val, &end);
        if (!*val || *end)
            return perr(ps, "bad %s '%s'", key, val);
        *(key[0] == 'a' ? &a->alpha : key[0] == 'b' ? &a->beta : &a->epsilon) = f;
    } else {
        int64_t x;
        if (!parse_i64(val, &x))
            return perr(ps, "bad value '%s' for %s", val, key);
        if (strcmp(key, "group") == 0)
            a->group = x;
        else if (strcmp(key, "axis") == 0)
            a->axis = x;
        else if (strcmp(key, "num_outputs") == 0)
            a->num_outputs = (int)x;
        else if (strcmp(key, "ceil_mode") == 0)
            a->ceil_mode = (int)x;
        else if (strcmp(key, "count_include_pad") == 0)
            a->count_include_pad = (int)x;
        else if (strcmp(key, "trans_a") == 0)
            a->trans_a = (int)x;
        else if (strcmp(key, "trans_b") == 0)
            a->trans_b = (int)x;
        else
            return perr(ps, "unknown attribute '%s'", key);
    }
    return XF_OK;
}

/* "a, b = Op(x, y) key=value ..." on the current side. */
static xf_status parse_node_line(parser *ps)
{
    xf_graph *g = ps->side;
    char outs[16][64], word[128];
    int n_out = 0;
    do {
        if (n_out == 16 || !read_word(ps, outs[n_out], sizeof outs[0]))
            return perr(ps, "expected an output name");
        n_out++;
    } while (accept(ps, ','));
    if (!accept(ps, '='))
        return perr(ps, "expected '='");
    if (!read_word(ps, word, sizeof word))
        return perr(ps, "expected an op name");
    xf_op op = xf_op_from_onnx(word);
    if (op == XF_OP_OPAQUE)
        return perr(ps, "unknown op '%s'", word);
    const xf_op_info *info = xf_op_get_info(op);
    if (!accept(ps, '('))
        return perr(ps, "expected '(' after %s", word);
    int ins[64], n_in = 0;
    if (!accept(ps, ')')) {
        do {
            if (n_in == 64 || !read_word(ps, word, sizeof word))
                return perr(ps, "expected an input name");
            int v = -1;
            if (strcmp(word, "_") != 0 && (v = xf_graph_find_value(g, word)) < 0) {
                /* A rule constant enters a side at its first use there. */
                const xf_rule *r = ps->rule;
                for (int c = 0; c < r->n_consts && v < 0; c++)
                    if (strcmp(r->consts[c].name, word) == 0 &&
                        (v = xf_graph_add_initializer(g, word, ps->const_init[c])) < 0)
                        return xf_error_set(ps->err, XF_ERR_NOMEM, "out of memory");
                if (v < 0)
                    return perr(ps, "unknown value '%s'", word);
            }
            ins[n_in++] = v;
        } while (accept(ps, ','));
        if (!accept(ps, ')'))
            return perr(ps, "expected ')'");
    }
    if (n_in < info->min_inputs || n_in > info->max_inputs)
        return perr(ps, "%s takes %d to %d inputs, not %d", info->onnx_name, info->min_inputs, info->max_inputs,
                    n_in);
    if (info->num_outputs >= 0 && (info->flags & XF_OPF_OPT_OUTS) && (n_out < 1 || n_out > info->num_outputs))
        return perr(ps, "%s has 1 to %d outputs, not %d", info->onnx_name, info->num_outputs, n_out);
    if (info->num_outputs >= 0 && !(info->flags & XF_OPF_OPT_OUTS) && n_out != info->num_outputs)
        return perr(ps, "%s has %d outputs, not %d", info->onnx_name, info->num_outputs, n_out);
    int outv[16];
    for (int k = 0; k < n_out; k++) {
        if (strcmp(outs[k], "_") == 0) {
            outv[k] = -1;
            continue;
        }
        if (xf_graph_find_value(g, outs[k]) >= 0)
            return perr(ps, "value '%s' defined twice", outs[k]);
        if ((outv[k] = xf_graph_add_value(g, outs[k], XF_DT_UNDEFINED, NULL)) < 0)
            return xf_error_set(ps->err, XF_ERR_NOMEM, "out of memory");
    }
    int node = xf_graph_add_node(g, op, NULL, n_in, ins, n_out, outv);
    if (node < 0)
        return xf_error_set(ps->err, XF_ERR_NOMEM, "out of memory");
    while (!at_end(ps)) {
        char key[64], val[512];
        if (!read_word(ps, key, sizeof key) || !accept(ps, '='))
            return perr(ps, "expected key=value");
        skip_ws(ps);
        size_t k = 0;
        while (*ps->p && *ps->p != ' ' && *ps->p != '\t' && k + 1 < sizeof val)
            val[k++] = *ps->p++;
        val[k] = '\0';
        xf_status st = set_attr(ps, &g->nodes[node].attrs, key, val);
        if (st != XF_OK)
            return st;
    }
    return XF_OK;
}

/* ---- expressions: sum := term (('+'|'-') term)*; term := atom (('*'|'/') atom)* */

static xf_status parse_sum(parser *ps, xf_expr *out);

static xf_status parse_atom(parser *ps, xf_expr *out)
{
    skip_ws(ps);
    if (accept(ps, '(')) {
        /* No expression of XF_EXPR_MAX_NODES nodes nests deeper, and
         * unbounded nesting would exhaust the stack. */
        if (++ps->paren_depth > XF_EXPR_MAX_NODES)
            return perr(ps, "expression nested more than %d parentheses deep", XF_EXPR_MAX_NODES);
        xf_status st = parse_sum(ps, out);
        ps->paren_depth--;
        if (st != XF_OK)
            return st;
        return accept(ps, ')') ? XF_OK : perr(ps, "expected ')' in expression");
    }
    char word[128];
    if (!read_word(ps, word, sizeof word))
        return perr(ps, "expected an expression");
    int64_t v;
    if (parse_i64(word, &v)) {
        *out = xf_expr_const(v);
        return XF_OK;
    }
    if (accept(ps, '[')) {
        char dim[32];
        int64_t d;
        if (!read_word(ps, dim, sizeof dim) || !parse_i64(dim, &d) || !accept(ps, ']'))
            return perr(ps, "expected a dimension index after '%s['", word);
        for (int k = 0; k < ps->n_inputs_decl; k++)
            if (strcmp(ps->in_names[k], word) == 0) {
                *out = xf_expr_dim(k, (int)d);
                return XF_OK;
            }
        return perr(ps, "unknown rule input '%s'", word);
    }
    xf_rule *r = ps->rule;
    for (int i = 0; i < r->n_params; i++)
        if (r->param_names[i] && strcmp(r->param_names[i], word) == 0) {
            *out = xf_expr_param(i);
            return XF_OK;
        }
    return perr(ps, "unknown parameter '%s'", word);
}

static xf_status parse_binary_chain(parser *ps, xf_expr *out, bool sums)
{
    xf_status st = sums ? parse_binary_chain(ps, out, false) : parse_atom(ps, out);
    for (;;) {
        if (st != XF_OK)
            return st;
        skip_ws(ps);
        char c = *ps->p;
        xf_expr_kind op;
        if (sums && (c == '+' || c == '-'))
            op = c == '+' ? XF_EX_ADD : XF_EX_SUB;
        else if (!sums && (c == '*' || c == '/'))
            op = c == '*' ? XF_EX_MUL : XF_EX_DIV;
        else
            return XF_OK;
        ps->p++;
        xf_expr rhs;
        st = sums ? parse_binary_chain(ps, &rhs, false) : parse_atom(ps, &rhs);
        if (st != XF_OK)
            return st;
        xf_expr lhs = *out;
        *out = xf_expr_binary(op, &lhs, &rhs);
        if (out->n == 0)
            return perr(ps, "expression too large (at most %d nodes)", XF_EXPR_MAX_NODES);
    }
}

static xf_status parse_sum(parser *ps, xf_expr *out) { return parse_binary_chain(ps, out, true); }

static xf_status parse_bind(parser *ps)
{
    xf_rule *r = ps->rule;
    char side[32], num[32], field[32];
    xf_binding b = {0};
    int64_t node;
    if (!read_word(ps, side, sizeof side) || (strcmp(side, "pattern") && strcmp(side, "replacement")))
        return perr(ps, "expected 'pattern' or 'replacement' after bind");
    b.replacement = side[0] == 'r';
    if (!read_word(ps, num, sizeof num) || !parse_i64(num, &node))
        return perr(ps, "expected a node index");
    b.node = (int)node;
    if (!read_word(ps, field, sizeof field))
        return perr(ps, "expected an attribute field");
    int f = 0;
    while (f < XF_AF_COUNT_ && strcmp(xf_attr_field_name((xf_attr_field)f), field) != 0)
        f++;
    if (f == XF_AF_COUNT_)
        return perr(ps, "unknown attribute field '%s'", field);
    b.field = (xf_attr_field)f;
    if (accept(ps, '[')) {
        int64_t idx;
        if (!read_word(ps, num, sizeof num) || !parse_i64(num, &idx) || !accept(ps, ']'))
            return perr(ps, "expected an index in '%s[...]'", field);
        b.index = (int)idx;
    }
    if (!accept(ps, '='))
        return perr(ps, "expected '=' in bind");
    xf_status st = parse_sum(ps, &b.e);
    if (st != XF_OK)
        return st;
    if (!at_end(ps))
        return perr(ps, "unexpected '%s' after expression", ps->p);
    xf_binding *nb = realloc(r->bindings, ((size_t)r->n_bindings + 1) * sizeof *nb);
    if (!nb)
        return xf_error_set(ps->err, XF_ERR_NOMEM, "out of memory");
    r->bindings = nb;
    r->bindings[r->n_bindings++] = b;
    return XF_OK;
}

static xf_status parse_constraint(parser *ps)
{
    xf_rule *r = ps->rule;
    xf_constraint c = {0};
    xf_status st = parse_sum(ps, &c.lhs);
    if (st != XF_OK)
        return st;
    skip_ws(ps);
    if (strncmp(ps->p, "odd", 3) == 0) {
        c.cmp = XF_CMP_ODD;
        ps->p += 3;
    } else {
        int best = -1;
        size_t best_len = 0;
        for (int k = 0; k < 4; k++) {
            size_t n = strlen(rule_cmp_names[k]);
            if (strncmp(ps->p, rule_cmp_names[k], n) == 0 && n > best_len) {
                best = k;
                best_len = n;
            }
        }
        if (best < 0)
            return perr(ps, "expected a comparison (==, !=, <, <=, odd)");
        c.cmp = (xf_cmp)best;
        ps->p += best_len;
        if ((st = parse_sum(ps, &c.rhs)) != XF_OK)
            return st;
    }
    if (!at_end(ps))
        return perr(ps, "unexpected '%s' after constraint", ps->p);
    xf_constraint *nc = realloc(r->constraints, ((size_t)r->n_constraints + 1) * sizeof *nc);
    if (!nc)
        return xf_error_set(ps->err, XF_ERR_NOMEM, "out of memory");
    r->constraints = nc;
    r->constraints[r->n_constraints++] = c;
    return XF_OK;
}

/* Ends the side being read: outputs given, shapes inferred. */
static xf_status finish_side(parser *ps)
{
    xf_graph *g = ps->side;
    if (!g)
        return XF_OK;
    ps->side = NULL;
    if (g->n_outputs == 0)
        return perr(ps, "%s of rule %s has no output", g->name, ps->rule->name);
    xf_error sub = {0};
    int64_t opset = ps->lib->opset > 0 ? ps->lib->opset : RULE_DEFAULT_OPSET;
    if (xf_graph_infer_shapes(g, opset, &sub) != XF_OK)
        return perr(ps, "%s of rule %s: %s", g->name, ps->rule->name, sub.msg);
    return XF_OK;
}

static xf_status start_side(parser *ps, const char *which)
{
    xf_rule *r = ps->rule;
    xf_graph **slot = which[0] == 'p' ? &r->pattern : &r->replacement;
    if (*slot)
        return perr(ps, "second %s in rule %s", which, r->name);
    if (ps->n_inputs_decl == 0)
        return perr(ps, "rule %s declares no inputs before its %s", r->name, which);
    if (!(*slot = xf_graph_create(which)))
        return xf_error_set(ps->err, XF_ERR_NOMEM, "out of memory");
    for (int k = 0; k < ps->n_inputs_decl; k++)
        if (xf_graph_add_input(*slot, ps->in_names[k], ps->in_dtypes[k], &ps->in_shapes[k]) < 0)
            return xf_error_set(ps->err, XF_ERR_NOMEM, "out of memory");
    ps->side = *slot;
    return XF_OK;
}

static xf_status parse_input_decl(parser *ps)
{
    char name[128], dtype[32], shape[256];
    if (!read_word(ps, name, sizeof name) || !read_word(ps, dtype, sizeof dtype) ||
        !read_word(ps, shape, sizeof shape) || !at_end(ps))
        return perr(ps, "expected 'input NAME DTYPE SHAPE'");
    if (ps->rule->pattern)
        return perr(ps, "input %s declared after the pattern", name);
    if (!rule_is_identifier(name))
        return perr(ps, "input name '%s' is not an identifier", name);
    for (int k = 0; k < ps->n_inputs_decl; k++)
        if (strcmp(ps->in_names[k], name) == 0)
            return perr(ps, "input %s declared twice", name);
    xf_dtype t = parse_dtype(dtype);
    if (t == XF_DT_UNDEFINED)
        return perr(ps, "unknown dtype '%s'", dtype);
    xf_shape s;
    if (!parse_shape(shape, &s))
        return perr(ps, "bad shape '%s'", shape);
    if (ps->n_inputs_decl == ps->cap_inputs) {
        int cap = ps->cap_inputs ? 2 * ps->cap_inputs : 8;
        char **nn = realloc(ps->in_names, (size_t)cap * sizeof *nn);
        if (nn)
            ps->in_names = nn;
        xf_dtype *nd = realloc(ps->in_dtypes, (size_t)cap * sizeof *nd);
        if (nd)
            ps->in_dtypes = nd;
        xf_shape *ns = realloc(ps->in_shapes, (size_t)cap * sizeof *ns);
        if (ns)
            ps->in_shapes = ns;
        if (!nn || !nd || !ns)
            return xf_error_set(ps->err, XF_ERR_NOMEM, "out of memory");
        ps->cap_inputs = cap;
    }
    if (!(ps->in_names[ps->n_inputs_decl] = strdup(name)))
        return xf_error_set(ps->err, XF_ERR_NOMEM, "out of memory");
    ps->in_dtypes[ps->n_inputs_decl] = t;
    ps->in_shapes[ps->n_inputs_decl] = s;
    ps->n_inputs_decl++;
    return XF_OK;
}

static void clear_inputs(parser *ps)
{
    for (int k = 0; k < ps->n_inputs_decl; k++)
        free(ps->in_names[k]);
    ps->n_inputs_decl = 0;
    for (int c = 0; c < RULE_MAX_CONSTS; c++) {
        xf_tensor_release(ps->const_init[c]);
        ps->const_init[c] = NULL;
    }
}

/* const NAME KIND DTYPE SHAPE = DIM, DIM, ... */
static xf_status parse_const_decl(parser *ps)
{
    xf_rule *r = ps->rule;
    char name[128], kind[64], dtype[32], shape[256];
    if (!read_word(ps, name, sizeof name) || !read_word(ps, kind, sizeof kind) ||
        !read_word(ps, dtype, sizeof dtype) || !read_word(ps, shape, sizeof shape) || !accept(ps, '='))
        return perr(ps, "expected 'const NAME KIND DTYPE SHAPE = DIM, ...'");
    if (r->pattern)
        return perr(ps, "constant %s declared after the pattern", name);
    if (!rule_is_identifier(name))
        return perr(ps, "constant name '%s' is not an identifier", name);
    for (int k = 0; k < ps->n_inputs_decl; k++)
        if (strcmp(ps->in_names[k], name) == 0)
            return perr(ps, "constant %s has the name of an input", name);
    for (int c = 0; c < r->n_consts; c++)
        if (strcmp(r->consts[c].name, name) == 0)
            return perr(ps, "constant %s declared twice", name);
    if (r->n_consts == RULE_MAX_CONSTS)
        return perr(ps, "more than %d constants in rule %s", RULE_MAX_CONSTS, r->name);
    xf_const_kind k = xf_const_kind_from_name(kind);
    if (k == XF_CONST_NONE)
        return perr(ps, "unknown constant kind '%s' (identity_matrix, identity_kernel, pool_kernel)", kind);
    if (parse_dtype(dtype) != XF_DT_FLOAT)
        return perr(ps, "constant %s: only FLOAT constants exist, not '%s'", name, dtype);
    xf_shape s;
    if (!parse_shape(shape, &s))
        return perr(ps, "bad shape '%s'", shape);
    if (!xf_const_shape_fits(k, &s))
        return perr(ps, "constant %s: shape %s does not fit a %s", name, shape, kind);
    xf_expr dims[XF_MAX_DIMS];
    int nd = 0;
    do {
        if (nd == s.ndim)
            return perr(ps, "constant %s: more dims than its shape %s has", name, shape);
        xf_status st = parse_sum(ps, &dims[nd]);
        if (st != XF_OK)
            return st;
        nd++;
    } while (accept(ps, ','));
    if (nd != s.ndim || !at_end(ps))
        return perr(ps, "constant %s: expected %d dims, one per dimension of %s", name, s.ndim, shape);
    xf_tensor *t = xf_const_make(k, &s);
    if (!t || !xf_rule_add_const(r, name, k, nd, dims)) {
        xf_tensor_release(t);
        return xf_error_set(ps->err, XF_ERR_NOMEM, "out of memory");
    }
    ps->const_init[r->n_consts - 1] = t;
    return XF_OK;
}

/* Replaces *slot with the rest of the line as free text, trailing white
 * space removed.  Control characters are refused: the printer could not
 * write them back unchanged. */
static xf_status rest_of_line(parser *ps, char **slot)
{
    skip_ws(ps);
    size_t n = strlen(ps->p);
    while (n > 0 && (ps->p[n - 1] == ' ' || ps->p[n - 1] == '\t' || ps->p[n - 1] == '\r'))
        n--;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)ps->p[i] < 0x20 && ps->p[i] != '\t')
            return perr(ps, "control character in text");
    char *out = strndup(ps->p, n);
    if (!out)
        return xf_error_set(ps->err, XF_ERR_NOMEM, "out of memory");
    free(*slot);
    *slot = out;
    return XF_OK;
}

static xf_status parse_params(parser *ps)
{
    xf_rule *r = ps->rule;
    if (r->n_params)
        return perr(ps, "second params line");
    char word[128];
    while (read_word(ps, word, sizeof word)) {
        if (!rule_is_identifier(word))
            return perr(ps, "parameter name '%s' is not an identifier", word);
        for (int i = 0; i < r->n_params; i++)
            if (strcmp(r->param_names[i], word) == 0)
                return perr(ps, "parameter %s declared twice", word);
        char **nn = realloc(r->param_names, ((size_t)r->n_params + 1) * sizeof *nn);
        if (!nn)
            return xf_error_set(ps->err, XF_ERR_NOMEM, "out of memory");
        r->param_names = nn;
        if (!(nn[r->n_params] = strdup(word)))
            return xf_error_set(ps->err, XF_ERR_NOMEM, "out of memory");
        r->n_params++;
    }
    return at_end(ps) ? XF_OK : perr(ps, "unexpected '%s' in params", ps->p);
}

/* One line inside a rule block. */
static xf_status parse_rule_line(parser *ps, const char *kw)
{
    xf_rule *r = ps->rule;
    xf_status st;
    if (strcmp(kw, "output") == 0 && ps->side) {
        char word[128];
        if (!read_word(ps, word, sizeof word) || !at_end(ps))
            return perr(ps, "expected 'output NAME'");
        int v = xf_graph_find_value(ps->side, word);
        if (v < 0)
            return perr(ps, "unknown value '%s'", word);
        xf_graph_add_output(ps->side, v);
        return XF_OK;
    }
    if (strcmp(kw, "pattern") == 0 || strcmp(kw, "replacement") == 0) {
        if (!at_end(ps))
            return perr(ps, "unexpected text after %s", kw);
        if ((st = finish_side(ps)) != XF_OK)
            return st;
        if (kw[0] == 'r' && !r->pattern)
            return perr(ps, "replacement before pattern in rule %s", r->name);
        return start_side(ps, kw);
    }
    if ((st = finish_side(ps)) != XF_OK)
        return st;
    if (strcmp(kw, "proved") == 0) {
        char word[16];
        if (!read_word(ps, word, sizeof word) || (strcmp(word, "yes") && strcmp(word, "no")) || !at_end(ps))
            return perr(ps, "expected 'proved yes' or 'proved no'");
        r->proved = word[0] == 'y';
        return XF_OK;
    }
    if (strcmp(kw, "provenance") == 0)
        return rest_of_line(ps, &r->provenance);
    if (strcmp(kw, "params") == 0)
        return parse_params(ps);
    if (strcmp(kw, "input") == 0)
        return parse_input_decl(ps);
    if (strcmp(kw, "const") == 0)
        return parse_const_decl(ps);
    if (strcmp(kw, "bind") == 0)
        return r->replacement ? parse_bind(ps) : perr(ps, "bind before both sides of rule %s", r->name);
    if (strcmp(kw, "constraint") == 0)
        return r->replacement ? parse_constraint(ps) : perr(ps, "constraint before both sides of rule %s", r->name);
    if (strcmp(kw, "end") == 0) {
        if (!r->pattern || !r->replacement)
            return perr(ps, "rule %s lacks its %s", r->name, r->pattern ? "replacement" : "pattern");
        xf_error sub = {0};
        if (xf_rule_validate(r, &sub) != XF_OK)
            return perr(ps, "%s", sub.msg);
        ps->rule = NULL;
        clear_inputs(ps);
        return xf_library_add(ps->lib, r, ps->err) == XF_OK ? XF_OK : perr(ps, "%s", ps->err->msg);
    }
    if (strcmp(kw, "rule") == 0)
        return perr(ps, "rule %s is not closed by 'end'", r->name);
    return perr(ps, "unknown keyword '%s' in rule %s", kw, r->name);
}

static xf_status parse_header_line(parser *ps, const char *kw, bool *seen_magic, int64_t *declared_rules)
{
    xf_library *lib = ps->lib;
    char word[256];
    int64_t v;
    if (!*seen_magic) {
        if (strcmp(kw, "xflow-library") != 0)
            return perr(ps, "not an xflow library (expected 'xflow-library %d')", XF_LIBRARY_VERSION);
        if (!read_word(ps, word, sizeof word) || !parse_i64(word, &v) || !at_end(ps))
            return perr(ps, "expected a format version");
        if (v != XF_LIBRARY_VERSION)
            return perr(ps, "library format version %" PRId64 " (this build reads %d)", v, XF_LIBRARY_VERSION);
        lib->version = (int)v;
        *seen_magic = true;
        return XF_OK;
    }
    if (strcmp(kw, "generator") == 0 || strcmp(kw, "op-set") == 0) {
        char **slot = kw[0] == 'g' ? &lib->generator : &lib->op_set;
        return rest_of_line(ps, slot);
    }
    if (strcmp(kw, "max-ops") == 0 || strcmp(kw, "seed") == 0 || strcmp(kw, "opset") == 0 ||
        strcmp(kw, "rules") == 0) {
        if (!read_word(ps, word, sizeof word) || !at_end(ps))
            return perr(ps, "expected a number after %s", kw);
        if (strcmp(kw, "seed") == 0) {
            char *end;
            errno = 0;
            unsigned long long s = strtoull(word, &end, 10);
            if (errno || *end || word[0] == '-')
                return perr(ps, "bad seed '%s'", word);
            lib->seed = s;
            return XF_OK;
        }
        if (!parse_i64(word, &v) || v < 0)
            return perr(ps, "bad %s '%s'", kw, word);
        if (kw[0] == 'm')
            lib->max_ops = (int)v;
        else if (kw[0] == 'o')
            lib->opset = v;
        else
            *declared_rules = v;
        return XF_OK;
    }
    return perr(ps, "unknown keyword '%s'", kw);
}

xf_status xf_library_parse(const char *text, size_t len, const char *name, xf_library **out, xf_error *err)
{
    parser ps = {.name = name ? name : "<library>", .err = err};
    if (!(ps.lib = xf_library_create()))
        return xf_error_set(err, XF_ERR_NOMEM, "out of memory");
    bool seen_magic = false;
    int64_t declared_rules = -1;
    xf_status st = XF_OK;
    char *line = NULL;
    size_t line_cap = 0;
    size_t pos = 0;
    while (pos < len && st == XF_OK) {
        size_t end = pos;
        while (end < len && text[end] != '\n')
            end++;
        size_t n = end - pos;
        if (n + 1 > line_cap) {
            char *nl = realloc(line, n + 1);
            if (!nl) {
                st = xf_error_set(err, XF_ERR_NOMEM, "out of memory");
                break;
            }
            line = nl;
            line_cap = n + 1;
        }
        memcpy(line, text + pos, n);
        if (n && line[n - 1] == '\r')
            n--;
        line[n] = '\0';
        pos = end + 1;
        ps.line++;
        ps.p = line;
        if (strlen(line) != n) {
            st = perr(&ps, "NUL byte in text");
            break;
        }
        skip_ws(&ps);
        if (*ps.p == '\0' || *ps.p == '#')
            continue;
        char kw[128];
        const char *start = ps.p;
        if (!read_word(&ps, kw, sizeof kw)) {
            st = perr(&ps, "unexpected '%s'", ps.p);
            break;
        }
        if (ps.side && (accept(&ps, '=') || accept(&ps, ','))) {
            ps.p = start;
            st = parse_node_line(&ps);
        } else if (ps.rule) {
            st = parse_rule_line(&ps, kw);
        } else if (strcmp(kw, "rule") == 0) {
            char rname[128];
            if (!seen_magic)
                st = perr(&ps, "rule before the 'xflow-library' header");
            else if (!read_word(&ps, rname, sizeof rname) || !rule_is_identifier(rname) || !at_end(&ps))
                st = perr(&ps, "expected 'rule NAME'");
            else if (!(ps.rule = xf_rule_create(rname)))
                st = xf_error_set(err, XF_ERR_NOMEM, "out of memory");
        } else {
            st = parse_header_line(&ps, kw, &seen_magic, &declared_rules);
        }
    }
    if (st == XF_OK && ps.rule)
        st = perr(&ps, "rule %s is not closed by 'end'", ps.rule->name);
    if (st == XF_OK && !seen_magic)
        st = perr(&ps, "empty library (no 'xflow-library' header)");
    if (st == XF_OK && declared_rules >= 0 && declared_rules != ps.lib->n_rules)
        st = perr(&ps, "header says %" PRId64 " rules, file holds %d (truncated?)", declared_rules,
                  ps.lib->n_rules);
    free(line);
    xf_rule_free(ps.rule);
    clear_inputs(&ps);
    free(ps.in_names);
    free(ps.in_dtypes);
    free(ps.in_shapes);
    if (st != XF_OK) {
        xf_library_free(ps.lib);
        return st;
    }
    *out = ps.lib;
    return XF_OK;
}

xf_status xf_library_load(const char *path, xf_library **out, xf_error *err)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return xf_error_set(err, XF_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap);
    size_t got;
    while (buf && (got = fread(buf + len, 1, cap - len, f)) > 0) {
        len += got;
        if (len == cap) {
            char *nb = realloc(buf, cap * 2);
            if (!nb) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = nb;
            cap *= 2;
        }
    }
    bool read_error = ferror(f);
    fclose(f);
    if (!buf)
        return xf_error_set(err, XF_ERR_NOMEM, "out of memory");
    if (read_error) {
        free(buf);
        return xf_error_set(err, XF_ERR_IO, "%s: read error", path);
    }
    xf_status st = xf_library_parse(buf, len, path, out, err);
    free(buf);
    return st;
}
