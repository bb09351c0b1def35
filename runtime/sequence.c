/* ONNX's sequence and optional ops on host tensors.  A sequence at run time is an
 * xf_tensor with is_sequence set (see xf_sequence_create): a refcounted
 * list of tensor references.  The session runs these nodes itself, like
 * control flow, in dynamic mode on host-memory backends: their outputs'
 * sizes depend on the run.  Items taken from a sequence are shared, never
 * copied; tensors put into one are copied, because the session's tensors
 * are views of buffers it reuses.  An optional (xf_optional_create) holds
 * one such reference or none. */
#include "xf_rt_internal.h"

#include <stdlib.h>
#include <string.h>

bool xf_rt_seq_node(const xf_node *n) { return n->op != XF_OP_OPAQUE && (xf_op_get_info(n->op)->flags & XF_OPF_SEQ); }

static xf_status oom(xf_error *err) { return xf_error_set(err, XF_ERR_NOMEM, "out of memory"); }

/* Checks that in[i] is present and of the wanted kind, with elements a
 * host kernel can copy. */
static xf_status operand(const xf_node *n, xf_tensor *const *in, int i, bool sequence, xf_error *err)
{
    const xf_tensor *t = i < n->n_inputs ? in[i] : NULL;
    if (!t)
        return xf_rt_bad_node(err, n, "input %d is missing", i);
    if (t->is_sequence != sequence || t->is_optional)
        return xf_rt_bad_node(err, n, "input %d must be a %s, not a%s %s", i, sequence ? "sequence" : "tensor",
                              t->is_optional ? "n" : "", xf_kind_name(xf_tensor_kind(t)));
    if (sequence && t->n_items > 0 && t->items[0]->is_map)
        return xf_rt_bad_node(err, n, "input %d is a sequence of maps; the sequence ops take sequences of tensors", i);
    if (xf_dtype_size(t->dtype) == 0 && t->dtype != XF_DT_STRING)
        return xf_rt_bad_node(err, n, "input %d has elements of type %s, which sequences do not hold", i,
                              xf_dtype_name(t->dtype));
    return XF_OK;
}

/* A position input (a scalar int32 or int64) normalized against a
 * sequence of len entries: valid in [-len, len - 1], or [-len, len] when
 * it may point one past the end (SequenceInsert). */
static xf_status position(const xf_node *n, const xf_tensor *p, int64_t len, bool one_past, int64_t *out,
                          xf_error *err)
{
    if (p->is_sequence || xf_tensor_numel(p) != 1 || (p->dtype != XF_DT_INT32 && p->dtype != XF_DT_INT64))
        return xf_rt_bad_node(err, n, "position must be one int32 or int64");
    int64_t v = xf_rt_load_i64(p->dtype, p->data, 0), hi = one_past ? len : len - 1;
    if (v < -len || v > hi)
        return xf_rt_bad_node(err, n, "position %lld is out of range for a sequence of %lld entries ([%lld, %lld])",
                              (long long)v, (long long)len, (long long)-len, (long long)hi);
    *out = v < 0 ? v + len : v;
    return XF_OK;
}

/* A sequence of seq's items with `put` inserted at `at` (put NULL: the
 * item at `at` left out). */
static xf_status edited(const xf_node *n, const xf_tensor *seq, int64_t at, xf_tensor *put, xf_tensor **out,
                        xf_error *err)
{
    int64_t len = seq->n_items + (put ? 1 : -1);
    xf_tensor **items = malloc(sizeof *items * (size_t)(len > 0 ? len : 1));
    if (!items)
        return oom(err);
    for (int64_t i = 0, j = 0; i < seq->n_items; i++) {
        if (i == at && put)
            items[j++] = put;
        if (i != at || put)
            items[j++] = seq->items[i];
    }
    if (put && at == seq->n_items)
        items[len - 1] = put;
    *out = xf_sequence_create(seq->dtype, len, items);
    free(items);
    if (!*out)
        return put && put->dtype != seq->dtype
                   ? xf_rt_bad_node(err, n, "inserts a %s tensor into a sequence of %s", xf_dtype_name(put->dtype),
                                    xf_dtype_name(seq->dtype))
                   : oom(err);
    return XF_OK;
}

/* The copy of t a sequence keeps (tensors of strings are the session's
 * own, never changed: shared). */
static xf_tensor *own_copy(const xf_tensor *t)
{
    return t->dtype == XF_DT_STRING ? xf_tensor_retain((xf_tensor *)t)
                                    : xf_tensor_from_data(t->dtype, &t->shape, t->data);
}

/* The elements of t as bytes to copy: its data, or its string pointers
 * (which own_strings then duplicates), and the size of one. */
static void *elements(const xf_tensor *t) { return t->dtype == XF_DT_STRING ? (void *)t->strings : t->data; }
static size_t element_size(xf_dtype dt) { return dt == XF_DT_STRING ? sizeof(char *) : xf_dtype_size(dt); }

/* Makes the string pointers copied into t its own; false when out of memory. */
static bool own_strings(xf_tensor *t)
{
    bool ok = true;
    for (int64_t i = 0; t->dtype == XF_DT_STRING && i < xf_tensor_numel(t); i++) /* after a failure: NULL, "" */
        ok &= (t->strings[i] = ok ? strdup(t->strings[i] ? t->strings[i] : "") : NULL) != NULL;
    return ok;
}

/* Elements before axis, and the bytes of one step along it. */
static void around_axis(const xf_shape *s, int axis, size_t elem, int64_t *outer, size_t *inner)
{
    *outer = 1;
    *inner = elem;
    for (int d = 0; d < s->ndim; d++) {
        if (d < axis)
            *outer *= s->dims[d];
        else if (d > axis)
            *inner *= (size_t)s->dims[d];
    }
}

/* Copies `outer` rows: row o of `bytes` bytes goes from src + o * src_step
 * to dst + o * dst_step. */
static void copy_rows(void *dst, size_t dst_at, size_t dst_step, const void *src, size_t src_at, size_t src_step,
                      int64_t outer, size_t bytes)
{
    /* an empty tensor's data may be NULL: no arithmetic on it */
    for (int64_t o = 0; bytes && o < outer; o++)
        memcpy((char *)dst + dst_at + (size_t)o * dst_step, (const char *)src + src_at + (size_t)o * src_step, bytes);
}

/* SplitToSequence: pieces of x along axis (one per step without split,
 * squeezed unless keepdims; a scalar split gives pieces of that length,
 * the last one shorter; a 1-D split the lengths). */
static xf_status split_to_sequence(const xf_node *n, xf_tensor *const *in, xf_tensor **out, xf_error *err)
{
    const xf_tensor *x = in[0], *split = n->n_inputs > 1 ? in[1] : NULL;
    int r = x->shape.ndim;
    int64_t axis = n->attrs.axis < 0 ? n->attrs.axis + r : n->attrs.axis;
    if (axis < 0 || axis >= r)
        return xf_rt_bad_node(err, n, "axis %lld is out of range for rank %d", (long long)n->attrs.axis, r);
    int64_t dim = x->shape.dims[axis], count, piece = 1;
    bool squeeze = !split && !n->attrs.keepdims;
    if (!split) {
        count = dim;
    } else if (split->is_sequence || (split->dtype != XF_DT_INT32 && split->dtype != XF_DT_INT64) ||
               split->shape.ndim > 1) {
        return xf_rt_bad_node(err, n, "split must be a scalar or 1-D int32 or int64 tensor");
    } else if (split->shape.ndim == 0) {
        piece = xf_rt_load_i64(split->dtype, split->data, 0);
        if (piece <= 0)
            return xf_rt_bad_node(err, n, "split %lld is not positive", (long long)piece);
        count = dim / piece + (dim % piece != 0); /* without overflow for any piece */
    } else {
        count = split->shape.dims[0];
        int64_t sum = 0;
        for (int64_t i = 0; i < count; i++) {
            int64_t v = xf_rt_load_i64(split->dtype, split->data, i);
            if (v < 0)
                return xf_rt_bad_node(err, n, "split[%lld] = %lld is negative", (long long)i, (long long)v);
            if (v > dim - sum)
                return xf_rt_bad_node(err, n, "split sums past %lld, the axis's extent, at split[%lld]", (long long)dim,
                                      (long long)i);
            sum += v;
        }
        if (sum != dim)
            return xf_rt_bad_node(err, n, "split sums to %lld, the axis has %lld", (long long)sum, (long long)dim);
    }
    int64_t outer;
    size_t inner;
    around_axis(&x->shape, (int)axis, element_size(x->dtype), &outer, &inner);
    xf_tensor **items = calloc((size_t)count + 1, sizeof *items);
    xf_status st = items ? XF_OK : oom(err);
    for (int64_t i = 0, start = 0; i < count && st == XF_OK; i++) {
        int64_t len = split && split->shape.ndim == 1 ? xf_rt_load_i64(split->dtype, split->data, i)
                      : start + piece > dim           ? dim - start
                                                      : piece;
        xf_shape s = x->shape;
        s.dims[axis] = len;
        if (squeeze) {
            s.ndim--;
            memmove(s.dims + axis, s.dims + axis + 1, sizeof *s.dims * (size_t)(s.ndim - axis));
        }
        if (!(items[i] = xf_tensor_create(x->dtype, &s))) {
            st = oom(err);
            break;
        }
        copy_rows(elements(items[i]), 0, (size_t)len * inner, elements(x), (size_t)start * inner, (size_t)dim * inner,
                  outer, (size_t)len * inner);
        if (!own_strings(items[i]))
            st = oom(err);
        start += len;
    }
    if (st == XF_OK && !(*out = xf_sequence_create(x->dtype, count, items)))
        st = oom(err);
    for (int64_t i = 0; items && i < count; i++)
        xf_tensor_release(items[i]);
    free(items);
    return st;
}

/* ConcatFromSequence: the items joined along axis, or stacked along a new
 * one (new_axis). */
static xf_status concat_from_sequence(const xf_node *n, const xf_tensor *seq, xf_tensor **out, xf_error *err)
{
    if (seq->n_items == 0)
        return xf_rt_bad_node(err, n, "the sequence is empty");
    const xf_shape *first = &seq->items[0]->shape;
    int stack = n->attrs.new_axis != 0, r = first->ndim + stack;
    int64_t axis = n->attrs.axis < 0 ? n->attrs.axis + r : n->attrs.axis;
    if (axis < 0 || axis >= r || r > XF_MAX_DIMS)
        return xf_rt_bad_node(err, n, "axis %lld is out of range for items of rank %d", (long long)n->attrs.axis,
                              first->ndim);
    xf_shape shape = *first;
    if (stack) {
        memmove(shape.dims + axis + 1, shape.dims + axis, sizeof *shape.dims * (size_t)(first->ndim - axis));
        shape.ndim = r;
        shape.dims[axis] = 0;
    } else {
        shape.dims[axis] = 0;
    }
    for (int64_t i = 0; i < seq->n_items; i++) {
        const xf_shape *s = &seq->items[i]->shape;
        bool fits = s->ndim == first->ndim;
        for (int d = 0; fits && d < s->ndim; d++)
            fits = s->dims[d] == first->dims[d] || (!stack && d == axis);
        if (!fits) {
            char a[128], b[128];
            return xf_rt_bad_node(err, n, "item %lld has shape %s, item 0 %s", (long long)i,
                                  xf_shape_str(s, a, sizeof a), xf_shape_str(first, b, sizeof b));
        }
        shape.dims[axis] += stack ? 1 : s->dims[axis];
    }
    *out = xf_tensor_create(seq->dtype, &shape);
    if (!*out)
        return oom(err);
    int64_t outer;
    size_t inner;
    around_axis(&shape, (int)axis, element_size(seq->dtype), &outer, &inner);
    size_t row = (size_t)shape.dims[axis] * inner, at = 0;
    for (int64_t i = 0; i < seq->n_items; i++) {
        size_t bytes = (size_t)(stack ? 1 : seq->items[i]->shape.dims[axis]) * inner;
        copy_rows(elements(*out), at, row, elements(seq->items[i]), 0, bytes, outer, bytes);
        at += bytes;
    }
    return own_strings(*out) ? XF_OK : oom(err);
}

/* A value to keep past the node: a copy of a tensor (the session's are
 * views of buffers it reuses), a new reference to a sequence or optional. */
static xf_tensor *kept(const xf_tensor *t)
{
    return xf_tensor_is_container(t) ? xf_tensor_retain((xf_tensor *)t) : own_copy(t);
}

/* Optional, OptionalHasElement, OptionalGetElement.  From opset 18 the
 * latter two also take a plain tensor or sequence (shape inference checks
 * the opset), which counts as present. */
static xf_status run_optional(const xf_graph *g, const xf_node *n, xf_tensor *const *in, xf_tensor **out,
                              xf_error *err)
{
    const xf_tensor *x = n->n_inputs > 0 ? in[0] : NULL;
    switch (n->op) {
    case XF_OP_OPTIONAL:
        if (x && x->is_optional)
            return xf_rt_bad_node(err, n, "input 0 is an optional; optionals do not nest");
        if (!x) {
            *out = xf_optional_create(NULL, n->attrs.opt_type == 1 + XF_VK_SEQUENCE, n->attrs.to);
        } else {
            xf_tensor *content = kept(x);
            *out = content ? xf_optional_create(content, false, x->dtype) : NULL;
            xf_tensor_release(content);
        }
        return *out ? XF_OK : oom(err);
    case XF_OP_OPTIONAL_HAS_ELEMENT:
        if (!(*out = xf_tensor_create(XF_DT_BOOL, &(xf_shape){.ndim = 0})))
            return oom(err);
        ((uint8_t *)(*out)->data)[0] = x && (!x->is_optional || x->n_items > 0);
        return XF_OK;
    default: /* OptionalGetElement */
        if (!x)
            return xf_rt_bad_node(err, n, "input 0 is missing");
        if (x->is_optional && x->n_items == 0)
            return xf_rt_bad_node(err, n, "its input '%s' is an empty optional, which has no element to get",
                                  g->values[n->inputs[0]].name);
        *out = kept(x->is_optional ? x->items[0] : x);
        return *out ? XF_OK : oom(err);
    }
}

xf_status xf_rt_seq_run(const xf_graph *g, int node, xf_tensor *const *in, xf_tensor **out, xf_error *err)
{
    const xf_node *n = &g->nodes[node];
    if (n->op == XF_OP_OPTIONAL || n->op == XF_OP_OPTIONAL_HAS_ELEMENT || n->op == XF_OP_OPTIONAL_GET_ELEMENT) {
        *out = NULL;
        return run_optional(g, n, in, out, err);
    }
    bool seq_in = n->op != XF_OP_SEQUENCE_EMPTY && n->op != XF_OP_SEQUENCE_CONSTRUCT && n->op != XF_OP_SPLIT_TO_SEQUENCE;
    xf_status st = XF_OK;
    *out = NULL;
    for (int i = 0; i < n->n_inputs && st == XF_OK; i++)
        if (in[i] || i == 0 || n->op == XF_OP_SEQUENCE_CONSTRUCT)
            st = operand(n, in, i, i == 0 && seq_in, err);
    if (st != XF_OK)
        return st;
    const xf_tensor *seq = seq_in ? in[0] : NULL;
    const xf_tensor *pos = n->n_inputs > (n->op == XF_OP_SEQUENCE_INSERT ? 2 : 1) && n->op != XF_OP_SPLIT_TO_SEQUENCE
                               ? in[n->op == XF_OP_SEQUENCE_INSERT ? 2 : 1]
                               : NULL;
    int64_t at = 0;
    switch (n->op) {
    case XF_OP_SEQUENCE_EMPTY:
        *out = xf_sequence_create(n->attrs.to, 0, NULL);
        return *out ? XF_OK : oom(err);
    case XF_OP_SEQUENCE_CONSTRUCT: {
        xf_tensor **items = calloc((size_t)n->n_inputs + 1, sizeof *items);
        for (int i = 0; items && i < n->n_inputs; i++)
            if (!(items[i] = own_copy(in[i])))
                st = oom(err);
        for (int i = 1; items && st == XF_OK && i < n->n_inputs; i++)
            if (in[i]->dtype != in[0]->dtype)
                st = xf_rt_bad_node(err, n, "input %d is %s, input 0 %s", i, xf_dtype_name(in[i]->dtype),
                                    xf_dtype_name(in[0]->dtype));
        if (!items)
            st = oom(err);
        if (st == XF_OK && !(*out = xf_sequence_create(in[0]->dtype, n->n_inputs, items)))
            st = oom(err);
        for (int i = 0; items && i < n->n_inputs; i++)
            xf_tensor_release(items[i]);
        free(items);
        return st;
    }
    case XF_OP_SEQUENCE_INSERT: {
        at = seq->n_items;
        if (pos && (st = position(n, pos, seq->n_items, true, &at, err)) != XF_OK)
            return st;
        xf_tensor *copy = own_copy(in[1]);
        st = copy ? edited(n, seq, at, copy, out, err) : oom(err);
        xf_tensor_release(copy);
        return st;
    }
    case XF_OP_SEQUENCE_ERASE:
        at = seq->n_items - 1;
        if (seq->n_items == 0)
            return xf_rt_bad_node(err, n, "erases from an empty sequence");
        if (pos && (st = position(n, pos, seq->n_items, false, &at, err)) != XF_OK)
            return st;
        return edited(n, seq, at, NULL, out, err);
    case XF_OP_SEQUENCE_AT:
        if ((st = position(n, pos, seq->n_items, false, &at, err)) != XF_OK)
            return st;
        *out = xf_tensor_retain(seq->items[at]);
        return XF_OK;
    case XF_OP_SEQUENCE_LENGTH:
        *out = xf_tensor_create(XF_DT_INT64, &(xf_shape){.ndim = 0});
        if (!*out)
            return oom(err);
        ((int64_t *)(*out)->data)[0] = seq->n_items;
        return XF_OK;
    case XF_OP_SPLIT_TO_SEQUENCE:
        return split_to_sequence(n, in, out, err);
    case XF_OP_CONCAT_FROM_SEQUENCE:
        return concat_from_sequence(n, seq, out, err);
    default:
        return xf_rt_bad_node(err, n, "is not a sequence op");
    }
}
