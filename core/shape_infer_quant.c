/* QuantizeLinear and DequantizeLinear: which scale and zero point each
 * element of x takes (per tensor, per axis or blocked), shared with the
 * kernels; and their dtype and shape rules (see shape_infer.c for the
 * driver). */
#include "shape_infer_impl.h"

#include <inttypes.h>
#include <stdio.h>

bool xf_quant_layout_make(const xf_shape *x, const xf_shape *scale, const xf_shape *zero_point, int64_t axis,
                          int64_t block_size, xf_quant_layout *l, char *why, size_t why_len)
{
    char xs[128], ss[128], zs[128];
    xf_shape_str(x, xs, sizeof xs);
    xf_shape_str(scale, ss, sizeof ss);
    *l = (xf_quant_layout){.outer = 1, .dim = xf_shape_numel(x), .inner = 1, .block = 1};
    bool scalar = xf_infer_scalar_like(scale);
    if (zero_point && !xf_shape_equal(zero_point, scale) && !(scalar && xf_infer_scalar_like(zero_point)))
        return xf_infer_refuse(why, why_len, "the zero point's shape %s differs from the scale's %s",
                               xf_shape_str(zero_point, zs, sizeof zs), ss);
    if (block_size < 0)
        return xf_infer_refuse(why, why_len, "block_size %" PRId64 " is negative", block_size);
    if (scalar)
        return true; /* per tensor: every stride 0 */
    if (block_size == 0 && scale->ndim != 1)
        return xf_infer_refuse(why, why_len, "a scale of shape %s needs block_size (per-axis scales are 1-D, "
                               "blocked ones have x's rank)", ss);
    if (axis < -(int64_t)x->ndim || axis >= x->ndim)
        return xf_infer_refuse(why, why_len, "axis %" PRId64 " is out of range for x of shape %s", axis, xs);
    int a = (int)(axis < 0 ? axis + x->ndim : axis);
    l->outer = xf_infer_dims_product(x->dims, a);
    l->dim = x->dims[a];
    l->inner = xf_infer_dims_product(x->dims + a + 1, x->ndim - a - 1);
    if (block_size == 0) {
        if (scale->dims[0] != l->dim && scale->dims[0] >= 0 && l->dim >= 0)
            return xf_infer_refuse(why, why_len, "the scale has %" PRId64 " entries but x (shape %s) has %" PRId64
                                   " along axis %d", scale->dims[0], xs, l->dim, a);
        l->block_stride = 1;
        return true;
    }
    if (scale->ndim != x->ndim)
        return xf_infer_refuse(why, why_len, "blocked quantization needs a scale of x's rank (x %s), got shape %s",
                               xs, ss);
    for (int d = 0; d < x->ndim; d++)
        if (d != a && scale->dims[d] != x->dims[d])
            return xf_infer_refuse(why, why_len, "the scale's shape %s must equal x's %s but along axis %d", ss, xs,
                                   a);
    int64_t blocks = l->dim / block_size + (l->dim % block_size != 0);
    if (scale->dims[a] != blocks)
        return xf_infer_refuse(why, why_len, "block_size %" PRId64 " cuts axis %d of x (shape %s) into %" PRId64
                               " blocks, but the scale has %" PRId64 " there", block_size, a, xs, blocks,
                               scale->dims[a]);
    l->block = block_size;
    l->inner_stride = 1;
    l->block_stride = l->inner;
    l->outer_stride = blocks * l->inner;
    return true;
}

/* ------------------------------------------------------------ inference */

#define DTM(t) (1u << (t))
/* the types xflow computes in, and the float8, 4- and 2-bit ones it only carries */
#define QUANTIZED                                                                                                  \
    (DTM(XF_DT_INT8) | DTM(XF_DT_UINT8) | DTM(XF_DT_INT16) | DTM(XF_DT_UINT16) | DTM(XF_DT_FLOAT8E4M3FN) |          \
     DTM(XF_DT_FLOAT8E4M3FNUZ) | DTM(XF_DT_FLOAT8E5M2) | DTM(XF_DT_FLOAT8E5M2FNUZ) | DTM(XF_DT_FLOAT8E8M0) |        \
     DTM(XF_DT_UINT4) | DTM(XF_DT_INT4) | DTM(XF_DT_FLOAT4E2M1) | DTM(XF_DT_UINT2) | DTM(XF_DT_INT2))
#define SCALES (DTM(XF_DT_FLOAT) | DTM(XF_DT_FLOAT16) | DTM(XF_DT_BFLOAT16))

/* Input i's dtype is in mask (or not known here). */
static xf_status want_dtype(const xf_infer_ctx *c, int i, unsigned mask, const char *what, const char *allowed)
{
    xf_dtype d = xf_infer_dtype(c, i);
    if (d == XF_DT_UNDEFINED || (mask & DTM(d)))
        return XF_OK;
    return xf_infer_fail(c, XF_ERR_INVALID, "%s must be %s, got %s", what, allowed, xf_dtype_name(d));
}

/* QuantizeLinear: y has the zero point's type, else output_dtype's, else
 * uint8.  DequantizeLinear: y has output_dtype's type, else the scale's. */
xf_status xf_infer_quant_dtype(xf_infer_ctx *c, xf_dtype *out)
{
    const xf_attrs *a = &c->node->attrs;
    static const char quantized[] = "an 8- or 16-bit integer, a float8 or a 4- or 2-bit type";
    static const char floats[] = "float, float16 or bfloat16";
    bool q = c->node->op == XF_OP_QUANTIZE_LINEAR;
    xf_dtype zp = xf_infer_has(c, 2) ? xf_infer_dtype(c, 2) : XF_DT_UNDEFINED;
    xf_status st = q ? want_dtype(c, 0, SCALES | DTM(XF_DT_INT32), "x", "float, float16, bfloat16 or int32")
                     : want_dtype(c, 0, QUANTIZED | DTM(XF_DT_INT32), "x",
                                 "an 8-, 16- or 32-bit integer, a float8 or a 4- or 2-bit type");
    if (st == XF_OK)
        st = want_dtype(c, 1, q ? SCALES | DTM(XF_DT_INT32) : SCALES, "the scale", q ? "float, float16, bfloat16 or int32" : floats);
    if (st == XF_OK && q)
        st = want_dtype(c, 2, QUANTIZED, "the zero point", quantized);
    if (st == XF_OK && !q && zp != XF_DT_UNDEFINED && xf_infer_dtype(c, 0) != XF_DT_UNDEFINED &&
        zp != xf_infer_dtype(c, 0))
        st = xf_infer_fail(c, XF_ERR_INVALID, "the zero point is %s but x is %s", xf_dtype_name(zp),
                           xf_dtype_name(xf_infer_dtype(c, 0)));
    if (st != XF_OK)
        return st;
    xf_dtype given = a->output_dtype;
    if (given != XF_DT_UNDEFINED && ((unsigned)given >= 32 || !((q ? QUANTIZED : SCALES) & DTM(given))))
        return xf_infer_fail(c, XF_ERR_INVALID, "output_dtype %s is not %s", xf_dtype_name(given),
                             q ? quantized : floats);
    if (q && given != XF_DT_UNDEFINED && zp != XF_DT_UNDEFINED && given != zp)
        return xf_infer_fail(c, XF_ERR_INVALID, "output_dtype is %s but the zero point is %s", xf_dtype_name(given),
                             xf_dtype_name(zp));
    if (q)
        *out = xf_infer_has(c, 2) ? zp : given != XF_DT_UNDEFINED ? given : XF_DT_UINT8;
    else
        *out = given != XF_DT_UNDEFINED ? given : xf_infer_dtype(c, 1);
    return XF_OK;
}

/* y has x's shape; the scale and zero point must fit it (opset 10: one
 * scale for the whole tensor). */
xf_status xf_infer_quantize(xf_infer_ctx *c)
{
    const xf_shape *x = xf_infer_shape(c, 0);
    xf_quant_layout l;
    char why[512];
    if (c->opset > 0 && c->opset < 13 && !xf_infer_scalar_like(xf_infer_shape(c, 1)))
        return xf_infer_fail(c, XF_ERR_INVALID, "opset %" PRId64 " takes a scalar scale, got shape %s", c->opset,
                             xf_infer_text(xf_infer_shape(c, 1)).s);
    if (!xf_quant_layout_make(x, xf_infer_shape(c, 1), xf_infer_has(c, 2) ? xf_infer_shape(c, 2) : NULL,
                              c->node->attrs.axis, c->node->attrs.block_size, &l, why, sizeof why))
        return xf_infer_fail(c, XF_ERR_INVALID, "%s", why);
    xf_infer_set(c, 0, x);
    return XF_OK;
}

/* ------------------------------------------------------------ quantized products */

bool xf_qmatmul_param(const xf_shape *operand, const xf_shape *param, bool columns, xf_qparam_form *form, char *why,
                      size_t why_len)
{
    char os[128], ps[128];
    *form = XF_QPARAM_TENSOR;
    if (xf_infer_scalar_like(param))
        return true;
    xf_shape_str(operand, os, sizeof os);
    xf_shape_str(param, ps, sizeof ps);
    if (operand->ndim < 1)
        return xf_infer_refuse(why, why_len, "a scalar operand takes per-tensor parameters only, got shape %s", ps);
    /* the rows of a (M x K) or the columns of b (K x N); a 1-D operand is one row or column */
    int r = operand->ndim;
    int64_t lines = r == 1 ? 1 : operand->dims[columns ? r - 1 : r - 2];
    if (param->ndim == 1 && param->dims[0] == lines) {
        *form = XF_QPARAM_VECTOR;
        return true;
    }
    xf_shape want = *operand;
    want.dims[columns ? (r == 1 ? 0 : r - 2) : r - 1] = 1;
    if (r >= 2 && xf_shape_equal(param, &want)) {
        *form = XF_QPARAM_MATRICES;
        return true;
    }
    return xf_infer_refuse(
        why, why_len,
        "a parameter of shape %s does not fit operand %s %s: it is a scalar, a vector of its %" PRId64
        " %s or the operand's shape with %s",
        ps, columns ? "b" : "a", os, lines, columns ? "columns" : "rows",
        columns ? "K (its next-to-last dimension) made 1" : "K (its last dimension) made 1");
}

/* The quantized types the integer products take: int8 and uint8, and
 * QLinearMatMul's float8 formats (opset 21) */
#define QINT (DTM(XF_DT_INT8) | DTM(XF_DT_UINT8))
#define QF8 (DTM(XF_DT_FLOAT8E4M3FN) | DTM(XF_DT_FLOAT8E4M3FNUZ) | DTM(XF_DT_FLOAT8E5M2) | DTM(XF_DT_FLOAT8E5M2FNUZ))

/* Input zi (a zero point, when present) has input vi's dtype. */
static xf_status same_as(const xf_infer_ctx *c, int zi, int vi, const char *what)
{
    xf_dtype z = xf_infer_dtype(c, zi), v = xf_infer_dtype(c, vi);
    if (z != XF_DT_UNDEFINED && v != XF_DT_UNDEFINED && z != v)
        return xf_infer_fail(c, XF_ERR_INVALID, "%s is %s but its operand is %s", what, xf_dtype_name(z),
                             xf_dtype_name(v));
    return XF_OK;
}

xf_status xf_infer_qops_dtype(xf_infer_ctx *c, xf_dtype *out)
{
    static const char ints[] = "int8 or uint8", scales[] = "float, float16 or bfloat16";
    xf_status st = XF_OK;
    switch (c->node->op) {
    case XF_OP_DYNAMIC_QUANTIZE_LINEAR: /* y and y_zero_point uint8, y_scale float (set by the driver) */
        *out = XF_DT_UINT8;
        return want_dtype(c, 0, DTM(XF_DT_FLOAT), "x", "float");
    case XF_OP_MATMUL_INTEGER:
    case XF_OP_CONV_INTEGER:
        *out = XF_DT_INT32;
        st = want_dtype(c, 0, QINT, "input 0", ints);
        if (st == XF_OK)
            st = want_dtype(c, 1, QINT, "input 1", ints);
        if (st == XF_OK)
            st = same_as(c, 2, 0, "input 0's zero point");
        if (st == XF_OK)
            st = same_as(c, 3, 1, "input 1's zero point");
        return st;
    case XF_OP_QLINEAR_MATMUL:
    case XF_OP_QLINEAR_CONV: {
        /* x (a), w (b): operand, scale, zero point; then y's scale and zero point */
        bool mm = c->node->op == XF_OP_QLINEAR_MATMUL;
        unsigned q = mm ? QINT | QF8 : QINT;
        const char *allowed = mm ? "int8, uint8 or a float8 type" : ints;
        for (int i = 0; i < 3 && st == XF_OK; i++) {
            int first = i < 2 ? 3 * i + 1 : 6; /* the scale */
            st = i < 2 ? want_dtype(c, first - 1, q, "a quantized operand", allowed) : XF_OK;
            if (st == XF_OK)
                st = want_dtype(c, first, SCALES, "a scale", scales);
            if (st == XF_OK)
                st = want_dtype(c, first + 1, q, "a zero point", allowed);
            if (st == XF_OK && i < 2)
                st = same_as(c, first + 1, first - 1, "the zero point");
        }
        if (st == XF_OK && !mm)
            st = want_dtype(c, 8, DTM(XF_DT_INT32), "the bias", "int32");
        *out = xf_infer_dtype(c, 7);
        return st;
    }
    default:
        return XF_OK;
    }
}

/* y has x's shape, y_scale and y_zero_point are scalars. */
xf_status xf_infer_dynamic_quantize(xf_infer_ctx *c)
{
    const xf_shape scalar = {.ndim = 0};
    xf_infer_set(c, 0, xf_infer_shape(c, 0));
    xf_infer_set(c, 1, &scalar);
    xf_infer_set(c, 2, &scalar);
    return XF_OK;
}

/* Input i (when present) is a per-tensor parameter. */
static xf_status per_tensor(const xf_infer_ctx *c, int i, const char *what)
{
    if (xf_infer_has(c, i) && !xf_infer_scalar_like(xf_infer_shape(c, i)))
        return xf_infer_fail(c, XF_ERR_INVALID, "%s must be a scalar (per tensor), got shape %s", what,
                             xf_infer_text(xf_infer_shape(c, i)).s);
    return XF_OK;
}

/* MatMulInteger (A, B, a_zero_point, b_zero_point) and QLinearMatMul (a,
 * a_scale, a_zero_point, b, b_scale, b_zero_point, y_scale, y_zero_point):
 * MatMul's shape; a's parameters per tensor or per row, b's per tensor or
 * per column, y's per tensor. */
xf_status xf_infer_qmatmul(xf_infer_ctx *c)
{
    bool q = c->node->op == XF_OP_QLINEAR_MATMUL;
    int bi = q ? 3 : 1;
    const int params[2][2] = {{q ? 1 : -1, 2}, {q ? 4 : -1, q ? 5 : 3}};
    for (int side = 0; side < 2; side++)
        for (int k = 0; k < 2; k++) {
            int i = params[side][k];
            xf_qparam_form form;
            char why[512];
            if (i >= 0 && xf_infer_has(c, i) &&
                !xf_qmatmul_param(xf_infer_shape(c, side ? bi : 0), xf_infer_shape(c, i), side == 1, &form, why,
                                  sizeof why))
                return xf_infer_fail(c, XF_ERR_INVALID, "%s: %s", k ? "zero point" : "scale", why);
        }
    xf_status st = q ? per_tensor(c, 6, "y_scale") : XF_OK;
    if (st == XF_OK && q)
        st = per_tensor(c, 7, "y_zero_point");
    return st == XF_OK ? xf_infer_matmul_operands(c, 0, bi) : st;
}

/* ConvInteger (x, w, x_zero_point, w_zero_point) and QLinearConv (x,
 * x_scale, x_zero_point, w, w_scale, w_zero_point, y_scale, y_zero_point,
 * B): Conv's shape; w's parameters per tensor or per output channel, the
 * others per tensor. */
xf_status xf_infer_qconv(xf_infer_ctx *c)
{
    bool q = c->node->op == XF_OP_QLINEAR_CONV;
    int wi = q ? 3 : 1;
    static const char *const names[] = {"x_scale", "x_zero_point", "y_scale", "y_zero_point"};
    const int x_params[4] = {q ? 1 : -1, 2, q ? 6 : -1, q ? 7 : -1}, w_params[2] = {q ? 4 : -1, q ? 5 : 3};
    xf_status st = XF_OK;
    for (int k = 0; k < 4 && st == XF_OK; k++)
        st = x_params[k] >= 0 ? per_tensor(c, x_params[k], names[k]) : XF_OK;
    const xf_shape *w = xf_infer_shape(c, wi);
    for (int k = 0; k < 2 && st == XF_OK; k++) {
        int i = w_params[k];
        const xf_shape *p = i >= 0 && xf_infer_has(c, i) ? xf_infer_shape(c, i) : NULL;
        if (p && !xf_infer_scalar_like(p) && !(p->ndim == 1 && w->ndim > 0 && p->dims[0] == w->dims[0]))
            st = xf_infer_fail(c, XF_ERR_INVALID,
                               "the weight's %s must be a scalar or have one entry per output channel (%" PRId64
                               "), got shape %s",
                               k ? "zero point" : "scale", w->ndim > 0 ? w->dims[0] : 0, xf_infer_text(p).s);
    }
    return st == XF_OK ? xf_infer_conv_operands(c, 0, wi, q ? 8 : -1) : st;
}
