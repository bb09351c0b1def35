/* Shape and dtype rules of the com.microsoft ops of int4 LLM exports
 * (MatMulNBits, GroupQueryAttention) and of dynamically quantized models
 * (MatMulIntegerToFloat, DynamicQuantizeMatMul), with the operand forms of ONNX
 * Runtime's CPU kernels. */
#include "shape_infer_impl.h"

#include <inttypes.h>

static xf_status want_numel(xf_infer_ctx *c, int i, const char *what, int64_t numel)
{
    if (!xf_infer_has(c, i) || xf_shape_numel(xf_infer_shape(c, i)) == numel)
        return XF_OK;
    return xf_infer_fail(c, XF_ERR_INVALID, "%s %s does not hold %" PRId64 " values", what,
                         xf_infer_text(xf_infer_shape(c, i)).s, numel);
}

/* MatMulNBits: A of T (float, float16 or bfloat16, as in ONNX Runtime),
 * B uint8, scales T, zero_points uint8 (packed) or T, g_idx int32, bias T;
 * Y T. */
static bool nbits_float(xf_dtype t) { return t == XF_DT_FLOAT || xf_dtype_is_half(t); }

xf_status xf_infer_nbits_dtypes(xf_infer_ctx *c)
{
    xf_dtype t = xf_infer_dtype(c, 0);
    if (t != XF_DT_UNDEFINED && !nbits_float(t))
        return xf_infer_fail(c, XF_ERR_INVALID, "A is %s, expected float, float16 or bfloat16", xf_dtype_name(t));
    t = t == XF_DT_UNDEFINED ? XF_DT_FLOAT : t;
    const xf_dtype want[6] = {t, XF_DT_UINT8, t, XF_DT_UINT8, XF_DT_INT32, t};
    for (int i = 0; i < c->node->n_inputs && i < 6; i++) {
        xf_dtype d = xf_infer_dtype(c, i);
        if (d != XF_DT_UNDEFINED && d != want[i] && !(i == 3 && d == t))
            return xf_infer_fail(c, XF_ERR_INVALID, "input %d is %s, expected %s", i, xf_dtype_name(d),
                                 xf_dtype_name(want[i]));
    }
    if (c->node->outputs[0] >= 0)
        c->g->values[c->node->outputs[0]].dtype = t;
    return XF_OK;
}

/* A (..., K) times the dequantized (K, N) weight: Y (..., N).  B holds N
 * rows of ceil(K / block_size) blocks of block_size * bits / 8 bytes; one
 * scale per block; zero points packed like B (one per block, rows padded to
 * whole bytes) or one float per block; g_idx one block index per row of the
 * weight; bias N values. */
xf_status xf_infer_ms_matmul_nbits(xf_infer_ctx *c)
{
    const xf_attn_attrs *t = &c->node->attrs.attn;
    const xf_shape *a = xf_infer_shape(c, 0);
    int64_t blocks = (t->nb_k + t->nb_block - 1) / t->nb_block, blob = t->nb_block * t->nb_bits / 8;
    if (a->ndim < 1 || a->dims[a->ndim - 1] != t->nb_k)
        return xf_infer_fail(c, XF_ERR_INVALID, "A %s does not end in K = %" PRId64, xf_infer_text(a).s, t->nb_k);
    xf_status st = want_numel(c, 1, "B", t->nb_n * blocks * blob);
    if (st == XF_OK)
        st = want_numel(c, 2, "scales", t->nb_n * blocks);
    if (st == XF_OK && xf_infer_has(c, 3))
        st = want_numel(c, 3, "zero_points",
                        t->nb_n * (nbits_float(xf_infer_dtype(c, 3)) ? blocks : (blocks * t->nb_bits + 7) / 8));
    if (st == XF_OK)
        st = want_numel(c, 4, "g_idx", t->nb_k);
    if (st == XF_OK)
        st = want_numel(c, 5, "bias", t->nb_n);
    if (st != XF_OK)
        return st;
    xf_shape y = *a;
    y.dims[y.ndim - 1] = t->nb_n;
    xf_infer_set(c, 0, &y);
    return XF_OK;
}

/* GroupQueryAttention: query (B, S, N * H), or Q, K and V packed (B, S,
 * (N + 2 Nkv) H) with key and value absent; key and value (B, S, Nkv * H);
 * past_key and past_value (B, Nkv, P, H); seqlens_k (B); one
 * total_sequence_length T; cos_cache and sin_cache (M, R / 2).  Output
 * (B, S, N * H), present_key and present_value (B, Nkv, max(T, P), H): their
 * shape is not known until T is.  Only query, seqlens_k and
 * total_sequence_length are required. */
xf_status xf_infer_ms_gqa(xf_infer_ctx *c)
{
    const xf_attn_attrs *t = &c->node->attrs.attn;
    const xf_shape *q = xf_infer_shape(c, 0);
    bool packed = !xf_infer_has(c, 1);
    if (c->node->n_inputs < 7 || !xf_infer_has(c, 5) || !xf_infer_has(c, 6))
        return xf_infer_fail(c, XF_ERR_INVALID, "seqlens_k or total_sequence_length is missing");
    if (q->ndim != 3)
        return xf_infer_fail(c, XF_ERR_INVALID, "query %s is not 3-D", xf_infer_text(q).s);
    int64_t heads = packed ? t->num_heads + 2 * t->kv_num_heads : t->num_heads, b = q->dims[0], s = q->dims[1];
    int64_t h = q->dims[2] / heads, past = 0;
    if (h < 1 || q->dims[2] % heads || packed != !xf_infer_has(c, 2))
        return xf_infer_fail(c, XF_ERR_INVALID, "query %s does not split into %" PRId64 " heads%s",
                             xf_infer_text(q).s, heads, packed != !xf_infer_has(c, 2) ? ", or only one of key and value" : "");
    const int64_t kvd[3] = {b, s, t->kv_num_heads * h};
    for (int i = 1; i <= 2 && !packed; i++)
        if (!xf_shape_equal(xf_infer_shape(c, i), &(xf_shape){3, {kvd[0], kvd[1], kvd[2]}}))
            return xf_infer_fail(c, XF_ERR_INVALID, "%s %s, expected [%" PRId64 ",%" PRId64 ",%" PRId64 "]",
                                 i == 1 ? "key" : "value", xf_infer_text(xf_infer_shape(c, i)).s, kvd[0], kvd[1],
                                 kvd[2]);
    if (xf_infer_has(c, 3) != xf_infer_has(c, 4))
        return xf_infer_fail(c, XF_ERR_INVALID, "only one of past_key and past_value");
    if (xf_infer_has(c, 3)) {
        const xf_shape *pk = xf_infer_shape(c, 3);
        past = pk->ndim == 4 ? pk->dims[2] : -1;
        if (pk->ndim != 4 || pk->dims[0] != b || pk->dims[1] != t->kv_num_heads || pk->dims[3] != h ||
            !xf_shape_equal(pk, xf_infer_shape(c, 4)))
            return xf_infer_fail(c, XF_ERR_INVALID, "past_key %s and past_value %s are not [%" PRId64 ",%" PRId64
                                 ",P,%" PRId64 "]", xf_infer_text(pk).s, xf_infer_text(xf_infer_shape(c, 4)).s, b,
                                 t->kv_num_heads, h);
    }
    if (xf_shape_numel(xf_infer_shape(c, 5)) != b || !xf_infer_scalar_like(xf_infer_shape(c, 6)))
        return xf_infer_fail(c, XF_ERR_INVALID, "seqlens_k %s is not [%" PRId64 "] or total_sequence_length %s "
                             "not one value", xf_infer_text(xf_infer_shape(c, 5)).s, b,
                             xf_infer_text(xf_infer_shape(c, 6)).s);
    bool rot = c->node->n_inputs > 8 && xf_infer_has(c, 7) && xf_infer_has(c, 8);
    if (t->do_rotary && !rot)
        return xf_infer_fail(c, XF_ERR_INVALID, "do_rotary without cos_cache and sin_cache");
    if (rot) {
        const xf_shape *cc = xf_infer_shape(c, 7);
        if (cc->ndim != 2 || cc->dims[1] * 2 > h || cc->dims[1] < 1 || !xf_shape_equal(cc, xf_infer_shape(c, 8)))
            return xf_infer_fail(c, XF_ERR_INVALID, "cos_cache %s and sin_cache %s are not (M, R / 2) with R <= %" PRId64,
                                 xf_infer_text(cc).s, xf_infer_text(xf_infer_shape(c, 8)).s, h);
    }
    const xf_tensor *tv = xf_infer_value(c, 6);
    xf_status st = XF_OK;
    if (!tv)
        st = xf_infer_unknown(c);
    xf_infer_set(c, 0, &(xf_shape){3, {b, s, t->num_heads * h}});
    if (tv) {
        int64_t total = ((const int32_t *)tv->data)[0], len = total > past ? total : past;
        xf_shape pres = {4, {b, t->kv_num_heads, len, h}};
        xf_infer_set(c, 1, &pres);
        xf_infer_set(c, 2, &pres);
    }
    return st;
}

/* MatMulIntegerToFloat (A, B, a_scale, b_scale, a_zero_point, b_zero_point,
 * bias) and DynamicQuantizeMatMul (A, B, b_scale, b_zero_point, bias): B
 * int8 or uint8 (A too, but float for DynamicQuantizeMatMul), zero points
 * of their operand's type, scales and bias float; Y float. */
xf_status xf_infer_int_matmul_float_dtypes(xf_infer_ctx *c)
{
    bool dyn = c->node->op == XF_OP_MS_DYNAMIC_QUANTIZE_MATMUL;
    /* per input: 0 float, 1 int8/uint8, 2 the type of A, 3 the type of B */
    static const int mitf[7] = {1, 1, 0, 0, 2, 3, 0}, dqmm[5] = {0, 1, 0, 3, 0};
    const int *kind = dyn ? dqmm : mitf;
    for (int i = 0; i < c->node->n_inputs && i < (dyn ? 5 : 7); i++) {
        xf_dtype d = xf_infer_dtype(c, i), want = kind[i] == 2 ? xf_infer_dtype(c, 0)
                                                : kind[i] == 3 ? xf_infer_dtype(c, 1)
                                                               : XF_DT_FLOAT;
        bool ok = d == XF_DT_UNDEFINED || (kind[i] == 1 ? d == XF_DT_INT8 || d == XF_DT_UINT8
                                                        : want == XF_DT_UNDEFINED || d == want);
        if (!ok)
            return xf_infer_fail(c, XF_ERR_INVALID, "input %d is %s, expected %s", i, xf_dtype_name(d),
                                 kind[i] == 1 ? "int8 or uint8" : xf_dtype_name(want));
    }
    if (c->node->outputs[0] >= 0)
        c->g->values[c->node->outputs[0]].dtype = XF_DT_FLOAT;
    return XF_OK;
}

/* A (..., K) times B (K, N): Y (..., N); A's scale and zero point one
 * value, B's one value or N (per column), the bias N. */
xf_status xf_infer_ms_int_matmul_float(xf_infer_ctx *c)
{
    bool dyn = c->node->op == XF_OP_MS_DYNAMIC_QUANTIZE_MATMUL;
    const xf_shape *a = xf_infer_shape(c, 0), *b = xf_infer_shape(c, 1);
    if (a->ndim < 1 || b->ndim != 2 || a->dims[a->ndim - 1] != b->dims[0])
        return xf_infer_fail(c, XF_ERR_INVALID, "A %s and B %s are not (..., K) and (K, N)", xf_infer_text(a).s,
                             xf_infer_text(b).s);
    int64_t nn = b->dims[1];
    const int a_params[2] = {dyn ? -1 : 2, dyn ? -1 : 4}, b_params[2] = {dyn ? 2 : 3, dyn ? 3 : 5};
    for (int k = 0; k < 2; k++) {
        if (a_params[k] >= 0 && xf_infer_has(c, a_params[k]) && !xf_infer_scalar_like(xf_infer_shape(c, a_params[k])))
            return xf_infer_fail(c, XF_ERR_INVALID, "A's %s %s is not one value", k ? "zero point" : "scale",
                                 xf_infer_text(xf_infer_shape(c, a_params[k])).s);
        int64_t numel = xf_infer_has(c, b_params[k]) ? xf_shape_numel(xf_infer_shape(c, b_params[k])) : 1;
        if (numel != 1 && numel != nn)
            return xf_infer_fail(c, XF_ERR_INVALID, "B's %s %s is neither one value nor %" PRId64,
                                 k ? "zero point" : "scale", xf_infer_text(xf_infer_shape(c, b_params[k])).s, nn);
    }
    xf_status st = want_numel(c, dyn ? 4 : 6, "bias", nn);
    if (st != XF_OK)
        return st;
    xf_shape y = *a;
    y.dims[y.ndim - 1] = nn;
    xf_infer_set(c, 0, &y);
    return XF_OK;
}

/* GatherBlockQuantized: data (G, ..., Q) of uint8 (8 / bits values per
 * byte along Q), int4 or uint4, gathered along axis 0 by indices (int32 or
 * int64); scales float, data's shape with the last axis ceil(Q values /
 * block_size); zero points of data's type, like the scales (uint8: packed
 * as data is).  Output: indices' shape then data's after axis 0, the last
 * holding all Q values.  The quantized axis must be the last. */
xf_status xf_infer_ms_gather_block_quantized(xf_infer_ctx *c)
{
    const xf_node *n = c->node;
    const xf_shape *d = xf_infer_shape(c, 0), *idx = xf_infer_shape(c, 1), *sc = xf_infer_shape(c, 2);
    xf_dtype dt = xf_infer_dtype(c, 0), it = xf_infer_dtype(c, 1);
    bool u8 = dt == XF_DT_UINT8;
    int64_t per = u8 ? 8 / n->attrs.attn.nb_bits : 1;
    if ((dt != XF_DT_UNDEFINED && !u8 && dt != XF_DT_INT4 && dt != XF_DT_UINT4) ||
        (it != XF_DT_UNDEFINED && it != XF_DT_INT32 && it != XF_DT_INT64) ||
        (xf_infer_dtype(c, 2) != XF_DT_UNDEFINED && !nbits_float(xf_infer_dtype(c, 2))) ||
        (xf_infer_has(c, 3) && xf_infer_dtype(c, 3) != dt))
        return xf_infer_fail(c, XF_ERR_INVALID, "takes uint8, int4 or uint4 data (zero points alike), int32 or "
                             "int64 indices and float, float16 or bfloat16 scales");
    if (d->ndim < 2 || (n->attrs.axis != -1 && n->attrs.axis != d->ndim - 1) || idx->ndim + d->ndim - 1 > XF_MAX_DIMS)
        return xf_infer_fail(c, XF_ERR_INVALID, "data %s is not quantized along its last axis (quantize_axis %" PRId64
                             ")", xf_infer_text(d).s, n->attrs.axis);
    int64_t q = d->dims[d->ndim - 1] * per, blocks = (q + n->attrs.attn.nb_block - 1) / n->attrs.attn.nb_block;
    xf_shape want = *d;
    want.dims[d->ndim - 1] = blocks;
    if (!xf_shape_equal(sc, &want))
        return xf_infer_fail(c, XF_ERR_INVALID, "scales %s, expected %s", xf_infer_text(sc).s, xf_infer_text(&want).s);
    want.dims[d->ndim - 1] = (blocks + per - 1) / per;
    if (xf_infer_has(c, 3) && !xf_shape_equal(xf_infer_shape(c, 3), &want))
        return xf_infer_fail(c, XF_ERR_INVALID, "zero_points %s, expected %s", xf_infer_text(xf_infer_shape(c, 3)).s,
                             xf_infer_text(&want).s);
    xf_shape y = {.ndim = idx->ndim + d->ndim - 1};
    for (int i = 0; i < idx->ndim; i++)
        y.dims[i] = idx->dims[i];
    for (int i = 1; i < d->ndim; i++)
        y.dims[idx->ndim + i - 1] = d->dims[i];
    y.dims[y.ndim - 1] = q;
    xf_infer_set(c, 0, &y);
    return XF_OK;
}
