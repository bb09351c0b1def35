/* cpu_ref kernels of the experimental ops of opsets 1 to 9 that are not
 * plain elementwise functions (those are in cpu_ref_elementwise.c):
 * ImageScaler, scale * x + bias[c] over an NCHW image, computed in double
 * and rounded once; and Crop, which copies the window its shape rule
 * (core/shape_infer_legacy.c) sized, from the top and left borders on. */
#include "xf_rt_internal.h"

#include <string.h>

xf_status xf_ref_image_scaler(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err)
{
    (void)err;
    const xf_tensor_view *x = &in[0], *y = &out[0];
    const xf_tensor *bias = n->attrs.value;
    int64_t chans = x->shape.dims[1], plane = x->shape.dims[2] * x->shape.dims[3];
    int64_t numel = xf_rt_numel(x);
    double scale = n->attrs.alpha;
    for (int64_t i = 0; i < numel; i++) {
        int64_t ch = plane ? i / plane % chans : 0;
        double b = bias ? ((const float *)bias->data)[ch] : 0.0;
        xf_rt_store_f64(y->dtype, y->data, i, scale * xf_rt_load_f64(x->dtype, x->data, i) + b);
    }
    return XF_OK;
}

xf_status xf_ref_crop(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err)
{
    (void)err;
    const xf_tensor_view *x = &in[0], *y = &out[0];
    const xf_shape *xs = &x->shape, *ys = &y->shape;
    size_t size = xf_dtype_size(x->dtype);
    int64_t top = n->attrs.pads[1], left = n->attrs.pads[0];
    int64_t images = ys->dims[0] * ys->dims[1], rows = ys->dims[2], row_bytes = ys->dims[3] * (int64_t)size;
    if (row_bytes == 0)
        return XF_OK;
    for (int64_t p = 0; p < images; p++)
        for (int64_t r = 0; r < rows; r++) {
            int64_t from = (p * xs->dims[2] + top + r) * xs->dims[3] + left;
            memcpy((char *)y->data + (size_t)((p * rows + r) * row_bytes), (const char *)x->data + (size_t)from * size,
                   (size_t)row_bytes);
        }
    return XF_OK;
}
