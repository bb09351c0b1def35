/* xf_attrs -> ONNX attributes: the inverse of attrs_import.c's table.  An
 * attribute is written when it differs from xf_attrs_default (which follows
 * ONNX's defaults), when ONNX requires it, or when leaving it out would lose
 * something the block records (the rank of a Conv's lists, whether Clip or
 * Slice used attributes), so that import gives back the same block. */
#include "attrs_writer.h"
#include "xf_op_plans.h"

#include <stdio.h>
#include <string.h>

static bool differs(const int64_t *v, int n, int64_t dflt)
{
    for (int i = 0; i < n; i++)
        if (v[i] != dflt)
            return true;
    return false;
}

static void write_spatial(writer *w, const xf_node *n, const xf_attrs *d)
{
    static const char *const auto_pad_names[] = {"NOTSET", "VALID", "SAME_UPPER", "SAME_LOWER"};
    const xf_attrs *a = &n->attrs;
    bool conv = n->op == XF_OP_CONV || n->op == XF_OP_CONV_TRANSPOSE || n->op == XF_OP_CONV_INTEGER ||
                n->op == XF_OP_QLINEAR_CONV || n->op == XF_OP_MS_FUSED_CONV || n->op == XF_OP_DEFORM_CONV ||
                n->op == XF_OP_COL2IM;
    int k = a->n_spatial;
    size_t before = w->n;
    if (differs(a->kernel, k, 0) || (!conv && k > 0))
        add_ints(w, "kernel_shape", a->kernel, k);
    if (differs(a->pads, 2 * k, 0))
        add_ints(w, "pads", a->pads, 2 * k);
    if (differs(a->dilations, k, 1))
        add_ints(w, "dilations", a->dilations, k);
    if (differs(a->output_padding, k, 0))
        add_ints(w, "output_padding", a->output_padding, k);
    if (a->has_output_shape)
        add_ints(w, "output_shape", a->output_shape, k);
    /* Strides also carry n_spatial when no other list does. */
    if (differs(a->strides, k, 1) || (k > 0 && w->n == before))
        add_ints(w, "strides", a->strides, k);
    if (a->auto_pad != XF_AUTO_PAD_NOTSET && (unsigned)a->auto_pad < 4)
        add_string(w, "auto_pad", auto_pad_names[a->auto_pad]);
    if (conv && a->group != d->group)
        add_int(w, "group", a->group);
    if (!conv && a->ceil_mode != d->ceil_mode)
        add_int(w, "ceil_mode", a->ceil_mode);
    if ((n->op == XF_OP_AVERAGE_POOL || n->op == XF_OP_MS_QLINEAR_AVERAGE_POOL) &&
        a->count_include_pad != d->count_include_pad)
        add_int(w, "count_include_pad", a->count_include_pad);
    if (n->op == XF_OP_MAX_POOL && a->storage_order != d->storage_order)
        add_int(w, "storage_order", a->storage_order);
}

/* RNN, LSTM and GRU; activation_alpha (beta) lists the values of the functions
 * that take one, in order (attrs_import.c reads them back alike). */
static xf_status write_rnn(writer *w, const xf_node *n, xf_error *err)
{
    static const char *const directions[] = {"forward", "reverse", "bidirectional"};
    const xf_rnn_attrs *r = &n->attrs.rnn;
    if (r->direction && (unsigned)r->direction < 3)
        add_string(w, "direction", directions[r->direction]);
    if (r->hidden_size)
        add_int(w, "hidden_size", r->hidden_size);
    if (r->layout)
        add_int(w, "layout", r->layout);
    if (r->has_clip)
        add_float(w, "clip", r->clip);
    if ((n->op == XF_OP_LSTM || n->op == XF_OP_MS_DYNAMIC_QUANTIZE_LSTM) && r->input_forget)
        add_int(w, "input_forget", r->input_forget);
    if (n->op == XF_OP_GRU && r->linear_before_reset)
        add_int(w, "linear_before_reset", r->linear_before_reset);
    if (r->n_acts <= 0)
        return XF_OK;
    if (r->n_acts > XF_RNN_MAX_ACTS)
        return xf_error_set(err, XF_ERR_INVALID, "%d activation functions; xflow holds at most %d", r->n_acts,
                            XF_RNN_MAX_ACTS);
    Onnx__AttributeProto *at = add(w, "activations", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS);
    ProtobufCBinaryData *names = at ? xfp_alloc(w->arena, sizeof *names * (size_t)r->n_acts) : NULL;
    if (!names) {
        w->oom = true;
        return XF_OK;
    }
    float alpha[XF_RNN_MAX_ACTS], beta[XF_RNN_MAX_ACTS];
    int n_alpha = 0, n_beta = 0;
    for (int i = 0; i < r->n_acts; i++) {
        if (r->acts[i] == XF_RNN_DEFAULT || r->acts[i] >= XF_RNN_ACT_COUNT)
            return xf_error_set(err, XF_ERR_INVALID, "activation function %d is not one ONNX names", r->acts[i]);
        const xf_rnn_act_info *f = &xf_rnn_acts[r->acts[i]];
        names[i] = (ProtobufCBinaryData){strlen(f->name), (uint8_t *)f->name};
        if (f->takes_alpha)
            alpha[n_alpha++] = r->act_alpha[i];
        if (f->takes_beta)
            beta[n_beta++] = r->act_beta[i];
    }
    at->n_strings = (size_t)r->n_acts;
    at->strings = names;
    if (n_alpha)
        add_floats(w, "activation_alpha", alpha, n_alpha);
    if (n_beta)
        add_floats(w, "activation_beta", beta, n_beta);
    return XF_OK;
}

/* Softmax's meaning changed in opset 13 (from "flatten to 2-D at axis" to
 * "along axis"); the two agree when axis is the last one. */
static xf_status write_softmax(writer *w, const xf_node *n, int in_rank, int64_t opset, xf_error *err)
{
    const xf_attrs *a = &n->attrs;
    bool legacy_target = opset < 13;
    int64_t dflt = legacy_target ? 1 : -1;
    int64_t axis = a->axis;
    if (a->softmax_legacy != legacy_target) {
        int64_t norm = axis < 0 && in_rank >= 0 ? axis + in_rank : axis;
        if (in_rank < 0 || norm != in_rank - 1)
            return xf_error_set(err, XF_ERR_UNSUPPORTED,
                                "node '%s' (%s) uses the %s semantics, which opset %lld cannot express", n->name,
                                xf_op_name(n->op), a->softmax_legacy ? "opset < 13" : "opset >= 13",
                                (long long)opset);
        axis = legacy_target ? in_rank - 1 : -1;
    }
    if (axis != dflt)
        add_int(w, "axis", axis);
    return XF_OK;
}

/* RoiAlign; before opset 16 it has no coordinate_transformation_mode and
 * works as output_half_pixel. */
static xf_status write_roi_align(writer *w, const xf_node *n, int64_t opset, xf_error *err)
{
    const xf_attrs *a = &n->attrs;
    if (a->roi_max)
        add_string(w, "mode", "max");
    if (a->roi_output_h != 1)
        add_int(w, "output_height", a->roi_output_h);
    if (a->roi_output_w != 1)
        add_int(w, "output_width", a->roi_output_w);
    if (a->roi_sampling_ratio)
        add_int(w, "sampling_ratio", a->roi_sampling_ratio);
    if (a->roi_spatial_scale != 1.0f)
        add_float(w, "spatial_scale", a->roi_spatial_scale);
    if (opset >= 16 && a->roi_output_half_pixel)
        add_string(w, "coordinate_transformation_mode", "output_half_pixel");
    if (opset < 16 && !a->roi_output_half_pixel)
        return xf_error_set(err, XF_ERR_UNSUPPORTED,
                            "node '%s' (RoiAlign) uses coordinate_transformation_mode half_pixel, which opset %lld "
                            "cannot express (RoiAlign before opset 16 is output_half_pixel)",
                            n->name ? n->name : "", (long long)opset);
    return XF_OK;
}

/* The activations whose parameters are alpha and beta, under their ONNX
 * names (none: the op has no such parameter). */
/* Cast's and CastLike's saturate and round_mode, where not the defaults. */
static void write_cast_modes(writer *w, const xf_attrs *a)
{
    static const char *const round_modes[] = {"up", "down", "nearest"};
    if (a->no_saturate)
        add_int(w, "saturate", 0);
    if (a->round_mode > 0 && a->round_mode < 3)
        add_string(w, "round_mode", round_modes[a->round_mode]);
}

static void write_alpha_beta(writer *w, const xf_node *n, const xf_attrs *d)
{
    const char *alpha = n->op == XF_OP_SHRINK ? "lambd" : "alpha";
    const char *beta = n->op == XF_OP_HARD_SIGMOID ? "beta"
                       : n->op == XF_OP_SELU      ? "gamma"
                       : n->op == XF_OP_SHRINK    ? "bias"
                                                  : NULL;
    if (n->attrs.alpha != d->alpha)
        add_float(w, alpha, n->attrs.alpha);
    if (beta && n->attrs.beta != d->beta)
        add_float(w, beta, n->attrs.beta);
}

/* ArgMax, ArgMin, CumSum and the normalizations of their group (d: the
 * op's defaults); select_last_index came with opset 12. */
static xf_status write_norm(writer *w, const xf_node *n, const xf_attrs *d, int64_t opset, xf_error *err)
{
    const xf_attrs *a = &n->attrs;
    switch (n->op) {
    case XF_OP_ARG_MAX:
    case XF_OP_ARG_MIN:
        if (a->axis != d->axis)
            add_int(w, "axis", a->axis);
        if (a->keepdims != d->keepdims)
            add_int(w, "keepdims", a->keepdims);
        if (a->select_last_index && opset < 12)
            return xf_error_set(err, XF_ERR_UNSUPPORTED,
                                "node '%s' (%s) uses select_last_index, which opset %lld cannot express",
                                n->name ? n->name : "", xf_op_name(n->op), (long long)opset);
        if (a->select_last_index)
            add_int(w, "select_last_index", a->select_last_index);
        break;
    case XF_OP_CUM_SUM:
    case XF_OP_CUM_PROD:
        if (a->cumsum_exclusive)
            add_int(w, "exclusive", a->cumsum_exclusive);
        if (a->cumsum_reverse)
            add_int(w, "reverse", a->cumsum_reverse);
        break;
    case XF_OP_GROUP_NORM:
    case XF_OP_INSTANCE_NORM:
        if (n->op == XF_OP_GROUP_NORM)
            add_int(w, "num_groups", a->group);
        if (a->epsilon != d->epsilon)
            add_float(w, "epsilon", a->epsilon);
        break;
    case XF_OP_MEAN_VARIANCE_NORM:
        if (a->n_axes != d->n_axes || memcmp(a->axes, d->axes, sizeof a->axes[0] * (size_t)a->n_axes) != 0)
            add_ints(w, "axes", a->axes, a->n_axes);
        break;
    case XF_OP_LRN:
        if (a->alpha != d->alpha)
            add_float(w, "alpha", a->alpha);
        if (a->beta != d->beta)
            add_float(w, "beta", a->beta);
        if (a->lrn_bias != d->lrn_bias)
            add_float(w, "bias", a->lrn_bias);
        add_int(w, "size", a->lrn_size);
        break;
    case XF_OP_LP_NORM:
        if (a->axis != d->axis)
            add_int(w, "axis", a->axis);
        if (a->lp_p != d->lp_p)
            add_int(w, "p", a->lp_p);
        break;
    default:
        break;
    }
    return XF_OK;
}

/* Upsample: its mode, and before opset 9 its scales (an input from opset 9). */
static xf_status write_upsample(writer *w, const xf_node *n, int64_t opset, xf_error *err)
{
    const xf_tensor *scales = n->attrs.value;
    if (n->attrs.resize_mode)
        add_string(w, "mode", "linear");
    if ((opset < 9) != (scales != NULL))
        return xf_error_set(err, XF_ERR_UNSUPPORTED,
                            "node '%s' (Upsample) has its scales as %s, which opset %lld has as %s",
                            n->name ? n->name : "", scales ? "an attribute" : "an input", (long long)opset,
                            scales ? "an input" : "an attribute");
    if (scales && (scales->dtype != XF_DT_FLOAT || scales->shape.ndim != 1))
        return xf_error_set(err, XF_ERR_INVALID, "node '%s' (Upsample): its scales are not a list of floats",
                            n->name ? n->name : "");
    if (scales)
        add_floats(w, "scales", scales->data, (int)scales->shape.dims[0]);
    return XF_OK;
}

/* Resize: opset 10's (X, scales) is asymmetric with its own nearest
 * rounding and only a mode; later opsets name every attribute away from
 * its default, antialias, keep_aspect_ratio_policy and axes from 18. */
static xf_status write_resize(writer *w, const xf_node *n, int64_t opset, xf_error *err)
{
    const xf_attrs *a = &n->attrs;
    const char *lacks = NULL;
    bool v18 = a->resize_antialias || a->resize_keep || a->has_axes;
    if (opset < 11 && (a->resize_mode > 1 || a->resize_coord != 1 || (a->resize_mode == 0 && a->resize_nearest != 4) ||
                       a->resize_exclude || v18 || n->n_inputs != 3 || n->inputs[1] >= 0 || a->beta != 0))
        lacks = "opset 10's Resize (X and scales, asymmetric, its own nearest rounding)";
    else if (opset >= 11 && a->resize_mode == 0 && a->resize_nearest == 4)
        lacks = "opset 10's nearest rounding";
    else if (opset < 18 && v18)
        lacks = "antialias, keep_aspect_ratio_policy or axes (opset 18 has them)";
    if (lacks)
        return xf_error_set(err, XF_ERR_UNSUPPORTED, "node '%s' (Resize) has a form opset %lld cannot express: %s",
                            n->name ? n->name : "", (long long)opset, lacks);
    if (a->resize_mode > 0 && a->resize_mode < 3)
        add_string(w, "mode", xfp_resize_modes[a->resize_mode]);
    if (opset < 11)
        return XF_OK;
    if (a->resize_coord > 0 && a->resize_coord < 6)
        add_string(w, "coordinate_transformation_mode", xfp_resize_coords[a->resize_coord]);
    if (a->resize_nearest > 0 && a->resize_nearest < 4)
        add_string(w, "nearest_mode", xfp_resize_nearest[a->resize_nearest]);
    if (a->resize_exclude)
        add_int(w, "exclude_outside", 1);
    if (a->alpha != -0.75f)
        add_float(w, "cubic_coeff_a", a->alpha);
    if (a->beta != 0.0f)
        add_float(w, "extrapolation_value", a->beta);
    if (a->resize_antialias)
        add_int(w, "antialias", 1);
    if (a->resize_keep > 0 && a->resize_keep < 3)
        add_string(w, "keep_aspect_ratio_policy", xfp_resize_keep[a->resize_keep]);
    if (a->has_axes)
        add_ints(w, "axes", a->axes, a->n_axes);
    return XF_OK;
}

/* FusedConv's and FusedGemm's activation (attrs_contrib.c reads it back). */
static void write_ms_act(writer *w, const xf_node *n)
{
    const xf_attrs *a = &n->attrs;
    if (a->ms_act <= 0 || a->ms_act >= XF_MS_ACT_COUNT)
        return;
    add_string(w, "activation", xf_ms_act_names[a->ms_act]);
    int np = xf_ms_act_n_params[a->ms_act];
    if (n->op == XF_OP_MS_FUSED_CONV && np > 0)
        add_floats(w, "activation_params", a->ms_act_params, np);
    if (n->op == XF_OP_MS_FUSED_GEMM && np > 0)
        add_float(w, "activation_alpha", a->ms_act_params[0]);
    if (n->op == XF_OP_MS_FUSED_GEMM && np > 1)
        add_float(w, "activation_beta", a->ms_act_params[1]);
}

/* DFT, STFT, the windows and MelWeightMatrix.  DFT's axis is an attribute before opset
 * 20 and an input (default -2) from opset 20. */
static xf_status write_signal(writer *w, const xf_node *n, int64_t opset, xf_error *err)
{
    const xf_attrs *a = &n->attrs;
    bool axis_input = n->n_inputs > 2 && n->inputs[2] >= 0;
    switch (n->op) {
    case XF_OP_DFT:
        if (a->dft_inverse)
            add_int(w, "inverse", a->dft_inverse);
        if (a->dft_onesided)
            add_int(w, "onesided", a->dft_onesided);
        if (opset < 20 && a->axis != 1)
            add_int(w, "axis", a->axis);
        if ((opset < 20 && axis_input) || (opset >= 20 && !axis_input && a->axis != -2))
            return xf_error_set(err, XF_ERR_UNSUPPORTED,
                                "node '%s' (DFT) takes its axis as %s, which opset %lld cannot express (DFT's "
                                "axis is an attribute before opset 20, an input from 20)",
                                n->name ? n->name : "", axis_input ? "an input" : "an attribute", (long long)opset);
        break;
    case XF_OP_STFT:
        if (!a->dft_onesided)
            add_int(w, "onesided", 0);
        break;
    default: /* the windows, MelWeightMatrix */
        if (a->window_symmetric)
            add_int(w, "periodic", 0);
        if (a->output_dtype)
            add_int(w, "output_datatype", a->output_dtype);
        break;
    }
    return XF_OK;
}

static xf_status write_value_tensor(writer *w, const xf_tensor *t, xf_error *err)
{
    Onnx__AttributeProto *at = add(w, "value", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR);
    if (!at)
        return XF_OK;
    at->t = xfp_alloc(w->arena, sizeof *at->t);
    if (!at->t) {
        w->oom = true;
        return XF_OK;
    }
    return xfp_tensor_encode(t, NULL, w->arena, NULL, at->t, err);
}

xf_status xfp_attrs_export(const xf_node *n, int in_rank, int64_t opset, xfp_arena *arena, Onnx__NodeProto *np,
                           xf_error *err)
{
    writer w = {arena, xfp_alloc(arena, MAX_NODE_ATTRS * sizeof(Onnx__AttributeProto *)), 0, false};
    if (!w.list)
        return xf_error_set(err, XF_ERR_NOMEM, "out of memory");
    const xf_attrs *a = &n->attrs;
    xf_attrs d;
    xf_attrs_default(n->op, &d);
    xf_status s = XF_OK;
    switch (n->op) {
    case XF_OP_CONV:
    case XF_OP_CONV_TRANSPOSE:
    case XF_OP_CONV_INTEGER:
    case XF_OP_QLINEAR_CONV:
    case XF_OP_MAX_POOL:
    case XF_OP_AVERAGE_POOL:
    case XF_OP_MAX_UNPOOL:
    case XF_OP_MS_FUSED_CONV:
        write_spatial(&w, n, &d);
        write_ms_act(&w, n);
        break;
    case XF_OP_MS_FUSED_GEMM:
        write_ms_act(&w, n);
        /* fall through - the rest are Gemm's */
    case XF_OP_GEMM:
        if (a->alpha != d.alpha)
            add_float(&w, "alpha", a->alpha);
        if (a->beta != d.beta)
            add_float(&w, "beta", a->beta);
        if (a->trans_a != d.trans_a)
            add_int(&w, "transA", a->trans_a);
        if (a->trans_b != d.trans_b)
            add_int(&w, "transB", a->trans_b);
        break;
    case XF_OP_LEAKY_RELU:
    case XF_OP_ELU:
    case XF_OP_HARD_SIGMOID:
    case XF_OP_THRESHOLDED_RELU:
    case XF_OP_CELU:
    case XF_OP_SELU:
    case XF_OP_SHRINK:
    case XF_OP_SWISH:
    case XF_OP_SWIGLU:
        write_alpha_beta(&w, n, &d);
        break;
    case XF_OP_IS_INF:
        if (a->isinf_no_neg)
            add_int(&w, "detect_negative", 0);
        if (a->isinf_no_pos)
            add_int(&w, "detect_positive", 0);
        break;
    case XF_OP_GELU:
        if (a->gelu_tanh)
            add_string(&w, "approximate", "tanh");
        break;
    case XF_OP_BIT_SHIFT: /* required */
        add_string(&w, "direction", a->shift_right ? "RIGHT" : "LEFT");
        break;
    case XF_OP_PRELU:
        if (a->prelu_channels != (opset < 7))
            s = xf_error_set(err, XF_ERR_UNSUPPORTED,
                             "node '%s' (PRelu) has a slope %s, which opset %lld cannot express",
                             n->name ? n->name : "", a->prelu_channels ? "per channel" : "broadcasting as numpy does",
                             (long long)opset);
        break;
    case XF_OP_CAST_LIKE:
        write_cast_modes(&w, a);
        break;
    case XF_OP_DROPOUT:
        if (a->rand_has_seed)
            add_int(&w, "seed", (int64_t)a->rand_seed);
        break;
    case XF_OP_RESIZE:
        s = write_resize(&w, n, opset, err);
        break;
    case XF_OP_GATHER_ND:
        if (a->batch_dims)
            add_int(&w, "batch_dims", a->batch_dims);
        break;
    case XF_OP_TOP_K:
        if (a->axis != d.axis)
            add_int(&w, "axis", a->axis);
        if (a->topk_smallest)
            add_int(&w, "largest", 0);
        if (a->topk_unsorted)
            add_int(&w, "sorted", 0);
        break;
    case XF_OP_SCATTER_ELEMENTS:
    case XF_OP_SCATTER_ND: {
        static const char *const reductions[] = {"none", "add", "mul", "max", "min"};
        if (n->op == XF_OP_SCATTER_ELEMENTS && a->axis != d.axis)
            add_int(&w, "axis", a->axis);
        if (a->reduction && (unsigned)a->reduction < 5)
            add_string(&w, "reduction", reductions[a->reduction]);
        break;
    }
    case XF_OP_QUANTIZE_LINEAR:
    case XF_OP_DEQUANTIZE_LINEAR:
        if (a->axis != d.axis)
            add_int(&w, "axis", a->axis);
        if (a->block_size)
            add_int(&w, "block_size", a->block_size);
        if (a->output_dtype)
            add_int(&w, "output_dtype", a->output_dtype);
        if (a->no_saturate)
            add_int(&w, "saturate", 0);
        break;
    case XF_OP_ROI_ALIGN:
        s = write_roi_align(&w, n, opset, err);
        break;
    case XF_OP_GRID_SAMPLE: /* the mode's name under the model's opset */
        if (a->grid_mode > 0 && a->grid_mode < 3)
            add_string(&w, "mode", xfp_grid_modes(opset)[a->grid_mode]);
        if (a->grid_padding > 0 && a->grid_padding < 3)
            add_string(&w, "padding_mode", xfp_grid_paddings[a->grid_padding]);
        if (a->grid_align_corners)
            add_int(&w, "align_corners", a->grid_align_corners);
        break;
    case XF_OP_DFT: case XF_OP_STFT: case XF_OP_HANN_WINDOW: case XF_OP_HAMMING_WINDOW: case XF_OP_BLACKMAN_WINDOW:
    case XF_OP_MEL_WEIGHT_MATRIX:
        s = write_signal(&w, n, opset, err);
        break;
    case XF_OP_LP_POOL: /* dilations and ceil_mode came with opset 18 */
        write_spatial(&w, n, &d);
        if (opset < 18 && (a->ceil_mode || differs(a->dilations, a->n_spatial, 1)))
            s = xf_error_set(err, XF_ERR_UNSUPPORTED, "node '%s' (LpPool) uses dilations or ceil_mode, which opset "
                             "%lld cannot express", n->name ? n->name : "", (long long)opset);
        /* fall through */
    case XF_OP_GLOBAL_LP_POOL:
        if (a->lp_p != d.lp_p)
            add_int(&w, "p", a->lp_p);
        break;
    case XF_OP_COL2IM: /* Conv's lists but kernel_shape (block_shape is an input), no group */
    case XF_OP_DEFORM_CONV:
        write_spatial(&w, n, &d);
        if (a->offset_group > 1)
            add_int(&w, "offset_group", a->offset_group);
        break;
    case XF_OP_CENTER_CROP_PAD:
        if (a->has_axes)
            add_ints(&w, "axes", a->axes, a->n_axes);
        break;
    case XF_OP_AFFINE_GRID:
        if (a->grid_align_corners)
            add_int(&w, "align_corners", a->grid_align_corners);
        break;
    case XF_OP_MAX_ROI_POOL: { /* pooled_shape is required */
        int64_t *pooled = xfp_alloc(arena, 2 * sizeof *pooled);
        if (!pooled)
            return xf_error_set(err, XF_ERR_NOMEM, "out of memory");
        pooled[0] = a->roi_output_h;
        pooled[1] = a->roi_output_w;
        add_ints(&w, "pooled_shape", pooled, 2);
        if (a->roi_spatial_scale != 1.0f)
            add_float(&w, "spatial_scale", a->roi_spatial_scale);
        break;
    }
    case XF_OP_CAUSAL_CONV_WITH_STATE:
    case XF_OP_LINEAR_ATTENTION:
        s = xfp_write_state(&w, n, &d, opset, err);
        break;
    case XF_OP_NON_MAX_SUPPRESSION:
        if (a->center_point_box)
            add_int(&w, "center_point_box", a->center_point_box);
        break;
    case XF_OP_TRILU:
        if (a->trilu_lower)
            add_int(&w, "upper", 0);
        break;
    case XF_OP_DEPTH_TO_SPACE:
    case XF_OP_SPACE_TO_DEPTH: /* blocksize is required; SpaceToDepth's mode came with opset 28 */
        add_int(&w, "blocksize", a->block_size);
        if (a->depth_crd && opset < (n->op == XF_OP_DEPTH_TO_SPACE ? 11 : 28))
            s = xf_error_set(err, XF_ERR_UNSUPPORTED,
                             "node '%s' (%s) uses mode CRD, which opset %lld cannot express (DCR only before opset %d)",
                             n->name ? n->name : "", xf_op_name(n->op), (long long)opset,
                             n->op == XF_OP_DEPTH_TO_SPACE ? 11 : 28);
        else if (a->depth_crd)
            add_string(&w, "mode", "CRD");
        break;
    case XF_OP_EYE_LIKE:
        if (a->eye_k)
            add_int(&w, "k", a->eye_k);
        if (a->to)
            add_int(&w, "dtype", a->to);
        break;
    case XF_OP_SEQUENCE_EMPTY:
        if (a->to != d.to)
            add_int(&w, "dtype", a->to);
        break;
    case XF_OP_OPTIONAL:
        if (a->opt_type)
            add_type(&w, "type", xfp_container_type_encode((xf_value_kind)(a->opt_type - 1), a->to, &a->opt_shape,
                                                           w.arena));
        break;
    case XF_OP_SPLIT_TO_SEQUENCE:
        if (a->axis != d.axis)
            add_int(&w, "axis", a->axis);
        if (a->keepdims != d.keepdims)
            add_int(&w, "keepdims", a->keepdims);
        break;
    case XF_OP_CONCAT_FROM_SEQUENCE:
        add_int(&w, "axis", a->axis);
        if (a->new_axis)
            add_int(&w, "new_axis", a->new_axis);
        break;
    case XF_OP_REVERSE_SEQUENCE:
        if (a->axes[0] != d.axes[0])
            add_int(&w, "batch_axis", a->axes[0]);
        if (a->axes[1] != d.axes[1])
            add_int(&w, "time_axis", a->axes[1]);
        break;
    case XF_OP_ONE_HOT:
        if (a->axis != d.axis)
            add_int(&w, "axis", a->axis);
        if (a->onehot_legacy != (opset < 11))
            s = xf_error_set(err, XF_ERR_UNSUPPORTED,
                             "node '%s' (OneHot) %s negative indices, which opset %lld cannot express",
                             n->name ? n->name : "", a->onehot_legacy ? "takes no" : "counts from the end",
                             (long long)opset);
        break;
    case XF_OP_COMPRESS:
    case XF_OP_UNIQUE:
        if (a->has_axis)
            add_int(&w, "axis", a->axis);
        if (a->topk_unsorted)
            add_int(&w, "sorted", 0);
        break;
    case XF_OP_SCATTER:
        if (a->axis != d.axis)
            add_int(&w, "axis", a->axis);
        break;
    case XF_OP_UPSAMPLE:
        s = write_upsample(&w, n, opset, err);
        break;
    case XF_OP_EINSUM: /* the equation is required */
        if (!xf_einsum_equation(a))
            s = xf_error_set(err, XF_ERR_INVALID, "node '%s' (Einsum) has no equation", n->name ? n->name : "");
        else
            add_string(&w, "equation", xf_einsum_equation(a));
        break;
    case XF_OP_MOD:
        if (a->fmod != d.fmod)
            add_int(&w, "fmod", a->fmod);
        break;
    case XF_OP_CLIP:
        if (a->has_clip_attrs) {
            add_float(&w, "min", a->clip_min);
            add_float(&w, "max", a->clip_max);
        }
        break;
    case XF_OP_CAST:
    case XF_OP_BIT_CAST:
        add_int(&w, "to", a->to);
        if (n->op == XF_OP_CAST)
            write_cast_modes(&w, a);
        break;
    case XF_OP_CONCAT: /* required from opset 4, and its opset-1 default differs */
        add_int(&w, "axis", a->axis);
        break;
    case XF_OP_FLATTEN:
    case XF_OP_GATHER:
    case XF_OP_GATHER_ELEMENTS:
    case XF_OP_TENSOR_SCATTER:
        if (a->axis != d.axis)
            add_int(&w, "axis", a->axis);
        if (n->op == XF_OP_TENSOR_SCATTER && a->pad_mode == XF_PAD_WRAP)
            add_string(&w, "mode", "circular");
        break;
    case XF_OP_SOFTMAX:
    case XF_OP_LOG_SOFTMAX:
    case XF_OP_HARDMAX:
        s = write_softmax(&w, n, in_rank, opset, err);
        break;
    case XF_OP_ARG_MAX:
    case XF_OP_ARG_MIN:
    case XF_OP_CUM_SUM:
    case XF_OP_CUM_PROD:
    case XF_OP_INSTANCE_NORM:
    case XF_OP_GROUP_NORM:
    case XF_OP_MEAN_VARIANCE_NORM:
    case XF_OP_LRN:
    case XF_OP_LP_NORM:
        s = write_norm(&w, n, &d, opset, err);
        break;
    case XF_OP_SPLIT:
        if (a->axis != d.axis)
            add_int(&w, "axis", a->axis);
        if (a->n_split > 0)
            add_ints(&w, "split", a->split, a->n_split);
        if (a->num_outputs > 0)
            add_int(&w, "num_outputs", a->num_outputs);
        break;
    case XF_OP_TRANSPOSE:
        if (a->n_perm > 0)
            add_ints(&w, "perm", a->perm, a->n_perm);
        break;
    case XF_OP_RESHAPE:
        if (a->allowzero != d.allowzero)
            add_int(&w, "allowzero", a->allowzero);
        break;
    case XF_OP_SQUEEZE:
    case XF_OP_UNSQUEEZE:
        if (a->has_axes)
            add_ints(&w, "axes", a->axes, a->n_axes);
        break;
    case XF_OP_SLICE:
        if (a->has_slice_attrs) {
            add_ints(&w, "starts", a->slice_starts, a->n_slice);
            add_ints(&w, "ends", a->slice_ends, a->n_slice);
        }
        if (a->has_slice_axes)
            add_ints(&w, "axes", a->slice_axes, a->n_slice);
        break;
    case XF_OP_PAD: {
        static const char *const modes[] = {"constant", "reflect", "edge", "wrap"};
        if (a->pad_mode == XF_PAD_WRAP && opset < 19)
            s = xf_error_set(err, XF_ERR_UNSUPPORTED, "node '%s' (Pad) is in mode wrap, which opset %lld lacks (19 "
                             "has it)", n->name ? n->name : "", (long long)opset);
        if (a->pad_mode != d.pad_mode && (unsigned)a->pad_mode < 4)
            add_string(&w, "mode", modes[a->pad_mode]);
        if (a->has_pads)
            add_ints(&w, "pads", a->pad_pads, a->n_pads);
        if (a->pad_value != d.pad_value)
            add_float(&w, "value", a->pad_value);
        break;
    }
    case XF_OP_SHAPE:
        if (a->start != d.start)
            add_int(&w, "start", a->start);
        if (a->has_end)
            add_int(&w, "end", a->end);
        break;
    case XF_OP_CONSTANT_OF_SHAPE:
        if (a->value)
            s = write_value_tensor(&w, a->value, err);
        break;
    case XF_OP_BATCH_NORM:
        if (a->epsilon != d.epsilon)
            add_float(&w, "epsilon", a->epsilon);
        if (a->bn_training && opset < 14)
            s = xf_error_set(err, XF_ERR_UNSUPPORTED, "node '%s' (BatchNormalization) is in training mode, which "
                             "opset %lld cannot express (14 can)", n->name ? n->name : "", (long long)opset);
        if (a->bn_training) {
            add_int(&w, "training_mode", 1);
            if (a->bn_momentum != d.bn_momentum)
                add_float(&w, "momentum", a->bn_momentum);
        }
        break;
    case XF_OP_LAYER_NORM:
        if (a->axis != d.axis)
            add_int(&w, "axis", a->axis);
        if (a->epsilon != d.epsilon)
            add_float(&w, "epsilon", a->epsilon);
        break;
    case XF_OP_RNN:
    case XF_OP_LSTM:
    case XF_OP_GRU:
    case XF_OP_MS_DYNAMIC_QUANTIZE_LSTM:
        s = write_rnn(&w, n, err);
        break;
    case XF_OP_MS_FUSED_MATMUL:
        if (a->alpha != d.alpha)
            add_float(&w, "alpha", a->alpha);
        if (a->trans_a)
            add_int(&w, "transA", a->trans_a);
        if (a->trans_b)
            add_int(&w, "transB", a->trans_b);
        if (a->trans_batch_a)
            add_int(&w, "transBatchA", a->trans_batch_a);
        if (a->trans_batch_b)
            add_int(&w, "transBatchB", a->trans_batch_b);
        break;
    case XF_OP_MS_QUICK_GELU:
        if (a->alpha != d.alpha)
            add_float(&w, "alpha", a->alpha);
        break;
    case XF_OP_MS_SKIP_LAYER_NORM:
    case XF_OP_MS_SKIP_SIMPLIFIED_LAYER_NORM: /* ONNX Runtime's kernel requires epsilon */
        add_float(&w, "epsilon", a->epsilon);
        break;
    case XF_OP_SIMPLIFIED_LAYER_NORM:
        if (a->axis != d.axis)
            add_int(&w, "axis", a->axis);
        if (a->epsilon != d.epsilon)
            add_float(&w, "epsilon", a->epsilon);
        break;
    case XF_OP_MS_ATTENTION:
    case XF_OP_MS_QATTENTION:
    case XF_OP_MS_MHA:
    case XF_OP_MS_EMBED_LAYER_NORM:
    case XF_OP_MS_ROTARY_EMB:
        xfp_write_attn(&w, n, &d);
        break;
    case XF_OP_ATTENTION:
    case XF_OP_RMS_NORM:
    case XF_OP_ROTARY_EMB:
        s = xfp_write_opset23(&w, n, &d, opset, err);
        break;
    /* com.microsoft, version 1: nothing depends on the model's opset */
    case XF_OP_MS_QLINEAR_AVERAGE_POOL:
        write_spatial(&w, n, &d);
        break;
    case XF_OP_MS_QLINEAR_LEAKY_RELU:
    case XF_OP_MS_QGEMM:
        if (a->alpha != d.alpha)
            add_float(&w, "alpha", a->alpha);
        if (n->op == XF_OP_MS_QGEMM && a->trans_a)
            add_int(&w, "transA", a->trans_a);
        if (n->op == XF_OP_MS_QGEMM && a->trans_b)
            add_int(&w, "transB", a->trans_b);
        break;
    case XF_OP_MS_QLINEAR_GLOBAL_AVERAGE_POOL:
        if (a->channels_last)
            add_int(&w, "channels_last", a->channels_last);
        break;
    case XF_OP_MS_QLINEAR_CONCAT: /* axis is required */
        add_int(&w, "axis", a->axis);
        break;
    case XF_OP_MS_QLINEAR_SOFTMAX: /* opset is required */
        add_int(&w, "opset", a->ms_opset);
        if (a->axis != (a->ms_opset < 13 ? 1 : -1))
            add_int(&w, "axis", a->axis);
        break;
    case XF_OP_MS_QUANTIZE_LINEAR:
    case XF_OP_MS_DEQUANTIZE_LINEAR:
        if (a->axis != d.axis)
            add_int(&w, "axis", a->axis);
        break;
    case XF_OP_MS_MATMUL_NBITS:
    case XF_OP_MS_GQA:
    case XF_OP_MS_GATHER_BLOCK_QUANTIZED:
        xfp_write_llm(&w, n, &d);
        break;
    case XF_OP_RANDOM_NORMAL: case XF_OP_RANDOM_UNIFORM: case XF_OP_RANDOM_NORMAL_LIKE:
    case XF_OP_RANDOM_UNIFORM_LIKE: case XF_OP_BERNOULLI: case XF_OP_MULTINOMIAL:
        xfp_write_random(&w, n, &d);
        break;
    case XF_OP_AFFINE: case XF_OP_SCALE: case XF_OP_SCALED_TANH: case XF_OP_PARAMETRIC_SOFTPLUS:
    case XF_OP_IMAGE_SCALER: case XF_OP_CROP:
        xfp_write_legacy(&w, n, &d);
        break;
    default:
        if (!xf_op_is_reduce(n->op))
            break;
        if (a->has_axes)
            add_ints(&w, "axes", a->axes, a->n_axes);
        if (a->keepdims != d.keepdims)
            add_int(&w, "keepdims", a->keepdims);
        if (a->noop_with_empty_axes != d.noop_with_empty_axes)
            add_int(&w, "noop_with_empty_axes", a->noop_with_empty_axes);
        break;
    }
    if (opset < 7)
        xfp_write_before7(&w, n);
    if (s != XF_OK)
        return s;
    if (w.oom)
        return xf_error_set(err, XF_ERR_NOMEM, "out of memory");
    np->n_attribute = w.n;
    np->attribute = w.list;
    return XF_OK;
}
