/* Control flow: If and Loop.  Import keeps these nodes opaque and loads
 * their subgraphs as graphs (xf_opaque_body); the session runs such a node
 * by running the chosen branch, or the body once per iteration, as a
 * session of its own on the same backend.  Body sessions run in dynamic
 * mode: a branch's shapes may differ from one run to the next, and a loop's
 * carried values from one iteration to the next. */
#include "xf_rt_internal.h"

#include <stdlib.h>
#include <string.h>

typedef enum flow_kind { FLOW_NONE, FLOW_IF, FLOW_LOOP } flow_kind;

struct xf_rt_flow {
    flow_kind kind;
    const xf_node *node; /* of the session's graph, for names in messages */
    int n_own, n_outer;
    int n_carried, n_scan;  /* Loop */
    xf_session *body[2];    /* If: then, else; Loop: body */
    xf_dtype *scan_dtype;   /* Loop: element types of the scan outputs (for zero iterations) */
};

static flow_kind kind_of(const xf_node *n)
{
    if (n->op != XF_OP_OPAQUE || !n->opaque)
        return FLOW_NONE;
    const char *d = n->opaque->domain;
    if (d[0] && strcmp(d, "ai.onnx") != 0)
        return FLOW_NONE;
    if (strcmp(n->opaque->op_type, "If") == 0)
        return FLOW_IF;
    if (strcmp(n->opaque->op_type, "Loop") == 0)
        return FLOW_LOOP;
    return FLOW_NONE;
}

bool xf_rt_flow_node(const xf_node *n) { return kind_of(n) != FLOW_NONE; }

/* A session for subgraph attr of node `node`: its inputs typed from what
 * they bind to (formal inputs keep their declared types where they have
 * them; `formal` gives the others, n_formal entries, UNDEFINED to keep). */
static xf_status body_session(const xf_graph *g, int node, const char *attr, int64_t opset, const char *backend,
                              const xf_dtype *formal, int n_formal, xf_session **out, xf_error *err)
{
    const xf_node *n = &g->nodes[node];
    const xf_opaque *o = n->opaque;
    const xf_opaque_body *b = xf_opaque_find_body(o, attr);
    if (!b)
        return xf_error_set(err, XF_ERR_UNSUPPORTED,
                            "node '%s' (%s): subgraph '%s' did not load, so the node can only be carried (-v says "
                            "why)",
                            n->name, o->op_type, attr);
    int n_outer = n->n_inputs - o->n_own_inputs;
    if (b->n_formal != n_formal || b->graph->n_inputs != n_formal + n_outer)
        return xf_error_set(err, XF_ERR_INVALID, "node '%s' (%s): subgraph '%s' has %d inputs, the node gives it %d",
                            n->name, o->op_type, attr, b->n_formal, n_formal);
    xf_graph *body = xf_graph_clone(b->graph);
    if (!body)
        return xf_error_set(err, XF_ERR_NOMEM, "out of memory");
    xf_status st = XF_OK;
    for (int i = 0; i < body->n_inputs && st == XF_OK; i++) {
        xf_value *v = &body->values[body->inputs[i]];
        xf_dtype want = i < n_formal ? formal[i] : g->values[n->inputs[o->n_own_inputs + i - n_formal]].dtype;
        if (want != XF_DT_UNDEFINED && (i >= n_formal || v->dtype == XF_DT_UNDEFINED))
            v->dtype = want;
        if (v->dtype == XF_DT_UNDEFINED)
            st = xf_error_set(err, XF_ERR_UNSUPPORTED, "node '%s' (%s): the type of '%s' is unknown", n->name,
                              o->op_type, v->name);
    }
    xf_session_options opt = {.force_dynamic = true};
    if (st == XF_OK)
        st = xf_session_create(body, opset, backend, &opt, out, err);
    if (st != XF_OK)
        xf_error_prefix(err, "node '%s' (%s), subgraph '%s'", n->name, o->op_type, attr);
    xf_graph_free(body);
    return st;
}

static xf_status check_outputs(const xf_rt_flow *f, const xf_session *s, const char *attr, int want, xf_error *err)
{
    int have = xf_session_graph(s)->n_outputs;
    if (have == want)
        return XF_OK;
    return xf_error_set(err, XF_ERR_INVALID, "node '%s' (%s): subgraph '%s' has %d outputs, the node needs %d",
                        f->node->name, f->node->opaque->op_type, attr, have, want);
}

xf_status xf_rt_flow_create(const xf_graph *g, int node, int64_t opset, const char *backend, xf_rt_flow **out,
                            xf_error *err)
{
    *out = NULL;
    const xf_node *n = &g->nodes[node];
    xf_rt_flow *f = calloc(1, sizeof *f);
    if (!f)
        return xf_error_set(err, XF_ERR_NOMEM, "out of memory");
    f->kind = kind_of(n);
    f->node = n;
    f->n_own = n->opaque->n_own_inputs;
    f->n_outer = n->n_inputs - f->n_own;
    xf_status st = XF_OK;
    if (f->kind == FLOW_IF) {
        if (f->n_own != 1)
            st = xf_error_set(err, XF_ERR_INVALID, "node '%s' (If) has %d inputs; If takes one", n->name, f->n_own);
        const char *attrs[2] = {"then_branch", "else_branch"};
        for (int b = 0; b < 2 && st == XF_OK; b++) {
            st = body_session(g, node, attrs[b], opset, backend, NULL, 0, &f->body[b], err);
            if (st == XF_OK)
                st = check_outputs(f, f->body[b], attrs[b], n->n_outputs, err);
        }
    } else {
        /* Loop: M, cond, v_initial... -> body(iteration_num, cond, v...) */
        f->n_carried = f->n_own - 2;
        f->n_scan = n->n_outputs - f->n_carried;
        if (f->n_carried < 0 || f->n_scan < 0)
            st = xf_error_set(err, XF_ERR_INVALID, "node '%s' (Loop) has %d inputs and %d outputs", n->name,
                              f->n_own, n->n_outputs);
        xf_dtype *formal = st == XF_OK ? malloc(sizeof *formal * (size_t)(f->n_own + 1)) : NULL;
        if (st == XF_OK && !formal)
            st = xf_error_set(err, XF_ERR_NOMEM, "out of memory");
        if (st == XF_OK) {
            formal[0] = XF_DT_INT64;
            formal[1] = XF_DT_BOOL;
            for (int j = 0; j < f->n_carried; j++)
                formal[2 + j] = n->inputs[2 + j] >= 0 ? g->values[n->inputs[2 + j]].dtype : XF_DT_UNDEFINED;
            st = body_session(g, node, "body", opset, backend, formal, f->n_own, &f->body[0], err);
        }
        free(formal);
        if (st == XF_OK)
            st = check_outputs(f, f->body[0], "body", 1 + n->n_outputs, err);
        const xf_graph *bg = st == XF_OK ? xf_session_graph(f->body[0]) : NULL;
        if (bg && !(f->scan_dtype = calloc((size_t)f->n_scan + 1, sizeof *f->scan_dtype)))
            st = xf_error_set(err, XF_ERR_NOMEM, "out of memory");
        for (int k = 0; bg && f->scan_dtype && k < f->n_scan; k++)
            f->scan_dtype[k] = bg->values[bg->outputs[1 + f->n_carried + k]].dtype;
    }
    if (st != XF_OK) {
        xf_rt_flow_free(f);
        return st;
    }
    *out = f;
    return XF_OK;
}

void xf_rt_flow_free(xf_rt_flow *f)
{
    if (!f)
        return;
    xf_session_free(f->body[0]);
    xf_session_free(f->body[1]);
    free(f->scan_dtype);
    free(f);
}

/* ---------------------------------------------------------------- running */

static xf_tensor *copy_of(const xf_tensor *t)
{
    return xf_tensor_from_data(t->dtype, &t->shape, t->data);
}

/* The truth of a one-element condition tensor. */
static xf_status truth(const xf_rt_flow *f, const xf_tensor *t, const char *what, bool *out, xf_error *err)
{
    if (!t || xf_tensor_numel(t) != 1 || (t->dtype != XF_DT_BOOL && !xf_rt_is_integral(t->dtype)))
        return xf_error_set(err, XF_ERR_INVALID, "node '%s' (%s): %s must be one boolean", f->node->name,
                            f->node->opaque->op_type, what);
    *out = xf_rt_load_i64(t->dtype, t->data, 0) != 0;
    return XF_OK;
}

static xf_status run_if(xf_rt_flow *f, xf_tensor *const *in, xf_tensor **out, xf_error *err)
{
    bool cond;
    xf_status st = truth(f, in[0], "the condition", &cond, err);
    if (st != XF_OK)
        return st;
    return xf_session_run(f->body[cond ? 0 : 1], in + f->n_own, out, err);
}

/* Stacks a loop's per-iteration scan values along a new first axis. */
static xf_status stack(const xf_rt_flow *f, int k, xf_tensor **items, int64_t n, xf_tensor **out, xf_error *err)
{
    xf_shape shape = {.ndim = 1, .dims = {0}};
    xf_dtype dt = f->scan_dtype[k];
    if (n > 0) {
        const xf_tensor *first = items[0];
        if (first->shape.ndim >= XF_MAX_DIMS)
            return xf_error_set(err, XF_ERR_LIMIT, "node '%s' (Loop): scan output %d has too many dims",
                                f->node->name, k);
        dt = first->dtype;
        shape.ndim = first->shape.ndim + 1;
        memcpy(shape.dims + 1, first->shape.dims, sizeof(int64_t) * (size_t)first->shape.ndim);
        for (int64_t i = 1; i < n; i++)
            if (!xf_shape_equal(&items[i]->shape, &first->shape) || items[i]->dtype != dt)
                return xf_error_set(err, XF_ERR_INVALID,
                                    "node '%s' (Loop): scan output %d changes shape between iterations",
                                    f->node->name, k);
    }
    shape.dims[0] = n;
    if (dt == XF_DT_UNDEFINED)
        return xf_error_set(err, XF_ERR_UNSUPPORTED, "node '%s' (Loop): the type of scan output %d is unknown",
                            f->node->name, k);
    *out = xf_tensor_create(dt, &shape);
    if (!*out)
        return xf_error_set(err, XF_ERR_NOMEM, "out of memory");
    size_t step = n > 0 ? items[0]->nbytes : 0;
    for (int64_t i = 0; i < n; i++)
        memcpy((char *)(*out)->data + (size_t)i * step, items[i]->data, step);
    return XF_OK;
}

static xf_status run_loop(xf_rt_flow *f, xf_tensor *const *in, xf_tensor **out, xf_error *err)
{
    int nc = f->n_carried, ns = f->n_scan, n_body_in = 2 + nc + f->n_outer;
    int64_t trips = INT64_MAX;
    bool cond = true;
    xf_status st = XF_OK;
    if (in[0]) {
        if (xf_tensor_numel(in[0]) != 1 || !xf_rt_is_integral(in[0]->dtype))
            return xf_error_set(err, XF_ERR_INVALID, "node '%s' (Loop): the trip count must be one integer",
                                f->node->name);
        trips = xf_rt_load_i64(in[0]->dtype, in[0]->data, 0);
    }
    if (in[1])
        st = truth(f, in[1], "the condition", &cond, err);
    xf_tensor **body_in = calloc((size_t)n_body_in, sizeof *body_in);
    xf_tensor **body_out = calloc((size_t)(1 + nc + ns), sizeof *body_out);
    xf_tensor **carried = calloc((size_t)nc + 1, sizeof *carried);
    xf_tensor ***scans = calloc((size_t)ns + 1, sizeof *scans);
    int64_t n_iter = 0, cap = 0;
    xf_shape scalar = {0};
    xf_tensor *iter = xf_tensor_create(XF_DT_INT64, &scalar), *cond_t = xf_tensor_create(XF_DT_BOOL, &scalar);
    if (!body_in || !body_out || !carried || !scans || !iter || !cond_t)
        st = xf_error_set(err, XF_ERR_NOMEM, "out of memory");
    for (int j = 0; j < nc && st == XF_OK; j++)
        if (!in[2 + j] || !(carried[j] = copy_of(in[2 + j])))
            st = in[2 + j] ? xf_error_set(err, XF_ERR_NOMEM, "out of memory")
                           : xf_error_set(err, XF_ERR_INVALID, "node '%s' (Loop): loop-carried input %d is omitted",
                                          f->node->name, j);
    for (; st == XF_OK && n_iter < trips && cond; n_iter++) {
        ((int64_t *)iter->data)[0] = n_iter;
        ((uint8_t *)cond_t->data)[0] = cond;
        body_in[0] = iter;
        body_in[1] = cond_t;
        for (int j = 0; j < nc; j++)
            body_in[2 + j] = carried[j];
        for (int k = 0; k < f->n_outer; k++)
            body_in[2 + nc + k] = in[f->n_own + k];
        st = xf_session_run(f->body[0], body_in, body_out, err);
        if (st != XF_OK)
            break;
        st = truth(f, body_out[0], "the body's condition", &cond, err);
        xf_tensor_release(body_out[0]);
        for (int j = 0; j < nc; j++) {
            xf_tensor_release(carried[j]);
            carried[j] = body_out[1 + j];
        }
        if (st == XF_OK && n_iter == cap) {
            cap = cap ? 2 * cap : 16;
            for (int k = 0; k < ns && st == XF_OK; k++) {
                xf_tensor **grown = realloc(scans[k], sizeof *grown * (size_t)cap);
                if (grown)
                    scans[k] = grown;
                else
                    st = xf_error_set(err, XF_ERR_NOMEM, "out of memory");
            }
        }
        for (int k = 0; k < ns; k++) {
            if (st == XF_OK)
                scans[k][n_iter] = body_out[1 + nc + k];
            else
                xf_tensor_release(body_out[1 + nc + k]);
        }
        if (st != XF_OK)
            break;
    }
    for (int j = 0; j < nc && st == XF_OK; j++) {
        out[j] = carried[j];
        carried[j] = NULL;
    }
    for (int k = 0; k < ns && st == XF_OK; k++)
        st = stack(f, k, scans[k], n_iter, &out[nc + k], err);
    for (int j = 0; carried && j < nc; j++)
        xf_tensor_release(carried[j]);
    for (int k = 0; scans && k < ns; k++) {
        for (int64_t i = 0; scans[k] && i < n_iter; i++)
            xf_tensor_release(scans[k][i]);
        free(scans[k]);
    }
    xf_tensor_release(iter);
    xf_tensor_release(cond_t);
    free(body_in);
    free(body_out);
    free(carried);
    free(scans);
    return st;
}

xf_status xf_rt_flow_run(xf_rt_flow *f, xf_tensor *const *in, xf_tensor **out, xf_error *err)
{
    for (int k = 0; k < f->node->n_outputs; k++)
        out[k] = NULL;
    xf_status st = f->kind == FLOW_IF ? run_if(f, in, out, err) : run_loop(f, in, out, err);
    if (st != XF_OK)
        for (int k = 0; k < f->node->n_outputs; k++) {
            xf_tensor_release(out[k]);
            out[k] = NULL;
        }
    return st;
}
