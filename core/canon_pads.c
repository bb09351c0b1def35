/* The canonicalization pass that makes a Pad of zeros the padding of the
 * window ops reading it (xf_pass_fold_pads; see canon.c for what every
 * pass keeps). */
#include "canon_internal.h"
#include "shape_infer_impl.h"

#include <stdlib.h>
#include <string.h>

/* The spatial pads (begins then ends, 2 * (rank - 2)) of a Pad node that
 * pads only the dims after batch and channels, with zeros: constant mode,
 * value 0, constant pads, none negative (a crop). */
static bool zero_spatial_pads(const xf_graph *g, const xf_node *n, int64_t *pads, int *rank)
{
    int64_t all[2 * XF_MAX_DIMS];
    int r;
    if (n->attrs.pad_mode != XF_PAD_CONSTANT || n->n_inputs < 1 || n->inputs[0] < 0)
        return false;
    if (n->attrs.has_pads) {
        r = n->attrs.n_pads / 2;
        if (n->attrs.pad_value != 0 || r < 1 || r > XF_MAX_DIMS)
            return false;
        memcpy(all, n->attrs.pad_pads, sizeof *all * (size_t)(2 * r));
    } else {
        const xf_tensor *p = n->n_inputs > 1 ? xf_graph_constant(g, n->inputs[1]) : NULL;
        const xf_tensor *v = n->n_inputs > 2 ? xf_graph_constant(g, n->inputs[2]) : NULL;
        /* of the float types Conv and AveragePool read */
        bool value_zero = n->n_inputs < 3 || n->inputs[2] < 0 ||
                          (v && (xf_tensor_numel(v) == 0 ||
                                 (v->data && xf_dtype_is_float(v->dtype) && xf_tensor_get_f64(v, 0) == 0)));
        if (!p || !p->data || p->dtype != XF_DT_INT64 || !value_zero || (n->n_inputs > 3 && n->inputs[3] >= 0) ||
            xf_tensor_numel(p) % 2 ||
            xf_tensor_numel(p) > 2 * XF_MAX_DIMS)
            return false;
        r = (int)(xf_tensor_numel(p) / 2);
        for (int i = 0; i < 2 * r; i++)
            all[i] = xf_tensor_get_i64(p, i);
    }
    if (r < 3 || r - 2 > XF_MAX_SPATIAL)
        return false;
    for (int d = 0; d < r; d++) {
        if (all[d] < 0 || all[r + d] < 0 || (d < 2 && (all[d] || all[r + d])))
            return false;
        if (d >= 2) {
            pads[d - 2] = all[d];
            pads[r - 2 + d - 2] = all[r + d];
        }
    }
    *rank = r;
    return true;
}

/* Node q reads v as its input 0 and nowhere else. */
static bool reads_only_as_input0(const xf_node *q, int v)
{
    if (q->n_inputs < 1 || q->inputs[0] != v)
        return false;
    for (int k = 1; k < q->n_inputs; k++)
        if (q->inputs[k] == v)
            return false;
    return true;
}

/* Whether every element of value v is 0 or more (NaN aside): an output of
 * Relu or Sigmoid, of a Conv with either fused, or of a Clip whose lower
 * bound is a constant of 0 or more. */
static bool never_negative(const xf_graph *g, int v)
{
    int p = v >= 0 ? g->values[v].producer : -1;
    if (p < 0)
        return false;
    const xf_node *q = &g->nodes[p];
    switch (q->op) {
    case XF_OP_RELU:
    case XF_OP_SIGMOID: return true;
    case XF_OP_CONV: return q->attrs.activation == XF_ACT_RELU || q->attrs.activation == XF_ACT_SIGMOID;
    case XF_OP_CLIP: {
        const xf_tensor *lo = q->n_inputs > 1 && q->inputs[1] >= 0 ? xf_graph_constant(g, q->inputs[1]) : NULL;
        if (lo)
            return lo->data && xf_dtype_is_float(lo->dtype) && xf_tensor_numel(lo) == 1 &&
                   xf_tensor_get_f64(lo, 0) >= 0;
        return (q->n_inputs < 2 || q->inputs[1] < 0) && q->attrs.has_clip_attrs && q->attrs.clip_min >= 0;
    }
    default: return false;
    }
}

/* Whether a window op's ceil_mode adds no window along any of its ns
 * dims for input x (the Pad's output): every stride divides what the
 * windows travel, whatever the size when 1. */
static bool ceil_adds_none(const xf_graph *g, const xf_attrs *a, int x, int ns)
{
    const xf_shape *s = &g->values[x].shape;
    for (int k = 0; k < ns && a->ceil_mode; k++) {
        if (a->strides[k] <= 1)
            continue;
        if (s->ndim != ns + 2 || s->dims[2 + k] < 0)
            return false;
        int64_t span = s->dims[2 + k] + a->pads[k] + a->pads[ns + k];
        int64_t reach = (a->kernel[k] - 1) * (a->dilations[k] > 1 ? a->dilations[k] : 1) + 1;
        if (span < reach || (span - reach) % a->strides[k])
            return false;
    }
    return true;
}

/* Whether node q, reading a Pad's output (of `never_neg` elements) as its
 * input 0 and nowhere else, can take the Pad's spatial pads (ns dims) as
 * its own: a Conv; an AveragePool that counts the zeros (count_include_pad,
 * opset 7 on) with every window keeping an element of its own; a MaxPool
 * of elements that are never negative (whose zeros then never win) with
 * every window, contiguous, keeping an element of its own and no Indices
 * output. */
static bool takes_pads(const xf_graph *g, const xf_node *q, int y, int ns, const int64_t *pads, int64_t opset,
                       bool never_neg)
{
    const xf_attrs *a = &q->attrs;
    bool conv = q->op == XF_OP_CONV, avg = q->op == XF_OP_AVERAGE_POOL, max = q->op == XF_OP_MAX_POOL;
    if (!reads_only_as_input0(q, y) || !(conv || avg || (max && never_neg)) || a->auto_pad != XF_AUTO_PAD_NOTSET ||
        (a->n_spatial != ns && !(conv && !a->n_spatial)))
        return false;
    if (conv)
        return true;
    bool own_pads = false;
    for (int k = 0; k < 2 * ns; k++) {
        own_pads = own_pads || a->pads[k];
        if (a->pads[k] + pads[k] >= a->kernel[k % ns])
            return false;
    }
    if (!ceil_adds_none(g, a, y, ns))
        return false;
    if (avg) /* a pool counts the zeros as elements (count_include_pad, opset 7 on) */
        return opset >= 7 && (!own_pads || a->count_include_pad);
    for (int k = 0; k < ns; k++)
        if (a->dilations[k] > 1)
            return false;
    return q->n_outputs < 2 || q->outputs[1] < 0;
}

/* A Pad of zeros whose every reader takes its pads as its own
 * (takes_pads) is folded into them. */
static xf_status fold_pads(xf_graph *g, int64_t opset, xf_canon_stats *st, xf_error *err)
{
    bool *keep = xf_canon_keep_all(g);
    int *readers = malloc(sizeof *readers * (size_t)(g->n_nodes > 0 ? g->n_nodes : 1));
    if (!keep || !readers) {
        free(keep);
        free(readers);
        return xf_error_set(err, XF_ERR_NOMEM, "out of memory folding pads");
    }
    for (int i = 0; i < g->n_nodes; i++) {
        const xf_node *n = &g->nodes[i];
        int y = n->n_outputs == 1 ? n->outputs[0] : -1, rank, count = 0;
        int64_t pads[2 * XF_MAX_SPATIAL];
        if (n->op != XF_OP_PAD || y < 0 || xf_graph_is_output(g, y) || !zero_spatial_pads(g, n, pads, &rank))
            continue;
        int ns = rank - 2, uses = xf_graph_count_uses(g, y);
        bool never_neg = never_negative(g, n->inputs[0]), ok = uses > 0;
        for (int q = 0; q < g->n_nodes && ok && count < uses; q++) {
            const xf_node *r = &g->nodes[q];
            bool reads = false;
            for (int k = 0; k < r->n_inputs; k++)
                reads = reads || r->inputs[k] == y;
            if (reads) {
                ok = takes_pads(g, r, y, ns, pads, opset, never_neg);
                readers[count++] = q;
            }
        }
        if (!ok || count != uses)
            continue;
        for (int j = 0; j < count; j++) {
            xf_node *r = &g->nodes[readers[j]];
            r->attrs.n_spatial = ns; /* a Conv that gives none: kernel from the weight, strides 1, no pads */
            for (int k = 0; k < 2 * ns; k++)
                r->attrs.pads[k] += pads[k];
            if (r->op == XF_OP_AVERAGE_POOL)
                r->attrs.count_include_pad = 1;
            r->inputs[0] = n->inputs[0];
        }
        keep[i] = false;
        st->folded_pads++;
    }
    free(readers);
    xf_canon_compact(g, keep, NULL, st);
    free(keep);
    return XF_OK;
}

xf_status xf_pass_fold_pads(xf_graph *g, int64_t opset, xf_canon_stats *st, xf_error *err)
{
    xf_canon_stats unused = {0};
    return fold_pads(g, opset, st ? st : &unused, err);
}
