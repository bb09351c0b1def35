/* xflow verifier: proves substitution rules with Z3 against operator
 * specifications, validates those specifications on small concrete shapes,
 * and checks rules numerically on cpu_ref.
 *
 * Operators are uninterpreted functions over one tensor sort (with their
 * integer parameters as integer arguments) and their meaning is given by
 * universally quantified axioms.  A rule is proved when, for every mapped
 * output, "axioms and pattern != replacement" is unsatisfiable. */
#ifndef XF_VERIFY_H
#define XF_VERIFY_H

#include "xf_core.h"
#include "xf_rule.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct xf_verify_options {
    /* Per query; 0 means the default, 2000.  It also bounds the query's
     * quantifier instantiations (5 per ms), which Z3 enforces where it
     * misses its own timeout. */
    unsigned timeout_ms;
} xf_verify_options;

typedef enum xf_proof {
    XF_PROOF_PROVED = 0,
    XF_PROOF_REFUTED,    /* not implied by the axioms: a model, or E-matching saturated without a proof */
    XF_PROOF_UNKNOWN,    /* timeout, or the solver gave up */
    XF_PROOF_UNSUPPORTED /* an op or attribute without a specification */
} xf_proof;

const char *xf_proof_name(xf_proof p); /* "proved", "refuted", ... */

typedef struct xf_verifier xf_verifier;

/* opt may be NULL (defaults). */
xf_status xf_verifier_create(const xf_verify_options *opt, xf_verifier **out, xf_error *err);
/* Proves r.  `why` (may be NULL) receives one line saying why a rule is not
 * proved (the output, the solver's reason, or the unsupported op).  Not
 * thread-safe: one verifier per thread. */
xf_proof xf_verifier_prove(xf_verifier *v, const xf_rule *r, char *why, size_t why_len);
void xf_verifier_free(xf_verifier *v);

/* The outcome of one rule proved by xf_verify_rules. */
typedef struct xf_proof_result {
    xf_proof proof;
    double seconds;
    char why[512];
} xf_proof_result;

typedef void (*xf_verify_progress_fn)(int done, int total, void *user);

/* Proves rules[0..n) on `threads` threads (0: one per online core), one
 * verifier each, handing out rules one at a time; results[i] receives rule
 * i's outcome.  Which rules a solver saw before can matter only to a proof
 * at the edge of its limits (timeout, instantiation budget), as it does
 * with one verifier.  progress (may be NULL) is called now and then from
 * the calling thread.  Fails only when a verifier cannot be created. */
xf_status xf_verify_rules(const xf_verify_options *opt, xf_rule *const *rules, int n, int threads,
                          xf_proof_result *results, xf_verify_progress_fn progress, void *user, xf_error *err);

/* The axioms (operator specifications), for listing and validation. */
int xf_axiom_count(void);
const char *xf_axiom_name(int i);
const char *xf_axiom_doc(int i); /* the axiom in plain words */

/* Outcome of validating one axiom on concrete shapes. */
typedef struct xf_axiom_result {
    int axiom;          /* index */
    xf_proof result;    /* PROVED: every instance holds; REFUTED: an instance fails */
    int n_instances;    /* concrete instances checked */
    double seconds;
    char detail[256];   /* the failing instance, or the solver's reason */
} xf_axiom_result;

/* Checks axioms[first .. first+count) (count < 0: to the end) on concrete
 * shapes (each dim 1..3, kernels 1 and 3): tensors become arrays of Z3
 * reals, operators their element-wise definitions, sigmoid and tanh
 * uninterpreted functions (relu is max(x, 0), so that its own laws are
 * checked).  Up to max_instances distinct instances per axiom (0: 16, the
 * most); timeout_ms per instance (0: 60000).  results must hold `count`
 * entries (count < 0: xf_axiom_count() - first).  `progress` (may be NULL)
 * is called after each axiom. */
typedef void (*xf_axiom_progress_fn)(const xf_axiom_result *r, void *user);
xf_status xf_verifier_check_axioms(int first, int count, int max_instances, unsigned timeout_ms,
                                   xf_axiom_result *results, xf_axiom_progress_fn progress,
                                   void *user, xf_error *err);

/* Validates one axiom written in the specification language (used to show
 * that a wrong axiom is caught).  vars: "x:2 y:2 a:axis", guard may be
 * NULL or "", lhs/rhs s-expressions. */
xf_status xf_verifier_check_axiom_text(const char *vars, const char *guard, const char *lhs,
                                       const char *rhs, int max_instances, unsigned timeout_ms,
                                       xf_axiom_result *result, xf_error *err);

/* Applies r's two sides on cpu_ref to random floats, over up to n_shapes
 * shapes satisfying its constraints (the rule's own shapes first, then
 * random re-dimensionings).  *max_err: the largest |pattern - replacement|
 * seen.  XF_OK when every output matched (atol 1e-4, rtol 1e-3);
 * XF_ERR_INVALID when they differ, XF_ERR_UNSUPPORTED when no shape could
 * be run; `why` says which. */
xf_status xf_verify_numeric(const xf_rule *r, int n_shapes, uint64_t seed, double *max_err, char *why,
                            size_t why_len);

#ifdef __cplusplus
}
#endif
#endif
