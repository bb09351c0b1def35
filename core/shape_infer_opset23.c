/* Shape and dtype rules of ONNX's opset 23 ops for transformers:
 * Attention (23 and 24), RMSNormalization, RotaryEmbedding.  B batch,
 * S query sequence, L key/value sequence, P past sequence, T = P + L,
 * Nq and Nkv heads, H the head size of Q and K, Hv V's. */
#include "shape_infer_impl.h"

#include <inttypes.h>

/* Q, K, past_key, V and past_value are all of one float type (ONNX's T1
 * and T2: the kernels take one), attn_mask bool or float, nonpad_kv_seqlen
 * int64; every output has Q's type. */
xf_status xf_infer_attention_dtypes(xf_infer_ctx *c)
{
    const xf_node *n = c->node;
    xf_dtype t = XF_DT_UNDEFINED;
    for (int i = 0; i < n->n_inputs; i++) {
        xf_dtype d = xf_infer_dtype(c, i);
        if (d == XF_DT_UNDEFINED || (i == 3 && (d == XF_DT_BOOL || xf_dtype_is_float(d))))
            continue;
        if (i == 6 && d != XF_DT_INT64)
            return xf_infer_fail(c, XF_ERR_INVALID, "nonpad_kv_seqlen is %s, not int64", xf_dtype_name(d));
        if (i == 6)
            continue;
        if (i == 3 || !xf_dtype_is_float(d) || (t != XF_DT_UNDEFINED && d != t))
            return xf_infer_fail(c, XF_ERR_INVALID, "input %d is %s; Q, K, V and the past are of one float type%s",
                                 i, xf_dtype_name(d), i == 3 ? ", the mask bool or float" : "");
        t = d;
    }
    for (int k = 0; k < n->n_outputs; k++)
        if (n->outputs[k] >= 0 && t != XF_DT_UNDEFINED)
            c->g->values[n->outputs[k]].dtype = t;
    return XF_OK;
}

/* attn_mask broadcasts to (B, Nq, S, T) except in its last dim, which may
 * be shorter than T (the rest is masked). */
static xf_status check_mask(xf_infer_ctx *c, const int64_t *full)
{
    if (!xf_infer_has(c, 3))
        return XF_OK;
    const xf_shape *m = xf_infer_shape(c, 3);
    bool ok = m->ndim >= 1 && m->ndim <= 4 && m->dims[m->ndim - 1] <= full[3];
    for (int d = 0; ok && d < m->ndim - 1; d++) {
        int64_t md = m->dims[d], fd = full[4 - m->ndim + d];
        ok = md == 1 || md == fd;
    }
    if (!ok)
        return xf_infer_fail(c, XF_ERR_INVALID,
                             "attn_mask %s does not broadcast to (%" PRId64 ", %" PRId64 ", %" PRId64
                             ", at most %" PRId64 ")",
                             xf_infer_text(m).s, full[0], full[1], full[2], full[3]);
    return XF_OK;
}

/* Q, K, V 3-D (B, S, Nq * H), (B, L, Nkv * H), (B, L, Nkv * Hv) with
 * q_num_heads and kv_num_heads, or 4-D (B, Nq, S, H), (B, Nkv, L, H),
 * (B, Nkv, L, Hv); Nq a multiple of Nkv.  past_key (B, Nkv, P, H) and
 * past_value (B, Nkv, P, Hv) come together, nonpad_kv_seqlen (B) without
 * them (from opset 25 4-D inputs come without q_num_heads and
 * kv_num_heads).  Y is (B, S, Nq * Hv) or (B, Nq, S, Hv), present_key and
 * present_value (B, Nkv, T, H or Hv), qk_matmul_output (B, Nq, S, T). */
xf_status xf_infer_attention(xf_infer_ctx *c)
{
    const xf_attn_attrs *t = &c->node->attrs.attn;
    const xf_shape *q = xf_infer_shape(c, 0), *k = xf_infer_shape(c, 1), *v = xf_infer_shape(c, 2);
    int r = q->ndim;
    if ((r != 3 && r != 4) || k->ndim != r || v->ndim != r)
        return xf_infer_fail(c, XF_ERR_INVALID, "Q %s, K %s and V %s are not all 3-D or all 4-D", xf_infer_text(q).s,
                             xf_infer_text(k).s, xf_infer_text(v).s);
    int64_t b = q->dims[0], nq, nkv, s, l, h, hv;
    if (r == 3) {
        nq = t->num_heads;
        nkv = t->kv_num_heads;
        if (nq < 1 || nkv < 1)
            return xf_infer_fail(c, XF_ERR_INVALID, "3-D inputs need q_num_heads and kv_num_heads");
        s = q->dims[1];
        l = k->dims[1];
        h = q->dims[2] / nq;
        hv = v->dims[2] / nkv;
        if (q->dims[2] % nq || k->dims[2] != nkv * h || v->dims[2] % nkv || v->dims[1] != l || k->dims[0] != b ||
            v->dims[0] != b)
            return xf_infer_fail(c, XF_ERR_INVALID,
                                 "Q %s, K %s and V %s do not split into %" PRId64 " and %" PRId64 " heads",
                                 xf_infer_text(q).s, xf_infer_text(k).s, xf_infer_text(v).s, nq, nkv);
    } else {
        if (c->opset >= 25 && (t->num_heads || t->kv_num_heads))
            return xf_infer_fail(c, XF_ERR_INVALID, "q_num_heads and kv_num_heads go with 3-D inputs from opset 25");
        nq = q->dims[1];
        nkv = k->dims[1];
        s = q->dims[2];
        l = k->dims[2];
        h = q->dims[3];
        hv = v->dims[3];
        if (k->dims[0] != b || v->dims[0] != b || k->dims[3] != h || v->dims[1] != nkv || v->dims[2] != l ||
            (t->num_heads && t->num_heads != nq) || (t->kv_num_heads && t->kv_num_heads != nkv))
            return xf_infer_fail(c, XF_ERR_INVALID,
                                 "Q %s, K %s and V %s are not (B, Nq, S, H), (B, Nkv, L, H), (B, Nkv, L, Hv)%s",
                                 xf_infer_text(q).s, xf_infer_text(k).s, xf_infer_text(v).s,
                                 t->num_heads || t->kv_num_heads ? " with the heads the attributes give" : "");
    }
    if (nkv < 1 || nq % nkv)
        return xf_infer_fail(c, XF_ERR_INVALID, "%" PRId64 " query heads are not a multiple of %" PRId64
                             " key/value heads", nq, nkv);
    bool past = xf_infer_has(c, 4), nonpad = c->node->n_inputs > 6 && xf_infer_has(c, 6);
    if (past != xf_infer_has(c, 5))
        return xf_infer_fail(c, XF_ERR_INVALID, "past_key and past_value come together");
    if (past && nonpad)
        return xf_infer_fail(c, XF_ERR_INVALID, "nonpad_kv_seqlen does not go with past_key and past_value");
    int64_t p = past && xf_infer_shape(c, 4)->ndim == 4 ? xf_infer_shape(c, 4)->dims[2] : 0;
    xf_status st = xf_infer_want_shape(c, 4, "past_key", 4, (const int64_t[]){b, nkv, p, h});
    if (st == XF_OK)
        st = xf_infer_want_shape(c, 5, "past_value", 4, (const int64_t[]){b, nkv, p, hv});
    if (st == XF_OK && nonpad)
        st = xf_infer_want_shape(c, 6, "nonpad_kv_seqlen", 1, &b);
    int64_t tt = p + l, full[4] = {b, nq, s, tt};
    if (st == XF_OK)
        st = check_mask(c, full);
    if (st != XF_OK)
        return st;
    if (r == 3)
        xf_infer_set(c, 0, &(xf_shape){.ndim = 3, .dims = {b, s, nq * hv}});
    else
        xf_infer_set(c, 0, &(xf_shape){.ndim = 4, .dims = {b, nq, s, hv}});
    xf_infer_set(c, 1, &(xf_shape){.ndim = 4, .dims = {b, nkv, tt, h}});
    xf_infer_set(c, 2, &(xf_shape){.ndim = 4, .dims = {b, nkv, tt, hv}});
    xf_infer_set(c, 3, &(xf_shape){.ndim = 4, .dims = {b, nq, s, tt}});
    return XF_OK;
}

/* LayerNormalization's rule, with a scale that is the trailing dims of the
 * normalized shape (leading 1s allowed): what the kernels read, element h
 * of a normalized row taking scale element h modulo its size. */
xf_status xf_infer_rms_norm(xf_infer_ctx *c)
{
    xf_status st = xf_infer_layer_norm(c);
    if (st != XF_OK)
        return st;
    const xf_shape *x = xf_infer_shape(c, 0), *w = xf_infer_shape(c, 1);
    int axis = (int)(c->node->attrs.axis < 0 ? c->node->attrs.axis + x->ndim : c->node->attrs.axis), lead = 0;
    while (lead < w->ndim && w->dims[lead] == 1)
        lead++;
    for (int d = lead; d < w->ndim; d++)
        if (x->ndim - w->ndim + d < axis || w->dims[d] != x->dims[x->ndim - w->ndim + d])
            return xf_infer_fail(c, XF_ERR_UNSUPPORTED, "scale %s broadcasts to %s other than along its leading "
                                 "dims, which xflow does not run", xf_infer_text(w).s, xf_infer_text(x).s);
    return XF_OK;
}

/* The head size, heads and rotated dims of ONNX's RotaryEmbedding on X
 * (B, N, S, H) or (B, S, num_heads * H); false when they do not agree. */
static bool rotary_dims(const xf_attn_attrs *t, const xf_shape *x, int64_t *heads, int64_t *hs, int64_t *rot)
{
    if (x->ndim == 4) {
        *heads = x->dims[1];
        *hs = x->dims[3];
    } else if (x->ndim == 3 && t->num_heads > 0 && x->dims[2] % t->num_heads == 0) {
        *heads = t->num_heads;
        *hs = x->dims[2] / t->num_heads;
    } else {
        return false;
    }
    *rot = t->rotary_dim > 0 ? t->rotary_dim : *hs;
    return *rot <= *hs && *rot % 2 == 0;
}

/* RotaryEmbedding: X 4-D (B, N, S, H) or 3-D (B, S, D) with num_heads;
 * with position_ids (B, S) the caches are (M, R / 2), without it (B, S,
 * R / 2), R the rotated dims (rotary_embedding_dim, else H).  The output
 * has X's shape. */
xf_status xf_infer_rotary(xf_infer_ctx *c)
{
    const xf_shape *x = xf_infer_shape(c, 0), *cache = xf_infer_shape(c, 1);
    int64_t heads, hs, rot;
    if (!rotary_dims(&c->node->attrs.attn, x, &heads, &hs, &rot))
        return xf_infer_fail(c, XF_ERR_INVALID, "X %s, num_heads %" PRId64 " and rotary_embedding_dim %" PRId64
                             " do not agree", xf_infer_text(x).s, c->node->attrs.attn.num_heads,
                             c->node->attrs.attn.rotary_dim);
    int64_t b = x->dims[0], s = x->dims[x->ndim == 4 ? 2 : 1];
    bool pos = c->node->n_inputs > 3 && xf_infer_has(c, 3);
    xf_status st = XF_OK;
    if (pos && (cache->ndim != 2 || cache->dims[1] != rot / 2))
        st = xf_infer_fail(c, XF_ERR_INVALID, "cos_cache %s is not (max position, %" PRId64 ")",
                           xf_infer_text(cache).s, rot / 2);
    else if (!pos)
        st = xf_infer_want_shape(c, 1, "cos_cache (without position_ids)", 3, (const int64_t[]){b, s, rot / 2});
    if (st == XF_OK)
        st = xf_infer_want_shape(c, 2, "sin_cache", cache->ndim, cache->dims);
    if (st == XF_OK && pos)
        st = xf_infer_want_shape(c, 3, "position_ids", 2, (const int64_t[]){b, s});
    if (st == XF_OK)
        xf_infer_set(c, 0, x);
    return st;
}
