/* Readers of one ONNX attribute for the per-family attribute files: each
 * takes the attribute, or writes why it cannot into why and returns false
 * (the node then stays opaque). */
#include "proto_internal.h"

#include <stdio.h>
#include <string.h>

bool xfp_attr_refuse(char *why, size_t why_len, const char *fmt, const char *name)
{
    snprintf(why, why_len, fmt, name ? name : "");
    return false;
}

bool xfp_attr_int(const Onnx__AttributeProto *at, int64_t lo, int64_t hi, int64_t *v, char *why, size_t why_len)
{
    if (!at->has_type || at->type != ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT)
        return xfp_attr_refuse(why, why_len, "attribute '%s' is not an int", at->name);
    if (at->i < lo || at->i > hi)
        return xfp_attr_refuse(why, why_len, "attribute '%s' has a value xflow does not model", at->name);
    *v = at->i;
    return true;
}

bool xfp_attr_int32(const Onnx__AttributeProto *at, int lo, int hi, int *v, char *why, size_t why_len)
{
    int64_t x;
    if (!xfp_attr_int(at, lo, hi, &x, why, why_len))
        return false;
    *v = (int)x;
    return true;
}

bool xfp_attr_float(const Onnx__AttributeProto *at, float *v, char *why, size_t why_len)
{
    if (!at->has_type || at->type != ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT)
        return xfp_attr_refuse(why, why_len, "attribute '%s' is not a float", at->name);
    *v = at->f;
    return true;
}

bool xfp_attr_dtype(const Onnx__AttributeProto *at, xf_dtype *v, char *why, size_t why_len)
{
    int64_t t;
    if (!xfp_attr_int(at, INT64_MIN, INT64_MAX, &t, why, why_len))
        return false;
    if (t <= XF_DT_UNDEFINED || t >= XF_DT_COUNT_)
        return xfp_attr_refuse(why, why_len, "attribute '%s' names a type xflow does not know", at->name);
    *v = (xf_dtype)t;
    return true;
}

bool xfp_attr_list(const Onnx__AttributeProto *at, Onnx__AttributeProto__AttributeType t, size_t count,
                   const void *items, size_t size, void *out, size_t max, int *n, char *why, size_t why_len)
{
    if (!at->has_type || at->type != t)
        return xfp_attr_refuse(why, why_len,
                               t == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS ? "attribute '%s' is not a list of ints"
                                                                               : "attribute '%s' is not a list of floats",
                               at->name);
    if (count > max)
        return xfp_attr_refuse(why, why_len, "attribute '%s' has more entries than xflow holds", at->name);
    if (count)
        memcpy(out, items, count * size);
    *n = (int)count;
    return true;
}

bool xfp_attr_enum(const Onnx__AttributeProto *at, const char *const *names, int count, int *index, char *why,
                   size_t why_len)
{
    if (!at->has_type || at->type != ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING)
        return xfp_attr_refuse(why, why_len, "attribute '%s' is not a string", at->name);
    for (int i = 0; i < count; i++)
        if (strlen(names[i]) == at->s.len && memcmp(names[i], at->s.data, at->s.len) == 0) {
            *index = i;
            return true;
        }
    return xfp_attr_refuse(why, why_len, "attribute '%s' has a value xflow does not model", at->name);
}
