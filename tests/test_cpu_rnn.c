/* LSTM, GRU and RNN on the cpu backend against cpu_ref: the forms oneDNN's
 * RNN primitives run (every direction; with and without bias, initial
 * states and each output; GRU with and without linear_before_reset; RNN
 * with each activation oneDNN has; sequence lengths all of the whole
 * length; LSTMs of 256 hidden units, which the backend runs step by step
 * on its own), the forms it runs step by step at every size (shorter
 * sequences, clip, other activations, peepholes, batch-first layout), and
 * weights given at run time, which keep a recurrence on cpu_ref. */
#include "backend_util.h"
#include "cpu_dnnl_acts.h"
#include "core_builders.h"
#include "xf_runtime.h"
#include "xf_test_util.h"

#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

enum { T = 5, N = 3, I = 7, H = 6 };

typedef struct rnn_form {
    xf_op op;
    int direction, lbr, act;  /* act: RNN's (xf_rnn_act), or LSTM's and GRU's g; 0 the default */
    int act_f, act_h;         /* LSTM's and GRU's f, LSTM's h; 0 the default */
    bool bias, h0, c0, lens, short_lens, clip, peep, batch_first, forget, w_input; /* w_input: W a graph input */
    int outputs;              /* bit k: output k is used */
    int64_t h, nb;            /* hidden size and batch; 0: H and N */
} rnn_form;

static int gates(xf_op op) { return op == XF_OP_LSTM ? 4 : op == XF_OP_GRU ? 3 : 1; }

static xf_graph *rnn_graph(const rnn_form *f)
{
    xf_graph *g = xf_graph_create("rnn");
    int64_t h = f->h ? f->h : H, nb = f->nb ? f->nb : N;
    int64_t d = f->direction == 2 ? 2 : 1, rows = gates(f->op) * h;
    int x = xf_bt_input(g, XF_DT_FLOAT, f->batch_first ? SHAPE(nb, T, I) : SHAPE(T, nb, I));
    xf_shape ws = SHAPE(d, rows, I);
    int w = f->w_input ? xf_bt_input(g, XF_DT_FLOAT, ws) : xf_bt_random_const(g, ws, false);
    int ins[8] = {x, w, xf_bt_random_const(g, SHAPE(d, rows, h), false), -1, -1, -1, -1, -1};
    if (f->h) { /* R scaled by 1/16 (exact): a recurrence of 256 units that does not amplify the rounding */
        xf_tensor *r = g->values[ins[2]].init;
        for (int64_t i = 0; i < xf_tensor_numel(r); i++)
            ((float *)r->data)[i] *= 0.0625f;
    }
    if (f->bias)
        ins[3] = xf_bt_random_const(g, SHAPE(d, 2 * rows), false);
    if (f->lens) {
        int32_t lens[8] = {T, T, T, T, T, T, T, T};
        if (f->short_lens)
            lens[1] = 2;
        ins[4] = constant(g, NULL, XF_DT_INT32, SHAPE(nb), lens);
    }
    xf_shape state = f->batch_first ? SHAPE(nb, d, h) : SHAPE(d, nb, h);
    if (f->h0)
        ins[5] = xf_bt_input(g, XF_DT_FLOAT, state);
    if (f->c0)
        ins[6] = xf_bt_input(g, XF_DT_FLOAT, state);
    if (f->peep)
        ins[7] = xf_bt_random_const(g, SHAPE(d, 3 * h), false);
    int n_in = f->op == XF_OP_LSTM ? 8 : 6, n_out = f->op == XF_OP_LSTM ? 3 : 2;
    while (n_in > 3 && ins[n_in - 1] < 0)
        n_in--;
    int n = node(g, f->op, NULL, n_in, ins, n_out);
    xf_rnn_attrs *a = &attrs(g, n)->rnn;
    a->hidden_size = h;
    a->direction = f->direction;
    a->linear_before_reset = f->lbr;
    a->layout = f->batch_first;
    a->input_forget = f->forget;
    if (f->clip) {
        a->has_clip = true;
        a->clip = 0.5f;
    }
    int funcs = f->op == XF_OP_LSTM ? 3 : f->op == XF_OP_GRU ? 2 : 1; /* per direction */
    for (int k = 0; (f->act || f->act_f || f->act_h) && k < funcs * d; k++) {
        static const unsigned char defaults[3] = {XF_RNN_SIGMOID, XF_RNN_TANH, XF_RNN_TANH};
        int which = k % funcs, own = which == 1 ? f->act : which == 0 ? f->act_f : f->act_h;
        a->acts[k] = f->op == XF_OP_RNN ? (unsigned char)f->act : own ? (unsigned char)own : defaults[which];
        a->act_alpha[k] = 0.3f; /* read by Affine, LeakyRelu, HardSigmoid, Elu, ScaledTanh, ThresholdedRelu */
        a->act_beta[k] = 0.4f;
        a->n_acts = k + 1;
    }
    /* the outputs not used are absent (named "" in ONNX) */
    for (int k = 0; k < n_out; k++) {
        if (f->outputs >> k & 1)
            xf_graph_add_output(g, g->nodes[n].outputs[k]);
        else
            g->nodes[n].outputs[k] = -1;
    }
    return g;
}

static void check_form(const rnn_form *f)
{
    char what[200];
    snprintf(what, sizeof what,
             "%s dir %d lbr %d act %d/%d bias %d h0 %d c0 %d lens %d/%d clip %d peep %d forget %d bf %d out %x h %lld "
             "nb %lld",
             f->op == XF_OP_LSTM ? "LSTM" : f->op == XF_OP_GRU ? "GRU" : "RNN", f->direction, f->lbr, f->act, f->act_f,
             f->bias, f->h0, f->c0, f->lens, f->short_lens, f->clip, f->peep, f->forget, f->batch_first, f->outputs,
             (long long)f->h, (long long)f->nb);
    xf_graph *g = rnn_graph(f);
    xf_bt_check_cpu(g, 14, 1e-5, 1e-4, what);
    xf_graph_free(g);
}

enum { ON_ONEDNN, OWN_LOOP, ON_CPU_REF };

/* How the backend names its loop over oneDNN's products step by step. */
#define STEP_BY_STEP "own loop: step by step on oneDNN's products"

/* Whether f is a form oneDNN's RNN primitives take. */
static bool onednn_takes(const rnn_form *f)
{
    bool acts = f->op == XF_OP_RNN
                    ? f->act == 0 || f->act == XF_RNN_RELU || f->act == XF_RNN_TANH || f->act == XF_RNN_SIGMOID
                    : (f->act == 0 || f->act == XF_RNN_TANH) && (f->act_f == 0 || f->act_f == XF_RNN_SIGMOID) &&
                          (f->act_h == 0 || f->act_h == XF_RNN_TANH);
    return acts && !f->clip && !f->peep && !f->forget && !f->short_lens && !f->batch_first;
}

/* check_form, and the recurrence runs on a oneDNN primitive, as the
 * backend's own loop over oneDNN's products step by step, or on cpu_ref's
 * kernel (how). */
static void check_runs(const rnn_form *f, int how)
{
    check_form(f);
    xf_graph *g = rnn_graph(f);
    char impl[128];
    xf_bt_node_impl(g, 14, f->op, impl, sizeof impl);
    bool own = !strcmp(impl, STEP_BY_STEP), ref = !strcmp(impl, "cpu_ref kernel");
    bool want = how == OWN_LOOP ? own : how == ON_CPU_REF ? ref : !own && !ref;
    ck_assert_msg(want, "%s dir %d lbr %d act %d/%d bf %d: %s", xf_op_name(f->op), f->direction, f->lbr, f->act,
                  f->act_f, f->batch_first, impl);
    xf_graph_free(g);
}

START_TEST(onednn_forms)
{
    if (!xf_bt_have_cpu())
        return;
    static const struct {
        xf_op op;
        int lbr, act;
    } kinds[] = {{XF_OP_LSTM, 0, 0}, {XF_OP_GRU, 0, 0},           {XF_OP_GRU, 1, 0},
                 {XF_OP_RNN, 0, 0},  {XF_OP_RNN, 0, XF_RNN_RELU}, {XF_OP_RNN, 0, XF_RNN_SIGMOID}};
    for (size_t k = 0; k < sizeof kinds / sizeof *kinds; k++)
        for (int dir = 0; dir < 3; dir++)
            for (int v = 0; v < 4; v++) {
                bool lstm = kinds[k].op == XF_OP_LSTM;
                rnn_form f = {.op = kinds[k].op, .direction = dir, .lbr = kinds[k].lbr, .act = kinds[k].act};
                /* everything; nothing optional, Y alone; h0 alone, Y_h alone; lengths, Y and Y_c */
                f.bias = v != 1;
                f.h0 = v == 0 || v == 2;
                f.c0 = lstm && v == 0;
                f.lens = v == 3;
                f.outputs = v == 0 ? 7 : v == 1 ? 1 : v == 2 ? 2 : lstm ? 5 : 1;
                if (!lstm)
                    f.outputs &= 3;
                check_form(&f);
            }
}
END_TEST

/* LSTMs and RNNs of 256 hidden units and up to 4 batch entries, which the
 * backend runs as its own loop over oneDNN's products step by step: every
 * direction, with and without bias, initial states and each output; RNN
 * with each activation oneDNN has. */
START_TEST(lstm_step_forms)
{
    if (!xf_bt_have_cpu())
        return;
    static const struct {
        xf_op op;
        int act;
    } kinds[] = {{XF_OP_LSTM, 0}, {XF_OP_RNN, 0}, {XF_OP_RNN, XF_RNN_RELU}, {XF_OP_RNN, XF_RNN_SIGMOID}};
    for (size_t k = 0; k < sizeof kinds / sizeof *kinds; k++)
        for (int dir = 0; dir < 3; dir++)
            for (int v = 0; v < 4; v++) {
                bool lstm = kinds[k].op == XF_OP_LSTM;
                rnn_form f = {.op = kinds[k].op, .act = kinds[k].act, .direction = dir, .h = 256};
                f.nb = v == 1 ? 1 : v == 2 ? 4 : 3;
                f.bias = v != 1;
                f.h0 = v == 0 || v == 2;
                f.c0 = lstm && (v == 0 || v == 3);
                f.lens = v == 3;
                f.outputs = (v == 0 ? 7 : v == 1 ? 1 : v == 2 ? 2 : 5) & (lstm ? 7 : 3);
                if (!f.outputs)
                    f.outputs = 1;
                check_form(&f);
            }
}
END_TEST

/* The offsets from 128 of the uint8 weights' zero points per column i
 * (of all directions' columns) in qlstm_graph. */
static int wdelta(int i) { return 3 * (i % 5) - 5; }
static int rdelta(int i) { return 1 - 2 * (i % 4); }

/* A DynamicQuantizeLSTM in the forms the backend runs step by step (8-bit
 * weights, wtype: 0 int8 with zero points 0, 1 uint8 about 128, 2 int8
 * with zero points off 0, 3 the uint8 differences of 1 with zero points
 * 128; per direction or per column): inputs and states quantized per run and
 * step as cpu_ref quantizes them, exact int32 products scaled as cpu_ref
 * scales them.  Only the activations differ (oneDNN's float against
 * cpu_ref's rounded double), which these small weights keep from moving a
 * state's code: every direction, scales per direction or per column,
 * initial states or none, each output; with clip and peepholes, and with
 * input_forget and HardSigmoid as f. */
static xf_graph *qlstm_graph(int direction, int64_t nb, bool per_col, bool states, int outputs, int general, int wtype)
{
    enum { QH = 8, QI = 5 };
    xf_graph *g = xf_graph_create("qlstm");
    int64_t d = direction == 2 ? 2 : 1;
    int8_t w[2 * QI * 4 * QH], r[2 * QH * 4 * QH], wz[2 * 4 * QH] = {0}, rz[2 * 4 * QH] = {0};
    float ws[2 * 4 * QH], rs[2 * 4 * QH];
    uint32_t seed = 77u + (uint32_t)(direction * 8 + nb * 2 + per_col);
    for (size_t i = 0; i < sizeof w; i++)
        w[i] = (int8_t)((seed = seed * 1664525u + 1013904223u) >> 25) - 64;
    for (size_t i = 0; i < sizeof r; i++)
        r[i] = (int8_t)((seed = seed * 1664525u + 1013904223u) >> 25) - 64;
    /* uint8 about 128: wtype 1 with zero points 128 + wdelta(column),
     * wtype 3 with zero points 128 and the weights less wdelta (the same
     * differences) */
    for (size_t i = 0; (wtype == 1 || wtype == 3) && i < sizeof w; i++) {
        int col = (int)(i / (QI * 4 * QH) * 4 * QH + i % (4 * QH)); /* of all directions' columns */
        w[i] = (int8_t)(uint8_t)(w[i] + 128 - (wtype == 3 ? wdelta(col) : 0));
    }
    for (size_t i = 0; (wtype == 1 || wtype == 3) && i < sizeof r; i++) {
        int col = (int)(i / (QH * 4 * QH) * 4 * QH + i % (4 * QH));
        r[i] = (int8_t)(uint8_t)(r[i] + 128 - (wtype == 3 ? rdelta(col) : 0));
    }
    for (int i = 0; i < 2 * 4 * QH; i++) {
        ws[i] = 0.004f + 0.0001f * (float)(i % 7);
        rs[i] = 0.003f + 0.0002f * (float)(i % 5);
        if (wtype) { /* uint8 (the bytes read so) about their zero points, or int8 off 0 */
            wz[i] = (int8_t)(wtype == 1 ? 128 + wdelta(i) : wtype == 3 ? 128 : 2 * (i % 3) - 3);
            rz[i] = (int8_t)(wtype == 1 ? 128 + rdelta(i) : wtype == 3 ? 128 : 4 - (i % 7));
        }
    }
    xf_dtype wt = wtype == 1 || wtype == 3 ? XF_DT_UINT8 : XF_DT_INT8;
    xf_shape sc = per_col ? SHAPE(d, 4 * QH) : SHAPE(d);
    int ins[12] = {xf_bt_input(g, XF_DT_FLOAT, SHAPE(4, nb, QI)),
                   constant(g, NULL, wt, SHAPE(d, QI, 4 * QH), w),
                   constant(g, NULL, wt, SHAPE(d, QH, 4 * QH), r),
                   xf_bt_random_const(g, SHAPE(d, 8 * QH), false),
                   -1, -1, -1, -1,
                   constant(g, NULL, XF_DT_FLOAT, sc, ws),
                   constant(g, NULL, wt, sc, wz),
                   constant(g, NULL, XF_DT_FLOAT, sc, rs),
                   constant(g, NULL, wt, sc, rz)};
    if (states) {
        ins[5] = xf_bt_input(g, XF_DT_FLOAT, SHAPE(d, nb, QH));
        ins[6] = xf_bt_input(g, XF_DT_FLOAT, SHAPE(d, nb, QH));
    }
    if (general == 1)
        ins[7] = xf_bt_random_const(g, SHAPE(d, 3 * QH), false);
    int n = node(g, XF_OP_MS_DYNAMIC_QUANTIZE_LSTM, NULL, 12, ins, 3);
    xf_rnn_attrs *a = &attrs(g, n)->rnn;
    a->hidden_size = QH;
    a->direction = direction;
    a->has_clip = general == 1;
    a->clip = 0.5f;
    a->input_forget = general == 2;
    for (int k = 0; general == 2 && k < 3 * d; k++) { /* Keras's f */
        a->acts[k] = k % 3 ? XF_RNN_TANH : XF_RNN_HARD_SIGMOID;
        a->act_alpha[k] = 0.2f;
        a->act_beta[k] = 0.5f;
        a->n_acts = k + 1;
    }
    for (int k = 0; k < 3; k++) {
        if (outputs >> k & 1)
            xf_graph_add_output(g, g->nodes[n].outputs[k]);
        else
            g->nodes[n].outputs[k] = -1;
    }
    return g;
}

START_TEST(qlstm_step_forms)
{
    if (!xf_bt_have_cpu())
        return;
    for (int dir = 0; dir < 3; dir++)
        for (int v = 0; v < 6; v++) {
            int64_t nb = v == 1 ? 1 : 3;
            bool per_col = v == 2 || v == 3, states = v == 0 || v == 3 || v == 4;
            int outputs = v == 0 ? 7 : v == 1 ? 1 : v == 2 ? 2 : v == 3 ? 5 : 7, general = v >= 4 ? v - 3 : 0;
            int wtype = (v + dir) % 3;
            char what[160], impl[128];
            snprintf(what, sizeof what,
                     "DynamicQuantizeLSTM dir %d nb %lld per_col %d states %d out %x general %d weights %s", dir,
                     (long long)nb, per_col, states, outputs, general,
                     wtype == 1 ? "uint8" : wtype == 2 ? "int8 off 0" : "int8");
            xf_graph *g = qlstm_graph(dir, nb, per_col, states, outputs, general, wtype);
            xf_bt_check_cpu(g, 14, 1e-5, 1e-4, what);
            xf_bt_node_impl(g, 14, XF_OP_MS_DYNAMIC_QUANTIZE_LSTM, impl, sizeof impl);
            bool steps = xf_bt_have_vnni() && xf_bt_avx512_kernels();
            ck_assert_msg(!strcmp(impl, steps ? STEP_BY_STEP : "own loop: cpu_ref's on sgemm"), "%s: %s", what, impl);
            xf_graph_free(g);
        }
}
END_TEST

/* Zero points per column that differ: the same differences from them give
 * the same outputs as from one zero point (ONNX Runtime's kernel takes
 * only the latter), on cpu_ref and cpu alike. */
START_TEST(qlstm_zero_points_per_column)
{
    if (!xf_bt_have_cpu())
        return;
    for (int dir = 0; dir < 3; dir++) {
        xf_graph *g[2] = {qlstm_graph(dir, 3, true, true, 7, 0, 1), qlstm_graph(dir, 3, true, true, 7, 0, 3)};
        xf_tensor *in[3] = {0}, *out[2][3] = {{0}};
        for (int i = 0; i < g[0]->n_inputs; i++)
            in[i] = xf_tensor_random(XF_DT_FLOAT, &g[0]->values[g[0]->inputs[i]].shape, 40 + (uint64_t)i);
        for (int b = 0; b < 2; b++) {
            const char *backend = b ? "cpu" : "cpu_ref";
            for (int k = 0; k < 2; k++) {
                xf_session *s = NULL;
                xf_error err = {0};
                ck_assert_msg(xf_session_create(g[k], 14, backend, NULL, &s, &err) == XF_OK, "%s", err.msg);
                ck_assert_msg(xf_session_run(s, in, out[k], &err) == XF_OK, "%s: %s", backend, err.msg);
                xf_session_free(s);
            }
            for (int o = 0; o < 3; o++) {
                ck_assert_int_eq(xf_tensor_numel(out[0][o]), xf_tensor_numel(out[1][o]));
                size_t bytes = sizeof(float) * (size_t)xf_tensor_numel(out[0][o]);
                ck_assert_msg(!memcmp(out[0][o]->data, out[1][o]->data, bytes),
                              "%s, direction %d: output %d differs with zero points per column", backend, dir, o);
                xf_tensor_release(out[0][o]);
                xf_tensor_release(out[1][o]);
            }
        }
        for (int i = 0; i < 3; i++)
            xf_tensor_release(in[i]);
        xf_graph_free(g[0]);
        xf_graph_free(g[1]);
    }
}
END_TEST

/* LSTMs and RNNs in forms oneDNN's RNN primitive does not take, which the
 * backend runs step by step with each function a chain of oneDNN's
 * eltwise ops (ThresholdedRelu and Softsign loops of its own): clip,
 * input_forget, peepholes, and every activation, as LSTM's f, g or h and
 * as RNN's; every direction, with initial states, and sequences shorter
 * than the input. */
START_TEST(step_general_forms)
{
    if (!xf_bt_have_cpu())
        return;
    static const int acts[] = {XF_RNN_RELU,      XF_RNN_TANH,        XF_RNN_SIGMOID, XF_RNN_AFFINE,
                               XF_RNN_LEAKY_RELU, XF_RNN_HARD_SIGMOID, XF_RNN_ELU,     XF_RNN_SOFTPLUS,
                               XF_RNN_SCALED_TANH, XF_RNN_THRESHOLDED_RELU, XF_RNN_SOFTSIGN};
    for (size_t k = 0; k < sizeof acts / sizeof *acts; k++)
        for (int dir = 0; dir < 3; dir++) {
            rnn_form forms[] = {
                {.op = XF_OP_RNN, .act = acts[k], .direction = dir, .bias = true, .h0 = true, .outputs = 3},
                {.op = XF_OP_RNN, .act = acts[k], .direction = dir, .clip = true, .outputs = 1},
                {.op = XF_OP_LSTM, .act = acts[k], .direction = dir, .bias = true, .outputs = 7},
                {.op = XF_OP_LSTM, .act_f = acts[k], .direction = dir, .h0 = true, .c0 = true, .outputs = 7},
                {.op = XF_OP_LSTM, .act_h = acts[k], .direction = dir, .bias = true, .outputs = 5},
                {.op = XF_OP_RNN, .act = acts[k], .direction = dir, .lens = true, .short_lens = true, .outputs = 3},
            };
            for (size_t i = 0; i < sizeof forms / sizeof *forms; i++)
                check_runs(&forms[i], onednn_takes(&forms[i]) ? ON_ONEDNN : OWN_LOOP);
        }
    for (int dir = 0; dir < 3; dir++)
        for (int v = 0; v < 4; v++) {
            rnn_form f = {.op = XF_OP_LSTM, .direction = dir, .bias = true, .outputs = 7, .h0 = v & 1, .c0 = v & 1};
            f.clip = v == 0 || v == 3;
            f.peep = v >= 1;
            f.forget = v == 2 || v == 3;
            f.act_f = v == 3 ? XF_RNN_HARD_SIGMOID : 0;
            check_form(&f);
        }
}
END_TEST

/* GRUs in forms oneDNN's GRU primitives do not take run step by step:
 * the z and r rows' product added to their input rows, the h gate's
 * product apart (of r h, or with linear_before_reset of h, its bias
 * inside r's product), every gate's block dense for oneDNN's eltwise
 * kernels.  Clip, every activation as f or g, sequences shorter than
 * the input; with and without
 * linear_before_reset, every direction, 1 to 4 batch entries. */
START_TEST(gru_step_forms)
{
    if (!xf_bt_have_cpu())
        return;
    static const int acts[] = {
        XF_RNN_RELU,         XF_RNN_TANH, XF_RNN_SIGMOID,  XF_RNN_AFFINE,      XF_RNN_LEAKY_RELU,
        XF_RNN_HARD_SIGMOID, XF_RNN_ELU,  XF_RNN_SOFTPLUS, XF_RNN_SCALED_TANH, XF_RNN_THRESHOLDED_RELU,
        XF_RNN_SOFTSIGN};
    for (int dir = 0; dir < 3; dir++)
        for (int lbr = 0; lbr < 2; lbr++) {
            rnn_form forms[] = {
                {.op = XF_OP_GRU, .direction = dir, .lbr = lbr, .bias = true, .h0 = true, .clip = true, .outputs = 3},
                {.op = XF_OP_GRU, .direction = dir, .lbr = lbr, .act_f = XF_RNN_HARD_SIGMOID, .outputs = 1, .nb = 1},
                {.op = XF_OP_GRU, .direction = dir, .lbr = lbr, .bias = true, .h0 = true, .lens = true,
                 .short_lens = true, .outputs = 3, .nb = 4},
                {.op = XF_OP_GRU, .direction = dir, .lbr = lbr, .lens = true, .short_lens = true, .outputs = 2},
            };
            for (size_t i = 0; i < sizeof forms / sizeof *forms; i++)
                check_runs(&forms[i], OWN_LOOP);
            for (size_t k = 0; k < sizeof acts / sizeof *acts; k++) {
                rnn_form g = {.op = XF_OP_GRU, .direction = dir, .lbr = lbr, .act = (int)acts[k], .bias = true,
                              .outputs = 3};
                if (acts[k] != XF_RNN_TANH) /* else the default form, oneDNN's */
                    check_runs(&g, OWN_LOOP);
                rnn_form f = {.op = XF_OP_GRU, .direction = dir, .lbr = lbr, .act_f = (int)acts[k], .h0 = true,
                              .outputs = 3};
                if (acts[k] != XF_RNN_SIGMOID)
                    check_runs(&f, OWN_LOOP);
            }
        }
}
END_TEST

/* The batch-first layout (X [N, T, I], Y [N, T, D, H], states [N, D, H])
 * runs step by step for each recurrence, in the default forms too: every
 * direction, with initial states, sequences shorter than the input and
 * each output. */
START_TEST(batch_first_forms)
{
    if (!xf_bt_have_cpu())
        return;
    for (int dir = 0; dir < 3; dir++)
        for (int v = 0; v < 4; v++) {
            rnn_form forms[] = {
                {.op = XF_OP_LSTM, .bias = true, .h0 = v & 1, .c0 = v & 1, .outputs = 7},
                {.op = XF_OP_GRU, .lbr = v & 1, .bias = true, .h0 = true, .outputs = 3},
                {.op = XF_OP_RNN, .act = v == 3 ? XF_RNN_RELU : 0, .bias = true, .h0 = v & 1, .outputs = 3},
                {.op = XF_OP_LSTM, .act_f = XF_RNN_HARD_SIGMOID, .peep = true, .c0 = true, .outputs = 5},
            };
            for (size_t i = 0; i < sizeof forms / sizeof *forms; i++) {
                rnn_form f = forms[i];
                f.direction = dir;
                f.batch_first = true;
                f.lens = v >= 2;
                f.short_lens = v == 2;
                f.nb = v == 3 ? 1 : 0;
                check_runs(&f, OWN_LOOP);
            }
        }
}
END_TEST

/* Weights given at run time keep a recurrence on cpu_ref. */
START_TEST(cpu_ref_forms)
{
    if (!xf_bt_have_cpu())
        return;
    rnn_form forms[] = {
        {.op = XF_OP_GRU, .direction = 2, .act = XF_RNN_SOFTSIGN, .bias = true, .outputs = 3},
        {.op = XF_OP_GRU, .lbr = 1, .batch_first = true, .h0 = true, .outputs = 3},
        {.op = XF_OP_LSTM, .direction = 1, .bias = true, .peep = true, .outputs = 7},
        {.op = XF_OP_RNN, .act = XF_RNN_THRESHOLDED_RELU, .clip = true, .outputs = 1},
    };
    for (size_t i = 0; i < sizeof forms / sizeof *forms; i++) {
        check_runs(&forms[i], OWN_LOOP);
        forms[i].w_input = true;
        check_runs(&forms[i], ON_CPU_REF);
    }
}
END_TEST

/* The float logistic function and tanh of the quantized LSTM's cell
 * (cpu_dnnl_acts.h): within 3 ulp of the values in double over [-30, 30]
 * and near 0, exact at 0, 1 and -1 far out, NaN kept. */
START_TEST(float_activations)
{
    double worst[2] = {0, 0};
    for (int i = 0; i <= 1200000; i++) {
        float x = i < 600000 ? -30.0f + (float)i * 1e-4f : (float)(i - 900000) * 3.3e-9f;
        double want[2] = {1.0 / (1.0 + exp(-(double)x)), tanh((double)x)};
        float got[2] = {xf_float_logistic(x), xf_float_tanh(x)};
        for (int k = 0; k < 2; k++) {
            float w = (float)want[k];
            double ulp = nextafterf(fabsf(w), INFINITY) - fabsf(w), e = fabs(got[k] - want[k]) / ulp;
            worst[k] = e > worst[k] ? e : worst[k];
        }
    }
    ck_assert_msg(worst[0] <= 3.0 && worst[1] <= 3.0, "logistic %.2f ulp, tanh %.2f ulp", worst[0], worst[1]);
    ck_assert(xf_float_logistic(0.0f) == 0.5f && xf_float_tanh(0.0f) == 0.0f && xf_float_tanh(1e-30f) == 1e-30f);
    ck_assert(xf_float_logistic(100.0f) == 1.0f && xf_float_logistic(-100.0f) < 1e-37f);
    ck_assert(xf_float_tanh(50.0f) == 1.0f && xf_float_tanh(-INFINITY) == -1.0f);
    ck_assert(isnan(xf_float_logistic(NAN)) && isnan(xf_float_tanh(NAN)));
}
END_TEST

int main(void)
{
    Suite *s = suite_create("cpu_rnn");
    TCase *tc = tcase_create("rnn");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, onednn_forms);
    tcase_add_test(tc, lstm_step_forms);
    tcase_add_test(tc, qlstm_step_forms);
    tcase_add_test(tc, qlstm_zero_points_per_column);
    tcase_add_test(tc, step_general_forms);
    tcase_add_test(tc, gru_step_forms);
    tcase_add_test(tc, batch_first_forms);
    tcase_add_test(tc, cpu_ref_forms);
    tcase_add_test(tc, float_activations);
    suite_add_tcase(s, tc);
    return xf_test_run_suite(s);
}
