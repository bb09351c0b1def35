/* Shape and dtype rules of ONNX Runtime's attention family (com.microsoft):
 * Attention, MultiHeadAttention, EmbedLayerNormalization, RotaryEmbedding.
 * Layouts are those of ONNX Runtime's CPU kernels: B batch, S query
 * sequence, L key/value sequence, P past sequence, T = P + L, N heads,
 * H head size (Hv for V), D = N * H. */
#include "shape_infer_impl.h"

#include <inttypes.h>

static void set_dtype(xf_infer_ctx *c, int k, xf_dtype d)
{
    if (k < c->node->n_outputs && c->node->outputs[k] >= 0 && d != XF_DT_UNDEFINED)
        c->g->values[c->node->outputs[k]].dtype = d;
}

/* Inputs listed in `ints` (bit i) are integer tensors of type want (int64
 * RotaryEmbedding's position_ids, int32 the rest); the others float,
 * float16 or bfloat16 (as ONNX Runtime's schemas allow), all of input 0's
 * type (the word embedding's for EmbedLayerNormalization). */
xf_status xf_infer_attn_dtypes(xf_infer_ctx *c)
{
    const xf_node *n = c->node;
    bool embed = n->op == XF_OP_MS_EMBED_LAYER_NORM;
    unsigned ints = 0;
    xf_dtype want = n->op == XF_OP_MS_ROTARY_EMB ? XF_DT_INT64 : XF_DT_INT32;
    switch (n->op) {
    case XF_OP_MS_ATTENTION: ints = 1u << 3; break;
    case XF_OP_MS_MHA: ints = 1u << 4; break;
    case XF_OP_MS_EMBED_LAYER_NORM: ints = 1u << 0 | 1u << 1 | 1u << 7 | 1u << 8; break;
    case XF_OP_MS_GQA: ints = 1u << 5 | 1u << 6; break;
    default: ints = 1u << 1; break;
    }
    xf_dtype t = xf_infer_dtype(c, embed ? 2 : 0);
    for (int i = 0; i < n->n_inputs; i++) {
        xf_dtype d = xf_infer_dtype(c, i);
        if (d == XF_DT_UNDEFINED)
            continue;
        /* a 0/1 mask may also be boolean or float in ONNX Runtime's schema,
         * which its CPU kernels do not take */
        xf_dtype need = (ints >> i & 1) ? want : t;
        if (need == XF_DT_UNDEFINED)
            need = d;
        if (d != need || (!(ints >> i & 1) && d != XF_DT_FLOAT && !xf_dtype_is_half(d)))
            return xf_infer_fail(c, XF_ERR_INVALID, "input %d is %s; %s takes float, float16 or bfloat16 data (all "
                                 "alike) and %s indices", i,
                                 xf_dtype_name(d), xf_op_name(n->op), xf_dtype_name(want));
        if (!(ints >> i & 1) && t == XF_DT_UNDEFINED)
            t = d;
    }
    for (int k = 0; k < n->n_outputs; k++)
        set_dtype(c, k, embed && k == 1 ? XF_DT_INT32 : t);
    return XF_OK;
}

/* QAttention: input (0) and its zero point (6) int8 or uint8 alike,
 * weights (1) and theirs (7) likewise, the bias, the scales and past float,
 * mask_index (5) int32; outputs float. */
xf_status xf_infer_qattention_dtypes(xf_infer_ctx *c)
{
    const xf_node *n = c->node;
    for (int i = 0; i < n->n_inputs; i++) {
        xf_dtype d = xf_infer_dtype(c, i);
        if (d == XF_DT_UNDEFINED)
            continue;
        bool ok = i == 0 || i == 1 ? d == XF_DT_UINT8 || d == XF_DT_INT8
                  : i == 6 || i == 7 ? d == xf_infer_dtype(c, i - 6)
                  : i == 5           ? d == XF_DT_INT32
                                     : d == XF_DT_FLOAT;
        if (!ok)
            return xf_infer_fail(c, XF_ERR_INVALID, "input %d is %s; QAttention takes 8-bit input and weights, "
                                 "zero points of their types, float bias, scales and past and an int32 mask", i,
                                 xf_dtype_name(d));
    }
    for (int k = 0; k < n->n_outputs; k++)
        set_dtype(c, k, XF_DT_FLOAT);
    return XF_OK;
}

xf_status xf_infer_want_shape(xf_infer_ctx *c, int i, const char *what, int ndim, const int64_t *dims)
{
    if (!xf_infer_has(c, i))
        return XF_OK;
    xf_shape w = xf_shape_make(ndim, dims);
    if (!xf_shape_equal(xf_infer_shape(c, i), &w))
        return xf_infer_fail(c, XF_ERR_INVALID, "%s is %s, expected %s", what, xf_infer_text(xf_infer_shape(c, i)).s,
                             xf_infer_text(&w).s);
    return XF_OK;
}

static xf_status want_rank(xf_infer_ctx *c, int i, const char *what, int lo, int hi)
{
    const xf_shape *s = xf_infer_shape(c, i);
    if (s->ndim < lo || s->ndim > hi)
        return xf_infer_fail(c, XF_ERR_INVALID, "%s %s must have rank %d%s", what, xf_infer_text(s).s, lo,
                             hi > lo ? " or more" : "");
    return XF_OK;
}

/* The mask forms of ONNX Runtime's CPU kernels: 1-D end positions (B) or
 * end and start positions (2B, Attention only), a 2-D 0/1 mask (B, T), a
 * 3-D one (B, S, T); and the additive attention_bias (B or 1, N or 1, S, T).
 * The schema's 4-D form passes here, so that such models load. */
static xf_status check_masks(xf_infer_ctx *c, int mask, int bias, int64_t b, int64_t n, int64_t s, int64_t t)
{
    bool attention = c->node->op == XF_OP_MS_ATTENTION || c->node->op == XF_OP_MS_QATTENTION;
    if (mask >= 0 && xf_infer_has(c, mask)) {
        const xf_shape *m = xf_infer_shape(c, mask);
        bool ok = (m->ndim == 1 && (m->dims[0] == b || (attention && m->dims[0] == 2 * b))) ||
                  (m->ndim == 2 && m->dims[0] == b && m->dims[1] == t) ||
                  (m->ndim == 3 && m->dims[0] == b && m->dims[1] == s && m->dims[2] == t) ||
                  /* Megatron's (B, 1, M, M), M >= T: loads; the kernels refuse it */
                  (m->ndim == 4 && m->dims[0] == b && m->dims[1] == 1 && m->dims[2] == m->dims[3] &&
                   m->dims[2] >= t);
        if (!ok)
            return xf_infer_fail(c, XF_ERR_INVALID,
                                 "mask %s is none of (%" PRId64 "), (%" PRId64 ", %" PRId64 "), (%" PRId64
                                 ", %" PRId64 ", %" PRId64 ")",
                                 xf_infer_text(m).s, b, b, t, b, s, t);
    }
    if (bias >= 0 && xf_infer_has(c, bias)) {
        const xf_shape *a = xf_infer_shape(c, bias);
        if (a->ndim != 4 || (a->dims[0] != b && a->dims[0] != 1) || (a->dims[1] != n && a->dims[1] != 1) ||
            a->dims[2] != s || a->dims[3] != t)
            return xf_infer_fail(c, XF_ERR_INVALID,
                                 "attention_bias %s is not (%" PRId64 " or 1, %" PRId64 " or 1, %" PRId64 ", %" PRId64
                                 ")",
                                 xf_infer_text(a).s, b, n, s, t);
    }
    return XF_OK;
}

static xf_status heads_divide(xf_infer_ctx *c, int64_t d, int64_t dv, int64_t n)
{
    if (n < 1 || d % n != 0 || dv % n != 0 || d < 1 || dv < 1)
        return xf_infer_fail(c, XF_ERR_INVALID, "%" PRId64 " heads do not divide hidden sizes %" PRId64 " and %" PRId64,
                             n, d, dv);
    return XF_OK;
}

/* Attention: input (B, S, Din), weights (Din, D + D + Dv), bias (D + D + Dv),
 * mask_index, past (2, B, N, P, H), attention_bias; output (B, S, Dv),
 * present (2, B, N, T, H).  QAttention: input, weights and bias likewise,
 * then input_scale and weight_scale (one, or one per column of the
 * weights), mask_index (5), the zero points (6, 7: one, or one per column
 * for the weights) and past (8). */
xf_status xf_infer_ms_attention(xf_infer_ctx *c)
{
    const xf_attn_attrs *t = &c->node->attrs.attn;
    bool quant = c->node->op == XF_OP_MS_QATTENTION;
    int i_mask = quant ? 5 : 3, i_past = quant ? 8 : 4, i_bias = quant ? -1 : 5;
    const xf_shape *x = xf_infer_shape(c, 0), *w = xf_infer_shape(c, 1);
    if (x->ndim != 3 || w->ndim != 2 || w->dims[0] != x->dims[2])
        return xf_infer_fail(c, XF_ERR_INVALID, "input %s and weights %s are not (B, S, Din) and (Din, 3D)",
                             xf_infer_text(x).s, xf_infer_text(w).s);
    int64_t b = x->dims[0], s = x->dims[1], n = t->num_heads, d = w->dims[1] / 3, dv = d;
    if (t->n_qkv_sizes == 3) {
        d = t->qkv_sizes[0];
        dv = t->qkv_sizes[2];
    }
    if (d + d + dv != w->dims[1])
        return xf_infer_fail(c, XF_ERR_INVALID, "weights %s do not hold Q, K and V", xf_infer_text(w).s);
    xf_status st = heads_divide(c, d, dv, n);
    if (st == XF_OK)
        st = xf_infer_want_shape(c, 2, "bias", 1, &w->dims[1]);
    static const char *const qnames[8] = {[3] = "input_scale", [4] = "weight_scale", [6] = "input_zero_point",
                                          [7] = "weight_zero_point"};
    for (int i = 3; quant && st == XF_OK && i < 8; i++) { /* one value, or the weights' one per column */
        if (i == 5 || !xf_infer_has(c, i))
            continue;
        const xf_shape *q = xf_infer_shape(c, i);
        bool per_column = (i == 4 || i == 7) && q->ndim == 1 && q->dims[0] == w->dims[1];
        if (xf_shape_numel(q) != 1 && !per_column)
            return xf_infer_fail(c, XF_ERR_INVALID, "%s %s is neither one value nor one per column of the weights",
                                 qnames[i], xf_infer_text(q).s);
    }
    int64_t p = 0, h = d / n;
    if (st == XF_OK && xf_infer_has(c, i_past)) {
        const xf_shape *past = xf_infer_shape(c, i_past);
        if (d != dv || past->ndim != 5)
            return xf_infer_fail(c, XF_ERR_INVALID, "past %s with hidden sizes %" PRId64 " and %" PRId64,
                                 xf_infer_text(past).s, d, dv);
        p = past->dims[3];
        st = xf_infer_want_shape(c, i_past, "past", 5, (const int64_t[]){2, b, n, p, h});
    }
    if (st == XF_OK && xf_infer_has(c, i_past) && i_bias >= 0 && xf_infer_has(c, i_bias))
        return xf_infer_fail(c, XF_ERR_INVALID, "past and attention_bias do not come together");
    if (st == XF_OK)
        st = check_masks(c, i_mask, i_bias, b, n, s, p + s);
    if (st != XF_OK)
        return st;
    xf_infer_set(c, 0, &(xf_shape){.ndim = 3, .dims = {b, s, dv}});
    if (c->node->n_outputs > 1 && d != dv)
        return xf_infer_fail(c, XF_ERR_INVALID, "present with hidden sizes %" PRId64 " and %" PRId64, d, dv);
    xf_infer_set(c, 1, &(xf_shape){.ndim = 5, .dims = {2, b, n, p + s, h}});
    return XF_OK;
}

/* MultiHeadAttention's operands: query (B, S, D) with key (B, L, D) and
 * value (B, L, Dv), or key (B, N, L, H) and value (B, N, L, Hv) (no bias,
 * no past), or packed key and value (B, L, N, 2, H); or packed query, key
 * and value (B, S, N, 3, H). */
xf_status xf_infer_ms_mha(xf_infer_ctx *c)
{
    int64_t n = c->node->attrs.attn.num_heads;
    const xf_shape *q = xf_infer_shape(c, 0);
    bool has_k = xf_infer_has(c, 1), has_v = xf_infer_has(c, 2);
    const xf_shape *k = has_k ? xf_infer_shape(c, 1) : NULL, *v = has_v ? xf_infer_shape(c, 2) : NULL;
    int64_t b = q->dims[0], s = q->dims[1], l, d, dv;
    if (q->ndim == 5 && !has_k && !has_v && q->dims[2] == n && q->dims[3] == 3) {
        l = s;
        d = dv = n * q->dims[4];
    } else if (q->ndim == 3 && has_k && !has_v && k->ndim == 5 && k->dims[0] == b && k->dims[2] == n &&
               k->dims[3] == 2 && k->dims[4] * n == q->dims[2]) {
        l = k->dims[1];
        d = dv = q->dims[2];
    } else if (q->ndim == 3 && has_k && has_v && k->ndim == 3 && v->ndim == 3 && k->dims[0] == b &&
               v->dims[0] == b && k->dims[2] == q->dims[2] && v->dims[1] == k->dims[1]) {
        l = k->dims[1];
        d = q->dims[2];
        dv = v->dims[2];
    } else if (q->ndim == 3 && has_k && has_v && k->ndim == 4 && v->ndim == 4 && k->dims[0] == b &&
               k->dims[1] == n && k->dims[3] * n == q->dims[2] && v->dims[0] == b && v->dims[1] == n &&
               v->dims[2] == k->dims[2] && !xf_infer_has(c, 3) && !xf_infer_has(c, 6)) {
        l = k->dims[2];
        d = q->dims[2];
        dv = n * v->dims[3];
    } else {
        return xf_infer_fail(c, XF_ERR_INVALID, "query %s, key %s and value %s are not a form MultiHeadAttention takes",
                             xf_infer_text(q).s, k ? xf_infer_text(k).s : "none", v ? xf_infer_text(v).s : "none");
    }
    xf_status st = heads_divide(c, d, dv, n);
    if (st == XF_OK)
        st = xf_infer_want_shape(c, 3, "bias", 1, (const int64_t[]){d + d + dv});
    int64_t p = 0;
    if (st == XF_OK && (xf_infer_has(c, 6) || xf_infer_has(c, 7))) {
        if (!xf_infer_has(c, 6) || !xf_infer_has(c, 7) || xf_infer_shape(c, 6)->ndim != 4)
            return xf_infer_fail(c, XF_ERR_INVALID, "past_key and past_value come together, 4-D");
        p = xf_infer_shape(c, 6)->dims[2];
        st = xf_infer_want_shape(c, 6, "past_key", 4, (const int64_t[]){b, n, p, d / n});
        if (st == XF_OK)
            st = xf_infer_want_shape(c, 7, "past_value", 4, (const int64_t[]){b, n, p, dv / n});
    }
    if (st == XF_OK)
        st = check_masks(c, 4, 5, b, n, s, p + l);
    if (st != XF_OK)
        return st;
    xf_infer_set(c, 0, &(xf_shape){.ndim = 3, .dims = {b, s, dv}});
    xf_infer_set(c, 1, &(xf_shape){.ndim = 4, .dims = {b, n, p + l, d / n}});
    xf_infer_set(c, 2, &(xf_shape){.ndim = 4, .dims = {b, n, p + l, dv / n}});
    return XF_OK;
}

/* EmbedLayerNormalization: input_ids (B, S), segment_ids (B, S) with
 * segment_embedding, word (V, H) and position (P, H) embeddings, gamma and
 * beta (H), mask (B, S), position_ids (B, S) or (1, S); output and
 * embedding_sum (B, S, H), mask_index (B). */
xf_status xf_infer_ms_embed_layer_norm(xf_infer_ctx *c)
{
    /* segment_ids (1) is optional: ops.def can only ask for input 0 */
    for (int i = 2; i < 7; i++)
        if (i != 4 && !xf_infer_has(c, i))
            return xf_infer_fail(c, XF_ERR_INVALID, "required input %d is missing", i);
    const xf_shape *ids = xf_infer_shape(c, 0), *word = xf_infer_shape(c, 2);
    xf_status st = want_rank(c, 0, "input_ids", 2, 2);
    if (st == XF_OK && (word->ndim != 2 || xf_infer_shape(c, 3)->ndim != 2 ||
                        xf_infer_shape(c, 3)->dims[1] != word->dims[1]))
        return xf_infer_fail(c, XF_ERR_INVALID, "word %s and position %s embeddings are not (V, H) and (P, H)",
                             xf_infer_text(word).s, xf_infer_text(xf_infer_shape(c, 3)).s);
    if (st == XF_OK && xf_infer_has(c, 1) != xf_infer_has(c, 4))
        return xf_infer_fail(c, XF_ERR_INVALID, "segment_ids and segment_embedding come together");
    if (st != XF_OK)
        return st;
    int64_t b = ids->dims[0], s = ids->dims[1], h = word->dims[1];
    st = xf_infer_want_shape(c, 1, "segment_ids", 2, ids->dims);
    if (st == XF_OK && xf_infer_has(c, 4) &&
        (xf_infer_shape(c, 4)->ndim != 2 || xf_infer_shape(c, 4)->dims[1] != h))
        return xf_infer_fail(c, XF_ERR_INVALID, "segment_embedding %s is not (G, %" PRId64 ")",
                             xf_infer_text(xf_infer_shape(c, 4)).s, h);
    if (st == XF_OK)
        st = xf_infer_want_shape(c, 5, "gamma", 1, &h);
    if (st == XF_OK)
        st = xf_infer_want_shape(c, 6, "beta", 1, &h);
    if (st == XF_OK)
        st = xf_infer_want_shape(c, 7, "mask", 2, ids->dims);
    if (st == XF_OK && xf_infer_has(c, 8) && xf_infer_shape(c, 8)->ndim == 2 && xf_infer_shape(c, 8)->dims[0] == 1)
        st = xf_infer_want_shape(c, 8, "position_ids", 2, (const int64_t[]){1, s});
    else if (st == XF_OK)
        st = xf_infer_want_shape(c, 8, "position_ids", 2, ids->dims);
    if (st != XF_OK)
        return st;
    xf_infer_set(c, 0, &(xf_shape){.ndim = 3, .dims = {b, s, h}});
    xf_infer_set(c, 1, &(xf_shape){.ndim = 1, .dims = {b}});
    xf_infer_set(c, 2, &(xf_shape){.ndim = 3, .dims = {b, s, h}});
    return XF_OK;
}

bool xf_rotary_layout(const xf_attn_attrs *t, const xf_shape *x, const xf_shape *cache, int64_t *heads,
                      int64_t *head_size, int64_t *rot)
{
    if ((x->ndim != 3 && x->ndim != 4) || cache->ndim != 2 || cache->dims[1] < 1)
        return false;
    int64_t hidden = x->ndim == 4 ? x->dims[1] * x->dims[3] : x->dims[2];
    int64_t n = x->ndim == 4 ? x->dims[1] : t->num_heads;
    int64_t hs = x->ndim == 4 ? x->dims[3] : t->rotary_dim > 0 ? (n > 0 ? hidden / n : 0) : cache->dims[1] * 2;
    if (hs < 1 || hidden % hs != 0)
        return false;
    *heads = hidden / hs;
    *head_size = hs;
    *rot = t->rotary_dim > 0 ? t->rotary_dim : hs;
    return *rot <= hs && cache->dims[1] * 2 == *rot && (t->num_heads == 0 || t->num_heads == *heads);
}

/* RotaryEmbedding: input (B, S, D) or (B, N, S, H), position_ids (B, S) or
 * one start position, cos_cache and sin_cache (M, rotary dim / 2); the
 * output has the input's shape. */
xf_status xf_infer_ms_rotary(xf_infer_ctx *c)
{
    const xf_shape *x = xf_infer_shape(c, 0), *pos = xf_infer_shape(c, 1), *cache = xf_infer_shape(c, 2);
    int64_t n, hs, rot;
    if (!xf_rotary_layout(&c->node->attrs.attn, x, cache, &n, &hs, &rot))
        return xf_infer_fail(c, XF_ERR_INVALID, "input %s, cos_cache %s, num_heads %" PRId64
                             " and rotary_embedding_dim %" PRId64 " do not agree",
                             xf_infer_text(x).s, xf_infer_text(cache).s, c->node->attrs.attn.num_heads,
                             c->node->attrs.attn.rotary_dim);
    int64_t s = x->dims[x->ndim == 4 ? 2 : 1];
    xf_status st = xf_infer_want_shape(c, 3, "sin_cache", 2, cache->dims);
    if (st == XF_OK && !xf_infer_scalar_like(pos))
        st = xf_infer_want_shape(c, 1, "position_ids", 2, (const int64_t[]){x->dims[0], s});
    if (st == XF_OK)
        xf_infer_set(c, 0, x);
    return st;
}
