/* The cpu backend's STFT and DFT of floats as matrix products: the frames
 * of the signal (a DFT's lines along its last signal axis) times the
 * transform's matrix, one column per bin's real and imaginary part, on
 * oneDNN's sgemm.  The twiddles are the cosines and sines of 2 pi m / n
 * with m = k t mod n, computed in double and rounded once; the sums are
 * float's, as ONNX Runtime's are.  cpu_ref's direct sums in double took
 * 33 ms for a second of 16 kHz audio in frames of 512 (Kaldi's features).
 *
 * Where the matrix would pass 4 M floats (transforms of more than about
 * 1,400 points), where a DFT's axis is not the last before the complex
 * parts, and where the operands do not fit, cpu_ref's kernel runs (and
 * names what does not fit). */
#include "cpu_dnnl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { SIGNAL_MAX_MATRIX = 1 << 22, STFT_BLOCK = 256 };

typedef enum { SIGNAL_FORWARD, SIGNAL_INVERSE, SIGNAL_IRFFT } signal_kind;

/* The last transform's matrix (rows: the samples' parts read, cols: the
 * output's values per line) and the STFT's frames, kept between runs. */
typedef struct signal_state {
    int64_t n, rows, cols, comps;
    float *mat;
    float *frames;
    size_t frames_cap;
    /* a real STFT's halves (real_matrix): cosines then sines */
    int64_t half_n, half_bins;
    float *half;
    float *row; /* one output row, interleaved */
} signal_state;

static void signal_free(void *own)
{
    signal_state *s = own;
    if (!s)
        return;
    free(s->mat);
    free(s->frames);
    free(s->half);
    free(s->row);
    free(s);
}

/* An n-point transform's matrix for `used` samples (bins, for the inverse
 * real transform) of `comps` parts (1: real, 2: complex):
 *   forward and inverse: sample t's real part gives bin k (cos, +-sin),
 *     its imaginary part (-+sin, cos), times 1/n for the inverse;
 *   irfft: bin t of a Hermitian spectrum gives sample k w (re cos - im
 *     sin) / n, w 1 for bin 0 and, n even, bin n / 2 (whose imaginary
 *     parts drop out, as cpu_ref's and numpy's), else 2.
 * Kept when the last run's fits; false where it would pass the limit or
 * memory runs out. */
static bool signal_matrix(signal_state *s, signal_kind kind, int64_t n, int64_t used, int64_t comps, int64_t bins)
{
    int64_t rows = used * comps, cols = kind == SIGNAL_IRFFT ? n : 2 * bins;
    if (s->mat && s->n == n && s->rows == rows && s->cols == cols && s->comps == comps) /* one kind a node */
        return true;
    free(s->mat);
    s->mat = NULL;
    if (rows < 1 || cols < 1 || rows > SIGNAL_MAX_MATRIX / cols)
        return false;
    s->mat = malloc(sizeof(float) * (size_t)(rows * cols));
    if (!s->mat)
        return false;
    s->n = n, s->rows = rows, s->cols = cols, s->comps = comps;
    const double two_pi = 6.283185307179586476925;
    double sign = kind == SIGNAL_FORWARD ? -1.0 : 1.0, scale = kind == SIGNAL_FORWARD ? 1.0 : 1.0 / (double)n;
    for (int64_t t = 0; t < used; t++) {
        float *re = s->mat + t * comps * cols, *im = re + cols;
        bool once = t == 0 || 2 * t == n;
        double w = kind == SIGNAL_IRFFT ? (once ? scale : 2.0 * scale) : scale;
        int64_t m = 0; /* k t mod n */
        for (int64_t k = 0; k < (kind == SIGNAL_IRFFT ? n : bins); k++) {
            double angle = two_pi * (double)m / (double)n, c = w * cos(angle), sn = sign * w * sin(angle);
            if (kind == SIGNAL_IRFFT) {
                re[k] = (float)c;
                if (comps == 2)
                    im[k] = once ? 0.0f : (float)-sn;
            } else {
                re[2 * k] = (float)c;
                re[2 * k + 1] = (float)sn;
                if (comps == 2) {
                    im[2 * k] = (float)-sn;
                    im[2 * k + 1] = (float)c;
                }
            }
            m += t;
            m -= m >= n ? n : 0;
        }
    }
    return true;
}

/* A real frame's n-point transform in halves: samples t and n - t meet
 * the same cosine and opposite sines, so with e_t = x_t + x_(n-t) (x_0,
 * and x_(n/2) for even n, alone) and o_t = x_t - x_(n-t), Re X_k = sum of
 * e_t cos(2 pi k t / n) over t <= n / 2 and Im X_k = -sum of o_t sin(2 pi
 * k t / n) over 0 < t < n / 2: two products of half the multiply-adds of
 * the whole matrix's.  The matrices: ce = n / 2 + 1 rows of cosines, then
 * n - ce rows of negated sines, of `bins` columns each. */
static bool real_matrix(signal_state *s, int64_t n, int64_t bins)
{
    if (s->half && s->half_n == n && s->half_bins == bins)
        return true;
    free(s->half);
    free(s->row);
    s->row = NULL;
    s->half = NULL;
    if (bins < 1 || n > SIGNAL_MAX_MATRIX / bins)
        return false;
    s->half = malloc(sizeof(float) * (size_t)(n * bins));
    s->row = malloc(sizeof(float) * (size_t)(2 * bins));
    if (!s->half || !s->row) { /* nothing kept for a later run to take */
        free(s->half);
        free(s->row);
        s->half = s->row = NULL;
        return false;
    }
    s->half_n = n, s->half_bins = bins;
    const double two_pi = 6.283185307179586476925;
    int64_t ce = n / 2 + 1;
    for (int64_t r = 0; r < n; r++) {
        int64_t t = r < ce ? r : r - ce + 1, m = 0; /* m = k t mod n */
        for (int64_t k = 0; k < bins; k++) {
            double angle = two_pi * (double)m / (double)n;
            s->half[r * bins + k] = (float)(r < ce ? cos(angle) : -sin(angle));
            m += t;
            m -= m >= n ? n : 0;
        }
    }
    return true;
}

/* Frame rows [r0, r0 + count) of a real STFT into y: their e and o
 * (windowed) into the frames, the halves' products into each output
 * row's first and second halves, then interleaved. */
static xf_status real_frames(signal_state *s, const xf_node *n, const float *x, const float *w, int64_t r0,
                             int64_t count, int64_t frames, int64_t length, int64_t step, float *y, xf_error *err)
{
    int64_t fn = s->half_n, bins = s->half_bins, ce = fn / 2 + 1, co = fn - ce;
    for (int64_t i = 0; i < count; i++) {
        int64_t b = (r0 + i) / frames, f = (r0 + i) % frames;
        const float *v = x + b * length + f * step;
        float *e = s->frames + i * fn, *o = e + ce;
        e[0] = w ? v[0] * w[0] : v[0];
        for (int64_t t = 1; t < ce; t++) {
            float a = w ? v[t] * w[t] : v[t], z = w ? v[fn - t] * w[fn - t] : v[fn - t];
            e[t] = t == fn - t ? a : a + z;
            if (t < fn - t)
                o[t - 1] = a - z;
        }
    }
    float *yr = y + r0 * 2 * bins;
    if (!xf_dn_sgemm(false, count, bins, ce, 1.0f, s->frames, fn, s->half, bins, 0.0f, yr, 2 * bins) ||
        !xf_dn_sgemm(false, count, bins, co, 1.0f, s->frames + ce, fn, s->half + ce * bins, bins, 0.0f, yr + bins,
                     2 * bins))
        return xf_rt_bad_node(err, n, "oneDNN's sgemm failed");
    for (int64_t i = 0; i < count; i++, yr += 2 * bins) {
        for (int64_t k = 0; k < bins; k++) {
            s->row[2 * k] = yr[k];
            s->row[2 * k + 1] = yr[bins + k];
        }
        memcpy(yr, s->row, sizeof(float) * (size_t)(2 * bins));
    }
    return XF_OK;
}

/* What profiles call the last run's way. */
static const char matrix_name[] = "own loop: the transform's matrix on oneDNN's sgemm";

/* A run on cpu_ref's kernel, which profiles then name. */
static xf_status on_ref(xf_dn_node *st, xf_ref_kernel ref, const xf_node *n, const xf_tensor_view *in,
                        const xf_tensor_view *out, xf_error *err)
{
    st->own_name = "cpu_ref's kernel (a matrix past 4 M floats, or an axis before the last)";
    return ref(n, in, out, err);
}

/* The scalar integer input i, or def where it is absent. */
static int64_t scalar_or(const xf_node *n, const xf_tensor_view *in, int i, int64_t def)
{
    if (n->n_inputs <= i || !xf_rt_present(&in[i]) || xf_rt_numel(&in[i]) != 1)
        return def;
    return xf_rt_load_i64(in[i].dtype, in[i].data, 0);
}

/* DFT along the axis before the complex parts: each line of `lines`
 * samples one row, the first `used` of them read (lda the whole line). */
static xf_status dft_run(xf_dn_node *st, const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out,
                         xf_error *err)
{
    signal_state *s = st->own;
    const xf_attrs *a = &n->attrs;
    const xf_shape *xs = &in[0].shape;
    int ax;
    if (xs->ndim < 2 || !xf_dft_axis_valid(scalar_or(n, in, 2, a->axis), xs->ndim, &ax) || ax != xs->ndim - 2)
        return on_ref(st, xf_ref_dft, n, in, out, err);
    int64_t c = xs->dims[xs->ndim - 1], lines = xs->dims[ax];
    bool irfft = a->dft_inverse && a->dft_onesided;
    int64_t len = scalar_or(n, in, 1, irfft ? 2 * (lines - 1) : lines);
    int64_t bins = a->dft_onesided && !irfft ? len / 2 + 1 : len, oc = irfft ? 1 : 2;
    int64_t used = lines < len ? lines : len;
    if (irfft && used > len / 2 + 1)
        used = len / 2 + 1;
    xf_shape want = *xs;
    want.dims[ax] = bins;
    want.dims[xs->ndim - 1] = oc;
    signal_kind kind = irfft ? SIGNAL_IRFFT : a->dft_inverse ? SIGNAL_INVERSE : SIGNAL_FORWARD;
    if ((c != 1 && c != 2) || len < 1 || !xf_shape_equal(&out[0].shape, &want) ||
        !signal_matrix(s, kind, len, used, c, bins))
        return on_ref(st, xf_ref_dft, n, in, out, err);
    st->own_name = matrix_name;
    int64_t outer = xf_rt_numel(&in[0]) / (lines * c);
    if (!xf_dn_sgemm(false, outer, s->cols, s->rows, 1.0f, in[0].data, lines * c, s->mat, s->cols, 0.0f, out[0].data,
                     s->cols))
        return xf_rt_bad_node(err, n, "oneDNN's sgemm failed");
    return XF_OK;
}

/* STFT: frames of STFT_BLOCK at a time copied (times the window) into
 * rows, then times the matrix into the output's [frames, bins, 2]. */
static xf_status stft_run(xf_dn_node *st, const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out,
                          xf_error *err)
{
    signal_state *s = st->own;
    const xf_shape *xs = &in[0].shape;
    const xf_tensor_view *win = n->n_inputs > 2 && xf_rt_present(&in[2]) ? &in[2] : NULL;
    bool rank_ok = xs->ndim == 2 || (xs->ndim == 3 && (xs->dims[2] == 1 || xs->dims[2] == 2));
    if (!rank_ok || (win && win->shape.ndim != 1))
        return on_ref(st, xf_ref_stft, n, in, out, err);
    int64_t frame = scalar_or(n, in, 3, win ? win->shape.dims[0] : xs->dims[1]), step = scalar_or(n, in, 1, 0);
    int64_t batch = xs->dims[0], length = xs->dims[1], c = xs->ndim == 3 ? xs->dims[2] : 1;
    if (step < 1 || frame < 1 || frame > length || (win && win->shape.dims[0] != frame))
        return on_ref(st, xf_ref_stft, n, in, out, err);
    int64_t frames = 1 + (length - frame) / step, bins = n->attrs.dft_onesided ? frame / 2 + 1 : frame;
    xf_shape want = {.ndim = 4, .dims = {batch, frames, bins, 2}};
    if (!xf_shape_equal(&out[0].shape, &want) ||
        !(c == 1 ? real_matrix(s, frame, bins) : signal_matrix(s, SIGNAL_FORWARD, frame, frame, c, bins)))
        return on_ref(st, xf_ref_stft, n, in, out, err);
    st->own_name = matrix_name;
    int64_t k = frame * c, rows = batch * frames;
    if (!xf_dn_floats_reserve(&s->frames, &s->frames_cap, (size_t)(STFT_BLOCK * k)))
        return xf_error_set(err, XF_ERR_NOMEM, "out of memory in %s", xf_op_name(n->op));
    const float *x = in[0].data, *w = win ? win->data : NULL;
    float *y = out[0].data;
    for (int64_t r0 = 0; r0 < rows; r0 += STFT_BLOCK) {
        int64_t count = rows - r0 < STFT_BLOCK ? rows - r0 : STFT_BLOCK;
        if (c == 1) {
            xf_status rs = real_frames(s, n, x, w, r0, count, frames, length, step, y, err);
            if (rs != XF_OK)
                return rs;
            continue;
        }
        for (int64_t i = 0; i < count; i++) {
            int64_t b = (r0 + i) / frames, f = (r0 + i) % frames;
            const float *src = x + (b * length + f * step) * c;
            float *dst = s->frames + i * k;
            if (!w)
                memcpy(dst, src, sizeof(float) * (size_t)k);
            else
                for (int64_t t = 0; t < k; t++)
                    dst[t] = src[t] * w[t / c];
        }
        if (!xf_dn_sgemm(false, count, s->cols, k, 1.0f, s->frames, k, s->mat, s->cols, 0.0f, y + r0 * s->cols,
                         s->cols))
            return xf_rt_bad_node(err, n, "oneDNN's sgemm failed");
    }
    return XF_OK;
}

static bool signal_handles(const xf_graph *g, const xf_node *n)
{
    if (!xf_dn_is_f32(g, n->inputs[0]) || !xf_dn_is_f32(g, n->outputs[0]))
        return false;
    return n->op != XF_OP_STFT || xf_dn_input(n, 2) < 0 || xf_dn_is_f32(g, n->inputs[2]);
}

static xf_status signal_prepare(xf_dn_ctx *c, const xf_graph *g, const xf_node *n, const xf_tensor_view *in,
                                const xf_tensor_view *out, xf_dn_node *st, xf_error *err)
{
    (void)c, (void)g, (void)in, (void)out;
    signal_state *s = calloc(1, sizeof *s);
    if (!s)
        return xf_error_set(err, XF_ERR_NOMEM, "out of memory in %s", xf_op_name(n->op));
    st->own = s;
    st->own_free = signal_free;
    st->own_run = n->op == XF_OP_STFT ? stft_run : dft_run;
    st->own_name = matrix_name;
    return XF_OK;
}

const xf_dn_handler xf_dn_signal_handler = {signal_handles, NULL, signal_prepare, NULL};
