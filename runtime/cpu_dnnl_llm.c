/* The cpu backend's MatMulNBits: the constant 4- or 8-bit weight is
 * dequantized once, when the node is prepared, into a float (N, K) matrix
 * kept with the node, and every run is one oneDNN sgemm on it (after A is
 * quantized per block at accuracy_level 4, as cpu_ref does).  This trades
 * memory for speed: the float copy is 8 (4-bit) or 4 (8-bit) times the size
 * of the packed weight, but a decoder step then runs at sgemm speed instead
 * of unpacking every weight at every token.  In dynamic mode nodes are
 * prepared at each run, and the weight is dequantized each time. */
#include "cpu_dnnl.h"

#include <stdlib.h>
#include <string.h>

static bool nbits_handles(const xf_graph *g, const xf_node *n)
{
    if (!xf_dn_is_f32(g, n->inputs[0]) || xf_shape_numel(&g->values[n->inputs[0]].shape) < 0)
        return false;
    for (int k = 1; k < n->n_inputs; k++)
        if (n->inputs[k] >= 0 && !g->values[n->inputs[k]].init)
            return false;
    return true;
}

static xf_status nbits_run(xf_dn_node *st, const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out,
                           xf_error *err)
{
    const xf_attn_attrs *t = &n->attrs.attn;
    int64_t k = t->nb_k, nn = t->nb_n, m = xf_rt_numel(&in[0]) / k;
    const float *a = in[0].data, *bias = n->n_inputs > 5 && n->inputs[5] >= 0 ? in[5].data : NULL;
    float *y = out[0].data, *aq = NULL;
    if (m < 1)
        return XF_OK;
    if (xf_nbits_quantizes_a(n, in)) {
        aq = malloc(sizeof *aq * (size_t)(m * k));
        if (!aq)
            return xf_error_set(err, XF_ERR_NOMEM, "out of memory in %s", xf_op_name(n->op));
        xf_nbits_quantize_a(a, aq, m, k, t->nb_block);
        a = aq;
    }
    for (int64_t i = 0; bias && i < m; i++)
        memcpy(y + i * nn, bias, sizeof *y * (size_t)nn);
    dnnl_status_t s = dnnl_sgemm('N', 'T', m, nn, k, 1.0f, a, k, st->folded_w, k, bias ? 1.0f : 0.0f, y, nn);
    free(aq);
    if (s != dnnl_success)
        return xf_dn_fail(err, n, "dnnl_sgemm", s);
    return XF_OK;
}

static xf_status nbits_prepare(xf_dn_ctx *c, const xf_graph *g, const xf_node *n, const xf_tensor_view *in,
                               const xf_tensor_view *out, xf_dn_node *st, xf_error *err)
{
    const xf_attn_attrs *t = &n->attrs.attn;
    st->folded_w = malloc(sizeof(float) * (size_t)(t->nb_n * t->nb_k));
    if (!st->folded_w)
        return xf_error_set(err, XF_ERR_NOMEM, "out of memory in %s", xf_op_name(n->op));
    st->own_run = nbits_run;
    return xf_nbits_dequantize(n, in, st->folded_w, err);
}

const xf_dn_handler xf_dn_nbits_handler = {nbits_handles, NULL, nbits_prepare, NULL};
