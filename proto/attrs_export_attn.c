/* xf_attrs -> ONNX attributes for the attention family, as attrs_export.c
 * writes every other op: what differs from the defaults, what ONNX
 * requires, and an error naming the node where the model's opset cannot
 * express the op. */
#include "attrs_writer.h"

/* ONNX Runtime's attention family: what differs from the defaults, and
 * num_heads where it is required. */
void xfp_write_attn(writer *w, const xf_node *n, const xf_attrs *d)
{
    const xf_attn_attrs *t = &n->attrs.attn, *dt = &d->attn;
    if (t->num_heads != dt->num_heads)
        add_int(w, "num_heads", t->num_heads);
    if (t->unidirectional != dt->unidirectional)
        add_int(w, "unidirectional", t->unidirectional);
    if (t->n_qkv_sizes == 3)
        add_ints(w, "qkv_hidden_sizes", t->qkv_sizes, 3);
    if (t->mask_filter_value != dt->mask_filter_value)
        add_float(w, "mask_filter_value", t->mask_filter_value);
    if (t->scale != dt->scale)
        add_float(w, "scale", t->scale);
    if (t->interleaved != dt->interleaved)
        add_int(w, "interleaved", t->interleaved);
    if (t->rotary_dim != dt->rotary_dim)
        add_int(w, "rotary_embedding_dim", t->rotary_dim);
    if (n->op == XF_OP_MS_EMBED_LAYER_NORM && n->attrs.epsilon != d->epsilon)
        add_float(w, "epsilon", n->attrs.epsilon);
    if (t->mask_index_type != dt->mask_index_type)
        add_int(w, "mask_index_type", t->mask_index_type);
}

/* ONNX's Attention, RMSNormalization and RotaryEmbedding, which opset 23
 * brought (opset 24 Attention's nonpad_kv_seqlen, opset 25 its windows). */
xf_status xfp_write_opset23(writer *w, const xf_node *n, const xf_attrs *d, int64_t opset, xf_error *err)
{
    const xf_attn_attrs *t = &n->attrs.attn;
    bool nonpad = n->op == XF_OP_ATTENTION && n->n_inputs > 6 && n->inputs[6] >= 0;
    bool window = n->op == XF_OP_ATTENTION && (t->left_window >= 0 || t->right_window >= 0);
    int need = window ? 25 : nonpad ? 24 : 23;
    if (opset < need)
        return xf_error_set(err, XF_ERR_UNSUPPORTED, "node '%s' (%s%s) needs opset %d; the model is written at %lld",
                            n->name ? n->name : "", xf_op_name(n->op),
                            window ? " with a window" : nonpad ? " with nonpad_kv_seqlen" : "", need, (long long)opset);
    if (n->op == XF_OP_RMS_NORM) {
        if (n->attrs.axis != d->axis)
            add_int(w, "axis", n->attrs.axis);
        if (n->attrs.epsilon != d->epsilon)
            add_float(w, "epsilon", n->attrs.epsilon);
        return XF_OK;
    }
    if (n->op == XF_OP_ROTARY_EMB) {
        if (t->interleaved)
            add_int(w, "interleaved", t->interleaved);
        if (t->rotary_dim)
            add_int(w, "rotary_embedding_dim", t->rotary_dim);
        if (t->num_heads)
            add_int(w, "num_heads", t->num_heads);
        return XF_OK;
    }
    if (t->unidirectional)
        add_int(w, "is_causal", t->unidirectional);
    if (t->num_heads)
        add_int(w, "q_num_heads", t->num_heads);
    if (t->kv_num_heads)
        add_int(w, "kv_num_heads", t->kv_num_heads);
    if (t->qk_mode)
        add_int(w, "qk_matmul_output_mode", t->qk_mode);
    if (t->scale != 0.0f)
        add_float(w, "scale", t->scale);
    if (t->softcap != 0.0f)
        add_float(w, "softcap", t->softcap);
    if (t->softmax_precision)
        add_int(w, "softmax_precision", t->softmax_precision);
    if (t->left_window >= 0)
        add_int(w, "left_window_size", t->left_window);
    if (t->right_window >= 0)
        add_int(w, "right_window_size", t->right_window);
    return XF_OK;
}

/* CausalConvWithState and LinearAttention (opset 27); LinearAttention's
 * head counts are required. */
xf_status xfp_write_state(writer *w, const xf_node *n, const xf_attrs *d, int64_t opset, xf_error *err)
{
    const xf_attn_attrs *t = &n->attrs.attn;
    if (opset < 27)
        return xf_error_set(err, XF_ERR_UNSUPPORTED, "node '%s' (%s) needs opset 27; the model is written at %lld",
                            n->name ? n->name : "", xf_op_name(n->op), (long long)opset);
    if (n->op == XF_OP_CAUSAL_CONV_WITH_STATE) {
        if (t->conv_silu)
            add_string(w, "activation", "silu");
        return XF_OK;
    }
    static const char *const rules[4] = {"linear", "gated", "delta", "gated_delta"};
    add_int(w, "q_num_heads", t->num_heads);
    add_int(w, "kv_num_heads", t->kv_num_heads);
    if (t->linear_rule != d->attn.linear_rule && t->linear_rule >= 0 && t->linear_rule < 4)
        add_string(w, "update_rule", rules[t->linear_rule]);
    if (t->scale != 0.0f)
        add_float(w, "scale", t->scale);
    if (t->chunk_size != d->attn.chunk_size)
        add_int(w, "chunk_size", t->chunk_size);
    return XF_OK;
}

/* MatMulNBits, GroupQueryAttention and GatherBlockQuantized: the required
 * attributes (all of GatherBlockQuantized's) always */
void xfp_write_llm(writer *w, const xf_node *n, const xf_attrs *d)
{
    const xf_attn_attrs *t = &n->attrs.attn, *dt = &d->attn;
    if (n->op == XF_OP_MS_GATHER_BLOCK_QUANTIZED) {
        add_int(w, "gather_axis", 0);
        add_int(w, "quantize_axis", n->attrs.axis);
        add_int(w, "block_size", t->nb_block);
        add_int(w, "bits", t->nb_bits);
        return;
    }
    if (n->op == XF_OP_MS_MATMUL_NBITS) {
        add_int(w, "K", t->nb_k);
        add_int(w, "N", t->nb_n);
        add_int(w, "bits", t->nb_bits);
        add_int(w, "block_size", t->nb_block);
        if (t->nb_accuracy != dt->nb_accuracy)
            add_int(w, "accuracy_level", t->nb_accuracy);
        return;
    }
    add_int(w, "num_heads", t->num_heads);
    add_int(w, "kv_num_heads", t->kv_num_heads);
    if (t->scale != dt->scale)
        add_float(w, "scale", t->scale);
    if (t->softcap != dt->softcap)
        add_float(w, "softcap", t->softcap);
    if (t->local_window_size != dt->local_window_size)
        add_int(w, "local_window_size", t->local_window_size);
    if (t->do_rotary != dt->do_rotary)
        add_int(w, "do_rotary", t->do_rotary);
    if (t->interleaved != dt->interleaved)
        add_int(w, "rotary_interleaved", t->interleaved);
    if (t->smooth_softmax != dt->smooth_softmax)
        add_int(w, "smooth_softmax", t->smooth_softmax);
}
