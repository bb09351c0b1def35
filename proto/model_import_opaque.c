/* ONNX import: the attributes of an opaque node that runtimes read
 * (ONNX-ML's lists and tensors, Scan's axes, FlexAttention's scale). */
#include "model_import.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Attribute a of an opaque node, kept where a runtime may run the node:
 * integers (INT, INTS, a TENSOR of integers), reals (FLOAT, FLOATS, a
 * TENSOR of floats or doubles) and strings (STRING, STRINGS, a TENSOR of
 * strings), a tensor's element type with them; the node's NodeProto keeps
 * every attribute for export. */
xf_status xfp_opaque_attr(importer *im, const char *label, const Onnx__AttributeProto *a, xf_opaque *o)
{
    const char *name = a->name ? a->name : "";
    o->n_graph_attrs += a->g != NULL;
    bool ok = true;
    switch (a->type) {
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT:
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS: {
        bool one = a->type == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT;
        ok = xf_opaque_add_ints(o, name, one ? &a->i : a->ints, one ? 1 : (int)a->n_ints);
        break;
    }
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT:
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS: {
        bool one = a->type == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT;
        size_t n = one ? 1 : a->n_floats;
        double *v = malloc(sizeof *v * (n + 1));
        for (size_t k = 0; v && k < n; k++)
            v[k] = one ? a->f : a->floats[k];
        ok = v && xf_opaque_add_reals(o, name, v, (int)n);
        free(v);
        break;
    }
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING:
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS: {
        bool one = a->type == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING;
        size_t n = one ? 1 : a->n_strings;
        const char **v = malloc(sizeof *v * (n + 1));
        size_t *lens = malloc(sizeof *lens * (n + 1));
        for (size_t k = 0; v && lens && k < n; k++) {
            ProtobufCBinaryData b = one ? a->s : a->strings[k];
            v[k] = (const char *)b.data;
            lens[k] = b.data ? strnlen((const char *)b.data, b.len) : 0; /* up to a NUL */
        }
        ok = v && lens && xf_opaque_add_strings(o, name, v, lens, (int)n);
        free(v);
        free(lens);
        break;
    }
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR: { /* reals of floats or doubles, integers, strings */
        bool real = a->t && a->t->has_data_type && (a->t->data_type == XF_DT_FLOAT || a->t->data_type == XF_DT_DOUBLE);
        bool integral = a->t && a->t->has_data_type && a->t->data_type >= XF_DT_UINT8 &&
                        a->t->data_type <= XF_DT_INT64 && a->t->data_type != XF_DT_STRING;
        bool text = a->t && a->t->has_data_type && a->t->data_type == XF_DT_STRING;
        if (!real && !integral && !text)
            break;
        char what[700];
        snprintf(what, sizeof what, "%s attribute '%s'", label, name);
        xf_tensor *t = NULL;
        xf_status st = xfp_tensor_decode(a->t, what, &im->tensors, &t, im->err);
        if (st != XF_OK)
            return st;
        int64_t n = xf_tensor_numel(t);
        double *v = real && n >= 0 && n < INT_MAX ? malloc(sizeof *v * (size_t)(n + 1)) : NULL;
        int64_t *iv = integral && n >= 0 && n < INT_MAX ? malloc(sizeof *iv * (size_t)(n + 1)) : NULL;
        for (int64_t k = 0; k < n && (v || iv); k++) {
            if (v)
                v[k] = xf_tensor_get_f64(t, k);
            else
                iv[k] = xf_tensor_get_i64(t, k);
        }
        size_t *lens = text && n >= 0 && n < INT_MAX ? malloc(sizeof *lens * (size_t)(n + 1)) : NULL;
        for (int64_t k = 0; lens && k < n; k++)
            lens[k] = t->strings && t->strings[k] ? strlen(t->strings[k]) : 0;
        if (text)
            ok = lens && xf_opaque_add_strings(o, name, (const char *const *)t->strings, lens, (int)n);
        else if (real && (ok = v && xf_opaque_add_reals(o, name, v, (int)n)))
            o->reals[o->n_reals - 1].dtype = t->dtype;
        else if (!real && (ok = iv && xf_opaque_add_ints(o, name, iv, (int)n)))
            o->ints[o->n_ints - 1].dtype = t->dtype;
        free(v);
        free(iv);
        free(lens);
        xf_tensor_release(t);
        break;
    }
    default:
        break;
    }
    return ok ? XF_OK : xf_error_set(im->err, XF_ERR_NOMEM, "out of memory");
}
