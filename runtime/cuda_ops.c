/* cuda ops on xflow's own kernels (cuda_kernels.cu): elementwise with
 * broadcasting, Where, Clip, Cast, data movement (every rearrangement is
 * one strided copy), Gather, Pad, reductions, global pools and
 * LayerNormalization.  Semantics are cpu_ref's (runtime/cpu_ref_*.c). */
#include "cuda_internal.h"

#include <math.h>
#include <string.h>

#define WHY char *why, size_t why_len

static const xf_value *val(const xf_graph *g, const xf_node *n, int k)
{
    return k < n->n_inputs && n->inputs[k] >= 0 ? &g->values[n->inputs[k]] : NULL;
}

static const xf_value *outval(const xf_graph *g, const xf_node *n, int k)
{
    return k < n->n_outputs && n->outputs[k] >= 0 ? &g->values[n->outputs[k]] : NULL;
}

static size_t elem_size(const xf_tensor_view *v) { return xf_dtype_size(v->dtype); }

static bool movable(const xf_graph *g, const xf_node *n, WHY)
{
    const xf_value *x = val(g, n, 0);
    size_t es = x ? xf_dtype_size(x->dtype) : 0;
    if (es != 1 && es != 2 && es != 4 && es != 8 && es != 16)
        return xf_cu_refuse(why, why_len, "on %s", x ? xf_dtype_name(x->dtype) : "no input");
    return true;
}

static xf_status copy_bytes(xf_cu_ctx *c, const xf_node *n, void *dst, const void *src, size_t bytes,
                            xf_error *err)
{
    if (bytes && dst != src)
        XF_CU_TRY(err, n, cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, c->stream));
    return XF_OK;
}

/* One float scalar: an initializer's value, else read from the device. */
static xf_status read_float(xf_cu_ctx *c, const xf_graph *g, const xf_node *n, int k, const xf_tensor_view *v,
                            float *out, xf_error *err)
{
    if (xf_rt_numel(v) != 1 || v->dtype != XF_DT_FLOAT)
        return xf_rt_bad_node(err, n, "input %d must be one float", k);
    const xf_tensor *init = g->values[n->inputs[k]].init;
    if (init) {
        memcpy(out, init->data, sizeof *out);
        return XF_OK;
    }
    XF_CU_TRY(err, n, cudaMemcpyAsync(out, v->data, sizeof *out, cudaMemcpyDeviceToHost, c->stream));
    XF_CU_TRY(err, n, cudaStreamSynchronize(c->stream));
    return XF_OK;
}

/* ---------------------------------------------------------------- unary, clip */

static const int unary_code[XF_OP_COUNT] = {
    [XF_OP_RELU] = XF_CU_RELU + 1, [XF_OP_SIGMOID] = XF_CU_SIGMOID + 1, [XF_OP_TANH] = XF_CU_TANH + 1,
    [XF_OP_ABS] = XF_CU_ABS + 1, [XF_OP_NEG] = XF_CU_NEG + 1, [XF_OP_EXP] = XF_CU_EXP + 1,
    [XF_OP_LOG] = XF_CU_LOG + 1, [XF_OP_SQRT] = XF_CU_SQRT + 1, [XF_OP_RECIPROCAL] = XF_CU_RECIPROCAL + 1,
    [XF_OP_FLOOR] = XF_CU_FLOOR + 1, [XF_OP_CEIL] = XF_CU_CEIL + 1, [XF_OP_ERF] = XF_CU_ERF + 1,
    [XF_OP_SIN] = XF_CU_SIN + 1, [XF_OP_COS] = XF_CU_COS + 1, [XF_OP_SOFTPLUS] = XF_CU_SOFTPLUS + 1,
    [XF_OP_LEAKY_RELU] = XF_CU_LEAKY_RELU + 1, [XF_OP_ELU] = XF_CU_ELU + 1,
    [XF_OP_HARD_SIGMOID] = XF_CU_HARD_SIGMOID + 1, [XF_OP_HARD_SWISH] = XF_CU_HARD_SWISH + 1,
    [XF_OP_SIGN] = XF_CU_SIGN + 1, [XF_OP_ROUND] = XF_CU_ROUND + 1, [XF_OP_TAN] = XF_CU_TAN + 1,
    [XF_OP_ATAN] = XF_CU_ATAN + 1, [XF_OP_ASIN] = XF_CU_ASIN + 1, [XF_OP_ACOS] = XF_CU_ACOS + 1,
    [XF_OP_SINH] = XF_CU_SINH + 1, [XF_OP_COSH] = XF_CU_COSH + 1, [XF_OP_ASINH] = XF_CU_ASINH + 1,
    [XF_OP_ACOSH] = XF_CU_ACOSH + 1, [XF_OP_ATANH] = XF_CU_ATANH + 1, [XF_OP_SOFTSIGN] = XF_CU_SOFTSIGN + 1,
    [XF_OP_THRESHOLDED_RELU] = XF_CU_THRESHOLDED_RELU + 1, [XF_OP_SELU] = XF_CU_SELU + 1,
    [XF_OP_CELU] = XF_CU_CELU + 1, [XF_OP_SHRINK] = XF_CU_SHRINK + 1, [XF_OP_MISH] = XF_CU_MISH + 1,
    [XF_OP_GELU] = XF_CU_GELU + 1, [XF_OP_MS_GELU] = XF_CU_GELU + 1,
};

/* The kernel's op for node n (0: none); Gelu's tanh form is one of its own. */
static int unary_op_code(const xf_node *n)
{
    return n->op == XF_OP_GELU && n->attrs.gelu_tanh ? XF_CU_GELU_TANH + 1 : unary_code[n->op];
}

static bool unary_accepts(const xf_graph *g, const xf_node *n, WHY)
{
    if (!unary_op_code(n))
        return xf_cu_refuse(why, why_len, "(no kernel)");
    return xf_cu_all_f32(g, n, why, why_len);
}

static xf_status unary_run(xf_cu_ctx *c, const xf_graph *g, const xf_node *n, xf_cu_node *st,
                           const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err)
{
    if (xf_rt_numel(&in[0]) != xf_rt_numel(&out[0]))
        return xf_rt_bad_node(err, n, "input and output sizes differ");
    XF_CU_TRY(err, n, xf_cu_unary(c->stream, (xf_cu_unary_op)(unary_op_code(n) - 1), xf_rt_numel(&out[0]),
                                   in[0].data, out[0].data, n->attrs.alpha, n->attrs.beta));
    return XF_OK;
}

const xf_cu_handler xf_cu_unary_handler = {unary_accepts, NULL, unary_run};

static xf_status clip_run(xf_cu_ctx *c, const xf_graph *g, const xf_node *n, xf_cu_node *st,
                          const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err)
{
    float lo = n->attrs.has_clip_attrs ? n->attrs.clip_min : -INFINITY;
    float hi = n->attrs.has_clip_attrs ? n->attrs.clip_max : INFINITY;
    xf_status s = XF_OK;
    if (n->n_inputs > 1 && xf_rt_present(&in[1]))
        s = read_float(c, g, n, 1, &in[1], &lo, err);
    if (s == XF_OK && n->n_inputs > 2 && xf_rt_present(&in[2]))
        s = read_float(c, g, n, 2, &in[2], &hi, err);
    if (s != XF_OK)
        return s;
    XF_CU_TRY(err, n, xf_cu_unary(c->stream, XF_CU_CLIP, xf_rt_numel(&out[0]), in[0].data, out[0].data, lo, hi));
    return XF_OK;
}

const xf_cu_handler xf_cu_clip_handler = {xf_cu_all_f32, NULL, clip_run};

/* ---------------------------------------------------------------- binary, variadic, where */

static const int binary_code[XF_OP_COUNT] = {
    [XF_OP_ADD] = XF_CU_ADD + 1, [XF_OP_SUB] = XF_CU_SUB + 1, [XF_OP_MUL] = XF_CU_MUL + 1,
    [XF_OP_DIV] = XF_CU_DIV + 1, [XF_OP_POW] = XF_CU_POW + 1, [XF_OP_MAX] = XF_CU_MAX + 1,
    [XF_OP_MIN] = XF_CU_MIN + 1, [XF_OP_SUM] = XF_CU_ADD + 1, [XF_OP_EQUAL] = XF_CU_EQUAL + 1,
    [XF_OP_GREATER] = XF_CU_GREATER + 1, [XF_OP_LESS] = XF_CU_LESS + 1,
    [XF_OP_GREATER_OR_EQUAL] = XF_CU_GREATER_EQ + 1, [XF_OP_LESS_OR_EQUAL] = XF_CU_LESS_EQ + 1,
};

static bool is_comparison(xf_op op)
{
    return op == XF_OP_EQUAL || op == XF_OP_GREATER || op == XF_OP_LESS || op == XF_OP_GREATER_OR_EQUAL ||
           op == XF_OP_LESS_OR_EQUAL;
}

static bool binary_accepts(const xf_graph *g, const xf_node *n, WHY)
{
    xf_dtype t = val(g, n, 0)->dtype;
    if (t != XF_DT_FLOAT && t != XF_DT_INT32 && t != XF_DT_INT64)
        return xf_cu_refuse(why, why_len, "on %s", xf_dtype_name(t));
    for (int k = 0; k < n->n_inputs; k++)
        if (!val(g, n, k) || val(g, n, k)->dtype != t)
            return xf_cu_refuse(why, why_len, "with operands of different types");
    xf_dtype o = outval(g, n, 0)->dtype;
    if (o != (is_comparison(n->op) ? XF_DT_BOOL : t))
        return xf_cu_refuse(why, why_len, "producing %s", xf_dtype_name(o));
    return true;
}

/* o = op(a, b), broadcasting; o may be a itself (same shape: each element
 * is read by the thread that writes it). */
static xf_status binary_apply(xf_cu_ctx *c, const xf_node *n, const xf_tensor_view *a, const xf_tensor_view *b,
                              const xf_tensor_view *o, xf_error *err)
{
    if (!xf_rt_broadcastable(&a->shape, &o->shape) || !xf_rt_broadcastable(&b->shape, &o->shape))
        return xf_rt_bad_node(err, n, "operands do not broadcast to the output shape");
    xf_cu_index ix;
    xf_cu_index_init(&ix, &o->shape);
    xf_cu_index_add_broadcast(&ix, &a->shape);
    xf_cu_index_add_broadcast(&ix, &b->shape);
    xf_cu_index_coalesce(&ix);
    XF_CU_TRY(err, n, xf_cu_binary(c->stream, (xf_cu_binary_op)(binary_code[n->op] - 1), xf_cu_kind_of(a->dtype),
                                    &ix, a->data, b->data, o->data));
    return XF_OK;
}

static xf_status binary_run(xf_cu_ctx *c, const xf_graph *g, const xf_node *n, xf_cu_node *st,
                            const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err)
{
    return binary_apply(c, n, &in[0], &in[1], &out[0], err);
}

const xf_cu_handler xf_cu_binary_handler = {binary_accepts, NULL, binary_run};

/* Max, Min, Sum: a left fold accumulating in the output. */
static xf_status variadic_run(xf_cu_ctx *c, const xf_graph *g, const xf_node *n, xf_cu_node *st,
                              const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err)
{
    if (n->n_inputs == 1) {
        if (!xf_shape_equal(&in[0].shape, &out[0].shape))
            return xf_rt_bad_node(err, n, "input and output shapes differ");
        return copy_bytes(c, n, out[0].data, in[0].data, xf_rt_bytes(&out[0]), err);
    }
    xf_status s = binary_apply(c, n, &in[0], &in[1], &out[0], err);
    for (int k = 2; k < n->n_inputs && s == XF_OK; k++)
        s = binary_apply(c, n, &out[0], &in[k], &out[0], err);
    return s;
}

const xf_cu_handler xf_cu_variadic_handler = {binary_accepts, NULL, variadic_run};

static bool where_accepts(const xf_graph *g, const xf_node *n, WHY)
{
    if (val(g, n, 0)->dtype != XF_DT_BOOL)
        return xf_cu_refuse(why, why_len, "with a %s condition", xf_dtype_name(val(g, n, 0)->dtype));
    if (val(g, n, 1)->dtype != val(g, n, 2)->dtype)
        return xf_cu_refuse(why, why_len, "with branches of different types");
    const xf_value *x = val(g, n, 1);
    size_t es = xf_dtype_size(x->dtype);
    if (es != 1 && es != 2 && es != 4 && es != 8 && es != 16)
        return xf_cu_refuse(why, why_len, "on %s", xf_dtype_name(x->dtype));
    return true;
}

static xf_status where_run(xf_cu_ctx *c, const xf_graph *g, const xf_node *n, xf_cu_node *st,
                           const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err)
{
    xf_cu_index ix;
    xf_cu_index_init(&ix, &out[0].shape);
    for (int k = 0; k < 3; k++) {
        if (!xf_rt_broadcastable(&in[k].shape, &out[0].shape))
            return xf_rt_bad_node(err, n, "operands do not broadcast to the output shape");
        xf_cu_index_add_broadcast(&ix, &in[k].shape);
    }
    xf_cu_index_coalesce(&ix);
    XF_CU_TRY(err, n, xf_cu_where(c->stream, elem_size(&out[0]), &ix, in[0].data, in[1].data, in[2].data,
                                   out[0].data));
    return XF_OK;
}

const xf_cu_handler xf_cu_where_handler = {where_accepts, NULL, where_run};

/* ---------------------------------------------------------------- cast */

static bool cast_accepts(const xf_graph *g, const xf_node *n, WHY)
{
    xf_dtype from = val(g, n, 0)->dtype, to = outval(g, n, 0)->dtype;
    if (xf_cu_kind_of(from) == XF_CU_KIND_COUNT || xf_cu_kind_of(to) == XF_CU_KIND_COUNT)
        return xf_cu_refuse(why, why_len, "from %s to %s", xf_dtype_name(from), xf_dtype_name(to));
    return true;
}

static xf_status cast_run(xf_cu_ctx *c, const xf_graph *g, const xf_node *n, xf_cu_node *st,
                          const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err)
{
    if (xf_rt_numel(&in[0]) != xf_rt_numel(&out[0]))
        return xf_rt_bad_node(err, n, "input and output sizes differ");
    XF_CU_TRY(err, n, xf_cu_cast(c->stream, xf_cu_kind_of(in[0].dtype), xf_cu_kind_of(out[0].dtype),
                                  xf_rt_numel(&out[0]), in[0].data, out[0].data));
    return XF_OK;
}

const xf_cu_handler xf_cu_cast_handler = {cast_accepts, NULL, cast_run};

/* ---------------------------------------------------------------- plain copies */

/* Reshape, Flatten, Squeeze, Unsqueeze, Identity: the bytes are unchanged. */
static xf_status copy_run(xf_cu_ctx *c, const xf_graph *g, const xf_node *n, xf_cu_node *st,
                          const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err)
{
    if (xf_rt_bytes(&in[0]) != xf_rt_bytes(&out[0]))
        return xf_rt_bad_node(err, n, "input has %zu bytes, output %zu", xf_rt_bytes(&in[0]), xf_rt_bytes(&out[0]));
    return copy_bytes(c, n, out[0].data, in[0].data, xf_rt_bytes(&out[0]), err);
}

const xf_cu_handler xf_cu_copy_handler = {movable, NULL, copy_run};

/* Inference Dropout: the identity and an all-true mask.  Training mode must
 * be a constant false; anything else goes through cpu_ref, which refuses
 * random training runs. */
static bool dropout_accepts(const xf_graph *g, const xf_node *n, WHY)
{
    const xf_value *training = val(g, n, 2);
    if (training && (!training->init || xf_tensor_numel(training->init) != 1 ||
                     xf_tensor_get_i64(training->init, 0) != 0))
        return xf_cu_refuse(why, why_len, "in training mode");
    const xf_value *mask = outval(g, n, 1);
    if (mask && mask->dtype != XF_DT_BOOL)
        return xf_cu_refuse(why, why_len, "with a %s mask", xf_dtype_name(mask->dtype));
    return movable(g, n, why, why_len);
}

static xf_status dropout_run(xf_cu_ctx *c, const xf_graph *g, const xf_node *n, xf_cu_node *st,
                             const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err)
{
    xf_status s = copy_run(c, g, n, st, in, out, err);
    if (s == XF_OK && n->n_outputs > 1 && xf_rt_present(&out[1])) {
        uint8_t one = 1;
        XF_CU_TRY(err, n, xf_cu_fill(c->stream, 1, xf_rt_numel(&out[1]), &one, out[1].data));
    }
    return s;
}

const xf_cu_handler xf_cu_dropout_handler = {dropout_accepts, NULL, dropout_run};

/* ---------------------------------------------------------------- strided copies */

/* Copies the elements of `part` (dense, shape ps) into or out of `whole`
 * (dense, shape ws) at offset `at` along axis. */
static xf_status copy_part(xf_cu_ctx *c, const xf_node *n, const xf_tensor_view *part, const xf_tensor_view *whole,
                           int axis, int64_t at, bool into_whole, xf_error *err)
{
    int64_t part_strides[XF_MAX_DIMS], whole_strides[XF_MAX_DIMS];
    xf_rt_dense_strides(&part->shape, part_strides);
    xf_rt_dense_strides(&whole->shape, whole_strides);
    xf_cu_index ix;
    xf_cu_index_init(&ix, &part->shape);
    xf_cu_index_add(&ix, into_whole ? part_strides : whole_strides);
    xf_cu_index_add(&ix, into_whole ? whole_strides : part_strides);
    xf_cu_index_coalesce(&ix);
    int64_t base = at * whole_strides[axis];
    XF_CU_TRY(err, n, xf_cu_copy(c->stream, elem_size(whole), &ix, into_whole ? part->data : whole->data,
                                  into_whole ? 0 : base, into_whole ? whole->data : part->data,
                                  into_whole ? base : 0));
    return XF_OK;
}

/* Concat (into_whole) and Split: the pieces laid along the axis in order. */
static xf_status pieces_run(const xf_node *n, xf_cu_ctx *c, const xf_tensor_view *whole,
                            const xf_tensor_view *pieces, int n_pieces, bool into_whole, xf_error *err)
{
    int axis = xf_rt_axis(n->attrs.axis, whole->shape.ndim);
    if (axis < 0)
        return xf_rt_bad_node(err, n, "axis %lld out of range", (long long)n->attrs.axis);
    int64_t at = 0;
    for (int k = 0; k < n_pieces; k++) {
        if (!xf_rt_present(&pieces[k]) || !xf_rt_same_but_axis(&pieces[k].shape, &whole->shape, axis))
            return xf_rt_bad_node(err, n, "piece %d does not match the whole outside the axis", k);
        at += pieces[k].shape.dims[axis];
    }
    if (at != whole->shape.dims[axis])
        return xf_rt_bad_node(err, n, "pieces add up to %lld along the axis, the whole has %lld", (long long)at,
                              (long long)whole->shape.dims[axis]);
    at = 0;
    for (int k = 0; k < n_pieces; k++) {
        xf_status s = copy_part(c, n, &pieces[k], whole, axis, at, into_whole, err);
        if (s != XF_OK)
            return s;
        at += pieces[k].shape.dims[axis];
    }
    return XF_OK;
}

static xf_status concat_run(xf_cu_ctx *c, const xf_graph *g, const xf_node *n, xf_cu_node *st,
                            const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err)
{
    return pieces_run(n, c, &out[0], in, n->n_inputs, true, err);
}

static xf_status split_run(xf_cu_ctx *c, const xf_graph *g, const xf_node *n, xf_cu_node *st,
                           const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err)
{
    return pieces_run(n, c, &in[0], out, n->n_outputs, false, err);
}

const xf_cu_handler xf_cu_concat_handler = {movable, NULL, concat_run};
const xf_cu_handler xf_cu_split_handler = {movable, NULL, split_run};

/* The output (dense) read from the input through strides and a base. */
static xf_status gather_strided(xf_cu_ctx *c, const xf_node *n, const xf_tensor_view *x, const xf_tensor_view *y,
                                const int64_t *strides, int64_t base, xf_error *err)
{
    int64_t dense[XF_MAX_DIMS];
    xf_rt_dense_strides(&y->shape, dense);
    xf_cu_index ix;
    xf_cu_index_init(&ix, &y->shape);
    xf_cu_index_add(&ix, strides);
    xf_cu_index_add(&ix, dense);
    xf_cu_index_coalesce(&ix);
    XF_CU_TRY(err, n, xf_cu_copy(c->stream, elem_size(y), &ix, x->data, base, y->data, 0));
    return XF_OK;
}

static xf_status transpose_run(xf_cu_ctx *c, const xf_graph *g, const xf_node *n, xf_cu_node *st,
                               const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err)
{
    const xf_shape *xs = &in[0].shape, *ys = &out[0].shape;
    int rank = xs->ndim;
    int64_t in_strides[XF_MAX_DIMS], strides[XF_MAX_DIMS];
    bool used[XF_MAX_DIMS] = {false};
    if (ys->ndim != rank || (n->attrs.n_perm && n->attrs.n_perm != rank))
        return xf_rt_bad_node(err, n, "perm does not match the rank %d", rank);
    xf_rt_dense_strides(xs, in_strides);
    for (int d = 0; d < rank; d++) {
        int64_t p = n->attrs.n_perm ? n->attrs.perm[d] : rank - 1 - d;
        if (p < 0 || p >= rank || used[p] || ys->dims[d] != xs->dims[p])
            return xf_rt_bad_node(err, n, "perm is not a permutation matching the output shape");
        used[p] = true;
        strides[d] = in_strides[p];
    }
    return gather_strided(c, n, &in[0], &out[0], strides, 0, err);
}

const xf_cu_handler xf_cu_transpose_handler = {movable, NULL, transpose_run};

xf_status xf_cu_broadcast(xf_cu_ctx *c, const xf_node *n, const xf_tensor_view *x, const xf_tensor_view *y,
                          xf_error *err)
{
    if (!xf_rt_broadcastable(&x->shape, &y->shape))
        return xf_rt_bad_node(err, n, "input does not broadcast to the output shape");
    int64_t strides[XF_MAX_DIMS];
    xf_rt_broadcast_strides(&x->shape, &y->shape, strides);
    return gather_strided(c, n, x, y, strides, 0, err);
}

static xf_status expand_run(xf_cu_ctx *c, const xf_graph *g, const xf_node *n, xf_cu_node *st,
                            const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err)
{
    return xf_cu_broadcast(c, n, &in[0], &out[0], err);
}

const xf_cu_handler xf_cu_expand_handler = {movable, NULL, expand_run};

static int64_t clamp64(int64_t v, int64_t lo, int64_t hi) { return v < lo ? lo : v > hi ? hi : v; }

/* Slice: starts, ends, axes and steps from the opset-1 attributes or
 * inputs 1-4, normalized as ONNX says; the output shape (inferred) must
 * match what they select. */
static xf_status slice_run(xf_cu_ctx *c, const xf_graph *g, const xf_node *n, xf_cu_node *st,
                           const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err)
{
    const xf_attrs *a = &n->attrs;
    const xf_shape *xs = &in[0].shape, *ys = &out[0].shape;
    int rank = xs->ndim, count = 0, c2 = 0;
    int64_t starts[XF_MAX_DIMS], ends[XF_MAX_DIMS], axes[XF_MAX_DIMS], steps[XF_MAX_DIMS];
    xf_status s = XF_OK;
    if (ys->ndim != rank)
        return xf_rt_bad_node(err, n, "input and output ranks differ");
    if (a->has_slice_attrs) {
        count = a->n_slice;
        for (int i = 0; i < count; i++) {
            starts[i] = a->slice_starts[i];
            ends[i] = a->slice_ends[i];
            axes[i] = a->has_slice_axes ? a->slice_axes[i] : i;
            steps[i] = 1;
        }
    } else {
        s = xf_cu_read_ints(c, g, n, 1, &in[1], starts, XF_MAX_DIMS, &count, err);
        if (s == XF_OK)
            s = xf_cu_read_ints(c, g, n, 2, &in[2], ends, XF_MAX_DIMS, &c2, err);
        if (s == XF_OK && c2 != count)
            return xf_rt_bad_node(err, n, "starts and ends must have the same length");
        for (int i = 0; i < count; i++) {
            axes[i] = i;
            steps[i] = 1;
        }
        if (s == XF_OK && n->n_inputs > 3 && xf_rt_present(&in[3]) &&
            (s = xf_cu_read_ints(c, g, n, 3, &in[3], axes, XF_MAX_DIMS, &c2, err)) == XF_OK && c2 != count)
            return xf_rt_bad_node(err, n, "axes must match starts in length");
        if (s == XF_OK && n->n_inputs > 4 && xf_rt_present(&in[4]) &&
            (s = xf_cu_read_ints(c, g, n, 4, &in[4], steps, XF_MAX_DIMS, &c2, err)) == XF_OK && c2 != count)
            return xf_rt_bad_node(err, n, "steps must match starts in length");
    }
    if (s != XF_OK)
        return s;
    int64_t in_strides[XF_MAX_DIMS], strides[XF_MAX_DIMS], base = 0;
    bool sliced[XF_MAX_DIMS] = {false};
    xf_rt_dense_strides(xs, in_strides);
    memcpy(strides, in_strides, sizeof strides);
    for (int i = 0; i < count; i++) {
        int d = xf_rt_axis(axes[i], rank);
        int64_t step = steps[i];
        if (d < 0 || sliced[d] || step == 0)
            return xf_rt_bad_node(err, n, "bad axis %lld or step %lld", (long long)axes[i], (long long)step);
        sliced[d] = true;
        int64_t dim = xs->dims[d];
        int64_t start = starts[i] + (starts[i] < 0 ? dim : 0);
        start = step > 0 ? clamp64(start, 0, dim) : clamp64(start, 0, dim - 1);
        if (ys->dims[d] > 0)
            base += start * in_strides[d];
        strides[d] = step * in_strides[d];
    }
    return gather_strided(c, n, &in[0], &out[0], strides, base, err);
}

static bool slice_accepts(const xf_graph *g, const xf_node *n, WHY)
{
    for (int k = 1; k < n->n_inputs; k++)
        if (val(g, n, k) && xf_shape_numel(&val(g, n, k)->shape) > XF_MAX_DIMS)
            return xf_cu_refuse(why, why_len, "with more than %d sliced axes", XF_MAX_DIMS);
    return movable(g, n, why, why_len);
}

const xf_cu_handler xf_cu_slice_handler = {slice_accepts, NULL, slice_run};

/* ---------------------------------------------------------------- gather, pad */

static bool gather_accepts(const xf_graph *g, const xf_node *n, WHY)
{
    xf_dtype t = val(g, n, 1)->dtype;
    if (t != XF_DT_INT32 && t != XF_DT_INT64)
        return xf_cu_refuse(why, why_len, "with %s indices", xf_dtype_name(t));
    return movable(g, n, why, why_len);
}

static xf_status gather_run(xf_cu_ctx *c, const xf_graph *g, const xf_node *n, xf_cu_node *st,
                            const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err)
{
    const xf_shape *xs = &in[0].shape;
    int axis = xf_rt_axis(n->attrs.axis, xs->ndim);
    if (axis < 0)
        return xf_rt_bad_node(err, n, "axis %lld out of range", (long long)n->attrs.axis);
    int64_t outer = 1, inner = 1;
    for (int d = 0; d < axis; d++)
        outer *= xs->dims[d];
    for (int d = axis + 1; d < xs->ndim; d++)
        inner *= xs->dims[d];
    int64_t n_idx = xf_rt_numel(&in[1]);
    if (xf_rt_numel(&out[0]) != outer * n_idx * inner)
        return xf_rt_bad_node(err, n, "output size does not match data and indices");
    int report = 0;
    int *bad = xf_cu_bad_flag(c, n, &report);
    XF_CU_TRY(err, n, xf_cu_gather(c->stream, elem_size(&in[0]), outer, xs->dims[axis], inner, n_idx, in[1].data,
                                    in[1].dtype == XF_DT_INT64, in[0].data, out[0].data, bad, report));
    return XF_OK;
}

const xf_cu_handler xf_cu_gather_handler = {gather_accepts, NULL, gather_run};

static xf_status pad_run(xf_cu_ctx *c, const xf_graph *g, const xf_node *n, xf_cu_node *st,
                         const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err)
{
    const xf_attrs *a = &n->attrs;
    const xf_tensor_view *x = &in[0], *y = &out[0];
    int rank = x->shape.ndim;
    int64_t begin[XF_MAX_DIMS] = {0};
    size_t es = elem_size(x);
    unsigned char value[16] = {0};
    if (a->has_pads) {
        if (a->n_pads != 2 * rank)
            return xf_rt_bad_node(err, n, "%d pads for rank %d", a->n_pads, rank);
        for (int d = 0; d < rank; d++)
            begin[d] = a->pad_pads[d];
        xf_rt_store_f64(x->dtype, value, 0, a->pad_value);
    } else {
        int64_t pads[2 * XF_MAX_DIMS], axes[XF_MAX_DIMS];
        int n_pads = 0, n_axes = rank;
        xf_status s = xf_cu_read_ints(c, g, n, 1, &in[1], pads, 2 * XF_MAX_DIMS, &n_pads, err);
        for (int i = 0; i < rank; i++)
            axes[i] = i;
        if (s == XF_OK && n->n_inputs > 3 && xf_rt_present(&in[3]))
            s = xf_cu_read_ints(c, g, n, 3, &in[3], axes, XF_MAX_DIMS, &n_axes, err);
        if (s != XF_OK)
            return s;
        if (n_pads != 2 * n_axes)
            return xf_rt_bad_node(err, n, "pads must have two entries per padded axis");
        for (int i = 0; i < n_axes; i++) {
            int d = xf_rt_axis(axes[i], rank);
            if (d < 0)
                return xf_rt_bad_node(err, n, "axis %lld out of range", (long long)axes[i]);
            begin[d] = pads[i];
        }
        if (n->n_inputs > 2 && xf_rt_present(&in[2]) && xf_rt_numel(&in[2]) > 0) {
            if (in[2].dtype != x->dtype)
                return xf_rt_bad_node(err, n, "constant_value is %s, data %s", xf_dtype_name(in[2].dtype),
                                      xf_dtype_name(x->dtype));
            const xf_tensor *init = g->values[n->inputs[2]].init;
            if (init) {
                memcpy(value, init->data, es);
            } else {
                XF_CU_TRY(err, n, cudaMemcpyAsync(value, in[2].data, es, cudaMemcpyDeviceToHost, c->stream));
                XF_CU_TRY(err, n, cudaStreamSynchronize(c->stream));
            }
        }
    }
    if (y->shape.ndim != rank)
        return xf_rt_bad_node(err, n, "input and output ranks differ");
    for (int d = 0; d < rank; d++)
        if (a->pad_mode != XF_PAD_CONSTANT && x->shape.dims[d] == 0 && y->shape.dims[d] > 0)
            return xf_rt_bad_node(err, n, "cannot reflect or extend an empty dimension %d", d);
    XF_CU_TRY(err, n, xf_cu_pad(c->stream, es, rank, x->shape.dims, y->shape.dims, begin, (int)a->pad_mode, value,
                                 x->data, y->data));
    return XF_OK;
}

const xf_cu_handler xf_cu_pad_handler = {movable, NULL, pad_run};

/* ---------------------------------------------------------------- reductions */

static xf_cu_reduce_op reduce_code(xf_op op)
{
    switch (op) {
    case XF_OP_REDUCE_MEAN:
    case XF_OP_GLOBAL_AVERAGE_POOL: return XF_CU_RMEAN;
    case XF_OP_REDUCE_MAX:
    case XF_OP_GLOBAL_MAX_POOL: return XF_CU_RMAX;
    case XF_OP_REDUCE_MIN: return XF_CU_RMIN;
    default: return XF_CU_RSUM;
    }
}

/* Reduces x over the axes marked in `reduced` into dense y. */
static xf_status reduce_axes(xf_cu_ctx *c, const xf_node *n, const xf_tensor_view *x, const bool *reduced,
                             const xf_tensor_view *y, xf_error *err)
{
    int64_t strides[XF_MAX_DIMS];
    xf_rt_dense_strides(&x->shape, strides);
    xf_cu_index kept = {.n_ops = 1}, red = {.n_ops = 1};
    int64_t n_out = 1;
    for (int d = 0; d < x->shape.ndim; d++) {
        xf_cu_index *ix = reduced[d] ? &red : &kept;
        ix->dims[ix->ndim] = x->shape.dims[d];
        ix->stride[0][ix->ndim++] = strides[d];
        n_out *= reduced[d] ? 1 : x->shape.dims[d];
    }
    if (xf_rt_numel(y) != n_out)
        return xf_rt_bad_node(err, n, "output size does not match the reduced shape");
    xf_cu_index_coalesce(&kept);
    xf_cu_index_coalesce(&red);
    XF_CU_TRY(err, n, xf_cu_reduce(c->stream, reduce_code(n->op), &kept, &red, x->data, y->data));
    return XF_OK;
}

static xf_status reduce_run(xf_cu_ctx *c, const xf_graph *g, const xf_node *n, xf_cu_node *st,
                            const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err)
{
    const xf_attrs *a = &n->attrs;
    int rank = in[0].shape.ndim, n_axes = 0;
    int64_t axes[XF_MAX_DIMS];
    bool reduced[XF_MAX_DIMS] = {false};
    if (a->has_axes) {
        n_axes = a->n_axes;
        memcpy(axes, a->axes, sizeof(int64_t) * (size_t)n_axes);
    } else if (n->n_inputs > 1 && xf_rt_present(&in[1])) {
        xf_status s = xf_cu_read_ints(c, g, n, 1, &in[1], axes, XF_MAX_DIMS, &n_axes, err);
        if (s != XF_OK)
            return s;
    }
    for (int i = 0; i < n_axes; i++) {
        int d = xf_rt_axis(axes[i], rank);
        if (d < 0)
            return xf_rt_bad_node(err, n, "axis %lld out of range", (long long)axes[i]);
        reduced[d] = true;
    }
    if (n_axes == 0) {
        if (a->noop_with_empty_axes)
            return copy_run(c, g, n, st, in, out, err);
        for (int d = 0; d < rank; d++)
            reduced[d] = true;
    }
    return reduce_axes(c, n, &in[0], reduced, &out[0], err);
}

static bool reduce_accepts(const xf_graph *g, const xf_node *n, WHY)
{
    const xf_value *x = val(g, n, 0), *y = outval(g, n, 0);
    if (x->dtype != XF_DT_FLOAT || y->dtype != XF_DT_FLOAT)
        return xf_cu_refuse(why, why_len, "on %s", xf_dtype_name(x->dtype));
    return true;
}

const xf_cu_handler xf_cu_reduce_handler = {reduce_accepts, NULL, reduce_run};

/* GlobalAveragePool / GlobalMaxPool: a reduction over the spatial axes. */
static xf_status global_pool_run(xf_cu_ctx *c, const xf_graph *g, const xf_node *n, xf_cu_node *st,
                                 const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err)
{
    bool reduced[XF_MAX_DIMS] = {false};
    if (in[0].shape.ndim < 2)
        return xf_rt_bad_node(err, n, "input needs batch and channel dimensions");
    for (int d = 2; d < in[0].shape.ndim; d++)
        reduced[d] = true;
    return reduce_axes(c, n, &in[0], reduced, &out[0], err);
}

const xf_cu_handler xf_cu_global_pool_handler = {xf_cu_all_f32, NULL, global_pool_run};

/* ---------------------------------------------------------------- layer norm */

static xf_status layer_norm_run(xf_cu_ctx *c, const xf_graph *g, const xf_node *n, xf_cu_node *st,
                                const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err)
{
    const xf_tensor_view *x = &in[0];
    const xf_tensor_view *bias = n->n_inputs > 2 && xf_rt_present(&in[2]) ? &in[2] : NULL;
    const xf_tensor_view *mean = n->n_outputs > 1 && xf_rt_present(&out[1]) ? &out[1] : NULL;
    const xf_tensor_view *inv = n->n_outputs > 2 && xf_rt_present(&out[2]) ? &out[2] : NULL;
    int axis = xf_rt_axis(n->attrs.axis, x->shape.ndim);
    if (axis < 0)
        return xf_rt_bad_node(err, n, "axis %lld out of range", (long long)n->attrs.axis);
    xf_shape norm = xf_shape_make(x->shape.ndim - axis, x->shape.dims + axis);
    int64_t inner = xf_shape_numel(&norm), outer = inner ? xf_rt_numel(x) / inner : 0;
    if (!xf_rt_broadcastable(&in[1].shape, &norm) || (bias && !xf_rt_broadcastable(&bias->shape, &norm)))
        return xf_rt_bad_node(err, n, "scale or bias does not broadcast to the normalized shape");
    if ((mean && xf_rt_numel(mean) != outer) || (inv && xf_rt_numel(inv) != outer))
        return xf_rt_bad_node(err, n, "mean/inv_std_dev outputs have the wrong size");
    xf_cu_index ix;
    xf_cu_index_init(&ix, &norm);
    xf_cu_index_add_broadcast(&ix, &in[1].shape);
    xf_cu_index_add_broadcast(&ix, bias ? &bias->shape : &in[1].shape);
    xf_cu_index_coalesce(&ix);
    XF_CU_TRY(err, n, xf_cu_layer_norm(c->stream, outer, inner, &ix, x->data, in[1].data, bias ? bias->data : NULL,
                                        n->attrs.epsilon, out[0].data, mean ? mean->data : NULL,
                                        inv ? inv->data : NULL));
    return XF_OK;
}

const xf_cu_handler xf_cu_layer_norm_handler = {xf_cu_all_f32, NULL, layer_norm_run};
