/* Shape inference of ONNX's sequence ops (SequenceEmpty, SequenceConstruct,
 * SequenceInsert, SequenceAt, SequenceErase, SequenceLength,
 * SplitToSequence, ConcatFromSequence) and optional ops (Optional,
 * OptionalHasElement, OptionalGetElement).  One rule sets the kinds, element
 * types and shapes of their outputs.  A sequence's shape is the one every
 * element has; where entries may differ, or their number is only known at
 * run time (ConcatFromSequence), shapes stay unknown and the graph runs in
 * dynamic mode. */
#include "shape_infer_impl.h"

static const xf_shape unknown_shape = {.ndim = -1};

/* The kind of input i: the run-time value's when given, else the value's. */
static xf_value_kind kind_of(const xf_infer_ctx *c, int i)
{
    const xf_tensor *t = c->input_values ? c->input_values[i] : NULL;
    return t ? xf_tensor_kind(t) : c->g->values[c->node->inputs[i]].kind;
}

static void set_output(xf_infer_ctx *c, xf_value_kind kind, xf_dtype dtype, const xf_shape *shape)
{
    int v = c->node->outputs[0];
    if (v < 0)
        return;
    c->g->values[v].kind = kind;
    c->g->values[v].dtype = dtype;
    c->g->values[v].shape = *shape;
}

/* Whether input i's kind is known: a run-time value, a graph input or
 * initializer, or what a known op makes (an opaque node's outputs are
 * known at run time only). */
static bool kind_known(const xf_infer_ctx *c, int i)
{
    int v = c->node->inputs[i];
    return (c->input_values && c->input_values[i]) || c->g->values[v].producer < 0 ||
           c->g->nodes[c->g->values[v].producer].op != XF_OP_OPAQUE;
}

/* Fails when input i is known to be of another kind than `kind`. */
static xf_status require_kind(const xf_infer_ctx *c, int i, xf_value_kind kind)
{
    if (!kind_known(c, i) || kind_of(c, i) == kind)
        return XF_OK;
    return xf_infer_fail(c, XF_ERR_INVALID, "input %d ('%s') must be a %s, not a %s", i,
                         c->g->values[c->node->inputs[i]].name, xf_kind_name(kind), xf_kind_name(kind_of(c, i)));
}

/* The common element type of inputs [first, last): undefined where none
 * is known, an error where two differ. */
static xf_status element_dtype(const xf_infer_ctx *c, int first, int last, xf_dtype *out)
{
    *out = XF_DT_UNDEFINED;
    for (int i = first; i < last; i++) {
        xf_dtype d = xf_infer_dtype(c, i);
        if (d != XF_DT_UNDEFINED && *out != XF_DT_UNDEFINED && d != *out)
            return xf_infer_fail(c, XF_ERR_INVALID, "mixes element types %s and %s", xf_dtype_name(*out),
                                 xf_dtype_name(d));
        if (d != XF_DT_UNDEFINED)
            *out = d;
    }
    return XF_OK;
}

/* The shape shared by a and b, else unknown. */
static xf_shape common(const xf_shape *a, const xf_shape *b)
{
    return a->ndim >= 0 && xf_shape_equal(a, b) ? *a : unknown_shape;
}

/* SplitToSequence: the pieces' common shape, when the split says it. */
static xf_status split_shape(xf_infer_ctx *c, xf_shape *out)
{
    const xf_shape *in = xf_infer_shape(c, 0);
    *out = unknown_shape;
    if (in->ndim < 0)
        return XF_OK;
    int axis;
    xf_status st = xf_infer_axis(c, "axis", c->node->attrs.axis, in->ndim, false, &axis);
    if (st != XF_OK)
        return st;
    int64_t dim = in->dims[axis], piece = 1;
    bool keep = xf_infer_has(c, 1) || c->node->attrs.keepdims != 0; /* keepdims: without split only */
    if (xf_infer_has(c, 1)) {
        const xf_tensor *split = xf_infer_value(c, 1);
        if (!split || split->is_sequence || split->shape.ndim > 1)
            return XF_OK;
        int64_t n = xf_tensor_numel(split);
        if (n < 1)
            return XF_OK;
        piece = xf_tensor_get_i64(split, 0);
        for (int64_t i = 1; i < n; i++)
            if (xf_tensor_get_i64(split, i) != piece)
                return XF_OK;
        if (split->shape.ndim == 0 && piece > 0 && dim % piece != 0)
            return XF_OK; /* the last piece is shorter */
    }
    *out = *in;
    out->dims[axis] = piece;
    if (!keep) {
        out->ndim--;
        for (int d = axis; d < out->ndim; d++)
            out->dims[d] = out->dims[d + 1];
    }
    return XF_OK;
}

/* Optional, OptionalHasElement, OptionalGetElement. */
static xf_status infer_optional(xf_infer_ctx *c)
{
    const xf_node *n = c->node;
    bool has = n->n_inputs > 0 && xf_infer_has(c, 0);
    xf_value_kind in = has ? kind_of(c, 0) : XF_VK_TENSOR;
    bool known = has && kind_known(c, 0);
    if (n->op == XF_OP_OPTIONAL) {
        if (!has) {
            if (!n->attrs.opt_type)
                return xf_infer_fail(c, XF_ERR_INVALID, "has no input and no 'type' attribute");
            set_output(c, n->attrs.opt_type == 1 + XF_VK_SEQUENCE ? XF_VK_OPTIONAL_SEQUENCE : XF_VK_OPTIONAL_TENSOR,
                       n->attrs.to, &n->attrs.opt_shape);
            return XF_OK;
        }
        if (known && xf_kind_is_optional(in))
            return xf_infer_fail(c, XF_ERR_INVALID, "input 0 ('%s') is an optional; optionals do not nest",
                                 c->g->values[n->inputs[0]].name);
        set_output(c, in == XF_VK_SEQUENCE ? XF_VK_OPTIONAL_SEQUENCE : XF_VK_OPTIONAL_TENSOR, xf_infer_dtype(c, 0),
                   xf_infer_shape(c, 0));
        return XF_OK;
    }
    if (!has && n->op == XF_OP_OPTIONAL_GET_ELEMENT)
        return xf_infer_fail(c, XF_ERR_INVALID, "input 0 is missing");
    if (known && !xf_kind_is_optional(in) && c->opset < 18) /* plain inputs: opset 18 */
        return xf_infer_fail(c, XF_ERR_INVALID, "input 0 ('%s') is a %s; before opset 18 it must be an optional",
                             c->g->values[n->inputs[0]].name, xf_kind_name(in));
    if (n->op == XF_OP_OPTIONAL_HAS_ELEMENT)
        set_output(c, XF_VK_TENSOR, XF_DT_BOOL, &(xf_shape){.ndim = 0});
    else
        set_output(c, xf_kind_content(in), xf_infer_dtype(c, 0), xf_infer_shape(c, 0));
    return XF_OK;
}

xf_status xf_infer_sequence(xf_infer_ctx *c)
{
    const xf_node *n = c->node;
    xf_dtype dt = XF_DT_UNDEFINED;
    xf_shape shape = unknown_shape;
    xf_status st = XF_OK;
    switch (n->op) {
    case XF_OP_OPTIONAL:
    case XF_OP_OPTIONAL_HAS_ELEMENT:
    case XF_OP_OPTIONAL_GET_ELEMENT:
        return infer_optional(c);
    case XF_OP_SEQUENCE_EMPTY:
        if ((unsigned)n->attrs.to >= XF_DT_COUNT_ || xf_dtype_size(n->attrs.to) == 0)
            return xf_infer_fail(c, XF_ERR_UNSUPPORTED, "dtype %d is not an element type xflow runs",
                                 (int)n->attrs.to);
        set_output(c, XF_VK_SEQUENCE, n->attrs.to, &shape);
        return XF_OK;
    case XF_OP_SEQUENCE_CONSTRUCT:
        for (int i = 0; i < n->n_inputs && st == XF_OK; i++)
            st = require_kind(c, i, XF_VK_TENSOR);
        if (st == XF_OK)
            st = element_dtype(c, 0, n->n_inputs, &dt);
        shape = *xf_infer_shape(c, 0);
        for (int i = 1; i < n->n_inputs; i++)
            shape = common(&shape, xf_infer_shape(c, i));
        set_output(c, XF_VK_SEQUENCE, dt, &shape);
        return st;
    case XF_OP_SEQUENCE_INSERT:
    case XF_OP_SEQUENCE_ERASE:
    case XF_OP_SEQUENCE_AT:
    case XF_OP_SEQUENCE_LENGTH:
    case XF_OP_CONCAT_FROM_SEQUENCE:
        st = require_kind(c, 0, XF_VK_SEQUENCE);
        break;
    case XF_OP_SPLIT_TO_SEQUENCE:
        st = require_kind(c, 0, XF_VK_TENSOR);
        break;
    default:
        return xf_infer_fail(c, XF_ERR_INVALID, "is not a sequence op");
    }
    for (int i = 1; i < n->n_inputs && st == XF_OK; i++)
        if (xf_infer_has(c, i))
            st = require_kind(c, i, XF_VK_TENSOR);
    if (st != XF_OK)
        return st;
    switch (n->op) {
    case XF_OP_SEQUENCE_INSERT:
        st = element_dtype(c, 0, 2, &dt);
        shape = common(xf_infer_shape(c, 0), xf_infer_shape(c, 1));
        set_output(c, XF_VK_SEQUENCE, dt, &shape);
        break;
    case XF_OP_SEQUENCE_ERASE:
        set_output(c, XF_VK_SEQUENCE, xf_infer_dtype(c, 0), xf_infer_shape(c, 0));
        break;
    case XF_OP_SEQUENCE_AT: {
        const xf_tensor *seq = xf_infer_value(c, 0), *pos = xf_infer_value(c, 1);
        shape = *xf_infer_shape(c, 0);
        if (seq && seq->is_sequence && pos && xf_tensor_numel(pos) == 1) {
            int64_t p = xf_tensor_get_i64(pos, 0);
            p = p < 0 ? p + seq->n_items : p;
            if (p >= 0 && p < seq->n_items)
                shape = seq->items[p]->shape;
        }
        set_output(c, XF_VK_TENSOR, xf_infer_dtype(c, 0), &shape);
        break;
    }
    case XF_OP_SEQUENCE_LENGTH:
        set_output(c, XF_VK_TENSOR, XF_DT_INT64, &(xf_shape){.ndim = 0});
        break;
    case XF_OP_SPLIT_TO_SEQUENCE:
        st = split_shape(c, &shape);
        set_output(c, XF_VK_SEQUENCE, xf_infer_dtype(c, 0), &shape);
        break;
    case XF_OP_CONCAT_FROM_SEQUENCE: /* its extent along axis is the run's */
        set_output(c, XF_VK_TENSOR, xf_infer_dtype(c, 0), &shape);
        break;
    default:
        break;
    }
    return st;
}
