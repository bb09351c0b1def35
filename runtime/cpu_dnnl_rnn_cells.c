/* The cells of the recurrences run step by step (cpu_dnnl_rnn_steps.c):
 * what a step does after its products, and the activation functions as
 * chains of oneDNN's eltwise primitives (ThresholdedRelu and Softsign,
 * which oneDNN lacks, as loops of this file). */
#include "cpu_dnnl_rnn_steps.h"

#include <float.h>
#include <math.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

/* An eltwise op over fewer elements runs on one thread: waking the
 * others cost more than the work.  On two threads a GRU of 256 units with
 * HardSigmoid at one batch entry took 1.27 ms with its chains on both, and
 * 0.75 on one (ONNX Runtime 0.78). */
enum { ELTWISE_ONE_THREAD = 4096 };

int xf_dn_steps_one_thread_if(bool few)
{
#ifdef _OPENMP
    int threads = omp_get_max_threads();
    if (few)
        omp_set_num_threads(1);
    return threads;
#else
    (void)few;
    return 1;
#endif
}

void xf_dn_steps_threads_back(int threads)
{
#ifdef _OPENMP
    omp_set_num_threads(threads);
#else
    (void)threads;
#endif
}

xf_status xf_dn_steps_eltwise_exec(const xf_dn_steps *s, const xf_node *n, dnnl_primitive_t p, dnnl_memory_t src,
                                   dnnl_memory_t dst, int64_t count, xf_error *err)
{
    int threads = xf_dn_steps_one_thread_if(count < ELTWISE_ONE_THREAD);
    xf_status st = xf_dn_steps_exec2(s, n, p, DNNL_ARG_SRC, src, DNNL_ARG_DST, dst, err);
    xf_dn_steps_threads_back(threads);
    return st;
}

/* The chain of eltwise ops computing ONNX's activation f with alpha and
 * beta; returns its length (0: f is no activation). */
static int act_chain(int f, float al, float be, xf_dn_act_op *ops)
{
    switch (f) {
    case XF_RNN_RELU: ops[0] = (xf_dn_act_op){dnnl_eltwise_relu, 0.0f, 0.0f}; return 1;
    case XF_RNN_TANH: ops[0] = (xf_dn_act_op){dnnl_eltwise_tanh, 0.0f, 0.0f}; return 1;
    case XF_RNN_SIGMOID: ops[0] = (xf_dn_act_op){dnnl_eltwise_logistic, 0.0f, 0.0f}; return 1;
    case XF_RNN_AFFINE: ops[0] = (xf_dn_act_op){dnnl_eltwise_linear, al, be}; return 1;
    case XF_RNN_LEAKY_RELU: ops[0] = (xf_dn_act_op){dnnl_eltwise_relu, al, 0.0f}; return 1;
    case XF_RNN_ELU: ops[0] = (xf_dn_act_op){dnnl_eltwise_elu, al, 0.0f}; return 1;
    case XF_RNN_SOFTPLUS: ops[0] = (xf_dn_act_op){dnnl_eltwise_soft_relu, 0.0f, 0.0f}; return 1;
    case XF_RNN_HARD_SIGMOID: /* max(0, min(1, al x + be)) */
        ops[0] = (xf_dn_act_op){dnnl_eltwise_linear, al, be};
        ops[1] = (xf_dn_act_op){dnnl_eltwise_clip, 0.0f, 1.0f};
        return 2;
    case XF_RNN_SCALED_TANH: /* al tanh(be x) */
        ops[0] = (xf_dn_act_op){dnnl_eltwise_linear, be, 0.0f};
        ops[1] = (xf_dn_act_op){dnnl_eltwise_tanh, 0.0f, 0.0f};
        ops[2] = (xf_dn_act_op){dnnl_eltwise_linear, al, 0.0f};
        return 3;
    case XF_RNN_THRESHOLDED_RELU:
    case XF_RNN_SOFTSIGN: ops[0] = (xf_dn_act_op){dnnl_alg_kind_undef, al, 0.0f, f}; return 1;
    default: return 0;
    }
}

/* The activation functions per direction: LSTM's (and
 * DynamicQuantizeLSTM's) f, g and h, GRU's f and g, RNN's one. */
static int functions_of(const xf_node *n) { return n->op == XF_OP_RNN ? 1 : n->op == XF_OP_GRU ? 2 : 3; }

/* The chain of function `which` of direction d of node n. */
static int act_of(const xf_node *n, int64_t d, int which, xf_dn_act_op *ops)
{
    static const unsigned char defaults[3] = {XF_RNN_SIGMOID, XF_RNN_TANH, XF_RNN_TANH};
    const xf_rnn_attrs *a = &n->attrs.rnn;
    int i = (int)d * functions_of(n) + which;
    int f = a->n_acts ? a->acts[i] : n->op == XF_OP_RNN ? XF_RNN_TANH : defaults[which];
    return act_chain(f, a->n_acts ? a->act_alpha[i] : 0.0f, a->n_acts ? a->act_beta[i] : 0.0f, ops);
}

bool xf_dn_rnn_steps_takes(const xf_node *n)
{
    if (n->op != XF_OP_LSTM && n->op != XF_OP_GRU && n->op != XF_OP_RNN && n->op != XF_OP_MS_DYNAMIC_QUANTIZE_LSTM)
        return false;
    xf_dn_act_op ops[3];
    for (int64_t d = 0; d < (n->attrs.rnn.direction == 2 ? 2 : 1); d++)
        for (int w = 0; w < functions_of(n); w++)
            if (act_of(n, d, w, ops) == 0)
                return false;
    return true;
}

/* An eltwise primitive of alg over data described by md (src and dst). */
xf_status xf_dn_steps_eltwise(xf_dn_ctx *c, const xf_node *n, xf_dn_act_op op, const dnnl_memory_desc_t *md,
                              dnnl_primitive_t *prim, xf_error *err)
{
    dnnl_eltwise_desc_t ed;
    XF_DN_TRY(err, n, dnnl_eltwise_forward_desc_init(&ed, dnnl_forward_inference, op.alg, md, op.alpha, op.beta));
    dnnl_primitive_desc_t pd;
    XF_DN_TRY(err, n, dnnl_primitive_desc_create(&pd, &ed, NULL, c->engine, NULL));
    dnnl_status_t ds = dnnl_primitive_create(prim, pd);
    dnnl_primitive_desc_destroy(pd);
    return ds == dnnl_success ? XF_OK : xf_dn_fail(err, n, "eltwise of a recurrence's step", ds);
}

xf_status xf_dn_steps_exec2(const xf_dn_steps *s, const xf_node *n, dnnl_primitive_t p, int a0, dnnl_memory_t m0,
                            int a1, dnnl_memory_t m1, xf_error *err)
{
    dnnl_exec_arg_t args[2] = {{a0, m0}, {a1, m1}};
    XF_DN_TRY(err, n, dnnl_primitive_execute(p, s->stream, 2, args));
    return XF_OK;
}

xf_status xf_dn_steps_exec(xf_dn_steps *s, const xf_node *n, dnnl_primitive_t p, dnnl_memory_t src, dnnl_memory_t w,
                           dnnl_memory_t bias, dnnl_memory_t dst, xf_error *err)
{
    dnnl_exec_arg_t args[4] = {{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, w}, {DNNL_ARG_DST, dst}};
    int k = 3;
    if (bias)
        args[k++] = (dnnl_exec_arg_t){DNNL_ARG_BIAS, bias};
    if (s->quantized)
        args[k++] = (dnnl_exec_arg_t){DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_SRC, s->m_zp};
    XF_DN_TRY(err, n, dnnl_primitive_execute(p, s->stream, k, args));
    return XF_OK;
}

xf_status xf_dn_steps_wait(const xf_dn_steps *s, const xf_node *n, xf_error *err)
{
    XF_DN_TRY(err, n, dnnl_stream_wait(s->stream));
    return XF_OK;
}

/* LSTM's cell after its gates' logistic functions: c = f c + i g (the c
 * gate's tanh is 2 logistic(2x) - 1), tanh(c), h = o tanh(c). */
xf_status xf_dn_steps_lstm_cell(xf_dn_steps *s, const xf_node *n, xf_error *err)
{
    int64_t h = s->h, h4 = s->hg;
    for (int64_t b = 0; b < s->nb; b++) { /* ONNX's gate order: i, o, f, c */
        const float *gi = s->hr + b * h4, *gf = gi + 2 * h, *gg = gi + 3 * h;
        float *c = s->cs + b * h;
        for (int64_t j = 0; j < h; j++)
            c[j] = c[j] * gf[j] + gi[j] * (2.0f * gg[j] - 1.0f);
    }
    xf_status st = xf_dn_steps_eltwise_exec(s, n, s->tanh_c, s->m_c, s->m_tc, s->nb * h, err);
    if (st == XF_OK)
        st = xf_dn_steps_wait(s, n, err);
    for (int64_t b = 0; b < s->nb && st == XF_OK; b++) {
        const float *go = s->hr + b * h4 + h, *tc = s->tc + b * h;
        float *hb = s->hs + b * h;
        for (int64_t j = 0; j < h; j++)
            hb[j] = go[j] * tc[j];
    }
    return st;
}

/* An activation of this file's (op.own) over count floats of x into y,
 * as cpu_ref computes it. */
static void own_act(xf_dn_act_op op, const float *x, float *y, int64_t count)
{
    for (int64_t i = 0; op.own == XF_RNN_THRESHOLDED_RELU && i < count; i++)
        y[i] = x[i] > op.alpha ? x[i] : 0.0f;
    for (int64_t i = 0; op.own == XF_RNN_SOFTSIGN && i < count; i++)
        y[i] = x[i] / (1.0f + fabsf(x[i]));
}

/* Function `which` of direction d over src into dst (the first op of its
 * chain from src, the rest in place; both dense). */
static xf_status run_chain(const xf_dn_steps *s, const xf_node *n, int64_t d, int which, dnnl_memory_t src,
                           dnnl_memory_t dst, xf_error *err)
{
    const dnnl_memory_desc_t *md = NULL;
    XF_DN_TRY(err, n, dnnl_memory_get_memory_desc(dst, &md));
    int64_t count = (int64_t)(dnnl_memory_desc_get_size(md) / sizeof(float));
    int threads = xf_dn_steps_one_thread_if(count < ELTWISE_ONE_THREAD);
    xf_status st = XF_OK;
    for (int k = 0; k < s->n_ops[d][which] && st == XF_OK; k++) {
        if (s->ops[d][which][k]) {
            st = xf_dn_steps_exec2(s, n, s->ops[d][which][k], DNNL_ARG_SRC, k ? dst : src, DNNL_ARG_DST, dst, err);
            continue;
        }
        void *x = NULL, *y = NULL;
        st = xf_dn_steps_wait(s, n, err);
        if (st == XF_OK && (dnnl_memory_get_data_handle(k ? dst : src, &x) != dnnl_success ||
                            dnnl_memory_get_data_handle(dst, &y) != dnnl_success))
            st = xf_dn_fail(err, n, "memory of a recurrence's step", dnnl_invalid_arguments);
        if (st == XF_OK)
            own_act(s->act_ops[d][which][k], x, y, count);
    }
    xf_dn_steps_threads_back(threads);
    return st;
}

/* Row b of gate k's block of gm. */
static float *gate_row(const xf_dn_steps *s, int k, int64_t b) { return s->gm + (k * s->nb + b) * s->h; }

/* The step's gates from hr's rows into gm, gate by gate (RNN: gm is hr,
 * its one gate; GRU: hr holds the z and r rows, N x 2H, then h's, N x H,
 * so that the z and r rows' product writes dense rows, which oneDNN's
 * brgemm kernel takes: into rows of 3H its gemm kernel ran, 4 to 5 times
 * slower). */
static void gates_apart(xf_dn_steps *s)
{
    int64_t h = s->h;
    for (int k = 0; s->gm != s->hr && k * h < s->hg; k++)
        for (int64_t b = 0; b < s->nb; b++) {
            const float *from = !s->gru ? s->hr + b * s->hg + k * h
                                : k < 2 ? s->hr + (2 * b + k) * h
                                        : s->hr + (2 * s->nb + b) * h;
            memcpy(gate_row(s, k, b), from, sizeof(float) * (size_t)h);
        }
}

/* Adds a peephole term p[j] * c[j] to gate k of every batch entry, then
 * clips it, as cpu_ref does before the gate's function (p NULL: no
 * term). */
static void peep_and_clip(xf_dn_steps *s, int k, const float *p)
{
    for (int64_t b = 0; b < s->nb; b++) {
        float *g = gate_row(s, k, b);
        const float *c = s->cs + b * s->h;
        for (int64_t j = 0; p && j < s->h; j++)
            g[j] += p[j] * c[j];
        for (int64_t j = 0; s->clip < FLT_MAX && j < s->h; j++)
            g[j] = g[j] < -s->clip ? -s->clip : g[j] > s->clip ? s->clip : g[j];
    }
}

/* GRU's step of direction d after its z and r rows' product (added to
 * the step's input rows): clip and f for z and r; the h gate's input,
 * its input row plus (r h) R_h, which the h gate's product adds, or with
 * linear_before_reset plus r (h R_h + Rb_h); its clip and g; then
 * h = (1 - z) g(..) + z h. */
static xf_status gru_step(xf_dn_steps *s, const xf_node *n, int64_t d, xf_error *err)
{
    int64_t h = s->h;
    const xf_dn_steps_dir *dr = &s->dir[d];
    peep_and_clip(s, 0, NULL); /* z */
    peep_and_clip(s, 1, NULL); /* r */
    xf_status st = run_chain(s, n, d, 0, s->m_blk[0], s->m_blk[0], err);
    if (st == XF_OK)
        st = xf_dn_steps_wait(s, n, err);
    for (int64_t b = 0; b < s->nb && !s->lbr && st == XF_OK; b++) { /* r h, the product's rows */
        const float *r = gate_row(s, 1, b), *hb = s->hs + b * h;
        float *rh = s->tc + b * h;
        for (int64_t j = 0; j < h; j++)
            rh[j] = r[j] * hb[j];
    }
    if (st == XF_OK)
        st = xf_dn_steps_exec(s, n, dr->step_mm2, s->lbr ? s->m_h : s->m_tc, dr->r2, dr->bias2,
                              s->lbr ? s->m_tc : s->m_blk[1], err);
    if (st == XF_OK)
        st = xf_dn_steps_wait(s, n, err);
    for (int64_t b = 0; b < s->nb && s->lbr && st == XF_OK; b++) { /* r (h R_h + Rb_h) */
        float *gh = gate_row(s, 2, b);
        const float *r = gate_row(s, 1, b), *p = s->tc + b * h;
        for (int64_t j = 0; j < h; j++)
            gh[j] += r[j] * p[j];
    }
    peep_and_clip(s, 2, NULL);
    if (st == XF_OK)
        st = run_chain(s, n, d, 1, s->m_blk[1], s->m_blk[1], err);
    if (st == XF_OK)
        st = xf_dn_steps_wait(s, n, err);
    for (int64_t b = 0; b < s->nb && st == XF_OK; b++) {
        const float *z = gate_row(s, 0, b), *gh = gate_row(s, 2, b);
        float *hb = s->hs + b * h;
        for (int64_t j = 0; j < h; j++)
            hb[j] = (1.0f - z[j]) * gh[j] + z[j] * hb[j];
    }
    return st;
}

/* A step of direction d in the general forms, after the product, its
 * gates taken apart first: RNN's clip and f; GRU's (gru_step); LSTM's
 * peepholes, clip and f for i and f, g for the c gate, c = f c + i g
 * (f = 1 - i with input_forget), the peephole, clip and f for o, h(c)
 * and h = o h(c). */
xf_status xf_dn_steps_general(xf_dn_steps *s, const xf_node *n, int64_t d, xf_error *err)
{
    int64_t h = s->h;
    const float *p = s->peep ? s->peep + d * 3 * h : NULL;
    xf_status st = xf_dn_steps_wait(s, n, err);
    if (st != XF_OK)
        return st;
    gates_apart(s);
    if (s->gru)
        return gru_step(s, n, d, err);
    if (!s->lstm) {
        peep_and_clip(s, 0, NULL);
        st = run_chain(s, n, d, 0, s->m_blk[0], s->m_blk[0], err);
        return st == XF_OK ? xf_dn_steps_wait(s, n, err) : st;
    }
    peep_and_clip(s, 0, p);                    /* i */
    peep_and_clip(s, 2, p ? p + 2 * h : NULL); /* f */
    peep_and_clip(s, 3, NULL);                 /* the c gate */
    st = run_chain(s, n, d, 0, s->m_blk[0], s->m_blk[0], err);
    if (st == XF_OK && !s->input_forget)
        st = run_chain(s, n, d, 0, s->m_blk[2], s->m_blk[2], err);
    if (st == XF_OK)
        st = run_chain(s, n, d, 1, s->m_blk[3], s->m_blk[3], err);
    if (st == XF_OK)
        st = xf_dn_steps_wait(s, n, err);
    for (int64_t b = 0; b < s->nb && st == XF_OK; b++) {
        const float *gi = gate_row(s, 0, b), *gf = gate_row(s, 2, b), *gg = gate_row(s, 3, b);
        float *c = s->cs + b * h;
        for (int64_t j = 0; j < h; j++)
            c[j] = (s->input_forget ? 1.0f - gi[j] : gf[j]) * c[j] + gi[j] * gg[j];
    }
    peep_and_clip(s, 1, p ? p + h : NULL); /* o, with the new c */
    if (st == XF_OK)
        st = run_chain(s, n, d, 0, s->m_blk[1], s->m_blk[1], err);
    if (st == XF_OK)
        st = run_chain(s, n, d, 2, s->m_c, s->m_tc, err);
    if (st == XF_OK)
        st = xf_dn_steps_wait(s, n, err);
    for (int64_t b = 0; b < s->nb && st == XF_OK; b++) {
        const float *go = gate_row(s, 1, b), *tc = s->tc + b * h;
        float *hb = s->hs + b * h;
        for (int64_t j = 0; j < h; j++)
            hb[j] = go[j] * tc[j];
    }
    return st;
}

/* The general forms' eltwise chains (f and g over a gate's block of gm,
 * GRU's f over z's and r's together, LSTM's h from c into tc) and the
 * gates' blocks' memories. */
xf_status xf_dn_steps_chains(xf_dn_ctx *c, const xf_node *n, xf_dn_steps *s, xf_error *err)
{
    dnnl_memory_desc_t blk, zr;
    xf_dn_steps_md(&blk, s->nb, s->h, s->h);
    xf_dn_steps_md(&zr, 2 * s->nb, s->h, s->h);
    xf_status rs = XF_OK;
    for (int64_t d = 0; d < s->dirs; d++)
        for (int w = 0; w < functions_of(n); w++) {
            xf_dn_act_op ops[3];
            s->n_ops[d][w] = act_of(n, d, w, ops);
            const dnnl_memory_desc_t *md = s->gru && w == 0 ? &zr : &blk;
            for (int k = 0; k < s->n_ops[d][w] && rs == XF_OK; k++) {
                s->act_ops[d][w][k] = ops[k];
                if (!ops[k].own)
                    rs = xf_dn_steps_eltwise(c, n, ops[k], md, &s->ops[d][w][k], err);
            }
        }
    for (int k = 0; k < (s->lstm ? 4 : s->gru ? 2 : 1) && rs == XF_OK; k++) /* GRU's: z and r, h */
        rs = dnnl_memory_create(&s->m_blk[k], s->gru && k == 0 ? &zr : &blk, c->engine,
                                gate_row(s, s->gru && k ? 2 : k, 0)) == dnnl_success
                 ? XF_OK
                 : xf_dn_fail(err, n, "memory of a recurrence's step", dnnl_out_of_memory);
    return rs;
}
