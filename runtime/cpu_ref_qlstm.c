/* cpu_ref's DynamicQuantizeLSTM (com.microsoft), which ONNX Runtime's
 * quantize_dynamic writes for an LSTM: W [dirs, input, 4 hidden] and R
 * [dirs, hidden, 4 hidden] 8-bit (gates in ONNX's i, o, f, c order), with
 * scales and zero points per direction or per column (ONNX Runtime's
 * kernel refuses zero points per column that differ).  Computed in float as
 * ONNX Runtime's CPU kernel computes it, per direction:
 *   - the inputs of every step up to the longest sequence (reversed within
 *     each sequence's length for the reverse direction) quantized to uint8
 *     at once, as DynamicQuantizeLinear does (one scale and zero point over
 *     them and 0), multiplied by W summed in int32, and scaled by
 *     x_scale * W_scale;
 *   - at each step, the hidden state of every batch entry quantized
 *     likewise (a finished sequence's state is 0 when Y is an output, else
 *     its last), its product with R scaled and added;
 *   - the gates: peephole, then bias (W's plus R's), clip, activation;
 *     c = f c + i g, then the output gate with the new c, h = o h(c).
 * The activations are computed in double and rounded (ONNX Runtime uses
 * MLAS's float approximations of the logistic and tanh functions), so a
 * state may quantize one step apart from ONNX Runtime's.  The products go
 * through a function the backend gives (xf_qlstm): plain loops here,
 * oneDNN's sgemm on the cpu backend. */
#include "xf_rt_internal.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct qlstm {
    const xf_node *n;
    int64_t seq, batch, in, hidden, dirs;
    const xf_tensor_view *x, *w, *r, *b, *lens, *h0, *c0, *p, *ws, *wz, *rs, *rz;
} qlstm;

static const xf_tensor_view *given(const xf_node *n, const xf_tensor_view *v, int k)
{
    return k < n->n_inputs && xf_rt_present(&v[k]) ? &v[k] : NULL;
}

static float ldf(const xf_tensor_view *v, int64_t i) { return (float)xf_rt_load_f64(v->dtype, v->data, i); }

/* Activation `which` (f, g or h) of direction d, in double, rounded. */
static float act(const qlstm *q, int64_t d, int which, float v)
{
    static const unsigned char defaults[3] = {XF_RNN_SIGMOID, XF_RNN_TANH, XF_RNN_TANH};
    const xf_rnn_attrs *a = &q->n->attrs.rnn;
    int i = (int)d * 3 + which, f = a->n_acts ? a->acts[i] : defaults[which];
    double x = v, al = a->n_acts ? a->act_alpha[i] : 0, be = a->n_acts ? a->act_beta[i] : 0;
    switch (f) {
    case XF_RNN_RELU: return (float)(x > 0 ? x : 0);
    case XF_RNN_TANH: return (float)tanh(x);
    case XF_RNN_SIGMOID: return (float)(1.0 / (1.0 + exp(-x)));
    case XF_RNN_AFFINE: return (float)(al * x + be);
    case XF_RNN_LEAKY_RELU: return (float)(x >= 0 ? x : al * x);
    case XF_RNN_THRESHOLDED_RELU: return (float)(x > al ? x : 0);
    case XF_RNN_SCALED_TANH: return (float)(al * tanh(be * x));
    case XF_RNN_HARD_SIGMOID: return (float)fmax(0.0, fmin(1.0, al * x + be));
    case XF_RNN_ELU: return (float)(x >= 0 ? x : al * expm1(x));
    case XF_RNN_SOFTSIGN: return (float)(x / (1.0 + fabs(x)));
    case XF_RNN_SOFTPLUS: return (float)(x > 0 ? x + log1p(exp(-x)) : log1p(exp(x)));
    default: return NAN;
    }
}

/* md (k x cols) = the 8-bit m of direction d less its zero point, one per
 * direction or per column (ONNX Runtime refuses zero points per column
 * that differ). */
static int32_t weight_differences(const xf_tensor_view *m, const xf_tensor_view *mz, int64_t d, int64_t k,
                                  int64_t cols, int32_t *md, float *mf)
{
    bool per_col = xf_rt_numel(mz) > m->shape.dims[0];
    const uint8_t *u = (const uint8_t *)m->data + d * k * cols;
    const int8_t *s = (const int8_t *)m->data + d * k * cols;
    int32_t big = 0;
    for (int64_t i = 0; i < k * cols; i++) {
        int32_t mzp = (int32_t)xf_rt_load_i64(mz->dtype, mz->data, per_col ? d * cols + i % cols : d);
        md[i] = (m->dtype == XF_DT_INT8 ? (int32_t)s[i] : (int32_t)u[i]) - mzp;
        mf[i] = (float)md[i];
        big = md[i] > big ? md[i] : -md[i] > big ? -md[i] : big;
    }
    return big;
}

/* The products' operands and scratch: weight differences as int32 (wd,
 * rd) and float (wf, rf, exact), their largest magnitudes, and the
 * quantized rows (qa, af) and sums (acc, sums). */
typedef struct qwork {
    xf_attn_gemm gemm;
    int32_t *wd, *rd, max_w, max_r, *acc;
    float *wf, *rf, *af, *sums;
    uint8_t *qa;
} qwork;

/* out (rows x cols) (+)= quantize(a rows x k) times md (k x cols, m's
 * differences from weight_differences; mf the same as floats, largest
 * magnitude max_m), scaled by a's scale times m's of direction d (per
 * direction or column).  Where no sum can reach 2^24 the sums are the
 * backend's float product of the differences (exact in any order), else
 * int32 loops. */
static void qproduct(const qwork *w, const float *a, int64_t rows, int64_t k, const int32_t *md, const float *mf,
                     int32_t max_m, const xf_tensor_view *m, const xf_tensor_view *ms, int64_t d, int64_t cols,
                     bool accumulate, float *out)
{
    uint8_t *qa = w->qa;
    int32_t *acc = w->acc;
    float lo = 0.0f, hi = 0.0f, scale, zp;
    for (int64_t i = 0; i < rows * k; i++) {
        lo = fminf(lo, a[i]);
        hi = fmaxf(hi, a[i]);
    }
    xf_rt_dynamic_qparams(NULL, NULL, lo, hi, &scale, &zp);
    for (int64_t i = 0; i < rows * k; i++)
        qa[i] = (uint8_t)xf_rt_quantize_round(a[i] / scale, zp, XF_DT_UINT8);
    int64_t per_col = xf_rt_numel(ms) > m->shape.dims[0];
    int32_t max_a = 0;
    for (int64_t i = 0; i < rows * k; i++) {
        int32_t v = (int32_t)qa[i] - (int32_t)zp;
        w->af[i] = (float)v;
        max_a = v > max_a ? v : -v > max_a ? -v : max_a;
    }
    bool fast = (double)k * max_a * max_m < (double)(1 << 24) &&
                w->gemm(false, rows, cols, k, 1.0f, w->af, k, mf, cols, 0.0f, w->sums, cols);
    for (int64_t r = 0; r < rows; r++) {
        for (int64_t j = 0; !fast && j < cols; j++)
            acc[j] = 0;
        for (int64_t t = 0; !fast && t < k; t++) {
            int32_t av = (int32_t)qa[r * k + t] - (int32_t)zp;
            const int32_t *mr = md + t * cols;
            for (int64_t j = 0; j < cols; j++)
                acc[j] += av * mr[j];
        }
        for (int64_t j = 0; j < cols; j++) {
            float v = (fast ? w->sums[r * cols + j] : (float)acc[j]) * (scale * ldf(ms, per_col ? d * cols + j : d));
            out[r * cols + j] = accumulate ? out[r * cols + j] + v : v;
        }
    }
}

/* The gates of one batch entry at one step (g: its 4h gate inputs). */
static void cell(const qlstm *q, int64_t d, float *g, float *c, float *h)
{
    const xf_rnn_attrs *a = &q->n->attrs.rnn;
    int64_t hs = q->hidden, h4 = 4 * hs;
    float clip = a->has_clip ? a->clip : FLT_MAX;
    for (int64_t j = 0; j < hs; j++) {
        float *gi = g + j, *go = g + hs + j, *gf = g + 2 * hs + j, *gc = g + 3 * hs + j;
        float pi = q->p ? ldf(q->p, d * 3 * hs + j) : 0.0f, po = q->p ? ldf(q->p, d * 3 * hs + hs + j) : 0.0f;
        float pf = q->p ? ldf(q->p, d * 3 * hs + 2 * hs + j) : 0.0f;
        float bi = 0, bo = 0, bf = 0, bc = 0;
        if (q->b) {
            int64_t o = d * 2 * h4;
            bi = ldf(q->b, o + j) + ldf(q->b, o + h4 + j);
            bo = ldf(q->b, o + hs + j) + ldf(q->b, o + h4 + hs + j);
            bf = ldf(q->b, o + 2 * hs + j) + ldf(q->b, o + h4 + 2 * hs + j);
            bc = ldf(q->b, o + 3 * hs + j) + ldf(q->b, o + h4 + 3 * hs + j);
        }
        if (q->p)
            *gi += c[j] * pi;
        float i = act(q, d, 0, fminf(clip, fmaxf(-clip, *gi + bi)));
        float f;
        if (a->input_forget) {
            f = 1.0f - i;
        } else {
            if (q->p)
                *gf += c[j] * pf;
            f = act(q, d, 0, fminf(clip, fmaxf(-clip, *gf + bf)));
        }
        float gg = act(q, d, 1, fminf(clip, fmaxf(-clip, *gc + bc)));
        c[j] = c[j] * f + i * gg;
        if (q->p)
            *go += c[j] * po;
        float o = act(q, d, 0, fminf(clip, fmaxf(-clip, *go + bo)));
        h[j] = act(q, d, 2, c[j]) * o;
    }
}

xf_status xf_qlstm(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_attn_gemm gemm,
                   xf_error *err)
{
    const xf_rnn_attrs *a = &n->attrs.rnn;
    qlstm q = {.n = n, .x = &in[0], .w = &in[1], .r = &in[2], .b = given(n, in, 3), .lens = given(n, in, 4),
               .h0 = given(n, in, 5), .c0 = given(n, in, 6), .p = given(n, in, 7), .ws = &in[8], .wz = &in[9],
               .rs = &in[10], .rz = &in[11]};
    q.seq = in[0].shape.dims[0];
    q.batch = in[0].shape.dims[1];
    q.in = in[0].shape.dims[2];
    q.hidden = in[2].shape.dims[1];
    q.dirs = a->direction == 2 ? 2 : 1;
    int64_t hs = q.hidden, h4 = 4 * hs, nb = q.batch;
    bool want_y = n->n_outputs > 0 && xf_rt_present(&out[0]);
    int64_t *len = malloc(sizeof *len * (size_t)(nb + 1)), max_len = 0;
    float *xs = malloc(sizeof *xs * (size_t)(q.seq * nb * q.in + 1)), *gates = malloc(sizeof *gates *
                                                                                         (size_t)(q.seq * nb * h4 + 1));
    float *h = malloc(sizeof *h * (size_t)(nb * hs + 1)), *c = malloc(sizeof *c * (size_t)(nb * hs + 1));
    int64_t big = q.seq * nb * q.in > nb * hs ? q.seq * nb * q.in : nb * hs;
    uint8_t *qa = malloc((size_t)big + 1);
    qwork w = {.gemm = gemm, .qa = qa};
    w.acc = malloc(sizeof *w.acc * (size_t)(h4 + 1));
    w.wd = malloc(sizeof *w.wd * (size_t)(q.in * h4 + 1));
    w.rd = malloc(sizeof *w.rd * (size_t)(hs * h4 + 1));
    w.wf = malloc(sizeof *w.wf * (size_t)(q.in * h4 + 1));
    w.rf = malloc(sizeof *w.rf * (size_t)(hs * h4 + 1));
    w.af = malloc(sizeof *w.af * (size_t)(big + 1));
    w.sums = malloc(sizeof *w.sums * (size_t)(q.seq * nb * h4 + 1));
    xf_status st = len && xs && gates && h && c && qa && w.acc && w.wd && w.rd && w.wf && w.rf && w.af && w.sums
                       ? XF_OK
                       : xf_error_set(err, XF_ERR_NOMEM, "out of memory in %s", xf_op_name(n->op));
    for (int64_t b = 0; st == XF_OK && b < nb; b++) {
        len[b] = q.lens ? xf_rt_load_i64(q.lens->dtype, q.lens->data, b) : q.seq;
        if (len[b] < 0 || len[b] > q.seq)
            st = xf_rt_bad_node(err, n, "sequence_lens[%lld] = %lld is outside [0, %lld]", (long long)b,
                                (long long)len[b], (long long)q.seq);
        max_len = len[b] > max_len ? len[b] : max_len;
    }
    for (int64_t d = 0; st == XF_OK && d < q.dirs; d++) {
        bool reverse = a->direction == 1 || d == 1;
        for (int64_t t = 0; t < max_len; t++) /* the inputs in this direction's order */
            for (int64_t b = 0; b < nb; b++) {
                int64_t src = reverse && t < len[b] ? len[b] - 1 - t : t;
                for (int64_t i = 0; i < q.in; i++)
                    xs[(t * nb + b) * q.in + i] = ldf(q.x, (src * nb + b) * q.in + i);
            }
        w.max_w = weight_differences(q.w, q.wz, d, q.in, h4, w.wd, w.wf);
        w.max_r = weight_differences(q.r, q.rz, d, hs, h4, w.rd, w.rf);
        if (max_len > 0)
            qproduct(&w, xs, max_len * nb, q.in, w.wd, w.wf, w.max_w, q.w, q.ws, d, h4, false, gates);
        for (int64_t i = 0; i < nb * hs; i++) {
            h[i] = q.h0 ? ldf(q.h0, d * nb * hs + i) : 0.0f;
            c[i] = q.c0 ? ldf(q.c0, d * nb * hs + i) : 0.0f;
        }
        for (int64_t t = 0; t < max_len; t++) {
            qproduct(&w, h, nb, hs, w.rd, w.rf, w.max_r, q.r, q.rs, d, h4, true, gates + t * nb * h4);
            for (int64_t b = 0; b < nb; b++) {
                float *hb = h + b * hs;
                int64_t ty = reverse && t < len[b] ? len[b] - 1 - t : t;
                if (t < len[b])
                    cell(&q, d, gates + (t * nb + b) * h4, c + b * hs, hb);
                else if (want_y) /* ONNX Runtime's next step reads this row of Y */
                    for (int64_t j = 0; j < hs; j++)
                        hb[j] = 0.0f;
                for (int64_t j = 0; want_y && j < hs; j++)
                    xf_rt_store_f64(out[0].dtype, out[0].data, ((ty * q.dirs + d) * nb + b) * hs + j,
                                    t < len[b] ? hb[j] : 0.0);
                if (t + 1 == len[b])
                    for (int64_t j = 0; j < hs; j++) {
                        if (n->n_outputs > 1 && xf_rt_present(&out[1]))
                            xf_rt_store_f64(out[1].dtype, out[1].data, (d * nb + b) * hs + j, hb[j]);
                        if (n->n_outputs > 2 && xf_rt_present(&out[2]))
                            xf_rt_store_f64(out[2].dtype, out[2].data, (d * nb + b) * hs + j, c[b * hs + j]);
                    }
            }
        }
        for (int64_t t = max_len; want_y && t < q.seq; t++)
            for (int64_t b = 0; b < nb; b++)
                for (int64_t j = 0; j < hs; j++)
                    xf_rt_store_f64(out[0].dtype, out[0].data, ((t * q.dirs + d) * nb + b) * hs + j, 0.0);
        for (int64_t b = 0; b < nb; b++)
            for (int64_t j = 0; len[b] == 0 && j < hs; j++) {
                if (n->n_outputs > 1 && xf_rt_present(&out[1]))
                    xf_rt_store_f64(out[1].dtype, out[1].data, (d * nb + b) * hs + j, 0.0);
                if (n->n_outputs > 2 && xf_rt_present(&out[2]))
                    xf_rt_store_f64(out[2].dtype, out[2].data, (d * nb + b) * hs + j, 0.0);
            }
    }
    free(len);
    free(xs);
    free(gates);
    free(h);
    free(c);
    free(qa);
    free(w.acc);
    free(w.wd);
    free(w.rd);
    free(w.wf);
    free(w.rf);
    free(w.af);
    free(w.sums);
    return st;
}

xf_status xf_ref_ms_dynamic_quantize_lstm(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out,
                                          xf_error *err)
{
    return xf_qlstm(n, in, out, xf_attn_gemm_ref, err);
}
