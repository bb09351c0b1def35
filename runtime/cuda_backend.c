/* The `cuda` backend: graphs on one NVIDIA GPU through cuDNN, cuBLAS and
 * xflow's own kernels, all queued on one stream.
 *
 * Memory is device memory (host_memory = false): the session uploads the
 * initializers once, plans one device arena and prepares every node once,
 * which is where convolution algorithms are chosen (cudnnFind on the
 * planned buffers).  Each op has a handler (cuda_dnn.c, cuda_ops.c) that
 * says from the graph alone whether its device path takes a node; a node
 * it does not take, whose op cpu_ref supports, runs on host copies of its
 * operands through the cpu_ref kernel (slow, but such nodes are rare:
 * shape arithmetic, exotic attributes), and anything else is refused by
 * name when the session is created. */
#include "cuda_internal.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- errors */

static const char *node_name(const xf_node *n) { return n && n->name ? n->name : ""; }
static const char *node_op(const xf_node *n) { return n ? xf_op_name(n->op) : "-"; }

/* Library failures are XF_ERR_DEVICE (XF_ERR_NOMEM when device memory ran
 * out), except a library's "not supported" for a configuration, which is
 * XF_ERR_UNSUPPORTED: the one failure a node may answer by running on the
 * host instead (cu_prepare). */
static xf_status lib_fail(xf_error *err, xf_status st, const xf_node *n, const char *call, const char *what)
{
    if (!n)
        return xf_error_set(err, st, "backend cuda: %s failed: %s", call, what);
    return xf_error_set(err, st, "backend cuda: node '%s' (%s): %s failed: %s", node_name(n), node_op(n), call, what);
}

xf_status xf_cu_fail(xf_error *err, const xf_node *n, const char *call, cudaError_t e)
{
    char what[256];
    snprintf(what, sizeof what, "%s (%s)", cudaGetErrorString(e), cudaGetErrorName(e));
    return lib_fail(err, e == cudaErrorMemoryAllocation ? XF_ERR_NOMEM : XF_ERR_DEVICE, n, call, what);
}

xf_status xf_cu_dnn_fail(xf_error *err, const xf_node *n, const char *call, cudnnStatus_t s)
{
    xf_status st = CUDNN_STATUS_CATEGORY(s) == CUDNN_STATUS_NOT_SUPPORTED                ? XF_ERR_UNSUPPORTED
                   : s == CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED ? XF_ERR_NOMEM
                                                                                : XF_ERR_DEVICE;
    return lib_fail(err, st, n, call, cudnnGetErrorString(s));
}

xf_status xf_cu_blas_fail(xf_error *err, const xf_node *n, const char *call, cublasStatus_t s)
{
    xf_status st = s == CUBLAS_STATUS_NOT_SUPPORTED ? XF_ERR_UNSUPPORTED
                   : s == CUBLAS_STATUS_ALLOC_FAILED ? XF_ERR_NOMEM
                                                     : XF_ERR_DEVICE;
    return lib_fail(err, st, n, call, cublasGetStatusName(s));
}

bool xf_cu_refuse(char *why, size_t why_len, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, why_len, fmt, ap);
    va_end(ap);
    return false;
}

bool xf_cu_all_f32(const xf_graph *g, const xf_node *n, char *why, size_t why_len)
{
    for (int k = 0; k < n->n_inputs + n->n_outputs; k++) {
        int v = k < n->n_inputs ? n->inputs[k] : n->outputs[k - n->n_inputs];
        if (v < 0)
            continue;
        const xf_value *val = &g->values[v];
        if (val->dtype != XF_DT_FLOAT)
            return xf_cu_refuse(why, why_len, "on %s", xf_dtype_name(val->dtype));
        if (xf_shape_numel(&val->shape) < 0)
            return xf_cu_refuse(why, why_len, "with an unknown shape");
    }
    return true;
}

/* ---------------------------------------------------------------- helpers */

xf_cu_kind xf_cu_kind_of(xf_dtype t)
{
    switch (t) {
    case XF_DT_FLOAT: return XF_CU_F32;
    case XF_DT_DOUBLE: return XF_CU_F64;
    case XF_DT_FLOAT16: return XF_CU_F16;
    case XF_DT_INT8: return XF_CU_I8;
    case XF_DT_UINT8: return XF_CU_U8;
    case XF_DT_INT16: return XF_CU_I16;
    case XF_DT_UINT16: return XF_CU_U16;
    case XF_DT_INT32: return XF_CU_I32;
    case XF_DT_UINT32: return XF_CU_U32;
    case XF_DT_INT64: return XF_CU_I64;
    case XF_DT_UINT64: return XF_CU_U64;
    case XF_DT_BOOL: return XF_CU_BOOL;
    default: return XF_CU_KIND_COUNT;
    }
}

xf_status xf_cu_workspace(xf_cu_ctx *c, const xf_node *n, size_t bytes, xf_error *err)
{
    if (bytes <= c->workspace_bytes)
        return XF_OK;
    if (c->workspace)
        XF_CU_TRY(err, n, cudaFree(c->workspace));
    c->workspace = NULL;
    c->workspace_bytes = 0;
    XF_CU_TRY(err, n, cudaMalloc(&c->workspace, bytes));
    c->workspace_bytes = bytes;
    return XF_OK;
}

xf_status xf_cu_read_ints(xf_cu_ctx *c, const xf_graph *g, const xf_node *n, int k, const xf_tensor_view *v,
                          int64_t *vals, int max, int *count, xf_error *err)
{
    int64_t numel = xf_rt_numel(v);
    if (numel < 0 || numel > max)
        return xf_rt_bad_node(err, n, "input %d has %lld values (at most %d expected)", k, (long long)numel, max);
    if (v->dtype != XF_DT_INT64 && v->dtype != XF_DT_INT32)
        return xf_rt_bad_node(err, n, "input %d is %s, not an integer tensor", k, xf_dtype_name(v->dtype));
    *count = (int)numel;
    const xf_tensor *init = g->values[n->inputs[k]].init;
    int64_t buf[64];
    const void *src = init ? init->data : NULL;
    if (!src && numel > 0) {
        XF_CU_TRY(err, n, cudaMemcpyAsync(buf, v->data, (size_t)numel * xf_dtype_size(v->dtype),
                                          cudaMemcpyDeviceToHost, c->stream));
        XF_CU_TRY(err, n, cudaStreamSynchronize(c->stream));
        src = buf;
    }
    for (int64_t i = 0; i < numel; i++)
        vals[i] = xf_rt_load_i64(v->dtype, src, i);
    return XF_OK;
}

void xf_cu_index_init(xf_cu_index *ix, const xf_shape *s)
{
    memset(ix, 0, sizeof *ix);
    ix->ndim = s->ndim;
    for (int d = 0; d < s->ndim; d++)
        ix->dims[d] = s->dims[d];
}

void xf_cu_index_add(xf_cu_index *ix, const int64_t *strides)
{
    int k = ix->n_ops++;
    for (int d = 0; d < ix->ndim; d++)
        ix->stride[k][d] = strides[d];
}

void xf_cu_index_add_broadcast(xf_cu_index *ix, const xf_shape *s)
{
    xf_shape space = xf_shape_make(ix->ndim, ix->dims);
    int64_t strides[XF_MAX_DIMS];
    xf_rt_broadcast_strides(s, &space, strides);
    xf_cu_index_add(ix, strides);
}

void xf_cu_index_coalesce(xf_cu_index *ix)
{
    xf_cu_index r = {.n_ops = ix->n_ops};
    for (int d = 0; d < ix->ndim; d++) {
        if (ix->dims[d] == 1)
            continue;
        bool merge = r.ndim > 0;
        for (int k = 0; merge && k < ix->n_ops; k++)
            merge = r.stride[k][r.ndim - 1] == ix->stride[k][d] * ix->dims[d];
        if (merge) {
            r.dims[r.ndim - 1] *= ix->dims[d];
            for (int k = 0; k < ix->n_ops; k++)
                r.stride[k][r.ndim - 1] = ix->stride[k][d];
            continue;
        }
        for (int k = 0; k < ix->n_ops; k++)
            r.stride[k][r.ndim] = ix->stride[k][d];
        r.dims[r.ndim++] = ix->dims[d];
    }
    *ix = r;
}

void xf_cu_window_pads(const xf_attrs *a, int ns, int i, int64_t in, int64_t out, int64_t k, int64_t stride,
                       int64_t dil, int64_t *pad_begin, int64_t *pad_end)
{
    switch (a->auto_pad) {
    case XF_AUTO_PAD_NOTSET:
        *pad_begin = a->n_spatial ? a->pads[i] : 0;
        *pad_end = a->n_spatial ? a->pads[ns + i] : 0;
        break;
    case XF_AUTO_PAD_VALID:
        *pad_begin = *pad_end = 0;
        break;
    case XF_AUTO_PAD_SAME_UPPER:
    case XF_AUTO_PAD_SAME_LOWER: {
        int64_t total = (out - 1) * stride + (k - 1) * dil + 1 - in;
        if (total < 0)
            total = 0;
        *pad_begin = a->auto_pad == XF_AUTO_PAD_SAME_UPPER ? total / 2 : total - total / 2;
        *pad_end = total - *pad_begin;
        break;
    }
    }
}

xf_status xf_cu_prepad(xf_cu_ctx *c, const xf_node *n, xf_cu_node *st, const void *x, size_t es, xf_error *err)
{
    unsigned char value[16] = {0};
    if (es == sizeof(float))
        memcpy(value, &st->pad_value, sizeof(float));
    XF_CU_TRY(err, n, xf_cu_pad(c->stream, es, st->pad_ndim, st->pad_in, st->pad_out, st->pad_begin, 0, value, x,
                                st->padded));
    return XF_OK;
}

/* ---------------------------------------------------------------- the op table */

static const xf_cu_handler *const handlers[XF_OP_COUNT] = {
    [XF_OP_CONV] = &xf_cu_conv_handler,
    [XF_OP_MATMUL] = &xf_cu_matmul_handler,
    [XF_OP_GEMM] = &xf_cu_gemm_handler,
    [XF_OP_ADD] = &xf_cu_binary_handler,
    [XF_OP_SUB] = &xf_cu_binary_handler,
    [XF_OP_MUL] = &xf_cu_binary_handler,
    [XF_OP_DIV] = &xf_cu_binary_handler,
    [XF_OP_POW] = &xf_cu_binary_handler,
    [XF_OP_MAX] = &xf_cu_variadic_handler,
    [XF_OP_MIN] = &xf_cu_variadic_handler,
    [XF_OP_SUM] = &xf_cu_variadic_handler,
    [XF_OP_EQUAL] = &xf_cu_binary_handler,
    [XF_OP_GREATER] = &xf_cu_binary_handler,
    [XF_OP_LESS] = &xf_cu_binary_handler,
    [XF_OP_GREATER_OR_EQUAL] = &xf_cu_binary_handler,
    [XF_OP_LESS_OR_EQUAL] = &xf_cu_binary_handler,
    [XF_OP_WHERE] = &xf_cu_where_handler,
    [XF_OP_RELU] = &xf_cu_unary_handler,
    [XF_OP_SIGMOID] = &xf_cu_unary_handler,
    [XF_OP_TANH] = &xf_cu_unary_handler,
    [XF_OP_ABS] = &xf_cu_unary_handler,
    [XF_OP_NEG] = &xf_cu_unary_handler,
    [XF_OP_EXP] = &xf_cu_unary_handler,
    [XF_OP_LOG] = &xf_cu_unary_handler,
    [XF_OP_SQRT] = &xf_cu_unary_handler,
    [XF_OP_RECIPROCAL] = &xf_cu_unary_handler,
    [XF_OP_FLOOR] = &xf_cu_unary_handler,
    [XF_OP_CEIL] = &xf_cu_unary_handler,
    [XF_OP_ERF] = &xf_cu_unary_handler,
    [XF_OP_SIN] = &xf_cu_unary_handler,
    [XF_OP_COS] = &xf_cu_unary_handler,
    [XF_OP_SOFTPLUS] = &xf_cu_unary_handler,
    [XF_OP_LEAKY_RELU] = &xf_cu_unary_handler,
    [XF_OP_ELU] = &xf_cu_unary_handler,
    [XF_OP_HARD_SIGMOID] = &xf_cu_unary_handler,
    [XF_OP_HARD_SWISH] = &xf_cu_unary_handler,
    [XF_OP_SIGN] = &xf_cu_unary_handler,
    [XF_OP_ROUND] = &xf_cu_unary_handler,
    [XF_OP_TAN] = &xf_cu_unary_handler,
    [XF_OP_ATAN] = &xf_cu_unary_handler,
    [XF_OP_ASIN] = &xf_cu_unary_handler,
    [XF_OP_ACOS] = &xf_cu_unary_handler,
    [XF_OP_SINH] = &xf_cu_unary_handler,
    [XF_OP_COSH] = &xf_cu_unary_handler,
    [XF_OP_ASINH] = &xf_cu_unary_handler,
    [XF_OP_ACOSH] = &xf_cu_unary_handler,
    [XF_OP_ATANH] = &xf_cu_unary_handler,
    [XF_OP_SOFTSIGN] = &xf_cu_unary_handler,
    [XF_OP_THRESHOLDED_RELU] = &xf_cu_unary_handler,
    [XF_OP_SELU] = &xf_cu_unary_handler,
    [XF_OP_CELU] = &xf_cu_unary_handler,
    [XF_OP_SHRINK] = &xf_cu_unary_handler,
    [XF_OP_MISH] = &xf_cu_unary_handler,
    [XF_OP_GELU] = &xf_cu_unary_handler,
    [XF_OP_MS_GELU] = &xf_cu_unary_handler,
    [XF_OP_CLIP] = &xf_cu_clip_handler,
    [XF_OP_CAST] = &xf_cu_cast_handler,
    [XF_OP_CONCAT] = &xf_cu_concat_handler,
    [XF_OP_SPLIT] = &xf_cu_split_handler,
    [XF_OP_TRANSPOSE] = &xf_cu_transpose_handler,
    [XF_OP_RESHAPE] = &xf_cu_copy_handler,
    [XF_OP_FLATTEN] = &xf_cu_copy_handler,
    [XF_OP_SQUEEZE] = &xf_cu_copy_handler,
    [XF_OP_UNSQUEEZE] = &xf_cu_copy_handler,
    [XF_OP_IDENTITY] = &xf_cu_copy_handler,
    [XF_OP_DROPOUT] = &xf_cu_dropout_handler,
    [XF_OP_GATHER] = &xf_cu_gather_handler,
    [XF_OP_SLICE] = &xf_cu_slice_handler,
    [XF_OP_PAD] = &xf_cu_pad_handler,
    [XF_OP_EXPAND] = &xf_cu_expand_handler,
    [XF_OP_MAX_POOL] = &xf_cu_pool_handler,
    [XF_OP_AVERAGE_POOL] = &xf_cu_pool_handler,
    [XF_OP_GLOBAL_AVERAGE_POOL] = &xf_cu_global_pool_handler,
    [XF_OP_GLOBAL_MAX_POOL] = &xf_cu_global_pool_handler,
    [XF_OP_BATCH_NORM] = &xf_cu_batch_norm_handler,
    [XF_OP_LAYER_NORM] = &xf_cu_layer_norm_handler,
    [XF_OP_SOFTMAX] = &xf_cu_softmax_handler,
    [XF_OP_LOG_SOFTMAX] = &xf_cu_softmax_handler,
    [XF_OP_REDUCE_MEAN] = &xf_cu_reduce_handler,
    [XF_OP_REDUCE_SUM] = &xf_cu_reduce_handler,
    [XF_OP_REDUCE_MAX] = &xf_cu_reduce_handler,
    [XF_OP_REDUCE_MIN] = &xf_cu_reduce_handler,
    /* Not, Shape, ConstantOfShape, Range and ReduceProd have no device
     * path: they run through cpu_ref on host copies. */
};

/* Whether the device path takes node; why says why not. */
static bool on_device(const xf_graph *g, const xf_node *n, char *why, size_t why_len)
{
    why[0] = '\0';
    if (n->op == XF_OP_OPAQUE || !handlers[n->op])
        return false;
    /* dtypes not inferred yet: asked again after inference */
    for (int k = 0; k < n->n_inputs + n->n_outputs; k++) {
        int v = k < n->n_inputs ? n->inputs[k] : n->outputs[k - n->n_inputs];
        if (v >= 0 && (g->values[v].dtype == XF_DT_UNDEFINED || xf_shape_numel(&g->values[v].shape) < 0))
            return true;
    }
    return handlers[n->op]->accepts(g, n, why, why_len);
}

static xf_status cu_supports(const xf_graph *g, int node, xf_error *err)
{
    const xf_node *n = &g->nodes[node];
    char why[256];
    if (on_device(g, n, why, sizeof why))
        return XF_OK;
    xf_error ref_err = {0};
    if (n->op != XF_OP_OPAQUE && xf_backend_cpu_ref.supports(g, node, &ref_err) == XF_OK)
        return XF_OK;
    return why[0] ? xf_rt_unsupported(err, &xf_backend_cuda, n, "%s", why)
                  : xf_rt_unsupported(err, &xf_backend_cuda, n, NULL);
}

/* ---------------------------------------------------------------- host fallback */

/* Copies the operands to host memory, runs the cpu_ref kernel, copies the
 * outputs back. */
static xf_status run_on_host(xf_cu_ctx *c, const xf_graph *g, int node, const xf_tensor_view *in,
                             const xf_tensor_view *out, xf_error *err)
{
    const xf_node *n = &g->nodes[node];
    int total = n->n_inputs + n->n_outputs;
    xf_tensor_view *views = calloc((size_t)total + 1, sizeof *views);
    void **bufs = calloc((size_t)total + 1, sizeof *bufs);
    xf_status st = views && bufs ? XF_OK : xf_error_set(err, XF_ERR_NOMEM, "out of memory");
    cudaError_t e = st == XF_OK ? cudaStreamSynchronize(c->stream) : cudaSuccess;
    const char *call = "cudaStreamSynchronize";
    for (int k = 0; k < total && st == XF_OK && e == cudaSuccess; k++) {
        const xf_tensor_view *v = k < n->n_inputs ? &in[k] : &out[k - n->n_inputs];
        views[k] = *v;
        views[k].data = NULL;
        /* Shape and Size read only their input's shape */
        bool skip = (xf_op_get_info(n->op)->flags & XF_OPF_SHAPE_ONLY) && k == 0;
        size_t bytes = xf_rt_present(v) && !skip ? xf_rt_bytes(v) : 0;
        if (!bytes)
            continue;
        bufs[k] = malloc(bytes);
        if (!bufs[k]) {
            st = xf_error_set(err, XF_ERR_NOMEM, "out of memory");
            break;
        }
        views[k].data = bufs[k];
        if (k < n->n_inputs) {
            e = cudaMemcpyAsync(bufs[k], v->data, bytes, cudaMemcpyDeviceToHost, c->stream);
            call = "cudaMemcpyAsync (device to host)";
        }
    }
    if (st == XF_OK && e == cudaSuccess && (e = cudaStreamSynchronize(c->stream)) != cudaSuccess)
        call = "cudaStreamSynchronize";
    if (st == XF_OK && e == cudaSuccess)
        st = xf_backend_cpu_ref.run_node(NULL, g, node, NULL, views, views + n->n_inputs, err);
    for (int k = n->n_inputs; k < total && st == XF_OK && e == cudaSuccess; k++)
        if (bufs[k]) {
            /* from pageable memory: returns once the bytes are staged, so
             * the buffer may be freed; the stream orders the rest */
            e = cudaMemcpyAsync(out[k - n->n_inputs].data, bufs[k], xf_rt_bytes(&out[k - n->n_inputs]),
                                cudaMemcpyHostToDevice, c->stream);
            call = "cudaMemcpyAsync (host to device)";
        }
    if (st == XF_OK && e != cudaSuccess)
        st = xf_cu_fail(err, n, call, e);
    for (int k = 0; k < total && bufs; k++)
        free(bufs[k]);
    free(bufs);
    free(views);
    return st;
}

/* ---------------------------------------------------------------- bad input found on the device */

int *xf_cu_bad_flag(xf_cu_ctx *c, const xf_node *n, int *report)
{
    *report = (int)(n - c->graph->nodes) + 1;
    c->bad_armed = true;
    return c->bad;
}

/* The error for what node n found on the device, worded as cpu_ref words it. */
static xf_status bad_input_error(const xf_graph *g, const xf_node *n, xf_error *err)
{
    const xf_value *x = n->n_inputs > 0 && n->inputs[0] >= 0 ? &g->values[n->inputs[0]] : NULL;
    int axis = x ? xf_rt_axis(n->attrs.axis, x->shape.ndim) : -1;
    if (n->op == XF_OP_GATHER && axis >= 0)
        return xf_rt_bad_node(err, n, "an index out of range for axis of size %lld",
                              (long long)x->shape.dims[axis]);
    return xf_rt_bad_node(err, n, "invalid input found on the device");
}

/* After the stream is waited for: the error a kernel flagged since the
 * last check, if any; the flag is cleared for the next run. */
static xf_status check_bad(xf_cu_ctx *c, xf_error *err)
{
    if (!c->bad_armed)
        return XF_OK;
    c->bad_armed = false;
    int report = 0;
    XF_CU_TRY(err, NULL, cudaMemcpyAsync(&report, c->bad, sizeof report, cudaMemcpyDeviceToHost, c->stream));
    XF_CU_TRY(err, NULL, cudaStreamSynchronize(c->stream));
    if (report == 0)
        return XF_OK;
    XF_CU_TRY(err, NULL, cudaMemsetAsync(c->bad, 0, sizeof report, c->stream));
    if (!c->graph || report < 1 || report > c->graph->n_nodes)
        return xf_error_set(err, XF_ERR_INVALID, "backend cuda: invalid input found on the device");
    return bad_input_error(c->graph, &c->graph->nodes[report - 1], err);
}

/* ---------------------------------------------------------------- nodes */

/* Frees what prepare made and zeroes st. */
static void node_clear(xf_cu_node *st)
{
    if (st->x_desc)
        cudnnDestroyTensorDescriptor(st->x_desc);
    if (st->y_desc)
        cudnnDestroyTensorDescriptor(st->y_desc);
    if (st->b_desc)
        cudnnDestroyTensorDescriptor(st->b_desc);
    if (st->w_desc)
        cudnnDestroyFilterDescriptor(st->w_desc);
    if (st->conv_desc)
        cudnnDestroyConvolutionDescriptor(st->conv_desc);
    if (st->act_desc)
        cudnnDestroyActivationDescriptor(st->act_desc);
    if (st->pool_desc)
        cudnnDestroyPoolingDescriptor(st->pool_desc);
    if (st->padded)
        cudaFree(st->padded);
    memset(st, 0, sizeof *st);
}

static void cu_release(void *ctx, void *state)
{
    if (state)
        node_clear(state);
    free(state);
}

static xf_status cu_prepare(void *ctx, const xf_graph *g, int node, const xf_tensor_view *in,
                            const xf_tensor_view *out, void **state, xf_error *err)
{
    xf_cu_ctx *c = ctx;
    const xf_node *n = &g->nodes[node];
    xf_cu_node *st = calloc(1, sizeof *st);
    if (!st)
        return xf_error_set(err, XF_ERR_NOMEM, "out of memory");
    *state = st;
    char why[256];
    if (!on_device(g, n, why, sizeof why)) {
        st->on_host = true;
        xf_log(XF_LOG_DEBUG, "backend cuda: node '%s' (%s) runs through cpu_ref on the host%s%s", node_name(n),
               node_op(n), why[0] ? ": device path refuses it " : "", why);
        return XF_OK;
    }
    st->handler = handlers[n->op];
    if (!st->handler->prepare)
        return XF_OK;
    xf_status s = st->handler->prepare(c, g, n, in, out, st, err);
    /* a configuration the library refuses (no cuDNN algorithm for these
     * shapes, ...) still runs, on the host, and says so */
    xf_error ref_err = {0};
    if (s == XF_ERR_UNSUPPORTED && xf_backend_cpu_ref.supports(g, node, &ref_err) == XF_OK) {
        xf_log(XF_LOG_WARN, "%s; node '%s' runs through cpu_ref on the host instead", err ? err->msg : "",
               node_name(n));
        node_clear(st);
        st->on_host = true;
        return XF_OK;
    }
    return s;
}

static xf_status cu_run_node(void *ctx, const xf_graph *g, int node, void *state, const xf_tensor_view *in,
                             const xf_tensor_view *out, xf_error *err)
{
    xf_cu_ctx *c = ctx;
    xf_cu_node *st = state;
    if (!st)
        return xf_error_set(err, XF_ERR_INVALID, "backend cuda: node '%s' was not prepared",
                            node_name(&g->nodes[node]));
    /* a run that failed before its flag was read leaves nothing for this one */
    if (node == 0 && c->bad_armed) {
        c->bad_armed = false;
        XF_CU_TRY(err, NULL, cudaMemsetAsync(c->bad, 0, sizeof *c->bad, c->stream));
    }
    c->graph = g;
    if (st->on_host)
        return run_on_host(c, g, node, in, out, err);
    return st->handler->run(c, g, &g->nodes[node], st, in, out, err);
}

/* ---------------------------------------------------------------- context and memory */

static void cu_context_free(void *ctx)
{
    xf_cu_ctx *c = ctx;
    if (!c)
        return;
    if (c->stream)
        cudaStreamSynchronize(c->stream);
    for (int k = 0; k < 2; k++)
        if (c->timer[k])
            cudaEventDestroy(c->timer[k]);
    if (c->workspace)
        cudaFree(c->workspace);
    if (c->bad)
        cudaFree(c->bad);
    if (c->blas)
        cublasDestroy(c->blas);
    if (c->dnn)
        cudnnDestroy(c->dnn);
    if (c->stream)
        cudaStreamDestroy(c->stream);
    free(c);
}

static xf_status cu_context_create(const xf_session_options *opt, void **out, xf_error *err)
{
    *out = NULL;
    int count = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess)
        return xf_error_set(err, XF_ERR_UNSUPPORTED, "no CUDA device: %s (%s)", cudaGetErrorString(e),
                            cudaGetErrorName(e));
    if (count == 0)
        return xf_error_set(err, XF_ERR_UNSUPPORTED, "no CUDA device: the CUDA runtime reports 0 devices");
    xf_cu_ctx *c = calloc(1, sizeof *c);
    if (!c)
        return xf_error_set(err, XF_ERR_NOMEM, "out of memory");
    c->direct_conv = opt && opt->direct_convolutions;
    const char *tf32 = getenv("XF_CUDA_TF32");
    c->tf32 = tf32 && !strcmp(tf32, "1");
    xf_status st = XF_OK;
    cudnnStatus_t ds;
    cublasStatus_t bs;
    if ((e = cudaGetDevice(&c->device)) != cudaSuccess)
        st = xf_cu_fail(err, NULL, "cudaGetDevice", e);
    else if ((e = cudaStreamCreateWithFlags(&c->stream, cudaStreamNonBlocking)) != cudaSuccess)
        st = xf_cu_fail(err, NULL, "cudaStreamCreateWithFlags", e);
    else if ((ds = cudnnCreate(&c->dnn)) != CUDNN_STATUS_SUCCESS)
        st = xf_cu_dnn_fail(err, NULL, "cudnnCreate", ds);
    else if ((ds = cudnnSetStream(c->dnn, c->stream)) != CUDNN_STATUS_SUCCESS)
        st = xf_cu_dnn_fail(err, NULL, "cudnnSetStream", ds);
    else if ((bs = cublasCreate(&c->blas)) != CUBLAS_STATUS_SUCCESS)
        st = xf_cu_blas_fail(err, NULL, "cublasCreate", bs);
    else if ((bs = cublasSetStream(c->blas, c->stream)) != CUBLAS_STATUS_SUCCESS)
        st = xf_cu_blas_fail(err, NULL, "cublasSetStream", bs);
    else if ((bs = cublasSetMathMode(c->blas, c->tf32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH)) !=
             CUBLAS_STATUS_SUCCESS)
        st = xf_cu_blas_fail(err, NULL, "cublasSetMathMode", bs);
    for (int k = 0; k < 2 && st == XF_OK; k++)
        if ((e = cudaEventCreate(&c->timer[k])) != cudaSuccess)
            st = xf_cu_fail(err, NULL, "cudaEventCreate", e);
    if (st == XF_OK && (e = cudaMalloc((void **)&c->bad, sizeof *c->bad)) != cudaSuccess)
        st = xf_cu_fail(err, NULL, "cudaMalloc", e);
    if (st == XF_OK && (e = cudaMemsetAsync(c->bad, 0, sizeof *c->bad, c->stream)) != cudaSuccess)
        st = xf_cu_fail(err, NULL, "cudaMemsetAsync", e);
    if (st != XF_OK) {
        cu_context_free(c);
        return st;
    }
    *out = c;
    return XF_OK;
}

static void *cu_alloc(void *ctx, size_t bytes)
{
    void *p = NULL;
    if (bytes == 0 || cudaMalloc(&p, bytes) != cudaSuccess)
        return NULL;
    return p; /* cudaMalloc aligns to at least 256 bytes */
}

static void cu_free(void *ctx, void *ptr)
{
    if (ptr)
        cudaFree(ptr);
}

static xf_status cu_copy_in(void *ctx, void *dst, const void *host_src, size_t bytes, xf_error *err)
{
    xf_cu_ctx *c = ctx;
    if (bytes)
        XF_CU_TRY(err, NULL, cudaMemcpyAsync(dst, host_src, bytes, cudaMemcpyHostToDevice, c->stream));
    return XF_OK;
}

static xf_status cu_synchronize(void *ctx, xf_error *err)
{
    xf_cu_ctx *c = ctx;
    XF_CU_TRY(err, NULL, cudaStreamSynchronize(c->stream));
    return check_bad(c, err);
}

static xf_status cu_copy_out(void *ctx, void *host_dst, const void *src, size_t bytes, xf_error *err)
{
    xf_cu_ctx *c = ctx;
    if (bytes)
        XF_CU_TRY(err, NULL, cudaMemcpyAsync(host_dst, src, bytes, cudaMemcpyDeviceToHost, c->stream));
    return cu_synchronize(ctx, err);
}

static void cu_device_name(void *ctx, char *buf, size_t n)
{
    xf_cu_ctx *c = ctx;
    struct cudaDeviceProp p;
    if (cudaGetDeviceProperties(&p, c->device) == cudaSuccess)
        snprintf(buf, n, "%s sm_%d%d", p.name, p.major, p.minor);
    else
        snprintf(buf, n, "device %d", c->device);
}

static xf_status cu_timer_start(void *ctx, xf_error *err)
{
    xf_cu_ctx *c = ctx;
    XF_CU_TRY(err, NULL, cudaEventRecord(c->timer[0], c->stream));
    return XF_OK;
}

static xf_status cu_timer_stop(void *ctx, double *seconds, xf_error *err)
{
    xf_cu_ctx *c = ctx;
    float ms = 0.f;
    XF_CU_TRY(err, NULL, cudaEventRecord(c->timer[1], c->stream));
    XF_CU_TRY(err, NULL, cudaEventSynchronize(c->timer[1]));
    XF_CU_TRY(err, NULL, cudaEventElapsedTime(&ms, c->timer[0], c->timer[1]));
    *seconds = 1e-3 * (double)ms;
    return check_bad(c, err);
}

const xf_backend xf_backend_cuda = {
    .name = "cuda",
    .description = "NVIDIA GPU: cuDNN, cuBLAS and xflow's CUDA kernels",
    .host_memory = false,
    .half_as_float = true,
    .context_create = cu_context_create,
    .context_free = cu_context_free,
    .supports = cu_supports,
    .prepare = cu_prepare,
    .run_node = cu_run_node,
    .release = cu_release,
    .alloc = cu_alloc,
    .free = cu_free,
    .copy_in = cu_copy_in,
    .copy_out = cu_copy_out,
    .synchronize = cu_synchronize,
    .timer_start = cu_timer_start,
    .timer_stop = cu_timer_stop,
    .device_name = cu_device_name,
};
