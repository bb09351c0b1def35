/* The correction of ConvInteger's int32 sums for its weights' zero point
 * (xf_dn_conv_zp_fix): oneDNN 2.6's convolution takes none, so it sums
 * (x - x_zp) (w - d), and per image and group this subtracts d times each
 * window's sum of x - x_zp.  Those sums are separable: the group's
 * channels summed per position, then box sums along W, H and D in turn
 * (the taps inside x; padding reads x_zp, 0 once subtracted).  All in the
 * int32 ring, as cpu_ref wraps; loops the compiler vectorizes for the CPU
 * found at run time (target clones). */
#include "cpu_dnnl.h"

#include <string.h>

#if defined(__GNUC__) && defined(__x86_64__) && !defined(__clang__)
#define QC_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define QC_CLONES
#endif

/* s[p] += x[p], x uint8 or (sign) int8 bytes */
QC_CLONES static void add_u8(uint32_t *restrict s, const uint8_t *restrict x, int64_t count)
{
    for (int64_t p = 0; p < count; p++)
        s[p] += x[p];
}

QC_CLONES static void add_s8(uint32_t *restrict s, const int8_t *restrict x, int64_t count)
{
    for (int64_t p = 0; p < count; p++)
        s[p] += (uint32_t)(int32_t)x[p];
}

/* to[j * inner + i] = the sum over taps k of from[(j s - pad + k dil) inner + i]
 * inside [0, n_in), for j < n_out: one axis's box sums, rows of inner
 * elements. */
QC_CLONES static void box_axis(const uint32_t *restrict from, uint32_t *restrict to, int64_t n_in, int64_t n_out,
                               int64_t inner, int64_t k, int64_t s, int64_t pad, int64_t dil)
{
    for (int64_t j = 0; j < n_out; j++) {
        uint32_t *row = to + j * inner;
        memset(row, 0, sizeof *row * (size_t)inner);
        for (int64_t t = 0; t < k; t++) {
            int64_t at = j * s - pad + t * dil;
            if (at < 0 || at >= n_in)
                continue;
            const uint32_t *src = from + at * inner;
            for (int64_t i = 0; i < inner; i++)
                row[i] += src[i];
        }
    }
}

/* The same along the innermost axis, rows of n_in elements into rows of
 * n_out: each tap over the outputs it lands inside for. */
QC_CLONES static void box_rows(const uint32_t *restrict from, uint32_t *restrict to, int64_t rows, int64_t n_in,
                               int64_t n_out, int64_t k, int64_t s, int64_t pad, int64_t dil)
{
    memset(to, 0, sizeof *to * (size_t)(rows * n_out));
    for (int64_t t = 0; t < k; t++) {
        int64_t off = t * dil - pad;
        /* the j with 0 <= j s + off < n_in */
        int64_t lo = off >= 0 ? 0 : (s - 1 - off) / s, hi = n_in > off ? (n_in - off + s - 1) / s : 0;
        hi = hi < n_out ? hi : n_out;
        for (int64_t r = 0; r < rows; r++) {
            uint32_t *row = to + r * n_out;
            int64_t base = r * n_in + off;
            for (int64_t j = lo; j < hi; j++)
                row[j] += from[base + j * s];
        }
    }
}

/* y[p] -= d t[p] */
QC_CLONES static void sub_scaled(uint32_t *restrict y, const uint32_t *restrict t, uint32_t d, int64_t count)
{
    for (int64_t p = 0; p < count; p++)
        y[p] -= d * t[p];
}

/* The groups and their channels of ConvInteger n (x in[0], w in[1]). */
static void conv_groups(const xf_node *n, const xf_tensor_view *in, int64_t *groups, int64_t *cg, int64_t *mg)
{
    *groups = n->attrs.group > 0 ? n->attrs.group : 1;
    *cg = in[0].shape.dims[1] / *groups;
    *mg = in[1].shape.dims[0] / *groups;
}

/* The uint32 elements one image and group uses: the channel sums (in),
 * after D's box sums (out0 in1 in2), after H's (out0 out1 in2), then W's
 * (out): the outer axes first, which shrink what the strided one reads. */
static int64_t room_of(const xf_rt_window *w)
{
    return w->in[0] * w->in[1] * w->in[2] + w->out[0] * w->in[1] * w->in[2] + w->out[0] * w->out[1] * w->in[2] +
           w->out[0] * w->out[1] * w->out[2];
}

static bool identity(const xf_rt_window *w, int axis)
{
    return w->k[axis] == 1 && w->stride[axis] == 1 && w->pad_begin[axis] == 0 && w->in[axis] == w->out[axis];
}

/* n's window with its axes last, the ones it lacks first as one tap
 * over one element: W is always axis 2, whose box sums box_rows takes. */
static xf_status window_of(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_rt_window *w,
                           xf_error *err)
{
    const xf_shape *xs = &in[0].shape, *ws = &in[1].shape;
    int64_t kernel[XF_MAX_SPATIAL] = {0};
    int ns = xs->ndim - 2;
    for (int i = 0; i < ns && i < XF_MAX_SPATIAL; i++)
        kernel[i] = ws->dims[2 + i];
    xf_status s = xf_rt_window_setup(n, xs, &out[0].shape, kernel, w, err);
    for (int i = XF_MAX_SPATIAL - 1; s == XF_OK && i >= 0; i--) {
        int from = i - (XF_MAX_SPATIAL - ns);
        bool real = from >= 0;
        w->in[i] = real ? w->in[from] : 1;
        w->out[i] = real ? w->out[from] : 1;
        w->k[i] = real ? w->k[from] : 1;
        w->stride[i] = real ? w->stride[from] : 1;
        w->dil[i] = real ? w->dil[from] : 1;
        w->pad_begin[i] = real ? w->pad_begin[from] : 0;
        w->pad_end[i] = real ? w->pad_end[from] : 0;
    }
    return s;
}

int64_t xf_dn_conv_zp_room(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out)
{
    xf_rt_window w;
    xf_error ignored;
    int64_t groups, cg, mg;
    conv_groups(n, in, &groups, &cg, &mg);
    return window_of(n, in, out, &w, &ignored) == XF_OK ? in[0].shape.dims[0] * groups * room_of(&w) : 0;
}

xf_status xf_dn_conv_zp_fix(const xf_node *n, const xf_dn_node *st, const xf_tensor_view *in,
                            const xf_tensor_view *out, xf_error *err)
{
    xf_rt_window w;
    xf_status s = window_of(n, in, out, &w, err);
    if (s != XF_OK)
        return s;
    int64_t groups, cg, mg, in_sp = w.in[0] * w.in[1] * w.in[2], out_sp = w.out[0] * w.out[1] * w.out[2];
    conv_groups(n, in, &groups, &cg, &mg);
    bool x8 = in[0].dtype == XF_DT_INT8, u8w = in[1].dtype == XF_DT_UINT8;
    uint32_t zx = n->n_inputs > 2 && xf_rt_present(&in[2]) ? (uint32_t)xf_rt_load_i64(in[2].dtype, in[2].data, 0) : 0;
    const xf_tensor_view *zw = n->n_inputs > 3 && xf_rt_present(&in[3]) ? &in[3] : NULL;
    bool per = zw && xf_rt_numel(zw) > 1;
    int64_t images = in[0].shape.dims[0], c_in = in[0].shape.dims[1], c_out = in[1].shape.dims[0];
    XF_OMP_FOR(images * groups > 1 && in_sp * cg * mg >= 1 << 14)
    for (int64_t b = 0; b < images * groups; b++) {
        int64_t image = b / groups, g0 = b % groups;
        uint32_t *sum = (uint32_t *)st->scratch + b * room_of(&w);
        uint32_t *by_d = sum + in_sp, *by_h = by_d + w.out[0] * w.in[1] * w.in[2];
        uint32_t *t = by_h + w.out[0] * w.out[1] * w.in[2];
        const uint8_t *x = (const uint8_t *)in[0].data + (image * c_in + g0 * cg) * in_sp;
        uint32_t start = 0u - (uint32_t)cg * zx;
        for (int64_t p = 0; p < in_sp; p++)
            sum[p] = start;
        for (int64_t ch = 0; ch < cg; ch++, x += in_sp)
            if (x8)
                add_s8(sum, (const int8_t *)x, in_sp);
            else
                add_u8(sum, x, in_sp);
        /* D along planes, H along rows, then W; an axis whose window is
         * one tap of stride 1 over all of it (a 2-D one's D, a 1x1's H
         * and W) passes its sums on as they are */
        if (identity(&w, 0))
            by_d = sum;
        else
            box_axis(sum, by_d, w.in[0], w.out[0], w.in[1] * w.in[2], w.k[0], w.stride[0], w.pad_begin[0], w.dil[0]);
        if (identity(&w, 1))
            by_h = by_d;
        else
            for (int64_t d = 0; d < w.out[0]; d++)
                box_axis(by_d + d * w.in[1] * w.in[2], by_h + d * w.out[1] * w.in[2], w.in[1], w.out[1], w.in[2],
                         w.k[1], w.stride[1], w.pad_begin[1], w.dil[1]);
        if (identity(&w, 2))
            t = by_h;
        else
            box_rows(by_h, t, w.out[0] * w.out[1], w.in[2], w.out[2], w.k[2], w.stride[2], w.pad_begin[2], w.dil[2]);
        for (int64_t m = 0; m < mg; m++) {
            int64_t oc = g0 * mg + m;
            uint32_t d = (uint32_t)(zw ? xf_rt_load_i64(zw->dtype, zw->data, per ? oc : 0) : 0) - (u8w ? 128u : 0u);
            sub_scaled((uint32_t *)out[0].data + (image * c_out + oc) * out_sp, t, d, out_sp);
        }
    }
    return XF_OK;
}
