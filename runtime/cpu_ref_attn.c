/* cpu_ref kernels of ONNX Runtime's attention family (com.microsoft):
 * Attention, QAttention, MultiHeadAttention, EmbedLayerNormalization,
 * RotaryEmbedding,
 * computed as ONNX Runtime's CPU kernels compute them (float32).
 *
 * Both attention ops gather Q (B, N, S, H), K (B, N, T, H) and V (B, N, T,
 * Hv), past rows first, into one buffer laid out as Attention's present
 * (2, B, N, T, H); the scores are scale * Q K' plus attention_bias plus the
 * mask's additive (B, S, T) form, softmax along T, times V, written back as
 * (B, S, N * Hv); with neither past nor present, the products read each
 * head where it lies in the projection instead.  The matrix products go
 * through a function the backend gives: plain loops here, oneDNN's sgemm
 * on the cpu backend. */
#include "xf_rt_internal.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

/* The reference product: C = alpha A B (B read transposed when trans_b)
 * + beta C, row-major with leading dimensions; C is not read when beta is 0. */
bool xf_attn_gemm_ref(bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float *a, int64_t lda,
                      const float *b, int64_t ldb, float beta, float *c, int64_t ldc)
{
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            float acc = 0.0f;
            for (int64_t x = 0; x < k; x++)
                acc += a[i * lda + x] * (trans_b ? b[j * ldb + x] : b[x * ldb + j]);
            c[i * ldc + j] = alpha * acc + (beta != 0.0f ? beta * c[i * ldc + j] : 0.0f);
        }
    return true;
}

typedef struct attn_dims {
    int64_t b, n, s, l, p, h, hv; /* T = p + l */
} attn_dims;

static xf_status fail(xf_error *err, xf_status st, const xf_node *n, const char *what)
{
    return xf_error_set(err, st, "node '%s' (%s): %s", n->name ? n->name : "", xf_op_name(n->op), what);
}

static xf_status bad(xf_error *err, const xf_node *n, const char *what) { return fail(err, XF_ERR_INVALID, n, what); }

static bool out_wanted(const xf_node *n, const xf_tensor_view *out, int k)
{
    return k < n->n_outputs && n->outputs[k] >= 0 && xf_rt_present(&out[k]) && out[k].data;
}

/* The additive mask (B, S, T) of ONNX Runtime's PrepareMask: masked
 * positions get mask_filter_value, the future of a causal row the lowest
 * float.  NULL (and XF_OK) when nothing is masked. */
static xf_status make_mask(const xf_node *n, const xf_tensor_view *m, const attn_dims *d, float **out,
                           xf_error *err)
{
    const xf_attn_attrs *t = &n->attrs.attn;
    int64_t tt = d->p + d->l, row = d->s * tt;
    bool causal = t->unidirectional && d->s > 1;
    *out = NULL;
    if (!(m && xf_rt_present(m)) && !causal)
        return XF_OK;
    float *mask = calloc((size_t)(d->b * row), sizeof *mask);
    if (!mask)
        return xf_error_set(err, XF_ERR_NOMEM, "out of memory in %s", xf_op_name(n->op));
    const int32_t *raw = m && xf_rt_present(m) ? m->data : NULL;
    int rank = raw ? m->shape.ndim : 0;
    bool starts = rank == 1 && m->shape.dims[0] == 2 * d->b;
    for (int64_t b = 0; b < d->b; b++) {
        float *pm = mask + b * row;
        if (rank == 3) {
            for (int64_t i = 0; i < row; i++)
                pm[i] = raw[b * row + i] > 0 ? 0.0f : t->mask_filter_value;
        } else if (raw) {
            for (int64_t j = 0; j < tt; j++) {
                bool off = rank == 2 ? raw[b * tt + j] <= 0 : j >= raw[b];
                if (starts && j < raw[b + d->b])
                    off = true;
                pm[j] = off ? t->mask_filter_value : 0.0f;
            }
            for (int64_t i = 1; i < d->s; i++)
                memcpy(pm + i * tt, pm, sizeof *pm * (size_t)tt);
        }
        for (int64_t i = 0; causal && i < d->s; i++)
            for (int64_t j = d->p + i + 1; j < tt; j++)
                pm[i * tt + j] = -FLT_MAX;
    }
    *out = mask;
    return XF_OK;
}

/* e^x for x <= 0 (scores less their row's largest), four at a time,
 * within 2 ulp: Cephes' polynomial on x - n ln 2, scaled by 2^n through the
 * exponent bits; below -87 (masked scores) 0.  GCC's vector types, which it
 * lowers to the widest registers the target has (expf it does not
 * vectorize). */
typedef float v4f __attribute__((vector_size(16)));
typedef int32_t v4i __attribute__((vector_size(16)));

/* e^x for x <= 0 (below -87: 0), lane by lane, in the float vector type
 * VF with the int32 vector type VI of as many lanes.  Every lane takes the
 * same steps whatever the width, so each width gives the same bits. */
#define XF_EXP_NONPOSITIVE(NAME, VF, VI, ATTR)                                                                         \
    ATTR static inline VF NAME(VF x)                                                                                   \
    {                                                                                                                  \
        VI low = x < -87.0f;                                                                                           \
        VF c = (VF)(((VI)x & ~low) | ((VI)((VF){0} - 87.0f) & low));                                                   \
        VF n = (c * 1.44269504088896341f + 12582912.0f) - 12582912.0f; /* rounded to the nearest integer */            \
        VF r = c - n * 0.693359375f + n * 2.12194440e-4f;                                                              \
        VF p = r * 1.9875691500e-4f + 1.3981999507e-3f;                                                                \
        p = p * r + 8.3334519073e-3f;                                                                                  \
        p = p * r + 4.1665795894e-2f;                                                                                  \
        p = p * r + 1.6666665459e-1f;                                                                                  \
        p = p * r + 5.0000001201e-1f;                                                                                  \
        p = p * r * r + r + 1.0f;                                                                                      \
        VI two_n = (__builtin_convertvector(n, VI) + 127) << 23;                                                       \
        return (VF)((VI)(p * (VF)two_n) & ~low);                                                                       \
    }

XF_EXP_NONPOSITIVE(exp4_nonpositive, v4f, v4i, )

static inline v4f load4(const float *p)
{
    v4f x;
    memcpy(&x, p, sizeof x);
    return x;
}

#if defined(__x86_64__) && defined(__GNUC__)
#define ATTN_X86 1
typedef float v16f __attribute__((vector_size(64)));
typedef int32_t v16i __attribute__((vector_size(64)));
#define ATTN_AVX512 __attribute__((target("avx512f")))
XF_EXP_NONPOSITIVE(exp16_nonpositive, v16f, v16i, ATTN_AVX512)

enum { SOFTMAX_MAX, SOFTMAX_EXP, SOFTMAX_SCALE };

/* The first `whole` elements of the row (a multiple of 16), 16 at a time:
 * SOFTMAX_MAX, the largest of them into *mx (NaNs passed over as below);
 * SOFTMAX_EXP, e^(x - *mx) written back; SOFTMAX_SCALE, x * v written
 * back. */
ATTN_AVX512 static void softmax16(float *row, int64_t whole, int step, float *mx, float v)
{
    v16f acc = (v16f){0} - INFINITY, x;
    for (int64_t j = 0; j < whole; j += 16) {
        memcpy(&x, row + j, sizeof x);
        if (step == SOFTMAX_MAX) {
            v16i more = x > acc;
            acc = (v16f)(((v16i)x & more) | ((v16i)acc & ~more));
            continue;
        }
        x = step == SOFTMAX_SCALE ? x * v : exp16_nonpositive(x - *mx);
        memcpy(row + j, &x, sizeof x);
    }
    for (int u = 0; step == SOFTMAX_MAX && u < 16; u++)
        *mx = acc[u] > *mx ? acc[u] : *mx;
}
#else
#define ATTN_X86 0
#endif

/* Softmax of a row in place, as ONNX Runtime's: less the largest, e^x, times
 * 1 / the sum.  The row is worked on in blocks of 4, the last one padded,
 * and summed in 4 lanes in the blocks' order; with AVX-512 the largest
 * value, the e^x and the products are computed 16 at a time, and the
 * sums taken after, in the same order, so the bits do not change. */
void xf_attn_softmax_row(float *row, int64_t n)
{
    int64_t whole = n / 4 * 4, wide = 0;
    float last[4], mx = -INFINITY, sum = 0.0f;
#if ATTN_X86
    if (n >= 16 && __builtin_cpu_supports("avx512f"))
        wide = n / 16 * 16;
#endif
    for (int u = 0; u < 4; u++)
        last[u] = whole + u < n ? row[whole + u] : -INFINITY;
    v4f top = load4(last);
    for (int64_t j = wide; j < whole; j += 4) {
        v4f x = load4(row + j);
        v4i more = x > top;
        top = (v4f)(((v4i)x & more) | ((v4i)top & ~more));
    }
    for (int u = 0; u < 4; u++)
        mx = top[u] > mx ? top[u] : mx;
#if ATTN_X86
    if (wide) {
        softmax16(row, wide, SOFTMAX_MAX, &mx, 0.0f);
        softmax16(row, wide, SOFTMAX_EXP, &mx, 0.0f);
    }
#endif
    v4f acc = {0};
    for (int64_t j = 0; j <= whole; j += 4) {
        v4f x = j < wide ? load4(row + j) : exp4_nonpositive((j < whole ? load4(row + j) : load4(last)) - mx);
        memcpy(j < whole ? row + j : last, &x, sizeof x);
        acc += x;
    }
    for (int u = 0; u < 4; u++)
        sum += acc[u];
    float inv = 1.0f / sum;
#if ATTN_X86
    if (wide)
        softmax16(row, wide, SOFTMAX_SCALE, &mx, inv);
#endif
    for (int64_t j = wide; j < whole; j += 4) {
        v4f x = load4(row + j) * inv;
        memcpy(row + j, &x, sizeof x);
    }
    for (int64_t j = whole; j < n; j++)
        row[j] = last[j - whole] * inv;
}

/* Where the rows of Q, K or V lie: those of batch b and head h from
 * p + b * batch + h * head on, `row` floats apart. */
typedef struct attn_operand {
    const float *p;
    int64_t batch, head, row;
} attn_operand;

/* An operand laid out in heads, (B, N, rows, h). */
static attn_operand in_heads(const float *p, const attn_dims *d, int64_t rows, int64_t h)
{
    return (attn_operand){p, d->n * rows * h, rows * h, h};
}

static const float *head_of(const attn_operand *o, int64_t b, int64_t h)
{
    return o->p + b * o->batch + h * o->head;
}

int xf_attn_threads(xf_attn_gemm gemm, int64_t heads)
{
#ifdef _OPENMP
    if (gemm != xf_attn_gemm_ref && heads > 1)
        return omp_get_max_threads() < heads ? omp_get_max_threads() : (int)heads;
#endif
    (void)gemm, (void)heads;
    return 1;
}

int xf_attn_thread_num(void)
{
#ifdef _OPENMP
    return omp_get_thread_num();
#else
    return 0;
#endif
}

/* What every head of one attend() reads. */
typedef struct attn_heads {
    const attn_dims *d;
    attn_operand q, k, v;
    const float *mask, *ab; /* additive mask (B, S, T) and attention_bias, or NULL */
    const xf_shape *ab_shape;
    float scale, *out;
    xf_attn_gemm gemm;
} attn_heads;

/* Head h of batch b, with sc (S x T floats) for its scores; false when a
 * product failed. */
static bool attend_head(const attn_heads *a, int64_t b, int64_t h, float *sc)
{
    const attn_dims *d = a->d;
    int64_t tt = d->p + d->l;
    const float *qh = head_of(&a->q, b, h), *kh = head_of(&a->k, b, h), *vh = head_of(&a->v, b, h);
    const float *abh = NULL, *mb = a->mask ? a->mask + b * d->s * tt : NULL;
    if (a->ab)
        abh = a->ab + ((a->ab_shape->dims[0] == 1 ? 0 : b) * a->ab_shape->dims[1] +
                       (a->ab_shape->dims[1] == 1 ? 0 : h)) * d->s * tt;
    if (abh && mb)
        for (int64_t i = 0; i < d->s * tt; i++)
            sc[i] = abh[i] + mb[i];
    else if (abh || mb)
        memcpy(sc, abh ? abh : mb, sizeof *sc * (size_t)(d->s * tt));
    else
        memset(sc, 0, sizeof *sc * (size_t)(d->s * tt));
    if (!a->gemm(true, d->s, tt, d->h, a->scale, qh, a->q.row, kh, a->k.row, 1.0f, sc, tt))
        return false;
    for (int64_t i = 0; i < d->s; i++)
        xf_attn_softmax_row(sc + i * tt, tt);
    float *o = a->out + b * d->s * d->n * d->hv + h * d->hv;
    return a->gemm(false, d->s, d->hv, tt, 1.0f, sc, tt, vh, a->v.row, 0.0f, o, d->n * d->hv);
}

/* softmax(scale * Q K' + bias + mask) V for every batch and head; out is
 * (B, S, N * Hv).  Like ONNX Runtime, each head's scores start as
 * attention_bias plus the mask, and the product is added to them.  With a
 * backend's product the heads are shared out over OpenMP's threads
 * (xf_attn_threads), each with its own scores; every head is computed as
 * on one thread. */
static xf_status attend(const xf_node *n, const attn_dims *d, attn_operand q, attn_operand k, attn_operand v,
                        const xf_tensor_view *mask_in, const xf_tensor_view *bias, float *out, xf_attn_gemm gemm,
                        xf_error *err)
{
    int64_t tt = d->p + d->l, heads = d->b * d->n, per = d->s * tt > 0 ? d->s * tt : 1;
    int threads = xf_attn_threads(gemm, heads);
    float *mask, *sc = malloc(sizeof *sc * (size_t)(per * threads));
    xf_status st = sc ? make_mask(n, mask_in, d, &mask, err)
                      : xf_error_set(err, XF_ERR_NOMEM, "out of memory in %s", xf_op_name(n->op));
    if (st != XF_OK) {
        free(sc);
        return st;
    }
    attn_heads a = {d, q, k, v, mask, NULL, NULL, n->attrs.attn.scale != 0.0f ? n->attrs.attn.scale
                                                                               : 1.0f / sqrtf((float)d->h),
                    out, gemm};
    if (bias && xf_rt_present(bias)) {
        a.ab = bias->data;
        a.ab_shape = &bias->shape;
    }
    int failed = 0;
    XF_ATTN_HEADS_FOR(threads, failed)
    for (int64_t bh = 0; bh < heads; bh++)
        failed |= !attend_head(&a, bh / d->n, bh % d->n, sc + xf_attn_thread_num() * per);
    if (failed)
        st = bad(err, n, "the matrix product failed");
    free(mask);
    free(sc);
    return st;
}

/* Copies rows of (B, R, N, H) data at src (rows `len` apart: the element
 * stride between sequence positions) with an optional bias per column into
 * dst (B, N, rows, H) at row offset `at` of `rows`. */
static void to_heads(const float *src, int64_t src_row, const float *bias, const attn_dims *d, int64_t r, int64_t h,
                     float *dst, int64_t rows, int64_t at, int64_t batch_stride)
{
    for (int64_t b = 0; b < d->b; b++)
        for (int64_t i = 0; i < r; i++)
            for (int64_t hd = 0; hd < d->n; hd++) {
                const float *s = src + b * batch_stride + i * src_row + hd * h;
                float *o = dst + ((b * d->n + hd) * rows + at + i) * h;
                if (!bias) {
                    memcpy(o, s, sizeof *o * (size_t)h);
                    continue;
                }
                const float *bh = bias + hd * h;
                for (int64_t c = 0; c < h; c++)
                    o[c] = s[c] + bh[c];
            }
}

/* Copies past (B, N, P, H) into the first P rows of dst (B, N, T, H). */
static void put_past(const float *past, const attn_dims *d, int64_t h, float *dst)
{
    int64_t tt = d->p + d->l;
    for (int64_t bh = 0; past && bh < d->b * d->n; bh++)
        memcpy(dst + bh * tt * h, past + bh * d->p * h, sizeof *dst * (size_t)(d->p * h));
}

/* Attention's and QAttention's work once their projection `proj` (B * S
 * rows of Q, K and V) is made: heads, past, scores, output and present.
 * mask, past and ab (attention_bias) may be NULL.  With neither past nor
 * present, the products read the heads in the projection's rows. */
static xf_status attention_from_projection(const xf_node *n, const float *proj, int64_t cols, int64_t dq,
                                           const xf_tensor_view *mask, const xf_tensor_view *past_in,
                                           const xf_tensor_view *ab, const xf_tensor_view *out, attn_dims d,
                                           xf_attn_gemm gemm, xf_error *err)
{
    int64_t tt = d.p + d.l, kv = d.b * d.n * tt * d.h;
    if (!past_in && !out_wanted(n, out, 1) && tt == d.s) {
        attn_operand q = {proj, d.s * cols, d.h, cols}, k = {proj + dq, d.s * cols, d.h, cols};
        attn_operand v = {proj + 2 * dq, d.s * cols, d.hv, cols};
        return attend(n, &d, q, k, v, mask, ab, out[0].data, gemm, err);
    }
    float *q = malloc(sizeof *q * (size_t)(d.b * d.s * dq + 1));
    float *kvbuf = malloc(sizeof *kvbuf * (size_t)(kv + d.b * d.n * tt * d.hv + 1));
    xf_status st = q && kvbuf ? XF_OK : xf_error_set(err, XF_ERR_NOMEM, "out of memory in %s", xf_op_name(n->op));
    if (st == XF_OK) {
        float *k = kvbuf, *v = kvbuf + kv;
        const float *past = past_in ? past_in->data : NULL;
        to_heads(proj, cols, NULL, &d, d.s, d.h, q, d.s, 0, d.s * cols);
        to_heads(proj + dq, cols, NULL, &d, d.s, d.h, k, tt, d.p, d.s * cols);
        to_heads(proj + 2 * dq, cols, NULL, &d, d.s, d.hv, v, tt, d.p, d.s * cols);
        put_past(past, &d, d.h, k);
        put_past(past ? past + d.b * d.n * d.p * d.h : NULL, &d, d.hv, v);
        st = attend(n, &d, in_heads(q, &d, d.s, d.h), in_heads(k, &d, tt, d.h), in_heads(v, &d, tt, d.hv), mask, ab,
                    out[0].data, gemm, err);
        if (st == XF_OK && out_wanted(n, out, 1))
            memcpy(out[1].data, kvbuf, sizeof *kvbuf * (size_t)(2 * kv));
    }
    free(q);
    free(kvbuf);
    return st;
}

/* The sizes of an Attention or QAttention node (past at input past_at). */
static attn_dims attention_dims(const xf_node *n, const xf_tensor_view *in, int past_at, int64_t *dq)
{
    const xf_attn_attrs *t = &n->attrs.attn;
    const xf_shape *xs = &in[0].shape;
    int64_t cols = in[1].shape.dims[1];
    bool has_past = n->n_inputs > past_at && xf_rt_present(&in[past_at]);
    int64_t dv = t->n_qkv_sizes ? t->qkv_sizes[2] : cols / 3;
    *dq = t->n_qkv_sizes ? t->qkv_sizes[0] : cols / 3;
    return (attn_dims){xs->dims[0], t->num_heads, xs->dims[1], xs->dims[1], has_past ? in[past_at].shape.dims[3] : 0,
                       *dq / t->num_heads, dv / t->num_heads};
}

static const xf_tensor_view *optional_in(const xf_node *n, const xf_tensor_view *in, int k)
{
    return n->n_inputs > k && xf_rt_present(&in[k]) ? &in[k] : NULL;
}

xf_status xf_attn_attention(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_attn_gemm gemm,
                            xf_error *err)
{
    int64_t dq, cols = in[1].shape.dims[1], din = in[0].shape.dims[2];
    attn_dims d = attention_dims(n, in, 4, &dq);
    if (n->n_inputs > 3 && xf_rt_present(&in[3]) && in[3].shape.ndim == 4)
        return fail(err, XF_ERR_UNSUPPORTED, n, "a 4-D mask_index is not supported");
    float *proj = malloc(sizeof *proj * (size_t)(d.b * d.s * cols + 1));
    if (!proj)
        return xf_error_set(err, XF_ERR_NOMEM, "out of memory in Attention");
    const float *x = in[0].data, *w = in[1].data;
    const float *bias = n->n_inputs > 2 && xf_rt_present(&in[2]) ? in[2].data : NULL;
    for (int64_t r = 0; bias && r < d.b * d.s; r++)
        memcpy(proj + r * cols, bias, sizeof *proj * (size_t)cols);
    xf_status st = gemm(false, d.b * d.s, cols, din, 1.0f, x, din, w, cols, bias ? 1.0f : 0.0f, proj, cols)
                       ? attention_from_projection(n, proj, cols, dq, optional_in(n, in, 3), optional_in(n, in, 4),
                                                   optional_in(n, in, 5), out, d, gemm, err)
                       : bad(err, n, "the matrix product failed");
    free(proj);
    return st;
}

/* QAttention: the projection of the 8-bit input by the 8-bit weights
 * summed in int32, (x - x_zero_point)(w - w_zero_point), then scaled by
 * input_scale * weight_scale (per column when the weights' are) and
 * biased, as ONNX Runtime's kernel computes it; the rest is Attention's.
 * When no sum can reach 2^24 (Din times the largest |x - x_zero_point|
 * times the largest |w - w_zero_point|: below 2^24 for every Din up to
 * 1032 of int8 weights and inputs quantized around their middle) the
 * sums are the backend's float product of the differences, exact in any
 * order of addition; else an int32 loop. */
/* dst = the 8-bit rows x cols at p less their zero point (zp[j] per column
 * j, or zp[0]), as floats (exact); the largest magnitude returned.  One
 * loop per type and zero-point form, which the compiler vectorizes. */
#define XF_Q8_DIFFERENCES(type, z)                                                                                     \
    for (int64_t r = 0; r < rows; r++) {                                                                               \
        const type *src = (const type *)p + r * cols;                                                                  \
        float *d = dst + r * cols;                                                                                     \
        for (int64_t j = 0; j < cols; j++) {                                                                           \
            int32_t v = (int32_t)src[j] - (z), a = v < 0 ? -v : v;                                                     \
            d[j] = (float)v;                                                                                           \
            big = a > big ? a : big;                                                                                   \
        }                                                                                                              \
    }

static int32_t q8_differences(const void *p, bool s8, int64_t rows, int64_t cols, const int32_t *restrict zp,
                              bool per_column, float *restrict dst)
{
    int32_t big = 0, z0 = zp[0];
    if (s8 && per_column)
        XF_Q8_DIFFERENCES(int8_t, zp[j])
    else if (s8)
        XF_Q8_DIFFERENCES(int8_t, z0)
    else if (per_column)
        XF_Q8_DIFFERENCES(uint8_t, zp[j])
    else
        XF_Q8_DIFFERENCES(uint8_t, z0)
    return big;
}
#undef XF_Q8_DIFFERENCES

int32_t xf_attn_qattention_weights(const xf_node *n, const xf_tensor_view *in, float *wf)
{
    const xf_tensor_view *wz = optional_in(n, in, 7);
    int64_t din = in[1].shape.dims[0], cols = in[1].shape.dims[1], n_wz = wz ? xf_rt_numel(wz) : 0;
    int32_t *zw = malloc(sizeof *zw * (size_t)(cols + 1));
    if (!zw)
        return -1;
    for (int64_t j = 0; j < cols; j++)
        zw[j] = wz ? (int32_t)xf_rt_load_i64(wz->dtype, wz->data, n_wz > 1 ? j : 0) : 0;
    int32_t max_w = q8_differences(in[1].data, in[1].dtype == XF_DT_INT8, din, cols, zw, true, wf);
    free(zw);
    return max_w;
}

/* proj (rows x cols) = the int32 sums at sums (or, when sums is NULL, the
 * exact float sums already in proj) times input_scale * weight_scale
 * (per column when the weights' are), plus the bias.  The column scales
 * (cols floats) are made first, in sc, then the rows run in order. */
static void scale_and_bias(const xf_node *n, const xf_tensor_view *in, const int32_t *sums, int64_t rows,
                           int64_t cols, float *sc, float *proj)
{
    int64_t n_ws = xf_rt_numel(&in[4]);
    float xs = (float)xf_rt_load_f64(in[3].dtype, in[3].data, 0);
    const float *bias = optional_in(n, in, 2) ? in[2].data : NULL;
    for (int64_t j = 0; j < cols; j++)
        sc[j] = xs * (float)xf_rt_load_f64(in[4].dtype, in[4].data, n_ws > 1 ? j : 0);
    for (int64_t r = 0; r < rows; r++) {
        float *restrict p = proj + r * cols;
        const int32_t *restrict s = sums ? sums + r * cols : NULL;
        const float *restrict scales = sc, *restrict b = bias;
        if (s)
            for (int64_t j = 0; j < cols; j++)
                p[j] = (float)s[j] * scales[j];
        else
            for (int64_t j = 0; j < cols; j++)
                p[j] *= scales[j];
        for (int64_t j = 0; b && j < cols; j++)
            p[j] += b[j];
    }
}

xf_status xf_attn_qattention_sums(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out,
                                  xf_attn_gemm gemm, const int32_t *sums, xf_error *err)
{
    int64_t dq, cols = in[1].shape.dims[1];
    attn_dims d = attention_dims(n, in, 8, &dq);
    const xf_tensor_view *mask = optional_in(n, in, 5);
    if (mask && mask->shape.ndim == 4)
        return fail(err, XF_ERR_UNSUPPORTED, n, "a 4-D mask_index is not supported");
    float *proj = malloc(sizeof *proj * (size_t)((d.b * d.s + 1) * cols + 1));
    if (!proj)
        return xf_error_set(err, XF_ERR_NOMEM, "out of memory in %s", xf_op_name(n->op));
    scale_and_bias(n, in, sums, d.b * d.s, cols, proj + d.b * d.s * cols, proj);
    xf_status st = attention_from_projection(n, proj, cols, dq, mask, optional_in(n, in, 8), NULL, out, d, gemm, err);
    free(proj);
    return st;
}

xf_status xf_attn_qattention(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out,
                             xf_attn_gemm gemm, const float *weights, int32_t max_w, xf_error *err)
{
    int64_t dq, cols = in[1].shape.dims[1], din = in[0].shape.dims[2];
    attn_dims d = attention_dims(n, in, 8, &dq);
    const xf_tensor_view *mask = optional_in(n, in, 5), *xz = optional_in(n, in, 6);
    if (mask && mask->shape.ndim == 4)
        return fail(err, XF_ERR_UNSUPPORTED, n, "a 4-D mask_index is not supported");
    int64_t rows = d.b * d.s;
    float *proj = malloc(sizeof *proj * (size_t)((rows + 1) * cols + 1));
    float *af = malloc(sizeof *af * (size_t)(rows * din + (weights ? 0 : din * cols) + 1));
    int32_t *sums = malloc(sizeof *sums * (size_t)(rows * cols + 1));
    xf_status st = proj && af && sums ? XF_OK : xf_error_set(err, XF_ERR_NOMEM, "out of memory in %s",
                                                             xf_op_name(n->op));
    float *wf_own = af ? af + rows * din : NULL;
    if (st == XF_OK && !weights && (max_w = xf_attn_qattention_weights(n, in, wf_own)) < 0)
        st = xf_error_set(err, XF_ERR_NOMEM, "out of memory in %s", xf_op_name(n->op));
    if (st == XF_OK) {
        const float *wf = weights ? weights : wf_own;
        int32_t zx = xz ? (int32_t)xf_rt_load_i64(xz->dtype, xz->data, 0) : 0;
        int32_t max_a = q8_differences(in[0].data, in[0].dtype == XF_DT_INT8, rows, din, &zx, false, af);
        bool exact = (double)din * max_a * max_w < (double)(1 << 24) &&
                     gemm(false, rows, cols, din, 1.0f, af, din, wf, cols, 0.0f, proj, cols);
        for (int64_t r = 0; !exact && r < rows; r++) {
            int32_t *acc = sums + r * cols;
            for (int64_t j = 0; j < cols; j++)
                acc[j] = 0;
            for (int64_t k = 0; k < din; k++) {
                int32_t a = (int32_t)af[r * din + k];
                for (int64_t j = 0; j < cols; j++)
                    acc[j] += a * (int32_t)wf[k * cols + j];
            }
        }
        scale_and_bias(n, in, exact ? NULL : sums, rows, cols, proj + rows * cols, proj);
    }
    free(af);
    free(sums);
    if (st == XF_OK)
        st = attention_from_projection(n, proj, cols, dq, mask, optional_in(n, in, 8), NULL, out, d, gemm, err);
    free(proj);
    return st;
}

/* MultiHeadAttention: the operand forms of xf_infer_ms_mha. */
xf_status xf_attn_mha(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_attn_gemm gemm,
                      xf_error *err)
{
    const xf_shape *qs = &in[0].shape;
    const xf_tensor_view *key = n->n_inputs > 1 && xf_rt_present(&in[1]) ? &in[1] : NULL;
    const xf_tensor_view *val = n->n_inputs > 2 && xf_rt_present(&in[2]) ? &in[2] : NULL;
    const float *bias = n->n_inputs > 3 && xf_rt_present(&in[3]) ? in[3].data : NULL;
    bool has_past = n->n_inputs > 7 && xf_rt_present(&in[6]) && xf_rt_present(&in[7]);
    int64_t nh = n->attrs.attn.num_heads;
    attn_dims d = {qs->dims[0], nh, qs->dims[1], qs->dims[1], has_past ? in[6].shape.dims[2] : 0, 0, 0};
    int qkv_packed = qs->ndim == 5, kv_packed = key && key->shape.ndim == 5, bnsh = key && key->shape.ndim == 4;
    if (qkv_packed) {
        d.h = d.hv = qs->dims[4];
    } else {
        d.h = qs->dims[2] / nh;
        d.l = bnsh ? key->shape.dims[2] : key->shape.dims[1];
        d.hv = kv_packed ? d.h : bnsh ? val->shape.dims[3] : val->shape.dims[2] / nh;
    }
    int64_t tt = d.p + d.l, dq = nh * d.h, kvk = d.b * nh * tt * d.h, kvv = d.b * nh * tt * d.hv;
    float *q = malloc(sizeof *q * (size_t)(d.b * d.s * dq + 1)), *k = malloc(sizeof *k * (size_t)(kvk + 1));
    float *v = malloc(sizeof *v * (size_t)(kvv + 1));
    if (!q || !k || !v) {
        free(q);
        free(k);
        free(v);
        return xf_error_set(err, XF_ERR_NOMEM, "out of memory in MultiHeadAttention");
    }
    const float *qd = in[0].data, *bk = bias ? bias + dq : NULL, *bv = bias ? bias + 2 * dq : NULL;
    if (!qkv_packed)
        to_heads(qd, dq, bias, &d, d.s, d.h, q, d.s, 0, d.s * dq);
    if (qkv_packed) { /* (B, S, N, 3, H): gather each part */
        for (int part = 0; part < 3; part++) {
            float *dst = part == 0 ? q : part == 1 ? k : v;
            int64_t rows = part == 0 ? d.s : tt, at = part == 0 ? 0 : d.p;
            const float *pb = bias ? bias + part * dq : NULL;
            for (int64_t b = 0; b < d.b; b++)
                for (int64_t i = 0; i < d.s; i++)
                    for (int64_t hd = 0; hd < nh; hd++)
                        for (int64_t c = 0; c < d.h; c++)
                            dst[((b * nh + hd) * rows + at + i) * d.h + c] =
                                qd[(((b * d.s + i) * nh + hd) * 3 + part) * d.h + c] + (pb ? pb[hd * d.h + c] : 0.0f);
        }
    } else if (kv_packed) { /* (B, L, N, 2, H) */
        const float *kd = key->data;
        for (int64_t b = 0; b < d.b; b++)
            for (int64_t i = 0; i < d.l; i++)
                for (int64_t hd = 0; hd < nh; hd++)
                    for (int64_t c = 0; c < d.h; c++) {
                        const float *src = kd + (((b * d.l + i) * nh + hd) * 2) * d.h + c;
                        int64_t o = ((b * nh + hd) * tt + d.p + i) * d.h + c;
                        k[o] = src[0] + (bk ? bk[hd * d.h + c] : 0.0f);
                        v[o] = src[d.h] + (bv ? bv[hd * d.h + c] : 0.0f);
                    }
    } else if (bnsh) {
        memcpy(k, key->data, sizeof *k * (size_t)kvk);
        memcpy(v, val->data, sizeof *v * (size_t)kvv);
    } else {
        to_heads(key->data, dq, bk, &d, d.l, d.h, k, tt, d.p, d.l * dq);
        to_heads(val->data, nh * d.hv, bv, &d, d.l, d.hv, v, tt, d.p, d.l * nh * d.hv);
    }
    if (has_past) {
        put_past(in[6].data, &d, d.h, k);
        put_past(in[7].data, &d, d.hv, v);
    }
    xf_status st = XF_OK;
    if (n->n_inputs > 4 && xf_rt_present(&in[4]) && in[4].shape.ndim == 4)
        st = fail(err, XF_ERR_UNSUPPORTED, n, "a 4-D key_padding_mask is not supported");
    if (st == XF_OK)
        st = attend(n, &d, in_heads(q, &d, d.s, d.h), in_heads(k, &d, tt, d.h), in_heads(v, &d, tt, d.hv),
                    n->n_inputs > 4 ? &in[4] : NULL, n->n_inputs > 5 ? &in[5] : NULL, out[0].data, gemm, err);
    if (st == XF_OK && out_wanted(n, out, 1))
        memcpy(out[1].data, k, sizeof *k * (size_t)kvk);
    if (st == XF_OK && out_wanted(n, out, 2))
        memcpy(out[2].data, v, sizeof *v * (size_t)kvv);
    free(q);
    free(k);
    free(v);
    return st;
}

xf_status xf_ref_ms_attention(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err)
{
    return xf_attn_attention(n, in, out, xf_attn_gemm_ref, err);
}

xf_status xf_ref_ms_qattention(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err)
{
    return xf_attn_qattention(n, in, out, xf_attn_gemm_ref, NULL, 0, err);
}

xf_status xf_ref_ms_mha(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err)
{
    return xf_attn_mha(n, in, out, xf_attn_gemm_ref, err);
}

xf_status xf_ref_ms_embed_layer_norm(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out,
                                     xf_error *err)
{
    int64_t b = in[0].shape.dims[0], s = in[0].shape.dims[1], hid = in[2].shape.dims[1];
    const int32_t *ids = in[0].data, *seg = xf_rt_present(&in[1]) ? in[1].data : NULL;
    const int32_t *mask = n->n_inputs > 7 && xf_rt_present(&in[7]) ? in[7].data : NULL;
    const int32_t *pos = n->n_inputs > 8 && xf_rt_present(&in[8]) ? in[8].data : NULL;
    bool pos_shared = pos && in[8].shape.dims[0] == 1;
    const float *word = in[2].data, *pe = in[3].data, *se = seg ? in[4].data : NULL;
    const float *gamma = in[5].data, *beta = in[6].data;
    float *y = out[0].data, *sum_out = out_wanted(n, out, 2) ? out[2].data : NULL;
    float eps = n->attrs.epsilon;
    for (int64_t r = 0; r < b * s; r++) {
        int64_t w = ids[r], p = pos ? pos[pos_shared ? r % s : r] : r % s, g = seg ? seg[r] : 0;
        if (w < 0 || w >= in[2].shape.dims[0] || p < 0 || p >= in[3].shape.dims[0] ||
            (seg && (g < 0 || g >= in[4].shape.dims[0])))
            return bad(err, n, "input index out of range");
        float *yr = y + r * hid, sum = 0.0f;
        for (int64_t i = 0; i < hid; i++) {
            float v = word[w * hid + i] + pe[p * hid + i];
            if (se)
                v += se[g * hid + i];
            yr[i] = v;
            if (sum_out)
                sum_out[r * hid + i] = v;
            sum += v;
        }
        float mean = sum / (float)hid;
        sum = 0.0f;
        for (int64_t i = 0; i < hid; i++) {
            yr[i] -= mean;
            sum += yr[i] * yr[i];
        }
        float e = sqrtf(sum / (float)hid + eps);
        for (int64_t i = 0; i < hid; i++)
            yr[i] = yr[i] / e * gamma[i] + beta[i];
    }
    if (out_wanted(n, out, 1)) {
        int32_t *mi = out[1].data;
        for (int64_t i = 0; i < b; i++) {
            mi[i] = 0;
            for (int64_t j = 0; mask && j < s; j++)
                mi[i] += mask[i * s + j] == 1;
        }
    }
    return XF_OK;
}

void xf_rotary_row(const float *xi, float *yo, const float *cr, const float *sr, int64_t rot, int64_t hs,
                   bool interleaved)
{
    int64_t half = rot / 2;
    for (int64_t i = 0; i < rot; i++) {
        int64_t ci, j;
        float sign;
        if (interleaved) {
            ci = i / 2;
            sign = i % 2 == 0 ? -1.0f : 1.0f;
            j = i % 2 == 0 ? i + 1 : i - 1;
        } else {
            ci = i % half;
            sign = i < half ? -1.0f : 1.0f;
            j = (i + half) % rot;
        }
        yo[i] = xi[i] * cr[ci] + sign * xi[j] * sr[ci];
    }
    for (int64_t i = rot; i < hs; i++)
        yo[i] = xi[i];
}

void xf_rotary_apply(const xf_rotary_geom *g, const float *x, float *y, const float *cosc, const float *sinc,
                     const int64_t *rows)
{
    int64_t half = g->rot / 2, head_stride = g->bnsh ? g->s * g->hs : g->hs;
    int64_t seq_stride = g->bnsh ? g->hs : g->heads * g->hs, batch_stride = g->s * g->heads * g->hs;
    for (int64_t bi = 0; bi < g->b; bi++)
        for (int64_t si = 0; si < g->s; si++) {
            int64_t p = rows[bi * g->s + si];
            for (int64_t h = 0; h < g->heads; h++) {
                int64_t off = bi * batch_stride + si * seq_stride + h * head_stride;
                xf_rotary_row(x + off, y + off, cosc + p * half, sinc + p * half, g->rot, g->hs, g->interleaved);
            }
        }
}

xf_status xf_ref_ms_rotary(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err)
{
    const xf_shape *xs = &in[0].shape;
    xf_rotary_geom g = {.bnsh = xs->ndim == 4, .interleaved = n->attrs.attn.interleaved};
    if (!xf_rotary_layout(&n->attrs.attn, xs, &in[2].shape, &g.heads, &g.hs, &g.rot))
        return bad(err, n, "input and cache sizes do not agree");
    g.b = xs->dims[0];
    g.s = xs->dims[g.bnsh ? 2 : 1];
    int64_t m = in[2].shape.dims[0], *rows = malloc(sizeof *rows * (size_t)(g.b * g.s + 1));
    if (!rows)
        return xf_error_set(err, XF_ERR_NOMEM, "out of memory in %s", xf_op_name(n->op));
    const int64_t *pos = in[1].data;
    bool one = xf_rt_numel(&in[1]) == 1; /* a start position (for B = S = 1 the two forms agree) */
    for (int64_t i = 0; i < g.b * g.s; i++) {
        rows[i] = one ? pos[0] + i % g.s : pos[i];
        if (rows[i] < 0 || rows[i] >= m) {
            free(rows);
            return bad(err, n, "position id out of the cache's range");
        }
    }
    xf_rotary_apply(&g, in[0].data, out[0].data, in[2].data, in[3].data, rows);
    free(rows);
    return XF_OK;
}
