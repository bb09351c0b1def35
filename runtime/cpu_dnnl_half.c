/* The cpu backend's Casts between 16-bit floats and float: those that
 * begin and end the float runs of float16 and bfloat16 models
 * (half_runs.c), and any others a model holds. */
#include "cpu_dnnl.h"

/* Casts between 16-bit floats and float as loops of the backend's own
 * (cpu_ref converts an element at a time; oneDNN 2.6 reorders float16
 * only on CPUs with AVX512-FP16): the same values, rounding to nearest
 * even, with F16C's conversions where the CPU has them.  Plain operands
 * only. */
static bool half_cast_handles(const xf_graph *g, const xf_node *n)
{
    if (n->op != XF_OP_CAST || n->n_inputs != 1 || n->n_outputs != 1 || n->inputs[0] < 0 || n->outputs[0] < 0)
        return false;
    const xf_value *x = &g->values[n->inputs[0]], *y = &g->values[n->outputs[0]];
    return x->kind == XF_VK_TENSOR && y->kind == XF_VK_TENSOR &&
           ((xf_dtype_is_half(x->dtype) && y->dtype == XF_DT_FLOAT) ||
            (x->dtype == XF_DT_FLOAT && xf_dtype_is_half(y->dtype)));
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define HALF_X86 1
__attribute__((target("avx,f16c"))) static int64_t f16_to_f32_f16c(const uint16_t *h, float *o, int64_t count)
{
    int64_t i = 0;
    for (; i + 8 <= count; i += 8)
        _mm256_storeu_ps(o + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(h + i))));
    return i;
}

__attribute__((target("avx,f16c"))) static int64_t f32_to_f16_f16c(const float *f, uint16_t *o, int64_t count)
{
    int64_t i = 0;
    for (; i + 8 <= count; i += 8)
        _mm_storeu_si128((__m128i *)(o + i),
                         _mm256_cvtps_ph(_mm256_loadu_ps(f + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    return i;
}

/* bfloat16 is float's upper half: widening shifts it up */
__attribute__((target("avx2"))) static int64_t bf16_to_f32_avx2(const uint16_t *h, float *o, int64_t count)
{
    int64_t i = 0;
    for (; i + 8 <= count; i += 8) {
        __m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)(h + i)));
        _mm256_storeu_si256((__m256i *)(o + i), _mm256_slli_epi32(w, 16));
    }
    return i;
}

/* rounding to nearest even as xf_f32_to_bf16 does: x + 0x7fff + bit 16 of
 * x, upper half; a NaN keeps its upper half, made quiet (| 0x40) */
__attribute__((target("avx2"))) static int64_t f32_to_bf16_avx2(const float *f, uint16_t *o, int64_t count)
{
    const __m256i abs = _mm256_set1_epi32(0x7fffffff), inf = _mm256_set1_epi32(0x7f800000);
    const __m256i half = _mm256_set1_epi32(0x7fff), one = _mm256_set1_epi32(1), quiet = _mm256_set1_epi32(0x40);
    int64_t i = 0;
    for (; i + 8 <= count; i += 8) {
        __m256i x = _mm256_loadu_si256((const __m256i *)(f + i));
        __m256i up = _mm256_srli_epi32(x, 16);
        __m256i r = _mm256_srli_epi32(_mm256_add_epi32(x, _mm256_add_epi32(half, _mm256_and_si256(up, one))), 16);
        __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(x, abs), inf);
        r = _mm256_blendv_epi8(r, _mm256_or_si256(up, quiet), nan);
        /* 8 values under 2^16 to 8 halves: pack within lanes, then join */
        __m256i p = _mm256_permute4x64_epi64(_mm256_packus_epi32(r, r), 0x08);
        _mm_storeu_si128((__m128i *)(o + i), _mm256_castsi256_si128(p));
    }
    return i;
}
#else
#define HALF_X86 0
#endif

/* count elements of a chunk; the rest after F16C's, one at a time */
static void half_cast_of(xf_dtype from, xf_dtype to, const void *x, void *y, int64_t count)
{
    int64_t i = 0;
    if (from == XF_DT_FLOAT16) {
        const uint16_t *h = x;
        float *o = y;
#if HALF_X86
        if (__builtin_cpu_supports("avx2")) /* every CPU with AVX2 has F16C */
            i = f16_to_f32_f16c(h, o, count);
#endif
        for (; i < count; i++)
            o[i] = xf_f16_to_f32(h[i]);
    } else if (from == XF_DT_BFLOAT16) {
        const uint16_t *h = x;
        float *o = y;
#if HALF_X86
        if (__builtin_cpu_supports("avx2"))
            i = bf16_to_f32_avx2(h, o, count);
#endif
        for (; i < count; i++)
            o[i] = xf_bf16_to_f32(h[i]);
    } else if (to == XF_DT_FLOAT16) {
        const float *f = x;
        uint16_t *o = y;
#if HALF_X86
        if (__builtin_cpu_supports("avx2")) /* every CPU with AVX2 has F16C */
            i = f32_to_f16_f16c(f, o, count);
#endif
        for (; i < count; i++)
            o[i] = xf_f32_to_f16(f[i]);
    } else {
        const float *f = x;
        uint16_t *o = y;
#if HALF_X86
        if (__builtin_cpu_supports("avx2"))
            i = f32_to_bf16_avx2(f, o, count);
#endif
        for (; i < count; i++)
            o[i] = xf_f32_to_bf16(f[i]);
    }
}

static xf_status half_cast_run(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err)
{
    (void)n;
    (void)err;
    size_t xs = xf_dtype_size(in[0].dtype), ys = xf_dtype_size(out[0].dtype);
    int64_t count = xf_rt_numel(&out[0]), size, chunks = xf_dn_chunks(count, &size);
    XF_OMP_FOR(chunks > 1)
    for (int64_t c = 0; c < chunks; c++) {
        int64_t i = c * size;
        half_cast_of(in[0].dtype, out[0].dtype, (const char *)in[0].data + (size_t)i * xs,
                     (char *)out[0].data + (size_t)i * ys, count - i < size ? count - i : size);
    }
    return XF_OK;
}

XF_DN_KERNEL_PREPARE(half_cast_prepare, half_cast_run)

const xf_dn_handler xf_dn_half_cast_handler = {half_cast_handles, NULL, half_cast_prepare, NULL};
