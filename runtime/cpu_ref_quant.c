/* cpu_ref quantization kernels, in float arithmetic as ONNX Runtime
 * computes them.  QuantizeLinear and DequantizeLinear, per tensor, per
 * axis or blocked (xf_quant_layout says which scale and zero point each
 * element takes):
 *     Quantize    y = saturate(round_half_to_even(x / scale) + zero_point)
 *     Dequantize  y = (x - zero_point) * scale
 * (NaN quantizes to 0.)  To float8 and float4e2m1, Quantize rounds
 * x / scale + zero_point to the format's nearest value instead (float8
 * saturating unless saturate is 0, float4 always), and Dequantize reads
 * such values as numbers.  The 4- and 2-bit integers saturate to their
 * ranges as the 8- and 16-bit ones do.  DynamicQuantizeLinear
 * quantizes to uint8 with a scale and zero point from x's range, and the
 * integer matrix products (MatMulInteger, QLinearMatMul) sum in int32 and
 * requantize as Quantize does. */
#include "xf_rt_internal.h"

#include <math.h>
#include <stdlib.h>

float xf_rt_quantize_round(float v, float zero_point, xf_dtype t)
{
    static const float lo[] = {[XF_DT_INT8] = -128, [XF_DT_INT16] = -32768, [XF_DT_INT4] = -8, [XF_DT_INT2] = -2},
                       hi[] = {[XF_DT_INT8] = 127,  [XF_DT_UINT8] = 255, [XF_DT_INT16] = 32767, [XF_DT_UINT16] = 65535,
                               [XF_DT_UINT4] = 15,  [XF_DT_INT4] = 7,    [XF_DT_UINT2] = 3,     [XF_DT_INT2] = 1};
    float r = nearbyintf(v) + zero_point;
    if ((unsigned)t >= sizeof hi / sizeof *hi || !hi[t])
        return r;
    return r < lo[t] ? lo[t] : r > hi[t] ? hi[t] : r;
}

#define QUANTIZED                                                                                                  \
    (XF_DTM(XF_DT_INT8) | XF_DTM(XF_DT_UINT8) | XF_DTM(XF_DT_INT16) | XF_DTM(XF_DT_UINT16) | XF_DTM_FLOAT8 |        \
     XF_DTM_PACKED)

/* The float formats a value quantizes to by rounding to the format's
 * nearest value, not by rounding to an integer. */
static bool float_code(xf_dtype t) { return xf_float8_known(t) || t == XF_DT_FLOAT4E2M1; }

typedef struct quant_args {
    const xf_tensor_view *x, *scale, *zero_point, *y; /* zero_point NULL when absent */
    xf_quant_layout l;
} quant_args;

/* The operands of node n, their dtypes and shapes checked. */
static xf_status quant_args_make(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out,
                                 bool quantize, quant_args *q, xf_error *err)
{
    q->x = &in[0];
    q->scale = &in[1];
    q->zero_point = n->n_inputs > 2 && xf_rt_present(&in[2]) ? &in[2] : NULL;
    q->y = &out[0];
    if ((unsigned)q->y->dtype >= 32 || !((quantize ? QUANTIZED : XF_DTM_FLOATS) & XF_DTM(q->y->dtype)))
        return xf_rt_unsupported(err, &xf_backend_cpu_ref, n, "producing %s", xf_dtype_name(q->y->dtype));
    if (xf_rt_numel(q->x) != xf_rt_numel(q->y))
        return xf_rt_bad_node(err, n, "input and output sizes differ");
    char why[512];
    if (!xf_quant_layout_make(&q->x->shape, &q->scale->shape, q->zero_point ? &q->zero_point->shape : NULL,
                              n->attrs.axis, n->attrs.block_size, &q->l, why, sizeof why))
        return xf_rt_bad_node(err, n, "%s", why);
    return XF_OK;
}

/* Element e of an integer tensor of type t (the 8- and 16-bit integers and
 * the packed ones), inline for the dequantizing loop below. */
static inline int32_t int_at(xf_dtype t, const void *p, int64_t e)
{
    switch (t) {
    case XF_DT_INT8: return ((const int8_t *)p)[e];
    case XF_DT_UINT8: return ((const uint8_t *)p)[e];
    case XF_DT_INT16: return ((const int16_t *)p)[e];
    case XF_DT_UINT16: return ((const uint16_t *)p)[e];
    case XF_DT_INT32: return ((const int32_t *)p)[e];
    case XF_DT_UINT4:
    case XF_DT_UINT2: return (int32_t)xf_rt_packed_code(t, p, e);
    case XF_DT_INT4: return (int32_t)(xf_rt_packed_code(t, p, e) ^ 8) - 8;
    default: return (int32_t)(xf_rt_packed_code(t, p, e) ^ 2) - 2; /* INT2 */
    }
}

/* Dequantize of integers to float with float scales: the arithmetic of the
 * loop below, (float)(x - zero_point) * scale, without its per-element
 * conversions (the zero points read once). */
static bool dequantize_ints(const quant_args *q)
{
    const uint32_t ints = XF_DTM(XF_DT_INT8) | XF_DTM(XF_DT_UINT8) | XF_DTM(XF_DT_INT16) | XF_DTM(XF_DT_UINT16) |
                          XF_DTM(XF_DT_INT32) | XF_DTM_PACKED_INTS;
    if (q->y->dtype != XF_DT_FLOAT || q->scale->dtype != XF_DT_FLOAT || !(XF_DTM(q->x->dtype) & ints) ||
        (q->zero_point && !(XF_DTM(q->zero_point->dtype) & ints)))
        return false;
    int64_t n_params = xf_rt_numel(q->scale);
    int32_t *zp = calloc((size_t)(n_params > 0 ? n_params : 1), sizeof *zp);
    if (!zp)
        return false; /* the loop below, which needs no memory */
    for (int64_t s = 0; q->zero_point && s < n_params; s++)
        zp[s] = int_at(q->zero_point->dtype, q->zero_point->data, s);
    const xf_quant_layout *l = &q->l;
    const float *scale = q->scale->data;
    float *y = q->y->data;
    xf_dtype t = q->x->dtype;
    for (int64_t o = 0; o < l->outer; o++)
        for (int64_t d = 0; d < l->dim; d++) {
            int64_t first = (o * l->dim + d) * l->inner;
            int64_t s0 = o * l->outer_stride + d / l->block * l->block_stride;
            for (int64_t i = 0; i < l->inner; i++) {
                int64_t s = s0 + i * l->inner_stride;
                y[first + i] = (float)(int_at(t, q->x->data, first + i) - zp[s]) * scale[s];
            }
        }
    free(zp);
    return true;
}

static void quant_run(const quant_args *q, bool quantize, bool saturate)
{
    if (!quantize && dequantize_ints(q))
        return;
    const xf_quant_layout *l = &q->l;
    bool f8_in = float_code(q->x->dtype), f8_out = float_code(q->y->dtype);
    if (quantize && xf_dtype_size(q->y->dtype) == 0 && l->outer * l->dim * l->inner > 0)
        memset(q->y->data, 0, xf_rt_bytes(q->y)); /* packed: the spare bits of the last byte stay 0 */
    for (int64_t o = 0; o < l->outer; o++)
        for (int64_t d = 0; d < l->dim; d++) {
            int64_t first = (o * l->dim + d) * l->inner;
            int64_t s0 = o * l->outer_stride + d / l->block * l->block_stride;
            for (int64_t i = 0; i < l->inner; i++) {
                int64_t e = first + i, s = s0 + i * l->inner_stride;
                float scale = (float)xf_rt_load_f64(q->scale->dtype, q->scale->data, s);
                double zpf = q->zero_point ? xf_rt_load_f64(q->zero_point->dtype, q->zero_point->data, s) : 0;
                int64_t zp = f8_in || f8_out ? 0 : (int64_t)zpf; /* a float8 zero point (NaN too) is read as zpf */
                if (quantize && f8_out) {
                    float x = (float)xf_rt_load_f64(q->x->dtype, q->x->data, e);
                    float v = zpf != 0 ? x / scale + (float)zpf : x / scale; /* -0 stays -0 */
                    if (q->y->dtype == XF_DT_FLOAT4E2M1) /* which always saturates */
                        xf_rt_store_f64(q->y->dtype, q->y->data, e, v);
                    else
                        ((uint8_t *)q->y->data)[e] = xf_f32_to_float8(q->y->dtype, v, saturate);
                } else if (quantize) {
                    float x = (float)xf_rt_load_f64(q->x->dtype, q->x->data, e);
                    xf_rt_store_f64(q->y->dtype, q->y->data, e,
                                    xf_rt_quantize_round(x / scale, (float)zp, q->y->dtype));
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

/* DynamicQuantizeLinear: uint8 y with y_scale = (max - min) / 255 over x's
 * range widened to hold 0 (1 when that range is empty: ONNX Runtime's
 * choice where ONNX divides by zero) and y_zero_point = round(-min /
 * y_scale) saturated; NaN elements take no part in the range. */
void xf_rt_dynamic_qparams(const xf_node *n, const xf_tensor_view *out, float lo, float hi, float *scale, float *zp)
{
    *scale = hi == lo ? 1.0f : (hi - lo) / 255.0f;
    *zp = xf_rt_quantize_round(0.0f - lo / *scale, 0.0f, XF_DT_UINT8);
    for (int k = 1; n && k < n->n_outputs; k++)
        if (xf_rt_present(&out[k]))
            xf_rt_store_f64(out[k].dtype, out[k].data, 0, k == 1 ? *scale : *zp);
}

xf_status xf_ref_dynamic_quantize(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err)
{
    const float *x = in[0].data;
    int64_t count = xf_rt_numel(&in[0]);
    if (in[0].dtype != XF_DT_FLOAT || xf_rt_numel(&out[0]) != count)
        return xf_rt_bad_node(err, n, "x must be float and y of x's size");
    float lo = 0, hi = 0, scale, zp;
    for (int64_t i = 0; i < count; i++) {
        lo = x[i] < lo ? x[i] : lo;
        hi = x[i] > hi ? x[i] : hi;
    }
    xf_rt_dynamic_qparams(n, out, lo, hi, &scale, &zp);
    for (int64_t i = 0; i < count; i++)
        xf_rt_store_f64(out[0].dtype, out[0].data, i, xf_rt_quantize_round(x[i] / scale, zp, XF_DT_UINT8));
    return XF_OK;
}

/* A scale or zero point of a matrix product's operand (v NULL: absent,
 * 0) and how it applies (see xf_qparam_form); lines is the number of rows
 * (of a) or columns (of b) of each matrix. */
typedef struct qparam {
    const xf_tensor_view *v;
    xf_qparam_form form;
    int64_t lines;
} qparam;

static xf_status qparam_make(const xf_node *n, const xf_tensor_view *operand, const xf_tensor_view *v, bool columns,
                             int64_t lines, qparam *p, xf_error *err)
{
    char why[512];
    *p = (qparam){.v = v && xf_rt_present(v) ? v : NULL, .lines = lines};
    if (p->v && !xf_qmatmul_param(&operand->shape, &p->v->shape, columns, &p->form, why, sizeof why))
        return xf_rt_bad_node(err, n, "%s", why);
    return XF_OK;
}

/* The parameter of row or column r of the operand's matrix q. */
static double qparam_at(const qparam *p, int64_t q, int64_t r)
{
    if (!p->v)
        return 0;
    int64_t i = p->form == XF_QPARAM_TENSOR ? 0 : p->form == XF_QPARAM_VECTOR ? r : q * p->lines + r;
    return xf_rt_load_f64(p->v->dtype, p->v->data, i);
}

/* The operand's matrices (rows x cols each) minus their zero points, as
 * int32 (NULL when out of memory). */
static int32_t *centered(const xf_tensor_view *v, const qparam *zp, int64_t rows, int64_t cols, bool columns)
{
    int64_t count = xf_rt_numel(v);
    int32_t *c = malloc(sizeof *c * (size_t)(count > 0 ? count : 1));
    for (int64_t e = 0; c && e < count; e++)
        c[e] = (int32_t)(xf_rt_load_i64(v->dtype, v->data, e) -
                         (int64_t)qparam_at(zp, e / (rows * cols), columns ? e % cols : e / cols % rows));
    return c;
}

#define Q8 (XF_DTM(XF_DT_INT8) | XF_DTM(XF_DT_UINT8))

/* MatMulInteger (A, B, a_zero_point, b_zero_point): the int32 products of
 * (A - a_zero_point) and (B - b_zero_point), numpy's matmul shapes;
 * QLinearMatMul (a, a_scale, a_zero_point, b, b_scale, b_zero_point,
 * y_scale, y_zero_point) requantizes them with a_scale * b_scale /
 * y_scale.  a's parameters go per tensor or per row, b's per tensor or per
 * column; sums wrap to 32 bits as int32 accumulators do. */
xf_status xf_ref_qmatmul(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err)
{
    bool q = n->op == XF_OP_QLINEAR_MATMUL;
    int bi = q ? 3 : 1;
    const xf_tensor_view operands[2] = {in[0], in[bi]};
    const xf_tensor_view *opt[8] = {0};
    for (int k = 1; k < n->n_inputs && k < 8; k++)
        opt[k] = k != bi && xf_rt_present(&in[k]) ? &in[k] : NULL;
    for (int k = 0; k < n->n_inputs; k++)
        if (k == 0 || k == bi || (opt[k] && (k == 2 || k == 5 || k == 7 || (!q && k == 3))))
            if ((unsigned)in[k].dtype >= 32 || !(XF_DTM(in[k].dtype) & Q8))
                return xf_rt_unsupported(err, &xf_backend_cpu_ref, n, "with input #%d of type %s", k,
                                         xf_dtype_name(in[k].dtype));
    xf_rt_matmul mm;
    xf_status st = xf_rt_matmul_geometry(n, operands, out, &mm, err);
    qparam a_zp, b_zp, a_scale, b_scale;
    if (st == XF_OK)
        st = qparam_make(n, &in[0], opt[2], false, mm.m, &a_zp, err);
    if (st == XF_OK)
        st = qparam_make(n, &in[bi], opt[q ? 5 : 3], true, mm.n, &b_zp, err);
    if (st == XF_OK)
        st = qparam_make(n, &in[0], opt[1], false, mm.m, &a_scale, err);
    if (st == XF_OK)
        st = qparam_make(n, &in[bi], opt[4], true, mm.n, &b_scale, err);
    if (st == XF_OK && q && (xf_rt_numel(opt[6]) != 1 || xf_rt_numel(opt[7]) != 1))
        st = xf_rt_bad_node(err, n, "y_scale and y_zero_point must be scalars");
    if (st != XF_OK)
        return st;
    int64_t m = mm.m, k = mm.k, nn = mm.n;
    int32_t *a = centered(&in[0], &a_zp, m, k, false), *b = centered(&in[bi], &b_zp, k, nn, true);
    if (!a || !b) {
        free(a);
        free(b);
        return xf_error_set(err, XF_ERR_NOMEM, "out of memory in %s", xf_op_name(n->op));
    }
    xf_rt_iter it;
    xf_rt_iter_init(&it, &mm.batch);
    xf_rt_iter_add(&it, mm.a_stride, 0);
    xf_rt_iter_add(&it, mm.b_stride, 0);
    for (int64_t bt = 0; bt < mm.n_batch; bt++, xf_rt_iter_next(&it))
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < nn; j++) {
                int64_t acc = 0, y = (bt * m + i) * nn + j;
                for (int64_t t = 0; t < k; t++)
                    acc += (int64_t)a[it.off[0] + i * k + t] * b[it.off[1] + t * nn + j];
                int32_t sum = (int32_t)(uint32_t)(uint64_t)acc;
                if (!q) {
                    ((int32_t *)out[0].data)[y] = sum;
                    continue;
                }
                float scale = (float)qparam_at(&a_scale, it.off[0] / (m * k), i) *
                              (float)qparam_at(&b_scale, it.off[1] / (k * nn), j) /
                              (float)xf_rt_load_f64(opt[6]->dtype, opt[6]->data, 0);
                float zp = (float)xf_rt_load_f64(opt[7]->dtype, opt[7]->data, 0);
                xf_rt_store_f64(out[0].dtype, out[0].data, y,
                                xf_rt_quantize_round((float)sum * scale, zp, out[0].dtype));
            }
    free(a);
    free(b);
    return XF_OK;
}
