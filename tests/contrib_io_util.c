/* See contrib_io_util.h. */
#include "contrib_io_util.h"

#include <check.h>
#include <string.h>

Onnx__NodeProto *ms_node(const char *op, const char *const *ins, const char *const *outs)
{
    Onnx__NodeProto *n = mk_node(op, NULL, ins, outs);
    n->domain = "com.microsoft";
    return n;
}

void io_input(Onnx__GraphProto *g, const char *name, int elem, int ndim, const int64_t *dims,
              const char *const *params)
{
    PUSH(g->n_input, g->input, mk_vi(name, elem, ndim, dims, params));
}

void io_output(Onnx__GraphProto *g, const char *name, int elem)
{
    PUSH(g->n_output, g->output, mk_vi(name, elem, -1, NULL, NULL));
}

static int elem_of(const char *name)
{
    if (strncmp(name, "i_", 2) == 0)
        return ONNX__TENSOR_PROTO__DATA_TYPE__INT32;
    if (strncmp(name, "l_", 2) == 0)
        return ONNX__TENSOR_PROTO__DATA_TYPE__INT64;
    if (strncmp(name, "u_", 2) == 0)
        return ONNX__TENSOR_PROTO__DATA_TYPE__UINT8;
    return ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
}

int load_one(const char *op, const char *const *ins, int n_out, void (*set)(Onnx__NodeProto *))
{
    Onnx__GraphProto *g = mk_graph("g");
    const char *outs[5] = {"o0", "o1", "o2", "o3", NULL};
    outs[n_out] = NULL;
    for (int i = 0; ins[i]; i++)
        if (ins[i][0])
            io_input(g, ins[i], elem_of(ins[i]), -1, NULL, NULL);
    Onnx__NodeProto *n = ms_node(op, ins, outs);
    set(n);
    PUSH(g->n_node, g->node, n);
    for (int k = 0; k < n_out; k++)
        io_output(g, outs[k], ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT);
    Onnx__ModelProto *mp = mk_model(g, 17);
    add_opset(mp, "com.microsoft", 1);
    xf_model *m;
    xf_error e;
    ck_assert_msg(load_proto(mp, NULL, &m, &e) == XF_OK, "%s: %s", op, e.msg);
    int counts[XF_OP_COUNT + 1];
    xf_graph_count_ops(m->graph, counts);
    xf_model_free(roundtrip(m)); /* an opaque node comes back as it was */
    xf_model_free(m);
    return counts[XF_OP_OPAQUE];
}

void check_forms(const opaque_form *forms, size_t n)
{
    for (size_t i = 0; i < n; i++)
        ck_assert_msg(load_one(forms[i].op, forms[i].ins, forms[i].n_out, forms[i].set) == forms[i].opaque,
                      "form %zu (%s)", i, forms[i].op);
}

const xf_node *node_of(const xf_model *m, xf_op op)
{
    int i = find_node_op(m->graph, op);
    ck_assert_int_ge(i, 0);
    return &m->graph->nodes[i];
}

void shape_is(const xf_model *m, const char *value, int ndim, const int64_t *dims)
{
    int v = xf_graph_find_value(m->graph, value);
    ck_assert_int_ge(v, 0);
    xf_shape want = xf_shape_make(ndim, dims);
    char a[64], b[64];
    ck_assert_msg(xf_shape_equal(&m->graph->values[v].shape, &want), "%s: %s, want %s", value,
                  xf_shape_str(&m->graph->values[v].shape, a, sizeof a), xf_shape_str(&want, b, sizeof b));
}
