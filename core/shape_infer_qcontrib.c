/* The quantized ops of ONNX Runtime's com.microsoft domain (its QOperator
 * format): their dtype and shape rules.  These are version 1 of their
 * domain, so nothing here reads the model's opset.  Where an op has the
 * shape of an ONNX op on some of its inputs (QGemm Gemm's on A, B and C,
 * QLinearConcat Concat's on its tensors, ...), the ONNX op's rule runs on
 * those inputs (as_op). */
#include "shape_infer_impl.h"

#include <inttypes.h>

#define DTM(t) (1u << (t))
#define Q8 (DTM(XF_DT_INT8) | DTM(XF_DT_UINT8))
#define Q16 (DTM(XF_DT_INT16) | DTM(XF_DT_UINT16))

enum { AS_MAX = 2 + 3 * 64 };

/* Node n seen as ONNX op `op` on its inputs pick[0..count) (-1: absent). */
typedef struct as_node {
    xf_node node;
    int inputs[AS_MAX];
    const xf_tensor *values[AS_MAX];
    xf_infer_ctx c;
} as_node;

static xf_infer_ctx *as_op(const xf_infer_ctx *c, xf_op op, const int *pick, int count, as_node *v)
{
    v->node = *c->node;
    v->node.op = op;
    v->node.n_inputs = count;
    v->node.inputs = v->inputs;
    for (int i = 0; i < count; i++) {
        bool has = xf_infer_has(c, pick[i]);
        v->inputs[i] = has ? c->node->inputs[pick[i]] : -1;
        v->values[i] = has && c->input_values ? c->input_values[pick[i]] : NULL;
    }
    v->c = *c;
    v->c.node = &v->node;
    v->c.input_values = c->input_values ? v->values : NULL;
    v->c.opset = 0; /* the ONNX op's latest form */
    return &v->c;
}

/* Input i (when present) has a dtype in mask. */
static xf_status want(const xf_infer_ctx *c, int i, unsigned mask, const char *what, const char *allowed)
{
    xf_dtype d = xf_infer_dtype(c, i);
    if (d == XF_DT_UNDEFINED || ((unsigned)d < 32 && (mask & DTM(d))))
        return XF_OK;
    return xf_infer_fail(c, XF_ERR_INVALID, "%s (input %d) must be %s, got %s", what, i, allowed, xf_dtype_name(d));
}

/* Input i (when present) has input j's dtype. */
static xf_status same(const xf_infer_ctx *c, int i, int j)
{
    xf_dtype a = xf_infer_dtype(c, i), b = xf_infer_dtype(c, j);
    if (a == XF_DT_UNDEFINED || b == XF_DT_UNDEFINED || a == b)
        return XF_OK;
    return xf_infer_fail(c, XF_ERR_INVALID, "input %d is %s but input %d is %s", i, xf_dtype_name(a), j,
                         xf_dtype_name(b));
}

/* Inputs scales[0..n) are float scales and zps[0..n) zero points of input
 * x's type (-1 entries skipped). */
static xf_status params(const xf_infer_ctx *c, int x, const int *scales, const int *zps, int n)
{
    xf_status st = XF_OK;
    for (int k = 0; k < n && st == XF_OK; k++) {
        st = scales[k] >= 0 ? want(c, scales[k], DTM(XF_DT_FLOAT), "a scale", "float") : XF_OK;
        if (st == XF_OK && zps[k] >= 0)
            st = same(c, zps[k], x);
    }
    return st;
}

/* The inputs after an optional zero point that the op still requires. */
static xf_status required(const xf_infer_ctx *c)
{
    static const int binary[] = {3, 4, 6}, unary[] = {3};
    bool bin = c->node->op == XF_OP_MS_QLINEAR_ADD || c->node->op == XF_OP_MS_QLINEAR_MUL;
    bool un = c->node->op == XF_OP_MS_QLINEAR_SIGMOID || c->node->op == XF_OP_MS_QLINEAR_LEAKY_RELU ||
              c->node->op == XF_OP_MS_QLINEAR_AVERAGE_POOL || c->node->op == XF_OP_MS_QLINEAR_SOFTMAX;
    for (int k = 0; k < (bin ? 3 : un ? 1 : 0); k++) {
        int i = bin ? binary[k] : unary[k];
        if (!xf_infer_has(c, i))
            return xf_infer_fail(c, XF_ERR_INVALID, "required input %d is missing", i);
    }
    return XF_OK;
}

xf_status xf_infer_qcontrib_dtype(xf_infer_ctx *c, xf_dtype *out)
{
    static const char q8[] = "int8 or uint8", q816[] = "an 8- or 16-bit integer";
    const xf_node *n = c->node;
    xf_status st = required(c);
    *out = xf_infer_dtype(c, 0);
    if (st != XF_OK)
        return st;
    switch (n->op) {
    case XF_OP_MS_QLINEAR_ADD:
    case XF_OP_MS_QLINEAR_MUL: {
        bool add = n->op == XF_OP_MS_QLINEAR_ADD;
        st = want(c, 0, add ? Q8 | DTM(XF_DT_UINT16) : Q8, "A", add ? "int8, uint8 or uint16" : q8);
        if (st == XF_OK)
            st = same(c, 3, 0);
        if (st == XF_OK)
            st = params(c, 0, (const int[]){1, 4, 6}, (const int[]){2, 5, 7}, 3);
        return st;
    }
    case XF_OP_MS_QLINEAR_SIGMOID:
    case XF_OP_MS_QLINEAR_LEAKY_RELU:
    case XF_OP_MS_QLINEAR_GLOBAL_AVERAGE_POOL:
    case XF_OP_MS_QLINEAR_AVERAGE_POOL:
    case XF_OP_MS_QLINEAR_SOFTMAX:
        st = want(c, 0, Q8, "X", q8);
        if (st == XF_OK)
            st = params(c, 0, (const int[]){1, 3}, (const int[]){2, 4}, 2);
        return st;
    case XF_OP_MS_QLINEAR_CONCAT:
        *out = xf_infer_dtype(c, 1);
        if ((n->n_inputs - 2) % 3)
            return xf_infer_fail(c, XF_ERR_INVALID, "has %d inputs: Y_scale, Y_zero_point and then triples "
                                 "(tensor, scale, zero point)", n->n_inputs);
        st = want(c, 1, Q8, "Y_zero_point", q8);
        for (int i = 2; i < n->n_inputs && st == XF_OK; i += 3) {
            st = same(c, i, 1);
            if (st == XF_OK)
                st = params(c, 1, (const int[]){i + 1, 0}, (const int[]){i + 2, -1}, 2);
        }
        return st;
    case XF_OP_MS_QGEMM:
        /* TA int8/uint8, TB likewise (int8 with an int8 A), C int32; Y the
         * zero point's type, else float (int32 sums scaled to floats) */
        st = want(c, 0, Q8, "A", q8);
        if (st == XF_OK)
            st = want(c, 3, xf_infer_dtype(c, 0) == XF_DT_INT8 ? DTM(XF_DT_INT8) : Q8, "B",
                      xf_infer_dtype(c, 0) == XF_DT_INT8 ? "int8 (A is int8)" : q8);
        if (st == XF_OK)
            st = params(c, 0, (const int[]){1, 7}, (const int[]){2, 8}, 2);
        if (st == XF_OK)
            st = params(c, 3, (const int[]){4}, (const int[]){5}, 1);
        if (st == XF_OK)
            st = want(c, 6, DTM(XF_DT_INT32), "C", "int32");
        *out = xf_infer_has(c, 8) ? xf_infer_dtype(c, 8) : XF_DT_FLOAT;
        return st;
    case XF_OP_MS_QUANTIZE_LINEAR:
        st = want(c, 0, DTM(XF_DT_FLOAT), "x", "float");
        if (st == XF_OK)
            st = want(c, 1, DTM(XF_DT_FLOAT), "y_scale", "float");
        if (st == XF_OK)
            st = want(c, 2, Q8 | Q16, "y_zero_point", q816);
        *out = xf_infer_has(c, 2) ? xf_infer_dtype(c, 2) : XF_DT_UINT8;
        return st;
    case XF_OP_MS_DEQUANTIZE_LINEAR:
        st = want(c, 0, Q8 | Q16, "x", q816);
        if (st == XF_OK)
            st = params(c, 0, (const int[]){1}, (const int[]){2}, 1);
        *out = XF_DT_FLOAT;
        return st;
    default:
        return XF_OK;
    }
}

/* Inputs idx[0..n) (when present) are scalars or one-element vectors:
 * ONNX Runtime's kernels take per-tensor parameters only. */
static xf_status per_tensor(const xf_infer_ctx *c, const int *idx, int n)
{
    for (int k = 0; k < n; k++)
        if (xf_infer_has(c, idx[k]) && !xf_infer_scalar_like(xf_infer_shape(c, idx[k])))
            return xf_infer_fail(c, XF_ERR_INVALID, "input %d must be a scalar (per tensor), got shape %s", idx[k],
                                 xf_infer_text(xf_infer_shape(c, idx[k])).s);
    return XF_OK;
}

/* QLinearAdd, QLinearMul: numpy broadcasting of A and B. */
xf_status xf_infer_ms_qbinary(xf_infer_ctx *c)
{
    xf_status st = per_tensor(c, (const int[]){1, 2, 4, 5, 6, 7}, 6);
    xf_shape out;
    if (st == XF_OK)
        st = xf_infer_broadcast(c, xf_infer_shape(c, 0), xf_infer_shape(c, 3), &out);
    if (st == XF_OK)
        xf_infer_set(c, 0, &out);
    return st;
}

/* QLinearSigmoid, QLinearLeakyRelu: X's shape. */
xf_status xf_infer_ms_qunary(xf_infer_ctx *c)
{
    xf_status st = per_tensor(c, (const int[]){1, 2, 3, 4}, 4);
    if (st == XF_OK)
        xf_infer_set(c, 0, xf_infer_shape(c, 0));
    return st;
}

/* QLinearGlobalAveragePool: X (N, C, spatial...) or with channels_last
 * (N, spatial..., C); the spatial extents become 1. */
xf_status xf_infer_ms_qglobal_pool(xf_infer_ctx *c)
{
    const xf_shape *x = xf_infer_shape(c, 0);
    xf_status st = per_tensor(c, (const int[]){1, 2, 3, 4}, 4);
    if (st == XF_OK && x->ndim < 3)
        st = xf_infer_fail(c, XF_ERR_INVALID, "X %s needs batch, channels and a spatial dimension",
                           xf_infer_text(x).s);
    if (st != XF_OK)
        return st;
    xf_shape out = *x;
    int first = c->node->attrs.channels_last ? 1 : 2;
    for (int d = first; d < first + x->ndim - 2; d++)
        out.dims[d] = 1;
    xf_infer_set(c, 0, &out);
    return XF_OK;
}

/* QLinearAveragePool: AveragePool's rule on X. */
xf_status xf_infer_ms_qpool(xf_infer_ctx *c)
{
    as_node v;
    xf_status st = per_tensor(c, (const int[]){1, 2, 3, 4}, 4);
    return st == XF_OK ? xf_infer_pool(as_op(c, XF_OP_AVERAGE_POOL, (const int[]){0}, 1, &v)) : st;
}

/* QLinearSoftmax: X's shape, the axis in range. */
xf_status xf_infer_ms_qsoftmax(xf_infer_ctx *c)
{
    as_node v;
    xf_status st = per_tensor(c, (const int[]){1, 2, 3, 4}, 4);
    return st == XF_OK ? xf_infer_softmax(as_op(c, XF_OP_SOFTMAX, (const int[]){0}, 1, &v)) : st;
}

/* QLinearConcat (Y_scale, Y_zero_point, then (X, X_scale, X_zero_point)
 * per tensor): Concat's rule on the tensors. */
xf_status xf_infer_ms_qconcat(xf_infer_ctx *c)
{
    int pick[AS_MAX], n = 0;
    xf_status st = per_tensor(c, (const int[]){0, 1}, 2);
    for (int i = 2; i + 2 < c->node->n_inputs && st == XF_OK; i += 3) {
        st = per_tensor(c, (const int[]){i + 1, i + 2}, 2);
        pick[n++] = i;
    }
    if (st == XF_OK && n == 0)
        st = xf_infer_fail(c, XF_ERR_INVALID, "has no tensor to concatenate");
    as_node v;
    return st == XF_OK ? xf_infer_concat(as_op(c, XF_OP_CONCAT, pick, n, &v)) : st;
}

/* QGemm (A, a_scale, a_zero_point, B, b_scale, b_zero_point, C, y_scale,
 * y_zero_point): Gemm's rule on A, B and C; B's parameters per tensor or
 * per column of the product (N of them), the others per tensor. */
xf_status xf_infer_ms_qgemm(xf_infer_ctx *c)
{
    as_node v;
    xf_infer_ctx *g = as_op(c, XF_OP_GEMM, (const int[]){0, 3, 6}, 3, &v);
    xf_status st = per_tensor(c, (const int[]){1, 2, 7, 8}, 4);
    if (st == XF_OK && xf_infer_has(c, 7) != xf_infer_has(c, 8))
        st = xf_infer_fail(c, XF_ERR_INVALID, "gives only one of y_scale and y_zero_point");
    if (st == XF_OK)
        st = xf_infer_gemm(g);
    const xf_shape *b = xf_infer_shape(c, 3);
    int64_t cols = b->ndim == 2 ? b->dims[c->node->attrs.trans_b ? 0 : 1] : -1;
    for (int i = 4; i <= 5 && st == XF_OK; i++) {
        const xf_shape *p = xf_infer_shape(c, i);
        if (xf_infer_has(c, i) && !xf_infer_scalar_like(p) && !(p->ndim == 1 && p->dims[0] == cols))
            st = xf_infer_fail(c, XF_ERR_INVALID, "B's %s must be a scalar or have one entry per column (%" PRId64
                               "), got shape %s", i == 4 ? "scale" : "zero point", cols, xf_infer_text(p).s);
    }
    return st;
}

/* QuantizeLinear, DequantizeLinear: as ONNX's (per tensor or per axis). */
xf_status xf_infer_ms_quantize(xf_infer_ctx *c)
{
    as_node v;
    xf_op op = c->node->op == XF_OP_MS_QUANTIZE_LINEAR ? XF_OP_QUANTIZE_LINEAR : XF_OP_DEQUANTIZE_LINEAR;
    return xf_infer_quantize(as_op(c, op, (const int[]){0, 1, 2}, c->node->n_inputs, &v));
}
