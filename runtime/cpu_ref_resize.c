/* cpu_ref's Resize and Upsample. */
#include "xf_op_plans.h"
#include "xf_rt_internal.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* Resize and Upsample, nearest, (multi)linear or cubic: each output
 * coordinate is mapped back to the input by the coordinate mode, per dim,
 * with the dim's scale (see xf_resize_plan), and reads input indices per
 * dim (edges repeated past the ends) with weights whose products over the
 * dims weight each input element, as ONNX's reference does: 2 (linear) or
 * 4 (cubic) taps, or with antialias where a dim shrinks by s < 1 the
 * filter stretched by 1 / s over 2 / s or 4 / s taps, its weights summing
 * to 1. */
typedef struct resize_axis {
    int n;         /* taps of nonzero weight; 0: outside tf_crop_and_resize's crop */
    int64_t *idx;  /* input indices read */
    double *w;     /* their weights */
} resize_axis;

/* The input coordinate output index x maps to; roi: this dim's crop
 * (start, end) for tf_crop_and_resize. */
static double resize_source(const xf_attrs *a, int64_t x, int64_t len_in, int64_t len_out, double scale,
                            const double *roi)
{
    double out_len = (double)len_in * scale; /* unrounded, as ONNX */
    switch (a->resize_coord) {
    case 1: return (double)x / scale; /* asymmetric */
    case 2: return out_len == 1 ? 0 : (double)x * (double)(len_in - 1) / (out_len - 1); /* align_corners */
    case 3: return out_len == 1 ? -0.5 : ((double)x + 0.5) / scale - 0.5;                /* pytorch_half_pixel */
    case 4: /* tf_crop_and_resize */
        return roi[0] * (double)(len_in - 1) + (len_out == 1 ? (roi[1] - roi[0]) * (double)(len_in - 1) / 2
                                                             : (double)x * (roi[1] - roi[0]) * (double)(len_in - 1) /
                                                                   (double)(len_out - 1));
    case 5: { /* half_pixel_symmetric */
        double offset = (double)len_in / 2 * (1 - (double)len_out / out_len);
        return offset + ((double)x + 0.5) / scale - 0.5;
    }
    default: return ((double)x + 0.5) / scale - 0.5; /* half_pixel */
    }
}

/* The first tap's offset from the tap left of the source, for antialias
 * at scale s < 1 (the taps run from there to 1 - first). */
static int64_t resize_aa_first(const xf_attrs *a, double s)
{
    return (int64_t)floor((a->resize_mode == 2 ? -2 : -1) / s) + 1;
}

/* The most taps a dim reads at this scale. */
static int64_t resize_taps(const xf_attrs *a, double scale)
{
    if (a->resize_mode == 0)
        return 1;
    if (a->resize_antialias && scale < 1)
        return 2 - 2 * resize_aa_first(a, scale);
    return a->resize_mode == 2 ? 4 : 2;
}

/* Keys' cubic convolution with coefficient A at distance t. */
static double cubic_weight(double A, double t)
{
    t = fabs(t);
    return t <= 1 ? ((A + 2) * t - (A + 3)) * t * t + 1 : t < 2 ? ((A * t - 5 * A) * t + 8 * A) * t - 4 * A : 0;
}

static void resize_map(const xf_attrs *a, int64_t x, int64_t len_in, int64_t len_out, double scale,
                       const double *roi, resize_axis *r)
{
    double s = resize_source(a, x, len_in, len_out, scale, roi);
    r->n = 0;
    if (a->resize_coord == 4 && (s < 0 || s > (double)(len_in - 1)))
        return; /* the extrapolation value */
    if (a->resize_mode == 0) {
        double f = floor(s);
        int64_t i = a->resize_nearest == 4   ? (scale < 1 ? (int64_t)ceil(s) : (int64_t)s)
                    : a->resize_nearest == 2 ? (int64_t)f
                    : a->resize_nearest == 3 ? (int64_t)ceil(s)
                    : s - f == 0.5           ? (int64_t)f + (a->resize_nearest == 1)
                                             : (int64_t)floor(s + 0.5);
        r->idx[0] = i < 0 ? 0 : i >= len_in ? len_in - 1 : i;
        r->w[0] = 1;
        r->n = 1;
        return;
    }
    /* taps left + first .. left + first + taps - 1 at distance t - k from s */
    bool aa = a->resize_antialias && scale < 1;
    double left = aa ? ceil(s) - 1 : floor(s), t = s - left, sum = 0;
    int64_t first = aa ? resize_aa_first(a, scale) : -(a->resize_mode == 2), taps = resize_taps(a, scale);
    double stretch = aa ? scale : 1;
    for (int64_t k = 0; k < taps; k++) {
        double d = ((double)(first + k) - t) * stretch;
        r->w[k] = a->resize_mode == 2 ? cubic_weight(a->alpha, d) : fmax(0, 1 - fabs(d));
        int64_t i = (int64_t)left + first + k;
        if (a->resize_exclude && (i < 0 || i >= len_in))
            r->w[k] = 0;
        sum += r->w[k];
    }
    for (int64_t k = 0; k < taps; k++) {
        int64_t i = (int64_t)left + first + k;
        double wk = (aa || a->resize_exclude) && sum != 0 ? r->w[k] / sum : r->w[k];
        if (wk == 0)
            continue;
        r->idx[r->n] = i < 0 ? 0 : i >= len_in ? len_in - 1 : i;
        r->w[r->n++] = wk;
    }
}

/* Each dim's scale (and, with axes, its roi), checking the output's
 * extents: Resize's from xf_resize_plan over its scales or sizes,
 * Upsample's from its scales (an input, or an attribute before opset 9). */
static xf_status resize_params(const xf_node *n, const xf_tensor_view *in, const xf_shape *y, double *scale,
                               double *roi, xf_error *err)
{
    const xf_tensor_view *x = &in[0];
    int rank = x->shape.ndim, na = rank, axes_at[XF_MAX_DIMS];
    for (int d = 0; d < rank; d++) {
        roi[d] = 0;
        roi[rank + d] = 1;
        axes_at[d] = d;
    }
    int64_t out[XF_MAX_DIMS];
    if (n->op == XF_OP_UPSAMPLE) {
        const xf_tensor *t = n->attrs.value;
        xf_tensor_view sv = t ? (xf_tensor_view){t->dtype, t->shape, t->data} : in[1];
        if (xf_rt_numel(&sv) != rank)
            return xf_rt_bad_node(err, n, "scales is not one per dim");
        for (int d = 0; d < rank; d++) {
            scale[d] = xf_rt_load_f64(sv.dtype, sv.data, d);
            out[d] = (int64_t)floor((double)x->shape.dims[d] * scale[d]);
        }
    } else {
        bool by_sizes = n->n_inputs > 3 && xf_rt_present(&in[3]) && xf_rt_numel(&in[3]) > 0;
        const xf_tensor_view *v = by_sizes ? &in[3] : n->n_inputs > 2 && xf_rt_present(&in[2]) ? &in[2] : NULL;
        int64_t count = v ? xf_rt_numel(v) : 0, sizes[XF_MAX_DIMS];
        double scales[XF_MAX_DIMS];
        if (!v || count > XF_MAX_DIMS)
            return xf_rt_bad_node(err, n, "has neither scales nor sizes of at most %d values", XF_MAX_DIMS);
        for (int64_t i = 0; i < count; i++) {
            if (by_sizes)
                sizes[i] = xf_rt_load_i64(v->dtype, v->data, i);
            else
                scales[i] = xf_rt_load_f64(v->dtype, v->data, i);
        }
        char why[160];
        if (!xf_resize_plan(&n->attrs, &x->shape, scales, (int)count, by_sizes ? sizes : NULL, (int)count, scale, out,
                            axes_at, why, sizeof why))
            return xf_rt_bad_node(err, n, "%s", why);
        na = n->attrs.has_axes ? n->attrs.n_axes : rank;
    }
    for (int d = 0; d < rank; d++)
        if (out[d] != y->dims[d])
            return xf_rt_bad_node(err, n, "output dim %d is %lld, its scale gives %lld", d, (long long)y->dims[d],
                                  (long long)out[d]);
    const xf_tensor_view *r = n->op == XF_OP_RESIZE && n->n_inputs > 1 && xf_rt_present(&in[1]) ? &in[1] : NULL;
    if (n->attrs.resize_coord != 4)
        return XF_OK;
    if (!r || xf_rt_numel(r) != 2 * na)
        return xf_rt_bad_node(err, n, "tf_crop_and_resize needs a roi of 2 values per resized dim (starts, ends)");
    for (int i = 0; i < na; i++) {
        roi[axes_at[i]] = xf_rt_load_f64(r->dtype, r->data, i);
        roi[rank + axes_at[i]] = xf_rt_load_f64(r->dtype, r->data, na + i);
    }
    return XF_OK;
}

/* The common case of float tensors resized in their last two dims alone
 * (the others map each index to itself, one tap of weight 1): plane by
 * plane, a row at a time, each output element's sum of weight products
 * times inputs taken in the order of the general loop below, so that the
 * bytes are the same.  False when the case does not apply (or no memory
 * for the row). */
static bool resize_planes(const xf_node *n, const xf_tensor_view *x, const xf_tensor_view *y,
                          resize_axis *const *map)
{
    int rank = x->shape.ndim;
    if (rank < 2 || x->dtype != XF_DT_FLOAT || y->dtype != XF_DT_FLOAT)
        return false;
    int64_t planes = 1;
    for (int d = 0; d < rank - 2; d++) {
        if (x->shape.dims[d] != y->shape.dims[d])
            return false;
        for (int64_t i = 0; i < y->shape.dims[d]; i++)
            if (map[d][i].n != 1 || map[d][i].idx[0] != i || map[d][i].w[0] != 1)
                return false;
        planes *= y->shape.dims[d];
    }
    const resize_axis *mh = map[rank - 2], *mw = map[rank - 1];
    int64_t ih = x->shape.dims[rank - 2], iw = x->shape.dims[rank - 1];
    int64_t oh = y->shape.dims[rank - 2], ow = y->shape.dims[rank - 1];
    double *acc = malloc(sizeof *acc * (size_t)ow);
    if (!acc)
        return false;
    for (int64_t p = 0; p < planes; p++) {
        const float *xp = (const float *)x->data + p * ih * iw;
        float *yp = (float *)y->data + p * oh * ow;
        for (int64_t i = 0; i < oh; i++) {
            const resize_axis *rh = &mh[i];
            for (int64_t j = 0; j < ow; j++)
                acc[j] = rh->n == 0 || mw[j].n == 0 ? n->attrs.beta : 0;
            for (int th = 0; th < rh->n; th++) {
                const float *row = xp + rh->idx[th] * iw;
                double wh = rh->w[th];
                for (int64_t j = 0; j < ow; j++) {
                    const resize_axis *rw = &mw[j];
                    for (int tw = 0; tw < rw->n; tw++)
                        acc[j] += wh * rw->w[tw] * row[rw->idx[tw]];
                }
            }
            for (int64_t j = 0; j < ow; j++)
                yp[i * ow + j] = (float)acc[j];
        }
    }
    free(acc);
    return true;
}

/* Each dim's taps (map[d][i] for output index i of dim d, in one block
 * per dim) and the input's strides; the caller frees map[d]. */
static xf_status resize_maps(const xf_node *n, const xf_tensor_view *in, const xf_shape *ys, resize_axis **map,
                             int64_t *istride, xf_error *err)
{
    const xf_tensor_view *x = &in[0];
    int rank = x->shape.ndim;
    double scale[XF_MAX_DIMS], roi[2 * XF_MAX_DIMS];
    xf_status st = resize_params(n, in, ys, scale, roi, err);
    int64_t s = 1;
    for (int d = rank - 1; d >= 0 && st == XF_OK; d--) {
        istride[d] = s;
        s *= x->shape.dims[d];
        int64_t li = x->shape.dims[d], lo = ys->dims[d];
        if (lo > 0 && (li == 0 || !(scale[d] > 0))) {
            st = xf_rt_bad_node(err, n, "cannot resize an empty dim or by a scale of %g", scale[d]);
            break;
        }
        int64_t taps = lo > 0 ? resize_taps(&n->attrs, scale[d]) : 1, rows = lo > 0 ? lo : 1;
        if (taps > 4 * li + 8) { /* a scale far below 1 / li, which leaves no output */
            st = xf_rt_bad_node(err, n, "scale %g of dim %d is too small", scale[d], d);
            break;
        }
        /* one block: the rows, then their indices, then their weights */
        map[d] = malloc((size_t)rows * (sizeof **map + (size_t)taps * (sizeof(int64_t) + sizeof(double))));
        if (!map[d]) {
            st = xf_error_set(err, XF_ERR_NOMEM, "out of memory");
            break;
        }
        int64_t *idx = (int64_t *)(map[d] + rows);
        double *w = (double *)(idx + rows * taps);
        for (int64_t i = 0; i < lo; i++) {
            map[d][i] = (resize_axis){0, idx + i * taps, w + i * taps};
            resize_map(&n->attrs, i, li, lo, scale[d], (double[2]){roi[d], roi[rank + d]}, &map[d][i]);
        }
    }
    return st;
}

/* Output element i's taps, every combination of its dims' (coord: its
 * index per dim): visit(ctx, i, input offset, weight) for each in order,
 * or outside(ctx, i) where a dim has none (tf_crop_and_resize's
 * extrapolation). */
static void resize_walk(resize_axis *const *map, int rank, const int64_t *istride, const int64_t *coord, int64_t i,
                        void (*visit)(void *, int64_t, int64_t, double), void (*outside)(void *, int64_t), void *ctx)
{
    const resize_axis *r[XF_MAX_DIMS];
    int tap[XF_MAX_DIMS] = {0};
    for (int d = 0; d < rank; d++) {
        r[d] = &map[d][coord[d]];
        if (r[d]->n == 0) {
            outside(ctx, i);
            return;
        }
    }
    for (;;) {
        double w = 1;
        int64_t off = 0;
        for (int d = 0; d < rank; d++) {
            w *= r[d]->w[tap[d]];
            off += r[d]->idx[tap[d]] * istride[d];
        }
        visit(ctx, i, off, w);
        int d = rank - 1;
        while (d >= 0 && ++tap[d] == r[d]->n)
            tap[d--] = 0;
        if (d < 0)
            return;
    }
}

/* Runs resize_walk over every output element of shape ys. */
static void resize_walk_all(resize_axis *const *map, const int64_t *istride, const xf_shape *ys,
                            void (*visit)(void *, int64_t, int64_t, double), void (*outside)(void *, int64_t),
                            void (*done)(void *, int64_t), void *ctx)
{
    int64_t numel = xf_shape_numel(ys), coord[XF_MAX_DIMS] = {0};
    for (int64_t i = 0; i < numel; i++) {
        resize_walk(map, ys->ndim, istride, coord, i, visit, outside, ctx);
        if (done)
            done(ctx, i);
        for (int d = ys->ndim - 1; d >= 0 && ++coord[d] == ys->dims[d]; d--)
            coord[d] = 0;
    }
}

/* Resizes of many taps an element (their product over the dims past
 * SEPARABLE_TAPS: cubic or antialiased along three dims or more), where
 * the walk above would visit every combination, run as one pass per dim
 * over buffers of doubles: along the dims that shrink first, so that no
 * buffer is larger than the input or the output; the adjoint runs the
 * passes' adjoints in the reverse order.  Not where a dim has an index
 * without taps (tf_crop_and_resize's extrapolation). */
enum { SEPARABLE_TAPS = 64 };

typedef struct resize_passes {
    int rank, order[XF_MAX_DIMS], count; /* the dims resized, in pass order */
    xf_shape xs, ys;
    int64_t largest; /* elements of the largest buffer */
} resize_passes;

static bool resize_separable(resize_axis *const *map, const xf_shape *xs, const xf_shape *ys, resize_passes *p)
{
    double combos = 1;
    *p = (resize_passes){.rank = xs->ndim, .xs = *xs, .ys = *ys};
    for (int d = 0; d < xs->ndim; d++) {
        int most = 0;
        bool identity = xs->dims[d] == ys->dims[d];
        for (int64_t i = 0; i < ys->dims[d]; i++) {
            const resize_axis *r = &map[d][i];
            if (r->n == 0)
                return false;
            most = r->n > most ? r->n : most;
            identity = identity && r->n == 1 && r->idx[0] == i && r->w[0] == 1;
        }
        combos *= most;
        if (!identity)
            p->order[p->count++] = d;
    }
    /* the shrinking dims first, most first; then the growing ones, least first */
    for (int a = 1; a < p->count; a++)
        for (int b = a; b > 0; b--) {
            int u = p->order[b - 1], v = p->order[b];
            double ru = (double)ys->dims[u] / (double)xs->dims[u], rv = (double)ys->dims[v] / (double)xs->dims[v];
            if (rv >= ru)
                break;
            p->order[b - 1] = v, p->order[b] = u;
        }
    int64_t nx = xf_shape_numel(xs), ny = xf_shape_numel(ys);
    p->largest = nx > ny ? nx : ny;
    return combos > SEPARABLE_TAPS;
}

/* One pass along dim d, from src (shape s) into dst (s with dim d of
 * len_out): dst[o, i, k] = sum w src[o, idx, k] or, adjoint, dst[o, idx,
 * k] += w src[o, i, k] (dst zeroed first). */
static void resize_pass(const resize_axis *m, const xf_shape *s, int d, int64_t len_out, bool adjoint,
                        const double *src, double *dst)
{
    int64_t outer = 1, inner = 1, len_in = s->dims[d];
    for (int k = 0; k < d; k++)
        outer *= s->dims[k];
    for (int k = d + 1; k < s->ndim; k++)
        inner *= s->dims[k];
    int64_t taps_len = adjoint ? len_in : len_out; /* the map's side: the forward output's */
    memset(dst, 0, sizeof *dst * (size_t)(outer * len_out * inner));
    for (int64_t o = 0; o < outer; o++)
        for (int64_t i = 0; i < taps_len; i++)
            for (int t = 0; t < m[i].n; t++) {
                double w = m[i].w[t];
                const double *a = src + (o * len_in + (adjoint ? i : m[i].idx[t])) * inner;
                double *b = dst + (o * len_out + (adjoint ? m[i].idx[t] : i)) * inner;
                for (int64_t k = 0; k < inner; k++)
                    b[k] += w * a[k];
            }
}

/* All the passes (adjoint: in reverse, from a buffer of ys to one of xs):
 * from `from` into `into`, both of p->largest doubles and swapped between
 * passes; the buffer holding the result. */
static double *resize_run_passes(resize_axis *const *map, const resize_passes *p, bool adjoint, double *from,
                                 double *into)
{
    xf_shape s = adjoint ? p->ys : p->xs;
    for (int k = 0; k < p->count; k++) {
        int d = p->order[adjoint ? p->count - 1 - k : k];
        int64_t len_out = adjoint ? p->xs.dims[d] : p->ys.dims[d];
        resize_pass(map[d], &s, d, len_out, adjoint, from, into);
        s.dims[d] = len_out;
        double *t = from;
        from = into;
        into = t;
    }
    return from;
}

/* The forward sum: v accumulates in double, stored once per element. */
typedef struct resize_sum {
    const xf_node *n;
    const xf_tensor_view *x, *y;
    double v;
} resize_sum;

static void sum_tap(void *c, int64_t i, int64_t off, double w)
{
    resize_sum *r = c;
    r->v += w * xf_rt_load_f64(r->x->dtype, r->x->data, off);
}
static void sum_outside(void *c, int64_t i) { ((resize_sum *)c)->v = ((resize_sum *)c)->n->attrs.beta; }
static void sum_store(void *c, int64_t i)
{
    resize_sum *r = c;
    xf_rt_store_f64(r->y->dtype, r->y->data, i, r->v);
    r->v = 0;
}

xf_status xf_ref_resize(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err)
{
    const xf_tensor_view *x = &in[0], *y = &out[0];
    int rank = x->shape.ndim;
    if (y->shape.ndim != rank || rank < 1)
        return xf_rt_bad_node(err, n, "output rank differs from the input's");
    if (xf_rt_numel(y) == 0) /* an empty output needs no taps, however long its other dims */
        return resize_params(n, in, &y->shape, (double[XF_MAX_DIMS]){0}, (double[2 * XF_MAX_DIMS]){0}, err);
    int64_t istride[XF_MAX_DIMS];
    resize_axis *map[XF_MAX_DIMS] = {NULL};
    xf_status st = resize_maps(n, in, &y->shape, map, istride, err);
    resize_sum sum = {n, x, y, 0};
    resize_passes p;
    double *buf = NULL;
    if (st == XF_OK && resize_separable(map, &x->shape, &y->shape, &p)) {
        buf = malloc(sizeof *buf * 2 * (size_t)p.largest);
        if (!buf)
            st = xf_error_set(err, XF_ERR_NOMEM, "out of memory");
        for (int64_t i = 0; buf && i < xf_rt_numel(x); i++)
            buf[i] = xf_rt_load_f64(x->dtype, x->data, i);
        if (buf)
            xf_rt_store_f64_run(y->dtype, y->data, 0, xf_rt_numel(y),
                                resize_run_passes(map, &p, false, buf, buf + p.largest));
    } else if (st == XF_OK && !resize_planes(n, x, y, map))
        resize_walk_all(map, istride, &y->shape, sum_tap, sum_outside, sum_store, &sum);
    free(buf);
    for (int d = 0; d < rank; d++)
        free(map[d]);
    return st;
}

/* The adjoint: gy's elements back along the taps, gx[off] += w gy[i]. */
typedef struct resize_back {
    const double *gy;
    double *gx;
} resize_back;

static void back_tap(void *c, int64_t i, int64_t off, double w)
{
    resize_back *r = c;
    r->gx[off] += w * r->gy[i];
}
static void back_outside(void *c, int64_t i) {}

xf_status xf_ref_resize_backward(const xf_node *n, const xf_tensor_view *in, const xf_shape *ys, const double *gy,
                                 double *gx, xf_error *err)
{
    int64_t istride[XF_MAX_DIMS];
    resize_axis *map[XF_MAX_DIMS] = {NULL};
    if (ys->ndim != in[0].shape.ndim || ys->ndim < 1)
        return xf_rt_bad_node(err, n, "output rank differs from the input's");
    if (xf_shape_numel(ys) == 0)
        return XF_OK;
    xf_status st = resize_maps(n, in, ys, map, istride, err);
    resize_back back = {gy, gx};
    resize_passes p;
    if (st == XF_OK && resize_separable(map, &in[0].shape, ys, &p)) {
        double *buf = malloc(sizeof *buf * 2 * (size_t)p.largest);
        if (!buf)
            st = xf_error_set(err, XF_ERR_NOMEM, "out of memory");
        if (buf) {
            memcpy(buf, gy, sizeof *buf * (size_t)xf_shape_numel(ys));
            const double *g = resize_run_passes(map, &p, true, buf, buf + p.largest);
            for (int64_t i = 0; i < xf_shape_numel(&in[0].shape); i++)
                gx[i] += g[i];
        }
        free(buf);
    } else if (st == XF_OK)
        resize_walk_all(map, istride, ys, back_tap, back_outside, NULL, &back);
    for (int d = 0; d < ys->ndim; d++)
        free(map[d]);
    return st;
}
