/* ONNX attributes -> xf_attrs for opset 27's recurrent ops:
 *
 *   CausalConvWithState  activation ("none", "silu" or "swish") -> attn.conv_silu
 *   LinearAttention      q_num_heads kv_num_heads (required, 1 to 2^31 - 1)
 *                        -> attn.num_heads, attn.kv_num_heads;
 *                        update_rule ("linear", "gated", "delta",
 *                        "gated_delta") -> attn.linear_rule; scale ->
 *                        attn.scale; chunk_size -> attn.chunk_size
 *
 * Anything else, or either op in a model before opset 27, keeps the node
 * opaque. */
#include "proto_internal.h"

#include <string.h>

bool xfp_state_attr_import(xf_op op, const Onnx__AttributeProto *at, xf_attrs *a, char *why, size_t why_len)
{
    xf_attn_attrs *t = &a->attn;
    const char *name = at->name;
#define A(s) (strcmp(name, s) == 0)
    if (op == XF_OP_CAUSAL_CONV_WITH_STATE && A("activation")) {
        static const char *const acts[] = {"none", "silu", "swish"};
        int which;
        if (!xfp_attr_enum(at, acts, 3, &which, why, why_len))
            return false;
        t->conv_silu = which != 0;
        return true;
    }
    if (op == XF_OP_LINEAR_ATTENTION) {
        static const char *const rules[] = {"linear", "gated", "delta", "gated_delta"};
        if (A("q_num_heads"))
            return xfp_attr_int(at, 1, INT32_MAX, &t->num_heads, why, why_len);
        if (A("kv_num_heads"))
            return xfp_attr_int(at, 1, INT32_MAX, &t->kv_num_heads, why, why_len);
        if (A("update_rule"))
            return xfp_attr_enum(at, rules, 4, &t->linear_rule, why, why_len);
        if (A("scale"))
            return xfp_attr_float(at, &t->scale, why, why_len);
        if (A("chunk_size"))
            return xfp_attr_int(at, INT64_MIN, INT64_MAX, &t->chunk_size, why, why_len);
    }
#undef A
    return xfp_attr_refuse(why, why_len, "attribute '%s' is not modelled", name);
}

bool xfp_state_attrs_finish(xf_op op, int64_t opset, const xf_attrs *a, char *why, size_t why_len)
{
    if (opset < 27)
        return xfp_attr_refuse(why, why_len, "the op before its opset (27)", NULL);
    if (op == XF_OP_LINEAR_ATTENTION && (a->attn.num_heads < 1 || a->attn.kv_num_heads < 1))
        return xfp_attr_refuse(why, why_len, "no q_num_heads or kv_num_heads attribute", NULL);
    return true;
}
