/* ONNX attributes -> xf_attrs for LpPool, GlobalLpPool, CumProd and
 * TensorScatter:
 *
 *   LpPool (2+)       p->lp_p (1 to XF_LP_POOL_MAX_P; opset 1's float p stays
 *                     opaque)
 *                     and AveragePool's window (attrs_import.c) without
 *                     count_include_pad; dilations and ceil_mode from
 *                     opset 18
 *   GlobalLpPool (2+) p->lp_p
 *   CumProd           exclusive reverse (0 or 1) -> cumsum_*
 *   TensorScatter     axis; mode (linear, or circular: pad_mode XF_PAD_WRAP)
 *
 * Anything else keeps the node opaque. */
#include "proto_internal.h"

#include <string.h>

int xfp_small_attr_import(xf_op op, int64_t opset, const Onnx__AttributeProto *at, xf_attrs *a, char *why,
                          size_t why_len)
{
    const char *name = at->name;
#define A(s) (strcmp(name, s) == 0)
    bool lp = op == XF_OP_LP_POOL || op == XF_OP_GLOBAL_LP_POOL;
    if (lp && A("p"))
        return xfp_attr_int32(at, 1, XF_LP_POOL_MAX_P, &a->lp_p, why, why_len);
    if (op == XF_OP_LP_POOL && (A("dilations") || A("ceil_mode")) && opset < 18)
        return xfp_attr_refuse(why, why_len, "attribute '%s' before opset 18", name);
    if (op == XF_OP_LP_POOL && !A("count_include_pad") && !A("storage_order"))
        return -1;
    if (op == XF_OP_CUM_PROD && A("exclusive"))
        return xfp_attr_int32(at, 0, 1, &a->cumsum_exclusive, why, why_len);
    if (op == XF_OP_CUM_PROD && A("reverse"))
        return xfp_attr_int32(at, 0, 1, &a->cumsum_reverse, why, why_len);
    if (op == XF_OP_TENSOR_SCATTER && A("axis"))
        return xfp_attr_int(at, INT64_MIN, INT64_MAX, &a->axis, why, why_len);
    if (op == XF_OP_TENSOR_SCATTER && A("mode")) {
        static const char *const modes[] = {"linear", "circular"};
        int circular;
        if (!xfp_attr_enum(at, modes, 2, &circular, why, why_len))
            return false;
        a->pad_mode = circular ? XF_PAD_WRAP : XF_PAD_CONSTANT;
        return true;
    }
#undef A
    return xfp_attr_refuse(why, why_len, "attribute '%s' is not modelled", name);
}

int xfp_op_since(xf_op op)
{
    switch (op) {
    case XF_OP_TENSOR_SCATTER: return 24;
    case XF_OP_BIT_CAST: return 26;
    case XF_OP_SWIGLU: return 28;
    case XF_OP_MULTINOMIAL: return 7;
    case XF_OP_BERNOULLI: return 15;
    default: return 0;
    }
}
