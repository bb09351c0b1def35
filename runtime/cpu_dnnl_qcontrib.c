/* The cpu backend's loops for ONNX Runtime's QLinearAdd, QLinearMul,
 * QLinearSoftmax and QLinearAveragePool (com.microsoft) on int8 and uint8:
 * cpu_ref's arithmetic (see
 * cpu_ref_qcontrib.c), eight elements at a time in AVX2 and FMA, where
 * the fused multiply-adds are the ones cpu_ref and ONNX Runtime's kernel
 * compute.  The output is seen as spans: A and B are both whole tensors
 * of the output's shape, or one of them holds one value per span (a
 * per-channel operand such as a squeeze-and-excitation scale), as ONNX
 * Runtime's broadcasting hands them to its kernel, or one span repeated
 * for every span (a row such as a bias, computed as whole tensors are).
 * Other broadcasts, and machines without AVX2 and FMA, run cpu_ref's
 * kernel. */
#include "cpu_dnnl.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define QC_X86 1
#else
#define QC_X86 0
#endif

/* The output as outer spans of span elements; an operand marked scalar
 * holds one value per span, one marked row one span for all. */
typedef struct qspans {
    int64_t outer, span;
    bool a_scalar, b_scalar, a_row, b_row;
} qspans;

/* Where s (aligned to y at the last dimension) stops matching y: the
 * first dimension from which on s is all 1 and before which it equals y,
 * or -1 when there is none. */
static int prefix_of(const xf_shape *s, const xf_shape *y)
{
    int k = y->ndim;
    while (k > 0 && (k - 1 < y->ndim - s->ndim || s->dims[k - 1 - (y->ndim - s->ndim)] == 1))
        k--;
    for (int d = 0; d < k; d++)
        if (d < y->ndim - s->ndim || s->dims[d - (y->ndim - s->ndim)] != y->dims[d])
            return -1;
    return k;
}

/* Where s (aligned to y at the last dimension) starts matching y: the
 * first dimension from which on s equals y and before which it is all 1,
 * or -1 when there is none. */
static int suffix_of(const xf_shape *s, const xf_shape *y)
{
    int off = y->ndim - s->ndim, k = y->ndim;
    if (off < 0)
        return -1;
    while (k > off && s->dims[k - 1 - off] == y->dims[k - 1])
        k--;
    for (int d = off; d < k; d++)
        if (s->dims[d - off] != 1)
            return -1;
    return k;
}

static bool spans_of(const xf_shape *a, const xf_shape *b, const xf_shape *y, qspans *s)
{
    int ka = prefix_of(a, y), kb = prefix_of(b, y);
    bool a_full = xf_shape_numel(a) == xf_shape_numel(y) && ka >= 0;
    bool b_full = xf_shape_numel(b) == xf_shape_numel(y) && kb >= 0;
    int k = a_full && b_full ? 0 : a_full ? kb : b_full ? ka : -1;
    /* else a row of the other one's last dims */
    int kr = k >= 0 ? -1 : a_full ? suffix_of(b, y) : b_full ? suffix_of(a, y) : -1;
    if (k < 0 && kr < 0)
        return false;
    int64_t span = 1;
    for (int d = k >= 0 ? k : kr; d < y->ndim; d++)
        span *= y->dims[d];
    if (kr >= 0) {
        *s = (qspans){xf_shape_numel(y) / (span > 0 ? span : 1), span, .a_row = !a_full, .b_row = !b_full};
        return span > 0;
    }
    /* a span of one element has no scalar operand (cpu_ref's rule) */
    *s = (qspans){xf_shape_numel(y) / (span > 0 ? span : 1), span, !a_full && span > 1, !b_full && span > 1};
    if (span == 1)
        s->a_scalar = s->b_scalar = false;
    return span > 0;
}

static bool qbinary_handles(const xf_graph *g, const xf_node *n)
{
    if (!QC_X86 || !__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma"))
        return false;
    int a = xf_dn_input(n, 0), b = xf_dn_input(n, 3);
    if (a < 0 || b < 0 || n->n_outputs != 1 || n->outputs[0] < 0)
        return false;
    const xf_value *va = &g->values[a], *vb = &g->values[b], *vy = &g->values[n->outputs[0]];
    qspans s;
    return (va->dtype == XF_DT_UINT8 || va->dtype == XF_DT_INT8) && vb->dtype == va->dtype &&
           vy->dtype == va->dtype && va->shape.ndim >= 0 && vb->shape.ndim >= 0 &&
           xf_shape_numel(&vy->shape) > 0 && spans_of(&va->shape, &vb->shape, &vy->shape, &s);
}

#if QC_X86
typedef struct qbin_params {
    bool add, s8, wide; /* wide: sixteen lanes of AVX-512 at a time */
    float rac, rbc, fixed, ratio, zc;
    int32_t za, zb, lo, hi;
} qbin_params;

__attribute__((target("avx2,fma"))) static inline __m256i widen8(const uint8_t *p, bool s8)
{
    __m128i v = _mm_loadl_epi64((const __m128i *)p);
    return s8 ? _mm256_cvtepi8_epi32(v) : _mm256_cvtepu8_epi32(v);
}

/* Eight outputs from eight a and b (a or b one value when scalar). */
__attribute__((target("avx2,fma"))) static inline void qbin8(const qbin_params *p, const uint8_t *a, const uint8_t *b,
                                                             bool a_scalar, bool b_scalar, uint8_t *y)
{
    __m256i ia = a_scalar ? _mm256_set1_epi32(p->s8 ? (int8_t)a[0] : a[0]) : widen8(a, p->s8);
    __m256i ib = b_scalar ? _mm256_set1_epi32(p->s8 ? (int8_t)b[0] : b[0]) : widen8(b, p->s8);
    __m256 v;
    if (p->add) {
        __m256 fa = _mm256_cvtepi32_ps(ia), fb = _mm256_cvtepi32_ps(ib);
        __m256 rac = _mm256_set1_ps(p->rac), rbc = _mm256_set1_ps(p->rbc), fixed = _mm256_set1_ps(p->fixed);
        if (a_scalar)
            v = _mm256_fmadd_ps(fb, rbc, _mm256_fmadd_ps(fa, rac, fixed));
        else
            v = _mm256_fmadd_ps(fa, rac, _mm256_fmadd_ps(fb, rbc, fixed));
    } else {
        __m256i prod = _mm256_mullo_epi32(_mm256_sub_epi32(ia, _mm256_set1_epi32(p->za)),
                                          _mm256_sub_epi32(ib, _mm256_set1_epi32(p->zb)));
        v = _mm256_add_ps(_mm256_mul_ps(_mm256_cvtepi32_ps(prod), _mm256_set1_ps(p->ratio)), _mm256_set1_ps(p->zc));
    }
    __m256i r = _mm256_cvtps_epi32(v); /* halves to even, the default rounding */
    r = _mm256_min_epi32(_mm256_max_epi32(r, _mm256_set1_epi32(p->lo)), _mm256_set1_epi32(p->hi));
    __m128i w = _mm_packs_epi32(_mm256_castsi256_si128(r), _mm256_extracti128_si256(r, 1));
    _mm_storel_epi64((__m128i *)y, p->s8 ? _mm_packs_epi16(w, w) : _mm_packus_epi16(w, w));
}

/* Sixteen outputs, each lane computed as qbin8 computes it. */
__attribute__((target("avx512f,fma"))) static void qbin16_span(const qbin_params *p, const uint8_t *a,
                                                               const uint8_t *b, bool a_scalar, bool b_scalar,
                                                               uint8_t *y, int64_t count)
{
    const __m512 rac = _mm512_set1_ps(p->rac), rbc = _mm512_set1_ps(p->rbc), fixed = _mm512_set1_ps(p->fixed);
    const __m512 ratio = _mm512_set1_ps(p->ratio), zc = _mm512_set1_ps(p->zc);
    const __m512i za = _mm512_set1_epi32(p->za), zb = _mm512_set1_epi32(p->zb);
    const __m512i lo = _mm512_set1_epi32(p->lo), hi = _mm512_set1_epi32(p->hi);
    __m512i sa = _mm512_set1_epi32(p->s8 ? (int8_t)a[0] : a[0]), sb = _mm512_set1_epi32(p->s8 ? (int8_t)b[0] : b[0]);
    for (int64_t i = 0; i + 16 <= count; i += 16) {
        __m128i va = _mm_loadu_si128((const __m128i *)(a + (a_scalar ? 0 : i)));
        __m128i vb = _mm_loadu_si128((const __m128i *)(b + (b_scalar ? 0 : i)));
        __m512i ia = a_scalar ? sa : p->s8 ? _mm512_cvtepi8_epi32(va) : _mm512_cvtepu8_epi32(va);
        __m512i ib = b_scalar ? sb : p->s8 ? _mm512_cvtepi8_epi32(vb) : _mm512_cvtepu8_epi32(vb);
        __m512 v;
        if (p->add) {
            __m512 fa = _mm512_cvtepi32_ps(ia), fb = _mm512_cvtepi32_ps(ib);
            v = a_scalar ? _mm512_fmadd_ps(fb, rbc, _mm512_fmadd_ps(fa, rac, fixed))
                         : _mm512_fmadd_ps(fa, rac, _mm512_fmadd_ps(fb, rbc, fixed));
        } else {
            __m512i prod = _mm512_mullo_epi32(_mm512_sub_epi32(ia, za), _mm512_sub_epi32(ib, zb));
            v = _mm512_add_ps(_mm512_mul_ps(_mm512_cvtepi32_ps(prod), ratio), zc);
        }
        __m512i r = _mm512_min_epi32(_mm512_max_epi32(_mm512_cvtps_epi32(v), lo), hi);
        _mm_storeu_si128((__m128i *)(y + i), _mm512_cvtepi32_epi8(r));
    }
}

__attribute__((target("avx2,fma"))) static void qbin_span(const qbin_params *p, const uint8_t *a, const uint8_t *b,
                                                          bool a_scalar, bool b_scalar, uint8_t *y, int64_t count)
{
    int64_t i = 0;
    if (p->wide) {
        qbin16_span(p, a, b, a_scalar, b_scalar, y, count);
        i = count / 16 * 16;
    }
    for (; i + 8 <= count; i += 8)
        qbin8(p, a_scalar ? a : a + i, b_scalar ? b : b + i, a_scalar, b_scalar, y + i);
    if (i < count) {
        uint8_t ta[8] = {0}, tb[8] = {0}, ty[8];
        int64_t rest = count - i;
        memcpy(ta, a_scalar ? a : a + i, (size_t)(a_scalar ? 1 : rest));
        memcpy(tb, b_scalar ? b : b + i, (size_t)(b_scalar ? 1 : rest));
        qbin8(p, ta, tb, a_scalar, b_scalar, ty);
        memcpy(y + i, ty, (size_t)rest);
    }
}

static float param_f(const xf_tensor_view *v) { return (float)xf_rt_load_f64(v->dtype, v->data, 0); }

static int32_t param_i(const xf_node *n, const xf_tensor_view *in, int k)
{
    return k < n->n_inputs && xf_rt_present(&in[k]) ? (int32_t)xf_rt_load_i64(in[k].dtype, in[k].data, 0) : 0;
}
#endif

static xf_status qbinary_run(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err)
{
#if QC_X86
    for (int k = 1; k < n->n_inputs; k++)
        if (k != 3 && xf_rt_present(&in[k]) && xf_rt_numel(&in[k]) != 1)
            return xf_ref_ms_qbinary(n, in, out, err); /* its message */
    qspans s;
    if (!spans_of(&in[0].shape, &in[3].shape, &out[0].shape, &s))
        return xf_ref_ms_qbinary(n, in, out, err);
    float sa = param_f(&in[1]), sb = param_f(&in[4]), sc = param_f(&in[6]);
    int32_t za = param_i(n, in, 2), zb = param_i(n, in, 5), zc = param_i(n, in, 7);
    bool s8 = out[0].dtype == XF_DT_INT8;
    qbin_params p = {.add = n->op == XF_OP_MS_QLINEAR_ADD, .s8 = s8, .rac = sa / sc, .rbc = sb / sc,
                     .ratio = sa * sb / sc, .zc = (float)zc, .za = za, .zb = zb, .lo = s8 ? -128 : 0,
                     .hi = s8 ? 127 : 255, .wide = xf_dn_vector_width() == 512};
    p.fixed = (float)zc - fmaf(p.rac, (float)za, p.rbc * (float)zb);
    const uint8_t *a = in[0].data, *b = in[3].data;
    uint8_t *y = out[0].data;
    /* parts of the output over OpenMP's threads, each element computed alone */
    int64_t size, chunks = xf_dn_chunks(s.outer * s.span, &size);
    XF_OMP_FOR(chunks > 1)
    for (int64_t c = 0; c < chunks; c++) {
        int64_t i = c * size, end = i + size < s.outer * s.span ? i + size : s.outer * s.span;
        while (i < end) {
            int64_t o = i / s.span, lo = i % s.span, hi = o * s.span + s.span < end ? s.span : end - o * s.span;
            const uint8_t *ao = a + (s.a_row ? lo : s.a_scalar ? o : o * s.span + lo);
            const uint8_t *bo = b + (s.b_row ? lo : s.b_scalar ? o : o * s.span + lo);
            qbin_span(&p, ao, bo, s.a_scalar, s.b_scalar, y + o * s.span + lo, hi - lo);
            i = o * s.span + hi;
        }
    }
    return XF_OK;
#else
    return xf_ref_ms_qbinary(n, in, out, err);
#endif
}

static xf_status qbinary_prepare(xf_dn_ctx *c, const xf_graph *g, const xf_node *n, const xf_tensor_view *in,
                                 const xf_tensor_view *out, xf_dn_node *st, xf_error *err)
{
    st->kernel = qbinary_run;
    return XF_OK;
}

const xf_dn_handler xf_dn_ms_qbinary_handler = {qbinary_handles, NULL, qbinary_prepare, NULL};

/* ---------------------------------------------------------------- QLinearSoftmax */

/* QLinearSoftmax over contiguous rows (the last axis, or the flattened
 * tail of opset 1's form): cpu_ref's arithmetic (xf_ref_ms_qsoftmax), each
 * row's sum in its order (four rows side by side), then the outputs eight
 * at a time: the table
 * entry times the output scale over the sum, rounded half to even (adding
 * and subtracting 1.5 x 2^23, as nearbyintf rounds below 2^22; values
 * past that saturate whichever way they round), plus the zero point,
 * saturated. */
static bool qsoftmax_handles(const xf_graph *g, const xf_node *n)
{
    if (!QC_X86 || !__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma") || n->n_inputs < 4 ||
        n->n_outputs != 1 || n->outputs[0] < 0 || n->inputs[0] < 0)
        return false;
    const xf_value *x = &g->values[n->inputs[0]], *y = &g->values[n->outputs[0]];
    int rank = x->shape.ndim, axis = rank > 0 ? xf_rt_axis(n->attrs.axis, rank) : -1;
    return (x->dtype == XF_DT_UINT8 || x->dtype == XF_DT_INT8) && y->dtype == x->dtype && axis >= 0 &&
           (n->attrs.softmax_legacy || axis == rank - 1) && xf_shape_numel(&x->shape) > 0;
}

#if QC_X86
typedef struct qsm_row {
    const float *table;
    float yscale, sum, yz;
    int32_t adjust, lo, hi;
    bool s8;
} qsm_row;

__attribute__((target("avx2,fma"))) static void qsm8(const qsm_row *r, const uint8_t *x, uint8_t *y)
{
    __m256i idx = _mm256_and_si256(_mm256_add_epi32(widen8(x, r->s8), _mm256_set1_epi32(r->adjust)),
                                   _mm256_set1_epi32(255));
    __m256 q = _mm256_div_ps(_mm256_mul_ps(_mm256_i32gather_ps(r->table, idx, 4), _mm256_set1_ps(r->yscale)),
                             _mm256_set1_ps(r->sum));
    const __m256 shift = _mm256_set1_ps(0x1.8p23f);
    q = _mm256_add_ps(_mm256_sub_ps(_mm256_add_ps(q, shift), shift), _mm256_set1_ps(r->yz));
    q = _mm256_min_ps(_mm256_max_ps(q, _mm256_set1_ps((float)r->lo)), _mm256_set1_ps((float)r->hi));
    __m256i v = _mm256_cvttps_epi32(q);
    __m128i w = _mm_packs_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    _mm_storel_epi64((__m128i *)y, r->s8 ? _mm_packs_epi16(w, w) : _mm_packus_epi16(w, w));
}

/* Code k of a row as a value (int8 codes signed). */
static inline int32_t qsm_code(const qsm_row *r, const uint8_t *x, int64_t k)
{
    return r->s8 ? (int8_t)x[k] : x[k];
}

/* The table offset of each of four rows of d codes from x, and their sums
 * of table entries, each in its row's order; the four side by side, so
 * that their additions overlap. */
static void qsm_sums4(const qsm_row *r, const uint8_t *x, int64_t d, int32_t *adjust, float *sum)
{
    const uint8_t *x0 = x, *x1 = x + d, *x2 = x + 2 * d, *x3 = x + 3 * d;
    int32_t m0 = r->s8 ? -128 : 0, m1 = m0, m2 = m0, m3 = m0;
    for (int64_t k = 0; k < d; k++) {
        int32_t v0 = qsm_code(r, x0, k), v1 = qsm_code(r, x1, k), v2 = qsm_code(r, x2, k), v3 = qsm_code(r, x3, k);
        m0 = v0 > m0 ? v0 : m0;
        m1 = v1 > m1 ? v1 : m1;
        m2 = v2 > m2 ? v2 : m2;
        m3 = v3 > m3 ? v3 : m3;
    }
    int32_t top = r->s8 ? 127 : 255, a0 = top - m0, a1 = top - m1, a2 = top - m2, a3 = top - m3;
    float s0 = 0.0f, s1 = 0.0f, s2 = 0.0f, s3 = 0.0f;
    const float *t = r->table;
    for (int64_t k = 0; k < d; k++) {
        s0 += t[(uint8_t)(qsm_code(r, x0, k) + a0)];
        s1 += t[(uint8_t)(qsm_code(r, x1, k) + a1)];
        s2 += t[(uint8_t)(qsm_code(r, x2, k) + a2)];
        s3 += t[(uint8_t)(qsm_code(r, x3, k) + a3)];
    }
    memcpy(adjust, (int32_t[]){a0, a1, a2, a3}, sizeof(int32_t[4]));
    memcpy(sum, (float[]){s0, s1, s2, s3}, sizeof(float[4]));
}

/* The same for one row. */
static void qsm_sums1(const qsm_row *r, const uint8_t *x, int64_t d, int32_t *adjust, float *sum)
{
    int32_t m = r->s8 ? -128 : 0;
    for (int64_t k = 0; k < d; k++)
        m = qsm_code(r, x, k) > m ? qsm_code(r, x, k) : m;
    *adjust = (r->s8 ? 127 : 255) - m;
    float s = 0.0f;
    for (int64_t k = 0; k < d; k++)
        s += r->table[(uint8_t)(qsm_code(r, x, k) + *adjust)];
    *sum = s;
}

/* Row x of d codes into y, its offset and sum given in r. */
__attribute__((target("avx2,fma"))) static void qsm_row_run(const qsm_row *r, const uint8_t *x, uint8_t *y,
                                                            int64_t d)
{
    float sum = r->sum;
    int64_t k = 0;
    for (; k + 8 <= d; k += 8)
        qsm8(r, x + k, y + k);
    for (; k < d; k++) {
        float q = nearbyintf(r->table[(uint8_t)((r->s8 ? (int8_t)x[k] : x[k]) + r->adjust)] * r->yscale / sum) + r->yz;
        y[k] = (uint8_t)(int32_t)(q < (float)r->lo ? (float)r->lo : q > (float)r->hi ? (float)r->hi : q);
    }
}
#endif

static xf_status qsoftmax_run(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err)
{
#if QC_X86
    for (int k = 1; k < 5 && k < n->n_inputs; k++)
        if (xf_rt_present(&in[k]) && xf_rt_numel(&in[k]) != 1)
            return xf_ref_ms_qsoftmax(n, in, out, err); /* its message */
    int rank = in[0].shape.ndim, axis = xf_rt_axis(n->attrs.axis, rank);
    float ys = param_f(&in[3]), yscale = floorf(1.0f / ys);
    if (axis < 0)
        return xf_ref_ms_qsoftmax(n, in, out, err);
    int64_t d = n->attrs.softmax_legacy ? xf_rt_dims_product(&in[0].shape, axis, rank) : in[0].shape.dims[axis];
    int64_t rows = d > 0 ? xf_rt_numel(&in[0]) / d : 0;
    bool s8 = in[0].dtype == XF_DT_INT8;
    float table[256];
    xf_rt_qsoftmax_table(s8, d, param_f(&in[1]), table);
    qsm_row r = {.table = table, .yscale = yscale, .yz = (float)param_i(n, in, 4), .lo = s8 ? -128 : 0,
                 .hi = s8 ? 127 : 255, .s8 = s8};
    const uint8_t *x = in[0].data;
    uint8_t *y = out[0].data;
    /* groups of four rows over OpenMP's threads */
    XF_OMP_FOR(rows > 4 && rows * d >= XF_DN_CHUNK_MIN)
    for (int64_t g = 0; g < (rows + 3) / 4; g++) {
        int64_t o = 4 * g;
        int count = rows - o < 4 ? (int)(rows - o) : 4;
        int32_t adjust[4];
        float sum[4];
        qsm_row own = r;
        if (count == 4)
            qsm_sums4(&own, x + o * d, d, adjust, sum);
        else
            for (int j = 0; j < count; j++)
                qsm_sums1(&own, x + (o + j) * d, d, &adjust[j], &sum[j]);
        for (int j = 0; j < count; j++) {
            own.adjust = adjust[j];
            own.sum = sum[j];
            qsm_row_run(&own, x + (o + j) * d, y + (o + j) * d, d);
        }
    }
    return XF_OK;
#else
    return xf_ref_ms_qsoftmax(n, in, out, err);
#endif
}

XF_DN_KERNEL_PREPARE(qsoftmax_prepare, qsoftmax_run)

const xf_dn_handler xf_dn_ms_qsoftmax_handler = {qsoftmax_handles, NULL, qsoftmax_prepare, NULL};

/* ---------------------------------------------------------------- QLinearAveragePool */

/* QLinearAveragePool over 2-D windows without dilation: cpu_ref's
 * arithmetic (xf_ref_ms_qpool: each output's sum of xs * (x - xz) over its
 * taps, row by row, divided by the count, by the output scale, plus the
 * zero point, rounded and saturated), the outputs of a row side by side,
 * each lane summing its own taps in cpu_ref's order: with AVX-512 sixteen
 * at a time, those whose windows the row's ends cut among them (a tap
 * outside adds nothing); with AVX2 eight at a time where their windows lie
 * inside the row, the rest one at a time.  Rows run on OpenMP's threads. */
static bool qavgpool_handles(const xf_graph *g, const xf_node *n)
{
    if (!QC_X86 || !__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma") || n->n_inputs < 4 ||
        n->n_outputs != 1 || n->outputs[0] < 0 || n->inputs[0] < 0)
        return false;
    const xf_value *x = &g->values[n->inputs[0]], *y = &g->values[n->outputs[0]];
    return (x->dtype == XF_DT_UINT8 || x->dtype == XF_DT_INT8) && y->dtype == x->dtype && x->shape.ndim == 4 &&
           xf_shape_numel(&y->shape) > 0 && n->attrs.dilations[0] == 1 && n->attrs.dilations[1] == 1;
}

#if QC_X86
typedef struct qpool_geom {
    xf_rt_window w;
    const float *term; /* xs * (x - xz) by the byte that holds x */
    float xs, ys, yz, lo, hi;
    int32_t xz;
    int64_t ksize;
    bool include_pad, s8, wide; /* wide: sixteen lanes of AVX-512 */
} qpool_geom;

/* One output from its sum and tap count, as cpu_ref stores it. */
static uint8_t qpool_out(const qpool_geom *q, float acc, int64_t taps)
{
    acc /= (float)(q->include_pad ? q->ksize : taps);
    float v = nearbyintf(acc / q->ys + q->yz);
    return v == v ? (uint8_t)(int32_t)(v < q->lo ? q->lo : v > q->hi ? q->hi : v) : 0;
}

/* Eight outputs o1 .. o1 + 7 of output row o0 whose windows lie inside
 * the row (first: the first one's first column); rows [r0, r1).  Each
 * tap's term is xs * (float)(x - xz), the float product cpu_ref's table
 * holds (no contraction into the sum: ISO C, -ffp-contract=off). */
__attribute__((target("avx2,fma"))) static void qpool8(const qpool_geom *q, const uint8_t *plane, int64_t r0,
                                                       int64_t r1, int64_t first, uint8_t *y)
{
    int64_t s = q->w.stride[1], in1 = q->w.in[1];
    const __m256i xz = _mm256_set1_epi32(q->xz);
    const __m256 xs = _mm256_set1_ps(q->xs);
    __m256 acc = _mm256_setzero_ps();
    for (int64_t i0 = r0; i0 < r1; i0++)
        for (int64_t t = 0; t < q->w.k[1]; t++) {
            const uint8_t *at = plane + i0 * in1 + first + t;
            __m128i b = s == 1 ? _mm_loadl_epi64((const __m128i *)at)
                               : _mm_setr_epi8((char)at[0], (char)at[s], (char)at[2 * s], (char)at[3 * s],
                                               (char)at[4 * s], (char)at[5 * s], (char)at[6 * s], (char)at[7 * s],
                                               0, 0, 0, 0, 0, 0, 0, 0);
            __m256i c = q->s8 ? _mm256_cvtepi8_epi32(b) : _mm256_cvtepu8_epi32(b);
            acc = _mm256_add_ps(acc, _mm256_mul_ps(xs, _mm256_cvtepi32_ps(_mm256_sub_epi32(c, xz))));
        }
    int64_t taps = (r1 - r0) * q->w.k[1];
    __m256 v = _mm256_div_ps(acc, _mm256_set1_ps((float)(q->include_pad ? q->ksize : taps)));
    v = _mm256_add_ps(_mm256_div_ps(v, _mm256_set1_ps(q->ys)), _mm256_set1_ps(q->yz));
    /* rounded half to even as nearbyintf below 2^22; past it the value saturates either way; NaN gives 0 */
    const __m256 shift = _mm256_set1_ps(0x1.8p23f);
    __m256 ordered = _mm256_cmp_ps(v, v, _CMP_ORD_Q);
    v = _mm256_sub_ps(_mm256_add_ps(v, shift), shift);
    v = _mm256_min_ps(_mm256_max_ps(v, _mm256_set1_ps(q->lo)), _mm256_set1_ps(q->hi));
    __m256i r = _mm256_cvttps_epi32(_mm256_and_ps(v, ordered));
    __m128i w = _mm_packs_epi32(_mm256_castsi256_si128(r), _mm256_extracti128_si256(r, 1));
    _mm_storel_epi64((__m128i *)y, q->lo < 0 ? _mm_packs_epi16(w, w) : _mm_packus_epi16(w, w));
}

/* Outputs o1 .. o1 + count - 1 (count <= 16) of output row o0 in
 * AVX-512, each lane summing the taps of its window that lie in the row,
 * in cpu_ref's order (a tap outside adds nothing), so windows cut by the
 * row's ends run here too; rows [r0, r1). */
__attribute__((target("avx512f,avx512bw,avx512vl"))) static void qpool16(const qpool_geom *q, const uint8_t *plane,
                                                                int64_t r0, int64_t r1, int64_t o1, int64_t count,
                                                                uint8_t *y)
{
    int64_t s = q->w.stride[1], in1 = q->w.in[1], k1 = q->w.k[1], first = o1 * s - q->w.pad_begin[1];
    bool inside = count == 16 && first >= 0 && first + 15 * s + k1 <= in1;
    const __m512i xz = _mm512_set1_epi32(q->xz), in_end = _mm512_set1_epi32((int32_t)in1);
    const __m512 xs = _mm512_set1_ps(q->xs);
    __m512i lane_first = _mm512_add_epi32(_mm512_set1_epi32((int32_t)first),
                                          _mm512_mullo_epi32(_mm512_set1_epi32((int32_t)s),
                                                             _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11,
                                                                               12, 13, 14, 15)));
    __mmask16 lanes = (__mmask16)(count >= 16 ? 0xffff : (1u << count) - 1);
    __m512 acc = _mm512_setzero_ps();
    for (int64_t i0 = r0; i0 < r1; i0++)
        for (int64_t t = 0; t < k1; t++) {
            const uint8_t *row = plane + i0 * in1;
            __m128i b;
            __mmask16 take = lanes;
            if (!inside) {
                __m512i col = _mm512_add_epi32(lane_first, _mm512_set1_epi32((int32_t)t));
                take &= _mm512_cmpge_epi32_mask(col, _mm512_setzero_si512()) & _mm512_cmplt_epi32_mask(col, in_end);
            }
            if (inside && s == 1) {
                b = _mm_loadu_si128((const __m128i *)(row + first + t));
            } else if (s == 1) { /* the lanes' bytes in the row alone: a masked load reads no other */
                b = _mm_maskz_loadu_epi8(take, (const void *)((uintptr_t)row + (uintptr_t)(first + t)));
            } else {
                uint8_t bytes[16] = {0};
                for (int j = 0; j < count; j++) {
                    int64_t col = first + j * s + t;
                    bytes[j] = col >= 0 && col < in1 ? row[col] : 0;
                }
                b = _mm_loadu_si128((const __m128i *)bytes);
            }
            __m512i c = q->s8 ? _mm512_cvtepi8_epi32(b) : _mm512_cvtepu8_epi32(b);
            acc = _mm512_mask_add_ps(acc, take, acc, _mm512_mul_ps(xs, _mm512_cvtepi32_ps(_mm512_sub_epi32(c, xz))));
        }
    /* each lane's count of taps: its window's columns within the row */
    __m512i c0 = _mm512_max_epi32(lane_first, _mm512_setzero_si512());
    __m512i c1 = _mm512_min_epi32(_mm512_add_epi32(lane_first, _mm512_set1_epi32((int32_t)k1)), in_end);
    __m512 taps = _mm512_cvtepi32_ps(_mm512_mullo_epi32(_mm512_set1_epi32((int32_t)(r1 - r0)),
                                                        _mm512_sub_epi32(c1, c0)));
    __m512 v = _mm512_div_ps(acc, q->include_pad ? _mm512_set1_ps((float)q->ksize) : taps);
    v = _mm512_add_ps(_mm512_div_ps(v, _mm512_set1_ps(q->ys)), _mm512_set1_ps(q->yz));
    const __m512 shift = _mm512_set1_ps(0x1.8p23f);
    __mmask16 ordered = _mm512_cmp_ps_mask(v, v, _CMP_ORD_Q);
    v = _mm512_sub_ps(_mm512_add_ps(v, shift), shift);
    v = _mm512_min_ps(_mm512_max_ps(v, _mm512_set1_ps(q->lo)), _mm512_set1_ps(q->hi));
    _mm512_mask_cvtepi32_storeu_epi8(y, lanes, _mm512_maskz_cvttps_epi32(ordered, v));
}
#endif

static xf_status qavgpool_run(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err)
{
#if QC_X86
    qpool_geom q;
    for (int k = 1; k < 5 && k < n->n_inputs; k++)
        if (xf_rt_present(&in[k]) && xf_rt_numel(&in[k]) != 1)
            return xf_ref_ms_qpool(n, in, out, err); /* its message */
    if (out[0].shape.ndim != 4 || out[0].shape.dims[0] != in[0].shape.dims[0] ||
        out[0].shape.dims[1] != in[0].shape.dims[1] ||
        xf_rt_window_setup(n, &in[0].shape, &out[0].shape, n->attrs.kernel, &q.w, err) != XF_OK ||
        (q.w.k[0] == q.w.in[0] && q.w.k[1] == q.w.in[1]))
        return xf_ref_ms_qpool(n, in, out, err); /* its message, or its global pooling */
    bool s8 = in[0].dtype == XF_DT_INT8;
    float xs = param_f(&in[1]), term[256];
    int32_t xz = param_i(n, in, 2);
    for (int c = 0; c < 256; c++)
        term[c] = xs * (float)((s8 ? (int32_t)(int8_t)c : c) - xz);
    q.term = term;
    q.xs = xs;
    q.xz = xz;
    q.s8 = s8;
    q.wide = xf_dn_vector_width() == 512;
    q.ys = param_f(&in[3]);
    q.yz = (float)param_i(n, in, 4);
    q.lo = s8 ? -128.0f : 0.0f;
    q.hi = s8 ? 127.0f : 255.0f;
    q.ksize = q.w.k[0] * q.w.k[1];
    q.include_pad = n->attrs.count_include_pad;
    const xf_rt_window *w = &q.w;
    int64_t planes = in[0].shape.dims[0] * in[0].shape.dims[1], in_sp = w->in[0] * w->in[1];
    const uint8_t *x = in[0].data;
    uint8_t *y = out[0].data;
    XF_OMP_FOR(planes * w->out[0] > 1 && xf_rt_numel(&out[0]) * q.ksize >= XF_DN_CHUNK_MIN)
    for (int64_t row = 0; row < planes * w->out[0]; row++) {
        int64_t p = row / w->out[0], o0 = row % w->out[0];
        const uint8_t *plane = x + p * in_sp;
        uint8_t *yrow = y + (p * w->out[0] + o0) * w->out[1];
        int64_t r0 = o0 * w->stride[0] - w->pad_begin[0];
        int64_t r1 = r0 + w->k[0] < w->in[0] ? r0 + w->k[0] : w->in[0];
        r0 = r0 > 0 ? r0 : 0;
        for (int64_t o1 = 0; o1 < w->out[1];) {
            int64_t first = o1 * w->stride[1] - w->pad_begin[1];
            if (q.wide) {
                int64_t count = w->out[1] - o1 < 16 ? w->out[1] - o1 : 16;
                qpool16(&q, plane, r0, r1, o1, count, yrow + o1);
                o1 += count;
                continue;
            }
            if (o1 + 8 <= w->out[1] && first >= 0 && first + 7 * w->stride[1] + w->k[1] <= w->in[1]) {
                qpool8(&q, plane, r0, r1, first, yrow + o1);
                o1 += 8;
                continue;
            }
            int64_t c0 = first > 0 ? first : 0, c1 = first + w->k[1] < w->in[1] ? first + w->k[1] : w->in[1];
            float acc = 0.0f;
            for (int64_t i0 = r0; i0 < r1; i0++)
                for (int64_t i1 = c0; i1 < c1; i1++)
                    acc += term[plane[i0 * w->in[1] + i1]];
            yrow[o1++] = qpool_out(&q, acc, (r1 - r0) * (c1 - c0));
        }
    }
    return XF_OK;
#else
    return xf_ref_ms_qpool(n, in, out, err);
#endif
}

XF_DN_KERNEL_PREPARE(qavgpool_prepare, qavgpool_run)

const xf_dn_handler xf_dn_ms_qavgpool_handler = {qavgpool_handles, NULL, qavgpool_prepare, NULL};
