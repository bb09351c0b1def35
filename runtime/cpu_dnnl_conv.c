/* Convolutions on oneDNN: convolution (bias and fused activation as
 * post-ops, weights reordered once into the layout the chosen kernel
 * wants) and transposed convolution (oneDNN's deconvolution, likewise).
 * They let oneDNN pick every layout (format "any") where the layout plan
 * leaves it free.  The window ops' shared shape checks are here too; the
 * pools and resampling are in cpu_dnnl_pool.c. */
#include "cpu_dnnl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The shape checks every window op shares: 1 to 3 spatial dims, one
 * output of the input's rank and batch. */
bool xf_dn_window_ranks_ok(const xf_graph *g, const xf_node *n)
{
    if (n->n_outputs != 1 || n->outputs[0] < 0 || n->n_inputs < 1 || n->inputs[0] < 0)
        return false;
    const xf_shape *x = &g->values[n->inputs[0]].shape, *y = &g->values[n->outputs[0]].shape;
    return x->ndim >= 3 && x->ndim <= 2 + XF_MAX_SPATIAL && y->ndim == x->ndim && x->dims[0] == y->dims[0];
}

bool xf_dn_window_shapes_ok(const xf_graph *g, const xf_node *n)
{
    return xf_dn_all_f32(g, n) && xf_dn_window_ranks_ok(g, n);
}

bool xf_dn_input0_native_ok(const xf_graph *g, const xf_node *n, int k) { return k == 0; }

static void md_any(int rank, const int64_t *dims, dnnl_data_type_t t, dnnl_memory_desc_t *md)
{
    dnnl_dims_t d;
    for (int i = 0; i < rank; i++)
        d[i] = dims[i];
    dnnl_memory_desc_init_by_tag(md, rank, d, t, dnnl_format_tag_any);
}

/* ---------------------------------------------------------------- Conv */

static const xf_dn_conv_io conv_f32 = {1, 2, dnnl_f32, dnnl_f32, dnnl_f32, dnnl_f32};

bool xf_dn_conv_geometry_ok(const xf_graph *g, const xf_node *n, const xf_dn_conv_io *io)
{
    if (!xf_dn_window_ranks_ok(g, n) || xf_dn_input(n, io->w) < 0)
        return false;
    const xf_shape *x = &g->values[n->inputs[0]].shape, *w = &g->values[n->inputs[io->w]].shape;
    const xf_shape *y = &g->values[n->outputs[0]].shape;
    int64_t group = n->attrs.group;
    if (w->ndim != x->ndim || group < 1 || x->dims[1] % group || w->dims[0] % group ||
        w->dims[1] != x->dims[1] / group || y->dims[1] != w->dims[0])
        return false;
    int b = xf_dn_input(n, io->bias);
    return b < 0 || xf_shape_numel(&g->values[b].shape) == w->dims[0];
}

/* FusedConv's Z (input 3), or -1. */
static int conv_z(const xf_node *n) { return n->op == XF_OP_MS_FUSED_CONV ? xf_dn_input(n, 3) : -1; }

/* Conv, and ONNX Runtime's FusedConv: its activation is a post-op like
 * Conv's own, Z (of the output's shape) a sum post-op before it. */
static bool conv_handles(const xf_graph *g, const xf_node *n)
{
    int z = conv_z(n);
    return xf_dn_all_f32(g, n) && xf_dn_conv_geometry_ok(g, n, &conv_f32) &&
           (z < 0 || xf_shape_equal(&g->values[z].shape, &g->values[n->outputs[0]].shape));
}

/* Z is copied into the destination as stored: the layout plan stores it
 * like the output (xf_dn_conv_z_layouts). */
static bool conv_native_ok(const xf_graph *g, const xf_node *n, int k)
{
    return (k == 0 && !xf_dn_conv_gemm_ok(g, n)) || (k == 3 && conv_z(n) >= 0);
}

void xf_dn_conv_z_layouts(xf_dn_ctx *c, const xf_graph *g)
{
    for (int i = 0; i < g->n_nodes; i++) {
        int z = c->handlers[i] == &xf_dn_conv_handler ? conv_z(&g->nodes[i]) : -1, y = g->nodes[i].outputs[0];
        if (z >= 0 && c->layout[z] != c->layout[y])
            c->layout[z] = c->layout[y] = XF_DN_PLAIN;
    }
}

static dnnl_alg_kind_t activation_alg(xf_activation a)
{
    switch (a) {
    case XF_ACT_RELU: return dnnl_eltwise_relu;
    case XF_ACT_SIGMOID: return dnnl_eltwise_logistic;
    case XF_ACT_TANH: return dnnl_eltwise_tanh;
    case XF_ACT_NONE: break;
    }
    return dnnl_alg_kind_undef;
}

/* The node's own work after the convolution as post-ops (Conv's fused
 * activation; FusedConv's sum of Z, then its activation); returns how many
 * (at most 3). */
static int own_posts(const xf_node *n, xf_dn_post *p)
{
    if (n->op == XF_OP_CONV) {
        p[0] = (xf_dn_post){.alg = activation_alg(n->attrs.activation)};
        return n->attrs.activation != XF_ACT_NONE;
    }
    int z = conv_z(n) >= 0;
    if (z)
        p[0] = (xf_dn_post){.sum = true, .alg = dnnl_alg_kind_undef};
    return z + xf_dn_ms_act_posts(n, p + z);
}

/* A 2-D convolution along H alone (input, output and kernel 1 wide: a
 * 1-D convolution written as 2-D, Magika's 5x1 kernel over 512 rows) runs
 * with H and W swapped, with its strides, dilations and pads: oneDNN's
 * direct kernels block output pixels along W, and with W 1 each call
 * computed one (256 to 512 channels over 512 rows, one thread: 15.3 ms,
 * 4.4 swapped).  With one of the two 1, every layout describes the same
 * bytes either way, so only the descriptors change. */
static bool conv_swaps_hw(const xf_shape *x, const xf_shape *w, const xf_shape *y)
{
    return x->ndim == 4 && x->dims[3] == 1 && w->dims[3] == 1 && y->dims[3] == 1 && y->dims[2] > 1;
}

/* md (4-D) with its last two dims swapped, the same bytes where one is 1. */
static xf_status md_swap_hw(const xf_node *n, dnnl_memory_desc_t *md, xf_error *err)
{
    dnnl_dims_t dims = {md->dims[0], md->dims[1], md->dims[3], md->dims[2]};
    dnnl_memory_desc_t swapped;
    XF_DN_TRY(err, n, dnnl_memory_desc_reshape(&swapped, md, 4, dims));
    *md = swapped;
    return XF_OK;
}

/* The descriptor of convolution n, typed as io says, computed by alg
 * (direct or Winograd); src_md / dst_md fix those layouts (NULL: any),
 * with H and W swapped where conv_swaps_hw says so. */
static xf_status conv_desc(const xf_graph *g, const xf_node *n, const xf_shape *x, const xf_shape *w,
                           const xf_shape *y, bool has_bias, const xf_dn_conv_io *io, dnnl_alg_kind_t alg,
                           const dnnl_memory_desc_t *src_md, const dnnl_memory_desc_t *dst_md,
                           dnnl_convolution_desc_t *d, xf_error *err)
{
    int rank = x->ndim, ns = rank - 2;
    int64_t group = n->attrs.group;
    dnnl_dims_t wdims, strides, dil, pl, pr;
    int wrank = group > 1 ? rank + 1 : rank;
    /* grouped weights are (G, M/G, C/G, k...), the same bytes as ONNX's (M, C/G, k...) */
    int lead = group > 1 ? 1 : 0;
    if (group > 1)
        wdims[0] = group;
    wdims[lead] = w->dims[0] / group;
    for (int d2 = 1; d2 < rank; d2++)
        wdims[lead + d2] = w->dims[d2];
    for (int i = 0; i < ns; i++) {
        int64_t s = n->attrs.strides[i] > 0 ? n->attrs.strides[i] : 1;
        int64_t dl = n->attrs.dilations[i] > 0 ? n->attrs.dilations[i] : 1;
        strides[i] = s;
        dil[i] = dl - 1;
        xf_dn_window_pads(&n->attrs, ns, i, x->dims[2 + i], y->dims[2 + i], w->dims[2 + i], s, dl, &pl[i], &pr[i]);
    }
    xf_shape xs = *x, ys = *y;
    if (conv_swaps_hw(x, w, y)) {
        int64_t *axis[] = {wdims + lead + 2, xs.dims + 2, ys.dims + 2, strides, dil, pl, pr};
        for (int k = 0; k < (int)(sizeof axis / sizeof *axis); k++) {
            int64_t t = axis[k][0];
            axis[k][0] = axis[k][1];
            axis[k][1] = t;
        }
    }
    dnnl_memory_desc_t src, wei, bias, dst;
    if (src_md)
        src = *src_md;
    else
        md_any(rank, xs.dims, io->src, &src);
    md_any(wrank, wdims, io->wei, &wei);
    if (dst_md)
        dst = *dst_md;
    else
        md_any(rank, ys.dims, io->dst, &dst);
    dnnl_dims_t bdims = {w->dims[0]};
    dnnl_memory_desc_init_by_tag(&bias, 1, bdims, io->bias_type, dnnl_a);
    XF_DN_TRY(err, n, dnnl_dilated_convolution_forward_desc_init(d, dnnl_forward_inference, alg, &src, &wei,
                                                                 has_bias ? &bias : NULL, &dst, strides, dil, pl,
                                                                 pr));
    return XF_OK;
}

/* Whether float convolution n may run through oneDNN's Winograd kernels
 * (on AVX-512: F(2x2, 3x3) for one image, F(4x4, 3x3) where oneDNN takes
 * it for batches): 3x3, 2-D, ungrouped, strides and dilations 1,
 * 64 output channels or more, and the session not asking for direct sums.
 * Alone, it took 0.5 to 0.8 of the direct kernels' time on ResNet-50's,
 * Inception-v3's and SqueezeNet's 3x3 convolutions, but about as long
 * with 32 output channels.  oneDNN judges the rest (padding, channels,
 * layouts) when the primitive is made. */
static bool winograd_candidate(const xf_dn_ctx *c, const xf_node *n, const xf_shape *w, const xf_dn_conv_io *io)
{
    if (c->direct_conv || io->src != dnnl_f32 || io->wei != dnnl_f32 || io->dst != dnnl_f32 || w->ndim != 4 ||
        n->attrs.group > 1 || w->dims[0] < 64 || w->dims[2] != 3 || w->dims[3] != 3)
        return false;
    for (int i = 0; i < 2; i++)
        if (n->attrs.strides[i] > 1 || n->attrs.dilations[i] > 1)
            return false;
    return true;
}

/* The 4-D layouts the native one may be, and the channel multiple each
 * needs to add no padding. */
static const struct {
    dnnl_format_tag_t tag;
    int64_t block;
} native_known[] = {{dnnl_acdb, 1}, {dnnl_aBcd16b, 16}, {dnnl_aBcd8b, 8}};
enum { n_native_known = sizeof native_known / sizeof *native_known };

/* Adds 1 to votes[k] for the known layout k that convolution n (4-D)
 * computed by alg reads its source in, as oneDNN chooses it, with the
 * post-op post when defined; returns false where oneDNN has no kernel
 * for it but its reference one. */
static bool vote_src_layout(xf_dn_ctx *c, const xf_graph *g, const xf_node *n, dnnl_alg_kind_t alg,
                            const xf_dn_post *post, int *votes)
{
    const xf_shape *x = &g->values[n->inputs[0]].shape;
    bool has_bias = n->n_inputs > 2 && n->inputs[2] >= 0;
    dnnl_convolution_desc_t d;
    dnnl_primitive_desc_t pd;
    xf_error ignored;
    dnnl_primitive_attr_t attr = NULL;
    if (conv_desc(g, n, x, &g->values[n->inputs[1]].shape, &g->values[n->outputs[0]].shape, has_bias, &conv_f32, alg,
                  NULL, NULL, &d, &ignored) != XF_OK ||
        (post->alg != dnnl_alg_kind_undef && xf_dn_post_attr(n, post, 1, &attr, &ignored) != XF_OK))
        return false;
    dnnl_status_t made = dnnl_primitive_desc_create(&pd, &d, attr, c->engine, NULL);
    dnnl_primitive_attr_destroy(attr);
    if (made != dnnl_success)
        return false;
    bool fast = !xf_dn_pd_is_ref(pd);
    const dnnl_memory_desc_t *chosen = dnnl_primitive_desc_query_md(pd, dnnl_query_src_md, 0);
    for (int k = 0; k < n_native_known && fast; k++) {
        dnnl_memory_desc_t cand;
        /* the chosen one's dims: H and W swapped where conv_swaps_hw says
         * so, the same bytes in every known layout */
        dnnl_memory_desc_init_by_tag(&cand, 4, chosen->dims, dnnl_f32, native_known[k].tag);
        votes[k] += dnnl_memory_desc_equal(chosen, &cand);
    }
    dnnl_primitive_desc_destroy(pd);
    return fast;
}

/* The native layout: the one oneDNN's direct kernels read most of the
 * graph's 4-D float convolutions in, unless those Winograd's kernel takes
 * hold 1.5 times the multiply-adds of the others but 1x1 ones: then the
 * layout that kernel reads (channel-blocked), in which they run it.  It
 * takes them with the post-op the fold plan will likely give them
 * (xf_dn_expected_post): it has ReLU, but no SiLU (YOLOX's convolutions
 * ran 10% slower, directly in its layout).
 * Measured on this rule's sides: in the blocked layout the direct kernels
 * took about as long as in channels-last for 1x1 convolutions, 10 to 20%
 * longer for the others (1x7, 5x5, strided 3x3); ResNet-50 and SqueezeNet
 * (3.2 and 8.8 times) ran 6 to 19% faster by it on one and two threads,
 * Inception-v3 (0.7 times) slower. */
void xf_dn_choose_native(xf_dn_ctx *c, const xf_graph *g)
{
    int votes[n_native_known] = {0}, wino_votes[n_native_known] = {0};
    double wino_macs = 0, other_macs = 0;
    for (int i = 0; i < g->n_nodes; i++) {
        const xf_node *n = &g->nodes[i];
        if ((n->op != XF_OP_CONV && n->op != XF_OP_MS_FUSED_CONV) || !conv_handles(g, n) ||
            g->values[n->inputs[0]].shape.ndim != 4 || xf_dn_conv_gemm_ok(g, n))
            continue;
        xf_dn_post none = {.alg = dnnl_alg_kind_undef}, post = xf_dn_expected_post(g, n->outputs[0]);
        vote_src_layout(c, g, n, dnnl_convolution_direct, &none, votes);
        const xf_shape *w = &g->values[n->inputs[1]].shape;
        double macs = (double)xf_shape_numel(&g->values[n->outputs[0]].shape) * (double)(w->dims[1] * w->dims[2] *
                                                                                         w->dims[3]);
        if (winograd_candidate(c, n, w, &conv_f32) &&
            vote_src_layout(c, g, n, dnnl_convolution_winograd, &post, wino_votes))
            wino_macs += macs;
        else if (w->dims[2] * w->dims[3] > 1)
            other_macs += macs;
    }
    c->native_winograd = wino_macs > 0 && wino_macs >= 1.5 * other_macs;
    const int *use = c->native_winograd ? wino_votes : votes;
    c->native_block = 0;
    for (int k = 0, best = 0; k < n_native_known; k++)
        if (use[k] > best) {
            best = use[k];
            c->native_tag = native_known[k].tag;
            c->native_block = native_known[k].block;
        }
}

/* Where the layout plan fixes a float convolution's source or
 * destination, oneDNN may have a faster kernel than *pd (the one for
 * those layouts): the direct one in the same layouts where *pd is
 * Winograd's, the direct one in the layouts oneDNN prefers, with
 * reorders to and from them, or, where Winograd's kernel takes the
 * convolution but the plan stores values in another layout
 * (channels-last, Inception-v3's), Winograd's with reorders.  These are timed (xf_dn_fastest) and *pd
 * becomes the fastest; `timing` receives the note profiles give. */
static void conv_time_kernels(xf_dn_ctx *c, const xf_graph *g, const xf_node *n, const xf_shape *x, const xf_shape *w,
                              const xf_shape *y, bool has_bias, const_dnnl_primitive_attr_t attr,
                              const dnnl_memory_desc_t *src_md, const dnnl_memory_desc_t *dst_md,
                              const dnnl_memory_desc_t *src_have, const dnnl_memory_desc_t *dst_have,
                              dnnl_primitive_desc_t *pd, char *timing)
{
    dnnl_primitive_desc_t cand[XF_DN_MAX_CANDIDATES] = {*pd};
    int k = 1;
    const dnnl_convolution_desc_t *planned = NULL;
    bool wino = dnnl_primitive_desc_query(*pd, dnnl_query_convolution_d, 0, &planned) == dnnl_success && planned &&
                planned->alg_kind == dnnl_convolution_winograd;
    /* the direct kernel in the planned layouts (beside Winograd's), the
     * direct one in oneDNN's, Winograd's in its own (beside a direct one) */
    const struct {
        bool take, free_layouts;
        dnnl_alg_kind_t alg;
    } variants[] = {{wino, false, dnnl_convolution_direct},
                    {true, true, dnnl_convolution_direct},
                    {!wino && winograd_candidate(c, n, w, &conv_f32), true, dnnl_convolution_winograd}};
    for (int v = 0; v < 3 && k < XF_DN_MAX_CANDIDATES; v++) {
        dnnl_convolution_desc_t d;
        xf_error ignored;
        dnnl_primitive_desc_t p = NULL;
        bool free_layouts = variants[v].free_layouts;
        if (variants[v].take &&
            conv_desc(g, n, x, w, y, has_bias, &conv_f32, variants[v].alg, free_layouts ? NULL : src_md,
                      free_layouts ? NULL : dst_md, &d, &ignored) == XF_OK &&
            dnnl_primitive_desc_create(&p, &d, attr, c->engine, NULL) == dnnl_success) {
            /* a kernel already there (same implementation and layouts) or
             * oneDNN's reference one is no candidate */
            bool known = xf_dn_pd_is_ref(p);
            for (int i = 0; i < k && !known; i++)
                known = xf_dn_pd_same(p, cand[i]);
            if (known)
                dnnl_primitive_desc_destroy(p);
            else
                cand[k++] = p;
        }
    }
    if (k < 2)
        return;
    int best = xf_dn_fastest(c, cand, k, src_have, dst_have, timing);
    *pd = cand[best];
    for (int i = 0; i < k; i++)
        if (i != best)
            dnnl_primitive_desc_destroy(cand[i]);
}

/* y's dims channels-last, of type t (acb, acdb, acdeb). */
static void channels_last(const xf_shape *y, dnnl_data_type_t t, dnnl_memory_desc_t *md)
{
    dnnl_dims_t dims, strides;
    int rank = y->ndim;
    dnnl_dim_t step = y->dims[1];
    for (int d = 0; d < rank; d++)
        dims[d] = y->dims[d];
    strides[1] = 1;
    for (int d = rank - 1; d >= 2; d--) {
        strides[d] = step;
        step *= y->dims[d];
    }
    strides[0] = step;
    dnnl_memory_desc_init_by_strides(md, rank, dims, t, strides);
}

/* Creates convolution n's primitive descriptor as it is run: its source
 * and destination as stored (*src_have, *dst_have) where the layout plan
 * and a sum post-op fix them, else oneDNN's choice.  With `timing` (a
 * float convolution being built, in a session that times kernels), other
 * kernels are timed against it (conv_time_kernels). */
static xf_status conv_create(xf_dn_ctx *c, const xf_graph *g, const xf_node *n, const xf_shape *x, const xf_shape *w,
                             const xf_shape *y, bool has_bias, bool sum, const xf_dn_conv_io *io,
                             const_dnnl_primitive_attr_t attr, dnnl_memory_desc_t *src_have,
                             dnnl_memory_desc_t *dst_have, dnnl_primitive_desc_t *pd, char *timing, xf_error *err)
{
    *pd = NULL;
    /* operands stored native are read and written as they are, so runs of
     * convolutions need no reorders; plain ones let oneDNN choose */
    xf_dn_operand_md_typed(c, n, 0, x, io->src, src_have);
    xf_dn_operand_md_typed(c, n, -1, y, io->dst, dst_have);
    if (io->dst_sums) /* channels-last int32, for the loop after it */
        channels_last(y, io->dst, dst_have);
    bool swap = conv_swaps_hw(x, w, y);
    xf_status s;
    if (swap && ((s = md_swap_hw(n, src_have, err)) != XF_OK || (s = md_swap_hw(n, dst_have, err)) != XF_OK))
        return s;
    bool src_native = xf_dn_value_layout(c, n->inputs[0]) == XF_DN_NATIVE;
    /* a sum post-op adds to the destination as stored, so it is written
     * directly, with no reorder */
    bool dst_fixed = xf_dn_value_layout(c, n->outputs[0]) == XF_DN_NATIVE || sum || io->dst_sums;
    dnnl_convolution_desc_t d;
    /* a plain destination fixed with the source in another layout gets
     * oneDNN's reference convolution: the source is then read plain too
     * (reordered when stored native) */
    dnnl_memory_desc_t src_fixed = *src_have;
    bool dst_plain_fixed = dst_fixed && !io->dst_sums && xf_dn_value_layout(c, n->outputs[0]) == XF_DN_PLAIN;
    if (dst_plain_fixed) {
        xf_dn_md_typed(c, x, XF_DN_PLAIN, io->src, &src_fixed);
        if (swap && (s = md_swap_hw(n, &src_fixed, err)) != XF_OK)
            return s;
    }
    const dnnl_memory_desc_t *src_md = src_native || dst_plain_fixed ? &src_fixed : NULL;
    const dnnl_memory_desc_t *dst_md = dst_fixed ? dst_have : NULL;
    /* Winograd's kernel where it takes these layouts and post-ops: fewer
     * multiplications, sums rounded in another order.  Only where the
     * values are stored in its layout (xf_dn_choose_native): with reorders
     * to and from the channels-last one, Inception-v3 ran no faster on one
     * or two threads. */
    xf_error ignored;
    /* a sum post-op adds to the destination as stored: no reorder after
     * it, so no other layout to time */
    bool time = timing && c->time_kernels && io == &conv_f32 && !sum && (src_md || dst_md);
    if (c->native_winograd && winograd_candidate(c, n, w, io) &&
        conv_desc(g, n, x, w, y, has_bias, io, dnnl_convolution_winograd, src_md, dst_md, &d, &ignored) == XF_OK &&
        dnnl_primitive_desc_create(pd, &d, attr, c->engine, NULL) == dnnl_success) {
        if (!xf_dn_pd_is_ref(*pd)) {
            if (time)
                conv_time_kernels(c, g, n, x, w, y, has_bias, attr, src_md, dst_md, src_have, dst_have, pd, timing);
            return XF_OK;
        }
        dnnl_primitive_desc_destroy(*pd);
        *pd = NULL;
    }
    s = conv_desc(g, n, x, w, y, has_bias, io, dnnl_convolution_direct, src_md, dst_md, &d, err);
    if (s != XF_OK)
        return s;
    XF_DN_TRY(err, n, dnnl_primitive_desc_create(pd, &d, attr, c->engine, NULL));
    if (time && !xf_dn_pd_is_ref(*pd))
        conv_time_kernels(c, g, n, x, w, y, has_bias, attr, src_md, dst_md, src_have, dst_have, pd, timing);
    /* where the stored layouts leave only oneDNN's reference convolution
     * (a grouped one of 8 channels per group, channels-last: RegNet's), it
     * gets the layouts it prefers, with reorders around it; not with a sum
     * post-op, which adds to the destination as stored */
    if ((src_native || dst_fixed) && !sum && !io->dst_sums && xf_dn_pd_is_ref(*pd)) {
        dnnl_primitive_desc_t free_pd = NULL;
        if (conv_desc(g, n, x, w, y, has_bias, io, dnnl_convolution_direct, NULL, NULL, &d, err) == XF_OK &&
            dnnl_primitive_desc_create(&free_pd, &d, attr, c->engine, NULL) == dnnl_success &&
            !xf_dn_pd_is_ref(free_pd)) {
            dnnl_primitive_desc_destroy(*pd);
            *pd = free_pd;
        } else if (free_pd) {
            dnnl_primitive_desc_destroy(free_pd);
        }
    }
    return XF_OK;
}

xf_status xf_dn_conv_build(xf_dn_ctx *c, const xf_graph *g, const xf_node *n, const xf_tensor_view *in,
                           const xf_tensor_view *out, xf_dn_node *st, const xf_dn_conv_io *io,
                           const_dnnl_primitive_attr_t attr, xf_error *err)
{
    const xf_shape *x = &in[0].shape, *w = &in[io->w].shape, *y = &out[0].shape;
    bool has_bias = st->folded_b || (xf_dn_input(n, io->bias) >= 0 && xf_rt_present(&in[io->bias]));
    dnnl_memory_desc_t src_have, dst_have;
    dnnl_primitive_desc_t pd;
    xf_status s = conv_create(c, g, n, x, w, y, has_bias, st->sum_src || st->sum_input, io, attr, &src_have, &dst_have,
                              &pd, xf_dn_last_build(c, (int)(n - g->nodes), st) ? st->timing : NULL, err);
    if (s != XF_OK)
        return s;

    s = xf_dn_bind(c, n, st, DNNL_ARG_SRC, 0, &src_have, dnnl_primitive_desc_query_md(pd, dnnl_query_src_md, 0),
                   err);
    if (s == XF_OK) {
        const dnnl_memory_desc_t *want = dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
        dnnl_memory_desc_t plain;
        /* the plain (goihw / oihw) view of the same dims */
        xf_shape ws = {.ndim = want->ndims};
        for (int i = 0; i < want->ndims; i++)
            ws.dims[i] = want->dims[i];
        xf_dn_md_plain(&ws, io->wei, &plain);
        const void *wdata = st->folded_w ? st->folded_w : in[io->w].data;
        s = g->values[n->inputs[io->w]].init && wdata
                ? xf_dn_bind_const(c, n, st, DNNL_ARG_WEIGHTS, wdata, &plain, want, err)
                : xf_dn_bind(c, n, st, DNNL_ARG_WEIGHTS, io->w, &plain, want, err);
    }
    if (s == XF_OK && has_bias) {
        const dnnl_memory_desc_t *want = dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 1);
        s = st->folded_b ? xf_dn_bind_const(c, n, st, DNNL_ARG_BIAS, st->folded_b, want, want, err)
                         : xf_dn_bind(c, n, st, DNNL_ARG_BIAS, io->bias, want, want, err);
    }
    if (s == XF_OK)
        s = io->dst_sums ? xf_dn_bind_scratch(c, n, st, DNNL_ARG_DST, &dst_have, io->dst_sums, err)
                         : xf_dn_bind(c, n, st, DNNL_ARG_DST, -1, &dst_have,
                                      dnnl_primitive_desc_query_md(pd, dnnl_query_dst_md, 0), err);
    if (s != XF_OK) {
        dnnl_primitive_desc_destroy(pd);
        return s;
    }
    if (conv_swaps_hw(x, w, y)) { /* said in profiles, after the kernels timed */
        size_t len = strlen(st->timing);
        snprintf(st->timing + len, sizeof st->timing - len, "; H and W swapped");
    }
    return xf_dn_finish(n, st, pd, err);
}

static xf_status conv_prepare(xf_dn_ctx *c, const xf_graph *g, const xf_node *n, const xf_tensor_view *in,
                              const xf_tensor_view *out, xf_dn_node *st, xf_error *err)
{
    /* the node's own fused activation, then what folded consumers add */
    xf_dn_post posts[XF_DN_MAX_POSTS + 3];
    int n_posts = own_posts(n, posts);
    if (conv_z(n) >= 0) {
        st->sum_input = 3;
        st->sum_bytes = xf_rt_bytes(&in[3]);
    }
    for (int i = 0; i < st->n_posts; i++)
        posts[n_posts++] = st->posts[i];
    if (xf_dn_conv_gemm_ok(g, n) && xf_dn_conv_gemm_takes(c, n, in, out, posts, n_posts))
        return xf_dn_conv_gemm_prepare(c, n, in, out, st->folded_w || g->values[n->inputs[1]].init, st, posts,
                                       n_posts, err);
    dnnl_primitive_attr_t attr;
    xf_status s = xf_dn_post_attr(n, posts, n_posts, &attr, err);
    if (s != XF_OK)
        return s;
    s = xf_dn_conv_build(c, g, n, in, out, st, &conv_f32, attr, err);
    dnnl_primitive_attr_destroy(attr);
    return s;
}

bool xf_dn_conv_posts_fast(xf_dn_ctx *c, const xf_graph *g, const xf_node *n, bool bias, const xf_dn_post *posts,
                           int n_posts, const xf_dn_post *next)
{
    xf_dn_post all[XF_DN_MAX_POSTS + 4];
    int k = own_posts(n, all);
    bool sum = false;
    for (int i = 0; i <= n_posts && k < XF_DN_MAX_POSTS + 4; i++)
        all[k++] = i < n_posts ? posts[i] : *next;
    for (int i = 0; i < k; i++)
        sum = sum || all[i].sum;
    xf_error ignored;
    dnnl_primitive_attr_t attr;
    if (xf_dn_post_attr(n, all, k, &attr, &ignored) != XF_OK)
        return false;
    dnnl_memory_desc_t src, dst;
    dnnl_primitive_desc_t pd;
    bool fast = conv_create(c, g, n, &g->values[n->inputs[0]].shape, &g->values[n->inputs[1]].shape,
                            &g->values[n->outputs[0]].shape, bias, sum, &conv_f32, attr, &src, &dst, &pd, NULL,
                            &ignored) == XF_OK &&
                !xf_dn_pd_is_ref(pd);
    if (pd)
        dnnl_primitive_desc_destroy(pd);
    dnnl_primitive_attr_destroy(attr);
    return fast;
}

/* Any elementwise op and one sum (none after FusedConv's Z), after the
 * Conv's own activation; not
 * one of the own activation's algorithm with other parameters (oneDNN 2.6
 * runs them all with the first one's). */
static bool conv_takes_post(const xf_node *n, int n_posts, const xf_dn_post *post)
{
    xf_dn_post own[3];
    int n_own = own_posts(n, own);
    if (post->sum && conv_z(n) >= 0)
        return false;
    for (int i = 0; i < n_own; i++)
        if (!post->sum && own[i].alg == post->alg && (own[i].alpha != post->alpha || own[i].beta != post->beta))
            return false;
    return n_posts + n_own < XF_DN_MAX_POSTS;
}

const xf_dn_handler xf_dn_conv_handler = {conv_handles, conv_native_ok, conv_prepare, conv_takes_post};

/* ---------------------------------------------------------------- ConvTranspose */

/* The padding oneDNN's deconvolution takes along each spatial axis: its
 * output is (in - 1) * stride + extent - pl - pr, so output_padding
 * shortens the end padding.  False where the node's geometry does not fit
 * (an output grown past the full result, or output_padding beyond the end
 * padding: negative pads, which cpu_ref runs). */
static bool deconv_pads(const xf_node *n, const xf_shape *x, const xf_shape *w, const xf_shape *y, int64_t *pl,
                        int64_t *pr)
{
    int ns = x->ndim - 2;
    for (int i = 0; i < ns; i++) {
        int64_t extent, begin, end;
        char why[300];
        if (!xf_conv_transpose_axis(&n->attrs, ns, i, x->dims[2 + i], w->dims[2 + i], &extent, &begin, &end, why,
                                    sizeof why) ||
            extent != y->dims[2 + i])
            return false;
        pl[i] = begin;
        pr[i] = end - n->attrs.output_padding[i];
        if (pl[i] < 0 || pr[i] < 0)
            return false;
    }
    return true;
}

static bool deconv_handles(const xf_graph *g, const xf_node *n)
{
    if (!xf_dn_window_shapes_ok(g, n) || n->inputs[1] < 0)
        return false;
    const xf_shape *x = &g->values[n->inputs[0]].shape, *w = &g->values[n->inputs[1]].shape;
    const xf_shape *y = &g->values[n->outputs[0]].shape;
    int64_t group = n->attrs.group, pl[XF_MAX_SPATIAL], pr[XF_MAX_SPATIAL];
    if (w->ndim != x->ndim || group < 1 || x->dims[1] % group || w->dims[0] != x->dims[1] ||
        y->dims[1] != w->dims[1] * group || !deconv_pads(n, x, w, y, pl, pr))
        return false;
    return n->n_inputs < 3 || n->inputs[2] < 0 || xf_shape_numel(&g->values[n->inputs[2]].shape) == y->dims[1];
}

/* The deconvolution's weights as ONNX stores them, (C, M/group, k...):
 * oneDNN's (M, C, k...), or (group, M/group, C/group, k...), with the
 * first two dimensions of each group swapped. */
static void deconv_weights_md(const xf_shape *w, int64_t group, dnnl_memory_desc_t *md)
{
    int rank = w->ndim, lead = group > 1 ? 1 : 0;
    int64_t cg = w->dims[0] / group, mg = w->dims[1], k = xf_shape_numel(w) / (w->dims[0] * mg);
    dnnl_dims_t dims, strides;
    if (group > 1) {
        dims[0] = group;
        strides[0] = cg * mg * k;
    }
    dims[lead] = mg;
    strides[lead] = k;
    dims[lead + 1] = cg;
    strides[lead + 1] = mg * k;
    for (int d = rank - 1, step = 1; d >= 2; step *= (int)w->dims[d], d--) {
        dims[lead + d] = w->dims[d];
        strides[lead + d] = step;
    }
    dnnl_memory_desc_init_by_strides(md, rank + lead, dims, dnnl_f32, strides);
}

/* A ConvTranspose whose kernel equals its stride (no padding, dilation or
 * groups: U-Net and YOLO's mask head upsample so) writes each input pixel
 * into its own block of the output: a 1x1 convolution to K * M channels
 * (K kernel positions, M output channels; channel j = kpos * M + m), then
 * a DepthToSpace.  oneDNN 2.6 runs such deconvolutions 3x slower than
 * ONNX Runtime; the convolution and one reorder, as fast.  The output
 * must be stored as a permutation of plain dims, or with whole blocks of
 * channels innermost: its strides then give the reorder's view. */
static int64_t deconv_shuffle_block(const xf_dn_ctx *c, const xf_graph *g, const xf_node *n, const int64_t *pl,
                                    const int64_t *pr)
{
    const xf_shape *x = &g->values[n->inputs[0]].shape, *w = &g->values[n->inputs[1]].shape;
    const xf_shape *y = &g->values[n->outputs[0]].shape;
    int b = xf_dn_input(n, 2);
    if (n->attrs.group != 1 || !g->values[n->inputs[1]].init || (b >= 0 && !g->values[b].init))
        return 0;
    for (int d = 0; d < x->ndim - 2; d++)
        if (w->dims[2 + d] != n->attrs.strides[d] || n->attrs.dilations[d] != 1 || pl[d] || pr[d] ||
            y->dims[2 + d] != x->dims[2 + d] * w->dims[2 + d])
            return 0;
    dnnl_memory_desc_t out;
    xf_dn_operand_md(c, n, -1, y, &out);
    const dnnl_blocking_desc_t *blk = &out.format_desc.blocking;
    if (out.format_kind != dnnl_blocked)
        return 0;
    if (blk->inner_nblks == 0)
        return 1;
    return blk->inner_nblks == 1 && blk->inner_idxs[0] == 1 && y->dims[1] % blk->inner_blks[0] == 0
               ? blk->inner_blks[0]
               : 0;
}

/* The view (N, X0, k0, X1, k1, ..., M) of a tensor of outer strides `st`
 * (as oneDNN's blocking gives them) in which kernel position kpos of
 * pixel x is element (x * k + kpos) of each spatial dim (the output) or
 * channel kpos * M + m (the convolution's result: `conv`).  M is viewed as
 * (M / block, block) when block > 1, the tensor storing blocks of that
 * many channels innermost when `blocked`. */
static void shuffle_view(const xf_shape *x, const xf_shape *w, int64_t m, int64_t block, bool blocked,
                         const dnnl_dims_t st, bool conv, dnnl_memory_desc_t *md)
{
    int ns = x->ndim - 2, vrank = 2 + 2 * ns + (block > 1);
    dnnl_dims_t dims, strides;
    dims[0] = x->dims[0];
    strides[0] = st[0];
    int64_t kpos = 1;
    for (int e = ns - 1; e >= 0; e--) {
        int64_t k = w->dims[2 + e];
        dims[1 + 2 * e] = x->dims[2 + e];
        dims[2 + 2 * e] = k;
        strides[1 + 2 * e] = conv ? st[2 + e] : st[2 + e] * k;
        strides[2 + 2 * e] = conv ? kpos * (blocked ? m / block : m) * st[1] : st[2 + e];
        kpos *= k;
    }
    dims[1 + 2 * ns] = m / block;
    strides[1 + 2 * ns] = blocked ? st[1] : block * st[1];
    if (block > 1) {
        dims[vrank - 1] = block;
        strides[vrank - 1] = blocked ? 1 : st[1];
    }
    dnnl_memory_desc_init_by_strides(md, vrank, dims, dnnl_f32, strides);
}

/* The layout of the 1x1 convolution's result: channels-last (block 1) or
 * blocks of 8 or 16 channels, for 1 to 3 spatial dims. */
static dnnl_format_tag_t shuffle_result_tag(int ns, int64_t block)
{
    switch (ns * 100 + (int)block) {
    case 101: return dnnl_acb;
    case 201: return dnnl_acdb;
    case 301: return dnnl_acdeb;
    case 108: return dnnl_aBc8b;
    case 208: return dnnl_aBcd8b;
    case 308: return dnnl_aBcde8b;
    case 116: return dnnl_aBc16b;
    case 216: return dnnl_aBcd16b;
    case 316: return dnnl_aBcde16b;
    default: return dnnl_format_tag_undef;
    }
}

/* Prepares such a ConvTranspose when oneDNN has a kernel for its
 * convolution (*taken): the convolution writes (N, K * M, X...) into memory
 * of the node's, channels-last or channel-blocked (blocked as the output
 * is, or as oneDNN's kernels want), and the reorder copies it into the
 * output through the two views. */
static xf_status deconv_shuffle_prepare(xf_dn_ctx *c, const xf_graph *g, const xf_node *n, const xf_tensor_view *in,
                                        const xf_tensor_view *out, xf_dn_node *st, int64_t out_block, bool *taken,
                                        xf_error *err)
{
    const xf_shape *x = &in[0].shape, *w = &in[1].shape, *y = &out[0].shape;
    int rank = x->ndim, ns = rank - 2;
    int64_t cin = x->dims[1], m = y->dims[1], kk = xf_shape_numel(w) / (cin * m), chans = m * kk;
    bool has_bias = xf_dn_input(n, 2) >= 0 && xf_rt_present(&in[2]);
    *taken = false;
    dnnl_dims_t zdims = {x->dims[0], chans}, wdims = {chans, cin}, one = {0}, zero = {0};
    for (int d = 0; d < ns; d++) {
        zdims[2 + d] = x->dims[2 + d];
        wdims[2 + d] = 1;
        one[d] = 1;
    }
    dnnl_memory_desc_t src_have, src, wei_plain, wei, bias, z, dst_have;
    xf_dn_operand_md(c, n, 0, x, &src_have);
    if (xf_dn_value_layout(c, n->inputs[0]) == XF_DN_NATIVE)
        src = src_have;
    else
        md_any(rank, x->dims, dnnl_f32, &src);
    dnnl_memory_desc_init_by_tag(&wei_plain, rank, wdims, dnnl_f32, rank == 3 ? dnnl_abc : rank == 4 ? dnnl_abcd
                                                                                                   : dnnl_abcde);
    dnnl_memory_desc_init_by_tag(&wei, rank, wdims, dnnl_f32, dnnl_format_tag_any);
    dnnl_memory_desc_init_by_tag(&bias, 1, (dnnl_dims_t){chans}, dnnl_f32, dnnl_a);
    dnnl_primitive_attr_t attr;
    xf_status s = xf_dn_post_attr(n, st->posts, st->n_posts, &attr, err);
    if (s != XF_OK)
        return s;
    /* the result blocked as the output is; else channels-last, or blocked
     * where oneDNN's kernels take only that (AVX2) */
    const int64_t blocks[] = {out_block, out_block == 1 ? 16 : 0, out_block == 1 ? 8 : 0};
    dnnl_primitive_desc_t pd = NULL;
    int64_t z_block = 0;
    for (int i = 0; i < 3 && !pd; i++) {
        z_block = blocks[i];
        if (!z_block || m % z_block || shuffle_result_tag(ns, z_block) == dnnl_format_tag_undef)
            continue;
        dnnl_memory_desc_init_by_tag(&z, rank, zdims, dnnl_f32, shuffle_result_tag(ns, z_block));
        dnnl_convolution_desc_t d;
        if (dnnl_convolution_forward_desc_init(&d, dnnl_forward_inference, dnnl_convolution_direct, &src, &wei,
                                               has_bias ? &bias : NULL, &z, one, zero, zero) != dnnl_success ||
            dnnl_primitive_desc_create(&pd, &d, attr, c->engine, NULL) != dnnl_success)
            pd = NULL;
        else if (xf_dn_pd_is_ref(pd)) {
            dnnl_primitive_desc_destroy(pd);
            pd = NULL;
        }
    }
    dnnl_primitive_attr_destroy(attr);
    if (!pd)
        return XF_OK;
    *taken = true;
    /* weights (K * M, C, 1...): row kpos * M + m is ONNX's (c, m, kpos) over c */
    free(st->folded_w);
    free(st->folded_b);
    st->folded_w = malloc(sizeof(float) * (size_t)(chans * cin));
    st->folded_b = has_bias ? malloc(sizeof(float) * (size_t)chans) : NULL;
    if (!st->folded_w || (has_bias && !st->folded_b)) {
        dnnl_primitive_desc_destroy(pd);
        return xf_error_set(err, XF_ERR_NOMEM, "out of memory");
    }
    const float *wd = in[1].data;
    for (int64_t kp = 0; kp < kk; kp++)
        for (int64_t o = 0; o < m; o++) {
            for (int64_t i = 0; i < cin; i++)
                st->folded_w[(kp * m + o) * cin + i] = wd[(i * m + o) * kk + kp];
            if (has_bias)
                st->folded_b[kp * m + o] = ((const float *)in[2].data)[o];
        }
    xf_dn_operand_md(c, n, -1, y, &dst_have);
    int64_t view_block = z_block > out_block ? z_block : out_block;
    dnnl_memory_desc_t zview, yview;
    shuffle_view(x, w, m, view_block, z_block > 1, z.format_desc.blocking.strides, true, &zview);
    shuffle_view(x, w, m, view_block, out_block > 1, dst_have.format_desc.blocking.strides, false, &yview);
    s = xf_dn_bind(c, n, st, DNNL_ARG_SRC, 0, &src_have, dnnl_primitive_desc_query_md(pd, dnnl_query_src_md, 0), err);
    if (s == XF_OK)
        s = xf_dn_bind_const(c, n, st, DNNL_ARG_WEIGHTS, st->folded_w, &wei_plain,
                             dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0), err);
    if (s == XF_OK && has_bias)
        s = xf_dn_bind_const(c, n, st, DNNL_ARG_BIAS, st->folded_b, &bias, &bias, err);
    if (s == XF_OK)
        s = xf_dn_bind_dst_view(c, n, st, &z, &zview, &yview, err);
    return xf_dn_finish_or_free(n, st, pd, s, err);
}

static xf_status deconv_prepare(xf_dn_ctx *c, const xf_graph *g, const xf_node *n, const xf_tensor_view *in,
                                const xf_tensor_view *out, xf_dn_node *st, xf_error *err)
{
    const xf_shape *x = &in[0].shape, *w = &in[1].shape, *y = &out[0].shape;
    int rank = x->ndim, ns = rank - 2;
    int64_t group = n->attrs.group, pl64[XF_MAX_SPATIAL], pr64[XF_MAX_SPATIAL];
    bool has_bias = n->n_inputs > 2 && xf_rt_present(&in[2]);
    if (!deconv_pads(n, x, w, y, pl64, pr64))
        return xf_rt_bad_node(err, n, "the output shape does not follow from the attributes");
    int64_t block = deconv_shuffle_block(c, g, n, pl64, pr64);
    bool taken = false;
    xf_status shuffled = block ? deconv_shuffle_prepare(c, g, n, in, out, st, block, &taken, err) : XF_OK;
    if (shuffled != XF_OK || taken)
        return shuffled;
    dnnl_dims_t strides, dil, pl, pr;
    for (int i = 0; i < ns; i++) {
        strides[i] = n->attrs.strides[i];
        dil[i] = n->attrs.dilations[i] - 1;
        pl[i] = pl64[i];
        pr[i] = pr64[i];
    }
    /* as Conv: operands stored native are read and written as they are,
     * unless oneDNN has only its reference deconvolution for that layout
     * (channels-last, where it ran 50 to 70 times slower than on the
     * blocked layout it then picks, reorders included) */
    dnnl_memory_desc_t src_have, dst_have, src, wei_plain, wei, bias, dst;
    xf_dn_operand_md(c, n, 0, x, &src_have);
    xf_dn_operand_md(c, n, -1, y, &dst_have);
    deconv_weights_md(w, group, &wei_plain);
    dnnl_memory_desc_init_by_tag(&wei, wei_plain.ndims, wei_plain.dims, dnnl_f32, dnnl_format_tag_any);
    dnnl_dims_t bdims = {y->dims[1]};
    dnnl_memory_desc_init_by_tag(&bias, 1, bdims, dnnl_f32, dnnl_a);
    bool any_native = xf_dn_value_layout(c, n->inputs[0]) == XF_DN_NATIVE ||
                      xf_dn_value_layout(c, n->outputs[0]) == XF_DN_NATIVE;
    dnnl_primitive_desc_t pd = NULL;
    for (int free_layout = 0; free_layout < 2; free_layout++) {
        if (!free_layout && xf_dn_value_layout(c, n->inputs[0]) == XF_DN_NATIVE)
            src = src_have;
        else
            md_any(rank, x->dims, dnnl_f32, &src);
        if (!free_layout && xf_dn_value_layout(c, n->outputs[0]) == XF_DN_NATIVE)
            dst = dst_have;
        else
            md_any(rank, y->dims, dnnl_f32, &dst);
        dnnl_deconvolution_desc_t d;
        XF_DN_TRY(err, n,
                  dnnl_dilated_deconvolution_forward_desc_init(&d, dnnl_forward_inference, dnnl_deconvolution_direct,
                                                               &src, &wei, has_bias ? &bias : NULL, &dst, strides,
                                                               dil, pl, pr));
        dnnl_primitive_attr_t attr;
        xf_status s = xf_dn_post_attr(n, st->posts, st->n_posts, &attr, err);
        if (s != XF_OK)
            return s;
        if ((s = xf_dn_pd_create(c, n, &d, attr, &pd, err)) != XF_OK)
            return s;
        if (free_layout || !any_native || !xf_dn_pd_is_ref(pd))
            break;
        dnnl_primitive_desc_destroy(pd);
        pd = NULL;
    }
    xf_status s = xf_dn_bind(c, n, st, DNNL_ARG_SRC, 0, &src_have, dnnl_primitive_desc_query_md(pd, dnnl_query_src_md, 0), err);
    if (s == XF_OK) {
        const dnnl_memory_desc_t *want = dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
        s = g->values[n->inputs[1]].init
                ? xf_dn_bind_const(c, n, st, DNNL_ARG_WEIGHTS, in[1].data, &wei_plain, want, err)
                : xf_dn_bind(c, n, st, DNNL_ARG_WEIGHTS, 1, &wei_plain, want, err);
    }
    if (s == XF_OK && has_bias)
        s = xf_dn_bind(c, n, st, DNNL_ARG_BIAS, 2, &bias, dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 1),
                       err);
    if (s == XF_OK)
        s = xf_dn_bind(c, n, st, DNNL_ARG_DST, -1, &dst_have, dnnl_primitive_desc_query_md(pd, dnnl_query_dst_md, 0),
                       err);
    if (s != XF_OK) {
        dnnl_primitive_desc_destroy(pd);
        return s;
    }
    return xf_dn_finish(n, st, pd, err);
}

/* Elementwise post-ops (a ReLU or Tanh after a decoder's layer), no sum. */
static bool deconv_takes_post(const xf_node *n, int n_posts, const xf_dn_post *post)
{
    return !post->sum && n_posts < XF_DN_MAX_POSTS;
}

const xf_dn_handler xf_dn_deconv_handler = {deconv_handles, xf_dn_input0_native_ok, deconv_prepare, deconv_takes_post};
