/* The cuda backend's own kernels: a few general ones (elementwise over a
 * strided index space, strided copy, pad, gather, fill, reduction, layer
 * normalization) that the ops in cuda_ops.c are built from.  Every kernel
 * walks its elements with a grid-stride loop over 64-bit indices. */
#include "cuda_internal.h"

#include <cuda_fp16.h>
#include <math.h>
#include <stdint.h>
#include <string.h>
#include <type_traits>

namespace {

const int THREADS = 256;

int blocks_for(int64_t n)
{
    int64_t b = (n + THREADS - 1) / THREADS;
    const int64_t cap = 65535LL * 32;
    return (int)(b < 1 ? 1 : b > cap ? cap : b);
}

/* Offsets of operands 0..n_ops-1 for element i of the space. */
__device__ void offsets(const xf_cu_index &ix, int64_t i, int64_t *off)
{
    for (int k = 0; k < ix.n_ops; k++)
        off[k] = 0;
    for (int d = ix.ndim - 1; d >= 0; d--) {
        int64_t c = i % ix.dims[d];
        i /= ix.dims[d];
        for (int k = 0; k < ix.n_ops; k++)
            off[k] += c * ix.stride[k][d];
    }
}

int64_t numel(const xf_cu_index &ix)
{
    int64_t n = 1;
    for (int d = 0; d < ix.ndim; d++)
        n *= ix.dims[d];
    return n;
}

#define GRID_LOOP(i, n) for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < (n); \
                             i += (int64_t)blockDim.x * gridDim.x)

/* ---------------------------------------------------------------- unary */

/* log(1 + e^x) without overflow for large x */
__device__ float softplus(float x) { return x > 0.f ? x + log1pf(expf(-x)) : log1pf(expf(x)); }

/* a and b: the node's alpha and beta (Selu's alpha and gamma, Shrink's
 * lambd and bias), or Clip's bounds */
__device__ float unary_apply(int op, float x, float a, float b)
{
    switch (op) {
    case XF_CU_RELU: return x < 0.f ? 0.f : x;
    case XF_CU_SIGMOID: return 1.f / (1.f + expf(-x));
    case XF_CU_TANH: return tanhf(x);
    case XF_CU_ABS: return fabsf(x);
    case XF_CU_NEG: return -x;
    case XF_CU_EXP: return expf(x);
    case XF_CU_LOG: return logf(x);
    case XF_CU_SQRT: return sqrtf(x);
    case XF_CU_RECIPROCAL: return 1.f / x;
    case XF_CU_FLOOR: return floorf(x);
    case XF_CU_CEIL: return ceilf(x);
    case XF_CU_ERF: return erff(x);
    case XF_CU_SIN: return sinf(x);
    case XF_CU_COS: return cosf(x);
    case XF_CU_SOFTPLUS: return softplus(x);
    case XF_CU_LEAKY_RELU: return x < 0.f ? a * x : x;
    case XF_CU_ELU: return x < 0.f ? a * expm1f(x) : x;
    case XF_CU_HARD_SIGMOID: return fmaxf(0.f, fminf(1.f, a * x + b));
    case XF_CU_HARD_SWISH: return x * fmaxf(0.f, fminf(1.f, x / 6.f + 0.5f));
    case XF_CU_CLIP: { /* min first, then max, as cpu_ref */
        float v = x < a ? a : x;
        return v > b ? b : v;
    }
    case XF_CU_SIGN: return isnan(x) ? x : (float)((x > 0.f) - (x < 0.f));
    case XF_CU_ROUND: return rintf(x); /* halves to even */
    case XF_CU_TAN: return tanf(x);
    case XF_CU_ATAN: return atanf(x);
    case XF_CU_ASIN: return asinf(x);
    case XF_CU_ACOS: return acosf(x);
    case XF_CU_SINH: return sinhf(x);
    case XF_CU_COSH: return coshf(x);
    case XF_CU_ASINH: return asinhf(x);
    case XF_CU_ACOSH: return acoshf(x);
    case XF_CU_ATANH: return atanhf(x);
    case XF_CU_SOFTSIGN: return x / (1.f + fabsf(x));
    case XF_CU_THRESHOLDED_RELU: return x > a ? x : 0.f;
    case XF_CU_SELU: return b * (x > 0.f ? x : a * expm1f(x));
    case XF_CU_CELU: return x > 0.f ? x : a * expm1f(x / a);
    case XF_CU_SHRINK: return x < -a ? x + b : x > a ? x - b : 0.f;
    case XF_CU_MISH: return x * tanhf(softplus(x));
    case XF_CU_GELU: return 0.5f * x * erfcf(-x * 0.70710678118654752f);
    case XF_CU_GELU_TANH: return 0.5f * x * (1.f + tanhf(0.79788456080286536f * (x + 0.044715f * x * x * x)));
    }
    return x;
}

__global__ void unary_kernel(int op, int64_t n, const float *x, float *y, float a, float b)
{
    GRID_LOOP(i, n) y[i] = unary_apply(op, x[i], a, b);
}

/* ---------------------------------------------------------------- binary */

template <typename T> __device__ T bin_int(int op, T a, T b)
{
    typedef typename std::conditional<sizeof(T) == 8, unsigned long long, unsigned int>::type U;
    switch (op) {
    case XF_CU_ADD: return (T)((U)a + (U)b);
    case XF_CU_SUB: return (T)((U)a - (U)b);
    case XF_CU_MUL: return (T)((U)a * (U)b);
    case XF_CU_DIV: return b == 0 ? (T)0 : b == (T)-1 ? (T)(0 - (U)a) : a / b;
    case XF_CU_POW: {
        if (b < 0)
            return a == 1 ? (T)1 : a == (T)-1 ? ((b & 1) ? (T)-1 : (T)1) : (T)0;
        U r = 1, base = (U)a;
        for (T e = b; e; e >>= 1) {
            if (e & 1)
                r *= base;
            base *= base;
        }
        return (T)r;
    }
    case XF_CU_MAX: return a > b ? a : b;
    case XF_CU_MIN: return a < b ? a : b;
    case XF_CU_EQUAL: return a == b;
    case XF_CU_GREATER: return a > b;
    case XF_CU_LESS: return a < b;
    case XF_CU_GREATER_EQ: return a >= b;
    case XF_CU_LESS_EQ: return a <= b;
    }
    return 0;
}

__device__ float bin_float(int op, float a, float b)
{
    switch (op) {
    case XF_CU_ADD: return a + b;
    case XF_CU_SUB: return a - b;
    case XF_CU_MUL: return a * b;
    case XF_CU_DIV: return a / b;
    case XF_CU_POW: return powf(a, b);
    case XF_CU_MAX: return isnan(a) || isnan(b) ? NAN : a > b ? a : b;
    case XF_CU_MIN: return isnan(a) || isnan(b) ? NAN : a < b ? a : b;
    case XF_CU_EQUAL: return a == b;
    case XF_CU_GREATER: return a > b;
    case XF_CU_LESS: return a < b;
    case XF_CU_GREATER_EQ: return a >= b;
    case XF_CU_LESS_EQ: return a <= b;
    }
    return 0.f;
}

__device__ float bin_apply(int op, float a, float b) { return bin_float(op, a, b); }
__device__ int32_t bin_apply(int op, int32_t a, int32_t b) { return bin_int<int32_t>(op, a, b); }
__device__ int64_t bin_apply(int op, int64_t a, int64_t b) { return bin_int<int64_t>(op, a, b); }

template <typename T>
__global__ void binary_kernel(int op, bool to_bool, xf_cu_index ix, int64_t n, const T *a, const T *b, void *y)
{
    GRID_LOOP(i, n) {
        int64_t off[XF_CU_MAX_OPERANDS];
        offsets(ix, i, off);
        T r = bin_apply(op, a[off[0]], b[off[1]]);
        if (to_bool)
            ((uint8_t *)y)[i] = r != (T)0;
        else
            ((T *)y)[i] = r;
    }
}

/* ---------------------------------------------------------------- movement */

/* Elements moved as opaque words of their size. */
struct word16 {
    uint64_t lo, hi;
};

template <typename W>
__global__ void where_kernel(xf_cu_index ix, int64_t n, const uint8_t *cond, const W *x, const W *t, W *y)
{
    GRID_LOOP(i, n) {
        int64_t off[XF_CU_MAX_OPERANDS];
        offsets(ix, i, off);
        y[i] = cond[off[0]] ? x[off[1]] : t[off[2]];
    }
}

template <typename W>
__global__ void copy_kernel(xf_cu_index ix, int64_t n, const W *src, int64_t src_base, W *dst, int64_t dst_base)
{
    GRID_LOOP(i, n) {
        int64_t off[XF_CU_MAX_OPERANDS];
        offsets(ix, i, off);
        dst[dst_base + off[1]] = src[src_base + off[0]];
    }
}

struct pad_geom {
    int ndim, mode;
    int64_t in[XF_CU_MAX_DIMS], out[XF_CU_MAX_DIMS], begin[XF_CU_MAX_DIMS];
};

template <typename W> __global__ void pad_kernel(pad_geom p, int64_t n, W value, const W *x, W *y)
{
    GRID_LOOP(i, n) {
        int64_t rest = i, off = 0, stride = 1;
        bool outside = false;
        for (int d = p.ndim - 1; d >= 0; d--) {
            int64_t c = rest % p.out[d] - p.begin[d], dim = p.in[d];
            rest /= p.out[d];
            if (c < 0 || c >= dim) {
                if (p.mode == 0) {
                    outside = true;
                    break;
                }
                if (p.mode == 3) { /* wrap */
                    c = (c % dim + dim) % dim;
                } else if (p.mode == 2 || dim == 1) {
                    c = c < 0 ? 0 : dim - 1;
                } else { /* reflect without repeating the edge */
                    int64_t period = 2 * (dim - 1);
                    c %= period;
                    c += c < 0 ? period : 0;
                    c = c < dim ? c : period - c;
                }
            }
            off += c * stride;
            stride *= dim;
        }
        y[i] = outside ? value : x[off];
    }
}

template <typename W>
__global__ void gather_kernel(int64_t n, int64_t len, int64_t inner, int64_t n_idx, const void *idx, bool idx64,
                              const W *x, W *y, int *bad, int report)
{
    GRID_LOOP(i, n) {
        int64_t in_i = i % inner, j = i / inner % n_idx, o = i / inner / n_idx;
        int64_t k = idx64 ? ((const int64_t *)idx)[j] : ((const int32_t *)idx)[j];
        k += k < 0 ? len : 0;
        if (k < 0 || k >= len) {
            atomicCAS(bad, 0, report); /* the first node to see one keeps the flag */
            y[i] = W();
            continue;
        }
        y[i] = x[(o * len + k) * inner + in_i];
    }
}

template <typename W> __global__ void fill_kernel(int64_t n, W value, W *y)
{
    GRID_LOOP(i, n) y[i] = value;
}

/* ---------------------------------------------------------------- cast */

__device__ bool kind_integral(int k) { return k >= XF_CU_I8; }

__device__ double load_f(int k, const void *p, int64_t i)
{
    switch (k) {
    case XF_CU_F32: return ((const float *)p)[i];
    case XF_CU_F64: return ((const double *)p)[i];
    case XF_CU_F16: return __half2float(((const __half *)p)[i]);
    }
    return 0.0;
}

__device__ int64_t load_i(int k, const void *p, int64_t i)
{
    switch (k) {
    case XF_CU_I8: return ((const int8_t *)p)[i];
    case XF_CU_U8: return ((const uint8_t *)p)[i];
    case XF_CU_I16: return ((const int16_t *)p)[i];
    case XF_CU_U16: return ((const uint16_t *)p)[i];
    case XF_CU_I32: return ((const int32_t *)p)[i];
    case XF_CU_U32: return ((const uint32_t *)p)[i];
    case XF_CU_I64: return ((const int64_t *)p)[i];
    case XF_CU_U64: return (int64_t)((const uint64_t *)p)[i];
    case XF_CU_BOOL: return ((const uint8_t *)p)[i] != 0;
    }
    return 0;
}

/* Integer targets wrap modulo their width. */
__device__ void store_i(int k, void *p, int64_t i, int64_t v)
{
    switch (k) {
    case XF_CU_I8: ((int8_t *)p)[i] = (int8_t)(uint8_t)v; break;
    case XF_CU_U8: ((uint8_t *)p)[i] = (uint8_t)v; break;
    case XF_CU_I16: ((int16_t *)p)[i] = (int16_t)(uint16_t)v; break;
    case XF_CU_U16: ((uint16_t *)p)[i] = (uint16_t)v; break;
    case XF_CU_I32: ((int32_t *)p)[i] = (int32_t)(uint32_t)v; break;
    case XF_CU_U32: ((uint32_t *)p)[i] = (uint32_t)v; break;
    case XF_CU_I64: ((int64_t *)p)[i] = v; break;
    case XF_CU_U64: ((uint64_t *)p)[i] = (uint64_t)v; break;
    case XF_CU_BOOL: ((uint8_t *)p)[i] = v != 0; break;
    case XF_CU_F32: ((float *)p)[i] = (float)v; break;
    case XF_CU_F64: ((double *)p)[i] = (double)v; break;
    case XF_CU_F16: ((__half *)p)[i] = __float2half((float)v); break;
    }
}

/* Float sources, as cpu_ref: integer targets truncate toward zero through
 * int64 (saturating there, 0 for NaN) and wrap into a narrower kind; uint64
 * saturates at its own range; bool is v != 0. */
__device__ void store_f(int k, void *p, int64_t i, double v)
{
    switch (k) {
    case XF_CU_F32: ((float *)p)[i] = (float)v; return;
    case XF_CU_F64: ((double *)p)[i] = v; return;
    case XF_CU_F16: ((__half *)p)[i] = __double2half(v); return;
    case XF_CU_BOOL: ((uint8_t *)p)[i] = v != 0.0; return;
    case XF_CU_U64:
        ((uint64_t *)p)[i] = !(v > 0.0) ? 0 : v >= 18446744073709551616.0 ? UINT64_MAX : (uint64_t)v;
        return;
    }
    int64_t r = isnan(v) ? 0 : v <= -9223372036854775808.0 ? INT64_MIN : v >= 9223372036854775807.0 ? INT64_MAX
                                                                                                      : (int64_t)v;
    store_i(k, p, i, r);
}

__global__ void cast_kernel(int from, int to, int64_t n, const void *x, void *y)
{
    GRID_LOOP(i, n) {
        if (kind_integral(from))
            store_i(to, y, i, load_i(from, x, i));
        else
            store_f(to, y, i, load_f(from, x, i));
    }
}

/* ---------------------------------------------------------------- reductions */

__device__ float reduce_init(int op)
{
    return op == XF_CU_RMAX ? -INFINITY : op == XF_CU_RMIN ? INFINITY : 0.f;
}

/* NaN wins, as in cpu_ref. */
__device__ float reduce_combine(int op, float r, float v)
{
    switch (op) {
    case XF_CU_RMAX: return isnan(r) ? r : (v > r || isnan(v)) ? v : r;
    case XF_CU_RMIN: return isnan(r) ? r : (v < r || isnan(v)) ? v : r;
    }
    return r + v;
}

/* Combines v across the block; the result is valid in thread 0. */
__device__ float block_reduce(int op, float v)
{
    __shared__ float part[32];
    for (int s = 16; s > 0; s >>= 1)
        v = reduce_combine(op, v, __shfl_down_sync(0xffffffffu, v, s));
    int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = (blockDim.x + 31) / 32;
    __syncthreads(); /* part[] may still be read from a previous call */
    if (lane == 0)
        part[warp] = v;
    __syncthreads();
    v = (int)threadIdx.x < warps ? part[threadIdx.x] : reduce_init(op);
    if (warp == 0)
        for (int s = 16; s > 0; s >>= 1)
            v = reduce_combine(op, v, __shfl_down_sync(0xffffffffu, v, s));
    return v;
}

/* Many reduced elements per output: one block per output. */
__global__ void reduce_block_kernel(int op, xf_cu_index kept, xf_cu_index red, int64_t n_out, int64_t n_red,
                                    const float *x, float *y)
{
    for (int64_t o = blockIdx.x; o < n_out; o += gridDim.x) {
        int64_t base[XF_CU_MAX_OPERANDS];
        offsets(kept, o, base);
        float acc = reduce_init(op);
        for (int64_t r = threadIdx.x; r < n_red; r += blockDim.x) {
            int64_t off[XF_CU_MAX_OPERANDS];
            offsets(red, r, off);
            acc = reduce_combine(op, acc, x[base[0] + off[0]]);
        }
        acc = block_reduce(op, acc);
        if (threadIdx.x == 0)
            y[o] = op == XF_CU_RMEAN ? acc / (float)n_red : acc;
    }
}

/* Few reduced elements per output: one thread per output. */
__global__ void reduce_thread_kernel(int op, xf_cu_index kept, xf_cu_index red, int64_t n_out, int64_t n_red,
                                     const float *x, float *y)
{
    GRID_LOOP(o, n_out) {
        int64_t base[XF_CU_MAX_OPERANDS];
        offsets(kept, o, base);
        float acc = reduce_init(op);
        for (int64_t r = 0; r < n_red; r++) {
            int64_t off[XF_CU_MAX_OPERANDS];
            offsets(red, r, off);
            acc = reduce_combine(op, acc, x[base[0] + off[0]]);
        }
        y[o] = op == XF_CU_RMEAN ? acc / (float)n_red : acc;
    }
}

/* ---------------------------------------------------------------- layer norm */

__global__ void layer_norm_kernel(int64_t outer, int64_t inner, xf_cu_index norm, const float *x,
                                  const float *scale, const float *bias, float eps, float *y, float *mean_out,
                                  float *inv_out)
{
    __shared__ float shared_mean, shared_inv;
    for (int64_t o = blockIdx.x; o < outer; o += gridDim.x) {
        const float *row = x + o * inner;
        float s = 0.f;
        for (int64_t i = threadIdx.x; i < inner; i += blockDim.x)
            s += row[i];
        s = block_reduce(XF_CU_RSUM, s);
        if (threadIdx.x == 0)
            shared_mean = s / (float)inner;
        __syncthreads();
        float mean = shared_mean, v = 0.f;
        for (int64_t i = threadIdx.x; i < inner; i += blockDim.x) {
            float d = row[i] - mean;
            v += d * d;
        }
        v = block_reduce(XF_CU_RSUM, v);
        if (threadIdx.x == 0) {
            shared_inv = rsqrtf(v / (float)inner + eps);
            if (mean_out)
                mean_out[o] = mean;
            if (inv_out)
                inv_out[o] = shared_inv;
        }
        __syncthreads();
        float inv = shared_inv;
        for (int64_t i = threadIdx.x; i < inner; i += blockDim.x) {
            int64_t off[XF_CU_MAX_OPERANDS];
            offsets(norm, i, off);
            y[o * inner + i] = (row[i] - mean) * inv * scale[off[0]] + (bias ? bias[off[1]] : 0.f);
        }
        __syncthreads(); /* shared_mean/shared_inv are rewritten for the next row */
    }
}

template <typename W> W word_of(const void *value)
{
    W w;
    memcpy(&w, value, sizeof w);
    return w;
}

} // namespace

/* ---------------------------------------------------------------- launchers */

extern "C" cudaError_t xf_cu_unary(cudaStream_t stream, xf_cu_unary_op op, int64_t n, const float *x, float *y,
                                   float a, float b)
{
    if (n > 0)
        unary_kernel<<<blocks_for(n), THREADS, 0, stream>>>(op, n, x, y, a, b);
    return cudaGetLastError();
}

extern "C" cudaError_t xf_cu_binary(cudaStream_t stream, xf_cu_binary_op op, xf_cu_kind kind, const xf_cu_index *ix,
                                    const void *a, const void *b, void *y)
{
    int64_t n = numel(*ix);
    bool to_bool = op == XF_CU_EQUAL || op == XF_CU_GREATER || op == XF_CU_LESS || op == XF_CU_GREATER_EQ ||
                   op == XF_CU_LESS_EQ;
    if (n <= 0)
        return cudaGetLastError();
    switch (kind) {
    case XF_CU_F32:
        binary_kernel<float><<<blocks_for(n), THREADS, 0, stream>>>(op, to_bool, *ix, n, (const float *)a,
                                                                     (const float *)b, y);
        break;
    case XF_CU_I32:
        binary_kernel<int32_t><<<blocks_for(n), THREADS, 0, stream>>>(op, to_bool, *ix, n, (const int32_t *)a,
                                                                       (const int32_t *)b, y);
        break;
    case XF_CU_I64:
        binary_kernel<int64_t><<<blocks_for(n), THREADS, 0, stream>>>(op, to_bool, *ix, n, (const int64_t *)a,
                                                                       (const int64_t *)b, y);
        break;
    default:
        return cudaErrorInvalidValue;
    }
    return cudaGetLastError();
}

/* Dispatches on the element size: W is a word of that many bytes. */
#define BY_SIZE(es, CALL)                                                                          \
    switch (es) {                                                                                  \
    case 1: { typedef uint8_t W; CALL; break; }                                                    \
    case 2: { typedef uint16_t W; CALL; break; }                                                   \
    case 4: { typedef uint32_t W; CALL; break; }                                                   \
    case 8: { typedef uint64_t W; CALL; break; }                                                   \
    case 16: { typedef word16 W; CALL; break; }                                                    \
    default: return cudaErrorInvalidValue;                                                         \
    }

extern "C" cudaError_t xf_cu_where(cudaStream_t stream, size_t es, const xf_cu_index *ix, const uint8_t *cond,
                                   const void *x, const void *t, void *y)
{
    int64_t n = numel(*ix);
    if (n <= 0)
        return cudaGetLastError();
    BY_SIZE(es, (where_kernel<W><<<blocks_for(n), THREADS, 0, stream>>>(*ix, n, cond, (const W *)x,
                                                                        (const W *)t, (W *)y)));
    return cudaGetLastError();
}

extern "C" cudaError_t xf_cu_cast(cudaStream_t stream, xf_cu_kind from, xf_cu_kind to, int64_t n, const void *x,
                                  void *y)
{
    if (n > 0)
        cast_kernel<<<blocks_for(n), THREADS, 0, stream>>>(from, to, n, x, y);
    return cudaGetLastError();
}

extern "C" cudaError_t xf_cu_copy(cudaStream_t stream, size_t es, const xf_cu_index *ix, const void *src,
                                  int64_t src_base, void *dst, int64_t dst_base)
{
    int64_t n = numel(*ix);
    if (n <= 0)
        return cudaGetLastError();
    BY_SIZE(es, (copy_kernel<W><<<blocks_for(n), THREADS, 0, stream>>>(*ix, n, (const W *)src, src_base,
                                                                       (W *)dst, dst_base)));
    return cudaGetLastError();
}

extern "C" cudaError_t xf_cu_pad(cudaStream_t stream, size_t es, int ndim, const int64_t *in_dims,
                                 const int64_t *out_dims, const int64_t *begin, int mode, const void *value,
                                 const void *x, void *y)
{
    pad_geom p;
    p.ndim = ndim;
    p.mode = mode;
    int64_t n = 1;
    for (int d = 0; d < ndim; d++) {
        p.in[d] = in_dims[d];
        p.out[d] = out_dims[d];
        p.begin[d] = begin[d];
        n *= out_dims[d];
    }
    if (n <= 0)
        return cudaGetLastError();
    BY_SIZE(es, (pad_kernel<W><<<blocks_for(n), THREADS, 0, stream>>>(p, n, word_of<W>(value), (const W *)x,
                                                                      (W *)y)));
    return cudaGetLastError();
}

extern "C" cudaError_t xf_cu_gather(cudaStream_t stream, size_t es, int64_t outer, int64_t len, int64_t inner,
                                    int64_t n_idx, const void *idx, bool idx64, const void *x, void *y, int *bad,
                                    int report)
{
    int64_t n = outer * n_idx * inner;
    if (n <= 0)
        return cudaGetLastError();
    BY_SIZE(es, (gather_kernel<W><<<blocks_for(n), THREADS, 0, stream>>>(n, len, inner, n_idx, idx, idx64,
                                                                         (const W *)x, (W *)y, bad, report)));
    return cudaGetLastError();
}

extern "C" cudaError_t xf_cu_fill(cudaStream_t stream, size_t es, int64_t n, const void *value, void *y)
{
    if (n <= 0)
        return cudaGetLastError();
    BY_SIZE(es, (fill_kernel<W><<<blocks_for(n), THREADS, 0, stream>>>(n, word_of<W>(value), (W *)y)));
    return cudaGetLastError();
}

extern "C" cudaError_t xf_cu_reduce(cudaStream_t stream, xf_cu_reduce_op op, const xf_cu_index *kept,
                                    const xf_cu_index *red, const float *x, float *y)
{
    int64_t n_out = numel(*kept), n_red = numel(*red);
    if (n_out <= 0)
        return cudaGetLastError();
    if (n_red >= 64)
        reduce_block_kernel<<<(unsigned)(n_out < 65535 * 32 ? n_out : 65535 * 32), THREADS, 0, stream>>>(
            op, *kept, *red, n_out, n_red, x, y);
    else
        reduce_thread_kernel<<<blocks_for(n_out), THREADS, 0, stream>>>(op, *kept, *red, n_out, n_red, x, y);
    return cudaGetLastError();
}

extern "C" cudaError_t xf_cu_layer_norm(cudaStream_t stream, int64_t outer, int64_t inner, const xf_cu_index *norm,
                                        const float *x, const float *scale, const float *bias, float eps, float *y,
                                        float *mean, float *inv_std)
{
    if (outer <= 0)
        return cudaGetLastError();
    layer_norm_kernel<<<(unsigned)(outer < 65535 * 32 ? outer : 65535 * 32), THREADS, 0, stream>>>(
        outer, inner, *norm, x, scale, bias, eps, y, mean, inv_std);
    return cudaGetLastError();
}
