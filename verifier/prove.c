/* Proof of a rule: both sides become terms over the specification's
 * uninterpreted functions, generalized attributes become integer terms over
 * symbolic parameters and input dimensions, and each mapped output is
 * proved equal by showing "axioms and pattern != replacement" unsatisfiable
 * (one solver, one push/pop scope per rule and per output). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "spec.h"
#include "xf_verify.h"

#define DEFAULT_TIMEOUT_MS 2000u
/* Instantiation budget of a query per millisecond of its timeout, and its
 * least value (see check_query). */
#define INSTANCES_PER_MS 5u
#define MIN_BUDGET 1000u

struct xf_verifier {
    vf_z3 z;
    Z3_solver solver;
    unsigned timeout_ms;
    Z3_ast axioms[256]; /* asserted below every scope; kept to restart the solver */
    int n_axioms;
};

const char *xf_proof_name(xf_proof p)
{
    switch (p) {
    case XF_PROOF_PROVED:
        return "proved";
    case XF_PROOF_REFUTED:
        return "refuted";
    case XF_PROOF_UNKNOWN:
        return "unknown";
    case XF_PROOF_UNSUPPORTED:
        return "unsupported";
    }
    return "?";
}

int xf_axiom_count(void)
{
    return vf_n_axioms;
}

const char *xf_axiom_name(int i)
{
    return i >= 0 && i < vf_n_axioms ? vf_axioms[i].name : NULL;
}

const char *xf_axiom_doc(int i)
{
    return i >= 0 && i < vf_n_axioms ? vf_axioms[i].doc : NULL;
}

xf_status xf_verifier_create(const xf_verify_options *opt, xf_verifier **out, xf_error *err)
{
    *out = NULL;
    xf_verifier *v = calloc(1, sizeof *v);
    if (!v)
        return xf_error_set(err, XF_ERR_NOMEM, "out of memory");
    v->timeout_ms = opt && opt->timeout_ms ? opt->timeout_ms : DEFAULT_TIMEOUT_MS;
    char msg[512];
    if (!vf_z3_init(&v->z, msg, sizeof msg)) {
        free(v);
        return xf_error_set(err, XF_ERR_UNSUPPORTED, "%s", msg);
    }
    Z3_context c = v->z.ctx;
    /* A simple solver with push/pop is far cheaper per query than a fresh
     * solver, and the axioms are asserted once, below every scope. */
    v->solver = Z3_mk_simple_solver(c);
    Z3_solver_inc_ref(c, v->solver);
    for (int i = 0; i < vf_n_axioms; i++) {
        const vf_axiom_text *t = &vf_axioms[i];
        vf_axiom ax;
        if (!vf_axiom_parse(t->vars, t->guard, t->lhs, t->rhs, &ax, msg, sizeof msg)) {
            xf_verifier_free(v);
            return xf_error_set(err, XF_ERR_INVALID, "axiom %s: %s", t->name, msg);
        }
        Z3_ast f = vf_axiom_to_z3(&v->z, &ax, msg, sizeof msg);
        vf_axiom_release(&ax);
        if (!f) {
            xf_verifier_free(v);
            return xf_error_set(err, XF_ERR_INVALID, "axiom %s: %s", t->name, msg);
        }
        if (v->n_axioms == (int)(sizeof v->axioms / sizeof v->axioms[0])) {
            int n = v->n_axioms;
            xf_verifier_free(v);
            return xf_error_set(err, XF_ERR_LIMIT, "more than %d axioms", n);
        }
        v->axioms[v->n_axioms++] = f;
        Z3_solver_assert(c, v->solver, f);
    }
    if (vf_z3_take_error(msg, sizeof msg)) {
        xf_verifier_free(v);
        return xf_error_set(err, XF_ERR_INVALID, "%s", msg);
    }
    *out = v;
    return XF_OK;
}

void xf_verifier_free(xf_verifier *v)
{
    if (!v)
        return;
    if (v->solver)
        Z3_solver_dec_ref(v->z.ctx, v->solver);
    vf_z3_fini(&v->z);
    free(v);
}

/* ---------------------------------------------------------------- translation */

#define MAX_PREMISES 512

typedef struct tr {
    xf_verifier *v;
    Z3_context c;
    const xf_rule *r;
    bool replacement;     /* which side is being translated */
    const xf_graph *g;
    Z3_ast *terms;        /* per value id of g */
    Z3_ast premises[MAX_PREMISES];
    int n_premises;
    char *why;
    size_t why_len;
} tr;

static Z3_ast int_const(tr *t, int64_t v)
{
    return Z3_mk_int64(t->c, v, t->v->z.integer);
}

static Z3_ast rule_input(tr *t, int k)
{
    char name[32];
    snprintf(name, sizeof name, "in%d", k);
    return Z3_mk_const(t->c, Z3_mk_string_symbol(t->c, name), t->v->z.tensor);
}

static Z3_ast dim_of(tr *t, Z3_ast x, int64_t d)
{
    Z3_ast args[2] = {x, int_const(t, d)};
    return vf_z3_apply(&t->v->z, VF_DIM, 2, args);
}

static void premise(tr *t, Z3_ast f)
{
    if (t->n_premises < MAX_PREMISES)
        t->premises[t->n_premises++] = f;
}

static bool unsupported(tr *t, const char *fmt, const char *what)
{
    if (t->why)
        snprintf(t->why, t->why_len, fmt, what);
    return false;
}

static Z3_ast expr_node_to_z3(tr *t, const xf_expr *e, int i)
{
    Z3_context c = t->c;
    switch (e->node[i].kind) {
    case XF_EX_CONST:
        return int_const(t, e->node[i].value);
    case XF_EX_PARAM: {
        char name[32];
        snprintf(name, sizeof name, "param%d", e->node[i].a);
        return Z3_mk_const(c, Z3_mk_string_symbol(c, name), t->v->z.integer);
    }
    case XF_EX_DIM: {
        int input = e->node[i].a, d = e->node[i].b;
        if (d < 0)
            d += t->r->pattern->values[t->r->pattern->inputs[input]].shape.ndim;
        return dim_of(t, rule_input(t, input), d);
    }
    default:
        break;
    }
    Z3_ast args[2] = {expr_node_to_z3(t, e, e->node[i].lhs), expr_node_to_z3(t, e, e->node[i].rhs)};
    switch (e->node[i].kind) {
    case XF_EX_ADD:
        return Z3_mk_add(c, 2, args);
    case XF_EX_SUB:
        return Z3_mk_sub(c, 2, args);
    case XF_EX_MUL:
        return Z3_mk_mul(c, 2, args);
    default:
        /* Exact division: the rule applies only where it divides. */
        premise(t, Z3_mk_eq(c, Z3_mk_mod(c, args[0], args[1]), int_const(t, 0)));
        return Z3_mk_div(c, args[0], args[1]);
    }
}

/* field[index] of node n on the current side: its binding, or the concrete value. */
static Z3_ast attr(tr *t, int node, xf_attr_field f, int index, int64_t concrete)
{
    for (int b = 0; b < t->r->n_bindings; b++) {
        const xf_binding *bd = &t->r->bindings[b];
        if (bd->replacement == t->replacement && bd->node == node && bd->field == f && bd->index == index)
            return expr_node_to_z3(t, &bd->e, 0);
    }
    return int_const(t, concrete);
}

static bool is_bound(const tr *t, int node, xf_attr_field f, int index)
{
    for (int b = 0; b < t->r->n_bindings; b++) {
        const xf_binding *bd = &t->r->bindings[b];
        if (bd->replacement == t->replacement && bd->node == node && bd->field == f && bd->index == index)
            return true;
    }
    return false;
}

/* The specification's term for a constant of kind k with dims d[] (n x n,
 * or n x n x kh x kw), or NULL for a kind it does not name. */
static Z3_ast named_constant(tr *t, xf_const_kind k, Z3_ast *d)
{
    switch (k) {
    case XF_CONST_IDENTITY_MATRIX:
        return vf_z3_apply(&t->v->z, VF_CONST_IMM, 1, d);
    case XF_CONST_IDENTITY_KERNEL:
        return vf_z3_apply(&t->v->z, VF_CONST_ICONV, 3, (Z3_ast[]){d[0], d[2], d[3]});
    case XF_CONST_POOL_KERNEL:
        return vf_z3_apply(&t->v->z, VF_CONST_POOL, 3, (Z3_ast[]){d[0], d[2], d[3]});
    default:
        return NULL;
    }
}

/* Value vi of the side being translated, an initializer: a rule constant
 * sized by its dims expressions, a constant the specification names at its
 * own shape, or an opaque constant identified by its contents.  Its dims
 * become premises. */
static Z3_ast constant_term(tr *t, int vi)
{
    const xf_tensor *k = t->g->values[vi].init;
    const xf_shape *s = &k->shape;
    const xf_rule_const *rc = xf_rule_const_of(t->r, t->g, vi);
    Z3_ast d[XF_MAX_DIMS];
    for (int i = 0; i < s->ndim; i++)
        d[i] = rc && i < rc->ndim ? expr_node_to_z3(t, &rc->dims[i], 0) : int_const(t, s->dims[i]);
    Z3_ast term = named_constant(t, rc ? rc->kind : xf_const_kind_of(k), d);
    if (!term) {
        uint64_t h = 1469598103934665603ull;
        const unsigned char *bytes = k->data;
        for (size_t i = 0; i < k->nbytes; i++)
            h = (h ^ bytes[i]) * 1099511628211ull;
        for (int i = 0; i < s->ndim; i++)
            h = (h ^ (uint64_t)s->dims[i]) * 1099511628211ull;
        char name[48];
        snprintf(name, sizeof name, "const_%d_%016llx", (int)k->dtype, (unsigned long long)h);
        term = Z3_mk_const(t->c, Z3_mk_string_symbol(t->c, name), t->v->z.tensor);
    }
    for (int i = 0; i < s->ndim; i++)
        premise(t, Z3_mk_eq(t->c, dim_of(t, term, i), d[i]));
    return term;
}

static Z3_ast in_term(tr *t, const xf_node *n, int i)
{
    return t->terms[n->inputs[i]];
}

static const xf_shape *in_shape(tr *t, const xf_node *n, int i)
{
    return &t->g->values[n->inputs[i]].shape;
}

static void same_dims_fact(tr *t, Z3_ast x, Z3_ast y, int rank, Z3_ast except_axis)
{
    for (int d = 0; d < rank; d++) {
        Z3_ast eq = Z3_mk_eq(t->c, dim_of(t, x, d), dim_of(t, y, d));
        if (except_axis)
            eq = Z3_mk_implies(t->c, Z3_mk_not(t->c, Z3_mk_eq(t->c, except_axis, int_const(t, d))), eq);
        premise(t, eq);
    }
}

static int64_t norm_axis(int64_t axis, int rank)
{
    return axis < 0 ? axis + rank : axis;
}

/* Spatial parameters shared by conv and pools: strides and symmetric pads. */
static bool window_params(tr *t, int ni, const xf_node *n, Z3_ast *out)
{
    const xf_attrs *a = &n->attrs;
    if (a->auto_pad != XF_AUTO_PAD_NOTSET && a->auto_pad != XF_AUTO_PAD_VALID)
        return unsupported(t, "%s with auto_pad SAME (explicit pads only)", xf_op_name(n->op));
    for (int i = 0; i < 2; i++) {
        if (a->dilations[i] > 1 && a->n_spatial > i)
            return unsupported(t, "%s with dilation", xf_op_name(n->op));
        if (a->pads[i] != a->pads[2 + i] && !is_bound(t, ni, XF_AF_PAD, i))
            return unsupported(t, "%s with asymmetric pads", xf_op_name(n->op));
        out[i] = attr(t, ni, XF_AF_STRIDE, i, a->n_spatial > i ? a->strides[i] : 1);
        out[2 + i] = attr(t, ni, XF_AF_PAD, i, a->pads[i]);
        if (is_bound(t, ni, XF_AF_PAD, 2 + i))
            premise(t, Z3_mk_eq(t->c, out[2 + i], attr(t, ni, XF_AF_PAD, 2 + i, a->pads[2 + i])));
    }
    return true;
}

static bool translate_node(tr *t, int ni)
{
    const xf_node *n = &t->g->nodes[ni];
    const xf_attrs *a = &n->attrs;
    vf_z3 *z = &t->v->z;
    Z3_ast args[VF_MAX_ARGS], res = NULL, res2 = NULL;
    for (int i = 0; i < n->n_inputs; i++)
        if (n->inputs[i] < 0)
            return unsupported(t, "%s with an omitted input", xf_op_name(n->op));
    switch (n->op) {
    case XF_OP_IDENTITY:
        res = in_term(t, n, 0);
        break;
    case XF_OP_RELU:
    case XF_OP_SIGMOID:
    case XF_OP_TANH:
        args[0] = int_const(t, n->op == XF_OP_RELU ? XF_ACT_RELU : n->op == XF_OP_SIGMOID ? XF_ACT_SIGMOID
                                                                                         : XF_ACT_TANH);
        args[1] = in_term(t, n, 0);
        res = vf_z3_apply(z, VF_ACT, 2, args);
        break;
    case XF_OP_ADD:
    case XF_OP_MUL: {
        const xf_shape *sa = in_shape(t, n, 0), *sb = in_shape(t, n, 1);
        args[0] = in_term(t, n, 0);
        args[1] = in_term(t, n, 1);
        if (n->op == XF_OP_MUL && (sa->ndim == 0 || sb->ndim == 0) && sa->ndim != sb->ndim) {
            if (sa->ndim == 0) {
                Z3_ast tmp = args[0];
                args[0] = args[1];
                args[1] = tmp;
            }
            res = vf_z3_apply(z, VF_SMUL, 2, args);
            break;
        }
        if (!xf_shape_equal(sa, sb))
            return unsupported(t, "%s with broadcasting", xf_op_name(n->op));
        same_dims_fact(t, args[0], args[1], sa->ndim, NULL);
        res = vf_z3_apply(z, n->op == XF_OP_ADD ? VF_EWADD : VF_EWMUL, 2, args);
        break;
    }
    case XF_OP_MATMUL:
        if (in_shape(t, n, 0)->ndim != 2 || in_shape(t, n, 1)->ndim != 2)
            return unsupported(t, "%s other than 2-D", "MatMul");
        args[0] = in_term(t, n, 0);
        args[1] = in_term(t, n, 1);
        premise(t, Z3_mk_eq(t->c, dim_of(t, args[0], 1), dim_of(t, args[1], 0)));
        res = vf_z3_apply(z, VF_MATMUL, 2, args);
        break;
    case XF_OP_TRANSPOSE:
        if (in_shape(t, n, 0)->ndim != 2 || (a->n_perm == 2 && (a->perm[0] != 1 || a->perm[1] != 0)))
            return unsupported(t, "%s other than a 2-D transpose", "Transpose");
        args[0] = in_term(t, n, 0);
        res = vf_z3_apply(z, VF_TRANSPOSE, 1, args);
        break;
    case XF_OP_CONV: {
        if (n->n_inputs == 3 && in_shape(t, n, 2)->ndim != 1)
            return unsupported(t, "%s with a bias that is not 1-D", "Conv");
        if (in_shape(t, n, 0)->ndim != 4 || a->group != 1)
            return unsupported(t, "%s other than 2-D and ungrouped", "Conv");
        if (!window_params(t, ni, n, args))
            return false;
        Z3_ast act = attr(t, ni, XF_AF_ACTIVATION, 0, a->activation);
        bool has_act = a->activation != XF_ACT_NONE || is_bound(t, ni, XF_AF_ACTIVATION, 0);
        args[4] = n->n_inputs == 3 ? int_const(t, XF_ACT_NONE) : act;
        args[5] = in_term(t, n, 0);
        args[6] = in_term(t, n, 1);
        premise(t, Z3_mk_eq(t->c, dim_of(t, args[5], 1), dim_of(t, args[6], 1)));
        /* Shape inference holds the weight to a given kernel shape. */
        for (int i = 0; i < 2; i++)
            if (is_bound(t, ni, XF_AF_KERNEL, i) || (a->n_spatial > i && a->kernel[i] > 0))
                premise(t, Z3_mk_eq(t->c, dim_of(t, args[6], 2 + i), attr(t, ni, XF_AF_KERNEL, i, a->kernel[i])));
        res = vf_z3_apply(z, VF_CONV, 7, args);
        if (n->n_inputs == 3) {
            /* Conv with bias: the plain convolution, plus the bias per
             * output channel, then the fused activation. */
            Z3_ast bias = in_term(t, n, 2);
            premise(t, Z3_mk_eq(t->c, dim_of(t, bias, 0), dim_of(t, args[6], 0)));
            res = vf_z3_apply(z, VF_BIAS, 2, (Z3_ast[]){res, bias});
            if (has_act)
                res = vf_z3_apply(z, VF_ACT, 2, (Z3_ast[]){act, res});
        }
        break;
    }
    case XF_OP_PAD: {
        /* Zero padding of a kernel's spatial dims, centred: kernel enlarge. */
        const xf_shape *s = in_shape(t, n, 0);
        const int64_t *p = a->pad_pads;
        if (n->n_inputs != 1 || !a->has_pads || a->n_pads != 8 || s->ndim != 4 || a->pad_mode != XF_PAD_CONSTANT ||
            a->pad_value != 0.0f || p[0] || p[1] || p[4] || p[5] || p[2] != p[6] || p[3] != p[7] || p[2] < 0 ||
            p[3] < 0)
            return unsupported(t, "%s other than a centred zero padding of a kernel", "Pad");
        Z3_ast w = in_term(t, n, 0);
        for (int i = 0; i < 2; i++)
            args[i] = Z3_mk_add(t->c, 2, (Z3_ast[]){dim_of(t, w, 2 + i), int_const(t, 2 * p[2 + i])});
        args[2] = w;
        res = vf_z3_apply(z, VF_ENLARGE, 3, args);
        break;
    }
    case XF_OP_AVERAGE_POOL:
    case XF_OP_MAX_POOL: {
        if (in_shape(t, n, 0)->ndim != 4 || a->n_spatial != 2 || a->ceil_mode)
            return unsupported(t, "%s other than 2-D without ceil_mode", xf_op_name(n->op));
        bool padded = a->pads[0] || a->pads[1] || a->pads[2] || a->pads[3] || is_bound(t, ni, XF_AF_PAD, 0) ||
                      is_bound(t, ni, XF_AF_PAD, 1);
        if (n->op == XF_OP_AVERAGE_POOL && padded && !a->count_include_pad)
            return unsupported(t, "%s excluding padding from the count", "AveragePool");
        args[0] = attr(t, ni, XF_AF_KERNEL, 0, a->kernel[0]);
        args[1] = attr(t, ni, XF_AF_KERNEL, 1, a->kernel[1]);
        if (!window_params(t, ni, n, args + 2))
            return false;
        args[6] = in_term(t, n, 0);
        res = vf_z3_apply(z, n->op == XF_OP_MAX_POOL ? VF_POOL_MAX : VF_POOL_AVG, 7, args);
        break;
    }
    case XF_OP_CONCAT: {
        int rank = in_shape(t, n, 0)->ndim;
        args[0] = attr(t, ni, XF_AF_AXIS, 0, norm_axis(a->axis, rank));
        res = in_term(t, n, 0);
        for (int i = 1; i < n->n_inputs; i++) {
            args[1] = res;
            args[2] = in_term(t, n, i);
            same_dims_fact(t, args[1], args[2], rank, args[0]);
            res = vf_z3_apply(z, VF_CONCAT, 3, args);
        }
        break;
    }
    case XF_OP_SPLIT: {
        if (n->n_outputs != 2)
            return unsupported(t, "%s into other than two parts", "Split");
        int rank = in_shape(t, n, 0)->ndim;
        Z3_ast x = in_term(t, n, 0);
        args[0] = attr(t, ni, XF_AF_AXIS, 0, norm_axis(a->axis, rank));
        int64_t first = t->g->values[n->outputs[0]].shape.dims[norm_axis(a->axis, rank)];
        if (n->n_inputs == 2) {
            const xf_tensor *sizes = t->g->values[n->inputs[1]].init;
            if (!sizes)
                return unsupported(t, "%s with computed sizes", "Split");
            first = xf_tensor_get_i64(sizes, 0);
        } else if (a->n_split > 0) {
            first = a->split[0];
        }
        if (n->n_inputs == 1 && (a->n_split > 0 || is_bound(t, ni, XF_AF_SPLIT, 0)))
            args[1] = attr(t, ni, XF_AF_SPLIT, 0, first);
        else if (n->n_inputs == 2)
            args[1] = int_const(t, first);
        else /* equal parts, the first taking the odd one */
            args[1] = Z3_mk_div(t->c, Z3_mk_add(t->c, 2, (Z3_ast[]){Z3_mk_app(t->c, z->fn[VF_DIM], 2,
                                                                               (Z3_ast[]){x, args[0]}),
                                                                   int_const(t, 1)}),
                                int_const(t, 2));
        args[2] = x;
        premise(t, Z3_mk_lt(t->c, int_const(t, 0), args[1]));
        premise(t, Z3_mk_lt(t->c, args[1], Z3_mk_app(t->c, z->fn[VF_DIM], 2, (Z3_ast[]){x, args[0]})));
        res = vf_z3_apply(z, VF_SPLIT0, 3, args);
        res2 = vf_z3_apply(z, VF_SPLIT1, 3, args);
        break;
    }
    default:
        return unsupported(t, "no specification for op %s", xf_op_name(n->op));
    }
    if (n->n_outputs < 1 || n->outputs[0] < 0)
        return unsupported(t, "%s without its output", xf_op_name(n->op));
    t->terms[n->outputs[0]] = res;
    if (res2 && n->outputs[1] >= 0)
        t->terms[n->outputs[1]] = res2;
    return true;
}

static bool translate_side(tr *t, bool replacement, Z3_ast *terms)
{
    t->replacement = replacement;
    t->g = replacement ? t->r->replacement : t->r->pattern;
    t->terms = terms;
    for (int k = 0; k < t->g->n_inputs; k++)
        terms[t->g->inputs[k]] = rule_input(t, k);
    for (int vi = 0; vi < t->g->n_values; vi++) {
        const xf_value *val = &t->g->values[vi];
        if (!val->init)
            continue;
        terms[vi] = constant_term(t, vi);
    }
    for (int ni = 0; ni < t->g->n_nodes; ni++)
        if (!translate_node(t, ni))
            return false;
    for (int j = 0; j < t->g->n_outputs; j++)
        if (!terms[t->g->outputs[j]])
            return unsupported(t, "output %s is not computed", t->g->values[t->g->outputs[j]].name);
    return true;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static unsigned quant_instances(xf_verifier *v)
{
    Z3_context c = v->z.ctx;
    Z3_stats st = Z3_solver_get_statistics(c, v->solver);
    Z3_stats_inc_ref(c, st);
    unsigned n = 0;
    for (unsigned i = 0; i < Z3_stats_size(c, st); i++)
        if (strcmp(Z3_stats_get_key(c, st, i), "quant instantiations") == 0 && Z3_stats_is_uint(c, st, i))
            n = Z3_stats_get_uint_value(c, st, i);
    Z3_stats_dec_ref(c, st);
    return n;
}

static void set_limits(xf_verifier *v, unsigned timeout_ms, unsigned budget)
{
    Z3_context c = v->z.ctx;
    Z3_params p = Z3_mk_params(c);
    Z3_params_inc_ref(c, p);
    Z3_params_set_uint(c, p, Z3_mk_string_symbol(c, "timeout"), timeout_ms ? timeout_ms : 1);
    Z3_params_set_uint(c, p, Z3_mk_string_symbol(c, "smt.qi.max_instances"), budget);
    /* Proofs come from E-matching on the axioms' triggers; model-based
     * instantiation only searches (until the timeout) for a model of a
     * false rule, which rejects it no better than saturation does. */
    Z3_params_set_bool(c, p, Z3_mk_string_symbol(c, "smt.mbqi"), false);
    Z3_solver_set_params(c, v->solver, p);
    Z3_params_dec_ref(c, p);
}

/* One query.  Z3 does not notice its timeout while E-matching runs away (a
 * long sum under associativity and commutativity instantiates for many
 * seconds past it), so the timeout also sets an instantiation budget, which
 * Z3 does enforce.  A query that stops well under its budget without a
 * proof has saturated the axioms: the rule does not follow from them. */
static xf_proof check_query(xf_verifier *v, char *reason, size_t len)
{
    Z3_context c = v->z.ctx;
    double t0 = now_s();
    unsigned budget = v->timeout_ms < MIN_BUDGET / INSTANCES_PER_MS ? MIN_BUDGET : v->timeout_ms * INSTANCES_PER_MS;
    set_limits(v, v->timeout_ms, budget);
    unsigned before = quant_instances(v);
    Z3_lbool res = Z3_solver_check(c, v->solver);
    unsigned used = quant_instances(v) - before;
    if (res == Z3_L_FALSE)
        return XF_PROOF_PROVED;
    if (res == Z3_L_TRUE) {
        snprintf(reason, len, "the axioms admit pattern != replacement");
        return XF_PROOF_REFUTED;
    }
    const char *why = Z3_solver_get_reason_unknown(c, v->solver);
    /* Z3 stops somewhat short of the budget in its statistic's count, so
     * only a run well under it counts as saturated. */
    if (strstr(why, "incomplete quantifiers") && used < budget / 2) {
        snprintf(reason, len, "not implied by the axioms (%u instantiations saturate them)", used);
        return XF_PROOF_REFUTED;
    }
    snprintf(reason, len, "solver gave up (%s) after %u instantiations, %.2f s",
             strstr(why, "incomplete quantifiers") ? "instantiation budget spent" : why, used, now_s() - t0);
    return XF_PROOF_UNKNOWN;
}

static void set_why(char *why, size_t len, const char *fmt, int j, const char *s)
{
    if (why)
        snprintf(why, len, fmt, j, s);
}

static xf_proof prove_in(xf_verifier *v, const xf_rule *r, char *why, size_t why_len);

/* A rule the prover does not prove is tried again in a fresh context: Z3's
 * search depends on the terms its context already holds (from the rules it
 * proved before), so without this the answer for a hard rule would depend
 * on which rules shared its prover, that is on the thread count. */
xf_proof xf_verifier_prove(xf_verifier *v, const xf_rule *r, char *why, size_t why_len)
{
    xf_proof p = prove_in(v, r, why, why_len);
    if (p == XF_PROOF_PROVED || p == XF_PROOF_UNSUPPORTED)
        return p;
    xf_verify_options opt = {.timeout_ms = v->timeout_ms};
    xf_verifier *fresh = NULL;
    xf_error err = {0};
    if (xf_verifier_create(&opt, &fresh, &err) != XF_OK)
        return p;
    p = prove_in(fresh, r, why, why_len);
    xf_verifier_free(fresh);
    return p;
}

static xf_proof prove_in(xf_verifier *v, const xf_rule *r, char *why, size_t why_len)
{
    if (why && why_len)
        why[0] = 0;
    xf_error err;
    if (xf_rule_validate(r, &err) != XF_OK) {
        if (why)
            snprintf(why, why_len, "invalid rule: %s", err.msg);
        return XF_PROOF_UNSUPPORTED;
    }
    Z3_context c = v->z.ctx;
    tr *t = calloc(1, sizeof *t);
    Z3_ast *pt = calloc((size_t)r->pattern->n_values + 1, sizeof *pt);
    Z3_ast *rt = calloc((size_t)r->replacement->n_values + 1, sizeof *rt);
    xf_proof result = XF_PROOF_UNSUPPORTED;
    if (!t || !pt || !rt) {
        if (why)
            snprintf(why, why_len, "out of memory");
        goto done;
    }
    t->v = v;
    t->c = c;
    t->r = r;
    t->why = why;
    t->why_len = why_len;
    if (!translate_side(t, false, pt) || !translate_side(t, true, rt))
        goto done;
    for (int i = 0; i < r->n_constraints; i++) {
        const xf_constraint *k = &r->constraints[i];
        Z3_ast lhs = expr_node_to_z3(t, &k->lhs, 0);
        Z3_ast rhs = k->cmp == XF_CMP_ODD ? NULL : expr_node_to_z3(t, &k->rhs, 0);
        switch (k->cmp) {
        case XF_CMP_EQ:
            premise(t, Z3_mk_eq(c, lhs, rhs));
            break;
        case XF_CMP_NE:
            premise(t, Z3_mk_not(c, Z3_mk_eq(c, lhs, rhs)));
            break;
        case XF_CMP_LT:
            premise(t, Z3_mk_lt(c, lhs, rhs));
            break;
        case XF_CMP_LE:
            premise(t, Z3_mk_le(c, lhs, rhs));
            break;
        case XF_CMP_ODD:
            premise(t, Z3_mk_eq(c, Z3_mk_mod(c, lhs, int_const(t, 2)), int_const(t, 1)));
            break;
        }
    }
    char msg[256];
    if (vf_z3_take_error(msg, sizeof msg)) {
        if (why)
            snprintf(why, why_len, "%s", msg);
        goto done;
    }
    if (t->n_premises == MAX_PREMISES) {
        if (why)
            snprintf(why, why_len, "rule too large (more than %d side conditions)", MAX_PREMISES);
        goto done;
    }
    Z3_solver_push(c, v->solver);
    for (int i = 0; i < t->n_premises; i++)
        Z3_solver_assert(c, v->solver, t->premises[i]);
    result = XF_PROOF_PROVED;
    for (int j = 0; j < r->pattern->n_outputs && result == XF_PROOF_PROVED; j++) {
        Z3_solver_push(c, v->solver);
        Z3_ast ne = Z3_mk_not(c, Z3_mk_eq(c, pt[r->pattern->outputs[j]], rt[r->replacement->outputs[j]]));
        Z3_solver_assert(c, v->solver, ne);
        char reason[128];
        result = check_query(v, reason, sizeof reason);
        if (result != XF_PROOF_PROVED) {
            /* A solver that has answered many queries can stop short on one
             * that it proves from a fresh start (its instantiation state
             * survives pops): retry once on a reset solver, rebuilt to the
             * same scopes. */
            Z3_solver_reset(c, v->solver);
            for (int i = 0; i < v->n_axioms; i++)
                Z3_solver_assert(c, v->solver, v->axioms[i]);
            Z3_solver_push(c, v->solver);
            for (int i = 0; i < t->n_premises; i++)
                Z3_solver_assert(c, v->solver, t->premises[i]);
            Z3_solver_push(c, v->solver);
            Z3_solver_assert(c, v->solver, ne);
            result = check_query(v, reason, sizeof reason);
        }
        if (result != XF_PROOF_PROVED)
            set_why(why, why_len, "output %d: %s", j, reason);
        Z3_solver_pop(c, v->solver, 1);
    }
    Z3_solver_pop(c, v->solver, 1);
    if (vf_z3_take_error(msg, sizeof msg)) {
        result = XF_PROOF_UNKNOWN;
        if (why)
            snprintf(why, why_len, "%s", msg);
    }
done:
    free(t);
    free(pt);
    free(rt);
    return result;
}
