/* ONNX attributes -> xf_attrs for ONNX Runtime's contrib ops (version 1 of
 * their domain, whatever the model's default-domain opset):
 *
 *   FusedConv       Conv's (attrs_import.c); activation (Relu, Tanh, Sigmoid,
 *                   LeakyRelu, Clip, HardSigmoid: ms_act) activation_params
 *                   (as many as the activation takes: ms_act_params)
 *   FusedGemm       Gemm's; activation (Relu, Tanh, Sigmoid, LeakyRelu,
 *                   HardSigmoid) activation_alpha activation_beta (those the
 *                   activation takes, all of them: ms_act_params)
 *   FusedMatMul     alpha transA transB transBatchA transBatchB
 *   QuickGelu       alpha
 *   SkipLayerNormalization, SkipSimplifiedLayerNormalization  epsilon
 *   SimplifiedLayerNormalization  axis epsilon; stash_type (1 only)
 *   Gelu, FastGelu, BiasGelu, BiasAdd  no attributes
 *   QLinearLeakyRelu  alpha;  QGemm  alpha transA transB
 *   QLinearGlobalAveragePool  channels_last;  QLinearConcat  axis (required)
 *   QLinearSoftmax  opset->ms_opset (required; < 13: softmax_legacy)
 *                   axis (default 1 or -1 by opset)
 *   QuantizeLinear, DequantizeLinear  axis
 *   (QLinearAveragePool's are AveragePool's: attrs_import.c)
 *
 * Anything else (another activation, a parameter the activation does not
 * read, which ONNX Runtime ignores but export could not give back) leaves
 * the node opaque. */
#include "proto_internal.h"

#include <string.h>

static bool refuse(xfp_contrib_seen *s, const char *fmt, const char *name)
{
    return xfp_attr_refuse(s->why, s->why_len, fmt, name);
}

static bool get_float(xfp_contrib_seen *s, const Onnx__AttributeProto *at, float *v)
{
    return xfp_attr_float(at, v, s->why, s->why_len);
}

static bool get_flag(xfp_contrib_seen *s, const Onnx__AttributeProto *at, int *v)
{
    return xfp_attr_int32(at, 0, 1, v, s->why, s->why_len);
}

static bool get_int(xfp_contrib_seen *s, const Onnx__AttributeProto *at, int64_t *v)
{
    return xfp_attr_int(at, INT64_MIN, INT64_MAX, v, s->why, s->why_len);
}

static bool get_activation(xfp_contrib_seen *s, const Onnx__AttributeProto *at, int *act)
{
    if (!at->has_type || at->type != ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING)
        return refuse(s, "attribute '%s' is not a string", at->name);
    for (int i = 1; i < XF_MS_ACT_COUNT; i++)
        if (strlen(xf_ms_act_names[i]) == at->s.len && memcmp(xf_ms_act_names[i], at->s.data, at->s.len) == 0) {
            *act = i;
            return true;
        }
    return refuse(s, "attribute '%s' names an activation xflow does not model", at->name);
}

int xfp_contrib_attr(xf_op op, const Onnx__AttributeProto *at, xf_attrs *a, xfp_contrib_seen *s)
{
    const char *name = at->name;
#define A(x) (strcmp(name, x) == 0)
    switch (op) {
    case XF_OP_MS_FUSED_CONV:
    case XF_OP_MS_FUSED_GEMM:
        if (A("activation"))
            return get_activation(s, at, &a->ms_act);
        if (op == XF_OP_MS_FUSED_CONV && A("activation_params")) {
            if (!at->has_type || at->type != ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS || at->n_floats > 2)
                return refuse(s, "attribute '%s' is not a list of at most 2 floats", name);
            for (size_t i = 0; i < at->n_floats; i++)
                a->ms_act_params[i] = at->floats[i];
            s->n_params = (int)at->n_floats;
            return true;
        }
        if (op == XF_OP_MS_FUSED_GEMM && (A("activation_alpha") || A("activation_beta"))) {
            int i = A("activation_beta");
            s->given[i] = true;
            return get_float(s, at, &a->ms_act_params[i]);
        }
        return -1;
    case XF_OP_MS_FUSED_MATMUL:
        if (A("alpha"))
            return get_float(s, at, &a->alpha);
        if (A("transA"))
            return get_flag(s, at, &a->trans_a);
        if (A("transB"))
            return get_flag(s, at, &a->trans_b);
        if (A("transBatchA"))
            return get_flag(s, at, &a->trans_batch_a);
        if (A("transBatchB"))
            return get_flag(s, at, &a->trans_batch_b);
        return refuse(s, "attribute '%s' is not modelled", name);
    case XF_OP_MS_QUICK_GELU:
        if (A("alpha"))
            return get_float(s, at, &a->alpha);
        return refuse(s, "attribute '%s' is not modelled", name);
    case XF_OP_MS_SKIP_LAYER_NORM:
    case XF_OP_MS_SKIP_SIMPLIFIED_LAYER_NORM:
        if (A("epsilon"))
            return get_float(s, at, &a->epsilon);
        return refuse(s, "attribute '%s' is not modelled", name);
    case XF_OP_SIMPLIFIED_LAYER_NORM:
        if (A("epsilon"))
            return get_float(s, at, &a->epsilon);
        if (A("axis")) {
            if (!at->has_type || at->type != ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT)
                return refuse(s, "attribute '%s' is not an int", name);
            a->axis = at->i;
            return true;
        }
        if (A("stash_type")) {
            if (!at->has_type || at->type != ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT || at->i != 1)
                return refuse(s, "attribute '%s' has a value xflow does not model", name);
            return true;
        }
        return refuse(s, "attribute '%s' is not modelled", name);
    case XF_OP_MS_QLINEAR_LEAKY_RELU:
    case XF_OP_MS_QGEMM:
        if (A("alpha"))
            return get_float(s, at, &a->alpha);
        if (op == XF_OP_MS_QGEMM && A("transA"))
            return get_flag(s, at, &a->trans_a);
        if (op == XF_OP_MS_QGEMM && A("transB"))
            return get_flag(s, at, &a->trans_b);
        return refuse(s, "attribute '%s' is not modelled", name);
    case XF_OP_MS_QLINEAR_GLOBAL_AVERAGE_POOL:
        if (A("channels_last"))
            return get_flag(s, at, &a->channels_last);
        return refuse(s, "attribute '%s' is not modelled", name);
    case XF_OP_MS_QLINEAR_CONCAT:
    case XF_OP_MS_QLINEAR_SOFTMAX:
    case XF_OP_MS_QUANTIZE_LINEAR:
    case XF_OP_MS_DEQUANTIZE_LINEAR:
        if (A("axis"))
            return (s->has_axis = get_int(s, at, &a->axis));
        if (op == XF_OP_MS_QLINEAR_SOFTMAX && A("opset"))
            return (s->has_opset = get_int(s, at, &a->ms_opset));
        return refuse(s, "attribute '%s' is not modelled", name);
    default:
        return -1;
    }
#undef A
}

bool xfp_contrib_finish(xf_op op, xf_attrs *a, xfp_contrib_seen *s)
{
    if (op == XF_OP_MS_QLINEAR_CONCAT && !s->has_axis)
        return refuse(s, "no axis attribute", NULL);
    if (op == XF_OP_MS_QLINEAR_SOFTMAX) {
        if (!s->has_opset)
            return refuse(s, "no opset attribute", NULL);
        a->softmax_legacy = a->ms_opset < 13;
        if (!s->has_axis)
            a->axis = a->softmax_legacy ? 1 : -1;
    }
    int want = a->ms_act > 0 && a->ms_act < XF_MS_ACT_COUNT ? xf_ms_act_n_params[a->ms_act] : 0;
    if (op == XF_OP_MS_FUSED_CONV && s->n_params != want)
        return refuse(s, "activation_params do not match the activation", NULL);
    if (op == XF_OP_MS_FUSED_GEMM) {
        if (a->ms_act == XF_MS_ACT_CLIP)
            return refuse(s, "FusedGemm's Clip activation is not modelled", NULL);
        if (s->given[0] != (want > 0) || s->given[1] != (want > 1))
            return refuse(s, "activation_alpha/activation_beta do not match the activation", NULL);
    }
    return true;
}
