/* Pools (MaxPool, AveragePool, the global ones and the ReduceMean and
 * ReduceMax that are global pools) and resampling (Resize, Upsample) on
 * oneDNN.  They compute in the layout their input is stored in. */
#include "cpu_dnnl.h"

#include <stdlib.h>
#include <string.h>

/* The primitive of op_desc d, reading input 0 as src and writing the
 * output (stored as dst_have) from dst, both in the layout they are given. */
static xf_status src_dst_finish(xf_dn_ctx *c, const xf_node *n, xf_dn_node *st, const void *d,
                                const dnnl_memory_desc_t *src_have, const dnnl_memory_desc_t *src,
                                const dnnl_memory_desc_t *dst_have, const dnnl_memory_desc_t *dst, xf_error *err)
{
    dnnl_primitive_desc_t pd;
    XF_DN_TRY(err, n, dnnl_primitive_desc_create(&pd, d, NULL, c->engine, NULL));
    xf_status s = xf_dn_bind(c, n, st, DNNL_ARG_SRC, 0, src_have, src, err);
    if (s == XF_OK)
        s = xf_dn_bind(c, n, st, DNNL_ARG_DST, -1, dst_have, dst, err);
    if (s != XF_OK) {
        dnnl_primitive_desc_destroy(pd);
        return s;
    }
    return xf_dn_finish(n, st, pd, err);
}

/* A ReduceMean or ReduceMax over every dim after batch and channels, dims
 * kept (a squeeze-and-excitation block's pool as PyTorch's dynamo exports
 * it): a global pool.  Axes from the attribute or a constant input. */
static bool reduce_is_global_pool(const xf_graph *g, const xf_node *n)
{
    if ((n->op != XF_OP_REDUCE_MEAN && n->op != XF_OP_REDUCE_MAX) || n->n_outputs != 1 || !n->attrs.keepdims ||
        n->n_inputs < 1 || n->inputs[0] < 0)
        return false;
    int r = g->values[n->inputs[0]].shape.ndim;
    bool reduced[XF_MAX_DIMS];
    if (r < 3 || r > XF_MAX_DIMS || !xf_dn_reduce_axes(g, n, r, reduced) || reduced[0] || reduced[1])
        return false;
    for (int d = 2; d < r; d++)
        if (!reduced[d])
            return false;
    return true;
}

static bool pool_is_global(const xf_graph *g, const xf_node *n)
{
    return n->op == XF_OP_GLOBAL_AVERAGE_POOL || n->op == XF_OP_GLOBAL_MAX_POOL || reduce_is_global_pool(g, n);
}

/* The 8-bit integers of quantized models (int8, uint8), which a max pool
 * takes as they are: a maximum is exact in any type. */
static dnnl_data_type_t pool_int8_type(const xf_graph *g, const xf_node *n)
{
    bool max = n->op == XF_OP_MAX_POOL || n->op == XF_OP_GLOBAL_MAX_POOL;
    if (!max || n->n_inputs != 1 || n->n_outputs != 1 || n->inputs[0] < 0 || n->outputs[0] < 0)
        return dnnl_data_type_undef;
    xf_dtype t = g->values[n->inputs[0]].dtype;
    if ((t != XF_DT_UINT8 && t != XF_DT_INT8) || g->values[n->outputs[0]].dtype != t)
        return dnnl_data_type_undef;
    return t == XF_DT_UINT8 ? dnnl_u8 : dnnl_s8;
}

static bool pool_handles(const xf_graph *g, const xf_node *n)
{
    if (n->n_outputs != 1) /* MaxPool's Indices: oneDNN's workspace is not them; cpu_ref gives them */
        return false;
    bool reduce = n->op == XF_OP_REDUCE_MEAN || n->op == XF_OP_REDUCE_MAX;
    if (reduce ? !reduce_is_global_pool(g, n) || !xf_dn_window_ranks_ok(g, n) || !xf_dn_is_f32(g, n->inputs[0]) ||
                     !xf_dn_is_f32(g, n->outputs[0])
               : !(pool_int8_type(g, n) != dnnl_data_type_undef ? xf_dn_window_ranks_ok(g, n)
                                                                : xf_dn_window_shapes_ok(g, n)))
        return false;
    const xf_shape *x = &g->values[n->inputs[0]].shape, *y = &g->values[n->outputs[0]].shape;
    if (y->dims[1] != x->dims[1])
        return false;
    if (pool_is_global(g, n))
        return true;
    /* ONNX averages over the ceil-mode overhang differently from oneDNN */
    if (n->op == XF_OP_AVERAGE_POOL && n->attrs.ceil_mode && n->attrs.count_include_pad)
        return false;
    for (int i = 0; i < x->ndim - 2; i++)
        if (n->attrs.kernel[i] < 1)
            return false;
    return true;
}

static xf_status pool_prepare(xf_dn_ctx *c, const xf_graph *g, const xf_node *n, const xf_tensor_view *in,
                              const xf_tensor_view *out, xf_dn_node *st, xf_error *err)
{
    const xf_shape *x = &in[0].shape, *y = &out[0].shape;
    int ns = x->ndim - 2;
    dnnl_dims_t kernel, strides, dil, pl, pr;
    for (int i = 0; i < ns; i++) {
        if (pool_is_global(g, n)) {
            kernel[i] = x->dims[2 + i];
            strides[i] = 1;
            dil[i] = pl[i] = pr[i] = 0;
            continue;
        }
        int64_t s = n->attrs.strides[i] > 0 ? n->attrs.strides[i] : 1;
        int64_t dl = n->attrs.dilations[i] > 0 ? n->attrs.dilations[i] : 1;
        kernel[i] = n->attrs.kernel[i];
        strides[i] = s;
        dil[i] = dl - 1;
        xf_dn_window_pads(&n->attrs, ns, i, x->dims[2 + i], y->dims[2 + i], kernel[i], s, dl, &pl[i], &pr[i]);
    }
    bool max = n->op == XF_OP_MAX_POOL || n->op == XF_OP_GLOBAL_MAX_POOL || n->op == XF_OP_REDUCE_MAX;
    dnnl_alg_kind_t alg = max ? dnnl_pooling_max
                          : n->attrs.count_include_pad && !pool_is_global(g, n) ? dnnl_pooling_avg_include_padding
                                                                              : dnnl_pooling_avg_exclude_padding;
    /* computed in the layout the input is stored in */
    xf_dn_layout work = xf_dn_value_layout(c, n->inputs[0]);
    dnnl_data_type_t t = pool_int8_type(g, n) != dnnl_data_type_undef ? pool_int8_type(g, n) : dnnl_f32;
    /* a global pool of floats stored plain: oneDNN's pooling runs its
     * plain loop (0.95 ms for Magika's 512 x 508 values, one thread), its
     * reduction a kernel (0.03 ms); one that reduces nothing (1x1) is no
     * reduction to oneDNN */
    if (pool_is_global(g, n) && work == XF_DN_PLAIN && t == dnnl_f32 && xf_shape_numel(x) > xf_shape_numel(y))
        return xf_dn_global_reduce(c, n, x, y, max, st, err);
    dnnl_memory_desc_t src_have, src, dst_have, dst;
    xf_dn_md_typed(c, x, work, t, &src);
    xf_dn_md_typed(c, y, work, t, &dst);
    xf_dn_operand_md_typed(c, n, -1, y, t, &dst_have);
    src_have = src;
    /* oneDNN pools plain operands with its simple_nchw loop (floats: 6.5
     * ms for MTCNN's first pool, 10 x 229 x 309 values, where its kernel
     * for channels last takes 0.1) or its reference loop (8-bit integers:
     * 57 ms for ResNet-50's first pool): plain operands are reordered
     * channels-last and back (but for a float pool that copies, 1 x 1) */
    if (work == XF_DN_PLAIN && x->ndim >= 3 && x->ndim <= 5 &&
        (t != dnnl_f32 || xf_shape_numel(x) > xf_shape_numel(y))) {
        dnnl_format_tag_t last = x->ndim == 3 ? dnnl_acb : x->ndim == 4 ? dnnl_acdb : dnnl_acdeb;
        dnnl_dims_t xd, yd;
        for (int i = 0; i < x->ndim; i++) {
            xd[i] = x->dims[i];
            yd[i] = y->dims[i];
        }
        XF_DN_TRY(err, n, dnnl_memory_desc_init_by_tag(&src, x->ndim, xd, t, last));
        XF_DN_TRY(err, n, dnnl_memory_desc_init_by_tag(&dst, y->ndim, yd, t, last));
    }
    dnnl_pooling_v2_desc_t d;
    XF_DN_TRY(err, n, dnnl_pooling_v2_forward_desc_init(&d, dnnl_forward_inference, alg, &src, &dst, strides, kernel,
                                                        dil, pl, pr));
    return src_dst_finish(c, n, st, &d, &src_have, &src, &dst_have, &dst, err);
}

const xf_dn_handler xf_dn_pool_handler = {pool_handles, xf_dn_input0_native_ok, pool_prepare, NULL};

/* ---------------------------------------------------------------- resampling */

/* Resize's or Upsample's scale of each dim when every one is known before
 * the run: from sizes (any computed value: the output's dims are then
 * what shape inference gave them) as out / in, or from constant scales. */
static bool resample_scales(const xf_graph *g, const xf_node *n, const xf_shape *x, const xf_shape *y, double *s)
{
    int sizes = xf_dn_input(n, 3), scales = n->op == XF_OP_UPSAMPLE ? xf_dn_input(n, 1) : xf_dn_input(n, 2);
    const xf_tensor *st = scales >= 0 ? g->values[scales].init : NULL;
    bool by_sizes = sizes >= 0 && n->op == XF_OP_RESIZE &&
                    (!g->values[sizes].init || xf_tensor_numel(g->values[sizes].init) > 0);
    if (n->op == XF_OP_UPSAMPLE && n->attrs.value)
        st = n->attrs.value;
    else if (by_sizes)
        st = NULL;
    else if (!st || st->dtype != XF_DT_FLOAT || xf_tensor_numel(st) != x->ndim)
        return false;
    for (int d = 0; d < x->ndim; d++)
        s[d] = st ? ((const float *)st->data)[d] : (double)y->dims[d] / (double)x->dims[d];
    return !by_sizes || n->attrs.resize_keep == 0;
}

/* The ONNX forms oneDNN's resampling computes, in the dims oneDNN resizes
 * (after batch and channels), where ONNX's scale is the ratio of the dims
 * (oneDNN's): linear on half-pixel coordinates (edges clamped, as both
 * do), no antialias where a dim shrinks; nearest by whole factors, where
 * oneDNN's rounding of (o + 0.5) / k - 0.5 picks floor(o / k), which is
 * ONNX's on asymmetric coordinates rounding down (PyTorch's export), and
 * also rounding to nearest where every factor is at most 2 or the
 * coordinates are half-pixel (no ties then). */
static bool resample_handles(const xf_graph *g, const xf_node *n)
{
    const xf_attrs *a = &n->attrs;
    if (!xf_dn_window_ranks_ok(g, n) || !xf_dn_is_f32(g, n->inputs[0]) || !xf_dn_is_f32(g, n->outputs[0]) ||
        (n->op == XF_OP_RESIZE && a->has_axes) || a->resize_exclude)
        return false;
    const xf_shape *x = &g->values[n->inputs[0]].shape, *y = &g->values[n->outputs[0]].shape;
    double s[XF_MAX_DIMS];
    if (xf_shape_numel(x) <= 0 || xf_shape_numel(y) <= 0 || x->dims[1] != y->dims[1] ||
        !resample_scales(g, n, x, y, s) || s[0] != 1 || s[1] != 1)
        return false;
    /* pytorch_half_pixel maps to 0 where a dim becomes 1 */
    bool half_pixel = a->resize_coord == 0 || a->resize_coord == 5 || a->resize_coord == 3, max2 = true;
    for (int d = 2; d < x->ndim; d++) {
        if (s[d] != (double)y->dims[d] / (double)x->dims[d])
            return false;
        half_pixel = half_pixel && (a->resize_coord != 3 || y->dims[d] > 1);
        bool whole = y->dims[d] % x->dims[d] == 0;
        max2 = max2 && whole && y->dims[d] <= 2 * x->dims[d];
        if (a->resize_mode == 1 ? a->resize_antialias && s[d] < 1 : a->resize_mode != 0 || !whole)
            return false;
    }
    if (a->resize_mode == 1)
        return half_pixel;
    bool rounds = a->resize_nearest == 0 || a->resize_nearest == 1;
    return (a->resize_coord == 1 && (a->resize_nearest == 2 || a->resize_nearest == 4 ||
                                     (a->resize_nearest == 0 && max2))) ||
           (half_pixel && rounds);
}

static xf_status resample_prepare(xf_dn_ctx *c, const xf_graph *g, const xf_node *n, const xf_tensor_view *in,
                                  const xf_tensor_view *out, xf_dn_node *st, xf_error *err)
{
    (void)g;
    xf_dn_layout work = xf_dn_value_layout(c, n->inputs[0]);
    dnnl_memory_desc_t src, dst_have, dst;
    xf_dn_md(c, &in[0].shape, work, &src);
    xf_dn_md(c, &out[0].shape, work, &dst);
    xf_dn_operand_md(c, n, -1, &out[0].shape, &dst_have);
    dnnl_resampling_desc_t d;
    dnnl_alg_kind_t alg = n->attrs.resize_mode == 1 ? dnnl_resampling_linear : dnnl_resampling_nearest;
    XF_DN_TRY(err, n, dnnl_resampling_forward_desc_init(&d, dnnl_forward_inference, alg, NULL, &src, &dst));
    return src_dst_finish(c, n, st, &d, &src, &src, &dst_have, &dst, err);
}

const xf_dn_handler xf_dn_resample_handler = {resample_handles, xf_dn_input0_native_ok, resample_prepare, NULL};
