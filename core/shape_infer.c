/* Shape and dtype inference: the driver, the dtype rules of every op, and
 * the shape rules of elementwise ops (shape_infer_movement.c has the
 * data-movement ops; shape_infer_nn.c convolution, pooling and reductions,
 * normalization and matrix products; shape_infer_norm.c ArgMax/ArgMin,
 * CumSum and the instance, group, mean-variance, LRN and Lp
 * normalizations).  Semantics follow ONNX opsets 1..17 as xf_attrs represents
 * them: parameters that newer opsets pass as inputs are read from those
 * inputs' values when the node has them, else from the older attribute form. */
#include "shape_infer_impl.h"

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ context helpers */

xf_shape_text xf_infer_text(const xf_shape *s)
{
    xf_shape_text t;
    xf_shape_str(s, t.s, sizeof t.s);
    return t;
}

/* "[1,-1,0]" for parameter vectors in messages. */
xf_shape_text xf_infer_ints_text(const int64_t *v, int n)
{
    xf_shape_text t;
    size_t used = (size_t)snprintf(t.s, sizeof t.s, "[");
    for (int i = 0; i < n && used < sizeof t.s; i++)
        used += (size_t)snprintf(t.s + used, sizeof t.s - used, "%s%" PRId64, i ? "," : "", v[i]);
    if (used < sizeof t.s)
        snprintf(t.s + used, sizeof t.s - used, "]");
    return t;
}

const char *xf_infer_node_label(const xf_graph *g, int node, char *buf, size_t n)
{
    const xf_node *nd = &g->nodes[node];
    const char *op = nd->op == XF_OP_OPAQUE && nd->opaque ? nd->opaque->op_type : xf_op_name(nd->op);
    if (nd->name && nd->name[0])
        snprintf(buf, n, "node '%s' (%s)", nd->name, op);
    else
        snprintf(buf, n, "node #%d (%s)", node, op);
    return buf;
}

xf_status xf_infer_fail(const xf_infer_ctx *c, xf_status status, const char *fmt, ...)
{
    char label[256], msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return xf_error_set(c->err, status, "%s: %s",
                        xf_infer_node_label(c->g, c->index, label, sizeof label), msg);
}

bool xf_infer_refuse(char *why, size_t why_len, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, why_len, fmt, ap);
    va_end(ap);
    return false;
}

bool xf_infer_has(const xf_infer_ctx *c, int i)
{
    return i >= 0 && i < c->node->n_inputs && c->node->inputs[i] >= 0;
}

static const xf_tensor *given_value(const xf_infer_ctx *c, int i)
{
    return c->input_values && xf_infer_has(c, i) ? c->input_values[i] : NULL;
}

const xf_shape *xf_infer_shape(const xf_infer_ctx *c, int i)
{
    static const xf_shape absent = {.ndim = -1};
    if (!xf_infer_has(c, i))
        return &absent;
    const xf_tensor *t = given_value(c, i);
    return t ? &t->shape : &c->g->values[c->node->inputs[i]].shape;
}

static xf_dtype input_dtype(const xf_infer_ctx *c, int i)
{
    if (!xf_infer_has(c, i))
        return XF_DT_UNDEFINED;
    const xf_tensor *t = given_value(c, i);
    return t ? t->dtype : c->g->values[c->node->inputs[i]].dtype;
}

xf_dtype xf_infer_dtype(const xf_infer_ctx *c, int i) { return input_dtype(c, i); }

const xf_tensor *xf_infer_value(const xf_infer_ctx *c, int i)
{
    if (!xf_infer_has(c, i))
        return NULL;
    const xf_tensor *t = given_value(c, i);
    if (t)
        return t;
    /* An initializer that is also a graph input is only a default that the
     * caller may override, so its data says nothing about run-time shapes. */
    const xf_value *v = &c->g->values[c->node->inputs[i]];
    return v->is_input ? NULL : v->init;
}

void xf_infer_set(xf_infer_ctx *c, int k, const xf_shape *s)
{
    if (k < c->node->n_outputs && c->node->outputs[k] >= 0)
        c->g->values[c->node->outputs[k]].shape = *s;
}

xf_status xf_infer_unknown(xf_infer_ctx *c)
{
    const xf_shape unknown = {.ndim = -1};
    for (int k = 0; k < c->node->n_outputs; k++)
        xf_infer_set(c, k, &unknown);
    return XF_OK;
}

xf_status xf_infer_axis(const xf_infer_ctx *c, const char *what, int64_t axis, int rank,
                        bool inclusive, int *out)
{
    int64_t hi = inclusive ? rank : rank - 1;
    *out = 0;
    if (axis < -(int64_t)rank || axis > hi)
        return xf_infer_fail(c, XF_ERR_INVALID, "%s %" PRId64 " is out of range for rank %d", what,
                             axis, rank);
    *out = (int)(axis < 0 ? axis + rank : axis);
    return XF_OK;
}

xf_status xf_infer_broadcast(const xf_infer_ctx *c, const xf_shape *a, const xf_shape *b,
                             xf_shape *out)
{
    int r = a->ndim > b->ndim ? a->ndim : b->ndim;
    xf_shape o = {.ndim = r};
    for (int i = 0; i < r; i++) {
        int ia = i - (r - a->ndim), ib = i - (r - b->ndim);
        int64_t da = ia >= 0 ? a->dims[ia] : 1, db = ib >= 0 ? b->dims[ib] : 1;
        /* a dim known only at run time is 1 there or the other's size */
        if (da < 0 && db >= 0 && db != 1)
            da = db;
        else if (db < 0 && da >= 0 && da != 1)
            db = da;
        if (da == db || db == 1)
            o.dims[i] = da;
        else if (da == 1)
            o.dims[i] = db;
        else
            return xf_infer_fail(c, XF_ERR_INVALID, "shapes %s and %s are not broadcastable",
                                 xf_infer_text(a).s, xf_infer_text(b).s);
    }
    *out = o;
    return XF_OK;
}

bool xf_infer_broadcasts_to(const xf_shape *from, const xf_shape *to)
{
    if (from->ndim > to->ndim)
        return false;
    for (int i = 1; i <= from->ndim; i++) {
        int64_t f = from->dims[from->ndim - i], t = to->dims[to->ndim - i];
        if (f != 1 && f != t && f >= 0 && t >= 0) /* unknown dims may fit */
            return false;
    }
    return true;
}

/* Reads the integer parameter vector of input i (Reshape's shape, Slice's
 * starts, Squeeze's axes, ...): *n = -1 when its value is not known here.
 * A scalar counts as one entry; more than cap entries is beyond what the
 * fixed-size shapes of core can hold. */
xf_status xf_infer_read_ints(const xf_infer_ctx *c, int i, const char *what, int64_t *vals, int cap,
                             int *n)
{
    const xf_tensor *t = xf_infer_value(c, i);
    *n = -1;
    if (!t)
        return XF_OK;
    if (t->dtype != XF_DT_INT64 && t->dtype != XF_DT_INT32)
        return xf_infer_fail(c, XF_ERR_INVALID, "%s must be int64 (or int32), got %s", what,
                             xf_dtype_name(t->dtype));
    int64_t count = xf_tensor_numel(t);
    if (t->shape.ndim > 1 || count < 0)
        return xf_infer_fail(c, XF_ERR_INVALID, "%s must be a 1-D tensor, got shape %s", what,
                             xf_infer_text(&t->shape).s);
    if (count > cap)
        return xf_infer_fail(c, XF_ERR_UNSUPPORTED,
                             "%s has %" PRId64 " entries; xflow handles at most %d", what, count, cap);
    if (count > 0 && (!t->data || t->nbytes < (size_t)count * xf_dtype_size(t->dtype)))
        return xf_infer_fail(c, XF_ERR_INVALID, "%s has no data for its %" PRId64 " entries", what,
                             count);
    for (int64_t k = 0; k < count; k++)
        vals[k] = xf_tensor_get_i64(t, k);
    *n = (int)count;
    return XF_OK;
}

int64_t xf_infer_dims_product(const int64_t *dims, int n)
{
    xf_shape s = xf_shape_make(n, dims);
    return xf_shape_numel(&s);
}

bool xf_infer_scalar_like(const xf_shape *s)
{
    /* ONNX asks for scalars; one-element vectors are what several exporters
     * write and what ONNX Runtime accepts. */
    return s->ndim == 0 || (s->ndim == 1 && s->dims[0] == 1);
}

/* ------------------------------------------------------------ dtypes */

/* Inputs [from, to) share ONNX's type variable T.  Unknown dtypes (values
 * behind opaque nodes without value_info) pass.  *common gets T. */
static xf_status same_dtype(const xf_infer_ctx *c, int from, int to, xf_dtype *common)
{
    int first = -1;
    *common = XF_DT_UNDEFINED;
    for (int i = from; i < to && i < c->node->n_inputs; i++) {
        xf_dtype d = input_dtype(c, i);
        if (d == XF_DT_UNDEFINED)
            continue;
        if (first < 0) {
            first = i;
            *common = d;
        } else if (d != *common) {
            return xf_infer_fail(c, XF_ERR_INVALID, "input %d is %s but input %d is %s", first,
                                 xf_dtype_name(*common), i, xf_dtype_name(d));
        }
    }
    return XF_OK;
}

static xf_status require_dtype(const xf_infer_ctx *c, int i, xf_dtype want)
{
    xf_dtype d = input_dtype(c, i);
    if (d != XF_DT_UNDEFINED && d != want)
        return xf_infer_fail(c, XF_ERR_INVALID, "input %d must be %s, got %s", i,
                             xf_dtype_name(want), xf_dtype_name(d));
    return XF_OK;
}

/* Input 1 holds indices: int64, or int32 too where the op takes that. */
static xf_status index_dtype(const xf_infer_ctx *c, bool int32_too)
{
    xf_dtype d = input_dtype(c, 1);
    if (d == XF_DT_UNDEFINED || d == XF_DT_INT64 || (int32_too && d == XF_DT_INT32))
        return XF_OK;
    return xf_infer_fail(c, XF_ERR_INVALID, "indices must be %s, got %s", int32_too ? "int32 or int64" : "int64",
                         xf_dtype_name(d));
}

/* Every op's output dtypes, and the checks that its inputs' dtypes agree. */
static xf_status infer_dtypes(xf_infer_ctx *c)
{
    const xf_node *n = c->node;
    xf_dtype out = input_dtype(c, 0);
    xf_status st = XF_OK;
    switch (n->op) {
    case XF_OP_ADD: case XF_OP_SUB: case XF_OP_MUL: case XF_OP_DIV:
    case XF_OP_MAX: case XF_OP_MIN: case XF_OP_SUM: case XF_OP_CONCAT:
    case XF_OP_CONV: case XF_OP_CONV_TRANSPOSE: case XF_OP_MATMUL: case XF_OP_GEMM: case XF_OP_LAYER_NORM:
    case XF_OP_RANGE: case XF_OP_CLIP: case XF_OP_MOD: case XF_OP_EINSUM:
    case XF_OP_PRELU: case XF_OP_MEAN:
    case XF_OP_INSTANCE_NORM: case XF_OP_GROUP_NORM:
        st = same_dtype(c, 0, n->n_inputs, &out);
        break;
    case XF_OP_BIT_SHIFT: /* signed integers from opset 28 */
        st = same_dtype(c, 0, n->n_inputs, &out);
        if (st == XF_OK && out != XF_DT_UNDEFINED && !xf_dtype_is_unsigned(out) &&
            (!xf_dtype_is_signed_int(out) || (c->opset > 0 && c->opset < 28)))
            st = xf_infer_fail(c, XF_ERR_INVALID, "shifts unsigned integers (and from opset 28 signed ones), got %s",
                               xf_dtype_name(out));
        break;
    case XF_OP_CAST_LIKE: /* the type of target_type, whatever its values */
        out = input_dtype(c, 1);
        break;
    case XF_OP_EQUAL: case XF_OP_GREATER: case XF_OP_LESS:
    case XF_OP_GREATER_OR_EQUAL: case XF_OP_LESS_OR_EQUAL:
        st = same_dtype(c, 0, n->n_inputs, &out);
        out = XF_DT_BOOL;
        break;
    case XF_OP_BITWISE_AND: case XF_OP_BITWISE_OR: case XF_OP_BITWISE_XOR: case XF_OP_BITWISE_NOT:
        st = same_dtype(c, 0, n->n_inputs, &out);
        if (st == XF_OK && out != XF_DT_UNDEFINED && !xf_dtype_is_unsigned(out) && !xf_dtype_is_signed_int(out))
            st = xf_infer_fail(c, XF_ERR_INVALID, "takes integers, got %s", xf_dtype_name(out));
        break;
    case XF_OP_LP_POOL: case XF_OP_GLOBAL_LP_POOL: case XF_OP_SWISH:
    case XF_OP_AFFINE: case XF_OP_SCALE: case XF_OP_SCALED_TANH: case XF_OP_PARAMETRIC_SOFTPLUS:
    case XF_OP_IMAGE_SCALER: case XF_OP_CROP:
        if (out != XF_DT_UNDEFINED && !xf_dtype_is_float(out))
            st = xf_infer_fail(c, XF_ERR_INVALID, "X must be a floating-point tensor, got %s", xf_dtype_name(out));
        break;
    case XF_OP_MEL_WEIGHT_MATRIX:
        st = xf_infer_mel_dtype(c, &out);
        break;
    case XF_OP_TENSOR_SCATTER: case XF_OP_BIT_CAST: case XF_OP_SWIGLU:
        st = xf_infer_opset28_dtype(c, &out);
        break;
    case XF_OP_RANDOM_NORMAL: case XF_OP_RANDOM_UNIFORM: case XF_OP_RANDOM_NORMAL_LIKE:
    case XF_OP_RANDOM_UNIFORM_LIKE: case XF_OP_BERNOULLI: case XF_OP_MULTINOMIAL:
        st = xf_infer_random_dtype(c, &out);
        break;
    case XF_OP_AND: case XF_OP_OR: case XF_OP_XOR:
        st = require_dtype(c, 0, XF_DT_BOOL);
        if (st == XF_OK)
            st = require_dtype(c, 1, XF_DT_BOOL);
        break;
    case XF_OP_WHERE:
        st = require_dtype(c, 0, XF_DT_BOOL);
        if (st == XF_OK)
            st = same_dtype(c, 1, 3, &out);
        break;
    case XF_OP_NOT:
        st = require_dtype(c, 0, XF_DT_BOOL);
        break;
    case XF_OP_IS_NAN:
    case XF_OP_IS_INF:
        out = XF_DT_BOOL;
        break;
    case XF_OP_NON_ZERO:
    case XF_OP_ARG_MAX:
    case XF_OP_ARG_MIN:
        out = XF_DT_INT64;
        break;
    case XF_OP_CUM_SUM:
    case XF_OP_CUM_PROD: {
        xf_dtype d = input_dtype(c, 1);
        if (d != XF_DT_UNDEFINED && d != XF_DT_INT32 && d != XF_DT_INT64)
            st = xf_infer_fail(c, XF_ERR_INVALID, "axis must be int32 or int64, got %s", xf_dtype_name(d));
        break;
    }
    case XF_OP_SCATTER_ND:
    case XF_OP_SCATTER_ELEMENTS:
    case XF_OP_SCATTER:
        if (input_dtype(c, 2) != XF_DT_UNDEFINED && out != XF_DT_UNDEFINED && input_dtype(c, 2) != out)
            st = xf_infer_fail(c, XF_ERR_INVALID, "updates must be %s, got %s", xf_dtype_name(out),
                               xf_dtype_name(input_dtype(c, 2)));
        if (st == XF_OK)
            st = index_dtype(c, n->op != XF_OP_SCATTER_ND);
        break;
    case XF_OP_TOP_K:
    case XF_OP_TRILU:
    case XF_OP_TILE:
    case XF_OP_REVERSE_SEQUENCE:
        st = require_dtype(c, 1, XF_DT_INT64);
        break;
    case XF_OP_UPSAMPLE:
        st = require_dtype(c, 1, XF_DT_FLOAT);
        break;
    case XF_OP_MAX_UNPOOL: /* I and output_shape */
        st = require_dtype(c, 1, XF_DT_INT64);
        if (st == XF_OK)
            st = require_dtype(c, 2, XF_DT_INT64);
        break;
    case XF_OP_ONE_HOT: /* values' type */
        out = input_dtype(c, 2);
        break;
    case XF_OP_COMPRESS:
        st = require_dtype(c, 1, XF_DT_BOOL);
        break;
    case XF_OP_EYE_LIKE: /* dtype, else the input's type */
        if (n->attrs.to != XF_DT_UNDEFINED &&
            ((unsigned)n->attrs.to >= XF_DT_COUNT_ || xf_dtype_size(n->attrs.to) == 0))
            st = xf_infer_fail(c, XF_ERR_INVALID, "dtype %d is not a type EyeLike makes", (int)n->attrs.to);
        out = n->attrs.to != XF_DT_UNDEFINED ? n->attrs.to : out;
        break;
    case XF_OP_ROI_ALIGN:
        st = same_dtype(c, 0, 2, &out);
        if (st == XF_OK && out != XF_DT_UNDEFINED && !xf_dtype_is_float(out))
            st = xf_infer_fail(c, XF_ERR_INVALID, "X must be a floating-point tensor, got %s", xf_dtype_name(out));
        if (st == XF_OK)
            st = require_dtype(c, 2, XF_DT_INT64);
        break;
    case XF_OP_COL2IM: /* image_shape and block_shape are int64 */
        st = require_dtype(c, 1, XF_DT_INT64);
        if (st == XF_OK)
            st = require_dtype(c, 2, XF_DT_INT64);
        break;
    case XF_OP_CENTER_CROP_PAD:
        if (input_dtype(c, 1) != XF_DT_UNDEFINED && input_dtype(c, 1) != XF_DT_INT64 &&
            input_dtype(c, 1) != XF_DT_INT32)
            st = xf_infer_fail(c, XF_ERR_INVALID, "shape must be int32 or int64, got %s",
                               xf_dtype_name(input_dtype(c, 1)));
        break;
    case XF_OP_AFFINE_GRID: /* the grid is theta's type */
    case XF_OP_DEFORM_CONV: /* X, W, offset, B and mask share T */
    case XF_OP_MAX_ROI_POOL: /* X and rois share T */
        st = n->op == XF_OP_AFFINE_GRID ? require_dtype(c, 1, XF_DT_INT64) : same_dtype(c, 0, n->n_inputs, &out);
        if (st == XF_OK && out != XF_DT_UNDEFINED && !xf_dtype_is_float(out))
            st = xf_infer_fail(c, XF_ERR_INVALID, "%s must be a floating-point tensor, got %s",
                               n->op == XF_OP_AFFINE_GRID ? "theta" : "X", xf_dtype_name(out));
        break;
    case XF_OP_GRID_SAMPLE: /* Y is X's type, whatever the grid's */
        if (input_dtype(c, 1) != XF_DT_UNDEFINED && !xf_dtype_is_float(input_dtype(c, 1)))
            st = xf_infer_fail(c, XF_ERR_INVALID, "grid must be a floating-point tensor, got %s",
                               xf_dtype_name(input_dtype(c, 1)));
        break;
    case XF_OP_DFT:
    case XF_OP_STFT: /* T1 for the signal (and STFT's window), int32 or int64 for the lengths and axis */
        if (n->op == XF_OP_STFT && out != XF_DT_UNDEFINED && input_dtype(c, 2) != XF_DT_UNDEFINED &&
            input_dtype(c, 2) != out)
            st = xf_infer_fail(c, XF_ERR_INVALID, "the window is %s but the signal is %s",
                               xf_dtype_name(input_dtype(c, 2)), xf_dtype_name(out));
        if (st == XF_OK && out != XF_DT_UNDEFINED && !xf_dtype_is_float(out))
            st = xf_infer_fail(c, XF_ERR_INVALID, "the signal must be a floating-point tensor, got %s",
                               xf_dtype_name(out));
        for (int i = 1; i < n->n_inputs && st == XF_OK; i++)
            if (!(n->op == XF_OP_STFT && i == 2) && input_dtype(c, i) != XF_DT_UNDEFINED &&
                input_dtype(c, i) != XF_DT_INT64 && input_dtype(c, i) != XF_DT_INT32)
                st = xf_infer_fail(c, XF_ERR_INVALID, "input %d must be int32 or int64, got %s", i,
                                   xf_dtype_name(input_dtype(c, i)));
        break;
    case XF_OP_HANN_WINDOW: case XF_OP_HAMMING_WINDOW: case XF_OP_BLACKMAN_WINDOW:
        if (out != XF_DT_UNDEFINED && out != XF_DT_INT64 && out != XF_DT_INT32)
            st = xf_infer_fail(c, XF_ERR_INVALID, "size must be int32 or int64, got %s", xf_dtype_name(out));
        out = n->attrs.output_dtype != XF_DT_UNDEFINED ? n->attrs.output_dtype : XF_DT_FLOAT;
        break;
    case XF_OP_NON_MAX_SUPPRESSION:
        for (int i = 0; i < n->n_inputs && st == XF_OK; i++)
            st = require_dtype(c, i, i == 2 ? XF_DT_INT64 : XF_DT_FLOAT);
        out = XF_DT_INT64;
        break;
    case XF_OP_MS_DYNAMIC_QUANTIZE_LSTM: /* float data, 8-bit weights with their zero points, int32 lengths */
        for (int i = 0; i < n->n_inputs && st == XF_OK; i++) {
            xf_dtype d = xf_infer_dtype(c, i);
            bool q = i == 1 || i == 2, ok = d == XF_DT_UNDEFINED ||
                                            (q ? d == XF_DT_INT8 || d == XF_DT_UINT8
                                             : i == 9 || i == 11 ? d == xf_infer_dtype(c, i == 9 ? 1 : 2)
                                             : i == 4 ? d == XF_DT_INT32 : d == XF_DT_FLOAT);
            if (!ok)
                st = xf_infer_fail(c, XF_ERR_INVALID, "input %d is %s; DynamicQuantizeLSTM takes float data, "
                                   "8-bit W and R with zero points of their types and int32 lengths", i,
                                   xf_dtype_name(d));
        }
        out = XF_DT_FLOAT;
        break;
    case XF_OP_RNN:
    case XF_OP_LSTM:
    case XF_OP_GRU: { /* T for all but sequence_lens (input 4, int32) */
        xf_dtype rest;
        st = same_dtype(c, 0, 4, &out);
        if (st == XF_OK)
            st = same_dtype(c, 5, n->n_inputs, &rest);
        if (st == XF_OK && out != XF_DT_UNDEFINED && rest != XF_DT_UNDEFINED && rest != out)
            st = xf_infer_fail(c, XF_ERR_INVALID, "initial states and peepholes are %s but X is %s",
                               xf_dtype_name(rest), xf_dtype_name(out));
        if (st == XF_OK)
            st = require_dtype(c, 4, XF_DT_INT32);
        break;
    }
    case XF_OP_GATHER_ND:
        st = index_dtype(c, false);
        break;
    case XF_OP_QUANTIZE_LINEAR:
    case XF_OP_DEQUANTIZE_LINEAR:
        st = xf_infer_quant_dtype(c, &out);
        break;
    case XF_OP_DYNAMIC_QUANTIZE_LINEAR:
    case XF_OP_MATMUL_INTEGER:
    case XF_OP_CONV_INTEGER:
    case XF_OP_QLINEAR_MATMUL:
    case XF_OP_QLINEAR_CONV:
        st = xf_infer_qops_dtype(c, &out);
        break;
    case XF_OP_MS_QLINEAR_ADD: case XF_OP_MS_QLINEAR_MUL: case XF_OP_MS_QLINEAR_SIGMOID:
    case XF_OP_MS_QLINEAR_LEAKY_RELU: case XF_OP_MS_QLINEAR_GLOBAL_AVERAGE_POOL:
    case XF_OP_MS_QLINEAR_AVERAGE_POOL: case XF_OP_MS_QLINEAR_CONCAT: case XF_OP_MS_QLINEAR_SOFTMAX:
    case XF_OP_MS_QGEMM: case XF_OP_MS_QUANTIZE_LINEAR: case XF_OP_MS_DEQUANTIZE_LINEAR:
        st = xf_infer_qcontrib_dtype(c, &out);
        break;
    case XF_OP_GATHER:
    case XF_OP_GATHER_ELEMENTS:
        st = index_dtype(c, true);
        break;
    case XF_OP_SHAPE:
    case XF_OP_SIZE:
        out = XF_DT_INT64;
        break;
    case XF_OP_CAST:
        if (n->attrs.to <= XF_DT_UNDEFINED || n->attrs.to >= XF_DT_COUNT_)
            st = xf_infer_fail(c, XF_ERR_INVALID, "target type %d is not a tensor type",
                               (int)n->attrs.to);
        out = n->attrs.to;
        break;
    case XF_OP_CONSTANT_OF_SHAPE:
        out = n->attrs.value ? n->attrs.value->dtype : XF_DT_FLOAT;
        break;
    case XF_OP_MS_ATTENTION:
    case XF_OP_MS_MHA:
    case XF_OP_MS_EMBED_LAYER_NORM:
    case XF_OP_MS_ROTARY_EMB:
        return xf_infer_attn_dtypes(c);
    case XF_OP_MS_GQA:
        return xf_infer_attn_dtypes(c);
    case XF_OP_MS_QATTENTION:
        return xf_infer_qattention_dtypes(c);
    case XF_OP_ATTENTION:
        return xf_infer_attention_dtypes(c);
    case XF_OP_CAUSAL_CONV_WITH_STATE:
    case XF_OP_LINEAR_ATTENTION:
        return xf_infer_state_dtypes(c);
    case XF_OP_RMS_NORM: { /* X's type T and the scale's V, which Y has */
        xf_dtype v = input_dtype(c, 1);
        if ((out != XF_DT_UNDEFINED && !xf_dtype_is_float(out)) || (v != XF_DT_UNDEFINED && !xf_dtype_is_float(v)))
            st = xf_infer_fail(c, XF_ERR_INVALID, "X is %s and scale %s; both must be floating-point",
                               xf_dtype_name(out), xf_dtype_name(v));
        if (v != XF_DT_UNDEFINED)
            out = v;
        break;
    }
    case XF_OP_ROTARY_EMB:
        st = same_dtype(c, 0, 3, &out);
        if (st == XF_OK && out != XF_DT_UNDEFINED && !xf_dtype_is_float(out))
            st = xf_infer_fail(c, XF_ERR_INVALID, "X must be a floating-point tensor, got %s", xf_dtype_name(out));
        if (st == XF_OK && n->n_inputs > 3)
            st = require_dtype(c, 3, XF_DT_INT64);
        break;
    case XF_OP_MS_MATMUL_NBITS:
        return xf_infer_nbits_dtypes(c);
    case XF_OP_MS_MATMUL_INTEGER_TO_FLOAT:
    case XF_OP_MS_DYNAMIC_QUANTIZE_MATMUL:
        return xf_infer_int_matmul_float_dtypes(c);
    case XF_OP_MS_GATHER_BLOCK_QUANTIZED: /* the rule checks the inputs; the scales' type */
        out = n->n_inputs > 2 && xf_dtype_is_half(input_dtype(c, 2)) ? input_dtype(c, 2) : XF_DT_FLOAT;
        break;
    default:
        break;
    }
    if (st != XF_OK)
        return st;
    for (int k = 0; k < n->n_outputs; k++) {
        xf_dtype d = out;
        /* Dropout's mask is BOOL from opset 10; before, it had the data's type. */
        if (n->op == XF_OP_DROPOUT && k == 1 && (c->opset == 0 || c->opset >= 10))
            d = XF_DT_BOOL;
        /* LayerNormalization's Mean and InvStdDev have stash_type's type:
         * float, the only stash_type import takes. */
        if (n->op == XF_OP_LAYER_NORM && k > 0)
            d = XF_DT_FLOAT;
        if ((n->op == XF_OP_TOP_K && k == 1) || (n->op == XF_OP_UNIQUE && k > 0) ||
            (n->op == XF_OP_MAX_POOL && k == 1))
            d = XF_DT_INT64;
        if (n->op == XF_OP_DYNAMIC_QUANTIZE_LINEAR && k == 1)
            d = XF_DT_FLOAT;
        /* An unknown result keeps what value_info said. */
        if (n->outputs[k] >= 0 && d != XF_DT_UNDEFINED)
            c->g->values[n->outputs[k]].dtype = d;
    }
    return XF_OK;
}

/* ------------------------------------------------------------ elementwise */

/* Unary ops, Identity, Dropout (the mask has the data's shape), Cast, Not. */
static xf_status infer_same(xf_infer_ctx *c)
{
    for (int k = 0; k < c->node->n_outputs; k++)
        xf_infer_set(c, k, xf_infer_shape(c, 0));
    return XF_OK;
}

/* Binary and variadic elementwise ops and Where: numpy broadcasting of all inputs. */
static xf_status infer_broadcast(xf_infer_ctx *c)
{
    xf_shape out = {.ndim = 0};
    for (int i = 0; i < c->node->n_inputs; i++) {
        if (!xf_infer_has(c, i))
            continue;
        xf_status st = xf_infer_broadcast(c, &out, xf_infer_shape(c, i), &out);
        if (st != XF_OK)
            return st;
    }
    xf_infer_set(c, 0, &out);
    return XF_OK;
}

static xf_status infer_clip(xf_infer_ctx *c)
{
    static const char *const names[] = {"input", "min", "max"};
    for (int i = 1; i < 3; i++)
        if (xf_infer_has(c, i) && !xf_infer_scalar_like(xf_infer_shape(c, i)))
            return xf_infer_fail(c, XF_ERR_INVALID, "%s must be a scalar, got shape %s", names[i],
                                 xf_infer_text(xf_infer_shape(c, i)).s);
    return infer_same(c);
}

/* PRelu: slope broadcasts to X one way (opset 7 on).  Before opset 7 a
 * slope holds one value, one per channel (X's axis 1) or one per element
 * of X. */
static xf_status infer_prelu(xf_infer_ctx *c)
{
    const xf_shape *x = xf_infer_shape(c, 0), *slope = xf_infer_shape(c, 1);
    if (c->node->attrs.prelu_channels) {
        bool channels = slope->ndim == 1 && x->ndim > 1 && slope->dims[0] == x->dims[1];
        if (xf_shape_numel(slope) != 1 && !channels && !xf_shape_equal(slope, x))
            return xf_infer_fail(c, XF_ERR_INVALID, "slope of shape %s for X of shape %s: before opset 7 a slope "
                                 "is one value, one per channel or one per element of X", xf_infer_text(slope).s,
                                 xf_infer_text(x).s);
    } else if (!xf_infer_broadcasts_to(slope, x)) {
        return xf_infer_fail(c, XF_ERR_INVALID, "slope of shape %s does not broadcast to X's shape %s",
                             xf_infer_text(slope).s, xf_infer_text(x).s);
    }
    return infer_same(c);
}

/* Celu divides by alpha. */
static xf_status infer_celu(xf_infer_ctx *c)
{
    if (c->node->attrs.alpha == 0)
        return xf_infer_fail(c, XF_ERR_INVALID, "alpha must not be 0");
    return infer_same(c);
}

/* ------------------------------------------------------------ the rule table */

/* One line per op of ops.def: an op added there without a rule here fails
 * to compile (XF_RULE_<ID> undeclared). */
#define XF_RULE_CONV xf_infer_conv
#define XF_RULE_MATMUL xf_infer_matmul
#define XF_RULE_GEMM xf_infer_gemm
#define XF_RULE_ADD infer_broadcast
#define XF_RULE_SUB infer_broadcast
#define XF_RULE_MUL infer_broadcast
#define XF_RULE_DIV infer_broadcast
#define XF_RULE_POW infer_broadcast
#define XF_RULE_MAX infer_broadcast
#define XF_RULE_MIN infer_broadcast
#define XF_RULE_SUM infer_broadcast
#define XF_RULE_EQUAL infer_broadcast
#define XF_RULE_GREATER infer_broadcast
#define XF_RULE_LESS infer_broadcast
#define XF_RULE_GREATER_OR_EQUAL infer_broadcast
#define XF_RULE_LESS_OR_EQUAL infer_broadcast
#define XF_RULE_MOD infer_broadcast
#define XF_RULE_AND infer_broadcast
#define XF_RULE_OR infer_broadcast
#define XF_RULE_XOR infer_broadcast
#define XF_RULE_WHERE infer_broadcast
#define XF_RULE_RELU infer_same
#define XF_RULE_SIGMOID infer_same
#define XF_RULE_TANH infer_same
#define XF_RULE_ABS infer_same
#define XF_RULE_NEG infer_same
#define XF_RULE_EXP infer_same
#define XF_RULE_LOG infer_same
#define XF_RULE_SQRT infer_same
#define XF_RULE_RECIPROCAL infer_same
#define XF_RULE_FLOOR infer_same
#define XF_RULE_CEIL infer_same
#define XF_RULE_ERF infer_same
#define XF_RULE_SIN infer_same
#define XF_RULE_COS infer_same
#define XF_RULE_SOFTPLUS infer_same
#define XF_RULE_LEAKY_RELU infer_same
#define XF_RULE_ELU infer_same
#define XF_RULE_HARD_SIGMOID infer_same
#define XF_RULE_HARD_SWISH infer_same
#define XF_RULE_GATHER_ELEMENTS xf_infer_gather_elements
#define XF_RULE_SCATTER_ND xf_infer_scatter_nd
#define XF_RULE_IS_NAN infer_same
#define XF_RULE_RESIZE xf_infer_resize
#define XF_RULE_GATHER_ND xf_infer_gather_nd
#define XF_RULE_TOP_K xf_infer_top_k
#define XF_RULE_SCATTER_ELEMENTS xf_infer_scatter_elements
#define XF_RULE_LSTM xf_infer_rnn
#define XF_RULE_GRU xf_infer_rnn
#define XF_RULE_QUANTIZE_LINEAR xf_infer_quantize
#define XF_RULE_DEQUANTIZE_LINEAR xf_infer_quantize
#define XF_RULE_NON_ZERO xf_infer_non_zero
#define XF_RULE_ROI_ALIGN xf_infer_roi_align
#define XF_RULE_NON_MAX_SUPPRESSION xf_infer_nms
#define XF_RULE_GRID_SAMPLE xf_infer_grid_sample
#define XF_RULE_COL2IM xf_infer_col2im
#define XF_RULE_CENTER_CROP_PAD xf_infer_center_crop_pad
#define XF_RULE_AFFINE_GRID xf_infer_affine_grid
#define XF_RULE_DEFORM_CONV xf_infer_deform_conv
#define XF_RULE_MAX_ROI_POOL xf_infer_max_roi_pool
#define XF_RULE_CAUSAL_CONV_WITH_STATE xf_infer_causal_conv
#define XF_RULE_LINEAR_ATTENTION xf_infer_linear_attention
#define XF_RULE_SIGN infer_same
#define XF_RULE_ROUND infer_same
#define XF_RULE_IS_INF infer_same
#define XF_RULE_TAN infer_same
#define XF_RULE_ATAN infer_same
#define XF_RULE_ASIN infer_same
#define XF_RULE_ACOS infer_same
#define XF_RULE_SINH infer_same
#define XF_RULE_COSH infer_same
#define XF_RULE_ASINH infer_same
#define XF_RULE_ACOSH infer_same
#define XF_RULE_ATANH infer_same
#define XF_RULE_SOFTSIGN infer_same
#define XF_RULE_THRESHOLDED_RELU infer_same
#define XF_RULE_SELU infer_same
#define XF_RULE_CELU infer_celu
#define XF_RULE_SHRINK infer_same
#define XF_RULE_MISH infer_same
#define XF_RULE_GELU infer_same
#define XF_RULE_MS_GELU infer_same
#define XF_RULE_MS_FUSED_CONV xf_infer_fused_conv
#define XF_RULE_MS_FUSED_GEMM xf_infer_gemm
#define XF_RULE_MS_FUSED_MATMUL xf_infer_fused_matmul
#define XF_RULE_MS_FAST_GELU xf_infer_bias_elementwise
#define XF_RULE_MS_BIAS_GELU xf_infer_bias_elementwise
#define XF_RULE_MS_QUICK_GELU infer_same
#define XF_RULE_MS_BIAS_ADD xf_infer_bias_elementwise
#define XF_RULE_MS_SKIP_LAYER_NORM xf_infer_skip_layer_norm
#define XF_RULE_MS_SKIP_SIMPLIFIED_LAYER_NORM xf_infer_skip_layer_norm
#define XF_RULE_SIMPLIFIED_LAYER_NORM xf_infer_layer_norm
#define XF_RULE_MS_ATTENTION xf_infer_ms_attention
#define XF_RULE_MS_QATTENTION xf_infer_ms_attention
#define XF_RULE_MS_DYNAMIC_QUANTIZE_LSTM xf_infer_rnn
#define XF_RULE_MS_MHA xf_infer_ms_mha
#define XF_RULE_MS_EMBED_LAYER_NORM xf_infer_ms_embed_layer_norm
#define XF_RULE_MS_ROTARY_EMB xf_infer_ms_rotary
#define XF_RULE_MS_QLINEAR_ADD xf_infer_ms_qbinary
#define XF_RULE_MS_QLINEAR_MUL xf_infer_ms_qbinary
#define XF_RULE_MS_QLINEAR_SIGMOID xf_infer_ms_qunary
#define XF_RULE_MS_QLINEAR_LEAKY_RELU xf_infer_ms_qunary
#define XF_RULE_MS_QLINEAR_GLOBAL_AVERAGE_POOL xf_infer_ms_qglobal_pool
#define XF_RULE_MS_QLINEAR_AVERAGE_POOL xf_infer_ms_qpool
#define XF_RULE_MS_QLINEAR_CONCAT xf_infer_ms_qconcat
#define XF_RULE_MS_QLINEAR_SOFTMAX xf_infer_ms_qsoftmax
#define XF_RULE_MS_QGEMM xf_infer_ms_qgemm
#define XF_RULE_MS_QUANTIZE_LINEAR xf_infer_ms_quantize
#define XF_RULE_MS_DEQUANTIZE_LINEAR xf_infer_ms_quantize
#define XF_RULE_MS_MATMUL_NBITS xf_infer_ms_matmul_nbits
#define XF_RULE_MS_GQA xf_infer_ms_gqa
#define XF_RULE_MS_MATMUL_INTEGER_TO_FLOAT xf_infer_ms_int_matmul_float
#define XF_RULE_MS_DYNAMIC_QUANTIZE_MATMUL xf_infer_ms_int_matmul_float
#define XF_RULE_MS_GATHER_BLOCK_QUANTIZED xf_infer_ms_gather_block_quantized
#define XF_RULE_PRELU infer_prelu
#define XF_RULE_MEAN infer_broadcast
#define XF_RULE_BIT_SHIFT infer_broadcast
#define XF_RULE_CAST_LIKE infer_same
#define XF_RULE_CONV_TRANSPOSE xf_infer_conv_transpose
#define XF_RULE_RNN xf_infer_rnn
#define XF_RULE_DYNAMIC_QUANTIZE_LINEAR xf_infer_dynamic_quantize
#define XF_RULE_MATMUL_INTEGER xf_infer_qmatmul
#define XF_RULE_CONV_INTEGER xf_infer_qconv
#define XF_RULE_QLINEAR_MATMUL xf_infer_qmatmul
#define XF_RULE_QLINEAR_CONV xf_infer_qconv
#define XF_RULE_TRILU xf_infer_trilu
#define XF_RULE_DET xf_infer_det
#define XF_RULE_ATTENTION xf_infer_attention
#define XF_RULE_RMS_NORM xf_infer_rms_norm
#define XF_RULE_ROTARY_EMB xf_infer_rotary
#define XF_RULE_TILE xf_infer_tile
#define XF_RULE_DEPTH_TO_SPACE xf_infer_depth_space
#define XF_RULE_SPACE_TO_DEPTH xf_infer_depth_space
#define XF_RULE_EYE_LIKE xf_infer_eye_like
#define XF_RULE_REVERSE_SEQUENCE xf_infer_reverse_sequence
#define XF_RULE_ONE_HOT xf_infer_one_hot
#define XF_RULE_COMPRESS xf_infer_compress
#define XF_RULE_EINSUM xf_infer_einsum
#define XF_RULE_UPSAMPLE xf_infer_upsample
#define XF_RULE_UNIQUE xf_infer_unique
#define XF_RULE_SCATTER xf_infer_scatter_elements
#define XF_RULE_CLIP infer_clip
#define XF_RULE_NOT infer_same
#define XF_RULE_CAST infer_same
#define XF_RULE_CONCAT xf_infer_concat
#define XF_RULE_SPLIT xf_infer_split
#define XF_RULE_TRANSPOSE xf_infer_transpose
#define XF_RULE_RESHAPE xf_infer_reshape
#define XF_RULE_FLATTEN xf_infer_flatten
#define XF_RULE_SQUEEZE xf_infer_squeeze
#define XF_RULE_UNSQUEEZE xf_infer_unsqueeze
#define XF_RULE_GATHER xf_infer_gather
#define XF_RULE_SLICE xf_infer_slice
#define XF_RULE_PAD xf_infer_pad
#define XF_RULE_EXPAND xf_infer_expand
#define XF_RULE_SHAPE xf_infer_shape_op
#define XF_RULE_SIZE xf_infer_size
#define XF_RULE_CONSTANT_OF_SHAPE xf_infer_constant_of_shape
#define XF_RULE_RANGE xf_infer_range
#define XF_RULE_IDENTITY infer_same
#define XF_RULE_DROPOUT infer_same
#define XF_RULE_MAX_POOL xf_infer_pool
#define XF_RULE_AVERAGE_POOL xf_infer_pool
#define XF_RULE_GLOBAL_AVERAGE_POOL xf_infer_global_pool
#define XF_RULE_GLOBAL_MAX_POOL xf_infer_global_pool
#define XF_RULE_MAX_UNPOOL xf_infer_max_unpool
#define XF_RULE_BATCH_NORM xf_infer_batch_norm
#define XF_RULE_LAYER_NORM xf_infer_layer_norm
#define XF_RULE_SOFTMAX xf_infer_softmax
#define XF_RULE_LOG_SOFTMAX xf_infer_softmax
#define XF_RULE_REDUCE_MEAN xf_infer_reduce
#define XF_RULE_REDUCE_SUM xf_infer_reduce
#define XF_RULE_REDUCE_MAX xf_infer_reduce
#define XF_RULE_REDUCE_MIN xf_infer_reduce
#define XF_RULE_REDUCE_PROD xf_infer_reduce
#define XF_RULE_REDUCE_L1 xf_infer_reduce
#define XF_RULE_REDUCE_L2 xf_infer_reduce
#define XF_RULE_REDUCE_LOG_SUM xf_infer_reduce
#define XF_RULE_REDUCE_LOG_SUM_EXP xf_infer_reduce
#define XF_RULE_REDUCE_SUM_SQUARE xf_infer_reduce
#define XF_RULE_ARG_MAX xf_infer_arg_reduce
#define XF_RULE_ARG_MIN xf_infer_arg_reduce
#define XF_RULE_HARDMAX xf_infer_softmax
#define XF_RULE_CUM_SUM xf_infer_cumsum
#define XF_RULE_INSTANCE_NORM xf_infer_instance_norm
#define XF_RULE_GROUP_NORM xf_infer_group_norm
#define XF_RULE_MEAN_VARIANCE_NORM xf_infer_mvn
#define XF_RULE_LRN xf_infer_lrn
#define XF_RULE_LP_NORM xf_infer_lp_norm
/* the sequence ops: xf_node_infer_shape calls xf_infer_sequence before
 * the dtype rules, which know tensors only */
#define XF_RULE_SEQUENCE_EMPTY xf_infer_sequence
#define XF_RULE_SEQUENCE_CONSTRUCT xf_infer_sequence
#define XF_RULE_SEQUENCE_INSERT xf_infer_sequence
#define XF_RULE_SEQUENCE_AT xf_infer_sequence
#define XF_RULE_SEQUENCE_ERASE xf_infer_sequence
#define XF_RULE_SEQUENCE_LENGTH xf_infer_sequence
#define XF_RULE_SPLIT_TO_SEQUENCE xf_infer_sequence
#define XF_RULE_CONCAT_FROM_SEQUENCE xf_infer_sequence
#define XF_RULE_OPTIONAL xf_infer_sequence
#define XF_RULE_OPTIONAL_HAS_ELEMENT xf_infer_sequence
#define XF_RULE_OPTIONAL_GET_ELEMENT xf_infer_sequence
#define XF_RULE_DFT xf_infer_dft
#define XF_RULE_STFT xf_infer_stft
#define XF_RULE_HANN_WINDOW xf_infer_window
#define XF_RULE_HAMMING_WINDOW xf_infer_window
#define XF_RULE_BLACKMAN_WINDOW xf_infer_window
#define XF_RULE_LP_POOL xf_infer_pool
#define XF_RULE_GLOBAL_LP_POOL xf_infer_global_pool
#define XF_RULE_BITWISE_AND infer_broadcast
#define XF_RULE_BITWISE_OR infer_broadcast
#define XF_RULE_BITWISE_XOR infer_broadcast
#define XF_RULE_BITWISE_NOT infer_same
#define XF_RULE_CUM_PROD xf_infer_cumsum
#define XF_RULE_SWISH infer_same
#define XF_RULE_MEL_WEIGHT_MATRIX xf_infer_mel_weight_matrix
#define XF_RULE_TENSOR_SCATTER xf_infer_tensor_scatter
#define XF_RULE_BIT_CAST infer_same
#define XF_RULE_SWIGLU xf_infer_swiglu
#define XF_RULE_RANDOM_NORMAL xf_infer_random
#define XF_RULE_RANDOM_UNIFORM xf_infer_random
#define XF_RULE_RANDOM_NORMAL_LIKE xf_infer_random
#define XF_RULE_RANDOM_UNIFORM_LIKE xf_infer_random
#define XF_RULE_BERNOULLI xf_infer_random
#define XF_RULE_MULTINOMIAL xf_infer_random
#define XF_RULE_AFFINE infer_same
#define XF_RULE_SCALE infer_same
#define XF_RULE_SCALED_TANH infer_same
#define XF_RULE_PARAMETRIC_SOFTPLUS infer_same
#define XF_RULE_IMAGE_SCALER xf_infer_image_scaler
#define XF_RULE_CROP xf_infer_crop

static const xf_infer_fn rules[XF_OP_COUNT] = {
#define XF_OP(id, onnx, min_in, max_in, n_out, flags) [XF_OP_##id] = XF_RULE_##id,
#include "ops.def"
#undef XF_OP
};

/* ------------------------------------------------------------ driver */

/* The node's structure, checked so that no rule can read out of bounds. */
static xf_status check_node(const xf_infer_ctx *c)
{
    const xf_node *n = c->node;
    const xf_op_info *info = xf_op_get_info(n->op);
    if (n->n_inputs < info->min_inputs || n->n_inputs > info->max_inputs)
        return xf_infer_fail(c, XF_ERR_INVALID, "has %d inputs; %s takes %d to %d", n->n_inputs,
                             info->onnx_name, info->min_inputs, info->max_inputs);
    for (int i = 0; i < n->n_inputs; i++) {
        int v = n->inputs[i];
        if (v < -1 || v >= c->g->n_values)
            return xf_infer_fail(c, XF_ERR_INVALID, "input %d refers to no value", i);
        if (v < 0 && i < info->min_inputs)
            return xf_infer_fail(c, XF_ERR_INVALID, "required input %d is missing", i);
        if (v >= 0 && xf_infer_shape(c, i)->ndim > XF_MAX_DIMS)
            return xf_infer_fail(c, XF_ERR_UNSUPPORTED, "input %d has rank %d; xflow handles at "
                                 "most %d", i, xf_infer_shape(c, i)->ndim, XF_MAX_DIMS);
    }
    if (n->n_outputs < 1)
        return xf_infer_fail(c, XF_ERR_INVALID, "has no outputs");
    for (int k = 0; k < n->n_outputs; k++)
        if (n->outputs[k] < -1 || n->outputs[k] >= c->g->n_values)
            return xf_infer_fail(c, XF_ERR_INVALID, "output %d refers to no value", k);
    return XF_OK;
}

/* st, unless an output's shape has a dim below -1 (unknown) or dims
 * whose product (0s aside) int64 does not hold: an empty output may have
 * large dims, but their strides and sizes must never overflow. */
static xf_status checked_outputs(xf_infer_ctx *c, xf_status st)
{
    for (int k = 0; st == XF_OK && k < c->node->n_outputs; k++) {
        const xf_shape *s = c->node->outputs[k] >= 0 ? &c->g->values[c->node->outputs[k]].shape : NULL;
        uint64_t p = 1;
        for (int d = 0; s && d < s->ndim && st == XF_OK; d++) {
            uint64_t dim = s->dims[d] > 0 ? (uint64_t)s->dims[d] : 1;
            if (s->dims[d] < -1)
                st = xf_infer_fail(c, XF_ERR_INVALID, "output %d would have dim %" PRId64, k, s->dims[d]);
            else if (p > ((uint64_t)1 << 62) / dim)
                st = xf_infer_fail(c, XF_ERR_INVALID, "output %d's dims multiply to more than 2^62", k);
            p *= dim;
        }
    }
    return st;
}

xf_status xf_node_infer_shape(xf_graph *g, int node, int64_t opset,
                              const xf_tensor *const *input_values, xf_error *err)
{
    if (node < 0 || node >= g->n_nodes)
        return xf_error_set(err, XF_ERR_INVALID, "node index %d is out of range (%d nodes)", node,
                            g->n_nodes);
    xf_infer_ctx c = {g, node, &g->nodes[node], opset, input_values, err};
    if (c.node->op == XF_OP_OPAQUE) {
        /* its outputs keep the dtypes and shapes of value_info; control
         * flow's untyped ones take their subgraphs' */
        xf_infer_flow_dtypes(&c);
        return XF_OK;
    }
    if ((unsigned)c.node->op > XF_OP_OPAQUE)
        return xf_error_set(err, XF_ERR_INVALID, "node #%d has no valid op kind (%d)", node,
                            (int)c.node->op);
    xf_status st = check_node(&c);
    /* kinds, element types and shapes at once; unknown element shapes are
     * the rule's to handle */
    if (st == XF_OK && (xf_op_get_info(c.node->op)->flags & XF_OPF_SEQ))
        return checked_outputs(&c, rules[c.node->op](&c));
    /* Identity passes a sequence through (its rule then copies its type) */
    if (st == XF_OK && c.node->op == XF_OP_IDENTITY && c.node->outputs[0] >= 0)
        g->values[c.node->outputs[0]].kind = g->values[c.node->inputs[0]].kind;
    if (st == XF_OK)
        st = infer_dtypes(&c);
    if (st != XF_OK)
        return st;
    /* Behind an opaque node without value_info nothing is known; outputs
     * keep what value_info gave them (or stay unknown). */
    for (int i = 0; i < c.node->n_inputs; i++)
        if (xf_infer_has(&c, i) && xf_infer_shape(&c, i)->ndim < 0)
            return XF_OK;
    return checked_outputs(&c, rules[c.node->op](&c));
}

xf_status xf_graph_infer_shapes(xf_graph *g, int64_t opset, xf_error *err)
{
    for (int i = 0; i < g->n_nodes; i++) {
        xf_status st = xf_node_infer_shape(g, i, opset, NULL, err);
        if (st != XF_OK)
            return st;
    }
    return XF_OK;
}
