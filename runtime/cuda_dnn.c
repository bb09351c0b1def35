/* cuda ops on the vendor libraries: Conv (with fused bias and activation),
 * MaxPool/AveragePool, Softmax/LogSoftmax and BatchNormalization through
 * cuDNN; MatMul and Gemm through cuBLAS.  Descriptors are made and
 * convolution algorithms chosen once, when the node is prepared.
 *
 * cuDNN's legacy descriptors are 4-D or 5-D: 1-D windows run as 2-D with a
 * leading spatial extent of 1.  It pads symmetrically only: other padding
 * (asymmetric pads, SAME padding with an odd total, the overhang of
 * ceil_mode) is applied explicitly into a buffer of the node's own before
 * the cuDNN call. */
#include "cuda_internal.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define WHY char *why, size_t why_len

/* Workspace offered to cudnnFind; algorithms needing more are skipped. */
#define CONV_WORKSPACE_LIMIT ((size_t)256 << 20)

static const float one = 1.0f, zero = 0.0f;

/* ---------------------------------------------------------------- window geometry */

/* The cuDNN view of a window op: nd-dimensional tensors (nd = 4 or 5),
 * symmetric padding, and the explicit pre-padding when that is needed. */
typedef struct geometry {
    int nd;
    int x[5], y[5], k[3], stride[3], dil[3], pad[3];
    bool prepad;
    int64_t padded[5], begin[5];
} geometry;

/* Fills geo from shapes xs (input) and ys (output), the kernel extents and
 * the attributes; fails (false, why) where it cannot. */
static bool window_geometry(const xf_attrs *a, const xf_shape *xs, const xf_shape *ys, const int64_t *kernel,
                            geometry *geo, WHY)
{
    int ns = xs->ndim - 2;
    if (ns < 1 || ns > 3 || ys->ndim != xs->ndim)
        return xf_cu_refuse(why, why_len, "with %d spatial dimensions", ns);
    int lead = ns == 1 ? 1 : 0; /* 1-D as 2-D */
    int sp = ns + lead;
    geo->nd = sp + 2;
    geo->prepad = false;
    for (int d = 0; d < 2; d++) {
        geo->x[d] = (int)xs->dims[d];
        geo->y[d] = (int)ys->dims[d];
        geo->padded[d] = xs->dims[d];
        geo->begin[d] = 0;
    }
    for (int i = 0; i < sp; i++) {
        int j = i - lead; /* xflow's spatial axis, -1 for the added one */
        int64_t in = j < 0 ? 1 : xs->dims[2 + j], out = j < 0 ? 1 : ys->dims[2 + j];
        int64_t k = j < 0 ? 1 : kernel[j], s = j < 0 ? 1 : a->strides[j], dil = j < 0 ? 1 : a->dilations[j];
        int64_t pb = 0, pe = 0;
        if (j >= 0)
            xf_cu_window_pads(a, ns, j, in, out, k, s, dil, &pb, &pe);
        if (k < 1 || s < 1 || dil < 1)
            return xf_cu_refuse(why, why_len, "with non-positive kernel, strides or dilations");
        int64_t extent = (k - 1) * dil + 1;
        /* the end padding cuDNN's formula needs to give exactly `out` */
        int64_t pe_exact = (out - 1) * s + extent - in - pb;
        bool sym = pb == pe && in + 2 * pb >= extent && (in + 2 * pb - extent) / s + 1 == out;
        geo->x[2 + i] = (int)in;
        geo->y[2 + i] = (int)out;
        geo->k[i] = (int)k;
        geo->stride[i] = (int)s;
        geo->dil[i] = (int)dil;
        geo->pad[i] = sym ? (int)pb : 0;
        geo->begin[2 + i] = sym ? 0 : pb;
        geo->padded[2 + i] = sym ? in : in + pb + pe_exact;
        geo->prepad |= !sym;
        if (geo->padded[2 + i] < extent)
            return xf_cu_refuse(why, why_len, "with a window larger than its padded input");
    }
    if (geo->prepad)
        for (int i = 0; i < sp && i < 3; i++) { /* sp <= 3 (said for the compiler) */
            geo->x[2 + i] = (int)geo->padded[2 + i];
            geo->pad[i] = 0;
        }
    for (int d = 0; d < geo->nd; d++)
        if (geo->x[d] < 1 || geo->y[d] < 1)
            return xf_cu_refuse(why, why_len, "with an empty tensor");
    return true;
}

/* Allocates the node's pre-padding buffer for geo (input of shape xs). */
static xf_status setup_prepad(const xf_node *n, const geometry *geo, const xf_shape *xs, float value,
                              xf_cu_node *st, xf_error *err)
{
    if (!geo->prepad)
        return XF_OK;
    int lead = geo->nd - xs->ndim; /* 1 for 1-D windows */
    st->pad_ndim = xs->ndim;
    size_t numel = 1;
    for (int d = 0; d < xs->ndim; d++) {
        int gd = d < 2 ? d : d + lead;
        st->pad_in[d] = xs->dims[d];
        st->pad_out[d] = geo->padded[gd];
        st->pad_begin[d] = geo->begin[gd];
        numel *= (size_t)st->pad_out[d];
    }
    st->pad_value = value;
    XF_CU_TRY(err, n, cudaMalloc(&st->padded, numel * sizeof(float)));
    return XF_OK;
}

static xf_status tensor_desc(const xf_node *n, cudnnTensorDescriptor_t *desc, int nd, const int *dims,
                             xf_error *err)
{
    int strides[5];
    strides[nd - 1] = 1;
    for (int d = nd - 2; d >= 0; d--)
        strides[d] = strides[d + 1] * dims[d + 1];
    XF_DNN_TRY(err, n, cudnnCreateTensorDescriptor(desc));
    XF_DNN_TRY(err, n, cudnnSetTensorNdDescriptor(*desc, CUDNN_DATA_FLOAT, nd, dims, strides));
    return XF_OK;
}

/* A 4-D descriptor (a, b, c, 1) for ops that work on one axis. */
static xf_status tensor_desc_4d(const xf_node *n, cudnnTensorDescriptor_t *desc, int64_t a, int64_t b, int64_t c,
                                xf_error *err)
{
    if (a * b * c > INT32_MAX)
        return xf_rt_bad_node(err, n, "tensor too large for cuDNN (%lld elements)", (long long)(a * b * c));
    int dims[4] = {(int)a, (int)b, (int)c, 1};
    return tensor_desc(n, desc, 4, dims, err);
}

static bool fits_int(const xf_shape *s)
{
    int64_t numel = xf_shape_numel(s);
    return numel >= 0 && numel <= INT32_MAX;
}

/* ---------------------------------------------------------------- Conv */

static bool conv_accepts(const xf_graph *g, const xf_node *n, WHY)
{
    if (!xf_cu_all_f32(g, n, why, why_len))
        return false;
    const xf_shape *xs = &g->values[n->inputs[0]].shape, *ws = &g->values[n->inputs[1]].shape;
    const xf_shape *ys = &g->values[n->outputs[0]].shape;
    if (ws->ndim != xs->ndim || !fits_int(xs) || !fits_int(ys) || !fits_int(ws))
        return xf_cu_refuse(why, why_len, "with these shapes");
    geometry geo;
    return window_geometry(&n->attrs, xs, ys, ws->dims + 2, &geo, why, why_len);
}

/* Algorithms measured in this process, by convolution geometry: models
 * repeat the same convolution many times, and cudnnFind takes a while. */
#define ALGO_KEY_LEN 24
typedef struct algo_choice {
    int key[ALGO_KEY_LEN];
    cudnnConvolutionFwdAlgo_t algo;
    size_t memory;
} algo_choice;
static algo_choice algo_cache[512];
static int algo_cache_len;
static pthread_mutex_t algo_cache_lock = PTHREAD_MUTEX_INITIALIZER;

static void algo_key(const geometry *geo, const int *w_dims, int64_t group, const xf_cu_ctx *c, int *key)
{
    memset(key, 0, sizeof(int) * ALGO_KEY_LEN);
    key[22] = c->device;
    key[0] = geo->nd;
    key[1] = (int)group;
    key[2] = c->tf32 | c->direct_conv << 1;
    for (int d = 0; d < geo->nd; d++) {
        key[3 + d] = geo->x[d];
        key[8 + d] = w_dims[d];
    }
    for (int i = 0; i < geo->nd - 2; i++) {
        key[13 + i] = geo->pad[i];
        key[16 + i] = geo->stride[i];
        key[19 + i] = geo->dil[i];
    }
}

static bool algo_lookup(const int *key, algo_choice *out)
{
    bool found = false;
    pthread_mutex_lock(&algo_cache_lock);
    for (int i = 0; i < algo_cache_len && !found; i++)
        if (!memcmp(algo_cache[i].key, key, sizeof algo_cache[i].key)) {
            *out = algo_cache[i];
            found = true;
        }
    pthread_mutex_unlock(&algo_cache_lock);
    return found;
}

static void algo_remember(const int *key, cudnnConvolutionFwdAlgo_t algo, size_t memory)
{
    pthread_mutex_lock(&algo_cache_lock);
    if (algo_cache_len < (int)(sizeof algo_cache / sizeof *algo_cache)) {
        algo_choice *a = &algo_cache[algo_cache_len++];
        memcpy(a->key, key, sizeof a->key);
        a->algo = algo;
        a->memory = memory;
    }
    pthread_mutex_unlock(&algo_cache_lock);
}

/* The algorithms that compute through a transform (Winograd's, FFT),
 * which round differently from direct sums. */
static bool transformed_algo(cudnnConvolutionFwdAlgo_t a)
{
    return a == CUDNN_CONVOLUTION_FWD_ALGO_FFT || a == CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING ||
           a == CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD || a == CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED;
}

static xf_status conv_choose_algo(xf_cu_ctx *c, const xf_node *n, xf_cu_node *st, const int *key, const void *x,
                                  const void *w, void *y, xf_error *err)
{
    algo_choice known;
    if (algo_lookup(key, &known)) {
        st->algo = known.algo;
        st->workspace_bytes = known.memory;
        return xf_cu_workspace(c, n, known.memory, err);
    }
    xf_status s = xf_cu_workspace(c, n, CONV_WORKSPACE_LIMIT, err);
    if (s != XF_OK)
        return s;
    cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
    int found = 0;
    cudnnStatus_t ds = cudnnFindConvolutionForwardAlgorithmEx(
        c->dnn, st->x_desc, x, st->w_desc, w, st->conv_desc, st->y_desc, y, CUDNN_CONVOLUTION_FWD_ALGO_COUNT,
        &found, perf, c->workspace, c->workspace_bytes);
    if (ds != CUDNN_STATUS_SUCCESS) { /* measuring failed: the heuristics' ranking */
        found = 0;
        XF_DNN_TRY(err, n, cudnnGetConvolutionForwardAlgorithm_v7(c->dnn, st->x_desc, st->w_desc, st->conv_desc,
                                                                  st->y_desc, CUDNN_CONVOLUTION_FWD_ALGO_COUNT,
                                                                  &found, perf));
    }
    for (int i = 0; i < found; i++)
        if (perf[i].status == CUDNN_STATUS_SUCCESS && perf[i].memory <= CONV_WORKSPACE_LIMIT &&
            !(c->direct_conv && transformed_algo(perf[i].algo))) {
            st->algo = perf[i].algo;
            st->workspace_bytes = perf[i].memory;
            algo_remember(key, perf[i].algo, perf[i].memory);
            return XF_OK;
        }
    return xf_error_set(err, XF_ERR_UNSUPPORTED,
                        "backend cuda: node '%s' (Conv): cuDNN has no forward algorithm for these shapes",
                        n->name ? n->name : "");
}

static xf_status conv_prepare(xf_cu_ctx *c, const xf_graph *g, const xf_node *n, const xf_tensor_view *in,
                              const xf_tensor_view *out, xf_cu_node *st, xf_error *err)
{
    const xf_shape *xs = &in[0].shape, *ws = &in[1].shape;
    geometry geo;
    char why[256];
    if (!window_geometry(&n->attrs, xs, &out[0].shape, ws->dims + 2, &geo, why, sizeof why))
        return xf_rt_unsupported(err, &xf_backend_cuda, n, "%s", why);
    int64_t group = n->attrs.group;
    if (group < 1 || xs->dims[1] % group || ws->dims[0] % group || ws->dims[1] != xs->dims[1] / group)
        return xf_rt_bad_node(err, n, "channels do not match group %lld", (long long)group);
    xf_status s = setup_prepad(n, &geo, xs, 0.0f, st, err);
    if (s != XF_OK)
        return s;
    int w_dims[5] = {(int)ws->dims[0], (int)ws->dims[1]};
    for (int i = 0; i < geo.nd - 2; i++)
        w_dims[2 + i] = geo.k[i];
    if ((s = tensor_desc(n, &st->x_desc, geo.nd, geo.x, err)) != XF_OK ||
        (s = tensor_desc(n, &st->y_desc, geo.nd, geo.y, err)) != XF_OK)
        return s;
    XF_DNN_TRY(err, n, cudnnCreateFilterDescriptor(&st->w_desc));
    XF_DNN_TRY(err, n, cudnnSetFilterNdDescriptor(st->w_desc, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, geo.nd, w_dims));
    XF_DNN_TRY(err, n, cudnnCreateConvolutionDescriptor(&st->conv_desc));
    XF_DNN_TRY(err, n, cudnnSetConvolutionNdDescriptor(st->conv_desc, geo.nd - 2, geo.pad, geo.stride, geo.dil,
                                                       CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
    XF_DNN_TRY(err, n, cudnnSetConvolutionGroupCount(st->conv_desc, (int)group));
    XF_DNN_TRY(err, n, cudnnSetConvolutionMathType(st->conv_desc, c->tf32 ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH));
    int got[5];
    XF_DNN_TRY(err, n, cudnnGetConvolutionNdForwardOutputDim(st->conv_desc, st->x_desc, st->w_desc, geo.nd, got));
    for (int d = 0; d < geo.nd; d++)
        if (got[d] != geo.y[d])
            return xf_rt_bad_node(err, n, "cuDNN computes output extent %d on axis %d, the graph has %d", got[d], d,
                                  geo.y[d]);
    bool bias = n->n_inputs > 2 && xf_rt_present(&in[2]);
    if (bias) {
        if (xf_rt_numel(&in[2]) != ws->dims[0])
            return xf_rt_bad_node(err, n, "bias has %lld elements for %lld output channels",
                                  (long long)xf_rt_numel(&in[2]), (long long)ws->dims[0]);
        int b_dims[5] = {1, (int)ws->dims[0], 1, 1, 1};
        if ((s = tensor_desc(n, &st->b_desc, geo.nd, b_dims, err)) != XF_OK)
            return s;
    }
    xf_activation act = n->attrs.activation;
    if (act != XF_ACT_NONE) {
        cudnnActivationMode_t mode = act == XF_ACT_RELU      ? CUDNN_ACTIVATION_RELU
                                     : act == XF_ACT_SIGMOID ? CUDNN_ACTIVATION_SIGMOID
                                                             : CUDNN_ACTIVATION_TANH;
        XF_DNN_TRY(err, n, cudnnCreateActivationDescriptor(&st->act_desc));
        XF_DNN_TRY(err, n, cudnnSetActivationDescriptor(st->act_desc, mode, CUDNN_NOT_PROPAGATE_NAN, 0.0));
    }
    /* cuDNN fuses bias with Relu for any algorithm (identity would need
     * IMPLICIT_PRECOMP_GEMM, which need not be the fastest) */
    st->fused = bias && act == XF_ACT_RELU;
    int key[ALGO_KEY_LEN];
    algo_key(&geo, w_dims, group, c, key);
    return conv_choose_algo(c, n, st, key, st->padded ? st->padded : in[0].data, in[1].data, out[0].data, err);
}

static xf_status conv_run(xf_cu_ctx *c, const xf_graph *g, const xf_node *n, xf_cu_node *st,
                          const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err)
{
    const void *x = in[0].data;
    if (st->padded) {
        xf_status s = xf_cu_prepad(c, n, st, x, sizeof(float), err);
        if (s != XF_OK)
            return s;
        x = st->padded;
    }
    void *y = out[0].data;
    if (st->fused) {
        cudnnStatus_t ds = cudnnConvolutionBiasActivationForward(
            c->dnn, &one, st->x_desc, x, st->w_desc, in[1].data, st->conv_desc, st->algo, c->workspace,
            st->workspace_bytes, &zero, st->y_desc, y, st->b_desc, in[2].data, st->act_desc, st->y_desc, y);
        if (ds == CUDNN_STATUS_SUCCESS)
            return XF_OK;
        if (CUDNN_STATUS_CATEGORY(ds) != CUDNN_STATUS_NOT_SUPPORTED)
            return xf_cu_dnn_fail(err, n, "cudnnConvolutionBiasActivationForward", ds);
        st->fused = false; /* this algorithm does not fuse: the three steps from now on */
    }
    XF_DNN_TRY(err, n, cudnnConvolutionForward(c->dnn, &one, st->x_desc, x, st->w_desc, in[1].data, st->conv_desc,
                                               st->algo, c->workspace, st->workspace_bytes, &zero, st->y_desc, y));
    if (st->b_desc)
        XF_DNN_TRY(err, n, cudnnAddTensor(c->dnn, &one, st->b_desc, in[2].data, &one, st->y_desc, y));
    if (st->act_desc)
        XF_DNN_TRY(err, n, cudnnActivationForward(c->dnn, st->act_desc, &one, st->y_desc, y, &zero, st->y_desc, y));
    return XF_OK;
}

const xf_cu_handler xf_cu_conv_handler = {conv_accepts, conv_prepare, conv_run};

/* ---------------------------------------------------------------- pools */

/* MaxPool pads with -inf, which never wins; AveragePool can be pre-padded
 * only when it counts padding and no window overhangs the end padding (so
 * every window has the full count); it excludes padding only when cuDNN
 * pads symmetrically itself. */
static bool pool_accepts(const xf_graph *g, const xf_node *n, WHY)
{
    if (n->n_outputs != 1)
        return xf_cu_refuse(why, why_len, "with an Indices output (cuDNN's pooling gives none)");
    if (!xf_cu_all_f32(g, n, why, why_len))
        return false;
    const xf_attrs *a = &n->attrs;
    const xf_shape *xs = &g->values[n->inputs[0]].shape, *ys = &g->values[n->outputs[0]].shape;
    if (!fits_int(xs) || !fits_int(ys))
        return xf_cu_refuse(why, why_len, "with these shapes");
    for (int i = 0; i < a->n_spatial; i++)
        if (a->dilations[i] != 1)
            return xf_cu_refuse(why, why_len, "with dilations");
    geometry geo;
    if (!window_geometry(a, xs, ys, a->kernel, &geo, why, why_len))
        return false;
    if (n->op == XF_OP_AVERAGE_POOL && geo.prepad) {
        if (!a->count_include_pad)
            return xf_cu_refuse(why, why_len, "excluding padding that is asymmetric or from ceil_mode");
        int ns = xs->ndim - 2;
        for (int i = 0; i < ns; i++) {
            int64_t pb, pe;
            xf_cu_window_pads(a, ns, i, xs->dims[2 + i], ys->dims[2 + i], a->kernel[i], a->strides[i], 1, &pb, &pe);
            if (xs->dims[2 + i] + pb + pe < (ys->dims[2 + i] - 1) * a->strides[i] + a->kernel[i])
                return xf_cu_refuse(why, why_len, "with windows past the end padding (ceil_mode)");
        }
    }
    return true;
}

static xf_status pool_prepare(xf_cu_ctx *c, const xf_graph *g, const xf_node *n, const xf_tensor_view *in,
                              const xf_tensor_view *out, xf_cu_node *st, xf_error *err)
{
    const xf_attrs *a = &n->attrs;
    geometry geo;
    char why[256];
    if (!window_geometry(a, &in[0].shape, &out[0].shape, a->kernel, &geo, why, sizeof why))
        return xf_rt_unsupported(err, &xf_backend_cuda, n, "%s", why);
    bool is_max = n->op == XF_OP_MAX_POOL;
    xf_status s = setup_prepad(n, &geo, &in[0].shape, is_max ? -INFINITY : 0.0f, st, err);
    if (s != XF_OK || (s = tensor_desc(n, &st->x_desc, geo.nd, geo.x, err)) != XF_OK ||
        (s = tensor_desc(n, &st->y_desc, geo.nd, geo.y, err)) != XF_OK)
        return s;
    cudnnPoolingMode_t mode = is_max                 ? CUDNN_POOLING_MAX_DETERMINISTIC
                              : a->count_include_pad ? CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING
                                                     : CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING;
    XF_DNN_TRY(err, n, cudnnCreatePoolingDescriptor(&st->pool_desc));
    XF_DNN_TRY(err, n, cudnnSetPoolingNdDescriptor(st->pool_desc, mode, CUDNN_NOT_PROPAGATE_NAN, geo.nd - 2, geo.k,
                                                   geo.pad, geo.stride));
    int got[5];
    XF_DNN_TRY(err, n, cudnnGetPoolingNdForwardOutputDim(st->pool_desc, st->x_desc, geo.nd, got));
    for (int d = 0; d < geo.nd; d++)
        if (got[d] != geo.y[d])
            return xf_rt_bad_node(err, n, "cuDNN computes output extent %d on axis %d, the graph has %d", got[d], d,
                                  geo.y[d]);
    return XF_OK;
}

static xf_status pool_run(xf_cu_ctx *c, const xf_graph *g, const xf_node *n, xf_cu_node *st,
                          const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err)
{
    const void *x = in[0].data;
    if (st->padded) {
        xf_status s = xf_cu_prepad(c, n, st, x, sizeof(float), err);
        if (s != XF_OK)
            return s;
        x = st->padded;
    }
    XF_DNN_TRY(err, n, cudnnPoolingForward(c->dnn, st->pool_desc, &one, st->x_desc, x, &zero, st->y_desc,
                                           out[0].data));
    return XF_OK;
}

const xf_cu_handler xf_cu_pool_handler = {pool_accepts, pool_prepare, pool_run};

/* ---------------------------------------------------------------- softmax, batch norm */

static bool softmax_accepts(const xf_graph *g, const xf_node *n, WHY)
{
    if (!xf_cu_all_f32(g, n, why, why_len))
        return false;
    const xf_shape *xs = &g->values[n->inputs[0]].shape;
    if (xf_rt_axis(n->attrs.axis, xs->ndim) < 0 || !fits_int(xs))
        return xf_cu_refuse(why, why_len, "with axis %lld on rank %d", (long long)n->attrs.axis, xs->ndim);
    return true;
}

/* Normalizes along the channel axis of (outer, len, inner, 1). */
static xf_status softmax_prepare(xf_cu_ctx *c, const xf_graph *g, const xf_node *n, const xf_tensor_view *in,
                                 const xf_tensor_view *out, xf_cu_node *st, xf_error *err)
{
    const xf_shape *xs = &in[0].shape;
    int axis = xf_rt_axis(n->attrs.axis, xs->ndim);
    int64_t outer = 1, len = 1, inner = 1;
    for (int d = 0; d < xs->ndim; d++) {
        bool along = n->attrs.softmax_legacy ? d >= axis : d == axis;
        int64_t *p = d < axis ? &outer : along ? &len : &inner;
        *p *= xs->dims[d];
    }
    return tensor_desc_4d(n, &st->x_desc, outer, len, inner, err);
}

static xf_status softmax_run(xf_cu_ctx *c, const xf_graph *g, const xf_node *n, xf_cu_node *st,
                             const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err)
{
    if (xf_rt_numel(&out[0]) == 0)
        return XF_OK;
    cudnnSoftmaxAlgorithm_t algo = n->op == XF_OP_LOG_SOFTMAX ? CUDNN_SOFTMAX_LOG : CUDNN_SOFTMAX_ACCURATE;
    XF_DNN_TRY(err, n, cudnnSoftmaxForward(c->dnn, algo, CUDNN_SOFTMAX_MODE_CHANNEL, &one, st->x_desc, in[0].data,
                                           &zero, st->x_desc, out[0].data));
    return XF_OK;
}

const xf_cu_handler xf_cu_softmax_handler = {softmax_accepts, softmax_prepare, softmax_run};

static bool batch_norm_accepts(const xf_graph *g, const xf_node *n, WHY)
{
    if (!xf_cu_all_f32(g, n, why, why_len))
        return false;
    const xf_shape *xs = &g->values[n->inputs[0]].shape;
    if (xs->ndim < 2 || !fits_int(xs))
        return xf_cu_refuse(why, why_len, "of rank %d", xs->ndim);
    if (n->attrs.bn_training)
        return xf_cu_refuse(why, why_len, "in training mode (its batch's statistics)");
    return true;
}

static xf_status batch_norm_prepare(xf_cu_ctx *c, const xf_graph *g, const xf_node *n, const xf_tensor_view *in,
                                    const xf_tensor_view *out, xf_cu_node *st, xf_error *err)
{
    const xf_shape *xs = &in[0].shape;
    int64_t channels = xs->dims[1], inner = 1;
    for (int d = 2; d < xs->ndim; d++)
        inner *= xs->dims[d];
    for (int k = 1; k < 5; k++)
        if (xf_rt_numel(&in[k]) != channels)
            return xf_rt_bad_node(err, n, "input %d has %lld elements for %lld channels", k,
                                  (long long)xf_rt_numel(&in[k]), (long long)channels);
    xf_status s = tensor_desc_4d(n, &st->x_desc, xs->dims[0], channels, inner, err);
    if (s == XF_OK)
        s = tensor_desc_4d(n, &st->b_desc, 1, channels, 1, err);
    return s;
}

static xf_status batch_norm_run(xf_cu_ctx *c, const xf_graph *g, const xf_node *n, xf_cu_node *st,
                                const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err)
{
    if (xf_rt_numel(&out[0]) == 0)
        return XF_OK;
    double eps = n->attrs.epsilon < CUDNN_BN_MIN_EPSILON ? CUDNN_BN_MIN_EPSILON : n->attrs.epsilon;
    XF_DNN_TRY(err, n, cudnnBatchNormalizationForwardInference(
                           c->dnn, CUDNN_BATCHNORM_SPATIAL, &one, &zero, st->x_desc, in[0].data, st->x_desc,
                           out[0].data, st->b_desc, in[1].data, in[2].data, in[3].data, in[4].data, eps));
    return XF_OK;
}

const xf_cu_handler xf_cu_batch_norm_handler = {batch_norm_accepts, batch_norm_prepare, batch_norm_run};

/* ---------------------------------------------------------------- matrix products */

/* Row-major C (m x n) = A (m x k) B (k x n) is column-major C^T = B^T A^T:
 * cuBLAS gets the operands swapped, and a transposed operand is a flag. */
static xf_status gemm_rowmajor(xf_cu_ctx *c, const xf_node *n, bool ta, bool tb, int64_t m, int64_t nn, int64_t k,
                               float alpha, const float *a, const float *b, float beta, float *y, xf_error *err)
{
    if (m > INT32_MAX || nn > INT32_MAX || k > INT32_MAX)
        return xf_rt_bad_node(err, n, "matrix too large for cuBLAS");
    XF_BLAS_TRY(err, n, cublasSgemm(c->blas, tb ? CUBLAS_OP_T : CUBLAS_OP_N, ta ? CUBLAS_OP_T : CUBLAS_OP_N, (int)nn,
                                    (int)m, (int)k, &alpha, b, (int)(tb ? k : nn), a, (int)(ta ? m : k), &beta, y,
                                    (int)nn));
    return XF_OK;
}

/* Whether broadcast batch strides s (over batch) walk the operand with one
 * constant stride per matrix: all zero, or dense. */
static bool one_stride(const int64_t *s, const xf_shape *batch, int64_t mat, int64_t *stride)
{
    int64_t dense[XF_MAX_DIMS];
    xf_rt_dense_strides(batch, dense);
    bool all_zero = true, all_dense = true;
    for (int d = 0; d < batch->ndim; d++) {
        if (batch->dims[d] == 1)
            continue;
        all_zero &= s[d] == 0;
        all_dense &= s[d] == dense[d] * mat;
    }
    *stride = all_zero ? 0 : mat;
    return all_zero || all_dense;
}

static xf_status matmul_run(xf_cu_ctx *c, const xf_graph *g, const xf_node *n, xf_cu_node *st,
                            const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err)
{
    xf_rt_matmul mm;
    xf_status gs = xf_rt_matmul_geometry(n, in, out, &mm, err);
    if (gs != XF_OK)
        return gs;
    int64_t m = mm.m, k = mm.k, nn = mm.n, n_batch = mm.n_batch;
    if (n_batch * m * nn == 0)
        return XF_OK;
    float *y = out[0].data;
    if (k == 0) {
        XF_CU_TRY(err, n, cudaMemsetAsync(y, 0, (size_t)(n_batch * m * nn) * sizeof(float), c->stream));
        return XF_OK;
    }
    const float *a = in[0].data, *b = in[1].data;
    const int64_t *sa = mm.a_stride, *sb = mm.b_stride;
    const xf_shape batch = mm.batch;
    int64_t stride_a, stride_b;
    if (m > INT32_MAX || nn > INT32_MAX || k > INT32_MAX || n_batch > INT32_MAX)
        return xf_rt_bad_node(err, n, "matrices too large for cuBLAS");
    if (one_stride(sa, &batch, m * k, &stride_a) && one_stride(sb, &batch, k * nn, &stride_b)) {
        XF_BLAS_TRY(err, n, cublasSgemmStridedBatched(c->blas, CUBLAS_OP_N, CUBLAS_OP_N, (int)nn, (int)m, (int)k, &one,
                                                      b, (int)nn, stride_b, a, (int)k, stride_a, &zero, y, (int)nn,
                                                      m * nn, (int)n_batch));
        return XF_OK;
    }
    /* batch broadcast in a pattern no single stride describes: one product
     * per batch element */
    xf_rt_iter it;
    xf_rt_iter_init(&it, &batch);
    xf_rt_iter_add(&it, sa, 0);
    xf_rt_iter_add(&it, sb, 0);
    for (int64_t bi = 0; bi < n_batch; bi++, xf_rt_iter_next(&it)) {
        xf_status s = gemm_rowmajor(c, n, false, false, m, nn, k, 1.0f, a + it.off[0], b + it.off[1], 0.0f,
                                    y + bi * m * nn, err);
        if (s != XF_OK)
            return s;
    }
    return XF_OK;
}

const xf_cu_handler xf_cu_matmul_handler = {xf_cu_all_f32, NULL, matmul_run};

/* Y = alpha op(A) op(B) + beta C: C broadcast into Y first, then one GEMM
 * accumulating onto it. */
static xf_status gemm_run(xf_cu_ctx *c, const xf_graph *g, const xf_node *n, xf_cu_node *st,
                          const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err)
{
    const xf_attrs *at = &n->attrs;
    const xf_shape *as = &in[0].shape, *bs = &in[1].shape, *ys = &out[0].shape;
    if (as->ndim != 2 || bs->ndim != 2 || ys->ndim != 2)
        return xf_rt_bad_node(err, n, "A, B and Y must be matrices");
    int64_t m = at->trans_a ? as->dims[1] : as->dims[0], k = at->trans_a ? as->dims[0] : as->dims[1];
    int64_t kb = at->trans_b ? bs->dims[1] : bs->dims[0], nn = at->trans_b ? bs->dims[0] : bs->dims[1];
    if (k != kb || ys->dims[0] != m || ys->dims[1] != nn)
        return xf_rt_bad_node(err, n, "shapes do not match (A %lldx%lld, B %lldx%lld)", (long long)as->dims[0],
                              (long long)as->dims[1], (long long)bs->dims[0], (long long)bs->dims[1]);
    if (m * nn == 0)
        return XF_OK;
    const xf_tensor_view *cv = n->n_inputs > 2 && xf_rt_present(&in[2]) ? &in[2] : NULL;
    float beta = cv && at->beta != 0.0f ? at->beta : 0.0f;
    if (beta != 0.0f) {
        xf_status s = xf_cu_broadcast(c, n, cv, &out[0], err);
        if (s != XF_OK)
            return s;
    }
    if (k == 0) { /* cuBLAS leaves Y alone: it is beta C */
        if (beta == 0.0f)
            XF_CU_TRY(err, n, cudaMemsetAsync(out[0].data, 0, (size_t)(m * nn) * sizeof(float), c->stream));
        else if (beta != 1.0f)
            return xf_rt_bad_node(err, n, "an empty inner dimension with beta %g", beta);
        return XF_OK;
    }
    return gemm_rowmajor(c, n, at->trans_a, at->trans_b, m, nn, k, at->alpha, in[0].data, in[1].data, beta,
                         out[0].data, err);
}

const xf_cu_handler xf_cu_gemm_handler = {xf_cu_all_f32, NULL, gemm_run};
