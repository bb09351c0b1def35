/* The specification language: function table, the s-expression parser for
 * axioms, and the Z3 reading of axioms as quantified formulas. */
#include "spec.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const vf_fn_info vf_fn_infos[VF_FN_COUNT] = {
    [VF_EWADD] = {"ewadd", 0, 2, VF_S_TENSOR},
    [VF_EWMUL] = {"ewmul", 0, 2, VF_S_TENSOR},
    [VF_SMUL] = {"smul", 0, 2, VF_S_TENSOR},
    [VF_MATMUL] = {"matmul", 0, 2, VF_S_TENSOR},
    [VF_TRANSPOSE] = {"transpose", 0, 1, VF_S_TENSOR},
    [VF_ACT] = {"act", 1, 1, VF_S_TENSOR},
    [VF_CONV] = {"conv", 5, 2, VF_S_TENSOR},
    [VF_BIAS] = {"bias", 0, 2, VF_S_TENSOR},
    [VF_POOL_AVG] = {"pool_avg", 6, 1, VF_S_TENSOR},
    [VF_POOL_MAX] = {"pool_max", 6, 1, VF_S_TENSOR},
    [VF_CONCAT] = {"concat", 1, 2, VF_S_TENSOR},
    [VF_SPLIT0] = {"split0", 2, 1, VF_S_TENSOR},
    [VF_SPLIT1] = {"split1", 2, 1, VF_S_TENSOR},
    [VF_ENLARGE] = {"enlarge", 2, 1, VF_S_TENSOR},
    [VF_CONST_IMM] = {"const_imm", 1, 0, VF_S_TENSOR},
    [VF_CONST_ICONV] = {"const_iconv", 3, 0, VF_S_TENSOR},
    [VF_CONST_POOL] = {"const_pool", 3, 0, VF_S_TENSOR},
    [VF_SAMPLE] = {"sample", 2, 1, VF_S_TENSOR},
    [VF_DIM] = {"dim", 0, 1, VF_S_INT}, /* the index follows the tensor (see parse) */
    [VF_ADD] = {"+", 2, 0, VF_S_INT},
    [VF_SUB] = {"-", 2, 0, VF_S_INT},
    [VF_MUL] = {"*", 2, 0, VF_S_INT},
    [VF_DIV] = {"div", 2, 0, VF_S_INT},
    [VF_MOD] = {"mod", 2, 0, VF_S_INT},
    [VF_EQ] = {"=", 2, 0, VF_S_BOOL},
    [VF_NE] = {"ne", 2, 0, VF_S_BOOL},
    [VF_LT] = {"<", 2, 0, VF_S_BOOL},
    [VF_LE] = {"<=", 2, 0, VF_S_BOOL},
    [VF_AND] = {"and", -1, 0, VF_S_BOOL},
    [VF_OR] = {"or", -1, 0, VF_S_BOOL},
};

/* ---------------------------------------------------------------- parsing */

#define VF_POOL_TERMS 256

typedef struct parser {
    const char *p;
    vf_axiom *ax;
    int used;
    char *msg;
    size_t msg_len;
} parser;

static const struct {
    const char *name;
    vf_domain domain;
} domain_names[] = {
    {"axis", VF_D_AXIS}, {"stride", VF_D_STRIDE}, {"pad", VF_D_PAD},     {"act", VF_D_ACT},
    {"kernel", VF_D_KERNEL}, {"size", VF_D_SIZE}, {"index", VF_D_INDEX},
};

static bool parse_vars(const char *text, vf_axiom *ax, char *msg, size_t msg_len)
{
    const char *p = text;
    ax->n_vars = 0;
    while (*p) {
        while (isspace((unsigned char)*p))
            p++;
        if (!*p)
            break;
        char name[32], type[32];
        int used = 0;
        if (sscanf(p, "%31[^: ]:%31s%n", name, type, &used) != 2 || strlen(name) >= sizeof ax->vars[0].name) {
            snprintf(msg, msg_len, "bad variable declaration at '%s'", p);
            return false;
        }
        if (ax->n_vars == VF_MAX_VARS) {
            snprintf(msg, msg_len, "more than %d variables", VF_MAX_VARS);
            return false;
        }
        vf_var *v = &ax->vars[ax->n_vars++];
        snprintf(v->name, sizeof v->name, "%s", name);
        if (isdigit((unsigned char)type[0])) {
            v->domain = VF_D_TENSOR;
            v->rank = atoi(type);
        } else {
            size_t d;
            for (d = 0; d < sizeof domain_names / sizeof domain_names[0]; d++)
                if (strcmp(domain_names[d].name, type) == 0)
                    break;
            if (d == sizeof domain_names / sizeof domain_names[0]) {
                snprintf(msg, msg_len, "unknown domain '%s' of %s", type, name);
                return false;
            }
            v->domain = domain_names[d].domain;
            v->rank = 0;
        }
        p += used;
    }
    return true;
}

static vf_sort term_sort(const vf_axiom *ax, const vf_term *t)
{
    if (t->kind == VF_T_NUM)
        return VF_S_INT;
    if (t->kind == VF_T_VAR)
        return ax->vars[t->var].domain == VF_D_TENSOR ? VF_S_TENSOR : VF_S_INT;
    return vf_fn_infos[t->fn].result;
}

static vf_term *parse_term(parser *ps);

static bool fail(parser *ps, const char *what)
{
    snprintf(ps->msg, ps->msg_len, "%s at '%.40s'", what, ps->p);
    return false;
}

/* Checks the sorts of an application's arguments. */
static bool check_args(parser *ps, const vf_term *t)
{
    const vf_fn_info *fi = &vf_fn_infos[t->fn];
    for (int i = 0; i < t->n_args; i++) {
        vf_sort want;
        if (fi->n_int < 0)
            want = VF_S_BOOL;
        else if (t->fn == VF_DIM)
            want = i == 0 ? VF_S_TENSOR : VF_S_INT;
        else
            want = i < fi->n_int ? VF_S_INT : VF_S_TENSOR;
        if (term_sort(ps->ax, t->args[i]) != want)
            return fail(ps, "argument of the wrong sort");
    }
    if (fi->n_int >= 0 && t->n_args != fi->n_int + fi->n_tensor + (t->fn == VF_DIM))
        return fail(ps, "wrong number of arguments");
    return true;
}

static vf_term *parse_term(parser *ps)
{
    while (isspace((unsigned char)*ps->p))
        ps->p++;
    if (ps->used == VF_POOL_TERMS) {
        fail(ps, "axiom too large");
        return NULL;
    }
    vf_term *t = &ps->ax->pool[ps->used++];
    memset(t, 0, sizeof *t);
    if (*ps->p == '(') {
        ps->p++;
        char name[32];
        int n = 0;
        if (sscanf(ps->p, "%31[^ ()]%n", name, &n) != 1) {
            fail(ps, "expected a function name");
            return NULL;
        }
        ps->p += n;
        int f;
        for (f = 0; f < VF_FN_COUNT; f++)
            if (strcmp(vf_fn_infos[f].name, name) == 0)
                break;
        if (f == VF_FN_COUNT) {
            fail(ps, "unknown function");
            return NULL;
        }
        t->kind = VF_T_APP;
        t->fn = (vf_fn)f;
        for (;;) {
            while (isspace((unsigned char)*ps->p))
                ps->p++;
            if (*ps->p == ')') {
                ps->p++;
                break;
            }
            if (!*ps->p || t->n_args == VF_MAX_ARGS) {
                fail(ps, "unterminated or too long application");
                return NULL;
            }
            vf_term *a = parse_term(ps);
            if (!a)
                return NULL;
            t->args[t->n_args++] = a;
        }
        return check_args(ps, t) ? t : NULL;
    }
    if (*ps->p == '-' || isdigit((unsigned char)*ps->p)) {
        char *end;
        t->kind = VF_T_NUM;
        t->num = strtoll(ps->p, &end, 10);
        if (end == ps->p) {
            fail(ps, "bad number");
            return NULL;
        }
        ps->p = end;
        return t;
    }
    char name[32];
    int n = 0;
    if (sscanf(ps->p, "%31[^ ()]%n", name, &n) != 1) {
        fail(ps, "expected a term");
        return NULL;
    }
    for (int v = 0; v < ps->ax->n_vars; v++) {
        if (strcmp(ps->ax->vars[v].name, name) == 0) {
            ps->p += n;
            t->kind = VF_T_VAR;
            t->var = v;
            return t;
        }
    }
    fail(ps, "undeclared variable");
    return NULL;
}

static vf_term *parse_whole(parser *ps, const char *text)
{
    ps->p = text;
    vf_term *t = parse_term(ps);
    if (!t)
        return NULL;
    while (isspace((unsigned char)*ps->p))
        ps->p++;
    if (*ps->p) {
        fail(ps, "trailing text");
        return NULL;
    }
    return t;
}

bool vf_axiom_parse(const char *vars, const char *guard, const char *lhs, const char *rhs, vf_axiom *out,
                    char *msg, size_t msg_len)
{
    memset(out, 0, sizeof *out);
    if (!parse_vars(vars, out, msg, msg_len))
        return false;
    out->pool = calloc(VF_POOL_TERMS, sizeof *out->pool);
    if (!out->pool) {
        snprintf(msg, msg_len, "out of memory");
        return false;
    }
    parser ps = {.ax = out, .msg = msg, .msg_len = msg_len};
    out->lhs = parse_whole(&ps, lhs);
    out->rhs = out->lhs ? parse_whole(&ps, rhs) : NULL;
    out->guard = guard && *guard && out->rhs ? parse_whole(&ps, guard) : NULL;
    bool ok = out->lhs && out->rhs && (!guard || !*guard || out->guard);
    if (ok && term_sort(out, out->lhs) != term_sort(out, out->rhs)) {
        snprintf(msg, msg_len, "the two sides have different sorts");
        ok = false;
    }
    if (ok && term_sort(out, out->lhs) == VF_S_BOOL) {
        snprintf(msg, msg_len, "an axiom equates tensors or integers");
        ok = false;
    }
    if (ok && out->guard && term_sort(out, out->guard) != VF_S_BOOL) {
        snprintf(msg, msg_len, "the guard is not a condition");
        ok = false;
    }
    if (!ok)
        vf_axiom_release(out);
    return ok;
}

void vf_axiom_release(vf_axiom *a)
{
    free(a->pool);
    a->pool = NULL;
    a->lhs = a->rhs = a->guard = NULL;
}

/* ---------------------------------------------------------------- Z3 */

/* Z3 otherwise exits the process on an API error; the handler records it
 * so that the caller can report it and carry on. */
static _Thread_local char z3_last_error[256];

static void z3_error_handler(Z3_context c, Z3_error_code e)
{
    snprintf(z3_last_error, sizeof z3_last_error, "%s", Z3_get_error_msg(c, e));
}

bool vf_z3_take_error(char *msg, size_t msg_len)
{
    if (!z3_last_error[0])
        return false;
    if (msg)
        snprintf(msg, msg_len, "Z3: %s", z3_last_error);
    z3_last_error[0] = 0;
    return true;
}

bool vf_z3_init(vf_z3 *z, char *msg, size_t msg_len)
{
    memset(z, 0, sizeof *z);
    Z3_config cfg = Z3_mk_config();
    if (!cfg) {
        snprintf(msg, msg_len, "Z3 cannot create a configuration");
        return false;
    }
    z->ctx = Z3_mk_context(cfg); /* ASTs live as long as the context */
    Z3_del_config(cfg);
    if (!z->ctx) {
        snprintf(msg, msg_len, "Z3 cannot create a context");
        return false;
    }
    Z3_set_error_handler(z->ctx, z3_error_handler);
    z->tensor = Z3_mk_uninterpreted_sort(z->ctx, Z3_mk_string_symbol(z->ctx, "T"));
    z->integer = Z3_mk_int_sort(z->ctx);
    for (int f = 0; f <= VF_DIM; f++) {
        const vf_fn_info *fi = &vf_fn_infos[f];
        Z3_sort dom[VF_MAX_ARGS];
        int n = 0;
        if (f == VF_DIM) {
            dom[n++] = z->tensor;
            dom[n++] = z->integer;
        } else {
            for (int i = 0; i < fi->n_int; i++)
                dom[n++] = z->integer;
            for (int i = 0; i < fi->n_tensor; i++)
                dom[n++] = z->tensor;
        }
        z->fn[f] = Z3_mk_func_decl(z->ctx, Z3_mk_string_symbol(z->ctx, fi->name), (unsigned)n, dom,
                                   fi->result == VF_S_INT ? z->integer : z->tensor);
    }
    if (vf_z3_take_error(msg, msg_len)) {
        vf_z3_fini(z);
        return false;
    }
    return true;
}

void vf_z3_fini(vf_z3 *z)
{
    if (!z->ctx)
        return;
    Z3_del_context(z->ctx);
    z->ctx = NULL;
}

Z3_ast vf_z3_apply(vf_z3 *z, vf_fn fn, int n_args, Z3_ast *args)
{
    Z3_context c = z->ctx;
    switch (fn) {
    case VF_ADD:
        return Z3_mk_add(c, 2, args);
    case VF_SUB:
        return Z3_mk_sub(c, 2, args);
    case VF_MUL:
        return Z3_mk_mul(c, 2, args);
    case VF_DIV:
        return Z3_mk_div(c, args[0], args[1]);
    case VF_MOD:
        return Z3_mk_mod(c, args[0], args[1]);
    case VF_EQ:
        return Z3_mk_eq(c, args[0], args[1]);
    case VF_NE:
        return Z3_mk_not(c, Z3_mk_eq(c, args[0], args[1]));
    case VF_LT:
        return Z3_mk_lt(c, args[0], args[1]);
    case VF_LE:
        return Z3_mk_le(c, args[0], args[1]);
    case VF_AND:
        return Z3_mk_and(c, (unsigned)n_args, args);
    case VF_OR:
        return Z3_mk_or(c, (unsigned)n_args, args);
    default:
        return Z3_mk_app(c, z->fn[fn], (unsigned)n_args, args);
    }
}

static bool fn_is_arith(vf_fn f)
{
    return f >= VF_ADD;
}

static Z3_ast term_to_z3(vf_z3 *z, const vf_term *t, const Z3_ast *bound)
{
    if (t->kind == VF_T_NUM)
        return Z3_mk_int64(z->ctx, t->num, z->integer);
    if (t->kind == VF_T_VAR)
        return bound[t->var];
    Z3_ast args[VF_MAX_ARGS];
    for (int i = 0; i < t->n_args; i++)
        args[i] = term_to_z3(z, t->args[i], bound);
    return vf_z3_apply(z, t->fn, t->n_args, args);
}

/* A side can trigger instantiation when it mentions every variable and
 * contains no interpreted arithmetic (which E-matching cannot match). */
static void term_vars(const vf_term *t, bool *seen, bool *arith)
{
    if (t->kind == VF_T_VAR)
        seen[t->var] = true;
    if (t->kind != VF_T_APP)
        return;
    if (fn_is_arith(t->fn))
        *arith = true;
    for (int i = 0; i < t->n_args; i++)
        term_vars(t->args[i], seen, arith);
}

static bool usable_pattern(const vf_axiom *a, const vf_term *t)
{
    if (t->kind != VF_T_APP)
        return false;
    bool seen[VF_MAX_VARS] = {0}, arith = false;
    term_vars(t, seen, &arith);
    for (int v = 0; v < a->n_vars; v++)
        if (!seen[v])
            return false;
    return !arith;
}

Z3_ast vf_axiom_to_z3(vf_z3 *z, const vf_axiom *a, char *msg, size_t msg_len)
{
    Z3_context c = z->ctx;
    Z3_app vars[VF_MAX_VARS];
    Z3_ast bound[VF_MAX_VARS];
    for (int v = 0; v < a->n_vars; v++) {
        Z3_sort s = a->vars[v].domain == VF_D_TENSOR ? z->tensor : z->integer;
        bound[v] = Z3_mk_const(c, Z3_mk_string_symbol(c, a->vars[v].name), s);
        vars[v] = Z3_to_app(c, bound[v]);
    }
    Z3_ast lhs = term_to_z3(z, a->lhs, bound), rhs = term_to_z3(z, a->rhs, bound);
    Z3_ast body = Z3_mk_eq(c, lhs, rhs);
    if (a->guard)
        body = Z3_mk_implies(c, term_to_z3(z, a->guard, bound), body);
    Z3_pattern pats[2];
    unsigned n_pats = 0;
    if (usable_pattern(a, a->lhs))
        pats[n_pats++] = Z3_mk_pattern(c, 1, &lhs);
    if (usable_pattern(a, a->rhs))
        pats[n_pats++] = Z3_mk_pattern(c, 1, &rhs);
    if (n_pats == 0) {
        snprintf(msg, msg_len, "neither side can serve as a trigger");
        return NULL;
    }
    if (a->n_vars == 0)
        return body;
    return Z3_mk_forall_const(c, 0, (unsigned)a->n_vars, vars, n_pats, pats, body);
}
