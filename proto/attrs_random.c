/* ONNX attributes <-> xf_attrs for the random ops:
 *
 *   RandomNormal, RandomNormalLike    mean scale -> rand_a rand_b
 *   RandomUniform, RandomUniformLike  low high -> rand_a rand_b
 *   all of them                       dtype -> to; seed -> rand_seed
 *                                     (rand_has_seed)
 *   RandomNormal, RandomUniform       shape -> rand_shape (rand_has_shape;
 *                                     its absence is the shape rule's error)
 *   Multinomial                       sample_size
 *
 * Anything else (a shape of more dims than xflow holds, an attribute of
 * the wrong type) keeps the node opaque. */
#include "attrs_writer.h"

#include <string.h>

bool xfp_random_attr_import(xf_op op, const Onnx__AttributeProto *at, xf_attrs *a, char *why, size_t why_len)
{
    const char *name = at->name;
    bool normal = op == XF_OP_RANDOM_NORMAL || op == XF_OP_RANDOM_NORMAL_LIKE;
    bool uniform = op == XF_OP_RANDOM_UNIFORM || op == XF_OP_RANDOM_UNIFORM_LIKE;
#define A(s) (strcmp(name, s) == 0)
    if (A("dtype"))
        return xfp_attr_dtype(at, &a->to, why, why_len);
    if (A("seed"))
        return (a->rand_has_seed = xfp_attr_float(at, &a->rand_seed, why, why_len));
    if ((normal && A("mean")) || (uniform && A("low")))
        return xfp_attr_float(at, &a->rand_a, why, why_len);
    if ((normal && A("scale")) || (uniform && A("high")))
        return xfp_attr_float(at, &a->rand_b, why, why_len);
    if ((op == XF_OP_RANDOM_NORMAL || op == XF_OP_RANDOM_UNIFORM) && A("shape")) {
        int nd = 0;
        if (!xfp_attr_list(at, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS, at->n_ints, at->ints,
                           sizeof *a->rand_shape.dims, a->rand_shape.dims, XF_MAX_DIMS, &nd, why, why_len))
            return false;
        a->rand_shape.ndim = nd;
        return (a->rand_has_shape = true);
    }
    if (op == XF_OP_MULTINOMIAL && A("sample_size"))
        return xfp_attr_int(at, INT64_MIN, INT64_MAX, &a->sample_size, why, why_len);
#undef A
    return xfp_attr_refuse(why, why_len, "attribute '%s' is not modelled", name);
}

void xfp_write_random(writer *w, const xf_node *n, const xf_attrs *d)
{
    const xf_attrs *a = &n->attrs;
    bool normal = n->op == XF_OP_RANDOM_NORMAL || n->op == XF_OP_RANDOM_NORMAL_LIKE;
    bool uniform = n->op == XF_OP_RANDOM_UNIFORM || n->op == XF_OP_RANDOM_UNIFORM_LIKE;
    if (a->to != d->to)
        add_int(w, "dtype", a->to);
    if (a->rand_has_seed)
        add_float(w, "seed", a->rand_seed);
    if ((normal || uniform) && a->rand_a != d->rand_a)
        add_float(w, normal ? "mean" : "low", a->rand_a);
    if ((normal || uniform) && a->rand_b != d->rand_b)
        add_float(w, normal ? "scale" : "high", a->rand_b);
    if (n->op == XF_OP_RANDOM_NORMAL || n->op == XF_OP_RANDOM_UNIFORM)
        add_ints(w, "shape", a->rand_shape.dims, a->rand_shape.ndim);
    if (n->op == XF_OP_MULTINOMIAL && a->sample_size != d->sample_size)
        add_int(w, "sample_size", a->sample_size);
}
