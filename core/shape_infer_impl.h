/* Private to core: the context one node's shape inference works in and the
 * helpers shape_infer.c, shape_infer_values.c and shape_infer_nn.c share (canon.c uses the node
 * label). */
#ifndef XF_SHAPE_INFER_IMPL_H
#define XF_SHAPE_INFER_IMPL_H

#include "xf_core.h"

typedef struct xf_infer_ctx {
    xf_graph *g;
    int index; /* node index, for messages */
    xf_node *node;
    int64_t opset;
    const xf_tensor *const *input_values; /* may be NULL */
    xf_error *err;
} xf_infer_ctx;

/* One rule per op: sets the shapes of the node's outputs (dtypes are set
 * beforehand, in one place) or fails naming the mismatch. */
typedef xf_status (*xf_infer_fn)(xf_infer_ctx *c);

/* Text of a shape for messages; a struct so that it can be formed inside
 * the argument list of a printf-style call. */
typedef struct xf_shape_text {
    char s[200];
} xf_shape_text;
xf_shape_text xf_infer_text(const xf_shape *s);

/* "node 'conv1' (Conv)", or "node #3 (Conv)" for a node without a name:
 * how every message of core names a node.  Returns buf. */
const char *xf_infer_node_label(const xf_graph *g, int node, char *buf, size_t n);

/* Fails with status, the message prefixed by the node's label:
 * "node 'conv1' (Conv): ..." (or "node #3 (Conv): ..." without a name). */
xf_status xf_infer_fail(const xf_infer_ctx *c, xf_status status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Writes the message to why (for helpers that report to a caller, which
 * names the node); returns false, for use in `return`. */
bool xf_infer_refuse(char *why, size_t why_len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

bool xf_infer_has(const xf_infer_ctx *c, int i); /* input i present */
/* Dtype of input i (the actual tensor's when input_values gives one);
 * XF_DT_UNDEFINED when absent or not known. */
xf_dtype xf_infer_dtype(const xf_infer_ctx *c, int i);
/* Shape and dtype of input i (the actual tensor's when input_values gives one). */
const xf_shape *xf_infer_shape(const xf_infer_ctx *c, int i);
/* Constant value of input i (input_values, else an initializer that is not
 * a graph input), or NULL when not known at this point. */
const xf_tensor *xf_infer_value(const xf_infer_ctx *c, int i);

/* Gives the untyped outputs of an opaque If, Loop, Scan or SequenceMap the
 * element types of the subgraph outputs they come from (never fails). */
void xf_infer_flow_dtypes(xf_infer_ctx *c);

/* Sets output k's shape (ignores omitted outputs). */
void xf_infer_set(xf_infer_ctx *c, int k, const xf_shape *s);
/* Every output's shape becomes unknown: a parameter's value is not known. */
xf_status xf_infer_unknown(xf_infer_ctx *c);

/* Normalizes axis into [0, rank), or [0, rank] when inclusive (Flatten). */
xf_status xf_infer_axis(const xf_infer_ctx *c, const char *what, int64_t axis, int rank,
                        bool inclusive, int *out);
/* Numpy (multidirectional) broadcasting of a and b. */
xf_status xf_infer_broadcast(const xf_infer_ctx *c, const xf_shape *a, const xf_shape *b,
                             xf_shape *out);
/* Whether `from` broadcasts to `to` without changing `to` (Gemm's C,
 * LayerNormalization's scale). */
bool xf_infer_broadcasts_to(const xf_shape *from, const xf_shape *to);

/* Axes of Squeeze, Unsqueeze and Reduce*: the axes input when the node has
 * one (Squeeze/Unsqueeze opset 13+, ReduceSum 13+, the rest 18+), else the
 * attribute form.  *n = -1: the input's value is not known here;
 * *given = false: the node uses neither form. */
xf_status xf_infer_read_axes(xf_infer_ctx *c, int64_t *axes, int *n, bool *given);
/* Marks axes[0..n) (normalized against rank) in mark[]; repeated axes are
 * an error where they change the result (unique), else harmless. */
xf_status xf_infer_mark_axes(xf_infer_ctx *c, const int64_t *axes, int n, int rank, bool unique,
                             bool *mark);

/* "[1,-1,0]" for parameter vectors in messages. */
xf_shape_text xf_infer_ints_text(const int64_t *v, int n);
/* Reads the integer parameter vector of input i (Reshape's shape, Slice's
 * starts, Squeeze's axes, ...): *n = -1 when its value is not known here.
 * A scalar counts as one entry; more than cap entries is an error. */
xf_status xf_infer_read_ints(const xf_infer_ctx *c, int i, const char *what, int64_t *vals, int cap, int *n);
/* Product of n dims, saturating at INT64_MAX like xf_shape_numel. */
int64_t xf_infer_dims_product(const int64_t *dims, int n);
/* A scalar, or a one-element vector (what several exporters write). */
bool xf_infer_scalar_like(const xf_shape *s);
int64_t xf_infer_clamp(int64_t v, int64_t lo, int64_t hi);

/* The sequence ops (shape_infer_seq.c): output kinds, dtypes and shapes. */
xf_status xf_infer_sequence(xf_infer_ctx *c);
/* The rules in shape_infer_values.c. */
xf_status xf_infer_expand(xf_infer_ctx *c);
xf_status xf_infer_constant_of_shape(xf_infer_ctx *c);
xf_status xf_infer_shape_op(xf_infer_ctx *c);
xf_status xf_infer_size(xf_infer_ctx *c);
xf_status xf_infer_range(xf_infer_ctx *c);
xf_status xf_infer_non_zero(xf_infer_ctx *c);

/* Data-movement rules (shape_infer_movement.c). */
xf_status xf_infer_concat(xf_infer_ctx *c);
xf_status xf_infer_split(xf_infer_ctx *c);
xf_status xf_infer_transpose(xf_infer_ctx *c);
xf_status xf_infer_reshape(xf_infer_ctx *c);
xf_status xf_infer_flatten(xf_infer_ctx *c);
xf_status xf_infer_squeeze(xf_infer_ctx *c);
xf_status xf_infer_unsqueeze(xf_infer_ctx *c);
xf_status xf_infer_gather(xf_infer_ctx *c);
xf_status xf_infer_gather_elements(xf_infer_ctx *c);
xf_status xf_infer_scatter_nd(xf_infer_ctx *c);
xf_status xf_infer_scatter_elements(xf_infer_ctx *c);
xf_status xf_infer_gather_nd(xf_infer_ctx *c);
xf_status xf_infer_resize(xf_infer_ctx *c);
xf_status xf_infer_upsample(xf_infer_ctx *c);
xf_status xf_infer_grid_sample(xf_infer_ctx *c);
xf_status xf_infer_top_k(xf_infer_ctx *c);
xf_status xf_infer_slice(xf_infer_ctx *c);
xf_status xf_infer_pad(xf_infer_ctx *c);
/* The rules in shape_infer_nn.c. */
xf_status xf_infer_conv(xf_infer_ctx *c);
/* Conv's rule on the node's inputs xi (X), wi (W) and bi (the bias; -1:
 * none), for the ops that take more operands (ConvInteger, QLinearConv). */
xf_status xf_infer_conv_operands(xf_infer_ctx *c, int xi, int wi, int bi);
xf_status xf_infer_conv_transpose(xf_infer_ctx *c);
xf_status xf_infer_pool(xf_infer_ctx *c);
xf_status xf_infer_global_pool(xf_infer_ctx *c);
xf_status xf_infer_max_unpool(xf_infer_ctx *c);
xf_status xf_infer_batch_norm(xf_infer_ctx *c);
xf_status xf_infer_layer_norm(xf_infer_ctx *c);
xf_status xf_infer_softmax(xf_infer_ctx *c);
xf_status xf_infer_reduce(xf_infer_ctx *c);
xf_status xf_infer_matmul(xf_infer_ctx *c);
/* MatMul's rule on inputs ai and bi (MatMulInteger, QLinearMatMul). */
xf_status xf_infer_matmul_operands(xf_infer_ctx *c, int ai, int bi);
/* The same for operands of shapes a and b. */
xf_status xf_infer_matmul_shapes(xf_infer_ctx *c, const xf_shape *a, const xf_shape *b);
/* ONNX Runtime's contrib ops (shape_infer_contrib.c) */
xf_status xf_infer_fused_conv(xf_infer_ctx *c);
xf_status xf_infer_fused_matmul(xf_infer_ctx *c);
xf_status xf_infer_bias_elementwise(xf_infer_ctx *c);
xf_status xf_infer_skip_layer_norm(xf_infer_ctx *c);
xf_status xf_infer_gemm(xf_infer_ctx *c);
xf_status xf_infer_rnn(xf_infer_ctx *c);
/* ArgMax/ArgMin, CumSum and the normalizations (shape_infer_norm.c). */
xf_status xf_infer_arg_reduce(xf_infer_ctx *c);
xf_status xf_infer_cumsum(xf_infer_ctx *c);
xf_status xf_infer_instance_norm(xf_infer_ctx *c);
xf_status xf_infer_group_norm(xf_infer_ctx *c);
xf_status xf_infer_mvn(xf_infer_ctx *c);
xf_status xf_infer_lrn(xf_infer_ctx *c);
xf_status xf_infer_lp_norm(xf_infer_ctx *c);
/* RoiAlign and NonMaxSuppression (shape_infer_detect.c). */
xf_status xf_infer_roi_align(xf_infer_ctx *c);
xf_status xf_infer_nms(xf_infer_ctx *c);
/* The movement and indexing rules (shape_infer_index.c). */
xf_status xf_infer_trilu(xf_infer_ctx *c);
xf_status xf_infer_det(xf_infer_ctx *c);
/* Input i, when present, has the shape (ndim, dims), else the rule fails
 * naming it `what` (shape_infer_attn.c). */
xf_status xf_infer_want_shape(xf_infer_ctx *c, int i, const char *what, int ndim, const int64_t *dims);
/* ONNX's Attention, RMSNormalization and RotaryEmbedding (shape_infer_opset23.c). */
xf_status xf_infer_attention_dtypes(xf_infer_ctx *c);
xf_status xf_infer_attention(xf_infer_ctx *c);
xf_status xf_infer_rms_norm(xf_infer_ctx *c);
xf_status xf_infer_rotary(xf_infer_ctx *c);
/* CausalConvWithState and LinearAttention (shape_infer_state.c): their
 * dtypes, their shapes. */
xf_status xf_infer_state_dtypes(xf_infer_ctx *c);
xf_status xf_infer_causal_conv(xf_infer_ctx *c);
xf_status xf_infer_linear_attention(xf_infer_ctx *c);
/* TensorScatter, BitCast and SwiGLU (shape_infer_opset28.c): the output
 * dtype (*out), checking the inputs'; the shape rules (BitCast's is
 * infer_same). */
xf_status xf_infer_opset28_dtype(xf_infer_ctx *c, xf_dtype *out);
xf_status xf_infer_tensor_scatter(xf_infer_ctx *c);
xf_status xf_infer_swiglu(xf_infer_ctx *c);
/* The random ops (shape_infer_random.c): the output dtype (*out), checking
 * the attributes' and the input's; the shape rule. */
xf_status xf_infer_random_dtype(xf_infer_ctx *c, xf_dtype *out);
xf_status xf_infer_random(xf_infer_ctx *c);
/* ImageScaler and Crop, of opsets 1 to 9 (shape_infer_legacy.c). */
xf_status xf_infer_image_scaler(xf_infer_ctx *c);
xf_status xf_infer_crop(xf_infer_ctx *c);
xf_status xf_infer_tile(xf_infer_ctx *c);
xf_status xf_infer_depth_space(xf_infer_ctx *c);
xf_status xf_infer_eye_like(xf_infer_ctx *c);
xf_status xf_infer_reverse_sequence(xf_infer_ctx *c);
xf_status xf_infer_one_hot(xf_infer_ctx *c);
xf_status xf_infer_compress(xf_infer_ctx *c);
xf_status xf_infer_unique(xf_infer_ctx *c);
/* Col2Im, CenterCropPad, AffineGrid, DeformConv, MaxRoiPool (shape_infer_image.c). */
xf_status xf_infer_col2im(xf_infer_ctx *c);
xf_status xf_infer_center_crop_pad(xf_infer_ctx *c);
xf_status xf_infer_affine_grid(xf_infer_ctx *c);
xf_status xf_infer_deform_conv(xf_infer_ctx *c);
xf_status xf_infer_max_roi_pool(xf_infer_ctx *c);
/* DFT, STFT and the windows (shape_infer_signal.c). */
xf_status xf_infer_dft(xf_infer_ctx *c);
xf_status xf_infer_stft(xf_infer_ctx *c);
xf_status xf_infer_window(xf_infer_ctx *c);
/* MelWeightMatrix: the output dtype (*out), checking the inputs'; the
 * shape rule. */
xf_status xf_infer_mel_dtype(xf_infer_ctx *c, xf_dtype *out);
xf_status xf_infer_mel_weight_matrix(xf_infer_ctx *c);
/* Einsum (shape_infer_einsum.c). */
xf_status xf_infer_einsum(xf_infer_ctx *c);
/* QuantizeLinear and DequantizeLinear (shape_infer_quant.c): the output
 * dtype (*out), checking the inputs' dtypes; and the shape rule. */
xf_status xf_infer_quant_dtype(xf_infer_ctx *c, xf_dtype *out);
xf_status xf_infer_quantize(xf_infer_ctx *c);
/* The integer ops of quantized models: DynamicQuantizeLinear,
 * MatMulInteger, ConvInteger, QLinearMatMul and QLinearConv (the output
 * dtype in *out, checking the inputs'), and their shape rules. */
xf_status xf_infer_qops_dtype(xf_infer_ctx *c, xf_dtype *out);
xf_status xf_infer_dynamic_quantize(xf_infer_ctx *c);
xf_status xf_infer_qmatmul(xf_infer_ctx *c);
xf_status xf_infer_qconv(xf_infer_ctx *c);
/* ONNX Runtime's attention family (shape_infer_attn.c): the dtype check,
 * which also sets the outputs' dtypes, and the shape rules. */
xf_status xf_infer_attn_dtypes(xf_infer_ctx *c);
/* QAttention: 8-bit input and weights with their scales and zero points. */
xf_status xf_infer_qattention_dtypes(xf_infer_ctx *c);
xf_status xf_infer_ms_attention(xf_infer_ctx *c);
xf_status xf_infer_ms_mha(xf_infer_ctx *c);
xf_status xf_infer_ms_embed_layer_norm(xf_infer_ctx *c);
xf_status xf_infer_ms_rotary(xf_infer_ctx *c);
/* MatMulNBits, GroupQueryAttention, MatMulIntegerToFloat,
 * DynamicQuantizeMatMul and GatherBlockQuantized (shape_infer_llm.c) */
xf_status xf_infer_nbits_dtypes(xf_infer_ctx *c);
xf_status xf_infer_ms_matmul_nbits(xf_infer_ctx *c);
xf_status xf_infer_ms_gqa(xf_infer_ctx *c);
xf_status xf_infer_int_matmul_float_dtypes(xf_infer_ctx *c);
xf_status xf_infer_ms_int_matmul_float(xf_infer_ctx *c);
xf_status xf_infer_ms_gather_block_quantized(xf_infer_ctx *c);

/* ONNX Runtime's quantized contrib ops (shape_infer_qcontrib.c). */
xf_status xf_infer_qcontrib_dtype(xf_infer_ctx *c, xf_dtype *out);
xf_status xf_infer_ms_qbinary(xf_infer_ctx *c);
xf_status xf_infer_ms_qunary(xf_infer_ctx *c);
xf_status xf_infer_ms_qglobal_pool(xf_infer_ctx *c);
xf_status xf_infer_ms_qpool(xf_infer_ctx *c);
xf_status xf_infer_ms_qsoftmax(xf_infer_ctx *c);
xf_status xf_infer_ms_qconcat(xf_infer_ctx *c);
xf_status xf_infer_ms_qgemm(xf_infer_ctx *c);
xf_status xf_infer_ms_quantize(xf_infer_ctx *c);

/* Whether dims a and b can be the same size: equal, or one known only at
 * run time (-1), which the run then checks. */
static inline bool xf_dims_may_equal(int64_t a, int64_t b) { return a == b || a < 0 || b < 0; }
/* Whether shapes a and b can be the same: one rank, each dim may equal. */
static inline bool xf_shapes_may_equal(const xf_shape *a, const xf_shape *b)
{
    bool ok = a->ndim == b->ndim;
    for (int d = 0; ok && d < a->ndim; d++)
        ok = xf_dims_may_equal(a->dims[d], b->dims[d]);
    return ok;
}

#endif
