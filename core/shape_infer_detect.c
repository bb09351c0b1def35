/* RoiAlign and NonMaxSuppression: their shape rules (see shape_infer.c for
 * the driver); NonMaxSuppression's are the count of the boxes its
 * selection (nms_select.c) selects when the inputs' values are known. */
#include "shape_infer_impl.h"
#include "xf_op_plans.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>

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

/* ------------------------------------------------------------ NonMaxSuppression */

static const char *const input_names[5] = {"boxes", "scores", "max_output_boxes_per_class", "iou_threshold",
                                           "score_threshold"};

bool xf_nms_check(const xf_shape *const shapes[5], int center_point_box, char *why, size_t why_len)
{
    if (center_point_box != 0 && center_point_box != 1)
        return xf_infer_refuse(why, why_len, "center_point_box is %d, not 0 or 1", center_point_box);
    const xf_shape *boxes = shapes[0], *scores = shapes[1];
    if (!boxes || !scores)
        return xf_infer_refuse(why, why_len, "boxes and scores are required");
    if (boxes->ndim != 3 || !xf_dims_may_equal(boxes->dims[2], 4))
        return xf_infer_refuse(why, why_len, "boxes must have shape [batches, boxes, 4], got %s",
                               xf_infer_text(boxes).s);
    if (scores->ndim != 3 || !xf_dims_may_equal(scores->dims[0], boxes->dims[0]) ||
        !xf_dims_may_equal(scores->dims[2], boxes->dims[1]))
        return xf_infer_refuse(why, why_len,
                               "scores must have shape [%" PRId64 ", classes, %" PRId64 "] for boxes of shape %s, "
                               "got %s", boxes->dims[0], boxes->dims[1], xf_infer_text(boxes).s,
                               xf_infer_text(scores).s);
    /* one value, or none (an empty tensor stands for an omitted input) */
    for (int i = 2; i < 5; i++)
        if (shapes[i] && (shapes[i]->ndim > 1 || xf_shape_numel(shapes[i]) > 1))
            return xf_infer_refuse(why, why_len, "%s must be a scalar, got shape %s", input_names[i],
                                   xf_infer_text(shapes[i]).s);
    return true;
}

bool xf_nms_problem_init(xf_nms_problem *p, const xf_tensor *const in[5], int center_point_box, char *why,
                         size_t why_len)
{
    const xf_shape *shapes[5];
    for (int i = 0; i < 5; i++)
        shapes[i] = in[i] ? &in[i]->shape : NULL;
    if (!xf_nms_check(shapes, center_point_box, why, why_len))
        return false;
    for (int i = 0; i < 5; i++) {
        if (!in[i])
            continue;
        xf_dtype want = i == 2 ? XF_DT_INT64 : XF_DT_FLOAT;
        if (in[i]->dtype != want)
            return xf_infer_refuse(why, why_len, "%s must be %s, got %s", input_names[i], xf_dtype_name(want),
                                   xf_dtype_name(in[i]->dtype));
        int64_t numel = xf_shape_numel(&in[i]->shape);
        if (numel > 0 && (!in[i]->data || in[i]->nbytes < (size_t)numel * xf_dtype_size(want)))
            return xf_infer_refuse(why, why_len, "%s has no data for its %" PRId64 " elements", input_names[i],
                                   numel);
    }
    *p = (xf_nms_problem){.boxes = in[0]->data,
                          .scores = in[1]->data,
                          .batches = in[0]->shape.dims[0],
                          .classes = in[1]->shape.dims[1],
                          .n_boxes = in[0]->shape.dims[1],
                          .center_point_box = center_point_box == 1};
    /* the scalars, where given (an empty tensor gives none) */
    if (in[2] && xf_shape_numel(&in[2]->shape) == 1) {
        int64_t m = *(const int64_t *)in[2]->data;
        p->max_per_class = m > 0 ? m : 0;
    }
    if (in[3] && xf_shape_numel(&in[3]->shape) == 1)
        p->iou_threshold = *(const float *)in[3]->data;
    p->has_score_threshold = in[4] && xf_shape_numel(&in[4]->shape) == 1;
    if (p->has_score_threshold)
        p->score_threshold = *(const float *)in[4]->data;
    return true;
}

/* [number of selected boxes, 3]: known where every input's value is. */
xf_status xf_infer_nms(xf_infer_ctx *c)
{
    const xf_shape *shapes[5];
    const xf_tensor *values[5];
    bool known = true;
    char why[300];
    for (int i = 0; i < 5; i++) {
        bool has = xf_infer_has(c, i);
        shapes[i] = has ? xf_infer_shape(c, i) : NULL;
        values[i] = has ? xf_infer_value(c, i) : NULL;
        known = known && (!has || values[i]);
    }
    int cpb = c->node->attrs.center_point_box;
    if (!xf_nms_check(shapes, cpb, why, sizeof why))
        return xf_infer_fail(c, XF_ERR_INVALID, "%s", why);
    if (!known)
        return xf_infer_unknown(c);
    xf_nms_problem p;
    if (!xf_nms_problem_init(&p, values, cpb, why, sizeof why))
        return xf_infer_fail(c, XF_ERR_INVALID, "%s", why);
    int64_t count = xf_nms_select(&p, NULL, 0);
    if (count < 0)
        return xf_error_set(c->err, XF_ERR_NOMEM, "out of memory");
    xf_shape out = {.ndim = 2, .dims = {count, 3}};
    xf_infer_set(c, 0, &out);
    return XF_OK;
}
