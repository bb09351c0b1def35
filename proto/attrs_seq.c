/* ONNX attributes -> xf_attrs for the sequence ops and Optional:
 *
 *   SequenceEmpty   dtype->to (default float)
 *   SplitToSequence axis  keepdims
 *   ConcatFromSequence  axis (required: attrs_import.c checks has_axis)  new_axis
 *   Optional        type->opt_type (1 + the kind held), to, opt_shape
 *
 * Anything else keeps the node opaque. */
#include "proto_internal.h"

#include <string.h>

/* Optional's type: the tensor or sequence type it would hold (kind, `to`
 * and opt_shape). */
static bool optional_type(const Onnx__AttributeProto *at, xf_attrs *a, char *why, size_t why_len)
{
    static const xfp_symbols none;
    xf_value_kind kind;
    if (strcmp(at->name, "type") != 0)
        return xfp_attr_refuse(why, why_len, "attribute '%s' is not modelled", at->name);
    if (!at->has_type || at->type != ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TYPE_PROTO || !at->tp)
        return xfp_attr_refuse(why, why_len, "attribute '%s' is not a type", at->name);
    if (xfp_container_type(at->tp, &kind, &a->to, &a->opt_shape)) {
        if (kind != XF_VK_SEQUENCE)
            return xfp_attr_refuse(why, why_len, "attribute '%s' is an optional type; optionals do not nest",
                                   at->name);
    } else {
        xfp_declared_type(at->tp, &none, &a->to, &a->opt_shape);
    }
    if (a->to == XF_DT_UNDEFINED)
        return xfp_attr_refuse(why, why_len, "attribute '%s' is not a tensor or sequence type xflow knows", at->name);
    a->opt_type = 1 + (int)kind;
    return true;
}

bool xfp_seq_attr_import(xf_op op, const Onnx__AttributeProto *at, xf_attrs *a, bool *has_axis, char *why,
                         size_t why_len)
{
    const char *name = at->name;
    if (op == XF_OP_OPTIONAL)
        return optional_type(at, a, why, why_len);
    if (op == XF_OP_SEQUENCE_EMPTY && strcmp(name, "dtype") == 0)
        return xfp_attr_dtype(at, &a->to, why, why_len);
    if ((op == XF_OP_SPLIT_TO_SEQUENCE || op == XF_OP_CONCAT_FROM_SEQUENCE) && strcmp(name, "axis") == 0)
        return (*has_axis = xfp_attr_int(at, INT64_MIN, INT64_MAX, &a->axis, why, why_len));
    if (op == XF_OP_SPLIT_TO_SEQUENCE && strcmp(name, "keepdims") == 0)
        return xfp_attr_int32(at, -2147483647, 2147483647, &a->keepdims, why, why_len);
    if (op == XF_OP_CONCAT_FROM_SEQUENCE && strcmp(name, "new_axis") == 0)
        return xfp_attr_int32(at, -2147483647, 2147483647, &a->new_axis, why, why_len);
    return xfp_attr_refuse(why, why_len, "attribute '%s' is not modelled", name);
}
