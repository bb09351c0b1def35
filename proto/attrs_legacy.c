/* ONNX attributes <-> xf_attrs for the experimental ops of opsets 1 to 9,
 * which opset 10 removed and ONNX Runtime still runs:
 *
 *   Affine              alpha beta
 *   Scale               scale -> alpha
 *   ScaledTanh, ParametricSoftplus  alpha beta (default 1, as ONNX Runtime
 *                       reads them; written always)
 *   ImageScaler         scale -> alpha; bias -> value (attrs_import.c reads
 *                       it, a float tensor of one value per channel)
 *   Crop                border (left, top, right, bottom; required) ->
 *                       pads[0..3] (has_pads); scale (height, width) ->
 *                       kernel[0..1] (n_spatial 2)
 *
 * In a model of opset 10 or later these names are not these ops: the node
 * stays opaque (model_import.c asks xfp_op_removed).
 *
 * And the attributes of opsets 1 to 6 that later opsets dropped, where they
 * mean what xflow models: `broadcast` of the binary ops and Gemm (numpy's
 * rule, B's dims being the last of A's, when no `axis` is given or the
 * `axis` puts them there, as the inputs' ranks show at import; another
 * `axis` keeps the node opaque) and BatchNormalization's `is_test` 1; a
 * model of such an opset is written with `broadcast` and `is_test`. */
#include "attrs_writer.h"

#include <limits.h>
#include <string.h>

int xfp_op_removed(xf_op op)
{
    switch (op) {
    case XF_OP_AFFINE: case XF_OP_SCALE: case XF_OP_SCALED_TANH: case XF_OP_PARAMETRIC_SOFTPLUS:
    case XF_OP_IMAGE_SCALER: case XF_OP_CROP:
        return 10;
    default:
        return INT_MAX;
    }
}

bool xfp_broadcast_flag_op(xf_op op)
{
    switch (op) {
    case XF_OP_ADD: case XF_OP_SUB: case XF_OP_MUL: case XF_OP_DIV: case XF_OP_POW: case XF_OP_AND: case XF_OP_OR:
    case XF_OP_XOR: case XF_OP_EQUAL: case XF_OP_GREATER: case XF_OP_LESS: case XF_OP_GEMM:
        return true;
    default:
        return false;
    }
}

int xfp_before7_attr_import(xf_op op, const Onnx__AttributeProto *at, const xfp_attr_ctx *ctx, char *why,
                            size_t why_len)
{
    int v;
    if (strcmp(at->name, "broadcast") == 0 && xfp_broadcast_flag_op(op)) /* numpy's rule without an axis */
        return xfp_attr_int32(at, 0, 1, &v, why, why_len);
    if (strcmp(at->name, "axis") == 0 && xfp_broadcast_flag_op(op) && op != XF_OP_GEMM) {
        /* B's dims from axis on: numpy's rule where they are A's last */
        int a = ctx->in_ranks[0], b = ctx->in_ranks[1];
        if (!xfp_attr_int32(at, -INT32_MAX, INT32_MAX, &v, why, why_len))
            return false;
        return (a >= 0 && b >= 0 && v == a - b) ||
               xfp_attr_refuse(why, why_len, "attribute '%s' aligns B other than at A's end (or the ranks are "
                               "not known)", at->name);
    }
    if (strcmp(at->name, "is_test") == 0 && op == XF_OP_BATCH_NORM) {
        if (!xfp_attr_int32(at, 0, 1, &v, why, why_len))
            return false;
        return v == 1 || xfp_attr_refuse(why, why_len, "attribute '%s' is 0 (training), which xflow does not model",
                                         at->name);
    }
    return -1;
}

void xfp_write_before7(writer *w, const xf_node *n)
{
    if (xfp_broadcast_flag_op(n->op) && n->n_inputs > 2 - (n->op != XF_OP_GEMM))
        add_int(w, "broadcast", 1);
    if (n->op == XF_OP_BATCH_NORM)
        add_int(w, "is_test", 1);
}

bool xfp_legacy_attr_import(xf_op op, const Onnx__AttributeProto *at, xf_attrs *a, char *why, size_t why_len)
{
    const char *name = at->name;
    bool two = op == XF_OP_AFFINE || op == XF_OP_SCALED_TANH || op == XF_OP_PARAMETRIC_SOFTPLUS;
#define A(s) (strcmp(name, s) == 0)
    if (two && A("alpha"))
        return xfp_attr_float(at, &a->alpha, why, why_len);
    if (two && A("beta"))
        return xfp_attr_float(at, &a->beta, why, why_len);
    if ((op == XF_OP_SCALE || op == XF_OP_IMAGE_SCALER) && A("scale"))
        return xfp_attr_float(at, &a->alpha, why, why_len);
    if (op == XF_OP_CROP && (A("border") || A("scale"))) {
        bool border = A("border");
        int n = 0, want = border ? 4 : 2;
        if (!xfp_attr_list(at, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS, at->n_ints, at->ints, sizeof(int64_t),
                           border ? a->pads : a->kernel, (size_t)want, &n, why, why_len))
            return false;
        if (n != want)
            return xfp_attr_refuse(why, why_len, border ? "attribute '%s' does not have 4 values"
                                                        : "attribute '%s' does not have 2 values", name);
        if (border)
            a->has_pads = true;
        else
            a->n_spatial = 2;
        return true;
    }
#undef A
    return xfp_attr_refuse(why, why_len, "attribute '%s' is not modelled", name);
}

bool xfp_legacy_attrs_finish(xf_op op, const xf_attrs *a, char *why, size_t why_len)
{
    if (op == XF_OP_CROP && !a->has_pads)
        return xfp_attr_refuse(why, why_len, "no border attribute", NULL);
    return true;
}

void xfp_write_legacy(writer *w, const xf_node *n, const xf_attrs *d)
{
    const xf_attrs *a = &n->attrs;
    switch (n->op) {
    case XF_OP_SCALED_TANH:
    case XF_OP_PARAMETRIC_SOFTPLUS:
        add_float(w, "alpha", a->alpha);
        add_float(w, "beta", a->beta);
        break;
    case XF_OP_AFFINE:
        if (a->alpha != d->alpha)
            add_float(w, "alpha", a->alpha);
        if (a->beta != d->beta)
            add_float(w, "beta", a->beta);
        break;
    case XF_OP_SCALE:
    case XF_OP_IMAGE_SCALER:
        if (a->alpha != d->alpha)
            add_float(w, "scale", a->alpha);
        if (n->op == XF_OP_IMAGE_SCALER && a->value)
            add_floats(w, "bias", (const float *)a->value->data, (int)xf_tensor_numel(a->value));
        break;
    case XF_OP_CROP:
        add_ints(w, "border", a->pads, 4);
        if (a->n_spatial == 2)
            add_ints(w, "scale", a->kernel, 2);
        break;
    default:
        break;
    }
}
