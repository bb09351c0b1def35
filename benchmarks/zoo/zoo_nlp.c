/* Sequence models: the NAS-discovered recurrent cell (NasRNN) and a BERT
 * encoder, at the reference system's sizes. */
#include "builder.h"
#include "zoo_models.h"

#include <math.h>
#include <stdio.h>

enum { NASRNN_HIDDEN = 512, NASRNN_GATES = 8 };

typedef struct nasrnn_weights {
    int wx[NASRNN_GATES], wh[NASRNN_GATES];
} nasrnn_weights;

/* One gate pre-activation: x * Wx + h * Wh. */
static int gate(zb *b, const nasrnn_weights *w, int i, int x, int h)
{
    return zb_add(b, zb_matmul(b, x, w->wx[i]), zb_matmul(b, h, w->wh[i]));
}

/* The cell found by neural architecture search (Zoph & Le, 2017): eight
 * gates of the same (x, h) pair combined through a fixed tree of
 * elementwise ops.  Its eight matmuls sharing one input are what a graph
 * optimizer batches. */
static int nasrnn_cell(zb *b, const nasrnn_weights *w, int x, int h)
{
    int t[NASRNN_GATES];
    for (int i = 0; i < NASRNN_GATES; i++)
        t[i] = gate(b, w, i, x, h);
    int m0 = zb_add(b, zb_relu(b, t[0]), zb_unary(b, XF_OP_SIGMOID, t[3]));
    int m1 = zb_add(b, zb_unary(b, XF_OP_SIGMOID, t[1]), zb_unary(b, XF_OP_TANH, t[2]));
    int m2 = zb_mul(b, zb_unary(b, XF_OP_SIGMOID, t[4]), zb_unary(b, XF_OP_TANH, t[5]));
    int m3 = zb_mul(b, zb_unary(b, XF_OP_SIGMOID, t[6]), zb_relu(b, t[7]));
    int m4 = zb_add(b, zb_unary(b, XF_OP_SIGMOID, m1), zb_unary(b, XF_OP_TANH, m2));
    int m5 = zb_mul(b, zb_unary(b, XF_OP_TANH, m0), zb_unary(b, XF_OP_TANH, m3));
    int m6 = zb_mul(b, zb_unary(b, XF_OP_TANH, m4), zb_unary(b, XF_OP_TANH, m5));
    return zb_unary(b, XF_OP_TANH, m6);
}

/* NasRNN unrolled over `steps` steps (5 in the benchmark), hidden size
 * 512; one input per step plus the initial state, the weights shared by
 * every step as in a real RNN. */
xf_status xf_zoo_build_nasrnn(xf_model *m, int batch, int steps, xf_error *err)
{
    zb b;
    zb_init(&b, m->graph, 0x9a5e77aull, err);
    int64_t dims[2] = {batch, NASRNN_HIDDEN}, wd[2] = {NASRNN_HIDDEN, NASRNN_HIDDEN};
    int h = zb_input(&b, "h0", 2, dims);
    nasrnn_weights w;
    float scale = sqrtf(3.0f / NASRNN_HIDDEN);
    for (int i = 0; i < NASRNN_GATES; i++) {
        w.wx[i] = zb_weight(&b, 2, wd, scale);
        w.wh[i] = zb_weight(&b, 2, wd, scale);
    }
    for (int s = 0; s < steps; s++) {
        char name[24];
        snprintf(name, sizeof name, "x%d", s);
        h = nasrnn_cell(&b, &w, zb_input(&b, name, 2, dims), h);
    }
    zb_output(&b, h, "h");
    return b.failed ? err->status : XF_OK;
}

/* ---------------------------------------------------------------- BERT */

enum { BERT_HIDDEN = 1024, BERT_HEADS = 16, BERT_LAYERS = 8, BERT_FFN = 4 * BERT_HIDDEN };
enum { BERT_HEAD_DIM = BERT_HIDDEN / BERT_HEADS };

typedef struct bert_dims {
    int batch, seq;
} bert_dims;

/* [batch, seq, hidden] -> [batch, heads, seq, head_dim], or with
 * key_layout [batch, heads, head_dim, seq] ready to be multiplied by. */
static int split_heads(zb *b, int x, bert_dims d, bool key_layout)
{
    int64_t shape[4] = {d.batch, d.seq, BERT_HEADS, BERT_HEAD_DIM};
    static const int64_t perm_qv[4] = {0, 2, 1, 3}, perm_k[4] = {0, 2, 3, 1};
    return zb_transpose(b, zb_reshape(b, x, 4, shape), 4, key_layout ? perm_k : perm_qv);
}

static int self_attention(zb *b, int x, bert_dims d)
{
    int q = split_heads(b, zb_linear(b, x, BERT_HIDDEN), d, false);
    int k = split_heads(b, zb_linear(b, x, BERT_HIDDEN), d, true);
    int v = split_heads(b, zb_linear(b, x, BERT_HIDDEN), d, false);
    int scores = zb_mul(b, zb_matmul(b, q, k), zb_scalar(b, 1.0f / sqrtf((float)BERT_HEAD_DIM)));
    int ctx = zb_matmul(b, zb_softmax(b, scores, -1), v);
    static const int64_t perm[4] = {0, 2, 1, 3};
    int64_t shape[3] = {d.batch, d.seq, BERT_HIDDEN};
    ctx = zb_reshape(b, zb_transpose(b, ctx, 4, perm), 3, shape);
    return zb_linear(b, ctx, BERT_HIDDEN);
}

/* GELU in its exact form, x * 0.5 * (1 + erf(x / sqrt(2))), as exporters
 * write it. */
static int gelu(zb *b, int x)
{
    int e = zb_unary(b, XF_OP_ERF, zb_mul(b, x, zb_scalar(b, 0.70710678f)));
    int one_plus = zb_add(b, e, zb_scalar(b, 1.0f));
    return zb_mul(b, zb_mul(b, x, one_plus), zb_scalar(b, 0.5f));
}

/* A post-norm transformer encoder layer (attention, then a 4x feed-forward
 * block, each with a residual and LayerNormalization). */
static int encoder_layer(zb *b, int x, bert_dims d)
{
    x = zb_layer_norm(b, zb_add(b, x, self_attention(b, x, d)), 1e-12f);
    int ffn = zb_linear(b, gelu(b, zb_linear(b, x, BERT_FFN)), BERT_HIDDEN);
    return zb_layer_norm(b, zb_add(b, x, ffn), 1e-12f);
}

/* A BERT encoder stack of 8 layers, hidden 1024, 16 heads, fed the
 * embedded sequence [batch, seq, 1024] (seq 64 in the benchmark). */
xf_status xf_zoo_build_bert(xf_model *m, int batch, int seq, xf_error *err)
{
    zb b;
    zb_init(&b, m->graph, 0xbe27ull, err);
    bert_dims d = {batch, seq};
    int64_t dims[3] = {batch, seq, BERT_HIDDEN};
    int x = zb_input(&b, "embeddings", 3, dims);
    for (int l = 0; l < BERT_LAYERS; l++)
        x = encoder_layer(&b, x, d);
    zb_output(&b, x, "hidden_states");
    return b.failed ? err->status : XF_OK;
}
