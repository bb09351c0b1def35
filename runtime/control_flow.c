/* Control flow: If, Loop, Scan and SequenceMap, and FlexAttention (of
 * ai.onnx.preview), whose score_mod and prob_mod run like a branch on the
 * node's scores and probabilities (flex_attention.c).  Import keeps these nodes
 * opaque and loads their subgraphs as graphs (xf_opaque_body); the session
 * runs such a node by running the chosen branch, or the body once per
 * iteration (SequenceMap: per sequence entry), as a session of its own on
 * the same backend.  Body sessions run in dynamic
 * mode: a branch's shapes may differ from one run to the next, and a loop's
 * carried values from one iteration to the next.  The ONNX-ML ops and
 * ONNX's string ops (ml_ops.c), which have no subgraphs, run here too: on
 * the host, outputs of the shapes their inputs give; and Gradient, whose
 * part of the graph runs as a session of its own (gradient.c). */
#include "xf_rt_internal.h"

#include <stdlib.h>
#include <string.h>

typedef enum flow_kind {
    FLOW_NONE,
    FLOW_IF,
    FLOW_LOOP,
    FLOW_SCAN,
    FLOW_SEQUENCE_MAP,
    FLOW_FLEX,
    FLOW_ML,
    FLOW_GRADIENT
} flow_kind;

struct xf_rt_flow {
    flow_kind kind;
    const xf_node *node; /* of the session's graph, for names in messages */
    int n_own, n_outer;
    int n_carried, n_scan; /* Loop: carried values, scan outputs; Scan: states, scan outputs */
    int n_scan_in;         /* Scan: scan inputs */
    bool batched;          /* Scan of opset 8: inputs lead with sequence_lens and have a batch axis first */
    int64_t opset;
    xf_session *body[2];   /* If: then, else; Loop and Scan: body; FlexAttention: score_mod, prob_mod (NULL:
                            * not given) */
    /* Scan: per scan input, then per scan output, its axis and whether it
     * runs backwards */
    int64_t *axis, *reverse;
    xf_rt_ml *ml; /* an ONNX-ML or string op's plan */
    xf_rt_gradient *gradient;
};

static flow_kind kind_of(const xf_node *n)
{
    if (n->op != XF_OP_OPAQUE || !n->opaque)
        return FLOW_NONE;
    const char *d = n->opaque->domain;
    if (xf_rt_ml_node(n))
        return FLOW_ML;
    if (strcmp(d, "ai.onnx.preview") == 0 && strcmp(n->opaque->op_type, "FlexAttention") == 0)
        return FLOW_FLEX;
    if (strcmp(d, "ai.onnx.preview.training") == 0 && strcmp(n->opaque->op_type, "Gradient") == 0)
        return FLOW_GRADIENT;
    if (d[0] && strcmp(d, "ai.onnx") != 0)
        return FLOW_NONE;
    if (strcmp(n->opaque->op_type, "If") == 0)
        return FLOW_IF;
    if (strcmp(n->opaque->op_type, "Loop") == 0)
        return FLOW_LOOP;
    if (strcmp(n->opaque->op_type, "Scan") == 0)
        return FLOW_SCAN;
    if (strcmp(n->opaque->op_type, "SequenceMap") == 0)
        return FLOW_SEQUENCE_MAP;
    return FLOW_NONE;
}

bool xf_rt_flow_node(const xf_node *n) { return kind_of(n) != FLOW_NONE; }

/* A session for subgraph attr of node `node`: its inputs typed from what
 * they bind to (formal inputs keep their declared types where they have
 * them; `formal` gives the others, n_formal entries, UNDEFINED to keep;
 * formal_of, when not NULL, the values they bind to, whose kind they take). */
static xf_status body_session(const xf_graph *g, int node, const char *attr, int64_t opset, const char *backend,
                              const xf_session_options *inherit, const xf_dtype *formal,
                              const xf_value *const *formal_of, int n_formal,
                              xf_session **out, xf_error *err)
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
        const xf_value *bound = i >= n_formal ? &g->values[n->inputs[o->n_own_inputs + i - n_formal]]
                                : formal_of                ? formal_of[i]
                                                           : NULL;
        xf_dtype want = i < n_formal ? formal[i] : bound->dtype;
        if (want != XF_DT_UNDEFINED && (i >= n_formal || v->dtype == XF_DT_UNDEFINED))
            v->dtype = want;
        if (bound && bound->kind != XF_VK_TENSOR) /* a sequence or optional passed in */
            v->kind = bound->kind;
        if (v->dtype == XF_DT_UNDEFINED)
            st = xf_error_set(err, XF_ERR_UNSUPPORTED, "node '%s' (%s): the type of '%s' is unknown", n->name,
                              o->op_type, v->name);
    }
    xf_session_options opt = xf_rt_inherited_options(inherit);
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

/* Scan's num_scan_inputs and the axes and directions of its scan inputs
 * and outputs (0 and forward where not given). */
static xf_status scan_attrs(xf_rt_flow *f, int64_t opset, xf_error *err)
{
    const xf_node *n = f->node;
    f->batched = opset < 9;
    int n_formal = f->n_own - f->batched;
    const xf_opaque_ints *m = xf_opaque_find_ints(n->opaque, "num_scan_inputs");
    if (!m || m->n != 1 || m->v[0] < 1 || m->v[0] > n_formal)
        return xf_error_set(err, XF_ERR_INVALID, "node '%s' (Scan): num_scan_inputs must be one of 1 to %d",
                            n->name, n_formal);
    f->n_scan_in = (int)m->v[0];
    f->n_carried = n_formal - f->n_scan_in;
    int n_in = f->n_scan_in, n_all = n_in + n->n_outputs - f->n_carried;
    if (n_all < n_in)
        return xf_error_set(err, XF_ERR_INVALID, "node '%s' (Scan) has %d states and %d outputs", n->name,
                            f->n_carried, n->n_outputs);
    f->axis = calloc((size_t)n_all + 1, sizeof *f->axis);
    f->reverse = calloc((size_t)n_all + 1, sizeof *f->reverse);
    if (!f->axis || !f->reverse)
        return xf_error_set(err, XF_ERR_NOMEM, "out of memory");
    static const char *const names[4] = {"scan_input_axes", "scan_input_directions", "scan_output_axes",
                                         "scan_output_directions"};
    static const char *const names8[4] = {"", "directions", "", ""};
    for (int a = 0; a < 4; a++) {
        const xf_opaque_ints *at = xf_opaque_find_ints(n->opaque, (f->batched ? names8 : names)[a]);
        int first = a < 2 ? 0 : n_in, count = a < 2 ? n_in : n_all - n_in;
        int64_t *dst = (a % 2 ? f->reverse : f->axis) + first;
        if (!at)
            continue;
        if (at->n != count)
            return xf_error_set(err, XF_ERR_INVALID, "node '%s' (Scan): %s has %d values, the node needs %d",
                                n->name, names[a], at->n, count);
        for (int i = 0; i < count; i++) {
            if (a % 2 && at->v[i] != 0 && at->v[i] != 1)
                return xf_error_set(err, XF_ERR_INVALID, "node '%s' (Scan): %s may only hold 0 and 1", n->name,
                                    names[a]);
            dst[i] = at->v[i];
        }
    }
    return XF_OK;
}

/* FlexAttention: Q, K, V, then the outer values its modifiers use; each
 * modifier given takes one tensor of the softmax precision and gives one. */
static xf_status flex_create(xf_rt_flow *f, const xf_graph *g, int node, int64_t opset, const char *backend,
                             const xf_session_options *inherit, xf_error *err)
{
    const xf_node *n = f->node;
    if (f->n_own != 3 || n->n_outputs != 1 || n->inputs[0] < 0)
        return xf_error_set(err, XF_ERR_INVALID, "node '%s' (FlexAttention) has %d inputs and %d outputs; it takes "
                            "Q, K and V and gives Y", n->name, f->n_own, n->n_outputs);
    if (n->opaque->n_bodies != n->opaque->n_graph_attrs)
        return xf_error_set(err, XF_ERR_UNSUPPORTED, "node '%s' (FlexAttention): a subgraph did not load, so the "
                            "node can only be carried (-v says why)", n->name);
    xf_dtype sp = xf_rt_flex_precision(n, g->values[n->inputs[0]].dtype);
    if (sp == XF_DT_UNDEFINED)
        return xf_error_set(err, XF_ERR_UNSUPPORTED, "node '%s' (FlexAttention): softmax_precision is not float, "
                            "float16, bfloat16 or double", n->name);
    static const char *const attrs[2] = {"score_mod", "prob_mod"};
    for (int b = 0; b < 2; b++) {
        if (!xf_opaque_find_body(n->opaque, attrs[b]))
            continue;
        xf_status st = body_session(g, node, attrs[b], opset, backend, inherit, &sp, NULL, 1, &f->body[b], err);
        if (st == XF_OK)
            st = check_outputs(f, f->body[b], attrs[b], 1, err);
        if (st != XF_OK)
            return st;
    }
    return XF_OK;
}

xf_status xf_rt_flow_create(const xf_graph *g, int node, int64_t opset, const char *backend,
                            const xf_session_options *inherit,
                            xf_rt_flow **out, xf_error *err)
{
    *out = NULL;
    const xf_node *n = &g->nodes[node];
    xf_rt_flow *f = calloc(1, sizeof *f);
    if (!f)
        return xf_error_set(err, XF_ERR_NOMEM, "out of memory");
    f->kind = kind_of(n);
    f->node = n;
    f->opset = opset;
    f->n_own = n->opaque->n_own_inputs;
    f->n_outer = n->n_inputs - f->n_own;
    xf_status st = XF_OK;
    if (f->kind == FLOW_ML) {
        st = xf_rt_ml_create(n, inherit ? inherit->max_tensor_bytes : 0, &f->ml, err);
    } else if (f->kind == FLOW_GRADIENT) {
        st = xf_rt_gradient_create(g, node, opset, backend, inherit, &f->gradient, err);
    } else if (f->kind == FLOW_FLEX) {
        st = flex_create(f, g, node, opset, backend, inherit, err);
    } else if (f->kind == FLOW_IF) {
        if (f->n_own != 1)
            st = xf_error_set(err, XF_ERR_INVALID, "node '%s' (If) has %d inputs; If takes one", n->name, f->n_own);
        const char *attrs[2] = {"then_branch", "else_branch"};
        for (int b = 0; b < 2 && st == XF_OK; b++) {
            st = body_session(g, node, attrs[b], opset, backend, inherit, NULL, NULL, 0, &f->body[b], err);
            if (st == XF_OK)
                st = check_outputs(f, f->body[b], attrs[b], n->n_outputs, err);
        }
    } else if (f->kind == FLOW_SEQUENCE_MAP) {
        /* input_sequence, additional inputs... -> body(entry or tensor...):
         * a sequence's entries are typed by its element type */
        xf_dtype *formal = malloc(sizeof *formal * (size_t)(f->n_own + 1));
        if (!formal)
            st = xf_error_set(err, XF_ERR_NOMEM, "out of memory");
        for (int j = 0; formal && j < f->n_own; j++)
            formal[j] = n->inputs[j] >= 0 ? g->values[n->inputs[j]].dtype : XF_DT_UNDEFINED;
        if (st == XF_OK && f->n_own < 1)
            st = xf_error_set(err, XF_ERR_INVALID, "node '%s' (SequenceMap) has no input sequence", n->name);
        if (st == XF_OK)
            st = body_session(g, node, "body", opset, backend, inherit, formal, NULL, f->n_own, &f->body[0], err);
        free(formal);
        if (st == XF_OK)
            st = check_outputs(f, f->body[0], "body", n->n_outputs, err);
    } else {
        /* Loop: M, cond, v_initial... -> body(iteration_num, cond, v...);
         * Scan: states..., scan inputs... -> body(states..., slices...) */
        bool loop = f->kind == FLOW_LOOP;
        if (loop)
            f->n_carried = f->n_own - 2;
        else
            st = scan_attrs(f, opset, err);
        f->n_scan = n->n_outputs - f->n_carried;
        if (st == XF_OK && (f->n_carried < 0 || f->n_scan < 0))
            st = xf_error_set(err, XF_ERR_INVALID, "node '%s' (%s) has %d inputs and %d outputs", n->name,
                              n->opaque->op_type, f->n_own, n->n_outputs);
        xf_dtype *formal = st == XF_OK ? malloc(sizeof *formal * (size_t)(f->n_own + 1)) : NULL;
        const xf_value **formal_of = st == XF_OK ? calloc((size_t)f->n_own + 1, sizeof *formal_of) : NULL;
        if (st == XF_OK && (!formal || !formal_of))
            st = xf_error_set(err, XF_ERR_NOMEM, "out of memory");
        if (st == XF_OK) {
            const int *ins = n->inputs + f->batched;
            int n_formal = f->n_own - f->batched;
            for (int j = 0; j < n_formal; j++) {
                formal[j] = ins[j] >= 0 ? g->values[ins[j]].dtype : XF_DT_UNDEFINED;
                formal_of[j] = ins[j] >= 0 && (!loop || j >= 2) ? &g->values[ins[j]] : NULL;
            }
            if (loop) {
                formal[0] = XF_DT_INT64;
                formal[1] = XF_DT_BOOL;
            }
            st = body_session(g, node, "body", opset, backend, inherit, formal, formal_of, n_formal, &f->body[0],
                              err);
        }
        free(formal);
        free(formal_of);
        if (st == XF_OK)
            st = check_outputs(f, f->body[0], "body", (loop ? 1 : 0) + n->n_outputs, err);
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
    free(f->axis);
    free(f->reverse);
    xf_rt_ml_free(f->ml);
    xf_rt_gradient_free(f->gradient);
    free(f);
}

/* ---------------------------------------------------------------- running */

/* A value the loop keeps: a copy of a tensor (the session's are views of
 * buffers it reuses), a new reference to a sequence (immutable). */
static xf_tensor *copy_of(const xf_tensor *t)
{
    if (xf_tensor_is_container(t))
        return xf_tensor_retain((xf_tensor *)t);
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

/* Copies `count` blocks of `block` bytes, read every src_step bytes from
 * src and written every dst_step bytes from dst. */
static void copy_blocks(char *dst, size_t dst_step, const char *src, size_t src_step, int64_t count, size_t block)
{
    for (int64_t i = 0; block > 0 && i < count; i++)
        memcpy(dst + (size_t)i * dst_step, src + (size_t)i * src_step, block);
}

/* Scan inputs and outputs are sliced and stacked by whole bytes. */
static xf_status packed_refused(const xf_rt_flow *f, const char *what, int k, xf_dtype t, xf_error *err)
{
    return xf_error_set(err, XF_ERR_UNSUPPORTED, "node '%s' (%s): scan %s %d is of type %s, packed below a byte, "
                        "which scans do not slice or stack", f->node->name, f->node->opaque->op_type, what, k,
                        xf_dtype_name(t));
}

/* The i-th slice of t along axis. */
static xf_tensor *slice(const xf_tensor *t, int axis, int64_t i)
{
    xf_shape shape = {.ndim = t->shape.ndim - 1};
    int64_t outer = 1;
    size_t block = xf_dtype_size(t->dtype);
    for (int d = 0, j = 0; d < t->shape.ndim; d++) {
        if (d == axis)
            continue;
        shape.dims[j++] = t->shape.dims[d];
        if (d < axis)
            outer *= t->shape.dims[d];
        else
            block *= (size_t)t->shape.dims[d];
    }
    xf_tensor *r = xf_tensor_create_unset(t->dtype, &shape);
    if (r && t->data) /* an empty input has no buffer: its slices are empty too */
        copy_blocks(r->data, block, (const char *)t->data + (size_t)i * block, block * (size_t)t->shape.dims[axis],
                    outer, block);
    return r;
}

/* The body output that gives scan output k's elements. */
static const xf_value *scan_element(const xf_rt_flow *f, int k)
{
    const xf_graph *bg = xf_session_graph(f->body[0]);
    return &bg->values[bg->outputs[(f->kind == FLOW_LOOP ? 1 : 0) + f->n_carried + k]];
}

/* Stacks scan output k's per-iteration elements along a new axis, the
 * last iteration's first when reverse.  With no iterations, elements of
 * shape `empty` (a Loop's: one-dimensional, when NULL). */
static xf_status stack(const xf_rt_flow *f, int k, xf_tensor **items, int64_t n, int64_t axis, bool reverse,
                       const xf_shape *empty, xf_tensor **out, xf_error *err)
{
    const char *op = f->node->opaque->op_type;
    xf_dtype dt = scan_element(f, k)->dtype;
    xf_shape elem = empty ? *empty : (xf_shape){0};
    if (n > 0) {
        elem = items[0]->shape;
        dt = items[0]->dtype;
        for (int64_t i = 1; i < n; i++)
            if (!xf_shape_equal(&items[i]->shape, &elem) || items[i]->dtype != dt)
                return xf_error_set(err, XF_ERR_INVALID,
                                    "node '%s' (%s): scan output %d changes shape between iterations",
                                    f->node->name, op, k);
    } else if (xf_shape_numel(&elem) < 0)
        return xf_error_set(err, XF_ERR_UNSUPPORTED,
                            "node '%s' (%s): scan output %d has no iterations and its element shape is unknown",
                            f->node->name, op, k);
    if (elem.ndim >= XF_MAX_DIMS)
        return xf_error_set(err, XF_ERR_LIMIT, "node '%s' (%s): scan output %d has too many dims", f->node->name,
                            op, k);
    int64_t given = axis;
    if (axis < 0)
        axis += elem.ndim + 1;
    if (axis < 0 || axis > elem.ndim)
        return xf_error_set(err, XF_ERR_INVALID, "node '%s' (%s): scan output %d has no axis %lld", f->node->name,
                            op, k, (long long)given);
    if (dt == XF_DT_UNDEFINED)
        return xf_error_set(err, XF_ERR_UNSUPPORTED, "node '%s' (%s): the type of scan output %d is unknown",
                            f->node->name, op, k);
    if (xf_dtype_size(dt) == 0)
        return packed_refused(f, "output", k, dt, err);
    xf_shape shape = {.ndim = elem.ndim + 1};
    int64_t outer = 1;
    size_t block = xf_dtype_size(dt);
    for (int d = 0; d < elem.ndim; d++) {
        shape.dims[d < axis ? d : d + 1] = elem.dims[d];
        if (d < axis)
            outer *= elem.dims[d];
        else
            block *= (size_t)elem.dims[d];
    }
    shape.dims[axis] = n;
    *out = xf_tensor_create_unset(dt, &shape);
    if (!*out)
        return xf_error_set(err, XF_ERR_NOMEM, "out of memory");
    for (int64_t i = 0; (*out)->data && i < n; i++) /* an empty output has no buffer, nothing to copy */
        copy_blocks((char *)(*out)->data + (size_t)(reverse ? n - 1 - i : i) * block, (size_t)n * block,
                    items[i]->data, block, outer, block);
    return XF_OK;
}

/* Loop: the trip count (INT64_MAX when omitted) and the first condition. */
static xf_status loop_trips(const xf_rt_flow *f, xf_tensor *const *in, int64_t *trips, bool *cond, xf_error *err)
{
    *trips = INT64_MAX;
    *cond = true;
    if (in[0]) {
        if (xf_tensor_numel(in[0]) != 1 || !xf_rt_is_integral(in[0]->dtype))
            return xf_error_set(err, XF_ERR_INVALID, "node '%s' (Loop): the trip count must be one integer",
                                f->node->name);
        *trips = xf_rt_load_i64(in[0]->dtype, in[0]->data, 0);
    }
    return in[1] ? truth(f, in[1], "the condition", cond, err) : XF_OK;
}

/* Scan: the axis of each scan input, and their common length along it. */
static xf_status scan_trips(const xf_rt_flow *f, xf_tensor *const *in, int *axes, int64_t *trips, xf_error *err)
{
    for (int m = 0; m < f->n_scan_in; m++) {
        const xf_tensor *t = in[f->n_carried + m];
        if (!t)
            return xf_error_set(err, XF_ERR_INVALID, "node '%s' (Scan): scan input %d is omitted", f->node->name, m);
        int64_t a = f->axis[m] < 0 ? f->axis[m] + t->shape.ndim : f->axis[m];
        if (a < 0 || a >= t->shape.ndim)
            return xf_error_set(err, XF_ERR_INVALID, "node '%s' (Scan): scan input %d, of %d dims, has no axis %lld",
                                f->node->name, m, t->shape.ndim, (long long)f->axis[m]);
        axes[m] = (int)a;
        if (m == 0)
            *trips = t->shape.dims[a];
        else if (t->shape.dims[a] != *trips)
            return xf_error_set(err, XF_ERR_INVALID,
                                "node '%s' (Scan): scan input %d has %lld slices along its axis, scan input 0 has "
                                "%lld",
                                f->node->name, m, (long long)t->shape.dims[a], (long long)*trips);
    }
    return XF_OK;
}

/* Scan with no iterations: the shapes of the body's scan outputs as
 * inference gives them from the shapes of its inputs (unknown where it
 * cannot tell). */
static xf_status empty_shapes(const xf_rt_flow *f, xf_tensor *const *in, const int *axes, xf_shape *out,
                              xf_error *err)
{
    xf_graph *bg = xf_graph_clone(xf_session_graph(f->body[0]));
    if (!bg)
        return xf_error_set(err, XF_ERR_NOMEM, "out of memory");
    int nc = f->n_carried, nm = f->n_scan_in;
    for (int i = 0; i < bg->n_inputs; i++) {
        xf_shape *s = &bg->values[bg->inputs[i]].shape;
        *s = in[i] ? in[i]->shape : (xf_shape){.ndim = -1};
        if (in[i] && i >= nc && i < nc + nm) {
            s->ndim--;
            memmove(s->dims + axes[i - nc], s->dims + axes[i - nc] + 1,
                    sizeof *s->dims * (size_t)(s->ndim - axes[i - nc]));
        }
    }
    xf_error ignored;
    bool known = xf_graph_infer_shapes(bg, f->opset, &ignored) == XF_OK;
    for (int k = 0; k < f->n_scan; k++)
        out[k] = known ? bg->values[bg->outputs[nc + k]].shape : (xf_shape){.ndim = -1};
    xf_graph_free(bg);
    return XF_OK;
}

/* Loop and Scan: runs the body once per iteration.  Its inputs are the
 * leading ones (Loop: the iteration number and the condition), the carried
 * values, the iteration's slices of the scan inputs (Scan), then the outer
 * values; its outputs the leading one (Loop: the condition), the new
 * carried values, then the iteration's scan output elements. */
static xf_status run_iterations(xf_rt_flow *f, xf_tensor *const *in, xf_tensor **out, xf_error *err)
{
    bool loop = f->kind == FLOW_LOOP;
    int lead = loop ? 2 : 0, lead_out = loop ? 1 : 0;
    int nc = f->n_carried, ns = f->n_scan, nm = f->n_scan_in, n_body_in = lead + nc + nm + f->n_outer;
    int64_t trips = 0;
    bool cond = true;
    xf_tensor **body_in = calloc((size_t)n_body_in + 1, sizeof *body_in);
    xf_tensor **body_out = calloc((size_t)(lead_out + nc + ns) + 1, sizeof *body_out);
    xf_tensor **carried = calloc((size_t)nc + 1, sizeof *carried);
    xf_tensor ***scans = calloc((size_t)ns + 1, sizeof *scans);
    int *axes = calloc((size_t)nm + 1, sizeof *axes);
    xf_shape *empty = calloc((size_t)ns + 1, sizeof *empty);
    int64_t n_iter = 0, cap = 0;
    xf_shape scalar = {0};
    xf_tensor *iter = xf_tensor_create(XF_DT_INT64, &scalar), *cond_t = xf_tensor_create(XF_DT_BOOL, &scalar);
    xf_status st = XF_OK;
    if (!body_in || !body_out || !carried || !scans || !axes || !empty || !iter || !cond_t)
        st = xf_error_set(err, XF_ERR_NOMEM, "out of memory");
    if (st == XF_OK)
        st = loop ? loop_trips(f, in, &trips, &cond, err) : scan_trips(f, in, axes, &trips, err);
    for (int j = 0; j < nc && st == XF_OK; j++)
        if (!in[lead + j] || !(carried[j] = copy_of(in[lead + j])))
            st = in[lead + j] ? xf_error_set(err, XF_ERR_NOMEM, "out of memory")
                              : xf_error_set(err, XF_ERR_INVALID, "node '%s' (%s): %s input %d is omitted",
                                             f->node->name, f->node->opaque->op_type,
                                             loop ? "loop-carried" : "state", j);
    for (; st == XF_OK && n_iter < trips && cond; n_iter++) {
        if (loop) {
            ((int64_t *)iter->data)[0] = n_iter;
            ((uint8_t *)cond_t->data)[0] = cond;
            body_in[0] = iter;
            body_in[1] = cond_t;
        }
        for (int j = 0; j < nc; j++)
            body_in[lead + j] = carried[j];
        for (int m = 0; m < nm && st == XF_OK; m++) {
            const xf_tensor *t = in[nc + m];
            int64_t at = f->reverse[m] ? trips - 1 - n_iter : n_iter;
            if (xf_dtype_size(t->dtype) == 0)
                st = packed_refused(f, "input", m, t->dtype, err);
            else if (!(body_in[nc + m] = slice(t, axes[m], at)))
                st = xf_error_set(err, XF_ERR_NOMEM, "out of memory");
        }
        for (int k = 0; k < f->n_outer; k++)
            body_in[lead + nc + nm + k] = in[lead + nc + nm + k];
        if (st == XF_OK)
            st = xf_session_run(f->body[0], body_in, body_out, err);
        for (int m = 0; m < nm; m++) {
            xf_tensor_release(body_in[nc + m]);
            body_in[nc + m] = NULL;
        }
        if (st != XF_OK)
            break;
        if (loop) {
            st = truth(f, body_out[0], "the body's condition", &cond, err);
            xf_tensor_release(body_out[0]);
        }
        for (int j = 0; j < nc; j++) {
            xf_tensor_release(carried[j]);
            carried[j] = body_out[lead_out + j];
        }
        if (st == XF_OK && n_iter == cap) {
            cap = loop ? (cap ? 2 * cap : 16) : trips;
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
                scans[k][n_iter] = body_out[lead_out + nc + k];
            else
                xf_tensor_release(body_out[lead_out + nc + k]);
        }
        if (st != XF_OK)
            break;
    }
    for (int j = 0; j < nc && st == XF_OK; j++) {
        out[j] = carried[j];
        carried[j] = NULL;
    }
    if (st == XF_OK && !loop && n_iter == 0)
        st = empty_shapes(f, in, axes, empty, err);
    for (int k = 0; k < ns && st == XF_OK; k++)
        st = stack(f, k, scans[k], n_iter, loop ? 0 : f->axis[nm + k], !loop && f->reverse[nm + k],
                   loop ? NULL : &empty[k], &out[nc + k], err);
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
    free(axes);
    free(empty);
    return st;
}

/* Frees items (may be NULL): n lists (each may be NULL) of count tensors. */
static void free_lists(xf_tensor ***items, int n, int64_t count)
{
    for (int k = 0; items && k < n; k++) {
        for (int64_t i = 0; items[k] && i < count; i++)
            xf_tensor_release(items[k][i]);
        free(items[k]);
    }
    free(items);
}

/* Scan of opset 8: the scan of each batch entry (entry b of every state
 * and scan input), the results stacked along a new first axis. */
static xf_status run_batched(xf_rt_flow *f, xf_tensor *const *in, xf_tensor **out, xf_error *err)
{
    const xf_node *n = f->node;
    if (in[0])
        return xf_error_set(err, XF_ERR_UNSUPPORTED, "node '%s' (Scan): sequence_lens is not supported", n->name);
    int n_in = n->n_inputs - 1, n_out = n->n_outputs, n_batched = f->n_carried + f->n_scan_in;
    int64_t batch = 0;
    for (int j = 0; j < n_batched; j++) {
        const xf_tensor *t = in[1 + j];
        if (!t || t->shape.ndim < 1 || (j > 0 && t->shape.dims[0] != batch))
            return xf_error_set(err, XF_ERR_INVALID, "node '%s' (Scan): input %d %s", n->name, 1 + j,
                                !t ? "is omitted" : "does not have the batch size of input 1");
        batch = t->shape.dims[0];
    }
    xf_tensor **in_b = calloc((size_t)n_in + 1, sizeof *in_b);
    xf_tensor ***items = calloc((size_t)n_out + 1, sizeof *items);
    xf_tensor **out_b = calloc((size_t)n_out + 1, sizeof *out_b);
    xf_status st = in_b && items && out_b ? XF_OK : xf_error_set(err, XF_ERR_NOMEM, "out of memory");
    for (int k = 0; k < n_out && st == XF_OK; k++)
        if (!(items[k] = calloc((size_t)batch + 1, sizeof **items)))
            st = xf_error_set(err, XF_ERR_NOMEM, "out of memory");
    for (int j = n_batched; j < n_in && st == XF_OK; j++)
        in_b[j] = in[1 + j];
    for (int64_t b = 0; b < batch && st == XF_OK; b++) {
        for (int j = 0; j < n_batched && st == XF_OK; j++)
            if (xf_dtype_size(in[1 + j]->dtype) == 0)
                st = packed_refused(f, "input", j, in[1 + j]->dtype, err);
            else if (!(in_b[j] = slice(in[1 + j], 0, b)))
                st = xf_error_set(err, XF_ERR_NOMEM, "out of memory");
        if (st == XF_OK)
            st = run_iterations(f, in_b, out_b, err);
        for (int j = 0; j < n_batched; j++) {
            xf_tensor_release(in_b[j]);
            in_b[j] = NULL;
        }
        for (int k = 0; k < n_out; k++) {
            if (st == XF_OK)
                items[k][b] = out_b[k];
            else
                xf_tensor_release(out_b[k]);
            out_b[k] = NULL;
        }
    }
    for (int k = 0; k < n_out && st == XF_OK; k++)
        st = stack(f, k - f->n_carried, items[k], batch, 0, false, &(xf_shape){.ndim = -1}, &out[k], err);
    free_lists(items, n_out, batch);
    free(in_b);
    free(out_b);
    return st;
}

/* SequenceMap: the body once per entry of the input sequence, given that
 * entry, the same entry of each additional sequence input (of the same
 * length) and each additional tensor input whole; output k is the sequence
 * of the body's output k. */
static xf_status run_sequence_map(xf_rt_flow *f, xf_tensor *const *in, xf_tensor **out, xf_error *err)
{
    const xf_node *n = f->node;
    int n_out = n->n_outputs, n_in = f->n_own + f->n_outer;
    if (!in[0] || !in[0]->is_sequence)
        return xf_error_set(err, XF_ERR_INVALID, "node '%s' (SequenceMap): input 0 must be a sequence", n->name);
    int64_t len = in[0]->n_items;
    for (int j = 0; j < f->n_own; j++) {
        if (in[j] && in[j]->is_sequence && in[j]->n_items > 0 && in[j]->items[0]->is_map)
            return xf_error_set(err, XF_ERR_UNSUPPORTED, "node '%s' (SequenceMap): input %d is a sequence of maps; "
                                "SequenceMap takes sequences of tensors", n->name, j);
        if (j > 0 && (!in[j] || in[j]->is_optional))
            return xf_error_set(err, XF_ERR_INVALID, "node '%s' (SequenceMap): input %d must be a tensor or a sequence",
                                n->name, j);
        if (j > 0 && in[j]->is_sequence && in[j]->n_items != len)
            return xf_error_set(err, XF_ERR_INVALID,
                                "node '%s' (SequenceMap): input %d has %lld entries, the input sequence %lld", n->name,
                                j, (long long)in[j]->n_items, (long long)len);
    }
    xf_tensor **body_in = calloc((size_t)n_in + 1, sizeof *body_in);
    xf_tensor **body_out = calloc((size_t)n_out + 1, sizeof *body_out);
    xf_tensor ***items = calloc((size_t)n_out + 1, sizeof *items);
    xf_status st = body_in && body_out && items ? XF_OK : xf_error_set(err, XF_ERR_NOMEM, "out of memory");
    for (int k = 0; k < n_out && st == XF_OK; k++)
        if (!(items[k] = calloc((size_t)len + 1, sizeof **items)))
            st = xf_error_set(err, XF_ERR_NOMEM, "out of memory");
    for (int64_t i = 0; i < len && st == XF_OK; i++) {
        for (int j = 0; j < n_in; j++)
            body_in[j] = j < f->n_own && in[j]->is_sequence ? in[j]->items[i] : in[j];
        st = xf_session_run(f->body[0], body_in, body_out, err);
        for (int k = 0; k < n_out && st == XF_OK; k++) {
            items[k][i] = body_out[k];
            body_out[k] = NULL;
            if (xf_tensor_is_container(items[k][i]))
                st = xf_error_set(err, XF_ERR_UNSUPPORTED, "node '%s' (SequenceMap): body output %d is a %s, not a tensor",
                                  n->name, k, xf_kind_name(xf_tensor_kind(items[k][i])));
        }
    }
    const xf_graph *bg = xf_session_graph(f->body[0]);
    for (int k = 0; k < n_out && st == XF_OK; k++) {
        xf_dtype dt = len > 0 ? items[k][0]->dtype : bg->values[bg->outputs[k]].dtype;
        if (!(out[k] = xf_sequence_create(dt, len, items[k])))
            st = xf_error_set(err, XF_ERR_INVALID, "node '%s' (SequenceMap): body output %d changes type between entries",
                              n->name, k);
    }
    free_lists(items, n_out, len);
    free(body_in);
    free(body_out);
    return st;
}

xf_status xf_rt_flow_run(xf_rt_flow *f, xf_tensor *const *in, xf_tensor **out, xf_error *err)
{
    for (int k = 0; k < f->node->n_outputs; k++)
        out[k] = NULL;
    xf_status st = f->kind == FLOW_IF             ? run_if(f, in, out, err)
                   : f->kind == FLOW_ML           ? xf_rt_ml_run(f->ml, in, out, err)
                   : f->kind == FLOW_GRADIENT     ? xf_rt_gradient_run(f->gradient, in, out, err)
                   : f->kind == FLOW_FLEX
                       ? xf_rt_flex_run(f->node, in, in + f->n_own, f->n_outer, f->body[0], f->body[1], out, err)
                   : f->kind == FLOW_SEQUENCE_MAP ? run_sequence_map(f, in, out, err)
                   : f->batched                   ? run_batched(f, in, out, err)
                                                  : run_iterations(f, in, out, err);
    if (st != XF_OK)
        for (int k = 0; k < f->node->n_outputs; k++) {
            xf_tensor_release(out[k]);
            out[k] = NULL;
        }
    return st;
}
