/* InstanceNormalization, GroupNormalization and MeanVarianceNormalization
 * of plain tensors on the cpu backend, on loops of its own.  oneDNN 2.6 has
 * no group normalization: its batch normalization computing its own
 * statistics over [1, N x G, C / G x spatial, 1] took 8.8 ms for an
 * InstanceNormalization of 64 x 256 x 256 values (its plain-layout kernel),
 * and GroupNormalization with parameters per channel (opset 21) ran on
 * cpu_ref (17.6 ms for 320 x 64 x 64 values in 32 groups), one thread, and
 * MeanVarianceNormalization ran on cpu_ref (11.3 ms for 64 x 128 x 128
 * values).  Here each image's group is a block of C / G x spatial
 * consecutive values (for MeanVarianceNormalization, the values its axes
 * reduce, where those are the trailing dims, and leading ones, such as the
 * batch of its default axes: then blocks apart): its mean and
 * variance (the mean squared deviation) are taken in double, in lanes, and
 * every value becomes scale * (x - mean) / sqrt(var + epsilon) + bias (MVN:
 * (x - mean) / (sqrt(var) + 1e-9)) in double, rounded once, as cpu_ref
 * computes it (its sums in another order); the blocks go over OpenMP's
 * threads. */
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

/* y = (x - mean) / sd over count values (MeanVarianceNormalization) */
GN_CLONES static void block_standardize(const float *restrict x, float *restrict y, int64_t count, double mean,
                                        double sd)
{
    for (int64_t i = 0; i < count; i++)
        y[i] = (float)(((double)x[i] - mean) / sd);
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

/* MeanVarianceNormalization's axes as x's trailing dims (blocks of *block
 * consecutive values) and leading dims (*lead such blocks to a group,
 * *mid * *block values apart), the kept dims between them (*mid groups),
 * dims of 1 anywhere: the default axes (0, 2, 3) of a batch of images.
 * False where the axes are not so, or name a dim twice or none. */
static bool mvn_geometry(const xf_node *n, const xf_shape *x, int64_t *lead, int64_t *mid, int64_t *block)
{
    bool reduced[XF_MAX_DIMS] = {false};
    for (int i = 0; i < n->attrs.n_axes; i++) {
        int ax = xf_rt_axis(n->attrs.axes[i], x->ndim);
        if (ax < 0 || reduced[ax])
            return false;
        reduced[ax] = true;
    }
    int d = x->ndim;
    for (*block = 1; d > 0 && (reduced[d - 1] || x->dims[d - 1] == 1); d--)
        *block *= x->dims[d - 1];
    for (*mid = 1; d > 0 && (!reduced[d - 1] || x->dims[d - 1] == 1); d--)
        *mid *= x->dims[d - 1];
    for (*lead = 1; d > 0 && (reduced[d - 1] || x->dims[d - 1] == 1); d--)
        *lead *= x->dims[d - 1];
    return d == 0 && n->attrs.n_axes > 0;
}

static xf_status mvn_run(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err)
{
    int64_t numel = xf_rt_numel(&in[0]), lead, mid, block;
    if (numel == 0 || !mvn_geometry(n, &in[0].shape, &lead, &mid, &block) || block == 0)
        return xf_ref_mvn(n, in, out, err);
    const float *x = in[0].data;
    float *y = out[0].data;
    double count = (double)(lead * block);
    XF_OMP_FOR(mid > 1 && numel >= XF_DN_CHUNK_MIN)
    for (int64_t k = 0; k < mid; k++) {
        double sum = 0.0, squares = 0.0;
        for (int64_t p = 0; p < lead; p++)
            sum += block_sum(x + (p * mid + k) * block, block, 0.0, false);
        double mean = sum / count;
        for (int64_t p = 0; p < lead; p++)
            squares += block_sum(x + (p * mid + k) * block, block, mean, true);
        double sd = sqrt(squares / count) + 1e-9;
        for (int64_t p = 0; p < lead; p++)
            block_standardize(x + (p * mid + k) * block, y + (p * mid + k) * block, block, mean, sd);
    }
    return XF_OK;
}

static bool mvn_handles(const xf_graph *g, const xf_node *n)
{
    int64_t lead, mid, block;
    return n->n_inputs == 1 && xf_dn_all_f32(g, n) &&
           mvn_geometry(n, &g->values[n->inputs[0]].shape, &lead, &mid, &block);
}

XF_DN_KERNEL_PREPARE(mvn_prepare, mvn_run)

const xf_dn_handler xf_dn_mvn_handler = {mvn_handles, NULL, mvn_prepare, NULL};
