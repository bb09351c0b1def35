/* cpu_ref sliding-window kernels: Conv, ConvTranspose, Col2Im, the integer
 * convolutions (ConvInteger, QLinearConv), the pools and MaxUnpool, for 1 to 3
 * spatial dimensions.  Fewer spatial dimensions are run as 3 with the missing ones
 * of size 1, so there is one loop nest per op. */
#include "xf_op_plans.h"
#include "xf_rt_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

xf_status xf_rt_window_setup(const xf_node *n, const xf_shape *x, const xf_shape *y, const int64_t *kernel,
                             xf_rt_window *w, xf_error *err)
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

/* Every element of v as a double (NULL when out of memory). */
static double *load_all(const xf_tensor_view *v)
{
    int64_t count = xf_rt_numel(v);
    double *d = malloc(sizeof *d * (size_t)(count > 0 ? count : 1));
    for (int64_t i = 0; d && i < count; i++)
        d[i] = xf_rt_load_f64(v->dtype, v->data, i);
    return d;
}

/* The convolutions' channel geometry: X (N, C, ...), W (M, C/group, ...)
 * for Conv, ConvInteger and QLinearConv, (C, M/group, ...) for
 * ConvTranspose. */
typedef struct conv_channels {
    int64_t batch, c_in, c_out, group, cg, mg;
} conv_channels;

static xf_status conv_channels_make(const xf_node *n, const xf_shape *xs, const xf_shape *ws, const xf_shape *ys,
                                    bool transposed, conv_channels *ch, xf_error *err)
{
    if (ws->ndim != xs->ndim || xs->ndim < 3)
        return xf_rt_bad_node(err, n, "input and weight ranks differ");
    int64_t group = n->attrs.group, c_in = xs->dims[1];
    int64_t c_out = transposed ? ws->dims[1] * group : ws->dims[0];
    if (group < 1 || c_in % group || c_out % group ||
        ws->dims[transposed ? 0 : 1] != (transposed ? c_in : c_in / group))
        return xf_rt_bad_node(err, n, "channels (%lld in, weight %lldx%lld) do not match group %lld", (long long)c_in,
                              (long long)ws->dims[0], (long long)ws->dims[1], (long long)group);
    if (ys->ndim != xs->ndim || ys->dims[0] != xs->dims[0] || ys->dims[1] != c_out)
        return xf_rt_bad_node(err, n, "output shape does not match the input and weight");
    *ch = (conv_channels){xs->dims[0], c_in, c_out, group, c_in / group, c_out / group};
    return XF_OK;
}

/* The first and one past the last output position o along one dim whose
 * tap at offset off = k * dilation - pad_begin reads inside the input,
 * 0 <= o * stride + off < in, clamped to [0, out). */
static void tap_range(int64_t off, int64_t stride, int64_t in, int64_t out, int64_t *lo, int64_t *hi)
{
    int64_t a = -off, b = in - 1 - off; /* stride * o in [a, b] */
    int64_t first = a <= 0 ? 0 : (a + stride - 1) / stride;
    int64_t last = b < 0 ? -1 : b / stride;
    *lo = first;
    *hi = last + 1 < out ? last + 1 : out;
    if (*hi < *lo)
        *hi = *lo;
}

/* Direct convolution of x (N, C, spatial) by wt (M, C/group, kernel),
 * both as doubles, into y (N, M, out): the raw sums.  Every output sums its
 * products in one order, input channel then kernel taps, skipping the taps
 * that fall in the padding, for every caller.  The loops run a tap at a
 * time over the whole output plane, so the innermost loop walks a row of
 * input and output together; each output still gets its terms in that
 * order, so the sums are the ones a loop per output would give. */
static void conv_direct(const xf_rt_window *w, const conv_channels *ch, const double *x, const double *wt,
                        double *restrict y)
{
    int64_t in_sp = w->in[0] * w->in[1] * w->in[2], k_sp = w->k[0] * w->k[1] * w->k[2];
    int64_t out_sp = w->out[0] * w->out[1] * w->out[2];
    for (int64_t i = 0; i < ch->batch * ch->c_out * out_sp; i++)
        y[i] = 0.0;
    for (int64_t b = 0; b < ch->batch; b++)
        for (int64_t m = 0; m < ch->c_out; m++) {
            int64_t g = m / ch->mg;
            double *yp = y + (b * ch->c_out + m) * out_sp;
            for (int64_t c = 0; c < ch->cg; c++) {
                const double *xc = x + (b * ch->c_in + g * ch->cg + c) * in_sp;
                const double *wc = wt + (m * ch->cg + c) * k_sp;
                for (int64_t k0 = 0; k0 < w->k[0]; k0++) {
                    int64_t off0 = k0 * w->dil[0] - w->pad_begin[0], lo0, hi0;
                    tap_range(off0, w->stride[0], w->in[0], w->out[0], &lo0, &hi0);
                    for (int64_t k1 = 0; k1 < w->k[1]; k1++) {
                        int64_t off1 = k1 * w->dil[1] - w->pad_begin[1], lo1, hi1;
                        tap_range(off1, w->stride[1], w->in[1], w->out[1], &lo1, &hi1);
                        for (int64_t k2 = 0; k2 < w->k[2]; k2++) {
                            int64_t off2 = k2 * w->dil[2] - w->pad_begin[2], lo2, hi2, s2 = w->stride[2];
                            tap_range(off2, s2, w->in[2], w->out[2], &lo2, &hi2);
                            double wv = wc[(k0 * w->k[1] + k1) * w->k[2] + k2];
                            for (int64_t o0 = lo0; o0 < hi0; o0++) {
                                int64_t i0 = o0 * w->stride[0] + off0;
                                for (int64_t o1 = lo1; o1 < hi1; o1++) {
                                    int64_t i1 = o1 * w->stride[1] + off1;
                                    const double *xr = xc + (i0 * w->in[1] + i1) * w->in[2] + off2;
                                    double *yr = yp + (o0 * w->out[1] + o1) * w->out[2];
                                    if (s2 == 1)
                                        for (int64_t o2 = lo2; o2 < hi2; o2++)
                                            yr[o2] += xr[o2] * wv;
                                    else
                                        for (int64_t o2 = lo2; o2 < hi2; o2++)
                                            yr[o2] += xr[o2 * s2] * wv;
                                }
                            }
                        }
                    }
                }
            }
        }
}

/* Columns [p0, p0 + pn) of the im2col matrix of channels [c0, c0 + cn) of
 * one image xi: row (c, k0, k1, k2), column output position p, holding the
 * input element that tap reads for p, or 0 where it falls in the padding. */
static void im2col(const xf_rt_window *w, const double *xi, int64_t c0, int64_t cn, int64_t p0, int64_t pn,
                   double *restrict col)
{
    int64_t in_sp = w->in[0] * w->in[1] * w->in[2];
    for (int64_t c = 0; c < cn; c++) {
        const double *xc = xi + (c0 + c) * in_sp;
        for (int64_t k0 = 0; k0 < w->k[0]; k0++)
            for (int64_t k1 = 0; k1 < w->k[1]; k1++)
                for (int64_t k2 = 0; k2 < w->k[2]; k2++) {
                    int64_t off[3] = {k0 * w->dil[0] - w->pad_begin[0], k1 * w->dil[1] - w->pad_begin[1],
                                      k2 * w->dil[2] - w->pad_begin[2]};
                    int64_t o2 = p0 % w->out[2], o1 = p0 / w->out[2] % w->out[1], o0 = p0 / w->out[2] / w->out[1];
                    for (int64_t j = 0; j < pn; j++) {
                        int64_t i0 = o0 * w->stride[0] + off[0], i1 = o1 * w->stride[1] + off[1],
                                i2 = o2 * w->stride[2] + off[2];
                        bool inside = i0 >= 0 && i0 < w->in[0] && i1 >= 0 && i1 < w->in[1] && i2 >= 0 && i2 < w->in[2];
                        *col++ = inside ? xc[(i0 * w->in[1] + i1) * w->in[2] + i2] : 0.0;
                        if (++o2 == w->out[2]) {
                            o2 = 0;
                            if (++o1 == w->out[1]) {
                                o1 = 0;
                                o0++;
                            }
                        }
                    }
                }
    }
}

/* The raw sums of conv_direct, as a product of each group's weights by its
 * im2col matrix, built a band of output positions at a time (at most
 * about 32 MiB).  A tap in the padding adds 0 * w, which leaves a sum
 * that starts at +0 unchanged unless w is infinite or NaN, so the caller
 * takes this path only for finite weights.  1x1 convolutions of stride 1
 * without padding read their input as it is. */
static xf_status conv_im2col(const xf_rt_window *w, const conv_channels *ch, const double *x, const double *wt,
                             double *y)
{
    int64_t in_sp = w->in[0] * w->in[1] * w->in[2], k_sp = w->k[0] * w->k[1] * w->k[2];
    int64_t out_sp = w->out[0] * w->out[1] * w->out[2], rows = ch->cg * k_sp;
    bool direct = k_sp == 1;
    for (int i = 0; i < 3 && direct; i++)
        direct = w->stride[i] == 1 && w->pad_begin[i] == 0 && w->in[i] == w->out[i];
    int64_t band = rows > 0 ? ((int64_t)32 << 20) / (8 * rows) : out_sp;
    band = band < 1 ? 1 : band > out_sp ? out_sp : band;
    double *col = direct ? NULL : malloc(sizeof *col * (size_t)(rows * band > 0 ? rows * band : 1));
    if (!direct && !col)
        return XF_ERR_NOMEM;
    for (int64_t i = 0; i < ch->batch * ch->c_out * out_sp; i++)
        y[i] = 0.0;
    for (int64_t b = 0; b < ch->batch && ch->mg > 0; b++) /* no output channels: no columns to build */
        for (int64_t g = 0; g < ch->group; g++) {
            const double *xi = x + b * ch->c_in * in_sp, *wg = wt + g * ch->mg * rows;
            double *yg = y + (b * ch->c_out + g * ch->mg) * out_sp;
            if (direct) {
                xf_rt_gemm_in_order(ch->mg, rows, out_sp, wg, rows, xi + g * ch->cg * in_sp, in_sp, yg, out_sp);
                continue;
            }
            for (int64_t p0 = 0; p0 < out_sp; p0 += band) {
                int64_t pn = out_sp - p0 < band ? out_sp - p0 : band;
                im2col(w, xi, g * ch->cg, ch->cg, p0, pn, col);
                xf_rt_gemm_in_order(ch->mg, rows, pn, wg, rows, col, pn, yg + p0, out_sp);
            }
        }
    free(col);
    return XF_OK;
}

/* The raw sums of a convolution (see conv_direct), through im2col where
 * every weight is finite. */
static xf_status conv_sums(const xf_rt_window *w, const conv_channels *ch, const double *x, const double *wt, double *y)
{
    int64_t count = ch->c_out * ch->cg * w->k[0] * w->k[1] * w->k[2];
    for (int64_t i = 0; i < count; i++)
        if (!isfinite(wt[i])) {
            conv_direct(w, ch, x, wt, y);
            return XF_OK;
        }
    return conv_im2col(w, ch, x, wt, y);
}

/* The window of a convolution whose weight is input wi, its channels and
 * its operands as doubles (x from input 0); the caller frees *x, *wt, *y. */
static xf_status conv_setup(const xf_node *n, const xf_tensor_view *in, int wi, const xf_tensor_view *out, xf_rt_window *w,
                            conv_channels *ch, double **x, double **wt, double **y, xf_error *err)
{
    const xf_shape *xs = &in[0].shape, *ws = &in[wi].shape, *ys = &out[0].shape;
    *x = *wt = *y = NULL;
    xf_status st = conv_channels_make(n, xs, ws, ys, false, ch, err);
    int64_t kernel[XF_MAX_SPATIAL] = {0};
    for (int i = 0; i < xs->ndim - 2 && i < XF_MAX_SPATIAL; i++)
        kernel[i] = ws->dims[2 + i];
    if (st == XF_OK)
        st = xf_rt_window_setup(n, xs, ys, kernel, w, err);
    if (st != XF_OK)
        return st;
    int64_t count = xf_rt_numel(&out[0]);
    *x = load_all(&in[0]);
    *wt = load_all(&in[wi]);
    *y = malloc(sizeof **y * (size_t)(count > 0 ? count : 1));
    if (!*x || !*wt || !*y)
        return xf_error_set(err, XF_ERR_NOMEM, "out of memory in %s", xf_op_name(n->op));
    return XF_OK;
}

/* Element i of an optional per-tensor or per-channel parameter (0 when
 * absent). */
static double param_at(const xf_tensor_view *v, int64_t i)
{
    return v ? xf_rt_load_f64(v->dtype, v->data, xf_rt_numel(v) == 1 ? 0 : i) : 0.0;
}

/* Conv: X (N, C, spatial), W (M, C/group, kernel), optional B (M); float32
 * or double, accumulated in double. */
xf_status xf_ref_conv(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err)
{
    const xf_tensor_view *bias = n->n_inputs > 2 && xf_rt_present(&in[2]) ? &in[2] : NULL;
    xf_rt_window w;
    conv_channels ch;
    double *x, *wt, *acc;
    xf_status st = conv_setup(n, in, 1, out, &w, &ch, &x, &wt, &acc, err);
    if (st == XF_OK && bias && xf_rt_numel(bias) != ch.c_out)
        st = xf_rt_bad_node(err, n, "bias has %lld elements for %lld output channels", (long long)xf_rt_numel(&in[2]),
                            (long long)ch.c_out);
    if (st == XF_OK && conv_sums(&w, &ch, x, wt, acc) != XF_OK)
        st = xf_error_set(err, XF_ERR_NOMEM, "out of memory in %s", xf_op_name(n->op));
    if (st == XF_OK) {
        int64_t plane = w.out[0] * w.out[1] * w.out[2];
        for (int64_t i = 0; i < ch.batch * ch.c_out * plane; i++)
            xf_rt_store_f64(out[0].dtype, out[0].data, i,
                            activate(n->attrs.activation, acc[i] + (bias ? param_at(bias, i / plane % ch.c_out) : 0)));
    }
    free(x);
    free(wt);
    free(acc);
    return st;
}

/* ConvInteger (x, w, x_zero_point, w_zero_point) gives the int32 sums of
 * (x - x_zero_point) (w - w_zero_point); QLinearConv (x, x_scale,
 * x_zero_point, w, w_scale, w_zero_point, y_scale, y_zero_point, B) adds
 * the int32 bias and requantizes with x_scale * w_scale / y_scale.  The
 * weight's parameters may be per output channel.  Sums are exact (in
 * double) and wrap to 32 bits as int32 accumulators do. */
xf_status xf_ref_conv_integer(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err)
{
    bool q = n->op == XF_OP_QLINEAR_CONV;
    int wi = q ? 3 : 1;
    const xf_tensor_view *opt[9] = {0};
    for (int k = 1; k < n->n_inputs && k < 9; k++)
        opt[k] = k != wi && xf_rt_present(&in[k]) ? &in[k] : NULL;
    const xf_tensor_view *x_zp = opt[2], *w_zp = opt[q ? 5 : 3], *bias = q ? opt[8] : NULL;
    xf_rt_window w;
    conv_channels ch;
    double *x, *wt, *acc;
    xf_status st = conv_setup(n, in, wi, out, &w, &ch, &x, &wt, &acc, err);
    for (int k = 1; k < 9 && st == XF_OK; k++) {
        if (!opt[k])
            continue;
        int64_t count = xf_rt_numel(opt[k]);
        bool per_channel = q ? k == 4 || k == 5 || k == 8 : k == 3;
        if (k == 8 ? count != ch.c_out : count != 1 && !(per_channel && count == ch.c_out))
            st = xf_rt_bad_node(err, n, "input %d has %lld elements, not %s", k, (long long)count,
                                k == 8        ? "one per output channel"
                                : per_channel ? "1 or one per output channel"
                                              : "1");
    }
    if (st == XF_OK) {
        int64_t xn = xf_rt_numel(&in[0]), per = ch.c_out ? xf_rt_numel(&in[wi]) / ch.c_out : 0;
        for (int64_t i = 0; i < xn; i++)
            x[i] -= param_at(x_zp, 0);
        for (int64_t i = 0; i < per * ch.c_out; i++)
            wt[i] -= param_at(w_zp, i / per);
        if (conv_sums(&w, &ch, x, wt, acc) != XF_OK)
            st = xf_error_set(err, XF_ERR_NOMEM, "out of memory in %s", xf_op_name(n->op));
        int64_t plane = w.out[0] * w.out[1] * w.out[2];
        for (int64_t i = 0; st == XF_OK && i < ch.batch * ch.c_out * plane; i++) {
            int64_t m = i / plane % ch.c_out;
            int32_t sum = (int32_t)(uint32_t)((uint64_t)(int64_t)acc[i] + (uint64_t)(int64_t)param_at(bias, m));
            if (!q) {
                ((int32_t *)out[0].data)[i] = sum;
                continue;
            }
            float scale = (float)param_at(opt[1], 0) * (float)param_at(opt[4], m) / (float)param_at(opt[6], 0);
            xf_rt_store_f64(out[0].dtype, out[0].data, i,
                            xf_rt_quantize_round((float)sum * scale, (float)param_at(opt[7], 0), out[0].dtype));
        }
    }
    free(x);
    free(wt);
    free(acc);
    return st;
}

/* A transposed window (ConvTranspose, Col2Im) of 1 to 3 spatial dims, the
 * missing ones of extent 1: output position o gathers the input positions
 * i whose kernel taps k land on it, o + pad = i * stride + k * dilation. */
typedef struct gather_window {
    int64_t in[3], out[3], k[3], s[3], d[3], pad[3];
} gather_window;

static gather_window gather_window_unit(void)
{
    gather_window w = {{1, 1, 1}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, {0, 0, 0}};
    return w;
}

/* The taps landing on output position (o0, o1, o2), in the order of the
 * kernel's elements: their kernel elements in kk[], input positions in
 * ii[]; returns how many. */
static int64_t gather_taps(const gather_window *w, int64_t o0, int64_t o1, int64_t o2, int64_t *kk, int64_t *ii)
{
    int64_t n = 0;
    for (int64_t k0 = 0; k0 < w->k[0]; k0++) {
        int64_t p0 = o0 + w->pad[0] - k0 * w->d[0];
        if (p0 < 0 || p0 % w->s[0] || p0 / w->s[0] >= w->in[0])
            continue;
        for (int64_t k1 = 0; k1 < w->k[1]; k1++) {
            int64_t p1 = o1 + w->pad[1] - k1 * w->d[1];
            if (p1 < 0 || p1 % w->s[1] || p1 / w->s[1] >= w->in[1])
                continue;
            for (int64_t k2 = 0; k2 < w->k[2]; k2++) {
                int64_t p2 = o2 + w->pad[2] - k2 * w->d[2];
                if (p2 < 0 || p2 % w->s[2] || p2 / w->s[2] >= w->in[2])
                    continue;
                kk[n] = (k0 * w->k[1] + k1) * w->k[2] + k2;
                ii[n++] = (p0 / w->s[0] * w->in[1] + p1 / w->s[1]) * w->in[2] + p2 / w->s[2];
            }
        }
    }
    return n;
}

/* Room for the taps of one output position of w (NULL when out of memory). */
static int64_t *gather_taps_alloc(const gather_window *w)
{
    return malloc(sizeof(int64_t) * 2 * (size_t)(w->k[0] * w->k[1] * w->k[2]));
}

/* ConvTranspose: X (N, C, spatial), W (C, M/group, kernel), optional B
 * (M); floating types, accumulated in double (xf_conv_transpose_axis gives
 * the pads). */
/* A ConvTranspose's channels and window (its inputs' shapes, output ys). */
static xf_status conv_transpose_setup(const xf_node *n, const xf_tensor_view *in, const xf_shape *ys, conv_channels *ch,
                                      gather_window *gw, xf_error *err)
{
    const xf_shape *xs = &in[0].shape, *ws = &in[1].shape;
    const xf_tensor_view *bias = n->n_inputs > 2 && xf_rt_present(&in[2]) ? &in[2] : NULL;
    xf_status st = conv_channels_make(n, xs, ws, ys, true, ch, err);
    if (st != XF_OK)
        return st;
    if (bias && xf_rt_numel(bias) != ch->c_out)
        return xf_rt_bad_node(err, n, "bias has %lld elements for %lld output channels", (long long)xf_rt_numel(bias),
                              (long long)ch->c_out);
    int ns = xs->ndim - 2;
    if (ns > XF_MAX_SPATIAL)
        return xf_rt_bad_node(err, n, "%d spatial dimensions (at most %d)", ns, XF_MAX_SPATIAL);
    gather_window w = gather_window_unit();
    for (int i = 0; i < ns; i++) {
        int64_t extent, pad_end;
        char why[300];
        if (!xf_conv_transpose_axis(&n->attrs, ns, i, xs->dims[2 + i], ws->dims[2 + i], &extent, &w.pad[i], &pad_end,
                                    why, sizeof why))
            return xf_rt_bad_node(err, n, "%s", why);
        if (extent != ys->dims[2 + i])
            return xf_rt_bad_node(err, n, "output extent %lld on spatial axis %d, the attributes give %lld",
                                  (long long)ys->dims[2 + i], i, (long long)extent);
        w.in[i] = xs->dims[2 + i];
        w.out[i] = extent;
        w.k[i] = ws->dims[2 + i];
        w.s[i] = n->attrs.strides[i];
        w.d[i] = n->attrs.dilations[i];
    }
    *gw = w;
    return XF_OK;
}

/* The gradients a ConvTranspose's backward pass adds into (NULL: not
 * wanted), from gy, its output's. */
typedef struct conv_grads {
    const double *gy;
    double *gx, *gw, *gb;
} conv_grads;

/* Every output element of a ConvTranspose with its taps, in order: the
 * forward sum into y (with bias), or, with g, the backward pass, each
 * output's gradient into the inputs and weights its taps read. */
static void conv_transpose_pass(const gather_window *w, const conv_channels *ch, int64_t *kk, const double *x,
                                const double *wt, const xf_tensor_view *bias, const xf_tensor_view *y,
                                const conv_grads *g)
{
    int64_t in_sp = w->in[0] * w->in[1] * w->in[2], k_sp = w->k[0] * w->k[1] * w->k[2], yi = 0, *ii = kk + k_sp;
    for (int64_t b = 0; b < ch->batch; b++)
        for (int64_t m = 0; m < ch->c_out; m++) {
            int64_t grp = m / ch->mg, mm = m % ch->mg;
            for (int64_t o0 = 0; o0 < w->out[0]; o0++)
                for (int64_t o1 = 0; o1 < w->out[1]; o1++)
                    for (int64_t o2 = 0; o2 < w->out[2]; o2++, yi++) {
                        int64_t taps = gather_taps(w, o0, o1, o2, kk, ii);
                        double acc = bias ? xf_rt_load_f64(bias->dtype, bias->data, m) : 0.0, dy = g ? g->gy[yi] : 0;
                        if (g && g->gb)
                            g->gb[m] += dy;
                        for (int64_t c = grp * ch->cg; c < (grp + 1) * ch->cg; c++) {
                            int64_t xb = (b * ch->c_in + c) * in_sp, wb = (c * ch->mg + mm) * k_sp;
                            for (int64_t t = 0; !g && t < taps; t++)
                                acc += x[xb + ii[t]] * wt[wb + kk[t]];
                            for (int64_t t = 0; g && t < taps; t++) {
                                if (g->gx)
                                    g->gx[xb + ii[t]] += dy * wt[wb + kk[t]];
                                if (g->gw)
                                    g->gw[wb + kk[t]] += dy * x[xb + ii[t]];
                            }
                        }
                        if (!g)
                            xf_rt_store_f64(y->dtype, y->data, yi, acc);
                    }
        }
}

xf_status xf_ref_conv_transpose(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err)
{
    const xf_tensor_view *bias = n->n_inputs > 2 && xf_rt_present(&in[2]) ? &in[2] : NULL;
    conv_channels ch;
    gather_window w;
    xf_status st = conv_transpose_setup(n, in, &out[0].shape, &ch, &w, err);
    if (st != XF_OK)
        return st;
    double *x = load_all(&in[0]), *wt = load_all(&in[1]);
    int64_t *kk = gather_taps_alloc(&w);
    if (x && wt && kk)
        conv_transpose_pass(&w, &ch, kk, x, wt, bias, &out[0], NULL);
    else
        st = xf_error_set(err, XF_ERR_NOMEM, "out of memory in ConvTranspose");
    free(x);
    free(wt);
    free(kk);
    return st;
}

xf_status xf_ref_conv_transpose_backward(const xf_node *n, const xf_tensor_view *in, const xf_shape *ys,
                                         const double *x, const double *wt, const double *gy, double *gx, double *gw,
                                         double *gb, xf_error *err)
{
    conv_channels ch;
    gather_window w;
    xf_status st = conv_transpose_setup(n, in, ys, &ch, &w, err);
    int64_t *kk = st == XF_OK ? gather_taps_alloc(&w) : NULL;
    if (st == XF_OK && !kk)
        st = xf_error_set(err, XF_ERR_NOMEM, "out of memory in ConvTranspose");
    if (st == XF_OK)
        conv_transpose_pass(&w, &ch, kk, x, wt, NULL, NULL, &(conv_grads){gy, gx, gw, gb});
    free(kk);
    return st;
}

/* Col2Im: input (N, C * prod(block), L), its column c * prod(block) + k
 * holding element k of every block of channel c (L blocks, row-major over
 * the block grid), summed into (N, C, image) where the blocks overlap: the
 * transposed window of the block grid (in), the block (kernel) and the
 * image (out).  Accumulated in double, in the order of the kernel's
 * elements as ONNX's reference adds them. */
xf_status xf_ref_col2im(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err)
{
    const xf_shape *xs = &in[0].shape, *ys = &out[0].shape;
    int ns = ys->ndim - 2;
    if (ns < 1 || ns > XF_MAX_SPATIAL)
        return xf_error_set(err, XF_ERR_UNSUPPORTED, "node '%s' (Col2Im): %d spatial dimensions (cpu_ref handles "
                            "1 to %d)", n->name, ns, XF_MAX_SPATIAL);
    if (xf_rt_numel(&in[2]) != ns || xf_rt_numel(&in[1]) != ns)
        return xf_rt_bad_node(err, n, "image_shape and block_shape need one entry per spatial dim of the output");
    int64_t image[XF_MAX_SPATIAL], block[XF_MAX_SPATIAL], blocks[XF_MAX_SPATIAL];
    gather_window w = gather_window_unit();
    for (int i = 0; i < ns; i++) {
        image[i] = ys->dims[2 + i];
        block[i] = xf_rt_load_i64(in[2].dtype, in[2].data, i);
    }
    char why[300];
    if (!xf_col2im_blocks(&n->attrs, ns, image, block, blocks, why, sizeof why))
        return xf_rt_bad_node(err, n, "%s", why);
    int64_t per = 1, count = 1;
    for (int i = 0; i < ns; i++) {
        const xf_attrs *a = &n->attrs;
        w.in[i] = blocks[i];
        w.out[i] = image[i];
        w.k[i] = block[i];
        w.s[i] = a->n_spatial ? a->strides[i] : 1;
        w.d[i] = a->n_spatial ? a->dilations[i] : 1;
        w.pad[i] = a->n_spatial ? a->pads[i] : 0;
        per *= block[i];
        count *= blocks[i];
    }
    if (xs->ndim != 3 || xs->dims[0] != ys->dims[0] || xs->dims[1] != ys->dims[1] * per || xs->dims[2] != count)
        return xf_rt_bad_node(err, n, "the input is not [N, C * %lld, %lld] for the output", (long long)per,
                              (long long)count);
    int64_t *kk = gather_taps_alloc(&w), *ii = kk ? kk + per : NULL, yi = 0;
    if (!kk)
        return xf_error_set(err, XF_ERR_NOMEM, "out of memory in Col2Im");
    for (int64_t p = 0; p < ys->dims[0] * ys->dims[1]; p++)
        for (int64_t o0 = 0; o0 < w.out[0]; o0++)
            for (int64_t o1 = 0; o1 < w.out[1]; o1++)
                for (int64_t o2 = 0; o2 < w.out[2]; o2++, yi++) {
                    int64_t taps = gather_taps(&w, o0, o1, o2, kk, ii);
                    double acc = 0;
                    for (int64_t t = 0; t < taps; t++)
                        acc += xf_rt_load_f64(in[0].dtype, in[0].data, (p * per + kk[t]) * count + ii[t]);
                    xf_rt_store_f64(out[0].dtype, out[0].data, yi, acc);
                }
    free(kk);
    return XF_OK;
}

/* The taps k in [0, k_count) of one dim whose position base + k * dil lies
 * in [from, to), as [*lo, *hi) (empty when none do). */
static void taps_between(int64_t base, int64_t dil, int64_t k_count, int64_t from, int64_t to, int64_t *lo,
                         int64_t *hi)
{
    int64_t a = from - base, b = to - base; /* k * dil in [a, b) */
    *lo = a <= 0 ? 0 : (a + dil - 1) / dil;
    *hi = b <= 0 ? 0 : (b + dil - 1) / dil;
    *hi = *hi < k_count ? *hi : k_count;
    if (*hi < *lo)
        *hi = *lo;
}

void xf_rt_window_taps(const xf_rt_window *w, const int64_t *o, int64_t *lo, int64_t *hi, int64_t *inside,
                       int64_t *padded)
{
    *inside = *padded = 1;
    for (int i = 0; i < XF_MAX_SPATIAL; i++) {
        int64_t base = o[i] * w->stride[i] - w->pad_begin[i], plo, phi;
        taps_between(base, w->dil[i], w->k[i], 0, w->in[i], &lo[i], &hi[i]);
        taps_between(base, w->dil[i], w->k[i], -w->pad_begin[i], w->in[i] + w->pad_end[i], &plo, &phi);
        *inside *= hi[i] - lo[i];
        *padded *= phi - plo;
    }
}

/* The index MaxPool's Indices give input position pos of plane p: into
 * the whole input, its spatial axes row-major, or with storage_order 1
 * column-major (the first spatial axis fastest). */
static int64_t pool_index(const xf_rt_window *w, int storage_order, int64_t p, const int64_t *pos)
{
    int64_t in_sp = w->in[0] * w->in[1] * w->in[2];
    if (storage_order)
        return p * in_sp + (pos[2] * w->in[1] + pos[1]) * w->in[0] + pos[0];
    return p * in_sp + (pos[0] * w->in[1] + pos[1]) * w->in[2] + pos[2];
}

/* MaxPool, AveragePool and LpPool over any numeric dtype.  Taps outside
 * the input never contribute a value; AveragePool divides by the taps
 * inside the input, or with count_include_pad by those inside the
 * explicitly padded input (the extra room ceil_mode adds at the end is not
 * padding); LpPool is (the sum of |x|^p over the taps inside)^(1 / p).
 * MaxPool's Indices (a second output) name the first tap in scan order
 * holding the maximum, as ONNX's reference does; a window whose taps
 * never beat -inf names its first tap inside the input, one with none
 * inside the input gets -1. */
xf_status xf_ref_pool(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out,
                      xf_error *err)
{
    const xf_tensor_view *x = &in[0], *y = &out[0];
    bool is_max = n->op == XF_OP_MAX_POOL, is_lp = n->op == XF_OP_LP_POOL;
    const xf_tensor_view *ind = is_max && n->n_outputs > 1 && xf_rt_present(&out[1]) ? &out[1] : NULL;
    if (x->shape.ndim < 3 || y->shape.dims[0] != x->shape.dims[0] || y->shape.dims[1] != x->shape.dims[1])
        return xf_rt_bad_node(err, n, "input and output batch/channels differ");
    if (ind && (ind->dtype != XF_DT_INT64 || !xf_shape_equal(&ind->shape, &y->shape)))
        return xf_rt_bad_node(err, n, "Indices must be int64 of Y's shape");
    xf_rt_window w;
    xf_status st = xf_rt_window_setup(n, &x->shape, &y->shape, n->attrs.kernel, &w, err);
    if (st != XF_OK)
        return st;
    int64_t planes = x->shape.dims[0] * x->shape.dims[1];
    int64_t in_sp = w.in[0] * w.in[1] * w.in[2];
    double *xd = load_all(x);
    if (!xd)
        return xf_error_set(err, XF_ERR_NOMEM, "out of memory in %s", xf_op_name(n->op));
    int64_t oi = 0;
    for (int64_t p = 0; p < planes; p++)
        for (int64_t o0 = 0; o0 < w.out[0]; o0++)
            for (int64_t o1 = 0; o1 < w.out[1]; o1++)
                for (int64_t o2 = 0; o2 < w.out[2]; o2++, oi++) {
                    int64_t o[3] = {o0, o1, o2}, lo[3], hi[3], inside, padded;
                    xf_rt_window_taps(&w, o, lo, hi, &inside, &padded);
                    double acc = is_max ? -INFINITY : 0.0;
                    int64_t best = -1;
                    for (int64_t k0 = lo[0]; k0 < hi[0]; k0++)
                        for (int64_t k1 = lo[1]; k1 < hi[1]; k1++)
                            for (int64_t k2 = lo[2]; k2 < hi[2]; k2++) {
                                int64_t pos[3] = {o0 * w.stride[0] - w.pad_begin[0] + k0 * w.dil[0],
                                                  o1 * w.stride[1] - w.pad_begin[1] + k1 * w.dil[1],
                                                  o2 * w.stride[2] - w.pad_begin[2] + k2 * w.dil[2]};
                                double v = xd[p * in_sp + (pos[0] * w.in[1] + pos[1]) * w.in[2] + pos[2]];
                                if (ind && (best < 0 || v > acc))
                                    best = pool_index(&w, n->attrs.storage_order, p, pos);
                                if (is_max)
                                    acc = v > acc ? v : acc;
                                else
                                    acc += is_lp ? pow(fabs(v), n->attrs.lp_p) : v;
                            }
                    if (is_lp)
                        acc = pow(acc, 1.0 / n->attrs.lp_p);
                    else if (!is_max)
                        acc /= (double)(n->attrs.count_include_pad ? padded : inside);
                    xf_rt_store_f64(y->dtype, y->data, oi, acc);
                    if (ind)
                        xf_rt_store_i64(ind->dtype, ind->data, oi, best);
                }
    free(xd);
    return XF_OK;
}

/* MaxUnpool: Y is zeros but for X's elements, each at the place its index
 * in I names in the whole of Y (as ONNX Runtime and PyTorch place them:
 * MaxPool's Indices of an input of Y's shape put each maximum back where
 * it was); of two elements with one index the later one stays. */
xf_status xf_ref_max_unpool(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out,
                            xf_error *err)
{
    const xf_tensor_view *x = &in[0], *ind = &in[1], *y = &out[0];
    if (ind->dtype != XF_DT_INT64 || !xf_shape_equal(&ind->shape, &x->shape) || y->dtype != x->dtype)
        return xf_rt_bad_node(err, n, "I must be int64 of X's shape, and Y of X's type");
    int64_t count = xf_rt_numel(x), total = xf_rt_numel(y);
    size_t size = xf_dtype_size(x->dtype);
    if (total > 0)
        memset(y->data, 0, xf_rt_bytes(y));
    for (int64_t i = 0; i < count; i++) {
        int64_t at = xf_rt_load_i64(ind->dtype, ind->data, i);
        if (at < 0 || at >= total)
            return xf_rt_bad_node(err, n, "index %lld (element %lld of I) is outside the output's %lld elements",
                                  (long long)at, (long long)i, (long long)total);
        memcpy((char *)y->data + (size_t)at * size, (const char *)x->data + (size_t)i * size, size);
    }
    return XF_OK;
}

/* GlobalAveragePool / GlobalMaxPool / GlobalLpPool: one value per (batch,
 * channel). */
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
    bool is_max = n->op == XF_OP_GLOBAL_MAX_POOL, is_lp = n->op == XF_OP_GLOBAL_LP_POOL;
    for (int64_t p = 0; p < planes; p++) {
        double acc = is_max ? -INFINITY : 0.0;
        for (int64_t i = 0; i < sp; i++) {
            double v = xf_rt_load_f64(x->dtype, x->data, p * sp + i);
            acc = is_max ? (v > acc ? v : acc) : acc + (is_lp ? pow(fabs(v), n->attrs.lp_p) : v);
        }
        xf_rt_store_f64(y->dtype, y->data, p, is_max ? acc : is_lp ? pow(acc, 1.0 / n->attrs.lp_p) : acc / (double)sp);
    }
    return XF_OK;
}
