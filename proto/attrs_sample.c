/* ONNX attributes -> xf_attrs for GridSample and Resize, and the names
 * export writes:
 *
 *   GridSample      mode (opset 16 to 19: bilinear/nearest/bicubic; from
 *                   opset 20: linear/nearest/cubic) -> grid_mode 0/1/2
 *                   padding_mode (zeros/border/reflection) -> grid_padding
 *                   align_corners (0 or 1) -> grid_align_corners
 *   Resize          mode, coordinate_transformation_mode, nearest_mode,
 *                   keep_aspect_ratio_policy -> resize_* (the tables'
 *                   indices); exclude_outside, antialias; axes (has_axes);
 *                   cubic_coeff_a -> alpha, extrapolation_value -> beta
 *                   (opset 10's form is completed in attrs_import.c)
 *
 * Anything else, a mode named as the other opsets name it among them,
 * keeps the node opaque. */
#include "proto_internal.h"

#include <string.h>

const char *const xfp_grid_paddings[3] = {"zeros", "border", "reflection"};

const char *const *xfp_grid_modes(int64_t opset)
{
    static const char *const v16[3] = {"bilinear", "nearest", "bicubic"};
    static const char *const v20[3] = {"linear", "nearest", "cubic"};
    return opset < 20 ? v16 : v20;
}

bool xfp_grid_sample_attr_import(const Onnx__AttributeProto *at, int64_t opset, xf_attrs *a, char *why,
                                 size_t why_len)
{
    const char *name = at->name;
    if (strcmp(name, "mode") == 0)
        return xfp_attr_enum(at, xfp_grid_modes(opset), 3, &a->grid_mode, why, why_len);
    if (strcmp(name, "padding_mode") == 0)
        return xfp_attr_enum(at, xfp_grid_paddings, 3, &a->grid_padding, why, why_len);
    if (strcmp(name, "align_corners") == 0)
        return xfp_attr_int32(at, 0, 1, &a->grid_align_corners, why, why_len);
    return xfp_attr_refuse(why, why_len, "attribute '%s' is not modelled", name);
}

const char *const xfp_resize_modes[3] = {"nearest", "linear", "cubic"};
const char *const xfp_resize_coords[6] = {"half_pixel",         "asymmetric", "align_corners", "pytorch_half_pixel",
                                          "tf_crop_and_resize", "half_pixel_symmetric"};
const char *const xfp_resize_nearest[4] = {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"};
const char *const xfp_resize_keep[3] = {"stretch", "not_larger", "not_smaller"};

bool xfp_resize_attr_import(const Onnx__AttributeProto *at, xf_attrs *a, char *why, size_t why_len)
{
    const char *name = at->name;
    int i;
    if (strcmp(name, "mode") == 0)
        return xfp_attr_enum(at, xfp_resize_modes, 3, &a->resize_mode, why, why_len);
    if (strcmp(name, "coordinate_transformation_mode") == 0)
        return xfp_attr_enum(at, xfp_resize_coords, 6, &a->resize_coord, why, why_len);
    if (strcmp(name, "nearest_mode") == 0)
        return xfp_attr_enum(at, xfp_resize_nearest, 4, &a->resize_nearest, why, why_len);
    if (strcmp(name, "keep_aspect_ratio_policy") == 0)
        return xfp_attr_enum(at, xfp_resize_keep, 3, &a->resize_keep, why, why_len);
    if (strcmp(name, "exclude_outside") == 0 || strcmp(name, "antialias") == 0) {
        if (!xfp_attr_int32(at, INT32_MIN, INT32_MAX, &i, why, why_len))
            return false;
        *(name[0] == 'a' ? &a->resize_antialias : &a->resize_exclude) = i != 0;
        return true;
    }
    if (strcmp(name, "axes") == 0)
        return (a->has_axes = xfp_attr_list(at, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS, at->n_ints, at->ints,
                                            sizeof *a->axes, a->axes, XF_MAX_DIMS, &a->n_axes, why, why_len));
    if (strcmp(name, "cubic_coeff_a") == 0)
        return xfp_attr_float(at, &a->alpha, why, why_len);
    if (strcmp(name, "extrapolation_value") == 0)
        return xfp_attr_float(at, &a->beta, why, why_len);
    return xfp_attr_refuse(why, why_len, "attribute '%s' is not modelled", name);
}
