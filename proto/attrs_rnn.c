/* ONNX attributes -> xf_attrs for the recurrent ops RNN, LSTM and GRU
 * (opset 7 on):
 *
 *   direction (forward/reverse/bidirectional)  hidden_size  layout  clip
 *   (has_clip)  activations (by ONNX name, in any case, as ONNX Runtime reads
 *   them)  activation_alpha  activation_beta -> rnn.*; LSTM input_forget,
 *   GRU linear_before_reset
 *
 * activation_alpha and activation_beta are handed out once every attribute
 * is read: each activation function takes the next value when it has a
 * parameter of that name, else its default. */
#include "proto_internal.h"

#include <string.h>
#include <strings.h>

static bool read_acts(const Onnx__AttributeProto *at, xf_rnn_attrs *rnn, char *why, size_t why_len)
{
    if (!at->has_type || at->type != ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS)
        return xfp_attr_refuse(why, why_len, "attribute '%s' is not a list of strings", at->name);
    if (at->n_strings > XF_RNN_MAX_ACTS)
        return xfp_attr_refuse(why, why_len, "attribute '%s' has more entries than xflow holds", at->name);
    for (size_t i = 0; i < at->n_strings; i++) {
        const ProtobufCBinaryData *s = &at->strings[i];
        int code = XF_RNN_DEFAULT;
        for (int k = 1; k < XF_RNN_ACT_COUNT && !code; k++)
            if (strlen(xf_rnn_acts[k].name) == s->len &&
                strncasecmp(xf_rnn_acts[k].name, (const char *)s->data, s->len) == 0)
                code = k;
        if (!code)
            return xfp_attr_refuse(why, why_len, "attribute '%s' names a function xflow does not know", at->name);
        rnn->acts[i] = (unsigned char)code;
    }
    rnn->n_acts = (int)at->n_strings;
    return true;
}

static bool read_params(const Onnx__AttributeProto *at, float *out, int *n, char *why, size_t why_len)
{
    return xfp_attr_list(at, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS, at->n_floats, at->floats, sizeof *out,
                         out, XF_RNN_MAX_ACTS, n, why, why_len);
}

bool xfp_rnn_attr_import(xf_op op, const Onnx__AttributeProto *at, xf_rnn_attrs *rnn, xfp_rnn_seen *seen,
                         char *why, size_t why_len)
{
    static const char *const directions[] = {"forward", "reverse", "bidirectional"};
    const char *name = at->name;
#define A(s) (strcmp(name, s) == 0)
    if (A("direction"))
        return xfp_attr_enum(at, directions, 3, &rnn->direction, why, why_len);
    if (A("hidden_size"))
        return xfp_attr_int(at, INT64_MIN, INT64_MAX, &rnn->hidden_size, why, why_len);
    if (A("layout") && op != XF_OP_MS_DYNAMIC_QUANTIZE_LSTM)
        return xfp_attr_int32(at, -INT32_MAX, INT32_MAX, &rnn->layout, why, why_len);
    if (A("clip"))
        return (rnn->has_clip = xfp_attr_float(at, &rnn->clip, why, why_len));
    if (A("activations"))
        return read_acts(at, rnn, why, why_len);
    if (A("activation_alpha"))
        return read_params(at, seen->act_alpha, &seen->n_act_alpha, why, why_len);
    if (A("activation_beta"))
        return read_params(at, seen->act_beta, &seen->n_act_beta, why, why_len);
    if ((op == XF_OP_LSTM || op == XF_OP_MS_DYNAMIC_QUANTIZE_LSTM) && A("input_forget"))
        return xfp_attr_int32(at, -INT32_MAX, INT32_MAX, &rnn->input_forget, why, why_len);
    if (op == XF_OP_GRU && A("linear_before_reset"))
        return xfp_attr_int32(at, -INT32_MAX, INT32_MAX, &rnn->linear_before_reset, why, why_len);
#undef A
    return xfp_attr_refuse(why, why_len, "attribute '%s' is not modelled", name);
}

bool xfp_rnn_attrs_finish(xf_rnn_attrs *rnn, const xfp_rnn_seen *seen, char *why, size_t why_len)
{
    int ia = 0, ib = 0;
    for (int i = 0; i < rnn->n_acts; i++) {
        const xf_rnn_act_info *f = &xf_rnn_acts[rnn->acts[i]];
        rnn->act_alpha[i] = f->takes_alpha && ia < seen->n_act_alpha ? seen->act_alpha[ia++] : f->alpha;
        rnn->act_beta[i] = f->takes_beta && ib < seen->n_act_beta ? seen->act_beta[ib++] : f->beta;
    }
    if (ia < seen->n_act_alpha || ib < seen->n_act_beta)
        return xfp_attr_refuse(why, why_len,
                               "activation_alpha or activation_beta has more values than the activations take", NULL);
    return true;
}
