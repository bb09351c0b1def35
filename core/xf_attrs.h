/* xflow core: node attributes (the xf_attrs block every node carries) and
 * the helpers that interpret them: transposed convolution extents and the
 * layouts of quantization parameters.  Part of xf_core.h, which includes it
 * after the dtypes, shapes, tensors and ops it uses; include xf_core.h. */
#ifndef XF_ATTRS_H
#define XF_ATTRS_H

#ifndef XF_CORE_H
#error "include xf_core.h, not xf_attrs.h"
#endif

/* ---------------------------------------------------------------- attributes */

enum { XF_LP_POOL_MAX_P = 1 << 16 }; /* LpPool's and GlobalLpPool's largest p */

typedef enum xf_auto_pad {
    XF_AUTO_PAD_NOTSET = 0,
    XF_AUTO_PAD_VALID,
    XF_AUTO_PAD_SAME_UPPER,
    XF_AUTO_PAD_SAME_LOWER
} xf_auto_pad;

typedef enum xf_activation {
    XF_ACT_NONE = 0,
    XF_ACT_RELU,
    XF_ACT_SIGMOID,
    XF_ACT_TANH
} xf_activation;

typedef enum xf_pad_mode { XF_PAD_CONSTANT = 0, XF_PAD_REFLECT, XF_PAD_EDGE, XF_PAD_WRAP /* 19 */ } xf_pad_mode;

/* How ScatterElements and ScatterND combine an update with the element
 * it lands on (ONNX's reduction attribute). */
typedef enum xf_reduction { XF_REDUCE_NONE = 0, XF_REDUCE_ADD, XF_REDUCE_MUL, XF_REDUCE_MAX, XF_REDUCE_MIN } xf_reduction;

/* RNN, LSTM and GRU: the activation functions ONNX lists, and how ONNX Runtime
 * reads activation_alpha and activation_beta: in order, one value for each
 * function that takes it, the defaults below where the list runs out. */
typedef enum xf_rnn_act {
    XF_RNN_DEFAULT = 0, /* the op's own default for that place */
    XF_RNN_RELU,
    XF_RNN_TANH,
    XF_RNN_SIGMOID,
    XF_RNN_AFFINE,
    XF_RNN_LEAKY_RELU,
    XF_RNN_THRESHOLDED_RELU,
    XF_RNN_SCALED_TANH,
    XF_RNN_HARD_SIGMOID,
    XF_RNN_ELU,
    XF_RNN_SOFTSIGN,
    XF_RNN_SOFTPLUS,
    XF_RNN_ACT_COUNT
} xf_rnn_act;

typedef struct xf_rnn_act_info {
    const char *name; /* ONNX's spelling (matched without regard to case) */
    bool takes_alpha, takes_beta;
    float alpha, beta; /* defaults */
} xf_rnn_act_info;
extern const xf_rnn_act_info xf_rnn_acts[XF_RNN_ACT_COUNT];

enum { XF_RNN_MAX_ACTS = 6 }; /* LSTM's f, g, h for both directions */

typedef struct xf_rnn_attrs {
    int64_t hidden_size;     /* 0 = not given: R's shape says */
    int direction;           /* 0 forward, 1 reverse, 2 bidirectional */
    int layout;              /* 1: batch first (opset 14) */
    int linear_before_reset; /* GRU */
    int input_forget;        /* LSTM: the forget gate is 1 - the input gate */
    bool has_clip;           /* gate inputs are clamped to [-clip, clip] */
    float clip;
    int n_acts;              /* 0: the op's defaults; else 3 (LSTM), 2 (GRU) or 1 (RNN) per direction */
    unsigned char acts[XF_RNN_MAX_ACTS]; /* xf_rnn_act */
    /* each function's parameters, defaults filled in (0 where it takes none) */
    float act_alpha[XF_RNN_MAX_ACTS], act_beta[XF_RNN_MAX_ACTS];
} xf_rnn_attrs;

bool xf_rnn_attrs_equal(const xf_rnn_attrs *a, const xf_rnn_attrs *b);

/* The attention family of ONNX Runtime's contrib ops: Attention,
 * MultiHeadAttention, RotaryEmbedding (EmbedLayerNormalization keeps its
 * epsilon in xf_attrs.epsilon); ONNX's Attention and RotaryEmbedding. */
typedef struct xf_attn_attrs {
    int64_t num_heads;       /* Attention, MultiHeadAttention: required; RotaryEmbedding: 0 = not given */
    int unidirectional;      /* causal masking */
    int n_qkv_sizes;         /* Attention's qkv_hidden_sizes: 0 (D = weights' columns / 3) or 3 */
    int64_t qkv_sizes[3];
    float mask_filter_value; /* what masked positions add to the scores (-10000) */
    float scale;             /* Attention, MultiHeadAttention: 0 = 1/sqrt(head size); RotaryEmbedding: 1 */
    int interleaved;         /* RotaryEmbedding: rotate pairs (0, 1), (2, 3), ... (else halves) */
    int64_t rotary_dim;      /* RotaryEmbedding's rotary_embedding_dim: 0 = the head size */
    int mask_index_type;     /* EmbedLayerNormalization: 1 (0: no mask_index) */
    /* GroupQueryAttention (num_heads, scale and interleaved -- its
     * rotary_interleaved -- above) */
    int64_t kv_num_heads;      /* required */
    int64_t local_window_size; /* -1: none */
    int do_rotary, smooth_softmax;
    float softcap;             /* 0: none */
    /* MatMulNBits: K, N, bits, block_size and accuracy_level (0: unset);
     * GatherBlockQuantized: bits and block_size */
    int64_t nb_k, nb_n, nb_bits, nb_block, nb_accuracy;
    /* GatherBlockQuantized that the cpu backend makes of a DequantizeLinear
     * and a Gather (never imported or written): an index out of range is
     * an error, as Gather's, rather than zeros */
    int gbq_checked;
    /* ONNX's Attention (opset 23): q_num_heads, kv_num_heads, is_causal,
     * scale (0: 1/sqrt(head size)) and softcap are the fields above;
     * qk_matmul_output_mode 0 to 3; softmax_precision (0: not given);
     * opset 25's left_window_size and right_window_size (-1: unbounded) */
    int qk_mode;
    xf_dtype softmax_precision;
    int64_t left_window, right_window;
    /* LinearAttention (opset 27): q_num_heads, kv_num_heads and scale (0:
     * 1/sqrt(d_k)) are num_heads, kv_num_heads and scale above;
     * update_rule an xf_linear_rule (gated_delta); chunk_size (64), a
     * tuning hint that changes no value.  CausalConvWithState (opset 27):
     * activation silu or swish (else none) */
    int linear_rule;
    int64_t chunk_size;
    int conv_silu;
} xf_attn_attrs;

/* LinearAttention's update rules: bit 0 decays the state (gated), bit 1
 * corrects it toward the value (delta). */
typedef enum xf_linear_rule {
    XF_LINEAR_PLAIN = 0,
    XF_LINEAR_GATED = 1,
    XF_LINEAR_DELTA = 2,
    XF_LINEAR_GATED_DELTA = 3
} xf_linear_rule;

bool xf_attn_attrs_equal(const xf_attn_attrs *a, const xf_attn_attrs *b);
/* RotaryEmbedding on input x (B, S, D) or (B, N, S, H) with a cos/sin cache
 * (M, R / 2): the heads N, head size H and rotated dims R as ONNX Runtime
 * derives them (H from the cache when rotary_embedding_dim is 0, else
 * D / num_heads); false when they do not agree. */
bool xf_rotary_layout(const xf_attn_attrs *t, const xf_shape *x, const xf_shape *cache, int64_t *heads,
                      int64_t *head_size, int64_t *rot);

/* DFT's axis (in [-rank, -2] or [0, rank - 2]; the last dim holds real
 * and imaginary parts) normalized into *out; false when out of range. */
bool xf_dft_axis_valid(int64_t axis, int rank, int *out);

/* The small fixed attribute block of a known op.  Fields that an op does not
 * use stay at their defaults (xf_attrs_default).  The importer fills it from
 * the ONNX attributes; a known op with an attribute that this block cannot
 * represent is imported as an opaque node instead, so nothing is ever lost.
 * Parameters that newer opsets pass as inputs (Reshape shape, Slice starts,
 * Pad pads, Clip min/max, Squeeze axes, ...) stay inputs; the older attribute
 * forms are stored here and the has_* flags say which form a node uses. */
typedef struct xf_attrs {
    /* Conv, pools; Crop (opsets 1-9): its border (left, top, right,
     * bottom) in pads[0..3], its scale (height, width) in kernel[0..1]
     * with n_spatial 2 when given */
    int n_spatial;                     /* number of entries set in kernel/strides/...; 0 = none given */
    int64_t kernel[XF_MAX_SPATIAL];    /* kernel_shape; 0 = take it from the weight */
    int64_t strides[XF_MAX_SPATIAL];   /* default 1 */
    int64_t pads[2 * XF_MAX_SPATIAL];  /* ONNX order: begins then ends; default 0 */
    int64_t dilations[XF_MAX_SPATIAL]; /* default 1 */
    int64_t group;                     /* default 1; GroupNormalization's num_groups (required) */
    /* DeformConv: Conv's fields and offset_group (1; 0 for other ops); Col2Im: strides, pads, dilations */
    int64_t offset_group;
    xf_auto_pad auto_pad;
    int ceil_mode, count_include_pad;
    int storage_order;                 /* MaxPool's Indices: 1 = spatial axes column-major (last one slowest) */
    xf_activation activation; /* fused activation after a Conv (xflow-internal) */
    /* ConvTranspose (0 for every other op): output_padding, and the
     * spatial extents of output_shape when has_output_shape (which then
     * decides the pads; see xf_conv_transpose_axis) */
    int64_t output_padding[XF_MAX_SPATIAL];
    int64_t output_shape[XF_MAX_SPATIAL];
    bool has_output_shape;

    /* axis / axes / perm */
    int64_t axis;             /* Concat, Split, Gather, Flatten, Softmax, LayerNorm, ArgMax, Hardmax,
                               * LpNormalization, OneHot, ...; op's own default */
    int n_axes;               /* Squeeze/Unsqueeze/Reduce*: attribute form; MeanVarianceNormalization
                               * (default [0, 2, 3]) */
    int64_t axes[XF_MAX_DIMS]; /* ReverseSequence: [batch_axis, time_axis] (n_axes 2) */
    bool has_axes;            /* axes came as an attribute (CenterCropPad's too) */
    int n_perm;               /* Transpose; 0 = reverse */
    int64_t perm[XF_MAX_DIMS];
    int keepdims;             /* Reduce*: default 1 */
    int noop_with_empty_axes; /* Reduce*: default 0 */
    int num_outputs;          /* Split (opset 18): 0 = not given */
    int n_split;              /* Split: sizes given as an attribute (opset < 13) */
    int64_t split[64];
    int allowzero;            /* Reshape */
    int fmod;                 /* Mod: 1 = C's fmod (sign of the dividend), 0 = sign of the divisor */
    /* Resize (opset >= 11): mode 0 nearest, 1 linear, 2 cubic; coordinate
     * mode 0 half_pixel, 1 asymmetric, 2 align_corners, 3 pytorch_half_pixel,
     * 4 tf_crop_and_resize, 5 half_pixel_symmetric; nearest mode
     * 0 round_prefer_floor, 1 round_prefer_ceil, 2 floor, 3 ceil,
     * 4 opset 10's (floor where a dim grows, ceil where it shrinks);
     * exclude_outside; antialias; keep_aspect_ratio_policy 0 stretch,
     * 1 not_larger, 2 not_smaller.  Its cubic_coeff_a is alpha (default
     * -0.75), its extrapolation_value beta (default 0), its axes (opset 18)
     * has_axes, n_axes and axes.  Opset 10's Resize (X, scales) is this
     * node with no roi, asymmetric, nearest mode 4 when nearest.
     * Upsample: its mode, always asymmetric and floor */
    int resize_mode, resize_coord, resize_nearest, resize_exclude, resize_antialias, resize_keep;
    int batch_dims;           /* GatherND */
    int topk_smallest;        /* TopK: largest = 0 */
    int topk_unsorted;        /* TopK: sorted = 0 (which leaves the order open: kernels sort anyway);
                               * Unique: sorted = 0 (the order of first occurrence) */
    int reduction;            /* ScatterElements, ScatterND: an xf_reduction */
    xf_rnn_attrs rnn;         /* RNN, LSTM, GRU */
    /* QuantizeLinear, DequantizeLinear (axis above, default 1) */
    int64_t block_size;       /* opset 21: 0 = not blocked; DepthToSpace, SpaceToDepth: blocksize */
    xf_dtype output_dtype;    /* QuantizeLinear 21, DequantizeLinear 23: 0 = not given */
    int no_saturate;          /* QuantizeLinear, Cast and CastLike 19: saturate = 0 (which only float8 outputs
                               * heed) */
    int round_mode;           /* Cast and CastLike 24: an xf_round_mode (float8e8m0 outputs heed it) */
    /* RoiAlign (0 for every other op): mode max (else avg); output_height,
     * output_width (default 1); sampling_ratio (0: adaptive); spatial_scale
     * (default 1); coordinate_transformation_mode output_half_pixel (opset
     * 10's only behaviour), else half_pixel (opset 16's default);
     * MaxRoiPool: pooled_shape (required) and spatial_scale (default 1) */
    int roi_max;
    int64_t roi_output_h, roi_output_w, roi_sampling_ratio;
    float roi_spatial_scale;
    int roi_output_half_pixel;
    int grid_mode, grid_padding, grid_align_corners; /* GridSample: linear/nearest/cubic, zeros/border/reflection;
                                                      * AffineGrid: align_corners */
    int center_point_box;     /* NonMaxSuppression: boxes are [x_center, y_center, width, height] */
    int isinf_no_neg, isinf_no_pos; /* IsInf: detect_negative = 0, detect_positive = 0 */
    int gelu_tanh;            /* Gelu (opset 20): approximate = "tanh" */
    int shift_right;          /* BitShift: direction "RIGHT" (else "LEFT") */
    bool prelu_channels;      /* PRelu before opset 7: a 1-D slope runs along X's axis 1 (channels) */
    int select_last_index;    /* ArgMax, ArgMin (opset 12): the last of equal extremes */
    int cumsum_exclusive, cumsum_reverse; /* CumSum, CumProd */
    int64_t lrn_size;         /* LRN: the channels summed over (required) */
    float lrn_bias;           /* LRN (1) */
    int lp_p;                 /* LpNormalization: the norm's order, 1 or 2 (2); LpPool, GlobalLpPool: 1 to
                               * XF_LP_POOL_MAX_P (2) */
    int trilu_lower;          /* Trilu: upper = 0 (keep the lower triangle) */
    int depth_crd;            /* DepthToSpace, SpaceToDepth (opset 28): mode CRD (else DCR) */
    int64_t eye_k;            /* EyeLike: k, the diagonal of ones (> 0: above the main one) */
    int onehot_legacy;        /* OneHot before opset 11: negative indices are out of range */
    bool has_axis;            /* Compress, Unique: axis given (else they work on the flattened input) */
    bool softmax_legacy;      /* Softmax/LogSoftmax/Hardmax opset < 13: coerce to 2-D at axis */
    /* ONNX Runtime's quantized ops (com.microsoft) */
    int channels_last;        /* QLinearGlobalAveragePool, QLinearAveragePool: channels come last (NHWC) */
    int64_t ms_opset;         /* QLinearSoftmax: opset (required), whose Softmax it follows (< 13:
                               * softmax_legacy; its default axis 1, else -1) */
    /* DFT: inverse, onesided (0) and axis (`axis`: opset 17's attribute,
     * default 1; from opset 20 the default -2 where no axis input is
     * given); STFT: onesided (1); HannWindow, HammingWindow,
     * BlackmanWindow, MelWeightMatrix: output_datatype (output_dtype, 0:
     * float); the windows: periodic = 0 (window_symmetric) */
    int dft_inverse, dft_onesided;
    int window_symmetric;

    /* scalars */
    float alpha, beta;        /* Gemm (1,1), LeakyRelu (0.01), Elu (1), HardSigmoid (0.2, 0.5),
                                 ThresholdedRelu alpha (1), Celu alpha (1), Selu alpha and
                                 gamma (1.6733, 1.0507), Shrink lambd and bias (0.5, 0),
                                 LRN (1e-4, 0.75), Swish and SwiGLU alpha (1) */
    float epsilon;            /* BatchNorm, LayerNorm, InstanceNorm, GroupNorm (1e-5) */
    /* BatchNormalization 14+: training_mode (the batch's statistics; outputs
     * 1 and 2 the running mean and variance moved by momentum, kept at its
     * default 0.9 when not training) */
    int bn_training;
    float bn_momentum;
    int trans_a, trans_b;     /* Gemm */
    xf_dtype to;              /* Cast, BitCast; EyeLike's dtype (0: the input's) */
    int64_t start, end;       /* Shape (opset 15): end == INT64_MAX when absent */
    bool has_end;

    /* Pad (opset < 11 attribute form); TensorScatter: pad_mode XF_PAD_WRAP is
     * mode circular (axis: its axis, default -2) */
    xf_pad_mode pad_mode;
    float pad_value;
    int n_pads;
    int64_t pad_pads[2 * XF_MAX_DIMS];
    bool has_pads;

    /* Clip (opset < 11 attribute form) */
    float clip_min, clip_max;
    bool has_clip_attrs;

    /* Slice (opset 1 attribute form) */
    int n_slice;
    int64_t slice_starts[XF_MAX_DIMS], slice_ends[XF_MAX_DIMS], slice_axes[XF_MAX_DIMS];
    bool has_slice_attrs, has_slice_axes;

    /* ConstantOfShape value (NULL = float 0); Einsum's equation (a string
     * scalar); Upsample's scales before opset 9 (floats, NULL from opset 9,
     * where they are an input); ImageScaler's bias (floats, NULL when
     * absent; its scale is alpha); owned reference */
    xf_tensor *value;

    /* ONNX Runtime's contrib ops: FusedConv's and FusedGemm's activation
     * (an xf_ms_act) and its parameters (LeakyRelu alpha; Clip min, max;
     * HardSigmoid alpha, beta); FusedMatMul's transBatchA, transBatchB
     * (alpha, transA, transB are Gemm's fields) */
    int ms_act;
    float ms_act_params[2];
    int trans_batch_a, trans_batch_b;
    xf_attn_attrs attn; /* ONNX Runtime's attention family (contrib ops) */
    /* the sequence ops: SequenceEmpty's dtype is `to`, SplitToSequence's
     * axis and keepdims are `axis` and `keepdims`, ConcatFromSequence's
     * axis is `axis` and new_axis this */
    int new_axis;
    /* Optional's type attribute: opt_type 0 when absent, else 1 + the
     * xf_value_kind it would hold (tensor or sequence), with element type
     * `to` and element shape opt_shape (ndim -1: not declared) */
    int opt_type;
    xf_shape opt_shape;
    /* the random ops: mean and scale, or low and high, in rand_a, rand_b (0, 1); seed when
     * rand_has_seed; RandomNormal's and RandomUniform's shape (required); Multinomial's
     * sample_size (1); the output type in `to` (0: float, the input's, or int32) */
    float rand_a, rand_b, rand_seed;
    bool rand_has_seed, rand_has_shape;
    int64_t sample_size;
    xf_shape rand_shape;
} xf_attrs;

/* The activations ONNX Runtime's FusedConv (activation, activation_params)
 * and FusedGemm (activation, activation_alpha, activation_beta) apply. */
typedef enum xf_ms_act {
    XF_MS_ACT_NONE = 0,
    XF_MS_ACT_RELU,
    XF_MS_ACT_TANH,
    XF_MS_ACT_SIGMOID,
    XF_MS_ACT_LEAKY_RELU,
    XF_MS_ACT_CLIP,
    XF_MS_ACT_HARD_SIGMOID,
    XF_MS_ACT_COUNT
} xf_ms_act;
/* ONNX's name of each (NULL for none) and how many parameters it takes. */
extern const char *const xf_ms_act_names[XF_MS_ACT_COUNT];
extern const int xf_ms_act_n_params[XF_MS_ACT_COUNT];
/* The activation applied to v. */
double xf_ms_act_apply(int act, const float *params, double v);

/* Defaults for op: alpha/beta/epsilon/axis/keepdims set as ONNX defines them. */
void xf_attrs_default(xf_op op, xf_attrs *a);
/* RandomNormal(Like), RandomUniform(Like), Bernoulli and Multinomial. */
bool xf_op_is_random(xf_op op);

/* ---------------------------------------------------------------- transposed convolution */

/* ConvTranspose along spatial axis i (of ns) for an input extent `in` and
 * a kernel extent k: the output extent, and the pads cut from the
 * beginning and end of the full result, whose s * (in - 1) +
 * output_padding + (k - 1) * d + 1 positions every input position reaches.
 * Explicit pads are the attribute's; output_shape (or auto_pad SAME, whose
 * output is in * s) gives the total and ONNX's rule splits it: SAME_UPPER
 * cuts the odd position at the end, otherwise at the beginning.  An output
 * longer than the full result (a negative total) grows at the end, with
 * positions no input reaches (bias only), as in ONNX's test data and ONNX
 * Runtime.  On attributes out of range returns false with the reason in
 * why. */
bool xf_conv_transpose_axis(const xf_attrs *a, int ns, int i, int64_t in, int64_t k, int64_t *out,
                            int64_t *pad_begin, int64_t *pad_end, char *why, size_t why_len);

/* ---------------------------------------------------------------- quantization */

/* Which scale (and zero point) each element of QuantizeLinear's or
 * DequantizeLinear's x uses.  x is seen as outer x dim x inner around the
 * axis; element (o, d, i) takes scale element
 *     o * outer_stride + (d / block) * block_stride + i * inner_stride,
 * so per-tensor quantization has every stride 0, per-axis block 1 and
 * block_stride 1, blocked quantization the dense strides of the scale. */
typedef struct xf_quant_layout {
    int64_t outer, dim, inner;
    int64_t block;
    int64_t outer_stride, block_stride, inner_stride;
} xf_quant_layout;

/* Checks the shapes of the scale and zero point (NULL when absent) against
 * x for the node's axis and block_size: a scalar (or one-element vector)
 * scale is per-tensor, a 1-D one per-axis, one of x's rank blocked (which
 * needs block_size).  On a mismatch returns false with the reason in why. */
bool xf_quant_layout_make(const xf_shape *x, const xf_shape *scale, const xf_shape *zero_point, int64_t axis,
                          int64_t block_size, xf_quant_layout *l, char *why, size_t why_len);

/* How a scale or zero point of MatMulInteger's or QLinearMatMul's operand
 * a (matrices M x K) or b (K x N) applies: to the whole tensor (a scalar
 * or one-element vector), to each row of a or column of b (a vector of M
 * or N entries), or to each row or column of each matrix (the operand's
 * shape with K made 1).  Element (matrix q of the operand, row or column
 * r) takes parameter element 0, r, or q * M + r (q * N + r). */
typedef enum xf_qparam_form { XF_QPARAM_TENSOR = 0, XF_QPARAM_VECTOR, XF_QPARAM_MATRICES } xf_qparam_form;

/* The form of param for operand a (columns false) or b (columns true);
 * false with the reason in why when it has none of them. */
bool xf_qmatmul_param(const xf_shape *operand, const xf_shape *param, bool columns, xf_qparam_form *form,
                      char *why, size_t why_len);

#endif /* XF_ATTRS_H */
