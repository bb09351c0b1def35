/* The cpu backend's rewrite of reductions over axes that are not one run
 * (ReduceMean over axes 0 and 2 of [32, 64, 1024], as written-out batch
 * statistics take them): one reduction per run of adjacent reduced axes,
 * the innermost first, each keeping its dims, then a Reshape where the
 * original drops them.  Each runs where one run does (oneDNN's reduction
 * kernels, the backend's loops); the whole ran on cpu_ref's kernel, 34
 * times ONNX Runtime's time there.  Taken in parts, Sum, Mean (of equal
 * counts), Max, Min, Prod, L1, L2 and LogSumExp are those of their parts,
 * SumSquare sums its parts' and LogSum logs the sum of their sums. */
#include "cpu_dnnl_lower.h"

#include <string.h>

/* The op reducing part k (from the innermost) of `parts` for the original op. */
static xf_op part_op(xf_op op, int k, int parts)
{
    if (op == XF_OP_REDUCE_SUM_SQUARE)
        return k == 0 ? op : XF_OP_REDUCE_SUM;
    if (op == XF_OP_REDUCE_LOG_SUM)
        return k == parts - 1 ? op : XF_OP_REDUCE_SUM;
    return op;
}

/* The runs of node i's reduced axes (those of more than one element, with
 * the dims of 1 among them), from the innermost: first[k] .. last[k];
 * their count, 0 where i is no float reduction of static shape over two
 * runs or more. */
static int reduce_runs(const xf_graph *g, int i, int *first, int *last)
{
    const xf_node *n = &g->nodes[i];
    if (!xf_op_is_reduce(n->op) || n->n_outputs != 1 || n->outputs[0] < 0 || xf_dn_input(n, 0) < 0 ||
        !xf_dn_is_f32(g, n->inputs[0]) || !xf_dn_is_f32(g, n->outputs[0]))
        return 0;
    const xf_shape *x = &g->values[n->inputs[0]].shape, *y = &g->values[n->outputs[0]].shape;
    bool reduced[XF_MAX_DIMS];
    if (x->ndim < 2 || xf_shape_numel(x) <= 0 || xf_shape_numel(y) < 0 || !xf_dn_reduce_axes(g, n, x->ndim, reduced))
        return 0;
    int runs = 0;
    bool open = false; /* a run goes on past dims of 1, not past a kept dim */
    for (int d = x->ndim - 1; d >= 0; d--) {
        if (x->dims[d] == 1)
            continue;
        if (!reduced[d])
            open = false;
        else if (open)
            first[runs - 1] = d;
        else {
            first[runs] = last[runs] = d;
            runs++;
            open = true;
        }
    }
    return runs >= 2 ? runs : 0;
}

bool xf_dn_lower_reduce(xf_graph *g, const xf_dn_lowering *low, int i, bool *nomem)
{
    int first[XF_MAX_DIMS], last[XF_MAX_DIMS], runs = reduce_runs(g, i, first, last);
    if (!runs)
        return false;
    xf_node n = g->nodes[i];
    xf_shape s = g->values[n.inputs[0]].shape, ys = g->values[n.outputs[0]].shape;
    int v = n.inputs[0];
    for (int k = 0; k < runs; k++) {
        xf_attrs a = n.attrs;
        a.has_axes = true;
        a.n_axes = last[k] - first[k] + 1;
        for (int d = first[k]; d <= last[k]; d++) {
            a.axes[d - first[k]] = d;
            s.dims[d] = 1;
        }
        a.keepdims = 1;
        a.noop_with_empty_axes = 0;
        bool final = k == runs - 1 && xf_shape_equal(&s, &ys);
        int y = final ? n.outputs[0] : xf_dn_value_after(g, n.outputs[0], "_part", &s);
        int r = y < 0 ? -1 : xf_graph_add_node(g, part_op(n.op, k, runs), n.name, 1, &v, 1, &y);
        if (r < 0) {
            *nomem = true;
            return true;
        }
        g->nodes[r].attrs = a;
        v = y;
    }
    if (!xf_shape_equal(&s, &ys) && xf_dn_reshaped(g, v, &ys, n.outputs[0], "") < 0)
        *nomem = true;
    low->keep[i] = false;
    return true;
}
