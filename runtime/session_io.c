/* A session's inputs and outputs: the values given checked against the
 * graph's inputs (kind, element type, shape; a map's key type) and bound
 * to it, and the outputs handed out. */
#include "session_internal.h"

#include <stdlib.h>

/* An empty optional or sequence of no known element type, or an empty
 * map (whose file cannot say its values' type). */
static bool untyped_empty(const xf_tensor *t)
{
    return (xf_tensor_is_container(t) && t->n_items == 0 && t->dtype == XF_DT_UNDEFINED) ||
           (t->is_map && xf_tensor_numel(t->items[0]) == 0);
}

/* An empty map of val's key and value types. */
static xf_tensor *empty_map(const xf_value *val)
{
    xf_shape none = {1, {0}};
    xf_tensor *k = xf_tensor_create(val->key_dtype, &none), *v = xf_tensor_create(val->dtype, &none);
    xf_tensor *m = k && v ? xf_map_create(k, v) : NULL;
    xf_tensor_release(k);
    xf_tensor_release(v);
    return m;
}

/* Whether t is fed to v as an optional holding it: a tensor or sequence
 * given where an optional of one is expected (a Loop body's carried
 * optional that the body gives back as a plain value). */
static bool wraps(const xf_value *v, const xf_tensor *t)
{
    return xf_kind_is_optional(v->kind) && !t->is_optional && xf_kind_content(v->kind) == xf_tensor_kind(t);
}

xf_status xf_session_check_inputs(const xf_session *s, xf_tensor *const *inputs, xf_error *err)
{
    for (int i = 0; i < s->g->n_inputs; i++) {
        const xf_value *v = &s->g->values[s->g->inputs[i]];
        const xf_tensor *t = inputs ? inputs[i] : NULL;
        char got[128], want[128];
        if (!t)
            return xf_error_set(err, XF_ERR_INVALID, "input '%s' is missing", v->name);
        /* an empty optional read from a file may not say what it would hold,
         * an empty sequence its element type: they take the graph's */
        bool untyped = untyped_empty(t);
        bool kind_ok = untyped ? t->is_optional == xf_kind_is_optional(v->kind) &&
                                     (t->is_optional || v->kind == (t->is_map ? XF_VK_MAP : XF_VK_SEQUENCE))
                               : xf_tensor_kind(t) == v->kind || wraps(v, t);
        if (!kind_ok)
            return xf_error_set(err, XF_ERR_INVALID, "input '%s' is a%s %s, the graph expects a%s %s", v->name,
                                t->is_optional ? "n" : "", xf_kind_name(xf_tensor_kind(t)),
                                xf_kind_is_optional(v->kind) ? "n" : "", xf_kind_name(v->kind));
        if (t->dtype != v->dtype && !untyped)
            return xf_error_set(err, XF_ERR_INVALID, "input '%s' has type %s, the graph expects %s", v->name,
                                xf_dtype_name(t->dtype), xf_dtype_name(v->dtype));
        if (t->is_map && t->items[0]->dtype != v->key_dtype)
            return xf_error_set(err, XF_ERR_INVALID, "input '%s' is a map of %s keys, the graph expects %s keys",
                                v->name, xf_dtype_name(t->items[0]->dtype), xf_dtype_name(v->key_dtype));
        /* a sequence's entries may differ in shape (or be none) */
        bool match =
            v->shape.ndim < 0 || v->shape.ndim == t->shape.ndim || (xf_tensor_is_container(t) && t->shape.ndim < 0);
        for (int d = 0; match && t->shape.ndim >= 0 && d < v->shape.ndim; d++)
            match = v->shape.dims[d] < 0 || v->shape.dims[d] == t->shape.dims[d];
        if (!match)
            return xf_error_set(err, XF_ERR_INVALID, "input '%s' has shape %s, the graph expects %s", v->name,
                                xf_shape_str(&t->shape, got, sizeof got),
                                xf_shape_str(&v->shape, want, sizeof want));
    }
    return XF_OK;
}

/* Points graph input values at the caller's tensors: in place on host
 * memory, else copied into the buffers allocated at session creation. */
xf_status xf_session_bind_inputs(xf_session *s, xf_tensor_view *views, xf_tensor *const *inputs, xf_error *err)
{
    for (int i = 0; i < s->g->n_inputs; i++) {
        int v = s->g->inputs[i];
        const xf_tensor *t = inputs[i];
        views[v].dtype = t->dtype;
        views[v].shape = t->shape;
        const xf_value *val = &s->g->values[v];
        if (wraps(val, t)) { /* dynamic mode only, as below */
            xf_tensor *kept = t->is_sequence ? xf_tensor_retain((xf_tensor *)t)
                                             : xf_tensor_from_data(t->dtype, &t->shape, t->data);
            s->held[v] = kept ? xf_optional_create(kept, false, t->dtype) : NULL;
            xf_tensor_release(kept);
        } else if (xf_tensor_is_container(t) || t->dtype == XF_DT_STRING) { /* dynamic mode only */
            views[v].dtype = val->dtype;
            s->held[v] = !untyped_empty(t) ? xf_tensor_retain((xf_tensor *)t)
                         : t->is_optional  ? xf_optional_create(NULL, val->kind == XF_VK_OPTIONAL_SEQUENCE, val->dtype)
                         : t->is_map       ? empty_map(val)
                                           : xf_sequence_create(val->dtype, 0, NULL);
        }
        if (xf_tensor_is_container(t) || t->dtype == XF_DT_STRING || wraps(val, t)) {
            if (!s->held[v])
                return xf_error_set(err, XF_ERR_NOMEM, "out of memory");
            views[v].data = NULL;
            continue;
        }
        if (s->be->host_memory) {
            views[v].data = t->data;
            continue;
        }
        xf_status st = s->be->copy_in(s->ctx, views[v].data, t->data, t->nbytes, err);
        if (st != XF_OK)
            return st;
    }
    return XF_OK;
}

/* The outputs as tensors: copies, or (dynamic runs on host memory, where
 * owned[v] marks blocks the run allocated) the blocks themselves. */
xf_status xf_session_collect_outputs(xf_session *s, const xf_tensor_view *views, bool *owned, xf_tensor **outputs,
                                      xf_error *err)
{
    for (int k = 0; k < s->g->n_outputs; k++)
        outputs[k] = NULL;
    for (int k = 0; k < s->g->n_outputs; k++) {
        int id = s->g->outputs[k];
        const xf_tensor_view *v = &views[id];
        if (s->held[id]) {
            outputs[k] = xf_tensor_retain(s->held[id]);
            continue;
        }
        if (owned && owned[id] && s->be->host_memory && v->data &&
            (outputs[k] = xf_tensor_adopt(v->dtype, &v->shape, v->data)) != NULL) {
            owned[id] = false; /* the tensor's now; a second output of it copies it */
            continue;
        }
        xf_tensor *t = xf_tensor_create_unset(v->dtype, &v->shape); /* copy_out writes it all */
        xf_status st = t ? s->be->copy_out(s->ctx, t->data, v->data, t->nbytes, err)
                         : xf_error_set(err, XF_ERR_NOMEM, "out of memory for output '%s'",
                                        s->g->values[s->g->outputs[k]].name);
        outputs[k] = t;
        if (st != XF_OK) {
            for (int j = 0; j <= k; j++) {
                xf_tensor_release(outputs[j]);
                outputs[j] = NULL;
            }
            return st;
        }
    }
    return XF_OK;
}
