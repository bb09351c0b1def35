/* Value types: ValueInfo/TypeProto <-> dtype and static shape, resolution of
 * symbolic dims of graph inputs, and the --input-shape argument. */
#include "proto_internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ symbols */

/* A symbol is bound by an --input-shape override, to a --dim size, or, for
 * graph inputs without either, to a guessed 1 (which every input using it
 * warns about). */
static const xfp_symbol *symbol_get(const xfp_symbols *s, const char *name)
{
    int i = xfp_map_get(&s->index, name);
    return i < 0 ? NULL : &s->slots[i];
}

static bool symbol_bind(xfp_symbols *s, const char *name, int64_t value, bool guessed, bool sized)
{
    size_t n = s->index.count;
    if (n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 16;
        xfp_symbol *v = realloc(s->slots, cap * sizeof *v);
        if (!v)
            return false;
        s->slots = v;
        s->cap = cap;
    }
    if (!xfp_map_put(&s->index, name, (int)n))
        return false;
    s->slots[n] = (xfp_symbol){name, value, guessed, sized};
    return true;
}

void xfp_symbols_free(xfp_symbols *s)
{
    xfp_map_free(&s->index);
    free(s->slots);
    memset(s, 0, sizeof *s);
}

/* ------------------------------------------------------------ declared types */

static const Onnx__TypeProto__Tensor *tensor_type(const Onnx__TypeProto *t)
{
    if (!t || t->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE || !t->tensor_type)
        return NULL;
    return t->tensor_type;
}

static bool dtype_valid(int32_t t) { return t > XF_DT_UNDEFINED && t < XF_DT_COUNT_; }

int32_t xfp_foreign_elem_type(const Onnx__TypeProto *type)
{
    const Onnx__TypeProto__Tensor *tt = tensor_type(type);
    return tt && tt->has_elem_type && tt->elem_type != XF_DT_UNDEFINED && !dtype_valid(tt->elem_type) ? tt->elem_type
                                                                                                      : 0;
}

const char *xfp_foreign_type_name(int32_t t)
{
    static const char *const names[] = {"float8e4m3fn", "float8e4m3fnuz", "float8e5m2", "float8e5m2fnuz", "uint4",
                                        "int4", "float4e2m1", "float8e8m0", "uint2", "int2"};
    int32_t first = 17; /* after bfloat16, xflow's last */
    return t >= first && t - first < (int32_t)(sizeof names / sizeof names[0]) ? names[t - first] : NULL;
}

bool xfp_declared_type(const Onnx__TypeProto *type, const xfp_symbols *syms, xf_dtype *dtype, xf_shape *shape)
{
    *dtype = XF_DT_UNDEFINED;
    shape->ndim = -1;
    const Onnx__TypeProto__Tensor *tt = tensor_type(type);
    if (!tt)
        return false;
    if (tt->has_elem_type && dtype_valid(tt->elem_type))
        *dtype = (xf_dtype)tt->elem_type;
    if (!tt->shape || tt->shape->n_dim > XF_MAX_DIMS)
        return false;
    xf_shape s = {.ndim = (int)tt->shape->n_dim};
    for (int i = 0; i < s.ndim; i++) {
        const Onnx__TensorShapeProto__Dimension *d = tt->shape->dim[i];
        const xfp_symbol *sym = NULL;
        if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE && d->dim_value >= 0)
            s.dims[i] = d->dim_value;
        else if (xfp_dim_name(d)[0] && (sym = symbol_get(syms, d->dim_param)))
            s.dims[i] = sym->value;
        else
            return false;
    }
    *shape = s;
    return *dtype != XF_DT_UNDEFINED;
}

static bool is_param(const Onnx__TensorShapeProto__Dimension *d);

/* A sequence of tensors: its element type's TypeProto, else NULL. */
static const Onnx__TypeProto *sequence_elem(const Onnx__TypeProto *type)
{
    if (!type || type->value_case != ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE || !type->sequence_type ||
        !tensor_type(type->sequence_type->elem_type))
        return NULL;
    return type->sequence_type->elem_type;
}

void xfp_element_decl(const Onnx__TypeProto *type, const xfp_symbols *syms, xf_shape *shape)
{
    const Onnx__TypeProto *elem = sequence_elem(type);
    if (!elem && type && type->value_case == ONNX__TYPE_PROTO__VALUE_OPTIONAL_TYPE && type->optional_type)
        elem = sequence_elem(type->optional_type->elem_type) ? sequence_elem(type->optional_type->elem_type)
                                                             : type->optional_type->elem_type;
    const Onnx__TypeProto__Tensor *tt = tensor_type(elem);
    shape->ndim = -1;
    if (!tt || !tt->shape || tt->shape->n_dim > XF_MAX_DIMS)
        return;
    shape->ndim = (int)tt->shape->n_dim;
    for (int i = 0; i < shape->ndim; i++) {
        const Onnx__TensorShapeProto__Dimension *d = tt->shape->dim[i];
        const xfp_symbol *sym = is_param(d) ? symbol_get(syms, d->dim_param) : NULL;
        shape->dims[i] = sym ? sym->value
                         : d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE && d->dim_value >= 0
                             ? d->dim_value
                             : -1;
    }
}

bool xfp_container_type(const Onnx__TypeProto *type, xf_value_kind *kind, xf_dtype *dtype, xf_shape *shape)
{
    static const xfp_symbols none;
    const Onnx__TypeProto *elem = sequence_elem(type);
    *kind = XF_VK_SEQUENCE;
    if (!elem && type && type->value_case == ONNX__TYPE_PROTO__VALUE_OPTIONAL_TYPE && type->optional_type) {
        const Onnx__TypeProto *in = type->optional_type->elem_type;
        elem = sequence_elem(in);
        *kind = elem ? XF_VK_OPTIONAL_SEQUENCE : XF_VK_OPTIONAL_TENSOR;
        elem = elem ? elem : tensor_type(in) ? in : NULL;
    }
    if (!elem) {
        *kind = XF_VK_TENSOR;
        return false;
    }
    xfp_declared_type(elem, &none, dtype, shape);
    return true;
}

bool xfp_map_type(const Onnx__TypeProto *type, xf_dtype *key, xf_dtype *value)
{
    if (!type || type->value_case != ONNX__TYPE_PROTO__VALUE_MAP_TYPE || !type->map_type ||
        !type->map_type->has_key_type || (type->map_type->key_type != XF_DT_INT64 &&
                                           type->map_type->key_type != XF_DT_STRING))
        return false;
    const Onnx__TypeProto__Tensor *tt = tensor_type(type->map_type->value_type);
    if (!tt || !tt->has_elem_type || !dtype_valid(tt->elem_type))
        return false;
    *key = (xf_dtype)type->map_type->key_type;
    *value = (xf_dtype)tt->elem_type;
    return true;
}

static bool is_param(const Onnx__TensorShapeProto__Dimension *d) { return xfp_dim_name(d)[0] != '\0'; }

xf_status xfp_bind_override(const Onnx__ValueInfoProto *vi, const xf_shape *override, xfp_symbols *syms,
                            xf_error *err)
{
    const Onnx__TypeProto__Tensor *tt = tensor_type(vi->type);
    if (!tt)
        return xf_error_set(err, XF_ERR_INVALID, "--input-shape names input '%s', which is not a tensor",
                            vi->name);
    if (!tt->shape)
        return XF_OK; /* rank unknown: any override fits */
    char buf[256];
    if ((int)tt->shape->n_dim != override->ndim)
        return xf_error_set(err, XF_ERR_INVALID, "--input-shape %s=%s has rank %d but input '%s' has rank %zu",
                            vi->name, xf_shape_str(override, buf, sizeof buf), override->ndim, vi->name,
                            tt->shape->n_dim);
    for (int i = 0; i < override->ndim; i++) {
        const Onnx__TensorShapeProto__Dimension *d = tt->shape->dim[i];
        int64_t want = override->dims[i];
        if (xfp_dim_is_size(d) && d->dim_value != want)
            return xf_error_set(err, XF_ERR_INVALID,
                                "--input-shape %s=%s sets dim %d to %" PRId64 " but the model fixes it to %" PRId64,
                                vi->name, xf_shape_str(override, buf, sizeof buf), i, want, d->dim_value);
        if (!is_param(d))
            continue;
        const xfp_symbol *sym = symbol_get(syms, d->dim_param);
        if (sym && sym->value != want)
            return xf_error_set(err, XF_ERR_INVALID,
                                "--input-shape gives dim '%s' both %" PRId64 " and %" PRId64 " (input '%s' dim %d)",
                                d->dim_param, sym->value, want, vi->name, i);
        if (!sym && !symbol_bind(syms, d->dim_param, want, false, false))
            return xf_error_set(err, XF_ERR_NOMEM, "out of memory");
    }
    return XF_OK;
}

xf_status xfp_bind_dim_size(xfp_symbols *syms, const char *name, int64_t size, xf_error *err)
{
    const xfp_symbol *sym = symbol_get(syms, name);
    if (sym && !sym->guessed && sym->value != size)
        return xf_error_set(err, XF_ERR_INVALID, "--dim %s=%" PRId64 " contradicts --input-shape, which gives it %" PRId64,
                            name, size, sym->value);
    if (!sym && !symbol_bind(syms, name, size, true, true))
        return xf_error_set(err, XF_ERR_NOMEM, "out of memory");
    return XF_OK;
}

xf_status xfp_bind_feed_size(xfp_symbols *syms, const char *name, int64_t size, xf_error *err)
{
    if (!symbol_get(syms, name) && !symbol_bind(syms, name, size, true, true))
        return xf_error_set(err, XF_ERR_NOMEM, "out of memory");
    return XF_OK;
}

/* One warning per input, naming every dim that had to be guessed (not
 * those a --dim size or a fed tensor sized). */
static void warn_guessed(const char *input, const Onnx__TensorShapeProto *sp, const xf_shape *shape,
                         const bool *guessed, const bool *fed, const xfp_symbols *syms)
{
    char list[512] = "", shp[256];
    size_t used = 0;
    int n = 0;
    for (int i = 0; i < shape->ndim && used < sizeof list; i++) {
        const Onnx__TensorShapeProto__Dimension *d = sp->dim[i];
        if (!guessed[i] || fed[i] || (is_param(d) && symbol_get(syms, d->dim_param)->sized))
            continue;
        if (is_param(d))
            used += (size_t)snprintf(list + used, sizeof list - used, "%s%d ('%s')", n ? ", " : "", i, d->dim_param);
        else
            used += (size_t)snprintf(list + used, sizeof list - used, "%s%d (unnamed)", n ? ", " : "", i);
        n++;
    }
    xf_log(XF_LOG_WARN, "input '%s' dim%s %s %s symbolic; using %s (set %s with --input-shape %s=%s)", input,
           n > 1 ? "s" : "", list, n > 1 ? "are" : "is", syms->guess > 1 ? "the sizes shown" : "1",
           n > 1 ? "them" : "it", input, xf_shape_str(shape, shp, sizeof shp));
}

xf_status xfp_resolve_input_type(const Onnx__ValueInfoProto *vi, const xf_shape *override, const xf_shape *feed,
                                 xfp_symbols *syms, xf_dtype *dtype, xf_shape *shape, bool *guessed_out, xf_error *err)
{
    for (int i = 0; guessed_out && i < XF_MAX_DIMS; i++)
        guessed_out[i] = false;
    *dtype = XF_DT_UNDEFINED;
    shape->ndim = -1;
    const Onnx__TypeProto__Tensor *tt = tensor_type(vi->type);
    if (!tt || !tt->has_elem_type || !dtype_valid(tt->elem_type))
        return XF_OK;
    *dtype = (xf_dtype)tt->elem_type;
    if (override) {
        *shape = *override;
        return XF_OK;
    }
    if (!tt->shape) {
        xf_log(XF_LOG_WARN, "input '%s' has no shape (set it with --input-shape %s=...)", vi->name, vi->name);
        return XF_OK;
    }
    if (tt->shape->n_dim > XF_MAX_DIMS)
        return xf_error_set(err, XF_ERR_UNSUPPORTED, "input '%s' has rank %zu; xflow supports at most %d", vi->name,
                            tt->shape->n_dim, XF_MAX_DIMS);
    shape->ndim = (int)tt->shape->n_dim;
    bool guessed[XF_MAX_DIMS] = {false}, fed[XF_MAX_DIMS] = {false}, any = false;
    if (feed && feed->ndim != shape->ndim)
        feed = NULL;
    for (int i = 0; i < shape->ndim; i++) {
        const Onnx__TensorShapeProto__Dimension *d = tt->shape->dim[i];
        if (xfp_dim_is_size(d)) {
            shape->dims[i] = d->dim_value;
            continue;
        }
        const xfp_symbol *sym = is_param(d) ? symbol_get(syms, d->dim_param) : NULL;
        if (!is_param(d) && feed) { /* unnamed: this input's own */
            shape->dims[i] = feed->dims[i];
            guessed[i] = fed[i] = true;
            continue;
        }
        /* past the first dim, the size asked for (a batch takes 1) */
        int64_t guess = i > 0 && syms->guess > 1 ? syms->guess : 1;
        syms->guessed |= i > 0 && !sym;
        shape->dims[i] = sym ? sym->value : guess;
        guessed[i] = !sym || sym->guessed;
        any |= guessed[i] && !(sym && sym->sized);
        if (!sym && is_param(d) && !symbol_bind(syms, d->dim_param, guess, true, false))
            return xf_error_set(err, XF_ERR_NOMEM, "out of memory");
    }
    if (any)
        warn_guessed(vi->name, tt->shape, shape, guessed, fed, syms);
    for (int i = 0; guessed_out && i < shape->ndim; i++)
        guessed_out[i] = guessed[i];
    return XF_OK;
}

Onnx__TypeProto *xfp_container_type_encode(xf_value_kind kind, xf_dtype dtype, const xf_shape *shape,
                                           xfp_arena *a)
{
    if (kind == XF_VK_TENSOR)
        return xfp_type_encode(dtype, shape, a);
    Onnx__TypeProto *t = xfp_alloc(a, sizeof *t);
    if (!t)
        return NULL;
    onnx__type_proto__init(t);
    if (xf_kind_is_optional(kind)) {
        Onnx__TypeProto__Optional *op = xfp_alloc(a, sizeof *op);
        if (!op)
            return NULL;
        onnx__type_proto__optional__init(op);
        t->value_case = ONNX__TYPE_PROTO__VALUE_OPTIONAL_TYPE;
        t->optional_type = op;
        op->elem_type = xfp_container_type_encode(xf_kind_content(kind), dtype, shape, a);
        return op->elem_type ? t : NULL;
    }
    Onnx__TypeProto__Sequence *sq = xfp_alloc(a, sizeof *sq);
    if (!sq)
        return NULL;
    onnx__type_proto__sequence__init(sq);
    t->value_case = ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE;
    t->sequence_type = sq;
    sq->elem_type = xfp_type_encode(dtype, shape, a);
    return sq->elem_type ? t : NULL;
}

Onnx__TypeProto *xfp_type_encode(xf_dtype dtype, const xf_shape *shape, xfp_arena *a)
{
    Onnx__TypeProto *t = xfp_alloc(a, sizeof *t);
    Onnx__TypeProto__Tensor *tt = xfp_alloc(a, sizeof *tt);
    if (!t || !tt)
        return NULL;
    onnx__type_proto__init(t);
    onnx__type_proto__tensor__init(tt);
    t->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
    t->tensor_type = tt;
    tt->has_elem_type = 1;
    tt->elem_type = (int32_t)dtype;
    if (shape->ndim < 0)
        return t;
    Onnx__TensorShapeProto *sp = xfp_alloc(a, sizeof *sp);
    Onnx__TensorShapeProto__Dimension **dims = xfp_alloc(a, sizeof *dims * (size_t)(shape->ndim + 1));
    if (!sp || !dims)
        return NULL;
    onnx__tensor_shape_proto__init(sp);
    for (int i = 0; i < shape->ndim; i++) {
        dims[i] = xfp_alloc(a, sizeof **dims);
        if (!dims[i])
            return NULL;
        onnx__tensor_shape_proto__dimension__init(dims[i]);
        dims[i]->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
        dims[i]->dim_value = shape->dims[i];
    }
    sp->n_dim = (size_t)shape->ndim;
    sp->dim = dims;
    tt->shape = sp;
    return t;
}

/* ------------------------------------------------------------ --input-shape */

xf_status xf_parse_shape_arg(const char *arg, xf_input_shape *out, char **name_owned, xf_error *err)
{
    *name_owned = NULL;
    memset(out, 0, sizeof *out);
    /* The last '=' splits, so that input names may themselves contain '='. */
    const char *eq = strrchr(arg, '=');
    if (!eq || eq == arg || !eq[1])
        return xf_error_set(err, XF_ERR_INVALID, "--input-shape '%s': expected NAME=DIMS, e.g. x=1x3x224x224", arg);
    xf_shape s = {0};
    const char *p = eq + 1;
    if (strcmp(p, "scalar") != 0) {
        while (true) {
            if (s.ndim == XF_MAX_DIMS)
                return xf_error_set(err, XF_ERR_UNSUPPORTED, "--input-shape '%s': more than %d dims", arg,
                                    XF_MAX_DIMS);
            if (*p < '0' || *p > '9')
                return xf_error_set(err, XF_ERR_INVALID,
                                    "--input-shape '%s': dims must be numbers separated by 'x', e.g. 1x3x224x224",
                                    arg);
            int64_t v = 0;
            for (; *p >= '0' && *p <= '9'; p++) {
                if (v > (INT64_MAX - 9) / 10)
                    return xf_error_set(err, XF_ERR_INVALID, "--input-shape '%s': dim %d is too large", arg,
                                        s.ndim);
                v = v * 10 + (*p - '0');
            }
            s.dims[s.ndim++] = v;
            if (*p == '\0')
                break;
            if (*p != 'x')
                return xf_error_set(err, XF_ERR_INVALID,
                                    "--input-shape '%s': dims must be numbers separated by 'x', e.g. 1x3x224x224",
                                    arg);
            p++;
        }
    }
    size_t n = (size_t)(eq - arg);
    char *name = malloc(n + 1);
    if (!name)
        return xf_error_set(err, XF_ERR_NOMEM, "out of memory");
    memcpy(name, arg, n);
    name[n] = '\0';
    *name_owned = name;
    out->name = name;
    out->shape = s;
    return XF_OK;
}
