/* Shape inference for ONNX Runtime's contrib ops (com.microsoft, version 1):
 * FusedConv, FusedMatMul, the Gelus with a bias, BiasAdd and the skip
 * layer normalizations.  FusedGemm is Gemm's rule, QuickGelu a unary op's,
 * SimplifiedLayerNormalization LayerNormalization's. */
#include "shape_infer_impl.h"

/* Conv's rule; Z (input 3), added before the activation, has the output's shape. */
xf_status xf_infer_fused_conv(xf_infer_ctx *c)
{
    xf_status st = xf_infer_conv_operands(c, 0, 1, 2);
    if (st != XF_OK || !xf_infer_has(c, 3) || c->node->outputs[0] < 0)
        return st;
    const xf_shape *y = &c->g->values[c->node->outputs[0]].shape, *z = xf_infer_shape(c, 3);
    if (!xf_shape_equal(y, z))
        return xf_infer_fail(c, XF_ERR_INVALID, "Z shape %s is not the output's %s", xf_infer_text(z).s,
                             xf_infer_text(y).s);
    return XF_OK;
}

/* The operand a FusedMatMul multiplies: with transBatch, dims 1..r-2 are
 * the batch and dim 0 the rows (transposed: the columns) of each matrix;
 * with trans, the last two are swapped.  A vector is taken as it is. */
static xf_shape operand(const xf_shape *s, int trans, int trans_batch)
{
    if (s->ndim < 2)
        return *s;
    int r = s->ndim;
    xf_shape o = {.ndim = r};
    int d = 0;
    for (int i = trans_batch ? 1 : 0; i < (trans_batch ? r - 1 : r - 2); i++)
        o.dims[d++] = s->dims[i];
    int64_t rows = s->dims[trans_batch ? 0 : r - 2], cols = s->dims[r - 1];
    o.dims[d++] = trans ? cols : rows;
    o.dims[d++] = trans ? rows : cols;
    return o;
}

xf_status xf_infer_fused_matmul(xf_infer_ctx *c)
{
    const xf_attrs *at = &c->node->attrs;
    xf_shape a = operand(xf_infer_shape(c, 0), at->trans_a, at->trans_batch_a);
    xf_shape b = operand(xf_infer_shape(c, 1), at->trans_b, at->trans_batch_b);
    return xf_infer_matmul_shapes(c, &a, &b);
}

/* FastGelu, BiasGelu (X, bias), BiasAdd (X, bias, skip): the output is X's
 * shape; the bias is a vector along X's last dimension, the skip X's shape. */
xf_status xf_infer_bias_elementwise(xf_infer_ctx *c)
{
    const xf_shape *x = xf_infer_shape(c, 0);
    if (xf_infer_has(c, 1)) {
        const xf_shape *b = xf_infer_shape(c, 1);
        if (x->ndim < 1 || b->ndim != 1 || b->dims[0] != x->dims[x->ndim - 1])
            return xf_infer_fail(c, XF_ERR_INVALID, "bias %s is not a vector along the last dimension of %s",
                                 xf_infer_text(b).s, xf_infer_text(x).s);
    }
    if (xf_infer_has(c, 2) && !xf_shape_equal(xf_infer_shape(c, 2), x))
        return xf_infer_fail(c, XF_ERR_INVALID, "skip %s is not the shape of the input %s",
                             xf_infer_text(xf_infer_shape(c, 2)).s, xf_infer_text(x).s);
    xf_infer_set(c, 0, x);
    return XF_OK;
}

/* SkipLayerNormalization (input, skip, gamma, beta, bias) and
 * SkipSimplifiedLayerNormalization (input, skip, gamma, bias): normalizes
 * input + skip (+ bias) over the last dimension, of which gamma, beta and
 * bias are vectors; skip is the input's shape or its trailing dims, which
 * repeat (leading 1s aside).  Outputs: output and input_skip_bias_sum of the input's shape,
 * mean and inv_std_var with the last dimension 1. */
xf_status xf_infer_skip_layer_norm(xf_infer_ctx *c)
{
    const xf_shape *x = xf_infer_shape(c, 0), *skip = xf_infer_shape(c, 1);
    if (x->ndim < 2)
        return xf_infer_fail(c, XF_ERR_INVALID, "input %s needs 2 or more dimensions", xf_infer_text(x).s);
    int64_t hidden = x->dims[x->ndim - 1];
    int lead = 0; /* leading 1s of skip, which repeat like a shorter skip */
    while (lead < skip->ndim - 1 && skip->dims[lead] == 1)
        lead++;
    bool skip_ok = skip->ndim >= 1 && skip->ndim <= x->ndim;
    for (int d = 0; skip_ok && d < skip->ndim - lead; d++)
        skip_ok = skip->dims[skip->ndim - 1 - d] == x->dims[x->ndim - 1 - d];
    if (!skip_ok)
        return xf_infer_fail(c, XF_ERR_INVALID, "skip %s is not the input's %s or its trailing dimensions",
                             xf_infer_text(skip).s, xf_infer_text(x).s);
    for (int i = 2; i < c->node->n_inputs; i++) {
        const xf_shape *v = xf_infer_shape(c, i);
        if (xf_infer_has(c, i) && (v->ndim != 1 || v->dims[0] != hidden))
            return xf_infer_fail(c, XF_ERR_INVALID, "input %d %s is not a vector of the hidden size %s", i,
                                 xf_infer_text(v).s, xf_infer_text(x).s);
    }
    xf_shape stats = *x;
    stats.dims[x->ndim - 1] = 1;
    xf_infer_set(c, 0, x);
    xf_infer_set(c, 1, &stats);
    xf_infer_set(c, 2, &stats);
    xf_infer_set(c, 3, x);
    return XF_OK;
}
