/* cpu_ref kernels of ONNX Runtime's contrib ops, computed as its CPU
 * kernels compute them (in double here):
 *   FusedConv     Conv, + Z (input 3), then the activation
 *   FusedGemm     Gemm, then the activation
 *   FusedMatMul   alpha * op(A) op(B), op transposing the last two dims
 *                 (trans) and taking dim 0 as the rows behind the batch
 *                 dims 1..r-2 (transBatch)
 *   FastGelu      v = x (+ bias); 0.5 v (1 + tanh(v (C v^2 + B))),
 *                 B = sqrt(2 / pi), C = 0.044715 B
 *   BiasGelu      v = x + bias; 0.5 v (1 + erf(v / sqrt(2)))
 *   QuickGelu     x sigmoid(alpha x)
 *   BiasAdd       x + bias + skip
 *   SkipLayerNormalization, SkipSimplifiedLayerNormalization,
 *   SimplifiedLayerNormalization  (below)
 * The bias is a vector along the last dimension. */
#include "xf_rt_internal.h"

#include <math.h>
#include <stdlib.h>

static double ld(const xf_tensor_view *v, int64_t i) { return xf_rt_load_f64(v->dtype, v->data, i); }
static void st(const xf_tensor_view *v, int64_t i, double x) { xf_rt_store_f64(v->dtype, v->data, i, x); }

/* y = act(y + z): the activation of FusedConv and FusedGemm on their result. */
static void finish_act(const xf_node *n, const xf_tensor_view *y, const xf_tensor_view *z)
{
    int64_t count = xf_rt_numel(y);
    for (int64_t i = 0; i < count; i++)
        st(y, i, xf_ms_act_apply(n->attrs.ms_act, n->attrs.ms_act_params, ld(y, i) + (z ? ld(z, i) : 0.0)));
}

xf_status xf_ref_fused_conv(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err)
{
    const xf_tensor_view *z = n->n_inputs > 3 && xf_rt_present(&in[3]) ? &in[3] : NULL;
    if (z && !xf_shape_equal(&z->shape, &out[0].shape))
        return xf_rt_bad_node(err, n, "Z is not the output's shape");
    xf_node conv = *n;
    conv.op = XF_OP_CONV;
    conv.n_inputs = n->n_inputs < 3 ? n->n_inputs : 3;
    conv.attrs.activation = XF_ACT_NONE;
    xf_status s = xf_ref_conv(&conv, in, out, err);
    if (s == XF_OK)
        finish_act(n, &out[0], z);
    return s;
}

xf_status xf_ref_fused_gemm(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err)
{
    xf_node gemm = *n;
    gemm.op = XF_OP_GEMM;
    xf_status s = xf_ref_gemm(&gemm, in, out, err);
    if (s == XF_OK)
        finish_act(n, &out[0], NULL);
    return s;
}

void xf_rt_fused_matmul_view(const xf_shape *s, bool is_b, int trans, int trans_batch, xf_shape *v, int64_t *strides)
{
    if (s->ndim == 1) {
        *v = xf_shape_make(2, is_b ? (int64_t[]){s->dims[0], 1} : (int64_t[]){1, s->dims[0]});
        strides[0] = is_b ? 1 : 0;
        strides[1] = is_b ? 0 : 1;
        return;
    }
    int r = s->ndim, d = 0;
    int64_t dense[XF_MAX_DIMS];
    xf_rt_dense_strides(s, dense);
    v->ndim = r;
    for (int i = trans_batch ? 1 : 0; i < (trans_batch ? r - 1 : r - 2); i++, d++) {
        v->dims[d] = s->dims[i];
        strides[d] = dense[i];
    }
    int rows = trans_batch ? 0 : r - 2, first = trans ? r - 1 : rows, second = trans ? rows : r - 1;
    v->dims[d] = s->dims[first];
    strides[d++] = dense[first];
    v->dims[d] = s->dims[second];
    strides[d] = dense[second];
}

xf_status xf_ref_fused_matmul(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err)
{
    const xf_attrs *at = &n->attrs;
    if (in[0].shape.ndim < 1 || in[1].shape.ndim < 1)
        return xf_rt_bad_node(err, n, "operands must have at least one dimension");
    xf_shape av, bv;
    int64_t as[XF_MAX_DIMS], bs[XF_MAX_DIMS];
    xf_rt_fused_matmul_view(&in[0].shape, false, at->trans_a, at->trans_batch_a, &av, as);
    xf_rt_fused_matmul_view(&in[1].shape, true, at->trans_b, at->trans_batch_b, &bv, bs);
    int64_t m = av.dims[av.ndim - 2], k = av.dims[av.ndim - 1], nn = bv.dims[bv.ndim - 1];
    if (bv.dims[bv.ndim - 2] != k)
        return xf_rt_bad_node(err, n, "inner dimensions differ (%lld vs %lld)", (long long)k,
                              (long long)bv.dims[bv.ndim - 2]);
    /* the batch: what the output has before its matrix dims */
    int ob = out[0].shape.ndim - (in[0].shape.ndim > 1) - (in[1].shape.ndim > 1);
    if (ob < 0 || ob < av.ndim - 2 || ob < bv.ndim - 2)
        return xf_rt_bad_node(err, n, "output rank does not match the operands");
    xf_shape batch = xf_shape_make(ob, out[0].shape.dims);
    int64_t sa[XF_MAX_DIMS] = {0}, sb[XF_MAX_DIMS] = {0};
    for (int d = 0; d < ob; d++) {
        int da = d - (ob - (av.ndim - 2)), db = d - (ob - (bv.ndim - 2));
        int64_t ea = da < 0 ? 1 : av.dims[da], eb = db < 0 ? 1 : bv.dims[db];
        if ((ea != 1 && ea != batch.dims[d]) || (eb != 1 && eb != batch.dims[d]))
            return xf_rt_bad_node(err, n, "batch dimensions do not broadcast");
        sa[d] = ea == 1 ? 0 : as[da];
        sb[d] = eb == 1 ? 0 : bs[db];
    }
    int64_t n_batch = xf_shape_numel(&batch);
    if (xf_rt_numel(&out[0]) != n_batch * m * nn)
        return xf_rt_bad_node(err, n, "output size does not match the operands");
    xf_rt_iter it;
    xf_rt_iter_init(&it, &batch);
    xf_rt_iter_add(&it, sa, 0);
    xf_rt_iter_add(&it, sb, 0);
    double *acc = malloc(sizeof *acc * (size_t)(m * nn > 0 ? m * nn : 1));
    if (!acc)
        return xf_error_set(err, XF_ERR_NOMEM, "out of memory in FusedMatMul");
    float *y = out[0].data;
    for (int64_t bi = 0; bi < n_batch; bi++, xf_rt_iter_next(&it)) {
        if (xf_rt_matmul_block(XF_DT_FLOAT, (const float *)in[0].data + it.off[0], as[av.ndim - 2], as[av.ndim - 1],
                               (const float *)in[1].data + it.off[1], bs[bv.ndim - 2], bs[bv.ndim - 1], m, k, nn,
                               acc) != XF_OK) {
            free(acc);
            return xf_error_set(err, XF_ERR_NOMEM, "out of memory in FusedMatMul");
        }
        for (int64_t i = 0; i < m * nn; i++)
            y[bi * m * nn + i] = (float)(at->alpha * acc[i]);
    }
    free(acc);
    return XF_OK;
}

xf_status xf_ref_bias_act(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err)
{
    const xf_tensor_view *x = &in[0], *y = &out[0];
    const xf_tensor_view *bias = n->n_inputs > 1 && xf_rt_present(&in[1]) ? &in[1] : NULL;
    const xf_tensor_view *skip = n->n_inputs > 2 && xf_rt_present(&in[2]) ? &in[2] : NULL;
    int64_t count = xf_rt_numel(x), len = bias ? xf_rt_numel(bias) : 1;
    if ((bias && (x->shape.ndim < 1 || len != x->shape.dims[x->shape.ndim - 1])) ||
        (skip && xf_rt_numel(skip) != count))
        return xf_rt_bad_node(err, n, "bias or skip does not match the input");
    const double b = 0.7978845608028654, c = 0.035677408136300125;
    for (int64_t i = 0; i < count; i++) {
        double v = ld(x, i) + (bias ? ld(bias, i % len) : 0.0), r;
        switch (n->op) {
        case XF_OP_MS_FAST_GELU: r = 0.5 * v * (1.0 + tanh(v * (c * v * v + b))); break;
        case XF_OP_MS_BIAS_GELU: r = 0.5 * v * (1.0 + erf(v * 0.70710678118654752440)); break;
        case XF_OP_MS_QUICK_GELU: r = v / (1.0 + exp(-(double)n->attrs.alpha * v)); break;
        default: r = v + (skip ? ld(skip, i) : 0.0); break; /* BiasAdd */
        }
        st(y, i, r);
    }
    return XF_OK;
}

/* SkipLayerNormalization (input, skip, gamma, beta, bias) and
 * SkipSimplifiedLayerNormalization (input, skip, gamma, bias) normalize
 * each row v = input + skip (+ bias) over the last dimension; skip repeats
 * when it is smaller than the input.  With mean m and mean square q of v:
 *     output = (v - m) / sqrt(q - m^2 + epsilon) * gamma (+ beta)
 * or, simplified, v / sqrt(q + epsilon) * gamma.  Optional outputs: the
 * mean, the inverse of the square root, v itself.
 * SimplifiedLayerNormalization (X, scale; Y, inv_std_var) is the simplified
 * form over the dimensions from axis on, with no skip, and so is ONNX's
 * RMSNormalization (X, scale; Y), whose scale may be the trailing dims of
 * the normalized ones (gamma_size values, repeated along the row). */
xf_status xf_rt_skip_norm_init(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out,
                               xf_rt_skip_norm *a, xf_error *err)
{
    const xf_tensor_view *x = a->x = &in[0];
    bool rms = n->op == XF_OP_SIMPLIFIED_LAYER_NORM || n->op == XF_OP_RMS_NORM;
    a->simplified = rms || n->op == XF_OP_MS_SKIP_SIMPLIFIED_LAYER_NORM;
    int axis = rms ? xf_rt_axis(n->attrs.axis, x->shape.ndim) : x->shape.ndim - 1;
    if (axis < 0)
        return xf_rt_bad_node(err, n, "axis %lld out of range", (long long)n->attrs.axis);
    a->skip = rms ? NULL : &in[1];
    a->gamma = &in[rms ? 1 : 2];
#define OPT_IN(k) (n->n_inputs > (k) && xf_rt_present(&in[k]) ? &in[k] : NULL)
#define OPT_OUT(k) (n->n_outputs > (k) && xf_rt_present(&out[k]) ? &out[k] : NULL)
    a->beta = a->simplified ? NULL : OPT_IN(3);
    a->bias = rms ? NULL : a->simplified ? OPT_IN(3) : OPT_IN(4);
    a->mean = rms ? NULL : OPT_OUT(1);
    a->inv = OPT_OUT(rms ? 1 : 2);
    a->sum = rms ? NULL : OPT_OUT(3);
#undef OPT_IN
#undef OPT_OUT
    a->hidden = xf_rt_dims_product(&x->shape, axis, x->shape.ndim);
    int64_t count = xf_rt_numel(x), hidden = a->hidden;
    a->rows = hidden > 0 ? count / hidden : 0;
    a->skip_size = a->skip ? xf_rt_numel(a->skip) : 0;
    a->gamma_size = xf_rt_numel(a->gamma);
    bool repeats = n->op == XF_OP_RMS_NORM && a->gamma_size > 0 && hidden % a->gamma_size == 0;
    if ((a->gamma_size != hidden && !repeats) || (a->beta && xf_rt_numel(a->beta) != hidden) ||
        (a->bias && xf_rt_numel(a->bias) != hidden) ||
        (a->skip && (a->skip_size == 0 || count % a->skip_size || a->skip_size % hidden)))
        return xf_rt_bad_node(err, n, "skip, gamma, beta or bias does not match the input");
    return XF_OK;
}

xf_status xf_ref_skip_layer_norm(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out,
                                 xf_error *err)
{
    xf_rt_skip_norm a;
    xf_status s = xf_rt_skip_norm_init(n, in, out, &a, err);
    if (s != XF_OK)
        return s;
    const xf_tensor_view *x = a.x, *skip = a.skip, *gamma = a.gamma, *beta = a.beta, *bias = a.bias;
    const xf_tensor_view *mean_out = a.mean, *inv_out = a.inv, *sum_out = a.sum;
    bool simplified = a.simplified;
    int64_t hidden = a.hidden, rows = a.rows, skip_size = a.skip_size;
    double *v = malloc(sizeof *v * (size_t)(hidden > 0 ? hidden : 1));
    if (!v)
        return xf_error_set(err, XF_ERR_NOMEM, "out of memory");
    for (int64_t r = 0; r < rows; r++) {
        int64_t base = r * hidden;
        double mean = 0.0, square = 0.0;
        for (int64_t h = 0; h < hidden; h++) {
            v[h] = ld(x, base + h) + (skip ? ld(skip, (base + h) % skip_size) : 0.0) + (bias ? ld(bias, h) : 0.0);
            if (sum_out)
                st(sum_out, base + h, v[h]);
            mean += v[h];
            square += v[h] * v[h];
        }
        mean /= (double)hidden;
        double denom = sqrt(square / (double)hidden - (simplified ? 0.0 : mean * mean) + (double)n->attrs.epsilon);
        for (int64_t h = 0; h < hidden; h++)
            st(&out[0], base + h,
               (v[h] - (simplified ? 0.0 : mean)) / denom * ld(gamma, h % a.gamma_size) + (beta ? ld(beta, h) : 0.0));
        if (mean_out)
            st(mean_out, r, mean);
        if (inv_out)
            st(inv_out, r, 1.0 / denom);
    }
    free(v);
    return XF_OK;
}
