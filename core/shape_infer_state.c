/* Shape and dtype rules of opset 27's recurrent ops: CausalConvWithState
 * and LinearAttention (see shape_infer.c for the driver).  B batch, C
 * channels, L or T the sequence, k the kernel, Hq and Hkv the query and
 * key/value heads, d_k and d_v the key and value head sizes. */
#include "shape_infer_impl.h"

#include <inttypes.h>

/* Kernels and head counts beyond this are malformed, refused before any
 * arithmetic on them can overflow (Conv's window limit). */
#define STATE_LIMIT ((int64_t)1 << 31)

/* Both ops take float, float16 or bfloat16 (ONNX's T); LinearAttention's
 * past_state and present_state may be of another of them (its S). */
static bool state_dtype(xf_dtype t)
{
    return t == XF_DT_FLOAT || t == XF_DT_FLOAT16 || t == XF_DT_BFLOAT16;
}

/* Every input but `other` (-1: none) is of one type T, which output 0
 * takes; input `other`, when present, is of a type of its own, which
 * output 1 takes (else output 1 is T). */
xf_status xf_infer_state_dtypes(xf_infer_ctx *c)
{
    const xf_node *n = c->node;
    int other = n->op == XF_OP_LINEAR_ATTENTION ? 3 : -1;
    xf_dtype t = XF_DT_UNDEFINED, s = XF_DT_UNDEFINED;
    for (int i = 0; i < n->n_inputs; i++) {
        xf_dtype d = xf_infer_dtype(c, i);
        if (d == XF_DT_UNDEFINED)
            continue;
        if (!state_dtype(d))
            return xf_infer_fail(c, XF_ERR_INVALID, "input %d is %s; it must be float, float16 or bfloat16", i,
                                 xf_dtype_name(d));
        if (i == other) {
            s = d;
            continue;
        }
        if (t != XF_DT_UNDEFINED && d != t)
            return xf_infer_fail(c, XF_ERR_INVALID, "input %d is %s but input 0 is %s", i, xf_dtype_name(d),
                                 xf_dtype_name(t));
        t = d;
    }
    xf_dtype out[2] = {t, s != XF_DT_UNDEFINED ? s : t};
    for (int k = 0; k < n->n_outputs && k < 2; k++)
        if (n->outputs[k] >= 0 && out[k] != XF_DT_UNDEFINED)
            c->g->values[n->outputs[k]].dtype = out[k];
    return XF_OK;
}

/* Whether the product of n dims stays below INT64_MAX (the saturated
 * value). */
static bool product_fits(int n, const int64_t *dims) { return xf_infer_dims_product(dims, n) < INT64_MAX; }

/* CausalConvWithState: input (B, C, L), weight (C, 1, k) with k of 1 or
 * more, bias (C), past_state (B, C, k - 1); output (B, C, L) and
 * present_state (B, C, k - 1). */
xf_status xf_infer_causal_conv(xf_infer_ctx *c)
{
    const xf_shape *x = xf_infer_shape(c, 0), *w = xf_infer_shape(c, 1);
    if (x->ndim != 3 || w->ndim != 3)
        return xf_infer_fail(c, XF_ERR_INVALID, "input %s and weight %s must both be 3-D: (batch, channels, "
                             "length) and (channels, 1, kernel)", xf_infer_text(x).s, xf_infer_text(w).s);
    int64_t b = x->dims[0], ch = x->dims[1], l = x->dims[2], k = w->dims[2];
    if (w->dims[0] != ch || w->dims[1] != 1 || k < 1 || k > STATE_LIMIT)
        return xf_infer_fail(c, XF_ERR_INVALID, "weight %s is not (%" PRId64 ", 1, kernel) with a kernel of 1 to "
                             "2^31", xf_infer_text(w).s, ch);
    if (l > INT64_MAX - k || !product_fits(3, (const int64_t[]){b, ch, l + (k - 1)}))
        return xf_infer_fail(c, XF_ERR_INVALID, "input %s with a kernel of %" PRId64 " is too large",
                             xf_infer_text(x).s, k);
    xf_status st = c->node->n_inputs > 2 ? xf_infer_want_shape(c, 2, "bias", 1, &ch) : XF_OK;
    int64_t state[3] = {b, ch, k - 1};
    if (st == XF_OK && c->node->n_inputs > 3)
        st = xf_infer_want_shape(c, 3, "past_state", 3, state);
    if (st != XF_OK)
        return st;
    xf_infer_set(c, 0, x);
    xf_infer_set(c, 1, &(xf_shape){.ndim = 3, .dims = {b, ch, k - 1}});
    return XF_OK;
}

/* LinearAttention: query (B, T, Hq * d_k), key (B, T, Hkv * d_k), value
 * (B, T, Hkv * d_v) with Hq a multiple of Hkv (the attributes), past_state
 * (B, Hkv, d_k, d_v), decay (B, T, Hkv) or (B, T, Hkv * d_k) exactly when
 * the rule is gated, beta (B, T, Hkv) or (B, T, 1) exactly when it is a
 * delta rule; output (B, T, Hq * d_v), present_state (B, Hkv, d_k, d_v). */
xf_status xf_infer_linear_attention(xf_infer_ctx *c)
{
    const xf_node *n = c->node;
    const xf_attn_attrs *a = &n->attrs.attn;
    const xf_shape *q = xf_infer_shape(c, 0), *k = xf_infer_shape(c, 1), *v = xf_infer_shape(c, 2);
    int64_t nq = a->num_heads, nkv = a->kv_num_heads;
    if (a->linear_rule < XF_LINEAR_PLAIN || a->linear_rule > XF_LINEAR_GATED_DELTA)
        return xf_infer_fail(c, XF_ERR_INVALID, "update_rule %d is not one of the four", a->linear_rule);
    if (nkv < 1 || nq < 1 || nq > STATE_LIMIT || nkv > STATE_LIMIT || nq % nkv)
        return xf_infer_fail(c, XF_ERR_INVALID, "q_num_heads %" PRId64 " is not a positive multiple of "
                             "kv_num_heads %" PRId64, nq, nkv);
    if (q->ndim != 3 || k->ndim != 3 || v->ndim != 3)
        return xf_infer_fail(c, XF_ERR_INVALID, "query %s, key %s and value %s must be 3-D (B, T, heads * size)",
                             xf_infer_text(q).s, xf_infer_text(k).s, xf_infer_text(v).s);
    int64_t b = q->dims[0], t = q->dims[1], dk = q->dims[2] / nq, dv = v->dims[2] / nkv;
    if (q->dims[2] % nq || v->dims[2] % nkv || k->dims[2] != nkv * dk || k->dims[0] != b || v->dims[0] != b ||
        k->dims[1] != t || v->dims[1] != t)
        return xf_infer_fail(c, XF_ERR_INVALID, "query %s, key %s and value %s do not split into %" PRId64
                             " and %" PRId64 " heads of one batch and sequence",
                             xf_infer_text(q).s, xf_infer_text(k).s, xf_infer_text(v).s, nq, nkv);
    int64_t state[4] = {b, nkv, dk, dv}, out[3] = {b, t, nq * dv};
    if (dv > INT64_MAX / nq || !product_fits(4, state) || !product_fits(3, out))
        return xf_infer_fail(c, XF_ERR_INVALID, "a state of (%" PRId64 ", %" PRId64 ", %" PRId64 ", %" PRId64
                             ") or an output of %" PRId64 " query heads is too large", b, nkv, dk, dv, nq);
    bool gated = a->linear_rule & XF_LINEAR_GATED, delta = a->linear_rule & XF_LINEAR_DELTA;
    bool has_decay = n->n_inputs > 4 && xf_infer_has(c, 4), has_beta = n->n_inputs > 5 && xf_infer_has(c, 5);
    static const char *const rules[4] = {"linear", "gated", "delta", "gated_delta"};
    if (gated != has_decay || delta != has_beta)
        return xf_infer_fail(c, XF_ERR_INVALID, "update_rule %s %s decay and %s beta", rules[a->linear_rule],
                             gated ? "needs" : "takes no", delta ? "needs" : "takes no");
    xf_status st = n->n_inputs > 3 ? xf_infer_want_shape(c, 3, "past_state", 4, state) : XF_OK;
    if (st == XF_OK && has_decay) {
        const xf_shape *d = xf_infer_shape(c, 4);
        int64_t last = d->ndim == 3 ? d->dims[2] : -1;
        if (d->ndim != 3 || d->dims[0] != b || d->dims[1] != t || (last != nkv && last != nkv * dk))
            st = xf_infer_fail(c, XF_ERR_INVALID, "decay %s is neither (%" PRId64 ", %" PRId64 ", %" PRId64
                               ") nor (%" PRId64 ", %" PRId64 ", %" PRId64 ")",
                               xf_infer_text(d).s, b, t, nkv, b, t, nkv * dk);
    }
    if (st == XF_OK && has_beta) {
        const xf_shape *e = xf_infer_shape(c, 5);
        int64_t last = e->ndim == 3 ? e->dims[2] : -1;
        if (e->ndim != 3 || e->dims[0] != b || e->dims[1] != t || (last != nkv && last != 1))
            st = xf_infer_fail(c, XF_ERR_INVALID, "beta %s is neither (%" PRId64 ", %" PRId64 ", %" PRId64
                               ") nor (%" PRId64 ", %" PRId64 ", 1)", xf_infer_text(e).s, b, t, nkv, b, t);
    }
    if (st != XF_OK)
        return st;
    xf_infer_set(c, 0, &(xf_shape){.ndim = 3, .dims = {b, t, nq * dv}});
    xf_infer_set(c, 1, &(xf_shape){.ndim = 4, .dims = {b, nkv, dk, dv}});
    return XF_OK;
}
