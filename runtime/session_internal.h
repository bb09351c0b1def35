/* The session's state, shared by the files that make up sessions
 * (session.c: creating and running; session_profile.c: per-node timings
 * and what the backend says about each node). */
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
    size_t max_bytes; /* xf_session_options.max_tensor_bytes */
};

/* One run: binds inputs, runs every node (timing each into node_seconds[i]
 * when it is not NULL) and hands out the outputs (outputs NULL: none). */
xf_status xf_session_execute(xf_session *s, xf_tensor *const *inputs, xf_tensor **outputs, double *node_seconds,
                             xf_error *err);

#endif
