/* Sessions: a graph bound to a backend, run in static mode (memory planned
 * once, nodes prepared once) or dynamic mode (shapes inferred per run from
 * the actual tensors), with per-node timing for the cost model. */
#include "session_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The largest result a session computes from constants when it is made
 * whatever the constants it reads (larger ones fold where no larger than
 * those; the rest run, as given): a resampler's sinc kernel, 160 x 475
 * floats from a Range of each side, is 297 KiB. */
#define SESSION_FOLD_MAX_BYTES ((size_t)1 << 20)

/* Whether a tensor of `bytes` for value `name` fits the session's limit
 * (else sets err). */
static bool fits(const xf_session *s, size_t bytes, const char *name, xf_error *err)
{
    if (!s->opt.max_tensor_bytes || bytes <= s->opt.max_tensor_bytes)
        return true;
    xf_error_set(err, XF_ERR_LIMIT, "'%s' needs %zu bytes, over the session's limit of %zu per tensor", name, bytes,
                 s->opt.max_tensor_bytes);
    return false;
}

static const xf_tensor_view omitted_view = {.dtype = XF_DT_UNDEFINED, .shape = {.ndim = -1}};

static size_t value_bytes(const xf_value *v)
{
    int64_t numel = xf_shape_numel(&v->shape);
    return xf_dtype_nbytes(v->dtype, numel);
}

static bool shape_known(const xf_shape *s) { return xf_shape_numel(s) >= 0; }

/* The views of node i's operands, from the per-value table. */
static void node_views(xf_session *s, const xf_graph *g, const xf_tensor_view *views, int i)
{
    const xf_node *n = &g->nodes[i];
    for (int k = 0; k < n->n_inputs; k++)
        s->in[k] = n->inputs[k] >= 0 ? views[n->inputs[k]] : omitted_view;
    for (int k = 0; k < n->n_outputs; k++)
        s->out[k] = n->outputs[k] >= 0 ? views[n->outputs[k]] : omitted_view;
}

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Runs node i of g on the operands in s->in / s->out; stores its time in
 * *seconds when timing. */
static xf_status run_one(xf_session *s, const xf_graph *g, int i, void *state, double *seconds, xf_error *err)
{
    if (seconds && s->be->timer_start) {
        xf_status st = s->be->timer_start(s->ctx, err);
        if (st == XF_OK)
            st = s->be->run_node(s->ctx, g, i, state, s->in, s->out, err);
        return st == XF_OK ? s->be->timer_stop(s->ctx, seconds, err) : st;
    }
    double t0 = seconds ? now_seconds() : 0.0;
    xf_status st = s->be->run_node(s->ctx, g, i, state, s->in, s->out, err);
    if (st == XF_OK && seconds && s->be->synchronize)
        st = s->be->synchronize(s->ctx, err);
    if (seconds)
        *seconds = now_seconds() - t0;
    return st;
}

/* ---------------------------------------------------------------- static mode */

static xf_status run_static(xf_session *s, xf_tensor *const *inputs, xf_tensor **outputs,
                            double *node_seconds, xf_error *err)
{
    xf_status st = xf_session_bind_inputs(s, s->views, inputs, err);
    for (int i = 0; i < s->g->n_nodes && st == XF_OK; i++) {
        if (xf_memplan_skips(&s->plan, i)) { /* the plan did its work: a view, a Concat */
            if (node_seconds)
                node_seconds[i] = 0;
            continue;
        }
        node_views(s, s->g, s->views, i);
        st = run_one(s, s->g, i, s->states[i], node_seconds ? &node_seconds[i] : NULL, err);
    }
    if (st == XF_OK && outputs)
        st = xf_session_collect_outputs(s, s->views, NULL, outputs, err);
    return st;
}

/* Plans memory around the groups of nodes the backend runs as one, with
 * the Concats and Splits it lets the plan do and the outputs it lets take
 * their inputs' bytes. */
static xf_status plan_memory(xf_session *s, xf_error *err)
{
    size_t nn = (size_t)(s->g->n_nodes > 0 ? s->g->n_nodes : 1);
    int *group = malloc(sizeof *group * nn);
    xf_accumulate *accumulate = malloc(sizeof *accumulate * nn);
    bool *in_place = malloc(sizeof *in_place * nn);
    if (!group || !in_place || !accumulate) {
        free(group);
        free(in_place);
        free(accumulate);
        return xf_error_set(err, XF_ERR_NOMEM, "out of memory");
    }
    for (int i = 0; i < s->g->n_nodes; i++) {
        group[i] = i;
        xf_op op = s->g->nodes[i].op;
        in_place[i] = (op == XF_OP_CONCAT || op == XF_OP_SPLIT) &&
                      (!s->be->in_place || s->be->in_place(s->ctx, s->g, i));
    }
    if (s->be->fusion_groups)
        s->be->fusion_groups(s->ctx, s->g, group);
    for (int i = 0; i < s->g->n_nodes; i++)
        if (!s->be->accumulates_into ||
            !s->be->accumulates_into(s->ctx, s->g, i, &accumulate[i].reader, &accumulate[i].input))
            accumulate[i] = (xf_accumulate){-1, -1};
    xf_status st =
        xf_memplan_compute_grouped(s->g, s->be->fusion_groups ? group : NULL, in_place, accumulate, &s->plan, err);
    free(group);
    free(in_place);
    free(accumulate);
    return st;
}

static xf_status setup_static(xf_session *s, xf_error *err)
{
    /* graph-level choices first: the nodes a backend fuses decide which
     * values may share bytes */
    xf_status st = XF_OK;
    if (s->be->prepare_graph && (st = s->be->prepare_graph(s->ctx, s->g, err)) != XF_OK)
        return st;
    st = plan_memory(s, err);
    if (st != XF_OK)
        return st;
    for (int v = 0; v < s->g->n_values; v++)
        if (s->plan.offset[v] >= 0 && !fits(s, value_bytes(&s->g->values[v]), s->g->values[v].name, err))
            return XF_ERR_LIMIT;
    if (s->plan.arena_bytes) {
        s->arena = s->be->alloc(s->ctx, s->plan.arena_bytes);
        if (!s->arena)
            return xf_error_set(err, XF_ERR_NOMEM, "cannot allocate a %zu-byte arena on backend %s",
                                s->plan.arena_bytes, s->be->name);
    }
    for (int v = 0; v < s->g->n_values; v++) {
        const xf_value *val = &s->g->values[v];
        if (s->plan.offset[v] >= 0) {
            s->views[v] = (xf_tensor_view){val->dtype, val->shape,
                                           s->arena ? (char *)s->arena + s->plan.offset[v] : NULL};
        } else if (val->is_input && !s->be->host_memory && value_bytes(val)) {
            s->views[v] = (xf_tensor_view){val->dtype, val->shape, s->be->alloc(s->ctx, value_bytes(val))};
            if (!s->views[v].data)
                return xf_error_set(err, XF_ERR_NOMEM, "cannot allocate input '%s' on backend %s", val->name,
                                    s->be->name);
            s->owned[v] = true;
        }
    }
    s->states = calloc((size_t)s->g->n_nodes + 1, sizeof *s->states);
    if (!s->states)
        return xf_error_set(err, XF_ERR_NOMEM, "out of memory");
    for (int i = 0; i < s->g->n_nodes && s->be->prepare; i++) {
        if (xf_memplan_skips(&s->plan, i))
            continue;
        node_views(s, s->g, s->views, i);
        st = s->be->prepare(s->ctx, s->g, i, s->in, s->out, &s->states[i], err);
        if (st != XF_OK)
            return st;
    }
    return XF_OK;
}

/* ---------------------------------------------------------------- dynamic mode */

/* A block a finished value held, and whether this run gave it back. */
typedef struct dyn_block {
    void *p;
    size_t bytes;
    bool this_run;
} dyn_block;

/* Blocks this large go to the pool, up to this many bytes in all.  The C
 * library hands blocks of many megabytes back to the system when freed,
 * and their pages fault in again (zeroed) when the next run allocates
 * them: a run of Faster R-CNN's box head spent milliseconds per large
 * tensor on that. */
#define DYN_POOL_MIN ((size_t)64 << 10)
#define DYN_POOL_MAX ((size_t)1 << 30)

/* A block of at least `bytes` for value v: the smallest pooled one of up
 * to twice the size, else a new one. */
static void *dyn_alloc(xf_session *s, int v, size_t bytes)
{
    int best = -1;
    for (int i = 0; bytes >= DYN_POOL_MIN && i < s->n_pool; i++)
        if (s->pool[i].bytes >= bytes && s->pool[i].bytes / 2 <= bytes &&
            (best < 0 || s->pool[i].bytes < s->pool[best].bytes))
            best = i;
    if (best < 0) {
        s->block_bytes[v] = bytes;
        return s->be->alloc(s->ctx, bytes);
    }
    void *p = s->pool[best].p;
    s->block_bytes[v] = s->pool[best].bytes;
    s->pool_bytes -= s->pool[best].bytes;
    s->pool[best] = s->pool[--s->n_pool];
    return p;
}

/* Value v's block back: to the pool when it is large and the pool has room. */
static void dyn_free(xf_session *s, int v, void *p)
{
    size_t bytes = s->block_bytes[v];
    if (p && bytes >= DYN_POOL_MIN && s->pool_bytes + bytes <= DYN_POOL_MAX && s->n_pool == s->cap_pool) {
        int cap = s->cap_pool ? 2 * s->cap_pool : 16;
        dyn_block *grown = realloc(s->pool, sizeof *grown * (size_t)cap);
        if (grown) {
            s->pool = grown;
            s->cap_pool = cap;
        }
    }
    if (p && bytes >= DYN_POOL_MIN && s->pool_bytes + bytes <= DYN_POOL_MAX && s->n_pool < s->cap_pool) {
        s->pool[s->n_pool++] = (dyn_block){p, bytes, true};
        s->pool_bytes += bytes;
    } else {
        s->be->free(s->ctx, p);
    }
}

/* After a run: the blocks it did not give back go (all of them when all). */
static void dyn_pool_trim(xf_session *s, bool all)
{
    for (int i = 0; i < s->n_pool;) {
        if (all || !s->pool[i].this_run) {
            s->be->free(s->ctx, s->pool[i].p);
            s->pool_bytes -= s->pool[i].bytes;
            s->pool[i] = s->pool[--s->n_pool];
        } else {
            s->pool[i++].this_run = false;
        }
    }
}

/* Node i's input values as tensors, for shape inference to read
 * (Reshape's shape, Slice's starts, ...).  Host memory only. */
static const xf_tensor *const *inference_inputs(xf_session *s, const xf_graph *g, const xf_tensor_view *views,
                                                int i)
{
    const xf_node *n = &g->nodes[i];
    for (int k = 0; k < n->n_inputs; k++) {
        int v = n->inputs[k];
        if (v < 0) {
            s->tmp_ptr[k] = NULL;
            continue;
        }
        if (s->held[v]) {
            s->tmp_ptr[k] = s->held[v];
            continue;
        }
        if (g->values[v].init && g->values[v].init->dtype == XF_DT_STRING) { /* the strings are the tensor's */
            s->tmp_ptr[k] = g->values[v].init;
            continue;
        }
        const xf_tensor_view *w = &views[v];
        int64_t numel = xf_shape_numel(&w->shape);
        s->tmp[k] = (xf_tensor){.refcount = 1, .dtype = w->dtype, .shape = w->shape, .data = w->data,
                                .nbytes = xf_dtype_nbytes(w->dtype, numel)};
        s->tmp_ptr[k] = &s->tmp[k];
    }
    return s->tmp_ptr;
}

static void free_dynamic(xf_session *s, xf_tensor_view *views, bool *owned, int n_values)
{
    for (int v = 0; v < n_values; v++)
        if (owned[v])
            dyn_free(s, v, views[v].data);
    dyn_pool_trim(s, false);
}

/* Values whose last reader is node i go back to the backend. */
static void release_consumed(xf_session *s, const xf_graph *g, xf_tensor_view *views, bool *owned, int i)
{
    const xf_node *n = &g->nodes[i];
    for (int k = 0; k < n->n_inputs + n->n_outputs; k++) {
        int v = k < n->n_inputs ? n->inputs[k] : n->outputs[k - n->n_inputs];
        if (v >= 0 && owned[v] && s->last_use[v] <= i) {
            dyn_free(s, v, views[v].data);
            owned[v] = false;
        }
        if (v >= 0 && s->held[v] && s->last_use[v] <= i) {
            xf_tensor_release(s->held[v]);
            s->held[v] = NULL;
        }
    }
}

/* Runs node i of g on the host, as the session does for control flow
 * (its outputs' shapes are what its subgraphs produce), the sequence ops
 * and standard ops on strings: sequences and strings it makes are held,
 * tensors copied to the backend. */
static xf_status run_host_node(xf_session *s, xf_graph *g, xf_tensor_view *views, bool *owned, int i,
                               double *seconds, xf_error *err)
{
    const xf_node *n = &g->nodes[i];
    xf_tensor **outs = calloc((size_t)n->n_outputs + 1, sizeof *outs);
    if (!outs)
        return xf_error_set(err, XF_ERR_NOMEM, "out of memory");
    const xf_tensor *const *ins = inference_inputs(s, g, views, i);
    double t0 = seconds ? now_seconds() : 0.0;
    xf_status st = s->flows && s->flows[i] ? xf_rt_flow_run(s->flows[i], (xf_tensor *const *)ins, outs, err)
                   : xf_rt_seq_node(n)     ? xf_rt_seq_run(g, i, (xf_tensor *const *)ins, outs, err)
                                           : xf_rt_string_tensor_run(n, (xf_tensor *const *)ins, outs, err);
    if (seconds)
        *seconds = now_seconds() - t0;
    for (int k = 0; k < n->n_outputs && st == XF_OK; k++) {
        int v = n->outputs[k];
        if (v < 0)
            continue;
        const xf_tensor *t = outs[k];
        if (!fits(s, t->nbytes, g->values[v].name, err)) {
            st = XF_ERR_LIMIT;
            break;
        }
        g->values[v].kind = xf_tensor_kind(t);
        g->values[v].dtype = t->dtype;
        g->values[v].shape = t->shape;
        if (xf_tensor_is_container(t) || t->dtype == XF_DT_STRING) { /* strings: the host ops' */
            views[v] = (xf_tensor_view){t->dtype, t->shape, NULL};
            s->held[v] = outs[k];
            outs[k] = NULL;
            continue;
        }
        views[v] = (xf_tensor_view){t->dtype, t->shape, dyn_alloc(s, v, t->nbytes)};
        owned[v] = views[v].data != NULL;
        if (t->nbytes && !views[v].data)
            st = xf_error_set(err, XF_ERR_NOMEM, "cannot allocate %zu bytes for '%s'", t->nbytes,
                              g->values[v].name);
        else if (t->nbytes)
            st = s->be->copy_in(s->ctx, views[v].data, t->data, t->nbytes, err);
    }
    for (int k = 0; k < n->n_outputs; k++)
        xf_tensor_release(outs[k]);
    free(outs);
    release_consumed(s, g, views, owned, i);
    return st;
}

static bool same_operands(const xf_tensor_view *a, const xf_tensor_view *b, int n)
{
    for (int k = 0; k < n; k++)
        if (a[k].dtype != b[k].dtype || !xf_shape_equal(&a[k].shape, &b[k].shape))
            return false;
    return true;
}

static void drop_dynamic_state(xf_session *s, int i)
{
    if (s->dyn_states[i] && s->be->release)
        s->be->release(s->ctx, s->dyn_states[i]);
    s->dyn_states[i] = NULL;
    free(s->dyn_seen[i]);
    s->dyn_seen[i] = NULL;
}

/* Node i's state for the operands in s->in and s->out: the one an earlier
 * run prepared for the same dtypes and shapes, else a new one. */
static xf_status dynamic_state(xf_session *s, const xf_graph *g, int i, void **state, xf_error *err)
{
    const xf_node *n = &g->nodes[i];
    int ni = n->n_inputs, no = n->n_outputs;
    xf_tensor_view *seen = s->dyn_seen[i];
    if (seen && same_operands(seen, s->in, ni) && same_operands(seen + ni, s->out, no)) {
        *state = s->dyn_states[i];
        return XF_OK;
    }
    drop_dynamic_state(s, i);
    xf_status st = s->be->prepare(s->ctx, g, i, s->in, s->out, state, err);
    if (st != XF_OK)
        return st;
    s->dyn_states[i] = *state;
    if ((seen = malloc(sizeof *seen * (size_t)(ni + no + 1))) != NULL) {
        memcpy(seen, s->in, sizeof *seen * (size_t)ni);
        memcpy(seen + ni, s->out, sizeof *seen * (size_t)no);
    }
    s->dyn_seen[i] = seen; /* when out of memory, prepared again next run */
    return XF_OK;
}

/* The scatters: their output is input 0 with elements replaced, which
 * they write over a copy of it, or over it where it is their output's
 * block (the kernels copy nothing then). */
static bool writes_over_input(const xf_node *n)
{
    return n->op == XF_OP_SCATTER_ELEMENTS || n->op == XF_OP_SCATTER || n->op == XF_OP_SCATTER_ND;
}

/* When node i only reshapes its input (or is a Split into one part), or
 * writes over it, and is that block's last reader (and reads it as no
 * other operand): the block becomes its output's, with nothing copied.
 * Whether it did. */
static bool hand_on(xf_session *s, const xf_graph *g, xf_tensor_view *views, bool *owned, int i)
{
    const xf_node *n = &g->nodes[i];
    int x = n->inputs[0], y = n->outputs[0];
    bool whole = n->op == XF_OP_SPLIT && n->n_outputs == 1; /* a Split into one part is its input */
    if (!(xf_rt_view_op(n) || writes_over_input(n) || whole) || x < 0 || y < 0 || !owned[x] || s->last_use[x] != i ||
        s->held[x] || g->values[y].dtype != views[x].dtype ||
        value_bytes(&g->values[y]) != value_bytes(&g->values[x]))
        return false;
    for (int k = 1; k < n->n_inputs; k++)
        if (n->inputs[k] == x)
            return false;
    views[y] = (xf_tensor_view){g->values[y].dtype, g->values[y].shape, views[x].data};
    owned[y] = true;
    owned[x] = false;
    s->block_bytes[y] = s->block_bytes[x];
    return true;
}

/* Infers, allocates and runs node i of g (the run's clone of s->g). */
static xf_status run_dynamic_node(xf_session *s, xf_graph *g, xf_tensor_view *views, bool *owned, int i,
                                  double *seconds, xf_error *err)
{
    if ((s->flows && s->flows[i]) || xf_rt_seq_node(&g->nodes[i]) || xf_rt_touches_strings(g, i))
        return run_host_node(s, g, views, owned, i, seconds, err);
    const xf_node *n = &g->nodes[i];
    for (int k = 0; k < n->n_inputs; k++) {
        int v = n->inputs[k], out = n->outputs[0];
        if (v < 0 || !s->held[v])
            continue;
        if (n->op != XF_OP_IDENTITY) /* tensors of strings went to run_host_node */
            return xf_rt_bad_node(err, n, "input %d ('%s') is a%s %s, which only the sequence and optional ops read",
                                  k, g->values[v].name, s->held[v]->is_optional ? "n" : "",
                                  xf_kind_name(xf_tensor_kind(s->held[v])));
        if (out >= 0) { /* the same sequence or optional */
            g->values[out].kind = xf_tensor_kind(s->held[v]);
            views[out] = views[v];
            s->held[out] = xf_tensor_retain(s->held[v]);
        }
        release_consumed(s, g, views, owned, i);
        return XF_OK;
    }
    xf_status st = xf_node_infer_shape(g, i, s->opset, inference_inputs(s, g, views, i), err);
    if (st == XF_OK)
        st = s->be->supports(g, i, err);
    bool handed = st == XF_OK && hand_on(s, g, views, owned, i);
    if (handed && !writes_over_input(n)) {
        if (seconds)
            *seconds = 0;
        release_consumed(s, g, views, owned, i);
        return XF_OK;
    }
    for (int k = 0; k < n->n_outputs && st == XF_OK; k++) {
        int v = n->outputs[k];
        if (v < 0 || (k == 0 && handed))
            continue;
        const xf_value *val = &g->values[v];
        if (!shape_known(&val->shape) || xf_dtype_bits(val->dtype) == 0)
            return xf_error_set(err, XF_ERR_UNSUPPORTED, "node '%s' (%s): cannot determine the shape of '%s'",
                                n->name, xf_op_name(n->op), val->name);
        size_t bytes = value_bytes(val);
        if (!fits(s, bytes, val->name, err))
            return XF_ERR_LIMIT;
        views[v] = (xf_tensor_view){val->dtype, val->shape, dyn_alloc(s, v, bytes)};
        owned[v] = true;
        if (bytes && !views[v].data)
            return xf_error_set(err, XF_ERR_NOMEM, "cannot allocate %zu bytes for '%s'", bytes, val->name);
    }
    if (st != XF_OK)
        return st;
    node_views(s, g, views, i);
    void *state = NULL;
    if (s->be->prepare)
        st = dynamic_state(s, g, i, &state, err);
    if (st == XF_OK)
        st = run_one(s, g, i, state, seconds, err);
    release_consumed(s, g, views, owned, i);
    return st;
}

static xf_status run_dynamic(xf_session *s, xf_tensor *const *inputs, xf_tensor **outputs,
                             double *node_seconds, xf_error *err)
{
    int nv = s->g->n_values;
    xf_graph *g = xf_graph_clone(s->g);
    xf_tensor_view *views = malloc(sizeof *views * (size_t)(nv > 0 ? nv : 1));
    bool *owned = calloc((size_t)(nv > 0 ? nv : 1), sizeof *owned);
    xf_status st = XF_OK;
    if (!g || !views || !owned) {
        st = xf_error_set(err, XF_ERR_NOMEM, "out of memory");
        goto done;
    }
    memcpy(views, s->views, sizeof *views * (size_t)nv);
    for (int i = 0; i < g->n_inputs; i++)
        g->values[g->inputs[i]].shape = inputs[i]->shape;
    st = xf_session_bind_inputs(s, views, inputs, err);
    if (st == XF_OK && s->part)
        st = xf_static_part_run(s->part, inputs, views, node_seconds, err);
    for (int i = 0; i < g->n_nodes && st == XF_OK; i++)
        if (!xf_static_part_has(s->part, i))
            st = run_dynamic_node(s, g, views, owned, i, node_seconds ? &node_seconds[i] : NULL, err);
    if (st == XF_OK && outputs)
        st = xf_session_collect_outputs(s, views, owned, outputs, err);
    free_dynamic(s, views, owned, nv);
    for (int v = 0; v < nv; v++) {
        xf_tensor_release(s->held[v]);
        s->held[v] = NULL;
    }
done:
    xf_graph_free(g);
    free(views);
    free(owned);
    return st;
}

/* ---------------------------------------------------------------- creation */

/* Initializers are used in place on host memory, else uploaded once. */
static xf_status bind_initializers(xf_session *s, xf_error *err)
{
    for (int v = 0; v < s->g->n_values; v++) {
        const xf_tensor *t = s->g->values[v].init;
        if (!t)
            continue;
        s->views[v] = (xf_tensor_view){t->dtype, t->shape, t->data};
        if (s->be->host_memory || !t->nbytes)
            continue;
        s->views[v].data = s->be->alloc(s->ctx, t->nbytes);
        if (!s->views[v].data)
            return xf_error_set(err, XF_ERR_NOMEM, "cannot upload '%s' to backend %s", s->g->values[v].name,
                                s->be->name);
        s->owned[v] = true;
        xf_status st = s->be->copy_in(s->ctx, s->views[v].data, t->data, t->nbytes, err);
        if (st != XF_OK)
            return st;
    }
    return XF_OK;
}

static xf_status alloc_tables(xf_session *s, xf_error *err)
{
    const xf_graph *g = s->g;
    size_t nv = (size_t)(g->n_values > 0 ? g->n_values : 1);
    for (int i = 0; i < g->n_nodes; i++) {
        if (g->nodes[i].n_inputs > s->max_in)
            s->max_in = g->nodes[i].n_inputs;
        if (g->nodes[i].n_outputs > s->max_out)
            s->max_out = g->nodes[i].n_outputs;
    }
    s->views = malloc(nv * sizeof *s->views);
    s->owned = calloc(nv, sizeof *s->owned);
    s->last_use = malloc(nv * sizeof *s->last_use);
    s->in = malloc(sizeof *s->in * (size_t)(s->max_in + 1));
    s->out = malloc(sizeof *s->out * (size_t)(s->max_out + 1));
    s->tmp = malloc(sizeof *s->tmp * (size_t)(s->max_in + 1));
    s->tmp_ptr = malloc(sizeof *s->tmp_ptr * (size_t)(s->max_in + 1));
    s->held = calloc(nv, sizeof *s->held);
    size_t nn = (size_t)(g->n_nodes > 0 ? g->n_nodes : 1);
    s->dyn_states = calloc(nn, sizeof *s->dyn_states);
    s->dyn_seen = calloc(nn, sizeof *s->dyn_seen);
    s->block_bytes = calloc(nv, sizeof *s->block_bytes);
    if (!s->held || !s->views || !s->owned || !s->last_use || !s->in || !s->out || !s->tmp || !s->tmp_ptr ||
        !s->dyn_states || !s->dyn_seen || !s->block_bytes)
        return xf_error_set(err, XF_ERR_NOMEM, "out of memory");
    for (int v = 0; v < g->n_values; v++) {
        s->views[v] = (xf_tensor_view){g->values[v].dtype, g->values[v].shape, NULL};
        s->last_use[v] = g->values[v].producer;
    }
    for (int i = 0; i < g->n_nodes; i++)
        for (int k = 0; k < g->nodes[i].n_inputs; k++)
            if (g->nodes[i].inputs[k] >= 0)
                s->last_use[g->nodes[i].inputs[k]] = i;
    for (int k = 0; k < g->n_outputs; k++)
        s->last_use[g->outputs[k]] = g->n_nodes;
    return XF_OK;
}

/* The first value the session holds on the host (a sequence, an optional
 * or strings), or -1. */
static int holds_sequence(const xf_graph *g)
{
    for (int v = 0; v < g->n_values; v++)
        if (g->values[v].kind != XF_VK_TENSOR || g->values[v].dtype == XF_DT_STRING)
            return v;
    return -1;
}

static xf_status check_supported(const xf_session *s, xf_error *err)
{
    xf_status st = XF_OK;
    /* Inputs of sequence, map or optional type import without a tensor dtype. */
    for (int i = 0; i < s->g->n_inputs; i++) {
        const xf_value *v = &s->g->values[s->g->inputs[i]];
        if (v->dtype == XF_DT_UNDEFINED || (xf_dtype_bits(v->dtype) == 0 && v->dtype != XF_DT_STRING))
            return xf_error_set(err, XF_ERR_UNSUPPORTED, "input '%s' is not a tensor of a supported type (%s)",
                                v->name, xf_dtype_name(v->dtype));
    }
    /* sequences live in host memory, where the session runs their ops */
    int seq = holds_sequence(s->g);
    if (seq >= 0 && !s->be->host_memory)
            return xf_error_set(err, XF_ERR_UNSUPPORTED,
                                "backend %s does not run sequences, optionals, maps or strings ('%s' is one); the host "
                                "backends do",
                                s->be->name,
                                s->g->values[seq].name);
    for (int i = 0; st == XF_OK && i < s->g->n_nodes; i++) {
        const xf_node *n = &s->g->nodes[i];
        if (xf_rt_seq_node(n) && !s->be->host_memory)
            st = xf_rt_unsupported(err, s->be, n, "on sequences or optionals, which run on the host backends");
        else if (!xf_rt_flow_node(n) && !xf_rt_seq_node(n) &&
                 !(xf_rt_touches_strings(s->g, i) && xf_rt_string_tensor_op(n)))
            st = s->be->supports(s->g, i, err);
    }
    return st;
}

/* The sessions of If, Loop and Scan subgraphs; a graph with any, or with
 * sequence ops, runs dynamically. */
static xf_status create_flows(xf_session *s, bool *any, xf_error *err)
{
    *any = false;
    for (int i = 0; i < s->g->n_nodes; i++) {
        *any |= xf_rt_seq_node(&s->g->nodes[i]) || holds_sequence(s->g) >= 0;
        if (!xf_rt_flow_node(&s->g->nodes[i]))
            continue;
        if (!s->flows && !(s->flows = calloc((size_t)s->g->n_nodes, sizeof *s->flows)))
            return xf_error_set(err, XF_ERR_NOMEM, "out of memory");
        xf_status st = xf_rt_flow_create(s->g, i, s->opset, s->be->name, &s->opt, &s->flows[i], err);
        if (st != XF_OK)
            return st;
        *any = true;
    }
    return XF_OK;
}

static bool all_shapes_static(const xf_graph *g);

/* Whether node n of c reads only constants (a Shape or Size, a static shape). */
static bool reads_constants(const xf_graph *c, const xf_node *n)
{
    if (n->op == XF_OP_OPAQUE || (xf_op_get_info(n->op)->flags & XF_OPF_NOFOLD))
        return false;
    bool shape_only = xf_op_get_info(n->op)->flags & XF_OPF_SHAPE_ONLY;
    for (int k = 0; k < n->n_inputs; k++) {
        const xf_value *v = n->inputs[k] >= 0 ? &c->values[n->inputs[k]] : NULL;
        if (v && !(v->init && !v->is_input) && !(shape_only && shape_known(&v->shape)))
            return false;
    }
    return true;
}

/* Shapes that follow from constants and static shapes: a Range over a
 * dim read with Shape, the mask or positions a decoder builds from it (as
 * in models whose symbolic dims xflowc kept).  On a clone, nodes that read
 * only constants are evaluated in order (small results only), every node's
 * shapes inferred with the values known; what becomes known, or
 * contradicts a declared shape, is copied to g, so that such graphs run in
 * static mode.  The nodes still run. */
static void infer_through_constants(xf_graph *g, int64_t opset)
{
    if (all_shapes_static(g))
        return;
    xf_graph *c = xf_graph_clone(g);
    int max_in = 1, max_out = 1;
    for (int i = 0; c && i < c->n_nodes; i++) {
        max_in = c->nodes[i].n_inputs > max_in ? c->nodes[i].n_inputs : max_in;
        max_out = c->nodes[i].n_outputs > max_out ? c->nodes[i].n_outputs : max_out;
    }
    const xf_tensor **vals = c ? malloc(sizeof *vals * (size_t)max_in) : NULL;
    xf_tensor **outs = c ? malloc(sizeof *outs * (size_t)max_out) : NULL;
    for (int i = 0; vals && outs && i < c->n_nodes; i++) {
        const xf_node *n = &c->nodes[i];
        if (n->op == XF_OP_OPAQUE)
            continue;
        for (int k = 0; k < n->n_inputs; k++)
            vals[k] = n->inputs[k] >= 0 && !c->values[n->inputs[k]].is_input ? c->values[n->inputs[k]].init : NULL;
        xf_error err;
        if (xf_node_infer_shape(c, i, opset, vals, &err) != XF_OK || !reads_constants(c, n))
            continue;
        bool small = true;
        for (int k = 0; k < n->n_outputs && small; k++) {
            int64_t numel = n->outputs[k] >= 0 ? xf_shape_numel(&c->values[n->outputs[k]].shape) : 0;
            small = numel >= 0 && numel <= (1 << 16);
        }
        if (!small || xf_runtime_eval_node(c, i, outs, &err) != XF_OK)
            continue;
        for (int k = 0; k < n->n_outputs; k++)
            if (n->outputs[k] >= 0 && !c->values[n->outputs[k]].init)
                c->values[n->outputs[k]].init = outs[k];
            else
                xf_tensor_release(outs[k]);
    }
    for (int v = 0; vals && outs && v < g->n_values; v++) {
        xf_value *gv = &g->values[v];
        /* a known shape that inference contradicts was declared (value_info
         * or a graph output's type): what the nodes compute wins, as in
         * ONNX Runtime */
        const xf_shape *found = &c->values[v].shape;
        if (gv->producer >= 0 && shape_known(found) && (!shape_known(&gv->shape) || !xf_shape_equal(&gv->shape, found))) {
            gv->shape = *found;
            if (gv->dtype == XF_DT_UNDEFINED)
                gv->dtype = c->values[v].dtype;
        }
    }
    free(vals);
    free(outs);
    xf_graph_free(c);
}

/* Static mode needs every input and node output shape known. */
static bool all_shapes_static(const xf_graph *g)
{
    for (int i = 0; i < g->n_inputs; i++)
        if (!shape_known(&g->values[g->inputs[i]].shape))
            return false;
    for (int i = 0; i < g->n_nodes; i++)
        for (int k = 0; k < g->nodes[i].n_outputs; k++) {
            int v = g->nodes[i].outputs[k];
            if (v >= 0 && !shape_known(&g->values[v].shape))
                return false;
        }
    return true;
}

xf_session_options xf_rt_inherited_options(const xf_session_options *inherit)
{
    xf_session_options o = {.force_dynamic = true};
    if (inherit) {
        o.max_tensor_bytes = inherit->max_tensor_bytes;
        o.direct_convolutions = inherit->direct_convolutions;
        o.fixed_kernels = inherit->fixed_kernels;
    }
    return o;
}

xf_status xf_session_create(const xf_graph *graph, int64_t opset, const char *backend_name,
                            const xf_session_options *opt, xf_session **out, xf_error *err)
{
    *out = NULL;
    const char *name = backend_name ? backend_name : "cpu_ref";
    const xf_backend *be = xf_backend_find(name);
    if (!be && xf_backend_unavailable(name))
        return xf_error_set(err, XF_ERR_UNSUPPORTED, "backend '%s' is unavailable: %s", name,
                            xf_backend_unavailable(name));
    if (!be) {
        const xf_backend *const *list;
        int n = xf_backend_list(&list);
        char names[256] = "";
        for (int i = 0; i < n; i++)
            snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", i ? ", " : "", list[i]->name);
        return xf_error_set(err, XF_ERR_INVALID, "unknown backend '%s' (available: %s)", name, names);
    }
    xf_session *s = calloc(1, sizeof *s);
    if (!s)
        return xf_error_set(err, XF_ERR_NOMEM, "out of memory");
    s->be = be;
    s->opset = opset;
    if (opt)
        s->opt = *opt;
    s->g = xf_graph_clone(graph);
    xf_status st = s->g ? xf_graph_validate(s->g, err) : xf_error_set(err, XF_ERR_NOMEM, "out of memory");
    /* before inference, so that an unsupported op is what gets reported;
     * after it, for the dtypes inference found */
    if (st == XF_OK)
        st = check_supported(s, err);
    if (st == XF_OK)
        st = xf_graph_infer_shapes(s->g, opset, err);
    if (st == XF_OK)
        infer_through_constants(s->g, opset);
    /* what an Identity (or an inference Dropout) passes on is read where it
     * comes from: a constant stays a constant for the backend (PyTorch's
     * exports share equal initializers through Identity nodes, such as a
     * BatchNormalization's running mean, which a Conv can then take in) */
    bool rewrite = !(opt && opt->as_given);
    if (st == XF_OK && rewrite)
        st = xf_pass_remove_identity(s->g, NULL, err);
    /* computations on constants up to 1 MiB (a Pad's pads cast from a
     * Constant, a shape read from a static one, a filter's taps computed
     * from its parameters), and larger ones no larger
     * than the constants they read (an LSTM's weights sliced and joined
     * again), done once, as ONNX Runtime's constant folding does, so that
     * the rewrites below and the backend see them as constants */
    if (st == XF_OK && rewrite)
        st = xf_pass_fold_constants_bounded(s->g, opset, xf_runtime_eval_node, SESSION_FOLD_MAX_BYTES, NULL, err);
    /* Transposes moved through the ops after them and cancelled in pairs
     * (TensorFlow's NHWC exports) */
    if (st == XF_OK && rewrite)
        st = xf_pass_push_transposes(s->g, opset, NULL, err);
    /* a Pad of zeros before a Conv or AveragePool becomes its padding */
    if (st == XF_OK && rewrite)
        st = xf_pass_fold_pads(s->g, opset, NULL, err);
    /* a Conv and the activation after it run as one node, as xflowc plans */
    if (st == XF_OK && rewrite)
        st = xf_pass_fuse_activations(s->g, NULL, err);
    /* before the backend's rewrites, which then see float16 models' runs as
     * float graphs (a DequantizeLinear of 4-bit weights and its MatMul) */
    if (st == XF_OK && rewrite && be->half_as_float)
        st = xf_rt_lower_half(s->g, err);
    if (st == XF_OK && rewrite && be->lower_graph)
        st = be->lower_graph(s->g, err);
    if (st == XF_OK)
        st = check_supported(s, err);
    bool flows = false;
    if (st == XF_OK)
        st = create_flows(s, &flows, err);
    if (st == XF_OK)
        st = alloc_tables(s, err);
    if (st == XF_OK) {
        s->dynamic = (opt && opt->force_dynamic) || flows || !all_shapes_static(s->g);
        if (s->dynamic && !be->host_memory)
            st = xf_error_set(err, XF_ERR_UNSUPPORTED,
                              "backend %s cannot run graphs whose shapes depend on run-time values", be->name);
    }
    if (st == XF_OK && be->context_create)
        st = be->context_create(&s->opt, &s->ctx, err);
    if (st == XF_OK)
        st = bind_initializers(s, err);
    if (st == XF_OK && !s->dynamic)
        st = setup_static(s, err);
    else if (st == XF_OK && !(opt && opt->force_dynamic))
        st = xf_static_part_create(s, opt, err);
    if (st != XF_OK) {
        xf_session_free(s);
        return st;
    }
    *out = s;
    return XF_OK;
}

void xf_session_free(xf_session *s)
{
    if (!s)
        return;
    /* the device's queued work ends before its buffers go; an error it
     * reports now (a run whose outputs nobody read) is not lost silently */
    xf_error sync_err = {0};
    if (s->ctx && s->be->synchronize && s->be->synchronize(s->ctx, &sync_err) != XF_OK)
        xf_log(XF_LOG_WARN, "%s", sync_err.msg);
    if (s->states && s->be->release)
        for (int i = 0; i < s->g->n_nodes; i++)
            if (s->states[i])
                s->be->release(s->ctx, s->states[i]);
    for (int i = 0; s->dyn_states && s->dyn_seen && i < s->g->n_nodes; i++)
        drop_dynamic_state(s, i);
    xf_static_part_free(s->part);
    free(s->dyn_states);
    free(s->dyn_seen);
    if (s->pool)
        dyn_pool_trim(s, true);
    free(s->pool);
    free(s->block_bytes);
    if (s->owned)
        for (int v = 0; v < s->g->n_values; v++)
            if (s->owned[v])
                s->be->free(s->ctx, s->views[v].data);
    if (s->arena)
        s->be->free(s->ctx, s->arena);
    if (s->ctx && s->be->context_free)
        s->be->context_free(s->ctx);
    for (int i = 0; s->flows && i < s->g->n_nodes; i++)
        xf_rt_flow_free(s->flows[i]);
    free(s->flows);
    xf_memplan_free(&s->plan);
    xf_graph_free(s->g);
    free(s->states);
    free(s->views);
    free(s->owned);
    free(s->last_use);
    free(s->in);
    free(s->out);
    free(s->tmp);
    free(s->tmp_ptr);
    free(s->held);
    free(s);
}

/* ---------------------------------------------------------------- running */

xf_status xf_session_execute(xf_session *s, xf_tensor *const *inputs, xf_tensor **outputs, double *node_seconds,
                             xf_error *err)
{
    xf_status st = xf_session_check_inputs(s, inputs, err);
    if (st != XF_OK)
        return st;
    return s->dynamic ? run_dynamic(s, inputs, outputs, node_seconds, err)
                      : run_static(s, inputs, outputs, node_seconds, err);
}

xf_status xf_session_run(xf_session *s, xf_tensor *const *inputs, xf_tensor **outputs, xf_error *err)
{
    return xf_session_execute(s, inputs, outputs, NULL, err);
}

const xf_graph *xf_session_graph(const xf_session *s) { return s->g; }
bool xf_session_is_dynamic(const xf_session *s) { return s->dynamic; }
int xf_session_static_nodes(const xf_session *s) { return s->dynamic ? xf_static_part_nodes(s->part) : s->g->n_nodes; }
const xf_memplan *xf_session_memplan(const xf_session *s) { return s->dynamic ? NULL : &s->plan; }
