/* BatchNormalization (inference) of plain NCHW tensors on the cpu backend:
 * oneDNN 2.6 has only a slow kernel for that layout (6 ns an element), so a
 * loop of this backend's own computes it, with cpu_ref's arithmetic
 * exactly: in double, ((x - mean) * (1 / sqrt(var + epsilon))) * scale +
 * B, rounded once to float (the vector loops do the same operations, in
 * the same order, never fused); a Relu folded into the node (x < 0 ? 0 :
 * x, as cpu_ref's, NaN and -0 kept) after it. */
#include "cpu_dnnl.h"

#include <math.h>
#include <stdlib.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define BN_X86 1
#else
#define BN_X86 0
#endif

/* One channel's parameters, as cpu_ref takes them. */
typedef struct bn_chan {
    double mean, inv, scale, shift;
    bool relu;
} bn_chan;

#if BN_X86
__attribute__((target("avx512f"))) static int64_t plane_avx512(const float *x, float *y, int64_t count,
                                                               const bn_chan *p)
{
    const __m512d mean = _mm512_set1_pd(p->mean), inv = _mm512_set1_pd(p->inv);
    const __m512d scale = _mm512_set1_pd(p->scale), shift = _mm512_set1_pd(p->shift);
    int64_t i = 0;
    for (; i + 8 <= count; i += 8) {
        __m512d v = _mm512_cvtps_pd(_mm256_loadu_ps(x + i));
        v = _mm512_add_pd(_mm512_mul_pd(_mm512_mul_pd(_mm512_sub_pd(v, mean), inv), scale), shift);
        __m256 f = _mm512_cvtpd_ps(v);
        if (p->relu)
            f = _mm256_blendv_ps(f, _mm256_setzero_ps(), _mm256_cmp_ps(f, _mm256_setzero_ps(), _CMP_LT_OQ));
        _mm256_storeu_ps(y + i, f);
    }
    return i;
}

__attribute__((target("avx2"))) static int64_t plane_avx2(const float *x, float *y, int64_t count, const bn_chan *p)
{
    const __m256d mean = _mm256_set1_pd(p->mean), inv = _mm256_set1_pd(p->inv);
    const __m256d scale = _mm256_set1_pd(p->scale), shift = _mm256_set1_pd(p->shift);
    int64_t i = 0;
    for (; i + 4 <= count; i += 4) {
        __m256d v = _mm256_cvtps_pd(_mm_loadu_ps(x + i));
        v = _mm256_add_pd(_mm256_mul_pd(_mm256_mul_pd(_mm256_sub_pd(v, mean), inv), scale), shift);
        __m128 f = _mm256_cvtpd_ps(v);
        if (p->relu)
            f = _mm_blendv_ps(f, _mm_setzero_ps(), _mm_cmplt_ps(f, _mm_setzero_ps()));
        _mm_storeu_ps(y + i, f);
    }
    return i;
}
#endif

static void plane(int width, const float *x, float *y, int64_t count, const bn_chan *p)
{
    int64_t i = 0;
#if BN_X86
    if (width == 512)
        i = plane_avx512(x, y, count, p);
    else if (width == 256)
        i = plane_avx2(x, y, count, p);
#endif
    for (; i < count; i++) {
        float v = (float)(((double)x[i] - p->mean) * p->inv * p->scale + p->shift);
        y[i] = p->relu && v < 0 ? 0.0f : v;
    }
}

static xf_status bnorm_run(xf_dn_node *st, const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out,
                           xf_error *err)
{
    int64_t batch = in[0].shape.dims[0], channels = in[0].shape.dims[1];
    int64_t inner = xf_rt_dims_product(&in[0].shape, 2, in[0].shape.ndim);
    bn_chan *p = malloc(sizeof *p * (size_t)(channels > 0 ? channels : 1));
    if (!p)
        return xf_error_set(err, XF_ERR_NOMEM, "out of memory");
    for (int64_t c = 0; c < channels; c++) {
        double var = ((const float *)in[4].data)[c];
        p[c] = (bn_chan){((const float *)in[3].data)[c], 1.0 / sqrt(var + (double)n->attrs.epsilon),
                         ((const float *)in[1].data)[c], ((const float *)in[2].data)[c], st->n_posts > 0};
    }
    int width = xf_dn_vector_width();
    const float *x = in[0].data;
    float *y = st->dst ? st->dst : out[0].data; /* a folded Relu's output */
    XF_OMP_FOR(batch * channels > 1 && batch * channels * inner >= 1 << 15)
    for (int64_t bc = 0; bc < batch * channels; bc++)
        plane(width, x + bc * inner, y + bc * inner, inner, &p[bc % channels]);
    free(p);
    return XF_OK;
}

bool xf_dn_bnorm_plain(xf_dn_ctx *c, const xf_node *n, xf_dn_node *st)
{
    bool relu = st->n_posts == 1 && !st->posts[0].sum && st->posts[0].alg == dnnl_eltwise_relu &&
                st->posts[0].alpha == 0.0f;
    if ((st->n_posts && !relu) || xf_dn_value_layout(c, n->inputs[0]) != XF_DN_PLAIN ||
        xf_dn_value_layout(c, n->outputs[0]) != XF_DN_PLAIN)
        return false;
    st->own_run = bnorm_run;
    return true;
}
