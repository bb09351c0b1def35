/* cpu_ref sliding-window kernels: Conv and the pools, for 1 to 3 spatial
 * dimensions.  Fewer spatial dimensions are run as 3 with the missing ones
 * of size 1, so there is one loop nest per op. */
#include "xf_rt_internal.h"

#include <math.h>

/* The geometry of one window op along three spatial axes. */
typedef struct window {
    int64_t in[XF_MAX_SPATIAL], out[XF_MAX_SPATIAL], k[XF_MAX_SPATIAL];
    int64_t stride[XF_MAX_SPATIAL], dil[XF_MAX_SPATIAL];
    int64_t pad_begin[XF_MAX_SPATIAL], pad_end[XF_MAX_SPATIAL];
} window;

/* Fills w from the node's attributes and the (N, C, spatial...) shapes of
 * input x and output y.  kernel gives the kernel extent per spatial axis
 * (from the weight for Conv, the attribute for pools).  Explicit pads are
 * kept as ONNX orders them (all begins, then all ends); auto_pad SAME puts
 * the odd padding element at the end (UPPER) or the beginning (LOWER). */
static xf_status window_setup(const xf_node *n, const xf_shape *x, const xf_shape *y,
                              const int64_t *kernel, window *w, xf_error *err)
{
    const xf_attrs *a = &n->attrs;
    int ns = x->ndim - 2;
    if (ns < 1 || ns > XF_MAX_SPATIAL)
        return xf_error_set(err, XF_ERR_UNSUPPORTED,
                            "node '%s' (%s): %d spatial dimensions (cpu_ref handles 1 to %d)",
                            n->name, xf_op_name(n->op), ns, XF_MAX_SPATIAL);
    if (y->ndim != x->ndim)
        return xf_rt_bad_node(err, n, "input and output ranks differ");
    for (int i = 0; i < XF_MAX_SPATIAL; i++) {
        bool real = i < ns;
        w->in[i] = real ? x->dims[2 + i] : 1;
        w->out[i] = real ? y->dims[2 + i] : 1;
        w->k[i] = real ? kernel[i] : 1;
        w->stride[i] = real ? a->strides[i] : 1;
        w->dil[i] = real ? a->dilations[i] : 1;
        w->pad_begin[i] = w->pad_end[i] = 0;
        if (w->k[i] < 1 || w->stride[i] < 1 || w->dil[i] < 1)
            return xf_rt_bad_node(err, n, "kernel, strides and dilations must be positive");
        if (!real)
            continue;
        switch (a->auto_pad) {
        case XF_AUTO_PAD_NOTSET:
            w->pad_begin[i] = a->pads[i];
            w->pad_end[i] = a->pads[ns + i];
            break;
        case XF_AUTO_PAD_VALID:
            break;
        case XF_AUTO_PAD_SAME_UPPER:
        case XF_AUTO_PAD_SAME_LOWER: {
            int64_t total = (w->out[i] - 1) * w->stride[i] + (w->k[i] - 1) * w->dil[i] + 1 - w->in[i];
            if (total < 0)
                total = 0;
            w->pad_begin[i] = a->auto_pad == XF_AUTO_PAD_SAME_UPPER ? total / 2 : total - total / 2;
            w->pad_end[i] = total - w->pad_begin[i];
            break;
        }
        }
    }
    return XF_OK;
}

static double activate(xf_activation act, double v)
{
    switch (act) {
    case XF_ACT_RELU: return v < 0 ? 0 : v;
    case XF_ACT_SIGMOID: return 1.0 / (1.0 + exp(-v));
    case XF_ACT_TANH: return tanh(v);
    case XF_ACT_NONE: break;
    }
    return v;
}

/* Conv: X (N, C, spatial), W (M, C/group, kernel), optional B (M); float32,
 * accumulated in double. */
xf_status xf_ref_conv(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out,
                      xf_error *err)
{
    const xf_shape *xs = &in[0].shape, *ws = &in[1].shape, *ys = &out[0].shape;
    const float *x = in[0].data, *wt = in[1].data;
    const float *bias = n->n_inputs > 2 && xf_rt_present(&in[2]) ? in[2].data : NULL;
    float *y = out[0].data;
    if (ws->ndim != xs->ndim || xs->ndim < 3)
        return xf_rt_bad_node(err, n, "input and weight ranks differ");
    int64_t batch = xs->dims[0], c_in = xs->dims[1], c_out = ws->dims[0];
    int64_t group = n->attrs.group;
    if (group < 1 || c_in % group || c_out % group || ws->dims[1] != c_in / group)
        return xf_rt_bad_node(err, n, "channels (%lld in, weight %lldx%lld) do not match group %lld",
                              (long long)c_in, (long long)c_out, (long long)ws->dims[1], (long long)group);
    if (ys->dims[0] != batch || ys->dims[1] != c_out)
        return xf_rt_bad_node(err, n, "output shape does not match the input and weight");
    if (bias && xf_rt_numel(&in[2]) != c_out)
        return xf_rt_bad_node(err, n, "bias has %lld elements for %lld output channels",
                              (long long)xf_rt_numel(&in[2]), (long long)c_out);
    int64_t kernel[XF_MAX_SPATIAL] = {0};
    for (int i = 0; i < xs->ndim - 2 && i < XF_MAX_SPATIAL; i++)
        kernel[i] = ws->dims[2 + i];
    window w;
    xf_status st = window_setup(n, xs, ys, kernel, &w, err);
    if (st != XF_OK)
        return st;

    int64_t cg = c_in / group, mg = c_out / group;
    int64_t in_sp = w.in[0] * w.in[1] * w.in[2], k_sp = w.k[0] * w.k[1] * w.k[2];
    for (int64_t b = 0; b < batch; b++)
        for (int64_t m = 0; m < c_out; m++) {
            int64_t g = m / mg;
            for (int64_t o0 = 0; o0 < w.out[0]; o0++)
                for (int64_t o1 = 0; o1 < w.out[1]; o1++)
                    for (int64_t o2 = 0; o2 < w.out[2]; o2++) {
                        double acc = bias ? bias[m] : 0.0;
                        for (int64_t c = 0; c < cg; c++) {
                            const float *xc = x + (b * c_in + g * cg + c) * in_sp;
                            const float *wc = wt + (m * cg + c) * k_sp;
                            for (int64_t k0 = 0; k0 < w.k[0]; k0++) {
                                int64_t i0 = o0 * w.stride[0] - w.pad_begin[0] + k0 * w.dil[0];
                                if (i0 < 0 || i0 >= w.in[0])
                                    continue;
                                for (int64_t k1 = 0; k1 < w.k[1]; k1++) {
                                    int64_t i1 = o1 * w.stride[1] - w.pad_begin[1] + k1 * w.dil[1];
                                    if (i1 < 0 || i1 >= w.in[1])
                                        continue;
                                    for (int64_t k2 = 0; k2 < w.k[2]; k2++) {
                                        int64_t i2 = o2 * w.stride[2] - w.pad_begin[2] + k2 * w.dil[2];
                                        if (i2 < 0 || i2 >= w.in[2])
                                            continue;
                                        acc += (double)xc[(i0 * w.in[1] + i1) * w.in[2] + i2] *
                                               wc[(k0 * w.k[1] + k1) * w.k[2] + k2];
                                    }
                                }
                            }
                        }
                        *y++ = (float)activate(n->attrs.activation, acc);
                    }
        }
    return XF_OK;
}

/* MaxPool and AveragePool over any numeric dtype.  Taps outside the input
 * never contribute a value; AveragePool divides by the taps inside the
 * input, or with count_include_pad by those inside the explicitly padded
 * input (the extra room ceil_mode adds at the end is not padding). */
xf_status xf_ref_pool(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out,
                      xf_error *err)
{
    const xf_tensor_view *x = &in[0], *y = &out[0];
    if (x->shape.ndim < 3 || y->shape.dims[0] != x->shape.dims[0] || y->shape.dims[1] != x->shape.dims[1])
        return xf_rt_bad_node(err, n, "input and output batch/channels differ");
    window w;
    xf_status st = window_setup(n, &x->shape, &y->shape, n->attrs.kernel, &w, err);
    if (st != XF_OK)
        return st;
    bool is_max = n->op == XF_OP_MAX_POOL;
    int64_t planes = x->shape.dims[0] * x->shape.dims[1];
    int64_t in_sp = w.in[0] * w.in[1] * w.in[2];
    int64_t oi = 0;
    for (int64_t p = 0; p < planes; p++)
        for (int64_t o0 = 0; o0 < w.out[0]; o0++)
            for (int64_t o1 = 0; o1 < w.out[1]; o1++)
                for (int64_t o2 = 0; o2 < w.out[2]; o2++, oi++) {
                    int64_t o[3] = {o0, o1, o2};
                    double acc = is_max ? -INFINITY : 0.0;
                    int64_t inside = 0, padded = 0;
                    for (int64_t k0 = 0; k0 < w.k[0]; k0++)
                        for (int64_t k1 = 0; k1 < w.k[1]; k1++)
                            for (int64_t k2 = 0; k2 < w.k[2]; k2++) {
                                int64_t kk[3] = {k0, k1, k2}, pos[3];
                                bool in_input = true, in_padded = true;
                                for (int i = 0; i < 3; i++) {
                                    pos[i] = o[i] * w.stride[i] - w.pad_begin[i] + kk[i] * w.dil[i];
                                    in_input &= pos[i] >= 0 && pos[i] < w.in[i];
                                    in_padded &= pos[i] >= -w.pad_begin[i] && pos[i] < w.in[i] + w.pad_end[i];
                                }
                                padded += in_padded;
                                if (!in_input)
                                    continue;
                                inside++;
                                double v = xf_rt_load_f64(x->dtype, x->data,
                                                          p * in_sp + (pos[0] * w.in[1] + pos[1]) * w.in[2] + pos[2]);
                                if (is_max)
                                    acc = v > acc ? v : acc;
                                else
                                    acc += v;
                            }
                    if (!is_max)
                        acc /= (double)(n->attrs.count_include_pad ? padded : inside);
                    xf_rt_store_f64(y->dtype, y->data, oi, acc);
                }
    return XF_OK;
}

/* GlobalAveragePool / GlobalMaxPool: one value per (batch, channel). */
xf_status xf_ref_global_pool(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out,
                             xf_error *err)
{
    const xf_tensor_view *x = &in[0], *y = &out[0];
    if (x->shape.ndim < 2)
        return xf_rt_bad_node(err, n, "input needs batch and channel dimensions");
    int64_t planes = x->shape.dims[0] * x->shape.dims[1];
    if (xf_rt_numel(y) != planes)
        return xf_rt_bad_node(err, n, "output size differs from batch x channels");
    int64_t sp = planes ? xf_rt_numel(x) / planes : 0;
    bool is_max = n->op == XF_OP_GLOBAL_MAX_POOL;
    for (int64_t p = 0; p < planes; p++) {
        double acc = is_max ? -INFINITY : 0.0;
        for (int64_t i = 0; i < sp; i++) {
            double v = xf_rt_load_f64(x->dtype, x->data, p * sp + i);
            acc = is_max ? (v > acc ? v : acc) : acc + v;
        }
        xf_rt_store_f64(y->dtype, y->data, p, is_max ? acc : acc / (double)sp);
    }
    return XF_OK;
}
