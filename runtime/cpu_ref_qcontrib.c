/* cpu_ref kernels of ONNX Runtime's quantized contrib ops (com.microsoft,
 * its QOperator format), with the arithmetic of ONNX Runtime's CPU kernels
 * on x86-64 so that results match bit for bit:
 *   QLinearAdd   c = sat(rne(fma(a, sa/sc, fma(b, sb/sc, fixed)))) with
 *                fixed = zc - fma(sa/sc, za, sb/sc * zb), in float (an
 *                operand that is one value along the innermost dimension
 *                is fused into fixed first)
 *   QLinearMul   c = sat(rne((a - za)(b - zb) * (sa * sb / sc) + zc))
 *   QLinearSigmoid, QLinearLeakyRelu  a table of the 256 inputs: each
 *                dequantized, mapped, quantized (Sigmoid: MLAS's rational
 *                approximation of the logistic function)
 *   QLinearGlobalAveragePool  sat(rne((sum - zx * size) * sx / (sy * size)) + zy)
 *   QLinearAveragePool  the window's mean of dequantized values in float,
 *                sat(rne(mean / sy + zy)) (a window that is the whole
 *                unpadded image: the global pool's arithmetic)
 *   QLinearConcat  each input through its table (dequantize, quantize)
 *   QLinearSoftmax  a table of exp((i - 255 + shift) * sx), shift keeping
 *                the sum in float's range; y = sat(rne(e * floor(1 / sy) / sum) + zy)
 *   QGemm        int32 sums of (a - za)(b - zb) plus C, then
 *                sat(rne(sum * (alpha * sa * sb / sy)) + zy), or floats
 *                sum * (alpha * sa * sb) without y_scale
 * where rne rounds halves to even and sat saturates to the output type. */
#include "xf_rt_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- helpers */

static float param_f(const xf_tensor_view *v)
{
    return v && xf_rt_present(v) && xf_rt_numel(v) > 0 ? (float)xf_rt_load_f64(v->dtype, v->data, 0) : 0.0f;
}

static int32_t param_i(const xf_tensor_view *v)
{
    return v && xf_rt_present(v) && xf_rt_numel(v) > 0 ? (int32_t)xf_rt_load_i64(v->dtype, v->data, 0) : 0;
}

static const xf_tensor_view *opt_in(const xf_node *n, const xf_tensor_view *in, int i)
{
    return i < n->n_inputs && xf_rt_present(&in[i]) ? &in[i] : NULL;
}

static void qrange(xf_dtype t, int32_t *lo, int32_t *hi)
{
    *lo = t == XF_DT_INT8 ? -128 : t == XF_DT_INT16 ? -32768 : 0;
    *hi = t == XF_DT_INT8 ? 127 : t == XF_DT_UINT8 ? 255 : t == XF_DT_INT16 ? 32767 : 65535;
}

/* rne(v), saturated to t's range (NaN: 0). */
static int32_t sat_rne(float v, xf_dtype t)
{
    int32_t lo, hi;
    qrange(t, &lo, &hi);
    if (!(v == v))
        return 0;
    float r = nearbyintf(v);
    return r < (float)lo ? lo : r > (float)hi ? hi : (int32_t)r;
}

/* Inputs idx[0..n) (when present) hold one value each. */
static xf_status per_tensor(const xf_node *n, const xf_tensor_view *in, const int *idx, int count, xf_error *err)
{
    for (int k = 0; k < count; k++) {
        const xf_tensor_view *v = opt_in(n, in, idx[k]);
        if (v && xf_rt_numel(v) != 1)
            return xf_rt_bad_node(err, n, "input %d must hold one value (per tensor)", idx[k]);
    }
    return XF_OK;
}

/* MLAS's logistic function (its rational approximation, as its FMA
 * kernels evaluate it). */
static float mlas_logistic(float x)
{
    float v = x < -18.0f ? -18.0f : x, v2;
    v = v > 18.0f ? 18.0f : v;
    v2 = v * v;
    float p = fmaf(v2, 4.37031012579801e-11f, 1.15627324459942e-07f);
    p = fmaf(p, v2, 6.08574864600143e-05f);
    p = fmaf(p, v2, 8.51377133304701e-03f);
    p = fmaf(p, v2, 2.48287947061529e-01f);
    p = p * v;
    float q = fmaf(v2, 6.10247389755681e-13f, 5.76102136993427e-09f);
    q = fmaf(q, v2, 6.29106785017040e-06f);
    q = fmaf(q, v2, 1.70198817374094e-03f);
    q = fmaf(q, v2, 1.16817656904453e-01f);
    q = fmaf(q, v2, 9.93151921023180e-01f);
    float r = p / q + 0.5f;
    return r < 0.0f ? 0.0f : r > 1.0f ? 1.0f : r;
}

/* The table of a quantized unary map: entry (uint8)x for each x of type t
 * (int8 or uint8) is quantize(f(dequantize(x))).  f: 0 identity, 1
 * logistic, 2 LeakyRelu with alpha. */
void xf_rt_qlinear_table(xf_dtype t, float xs, int32_t xz, float ys, int32_t yz, int f, float alpha,
                         uint8_t table[256])
{
    for (int i = 0; i < 256; i++) {
        int32_t x = t == XF_DT_INT8 ? (int8_t)i : i;
        float v = xs * (float)(x - xz);
        if (f == 1)
            v = mlas_logistic(v);
        else if (f == 2)
            v = v >= 0.0f ? v : alpha * v;
        table[i] = (uint8_t)sat_rne(nearbyintf(v / ys) + (float)yz, t);
    }
}

/* ---------------------------------------------------------------- QLinearAdd, QLinearMul */

/* The aligned extent of shape s along output axis d of rank r. */
static int64_t extent_at(const xf_shape *s, int r, int d)
{
    int k = d - (r - s->ndim);
    return k < 0 ? 1 : s->dims[k];
}

xf_status xf_ref_ms_qbinary(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err)
{
    const xf_tensor_view *a = &in[0], *b = &in[3], *c = &out[0];
    xf_status st = per_tensor(n, in, (const int[]){1, 2, 4, 5, 6, 7}, 6, err);
    if (st != XF_OK)
        return st;
    if (!xf_rt_broadcastable(&a->shape, &c->shape) || !xf_rt_broadcastable(&b->shape, &c->shape))
        return xf_rt_bad_node(err, n, "A and B do not broadcast to the output");
    float sa = param_f(&in[1]), sb = param_f(&in[4]), sc = param_f(&in[6]);
    int32_t za = param_i(opt_in(n, in, 2)), zb = param_i(opt_in(n, in, 5)), zc = param_i(opt_in(n, in, 7));
    /* ONNX Runtime's broadcasting hands its kernel spans of the innermost
     * dimension; an operand of extent 1 there is a scalar of the span */
    const xf_shape *cs = &c->shape;
    int inner = cs->ndim - 1;
    while (inner >= 0 && cs->dims[inner] == 1)
        inner--;
    bool a_scalar = inner >= 0 && extent_at(&a->shape, cs->ndim, inner) == 1;
    bool b_scalar = inner >= 0 && extent_at(&b->shape, cs->ndim, inner) == 1;
    bool add = n->op == XF_OP_MS_QLINEAR_ADD;
    /* the products and sums of MLAS's AVX2 kernel as its compiler fuses them */
    float rac = sa / sc, rbc = sb / sc, fixed = (float)zc - fmaf(rac, (float)za, rbc * (float)zb);
    float ratio = sa * sb / sc;
    xf_rt_iter it;
    xf_rt_iter_init(&it, cs);
    xf_rt_iter_add_broadcast(&it, &a->shape);
    xf_rt_iter_add_broadcast(&it, &b->shape);
    int64_t count = xf_rt_numel(c);
    for (int64_t i = 0; i < count; i++, xf_rt_iter_next(&it)) {
        int32_t x = (int32_t)xf_rt_load_i64(a->dtype, a->data, it.off[0]);
        int32_t y = (int32_t)xf_rt_load_i64(b->dtype, b->data, it.off[1]);
        float v;
        if (!add)
            v = (float)((x - za) * (y - zb)) * ratio + (float)zc;
        else if (a_scalar)
            v = fmaf((float)y, rbc, fmaf((float)x, rac, fixed));
        else if (b_scalar)
            v = fmaf((float)x, rac, fmaf((float)y, rbc, fixed));
        else
            v = fmaf((float)x, rac, fmaf((float)y, rbc, fixed));
        xf_rt_store_i64(c->dtype, c->data, i, sat_rne(v, c->dtype));
    }
    return XF_OK;
}

/* ---------------------------------------------------------------- table ops */

static xf_status apply_table(const xf_tensor_view *x, const xf_tensor_view *y, const uint8_t table[256])
{
    const uint8_t *xd = x->data;
    uint8_t *yd = y->data;
    int64_t count = xf_rt_numel(x);
    for (int64_t i = 0; i < count; i++)
        yd[i] = table[xd[i]];
    return XF_OK;
}

/* QLinearSigmoid, QLinearLeakyRelu (X, X_scale, X_zero_point, Y_scale, Y_zero_point). */
xf_status xf_ref_ms_qunary(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err)
{
    xf_status st = per_tensor(n, in, (const int[]){1, 2, 3, 4}, 4, err);
    if (st != XF_OK)
        return st;
    if (xf_rt_numel(&in[0]) != xf_rt_numel(&out[0]) || in[0].dtype != out[0].dtype)
        return xf_rt_bad_node(err, n, "X and Y differ in size or type");
    uint8_t table[256];
    xf_rt_qlinear_table(in[0].dtype, param_f(&in[1]), param_i(opt_in(n, in, 2)), param_f(&in[3]),
                        param_i(opt_in(n, in, 4)), n->op == XF_OP_MS_QLINEAR_SIGMOID ? 1 : 2, n->attrs.alpha, table);
    return apply_table(&in[0], &out[0], table);
}

/* QLinearConcat (Y_scale, Y_zero_point, then (X, X_scale, X_zero_point)
 * per input): Concat of the inputs, each requantized through its table. */
xf_status xf_ref_ms_qconcat(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err)
{
    const xf_tensor_view *y = &out[0];
    int rank = y->shape.ndim, axis = xf_rt_axis(n->attrs.axis, rank);
    if (axis < 0 || (n->n_inputs - 2) % 3)
        return xf_rt_bad_node(err, n, "axis out of range or inputs not in triples");
    int64_t outer = xf_rt_dims_product(&y->shape, 0, axis), inner = xf_rt_dims_product(&y->shape, axis + 1, rank);
    int64_t y_pitch = y->shape.dims[axis] * inner, done = 0;
    float ys = param_f(&in[0]);
    int32_t yz = param_i(&in[1]);
    for (int i = 2; i < n->n_inputs; i += 3) {
        const xf_tensor_view *x = &in[i];
        if (x->shape.ndim != rank || !xf_rt_same_but_axis(&x->shape, &y->shape, axis))
            return xf_rt_bad_node(err, n, "input %d does not fit the output outside the axis", i);
        xf_status st = per_tensor(n, in, (const int[]){0, 1, i + 1, i + 2}, 4, err);
        if (st != XF_OK)
            return st;
        uint8_t table[256];
        xf_rt_qlinear_table(y->dtype, param_f(&in[i + 1]), param_i(&in[i + 2]), ys, yz, 0, 0.0f, table);
        int64_t pitch = x->shape.dims[axis] * inner;
        const uint8_t *xd = x->data;
        uint8_t *yd = (uint8_t *)y->data + done;
        for (int64_t o = 0; o < outer; o++)
            for (int64_t e = 0; e < pitch; e++)
                yd[o * y_pitch + e] = table[xd[o * pitch + e]];
        done += pitch;
    }
    return XF_OK;
}

/* ---------------------------------------------------------------- pools */

/* sat(rne((sum - zx * size) * scale) + zy), scale = sx / (sy * size):
 * ONNX Runtime's global average of size values. */
static int32_t global_mean(int32_t sum, int64_t size, float scale, int32_t xz, int32_t yz, xf_dtype t)
{
    int32_t acc = sum - xz * (int32_t)size;
    return sat_rne(nearbyintf((float)acc * scale) + (float)yz, t);
}

/* The global average pool of x into y: batch x channels planes of size
 * values each, channels last or not. */
static void global_pool(const xf_tensor_view *x, const xf_tensor_view *y, int64_t batch, int64_t channels,
                        int64_t size, bool channels_last, float xs, int32_t xz, float ys, int32_t yz)
{
    float scale = xs / (ys * (float)size);
    const uint8_t *xu = x->data;
    const int8_t *xi = x->data;
    bool s8 = x->dtype == XF_DT_INT8;
    for (int64_t b = 0; b < batch; b++)
        for (int64_t ch = 0; ch < channels; ch++) {
            int32_t sum = 0;
            int64_t first = channels_last ? b * size * channels + ch : (b * channels + ch) * size;
            int64_t step = channels_last ? channels : 1;
            for (int64_t i = 0; i < size; i++)
                sum += s8 ? xi[first + i * step] : xu[first + i * step];
            xf_rt_store_i64(y->dtype, y->data, b * channels + ch, global_mean(sum, size, scale, xz, yz, y->dtype));
        }
}

/* QLinearGlobalAveragePool (X, x_scale, x_zero_point, y_scale, y_zero_point). */
xf_status xf_ref_ms_qglobal_pool(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out,
                                 xf_error *err)
{
    const xf_tensor_view *x = &in[0];
    xf_status st = per_tensor(n, in, (const int[]){1, 2, 3, 4}, 4, err);
    if (st != XF_OK)
        return st;
    int r = x->shape.ndim;
    bool last = n->attrs.channels_last != 0;
    if (r < 3)
        return xf_rt_bad_node(err, n, "X needs batch, channel and spatial dimensions");
    int64_t batch = x->shape.dims[0], channels = x->shape.dims[last ? r - 1 : 1];
    int64_t size = xf_rt_dims_product(&x->shape, last ? 1 : 2, last ? r - 1 : r);
    if (xf_rt_numel(&out[0]) != batch * channels)
        return xf_rt_bad_node(err, n, "output size differs from batch x channels");
    global_pool(x, &out[0], batch, channels, size, last, param_f(&in[1]), param_i(&in[2]), param_f(&in[3]),
                param_i(&in[4]));
    return XF_OK;
}

/* QLinearAveragePool (X, x_scale, x_zero_point, y_scale, y_zero_point),
 * channels first: each window's taps inside the input, dequantized and
 * summed in float, divided by their number (count_include_pad: by the
 * kernel's size). */
xf_status xf_ref_ms_qpool(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err)
{
    const xf_tensor_view *x = &in[0], *y = &out[0];
    xf_status st = per_tensor(n, in, (const int[]){1, 2, 3, 4}, 4, err);
    if (st != XF_OK)
        return st;
    if (x->shape.ndim < 3 || y->shape.dims[0] != x->shape.dims[0] || y->shape.dims[1] != x->shape.dims[1])
        return xf_rt_bad_node(err, n, "input and output batch/channels differ");
    xf_rt_window w;
    st = xf_rt_window_setup(n, &x->shape, &y->shape, n->attrs.kernel, &w, err);
    if (st != XF_OK)
        return st;
    float xs = param_f(&in[1]), ys = param_f(&in[3]);
    int32_t xz = param_i(opt_in(n, in, 2)), yz = param_i(opt_in(n, in, 4));
    bool global = true;
    for (int i = 0; i < XF_MAX_SPATIAL; i++) {
        if (w.dil[i] != 1)
            return xf_rt_unsupported(err, &xf_backend_cpu_ref, n, "with dilations");
        global &= w.k[i] == w.in[i] && w.pad_begin[i] == 0 && w.pad_end[i] == 0;
    }
    int64_t planes = x->shape.dims[0] * x->shape.dims[1], in_sp = w.in[0] * w.in[1] * w.in[2];
    if (global && xf_rt_numel(y) == planes) {
        global_pool(x, y, x->shape.dims[0], x->shape.dims[1], in_sp, false, xs, xz, ys, yz);
        return XF_OK;
    }
    /* each tap's term xs * (x - xz), by the byte that holds x */
    float term[256];
    for (int c = 0; c < 256; c++)
        term[c] = xs * (float)((x->dtype == XF_DT_INT8 ? (int32_t)(int8_t)c : c) - xz);
    const uint8_t *xd = x->data;
    int64_t oi = 0, ksize = w.k[0] * w.k[1] * w.k[2];
    for (int64_t p = 0; p < planes; p++)
        for (int64_t o0 = 0; o0 < w.out[0]; o0++)
            for (int64_t o1 = 0; o1 < w.out[1]; o1++)
                for (int64_t o2 = 0; o2 < w.out[2]; o2++, oi++) {
                    int64_t o[3] = {o0, o1, o2}, lo[3], hi[3];
                    for (int i = 0; i < 3; i++) {
                        lo[i] = o[i] * w.stride[i] - w.pad_begin[i];
                        hi[i] = lo[i] + w.k[i] < w.in[i] ? lo[i] + w.k[i] : w.in[i];
                        lo[i] = lo[i] > 0 ? lo[i] : 0;
                    }
                    float acc = 0.0f;
                    for (int64_t i0 = lo[0]; i0 < hi[0]; i0++)
                        for (int64_t i1 = lo[1]; i1 < hi[1]; i1++) {
                            const uint8_t *row = xd + p * in_sp + (i0 * w.in[1] + i1) * w.in[2];
                            for (int64_t i2 = lo[2]; i2 < hi[2]; i2++)
                                acc += term[row[i2]];
                        }
                    int64_t taps = (hi[0] - lo[0]) * (hi[1] - lo[1]) * (hi[2] - lo[2]);
                    acc /= (float)(n->attrs.count_include_pad ? ksize : taps);
                    xf_rt_store_i64(y->dtype, y->data, oi, sat_rne(acc / ys + (float)yz, y->dtype));
                }
    return XF_OK;
}

/* ---------------------------------------------------------------- QLinearSoftmax */

void xf_rt_qsoftmax_table(bool is_signed, int64_t d, float x_scale, float table[256])
{
    double shift = log((double)(3.402823466e+38f / (float)d));
    shift = (shift - 5.0 > 0.0 ? shift - 5.0 : 0.0) / (double)x_scale;
    for (int i = 0; i < 256; i++)
        table[(uint8_t)(is_signed ? i - 128 : i)] = (float)exp(((double)i - 255.0 + shift) * (double)x_scale);
}

/* QLinearSoftmax (X, X_scale, x_zero_point, y_scale, y_zero_point): rows
 * of d values along the axis (opset < 13: of everything from the axis on),
 * stride apart. */
xf_status xf_ref_ms_qsoftmax(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err)
{
    const xf_tensor_view *x = &in[0], *y = &out[0];
    xf_status st = per_tensor(n, in, (const int[]){1, 2, 3, 4}, 4, err);
    if (st != XF_OK)
        return st;
    int rank = x->shape.ndim, axis = xf_rt_axis(n->attrs.axis, rank);
    if (axis < 0)
        return xf_rt_bad_node(err, n, "axis out of range");
    bool legacy = n->attrs.softmax_legacy;
    int64_t outer = xf_rt_dims_product(&x->shape, 0, axis);
    int64_t d = legacy ? xf_rt_dims_product(&x->shape, axis, rank) : x->shape.dims[axis];
    int64_t inner = legacy ? 1 : xf_rt_dims_product(&x->shape, axis + 1, rank);
    if (xf_rt_numel(x) == 0)
        return XF_OK;
    bool is_signed = x->dtype == XF_DT_INT8;
    float table[256];
    xf_rt_qsoftmax_table(is_signed, d, param_f(&in[1]), table);
    float yscale = floorf(1.0f / param_f(&in[3]));
    int32_t yz = param_i(opt_in(n, in, 4));
    const uint8_t *xd = x->data;
    uint8_t *yd = y->data;
    for (int64_t o = 0; o < outer; o++)
        for (int64_t j = 0; j < inner; j++) {
            int64_t base = o * d * inner + j;
            int32_t xmax = is_signed ? -128 : 0;
            for (int64_t k = 0; k < d; k++) {
                int32_t v = is_signed ? (int8_t)xd[base + k * inner] : xd[base + k * inner];
                xmax = v > xmax ? v : xmax;
            }
            /* uint8: table entry 255 - xmax + x; int8: (uint8)(127 - xmax + x) */
            int32_t adjust = is_signed ? 127 - xmax : 255 - xmax;
            float sum = 0.0f;
            for (int64_t k = 0; k < d; k++) {
                int32_t v = is_signed ? (int8_t)xd[base + k * inner] : xd[base + k * inner];
                sum += table[(uint8_t)(v + adjust)];
            }
            for (int64_t k = 0; k < d; k++) {
                int32_t v = is_signed ? (int8_t)xd[base + k * inner] : xd[base + k * inner];
                float q = nearbyintf(table[(uint8_t)(v + adjust)] * yscale / sum) + (float)yz;
                yd[base + k * inner] = (uint8_t)sat_rne(q, y->dtype);
            }
        }
    return XF_OK;
}

/* ---------------------------------------------------------------- QGemm */

/* QGemm (A, a_scale, a_zero_point, B, b_scale, b_zero_point, C, y_scale,
 * y_zero_point): A (M x K, transA: K x M) and B (K x N, transB: N x K)
 * int8/uint8, b's parameters per tensor or per column, C int32
 * broadcasting to M x N. */
xf_status xf_ref_ms_qgemm(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err)
{
    const xf_tensor_view *a = &in[0], *b = &in[3], *y = &out[0];
    const xf_tensor_view *c = opt_in(n, in, 6), *ysc = opt_in(n, in, 7), *yzp = opt_in(n, in, 8);
    xf_status st = per_tensor(n, in, (const int[]){1, 2, 7, 8}, 4, err);
    if (st != XF_OK)
        return st;
    if (a->shape.ndim != 2 || b->shape.ndim != 2 || y->shape.ndim != 2)
        return xf_rt_bad_node(err, n, "A, B and Y must be matrices");
    int ta = n->attrs.trans_a != 0, tb = n->attrs.trans_b != 0;
    int64_t m = a->shape.dims[ta], k = a->shape.dims[1 - ta], nn = b->shape.dims[1 - tb];
    if (b->shape.dims[tb] != k || y->shape.dims[0] != m || y->shape.dims[1] != nn)
        return xf_rt_bad_node(err, n, "A, B and Y do not make a matrix product");
    int64_t nsc = xf_rt_numel(&in[4]), nzp = xf_rt_numel(&in[5]);
    if ((nsc != 1 && nsc != nn) || (nzp != 1 && nzp != nn))
        return xf_rt_bad_node(err, n, "b_scale and b_zero_point must have 1 or N entries");
    if (c && !xf_rt_broadcastable(&c->shape, &y->shape))
        return xf_rt_bad_node(err, n, "C does not broadcast to Y");
    int64_t cst[XF_MAX_DIMS] = {0, 0};
    if (c)
        xf_rt_broadcast_strides(&c->shape, &y->shape, cst);
    float sa = param_f(&in[1]), alpha = n->attrs.alpha;
    int32_t za = param_i(&in[2]);
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < nn; j++) {
            int32_t zb = (int32_t)xf_rt_load_i64(in[5].dtype, in[5].data, nzp == 1 ? 0 : j);
            int64_t acc = c ? xf_rt_load_i64(c->dtype, c->data, i * cst[0] + j * cst[1]) : 0;
            for (int64_t t = 0; t < k; t++) {
                int64_t av = xf_rt_load_i64(a->dtype, a->data, ta ? t * m + i : i * k + t);
                int64_t bv = xf_rt_load_i64(b->dtype, b->data, tb ? j * k + t : t * nn + j);
                acc += (av - za) * (bv - zb);
            }
            int32_t sum = (int32_t)(uint32_t)(uint64_t)acc;
            float scale = alpha * sa * (float)xf_rt_load_f64(in[4].dtype, in[4].data, nsc == 1 ? 0 : j);
            if (!ysc) {
                xf_rt_store_f64(y->dtype, y->data, i * nn + j, (double)((float)sum * scale));
                continue;
            }
            scale /= param_f(ysc);
            xf_rt_store_i64(y->dtype, y->data, i * nn + j,
                            sat_rne(nearbyintf((float)sum * scale) + (float)param_i(yzp), y->dtype));
        }
    return XF_OK;
}

/* ---------------------------------------------------------------- QuantizeLinear, DequantizeLinear */

/* The contrib QuantizeLinear and DequantizeLinear: ONNX's, per tensor or
 * per axis. */
xf_status xf_ref_ms_quantize(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err)
{
    xf_node as = *n;
    as.op = n->op == XF_OP_MS_QUANTIZE_LINEAR ? XF_OP_QUANTIZE_LINEAR : XF_OP_DEQUANTIZE_LINEAR;
    as.attrs.block_size = 0;
    as.attrs.no_saturate = 0;
    return xf_ref_quantize(&as, in, out, err);
}
