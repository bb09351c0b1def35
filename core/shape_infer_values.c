/* Shape inference for the ops whose output shape is the value of an input
 * or a function of one: Expand, ConstantOfShape, Shape, Size, Range and
 * NonZero. */
#include "shape_infer_impl.h"

#include <math.h>

/* Reads a shape given as a parameter (Expand, ConstantOfShape). */
static xf_status read_shape(xf_infer_ctx *c, int i, xf_shape *s, bool *known)
{
    int n;
    xf_status st = xf_infer_read_ints(c, i, "shape", s->dims, XF_MAX_DIMS, &n);
    *known = n >= 0;
    s->ndim = n;
    for (int d = 0; st == XF_OK && d < n; d++)
        if (s->dims[d] < 0)
            st = xf_infer_fail(c, XF_ERR_INVALID, "shape %s has a negative dimension",
                               xf_infer_ints_text(s->dims, n).s);
    return st;
}

xf_status xf_infer_expand(xf_infer_ctx *c)
{
    xf_shape target, out;
    bool known;
    xf_status st = read_shape(c, 1, &target, &known);
    if (st != XF_OK || !known)
        return st != XF_OK ? st : xf_infer_unknown(c);
    st = xf_infer_broadcast(c, xf_infer_shape(c, 0), &target, &out);
    if (st == XF_OK)
        xf_infer_set(c, 0, &out);
    return st;
}

xf_status xf_infer_constant_of_shape(xf_infer_ctx *c)
{
    const xf_tensor *v = c->node->attrs.value;
    if (v && xf_tensor_numel(v) != 1)
        return xf_infer_fail(c, XF_ERR_INVALID, "value must hold one element, has shape %s",
                             xf_infer_text(&v->shape).s);
    xf_shape out;
    bool known;
    xf_status st = read_shape(c, 0, &out, &known);
    if (st != XF_OK || !known)
        return st != XF_OK ? st : xf_infer_unknown(c);
    xf_infer_set(c, 0, &out);
    return XF_OK;
}

/* Shape (start/end from opset 15, clamped to [0, rank]). */
xf_status xf_infer_shape_op(xf_infer_ctx *c)
{
    const xf_attrs *a = &c->node->attrs;
    int rank = xf_infer_shape(c, 0)->ndim;
    int64_t start = a->start < 0 ? a->start + rank : a->start;
    int64_t end = !a->has_end ? rank : a->end < 0 ? a->end + rank : a->end;
    start = xf_infer_clamp(start, 0, rank);
    end = xf_infer_clamp(end, 0, rank);
    xf_shape out = {.ndim = 1, .dims = {end > start ? end - start : 0}};
    xf_infer_set(c, 0, &out);
    return XF_OK;
}

/* Size: an int64 scalar, the input's element count. */
xf_status xf_infer_size(xf_infer_ctx *c)
{
    const xf_shape scalar = {.ndim = 0};
    xf_infer_set(c, 0, &scalar);
    return XF_OK;
}

xf_status xf_infer_range(xf_infer_ctx *c)
{
    static const char *const names[] = {"start", "limit", "delta"};
    const xf_tensor *t[3];
    for (int i = 0; i < 3; i++) {
        t[i] = xf_infer_value(c, i);
        if (!t[i])
            return xf_infer_unknown(c);
        if (!xf_infer_scalar_like(&t[i]->shape) || !t[i]->data)
            return xf_infer_fail(c, XF_ERR_INVALID, "%s must be a scalar, got shape %s", names[i],
                                 xf_infer_text(&t[i]->shape).s);
    }
    /* Lengths beyond 2^62 elements are no tensor anyone can hold. */
    const uint64_t max_len = (uint64_t)1 << 62;
    uint64_t len;
    switch (t[0]->dtype) {
    case XF_DT_FLOAT16: /* opset 27 */
    case XF_DT_BFLOAT16:
    case XF_DT_FLOAT:
    case XF_DT_DOUBLE: {
        double start = xf_tensor_get_f64(t[0], 0), limit = xf_tensor_get_f64(t[1], 0);
        double delta = xf_tensor_get_f64(t[2], 0);
        if (delta == 0)
            return xf_infer_fail(c, XF_ERR_INVALID, "delta is 0");
        double count = ceil((limit - start) / delta);
        len = !(count > 0) ? 0 : count >= 0x1p62 ? UINT64_MAX : (uint64_t)count; /* NaN: 0 */
        break;
    }
    case XF_DT_INT16:
    case XF_DT_INT32:
    case XF_DT_INT64: {
        int64_t start = xf_tensor_get_i64(t[0], 0), limit = xf_tensor_get_i64(t[1], 0);
        int64_t delta = xf_tensor_get_i64(t[2], 0);
        if (delta == 0)
            return xf_infer_fail(c, XF_ERR_INVALID, "delta is 0");
        /* Unsigned differences cannot overflow for any int64 bounds. */
        if (delta > 0 && limit > start)
            len = ((uint64_t)limit - (uint64_t)start - 1) / (uint64_t)delta + 1;
        else if (delta < 0 && limit < start)
            len = ((uint64_t)start - (uint64_t)limit - 1) / (0 - (uint64_t)delta) + 1;
        else
            len = 0;
        break;
    }
    default:
        return xf_infer_fail(c, XF_ERR_UNSUPPORTED, "Range on %s",
                             xf_dtype_name(t[0]->dtype));
    }
    if (len > max_len)
        return xf_infer_fail(c, XF_ERR_LIMIT, "the range would have more than 2^62 elements");
    int64_t n = (int64_t)len;
    xf_shape out = {.ndim = 1, .dims = {n}};
    xf_infer_set(c, 0, &out);
    return XF_OK;
}

/* NonZero: [rank, number of nonzero elements], known only where the
 * input's value is (a constant here, or the value at run time). */
xf_status xf_infer_non_zero(xf_infer_ctx *c)
{
    const xf_tensor *t = xf_infer_value(c, 0);
    int64_t numel = t ? xf_tensor_numel(t) : -1;
    if (!t || t->dtype == XF_DT_STRING || xf_dtype_size(t->dtype) == 0 || (numel > 0 && !t->data))
        return xf_infer_unknown(c);
    int64_t count = 0;
    if (t->dtype == XF_DT_BOOL || t->dtype == XF_DT_UINT8 || t->dtype == XF_DT_INT8) { /* the masks detectors make */
        const uint8_t *p = t->data;
        for (int64_t i = 0; i < numel; i++)
            count += p[i] != 0;
    } else if (t->dtype == XF_DT_FLOAT) {
        const float *p = t->data;
        for (int64_t i = 0; i < numel; i++)
            count += p[i] != 0;
    } else {
        for (int64_t i = 0; i < numel; i++)
            count += xf_tensor_get_f64(t, i) != 0;
    }
    xf_shape out = {.ndim = 2, .dims = {t->shape.ndim, count}};
    xf_infer_set(c, 0, &out);
    return XF_OK;
}
