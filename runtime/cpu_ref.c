/* The cpu_ref backend: plain loops on host memory, the numerical oracle
 * that every other backend and every rewrite is checked against.
 *
 * Its kernel table is built from ops.def: each op needs an XF_REF_<ID>
 * entry below, so an op added to the list without a kernel is a compile
 * error rather than a gap found at run time. */
#include "xf_rt_internal.h"

#include <stdlib.h>
#include <string.h>

typedef struct ref_entry {
    xf_ref_kernel kernel;
    /* dtypes accepted for input 0, input 1 (when present) and output 0;
     * 0 means not checked (the kernel never reads that tensor's elements
     * or the op fixes its type) */
    uint32_t in0, in1, out0;
    /* the kernel computes in float: 16-bit float tensors are widened to
     * float on the way in and rounded once on the way out (as GPUs
     * accumulate half-precision products in float) */
    bool widen;
    /* the kernel only moves elements: 4- and 2-bit operands are unpacked
     * to one code a byte on the way in and packed on the way out */
    bool unpack;
} ref_entry;

#define F32 XF_DTM(XF_DT_FLOAT)
#define I64 XF_DTM(XF_DT_INT64)
#define BOOL XF_DTM(XF_DT_BOOL)
#define FLT XF_DTM_FLOATS
#define NUM XF_DTM_NUMERIC
#define ANY XF_DTM_ANY
#define IDX XF_DTM_INDEX
#define I32 XF_DTM(XF_DT_INT32)
#define QNT (XF_DTM(XF_DT_INT8) | XF_DTM(XF_DT_UINT8) | XF_DTM(XF_DT_INT16) | XF_DTM(XF_DT_UINT16) | XF_DTM_FLOAT8 | \
             XF_DTM_PACKED)
/* every type Cast converts between (strings: string_tensors.c) */
#define CASTS (NUM | BOOL | XF_DTM_FLOAT8 | XF_DTM(XF_DT_FLOAT8E8M0) | XF_DTM_PACKED)

#define F16 (XF_DTM(XF_DT_FLOAT16) | XF_DTM(XF_DT_BFLOAT16))
#define UNS (XF_DTM(XF_DT_UINT8) | XF_DTM(XF_DT_UINT16) | XF_DTM(XF_DT_UINT32) | XF_DTM(XF_DT_UINT64))

#define F64 XF_DTM(XF_DT_DOUBLE)
#define XF_REF_CONV {xf_ref_conv, F32 | F64 | F16, F32 | F64 | F16, 0, true}
#define XF_REF_MATMUL {xf_ref_matmul, F32 | F64 | F16, F32 | F64 | F16, 0, true}
#define XF_REF_GEMM {xf_ref_gemm, F32 | F64 | F16, F32 | F64 | F16, 0, true}
#define XF_REF_ADD {xf_ref_binary, NUM, NUM, 0}
#define XF_REF_SUB {xf_ref_binary, NUM, NUM, 0}
#define XF_REF_MUL {xf_ref_binary, NUM, NUM, 0}
#define XF_REF_DIV {xf_ref_binary, NUM, NUM, 0}
#define XF_REF_POW {xf_ref_binary, NUM, NUM, 0}
#define XF_REF_MAX {xf_ref_variadic, NUM, NUM, 0}
#define XF_REF_MIN {xf_ref_variadic, NUM, NUM, 0}
#define XF_REF_SUM {xf_ref_variadic, NUM, NUM, 0}
#define XF_REF_EQUAL {xf_ref_binary, NUM | BOOL, NUM | BOOL, 0}
#define XF_REF_GREATER {xf_ref_binary, NUM, NUM, 0}
#define XF_REF_LESS {xf_ref_binary, NUM, NUM, 0}
#define XF_REF_GREATER_OR_EQUAL {xf_ref_binary, NUM, NUM, 0}
#define XF_REF_LESS_OR_EQUAL {xf_ref_binary, NUM, NUM, 0}
#define XF_REF_MOD {xf_ref_binary, NUM, NUM, 0}
#define XF_REF_AND {xf_ref_binary, BOOL, BOOL, 0}
#define XF_REF_OR {xf_ref_binary, BOOL, BOOL, 0}
#define XF_REF_XOR {xf_ref_binary, BOOL, BOOL, 0}
#define XF_REF_WHERE {xf_ref_where, BOOL, ANY, 0}
/* the unary ops with an integer form (cpu_ref_elementwise.c) take NUM */
#define XF_REF_RELU {xf_ref_unary, NUM, 0, 0}
#define XF_REF_SIGMOID {xf_ref_unary, FLT, 0, 0}
#define XF_REF_TANH {xf_ref_unary, FLT, 0, 0}
#define XF_REF_ABS {xf_ref_unary, NUM, 0, 0}
#define XF_REF_NEG {xf_ref_unary, NUM, 0, 0}
#define XF_REF_EXP {xf_ref_unary, FLT, 0, 0}
#define XF_REF_LOG {xf_ref_unary, FLT, 0, 0}
#define XF_REF_SQRT {xf_ref_unary, FLT, 0, 0}
#define XF_REF_RECIPROCAL {xf_ref_unary, FLT, 0, 0}
#define XF_REF_FLOOR {xf_ref_unary, FLT, 0, 0}
#define XF_REF_CEIL {xf_ref_unary, FLT, 0, 0}
#define XF_REF_ERF {xf_ref_unary, FLT, 0, 0}
#define XF_REF_SIN {xf_ref_unary, FLT, 0, 0}
#define XF_REF_COS {xf_ref_unary, FLT, 0, 0}
#define XF_REF_SOFTPLUS {xf_ref_unary, FLT, 0, 0}
#define XF_REF_LEAKY_RELU {xf_ref_unary, FLT, 0, 0}
#define XF_REF_ELU {xf_ref_unary, FLT, 0, 0}
#define XF_REF_HARD_SIGMOID {xf_ref_unary, FLT, 0, 0}
#define XF_REF_HARD_SWISH {xf_ref_unary, FLT, 0, 0}
#define XF_REF_IS_NAN {xf_ref_unary, FLT, 0, 0}
#define XF_REF_SIGN {xf_ref_unary, NUM, 0, 0}
#define XF_REF_ROUND {xf_ref_unary, FLT, 0, 0}
#define XF_REF_IS_INF {xf_ref_unary, FLT, 0, 0}
#define XF_REF_TAN {xf_ref_unary, FLT, 0, 0}
#define XF_REF_ATAN {xf_ref_unary, FLT, 0, 0}
#define XF_REF_ASIN {xf_ref_unary, FLT, 0, 0}
#define XF_REF_ACOS {xf_ref_unary, FLT, 0, 0}
#define XF_REF_SINH {xf_ref_unary, FLT, 0, 0}
#define XF_REF_COSH {xf_ref_unary, FLT, 0, 0}
#define XF_REF_ASINH {xf_ref_unary, FLT, 0, 0}
#define XF_REF_ACOSH {xf_ref_unary, FLT, 0, 0}
#define XF_REF_ATANH {xf_ref_unary, FLT, 0, 0}
#define XF_REF_SOFTSIGN {xf_ref_unary, FLT, 0, 0}
#define XF_REF_THRESHOLDED_RELU {xf_ref_unary, FLT, 0, 0}
#define XF_REF_SELU {xf_ref_unary, FLT, 0, 0}
#define XF_REF_CELU {xf_ref_unary, FLT, 0, 0}
#define XF_REF_SHRINK {xf_ref_unary, NUM, 0, 0}
#define XF_REF_MISH {xf_ref_unary, FLT, 0, 0}
#define XF_REF_GELU {xf_ref_unary, FLT, 0, 0}
#define XF_REF_PRELU {xf_ref_prelu, NUM, NUM, 0}
#define XF_REF_MEAN {xf_ref_mean, FLT, FLT, 0}
#define XF_REF_BIT_SHIFT {xf_ref_binary, IDX | UNS | XF_DTM(XF_DT_INT8) | XF_DTM(XF_DT_INT16), IDX | UNS | XF_DTM(XF_DT_INT8) | XF_DTM(XF_DT_INT16), 0}
#define XF_REF_CAST_LIKE {xf_ref_cast, CASTS, 0, CASTS}
#define XF_REF_RESIZE {xf_ref_resize, FLT, FLT | I64, 0}
#define XF_REF_UPSAMPLE {xf_ref_resize, FLT, F32, 0}
#define XF_REF_GATHER_ND {xf_ref_gather_nd, ANY, I64, 0}
#define XF_REF_NON_ZERO {xf_ref_non_zero, NUM | BOOL, 0, I64}
#define XF_REF_ROI_ALIGN {xf_ref_roi_align, FLT, FLT, 0, true}
/* the signal ops compute in double; the windows make any numeric type */
#define XF_REF_DFT {xf_ref_dft, FLT, IDX, 0, true}
#define XF_REF_STFT {xf_ref_stft, FLT, IDX, 0, true}
#define XF_REF_HANN_WINDOW {xf_ref_window, IDX, 0, NUM}
#define XF_REF_HAMMING_WINDOW {xf_ref_window, IDX, 0, NUM}
#define XF_REF_BLACKMAN_WINDOW {xf_ref_window, IDX, 0, NUM}
#define XF_REF_MEL_WEIGHT_MATRIX {xf_ref_mel_weight_matrix, IDX, IDX, NUM}
#define XF_REF_LP_POOL {xf_ref_pool, FLT, 0, 0}
#define XF_REF_GLOBAL_LP_POOL {xf_ref_global_pool, FLT, 0, 0}
#define XF_REF_BITWISE_AND {xf_ref_binary, XF_DTM_INTS, XF_DTM_INTS, 0}
#define XF_REF_BITWISE_OR {xf_ref_binary, XF_DTM_INTS, XF_DTM_INTS, 0}
#define XF_REF_BITWISE_XOR {xf_ref_binary, XF_DTM_INTS, XF_DTM_INTS, 0}
#define XF_REF_BITWISE_NOT {xf_ref_unary, XF_DTM_INTS, 0, 0}
#define XF_REF_CUM_PROD {xf_ref_cumsum, NUM, IDX, 0}
#define XF_REF_SWISH {xf_ref_unary, FLT, 0, 0}
#define XF_REF_NON_MAX_SUPPRESSION {xf_ref_nms, F32, F32, I64}
#define XF_REF_TOP_K {xf_ref_top_k, NUM, I64, 0}
#define XF_REF_SCATTER_ELEMENTS {xf_ref_scatter_elements, ANY, IDX, 0}
#define XF_REF_LSTM {xf_ref_rnn, FLT, FLT, 0}
#define XF_REF_GRU {xf_ref_rnn, FLT, FLT, 0}
#define XF_REF_QUANTIZE_LINEAR {xf_ref_quantize, FLT | I32, FLT | I32, QNT}
#define XF_REF_DEQUANTIZE_LINEAR {xf_ref_quantize, QNT | I32, FLT, FLT}
#define Q8 (XF_DTM(XF_DT_INT8) | XF_DTM(XF_DT_UINT8))
#define XF_REF_CONV_TRANSPOSE {xf_ref_conv_transpose, FLT, FLT, 0, true}
#define XF_REF_RNN {xf_ref_rnn, FLT, FLT, 0}
#define XF_REF_DYNAMIC_QUANTIZE_LINEAR {xf_ref_dynamic_quantize, F32, 0, XF_DTM(XF_DT_UINT8)}
#define XF_REF_MATMUL_INTEGER {xf_ref_qmatmul, Q8, Q8, I32}
#define XF_REF_CONV_INTEGER {xf_ref_conv_integer, Q8, Q8, I32}
#define XF_REF_QLINEAR_MATMUL {xf_ref_qmatmul, Q8, FLT, Q8}
#define XF_REF_QLINEAR_CONV {xf_ref_conv_integer, Q8, FLT, Q8}
#define XF_REF_TRILU {xf_ref_trilu, ANY, I64, 0}
#define XF_REF_TILE {xf_ref_tile, ANY, I64, 0}
#define XF_REF_DEPTH_TO_SPACE {xf_ref_depth_space, ANY, 0, 0}
#define XF_REF_SPACE_TO_DEPTH {xf_ref_depth_space, ANY, 0, 0}
#define XF_REF_EYE_LIKE {xf_ref_eye_like, 0, 0, NUM | BOOL}
#define XF_REF_REVERSE_SEQUENCE {xf_ref_reverse_sequence, ANY, I64, 0}
#define XF_REF_ONE_HOT {xf_ref_one_hot, NUM, NUM, ANY}
#define XF_REF_COMPRESS {xf_ref_compress, ANY, BOOL, 0}
#define XF_REF_EINSUM {xf_ref_einsum, NUM, NUM, 0, true}
#define XF_REF_DET {xf_ref_det, FLT, FLT, 0}
#define XF_REF_ATTENTION {xf_ref_attention, F32 | F16, F32 | F16, 0, true}
#define XF_REF_RMS_NORM {xf_ref_skip_layer_norm, FLT, FLT, 0, true}
#define XF_REF_ROTARY_EMB {xf_ref_rotary, F32 | F16, F32 | F16, 0, true}
/* TensorScatter and BitCast move bytes: every type of whole bytes but
 * string, the float8 ones included (the packed 4- and 2-bit types are
 * carried only, see xf_dtype) */
#define BYTE_TYPES (ANY | XF_DTM_FLOAT8 | XF_DTM(XF_DT_FLOAT8E8M0))
/* what a copy of the bytes carries: the byte types and the packed ones */
#define VIEWS (BYTE_TYPES | XF_DTM_PACKED)
#define XF_REF_TENSOR_SCATTER {xf_ref_tensor_scatter, BYTE_TYPES, BYTE_TYPES, 0}
#define XF_REF_BIT_CAST {xf_ref_copy, VIEWS, 0, VIEWS}
#define XF_REF_SWIGLU {xf_ref_swiglu, FLT, FLT, 0}
/* the random ops: run_node passes the key of the node's name */
#define RND (F32 | F64 | F16)
#define XF_REF_RANDOM_NORMAL {xf_ref_random_unnamed, 0, 0, RND}
#define XF_REF_RANDOM_UNIFORM {xf_ref_random_unnamed, 0, 0, RND}
#define XF_REF_RANDOM_NORMAL_LIKE {xf_ref_random_unnamed, 0, 0, RND}
#define XF_REF_RANDOM_UNIFORM_LIKE {xf_ref_random_unnamed, 0, 0, RND}
#define XF_REF_BERNOULLI {xf_ref_random_unnamed, RND, 0, NUM | BOOL}
#define XF_REF_MULTINOMIAL {xf_ref_random_unnamed, RND, 0, I32 | I64}
#define XF_REF_AFFINE {xf_ref_unary, FLT, 0, 0}
#define XF_REF_SCALE {xf_ref_unary, FLT, 0, 0}
#define XF_REF_SCALED_TANH {xf_ref_unary, FLT, 0, 0}
#define XF_REF_PARAMETRIC_SOFTPLUS {xf_ref_unary, FLT, 0, 0}
#define XF_REF_IMAGE_SCALER {xf_ref_image_scaler, FLT, 0, 0}
#define XF_REF_CROP {xf_ref_crop, FLT, 0, 0}
#define XF_REF_UNIQUE {xf_ref_unique, NUM | BOOL, 0, 0}
#define XF_REF_SCATTER {xf_ref_scatter_elements, ANY, IDX, 0}
#define XF_REF_GRID_SAMPLE {xf_ref_grid_sample, FLT, FLT, 0, true}
#define XF_REF_COL2IM {xf_ref_col2im, FLT, I64, 0, true}
#define XF_REF_CENTER_CROP_PAD {xf_ref_center_crop_pad, NUM | BOOL, IDX, 0}
#define XF_REF_AFFINE_GRID {xf_ref_affine_grid, FLT, I64, 0, true}
#define XF_REF_DEFORM_CONV {xf_ref_deform_conv, FLT, FLT, 0, true}
#define XF_REF_MAX_ROI_POOL {xf_ref_max_roi_pool, FLT, FLT, 0, true}
#define XF_REF_CAUSAL_CONV_WITH_STATE {xf_ref_causal_conv, F32 | F16, F32 | F16, 0, true}
#define XF_REF_LINEAR_ATTENTION {xf_ref_linear_attention, F32 | F16, F32 | F16, 0, true}
#define XF_REF_CLIP {xf_ref_clip, NUM, NUM, 0}
#define XF_REF_NOT {xf_ref_unary, BOOL, 0, 0}
#define XF_REF_CAST {xf_ref_cast, CASTS, 0, CASTS}
#define XF_REF_CONCAT {xf_ref_concat, ANY, ANY, 0}
#define XF_REF_SPLIT {xf_ref_split, ANY, IDX, 0}
#define XF_REF_TRANSPOSE {xf_ref_transpose, VIEWS, 0, 0, false, true}
#define XF_REF_RESHAPE {xf_ref_copy, VIEWS, I64, 0}
#define XF_REF_FLATTEN {xf_ref_copy, VIEWS, 0, 0}
#define XF_REF_SQUEEZE {xf_ref_copy, VIEWS, I64, 0}
#define XF_REF_UNSQUEEZE {xf_ref_copy, VIEWS, I64, 0}
#define XF_REF_GATHER {xf_ref_gather, ANY, IDX, 0}
#define XF_REF_GATHER_ELEMENTS {xf_ref_gather_elements, ANY, IDX, 0}
#define XF_REF_SCATTER_ND {xf_ref_scatter_nd, ANY, ANY, 0}
#define XF_REF_SLICE {xf_ref_slice, ANY, IDX, 0}
#define XF_REF_PAD {xf_ref_pad, ANY, I64, 0}
#define XF_REF_EXPAND {xf_ref_expand, ANY, I64, 0}
#define XF_REF_SHAPE {xf_ref_shape, 0, 0, I64}
#define XF_REF_SIZE {xf_ref_size, 0, 0, I64}
#define XF_REF_CONSTANT_OF_SHAPE {xf_ref_constant_of_shape, I64, 0, ANY}
#define XF_REF_RANGE {xf_ref_range, NUM | F16, NUM | F16, 0}
#define XF_REF_IDENTITY {xf_ref_copy, VIEWS, 0, 0}
#define XF_REF_DROPOUT {xf_ref_random_unnamed, ANY, FLT, 0} /* keyed when it trains */
#define XF_REF_MAX_POOL {xf_ref_pool, NUM, 0, 0}
#define XF_REF_AVERAGE_POOL {xf_ref_pool, FLT, 0, 0}
#define XF_REF_GLOBAL_AVERAGE_POOL {xf_ref_global_pool, FLT, 0, 0}
#define XF_REF_GLOBAL_MAX_POOL {xf_ref_global_pool, FLT, 0, 0}
#define XF_REF_MAX_UNPOOL {xf_ref_max_unpool, NUM, I64, 0}
#define XF_REF_BATCH_NORM {xf_ref_batch_norm, FLT, FLT, 0}
#define XF_REF_LAYER_NORM {xf_ref_layer_norm, FLT, FLT, 0}
#define XF_REF_SOFTMAX {xf_ref_softmax, FLT, 0, 0}
#define XF_REF_LOG_SOFTMAX {xf_ref_softmax, FLT, 0, 0}
#define XF_REF_REDUCE_MEAN {xf_ref_reduce, NUM, I64, 0}
#define XF_REF_REDUCE_SUM {xf_ref_reduce, NUM, I64, 0}
#define XF_REF_REDUCE_MAX {xf_ref_reduce, NUM | BOOL, I64, 0} /* bool from opset 20 */
#define XF_REF_REDUCE_MIN {xf_ref_reduce, NUM | BOOL, I64, 0}
#define XF_REF_REDUCE_PROD {xf_ref_reduce, NUM, I64, 0}
#define XF_REF_REDUCE_L1 {xf_ref_reduce, NUM, I64, 0}
#define XF_REF_REDUCE_L2 {xf_ref_reduce, NUM, I64, 0}
#define XF_REF_REDUCE_LOG_SUM {xf_ref_reduce, NUM, I64, 0}
#define XF_REF_REDUCE_LOG_SUM_EXP {xf_ref_reduce, NUM, I64, 0}
#define XF_REF_REDUCE_SUM_SQUARE {xf_ref_reduce, NUM, I64, 0}
#define XF_REF_ARG_MAX {xf_ref_arg_reduce, NUM, 0, I64}
#define XF_REF_ARG_MIN {xf_ref_arg_reduce, NUM, 0, I64}
#define XF_REF_HARDMAX {xf_ref_hardmax, FLT, 0, 0}
#define XF_REF_CUM_SUM {xf_ref_cumsum, NUM, IDX, 0}
#define XF_REF_INSTANCE_NORM {xf_ref_group_norm, FLT, FLT, 0}
#define XF_REF_GROUP_NORM {xf_ref_group_norm, FLT, FLT, 0}
#define XF_REF_MEAN_VARIANCE_NORM {xf_ref_mvn, FLT, 0, 0}
#define XF_REF_LRN {xf_ref_lrn, FLT, 0, 0}
#define XF_REF_LP_NORM {xf_ref_lp_norm, FLT, 0, 0}
#define XF_REF_MS_GELU {xf_ref_unary, FLT, 0, 0}
#define XF_REF_MS_FUSED_CONV {xf_ref_fused_conv, F32 | F16, F32 | F16, 0, true}
#define XF_REF_MS_FUSED_GEMM {xf_ref_fused_gemm, F32 | F16, F32 | F16, 0, true}
#define XF_REF_MS_FUSED_MATMUL {xf_ref_fused_matmul, F32 | F16, F32 | F16, 0, true}
#define XF_REF_MS_FAST_GELU {xf_ref_bias_act, FLT, FLT, 0, true}
#define XF_REF_MS_BIAS_GELU {xf_ref_bias_act, FLT, FLT, 0, true}
#define XF_REF_MS_QUICK_GELU {xf_ref_bias_act, FLT, 0, 0, true}
#define XF_REF_MS_BIAS_ADD {xf_ref_bias_act, FLT, FLT, 0, true}
#define XF_REF_MS_SKIP_LAYER_NORM {xf_ref_skip_layer_norm, FLT, FLT, 0, true}
#define XF_REF_MS_SKIP_SIMPLIFIED_LAYER_NORM {xf_ref_skip_layer_norm, FLT, FLT, 0, true}
#define XF_REF_SIMPLIFIED_LAYER_NORM {xf_ref_skip_layer_norm, FLT, FLT, 0, true}
#define XF_REF_MS_ATTENTION {xf_ref_ms_attention, F32 | F16, F32 | F16, F32 | F16, true}
#define XF_REF_MS_MHA {xf_ref_ms_mha, F32 | F16, F32 | F16, F32 | F16, true}
#define XF_REF_MS_EMBED_LAYER_NORM {xf_ref_ms_embed_layer_norm, I32, I32, F32 | F16, true}
#define XF_REF_MS_ROTARY_EMB {xf_ref_ms_rotary, F32 | F16, I64, F32 | F16, true}
#define Q8IN (XF_DTM(XF_DT_INT8) | XF_DTM(XF_DT_UINT8))
#define XF_REF_MS_QLINEAR_ADD {xf_ref_ms_qbinary, Q8IN | XF_DTM(XF_DT_UINT16), F32, 0}
#define XF_REF_MS_QLINEAR_MUL {xf_ref_ms_qbinary, Q8IN, F32, 0}
#define XF_REF_MS_QLINEAR_SIGMOID {xf_ref_ms_qunary, Q8IN, F32, Q8IN}
#define XF_REF_MS_QLINEAR_LEAKY_RELU {xf_ref_ms_qunary, Q8IN, F32, Q8IN}
#define XF_REF_MS_QLINEAR_GLOBAL_AVERAGE_POOL {xf_ref_ms_qglobal_pool, Q8IN, F32, Q8IN}
#define XF_REF_MS_QLINEAR_AVERAGE_POOL {xf_ref_ms_qpool, Q8IN, F32, Q8IN}
#define XF_REF_MS_QLINEAR_CONCAT {xf_ref_ms_qconcat, F32, Q8IN, Q8IN}
#define XF_REF_MS_QLINEAR_SOFTMAX {xf_ref_ms_qsoftmax, Q8IN, F32, Q8IN}
#define XF_REF_MS_QGEMM {xf_ref_ms_qgemm, Q8IN, F32, Q8IN | F32}
#define XF_REF_MS_QUANTIZE_LINEAR {xf_ref_ms_quantize, F32, F32, QNT}
#define XF_REF_MS_DEQUANTIZE_LINEAR {xf_ref_ms_quantize, QNT, F32, F32}
/* the sequence ops have no kernel: the session runs them (sequence.c) */
#define XF_REF_SEQUENCE_EMPTY {0}
#define XF_REF_SEQUENCE_CONSTRUCT {0}
#define XF_REF_SEQUENCE_INSERT {0}
#define XF_REF_SEQUENCE_AT {0}
#define XF_REF_SEQUENCE_ERASE {0}
#define XF_REF_SEQUENCE_LENGTH {0}
#define XF_REF_SPLIT_TO_SEQUENCE {0}
#define XF_REF_CONCAT_FROM_SEQUENCE {0}
#define XF_REF_OPTIONAL {0}
#define XF_REF_OPTIONAL_HAS_ELEMENT {0}
#define XF_REF_OPTIONAL_GET_ELEMENT {0}
#define XF_REF_MS_MATMUL_NBITS {xf_ref_ms_matmul_nbits, F32 | F16, XF_DTM(XF_DT_UINT8), F32 | F16, true}
#define XF_REF_MS_GQA {xf_ref_ms_gqa, F32 | F16, 0, F32 | F16, true}
#define XF_REF_MS_MATMUL_INTEGER_TO_FLOAT {xf_ref_ms_int_matmul_float, Q8IN, Q8IN, F32}
#define XF_REF_MS_QATTENTION {xf_ref_ms_qattention, Q8IN, Q8IN, F32}
#define XF_REF_MS_DYNAMIC_QUANTIZE_LSTM {xf_ref_ms_dynamic_quantize_lstm, F32, Q8IN, F32}
#define XF_REF_MS_DYNAMIC_QUANTIZE_MATMUL {xf_ref_ms_int_matmul_float, F32, Q8IN, F32}
/* bytes packing codes, or int4 and uint4 elements */
#define GBQ_DATA (XF_DTM(XF_DT_UINT8) | XF_DTM(XF_DT_INT4) | XF_DTM(XF_DT_UINT4))
#define XF_REF_MS_GATHER_BLOCK_QUANTIZED {xf_ref_ms_gather_block_quantized, GBQ_DATA, IDX, F32 | F16, true}

static const ref_entry ref_table[XF_OP_COUNT] = {
#define XF_OP(id, onnx, min_in, max_in, n_out, flags) [XF_OP_##id] = XF_REF_##id,
#include "ops.def"
#undef XF_OP
};

static bool dtype_ok(uint32_t mask, xf_dtype t)
{
    /* a dtype not known yet is checked again once it is (dynamic mode) */
    if (mask == 0 || t == XF_DT_UNDEFINED)
        return true;
    return (unsigned)t < 32 && (mask & XF_DTM(t)) != 0;
}

/* An opaque node of an op xflow knows: import kept it verbatim because of
 * an attribute value or operand count outside what xflow models. */
static bool known_but_opaque(const xf_node *n)
{
    return n->opaque && xf_op_lookup(n->opaque->domain, n->opaque->op_type) != XF_OP_OPAQUE;
}

static xf_status ref_supports(const xf_graph *g, int node, xf_error *err)
{
    const xf_node *n = &g->nodes[node];
    if (n->op == XF_OP_OPAQUE && known_but_opaque(n))
        return xf_rt_unsupported(err, &xf_backend_cpu_ref, n, "in a form xflow does not model (-v says which)");
    if (n->op == XF_OP_OPAQUE || !ref_table[n->op].kernel)
        return xf_rt_unsupported(err, &xf_backend_cpu_ref, n, NULL);
    const ref_entry *e = &ref_table[n->op];
    int in0 = n->n_inputs > 0 ? n->inputs[0] : -1, in1 = n->n_inputs > 1 ? n->inputs[1] : -1;
    if (n->op == XF_OP_GRID_SAMPLE && n->attrs.grid_mode == 2 && in0 >= 0 && g->values[in0].shape.ndim > 4)
        return xf_rt_unsupported(err, &xf_backend_cpu_ref, n, "in mode cubic on %d spatial dims (1 or 2 only)",
                                 g->values[in0].shape.ndim - 2);
    if (n->op == XF_OP_DEFORM_CONV && in0 >= 0 && g->values[in0].shape.ndim >= 0 && g->values[in0].shape.ndim != 4)
        return xf_rt_unsupported(err, &xf_backend_cpu_ref, n, "on %d spatial dims (2 only, as ONNX's reference)",
                                 g->values[in0].shape.ndim - 2);
    int out0 = n->n_outputs > 0 ? n->outputs[0] : -1;
    if (n->op == XF_OP_COL2IM && out0 >= 0 && g->values[out0].shape.ndim > 2 + XF_MAX_SPATIAL)
        return xf_rt_unsupported(err, &xf_backend_cpu_ref, n, "on %d spatial dims (1 to %d)",
                                 g->values[out0].shape.ndim - 2, XF_MAX_SPATIAL);
    if (in0 >= 0 && !dtype_ok(e->in0, g->values[in0].dtype))
        return xf_rt_unsupported(err, &xf_backend_cpu_ref, n, "on %s", xf_dtype_name(g->values[in0].dtype));
    if (in1 >= 0 && !dtype_ok(e->in1, g->values[in1].dtype))
        return xf_rt_unsupported(err, &xf_backend_cpu_ref, n, "with input #1 of type %s",
                                 xf_dtype_name(g->values[in1].dtype));
    if (out0 >= 0 && !dtype_ok(e->out0, g->values[out0].dtype))
        return xf_rt_unsupported(err, &xf_backend_cpu_ref, n, "producing %s",
                                 xf_dtype_name(g->values[out0].dtype));
    return XF_OK;
}

/* How run_converted holds the operands a kernel cannot take as they are:
 * which dtypes it converts, the dtype and element size it holds them as,
 * and the conversions of count elements in and out. */
typedef struct operand_form {
    bool (*converts)(xf_dtype t);
    xf_dtype as;
    size_t elem;
    void (*in)(const xf_tensor_view *src, void *held, int64_t count);
    void (*out)(const void *held, const xf_tensor_view *dst, int64_t count);
} operand_form;

/* Runs kernel on node n with the operands form converts held in its form:
 * inputs converted on the way in, outputs on the way out. */
static xf_status run_converted(const operand_form *form, xf_ref_kernel kernel, const xf_node *n,
                               const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err)
{
    int total = n->n_inputs + n->n_outputs;
    xf_tensor_view *v = malloc(sizeof *v * (size_t)(total > 0 ? total : 1));
    void **held = calloc((size_t)(total > 0 ? total : 1), sizeof *held);
    xf_status st = v && held ? XF_OK : xf_error_set(err, XF_ERR_NOMEM, "out of memory");
    for (int k = 0; k < total && st == XF_OK; k++) {
        const xf_tensor_view *src = k < n->n_inputs ? &in[k] : &out[k - n->n_inputs];
        v[k] = *src;
        int64_t count = xf_shape_numel(&src->shape);
        if (!form->converts(src->dtype) || !src->data || count <= 0)
            continue;
        if (!(held[k] = malloc(form->elem * (size_t)count))) {
            st = xf_error_set(err, XF_ERR_NOMEM, "out of memory");
            break;
        }
        if (k < n->n_inputs)
            form->in(src, held[k], count);
        v[k].dtype = form->as;
        v[k].data = held[k];
    }
    if (st == XF_OK)
        st = kernel(n, v, v + n->n_inputs, err);
    for (int k = n->n_inputs; k < total && st == XF_OK; k++)
        if (held[k])
            form->out(held[k], &out[k - n->n_inputs], xf_shape_numel(&out[k - n->n_inputs].shape));
    for (int k = 0; held && k < total; k++)
        free(held[k]);
    free(held);
    free(v);
    return st;
}

/* ref_entry.widen: 16-bit floats as float copies */
static bool is_half(xf_dtype t) { return xf_dtype_is_half(t); }

static void widen(const xf_tensor_view *src, void *held, int64_t count)
{
    for (int64_t i = 0; i < count; i++)
        ((float *)held)[i] = (float)xf_rt_load_f64(src->dtype, src->data, i);
}

static void narrow(const void *held, const xf_tensor_view *dst, int64_t count)
{
    for (int64_t i = 0; i < count; i++)
        xf_rt_store_f64(dst->dtype, dst->data, i, ((const float *)held)[i]);
}

static const operand_form widened = {is_half, XF_DT_FLOAT, sizeof(float), widen, narrow};

/* ref_entry.unpack: 4- and 2-bit values as their codes, one to a byte */
static bool is_packed(xf_dtype t) { return xf_dtype_bits(t) % 8 != 0; }

static void unpack(const xf_tensor_view *src, void *held, int64_t count)
{
    for (int64_t i = 0; i < count; i++)
        ((uint8_t *)held)[i] = (uint8_t)xf_rt_packed_code(src->dtype, src->data, i);
}

static void pack(const void *held, const xf_tensor_view *dst, int64_t count)
{
    int bits = xf_dtype_bits(dst->dtype), per = 8 / bits;
    uint8_t *bytes = dst->data;
    memset(bytes, 0, xf_dtype_nbytes(dst->dtype, count));
    for (int64_t i = 0; i < count; i++)
        bytes[i / per] = (uint8_t)(bytes[i / per] | ((const uint8_t *)held)[i] << (i % per * bits));
}

static const operand_form unpacked = {is_packed, XF_DT_UINT8, 1, unpack, pack};

static xf_status ref_run_node(void *ctx, const xf_graph *g, int node, void *state,
                              const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err)
{
    const xf_node *n = &g->nodes[node];
    const ref_entry *e = &ref_table[n->op];
    if (e->kernel == xf_ref_random_unnamed)
        return xf_ref_random(n, xf_ref_random_key(g, n), in, out, err);
    bool half = false, packed = false;
    for (int k = 0; (e->widen || e->unpack) && k < n->n_inputs + n->n_outputs; k++) {
        xf_dtype t = k < n->n_inputs ? in[k].dtype : out[k - n->n_inputs].dtype;
        half |= e->widen && xf_dtype_is_half(t);
        packed |= e->unpack && is_packed(t);
    }
    if (packed)
        return run_converted(&unpacked, e->kernel, n, in, out, err);
    return half ? run_converted(&widened, e->kernel, n, in, out, err) : e->kernel(n, in, out, err);
}

static void *ref_alloc(void *ctx, size_t bytes)
{
    if (bytes == 0)
        return NULL;
    return aligned_alloc(64, (bytes + 63) & ~(size_t)63);
}

static void ref_free(void *ctx, void *ptr) { free(ptr); }

static xf_status ref_copy(void *ctx, void *dst, const void *src, size_t bytes, xf_error *err)
{
    if (bytes)
        memcpy(dst, src, bytes);
    return XF_OK;
}

const xf_backend xf_backend_cpu_ref = {
    .name = "cpu_ref",
    .description = "reference loops on the CPU (the numerical oracle)",
    .host_memory = true,
    .supports = ref_supports,
    .run_node = ref_run_node,
    .alloc = ref_alloc,
    .free = ref_free,
    .copy_in = ref_copy,
    .copy_out = ref_copy,
};
