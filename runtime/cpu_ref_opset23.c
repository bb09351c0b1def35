/* cpu_ref kernels of ONNX's Attention (opset 23; 24's nonpad_kv_seqlen)
 * and RotaryEmbedding (opset 23), in float (the backend widens 16-bit
 * floats), following ONNX's reference implementation.
 *
 * Attention: K and V are joined to the past rows as present (B, Nkv, T,
 * H); query head h reads key/value head h / (Nq / Nkv).  Each head's
 * scores are scale Q K', softcapped (c tanh(x / c)) when softcap > 0, plus
 * the additive bias: the mask (a bool mask's false -inf, a float mask's
 * value; columns past the mask's last dim -inf), -inf after the causal
 * frontier j > i + offset (offset P with a past, nonpad_kv_seqlen[b] - S
 * with that input alone, else 0), -inf outside opset 25's window (j below
 * i + offset - left_window_size or above i + offset + right_window_size)
 * and -inf from column nonpad_kv_seqlen[b] on.  A row whose bias is -inf throughout gets zero probabilities (and Y
 * zeros); the others their softmax (in double when softmax_precision says
 * so).  qk_matmul_output holds the scores before softcap (mode 0), after
 * it (1), with the bias (2) or the probabilities (3): ONNX's definition and
 * ONNX Runtime's (the reference gives mode 0 the softcapped scores). */
#include "xf_rt_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct sdpa {
    int64_t b, nq, nkv, s, l, p, t, h, hv;
    bool bnsh;                 /* 4-D operands */
    const xf_tensor_view *mask; /* NULL: none */
    int64_t mstride[3], mlast; /* the mask's strides along B, Nq, S and its last dim */
    const int64_t *nonpad;     /* NULL: none */
} sdpa;

static bool has(const xf_node *n, const xf_tensor_view *in, int k)
{
    return k < n->n_inputs && n->inputs[k] >= 0 && xf_rt_present(&in[k]);
}

static bool wanted(const xf_node *n, const xf_tensor_view *out, int k)
{
    return k < n->n_outputs && n->outputs[k] >= 0 && xf_rt_present(&out[k]) && out[k].data;
}

static void sdpa_dims(const xf_node *n, const xf_tensor_view *in, sdpa *d)
{
    const xf_shape *q = &in[0].shape, *k = &in[1].shape, *v = &in[2].shape;
    memset(d, 0, sizeof *d);
    d->b = q->dims[0];
    d->bnsh = q->ndim == 4;
    if (d->bnsh) {
        d->nq = q->dims[1], d->nkv = k->dims[1], d->s = q->dims[2], d->l = k->dims[2];
        d->h = q->dims[3], d->hv = v->dims[3];
    } else {
        d->nq = n->attrs.attn.num_heads, d->nkv = n->attrs.attn.kv_num_heads, d->s = q->dims[1], d->l = k->dims[1];
        d->h = q->dims[2] / d->nq, d->hv = v->dims[2] / d->nkv;
    }
    d->p = has(n, in, 4) ? in[4].shape.dims[2] : 0;
    d->t = d->p + d->l;
    d->nonpad = has(n, in, 6) ? in[6].data : NULL;
    if (!has(n, in, 3))
        return;
    const xf_shape *m = &in[3].shape;
    d->mask = &in[3];
    d->mlast = m->dims[m->ndim - 1];
    int64_t stride = d->mlast;
    for (int f = 2; f >= 0; f--) { /* (B, Nq, S) against the mask's leading dims, right-aligned */
        int md = f - (4 - m->ndim);
        d->mstride[f] = md >= 0 && m->dims[md] != 1 ? stride : 0;
        stride *= md >= 0 ? m->dims[md] : 1;
    }
}

/* present (B, Nkv, T, hd): each head's P past rows, then its L new ones
 * (cur 4-D, or 3-D with the heads side by side). */
static void join_past(const sdpa *d, const float *past, const float *cur, int64_t hd, float *dst)
{
    for (int64_t b = 0; b < d->b; b++)
        for (int64_t k = 0; k < d->nkv; k++) {
            float *o = dst + (b * d->nkv + k) * d->t * hd;
            if (past)
                memcpy(o, past + (b * d->nkv + k) * d->p * hd, sizeof *o * (size_t)(d->p * hd));
            for (int64_t i = 0; i < d->l; i++)
                memcpy(o + (d->p + i) * hd,
                       d->bnsh ? cur + ((b * d->nkv + k) * d->l + i) * hd : cur + (b * d->l + i) * d->nkv * hd + k * hd,
                       sizeof *o * (size_t)hd);
        }
}

/* The additive bias of query row i of batch b and head h into row (T
 * values); true when it is -inf throughout. */
static bool bias_row(const sdpa *d, const xf_attn_attrs *t, int64_t b, int64_t h, int64_t i, float *row)
{
    int64_t off = b * d->mstride[0] + h * d->mstride[1] + i * d->mstride[2];
    int64_t frontier = i + (d->p > 0 || !d->nonpad ? d->p : d->nonpad[b] - d->s);
    bool none = true;
    for (int64_t j = 0; j < d->t; j++) {
        float v = 0.0f;
        if (d->mask && j >= d->mlast)
            v = -INFINITY;
        else if (d->mask && d->mask->dtype == XF_DT_BOOL)
            v = ((const bool *)d->mask->data)[off + j] ? 0.0f : -INFINITY;
        else if (d->mask)
            v = (float)xf_rt_load_f64(d->mask->dtype, d->mask->data, off + j);
        if (t->unidirectional && j > frontier)
            v += -INFINITY;
        if ((t->left_window >= 0 && frontier - j > t->left_window) ||
            (t->right_window >= 0 && j - frontier > t->right_window))
            v += -INFINITY;
        if (d->nonpad && j >= d->nonpad[b])
            v += -INFINITY;
        row[j] = v;
        none &= v == -INFINITY;
    }
    return none;
}

static void softmax_double(float *row, int64_t n)
{
    double mx = -INFINITY, sum = 0.0;
    for (int64_t j = 0; j < n; j++)
        mx = row[j] > mx ? row[j] : mx;
    for (int64_t j = 0; j < n; j++)
        sum += exp((double)row[j] - mx);
    for (int64_t j = 0; j < n; j++)
        row[j] = (float)(exp((double)row[j] - mx) / sum);
}

/* One head's scores sc (S, T) into probabilities, qk (when not NULL)
 * getting the form the mode asks for. */
static void probabilities(const xf_node *n, const sdpa *d, int64_t b, int64_t h, float *sc, float *brow, float *qk)
{
    const xf_attn_attrs *t = &n->attrs.attn;
    size_t bytes = sizeof *sc * (size_t)(d->s * d->t);
    if (qk && t->qk_mode == 0)
        memcpy(qk, sc, bytes);
    for (int64_t j = 0; t->softcap > 0.0f && j < d->s * d->t; j++)
        sc[j] = tanhf(sc[j] / t->softcap) * t->softcap;
    if (qk && t->qk_mode == 1)
        memcpy(qk, sc, bytes);
    for (int64_t i = 0; i < d->s; i++) {
        float *row = sc + i * d->t;
        bool masked = bias_row(d, t, b, h, i, brow);
        for (int64_t j = 0; j < d->t; j++)
            row[j] += brow[j];
        brow[d->t + i] = masked;
    }
    if (qk && t->qk_mode == 2)
        memcpy(qk, sc, bytes);
    for (int64_t i = 0; i < d->s; i++) {
        float *row = sc + i * d->t;
        if (brow[d->t + i] != 0.0f)
            memset(row, 0, sizeof *row * (size_t)d->t);
        else if (t->softmax_precision == XF_DT_DOUBLE)
            softmax_double(row, d->t);
        else
            xf_attn_softmax_row(row, d->t);
    }
    if (qk && t->qk_mode == 3)
        memcpy(qk, sc, bytes);
}

xf_status xf_attn_onnx(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_attn_gemm gemm,
                       xf_error *err)
{
    sdpa d;
    sdpa_dims(n, in, &d);
    int64_t kn = d.b * d.nkv * d.t * d.h, vn = d.b * d.nkv * d.t * d.hv;
    bool own_k = !wanted(n, out, 1), own_v = !wanted(n, out, 2);
    float *k = own_k ? malloc(sizeof *k * (size_t)(kn + 1)) : out[1].data;
    float *v = own_v ? malloc(sizeof *v * (size_t)(vn + 1)) : out[2].data;
    int64_t per = d.s * d.t + d.t + d.s + 1;
    int threads = xf_attn_threads(gemm, d.b * d.nq);
    float *sc = malloc(sizeof *sc * (size_t)(per * threads));
    xf_status st = k && v && sc ? XF_OK : xf_error_set(err, XF_ERR_NOMEM, "out of memory in Attention");
    if (st == XF_OK) {
        join_past(&d, has(n, in, 4) ? in[4].data : NULL, in[1].data, d.h, k);
        join_past(&d, has(n, in, 5) ? in[5].data : NULL, in[2].data, d.hv, v);
    }
    float scale = n->attrs.attn.scale != 0.0f ? n->attrs.attn.scale : 1.0f / sqrtf((float)d.h);
    float *qk_out = wanted(n, out, 3) ? out[3].data : NULL, *y = out[0].data;
    const float *q = in[0].data;
    int failed = 0;
    int64_t heads = st == XF_OK ? d.b * d.nq : 0;
    XF_ATTN_HEADS_FOR(threads, failed)
    for (int64_t bh = 0; bh < heads; bh++) {
        int64_t b = bh / d.nq, h = bh % d.nq, kv = b * d.nkv + h / (d.nq / d.nkv);
        float *hsc = sc + xf_attn_thread_num() * per, *brow = hsc + d.s * d.t;
        const float *qh = d.bnsh ? q + (b * d.nq + h) * d.s * d.h : q + b * d.s * d.nq * d.h + h * d.h;
        float *yh = d.bnsh ? y + (b * d.nq + h) * d.s * d.hv : y + b * d.s * d.nq * d.hv + h * d.hv;
        if (!gemm(true, d.s, d.t, d.h, scale, qh, d.bnsh ? d.h : d.nq * d.h, k + kv * d.t * d.h, d.h, 0.0f, hsc,
                  d.t)) {
            failed = 1;
            continue;
        }
        probabilities(n, &d, b, h, hsc, brow, qk_out ? qk_out + (b * d.nq + h) * d.s * d.t : NULL);
        failed |= !gemm(false, d.s, d.hv, d.t, 1.0f, hsc, d.t, v + kv * d.t * d.hv, d.hv, 0.0f, yh,
                        d.bnsh ? d.hv : d.nq * d.hv);
    }
    if (st == XF_OK && failed)
        st = xf_rt_bad_node(err, n, "the matrix product failed");
    if (own_k)
        free(k);
    if (own_v)
        free(v);
    free(sc);
    return st;
}

xf_status xf_ref_attention(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err)
{
    return xf_attn_onnx(n, in, out, xf_attn_gemm_ref, err);
}

/* RotaryEmbedding (X, cos_cache, sin_cache, position_ids): with
 * position_ids the caches are (M, R / 2), position (b, s) reading row
 * position_ids[b, s]; without, they are (B, S, R / 2). */
xf_status xf_ref_rotary(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err)
{
    const xf_shape *xs = &in[0].shape;
    const xf_attn_attrs *t = &n->attrs.attn;
    xf_rotary_geom g = {.b = xs->dims[0], .bnsh = xs->ndim == 4, .interleaved = t->interleaved};
    g.s = xs->dims[g.bnsh ? 2 : 1];
    g.heads = g.bnsh ? xs->dims[1] : t->num_heads;
    g.hs = g.bnsh ? xs->dims[3] : xs->dims[2] / t->num_heads;
    g.rot = t->rotary_dim > 0 ? t->rotary_dim : g.hs;
    const int64_t *pos = has(n, in, 3) ? in[3].data : NULL;
    int64_t m = in[1].shape.dims[0], *rows = malloc(sizeof *rows * (size_t)(g.b * g.s + 1));
    if (!rows)
        return xf_error_set(err, XF_ERR_NOMEM, "out of memory in RotaryEmbedding");
    for (int64_t i = 0; i < g.b * g.s; i++) {
        rows[i] = pos ? pos[i] : i;
        if (pos && (rows[i] < 0 || rows[i] >= m)) {
            free(rows);
            return xf_rt_bad_node(err, n, "position id %lld is outside the cache's %lld rows", (long long)pos[i],
                                  (long long)m);
        }
    }
    xf_rotary_apply(&g, in[0].data, out[0].data, in[1].data, in[2].data, rows);
    free(rows);
    return XF_OK;
}
