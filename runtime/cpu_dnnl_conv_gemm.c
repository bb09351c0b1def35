/* 1-D convolutions (group 1, the kernel 1 along all but the last spatial
 * axis) as products on oneDNN's sgemm, in two forms.
 *
 * One input channel (raw audio's first layer, an STFT or a resampler
 * written as a Conv): blocks of output positions copied into rows of the
 * taps they read (zeros where they fall in the padding), then the weights
 * [M, taps] times those rows into M output channels at once.  oneDNN's
 * convolution kernels vectorize over input channels, which one channel
 * leaves them without.  Measured on one thread (the convolution alone):
 * wav2vec2's first layer (512 channels, 10 taps, stride 5, a second of 16
 * kHz audio) 0.87 ms, 0.40 as products; Whisper's STFT as a Conv (402
 * channels of 400 taps over 30 s) 11.8 ms, 9.4; a 44.1 to 16 kHz
 * resampler's 475 taps at stride 441, 0.49 and 0.20.  Kernels of 3x3 to
 * 9x9 over one channel ran slower so (32 channels over 128 x 128: 0.25 ms
 * on oneDNN, 0.38; the rows repeat each tap in short runs), and stay.
 *
 * Several input channels, stride 1 (dilated stacks, HiFi-GAN's blocks,
 * pointwise ones): no copies; per tap t the weights [M, C] of that tap
 * times the input's C rows read from position t * dilation - pad on, each
 * product added into the block of output positions (shifted_pays).
 *
 * Operands plain (the layout plan keeps them so, xf_dn_conv_gemm_ok); the
 * bias and a ReLU in the loop, block by block; other post-ops (a fused
 * activation, what the fold plan added) as one eltwise primitive over the
 * output after.  A sum post-op leaves the convolution to oneDNN. */
#include "cpu_dnnl.h"

#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

/* From 3 taps on the products were as fast as oneDNN's kernels or faster
 * (3 taps, 64 channels, stride 1: 0.30 to 0.42 ms before, 0.25 to 0.30;
 * 512 channels, stride 2: 5.0 and 2.7 to 3.7).  A block holds 16 to 1024
 * positions, its rows at most 512 KiB and its product 1 MiB: Whisper's
 * 400 taps in blocks of 64 rows ran at 89 GFLOP/s, of 320 at 104, on
 * sgemm alone; 512 channels of 3 taps with a bias and a ReLU took 1.9 ms
 * in blocks of 1024 (4 MiB of product), 1.3 to 1.4 in blocks of 512, and
 * 512 of 10 taps with a bias 0.56 in blocks of 1024, 0.68 in blocks of
 * 256. */
enum { GEMM_MIN_TAPS = 3, GEMM_BLOCK_FLOATS = 1 << 17, GEMM_BLOCK_MIN = 16, GEMM_BLOCK_MAX = 1024 };

typedef struct conv_gemm {
    float *rows; /* per thread a block's rows, then its sums (gemm_run) */
    size_t rows_cap;
    int parts;
    bool relu;             /* the first post-op, in the loop */
    dnnl_primitive_t post; /* the rest, over the output in place */
    dnnl_memory_t post_mem;
    dnnl_stream_t stream;
    /* shifted products: the weights tap by tap, [taps][M][C], made once
     * where they are constant (const_weights), else every run */
    float *tap_w;
    size_t tap_w_cap;
    bool const_weights, tap_w_made;
} conv_gemm;

static void conv_gemm_free(void *own)
{
    conv_gemm *s = own;
    if (!s)
        return;
    free(s->rows);
    free(s->tap_w);
    dnnl_primitive_destroy(s->post);
    dnnl_memory_destroy(s->post_mem);
    free(s);
}

static int64_t prod3(const int64_t *d) { return d[0] * d[1] * d[2]; }

/* Whether the products beat oneDNN's kernel at these shapes; measured on
 * one thread, the convolution alone, oneDNN's time against the products':
 *   - a pad along the axis of an eighth of the kernel or more, which
 *     oneDNN's kernel runs slowly (a resampler's 475 taps at stride 441
 *     padded 17 and 458: 0.49 ms against 0.21 over 100 positions, 4.84
 *     against 1.61 over 1,000; 400 taps at stride 200 padded 200 at the
 *     end: 0.87 against 0.35);
 *   - else at least 256 positions over the batch (sgemm's columns; short
 *     images are taken together, run_block) and, past 64 taps, a stride
 *     over 1: 10 taps at stride 5, 512 channels, 3,200 positions 0.87
 *     against 0.40; 400 taps at stride 160, 3,000 positions, 11.8 against
 *     9.4; 1,000 positions 3.2 against 3.1; Silero VAD's 200 windows of 4
 *     positions 1.94 against 1.61; but 100 positions, 128 to 512 taps,
 *     0.04 to 0.47 ms against 0.05 to 0.63, and 251 taps at stride 1 over
 *     15,750 positions 6.0 against 6.3. */
static bool gemm_pays(const xf_node *n, const xf_shape *x, const xf_shape *w, const xf_shape *y)
{
    for (int d = 0; d < x->ndim; d++)
        if (x->dims[d] < 0 || y->dims[d] < 0)
            return true; /* sized at run time: prepare decides */
    int64_t kernel[XF_MAX_SPATIAL];
    for (int i = 2; i < w->ndim; i++)
        kernel[i - 2] = w->dims[i];
    xf_rt_window win;
    xf_error ignored;
    if (xf_rt_window_setup(n, x, y, kernel, &win, &ignored) != XF_OK)
        return false;
    int last = x->ndim - 3;
    int64_t taps = win.k[last], columns = xf_shape_numel(y) / (y->dims[1] > 0 ? y->dims[1] : 1);
    if (8 * win.pad_begin[last] >= taps || 8 * win.pad_end[last] >= taps)
        return true;
    return columns >= 256 && (taps <= 64 || win.stride[last] > 1);
}

/* Whether a convolution of several input channels runs as shifted
 * products: 1-D (every other spatial dim 1), stride 1 along it; at least
 * 64 channels in and out and 1,024 positions.  Measured on one thread,
 * the convolution alone, oneDNN's time against the products':
 *   - 128 channels, 3 taps at dilation 64 over 7,500 positions 8.7 ms
 *     against 7.0 (the spindle detector's; dilation 1: 9.1 against 7.1;
 *     its last, 128 to 64 channels at dilation 4,096, 12.0 against 3.3);
 *   - 256 channels over 2,000 positions 8.5 against 7.4; 256 of 3 taps at
 *     dilation 5 padded 5 over 8,000 (a HiFi-GAN block's) 33.1 against
 *     30.1;
 *   - 1x1: 128 to 64 channels over 7,500 positions 2.8 against 1.2, 512
 *     over 1,100 7.8 against 5.5;
 *   - a Conformer convolution module of 256 channels over 2,000 positions
 *     (pointwise, GLU, depthwise of 31 taps, BatchNorm, SiLU, pointwise),
 *     12.0 against 9.7 to 10.3, the depthwise one staying on oneDNN;
 *   - but 512 of 5 taps at dilation 2 over 400 positions 10.2 to 10.4
 *     against 9.8 to 11.1, and 80 of 5 taps over 3,000 1.88 against 1.88
 *     to 1.92. */
static bool shifted_pays(const xf_node *n, const xf_shape *x, const xf_shape *w, const xf_shape *y)
{
    int last = x->ndim - 1;
    for (int d = 2; d < last; d++)
        if (x->dims[d] != 1 || y->dims[d] != 1)
            return false;
    int64_t positions = y->dims[last];
    return n->attrs.strides[last - 2] == 1 && w->dims[0] >= 64 && w->dims[1] >= 64 &&
           (positions < 0 || positions >= 1024);
}

bool xf_dn_conv_gemm_ok(const xf_graph *g, const xf_node *n)
{
    if ((n->op != XF_OP_CONV && n->op != XF_OP_MS_FUSED_CONV) || n->attrs.group != 1 ||
        (n->op == XF_OP_MS_FUSED_CONV && xf_dn_input(n, 3) >= 0) || xf_dn_input(n, 1) < 0 || n->n_outputs != 1 ||
        n->outputs[0] < 0)
        return false;
    const xf_shape *w = &g->values[n->inputs[1]].shape, *x = &g->values[n->inputs[0]].shape;
    const xf_shape *y = &g->values[n->outputs[0]].shape;
    bool line = w->ndim >= 3 && x->ndim == w->ndim && y->ndim == w->ndim;
    for (int i = 2; i < w->ndim - 1; i++)
        line = line && w->dims[i] == 1;
    if (!line)
        return false;
    if (w->dims[1] > 1)
        return shifted_pays(n, x, w, y);
    return w->dims[w->ndim - 1] >= GEMM_MIN_TAPS && gemm_pays(n, x, w, y);
}

/* Taps t of line `line` (len values) from `start` on, every dil-th, into
 * dst: zeros outside the line. */
static void line_taps(const float *line, int64_t len, int64_t start, int64_t dil, int64_t k, float *dst)
{
    if (dil == 1 && start >= 0 && start + k <= len) {
        memcpy(dst, line + start, sizeof(float) * (size_t)k);
        return;
    }
    for (int64_t t = 0; t < k; t++) {
        int64_t i = start + t * dil;
        dst[t] = i >= 0 && i < len ? line[i] : 0.0f;
    }
}

/* The rows of output positions p0 .. p0 + count of one image x: per
 * position its taps in the weights' order. */
static void fill_rows(const xf_rt_window *w, const float *x, int64_t p0, int64_t count, int64_t taps, float *rows)
{
    int64_t o[3] = {p0 / (w->out[1] * w->out[2]), p0 / w->out[2] % w->out[1], p0 % w->out[2]};
    for (int64_t r = 0; r < count; r++) {
        float *row = rows + r * taps;
        for (int64_t k0 = 0; k0 < w->k[0]; k0++) {
            int64_t i0 = o[0] * w->stride[0] - w->pad_begin[0] + k0 * w->dil[0];
            for (int64_t k1 = 0; k1 < w->k[1]; k1++) {
                int64_t i1 = o[1] * w->stride[1] - w->pad_begin[1] + k1 * w->dil[1];
                float *dst = row + (k0 * w->k[1] + k1) * w->k[2];
                if (i0 < 0 || i0 >= w->in[0] || i1 < 0 || i1 >= w->in[1])
                    memset(dst, 0, sizeof(float) * (size_t)w->k[2]);
                else
                    line_taps(x + (i0 * w->in[1] + i1) * w->in[2], w->in[2], o[2] * w->stride[2] - w->pad_begin[2],
                              w->dil[2], w->k[2], dst);
            }
        }
        if (++o[2] == w->out[2]) {
            o[2] = 0;
            if (++o[1] == w->out[1]) {
                o[1] = 0;
                o[0]++;
            }
        }
    }
}

/* w with its ns spatial axes last (the missing ones first, of size 1):
 * fill_rows copies runs along the last. */
static void right_align(xf_rt_window *w, int ns)
{
    int64_t *axes[] = {w->in, w->out, w->k, w->stride, w->dil, w->pad_begin, w->pad_end};
    for (int a = 0; a < (int)(sizeof axes / sizeof *axes); a++)
        for (int i = XF_MAX_SPATIAL - 1; i >= 0; i--) {
            int from = i - (XF_MAX_SPATIAL - ns);
            axes[a][i] = from >= 0 ? axes[a][from] : a < 5 ? 1 : 0;
        }
}

/* The block's output channels (rows of ld values, count of them each)
 * plus the bias, through ReLU: one pass, while the product's block is in
 * cache (each case its own loop, which the compiler vectorizes for the
 * widest registers the machine has: with SSE's, 512 channels of 3 taps
 * spent 56% of their 1.4 ms here). */
__attribute__((target_clones("avx512f", "avx2", "default"))) static void
finish_block(float *y, int64_t ld, int64_t m_count, int64_t count, const float *bias, bool relu)
{
    for (int64_t m = 0; m < m_count; m++) {
        float *row = y + m * ld, b = bias ? bias[m] : 0.0f;
        if (bias && relu)
            for (int64_t p = 0; p < count; p++)
                row[p] = row[p] + b < 0.0f ? 0.0f : row[p] + b;
        else if (bias)
            for (int64_t p = 0; p < count; p++)
                row[p] += b;
        else if (relu)
            for (int64_t p = 0; p < count; p++)
                row[p] = row[p] < 0.0f ? 0.0f : row[p];
    }
}

/* What every block of a run reads: the geometry, the operands, and the
 * blocks' shape.  An image of `positions` outputs at least `block` long
 * (or the only image) goes in blocks of `block` positions, multiplied
 * straight into the output; shorter ones of a batch (a sequence of Silero
 * VAD's windows, 4 positions each) go `group` images at a time, their
 * rows together, the product into `sums` and then copied out image by
 * image. */
typedef struct gemm_run {
    xf_rt_window w;
    const float *x, *wt, *bias;
    float *y;
    int64_t taps, positions, m_count, batch, block, group, per_image;
    size_t part_floats; /* each thread's rows (block * taps), then its sums */
    bool relu;
    /* shifted products (several input channels): per tap, the weights
     * [M][C] times the input's C rows from the tap's offset on */
    bool shifted;
    int64_t channels, in_len, pad, dil;
    const float *tap_w;
} gemm_run;

/* The block's output channels start as the bias (or zero). */
static void start_block(float *y, int64_t ld, int64_t m_count, int64_t count, const float *bias)
{
    for (int64_t m = 0; m < m_count; m++) {
        float *row = y + m * ld, b = bias ? bias[m] : 0.0f;
        for (int64_t p = 0; p < count; p++)
            row[p] = b;
    }
}

/* Block j of shifted products: output positions p0 .. p0 + count of one
 * image, each tap adding its weights times the input rows shifted by
 * t * dil - pad, over the positions whose input falls inside the row
 * (the padding adds nothing). */
static bool shifted_block(const gemm_run *r, int64_t j)
{
    int64_t b = j / r->per_image, p0 = j % r->per_image * r->block, m_count = r->m_count, len = r->in_len;
    int64_t count = r->positions - p0 < r->block ? r->positions - p0 : r->block, ld = r->positions;
    float *dst = r->y + b * m_count * ld + p0;
    const float *x = r->x + b * r->channels * len;
    start_block(dst, ld, m_count, count, r->bias);
    for (int64_t t = 0; t < r->taps; t++) {
        int64_t off = t * r->dil - r->pad, from = p0 > -off ? p0 : -off;
        int64_t to = p0 + count < len - off ? p0 + count : len - off;
        if (from < to &&
            !xf_dn_sgemm(false, m_count, to - from, r->channels, 1.0f, r->tap_w + t * m_count * r->channels,
                         r->channels, x + from + off, len, 1.0f, dst + (from - p0), ld))
            return false;
    }
    finish_block(dst, ld, m_count, count, NULL, r->relu);
    return true;
}

static bool run_block(const gemm_run *r, int64_t j, float *rows)
{
    if (r->shifted)
        return shifted_block(r, j);
    int64_t taps = r->taps, positions = r->positions, m_count = r->m_count, in_size = prod3(r->w.in);
    float *dst, *sums = rows + r->block * taps;
    int64_t ld, count, b0 = r->group ? j * r->group : j / r->per_image, images = 1;
    if (r->group) {
        images = r->batch - b0 < r->group ? r->batch - b0 : r->group;
        count = ld = images * positions;
        for (int64_t i = 0; i < images; i++)
            fill_rows(&r->w, r->x + (b0 + i) * in_size, 0, positions, taps, rows + i * positions * taps);
        dst = sums;
    } else {
        int64_t p0 = j % r->per_image * r->block;
        count = positions - p0 < r->block ? positions - p0 : r->block;
        ld = positions;
        fill_rows(&r->w, r->x + b0 * in_size, p0, count, taps, rows);
        dst = r->y + b0 * m_count * positions + p0;
    }
    if (!xf_dn_sgemm(true, m_count, count, taps, 1.0f, r->wt, taps, rows, taps, 0.0f, dst, ld))
        return false;
    finish_block(dst, ld, m_count, count, r->bias, r->relu);
    for (int64_t i = 0; i < images && r->group; i++)
        for (int64_t m = 0; m < m_count; m++)
            memcpy(r->y + ((b0 + i) * m_count + m) * positions, sums + m * ld + i * positions,
                   sizeof(float) * (size_t)positions);
    return true;
}

/* The weights w [M][C][taps] tap by tap into s->tap_w [taps][M][C]:
 * once where they are constant, else every run. */
static xf_status tap_weights(conv_gemm *s, const xf_node *n, const float *w, int64_t taps, int64_t m_count,
                             int64_t channels, xf_error *err)
{
    if (s->const_weights && s->tap_w_made)
        return XF_OK;
    if (!xf_dn_floats_reserve(&s->tap_w, &s->tap_w_cap, (size_t)(taps * m_count * channels)))
        return xf_error_set(err, XF_ERR_NOMEM, "out of memory in %s", xf_op_name(n->op));
    for (int64_t t = 0; t < taps; t++)
        for (int64_t m = 0; m < m_count; m++)
            for (int64_t c = 0; c < channels; c++)
                s->tap_w[(t * m_count + m) * channels + c] = w[(m * channels + c) * taps + t];
    s->tap_w_made = true;
    return XF_OK;
}

static xf_status conv_gemm_run(xf_dn_node *st, const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out,
                               xf_error *err)
{
    conv_gemm *s = st->own;
    const xf_shape *xs = &in[0].shape, *ws = &in[1].shape;
    int64_t kernel[XF_MAX_SPATIAL];
    for (int i = 2; i < ws->ndim; i++)
        kernel[i - 2] = ws->dims[i];
    gemm_run r = {.relu = s->relu};
    xf_status ws_ok = xf_rt_window_setup(n, xs, &out[0].shape, kernel, &r.w, err);
    if (ws_ok != XF_OK)
        return ws_ok;
    right_align(&r.w, xs->ndim - 2);
    r.taps = prod3(r.w.k);
    r.positions = prod3(r.w.out);
    r.m_count = ws->dims[0];
    r.batch = xs->dims[0];
    r.channels = ws->dims[1];
    r.shifted = r.channels > 1;
    if (r.positions < 1 || r.batch < 1 || r.m_count < 1)
        return XF_OK;
    int64_t by_rows = r.shifted ? GEMM_BLOCK_MAX : GEMM_BLOCK_FLOATS / r.taps;
    int64_t by_sums = 2 * GEMM_BLOCK_FLOATS / r.m_count;
    r.block = (by_rows < by_sums ? by_rows : by_sums) / GEMM_BLOCK_MIN * GEMM_BLOCK_MIN;
    r.block = r.block < GEMM_BLOCK_MIN ? GEMM_BLOCK_MIN : r.block > GEMM_BLOCK_MAX ? GEMM_BLOCK_MAX : r.block;
    r.group = r.positions < r.block && r.batch > 1 && !r.shifted ? r.block / r.positions : 0;
    r.per_image = (r.positions + r.block - 1) / r.block;
    int64_t jobs = r.group ? (r.batch + r.group - 1) / r.group : r.batch * r.per_image;
    r.part_floats =
        r.shifted ? 0 : (size_t)(r.block * r.taps) + (r.group ? (size_t)(r.m_count * r.group * r.positions) : 0);
    if (r.part_floats && !xf_dn_floats_reserve(&s->rows, &s->rows_cap, (size_t)s->parts * r.part_floats))
        return xf_error_set(err, XF_ERR_NOMEM, "out of memory in %s", xf_op_name(n->op));
    r.x = in[0].data;
    r.wt = st->folded_w ? st->folded_w : in[1].data;
    if (r.shifted) {
        xf_status ts = tap_weights(s, n, r.wt, r.taps, r.m_count, r.channels, err);
        if (ts != XF_OK)
            return ts;
        r.tap_w = s->tap_w;
        r.in_len = xs->dims[xs->ndim - 1];
        r.pad = r.w.pad_begin[XF_MAX_SPATIAL - 1];
        r.dil = r.w.dil[XF_MAX_SPATIAL - 1];
    }
    r.bias = st->folded_b ? st->folded_b : xf_dn_input(n, 2) >= 0 && xf_rt_present(&in[2]) ? in[2].data : NULL;
    r.y = st->dst ? st->dst : out[0].data;
    /* blocks over the threads where there are enough, else one at a time
     * on sgemm's threads */
    bool split = s->parts > 1 && jobs >= 2 * s->parts;
    int failed = 0;
#ifdef _OPENMP
#pragma omp parallel for schedule(static) num_threads(s->parts) if (split) reduction(+ : failed)
#endif
    for (int64_t j = 0; j < jobs; j++) {
        int part = 0;
#ifdef _OPENMP
        part = omp_get_thread_num();
#endif
        failed += !run_block(&r, j, r.part_floats ? s->rows + (size_t)part * r.part_floats : NULL);
    }
    if (failed)
        return xf_rt_bad_node(err, n, "oneDNN's sgemm failed");
    if (s->post) {
        XF_DN_TRY(err, n, dnnl_memory_set_data_handle(s->post_mem, r.y));
        dnnl_exec_arg_t args[2] = {{DNNL_ARG_SRC, s->post_mem}, {DNNL_ARG_DST, s->post_mem}};
        XF_DN_TRY(err, n, dnnl_primitive_execute(s->post, s->stream, 2, args));
        XF_DN_TRY(err, n, dnnl_stream_wait(s->stream));
    }
    return XF_OK;
}

/* The eltwise posts (none a sum) as one primitive over y in place: the
 * first as its algorithm, the rest as its post-ops. */
static xf_status posts_primitive(xf_dn_ctx *c, const xf_node *n, const xf_shape *y, const xf_dn_post *posts,
                                 int n_posts, conv_gemm *s, xf_error *err)
{
    dnnl_memory_desc_t md;
    xf_dn_md_plain(y, dnnl_f32, &md);
    dnnl_eltwise_desc_t d;
    XF_DN_TRY(
        err, n,
        dnnl_eltwise_forward_desc_init(&d, dnnl_forward_inference, posts[0].alg, &md, posts[0].alpha, posts[0].beta));
    dnnl_primitive_attr_t attr;
    xf_status st = xf_dn_post_attr(n, posts + 1, n_posts - 1, &attr, err);
    if (st != XF_OK)
        return st;
    dnnl_primitive_desc_t pd;
    dnnl_status_t ds = dnnl_primitive_desc_create(&pd, &d, attr, c->engine, NULL);
    dnnl_primitive_attr_destroy(attr);
    if (ds != dnnl_success)
        return xf_dn_fail(err, n, "post-ops after the convolution", ds);
    ds = dnnl_primitive_create(&s->post, pd);
    dnnl_primitive_desc_destroy(pd);
    if (ds == dnnl_success)
        ds = dnnl_memory_create(&s->post_mem, &md, c->engine, DNNL_MEMORY_NONE);
    return ds == dnnl_success ? XF_OK : xf_dn_fail(err, n, "post-ops after the convolution", ds);
}

bool xf_dn_conv_gemm_takes(const xf_dn_ctx *c, const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out,
                           const xf_dn_post *posts, int n_posts)
{
    if (in[1].shape.dims[1] > 1 ? !shifted_pays(n, &in[0].shape, &in[1].shape, &out[0].shape)
                                : !gemm_pays(n, &in[0].shape, &in[1].shape, &out[0].shape))
        return false;
    for (int i = 0; i < n_posts; i++)
        if (posts[i].sum)
            return false;
    for (int k = 0; k < n->n_outputs; k++)
        if (n->outputs[k] >= 0 && xf_dn_value_layout(c, n->outputs[k]) != XF_DN_PLAIN)
            return false;
    return xf_dn_value_layout(c, n->inputs[0]) == XF_DN_PLAIN;
}

xf_status xf_dn_conv_gemm_prepare(xf_dn_ctx *c, const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out,
                                  bool const_weights, xf_dn_node *st, const xf_dn_post *posts, int n_posts,
                                  xf_error *err)
{
    conv_gemm *s = calloc(1, sizeof *s);
    if (!s)
        return xf_error_set(err, XF_ERR_NOMEM, "out of memory in %s", xf_op_name(n->op));
    st->own = s;
    st->own_free = conv_gemm_free;
    st->own_run = conv_gemm_run;
    st->own_name = in[1].shape.dims[1] > 1 ? "sgemm per tap on shifted rows" : "sgemm on rows of taps";
    s->stream = c->stream;
    s->const_weights = const_weights;
#ifdef _OPENMP
    s->parts = omp_get_max_threads();
#else
    s->parts = 1;
#endif
    s->relu = n_posts > 0 && posts[0].alg == dnnl_eltwise_relu && posts[0].alpha == 0.0f;
    int skip = s->relu ? 1 : 0;
    return n_posts > skip ? posts_primitive(c, n, &out[0].shape, posts + skip, n_posts - skip, s, err) : XF_OK;
}
