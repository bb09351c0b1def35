/* GridSample of float maps with 2 spatial dims in bilinear mode (the
 * detectors' deformable attention, optical flow's warps), a loop of the
 * cpu backend's own.  cpu_ref follows ONNX's reference step by step, in
 * double, rounding to float after each 1-D interpolation; here each
 * image's points get their taps' offsets and weights (the reference's,
 * rounded to float alike) once, and every channel's map is sampled at
 * them in float, in a loop the compiler can turn into gathers.  Points
 * with all four taps inside X take it under every padding mode (none then
 * applies), and under zeros padding every point of finite coordinates
 * (a tap outside reads 0, as there); the others (non-finite coordinates,
 * border and reflection padding near the borders) are computed by
 * cpu_ref's kernel, as cpu_ref computes them.  RT-DETR samples 32-channel
 * maps of up to 80 x 80 at 1200 points per image, 18 times per run. */
#include "cpu_dnnl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static bool grid_sample_handles(const xf_graph *g, const xf_node *n)
{
    const xf_shape *x = n->n_inputs == 2 && n->inputs[0] >= 0 ? &g->values[n->inputs[0]].shape : NULL;
    return x && x->ndim == 4 && n->n_outputs == 1 && n->attrs.grid_mode == 0 && xf_dn_all_f32(g, n) &&
           x->dims[2] * x->dims[3] <= INT32_MAX;
}

/* The taps of an image's points: offsets in a map and weights (structure
 * of arrays, so that a channel's loop reads each as a vector). */
typedef struct gs_taps {
    int32_t *at[4]; /* row 0 column 0, row 0 column 1, row 1 column 0, row 1 column 1 */
    float *wy[2], *wx[2];
} gs_taps;

/* The taps along one dim of len for normalized coordinate v, as cpu_ref
 * makes them: indices i[0], i[1] (-1: outside X, which reads 0 under
 * zeros padding) and weights w[0], w[1].  False when cpu_ref's kernel
 * takes the point: a coordinate that is not finite, or outside the taps'
 * reach under the other paddings (which clamp or reflect it). */
static bool gs_axis(float v, int64_t len, bool corners, bool zeros, int64_t *i, float *w)
{
    double l = (double)len;
    float p = (float)(corners ? ((double)v + 1) / 2 * (l - 1) : (((double)v + 1) * l - 1) / 2);
    bool inside = p >= 0.0f && p < (float)(len - 1);
    if (!inside && !(zeros && isfinite(p)))
        return false;
    if (p <= -1.0f || p >= (float)len) { /* both taps outside */
        i[0] = i[1] = -1;
        w[0] = w[1] = 0;
        return true;
    }
    float f = floorf(p), t = p - f;
    int64_t x0 = (int64_t)f;
    i[0] = x0 >= 0 ? x0 : -1;
    i[1] = x0 + 1 <= len - 1 ? x0 + 1 : -1;
    w[0] = 1.0f - t;
    w[1] = t;
    return true;
}

/* The tap at offset a of map xm (-1: none, which reads +0): element 0 is
 * read for none and its bits cleared, without a branch, so that the
 * loop's loads become gathers. */
static inline float gs_read(const float *xm, int32_t a)
{
    int32_t none = a >> 31, bits; /* all ones for -1 */
    float v = xm[a & ~none];
    memcpy(&bits, &v, sizeof bits);
    bits &= ~none;
    memcpy(&v, &bits, sizeof v);
    return v;
}

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target_clones("avx2", "default")))
#endif
static void gs_channel(const float *restrict xm, float *restrict ym, const gs_taps *t, int64_t from, int64_t count)
{
    const int32_t *a0 = t->at[0] + from, *a1 = t->at[1] + from, *a2 = t->at[2] + from, *a3 = t->at[3] + from;
    const float *wy0 = t->wy[0] + from, *wy1 = t->wy[1] + from, *wx0 = t->wx[0] + from, *wx1 = t->wx[1] + from;
    for (int64_t o = 0; o < count; o++) {
        float r0 = wx0[o] * gs_read(xm, a0[o]) + wx1[o] * gs_read(xm, a1[o]);
        float r1 = wx0[o] * gs_read(xm, a2[o]) + wx1[o] * gs_read(xm, a3[o]);
        ym[o] = wy0[o] * r0 + wy1[o] * r1;
    }
}

/* Points o of image b that the loop does not take (outside[o]), through
 * cpu_ref's kernel on a grid of just them, scattered into y. */
static xf_status gs_others(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, int64_t b,
                           const unsigned char *outside, int64_t points, xf_error *err)
{
    const xf_shape *xs = &in[0].shape;
    int64_t channels = xs->dims[1], map = xs->dims[2] * xs->dims[3], count = 0;
    for (int64_t o = 0; o < points; o++)
        count += outside[o];
    if (!count)
        return XF_OK;
    float *grid = malloc(sizeof *grid * (size_t)count * 2), *y = malloc(sizeof *y * (size_t)(count * channels));
    int64_t *which = malloc(sizeof *which * (size_t)count);
    xf_status st = grid && y && which ? XF_OK : xf_error_set(err, XF_ERR_NOMEM, "out of memory in GridSample");
    const float *g = (const float *)in[1].data + b * points * 2;
    for (int64_t o = 0, k = 0; st == XF_OK && o < points; o++)
        if (outside[o]) {
            grid[2 * k] = g[2 * o];
            grid[2 * k + 1] = g[2 * o + 1];
            which[k++] = o;
        }
    xf_tensor_view sin[2] = {{XF_DT_FLOAT, {4, {1, channels, xs->dims[2], xs->dims[3]}},
                              (float *)in[0].data + b * channels * map},
                             {XF_DT_FLOAT, {4, {1, count, 1, 2}}, grid}};
    xf_tensor_view sout = {XF_DT_FLOAT, {4, {1, channels, count, 1}}, y};
    if (st == XF_OK)
        st = xf_ref_grid_sample(n, sin, &sout, err);
    float *yb = (float *)out[0].data + b * channels * points;
    for (int64_t c = 0; st == XF_OK && c < channels; c++)
        for (int64_t k = 0; k < count; k++)
            yb[c * points + which[k]] = y[c * count + k];
    free(grid);
    free(y);
    free(which);
    return st;
}

static xf_status grid_sample_run(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err)
{
    const xf_shape *xs = &in[0].shape, *gs = &in[1].shape;
    int64_t batch = xs->dims[0], channels = xs->dims[1], h = xs->dims[2], w = xs->dims[3];
    int64_t points = gs->ndim == 4 ? gs->dims[1] * gs->dims[2] : 0, all = batch * points;
    if (gs->ndim != 4 || gs->dims[0] != batch || gs->dims[3] != 2 || !xf_shape_equal(&out[0].shape,
        &(xf_shape){4, {batch, channels, gs->dims[1], gs->dims[2]}}) || all == 0 || channels == 0 || h * w == 0)
        return xf_ref_grid_sample(n, in, out, err); /* which names what does not fit, or writes nothing */
    gs_taps t;
    unsigned char *outside = malloc((size_t)all);
    void *block = malloc((sizeof(int32_t) * 4 + sizeof(float) * 4) * (size_t)all);
    if (!outside || !block) {
        free(outside);
        free(block);
        return xf_error_set(err, XF_ERR_NOMEM, "out of memory in GridSample");
    }
    for (int k = 0; k < 4; k++)
        t.at[k] = (int32_t *)block + k * all;
    for (int k = 0; k < 2; k++) {
        t.wy[k] = (float *)((int32_t *)block + 4 * all) + k * all;
        t.wx[k] = (float *)((int32_t *)block + 4 * all) + (2 + k) * all;
    }
    const float *grid = in[1].data;
    bool corners = n->attrs.grid_align_corners;
    bool zeros = n->attrs.grid_padding == 0;
    XF_OMP_FOR(all >= 4096)
    for (int64_t p = 0; p < all; p++) {
        int64_t ix[2] = {-1, -1}, iy[2] = {-1, -1};
        float wx[2] = {0, 0}, wy[2] = {0, 0};
        bool made = gs_axis(grid[2 * p], w, corners, zeros, ix, wx) &&
                    gs_axis(grid[2 * p + 1], h, corners, zeros, iy, wy);
        outside[p] = !made; /* its taps read nothing; cpu_ref's kernel writes it */
        for (int k = 0; k < 4; k++) {
            int64_t r = made ? iy[k / 2] : -1, c = made ? ix[k % 2] : -1;
            t.at[k][p] = r < 0 || c < 0 ? -1 : (int32_t)(r * w + c);
        }
        for (int k = 0; k < 2; k++) {
            t.wy[k][p] = made ? wy[k] : 0;
            t.wx[k][p] = made ? wx[k] : 0;
        }
    }
    const float *x = in[0].data;
    float *y = out[0].data;
    XF_OMP_FOR(batch * channels > 1 && all * channels >= 16384)
    for (int64_t bc = 0; bc < batch * channels; bc++) {
        int64_t b = bc / channels;
        gs_channel(x + bc * h * w, y + bc * points, &t, b * points, points);
    }
    int failed = 0;
    xf_error first = {0};
    XF_OMP_FOR(batch > 1)
    for (int64_t b = 0; b < batch; b++) {
        xf_error e = {0};
        if (gs_others(n, in, out, b, outside + b * points, points, &e) != XF_OK) {
            XF_DN_PRAGMA(omp critical(xf_gs_error))
            if (!failed++)
                first = e;
        }
    }
    free(outside);
    free(block);
    if (failed && err)
        *err = first;
    return failed ? first.status : XF_OK;
}

static xf_status grid_sample_prepare(xf_dn_ctx *c, const xf_graph *g, const xf_node *n, const xf_tensor_view *in,
                                     const xf_tensor_view *out, xf_dn_node *st, xf_error *err)
{
    (void)c, (void)g, (void)in, (void)out, (void)err;
    st->kernel = grid_sample_run;
    return XF_OK;
}

const xf_dn_handler xf_dn_grid_sample_handler = {grid_sample_handles, NULL, grid_sample_prepare, NULL};
