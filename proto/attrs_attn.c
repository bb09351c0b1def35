/* ONNX attributes -> xf_attrs for ONNX Runtime's attention family
 * (com.microsoft, version 1; nothing here depends on the model's default
 * opset).
 *
 *   Attention       num_heads (required)  unidirectional  qkv_hidden_sizes (3
 *                   positive sizes, Q's and K's equal)  mask_filter_value  scale;
 *                   past_present_share_buffer, do_rotary and
 *                   rotary_embedding_dim 0 only
 *   MultiHeadAttention  num_heads (required)  unidirectional  mask_filter_value  scale
 *   EmbedLayerNormalization  epsilon  mask_index_type (0 or 1)
 *   RotaryEmbedding interleaved (0 or 1)  rotary_embedding_dim (even; needs
 *                   num_heads)  num_heads  scale; is_packed_batching 0 only
 *
 * Anything else keeps the node opaque.  ONNX's ops of opset 23 (default
 * domain) come after them. */
#include "proto_internal.h"

#include <string.h>

static bool get_qkv_sizes(const Onnx__AttributeProto *at, xf_attn_attrs *t, char *why, size_t why_len)
{
    if (!at->has_type || at->type != ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS || at->n_ints != 3)
        return xfp_attr_refuse(why, why_len, "attribute '%s' is not a list of 3 ints", at->name);
    for (int i = 0; i < 3; i++)
        if (at->ints[i] < 1 || at->ints[i] > INT32_MAX)
            return xfp_attr_refuse(why, why_len, "attribute '%s' has a size xflow does not model", at->name);
    if (at->ints[0] != at->ints[1])
        return xfp_attr_refuse(why, why_len, "attribute '%s' gives Q and K different sizes", at->name);
    memcpy(t->qkv_sizes, at->ints, sizeof t->qkv_sizes);
    t->n_qkv_sizes = 3;
    return true;
}

bool xfp_attn_attr_import(xf_op op, const Onnx__AttributeProto *at, xf_attrs *a, char *why, size_t why_len)
{
    xf_attn_attrs *t = &a->attn;
    const char *name = at->name;
    bool attention = op == XF_OP_MS_ATTENTION || op == XF_OP_MS_QATTENTION, mha = op == XF_OP_MS_MHA;
    bool rotary = op == XF_OP_MS_ROTARY_EMB;
    int64_t x;
#define A(s) (strcmp(name, s) == 0)
    if ((attention || mha || rotary) && A("num_heads"))
        return xfp_attr_int(at, 1, INT32_MAX, &t->num_heads, why, why_len);
    if ((attention || mha) && A("unidirectional"))
        return xfp_attr_int32(at, 0, 1, &t->unidirectional, why, why_len);
    if ((attention || mha) && A("mask_filter_value"))
        return xfp_attr_float(at, &t->mask_filter_value, why, why_len);
    if ((attention || mha || rotary) && A("scale"))
        return xfp_attr_float(at, &t->scale, why, why_len);
    if (op == XF_OP_MS_ATTENTION && A("qkv_hidden_sizes"))
        return get_qkv_sizes(at, t, why, why_len);
    if (attention && (A("past_present_share_buffer") || A("do_rotary") || A("rotary_embedding_dim")))
        return xfp_attr_int(at, 0, 0, &x, why, why_len);
    if (op == XF_OP_MS_EMBED_LAYER_NORM && A("epsilon"))
        return xfp_attr_float(at, &a->epsilon, why, why_len);
    if (op == XF_OP_MS_EMBED_LAYER_NORM && A("mask_index_type"))
        return xfp_attr_int32(at, 0, 1, &t->mask_index_type, why, why_len);
    if (rotary && A("interleaved"))
        return xfp_attr_int32(at, 0, 1, &t->interleaved, why, why_len);
    if (rotary && A("rotary_embedding_dim"))
        return xfp_attr_int(at, 0, INT32_MAX, &t->rotary_dim, why, why_len);
    if (rotary && A("is_packed_batching"))
        return xfp_attr_int(at, 0, 0, &x, why, why_len);
#undef A
    return xfp_attr_refuse(why, why_len, "attribute '%s' is not modelled", name);
}

bool xfp_attn_attrs_finish(xf_op op, const xf_attrs *a, char *why, size_t why_len)
{
    const xf_attn_attrs *t = &a->attn;
    if ((op == XF_OP_MS_ATTENTION || op == XF_OP_MS_QATTENTION || op == XF_OP_MS_MHA) && t->num_heads < 1)
        return xfp_attr_refuse(why, why_len, "no num_heads attribute%s", "");
    if (op == XF_OP_MS_ROTARY_EMB && t->rotary_dim > 0 && (t->num_heads < 1 || t->rotary_dim % 2))
        return xfp_attr_refuse(why, why_len, "rotary_embedding_dim is odd or comes without num_heads%s", "");
    return true;
}

/* ONNX's opset 23 ops for transformers (model_import.c keeps them opaque
 * before opset 23, and Attention's nonpad_kv_seqlen before 24):
 *
 *   Attention         is_causal (0 or 1)  q_num_heads  kv_num_heads (1 or
 *                     more)  qk_matmul_output_mode (0 to 3)  scale (not 0)
 *                     softcap (0 or more)  softmax_precision (float or double);
 *                     from opset 25 left_window_size right_window_size (-1 or more)
 *   RMSNormalization  axis  epsilon; stash_type 1 only
 *   RotaryEmbedding   interleaved (0 or 1)  rotary_embedding_dim  num_heads
 *
 * Anything else keeps the node opaque. */
bool xfp_opset23_attr_import(xf_op op, const Onnx__AttributeProto *at, int64_t opset, xf_attrs *a, char *why,
                             size_t why_len)
{
    xf_attn_attrs *t = &a->attn;
    const char *name = at->name;
    int64_t x;
#define A(s) (strcmp(name, s) == 0)
    if (op == XF_OP_ATTENTION) {
        if (A("is_causal"))
            return xfp_attr_int32(at, 0, 1, &t->unidirectional, why, why_len);
        if (A("q_num_heads"))
            return xfp_attr_int(at, 1, INT32_MAX, &t->num_heads, why, why_len);
        if (A("kv_num_heads"))
            return xfp_attr_int(at, 1, INT32_MAX, &t->kv_num_heads, why, why_len);
        if (A("qk_matmul_output_mode"))
            return xfp_attr_int32(at, 0, 3, &t->qk_mode, why, why_len);
        if (A("scale"))
            return xfp_attr_float(at, &t->scale, why, why_len) &&
                   (t->scale != 0.0f || xfp_attr_refuse(why, why_len, "attribute '%s' is 0", name));
        if (A("softcap"))
            return xfp_attr_float(at, &t->softcap, why, why_len) &&
                   (t->softcap >= 0.0f || xfp_attr_refuse(why, why_len, "attribute '%s' is negative", name));
        if (opset >= 25 && (A("left_window_size") || A("right_window_size")))
            return xfp_attr_int(at, -1, INT32_MAX, A("left_window_size") ? &t->left_window : &t->right_window, why,
                                why_len);
        if (A("softmax_precision")) {
            if (!xfp_attr_int(at, XF_DT_FLOAT, XF_DT_DOUBLE, &x, why, why_len))
                return false;
            t->softmax_precision = (xf_dtype)x;
            return x == XF_DT_FLOAT || x == XF_DT_DOUBLE ||
                   xfp_attr_refuse(why, why_len, "attribute '%s' is neither float nor double", name);
        }
    } else if (op == XF_OP_RMS_NORM) {
        if (A("axis"))
            return xfp_attr_int(at, INT64_MIN, INT64_MAX, &a->axis, why, why_len);
        if (A("epsilon"))
            return xfp_attr_float(at, &a->epsilon, why, why_len);
        if (A("stash_type"))
            return xfp_attr_int(at, 1, 1, &x, why, why_len);
    } else {
        if (A("interleaved"))
            return xfp_attr_int32(at, 0, 1, &t->interleaved, why, why_len);
        if (A("rotary_embedding_dim"))
            return xfp_attr_int(at, 0, INT32_MAX, &t->rotary_dim, why, why_len);
        if (A("num_heads"))
            return xfp_attr_int(at, 0, INT32_MAX, &t->num_heads, why, why_len);
    }
#undef A
    return xfp_attr_refuse(why, why_len, "attribute '%s' is not modelled", name);
}

/* The com.microsoft ops of int4 LLM exports:
 *
 *   MatMulNBits          K, N, block_size (required; block_size a power of 2,
 *                        16 or more)  bits (4 or 8)  accuracy_level (0 to 4);
 *                        weight_prepacked 0 only
 *   GroupQueryAttention  num_heads, kv_num_heads (required; num_heads a
 *                        multiple of kv_num_heads)  scale  softcap (>= 0)
 *                        local_window_size (-1 or more)  do_rotary
 *                        rotary_interleaved  smooth_softmax (0 or 1);
 *                        qk_output 0 only
 *   GatherBlockQuantized gather_axis 0 only  quantize_axis (not 0; the last
 *                        axis, which shape inference checks)  block_size
 *                        bits (as MatMulNBits')
 *
 * Anything else keeps the node opaque. */
bool xfp_llm_attr_import(xf_op op, const Onnx__AttributeProto *at, xf_attrs *a, char *why, size_t why_len)
{
    xf_attn_attrs *t = &a->attn;
    const char *name = at->name;
    int64_t x;
#define A(s) (strcmp(name, s) == 0)
    if (op == XF_OP_MS_GATHER_BLOCK_QUANTIZED) {
        if (A("gather_axis"))
            return xfp_attr_int(at, 0, 0, &x, why, why_len);
        if (A("quantize_axis"))
            return xfp_attr_int(at, -1, XF_MAX_DIMS - 1, &a->axis, why, why_len) &&
                   (a->axis != 0 || xfp_attr_refuse(why, why_len, "attribute '%s' names the gathered axis", name));
    }
    if (op == XF_OP_MS_MATMUL_NBITS || op == XF_OP_MS_GATHER_BLOCK_QUANTIZED) {
        if (op == XF_OP_MS_MATMUL_NBITS && A("K"))
            return xfp_attr_int(at, 1, INT32_MAX, &t->nb_k, why, why_len);
        if (op == XF_OP_MS_MATMUL_NBITS && A("N"))
            return xfp_attr_int(at, 1, INT32_MAX, &t->nb_n, why, why_len);
        if (A("block_size"))
            return xfp_attr_int(at, 16, 1 << 20, &t->nb_block, why, why_len) &&
                   ((t->nb_block & (t->nb_block - 1)) == 0 ||
                    xfp_attr_refuse(why, why_len, "attribute '%s' is not a power of 2", name));
        if (A("bits"))
            return xfp_attr_int(at, 4, 8, &t->nb_bits, why, why_len) &&
                   (t->nb_bits == 4 || t->nb_bits == 8 || xfp_attr_refuse(why, why_len, "%s other than 4 or 8", name));
        if (op == XF_OP_MS_MATMUL_NBITS && A("accuracy_level"))
            return xfp_attr_int(at, 0, 4, &t->nb_accuracy, why, why_len);
        if (op == XF_OP_MS_MATMUL_NBITS && A("weight_prepacked"))
            return xfp_attr_int(at, 0, 0, &x, why, why_len);
    } else {
        if (A("num_heads"))
            return xfp_attr_int(at, 1, INT32_MAX, &t->num_heads, why, why_len);
        if (A("kv_num_heads"))
            return xfp_attr_int(at, 1, INT32_MAX, &t->kv_num_heads, why, why_len);
        if (A("scale"))
            return xfp_attr_float(at, &t->scale, why, why_len);
        if (A("softcap"))
            return xfp_attr_float(at, &t->softcap, why, why_len) &&
                   (t->softcap >= 0.0f || xfp_attr_refuse(why, why_len, "attribute '%s' is negative", name));
        if (A("local_window_size"))
            return xfp_attr_int(at, -1, INT32_MAX, &t->local_window_size, why, why_len);
        if (A("do_rotary"))
            return xfp_attr_int32(at, 0, 1, &t->do_rotary, why, why_len);
        if (A("rotary_interleaved"))
            return xfp_attr_int32(at, 0, 1, &t->interleaved, why, why_len);
        if (A("smooth_softmax"))
            return xfp_attr_int32(at, 0, 1, &t->smooth_softmax, why, why_len);
        if (A("qk_output"))
            return xfp_attr_int(at, 0, 0, &x, why, why_len);
    }
#undef A
    return xfp_attr_refuse(why, why_len, "attribute '%s' is not modelled", name);
}

bool xfp_llm_attrs_finish(xf_op op, const xf_attrs *a, char *why, size_t why_len)
{
    const xf_attn_attrs *t = &a->attn;
    if (op == XF_OP_MS_MATMUL_NBITS && (t->nb_k < 1 || t->nb_n < 1 || t->nb_block < 1))
        return xfp_attr_refuse(why, why_len, "K, N or block_size missing%s", "");
    if (op == XF_OP_MS_GQA && (t->num_heads < 1 || t->kv_num_heads < 1 || t->num_heads % t->kv_num_heads))
        return xfp_attr_refuse(why, why_len, "num_heads or kv_num_heads missing, or not a multiple%s", "");
    return true;
}
