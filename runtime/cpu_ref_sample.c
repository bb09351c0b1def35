/* cpu_ref sampling ops: GridSample, AffineGrid (the grids it samples at)
 * and DeformConv (a convolution of bilinear samples).
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
#include <stdlib.h>
#include <string.h>

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

/* The taps of the point at pixel coordinates pixel[] (the first spatial
 * dim first), in mode (an xf_attrs grid_mode). */
static void gs_point_at(const gs_geometry *g, int mode, const double *pixel, gs_point *p)
{
    p->nan = false;
    for (int d = 0; d < g->rank; d++) {
        double x = pixel[d], len = (double)g->len[d];
        if (mode == GS_NEAREST)
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
        if (mode == GS_NEAREST) {
            p->idx[d][0] = gs_tap(g, d, trunc(x));
            p->w[d][0] = 1;
            continue;
        }
        double x0 = floor(x), t = x - x0, w[4];
        if (mode == GS_CUBIC) {
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

/* The taps of the grid point whose normalized coordinates (x first, as
 * grid holds them) start at element at of grid. */
static void gs_point_make(const gs_geometry *g, const xf_node *n, const xf_tensor_view *grid, int64_t at,
                          gs_point *p)
{
    const xf_attrs *a = &n->attrs;
    double x[XF_MAX_DIMS];
    for (int d = 0; d < g->rank; d++) {
        double v = xf_rt_load_f64(grid->dtype, grid->data, at + g->rank - 1 - d), len = (double)g->len[d];
        x[d] = rnd(g->single, a->grid_align_corners ? (v + 1) / 2 * (len - 1) : ((v + 1) * len - 1) / 2);
    }
    gs_point_at(g, a->grid_mode, x, p);
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

/* The taps of one grid point along 2 spatial dims (gs_point's first two). */
typedef struct gs_point2 {
    int64_t idx[2][4];
    double w[2][4];
    bool nan;
} gs_point2;

/* A bilinear grid point whose four taps all lie in X: their offsets in a
 * map (row k, column j at [2 * k + j]) and the weights along each dim. */
typedef struct gs_inside {
    int64_t at[4];
    double wy[2], wx[2];
    bool on; /* else the point takes gs_point2's general path */
} gs_inside;

/* The value of map xm at point q, as gs_interpolate computes it. */
static float gs_value_2d(const gs_geometry *g, const gs_point2 *q, const float *xm)
{
    if (q->nan) /* its taps were not made */
        return NAN;
    double v = 0;
    for (int k = 0; k < g->taps; k++) {
        if (q->idx[0][k] < 0)
            continue;
        const float *row = xm + q->idx[0][k] * g->stride[0];
        double r = 0;
        for (int j = 0; j < g->taps; j++)
            if (q->idx[1][j] >= 0)
                r += q->w[1][j] * (double)row[q->idx[1][j] * g->stride[1]];
        v += q->w[0][k] * (double)(float)r;
    }
    return (float)v;
}

/* GridSample of float X with 2 spatial dims: each image's grid points'
 * taps made once, then every channel's map sampled at all of them (one
 * map at a time stays in cache: deformable attention samples 32-channel
 * maps at thousands of points), each row's interpolation rounded to float
 * as gs_interpolate rounds it (the same bytes).  Bilinear points with all
 * four taps inside X (most of them) take a loop without the taps' tests,
 * whose sums start from 0 as gs_interpolate's do (0 + -0 is +0). */
static xf_status gs_sample_2d_f32(const gs_geometry *g, const xf_node *n, const xf_tensor_view *grid,
                                  const float *x, float *y, int64_t batch, int64_t channels, int64_t map,
                                  int64_t points, xf_error *err)
{
    if (batch == 0 || channels == 0 || points == 0) /* an empty output (whose data may be NULL) */
        return XF_OK;
    gs_point2 *pts = malloc(sizeof *pts * (size_t)(points > 0 ? points : 1));
    gs_inside *ins = malloc(sizeof *ins * (size_t)(points > 0 ? points : 1));
    if (!pts || !ins) {
        free(pts);
        free(ins);
        return xf_error_set(err, XF_ERR_NOMEM, "out of memory in GridSample");
    }
    gs_point p;
    for (int64_t b = 0; b < batch; b++) {
        for (int64_t o = 0; o < points; o++) {
            gs_point_make(g, n, grid, (b * points + o) * 2, &p);
            memcpy(pts[o].idx, p.idx, sizeof pts[o].idx);
            memcpy(pts[o].w, p.w, sizeof pts[o].w);
            pts[o].nan = p.nan;
            gs_inside *q = &ins[o];
            q->on = g->taps == 2 && !p.nan && p.idx[0][0] >= 0 && p.idx[0][1] >= 0 && p.idx[1][0] >= 0 &&
                    p.idx[1][1] >= 0;
            for (int k = 0; q->on && k < 2; k++) {
                q->wy[k] = p.w[0][k];
                q->wx[k] = p.w[1][k];
                for (int j = 0; j < 2; j++)
                    q->at[2 * k + j] = p.idx[0][k] * g->stride[0] + p.idx[1][j] * g->stride[1];
            }
        }
        for (int64_t c = 0; c < channels; c++) {
            const float *xm = x + (b * channels + c) * map;
            float *ym = y + (b * channels + c) * points;
            for (int64_t o = 0; o < points; o++) {
                const gs_inside *q = &ins[o];
                if (!q->on) {
                    ym[o] = gs_value_2d(g, &pts[o], xm);
                    continue;
                }
                double r0 = 0, r1 = 0, v = 0;
                r0 += q->wx[0] * (double)xm[q->at[0]];
                r0 += q->wx[1] * (double)xm[q->at[1]];
                r1 += q->wx[0] * (double)xm[q->at[2]];
                r1 += q->wx[1] * (double)xm[q->at[3]];
                v += q->wy[0] * (double)(float)r0;
                v += q->wy[1] * (double)(float)r1;
                ym[o] = (float)v;
            }
        }
    }
    free(pts);
    free(ins);
    return XF_OK;
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
    if (rank == 2 && x->dtype == XF_DT_FLOAT && y->dtype == XF_DT_FLOAT)
        return gs_sample_2d_f32(&g, n, grid, x->data, y->data, batch, channels, map, points, err);
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

/* AffineGrid: grid[b, o..., j] = sum_k theta[b, j, k] * base[o..., k],
 * base the point's (x, y[, z], 1), each coordinate in [-1, 1] along its
 * dim: the centres of its pixels, or (align_corners) their corners.  The
 * coordinates are those of numpy's arange in ONNX's reference (start, then
 * start + i * ((start + step) - start)); the sums are in double, rounded
 * once. */
xf_status xf_ref_affine_grid(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err)
{
    const xf_tensor_view *theta = &in[0], *y = &out[0];
    const xf_shape *ts = &theta->shape, *ys = &y->shape;
    int r = ys->ndim - 2;
    if ((r != 2 && r != 3) || ts->ndim != 3 || ts->dims[0] != ys->dims[0] || ts->dims[1] != r ||
        ts->dims[2] != r + 1 || ys->dims[r + 1] != r)
        return xf_rt_bad_node(err, n, "theta is not [N, %d, %d] for a grid [N, ..., %d]", r, r + 1, r);
    double *base[3] = {NULL};
    xf_status st = XF_OK;
    for (int d = 0; d < r && st == XF_OK; d++) { /* base[d]: dim d of the grid's (D, H, W), coordinate r - 1 - d */
        int64_t len = ys->dims[1 + d];
        if (!(base[d] = malloc(sizeof *base[d] * (size_t)(len > 0 ? len : 1)))) {
            st = xf_error_set(err, XF_ERR_NOMEM, "out of memory in AffineGrid");
            break;
        }
        double step = n->attrs.grid_align_corners ? 2.0 / (double)(len - 1) : 2.0 / (double)len;
        double start = n->attrs.grid_align_corners ? -1.0 : -1.0 + step / 2, delta = (start + step) - start;
        for (int64_t i = 0; i < len; i++)
            base[d][i] = i == 0 ? start : start + (double)i * delta;
    }
    int64_t points = 1;
    for (int d = 0; d < r; d++)
        points *= ys->dims[1 + d];
    for (int64_t b = 0; b < ys->dims[0] && st == XF_OK; b++)
        for (int64_t o = 0; o < points; o++) {
            double v[4] = {0, 0, 0, 1}; /* x, y[, z], 1 */
            for (int64_t d = r - 1, rest = o; d >= 0; rest /= ys->dims[1 + d], d--)
                v[r - 1 - d] = base[d][rest % ys->dims[1 + d]];
            v[r] = 1;
            for (int j = 0; j < r; j++) {
                double sum = 0;
                for (int k = 0; k <= r; k++)
                    sum += xf_rt_load_f64(theta->dtype, theta->data, (b * r + j) * (r + 1) + k) * v[k];
                xf_rt_store_f64(y->dtype, y->data, (b * points + o) * r + j, sum);
            }
        }
    for (int d = 0; d < 3; d++)
        free(base[d]);
    return st;
}

/* DeformConv (2 spatial dims, as ONNX's reference): each tap (ki, kj) of
 * the kernel at output (i, j) reads X's channel at (i * stride - pad +
 * ki * dilation, likewise along W) moved by its offset, sampled bilinearly
 * with zeros outside X as the reference's GridSample does (align_corners:
 * the coordinates go through its normalization to [-1, 1] and back; on
 * float tensors the offset and the window's corner add in float, and the
 * coordinates round to float), times its mask (1 without one).  The
 * offsets and mask of input channel c are those of its offset group, c /
 * (C / offset_group).  Sums in double. */
xf_status xf_ref_deform_conv(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err)
{
    const xf_attrs *a = &n->attrs;
    const xf_tensor_view *x = &in[0], *wt = &in[1], *off = &in[2], *y = &out[0];
    const xf_tensor_view *bias = n->n_inputs > 3 && xf_rt_present(&in[3]) ? &in[3] : NULL;
    const xf_tensor_view *mask = n->n_inputs > 4 && xf_rt_present(&in[4]) ? &in[4] : NULL;
    const xf_shape *xs = &x->shape, *ws = &wt->shape, *ys = &y->shape;
    if (xs->ndim != 4)
        return xf_error_set(err, XF_ERR_UNSUPPORTED, "node '%s' (DeformConv): %d spatial dimensions (cpu_ref "
                            "handles 2, as ONNX's reference does)", n->name, xs->ndim - 2);
    int64_t batch = xs->dims[0], c_in = xs->dims[1], c_out = ws->dims[0], kh = ws->dims[2], kw = ws->dims[3];
    int64_t oh = ys->dims[2], ow = ys->dims[3], og = a->offset_group, cg = ws->dims[1], mg = c_out / a->group;
    if (ws->ndim != 4 || ys->ndim != 4 || ys->dims[0] != batch || ys->dims[1] != c_out || cg * a->group != c_in ||
        og < 1 || c_in % og || off->shape.ndim != 4 || off->shape.dims[1] != og * kh * kw * 2 ||
        off->shape.dims[2] != oh || off->shape.dims[3] != ow || (mask && xf_rt_numel(mask) * 2 != xf_rt_numel(off)) ||
        (bias && xf_rt_numel(bias) != c_out))
        return xf_rt_bad_node(err, n, "operands are not X [N, C, H, W], W [M, C / group, kH, kW], offset [N, "
                                      "offset_group * kH * kW * 2, oH, oW], B [M] and mask [N, offset_group * kH * "
                                      "kW, oH, oW]");
    gs_geometry g = {.rank = 2, .taps = 2, .padding = GS_ZEROS, .single = x->dtype != XF_DT_DOUBLE};
    int64_t stride[2], pad[2], dil[2];
    for (int d = 0; d < 2; d++) {
        g.len[d] = xs->dims[2 + d];
        g.lo[d] = 0;
        g.hi[d] = (double)(g.len[d] - 1);
        stride[d] = a->n_spatial ? a->strides[d] : 1;
        pad[d] = a->n_spatial ? a->pads[d] : 0;
        dil[d] = a->n_spatial ? a->dilations[d] : 1;
    }
    g.stride[0] = g.len[1];
    g.stride[1] = 1;
    double *acc = malloc(sizeof *acc * (size_t)(c_out * oh * ow > 0 ? c_out * oh * ow : 1));
    if (!acc)
        return xf_error_set(err, XF_ERR_NOMEM, "out of memory in DeformConv");
    int64_t plane = oh * ow, taps = kh * kw;
    gs_point p;
    for (int64_t b = 0; b < batch; b++) {
        for (int64_t i = 0; i < c_out * plane; i++)
            acc[i] = bias ? xf_rt_load_f64(bias->dtype, bias->data, i / plane) : 0.0;
        for (int64_t c = 0; c < c_in; c++) {
            int64_t grp = c / cg, ogi = c / (c_in / og), xoff = (b * c_in + c) * g.len[0] * g.len[1];
            for (int64_t o = 0; o < plane; o++)
                for (int64_t t = 0; t < taps; t++) {
                    int64_t at = ((b * og + ogi) * taps + t) * 2 * plane + o;
                    double px[2];
                    for (int d = 0; d < 2; d++) {
                        double corner = (double)((d ? o % ow : o / ow) * stride[d] - pad[d]);
                        double h = (double)((d ? t % kw : t / kw) * dil[d]) +
                                   rnd(g.single, corner + xf_rt_load_f64(off->dtype, off->data, at + d * plane));
                        double last = (double)(g.len[d] - 1);
                        px[d] = rnd(g.single, last > 0 ? (h / last * 2 - 1 + 1) / 2 * last : h);
                    }
                    gs_point_at(&g, GS_LINEAR, px, &p);
                    double v = p.nan ? NAN : gs_interpolate(&g, &p, x, 0, xoff);
                    double m = mask ? xf_rt_load_f64(mask->dtype, mask->data, ((b * og + ogi) * taps + t) * plane + o)
                                    : 1.0;
                    for (int64_t oc = grp * mg; oc < (grp + 1) * mg; oc++) {
                        double w = xf_rt_load_f64(wt->dtype, wt->data, (oc * cg + c % cg) * taps + t);
                        acc[oc * plane + o] += rnd(g.single, rnd(g.single, v * w) * m);
                    }
                }
        }
        for (int64_t i = 0; i < c_out * plane; i++)
            xf_rt_store_f64(y->dtype, y->data, b * c_out * plane + i, acc[i]);
    }
    free(acc);
    return XF_OK;
}
