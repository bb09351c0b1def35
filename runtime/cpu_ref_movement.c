/* cpu_ref data movement: ops that copy, rearrange or generate elements
 * without arithmetic.  They work on raw elements of any fixed size, so
 * every dtype is handled by the same code; TopK compares elements, and the
 * scatters' reductions leave the arithmetic to the elementwise kernels.
 * Pad and CenterCropPad: cpu_ref_pad.c. */
#include "xf_rt_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static char *elem(const xf_tensor_view *v, int64_t i, size_t es) { return (char *)v->data + i * (int64_t)es; }

#define COPY_STRIDED(T)                                                                                            \
    do {                                                                                                           \
        T *p = (T *)o;                                                                                             \
        const T *q = (const T *)src;                                                                               \
        for (int64_t k = 0; k < n; k++)                                                                            \
            p[k] = q[k * s];                                                                                       \
        return;                                                                                                    \
    } while (0)

/* n elements of size es to o from src, s elements apart (0: one repeated) */
static void copy_strided(char *o, const char *src, int64_t s, int64_t n, size_t es)
{
    if (s == 1) {
        memcpy(o, src, (size_t)n * es);
        return;
    }
    switch (es) {
    case 1: COPY_STRIDED(uint8_t);
    case 2: COPY_STRIDED(uint16_t);
    case 4: COPY_STRIDED(uint32_t);
    case 8: COPY_STRIDED(uint64_t);
    default:
        for (int64_t k = 0; k < n; k++)
            memcpy(o + k * (int64_t)es, src + k * s * (int64_t)es, es);
    }
}

#define COPY_ROWS(T)                                                                                               \
    do {                                                                                                           \
        T *p = (T *)o;                                                                                             \
        const T *q = (const T *)src;                                                                               \
        for (int64_t r = 0; r < rows; r++)                                                                         \
            for (int64_t k = 0; k < len; k++)                                                                      \
                p[r * len + k] = q[r * s + k];                                                                     \
        return;                                                                                                    \
    } while (0)

/* rows runs of len contiguous elements of size es (1, 2, 4 or 8) to o,
 * one after another, from src, the runs s elements apart. */
static void copy_rows(char *o, const char *src, int64_t rows, int64_t len, int64_t s, size_t es)
{
    switch (es) {
    case 1: COPY_ROWS(uint8_t);
    case 2: COPY_ROWS(uint16_t);
    case 4: COPY_ROWS(uint32_t);
    default: COPY_ROWS(uint64_t);
    }
}

/* Runs shorter than this are copied a row of runs at a time (YOLO's boxes,
 * 4 of every 85 values; an STFT's 3 of 4 frames), not one call each. */
enum { GATHER_SHORT_RUN = 16 };

/* The output is dense over the iteration space, so whatever dimensions the
 * input lets xf_rt_iter_runs merge, the output's merge too. */
void xf_rt_gather_iter(const xf_tensor_view *from, const xf_tensor_view *to, xf_rt_iter *it)
{
    size_t es = xf_dtype_size(to->dtype);
    int64_t numel = xf_rt_numel(to), step[XF_RT_MAX_OPERANDS];
    int64_t len = xf_rt_iter_runs(it, step);
    int inner = it->ndim - 1;
    if (len && len < GATHER_SHORT_RUN && step[0] == 1 && inner >= 0 && (es == 1 || es == 2 || es == 4 || es == 8)) {
        int64_t rows = it->dims[inner], s = it->stride[0][inner];
        for (int64_t i = 0; i < numel; i += rows * len) {
            copy_rows(elem(to, i, es), elem(from, it->off[0], es), rows, len, s, es);
            /* to the row's last run, then past it */
            it->off[0] += (rows - 1) * s;
            it->coord[inner] = rows - 1;
            xf_rt_iter_next(it);
        }
        return;
    }
    for (int64_t i = 0; len && i < numel; i += len, xf_rt_iter_next(it))
        copy_strided(elem(to, i, es), elem(from, it->off[0], es), step[0], len, es);
}

/* Reshape, Flatten, Squeeze, Unsqueeze, Identity, BitCast: the bytes are unchanged. */
xf_status xf_ref_copy(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out,
                      xf_error *err)
{
    size_t bytes = xf_rt_bytes(&out[0]);
    if (bytes != xf_rt_bytes(&in[0]))
        return xf_rt_bad_node(err, n, "input has %zu bytes, output %zu", xf_rt_bytes(&in[0]), bytes);
    if (bytes && out[0].data != in[0].data)
        memcpy(out[0].data, in[0].data, bytes);
    return XF_OK;
}

/* Dropout that does not drop (inference, or a ratio of 0): the identity
 * with an all-true mask.  The training draw is cpu_ref_random.c's. */
xf_status xf_ref_dropout(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out,
                         xf_error *err)
{
    xf_status st = xf_ref_copy(n, in, out, err);
    if (st == XF_OK && n->n_outputs > 1 && xf_rt_present(&out[1]))
        for (int64_t i = 0; i < xf_rt_numel(&out[1]); i++)
            xf_rt_store_i64(out[1].dtype, out[1].data, i, 1);
    return st;
}

static int64_t prod_dims(const xf_shape *s, int from, int to)
{
    int64_t p = 1;
    for (int d = from; d < to; d++)
        p *= s->dims[d];
    return p;
}

xf_status xf_ref_concat(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out,
                        xf_error *err)
{
    const xf_shape *ys = &out[0].shape;
    int axis = xf_rt_axis(n->attrs.axis, ys->ndim);
    if (axis < 0)
        return xf_rt_bad_node(err, n, "axis %lld out of range", (long long)n->attrs.axis);
    int64_t total = 0;
    for (int k = 0; k < n->n_inputs; k++) {
        if (!xf_rt_same_but_axis(&in[k].shape, ys, axis))
            return xf_rt_bad_node(err, n, "input %d does not match the output outside the axis", k);
        total += in[k].shape.dims[axis];
    }
    if (total != ys->dims[axis])
        return xf_rt_bad_node(err, n, "inputs add up to %lld along the axis, output has %lld",
                              (long long)total, (long long)ys->dims[axis]);
    size_t es = xf_dtype_size(out[0].dtype);
    int64_t outer = prod_dims(ys, 0, axis), inner = prod_dims(ys, axis + 1, ys->ndim);
    char *dst = out[0].data;
    for (int64_t o = 0; o < outer; o++)
        for (int k = 0; k < n->n_inputs; k++) {
            size_t chunk = (size_t)(in[k].shape.dims[axis] * inner) * es;
            if (chunk) {
                memcpy(dst, (const char *)in[k].data + (size_t)o * chunk, chunk);
                dst += chunk;
            }
        }
    return XF_OK;
}

/* The outputs' extents along the axis say where each piece starts, so the
 * split sizes (input, attribute, num_outputs or even) need no re-deriving. */
xf_status xf_ref_split(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out,
                       xf_error *err)
{
    const xf_shape *xs = &in[0].shape;
    int axis = xf_rt_axis(n->attrs.axis, xs->ndim);
    if (axis < 0)
        return xf_rt_bad_node(err, n, "axis %lld out of range", (long long)n->attrs.axis);
    int64_t total = 0;
    for (int k = 0; k < n->n_outputs; k++) {
        if (!xf_rt_present(&out[k]) || !xf_rt_same_but_axis(&out[k].shape, xs, axis))
            return xf_rt_bad_node(err, n, "output %d does not match the input outside the axis", k);
        total += out[k].shape.dims[axis];
    }
    if (total != xs->dims[axis])
        return xf_rt_bad_node(err, n, "outputs add up to %lld along the axis, input has %lld",
                              (long long)total, (long long)xs->dims[axis]);
    size_t es = xf_dtype_size(in[0].dtype);
    int64_t outer = prod_dims(xs, 0, axis), inner = prod_dims(xs, axis + 1, xs->ndim);
    const char *src = in[0].data;
    for (int64_t o = 0; o < outer; o++)
        for (int k = 0; k < n->n_outputs; k++) {
            size_t chunk = (size_t)(out[k].shape.dims[axis] * inner) * es;
            if (chunk) {
                memcpy((char *)out[k].data + (size_t)o * chunk, src, chunk);
                src += chunk;
            }
        }
    return XF_OK;
}

xf_status xf_ref_transpose(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out,
                           xf_error *err)
{
    const xf_shape *xs = &in[0].shape, *ys = &out[0].shape;
    int rank = xs->ndim;
    int64_t perm[XF_MAX_DIMS], in_strides[XF_MAX_DIMS], strides[XF_MAX_DIMS];
    bool used[XF_MAX_DIMS] = {false};
    if (ys->ndim != rank || (n->attrs.n_perm && n->attrs.n_perm != rank))
        return xf_rt_bad_node(err, n, "perm does not match the rank %d", rank);
    xf_rt_dense_strides(xs, in_strides);
    for (int d = 0; d < rank; d++) {
        perm[d] = n->attrs.n_perm ? n->attrs.perm[d] : rank - 1 - d;
        if (perm[d] < 0 || perm[d] >= rank || used[perm[d]] || ys->dims[d] != xs->dims[perm[d]])
            return xf_rt_bad_node(err, n, "perm is not a permutation matching the output shape");
        used[perm[d]] = true;
        strides[d] = in_strides[perm[d]];
    }
    xf_rt_iter it;
    xf_rt_iter_init(&it, ys);
    xf_rt_iter_add(&it, strides, 0);
    xf_rt_gather_iter(&in[0], &out[0], &it);
    return XF_OK;
}

/* Gather along axis; negative indices count from the end. */
/* Gather of single bytes by int32 indices (a table lookup, as the cpu
 * backend runs a QDQ activation function): y[o][j] = x[o][idx[j]]. */
static xf_status gather_bytes(const xf_node *n, const uint8_t *x, int64_t len, const int32_t *idx, int64_t n_idx,
                              int64_t outer, uint8_t *y, xf_error *err)
{
    for (int64_t o = 0; o < outer; o++, x += len, y += n_idx)
        for (int64_t j = 0; j < n_idx; j++) {
            int64_t k = idx[j];
            if (k < -len || k >= len)
                return xf_rt_bad_node(err, n, "index %lld out of range for axis of size %lld", (long long)k,
                                      (long long)len);
            y[j] = x[k < 0 ? k + len : k];
        }
    return XF_OK;
}

#define GATHER_ELEMENTS(T)                                                                                         \
    do {                                                                                                           \
        for (int64_t j = 0; j < n_idx; j++)                                                                        \
            ((T *)dst)[j] = ((const T *)src)[at[j]];                                                               \
        return;                                                                                                    \
    } while (0)

enum { GATHER_CHUNK = 1024 };

/* One outer row of Gather: the inner runs (inner elements of size es) at
 * the element offsets at[0 .. n_idx) of src, one after another into dst;
 * single elements (a gather along the last axis) copied by type. */
static void gather_row(char *dst, const char *src, const int64_t *at, int64_t n_idx, int64_t inner, size_t es)
{
    if (inner == 1)
        switch (es) {
        case 1: GATHER_ELEMENTS(uint8_t);
        case 2: GATHER_ELEMENTS(uint16_t);
        case 4: GATHER_ELEMENTS(uint32_t);
        case 8: GATHER_ELEMENTS(uint64_t);
        default: break;
        }
    size_t chunk = (size_t)inner * es;
    for (int64_t j = 0; j < n_idx; j++, dst += chunk)
        memcpy(dst, src + (size_t)at[j] * es, chunk);
}

xf_status xf_ref_gather(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out,
                        xf_error *err)
{
    const xf_tensor_view *data = &in[0], *idx = &in[1];
    int rank = data->shape.ndim;
    int axis = xf_rt_axis(n->attrs.axis, rank);
    if (axis < 0)
        return xf_rt_bad_node(err, n, "axis %lld out of range", (long long)n->attrs.axis);
    int64_t outer = prod_dims(&data->shape, 0, axis), len = data->shape.dims[axis];
    int64_t inner = prod_dims(&data->shape, axis + 1, rank), n_idx = xf_rt_numel(idx);
    if (xf_rt_numel(&out[0]) != outer * n_idx * inner)
        return xf_rt_bad_node(err, n, "output size does not match data and indices");
    size_t es = xf_dtype_size(data->dtype), chunk = (size_t)inner * es;
    if (inner == 1 && es == 1 && idx->dtype == XF_DT_INT32 && outer * n_idx > 0)
        return gather_bytes(n, data->data, len, idx->data, n_idx, outer, out[0].data, err);
    if (!chunk || outer * n_idx == 0) /* an empty output may have no buffer at all */
        return XF_OK;
    /* the indices read and checked GATHER_CHUNK at a time, once for every
     * outer row */
    int64_t at[GATHER_CHUNK];
    for (int64_t j0 = 0; j0 < n_idx; j0 += GATHER_CHUNK) {
        int64_t count = n_idx - j0 < GATHER_CHUNK ? n_idx - j0 : GATHER_CHUNK;
        for (int64_t j = 0; j < count; j++) {
            int64_t k = xf_rt_load_i64(idx->dtype, idx->data, j0 + j);
            if (k < -len || k >= len)
                return xf_rt_bad_node(err, n, "index %lld out of range for axis of size %lld", (long long)k,
                                      (long long)len);
            at[j] = (k < 0 ? k + len : k) * inner;
        }
        for (int64_t o = 0; o < outer; o++)
            gather_row((char *)out[0].data + (size_t)((o * n_idx + j0) * inner) * es,
                       (const char *)data->data + (size_t)(o * len * inner) * es, at, count, inner, es);
    }
    return XF_OK;
}

/* Indices' elements taken at once by GatherElements and ScatterElements. */
#define ELEMENT_CHUNK 4096

/* The data element that each element i of indices (of the data's rank)
 * names: i's coordinates with the one on the axis replaced by indices[i]
 * (negative from the end); for elements [start, start + count), into
 * offs.  Every dim of indices but the axis's must be within the data's. */
static xf_status element_offsets(const xf_node *n, const xf_tensor_view *data, const xf_tensor_view *idx, int axis,
                                 int64_t start, int64_t count, int64_t *offs, xf_error *err)
{
    int rank = data->shape.ndim;
    int64_t len = data->shape.dims[axis], stride[XF_MAX_DIMS], coord[XF_MAX_DIMS], base = 0, rest = start;
    xf_rt_dense_strides(&data->shape, stride);
    for (int d = rank - 1; d >= 0; d--) {
        if (d != axis && idx->shape.dims[d] > data->shape.dims[d])
            return xf_rt_bad_node(err, n, "the indices' shape reaches beyond the data");
        coord[d] = rest % idx->shape.dims[d];
        rest /= idx->shape.dims[d];
        base += d == axis ? 0 : coord[d] * stride[d];
    }
    for (int64_t i = 0; i < count; i++) {
        int64_t k = idx->dtype == XF_DT_INT64 ? ((const int64_t *)idx->data)[start + i]
                                              : xf_rt_load_i64(idx->dtype, idx->data, start + i);
        if (k < -len || k >= len)
            return xf_rt_bad_node(err, n, "index %lld out of range for axis of size %lld", (long long)k,
                                  (long long)len);
        offs[i] = base + (k + (k < 0 ? len : 0)) * stride[axis];
        for (int d = rank - 1; d >= 0; d--) { /* the next element's coordinates */
            base += d == axis ? 0 : stride[d];
            if (++coord[d] < idx->shape.dims[d])
                break;
            base -= d == axis ? 0 : coord[d] * stride[d];
            coord[d] = 0;
        }
    }
    return XF_OK;
}

/* out[i] = data[i with its axis coordinate replaced by indices[i]]. */
xf_status xf_ref_gather_elements(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out,
                                 xf_error *err)
{
    const xf_tensor_view *data = &in[0], *idx = &in[1];
    int axis = xf_rt_axis(n->attrs.axis, data->shape.ndim);
    if (axis < 0 || idx->shape.ndim != data->shape.ndim || !xf_shape_equal(&idx->shape, &out[0].shape))
        return xf_rt_bad_node(err, n, "axis, indices and output do not fit the data");
    int64_t offs[ELEMENT_CHUNK], numel = xf_rt_numel(idx);
    size_t es = xf_dtype_size(data->dtype);
    for (int64_t at = 0; at < numel; at += ELEMENT_CHUNK) {
        int64_t count = numel - at < ELEMENT_CHUNK ? numel - at : ELEMENT_CHUNK;
        xf_status st = element_offsets(n, data, idx, axis, at, count, offs, err);
        if (st != XF_OK)
            return st;
        for (int64_t i = 0; i < count; i++)
            memcpy(elem(&out[0], at + i, es), elem(data, offs[i], es), es);
    }
    return XF_OK;
}

/* Offset of the slice that k coordinates at coords (negative ones from the
 * end) pick from dims; -1 (with err set) when one is out of range. */
static int64_t nd_offset(const xf_node *n, const xf_tensor_view *idx, int64_t at, int64_t k, const int64_t *dims,
                         xf_error *err)
{
    int64_t off = 0;
    for (int64_t d = 0; d < k; d++) {
        int64_t c = xf_rt_load_i64(idx->dtype, idx->data, at + d), dim = dims[d];
        if (c < -dim || c >= dim) {
            xf_rt_bad_node(err, n, "index %lld out of range for axis of size %lld", (long long)c, (long long)dim);
            return -1;
        }
        off = off * dim + (c < 0 ? c + dim : c);
    }
    return off;
}

/* Scans rows of `inner` elements of type T for nonzeros (the test a
 * `!= 0` of the element, as for a value loaded as double), writing each
 * one's coordinates: the row's outer coordinates and its column. */
#define NZ_SCAN(T)                                                                                                   \
    do {                                                                                                             \
        const T *p = in[0].data;                                                                                     \
        for (int64_t r = 0; r < rows; r++, p += inner) {                                                             \
            for (int64_t j = 0; j < inner; j++) {                                                                    \
                if (!(p[j] != 0))                                                                                    \
                    continue;                                                                                        \
                if (k >= count)                                                                                      \
                    return xf_rt_bad_node(err, n, "has more than the %lld nonzero elements its output shape holds",  \
                                          (long long)count);                                                         \
                for (int d = 0; d + 1 < nd; d++)                                                                     \
                    y[d * count + k] = coord[d];                                                                     \
                y[(nd - 1) * count + k++] = j;                                                                       \
            }                                                                                                        \
            for (int d = nd - 2; d >= 0 && ++coord[d] == s->dims[d]; d--)                                            \
                coord[d] = 0;                                                                                        \
        }                                                                                                            \
    } while (0)

/* The coordinates of every nonzero element, in row-major order: column k
 * of the [rank, count] output holds the k-th one's.  A scalar's is a
 * [0, count] output: 1 or 0 columns. */
xf_status xf_ref_non_zero(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err)
{
    const xf_shape *s = &in[0].shape;
    int nd = s->ndim;
    int64_t numel = xf_shape_numel(s), count = out[0].shape.ndim == 2 ? out[0].shape.dims[1] : -1, k = 0;
    int64_t inner = nd > 0 ? s->dims[nd - 1] : 1, rows = inner > 0 ? numel / inner : 0;
    int64_t *y = out[0].data, coord[XF_MAX_DIMS] = {0};
    switch (nd > 0 ? in[0].dtype : XF_DT_UNDEFINED) { /* a scalar's coordinates are none */
    case XF_DT_BOOL:
    case XF_DT_UINT8:
    case XF_DT_INT8: NZ_SCAN(uint8_t); break;
    case XF_DT_FLOAT: NZ_SCAN(float); break;
    case XF_DT_INT64: NZ_SCAN(int64_t); break;
    case XF_DT_INT32: NZ_SCAN(int32_t); break;
    default:
        for (int64_t i = 0; i < numel; i++) {
            if (xf_rt_load_f64(in[0].dtype, in[0].data, i) != 0) {
                if (k >= count)
                    return xf_rt_bad_node(err, n, "has more than the %lld nonzero elements its output shape holds",
                                          (long long)count);
                for (int d = 0; d < nd; d++)
                    y[d * count + k] = coord[d];
                k++;
            }
            for (int d = nd - 1; d >= 0 && ++coord[d] == s->dims[d]; d--)
                coord[d] = 0;
        }
    }
    if (k != count)
        return xf_rt_bad_node(err, n, "has %lld nonzero elements, not the %lld its output shape holds", (long long)k,
                              (long long)count);
    return XF_OK;
}
#undef NZ_SCAN

/* GatherND of single elements of 4 or 8 bytes by int64 indices (the
 * values NonZero finds): the same checks and result as the general loop,
 * without a call per index or per element. */
static xf_status gather_elements_nd(const xf_node *n, const xf_tensor_view *data, const xf_tensor_view *idx, int b,
                                    int64_t k, int64_t batches, int64_t rows, int64_t batch_len, char *dst,
                                    xf_error *err)
{
    const int64_t *ix = idx->data, *dims = data->shape.dims + b;
    size_t es = xf_dtype_size(data->dtype);
    for (int64_t bi = 0; bi < batches; bi++)
        for (int64_t j = 0; j < rows; j++, ix += k) {
            int64_t off = 0;
            for (int64_t d = 0; d < k; d++) {
                int64_t c = ix[d], dim = dims[d];
                if (c < -dim || c >= dim)
                    return xf_rt_bad_node(err, n, "index %lld out of range for axis of size %lld", (long long)c,
                                          (long long)dim);
                off = off * dim + (c < 0 ? c + dim : c);
            }
            size_t at = (size_t)(bi * batch_len + off);
            if (es == 4)
                ((uint32_t *)dst)[bi * rows + j] = ((const uint32_t *)data->data)[at];
            else
                ((uint64_t *)dst)[bi * rows + j] = ((const uint64_t *)data->data)[at];
        }
    return XF_OK;
}

/* For each batch (the first batch_dims dims) and each row of k indices,
 * the slice of the batch's data they pick. */
xf_status xf_ref_gather_nd(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err)
{
    const xf_tensor_view *data = &in[0], *idx = &in[1];
    int b = n->attrs.batch_dims, rank = data->shape.ndim;
    int64_t k = idx->shape.ndim > 0 ? idx->shape.dims[idx->shape.ndim - 1] : 0;
    if (b < 0 || k < 1 || b + k > rank || idx->shape.ndim < b + 1)
        return xf_rt_bad_node(err, n, "indices do not fit the data");
    int64_t batches = prod_dims(&data->shape, 0, b), slice = prod_dims(&data->shape, b + (int)k, rank);
    int64_t batch_len = prod_dims(&data->shape, b, rank), rows = batches ? xf_rt_numel(idx) / k / batches : 0;
    if (xf_rt_numel(&out[0]) != batches * rows * slice)
        return xf_rt_bad_node(err, n, "output size does not match data and indices");
    size_t es = xf_dtype_size(data->dtype);
    char *dst = out[0].data;
    if (idx->dtype == XF_DT_INT64 && slice == 1 && (es == 4 || es == 8)) /* one element per row of indices */
        return gather_elements_nd(n, data, idx, b, k, batches, rows, batch_len, dst, err);
    for (int64_t bi = 0; bi < batches; bi++)
        for (int64_t j = 0; j < rows; j++) {
            int64_t off = nd_offset(n, idx, (bi * rows + j) * k, k, data->shape.dims + b, err);
            if (off < 0)
                return XF_ERR_INVALID;
            if (!slice) /* an empty output may have no buffer at all */
                continue;
            memcpy(dst, (const char *)data->data + (size_t)(bi * batch_len + off * slice) * es, (size_t)slice * es);
            dst += (size_t)slice * es;
        }
    return XF_OK;
}

/* TopK's sort key: an element's value (in double, and exactly for integer
 * types) and its index along the axis. */
typedef struct topk_key {
    double f;
    int64_t i, idx;
} topk_key;

/* The order of values; NaN above every number (numpy's sort order). */
static int value_order(const topk_key *a, const topk_key *b)
{
    bool na = isnan(a->f), nb = isnan(b->f);
    if (na != nb)
        return na ? 1 : -1;
    if (!na && a->f != b->f)
        return a->f < b->f ? -1 : 1;
    return (a->i > b->i) - (a->i < b->i);
}

/* Equal values keep the order of their indices, in either direction. */
static int by_index(const topk_key *a, const topk_key *b) { return (a->idx > b->idx) - (a->idx < b->idx); }
static int smallest_first(const void *a, const void *b)
{
    int o = value_order(a, b);
    return o ? o : by_index(a, b);
}
static int largest_first(const void *a, const void *b)
{
    int o = value_order(b, a);
    return o ? o : by_index(a, b);
}

typedef int (*topk_order)(const void *, const void *);

/* Heap entry i moved down to its place in keys[0..k), a heap whose first
 * entry is the one that comes last in `order` (the first to drop). */
static void topk_sift(topk_key *keys, int64_t k, int64_t i, topk_order order)
{
    for (;;) {
        int64_t l = 2 * i + 1, r = l + 1, last = i;
        if (l < k && order(&keys[l], &keys[last]) > 0)
            last = l;
        if (r < k && order(&keys[r], &keys[last]) > 0)
            last = r;
        if (last == i)
            return;
        topk_key t = keys[i];
        keys[i] = keys[last];
        keys[last] = t;
        i = last;
    }
}

/* The first k of keys[0..len) in `order` (a total order: ties go by index),
 * sorted, in keys[0..k).  Fewer than a quarter of them are kept in a heap
 * as the rest go by, which costs about len comparisons against the heap's
 * last (a detector's 300 best of 24,000 scores: 6 ms by sorting them all);
 * otherwise all are sorted.  Either way the same k come out in the same order. */
static bool topk_heaped(int64_t len, int64_t k) { return k > 0 && k < len / 4; }

/* key offered to the heap keys[0..k): it replaces the heap's last when it
 * comes before it. */
static inline void topk_offer(topk_key *keys, int64_t k, const topk_key *key, topk_order order)
{
    /* a number strictly beyond the heap's last number cannot enter: no call */
    double f = key->f, last = keys[0].f;
    if (!isnan(f) && !isnan(last) && (order == largest_first ? f < last : f > last))
        return;
    if (order(key, &keys[0]) < 0) {
        keys[0] = *key;
        topk_sift(keys, k, 0, order);
    }
}

static void topk_select(topk_key *keys, int64_t len, int64_t k, topk_order order)
{
    if (topk_heaped(len, k)) {
        for (int64_t i = k / 2 - 1; i >= 0; i--)
            topk_sift(keys, k, i, order);
        for (int64_t j = k; j < len; j++)
            topk_offer(keys, k, &keys[j], order);
        len = k;
    }
    qsort(keys, (size_t)len, sizeof *keys, order);
}

/* topk_select of floats p[0], p[stride], ...: the keys made for the first
 * k and for those that enter the heap only (RetinaNet's 1000 best of 1.3 M
 * scores: 31 MB of keys not written and read back). */
static void topk_select_floats(const float *p, int64_t stride, topk_key *keys, int64_t len, int64_t k,
                               topk_order order)
{
    for (int64_t j = 0; j < k; j++)
        keys[j] = (topk_key){.f = p[j * stride], .i = 0, .idx = j};
    for (int64_t i = k / 2 - 1; i >= 0; i--)
        topk_sift(keys, k, i, order);
    for (int64_t j = k; j < len; j++) {
        topk_key key = {.f = p[j * stride], .i = 0, .idx = j};
        topk_offer(keys, k, &key, order);
    }
    qsort(keys, (size_t)k, sizeof *keys, order);
}

/* TopK: along the axis, the K largest (or smallest) elements, sorted, and
 * their indices; of equal elements the one with the lower index comes first. */
xf_status xf_ref_top_k(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err)
{
    const xf_tensor_view *x = &in[0];
    int rank = x->shape.ndim, axis = xf_rt_axis(n->attrs.axis, rank);
    if (axis < 0 || xf_rt_numel(&in[1]) != 1)
        return xf_rt_bad_node(err, n, "axis %lld or K (%lld values) does not fit the input", (long long)n->attrs.axis,
                              (long long)xf_rt_numel(&in[1]));
    int64_t k = xf_rt_load_i64(in[1].dtype, in[1].data, 0), len = x->shape.dims[axis];
    if (k < 0 || k > len)
        return xf_rt_bad_node(err, n, "K = %lld is out of range for an axis of size %lld", (long long)k,
                              (long long)len);
    const xf_tensor_view *vals = &out[0], *idxs = n->n_outputs > 1 && xf_rt_present(&out[1]) ? &out[1] : NULL;
    xf_shape want = x->shape;
    want.dims[axis] = k;
    if (!xf_shape_equal(&vals->shape, &want) || (idxs && !xf_shape_equal(&idxs->shape, &want)))
        return xf_rt_bad_node(err, n, "outputs do not hold K elements along the axis");
    topk_key *keys = malloc(sizeof *keys * (size_t)(len > 0 ? len : 1));
    if (!keys)
        return xf_error_set(err, XF_ERR_NOMEM, "out of memory in TopK");
    bool integral = xf_rt_is_integral(x->dtype);
    size_t es = xf_dtype_size(x->dtype);
    int64_t outer = prod_dims(&x->shape, 0, axis), inner = prod_dims(&x->shape, axis + 1, rank);
    for (int64_t o = 0; o < outer && k > 0; o++) /* k 0 (so an empty axis): empty outputs */
        for (int64_t s = 0; s < inner; s++) {
            int64_t from = o * len * inner + s, to = o * k * inner + s;
            topk_order order = n->attrs.topk_smallest ? smallest_first : largest_first;
            const float *p = (const float *)x->data + from;
            if (x->dtype == XF_DT_FLOAT && topk_heaped(len, k)) { /* the common case without a key per element */
                topk_select_floats(p, inner, keys, len, k, order);
            } else if (x->dtype == XF_DT_FLOAT) {
                for (int64_t j = 0; j < len; j++)
                    keys[j] = (topk_key){.f = p[j * inner], .i = 0, .idx = j};
                topk_select(keys, len, k, order);
            } else {
                for (int64_t j = 0; j < len; j++) {
                    keys[j].i = integral ? xf_rt_load_i64(x->dtype, x->data, from + j * inner) : 0;
                    keys[j].f = integral ? (double)keys[j].i : xf_rt_load_f64(x->dtype, x->data, from + j * inner);
                    keys[j].idx = j;
                }
                topk_select(keys, len, k, order);
            }
            for (int64_t j = 0; j < k; j++) {
                memcpy(elem(vals, to + j * inner, es), elem(x, from + keys[j].idx * inner, es), es);
                if (idxs)
                    xf_rt_store_i64(idxs->dtype, idxs->data, to + j * inner, keys[j].idx);
            }
        }
    free(keys);
    return XF_OK;
}

/* What ScatterElements and ScatterND start with: updates of the data's
 * dtype, a reduction that applies to it, and out = data. */
static xf_status scatter_start(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err)
{
    xf_reduction r = (xf_reduction)n->attrs.reduction;
    if ((unsigned)r > XF_REDUCE_MIN || in[2].dtype != in[0].dtype)
        return xf_rt_bad_node(err, n, "reduction %d or updates of type %s do not fit data of type %s", (int)r,
                              xf_dtype_name(in[2].dtype), xf_dtype_name(in[0].dtype));
    if (r != XF_REDUCE_NONE && !(XF_DTM(in[0].dtype) & (XF_DTM_NUMERIC | XF_DTM(XF_DT_BOOL))))
        return xf_rt_unsupported(err, &xf_backend_cpu_ref, n, "with a reduction on %s", xf_dtype_name(in[0].dtype));
    return xf_ref_copy(n, in, out, err);
}

/* out[to] = updates[from], or combined with it by the reduction. */
static void scatter_one(xf_reduction r, const xf_tensor_view *out, int64_t to, const xf_tensor_view *upd, int64_t from)
{
    size_t es = xf_dtype_size(out->dtype);
    if (r == XF_REDUCE_NONE)
        memcpy(elem(out, to, es), elem(upd, from, es), es);
    else
        xf_rt_reduce_into(r, out, to, upd, from);
}

/* out = data, then each update lands on the element its index names (see
 * element_offsets); of two updates to one element without a reduction the
 * later wins, as ONNX leaves it unspecified. */
xf_status xf_ref_scatter_elements(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out,
                                  xf_error *err)
{
    const xf_tensor_view *data = &in[0], *idx = &in[1], *upd = &in[2];
    int axis = xf_rt_axis(n->attrs.axis, data->shape.ndim);
    if (axis < 0 || idx->shape.ndim != data->shape.ndim || !xf_shape_equal(&idx->shape, &upd->shape))
        return xf_rt_bad_node(err, n, "axis, indices and updates do not fit the data");
    xf_reduction r = (xf_reduction)n->attrs.reduction;
    int64_t offs[ELEMENT_CHUNK], numel = xf_rt_numel(upd);
    size_t es = xf_dtype_size(data->dtype);
    xf_status st = scatter_start(n, in, out, err);
    for (int64_t at = 0; at < numel && st == XF_OK; at += ELEMENT_CHUNK) {
        int64_t count = numel - at < ELEMENT_CHUNK ? numel - at : ELEMENT_CHUNK;
        st = element_offsets(n, data, idx, axis, at, count, offs, err);
        if (st == XF_OK && r == XF_REDUCE_NONE && es == 4)
            for (int64_t i = 0; i < count; i++)
                ((uint32_t *)out[0].data)[offs[i]] = ((const uint32_t *)upd->data)[at + i];
        else
            for (int64_t i = 0; st == XF_OK && i < count; i++)
                scatter_one(r, &out[0], offs[i], upd, at + i);
    }
    return st;
}

/* out = data, then each slice indices[j] (of k coordinates) replaced by
 * updates[j] (the later of two updates to one slice wins, as ONNX leaves
 * it unspecified) or combined with it by the reduction. */
xf_status xf_ref_scatter_nd(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err)
{
    const xf_tensor_view *data = &in[0], *idx = &in[1], *upd = &in[2];
    int rank = data->shape.ndim;
    int64_t k = idx->shape.ndim > 0 ? idx->shape.dims[idx->shape.ndim - 1] : 0;
    if (k < 1 || k > rank || !xf_shape_equal(&data->shape, &out[0].shape))
        return xf_rt_bad_node(err, n, "indices do not fit the data");
    int64_t slice = prod_dims(&data->shape, (int)k, rank), n_upd = xf_rt_numel(idx) / k;
    if (xf_rt_numel(upd) != n_upd * slice)
        return xf_rt_bad_node(err, n, "updates do not fit indices and data");
    xf_status st = scatter_start(n, in, out, err);
    for (int64_t j = 0; j < n_upd && st == XF_OK; j++) {
        int64_t off = nd_offset(n, idx, j * k, k, data->shape.dims, err);
        if (off < 0)
            return XF_ERR_INVALID;
        for (int64_t e = 0; e < slice; e++)
            scatter_one((xf_reduction)n->attrs.reduction, &out[0], off * slice + e, upd, j * slice + e);
    }
    return st;
}

/* TensorScatter: out = past_cache, then for every index before axis the
 * update's len rows along axis written from row w on, w the write index of
 * that index's batch entry (0 without write_indices); in circular mode row
 * (w + s) mod rows, else w + s, which must stay inside the axis. */
xf_status xf_ref_tensor_scatter(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out,
                                xf_error *err)
{
    const xf_tensor_view *past = &in[0], *upd = &in[1];
    const xf_tensor_view *wi = n->n_inputs > 2 && xf_rt_present(&in[2]) ? &in[2] : NULL;
    const xf_shape *ps = &past->shape;
    int rank = ps->ndim, axis = xf_rt_axis(n->attrs.axis, rank);
    bool fits = axis > 0 && upd->shape.ndim == rank && upd->dtype == past->dtype &&
                xf_shape_equal(ps, &out[0].shape);
    for (int d = 0; fits && d < rank; d++)
        fits = d == axis ? upd->shape.dims[d] <= ps->dims[d] : upd->shape.dims[d] == ps->dims[d];
    if (!fits || (wi && (wi->shape.ndim != 1 || wi->shape.dims[0] != ps->dims[0])))
        return xf_rt_bad_node(err, n, "axis, update and write_indices do not fit past_cache");
    bool circular = n->attrs.pad_mode == XF_PAD_WRAP;
    int64_t batch = ps->dims[0], outer = prod_dims(ps, 0, axis), rows = ps->dims[axis], len = upd->shape.dims[axis];
    int64_t inner = prod_dims(ps, axis + 1, rank);
    for (int64_t b = 0; wi && !circular && b < batch; b++) {
        int64_t at = xf_rt_load_i64(wi->dtype, wi->data, b);
        if (at < 0 || at > rows - len)
            return xf_rt_bad_node(err, n, "write index %lld of batch entry %lld puts %lld rows outside the %lld of "
                                  "axis %d (mode linear)", (long long)at, (long long)b, (long long)len,
                                  (long long)rows, axis);
    }
    xf_status st = xf_ref_copy(n, in, out, err);
    size_t es = xf_dtype_size(past->dtype), row_bytes = (size_t)inner * es;
    for (int64_t o = 0; st == XF_OK && row_bytes && o < outer; o++) {
        int64_t w = wi ? xf_rt_load_i64(wi->dtype, wi->data, o / (outer / batch)) : 0;
        if (circular) /* w mod rows in [0, rows), then s added one row at a time */
            w = rows ? (w % rows + rows) % rows : 0;
        for (int64_t s = 0; s < len; s++, w = circular && w + 1 == rows ? 0 : w + 1)
            memcpy(elem(&out[0], (o * rows + w) * inner, es), elem(upd, (o * len + s) * inner, es), row_bytes);
    }
    return st;
}

static int64_t clamp64(int64_t v, int64_t lo, int64_t hi) { return v < lo ? lo : v > hi ? hi : v; }

/* Slice: parameters from the opset-1 attributes or from inputs 1-4.
 * Starts and ends count from the end when negative and are clamped as
 * ONNX says (to [0, dim] going forward, to [-1, dim - 1] going backward). */
xf_status xf_ref_slice_walk(const xf_node *n, const xf_tensor_view *in, const xf_shape *ys, int64_t *base_out,
                            int64_t *strides, xf_error *err)
{
    const xf_attrs *a = &n->attrs;
    const xf_shape *xs = &in[0].shape;
    int rank = xs->ndim;
    if (ys->ndim != rank)
        return xf_rt_bad_node(err, n, "input and output ranks differ");
    int64_t count;
    bool from_attrs = a->has_slice_attrs;
    if (from_attrs)
        count = a->n_slice;
    else if (n->n_inputs >= 3 && xf_rt_numel(&in[1]) == xf_rt_numel(&in[2]))
        count = xf_rt_numel(&in[1]);
    else
        return xf_rt_bad_node(err, n, "starts and ends must have the same length");
    const xf_tensor_view *axes_in = n->n_inputs > 3 && xf_rt_present(&in[3]) ? &in[3] : NULL;
    const xf_tensor_view *steps_in = n->n_inputs > 4 && xf_rt_present(&in[4]) ? &in[4] : NULL;
    if ((axes_in && xf_rt_numel(axes_in) != count) || (steps_in && xf_rt_numel(steps_in) != count))
        return xf_rt_bad_node(err, n, "axes and steps must match starts in length");

    int64_t in_strides[XF_MAX_DIMS], base = 0;
    bool sliced[XF_MAX_DIMS] = {false};
    xf_rt_dense_strides(xs, in_strides);
    for (int d = 0; d < rank; d++)
        strides[d] = in_strides[d];
    for (int64_t i = 0; i < count; i++) {
        int64_t ax, start, end, step = steps_in ? xf_rt_load_i64(steps_in->dtype, steps_in->data, i) : 1;
        if (from_attrs) {
            ax = a->has_slice_axes ? a->slice_axes[i] : i;
            start = a->slice_starts[i];
            end = a->slice_ends[i];
        } else {
            ax = axes_in ? xf_rt_load_i64(axes_in->dtype, axes_in->data, i) : i;
            start = xf_rt_load_i64(in[1].dtype, in[1].data, i);
            end = xf_rt_load_i64(in[2].dtype, in[2].data, i);
        }
        int d = xf_rt_axis(ax, rank);
        if (d < 0 || sliced[d] || step == 0)
            return xf_rt_bad_node(err, n, "bad axis %lld or step %lld", (long long)ax, (long long)step);
        sliced[d] = true;
        int64_t dim = xs->dims[d];
        start += start < 0 ? dim : 0;
        end += end < 0 ? dim : 0;
        /* the count, written so that huge steps cannot overflow */
        int64_t len;
        if (step > 0) {
            start = clamp64(start, 0, dim);
            end = clamp64(end, 0, dim);
            len = end > start ? (end - start - 1) / step + 1 : 0;
        } else {
            start = clamp64(start, 0, dim - 1);
            end = clamp64(end, -1, dim - 1);
            int64_t back = step < -INT64_MAX ? INT64_MAX : -step;
            len = start > end ? (start - end - 1) / back + 1 : 0;
        }
        if (ys->dims[d] != len)
            return xf_rt_bad_node(err, n, "output has %lld elements along axis %d, the slice %lld",
                                  (long long)ys->dims[d], d, (long long)len);
        if (len > 0)
            base += start * in_strides[d];
        strides[d] = step * in_strides[d];
    }
    for (int d = 0; d < rank; d++)
        if (!sliced[d] && ys->dims[d] != xs->dims[d])
            return xf_rt_bad_node(err, n, "output differs from the input on unsliced axis %d", d);
    *base_out = base;
    return XF_OK;
}

xf_status xf_ref_slice(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out,
                       xf_error *err)
{
    int64_t base, strides[XF_MAX_DIMS];
    xf_status st = xf_ref_slice_walk(n, in, &out[0].shape, &base, strides, err);
    if (st != XF_OK)
        return st;
    xf_rt_iter it;
    xf_rt_iter_init(&it, &out[0].shape);
    xf_rt_iter_add(&it, strides, base);
    xf_rt_gather_iter(&in[0], &out[0], &it);
    return XF_OK;
}

xf_status xf_ref_expand(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out,
                        xf_error *err)
{
    if (!xf_rt_broadcastable(&in[0].shape, &out[0].shape))
        return xf_rt_bad_node(err, n, "input does not broadcast to the output shape");
    xf_rt_iter it;
    xf_rt_iter_init(&it, &out[0].shape);
    xf_rt_iter_add_broadcast(&it, &in[0].shape);
    xf_rt_gather_iter(&in[0], &out[0], &it);
    return XF_OK;
}

/* Shape: only the input's shape is read, never its data. */
xf_status xf_ref_shape(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out,
                       xf_error *err)
{
    int rank = in[0].shape.ndim;
    int64_t start = n->attrs.start, end = n->attrs.end;
    start = clamp64(start < 0 ? start + rank : start, 0, rank);
    end = clamp64(end < 0 ? end + rank : end, 0, rank);
    int64_t count = end > start ? end - start : 0;
    if (xf_rt_numel(&out[0]) != count)
        return xf_rt_bad_node(err, n, "output has %lld elements for %lld dimensions",
                              (long long)xf_rt_numel(&out[0]), (long long)count);
    for (int64_t i = 0; i < count; i++)
        xf_rt_store_i64(out[0].dtype, out[0].data, i, in[0].shape.dims[start + i]);
    return XF_OK;
}

/* Size: the input's element count, read from its shape alone. */
xf_status xf_ref_size(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out, xf_error *err)
{
    int64_t numel = xf_rt_numel(&in[0]);
    if (numel < 0 || xf_rt_numel(&out[0]) != 1)
        return xf_rt_bad_node(err, n, "the input's shape is not known or the output is not a scalar");
    xf_rt_store_i64(out[0].dtype, out[0].data, 0, numel);
    return XF_OK;
}

/* Fills with the `value` attribute (float 0 when absent: all zero bytes). */
xf_status xf_ref_constant_of_shape(const xf_node *n, const xf_tensor_view *in,
                                   const xf_tensor_view *out, xf_error *err)
{
    const xf_tensor *v = n->attrs.value;
    size_t es = xf_dtype_size(out[0].dtype);
    int64_t numel = xf_rt_numel(&out[0]);
    if (!v) {
        if (numel)
            memset(out[0].data, 0, (size_t)numel * es);
        return XF_OK;
    }
    if (v->dtype != out[0].dtype || xf_tensor_numel(v) != 1)
        return xf_rt_bad_node(err, n, "value must be one element of the output dtype");
    if (numel == 0)
        return XF_OK;
    /* the element, then what is filled so far copied after itself */
    size_t total = (size_t)numel * es, done = es;
    memcpy(out[0].data, v->data, es);
    while (done < total) {
        size_t more = done < total - done ? done : total - done;
        memcpy((char *)out[0].data + done, out[0].data, more);
        done += more;
    }
    return XF_OK;
}

/* Range: out[i] = start + i * delta for the output's length, which shape
 * inference derived as max(ceil((limit - start) / delta), 0). */
xf_status xf_ref_range(const xf_node *n, const xf_tensor_view *in, const xf_tensor_view *out,
                       xf_error *err)
{
    const xf_tensor_view *y = &out[0];
    int64_t numel = xf_rt_numel(y);
    if (xf_rt_is_integral(y->dtype)) {
        int64_t start = xf_rt_load_i64(in[0].dtype, in[0].data, 0);
        int64_t delta = xf_rt_load_i64(in[2].dtype, in[2].data, 0);
        for (int64_t i = 0; i < numel; i++) /* wrapping, like the output type */
            xf_rt_store_i64(y->dtype, y->data, i, (int64_t)((uint64_t)start + (uint64_t)i * (uint64_t)delta));
    } else {
        double start = xf_rt_load_f64(in[0].dtype, in[0].data, 0);
        double delta = xf_rt_load_f64(in[2].dtype, in[2].data, 0);
        for (int64_t i = 0; i < numel; i++)
            xf_rt_store_f64(y->dtype, y->data, i, start + (double)i * delta);
    }
    return XF_OK;
}
