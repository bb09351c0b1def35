/* InstanceNormalization and GroupNormalization of plain tensors on the cpu
 * backend, on loops of its own.  oneDNN 2.6 has no group normalization:
 * its batch normalization computing its own statistics over [1, N x G,
 * C / G x spatial, 1] took 8.8 ms for an InstanceNormalization of 64 x 256
 * x 256 values (its plain-layout kernel), and GroupNormalization with
 * parameters per channel (opset 21) ran on cpu_ref (17.6 ms for 320 x 64
 * x 64 values in 32 groups), one thread.  Here each image's group is a
 * block of C / G x spatial consecutive values: its mean and variance (the
 * mean squared deviation) are taken in double, in lanes, and every value
 * becomes scale * (x - mean) / sqrt(var + epsilon) + bias in double,
 * rounded once, as cpu_ref computes it (its sums in another order); the
 * blocks go over OpenMP's threads. */
#include "cpu_dnnl.h"

#include <math.h>

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define GN_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define GN_CLONES
#endif

enum { GN_LANES = 8 };

/* The sum of the count values at x, or (squares) of their squared
 * distances from m, in GN_LANES lanes of double. */
GN_CLONES static double block_sum(const float *restrict x, int64_t count, double m, bool squares)
{
    double a[GN_LANES] = {0};
    int64_t i = 0;
    if (squares)
        for (; i + GN_LANES <= count; i += GN_LANES)
            for (int l = 0; l < GN_LANES; l++) {
                double d = (double)x[i + l] - m;
                a[l] += d * d;
            }
    else
        for (; i + GN_LANES <= count; i += GN_LANES)
            for (int l = 0; l < GN_LANES; l++)
                a[l] += (double)x[i + l];
    double s = 0.0;
    for (int l = 0; l < GN_LANES; l++)
        s += a[l];
    for (; i < count; i++) {
        double d = squares ? (double)x[i] - m : (double)x[i];
        s += squares ? d * d : d;
    }
    return s;
}

/* y = scale * (x - mean) / sd + bias over count values, as cpu_ref's
 * expression */
GN_CLONES static void block_apply(const float *restrict x, float *restrict y, int64_t count, double mean, double sd,
                                  double scale, double bias)
{
    for (int64_t i = 0; i < count; i++)
        y[i] = (float)(scale * ((double)x[i] - mean) / sd + bias);
}

static xf_status group_norm_run(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err)
{
    const xf_shape *xs = &in[0].shape;
    int64_t numel = xf_rt_numel(&in[0]), chans = xs->dims[1], inner = xf_rt_dims_product(xs, 2, xs->ndim);
    int64_t groups = n->op == XF_OP_GROUP_NORM ? n->attrs.group : chans, n_par = xf_rt_numel(&in[1]);
    /* what cpu_ref refuses, it runs (and says why) */
    if (numel == 0 || groups < 1 || chans % groups != 0 || (n_par != chans && n_par != groups) ||
        xf_rt_numel(&in[2]) != n_par)
        return xf_ref_group_norm(n, in, out, err);
    const float *x = in[0].data, *scale = in[1].data, *bias = in[2].data;
    float *y = out[0].data;
    int64_t per = chans / groups, block = per * inner, blocks = numel / block;
    double epsilon = (double)n->attrs.epsilon;
    XF_OMP_FOR(blocks > 1 && numel >= XF_DN_CHUNK_MIN)
    for (int64_t k = 0; k < blocks; k++) {
        const float *xb = x + k * block;
        float *yb = y + k * block;
        int64_t g = k % groups;
        double mean = block_sum(xb, block, 0.0, false) / (double)block;
        double sd = sqrt(block_sum(xb, block, mean, true) / (double)block + epsilon);
        for (int64_t c = 0; c < per; c++) {
            int64_t p = n_par == chans ? g * per + c : g;
            block_apply(xb + c * inner, yb + c * inner, inner, mean, sd, scale[p], bias[p]);
        }
    }
    return XF_OK;
}

static bool group_norm_handles(const xf_graph *g, const xf_node *n)
{
    return n->n_inputs == 3 && xf_dn_all_f32(g, n) && g->values[n->inputs[0]].shape.ndim >= 2;
}

XF_DN_KERNEL_PREPARE(group_norm_prepare, group_norm_run)

const xf_dn_handler xf_dn_group_norm_handler = {group_norm_handles, NULL, group_norm_prepare, NULL};
