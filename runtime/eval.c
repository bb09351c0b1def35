/* One node on constant inputs, for core's constant folding. */
#include "xf_rt_internal.h"

#include <stdlib.h>

/* Output dtypes and shapes: g's when all are known, else inferred on a
 * clone (opset 0: the attribute block already says which form each
 * parameter takes, which is all that shape inference needs from it). */
static xf_status output_types(const xf_graph *g, int node, const xf_tensor *const *values, xf_value *types,
                              xf_error *err)
{
    const xf_node *n = &g->nodes[node];
    bool known = true;
    for (int k = 0; k < n->n_outputs; k++) {
        int v = n->outputs[k];
        if (v < 0)
            continue;
        types[k] = g->values[v];
        known &= xf_shape_numel(&types[k].shape) >= 0 && xf_dtype_bits(types[k].dtype) > 0;
    }
    if (known)
        return XF_OK;
    xf_graph *clone = xf_graph_clone(g);
    if (!clone)
        return xf_error_set(err, XF_ERR_NOMEM, "out of memory");
    xf_status st = xf_node_infer_shape(clone, node, 0, values, err);
    for (int k = 0; k < n->n_outputs && st == XF_OK; k++) {
        int v = n->outputs[k];
        if (v < 0)
            continue;
        types[k] = g->values[v]; /* for the name, which clone frees */
        types[k].dtype = clone->values[v].dtype;
        types[k].shape = clone->values[v].shape;
        if (xf_shape_numel(&types[k].shape) < 0 || xf_dtype_bits(types[k].dtype) == 0)
            st = xf_error_set(err, XF_ERR_UNSUPPORTED, "node '%s' (%s): cannot determine the shape of '%s'",
                              n->name, xf_op_name(n->op), g->values[v].name);
    }
    xf_graph_free(clone);
    return st;
}

/* A node on strings (string_tensors.c) over constant inputs. */
static xf_status eval_strings(const xf_graph *g, const xf_node *n, xf_tensor **outputs, xf_error *err)
{
    xf_tensor **in = calloc((size_t)n->n_inputs + 1, sizeof *in);
    if (!in)
        return xf_error_set(err, XF_ERR_NOMEM, "out of memory");
    xf_status st = XF_OK;
    for (int k = 0; k < n->n_inputs && st == XF_OK; k++) {
        int v = n->inputs[k];
        in[k] = v >= 0 ? g->values[v].init : NULL;
        if (v >= 0 && !in[k])
            st = xf_error_set(err, XF_ERR_INVALID, "node '%s' (%s): input '%s' is not a constant", n->name,
                              xf_op_name(n->op), g->values[v].name);
    }
    if (st == XF_OK)
        st = xf_rt_string_tensor_run(n, in, outputs, err);
    free(in);
    return st;
}

xf_status xf_runtime_eval_node(const xf_graph *g, int node, xf_tensor **outputs, xf_error *err)
{
    const xf_node *n = &g->nodes[node];
    const xf_backend *be = &xf_backend_cpu_ref;
    for (int k = 0; k < n->n_outputs; k++)
        outputs[k] = NULL;
    if (xf_rt_touches_strings(g, node) && xf_rt_string_tensor_op(n))
        return eval_strings(g, n, outputs, err);
    xf_status st = be->supports(g, node, err);
    if (st != XF_OK)
        return st;
    size_t n_in = (size_t)n->n_inputs + 1, n_out = (size_t)n->n_outputs + 1;
    xf_tensor_view *in = malloc(sizeof *in * n_in), *out = malloc(sizeof *out * n_out);
    const xf_tensor **values = malloc(sizeof *values * n_in);
    xf_value *types = malloc(sizeof *types * n_out);
    if (!in || !out || !values || !types) {
        st = xf_error_set(err, XF_ERR_NOMEM, "out of memory");
        goto done;
    }
    for (int k = 0; k < n->n_inputs; k++) {
        int v = n->inputs[k];
        const xf_value *val = v >= 0 ? &g->values[v] : NULL;
        values[k] = val ? val->init : NULL;
        if (!val) {
            in[k] = (xf_tensor_view){.dtype = XF_DT_UNDEFINED, .shape = {.ndim = -1}};
        } else if (val->init) {
            in[k] = (xf_tensor_view){val->init->dtype, val->init->shape, val->init->data};
        } else if ((xf_op_get_info(n->op)->flags & XF_OPF_SHAPE_ONLY) && xf_shape_numel(&val->shape) >= 0) {
            in[k] = (xf_tensor_view){val->dtype, val->shape, NULL};
        } else {
            st = xf_error_set(err, XF_ERR_INVALID, "node '%s' (%s): input '%s' is not a constant", n->name,
                              xf_op_name(n->op), val->name);
            goto done;
        }
    }
    st = output_types(g, node, values, types, err);
    for (int k = 0; k < n->n_outputs && st == XF_OK; k++) {
        out[k] = (xf_tensor_view){.dtype = XF_DT_UNDEFINED, .shape = {.ndim = -1}};
        if (n->outputs[k] < 0)
            continue;
        outputs[k] = xf_tensor_create(types[k].dtype, &types[k].shape);
        if (!outputs[k])
            st = xf_error_set(err, XF_ERR_NOMEM, "out of memory for '%s'", types[k].name);
        else
            out[k] = (xf_tensor_view){outputs[k]->dtype, outputs[k]->shape, outputs[k]->data};
    }
    if (st == XF_OK)
        st = be->run_node(NULL, g, node, NULL, in, out, err);
done:
    if (st != XF_OK)
        for (int k = 0; k < n->n_outputs; k++) {
            xf_tensor_release(outputs[k]);
            outputs[k] = NULL;
        }
    free(in);
    free(out);
    free(values);
    free(types);
    return st;
}
