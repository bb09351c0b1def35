/* What the recurrences run step by step share: the loop over the steps
 * and the products (cpu_dnnl_rnn_steps.c), and what a step does after
 * them, its cell (cpu_dnnl_rnn_cells.c). */
#ifndef XF_CPU_DNNL_RNN_STEPS_H
#define XF_CPU_DNNL_RNN_STEPS_H

#include "cpu_dnnl.h"

typedef struct xf_dn_steps_dir {
    dnnl_primitive_t in_mm, step_mm;
    dnnl_memory_t w, r, bias; /* W and R packed; LSTM: W's bias plus R's */
    /* GRU: step_mm the z and r rows', step_mm2 the h gate's product (R_h
     * packed; with linear_before_reset, its bias Rb_h) */
    dnnl_primitive_t step_mm2;
    dnnl_memory_t r2, bias2;
    /* DynamicQuantizeLSTM: the bias (4H), then in the same block the
     * weights' scales per column (4H each), and zero points per column (as
     * the int8 products see them: uint8 weights' less 128; NULL where all
     * are 0), in zps (W's, then R's) */
    float *bias_row, *w_scales, *r_scales;
    int32_t *zps;
    const int32_t *w_zps, *r_zps;
} xf_dn_steps_dir;

/* One oneDNN eltwise op of an activation function's chain, or (own: an
 * xf_rnn_act) a loop of cpu_dnnl_rnn_cells.c's. */
typedef struct xf_dn_act_op {
    dnnl_alg_kind_t alg;
    float alpha, beta;
    int own;
} xf_dn_act_op;

typedef struct xf_dn_steps {
    dnnl_stream_t stream;
    int64_t t, nb, ni, h, dirs, hg; /* hg: the gates' columns, 4H (LSTM), 3H (GRU) or H (RNN) */
    bool quantized, lstm, gru, lbr; /* lstm: LSTM or DynamicQuantizeLSTM; lbr: linear_before_reset */
    bool batch_first;               /* layout 1: X [N, T, I], Y [N, T, D, H], states [N, D, H] */
    /* general: the forms oneDNN's RNN primitive does not take (clip,
     * input_forget, peepholes, other activations), each function a chain
     * of eltwise primitives (f and g over gate blocks, h over the state)
     * run after the product; clip FLT_MAX when none */
    bool general, input_forget;
    const float *peep;
    float clip;
    int n_ops[2][3];
    dnnl_primitive_t ops[2][3][3]; /* NULL where act_ops' op is a loop of the cells' own */
    xf_dn_act_op act_ops[2][3][3];
    dnnl_memory_t m_blk[4]; /* the gates' blocks of gm: i, o, f, c (GRU: z and r, h; RNN: its one) */
    xf_dn_steps_dir dir[2];
    dnnl_primitive_t tanh_c;
    /* x: the input; g: a direction's input rows (T * N x 4H); h, c: the
     * states (N x H); hr: one step's gates (N x 4H; GRU: see
     * gates_apart); tc: tanh(c) (GRU:
     * r h, or with linear_before_reset h R_h + Rb_h);
     * DynamicQuantizeLSTM: qx and qh the codes of x and h, zp their zero
     * point, acc_x and acc_h the products' int32 sums (on acc) */
    dnnl_memory_t m_x, m_g, m_h, m_hr, m_c, m_tc, m_qx, m_qh, m_zp, m_acc_x, m_acc_h;
    float *buf, *g, *hs, *cs, *hr, *tc, *keep; /* keep: the states of entries past their length */
    /* the general forms: the step's gates gate by gate, each an N x H
     * block (RNN: hr).  oneDNN's eltwise kernels take dense data alone;
     * on a gate's columns of hr they ran its reference kernel, 5 to 10
     * times slower at 4 batch entries. */
    float *gm;
    int64_t *lens;
    uint8_t *qx, *qh;
    int32_t zp, *acc;
} xf_dn_steps;

static inline void xf_dn_steps_md(dnnl_memory_desc_t *md, int64_t rows, int64_t cols, int64_t row_stride)
{
    dnnl_memory_desc_init_by_strides(md, 2, (dnnl_dims_t){rows, cols}, dnnl_f32, (dnnl_dims_t){row_stride, 1});
}

/* An eltwise primitive of op over data described by md (src and dst). */
xf_status xf_dn_steps_eltwise(xf_dn_ctx *c, const xf_node *n, xf_dn_act_op op, const dnnl_memory_desc_t *md,
                              dnnl_primitive_t *prim, xf_error *err);
/* The general forms' eltwise chains and the gate blocks' memories. */
xf_status xf_dn_steps_chains(xf_dn_ctx *c, const xf_node *n, xf_dn_steps *s, xf_error *err);
/* Runs product p of src by the packed weights w (and bias) into dst. */
xf_status xf_dn_steps_exec(xf_dn_steps *s, const xf_node *n, dnnl_primitive_t p, dnnl_memory_t src, dnnl_memory_t w,
                           dnnl_memory_t bias, dnnl_memory_t dst, xf_error *err);
/* Runs primitive p with two arguments. */
xf_status xf_dn_steps_exec2(const xf_dn_steps *s, const xf_node *n, dnnl_primitive_t p, int a0, dnnl_memory_t m0,
                            int a1, dnnl_memory_t m1, xf_error *err);
xf_status xf_dn_steps_wait(const xf_dn_steps *s, const xf_node *n, xf_error *err);
/* One OpenMP thread for what this thread runs next where few (oneDNN's
 * primitives among it); returns the threads to give back. */
int xf_dn_steps_one_thread_if(bool few);
void xf_dn_steps_threads_back(int threads);
/* Runs eltwise primitive p from src into dst, count elements (on one
 * thread where they are few). */
xf_status xf_dn_steps_eltwise_exec(const xf_dn_steps *s, const xf_node *n, dnnl_primitive_t p, dnnl_memory_t src,
                                   dnnl_memory_t dst, int64_t count, xf_error *err);
/* The cells: LSTM's after its gates' logistic functions; a step of
 * direction d in the general forms after its product. */
xf_status xf_dn_steps_lstm_cell(xf_dn_steps *s, const xf_node *n, xf_error *err);
xf_status xf_dn_steps_general(xf_dn_steps *s, const xf_node *n, int64_t d, xf_error *err);

#endif
