/* The shape rules of the detection ops: RoiAlign (see shape_infer.c for
 * the driver). */
#include "shape_infer_impl.h"

#include <inttypes.h>
#include <math.h>

/* ------------------------------------------------------------ RoiAlign */

/* X [N, C, H, W], rois [R, 4] and batch_indices [R] give [R, C,
 * output_height, output_width]. */
xf_status xf_infer_roi_align(xf_infer_ctx *c)
{
    const xf_attrs *a = &c->node->attrs;
    const xf_shape *x = xf_infer_shape(c, 0), *rois = xf_infer_shape(c, 1), *idx = xf_infer_shape(c, 2);
    if (a->roi_output_h < 1 || a->roi_output_w < 1)
        return xf_infer_fail(c, XF_ERR_INVALID, "output_height %" PRId64 " and output_width %" PRId64
                             " must be at least 1", a->roi_output_h, a->roi_output_w);
    if (a->roi_sampling_ratio < 0)
        return xf_infer_fail(c, XF_ERR_INVALID, "sampling_ratio %" PRId64 " is negative", a->roi_sampling_ratio);
    if (!isfinite(a->roi_spatial_scale))
        return xf_infer_fail(c, XF_ERR_INVALID, "spatial_scale %g is not finite", (double)a->roi_spatial_scale);
    if (x->ndim != 4)
        return xf_infer_fail(c, XF_ERR_INVALID, "X must have shape [N, C, H, W], got %s", xf_infer_text(x).s);
    if (rois->ndim != 2 || rois->dims[1] != 4)
        return xf_infer_fail(c, XF_ERR_INVALID, "rois must have shape [num_rois, 4], got %s", xf_infer_text(rois).s);
    if (idx->ndim != 1 || idx->dims[0] != rois->dims[0])
        return xf_infer_fail(c, XF_ERR_INVALID, "batch_indices must have shape [%" PRId64 "] (one per ROI), got %s",
                             rois->dims[0], xf_infer_text(idx).s);
    xf_shape out = {.ndim = 4, .dims = {rois->dims[0], x->dims[1], a->roi_output_h, a->roi_output_w}};
    xf_infer_set(c, 0, &out);
    return XF_OK;
}
