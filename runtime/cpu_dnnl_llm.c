/* The cpu backend's MatMulNBits: the paths that repack the weight once or
 * read it as stored, and the choice of a node's path.
 *
 * Many rows (a prompt) of 4-bit weights at accuracy_level 4 (A quantized
 * to int8 per block, as ONNX Runtime and cpu_ref do): int8 products.  The
 * weight is unpacked once, when the node is prepared, into int8 q - zero
 * point in tiles of 16 columns (nb_int8: a quarter of a float copy's
 * bytes); each block of four rows of A times two tiles is summed exactly in
 * int32 by AVX-512 VNNI (vpdpbusd) or AVX2 (vpmaddubsw, vpmaddwd), then
 * times A's and B's block scales in float.  Split over OpenMP's threads by
 * column tiles and row groups.
 *
 * A few rows (a decoder's token step) at accuracy_level 4 with AVX-512
 * VNNI: the 4-bit weight is repacked once, still 4 bits a value, into
 * tiles of 16 columns whose 64-byte groups hold 8 values of K for each
 * column (4 in the low nibbles, 4 in the high), so that two masks and two
 * vpdpbusd take 128 products against A's int8 codes; an 8-bit weight's
 * groups hold 4 codes of each column as they are, one vpdpbusd's 64
 * products, and 8-bit weights take this path at any number of rows, four
 * at a time.  Zero points come off each block's int32 sum as zero point x
 * the block's code sum.
 *
 * Otherwise a few rows of 4-bit weights in blocks of a multiple of 32, on
 * AVX2 (and 1 or 2 rows of 8-bit ones at accuracy_level 0, with AVX-512):
 * the packed weight is read as stored, 32 values at a time, which moves
 * an eighth (a quarter) of the float copy's bytes.  At accuracy_level 4 A is
 * quantized to int8 per block as ONNX Runtime does and each block's
 * product is summed exactly in int32 (vpmaddubsw, vpmaddwd) before its
 * scales; otherwise each weight is (q - zero point) in float, made once
 * for all the rows (16 at a time where oneDNN may use AVX-512), times A,
 * each block's sum times its scale.  Split over OpenMP's threads by
 * columns.
 *
 * Every other product (accuracy_level 0 past 4 rows, 8 bits, float zero
 * points, g_idx, blocks of 16) dequantizes tiles of the weight at each run
 * (cpu_dnnl_nbits_tiled.c).
 *
 * The unpacked and repacked weights are kept by the backend's context, by
 * the weight's bytes: in dynamic mode, where a node is prepared again when
 * its operands' shapes change (each prompt's length, then the first token
 * step), it finds its weight in the layout its path reads.  The int8
 * kernels are chosen at run time from what the CPU has and what oneDNN may
 * use (DNNL_MAX_CPU_ISA). */
#include "cpu_dnnl_nbits.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* the most rows of A the packed path takes */
#define NB_PACKED_ROWS 4

static bool packed_ok(const xf_graph *g, const xf_node *n, int64_t m)
{
    const xf_attn_attrs *t = &n->attrs.attn;
    if (!NB_X86 || !__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma"))
        return false;
    /* 8-bit weights: float products with AVX-512, of 1 or 2 rows (from 3
     * the tiled path's sgemm is faster) */
    bool bits = t->nb_bits == 4 || (t->nb_bits == 8 && t->nb_accuracy != 4 && m <= 2 && float512());
    return bits && t->nb_block % 32 == 0 && m >= 1 && m <= NB_PACKED_ROWS && !has_input(n, 4) &&
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

/* Columns [r0, r1) of one row at accuracy_level 4: qa (blocks * bs int8,
 * zeros past K), its per-block scales and sums. */
__attribute__((target("avx2,fma"))) static void row_int8(const nb_geom *g, int64_t r0, int64_t r1, const int8_t *qa,
                                                         const float *as, const int32_t *qsum, const float *bias,
                                                         float *y)
{
    const __m256i ones = _mm256_set1_epi16(1);
    for (int64_t r = r0; r < r1; r++) {
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

/* Columns [r0, r1) of m (at most NB_PACKED_ROWS) rows of float A (rows
 * of blocks * bs, zeros past K, the next at a + padded): each 32 weights
 * are unpacked and made (q - zero point) in float once for all the rows.
 * Inlined with m a constant, so that the rows' sums stay in registers. */
static inline __attribute__((always_inline, target("avx2,fma"))) void
rows_float_m(const nb_geom *g, int64_t r0, int64_t r1, const float *a, const int64_t m, int64_t padded,
             const float *bias, float *y)
{
    for (int64_t r = r0; r < r1; r++) {
        __m256 acc[NB_PACKED_ROWS];
        for (int64_t i = 0; i < m; i++)
            acc[i] = _mm256_setzero_ps();
        const uint8_t *w = g->b + r * g->blocks * g->blob;
        for (int64_t blk = 0; blk < g->blocks; blk++) {
            __m256 z = _mm256_set1_ps((float)zero_point(g, r, blk)), part[NB_PACKED_ROWS];
            for (int64_t i = 0; i < m; i++)
                part[i] = _mm256_setzero_ps();
            for (int64_t c = 0; c < g->bs; c += 32) {
                __m256i q = unpack32(w + blk * g->blob + c / 2);
                __m128i q0 = _mm256_castsi256_si128(q), q1 = _mm256_extracti128_si256(q, 1);
                __m128i parts[4] = {q0, _mm_srli_si128(q0, 8), q1, _mm_srli_si128(q1, 8)};
                for (int h = 0; h < 4; h++) {
                    __m256 wf = _mm256_sub_ps(_mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(parts[h])), z);
                    const float *ac = a + blk * g->bs + c + 8 * h;
                    for (int64_t i = 0; i < m; i++)
                        part[i] = _mm256_fmadd_ps(wf, _mm256_loadu_ps(ac + i * padded), part[i]);
                }
            }
            __m256 s = _mm256_set1_ps(g->scale[r * g->blocks + blk]);
            for (int64_t i = 0; i < m; i++)
                acc[i] = _mm256_fmadd_ps(part[i], s, acc[i]);
        }
        for (int64_t i = 0; i < m; i++)
            y[i * g->n + r] = hsum(acc[i]) + (bias ? bias[r] : 0.0f);
    }
}

/* rows_float_m 16 weights to a vector, with AVX-512: A's rows hold each
 * 32 values even ones first, then odd ones, so that 16 bytes of codes
 * widened to 16 ints give the 16 even weights in their low nibbles and the
 * 16 odd ones in their high nibbles, without shuffles. */
static inline __attribute__((always_inline, target("avx512f,avx512bw,avx2,fma"))) void
rows_float512_m(const nb_geom *g, int64_t r0, int64_t r1, const float *a, const int64_t m, const int bits,
                int64_t padded, const float *bias, float *y)
{
    const __m512i low = _mm512_set1_epi32(15);
    for (int64_t r = r0; r < r1; r++) {
        /* blocks alternate between two sums a row: a block's scaling then
         * waits on the block before the one before */
        __m512 acc[2][NB_PACKED_ROWS];
        for (int64_t i = 0; i < m; i++)
            acc[0][i] = acc[1][i] = _mm512_setzero_ps();
        const uint8_t *w = g->b + r * g->blocks * g->blob;
        for (int64_t blk = 0; blk < g->blocks; blk++) {
            /* two sums a row, so that each waits on half the products */
            __m512 z = _mm512_set1_ps((float)zero_point(g, r, blk)), p0[NB_PACKED_ROWS], p1[NB_PACKED_ROWS];
            for (int64_t i = 0; i < m; i++)
                p0[i] = p1[i] = _mm512_setzero_ps();
            for (int64_t c = 0; c < g->bs; c += 32) {
                __m512 w0, w1;
                if (bits == 8) { /* 32 codes in order */
                    const __m128i *q = (const __m128i *)(w + blk * g->blob + c);
                    w0 = _mm512_sub_ps(_mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_loadu_si128(q))), z);
                    w1 = _mm512_sub_ps(_mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_loadu_si128(q + 1))), z);
                } else {
                    __m512i q = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(w + blk * g->blob + c / 2)));
                    w0 = _mm512_sub_ps(_mm512_cvtepi32_ps(_mm512_and_si512(q, low)), z);
                    w1 = _mm512_sub_ps(_mm512_cvtepi32_ps(_mm512_srli_epi32(q, 4)), z);
                }
                const float *ac = a + blk * g->bs + c;
                for (int64_t i = 0; i < m; i++) {
                    p0[i] = _mm512_fmadd_ps(w0, _mm512_loadu_ps(ac + i * padded), p0[i]);
                    p1[i] = _mm512_fmadd_ps(w1, _mm512_loadu_ps(ac + i * padded + 16), p1[i]);
                }
            }
            __m512 s = _mm512_set1_ps(g->scale[r * g->blocks + blk]);
            for (int64_t i = 0; i < m; i++)
                acc[blk & 1][i] = _mm512_fmadd_ps(_mm512_add_ps(p0[i], p1[i]), s, acc[blk & 1][i]);
        }
        for (int64_t i = 0; i < m; i++)
            y[i * g->n + r] = _mm512_reduce_add_ps(_mm512_add_ps(acc[0][i], acc[1][i])) + (bias ? bias[r] : 0.0f);
    }
}

__attribute__((target("avx2,fma"))) static void rows_float(const nb_geom *g, int64_t r0, int64_t r1, const float *a,
                                                           int64_t m, int64_t padded, const float *bias, float *y)
{
    switch (m) {
    case 1: rows_float_m(g, r0, r1, a, 1, padded, bias, y); break;
    case 2: rows_float_m(g, r0, r1, a, 2, padded, bias, y); break;
    case 3: rows_float_m(g, r0, r1, a, 3, padded, bias, y); break;
    default: rows_float_m(g, r0, r1, a, 4, padded, bias, y); break;
    }
}

__attribute__((target("avx512f,avx512bw,avx2,fma"))) static void rows_float512(const nb_geom *g, int64_t r0, int64_t r1,
                                                                              const float *a, int64_t m,
                                                                              int64_t padded, const float *bias,
                                                                              float *y)
{
    if (g->bits == 8) {
        switch (m) {
        case 1: rows_float512_m(g, r0, r1, a, 1, 8, padded, bias, y); break;
        case 2: rows_float512_m(g, r0, r1, a, 2, 8, padded, bias, y); break;
        case 3: rows_float512_m(g, r0, r1, a, 3, 8, padded, bias, y); break;
        default: rows_float512_m(g, r0, r1, a, 4, 8, padded, bias, y); break;
        }
        return;
    }
    switch (m) {
    case 1: rows_float512_m(g, r0, r1, a, 1, 4, padded, bias, y); break;
    case 2: rows_float512_m(g, r0, r1, a, 2, 4, padded, bias, y); break;
    case 3: rows_float512_m(g, r0, r1, a, 3, 4, padded, bias, y); break;
    default: rows_float512_m(g, r0, r1, a, 4, 4, padded, bias, y); break;
    }
}

#endif

/* One row of A quantized per block of bs as xf_nbits_quantize_a does
 * (scale max |a| / 127, a * (127 / max) rounded to nearest even), into
 * blocks * bs int8 codes xor flip (zeros past K), their scales and (qsum
 * not NULL) their sums. */
static void quantize_row(const float *a, int64_t k, int64_t bs, int64_t blocks, uint8_t flip, int8_t *qa, float *as,
                         int32_t *qsum)
{
    for (int64_t blk = 0; blk < blocks; blk++) {
        int64_t c0 = blk * bs, c1 = c0 + bs < k ? c0 + bs : k;
        float amax = 0.0f;
        for (int64_t c = c0; c < c1; c++)
            amax = fabsf(a[c]) > amax ? fabsf(a[c]) : amax;
        float inv = amax != 0.0f ? 127.0f / amax : 0.0f;
        int32_t sum = 0;
        as[blk] = amax / 127.0f;
        for (int64_t c = c0; c < c0 + bs; c++) {
            int8_t q = c < c1 ? (int8_t)nearbyintf(a[c] * inv) : 0;
            sum += q;
            qa[c] = (int8_t)((uint8_t)q ^ flip);
        }
        if (qsum)
            qsum[blk] = sum;
    }
}

/* the columns one thread of the packed path takes at a time */
#define NB_PACKED_CHUNK 64

static xf_status packed_run(xf_dn_node *st, const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out,
                            xf_error *err)
{
#if NB_X86
    nb_geom g = geom_of(n, in);
    int64_t m = xf_rt_numel(&in[0]) / g.k, padded = g.blocks * g.bs;
    const float *a = in[0].data, *bias = has_input(n, 5) ? in[5].data : NULL;
    bool int8 = xf_nbits_quantizes_a(n, in), wide = !int8 && float512();
    /* per row: A padded with zeros, or its int8 codes, scales and sums */
    float *af = calloc((size_t)(m * (padded + 2 * g.blocks)), sizeof *af);
    int8_t *qa = calloc((size_t)(m * padded), 1);
    if (!af || !qa) {
        free(af);
        free(qa);
        return xf_error_set(err, XF_ERR_NOMEM, "out of memory in %s", xf_op_name(n->op));
    }
    float *as = af + m * padded;
    int32_t *qsum = (int32_t *)(as + m * g.blocks);
    for (int64_t i = 0; i < m; i++) {
        if (int8)
            quantize_row(a + i * g.k, g.k, g.bs, g.blocks, 0, qa + i * padded, as + i * g.blocks, qsum + i * g.blocks);
        else if (!wide || g.bits == 8)
            memcpy(af + i * padded, a + i * g.k, sizeof *af * (size_t)g.k);
        else
            even_odd(a + i * g.k, g.k, af + i * padded); /* as rows_float512 reads 4-bit codes */
    }
    int64_t chunks = (g.n + NB_PACKED_CHUNK - 1) / NB_PACKED_CHUNK;
    float *y = out[0].data;
    XF_OMP_FOR(chunks > 1)
    for (int64_t ch = 0; ch < chunks; ch++) {
        int64_t r0 = ch * NB_PACKED_CHUNK, r1 = r0 + NB_PACKED_CHUNK < g.n ? r0 + NB_PACKED_CHUNK : g.n;
        if (!int8 && wide)
            rows_float512(&g, r0, r1, af, m, padded, bias, y);
        else if (!int8)
            rows_float(&g, r0, r1, af, m, padded, bias, y);
        for (int64_t i = 0; int8 && i < m; i++)
            row_int8(&g, r0, r1, qa + i * padded, as + i * g.blocks, qsum + i * g.blocks, bias, y + i * g.n);
    }
    free(af);
    free(qa);
    return XF_OK;
#else
    return xf_error_set(err, XF_ERR_UNSUPPORTED, "no packed MatMulNBits path on this machine");
#endif
}

/* ------------------------------------------------ int8 products of many rows */

/* The 4-bit weight of the int8 path, unpacked once into w = q - zero point
 * (int8, zeros past K and past N) in tiles of 16 columns: per tile, per
 * block, per 4 values of K, the 16 columns' 4 values (64 bytes), which one
 * vpdpbusd multiplies by 4 codes of a row of A broadcast.  A's codes are
 * read as uint8 (q + 128), so each block's sum carries 128 times the
 * block's sum of w, which corr (-128 times it) takes back: the int32 sum
 * is exactly sum (q_a (q - zero point)), which the products of a few rows
 * compute too.  The tiles are even in number: the kernels take two. */
#define NB_TILE 16

typedef struct nb_int8 {
    int64_t k, n, bs, blocks, tiles;
    int8_t *w;     /* tiles x blocks x (bs / 4) x 16 x 4 */
    int32_t *corr; /* tiles x blocks x 16 */
    float *scale;  /* tiles x blocks x 16: B's scales */
} nb_int8;

static int int8_isa(void)
{
#if NB_X86
    if (xf_dn_exact_int8() && __builtin_cpu_supports("avx512vnni") && __builtin_cpu_supports("avx512bw"))
        return 2;
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        return 1;
#endif
    return 0;
}

static bool int8_ok(const xf_node *n, const xf_tensor_view *in)
{
    return n->attrs.attn.nb_bits == 4 && xf_nbits_quantizes_a(n, in) && int8_isa() > 0;
}

/* The weight's geometry (g: K, block, blocks, the packed bytes and zero
 * points) and its tiles of NB_TILE columns, even in number; and one zeroed
 * 64-byte aligned allocation of `header` bytes (rounded up to 64) then
 * wbytes and per_tile_block x (tiles x blocks x NB_TILE) bytes, freed with
 * free.  NULL when out of memory. */
static void *tiled_alloc(const xf_node *n, const xf_tensor_view *in, size_t header, size_t wbytes_per_value_x2,
                         size_t per_entry, nb_geom *g, int64_t *tiles, size_t *wbytes)
{
    const xf_attn_attrs *t = &n->attrs.attn;
    int64_t bs = t->nb_block, blocks = (t->nb_k + bs - 1) / bs;
    *tiles = (t->nb_n + 2 * NB_TILE - 1) / (2 * NB_TILE) * 2;
    *g = geom_of(n, in);
    *wbytes = (size_t)(*tiles * blocks * bs * NB_TILE) * wbytes_per_value_x2 / 2;
    size_t head = (header + 63) / 64 * 64, total = head + *wbytes + (size_t)(*tiles * blocks * NB_TILE) * per_entry;
    void *p = aligned_alloc(64, (total + 63) / 64 * 64);
    if (p)
        memset(p, 0, total);
    return p;
}

/* The nb_int8 of the node's weight, in one block (freed with free). */
static nb_int8 *int8_pack(const xf_node *n, const xf_tensor_view *in)
{
    nb_geom g;
    int64_t tiles;
    size_t wbytes;
    nb_int8 *p = tiled_alloc(n, in, sizeof(nb_int8), 2, sizeof(int32_t) + sizeof(float), &g, &tiles, &wbytes);
    if (!p)
        return NULL;
    int64_t bs = g.bs, blocks = g.blocks, per = tiles * blocks * NB_TILE;
    *p = (nb_int8){g.k, g.n, bs, blocks, tiles};
    p->w = (int8_t *)p + (sizeof(nb_int8) + 63) / 64 * 64;
    p->corr = (int32_t *)(p->w + wbytes);
    p->scale = (float *)(p->corr + per);
    /* the tiles' rows apart, over OpenMP's threads */
    XF_OMP_FOR(p->n > NB_TILE)
    for (int64_t r = 0; r < p->n; r++)
        for (int64_t blk = 0; blk < blocks; blk++) {
            int64_t at = (r / NB_TILE * blocks + blk) * NB_TILE + r % NB_TILE, sum = 0;
            int64_t len = g.k - blk * bs < bs ? g.k - blk * bs : bs;
            int8_t *w = p->w + at / NB_TILE * NB_TILE * bs + r % NB_TILE * 4;
            const uint8_t *src = g.b + (r * blocks + blk) * g.blob;
            int z = (int)zero_point(&g, r, blk);
            /* two values a byte, the low nibble first */
            for (int64_t c = 0; c + 1 < len; c += 2) {
                int lo = (src[c / 2] & 15) - z, hi = (src[c / 2] >> 4) - z;
                w[c / 4 * NB_TILE * 4 + c % 4] = (int8_t)lo;
                w[c / 4 * NB_TILE * 4 + c % 4 + 1] = (int8_t)hi;
                sum += lo + hi;
            }
            if (len % 2) {
                int v = (src[len / 2] & 15) - z;
                w[(len - 1) / 4 * NB_TILE * 4 + (len - 1) % 4] = (int8_t)v;
                sum += v;
            }
            p->corr[at] = (int32_t)(-128 * sum);
            p->scale[at] = g.scale[r * blocks + blk];
        }
    return p;
}

static inline int32_t load4(const uint8_t *p)
{
    int32_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

#if NB_X86
#define NB_VNNI __attribute__((target("avx2,fma,avx512f,avx512bw,avx512vnni")))
#define NB_AVX2 __attribute__((target("avx2,fma")))
/* the kernels' four rows of A, spelled out so that their sums stay in registers */
#define NB_ROWS(X) X(0) X(1) X(2) X(3)

/* Four rows of A's codes (stride lda, uint8) times tiles t and t + 1: out
 * (4 x 32) without the bias. */
static NB_VNNI void pair_vnni(const nb_int8 *p, int64_t t, const uint8_t *a, int64_t lda, const float *as, float *out)
{
    int64_t next = p->blocks * NB_TILE; /* from tile t to t + 1 in corr and scale */
#define NB_DECL(r) __m512 f##r##0 = _mm512_setzero_ps(), f##r##1 = f##r##0; __m512i d##r##0, d##r##1;
    NB_ROWS(NB_DECL)
    for (int64_t blk = 0; blk < p->blocks; blk++) {
        int64_t at = (t * p->blocks + blk) * NB_TILE;
        __m512i c0 = _mm512_loadu_si512(p->corr + at), c1 = _mm512_loadu_si512(p->corr + at + next);
#define NB_INIT(r) d##r##0 = c0; d##r##1 = c1;
        NB_ROWS(NB_INIT)
        const int8_t *w0 = p->w + at * p->bs, *w1 = w0 + next * p->bs;
        const uint8_t *ab = a + blk * p->bs;
        for (int64_t s = 0; s < p->bs / 4; s++) {
            __m512i b0 = _mm512_load_si512(w0 + s * 64), b1 = _mm512_load_si512(w1 + s * 64), av;
#define NB_DOT(r)                                                                                                      \
    av = _mm512_set1_epi32(load4(ab + r * lda + 4 * s));                                                               \
    d##r##0 = _mm512_dpbusd_epi32(d##r##0, av, b0);                                                                    \
    d##r##1 = _mm512_dpbusd_epi32(d##r##1, av, b1);
            NB_ROWS(NB_DOT)
        }
        __m512 s0 = _mm512_loadu_ps(p->scale + at), s1 = _mm512_loadu_ps(p->scale + at + next), sa;
#define NB_SCALE(r)                                                                                                    \
    sa = _mm512_set1_ps(as[r * p->blocks + blk]);                                                                      \
    f##r##0 = _mm512_fmadd_ps(_mm512_cvtepi32_ps(d##r##0), _mm512_mul_ps(sa, s0), f##r##0);                            \
    f##r##1 = _mm512_fmadd_ps(_mm512_cvtepi32_ps(d##r##1), _mm512_mul_ps(sa, s1), f##r##1);
        NB_ROWS(NB_SCALE)
    }
#define NB_STORE(r)                                                                                                    \
    _mm512_storeu_ps(out + r * 2 * NB_TILE, f##r##0);                                                                  \
    _mm512_storeu_ps(out + r * 2 * NB_TILE + NB_TILE, f##r##1);
    NB_ROWS(NB_STORE)
}

/* The same for the 8 columns 8 h.. of tile t with AVX2: vpmaddubsw adds
 * two products of at most 255 x 15 in int16, which cannot saturate. */
static NB_AVX2 void half_avx2(const nb_int8 *p, int64_t t, int h, const uint8_t *a, int64_t lda, const float *as,
                              float *out)
{
    const __m256i ones = _mm256_set1_epi16(1);
#define NB_DECL2(r) __m256 f##r = _mm256_setzero_ps(); __m256i d##r;
    NB_ROWS(NB_DECL2)
    for (int64_t blk = 0; blk < p->blocks; blk++) {
        int64_t at = (t * p->blocks + blk) * NB_TILE;
        __m256i c = _mm256_loadu_si256((const __m256i *)(p->corr + at + 8 * h));
#define NB_INIT2(r) d##r = c;
        NB_ROWS(NB_INIT2)
        const int8_t *w = p->w + at * p->bs + 32 * h;
        const uint8_t *ab = a + blk * p->bs;
        for (int64_t s = 0; s < p->bs / 4; s++) {
            __m256i b = _mm256_load_si256((const __m256i *)(w + s * 64)), av;
#define NB_DOT2(r)                                                                                                     \
    av = _mm256_set1_epi32(load4(ab + r * lda + 4 * s));                                                               \
    d##r = _mm256_add_epi32(d##r, _mm256_madd_epi16(_mm256_maddubs_epi16(av, b), ones));
            NB_ROWS(NB_DOT2)
        }
        __m256 sb = _mm256_loadu_ps(p->scale + at + 8 * h);
#define NB_SCALE2(r)                                                                                                   \
    f##r = _mm256_fmadd_ps(_mm256_cvtepi32_ps(d##r), _mm256_mul_ps(_mm256_set1_ps(as[r * p->blocks + blk]), sb), f##r);
        NB_ROWS(NB_SCALE2)
    }
#define NB_STORE2(r) _mm256_storeu_ps(out + r * 2 * NB_TILE, f##r);
    NB_ROWS(NB_STORE2)
}

static NB_AVX2 void pair_avx2(const nb_int8 *p, int64_t t, const uint8_t *a, int64_t lda, const float *as,
                              float *out)
{
    for (int q = 0; q < 4; q++)
        half_avx2(p, t + q / 2, q % 2, a, lda, as, out + q * 8);
}
#endif

static xf_status int8_run(xf_dn_node *st, const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out,
                          xf_error *err)
{
#if NB_X86
    const nb_int8 *p = (const nb_int8 *)st->folded_w;
    int64_t m = xf_rt_numel(&in[0]) / p->k, lda = p->blocks * p->bs;
    const float *a = in[0].data, *bias = has_input(n, 5) ? in[5].data : NULL;
    float *y = out[0].data;
    /* A's codes and scales, in rows padded to a multiple of 4 (codes of 0, scales 0) */
    int64_t groups = (m + 3) / 4;
    uint8_t *qa = malloc((size_t)(groups * 4 * lda) + sizeof(float) * (size_t)(groups * 4 * p->blocks));
    if (!qa)
        return xf_error_set(err, XF_ERR_NOMEM, "out of memory in %s", xf_op_name(n->op));
    float *as = (float *)(qa + groups * 4 * lda);
    memset(qa + m * lda, 0x80, (size_t)((groups * 4 - m) * lda));
    memset(as + m * p->blocks, 0, sizeof *as * (size_t)((groups * 4 - m) * p->blocks));
    XF_OMP_FOR(m * p->k >= 4096)
    for (int64_t i = 0; i < m; i++)
        quantize_row(a + i * p->k, p->k, p->bs, p->blocks, 0x80, (int8_t *)qa + i * lda, as + i * p->blocks, NULL);
    bool vnni = int8_isa() == 2;
    int64_t pairs = p->tiles / 2;
    XF_OMP_FOR(pairs * groups > 1)
    for (int64_t j = 0; j < pairs * groups; j++) {
        int64_t t = j / groups * 2, i0 = j % groups * 4;
        int mr = m - i0 < 4 ? (int)(m - i0) : 4;
        float tmp[4 * 2 * NB_TILE];
        if (vnni)
            pair_vnni(p, t, qa + i0 * lda, lda, as + i0 * p->blocks, tmp);
        else
            pair_avx2(p, t, qa + i0 * lda, lda, as + i0 * p->blocks, tmp);
        int64_t c0 = t * NB_TILE, cols = p->n - c0 < 2 * NB_TILE ? p->n - c0 : 2 * NB_TILE;
        for (int r = 0; r < mr; r++)
            for (int64_t c = 0; c < cols; c++)
                y[(i0 + r) * p->n + c0 + c] = tmp[r * 2 * NB_TILE + c] + (bias ? bias[c0 + c] : 0.0f);
    }
    free(qa);
    return XF_OK;
#else
    return xf_error_set(err, XF_ERR_UNSUPPORTED, "no int8 MatMulNBits path on this machine");
#endif
}

/* ------------------------------------ a few rows at accuracy_level 4, VNNI */

/* The repacked weight of the VNNI token-step path, 4 or 8 bits.  Tile t
 * (16 columns), block b, group s (8 values of K at 4 bits, 4 at 8) is 64
 * bytes at ((t * blocks + b) * groups + s) * 64: at 4 bits, byte 4 c + i
 * holds column c's value 8 s + i of the block in its low nibble and value
 * 8 s + 4 + i in its high nibble; at 8 bits, column c's value 4 s + i.
 * zp and scale: per tile and block, the 16 columns' zero points (bytes)
 * and scales.  Past N and K everything is 0.  The tiles are even in
 * number: the kernel takes two. */
typedef struct nb_q4 {
    int64_t k, n, bs, blocks, tiles, bits;
    uint8_t *w, *zp;
    float *scale;
} nb_q4;

static bool q4_ok(const xf_graph *g, const xf_node *n, const xf_tensor_view *in, int64_t m)
{
    const xf_attn_attrs *t = &n->attrs.attn;
    return int8_isa() == 2 && t->nb_block % (t->nb_bits == 4 ? 8 : 4) == 0 && m >= 1 &&
           (m <= NB_PACKED_ROWS || t->nb_bits == 8) && !has_input(n, 4) && xf_nbits_quantizes_a(n, in) &&
           !(has_input(n, 3) && g->values[n->inputs[3]].dtype == XF_DT_FLOAT);
}

/* The nb_q4 of the node's weight, in one block (freed with free). */
static nb_q4 *q4_pack(const xf_node *n, const xf_tensor_view *in)
{
    nb_geom g;
    int64_t tiles;
    size_t wbytes;
    int64_t bits = n->attrs.attn.nb_bits;
    nb_q4 *p = tiled_alloc(n, in, sizeof(nb_q4), (size_t)bits / 4, 1 + sizeof(float), &g, &tiles, &wbytes);
    if (!p)
        return NULL;
    int64_t bs = g.bs, blocks = g.blocks, per = tiles * blocks * NB_TILE;
    *p = (nb_q4){g.k, g.n, bs, blocks, tiles, bits};
    p->w = (uint8_t *)p + (sizeof(nb_q4) + 63) / 64 * 64;
    p->scale = (float *)(p->w + wbytes);
    p->zp = (uint8_t *)(p->scale + per);
    /* the tiles' rows apart (each its 4 bytes of a group), over OpenMP's
     * threads */
    XF_OMP_FOR(p->n > NB_TILE)
    for (int64_t r = 0; r < p->n; r++)
        for (int64_t blk = 0; blk < blocks; blk++) {
            int64_t at = (r / NB_TILE * blocks + blk) * NB_TILE + r % NB_TILE, c = 0;
            int64_t len = g.k - blk * bs < bs ? g.k - blk * bs : bs;
            uint8_t *w = p->w + (r / NB_TILE * blocks + blk) * bs * NB_TILE * bits / 8 + r % NB_TILE * 4;
            if (bits == 8) {
                /* 4 codes of a column a group, as stored */
                const uint8_t *src = g.b + (r * blocks + blk) * bs;
                for (; c < len; c++)
                    w[c / 4 * 64 + c % 4] = src[c];
                p->zp[at] = (uint8_t)zero_point(&g, r, blk);
                p->scale[at] = g.scale[r * blocks + blk];
                continue;
            }
            const uint8_t *src = g.b + (r * blocks + blk) * g.blob;
            /* 8 values (4 bytes) at a time: values c + j and c + 4 + j
             * share byte j, in its low and high nibbles */
            for (; c + 8 <= len; c += 8) {
                const uint8_t *b = src + c / 2;
                uint8_t *o = w + c / 8 * 64;
                o[0] = (uint8_t)((b[0] & 15) | (b[2] & 15) << 4);
                o[1] = (uint8_t)((b[0] >> 4) | (b[2] & 0xf0));
                o[2] = (uint8_t)((b[1] & 15) | (b[3] & 15) << 4);
                o[3] = (uint8_t)((b[1] >> 4) | (b[3] & 0xf0));
            }
            for (; c < len; c++) {
                unsigned v = (src[c / 2] >> (c % 2 * 4)) & 15u;
                w[c / 8 * 64 + c % 4] |= (uint8_t)(v << (c % 8 / 4 * 4));
            }
            p->zp[at] = (uint8_t)zero_point(&g, r, blk);
            p->scale[at] = g.scale[r * blocks + blk];
        }
    return p;
}

#if NB_X86
/* R rows of A's codes (signed, stride lda; per block scale as and code sum
 * qsum) times tiles t and t + 1: out (R x 32) without the bias.  Inlined
 * for each R so that the sums stay in registers. */
static inline __attribute__((always_inline)) NB_VNNI void q4_pair(const nb_q4 *p, int64_t t, const int8_t *qa,
                                                                  int64_t lda, const float *as, const int32_t *qsum,
                                                                  const int R, float *out)
{
    const __m512i low = _mm512_set1_epi8(0x0f);
    const int64_t groups = p->bs * p->bits / 32, next = p->blocks * groups * 64; /* bytes from tile t to t + 1 */
    __m512 f[NB_PACKED_ROWS][2];
    for (int r = 0; r < R; r++)
        f[r][0] = f[r][1] = _mm512_setzero_ps();
    for (int64_t blk = 0; blk < p->blocks; blk++) {
        const uint8_t *w0 = p->w + (t * p->blocks + blk) * groups * 64, *w1 = w0 + next;
        __m512i lo[NB_PACKED_ROWS][2], hi[NB_PACKED_ROWS][2];
        for (int r = 0; r < R; r++)
            lo[r][0] = lo[r][1] = hi[r][0] = hi[r][1] = _mm512_setzero_si512();
        const int8_t *ab = qa + blk * p->bs;
        /* 8 bits: each group's codes as they are, 4 values of K */
        for (int64_t s = 0; p->bits == 8 && s < groups; s++) {
            __m512i v0 = _mm512_load_si512(w0 + s * 64), v1 = _mm512_load_si512(w1 + s * 64);
            for (int r = 0; r < R; r++) {
                __m512i a4 = _mm512_set1_epi32(load4((const uint8_t *)ab + r * lda + 4 * s));
                lo[r][0] = _mm512_dpbusd_epi32(lo[r][0], v0, a4);
                lo[r][1] = _mm512_dpbusd_epi32(lo[r][1], v1, a4);
            }
        }
        for (int64_t s = 0; p->bits == 4 && s < groups; s++) {
            __m512i v0 = _mm512_load_si512(w0 + s * 64), v1 = _mm512_load_si512(w1 + s * 64);
            __m512i l0 = _mm512_and_si512(v0, low), l1 = _mm512_and_si512(v1, low);
            __m512i h0 = _mm512_and_si512(_mm512_srli_epi16(v0, 4), low);
            __m512i h1 = _mm512_and_si512(_mm512_srli_epi16(v1, 4), low);
            for (int r = 0; r < R; r++) {
                __m512i al = _mm512_set1_epi32(load4((const uint8_t *)ab + r * lda + 8 * s));
                __m512i ah = _mm512_set1_epi32(load4((const uint8_t *)ab + r * lda + 8 * s + 4));
                lo[r][0] = _mm512_dpbusd_epi32(lo[r][0], l0, al);
                lo[r][1] = _mm512_dpbusd_epi32(lo[r][1], l1, al);
                hi[r][0] = _mm512_dpbusd_epi32(hi[r][0], h0, ah);
                hi[r][1] = _mm512_dpbusd_epi32(hi[r][1], h1, ah);
            }
        }
        int64_t at = (t * p->blocks + blk) * NB_TILE, at1 = at + p->blocks * NB_TILE;
        __m512i z0 = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(p->zp + at)));
        __m512i z1 = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(p->zp + at1)));
        __m512 s0 = _mm512_loadu_ps(p->scale + at), s1 = _mm512_loadu_ps(p->scale + at1);
        for (int r = 0; r < R; r++) {
            __m512i q = _mm512_set1_epi32(qsum[r * p->blocks + blk]);
            __m512 sa = _mm512_set1_ps(as[r * p->blocks + blk]);
            __m512i d0 = _mm512_sub_epi32(_mm512_add_epi32(lo[r][0], hi[r][0]), _mm512_mullo_epi32(z0, q));
            __m512i d1 = _mm512_sub_epi32(_mm512_add_epi32(lo[r][1], hi[r][1]), _mm512_mullo_epi32(z1, q));
            f[r][0] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(d0), _mm512_mul_ps(sa, s0), f[r][0]);
            f[r][1] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(d1), _mm512_mul_ps(sa, s1), f[r][1]);
        }
    }
    for (int r = 0; r < R; r++) {
        _mm512_storeu_ps(out + r * 2 * NB_TILE, f[r][0]);
        _mm512_storeu_ps(out + r * 2 * NB_TILE + NB_TILE, f[r][1]);
    }
}

static NB_VNNI void q4_pair_rows(const nb_q4 *p, int64_t t, const int8_t *qa, int64_t lda, const float *as,
                                 const int32_t *qsum, int m, float *out)
{
    if (m == 1)
        q4_pair(p, t, qa, lda, as, qsum, 1, out);
    else if (m == 2)
        q4_pair(p, t, qa, lda, as, qsum, 2, out);
    else
        q4_pair(p, t, qa, lda, as, qsum, 4, out);
}
#endif

static xf_status q4_run(xf_dn_node *st, const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out,
                        xf_error *err)
{
#if NB_X86
    const nb_q4 *p = (const nb_q4 *)st->folded_w;
    /* rows in groups of 4 (the last of 1, 2 or 4, padded with zero rows) */
    int64_t m = xf_rt_numel(&in[0]) / p->k, lda = p->blocks * p->bs, last = m % 4 == 3 ? 4 : m % 4;
    int64_t rows = m / 4 * 4 + last;
    const float *a = in[0].data, *bias = has_input(n, 5) ? in[5].data : NULL;
    float *y = out[0].data;
    /* A's codes, scales and code sums, rows past m zero */
    int8_t *qa = calloc((size_t)(rows * lda) + (sizeof(float) + sizeof(int32_t)) * (size_t)(rows * p->blocks), 1);
    if (!qa)
        return xf_error_set(err, XF_ERR_NOMEM, "out of memory in %s", xf_op_name(n->op));
    float *as = (float *)(qa + rows * lda);
    int32_t *qsum = (int32_t *)(as + rows * p->blocks);
    for (int64_t i = 0; i < m; i++)
        quantize_row(a + i * p->k, p->k, p->bs, p->blocks, 0, qa + i * lda, as + i * p->blocks, qsum + i * p->blocks);
    int64_t pairs = p->tiles / 2;
    XF_OMP_FOR(pairs > 1)
    for (int64_t j = 0; j < pairs; j++)
        for (int64_t g0 = 0; g0 < m; g0 += 4) {
            float tmp[NB_PACKED_ROWS * 2 * NB_TILE];
            int group = (int)(g0 + 4 <= m ? 4 : last);
            q4_pair_rows(p, 2 * j, qa + g0 * lda, lda, as + g0 * p->blocks, qsum + g0 * p->blocks, group, tmp);
            int64_t c0 = 2 * j * NB_TILE, cols = p->n - c0 < 2 * NB_TILE ? p->n - c0 : 2 * NB_TILE;
            for (int64_t r = g0; r < m && r < g0 + 4; r++)
                for (int64_t c = 0; c < cols; c++)
                    y[r * p->n + c0 + c] = tmp[(r - g0) * 2 * NB_TILE + c] + (bias ? bias[c0 + c] : 0.0f);
        }
    free(qa);
    return XF_OK;
#else
    return xf_error_set(err, XF_ERR_UNSUPPORTED, "no int8 MatMulNBits path on this machine");
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

/* the layouts of the weight that paths repack it into */
enum { NB_PACK_Q4 = 1, NB_PACK_INT8 };

/* The weight of node n repacked for the path `kind`: the context's,
 * packed by an earlier preparation of this node or another reading the
 * same bytes, else packed now and kept there; NULL when out of memory. */
static void *packed_weight(xf_dn_ctx *c, const xf_node *n, const xf_tensor_view *in, int kind)
{
    const void *zp = has_input(n, 3) ? in[3].data : NULL;
    for (int i = 0; i < c->n_packed; i++) {
        const xf_dn_packed *e = &c->packed[i];
        if (e->weight == in[1].data && e->scales == in[2].data && e->zero_points == zp && e->kind == kind)
            return e->buf;
    }
    if (c->n_packed == c->cap_packed) {
        int cap = c->cap_packed ? 2 * c->cap_packed : 16;
        xf_dn_packed *grown = realloc(c->packed, sizeof *grown * (size_t)cap);
        if (!grown)
            return NULL;
        c->packed = grown;
        c->cap_packed = cap;
    }
    void *buf = kind == NB_PACK_Q4 ? (void *)q4_pack(n, in) : (void *)int8_pack(n, in);
    if (buf)
        c->packed[c->n_packed++] = (xf_dn_packed){in[1].data, in[2].data, zp, kind, buf};
    return buf;
}

static xf_status nbits_prepare(xf_dn_ctx *c, const xf_graph *g, const xf_node *n, const xf_tensor_view *in,
                               const xf_tensor_view *out, xf_dn_node *st, xf_error *err)
{
    const xf_attn_attrs *t = &n->attrs.attn;
    if (!st->cached_w)
        free(st->folded_w); /* a node prepared again */
    st->folded_w = NULL;
    st->cached_w = false;
    bool q4 = q4_ok(g, n, in, xf_rt_numel(&in[0]) / t->nb_k);
    if (q4 || (!packed_ok(g, n, xf_rt_numel(&in[0]) / t->nb_k) && int8_ok(n, in))) {
        st->folded_w = packed_weight(c, n, in, q4 ? NB_PACK_Q4 : NB_PACK_INT8);
        if (!st->folded_w)
            return xf_error_set(err, XF_ERR_NOMEM, "out of memory in %s", xf_op_name(n->op));
        st->cached_w = true;
        st->own_run = q4 ? q4_run : int8_run;
        return XF_OK;
    }
    if (packed_ok(g, n, xf_rt_numel(&in[0]) / t->nb_k)) {
        st->own_run = packed_run;
        return XF_OK;
    }
    /* otherwise the weight is dequantized a tile at a time at each run;
     * a bad g_idx is refused here, before any run */
    float row[1];
    st->own_run = xf_dn_nbits_tiled_run;
    return t->nb_k > 0 && has_input(n, 4) ? xf_nbits_dequantize_rows(n, in, 0, 0, row, err) : XF_OK;
}

const xf_dn_handler xf_dn_nbits_handler = {nbits_handles, NULL, nbits_prepare, NULL};
