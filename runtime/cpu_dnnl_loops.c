/* The cpu backend's own elementwise loops, where oneDNN 2.6 has no fast
 * kernel: x^2 and x^3 (its pow takes exp and log) and HardSigmoid (it has
 * no such alg and runs a linear one with a clip post-op in its reference
 * kernel only).  Each computes as cpu_ref does, in blocks the compiler
 * vectorizes and in chunks over OpenMP's threads. */
#include "cpu_dnnl.h"

/* x^2 and x^3 (oneDNN's pow takes exp and log: 10 ns an element): x x
 * (x) in double, where x x is exact, rounded once to float as cpu_ref's
 * pow is; in blocks of 16 elements, which the compiler vectorizes, and in
 * chunks over the threads. */
enum { POW_LANES = 16 };

static inline float pow_square(float x) { return (float)((double)x * x); }
static inline float pow_cube(float x) { return (float)((double)x * x * x); }

static void pow_small_of(const float *restrict x, float *restrict y, int64_t count, bool cube)
{
    int64_t i = 0;
    if (cube)
        for (; i + POW_LANES <= count; i += POW_LANES)
            for (int l = 0; l < POW_LANES; l++)
                y[i + l] = pow_cube(x[i + l]);
    else
        for (; i + POW_LANES <= count; i += POW_LANES)
            for (int l = 0; l < POW_LANES; l++)
                y[i + l] = pow_square(x[i + l]);
    for (; i < count; i++)
        y[i] = cube ? pow_cube(x[i]) : pow_square(x[i]);
}

xf_status xf_dn_pow_small_run(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err)
{
    (void)err;
    (void)n;
    const float *x = in[0].data;
    float *y = out[0].data;
    bool cube = ((const float *)in[1].data)[0] == 3.0f;
    int64_t count = xf_rt_numel(&out[0]), size, chunks = xf_dn_chunks(count, &size);
    XF_OMP_FOR(chunks > 1)
    for (int64_t c = 0; c < chunks; c++) {
        int64_t i = c * size;
        pow_small_of(x + i, y + i, count - i < size ? count - i : size, cube);
    }
    return XF_OK;
}

/* HardSigmoid, max(0, min(1, alpha x + beta)) in double as cpu_ref
 * computes it, rounded once: in blocks of 16 elements, which the compiler
 * vectorizes, and chunks over the threads; the layout does not matter
 * (input and output are stored alike, with no padding). */
enum { HS_LANES = 16 };

static inline float hard_sigmoid(float x, double alpha, double beta)
{
    double v = alpha * x + beta;
    v = v > 0.0 ? v : 0.0;
    return (float)(v < 1.0 ? v : 1.0);
}

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target_clones("avx2", "default")))
#endif
static void hard_sigmoid_of(const float *restrict x, float *restrict y, int64_t count, double alpha, double beta)
{
    int64_t i = 0;
    for (; i + HS_LANES <= count; i += HS_LANES)
        for (int l = 0; l < HS_LANES; l++)
            y[i + l] = hard_sigmoid(x[i + l], alpha, beta);
    for (; i < count; i++)
        y[i] = hard_sigmoid(x[i], alpha, beta);
}

xf_status xf_dn_hard_sigmoid_run(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out,
                                  xf_error *err)
{
    (void)err;
    const float *x = in[0].data;
    float *y = out[0].data;
    int64_t count = xf_rt_numel(&out[0]), size, chunks = xf_dn_chunks(count, &size);
    XF_OMP_FOR(chunks > 1)
    for (int64_t c = 0; c < chunks; c++) {
        int64_t i = c * size;
        hard_sigmoid_of(x + i, y + i, count - i < size ? count - i : size, n->attrs.alpha, n->attrs.beta);
    }
    return XF_OK;
}
