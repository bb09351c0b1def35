/* Shape and dtype rules of the random ops: RandomNormal and RandomUniform
 * (the shape attribute), RandomNormalLike and RandomUniformLike (the
 * input's shape), Bernoulli (the probabilities' shape) and Multinomial
 * ([batch_size, sample_size] from [batch_size, class_size]). */
#include "shape_infer_impl.h"

#include <inttypes.h>

/* The types ONNX lets a random draw be made in (float16, float, double;
 * bfloat16 too from opset 22). */
static bool random_float(xf_dtype t)
{
    return t == XF_DT_FLOAT || t == XF_DT_DOUBLE || t == XF_DT_FLOAT16 || t == XF_DT_BFLOAT16;
}

/* Bernoulli's output: a number or a boolean (its T2). */
static bool bernoulli_out(xf_dtype t)
{
    return random_float(t) || t == XF_DT_BOOL || xf_dtype_is_signed_int(t) || xf_dtype_is_unsigned(t);
}

xf_status xf_infer_random_dtype(xf_infer_ctx *c, xf_dtype *out)
{
    const xf_node *n = c->node;
    xf_dtype in = n->n_inputs > 0 ? xf_infer_dtype(c, 0) : XF_DT_UNDEFINED, to = n->attrs.to;
    switch (n->op) {
    case XF_OP_RANDOM_NORMAL: case XF_OP_RANDOM_UNIFORM:
        *out = to != XF_DT_UNDEFINED ? to : XF_DT_FLOAT;
        break;
    case XF_OP_RANDOM_NORMAL_LIKE: case XF_OP_RANDOM_UNIFORM_LIKE:
        *out = to != XF_DT_UNDEFINED ? to : in;
        break;
    case XF_OP_BERNOULLI:
        if (in != XF_DT_UNDEFINED && !random_float(in))
            return xf_infer_fail(c, XF_ERR_INVALID, "input must be a floating-point tensor, got %s", xf_dtype_name(in));
        *out = to != XF_DT_UNDEFINED ? to : in;
        if (*out != XF_DT_UNDEFINED && !bernoulli_out(*out))
            return xf_infer_fail(c, XF_ERR_INVALID, "dtype %s is not a numeric or boolean type", xf_dtype_name(*out));
        return XF_OK;
    default: /* Multinomial */
        if (in != XF_DT_UNDEFINED && !random_float(in))
            return xf_infer_fail(c, XF_ERR_INVALID, "input must be a floating-point tensor, got %s", xf_dtype_name(in));
        *out = to != XF_DT_UNDEFINED ? to : XF_DT_INT32;
        if (*out != XF_DT_INT32 && *out != XF_DT_INT64)
            return xf_infer_fail(c, XF_ERR_INVALID, "dtype %s is neither int32 nor int64", xf_dtype_name(*out));
        return XF_OK;
    }
    if (*out != XF_DT_UNDEFINED && !random_float(*out))
        return xf_infer_fail(c, XF_ERR_INVALID, "dtype %s is not float16, float, double or bfloat16",
                             xf_dtype_name(*out));
    return XF_OK;
}

xf_status xf_infer_random(xf_infer_ctx *c)
{
    const xf_node *n = c->node;
    const xf_attrs *a = &n->attrs;
    if (n->op == XF_OP_RANDOM_NORMAL || n->op == XF_OP_RANDOM_UNIFORM) {
        if (!a->rand_has_shape)
            return xf_infer_fail(c, XF_ERR_INVALID, "has no shape attribute");
        for (int i = 0; i < a->rand_shape.ndim; i++)
            if (a->rand_shape.dims[i] < 0)
                return xf_infer_fail(c, XF_ERR_INVALID, "shape %s has a negative dim",
                                     xf_infer_ints_text(a->rand_shape.dims, a->rand_shape.ndim).s);
        /* every element is 8 bytes at most: a count whose bytes overflow is no tensor */
        if (xf_infer_dims_product(a->rand_shape.dims, a->rand_shape.ndim) > INT64_MAX / 8)
            return xf_infer_fail(c, XF_ERR_INVALID, "shape %s has too many elements",
                                 xf_infer_ints_text(a->rand_shape.dims, a->rand_shape.ndim).s);
        xf_infer_set(c, 0, &a->rand_shape);
        return XF_OK;
    }
    const xf_shape *x = xf_infer_shape(c, 0);
    if (n->op != XF_OP_MULTINOMIAL) {
        xf_infer_set(c, 0, x);
        return XF_OK;
    }
    if (x->ndim != 2)
        return xf_infer_fail(c, XF_ERR_INVALID, "input %s must be 2-D [batch_size, class_size]",
                             xf_infer_text(x).s);
    if (a->sample_size < 1 || a->sample_size > INT64_MAX / 8)
        return xf_infer_fail(c, XF_ERR_INVALID, "sample_size %" PRId64 " is out of range", a->sample_size);
    if (x->dims[1] == 0)
        return xf_infer_fail(c, XF_ERR_INVALID, "input %s has no classes to draw from", xf_infer_text(x).s);
    int64_t dims[2] = {x->dims[0], a->sample_size};
    if (x->dims[0] > 0 && xf_infer_dims_product(dims, 2) > INT64_MAX / 8)
        return xf_infer_fail(c, XF_ERR_INVALID, "output [%" PRId64 ",%" PRId64 "] has too many elements", dims[0],
                             dims[1]);
    xf_shape out = xf_shape_make(2, dims);
    xf_infer_set(c, 0, &out);
    return XF_OK;
}
