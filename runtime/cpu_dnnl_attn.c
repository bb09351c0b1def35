/* The cpu backend's Attention, QAttention, MultiHeadAttention and
 * GroupQueryAttention (com.microsoft) and ONNX's Attention: cpu_ref's
 * kernels (the same masks, layouts and softmax) with their matrix products
 * -- Q, K and V's projection and each head's Q K' and probabilities times
 * V -- run by oneDNN's sgemm.  QAttention's projection of 8-bit integers:
 * oneDNN's int8 matmul where it is exact (VNNI, constant int8 weights
 * without zero points), else cpu_ref's, on the weights made float once. */
#include "cpu_dnnl.h"

#include <stdlib.h>

bool xf_dn_sgemm(bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float *a, int64_t lda,
                    const float *b, int64_t ldb, float beta, float *c, int64_t ldc)
{
    if (m < 1 || n < 1)
        return true;
    if (k < 1) /* oneDNN asks for k >= 1 */
        return xf_attn_gemm_ref(trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    return dnnl_sgemm('N', trans_b ? 'T' : 'N', m, n, k, alpha, a, lda, b, ldb, beta, c, ldc) == dnnl_success;
}

static xf_status attention_run(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err)
{
    if (n->op == XF_OP_MS_GQA)
        return xf_attn_gqa(n, in, out, xf_dn_sgemm, err);
    if (n->op == XF_OP_ATTENTION)
        return xf_attn_onnx(n, in, out, xf_dn_sgemm, err);
    if (n->op == XF_OP_MS_QATTENTION)
        return xf_attn_qattention(n, in, out, xf_dn_sgemm, NULL, 0, err);
    return n->op == XF_OP_MS_ATTENTION ? xf_attn_attention(n, in, out, xf_dn_sgemm, err)
                                       : xf_attn_mha(n, in, out, xf_dn_sgemm, err);
}

static bool attention_handles(const xf_graph *g, const xf_node *n)
{
    if (n->op == XF_OP_ATTENTION) { /* float operands; the mask bool or float, nonpad_kv_seqlen int64 */
        for (int i = 0; i < n->n_inputs && i < 6; i++)
            if (n->inputs[i] >= 0 && g->values[n->inputs[i]].dtype != XF_DT_FLOAT &&
                !(i == 3 && g->values[n->inputs[i]].dtype == XF_DT_BOOL))
                return false;
        return true;
    }
    if (n->op == XF_OP_MS_QATTENTION) /* the types shape inference checked: 8-bit input and weights */
        return g->values[n->outputs[0]].dtype == XF_DT_FLOAT;
    /* the masks (GroupQueryAttention's lengths) are int32; everything else float */
    for (int i = 0; i < n->n_inputs; i++)
        if (n->inputs[i] >= 0 && i != (n->op == XF_OP_MS_ATTENTION ? 3 : 4) && !(n->op == XF_OP_MS_GQA && (i == 5 || i == 6)) &&
            g->values[n->inputs[i]].dtype != XF_DT_FLOAT)
            return false;
    return true;
}

/* QAttention with constant weights: their differences from the zero
 * points made float once (folded_w; their largest magnitude in
 * folded_b[0]). */
static xf_status qattention_run(xf_dn_node *st, const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out,
                                xf_error *err)
{
    return xf_attn_qattention(n, in, out, xf_dn_sgemm, st->folded_w, (int32_t)st->folded_b[0], err);
}

/* QAttention after oneDNN's int8 matmul wrote its int32 sums into scratch. */
static xf_status qattention_post(const xf_node *n, const xf_dn_node *st, const xf_tensor_view *in,
                                 const xf_tensor_view *out, xf_error *err)
{
    return xf_attn_qattention_sums(n, in, out, xf_dn_sgemm, (const int32_t *)st->scratch, err);
}

static xf_status attention_prepare(xf_dn_ctx *c, const xf_graph *g, const xf_node *n, const xf_tensor_view *in,
                                   const xf_tensor_view *out, xf_dn_node *st, xf_error *err)
{
    if (n->op == XF_OP_MS_QATTENTION && xf_dn_qattention_sums_ok(g, n)) {
        st->post = qattention_post;
        return xf_dn_qattention_sums(c, g, n, in, st, err);
    }
    bool const_w = n->op == XF_OP_MS_QATTENTION && g->values[n->inputs[1]].init &&
                   (n->n_inputs < 8 || n->inputs[7] < 0 || g->values[n->inputs[7]].init);
    if (!const_w) {
        st->kernel = attention_run;
        return XF_OK;
    }
    free(st->folded_w);
    free(st->folded_b);
    st->folded_w = malloc(sizeof(float) * (size_t)(xf_rt_numel(&in[1]) + 1));
    st->folded_b = malloc(sizeof(float));
    int32_t max_w = st->folded_w && st->folded_b ? xf_attn_qattention_weights(n, in, st->folded_w) : -1;
    if (max_w < 0)
        return xf_error_set(err, XF_ERR_NOMEM, "out of memory in %s", xf_op_name(n->op));
    st->folded_b[0] = (float)max_w;
    st->own_run = qattention_run;
    return XF_OK;
}

const xf_dn_handler xf_dn_attention_handler = {attention_handles, NULL, attention_prepare, NULL};
