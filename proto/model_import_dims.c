/* The sizes a load is given for symbolic dims: --input-shape overrides,
 * --dim sizes and the shapes of the tensors to be fed. */
#include "model_import.h"

#include <stdio.h>
#include <string.h>

static const char *str_or_empty(const char *s) { return s ? s : ""; }

const xf_shape *xfp_import_override(const importer *im, const char *name)
{
    for (int i = 0; im->opt && i < im->opt->n_input_shapes; i++)
        if (im->opt->input_shapes[i].name && strcmp(im->opt->input_shapes[i].name, name) == 0)
            return &im->opt->input_shapes[i].shape;
    return NULL;
}

/* Graph inputs that are not initializers, in order. */
static bool is_runtime_input(const importer *im, const Onnx__ValueInfoProto *vi)
{
    return vi->name && vi->name[0] && xfp_map_get(&im->values, vi->name) < 0;
}

static xf_status check_overrides(importer *im)
{
    for (int i = 0; im->opt && i < im->opt->n_input_shapes; i++) {
        const char *name = str_or_empty(im->opt->input_shapes[i].name);
        const Onnx__ValueInfoProto *vi = NULL;
        for (size_t k = 0; k < im->gp->n_input && !vi; k++)
            if (im->gp->input[k]->name && strcmp(im->gp->input[k]->name, name) == 0 &&
                is_runtime_input(im, im->gp->input[k]))
                vi = im->gp->input[k];
        if (!vi) {
            char list[512] = "";
            size_t used = 0;
            for (size_t k = 0; k < im->gp->n_input && used < sizeof list; k++)
                if (is_runtime_input(im, im->gp->input[k]))
                    used += (size_t)snprintf(list + used, sizeof list - used, "%s'%s'", used ? ", " : "",
                                             im->gp->input[k]->name);
            return xf_error_set(im->err, XF_ERR_INVALID,
                                "--input-shape names '%s', which is not a graph input (the inputs are %s)", name,
                                used ? list : "none");
        }
        xf_status s = xfp_bind_override(vi, &im->opt->input_shapes[i].shape, &im->syms, im->err);
        if (s != XF_OK)
            return s;
    }
    return XF_OK;
}

/* Whether some graph input has a dim named name. */
static bool input_dim_named(const importer *im, const char *name)
{
    for (size_t i = 0; i < im->gp->n_input; i++) {
        const Onnx__TypeProto *t = im->gp->input[i]->type;
        const Onnx__TensorShapeProto *sp =
            t && t->value_case == ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE && t->tensor_type ? t->tensor_type->shape : NULL;
        for (size_t d = 0; sp && d < sp->n_dim; d++)
            if (strcmp(xfp_dim_name(sp->dim[d]), name) == 0)
                return true;
    }
    return false;
}

/* --dim sizes: symbols no override fixed take them and stay symbolic. */
static xf_status bind_dim_sizes(importer *im)
{
    for (int i = 0; im->opt && i < im->opt->n_dim_sizes; i++) {
        const xf_dim_size *ds = &im->opt->dim_sizes[i];
        if (!ds->name || !input_dim_named(im, ds->name))
            return xf_error_set(im->err, XF_ERR_INVALID, "--dim names '%s', which no graph input's dims are called",
                                str_or_empty(ds->name));
        xf_status s = xfp_bind_dim_size(&im->syms, ds->name, ds->size, im->err);
        if (s != XF_OK)
            return s;
    }
    return XF_OK;
}

/* Whether graph input vi is not an initializer, before or after the
 * inputs are defined as values. */
static bool is_fed_input(const importer *im, const Onnx__ValueInfoProto *vi)
{
    int v = vi->name && vi->name[0] ? xfp_map_get(&im->values, vi->name) : -2;
    return v == -1 || (v >= 0 && im->g->values[v].is_input);
}

const xf_shape *xfp_import_feed_shape(const importer *im, size_t i)
{
    if (!im->opt || !is_fed_input(im, im->gp->input[i]))
        return NULL;
    int k = 0;
    for (size_t j = 0; j < i; j++)
        k += is_fed_input(im, im->gp->input[j]);
    return k < im->opt->n_feed_shapes ? &im->opt->feed_shapes[k] : NULL;
}

/* Named dims of inputs to be fed, without an override, take the fed sizes
 * where --input-shape and --dim left them open; a tensor that contradicts a
 * dim the file fixes sizes nothing (feeding it fails, naming the input). */
static xf_status bind_feed_sizes(importer *im)
{
    for (size_t i = 0; im->opt && i < im->gp->n_input; i++) {
        const Onnx__ValueInfoProto *vi = im->gp->input[i];
        const xf_shape *feed = xfp_import_feed_shape(im, i);
        const Onnx__TypeProto *t = vi->type;
        const Onnx__TensorShapeProto *sp =
            t && t->value_case == ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE && t->tensor_type ? t->tensor_type->shape : NULL;
        if (!feed || !sp || xfp_import_override(im, vi->name) || (size_t)feed->ndim != sp->n_dim)
            continue;
        bool fits = true;
        for (size_t d = 0; d < sp->n_dim; d++)
            fits &= !xfp_dim_is_size(sp->dim[d]) || sp->dim[d]->dim_value == feed->dims[d];
        for (size_t d = 0; fits && d < sp->n_dim; d++) {
            xf_status s = XF_OK;
            if (xfp_dim_name(sp->dim[d])[0])
                s = xfp_bind_feed_size(&im->syms, sp->dim[d]->dim_param, feed->dims[d], im->err);
            if (s != XF_OK)
                return s;
        }
    }
    return XF_OK;
}

xf_status xfp_import_bind_sizes(importer *im)
{
    xf_status s = check_overrides(im);
    if (s == XF_OK)
        s = bind_dim_sizes(im);
    if (s == XF_OK)
        s = bind_feed_sizes(im);
    return s;
}
