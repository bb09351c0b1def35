/* The library text format, and its printer (the parser is rule_parse.c).
 *
 *   xflow-library 1
 *   generator xflow-gen 0.1.0
 *   op-set Conv,MatMul,...
 *   max-ops 3
 *   seed 1
 *   opset 17
 *   rules 1
 *
 *   rule r0001
 *   proved no
 *   provenance fingerprint 3f2a..., found on 2x4x5x5
 *   params k
 *   input x0 FLOAT 2x4x5x5
 *   input x1 FLOAT 4x4x3x3
 *   pattern
 *     %0 = Conv(x0, x1) kernel=3,3 strides=1,1 pads=1,1,1,1 dilations=1,1
 *     %1 = Relu(%0)
 *     output %1
 *   replacement
 *     %0 = Conv(x0, x1) kernel=3,3 strides=1,1 pads=1,1,1,1 dilations=1,1 activation=relu
 *     output %0
 *   ...
 *
 * Pad takes its pads as `pad_pads=` (begins then ends, zero padding): the
 * attribute form, which the optimizer folds into a constant kernel.
 * A rule constant (see xf_rule_const) is declared after the inputs and
 * named like an input on the sides that use it; its dims are expressions:
 *   const e identity_kernel FLOAT 2x2x3x3 = x[1], x[1], 3, 3
 *   bind pattern 0 kernel[0] = k
 *   constraint k odd
 *   constraint (k - 1) == (2 * x0[1])
 *   end
 *
 * Node outputs are named %0, %1, ... in node order on each side, rule inputs
 * by their declared names; `_` is an omitted optional input.  Output shapes
 * are not written: they are re-inferred when a rule is read, so a file cannot
 * hold a shape that disagrees with shape inference.  Blank lines and lines
 * starting with '#' are ignored. */
#include "rule_text.h"
#include "xf_rule.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ------------------------------------------------------------ printing */

typedef struct strbuf {
    char *s;
    size_t len, cap;
    bool failed;
} strbuf;

static void sb_printf(strbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void sb_printf(strbuf *b, const char *fmt, ...)
{
    if (b->failed)
        return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(b->s ? b->s + b->len : NULL, b->s ? b->cap - b->len : 0, fmt, ap);
        va_end(ap);
        if (n < 0) {
            b->failed = true;
            return;
        }
        if (b->s && b->len + (size_t)n < b->cap) {
            b->len += (size_t)n;
            return;
        }
        size_t cap = b->cap ? b->cap : 4096;
        while (cap <= b->len + (size_t)n)
            cap *= 2;
        char *s = realloc(b->s, cap);
        if (!s) {
            b->failed = true;
            return;
        }
        b->s = s;
        b->cap = cap;
    }
}

static void sb_ints(strbuf *b, const char *key, const int64_t *v, int n)
{
    sb_printf(b, " %s=", key);
    for (int i = 0; i < n; i++)
        sb_printf(b, "%s%" PRId64, i ? "," : "", v[i]);
}

/* The attributes the format holds, copied onto op's defaults: a node whose
 * attributes differ from this copy has something the format would lose. */
static void printable_attrs(xf_op op, const xf_attrs *a, xf_attrs *out)
{
    xf_attrs_default(op, out);
    out->n_spatial = a->n_spatial;
    memcpy(out->kernel, a->kernel, sizeof a->kernel);
    memcpy(out->strides, a->strides, sizeof a->strides);
    memcpy(out->pads, a->pads, sizeof a->pads);
    memcpy(out->dilations, a->dilations, sizeof a->dilations);
    out->group = a->group;
    out->auto_pad = a->auto_pad;
    out->ceil_mode = a->ceil_mode;
    out->count_include_pad = a->count_include_pad;
    out->activation = a->activation;
    out->axis = a->axis;
    out->n_perm = a->n_perm;
    memcpy(out->perm, a->perm, sizeof a->perm);
    out->num_outputs = a->num_outputs;
    out->n_split = a->n_split;
    memcpy(out->split, a->split, sizeof a->split);
    out->alpha = a->alpha;
    out->beta = a->beta;
    out->epsilon = a->epsilon;
    out->trans_a = a->trans_a;
    out->trans_b = a->trans_b;
    /* Pad's pads in the attribute form, zero padding only (kernel enlarge). */
    out->has_pads = a->has_pads;
    out->n_pads = a->n_pads;
    memcpy(out->pad_pads, a->pad_pads, sizeof a->pad_pads);
}

static void format_attrs(strbuf *b, xf_op op, const xf_attrs *a)
{
    xf_attrs d;
    xf_attrs_default(op, &d);
    int ns = a->n_spatial;
    if (ns > 0) {
        sb_ints(b, "kernel", a->kernel, ns);
        sb_ints(b, "strides", a->strides, ns);
        sb_ints(b, "pads", a->pads, 2 * ns);
        sb_ints(b, "dilations", a->dilations, ns);
    }
    if (a->group != d.group)
        sb_printf(b, " group=%" PRId64, a->group);
    if (a->auto_pad != d.auto_pad)
        sb_printf(b, " auto_pad=%s", rule_auto_pad_names[a->auto_pad]);
    if (a->ceil_mode != d.ceil_mode)
        sb_printf(b, " ceil_mode=%d", a->ceil_mode);
    if (a->count_include_pad != d.count_include_pad)
        sb_printf(b, " count_include_pad=%d", a->count_include_pad);
    if (a->activation != d.activation)
        sb_printf(b, " activation=%s", rule_activation_names[a->activation]);
    if (a->axis != d.axis)
        sb_printf(b, " axis=%" PRId64, a->axis);
    if (a->n_perm > 0)
        sb_ints(b, "perm", a->perm, a->n_perm);
    if (a->num_outputs != d.num_outputs)
        sb_printf(b, " num_outputs=%d", a->num_outputs);
    if (a->n_split > 0)
        sb_ints(b, "split", a->split, a->n_split);
    if (a->alpha != d.alpha)
        sb_printf(b, " alpha=%.9g", (double)a->alpha);
    if (a->beta != d.beta)
        sb_printf(b, " beta=%.9g", (double)a->beta);
    if (a->epsilon != d.epsilon)
        sb_printf(b, " epsilon=%.9g", (double)a->epsilon);
    if (a->trans_a != d.trans_a)
        sb_printf(b, " trans_a=%d", a->trans_a);
    if (a->trans_b != d.trans_b)
        sb_printf(b, " trans_b=%d", a->trans_b);
    if (a->has_pads)
        sb_ints(b, "pad_pads", a->pad_pads, a->n_pads);
}

/* Name of value v on a side: rule inputs by the pattern's names, node
 * outputs %k numbered in node order (names[] precomputed). */
static void format_value(strbuf *b, const xf_graph *g, const xf_graph *pattern, const int *out_index, int v)
{
    if (v < 0) {
        sb_printf(b, "_");
        return;
    }
    for (int k = 0; k < g->n_inputs; k++)
        if (g->inputs[k] == v) {
            sb_printf(b, "%s", pattern->values[pattern->inputs[k]].name);
            return;
        }
    if (g->values[v].init) {
        sb_printf(b, "%s", g->values[v].name);
        return;
    }
    sb_printf(b, "%%%d", out_index[v]);
}

static xf_status format_side(strbuf *b, const xf_rule *r, const xf_graph *g, const char *side, xf_error *err)
{
    int *out_index = malloc(((size_t)g->n_values + 1) * sizeof *out_index);
    if (!out_index)
        return xf_error_set(err, XF_ERR_NOMEM, "out of memory");
    for (int v = 0; v < g->n_values; v++) {
        out_index[v] = -1;
        if (g->values[v].init && !xf_rule_const_of(r, g, v)) {
            free(out_index);
            return xf_error_set(err, XF_ERR_UNSUPPORTED, "rule %s: the %s holds constant '%s', which is not a "
                                "rule constant", r->name, side, g->values[v].name);
        }
    }
    int next = 0;
    for (int i = 0; i < g->n_nodes; i++)
        for (int k = 0; k < g->nodes[i].n_outputs; k++)
            if (g->nodes[i].outputs[k] >= 0)
                out_index[g->nodes[i].outputs[k]] = next++;
    sb_printf(b, "%s\n", side);
    for (int i = 0; i < g->n_nodes; i++) {
        const xf_node *n = &g->nodes[i];
        xf_attrs held;
        printable_attrs(n->op, &n->attrs, &held);
        if (n->op == XF_OP_OPAQUE || memcmp(&held, &n->attrs, sizeof held) != 0) {
            free(out_index);
            return xf_error_set(err, XF_ERR_UNSUPPORTED, "rule %s: %s node %d (%s) has attributes the library "
                                "format cannot hold", r->name, side, i, xf_op_name(n->op));
        }
        sb_printf(b, "  ");
        for (int k = 0; k < n->n_outputs; k++) {
            sb_printf(b, "%s", k ? ", " : "");
            format_value(b, g, r->pattern, out_index, n->outputs[k]);
        }
        sb_printf(b, " = %s(", xf_op_name(n->op));
        for (int k = 0; k < n->n_inputs; k++) {
            sb_printf(b, "%s", k ? ", " : "");
            format_value(b, g, r->pattern, out_index, n->inputs[k]);
        }
        sb_printf(b, ")");
        format_attrs(b, n->op, &n->attrs);
        sb_printf(b, "\n");
    }
    for (int j = 0; j < g->n_outputs; j++) {
        sb_printf(b, "  output ");
        format_value(b, g, r->pattern, out_index, g->outputs[j]);
        sb_printf(b, "\n");
    }
    free(out_index);
    return XF_OK;
}

static void format_expr_node(strbuf *b, const xf_rule *r, const xf_expr *e, int i)
{
    switch (e->node[i].kind) {
    case XF_EX_CONST:
        sb_printf(b, "%" PRId64, e->node[i].value);
        break;
    case XF_EX_PARAM:
        if (r->param_names[e->node[i].a])
            sb_printf(b, "%s", r->param_names[e->node[i].a]);
        else
            sb_printf(b, "p%d", e->node[i].a);
        break;
    case XF_EX_DIM:
        sb_printf(b, "%s[%d]", r->pattern->values[r->pattern->inputs[e->node[i].a]].name, e->node[i].b);
        break;
    default: {
        static const char ops[] = {[XF_EX_ADD] = '+', [XF_EX_SUB] = '-', [XF_EX_MUL] = '*', [XF_EX_DIV] = '/'};
        sb_printf(b, "(");
        format_expr_node(b, r, e, e->node[i].lhs);
        sb_printf(b, " %c ", ops[e->node[i].kind]);
        format_expr_node(b, r, e, e->node[i].rhs);
        sb_printf(b, ")");
        break;
    }
    }
}

static xf_status format_rule(strbuf *b, const xf_rule *r, xf_error *err)
{
    xf_status st = xf_rule_validate(r, err);
    if (st != XF_OK)
        return st;
    if (!rule_is_identifier(r->name))
        return xf_error_set(err, XF_ERR_INVALID, "rule name '%s' is not an identifier", r->name);
    sb_printf(b, "\nrule %s\nproved %s\n", r->name, r->proved ? "yes" : "no");
    if (r->provenance && *r->provenance) {
        if (strchr(r->provenance, '\n'))
            return xf_error_set(err, XF_ERR_INVALID, "rule %s: provenance spans lines", r->name);
        sb_printf(b, "provenance %s\n", r->provenance);
    }
    if (r->n_params > 0) {
        sb_printf(b, "params");
        for (int i = 0; i < r->n_params; i++) {
            if (r->param_names[i] && !rule_is_identifier(r->param_names[i]))
                return xf_error_set(err, XF_ERR_INVALID, "rule %s: parameter name '%s' is not an identifier",
                                    r->name, r->param_names[i]);
            if (r->param_names[i])
                sb_printf(b, " %s", r->param_names[i]);
            else
                sb_printf(b, " p%d", i);
        }
        sb_printf(b, "\n");
    }
    const xf_graph *p = r->pattern;
    for (int k = 0; k < p->n_inputs; k++) {
        const xf_value *v = &p->values[p->inputs[k]];
        char shape[128];
        if (!rule_is_identifier(v->name))
            return xf_error_set(err, XF_ERR_INVALID, "rule %s: input name '%s' is not an identifier", r->name,
                                v->name);
        if (v->shape.ndim < 0)
            return xf_error_set(err, XF_ERR_INVALID, "rule %s: input %s has no shape", r->name, v->name);
        sb_printf(b, "input %s %s %s\n", v->name, xf_dtype_name(v->dtype), xf_shape_str(&v->shape, shape, sizeof shape));
    }
    for (int i = 0; i < r->n_consts; i++) {
        const xf_rule_const *c = &r->consts[i];
        const xf_graph *sides[2] = {r->pattern, r->replacement};
        const xf_value *held = NULL;
        for (int s = 0; s < 2 && !held; s++)
            for (int v = 0; v < sides[s]->n_values && !held; v++)
                if (xf_rule_const_of(r, sides[s], v) == c)
                    held = &sides[s]->values[v];
        char shape[128];
        if (!rule_is_identifier(c->name) || !held)
            return xf_error_set(err, XF_ERR_INVALID, "rule %s: constant '%s' is unnamed or unused", r->name,
                                c->name ? c->name : "?");
        sb_printf(b, "const %s %s %s %s =", c->name, xf_const_kind_name(c->kind), xf_dtype_name(held->dtype),
                  xf_shape_str(&held->init->shape, shape, sizeof shape));
        for (int d = 0; d < c->ndim; d++) {
            sb_printf(b, "%s", d ? ", " : " ");
            format_expr_node(b, r, &c->dims[d], 0);
        }
        sb_printf(b, "\n");
    }
    if ((st = format_side(b, r, r->pattern, "pattern", err)) != XF_OK ||
        (st = format_side(b, r, r->replacement, "replacement", err)) != XF_OK)
        return st;
    for (int i = 0; i < r->n_bindings; i++) {
        const xf_binding *bd = &r->bindings[i];
        sb_printf(b, "bind %s %d %s", bd->replacement ? "replacement" : "pattern", bd->node,
                  xf_attr_field_name(bd->field));
        if (bd->field != XF_AF_GROUP && bd->field != XF_AF_AXIS && bd->field != XF_AF_ACTIVATION)
            sb_printf(b, "[%d]", bd->index);
        sb_printf(b, " = ");
        format_expr_node(b, r, &bd->e, 0);
        sb_printf(b, "\n");
    }
    for (int i = 0; i < r->n_constraints; i++) {
        const xf_constraint *c = &r->constraints[i];
        sb_printf(b, "constraint ");
        format_expr_node(b, r, &c->lhs, 0);
        sb_printf(b, " %s", rule_cmp_names[c->cmp]);
        if (c->cmp != XF_CMP_ODD) {
            sb_printf(b, " ");
            format_expr_node(b, r, &c->rhs, 0);
        }
        sb_printf(b, "\n");
    }
    sb_printf(b, "end\n");
    return XF_OK;
}

xf_status xf_library_format(const xf_library *lib, char **text, size_t *len, xf_error *err)
{
    strbuf b = {0};
    sb_printf(&b, "# xflow substitution library (generated by xflow-gen; regenerate, do not edit)\n");
    sb_printf(&b, "xflow-library %d\n", lib->version);
    const char *fields[2][2] = {{"generator", lib->generator}, {"op-set", lib->op_set}};
    for (int i = 0; i < 2; i++) {
        if (fields[i][1] && strchr(fields[i][1], '\n'))
            return xf_error_set(err, XF_ERR_INVALID, "library %s spans lines", fields[i][0]);
        if (fields[i][1] && *fields[i][1])
            sb_printf(&b, "%s %s\n", fields[i][0], fields[i][1]);
    }
    sb_printf(&b, "max-ops %d\nseed %" PRIu64 "\nopset %" PRId64 "\nrules %d\n", lib->max_ops, lib->seed,
              lib->opset, lib->n_rules);
    for (int i = 0; i < lib->n_rules; i++) {
        xf_status st = format_rule(&b, lib->rules[i], err);
        if (st != XF_OK) {
            free(b.s);
            return st;
        }
    }
    if (b.failed) {
        free(b.s);
        return xf_error_set(err, XF_ERR_NOMEM, "out of memory");
    }
    *text = b.s;
    if (len)
        *len = b.len;
    return XF_OK;
}

xf_status xf_library_save(const xf_library *lib, const char *path, xf_error *err)
{
    char *text = NULL;
    size_t len = 0;
    xf_status st = xf_library_format(lib, &text, &len, err);
    if (st != XF_OK)
        return st;
    size_t tn = strlen(path) + 32;
    char *tmp = malloc(tn);
    if (!tmp) {
        free(text);
        return xf_error_set(err, XF_ERR_NOMEM, "out of memory");
    }
    snprintf(tmp, tn, "%s.tmp.%ld", path, (long)getpid());
    FILE *f = fopen(tmp, "wb");
    bool ok = f && fwrite(text, 1, len, f) == len;
    if (f)
        ok = (fclose(f) == 0) && ok;
    if (ok && rename(tmp, path) != 0)
        ok = false;
    if (!ok) {
        st = xf_error_set(err, XF_ERR_IO, "%s: cannot write: %s", path, strerror(errno));
        remove(tmp);
    }
    free(tmp);
    free(text);
    return st;
}

