/* Activations written out as elementwise nodes (static mode), recognized
 * by the function they compute rather than by the order of their nodes.
 *
 * Exporters write one activation many ways: GELU's tanh form as HF's
 * NewGELU (0.5 x first, Pow(x, 3)), as torch.onnx's symbolic (x * x * x,
 * the 0.5 last), as BLOOM's x (1 + 0.044715 x x); QuickGELU as x times
 * Sigmoid(1.702 x); the exact GELU with Div or Mul by the constant.  A
 * region here is a set of nodes after node q that compute one function of
 * one value x: each node is an analytic elementwise op (no clip, no max,
 * nothing piecewise) of x, of values the region computes and of float
 * constants of one element, keeps x's shape and is stored in x's layout.
 * The region's values but its last are read by the region alone.
 *
 * Its function is evaluated in double at points from -100 to 100 (dense
 * from -8 to 8) and compared with oneDNN's eltwise algorithms that take
 * the place of several nodes: gelu_erf, gelu_tanh, swish (its alpha from
 * the value at 1), mish, logistic and tanh.  A region matches when every
 * point agrees within 1e-6 of max(1, |value|): the constants as float
 * (sqrt(2 / pi) as 0.7978846 or BLOOM's 0.79788456) pass, another
 * constant (0.0447, a scale of 1.5 in place of sqrt(2)) does not, and
 * a polynomial term too small to see from -8 to 8 shows at 100. */
#include "cpu_dnnl.h"

#include <math.h>

/* nodes after q looked at, and nodes a region holds */
#define REGION_WINDOW 64
#define N_SAMPLES 77 /* 6 outer points each side and 65 from -8 to 8 */
#define AT_ONE 42 /* the point 1 */

static void sample_points(double *p)
{
    static const double outer[] = {-100, -30, -20, -14, -10, -9, 9, 10, 14, 20, 30, 100};
    int n = 0;
    for (int i = 0; i < 6; i++)
        p[n++] = outer[i];
    for (int i = 0; i <= 64; i++) /* -8 to 8 by 0.25: 0 and 1 among them */
        p[n++] = -8.0 + 0.25 * i;
    for (int i = 6; i < 12; i++)
        p[n++] = outer[i];
}

static bool region_op(xf_op op)
{
    switch (op) {
    case XF_OP_ADD: case XF_OP_SUB: case XF_OP_MUL: case XF_OP_DIV: case XF_OP_POW:
    case XF_OP_TANH: case XF_OP_ERF: case XF_OP_SIGMOID: case XF_OP_NEG: case XF_OP_EXP:
    case XF_OP_LOG: case XF_OP_SOFTPLUS: case XF_OP_SQRT: case XF_OP_RECIPROCAL: return true;
    default: return false;
    }
}

static double binary_of(xf_op op, double a, double b)
{
    switch (op) {
    case XF_OP_ADD: return a + b;
    case XF_OP_SUB: return a - b;
    case XF_OP_MUL: return a * b;
    case XF_OP_DIV: return a / b;
    default: return pow(a, b); /* XF_OP_POW */
    }
}

/* v's one value when v is a float constant of one element with no more
 * dims than x (so that it broadcasts to nothing larger). */
static bool scalar_of(const xf_graph *g, int v, int x, double *value)
{
    const xf_tensor *t = v >= 0 ? g->values[v].init : NULL;
    if (!t || t->dtype != XF_DT_FLOAT || xf_shape_numel(&t->shape) != 1 || t->shape.ndim > g->values[x].shape.ndim)
        return false;
    *value = ((const float *)t->data)[0];
    return true;
}

typedef struct region_work {
    int x, nodes[XF_DN_REGION_MAX], count;
    double points[N_SAMPLES], vals[XF_DN_REGION_MAX][N_SAMPLES];
} region_work;

/* The index in w->nodes of the region node writing v, or -1. */
static int slot_of(const xf_graph *g, const region_work *w, int v)
{
    for (int j = 0; j < w->count; j++)
        if (g->nodes[w->nodes[j]].outputs[0] == v)
            return j;
    return -1;
}

/* Evaluates node i into w->vals[w->count] when it belongs to the region
 * grown so far: an op of region_op whose every input is x, a region value
 * or a scalar constant, one at least not a constant. */
static bool eval_node(const xf_dn_ctx *c, const xf_graph *g, region_work *w, int i)
{
    const xf_node *n = &g->nodes[i];
    bool binary = n->op == XF_OP_ADD || n->op == XF_OP_SUB || n->op == XF_OP_MUL || n->op == XF_OP_DIV ||
                  n->op == XF_OP_POW;
    int y = n->n_outputs == 1 ? n->outputs[0] : -1;
    /* (its inputs' shapes: x's, or a constant of no more dims; so its own) */
    if (!region_op(n->op) || n->n_inputs != (binary ? 2 : 1) || y < 0 || !xf_dn_is_f32(g, y) ||
        xf_dn_value_layout(c, y) != xf_dn_value_layout(c, w->x))
        return false;
    const double *src[2] = {NULL, NULL};
    double cst[2] = {0, 0};
    bool reads = false;
    for (int k = 0; k < n->n_inputs; k++) {
        int v = n->inputs[k], s = v >= 0 ? slot_of(g, w, v) : -1;
        if (v == w->x)
            src[k] = w->points;
        else if (s >= 0)
            src[k] = w->vals[s];
        else if (!scalar_of(g, v, w->x, &cst[k]))
            return false;
        reads = reads || src[k];
    }
    if (!reads)
        return false;
    double *out = w->vals[w->count];
    if (!binary) /* as cpu_ref computes it */
        xf_ref_unary_of(n->op)(out, src[0], N_SAMPLES, &n->attrs);
    for (int p = 0; binary && p < N_SAMPLES; p++)
        out[p] = binary_of(n->op, src[0] ? src[0][p] : cst[0], src[1] ? src[1][p] : cst[1]);
    return true;
}

/* The eltwise algorithms a region may stand for, and the ONNX op (with
 * Gelu's form) whose cpu_ref function gives their values. */
typedef struct candidate {
    dnnl_alg_kind_t alg;
    xf_op op;
    bool gelu_tanh;
} candidate;

static const candidate candidates[] = {
    {dnnl_eltwise_gelu_erf, XF_OP_GELU, false}, {dnnl_eltwise_gelu_tanh, XF_OP_GELU, true},
    {dnnl_eltwise_swish, XF_OP_SWISH, false},   {dnnl_eltwise_mish, XF_OP_MISH, false},
    {dnnl_eltwise_logistic, XF_OP_SIGMOID, false}, {dnnl_eltwise_tanh, XF_OP_TANH, false},
};

/* The candidate that f (at w->points) is, as a post; alg undef for none. */
static xf_dn_post match(const region_work *w, const double *f)
{
    for (size_t i = 0; i < sizeof candidates / sizeof candidates[0]; i++) {
        const candidate *cd = &candidates[i];
        xf_attrs a;
        xf_attrs_default(cd->op, &a);
        a.gelu_tanh = cd->gelu_tanh;
        if (cd->alg == dnnl_eltwise_swish) { /* f(1) = sigmoid(alpha) */
            double f1 = f[AT_ONE];
            if (!(f1 > 0 && f1 < 1))
                continue;
            a.alpha = (float)log(f1 / (1.0 - f1));
        }
        double want[N_SAMPLES];
        xf_ref_unary_of(cd->op)(want, w->points, N_SAMPLES, &a);
        bool same = true;
        for (int p = 0; p < N_SAMPLES && same; p++)
            same = isfinite(f[p]) && fabs(f[p] - want[p]) <= 1e-6 * fmax(1.0, fabs(want[p]));
        if (same)
            return (xf_dn_post){.alg = cd->alg, .alpha = cd->alg == dnnl_eltwise_swish ? a.alpha : 0.0f};
    }
    return (xf_dn_post){.alg = dnnl_alg_kind_undef};
}

/* Reads of value v by the nodes of w flagged in `in` (a node reading v
 * twice counts twice, as c->readers does). */
static int reads_in(const xf_graph *g, const region_work *w, const bool *in, int v)
{
    int count = 0;
    for (int j = 0; j < w->count; j++)
        for (int k = 0; in[j] && k < g->nodes[w->nodes[j]].n_inputs; k++)
            count += g->nodes[w->nodes[j]].inputs[k] == v;
    return count;
}

/* Whether the region ending at w->nodes[e] (e's ancestors among w->nodes,
 * flagged into `in`) holds nodes[0] and keeps its values but the last to
 * itself. */
static bool closed_region(const xf_dn_ctx *c, const xf_graph *g, const region_work *w, int e, bool *in)
{
    memset(in, 0, sizeof *in * XF_DN_REGION_MAX);
    in[e] = true;
    for (int j = e; j >= 0; j--)
        for (int k = 0; in[j] && k < g->nodes[w->nodes[j]].n_inputs; k++) {
            int s = slot_of(g, w, g->nodes[w->nodes[j]].inputs[k]);
            if (s >= 0)
                in[s] = true;
        }
    if (!in[0])
        return false;
    for (int j = 0; j < e; j++) {
        int v = g->nodes[w->nodes[j]].outputs[0];
        if (in[j] && c->readers[v] != reads_in(g, w, in, v))
            return false;
    }
    return true;
}

bool xf_dn_find_region(const xf_dn_ctx *c, const xf_graph *g, int q, xf_dn_region *r)
{
    const xf_node *n = &g->nodes[q];
    if (!region_op(n->op))
        return false;
    region_work *w = malloc(sizeof *w);
    if (!w)
        return false;
    /* x: the one input of q that is not a scalar constant */
    w->x = -1;
    bool ok = true;
    for (int k = 0; k < n->n_inputs && ok; k++) {
        double unused;
        int v = n->inputs[k];
        if (v < 0 || v == w->x || scalar_of(g, v, v, &unused))
            continue;
        ok = w->x < 0 && !g->values[v].init && xf_dn_is_f32(g, v);
        w->x = v;
    }
    w->count = 0;
    if (ok && w->x >= 0) {
        sample_points(w->points);
        for (int i = q; i < g->n_nodes && i <= q + REGION_WINDOW && w->count < XF_DN_REGION_MAX; i++) {
            if ((i == q || c->folds[i].host < 0) && eval_node(c, g, w, i))
                w->nodes[w->count++] = i;
            else if (i == q)
                break;
        }
    }
    bool found = false, in[XF_DN_REGION_MAX];
    /* the largest region that matches */
    for (int e = w->count - 1; e >= 1 && !found; e--) {
        if (!closed_region(c, g, w, e, in))
            continue;
        r->post = match(w, w->vals[e]);
        if ((found = r->post.alg != dnnl_alg_kind_undef)) {
            r->x = w->x;
            r->x_reads = reads_in(g, w, in, w->x);
            r->count = 0;
            for (int j = 0; j <= e; j++)
                if (in[j])
                    r->nodes[r->count++] = w->nodes[j];
        }
    }
    free(w);
    return found;
}
