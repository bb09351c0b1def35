/* The session's state, shared by the files that make up sessions
 * (session.c: creating and running; session_io.c: inputs and outputs;
 * session_part.c: a dynamic session's static part; session_profile.c:
 * per-node timings and what the backend says about each node). */
#ifndef XF_SESSION_INTERNAL_H
#define XF_SESSION_INTERNAL_H

#include "xf_rt_internal.h"

struct xf_session {
    const xf_backend *be;
    void *ctx;
    xf_graph *g; /* own clone, shapes inferred */
    int64_t opset;
    bool dynamic;
    /* static mode */
    xf_memplan plan;
    void *arena;
    void **states; /* per node, from prepare */
    /* per value: where it lives (static mode; in dynamic mode only the
     * initializers); `owned` marks backend memory this session allocated
     * for it outside the arena (uploads, input buffers) */
    xf_tensor_view *views;
    bool *owned;
    int *last_use; /* per value: last node reading it; n_nodes for graph outputs */
    /* scratch for one node's operands */
    int max_in, max_out;
    xf_tensor_view *in, *out;
    xf_tensor *tmp;          /* dynamic mode: input values for shape inference */
    const xf_tensor **tmp_ptr;
    xf_rt_flow **flows; /* per node: If, Loop and Scan, which the session runs itself; NULL for others */
    /* dynamic mode, per value: the sequence or optional it holds during a
     * run (held reference), NULL for tensors */
    xf_tensor **held;
    /* dynamic mode, per node: the state prepare made on an earlier run and
     * the operands it saw (dtypes and shapes; the data moves from run to
     * run, and states take it at run time), kept while they stay the same:
     * a Loop body's nodes are prepared once, not once per iteration */
    void **dyn_states;
    xf_tensor_view **dyn_seen;
    /* dynamic mode: blocks of finished values kept for later values, of
     * this run and the next (see dyn_alloc); per value the size of the
     * block it holds */
    struct dyn_block *pool;
    int n_pool, cap_pool;
    size_t pool_bytes;
    size_t *block_bytes;
    /* the options given (zero where none were): its limit on a tensor's
     * bytes, and what sessions made inside this one inherit */
    xf_session_options opt;
    /* dynamic mode: the nodes whose shapes are all known before a run, run
     * as a static session of their own (session_part.c); NULL: none */
    struct xf_static_part *part;
};

/* The values given for a run checked against the graph's inputs, bound
 * to views (in place on host memory, else copied to the buffers made at
 * creation; containers and strings held), and the outputs handed out:
 * copies, or (dynamic runs on host memory, where owned[v] marks blocks
 * the run allocated) the blocks themselves (session_io.c). */
xf_status xf_session_check_inputs(const xf_session *s, xf_tensor *const *inputs, xf_error *err);
xf_status xf_session_bind_inputs(xf_session *s, xf_tensor_view *views, xf_tensor *const *inputs, xf_error *err);
xf_status xf_session_collect_outputs(xf_session *s, const xf_tensor_view *views, bool *owned, xf_tensor **outputs,
                                     xf_error *err);

/* One run: binds inputs, runs every node (timing each into node_seconds[i]
 * when it is not NULL) and hands out the outputs (outputs NULL: none). */
xf_status xf_session_execute(xf_session *s, xf_tensor *const *inputs, xf_tensor **outputs, double *node_seconds,
                             xf_error *err);

/* The static part of a dynamic session (session_part.c). */
typedef struct xf_static_part xf_static_part;
/* Makes s->part when s (dynamic) has nodes whose shapes are all static;
 * fails only when out of memory (a part that cannot be made leaves the
 * whole graph dynamic). */
xf_status xf_static_part_create(xf_session *s, const xf_session_options *opt, xf_error *err);
void xf_static_part_free(xf_static_part *p);
/* How many nodes part p has (p may be NULL: 0). */
int xf_static_part_nodes(const xf_static_part *p);
/* Whether node `node` of the dynamic session is in part p (p may be NULL). */
bool xf_static_part_has(const xf_static_part *p, int node);
/* Runs the part on the session's inputs and points views[v] of its
 * results at them (valid until the next run); node_seconds as in
 * xf_session_execute, for the part's nodes. */
xf_status xf_static_part_run(xf_static_part *p, xf_tensor *const *inputs, xf_tensor_view *views,
                             double *node_seconds, xf_error *err);
/* xf_session_node_impl for node `node` of the dynamic session, in p. */
void xf_static_part_node_impl(const xf_static_part *p, int node, char *buf, size_t n);

#endif
