/* The cpu backend's rewrites of normalizations written out (part of
 * xf_dn_lower_graph, cpu_dnnl_lower.c): each chain runs as the one node
 * ONNX Runtime's fusions make of it, in one pass over the values where the
 * ops as written take one per op.
 *
 * A layer normalization written out, as exporters before opset 17 write
 * it (ReduceMean over the last dims, Sub, Pow 2 or Mul by itself,
 * ReduceMean, Add of epsilon, Sqrt, Div, then an optional Mul by a scale
 * and Add of a bias over those dims), runs as one LayerNormalization, as
 * ONNX Runtime's LayerNormFusion runs it: nine passes over the values
 * (17.9 ms for 16 x 384 x 768 on one thread, ONNX Runtime 2.4) become one
 * (its statistics in float, a rounding apart from the ops').
 *
 * An RMS normalization written out, as T5, LLaMA and the decoders after
 * them are exported (Pow 2 or Mul by itself, ReduceMean over the last
 * dims, Add of epsilon, Sqrt, then Div of x, or Reciprocal (or Div of 1)
 * and Mul by x, then an optional Mul by a scale over those dims), runs as
 * one RMSNormalization, as ONNX Runtime's SimplifiedLayerNormFusion runs
 * it (statistics in double, then one rounding per value).
 *
 * A chain keeps its ops where a value inside it is read elsewhere or is a
 * graph output, where its means are not over the last dims (or differ),
 * where the exponent is not 2 and where epsilon is not one constant.  The
 * written model is not touched: this is how the backend runs it. */
#include "cpu_dnnl_lower.h"

#include <stdio.h>

/* The nodes of a layer normalization written out, from its first
 * ReduceMean on: -1 for the Mul and Add it lacks. */
typedef struct ln_chain {
    int mean, sub, square, var, add_eps, sqrt, div, mul, add;
    int x, scale, bias, axis;
    float epsilon;
} ln_chain;

/* Whether node i is a ReduceMean (dims kept) of floats over the last dims
 * of its input, from axis on, with the axes of `like` when like >= 0. */
static bool mean_of_last(const xf_graph *g, int i, int like, int *axis)
{
    const xf_node *n = &g->nodes[i];
    if (n->op != XF_OP_REDUCE_MEAN || !n->attrs.keepdims || n->n_outputs != 1 || n->outputs[0] < 0 ||
        xf_dn_input(n, 0) < 0 || !xf_dn_is_f32(g, n->inputs[0]) || !xf_dn_is_f32(g, n->outputs[0]))
        return false;
    int rank = g->values[n->inputs[0]].shape.ndim, first = rank;
    bool reduced[XF_MAX_DIMS];
    if (rank < 1 || !xf_dn_reduce_axes(g, n, rank, reduced))
        return false;
    while (first > 0 && reduced[first - 1])
        first--;
    for (int d = 0; d < first; d++)
        if (reduced[d])
            return false;
    *axis = first;
    return first < rank && (like < 0 || first == like);
}

/* The constant one-element float value v holds, into *f */
static bool scalar_float(const xf_graph *g, int v, float *f)
{
    const xf_tensor *t = xf_graph_constant(g, v);
    if (!t || t->dtype != XF_DT_FLOAT || xf_tensor_numel(t) != 1)
        return false;
    *f = *(const float *)t->data;
    return true;
}

/* Whether v is a constant of one element equal to want, of any type */
static bool scalar_is(const xf_graph *g, int v, double want)
{
    const xf_tensor *t = v >= 0 ? xf_graph_constant(g, v) : NULL;
    return t && xf_tensor_numel(t) == 1 && xf_rt_load_f64(t->dtype, t->data, 0) == want;
}

/* Whether node n squares v: Pow(v, 2) (2 of any type) or Mul(v, v) */
static bool squares(const xf_graph *g, const xf_node *n, int v)
{
    return n->n_inputs == 2 && n->n_outputs == 1 && n->inputs[0] == v &&
           ((n->op == XF_OP_POW && scalar_is(g, n->inputs[1], 2.0)) || (n->op == XF_OP_MUL && n->inputs[1] == v));
}

/* A constant float operand p of the Mul or Add node q (other than v), with
 * one value per element of the normalized dims (from axis on) of x */
static int ln_param(const xf_graph *g, int q, xf_op op, int v, const xf_shape *x, int axis)
{
    int p = xf_dn_other_operand(g, q, op, v);
    if (p < 0 || !xf_graph_constant(g, p) || g->values[p].dtype != XF_DT_FLOAT)
        return -1;
    xf_shape norm = xf_shape_make(x->ndim - axis, x->dims + axis);
    const xf_shape *ps = &g->values[p].shape;
    return xf_shape_numel(ps) == xf_shape_numel(&norm) && ps->ndim <= norm.ndim && xf_rt_broadcastable(ps, &norm)
               ? p
               : -1;
}

static bool ln_chain_of(const xf_graph *g, const int *reader, int n_values, int i, ln_chain *c)
{
    int axis;
    if (!mean_of_last(g, i, -1, &axis))
        return false;
    const xf_node *m = &g->nodes[i];
    int x = m->inputs[0], u = m->outputs[0];
    const xf_shape *xs = &g->values[x].shape;
    int sub = xf_dn_only_reader(g, reader, n_values, u);
    if (sub < 0 || g->nodes[sub].op != XF_OP_SUB || g->nodes[sub].n_inputs != 2 || g->nodes[sub].inputs[0] != x ||
        g->nodes[sub].inputs[1] != u || !xf_shape_equal(&g->values[g->nodes[sub].outputs[0]].shape, xs))
        return false;
    /* d = x - mean: read by the squaring and the Div only */
    int d = g->nodes[sub].outputs[0], square = -1, div = -1;
    for (int k = 0; k < g->n_nodes; k++) {
        const xf_node *n = &g->nodes[k];
        bool reads = false;
        for (int j = 0; j < n->n_inputs; j++)
            reads |= n->inputs[j] == d;
        if (!reads)
            continue;
        if (squares(g, n, d))
            square = square < 0 ? k : -2;
        else if (n->op == XF_OP_DIV && n->n_inputs == 2 && n->inputs[0] == d)
            div = div < 0 ? k : -2;
        else
            return false;
    }
    /* (a graph output counts as a use) */
    int uses = xf_graph_count_uses(g, d);
    if (square < 0 || div < 0 || uses != (g->nodes[square].op == XF_OP_MUL ? 3 : 2))
        return false;
    int var = xf_dn_only_reader(g, reader, n_values, g->nodes[square].outputs[0]), var_axis;
    if (var < 0 || !mean_of_last(g, var, axis, &var_axis))
        return false;
    int ve = g->nodes[var].outputs[0], add_eps = xf_dn_only_reader(g, reader, n_values, ve);
    int eps = xf_dn_other_operand(g, add_eps, XF_OP_ADD, ve);
    float epsilon;
    if (eps < 0 || !scalar_float(g, eps, &epsilon))
        return false;
    int sq = xf_dn_only_reader(g, reader, n_values, g->nodes[add_eps].outputs[0]);
    if (sq < 0 || g->nodes[sq].op != XF_OP_SQRT || g->nodes[sq].n_outputs != 1 ||
        xf_dn_only_reader(g, reader, n_values, g->nodes[sq].outputs[0]) != div ||
        g->nodes[div].inputs[1] != g->nodes[sq].outputs[0] ||
        !xf_shape_equal(&g->values[g->nodes[div].outputs[0]].shape, xs))
        return false;
    int nv = g->nodes[div].outputs[0], mul = xf_dn_only_reader(g, reader, n_values, nv);
    int scale = ln_param(g, mul, XF_OP_MUL, nv, xs, axis), add = -1, bias = -1;
    if (scale < 0)
        mul = -1;
    else {
        int sv = g->nodes[mul].outputs[0];
        add = xf_dn_only_reader(g, reader, n_values, sv);
        bias = ln_param(g, add, XF_OP_ADD, sv, xs, axis);
        add = bias < 0 ? -1 : add;
    }
    *c = (ln_chain){i, sub, square, var, add_eps, sq, div, mul, add, x, scale, bias, axis, epsilon};
    return true;
}

/* Appends op (LayerNormalization or RMSNormalization) over x's dims from
 * axis on, named after node first, computing node last's output, with
 * the scale (ones where scale < 0) and, for LayerNormalization, the bias
 * (-1 when absent); its node index or -1 when out of memory. */
static int add_norm(xf_graph *g, xf_op op, int first, int last, int x, int scale, int bias, int axis, float epsilon)
{
    if (scale < 0) {
        const xf_shape *xs = &g->values[x].shape;
        xf_shape norm = xf_shape_make(xs->ndim - axis, xs->dims + axis);
        xf_tensor *t = xf_tensor_create(XF_DT_FLOAT, &norm);
        for (int64_t k = 0; t && k < xf_tensor_numel(t); k++)
            ((float *)t->data)[k] = 1.0f;
        scale = xf_dn_add_constant(g, g->values[x].name, "_norm_scale", t);
        if (scale < 0)
            return -1;
    }
    int y = g->nodes[last].outputs[0], in[3] = {x, scale, bias};
    char name[512];
    snprintf(name, sizeof name, "%s", g->nodes[first].name ? g->nodes[first].name : "");
    int n = xf_graph_add_node(g, op, name, op == XF_OP_LAYER_NORM ? 3 : 2, in, 1, &y);
    if (n >= 0) {
        g->nodes[n].attrs.axis = axis;
        g->nodes[n].attrs.epsilon = epsilon;
    }
    return n;
}

/* The nodes of an RMS normalization written out, from its squaring on:
 * -1 for those it lacks.  It divides x by the root (div), or multiplies x
 * (mul_x) by the root's reciprocal (recip). */
typedef struct rms_chain {
    int square, mean, add_eps, sqrt, div, recip, mul_x, mul;
    int x, scale, axis;
    float epsilon;
} rms_chain;

/* Whether node q is the Mul of x and r (either order), of x's shape */
static bool mul_of(const xf_graph *g, int q, int x, int r)
{
    const xf_node *n = q >= 0 ? &g->nodes[q] : NULL;
    return n && n->op == XF_OP_MUL && n->n_inputs == 2 && n->n_outputs == 1 && n->outputs[0] >= 0 &&
           ((n->inputs[0] == x && n->inputs[1] == r) || (n->inputs[0] == r && n->inputs[1] == x)) &&
           xf_shape_equal(&g->values[n->outputs[0]].shape, &g->values[x].shape);
}

static bool rms_chain_of(const xf_graph *g, const int *reader, int n_values, int i, rms_chain *c)
{
    const xf_node *q = &g->nodes[i];
    int x = q->n_inputs > 0 ? q->inputs[0] : -1, axis;
    if (x < 0 || !squares(g, q, x) || q->outputs[0] < 0 || !xf_dn_is_f32(g, x))
        return false;
    const xf_shape *xs = &g->values[x].shape;
    int mean = xf_dn_only_reader(g, reader, n_values, q->outputs[0]);
    if (mean < 0 || !mean_of_last(g, mean, -1, &axis) || !xf_shape_equal(&g->values[q->outputs[0]].shape, xs))
        return false;
    int ms = g->nodes[mean].outputs[0], add_eps = xf_dn_only_reader(g, reader, n_values, ms);
    int eps = xf_dn_other_operand(g, add_eps, XF_OP_ADD, ms);
    float epsilon;
    if (eps < 0 || !scalar_float(g, eps, &epsilon))
        return false;
    int sq = xf_dn_only_reader(g, reader, n_values, g->nodes[add_eps].outputs[0]);
    if (sq < 0 || g->nodes[sq].op != XF_OP_SQRT || g->nodes[sq].n_outputs != 1)
        return false;
    int s = g->nodes[sq].outputs[0], next = xf_dn_only_reader(g, reader, n_values, s);
    const xf_node *nn = next >= 0 ? &g->nodes[next] : NULL;
    if (!nn || nn->n_outputs != 1 || nn->outputs[0] < 0)
        return false;
    int div = -1, recip = -1, mul_x = -1, y;
    if (nn->op == XF_OP_DIV && nn->n_inputs == 2 && nn->inputs[0] == x && nn->inputs[1] == s) {
        div = next;
        y = nn->outputs[0];
        if (!xf_shape_equal(&g->values[y].shape, xs))
            return false;
    } else if (nn->op == XF_OP_RECIPROCAL ||
               (nn->op == XF_OP_DIV && nn->n_inputs == 2 && nn->inputs[1] == s && scalar_is(g, nn->inputs[0], 1.0))) {
        recip = next;
        mul_x = xf_dn_only_reader(g, reader, n_values, nn->outputs[0]);
        if (!mul_of(g, mul_x, x, nn->outputs[0]))
            return false;
        y = g->nodes[mul_x].outputs[0];
    } else {
        return false;
    }
    int mul = xf_dn_only_reader(g, reader, n_values, y);
    int scale = ln_param(g, mul, XF_OP_MUL, y, xs, axis);
    *c = (rms_chain){i, mean, add_eps, sq, div, recip, mul_x, scale < 0 ? -1 : mul, x, scale, axis, epsilon};
    return true;
}

/* Whether none of a chain's nodes (-1 for those absent) was replaced
 * before; then they are marked replaced. */
static bool take(const xf_dn_lowering *low, const int *nodes, int count)
{
    for (int k = 0; k < count; k++)
        if (nodes[k] >= 0 && !low->keep[nodes[k]])
            return false;
    for (int k = 0; k < count; k++)
        if (nodes[k] >= 0)
            low->keep[nodes[k]] = false;
    return true;
}

bool xf_dn_lower_norm(xf_graph *g, const xf_dn_lowering *low, int i, bool *nomem)
{
    ln_chain l;
    rms_chain r;
    if (ln_chain_of(g, low->reader, low->n_values, i, &l)) {
        int nodes[] = {l.mean, l.sub, l.square, l.var, l.add_eps, l.sqrt, l.div, l.mul, l.add};
        if (!take(low, nodes, 9))
            return false;
        int last = l.add >= 0 ? l.add : l.mul >= 0 ? l.mul : l.div;
        *nomem = add_norm(g, XF_OP_LAYER_NORM, l.mean, last, l.x, l.scale, l.bias, l.axis, l.epsilon) < 0;
        return true;
    }
    if (rms_chain_of(g, low->reader, low->n_values, i, &r)) {
        int nodes[] = {r.square, r.mean, r.add_eps, r.sqrt, r.div, r.recip, r.mul_x, r.mul};
        if (!take(low, nodes, 8))
            return false;
        int last = r.mul >= 0 ? r.mul : r.div >= 0 ? r.div : r.mul_x;
        *nomem = add_norm(g, XF_OP_RMS_NORM, r.square, last, r.x, r.scale, -1, r.axis, r.epsilon) < 0;
        return true;
    }
    return false;
}
