/* Shape rules of the experimental ops of opsets 1 to 9 that need more than
 * the input's shape: ImageScaler (one bias per channel of an NCHW image)
 * and Crop (the image less its borders, or a window of scale's size at the
 * top-left border), as ONNX Runtime checks them. */
#include "shape_infer_impl.h"

#include <inttypes.h>

xf_status xf_infer_image_scaler(xf_infer_ctx *c)
{
    const xf_shape *x = xf_infer_shape(c, 0);
    const xf_tensor *bias = c->node->attrs.value;
    if (x->ndim != 4)
        return xf_infer_fail(c, XF_ERR_INVALID, "input must have shape [N, C, H, W], got %s", xf_infer_text(x).s);
    if (bias && xf_tensor_numel(bias) != x->dims[1])
        return xf_infer_fail(c, XF_ERR_INVALID, "bias has %" PRId64 " values for %" PRId64 " channels",
                             xf_tensor_numel(bias), x->dims[1]);
    xf_infer_set(c, 0, x);
    return XF_OK;
}

xf_status xf_infer_crop(xf_infer_ctx *c)
{
    const xf_shape *x = xf_infer_shape(c, 0);
    const xf_attrs *a = &c->node->attrs;
    if (x->ndim != 4)
        return xf_infer_fail(c, XF_ERR_INVALID, "input must have shape [N, C, H, W], got %s", xf_infer_text(x).s);
    int64_t left = a->pads[0], top = a->pads[1], right = a->pads[2], bottom = a->pads[3];
    int64_t h = x->dims[2], w = x->dims[3];
    if (left < 0 || top < 0 || right < 0 || bottom < 0 || top > h || left > w || bottom > h - top ||
        right > w - left)
        return xf_infer_fail(c, XF_ERR_INVALID, "border (%" PRId64 ", %" PRId64 ", %" PRId64 ", %" PRId64
                             ") does not fit in %" PRId64 "x%" PRId64, left, top, right, bottom, h, w);
    xf_shape out = *x;
    out.dims[2] = h - top - bottom;
    out.dims[3] = w - left - right;
    if (a->n_spatial == 2) {
        if (a->kernel[0] < 0 || a->kernel[1] < 0 || a->kernel[0] > h - top || a->kernel[1] > w - left)
            return xf_infer_fail(c, XF_ERR_INVALID, "scale %" PRId64 "x%" PRId64 " at (%" PRId64 ", %" PRId64
                                 ") does not fit in %" PRId64 "x%" PRId64, a->kernel[0], a->kernel[1], top, left, h, w);
        out.dims[2] = a->kernel[0];
        out.dims[3] = a->kernel[1];
    }
    xf_infer_set(c, 0, &out);
    return XF_OK;
}
