/* Reductions on oneDNN: float ReduceSum and ReduceMean over one run of
 * adjacent axes, and the global pools of values stored plain.  oneDNN's
 * reduction kernels reduce the last dim of a dense tensor only (any other
 * dim, a trailing dim of 1 included, and the lp norms run its reference
 * loops, slower than cpu_ref's), so the input, stored plain, is seen as
 * (outer, kept inner, reduced): read in place where the reduced run is
 * innermost, else through a reorder that makes it so.  Sums are taken in
 * float, as the kernels do, where cpu_ref sums in double. */
#include "cpu_dnnl.h"

bool xf_dn_reduce_axes(const xf_graph *g, const xf_node *n, int rank, bool *reduced)
{
    const xf_tensor *t = NULL;
    int k = xf_dn_input(n, 1);
    if (k >= 0) {
        t = g->values[k].init;
        if (!t || t->dtype != XF_DT_INT64 || (xf_tensor_numel(t) > 0 && !t->data))
            return false;
    }
    int64_t m = t ? xf_tensor_numel(t) : n->attrs.has_axes ? n->attrs.n_axes : 0;
    for (int d = 0; d < rank; d++)
        reduced[d] = m == 0; /* no axes: all of them, unless noop_with_empty_axes */
    if (m == 0)
        return !n->attrs.noop_with_empty_axes;
    for (int64_t i = 0; i < m; i++) {
        int64_t ax = t ? ((const int64_t *)t->data)[i] : n->attrs.axes[i];
        ax = ax < 0 ? ax + rank : ax;
        if (ax < 0 || ax >= rank || reduced[ax])
            return false;
        reduced[ax] = true;
    }
    return true;
}

/* x as (outer, r, inner), the reduced axes (those of more than one
 * element) one run r; false where they are not. */
static bool reduce_run(const xf_shape *x, const bool *reduced, int64_t *outer, int64_t *r, int64_t *inner)
{
    int first = -1, last = -1;
    for (int d = 0; d < x->ndim; d++)
        if (reduced[d] && x->dims[d] > 1) {
            first = first < 0 ? d : first;
            last = d;
        }
    *outer = *r = *inner = 1;
    for (int d = 0; d < x->ndim; d++) {
        if (first >= 0 && d >= first && d <= last && !reduced[d] && x->dims[d] > 1)
            return false;
        int64_t *part = first < 0 || d < first ? outer : d <= last ? r : inner;
        *part *= x->dims[d];
    }
    return true;
}

static bool reduce_handles(const xf_graph *g, const xf_node *n)
{
    if ((n->op != XF_OP_REDUCE_SUM && n->op != XF_OP_REDUCE_MEAN) || n->n_outputs != 1 || n->outputs[0] < 0 ||
        xf_dn_input(n, 0) < 0 || !xf_dn_is_f32(g, n->inputs[0]) || !xf_dn_is_f32(g, n->outputs[0]))
        return false;
    const xf_shape *x = &g->values[n->inputs[0]].shape;
    bool reduced[XF_MAX_DIMS];
    int64_t outer, r, inner;
    /* one that reduces nothing (dims of 1) is no reduction to oneDNN */
    return x->ndim >= 1 && xf_shape_numel(x) > 0 && xf_dn_reduce_axes(g, n, x->ndim, reduced) &&
           reduce_run(x, reduced, &outer, &r, &inner) && r > 1;
}

static xf_status reduce_finish(xf_dn_ctx *c, const xf_node *n, xf_dn_node *st, dnnl_alg_kind_t alg,
                               const dnnl_memory_desc_t *src_have, const dnnl_memory_desc_t *src,
                               const dnnl_memory_desc_t *dst_have, const dnnl_memory_desc_t *dst, xf_error *err)
{
    dnnl_reduction_desc_t d;
    XF_DN_TRY(err, n, dnnl_reduction_desc_init(&d, alg, src, dst, 0.0f, 0.0f));
    dnnl_primitive_desc_t pd;
    xf_status s = xf_dn_pd_create(c, n, &d, NULL, &pd, err);
    if (s != XF_OK)
        return s;
    s = xf_dn_bind(c, n, st, DNNL_ARG_SRC, 0, src_have, src, err);
    if (s == XF_OK)
        s = xf_dn_bind(c, n, st, DNNL_ARG_DST, -1, dst_have, dst, err);
    return xf_dn_finish_or_free(n, st, pd, s, err);
}

static xf_status reduce_prepare(xf_dn_ctx *c, const xf_graph *g, const xf_node *n, const xf_tensor_view *in,
                                const xf_tensor_view *out, xf_dn_node *st, xf_error *err)
{
    (void)out;
    bool reduced[XF_MAX_DIMS];
    int64_t a, r, b;
    if (!xf_dn_reduce_axes(g, n, in[0].shape.ndim, reduced) || !reduce_run(&in[0].shape, reduced, &a, &r, &b))
        return xf_rt_bad_node(err, n, "the reduced axes are not one run");
    dnnl_alg_kind_t alg = n->op == XF_OP_REDUCE_MEAN ? dnnl_reduction_mean : dnnl_reduction_sum;
    /* (a, b, r) dense, reading the plain (a, r, b) with r innermost; the
     * output (a, b, 1) is the plain (a, 1, b) */
    dnnl_memory_desc_t src_have, src, dst;
    XF_DN_TRY(err, n, dnnl_memory_desc_init_by_tag(&src, 3, (dnnl_dims_t){a, b, r}, dnnl_f32, dnnl_abc));
    XF_DN_TRY(err, n, dnnl_memory_desc_init_by_tag(&dst, 3, (dnnl_dims_t){a, b, 1}, dnnl_f32, dnnl_abc));
    XF_DN_TRY(err, n, dnnl_memory_desc_init_by_strides(&src_have, 3, (dnnl_dims_t){a, b, r}, dnnl_f32,
                                                       (dnnl_dims_t){r * b, 1, b}));
    return reduce_finish(c, n, st, alg, &src_have, &src, &dst, &dst, err);
}

const xf_dn_handler xf_dn_reduce_handler = {reduce_handles, NULL, reduce_prepare, NULL};

xf_status xf_dn_global_reduce(xf_dn_ctx *c, const xf_node *n, const xf_shape *x, const xf_shape *y, bool max,
                              xf_dn_node *st, xf_error *err)
{
    /* (N, C, 1, ..., 1, S) with S the spatial size: the same bytes */
    dnnl_dims_t dims;
    int64_t spatial = 1;
    for (int d = 0; d < x->ndim; d++) {
        spatial *= d >= 2 ? x->dims[d] : 1;
        dims[d] = d < 2 ? x->dims[d] : 1;
    }
    dims[x->ndim - 1] = spatial;
    xf_shape flat = {.ndim = x->ndim};
    for (int d = 0; d < x->ndim; d++)
        flat.dims[d] = dims[d];
    dnnl_memory_desc_t src, dst_have, dst;
    xf_dn_md_plain(&flat, dnnl_f32, &src);
    xf_dn_md_plain(y, dnnl_f32, &dst);
    xf_dn_operand_md_typed(c, n, -1, y, dnnl_f32, &dst_have);
    return reduce_finish(c, n, st, max ? dnnl_reduction_max : dnnl_reduction_mean, &src, &src, &dst_have, &dst, err);
}
