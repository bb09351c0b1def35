/* cpu_ref QuantizeLinear and DequantizeLinear, per tensor, per axis or
 * blocked (xf_quant_layout says which scale and zero point each element
 * takes), in float arithmetic as ONNX Runtime computes them:
 *     Quantize    y = saturate(round_half_to_even(x / scale) + zero_point)
 *     Dequantize  y = (x - zero_point) * scale
 * (NaN quantizes to 0.)  To float8, Quantize rounds x / scale + zero_point
 * to the format's nearest value instead (saturating unless saturate is 0),
 * and Dequantize reads float8 values as numbers. */
#include "xf_rt_internal.h"

#include <math.h>

#define QUANTIZED (XF_DTM(XF_DT_INT8) | XF_DTM(XF_DT_UINT8) | XF_DTM(XF_DT_INT16) | XF_DTM(XF_DT_UINT16) | XF_DTM_FLOAT8)

typedef struct quant_args {
    const xf_tensor_view *x, *scale, *zero_point, *y; /* zero_point NULL when absent */
    xf_quant_layout l;
    float lo, hi; /* QuantizeLinear: the range of y's type */
} quant_args;

/* The operands of node n, their dtypes and shapes checked. */
static xf_status quant_args_make(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out,
                                 bool quantize, quant_args *q, xf_error *err)
{
    q->x = &in[0];
    q->scale = &in[1];
    q->zero_point = n->n_inputs > 2 && xf_rt_present(&in[2]) ? &in[2] : NULL;
    q->y = &out[0];
    static const float lo[] = {[XF_DT_INT8] = -128, [XF_DT_INT16] = -32768},
                       hi[] = {[XF_DT_INT8] = 127, [XF_DT_UINT8] = 255, [XF_DT_INT16] = 32767, [XF_DT_UINT16] = 65535};
    if ((unsigned)q->y->dtype >= 32 || !((quantize ? QUANTIZED : XF_DTM_FLOATS) & XF_DTM(q->y->dtype)))
        return xf_rt_unsupported(err, &xf_backend_cpu_ref, n, "producing %s", xf_dtype_name(q->y->dtype));
    if (xf_rt_numel(q->x) != xf_rt_numel(q->y))
        return xf_rt_bad_node(err, n, "input and output sizes differ");
    if (quantize && !xf_float8_known(q->y->dtype)) {
        q->lo = lo[q->y->dtype];
        q->hi = hi[q->y->dtype];
    }
    char why[512];
    if (!xf_quant_layout_make(&q->x->shape, &q->scale->shape, q->zero_point ? &q->zero_point->shape : NULL,
                              n->attrs.axis, n->attrs.block_size, &q->l, why, sizeof why))
        return xf_rt_bad_node(err, n, "%s", why);
    return XF_OK;
}

static void quant_run(const quant_args *q, bool quantize, bool saturate)
{
    const xf_quant_layout *l = &q->l;
    bool f8_in = xf_float8_known(q->x->dtype), f8_out = xf_float8_known(q->y->dtype);
    for (int64_t o = 0; o < l->outer; o++)
        for (int64_t d = 0; d < l->dim; d++) {
            int64_t first = (o * l->dim + d) * l->inner;
            int64_t s0 = o * l->outer_stride + d / l->block * l->block_stride;
            for (int64_t i = 0; i < l->inner; i++) {
                int64_t e = first + i, s = s0 + i * l->inner_stride;
                float scale = (float)xf_rt_load_f64(q->scale->dtype, q->scale->data, s);
                double zpf = q->zero_point ? xf_rt_load_f64(q->zero_point->dtype, q->zero_point->data, s) : 0;
                int64_t zp = (int64_t)zpf;
                if (quantize && f8_out) {
                    float x = (float)xf_rt_load_f64(q->x->dtype, q->x->data, e);
                    float v = zpf != 0 ? x / scale + (float)zpf : x / scale; /* -0 stays -0 */
                    ((uint8_t *)q->y->data)[e] = xf_f32_to_float8(q->y->dtype, v, saturate);
                } else if (quantize) {
                    float x = (float)xf_rt_load_f64(q->x->dtype, q->x->data, e);
                    float v = nearbyintf(x / scale) + (float)zp;
                    xf_rt_store_f64(q->y->dtype, q->y->data, e, v < q->lo ? q->lo : v > q->hi ? q->hi : v);
                } else if (f8_in) {
                    double x = xf_rt_load_f64(q->x->dtype, q->x->data, e);
                    xf_rt_store_f64(q->y->dtype, q->y->data, e, (double)((float)(x - zpf) * scale));
                } else {
                    int64_t x = xf_rt_load_i64(q->x->dtype, q->x->data, e);
                    xf_rt_store_f64(q->y->dtype, q->y->data, e, (double)((float)(x - zp) * scale));
                }
            }
        }
}

xf_status xf_ref_quantize(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err)
{
    bool quantize = n->op == XF_OP_QUANTIZE_LINEAR;
    quant_args q;
    xf_status st = quant_args_make(n, in, out, quantize, &q, err);
    if (st == XF_OK)
        quant_run(&q, quantize, !n->attrs.no_saturate);
    return st;
}
