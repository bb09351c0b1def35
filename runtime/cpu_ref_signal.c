/* cpu_ref signal-processing ops: DFT, STFT, HannWindow, HammingWindow,
 * BlackmanWindow and MelWeightMatrix.
 *
 * The transforms are direct O(n^2) sums in double, each term's twiddle the
 * cosine and sine of 2*pi*m/n with m = k*t mod n (exact integer
 * arithmetic, so that long transforms lose nothing to large angles);
 * 16-bit floats are widened to float (cpu_ref.c). */
#include "xf_rt_internal.h"

#include <math.h>
#include <stdlib.h>

#define SIGNAL_PI 3.14159265358979323846

/* The scalar integer input i; false when absent. */
static bool scalar_input(const xf_node *n, const xf_tensor_view *in, int i, int64_t *v)
{
    if (n->n_inputs <= i || !xf_rt_present(&in[i]) || xf_rt_numel(&in[i]) != 1)
        return false;
    *v = xf_rt_load_i64(in[i].dtype, in[i].data, 0);
    return true;
}

/* An n-point transform's twiddles and the buffers of one line of it. */
typedef struct dft_plan {
    int64_t n, bins;
    bool inverse;
    double *cs, *sn; /* cos and sin of 2*pi*m/n, m < n */
    double *re, *im; /* the line's samples (n of them, zero past its length) */
    double *out;     /* bins x (real, imaginary) */
} dft_plan;

static void dft_plan_free(dft_plan *p)
{
    free(p->cs);
    free(p->sn);
    free(p->re);
    free(p->im);
    free(p->out);
}

static xf_status dft_plan_make(dft_plan *p, int64_t n, int64_t bins, bool inverse, xf_error *err)
{
    *p = (dft_plan){.n = n, .bins = bins, .inverse = inverse};
    size_t count = (size_t)(n > 0 ? n : 1);
    p->cs = malloc(sizeof *p->cs * count);
    p->sn = malloc(sizeof *p->sn * count);
    p->re = malloc(sizeof *p->re * count);
    p->im = malloc(sizeof *p->im * count);
    p->out = malloc(sizeof *p->out * 2 * (size_t)(bins > 0 ? bins : 1));
    if (!p->cs || !p->sn || !p->re || !p->im || !p->out) {
        dft_plan_free(p);
        return xf_error_set(err, XF_ERR_NOMEM, "out of memory for a %lld-point DFT", (long long)n);
    }
    for (int64_t m = 0; m < n; m++) {
        double angle = 2.0 * SIGNAL_PI * (double)m / (double)n;
        p->cs[m] = cos(angle);
        p->sn[m] = sin(angle);
    }
    return XF_OK;
}

/* p->out[k] = sum over t of (re[t] + i im[t]) e^(-+2 pi i k t / n), the
 * inverse scaled by 1/n. */
static void dft_plan_run(dft_plan *p)
{
    double sign = p->inverse ? 1.0 : -1.0, scale = p->inverse ? 1.0 / (double)p->n : 1.0;
    for (int64_t k = 0; k < p->bins; k++) {
        double sr = 0, si = 0;
        int64_t m = 0; /* k * t mod n */
        for (int64_t t = 0; t < p->n; t++) {
            double c = p->cs[m], s = sign * p->sn[m];
            sr += p->re[t] * c - p->im[t] * s;
            si += p->re[t] * s + p->im[t] * c;
            m += k;
            if (m >= p->n)
                m %= p->n;
        }
        p->out[2 * k] = sr * scale;
        p->out[2 * k + 1] = si * scale;
    }
}

/* DFT: input [..., L, ..., c] (c 1: real, 2: complex) along axis, n =
 * dft_length points (the line zero-padded or cut), into [..., bins, ..., 2].
 * Inverse and onesided: the inverse real transform of the first n / 2 + 1
 * bins (zeros past L) completed as a Hermitian spectrum, whose real part
 * goes to [..., n, ..., 1] (the imaginary parts of bin 0 and, n even, of
 * bin n / 2 drop out, as numpy's irfft has it). */
xf_status xf_ref_dft(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err)
{
    const xf_attrs *a = &n->attrs;
    const xf_shape *xs = &in[0].shape;
    int64_t axis = a->axis, len = 0;
    int ax;
    scalar_input(n, in, 2, &axis);
    if (xs->ndim < 2 || (xs->dims[xs->ndim - 1] != 1 && xs->dims[xs->ndim - 1] != 2) ||
        !xf_dft_axis_valid(axis, xs->ndim, &ax))
        return xf_rt_bad_node(err, n, "the input is not [..., 1 or 2] with axis %lld among its signal dims",
                              (long long)axis);
    int64_t c = xs->dims[xs->ndim - 1], lines = xs->dims[ax], outer = 1, inner = 1;
    bool irfft = a->dft_inverse && a->dft_onesided;
    if (!scalar_input(n, in, 1, &len))
        len = irfft ? 2 * (lines - 1) : lines;
    int64_t bins = a->dft_onesided && !irfft ? len / 2 + 1 : len, oc = irfft ? 1 : 2;
    xf_shape want = *xs;
    want.dims[ax] = bins;
    want.dims[xs->ndim - 1] = oc;
    if (len < 1 || !xf_shape_equal(&out[0].shape, &want))
        return xf_rt_bad_node(err, n, "the output is not the input's shape with %lld bins along axis %d and %lld last",
                              (long long)bins, ax, (long long)oc);
    for (int d = 0; d < ax; d++)
        outer *= xs->dims[d];
    for (int d = ax + 1; d < xs->ndim - 1; d++)
        inner *= xs->dims[d];
    if (xf_rt_numel(&out[0]) == 0) /* no lines: no plan (whose dft_length an empty output leaves unchecked) */
        return XF_OK;
    dft_plan p;
    xf_status st = dft_plan_make(&p, len, bins, a->dft_inverse, err);
    if (st != XF_OK)
        return st;
    int64_t used = lines < len ? lines : len;
    for (int64_t o = 0; o < outer; o++)
        for (int64_t i = 0; i < inner; i++) {
            for (int64_t t = 0; t < len; t++) {
                int64_t src = irfft && t > len / 2 ? len - t : t; /* the conjugate of bin n - t */
                int64_t at = ((o * lines + src) * inner + i) * c;
                bool have = src < used && (!irfft || src <= len / 2);
                p.re[t] = have ? xf_rt_load_f64(in[0].dtype, in[0].data, at) : 0;
                p.im[t] = have && c == 2 ? xf_rt_load_f64(in[0].dtype, in[0].data, at + 1) : 0;
                if (src != t)
                    p.im[t] = -p.im[t];
            }
            dft_plan_run(&p);
            for (int64_t k = 0; k < bins; k++) {
                int64_t at = ((o * bins + k) * inner + i) * oc;
                xf_rt_store_f64(out[0].dtype, out[0].data, at, p.out[2 * k]);
                if (oc == 2)
                    xf_rt_store_f64(out[0].dtype, out[0].data, at + 1, p.out[2 * k + 1]);
            }
        }
    dft_plan_free(&p);
    return XF_OK;
}

/* STFT: signal [B, L, c] (or [B, L], real), frames of frame_length
 * samples every frame_step, each times the window (ones when absent), into
 * [B, frames, bins, 2]. */
xf_status xf_ref_stft(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err)
{
    const xf_shape *xs = &in[0].shape;
    const xf_tensor_view *win = n->n_inputs > 2 && xf_rt_present(&in[2]) ? &in[2] : NULL;
    bool rank_ok = xs->ndim == 2 || (xs->ndim == 3 && (xs->dims[2] == 1 || xs->dims[2] == 2));
    int64_t step = 0, frame = win ? win->shape.dims[0] : rank_ok ? xs->dims[1] : 0;
    scalar_input(n, in, 3, &frame);
    if (!rank_ok || !scalar_input(n, in, 1, &step) || step < 1 || frame < 1 || frame > xs->dims[1] ||
        (win && (win->shape.ndim != 1 || win->shape.dims[0] != frame)))
        return xf_rt_bad_node(err, n, "the operands are not a signal [batch, length, 1 or 2] or [batch, length], "
                                      "a positive frame_step and a window of frame_length (at most length) samples");
    int64_t batch = xs->dims[0], length = xs->dims[1], c = xs->ndim == 3 ? xs->dims[2] : 1;
    int64_t frames = 1 + (length - frame) / step, bins = n->attrs.dft_onesided ? frame / 2 + 1 : frame;
    xf_shape want = {.ndim = 4, .dims = {batch, frames, bins, 2}};
    if (!xf_shape_equal(&out[0].shape, &want))
        return xf_rt_bad_node(err, n, "the output is not [batch, frames, bins, 2]");
    if (xf_rt_numel(&out[0]) == 0) /* no frames: no plan (an empty batch leaves the length unchecked) */
        return XF_OK;
    dft_plan p;
    xf_status st = dft_plan_make(&p, frame, bins, false, err);
    if (st != XF_OK)
        return st;
    for (int64_t b = 0; b < batch; b++)
        for (int64_t f = 0; f < frames; f++) {
            for (int64_t t = 0; t < frame; t++) {
                double w = win ? xf_rt_load_f64(win->dtype, win->data, t) : 1.0;
                int64_t at = (b * length + f * step + t) * c;
                p.re[t] = xf_rt_load_f64(in[0].dtype, in[0].data, at) * w;
                p.im[t] = c == 2 ? xf_rt_load_f64(in[0].dtype, in[0].data, at + 1) * w : 0;
            }
            dft_plan_run(&p);
            xf_rt_store_f64_run(out[0].dtype, out[0].data, (b * frames + f) * bins * 2, bins * 2, p.out);
        }
    dft_plan_free(&p);
    return XF_OK;
}

/* HannWindow, HammingWindow, BlackmanWindow of `size` samples over a
 * period of N = size (periodic) or size - 1 (symmetric; 0 for one sample,
 * whose value is then NaN as in ONNX's reference). */
xf_status xf_ref_window(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err)
{
    int64_t size = 0;
    if (!scalar_input(n, in, 0, &size) || size < 0 || out[0].shape.ndim != 1 || out[0].shape.dims[0] != size)
        return xf_rt_bad_node(err, n, "size is not a non-negative scalar equal to the output's length");
    double period = (double)(n->attrs.window_symmetric ? size - 1 : size);
    for (int64_t i = 0; i < size; i++) {
        double x = period > 0 ? 2.0 * SIGNAL_PI * (double)i / period : NAN, v;
        if (n->op == XF_OP_HANN_WINDOW)
            v = sin(x / 2) * sin(x / 2);
        else if (n->op == XF_OP_HAMMING_WINDOW)
            v = 25.0 / 46.0 - 21.0 / 46.0 * cos(x);
        else
            v = 0.42 - 0.5 * cos(x) + 0.08 * cos(2 * x);
        xf_rt_store_f64(out[0].dtype, out[0].data, i, v);
    }
    return XF_OK;
}

/* Hertz to mel as ONNX's reference computes it: 2595 * log1p(hz / 700) in
 * the edges' precision (double, else float), divided by ln 10 in double. */
static double hz_to_mel(double hz, bool in_double)
{
    if (in_double)
        return 2595.0 * log1p(hz / 700.0) / log(10.0);
    return (double)(2595.0f * log1pf((float)hz / 700.0f)) / log(10.0);
}

/* Python's (and numpy's) floor division of doubles, which rounds the
 * exact quotient of a - fmod(a, b) by b rather than a / b. */
static double floor_div(double a, double b)
{
    double mod = fmod(a, b), div = (a - mod) / b;
    if (mod != 0 && (b < 0) != (mod < 0))
        div -= 1.0;
    if (div == 0)
        return copysign(0.0, a / b);
    double f = floor(div);
    return div - f > 0.5 ? f + 1.0 : f;
}

/* MelWeightMatrix: [dft_length / 2 + 1, num_mel_bins] triangles over
 * num_mel_bins + 2 points spaced evenly in mel from lower_edge_hertz to
 * upper_edge_hertz in steps of (high - low) / (num_mel_bins + 2), each
 * point's frequency bin floor((dft_length + 1) * hz / sample_rate), as
 * ONNX's reference builds them (and ONNX Runtime, in float).  A point that
 * falls outside the bins is an error. */
xf_status xf_ref_mel_weight_matrix(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out,
                                   xf_error *err)
{
    int64_t mels = 0, length = 0, rate = 0;
    const xf_tensor_view *y = &out[0];
    if (!scalar_input(n, in, 0, &mels) || !scalar_input(n, in, 1, &length) || !scalar_input(n, in, 2, &rate) ||
        xf_rt_numel(&in[3]) != 1 || xf_rt_numel(&in[4]) != 1)
        return xf_rt_bad_node(err, n, "its five inputs must be scalars");
    int64_t spec = length / 2 + 1;
    if (mels < 1 || length < 1 || rate < 1 || y->shape.ndim != 2 || y->shape.dims[0] != spec ||
        y->shape.dims[1] != mels)
        return xf_rt_bad_node(err, n, "num_mel_bins %lld, dft_length %lld and sample_rate %lld must be positive "
                              "and give the output's shape", (long long)mels, (long long)length, (long long)rate);
    bool in_double = in[3].dtype == XF_DT_DOUBLE;
    double low = hz_to_mel(xf_rt_load_f64(in[3].dtype, in[3].data, 0), in_double);
    double high = hz_to_mel(xf_rt_load_f64(in[4].dtype, in[4].data, 0), in_double);
    double step = (high - low) / (double)(mels + 2);
    int64_t *bins = malloc(sizeof *bins * (size_t)(mels + 2));
    if (!bins)
        return xf_error_set(err, XF_ERR_NOMEM, "out of memory for %lld mel bins", (long long)mels);
    for (int64_t i = 0; i < mels + 2; i++) {
        double hz = 700.0 * expm1(((double)i * step + low) / 2595.0 * log(10.0));
        double bin = floor_div((double)(length + 1) * hz, (double)rate);
        if (!(bin >= 0 && bin < (double)spec)) {
            free(bins);
            return xf_rt_bad_node(err, n, "mel point %lld falls on frequency bin %g, outside the %lld bins "
                                  "(the edges must lie in [0, sample_rate / 2])", (long long)i, bin, (long long)spec);
        }
        bins[i] = (int64_t)bin;
    }
    for (int64_t i = 0; i < spec * mels; i++)
        xf_rt_store_f64(y->dtype, y->data, i, 0.0);
    for (int64_t i = 0; i < mels; i++) {
        int64_t lo = bins[i], center = bins[i + 1], hi = bins[i + 2];
        if (center == lo)
            xf_rt_store_f64(y->dtype, y->data, center * mels + i, 1.0);
        for (int64_t j = lo; center != lo && j <= center; j++)
            xf_rt_store_f64(y->dtype, y->data, j * mels + i, (double)(j - lo) / (double)(center - lo));
        for (int64_t j = center; j < hi; j++)
            xf_rt_store_f64(y->dtype, y->data, j * mels + i, (double)(hi - j) / (double)(hi - center));
    }
    free(bins);
    return XF_OK;
}
