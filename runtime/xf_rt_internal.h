/* Runtime internals shared by the session, the memory planner and the
 * cpu_ref kernels: dtype access, index iteration, the kernel table. */
#ifndef XF_RT_INTERNAL_H
#define XF_RT_INTERNAL_H

#include "xf_runtime.h"

#include <math.h>
#include <string.h>

/* ---------------------------------------------------------------- dtypes */

#define XF_DTM(t) (1u << (t))
#define XF_DTM_FLOATS (XF_DTM(XF_DT_FLOAT) | XF_DTM(XF_DT_DOUBLE) | XF_DTM(XF_DT_FLOAT16) | \
                       XF_DTM(XF_DT_BFLOAT16))
#define XF_DTM_INTS (XF_DTM(XF_DT_INT8) | XF_DTM(XF_DT_UINT8) | XF_DTM(XF_DT_INT16) | \
                     XF_DTM(XF_DT_UINT16) | XF_DTM(XF_DT_INT32) | XF_DTM(XF_DT_INT64) | \
                     XF_DTM(XF_DT_UINT32) | XF_DTM(XF_DT_UINT64))
#define XF_DTM_NUMERIC (XF_DTM_FLOATS | XF_DTM_INTS)
/* Every type with a fixed element size: what data movement handles. */
#define XF_DTM_ANY (XF_DTM_NUMERIC | XF_DTM(XF_DT_BOOL) | XF_DTM(XF_DT_COMPLEX64) | \
                    XF_DTM(XF_DT_COMPLEX128))
#define XF_DTM_INDEX (XF_DTM(XF_DT_INT32) | XF_DTM(XF_DT_INT64))
/* the float8 formats QuantizeLinear and DequantizeLinear compute with */
#define XF_DTM_FLOAT8                                                                                              \
    (XF_DTM(XF_DT_FLOAT8E4M3FN) | XF_DTM(XF_DT_FLOAT8E4M3FNUZ) | XF_DTM(XF_DT_FLOAT8E5M2) |                        \
     XF_DTM(XF_DT_FLOAT8E5M2FNUZ))
/* The 4- and 2-bit types, held packed as ONNX stores them (element i in
 * bits (i % per_byte) * bits of byte i / per_byte, the first in the low
 * bits); the integer ones are integral. */
#define XF_DTM_PACKED_INTS (XF_DTM(XF_DT_UINT4) | XF_DTM(XF_DT_INT4) | XF_DTM(XF_DT_UINT2) | XF_DTM(XF_DT_INT2))
#define XF_DTM_PACKED (XF_DTM_PACKED_INTS | XF_DTM(XF_DT_FLOAT4E2M1))
/* The code (its bits, unsigned) of element i of a packed buffer of t
 * (one of XF_DTM_PACKED's: inline, for loops over elements). */
static inline unsigned xf_rt_packed_code(xf_dtype t, const void *p, int64_t i)
{
    const uint8_t *b = p;
    if (t == XF_DT_INT2 || t == XF_DT_UINT2)
        return b[i / 4] >> (i % 4 * 2) & 3u;
    return b[i / 2] >> (i % 2 * 4) & 15u;
}

/* Integer-valued (bool included): arithmetic on these runs in int64 so that
 * large values stay exact; everything else runs in double. */
bool xf_rt_is_integral(xf_dtype t);

/* Element i of a buffer of dtype t, converted. */
double xf_rt_load_f64(xf_dtype t, const void *base, int64_t i);
int64_t xf_rt_load_i64(xf_dtype t, const void *base, int64_t i);
/* Stores v as element i.  Integer targets truncate toward zero, saturate at
 * int64's range (uint64: its own) and take 0 for NaN (C leaves these
 * undefined), then wrap to narrower types as xf_rt_store_i64 does; bool is
 * v != 0. */
void xf_rt_store_f64(xf_dtype t, void *base, int64_t i, double v);
/* Integer targets wrap modulo their width, as ONNX Cast does. */
void xf_rt_store_i64(xf_dtype t, void *base, int64_t i, int64_t v);
/* A double as xf_rt_store_f64 gives it to an integer target: truncated,
 * saturated at int64's range, NaN as 0. */
static inline int64_t xf_rt_f64_to_i64(double v)
{
    return isnan(v) ? 0 : v >= 9223372036854775807.0 ? INT64_MAX : v <= -9223372036854775808.0 ? INT64_MIN : (int64_t)v;
}

/* Runs of n elements: element i + k * s of a buffer of dtype t for k < n
 * (s may be 0: one element repeated), converted as xf_rt_load_f64 and
 * xf_rt_load_i64 do.  They answer buf, filled, or the buffer itself where
 * it already holds the values as they are (s 1, the same type). */
const double *xf_rt_load_f64_run(xf_dtype t, const void *base, int64_t i, int64_t s, int64_t n, double *buf);
const int64_t *xf_rt_load_i64_run(xf_dtype t, const void *base, int64_t i, int64_t s, int64_t n, int64_t *buf);
/* Elements i .. i + n - 1 stored as xf_rt_store_f64 and xf_rt_store_i64 do. */
void xf_rt_store_f64_run(xf_dtype t, void *base, int64_t i, int64_t n, const double *v);
void xf_rt_store_i64_run(xf_dtype t, void *base, int64_t i, int64_t n, const int64_t *v);
/* Elements per run the elementwise kernels convert at a time. */
#define XF_RT_BLOCK 256


/* ---------------------------------------------------------------- views */

static inline bool xf_rt_present(const xf_tensor_view *v) { return v->dtype != XF_DT_UNDEFINED; }
static inline int64_t xf_rt_numel(const xf_tensor_view *v) { return xf_shape_numel(&v->shape); }
static inline size_t xf_rt_bytes(const xf_tensor_view *v)
{
    return xf_dtype_nbytes(v->dtype, xf_rt_numel(v));
}
/* axis in [-rank, rank) made non-negative; -1 when out of range. */
int xf_rt_axis(int64_t axis, int rank);
/* Product of s's dims [from, to) (1 when empty): the outer or inner extent
 * of a tensor seen as outer x len x inner around an axis. */
int64_t xf_rt_dims_product(const xf_shape *s, int from, int to);
/* Element strides of a dense row-major shape. */
void xf_rt_dense_strides(const xf_shape *s, int64_t *strides);
/* Whether a and b agree on every dimension except `axis` (concat pieces). */
bool xf_rt_same_but_axis(const xf_shape *a, const xf_shape *b, int axis);
/* Whether s broadcasts to `to` (numpy rules, `to` at least as long). */
bool xf_rt_broadcastable(const xf_shape *s, const xf_shape *to);
/* Element strides of s read as shape `to`: zero on broadcast dimensions. */
void xf_rt_broadcast_strides(const xf_shape *s, const xf_shape *to, int64_t *strides);

/* ---------------------------------------------------------------- iteration */

#define XF_RT_MAX_OPERANDS 4

/* Walks the index space `dims` in row-major order while keeping, for each
 * operand, the element offset coord . stride[k].  Broadcasting is a zero
 * stride, a transpose is a permuted stride, a reduction is the output's
 * strides with zeros on the reduced axes. */
typedef struct xf_rt_iter {
    int ndim, n_ops;
    int64_t dims[XF_MAX_DIMS];
    int64_t coord[XF_MAX_DIMS];
    int64_t stride[XF_RT_MAX_OPERANDS][XF_MAX_DIMS];
    int64_t off[XF_RT_MAX_OPERANDS];
} xf_rt_iter;

void xf_rt_iter_init(xf_rt_iter *it, const xf_shape *space);
/* Adds an operand with explicit strides and base offset; returns its index. */
int xf_rt_iter_add(xf_rt_iter *it, const int64_t *strides, int64_t base);
/* Adds an operand of shape s broadcast (numpy rules, aligned at the last
 * dimension) to the iteration space. */
int xf_rt_iter_add_broadcast(xf_rt_iter *it, const xf_shape *s);
void xf_rt_iter_next(xf_rt_iter *it);
/* Turns the walk into runs: drops unit dimensions, merges adjacent ones
 * every operand walks as one, and takes the innermost off the iteration.
 * Returns the run length (0 for an empty space) and sets step[k], operand
 * k's stride within a run; the iteration then visits the runs' starts, one
 * xf_rt_iter_next per run, numel / length of them. */
int64_t xf_rt_iter_runs(xf_rt_iter *it, int64_t *step);
/* Moves the walk (after xf_rt_iter_runs) to the start of run `run`. */
void xf_rt_iter_seek(xf_rt_iter *it, int64_t run);
/* Copies every element of `from` into the dense output `to`, element i of
 * the output taken from element it->off[0] of the input (it walks the
 * output's index space). */
void xf_rt_gather_iter(const xf_tensor_view *from, const xf_tensor_view *to, xf_rt_iter *it);

/* ---------------------------------------------------------------- cpu_ref kernels */

/* in[] has n->n_inputs views, out[] n->n_outputs, outputs allocated with
 * the shapes shape inference gave them. */
typedef xf_status (*xf_ref_kernel)(const xf_node *n, const xf_tensor_view *in,
                                   const xf_tensor_view *out, xf_error *err);

/* elementwise (cpu_ref_elementwise.c) */
xf_status xf_ref_unary(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err);
/* cpu_ref's float unary op `op` in double over n values, with a node's
 * attributes (Gelu's form, Swish's alpha); NULL where op has none. */
typedef void (*xf_ref_unary_doubles)(double *o, const double *x, int64_t n, const xf_attrs *a);
xf_ref_unary_doubles xf_ref_unary_of(xf_op op);
xf_status xf_ref_swiglu(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err);
xf_status xf_ref_binary(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err);
xf_status xf_ref_variadic(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err);
xf_status xf_ref_prelu(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err);
xf_status xf_ref_mean(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err);
xf_status xf_ref_where(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err);
xf_status xf_ref_clip(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err);
xf_status xf_ref_cast(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err);
/* acc[i] = acc[i] (r) x[j] with the arithmetic of Add, Mul, Max or Min: the
 * reductions of ScatterElements and ScatterND (r is not XF_REDUCE_NONE;
 * acc and x share a dtype). */
void xf_rt_reduce_into(xf_reduction r, const xf_tensor_view *acc, int64_t i, const xf_tensor_view *x, int64_t j);
/* QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear, MatMulInteger
 * and QLinearMatMul (cpu_ref_quant.c) */
xf_status xf_ref_quantize(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err);
xf_status xf_ref_dynamic_quantize(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err);
/* DynamicQuantizeLinear's y_scale and y_zero_point for x's range [lo, hi]
 * (NaNs skipped, widened to hold 0), also written to node n's outputs 1
 * and 2 when present (n may be NULL). */
void xf_rt_dynamic_qparams(const xf_node *n, const xf_tensor_view *out, float lo, float hi, float *scale, float *zp);
xf_status xf_ref_qmatmul(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err);
/* round_half_to_even(v) + zero_point, saturated to the range of integer
 * type t (int8, uint8, int16 or uint16): how QuantizeLinear and the
 * quantized ops write a value (NaN stays NaN, which xf_rt_store_f64 stores
 * as 0). */
float xf_rt_quantize_round(float v, float zero_point, xf_dtype t);
/* ONNX Runtime's quantized contrib ops (cpu_ref_qcontrib.c) */
xf_status xf_ref_ms_qbinary(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err);
xf_status xf_ref_ms_qunary(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err);
xf_status xf_ref_ms_qconcat(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err);
xf_status xf_ref_ms_qglobal_pool(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out,
                                 xf_error *err);
xf_status xf_ref_ms_qpool(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err);
xf_status xf_ref_ms_qsoftmax(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err);
/* QLinearSoftmax's exponentials (ONNX Runtime's): entry (uint8)(x + 255 -
 * max) of a row of d (int8: x + 127 - max) is the float exp of x less
 * the row's largest, shifted so that d of them cannot overflow. */
void xf_rt_qsoftmax_table(bool is_signed, int64_t d, float x_scale, float table[256]);
xf_status xf_ref_ms_qgemm(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err);
xf_status xf_ref_ms_quantize(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err);
/* The table of a quantized unary map on int8 or uint8 t: entry (uint8)x
 * is quantize(f(dequantize(x))) with f 0 the identity, 1 the logistic
 * function (MLAS's approximation), 2 LeakyRelu of slope alpha. */
void xf_rt_qlinear_table(xf_dtype t, float xs, int32_t xz, float ys, int32_t yz, int f, float alpha,
                         uint8_t table[256]);
/* windows (cpu_ref_conv.c) */
xf_status xf_ref_conv(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err);
xf_status xf_ref_conv_transpose(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err);
/* ConvTranspose's adjoint: gy (output ys's gradient) into gx, gw and gb
 * (NULL: not wanted), x and wt its input and weight as doubles. */
xf_status xf_ref_conv_transpose_backward(const xf_node *n, const xf_tensor_view *in, const xf_shape *ys,
                                         const double *x, const double *wt, const double *gy, double *gx, double *gw,
                                         double *gb, xf_error *err);
xf_status xf_ref_col2im(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err);
/* ConvInteger and QLinearConv */
xf_status xf_ref_conv_integer(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err);
/* The geometry of one window op along three spatial axes (fewer spatial
 * axes have the missing ones of size 1). */
typedef struct xf_rt_window {
    int64_t in[XF_MAX_SPATIAL], out[XF_MAX_SPATIAL], k[XF_MAX_SPATIAL];
    int64_t stride[XF_MAX_SPATIAL], dil[XF_MAX_SPATIAL];
    int64_t pad_begin[XF_MAX_SPATIAL], pad_end[XF_MAX_SPATIAL];
} xf_rt_window;
/* Fills w from the node's attributes and the (N, C, spatial...) shapes of
 * input x and output y.  kernel gives the kernel extent per spatial axis
 * (from the weight for Conv, the attribute for pools).  Explicit pads are
 * kept as ONNX orders them (all begins, then all ends); auto_pad SAME puts
 * the odd padding element at the end (UPPER) or the beginning (LOWER). */
xf_status xf_rt_window_setup(const xf_node *n, const xf_shape *x, const xf_shape *y, const int64_t *kernel,
                             xf_rt_window *w, xf_error *err);
/* Output position o (per spatial axis) of window w: per axis the taps
 * [lo, hi) that read inside the input; *inside counts the taps inside the
 * input, *padded those inside the explicitly padded input (never before
 * it: the room ceil_mode adds at the end is not padding). */
void xf_rt_window_taps(const xf_rt_window *w, const int64_t *o, int64_t *lo, int64_t *hi, int64_t *inside,
                       int64_t *padded);
xf_status xf_ref_pool(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err);
xf_status xf_ref_global_pool(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err);
xf_status xf_ref_max_unpool(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err);
/* matrix products (cpu_ref_linalg.c) */
xf_status xf_ref_matmul(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err);
/* A MatMul's geometry, checked (numpy rules: 1-D operands as a row or a
 * column, batch dimensions broadcast): out = n_batch products of (m x k)
 * by (k x n); operand matrices start at the element offsets the strides
 * give over `batch` (zero where an operand is broadcast). */
typedef struct xf_rt_matmul {
    int64_t m, k, n, n_batch;
    xf_shape batch;
    int64_t a_stride[XF_MAX_DIMS], b_stride[XF_MAX_DIMS];
} xf_rt_matmul;
xf_status xf_rt_matmul_geometry(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out,
                                xf_rt_matmul *mm, xf_error *err);
xf_status xf_ref_gemm(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err);
/* One (m x k) by (k x n) product of operands of type dt (float or
 * double) into acc (XF_ERR_NOMEM when out of memory); element (i, j) of an
 * operand is at i * row + j * col. */
xf_status xf_rt_matmul_block(xf_dtype dt, const void *a, int64_t a_row, int64_t a_col, const void *b, int64_t b_row,
                             int64_t b_col, int64_t m, int64_t k, int64_t n, double *acc);
/* c (m x p, rows ldc apart) += a (m x t, rows lda apart) b (t x p, rows ldb
 * apart), each element's products added in order of t. */
void xf_rt_gemm_in_order(int64_t m, int64_t t, int64_t p, const double *a, int64_t lda, const double *b, int64_t ldb,
                         double *restrict c, int64_t ldc);
/* ONNX Runtime's contrib ops (cpu_ref_contrib.c): FusedConv, FusedGemm,
 * FusedMatMul; FastGelu, BiasGelu, QuickGelu, BiasAdd; the skip layer
 * normalizations and SimplifiedLayerNormalization */
xf_status xf_ref_fused_conv(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err);
xf_status xf_ref_fused_gemm(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err);
xf_status xf_ref_fused_matmul(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err);
xf_status xf_ref_bias_act(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err);
/* The matrices FusedMatMul's operand s holds: dims (batch..., rows, cols)
 * and the element strides of each in s's buffer, for its trans and
 * transBatch attributes.  A vector is a row (A) or a column (B). */
void xf_rt_fused_matmul_view(const xf_shape *s, bool is_b, int trans, int trans_batch, xf_shape *v,
                             int64_t *strides);
/* The operands of SkipLayerNormalization, SkipSimplifiedLayerNormalization,
 * SimplifiedLayerNormalization and RMSNormalization (absent ones NULL):
 * rows of `hidden` values v = x + skip (repeating every skip_size values) +
 * bias are normalized (simplified: by their root mean square alone), times
 * gamma (repeating every gamma_size values), plus beta; optional outputs mean, inv (the inverse deviation) and sum
 * (v).  Fails when the operands do not match. */
typedef struct xf_rt_skip_norm {
    const xf_tensor_view *x, *skip, *gamma, *beta, *bias, *mean, *inv, *sum;
    bool simplified;
    int64_t hidden, rows, skip_size, gamma_size;
} xf_rt_skip_norm;
xf_status xf_rt_skip_norm_init(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out,
                               xf_rt_skip_norm *a, xf_error *err);
xf_status xf_ref_skip_layer_norm(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out,
                                 xf_error *err);
xf_status xf_ref_einsum(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err);
/* Every product an Einsum sums, in order (output shape ys): visit(ctx,
 * off) with off[k] operand k's element offset, off[n_inputs] the
 * output's. */
xf_status xf_ref_einsum_walk(const xf_node *n, const xf_tensor_view *in, const xf_shape *ys,
                             void (*visit)(void *ctx, const int64_t *off), void *ctx, xf_error *err);
xf_status xf_ref_det(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err);
/* recurrent layers: RNN, LSTM and GRU (cpu_ref_rnn.c) */
xf_status xf_ref_rnn(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err);
/* normalization and reductions (cpu_ref_norm.c) */
xf_status xf_ref_batch_norm(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err);
xf_status xf_ref_layer_norm(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err);
xf_status xf_ref_softmax(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err);
xf_status xf_ref_reduce(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err);
/* InstanceNormalization and GroupNormalization */
xf_status xf_ref_group_norm(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err);
xf_status xf_ref_mvn(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err);
xf_status xf_ref_lrn(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err);
/* ONNX Runtime's attention family (cpu_ref_attn.c).  Attention and
 * MultiHeadAttention run their matrix products through a gemm: C = alpha
 * A B (B transposed when trans_b) + beta C, row-major, C not read when
 * beta is 0; false when it fails. */
typedef bool (*xf_attn_gemm)(bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float *a, int64_t lda,
                             const float *b, int64_t ldb, float beta, float *c, int64_t ldc);
/* How many OpenMP threads share the heads of one attention node out: 1
 * with the reference product (cpu_ref runs on one thread), else up to
 * the threads there are and at most one per head; and the calling
 * thread's number among them (0 without OpenMP). */
int xf_attn_threads(xf_attn_gemm gemm, int64_t heads);
int xf_attn_thread_num(void);
/* Put before a `for` loop over the heads: its iterations shared out over
 * `threads` OpenMP threads, each thread's `failed` or-ed together. */
#ifdef _OPENMP
#define XF_ATTN_PRAGMA(x) _Pragma(#x)
#define XF_ATTN_HEADS_FOR(threads, failed)                                                                             \
    XF_ATTN_PRAGMA(omp parallel for schedule(static) num_threads(threads) if ((threads) > 1) reduction(| : failed))
#else
#define XF_ATTN_HEADS_FOR(threads, failed)
#endif
bool xf_attn_gemm_ref(bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float *a, int64_t lda,
                      const float *b, int64_t ldb, float beta, float *c, int64_t ldc);
xf_status xf_attn_attention(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_attn_gemm gemm,
                            xf_error *err);
/* QAttention (cpu_ref_attn.c): weights, when not NULL, are the weights
 * less their zero points as floats, as xf_attn_qattention_weights makes
 * them (which returns their largest magnitude, -1 when out of memory),
 * and max_w that magnitude. */
xf_status xf_attn_qattention(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out,
                             xf_attn_gemm gemm, const float *weights, int32_t max_w, xf_error *err);
int32_t xf_attn_qattention_weights(const xf_node *n, const xf_tensor_view *in, float *wf);
/* QAttention from the int32 sums of its projection (B * S rows). */
xf_status xf_attn_qattention_sums(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out,
                                  xf_attn_gemm gemm, const int32_t *sums, xf_error *err);
xf_status xf_attn_mha(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_attn_gemm gemm,
                      xf_error *err);
xf_status xf_ref_ms_attention(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err);
/* DynamicQuantizeLSTM with its float products run by gemm (cpu_ref_qlstm.c). */
xf_status xf_qlstm(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_attn_gemm gemm,
                   xf_error *err);
xf_status xf_ref_ms_dynamic_quantize_lstm(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out,
                                          xf_error *err);
xf_status xf_ref_ms_qattention(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err);
xf_status xf_ref_ms_mha(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err);
xf_status xf_ref_ms_embed_layer_norm(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out,
                                     xf_error *err);
xf_status xf_ref_ms_rotary(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err);
/* Softmax of a row in place, as ONNX Runtime's attention kernels compute it. */
void xf_attn_softmax_row(float *row, int64_t n);
/* RotaryEmbedding of one head vector x of hs values (the first rot rotated;
 * interleaved pairs or halves) with a cache row's cos and sin (rot / 2). */
void xf_rotary_row(const float *x, float *y, const float *cos_row, const float *sin_row, int64_t rot, int64_t hs,
                   bool interleaved);
/* Every head vector of x (B, S, N * H), or (B, N, S, H) when bnsh, rotated
 * into y, position (b, s) with cache row rows[b * S + s] (rot / 2 values;
 * the caller checks the rows). */
typedef struct xf_rotary_geom {
    int64_t b, s, heads, hs, rot;
    bool bnsh, interleaved;
} xf_rotary_geom;
void xf_rotary_apply(const xf_rotary_geom *g, const float *x, float *y, const float *cosc, const float *sinc,
                     const int64_t *rows);
/* ONNX's Attention (opset 23 and 24) and RotaryEmbedding (cpu_ref_opset23.c);
 * Attention's matrix products go through gemm. */
xf_status xf_attn_onnx(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_attn_gemm gemm,
                       xf_error *err);
xf_status xf_ref_attention(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err);
xf_status xf_ref_rotary(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err);
/* opset 27's CausalConvWithState and LinearAttention (cpu_ref_state.c) */
xf_status xf_ref_causal_conv(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err);
xf_status xf_ref_linear_attention(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out,
                                  xf_error *err);
/* MatMulNBits and GroupQueryAttention (cpu_ref_llm.c).  The dequantized
 * weight is (N, K), row n the weight's column n.  At accuracy_level 4
 * ONNX Runtime's CPU kernel computes with A quantized to int8 per block of
 * K (scale max |a| / 127, rounded to nearest even); xf_nbits_quantize_a
 * gives that A back in float, and xf_nbits_quantizes_a says whether the
 * node does it.  xf_nbits_dequantize_rows writes rows [r0, r1) of the
 * dequantized weight to w (r1 - r0 rows of K); it fails only on a g_idx
 * naming a block out of range. */
xf_status xf_nbits_dequantize_rows(const xf_node *n, const xf_tensor_view *in, int64_t r0, int64_t r1, float *w,
                                   xf_error *err);
bool xf_nbits_quantizes_a(const xf_node *n, const xf_tensor_view *in);
void xf_nbits_quantize_a(const float *a, float *out, int64_t m, int64_t k, int64_t block);
xf_status xf_ref_ms_matmul_nbits(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out,
                                 xf_error *err);
xf_status xf_attn_gqa(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_attn_gemm gemm,
                      xf_error *err);
xf_status xf_ref_ms_gqa(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err);
/* MatMulIntegerToFloat and DynamicQuantizeMatMul */
xf_status xf_ref_ms_int_matmul_float(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out,
                                     xf_error *err);
/* GatherBlockQuantized of uint8 data */
xf_status xf_ref_ms_gather_block_quantized(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out,
                                           xf_error *err);
xf_status xf_ref_lp_norm(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err);
/* along one axis: ArgMax/ArgMin, Hardmax, CumSum (cpu_ref_axis.c) */
xf_status xf_ref_arg_reduce(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err);
xf_status xf_ref_hardmax(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err);
xf_status xf_ref_cumsum(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err);
/* data movement (cpu_ref_movement.c) */
xf_status xf_ref_copy(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err);
xf_status xf_ref_dropout(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err);
xf_status xf_ref_concat(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err);
xf_status xf_ref_split(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err);
xf_status xf_ref_transpose(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err);
xf_status xf_ref_gather(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err);
xf_status xf_ref_gather_elements(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out,
                                 xf_error *err);
xf_status xf_ref_gather_nd(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err);
xf_status xf_ref_non_zero(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err);
xf_status xf_ref_resize(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err);
/* Resize's adjoint in its input: gx (input 0's elements) += the taps'
 * weights times gy (output ys's), as the forward sum reads them. */
xf_status xf_ref_resize_backward(const xf_node *n, const xf_tensor_view *in, const xf_shape *ys, const double *gy,
                                 double *gx, xf_error *err);
xf_status xf_ref_scatter_elements(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out,
                                  xf_error *err);
xf_status xf_ref_scatter_nd(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err);
xf_status xf_ref_tensor_scatter(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out,
                                xf_error *err);
xf_status xf_ref_top_k(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err);
xf_status xf_ref_slice(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err);
/* Slice's walk of its input for output shape ys: output element i (in
 * row-major order over ys) is input element base + coord . strides. */
xf_status xf_ref_slice_walk(const xf_node *n, const xf_tensor_view *in, const xf_shape *ys, int64_t *base,
                            int64_t *strides, xf_error *err);
xf_status xf_ref_pad(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err);
xf_status xf_ref_center_crop_pad(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out,
                                 xf_error *err);
xf_status xf_ref_expand(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err);
xf_status xf_ref_shape(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err);
xf_status xf_ref_size(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err);
xf_status xf_ref_constant_of_shape(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err);
xf_status xf_ref_range(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err);
/* movement and indexing (cpu_ref_index.c) */
xf_status xf_ref_trilu(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err);
xf_status xf_ref_tile(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err);
xf_status xf_ref_depth_space(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err);
xf_status xf_ref_eye_like(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err);
xf_status xf_ref_reverse_sequence(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out,
                                  xf_error *err);
xf_status xf_ref_one_hot(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err);
xf_status xf_ref_compress(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err);
xf_status xf_ref_unique(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err);
/* detection (cpu_ref_detect.c) */
xf_status xf_ref_roi_align(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err);
xf_status xf_ref_nms(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err);
xf_status xf_ref_max_roi_pool(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err);
/* sampling (cpu_ref_sample.c) */
xf_status xf_ref_grid_sample(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err);
xf_status xf_ref_affine_grid(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err);
xf_status xf_ref_deform_conv(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err);
/* signal processing (cpu_ref_signal.c): DFT, STFT, the windows, MelWeightMatrix */
xf_status xf_ref_dft(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err);
xf_status xf_ref_stft(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err);
xf_status xf_ref_window(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err);
xf_status xf_ref_mel_weight_matrix(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out,
                                   xf_error *err);
/* ImageScaler and Crop, of opsets 1 to 9 (cpu_ref_legacy.c). */
xf_status xf_ref_image_scaler(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err);
xf_status xf_ref_crop(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err);
/* the random ops (cpu_ref_random.c): key seeds the generator of a node
 * without a seed attribute; cpu_ref's run_node passes xf_ref_random_key,
 * the hash of the node's name (else of its first output's).
 * xf_ref_random_unnamed is the kernel-table form: the key of no name. */
uint64_t xf_ref_random_key(const xf_graph *g, const xf_node *n);
xf_status xf_ref_random(const xf_node *n, uint64_t key, const xf_tensor_view *in, const xf_tensor_view *out,
                        xf_error *err);
xf_status xf_ref_random_unnamed(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out,
                                xf_error *err);

/* ---------------------------------------------------------------- 16-bit floats (half_runs.c) */

/* The session's float16 and bfloat16 nodes made float ones between Casts,
 * for backends with half_as_float (half_runs.c). */
xf_status xf_rt_lower_half(xf_graph *g, xf_error *err);

/* ---------------------------------------------------------------- control flow (control_flow.c) */

/* If, Loop and Scan nodes whose subgraphs loaded (see xf_opaque_body): the
 * session runs them itself, whatever the backend, by running their
 * subgraphs as sessions of their own on that backend. */
typedef struct xf_rt_flow xf_rt_flow;
/* Whether n is an If, a Loop or a Scan (loaded or not: create says which). */
bool xf_rt_flow_node(const xf_node *n);
/* The options of a session made inside another session's node (a
 * subgraph's, a Gradient's part): dynamic, with the limits and choices of
 * inherit (the outer session's options; NULL: none). */
xf_session_options xf_rt_inherited_options(const xf_session_options *inherit);
/* Makes the sessions of node `node`'s subgraphs, with the outer session's
 * options (inherit, as xf_rt_inherited_options takes them: the largest
 * tensor they may hold among them); fails naming the node when a subgraph
 * did not load or holds an op the backend lacks. */
xf_status xf_rt_flow_create(const xf_graph *g, int node, int64_t opset, const char *backend,
                            const xf_session_options *inherit, xf_rt_flow **out, xf_error *err);
/* Runs the node: in[] has its n_inputs tensors in host memory (NULL for an
 * omitted one), out[] receives n_outputs new tensors. */
xf_status xf_rt_flow_run(xf_rt_flow *f, xf_tensor *const *in, xf_tensor **out, xf_error *err);
void xf_rt_flow_free(xf_rt_flow *f);
/* FlexAttention (flex_attention.c): the softmax precision of node n on
 * inputs of type t (UNDEFINED for a type it cannot be computed in); runs the
 * node on Q, K and V (in), its score_mod and prob_mod sessions (NULL: not
 * given) taking the outer values after their own input. */
xf_dtype xf_rt_flex_precision(const xf_node *n, xf_dtype t);
xf_status xf_rt_flex_run(const xf_node *n, xf_tensor *const *in, xf_tensor *const *outer, int n_outer,
                         xf_session *score_mod, xf_session *prob_mod, xf_tensor **out, xf_error *err);
/* Gradient (gradient.c): node `node` of g made into the part of g it
 * differentiates, a session of it on backend, and its backward pass; run
 * on the node's inputs (in: xs then zs), out[] receiving the gradients. */
typedef struct xf_rt_gradient xf_rt_gradient;
xf_status xf_rt_gradient_create(const xf_graph *g, int node, int64_t opset, const char *backend,
                                const xf_session_options *inherit, xf_rt_gradient **out, xf_error *err);
xf_status xf_rt_gradient_run(xf_rt_gradient *gr, xf_tensor *const *in, xf_tensor **out, xf_error *err);
void xf_rt_gradient_free(xf_rt_gradient *gr);

/* ---------------------------------------------------------------- ONNX-ML (ml_*.c) */

/* The host ops (ml_ops.c lists them: ONNX-ML's, ONNX's string, text, image
 * and loss ops, the training optimizers, ONNX Runtime's Tokenizer), run on the
 * host like control flow, from a plan checked once. */
typedef struct xf_rt_ml xf_rt_ml;
bool xf_rt_ml_node(const xf_node *n);
/* max_bytes: the session's largest tensor (0: no limit), which outputs
 * whose size the data decides (ImageDecoder's) must keep within. */
xf_status xf_rt_ml_create(const xf_node *n, size_t max_bytes, xf_rt_ml **out, xf_error *err);
/* in[] has the node's inputs in host memory; out[] receives new tensors. */
xf_status xf_rt_ml_run(const xf_rt_ml *m, xf_tensor *const *in, xf_tensor **out, xf_error *err);
void xf_rt_ml_free(xf_rt_ml *m);

/* ---------------------------------------------------------------- sequences (sequence.c) */

/* Whether n is one of ONNX's sequence ops (XF_OPF_SEQ): the session runs
 * them itself, on host memory, in dynamic mode. */
bool xf_rt_seq_node(const xf_node *n);

/* Whether node n gives its input 0 another shape and nothing else
 * (Reshape, Flatten, Squeeze, Unsqueeze, Identity): memory plans make its
 * output a view of its input, dynamic runs hand its input's block on. */
bool xf_rt_view_op(const xf_node *n);
/* Runs sequence node `node`: in[] has its n_inputs values in host memory
 * (sequences as xf_tensor sequences, NULL for an omitted input), *out
 * receives a new reference.  Errors name the node. */
xf_status xf_rt_seq_run(const xf_graph *g, int node, xf_tensor *const *in, xf_tensor **out, xf_error *err);

/* ---------------------------------------------------------------- standard ops on strings (string_tensors.c) */

/* Whether n's op may read or write tensors of strings: those that move,
 * select or compare elements, and Cast and CastLike.  The session runs
 * such a node itself, on host memory, where it reads or writes strings. */
bool xf_rt_string_tensor_op(const xf_node *n);
/* String i of tensor of strings t ("" where it holds none). */
static inline const char *xf_rt_str_at(const xf_tensor *t, int64_t i)
{
    return t->strings && t->strings[i] ? t->strings[i] : "";
}
/* Bytes of the UTF-8 character that starts with byte c (0: not a start). */
static inline int xf_rt_utf8_lead(unsigned char c)
{
    return c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
}
/* The UTF-8 character at s (len bytes left): its bytes, 0 when s does not
 * start with one (a bad lead or continuation byte, or too few bytes); its
 * code point in *cp. */
static inline int xf_rt_utf8_char(const char *s, size_t len, uint32_t *cp)
{
    const unsigned char *u = (const unsigned char *)s;
    int b = len ? xf_rt_utf8_lead(u[0]) : 0;
    if (!b || (size_t)b > len)
        return 0;
    uint32_t c = b == 1 ? u[0] : u[0] & (0x7f >> b);
    for (int k = 1; k < b; k++) {
        if ((u[k] >> 6) != 2)
            return 0;
        c = c << 6 | (u[k] & 0x3f);
    }
    *cp = c;
    return b;
}
/* Characters in s[0 .. len - 1]; -1 when it is not UTF-8. */
static inline int64_t xf_rt_utf8_count(const char *s, size_t len)
{
    int64_t n = 0;
    uint32_t cp;
    for (size_t i = 0; i < len; n++) {
        int b = xf_rt_utf8_char(s + i, len - i, &cp);
        if (!b)
            return -1;
        i += (size_t)b;
    }
    return n;
}
/* qsort/bsearch order of two `const char *` by their bytes. */
static inline int xf_rt_cmp_strings(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}
/* Whether node i of g (a standard op, not a sequence op) reads or writes
 * tensors of strings, as g types its values. */
bool xf_rt_touches_strings(const xf_graph *g, int i);
/* Runs such a node: in[] has its inputs in host memory (NULL for an
 * omitted one), out[] receives new tensors.  Errors name the node. */
xf_status xf_rt_string_tensor_run(const xf_node *n, xf_tensor *const *in, xf_tensor **out, xf_error *err);

/* The cpu_ref backend (cpu_ref.c). */
extern const xf_backend xf_backend_cpu_ref;

/* The error every backend gives for a node it cannot run: "backend B does
 * not support op X[ detail] (node 'n')"; detail (printf-style) may be NULL. */
xf_status xf_rt_unsupported(xf_error *err, const xf_backend *be, const xf_node *n, const char *detail_fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Error for a node whose operand breaks what the kernel relies on. */
xf_status xf_rt_bad_node(xf_error *err, const xf_node *n, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
