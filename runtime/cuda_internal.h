/* Internals of the `cuda` backend, shared by cuda_backend.c (context,
 * memory, the op table, dispatch), cuda_dnn.c (cuDNN and cuBLAS ops),
 * cuda_ops.c (ops on xflow's own kernels) and cuda_kernels.cu (the
 * kernels).
 *
 * The first part, the kernel launchers, uses plain C types only so that
 * the .cu file can include it; each launcher queues its kernel on `stream`
 * and returns cudaGetLastError(). */
#ifndef XF_CUDA_INTERNAL_H
#define XF_CUDA_INTERNAL_H

#include <cuda_runtime_api.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- kernel launchers */

#define XF_CU_MAX_DIMS 8
#define XF_CU_MAX_OPERANDS 4

/* An index space walked in row-major order and, for each operand, its
 * element strides (zero on broadcast dimensions, permuted for transposes,
 * negative for reversed slices).  Passed to kernels by value. */
typedef struct xf_cu_index {
    int ndim, n_ops;
    int64_t dims[XF_CU_MAX_DIMS];
    int64_t stride[XF_CU_MAX_OPERANDS][XF_CU_MAX_DIMS];
} xf_cu_index;

/* Element kinds the arithmetic kernels compute on. */
typedef enum xf_cu_kind {
    XF_CU_F32 = 0, XF_CU_F64, XF_CU_F16, XF_CU_I8, XF_CU_U8, XF_CU_I16, XF_CU_U16,
    XF_CU_I32, XF_CU_U32, XF_CU_I64, XF_CU_U64, XF_CU_BOOL, XF_CU_KIND_COUNT
} xf_cu_kind;

typedef enum xf_cu_unary_op {
    XF_CU_RELU = 0, XF_CU_SIGMOID, XF_CU_TANH, XF_CU_ABS, XF_CU_NEG, XF_CU_EXP, XF_CU_LOG, XF_CU_SQRT,
    XF_CU_RECIPROCAL, XF_CU_FLOOR, XF_CU_CEIL, XF_CU_ERF, XF_CU_SIN, XF_CU_COS, XF_CU_SOFTPLUS,
    XF_CU_LEAKY_RELU, XF_CU_ELU, XF_CU_HARD_SIGMOID, XF_CU_CLIP, XF_CU_HARD_SWISH, XF_CU_SIGN, XF_CU_ROUND,
    XF_CU_TAN, XF_CU_ATAN, XF_CU_ASIN, XF_CU_ACOS, XF_CU_SINH, XF_CU_COSH, XF_CU_ASINH, XF_CU_ACOSH, XF_CU_ATANH,
    XF_CU_SOFTSIGN, XF_CU_THRESHOLDED_RELU, XF_CU_SELU, XF_CU_CELU, XF_CU_SHRINK, XF_CU_MISH, XF_CU_GELU,
    XF_CU_GELU_TANH
} xf_cu_unary_op;

typedef enum xf_cu_binary_op {
    XF_CU_ADD = 0, XF_CU_SUB, XF_CU_MUL, XF_CU_DIV, XF_CU_POW, XF_CU_MAX, XF_CU_MIN, XF_CU_EQUAL,
    XF_CU_GREATER, XF_CU_LESS, XF_CU_GREATER_EQ, XF_CU_LESS_EQ
} xf_cu_binary_op;

typedef enum xf_cu_reduce_op { XF_CU_RSUM = 0, XF_CU_RMEAN, XF_CU_RMAX, XF_CU_RMIN } xf_cu_reduce_op;

/* y[i] = op(x[i]) on n float32 elements; a and b are the op's parameters
 * (LeakyRelu/Elu alpha, HardSigmoid alpha and beta, Clip's bounds). */
cudaError_t xf_cu_unary(cudaStream_t stream, xf_cu_unary_op op, int64_t n, const float *x, float *y, float a,
                        float b);
/* y = op(a, b) over ix (operand 0 is a, 1 is b; y dense).  a and b are of
 * kind `kind` (F32, I32 or I64); y has that kind too, or is bool for the
 * comparisons. */
cudaError_t xf_cu_binary(cudaStream_t stream, xf_cu_binary_op op, xf_cu_kind kind, const xf_cu_index *ix,
                         const void *a, const void *b, void *y);
/* y = cond ? x : t over ix (operands cond, x, t; y dense), elements of es bytes. */
cudaError_t xf_cu_where(cudaStream_t stream, size_t es, const xf_cu_index *ix, const uint8_t *cond,
                        const void *x, const void *t, void *y);
/* n elements converted from kind `from` to kind `to` as ONNX Cast does. */
cudaError_t xf_cu_cast(cudaStream_t stream, xf_cu_kind from, xf_cu_kind to, int64_t n, const void *x, void *y);
/* dst[dst_base + coord . stride[1]] = src[src_base + coord . stride[0]] for
 * every coord of ix; elements of es bytes (1, 2, 4, 8 or 16). */
cudaError_t xf_cu_copy(cudaStream_t stream, size_t es, const xf_cu_index *ix, const void *src, int64_t src_base,
                       void *dst, int64_t dst_base);
/* Pad: y (dims out) from x (dims in) shifted by begin per axis; outside x
 * mode 0 writes `value` (es bytes), 1 reflects, 2 repeats the edge. */
cudaError_t xf_cu_pad(cudaStream_t stream, size_t es, int ndim, const int64_t *in_dims, const int64_t *out_dims,
                      const int64_t *begin, int mode, const void *value, const void *x, void *y);
/* y[(o, j, i)] = x[(o, idx[j], i)] for o < outer, j < n_idx, i < inner,
 * x's gathered axis of length len; negative indices count from the end.
 * An index out of range gives zeros and sets the device int *bad to
 * `report` (non-zero) unless it is set already. */
cudaError_t xf_cu_gather(cudaStream_t stream, size_t es, int64_t outer, int64_t len, int64_t inner,
                         int64_t n_idx, const void *idx, bool idx64, const void *x, void *y, int *bad, int report);
/* Every one of the n elements (es bytes each) of y set to value. */
cudaError_t xf_cu_fill(cudaStream_t stream, size_t es, int64_t n, const void *value, void *y);
/* y[o] = reduce over r of x[kept(o) + red(r)], float32: `kept` indexes the
 * outputs (operand 0: its strides into x), `red` the reduced elements. */
cudaError_t xf_cu_reduce(cudaStream_t stream, xf_cu_reduce_op op, const xf_cu_index *kept, const xf_cu_index *red,
                         const float *x, float *y);
/* LayerNormalization over rows of `inner` elements; scale (operand 0) and
 * bias (operand 1, may be NULL) indexed through `norm`, the normalized
 * shape; mean and inv_std (outer elements) may be NULL. */
cudaError_t xf_cu_layer_norm(cudaStream_t stream, int64_t outer, int64_t inner, const xf_cu_index *norm,
                             const float *x, const float *scale, const float *bias, float eps, float *y,
                             float *mean, float *inv_std);

#ifdef __cplusplus
}
#endif

/* ---------------------------------------------------------------- host side */

#ifndef __CUDACC__
#include "xf_rt_internal.h"

#include <cublas_v2.h>
#include <cudnn.h>

extern const xf_backend xf_backend_cuda;

typedef struct xf_cu_ctx {
    int device;
    cudaStream_t stream;
    cudnnHandle_t dnn;
    cublasHandle_t blas;
    /* scratch shared by all nodes (they run one after another on one
     * stream): cuDNN workspaces, grown while nodes are prepared */
    void *workspace;
    size_t workspace_bytes;
    bool tf32; /* XF_CUDA_TF32=1: TensorFloat-32 allowed in convolutions and GEMMs */
    bool direct_conv; /* xf_session_options.direct_convolutions: no Winograd or FFT algorithms */
    cudaEvent_t timer[2]; /* per-node profiling: start and stop marks on the stream */
    /* Errors kernels find on the device (a Gather index out of range): one
     * int in device memory, 0 or 1 + the index of the first node that
     * found one, read when the host next waits for the stream (the end of
     * a run, or a node's end when profiling) if a node that may set it ran
     * since the last read (bad_armed); `graph` names that node. */
    int *bad;
    bool bad_armed;
    const xf_graph *graph;
} xf_cu_ctx;

/* Per-node state made by prepare; fields an op does not use stay zero. */
typedef struct xf_cu_node {
    const struct xf_cu_handler *handler;
    bool on_host; /* run through the cpu_ref kernel on host copies */
    cudnnTensorDescriptor_t x_desc, y_desc, b_desc;
    cudnnFilterDescriptor_t w_desc;
    cudnnConvolutionDescriptor_t conv_desc;
    cudnnActivationDescriptor_t act_desc;
    cudnnPoolingDescriptor_t pool_desc;
    cudnnConvolutionFwdAlgo_t algo;
    size_t workspace_bytes;
    bool fused;           /* conv + bias + relu in one cuDNN call */
    /* explicit padding before a cuDNN window op (asymmetric or ceil_mode) */
    void *padded;
    int pad_ndim;
    int64_t pad_in[XF_CU_MAX_DIMS], pad_out[XF_CU_MAX_DIMS], pad_begin[XF_CU_MAX_DIMS];
    float pad_value;
} xf_cu_node;

/* How one op runs on the GPU.  `accepts` decides from the graph (op,
 * attributes, dtypes, static shapes) whether the device path takes the
 * node; when it does not, the node runs through cpu_ref on host copies of
 * its operands if cpu_ref supports it, else the op is refused by name
 * with `why`. */
typedef struct xf_cu_handler {
    bool (*accepts)(const xf_graph *g, const xf_node *n, char *why, size_t why_len);
    /* optional: descriptors, algorithm choice */
    xf_status (*prepare)(xf_cu_ctx *c, const xf_graph *g, const xf_node *n, const xf_tensor_view *in,
                         const xf_tensor_view *out, xf_cu_node *st, xf_error *err);
    xf_status (*run)(xf_cu_ctx *c, const xf_graph *g, const xf_node *n, xf_cu_node *st, const xf_tensor_view *in,
                     const xf_tensor_view *out, xf_error *err);
} xf_cu_handler;

/* cuDNN / cuBLAS ops (cuda_dnn.c) */
extern const xf_cu_handler xf_cu_conv_handler, xf_cu_pool_handler, xf_cu_softmax_handler,
    xf_cu_batch_norm_handler, xf_cu_matmul_handler, xf_cu_gemm_handler;
/* own kernels (cuda_ops.c) */
extern const xf_cu_handler xf_cu_unary_handler, xf_cu_binary_handler, xf_cu_variadic_handler,
    xf_cu_where_handler, xf_cu_clip_handler, xf_cu_cast_handler, xf_cu_copy_handler, xf_cu_dropout_handler,
    xf_cu_concat_handler, xf_cu_split_handler, xf_cu_transpose_handler, xf_cu_gather_handler,
    xf_cu_slice_handler, xf_cu_pad_handler, xf_cu_expand_handler, xf_cu_reduce_handler,
    xf_cu_global_pool_handler, xf_cu_layer_norm_handler;

/* Errors naming the node and the failing call. */
xf_status xf_cu_fail(xf_error *err, const xf_node *n, const char *call, cudaError_t e);
xf_status xf_cu_dnn_fail(xf_error *err, const xf_node *n, const char *call, cudnnStatus_t s);
xf_status xf_cu_blas_fail(xf_error *err, const xf_node *n, const char *call, cublasStatus_t s);
#define XF_CU_TRY(err, n, call)                                                                    \
    do {                                                                                           \
        cudaError_t xf_cu_e_ = (call);                                                             \
        if (xf_cu_e_ != cudaSuccess)                                                               \
            return xf_cu_fail(err, n, #call, xf_cu_e_);                                            \
    } while (0)
#define XF_DNN_TRY(err, n, call)                                                                   \
    do {                                                                                           \
        cudnnStatus_t xf_dnn_s_ = (call);                                                          \
        if (xf_dnn_s_ != CUDNN_STATUS_SUCCESS)                                                     \
            return xf_cu_dnn_fail(err, n, #call, xf_dnn_s_);                                       \
    } while (0)
#define XF_BLAS_TRY(err, n, call)                                                                  \
    do {                                                                                           \
        cublasStatus_t xf_blas_s_ = (call);                                                        \
        if (xf_blas_s_ != CUBLAS_STATUS_SUCCESS)                                                   \
            return xf_cu_blas_fail(err, n, #call, xf_blas_s_);                                     \
    } while (0)

/* The argument a kernel that can find bad input gets for node n: c->bad
 * (armed for the next wait) and n's report value. */
int *xf_cu_bad_flag(xf_cu_ctx *c, const xf_node *n, int *report);
/* Makes the context's workspace at least bytes large. */
xf_status xf_cu_workspace(xf_cu_ctx *c, const xf_node *n, size_t bytes, xf_error *err);
/* Kind of a dtype; XF_CU_KIND_COUNT when the kernels have none. */
xf_cu_kind xf_cu_kind_of(xf_dtype t);
/* Reads up to max integers of input k of n (an initializer's host data, or
 * the device buffer, waiting for the stream); *count receives how many
 * there are. */
xf_status xf_cu_read_ints(xf_cu_ctx *c, const xf_graph *g, const xf_node *n, int k, const xf_tensor_view *v,
                          int64_t *vals, int max, int *count, xf_error *err);
/* The index space of shape s with no operands yet. */
void xf_cu_index_init(xf_cu_index *ix, const xf_shape *s);
/* Adds an operand with explicit strides / of shape s broadcast to the space. */
void xf_cu_index_add(xf_cu_index *ix, const int64_t *strides);
void xf_cu_index_add_broadcast(xf_cu_index *ix, const xf_shape *s);
/* Merges dimensions that every operand walks contiguously and drops
 * dimensions of size 1: the same walk, fewer divisions per element. */
void xf_cu_index_coalesce(xf_cu_index *ix);
/* Zero-padding (or value-padding) of a window op's input into st->padded
 * when st->pad_ndim is set. */
xf_status xf_cu_prepad(xf_cu_ctx *c, const xf_node *n, xf_cu_node *st, const void *x, size_t es, xf_error *err);
/* Padding of a window op along spatial axis i, as cpu_ref computes it. */
void xf_cu_window_pads(const xf_attrs *a, int ns, int i, int64_t in, int64_t out, int64_t k, int64_t stride,
                       int64_t dil, int64_t *pad_begin, int64_t *pad_end);
/* y = x broadcast (numpy rules) to y's shape (Expand, Gemm's C). */
xf_status xf_cu_broadcast(xf_cu_ctx *c, const xf_node *n, const xf_tensor_view *x, const xf_tensor_view *y,
                          xf_error *err);
/* "why" helper for accepts: writes the reason and returns false. */
bool xf_cu_refuse(char *why, size_t why_len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Whether every present operand of n is float32 with a known shape. */
bool xf_cu_all_f32(const xf_graph *g, const xf_node *n, char *why, size_t why_len);
#endif

#endif
