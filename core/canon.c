/* Canonicalization passes: constant folding, BatchNormalization folding,
 * Conv + activation fusion, Identity/Dropout removal and dead-node removal
 * (a Pad of zeros made the padding of the window ops reading it:
 * canon_pads.c).
 *
 * Every pass keeps the graph valid and topologically sorted: nodes are only
 * marked for removal (and compacted away at the end of the pass) or changed
 * in place such that each producer stays before its users.  Graph outputs
 * keep their names, and every graph output stays produced by a node: a
 * node whose output is a graph output is never folded into an initializer
 * (some consumers reject initializers as graph outputs; everything upstream
 * of it still folds), and an Identity that carries a graph input or a
 * constant to a graph output is kept. */
#include "canon_internal.h"
#include "shape_infer_impl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The folding limit xf_canonicalize uses: a folded result usually replaces
 * its inputs (which then die), so this bounds the transient extra memory. */
#define CANON_FOLD_MAX_BYTES ((size_t)64 << 20)

bool *xf_canon_keep_all(const xf_graph *g)
{
    bool *keep = malloc(sizeof *keep * (size_t)(g->n_nodes > 0 ? g->n_nodes : 1));
    for (int i = 0; keep && i < g->n_nodes; i++)
        keep[i] = true;
    return keep;
}

void xf_canon_compact(xf_graph *g, const bool *keep, const bool *made, xf_canon_stats *st)
{
    bool *used = calloc((size_t)(g->n_values > 0 ? g->n_values : 1), sizeof *used);
    if (used) {
        for (int k = 0; k < g->n_inputs; k++)
            used[g->inputs[k]] = true;
        for (int k = 0; k < g->n_outputs; k++)
            if (g->outputs[k] >= 0)
                used[g->outputs[k]] = true;
        for (int i = 0; i < g->n_nodes; i++) {
            const xf_node *n = &g->nodes[i];
            for (int k = 0; keep[i] && k < n->n_inputs; k++)
                if (n->inputs[k] >= 0)
                    used[n->inputs[k]] = true;
            for (int k = 0; keep[i] && k < n->n_outputs; k++)
                if (n->outputs[k] >= 0)
                    used[n->outputs[k]] = true;
        }
        for (int v = 0; v < g->n_values; v++)
            st->removed_initializers += g->values[v].init && !used[v] && !(made && made[v]);
        free(used);
    }
    xf_graph_compact(g, keep);
}

/* ------------------------------------------------------------ constant folding */

/* A pass that visits every node in order: visit() returns whether it
 * removed node i (rewiring what read it), or sets *st_out on failure. */
typedef bool (*node_visit_fn)(xf_graph *g, int i, xf_canon_stats *st, xf_status *st_out, xf_error *err);

static xf_status per_node_pass(xf_graph *g, xf_canon_stats *st, node_visit_fn visit, const char *what,
                               xf_error *err)
{
    xf_canon_stats unused = {0};
    st = st ? st : &unused;
    bool *keep = xf_canon_keep_all(g);
    if (!keep)
        return xf_error_set(err, XF_ERR_NOMEM, "out of memory %s", what);
    xf_status s = XF_OK;
    for (int i = 0; i < g->n_nodes && s == XF_OK; i++)
        keep[i] = !visit(g, i, st, &s, err);
    xf_canon_compact(g, keep, NULL, st);
    free(keep);
    return s;
}

/* The bytes a value of numel elements of dtype t takes (strings: a
 * pointer and a short string each, as a guess), SIZE_MAX past it. */
static size_t value_bytes(xf_dtype t, int64_t numel)
{
    size_t esize = t == XF_DT_STRING ? 16 : xf_dtype_size(t);
    return numel < 0 || esize == 0 || (uint64_t)numel > SIZE_MAX / esize ? SIZE_MAX : (size_t)numel * esize;
}

/* Whether n is a Cast of 8- or 16-bit integers to float, float16 or
 * bfloat16: weights stored as integers and scaled in the graph (a
 * weight-only quantization written out as Cast and Mul), at most four
 * times the bytes it reads. */
static bool widens_integers(const xf_graph *g, const xf_node *n)
{
    if (n->op != XF_OP_CAST || n->n_inputs < 1 || n->inputs[0] < 0)
        return false;
    xf_dtype from = g->values[n->inputs[0]].dtype, to = (xf_dtype)n->attrs.to;
    return (from == XF_DT_INT8 || from == XF_DT_UINT8 || from == XF_DT_INT16 || from == XF_DT_UINT16) &&
           (to == XF_DT_FLOAT || to == XF_DT_FLOAT16 || to == XF_DT_BFLOAT16);
}

/* Whether node n computes a constant that may become initializers: not
 * opaque, not an op that is never folded (XF_OPF_NOFOLD: quantization),
 * every input constant (Shape, Size: its input's shape static), no graph
 * output among its outputs, results known in size and within max_bytes,
 * or (within_inputs) no larger than the constant data it reads, or four
 * times it for a Cast of integer weights to a float type
 * (widens_integers), which every run would otherwise widen again, as
 * ONNX Runtime's constant folding folds it.  Identity and Dropout are
 * left to xf_pass_remove_identity, which removes them without copying
 * their data. */
static bool can_fold(const xf_graph *g, const xf_node *n, size_t max_bytes, bool within_inputs)
{
    if (n->op == XF_OP_OPAQUE || n->op == XF_OP_IDENTITY || n->op == XF_OP_DROPOUT ||
        (xf_op_get_info(n->op)->flags & XF_OPF_NOFOLD))
        return false;
    bool shape_only = xf_op_get_info(n->op)->flags & XF_OPF_SHAPE_ONLY;
    size_t read = 0;
    for (int k = 0; k < n->n_inputs; k++) {
        int v = n->inputs[k];
        if (v < 0)
            continue;
        const xf_tensor *t = shape_only ? NULL : xf_graph_constant(g, v);
        if (shape_only ? xf_shape_numel(&g->values[v].shape) < 0 : !t)
            return false;
        size_t b = t ? value_bytes(t->dtype, xf_tensor_numel(t)) : 0;
        read = b > SIZE_MAX - read ? SIZE_MAX : read + b;
    }
    if (within_inputs && widens_integers(g, n))
        read = read > SIZE_MAX / 4 ? SIZE_MAX : 4 * read;
    size_t bytes = 0, limit = within_inputs && read > max_bytes ? read : max_bytes;
    for (int k = 0; k < n->n_outputs; k++) {
        int v = n->outputs[k];
        if (v < 0)
            continue;
        size_t b = value_bytes(g->values[v].dtype, xf_shape_numel(&g->values[v].shape));
        if (xf_graph_is_output(g, v) || b == SIZE_MAX || b > limit - bytes)
            return false;
        bytes += b;
    }
    return true;
}

/* Evaluates node i and turns its outputs into initializers (the node itself
 * goes when the pass compacts).  The evaluator's results must have the
 * dtypes and shapes inference gave: a disagreement is a bug to report, not
 * a constant to trust. */
static xf_status fold_node(xf_graph *g, int i, xf_node_eval_fn eval, bool *made, xf_error *err)
{
    xf_node *n = &g->nodes[i];
    xf_tensor **out = calloc((size_t)n->n_outputs, sizeof *out);
    if (!out)
        return xf_error_set(err, XF_ERR_NOMEM, "out of memory folding constants");
    xf_status st = eval(g, i, out, err);
    char label[256];
    for (int k = 0; k < n->n_outputs && st == XF_OK; k++) {
        const xf_value *v = n->outputs[k] >= 0 ? &g->values[n->outputs[k]] : NULL;
        if (v && (!out[k] || out[k]->dtype != v->dtype || !xf_shape_equal(&out[k]->shape, &v->shape)))
            st = xf_error_set(err, XF_ERR_INVALID,
                              "%s: evaluating output '%s' gave %s %s, but its type is %s %s",
                              xf_infer_node_label(g, i, label, sizeof label), v->name,
                              out[k] ? xf_dtype_name(out[k]->dtype) : "nothing",
                              out[k] ? xf_infer_text(&out[k]->shape).s : "",
                              xf_dtype_name(v->dtype), xf_infer_text(&v->shape).s);
    }
    for (int k = 0; k < n->n_outputs; k++) {
        if (st == XF_OK && n->outputs[k] >= 0) {
            xf_value *v = &g->values[n->outputs[k]];
            v->init = out[k];
            v->producer = -1;
            v->producer_out = 0;
            made[n->outputs[k]] = true;
        } else {
            xf_tensor_release(out[k]);
        }
    }
    free(out);
    return st;
}

static bool has_unknown_output(const xf_graph *g, const xf_node *n)
{
    for (int k = 0; k < n->n_outputs; k++)
        if (n->outputs[k] >= 0 && g->values[n->outputs[k]].shape.ndim < 0)
            return true;
    return false;
}

static xf_status fold_constants(xf_graph *g, int64_t opset, xf_node_eval_fn eval, size_t max_bytes, bool within_inputs,
                                xf_canon_stats *st, xf_error *err)
{
    xf_canon_stats unused = {0};
    st = st ? st : &unused;
    if (!eval)
        return XF_OK; /* core does not compute: nothing can be folded */
    bool *keep = xf_canon_keep_all(g);
    bool *made = calloc((size_t)(g->n_values > 0 ? g->n_values : 1), sizeof *made);
    if (!keep || !made) {
        free(keep);
        free(made);
        return xf_error_set(err, XF_ERR_NOMEM, "out of memory folding constants");
    }
    xf_status s = XF_OK;
    /* One sweep in topological order folds whole chains: a folded node's
     * outputs are initializers by the time their users are visited.  Shapes
     * that depended on values (a Reshape's computed shape) are inferred again
     * as those values become constants. */
    for (int i = 0; i < g->n_nodes && s == XF_OK; i++) {
        const xf_node *n = &g->nodes[i];
        if (n->op != XF_OP_OPAQUE && has_unknown_output(g, n))
            s = xf_node_infer_shape(g, i, opset, NULL, err);
        if (s != XF_OK || !can_fold(g, n, max_bytes, within_inputs))
            continue;
        s = fold_node(g, i, eval, made, err);
        if (s == XF_ERR_UNSUPPORTED) {
            s = XF_OK; /* the runtime cannot compute it: it stays a run-time node */
            continue;
        }
        if (s == XF_OK) {
            keep[i] = false;
            st->folded_constants++;
        }
    }
    xf_canon_compact(g, keep, made, st);
    free(keep);
    free(made);
    return s;
}

xf_status xf_pass_fold_constants(xf_graph *g, int64_t opset, xf_node_eval_fn eval, size_t max_bytes, xf_canon_stats *st,
                                 xf_error *err)
{
    return fold_constants(g, opset, eval, max_bytes, false, st, err);
}

xf_status xf_pass_fold_constants_bounded(xf_graph *g, int64_t opset, xf_node_eval_fn eval, size_t max_bytes,
                                         xf_canon_stats *st, xf_error *err)
{
    return fold_constants(g, opset, eval, max_bytes, true, st, err);
}

/* ------------------------------------------------------------ BatchNormalization folding */

/* Value v when it is a floating constant with numel elements, else NULL. */
static const xf_tensor *float_constant(const xf_graph *g, int v, int64_t numel)
{
    const xf_tensor *t = xf_graph_constant(g, v);
    if (!t || !xf_dtype_is_float(t->dtype) || xf_tensor_numel(t) != numel || (numel > 0 && !t->data))
        return NULL;
    return t;
}

/* The Conv that value x is the sole output of, when it can take a
 * per-channel affine map of its output: no fused activation, nothing else
 * reads x, its weight and optional bias floating constants; or -1. */
static int affine_conv(const xf_graph *g, int x)
{
    int p = x >= 0 ? g->values[x].producer : -1;
    if (p < 0 || g->nodes[p].op != XF_OP_CONV || g->nodes[p].n_inputs < 2 ||
        g->nodes[p].attrs.activation != XF_ACT_NONE || g->nodes[p].outputs[0] != x || xf_graph_count_uses(g, x) != 1)
        return -1;
    const xf_node *conv = &g->nodes[p];
    const xf_tensor *w = xf_graph_constant(g, conv->inputs[1]);
    if (!w || !xf_dtype_is_float(w->dtype) || w->shape.ndim < 3 || !w->data)
        return -1;
    if (conv->n_inputs > 2 && conv->inputs[2] >= 0 && !float_constant(g, conv->inputs[2], w->shape.dims[0]))
        return -1;
    return p;
}

/* The Conv that BatchNormalization node bn can fold into (inference mode,
 * its parameters floating constants with one entry per output channel),
 * or -1. */
static int foldable_conv(const xf_graph *g, const xf_node *bn)
{
    if (bn->n_inputs != 5 || bn->inputs[0] < 0 || bn->n_outputs < 1 || bn->outputs[0] < 0 || bn->attrs.bn_training)
        return -1; /* training mode normalizes by the batch's statistics */
    for (int k = 1; k < bn->n_outputs; k++)
        if (bn->outputs[k] >= 0 && xf_graph_count_uses(g, bn->outputs[k]) > 0)
            return -1; /* training-mode statistics are used */
    int p = affine_conv(g, bn->inputs[0]);
    for (int k = 1; k < 5 && p >= 0; k++)
        if (!float_constant(g, bn->inputs[k], g->values[g->nodes[p].inputs[1]].init->shape.dims[0]))
            return -1;
    return p;
}

/* W'[m] = W[m] * s[m] and b'[m] = b[m] * s[m] + t[m] for the Conv's
 * channels m, computed in double and stored in the weight's precision,
 * into new tensors (the old ones may be shared with other nodes or
 * graphs); the Conv then produces y, the output of the node folded. */
static xf_status fold_into_conv(xf_graph *g, int ci, const double *s, const double *t, int y, xf_error *err)
{
    xf_node *conv = &g->nodes[ci];
    const xf_tensor *w = xf_graph_constant(g, conv->inputs[1]);
    int64_t channels = w->shape.dims[0], per_channel = channels ? xf_tensor_numel(w) / channels : 0;
    const xf_tensor *bias = conv->n_inputs > 2 && conv->inputs[2] >= 0
                                ? float_constant(g, conv->inputs[2], channels)
                                : NULL;
    xf_shape bshape = {.ndim = 1, .dims = {channels}};
    xf_tensor *nw = xf_tensor_create(w->dtype, &w->shape);
    xf_tensor *nb = xf_tensor_create(w->dtype, &bshape);
    int *inputs = nw && nb && conv->n_inputs < 3 ? realloc(conv->inputs, 3 * sizeof(int)) : conv->inputs;
    if (!nw || !nb || !inputs) {
        xf_tensor_release(nw);
        xf_tensor_release(nb);
        return xf_error_set(err, XF_ERR_NOMEM, "out of memory folding into a Conv");
    }
    conv->inputs = inputs;
    for (int64_t m = 0; m < channels; m++) {
        for (int64_t j = 0; j < per_channel; j++)
            xf_tensor_set_f64(nw, m * per_channel + j, xf_tensor_get_f64(w, m * per_channel + j) * s[m]);
        xf_tensor_set_f64(nb, m, (bias ? xf_tensor_get_f64(bias, m) : 0.0) * s[m] + t[m]);
    }
    int wid = xf_graph_add_initializer(g, NULL, nw);
    int bid = wid >= 0 ? xf_graph_add_initializer(g, NULL, nb) : -1;
    xf_tensor_release(nw);
    xf_tensor_release(nb);
    if (bid < 0)
        return xf_error_set(err, XF_ERR_NOMEM, "out of memory folding into a Conv");
    conv->inputs[1] = wid;
    conv->inputs[2] = bid;
    conv->n_inputs = 3;
    conv->outputs[0] = y;
    g->values[y].producer = ci;
    g->values[y].producer_out = 0;
    return XF_OK;
}

/* The per-channel map of BatchNormalization node bn: s = scale /
 * sqrt(var + epsilon), t = shift - mean * s. */
static void batchnorm_map(const xf_graph *g, const xf_node *bn, int64_t channels, double *s, double *t)
{
    const xf_tensor *p[4];
    for (int k = 0; k < 4; k++)
        p[k] = float_constant(g, bn->inputs[1 + k], channels);
    for (int64_t m = 0; m < channels; m++) {
        s[m] = xf_tensor_get_f64(p[0], m) / sqrt(xf_tensor_get_f64(p[3], m) + bn->attrs.epsilon);
        t[m] = xf_tensor_get_f64(p[1], m) - xf_tensor_get_f64(p[2], m) * s[m];
    }
}

/* Node n multiplies, divides, adds or subtracts the output of a Conv (its
 * input 0, or either input of Mul and Add) by a floating constant that is
 * one value or one per channel ([C, 1, ...] aligned to the output's dim
 * 1): the Conv's index, and the map in s and t (channels entries). */
static int affine_node(const xf_graph *g, const xf_node *n, double **s, double **t)
{
    bool mul = n->op == XF_OP_MUL || n->op == XF_OP_DIV;
    if (!(mul || n->op == XF_OP_ADD || n->op == XF_OP_SUB) || n->n_inputs != 2 || n->outputs[0] < 0)
        return -1;
    bool commutes = n->op == XF_OP_MUL || n->op == XF_OP_ADD;
    int k = affine_conv(g, n->inputs[0]) >= 0 ? 0 : commutes && affine_conv(g, n->inputs[1]) >= 0 ? 1 : -1;
    if (k < 0)
        return -1;
    int p = affine_conv(g, n->inputs[k]);
    const xf_tensor *c = xf_graph_constant(g, n->inputs[1 - k]);
    const xf_shape *y = &g->values[n->inputs[k]].shape;
    if (!c || !xf_dtype_is_float(c->dtype) || !c->data || y->ndim < 3 || c->shape.ndim > y->ndim ||
        !xf_shape_equal(y, &g->values[n->outputs[0]].shape))
        return -1;
    int64_t channels = y->dims[1], numel = xf_tensor_numel(c);
    for (int d = 0; d < c->shape.ndim; d++)
        if (c->shape.dims[d] != 1 && (y->ndim - c->shape.ndim + d != 1 || c->shape.dims[d] != channels))
            return -1;
    if (channels != g->values[g->nodes[p].inputs[1]].init->shape.dims[0])
        return -1;
    for (int64_t m = 0; n->op == XF_OP_DIV && m < numel; m++)
        if (xf_tensor_get_f64(c, m) == 0)
            return -1; /* the quotient's infinities and NaNs are not a scaling */
    *s = malloc(sizeof **s * (size_t)(channels > 0 ? channels : 1));
    *t = malloc(sizeof **t * (size_t)(channels > 0 ? channels : 1));
    for (int64_t m = 0; *s && *t && m < channels; m++) {
        double v = xf_tensor_get_f64(c, numel == 1 ? 0 : m);
        (*s)[m] = n->op == XF_OP_MUL ? v : n->op == XF_OP_DIV ? 1.0 / v : 1.0;
        (*t)[m] = n->op == XF_OP_ADD ? v : n->op == XF_OP_SUB ? -v : 0.0;
    }
    return p;
}

static bool visit_batchnorm(xf_graph *g, int i, xf_canon_stats *st, xf_status *s, xf_error *err)
{
    const xf_node *n = &g->nodes[i];
    double *sc = NULL, *sh = NULL;
    int ci = n->op == XF_OP_BATCH_NORM ? foldable_conv(g, n) : affine_node(g, n, &sc, &sh);
    if (ci >= 0 && n->op == XF_OP_BATCH_NORM) {
        int64_t channels = g->values[g->nodes[ci].inputs[1]].init->shape.dims[0];
        sc = malloc(sizeof *sc * (size_t)(channels > 0 ? channels : 1));
        sh = malloc(sizeof *sh * (size_t)(channels > 0 ? channels : 1));
        if (sc && sh)
            batchnorm_map(g, n, channels, sc, sh);
    }
    bool folded = false;
    if (ci >= 0 && (!sc || !sh))
        *s = xf_error_set(err, XF_ERR_NOMEM, "out of memory folding into a Conv");
    else if (ci >= 0 && (*s = fold_into_conv(g, ci, sc, sh, g->nodes[i].outputs[0], err)) == XF_OK) {
        folded = true;
        if (g->nodes[i].op == XF_OP_BATCH_NORM)
            st->folded_batchnorms++;
        else
            st->folded_affine++;
    }
    free(sc);
    free(sh);
    return folded;
}

xf_status xf_pass_fold_batchnorm(xf_graph *g, xf_canon_stats *st, xf_error *err)
{
    return per_node_pass(g, st, visit_batchnorm, "folding BatchNormalization", err);
}

/* ------------------------------------------------------------ Conv + activation */

/* The fused activation an activation node is, or XF_ACT_NONE. */
static xf_activation activation_of(xf_op op)
{
    return op == XF_OP_RELU ? XF_ACT_RELU : op == XF_OP_SIGMOID ? XF_ACT_SIGMOID : op == XF_OP_TANH ? XF_ACT_TANH
                                                                                                 : XF_ACT_NONE;
}

/* Float convolutions, in the precisions runtimes convolve in. */
static bool fusable_dtype(xf_dtype t) { return t == XF_DT_FLOAT || xf_dtype_is_half(t); }

static bool visit_activation(xf_graph *g, int i, xf_canon_stats *st, xf_status *s, xf_error *err)
{
    const xf_node *a = &g->nodes[i];
    xf_activation act = activation_of(a->op);
    if (act == XF_ACT_NONE || a->n_inputs != 1 || a->n_outputs != 1 || a->inputs[0] < 0 || a->outputs[0] < 0)
        return false;
    int x = a->inputs[0], y = a->outputs[0], c = g->values[x].producer;
    /* the Conv's output feeds this activation alone and is no output */
    if (c < 0 || g->nodes[c].op != XF_OP_CONV || g->nodes[c].attrs.activation != XF_ACT_NONE ||
        g->nodes[c].n_outputs != 1 || !fusable_dtype(g->values[x].dtype) || xf_graph_is_output(g, x) ||
        xf_graph_count_uses(g, x) != 1)
        return false;
    g->nodes[c].attrs.activation = act;
    g->nodes[c].outputs[0] = y;
    g->values[y].producer = c;
    g->values[y].producer_out = 0;
    g->values[x].producer = -1;
    st->fused_activations++;
    return true;
}

xf_status xf_pass_fuse_activations(xf_graph *g, xf_canon_stats *st, xf_error *err)
{
    return per_node_pass(g, st, visit_activation, "fusing activations", err);
}

xf_status xf_pass_lower_fused_convs(xf_graph *g, xf_canon_stats *st, xf_error *err)
{
    (void)err;
    static const xf_activation acts[XF_MS_ACT_COUNT] = {
        [XF_MS_ACT_NONE] = XF_ACT_NONE, [XF_MS_ACT_RELU] = XF_ACT_RELU, [XF_MS_ACT_TANH] = XF_ACT_TANH,
        [XF_MS_ACT_SIGMOID] = XF_ACT_SIGMOID};
    for (int i = 0; i < g->n_nodes; i++) {
        xf_node *n = &g->nodes[i];
        int act = n->attrs.ms_act;
        if (n->op != XF_OP_MS_FUSED_CONV || act < 0 || act >= XF_MS_ACT_COUNT ||
            (act != XF_MS_ACT_NONE && acts[act] == XF_ACT_NONE) || (n->n_inputs > 3 && n->inputs[3] >= 0) ||
            n->n_outputs != 1 || n->outputs[0] < 0 || !fusable_dtype(g->values[n->outputs[0]].dtype))
            continue;
        n->op = XF_OP_CONV;
        n->n_inputs = n->n_inputs > 3 ? 3 : n->n_inputs;
        n->attrs.activation = acts[act];
        n->attrs.ms_act = XF_MS_ACT_NONE;
        n->attrs.ms_act_params[0] = n->attrs.ms_act_params[1] = 0;
        if (st)
            st->lowered_fused_convs++;
    }
    return XF_OK;
}

/* ------------------------------------------------------------ Identity and Dropout */

/* Identity; Dropout in inference: its mask unused and training_mode
 * absent or a constant false; a Cast or CastLike of a tensor to the type
 * it has (converters of float16 models leave hundreds of float-to-float
 * Casts behind, each a copy of its tensor). */
static bool is_identity(const xf_graph *g, const xf_node *n)
{
    if (n->op != XF_OP_IDENTITY && n->op != XF_OP_DROPOUT && n->op != XF_OP_CAST && n->op != XF_OP_CAST_LIKE)
        return false;
    if (n->n_inputs < 1 || n->inputs[0] < 0 || n->n_outputs < 1 || n->outputs[0] < 0)
        return false;
    if (n->op == XF_OP_IDENTITY)
        return true;
    if (n->op == XF_OP_CAST || n->op == XF_OP_CAST_LIKE) {
        const xf_value *x = &g->values[n->inputs[0]], *y = &g->values[n->outputs[0]];
        xf_dtype to = n->op == XF_OP_CAST ? (xf_dtype)n->attrs.to
                      : n->n_inputs > 1 && n->inputs[1] >= 0 ? g->values[n->inputs[1]].dtype
                                                             : XF_DT_UNDEFINED;
        return x->kind == XF_VK_TENSOR && y->kind == XF_VK_TENSOR && x->dtype != XF_DT_UNDEFINED && x->dtype == to &&
               y->dtype == to;
    }
    if (n->n_outputs > 1 && n->outputs[1] >= 0 && xf_graph_count_uses(g, n->outputs[1]) > 0)
        return false;
    return !xf_dropout_trains(g, n);
}

/* A random node without a seed or a name: its draws are keyed by its
 * output's name (see runtime/cpu_ref_random.c), which must not change. */
static bool keyed_by_output(const xf_graph *g, const xf_node *p)
{
    return xf_node_draws_random(g, p) && !p->attrs.rand_has_seed && (!p->name || !p->name[0]);
}

static bool visit_identity(xf_graph *g, int i, xf_canon_stats *st, xf_status *s, xf_error *err)
{
    const xf_node *n = &g->nodes[i];
    if (!is_identity(g, n))
        return false;
    int x = n->inputs[0], y = n->outputs[0];
    const xf_value *xv = &g->values[x];
    if (!xf_graph_is_output(g, y)) {
        xf_graph_replace_uses(g, y, x);
    } else if (xv->producer >= 0 && !xv->is_input && !xv->init && !xf_graph_is_output(g, x) &&
               !keyed_by_output(g, &g->nodes[xv->producer])) {
        /* y names a graph output: x's producer takes y over instead, so
         * the output keeps its name. */
        int p = xv->producer, k = xv->producer_out;
        xf_graph_replace_uses(g, x, y);
        g->nodes[p].outputs[k] = y;
        g->values[y].producer = p;
        g->values[y].producer_out = k;
    } else {
        return false; /* a graph input or constant passed through to an output */
    }
    st->removed_identity++;
    return true;
}

xf_status xf_pass_remove_identity(xf_graph *g, xf_canon_stats *st, xf_error *err)
{
    return per_node_pass(g, st, visit_identity, "removing Identity nodes", err);
}

/* ------------------------------------------------------------ If with a constant condition */

/* The branch an If node takes when its condition is a constant, with its
 * subgraph loaded; NULL otherwise. */
static const xf_opaque_body *constant_branch(const xf_graph *g, const xf_node *n)
{
    if (n->op != XF_OP_OPAQUE || !n->opaque || strcmp(n->opaque->op_type, "If") != 0 ||
        (n->opaque->domain[0] && strcmp(n->opaque->domain, "ai.onnx") != 0) || n->opaque->n_own_inputs != 1)
        return NULL;
    const xf_tensor *c = xf_graph_constant(g, n->inputs[0]);
    if (!c || c->dtype != XF_DT_BOOL || xf_tensor_numel(c) != 1 || !c->data)
        return NULL;
    const xf_opaque_body *b = xf_opaque_find_body(n->opaque, xf_tensor_get_i64(c, 0) ? "then_branch" : "else_branch");
    return b && b->n_formal == 0 && b->graph->n_inputs == n->n_inputs - 1 && b->graph->n_outputs == n->n_outputs
               ? b
               : NULL;
}

/* Whether branch b can replace node n in g: its values' names are free in
 * g (nested subgraphs refer to them by name), and each of n's outputs
 * that is a graph output comes from a node of b, once. */
static bool can_inline(const xf_graph *g, const xf_node *n, const xf_graph *b)
{
    for (int v = 0; v < b->n_values; v++)
        if (!b->values[v].is_input && xf_graph_find_value(g, b->values[v].name) >= 0)
            return false;
    for (int k = 0; k < n->n_outputs; k++) {
        if (n->outputs[k] < 0 || !xf_graph_is_output(g, n->outputs[k]))
            continue;
        int bo = b->outputs[k];
        if (b->values[bo].producer < 0)
            return false;
        for (int j = 0; j < k; j++)
            if (b->outputs[j] == bo)
                return false;
    }
    return true;
}

/* Copies branch b into g in place of If node i; its outputs' users read
 * the branch's values, and the node is left without outputs (dead). */
static xf_status inline_branch(xf_graph *g, int i, const xf_graph *b, xf_error *err)
{
    int *map = malloc(sizeof *map * (size_t)(b->n_values > 0 ? b->n_values : 1));
    if (!map)
        return xf_error_set(err, XF_ERR_NOMEM, "out of memory inlining an If");
    for (int k = 0; k < b->n_inputs; k++)
        map[b->inputs[k]] = g->nodes[i].inputs[1 + k];
    xf_status s = XF_OK;
    for (int v = 0; v < b->n_values && s == XF_OK; v++) {
        const xf_value *bv = &b->values[v];
        if (bv->is_input)
            continue;
        map[v] = bv->init ? xf_graph_add_initializer(g, bv->name, bv->init)
                          : xf_graph_add_value(g, bv->name, bv->dtype, &bv->shape);
        if (map[v] < 0)
            s = xf_error_set(err, XF_ERR_NOMEM, "out of memory inlining an If");
    }
    for (int j = 0; j < b->n_nodes && s == XF_OK; j++) {
        const xf_node *bn = &b->nodes[j];
        int n_ids = bn->n_inputs + bn->n_outputs;
        int *io = malloc(sizeof *io * (size_t)(n_ids + 1));
        if (!io) {
            s = xf_error_set(err, XF_ERR_NOMEM, "out of memory inlining an If");
            break;
        }
        for (int k = 0; k < n_ids; k++) {
            int v = k < bn->n_inputs ? bn->inputs[k] : bn->outputs[k - bn->n_inputs];
            io[k] = v >= 0 ? map[v] : -1;
        }
        if (xf_graph_copy_node(g, bn, io, io + bn->n_inputs) < 0)
            s = xf_error_set(err, XF_ERR_NOMEM, "out of memory inlining an If");
        free(io);
    }
    for (int k = 0; k < g->nodes[i].n_outputs && s == XF_OK; k++) {
        int y = g->nodes[i].outputs[k], x = map[b->outputs[k]];
        if (y < 0)
            continue;
        if (!xf_graph_is_output(g, y)) {
            xf_graph_replace_uses(g, y, x);
        } else {
            /* y names a graph output: the branch's node writes y instead */
            int p = g->values[x].producer, pk = g->values[x].producer_out;
            xf_graph_replace_uses(g, x, y);
            g->nodes[p].outputs[pk] = y;
            g->values[y].producer = p;
            g->values[y].producer_out = pk;
        }
        g->nodes[i].outputs[k] = -1;
    }
    free(map);
    return s;
}

static bool kept_condition(const xf_graph *g, const xf_node *n, const xf_canon_options *opt)
{
    for (int k = 0; opt && k < opt->n_keep_conditions; k++)
        if (strcmp(g->values[n->inputs[0]].name, opt->keep_conditions[k]) == 0)
            return true;
    return false;
}

xf_status xf_pass_inline_constant_if(xf_graph *g, const xf_canon_options *opt, xf_canon_stats *st, xf_error *err)
{
    xf_canon_stats unused = {0};
    st = st ? st : &unused;
    int n_nodes = g->n_nodes, inlined = 0;
    xf_status s = XF_OK;
    for (int i = 0; i < n_nodes && s == XF_OK && !(opt && opt->keep_if); i++) {
        const xf_opaque_body *b = constant_branch(g, &g->nodes[i]);
        if (!b || kept_condition(g, &g->nodes[i], opt) || !can_inline(g, &g->nodes[i], b->graph))
            continue;
        /* the node keeps the payload alive while its branch is copied */
        xf_opaque *payload = xf_opaque_retain(g->nodes[i].opaque);
        s = inline_branch(g, i, b->graph, err);
        xf_opaque_release(payload);
        inlined += s == XF_OK;
    }
    if (inlined && s == XF_OK)
        s = xf_graph_toposort(g, err);
    st->inlined_branches += inlined;
    return s;
}

/* ------------------------------------------------------------ identical weights */

typedef struct const_ref {
    int v;
    const xf_tensor *t;
} const_ref;

/* Orders by type, shape, then bytes; equal contents tie on the value id,
 * so that the first of a run is the lowest. */
static int by_content(const void *pa, const void *pb)
{
    const const_ref *a = pa, *b = pb;
    const xf_tensor *x = a->t, *y = b->t;
    int c = (x->dtype > y->dtype) - (x->dtype < y->dtype);
    if (!c)
        c = (x->shape.ndim > y->shape.ndim) - (x->shape.ndim < y->shape.ndim);
    for (int d = 0; !c && d < x->shape.ndim; d++)
        c = (x->shape.dims[d] > y->shape.dims[d]) - (x->shape.dims[d] < y->shape.dims[d]);
    if (!c && x->data != y->data && x->nbytes)
        c = memcmp(x->data, y->data, x->nbytes);
    return c ? c : (a->v > b->v) - (a->v < b->v);
}

/* Weights worth merging: floating point (shape and index constants, which
 * may coincide at one size and not at another, are left alone) and not
 * tiny. */
static bool mergeable(const xf_graph *g, int v)
{
    const xf_tensor *t = xf_graph_constant(g, v);
    return t && t->data && t->nbytes >= 256 && xf_dtype_is_float(t->dtype) && !xf_graph_is_output(g, v);
}

xf_status xf_pass_merge_constants(xf_graph *g, xf_canon_stats *st, xf_error *err)
{
    xf_canon_stats unused = {0};
    st = st ? st : &unused;
    int n = 0;
    for (int v = 0; v < g->n_values; v++)
        n += mergeable(g, v);
    if (n < 2)
        return XF_OK;
    const_ref *refs = malloc(sizeof *refs * (size_t)n);
    if (!refs)
        return xf_error_set(err, XF_ERR_NOMEM, "out of memory merging constants");
    n = 0;
    for (int v = 0; v < g->n_values; v++)
        if (mergeable(g, v))
            refs[n++] = (const_ref){v, g->values[v].init};
    qsort(refs, (size_t)n, sizeof *refs, by_content);
    for (int i = 1, first = 0; i < n; i++) {
        const_ref a = refs[first], b = refs[i];
        b.v = a.v; /* compare contents only */
        if (by_content(&a, &b) != 0) {
            first = i;
            continue;
        }
        xf_graph_replace_uses(g, refs[i].v, refs[first].v);
        st->merged_constants++;
    }
    free(refs);
    return XF_OK;
}

/* ------------------------------------------------------------ dead nodes */

xf_status xf_pass_remove_dead(xf_graph *g, xf_canon_stats *st, xf_error *err)
{
    xf_canon_stats unused = {0};
    st = st ? st : &unused;
    bool *live = calloc((size_t)(g->n_values > 0 ? g->n_values : 1), sizeof *live);
    bool *keep = calloc((size_t)(g->n_nodes > 0 ? g->n_nodes : 1), sizeof *keep);
    if (!live || !keep) {
        free(live);
        free(keep);
        return xf_error_set(err, XF_ERR_NOMEM, "out of memory removing dead nodes");
    }
    for (int k = 0; k < g->n_outputs; k++)
        if (g->outputs[k] >= 0)
            live[g->outputs[k]] = true;
    /* Backwards through the topological order: a node lives when a live
     * value is among its outputs, and then its inputs live.  Opaque nodes
     * are pure in inference graphs, so they are no exception. */
    int removed = 0;
    for (int i = g->n_nodes - 1; i >= 0; i--) {
        const xf_node *n = &g->nodes[i];
        for (int k = 0; k < n->n_outputs && !keep[i]; k++)
            keep[i] = n->outputs[k] >= 0 && live[n->outputs[k]];
        for (int k = 0; k < n->n_inputs && keep[i]; k++)
            if (n->inputs[k] >= 0)
                live[n->inputs[k]] = true;
        removed += !keep[i];
    }
    st->removed_dead += removed;
    xf_canon_compact(g, keep, NULL, st);
    free(live);
    free(keep);
    return XF_OK;
}

/* ------------------------------------------------------------ all passes */

static int64_t stats_total(const xf_canon_stats *s)
{
    return (int64_t)s->folded_constants + s->folded_batchnorms + s->fused_activations + s->lowered_fused_convs +
           s->removed_identity + s->folded_pads + s->removed_transposes + s->folded_affine +
           s->inlined_branches + s->merged_constants + s->removed_dead + s->removed_initializers;
}

xf_status xf_canonicalize(xf_graph *g, int64_t opset, xf_node_eval_fn eval, xf_canon_stats *st,
                          xf_error *err)
{
    return xf_canonicalize_with(g, opset, eval, NULL, st, err);
}

xf_status xf_canonicalize_with(xf_graph *g, int64_t opset, xf_node_eval_fn eval, const xf_canon_options *opt,
                               xf_canon_stats *st, xf_error *err)
{
    xf_canon_stats unused = {0};
    st = st ? st : &unused;
    /* Every round that changes anything removes a node or an initializer,
     * so this terminates.  Identity removal runs first so that folding
     * never copies the data an Identity merely passes on. */
    int64_t before;
    do {
        before = stats_total(st);
        xf_status s = xf_pass_remove_identity(g, st, err);
        if (s == XF_OK)
            s = xf_pass_inline_constant_if(g, opt, st, err);
        if (s == XF_OK)
            s = xf_pass_fold_constants(g, opset, eval, CANON_FOLD_MAX_BYTES, st, err);
        if (s == XF_OK)
            s = xf_pass_merge_constants(g, st, err);
        if (s == XF_OK)
            s = xf_pass_lower_fused_convs(g, st, err);
        if (s == XF_OK)
            s = xf_pass_fold_batchnorm(g, st, err);
        if (s == XF_OK)
            s = xf_pass_push_transposes(g, opset, st, err);
        if (s == XF_OK)
            s = xf_pass_fold_pads(g, opset, st, err);
        if (s == XF_OK)
            s = xf_pass_fuse_activations(g, st, err);
        if (s == XF_OK)
            s = xf_pass_remove_dead(g, st, err);
        if (s != XF_OK)
            return s;
    } while (stats_total(st) != before);
    return XF_OK;
}
