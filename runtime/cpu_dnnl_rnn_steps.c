/* LSTM, GRU, RNN and DynamicQuantizeLSTM as a loop of this backend's own
 * over oneDNN primitives:
 *   - per direction, the inputs of every step times W plus both biases as
 *     one matmul (T * N rows) before the first step;
 *   - at each step, the hidden state times R added to that step's rows by
 *     a matmul with R packed once in the layout it wants, with the gates'
 *     logistic as its post-op: the c gate's products are doubled (exact),
 *     so that its tanh(x) is 2 logistic(2x) - 1; then c = f c + i g,
 *     tanh(c) (an eltwise primitive) and h = o tanh(c).  RNN: its
 *     activation is the steps' post-op, and h the result.
 *
 * LSTM and RNN in the forms oneDNN's RNN primitive takes (cpu_dnnl_rnn.c)
 * of few batch entries: at one batch entry that primitive (its brgemm
 * kernel, the only one it offers on AVX-512) took about three times as
 * long as this for an LSTM of 256 units on one thread, and two and a half
 * times for an RNN of 512; its GRU primitive did not, and keeps the rest.
 * In the forms it does not take (clip, input_forget, peepholes, other
 * activations: "general"; sequences shorter than the input; the
 * batch-first layout), at every size, which cpu_ref's double loops ran 20
 * to 40 times slower: the products add the rows alone, and the cells
 * (cpu_dnnl_rnn_cells.c) add the peepholes and clip the gates' inputs,
 * each function a chain of eltwise primitives, as cpu_ref orders them.
 * GRU's step takes two products: z's and r's rows, then the h gate's.
 *
 * DynamicQuantizeLSTM (8-bit W and R with constant zero points and
 * scales, the general forms as LSTM's; where oneDNN's int8 sums are
 * exact): the inputs and, at each step, the hidden state quantized to
 * uint8 as cpu_ref does (xf_dn_quantize_all), their int8 products with
 * the weights exact in int32 (oneDNN's int8 matmul; uint8 weights less
 * 128), then, less the weights' zero point times the sum of each row's
 * codes, scaled per column as cpu_ref scales them and added to the rows
 * in a loop (oneDNN's matmul takes scales known at run time only on its
 * slower gemm kernel), then the cell in one loop of its own
 * (qlstm_cell): its logistic functions and tanh are float approximations
 * within 3 ulp (cpu_dnnl_acts.h) where cpu_ref's are rounded from
 * double, so a state may quantize a step apart, as ONNX Runtime's do
 * (its are MLAS's float approximations).  The scaling and the cell were
 * three calls of oneDNN's eltwise primitives and two passes over the
 * gates a step: 2.2 ms to 1.5 for the two bidirectional LSTMs of 256
 * units, 37 steps of 2 batch entries, of text2tashkeel's rawi_v3 model
 * on one thread (ONNX Runtime 1.25). */
#include "cpu_dnnl_rnn_steps.h"
#include "cpu_dnnl_acts.h"

#include <float.h>
#include <stdlib.h>
#include <string.h>

/* The most batch entries and the fewest hidden units this path takes for
 * LSTM and RNN: with more entries, or fewer units on two threads,
 * oneDNN's primitives were as fast or faster.  DynamicQuantizeLSTM takes
 * it at every size: its other path, cpu_ref's loops on oneDNN's sgemm,
 * was 3.5 to 15 times slower. */
enum { LSTM_STEPS_MAX_BATCH = 4, LSTM_STEPS_MIN_HIDDEN = 256 };

/* DynamicQuantizeLSTM: a step's int8 product of fewer multiply-adds runs
 * on one thread, where waking the second cost more than the work. */
enum { QSTEP_ONE_THREAD = 1 << 19 };

static void steps_free(void *p)
{
    xf_dn_steps *s = p;
    if (!s)
        return;
    for (int d = 0; d < 2; d++) {
        dnnl_primitive_destroy(s->dir[d].in_mm);
        dnnl_primitive_destroy(s->dir[d].step_mm);
        dnnl_primitive_destroy(s->dir[d].step_mm2);
        dnnl_memory_destroy(s->dir[d].w);
        dnnl_memory_destroy(s->dir[d].r);
        dnnl_memory_destroy(s->dir[d].r2);
        dnnl_memory_destroy(s->dir[d].bias);
        dnnl_memory_destroy(s->dir[d].bias2);
        free(s->dir[d].bias_row);
        free(s->dir[d].zps);
    }
    dnnl_primitive_destroy(s->tanh_c);
    for (int d = 0; d < 2; d++)
        for (int w = 0; w < 3; w++)
            for (int k = 0; k < 3; k++)
                dnnl_primitive_destroy(s->ops[d][w][k]);
    for (int k = 0; k < 4; k++)
        dnnl_memory_destroy(s->m_blk[k]);
    dnnl_memory_t m[] = {s->m_x, s->m_g, s->m_h, s->m_hr, s->m_c, s->m_tc, s->m_qx, s->m_qh, s->m_zp, s->m_acc_x,
                         s->m_acc_h};
    for (size_t i = 0; i < sizeof m / sizeof *m; i++)
        dnnl_memory_destroy(m[i]);
    free(s->buf);
    free(s->lens);
    free(s->qx);
    free(s->acc);
    free(s);
}

static const xf_tensor *init_of(const xf_graph *g, const xf_node *n, int k)
{
    return k < n->n_inputs && n->inputs[k] >= 0 ? g->values[n->inputs[k]].init : NULL;
}

static bool given(const xf_node *n, const xf_tensor_view *in, int k)
{
    return k < n->n_inputs && n->inputs[k] >= 0 && xf_rt_present(&in[k]);
}

/* The DynamicQuantizeLSTM forms this path takes (beyond what shape
 * inference checked). */
static bool qlstm_forms_ok(const xf_graph *g, const xf_node *n, const xf_tensor_view *in)
{
    const xf_rnn_attrs *a = &n->attrs.rnn;
    if (a->layout || (unsigned)a->direction > 2 || n->n_inputs < 12 || !xf_dn_exact_int8())
        return false;
    if (!xf_dn_rnn_steps_takes(n))
        return false;
    for (int k = 1; k < 12; k++) { /* the weights, their scales and zero points constant; B and P too */
        bool want = k == 1 || k == 2 || k >= 8, is = init_of(g, n, k) != NULL;
        if ((want && !is) || ((k == 3 || k == 7) && given(n, in, k) && !is))
            return false;
    }
    if (given(n, in, 7) && in[7].dtype != XF_DT_FLOAT)
        return false;
    for (int k = 1; k <= 2; k++) /* 8-bit weights, 8-bit zero points */
        if ((in[k].dtype != XF_DT_INT8 && in[k].dtype != XF_DT_UINT8) ||
            (in[7 + 2 * k].dtype != XF_DT_INT8 && in[7 + 2 * k].dtype != XF_DT_UINT8))
            return false;
    if (in[8].dtype != XF_DT_FLOAT || in[10].dtype != XF_DT_FLOAT || (given(n, in, 3) && in[3].dtype != XF_DT_FLOAT))
        return false;
    if (given(n, in, 4) && in[4].dtype != XF_DT_INT32 && in[4].dtype != XF_DT_INT64)
        return false;
    for (int k = 5; k <= 6; k++)
        if (given(n, in, k) && in[k].dtype != XF_DT_FLOAT)
            return false;
    for (int k = 0; k < n->n_outputs; k++)
        if (n->outputs[k] >= 0 && g->values[n->outputs[k]].dtype != XF_DT_FLOAT)
            return false;
    return true;
}

bool xf_dn_rnn_steps_ok(const xf_graph *g, const xf_node *n, const xf_tensor_view *in)
{
    bool quantized = n->op == XF_OP_MS_DYNAMIC_QUANTIZE_LSTM;
    const xf_shape *x = &in[0].shape, *r = &in[2].shape;
    if ((n->op != XF_OP_LSTM && n->op != XF_OP_RNN && !quantized) || x->ndim != 3 || r->ndim != 3 || x->dims[1] < 1 ||
        x->dims[0] < 1 ||
        (!quantized && (x->dims[1] > LSTM_STEPS_MAX_BATCH || r->dims[2] < LSTM_STEPS_MIN_HIDDEN)))
        return false;
    return !quantized || qlstm_forms_ok(g, n, in);
}

/* One of the products: src (rows x k) times the constant weights w (k x
 * cols; LSTM's stored cols x k, read transposed), packed into *wm in the
 * layout the primitive wants.  LSTM: float, with a bias row (input rows)
 * or adding to what dst holds and taking the logistic function of the sum
 * (steps).  DynamicQuantizeLSTM: uint8 src less a zero point given at run
 * time, int8 weights, int32 sums. */
typedef struct product_spec {
    int64_t rows, k, cols;
    const void *w;
    bool quantized, step;
    const float *bias;
    dnnl_alg_kind_t act; /* the float steps' post-op: logistic (LSTM), RNN's activation, or undef (none) */
} product_spec;

static xf_status product_attr(const xf_node *n, const product_spec *p, dnnl_primitive_attr_t *attr, xf_error *err)
{
    xf_dn_post posts[2] = {{.sum = true, .alg = dnnl_alg_kind_undef}, {.alg = p->act}};
    if (!p->quantized)
        return xf_dn_post_attr(n, posts, !p->step ? 0 : p->act == dnnl_alg_kind_undef ? 1 : 2, attr, err);
    const int32_t zero_point = DNNL_RUNTIME_S32_VAL;
    XF_DN_TRY(err, n, dnnl_primitive_attr_create(attr));
    dnnl_status_t ds = dnnl_primitive_attr_set_zero_points(*attr, DNNL_ARG_SRC, 1, 0, &zero_point);
    if (ds != dnnl_success) {
        dnnl_primitive_attr_destroy(*attr);
        *attr = NULL;
        return xf_dn_fail(err, n, "int8 attribute of an LSTM step", ds);
    }
    return XF_OK;
}

static xf_status product(xf_dn_ctx *c, const xf_node *n, const product_spec *p, dnnl_primitive_t *prim,
                         dnnl_memory_t *wm, dnnl_memory_t *b, xf_error *err)
{
    dnnl_data_type_t wt = p->quantized ? dnnl_s8 : dnnl_f32;
    dnnl_memory_desc_t src, w_have, w_any, dst, bmd;
    dnnl_memory_desc_init_by_tag(&src, 2, (dnnl_dims_t){p->rows, p->k}, p->quantized ? dnnl_u8 : dnnl_f32, dnnl_ab);
    dnnl_memory_desc_init_by_strides(&w_have, 2, (dnnl_dims_t){p->k, p->cols}, wt,
                                     p->quantized ? (dnnl_dims_t){p->cols, 1} : (dnnl_dims_t){1, p->k});
    dnnl_memory_desc_init_by_tag(&w_any, 2, (dnnl_dims_t){p->k, p->cols}, wt, dnnl_format_tag_any);
    dnnl_memory_desc_init_by_tag(&dst, 2, (dnnl_dims_t){p->rows, p->cols}, p->quantized ? dnnl_s32 : dnnl_f32,
                                 dnnl_ab);
    xf_dn_steps_md(&bmd, 1, p->cols, p->cols);
    dnnl_matmul_desc_t md;
    XF_DN_TRY(err, n, dnnl_matmul_desc_init(&md, &src, &w_any, p->bias ? &bmd : NULL, &dst));
    dnnl_primitive_attr_t attr = NULL;
    xf_status s = product_attr(n, p, &attr, err);
    if (s != XF_OK)
        return s;
    dnnl_primitive_desc_t pd;
    s = p->quantized ? xf_dn_pd_create_int8(c, n, &md, attr, p->rows, &pd, err)
                     : xf_dn_pd_create(c, n, &md, attr, &pd, err);
    if (s != XF_OK)
        return s;
    dnnl_status_t ds;
    const dnnl_memory_desc_t *want = dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
    dnnl_memory_t have = NULL;
    dnnl_primitive_desc_t rpd = NULL;
    dnnl_primitive_t reorder = NULL;
    ds = dnnl_primitive_create(prim, pd);
    if (ds == dnnl_success)
        ds = dnnl_memory_create(wm, want, c->engine, DNNL_MEMORY_ALLOCATE);
    if (ds == dnnl_success)
        ds = dnnl_memory_create(&have, &w_have, c->engine, (void *)p->w);
    if (ds == dnnl_success)
        ds = dnnl_reorder_primitive_desc_create(&rpd, &w_have, c->engine, want, c->engine, NULL);
    if (ds == dnnl_success)
        ds = dnnl_primitive_create(&reorder, rpd);
    if (ds == dnnl_success) {
        dnnl_exec_arg_t args[2] = {{DNNL_ARG_FROM, have}, {DNNL_ARG_TO, *wm}};
        ds = dnnl_primitive_execute(reorder, c->stream, 2, args);
    }
    if (ds == dnnl_success)
        ds = dnnl_stream_wait(c->stream);
    if (ds == dnnl_success && p->bias)
        ds = dnnl_memory_create(b, &bmd, c->engine, DNNL_MEMORY_ALLOCATE);
    if (ds == dnnl_success && p->bias) {
        void *data = NULL;
        ds = dnnl_memory_get_data_handle(*b, &data);
        if (ds == dnnl_success)
            memcpy(data, p->bias, sizeof(float) * (size_t)p->cols);
    }
    dnnl_primitive_destroy(reorder);
    dnnl_primitive_desc_destroy(rpd);
    dnnl_memory_destroy(have);
    dnnl_primitive_desc_destroy(pd);
    return ds == dnnl_success ? XF_OK : xf_dn_fail(err, n, "weights of a recurrence's step", ds);
}

static bool wanted(const xf_node *n, const xf_tensor_view *out, int k)
{
    return k < n->n_outputs && n->outputs[k] >= 0 && xf_rt_present(&out[k]);
}

/* DynamicQuantizeLinear of count floats at x into codes (as cpu_ref's
 * DynamicQuantizeLinear); returns the scale, the zero point in *zp. */
static float quantize(const float *x, int64_t count, uint8_t *codes, int32_t *zp)
{
    float lo, hi, scale, z;
    xf_dn_range_of(x, count, &lo, &hi);
    xf_rt_dynamic_qparams(NULL, NULL, lo, hi, &scale, &z);
    xf_dn_quantize_all(x, codes, count, scale, z);
    *zp = (int32_t)z;
    return scale;
}

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define STEP_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define STEP_CLONES
#endif

/* The sum of k codes less their zero point zp */
STEP_CLONES static int32_t code_sum(const uint8_t *restrict codes, int64_t k, int32_t zp)
{
    int32_t sum = 0;
    for (int64_t t = 0; t < k; t++)
        sum += (int32_t)codes[t];
    return sum - (int32_t)k * zp;
}

/* y = (a - zps * sum) * (scale * sc) + p over n columns (zps NULL: none);
 * y may be p. */
STEP_CLONES static void scale_row(const int32_t *restrict a, const int32_t *restrict zps, int32_t sum, float scale,
                                  const float *restrict sc, const float *p, float *y, int64_t n)
{
    if (p == y && zps)
        for (int64_t j = 0; j < n; j++)
            y[j] = (float)(a[j] - zps[j] * sum) * (scale * sc[j]) + y[j];
    else if (p == y)
        for (int64_t j = 0; j < n; j++)
            y[j] = (float)a[j] * (scale * sc[j]) + y[j];
    else if (zps)
        for (int64_t j = 0; j < n; j++)
            y[j] = (float)(a[j] - zps[j] * sum) * (scale * sc[j]) + p[j];
    else
        for (int64_t j = 0; j < n; j++)
            y[j] = (float)a[j] * (scale * sc[j]) + p[j];
}

/* DynamicQuantizeLSTM's cell for one batch entry, its gates' inputs g
 * (i, o, f, c; 4 hs): the logistic function of i, o and f, tanh of the c
 * gate's, c = c f + i g and h = tanh(c) o, as cpu_ref's cell computes
 * them (oneDNN's eltwise primitives took two calls a step, each costing
 * more than its work at a few batch entries).  g is overwritten. */
STEP_CLONES static void qlstm_cell(float *restrict g, float *restrict c, float *restrict h, int64_t hs)
{
    for (int64_t j = 0; j < 3 * hs; j++)
        g[j] = xf_float_logistic(g[j]);
    for (int64_t j = 0; j < hs; j++)
        c[j] = c[j] * g[2 * hs + j] + g[j] * xf_float_tanh(g[3 * hs + j]);
    for (int64_t j = 0; j < hs; j++)
        h[j] = xf_float_tanh(c[j]) * g[hs + j];
}

/* DynamicQuantizeLSTM: rows x 4H of dst = the int32 sums in acc, less
 * the weights' zero point of each column (w_zps; NULL: none) times the
 * sum of the row's codes (k of them from `codes`, less their zero point
 * zp), times the codes' scale and the weights' per column (sc), plus
 * add (one row when add_row is 0, else rows add_row
 * apart) -- as cpu_ref scales the product of the codes' and the weights'
 * differences from their zero points and adds it. */
static void scale_rows(const xf_dn_steps *s, int64_t rows, const uint8_t *codes, int64_t k, int32_t zp,
                       const int32_t *w_zps, float scale, const float *sc, const float *add, int64_t add_row,
                       float *dst)
{
    int64_t h4 = s->hg;
    for (int64_t r = 0; r < rows; r++)
        scale_row(s->acc + r * h4, w_zps, w_zps ? code_sum(codes + r * k, k, zp) : 0, scale, sc, add + r * add_row,
                  dst + r * h4, h4);
}

/* Each batch entry's length (sequence_lens, else the whole) into
 * s->lens; returns the longest. */
static xf_status lengths(xf_dn_steps *s, const xf_node *n, const xf_tensor_view *in, int64_t *longest, xf_error *err)
{
    *longest = 0;
    for (int64_t b = 0; b < s->nb; b++) {
        s->lens[b] = given(n, in, 4) ? xf_rt_load_i64(in[4].dtype, in[4].data, b) : s->t;
        if (s->lens[b] < 0 || s->lens[b] > s->t)
            return xf_rt_bad_node(err, n, "sequence_lens[%lld] = %lld is outside [0, %lld]", (long long)b,
                                  (long long)s->lens[b], (long long)s->t);
        *longest = s->lens[b] > *longest ? s->lens[b] : *longest;
    }
    return XF_OK;
}

/* The time of batch entry b's step `step` (reverse: from the entry's
 * last valid step back; 0 for an entry past its length). */
static int64_t time_of(const xf_dn_steps *s, int64_t b, int64_t step, bool reverse)
{
    return step >= s->lens[b] ? 0 : reverse ? s->lens[b] - 1 - step : step;
}

/* Where rows of H or of the gates start, in rows: batch entry b's at time
 * tt of the input (and of its rows of the gates), of Y in direction d, and
 * its state of direction d (initial states, Y_h, Y_c): [T, N], [T, D, N]
 * and [D, N], or batch-first [N, T], [N, T, D] and [N, D]. */
static int64_t x_row(const xf_dn_steps *s, int64_t b, int64_t tt)
{
    return s->batch_first ? b * s->t + tt : tt * s->nb + b;
}

static int64_t y_row(const xf_dn_steps *s, int64_t d, int64_t b, int64_t tt)
{
    return s->batch_first ? (b * s->t + tt) * s->dirs + d : (tt * s->dirs + d) * s->nb + b;
}

static int64_t state_row(const xf_dn_steps *s, int64_t d, int64_t b)
{
    return s->batch_first ? b * s->dirs + d : d * s->nb + b;
}

/* One direction: its input rows, then every step up to the longest
 * sequence (x_scale and x_zp: the inputs' codes', DynamicQuantizeLSTM).
 * An entry past its length keeps its states (DynamicQuantizeLSTM with Y
 * wanted: its h, quantized with the others once more, becomes 0 after
 * that step, as ONNX Runtime's next step reads it from Y);
 * its Y rows there are 0; its final states are those of its last step
 * (0 for a length of 0). */
static xf_status run_direction(xf_dn_steps *s, const xf_node *n, int64_t d, bool reverse, float x_scale, int32_t x_zp,
                               int64_t longest, const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err)
{
    int64_t nb = s->nb, h = s->h, h4 = s->hg;
    size_t row = sizeof(float) * (size_t)h;
    const xf_dn_steps_dir *dr = &s->dir[d];
    s->zp = x_zp;
    xf_status st = xf_dn_steps_exec(s, n, dr->in_mm, s->quantized ? s->m_qx : s->m_x, dr->w, dr->bias,
                                    s->quantized ? s->m_acc_x : s->m_g, err);
    if (st == XF_OK && s->quantized) {
        XF_DN_TRY(err, n, dnnl_stream_wait(s->stream));
        scale_rows(s, longest * nb, s->qx, s->ni, x_zp, dr->w_zps, x_scale, dr->w_scales, dr->bias_row, 0, s->g);
    }
    for (int64_t b = 0; b < nb; b++)
        for (int64_t j = 0; j < h; j++) {
            int64_t at = state_row(s, d, b) * h + j;
            s->hs[b * h + j] = given(n, in, 5) ? ((const float *)in[5].data)[at] : 0.0f;
            s->cs[b * h + j] = given(n, in, 6) ? ((const float *)in[6].data)[at] : 0.0f;
        }
    float *yh = wanted(n, out, 1) ? out[1].data : NULL, *yc = s->lstm && wanted(n, out, 2) ? out[2].data : NULL;
    for (int64_t step = 0; step < longest && st == XF_OK; step++) {
        for (int64_t b = 0; b < nb; b++) {
            const float *rows = s->g + x_row(s, b, time_of(s, b, step, reverse)) * h4;
            if (s->gru) { /* z and r rows dense for their product, h's after them */
                memcpy(s->hr + b * 2 * h, rows, 2 * row);
                memcpy(s->hr + (2 * nb + b) * h, rows + 2 * h, row);
            } else {
                memcpy(s->hr + b * h4, rows, sizeof(float) * (size_t)h4);
            }
            if (step >= s->lens[b]) { /* past its length: its states are put back after the step */
                memcpy(s->keep + 2 * b * h, s->hs + b * h, row);
                memcpy(s->keep + (2 * b + 1) * h, s->cs + b * h, row);
            }
        }
        if (!s->quantized) {
            st = xf_dn_steps_exec(s, n, dr->step_mm, s->m_h, dr->r, NULL, s->m_hr, err);
        } else {
            float h_scale = quantize(s->hs, nb * h, s->qh, &s->zp);
            int threads = xf_dn_steps_one_thread_if(nb * h * h4 < QSTEP_ONE_THREAD);
            st = xf_dn_steps_exec(s, n, dr->step_mm, s->m_qh, dr->r, NULL, s->m_acc_h, err);
            xf_dn_steps_threads_back(threads);
            if (st == XF_OK)
                XF_DN_TRY(err, n, dnnl_stream_wait(s->stream));
            scale_rows(s, nb, s->qh, h, s->zp, dr->r_zps, h_scale, dr->r_scales, s->hr, h4, s->hr);
            for (int64_t b = 0; !s->general && b < nb; b++)
                qlstm_cell(s->hr + b * h4, s->cs + b * h, s->hs + b * h, h);
        }
        if (st == XF_OK)
            st = s->general     ? xf_dn_steps_general(s, n, d, err)
                 : s->quantized ? XF_OK
                 : s->lstm      ? xf_dn_steps_lstm_cell(s, n, err)
                                : xf_dn_steps_wait(s, n, err);
        for (int64_t b = 0; b < nb && st == XF_OK; b++) {
            float *hb = s->hs + b * h, *cb = s->cs + b * h;
            if (step >= s->lens[b]) {
                memcpy(hb, s->keep + 2 * b * h, row);
                memcpy(cb, s->keep + (2 * b + 1) * h, row);
                if (s->quantized && wanted(n, out, 0))
                    memset(hb, 0, row);
                continue;
            }
            if (!s->lstm && !s->gru) /* RNN: h is its gate's row */
                memcpy(hb, s->hr + b * h4, row);
            if (wanted(n, out, 0))
                memcpy((float *)out[0].data + y_row(s, d, b, time_of(s, b, step, reverse)) * h, hb, row);
            if (step + 1 == s->lens[b]) { /* its last step */
                if (yh)
                    memcpy(yh + state_row(s, d, b) * h, hb, row);
                if (yc)
                    memcpy(yc + state_row(s, d, b) * h, cb, row);
            }
        }
    }
    for (int64_t b = 0; b < nb && st == XF_OK; b++) {
        for (int64_t t = s->lens[b]; wanted(n, out, 0) && t < s->t; t++)
            memset((float *)out[0].data + y_row(s, d, b, t) * h, 0, row);
        if (s->lens[b] == 0 && yh)
            memset(yh + state_row(s, d, b) * h, 0, row);
        if (s->lens[b] == 0 && yc)
            memset(yc + state_row(s, d, b) * h, 0, row);
    }
    return st;
}

static xf_status steps_run(xf_dn_node *st, const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out,
                           xf_error *err)
{
    xf_dn_steps *s = st->own;
    XF_DN_TRY(err, n, dnnl_memory_set_data_handle(s->m_x, in[0].data));
    int64_t longest;
    xf_status r = lengths(s, n, in, &longest, err);
    if (r != XF_OK)
        return r;
    int32_t x_zp = 0; /* DynamicQuantizeLSTM: the inputs up to the longest sequence */
    float x_scale = s->quantized ? quantize(in[0].data, longest * s->nb * s->ni, s->qx, &x_zp) : 1.0f;
    for (int64_t d = 0; d < s->dirs && r == XF_OK; d++)
        r = run_direction(s, n, d, n->attrs.rnn.direction == 1 || d == 1, x_scale, x_zp, longest, in, out, err);
    return r;
}

/* Direction d's weights (4H x k, ONNX's gates i, o, f, c) into w2 with
 * the c gate's rows doubled. */
static void doubled_c_gate(const float *w, int64_t d, int64_t h, int64_t k, float *w2)
{
    const float *wd = w + d * 4 * h * k;
    for (int64_t i = 0; i < 4 * h * k; i++)
        w2[i] = i < 3 * h * k ? wd[i] : 2.0f * wd[i];
}

static xf_status memory(xf_dn_ctx *c, const xf_node *n, const dnnl_memory_desc_t *md, void *data, dnnl_memory_t *m,
                        xf_error *err)
{
    XF_DN_TRY(err, n, dnnl_memory_create(m, md, c->engine, data));
    return XF_OK;
}

/* DynamicQuantizeLSTM: direction d's `count` weights of input k (cols
 * columns) as int8, and in zps their zero points per column as the
 * product of those sees them: int8 weights as given (NULL returned),
 * uint8 ones less 128 (a copy, the caller's to free; NULL when memory ran
 * out) with their zero points less 128.  Returns in *any whether a zero
 * point is not 0. */
static int8_t *signed_weights(const xf_tensor_view *in, int k, int64_t d, int64_t count, int64_t cols, int32_t *zps,
                              bool *any)
{
    bool u8 = in[k].dtype == XF_DT_UINT8;
    const xf_tensor_view *z = &in[7 + 2 * k];
    bool per_col = xf_rt_numel(z) > in[k].shape.dims[0];
    *any = false;
    for (int64_t j = 0; j < cols; j++) {
        zps[j] = (int32_t)xf_rt_load_i64(z->dtype, z->data, per_col ? d * cols + j : d) - (u8 ? 128 : 0);
        *any = *any || zps[j] != 0;
    }
    if (!u8)
        return NULL;
    int8_t *w = malloc((size_t)count);
    const uint8_t *from = (const uint8_t *)in[k].data + d * count;
    if (w)
        xf_dn_flip_bytes(from, w, count);
    return w;
}

/* The products of direction d: LSTM's with the c gate's weights and
 * bias doubled, DynamicQuantizeLSTM's with its scales per column and its
 * bias row made here (its cell takes tanh itself), RNN's as
 * given with its activation as the steps' post-op, GRU's steps' as two
 * (z and r; h) with R's bias of the h gate in the h gate's product where
 * linear_before_reset puts it inside r (...). */
static xf_status direction_products(xf_dn_ctx *c, const xf_node *n, const xf_tensor_view *in, xf_dn_steps *s, int64_t d,
                                    dnnl_alg_kind_t act, float *w2, float *bias, xf_error *err)
{
    int64_t t = s->t, nb = s->nb, ni = s->ni, h = s->h, hg = s->hg;
    const float *b = given(n, in, 3) ? in[3].data : NULL;
    xf_dn_steps_dir *dr = &s->dir[d];
    bool doubled = s->lstm && !s->quantized && !s->general; /* the c gate's tanh as 2 logistic(2x) - 1 */
    for (int64_t j = 0; j < hg; j++) {
        float rb = b && !(s->lbr && j >= 2 * h) ? b[d * 2 * hg + hg + j] : 0.0f;
        bias[j] = (b ? b[d * 2 * hg + j] + rb : 0.0f) * (doubled && j >= 3 * h ? 2.0f : 1.0f);
    }
    if (s->quantized) {
        dr->bias_row = malloc(sizeof(float) * (size_t)(3 * hg));
        dr->zps = malloc(sizeof(int32_t) * (size_t)(2 * hg));
        if (!dr->bias_row || !dr->zps)
            return xf_error_set(err, XF_ERR_NOMEM, "out of memory in %s", xf_op_name(n->op));
        memcpy(dr->bias_row, bias, sizeof(float) * (size_t)hg);
        bool per_col_w = xf_rt_numel(&in[8]) > s->dirs, per_col_r = xf_rt_numel(&in[10]) > s->dirs;
        dr->w_scales = dr->bias_row + hg;
        dr->r_scales = dr->bias_row + 2 * hg;
        const float *w_sc = (const float *)in[8].data + d * (per_col_w ? hg : 1);
        const float *r_sc = (const float *)in[10].data + d * (per_col_r ? hg : 1);
        for (int64_t j = 0; j < hg; j++) {
            dr->w_scales[j] = w_sc[per_col_w ? j : 0];
            dr->r_scales[j] = r_sc[per_col_r ? j : 0];
        }
        bool w_any, r_any;
        int8_t *w8 = signed_weights(in, 1, d, ni * hg, hg, dr->zps, &w_any);
        int8_t *r8 = signed_weights(in, 2, d, h * hg, hg, dr->zps + hg, &r_any);
        dr->w_zps = w_any ? dr->zps : NULL;
        dr->r_zps = r_any ? dr->zps + hg : NULL;
        product_spec pw = {t * nb, ni, hg, w8 ? w8 : (const int8_t *)in[1].data + d * ni * hg, true, false, NULL, act};
        product_spec pr = {nb, h, hg, r8 ? r8 : (const int8_t *)in[2].data + d * h * hg, true, true, NULL, act};
        xf_status rs = (in[1].dtype == XF_DT_UINT8 && !w8) || (in[2].dtype == XF_DT_UINT8 && !r8)
                           ? xf_error_set(err, XF_ERR_NOMEM, "out of memory in %s", xf_op_name(n->op))
                           : product(c, n, &pw, &dr->in_mm, &dr->w, NULL, err);
        if (rs == XF_OK)
            rs = product(c, n, &pr, &dr->step_mm, &dr->r, NULL, err);
        free(w8);
        free(r8);
        return rs;
    }
    const float *w = (const float *)in[1].data + d * hg * ni, *r = (const float *)in[2].data + d * hg * h;
    if (doubled)
        doubled_c_gate(in[1].data, d, h, ni, w2);
    product_spec pw = {t * nb, ni, hg, doubled ? w2 : w, false, false, bias, act};
    xf_status rs = product(c, n, &pw, &dr->in_mm, &dr->w, &dr->bias, err);
    if (s->gru) {
        product_spec pzr = {nb, h, 2 * h, r, false, true, NULL, dnnl_alg_kind_undef};
        product_spec ph = {nb, h, h, r + 2 * h * h, false, !s->lbr, s->lbr && b ? b + d * 2 * hg + hg + 2 * h : NULL,
                           dnnl_alg_kind_undef};
        if (rs == XF_OK)
            rs = product(c, n, &pzr, &dr->step_mm, &dr->r, NULL, err);
        return rs == XF_OK ? product(c, n, &ph, &dr->step_mm2, &dr->r2, &dr->bias2, err) : rs;
    }
    if (doubled)
        doubled_c_gate(in[2].data, d, h, h, w2);
    product_spec pr = {nb, h, hg, doubled ? w2 : r, false, true, NULL, act};
    return rs == XF_OK ? product(c, n, &pr, &dr->step_mm, &dr->r, NULL, err) : rs;
}

/* Whether LSTM node n has the default activations (sigmoid, tanh, tanh). */
static bool lstm_default_acts(const xf_node *n)
{
    static const unsigned char defaults[3] = {XF_RNN_SIGMOID, XF_RNN_TANH, XF_RNN_TANH};
    for (int i = 0; i < n->attrs.rnn.n_acts; i++)
        if (n->attrs.rnn.acts[i] != defaults[i % 3])
            return false;
    return true;
}

xf_status xf_dn_rnn_steps_prepare(xf_dn_ctx *c, const xf_node *n, const xf_tensor_view *in, dnnl_alg_kind_t act,
                                  xf_dn_node *st, xf_error *err)
{
    xf_dn_steps *s = calloc(1, sizeof *s);
    if (!s)
        return xf_error_set(err, XF_ERR_NOMEM, "out of memory in %s", xf_op_name(n->op));
    st->own = s;
    st->own_free = steps_free;
    s->stream = c->stream;
    s->quantized = n->op == XF_OP_MS_DYNAMIC_QUANTIZE_LSTM;
    s->lstm = n->op == XF_OP_LSTM || s->quantized;
    s->gru = n->op == XF_OP_GRU;
    const xf_rnn_attrs *a = &n->attrs.rnn;
    s->lbr = s->gru && a->linear_before_reset;
    s->batch_first = a->layout == 1;
    s->t = in[0].shape.dims[s->batch_first];
    s->nb = in[0].shape.dims[!s->batch_first];
    s->ni = in[0].shape.dims[2];
    s->h = in[2].shape.dims[s->quantized ? 1 : 2];
    s->dirs = a->direction == 2 ? 2 : 1;
    s->hg = s->lstm ? 4 * s->h : s->gru ? 3 * s->h : s->h;
    s->general = s->gru || a->has_clip || a->input_forget || given(n, in, 7) ||
                 (s->lstm ? !lstm_default_acts(n) : act == dnnl_alg_kind_undef);
    s->input_forget = a->input_forget;
    s->clip = a->has_clip ? a->clip : FLT_MAX;
    s->peep = s->lstm && given(n, in, 7) ? in[7].data : NULL;
    int64_t t = s->t, nb = s->nb, ni = s->ni, h = s->h, h4 = s->hg, most = ni > h ? ni : h;
    s->buf = malloc(sizeof(float) * (size_t)(t * nb * h4 + nb * (2 * h4 + 5 * h) + h4));
    s->lens = malloc(sizeof(int64_t) * (size_t)nb);
    s->qx = s->quantized ? malloc((size_t)(t * nb * ni + nb * h)) : NULL;
    s->acc = s->quantized ? malloc(sizeof(int32_t) * (size_t)(t * nb * h4)) : NULL;
    bool doubled = s->lstm && !s->quantized && !s->general;
    float *w2 = doubled ? malloc(sizeof(float) * (size_t)(h4 * most)) : NULL;
    if (!s->buf || !s->lens || (s->quantized ? !s->qx || !s->acc : doubled && !w2)) {
        free(w2);
        return xf_error_set(err, XF_ERR_NOMEM, "out of memory in %s", xf_op_name(n->op));
    }
    s->g = s->buf;
    s->hr = s->g + t * nb * h4;
    s->hs = s->hr + nb * h4;
    s->cs = s->hs + nb * h;
    s->tc = s->cs + nb * h;
    float *bias = s->tc + nb * h;
    s->keep = bias + h4;
    s->gm = s->lstm || s->gru ? s->keep + 2 * nb * h : s->hr;
    s->qh = s->qx ? s->qx + t * nb * ni : NULL;
    xf_status rs = XF_OK;
    for (int64_t d = 0; d < s->dirs && rs == XF_OK; d++)
        rs = direction_products(c, n, in, s, d,
                                s->general ? dnnl_alg_kind_undef : s->lstm ? dnnl_eltwise_logistic : act, w2, bias,
                                err);
    free(w2);
    dnnl_memory_desc_t x, g, hmd, hr, qx, qh, zp, acc_x, acc_h;
    xf_dn_steps_md(&x, t * nb, ni, ni);
    xf_dn_steps_md(&g, t * nb, h4, h4);
    xf_dn_steps_md(&hmd, nb, h, h);
    xf_dn_steps_md(&hr, nb, s->gru ? 2 * h : h4, s->gru ? 2 * h : h4); /* GRU: the z and r rows its step adds to */
    dnnl_memory_desc_init_by_tag(&qx, 2, (dnnl_dims_t){t * nb, ni}, dnnl_u8, dnnl_ab);
    dnnl_memory_desc_init_by_tag(&qh, 2, (dnnl_dims_t){nb, h}, dnnl_u8, dnnl_ab);
    dnnl_memory_desc_init_by_tag(&acc_x, 2, (dnnl_dims_t){t * nb, h4}, dnnl_s32, dnnl_ab);
    dnnl_memory_desc_init_by_tag(&acc_h, 2, (dnnl_dims_t){nb, h4}, dnnl_s32, dnnl_ab);
    dnnl_memory_desc_init_by_tag(&zp, 1, (dnnl_dims_t){1}, dnnl_s32, dnnl_a);
    if (rs == XF_OK && s->lstm && !s->quantized)
        rs = xf_dn_steps_eltwise(c, n, (xf_dn_act_op){dnnl_eltwise_tanh, 0.0f, 0.0f}, &hmd, &s->tanh_c, err);
    struct {
        const dnnl_memory_desc_t *md;
        void *data;
        dnnl_memory_t *m;
        bool want;
    } mems[] = {{&x, DNNL_MEMORY_NONE, &s->m_x, true},   {&g, s->g, &s->m_g, true},
                {&hmd, s->hs, &s->m_h, true},            {&hr, s->hr, &s->m_hr, true},
                {&hmd, s->cs, &s->m_c, true},            {&hmd, s->tc, &s->m_tc, true},
                {&qx, s->qx, &s->m_qx, s->quantized},    {&qh, s->qh, &s->m_qh, s->quantized},
                {&zp, &s->zp, &s->m_zp, s->quantized},   {&acc_x, s->acc, &s->m_acc_x, s->quantized},
                {&acc_h, s->acc, &s->m_acc_h, s->quantized}};
    for (size_t i = 0; i < sizeof mems / sizeof *mems && rs == XF_OK; i++)
        if (mems[i].want)
            rs = memory(c, n, mems[i].md, mems[i].data, mems[i].m, err);
    if (rs == XF_OK && s->general)
        rs = xf_dn_steps_chains(c, n, s, err);
    if (rs == XF_OK)
        st->own_run = steps_run;
    st->own_name = "own loop: step by step on oneDNN's products";
    return rs;
}
