/* ONNX attributes -> xf_attrs for the image ops:
 *
 *   Col2Im (18+)         dilations pads strides (n_spatial: their common length)
 *   CenterCropPad (18+)  axes (has_axes)
 *   AffineGrid (20+)     align_corners (0 or 1) -> grid_align_corners
 *   DeformConv (19+)     dilations group kernel_shape offset_group pads strides
 *   MaxRoiPool           pooled_shape (required, [height, width]) -> roi_output_h,
 *                        roi_output_w; spatial_scale -> roi_spatial_scale
 *
 * Anything else, lists longer than the block holds (more than 3 spatial
 * dims) or of lengths that disagree, keep the node opaque. */
#include "proto_internal.h"

#include <string.h>

/* A spatial list of `per` entries per spatial dim (pads: 2) into dst;
 * every list of the node gives the same count of spatial dims. */
static bool spatial_list(const Onnx__AttributeProto *at, int per, int64_t *dst, xf_attrs *a, char *why,
                         size_t why_len)
{
    int64_t v[2 * XF_MAX_SPATIAL];
    int n;
    if (!xfp_attr_list(at, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS, at->n_ints, at->ints, sizeof *v, v,
                       (size_t)per * XF_MAX_SPATIAL, &n, why, why_len))
        return false;
    if (n == 0 || n % per || (a->n_spatial && n / per != a->n_spatial))
        return xfp_attr_refuse(why, why_len, "attribute '%s' does not have the spatial lists' length", at->name);
    a->n_spatial = n / per;
    memcpy(dst, v, sizeof *v * (size_t)n);
    return true;
}

bool xfp_image_attr_import(xf_op op, const Onnx__AttributeProto *at, xf_attrs *a, char *why, size_t why_len)
{
    const char *name = at->name;
    bool windowed = op == XF_OP_COL2IM || op == XF_OP_DEFORM_CONV;
#define A(s) (strcmp(name, s) == 0)
    if (windowed && A("dilations"))
        return spatial_list(at, 1, a->dilations, a, why, why_len);
    if (windowed && A("strides"))
        return spatial_list(at, 1, a->strides, a, why, why_len);
    if (windowed && A("pads"))
        return spatial_list(at, 2, a->pads, a, why, why_len);
    if (op == XF_OP_DEFORM_CONV && A("kernel_shape"))
        return spatial_list(at, 1, a->kernel, a, why, why_len);
    if (op == XF_OP_DEFORM_CONV && (A("group") || A("offset_group")))
        return xfp_attr_int(at, 1, INT32_MAX, A("group") ? &a->group : &a->offset_group, why, why_len);
    if (op == XF_OP_CENTER_CROP_PAD && A("axes"))
        return (a->has_axes = xfp_attr_list(at, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS, at->n_ints, at->ints,
                                            sizeof *a->axes, a->axes, XF_MAX_DIMS, &a->n_axes, why, why_len));
    if (op == XF_OP_AFFINE_GRID && A("align_corners"))
        return xfp_attr_int32(at, 0, 1, &a->grid_align_corners, why, why_len);
    if (op == XF_OP_MAX_ROI_POOL && A("spatial_scale"))
        return xfp_attr_float(at, &a->roi_spatial_scale, why, why_len);
    if (op == XF_OP_MAX_ROI_POOL && A("pooled_shape")) {
        int64_t v[2];
        int n;
        if (!xfp_attr_list(at, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS, at->n_ints, at->ints, sizeof *v, v, 2,
                           &n, why, why_len))
            return false;
        if (n != 2 || v[0] < 1 || v[1] < 1)
            return xfp_attr_refuse(why, why_len, "attribute '%s' is not two positive extents", name);
        a->roi_output_h = v[0];
        a->roi_output_w = v[1];
        return true;
    }
#undef A
    return xfp_attr_refuse(why, why_len, "attribute '%s' is not modelled", name);
}

bool xfp_image_attrs_finish(xf_op op, int64_t opset, const xf_attrs *a, char *why, size_t why_len)
{
    int64_t since = op == XF_OP_AFFINE_GRID ? 20 : op == XF_OP_DEFORM_CONV ? 19 : op == XF_OP_MAX_ROI_POOL ? 1 : 18;
    if (opset < since)
        return xfp_attr_refuse(why, why_len, "the op before its opset (%s)", op == XF_OP_AFFINE_GRID ? "20"
                                                                            : op == XF_OP_DEFORM_CONV ? "19" : "18");
    if (op == XF_OP_MAX_ROI_POOL && a->roi_output_h < 1)
        return xfp_attr_refuse(why, why_len, "no pooled_shape attribute", NULL);
    return true;
}
