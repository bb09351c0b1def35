/* Gradient (ai.onnx.preview.training): the derivatives of the value its
 * attribute y names with respect to those xs names, through the part of
 * the graph that computes y from xs and zs (zs: inputs held constant),
 * evaluated at the values the node's inputs give them (xs then zs, in
 * order), y's own gradient taken as ones (ONNX's definition).
 *
 * The session makes, once, a graph of that part (the nodes y depends on,
 * back to the xs, the zs and constants; anything else is an error naming
 * the value) and runs it, on the node's backend, for every value it
 * computes; then reverse-mode differentiation on the host, in double,
 * walks its nodes backwards, each op's vector-Jacobian product adding
 * into the gradients of its inputs (summed over the dims an input was
 * broadcast along).  The ops it differentiates: Add, Sub, Mul, Div, Pow,
 * PRelu, Sum, Mean, Max, Min (the first input holding the value takes
 * it), Where, Neg, Identity, Cast, Abs, Relu, LeakyRelu, Clip, Sigmoid,
 * Tanh, Exp, Log, Sqrt, Erf, Sin, Cos and the other unary activations
 * and trigonometric functions (slope()), Reshape, Flatten, Squeeze,
 * Unsqueeze, Expand, Transpose, Concat, Split, Slice, Gather, MatMul,
 * Gemm, the Reduce ops, CumSum, Softmax, LogSoftmax, and in gradient_nn.c
 * Conv, ConvTranspose, Resize, the pools, the normalizations and the ops
 * that move elements
 * (Pad, Tile, the Scatters, ...); a node of another op between xs and y
 * is refused, naming it, when the session is made, unless none of its
 * outputs is floating-point (a comparison passes no gradient).  Import
 * lists the values xs, zs and y name among the node's outer inputs
 * (subgraph.c), so that they stay while the graph is optimized. */
#include "gradient_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct xf_rt_gradient {
    const xf_node *node;
    xf_graph *part;      /* the nodes from xs and zs to y: inputs xs then zs, outputs every node output */
    xf_session *session; /* runs part (NULL when y is one of xs and zs) */
    int n_xs;
    int *xs;             /* part's value ids of the xs, then zs */
    int y;               /* part's value id of y */
    bool *varies;        /* per value of part: a floating-point function of the xs */
};

static xf_status fail(const xf_node *n, xf_error *err, xf_status st, const char *what, const char *name)
{
    return xf_error_set(err, st, "node '%s' (Gradient): %s '%s'", n->name ? n->name : "", what, name);
}

static bool differentiable(xf_op op)
{
    switch (op) {
    case XF_OP_ADD: case XF_OP_SUB: case XF_OP_MUL: case XF_OP_DIV: case XF_OP_POW: case XF_OP_SUM:
    case XF_OP_NEG: case XF_OP_IDENTITY: case XF_OP_ABS: case XF_OP_RELU: case XF_OP_SIGMOID: case XF_OP_TANH:
    case XF_OP_EXP: case XF_OP_LOG: case XF_OP_SQRT: case XF_OP_RESHAPE: case XF_OP_FLATTEN: case XF_OP_SQUEEZE:
    case XF_OP_UNSQUEEZE: case XF_OP_TRANSPOSE: case XF_OP_MATMUL: case XF_OP_GEMM: case XF_OP_REDUCE_SUM:
    case XF_OP_REDUCE_MEAN: case XF_OP_SOFTMAX: case XF_OP_LOG_SOFTMAX: case XF_OP_EXPAND: case XF_OP_WHERE:
    case XF_OP_CAST: case XF_OP_LEAKY_RELU: case XF_OP_ERF: case XF_OP_SIN: case XF_OP_COS: case XF_OP_CLIP:
    case XF_OP_CONCAT: case XF_OP_GATHER: case XF_OP_SLICE: case XF_OP_SPLIT: case XF_OP_RECIPROCAL:
    case XF_OP_SOFTPLUS: case XF_OP_SOFTSIGN: case XF_OP_ELU: case XF_OP_SELU: case XF_OP_CELU: case XF_OP_HARD_SIGMOID:
    case XF_OP_HARD_SWISH: case XF_OP_THRESHOLDED_RELU: case XF_OP_TAN: case XF_OP_ATAN: case XF_OP_ASIN:
    case XF_OP_ACOS: case XF_OP_SINH: case XF_OP_COSH: case XF_OP_ASINH: case XF_OP_ACOSH: case XF_OP_ATANH:
    case XF_OP_SWISH: case XF_OP_MISH: case XF_OP_GELU: case XF_OP_PRELU: case XF_OP_MEAN: case XF_OP_MAX:
    case XF_OP_MIN: case XF_OP_CONV: case XF_OP_MAX_POOL: case XF_OP_AVERAGE_POOL: case XF_OP_LP_POOL:
    case XF_OP_GLOBAL_AVERAGE_POOL: case XF_OP_GLOBAL_MAX_POOL: case XF_OP_GLOBAL_LP_POOL: case XF_OP_BATCH_NORM:
    case XF_OP_LAYER_NORM: case XF_OP_INSTANCE_NORM: case XF_OP_GROUP_NORM: case XF_OP_REDUCE_MAX:
    case XF_OP_REDUCE_MIN: case XF_OP_REDUCE_PROD: case XF_OP_REDUCE_L1: case XF_OP_REDUCE_L2:
    case XF_OP_REDUCE_LOG_SUM: case XF_OP_REDUCE_LOG_SUM_EXP: case XF_OP_REDUCE_SUM_SQUARE: case XF_OP_CUM_SUM:
    case XF_OP_CONV_TRANSPOSE: case XF_OP_RESIZE: case XF_OP_UPSAMPLE: case XF_OP_EINSUM: case XF_OP_TOP_K:
    case XF_OP_ROUND: case XF_OP_FLOOR: case XF_OP_CEIL: case XF_OP_SIGN:
        return true;
    default:
        return xf_grad_is_traced(op);
    }
}

/* The part of g that computes y from the sources (xs then zs): nodes in
 * order, their inputs mapped to part's values. */
static xf_status build_part(xf_rt_gradient *gr, const xf_graph *g, int node, const int *src, int n_src, int y,
                            xf_error *err)
{
    const xf_node *gn = gr->node;
    bool *need = calloc((size_t)g->n_values + 1, sizeof *need), *stop = calloc((size_t)g->n_values + 1, 1);
    bool *keep = calloc((size_t)g->n_nodes + 1, sizeof *keep);
    int *map = malloc(sizeof *map * ((size_t)g->n_values + 1));
    xf_status st = need && stop && keep && map ? XF_OK : xf_error_set(err, XF_ERR_NOMEM, "out of memory");
    for (int i = 0; st == XF_OK && i < n_src; i++)
        stop[src[i]] = true;
    if (st == XF_OK)
        need[y] = true;
    for (int i = g->n_nodes - 1; st == XF_OK && i >= 0; i--) {
        const xf_node *n = &g->nodes[i];
        bool wanted = false;
        for (int k = 0; k < n->n_outputs; k++)
            wanted |= n->outputs[k] >= 0 && need[n->outputs[k]] && !stop[n->outputs[k]];
        if (!wanted)
            continue;
        if (i == node)
            st = fail(gn, err, XF_ERR_INVALID, "y depends on the node's own output, through", g->values[y].name);
        keep[i] = true;
        for (int k = 0; k < n->n_inputs; k++)
            if (n->inputs[k] >= 0)
                need[n->inputs[k]] = true;
    }
    for (int v = 0; st == XF_OK && v < g->n_values; v++)
        map[v] = -1;
    gr->part = st == XF_OK ? xf_graph_create("gradient") : NULL;
    if (st == XF_OK && !gr->part)
        st = xf_error_set(err, XF_ERR_NOMEM, "out of memory");
    for (int i = 0; st == XF_OK && i < n_src; i++) {
        const xf_value *v = &g->values[src[i]];
        if (map[src[i]] < 0 && (map[src[i]] = xf_graph_add_input(gr->part, v->name, v->dtype, &v->shape)) < 0)
            st = xf_error_set(err, XF_ERR_NOMEM, "out of memory");
        gr->xs[i] = map[src[i]];
    }
    for (int i = 0; st == XF_OK && i < g->n_nodes; i++) {
        if (!keep[i])
            continue;
        const xf_node *n = &g->nodes[i];
        int ins[n->n_inputs + 1], outs[n->n_outputs + 1];
        for (int k = 0; st == XF_OK && k < n->n_inputs; k++) {
            int v = n->inputs[k];
            const xf_tensor *c = v >= 0 && map[v] < 0 ? xf_graph_constant(g, v) : NULL;
            if (c && (map[v] = xf_graph_add_initializer(gr->part, g->values[v].name, (xf_tensor *)c)) < 0)
                st = xf_error_set(err, XF_ERR_NOMEM, "out of memory");
            else if (v >= 0 && map[v] < 0)
                st = fail(gn, err, XF_ERR_INVALID,
                          "y depends on a value that is none of xs and zs, and not a constant: add it to zs:",
                          g->values[v].name);
            ins[k] = v >= 0 ? map[v] : -1;
        }
        for (int k = 0; st == XF_OK && k < n->n_outputs; k++) {
            int v = n->outputs[k];
            outs[k] = v < 0 ? -1 : (map[v] = xf_graph_add_value(gr->part, g->values[v].name, g->values[v].dtype,
                                                                 &g->values[v].shape));
            if (v >= 0 && outs[k] < 0)
                st = xf_error_set(err, XF_ERR_NOMEM, "out of memory");
        }
        if (st == XF_OK && xf_graph_copy_node(gr->part, n, ins, outs) < 0)
            st = xf_error_set(err, XF_ERR_NOMEM, "out of memory");
        for (int k = 0; st == XF_OK && k < n->n_outputs; k++)
            if (outs[k] >= 0)
                xf_graph_add_output(gr->part, outs[k]);
    }
    /* y a graph input or constant that is none of the sources (no node of
     * the part computes it) */
    if (st == XF_OK && map[y] < 0)
        st = fail(gn, err, XF_ERR_INVALID, "y is none of xs and zs and is not computed from them:",
                  g->values[y].name);
    if (st == XF_OK)
        gr->y = map[y];
    free(need);
    free(stop);
    free(keep);
    free(map);
    return st;
}

/* Which values of part vary with the xs, and that every node they pass
 * through is one the backward pass knows. */
static xf_status mark_varying(xf_rt_gradient *gr, xf_error *err)
{
    const xf_graph *p = gr->part;
    gr->varies = calloc((size_t)p->n_values + 1, sizeof *gr->varies);
    if (!gr->varies)
        return xf_error_set(err, XF_ERR_NOMEM, "out of memory");
    bool *used = calloc((size_t)p->n_values + 1, sizeof *used);
    if (!used)
        return xf_error_set(err, XF_ERR_NOMEM, "out of memory");
    used[gr->y] = true;
    for (int i = 0; i < p->n_nodes; i++)
        for (int k = 0; k < p->nodes[i].n_inputs; k++)
            if (p->nodes[i].inputs[k] >= 0)
                used[p->nodes[i].inputs[k]] = true;
    for (int i = 0; i < gr->n_xs; i++)
        gr->varies[gr->xs[i]] = xf_dtype_is_float(p->values[gr->xs[i]].dtype);
    xf_status st = XF_OK;
    for (int i = 0; i < p->n_nodes && st == XF_OK; i++) {
        const xf_node *n = &p->nodes[i];
        /* a node of no floating-point output (a comparison, Shape) passes no gradient */
        bool any = false, real_out = false;
        for (int k = 0; k < n->n_inputs; k++)
            any |= n->inputs[k] >= 0 && gr->varies[n->inputs[k]];
        for (int k = 0; k < n->n_outputs; k++)
            real_out |= n->outputs[k] >= 0 && xf_dtype_is_float(p->values[n->outputs[k]].dtype);
        if (!any || !real_out)
            continue;
        bool bounds = n->op == XF_OP_CLIP && n->n_inputs > 1 &&
                      ((n->inputs[1] >= 0 && gr->varies[n->inputs[1]]) ||
                       (n->n_inputs > 2 && n->inputs[2] >= 0 && gr->varies[n->inputs[2]]));
        const char *form = differentiable(n->op) && !bounds ? xf_grad_nn_refusal(n, used, gr->varies) : NULL;
        if (!differentiable(n->op) || bounds || form) {
            char what[256];
            snprintf(what, sizeof what, "has no derivative of %s%s modelled, for the node that computes",
                     n->opaque ? n->opaque->op_type : xf_op_name(n->op), bounds ? "'s bounds" : form ? form : "");
            st = fail(gr->node, err, XF_ERR_UNSUPPORTED, what,
                      n->n_outputs > 0 && n->outputs[0] >= 0 ? p->values[n->outputs[0]].name : "");
        }
        for (int k = 0; k < n->n_outputs; k++)
            if (n->outputs[k] >= 0)
                gr->varies[n->outputs[k]] = xf_dtype_is_float(p->values[n->outputs[k]].dtype);
    }
    free(used);
    return st;
}

/* The value of g that name (one of xs, zs and y) stands for: import
 * lists them among the node's outer inputs, each once, in the order xs,
 * zs, y (subgraph.c), which a rewrite may have replaced by others (the
 * same values, other names); a node made without them finds the name. */
static int named_value(const xf_graph *g, const xf_node *n, const xf_opaque_strings *xs,
                       const xf_opaque_strings *zs, const xf_opaque_strings *y, const char *name)
{
    const char *names[n->n_inputs + 1];
    int count = 0, at = -1;
    const xf_opaque_strings *lists[3] = {xs, zs, y};
    for (int l = 0; l < 3; l++)
        for (int k = 0; lists[l] && k < lists[l]->n; k++) {
            bool seen = false;
            for (int j = 0; j < count && !seen; j++)
                seen = strcmp(names[j], lists[l]->v[k]) == 0;
            if (seen)
                continue;
            if (count == n->n_inputs - n->opaque->n_own_inputs)
                return xf_graph_find_value(g, name);
            if (strcmp(lists[l]->v[k], name) == 0)
                at = count;
            names[count++] = lists[l]->v[k];
        }
    if (count != n->n_inputs - n->opaque->n_own_inputs || at < 0)
        return xf_graph_find_value(g, name);
    return n->inputs[n->opaque->n_own_inputs + at];
}

xf_status xf_rt_gradient_create(const xf_graph *g, int node, int64_t opset, const char *backend,
                                const xf_session_options *inherit,
                                xf_rt_gradient **out, xf_error *err)
{
    *out = NULL;
    const xf_node *n = &g->nodes[node];
    const xf_opaque_strings *xs = xf_opaque_find_strings(n->opaque, "xs");
    const xf_opaque_strings *zs = xf_opaque_find_strings(n->opaque, "zs"), *y = xf_opaque_find_strings(n->opaque, "y");
    int n_x = xs ? xs->n : 0, n_z = zs ? zs->n : 0;
    if (n_x < 1 || !y || y->n != 1)
        return xf_error_set(err, XF_ERR_INVALID,
                            "node '%s' (Gradient): needs the attributes xs (one name or more) and y (one name)",
                            n->name ? n->name : "");
    if (n->opaque->n_own_inputs != n_x + n_z || n->n_outputs != n_x)
        return xf_error_set(err, XF_ERR_INVALID,
                            "node '%s' (Gradient) has %d inputs and %d outputs; xs and zs name %d and %d values, and "
                            "it takes one input per name of both and gives one output per name of xs",
                            n->name ? n->name : "", n->opaque->n_own_inputs, n->n_outputs, n_x, n_z);
    xf_rt_gradient *gr = calloc(1, sizeof *gr);
    int *src = malloc(sizeof *src * (size_t)(n_x + n_z));
    if (!gr || !src || !(gr->xs = malloc(sizeof *gr->xs * (size_t)(n_x + n_z)))) {
        free(src);
        free(gr);
        return xf_error_set(err, XF_ERR_NOMEM, "out of memory");
    }
    gr->node = n;
    gr->n_xs = n_x;
    xf_status st = XF_OK;
    for (int i = 0; i < n_x + n_z && st == XF_OK; i++) {
        const char *name = i < n_x ? xs->v[i] : zs->v[i - n_x];
        src[i] = named_value(g, n, xs, zs, y, name);
        for (int j = 0; j < i && src[i] >= 0; j++)
            if (src[j] == src[i])
                st = fail(n, err, XF_ERR_INVALID, "xs and zs name a value twice:", name);
        if (st != XF_OK)
            break;
        if (src[i] < 0)
            st = fail(n, err, XF_ERR_INVALID,
                      i < n_x ? "xs names no value of the graph:" : "zs names no value of the graph:", name);
        else if (i < n_x && !xf_dtype_is_float(g->values[src[i]].dtype))
            st = fail(n, err, XF_ERR_INVALID, "differentiates floating-point values only, not", name);
    }
    int yv = st == XF_OK ? named_value(g, n, xs, zs, y, y->v[0]) : -1;
    if (st == XF_OK && yv < 0)
        st = fail(n, err, XF_ERR_INVALID, "y names no value of the graph:", y->v[0]);
    if (st == XF_OK && !xf_dtype_is_float(g->values[yv].dtype))
        st = fail(n, err, XF_ERR_INVALID, "differentiates floating-point values only, not", y->v[0]);
    if (st == XF_OK)
        st = build_part(gr, g, node, src, n_x + n_z, yv, err);
    if (st == XF_OK)
        st = mark_varying(gr, err);
    xf_session_options opt = xf_rt_inherited_options(inherit);
    if (st == XF_OK && gr->part->n_nodes > 0)
        st = xf_session_create(gr->part, opset, backend, &opt, &gr->session, err);
    free(src);
    if (st != XF_OK) {
        xf_rt_gradient_free(gr);
        return st;
    }
    *out = gr;
    return XF_OK;
}

void xf_rt_gradient_free(xf_rt_gradient *gr)
{
    if (!gr)
        return;
    xf_session_free(gr->session);
    xf_graph_free(gr->part);
    free(gr->xs);
    free(gr->varies);
    free(gr);
}

/* ------------------------------------------------------------ the backward pass */

typedef xf_grad_pass pass;

static const xf_shape *shape(const pass *b, int v) { return &b->val[v]->shape; }

/* Elementwise ops with numpy broadcasting: each output element's gradient
 * times the partial derivative, into the input element it read. */
static void binary(pass *b, const xf_node *n, const double *gy, bool *oom)
{
    int ia = n->inputs[0], ib = n->inputs[1], iy = n->outputs[0];
    const double *a = xf_grad_vals(b, ia), *c = xf_grad_vals(b, ib), *y = xf_grad_vals(b, iy);
    double *ga = xf_grad_of(b, ia, oom), *gb = xf_grad_of(b, ib, oom);
    if (!a || !c || !y) {
        *oom = true;
        return;
    }
    xf_rt_iter it;
    xf_rt_iter_init(&it, shape(b, iy));
    int ka = xf_rt_iter_add_broadcast(&it, shape(b, ia)), kb = xf_rt_iter_add_broadcast(&it, shape(b, ib));
    int64_t count = xf_tensor_numel(b->val[iy]);
    for (int64_t i = 0; i < count; i++, xf_rt_iter_next(&it)) {
        double av = a[it.off[ka]], bv = c[it.off[kb]], da = 1, db = 1;
        switch (n->op) {
        case XF_OP_SUB: db = -1; break;
        case XF_OP_MUL: da = bv, db = av; break;
        case XF_OP_DIV: da = 1 / bv, db = -av / (bv * bv); break;
        case XF_OP_POW: da = bv * pow(av, bv - 1), db = y[i] * log(av); break;
        case XF_OP_PRELU: da = av < 0 ? bv : 1, db = av < 0 ? av : 0; break;
        default: break;
        }
        if (ga)
            ga[it.off[ka]] += gy[i] * da;
        if (gb)
            gb[it.off[kb]] += gy[i] * db;
    }
}

/* Sum, Expand: every input (broadcast) takes the output's gradient; Mean
 * its share. */
static void sum(pass *b, const xf_node *n, const double *gy, bool *oom)
{
    int iy = n->outputs[0];
    double share = n->op == XF_OP_MEAN ? 1.0 / n->n_inputs : 1;
    for (int k = 0; k < n->n_inputs; k++) {
        double *gx = xf_grad_of(b, n->inputs[k], oom);
        if (!gx)
            continue;
        xf_rt_iter it;
        xf_rt_iter_init(&it, shape(b, iy));
        int kx = xf_rt_iter_add_broadcast(&it, shape(b, n->inputs[k]));
        int64_t count = xf_tensor_numel(b->val[iy]);
        for (int64_t i = 0; i < count; i++, xf_rt_iter_next(&it))
            gx[it.off[kx]] += gy[i] * share;
    }
}

/* Max, Min: each output element's gradient goes to the first input
 * (broadcast) holding the value it took. */
static void extreme(pass *b, const xf_node *n, const double *gy, bool *oom)
{
    int iy = n->outputs[0], ni = n->n_inputs;
    const double *y = xf_grad_vals(b, iy);
    xf_rt_iter *it = malloc(sizeof *it * (size_t)ni);
    if (!y || !it) {
        *oom = true;
        free(it);
        return;
    }
    for (int k = 0; k < ni; k++) { /* one walk per input: an iterator takes few operands */
        xf_rt_iter_init(&it[k], shape(b, iy));
        xf_rt_iter_add_broadcast(&it[k], shape(b, n->inputs[k]));
        *oom |= !xf_grad_vals(b, n->inputs[k]);
    }
    int64_t count = xf_tensor_numel(b->val[iy]);
    for (int64_t i = 0; i < count && !*oom; i++) {
        bool found = false;
        for (int k = 0; k < ni; k++) {
            double *gx = found ? NULL : xf_grad_of(b, n->inputs[k], oom);
            if (!found && b->x[n->inputs[k]][it[k].off[0]] == y[i]) {
                found = true;
                if (gx)
                    gx[it[k].off[0]] += gy[i];
            }
            xf_rt_iter_next(&it[k]);
        }
    }
    free(it);
}

static double sigmoid(double v) { return 1 / (1 + exp(-v)); }

/* d y / d x of a unary op at x, y (Clip's bounds lo, hi). */
static double slope(const xf_node *n, double x, double y, double lo, double hi)
{
    const xf_attrs *a = &n->attrs;
    switch (n->op) {
    case XF_OP_NEG: return -1;
    case XF_OP_ABS: return x > 0 ? 1 : x < 0 ? -1 : 0;
    case XF_OP_RELU: return x > 0;
    case XF_OP_SIGMOID: return y * (1 - y);
    case XF_OP_TANH: return 1 - y * y;
    case XF_OP_EXP: return y;
    case XF_OP_LOG: return 1 / x;
    case XF_OP_SQRT: return 0.5 / y;
    case XF_OP_LEAKY_RELU: return x > 0 ? 1 : a->alpha;
    case XF_OP_ERF: return 1.1283791670955126 * exp(-x * x); /* 2 / sqrt(pi) */
    case XF_OP_SIN: return cos(x);
    case XF_OP_COS: return -sin(x);
    case XF_OP_CLIP: return x >= lo && x <= hi;
    case XF_OP_RECIPROCAL: return -y * y;
    case XF_OP_SOFTPLUS: return sigmoid(x);
    case XF_OP_SOFTSIGN: return 1 / ((1 + fabs(x)) * (1 + fabs(x)));
    case XF_OP_ELU: return x < 0 ? y + a->alpha : 1;
    case XF_OP_SELU: return x > 0 ? a->beta : a->beta * a->alpha * exp(x); /* beta: gamma */
    case XF_OP_CELU: return x > 0 ? 1 : exp(x / a->alpha);
    case XF_OP_HARD_SIGMOID: return a->alpha * x + a->beta > 0 && a->alpha * x + a->beta < 1 ? a->alpha : 0;
    case XF_OP_HARD_SWISH: return x > 3 ? 1 : x < -3 ? 0 : x / 3 + 0.5;
    case XF_OP_THRESHOLDED_RELU: return x > a->alpha;
    case XF_OP_TAN: return 1 + y * y;
    case XF_OP_ATAN: return 1 / (1 + x * x);
    case XF_OP_ASIN: return 1 / sqrt(1 - x * x);
    case XF_OP_ACOS: return -1 / sqrt(1 - x * x);
    case XF_OP_SINH: return cosh(x);
    case XF_OP_COSH: return sinh(x);
    case XF_OP_ASINH: return 1 / sqrt(x * x + 1);
    case XF_OP_ACOSH: return 1 / sqrt(x * x - 1);
    case XF_OP_ATANH: return 1 / (1 - x * x);
    case XF_OP_SWISH: return sigmoid(a->alpha * x) * (1 + a->alpha * x * (1 - sigmoid(a->alpha * x)));
    case XF_OP_MISH: {
        double t = tanh(x > 0 ? x + log1p(exp(-x)) : log1p(exp(x)));
        return t + x * (1 - t * t) * sigmoid(x);
    }
    case XF_OP_GELU: {
        if (!a->gelu_tanh) /* Phi(x) + x phi(x) */
            return 0.5 * erfc(-x * sqrt(0.5)) + x * exp(-0.5 * x * x) * 0.3989422804014327;
        double c = sqrt(2.0 / 3.14159265358979323846), t = tanh(c * (x + 0.044715 * x * x * x));
        return 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * c * (1 + 3 * 0.044715 * x * x);
    }
    case XF_OP_ROUND: case XF_OP_FLOOR: case XF_OP_CEIL: case XF_OP_SIGN: return 0; /* flat between steps */
    default: return 1; /* Identity, Cast, Reshape, Flatten, Squeeze, Unsqueeze: the same elements */
    }
}

/* Input 0's gradient and the values of input 0 and output 0, which an
 * op's derivative reads; false when there is nothing to add into (or no
 * memory: *oom). */
static bool operands(pass *b, const xf_node *n, double **gx, const double **x, const double **y, bool *oom)
{
    *gx = xf_grad_of(b, n->inputs[0], oom);
    *x = xf_grad_vals(b, n->inputs[0]);
    *y = xf_grad_vals(b, n->outputs[0]);
    *oom |= !*x || !*y;
    return *gx && *x && *y;
}

static void unary(pass *b, const xf_node *n, const double *gy, bool *oom)
{
    int iy = n->outputs[0];
    double *gx;
    const double *x, *y;
    if (!operands(b, n, &gx, &x, &y, oom))
        return;
    double lo = -INFINITY, hi = INFINITY; /* Clip's bounds */
    if (n->op == XF_OP_CLIP && n->attrs.has_clip_attrs)
        lo = n->attrs.clip_min, hi = n->attrs.clip_max;
    for (int k = 1; n->op == XF_OP_CLIP && !n->attrs.has_clip_attrs && k < n->n_inputs && k < 3; k++) {
        const xf_tensor *t = n->inputs[k] >= 0 ? b->val[n->inputs[k]] : NULL;
        if (t && xf_tensor_numel(t) == 1)
            *(k == 1 ? &lo : &hi) = xf_rt_load_f64(t->dtype, t->data, 0);
    }
    int64_t count = xf_tensor_numel(b->val[iy]);
    for (int64_t i = 0; i < count; i++)
        gx[i] += gy[i] * slope(n, x[i], y[i], lo, hi);
}

static void transpose(pass *b, const xf_node *n, const double *gy, bool *oom)
{
    int ix = n->inputs[0], iy = n->outputs[0];
    double *gx = xf_grad_of(b, ix, oom);
    if (!gx)
        return;
    const xf_shape *xs = shape(b, ix);
    int64_t dense[XF_MAX_DIMS], strides[XF_MAX_DIMS];
    xf_rt_dense_strides(xs, dense);
    for (int d = 0; d < xs->ndim; d++)
        strides[d] = dense[n->attrs.n_perm ? n->attrs.perm[d] : xs->ndim - 1 - d];
    xf_rt_iter it;
    xf_rt_iter_init(&it, shape(b, iy));
    int kx = xf_rt_iter_add(&it, strides, 0);
    int64_t count = xf_tensor_numel(b->val[iy]);
    for (int64_t i = 0; i < count; i++, xf_rt_iter_next(&it))
        gx[it.off[kx]] += gy[i];
}

/* Where(c, a, b): the gradient goes to a where c holds, to b elsewhere. */
static void where(pass *b, const xf_node *n, const double *gy, bool *oom)
{
    int ic = n->inputs[0], ia = n->inputs[1], ib = n->inputs[2], iy = n->outputs[0];
    const double *c = xf_grad_vals(b, ic);
    double *ga = xf_grad_of(b, ia, oom), *gb = xf_grad_of(b, ib, oom);
    if (!c) {
        *oom = true;
        return;
    }
    xf_rt_iter it;
    xf_rt_iter_init(&it, shape(b, iy));
    int kc = xf_rt_iter_add_broadcast(&it, shape(b, ic)), ka = xf_rt_iter_add_broadcast(&it, shape(b, ia));
    int kb = xf_rt_iter_add_broadcast(&it, shape(b, ib));
    int64_t count = xf_tensor_numel(b->val[iy]);
    for (int64_t i = 0; i < count; i++, xf_rt_iter_next(&it)) {
        double *to = c[it.off[kc]] != 0 ? ga : gb;
        if (to)
            to[it.off[c[it.off[kc]] != 0 ? ka : kb]] += gy[i];
    }
}

/* Concat: each input takes its slab of the output's gradient. */
static void concat(pass *b, const xf_node *n, const double *gy, bool *oom)
{
    const xf_shape *ys = shape(b, n->outputs[0]);
    int axis = xf_rt_axis(n->attrs.axis, ys->ndim);
    if (axis < 0)
        return;
    int64_t outer = xf_rt_dims_product(ys, 0, axis), inner = xf_rt_dims_product(ys, axis + 1, ys->ndim);
    int64_t row = ys->dims[axis] * inner, at = 0;
    for (int k = 0; k < n->n_inputs; k++) {
        int64_t len = shape(b, n->inputs[k])->dims[axis] * inner;
        double *gx = xf_grad_of(b, n->inputs[k], oom);
        for (int64_t o = 0; gx && o < outer; o++)
            for (int64_t j = 0; j < len; j++)
                gx[o * len + j] += gy[o * row + at + j];
        at += len;
    }
}

/* Split: each output's gradient into its slab of the input. */
static void split(pass *b, const xf_node *n, bool *oom)
{
    int ix = n->inputs[0];
    double *gx = xf_grad_of(b, ix, oom);
    const xf_shape *xs = shape(b, ix);
    int axis = xf_rt_axis(n->attrs.axis, xs->ndim);
    if (!gx || axis < 0)
        return;
    int64_t outer = xf_rt_dims_product(xs, 0, axis), inner = xf_rt_dims_product(xs, axis + 1, xs->ndim);
    int64_t row = xs->dims[axis] * inner, at = 0;
    for (int k = 0; k < n->n_outputs; k++) {
        if (n->outputs[k] < 0)
            continue;
        int64_t len = shape(b, n->outputs[k])->dims[axis] * inner;
        const double *gy = b->g[n->outputs[k]];
        for (int64_t o = 0; gy && o < outer; o++)
            for (int64_t j = 0; j < len; j++)
                gx[o * row + at + j] += gy[o * len + j];
        at += len;
    }
}

/* Slice: each output element's gradient into the input element it took
 * (the walk cpu_ref's Slice takes). */
static void slice(pass *b, const xf_node *n, const double *gy, bool *oom)
{
    int ix = n->inputs[0], iy = n->outputs[0];
    double *gx = xf_grad_of(b, ix, oom);
    if (!gx)
        return;
    xf_tensor_view in[5] = {{0}};
    for (int k = 0; k < n->n_inputs && k < 5; k++)
        if (n->inputs[k] >= 0)
            in[k] = (xf_tensor_view){b->val[n->inputs[k]]->dtype, b->val[n->inputs[k]]->shape,
                                     b->val[n->inputs[k]]->data};
    int64_t base, strides[XF_MAX_DIMS];
    xf_error e;
    if (xf_ref_slice_walk(n, in, shape(b, iy), &base, strides, &e) != XF_OK)
        return; /* the forward run took the same walk */
    xf_rt_iter it;
    xf_rt_iter_init(&it, shape(b, iy));
    int kx = xf_rt_iter_add(&it, strides, base);
    int64_t count = xf_tensor_numel(b->val[iy]);
    for (int64_t i = 0; i < count; i++, xf_rt_iter_next(&it))
        gx[it.off[kx]] += gy[i];
}

/* Gather(data, indices) along axis: each output element's gradient into
 * the data element it took (an index taken twice, twice). */
static void gather(pass *b, const xf_node *n, const double *gy, bool *oom)
{
    int id = n->inputs[0], ii = n->inputs[1];
    double *gd = xf_grad_of(b, id, oom);
    if (!gd)
        return;
    const xf_shape *ds = shape(b, id);
    const xf_tensor *idx = b->val[ii];
    int axis = xf_rt_axis(n->attrs.axis, ds->ndim);
    if (axis < 0)
        return;
    int64_t outer = xf_rt_dims_product(ds, 0, axis), inner = xf_rt_dims_product(ds, axis + 1, ds->ndim);
    int64_t len = ds->dims[axis], count = xf_tensor_numel(idx);
    for (int64_t o = 0; o < outer; o++)
        for (int64_t j = 0; j < count; j++) {
            int64_t k = xf_rt_load_i64(idx->dtype, idx->data, j);
            k += k < 0 ? len : 0;
            if (k < 0 || k >= len)
                continue;
            for (int64_t e = 0; e < inner; e++)
                gd[(o * len + k) * inner + e] += gy[(o * count + j) * inner + e];
        }
}

/* gc[m, n] += sum_k ga[m, k] gb[k, n] (row strides given), the product
 * both backward products of a matrix product are. */
static void product(const double *a, int64_t sa_m, int64_t sa_k, const double *c, int64_t sc_k, int64_t sc_n,
                    double *o, int64_t so_m, int64_t so_n, int64_t M, int64_t K, int64_t N, double scale)
{
    for (int64_t m = 0; m < M; m++)
        for (int64_t k = 0; k < K; k++) {
            double av = scale * a[m * sa_m + k * sa_k];
            for (int64_t j = 0; j < N; j++)
                o[m * so_m + j * so_n] += av * c[k * sc_k + j * sc_n];
        }
}

/* MatMul (numpy's: 1-D operands promoted, batch dims broadcast). */
static void matmul(pass *b, const xf_node *n, const double *gy, bool *oom)
{
    int ia = n->inputs[0], ib = n->inputs[1];
    const xf_shape *as = shape(b, ia), *bs = shape(b, ib);
    const double *A = xf_grad_vals(b, ia), *B = xf_grad_vals(b, ib);
    double *ga = xf_grad_of(b, ia, oom), *gb = xf_grad_of(b, ib, oom);
    if (!A || !B) {
        *oom = true;
        return;
    }
    int64_t M = as->ndim >= 2 ? as->dims[as->ndim - 2] : 1, K = as->dims[as->ndim - 1];
    int64_t N = bs->ndim >= 2 ? bs->dims[bs->ndim - 1] : 1;
    xf_shape ab = {as->ndim > 2 ? as->ndim - 2 : 0, {0}}, bb = {bs->ndim > 2 ? bs->ndim - 2 : 0, {0}}, yb;
    for (int d = 0; d < ab.ndim; d++)
        ab.dims[d] = as->dims[d];
    for (int d = 0; d < bb.ndim; d++)
        bb.dims[d] = bs->dims[d];
    yb.ndim = ab.ndim > bb.ndim ? ab.ndim : bb.ndim;
    for (int d = 0; d < yb.ndim; d++) {
        int da = d - (yb.ndim - ab.ndim), db = d - (yb.ndim - bb.ndim);
        int64_t x = da >= 0 ? ab.dims[da] : 1, z = db >= 0 ? bb.dims[db] : 1;
        yb.dims[d] = x == 1 ? z : x;
    }
    xf_rt_iter it;
    xf_rt_iter_init(&it, &yb);
    int ka = xf_rt_iter_add_broadcast(&it, &ab), kb = xf_rt_iter_add_broadcast(&it, &bb);
    int64_t batches = xf_shape_numel(&yb);
    for (int64_t t = 0; t < batches; t++, xf_rt_iter_next(&it)) {
        const double *g = gy + t * M * N, *a = A + it.off[ka] * M * K, *c = B + it.off[kb] * K * N;
        if (ga) /* dA = G B^T */
            product(g, N, 1, c, 1, N, ga + it.off[ka] * M * K, K, 1, M, N, K, 1);
        if (gb) /* dB = A^T G */
            product(a, 1, K, g, N, 1, gb + it.off[kb] * K * N, N, 1, K, M, N, 1);
    }
}

/* Gemm: Y = alpha A' B' + beta C, A' = A or its transpose (and B'). */
static void gemm(pass *b, const xf_node *n, const double *gy, bool *oom)
{
    int ia = n->inputs[0], ib = n->inputs[1], ic = n->n_inputs > 2 ? n->inputs[2] : -1, iy = n->outputs[0];
    const xf_shape *ys = shape(b, iy), *as = shape(b, ia);
    int64_t M = ys->dims[0], N = ys->dims[1], K = as->dims[n->attrs.trans_a ? 0 : 1];
    const double *A = xf_grad_vals(b, ia), *B = xf_grad_vals(b, ib);
    double *ga = xf_grad_of(b, ia, oom), *gb = xf_grad_of(b, ib, oom), *gc = xf_grad_of(b, ic, oom);
    double alpha = n->attrs.alpha;
    if (!A || !B) {
        *oom = true;
        return;
    }
    /* element (m, k) of A' at m * am + k * ak; (k, j) of B' at k * bk + j * bj */
    int64_t am = n->attrs.trans_a ? 1 : K, ak = n->attrs.trans_a ? M : 1;
    int64_t bk = n->attrs.trans_b ? 1 : N, bj = n->attrs.trans_b ? K : 1;
    if (ga) /* dA' = alpha G B'^T */
        product(gy, N, 1, B, bj, bk, ga, am, ak, M, N, K, alpha);
    if (gb) /* dB' = alpha A'^T G */
        product(A, ak, am, gy, N, 1, gb, bk, bj, K, M, N, alpha);
    if (gc) {
        xf_rt_iter it;
        xf_rt_iter_init(&it, ys);
        int kc = xf_rt_iter_add_broadcast(&it, shape(b, ic));
        for (int64_t i = 0; i < M * N; i++, xf_rt_iter_next(&it))
            gc[it.off[kc]] += n->attrs.beta * gy[i];
    }
}

/* The Reduce ops: each input element x takes its output's gradient times
 * d y / d x (y its output): 1 for ReduceSum, 1 / count for ReduceMean,
 * 2 x, sign x, x / y, 1 / e^y, e^(x - y) for ReduceSumSquare, L1, L2,
 * LogSum, LogSumExp; ReduceMax and ReduceMin pass it to the first element
 * holding y, ReduceProd to each x the product of the others. */
static void reduce(pass *b, const xf_node *n, const double *gy, bool *oom)
{
    int ix = n->inputs[0], iy = n->outputs[0];
    double *gx;
    const double *x, *y;
    if (!operands(b, n, &gx, &x, &y, oom))
        return;
    const xf_shape *xs = shape(b, ix);
    bool axis[XF_MAX_DIMS] = {0};
    int n_axes = 0;
    const xf_tensor *at = n->n_inputs > 1 && n->inputs[1] >= 0 ? b->val[n->inputs[1]] : NULL;
    int64_t given = n->attrs.has_axes ? n->attrs.n_axes : at ? xf_tensor_numel(at) : 0;
    for (int64_t k = 0; k < given; k++) {
        int64_t a = n->attrs.has_axes ? n->attrs.axes[k] : xf_rt_load_i64(at->dtype, at->data, k);
        int d = xf_rt_axis(a, xs->ndim);
        if (d >= 0 && !axis[d])
            axis[d] = true, n_axes++;
    }
    if (n_axes == 0 && !n->attrs.noop_with_empty_axes)
        for (int d = 0; d < xs->ndim; d++)
            axis[d] = true;
    xf_shape kept = *xs;
    int64_t count = 1, strides[XF_MAX_DIMS];
    for (int d = 0; d < xs->ndim; d++)
        if (axis[d] && (n_axes > 0 || !n->attrs.noop_with_empty_axes)) {
            count *= xs->dims[d];
            kept.dims[d] = 1;
        }
    xf_rt_dense_strides(&kept, strides);
    for (int d = 0; d < xs->ndim; d++)
        if (kept.dims[d] == 1)
            strides[d] = 0;
    double scale = n->op == XF_OP_REDUCE_MEAN && count > 0 ? 1.0 / (double)count : 1;
    int64_t total = xf_tensor_numel(b->val[ix]), outs = xf_tensor_numel(b->val[iy]);
    bool *taken = NULL;   /* ReduceMax, ReduceMin: per output, its gradient passed on */
    double *others = NULL; /* ReduceProd: per output, the product of its nonzero elements, then their count */
    if (n->op == XF_OP_REDUCE_MAX || n->op == XF_OP_REDUCE_MIN)
        *oom |= !(taken = calloc((size_t)outs + 1, sizeof *taken));
    if (n->op == XF_OP_REDUCE_PROD && !*oom && (others = malloc(sizeof *others * (size_t)(2 * outs + 1)))) {
        for (int64_t k = 0; k < outs; k++)
            others[2 * k] = 1, others[2 * k + 1] = 0;
        xf_rt_iter it;
        xf_rt_iter_init(&it, xs);
        xf_rt_iter_add(&it, strides, 0);
        for (int64_t i = 0; i < total; i++, xf_rt_iter_next(&it))
            if (x[i] != 0)
                others[2 * it.off[0]] *= x[i];
            else
                others[2 * it.off[0] + 1]++;
    } else if (n->op == XF_OP_REDUCE_PROD) {
        *oom = true;
    }
    xf_rt_iter it;
    xf_rt_iter_init(&it, xs);
    int kg = xf_rt_iter_add(&it, strides, 0);
    for (int64_t i = 0; i < total && !*oom; i++, xf_rt_iter_next(&it)) {
        int64_t o = it.off[kg];
        double d = scale;
        switch (n->op) {
        case XF_OP_REDUCE_SUM_SQUARE: d = 2 * x[i]; break;
        case XF_OP_REDUCE_L1: d = x[i] > 0 ? 1 : x[i] < 0 ? -1 : 0; break;
        case XF_OP_REDUCE_L2: d = y[o] != 0 ? x[i] / y[o] : 0; break;
        case XF_OP_REDUCE_LOG_SUM: d = 1 / exp(y[o]); break;
        case XF_OP_REDUCE_LOG_SUM_EXP: d = exp(x[i] - y[o]); break;
        case XF_OP_REDUCE_MAX: case XF_OP_REDUCE_MIN:
            d = !taken[o] && x[i] == y[o];
            taken[o] |= d != 0;
            break;
        case XF_OP_REDUCE_PROD: {
            double zeros = others[2 * o + 1];
            d = zeros == 0 ? others[2 * o] / x[i] : zeros == 1 && x[i] == 0 ? others[2 * o] : 0;
            break;
        }
        default: break;
        }
        gx[i] += gy[o] * d;
    }
    free(taken);
    free(others);
}

/* CumSum: element j of a line along the axis went into the sums at i >= j
 * (i > j when exclusive; i <= j, i < j when reversed). */
static void cumsum(pass *b, const xf_node *n, const double *gy, bool *oom)
{
    int ix = n->inputs[0];
    double *gx = xf_grad_of(b, ix, oom);
    const xf_tensor *at = b->val[n->inputs[1]];
    const xf_shape *xs = shape(b, ix);
    int axis = gx && xf_tensor_numel(at) == 1 ? xf_rt_axis(xf_rt_load_i64(at->dtype, at->data, 0), xs->ndim) : -1;
    if (axis < 0)
        return;
    int64_t outer = xf_rt_dims_product(xs, 0, axis), len = xs->dims[axis];
    int64_t inner = xf_rt_dims_product(xs, axis + 1, xs->ndim);
    bool rev = n->attrs.cumsum_reverse, excl = n->attrs.cumsum_exclusive;
    for (int64_t o = 0; o < outer; o++)
        for (int64_t e = 0; e < inner; e++) {
            double run = 0; /* the sum of gy over the outputs that element j went into */
            for (int64_t k = 0; k < len; k++) {
                int64_t j = rev ? k : len - 1 - k, at_j = (o * len + j) * inner + e;
                if (!excl)
                    run += gy[at_j];
                gx[at_j] += run;
                if (excl)
                    run += gy[at_j];
            }
        }
}

/* Softmax: dx = y (g - sum(g y)); LogSoftmax: dx = g - exp(y) sum(g), the
 * sums along the axis (before opset 13: over the dims from it on). */
static void softmax(pass *b, const xf_node *n, const double *gy, bool *oom)
{
    int ix = n->inputs[0], iy = n->outputs[0];
    double *gx = xf_grad_of(b, ix, oom);
    const double *y = xf_grad_vals(b, iy);
    if (!y)
        *oom = true;
    if (!gx || !y)
        return;
    const xf_shape *xs = shape(b, ix);
    int axis = xf_rt_axis(n->attrs.axis, xs->ndim > 0 ? xs->ndim : 1);
    if (axis < 0)
        return;
    int64_t outer = xf_rt_dims_product(xs, 0, axis);
    int64_t len = n->attrs.softmax_legacy ? xf_rt_dims_product(xs, axis, xs->ndim) : xs->ndim ? xs->dims[axis] : 1;
    int64_t inner = n->attrs.softmax_legacy ? 1 : xf_rt_dims_product(xs, axis + 1, xs->ndim);
    bool log_form = n->op == XF_OP_LOG_SOFTMAX;
    for (int64_t o = 0; o < outer; o++)
        for (int64_t in = 0; in < inner; in++) {
            int64_t base = o * len * inner + in;
            double s = 0;
            for (int64_t k = 0; k < len; k++)
                s += gy[base + k * inner] * (log_form ? 1 : y[base + k * inner]);
            for (int64_t k = 0; k < len; k++) {
                int64_t i = base + k * inner;
                gx[i] += log_form ? gy[i] - exp(y[i]) * s : y[i] * (gy[i] - s);
            }
        }
}

xf_status xf_rt_gradient_run(xf_rt_gradient *gr, xf_tensor *const *in, xf_tensor **out, xf_error *err)
{
    const xf_graph *p = gr->part;
    const xf_node *node = gr->node;
    int nv = p->n_values, n_src = node->opaque->n_own_inputs;
    pass b = {gr->varies, calloc((size_t)nv + 1, sizeof *b.val), calloc((size_t)nv + 1, sizeof *b.x),
              calloc((size_t)nv + 1, sizeof *b.g)};
    xf_tensor **computed = calloc((size_t)p->n_outputs + 1, sizeof *computed);
    xf_status st = b.val && b.x && b.g && computed ? XF_OK : xf_error_set(err, XF_ERR_NOMEM, "out of memory");
    for (int i = 0; st == XF_OK && i < n_src; i++) {
        if (!in[i] || xf_tensor_is_container(in[i]))
            st = xf_error_set(err, XF_ERR_INVALID, "node '%s' (Gradient): input %d must be a tensor", node->name, i);
        else
            b.val[gr->xs[i]] = in[i];
    }
    if (st == XF_OK && gr->session)
        st = xf_session_run(gr->session, in, computed, err);
    if (st != XF_OK)
        xf_error_prefix(err, "node '%s' (Gradient), the part it differentiates", node->name);
    for (int v = 0; st == XF_OK && v < nv; v++)
        if (p->values[v].init)
            b.val[v] = p->values[v].init;
    for (int k = 0; st == XF_OK && k < p->n_outputs; k++)
        b.val[p->outputs[k]] = computed[k];
    bool oom = false;
    if (st == XF_OK && gr->varies[gr->y]) {
        double *gy = xf_grad_of(&b, gr->y, &oom);
        for (int64_t i = 0; gy && i < xf_tensor_numel(b.val[gr->y]); i++)
            gy[i] = 1;
    }
    for (int i = p->n_nodes - 1; st == XF_OK && !oom && i >= 0; i--) {
        const xf_node *n = &p->nodes[i];
        const double *gy = n->outputs[0] >= 0 ? b.g[n->outputs[0]] : NULL;
        if (n->op == XF_OP_SPLIT) {
            split(&b, n, &oom);
            continue;
        }
        if (!gy)
            continue;
        if (xf_grad_is_traced(n->op)) {
            st = xf_grad_traced(&b, n, gy, err);
            continue;
        }
        switch (n->op) {
        case XF_OP_ADD: case XF_OP_SUB: case XF_OP_MUL: case XF_OP_DIV: case XF_OP_POW: case XF_OP_PRELU:
            binary(&b, n, gy, &oom);
            break;
        case XF_OP_SUM: case XF_OP_EXPAND: case XF_OP_MEAN: sum(&b, n, gy, &oom); break;
        case XF_OP_MAX: case XF_OP_MIN: extreme(&b, n, gy, &oom); break;
        case XF_OP_CONV: st = xf_grad_conv(&b, n, gy, err); break;
        case XF_OP_EINSUM: st = xf_grad_einsum(&b, n, gy, err); break;
        case XF_OP_TOP_K: st = xf_grad_top_k(&b, n, gy, err); break;
        case XF_OP_CONV_TRANSPOSE: case XF_OP_RESIZE: case XF_OP_UPSAMPLE: st = xf_grad_adjoint(&b, n, gy, err); break;
        case XF_OP_MAX_POOL: case XF_OP_AVERAGE_POOL: case XF_OP_LP_POOL: case XF_OP_GLOBAL_AVERAGE_POOL:
        case XF_OP_GLOBAL_MAX_POOL: case XF_OP_GLOBAL_LP_POOL:
            st = xf_grad_pool(&b, n, gy, err);
            break;
        case XF_OP_BATCH_NORM: case XF_OP_LAYER_NORM: case XF_OP_INSTANCE_NORM: case XF_OP_GROUP_NORM:
            st = xf_grad_normalize(&b, n, gy, err);
            break;
        case XF_OP_WHERE: where(&b, n, gy, &oom); break;
        case XF_OP_CONCAT: concat(&b, n, gy, &oom); break;
        case XF_OP_GATHER: gather(&b, n, gy, &oom); break;
        case XF_OP_SLICE: slice(&b, n, gy, &oom); break;
        case XF_OP_TRANSPOSE: transpose(&b, n, gy, &oom); break;
        case XF_OP_MATMUL: matmul(&b, n, gy, &oom); break;
        case XF_OP_GEMM: gemm(&b, n, gy, &oom); break;
        case XF_OP_REDUCE_SUM: case XF_OP_REDUCE_MEAN: case XF_OP_REDUCE_MAX: case XF_OP_REDUCE_MIN:
        case XF_OP_REDUCE_PROD: case XF_OP_REDUCE_L1: case XF_OP_REDUCE_L2: case XF_OP_REDUCE_LOG_SUM:
        case XF_OP_REDUCE_LOG_SUM_EXP: case XF_OP_REDUCE_SUM_SQUARE:
            reduce(&b, n, gy, &oom);
            break;
        case XF_OP_CUM_SUM: cumsum(&b, n, gy, &oom); break;
        case XF_OP_SOFTMAX: case XF_OP_LOG_SOFTMAX: softmax(&b, n, gy, &oom); break;
        default: unary(&b, n, gy, &oom); break;
        }
    }
    if (st == XF_OK && oom)
        st = xf_error_set(err, XF_ERR_NOMEM, "out of memory");
    for (int i = 0; st == XF_OK && i < gr->n_xs; i++) {
        const xf_tensor *x = in[i];
        if (!(out[i] = xf_tensor_create(x->dtype, &x->shape)))
            st = xf_error_set(err, XF_ERR_NOMEM, "out of memory");
        const double *g = st == XF_OK ? b.g[gr->xs[i]] : NULL;
        for (int64_t e = 0; g && e < xf_tensor_numel(x); e++)
            xf_rt_store_f64(x->dtype, out[i]->data, e, g[e]);
    }
    for (int v = 0; v < nv && b.x; v++)
        free(b.x[v]);
    for (int v = 0; v < nv && b.g; v++)
        free(b.g[v]);
    for (int k = 0; computed && k < p->n_outputs; k++)
        xf_tensor_release(computed[k]);
    free(b.val);
    free(b.x);
    free(b.g);
    free(computed);
    return st;
}
