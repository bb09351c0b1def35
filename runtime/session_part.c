/* The static part of a dynamic session: the nodes whose every operand has
 * a shape known before any run (a detector's backbone and feature pyramid
 * ahead of the proposals and non-maximum suppression whose counts come
 * from the data), run as a static session of their own: memory planned
 * once, nodes prepared once, and on the `cpu` backend the layout plan and
 * the folds that static mode has.  The dynamic run reads the part's
 * results where that session left them. */
#include "session_internal.h"

#include <stdlib.h>
#include <string.h>

struct xf_static_part {
    xf_session *s;        /* a static session of the part's nodes */
    int *node;            /* per node of the dynamic session: its index in the part, or -1 */
    int n_nodes;          /* the dynamic session's */
    int n_inputs;
    int *inputs;          /* per input of the part: the index of the dynamic session's input it is */
    int n_outputs;
    int *outputs;         /* per output of the part: the value of the dynamic session's graph */
    xf_tensor **args;     /* one run's inputs of the part */
    double *seconds;      /* one run's time per node of the part */
};

static bool static_tensor(const xf_value *v)
{
    return v->kind == XF_VK_TENSOR && xf_shape_numel(&v->shape) >= 0 && xf_dtype_bits(v->dtype) > 0;
}

/* Marks in_part[i] for the nodes of the static part: in order, those
 * reading only constants, graph inputs of static shape and the outputs of
 * nodes in the part, and writing only tensors of static shape; not
 * control flow or sequence ops, which the dynamic run does itself.
 * Returns how many. */
static int mark_part(const xf_session *s, bool *in_part)
{
    const xf_graph *g = s->g;
    int count = 0;
    for (int i = 0; i < g->n_nodes; i++) {
        const xf_node *n = &g->nodes[i];
        bool ok = !(s->flows && s->flows[i]) && !xf_rt_seq_node(n);
        for (int k = 0; ok && k < n->n_inputs; k++) {
            int v = n->inputs[k];
            if (v < 0)
                continue;
            const xf_value *val = &g->values[v];
            ok = static_tensor(val) && (val->producer < 0 ? val->init || val->is_input : in_part[val->producer]);
        }
        for (int k = 0; ok && k < n->n_outputs; k++)
            ok = n->outputs[k] < 0 || static_tensor(&g->values[n->outputs[k]]);
        in_part[i] = ok;
        count += ok;
    }
    return count;
}

void xf_static_part_free(xf_static_part *p)
{
    if (!p)
        return;
    xf_session_free(p->s);
    free(p->node);
    free(p->inputs);
    free(p->outputs);
    free(p->args);
    free(p->seconds);
    free(p);
}

/* The part's graph: a clone of s->g without the other nodes, whose inputs
 * are the graph inputs the part reads and whose outputs are the values
 * the other nodes or the graph's outputs read.  Fills p's maps. */
static xf_graph *part_graph(const xf_session *s, const bool *in_part, xf_static_part *p)
{
    const xf_graph *g = s->g;
    size_t nv = (size_t)(g->n_values > 0 ? g->n_values : 1);
    bool *wanted = calloc(nv, sizeof *wanted), *read = calloc(nv, sizeof *read);
    xf_graph *c = wanted && read ? xf_graph_clone(g) : NULL;
    int *outs = c ? malloc(sizeof *outs * nv) : NULL;
    p->inputs = malloc(sizeof *p->inputs * (size_t)(g->n_inputs + 1));
    p->outputs = malloc(sizeof *p->outputs * nv);
    if (!outs || !p->inputs || !p->outputs)
        goto fail;
    for (int i = 0; i < g->n_nodes; i++)
        for (int k = 0; k < g->nodes[i].n_inputs; k++)
            if (g->nodes[i].inputs[k] >= 0)
                (in_part[i] ? read : wanted)[g->nodes[i].inputs[k]] = true;
    for (int k = 0; k < g->n_outputs; k++)
        wanted[g->outputs[k]] = true;
    for (int k = 0; k < g->n_inputs; k++)
        if (read[g->inputs[k]]) {
            c->inputs[p->n_inputs] = g->inputs[k];
            p->inputs[p->n_inputs++] = k;
        }
    c->n_inputs = p->n_inputs;
    for (int v = 0; v < g->n_values; v++)
        if (wanted[v] && g->values[v].producer >= 0 && in_part[g->values[v].producer]) {
            outs[p->n_outputs] = v;
            p->outputs[p->n_outputs++] = v;
        }
    free(c->outputs);
    c->outputs = outs;
    c->n_outputs = p->n_outputs;
    xf_graph_compact(c, in_part);
    free(wanted);
    free(read);
    return c;
fail:
    free(outs);
    xf_graph_free(c);
    free(wanted);
    free(read);
    return NULL;
}

xf_status xf_static_part_create(xf_session *s, const xf_session_options *opt, xf_error *err)
{
    int nn = s->g->n_nodes;
    bool *in_part = calloc((size_t)(nn > 0 ? nn : 1), sizeof *in_part);
    if (!in_part)
        return xf_error_set(err, XF_ERR_NOMEM, "out of memory");
    if (mark_part(s, in_part) == 0) {
        free(in_part);
        return XF_OK;
    }
    xf_static_part *p = calloc(1, sizeof *p);
    xf_graph *pg = p ? part_graph(s, in_part, p) : NULL;
    if (pg)
        p->node = malloc(sizeof *p->node * (size_t)nn);
    if (!pg || !p->node) {
        free(in_part);
        xf_graph_free(pg);
        xf_static_part_free(p);
        return xf_error_set(err, XF_ERR_NOMEM, "out of memory");
    }
    p->n_nodes = nn;
    for (int i = 0, j = 0; i < nn; i++)
        p->node[i] = in_part[i] ? j++ : -1;
    free(in_part);
    /* the dynamic session made its rewrites already */
    xf_session_options po = opt ? *opt : (xf_session_options){0};
    po.as_given = true;
    po.force_dynamic = false;
    xf_error perr = {0};
    xf_status st = xf_session_create(pg, s->opset, s->be->name, &po, &p->s, &perr);
    xf_graph_free(pg);
    p->args = malloc(sizeof *p->args * (size_t)(p->n_inputs + 1));
    p->seconds = malloc(sizeof *p->seconds * (size_t)(nn + 1));
    if (st == XF_OK && (!p->args || !p->seconds))
        st = xf_error_set(&perr, XF_ERR_NOMEM, "out of memory");
    if (st == XF_OK && p->s->dynamic)
        st = xf_error_set(&perr, XF_ERR_UNSUPPORTED, "the part's shapes are not all static");
    if (st != XF_OK) {
        /* the whole graph runs dynamically, as without a part */
        xf_log(XF_LOG_DEBUG, "static part of '%s' not made: %s", s->g->name ? s->g->name : "", perr.msg);
        xf_static_part_free(p);
        return st == XF_ERR_NOMEM ? xf_error_set(err, XF_ERR_NOMEM, "%s", perr.msg) : XF_OK;
    }
    s->part = p;
    return XF_OK;
}

int xf_static_part_nodes(const xf_static_part *p) { return p ? p->s->g->n_nodes : 0; }

bool xf_static_part_has(const xf_static_part *p, int node) { return p && p->node[node] >= 0; }

xf_status xf_static_part_run(xf_static_part *p, xf_tensor *const *inputs, xf_tensor_view *views,
                             double *node_seconds, xf_error *err)
{
    for (int k = 0; k < p->n_inputs; k++)
        p->args[k] = inputs[p->inputs[k]];
    xf_status st = xf_session_execute(p->s, p->args, NULL, node_seconds ? p->seconds : NULL, err);
    if (st != XF_OK)
        return st;
    /* the part's outputs stay in its session's memory until its next run */
    const xf_graph *pg = p->s->g;
    for (int k = 0; k < p->n_outputs; k++)
        views[p->outputs[k]] = p->s->views[pg->outputs[k]];
    for (int i = 0; node_seconds && i < p->n_nodes; i++)
        if (p->node[i] >= 0)
            node_seconds[i] = p->seconds[p->node[i]];
    return XF_OK;
}

void xf_static_part_node_impl(const xf_static_part *p, int node, char *buf, size_t n)
{
    xf_session_node_impl(p->s, p->node[node], buf, n);
}
