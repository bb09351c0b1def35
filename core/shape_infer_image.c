/* Shape rules of the image ops: Col2Im, CenterCropPad, AffineGrid,
 * DeformConv and MaxRoiPool (see shape_infer.c for the driver).  Col2Im's
 * image_shape, CenterCropPad's shape and AffineGrid's size give the
 * output's extents: where their values are not known the output's shape is
 * not either, and sessions infer it per run. */
#include "shape_infer_impl.h"
#include "xf_op_plans.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>

/* Extents, strides, dilations and pads beyond this are refused, so that
 * the windows' arithmetic cannot overflow (Conv's limit). */
#define WINDOW_LIMIT ((int64_t)1 << 31)

static bool window_fits(int64_t v) { return v >= 0 && v <= WINDOW_LIMIT; }

/* Element i of one of a's spatial lists of r entries (default dflt where
 * the node gives none: n_spatial 0). */
static int64_t spatial_at(const xf_attrs *a, const int64_t *list, int i, int64_t dflt)
{
    return a->n_spatial > 0 && i < a->n_spatial ? list[i] : dflt;
}

bool xf_col2im_blocks(const xf_attrs *a, int r, const int64_t *image, const int64_t *block, int64_t *blocks,
                      char *why, size_t why_len)
{
    if (a->n_spatial > 0 && a->n_spatial != r)
        return xf_infer_refuse(why, why_len, "strides, pads and dilations have %d entries for %d spatial dims",
                               a->n_spatial, r);
    for (int i = 0; i < r; i++) {
        int64_t s = spatial_at(a, a->strides, i, 1), d = spatial_at(a, a->dilations, i, 1);
        int64_t pad0 = spatial_at(a, a->pads, i, 0), pad1 = a->n_spatial > 0 ? a->pads[a->n_spatial + i] : 0;
        if (s < 1 || d < 1 || block[i] < 1 || image[i] < 1 || !window_fits(s) || !window_fits(d) ||
            !window_fits(block[i]) || !window_fits(image[i]))
            return xf_infer_refuse(why, why_len, "spatial dim %d: image extent %" PRId64 ", block extent %" PRId64
                                   ", stride %" PRId64 " and dilation %" PRId64 " must be positive (and below 2^31)",
                                   i, image[i], block[i], s, d);
        if (!window_fits(pad0) || !window_fits(pad1))
            return xf_infer_refuse(why, why_len, "spatial dim %d: pads %" PRId64 " and %" PRId64 " are out of range",
                                   i, pad0, pad1);
        int64_t pads = pad0 + pad1;
        int64_t span = d * (block[i] - 1) + 1, room = image[i] + pads - span;
        if (room < 0)
            return xf_infer_refuse(why, why_len, "spatial dim %d: a block spans %" PRId64 " but the padded image "
                                   "only %" PRId64, i, span, image[i] + pads);
        blocks[i] = room / s + 1;
    }
    return true;
}

/* Col2Im: input [N, C * prod(block_shape), L] gives [N, C, image_shape...];
 * L must be the count of blocks. */
xf_status xf_infer_col2im(xf_infer_ctx *c)
{
    const xf_shape *x = xf_infer_shape(c, 0);
    int64_t image[XF_MAX_DIMS], block[XF_MAX_DIMS], blocks[XF_MAX_DIMS];
    int ni, nb;
    if (x->ndim != 3)
        return xf_infer_fail(c, XF_ERR_INVALID, "input must have shape [N, C * prod(block_shape), L], got %s",
                             xf_infer_text(x).s);
    xf_status st = xf_infer_read_ints(c, 1, "image_shape", image, XF_MAX_DIMS - 2, &ni);
    if (st == XF_OK)
        st = xf_infer_read_ints(c, 2, "block_shape", block, XF_MAX_DIMS - 2, &nb);
    if (st != XF_OK || ni < 0 || nb < 0)
        return st != XF_OK ? st : xf_infer_unknown(c);
    if (ni != nb || ni < 1)
        return xf_infer_fail(c, XF_ERR_INVALID, "image_shape %s and block_shape %s must have one entry per "
                             "spatial dim", xf_infer_ints_text(image, ni).s, xf_infer_ints_text(block, nb).s);
    char why[300];
    if (!xf_col2im_blocks(&c->node->attrs, ni, image, block, blocks, why, sizeof why))
        return xf_infer_fail(c, XF_ERR_INVALID, "%s", why);
    int64_t per = xf_infer_dims_product(block, nb), count = xf_infer_dims_product(blocks, ni);
    if (x->dims[1] % per != 0)
        return xf_infer_fail(c, XF_ERR_INVALID, "input's dim 1 (%" PRId64 ") is not a multiple of the block's "
                             "%" PRId64 " elements", x->dims[1], per);
    if (x->dims[2] != count)
        return xf_infer_fail(c, XF_ERR_INVALID, "input's dim 2 (%" PRId64 ") is not the %" PRId64 " blocks "
                             "image_shape %s holds", x->dims[2], count, xf_infer_ints_text(image, ni).s);
    xf_shape out = {.ndim = 2 + ni, .dims = {x->dims[0], x->dims[1] / per}};
    for (int i = 0; i < ni; i++)
        out.dims[2 + i] = image[i];
    xf_infer_set(c, 0, &out);
    return XF_OK;
}

/* CenterCropPad: the dims that axes lists (every dim when none is given)
 * take the extents of shape. */
xf_status xf_infer_center_crop_pad(xf_infer_ctx *c)
{
    const xf_attrs *a = &c->node->attrs;
    const xf_shape *x = xf_infer_shape(c, 0);
    int64_t shape[XF_MAX_DIMS];
    int n;
    xf_status st = xf_infer_read_ints(c, 1, "shape", shape, XF_MAX_DIMS, &n);
    if (st != XF_OK || n < 0)
        return st != XF_OK ? st : xf_infer_unknown(c);
    int want = a->has_axes ? a->n_axes : x->ndim;
    if (n != want)
        return xf_infer_fail(c, XF_ERR_INVALID, "shape %s has %d entries for %s %d", xf_infer_ints_text(shape, n).s,
                             n, a->has_axes ? "the axes'" : "the input's rank", want);
    bool mark[XF_MAX_DIMS] = {false};
    xf_shape out = *x;
    for (int i = 0; i < n; i++) {
        int ax = i;
        if (a->has_axes && (st = xf_infer_axis(c, "axis", a->axes[i], x->ndim, false, &ax)) != XF_OK)
            return st;
        if (mark[ax])
            return xf_infer_fail(c, XF_ERR_INVALID, "axes %s repeat axis %d", xf_infer_ints_text(a->axes, n).s, ax);
        mark[ax] = true;
        if (shape[i] < 0)
            return xf_infer_fail(c, XF_ERR_INVALID, "shape %s has a negative extent", xf_infer_ints_text(shape, n).s);
        out.dims[ax] = shape[i];
    }
    xf_infer_set(c, 0, &out);
    return XF_OK;
}

/* AffineGrid: theta [N, 2, 3] and size (N, C, H, W) give [N, H, W, 2];
 * theta [N, 3, 4] and size (N, C, D, H, W) give [N, D, H, W, 3]. */
xf_status xf_infer_affine_grid(xf_infer_ctx *c)
{
    const xf_shape *theta = xf_infer_shape(c, 0);
    if (theta->ndim != 3 || !((theta->dims[1] == 2 && theta->dims[2] == 3) ||
                              (theta->dims[1] == 3 && theta->dims[2] == 4)))
        return xf_infer_fail(c, XF_ERR_INVALID, "theta must have shape [N, 2, 3] or [N, 3, 4], got %s",
                             xf_infer_text(theta).s);
    const xf_shape *size_shape = xf_infer_shape(c, 1);
    int r = (int)theta->dims[1];
    if (size_shape->ndim != 1 || size_shape->dims[0] != r + 2)
        return xf_infer_fail(c, XF_ERR_INVALID, "size must hold %d values (N, C and %d spatial extents) for theta "
                             "%s, got shape %s", r + 2, r, xf_infer_text(theta).s, xf_infer_text(size_shape).s);
    int64_t size[5];
    int n;
    xf_status st = xf_infer_read_ints(c, 1, "size", size, 5, &n);
    if (st != XF_OK || n < 0)
        return st != XF_OK ? st : xf_infer_unknown(c);
    if (size[0] != theta->dims[0])
        return xf_infer_fail(c, XF_ERR_INVALID, "size's batch %" PRId64 " differs from theta's %" PRId64, size[0],
                             theta->dims[0]);
    xf_shape out = {.ndim = r + 2, .dims = {size[0]}};
    for (int i = 0; i < r; i++) {
        if (size[2 + i] < 1)
            return xf_infer_fail(c, XF_ERR_INVALID, "size %s has a spatial extent below 1",
                                 xf_infer_ints_text(size, n).s);
        out.dims[1 + i] = size[2 + i];
    }
    out.dims[r + 1] = r;
    xf_infer_set(c, 0, &out);
    return XF_OK;
}

/* DeformConv: X [N, C, D1, ...], W [M, C / group, k1, ...], offset [N,
 * offset_group * prod(k) * r, O1, ...], optional B [M] and mask [N,
 * offset_group * prod(k), O1, ...] give [N, M, O1, ...], each O as Conv's. */
xf_status xf_infer_deform_conv(xf_infer_ctx *c)
{
    const xf_attrs *a = &c->node->attrs;
    const xf_shape *x = xf_infer_shape(c, 0), *w = xf_infer_shape(c, 1), *off = xf_infer_shape(c, 2);
    int r = x->ndim - 2;
    if (r < 1 || w->ndim != x->ndim || off->ndim != x->ndim)
        return xf_infer_fail(c, XF_ERR_INVALID, "X %s, W %s and offset %s must have one rank, 3 or more",
                             xf_infer_text(x).s, xf_infer_text(w).s, xf_infer_text(off).s);
    if (a->n_spatial > 0 && a->n_spatial != r)
        return xf_infer_fail(c, XF_ERR_INVALID, "kernel_shape, strides, pads and dilations have %d entries for %d "
                             "spatial dims", a->n_spatial, r);
    if (a->group < 1 || a->offset_group < 1 || x->dims[1] % a->group || w->dims[0] % a->group ||
        x->dims[1] % a->offset_group || w->dims[1] != x->dims[1] / a->group)
        return xf_infer_fail(c, XF_ERR_INVALID, "X's %" PRId64 " channels, W %s, group %" PRId64 " and offset_group "
                             "%" PRId64 " do not agree", x->dims[1], xf_infer_text(w).s, a->group, a->offset_group);
    xf_shape out = {.ndim = x->ndim, .dims = {x->dims[0], w->dims[0]}};
    for (int i = 0; i < r; i++) {
        int64_t k = w->dims[2 + i], s = spatial_at(a, a->strides, i, 1), d = spatial_at(a, a->dilations, i, 1);
        if (a->n_spatial > 0 && a->kernel[i] != 0 && a->kernel[i] != k)
            return xf_infer_fail(c, XF_ERR_INVALID, "kernel_shape %s differs from W's %s",
                                 xf_infer_ints_text(a->kernel, r).s, xf_infer_text(w).s);
        int64_t pad0 = spatial_at(a, a->pads, i, 0), pad1 = a->n_spatial > 0 ? a->pads[r + i] : 0;
        if (!window_fits(pad0) || !window_fits(pad1) || !window_fits(k) || !window_fits(s) || !window_fits(d))
            return xf_infer_fail(c, XF_ERR_INVALID, "spatial dim %d: kernel %" PRId64 ", stride %" PRId64 ", dilation "
                                 "%" PRId64 " or pads %" PRId64 " and %" PRId64 " are out of range", i, k, s, d, pad0,
                                 pad1);
        int64_t padded = x->dims[2 + i] + pad0 + pad1;
        if (k < 1 || s < 1 || d < 1 || padded < d * (k - 1) + 1)
            return xf_infer_fail(c, XF_ERR_INVALID, "spatial dim %d: kernel %" PRId64 " (dilation %" PRId64 ") does "
                                 "not fit the padded extent %" PRId64 ", or a stride is not positive", i, k, d, padded);
        out.dims[2 + i] = (padded - d * (k - 1) - 1) / s + 1;
    }
    int64_t counts[XF_MAX_DIMS] = {a->offset_group}; /* offset_group, the kernel's extents, r */
    for (int i = 0; i < r; i++)
        counts[1 + i] = w->dims[2 + i];
    counts[1 + r] = r;
    int64_t taps = xf_infer_dims_product(counts, r + 1);
    xf_shape want = out;
    want.dims[1] = xf_infer_dims_product(counts, r + 2);
    if (!xf_shape_equal(off, &want))
        return xf_infer_fail(c, XF_ERR_INVALID, "offset must have shape %s, got %s", xf_infer_text(&want).s,
                             xf_infer_text(off).s);
    if (xf_infer_has(c, 3) && !(xf_infer_shape(c, 3)->ndim == 1 && xf_infer_shape(c, 3)->dims[0] == w->dims[0]))
        return xf_infer_fail(c, XF_ERR_INVALID, "B must have shape [%" PRId64 "], got %s", w->dims[0],
                             xf_infer_text(xf_infer_shape(c, 3)).s);
    want.dims[1] = taps;
    if (xf_infer_has(c, 4) && !xf_shape_equal(xf_infer_shape(c, 4), &want))
        return xf_infer_fail(c, XF_ERR_INVALID, "mask must have shape %s, got %s", xf_infer_text(&want).s,
                             xf_infer_text(xf_infer_shape(c, 4)).s);
    xf_infer_set(c, 0, &out);
    return XF_OK;
}

/* MaxRoiPool: X [N, C, H, W] and rois [R, 5] give [R, C, pooled_shape]. */
xf_status xf_infer_max_roi_pool(xf_infer_ctx *c)
{
    const xf_attrs *a = &c->node->attrs;
    const xf_shape *x = xf_infer_shape(c, 0), *rois = xf_infer_shape(c, 1);
    if (a->roi_output_h < 1 || a->roi_output_w < 1)
        return xf_infer_fail(c, XF_ERR_INVALID, "pooled_shape [%" PRId64 ", %" PRId64 "] must be at least 1 each",
                             a->roi_output_h, a->roi_output_w);
    if (!isfinite(a->roi_spatial_scale))
        return xf_infer_fail(c, XF_ERR_INVALID, "spatial_scale %g is not finite", (double)a->roi_spatial_scale);
    if (x->ndim != 4)
        return xf_infer_fail(c, XF_ERR_INVALID, "X must have shape [N, C, H, W], got %s", xf_infer_text(x).s);
    if (rois->ndim != 2 || rois->dims[1] != 5)
        return xf_infer_fail(c, XF_ERR_INVALID, "rois must have shape [num_rois, 5] (batch index, x1, y1, x2, y2), "
                             "got %s", xf_infer_text(rois).s);
    xf_shape out = {.ndim = 4, .dims = {rois->dims[0], x->dims[1], a->roi_output_h, a->roi_output_w}};
    xf_infer_set(c, 0, &out);
    return XF_OK;
}
