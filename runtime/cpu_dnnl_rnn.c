/* Recurrent layers on oneDNN's RNN primitives: LSTM (vanilla_lstm), GRU
 * (gru, or lbr_gru with linear_before_reset) and RNN (vanilla_rnn with
 * its one activation), in every direction, with initial states and any of
 * the outputs.  The forms oneDNN computes: the default activations (RNN:
 * one of Tanh, Relu, Sigmoid for both directions), no clip, no
 * input_forget, no peepholes, sequence-first layout, constant weights and
 * bias, and every sequence of the whole length.  Recurrences in other
 * forms (batch-first among them), and LSTMs and RNNs of few batch
 * entries, run step by step on oneDNN's products (cpu_dnnl_rnn_steps.c).
 * The weights are put in oneDNN's gate order once (its LSTM's i, f, c, o
 * from ONNX's i, o, f, c; GRU's z, r, h alike), the bias as the sum of
 * ONNX's two (lbr_gru keeps R's bias of the h gate apart, as its fourth
 * gate). */
#include "cpu_dnnl.h"

#include <stdlib.h>
#include <string.h>

static const xf_tensor *const_input(const xf_graph *g, const xf_node *n, int k)
{
    int v = xf_dn_input(n, k);
    return v >= 0 ? g->values[v].init : NULL;
}

static bool has_output(const xf_node *n, int k) { return k < n->n_outputs && n->outputs[k] >= 0; }

static int gates_of(const xf_node *n) { return n->op == XF_OP_LSTM ? 4 : n->op == XF_OP_GRU ? 3 : 1; }

/* ONNX's gate for oneDNN's gate g. */
static int onnx_gate(const xf_node *n, int g)
{
    static const int lstm[4] = {0, 2, 3, 1}; /* i, f, c, o at ONNX's i, o, f, c */
    return n->op == XF_OP_LSTM ? lstm[g] : g;
}

/* oneDNN's activation for an RNN node (the same for every direction), or
 * undef where the activations are not the op's defaults oneDNN has. */
static dnnl_alg_kind_t rnn_activation(const xf_node *n)
{
    const xf_rnn_attrs *a = &n->attrs.rnn;
    static const unsigned char lstm[3] = {XF_RNN_SIGMOID, XF_RNN_TANH, XF_RNN_TANH};
    static const unsigned char gru[2] = {XF_RNN_SIGMOID, XF_RNN_TANH};
    for (int i = 0; i < a->n_acts; i++) {
        unsigned char want = n->op == XF_OP_LSTM ? lstm[i % 3] : n->op == XF_OP_GRU ? gru[i % 2] : a->acts[0];
        if (a->acts[i] != want)
            return dnnl_alg_kind_undef;
    }
    if (n->op != XF_OP_RNN || a->n_acts == 0)
        return dnnl_eltwise_tanh;
    switch (a->acts[0]) {
    case XF_RNN_TANH: return dnnl_eltwise_tanh;
    case XF_RNN_RELU: return dnnl_eltwise_relu;
    case XF_RNN_SIGMOID: return dnnl_eltwise_logistic;
    default: return dnnl_alg_kind_undef;
    }
}

static bool float_const(const xf_tensor *t, int64_t numel)
{
    return t && t->dtype == XF_DT_FLOAT && xf_tensor_numel(t) == numel;
}

/* Whether oneDNN's RNN primitives take n's form: the default activations
 * (RNN: one oneDNN has for both directions), no clip, input_forget or
 * peepholes, sequence-first, and every sequence of the whole length. */
static bool onednn_form(const xf_graph *g, const xf_node *n)
{
    const xf_rnn_attrs *a = &n->attrs.rnn;
    if (a->layout || a->has_clip || a->input_forget || rnn_activation(n) == dnnl_alg_kind_undef ||
        (n->op == XF_OP_LSTM && xf_dn_input(n, 7) >= 0))
        return false;
    if (xf_dn_input(n, 4) < 0)
        return true;
    const xf_tensor *l = const_input(g, n, 4);
    const xf_shape *xs = &g->values[n->inputs[0]].shape;
    if (!l || xs->ndim != 3 || xf_tensor_numel(l) != xs->dims[1] || xs->dims[0] < 0)
        return false;
    for (int64_t b = 0; b < xs->dims[1]; b++)
        if (xf_rt_load_i64(l->dtype, l->data, b) != xs->dims[0])
            return false;
    return true;
}

/* The forms oneDNN's primitives take, and the others where every
 * activation is one ONNX names and LSTM's peepholes are constant
 * (cpu_dnnl_rnn_steps.c runs those); the weights constant in both. */
static bool rnn_handles(const xf_graph *g, const xf_node *n)
{
    const xf_rnn_attrs *a = &n->attrs.rnn;
    if (a->layout > 1 || (unsigned)a->direction > 2 || n->n_inputs < 3 ||
        (!onednn_form(g, n) && !xf_dn_rnn_steps_takes(n)))
        return false;
    int x = n->inputs[0];
    const xf_tensor *w = const_input(g, n, 1), *r = const_input(g, n, 2);
    if (!xf_dn_is_f32(g, x) || g->values[x].shape.ndim != 3 || !w || !r || r->shape.ndim != 3)
        return false;
    const xf_shape *xs = &g->values[x].shape;
    int64_t dirs = a->direction == 2 ? 2 : 1, h = r->shape.dims[2], rows = gates_of(n) * h;
    if (h <= 0 || (a->hidden_size && a->hidden_size != h) || !float_const(w, dirs * rows * xs->dims[2]) ||
        !float_const(r, dirs * rows * h) ||
        (xf_dn_input(n, 3) >= 0 && !float_const(const_input(g, n, 3), dirs * 2 * rows)))
        return false;
    int lens = xf_dn_input(n, 4);
    if (lens >= 0 && g->values[lens].dtype != XF_DT_INT32 && g->values[lens].dtype != XF_DT_INT64)
        return false;
    for (int k = 5; k < (n->op == XF_OP_LSTM ? 7 : 6); k++)
        if (xf_dn_input(n, k) >= 0 && !xf_dn_is_f32(g, n->inputs[k]))
            return false;
    if (n->op == XF_OP_LSTM && xf_dn_input(n, 7) >= 0 && !float_const(const_input(g, n, 7), dirs * 3 * h))
        return false;
    for (int k = 0; k < n->n_outputs; k++)
        if (n->outputs[k] >= 0 && !xf_dn_is_f32(g, n->outputs[k]))
            return false;
    return true;
}

/* Y [T, 2, N, H] from the bidirectional output oneDNN wrote into scratch
 * as [T, N, 2H]. */
static xf_status split_directions(const xf_node *n, const xf_dn_node *st, const xf_tensor_view *in,
                                  const xf_tensor_view *out, xf_error *err)
{
    (void)n;
    (void)in;
    (void)err;
    int64_t t = out[0].shape.dims[0], nb = out[0].shape.dims[2], h = out[0].shape.dims[3];
    const float *tmp = st->scratch;
    float *y = out[0].data;
    for (int64_t s = 0; s < t; s++)
        for (int64_t d = 0; d < 2; d++)
            for (int64_t b = 0; b < nb; b++)
                memcpy(y + ((s * 2 + d) * nb + b) * h, tmp + (s * nb + b) * 2 * h + d * h, sizeof(float) * (size_t)h);
    return XF_OK;
}

/* W and R in oneDNN's ldigo order (into folded_w and folded_b), and the
 * bias, ldgo. */
static void reorder_weights(const xf_node *n, const xf_tensor_view *in, xf_dn_node *st, float *bias, int64_t dirs,
                            int64_t ni, int64_t h, int gb)
{
    int gates = gates_of(n);
    bool lbr = gb > gates;
    const float *w = in[1].data, *r = in[2].data;
    const float *b = n->n_inputs > 3 && xf_rt_present(&in[3]) ? in[3].data : NULL;
    for (int64_t d = 0; d < dirs; d++)
        for (int gg = 0; gg < gb; gg++) {
            int og = onnx_gate(n, gg < gates ? gg : 2); /* lbr_gru's fourth: R's bias of the h gate */
            for (int64_t o = 0; o < h; o++) {
                int64_t row = d * gates * h + og * h + o;
                for (int64_t i = 0; gg < gates && i < ni; i++)
                    st->folded_w[((d * ni + i) * gates + gg) * h + o] = w[row * ni + i];
                for (int64_t j = 0; gg < gates && j < h; j++)
                    st->folded_b[((d * h + j) * gates + gg) * h + o] = r[row * h + j];
                float wb = b ? b[d * 2 * gates * h + og * h + o] : 0.0f;
                float rb = b ? b[d * 2 * gates * h + gates * h + og * h + o] : 0.0f;
                bias[(d * gb + gg) * h + o] = lbr && gg == 2 ? wb : lbr && gg == 3 ? rb : wb + rb;
            }
        }
}

static void md_tag(dnnl_memory_desc_t *md, int rank, const dnnl_dim_t *dims, dnnl_format_tag_t tag)
{
    dnnl_dims_t d = {0};
    memcpy(d, dims, sizeof *dims * (size_t)rank);
    dnnl_memory_desc_init_by_tag(md, rank, d, dnnl_f32, tag);
}

static xf_status rnn_prepare(xf_dn_ctx *c, const xf_graph *g, const xf_node *n, const xf_tensor_view *in,
                             const xf_tensor_view *out, xf_dn_node *st, xf_error *err)
{
    if (!onednn_form(g, n) || xf_dn_rnn_steps_ok(g, n, in))
        return xf_dn_rnn_steps_prepare(c, n, in, rnn_activation(n), st, err);
    const xf_rnn_attrs *a = &n->attrs.rnn;
    bool lstm = n->op == XF_OP_LSTM, lbr = n->op == XF_OP_GRU && a->linear_before_reset;
    int64_t t = in[0].shape.dims[0], nb = in[0].shape.dims[1], ni = in[0].shape.dims[2], h = in[2].shape.dims[2];
    int64_t dirs = a->direction == 2 ? 2 : 1, state = dirs * nb * h;
    int gates = gates_of(n), gb = lbr ? 4 : gates;
    /* scratch: the layer output where Y is not it, the bias, a zero state
     * and a state written to nowhere (LSTM's h and c go in pairs) */
    int64_t nbias = dirs * gb * h, ny = t * nb * dirs * h;
    free(st->folded_w);
    free(st->folded_b);
    free(st->scratch);
    st->folded_w = malloc(sizeof(float) * (size_t)(dirs * ni * gates * h));
    st->folded_b = malloc(sizeof(float) * (size_t)(dirs * h * gates * h));
    st->scratch = calloc((size_t)(nbias + ny + 2 * state), sizeof(float));
    if (!st->folded_w || !st->folded_b || !st->scratch)
        return xf_error_set(err, XF_ERR_NOMEM, "out of memory");
    float *ytmp = st->scratch, *bias_data = ytmp + ny, *zero = bias_data + nbias, *dump = zero + state;
    reorder_weights(n, in, st, bias_data, dirs, ni, h, gb);

    bool h0 = xf_dn_input(n, 5) >= 0, c0 = lstm && xf_dn_input(n, 6) >= 0;
    bool yh = has_output(n, 1), yc = lstm && has_output(n, 2), y_direct = dirs == 1 && has_output(n, 0);
    dnnl_memory_desc_t src_layer, src_iter = {0}, src_iter_c = {0}, wl, wi, wl_any, wi_any, bias, dst_layer,
                                  dst_iter = {0}, dst_iter_c = {0}, iter;
    md_tag(&src_layer, 3, (dnnl_dim_t[]){t, nb, ni}, dnnl_tnc);
    md_tag(&iter, 4, (dnnl_dim_t[]){1, dirs, nb, h}, dnnl_ldnc);
    md_tag(&wl, 5, (dnnl_dim_t[]){1, dirs, ni, gates, h}, dnnl_ldigo);
    md_tag(&wi, 5, (dnnl_dim_t[]){1, dirs, h, gates, h}, dnnl_ldigo);
    md_tag(&wl_any, 5, (dnnl_dim_t[]){1, dirs, ni, gates, h}, dnnl_format_tag_any);
    md_tag(&wi_any, 5, (dnnl_dim_t[]){1, dirs, h, gates, h}, dnnl_format_tag_any);
    md_tag(&bias, 4, (dnnl_dim_t[]){1, dirs, gb, h}, dnnl_ldgo);
    md_tag(&dst_layer, 3, (dnnl_dim_t[]){t, nb, dirs * h}, dnnl_tnc);
    if (h0 || c0) {
        src_iter = iter;
        src_iter_c = iter;
    }
    if (yh || yc) {
        dst_iter = iter;
        dst_iter_c = iter;
    }
    dnnl_rnn_direction_t dir = a->direction == 0   ? dnnl_unidirectional_left2right
                               : a->direction == 1 ? dnnl_unidirectional_right2left
                                                   : dnnl_bidirectional_concat;
    dnnl_rnn_desc_t d;
    if (lstm)
        XF_DN_TRY(err, n, dnnl_lstm_forward_desc_init(&d, dnnl_forward_inference, dir, &src_layer, &src_iter,
                                                      &src_iter_c, &wl_any, &wi_any, &bias, &dst_layer, &dst_iter,
                                                      &dst_iter_c, 0));
    else if (n->op == XF_OP_GRU)
        XF_DN_TRY(err, n, (lbr ? dnnl_lbr_gru_forward_desc_init : dnnl_gru_forward_desc_init)(
                              &d, dnnl_forward_inference, dir, &src_layer, &src_iter, &wl_any, &wi_any, &bias,
                              &dst_layer, &dst_iter, 0));
    else
        XF_DN_TRY(err, n, dnnl_vanilla_rnn_forward_desc_init(&d, dnnl_forward_inference, rnn_activation(n), dir,
                                                             &src_layer, &src_iter, &wl_any, &wi_any, &bias,
                                                             &dst_layer, &dst_iter, 0, 0.0f, 0.0f));
    dnnl_primitive_desc_t pd;
    XF_DN_TRY(err, n, dnnl_primitive_desc_create(&pd, &d, NULL, c->engine, NULL));
    xf_status s = xf_dn_bind(c, n, st, DNNL_ARG_SRC_LAYER, 0, &src_layer, &src_layer, err);
    if (s == XF_OK && (h0 || c0))
        s = h0 ? xf_dn_bind(c, n, st, DNNL_ARG_SRC_ITER, 5, &iter, &iter, err)
               : xf_dn_bind_scratch(c, n, st, DNNL_ARG_SRC_ITER, &iter, zero, err);
    if (s == XF_OK && lstm && (h0 || c0))
        s = c0 ? xf_dn_bind(c, n, st, DNNL_ARG_SRC_ITER_C, 6, &iter, &iter, err)
               : xf_dn_bind_scratch(c, n, st, DNNL_ARG_SRC_ITER_C, &iter, zero, err);
    if (s == XF_OK)
        s = xf_dn_bind_const(c, n, st, DNNL_ARG_WEIGHTS_LAYER, st->folded_w, &wl,
                             dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0), err);
    if (s == XF_OK)
        s = xf_dn_bind_const(c, n, st, DNNL_ARG_WEIGHTS_ITER, st->folded_b, &wi,
                             dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 1), err);
    if (s == XF_OK)
        s = xf_dn_bind_scratch(c, n, st, DNNL_ARG_BIAS, &bias, bias_data, err);
    if (s == XF_OK)
        s = y_direct ? xf_dn_bind(c, n, st, DNNL_ARG_DST_LAYER, -1, &dst_layer, &dst_layer, err)
                     : xf_dn_bind_scratch(c, n, st, DNNL_ARG_DST_LAYER, &dst_layer, ytmp, err);
    if (s == XF_OK && (yh || yc))
        s = yh ? xf_dn_bind(c, n, st, DNNL_ARG_DST_ITER, -2, &iter, &iter, err)
               : xf_dn_bind_scratch(c, n, st, DNNL_ARG_DST_ITER, &iter, dump, err);
    if (s == XF_OK && lstm && (yh || yc))
        s = yc ? xf_dn_bind(c, n, st, DNNL_ARG_DST_ITER_C, -3, &iter, &iter, err)
               : xf_dn_bind_scratch(c, n, st, DNNL_ARG_DST_ITER_C, &iter, dump, err);
    st->post = dirs == 2 && has_output(n, 0) ? split_directions : NULL;
    return xf_dn_finish_or_free(n, st, pd, s, err);
}

const xf_dn_handler xf_dn_rnn_handler = {rnn_handles, NULL, rnn_prepare, NULL};

/* ---------------------------------------------------------------- DynamicQuantizeLSTM */

/* cpu_ref's DynamicQuantizeLSTM with its products on oneDNN's sgemm. */
static xf_status qlstm_run(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err)
{
    return xf_qlstm(n, in, out, xf_dn_sgemm, err);
}

static bool qlstm_handles(const xf_graph *g, const xf_node *n)
{
    (void)g;
    (void)n;
    return true;
}

static xf_status qlstm_prepare(xf_dn_ctx *c, const xf_graph *g, const xf_node *n, const xf_tensor_view *in,
                               const xf_tensor_view *out, xf_dn_node *st, xf_error *err)
{
    (void)out;
    if (xf_dn_rnn_steps_ok(g, n, in))
        return xf_dn_rnn_steps_prepare(c, n, in, dnnl_alg_kind_undef, st, err);
    st->kernel = qlstm_run;
    st->own_name = "own loop: cpu_ref's on sgemm";
    return XF_OK;
}

const xf_dn_handler xf_dn_qlstm_handler = {qlstm_handles, NULL, qlstm_prepare, NULL};
