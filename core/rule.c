/* The rule type: attribute fields, binding expressions, rules and libraries.
 * The text format lives in rule_format.c (printer) and rule_parse.c. */
#include "xf_rule.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ attribute fields */

const char *xf_attr_field_name(xf_attr_field f)
{
    static const char *const names[XF_AF_COUNT_] = {
        [XF_AF_KERNEL] = "kernel", [XF_AF_STRIDE] = "stride", [XF_AF_PAD] = "pad",
        [XF_AF_DILATION] = "dilation", [XF_AF_GROUP] = "group", [XF_AF_AXIS] = "axis",
        [XF_AF_ACTIVATION] = "activation", [XF_AF_SPLIT] = "split", [XF_AF_PERM] = "perm",
    };
    return (unsigned)f < XF_AF_COUNT_ ? names[f] : "invalid";
}

/* Address of field f[index] in a, or NULL when index is outside the array.
 * Scalar fields accept index 0 only. */
static int64_t *field_slot(xf_attrs *a, xf_attr_field f, int index)
{
    if (index < 0)
        return NULL;
    switch (f) {
    case XF_AF_KERNEL:
        return index < XF_MAX_SPATIAL ? &a->kernel[index] : NULL;
    case XF_AF_STRIDE:
        return index < XF_MAX_SPATIAL ? &a->strides[index] : NULL;
    case XF_AF_PAD:
        return index < 2 * XF_MAX_SPATIAL ? &a->pads[index] : NULL;
    case XF_AF_DILATION:
        return index < XF_MAX_SPATIAL ? &a->dilations[index] : NULL;
    case XF_AF_GROUP:
        return index == 0 ? &a->group : NULL;
    case XF_AF_AXIS:
        return index == 0 ? &a->axis : NULL;
    case XF_AF_SPLIT:
        return index < (int)(sizeof a->split / sizeof a->split[0]) ? &a->split[index] : NULL;
    case XF_AF_PERM:
        return index < XF_MAX_DIMS ? &a->perm[index] : NULL;
    default:
        return NULL;
    }
}

bool xf_attr_field_get(const xf_attrs *a, xf_attr_field f, int index, int64_t *out)
{
    if (f == XF_AF_ACTIVATION) {
        if (index != 0)
            return false;
        *out = a->activation;
        return true;
    }
    /* Reading through the shared slot lookup; nothing is written. */
    int64_t *slot = field_slot((xf_attrs *)a, f, index);
    if (!slot)
        return false;
    *out = *slot;
    return true;
}

bool xf_attr_field_set(xf_attrs *a, xf_attr_field f, int index, int64_t v)
{
    if (f == XF_AF_ACTIVATION) {
        if (index != 0 || v < XF_ACT_NONE || v > XF_ACT_TANH)
            return false;
        a->activation = (xf_activation)v;
        return true;
    }
    int64_t *slot = field_slot(a, f, index);
    if (!slot)
        return false;
    *slot = v;
    /* Array fields grow their element count so that a set entry is seen.
     * Pads do not: their layout (begins then ends) depends on n_spatial,
     * which the kernel, stride or dilation fields set. */
    switch (f) {
    case XF_AF_KERNEL:
    case XF_AF_STRIDE:
    case XF_AF_DILATION:
        if (a->n_spatial < index + 1)
            a->n_spatial = index + 1;
        break;
    case XF_AF_SPLIT:
        if (a->n_split < index + 1)
            a->n_split = index + 1;
        break;
    case XF_AF_PERM:
        if (a->n_perm < index + 1)
            a->n_perm = index + 1;
        break;
    default:
        break;
    }
    return true;
}

/* ------------------------------------------------------------ expressions */

xf_expr xf_expr_const(int64_t v)
{
    xf_expr e = {0};
    e.n = 1;
    e.node[0].kind = XF_EX_CONST;
    e.node[0].value = v;
    return e;
}

xf_expr xf_expr_param(int p)
{
    xf_expr e = {0};
    e.n = 1;
    e.node[0].kind = XF_EX_PARAM;
    e.node[0].a = p;
    return e;
}

xf_expr xf_expr_dim(int input, int dim)
{
    xf_expr e = {0};
    e.n = 1;
    e.node[0].kind = XF_EX_DIM;
    e.node[0].a = input;
    e.node[0].b = dim;
    return e;
}

/* Copies the subtree of src rooted at 0 into dst starting at node `at`,
 * shifting operand indices. */
static void expr_copy_into(xf_expr *dst, int at, const xf_expr *src)
{
    for (int i = 0; i < src->n; i++) {
        dst->node[at + i] = src->node[i];
        if (src->node[i].kind >= XF_EX_ADD) {
            dst->node[at + i].lhs += at;
            dst->node[at + i].rhs += at;
        }
    }
}

xf_expr xf_expr_binary(xf_expr_kind op, const xf_expr *lhs, const xf_expr *rhs)
{
    xf_expr e = {0};
    if (op < XF_EX_ADD || op > XF_EX_DIV || lhs->n <= 0 || rhs->n <= 0 ||
        1 + lhs->n + rhs->n > XF_EXPR_MAX_NODES)
        return e;
    e.n = 1 + lhs->n + rhs->n;
    e.node[0].kind = op;
    e.node[0].lhs = 1;
    e.node[0].rhs = 1 + lhs->n;
    expr_copy_into(&e, 1, lhs);
    expr_copy_into(&e, 1 + lhs->n, rhs);
    return e;
}

static bool expr_eval_node(const xf_expr *e, int i, const int64_t *params, const bool *bound,
                           const xf_shape *shapes, int n_inputs, int depth, int64_t *out)
{
    if (i < 0 || i >= e->n || depth > XF_EXPR_MAX_NODES)
        return false;
    switch (e->node[i].kind) {
    case XF_EX_CONST:
        *out = e->node[i].value;
        return true;
    case XF_EX_PARAM:
        if (e->node[i].a < 0 || !params || !bound || !bound[e->node[i].a])
            return false;
        *out = params[e->node[i].a];
        return true;
    case XF_EX_DIM: {
        int in = e->node[i].a, d = e->node[i].b;
        if (in < 0 || in >= n_inputs || !shapes || shapes[in].ndim < 0)
            return false;
        if (d < 0)
            d += shapes[in].ndim;
        if (d < 0 || d >= shapes[in].ndim)
            return false;
        *out = shapes[in].dims[d];
        return true;
    }
    default: {
        int64_t l, r;
        if (!expr_eval_node(e, e->node[i].lhs, params, bound, shapes, n_inputs, depth + 1, &l) ||
            !expr_eval_node(e, e->node[i].rhs, params, bound, shapes, n_inputs, depth + 1, &r))
            return false;
        switch (e->node[i].kind) {
        case XF_EX_ADD:
            return !__builtin_add_overflow(l, r, out);
        case XF_EX_SUB:
            return !__builtin_sub_overflow(l, r, out);
        case XF_EX_MUL:
            return !__builtin_mul_overflow(l, r, out);
        case XF_EX_DIV:
            if (r == 0 || (l == INT64_MIN && r == -1) || l % r != 0)
                return false;
            *out = l / r;
            return true;
        default:
            return false;
        }
    }
    }
}

bool xf_expr_eval(const xf_expr *e, const int64_t *params, const bool *bound, const xf_shape *input_shapes,
                  int n_inputs, int64_t *out)
{
    return expr_eval_node(e, 0, params, bound, input_shapes, n_inputs, 0, out);
}

/* ------------------------------------------------------------ rules */

static char *dup_str(const char *s)
{
    if (!s)
        return NULL;
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d)
        memcpy(d, s, n);
    return d;
}

xf_rule *xf_rule_create(const char *name)
{
    xf_rule *r = calloc(1, sizeof *r);
    if (!r)
        return NULL;
    r->name = dup_str(name ? name : "");
    if (!r->name) {
        free(r);
        return NULL;
    }
    return r;
}

void xf_rule_free(xf_rule *r)
{
    if (!r)
        return;
    free(r->name);
    xf_graph_free(r->pattern);
    xf_graph_free(r->replacement);
    for (int i = 0; i < r->n_params; i++)
        free(r->param_names ? r->param_names[i] : NULL);
    free(r->param_names);
    free(r->bindings);
    free(r->constraints);
    for (int i = 0; i < r->n_consts; i++)
        free(r->consts[i].name);
    free(r->consts);
    free(r->provenance);
    free(r);
}

xf_rule *xf_rule_clone(const xf_rule *r)
{
    xf_rule *c = xf_rule_create(r->name);
    if (!c)
        return NULL;
    bool ok = true;
    if (r->pattern)
        ok &= (c->pattern = xf_graph_clone(r->pattern)) != NULL;
    if (r->replacement)
        ok &= (c->replacement = xf_graph_clone(r->replacement)) != NULL;
    if (r->n_params > 0) {
        c->param_names = calloc((size_t)r->n_params, sizeof *c->param_names);
        ok &= c->param_names != NULL;
        if (c->param_names) {
            c->n_params = r->n_params;
            for (int i = 0; i < r->n_params && r->param_names; i++)
                if (r->param_names[i])
                    ok &= (c->param_names[i] = dup_str(r->param_names[i])) != NULL;
        }
    } else {
        c->n_params = r->n_params;
    }
    if (r->n_bindings > 0) {
        c->bindings = malloc((size_t)r->n_bindings * sizeof *c->bindings);
        ok &= c->bindings != NULL;
        if (c->bindings) {
            memcpy(c->bindings, r->bindings, (size_t)r->n_bindings * sizeof *c->bindings);
            c->n_bindings = r->n_bindings;
        }
    }
    if (r->n_constraints > 0) {
        c->constraints = malloc((size_t)r->n_constraints * sizeof *c->constraints);
        ok &= c->constraints != NULL;
        if (c->constraints) {
            memcpy(c->constraints, r->constraints, (size_t)r->n_constraints * sizeof *c->constraints);
            c->n_constraints = r->n_constraints;
        }
    }
    for (int i = 0; i < r->n_consts; i++)
        ok &= xf_rule_add_const(c, r->consts[i].name, r->consts[i].kind, r->consts[i].ndim, r->consts[i].dims);
    c->proved = r->proved;
    if (r->provenance)
        ok &= (c->provenance = dup_str(r->provenance)) != NULL;
    if (!ok) {
        xf_rule_free(c);
        return NULL;
    }
    return c;
}

/* Checks that e names only existing params and inputs and is well formed. */
static xf_status expr_validate(const xf_rule *r, const xf_expr *e, const char *what, xf_error *err)
{
    if (e->n <= 0 || e->n > XF_EXPR_MAX_NODES)
        return xf_error_set(err, XF_ERR_INVALID, "rule %s: %s: empty or oversized expression", r->name, what);
    int n_inputs = r->pattern->n_inputs;
    for (int i = 0; i < e->n; i++) {
        switch (e->node[i].kind) {
        case XF_EX_CONST:
            break;
        case XF_EX_PARAM:
            if (e->node[i].a < 0 || e->node[i].a >= r->n_params)
                return xf_error_set(err, XF_ERR_INVALID, "rule %s: %s: parameter %d does not exist", r->name,
                                    what, e->node[i].a);
            break;
        case XF_EX_DIM:
            if (e->node[i].a < 0 || e->node[i].a >= n_inputs)
                return xf_error_set(err, XF_ERR_INVALID, "rule %s: %s: rule input %d does not exist", r->name,
                                    what, e->node[i].a);
            break;
        case XF_EX_ADD:
        case XF_EX_SUB:
        case XF_EX_MUL:
        case XF_EX_DIV:
            /* Operands come after their parent, which also rules out cycles. */
            if (e->node[i].lhs <= i || e->node[i].lhs >= e->n || e->node[i].rhs <= i || e->node[i].rhs >= e->n)
                return xf_error_set(err, XF_ERR_INVALID, "rule %s: %s: malformed expression", r->name, what);
            break;
        default:
            return xf_error_set(err, XF_ERR_INVALID, "rule %s: %s: unknown expression kind", r->name, what);
        }
    }
    return XF_OK;
}

/* Marks params referenced by e in used[]. */
static void expr_params(const xf_expr *e, bool *used)
{
    for (int i = 0; i < e->n; i++)
        if (e->node[i].kind == XF_EX_PARAM)
            used[e->node[i].a] = true;
}

xf_status xf_rule_validate(const xf_rule *r, xf_error *err)
{
    if (!r->pattern || !r->replacement)
        return xf_error_set(err, XF_ERR_INVALID, "rule %s: missing %s", r->name,
                            r->pattern ? "replacement" : "pattern");
    const xf_graph *p = r->pattern, *q = r->replacement;
    if (p->n_inputs != q->n_inputs)
        return xf_error_set(err, XF_ERR_INVALID, "rule %s: pattern has %d inputs, replacement %d", r->name,
                            p->n_inputs, q->n_inputs);
    for (int k = 0; k < p->n_inputs; k++)
        if (p->values[p->inputs[k]].dtype != q->values[q->inputs[k]].dtype)
            return xf_error_set(err, XF_ERR_INVALID, "rule %s: rule input %d has dtype %s in the pattern, %s in "
                                "the replacement", r->name, k, xf_dtype_name(p->values[p->inputs[k]].dtype),
                                xf_dtype_name(q->values[q->inputs[k]].dtype));
    if (p->n_outputs < 1 || p->n_outputs != q->n_outputs)
        return xf_error_set(err, XF_ERR_INVALID, "rule %s: pattern has %d outputs, replacement %d", r->name,
                            p->n_outputs, q->n_outputs);
    xf_error sub = {0};
    if (xf_graph_validate(p, &sub) != XF_OK || xf_graph_validate(q, &sub) != XF_OK)
        return xf_error_set(err, XF_ERR_INVALID, "rule %s: %s", r->name, sub.msg);
    /* the specifications (verifier, fingerprints) model MaxPool's Y only */
    const xf_graph *sides[2] = {p, q};
    for (int s = 0; s < 2; s++)
        for (int i = 0; i < sides[s]->n_nodes; i++)
            if (sides[s]->nodes[i].op == XF_OP_MAX_POOL && sides[s]->nodes[i].n_outputs > 1)
                return xf_error_set(err, XF_ERR_UNSUPPORTED, "rule %s: a MaxPool with an Indices output", r->name);
    if (r->n_params < 0 || (r->n_params > 0 && !r->param_names))
        return xf_error_set(err, XF_ERR_INVALID, "rule %s: bad parameter list", r->name);

    bool *bound = calloc((size_t)r->n_params + 1, sizeof *bound);
    bool *used = calloc((size_t)r->n_params + 1, sizeof *used);
    xf_status st = XF_OK;
    if (!bound || !used) {
        st = xf_error_set(err, XF_ERR_NOMEM, "out of memory");
        goto done;
    }
    for (int i = 0; i < r->n_bindings && st == XF_OK; i++) {
        const xf_binding *b = &r->bindings[i];
        const xf_graph *g = b->replacement ? q : p;
        char what[64];
        snprintf(what, sizeof what, "binding %d", i);
        int64_t v;
        if (b->node < 0 || b->node >= g->n_nodes)
            st = xf_error_set(err, XF_ERR_INVALID, "rule %s: %s: %s node %d does not exist", r->name, what,
                              b->replacement ? "replacement" : "pattern", b->node);
        else if (!xf_attr_field_get(&g->nodes[b->node].attrs, b->field, b->index, &v))
            st = xf_error_set(err, XF_ERR_INVALID, "rule %s: %s: no field %s[%d]", r->name, what,
                              xf_attr_field_name(b->field), b->index);
        else
            st = expr_validate(r, &b->e, what, err);
        if (st != XF_OK)
            break;
        /* A bare parameter in a pattern binding binds it; every other use reads it. */
        if (!b->replacement && b->e.n == 1 && b->e.node[0].kind == XF_EX_PARAM)
            bound[b->e.node[0].a] = true;
        else
            expr_params(&b->e, used);
    }
    for (int i = 0; i < r->n_constraints && st == XF_OK; i++) {
        char what[64];
        snprintf(what, sizeof what, "constraint %d", i);
        const xf_constraint *c = &r->constraints[i];
        if (c->cmp < XF_CMP_EQ || c->cmp > XF_CMP_ODD)
            st = xf_error_set(err, XF_ERR_INVALID, "rule %s: %s: unknown comparison", r->name, what);
        if (st == XF_OK)
            st = expr_validate(r, &c->lhs, what, err);
        if (st == XF_OK && c->cmp != XF_CMP_ODD)
            st = expr_validate(r, &c->rhs, what, err);
        if (st == XF_OK) {
            expr_params(&c->lhs, used);
            if (c->cmp != XF_CMP_ODD)
                expr_params(&c->rhs, used);
        }
    }
    for (int i = 0; i < r->n_consts && st == XF_OK; i++) {
        const xf_rule_const *c = &r->consts[i];
        char what[160];
        snprintf(what, sizeof what, "constant %s", c->name ? c->name : "?");
        if (!c->name || c->kind <= XF_CONST_NONE || c->kind >= XF_CONST_KIND_COUNT_ || c->ndim < 0 ||
            c->ndim > XF_MAX_DIMS)
            st = xf_error_set(err, XF_ERR_INVALID, "rule %s: %s: bad kind or rank", r->name, what);
        for (int d = 0; d < c->ndim && st == XF_OK; d++) {
            st = expr_validate(r, &c->dims[d], what, err);
            expr_params(&c->dims[d], used);
        }
        if (st == XF_OK && c->name && xf_graph_find_value(p, c->name) < 0 && xf_graph_find_value(q, c->name) < 0)
            st = xf_error_set(err, XF_ERR_INVALID, "rule %s: %s is used on neither side", r->name, what);
    }
    /* A constant named as a rule constant holds its kind's values (any
     * other constant is fixed: it matches only equal data). */
    for (int s = 0; s < 2 && st == XF_OK; s++) {
        const xf_graph *g = s ? q : p;
        for (int v = 0; v < g->n_values && st == XF_OK; v++) {
            const xf_tensor *t = g->values[v].init;
            if (!t)
                continue;
            const xf_rule_const *c = xf_rule_const_of(r, g, v);
            if (c && (t->shape.ndim != c->ndim || xf_const_kind_of(t) != c->kind))
                st = xf_error_set(err, XF_ERR_INVALID, "rule %s: constant %s does not hold a %s of rank %d", r->name,
                                  c->name, xf_const_kind_name(c->kind), c->ndim);
        }
    }
    for (int i = 0; i < r->n_params && st == XF_OK; i++)
        if (used[i] && !bound[i])
            st = xf_error_set(err, XF_ERR_INVALID, "rule %s: parameter %s is used but never bound by the pattern",
                              r->name, r->param_names[i] ? r->param_names[i] : "?");
done:
    free(bound);
    free(used);
    return st;
}

/* ------------------------------------------------------------ rule constants */

static const char *const const_kind_names[XF_CONST_KIND_COUNT_] = {
    [XF_CONST_NONE] = "none",
    [XF_CONST_IDENTITY_MATRIX] = "identity_matrix",
    [XF_CONST_IDENTITY_KERNEL] = "identity_kernel",
    [XF_CONST_POOL_KERNEL] = "pool_kernel",
};

const char *xf_const_kind_name(xf_const_kind k)
{
    return (unsigned)k < XF_CONST_KIND_COUNT_ ? const_kind_names[k] : "invalid";
}

xf_const_kind xf_const_kind_from_name(const char *name)
{
    for (int k = XF_CONST_NONE + 1; k < XF_CONST_KIND_COUNT_; k++)
        if (name && strcmp(name, const_kind_names[k]) == 0)
            return (xf_const_kind)k;
    return XF_CONST_NONE;
}

bool xf_const_shape_fits(xf_const_kind k, const xf_shape *s)
{
    if (s->ndim < 2 || s->dims[0] < 1 || s->dims[1] != s->dims[0])
        return false;
    switch (k) {
    case XF_CONST_IDENTITY_MATRIX:
        return s->ndim == 2;
    case XF_CONST_IDENTITY_KERNEL:
    case XF_CONST_POOL_KERNEL:
        return s->ndim == 4 && s->dims[2] > 0 && s->dims[3] > 0 && s->dims[2] % 2 == 1 && s->dims[3] % 2 == 1;
    default:
        return false;
    }
}

/* Value of kind k at element i of shape s (which fits k). */
static float const_element(xf_const_kind k, const xf_shape *s, int64_t i)
{
    int64_t n = s->dims[0];
    if (k == XF_CONST_IDENTITY_MATRIX)
        return i / n == i % n ? 1.0f : 0.0f;
    int64_t area = s->dims[2] * s->dims[3], o = i / (n * area), c = (i / area) % n, pos = i % area;
    if (o != c)
        return 0.0f;
    if (k == XF_CONST_POOL_KERNEL)
        return 1.0f / (float)area;
    return pos == area / 2 ? 1.0f : 0.0f;
}

xf_tensor *xf_const_make(xf_const_kind k, const xf_shape *s)
{
    if (!xf_const_shape_fits(k, s))
        return NULL;
    xf_tensor *t = xf_tensor_create(XF_DT_FLOAT, s);
    if (!t)
        return NULL;
    float *d = t->data;
    int64_t numel = xf_shape_numel(s);
    for (int64_t i = 0; i < numel; i++)
        d[i] = const_element(k, s, i);
    return t;
}

xf_const_kind xf_const_kind_of(const xf_tensor *t)
{
    if (!t || t->dtype != XF_DT_FLOAT || !t->data)
        return XF_CONST_NONE;
    const float *d = t->data;
    int64_t numel = xf_shape_numel(&t->shape);
    for (int k = XF_CONST_NONE + 1; k < XF_CONST_KIND_COUNT_; k++) {
        if (!xf_const_shape_fits((xf_const_kind)k, &t->shape))
            continue;
        bool same = true;
        for (int64_t i = 0; i < numel && same; i++) {
            float want = const_element((xf_const_kind)k, &t->shape, i);
            same = k == XF_CONST_POOL_KERNEL ? fabsf(d[i] - want) <= 1e-7f : d[i] == want;
        }
        if (same)
            return (xf_const_kind)k;
    }
    return XF_CONST_NONE;
}

const xf_rule_const *xf_rule_const_of(const xf_rule *r, const xf_graph *g, int v)
{
    if (v < 0 || v >= g->n_values || !g->values[v].init || !g->values[v].name)
        return NULL;
    for (int i = 0; i < r->n_consts; i++)
        if (r->consts[i].name && strcmp(r->consts[i].name, g->values[v].name) == 0)
            return &r->consts[i];
    return NULL;
}

bool xf_rule_const_shape(const xf_rule_const *c, const xf_shape *input_shapes, int n_inputs, xf_shape *out)
{
    memset(out, 0, sizeof *out);
    out->ndim = c->ndim;
    for (int d = 0; d < c->ndim; d++)
        if (!xf_expr_eval(&c->dims[d], NULL, NULL, input_shapes, n_inputs, &out->dims[d]))
            return false;
    return xf_const_shape_fits(c->kind, out);
}

bool xf_rule_add_const(xf_rule *r, const char *name, xf_const_kind kind, int ndim, const xf_expr *dims)
{
    if (ndim < 0 || ndim > XF_MAX_DIMS)
        return false;
    xf_rule_const *nc = realloc(r->consts, ((size_t)r->n_consts + 1) * sizeof *nc);
    if (!nc)
        return false;
    r->consts = nc;
    xf_rule_const *c = &r->consts[r->n_consts];
    memset(c, 0, sizeof *c);
    if (!(c->name = dup_str(name)))
        return false;
    c->kind = kind;
    c->ndim = ndim;
    for (int d = 0; d < ndim; d++)
        c->dims[d] = dims[d];
    r->n_consts++;
    return true;
}

/* ------------------------------------------------------------ libraries */

xf_library *xf_library_create(void)
{
    xf_library *lib = calloc(1, sizeof *lib);
    if (lib)
        lib->version = XF_LIBRARY_VERSION;
    return lib;
}

void xf_library_free(xf_library *lib)
{
    if (!lib)
        return;
    for (int i = 0; i < lib->n_rules; i++)
        xf_rule_free(lib->rules[i]);
    free(lib->rules);
    free(lib->generator);
    free(lib->op_set);
    free(lib);
}

xf_status xf_library_add(xf_library *lib, xf_rule *r, xf_error *err)
{
    for (int i = 0; i < lib->n_rules; i++)
        if (strcmp(lib->rules[i]->name, r->name) == 0) {
            xf_status st = xf_error_set(err, XF_ERR_INVALID, "duplicate rule name '%s'", r->name);
            xf_rule_free(r);
            return st;
        }
    if (lib->n_rules == lib->cap_rules) {
        int cap = lib->cap_rules ? 2 * lib->cap_rules : 64;
        xf_rule **rules = realloc(lib->rules, (size_t)cap * sizeof *rules);
        if (!rules) {
            xf_rule_free(r);
            return xf_error_set(err, XF_ERR_NOMEM, "out of memory");
        }
        lib->rules = rules;
        lib->cap_rules = cap;
    }
    lib->rules[lib->n_rules++] = r;
    return XF_OK;
}

xf_status xf_library_add_left_out(xf_library *lib, xf_rule *r, char prefix, const char *why, xf_error *err)
{
    char name[32];
    snprintf(name, sizeof name, "%c%04d", prefix, lib->n_rules);
    const char *was = r->provenance ? r->provenance : "";
    size_t len = strlen(why) + strlen(was) + 3;
    char *prov = malloc(len), *renamed = dup_str(name);
    if (!prov || !renamed) {
        free(prov);
        free(renamed);
        xf_rule_free(r);
        return xf_error_set(err, XF_ERR_NOMEM, "out of memory");
    }
    snprintf(prov, len, "%s: %s", why, was);
    for (char *c = prov; *c; c++)
        if (*c == '\n' || *c == '\r')
            *c = ' ';
    free(r->provenance);
    r->provenance = prov;
    free(r->name);
    r->name = renamed;
    return xf_library_add(lib, r, err);
}
