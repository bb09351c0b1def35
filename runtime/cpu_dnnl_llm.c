/* The cpu backend's MatMulNBits.  Products of many rows (a prompt): the
 * constant 4- or 8-bit weight is dequantized once, when the node is
 * prepared, into a float (N, K) matrix kept with the node, and every run is
 * one oneDNN sgemm on it (after A is quantized per block at accuracy_level
 * 4, as cpu_ref does).  This trades memory for speed: the float copy is 8
 * (4-bit) or 4 (8-bit) times the size of the packed weight, and the
 * product then runs at sgemm speed instead of unpacking every weight for
 * every row.  In dynamic mode nodes are prepared at each run, and the
 * weight is dequantized each time.
 *
 * A few rows (a decoder's token step) of 4-bit weights in blocks of a
 * multiple of 32, on AVX2: the packed weight is read as stored, 32 values
 * at a time, which moves an eighth of the float copy's bytes.  At
 * accuracy_level 4 A is quantized to int8 per block as ONNX Runtime does
 * and each block's product is summed exactly in int32 (vpmaddubsw,
 * vpmaddwd) before its scales; otherwise each weight is (q - zero point)
 * in float times A, each block's sum times its scale. */
#include "cpu_dnnl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define NB_X86 1
#else
#define NB_X86 0
#endif

/* the most rows of A the packed path takes */
#define NB_PACKED_ROWS 4

static bool has_input(const xf_node *n, int k) { return k < n->n_inputs && n->inputs[k] >= 0; }

static bool packed_ok(const xf_graph *g, const xf_node *n, int64_t m)
{
    const xf_attn_attrs *t = &n->attrs.attn;
    if (!NB_X86 || !__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma"))
        return false;
    return t->nb_bits == 4 && t->nb_block % 32 == 0 && m >= 1 && m <= NB_PACKED_ROWS && !has_input(n, 4) &&
           !(has_input(n, 3) && g->values[n->inputs[3]].dtype == XF_DT_FLOAT);
}

#if NB_X86
/* 32 4-bit values (16 bytes, the low half of each byte first) as bytes */
__attribute__((target("avx2,fma"))) static inline __m256i unpack32(const uint8_t *p)
{
    __m128i b = _mm_loadu_si128((const __m128i *)p), mask = _mm_set1_epi8(0x0f);
    __m128i lo = _mm_and_si128(b, mask), hi = _mm_and_si128(_mm_srli_epi16(b, 4), mask);
    return _mm256_set_m128i(_mm_unpackhi_epi8(lo, hi), _mm_unpacklo_epi8(lo, hi));
}

__attribute__((target("avx2,fma"))) static inline float hsum(__m256 v)
{
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_shuffle_ps(s, s, 1));
    return _mm_cvtss_f32(s);
}

typedef struct nb_geom {
    int64_t k, n, bs, blocks, blob, zrow;
    const uint8_t *b, *zp;
    const float *scale;
} nb_geom;

static unsigned zero_point(const nb_geom *g, int64_t r, int64_t blk)
{
    return g->zp ? (unsigned)(g->zp[r * g->zrow + blk / 2] >> (blk % 2 * 4)) & 15u : 8u;
}

/* One row at accuracy_level 4: qa (blocks * bs int8, zeros past K), its
 * per-block scales and sums. */
__attribute__((target("avx2,fma"))) static void row_int8(const nb_geom *g, const int8_t *qa, const float *as,
                                                         const int32_t *qsum, const float *bias, float *y)
{
    const __m256i ones = _mm256_set1_epi16(1);
    for (int64_t r = 0; r < g->n; r++) {
        __m256 acc = _mm256_setzero_ps();
        float corr = 0.0f;
        const uint8_t *w = g->b + r * g->blocks * g->blob;
        for (int64_t blk = 0; blk < g->blocks; blk++) {
            __m256i dot = _mm256_setzero_si256();
            for (int64_t c = 0; c < g->bs; c += 32) {
                __m256i q = unpack32(w + blk * g->blob + c / 2);
                __m256i a = _mm256_loadu_si256((const __m256i *)(qa + blk * g->bs + c));
                dot = _mm256_add_epi32(dot, _mm256_madd_epi16(_mm256_maddubs_epi16(q, a), ones));
            }
            float s = as[blk] * g->scale[r * g->blocks + blk];
            acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot), _mm256_set1_ps(s), acc);
            corr -= (float)((int32_t)zero_point(g, r, blk) * qsum[blk]) * s;
        }
        y[r] = hsum(acc) + corr + (bias ? bias[r] : 0.0f);
    }
}

/* One row of float A (blocks * bs, zeros past K). */
__attribute__((target("avx2,fma"))) static void row_float(const nb_geom *g, const float *a, const float *bias,
                                                          float *y)
{
    for (int64_t r = 0; r < g->n; r++) {
        __m256 acc = _mm256_setzero_ps();
        const uint8_t *w = g->b + r * g->blocks * g->blob;
        for (int64_t blk = 0; blk < g->blocks; blk++) {
            __m256 z = _mm256_set1_ps((float)zero_point(g, r, blk)), part = _mm256_setzero_ps();
            for (int64_t c = 0; c < g->bs; c += 32) {
                __m256i q = unpack32(w + blk * g->blob + c / 2);
                const float *ac = a + blk * g->bs + c;
                __m128i q0 = _mm256_castsi256_si128(q), q1 = _mm256_extracti128_si256(q, 1);
                __m128i parts[4] = {q0, _mm_srli_si128(q0, 8), q1, _mm_srli_si128(q1, 8)};
                for (int h = 0; h < 4; h++) {
                    __m256 wf = _mm256_sub_ps(_mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(parts[h])), z);
                    part = _mm256_fmadd_ps(wf, _mm256_loadu_ps(ac + 8 * h), part);
                }
            }
            acc = _mm256_fmadd_ps(part, _mm256_set1_ps(g->scale[r * g->blocks + blk]), acc);
        }
        y[r] = hsum(acc) + (bias ? bias[r] : 0.0f);
    }
}
#endif

static xf_status packed_run(xf_dn_node *st, const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out,
                            xf_error *err)
{
#if NB_X86
    const xf_attn_attrs *t = &n->attrs.attn;
    nb_geom g = {.k = t->nb_k, .n = t->nb_n, .bs = t->nb_block, .b = in[1].data, .scale = in[2].data};
    g.blocks = (g.k + g.bs - 1) / g.bs;
    g.blob = g.bs / 2;
    g.zrow = (g.blocks + 1) / 2;
    g.zp = has_input(n, 3) ? in[3].data : NULL;
    int64_t m = xf_rt_numel(&in[0]) / g.k, padded = g.blocks * g.bs;
    const float *a = in[0].data, *bias = has_input(n, 5) ? in[5].data : NULL;
    bool int8 = xf_nbits_quantizes_a(n, in);
    float *af = calloc((size_t)(padded + 2 * g.blocks), sizeof *af);
    int8_t *qa = calloc((size_t)padded, 1);
    if (!af || !qa) {
        free(af);
        free(qa);
        return xf_error_set(err, XF_ERR_NOMEM, "out of memory in %s", xf_op_name(n->op));
    }
    float *as = af + padded;
    int32_t *qsum = (int32_t *)(as + g.blocks);
    for (int64_t i = 0; i < m; i++) {
        memcpy(af, a + i * g.k, sizeof *af * (size_t)g.k);
        if (!int8) {
            row_float(&g, af, bias, (float *)out[0].data + i * g.n);
            continue;
        }
        for (int64_t blk = 0; blk < g.blocks; blk++) { /* as xf_nbits_quantize_a */
            float amax = 0.0f;
            for (int64_t c = blk * g.bs; c < (blk + 1) * g.bs; c++)
                amax = fabsf(af[c]) > amax ? fabsf(af[c]) : amax;
            float inv = amax != 0.0f ? 127.0f / amax : 0.0f;
            as[blk] = amax / 127.0f;
            qsum[blk] = 0;
            for (int64_t c = blk * g.bs; c < (blk + 1) * g.bs; c++)
                qsum[blk] += qa[c] = (int8_t)nearbyintf(af[c] * inv);
        }
        row_int8(&g, qa, as, qsum, bias, (float *)out[0].data + i * g.n);
    }
    free(af);
    free(qa);
    return XF_OK;
#else
    return xf_error_set(err, XF_ERR_UNSUPPORTED, "no packed MatMulNBits path on this machine");
#endif
}

static bool nbits_handles(const xf_graph *g, const xf_node *n)
{
    if (!xf_dn_is_f32(g, n->inputs[0]) || xf_shape_numel(&g->values[n->inputs[0]].shape) < 0)
        return false;
    for (int k = 1; k < n->n_inputs; k++)
        if (n->inputs[k] >= 0 && !g->values[n->inputs[k]].init)
            return false;
    return true;
}

static xf_status nbits_run(xf_dn_node *st, const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out,
                           xf_error *err)
{
    const xf_attn_attrs *t = &n->attrs.attn;
    int64_t k = t->nb_k, nn = t->nb_n, m = xf_rt_numel(&in[0]) / k;
    const float *a = in[0].data, *bias = n->n_inputs > 5 && n->inputs[5] >= 0 ? in[5].data : NULL;
    float *y = out[0].data, *aq = NULL;
    if (m < 1)
        return XF_OK;
    if (xf_nbits_quantizes_a(n, in)) {
        aq = malloc(sizeof *aq * (size_t)(m * k));
        if (!aq)
            return xf_error_set(err, XF_ERR_NOMEM, "out of memory in %s", xf_op_name(n->op));
        xf_nbits_quantize_a(a, aq, m, k, t->nb_block);
        a = aq;
    }
    for (int64_t i = 0; bias && i < m; i++)
        memcpy(y + i * nn, bias, sizeof *y * (size_t)nn);
    dnnl_status_t s = dnnl_sgemm('N', 'T', m, nn, k, 1.0f, a, k, st->folded_w, k, bias ? 1.0f : 0.0f, y, nn);
    free(aq);
    if (s != dnnl_success)
        return xf_dn_fail(err, n, "dnnl_sgemm", s);
    return XF_OK;
}

static xf_status nbits_prepare(xf_dn_ctx *c, const xf_graph *g, const xf_node *n, const xf_tensor_view *in,
                               const xf_tensor_view *out, xf_dn_node *st, xf_error *err)
{
    const xf_attn_attrs *t = &n->attrs.attn;
    if (packed_ok(g, n, xf_rt_numel(&in[0]) / t->nb_k)) {
        st->own_run = packed_run;
        return XF_OK;
    }
    st->folded_w = malloc(sizeof(float) * (size_t)(t->nb_n * t->nb_k));
    if (!st->folded_w)
        return xf_error_set(err, XF_ERR_NOMEM, "out of memory in %s", xf_op_name(n->op));
    st->own_run = nbits_run;
    return xf_nbits_dequantize(n, in, st->folded_w, err);
}

const xf_dn_handler xf_dn_nbits_handler = {nbits_handles, NULL, nbits_prepare, NULL};
