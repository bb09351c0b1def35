/* The cpu backend's 8-bit quantizing loops (DynamicQuantizeLinear,
 * QuantizeLinear and DequantizeLinear of one scale and zero point, and
 * DynamicQuantizeMatMul's A), with cpu_ref's arithmetic: each element
 * computed alone, by the same float operations in the same order, so the
 * AVX-512 and AVX2 loops and the plain C one give the same bytes.  And
 * the lookups of 8-bit codes in a table of 256 (the QDQ rewrites'). */
#include "cpu_dnnl.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define QL_X86 1
#else
#define QL_X86 0
#endif

enum { LANES = 16 }; /* the plain loops' blocks, which the compiler vectorizes */

/* x / scale rounded half to even, plus zp, saturated to uint8 (NaN to 0),
 * as xf_rt_quantize_round and xf_rt_store_f64 write it, but rounding by
 * adding and subtracting 1.5 x 2^23, which vectorizes: that rounds to the
 * nearest integer (ties to even, the current mode) as nearbyintf does
 * below 2^22, and leaves larger values beyond the saturation bounds, on
 * their side of 0. */
static inline uint8_t quantize_u8(float x, float scale, float zp)
{
    const float shift = 0x1.8p23f;
    float v = x / scale + shift - shift + zp;
    v = v > 0.0f ? v : 0.0f;
    v = v < 255.0f ? v : 255.0f;
    return (uint8_t)(int32_t)v;
}

/* The loops, each for the elements from `from` on (the vector loops
 * return where they stopped, the plain ones take the rest). */

static void range_plain(const float *x, int64_t from, int64_t count, float *lo_out, float *hi_out)
{
    float lo[LANES] = {0}, hi[LANES] = {0}, l = *lo_out, h = *hi_out;
    int64_t i = from;
    for (; i + LANES <= count; i += LANES)
        for (int j = 0; j < LANES; j++) {
            lo[j] = x[i + j] < lo[j] ? x[i + j] : lo[j];
            hi[j] = x[i + j] > hi[j] ? x[i + j] : hi[j];
        }
    for (int j = 0; j < LANES; j++) {
        l = lo[j] < l ? lo[j] : l;
        h = hi[j] > h ? hi[j] : h;
    }
    for (; i < count; i++) {
        l = x[i] < l ? x[i] : l;
        h = x[i] > h ? x[i] : h;
    }
    *lo_out = l;
    *hi_out = h;
}

static void quantize_plain(const float *restrict x, uint8_t *restrict y, int64_t from, int64_t count, float scale,
                           float zp)
{
    int64_t i = from;
    for (; i + LANES <= count; i += LANES)
        for (int j = 0; j < LANES; j++)
            y[i + j] = quantize_u8(x[i + j], scale, zp);
    for (; i < count; i++)
        y[i] = quantize_u8(x[i], scale, zp);
}

static void dequantize_plain(const uint8_t *restrict x, float *restrict y, int64_t from, int64_t count, uint8_t flip,
                             int32_t offset, float scale)
{
    int64_t i = from;
    for (; i + LANES <= count; i += LANES)
        for (int j = 0; j < LANES; j++)
            y[i + j] = (float)((int32_t)(x[i + j] ^ flip) - offset) * scale;
    for (; i < count; i++)
        y[i] = (float)((int32_t)(x[i] ^ flip) - offset) * scale;
}

#if QL_X86
/* min_ps(x, m) is x < m ? x : m and max_ps(x, m) x > m ? x : m, NaN
 * giving m, as in the plain loops; the clamps of quantize_u8 likewise
 * (max first: NaN to 0). */
#define QL_AVX512 __attribute__((target("avx512f")))
#define QL_AVX2 __attribute__((target("avx2")))

QL_AVX512 static int64_t range_avx512(const float *x, int64_t count, float *lo_out, float *hi_out)
{
    __m512 lo = _mm512_setzero_ps(), hi = _mm512_setzero_ps();
    int64_t i = 0;
    for (; i + 16 <= count; i += 16) {
        __m512 v = _mm512_loadu_ps(x + i);
        lo = _mm512_min_ps(v, lo);
        hi = _mm512_max_ps(v, hi);
    }
    *lo_out = _mm512_reduce_min_ps(lo);
    *hi_out = _mm512_reduce_max_ps(hi);
    return i;
}

QL_AVX512 static int64_t quantize_avx512(const float *x, uint8_t *y, int64_t count, float scale, float zp)
{
    const __m512 s = _mm512_set1_ps(scale), z = _mm512_set1_ps(zp), shift = _mm512_set1_ps(0x1.8p23f);
    const __m512 zero = _mm512_setzero_ps(), top = _mm512_set1_ps(255.0f);
    int64_t i = 0;
    for (; i + 16 <= count; i += 16) {
        __m512 v = _mm512_div_ps(_mm512_loadu_ps(x + i), s);
        v = _mm512_add_ps(_mm512_sub_ps(_mm512_add_ps(v, shift), shift), z);
        v = _mm512_min_ps(_mm512_max_ps(v, zero), top);
        _mm_storeu_si128((__m128i *)(y + i), _mm512_cvtepi32_epi8(_mm512_cvttps_epi32(v)));
    }
    return i;
}

QL_AVX512 static int64_t dequantize_avx512(const uint8_t *x, float *y, int64_t count, uint8_t flip, int32_t offset,
                                           float scale)
{
    const __m128i f = _mm_set1_epi8((char)flip);
    const __m512i off = _mm512_set1_epi32(offset);
    const __m512 s = _mm512_set1_ps(scale);
    int64_t i = 0;
    for (; i + 16 <= count; i += 16) {
        __m128i b = _mm_xor_si128(_mm_loadu_si128((const __m128i *)(x + i)), f);
        __m512i v = _mm512_sub_epi32(_mm512_cvtepu8_epi32(b), off);
        _mm512_storeu_ps(y + i, _mm512_mul_ps(_mm512_cvtepi32_ps(v), s));
    }
    return i;
}

QL_AVX2 static int64_t range_avx2(const float *x, int64_t count, float *lo_out, float *hi_out)
{
    __m256 lo = _mm256_setzero_ps(), hi = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 8 <= count; i += 8) {
        __m256 v = _mm256_loadu_ps(x + i);
        lo = _mm256_min_ps(v, lo);
        hi = _mm256_max_ps(v, hi);
    }
    float l[8], h[8];
    _mm256_storeu_ps(l, lo);
    _mm256_storeu_ps(h, hi);
    for (int j = 1; j < 8; j++) {
        l[0] = l[j] < l[0] ? l[j] : l[0];
        h[0] = h[j] > h[0] ? h[j] : h[0];
    }
    *lo_out = l[0];
    *hi_out = h[0];
    return i;
}

QL_AVX2 static int64_t quantize_avx2(const float *x, uint8_t *y, int64_t count, float scale, float zp)
{
    const __m256 s = _mm256_set1_ps(scale), z = _mm256_set1_ps(zp), shift = _mm256_set1_ps(0x1.8p23f);
    const __m256 zero = _mm256_setzero_ps(), top = _mm256_set1_ps(255.0f);
    int64_t i = 0;
    for (; i + 8 <= count; i += 8) {
        __m256 v = _mm256_div_ps(_mm256_loadu_ps(x + i), s);
        v = _mm256_add_ps(_mm256_sub_ps(_mm256_add_ps(v, shift), shift), z);
        __m256i q = _mm256_cvttps_epi32(_mm256_min_ps(_mm256_max_ps(v, zero), top));
        /* 0 to 255: the packs do not saturate */
        __m128i w = _mm_packus_epi32(_mm256_castsi256_si128(q), _mm256_extracti128_si256(q, 1));
        _mm_storel_epi64((__m128i *)(y + i), _mm_packus_epi16(w, w));
    }
    return i;
}

QL_AVX2 static int64_t dequantize_avx2(const uint8_t *x, float *y, int64_t count, uint8_t flip, int32_t offset,
                                       float scale)
{
    const __m128i f = _mm_set1_epi8((char)flip);
    const __m256i off = _mm256_set1_epi32(offset);
    const __m256 s = _mm256_set1_ps(scale);
    int64_t i = 0;
    for (; i + 8 <= count; i += 8) {
        __m128i b = _mm_xor_si128(_mm_loadl_epi64((const __m128i *)(x + i)), f);
        __m256i v = _mm256_sub_epi32(_mm256_cvtepu8_epi32(b), off);
        _mm256_storeu_ps(y + i, _mm256_mul_ps(_mm256_cvtepi32_ps(v), s));
    }
    return i;
}
#endif

int xf_dn_vector_width(void)
{
#if QL_X86
    dnnl_cpu_isa_t isa = dnnl_get_effective_cpu_isa();
    if (__builtin_cpu_supports("avx512f") && (isa & dnnl_cpu_isa_avx512_core & ~dnnl_cpu_isa_avx2) != 0)
        return 512;
    if (__builtin_cpu_supports("avx2") && (isa & dnnl_cpu_isa_avx2 & ~dnnl_cpu_isa_avx) != 0)
        return 256;
#endif
    return 0;
}

static void range_run(int width, const float *x, int64_t count, float *lo, float *hi)
{
    int64_t i = 0;
    *lo = *hi = 0.0f;
#if QL_X86
    if (width == 512)
        i = range_avx512(x, count, lo, hi);
    else if (width == 256)
        i = range_avx2(x, count, lo, hi);
#endif
    range_plain(x, i, count, lo, hi);
}

static void quantize_run(int width, const float *x, uint8_t *y, int64_t count, float scale, float zp)
{
    int64_t i = 0;
#if QL_X86
    if (width == 512)
        i = quantize_avx512(x, y, count, scale, zp);
    else if (width == 256)
        i = quantize_avx2(x, y, count, scale, zp);
#endif
    quantize_plain(x, y, i, count, scale, zp);
}

static void dequantize_run(int width, const uint8_t *x, float *y, int64_t count, uint8_t flip, int32_t offset,
                           float scale)
{
    int64_t i = 0;
#if QL_X86
    if (width == 512)
        i = dequantize_avx512(x, y, count, flip, offset, scale);
    else if (width == 256)
        i = dequantize_avx2(x, y, count, flip, offset, scale);
#endif
    dequantize_plain(x, y, i, count, flip, offset, scale);
}

void xf_dn_range_of(const float *x, int64_t count, float *lo_out, float *hi_out)
{
    float lo[XF_DN_CHUNKS], hi[XF_DN_CHUNKS], l = 0, h = 0;
    int64_t size, chunks = xf_dn_chunks(count, &size);
    int width = xf_dn_vector_width();
    XF_OMP_FOR(chunks > 1)
    for (int64_t c = 0; c < chunks; c++) {
        int64_t i = c * size;
        range_run(width, x + i, count - i < size ? count - i : size, &lo[c], &hi[c]);
    }
    for (int64_t c = 0; c < chunks; c++) {
        l = lo[c] < l ? lo[c] : l;
        h = hi[c] > h ? hi[c] : h;
    }
    *lo_out = l;
    *hi_out = h;
}

void xf_dn_quantize_all(const float *x, uint8_t *y, int64_t count, float scale, float zp)
{
    int64_t size, chunks = xf_dn_chunks(count, &size);
    int width = xf_dn_vector_width();
    XF_OMP_FOR(chunks > 1)
    for (int64_t c = 0; c < chunks; c++) {
        int64_t i = c * size;
        quantize_run(width, x + i, y + i, count - i < size ? count - i : size, scale, zp);
    }
}

void xf_dn_dequantize_all(const uint8_t *x, float *y, int64_t count, uint8_t flip, int32_t offset, float scale)
{
    int64_t size, chunks = xf_dn_chunks(count, &size);
    int width = xf_dn_vector_width();
    XF_OMP_FOR(chunks > 1)
    for (int64_t c = 0; c < chunks; c++) {
        int64_t i = c * size;
        dequantize_run(width, x + i, y + i, count - i < size ? count - i : size, flip, offset, scale);
    }
}

void xf_dn_dequantize_axis(const uint8_t *x, float *y, int64_t outer, int64_t dim, int64_t inner, uint8_t flip,
                           const int32_t *offset, const float *scale)
{
    int width = xf_dn_vector_width();
    XF_OMP_FOR(outer * dim > 1 && outer * dim * inner >= XF_DN_CHUNK_MIN)
    for (int64_t r = 0; r < outer * dim; r++)
        dequantize_run(width, x + r * inner, y + r * inner, inner, flip, offset[r % dim], scale[r % dim]);
}

/* ---------------------------------------------------------------- lookups of 8-bit codes */

static bool code_table_handles(const xf_graph *g, const xf_node *n)
{
    int x = xf_dn_input(n, 0);
    xf_dtype t = x >= 0 ? g->values[x].dtype : XF_DT_UNDEFINED;
    return n->op == XF_OP_CAST && n->attrs.to == XF_DT_INT32 && n->n_inputs == 1 && n->n_outputs == 1 &&
           n->outputs[0] >= 0 && g->values[n->outputs[0]].dtype == XF_DT_INT32 &&
           (t == XF_DT_UINT8 || t == XF_DT_INT8);
}

bool xf_dn_code_table_of(const xf_graph *g, const xf_node *n)
{
    int t = xf_dn_input(n, 0), i = xf_dn_input(n, 1), y = n->n_outputs == 1 ? n->outputs[0] : -1;
    const xf_tensor *table = t >= 0 ? g->values[t].init : NULL;
    return n->op == XF_OP_GATHER && n->attrs.axis == 0 && n->n_inputs == 2 && i >= 0 && y >= 0 && table &&
           table->shape.ndim == 1 && table->shape.dims[0] == 256 && xf_dtype_size(table->dtype) == 1 &&
           g->values[i].dtype == XF_DT_INT32 && g->values[y].dtype == table->dtype;
}

#if QL_X86
/* 64 codes at a time: the table's halves chosen by each code's top bit,
 * two permutes across 128 bytes. */
__attribute__((target("avx512f,avx512bw,avx512vbmi"))) static int64_t lookup_vbmi(const uint8_t *x, uint8_t *y,
                                                                                   int64_t count, const uint8_t *t)
{
    __m512i t0 = _mm512_loadu_si512(t), t1 = _mm512_loadu_si512(t + 64);
    __m512i t2 = _mm512_loadu_si512(t + 128), t3 = _mm512_loadu_si512(t + 192);
    int64_t i = 0;
    for (; i + 64 <= count; i += 64) {
        __m512i v = _mm512_loadu_si512(x + i);
        __m512i lo = _mm512_permutex2var_epi8(t0, v, t1), hi = _mm512_permutex2var_epi8(t2, v, t3);
        _mm512_storeu_si512(y + i, _mm512_mask_blend_epi8(_mm512_movepi8_mask(v), lo, hi));
    }
    return i;
}
#endif

/* y[i] = t[x[i]] for the codes' bytes (an int8 code's negative index
 * counts from the table's end, where its byte points). */
static void lookup_run(const uint8_t *x, uint8_t *y, int64_t count, const uint8_t *t)
{
    int64_t i = 0;
#if QL_X86
    if (xf_dn_vector_width() == 512 && __builtin_cpu_supports("avx512vbmi"))
        i = lookup_vbmi(x, y, count, t);
#endif
    for (; i < count; i++)
        y[i] = t[x[i]];
}

static xf_status code_table_run(xf_dn_node *st, const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out,
                                xf_error *err)
{
    (void)err;
    int64_t count = xf_rt_numel(&in[0]);
    const uint8_t *x = in[0].data;
    if (st->table) {
        int64_t size, chunks = xf_dn_chunks(count, &size);
        uint8_t *y = st->dst;
        XF_OMP_FOR(chunks > 1)
        for (int64_t c = 0; c < chunks; c++)
            lookup_run(x + c * size, y + c * size, count - c * size < size ? count - c * size : size, st->table);
        return XF_OK;
    }
    int32_t *y = out[0].data;
    if (in[0].dtype == XF_DT_INT8)
        for (int64_t i = 0; i < count; i++)
            y[i] = (int8_t)x[i];
    else
        for (int64_t i = 0; i < count; i++)
            y[i] = x[i];
    return XF_OK;
}

static xf_status code_table_prepare(xf_dn_ctx *c, const xf_graph *g, const xf_node *n, const xf_tensor_view *in,
                                    const xf_tensor_view *out, xf_dn_node *st, xf_error *err)
{
    (void)c, (void)g, (void)n, (void)in, (void)out, (void)err;
    st->own_run = code_table_run;
    return XF_OK;
}

const xf_dn_handler xf_dn_code_table_handler = {code_table_handles, NULL, code_table_prepare, NULL};
