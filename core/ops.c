/* The operator table, built from ops.def, and default attributes. */
#include "xf_core.h"

#include <string.h>

static const xf_op_info op_table[XF_OP_COUNT + 1] = {
#define XF_OP(id, onnx, min_in, max_in, n_out, flags) [XF_OP_##id] = {onnx, min_in, max_in, n_out, flags},
#include "ops.def"
#undef XF_OP
    [XF_OP_OPAQUE] = {"<opaque>", 0, 1 << 30, -1, 0},
};

const xf_op_info *xf_op_get_info(xf_op op)
{
    if ((unsigned)op > XF_OP_OPAQUE)
        return &op_table[XF_OP_OPAQUE];
    return &op_table[op];
}

const char *xf_op_name(xf_op op) { return xf_op_get_info(op)->onnx_name; }

xf_op xf_op_from_onnx(const char *op_type)
{
    if (!op_type)
        return XF_OP_OPAQUE;
    for (int i = 0; i < XF_OP_COUNT; i++)
        if (strcmp(op_table[i].onnx_name, op_type) == 0)
            return (xf_op)i;
    return XF_OP_OPAQUE;
}

void xf_attrs_default(xf_op op, xf_attrs *a)
{
    memset(a, 0, sizeof *a);
    for (int i = 0; i < XF_MAX_SPATIAL; i++) {
        a->strides[i] = 1;
        a->dilations[i] = 1;
    }
    a->group = 1;
    a->keepdims = 1;
    a->alpha = 1.0f;
    a->beta = 1.0f;
    a->epsilon = 1e-5f;
    a->end = INT64_MAX;
    a->clip_min = -3.402823466e+38f;
    a->clip_max = 3.402823466e+38f;
    switch (op) {
    case XF_OP_SOFTMAX:
    case XF_OP_LOG_SOFTMAX:
    case XF_OP_LAYER_NORM:
    case XF_OP_TOP_K:
        a->axis = -1;
        break;
    case XF_OP_FLATTEN:
        a->axis = 1;
        break;
    case XF_OP_LEAKY_RELU:
        a->alpha = 0.01f;
        break;
    case XF_OP_HARD_SIGMOID:
        a->alpha = 0.2f;
        a->beta = 0.5f;
        break;
    default:
        break;
    }
}
