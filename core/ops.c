/* The operator table, built from ops.def, and default attributes. */
#include "xf_core.h"

#include <math.h>
#include <string.h>

static const xf_op_info op_table[XF_OP_COUNT + 1] = {
#define XF_OP(id, onnx, min_in, max_in, n_out, flags) [XF_OP_##id] = {onnx, min_in, max_in, n_out, flags, ""},
#define XF_OP_MS(id, onnx, min_in, max_in, n_out, flags)                                                  \
    [XF_OP_##id] = {onnx, min_in, max_in, n_out, flags, "com.microsoft"},
#include "ops.def"
#undef XF_OP_MS
#undef XF_OP
    [XF_OP_OPAQUE] = {"<opaque>", 0, 1 << 30, -1, 0, ""},
};

const xf_op_info *xf_op_get_info(xf_op op)
{
    if ((unsigned)op > XF_OP_OPAQUE)
        return &op_table[XF_OP_OPAQUE];
    return &op_table[op];
}

const char *xf_op_name(xf_op op) { return xf_op_get_info(op)->onnx_name; }

const char *xf_op_domain(xf_op op) { return xf_op_get_info(op)->domain; }

xf_op xf_op_lookup(const char *domain, const char *op_type)
{
    if (!op_type)
        return XF_OP_OPAQUE;
    if (!domain || strcmp(domain, "ai.onnx") == 0)
        domain = "";
    for (int i = 0; i < XF_OP_COUNT; i++)
        if (strcmp(op_table[i].onnx_name, op_type) == 0 && strcmp(op_table[i].domain, domain) == 0)
            return (xf_op)i;
    return XF_OP_OPAQUE;
}

xf_op xf_op_from_onnx(const char *op_type) { return xf_op_lookup("", op_type); }

/* ONNX Runtime's defaults: those of the ONNX ops of the same name for
 * LeakyRelu, HardSigmoid and Elu, 0 for the others. */
const xf_rnn_act_info xf_rnn_acts[XF_RNN_ACT_COUNT] = {
    [XF_RNN_RELU] = {"Relu", false, false, 0, 0},
    [XF_RNN_TANH] = {"Tanh", false, false, 0, 0},
    [XF_RNN_SIGMOID] = {"Sigmoid", false, false, 0, 0},
    [XF_RNN_AFFINE] = {"Affine", true, true, 0, 0},
    [XF_RNN_LEAKY_RELU] = {"LeakyRelu", true, false, 0.01f, 0},
    [XF_RNN_THRESHOLDED_RELU] = {"ThresholdedRelu", true, false, 0, 0},
    [XF_RNN_SCALED_TANH] = {"ScaledTanh", true, true, 0, 0},
    [XF_RNN_HARD_SIGMOID] = {"HardSigmoid", true, true, 0.2f, 0.5f},
    [XF_RNN_ELU] = {"Elu", true, false, 1.0f, 0},
    [XF_RNN_SOFTSIGN] = {"Softsign", false, false, 0, 0},
    [XF_RNN_SOFTPLUS] = {"Softplus", false, false, 0, 0},
};

bool xf_rnn_attrs_equal(const xf_rnn_attrs *a, const xf_rnn_attrs *b)
{
    if (a->hidden_size != b->hidden_size || a->direction != b->direction || a->layout != b->layout ||
        a->linear_before_reset != b->linear_before_reset || a->input_forget != b->input_forget ||
        a->has_clip != b->has_clip || (a->has_clip && a->clip != b->clip) || a->n_acts != b->n_acts)
        return false;
    for (int i = 0; i < a->n_acts && i < XF_RNN_MAX_ACTS; i++)
        if (a->acts[i] != b->acts[i] || a->act_alpha[i] != b->act_alpha[i] || a->act_beta[i] != b->act_beta[i])
            return false;
    return true;
}

bool xf_attn_attrs_equal(const xf_attn_attrs *a, const xf_attn_attrs *b)
{
    if (a->n_qkv_sizes != b->n_qkv_sizes)
        return false;
    for (int i = 0; i < a->n_qkv_sizes && i < 3; i++)
        if (a->qkv_sizes[i] != b->qkv_sizes[i])
            return false;
    return a->num_heads == b->num_heads && a->unidirectional == b->unidirectional &&
           a->mask_filter_value == b->mask_filter_value && a->scale == b->scale && a->interleaved == b->interleaved &&
           a->rotary_dim == b->rotary_dim && a->mask_index_type == b->mask_index_type &&
           a->kv_num_heads == b->kv_num_heads && a->local_window_size == b->local_window_size &&
           a->do_rotary == b->do_rotary && a->smooth_softmax == b->smooth_softmax && a->softcap == b->softcap &&
           a->nb_k == b->nb_k && a->nb_n == b->nb_n && a->nb_bits == b->nb_bits && a->nb_block == b->nb_block &&
           a->nb_accuracy == b->nb_accuracy && a->qk_mode == b->qk_mode &&
           a->softmax_precision == b->softmax_precision && a->left_window == b->left_window &&
           a->right_window == b->right_window && a->linear_rule == b->linear_rule &&
           a->chunk_size == b->chunk_size && a->conv_silu == b->conv_silu;
}

bool xf_op_is_random(xf_op op)
{
    return op == XF_OP_RANDOM_NORMAL || op == XF_OP_RANDOM_UNIFORM || op == XF_OP_RANDOM_NORMAL_LIKE ||
           op == XF_OP_RANDOM_UNIFORM_LIKE || op == XF_OP_BERNOULLI || op == XF_OP_MULTINOMIAL;
}

void xf_attrs_default(xf_op op, xf_attrs *a)
{
    memset(a, 0, sizeof *a);
    for (int i = 0; i < XF_MAX_SPATIAL; i++) {
        a->strides[i] = 1;
        a->dilations[i] = 1;
    }
    a->group = 1;
    a->keepdims = 1;
    a->alpha = 1.0f;
    a->beta = 1.0f;
    a->epsilon = 1e-5f;
    a->bn_momentum = 0.9f;
    a->end = INT64_MAX;
    a->clip_min = -3.402823466e+38f;
    a->clip_max = 3.402823466e+38f;
    switch (op) {
    case XF_OP_SOFTMAX:
    case XF_OP_LOG_SOFTMAX:
    case XF_OP_HARDMAX:
    case XF_OP_LAYER_NORM:
    case XF_OP_RMS_NORM:
    case XF_OP_TOP_K:
    case XF_OP_ONE_HOT:
        a->axis = -1;
        break;
    case XF_OP_LP_NORM:
        a->axis = -1;
        a->lp_p = 2;
        break;
    case XF_OP_LP_POOL:
    case XF_OP_GLOBAL_LP_POOL:
        a->lp_p = 2;
        break;
    case XF_OP_MEAN_VARIANCE_NORM:
        a->n_axes = 3;
        a->axes[0] = 0;
        a->axes[1] = 2;
        a->axes[2] = 3;
        break;
    case XF_OP_LRN:
        a->alpha = 1e-4f;
        a->beta = 0.75f;
        a->lrn_bias = 1.0f;
        break;
    case XF_OP_FLATTEN:
    case XF_OP_QUANTIZE_LINEAR:
    case XF_OP_DEQUANTIZE_LINEAR:
        a->axis = 1;
        break;
    case XF_OP_LEAKY_RELU:
        a->alpha = 0.01f;
        break;
    case XF_OP_AFFINE:
        a->beta = 0.0f;
        break;
    case XF_OP_RANDOM_NORMAL:
    case XF_OP_RANDOM_UNIFORM:
    case XF_OP_RANDOM_NORMAL_LIKE:
    case XF_OP_RANDOM_UNIFORM_LIKE:
        a->rand_b = 1.0f;
        break;
    case XF_OP_MULTINOMIAL:
        a->sample_size = 1;
        break;
    case XF_OP_HARD_SIGMOID:
        a->alpha = 0.2f;
        a->beta = 0.5f;
        break;
    case XF_OP_SELU:
        a->alpha = 1.67326319217681884765625f;
        a->beta = 1.05070102214813232421875f;
        break;
    case XF_OP_SHRINK: /* alpha is lambd, beta bias */
        a->alpha = 0.5f;
        a->beta = 0.0f;
        break;
    case XF_OP_RESIZE: /* cubic_coeff_a, extrapolation_value */
        a->alpha = -0.75f;
        a->beta = 0.0f;
        break;
    case XF_OP_UPSAMPLE: /* Resize's asymmetric coordinates, nearest rounding down */
        a->resize_coord = 1;
        a->resize_nearest = 2;
        break;
    case XF_OP_REVERSE_SEQUENCE: /* batch_axis 1, time_axis 0 */
        a->n_axes = 2;
        a->axes[0] = 1;
        a->axes[1] = 0;
        break;
    case XF_OP_DFT:
        a->axis = 1;
        break;
    case XF_OP_TENSOR_SCATTER:
        a->axis = -2;
        break;
    case XF_OP_STFT:
        a->dft_onesided = 1;
        break;
    case XF_OP_ROI_ALIGN:
        a->roi_output_h = a->roi_output_w = 1;
        a->roi_spatial_scale = 1.0f;
        break;
    case XF_OP_MAX_ROI_POOL: /* pooled_shape is required */
        a->roi_spatial_scale = 1.0f;
        break;
    case XF_OP_DEFORM_CONV:
        a->offset_group = 1;
        break;
    case XF_OP_MS_QUICK_GELU:
        a->alpha = 1.702f;
        break;
    case XF_OP_SEQUENCE_EMPTY: /* the element type, dtype */
        a->to = XF_DT_FLOAT;
        break;
    case XF_OP_MS_SKIP_LAYER_NORM: /* ONNX Runtime's schema default */
    case XF_OP_MS_SKIP_SIMPLIFIED_LAYER_NORM:
        a->epsilon = 1e-12f;
        break;
    case XF_OP_SIMPLIFIED_LAYER_NORM:
        a->axis = -1;
        break;
    case XF_OP_MS_ATTENTION:
    case XF_OP_MS_QATTENTION:
    case XF_OP_MS_MHA:
        a->attn.mask_filter_value = -10000.0f;
        break;
    case XF_OP_MS_EMBED_LAYER_NORM:
        a->epsilon = 1e-12f;
        a->attn.mask_index_type = 1;
        break;
    case XF_OP_MS_ROTARY_EMB:
        a->attn.scale = 1.0f;
        break;
    case XF_OP_MS_QLINEAR_LEAKY_RELU:
        a->alpha = 0.01f;
        break;
    case XF_OP_MS_QUANTIZE_LINEAR:
    case XF_OP_MS_DEQUANTIZE_LINEAR:
        a->axis = 1;
        break;
    case XF_OP_MS_QLINEAR_SOFTMAX:
        a->axis = -1;
        a->ms_opset = 13;
        break;
    case XF_OP_MS_GQA:
        a->attn.local_window_size = -1;
        break;
    case XF_OP_ATTENTION:
        a->attn.left_window = a->attn.right_window = -1;
        break;
    case XF_OP_LINEAR_ATTENTION:
        a->attn.linear_rule = XF_LINEAR_GATED_DELTA;
        a->attn.chunk_size = 64;
        break;
    case XF_OP_MS_MATMUL_NBITS:
        a->attn.nb_bits = 4;
        break;
    case XF_OP_MS_GATHER_BLOCK_QUANTIZED: /* quantize_axis in axis */
        a->axis = 1;
        a->attn.nb_bits = 4;
        a->attn.nb_block = 128;
        break;
    default:
        break;
    }
}

const char *const xf_ms_act_names[XF_MS_ACT_COUNT] = {
    [XF_MS_ACT_RELU] = "Relu",           [XF_MS_ACT_TANH] = "Tanh", [XF_MS_ACT_SIGMOID] = "Sigmoid",
    [XF_MS_ACT_LEAKY_RELU] = "LeakyRelu", [XF_MS_ACT_CLIP] = "Clip", [XF_MS_ACT_HARD_SIGMOID] = "HardSigmoid",
};
const int xf_ms_act_n_params[XF_MS_ACT_COUNT] = {
    [XF_MS_ACT_LEAKY_RELU] = 1, [XF_MS_ACT_CLIP] = 2, [XF_MS_ACT_HARD_SIGMOID] = 2};

double xf_ms_act_apply(int act, const float *p, double v)
{
    switch (act) {
    case XF_MS_ACT_RELU: return v < 0 ? 0 : v;
    case XF_MS_ACT_TANH: return tanh(v);
    case XF_MS_ACT_SIGMOID: return 1.0 / (1.0 + exp(-v));
    case XF_MS_ACT_LEAKY_RELU: return v < 0 ? v * p[0] : v;
    case XF_MS_ACT_CLIP: return v < p[0] ? p[0] : v > p[1] ? p[1] : v;
    case XF_MS_ACT_HARD_SIGMOID: {
        double h = p[0] * v + p[1];
        return h < 0 ? 0 : h > 1 ? 1 : h;
    }
    default: return v;
    }
}

bool xf_op_is_reduce(xf_op op)
{
    switch (op) {
    case XF_OP_REDUCE_MEAN:
    case XF_OP_REDUCE_SUM:
    case XF_OP_REDUCE_MAX:
    case XF_OP_REDUCE_MIN:
    case XF_OP_REDUCE_PROD:
    case XF_OP_REDUCE_L1:
    case XF_OP_REDUCE_L2:
    case XF_OP_REDUCE_LOG_SUM:
    case XF_OP_REDUCE_LOG_SUM_EXP:
    case XF_OP_REDUCE_SUM_SQUARE:
        return true;
    default:
        return false;
    }
}
