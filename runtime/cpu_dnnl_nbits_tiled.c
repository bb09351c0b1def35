/* The cpu backend's MatMulNBits on tiles of the weight dequantized at
 * each run: the products the other paths (cpu_dnnl_llm.c) do not take --
 * accuracy_level 0 past 4 rows, 8 bits, float zero points, g_idx, blocks
 * of 16.  Each thread dequantizes its tiles of columns (about 1 MiB of
 * floats, 4 MiB from 128 rows) into its own buffer, in vectors where
 * there is no g_idx and no float zero point, and each tile is one oneDNN
 * sgemm (after A is quantized per block at accuracy_level 4, as cpu_ref
 * does).  No float copy of the weight is kept: a node holds its packed
 * bytes only. */
#include "cpu_dnnl_nbits.h"

#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#if NB_X86
/* Rows [r0, r1) of a 4-bit weight with uint8 or no zero points and no
 * g_idx dequantized as xf_nbits_dequantize_rows does ((q - zero point) *
 * scale, the same two roundings), 16 values at a time. */
__attribute__((target("avx2,fma"))) static void dequant_rows_avx2(const nb_geom *g, int64_t r0, int64_t r1, float *w)
{
    const __m128i mask = _mm_set1_epi8(0x0f);
    for (int64_t r = r0; r < r1; r++)
        for (int64_t blk = 0; blk < g->blocks; blk++) {
            const uint8_t *p = g->b + (r * g->blocks + blk) * g->blob;
            float z = (float)zero_point(g, r, blk), s = g->scale[r * g->blocks + blk];
            __m256 zv = _mm256_set1_ps(z), sv = _mm256_set1_ps(s);
            int64_t len = g->k - blk * g->bs < g->bs ? g->k - blk * g->bs : g->bs, j = 0;
            float *o = w + (r - r0) * g->k + blk * g->bs;
            for (; j + 16 <= len; j += 16) {
                __m128i b = _mm_loadl_epi64((const __m128i *)(p + j / 2));
                __m128i q = _mm_unpacklo_epi8(_mm_and_si128(b, mask), _mm_and_si128(_mm_srli_epi16(b, 4), mask));
                __m256 lo = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(q));
                __m256 hi = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_srli_si128(q, 8)));
                _mm256_storeu_ps(o + j, _mm256_mul_ps(_mm256_sub_ps(lo, zv), sv));
                _mm256_storeu_ps(o + j + 8, _mm256_mul_ps(_mm256_sub_ps(hi, zv), sv));
            }
            for (; j < len; j++)
                o[j] = ((float)((p[j / 2] >> (j % 2 * 4)) & 15u) - z) * s;
        }
}
#endif

#if NB_X86
/* dequant_rows_avx2 with AVX-512 where K is whole blocks of a multiple of
 * 32: each row's 32 values of a group even ones first, then odd ones (as
 * even_odd orders A), 16 bytes of codes widened to 16 ints giving both. */
__attribute__((target("avx512f,avx512bw,avx2,fma"))) static void dequant_rows512(const nb_geom *g, int64_t r0,
                                                                                int64_t r1, float *w)
{
    const __m512i low = _mm512_set1_epi32(15);
    for (int64_t r = r0; r < r1; r++)
        for (int64_t blk = 0; blk < g->blocks; blk++) {
            const uint8_t *p = g->b + (r * g->blocks + blk) * g->blob;
            __m512 z = _mm512_set1_ps((float)zero_point(g, r, blk)), s = _mm512_set1_ps(g->scale[r * g->blocks + blk]);
            float *o = w + (r - r0) * g->k + blk * g->bs;
            for (int64_t c = 0; c < g->bs; c += 32) {
                __m512i q = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(p + c / 2)));
                __m512 even = _mm512_cvtepi32_ps(_mm512_and_si512(q, low));
                __m512 odd = _mm512_cvtepi32_ps(_mm512_srli_epi32(q, 4));
                _mm512_storeu_ps(o + c, _mm512_mul_ps(_mm512_sub_ps(even, z), s));
                _mm512_storeu_ps(o + c + 16, _mm512_mul_ps(_mm512_sub_ps(odd, z), s));
            }
        }
}
#endif

#if NB_X86
/* Rows [r0, r1) of an 8-bit weight with uint8 or no zero points and no
 * g_idx dequantized as xf_nbits_dequantize_rows does, 8 codes a vector
 * (with AVX-512 too: a second loop, 16 a vector, saved under 10% of a
 * run of ONNX Runtime's two 2048x2048 8-bit layers). */
__attribute__((target("avx2,fma"))) static void dequant_rows8(const nb_geom *g, int64_t r0, int64_t r1, float *w)
{
    for (int64_t r = r0; r < r1; r++)
        for (int64_t blk = 0; blk < g->blocks; blk++) {
            const uint8_t *p = g->b + (r * g->blocks + blk) * g->bs;
            float z = (float)zero_point(g, r, blk), s = g->scale[r * g->blocks + blk];
            int64_t len = g->k - blk * g->bs < g->bs ? g->k - blk * g->bs : g->bs, j = 0;
            float *o = w + (r - r0) * g->k + blk * g->bs;
            __m256 zv = _mm256_set1_ps(z), sv = _mm256_set1_ps(s);
            for (; j + 8 <= len; j += 8) {
                __m256 q = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(p + j))));
                _mm256_storeu_ps(o + j, _mm256_mul_ps(_mm256_sub_ps(q, zv), sv));
            }
            for (; j < len; j++)
                o[j] = ((float)p[j] - z) * s;
        }
}
#endif

/* Whether the tiled path dequantizes n's weight with dequant_rows512 (A
 * then ordered by even_odd). */
static bool tiles_even_odd(const xf_node *n, const xf_tensor_view *in)
{
#if NB_X86
    const xf_attn_attrs *t = &n->attrs.attn;
    return t->nb_bits == 4 && t->nb_block % 32 == 0 && t->nb_k % t->nb_block == 0 && !has_input(n, 4) &&
           !(has_input(n, 3) && in[3].dtype == XF_DT_FLOAT) && float512();
#else
    (void)n;
    (void)in;
    return false;
#endif
}

/* Rows [r0, r1) of n's dequantized weight into w: the vector loops where
 * they apply (dequant_rows512's order where tiles_even_odd), else
 * xf_nbits_dequantize_rows (whose g_idx check passed when the node was
 * prepared). */
static void dequant_rows(const xf_node *n, const xf_tensor_view *in, int64_t r0, int64_t r1, float *w)
{
    const xf_attn_attrs *t = &n->attrs.attn;
#if NB_X86
    if (tiles_even_odd(n, in)) {
        nb_geom g = geom_of(n, in);
        dequant_rows512(&g, r0, r1, w);
        return;
    }
    if (t->nb_bits == 8 && !has_input(n, 4) && !(has_input(n, 3) && in[3].dtype == XF_DT_FLOAT) &&
        __builtin_cpu_supports("avx2")) {
        nb_geom g = geom_of(n, in);
        dequant_rows8(&g, r0, r1, w);
        return;
    }
    if (t->nb_bits == 4 && t->nb_block % 2 == 0 && !has_input(n, 4) &&
        !(has_input(n, 3) && in[3].dtype == XF_DT_FLOAT) && __builtin_cpu_supports("avx2")) {
        nb_geom g = geom_of(n, in);
        dequant_rows_avx2(&g, r0, r1, w);
        return;
    }
#endif
    xf_error e;
    xf_nbits_dequantize_rows(n, in, r0, r1, w, &e);
}

/* Columns of the weight one tile of the dequantizing path holds: a
 * multiple of 16 whose floats take about 1 MiB, so that a tile stays in
 * the core's cache between its dequantization and its product; 4 MiB for
 * products of 128 rows or more, where oneDNN's packing of A for every
 * tile costs more than the wider tile's misses; and narrower where that
 * leaves fewer tiles than OpenMP has threads (each tile's sgemm runs on
 * the one thread that takes it). */
static int64_t tile_cols(int64_t m, int64_t k, int64_t nn)
{
    int64_t t = (m >= 128 ? 1048576 : 262144) / k / 16 * 16;
#ifdef _OPENMP
    int64_t per_thread = (nn + omp_get_max_threads() - 1) / omp_get_max_threads();
    per_thread = (per_thread + 15) / 16 * 16;
    t = per_thread < t ? per_thread : t;
#endif
    t = t < 16 ? 16 : t;
    return t < nn ? t : nn;
}

xf_status xf_dn_nbits_tiled_run(xf_dn_node *st, const xf_node *n, const xf_tensor_view *in,
                                const xf_tensor_view *out, xf_error *err)
{
    (void)st;
    const xf_attn_attrs *t = &n->attrs.attn;
    int64_t k = t->nb_k, nn = t->nb_n, m = xf_rt_numel(&in[0]) / k, tc = tile_cols(m, k, nn);
    int64_t tiles = (nn + tc - 1) / tc;
    const float *a = in[0].data, *bias = n->n_inputs > 5 && n->inputs[5] >= 0 ? in[5].data : NULL;
    float *y = out[0].data, *aq = NULL;
    bool quantize = xf_nbits_quantizes_a(n, in), reorder = tiles_even_odd(n, in);
    if (m < 1)
        return XF_OK;
    if (quantize || reorder) {
        aq = malloc(sizeof *aq * (size_t)(m * k) * (quantize && reorder ? 2 : 1));
        if (!aq)
            return xf_error_set(err, XF_ERR_NOMEM, "out of memory in %s", xf_op_name(n->op));
        float *q = quantize && reorder ? aq + m * k : aq;
        if (quantize)
            xf_nbits_quantize_a(a, q, m, k, t->nb_block);
        for (int64_t i = 0; reorder && i < m; i++)
            even_odd((quantize ? q : a) + i * k, k, aq + i * k);
        a = aq;
    }
    for (int64_t i = 0; bias && i < m; i++)
        memcpy(y + i * nn, bias, sizeof *y * (size_t)nn);
    dnnl_status_t failed = dnnl_success;
    bool nomem = false;
    /* each thread dequantizes its tiles into its own buffer; oneDNN runs
     * the products inside the parallel region on the calling thread */
    XF_DN_PRAGMA(omp parallel if (tiles > 1))
    {
        float *w = malloc(sizeof *w * (size_t)(tc * k));
        XF_DN_PRAGMA(omp for schedule(static))
        for (int64_t ti = 0; ti < tiles; ti++) {
            int64_t r0 = ti * tc, r1 = r0 + tc < nn ? r0 + tc : nn;
            if (!w) {
                XF_DN_PRAGMA(omp atomic write)
                nomem = true;
                continue;
            }
            dequant_rows(n, in, r0, r1, w);
            dnnl_status_t s = dnnl_sgemm('N', 'T', m, r1 - r0, k, 1.0f, a, k, w, k, bias ? 1.0f : 0.0f, y + r0, nn);
            if (s != dnnl_success) {
                XF_DN_PRAGMA(omp atomic write)
                failed = s;
            }
        }
        free(w);
    }
    free(aq);
    if (nomem)
        return xf_error_set(err, XF_ERR_NOMEM, "out of memory in %s", xf_op_name(n->op));
    if (failed != dnnl_success)
        return xf_dn_fail(err, n, "dnnl_sgemm", failed);
    return XF_OK;
}

