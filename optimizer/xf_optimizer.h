/* xflow optimizer: applies substitution rules (xf_rule.h) to a graph and
 * searches, by cost, for the cheapest equivalent graph.
 *
 *   rule set    the rules to apply, each checked and prepared for matching;
 *   matching    every embedding of a rule's pattern in a graph;
 *   rewriting   one match turned into a new graph (the input is untouched);
 *   cost models the estimated run time of a graph on a target: an analytic
 *               roofline of a named device, or per-op times measured on a
 *               runtime backend (cached by op, attributes and shapes);
 *   search      cost-ordered backtracking search with relaxation (TASO).
 */
#ifndef XF_OPTIMIZER_H
#define XF_OPTIMIZER_H

#include "xf_core.h"
#include "xf_rule.h"

#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- rule sets */

/* Limits of a rule the matcher handles; larger rules are skipped (counted). */
#define XF_MATCH_MAX_NODES 8
#define XF_MATCH_MAX_INPUTS 16
#define XF_MATCH_MAX_PARAMS 32

/* Rules prepared for matching.  The rules themselves are not copied: they
 * must outlive the set. */
typedef struct xf_rule_set xf_rule_set;

/* Prepares every rule.  A rule that fails xf_rule_validate, exceeds the
 * limits above, or whose pattern has no node or contains an op outside the
 * rewritable set is skipped: xf_rule_set_skipped counts them and err (when
 * not NULL) keeps the reason for the first. */
xf_status xf_rule_set_create(const xf_rule *const *rules, int n_rules, xf_rule_set **out, xf_error *err);
void xf_rule_set_free(xf_rule_set *rs);
int xf_rule_set_count(const xf_rule_set *rs);   /* prepared (usable) rules */
int xf_rule_set_skipped(const xf_rule_set *rs);
const xf_rule *xf_rule_set_rule(const xf_rule_set *rs, int i);

/* The built-in rules: only what the generator cannot express (see
 * builtin_rules.c for why each exists).  Owned by the caller (xf_rule_free). */
xf_status xf_builtin_rules(xf_rule ***rules, int *n_rules, xf_error *err);

/* ---------------------------------------------------------------- matching */

/* One embedding of a rule's pattern in a graph. */
typedef struct xf_match {
    int rule;                              /* index in the rule set */
    int n_nodes;
    int node[XF_MATCH_MAX_NODES];          /* graph node of pattern node i */
    int n_inputs;
    int input[XF_MATCH_MAX_INPUTS];        /* graph value bound to rule input k */
    int n_params;
    int64_t param[XF_MATCH_MAX_PARAMS];    /* bound rule parameters */
} xf_match;

/* Called for each match; return false to stop enumerating. */
typedef bool (*xf_match_fn)(const xf_match *m, void *user);

/* Enumerates every match of rule `rule` (every rule when rule < 0) in g, in a
 * deterministic order.  A match maps pattern nodes one-to-one onto graph
 * nodes of the same op with equal attributes (fields the rule generalizes
 * are bound or checked through their expressions), satisfies the rule's
 * constraints, never includes an opaque node, and every value a matched
 * node produces that something outside the match uses (or that is a graph
 * output) is one of the rule's outputs.  g's shapes must be inferred. */
xf_status xf_match_each(const xf_rule_set *rs, int rule, const xf_graph *g, xf_match_fn fn, void *user,
                        xf_error *err);

/* ---------------------------------------------------------------- rewriting */

/* Builds the graph in which match m is replaced: replacement nodes added
 * with their bound attributes, uses of each pattern output redirected to the
 * replacement output, pattern nodes no longer used removed, shapes inferred
 * for the new nodes.  Graph outputs keep their names.  New constants
 * (a concatenation of kernels, ...) stay as nodes over constants: the cost
 * models price them as free and canonicalization folds them when the final
 * graph is written.  XF_ERR_INVALID (with the reason) when the rewrite does
 * not apply to these tensors: shape inference fails, an output's dtype or
 * shape would change, or the result would have a cycle. */
xf_status xf_rewrite_apply(const xf_rule_set *rs, const xf_graph *g, int64_t opset, const xf_match *m,
                           xf_graph **out, xf_error *err);

/* Makes a graph the search produced ready to write: chains of Splits
 * along one axis (which successive merges leave) become one Split, Split
 * sizes, which rules give as the attribute, become the input that opset 13
 * and later expect, and the constants rewrites computed as nodes
 * (concatenated kernels, ...) are folded by canonicalization.  st may be
 * NULL. */
xf_status xf_rewrite_finalize(xf_graph *g, int64_t opset, xf_canon_stats *st, xf_error *err);

/* ---------------------------------------------------------------- cost models */

typedef struct xf_cost_model xf_cost_model;

typedef struct xf_cost_options {
    /* Measured models: the cache file (NULL: ~/.cache/xflow/cost-DEVICE.txt,
     * or $XDG_CACHE_HOME/xflow/...).  "" disables the file. */
    const char *cache_path;
    int warmup, repeats; /* measured models: per op (0: 1 and 5) */
} xf_cost_options;

/* Names: "analytic:h100", "analytic:h200", "analytic:a100", "analytic:v100",
 * "analytic:cpu" (case-insensitive device), "cpu" (measured on the fastest
 * CPU backend present), "cuda" (measured on the CUDA backend),
 * "measured:BACKEND" (measured on the backend of that name, e.g. cpu_ref).  NULL or
 * "default" picks the default (see xf_cost_default_name).  opt may be NULL. */
xf_status xf_cost_model_create(const char *name, const xf_cost_options *opt, xf_cost_model **out,
                               xf_error *err);
/* Writes the measured cache (if any) and frees the model. */
void xf_cost_model_free(xf_cost_model *m);
/* The model's name, as the user would pass it. */
const char *xf_cost_model_name(const xf_cost_model *m);
/* One line saying what the model is (device figures or the backend measured). */
const char *xf_cost_model_describe(const xf_cost_model *m);
/* The name NULL/"default" resolves to. */
const char *xf_cost_default_name(void);
/* Names accepted, for --help and error messages. */
const char *xf_cost_model_names(void);

/* Estimated seconds to run g (shapes inferred) once.  Nodes computing only
 * from constants are free (they are folded before the graph runs); a Conv
 * with a bias and a fused activation is one kernel. */
xf_status xf_cost_graph(xf_cost_model *m, const xf_graph *g, int64_t opset, double *seconds, xf_error *err);
/* Measured models: ops measured so far and cache hits (both 0 for analytic). */
void xf_cost_model_stats(const xf_cost_model *m, long *measured, long *cached);

/* ---------------------------------------------------------------- search */

typedef struct xf_search_options {
    int64_t opset;
    double alpha;        /* relaxation: candidates up to alpha * best are explored (default 1.05) */
    long budget;         /* graphs expanded at most (default 1000) */
    double time_limit;   /* seconds (default 10; <= 0: none) */
    long queue_limit;    /* candidates kept; the costliest are dropped beyond it (default 512) */
    FILE *progress;      /* progress line when the search runs over a second; NULL: none */
    /* The clock (seconds); NULL: monotonic wall clock. */
    double (*now)(void *user);
    void *now_user;
} xf_search_options;

void xf_search_options_default(xf_search_options *o);

/* One rewrite on the way to the best graph. */
typedef struct xf_search_step {
    int rule;         /* index in the rule set */
    char *where;      /* the matched graph nodes, e.g. "conv1, relu1" */
    double cost;      /* cost of the graph after this step */
} xf_search_step;

typedef struct xf_search_result {
    xf_graph *best;          /* owned */
    double cost_before, cost_after;
    int n_steps;
    xf_search_step *steps;   /* in order */
    long expanded;           /* graphs expanded */
    long generated;          /* distinct candidate graphs made */
    long dropped;            /* rewrites that did not apply (shapes, cycles) */
    bool stopped_budget, stopped_time;
    double seconds;
} xf_search_result;

/* Searches from g (shapes inferred, canonicalized).  Returns the best graph
 * found (a clone of g when nothing improves it). */
xf_status xf_search(const xf_graph *g, const xf_rule_set *rs, xf_cost_model *cost, const xf_search_options *opt,
                    xf_search_result *res, xf_error *err);
void xf_search_result_free(xf_search_result *res);

#ifdef __cplusplus
}
#endif
#endif
