/* ONNX attributes -> xf_attrs.
 *
 * Mapping (ONNX attribute -> xf_attrs field).  Anything else on a known op,
 * a value of the wrong type, or a value the block cannot hold makes the node
 * opaque, so that it is written back exactly as it came.
 *
 *   Conv            kernel_shape->kernel  strides  pads  dilations  group  auto_pad
 *                   (n_spatial = the common length of the lists, at most 3)
 *   ConvInteger, QLinearConv  as Conv
 *   ConvTranspose   as Conv; output_padding  output_shape (its spatial extents:
 *                   has_output_shape)
 *   MaxPool         as Conv without group; ceil_mode; storage_order (0 or 1)
 *   MaxUnpool       kernel_shape strides pads (as Conv's)
 *   AveragePool     as Conv without group; ceil_mode; count_include_pad
 *   Gemm            alpha beta transA->trans_a transB->trans_b
 *   LeakyRelu, Elu, ThresholdedRelu, Celu, Swish, SwiGLU  alpha;  HardSigmoid alpha beta
 *   Selu            alpha  gamma->beta
 *   Shrink          lambd->alpha  bias->beta
 *   IsInf           detect_negative detect_positive (0: isinf_no_neg, isinf_no_pos)
 *   Gelu            approximate (none/tanh: gelu_tanh)
 *   BitShift        direction (required; LEFT/RIGHT: shift_right)
 *   PRelu           (no attributes; before opset 7 a 1-D slope is per channel:
 *                   prelu_channels)
 *   CastLike        saturate (19+, 0: no_saturate; only float8 targets heed it);
 *                   round_mode (24+, for float8e8m0 targets: up/down/nearest)
 *   Clip (< 11)     min->clip_min max->clip_max (has_clip_attrs)
 *   Cast            to (required; a number: the string form of opset 1 stays opaque);
 *                   saturate and round_mode as CastLike's
 *   BitCast         to (required)
 *   Concat          axis (opset < 4: default 1)
 *   Split           axis  split (n_split, < 13; must match the outputs)  num_outputs (18)
 *   Transpose       perm->perm/n_perm
 *   Reshape         allowzero
 *   Mod             fmod
 *   GatherElements  axis
 *   ScatterElements axis  reduction (none/add/mul/max/min)
 *   ScatterND       reduction (none/add/mul/max/min)
 *   GatherND        batch_dims
 *   TopK (10+)      axis  largest (0: topk_smallest)  sorted (0: topk_unsorted)
 *   RoiAlign        mode (avg/max: roi_max)  output_height output_width sampling_ratio
 *                   spatial_scale -> roi_*; coordinate_transformation_mode
 *                   (half_pixel/output_half_pixel, opset 16+; before 16 the op
 *                   has no such attribute and works as output_half_pixel)
 *   NonMaxSuppression  center_point_box
 *   GridSample (16+)  mode padding_mode align_corners: attrs_sample.c
 *   Trilu           upper (0: trilu_lower)
 *   DepthToSpace    blocksize->block_size  mode (DCR/CRD: depth_crd, opset 11+)
 *   SpaceToDepth    blocksize->block_size  mode (opset 28+, as DepthToSpace's)
 *   EyeLike         k->eye_k  dtype->to (a type xflow knows)
 *   ReverseSequence batch_axis->axes[0]  time_axis->axes[1]
 *   the sequence ops and Optional: attrs_seq.c
 *   OneHot          axis (before opset 11: onehot_legacy)
 *   Compress        axis (has_axis)
 *   Unique          axis (has_axis)  sorted (0: topk_unsorted)
 *   Scatter         axis
 *   Einsum          equation (value, a string scalar)
 *   Upsample (7+)   mode (nearest/linear: resize_mode)  scales (opset 7 and 8;
 *                   value, a float tensor)
 *   QuantizeLinear, DequantizeLinear  axis  block_size  output_dtype (a type
 *                   xflow knows: float8 and 4-bit ones stay opaque); Quantize
 *                   also saturate (0: no_saturate) and precision (0 only)
 *   RNN, LSTM, GRU (7+)  attrs_rnn.c
 *   Resize          attrs_sample.c; opset 10 (X, scales): asymmetric,
 *                   nearest mode 4 when nearest
 *   Flatten, Gather axis
 *   Squeeze, Unsqueeze  axes (< 13; has_axes)
 *   Slice (1)       starts ends axes -> slice_* (has_slice_attrs, has_slice_axes)
 *   Pad             mode->pad_mode (constant/reflect/edge)  pads->pad_pads (< 11; has_pads)
 *                   value->pad_value (< 11)
 *   Shape (15)      start  end (has_end)
 *   ConstantOfShape value (a one-element tensor; owned reference)
 *   Dropout         seed -> rand_seed (rand_has_seed; one beyond float's exact
 *                   integers stays opaque); ratio (opsets 7 to 11, which
 *                   have no training mode: ignored)
 *   BatchNormalization  epsilon; momentum ignored (only used in training);
 *                   spatial (1 only); training_mode, momentum (14+: its
 *                   running statistics as outputs 1 and 2)
 *   LayerNormalization  axis epsilon; stash_type (1 only)
 *   Softmax, LogSoftmax, Hardmax  axis (opset < 13: softmax_legacy, default axis 1)
 *   ReduceMean/Sum/Max/Min/Prod/L1/L2/LogSum/LogSumExp/SumSquare  axes (has_axes)
 *                   keepdims noop_with_empty_axes
 *   ArgMax, ArgMin  axis keepdims select_last_index (opset 12+)
 *   CumSum          exclusive reverse -> cumsum_*
 *   InstanceNormalization  epsilon
 *   GroupNormalization  num_groups->group (required) epsilon; stash_type (1 only)
 *   MeanVarianceNormalization  axes (default [0, 2, 3])
 *   LRN             alpha beta bias->lrn_bias size->lrn_size (required)
 *   LpNormalization axis p->lp_p
 *   DFT, STFT, HannWindow, HammingWindow, BlackmanWindow, MelWeightMatrix:
 *                   attrs_signal.c
 *   the random ops  attrs_random.c
 *   Affine, Scale, ScaledTanh, ParametricSoftplus, ImageScaler, Crop (opsets
 *                   1 to 9): attrs_legacy.c; ImageScaler's bias -> value
 *   LpPool, GlobalLpPool, CumProd, TensorScatter: attrs_small.c
 *   Col2Im, CenterCropPad, AffineGrid, DeformConv, MaxRoiPool: attrs_image.c
 *   CausalConvWithState, LinearAttention: attrs_state.c
 *   ONNX Runtime's contrib ops (com.microsoft, version 1, whatever the
 *   model's opset): attrs_contrib.c; its attention family (Attention,
 *   MultiHeadAttention, EmbedLayerNormalization, RotaryEmbedding) and
 *   ONNX's Attention, RMSNormalization and RotaryEmbedding: attrs_attn.c;
 *   QLinearAveragePool as AveragePool; channels_last (0 only)
 *   all others      no attributes
 *
 * Attributes of opset 1-6 that changed meaning later (broadcast, axis on
 * binary ops, consumed_inputs, is_test, Pad's paddings, Reshape's shape) are
 * not in the table, so such nodes stay opaque. */
#include "proto_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct reader {
    const xfp_attr_ctx *ctx;
    xf_attrs *a;
    char *why;
    size_t why_len;
    xf_error *err;
    xf_status status; /* a data error (bad tensor), not merely "cannot represent" */
    /* lengths of the spatial lists seen (-1 = absent) */
    int n_kernel, n_strides, n_pads, n_dilations, n_output_padding, n_output_shape;
    int n_starts, n_ends, n_slice_axes;
    bool has_axis;
    bool has_roi_coord;
    bool has_direction;
    bool has_required; /* GroupNormalization's num_groups, LRN's size */
    xfp_rnn_seen rnn; /* LSTM/GRU activation_alpha and activation_beta (attrs_rnn.c) */
    xfp_contrib_seen contrib; /* contrib ops (attrs_contrib.c) */
} reader;

/* Records why the node stays opaque (fmt may contain one %s for name);
 * returns false for use in `return`. */
static bool refuse(reader *r, const char *fmt, const char *name)
{
    snprintf(r->why, r->why_len, fmt, name ? name : "");
    return false;
}

static bool is_type(const Onnx__AttributeProto *at, Onnx__AttributeProto__AttributeType t)
{
    return at->has_type && at->type == t;
}

static bool read_int(reader *r, const Onnx__AttributeProto *at, int64_t *v)
{
    return xfp_attr_int(at, INT64_MIN, INT64_MAX, v, r->why, r->why_len);
}

static bool read_int32(reader *r, const Onnx__AttributeProto *at, int *v)
{
    return xfp_attr_int32(at, -INT32_MAX, INT32_MAX, v, r->why, r->why_len);
}

/* An int attribute that xflow only handles at one value. */
static bool read_fixed(reader *r, const Onnx__AttributeProto *at, int64_t only)
{
    int64_t x;
    if (!read_int(r, at, &x))
        return false;
    if (x != only)
        return refuse(r, "attribute '%s' has a value xflow does not model", at->name);
    return true;
}

/* A tensor element type xflow knows (Cast's to, EyeLike's dtype). */
static bool read_dtype(reader *r, const Onnx__AttributeProto *at, xf_dtype *v)
{
    return xfp_attr_dtype(at, v, r->why, r->why_len);
}

static bool read_float(reader *r, const Onnx__AttributeProto *at, float *v)
{
    return xfp_attr_float(at, v, r->why, r->why_len);
}

/* A list attribute of type t (count items of size bytes at items) copied
 * into out, which holds max of them. */
static bool read_list(reader *r, const Onnx__AttributeProto *at, Onnx__AttributeProto__AttributeType t, size_t count,
                      const void *items, size_t size, void *out, size_t max, int *n)
{
    return xfp_attr_list(at, t, count, items, size, out, max, n, r->why, r->why_len);
}

static bool read_ints(reader *r, const Onnx__AttributeProto *at, int64_t *out, size_t max, int *n)
{
    return read_list(r, at, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS, at->n_ints, at->ints, sizeof *out, out, max,
                     n);
}

/* A string attribute equal to one of `names`; *index receives which. */
static bool read_enum(reader *r, const Onnx__AttributeProto *at, const char *const *names, int count, int *index)
{
    return xfp_attr_enum(at, names, count, index, r->why, r->why_len);
}

static bool read_value_tensor(reader *r, const Onnx__AttributeProto *at)
{
    if (!is_type(at, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR) || !at->t)
        return refuse(r, "attribute '%s' is not a tensor", at->name);
    char what[300];
    snprintf(what, sizeof what, "attribute '%s'", at->name);
    xf_tensor *t;
    r->status = xfp_tensor_decode(at->t, what, r->ctx->tensors, &t, r->err);
    if (r->status != XF_OK)
        return false;
    if (xf_tensor_numel(t) != 1) {
        xf_tensor_release(t);
        return refuse(r, "attribute '%s' is not a one-element tensor", at->name);
    }
    r->a->value = t;
    return true;
}

/* A string attribute kept as a string scalar in the value tensor. */
static bool read_string_value(reader *r, const Onnx__AttributeProto *at)
{
    if (!is_type(at, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING))
        return refuse(r, "attribute '%s' is not a string", at->name);
    if (at->s.len && memchr(at->s.data, 0, at->s.len))
        return refuse(r, "attribute '%s' holds a NUL character", at->name);
    const xf_shape scalar = {.ndim = 0};
    xf_tensor *t = xf_tensor_create(XF_DT_STRING, &scalar);
    char *s = malloc(at->s.len + 1);
    if (!t || !s) {
        xf_tensor_release(t);
        free(s);
        r->status = xf_error_set(r->err, XF_ERR_NOMEM, "out of memory");
        return false;
    }
    if (at->s.len)
        memcpy(s, at->s.data, at->s.len);
    s[at->s.len] = '\0';
    t->strings[0] = s;
    r->a->value = t;
    return true;
}

/* A list of floats kept as a 1-D float tensor in the value tensor:
 * Upsample's scales (before opset 9; at most max), ImageScaler's bias. */
static bool read_float_values(reader *r, const Onnx__AttributeProto *at, size_t max)
{
    if (!is_type(at, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS))
        return refuse(r, "attribute '%s' is not a list of floats", at->name);
    if (at->n_floats > max)
        return refuse(r, "attribute '%s' has more entries than xflow holds", at->name);
    xf_shape s = {.ndim = 1, .dims = {(int64_t)at->n_floats}};
    if (!(r->a->value = xf_tensor_from_data(XF_DT_FLOAT, &s, at->floats))) {
        r->status = xf_error_set(r->err, XF_ERR_NOMEM, "out of memory");
        return false;
    }
    return true;
}

/* ------------------------------------------------------------ per op family */

static const char *const auto_pad_names[] = {"NOTSET", "VALID", "SAME_UPPER", "SAME_LOWER"};
static const char *const pad_mode_names[] = {"constant", "reflect", "edge", "wrap"};
static const char *const reduction_names[] = {"none", "add", "mul", "max", "min"}; /* xf_reduction */

/* The convolutions: a group, and no pooling attributes. */
static bool conv_like(xf_op op)
{
    return op == XF_OP_CONV || op == XF_OP_CONV_TRANSPOSE || op == XF_OP_CONV_INTEGER || op == XF_OP_QLINEAR_CONV ||
           op == XF_OP_MS_FUSED_CONV;
}

static bool take_spatial(reader *r, xf_op op, const char *name, const Onnx__AttributeProto *at)
{
    xf_attrs *a = r->a;
    if (op == XF_OP_CONV_TRANSPOSE && strcmp(name, "output_padding") == 0)
        return read_ints(r, at, a->output_padding, XF_MAX_SPATIAL, &r->n_output_padding);
    if (op == XF_OP_CONV_TRANSPOSE && strcmp(name, "output_shape") == 0)
        return (a->has_output_shape = read_ints(r, at, a->output_shape, XF_MAX_SPATIAL, &r->n_output_shape));
    if (strcmp(name, "kernel_shape") == 0)
        return read_ints(r, at, a->kernel, XF_MAX_SPATIAL, &r->n_kernel);
    if (strcmp(name, "strides") == 0)
        return read_ints(r, at, a->strides, XF_MAX_SPATIAL, &r->n_strides);
    if (strcmp(name, "pads") == 0)
        return read_ints(r, at, a->pads, 2 * XF_MAX_SPATIAL, &r->n_pads);
    if (strcmp(name, "dilations") == 0)
        return read_ints(r, at, a->dilations, XF_MAX_SPATIAL, &r->n_dilations);
    if (strcmp(name, "auto_pad") == 0) {
        int i;
        if (!read_enum(r, at, auto_pad_names, 4, &i))
            return false;
        a->auto_pad = (xf_auto_pad)i;
        return true;
    }
    if (conv_like(op) && strcmp(name, "group") == 0)
        return read_int(r, at, &a->group);
    if (!conv_like(op) && strcmp(name, "ceil_mode") == 0)
        return read_int32(r, at, &a->ceil_mode);
    if ((op == XF_OP_AVERAGE_POOL || op == XF_OP_MS_QLINEAR_AVERAGE_POOL) && strcmp(name, "count_include_pad") == 0)
        return read_int32(r, at, &a->count_include_pad);
    if (op == XF_OP_MS_QLINEAR_AVERAGE_POOL && strcmp(name, "channels_last") == 0)
        return read_fixed(r, at, 0);
    if (op == XF_OP_MAX_POOL && strcmp(name, "storage_order") == 0)
        return read_int32(r, at, &a->storage_order) &&
               ((unsigned)a->storage_order <= 1 || refuse(r, "storage_order other than 0 and 1", NULL));
    return refuse(r, "attribute '%s' is not modelled", name);
}

static bool take_quant(reader *r, xf_op op, const char *name, const Onnx__AttributeProto *at)
{
    xf_attrs *a = r->a;
    bool q = op == XF_OP_QUANTIZE_LINEAR;
    if (strcmp(name, "axis") == 0)
        return read_int(r, at, &a->axis);
    if (strcmp(name, "block_size") == 0)
        return read_int(r, at, &a->block_size);
    if (q && strcmp(name, "saturate") == 0) {
        int v;
        if (!read_int32(r, at, &v))
            return false;
        a->no_saturate = v == 0;
        return true;
    }
    if (q && strcmp(name, "precision") == 0)
        return read_fixed(r, at, 0);
    if (strcmp(name, "output_dtype") == 0) {
        int64_t t;
        if (!read_int(r, at, &t))
            return false;
        if (t < XF_DT_UNDEFINED || t >= XF_DT_COUNT_)
            return refuse(r, "attribute '%s' names a type xflow does not know (float8, 4-bit, ...)", name);
        a->output_dtype = (xf_dtype)t;
        return true;
    }
    return refuse(r, "attribute '%s' is not modelled", name);
}

static bool take_reduce(reader *r, const char *name, const Onnx__AttributeProto *at)
{
    xf_attrs *a = r->a;
    if (strcmp(name, "axes") == 0)
        return (a->has_axes = read_ints(r, at, a->axes, XF_MAX_DIMS, &a->n_axes));
    if (strcmp(name, "keepdims") == 0)
        return read_int32(r, at, &a->keepdims);
    if (strcmp(name, "noop_with_empty_axes") == 0)
        return read_int32(r, at, &a->noop_with_empty_axes);
    return refuse(r, "attribute '%s' is not modelled", name);
}

/* ArgMax, ArgMin, Hardmax, CumSum and the normalizations of their group. */
static bool take_norm(reader *r, xf_op op, const char *name, const Onnx__AttributeProto *at)
{
    xf_attrs *a = r->a;
    bool arg = op == XF_OP_ARG_MAX || op == XF_OP_ARG_MIN;
    if ((arg || op == XF_OP_HARDMAX || op == XF_OP_LP_NORM) && strcmp(name, "axis") == 0)
        return (r->has_axis = read_int(r, at, &a->axis));
    if (arg && strcmp(name, "keepdims") == 0)
        return read_int32(r, at, &a->keepdims);
    if (arg && strcmp(name, "select_last_index") == 0)
        return r->ctx->opset >= 12 ? read_int32(r, at, &a->select_last_index)
                                   : refuse(r, "attribute '%s' before opset 12", name);
    if (op == XF_OP_CUM_SUM && strcmp(name, "exclusive") == 0)
        return read_int32(r, at, &a->cumsum_exclusive);
    if (op == XF_OP_CUM_SUM && strcmp(name, "reverse") == 0)
        return read_int32(r, at, &a->cumsum_reverse);
    if ((op == XF_OP_INSTANCE_NORM || op == XF_OP_GROUP_NORM) && strcmp(name, "epsilon") == 0)
        return read_float(r, at, &a->epsilon);
    if (op == XF_OP_GROUP_NORM && strcmp(name, "num_groups") == 0)
        return (r->has_required = read_int(r, at, &a->group));
    if (op == XF_OP_GROUP_NORM && strcmp(name, "stash_type") == 0)
        return read_fixed(r, at, 1);
    if (op == XF_OP_MEAN_VARIANCE_NORM && strcmp(name, "axes") == 0)
        return read_ints(r, at, a->axes, XF_MAX_DIMS, &a->n_axes);
    if (op == XF_OP_LRN && strcmp(name, "alpha") == 0)
        return read_float(r, at, &a->alpha);
    if (op == XF_OP_LRN && strcmp(name, "beta") == 0)
        return read_float(r, at, &a->beta);
    if (op == XF_OP_LRN && strcmp(name, "bias") == 0)
        return read_float(r, at, &a->lrn_bias);
    if (op == XF_OP_LRN && strcmp(name, "size") == 0)
        return (r->has_required = read_int(r, at, &a->lrn_size));
    if (op == XF_OP_LP_NORM && strcmp(name, "p") == 0)
        return read_int32(r, at, &a->lp_p);
    return refuse(r, "attribute '%s' is not modelled", name);
}

static bool take_roi_align(reader *r, const char *name, const Onnx__AttributeProto *at)
{
    static const char *const modes[] = {"avg", "max"}, *const coords[] = {"half_pixel", "output_half_pixel"};
    xf_attrs *a = r->a;
    if (strcmp(name, "mode") == 0)
        return read_enum(r, at, modes, 2, &a->roi_max);
    if (strcmp(name, "output_height") == 0)
        return read_int(r, at, &a->roi_output_h);
    if (strcmp(name, "output_width") == 0)
        return read_int(r, at, &a->roi_output_w);
    if (strcmp(name, "sampling_ratio") == 0)
        return read_int(r, at, &a->roi_sampling_ratio);
    if (strcmp(name, "spatial_scale") == 0)
        return read_float(r, at, &a->roi_spatial_scale);
    if (strcmp(name, "coordinate_transformation_mode") == 0)
        return (r->has_roi_coord = read_enum(r, at, coords, 2, &a->roi_output_half_pixel));
    return refuse(r, "attribute '%s' is not modelled", name);
}

/* IsInf, Selu, Shrink, Gelu, BitShift, and Cast's and CastLike's saturate and round_mode. */
static bool take_elementwise(reader *r, xf_op op, const char *name, const Onnx__AttributeProto *at)
{
    static const char *const approximations[] = {"none", "tanh"}, *const directions[] = {"LEFT", "RIGHT"};
    static const char *const round_modes[] = {"up", "down", "nearest"}; /* xf_round_mode's order */
    xf_attrs *a = r->a;
    bool selu = op == XF_OP_SELU, shrink = op == XF_OP_SHRINK;
    int v;
    bool negative = strcmp(name, "detect_negative") == 0;
    if (op == XF_OP_IS_INF && (negative || strcmp(name, "detect_positive") == 0)) {
        if (!read_int32(r, at, &v))
            return false;
        *(negative ? &a->isinf_no_neg : &a->isinf_no_pos) = v == 0;
        return true;
    }
    if ((selu && strcmp(name, "alpha") == 0) || (shrink && strcmp(name, "lambd") == 0))
        return read_float(r, at, &a->alpha);
    if ((selu && strcmp(name, "gamma") == 0) || (shrink && strcmp(name, "bias") == 0))
        return read_float(r, at, &a->beta);
    if (op == XF_OP_GELU && strcmp(name, "approximate") == 0)
        return read_enum(r, at, approximations, 2, &a->gelu_tanh);
    if (op == XF_OP_BIT_SHIFT && strcmp(name, "direction") == 0)
        return (r->has_direction = read_enum(r, at, directions, 2, &a->shift_right));
    if ((op == XF_OP_CAST_LIKE || op == XF_OP_CAST) && strcmp(name, "saturate") == 0) {
        if (!read_int32(r, at, &v))
            return false;
        a->no_saturate = v == 0;
        return true;
    }
    if ((op == XF_OP_CAST_LIKE || op == XF_OP_CAST) && strcmp(name, "round_mode") == 0)
        return read_enum(r, at, round_modes, 3, &a->round_mode);
    return refuse(r, "attribute '%s' is not modelled", name);
}

static bool take_attr(reader *r, xf_op op, const Onnx__AttributeProto *at)
{
    xf_attrs *a = r->a;
    const char *name = at->name;
    if (at->ref_attr_name && at->ref_attr_name[0])
        return refuse(r, "attribute '%s' refers to a function attribute", name);
    int contrib = xfp_contrib_attr(op, at, a, &r->contrib);
    if (contrib >= 0)
        return contrib;
    if (op == XF_OP_MS_FUSED_GEMM) /* the rest are Gemm's */
        op = XF_OP_GEMM;
    if (xf_op_is_reduce(op))
        return take_reduce(r, name, at);
    int before7 = r->ctx->opset < 7 ? xfp_before7_attr_import(op, at, r->ctx, r->why, r->why_len) : -1;
    if (before7 >= 0)
        return before7;
#define A(s) (strcmp(name, s) == 0)
    switch (op) {
    case XF_OP_MS_FUSED_CONV:
    case XF_OP_CONV:
    case XF_OP_CONV_TRANSPOSE:
    case XF_OP_CONV_INTEGER:
    case XF_OP_QLINEAR_CONV:
    case XF_OP_MAX_POOL:
    case XF_OP_AVERAGE_POOL:
        return take_spatial(r, op, name, at);
    case XF_OP_MAX_UNPOOL:
        if (A("kernel_shape") || A("strides") || A("pads"))
            return take_spatial(r, op, name, at);
        break;
    case XF_OP_GEMM:
        if (A("alpha"))
            return read_float(r, at, &a->alpha);
        if (A("beta"))
            return read_float(r, at, &a->beta);
        if (A("transA"))
            return read_int32(r, at, &a->trans_a);
        if (A("transB"))
            return read_int32(r, at, &a->trans_b);
        break;
    case XF_OP_LEAKY_RELU:
    case XF_OP_ELU:
    case XF_OP_THRESHOLDED_RELU:
    case XF_OP_CELU:
    case XF_OP_SWISH:
    case XF_OP_SWIGLU:
        if (A("alpha"))
            return read_float(r, at, &a->alpha);
        break;
    case XF_OP_IS_INF:
    case XF_OP_SELU:
    case XF_OP_SHRINK:
    case XF_OP_GELU:
    case XF_OP_BIT_SHIFT:
    case XF_OP_CAST_LIKE:
        return take_elementwise(r, op, name, at);
    case XF_OP_MOD:
        if (A("fmod"))
            return read_int32(r, at, &a->fmod);
        break;
    case XF_OP_HARD_SIGMOID:
        if (A("alpha"))
            return read_float(r, at, &a->alpha);
        if (A("beta"))
            return read_float(r, at, &a->beta);
        break;
    case XF_OP_CLIP:
        if (A("min") || A("max")) {
            a->has_clip_attrs = true;
            return read_float(r, at, name[1] == 'i' ? &a->clip_min : &a->clip_max);
        }
        break;
    case XF_OP_CAST:
    case XF_OP_BIT_CAST:
        if (A("to"))
            return read_dtype(r, at, &a->to);
        if (op == XF_OP_CAST)
            return take_elementwise(r, op, name, at);
        break;
    case XF_OP_TRILU:
        if (A("upper")) {
            int v;
            if (!read_int32(r, at, &v))
                return false;
            a->trilu_lower = v == 0;
            return true;
        }
        break;
    case XF_OP_DEPTH_TO_SPACE:
    case XF_OP_SPACE_TO_DEPTH: {
        static const char *const modes[] = {"DCR", "CRD"};
        if (A("blocksize"))
            return read_int(r, at, &a->block_size);
        if ((op == XF_OP_DEPTH_TO_SPACE || r->ctx->opset >= 28) && A("mode"))
            return read_enum(r, at, modes, 2, &a->depth_crd);
        break;
    }
    case XF_OP_EYE_LIKE:
        if (A("k"))
            return read_int(r, at, &a->eye_k);
        if (A("dtype"))
            return read_dtype(r, at, &a->to);
        break;
    case XF_OP_REVERSE_SEQUENCE:
        if (A("batch_axis") || A("time_axis"))
            return read_int(r, at, &a->axes[A("time_axis")]);
        break;
    case XF_OP_ONE_HOT:
        if (A("axis"))
            return read_int(r, at, &a->axis);
        break;
    case XF_OP_COMPRESS:
    case XF_OP_UNIQUE:
        if (A("axis"))
            return (a->has_axis = read_int(r, at, &a->axis));
        if (op == XF_OP_UNIQUE && A("sorted")) {
            int v;
            if (!read_int32(r, at, &v))
                return false;
            a->topk_unsorted = v == 0;
            return true;
        }
        break;
    case XF_OP_SCATTER:
        if (A("axis"))
            return read_int(r, at, &a->axis);
        break;
    case XF_OP_EINSUM:
        if (A("equation"))
            return read_string_value(r, at);
        break;
    case XF_OP_UPSAMPLE: {
        if (A("mode")) /* nearest or linear */
            return read_enum(r, at, xfp_resize_modes, 2, &a->resize_mode);
        if (A("scales") && r->ctx->opset < 9)
            return read_float_values(r, at, XF_MAX_DIMS);
        break;
    }
    case XF_OP_SCATTER_ELEMENTS:
    case XF_OP_SCATTER_ND:
        if (A("reduction"))
            return read_enum(r, at, reduction_names, 5, &a->reduction);
        if (op == XF_OP_SCATTER_ELEMENTS && A("axis"))
            return read_int(r, at, &a->axis);
        break;
    case XF_OP_CONCAT:
    case XF_OP_FLATTEN:
    case XF_OP_GATHER:
    case XF_OP_GATHER_ELEMENTS:
    case XF_OP_SOFTMAX:
    case XF_OP_LOG_SOFTMAX:
        if (A("axis"))
            return (r->has_axis = read_int(r, at, &a->axis));
        break;
    case XF_OP_SPLIT:
        if (A("axis"))
            return read_int(r, at, &a->axis);
        if (A("split"))
            return read_ints(r, at, a->split, sizeof a->split / sizeof a->split[0], &a->n_split);
        if (A("num_outputs"))
            return read_int32(r, at, &a->num_outputs);
        break;
    case XF_OP_TRANSPOSE:
        if (A("perm"))
            return read_ints(r, at, a->perm, XF_MAX_DIMS, &a->n_perm);
        break;
    case XF_OP_RESHAPE:
        if (A("allowzero"))
            return read_int32(r, at, &a->allowzero);
        break;
    case XF_OP_SQUEEZE:
    case XF_OP_UNSQUEEZE:
        if (A("axes"))
            return (a->has_axes = read_ints(r, at, a->axes, XF_MAX_DIMS, &a->n_axes));
        break;
    case XF_OP_SLICE:
        if (A("starts"))
            return (a->has_slice_attrs = read_ints(r, at, a->slice_starts, XF_MAX_DIMS, &r->n_starts));
        if (A("ends"))
            return read_ints(r, at, a->slice_ends, XF_MAX_DIMS, &r->n_ends);
        if (A("axes"))
            return (a->has_slice_axes = read_ints(r, at, a->slice_axes, XF_MAX_DIMS, &r->n_slice_axes));
        break;
    case XF_OP_RESIZE:
        return xfp_resize_attr_import(at, a, r->why, r->why_len);
    case XF_OP_GATHER_ND:
        if (A("batch_dims"))
            return read_int32(r, at, &a->batch_dims);
        break;
    case XF_OP_TOP_K:
        if (A("axis"))
            return read_int(r, at, &a->axis);
        if (A("largest") || A("sorted")) {
            int v;
            if (!read_int32(r, at, &v))
                return false;
            *(A("largest") ? &a->topk_smallest : &a->topk_unsorted) = v == 0;
            return true;
        }
        break;
    case XF_OP_ROI_ALIGN:
        return take_roi_align(r, name, at);
    case XF_OP_GRID_SAMPLE:
        return xfp_grid_sample_attr_import(at, r->ctx->opset, a, r->why, r->why_len);
    case XF_OP_NON_MAX_SUPPRESSION:
        if (A("center_point_box"))
            return read_int32(r, at, &a->center_point_box);
        break;
    case XF_OP_PAD:
        if (A("mode")) {
            int i;
            if (!read_enum(r, at, pad_mode_names, r->ctx->opset >= 19 ? 4 : 3, &i))
                return false;
            a->pad_mode = (xf_pad_mode)i;
            return true;
        }
        if (A("pads"))
            return (a->has_pads = read_ints(r, at, a->pad_pads, 2 * XF_MAX_DIMS, &a->n_pads));
        if (A("value"))
            return read_float(r, at, &a->pad_value);
        break;
    case XF_OP_SHAPE:
        if (A("start"))
            return read_int(r, at, &a->start);
        if (A("end"))
            return (a->has_end = read_int(r, at, &a->end));
        break;
    case XF_OP_CONSTANT_OF_SHAPE:
        if (A("value"))
            return read_value_tensor(r, at);
        break;
    case XF_OP_DROPOUT: {
        if (A("ratio")) /* opsets 7 to 11: inference only, where it does nothing */
            return true;
        int64_t seed;
        if (A("seed")) { /* kept as the random ops keep theirs */
            if (!read_int(r, at, &seed))
                return false;
            a->rand_has_seed = true;
            a->rand_seed = (float)seed;
            return (int64_t)a->rand_seed == seed || refuse(r, "a seed float does not hold exactly", NULL);
        }
        break;
    }
    case XF_OP_BATCH_NORM:
        if (A("epsilon"))
            return read_float(r, at, &a->epsilon);
        if (A("momentum"))
            return read_float(r, at, &a->bn_momentum);
        if (A("spatial"))
            return read_fixed(r, at, 1);
        if (A("training_mode"))
            return read_int32(r, at, &a->bn_training) && (a->bn_training == (a->bn_training != 0) ||
                                                           refuse(r, "training_mode is not 0 or 1", NULL));
        break;
    case XF_OP_LAYER_NORM:
        if (A("axis"))
            return read_int(r, at, &a->axis);
        if (A("epsilon"))
            return read_float(r, at, &a->epsilon);
        if (A("stash_type"))
            return read_fixed(r, at, 1);
        break;
    case XF_OP_ARG_MAX:
    case XF_OP_ARG_MIN:
    case XF_OP_HARDMAX:
    case XF_OP_CUM_SUM:
    case XF_OP_INSTANCE_NORM:
    case XF_OP_GROUP_NORM:
    case XF_OP_MEAN_VARIANCE_NORM:
    case XF_OP_LRN:
    case XF_OP_LP_NORM:
        return take_norm(r, op, name, at);
    case XF_OP_RNN:
    case XF_OP_LSTM:
    case XF_OP_GRU:
    case XF_OP_MS_DYNAMIC_QUANTIZE_LSTM:
        return xfp_rnn_attr_import(op, at, &a->rnn, &r->rnn, r->why, r->why_len);
    case XF_OP_QUANTIZE_LINEAR:
    case XF_OP_DEQUANTIZE_LINEAR:
        return take_quant(r, op, name, at);
    case XF_OP_MS_ATTENTION:
    case XF_OP_MS_QATTENTION:
    case XF_OP_MS_MHA:
    case XF_OP_MS_EMBED_LAYER_NORM:
    case XF_OP_MS_ROTARY_EMB:
        return xfp_attn_attr_import(op, at, a, r->why, r->why_len);
    case XF_OP_ATTENTION:
    case XF_OP_RMS_NORM:
    case XF_OP_ROTARY_EMB:
        return xfp_opset23_attr_import(op, at, r->ctx->opset, a, r->why, r->why_len);
    case XF_OP_MS_QLINEAR_AVERAGE_POOL:
        return take_spatial(r, op, name, at);
    case XF_OP_SEQUENCE_EMPTY:
    case XF_OP_SPLIT_TO_SEQUENCE:
    case XF_OP_CONCAT_FROM_SEQUENCE:
    case XF_OP_OPTIONAL:
        return xfp_seq_attr_import(op, at, a, &r->has_axis, r->why, r->why_len);
    case XF_OP_MS_MATMUL_NBITS:
    case XF_OP_MS_GQA:
    case XF_OP_MS_GATHER_BLOCK_QUANTIZED:
        return xfp_llm_attr_import(op, at, a, r->why, r->why_len);
    case XF_OP_DFT: case XF_OP_STFT: case XF_OP_HANN_WINDOW: case XF_OP_HAMMING_WINDOW: case XF_OP_BLACKMAN_WINDOW:
    case XF_OP_MEL_WEIGHT_MATRIX:
        return xfp_signal_attr_import(op, r->ctx->opset, at, a, r->why, r->why_len);
    case XF_OP_LP_POOL: case XF_OP_GLOBAL_LP_POOL: case XF_OP_CUM_PROD: case XF_OP_TENSOR_SCATTER: {
        int taken = xfp_small_attr_import(op, r->ctx->opset, at, a, r->why, r->why_len);
        return taken >= 0 ? taken : take_spatial(r, op, name, at);
    }
    case XF_OP_COL2IM: case XF_OP_CENTER_CROP_PAD: case XF_OP_AFFINE_GRID: case XF_OP_DEFORM_CONV:
    case XF_OP_MAX_ROI_POOL:
        return xfp_image_attr_import(op, at, a, r->why, r->why_len);
    case XF_OP_CAUSAL_CONV_WITH_STATE: case XF_OP_LINEAR_ATTENTION:
        return xfp_state_attr_import(op, at, a, r->why, r->why_len);
    case XF_OP_AFFINE: case XF_OP_SCALE: case XF_OP_SCALED_TANH: case XF_OP_PARAMETRIC_SOFTPLUS:
    case XF_OP_IMAGE_SCALER: case XF_OP_CROP:
        if (op == XF_OP_IMAGE_SCALER && A("bias"))
            return read_float_values(r, at, (size_t)1 << 24);
        return xfp_legacy_attr_import(op, at, a, r->why, r->why_len);
    case XF_OP_RANDOM_NORMAL: case XF_OP_RANDOM_UNIFORM: case XF_OP_RANDOM_NORMAL_LIKE:
    case XF_OP_RANDOM_UNIFORM_LIKE: case XF_OP_BERNOULLI: case XF_OP_MULTINOMIAL:
        return xfp_random_attr_import(op, at, a, r->why, r->why_len);
    default:
        break;
    }
#undef A
    return refuse(r, "attribute '%s' is not modelled", name);
}

/* Cross-attribute rules and opset-dependent defaults, once all are read. */
static bool finish(reader *r, xf_op op, int n_outputs)
{
    xf_attrs *a = r->a;
    if (!xfp_contrib_finish(op, a, &r->contrib))
        return false;
    switch (op) {
    case XF_OP_MS_FUSED_CONV:
    case XF_OP_CONV:
    case XF_OP_CONV_TRANSPOSE:
    case XF_OP_CONV_INTEGER:
    case XF_OP_QLINEAR_CONV:
    case XF_OP_MAX_POOL:
    case XF_OP_AVERAGE_POOL:
    case XF_OP_LP_POOL:
    case XF_OP_MAX_UNPOOL:
    case XF_OP_MS_QLINEAR_AVERAGE_POOL: {
        int n = -1;
        int lens[6] = {r->n_kernel,       r->n_strides,       r->n_pads < 0 ? -1 : r->n_pads / 2,
                       r->n_dilations,    r->n_output_padding, r->n_output_shape};
        if (r->n_pads > 0 && r->n_pads % 2)
            return refuse(r, "odd number of pads", NULL);
        for (int i = 0; i < 6; i++) {
            if (lens[i] < 0)
                continue;
            if (n >= 0 && lens[i] != n)
                return refuse(r, "spatial lists of different lengths", NULL);
            n = lens[i];
        }
        a->n_spatial = n < 0 ? 0 : n;
        if (!conv_like(op) && r->n_kernel < 0)
            return refuse(r, "no kernel_shape", NULL);
        return true;
    }
    case XF_OP_CAST:
    case XF_OP_BIT_CAST:
        return a->to != XF_DT_UNDEFINED || refuse(r, "no 'to' attribute", NULL);
    case XF_OP_CONCAT_FROM_SEQUENCE:
        return r->has_axis || refuse(r, "no 'axis' attribute", NULL);
    case XF_OP_BIT_SHIFT:
        return r->has_direction || refuse(r, "no 'direction' attribute", NULL);
    case XF_OP_PRELU:
        a->prelu_channels = r->ctx->opset < 7;
        return true;
    case XF_OP_BATCH_NORM: /* before 14, more outputs meant training in forms not modelled */
        if (!a->bn_training)
            a->bn_momentum = 0.9f;
        if (n_outputs > 1 && !a->bn_training)
            return refuse(r, "running statistics outputs outside training_mode", NULL);
        return !a->bn_training || r->ctx->opset >= 14 || refuse(r, "training_mode before opset 14", NULL);
    case XF_OP_RNN:
    case XF_OP_LSTM:
    case XF_OP_GRU:
    case XF_OP_MS_DYNAMIC_QUANTIZE_LSTM:
        return xfp_rnn_attrs_finish(&a->rnn, &r->rnn, r->why, r->why_len);
    case XF_OP_RESIZE: /* opset 10: asymmetric, and its own nearest rounding */
        if (r->ctx->opset >= 11)
            return true;
        a->resize_coord = 1;
        a->resize_nearest = a->resize_mode == 0 ? 4 : 0;
        return a->resize_mode < 2 || refuse(r, "cubic mode before opset 11", NULL);
    case XF_OP_UPSAMPLE: /* opset 1's experimental form is not modelled */
        return r->ctx->opset >= 7 || refuse(r, "Upsample before opset 7", NULL);
    case XF_OP_ROI_ALIGN: /* opset 10's RoiAlign is output_half_pixel, and says nothing of it */
        if (r->ctx->opset < 16 && r->has_roi_coord)
            return refuse(r, "coordinate_transformation_mode before opset 16", NULL);
        if (r->ctx->opset < 16)
            a->roi_output_half_pixel = 1;
        return true;
    case XF_OP_GRID_SAMPLE:
        return r->ctx->opset >= 16 || refuse(r, "GridSample before opset 16", NULL);
    case XF_OP_GROUP_NORM:
    case XF_OP_LRN:
        return r->has_required || refuse(r, op == XF_OP_LRN ? "no size attribute" : "no num_groups attribute", NULL);
    case XF_OP_ONE_HOT: /* negative indices count from the end from opset 11 */
        a->onehot_legacy = r->ctx->opset < 11;
        return true;
    case XF_OP_CONCAT:
        if (!r->has_axis && r->ctx->opset < 4)
            a->axis = 1;
        return true;
    case XF_OP_SOFTMAX:
    case XF_OP_LOG_SOFTMAX:
    case XF_OP_HARDMAX:
        if (r->ctx->opset < 13) {
            a->softmax_legacy = true;
            if (!r->has_axis)
                a->axis = 1;
        }
        return true;
    case XF_OP_SPLIT:
        if (a->n_split > 0 && a->n_split != n_outputs)
            return refuse(r, "split list does not match the outputs", NULL);
        if (a->num_outputs > 0 && a->num_outputs != n_outputs)
            return refuse(r, "num_outputs does not match the outputs", NULL);
        return true;
    case XF_OP_MS_ATTENTION:
    case XF_OP_MS_QATTENTION:
    case XF_OP_MS_MHA:
    case XF_OP_MS_EMBED_LAYER_NORM:
    case XF_OP_MS_ROTARY_EMB:
        return xfp_attn_attrs_finish(op, a, r->why, r->why_len);
    case XF_OP_MS_MATMUL_NBITS:
    case XF_OP_MS_GQA:
    case XF_OP_MS_GATHER_BLOCK_QUANTIZED:
        return xfp_llm_attrs_finish(op, a, r->why, r->why_len);
    case XF_OP_DFT:
        xfp_signal_attrs_finish(op, r->ctx->opset, a);
        return true;
    case XF_OP_COL2IM: case XF_OP_CENTER_CROP_PAD: case XF_OP_AFFINE_GRID: case XF_OP_DEFORM_CONV:
    case XF_OP_MAX_ROI_POOL:
        return xfp_image_attrs_finish(op, r->ctx->opset, a, r->why, r->why_len);
    case XF_OP_CROP:
        return xfp_legacy_attrs_finish(op, a, r->why, r->why_len);
    case XF_OP_CAUSAL_CONV_WITH_STATE: case XF_OP_LINEAR_ATTENTION:
        return xfp_state_attrs_finish(op, r->ctx->opset, a, r->why, r->why_len);
    case XF_OP_SLICE:
        if (!a->has_slice_attrs && r->n_ends < 0 && !a->has_slice_axes)
            return true;
        if (r->n_starts < 0 || r->n_ends != r->n_starts || (a->has_slice_axes && r->n_slice_axes != r->n_starts))
            return refuse(r, "starts/ends/axes of different lengths", NULL);
        a->n_slice = r->n_starts;
        return true;
    default:
        return true;
    }
}

xf_status xfp_attrs_import(xf_op op, const Onnx__NodeProto *np, int n_outputs, const xfp_attr_ctx *ctx,
                           xf_attrs *a, bool *known, char *why, size_t why_len, xf_error *err)
{
    xf_attrs_default(op, a);
    reader r = {.ctx = ctx, .a = a, .why = why, .why_len = why_len, .err = err, .status = XF_OK,
                .n_kernel = -1, .n_strides = -1, .n_pads = -1, .n_dilations = -1,
                .n_output_padding = -1, .n_output_shape = -1,
                .n_starts = -1, .n_ends = -1, .n_slice_axes = -1,
                .contrib = {.why = why, .why_len = why_len}};
    why[0] = '\0';
    *known = true;
    xfp_name_map seen = {0};
    for (size_t i = 0; i < np->n_attribute && *known; i++) {
        const Onnx__AttributeProto *at = np->attribute[i];
        if (!at->name || !at->name[0]) {
            *known = refuse(&r, "an attribute without a name", NULL);
            break;
        }
        if (xfp_map_get(&seen, at->name) >= 0) {
            *known = refuse(&r, "attribute '%s' is given twice", at->name);
            break;
        }
        if (!xfp_map_put(&seen, at->name, 1)) {
            r.status = xf_error_set(err, XF_ERR_NOMEM, "out of memory");
            break;
        }
        *known = take_attr(&r, op, at);
    }
    xfp_map_free(&seen);
    if (r.status == XF_OK && *known)
        *known = finish(&r, op, n_outputs);
    if (r.status != XF_OK || !*known) {
        xf_tensor_release(a->value);
        a->value = NULL;
    }
    return r.status;
}
