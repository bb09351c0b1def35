/* cpu_ref movement and indexing ops: Trilu, Tile, DepthToSpace,
 * SpaceToDepth, EyeLike, ReverseSequence, OneHot, Compress and Unique.  Like
 * cpu_ref_movement.c they move raw elements of any fixed size, so one
 * piece of code serves every dtype. */
#include "xf_op_plans.h"
#include "xf_rt_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static char *elem(const xf_tensor_view *v, int64_t i, size_t es) { return (char *)v->data + i * (int64_t)es; }

static int64_t prod_dims(const xf_shape *s, int from, int to)
{
    int64_t p = 1;
    for (int d = from; d < to; d++)
        p *= s->dims[d];
    return p;
}

/* Trilu: the upper (lower) triangle of every matrix of the last two dims,
 * from diagonal k on: element (i, j) stays where j - i >= k (j - i <= k),
 * the others become zero. */
xf_status xf_ref_trilu(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err)
{
    const xf_shape *s = &in[0].shape;
    if (s->ndim < 2 || !xf_shape_equal(s, &out[0].shape))
        return xf_rt_bad_node(err, n, "the input is not at least 2-D, or the output's shape differs from it");
    int64_t k = 0;
    if (n->n_inputs > 1 && xf_rt_present(&in[1])) {
        if (xf_rt_numel(&in[1]) != 1)
            return xf_rt_bad_node(err, n, "k holds %lld values, not one", (long long)xf_rt_numel(&in[1]));
        k = xf_rt_load_i64(in[1].dtype, in[1].data, 0);
    }
    int64_t rows = s->dims[s->ndim - 2], cols = s->dims[s->ndim - 1], numel = xf_rt_numel(&out[0]);
    size_t es = xf_dtype_size(out[0].dtype);
    bool lower = n->attrs.trilu_lower;
    for (int64_t i = 0; i < numel; i++) {
        int64_t diagonal = i % cols - i / cols % rows;
        if (lower ? diagonal <= k : diagonal >= k)
            memcpy(elem(&out[0], i, es), elem(&in[0], i, es), es);
        else
            memset(elem(&out[0], i, es), 0, es);
    }
    return XF_OK;
}

/* Tile: output element (i_0, ..., i_r) is input element (i_0 mod d_0, ...). */
xf_status xf_ref_tile(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err)
{
    const xf_shape *xs = &in[0].shape, *ys = &out[0].shape;
    bool whole = ys->ndim == xs->ndim;
    for (int d = 0; d < xs->ndim && whole; d++)
        whole = xs->dims[d] ? ys->dims[d] % xs->dims[d] == 0 : ys->dims[d] == 0;
    if (!whole)
        return xf_rt_bad_node(err, n, "the output is not whole copies of the input along every dim");
    int64_t stride[XF_MAX_DIMS], coord[XF_MAX_DIMS] = {0}, numel = xf_rt_numel(&out[0]);
    xf_rt_dense_strides(xs, stride);
    /* each dimension repeated and longer than 1 read as two, (repeat,
     * index), the repeats of stride 0: a gather of strided runs */
    int64_t space[XF_MAX_DIMS], src_stride[XF_MAX_DIMS];
    int nd = 0;
    for (int d = 0; d < xs->ndim && nd >= 0; d++) {
        bool split = xs->dims[d] > 1 && ys->dims[d] > xs->dims[d];
        if (nd + split >= XF_MAX_DIMS) {
            nd = -1;
            break;
        }
        if (split) {
            space[nd] = ys->dims[d] / xs->dims[d];
            src_stride[nd++] = 0;
        }
        space[nd] = split ? xs->dims[d] : ys->dims[d];
        src_stride[nd++] = xs->dims[d] == 1 ? 0 : stride[d];
    }
    if (nd >= 0) {
        xf_rt_iter it;
        xf_shape sp = xf_shape_make(nd, space);
        xf_rt_iter_init(&it, &sp);
        xf_rt_iter_add(&it, src_stride, 0);
        xf_rt_gather_iter(&in[0], &out[0], &it);
        return XF_OK;
    }
    size_t es = xf_dtype_size(out[0].dtype);
    for (int64_t i = 0; i < numel; i++) {
        int64_t from = 0;
        for (int d = 0; d < xs->ndim; d++)
            from += coord[d] % xs->dims[d] * stride[d];
        memcpy(elem(&out[0], i, es), elem(&in[0], from, es), es);
        for (int d = ys->ndim - 1; d >= 0 && ++coord[d] == ys->dims[d]; d--)
            coord[d] = 0;
    }
    return XF_OK;
}

/* DepthToSpace and SpaceToDepth, as ONNX defines them: a reshape to 6-D,
 * a transpose and a reshape back, done as one walk over the output with
 * the input's strides.  DepthToSpace's output (n, c, h * b + y, w * b + x)
 * is input channel (y * b + x) * C' + c in DCR mode, c * b^2 + y * b + x in
 * CRD mode; SpaceToDepth's output channel (y * b + x) * C + c (DCR) or
 * c * b^2 + y * b + x (CRD, opset 28) is input (n, c, h * b + y, w * b + x). */
xf_status xf_ref_depth_space(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err)
{
    const xf_shape *xs = &in[0].shape;
    int64_t b = n->attrs.block_size;
    if (xs->ndim != 4 || b < 1 ||
        (n->op == XF_OP_DEPTH_TO_SPACE ? xs->dims[1] % (b * b) : xs->dims[2] % b || xs->dims[3] % b))
        return xf_rt_bad_node(err, n, "the input is not [N, C, H, W] with blocksize %lld dividing it", (long long)b);
    int64_t batch = xs->dims[0], ch = xs->dims[1], h = xs->dims[2], w = xs->dims[3];
    xf_shape space, want;
    int64_t stride[6];
    if (n->op == XF_OP_DEPTH_TO_SPACE) { /* the output as (n, c', h, y, w, x) */
        int64_t oc = ch / (b * b);
        bool crd = n->attrs.depth_crd;
        space = (xf_shape){6, {batch, oc, h, b, w, b}};
        want = (xf_shape){4, {batch, oc, h * b, w * b}};
        int64_t s[6] = {ch * h * w, crd ? b * b * h * w : h * w, w, crd ? b * h * w : b * oc * h * w, 1,
                        crd ? h * w : oc * h * w};
        memcpy(stride, s, sizeof s);
    } else { /* the output as (n, y, x, c, h', w'), in CRD mode (n, c, y, x, h', w') */
        bool crd = n->attrs.depth_crd;
        space = crd ? (xf_shape){6, {batch, ch, b, b, h / b, w / b}} : (xf_shape){6, {batch, b, b, ch, h / b, w / b}};
        want = (xf_shape){4, {batch, ch * b * b, h / b, w / b}};
        int64_t s[6] = {ch * h * w, crd ? h * w : w, crd ? w : 1, crd ? 1 : h * w, b * w, b};
        memcpy(stride, s, sizeof s);
    }
    if (!xf_shape_equal(&out[0].shape, &want))
        return xf_rt_bad_node(err, n, "the output's shape is not the one blocksize %lld gives", (long long)b);
    xf_rt_iter it;
    xf_rt_iter_init(&it, &space);
    xf_rt_iter_add(&it, stride, 0);
    xf_rt_gather_iter(&in[0], &out[0], &it);
    return XF_OK;
}

/* EyeLike: ones on diagonal k (element (i, i + k)), zeros elsewhere; the
 * input gives only the shape. */
xf_status xf_ref_eye_like(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err)
{
    const xf_shape *s = &out[0].shape;
    if (s->ndim != 2 || !xf_shape_equal(s, &in[0].shape))
        return xf_rt_bad_node(err, n, "the output is not 2-D or differs from the input's shape");
    size_t bytes = xf_rt_bytes(&out[0]);
    if (bytes)
        memset(out[0].data, 0, bytes);
    int64_t rows = s->dims[0], cols = s->dims[1], k = n->attrs.eye_k;
    for (int64_t i = 0; i < rows; i++) {
        int64_t j;
        if (!__builtin_add_overflow(i, k, &j) && j >= 0 && j < cols)
            xf_rt_store_i64(out[0].dtype, out[0].data, i * cols + j, 1);
    }
    return XF_OK;
}

/* ReverseSequence: for batch entry b, the first sequence_lens[b] steps
 * along the time axis in reverse order, the others as they are. */
xf_status xf_ref_reverse_sequence(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err)
{
    const xf_shape *s = &in[0].shape;
    int64_t batch_axis = n->attrs.axes[0], time_axis = n->attrs.axes[1];
    if (s->ndim < 2 || !xf_shape_equal(s, &out[0].shape) || batch_axis + time_axis != 1 || batch_axis < 0 ||
        time_axis < 0)
        return xf_rt_bad_node(err, n, "the input is not at least 2-D with batch and time axes 0 and 1");
    int64_t batch = s->dims[batch_axis], steps = s->dims[time_axis], second = s->dims[1];
    if (xf_rt_numel(&in[1]) != batch)
        return xf_rt_bad_node(err, n, "sequence_lens has %lld entries for %lld batch entries",
                              (long long)xf_rt_numel(&in[1]), (long long)batch);
    int64_t inner = 1;
    for (int d = 2; d < s->ndim; d++)
        inner *= s->dims[d];
    size_t es = xf_dtype_size(out[0].dtype), chunk = (size_t)inner * es;
    for (int64_t b = 0; b < batch; b++) {
        int64_t len = xf_rt_load_i64(in[1].dtype, in[1].data, b);
        if (len < 0 || len > steps)
            return xf_rt_bad_node(err, n, "sequence length %lld of batch entry %lld is not in [0, %lld]",
                                  (long long)len, (long long)b, (long long)steps);
        for (int64_t t = 0; t < steps && chunk; t++) {
            int64_t from = t < len ? len - 1 - t : t;
            int64_t to_at = batch_axis == 0 ? b * second + t : t * second + b;
            int64_t from_at = batch_axis == 0 ? b * second + from : from * second + b;
            memcpy(elem(&out[0], to_at * inner, es), elem(&in[0], from_at * inner, es), chunk);
        }
    }
    return XF_OK;
}

/* Index i of OneHot's indices as an int64 (non-integers truncated, as
 * ONNX's cast to int64), or -1 for one that names no class: NaN and
 * infinities, values beyond [-depth, depth), and before opset 11 negative
 * values; negative ones count from the end from opset 11. */
static int64_t one_hot_class(const xf_node *n, const xf_tensor_view *idx, int64_t i, int64_t depth)
{
    double v = xf_rt_is_integral(idx->dtype) ? 0 : xf_rt_load_f64(idx->dtype, idx->data, i);
    if (!isfinite(v))
        return -1;
    int64_t k = xf_rt_load_i64(idx->dtype, idx->data, i);
    if (k < 0 && !n->attrs.onehot_legacy && k >= -depth)
        k += depth;
    return k >= 0 && k < depth ? k : -1;
}

/* OneHot: on_value where the position along axis is the index's class,
 * off_value elsewhere; the output's dim at axis is depth. */
xf_status xf_ref_one_hot(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err)
{
    const xf_shape *is = &in[0].shape, *ys = &out[0].shape;
    int axis = xf_rt_axis(n->attrs.axis, ys->ndim);
    if (ys->ndim != is->ndim + 1 || axis < 0 || xf_rt_numel(&in[2]) != 2 || in[2].dtype != out[0].dtype)
        return xf_rt_bad_node(err, n, "the output is not the indices' shape with one more dim at axis %lld, or "
                                      "values is not two elements of the output's type",
                              (long long)n->attrs.axis);
    for (int d = 0; d < is->ndim; d++)
        if (is->dims[d] != ys->dims[d < axis ? d : d + 1])
            return xf_rt_bad_node(err, n, "the output's shape does not match the indices'");
    int64_t outer = prod_dims(ys, 0, axis), depth = ys->dims[axis], inner = prod_dims(ys, axis + 1, ys->ndim);
    size_t es = xf_dtype_size(out[0].dtype);
    for (int64_t o = 0; o < outer; o++)
        for (int64_t i = 0; i < inner; i++) {
            int64_t k = one_hot_class(n, &in[0], o * inner + i, depth);
            for (int64_t d = 0; d < depth; d++)
                memcpy(elem(&out[0], (o * depth + d) * inner + i, es), elem(&in[2], d == k, es), es);
        }
    return XF_OK;
}

/* Compress: the slices along axis (the elements of the flattened input
 * when the node has no axis) whose condition entry is true, in order. */
xf_status xf_ref_compress(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err)
{
    const xf_shape *xs = &in[0].shape;
    int axis = n->attrs.has_axis ? xf_rt_axis(n->attrs.axis, xs->ndim) : -1;
    if (n->attrs.has_axis && axis < 0)
        return xf_rt_bad_node(err, n, "axis %lld is out of range", (long long)n->attrs.axis);
    int64_t outer = axis < 0 ? 1 : prod_dims(xs, 0, axis), len = axis < 0 ? xf_rt_numel(&in[0]) : xs->dims[axis];
    int64_t inner = axis < 0 ? 1 : prod_dims(xs, axis + 1, xs->ndim), n_cond = xf_rt_numel(&in[1]), count = 0;
    for (int64_t j = 0; j < n_cond; j++) {
        bool selected = xf_rt_load_i64(in[1].dtype, in[1].data, j) != 0;
        if (selected && j >= len)
            return xf_rt_bad_node(err, n, "condition selects entry %lld, beyond the %lld the input has", (long long)j,
                                  (long long)len);
        count += selected;
    }
    if (xf_rt_numel(&out[0]) != outer * count * inner)
        return xf_rt_bad_node(err, n, "the output does not hold the %lld selected slices", (long long)count);
    size_t es = xf_dtype_size(out[0].dtype), chunk = (size_t)inner * es;
    char *dst = out[0].data;
    for (int64_t o = 0; o < outer && chunk; o++)
        for (int64_t j = 0; j < n_cond && j < len; j++)
            if (xf_rt_load_i64(in[1].dtype, in[1].data, j)) {
                memcpy(dst, elem(&in[0], (o * len + j) * inner, es), chunk);
                dst += chunk;
            }
    return XF_OK;
}

/* Unique: the unique slices along axis (elements when the node has none),
 * as core groups them (xf_unique), then indices, inverse_indices and
 * counts where the node has them. */
xf_status xf_ref_unique(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err)
{
    const xf_shape *xs = &in[0].shape;
    int axis = n->attrs.has_axis ? xf_rt_axis(n->attrs.axis, xs->ndim) : -1;
    if (n->attrs.has_axis && axis < 0)
        return xf_rt_bad_node(err, n, "axis %lld is out of range", (long long)n->attrs.axis);
    int64_t outer = axis < 0 ? 1 : prod_dims(xs, 0, axis), len = axis < 0 ? xf_rt_numel(&in[0]) : xs->dims[axis];
    int64_t inner = axis < 0 ? 1 : prod_dims(xs, axis + 1, xs->ndim);
    size_t es = xf_dtype_size(in[0].dtype);
    xf_tensor x = {.refcount = 1, .dtype = in[0].dtype, .shape = *xs, .data = in[0].data,
                   .nbytes = (size_t)xf_rt_numel(&in[0]) * es};
    int64_t *buf = malloc(sizeof *buf * (size_t)(len > 0 ? 3 * len : 1));
    if (!buf)
        return xf_error_set(err, XF_ERR_NOMEM, "out of memory in Unique");
    int64_t *first = buf, *inverse = buf + len, *counts = buf + 2 * len;
    int64_t count = xf_unique(&x, axis, !n->attrs.topk_unsorted, first, inverse, counts);
    xf_status st = count < 0 ? xf_error_set(err, XF_ERR_NOMEM, "out of memory in Unique") : XF_OK;
    if (st == XF_OK && xf_rt_numel(&out[0]) != outer * count * inner)
        st = xf_rt_bad_node(err, n, "Y does not hold the %lld unique slices", (long long)count);
    for (int64_t o = 0; st == XF_OK && o < outer; o++)
        for (int64_t u = 0; u < count && inner; u++)
            memcpy(elem(&out[0], (o * count + u) * inner, es), elem(&in[0], (o * len + first[u]) * inner, es),
                   (size_t)inner * es);
    const int64_t *lists[3] = {first, inverse, counts}, sizes[3] = {count, len, count};
    for (int k = 1; k < n->n_outputs && k < 4 && st == XF_OK; k++) {
        if (!xf_rt_present(&out[k]))
            continue;
        if (xf_rt_numel(&out[k]) != sizes[k - 1])
            st = xf_rt_bad_node(err, n, "output %d does not hold %lld entries", k, (long long)sizes[k - 1]);
        for (int64_t i = 0; st == XF_OK && i < sizes[k - 1]; i++)
            xf_rt_store_i64(out[k].dtype, out[k].data, i, lists[k - 1][i]);
    }
    free(buf);
    return st;
}
