/* ONNX attributes -> xf_attrs for GridSample, and the names export writes:
 *
 *   GridSample      mode (opset 16 to 19: bilinear/nearest/bicubic; from
 *                   opset 20: linear/nearest/cubic) -> grid_mode 0/1/2
 *                   padding_mode (zeros/border/reflection) -> grid_padding
 *                   align_corners (0 or 1) -> grid_align_corners
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
