/* Optimizer internals shared by its source files: prepared rules and the
 * per-graph index that matching uses. */
#ifndef XF_OPT_INTERNAL_H
#define XF_OPT_INTERNAL_H

#include "xf_optimizer.h"

/* Where a pattern node input comes from. */
typedef enum pin_kind { PIN_NONE = 0, PIN_RULE_INPUT, PIN_NODE, PIN_CONST } pin_kind;

typedef struct pin_ref {
    pin_kind kind;
    int idx; /* rule input, pattern node, or pattern value (constant) */
    int out; /* output index of pattern node idx */
} pin_ref;

/* A rule prepared for matching. */
typedef struct rule_plan {
    const xf_rule *rule;
    int n_nodes;
    pin_ref *in[XF_MATCH_MAX_NODES];          /* per pattern node: its inputs */
    pin_ref out[XF_MATCH_MAX_INPUTS];         /* rule output j: PIN_NODE in the pattern */
    int n_outputs;
    /* Pattern bindings of a bare parameter bind it on the node they belong
     * to; every other pattern binding is checked once the match is complete. */
    int n_node_bindings[XF_MATCH_MAX_NODES];
    int *node_bindings[XF_MATCH_MAX_NODES];
    /* Whether pattern node i has a generalized attribute field at all (a
     * node without one compares its attributes as they are). */
    bool generalized[XF_MATCH_MAX_NODES];
    /* The pattern's ops, each once, and how many nodes of each it has. */
    int n_ops;
    xf_op op[XF_MATCH_MAX_NODES];
    int op_count[XF_MATCH_MAX_NODES];
} rule_plan;

struct xf_rule_set {
    int n, skipped;
    rule_plan *plans;
    /* Rule constants made so far (see opt_rule_const_tensor): one tensor per
     * kind and shape, shared by every graph that uses it.  Behind a pointer:
     * making one does not change the rules. */
    struct opt_const_cache {
        int n;
        xf_tensor **t;
        xf_const_kind *kind;
    } *consts;
};

/* The constant of kind k, shape s and floating dtype dt for a replacement:
 * made once per rule set and shared (a borrowed reference), so that the
 * candidate graphs of a search hold one copy and hash it alike.  NULL when
 * s does not fit k or memory runs out. */
xf_tensor *opt_rule_const_tensor(const xf_rule_set *rs, xf_const_kind k, const xf_shape *s, xf_dtype dt);

/* Whether a graph value of dtype `have` may bind a rule value of dtype
 * `rule`: the same dtype, or any floating dtype for a float one (rules are
 * proved over the reals, so float16, bfloat16 and double graphs match the
 * library's float rules). */
bool opt_dtype_fits(xf_dtype rule, xf_dtype have);

/* Graph index: the consumers of every value and the nodes of every op. */
typedef struct graph_index {
    int *use_start; /* n_values + 1: uses of v are use_node[use_start[v] .. use_start[v+1]) */
    int *use_node;
    int *op_start;  /* XF_OP_COUNT + 2 */
    int *op_node;
    bool *is_output; /* per value: a graph output */
} graph_index;

xf_status opt_index_build(const xf_graph *g, graph_index *gi, xf_error *err);
void opt_index_free(graph_index *gi);

/* A graph that rewrites start from, with what planning a rewrite of it
 * needs, and (when made with hashes) what hashing one needs. */
typedef struct rewrite_base {
    const xf_graph *g;
    graph_index gi;
    xf_graph_hashes h;  /* g's */
    bool hashed;
    /* Work space of opt_rewrite_hash: h.value with the hashes a rewrite
     * changes written over (and restored after), flags and list of those. */
    uint64_t *vh;
    bool *changed;
    int *touched;
    int n_touched;
} rewrite_base;

/* A rewrite worked out beside the graph (rewrite.c). */
typedef struct rewrite_plan {
    const rule_plan *p;
    xf_match m;
    /* The replacement's values and nodes, shapes inferred; its first
     * m.n_inputs values stand for the rule inputs. */
    xf_graph *side;
    int *vmap;                        /* replacement value -> side value */
    int pv[XF_MATCH_MAX_INPUTS];      /* rule output j: the value of g it replaces */
    int rv[XF_MATCH_MAX_INPUTS];      /* ... and the side value replacing it */
    bool gone[XF_MATCH_MAX_NODES];    /* pattern node i is removed */
} rewrite_plan;

xf_status opt_rewrite_base_init(const xf_graph *g, bool hashes, rewrite_base *b, xf_error *err);
void opt_rewrite_base_free(rewrite_base *b);
/* XF_ERR_INVALID (with the reason) when the rewrite does not apply to these
 * tensors (see xf_rewrite_apply). */
xf_status opt_rewrite_plan(const xf_rule_set *rs, const rewrite_base *b, int64_t opset, const xf_match *m,
                           rewrite_plan *rp, xf_error *err);
void opt_rewrite_plan_free(rewrite_plan *rp);
/* xf_graph_hash of the graph opt_rewrite_build would make, without making
 * it (b made with hashes); XF_ERR_INVALID when the rewrite would close a
 * cycle. */
xf_status opt_rewrite_hash(rewrite_base *b, const rewrite_plan *rp, uint64_t *hash, xf_error *err);
/* What a rewrite changed, in the rewritten graph's numbering: where each
 * node and value of the graph it started from went (-1: removed), and the
 * nodes whose surroundings changed, so that every match in the new graph
 * that includes none of them was a match in the old one. */
typedef struct rewrite_delta {
    int n_old_nodes, n_old_values;
    int *node_map;
    int *value_map;
    int n_dirty;
    int *dirty;
} rewrite_delta;

/* delta may be NULL. */
xf_status opt_rewrite_build(const rewrite_base *b, const rewrite_plan *rp, xf_graph **out, rewrite_delta *delta,
                            xf_error *err);
void opt_rewrite_delta_free(rewrite_delta *d);

/* What matching after a rewrite needs to know of the rules (search.c):
 * which patterns are connected (through values one node computes and
 * another reads, or rule inputs two nodes read), and the most hops between
 * two nodes of a match of one (nodes - 1). */
typedef struct match_reach {
    bool *connected; /* per rule */
    int radius;
} match_reach;

xf_status opt_match_reach_make(const xf_rule_set *rs, match_reach *r, xf_error *err);
void opt_match_reach_free(match_reach *r);
/* The matches xf_match_each(rs, -1, g) finds, in its order, worked out
 * from the n_old matches in the graph g was rewritten from (d says how;
 * gi indexes g).  *out is malloc'd. */
xf_status opt_match_after_rewrite(const xf_rule_set *rs, const match_reach *reach, const xf_graph *g,
                                  const graph_index *gi, const xf_match *old, int n_old, const rewrite_delta *d,
                                  xf_match **out, int *n_out, xf_error *err);

/* konst[v] (n_values entries): value v is known before g runs, an
 * initializer or computed from such values alone (xf_cost_graph prices
 * the nodes computing it as free). */
void opt_compile_time_values(const xf_graph *g, bool *konst);
/* The same with konst already set for the values no node of g computes. */
void opt_compile_time_propagate(const xf_graph *g, bool *konst);
/* Node i computes from values known before g runs alone (konst), and is
 * an op canonicalization folds. */
bool opt_node_is_folded(const xf_graph *g, int i, const bool *konst);
/* What node i adds to xf_cost_graph's total for g (konst: g's
 * opt_compile_time_values): 0 for a folded node, else its price. */
xf_status opt_cost_node(xf_cost_model *cm, const xf_graph *g, int i, const bool *konst, int64_t opset,
                        double *seconds, xf_error *err);
/* The cost of the graph opt_rewrite_build would make from rp, worked out
 * from base_cost (b->g's cost, konst its opt_compile_time_values) less the
 * removed nodes' prices and plus the replacement's (its values known
 * before the run as the rule inputs make them): what xf_cost_graph gives
 * for the built graph, up to rounding.  *known is false when that may not
 * hold: a replaced value and its replacement differ in being known before
 * the run, which changes their readers' prices. */
xf_status opt_rewrite_price(xf_cost_model *cm, int64_t opset, const rewrite_base *b, const bool *konst,
                            double base_cost, const rewrite_plan *rp, double *cost, bool *known, xf_error *err);

/* True when the value is compile-time data (an initializer not fed as input). */
static inline bool opt_is_const(const xf_graph *g, int v)
{
    return v >= 0 && g->values[v].init && !g->values[v].is_input;
}

#endif
