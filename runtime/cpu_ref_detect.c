/* cpu_ref detection ops: RoiAlign, MaxRoiPool, and NonMaxSuppression (whose selection
 * is core's, shared with shape inference).
 *
 * RoiAlign follows ONNX's reference implementation step by step: on float
 * tensors every step rounds to float as there (a sum, product or quotient
 * of two floats computed in double and rounded to float is the float
 * operation's result), on double tensors nothing rounds; 16-bit floats are
 * widened to float (cpu_ref.c). */
#include "xf_op_plans.h"
#include "xf_rt_internal.h"

#include <math.h>
#include <stdlib.h>

/* At most this many bilinear samples per output bin (an adaptive grid of
 * an enormous ROI would otherwise run for hours or overflow the count). */
#define ROI_MAX_SAMPLES_PER_BIN ((double)(1 << 24))

static double rnd(bool single, double v) { return single ? (double)(float)v : v; }

/* The four neighbours of a sample point and their bilinear weights. */
typedef struct roi_sample {
    int64_t pos[4];
    double w[4];
} roi_sample;

/* The sample at (y, x) of an h x w map (both at least 1): beyond the map
 * by more than a pixel it weighs nothing; otherwise it is clamped to the
 * map (negative coordinates to 0, the last row and column to themselves). */
static roi_sample sample_at(bool single, double y, double x, int64_t h, int64_t w)
{
    roi_sample s = {{0}, {0}};
    if (!(y >= -1.0 && y <= (double)h && x >= -1.0 && x <= (double)w))
        return s;
    y = y > 0 ? y : 0;
    x = x > 0 ? x : 0;
    int64_t y0 = (int64_t)y, x0 = (int64_t)x, y1 = y0 + 1, x1 = x0 + 1;
    if (y0 >= h - 1) {
        y0 = y1 = h - 1;
        y = (double)y0;
    }
    if (x0 >= w - 1) {
        x0 = x1 = w - 1;
        x = (double)x0;
    }
    double ly = rnd(single, y - (double)y0), lx = rnd(single, x - (double)x0);
    double hy = rnd(single, 1.0 - ly), hx = rnd(single, 1.0 - lx);
    s.pos[0] = y0 * w + x0;
    s.pos[1] = y0 * w + x1;
    s.pos[2] = y1 * w + x0;
    s.pos[3] = y1 * w + x1;
    s.w[0] = rnd(single, hy * hx);
    s.w[1] = rnd(single, hy * lx);
    s.w[2] = rnd(single, ly * hx);
    s.w[3] = rnd(single, ly * lx);
    return s;
}

/* One ROI's sampling geometry, in input pixels. */
typedef struct roi_geometry {
    double y0, x0, bin_h, bin_w;
    int64_t grid_h, grid_w; /* samples per bin along each axis; 0: none */
} roi_geometry;

static xf_status roi_geometry_make(const xf_node *n, const xf_tensor_view *rois, int64_t r, bool single,
                                   roi_geometry *g, xf_error *err)
{
    const xf_attrs *a = &n->attrs;
    double c[4], scale = a->roi_spatial_scale, offset = a->roi_output_half_pixel ? 0.0 : 0.5;
    for (int k = 0; k < 4; k++) {
        c[k] = rnd(single, rnd(single, xf_rt_load_f64(rois->dtype, rois->data, r * 4 + k) * scale) - offset);
        if (!isfinite(c[k]))
            return xf_rt_bad_node(err, n, "ROI %lld has a coordinate that is not finite (after spatial_scale)",
                                  (long long)r);
    }
    double w = rnd(single, c[2] - c[0]), h = rnd(single, c[3] - c[1]);
    if (a->roi_output_half_pixel) { /* malformed ROIs become 1 x 1 */
        w = 1.0 > w ? 1.0 : w;
        h = 1.0 > h ? 1.0 : h;
    }
    g->x0 = c[0];
    g->y0 = c[1];
    g->bin_h = rnd(single, h / (double)a->roi_output_h);
    g->bin_w = rnd(single, w / (double)a->roi_output_w);
    double gh = a->roi_sampling_ratio > 0 ? (double)a->roi_sampling_ratio : ceil(g->bin_h);
    double gw = a->roi_sampling_ratio > 0 ? (double)a->roi_sampling_ratio : ceil(g->bin_w);
    if (gh > 0 && gw > 0 && gh * gw > ROI_MAX_SAMPLES_PER_BIN)
        return xf_rt_bad_node(err, n, "ROI %lld needs %.0f x %.0f samples per output bin; xflow takes at most %.0f",
                              (long long)r, gh, gw, ROI_MAX_SAMPLES_PER_BIN);
    g->grid_h = gh > 0 ? (int64_t)gh : 0;
    g->grid_w = gw > 0 ? (int64_t)gw : 0;
    return XF_OK;
}

/* Samples computed at once: the bins of a run, or a part of one bin that
 * has more. */
#define ROI_SAMPLES_AT_ONCE 4096

/* Samples [first, first + count) of the grids of bins bin0, bin0 + 1, ...
 * of an ROI (ow bins a row), in the order each bin's sum takes them. */
static void roi_samples(const roi_geometry *g, int64_t ow, int64_t h, int64_t w, bool single, int64_t bin0,
                        int64_t first, int64_t count, roi_sample *sp)
{
    int64_t per_bin = g->grid_h * g->grid_w;
    for (int64_t k = 0; k < count; k++) {
        int64_t b = bin0 + (first + k) / per_bin, s = (first + k) % per_bin;
        int64_t ph = b / ow, pw = b % ow, iy = s / g->grid_w, ix = s % g->grid_w;
        double yy = rnd(single, rnd(single, g->y0 + rnd(single, (double)ph * g->bin_h)) +
                                    rnd(single, rnd(single, ((double)iy + 0.5) * g->bin_h) / (double)g->grid_h));
        double xx = rnd(single, rnd(single, g->x0 + rnd(single, (double)pw * g->bin_w)) +
                                    rnd(single, rnd(single, ((double)ix + 0.5) * g->bin_w) / (double)g->grid_w));
        sp[k] = sample_at(single, yy, xx, h, w);
    }
}

/* acc (one channel's, one bin's) after samples sp[0..count) of its plane,
 * which are samples first, first + 1, ... of the bin: the sum of each
 * sample's weighted neighbours, or the largest of them.  In the tensor's
 * type: on float planes each operation rounds as the reference's does. */
#define ROI_TAKE(T, name)                                                                                   \
    static T name(const T *plane, const roi_sample *sp, int64_t count, bool max, int64_t first, T acc)      \
    {                                                                                                       \
        for (int64_t s = 0; s < count; s++) {                                                               \
            T t[4];                                                                                         \
            for (int k = 0; k < 4; k++)                                                                     \
                t[k] = (T)sp[s].w[k] * plane[sp[s].pos[k]];                                                 \
            if (max) {                                                                                      \
                T v = t[0];                                                                                 \
                for (int k = 1; k < 4; k++)                                                                 \
                    v = t[k] > v ? t[k] : v;                                                                \
                acc = first + s == 0 || v > acc ? v : acc;                                                  \
            } else {                                                                                        \
                acc = acc + (((t[0] + t[1]) + t[2]) + t[3]);                                                \
            }                                                                                               \
        }                                                                                                   \
        return acc;                                                                                         \
    }
ROI_TAKE(float, roi_take_f32)
ROI_TAKE(double, roi_take_f64)

/* A sample of a float plane: its taps' offsets and weights (which are
 * floats: sample_at rounds them). */
typedef struct roi_tap_f32 {
    int32_t pos[4];
    float w[4];
} roi_tap_f32;

/* acc[i], for each of n_bins bins of per_bin samples tp[i * per_bin ..]:
 * their sum over a float plane, as roi_take_f32 takes it from 0, without
 * a call, the weights' conversions and the max test per bin (Faster
 * R-CNN's 1000 ROIs of 256 channels: 12.5 M bins of 4 samples). */
static void roi_sum_bins_f32(const float *plane, const roi_tap_f32 *tp, int64_t n_bins, int64_t per_bin,
                             double *acc)
{
    for (int64_t i = 0; i < n_bins; i++, tp += per_bin) {
        float a = 0;
        for (int64_t s = 0; s < per_bin; s++) {
            float t0 = tp[s].w[0] * plane[tp[s].pos[0]], t1 = tp[s].w[1] * plane[tp[s].pos[1]];
            float t2 = tp[s].w[2] * plane[tp[s].pos[2]], t3 = tp[s].w[3] * plane[tp[s].pos[3]];
            a = a + (((t0 + t1) + t2) + t3);
        }
        acc[i] = a;
    }
}

/* The most bins a run may hold: acc holds a value per channel and bin. */
static int64_t roi_run_limit(int64_t channels) { return channels < 65536 ? 65536 / (channels > 1 ? channels : 1) : 1; }

/* Channel ch's value of one bin after some of its samples, from acc. */
static double roi_take(const xf_tensor_view *x, int64_t b, int64_t ch, const roi_sample *sp, int64_t count,
                       bool max, int64_t first, double acc)
{
    size_t plane = (size_t)((b * x->shape.dims[1] + ch) * x->shape.dims[2] * x->shape.dims[3]);
    return x->dtype == XF_DT_FLOAT
               ? roi_take_f32((const float *)x->data + plane, sp, count, max, first, (float)acc)
               : roi_take_f64((const double *)x->data + plane, sp, count, max, first, acc);
}

/* Y[r] for ROI r of image b: the bins in runs whose samples fit at once,
 * every channel in turn over a run (its map stays in cache while the
 * run's bins read it); a bin with more samples than fit alone, in parts,
 * each channel's value carried in acc from part to part.  A bin's value
 * is the mean of its samples (the sum over their count, at least 1), or
 * the largest; 0 for an empty grid. */
static void roi_pool(const xf_node *n, const xf_tensor_view *x, const xf_tensor_view *y, int64_t r, int64_t b,
                     const roi_geometry *g, roi_sample *sp, roi_tap_f32 *tp, double *acc)
{
    int64_t channels = x->shape.dims[1], h = x->shape.dims[2], w = x->shape.dims[3];
    int64_t ow = n->attrs.roi_output_w, bins = n->attrs.roi_output_h * ow, per_bin = g->grid_h * g->grid_w;
    bool max = n->attrs.roi_max, single = x->dtype != XF_DT_DOUBLE;
    double count = per_bin > 1 ? (double)per_bin : 1.0;
    int64_t run = per_bin <= ROI_SAMPLES_AT_ONCE ? ROI_SAMPLES_AT_ONCE / (per_bin > 1 ? per_bin : 1) : 1;
    run = run < roi_run_limit(channels) ? run : roi_run_limit(channels);
    for (int64_t bin0 = 0; bin0 < bins; bin0 += run) {
        int64_t n_bins = bins - bin0 < run ? bins - bin0 : run;
        for (int64_t i = 0; i < n_bins * channels; i++)
            acc[i] = 0;
        for (int64_t first = 0; first < n_bins * per_bin; first += ROI_SAMPLES_AT_ONCE) {
            int64_t part = n_bins * per_bin - first < ROI_SAMPLES_AT_ONCE ? n_bins * per_bin - first
                                                                           : ROI_SAMPLES_AT_ONCE;
            roi_samples(g, ow, h, w, single, bin0, first, part, sp);
            if (x->dtype == XF_DT_FLOAT && !max && n_bins > 1 && h * w <= INT32_MAX) { /* whole bins */
                for (int64_t k = 0; k < part; k++)
                    for (int t = 0; t < 4; t++) {
                        tp[k].pos[t] = (int32_t)sp[k].pos[t];
                        tp[k].w[t] = (float)sp[k].w[t];
                    }
                const float *maps = (const float *)x->data + b * channels * h * w;
                for (int64_t ch = 0; ch < channels; ch++)
                    roi_sum_bins_f32(maps + ch * h * w, tp, n_bins, per_bin, acc + ch * n_bins);
                continue;
            }
            for (int64_t ch = 0; ch < channels; ch++)
                for (int64_t i = 0; i < n_bins; i++) {
                    int64_t from = n_bins > 1 ? i * per_bin : 0, take = n_bins > 1 ? per_bin : part;
                    acc[ch * n_bins + i] = roi_take(x, b, ch, sp + from, take, max, n_bins > 1 ? 0 : first,
                                                    acc[ch * n_bins + i]);
                }
        }
        for (int64_t ch = 0; ch < channels; ch++)
            for (int64_t i = 0; i < n_bins; i++) {
                double v = max ? acc[ch * n_bins + i] : rnd(single, acc[ch * n_bins + i] / count);
                xf_rt_store_f64(y->dtype, y->data, (r * channels + ch) * bins + bin0 + i, v);
            }
    }
}

/* RoiAlign: Y[r, c] is the output_height x output_width bins of ROI r
 * (x1, y1, x2, y2, times spatial_scale) over channel c of image
 * batch_indices[r]. */
xf_status xf_ref_roi_align(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err)
{
    const xf_attrs *a = &n->attrs;
    const xf_tensor_view *x = &in[0], *rois = &in[1], *idx = &in[2], *y = &out[0];
    const xf_shape *xs = &x->shape;
    int64_t r_count = rois->shape.dims[0];
    if (xs->ndim != 4 || rois->shape.ndim != 2 || rois->shape.dims[1] != 4 || idx->shape.ndim != 1 ||
        idx->shape.dims[0] != r_count || rois->dtype != x->dtype || idx->dtype != XF_DT_INT64)
        return xf_rt_bad_node(err, n, "operands are not X [N, C, H, W], rois [R, 4] of X's type and "
                                      "batch_indices [R] of int64");
    int64_t channels = xs->dims[1], oh = a->roi_output_h, ow = a->roi_output_w;
    xf_shape want = {.ndim = 4, .dims = {r_count, channels, oh, ow}};
    if (!xf_shape_equal(&y->shape, &want) || oh < 1 || ow < 1)
        return xf_rt_bad_node(err, n, "the output is not [R, C, output_height, output_width]");
    if (r_count > 0 && channels > 0 && (xs->dims[2] == 0 || xs->dims[3] == 0))
        return xf_rt_bad_node(err, n, "there are ROIs to pool but X's feature maps are empty");
    if (x->dtype != XF_DT_FLOAT && x->dtype != XF_DT_DOUBLE)
        return xf_rt_bad_node(err, n, "X is %s, not float or double", xf_dtype_name(x->dtype));
    bool single = x->dtype != XF_DT_DOUBLE;
    double *acc = malloc(sizeof *acc * (size_t)(channels > 0 ? channels : 1) * (size_t)roi_run_limit(channels));
    roi_sample *sp = malloc(sizeof *sp * ROI_SAMPLES_AT_ONCE);
    roi_tap_f32 *tp = malloc(sizeof *tp * ROI_SAMPLES_AT_ONCE);
    if (!acc || !sp || !tp) {
        free(acc);
        free(sp);
        free(tp);
        return xf_error_set(err, XF_ERR_NOMEM, "out of memory in RoiAlign");
    }
    xf_status st = XF_OK;
    for (int64_t r = 0; r < r_count && st == XF_OK; r++) {
        int64_t b = xf_rt_load_i64(idx->dtype, idx->data, r);
        roi_geometry g = {0};
        if (b < 0 || b >= xs->dims[0])
            st = xf_rt_bad_node(err, n, "batch index %lld of ROI %lld is out of range for %lld images",
                                (long long)b, (long long)r, (long long)xs->dims[0]);
        else
            st = roi_geometry_make(n, rois, r, single, &g, err);
        if (st == XF_OK)
            roi_pool(n, x, y, r, b, &g, sp, tp, acc);
    }
    free(acc);
    free(sp);
    free(tp);
    return st;
}

/* MaxRoiPool: Y[r, c] is the pooled_shape bins of ROI r (batch index, x1,
 * y1, x2, y2; the corners times spatial_scale, rounded half away from
 * zero, a malformed ROI at least one pixel) over channel c of its image,
 * each bin the maximum of the pixels it covers (floor of its start, ceil
 * of its end, clipped to X), 0 for a bin covering none.  As ONNX's
 * reference: the scaling and the bin size are float on float tensors, the
 * batch index truncated; a NaN in a bin gives NaN. */
xf_status xf_ref_max_roi_pool(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err)
{
    const xf_attrs *a = &n->attrs;
    const xf_tensor_view *x = &in[0], *rois = &in[1], *y = &out[0];
    const xf_shape *xs = &x->shape;
    int64_t r_count = rois->shape.dims[0], channels = xs->dims[1], ph = a->roi_output_h, pw = a->roi_output_w;
    xf_shape want = {.ndim = 4, .dims = {r_count, channels, ph, pw}};
    if (xs->ndim != 4 || rois->shape.ndim != 2 || rois->shape.dims[1] != 5 || !xf_shape_equal(&y->shape, &want) ||
        ph < 1 || pw < 1)
        return xf_rt_bad_node(err, n, "operands are not X [N, C, H, W], rois [R, 5] and Y [R, C, pooled_shape]");
    bool single = x->dtype != XF_DT_DOUBLE;
    int64_t h = xs->dims[2], w = xs->dims[3];
    double scale = rnd(single, a->roi_spatial_scale);
    for (int64_t r = 0; r < r_count; r++) {
        double c[5];
        for (int k = 0; k < 5; k++) {
            c[k] = rnd(single, xf_rt_load_f64(rois->dtype, rois->data, r * 5 + k));
            if (k > 0)
                c[k] = round(rnd(single, c[k] * scale));
            if (!isfinite(c[k]))
                return xf_rt_bad_node(err, n, "ROI %lld has a value that is not finite (after spatial_scale)",
                                      (long long)r);
        }
        double b = trunc(c[0]);
        if (!(b >= 0 && b < (double)xs->dims[0]))
            return xf_rt_bad_node(err, n, "batch index %g of ROI %lld is out of range for %lld images", b,
                                  (long long)r, (long long)xs->dims[0]);
        double roi_w = fmax(c[3] - c[1] + 1, 1), roi_h = fmax(c[4] - c[2] + 1, 1);
        double bin_h = rnd(single, roi_h / (double)ph), bin_w = rnd(single, roi_w / (double)pw);
        for (int64_t i = 0; i < ph; i++)
            for (int64_t j = 0; j < pw; j++) {
                double y0 = fmin(fmax(floor(rnd(single, (double)i * bin_h)) + c[2], 0), (double)h);
                double y1 = fmin(fmax(ceil(rnd(single, (double)(i + 1) * bin_h)) + c[2], 0), (double)h);
                double x0 = fmin(fmax(floor(rnd(single, (double)j * bin_w)) + c[1], 0), (double)w);
                double x1 = fmin(fmax(ceil(rnd(single, (double)(j + 1) * bin_w)) + c[1], 0), (double)w);
                for (int64_t ch = 0; ch < channels; ch++) {
                    int64_t base = ((int64_t)b * channels + ch) * h * w;
                    double m = y1 <= y0 || x1 <= x0 ? 0.0 : -INFINITY;
                    for (int64_t yy = (int64_t)y0; yy < (int64_t)y1; yy++)
                        for (int64_t xx = (int64_t)x0; xx < (int64_t)x1; xx++) {
                            double v = xf_rt_load_f64(x->dtype, x->data, base + yy * w + xx);
                            m = isnan(v) || v > m ? v : m;
                        }
                    xf_rt_store_f64(y->dtype, y->data, ((r * channels + ch) * ph + i) * pw + j, m);
                }
            }
    }
    return XF_OK;
}

/* NonMaxSuppression: the selected [batch, class, box] triples, as many as
 * shape inference counted for the output. */
xf_status xf_ref_nms(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err)
{
    xf_tensor t[5];
    const xf_tensor *operands[5] = {NULL};
    for (int i = 0; i < n->n_inputs && i < 5; i++) {
        if (!xf_rt_present(&in[i]))
            continue;
        t[i] = (xf_tensor){.refcount = 1, .dtype = in[i].dtype, .shape = in[i].shape, .data = in[i].data,
                           .nbytes = xf_rt_bytes(&in[i])};
        operands[i] = &t[i];
    }
    char why[300];
    xf_nms_problem p;
    if (!xf_nms_problem_init(&p, operands, n->attrs.center_point_box, why, sizeof why))
        return xf_rt_bad_node(err, n, "%s", why);
    const xf_shape *ys = &out[0].shape;
    if (ys->ndim != 2 || ys->dims[1] != 3 || out[0].dtype != XF_DT_INT64)
        return xf_rt_bad_node(err, n, "the output is not int64 [selected, 3]");
    int64_t count = xf_nms_select(&p, out[0].data, ys->dims[0]);
    if (count < 0)
        return xf_error_set(err, XF_ERR_NOMEM, "out of memory in NonMaxSuppression");
    if (count != ys->dims[0])
        return xf_rt_bad_node(err, n, "selects %lld boxes, not the %lld its output shape holds", (long long)count,
                              (long long)ys->dims[0]);
    return XF_OK;
}
