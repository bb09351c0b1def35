/* ConvInteger and QLinearConv whose weights have zero points, or are
 * uint8 (xf_dn_qconv_fix_prepare): oneDNN 2.6's convolution takes no zero
 * point for its weights, so it sums (x - x_zp) (w - d), and per image and
 * group a loop after it subtracts d times each window's sum of x - x_zp
 * (then adds QLinearConv's bias, scales and requantizes, as cpu_ref
 * does).  Those window sums are separable: the group's channels summed
 * per position (x plain or channels-last), then box sums along D, H and W
 * in turn (the taps inside x; padding reads x_zp, 0 once subtracted).
 * All in the int32 ring, as cpu_ref wraps; loops the compiler vectorizes
 * for the CPU found at run time (target clones). */
#include "cpu_dnnl.h"

#include <stdlib.h>
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

/* s[p] = start + the sum of the count bytes of row p (rows step apart):
 * a group's channels of a channels-last x, uint8 or int8 */
QC_CLONES static void sum_rows_u8(const uint8_t *restrict x, int64_t step, int64_t count, int64_t rows, uint32_t start,
                                  uint32_t *restrict s)
{
    for (int64_t p = 0; p < rows; p++) {
        uint32_t acc = start;
        for (int64_t c = 0; c < count; c++)
            acc += x[p * step + c];
        s[p] = acc;
    }
}

QC_CLONES static void sum_rows_s8(const int8_t *restrict x, int64_t step, int64_t count, int64_t rows, uint32_t start,
                                  uint32_t *restrict s)
{
    for (int64_t p = 0; p < rows; p++) {
        uint32_t acc = start;
        for (int64_t c = 0; c < count; c++)
            acc += (uint32_t)(int32_t)x[p * step + c];
        s[p] = acc;
    }
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

/* The groups of convolution n and the input and output channels of each
 * (x in[0], w in[1]). */
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

/* Whether the window along axis is one tap of stride 1 over all of it. */
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

/* The inputs ConvInteger's and QLinearConv's correction reads (-1: none). */
typedef struct fix_roles {
    int w, x_zp, w_zp, bias, x_scale, w_scale, y_scale, y_zp;
} fix_roles;

static fix_roles roles(const xf_node *n)
{
    return n->op == XF_OP_QLINEAR_CONV ? (fix_roles){3, 2, 5, 8, 1, 4, 6, 7} : (fix_roles){1, 2, 3, -1, -1, -1, -1, -1};
}

static const xf_tensor_view *input(const xf_node *n, const xf_tensor_view *in, int k)
{
    return k >= 0 && k < n->n_inputs && xf_rt_present(&in[k]) ? &in[k] : NULL;
}

/* What a node's correction keeps (xf_dn_node.own): QLinearConv's int32
 * sums, which oneDNN writes channels-last, its scales per output channel
 * (x_scale w_scale / y_scale in float, as cpu_ref computes them) and
 * whether its output is stored channels-last; whether x is; the windows'
 * sums' room. */
typedef struct qconv_fix {
    int32_t *sums;
    float *scale;
    bool out_nhwc, x_nhwc;
    uint32_t *room;
} qconv_fix;

static void fix_free(void *p)
{
    qconv_fix *f = p;
    if (!f)
        return;
    free(f->sums);
    free(f->scale);
    free(f->room);
    free(f);
}

/* Where in one image and group's room the sums after D's, H's and W's
 * box sums are: an axis whose window is one tap of stride 1 over all of
 * it (a 2-D convolution's D, a 1x1's H and W) passes its sums on. */
static void pass_offsets(const xf_rt_window *w, int64_t off[3])
{
    int64_t in_sp = w->in[0] * w->in[1] * w->in[2], by_d = w->out[0] * w->in[1] * w->in[2];
    off[0] = identity(w, 0) ? 0 : in_sp;
    off[1] = identity(w, 1) ? off[0] : in_sp + by_d;
    off[2] = identity(w, 2) ? off[1] : in_sp + by_d + w->out[0] * w->out[1] * w->in[2];
}

/* Each output's window sum of x - x_zp over a group's cg channels, x at
 * the group's first channel of one image (channels-last when step, the
 * channels of a pixel, is not 0), into room (returned: where they are). */
static const uint32_t *window_sums(const xf_rt_window *w, const uint8_t *x, int64_t step, bool x8, uint32_t zx,
                                   int64_t cg, uint32_t *room)
{
    int64_t in_sp = w->in[0] * w->in[1] * w->in[2], off[3];
    pass_offsets(w, off);
    uint32_t start = 0u - (uint32_t)cg * zx, *by_d = room + off[0], *by_h = room + off[1], *t = room + off[2];
    if (step && x8)
        sum_rows_s8((const int8_t *)x, step, cg, in_sp, start, room);
    else if (step)
        sum_rows_u8(x, step, cg, in_sp, start, room);
    for (int64_t p = 0; !step && p < in_sp; p++)
        room[p] = start;
    for (int64_t ch = 0; !step && ch < cg; ch++, x += in_sp)
        if (x8)
            add_s8(room, (const int8_t *)x, in_sp);
        else
            add_u8(room, x, in_sp);
    if (!identity(w, 0))
        box_axis(room, by_d, w->in[0], w->out[0], w->in[1] * w->in[2], w->k[0], w->stride[0], w->pad_begin[0],
                 w->dil[0]);
    for (int64_t d = 0; !identity(w, 1) && d < w->out[0]; d++)
        box_axis(by_d + d * w->in[1] * w->in[2], by_h + d * w->out[1] * w->in[2], w->in[1], w->out[1], w->in[2],
                 w->k[1], w->stride[1], w->pad_begin[1], w->dil[1]);
    if (!identity(w, 2))
        box_rows(by_h, t, w->out[0] * w->out[1], w->in[2], w->out[2], w->k[2], w->stride[2], w->pad_begin[2],
                 w->dil[2]);
    return t;
}

/* d for output channel oc: the weights' zero point (0 when absent), less
 * 128 for uint8 weights read as int8. */
static uint32_t zp_shift(const xf_tensor_view *zw, bool u8w, int64_t oc)
{
    int64_t z = zw ? xf_rt_load_i64(zw->dtype, zw->data, xf_rt_numel(zw) > 1 ? oc : 0) : 0;
    return (uint32_t)z - (u8w ? 128u : 0u);
}

/* One pixel of QLinearConv's output from its channels-last sums: per
 * output channel m, sum - off[m] (d t, less the bias), scaled and
 * requantized (xf_dn_requantize) into q[m]. */
QC_CLONES static void requantize_pixel(const uint32_t *restrict sums, const uint32_t *restrict off,
                                       const float *restrict scale, float zp, float lo, float hi, int64_t count,
                                       int32_t *restrict q)
{
    for (int64_t m = 0; m < count; m++)
        q[m] = (int32_t)xf_dn_requantize((float)(int32_t)(sums[m] - off[m]) * scale[m], zp, lo, hi);
}

/* off[m] = d[m] t - b[m] */
QC_CLONES static void offsets(const uint32_t *restrict d, const uint32_t *restrict b, uint32_t t, int64_t count,
                              uint32_t *restrict off)
{
    for (int64_t m = 0; m < count; m++)
        off[m] = d[m] * t - b[m];
}

QC_CLONES static void narrow_u8(const int32_t *restrict q, uint8_t *restrict y, int64_t count)
{
    for (int64_t m = 0; m < count; m++)
        y[m] = (uint8_t)q[m];
}

QC_CLONES static void narrow_s8(const int32_t *restrict q, int8_t *restrict y, int64_t count)
{
    for (int64_t m = 0; m < count; m++)
        y[m] = (int8_t)q[m];
}

/* Pixels [p0, p1) of QLinearConv's output from the channels-last sums:
 * per pixel and output channel, sum - d t (t of the channel's group) +
 * bias (d[m], b[m]), requantized, stored as the output is; work holds 2
 * m_all elements. */
static void requantize_pixels(const xf_node *n, const qconv_fix *f, const xf_tensor_view *in, const xf_tensor_view *out,
                              int64_t image, const uint32_t *const *t, int64_t out_sp, int64_t mg, const uint32_t *d,
                              const uint32_t *b, int64_t p0, int64_t p1, uint32_t *work)
{
    const xf_tensor_view *zy = input(n, in, roles(n).y_zp);
    int64_t m_all = out[0].shape.dims[1];
    bool u8 = out[0].dtype == XF_DT_UINT8;
    float zp = zy ? (float)xf_rt_load_i64(zy->dtype, zy->data, 0) : 0.0f, lo = u8 ? 0.0f : -128.0f;
    float hi = u8 ? 255.0f : 127.0f;
    uint32_t *off = work;
    int32_t *q = (int32_t *)(work + m_all);
    const uint32_t *sums = (const uint32_t *)f->sums + image * out_sp * m_all;
    for (int64_t p = p0; p < p1; p++) {
        for (int64_t g0 = 0; g0 * mg < m_all; g0++)
            offsets(d + g0 * mg, b + g0 * mg, t[g0][p], mg, off + g0 * mg);
        requantize_pixel(sums + p * m_all, off, f->scale, zp, lo, hi, m_all, q);
        if (f->out_nhwc && u8)
            narrow_u8(q, (uint8_t *)out[0].data + (image * out_sp + p) * m_all, m_all);
        else if (f->out_nhwc)
            narrow_s8(q, (int8_t *)out[0].data + (image * out_sp + p) * m_all, m_all);
        for (int64_t m = 0, at = image * m_all * out_sp + p; !f->out_nhwc && m < m_all; m++)
            if (u8)
                ((uint8_t *)out[0].data)[at + m * out_sp] = (uint8_t)q[m];
            else
                ((int8_t *)out[0].data)[at + m * out_sp] = (int8_t)q[m];
    }
}

static xf_status fix_run(const xf_node *n, const xf_dn_node *st, const xf_tensor_view *in, const xf_tensor_view *out,
                         xf_error *err)
{
    const qconv_fix *f = st->own;
    fix_roles r = roles(n);
    xf_tensor_view io[2] = {in[0], in[r.w]};
    xf_rt_window w;
    xf_status s = window_of(n, io, out, &w, err);
    if (s != XF_OK)
        return s;
    int64_t groups, cg, mg, in_sp = w.in[0] * w.in[1] * w.in[2], out_sp = w.out[0] * w.out[1] * w.out[2];
    conv_groups(n, io, &groups, &cg, &mg);
    const xf_tensor_view *zx = input(n, in, r.x_zp), *zw = input(n, in, r.w_zp);
    uint32_t zx_v = zx ? (uint32_t)xf_rt_load_i64(zx->dtype, zx->data, 0) : 0;
    bool x8 = in[0].dtype == XF_DT_INT8, u8w = in[r.w].dtype == XF_DT_UINT8;
    int64_t images = in[0].shape.dims[0], c_in = in[0].shape.dims[1], c_out = in[r.w].shape.dims[0];
    int64_t room = room_of(&w), off[3];
    pass_offsets(&w, off);
    XF_OMP_FOR(images * groups > 1 && in_sp * cg * mg >= 1 << 14)
    for (int64_t b = 0; b < images * groups; b++) {
        int64_t image = b / groups, g0 = b % groups;
        const uint8_t *x = (const uint8_t *)in[0].data +
                           (f->x_nhwc ? image * in_sp * c_in + g0 * cg : (image * c_in + g0 * cg) * in_sp);
        const uint32_t *t = window_sums(&w, x, f->x_nhwc ? c_in : 0, x8, zx_v, cg, f->room + b * room);
        for (int64_t m = 0; !f->sums && m < mg; m++) {
            int64_t oc = g0 * mg + m;
            sub_scaled((uint32_t *)out[0].data + (image * c_out + oc) * out_sp, t, zp_shift(zw, u8w, oc), out_sp);
        }
    }
    if (!f->sums)
        return XF_OK;
    /* QLinearConv: its pixels in parts over OpenMP's threads, each with
     * its own room for a pixel's channels */
    int64_t size, chunks = xf_dn_chunks(out_sp * c_out, &size);
    size = (size + c_out - 1) / c_out;
    const uint32_t **t = malloc(sizeof *t * (size_t)groups);
    uint32_t *work = malloc(sizeof *work * (size_t)(2 + 2 * chunks) * (size_t)c_out), *d = work, *b = work + c_out;
    const xf_tensor_view *bias = input(n, in, r.bias);
    for (int64_t m = 0; work && m < c_out; m++) {
        d[m] = zp_shift(zw, u8w, m);
        b[m] = bias ? (uint32_t)((const int32_t *)bias->data)[m] : 0u;
    }
    for (int64_t image = 0; t && work && image < images; image++) {
        for (int64_t g0 = 0; g0 < groups; g0++)
            t[g0] = f->room + (image * groups + g0) * room + off[2];
        XF_OMP_FOR(chunks > 1)
        for (int64_t k = 0; k < chunks; k++)
            requantize_pixels(n, f, in, out, image, t, out_sp, mg, d, b, k * size < out_sp ? k * size : out_sp,
                              (k + 1) * size < out_sp ? (k + 1) * size : out_sp, work + (2 + 2 * k) * c_out);
    }
    bool ok = t && work;
    free(t);
    free(work);
    return ok ? XF_OK : xf_error_set(err, XF_ERR_NOMEM, "out of memory in %s", xf_op_name(n->op));
}

xf_status xf_dn_qconv_fix_prepare(xf_dn_ctx *c, const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out,
                                  xf_dn_node *st, xf_dn_conv_io *io, xf_error *err)
{
    fix_roles r = roles(n);
    const xf_tensor_view *w = &in[r.w];
    xf_tensor_view wio[2] = {in[0], *w};
    xf_rt_window win;
    xf_status s = window_of(n, wio, out, &win, err);
    if (s != XF_OK)
        return s;
    int64_t groups, cg, mg, count = xf_rt_numel(w), m_all = w->shape.dims[0];
    conv_groups(n, wio, &groups, &cg, &mg);
    qconv_fix *f = calloc(1, sizeof *f);
    if (f)
        f->room = malloc(sizeof *f->room * (size_t)(in[0].shape.dims[0] * groups * room_of(&win)));
    bool q = n->op == XF_OP_QLINEAR_CONV, ok = f && f->room;
    if (ok && q) {
        f->sums = malloc(sizeof *f->sums * (size_t)(xf_rt_numel(&out[0]) > 0 ? xf_rt_numel(&out[0]) : 1));
        f->scale = malloc(sizeof *f->scale * (size_t)m_all);
        ok = f->sums && f->scale;
        for (int64_t m = 0; ok && m < m_all; m++) {
            const xf_tensor_view *ws = &in[r.w_scale];
            float wsm = ((const float *)ws->data)[xf_rt_numel(ws) > 1 ? m : 0];
            f->scale[m] = *(const float *)in[r.x_scale].data * wsm / *(const float *)in[r.y_scale].data;
        }
        f->out_nhwc = xf_dn_value_layout(c, n->outputs[0]) == XF_DN_NATIVE;
    }
    if (f)
        f->x_nhwc = xf_dn_value_layout(c, n->inputs[0]) == XF_DN_NATIVE;
    free(st->folded_w);
    st->folded_w = NULL;
    if (ok && w->dtype == XF_DT_UINT8) {
        int8_t *flipped = malloc((size_t)(count > 0 ? count : 1));
        if (flipped)
            xf_dn_flip_bytes(w->data, flipped, count);
        st->folded_w = (float *)(void *)flipped;
        ok = flipped != NULL;
    }
    if (st->own_free)
        st->own_free(st->own);
    st->own = f;
    st->own_free = fix_free;
    if (!ok)
        return xf_error_set(err, XF_ERR_NOMEM, "out of memory in %s", xf_op_name(n->op));
    /* QLinearConv: int32 sums, channels-last, its bias added with them */
    if (q) {
        io->dst = dnnl_s32;
        io->bias = -1;
        io->dst_sums = f->sums;
    }
    st->post = fix_run;
    return XF_OK;
}
