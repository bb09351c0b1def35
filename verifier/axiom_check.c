/* Axiom validation: an independent check that each axiom is true, on small
 * concrete shapes.  Tensors become arrays of Z3 real constants, operators
 * their element-wise definitions (sums of products, window maxima as
 * if-then-else chains), sigmoid and tanh uninterpreted real functions.  An
 * instance holds when every element of "lhs - rhs" normalizes to zero as a
 * polynomial, or when the solver shows "some element differs" unsatisfiable. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "spec.h"
#include "xf_verify.h"

#define MAX_RANK 4
#define MAX_TRIES 100000
#define DEFAULT_INSTANCES 16
#define DEFAULT_TIMEOUT_MS 60000u

/* A value during concrete evaluation: an integer or a tensor whose
 * elements are Z3 reals (el == NULL while only shapes are checked). */
typedef struct cval {
    bool is_tensor;
    int64_t i;
    int rank;
    int64_t dims[MAX_RANK];
    Z3_ast *el;
} cval;

typedef struct checker {
    Z3_context c;
    Z3_sort real;
    Z3_func_decl act[4]; /* sigmoid and tanh, indexed by activation */
    bool full;           /* compute elements, not only shapes */
    int inst;            /* instance number, for fresh names */
    /* every element array allocated during one evaluation, freed together */
    Z3_ast **arrays;
    int n_arrays, cap_arrays;
} checker;

static int64_t numel(const cval *v)
{
    int64_t n = 1;
    for (int i = 0; i < v->rank; i++)
        n *= v->dims[i];
    return n;
}

static bool alloc_el(checker *k, cval *v)
{
    if (!k->full) {
        v->el = NULL;
        return true;
    }
    if (k->n_arrays == k->cap_arrays) {
        int cap = k->cap_arrays ? 2 * k->cap_arrays : 64;
        Z3_ast **a = realloc(k->arrays, (size_t)cap * sizeof *a);
        if (!a)
            return false;
        k->arrays = a;
        k->cap_arrays = cap;
    }
    v->el = calloc((size_t)numel(v) + 1, sizeof *v->el);
    if (!v->el)
        return false;
    k->arrays[k->n_arrays++] = v->el;
    return true;
}

static void free_arrays(checker *k)
{
    for (int i = 0; i < k->n_arrays; i++)
        free(k->arrays[i]);
    k->n_arrays = 0;
}

static Z3_ast real_num(checker *k, int64_t num, int64_t den)
{
    return Z3_mk_real(k->c, (int)num, (int)den);
}

static Z3_ast add2(checker *k, Z3_ast a, Z3_ast b)
{
    Z3_ast args[2] = {a, b};
    return Z3_mk_add(k->c, 2, args);
}

static Z3_ast mul2(checker *k, Z3_ast a, Z3_ast b)
{
    Z3_ast args[2] = {a, b};
    return Z3_mk_mul(k->c, 2, args);
}

/* Relu is interpreted (max(v, 0)) so that its own laws, such as
 * idempotence, are checked; sigmoid and tanh stay uninterpreted. */
static Z3_ast activate(checker *k, int64_t act, Z3_ast v)
{
    if (act == XF_ACT_NONE)
        return v;
    if (act == XF_ACT_RELU)
        return Z3_mk_ite(k->c, Z3_mk_gt(k->c, v, real_num(k, 0, 1)), v, real_num(k, 0, 1));
    return Z3_mk_app(k->c, k->act[act], 1, &v);
}

/* Euclidean division and remainder, as Z3's integer div and mod. */
static int64_t ediv(int64_t a, int64_t b)
{
    int64_t q = a / b;
    if (a % b < 0)
        q += b > 0 ? -1 : 1;
    return q;
}

static void make_tensor(cval *v, int rank, const int64_t *dims)
{
    memset(v, 0, sizeof *v);
    v->is_tensor = true;
    v->rank = rank;
    for (int i = 0; i < rank; i++)
        v->dims[i] = dims[i];
}

/* Sliding window output size; -1 when the window does not fit. */
static int64_t window_out(int64_t in, int64_t k, int64_t s, int64_t p)
{
    if (k < 1 || s < 1 || p < 0 || in + 2 * p < k)
        return -1;
    return (in + 2 * p - k) / s + 1;
}

static bool eval_conv(checker *k, const int64_t *ip, const cval *x, const cval *w, cval *out)
{
    int64_t sh = ip[0], sw = ip[1], ph = ip[2], pw = ip[3], act = ip[4];
    if (x->rank != 4 || w->rank != 4 || x->dims[1] != w->dims[1] || act < 0 || act > 3)
        return false;
    int64_t oh = window_out(x->dims[2], w->dims[2], sh, ph), ow = window_out(x->dims[3], w->dims[3], sw, pw);
    if (oh < 1 || ow < 1)
        return false;
    int64_t N = x->dims[0], C = x->dims[1], H = x->dims[2], W = x->dims[3];
    int64_t O = w->dims[0], KH = w->dims[2], KW = w->dims[3];
    make_tensor(out, 4, (int64_t[]){N, O, oh, ow});
    if (!alloc_el(k, out))
        return false;
    if (!out->el)
        return true;
    Z3_ast *y = out->el;
    for (int64_t n = 0; n < N; n++)
        for (int64_t o = 0; o < O; o++)
            for (int64_t i = 0; i < oh; i++)
                for (int64_t j = 0; j < ow; j++) {
                    Z3_ast acc = real_num(k, 0, 1);
                    for (int64_t c = 0; c < C; c++)
                        for (int64_t a = 0; a < KH; a++)
                            for (int64_t b = 0; b < KW; b++) {
                                int64_t r = i * sh - ph + a, q = j * sw - pw + b;
                                if (r < 0 || r >= H || q < 0 || q >= W)
                                    continue;
                                acc = add2(k, acc,
                                           mul2(k, x->el[((n * C + c) * H + r) * W + q],
                                                w->el[((o * C + c) * KH + a) * KW + b]));
                            }
                    *y++ = activate(k, act, acc);
                }
    return true;
}

static bool eval_pool(checker *k, bool max, const int64_t *ip, const cval *x, cval *out)
{
    int64_t kh = ip[0], kw = ip[1], sh = ip[2], sw = ip[3], ph = ip[4], pw = ip[5];
    if (x->rank != 4)
        return false;
    int64_t oh = window_out(x->dims[2], kh, sh, ph), ow = window_out(x->dims[3], kw, sw, pw);
    if (oh < 1 || ow < 1)
        return false;
    int64_t NC = x->dims[0] * x->dims[1], H = x->dims[2], W = x->dims[3];
    make_tensor(out, 4, (int64_t[]){x->dims[0], x->dims[1], oh, ow});
    /* A max window wholly in the padding has no defined value. */
    if (max && (ph >= kh || pw >= kw))
        return false;
    if (!alloc_el(k, out))
        return false;
    if (!out->el)
        return true;
    Z3_ast *y = out->el;
    for (int64_t nc = 0; nc < NC; nc++)
        for (int64_t i = 0; i < oh; i++)
            for (int64_t j = 0; j < ow; j++) {
                Z3_ast acc = max ? NULL : real_num(k, 0, 1);
                for (int64_t a = 0; a < kh; a++)
                    for (int64_t b = 0; b < kw; b++) {
                        int64_t r = i * sh - ph + a, q = j * sw - pw + b;
                        if (r < 0 || r >= H || q < 0 || q >= W)
                            continue;
                        Z3_ast e = x->el[(nc * H + r) * W + q];
                        if (!max)
                            acc = add2(k, acc, e);
                        else
                            acc = acc ? Z3_mk_ite(k->c, Z3_mk_gt(k->c, e, acc), e, acc) : e;
                    }
                *y++ = max ? acc : mul2(k, acc, real_num(k, 1, kh * kw));
            }
    return true;
}

/* Copies the block [from, from+len) along axis of x into out at offset at. */
static void copy_block(const cval *x, int64_t from, int64_t len, int axis, cval *out, int64_t at)
{
    int64_t outer = 1, inner = 1;
    for (int d = 0; d < axis; d++)
        outer *= x->dims[d];
    for (int d = axis + 1; d < x->rank; d++)
        inner *= x->dims[d];
    for (int64_t o = 0; o < outer; o++)
        for (int64_t a = 0; a < len; a++)
            for (int64_t i = 0; i < inner; i++)
                out->el[(o * out->dims[axis] + at + a) * inner + i] = x->el[(o * x->dims[axis] + from + a) * inner + i];
}

static bool eval_app(checker *k, vf_fn fn, const int64_t *ip, const cval *t, cval *out)
{
    memset(out, 0, sizeof *out);
    switch (fn) {
    case VF_EWADD:
    case VF_EWMUL:
        if (t[0].rank != t[1].rank || memcmp(t[0].dims, t[1].dims, sizeof t[0].dims) != 0)
            return false;
        make_tensor(out, t[0].rank, t[0].dims);
        if (!alloc_el(k, out))
            return false;
        for (int64_t i = 0; out->el && i < numel(out); i++)
            out->el[i] = fn == VF_EWADD ? add2(k, t[0].el[i], t[1].el[i]) : mul2(k, t[0].el[i], t[1].el[i]);
        return true;
    case VF_SMUL:
        if (t[1].rank != 0)
            return false;
        make_tensor(out, t[0].rank, t[0].dims);
        if (!alloc_el(k, out))
            return false;
        for (int64_t i = 0; out->el && i < numel(out); i++)
            out->el[i] = mul2(k, t[0].el[i], t[1].el[0]);
        return true;
    case VF_MATMUL: {
        if (t[0].rank != 2 || t[1].rank != 2 || t[0].dims[1] != t[1].dims[0])
            return false;
        int64_t M = t[0].dims[0], K = t[0].dims[1], N = t[1].dims[1];
        make_tensor(out, 2, (int64_t[]){M, N});
        if (!alloc_el(k, out))
            return false;
        for (int64_t i = 0; out->el && i < M; i++)
            for (int64_t j = 0; j < N; j++) {
                Z3_ast acc = real_num(k, 0, 1);
                for (int64_t q = 0; q < K; q++)
                    acc = add2(k, acc, mul2(k, t[0].el[i * K + q], t[1].el[q * N + j]));
                out->el[i * N + j] = acc;
            }
        return true;
    }
    case VF_TRANSPOSE:
        if (t[0].rank != 2)
            return false;
        make_tensor(out, 2, (int64_t[]){t[0].dims[1], t[0].dims[0]});
        if (!alloc_el(k, out))
            return false;
        for (int64_t i = 0; out->el && i < t[0].dims[0]; i++)
            for (int64_t j = 0; j < t[0].dims[1]; j++)
                out->el[j * t[0].dims[0] + i] = t[0].el[i * t[0].dims[1] + j];
        return true;
    case VF_ACT:
        if (ip[0] < 0 || ip[0] > 3)
            return false;
        make_tensor(out, t[0].rank, t[0].dims);
        if (!alloc_el(k, out))
            return false;
        for (int64_t i = 0; out->el && i < numel(out); i++)
            out->el[i] = activate(k, ip[0], t[0].el[i]);
        return true;
    case VF_CONV:
        return eval_conv(k, ip, &t[0], &t[1], out);
    case VF_BIAS: {
        const cval *y = &t[0], *b = &t[1];
        if (y->rank != 4 || b->rank != 1 || b->dims[0] != y->dims[1])
            return false;
        make_tensor(out, 4, y->dims);
        if (!alloc_el(k, out))
            return false;
        int64_t plane = y->dims[2] * y->dims[3];
        for (int64_t i = 0; out->el && i < numel(out); i++)
            out->el[i] = add2(k, y->el[i], b->el[(i / plane) % y->dims[1]]);
        return true;
    }
    case VF_POOL_AVG:
    case VF_POOL_MAX:
        return eval_pool(k, fn == VF_POOL_MAX, ip, &t[0], out);
    case VF_CONCAT: {
        int64_t a = ip[0];
        if (t[0].rank != t[1].rank || a < 0 || a >= t[0].rank)
            return false;
        for (int d = 0; d < t[0].rank; d++)
            if (d != a && t[0].dims[d] != t[1].dims[d])
                return false;
        make_tensor(out, t[0].rank, t[0].dims);
        out->dims[a] += t[1].dims[a];
        if (!alloc_el(k, out))
            return false;
        if (out->el) {
            copy_block(&t[0], 0, t[0].dims[a], (int)a, out, 0);
            copy_block(&t[1], 0, t[1].dims[a], (int)a, out, t[0].dims[a]);
        }
        return true;
    }
    case VF_SPLIT0:
    case VF_SPLIT1: {
        int64_t a = ip[0], n = ip[1];
        if (a < 0 || a >= t[0].rank || n <= 0 || n >= t[0].dims[a])
            return false;
        int64_t from = fn == VF_SPLIT0 ? 0 : n, len = fn == VF_SPLIT0 ? n : t[0].dims[a] - n;
        make_tensor(out, t[0].rank, t[0].dims);
        out->dims[a] = len;
        if (!alloc_el(k, out))
            return false;
        if (out->el)
            copy_block(&t[0], from, len, (int)a, out, 0);
        return true;
    }
    case VF_ENLARGE: {
        const cval *w = &t[0];
        int64_t kh = ip[0], kw = ip[1];
        if (w->rank != 4 || kh < w->dims[2] || kw < w->dims[3] || (kh - w->dims[2]) % 2 || (kw - w->dims[3]) % 2)
            return false;
        int64_t dh = (kh - w->dims[2]) / 2, dw = (kw - w->dims[3]) / 2;
        make_tensor(out, 4, (int64_t[]){w->dims[0], w->dims[1], kh, kw});
        if (!alloc_el(k, out))
            return false;
        for (int64_t i = 0; out->el && i < numel(out); i++) {
            int64_t b = i % kw, a = (i / kw) % kh, oc = i / (kh * kw);
            int64_t r = a - dh, q = b - dw;
            bool inside = r >= 0 && r < w->dims[2] && q >= 0 && q < w->dims[3];
            out->el[i] = inside ? w->el[(oc * w->dims[2] + r) * w->dims[3] + q] : real_num(k, 0, 1);
        }
        return true;
    }
    case VF_CONST_IMM:
        if (ip[0] < 1)
            return false;
        make_tensor(out, 2, (int64_t[]){ip[0], ip[0]});
        if (!alloc_el(k, out))
            return false;
        for (int64_t i = 0; out->el && i < numel(out); i++)
            out->el[i] = real_num(k, i / ip[0] == i % ip[0], 1);
        return true;
    case VF_CONST_ICONV:
    case VF_CONST_POOL: {
        int64_t n = ip[0], kh = ip[1], kw = ip[2];
        if (n < 1 || kh < 1 || kw < 1 || (fn == VF_CONST_ICONV && (kh % 2 == 0 || kw % 2 == 0)))
            return false;
        make_tensor(out, 4, (int64_t[]){n, n, kh, kw});
        if (!alloc_el(k, out))
            return false;
        for (int64_t i = 0; out->el && i < numel(out); i++) {
            int64_t pos = i % (kh * kw), c = (i / (kh * kw)) % n, o = i / (n * kh * kw);
            bool on = o == c && (fn == VF_CONST_POOL || pos == kh * kw / 2);
            out->el[i] = on ? real_num(k, 1, fn == VF_CONST_POOL ? kh * kw : 1) : real_num(k, 0, 1);
        }
        return true;
    }
    case VF_SAMPLE: {
        const cval *x = &t[0];
        int64_t sh = ip[0], sw = ip[1];
        if (x->rank != 4 || sh < 1 || sw < 1)
            return false;
        int64_t H = x->dims[2], W = x->dims[3], oh = (H + sh - 1) / sh, ow = (W + sw - 1) / sw;
        make_tensor(out, 4, (int64_t[]){x->dims[0], x->dims[1], oh, ow});
        if (!alloc_el(k, out))
            return false;
        for (int64_t i = 0; out->el && i < numel(out); i++) {
            int64_t q = i % ow, r = (i / ow) % oh, nc = i / (oh * ow);
            out->el[i] = x->el[(nc * H + r * sh) * W + q * sw];
        }
        return true;
    }
    default:
        return false;
    }
}

/* Evaluates t under env; false when the instance is ill-typed. */
static bool eval_term(checker *k, const vf_term *t, const cval *env, cval *out)
{
    if (t->kind == VF_T_NUM) {
        memset(out, 0, sizeof *out);
        out->i = t->num;
        return true;
    }
    if (t->kind == VF_T_VAR) {
        *out = env[t->var];
        return true;
    }
    cval args[VF_MAX_ARGS];
    int64_t ip[VF_MAX_ARGS];
    for (int i = 0; i < t->n_args; i++) {
        if (!eval_term(k, t->args[i], env, &args[i]))
            return false;
        ip[i] = args[i].i;
    }
    memset(out, 0, sizeof *out);
    int64_t a = ip[0], b = t->n_args > 1 ? ip[1] : 0;
    switch (t->fn) {
    case VF_DIM:
        if (b < 0 || b >= args[0].rank)
            return false;
        out->i = args[0].dims[b];
        return true;
    case VF_ADD:
        out->i = a + b;
        return true;
    case VF_SUB:
        out->i = a - b;
        return true;
    case VF_MUL:
        out->i = a * b;
        return true;
    case VF_DIV:
    case VF_MOD:
        if (b == 0)
            return false;
        out->i = t->fn == VF_DIV ? ediv(a, b) : a - b * ediv(a, b);
        return true;
    case VF_EQ:
        out->i = a == b;
        return true;
    case VF_NE:
        out->i = a != b;
        return true;
    case VF_LT:
        out->i = a < b;
        return true;
    case VF_LE:
        out->i = a <= b;
        return true;
    case VF_AND:
    case VF_OR:
        out->i = t->fn == VF_AND;
        for (int i = 0; i < t->n_args; i++)
            out->i = t->fn == VF_AND ? out->i && ip[i] : out->i || ip[i];
        return true;
    default: {
        int n_int = vf_fn_infos[t->fn].n_int;
        out->is_tensor = true;
        return eval_app(k, t->fn, ip, args + n_int, out);
    }
    }
}

/* ---------------------------------------------------------------- instances */

static uint64_t next_rand(uint64_t *s)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return *s >> 33;
}

static int64_t draw_int(vf_domain d, uint64_t *s)
{
    uint64_t r = next_rand(s);
    switch (d) {
    case VF_D_AXIS:
        return (int64_t)(r % 2);
    case VF_D_STRIDE:
        return 1 + (int64_t)(r % 2);
    case VF_D_PAD:
        return (int64_t)(r % 2);
    case VF_D_ACT:
        return (int64_t)(r % 4);
    case VF_D_KERNEL:
        return r % 2 ? 3 : 1;
    case VF_D_SIZE:
        return 1 + (int64_t)(r % 3);
    default:
        return (int64_t)(r % 4);
    }
}

/* Draws shapes: tensors of one rank mostly share a base shape, so that the
 * equal-dimension conditions of an axiom are met often enough. */
static void draw_env(const vf_axiom *ax, uint64_t *s, cval *env)
{
    int64_t base[MAX_RANK + 1][MAX_RANK];
    for (int r = 0; r <= MAX_RANK; r++)
        for (int d = 0; d < MAX_RANK; d++)
            base[r][d] = 1 + (int64_t)(next_rand(s) % 3);
    for (int v = 0; v < ax->n_vars; v++) {
        const vf_var *var = &ax->vars[v];
        memset(&env[v], 0, sizeof env[v]);
        if (var->domain != VF_D_TENSOR) {
            env[v].i = draw_int(var->domain, s);
            continue;
        }
        int64_t dims[MAX_RANK];
        for (int d = 0; d < var->rank; d++)
            dims[d] = next_rand(s) % 3 ? base[var->rank][d] : 1 + (int64_t)(next_rand(s) % 3);
        make_tensor(&env[v], var->rank, dims);
    }
}

static void describe_env(const vf_axiom *ax, const cval *env, char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = 0;
    for (int v = 0; v < ax->n_vars && used + 1 < len; v++) {
        int w;
        if (!env[v].is_tensor) {
            w = snprintf(buf + used, len - used, "%s%s=%lld", v ? " " : "", ax->vars[v].name,
                         (long long)env[v].i);
        } else {
            w = snprintf(buf + used, len - used, "%s%s:", v ? " " : "", ax->vars[v].name);
            for (int d = 0; d < env[v].rank && w >= 0 && used + (size_t)w + 1 < len; d++)
                w += snprintf(buf + used + w, len - used - (size_t)w, "%s%lld", d ? "x" : "",
                              (long long)env[v].dims[d]);
            if (env[v].rank == 0 && w >= 0 && used + (size_t)w + 1 < len)
                w += snprintf(buf + used + w, len - used - (size_t)w, "scalar");
        }
        if (w < 0)
            break;
        used += (size_t)w;
    }
}

static bool same_instance(const vf_axiom *ax, const cval *a, const cval *b)
{
    for (int v = 0; v < ax->n_vars; v++)
        if (a[v].i != b[v].i || a[v].rank != b[v].rank || memcmp(a[v].dims, b[v].dims, sizeof a[v].dims) != 0)
            return false;
    return true;
}

/* True when the guard holds and both sides are well-typed (shapes only). */
static bool applicable(checker *k, const vf_axiom *ax, const cval *env)
{
    cval g, l, r;
    k->full = false;
    if (ax->guard && (!eval_term(k, ax->guard, env, &g) || !g.i))
        return false;
    if (!eval_term(k, ax->lhs, env, &l) || !eval_term(k, ax->rhs, env, &r))
        return false;
    if (l.is_tensor != r.is_tensor)
        return false;
    return !l.is_tensor || (l.rank == r.rank && memcmp(l.dims, r.dims, sizeof l.dims) == 0);
}

/* Checks one instance.  PROVED, REFUTED or UNKNOWN. */
static xf_proof check_instance(checker *k, Z3_solver solver, const vf_axiom *ax, cval *env, char *detail,
                               size_t detail_len)
{
    k->full = true;
    k->inst++;
    for (int v = 0; v < ax->n_vars; v++) {
        if (!env[v].is_tensor)
            continue;
        if (!alloc_el(k, &env[v]))
            return XF_PROOF_UNKNOWN;
        for (int64_t i = 0; i < numel(&env[v]); i++) {
            char name[48];
            snprintf(name, sizeof name, "%s_%d_%lld", ax->vars[v].name, k->inst, (long long)i);
            env[v].el[i] = Z3_mk_const(k->c, Z3_mk_string_symbol(k->c, name), k->real);
        }
    }
    cval l, r;
    if (!eval_term(k, ax->lhs, env, &l) || !eval_term(k, ax->rhs, env, &r))
        return XF_PROOF_UNKNOWN;
    if (!l.is_tensor)
        return l.i == r.i ? XF_PROOF_PROVED : XF_PROOF_REFUTED;
    Z3_params p = Z3_mk_params(k->c);
    Z3_params_inc_ref(k->c, p);
    Z3_params_set_bool(k->c, p, Z3_mk_string_symbol(k->c, "som"), true);
    /* Expand products of sums completely: the default blow-up limit leaves
     * a scaled convolution unexpanded, and the solver then faces a
     * nonlinear problem it does not finish. */
    Z3_params_set_uint(k->c, p, Z3_mk_string_symbol(k->c, "som_blowup"), 1u << 20);
    int64_t n = numel(&l), n_open = 0;
    Z3_ast *open = calloc((size_t)n + 1, sizeof *open);
    if (!open) {
        Z3_params_dec_ref(k->c, p);
        return XF_PROOF_UNKNOWN;
    }
    for (int64_t i = 0; i < n; i++) {
        Z3_ast diff = Z3_simplify_ex(k->c, Z3_mk_sub(k->c, 2, (Z3_ast[]){l.el[i], r.el[i]}), p);
        int64_t num;
        if (Z3_is_numeral_ast(k->c, diff) && Z3_get_numeral_int64(k->c, diff, &num) && num == 0)
            continue;
        open[n_open++] = Z3_mk_not(k->c, Z3_mk_eq(k->c, l.el[i], r.el[i]));
    }
    Z3_params_dec_ref(k->c, p);
    xf_proof res = XF_PROOF_PROVED;
    if (n_open) {
        Z3_solver_push(k->c, solver);
        Z3_solver_assert(k->c, solver, Z3_mk_or(k->c, (unsigned)n_open, open));
        Z3_lbool sat = Z3_solver_check(k->c, solver);
        if (sat != Z3_L_FALSE) {
            res = sat == Z3_L_TRUE ? XF_PROOF_REFUTED : XF_PROOF_UNKNOWN;
            char inst[160];
            describe_env(ax, env, inst, sizeof inst);
            snprintf(detail, detail_len, "%s at %s", sat == Z3_L_TRUE ? "differs" : Z3_solver_get_reason_unknown(k->c, solver),
                     inst);
        }
        Z3_solver_pop(k->c, solver, 1);
    }
    free(open);
    return res;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void check_one(const vf_axiom *ax, uint64_t seed, int max_instances, unsigned timeout_ms,
                      xf_axiom_result *res)
{
    double t0 = now_s();
    res->result = XF_PROOF_PROVED;
    res->n_instances = 0;
    res->detail[0] = 0;
    vf_z3 z;
    if (!vf_z3_init(&z, res->detail, sizeof res->detail)) {
        res->result = XF_PROOF_UNKNOWN;
        return;
    }
    checker k = {.c = z.ctx, .real = Z3_mk_real_sort(z.ctx)};
    for (int a = XF_ACT_SIGMOID; a <= XF_ACT_TANH; a++) {
        char name[16];
        snprintf(name, sizeof name, "act%d", a);
        k.act[a] = Z3_mk_func_decl(k.c, Z3_mk_string_symbol(k.c, name), 1, &k.real, k.real);
    }
    Z3_solver solver = Z3_mk_simple_solver(k.c);
    Z3_solver_inc_ref(k.c, solver);
    Z3_params p = Z3_mk_params(k.c);
    Z3_params_inc_ref(k.c, p);
    Z3_params_set_uint(k.c, p, Z3_mk_string_symbol(k.c, "timeout"), timeout_ms ? timeout_ms : DEFAULT_TIMEOUT_MS);
    Z3_solver_set_params(k.c, solver, p);
    Z3_params_dec_ref(k.c, p);

    cval found[16][VF_MAX_VARS];
    int n_found = 0;
    if (max_instances > 16)
        max_instances = 16;
    uint64_t s = seed;
    for (int tries = 0; tries < MAX_TRIES && n_found < max_instances; tries++) {
        cval env[VF_MAX_VARS];
        draw_env(ax, &s, env);
        bool dup = false;
        for (int f = 0; f < n_found && !dup; f++)
            dup = same_instance(ax, found[f], env);
        if (dup || !applicable(&k, ax, env))
            continue;
        memcpy(found[n_found++], env, sizeof env);
    }
    int64_t largest = -1;
    for (int f = 0; f < n_found && res->result == XF_PROOF_PROVED; f++) {
        res->result = check_instance(&k, solver, ax, found[f], res->detail, sizeof res->detail);
        res->n_instances++;
        free_arrays(&k);
        int64_t size = 0;
        for (int v = 0; v < ax->n_vars; v++)
            size += found[f][v].is_tensor ? numel(&found[f][v]) : 0;
        if (res->result == XF_PROOF_PROVED && size > largest) {
            largest = size;
            describe_env(ax, found[f], res->detail, sizeof res->detail);
        }
    }
    if (n_found == 0) {
        res->result = XF_PROOF_UNKNOWN;
        snprintf(res->detail, sizeof res->detail, "no well-typed instance among %d draws", MAX_TRIES);
    }
    vf_z3_take_error(res->detail, sizeof res->detail);
    free(k.arrays);
    Z3_solver_dec_ref(k.c, solver);
    vf_z3_fini(&z);
    res->seconds = now_s() - t0;
}

xf_status xf_verifier_check_axioms(int first, int count, int max_instances, unsigned timeout_ms,
                                   xf_axiom_result *results, xf_axiom_progress_fn progress, void *user,
                                   xf_error *err)
{
    if (first < 0 || first > vf_n_axioms)
        return xf_error_set(err, XF_ERR_INVALID, "axiom index %d out of range (0..%d)", first, vf_n_axioms - 1);
    if (count < 0 || first + count > vf_n_axioms)
        count = vf_n_axioms - first;
    for (int i = 0; i < count; i++) {
        const vf_axiom_text *t = &vf_axioms[first + i];
        vf_axiom ax;
        char msg[256];
        if (!vf_axiom_parse(t->vars, t->guard, t->lhs, t->rhs, &ax, msg, sizeof msg))
            return xf_error_set(err, XF_ERR_INVALID, "axiom %s: %s", t->name, msg);
        results[i].axiom = first + i;
        /* Seeded by name, so that an axiom keeps its instances when others are added. */
        uint64_t seed = 0x9e3779b97f4a7c15ull;
        for (const char *c = t->name; *c; c++)
            seed = (seed ^ (unsigned char)*c) * 1099511628211ull;
        check_one(&ax, seed, max_instances ? max_instances : DEFAULT_INSTANCES, timeout_ms, &results[i]);
        vf_axiom_release(&ax);
        if (progress)
            progress(&results[i], user);
    }
    return XF_OK;
}

xf_status xf_verifier_check_axiom_text(const char *vars, const char *guard, const char *lhs, const char *rhs,
                                       int max_instances, unsigned timeout_ms, xf_axiom_result *result,
                                       xf_error *err)
{
    vf_axiom ax;
    char msg[256];
    if (!vf_axiom_parse(vars, guard, lhs, rhs, &ax, msg, sizeof msg))
        return xf_error_set(err, XF_ERR_PARSE, "%s", msg);
    result->axiom = -1;
    check_one(&ax, 0x9e3779b97f4a7c15ull, max_instances ? max_instances : DEFAULT_INSTANCES, timeout_ms, result);
    vf_axiom_release(&ax);
    return XF_OK;
}
