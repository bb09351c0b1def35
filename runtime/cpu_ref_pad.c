/* cpu_ref's Pad and CenterCropPad: the constant, reflect, edge and wrap
 * modes, negative pads cropping, row by row of the last dim, on raw
 * elements of any fixed size (every dtype by the same code). */
#include "xf_rt_internal.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Maps a padded coordinate back into [0, dim) for the reflect, edge and
 * wrap (opset 19: the other end's elements, as numpy's wrap) modes. */
static int64_t pad_source(xf_pad_mode mode, int64_t i, int64_t dim)
{
    if (mode == XF_PAD_EDGE)
        return i < 0 ? 0 : i > dim - 1 ? dim - 1 : i;
    if (mode == XF_PAD_WRAP) /* within one period of the dim without dividing, as most pads are */
        return i < 0 && i >= -dim ? i + dim : i >= dim && i < 2 * dim ? i - dim : (i % dim + dim) % dim;
    if (dim == 1)
        return 0;
    if (i < 0 && i > -dim)
        return -i;
    if (i >= dim && i < 2 * dim - 1)
        return 2 * (dim - 1) - i;
    int64_t period = 2 * (dim - 1); /* reflect without repeating the edge */
    i %= period;
    i += i < 0 ? period : 0;
    return i < dim ? i : period - i;
}

/* Element j of an output row of the last dim, outside x's row xrow (of
 * w elements) at begin b: the element pad_source maps it to. */
static void pad_outside(char *yrow, const char *xrow, int64_t j, int64_t b, int64_t w, xf_pad_mode mode, size_t es)
{
    int64_t src = pad_source(mode, j - b, w);
    switch (es) { /* a call to memcpy per element took most of the time */
    case 1: ((uint8_t *)yrow)[j] = ((const uint8_t *)xrow)[src]; break;
    case 2: ((uint16_t *)yrow)[j] = ((const uint16_t *)xrow)[src]; break;
    case 4: ((uint32_t *)yrow)[j] = ((const uint32_t *)xrow)[src]; break;
    case 8: ((uint64_t *)yrow)[j] = ((const uint64_t *)xrow)[src]; break;
    default: memcpy(yrow + j * (int64_t)es, xrow + src * (int64_t)es, es);
    }
}

/* count copies of the constant value (es bytes; NULL: zeros) from dst:
 * one memset when its bytes are all zero, else copies doubling in
 * length. */
static void pad_constant_run(char *dst, int64_t count, const unsigned char *value, size_t es)
{
    if (count <= 0)
        return;
    bool zero = true;
    for (size_t k = 0; value && k < es; k++)
        zero = zero && value[k] == 0;
    size_t total = (size_t)count * es;
    if (zero) {
        memset(dst, 0, total);
        return;
    }
    memcpy(dst, value, es);
    for (size_t done = es; done < total; done *= 2)
        memcpy(dst + done, dst, done < total - done ? done : total - done);
}

/* y[i] = x[i - begin] (begin negative: a crop); outside x the constant
 * value, or (reflect, edge) the element pad_source maps it to.  Row by row
 * of the last dim: the part inside x in one copy, a constant's runs in
 * one fill each. */
static void pad_rows(const xf_tensor_view *x, const xf_tensor_view *y, const int64_t *begin, xf_pad_mode mode,
                     const unsigned char *value, size_t es)
{
    int rank = x->shape.ndim, last = rank - 1;
    if (rank == 0) {
        if (xf_rt_numel(y) > 0)
            memcpy(y->data, x->data, es);
        return;
    }
    int64_t in_strides[XF_MAX_DIMS], coord[XF_MAX_DIMS] = {0};
    xf_rt_dense_strides(&x->shape, in_strides);
    int64_t w_in = x->shape.dims[last], w_out = y->shape.dims[last], b = begin[last];
    if (w_out == 0)
        return;
    int64_t rows = xf_rt_numel(y) / w_out;
    int64_t lo = b < 0 ? 0 : b > w_out ? w_out : b, hi = b + w_in < lo ? lo : b + w_in > w_out ? w_out : b + w_in;
    for (int64_t r = 0; r < rows; r++) {
        char *yrow = (char *)y->data + r * w_out * (int64_t)es;
        int64_t off = 0;
        bool outside = false;
        for (int d = 0; d < last && !outside; d++) {
            int64_t c = coord[d] - begin[d];
            if (c < 0 || c >= x->shape.dims[d]) {
                outside = mode == XF_PAD_CONSTANT;
                c = outside ? 0 : pad_source(mode, c, x->shape.dims[d]);
            }
            off += c * in_strides[d];
        }
        if (outside) { /* no row of x here */
            pad_constant_run(yrow, w_out, value, es);
        } else {
            const char *xrow = x->data ? (const char *)x->data + off * (int64_t)es : NULL; /* NULL: x empty */
            if (mode == XF_PAD_CONSTANT) {
                pad_constant_run(yrow, lo, value, es);
                pad_constant_run(yrow + hi * (int64_t)es, w_out - hi, value, es);
            } else {
                for (int64_t j = 0; j < lo; j++)
                    pad_outside(yrow, xrow, j, b, w_in, mode, es);
                for (int64_t j = hi; j < w_out; j++)
                    pad_outside(yrow, xrow, j, b, w_in, mode, es);
            }
            if (hi > lo)
                memcpy(yrow + lo * (int64_t)es, xrow + (lo - b) * (int64_t)es, (size_t)(hi - lo) * es);
        }
        for (int d = last - 1; d >= 0 && ++coord[d] == y->shape.dims[d]; d--)
            coord[d] = 0;
    }
}

/* pad_rows over x and y with the trailing dims that no pad touches taken
 * as one element (TensorFlow's exports pad [1, 172, 264, 1] along 264: a
 * row of 1 element each, a copy per element, 0.7 ms; now rows of 264).
 * The constant, where it is not all zero bytes, is repeated to that size;
 * false where memory for it runs out. */
static bool pad_fill(const xf_tensor_view *x, const xf_tensor_view *y, const int64_t *begin, xf_pad_mode mode,
                     const unsigned char *value, size_t value_size)
{
    if (xf_rt_numel(y) == 0)
        return true;
    int rank = x->shape.ndim, kept = rank;
    int64_t inner = 1;
    while (kept > 1 && begin[kept - 1] == 0 && x->shape.dims[kept - 1] == y->shape.dims[kept - 1]) {
        kept--;
        inner *= x->shape.dims[kept];
    }
    if (kept == rank || inner > (int64_t)(SIZE_MAX / value_size)) {
        pad_rows(x, y, begin, mode, value, value_size);
        return true;
    }
    xf_tensor_view xv = *x, yv = *y;
    xv.shape.ndim = yv.shape.ndim = kept;
    size_t es = value_size * (size_t)inner;
    bool zero = true;
    for (size_t k = 0; k < value_size; k++)
        zero = zero && value[k] == 0;
    unsigned char *wide = zero || inner == 1 ? NULL : malloc(es);
    if (!zero && inner > 1 && !wide)
        return false;
    for (int64_t i = 0; wide && i < inner; i++)
        memcpy(wide + (size_t)i * value_size, value, value_size);
    /* (value_size bytes of value, not es: zeros are passed as NULL) */
    pad_rows(&xv, &yv, begin, mode, zero ? NULL : wide ? wide : value, es);
    free(wide);
    return true;
}

/* Pad: pads (begins then ends) and the constant from the attributes (opset
 * < 11) or inputs 1-3 (axes from opset 18).  Negative pads crop. */
xf_status xf_ref_pad(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out,
                     xf_error *err)
{
    const xf_attrs *a = &n->attrs;
    const xf_tensor_view *x = &in[0], *y = &out[0];
    int rank = x->shape.ndim;
    int64_t begin[XF_MAX_DIMS] = {0}, end[XF_MAX_DIMS] = {0};
    size_t es = xf_dtype_size(x->dtype);
    unsigned char value[16] = {0};
    if (a->has_pads) {
        if (a->n_pads != 2 * rank)
            return xf_rt_bad_node(err, n, "%d pads for rank %d", a->n_pads, rank);
        for (int d = 0; d < rank; d++) {
            begin[d] = a->pad_pads[d];
            end[d] = a->pad_pads[rank + d];
        }
        xf_rt_store_f64(x->dtype, value, 0, a->pad_value);
    } else {
        const xf_tensor_view *pads = &in[1];
        const xf_tensor_view *axes = n->n_inputs > 3 && xf_rt_present(&in[3]) ? &in[3] : NULL;
        int64_t n_ax = axes ? xf_rt_numel(axes) : rank;
        if (n->n_inputs < 2 || xf_rt_numel(pads) != 2 * n_ax)
            return xf_rt_bad_node(err, n, "pads must have two entries per padded axis");
        for (int64_t i = 0; i < n_ax; i++) {
            int64_t ax = axes ? xf_rt_load_i64(axes->dtype, axes->data, i) : i;
            int d = xf_rt_axis(ax, rank);
            if (d < 0)
                return xf_rt_bad_node(err, n, "axis %lld out of range", (long long)ax);
            begin[d] = xf_rt_load_i64(pads->dtype, pads->data, i);
            end[d] = xf_rt_load_i64(pads->dtype, pads->data, n_ax + i);
        }
        if (n->n_inputs > 2 && xf_rt_present(&in[2]) && xf_rt_numel(&in[2]) > 0) {
            if (in[2].dtype != x->dtype)
                return xf_rt_bad_node(err, n, "constant_value is %s, data %s", xf_dtype_name(in[2].dtype),
                                      xf_dtype_name(x->dtype));
            memcpy(value, in[2].data, es);
        }
    }
    if (y->shape.ndim != rank)
        return xf_rt_bad_node(err, n, "input and output ranks differ");
    for (int d = 0; d < rank; d++) {
        if (y->shape.dims[d] != x->shape.dims[d] + begin[d] + end[d])
            return xf_rt_bad_node(err, n, "output dimension %d is not input + pads", d);
        if (a->pad_mode != XF_PAD_CONSTANT && x->shape.dims[d] == 0 && y->shape.dims[d] > 0)
            return xf_rt_bad_node(err, n, "cannot reflect or extend an empty dimension %d", d);
    }
    if (!pad_fill(x, y, begin, a->pad_mode, value, es))
        return xf_error_set(err, XF_ERR_NOMEM, "out of memory in Pad");
    return XF_OK;
}

/* CenterCropPad: each dim whose extent changes is cropped or padded with
 * zeros around its centre, the odd element of the difference at the end
 * (ONNX's reference): Pad with the begin pads that gives, negative ones
 * cropping. */
xf_status xf_ref_center_crop_pad(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out,
                                 xf_error *err)
{
    const xf_shape *xs = &in[0].shape, *ys = &out[0].shape;
    if (ys->ndim != xs->ndim)
        return xf_rt_bad_node(err, n, "input and output ranks differ");
    int64_t begin[XF_MAX_DIMS];
    for (int d = 0; d < xs->ndim; d++)
        begin[d] = ys->dims[d] >= xs->dims[d] ? (ys->dims[d] - xs->dims[d]) / 2 : -((xs->dims[d] - ys->dims[d]) / 2);
    static const unsigned char zero[16];
    pad_fill(&in[0], &out[0], begin, XF_PAD_CONSTANT, zero, xf_dtype_size(in[0].dtype)); /* zero: no memory */
    return XF_OK;
}
