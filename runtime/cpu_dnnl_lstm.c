/* LSTM of few batch entries as a loop of this backend's own over oneDNN
 * primitives, in the forms oneDNN's RNN primitive takes (cpu_dnnl_rnn.c):
 *   - per direction, the inputs of every step times W' plus both biases as
 *     one matmul (T * N rows) before the first step;
 *   - at each step, the hidden state times R' added to that step's rows by
 *     a matmul with R packed once in the layout it wants, with the gates'
 *     logistic as its post-op: the c gate's weights and bias are doubled
 *     (exact), so that its tanh(x) is 2 logistic(2x) - 1; then
 *     c = f c + i g, tanh(c) (an eltwise primitive) and h = o tanh(c).
 * At one batch entry and 256 hidden units oneDNN's LSTM primitive (its
 * brgemm kernel, the only one it offers on AVX-512) takes about three
 * times as long as this on one thread; its GRU and RNN primitives do not,
 * and keep the rest. */
#include "cpu_dnnl.h"

#include <stdlib.h>
#include <string.h>

/* The most batch entries and the fewest hidden units this path takes:
 * with more entries, or fewer units on two threads, oneDNN's primitive
 * was as fast or faster. */
enum { LSTM_STEPS_MAX_BATCH = 4, LSTM_STEPS_MIN_HIDDEN = 256 };

typedef struct lstm_dir {
    dnnl_primitive_t in_mm, step_mm;
    dnnl_memory_t w, r, bias; /* W' and R' packed, W's bias plus R's */
} lstm_dir;

typedef struct lstm_steps {
    dnnl_stream_t stream;
    int64_t t, nb, ni, h, dirs;
    lstm_dir dir[2];
    dnnl_primitive_t tanh_c;
    /* x: the input; g: a direction's input rows (T * N x 4H); h, c: the
     * states (N x H); hr: one step's gates (N x 4H); tc: tanh(c) */
    dnnl_memory_t m_x, m_g, m_h, m_hr, m_c, m_tc;
    float *buf, *g, *hs, *cs, *hr, *tc;
} lstm_steps;

static void steps_free(void *p)
{
    lstm_steps *s = p;
    if (!s)
        return;
    for (int d = 0; d < 2; d++) {
        dnnl_primitive_destroy(s->dir[d].in_mm);
        dnnl_primitive_destroy(s->dir[d].step_mm);
        dnnl_memory_destroy(s->dir[d].w);
        dnnl_memory_destroy(s->dir[d].r);
        dnnl_memory_destroy(s->dir[d].bias);
    }
    dnnl_primitive_destroy(s->tanh_c);
    dnnl_memory_t m[] = {s->m_x, s->m_g, s->m_h, s->m_hr, s->m_c, s->m_tc};
    for (size_t i = 0; i < sizeof m / sizeof *m; i++)
        dnnl_memory_destroy(m[i]);
    free(s->buf);
    free(s);
}

bool xf_dn_lstm_steps_ok(const xf_node *n, const xf_tensor_view *in)
{
    const xf_shape *x = &in[0].shape, *r = &in[2].shape;
    return n->op == XF_OP_LSTM && x->dims[1] >= 1 && x->dims[1] <= LSTM_STEPS_MAX_BATCH && x->dims[0] >= 1 &&
           r->dims[2] >= LSTM_STEPS_MIN_HIDDEN;
}

static void md_2d(dnnl_memory_desc_t *md, int64_t rows, int64_t cols, int64_t row_stride)
{
    dnnl_memory_desc_init_by_strides(md, 2, (dnnl_dims_t){rows, cols}, dnnl_f32, (dnnl_dims_t){row_stride, 1});
}

/* A matmul of src (rows x k) by the constant (cols x k) at w_data, read
 * transposed, packed into *w in the layout the primitive wants; with a
 * bias (one row) or, when step, adding to what dst holds and taking the
 * logistic function of the sum. */
static xf_status product(xf_dn_ctx *c, const xf_node *n, int64_t rows, int64_t k, int64_t cols, const float *w_data,
                         const float *bias, bool step, dnnl_primitive_t *prim, dnnl_memory_t *w, dnnl_memory_t *b,
                         xf_error *err)
{
    dnnl_memory_desc_t src, w_have, w_any, dst, bmd;
    md_2d(&src, rows, k, k);
    dnnl_memory_desc_init_by_strides(&w_have, 2, (dnnl_dims_t){k, cols}, dnnl_f32, (dnnl_dims_t){1, k});
    dnnl_memory_desc_init_by_tag(&w_any, 2, (dnnl_dims_t){k, cols}, dnnl_f32, dnnl_format_tag_any);
    md_2d(&dst, rows, cols, cols);
    md_2d(&bmd, 1, cols, cols);
    dnnl_matmul_desc_t md;
    XF_DN_TRY(err, n, dnnl_matmul_desc_init(&md, &src, &w_any, bias ? &bmd : NULL, &dst));
    dnnl_primitive_attr_t attr = NULL;
    xf_dn_post posts[2] = {{.sum = true, .alg = dnnl_alg_kind_undef}, {.alg = dnnl_eltwise_logistic}};
    xf_status s = step ? xf_dn_post_attr(n, posts, 2, &attr, err) : XF_OK;
    if (s != XF_OK)
        return s;
    dnnl_primitive_desc_t pd;
    dnnl_status_t ds = dnnl_primitive_desc_create(&pd, &md, attr, c->engine, NULL);
    dnnl_primitive_attr_destroy(attr);
    if (ds != dnnl_success)
        return xf_dn_fail(err, n, "matmul of an LSTM step", ds);
    const dnnl_memory_desc_t *want = dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
    dnnl_memory_t have = NULL;
    dnnl_primitive_desc_t rpd = NULL;
    dnnl_primitive_t reorder = NULL;
    ds = dnnl_primitive_create(prim, pd);
    if (ds == dnnl_success)
        ds = dnnl_memory_create(w, want, c->engine, DNNL_MEMORY_ALLOCATE);
    if (ds == dnnl_success)
        ds = dnnl_memory_create(&have, &w_have, c->engine, (void *)w_data);
    if (ds == dnnl_success)
        ds = dnnl_reorder_primitive_desc_create(&rpd, &w_have, c->engine, want, c->engine, NULL);
    if (ds == dnnl_success)
        ds = dnnl_primitive_create(&reorder, rpd);
    if (ds == dnnl_success) {
        dnnl_exec_arg_t args[2] = {{DNNL_ARG_FROM, have}, {DNNL_ARG_TO, *w}};
        ds = dnnl_primitive_execute(reorder, c->stream, 2, args);
    }
    if (ds == dnnl_success)
        ds = dnnl_stream_wait(c->stream);
    if (ds == dnnl_success && bias)
        ds = dnnl_memory_create(b, &bmd, c->engine, DNNL_MEMORY_ALLOCATE);
    if (ds == dnnl_success && bias) {
        void *p = NULL;
        ds = dnnl_memory_get_data_handle(*b, &p);
        if (ds == dnnl_success)
            memcpy(p, bias, sizeof(float) * (size_t)cols);
    }
    dnnl_primitive_destroy(reorder);
    dnnl_primitive_desc_destroy(rpd);
    dnnl_memory_destroy(have);
    dnnl_primitive_desc_destroy(pd);
    return ds == dnnl_success ? XF_OK : xf_dn_fail(err, n, "weights of an LSTM step", ds);
}

/* An eltwise primitive of alg over data described by md (src and dst). */
static xf_status eltwise(xf_dn_ctx *c, const xf_node *n, dnnl_alg_kind_t alg, const dnnl_memory_desc_t *md,
                         dnnl_primitive_t *prim, xf_error *err)
{
    dnnl_eltwise_desc_t ed;
    XF_DN_TRY(err, n, dnnl_eltwise_forward_desc_init(&ed, dnnl_forward_inference, alg, md, 0.0f, 0.0f));
    dnnl_primitive_desc_t pd;
    XF_DN_TRY(err, n, dnnl_primitive_desc_create(&pd, &ed, NULL, c->engine, NULL));
    dnnl_status_t ds = dnnl_primitive_create(prim, pd);
    dnnl_primitive_desc_destroy(pd);
    return ds == dnnl_success ? XF_OK : xf_dn_fail(err, n, "eltwise of an LSTM step", ds);
}

static xf_status exec2(const lstm_steps *s, const xf_node *n, dnnl_primitive_t p, int a0, dnnl_memory_t m0, int a1,
                       dnnl_memory_t m1, xf_error *err)
{
    dnnl_exec_arg_t args[2] = {{a0, m0}, {a1, m1}};
    XF_DN_TRY(err, n, dnnl_primitive_execute(p, s->stream, 2, args));
    return XF_OK;
}

static bool wanted(const xf_node *n, const xf_tensor_view *out, int k)
{
    return k < n->n_outputs && n->outputs[k] >= 0 && xf_rt_present(&out[k]);
}

/* One direction: its input rows, then every step. */
static xf_status run_direction(const lstm_steps *s, const xf_node *n, int64_t d, bool reverse,
                               const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err)
{
    int64_t nb = s->nb, h = s->h, h4 = 4 * h;
    const lstm_dir *dr = &s->dir[d];
    dnnl_exec_arg_t args[4] = {{DNNL_ARG_SRC, s->m_x}, {DNNL_ARG_WEIGHTS, dr->w}, {DNNL_ARG_BIAS, dr->bias},
                               {DNNL_ARG_DST, s->m_g}};
    XF_DN_TRY(err, n, dnnl_primitive_execute(dr->in_mm, s->stream, 4, args));
    for (int64_t i = 0; i < nb * h; i++) {
        s->hs[i] = n->n_inputs > 5 && xf_rt_present(&in[5]) ? ((const float *)in[5].data)[d * nb * h + i] : 0.0f;
        s->cs[i] = n->n_inputs > 6 && xf_rt_present(&in[6]) ? ((const float *)in[6].data)[d * nb * h + i] : 0.0f;
    }
    xf_status st = XF_OK;
    for (int64_t step = 0; step < s->t && st == XF_OK; step++) {
        int64_t t = reverse ? s->t - 1 - step : step;
        memcpy(s->hr, s->g + t * nb * h4, sizeof(float) * (size_t)(nb * h4));
        dnnl_exec_arg_t sa[3] = {{DNNL_ARG_SRC, s->m_h}, {DNNL_ARG_WEIGHTS, dr->r}, {DNNL_ARG_DST, s->m_hr}};
        XF_DN_TRY(err, n, dnnl_primitive_execute(dr->step_mm, s->stream, 3, sa));
        for (int64_t b = 0; b < nb; b++) { /* ONNX's gate order: i, o, f, c */
            const float *gi = s->hr + b * h4, *gf = gi + 2 * h, *gg = gi + 3 * h;
            float *c = s->cs + b * h;
            for (int64_t j = 0; j < h; j++)
                c[j] = c[j] * gf[j] + gi[j] * (2.0f * gg[j] - 1.0f);
        }
        st = exec2(s, n, s->tanh_c, DNNL_ARG_SRC, s->m_c, DNNL_ARG_DST, s->m_tc, err);
        if (st == XF_OK)
            XF_DN_TRY(err, n, dnnl_stream_wait(s->stream));
        for (int64_t b = 0; b < nb && st == XF_OK; b++) {
            const float *go = s->hr + b * h4 + h, *tc = s->tc + b * h;
            float *hb = s->hs + b * h;
            for (int64_t j = 0; j < h; j++)
                hb[j] = go[j] * tc[j];
            if (wanted(n, out, 0))
                memcpy((float *)out[0].data + ((t * s->dirs + d) * nb + b) * h, hb, sizeof(float) * (size_t)h);
        }
    }
    if (st == XF_OK && wanted(n, out, 1))
        memcpy((float *)out[1].data + d * nb * h, s->hs, sizeof(float) * (size_t)(nb * h));
    if (st == XF_OK && wanted(n, out, 2))
        memcpy((float *)out[2].data + d * nb * h, s->cs, sizeof(float) * (size_t)(nb * h));
    return st;
}

static xf_status steps_run(xf_dn_node *st, const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out,
                           xf_error *err)
{
    lstm_steps *s = st->own;
    XF_DN_TRY(err, n, dnnl_memory_set_data_handle(s->m_x, in[0].data));
    xf_status r = XF_OK;
    for (int64_t d = 0; d < s->dirs && r == XF_OK; d++)
        r = run_direction(s, n, d, n->attrs.rnn.direction == 1 || d == 1, in, out, err);
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

xf_status xf_dn_lstm_steps_prepare(xf_dn_ctx *c, const xf_node *n, const xf_tensor_view *in, xf_dn_node *st,
                                   xf_error *err)
{
    lstm_steps *s = calloc(1, sizeof *s);
    if (!s)
        return xf_error_set(err, XF_ERR_NOMEM, "out of memory in LSTM");
    st->own = s;
    st->own_free = steps_free;
    s->stream = c->stream;
    s->t = in[0].shape.dims[0];
    s->nb = in[0].shape.dims[1];
    s->ni = in[0].shape.dims[2];
    s->h = in[2].shape.dims[2];
    s->dirs = n->attrs.rnn.direction == 2 ? 2 : 1;
    int64_t t = s->t, nb = s->nb, ni = s->ni, h = s->h, h4 = 4 * h;
    s->buf = malloc(sizeof(float) * (size_t)(t * nb * h4 + nb * (h4 + 3 * h) + h4));
    if (!s->buf)
        return xf_error_set(err, XF_ERR_NOMEM, "out of memory in LSTM");
    s->g = s->buf;
    s->hr = s->g + t * nb * h4;
    s->hs = s->hr + nb * h4;
    s->cs = s->hs + nb * h;
    s->tc = s->cs + nb * h;
    float *bias = s->tc + nb * h;
    const float *b = n->n_inputs > 3 && xf_rt_present(&in[3]) ? in[3].data : NULL;
    int64_t most = ni > h ? ni : h;
    float *w2 = malloc(sizeof(float) * (size_t)(h4 * most));
    xf_status rs = w2 ? XF_OK : xf_error_set(err, XF_ERR_NOMEM, "out of memory in LSTM");
    for (int64_t d = 0; d < s->dirs && rs == XF_OK; d++) {
        for (int64_t j = 0; j < h4; j++)
            bias[j] = (b ? b[d * 2 * h4 + j] + b[d * 2 * h4 + h4 + j] : 0.0f) * (j < 3 * h ? 1.0f : 2.0f);
        doubled_c_gate(in[1].data, d, h, ni, w2);
        rs = product(c, n, t * nb, ni, h4, w2, bias, false, &s->dir[d].in_mm, &s->dir[d].w, &s->dir[d].bias, err);
        doubled_c_gate(in[2].data, d, h, h, w2);
        if (rs == XF_OK)
            rs = product(c, n, nb, h, h4, w2, NULL, true, &s->dir[d].step_mm, &s->dir[d].r, NULL, err);
    }
    free(w2);
    dnnl_memory_desc_t x, g, hmd, hr;
    md_2d(&x, t * nb, ni, ni);
    md_2d(&g, t * nb, h4, h4);
    md_2d(&hmd, nb, h, h);
    md_2d(&hr, nb, h4, h4);
    if (rs == XF_OK)
        rs = eltwise(c, n, dnnl_eltwise_tanh, &hmd, &s->tanh_c, err);
    if (rs == XF_OK)
        rs = memory(c, n, &x, DNNL_MEMORY_NONE, &s->m_x, err);
    if (rs == XF_OK)
        rs = memory(c, n, &g, s->g, &s->m_g, err);
    if (rs == XF_OK)
        rs = memory(c, n, &hmd, s->hs, &s->m_h, err);
    if (rs == XF_OK)
        rs = memory(c, n, &hr, s->hr, &s->m_hr, err);
    if (rs == XF_OK)
        rs = memory(c, n, &hmd, s->cs, &s->m_c, err);
    if (rs == XF_OK)
        rs = memory(c, n, &hmd, s->tc, &s->m_tc, err);
    if (rs == XF_OK)
        st->own_run = steps_run;
    return rs;
}
