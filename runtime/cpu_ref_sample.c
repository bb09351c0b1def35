/* cpu_ref sampling ops: GridSample.
 *
 * GridSample follows ONNX's reference implementation: each grid point's
 * coordinates are denormalized (align_corners or not), rounded to the
 * nearest integer, ties to even, in nearest mode, and brought inside the
 * borders by padding_mode (border clamps them to the extent, reflection
 * reflects them at the borders until they are inside); then every tap of
 * the interpolation (1 in nearest mode, 2 per dim in linear, 4 per dim in
 * cubic, Keys' with A = -0.75) that falls outside X reads 0 (zeros), the
 * edge (border) or its reflection (reflection).  Interpolation goes dim by
 * dim, the last dim first, as the reference's recursion does.
 *
 * On float tensors the reference rounds the coordinates, the weights and
 * every 1-D interpolation to float; so does this kernel (it computes each
 * of them in double); on double tensors nothing rounds; 16-bit floats are
 * widened to float (cpu_ref.c).  A grid point whose coordinates are not
 * finite after padding (NaN, or infinite with zeros or reflection padding)
 * gives NaN. */
#include "xf_rt_internal.h"

#include <math.h>

enum { GS_LINEAR, GS_NEAREST, GS_CUBIC };
enum { GS_ZEROS, GS_BORDER, GS_REFLECTION };

/* The taps of one grid point along each spatial dim: the input indices
 * read (-1: outside X with zeros padding, which reads 0) and their weights. */
typedef struct gs_point {
    int64_t idx[XF_MAX_DIMS][4];
    double w[XF_MAX_DIMS][4];
    bool nan;
} gs_point;

/* What every grid point of a node shares. */
typedef struct gs_geometry {
    int rank;                      /* spatial dims */
    int taps;                      /* per dim: 1, 2 or 4 */
    int padding;
    bool single;                   /* round to float as the reference does */
    int64_t len[XF_MAX_DIMS];      /* X's spatial extents */
    int64_t stride[XF_MAX_DIMS];   /* their strides in X */
    double lo[XF_MAX_DIMS], hi[XF_MAX_DIMS]; /* the borders reflection reflects at */
} gs_geometry;

static double rnd(bool single, double v) { return single ? (double)(float)v : v; }

/* x reflected at lo and hi until it lies between them; a single point
 * (lo == hi: one pixel, align_corners) takes everything. */
static double gs_reflect(double x, double lo, double hi)
{
    double range = hi - lo;
    if (!(x < lo || x > hi))
        return x;
    if (!(range > 0))
        return lo;
    double dx = x < lo ? lo - x : x - hi, n = floor(dx / range), r = dx - n * range;
    r = r < 0 ? 0 : r > range ? range : r;
    bool even = fmod(n, 2) == 0;
    return (x < lo) == even ? lo + r : hi - r;
}

/* The input index tap position p reads along dim d: -1 for none (zeros
 * padding outside X). */
static int64_t gs_tap(const gs_geometry *g, int d, double p)
{
    double last = (double)(g->len[d] - 1);
    if (g->padding == GS_ZEROS)
        return p >= 0 && p <= last ? (int64_t)p : -1;
    if (g->padding == GS_BORDER)
        return p < 0 ? 0 : p > last ? (int64_t)last : (int64_t)p;
    double q = gs_reflect(p, g->lo[d], g->hi[d]);
    int64_t i = (int64_t)q; /* truncated, as the reference's int() */
    return i < 0 ? 0 : i > g->len[d] - 1 ? g->len[d] - 1 : i;
}

/* Keys' cubic convolution weights (A = -0.75) of the 4 taps around a point
 * t past the second. */
static void gs_cubic_weights(double t, double *w)
{
    const double A = -0.75;
    double u = 1 - t;
    w[0] = ((A * (t + 1) - 5 * A) * (t + 1) + 8 * A) * (t + 1) - 4 * A;
    w[1] = ((A + 2) * t - (A + 3)) * t * t + 1;
    w[2] = ((A + 2) * u - (A + 3)) * u * u + 1;
    w[3] = ((A * (2 - t) - 5 * A) * (2 - t) + 8 * A) * (2 - t) - 4 * A;
}

/* The taps of the grid point whose normalized coordinates (x first, as
 * grid holds them) start at element at of grid. */
static void gs_point_make(const gs_geometry *g, const xf_node *n, const xf_tensor_view *grid, int64_t at,
                          gs_point *p)
{
    const xf_attrs *a = &n->attrs;
    p->nan = false;
    for (int d = 0; d < g->rank; d++) {
        double v = xf_rt_load_f64(grid->dtype, grid->data, at + g->rank - 1 - d), len = (double)g->len[d];
        double x = rnd(g->single, a->grid_align_corners ? (v + 1) / 2 * (len - 1) : ((v + 1) * len - 1) / 2);
        if (a->grid_mode == GS_NEAREST)
            x = rint(x);
        if (x < g->lo[d] || x > g->hi[d]) {
            if (g->padding == GS_BORDER)
                x = x < 0 ? 0 : x > len - 1 ? len - 1 : x;
            else if (g->padding == GS_REFLECTION)
                x = rnd(g->single, gs_reflect(x, g->lo[d], g->hi[d]));
        }
        if (!isfinite(x)) {
            p->nan = true;
            return;
        }
        if (a->grid_mode == GS_NEAREST) {
            p->idx[d][0] = gs_tap(g, d, trunc(x));
            p->w[d][0] = 1;
            continue;
        }
        double x0 = floor(x), t = x - x0, w[4];
        if (a->grid_mode == GS_CUBIC) {
            gs_cubic_weights(t, w);
        } else {
            w[0] = 1 - t;
            w[1] = t;
        }
        double first = g->taps == 4 ? x0 - 1 : x0;
        for (int k = 0; k < g->taps; k++) {
            p->idx[d][k] = gs_tap(g, d, first + k);
            p->w[d][k] = rnd(g->single, w[k]);
        }
    }
}

/* The value at point p of the map of X at element off, from dim d on:
 * the weighted taps along d of the values along the dims after it. */
static double gs_interpolate(const gs_geometry *g, const gs_point *p, const xf_tensor_view *x, int d, int64_t off)
{
    double v = 0;
    for (int k = 0; k < g->taps; k++) {
        int64_t i = p->idx[d][k];
        if (i < 0)
            continue;
        int64_t at = off + i * g->stride[d];
        v += p->w[d][k] * (d + 1 == g->rank ? xf_rt_load_f64(x->dtype, x->data, at)
                                            : gs_interpolate(g, p, x, d + 1, at));
    }
    return rnd(g->single, v);
}

/* GridSample: Y[b, c, o...] is X[b, c] sampled at grid[b, o...]. */
xf_status xf_ref_grid_sample(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err)
{
    const xf_attrs *a = &n->attrs;
    const xf_tensor_view *x = &in[0], *grid = &in[1], *y = &out[0];
    const xf_shape *xs = &x->shape, *gs = &grid->shape;
    int rank = xs->ndim - 2;
    if (rank < 1 || gs->ndim != xs->ndim || gs->dims[0] != xs->dims[0] || gs->dims[gs->ndim - 1] != rank ||
        y->shape.ndim != xs->ndim || y->shape.dims[0] != xs->dims[0] || y->shape.dims[1] != xs->dims[1])
        return xf_rt_bad_node(err, n, "operands are not X [N, C, D1, ...], grid [N, D1_out, ..., %d] and Y "
                                      "[N, C, D1_out, ...]", rank);
    for (int d = 0; d < rank; d++)
        if (y->shape.dims[2 + d] != gs->dims[1 + d])
            return xf_rt_bad_node(err, n, "Y's spatial dims are not grid's");
    if (a->grid_mode == GS_CUBIC && rank > 2)
        return xf_rt_bad_node(err, n, "mode cubic samples 1 or 2 spatial dims; X has %d", rank);
    gs_geometry g = {.rank = rank, .taps = a->grid_mode == GS_NEAREST ? 1 : a->grid_mode == GS_CUBIC ? 4 : 2,
                     .padding = a->grid_padding, .single = x->dtype != XF_DT_DOUBLE};
    int64_t map = 1, points = 1;
    for (int d = rank - 1; d >= 0; d--) {
        g.len[d] = xs->dims[2 + d];
        g.stride[d] = map;
        map *= g.len[d];
        points *= gs->dims[1 + d];
        g.lo[d] = a->grid_align_corners ? 0 : -0.5;
        g.hi[d] = a->grid_align_corners ? (double)(g.len[d] - 1) : (double)g.len[d] - 0.5;
    }
    int64_t batch = xs->dims[0], channels = xs->dims[1];
    if (map == 0 && points > 0 && channels > 0)
        return xf_rt_bad_node(err, n, "X's spatial dims are empty; there is nothing to sample");
    gs_point p;
    for (int64_t b = 0; b < batch; b++)
        for (int64_t o = 0; o < points; o++) {
            gs_point_make(&g, n, grid, (b * points + o) * rank, &p);
            for (int64_t c = 0; c < channels; c++) {
                int64_t off = (b * channels + c) * map;
                xf_rt_store_f64(y->dtype, y->data, (b * channels + c) * points + o,
                                p.nan ? NAN : gs_interpolate(&g, &p, x, 0, off));
            }
        }
    return XF_OK;
}
